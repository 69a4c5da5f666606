//! ObjectMeta and label selector validation, which every kind goes through: apimachinery's
//! `pkg/api/validation/objectmeta.go` (with the core API's wrappers: the finalizer-name rule and
//! the name rule each kind picks), `pkg/api/validation/path` for path-segment names, and
//! `pkg/apis/meta/v1/validation` for label selectors, converted as `LabelSelectorAsSelector` does.
//!
//! It owns `metadata` and the selector format only. What a kind's spec means, and what a selector
//! must match, belong to the group files; nothing here knows a kind by name.

use serde_json::{Map, Value};
use wasmcm_core::validation::{NameFormat, dns1123_label, label_value, qualified_name};
use wasmcm_core::{Operator, Requirement, Selector};

use super::{Obj, V, child, deep_empty, go_strings, idx, json_short, q, semantic_eq, show};

pub(super) const TOTAL_ANNOTATION_SIZE: usize = 256 * 1024;

// ---------------------------------------------------------------------------------------------
// ObjectMeta (apimachinery/pkg/api/validation/objectmeta.go and the core wrappers).

#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Scope {
    Namespaced,
    Cluster,
    /// Custom resources: the scope lives in the CRD, which this module does not see.
    Either,
}

#[derive(Clone, Copy)]
pub(super) enum NameRule<'a> {
    Subdomain,
    Label,
    /// Services: a DNS-1035 label (starts with a letter).
    Dns1035,
    PathSegment,
    /// CRDs: a subdomain that must also equal `<plural>.<group>`.
    Crd(&'a str),
}

pub(super) fn name_errors(rule: NameRule, name: &str, prefix: bool) -> Vec<String> {
    let format = match rule {
        NameRule::Subdomain | NameRule::Crd(_) => NameFormat::Subdomain,
        NameRule::Label => NameFormat::Label,
        NameRule::Dns1035 => NameFormat::Dns1035,
        NameRule::PathSegment => NameFormat::PathSegment,
    };
    let mut errs = format.errors(name, prefix);
    if let NameRule::Crd(required) = rule
        && name != required
    {
        errs.push("must be spec.names.plural+\".\"+spec.group".into());
    }
    errs
}

/// Metadata checks for create (`old` None) or update, shared by every kind but core Events.
/// `kube_finalizers` adds the core API's rule that unprefixed finalizers be standard ones.
pub(super) fn meta(v: &mut V, obj: &Value, old: Option<&Value>, scope: Scope, rule: NameRule, kube_finalizers: bool) {
    let empty = Map::new();
    let m = v.obj(obj.get("metadata"), "metadata").unwrap_or(&empty);
    match old {
        None => meta_create(v, m, scope, rule),
        Some(old) => meta_update(v, m, old.get("metadata").and_then(Value::as_object).unwrap_or(&empty)),
    }
    meta_common(v, m, kube_finalizers);
}

pub(super) fn meta_name(v: &mut V, m: &Obj, rule: NameRule) {
    let name = v.string(m.get("name"), "metadata.name");
    let generate = v.string(m.get("generateName"), "metadata.generateName");
    if !generate.is_empty() {
        v.each("metadata.generateName", &q(generate), name_errors(rule, generate, true));
    }
    if !name.is_empty() {
        v.each("metadata.name", &q(name), name_errors(rule, name, false));
    } else if generate.is_empty() {
        v.required("metadata.name", "name or generateName is required");
    }
}

fn meta_create(v: &mut V, m: &Obj, scope: Scope, rule: NameRule) {
    meta_name(v, m, rule);
    let ns = v.string(m.get("namespace"), "metadata.namespace");
    match scope {
        Scope::Namespaced if ns.is_empty() => v.required("metadata.namespace", ""),
        Scope::Cluster if !ns.is_empty() => v.forbidden("metadata.namespace", "not allowed on this type"),
        Scope::Cluster => {}
        _ if !ns.is_empty() => v.each("metadata.namespace", &q(ns), dns1123_label(ns)),
        _ => {}
    }
}

