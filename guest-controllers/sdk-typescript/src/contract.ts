/**
 * The contract (`wit/reconciler.wit`, `wasmcm:reconciler@0.4.0`) as plain TypeScript: what a
 * plugin declares ({@link PluginInfo}), is asked ({@link Request}) and answers
 * ({@link Outcome}, {@link Intent}, {@link ReconcileError}), and the {@link Controller} it
 * implements. The generated WIT types (`src/wit/`, from `jco guest-types`) are used only by the
 * component adapter (`component.ts`), which converts between them and these; nothing here
 * touches the host.
 *
 * @module
 */

import type { Cache } from "./cache.js";
import type { Instant } from "./time.js";

/**
 * The contract version these types implement (`wasmcm:reconciler@…` in `wit/reconciler.wit`).
 * A plugin declares it in {@link PluginInfo.contract}; the host loads plugins of this contract
 * and of 0.3.0 (without the `patch` intent and a delete's `propagation`) and refuses any other.
 */
export const CONTRACT_VERSION = "0.4.0";

/** A kind as the API names it: `apiVersion` (`v1`, `apps/v1`) and `kind` (`Pod`). */
export interface Kind {
  readonly apiVersion: string;
  readonly kind: string;
}

/** A {@link Kind}. */
export function kind(apiVersion: string, kind: string): Kind {
  return { apiVersion, kind };
}

/** The API group of a kind: `apps` for `apps/v1`, `""` for the core group's `v1`. */
export function kindGroup(k: Kind): string {
  const slash = k.apiVersion.indexOf("/");
  return slash < 0 ? "" : k.apiVersion.slice(0, slash);
}

/** `apps/v1/Deployment`, as the host names kinds in messages. */
export function kindName(k: Kind): string {
  return `${k.apiVersion}/${k.kind}`;
}

/** Whether two kinds are the same. */
export function sameKind(a: Kind, b: Kind): boolean {
  return a.apiVersion === b.apiVersion && a.kind === b.kind;
}

/** One object by kind, namespace and name; the namespace is empty for a cluster-scoped one. */
export interface ObjectRef {
  readonly kind: Kind;
  readonly namespace: string;
  readonly name: string;
}

/**
 * Kinds of change: which changes of a watched kind wake a key ({@link Watch.wakeOn}).
 * `Changes.NONE` makes a kind readable only.
 */
export interface Changes {
  /** An object appeared in the cache. */
  readonly created: boolean;
  /** An object in the cache changed (any field, status included). */
  readonly updated: boolean;
  /** An object left the cache (deleted, not merely marked for deletion: that is an update). */
  readonly deleted: boolean;
}

/** The usual {@link Changes}. */
export const Changes = {
  /** No change wakes: the kind is read only. */
  NONE: { created: false, updated: false, deleted: false } as Changes,
  /** Every change wakes. */
  ALL: { created: true, updated: true, deleted: true } as Changes,
  /** Only deletions wake (KCM's deployment controller and its pods). */
  DELETED: { created: false, updated: false, deleted: true } as Changes,
} as const;

/**
 * A kind read beyond the primary and owned ones, and which of its changes wake the primary above
 * an object of it (its controller, or its controller's controller).
 */
export interface Watch {
  readonly kind: Kind;
  readonly wakeOn: Changes;
}

/**
 * What a plugin is and may do: the answer of {@link Controller.describe}. The host reads it once,
 * when it loads the plugin, and holds the plugin to it: it reads only `primary`, `owns` and
 * `watches` kinds (any other read traps), writes only `writes` kinds (any other write is
 * refused), and is woken by changes of those kinds.
 */
export interface PluginInfo {
  /** A DNS label (`[a-z0-9-]`, at most 63 characters). */
  readonly name: string;
  /** Free text of at most 256 bytes. */
  readonly version: string;
  /** The kind it reconciles: every key is `namespace/name` of an object of this kind. */
  readonly primary: Kind;
  /** Kinds whose objects it controls (a controller ownerReference to a primary). */
  readonly owns: readonly Kind[];
  /** Other kinds it reads, and which of their changes wake the primary above the object. */
  readonly watches: readonly Watch[];
  /** Kinds it may create, update, patch, update the status of, or delete. Events may always be recorded. */
  readonly writes: readonly Kind[];
  /** The contract it was built against: {@link CONTRACT_VERSION}. */
  readonly contract: string;
}

