"""Kubernetes helpers over decoded objects: status conditions as ``meta.SetStatusCondition``
keeps them, finalizers, controller references and adoption (``ControllerRefManager``), and
JSON merge patches. Each is the Rust SDK's (``conditions``, ``finalizer``, ``ownership``,
``json``) over ``dict`` instead of k8s-openapi types, with the same results.

Owns these pure functions; nothing here reads the cache or talks to the host.
"""

from __future__ import annotations

import enum
from typing import Any, Mapping, MutableMapping, Optional

from .types import Instant, ObjectRef, Patch, Permanent

# ---- conditions ---------------------------------------------------------------------------


def condition(
    type: str,
    status: str,
    reason: str,
    message: str,
    now: Instant,
    observed_generation: Optional[int] = None,
) -> dict:
    """A ``metav1.Condition`` as its JSON, its ``lastTransitionTime`` ``now`` (which
    :func:`set_condition` keeps unless the status changes)."""
    c = {"type": type, "status": status, "reason": reason, "message": message, "lastTransitionTime": now.time()}
    if observed_generation is not None:
        c["observedGeneration"] = observed_generation
    return c


def set_condition(conditions: list, new: Mapping[str, Any]) -> bool:
    """Sets ``new`` in ``conditions`` as apimachinery's ``meta.SetStatusCondition`` does: a new
    type is appended; an existing one takes the new status (and then its
    ``lastTransitionTime``), reason, message and observedGeneration. Returns whether anything
    changed, so that status is written only when it must be."""
    for existing in conditions:
        if existing.get("type") == new.get("type"):
            break
    else:
        conditions.append(dict(new))
        return True
    changed = False
    if existing.get("status") != new.get("status"):
        existing["status"] = new.get("status")
        existing["lastTransitionTime"] = new.get("lastTransitionTime")
        changed = True
    for field in ("reason", "message", "observedGeneration"):
        if existing.get(field) != new.get(field):
            if new.get(field) is None:
                existing.pop(field, None)
            else:
                existing[field] = new[field]
            changed = True
    return changed


def find_condition(conditions: Optional[list], type: str) -> Optional[dict]:
    """The condition of ``type``, if there is one."""
    return next((c for c in conditions or [] if c.get("type") == type), None)


def is_condition_true(conditions: Optional[list], type: str) -> bool:
    c = find_condition(conditions, type)
    return c is not None and c.get("status") == "True"


# ---- finalizers ---------------------------------------------------------------------------


def has_finalizer(metadata: Mapping[str, Any], finalizer: str) -> bool:
    return finalizer in (metadata.get("finalizers") or [])


def is_deleting(metadata: Mapping[str, Any]) -> bool:
    """Whether a delete has set ``deletionTimestamp`` (the API server keeps the object while
    finalizers remain)."""
    return metadata.get("deletionTimestamp") is not None


def _metadata(obj: MutableMapping[str, Any]) -> MutableMapping[str, Any]:
    meta = obj.get("metadata")
    if not isinstance(meta, MutableMapping):
        raise Permanent("object has no metadata")
    return meta


def _list(meta: MutableMapping[str, Any], field: str) -> list:
    value = meta.get(field)
    if value is None:
        value = meta[field] = []
    if not isinstance(value, list):
        raise Permanent(f"metadata.{field} is not a list")
    return value


def add_finalizer(obj: MutableMapping[str, Any], finalizer: str) -> bool:
    """Adds ``finalizer`` to the object (a ``dict`` about to be an ``Update``); whether it was
    missing."""
    finalizers = _list(_metadata(obj), "finalizers")
    if finalizer in finalizers:
        return False
    finalizers.append(finalizer)
    return True


def remove_finalizer(obj: MutableMapping[str, Any], finalizer: str) -> bool:
    """Removes ``finalizer``; whether it was there."""
    finalizers = _list(_metadata(obj), "finalizers")
    before = len(finalizers)
    finalizers[:] = [f for f in finalizers if f != finalizer]
    return len(finalizers) != before


