"""The Website's children as it wants them, and how a live child is brought back to that without
touching what others (the API server's defaults, other controllers, users) set."""

from __future__ import annotations

import copy

import release
from wasmcm_guest import new_controller_ref
from website import KIND, Website

#: Marks every child with the release that last wrote it.
VERSION_ANNOTATION = "example.wasmcm.dev/controller-version"

#: The container serving the site, in the Deployment's pod template.
CONTAINER = "web"


def content_name(website: str) -> str:
    """The ConfigMap holding a Website's page."""
    return f"{website}-content"


def page(site: Website) -> str:
    """The page as served: the spec's content, and from release 0.2.0 on a footer naming the
    release (the visible difference of the second version)."""
    if release.V2:
        return f"{site.spec.content}\n<footer>served by website {release.version()}</footer>\n"
    return site.spec.content


def pod_labels(name: str) -> dict:
    """The labels of the site's pods, which the Deployment selects by."""
    return {"app.kubernetes.io/name": "website", "app.kubernetes.io/instance": name}


def metadata(site: Website, name: str) -> dict:
    """Metadata of a child: named after the site, in its namespace, controlled by it."""
    labels = pod_labels(site.name)
    labels["app.kubernetes.io/managed-by"] = "website"
    return {
        "name": name,
        "namespace": site.metadata.get("namespace"),
        "labels": labels,
        "annotations": {VERSION_ANNOTATION: release.version()},
        "ownerReferences": [new_controller_ref(KIND.api_version, KIND.kind, site.metadata)],
    }


def content(site: Website) -> dict:
    """The ConfigMap `<name>-content` with the page as `index.html`."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata(site, content_name(site.name)),
        "data": {"index.html": page(site)},
    }


def deployment(site: Website) -> dict:
    """The Deployment `<name>`: `spec.replicas` pods of `spec.image` serving the content
    ConfigMap from nginx's document root."""
    name = site.name
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": metadata(site, name),
        "spec": {
            "replicas": site.spec.replicas,
            "selector": {"matchLabels": pod_labels(name)},
            "template": {
                "metadata": {"labels": pod_labels(name)},
                "spec": {
                    "containers": [
                        {
                            "name": CONTAINER,
                            "image": site.spec.image,
                            "ports": [{"name": "http", "containerPort": 80}],
                            "volumeMounts": [
                                {"name": "content", "mountPath": "/usr/share/nginx/html", "readOnly": True}
                            ],
                        }
                    ],
                    "volumes": [{"name": "content", "configMap": {"name": content_name(name)}}],
                },
            },
        },
    }


def _object(parent: dict, key: str) -> dict:
    """`parent[key]` as an object, made one if it is missing or null (as serde_json's indexing
    does)."""
    if parent.get(key) is None:
        parent[key] = {}
    return parent[key]


def converge(live: dict, desired: dict) -> bool:
    """Sets in `live` the fields this plugin owns, from `desired` (both of one kind); returns
    whether anything changed, i.e. whether an update is needed. A comparison of whole objects
    would never settle: the API server adds defaults and status, and others may add labels."""
    before = copy.deepcopy(live)
    meta = _object(live, "metadata")
    for field in ("labels", "annotations"):
        want = desired["metadata"].get(field)
        if isinstance(want, dict):
            if not isinstance(meta.get(field), dict):
                meta[field] = {}
            meta[field].update(copy.deepcopy(want))
    kind = desired.get("kind")
    if kind == "ConfigMap":
        live["data"] = copy.deepcopy(desired["data"])
    elif kind == "Deployment":
        spec = _object(live, "spec")
        spec["replicas"] = desired["spec"]["replicas"]
        image = desired["spec"]["template"]["spec"]["containers"][0]["image"]
        containers = ((spec.get("template") or {}).get("spec") or {}).get("containers")
        ours = [c for c in containers if isinstance(c, dict) and c.get("name") == CONTAINER] if isinstance(containers, list) else []
        if ours:
            ours[0]["image"] = image
        else:
            # Someone removed ours: the template as this plugin makes it.
            spec["template"] = copy.deepcopy(desired["spec"]["template"])
    return live != before
