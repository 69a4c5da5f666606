//! Custom resources held to their CustomResourceDefinition's structural schema, as
//! apiextensions-apiserver holds them: every write's object is pruned of undeclared fields
//! (reported per the request's `fieldValidation`: Strict refuses, Warn answers `Warning:
//! unknown field "spec.foo"` headers, Ignore drops them silently), nulls coerced and
//! defaults filled in, then validated against the served version's `openAPIV3Schema`
//! (kube-openapi's rules and messages), the `x-kubernetes-list-type` set/map invariants and
//! the scale subresource's replica paths. The status subresource validates `status` only.
//!
//! The schema validator is a port, not a crate: the `jsonschema` crate checks JSON Schema
//! draft semantics, while CRDs follow OpenAPI v3 as go-openapi/kube-openapi read it (boolean
//! `exclusiveMaximum`, `nullable`, `x-kubernetes-int-or-string`, Go's int64/float64 typing of
//! numbers, strfmt's formats) and clients match on kube-openapi's exact error strings.
//!
//! - `props`: the schema read from JSON. `formats`: strfmt's string formats.
//! - `validate`: kube-openapi's validator and the field errors it becomes.
//! - `identity`: when two list items are the same, for the list-type checks in linear time.
//! - `prune`: pruning, null coercion and defaulting.
//! - `builtin`: the same `fieldValidation` for built-in kinds, by the generated schema.
//!
//! The request's `fieldValidation` directive and the warnings a write earns travel through
//! [`scoped`], a thread-local scope around the (synchronous) write, so the verbs in `api`
//! need no new parameters.

mod builtin;
mod formats;
mod identity;
mod props;
mod prune;
mod validate;

use std::cell::RefCell;
use std::sync::{Arc, LazyLock, Mutex};

use serde_json::{Value, json};

pub(crate) use props::Props;
use wasmcm_core::ApiError;
use wasmcm_core::{Cause, Kind};

const META_KEYS: [&str; 3] = ["apiVersion", "kind", "metadata"];

/// What one served version of a CRD holds its objects to.
#[derive(Debug)]
pub(crate) struct Schema {
    root: Props,
    scale: Option<ScalePaths>,
}

#[derive(Debug)]
struct ScalePaths {
    spec_replicas: String,
    status_replicas: String,
    label_selector: Option<String>,
}

/// A [`Schema`] shared by the resource types that serve it; types compare equal whatever
/// their schema (a schema is derived from the CRD, which the type's other fields identify).
#[derive(Clone, Debug)]
pub(crate) struct CustomSchema(pub Arc<Schema>);

impl PartialEq for CustomSchema {
    fn eq(&self, _: &Self) -> bool {
        true
    }
}
impl Eq for CustomSchema {}

impl CustomSchema {
    /// The schema of one version (an item of `spec.versions`) of a CRD.
    pub(crate) fn of_version(version: &Value) -> CustomSchema {
        let root = Props::parse(version.pointer("/schema/openAPIV3Schema").unwrap_or(&Value::Null));
        let scale = version.pointer("/subresources/scale").filter(|s| s.is_object()).map(|s| {
            let path = |k: &str| s.get(k).and_then(Value::as_str).map(String::from);
            ScalePaths {
                spec_replicas: path("specReplicasPath").unwrap_or_else(|| ".spec.replicas".into()),
                status_replicas: path("statusReplicasPath").unwrap_or_else(|| ".status.replicas".into()),
                label_selector: path("labelSelectorPath"),
            }
        });
        CustomSchema(Arc::new(Schema { root, scale }))
    }

    /// The version's `openAPIV3Schema`, as read: what server-side apply merges its objects by
    /// (`managed::Ty::of_custom`).
    pub(crate) fn root(&self) -> &Props {
        &self.0.root
    }
}

/// `fieldValidation`: what a write does with fields the schema does not declare.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub(crate) enum FieldValidation {
    Ignore,
    /// kube-apiserver's default when the parameter is absent (kubectl sends Strict).
    #[default]
    Warn,
    Strict,
}

