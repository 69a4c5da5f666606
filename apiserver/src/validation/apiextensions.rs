//! CustomResourceDefinitions: `apiextensions-apiserver/pkg/apis/apiextensions/validation`, for the
//! names, versions and the part of the structural-schema rules hand-written CRDs get wrong. It owns
//! the CRD object; custom resources themselves get only the generic `meta` rules (see `validate`).

use serde_json::{Map, Value};
use wasmcm_core::validation::{dns1035_label, dns1123_subdomain};

use super::meta::{NameRule, Scope, meta};
use super::{Obj, V, child, deep_empty, go_strings, idx, json_short, key, one_of, q, semantic_eq, show, text};

pub(crate) fn crd(v: &mut V, obj: &Value, old: Option<&Value>) {
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
            Some(schema) => {
                let before = v.causes.len();
                structural(v, schema, &schema_path, 0);
                // Defaults are checked against a schema that is structural.
                if v.causes.len() == before {
                    v.causes.extend(crate::custom::default_causes(schema, &schema_path));
                }
            }
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

/// Upstream's structural-schema invariants (`schema.ValidateStructural`, its errors sorted as it
/// sorts them) and the schema checks of the CRD API validation that v1 makes fatal
/// (`additionalProperties` beside `properties`, `x-kubernetes-preserve-unknown-fields: false`).
fn structural(v: &mut V, schema: &Value, path: &str, _depth: usize) {
    let mut errors = V::default();
    invariants(&mut errors, schema, Level::Root, path, 0);
    errors.causes.sort_by_key(|c| format!("{}: {}", c.field, c.message));
    v.causes.extend(errors.causes);
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Level {
    Root,
    Item,
    Field,
}

/// Deep enough for any real schema; bounds the work on hostile input.
const MAX_DEPTH: usize = 64;

fn flag(s: &Obj, k: &str) -> bool {
    s.get(k).and_then(Value::as_bool) == Some(true)
}

fn invariants(v: &mut V, schema: &Value, lvl: Level, path: &str, depth: usize) {
    let Some(s) = v.obj(Some(schema), path) else { return };
    if depth > MAX_DEPTH {
        return;
    }
    let ty = s.get("type").and_then(Value::as_str).unwrap_or("");
    let props = s.get("properties").and_then(Value::as_object);
    let (embedded, preserve, int_or_string) = (
        flag(s, "x-kubernetes-embedded-resource"),
        flag(s, "x-kubernetes-preserve-unknown-fields"),
        flag(s, "x-kubernetes-int-or-string"),
    );
    if ty == "array" && s.get("items").is_none_or(Value::is_null) {
        v.required(&child(path, "items"), "must be specified");
    }
    if let Some(items) = s.get("items").filter(|i| i.is_object()) {
        invariants(v, items, Level::Item, &child(path, "items"), depth + 1);
    }
    for (k, p) in props.into_iter().flatten() {
        invariants(v, p, Level::Field, &key(&child(path, "properties"), k), depth + 1);
    }
    let additional = s.get("additionalProperties").filter(|a| !a.is_null());
    if let Some(a) = additional {
        if lvl == Level::Root {
            v.forbidden(&child(path, "additionalProperties"), "must not be used at the root");
        }
        if a.is_object() {
            invariants(v, a, Level::Field, &child(path, "additionalProperties"), depth + 1);
        }
        if props.is_some_and(|p| !p.is_empty()) {
            v.forbidden(
                &child(path, "additionalProperties"),
                "additionalProperties and properties are mutual exclusive",
            );
        }
    }
    unique_items(v, s, path);
    if s.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool) == Some(false) {
        v.invalid(&child(path, "x-kubernetes-preserve-unknown-fields"), "false", "must be true or undefined");
    }
    if int_or_string && preserve {
        let field = child(path, "x-kubernetes-preserve-unknown-fields");
        v.invalid(&field, "true", "must be false if x-kubernetes-int-or-string is true");
    }
    if int_or_string && embedded {
        v.invalid(
            &child(path, "x-kubernetes-embedded-resource"),
            "true",
            "must be false if x-kubernetes-int-or-string is true",
        );
    }
    value_validation(v, s, path, depth);
    if embedded && ty != "object" {
        if ty.is_empty() {
            v.required(&child(path, "type"), "must be object if x-kubernetes-embedded-resource is true");
        } else {
            v.invalid(&child(path, "type"), &q(ty), "must be object if x-kubernetes-embedded-resource is true");
        }
    } else if ty.is_empty() && !int_or_string && !preserve {
        let detail = match lvl {
            Level::Root => "must not be empty at the root",
            Level::Item => "must not be empty for specified array items",
            Level::Field => "must not be empty for specified object fields",
        };
        v.required(&child(path, "type"), detail);
    }
    if embedded && additional.is_some() {
        v.forbidden(&child(path, "additionalProperties"), "must not be used if x-kubernetes-embedded-resource is set");
    }
    if lvl == Level::Root && !ty.is_empty() && ty != "object" {
        v.invalid(&child(path, "type"), &q(ty), "must be object at the root");
    }
    let check_metadata = lvl == Level::Root || embedded;
    let props_path = child(path, "properties");
    for name in ["kind", "apiVersion"] {
        if let Some(p) = props.and_then(|p| p.get(name)).filter(|_| check_metadata) {
            let t = text(Some(p), "/type");
            if t != "string" {
                v.invalid(&child(&key(&props_path, name), "type"), &q(t), "must be string");
            }
        }
    }
    if let Some(meta) = props.and_then(|p| p.get("metadata")) {
        let meta_path = key(&props_path, "metadata");
        let t = text(Some(meta), "/type");
        if check_metadata && t != "object" {
            v.invalid(&child(&meta_path, "type"), &q(t), "must be object");
        }
        if lvl == Level::Root {
            // Only name and generateName may be restricted; type and default are let be.
            let only_names = meta.as_object().is_some_and(|m| {
                m.iter().all(|(k, x)| match k.as_str() {
                    "type" | "default" => true,
                    "properties" => x.as_object().is_some_and(|p| p.keys().all(|n| n == "name" || n == "generateName")),
                    _ => false,
                })
            });
            if !only_names {
                v.forbidden(
                    &meta_path,
                    "must not specify anything other than name and generateName, but metadata is implicitly specified",
                );
            }
        }
    }
    if embedded && !preserve && props.is_none_or(|p| p.is_empty()) {
        v.required(
            &props_path,
            "must not be empty if x-kubernetes-embedded-resource is true without x-kubernetes-preserve-unknown-fields",
        );
    }
}

/// anyOf: [{type: integer}, {type: string}], the one place a type may appear in a value
/// validation (int-or-string's long form).
fn int_or_string_any_of(v: Option<&Value>) -> bool {
    v.and_then(Value::as_array).is_some_and(|a| {
        a.len() == 2
            && a[0].as_object().is_some_and(|o| o.len() == 1 && text(a.first(), "/type") == "integer")
            && a[1].as_object().is_some_and(|o| o.len() == 1 && text(a.get(1), "/type") == "string")
    })
}

fn value_validation(v: &mut V, s: &Obj, path: &str, depth: usize) {
    value_validation_skipping(v, s, path, depth, int_or_string_any_of(s.get("anyOf")), {
        s.get("allOf")
            .and_then(Value::as_array)
            .and_then(|a| a.first())
            .is_some_and(|f| int_or_string_any_of(f.get("anyOf")))
    });
}

fn value_validation_skipping(v: &mut V, s: &Obj, path: &str, depth: usize, skip_any_of: bool, skip_first_all_of: bool) {
    for junction in ["anyOf", "allOf", "oneOf"] {
        if junction == "anyOf" && skip_any_of {
            continue;
        }
        for (i, n) in s.get(junction).and_then(Value::as_array).into_iter().flatten().enumerate() {
            let skip = junction == "allOf" && i == 0 && skip_first_all_of;
            nested(v, n, &idx(&child(path, junction), i), depth + 1, skip);
        }
    }
    if let Some(not) = s.get("not").filter(|n| n.is_object()) {
        nested(v, not, &child(path, "not"), depth + 1, false);
    }
    if let Some(pattern) = s.get("pattern").and_then(Value::as_str)
        && let Err(e) = regex::Regex::new(pattern)
    {
        let why =
            format!("must be a valid regular expression, but isn't: {}", e.to_string().lines().last().unwrap_or(""));
        v.invalid(&child(path, "pattern"), &q(pattern), &why);
    }
}

/// `uniqueItems: true`, which upstream's `ValidateCustomResourceDefinitionOpenAPISchema`
/// forbids at every level of a schema: its check compares every pair of items.
fn unique_items(v: &mut V, s: &Obj, path: &str) {
    if flag(s, "uniqueItems") {
        v.forbidden(
            &child(path, "uniqueItems"),
            "uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
        );
    }
}

/// A schema inside anyOf/allOf/oneOf/not: value validations only.
fn nested(v: &mut V, schema: &Value, path: &str, depth: usize, skip_any_of: bool) {
    let Some(s) = schema.as_object() else { return };
    if depth > MAX_DEPTH {
        return;
    }
    unique_items(v, s, path);
    value_validation_skipping(v, s, path, depth, skip_any_of, false);
    if let Some(items) = s.get("items").filter(|i| i.is_object()) {
        nested(v, items, &child(path, "items"), depth + 1, false);
    }
    for (k, p) in s.get("properties").and_then(Value::as_object).into_iter().flatten() {
        nested(v, p, &key(&child(path, "properties"), k), depth + 1, false);
    }
    let forbidden: [(&str, &str); 12] = [
        ("type", "must be empty to be structural"),
        ("additionalProperties", "must be undefined to be structural"),
        ("default", "must be undefined to be structural"),
        ("title", "must be empty to be structural"),
        ("description", "must be empty to be structural"),
        ("nullable", "must be false to be structural"),
        ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
        ("x-kubernetes-embedded-resource", "must be false to be structural"),
        ("x-kubernetes-int-or-string", "must be false to be structural"),
        ("x-kubernetes-list-map-keys", "must be empty to be structural"),
        ("x-kubernetes-list-type", "must be undefined to be structural"),
        ("x-kubernetes-validations", "must be empty to be structural"),
    ];
    for (k, detail) in forbidden {
        if s.get(k).is_some_and(|x| !deep_empty(Some(x))) {
            v.forbidden(&child(path, k), detail);
        }
    }
    if s.get("x-kubernetes-map-type").is_some_and(|x| !x.is_null()) {
        v.forbidden(&child(path, "x-kubernetes-map-type"), "must be undefined to be structural");
    }
    if s.get("properties").and_then(|p| p.get("metadata")).is_some() {
        v.forbidden(&key(&child(path, "properties"), "metadata"), "must not be specified in a nested context");
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
                "array without items",
                json!({"/spec/versions/0/schema/openAPIV3Schema/properties/status": {"type": "array"}}),
                format!("Required {root}.properties[status].items"),
            ),
            (
                "additionalProperties beside properties",
                json!({"/spec/versions/0/schema/openAPIV3Schema/properties/spec/additionalProperties": {"type": "string"}}),
                format!("Forbidden {root}.properties[spec].additionalProperties"),
            ),
            (
                "metadata beyond names",
                json!({"/spec/versions/0/schema/openAPIV3Schema/properties/metadata": {"type": "object",
                    "properties": {"labels": {"type": "object"}}}}),
                format!("Forbidden {root}.properties[metadata]"),
            ),
            (
                "type in a value validation",
                json!({"/spec/versions/0/schema/openAPIV3Schema/properties/spec/anyOf": [{"type": "string"}]}),
                format!("Forbidden {root}.properties[spec].anyOf[0].type"),
            ),
            (
                "int-or-string's long form",
                json!({"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size/anyOf":
                    [{"type": "integer"}, {"type": "string"}]}),
                String::new(),
            ),
            (
                "default of the wrong type",
                json!({"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/tags/default": "a"}),
                format!("TypeInvalid {root}.properties[spec].properties[tags].default"),
            ),
            (
                "default with unknown fields",
                json!({"/spec/versions/0/schema/openAPIV3Schema/properties/spec/default": {"nope": 1}}),
                format!("Invalid {root}.properties[spec].default"),
            ),
            (
                "embedded resource untyped",
                json!({"/spec/versions/0/schema/openAPIV3Schema/properties/status":
                    {"x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}),
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
            (
                "uniqueItems",
                json!({"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/tags/uniqueItems": true}),
                format!("Forbidden {root}.properties[spec].properties[tags].uniqueItems"),
            ),
            (
                "uniqueItems in a value validation",
                json!({"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/tags/allOf":
                    [{"uniqueItems": true}]}),
                format!("Forbidden {root}.properties[spec].properties[tags].allOf[0].uniqueItems"),
            ),
            (
                "uniqueItems false",
                json!({"/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/tags/uniqueItems": false}),
                String::new(),
            ),
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