fn meta_update(v: &mut V, m: &Obj, old: &Obj) {
    // The server carries uid and the timestamps over from the stored object when a request
    // leaves them out, so only a value that is sent and differs is a change.
    for (field, carried) in [
        ("name", false),
        ("namespace", false),
        ("uid", true),
        ("creationTimestamp", true),
        ("deletionTimestamp", true),
        ("deletionGracePeriodSeconds", true),
    ] {
        let new = m.get(field);
        let sent = !(carried && deep_empty(new));
        if sent && !semantic_eq(new, old.get(field)) {
            v.invalid(&child("metadata", field), &show(new), "field is immutable");
        }
    }
    if !deep_empty(old.get("deletionTimestamp")) {
        let before: Vec<&str> =
            old.get("finalizers").and_then(Value::as_array).into_iter().flatten().filter_map(Value::as_str).collect();
        let mut added: Vec<&str> = m
            .get("finalizers")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .filter(|f| !before.contains(f))
            .collect();
        added.sort_unstable();
        added.dedup();
        if !added.is_empty() {
            let detail = format!(
                "no new finalizers can be added if the object is being deleted, found new finalizers {}",
                go_strings(&added)
            );
            v.forbidden("metadata.finalizers", &detail);
        }
    }
}

fn meta_common(v: &mut V, m: &Obj, kube_finalizers: bool) {
    let generation = v.int(m.get("generation"), "metadata.generation");
    v.nonnegative("metadata.generation", generation);
    labels(v, m.get("labels"), "metadata.labels");
    annotations(v, m.get("annotations"), "metadata.annotations");
    owner_references(v, m.get("ownerReferences"));
    let finalizers = v.str_list(m.get("finalizers"), "metadata.finalizers");
    for (i, f) in finalizers.iter().enumerate() {
        v.each("metadata.finalizers", &q(f), qualified_name(f));
        if kube_finalizers {
            kube_finalizer(v, f, &idx("metadata.finalizers", i));
        }
    }
    if finalizers.contains(&"orphan") && finalizers.contains(&"foregroundDeletion") {
        let detail = "finalizer orphan and foregroundDeletion cannot be both set";
        v.invalid("metadata.finalizers", &go_strings(&finalizers), detail);
    }
}

pub(super) fn kube_finalizer(v: &mut V, f: &str, field: &str) {
    if !f.contains('/') && !["kubernetes", "orphan", "foregroundDeletion"].contains(&f) {
        v.invalid(field, &q(f), "name is neither a standard finalizer name nor is it fully qualified");
    }
}

pub(super) fn labels(v: &mut V, val: Option<&Value>, field: &str) {
    for (k, value) in v.str_map(val, field).unwrap_or_default() {
        v.each(field, &q(k), qualified_name(k));
        v.each(field, &q(value), label_value(value));
    }
}

pub(super) fn annotations(v: &mut V, val: Option<&Value>, field: &str) {
    let pairs = v.str_map(val, field).unwrap_or_default();
    for (k, _) in &pairs {
        // Annotation keys are qualified names in any case.
        v.each(field, &q(k), qualified_name(&k.to_lowercase()));
    }
    if pairs.iter().map(|(k, val)| k.len() + val.len()).sum::<usize>() > TOTAL_ANNOTATION_SIZE {
        v.too_long(field, TOTAL_ANNOTATION_SIZE);
    }
}