def remove_finalizer_patch(target: ObjectRef, finalizer: str) -> Patch:
    """A patch taking ``finalizer`` off ``target`` without reading it first, as KCM's Job
    controller takes its tracking finalizer off pods: the strategic merge patch
    ``{"metadata": {"$deleteFromPrimitiveList/finalizers": [finalizer]}}`` removes that one entry
    from the list as it stands on the server, whatever else changed meanwhile, and is a no-op
    when it is not there. Built-in kinds only: for a custom resource, :func:`remove_finalizer`
    and an ``Update``."""
    return Patch.strategic(target, {"metadata": {"$deleteFromPrimitiveList/finalizers": [finalizer]}})


# ---- ownership ----------------------------------------------------------------------------


def controller_of(metadata: Mapping[str, Any]) -> Optional[dict]:
    """The controller ownerReference of an object's metadata, if it has one."""
    return next((r for r in metadata.get("ownerReferences") or [] if r.get("controller") is True), None)


def new_controller_ref(api_version: str, kind: str, owner_metadata: Mapping[str, Any]) -> dict:
    """A controller ownerReference to the owner (``controller`` and ``blockOwnerDeletion``
    true), for the children it creates."""
    return {
        "apiVersion": api_version,
        "kind": kind,
        "name": owner_metadata.get("name") or "",
        "uid": owner_metadata.get("uid") or "",
        "controller": True,
        "blockOwnerDeletion": True,
    }


class Claim(enum.Enum):
    """What an owner does with an object its selector may match (``ClaimObject``)."""

    #: Controlled by the owner and still matching: keep it.
    OWNED = "Owned"
    #: An orphan that matches: adopt it (add the controller reference).
    ADOPT = "Adopt"
    #: Controlled by the owner but no longer matching: release it (drop the reference).
    RELEASE = "Release"
    #: Someone else's, or not to be touched now.
    IGNORE = "Ignore"


def claim(owner: Mapping[str, Any], child: Mapping[str, Any], matches: bool) -> Claim:
    """apimachinery's ``ControllerRefManager.ClaimObject`` for the metadata of an owner and a
    child, given whether the owner's selector matches the child."""
    owner_deleting = owner.get("deletionTimestamp") is not None
    ref = controller_of(child)
    if ref is not None:
        if ref.get("uid") != owner.get("uid"):
            return Claim.IGNORE
        if matches:
            return Claim.OWNED
        return Claim.IGNORE if owner_deleting else Claim.RELEASE
    if owner_deleting or not matches or child.get("deletionTimestamp") is not None:
        return Claim.IGNORE
    if owner.get("namespace") and owner.get("namespace") != child.get("namespace"):
        return Claim.IGNORE
    return Claim.ADOPT


def with_owner_ref(obj: MutableMapping[str, Any], ref: Mapping[str, Any]) -> MutableMapping[str, Any]:
    """The object with ``ref`` appended to its ownerReferences (adoption, or a new child)."""
    _list(_metadata(obj), "ownerReferences").append(dict(ref))
    return obj


def without_owner_ref(obj: MutableMapping[str, Any], uid: str) -> MutableMapping[str, Any]:
    """The object without the ownerReferences to ``uid`` (a release)."""
    refs = _list(_metadata(obj), "ownerReferences")
    refs[:] = [r for r in refs if r.get("uid") != uid]
    return obj


# ---- JSON ---------------------------------------------------------------------------------


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch: returns ``target`` patched (in place when both are objects);
    ``None`` (null) in the patch removes a field."""
    if not isinstance(patch, Mapping):
        return patch
    if not isinstance(target, MutableMapping):
        target = {}
    for key, value in patch.items():
        if value is None:
            target.pop(key, None)
        else:
            target[key] = merge_patch(target.get(key), value)
    return target
