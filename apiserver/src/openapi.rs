//! OpenAPI documents: `/openapi/v3` (index and one document per group version) and
//! `/openapi/v2`. They describe every served path and operation with the Kubernetes vendor
//! extensions and the `dryRun` / `fieldManager` / `fieldValidation` parameters, which is what
//! kubectl reads to decide that the server validates fields itself.

use std::hash::{Hash, Hasher};

use serde_json::{Map, Value, json};

use super::resources::{Registry, ResourceType};

fn gvk(t: &ResourceType) -> Value {
    json!({"group": t.group, "version": t.version, "kind": t.kind})
}

fn query(name: &str, description: &str) -> Value {
    json!({"name": name, "in": "query", "description": description, "schema": {"type": "string", "uniqueItems": true}})
}

fn write_params() -> Vec<Value> {
    vec![
        query("dryRun", "When present, indicates that modifications should not be persisted."),
        query("fieldManager", "A name associated with the actor or entity that is making these changes."),
        query("fieldValidation", "Ignore, Warn or Strict: how to handle unknown or duplicate fields."),
    ]
}

fn op(t: &ResourceType, action: &str, params: Vec<Value>) -> Value {
    json!({
        "operationId": format!("{action}{}", t.kind),
        "parameters": params,
        "responses": {"200": {"description": "OK"}},
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": gvk(t),
    })
}

fn paths_for(t: &ResourceType) -> Map<String, Value> {
    let base =
        if t.group.is_empty() { format!("/api/{}", t.version) } else { format!("/apis/{}/{}", t.group, t.version) };
    let collection = if t.namespaced {
        format!("{base}/namespaces/{{namespace}}/{}", t.resource)
    } else {
        format!("{base}/{}", t.resource)
    };
    let item = format!("{collection}/{{name}}");
    let mut paths = Map::new();
    if t.create_only {
        paths.insert(collection, json!({"post": op(t, "post", write_params())}));
        return paths;
    }
    paths.insert(
        collection.clone(),
        json!({
            "get": op(t, "list", vec![]),
            "post": op(t, "post", write_params()),
            "delete": op(t, "deletecollection", vec![]),
        }),
    );
    paths.insert(
        item.clone(),
        json!({
            "get": op(t, "get", vec![]),
            "put": op(t, "put", write_params()),
            "patch": op(t, "patch", write_params()),
            "delete": op(t, "delete", vec![query("dryRun", "When present, indicates that modifications should not be persisted.")]),
        }),
    );
    for (sub, enabled) in [("status", t.status), ("scale", t.scale)] {
        if enabled {
            let sub_op = |action: &str, params| {
                let mut o = op(t, action, params);
                if sub == "scale" {
                    o["x-kubernetes-group-version-kind"] =
                        json!({"group": "autoscaling", "version": "v1", "kind": "Scale"});
                }
                o
            };
            paths.insert(
                format!("{item}/{sub}"),
                json!({"get": sub_op("get", vec![]), "put": sub_op("put", write_params()), "patch": sub_op("patch", write_params())}),
            );
        }
    }
    if super::discovery::has_token(t) {
        let mut o = op(t, "post", write_params());
        o["operationId"] = json!(format!("create{}Token", t.kind));
        o["x-kubernetes-group-version-kind"] =
            json!({"group": "authentication.k8s.io", "version": "v1", "kind": "TokenRequest"});
        paths.insert(format!("{item}/token"), json!({"post": o}));
    }
    paths
}

/// The document of one group version, or None if nothing is served there.
pub(crate) fn v3_group_version(registry: &Registry, group: &str, version: &str) -> Option<Value> {
    let types: Vec<ResourceType> =
        registry.all().into_iter().filter(|t| t.group == group && t.version == version).collect();
    if types.is_empty() {
        return None;
    }
    let mut paths = Map::new();
    for t in &types {
        paths.extend(paths_for(t));
    }
    Some(json!({
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": "v1.35.0"},
        "paths": paths,
        "components": {"schemas": {}},
    }))
}

fn hash_of(v: &Value) -> String {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    v.to_string().hash(&mut h);
    format!("{:016X}", h.finish())
}

pub(crate) fn v3_index(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for (group, versions) in registry.groups() {
        for version in versions {
            let key = if group.is_empty() { format!("api/{version}") } else { format!("apis/{group}/{version}") };
            let hash = v3_group_version(registry, &group, &version).map(|d| hash_of(&d)).unwrap_or_default();
            paths.insert(key.clone(), json!({"serverRelativeURL": format!("/openapi/v3/{key}?hash={hash}")}));
        }
    }
    json!({"paths": paths})
}

pub(crate) fn v2(registry: &Registry) -> Value {
    let mut paths = Map::new();
    for t in registry.all() {
        paths.extend(paths_for(&t));
    }
    json!({"swagger": "2.0", "info": {"title": "Kubernetes", "version": "v1.35.0"}, "paths": paths, "definitions": {}})
}
