//! What apiextensions-apiserver's decoder does to a custom resource before anything else
//! sees it: structural pruning of the fields the schema does not declare (reporting their
//! paths, for `fieldValidation`), the removal of non-nullable nulls that have no default,
//! ObjectMeta's unknown fields dropped, and structural defaulting (`pruning.PruneWithOptions`,
//! `defaulting.PruneNonNullableNullsWithoutDefaults`, `objectmeta.GetObjectMetaWithOptions`,
//! `defaulting.Default`).

use serde_json::{Map, Value};

use super::props::Props;

/// The fields of ObjectMeta: anything else under a resource's `metadata` is unknown.
const OBJECT_META: [&str; 15] = [
    "name",
    "generateName",
    "namespace",
    "selfLink",
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "labels",
    "annotations",
    "ownerReferences",
    "finalizers",
    "managedFields",
];

const META_FIELDS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// Prunes a whole resource; returns the unknown fields' paths, sorted (as upstream sorts them,
/// ObjectMeta's first).
pub(crate) fn prune_resource(object: &mut Value, root: &Props) -> Vec<String> {
    let mut unknown = Vec::new();
    if let Some(meta) = object.get_mut("metadata").and_then(Value::as_object_mut) {
        let extra: Vec<String> = meta.keys().filter(|k| !OBJECT_META.contains(&k.as_str())).cloned().collect();
        for k in extra {
            meta.remove(&k);
            unknown.push(format!("metadata.{k}"));
        }
    }
    let mut paths = Vec::new();
    prune(object, Some(root), true, &mut String::new(), &mut paths);
    paths.sort();
    unknown.extend(paths);
    unknown
}

fn push_key(path: &mut String, key: &str) {
    if !path.is_empty() {
        path.push('.');
    }
    path.push_str(key);
}

fn prune(x: &mut Value, s: Option<&Props>, embedded: bool, path: &mut String, unknown: &mut Vec<String>) {
    if let Some(s) = s
        && s.preserves_unknown()
    {
        return skip_prune(x, s, path, unknown);
    }
    let depth = path.len();
    match x {
        Value::Object(m) => {
            let Some(s) = s else {
                for k in m.keys() {
                    let mut p = path.clone();
                    push_key(&mut p, k);
                    unknown.push(p);
                }
                m.clear();
                return;
            };
            let embedded = embedded || s.embedded_resource;
            let mut removed = Vec::new();
            for (k, v) in m.iter_mut() {
                if embedded && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                if let Some(p) = s.property(k).or_else(|| s.additional()) {
                    push_key(path, k);
                    prune(v, Some(p), p.embedded_resource, path, unknown);
                    path.truncate(depth);
                } else if s.additional_properties.is_some() {
                    // A bare `additionalProperties` (a bool) has no schema: the value is
                    // pruned as one with none, as upstream's nil Structural.
                    push_key(path, k);
                    prune(v, None, false, path, unknown);
                    path.truncate(depth);
                } else {
                    removed.push(k.clone());
                }
            }
            for k in removed {
                m.remove(&k);
                // Upstream does not report a root's apiVersion/kind/metadata it drops.
                if !META_FIELDS.contains(&k.as_str()) || !path.is_empty() {
                    let mut p = path.clone();
                    push_key(&mut p, &k);
                    unknown.push(p);
                }
            }
        }
        Value::Array(items) => {
            let item_schema = s.and_then(|s| s.items.as_deref());
            for (i, v) in items.iter_mut().enumerate() {
                path.push_str(&format!("[{i}]"));
                prune(v, item_schema, item_schema.is_some_and(|p| p.embedded_resource), path, unknown);
                path.truncate(depth);
            }
        }
        _ => {}
    }
}

/// Prunes a value of schema `s` (a CRD default); whether anything was unknown.
pub(crate) fn prune_value(x: &mut Value, s: &Props) -> bool {
    let mut unknown = Vec::new();
    prune(x, Some(s), s.embedded_resource, &mut String::new(), &mut unknown);
    !unknown.is_empty()
}

