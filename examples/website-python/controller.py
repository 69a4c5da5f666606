"""`website`: the example plugin for a custom resource (examples/website) in Python, behaving
as the Rust one does: the same writes in the same batches for the same request and cache, so
that a recording of the Rust plugin's reconciles replays identically against this one.

A `Website` (`example.wasmcm.dev/v1`, the Rust example's `deploy/crd.yaml`) asks for a static
site. The plugin reconciles each Website into

- two owned children, controlled by it: a ConfigMap `<name>-content` holding the page and a
  Deployment `<name>` serving it (`children`);
- its status: the Deployment's replica counts, `observedGeneration`, and the `Ready` and
  `Progressing` conditions (`status`);
- an entry in the namespace's registry, a ConfigMap (`website-registry`, or the manifest's
  `settings.registry`) shared by every Website of the namespace and owned by none, so a
  finalizer keeps a deleted Website until the plugin has removed its entry.

componentize-py builds this module (`build.sh`); `controller_v2.py` builds the second release.
"""

from __future__ import annotations

from typing import Optional

import children
import release
import status
import wasmcm_guest as wg
from wasmcm_guest import Create, Kind, Object, Outcome, Permanent, PluginInfo, Request, Update, UpdateStatus
from website import Website

#: Held by every Website until its registry entry is removed.
FINALIZER = "example.wasmcm.dev/registry"

#: The registry ConfigMap's name when the manifest's settings name none.
DEFAULT_REGISTRY = "website-registry"

DEPLOYMENT = Kind("apps/v1", "Deployment")
CONFIG_MAP = Kind("v1", "ConfigMap")


class WebsitePlugin(wg.Plugin):
    def describe(self) -> PluginInfo:
        return PluginInfo(
            name="website",
            version=release.version(),
            primary=Website.KIND,
            # Their changes wake the Website that controls them; the registry ConfigMap has no
            # controller and wakes nothing.
            owns=[DEPLOYMENT, CONFIG_MAP],
            watches=[],
            # Website: its finalizer and status; ConfigMap: content and registry.
            writes=[Website.KIND, DEPLOYMENT, CONFIG_MAP],
        )

    def reconcile(self, request: Request, cache: wg.Cache) -> Outcome:
        return reconcile(request, cache)


def registry_setting(request: Request) -> str:
    """The manifest's `settings.registry`: the registry ConfigMap's name in each namespace."""
    try:
        settings = request.settings_json()
    except Permanent as e:
        raise Permanent(f'{e.message} (expected {{"registry": "<name>"}})') from None
    registry = settings.get("registry")
    if registry is not None and not isinstance(registry, str):
        raise Permanent('settings: registry: expected a string (expected {"registry": "<name>"})')
    return DEFAULT_REGISTRY if registry is None else registry


def reconcile(request: Request, cache: wg.Cache) -> Outcome:
    """One reconcile of the Website `request.namespace/request.name`."""
    outcome = Outcome()
    site = cache.get_as(Website, request.namespace, request.name)
    if site is None:
        # Gone: its children go with it (ownerReferences), and the finalizer saw to the
        # registry before the API server let it go.
        return outcome
    registry_name = registry_setting(request)
    registry = cache.get_as(CONFIG_MAP, request.namespace, registry_name)
    meta = site.value.metadata

    if wg.is_deleting(meta):
        if wg.has_finalizer(meta, FINALIZER):
            # The entry first; the finalizer only once that write succeeded (a later batch).
            outcome.push_batch([w for w in [registry_entry(site, registry, registry_name, None)] if w])
            raw = site.raw()
            wg.remove_finalizer(raw, FINALIZER)
            outcome.push_batch([Update(raw)])
        return outcome
    if not wg.has_finalizer(meta, FINALIZER):
        # Nothing else this time: the update changes the resourceVersion that a status write
        # would be preconditioned on, and its watch event brings the Website back at once.
        raw = site.raw()
        wg.add_finalizer(raw, FINALIZER)
        return outcome.push_batch([Update(raw)])

    uid = meta.get("uid") or ""
    content = cache.get_as(CONFIG_MAP, request.namespace, children.content_name(request.name))
    deployment = cache.get_as(DEPLOYMENT, request.namespace, request.name)
    problems: list[str] = []
    child_writes: list[wg.Intent] = []
    for live, desired in ((content, children.content(site.value)), (deployment, children.deployment(site.value))):
        if live is None:
            child_writes.append(Create(desired))
            continue
        current = live.raw()
        if wg.controller_uid(current.get("metadata")) != uid:
            # Never take over what someone else made: say so in status instead.
            problems.append(f"{desired['kind']} {desired['metadata']['name']} exists and is not controlled by this Website")
        elif children.converge(current, desired):
            child_writes.append(Update(current))
    pending = bool(child_writes)
    registry_write = registry_entry(site, registry, registry_name, site.value.spec.image)
    outcome.push_batch(child_writes + ([registry_write] if registry_write else []))

    # After the children's writes: a status write is not attempted when they fail.
    new_status = status.compute(site.value, deployment.value if deployment else None, pending, problems, request.now)
    if new_status is not None:
        raw = site.raw()
        raw["status"] = new_status.to_json()
        outcome.push_batch([UpdateStatus(raw)])
    return outcome


def registry_entry(
    site: Object[Website], registry: Optional[Object[dict]], registry_name: str, image: Optional[str]
) -> Optional[wg.Intent]:
    """The write that makes the registry hold `image` for this Website (`None`: no entry), if one
    is needed. The registry is created by the first Website of a namespace and never deleted."""
    name = site.value.name
    current = ((registry.value.get("data") or {}) if registry else {}).get(name)
    if current == image:
        return None
    if registry is None:
        created = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {
                "name": registry_name,
                "namespace": site.value.metadata.get("namespace") or "",
                "labels": {"app.kubernetes.io/managed-by": "website"},
            },
            "data": {name: image},
        }
        return Create(created)
    raw = registry.raw()
    if not isinstance(raw.get("data"), dict):
        raw["data"] = {}
    if image is not None:
        raw["data"][name] = image
    else:
        raw["data"].pop(name, None)
    return Update(raw)


# The component's export (componentize-py serves the class named Controller).
Controller = wg.export(WebsitePlugin)
