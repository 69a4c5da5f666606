/**
 * The Website's status: the Deployment's replica counts and the `Ready` and `Progressing`
 * conditions, written only when they change.
 *
 * @module
 */

import { conditions, json, type Condition, type Instant } from "@wasmcm/guest";
import type { Deployment } from "kubernetes-types/apps/v1.js";

import type { Website, WebsiteStatus } from "./website.js";

/** A status as it is written: the Rust plugin's field set, `observedGeneration` only when known. */
function written(s: WebsiteStatus): WebsiteStatus {
  const out: WebsiteStatus = { replicas: s.replicas, readyReplicas: s.readyReplicas, updatedReplicas: s.updatedReplicas, conditions: s.conditions };
  if (s.observedGeneration !== undefined) out.observedGeneration = s.observedGeneration;
  return out;
}

/**
 * The status `site` should have given its Deployment (`undefined`: not created yet), whether this
 * reconcile is writing its children (`pending`: what the cache shows is about to change), and
 * children it could not manage; `undefined` when the status already says all of it.
 */
export function compute(
  site: Website,
  deployment: Deployment | undefined,
  pending: boolean,
  problems: readonly string[],
  now: Instant,
): WebsiteStatus | undefined {
  const old = written(site.status ?? { replicas: 0, readyReplicas: 0, updatedReplicas: 0, conditions: [] });
  const generation = site.metadata.generation;
  const want = site.spec.replicas;
  const status = deployment?.status ?? {};
  const [replicas, ready, updated] = [status.replicas ?? 0, status.readyReplicas ?? 0, status.updatedReplicas ?? 0];
  // The deployment plugin has seen the Deployment's latest spec.
  const deploymentGeneration = deployment?.metadata?.generation;
  const observed =
    deployment !== undefined &&
    status.observedGeneration !== undefined &&
    (deploymentGeneration === undefined || status.observedGeneration >= deploymentGeneration);
  const deadlineExceeded = (status.conditions ?? []).some(
    (c) => c.type === "Progressing" && c.status === "False" && c.reason === "ProgressDeadlineExceeded",
  );
  const complete = !pending && observed && replicas === want && updated === want && ready === want;

  const counts = `${ready}/${want} replicas ready`;
  const [readyStatus, readyReason, readyMessage] =
    problems.length > 0
      ? ["False", "ChildConflict", problems.join("; ")]
      : complete
        ? ["True", "Available", counts]
        : ["False", "Unavailable", counts];
  const [progressingStatus, progressingReason, progressingMessage] =
    problems.length > 0
      ? ["False", "ChildConflict", problems.join("; ")]
      : deadlineExceeded
        ? ["False", "ProgressDeadlineExceeded", `the Deployment stopped progressing: ${counts}`]
        : complete
          ? ["False", "Complete", counts]
          : deployment === undefined
            ? ["True", "Creating", "creating the Deployment"]
            : ["True", "RollingOut", `${updated}/${want} updated, ${counts}`];

  const next = written({
    observedGeneration: generation,
    replicas,
    readyReplicas: ready,
    updatedReplicas: updated,
    conditions: json.clone(old.conditions),
  });
  const condition = (type: string, status: string, reason: string, message: string): Condition => {
    const c: Condition = { type, status, reason, message, lastTransitionTime: now.toTime() };
    if (generation !== undefined) c.observedGeneration = generation;
    return c;
  };
  conditions.set(next.conditions, condition("Ready", readyStatus, readyReason, readyMessage));
  conditions.set(next.conditions, condition("Progressing", progressingStatus, progressingReason, progressingMessage));
  return json.jsonEqual(next, old) ? undefined : next;
}
