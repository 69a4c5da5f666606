/**
 * Finalizers: how a controller cleans up what ownerReferences cannot before its object goes (as
 * the Rust SDK's `finalizer`). The cycle, one reconcile at a time:
 *
 * 1. The object has no deletion timestamp and lacks the finalizer: {@link add} and return
 *    an `update` intent of the object, and nothing else in that reconcile (the update changes the
 *    resourceVersion any other write of the object would be preconditioned on; its watch event
 *    brings the object back at once).
 * 2. A delete sets `metadata.deletionTimestamp` ({@link isDeleting}) and the API server keeps the
 *    object while any finalizer remains. Clean up in one batch, then in the next batch
 *    {@link remove} with an `update` intent: the host runs a batch only after the previous
 *    one succeeded, so the finalizer goes only once the cleanup is written. For an object of a
 *    built-in kind the plugin did not read, {@link removePatch} takes the finalizer off without
 *    the object.
 *
 * @module
 */

import { type ObjectRef, Patch, ReconcileError } from "./contract.js";
import type { ObjectMeta } from "./meta.js";

/** Whether the object carries `finalizer`. */
export function has(meta: ObjectMeta | undefined, finalizer: string): boolean {
  return meta?.finalizers?.includes(finalizer) ?? false;
}

/** Whether the object is being deleted (`metadata.deletionTimestamp` is set). */
export function isDeleting(meta: ObjectMeta | undefined): boolean {
  return meta?.deletionTimestamp !== undefined && meta?.deletionTimestamp !== null;
}

function finalizers(object: any): any[] {
  const meta = object?.metadata;
  if (meta === null || typeof meta !== "object" || Array.isArray(meta)) {
    throw ReconcileError.permanent("object has no metadata");
  }
  if (meta.finalizers === undefined || meta.finalizers === null) {
    meta.finalizers = [];
  }
  if (!Array.isArray(meta.finalizers)) {
    throw ReconcileError.permanent("metadata.finalizers is not a list");
  }
  return meta.finalizers;
}

/**
 * Adds `finalizer` to the object's JSON (`metadata.finalizers`, changed in place) unless it is
 * there already; returns whether it changed, i.e. whether an `update` intent is needed.
 */
export function add(object: object, finalizer: string): boolean {
  const list = finalizers(object);
  if (list.includes(finalizer)) return false;
  list.push(finalizer);
  return true;
}

/**
 * Removes `finalizer` from the object's JSON (changed in place); returns whether it changed.
 * Other finalizers stay, in their order.
 */
export function remove(object: object, finalizer: string): boolean {
  const list = finalizers(object);
  const kept = list.filter((f) => f !== finalizer);
  const changed = kept.length !== list.length;
  list.splice(0, list.length, ...kept);
  return changed;
}

/**
 * A patch taking `finalizer` off the object `target` without reading it first, as KCM's Job
 * controller takes its tracking finalizer off pods: a strategic merge patch
 * `{"metadata": {"$deleteFromPrimitiveList/finalizers": [finalizer]}}`, which removes that one
 * entry from the list as it stands on the server, whatever else was added or removed meanwhile,
 * and is a no-op when it is not there. Strategic merge serves built-in kinds only: for a custom
 * resource, {@link remove} and an `update` intent.
 *
 * ```ts
 * const pod = { kind: kind("v1", "Pod"), namespace: "demo", name: "pi-x7k2q" };
 * outcome.batch(Intent.patch(finalizer.removePatch(pod, "batch.kubernetes.io/job-tracking")));
 * ```
 */
export function removePatch(target: ObjectRef, finalizer: string): Patch {
  return Patch.strategic(target, { metadata: { "$deleteFromPrimitiveList/finalizers": [finalizer] } });
}
