"""Pod predicates and construction shared by controllers (upstream ``controller_utils.go`` and
``podutil``), over a Pod's decoded JSON: the Rust SDK's ``pod`` module, with the same results.

Owns these pure functions; nothing here reads the cache or talks to the host.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping, Optional

from .types import Instant, Permanent

#: What a ``generateName`` prefix may hold: a DNS subdomain's characters (the server appends 5).
_PREFIX_CHARS = frozenset("abcdefghijklmnopqrstuvwxyz0123456789-.")
_PREFIX_FIRST = frozenset("abcdefghijklmnopqrstuvwxyz0123456789")


def _status(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    status = pod.get("status")
    return status if isinstance(status, Mapping) else {}


def is_active(pod: Mapping[str, Any]) -> bool:
    """``controller.IsPodActive``: not terminated (``Succeeded``, ``Failed``) and not being
    deleted."""
    phase = _status(pod).get("phase")
    deleting = (pod.get("metadata") or {}).get("deletionTimestamp") is not None
    return phase not in ("Succeeded", "Failed") and not deleting


def ready_condition(pod: Mapping[str, Any]) -> Optional[dict]:
    """The pod's ``Ready`` condition, if it has one."""
    conditions = _status(pod).get("conditions") or []
    return next((c for c in conditions if isinstance(c, dict) and c.get("type") == "Ready"), None)


def is_ready(pod: Mapping[str, Any]) -> bool:
    """``podutil.IsPodReady``."""
    c = ready_condition(pod)
    return c is not None and c.get("status") == "True"


def ready_since(pod: Mapping[str, Any]) -> Optional[str]:
    """When the pod last became ready (its ``Ready`` condition's ``lastTransitionTime``), if it
    is ready."""
    c = ready_condition(pod)
    if c is None or c.get("status") != "True":
        return None
    return c.get("lastTransitionTime")


def is_available(pod: Mapping[str, Any], min_ready_seconds: int, now: Instant) -> bool:
    """``podutil.IsPodAvailable``: ready for at least ``min_ready_seconds``, strictly before
    ``now``. A ready pod whose ``lastTransitionTime`` is missing or not RFC 3339 is not available
    (unless ``min_ready_seconds`` is 0)."""
    if not is_ready(pod):
        return False
    if min_ready_seconds <= 0:
        return True
    since = ready_since(pod)
    if not isinstance(since, str):
        return False
    try:
        at = Instant.parse_rfc3339(since)
    except ValueError:
        return False
    return Instant(at.seconds + min_ready_seconds, at.nanoseconds) < now


def pod_from_template(
    template: Mapping[str, Any], namespace: str, parent_name: str, controller_ref: Mapping[str, Any]
) -> dict:
    """``controller.GetPodFromTemplate`` on the template's JSON, so fields the plugin does not
    know reach the pod: labels, annotations and finalizers of the template, ``generateName``
    ``<parent>-``, the controller reference, and the template's spec. A template without labels
    raises :class:`Permanent` (the pods could never be selected)."""
    tmeta = template.get("metadata")
    tmeta = tmeta if isinstance(tmeta, Mapping) else {}
    labels = tmeta.get("labels")
    if not isinstance(labels, Mapping) or not labels:
        raise Permanent("unable to create pods, no labels")
    metadata: dict = {"generateName": _pod_name_prefix(parent_name), "namespace": namespace, "labels": labels}
    for field in ("annotations", "finalizers"):
        if tmeta.get(field) is not None:
            metadata[field] = tmeta[field]
    metadata["ownerReferences"] = [dict(controller_ref)]
    spec = template["spec"] if "spec" in template else {}
    # A copy: the pod is the caller's to change, the template the cache's.
    return copy.deepcopy({"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec})


def _pod_name_prefix(parent: str) -> str:
    """``getPodsPrefix``: ``<name>-``, unless that is not a valid generateName prefix."""
    prefix = f"{parent}-"
    valid = (
        len(prefix.encode()) <= 253 - 5
        and prefix[0] in _PREFIX_FIRST
        and all(c in _PREFIX_CHARS for c in prefix)
    )
    return prefix if valid else parent
