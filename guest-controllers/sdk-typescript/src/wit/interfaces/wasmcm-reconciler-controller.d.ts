/// <reference path="./wasmcm-reconciler-types.d.ts" />
declare module 'wasmcm:reconciler/controller@0.4.0' {
  export function describe(): PluginInfo;
  export function reconcile(request: Request): Outcome;
  export type Kind = import('wasmcm:reconciler/types@0.4.0').Kind;
  export type Object = import('wasmcm:reconciler/types@0.4.0').Object;
  export type ObjectRef = import('wasmcm:reconciler/types@0.4.0').ObjectRef;
  export type Instant = import('wasmcm:reconciler/types@0.4.0').Instant;
  export interface Changes {
    created?: boolean,
    updated?: boolean,
    deleted?: boolean,
  }
  /**
   * A kind the plugin reads beyond its primary and owned kinds, and which of its changes
   * wake the primary above the object (its controller, or its controller's controller).
   * Owned kinds wake their controller on every change; the primary on every change of its
   * own. (0.3.0: `watches` was a list of kinds, all waking on every change.)
   */
  export interface Watch {
    kind: Kind,
    wakeOn: Changes,
  }
  export interface PluginInfo {
    name: string,
    version: string,
    /**
     * The kind this plugin reconciles; keys are objects of this kind.
     */
    primary: Kind,
    /**
     * Kinds whose objects this plugin controls (controller ownerReference to a primary).
     */
    owns: Array<Kind>,
    /**
     * Other kinds it reads, and which of their changes wake it.
     */
    watches: Array<Watch>,
    /**
     * Kinds it may create, update or delete; any other write is refused by the host.
     */
    writes: Array<Kind>,
    /**
     * The contract version this plugin was built against, e.g. "0.4.0".
     */
    contract: string,
  }
  export interface Request {
    /**
     * namespace/name of the primary object.
     */
    namespace: string,
    name: string,
    /**
     * The host's clock: plugins have none, so a reconcile is deterministic.
     */
    now: Instant,
    /**
     * Why the previous reconcile of this key failed to be written, if it did (e.g. a
     * create refused by the API), so a plugin can report it in status.
     */
    previousFailure?: string,
    /**
     * The `settings` of the plugin's manifest, as a JSON object (`{}` when it has none).
     */
    settings: string,
  }
  /**
   * How a DELETE treats the object's dependents: DeleteOptions.propagationPolicy. (0.4.0)
   * # Variants
   * 
   * ## `"orphan"`
   * 
   * ## `"background"`
   * 
   * ## `"foreground"`
   */
  export type Propagation = 'orphan' | 'background' | 'foreground';
  export interface DeleteTarget {
    target: ObjectRef,
    uid?: string,
    /**
     * None: the server's default for the kind (batch/v1 Jobs orphan their pods). (0.4.0)
     */
    propagation?: Propagation,
  }
  /**
   * How the API server applies a patch, as the request's Content-Type. (0.4.0)
   * # Variants
   * 
   * ## `"json"`
   * 
   * RFC 6902 JSON patch (application/json-patch+json): a list of operations.
   * ## `"merge"`
   * 
   * RFC 7386 JSON merge patch (application/merge-patch+json).
   * ## `"strategic"`
   * 
   * Kubernetes strategic merge patch (application/strategic-merge-patch+json): lists
   * merge by their keys, with `$patch` and `$deleteFromPrimitiveList` directives.
   * Built-in kinds only (the server refuses it for custom resources, 415).
   */
  export type PatchType = 'json' | 'merge' | 'strategic';
  /**
   * One PATCH. (0.4.0)
   */
  export interface Patch {
    /**
     * The object; an empty namespace means the key's.
     */
    target: ObjectRef,
    patchType: PatchType,
    /**
     * The patch document, JSON: a list of operations for `json`, an object otherwise.
     */
    body: string,
    /**
     * A precondition: applied only while the object's resourceVersion is still this one
     * (409 Conflict otherwise, retried as any conflict).
     */
    resourceVersion?: string,
    /**
     * Patch the status subresource instead of the object.
     */
    status: boolean,
  }
  /**
   * # Variants
   * 
   * ## `"normal"`
   * 
   * ## `"warning"`
   */
  export type EventType = 'normal' | 'warning';
  export interface Event {
    regarding: ObjectRef,
    eventType: EventType,
    reason: string,
    message: string,
  }
  export type Intent = IntentCreate | IntentUpdate | IntentUpdateStatus | IntentDelete | IntentEvent | IntentPatch;
  /**
   * POST; `metadata.generateName` is honoured. For Pods the host records
   * SuccessfulCreate / FailedCreate on the primary, as KCM's PodControl does.
   */
  export interface IntentCreate {
    tag: 'create',
    val: Object,
  }
  /**
   * PUT with the object's `metadata.resourceVersion` as precondition; status is ignored.
   */
  export interface IntentUpdate {
    tag: 'update',
    val: Object,
  }
  /**
   * PUT to the status subresource: status changes, and whatever else the kind's status
   * strategy lets through (annotations for Deployments), never spec.
   */
  export interface IntentUpdateStatus {
    tag: 'update-status',
    val: Object,
  }
  /**
   * DELETE, with `uid` as precondition when given; already gone counts as done.
   * For Pods the host records SuccessfulDelete / FailedDelete on the primary.
   */
  export interface IntentDelete {
    tag: 'delete',
    val: DeleteTarget,
  }
  /**
   * An Event about `regarding`.
   */
  export interface IntentEvent {
    tag: 'event',
    val: Event,
  }
  /**
   * PATCH: the API server applies `body` to the object as it stands, so only what the
   * patch names changes and nothing needs to be read first (a finalizer removed from a
   * Pod with a strategic `$deleteFromPrimitiveList/finalizers`, as KCM's Job controller
   * does). Refused by the host when it could change the pods a Pod or workload runs
   * under a scope that limits them (send an update, checked whole), or when it touches
   * the host's shard-group labels. A target that is gone fails the batch (404). (0.4.0)
   */
  export interface IntentPatch {
    tag: 'patch',
    val: Patch,
  }
  /**
   * The writes of one batch may run concurrently; a failure in a batch stops every later
   * batch (slow-start creation, status written only after the children it counts).
   */
  export type Batch = Array<Intent>;
  export interface Outcome {
    batches: Array<Batch>,
    /**
     * Reconcile this key again this long after the request's `now`, even if nothing
     * changes (the time the reconcile and its writes took counts towards it); honoured
     * once every write succeeded.
     */
    requeueAfterMs?: bigint,
  }
  export interface Error {
    message: string,
    /**
     * Whether retrying the same key later can help.
     */
    retryable: boolean,
  }
}
