/**
 * Controller references: who controls an object, and the adopt/release decision of
 * apimachinery's `ControllerRefManager.ClaimObject` (as the Rust SDK's `ownership`).
 *
 * An object a plugin creates for a primary carries a controller ownerReference to it
 * ({@link newControllerRef}, {@link withOwnerRef}): that routes the child's changes back to the
 * primary's key, is what `listControlled` finds, makes the host count the create until its cache
 * has seen it, and lets the garbage collector delete the child with its owner. Orphans matching
 * an owner's selector are adopted, and children that stop matching released ({@link claim}).
 *
 * @module
 */

import { ReconcileError } from "./contract.js";
import type { ObjectMeta, OwnerReference } from "./meta.js";

/** The ownerReference with `controller: true`, if any: the object's controller. */
export function controllerOf(meta: ObjectMeta | undefined): OwnerReference | undefined {
  return meta?.ownerReferences?.find((r) => r.controller === true);
}

/**
 * `metav1.NewControllerRef`: a controller reference to `owner`, of `apiVersion` and `kind`, with
 * `blockOwnerDeletion` (foreground deletion of the owner waits for the child).
 */
export function newControllerRef(apiVersion: string, kind: string, owner: ObjectMeta): OwnerReference {
  return {
    apiVersion,
    kind,
    name: owner.name ?? "",
    uid: owner.uid ?? "",
    controller: true,
    blockOwnerDeletion: true,
  };
}

/** What a controller should do with a candidate child. */
export type Claim =
  /** Ours and matching. */
  | "Owned"
  /** An orphan that matches: set our controller reference. */
  | "Adopt"
  /** Ours but no longer matching: drop our controller reference. */
  | "Release"
  /** Someone else's, or not ours to take. */
  | "Ignore";

/**
 * What to do with `child`, a candidate for `owner`'s control whose labels `matches` (or not) the
 * owner's selector: `ControllerRefManager.ClaimObject`. Owners being deleted adopt and release
 * nothing, children being deleted are not adopted, and a namespaced owner adopts only in its own
 * namespace.
 */
export function claim(owner: ObjectMeta, child: ObjectMeta, matches: boolean): Claim {
  const ownerDeleting = owner.deletionTimestamp !== undefined && owner.deletionTimestamp !== null;
  const controller = controllerOf(child);
  if (controller !== undefined) {
    if (controller.uid !== owner.uid) return "Ignore";
    if (matches) return "Owned";
    return ownerDeleting ? "Ignore" : "Release";
  }
  if (ownerDeleting || !matches || (child.deletionTimestamp !== undefined && child.deletionTimestamp !== null)) {
    return "Ignore";
  }
  if (owner.namespace && owner.namespace !== child.namespace) {
    return "Ignore";
  }
  return "Adopt";
}

function ownerRefs(object: any): any[] {
  const meta = object?.metadata;
  if (meta === null || typeof meta !== "object" || Array.isArray(meta)) {
    throw ReconcileError.permanent("object has no metadata");
  }
  if (meta.ownerReferences === undefined || meta.ownerReferences === null) {
    meta.ownerReferences = [];
  }
  if (!Array.isArray(meta.ownerReferences)) {
    throw ReconcileError.permanent("metadata.ownerReferences is not a list");
  }
  return meta.ownerReferences;
}

/**
 * `object` (changed in place, and returned) with `ref` appended to its ownerReferences: a child
 * to create, or an orphan to adopt by an update. A permanent {@link ReconcileError} when it has
 * no `metadata` object.
 */
export function withOwnerRef<T>(object: T, ref: OwnerReference): T {
  ownerRefs(object).push({ ...ref });
  return object;
}

/** `object` (changed in place, and returned) without the ownerReference of `uid`: a child to release. */
export function withoutOwnerRef<T>(object: T, uid: string): T {
  const refs = ownerRefs(object);
  const kept = refs.filter((r) => r?.uid !== uid);
  refs.splice(0, refs.length, ...kept);
  return object;
}