/** What one reconcile is asked: the key, the time, and what the host knows of the last attempt. */
export interface Request {
  /** The namespace of the primary object (empty for a cluster-scoped kind). */
  readonly namespace: string;
  /** Its name. The object may no longer exist: a deletion wakes its key too. */
  readonly name: string;
  /** The host's clock when the reconcile started; a plugin has no other. */
  readonly now: Instant;
  /** Why the writes of the previous reconcile of this key failed, if they did. */
  readonly previousFailure?: string | undefined;
  /** The `settings` of the plugin's manifest, a JSON object as text (`{}` when none). */
  readonly settings: string;
}

/** A first attempt at `namespace/name` with no settings, as tests and tools make them. */
export function request(namespace: string, name: string, now: Instant, settings: unknown = {}): Request {
  return { namespace, name, now, settings: typeof settings === "string" ? settings : JSON.stringify(settings) };
}

/** The type of an {@link Event}, as `kubectl describe` shows it. */
export type EventType = "Normal" | "Warning";

/** An Event about an object of the key's namespace. */
export interface Event {
  readonly regarding: ObjectRef;
  readonly type: EventType;
  /** A short UpperCamelCase reason (`SuccessfulCreate`). */
  readonly reason: string;
  /** What happened, for people. */
  readonly message: string;
}

/**
 * `DeleteOptions.propagationPolicy`, as the API names it: what a delete does with the objects
 * whose ownerReferences name the deleted one.
 *
 * - `Orphan`: leaves them, without the ownerReference.
 * - `Background`: deletes the object now, its dependents after (the garbage collector).
 * - `Foreground`: deletes the dependents first; the object stays, being deleted, until they are
 *   gone.
 */
export type Propagation = "Orphan" | "Background" | "Foreground";

/**
 * How the API server applies a {@link Patch}: the Content-Type it is sent with.
 *
 * - `json`: an RFC 6902 JSON patch (`application/json-patch+json`), a list of operations.
 * - `merge`: an RFC 7386 JSON merge patch (`application/merge-patch+json`).
 * - `strategic`: a Kubernetes strategic merge patch (`application/strategic-merge-patch+json`);
 *   built-in kinds only (the API server refuses it for custom resources).
 */
export type PatchType = "json" | "merge" | "strategic";

/** An object as an intent carries it: its JSON text, taken now. */
function objectText(object: object | string): string {
  return typeof object === "string" ? object : JSON.stringify(object);
}

/**
 * What a `patch` intent sends: a patch of one object, or of its status subresource, which the
 * API server applies to the object as it stands, so nothing needs reading first and only what
 * the patch names changes (contract 0.4.0). The host refuses a patch that could change the pods
 * a Pod or workload runs when the plugin's scope limits them (an update is checked whole
 * instead), or that touches the host's shard-group labels; a target already gone fails its
 * batch (404). A patch never changes once made: its methods return new ones.
 *
 * ```ts
 * const pod = { kind: kind("v1", "Pod"), namespace: "demo", name: "web-1" };
 * // A label set without reading the pod; only if it is still at resourceVersion 42.
 * const labelled = Patch.merge(pod, { metadata: { labels: { tier: "web" } } }).withResourceVersion("42");
 * // A condition added to the status subresource.
 * const status = Patch.strategic(pod, { status: { conditions: [{ type: "Checked", status: "True" }] } }).toStatus();
 * // RFC 6902 operations.
 * const ops = Patch.json(pod, [{ op: "remove", path: "/metadata/annotations/old" }]);
 * new Outcome().batch(Intent.patch(labelled), Intent.patch(status), Intent.patch(ops));
 * ```
 */
export class Patch {
  /** The object; an empty namespace means the key's. */
  readonly target: ObjectRef;
  /** How the API server applies {@link Patch.body}. */
  readonly patchType: PatchType;
  /** The patch document, JSON text: a list of operations for `json`, an object otherwise. */
  readonly body: string;
  /**
   * When given, a precondition: the patch applies only while the object is still at this
   * resourceVersion (409 Conflict otherwise, retried as any conflict).
   */
  readonly resourceVersion: string | undefined;
  /** Patch the status subresource instead of the object. */
  readonly status: boolean;

  private constructor(target: ObjectRef, patchType: PatchType, body: string, resourceVersion: string | undefined, status: boolean) {
    this.target = target;
    this.patchType = patchType;
    this.body = body;
    this.resourceVersion = resourceVersion;
    this.status = status;
  }

