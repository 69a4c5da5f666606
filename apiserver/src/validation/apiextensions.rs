//! CustomResourceDefinitions: `apiextensions-apiserver/pkg/apis/apiextensions/validation`, for the
//! names, versions and the part of the structural-schema rules hand-written CRDs get wrong. It owns
//! the CRD object; custom resources themselves get only the generic `meta` rules (see `validate`).

use serde_json::{Map, Value};
use wasmcm_core::validation::{dns1035_label, dns1123_subdomain};

use super::meta::{NameRule, Scope, meta};
use super::{Obj, V, child, deep_empty, go_strings, idx, json_short, key, one_of, q, semantic_eq, show, text};

pub(super) fn crd(v: &mut V, obj: &Value, old: Option<&Value>) {
    let empty = Map::new();
    let spec = obj.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    let group = spec.get("group").and_then(Value::as_str).unwrap_or("");
    let plural = spec.get("names").and_then(|n| n.get("plural")).and_then(Value::as_str).unwrap_or("");
    let required_name = format!("{plural}.{group}");
    // CRDs use the generic ObjectMeta rules, without the core finalizer-name rule.
    meta(v, obj, old, Scope::Cluster, NameRule::Crd(&required_name), false);
    let spec = v.obj(obj.get("spec"), "spec").unwrap_or(&empty);

    let group = v.string(spec.get("group"), "spec.group");
    if group.is_empty() {
        v.required("spec.group", "");
    } else if let errs @ [_, ..] = dns1123_subdomain(group).as_slice() {
        v.invalid("spec.group", &q(group), &errs.join(","));
    } else if !group.contains('.') {
        v.invalid("spec.group", &q(group), "should be a domain with at least one dot");
    }
    let scope = v.string(spec.get("scope"), "spec.scope");
    one_of(v, "spec.scope", scope, &["Cluster", "Namespaced"]);

    let mut storage = Vec::new();
    let mut version_names: Vec<&str> = Vec::new();
    let mut unique = true;
    let versions = v.objs(spec.get("versions"), "spec.versions");
    for (vpath, version) in &versions {
        let name = v.string(version.get("name"), &child(vpath, "name"));
        if v.boolean(version.get("storage"), &child(vpath, "storage")) == Some(true) {
            storage.push((name, *version));
        }
        v.boolean(version.get("served"), &child(vpath, "served"));
        unique &= !version_names.contains(&name);
        version_names.push(name);
        if let errs @ [_, ..] = dns1035_label(name).as_slice() {
            v.invalid(&child(vpath, "name"), &q(name), &errs.join(","));
        }
        let schema_path = child(vpath, "schema.openAPIV3Schema");
        match version.get("schema").and_then(|s| s.get("openAPIV3Schema")).filter(|s| !s.is_null()) {
            None => v.required(&schema_path, "schemas are required"),
            Some(schema) => structural(v, schema, &schema_path, 0),
        }
    }
    let shown_versions = show(spec.get("versions"));
    if !unique {
        v.invalid("spec.versions", &shown_versions, "must contain unique version names");
    }
    if storage.len() != 1 {
        v.invalid("spec.versions", &shown_versions, "must have exactly one version marked as storage version");
    }

    let empty_names = Map::new();
    let names = v.obj(spec.get("names"), "spec.names").unwrap_or(&empty_names);
    let name_of = |v: &mut V, field: &str| v.string(names.get(field), &child("spec.names", field));
    let (plural, singular, kind, list_kind) =
        (name_of(v, "plural"), name_of(v, "singular"), name_of(v, "kind"), name_of(v, "listKind"));
    for (field, value) in [("plural", plural), ("singular", singular), ("kind", kind), ("listKind", list_kind)] {
        if value.is_empty() {
            v.required(&child("spec.names", field), "");
        }
    }
    for (field, value, mixed_case) in
        [("plural", plural, false), ("singular", singular, false), ("kind", kind, true), ("listKind", list_kind, true)]
    {
        let errs = dns1035_label(&value.to_lowercase());
        if !value.is_empty() && !errs.is_empty() {
            let prefix = if mixed_case { "may have mixed case, but should otherwise match: " } else { "" };
            v.invalid(&child("spec.names", field), &q(value), &format!("{prefix}{}", errs.join(",")));
        }
    }
    for field in ["shortNames", "categories"] {
        let path = child("spec.names", field);
        for (i, s) in v.str_list(names.get(field), &path).into_iter().enumerate() {
            if let errs @ [_, ..] = dns1035_label(s).as_slice() {
                v.invalid(&idx(&path, i), &q(s), &errs.join(","));
            }
        }
    }
    if !kind.is_empty() && kind == list_kind {
        v.invalid("spec.names.listKind", &q(list_kind), "kind and listKind may not be the same");
    }

    if let Some(conversion) = v.obj(spec.get("conversion"), "spec.conversion") {
        let strategy = v.string(conversion.get("strategy"), "spec.conversion.strategy");
        one_of(v, "spec.conversion.strategy", strategy, &["None", "Webhook"]);
        let client_config = conversion.get("webhook").and_then(|w| w.get("clientConfig")).filter(|c| !c.is_null());
        if strategy == "Webhook" && client_config.is_none() {
            v.required("spec.conversion.webhookClientConfig", "required when strategy is set to Webhook");
        } else if strategy != "Webhook" && client_config.is_some() {
            v.forbidden("spec.conversion.webhookClientConfig", "should not be set when strategy is not set to Webhook");
        }
    }

    stored_versions(v, obj, &version_names, &storage);

    if let Some(old) = old {
        let established = old
            .pointer("/status/conditions")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|c| text(Some(c), "/type") == "Established" && text(Some(c), "/status") == "True");
        let mut immutable = vec![("spec.group", "/spec/group"), ("spec.names.plural", "/spec/names/plural")];
        if established {
            immutable.extend([("spec.scope", "/spec/scope"), ("spec.names.kind", "/spec/names/kind")]);
        }
        for (field, pointer) in immutable {
            if !semantic_eq(obj.pointer(pointer), old.pointer(pointer)) {
                v.invalid(field, &show(obj.pointer(pointer)), "field is immutable");
            }
        }
    }
}

