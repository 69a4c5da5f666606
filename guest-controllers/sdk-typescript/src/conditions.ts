/**
 * Status conditions (`metav1.Condition`) kept as apimachinery's `meta.SetStatusCondition` keeps
 * them, so `kubectl wait --for=condition=Ready` and any tool reading conditions sees what it
 * expects (as the Rust SDK's `conditions`).
 *
 * A condition's `lastTransitionTime` says when its status last changed, not when it was last
 * written: {@link set} keeps it unless the status changes, and reports whether anything
 * changed so a controller writes status only when it must.
 *
 * @module
 */

import type { Condition } from "./meta.js";

/**
 * Sets `condition` in `conditions` (changed in place) as `meta.SetStatusCondition` does, and
 * returns whether anything changed.
 *
 * A condition of a type not there yet is appended as given. Otherwise the existing one is updated
 * in place: its `status`, and with it `lastTransitionTime` (taken from `condition`: give the
 * request's `now`, `request.now.toTime()`), only when the status differs; its `reason`, `message`
 * and `observedGeneration` whenever they differ. Plugins have no clock, so unlike Go's function
 * this one never reads the time itself.
 */
export function set(conditions: Condition[], condition: Condition): boolean {
  const existing = conditions.find((c) => c.type === condition.type);
  if (existing === undefined) {
    conditions.push({ ...condition });
    return true;
  }
  let changed = false;
  if (existing.status !== condition.status) {
    existing.status = condition.status;
    existing.lastTransitionTime = condition.lastTransitionTime;
    changed = true;
  }
  if (existing.reason !== condition.reason) {
    existing.reason = condition.reason;
    changed = true;
  }
  if (existing.message !== condition.message) {
    existing.message = condition.message;
    changed = true;
  }
  if (existing.observedGeneration !== condition.observedGeneration) {
    if (condition.observedGeneration === undefined) {
      delete existing.observedGeneration;
    } else {
      existing.observedGeneration = condition.observedGeneration;
    }
    changed = true;
  }
  return changed;
}

/** The condition of type `type`, as `meta.FindStatusCondition`. */
export function find(conditions: readonly Condition[] | undefined, type: string): Condition | undefined {
  return conditions?.find((c) => c.type === type);
}

/** Whether the condition of type `type` is there with status `"True"`, as `meta.IsStatusConditionTrue`. */
export function isTrue(conditions: readonly Condition[] | undefined, type: string): boolean {
  return find(conditions, type)?.status === "True";
}