impl FieldValidation {
    /// The query parameter's value; anything else is refused as upstream's options
    /// validation refuses it (`options_kind`: CreateOptions, UpdateOptions, PatchOptions).
    pub(crate) fn parse(value: Option<&str>, options_kind: &str) -> Result<FieldValidation, ApiError> {
        match value {
            None | Some("") => Ok(FieldValidation::default()),
            Some("Ignore") => Ok(FieldValidation::Ignore),
            Some("Warn") => Ok(FieldValidation::Warn),
            Some("Strict") => Ok(FieldValidation::Strict),
            Some(other) => {
                let cause = wasmcm_core::Cause {
                    reason: "FieldValueNotSupported".into(),
                    field: "fieldValidation".into(),
                    message: format!(
                        "Unsupported value: {other:?}: supported values: \"\", \"Ignore\", \"Strict\", \"Warn\""
                    ),
                };
                Err(ApiError::invalid("meta.k8s.io", options_kind, "", vec![cause]))
            }
        }
    }
}

/// How the write's object arrived, which decides how a strict decoding error is answered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Arrival {
    /// A body (POST, PUT): 400, "cannot be handled as a Kind".
    Body,
    /// A JSON or merge patch's result: 422 on `patch`.
    Patch,
}

struct Scope {
    directive: FieldValidation,
    arrival: Arrival,
    warnings: Vec<String>,
}