fn stored_versions(v: &mut V, obj: &Value, versions: &[&str], storage: &[(&str, &Obj)]) {
    let path = "status.storedVersions";
    let stored = v.str_list(obj.pointer("/status/storedVersions"), path);
    if stored.is_empty() {
        v.invalid(path, &go_strings(&stored), "must have at least one stored version");
        return;
    }
    for (name, version) in storage {
        if !stored.contains(name) {
            v.invalid(
                path,
                &json_short(&Value::Object((*version).clone())),
                &format!("must have the storage version {name}"),
            );
        }
    }
    for (i, s) in stored.iter().enumerate() {
        if !versions.contains(s) {
            v.invalid(&idx(path, i), &q(s), "must appear in spec.versions");
        }
    }
}

/// The part of the structural-schema rules that hand-written CRDs get wrong: types present.
fn structural(v: &mut V, schema: &Value, path: &str, depth: usize) {
    let Some(s) = v.obj(Some(schema), path) else { return };
    let kind = v.string(s.get("type"), &child(path, "type"));
    if depth == 0 {
        if kind.is_empty() {
            v.required(&child(path, "type"), "must not be empty at the root");
        } else if kind != "object" {
            v.invalid(&child(path, "type"), &q(kind), "must be object at the root");
        }
    }
    // Deep enough for any real schema; bounds the work on hostile input.
    if depth > 32 {
        return;
    }
    // Upstream exempts int-or-string and embedded resources; preserve-unknown-fields is let
    // through as well, erring towards accepting what a real server might.
    let untyped_ok = |s: &Obj| {
        ["x-kubernetes-int-or-string", "x-kubernetes-embedded-resource", "x-kubernetes-preserve-unknown-fields"]
            .iter()
            .any(|k| s.get(*k).and_then(Value::as_bool) == Some(true))
    };
    let props_path = child(path, "properties");
    if let Some(props) = v.obj(s.get("properties"), &props_path) {
        for (name, prop) in props {
            let ppath = key(&props_path, name);
            if let Some(p) = prop.as_object()
                && deep_empty(p.get("type"))
                && !untyped_ok(p)
            {
                v.required(&child(&ppath, "type"), "must not be empty for specified object fields");
            }
            structural(v, prop, &ppath, depth + 1);
        }
    }
    if let Some(items) = s.get("items").filter(|i| i.is_object()) {
        let ipath = child(path, "items");
        if let Some(i) = items.as_object()
            && deep_empty(i.get("type"))
            && !untyped_ok(i)
        {
            v.required(&child(&ipath, "type"), "must not be empty for specified array items");
        }
        structural(v, items, &ipath, depth + 1);
    }
    if let Some(additional) = s.get("additionalProperties").filter(|a| a.is_object()) {
        structural(v, additional, &child(path, "additionalProperties"), depth + 1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::tests::run;
    use serde_json::json;

    #[test]
    fn custom_resource_definitions() {
        let schema = json!({"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object",
            "properties": {
            "size": {"x-kubernetes-int-or-string": true}, "tags": {"type": "array", "items": {"type": "string"}}}}}}});
        let crd = json!({"metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList",
                    "shortNames": ["wd"]},
                "versions": [{"name": "v1", "served": true, "storage": true, "schema": schema}],
                "conversion": {"strategy": "None"}},
            "status": {"storedVersions": ["v1"]}});
        let version = |name: &str, storage: bool| {
            let schema = json!({"openAPIV3Schema": {"type": "object"}});
            json!({"/spec/versions/1": {"name": name, "served": true, "storage": storage, "schema": schema}})
        };
        let root = "spec.versions[0].schema.openAPIV3Schema";
        let creates = [
            ("valid", json!({}), String::new()),
            ("name mismatch", json!({"/metadata/name": "widget.example.com"}), "Invalid metadata.name".into()),
            (
                "group without dot",
                json!({"/spec/group": "example", "/metadata/name": "widgets.example"}),
                "Invalid spec.group".into(),
            ),
            ("scope", json!({"/spec/scope": "Global"}), "NotSupported spec.scope".into()),
            ("no scope", json!({"/spec/scope": null}), "Required spec.scope".into()),
            (
                "no versions",
                json!({"/spec/versions": []}),
                "Invalid spec.versions, Invalid status.storedVersions[0]".into(),
            ),
            (
                "two storage versions",
                version("v2", true),
                "Invalid spec.versions, Invalid status.storedVersions".into(),
            ),
            ("duplicate version", version("v1", false), "Invalid spec.versions".into()),
            (
                "bad version name",
                json!({"/spec/versions/0/name": "V1", "/status/storedVersions": ["V1"]}),
                "Invalid spec.versions[0].name".into(),
            ),
            ("no schema", json!({"/spec/versions/0/schema": null}), format!("Required {root}")),
            (
                "root type",
                json!({"/spec/versions/0/schema/openAPIV3Schema/type": "string"}),
                format!("Invalid {root}.type"),
            ),
            (
                "untyped property",
                json!({"/spec/versions/0/schema/openAPIV3Schema/properties/status": {"properties": {}}}),
                format!("Required {root}.properties[status].type"),
            ),
            (
                "no plural",
                json!({"/spec/names/plural": null, "/metadata/name": ".example.com"}),
                "Invalid metadata.name, Required spec.names.plural".into(),
            ),
            ("no kind", json!({"/spec/names/kind": null}), "Required spec.names.kind".into()),
            ("kind is listKind", json!({"/spec/names/listKind": "Widget"}), "Invalid spec.names.listKind".into()),
            ("bad short name", json!({"/spec/names/shortNames/0": "W D"}), "Invalid spec.names.shortNames[0]".into()),
            (
                "webhook without config",
                json!({"/spec/conversion/strategy": "Webhook"}),
                "Required spec.conversion.webhookClientConfig".into(),
            ),
            ("namespaced", json!({"/metadata/namespace": "default"}), "Forbidden metadata.namespace".into()),
        ];
        let creates: Vec<(&str, Value, &str)> = creates.iter().map(|(n, e, w)| (*n, e.clone(), w.as_ref())).collect();
        let established = json!({"/status/conditions": [{"type": "Established", "status": "True"}]});
        let updates = [
            ("new version", json!({}), version("v2", false), ""),
            ("group change", json!({}), json!({"/spec/group": "other.com"}), "Invalid spec.group"),
            ("scope change before established", json!({}), json!({"/spec/scope": "Cluster"}), ""),
            ("scope change once established", established, json!({"/spec/scope": "Cluster"}), "Invalid spec.scope"),
        ];
        run("apiextensions.k8s.io/v1", "CustomResourceDefinition", &crd, &creates, &updates);
    }
}
