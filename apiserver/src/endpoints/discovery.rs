//! Discovery documents: `/api`, `/apis`, per-group and per-version resource lists, the
//! aggregated discovery (apidiscovery.k8s.io/v2) kubectl 1.35 asks for first, and `/version`.

use serde_json::{Value, json};

use crate::registry::resources::{Registry, ResourceType};

/// Media type of aggregated discovery, which client-go checks on the response.
pub(crate) const AGGREGATED: &str = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList";

pub(crate) fn version() -> Value {
    json!({
        "major": "1",
        "minor": "35",
        "emulationMajor": "1",
        "emulationMinor": "35",
        "gitVersion": concat!("v1.35.0-wasmcm.", env!("CARGO_PKG_VERSION")),
        "gitCommit": "",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "n/a (Rust)",
        "compiler": "rustc",
        "platform": format!("{}/{}", std::env::consts::OS, std::env::consts::ARCH),
    })
}

pub(crate) fn api_versions(server: &str) -> Value {
    json!({
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server}],
    })
}

fn group_entry(group: &str, versions: &[String]) -> Value {
    let gv = |v: &String| json!({"groupVersion": format!("{group}/{v}"), "version": v});
    json!({
        "name": group,
        "versions": versions.iter().map(gv).collect::<Vec<_>>(),
        "preferredVersion": versions.first().map(gv).unwrap_or(Value::Null),
    })
}

pub(crate) fn api_group_list(registry: &Registry) -> Value {
    let groups: Vec<Value> =
        registry.groups().iter().filter(|(g, _)| !g.is_empty()).map(|(g, vs)| group_entry(g, vs)).collect();
    json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": groups})
}

pub(crate) fn api_group(registry: &Registry, group: &str) -> Option<Value> {
    let (g, vs) = registry.groups().into_iter().find(|(g, _)| g == group && !g.is_empty())?;
    let mut doc = group_entry(&g, &vs);
    doc["kind"] = json!("APIGroup");
    doc["apiVersion"] = json!("v1");
    Some(doc)
}

const SUB_VERBS: [&str; 3] = ["get", "patch", "update"];

pub(crate) fn resource_list(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let types: Vec<ResourceType> =
        registry.all().into_iter().filter(|t| t.group == group && t.version == version).collect();
    if types.is_empty() {
        return None;
    }
    let mut resources = Vec::new();
    for t in &types {
        resources.push(json!({
            "name": t.resource,
            "singularName": t.singular,
            "namespaced": t.namespaced,
            "kind": t.kind,
            "verbs": t.verbs(),
            "shortNames": t.short_names,
            "categories": t.categories,
        }));
        if t.status {
            resources.push(json!({
                "name": format!("{}/status", t.resource), "singularName": "", "namespaced": t.namespaced,
                "kind": t.kind, "verbs": SUB_VERBS,
            }));
        }
        if t.scale {
            resources.push(json!({
                "name": format!("{}/scale", t.resource), "singularName": "", "namespaced": t.namespaced,
                "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": SUB_VERBS,
            }));
        }
        for sub in t.strategy.subresources.iter().filter(|s| s.discovered) {
            let mut entry = json!({
                "name": format!("{}/{}", t.resource, sub.name), "singularName": "", "namespaced": t.namespaced,
                "kind": t.kind, "verbs": sub.verbs,
            });
            if let Some((group, version, kind)) = sub.kind {
                entry["group"] = json!(group);
                entry["version"] = json!(version);
                entry["kind"] = json!(kind);
            }
            resources.push(entry);
        }
    }
    let group_version = if group.is_empty() { version.to_string() } else { format!("{group}/{version}") };
    Some(json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources}))
}

/// Aggregated discovery for the core group (`/api`) or every named group (`/apis`).
pub(crate) fn aggregated(registry: &Registry, core: bool) -> Value {
    let items: Vec<Value> = registry
        .groups()
        .into_iter()
        .filter(|(g, _)| g.is_empty() == core)
        .map(|(group, versions)| {
            let versions: Vec<Value> = versions
                .iter()
                .map(|version| {
                    let resources: Vec<Value> = registry
                        .all()
                        .into_iter()
                        .filter(|t| t.group == group && t.version == *version)
                        .map(|t| {
                            let kind = |g: &str, v: &str, k: &str| json!({"group": g, "version": v, "kind": k});
                            let mut subresources = Vec::new();
                            if t.status {
                                subresources.push(json!({"subresource": "status", "responseKind": kind(&t.group, &t.version, &t.kind), "verbs": SUB_VERBS}));
                            }
                            if t.scale {
                                subresources.push(json!({"subresource": "scale", "responseKind": kind("autoscaling", "v1", "Scale"), "verbs": SUB_VERBS}));
                            }
                            for sub in t.strategy.subresources.iter().filter(|s| s.discovered) {
                                let (g, v, k) = sub.kind.unwrap_or((&t.group, &t.version, &t.kind));
                                subresources.push(json!({"subresource": sub.name, "responseKind": kind(g, v, k), "verbs": sub.verbs}));
                            }
                            json!({
                                "resource": t.resource,
                                "responseKind": kind(&t.group, &t.version, &t.kind),
                                "scope": if t.namespaced { "Namespaced" } else { "Cluster" },
                                "singularResource": t.singular,
                                "verbs": t.verbs(),
                                "shortNames": t.short_names,
                                "categories": t.categories,
                                "subresources": subresources,
                            })
                        })
                        .collect();
                    json!({"version": version, "resources": resources, "freshness": "Current"})
                })
                .collect();
            json!({"metadata": {"name": group}, "versions": versions})
        })
        .collect();
    json!({"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items})
}
