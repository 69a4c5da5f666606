"""The Website's status: the Deployment's replica counts and the `Ready` and `Progressing`
conditions, written only when they change."""

from __future__ import annotations

import copy
from typing import Optional

import wasmcm_guest as wg
from website import Website, WebsiteStatus


def compute(
    site: Website,
    deployment: Optional[dict],
    pending: bool,
    problems: list[str],
    now: wg.Instant,
) -> Optional[WebsiteStatus]:
    """The status `site` should have given its Deployment (`None`: not created yet), whether this
    reconcile is writing its children (`pending`: what the cache shows is about to change), and
    children it could not manage; `None` when the status already says all of it."""
    old = site.status or WebsiteStatus()
    generation = site.metadata.get("generation")
    want = site.spec.replicas
    status = (deployment or {}).get("status") or {}
    replicas = status.get("replicas") or 0
    ready = status.get("readyReplicas") or 0
    updated = status.get("updatedReplicas") or 0
    # The deployment plugin has seen the Deployment's latest spec.
    observed_generation = status.get("observedGeneration")
    deployment_generation = ((deployment or {}).get("metadata") or {}).get("generation")
    observed = (
        deployment is not None
        and observed_generation is not None
        and (deployment_generation is None or observed_generation >= deployment_generation)
    )
    deadline_exceeded = any(
        c.get("type") == "Progressing" and c.get("status") == "False" and c.get("reason") == "ProgressDeadlineExceeded"
        for c in status.get("conditions") or []
    )
    complete = not pending and observed and replicas == want and updated == want and ready == want

    counts = f"{ready}/{want} replicas ready"
    if problems:
        ready_condition = ("False", "ChildConflict", "; ".join(problems))
    elif complete:
        ready_condition = ("True", "Available", counts)
    else:
        ready_condition = ("False", "Unavailable", counts)
    if problems:
        progressing = ("False", "ChildConflict", "; ".join(problems))
    elif deadline_exceeded:
        progressing = ("False", "ProgressDeadlineExceeded", f"the Deployment stopped progressing: {counts}")
    elif complete:
        progressing = ("False", "Complete", counts)
    elif deployment is None:
        progressing = ("True", "Creating", "creating the Deployment")
    else:
        progressing = ("True", "RollingOut", f"{updated}/{want} updated, {counts}")

    new = WebsiteStatus(
        observed_generation=generation,
        replicas=replicas,
        ready_replicas=ready,
        updated_replicas=updated,
        conditions=copy.deepcopy(old.conditions),
    )
    for type_, (state, reason, message) in (("Ready", ready_condition), ("Progressing", progressing)):
        wg.set_condition(new.conditions, wg.condition(type_, state, reason, message, now, generation))
    return None if new == old else new
