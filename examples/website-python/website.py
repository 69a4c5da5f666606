"""The custom resource as this plugin reads it (`deploy/crd.yaml` of the Rust example, which both
share): the typed read of a Website, decoded as the Rust example's serde types decode it, so
that a Website one refuses the other refuses too, and the status compares the same."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

from wasmcm_guest import Instant, Kind, Resource

#: `example.wasmcm.dev/v1` `Website`.
KIND = Kind("example.wasmcm.dev/v1", "Website")

# The fields of a metav1.Condition: the five required, then the optional one.
_CONDITION_REQUIRED = ("type", "status", "reason", "message", "lastTransitionTime")


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{what}: expected an integer, got {value!r}")
    return value


def _condition(c: Any) -> dict:
    """A condition as k8s-openapi's Condition reads and writes it: the known fields only, and
    the time in whole seconds."""
    if not isinstance(c, dict):
        raise TypeError(f"status.conditions: expected an object, got {c!r}")
    out = {}
    for f in _CONDITION_REQUIRED:
        if not isinstance(c[f], str):
            raise TypeError(f"status.conditions[].{f}: expected a string")
        out[f] = c[f]
    out["lastTransitionTime"] = Instant.parse_rfc3339(c["lastTransitionTime"]).time()
    if c.get("observedGeneration") is not None:
        out["observedGeneration"] = _int(c["observedGeneration"], "observedGeneration")
    return out


@dataclass
class WebsiteSpec:
    """`spec`: the CRD requires `image` and defaults `replicas` to 1 and `content` to ""."""

    image: str
    replicas: int = 1
    content: str = ""

    @staticmethod
    def from_json(data: dict) -> WebsiteSpec:
        if not isinstance(data["image"], str):
            raise TypeError("spec.image: expected a string")
        replicas = data.get("replicas")
        content = data.get("content")
        if content is not None and not isinstance(content, str):
            raise TypeError("spec.content: expected a string")
        return WebsiteSpec(data["image"], 1 if replicas is None else _int(replicas, "spec.replicas"), content or "")


@dataclass
class WebsiteStatus:
    """`status`, written through the status subresource."""

    observed_generation: Optional[int] = None
    replicas: int = 0
    ready_replicas: int = 0
    updated_replicas: int = 0
    conditions: list = field(default_factory=list)

    @staticmethod
    def from_json(data: dict) -> WebsiteStatus:
        def number(key: str) -> int:
            return 0 if data.get(key) is None else _int(data[key], f"status.{key}")

        generation = data.get("observedGeneration")
        return WebsiteStatus(
            observed_generation=None if generation is None else _int(generation, "status.observedGeneration"),
            replicas=number("replicas"),
            ready_replicas=number("readyReplicas"),
            updated_replicas=number("updatedReplicas"),
            conditions=[_condition(c) for c in data.get("conditions") or []],
        )

    def to_json(self) -> dict:
        out: dict = {}
        if self.observed_generation is not None:
            out["observedGeneration"] = self.observed_generation
        out.update(
            replicas=self.replicas,
            readyReplicas=self.ready_replicas,
            updatedReplicas=self.updated_replicas,
            conditions=[dict(c) for c in self.conditions],
        )
        return out


@dataclass
class Website(Resource):
    """A static site: `kubectl get websites` lists them."""

    KIND = KIND

    metadata: dict
    spec: WebsiteSpec
    status: Optional[WebsiteStatus] = None

    @classmethod
    def from_json(cls, data: dict) -> Website:
        metadata = data["metadata"]
        if not isinstance(metadata, dict):
            raise TypeError("metadata: expected an object")
        status = data.get("status")
        return Website(metadata, WebsiteSpec.from_json(data["spec"]), None if status is None else WebsiteStatus.from_json(status))

    @property
    def name(self) -> str:
        return self.metadata.get("name") or ""