fn owner_references(v: &mut V, val: Option<&Value>) {
    const PATH: &str = "metadata.ownerReferences";
    let mut controller: Option<String> = None;
    for (_, r) in v.objs(val, PATH) {
        let api_version = v.string(r.get("apiVersion"), &child(PATH, "apiVersion"));
        let kind = v.string(r.get("kind"), &child(PATH, "kind"));
        let name = v.string(r.get("name"), &child(PATH, "name"));
        let uid = v.string(r.get("uid"), &child(PATH, "uid"));
        let version = match api_version.split('/').collect::<Vec<_>>().as_slice() {
            [version] | [_, version] => *version,
            _ => "",
        };
        if version.is_empty() {
            v.invalid(&child(PATH, "apiVersion"), &q(api_version), "version must not be empty");
        }
        for (field, value) in [("kind", kind), ("name", name), ("uid", uid)] {
            if value.is_empty() {
                v.invalid(&child(PATH, field), &q(value), "must not be empty");
            }
        }
        if api_version == "v1" && kind == "Event" {
            v.invalid(
                PATH,
                &json_short(&Value::Object(r.clone())),
                "/v1, Kind=Event is disallowed from being an owner",
            );
        }
        if v.boolean(r.get("controller"), &child(PATH, "controller")) == Some(true) {
            let this = format!("{kind}/{name}");
            match &controller {
                Some(first) => {
                    let detail = format!(
                        "Only one reference can have Controller set to true. Found \"true\" in references for \
                         {first} and {this}"
                    );
                    v.invalid(PATH, &show(val), &detail);
                }
                None => controller = Some(this),
            }
        }
    }
}

pub(super) use wasmcm_core::validation::path_segment;

// ---------------------------------------------------------------------------------------------
// Label selectors (apimachinery/pkg/apis/meta/v1/validation and labels.Selector semantics).

/// Validates a selector and converts it, as `metav1.LabelSelectorAsSelector` does; None when
/// anything was reported, as upstream has no usable labels.Selector then. The empty selector
/// converts to one that selects everything: what it must match is for the caller to decide.
pub(super) fn selector(v: &mut V, sel: &Obj, field: &str) -> Option<Selector> {
    let mut converted = Selector::default();
    let broken = v.reported(|v| {
        let labels_path = child(field, "matchLabels");
        for (k, value) in v.str_map(sel.get("matchLabels"), &labels_path).unwrap_or_default() {
            v.each(&labels_path, &q(k), qualified_name(k));
            v.each(&labels_path, &q(value), label_value(value));
            converted.match_labels.push((k.to_owned(), value.to_owned()));
        }
        for (path, e) in v.objs(sel.get("matchExpressions"), &child(field, "matchExpressions")) {
            let op = v.string(e.get("operator"), &child(&path, "operator"));
            let k = v.string(e.get("key"), &child(&path, "key"));
            let values = v.str_list(e.get("values"), &child(&path, "values"));
            let operator = match op {
                "In" | "NotIn" if values.is_empty() => {
                    v.required(&child(&path, "values"), "must be specified when `operator` is 'In' or 'NotIn'");
                    None
                }
                "Exists" | "DoesNotExist" if !values.is_empty() => {
                    v.forbidden(
                        &child(&path, "values"),
                        "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                    );
                    None
                }
                _ => {
                    let operator = Operator::parse(op);
                    if operator.is_none() {
                        v.invalid(&child(&path, "operator"), &q(op), "not a valid selector operator");
                    }
                    operator
                }
            };
            v.each(&child(&path, "key"), &q(k), qualified_name(k));
            for (i, value) in values.iter().enumerate() {
                v.each(&idx(&child(&path, "values"), i), &q(value), label_value(value));
            }
            if let Some(operator) = operator {
                let values = values.iter().map(|s| (*s).to_owned()).collect();
                converted.match_expressions.push(Requirement { key: k.to_owned(), operator, values });
            }
        }
    });
    (!broken).then_some(converted)
}

#[cfg(test)]
mod tests {
    use crate::validation::tests::run;
    use serde_json::json;

    #[test]
    fn custom_resources() {
        let widget =
            json!({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"x": [1]}});
        let creates = [
            ("valid without namespace", json!({}), ""),
            ("valid with namespace", json!({"/metadata/namespace": "default"}), ""),
            ("bad name", json!({"/metadata/name": "W"}), "Invalid metadata.name"),
            ("unprefixed finalizer is only a warning", json!({"/metadata/finalizers": ["cleanup"]}), ""),
        ];
        let updates = [("rename", json!({}), json!({"/metadata/name": "x"}), "Invalid metadata.name")];
        run("example.com/v1", "Widget", &widget, &creates, &updates);
    }
}