thread_local! {
    static SCOPE: RefCell<Option<Scope>> = const { RefCell::new(None) };
    /// Warnings of the last scoped write on this thread, until the response takes them.
    static PENDING: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// Runs a request's write with its directive in force. The warnings it earns (deduplicated,
/// in order) wait for [`take_warnings`]. Writes outside a scope (the server's own loops)
/// drop unknown fields silently.
pub(crate) fn scoped<R>(directive: FieldValidation, arrival: Arrival, f: impl FnOnce() -> R) -> R {
    SCOPE.with(|s| *s.borrow_mut() = Some(Scope { directive, arrival, warnings: Vec::new() }));
    let r = f();
    let warnings = SCOPE.with(|s| s.borrow_mut().take()).map(|s| s.warnings).unwrap_or_default();
    PENDING.with(|p| *p.borrow_mut() = warnings);
    r
}

/// The warnings the request just served on this thread earned. Called by the HTTP layer
/// right as the request's handler returns: a write's handler does not yield after the write,
/// so the request is still on the thread that ran it.
pub(crate) fn take_warnings() -> Vec<String> {
    PENDING.with(|p| std::mem::take(&mut *p.borrow_mut()))
}

/// Decodes a custom resource's incoming object as upstream's decoder does: prunes it
/// (unknown fields handled per the request's directive), coerces nulls and defaults it.
/// A built-in kind's object loses the fields its type does not have, as a typed decoder drops
/// them, but only in a request's scope: the server's own loops write what they mean to.
pub(crate) fn decode(schema: Option<&CustomSchema>, kind: &Kind, object: &mut Value) -> Result<(), ApiError> {
    // What a strict patch error shows: the patched object as it came, before pruning.
    let strict_patch = SCOPE.with(|s| {
        s.borrow().as_ref().is_some_and(|s| s.directive == FieldValidation::Strict && s.arrival == Arrival::Patch)
    });
    let original = if strict_patch { object.clone() } else { Value::Null };
    let unknown = match schema {
        Some(CustomSchema(schema)) => {
            let unknown = prune::prune_resource(object, &schema.root);
            prune::drop_null_fields(object, &schema.root);
            prune::default(object, &schema.root);
            unknown
        }
        None if SCOPE.with(|s| s.borrow().is_some()) => builtin::prune(&kind.api_version, &kind.kind, object),
        None => Vec::new(),
    };
    if unknown.is_empty() {
        return Ok(());
    }
    SCOPE.with(|s| {
        let mut s = s.borrow_mut();
        let Some(scope) = s.as_mut() else { return Ok(()) };
        let errors: Vec<String> = unknown.iter().map(|p| format!("unknown field {p:?}")).collect();
        match scope.directive {
            FieldValidation::Ignore => Ok(()),
            FieldValidation::Warn => {
                for e in errors {
                    if !scope.warnings.contains(&e) {
                        scope.warnings.push(e);
                    }
                }
                Ok(())
            }
            FieldValidation::Strict => {
                let strict = format!("strict decoding error: {}", errors.join(", "));
                Err(match scope.arrival {
                    Arrival::Body => ApiError::bad_request(format!(
                        "{} in version {:?} cannot be handled as a {}: {strict}",
                        kind.kind,
                        kind.version(),
                        kind.kind
                    )),
                    Arrival::Patch => {
                        let shown = format!("{:?}", original.to_string());
                        let cause = wasmcm_core::Cause {
                            reason: "FieldValueInvalid".into(),
                            field: "patch".into(),
                            message: format!("Invalid value: {shown}: {strict}"),
                        };
                        ApiError::invalid("", "", "", vec![cause])
                    }
                })
            }
        }
    })
}

/// A server-side apply's configuration must hold only fields the type declares: upstream's
/// field manager converts it to its typed form first and fails with a plain error (500), for
/// any `fieldValidation`.
pub(crate) fn check_apply_fields(schema: Option<&CustomSchema>, kind: &Kind, config: &Value) -> Result<(), ApiError> {
    let mut probe = config.clone();
    let unknown = match schema {
        Some(CustomSchema(schema)) => prune::prune_resource(&mut probe, &schema.root),
        None => builtin::prune(&kind.api_version, &kind.kind, &mut probe),
    };
    if unknown.is_empty() {
        return Ok(());
    }
    let errors: Vec<String> = unknown.iter().map(|p| format!(".{p}: field not declared in schema")).collect();
    let joined = match errors.as_slice() {
        [one] => one.clone(),
        many => format!("errors:\n  {}", many.join("\n  ")),
    };
    let namespace = config.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("");
    let name = config.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    Err(ApiError::new(
        500,
        "",
        format!(
            "failed to create typed patch object ({namespace}/{name}; {}/{}, Kind={}): {joined}",
            kind.group(),
            kind.version(),
            kind.kind
        ),
    ))
}

/// Applies defaults to an object read back from storage (a schema may have gained defaults
/// since it was written), as upstream's storage decoder does.
pub(crate) fn default_stored(schema: Option<&CustomSchema>, object: &Value) -> Option<Value> {
    let CustomSchema(schema) = schema?;
    let mut o = object.clone();
    prune::default(&mut o, &schema.root);
    (o != *object).then_some(o)
}

/// Schema validation of a whole custom resource: create (`old` None) and update.
pub(crate) fn validate(schema: Option<&CustomSchema>, object: &Value, old: Option<&Value>) -> Vec<Cause> {
    let Some(CustomSchema(schema)) = schema else { return Vec::new() };
    let mut causes = validate::validate(&schema.root, object, old, None);
    causes.extend(scale_causes(schema, object, true));
    // The root is checked by the generic ObjectMeta rules, not as an embedded resource.
    if let Some(m) = object.as_object() {
        for (k, x) in m.iter().filter(|(k, _)| !META_KEYS.contains(&k.as_str())) {
            if let Some(p) = schema.root.property(k) {
                embedded(p, x, k, &mut causes);
            }
        }
    }
    list_causes(schema, object, old, &mut causes);
    causes
}

/// Schema validation of a status subresource write: `status` against its own schema.
pub(crate) fn validate_status(schema: Option<&CustomSchema>, object: &Value, old: &Value) -> Vec<Cause> {
    let Some(CustomSchema(schema)) = schema else { return Vec::new() };
    let mut causes = Vec::new();
    if let (Some(status), Some(s)) = (object.get("status"), schema.root.property("status")) {
        causes = validate::validate(s, status, old.get("status"), Some("status"));
    }
    causes.extend(scale_causes(schema, object, false));
    list_causes(schema, object, Some(old), &mut causes);
    causes
}

/// What upstream's `objectmeta.Validate` checks of the resources embedded in a custom resource
/// (`x-kubernetes-embedded-resource`): apiVersion and kind present and well formed. Their
/// metadata gets only the pruning of unknown fields (see `prune`).
fn embedded(s: &Props, v: &Value, path: &str, causes: &mut Vec<Cause>) {
    match v {
        Value::Object(m) => {
            if s.embedded_resource {
                let at = |k: &str| if path.is_empty() { k.to_string() } else { format!("{path}.{k}") };
                for k in ["apiVersion", "kind"] {
                    if !m.contains_key(k) {
                        causes.push(Cause {
                            reason: "FieldValueRequired".into(),
                            field: at(k),
                            message: "Required value".into(),
                        });
                    }
                }
                let mut invalid = |k: &str, shown: String, detail: String| {
                    causes.push(Cause {
                        reason: "FieldValueInvalid".into(),
                        field: at(k),
                        message: format!("Invalid value: {shown}: {detail}"),
                    })
                };
                match m.get("apiVersion") {
                    Some(Value::String(a)) if a.is_empty() => {
                        invalid("apiVersion", "\"\"".into(), "must not be empty".into())
                    }
                    Some(Value::String(a)) if a.matches('/').count() > 1 => {
                        invalid("apiVersion", format!("{a:?}"), format!("unexpected GroupVersion string: {a}"))
                    }
                    Some(Value::String(_)) | None => {}
                    Some(other) => invalid("apiVersion", go_print(other), "must be a string".into()),
                }
                match m.get("kind") {
                    Some(Value::String(k)) if k.is_empty() => {
                        invalid("kind", "\"\"".into(), "must not be empty".into())
                    }
                    Some(Value::String(k)) => {
                        let errs = wasmcm_core::validation::dns1035_label(&k.to_lowercase());
                        if !errs.is_empty() {
                            let detail = format!("may have mixed case, but should otherwise match: {}", errs.join(","));
                            invalid("kind", format!("{k:?}"), detail);
                        }
                    }
                    None => {}
                    Some(other) => invalid("kind", go_print(other), "must be a string".into()),
                }
            }
            for (k, x) in m {
                if let Some(p) = s.property(k) {
                    let child = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                    embedded(p, x, &child, causes);
                } else if let Some(p) = s.additional() {
                    embedded(p, x, &format!("{path}[{k}]"), causes);
                }
            }
        }
        Value::Array(items) => {
            if let Some(p) = s.items.as_deref() {
                for (i, x) in items.iter().enumerate() {
                    embedded(p, x, &format!("{path}[{i}]"), causes);
                }
            }
        }
        _ => {}
    }
}

/// The list-type invariants, checked on an update only when the old object kept them.
fn list_causes(schema: &Schema, object: &Value, old: Option<&Value>, causes: &mut Vec<Cause>) {
    if let Some(old) = old {
        let mut before = Vec::new();
        lists(&schema.root, old, "", &mut before);
        if !before.is_empty() {
            return;
        }
    }
    lists(&schema.root, object, "", causes);
}

fn dotted(path: &str) -> Vec<&str> {
    path.trim_start_matches('.').split('.').collect()
}

fn at<'a>(object: &'a Value, path: &str) -> Option<&'a Value> {
    dotted(path).into_iter().try_fold(object, |v, k| v.get(k))
}