/// Under `x-kubernetes-preserve-unknown-fields`: unknown fields stay, declared ones are pruned
/// by their own schemas.
fn skip_prune(x: &mut Value, s: &Props, path: &mut String, unknown: &mut Vec<String>) {
    let depth = path.len();
    match x {
        Value::Object(m) => {
            for (k, v) in m.iter_mut() {
                if s.embedded_resource && META_FIELDS.contains(&k.as_str()) {
                    continue;
                }
                if let Some(p) = s.property(k).or_else(|| s.additional()) {
                    push_key(path, k);
                    prune(v, Some(p), p.embedded_resource, path, unknown);
                    path.truncate(depth);
                }
            }
        }
        Value::Array(items) => {
            if let Some(item_schema) = s.items.as_deref() {
                for (i, v) in items.iter_mut().enumerate() {
                    path.push_str(&format!("[{i}]"));
                    skip_prune(v, item_schema, path, unknown);
                    path.truncate(depth);
                }
            }
        }
        _ => {}
    }
}

/// Drops object fields whose value is null where the schema neither allows null nor has a
/// default to put there (what a typed decoder would have made of them).
pub(crate) fn drop_null_fields(x: &mut Value, s: &Props) {
    match x {
        Value::Object(m) => {
            let drop: Vec<String> = m
                .iter()
                .filter(|(k, v)| v.is_null() && s.field(k).is_some_and(|p| !p.nullable && p.default.is_none()))
                .map(|(k, _)| k.clone())
                .collect();
            for k in drop {
                m.remove(&k);
            }
            for (k, v) in m.iter_mut() {
                if let Some(p) = s.field(k) {
                    drop_null_fields(v, p);
                }
            }
        }
        Value::Array(items) => {
            if let Some(p) = s.items.as_deref() {
                for v in items {
                    drop_null_fields(v, p);
                }
            }
        }
        _ => {}
    }
}

fn non_nullable_null(v: &Value, s: Option<&Props>) -> bool {
    v.is_null() && s.is_some_and(|s| !s.nullable)
}

/// Structural defaulting: absent fields (and non-nullable nulls) take their schema's default,
/// then everything below is defaulted in turn.
pub(crate) fn default(x: &mut Value, s: &Props) {
    match x {
        Value::Object(m) => {
            for (k, p) in &s.properties {
                let Some(d) = &p.default else { continue };
                if m.get(k).is_none_or(|v| non_nullable_null(v, Some(p))) {
                    m.insert(k.clone(), d.clone());
                }
            }
            default_fields(m, s);
        }
        Value::Array(items) => {
            let Some(p) = s.items.as_deref() else { return };
            for v in items {
                if non_nullable_null(v, Some(p))
                    && let Some(d) = &p.default
                {
                    *v = d.clone();
                }
                default(v, p);
            }
        }
        _ => {}
    }
}

fn default_fields(m: &mut Map<String, Value>, s: &Props) {
    for (k, v) in m.iter_mut() {
        if let Some(p) = s.property(k) {
            default(v, p);
        } else if let Some(p) = s.additional() {
            if non_nullable_null(v, Some(p))
                && let Some(d) = &p.default
            {
                *v = d.clone();
            }
            default(v, p);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn prunes_defaults_and_reports_paths() {
        let schema = Props::parse(&json!({"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "replicas": {"type": "integer", "default": 1},
            "mode": {"type": "string", "default": "fast"},
            "opt": {"type": "string", "nullable": true, "default": "x"},
            "gone": {"type": "string"},
            "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string", "default": "z"}}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": true,
                "properties": {"known": {"type": "object", "properties": {}}}},
            "template": {"type": "object", "x-kubernetes-embedded-resource": true,
                "properties": {"spec": {"type": "object"}}}
        }}}}));
        let mut obj = json!({"apiVersion": "example.com/v1", "kind": "W", "metadata": {"name": "w", "bogus": 1},
            "spec": {"mode": null, "opt": null, "gone": null, "extra": 1,
                "items": [{"b": 2}, {"a": "q"}],
                "free": {"anything": {"deep": 1}, "known": {"x": 1}},
                "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}, "junk": 1}},
            "status": {"x": 1}});
        let unknown = prune_resource(&mut obj, &schema);
        assert_eq!(
            unknown,
            ["metadata.bogus", "spec.extra", "spec.free.known.x", "spec.items[0].b", "spec.template.junk", "status"]
        );
        drop_null_fields(&mut obj, &schema);
        default(&mut obj, &schema);
        assert_eq!(
            obj["spec"],
            json!({"replicas": 1, "mode": "fast", "opt": null,
                "items": [{"a": "z"}, {"a": "q"}],
                "free": {"anything": {"deep": 1}, "known": {}},
                "template": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}})
        );
    }
}