  /**
   * An RFC 7386 JSON merge patch of `target` (a JS object, or its JSON text): objects merge key
   * by key, `null` removes a key, anything else (lists included) replaces.
   */
  static merge(target: ObjectRef, body: object | string): Patch {
    return new Patch(target, "merge", objectText(body), undefined, false);
  }

  /**
   * A Kubernetes strategic merge patch of `target`: as a merge patch, but lists of built-in kinds
   * merge by their keys (containers by name, …) and `$patch`, `$deleteFromPrimitiveList/<field>`
   * and `$setElementOrder/<field>` directives apply. Built-in kinds only.
   */
  static strategic(target: ObjectRef, body: object | string): Patch {
    return new Patch(target, "strategic", objectText(body), undefined, false);
  }

  /** An RFC 6902 JSON patch of `target`: `operations` is the list of operations (or its JSON text). */
  static json(target: ObjectRef, operations: readonly object[] | string): Patch {
    return new Patch(target, "json", objectText(operations), undefined, false);
  }

  /** The same patch, applied only while the object is at `resourceVersion`. */
  withResourceVersion(resourceVersion: string): Patch {
    return new Patch(this.target, this.patchType, this.body, resourceVersion, this.status);
  }

  /** The same patch, of the status subresource. */
  toStatus(): Patch {
    return new Patch(this.target, this.patchType, this.body, this.resourceVersion, true);
  }
}

/**
 * One write a reconcile asks for. Objects are Kubernetes JSON text with `apiVersion` and `kind`
 * (a missing `metadata.namespace` is the key's), taken as they were when the intent was made.
 * Make them with {@link Intent.create} and its siblings.
 */
export type Intent =
  /** POST the object; `metadata.generateName` is honoured. */
  | { readonly type: "create"; readonly object: string }
  /** PUT the object with its `metadata.resourceVersion` as precondition; status is ignored. */
  | { readonly type: "update"; readonly object: string }
  /** PUT to the status subresource: status changes, never spec. */
  | { readonly type: "update-status"; readonly object: string }
  /**
   * DELETE; already gone counts as done; `uid`, when given, deletes only that incarnation;
   * `propagation`, when given, is how its dependents go (else the server's default for the kind:
   * batch/v1 Jobs and CronJobs orphan theirs).
   */
  | {
      readonly type: "delete";
      readonly target: ObjectRef;
      readonly uid?: string | undefined;
      readonly propagation?: Propagation | undefined;
    }
  /** PATCH an object, or its status (contract 0.4.0). */
  | { readonly type: "patch"; readonly patch: Patch }
  /** Record an Event. */
  | { readonly type: "event"; readonly event: Event };

/** Makes {@link Intent}s. */
export const Intent = {
  /** POST `object` (a JS object, or its JSON text). */
  create: (object: object | string): Intent => ({ type: "create", object: objectText(object) }),
  /** PUT `object`, preconditioned on its `metadata.resourceVersion`: start from the object as read. */
  update: (object: object | string): Intent => ({ type: "update", object: objectText(object) }),
  /** PUT `object` to the status subresource. */
  updateStatus: (object: object | string): Intent => ({ type: "update-status", object: objectText(object) }),
  /**
   * DELETE `target`; with `uid`, only the object of that uid; with `propagation`, its dependents
   * as that says (a Job and, in the background, its pods: `Intent.delete(job, undefined, "Background")`).
   */
  delete: (target: ObjectRef, uid?: string, propagation?: Propagation): Intent => ({ type: "delete", target, uid, propagation }),
  /** PATCH as `patch` says: make it with {@link Patch.merge} and its siblings. */
  patch: (patch: Patch): Intent => ({ type: "patch", patch }),
  /** Record an Event about `regarding`. */
  event: (regarding: ObjectRef, type: EventType, reason: string, message: string): Intent => ({
    type: "event",
    event: { regarding, type, reason, message },
  }),
} as const;

/** The object of a create, update or update-status intent, parsed (for tests); throws otherwise. */
export function intentObject(intent: Intent): Record<string, any> {
  if (intent.type === "delete" || intent.type === "patch" || intent.type === "event") {
    throw new TypeError(`a ${intent.type} intent carries no object`);
  }
  return JSON.parse(intent.object) as Record<string, any>;
}

/**
 * "update ConfigMap web/hello-content" (a patch as the host names it: "patch-status v1/Pod web/a"),
 * for messages and test failures.
 */