fn scale_causes(schema: &Schema, object: &Value, spec: bool) -> Vec<Cause> {
    let Some(scale) = &schema.scale else { return Vec::new() };
    let mut causes = Vec::new();
    let mut replicas = |path: &str| {
        let shown = match at(object, path) {
            None => return,
            Some(Value::Number(n)) if n.is_i64() => match n.as_i64().unwrap_or(0) {
                r if r < 0 => (r, "should be a non-negative integer".to_string()),
                r if r > i64::from(i32::MAX) => (r, format!("should be less than or equal to {}", i32::MAX)),
                _ => return,
            },
            Some(other) => {
                let field = dotted(path).join(".");
                let ty = type_name(other);
                (0, format!(".{field} accessor error: {} is of the type {ty}, expected int64", go_print(other)))
            }
        };
        causes.push(Cause {
            reason: "FieldValueInvalid".into(),
            field: path.to_string(),
            message: format!("Invalid value: {}: {}", shown.0, shown.1),
        });
    };
    if spec {
        replicas(&scale.spec_replicas);
    }
    replicas(&scale.status_replicas);
    if let Some(path) = &scale.label_selector
        && let Some(other) = at(object, path).filter(|v| !v.is_string())
    {
        let field = dotted(path).join(".");
        causes.push(Cause {
            reason: "FieldValueInvalid".into(),
            field: path.clone(),
            message: format!(
                "Invalid value: \"\": .{field} accessor error: {} is of the type {}, expected string",
                go_print(other),
                type_name(other)
            ),
        });
    }
    causes
}

/// The Go type unstructured JSON decodes to.
fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "<nil>",
        Value::Bool(_) => "bool",
        Value::Number(n) if n.is_i64() => "int64",
        Value::Number(_) => "float64",
        Value::String(_) => "string",
        Value::Array(_) => "[]interface {}",
        Value::Object(_) => "map[string]interface {}",
    }
}

fn go_print(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Number(n) => {
            n.as_i64().map(|i| i.to_string()).unwrap_or_else(|| validate::go_float(n.as_f64().unwrap_or(0.0)))
        }
        other => other.to_string(),
    }
}

/// A CRD version's defaults checked as upstream's `defaulting.ValidateDefaults` checks them:
/// each must be pruned already and valid against its own schema. `path` is the schema's
/// field path (`spec.versions[0].schema.openAPIV3Schema`); defaults inside `metadata` and
/// under `additionalProperties` are not looked at (upstream forbids or coerces those).
pub(crate) fn default_causes(schema: &Value, path: &str) -> Vec<Cause> {
    let mut causes = Vec::new();
    defaults_at(&Props::parse(schema), path, true, &mut causes);
    causes
}

fn defaults_at(s: &Props, path: &str, root: bool, causes: &mut Vec<Cause>) {
    if let Some(d) = &s.default {
        let field = format!("{path}.default");
        let mut pruned = d.clone();
        if prune::prune_value(&mut pruned, s) {
            let shown = if d.is_string() { format!("{:?}", d.as_str().unwrap_or("")) } else { go_print(d) };
            causes.push(Cause {
                reason: "FieldValueInvalid".into(),
                field: field.clone(),
                message: format!("Invalid value: {shown}: must not have unknown fields"),
            });
        }
        causes.extend(validate::validate(s, d, None, Some(&field)));
    }
    if let Some(items) = s.items.as_deref() {
        defaults_at(items, &format!("{path}.items"), false, causes);
    }
    for (k, p) in &s.properties {
        if root && k == "metadata" {
            continue;
        }
        defaults_at(p, &format!("{path}.properties[{k}]"), false, causes);
    }
}

/// `x-kubernetes-list-type` set and map invariants (`listtype.ValidateListSetsAndMaps`).
fn lists(s: &Props, v: &Value, path: &str, causes: &mut Vec<Cause>) {
    match v {
        Value::Object(m) => {
            for (k, x) in m {
                if let Some(p) = s.property(k) {
                    let child = if path.is_empty() { k.clone() } else { format!("{path}.{k}") };
                    lists(p, x, &child, causes);
                } else if let Some(p) = s.additional() {
                    lists(p, x, &format!("{path}[{k}]"), causes);
                }
            }
        }
        Value::Array(items) => {
            let duplicate = |causes: &mut Vec<Cause>, i: usize, shown: &Value| {
                let shown = match shown {
                    Value::String(s) => format!("{s:?}"),
                    other => go_print(other),
                };
                causes.push(Cause {
                    reason: "FieldValueDuplicate".into(),
                    field: format!("{path}[{i}]"),
                    message: format!("Duplicate value: {shown}"),
                });
            };
            match s.list_type.as_deref() {
                Some("set") => {
                    for i in identity::first_repeats(items.iter().map(identity::Identity::of)) {
                        duplicate(causes, i, &items[i]);
                    }
                }
                Some("map") => {
                    if let Some(i) = items.iter().position(|x| !x.is_null() && !x.is_object()) {
                        causes.push(Cause {
                            reason: "FieldValueInvalid".into(),
                            field: format!("{path}[{i}]"),
                            message: format!(
                                "Invalid value: {}: must be an object for an array of list-type map",
                                go_print(&items[i])
                            ),
                        });
                    } else {
                        let keys = items.iter().map(|x| identity::map_key(x, &s.list_map_keys));
                        for i in identity::first_repeats(keys) {
                            // Shown as upstream shows it: the object of the keys the item has.
                            let mut key = serde_json::Map::new();
                            for k in &s.list_map_keys {
                                if let Some(v) = items[i].get(k) {
                                    key.insert(k.clone(), v.clone());
                                }
                            }
                            duplicate(causes, i, &Value::Object(key));
                        }
                    }
                }
                _ => {}
            }
            if let Some(p) = s.items.as_deref() {
                for (i, x) in items.iter().enumerate() {
                    lists(p, x, &format!("{path}[{i}]"), causes);
                }
            }
        }
        _ => {}
    }
}