export function describeIntent(intent: Intent): string {
  switch (intent.type) {
    case "delete":
      return `delete ${kindName(intent.target.kind)} ${intent.target.namespace}/${intent.target.name}`;
    case "patch": {
      const t = intent.patch.target;
      return `${intent.patch.status ? "patch-status" : "patch"} ${kindName(t.kind)} ${t.namespace}/${t.name}`;
    }
    case "event":
      return `event ${intent.event.reason}`;
    default: {
      const o = intentObject(intent);
      return `${intent.type} ${o["kind"] ?? "?"} ${o["metadata"]?.["namespace"] ?? ""}/${o["metadata"]?.["name"] ?? ""}`;
    }
  }
}

/**
 * What a reconcile returns: writes in batches, and whether to come back without a change. The
 * host runs the writes of a batch concurrently and stops before the next batch after any
 * failure, so later batches may rely on earlier ones having succeeded.
 *
 * ```ts
 * const outcome = new Outcome()
 *   .batch(Intent.create(child))      // first the child
 *   .batch()                          // nothing at this step: no batch
 *   .batch(Intent.updateStatus(site)) // then, once it is written, the status
 *   .requeueAfter(30_000);
 * outcome.batches.length;             // 2
 * ```
 */
export class Outcome {
  /** The writes, batch by batch. */
  readonly batches: Intent[][] = [];
  /**
   * Reconcile the key again this many milliseconds after the request's `now` even if nothing
   * changes: the time the reconcile and its writes took counts towards it.
   */
  requeueAfterMs: number | undefined = undefined;

  /** Adds a batch of `intents`, skipping an empty one so the host sees only real steps. */
  batch(...intents: Intent[]): this {
    return this.pushBatch(intents);
  }

  /** Adds `intents` as one batch, unless there are none. */
  pushBatch(intents: readonly Intent[]): this {
    if (intents.length > 0) {
      this.batches.push([...intents]);
    }
    return this;
  }

  /**
   * Asks for another reconcile of the key `millis` after the request's `now` (a whole number of
   * milliseconds, not negative), honoured once every write succeeded; `undefined` asks for none.
   */
  requeueAfter(millis: number | undefined): this {
    if (millis !== undefined && (!Number.isSafeInteger(millis) || millis < 0)) {
      throw new RangeError(`requeueAfter: ${millis} is not a whole, non-negative number of milliseconds`);
    }
    this.requeueAfterMs = millis;
    return this;
  }

  /** Every intent, batch after batch. */
  intents(): Intent[] {
    return this.batches.flat();
  }

  /** Whether there is nothing to write and no requeue. */
  isEmpty(): boolean {
    return this.batches.length === 0 && this.requeueAfterMs === undefined;
  }
}

/**
 * Why a reconcile failed, and whether trying again can help. Throw one from
 * {@link Controller.reconcile}:
 *
 * ```ts
 * throw ReconcileError.retryable("the Secret it names is not in the cache yet"); // retried with backoff
 * throw ReconcileError.permanent("spec.message is required"); // not retried until the object changes
 * ```
 *
 * Anything else a reconcile throws is a bug: the host's log gets its message and stack, and the
 * key is retried with backoff, as after a trap.
 */
export class ReconcileError extends Error {
  /** Whether retrying the same key later can help. */
  readonly retryable: boolean;

  constructor(message: string, retryable: boolean) {
    super(message);
    this.name = "ReconcileError";
    this.retryable = retryable;
  }

  /** A failure that may pass: the host retries the key with backoff, for as long as it fails. */
  static retryable(message: string): ReconcileError {
    return new ReconcileError(message, true);
  }

  /** A failure retrying cannot fix (an invalid spec): the key waits for a change that wakes it. */
  static permanent(message: string): ReconcileError {
    return new ReconcileError(message, false);
  }
}

/**
 * A controller: pure logic over a cache view, made a component by `exportPlugin` (from
 * `@wasmcm/guest/component`). Every call runs in a fresh instance: there is nowhere to keep
 * anything between calls.
 */
export interface Controller {
  /**
   * What the plugin is and may read and write. Called once when the host loads the plugin; it
   * must not depend on anything but the build.
   */
  describe(): PluginInfo;

  /**
   * One reconcile of `request`'s key: reads through `cache` and returns the writes that bring the
   * cluster towards what the primary object asks for, or throws a {@link ReconcileError}. Must be
   * a function of the request and what the cache holds, and synchronous.
   */
  reconcile(request: Request, cache: Cache): Outcome;
}