/// A pattern as Go's RE2 `regexp.MatchString`, compiled once per pattern.
pub(super) fn pattern_matches(pattern: &str, text: &str) -> bool {
    type Compiled = Vec<(String, Option<regex::Regex>)>;
    static CACHE: LazyLock<Mutex<Compiled>> = LazyLock::new(|| Mutex::new(Vec::new()));
    let Ok(mut cache) = CACHE.lock() else { return true };
    if let Some((_, re)) = cache.iter().find(|(p, _)| p == pattern) {
        // An uncompilable pattern was refused with the CRD upstream; let the value pass.
        return re.as_ref().is_none_or(|re| re.is_match(text));
    }
    let re = regex::Regex::new(pattern).ok();
    let matched = re.as_ref().is_none_or(|re| re.is_match(text));
    if cache.len() >= 256 {
        cache.remove(0);
    }
    cache.push((pattern.to_string(), re));
    matched
}

/// The autoscaling/v1 Scale of a custom resource at its CRD's paths: `status.selector` is the
/// string at `labelSelectorPath`, absent when it has none (as kube-apiserver leaves it).
pub(crate) fn scale_of(schema: Option<&CustomSchema>, object: &Value) -> Option<Value> {
    let scale = schema?.0.scale.as_ref()?;
    let mut meta = json!({});
    for f in ["name", "namespace", "uid", "resourceVersion", "creationTimestamp"] {
        if let Some(v) = object.pointer(&format!("/metadata/{f}")) {
            meta[f] = v.clone();
        }
    }
    let int = |path: &str| at(object, path).and_then(Value::as_i64).unwrap_or(0);
    let mut status = json!({"replicas": int(&scale.status_replicas)});
    if let Some(selector) = scale.label_selector.as_deref().and_then(|p| at(object, p)).and_then(Value::as_str) {
        status["selector"] = json!(selector);
    }
    Some(json!({
        "apiVersion": "autoscaling/v1",
        "kind": "Scale",
        "metadata": meta,
        "spec": {"replicas": int(&scale.spec_replicas)},
        "status": status,
    }))
}

/// Sets a custom resource's replicas at its CRD's `specReplicasPath` (a scale write).
pub(crate) fn set_replicas(schema: Option<&CustomSchema>, object: &mut Value, replicas: i64) -> bool {
    let Some(scale) = schema.and_then(|s| s.0.scale.as_ref()) else { return false };
    let keys = dotted(&scale.spec_replicas);
    let mut v = object;
    for k in &keys[..keys.len().saturating_sub(1)] {
        if !v.get(*k).is_some_and(Value::is_object) {
            v[*k] = json!({});
        }
        v = &mut v[*k];
    }
    if let Some(last) = keys.last() {
        v[*last] = json!(replicas);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_resources_need_api_version_and_kind() {
        let s = Props::parse(&json!({"type": "object", "properties": {"template": {"type": "object",
            "x-kubernetes-embedded-resource": true, "x-kubernetes-preserve-unknown-fields": true}}}));
        let mut causes = Vec::new();
        embedded(
            s.property("template").unwrap_or(&s),
            &json!({"apiVersion": "a/b/c", "kind": "Bad_Kind"}),
            "template",
            &mut causes,
        );
        embedded(s.property("template").unwrap_or(&s), &json!({}), "template", &mut causes);
        let shown: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(
            shown,
            [
                "template.apiVersion: Invalid value: \"a/b/c\": unexpected GroupVersion string: a/b/c",
                "template.kind: Invalid value: \"Bad_Kind\": may have mixed case, but should otherwise match: a DNS-1035 \
                 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, \
                 and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is \
                 '[a-z]([-a-z0-9]*[a-z0-9])?')",
                "template.apiVersion: Required value",
                "template.kind: Required value",
            ]
        );
    }

    #[test]
    fn list_types() {
        let s = Props::parse(&json!({"type": "object", "properties": {
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}}}}}}));
        let mut causes = Vec::new();
        lists(
            &s,
            &json!({"tags": ["a", "b", "a", "a"], "ports": [{"name": "x"}, {"name": "x", "p": 1}]}),
            "",
            &mut causes,
        );
        let shown: Vec<String> = causes.iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(shown, ["ports[1]: Duplicate value: {\"name\":\"x\"}", "tags[2]: Duplicate value: \"a\""]);
    }
}
