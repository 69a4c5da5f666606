//! Create and update validation of built-in kinds, mirroring kube-apiserver's
//! (k8s.io/kubernetes pkg/apis/*/validation, apimachinery's ObjectMeta rules and the registry
//! strategies' update rules) for the fields controllers and kubectl depend on.
//!
//! Field paths, cause types and messages follow upstream's `field.Error` so clients that match on
//! them (kubectl, controller-runtime, kube-rs error handling, tests written against a real
//! cluster) behave the same. Values that upstream prints with Go's `%#v` are rendered the same way
//! where it is cheap (label maps and selectors); elsewhere they are shown as compact JSON.
//!
//! Input is untrusted JSON: a field of the wrong type yields a FieldValueInvalid cause ("must be of
//! type ...") where upstream's decoder would have refused the request, and nothing here panics.

use serde_json::{Map, Value};
use wasmcm_core::validation::{
    dns1035_label, dns1123_label, dns1123_subdomain, label_value, max_len, qualified_name, regex_error,
};

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cause {
    /// metav1.CauseType string as the real server uses: "FieldValueRequired", "FieldValueInvalid",
    /// "FieldValueNotSupported", "FieldValueForbidden", "FieldValueDuplicate", "FieldValueTooLong" (and
    /// "FieldValueNotFound" for a volume mount naming no volume).
    pub reason: &'static str,
    /// JSON-ish field path as upstream prints it, e.g. "spec.template.metadata.labels", "spec.containers[0].image",
    /// "metadata.name".
    pub field: String,
    /// Upstream's message, e.g. "Required value",
    /// "Invalid value: \"Foo_Bar\": a lowercase RFC 1123 subdomain must consist of ...".
    pub message: String,
}

/// Validates `object` (already defaulted) of apiVersion/kind on create (`old` = None) or update
/// (`old` = Some(stored)). Returns every problem found; empty = valid.
pub fn validate(api_version: &str, kind: &str, object: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut v = V::default();
    if !object.is_object() {
        v.wrong_type("", object, "object");
        return v.causes;
    }
    // A stored object of the wrong shape cannot be compared against; validate as a create.
    let old = old.filter(|o| o.is_object());
    match (api_version, kind) {
        ("apps/v1", "Deployment") => workload(&mut v, object, old, true),
        ("apps/v1", "ReplicaSet") => workload(&mut v, object, old, false),
        ("v1", "Pod") => pod(&mut v, object, old),
        ("v1", "Namespace") => namespace(&mut v, object, old),
        ("v1", "Node") => node(&mut v, object, old),
        ("v1", "Event") => core_event(&mut v, object),
        ("events.k8s.io/v1", "Event") => events_event(&mut v, object, old),
        ("v1", "ConfigMap") => config_map(&mut v, object, old),
        ("v1", "Secret") => secret(&mut v, object, old),
        ("v1", "ServiceAccount") => meta(&mut v, object, old, Scope::Namespaced, NameRule::Subdomain, true),
        ("coordination.k8s.io/v1", "Lease") => lease(&mut v, object, old),
        ("v1", "Service") => service(&mut v, object, old),
        ("policy/v1", "PodDisruptionBudget") => pod_disruption_budget(&mut v, object, old),
        ("rbac.authorization.k8s.io/v1", "Role") => role(&mut v, object, old, true),
        ("rbac.authorization.k8s.io/v1", "ClusterRole") => role(&mut v, object, old, false),
        ("rbac.authorization.k8s.io/v1", "RoleBinding") => role_binding(&mut v, object, old, true),
        ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding") => role_binding(&mut v, object, old, false),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition") => crd(&mut v, object, old),
        // Custom resources and anything else: what the generic registry checks.
        _ => meta(&mut v, object, old, Scope::Either, NameRule::Subdomain, false),
    }
    v.causes
}

// ---------------------------------------------------------------------------------------------
// Causes and typed access to untrusted JSON.

const REQUIRED: &str = "FieldValueRequired";
const INVALID: &str = "FieldValueInvalid";
const NOT_SUPPORTED: &str = "FieldValueNotSupported";
const FORBIDDEN: &str = "FieldValueForbidden";
const DUPLICATE: &str = "FieldValueDuplicate";
const TOO_LONG: &str = "FieldValueTooLong";
const NOT_FOUND: &str = "FieldValueNotFound";

type Obj = Map<String, Value>;

/// The cause collector; its getters report wrong types so callers only handle the happy path.
#[derive(Default)]
struct V {
    causes: Vec<Cause>,
}

impl V {
    fn add(&mut self, reason: &'static str, field: &str, message: String) {
        self.causes.push(Cause { reason, field: field.to_owned(), message });
    }

    fn required(&mut self, field: &str, detail: &str) {
        self.add(REQUIRED, field, with_detail("Required value".into(), detail));
    }

    /// `shown` is the bad value already rendered the way upstream prints it.
    fn invalid(&mut self, field: &str, shown: &str, detail: &str) {
        self.add(INVALID, field, with_detail(format!("Invalid value: {shown}"), detail));
    }

    fn unsupported(&mut self, field: &str, shown: &str, supported: &[&str]) {
        let list = supported.iter().map(|s| q(s)).collect::<Vec<_>>().join(", ");
        self.add(NOT_SUPPORTED, field, format!("Unsupported value: {shown}: supported values: {list}"));
    }

    fn forbidden(&mut self, field: &str, detail: &str) {
        self.add(FORBIDDEN, field, with_detail("Forbidden".into(), detail));
    }

    fn duplicate(&mut self, field: &str, shown: &str) {
        self.add(DUPLICATE, field, format!("Duplicate value: {shown}"));
    }

    fn too_long(&mut self, field: &str, max: usize) {
        self.add(TOO_LONG, field, format!("Too long: must have at most {max} bytes"));
    }

    fn not_found(&mut self, field: &str, shown: &str) {
        self.add(NOT_FOUND, field, format!("Not found: {shown}"));
    }

    fn wrong_type(&mut self, field: &str, value: &Value, want: &str) {
        self.invalid(field, &json_short(value), &format!("must be of type {want}"));
    }

    fn nonnegative(&mut self, field: &str, n: Option<i64>) {
        if let Some(n) = n.filter(|n| *n < 0) {
            self.invalid(field, &n.to_string(), "must be greater than or equal to 0");
        }
    }

    fn each(&mut self, field: &str, shown: &str, messages: Vec<String>) {
        for m in messages {
            self.invalid(field, shown, &m);
        }
    }

    fn obj<'a>(&mut self, v: Option<&'a Value>, field: &str) -> Option<&'a Obj> {
        match v? {
            Value::Null => None,
            Value::Object(m) => Some(m),
            other => {
                self.wrong_type(field, other, "object");
                None
            }
        }
    }

    fn arr<'a>(&mut self, v: Option<&'a Value>, field: &str) -> &'a [Value] {
        match v {
            Some(Value::Array(a)) => a,
            Some(other) if !other.is_null() => {
                self.wrong_type(field, other, "array");
                &[]
            }
            _ => &[],
        }
    }

    /// Items of an object array, reporting the ones that are not objects.
    fn objs<'a>(&mut self, v: Option<&'a Value>, field: &str) -> Vec<(String, &'a Obj)> {
        let mut out = Vec::new();
        for (i, item) in self.arr(v, field).iter().enumerate() {
            let path = idx(field, i);
            if let Some(m) = self.obj(Some(item), &path) {
                out.push((path, m));
            } else if item.is_null() {
                self.wrong_type(&path, item, "object");
            }
        }
        out
    }

    /// A string field; "" when absent, null or of the wrong type (which is reported).
    fn string<'a>(&mut self, v: Option<&'a Value>, field: &str) -> &'a str {
        match v {
            Some(Value::String(s)) => s,
            Some(other) if !other.is_null() => {
                self.wrong_type(field, other, "string");
                ""
            }
            _ => "",
        }
    }

    fn int(&mut self, v: Option<&Value>, field: &str) -> Option<i64> {
        match v? {
            Value::Null => None,
            Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.as_i64().unwrap_or(i64::MAX)),
            other => {
                self.wrong_type(field, other, "integer");
                None
            }
        }
    }

    fn boolean(&mut self, v: Option<&Value>, field: &str) -> Option<bool> {
        match v? {
            Value::Null => None,
            Value::Bool(b) => Some(*b),
            other => {
                self.wrong_type(field, other, "boolean");
                None
            }
        }
    }

    /// A map of strings (labels, annotations, data); None when absent.
    fn str_map<'a>(&mut self, v: Option<&'a Value>, field: &str) -> Option<Vec<(&'a str, &'a str)>> {
        let m = self.obj(v, field)?;
        let mut out = Vec::with_capacity(m.len());
        for (k, val) in m {
            match val {
                Value::String(s) => out.push((k.as_str(), s.as_str())),
                Value::Null => out.push((k.as_str(), "")),
                other => self.wrong_type(&key(field, k), other, "string"),
            }
        }
        Some(out)
    }

    fn str_list<'a>(&mut self, v: Option<&'a Value>, field: &str) -> Vec<&'a str> {
        let mut out = Vec::new();
        for (i, item) in self.arr(v, field).iter().enumerate() {
            match item {
                Value::String(s) => out.push(s.as_str()),
                Value::Null => {}
                other => self.wrong_type(&idx(field, i), other, "string"),
            }
        }
        out
    }

    /// Runs `f` and tells whether it reported anything.
    fn reported(&mut self, f: impl FnOnce(&mut V)) -> bool {
        let before = self.causes.len();
        f(self);
        self.causes.len() > before
    }
}

fn with_detail(head: String, detail: &str) -> String {
    if detail.is_empty() { head } else { format!("{head}: {detail}") }
}

fn child(base: &str, name: &str) -> String {
    if base.is_empty() { name.to_owned() } else { format!("{base}.{name}") }
}

fn idx(base: &str, i: usize) -> String {
    format!("{base}[{i}]")
}

fn key(base: &str, k: &str) -> String {
    format!("{base}[{k}]")
}

/// Go's `%q`, close enough for the strings that reach messages.
fn q(s: &str) -> String {
    format!("{s:?}")
}

/// How upstream prints a scalar bad value; compact JSON for anything else.
fn show(v: Option<&Value>) -> String {
    match v {
        None | Some(Value::Null) => "null".into(),
        Some(Value::String(s)) => q(s),
        Some(other) => json_short(other),
    }
}

fn json_short(v: &Value) -> String {
    let s = v.to_string();
    if s.len() <= 200 {
        return s;
    }
    let cut = (0..=200).rev().find(|i| s.is_char_boundary(*i)).unwrap_or(0);
    format!("{}...", &s[..cut])
}

/// Go's `%#v` of a `[]string`.
fn go_strings(items: &[&str]) -> String {
    format!("[]string{{{}}}", items.iter().map(|s| q(s)).collect::<Vec<_>>().join(", "))
}

/// Go's `%#v` of a `map[string]string`: keys sorted, nil when absent.
fn go_map(pairs: Option<&[(&str, &str)]>) -> String {
    let Some(pairs) = pairs else { return "map[string]string(nil)".into() };
    let mut pairs = pairs.to_vec();
    pairs.sort();
    let body = pairs.iter().map(|(k, v)| format!("{}:{}", q(k), q(v))).collect::<Vec<_>>().join(", ");
    format!("map[string]string{{{body}}}")
}

/// Go's `%#v` of a `metav1.LabelSelector`, as kubectl users see it in "field is immutable".
fn go_selector(sel: Option<&Value>) -> String {
    let labels: Option<Vec<(&str, &str)>> = sel
        .and_then(|s| s.get("matchLabels"))
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.as_str(), v.as_str().unwrap_or(""))).collect());
    let exprs = sel.and_then(|s| s.get("matchExpressions")).and_then(Value::as_array);
    let exprs = match exprs {
        None => "[]v1.LabelSelectorRequirement(nil)".to_owned(),
        Some(list) => {
            let items = list.iter().map(|e| {
                let text = |k: &str| e.get(k).and_then(Value::as_str).unwrap_or("");
                let values = match e.get("values").and_then(Value::as_array) {
                    None => "[]string(nil)".to_owned(),
                    Some(vals) => go_strings(&vals.iter().filter_map(Value::as_str).collect::<Vec<_>>()),
                };
                format!(
                    "v1.LabelSelectorRequirement{{Key:{}, Operator:{}, Values:{values}}}",
                    q(text("key")),
                    q(text("operator"))
                )
            });
            format!("[]v1.LabelSelectorRequirement{{{}}}", items.collect::<Vec<_>>().join(", "))
        }
    };
    format!("v1.LabelSelector{{MatchLabels:{}, MatchExpressions:{exprs}}}", go_map(labels.as_deref()))
}

/// Go's semantic equality on JSON: absent, null, "", false, 0, [] and {} are alike, since the
/// typed objects upstream compares cannot tell them apart either.
fn semantic_eq(a: Option<&Value>, b: Option<&Value>) -> bool {
    if deep_empty(a) && deep_empty(b) {
        return true;
    }
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            x.keys().chain(y.keys()).all(|k| semantic_eq(x.get(k), y.get(k)))
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| semantic_eq(Some(p), Some(q)))
        }
        (Some(Value::Number(x)), Some(Value::Number(y))) => x == y || x.as_f64() == y.as_f64(),
        (a, b) => a == b,
    }
}

fn deep_empty(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Bool(b)) => !b,
        Some(Value::Number(n)) => n.as_f64() == Some(0.0),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.values().all(|v| deep_empty(Some(v))),
    }
}

/// Where two values differ, for the pod-update message (upstream prints a cmp.Diff there).
fn diff(a: Option<&Value>, b: Option<&Value>, path: &str, out: &mut Vec<String>) {
    if out.len() >= 10 || semantic_eq(a, b) {
        return;
    }
    match (a, b) {
        (Some(Value::Object(x)), Some(Value::Object(y))) => {
            let mut keys: Vec<&String> = x.keys().chain(y.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                diff(x.get(k), y.get(k), &child(path, k), out);
            }
        }
        (Some(Value::Array(x)), Some(Value::Array(y))) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                diff(Some(p), Some(q), &idx(path, i), out);
            }
        }
        _ => out.push(format!("  {path}: {} -> {}", show(a), show(b))),
    }
}

fn text<'a>(v: Option<&'a Value>, pointer: &str) -> &'a str {
    v.and_then(|v| v.pointer(pointer)).and_then(Value::as_str).unwrap_or("")
}

const QUANTITY_MSG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const TOTAL_ANNOTATION_SIZE: usize = 256 * 1024;
const MAX_SECRET_SIZE: usize = 1024 * 1024;
const MAX_INT32: i64 = i32::MAX as i64;

fn config_key(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 253 {
        errs.push(max_len(253));
    }
    if s.is_empty() || !s.bytes().all(|c| c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')) {
        let msg = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'";
        errs.push(regex_error(msg, "[-._a-zA-Z0-9]+", &["key.name", "KEY_NAME", "key-name"]));
    }
    match s {
        "." => errs.push("must not be '.'".into()),
        ".." => errs.push("must not be '..'".into()),
        _ if s.starts_with("..") => errs.push("must not start with '..'".into()),
        _ => {}
    }
    errs
}

fn path_segment(s: &str, prefix: bool) -> Vec<String> {
    if !prefix && (s == "." || s == "..") {
        return vec![format!("may not be '{s}'")];
    }
    ["/", "%"].iter().filter(|c| s.contains(**c)).map(|c| format!("may not contain '{c}'")).collect()
}

fn port_name(s: &str) -> Vec<String> {
    let mut errs = Vec::new();
    if s.len() > 15 {
        errs.push(max_len(15));
    }
    if !s.bytes().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == b'-') {
        errs.push("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)".into());
    }
    if !s.bytes().any(|c| c.is_ascii_lowercase()) {
        errs.push("must contain at least one letter (a-z)".into());
    }
    if s.contains("--") {
        errs.push("must not contain consecutive hyphens".into());
    }
    if s.starts_with('-') || s.ends_with('-') {
        errs.push("must not begin or end with a hyphen".into());
    }
    errs
}

fn port_number(v: &mut V, field: &str, n: i64) {
    if !(1..=65535).contains(&n) {
        v.invalid(field, &n.to_string(), "must be between 1 and 65535, inclusive");
    }
}

/// A required enumerated string, as upstream's switch statements check them.
fn one_of(v: &mut V, field: &str, value: &str, supported: &[&str]) {
    if value.is_empty() {
        v.required(field, "");
    } else if !supported.contains(&value) {
        v.unsupported(field, &q(value), supported);
    }
}

// ---------------------------------------------------------------------------------------------
// ObjectMeta (apimachinery/pkg/api/validation/objectmeta.go and the core wrappers).

#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Namespaced,
    Cluster,
    /// Custom resources: the scope lives in the CRD, which this module does not see.
    Either,
}

#[derive(Clone, Copy)]
enum NameRule<'a> {
    Subdomain,
    Label,
    /// Services: a DNS-1035 label (starts with a letter).
    Dns1035,
    PathSegment,
    /// CRDs: a subdomain that must also equal `<plural>.<group>`.
    Crd(&'a str),
}

fn name_errors(rule: NameRule, name: &str, prefix: bool) -> Vec<String> {
    // generateName is checked as if completed; upstream drops the trailing dash and the
    // character before it, then appends an 'a'.
    let masked;
    let name = if prefix && name.len() > 1 && name.ends_with('-') {
        masked = format!("{}a", name.get(..name.len() - 2).unwrap_or(name));
        masked.as_str()
    } else {
        name
    };
    match rule {
        NameRule::Subdomain => dns1123_subdomain(name),
        NameRule::Label => dns1123_label(name),
        NameRule::Dns1035 => dns1035_label(name),
        NameRule::PathSegment => path_segment(name, prefix),
        NameRule::Crd(required) => {
            let mut errs = dns1123_subdomain(name);
            if name != required {
                errs.push("must be spec.names.plural+\".\"+spec.group".into());
            }
            errs
        }
    }
}

/// Metadata checks for create (`old` None) or update, shared by every kind but core Events.
/// `kube_finalizers` adds the core API's rule that unprefixed finalizers be standard ones.
fn meta(v: &mut V, obj: &Value, old: Option<&Value>, scope: Scope, rule: NameRule, kube_finalizers: bool) {
    let empty = Map::new();
    let m = v.obj(obj.get("metadata"), "metadata").unwrap_or(&empty);
    match old {
        None => meta_create(v, m, scope, rule),
        Some(old) => meta_update(v, m, old.get("metadata").and_then(Value::as_object).unwrap_or(&empty)),
    }
    meta_common(v, m, kube_finalizers);
}

fn meta_name(v: &mut V, m: &Obj, rule: NameRule) {
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

fn kube_finalizer(v: &mut V, f: &str, field: &str) {
    if !f.contains('/') && !["kubernetes", "orphan", "foregroundDeletion"].contains(&f) {
        v.invalid(field, &q(f), "name is neither a standard finalizer name nor is it fully qualified");
    }
}

fn labels(v: &mut V, val: Option<&Value>, field: &str) {
    for (k, value) in v.str_map(val, field).unwrap_or_default() {
        v.each(field, &q(k), qualified_name(k));
        v.each(field, &q(value), label_value(value));
    }
}

fn annotations(v: &mut V, val: Option<&Value>, field: &str) {
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

// ---------------------------------------------------------------------------------------------
// Label selectors (apimachinery/pkg/apis/meta/v1/validation and labels.Selector semantics).

struct Requirement<'a> {
    key: &'a str,
    op: &'a str,
    values: Vec<&'a str>,
}

/// Validates a selector; returns its requirements when it converts to a usable labels.Selector.
fn selector<'a>(v: &mut V, sel: &'a Obj, field: &str) -> Option<Vec<Requirement<'a>>> {
    let mut reqs = Vec::new();
    let broken = v.reported(|v| {
        let labels_path = child(field, "matchLabels");
        for (k, value) in v.str_map(sel.get("matchLabels"), &labels_path).unwrap_or_default() {
            v.each(&labels_path, &q(k), qualified_name(k));
            v.each(&labels_path, &q(value), label_value(value));
            reqs.push(Requirement { key: k, op: "In", values: vec![value] });
        }
        for (path, e) in v.objs(sel.get("matchExpressions"), &child(field, "matchExpressions")) {
            let op = v.string(e.get("operator"), &child(&path, "operator"));
            let k = v.string(e.get("key"), &child(&path, "key"));
            let values = v.str_list(e.get("values"), &child(&path, "values"));
            match op {
                "In" | "NotIn" if values.is_empty() => {
                    v.required(&child(&path, "values"), "must be specified when `operator` is 'In' or 'NotIn'")
                }
                "Exists" | "DoesNotExist" if !values.is_empty() => v.forbidden(
                    &child(&path, "values"),
                    "may not be specified when `operator` is 'Exists' or 'DoesNotExist'",
                ),
                "In" | "NotIn" | "Exists" | "DoesNotExist" => {}
                _ => v.invalid(&child(&path, "operator"), &q(op), "not a valid selector operator"),
            }
            v.each(&child(&path, "key"), &q(k), qualified_name(k));
            for (i, value) in values.iter().enumerate() {
                v.each(&idx(&child(&path, "values"), i), &q(value), label_value(value));
            }
            reqs.push(Requirement { key: k, op, values });
        }
    });
    (!broken).then_some(reqs)
}

fn matches(reqs: &[Requirement], labels: &[(&str, &str)]) -> bool {
    reqs.iter().all(|r| {
        let value = labels.iter().find(|(k, _)| *k == r.key).map(|(_, v)| *v);
        match r.op {
            "In" => value.is_some_and(|v| r.values.contains(&v)),
            "NotIn" => value.is_none_or(|v| !r.values.contains(&v)),
            "Exists" => value.is_some(),
            "DoesNotExist" => value.is_none(),
            _ => false,
        }
    })
}

// ---------------------------------------------------------------------------------------------
// Deployments and ReplicaSets (pkg/apis/apps/validation, pkg/registry/apps/*/strategy.go).

fn workload(v: &mut V, obj: &Value, old: Option<&Value>, deployment: bool) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
    let empty = Map::new();
    let spec = v.obj(obj.get("spec"), "spec").unwrap_or(&empty);

    let replicas = v.int(spec.get("replicas"), "spec.replicas");
    v.nonnegative("spec.replicas", replicas);
    let min_ready = v.int(spec.get("minReadySeconds"), "spec.minReadySeconds");
    if !deployment {
        v.nonnegative("spec.minReadySeconds", min_ready);
    }

    let sel_value = spec.get("selector").filter(|s| !s.is_null());
    let sel = v.obj(sel_value, "spec.selector");
    // A missing selector converts to labels.Nothing() (matches no template), an empty one to
    // labels.Everything() (not checked against the template), as upstream.
    let reqs = match sel {
        None => {
            if sel_value.is_none() {
                v.required("spec.selector", "");
            }
            Some(vec![Requirement { key: "", op: "nothing", values: vec![] }])
        }
        Some(s) => {
            let reqs = selector(v, s, "spec.selector");
            if deep_empty(s.get("matchLabels")) && deep_empty(s.get("matchExpressions")) {
                v.invalid("spec.selector", &go_selector(sel_value), "empty selector is invalid for deployment");
            }
            if reqs.is_none() {
                v.invalid("spec.selector", &go_selector(sel_value), "invalid label selector");
            }
            reqs
        }
    };

    let tmpl = v.obj(spec.get("template"), "spec.template").unwrap_or(&empty);
    let tmeta = v.obj(tmpl.get("metadata"), "spec.template.metadata").unwrap_or(&empty);
    if let Some(reqs) = reqs.filter(|r| !r.is_empty()) {
        let template_labels = tmeta
            .get("labels")
            .and_then(Value::as_object)
            .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v))).collect::<Vec<_>>());
        if !matches(&reqs, template_labels.as_deref().unwrap_or_default()) {
            let shown = go_map(template_labels.as_deref());
            v.invalid("spec.template.metadata.labels", &shown, "`selector` does not match template `labels`");
        }
    }
    // Upstream's template path quirk: labels and annotations are reported without "metadata".
    labels(v, tmeta.get("labels"), "spec.template.labels");
    annotations(v, tmeta.get("annotations"), "spec.template.annotations");
    let pod_spec_value = tmpl.get("spec");
    pod_spec(v, pod_spec_value, "spec.template.spec");
    let pspec = pod_spec_value.and_then(Value::as_object).unwrap_or(&empty);
    if !deep_empty(pspec.get("ephemeralContainers")) {
        v.forbidden("spec.template.spec.ephemeralContainers", "ephemeral containers not allowed in pod template");
    }
    let restart = pspec.get("restartPolicy").and_then(Value::as_str).unwrap_or("");
    if restart != "Always" {
        v.unsupported("spec.template.spec.restartPolicy", &q(restart), &["Always"]);
    }
    if pspec.get("activeDeadlineSeconds").is_some_and(|a| !a.is_null()) {
        v.forbidden("spec.template.spec.activeDeadlineSeconds", "activeDeadlineSeconds in ReplicaSet is not Supported");
    }

    if deployment {
        strategy(v, spec);
        v.nonnegative("spec.minReadySeconds", min_ready);
        let history = v.int(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit");
        v.nonnegative("spec.revisionHistoryLimit", history);
        let deadline = v.int(spec.get("progressDeadlineSeconds"), "spec.progressDeadlineSeconds");
        v.nonnegative("spec.progressDeadlineSeconds", deadline);
        if let Some(d) = deadline.filter(|d| *d <= min_ready.unwrap_or(0)) {
            v.invalid("spec.progressDeadlineSeconds", &d.to_string(), "must be greater than minReadySeconds");
        }
    }

    // apps/v1 made the selector immutable (the registry strategies check it).
    if let Some(old) = old {
        let old_sel = old.pointer("/spec/selector");
        if !semantic_eq(sel_value, old_sel) {
            v.invalid("spec.selector", &go_selector(sel_value), "field is immutable");
        }
    }
}

enum IntOrStr<'a> {
    Int(i64),
    Str(&'a str),
}

impl IntOrStr<'_> {
    /// How `intstr.IntOrString.String()` prints it.
    fn shown(&self) -> String {
        match self {
            IntOrStr::Int(i) => i.to_string(),
            IntOrStr::Str(s) => (*s).to_owned(),
        }
    }

    fn percent(&self) -> Option<i64> {
        let IntOrStr::Str(s) = self else { return None };
        let digits = s.strip_suffix('%')?;
        (!digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())).then(|| digits.parse().unwrap_or(i64::MAX))
    }

    /// `getIntOrPercentValue`: percent, else the int (a non-numeric string counts as 0).
    fn value(&self) -> i64 {
        match self {
            IntOrStr::Int(i) => *i,
            IntOrStr::Str(s) => self.percent().unwrap_or_else(|| s.parse().unwrap_or(0)),
        }
    }
}

fn int_or_percent<'a>(v: &mut V, val: Option<&'a Value>, field: &str) -> Option<IntOrStr<'a>> {
    let parsed = match val {
        None | Some(Value::Null) => IntOrStr::Int(0),
        Some(Value::Number(n)) if n.is_i64() => IntOrStr::Int(n.as_i64().unwrap_or(0)),
        Some(Value::String(s)) => IntOrStr::Str(s),
        Some(other) => {
            v.invalid(field, &json_short(other), "must be an integer or percentage (e.g '5%')");
            return None;
        }
    };
    match parsed {
        IntOrStr::Int(i) => v.nonnegative(field, Some(i)),
        IntOrStr::Str(_) if parsed.percent().is_none() => {
            let msg = "a valid percent string must be a numeric string followed by an ending '%'";
            v.invalid(field, &parsed.shown(), &regex_error(msg, "[0-9]+%", &["1%", "93%"]));
        }
        IntOrStr::Str(_) => {}
    }
    Some(parsed)
}

fn strategy(v: &mut V, spec: &Obj) {
    let empty = Map::new();
    let strategy = v.obj(spec.get("strategy"), "spec.strategy").unwrap_or(&empty);
    let kind = v.string(strategy.get("type"), "spec.strategy.type");
    let rolling = strategy.get("rollingUpdate").filter(|r| !r.is_null());
    match kind {
        "Recreate" if rolling.is_some() => {
            v.forbidden("spec.strategy.rollingUpdate", "may not be specified when strategy `type` is 'Recreate'")
        }
        "Recreate" => {}
        "RollingUpdate" => {
            let Some(r) = v.obj(rolling, "spec.strategy.rollingUpdate") else {
                if rolling.is_none() {
                    v.required("spec.strategy.rollingUpdate", "this should be defaulted and never be nil");
                }
                return;
            };
            let unavailable_path = "spec.strategy.rollingUpdate.maxUnavailable";
            let unavailable = int_or_percent(v, r.get("maxUnavailable"), unavailable_path);
            let surge = int_or_percent(v, r.get("maxSurge"), "spec.strategy.rollingUpdate.maxSurge");
            if let (Some(u), Some(s)) = (&unavailable, &surge)
                && u.value() == 0
                && s.value() == 0
            {
                v.invalid(unavailable_path, &u.shown(), "may not be 0 when `maxSurge` is 0");
            }
            if let Some(u) = unavailable.filter(|u| u.percent().is_some_and(|p| p > 100)) {
                v.invalid(unavailable_path, &u.shown(), "must not be greater than 100%");
            }
        }
        other => v.unsupported("spec.strategy", &q(other), &["Recreate", "RollingUpdate"]),
    }
}

// ---------------------------------------------------------------------------------------------
// Pods (pkg/apis/core/validation: ValidatePodSpec, ValidatePodCreate, ValidatePodUpdate).

const POD_UPDATABLE: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,\
    `spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),\
    `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

fn pod(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
    pod_spec(v, obj.get("spec"), "spec");
    match old {
        None => {
            if !deep_empty(obj.pointer("/spec/ephemeralContainers")) {
                v.forbidden("spec.ephemeralContainers", "cannot be set on create");
            }
        }
        Some(old) => pod_update(v, obj, old),
    }
}

fn pod_spec(v: &mut V, spec: Option<&Value>, path: &str) {
    let empty = Map::new();
    let spec = v.obj(spec, path).unwrap_or(&empty);
    let at = |name: &str| child(path, name);

    let volumes = volumes(v, spec.get("volumes"), &at("volumes"));

    let mut names: Vec<&str> = Vec::new();
    for (list, init) in [("containers", false), ("initContainers", true)] {
        let list_path = at(list);
        let items = v.objs(spec.get(list), &list_path);
        if !init && items.is_empty() {
            v.required(&list_path, "");
        }
        for (cpath, c) in items {
            let name = container(v, c, &cpath, &volumes, init);
            if names.contains(&name) {
                v.duplicate(&child(&cpath, "name"), &q(name));
            } else if !name.is_empty() {
                names.push(name);
            }
        }
    }

    let restart = v.string(spec.get("restartPolicy"), &at("restartPolicy"));
    one_of(v, &at("restartPolicy"), restart, &["Always", "OnFailure", "Never"]);
    let dns = v.string(spec.get("dnsPolicy"), &at("dnsPolicy"));
    one_of(v, &at("dnsPolicy"), dns, &["ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"]);
    if dns == "None" && spec.get("dnsConfig").is_none_or(Value::is_null) {
        v.required(&at("dnsConfig"), "must provide `dnsConfig` when `dnsPolicy` is None");
    }

    for (field, rule) in [
        ("serviceAccountName", NameRule::Subdomain),
        ("nodeName", NameRule::Subdomain),
        ("hostname", NameRule::Label),
        ("subdomain", NameRule::Label),
    ] {
        let value = v.string(spec.get(field), &at(field));
        if !value.is_empty() {
            v.each(&at(field), &q(value), name_errors(rule, value, false));
        }
    }
    labels(v, spec.get("nodeSelector"), &at("nodeSelector"));
    tolerations(v, spec.get("tolerations"), &at("tolerations"));

    if let Some(a) = v.int(spec.get("activeDeadlineSeconds"), &at("activeDeadlineSeconds"))
        && !(1..=MAX_INT32).contains(&a)
    {
        v.invalid(&at("activeDeadlineSeconds"), &a.to_string(), "must be between 1 and 2147483647, inclusive");
    }
    let grace = v.int(spec.get("terminationGracePeriodSeconds"), &at("terminationGracePeriodSeconds"));
    v.nonnegative(&at("terminationGracePeriodSeconds"), grace);
}

fn volumes<'a>(v: &mut V, list: Option<&'a Value>, path: &str) -> Vec<&'a str> {
    let mut names: Vec<&str> = Vec::new();
    for (vpath, vol) in v.objs(list, path) {
        let sources: Vec<&String> =
            vol.iter().filter(|(k, val)| *k != "name" && !val.is_null()).map(|(k, _)| k).collect();
        match sources.as_slice() {
            [] => v.required(&vpath, "must specify a volume type"),
            [_] => {}
            [_, extra @ ..] => {
                for s in extra {
                    v.forbidden(&child(&vpath, s), "may not specify more than 1 volume type");
                }
            }
        }
        let name_path = child(&vpath, "name");
        let name = v.string(vol.get("name"), &name_path);
        if name.is_empty() {
            v.required(&name_path, "");
        } else {
            v.each(&name_path, &q(name), dns1123_label(name));
        }
        if names.contains(&name) {
            v.duplicate(&name_path, &q(name));
        } else {
            names.push(name);
        }
    }
    names
}

/// Validates one container and returns its name, for the uniqueness check across lists.
fn container<'a>(v: &mut V, c: &'a Obj, path: &str, volumes: &[&str], init: bool) -> &'a str {
    let at = |name: &str| child(path, name);
    let name = v.string(c.get("name"), &at("name"));
    if name.is_empty() {
        v.required(&at("name"), "");
    } else {
        v.each(&at("name"), &q(name), dns1123_label(name));
    }
    if v.string(c.get("image"), &at("image")).is_empty() {
        v.required(&at("image"), "");
    }
    let pull = v.string(c.get("imagePullPolicy"), &at("imagePullPolicy"));
    one_of(v, &at("imagePullPolicy"), pull, &["Always", "IfNotPresent", "Never"]);
    let message_policy = v.string(c.get("terminationMessagePolicy"), &at("terminationMessagePolicy"));
    one_of(v, &at("terminationMessagePolicy"), message_policy, &["File", "FallbackToLogsOnError"]);
    let restart = v.string(c.get("restartPolicy"), &at("restartPolicy"));
    if !restart.is_empty() {
        if !init {
            v.forbidden(&at("restartPolicy"), "may not be set for non-init containers");
        } else if restart != "Always" {
            v.unsupported(&at("restartPolicy"), &q(restart), &["Always"]);
        }
    }

    let mut port_names: Vec<&str> = Vec::new();
    for (ppath, p) in v.objs(c.get("ports"), &at("ports")) {
        let pname = v.string(p.get("name"), &child(&ppath, "name"));
        if !pname.is_empty() {
            let errs = port_name(pname);
            if !errs.is_empty() {
                v.each(&child(&ppath, "name"), &q(pname), errs);
            } else if port_names.contains(&pname) {
                v.duplicate(&child(&ppath, "name"), &q(pname));
            } else {
                port_names.push(pname);
            }
        }
        match v.int(p.get("containerPort"), &child(&ppath, "containerPort")) {
            None | Some(0) => v.required(&child(&ppath, "containerPort"), ""),
            Some(n) => port_number(v, &child(&ppath, "containerPort"), n),
        }
        if let Some(n) = v.int(p.get("hostPort"), &child(&ppath, "hostPort")).filter(|n| *n != 0) {
            port_number(v, &child(&ppath, "hostPort"), n);
        }
        let protocol = v.string(p.get("protocol"), &child(&ppath, "protocol"));
        one_of(v, &child(&ppath, "protocol"), protocol, &["SCTP", "TCP", "UDP"]);
    }

    env(v, c.get("env"), &at("env"));

    let mut mount_paths: Vec<&str> = Vec::new();
    for (mpath, m) in v.objs(c.get("volumeMounts"), &at("volumeMounts")) {
        let mname = v.string(m.get("name"), &child(&mpath, "name"));
        if mname.is_empty() {
            v.required(&child(&mpath, "name"), "");
        }
        if !volumes.contains(&mname) {
            v.not_found(&child(&mpath, "name"), &q(mname));
        }
        let mount_path = v.string(m.get("mountPath"), &child(&mpath, "mountPath"));
        if mount_path.is_empty() {
            v.required(&child(&mpath, "mountPath"), "");
        }
        if mount_paths.contains(&mount_path) {
            v.invalid(&child(&mpath, "mountPath"), &q(mount_path), "must be unique");
        }
        mount_paths.push(mount_path);
    }

    resources(v, c.get("resources"), &at("resources"));
    name
}

fn env(v: &mut V, list: Option<&Value>, path: &str) {
    for (epath, e) in v.objs(list, path) {
        let name_path = child(&epath, "name");
        let name = v.string(e.get("name"), &name_path);
        // RelaxedEnvironmentVariableValidation, on by default since 1.32.
        if name.is_empty() {
            v.required(&name_path, "");
            v.invalid(&name_path, &q(name), "environment variable name must be non-empty");
        } else if name.chars().any(|c| !(c.is_ascii_graphic() || c == ' ') || c == '=') {
            let msg =
                "a valid environment variable name must consist only of printable ASCII characters other than '='";
            v.invalid(&name_path, &q(name), msg);
        }
        let from_path = child(&epath, "valueFrom");
        let Some(from) = v.obj(e.get("valueFrom"), &from_path) else { continue };
        let sources = ["fieldRef", "resourceFieldRef", "configMapKeyRef", "secretKeyRef", "fileKeyRef"];
        let count = sources.iter().filter(|s| from.get(**s).is_some_and(|x| !x.is_null())).count();
        if count == 0 {
            let msg = "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`";
            v.invalid(&from_path, "\"\"", msg);
        } else if !v.string(e.get("value"), &child(&epath, "value")).is_empty() {
            v.invalid(&from_path, "\"\"", "may not be specified when `value` is not empty");
        } else if count > 1 {
            v.invalid(&from_path, "\"\"", "may not have more than one field specified at a time");
        }
        for selector in ["configMapKeyRef", "secretKeyRef"] {
            let spath = child(&from_path, selector);
            let Some(s) = v.obj(from.get(selector), &spath) else { continue };
            let sname = v.string(s.get("name"), &child(&spath, "name"));
            v.each(&child(&spath, "name"), &q(sname), dns1123_subdomain(sname));
            let skey = v.string(s.get("key"), &child(&spath, "key"));
            if skey.is_empty() {
                v.required(&child(&spath, "key"), "");
            } else {
                v.each(&child(&spath, "key"), &q(skey), config_key(skey));
            }
        }
        let fpath = child(&from_path, "fieldRef");
        if let Some(f) = v.obj(from.get("fieldRef"), &fpath)
            && v.string(f.get("fieldPath"), &child(&fpath, "fieldPath")).is_empty()
        {
            v.required(&child(&fpath, "fieldPath"), "");
        }
    }
}

fn resources(v: &mut V, r: Option<&Value>, path: &str) {
    let Some(r) = v.obj(r, path) else { return };
    let limits_path = child(path, "limits");
    let requests_path = child(path, "requests");
    let limits = quantities(v, r.get("limits"), &limits_path);
    let requests = quantities(v, r.get("requests"), &requests_path);
    for (name, raw, req) in &requests {
        // Only native, non-hugepage resources may be overcommitted (requests below limits).
        let native = !name.contains('/') || name.contains("kubernetes.io/");
        let overcommit = native && !name.starts_with("hugepages-");
        match limits.iter().find(|(n, _, _)| n == name) {
            Some((_, limit_raw, limit)) => {
                if !overcommit && req != limit {
                    v.invalid(&requests_path, &q(raw), &format!("must be equal to {name} limit of {limit_raw}"));
                } else if req > limit {
                    let detail = format!("must be less than or equal to {name} limit of {limit_raw}");
                    v.invalid(&requests_path, &q(raw), &detail);
                }
            }
            None if !overcommit => v.required(&limits_path, "Limit must be set for non overcommitable resources"),
            None => {}
        }
    }
}

/// A ResourceList's valid entries as (name, as written, value); bad ones are reported.
fn quantities<'a>(v: &mut V, list: Option<&'a Value>, path: &str) -> Vec<(&'a str, String, i128)> {
    let mut out = Vec::new();
    for (name, raw) in v.obj(list, path).into_iter().flatten() {
        let field = key(path, name);
        let text = match raw {
            Value::String(s) => s.clone(),
            Value::Number(n) => n.to_string(),
            other => {
                v.invalid(&field, &json_short(other), QUANTITY_MSG);
                continue;
            }
        };
        match wasmcm_core::quantity::nanos(&text) {
            None => v.invalid(&field, &q(&text), QUANTITY_MSG),
            Some(n) if n < 0 => v.invalid(&field, &q(&text), "must be greater than or equal to 0"),
            Some(n) => out.push((name.as_str(), text, n)),
        }
    }
    out
}

fn tolerations(v: &mut V, list: Option<&Value>, path: &str) {
    for (tpath, t) in v.objs(list, path) {
        let k = v.string(t.get("key"), &child(&tpath, "key"));
        let op = v.string(t.get("operator"), &child(&tpath, "operator"));
        let value = v.string(t.get("value"), &child(&tpath, "value"));
        let effect = v.string(t.get("effect"), &child(&tpath, "effect"));
        let seconds = v.int(t.get("tolerationSeconds"), &child(&tpath, "tolerationSeconds"));
        if !k.is_empty() {
            v.each(&child(&tpath, "key"), &q(k), qualified_name(k));
        } else if op != "Exists" {
            let msg = "operator must be Exists when `key` is empty, which means \"match all values and all keys\"";
            v.invalid(&child(&tpath, "operator"), &q(op), msg);
        }
        if seconds.is_some() && effect != "NoExecute" {
            v.invalid(
                &child(&tpath, "effect"),
                &q(effect),
                "effect must be 'NoExecute' when `tolerationSeconds` is set",
            );
        }
        match op {
            "" | "Equal" => v.each(&child(&tpath, "operator"), &q(value), label_value(value)),
            "Exists" if !value.is_empty() => {
                let shown = json_short(&Value::Object(t.clone()));
                v.invalid(&child(&tpath, "operator"), &shown, "value must be empty when `operator` is 'Exists'");
            }
            "Exists" => {}
            other => v.unsupported(&child(&tpath, "operator"), &q(other), &["Equal", "Exists"]),
        }
        if !effect.is_empty() {
            taint_effect(v, effect, &child(&tpath, "effect"));
        }
    }
}

fn taint_effect(v: &mut V, effect: &str, field: &str) {
    one_of(v, field, effect, &["NoSchedule", "PreferNoSchedule", "NoExecute"]);
}

fn pod_update(v: &mut V, new: &Value, old: &Value) {
    let empty = Map::new();
    let ns = new.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    let os = old.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    let list = |spec: &Obj, name: &str| spec.get(name).and_then(Value::as_array).cloned().unwrap_or_default();

    for name in ["containers", "initContainers"] {
        let (new_list, old_list) = (list(ns, name), list(os, name));
        if new_list.len() != old_list.len() {
            v.forbidden(&child("spec", name), "pod updates may not add or remove containers");
            return;
        }
        for (i, c) in new_list.iter().enumerate() {
            let image = c.get("image").and_then(Value::as_str).unwrap_or("");
            if image.trim() != image {
                let field = child(&idx(&child("spec", name), i), "image");
                v.invalid(&field, &q(image), "must not have leading or trailing whitespace");
            }
        }
    }

    // activeDeadlineSeconds may be set, or lowered, but never raised or removed.
    let deadline = |spec: &Obj| spec.get("activeDeadlineSeconds").and_then(Value::as_i64);
    match (deadline(ns), deadline(os)) {
        (Some(n), _) if !(0..=MAX_INT32).contains(&n) => {
            v.invalid("spec.activeDeadlineSeconds", &n.to_string(), "must be between 0 and 2147483647, inclusive");
            return;
        }
        (Some(n), Some(o)) if o < n => {
            v.invalid("spec.activeDeadlineSeconds", &n.to_string(), "must be less than or equal to previous value");
            return;
        }
        (None, Some(_)) => {
            v.invalid("spec.activeDeadlineSeconds", "null", "must not update from a positive integer to nil value");
        }
        _ => {}
    }

    // Tolerations may only be added to; an existing one may change only its tolerationSeconds.
    let new_tolerations = list(ns, "tolerations");
    let without_seconds = |t: &Value| {
        let mut t = t.clone();
        if let Some(m) = t.as_object_mut() {
            m.remove("tolerationSeconds");
        }
        t
    };
    let kept = list(os, "tolerations")
        .iter()
        .all(|o| new_tolerations.iter().any(|n| semantic_eq(Some(&without_seconds(o)), Some(&without_seconds(n)))));
    if !kept {
        v.forbidden("spec.tolerations", "existing toleration can not be modified except its tolerationSeconds");
    }

    // Scheduling gates may only be removed.
    let gate_names = |spec: &Obj| {
        list(spec, "schedulingGates")
            .iter()
            .map(|g| g.get("name").and_then(Value::as_str).unwrap_or("").to_owned())
            .collect::<Vec<_>>()
    };
    let old_gates = gate_names(os);
    for (i, gate) in gate_names(ns).iter().enumerate() {
        if !old_gates.contains(gate) {
            let detail = format!("only deletion is allowed, but found new scheduling gate '{gate}'");
            v.forbidden(&child(&idx("spec.schedulingGates", i), "name"), &detail);
        }
    }

    // Everything else must be unchanged: put the updatable fields back to their old values and
    // compare what is left.
    let mut munged = ns.clone();
    for name in ["containers", "initContainers"] {
        if let Some(Value::Array(items)) = munged.get_mut(name) {
            for (c, o) in items.iter_mut().zip(list(os, name)) {
                if let (Some(c), Some(image)) = (c.as_object_mut(), o.get("image")) {
                    c.insert("image".into(), image.clone());
                }
            }
        }
    }
    for carried in ["activeDeadlineSeconds", "tolerations", "schedulingGates"] {
        restore(&mut munged, os, carried);
    }
    let old_grace = os.get("terminationGracePeriodSeconds").and_then(Value::as_i64);
    let new_grace = ns.get("terminationGracePeriodSeconds").and_then(Value::as_i64);
    // Upstream lets a negative grace period become 1. A pod already being deleted may also have
    // it changed, so a server-side graceful deletion can record the period it used.
    let deleting = !deep_empty(old.pointer("/metadata/deletionTimestamp"));
    if deleting || (old_grace.is_some_and(|g| g < 0) && new_grace == Some(1)) {
        restore(&mut munged, os, "terminationGracePeriodSeconds");
    }
    // Scheduling a pod (what the binding subresource does) sets nodeName once.
    if deep_empty(os.get("nodeName")) {
        restore(&mut munged, os, "nodeName");
    }
    let munged = Value::Object(munged);
    let old_spec = Value::Object(os.clone());
    if !semantic_eq(Some(&munged), Some(&old_spec)) {
        let mut changes = Vec::new();
        diff(Some(&old_spec), Some(&munged), "spec", &mut changes);
        let detail = format!("pod updates may not change fields other than {POD_UPDATABLE}\n{}", changes.join("\n"));
        v.forbidden("spec", detail.trim_end());
    }
}

fn restore(spec: &mut Obj, old: &Obj, field: &str) {
    match old.get(field) {
        Some(value) => spec.insert(field.to_owned(), value.clone()),
        None => spec.remove(field),
    };
}

// ---------------------------------------------------------------------------------------------
// The other core kinds.

fn namespace(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Cluster, NameRule::Label, true);
    let path = "spec.finalizers";
    for f in v.str_list(obj.pointer("/spec/finalizers"), path) {
        v.each(path, &q(f), qualified_name(f));
        kube_finalizer(v, f, path);
    }
}

fn node(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Cluster, NameRule::Subdomain, true);
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (tpath, t) in v.objs(obj.pointer("/spec/taints"), "spec.taints") {
        let k = v.string(t.get("key"), &child(&tpath, "key"));
        v.each(&child(&tpath, "key"), &q(k), qualified_name(k));
        let value = v.string(t.get("value"), &child(&tpath, "value"));
        let errs = label_value(value);
        if !errs.is_empty() {
            v.invalid(&child(&tpath, "value"), &q(value), &errs.join(";"));
        }
        let effect = v.string(t.get("effect"), &child(&tpath, "effect"));
        taint_effect(v, effect, &child(&tpath, "effect"));
        if seen.contains(&(k, effect)) {
            let shown = json_short(&Value::Object(t.clone()));
            v.add(DUPLICATE, &tpath, format!("Duplicate value: {shown}: taints must be unique by key and effect pair"));
        } else {
            seen.push((k, effect));
        }
    }
}

/// core/v1 Events keep their legacy rules: no ObjectMeta validation beyond a usable name.
fn core_event(v: &mut V, obj: &Value) {
    let empty = Map::new();
    let m = v.obj(obj.get("metadata"), "metadata").unwrap_or(&empty);
    meta_name(v, m, NameRule::PathSegment);
    legacy_event(v, obj, EventFields::CORE);
}

struct EventFields {
    regarding: &'static str,
    controller: &'static str,
    /// Where upstream reports a missing reporting controller; "source" for core/v1.
    controller_path: &'static str,
    note: &'static str,
}

impl EventFields {
    const CORE: EventFields = EventFields {
        regarding: "involvedObject",
        controller: "reportingComponent",
        controller_path: "source",
        note: "message",
    };
    const EVENTS: EventFields = EventFields {
        regarding: "regarding",
        controller: "reportingController",
        controller_path: "reportingController",
        note: "note",
    };
}

fn legacy_event(v: &mut V, obj: &Value, f: EventFields) {
    let ns = text(Some(obj), "/metadata/namespace");
    let regarding_ns =
        v.string(obj.get(f.regarding).and_then(|r| r.get("namespace")), &format!("{}.namespace", f.regarding));
    let mismatch =
        |v: &mut V| v.invalid("involvedObject.namespace", &q(regarding_ns), "does not match event.namespace");
    if deep_empty(obj.get("eventTime")) {
        if regarding_ns.is_empty() {
            if !ns.is_empty() && ns != "default" {
                mismatch(v);
            }
        } else if ns != regarding_ns {
            mismatch(v);
        }
    } else {
        if regarding_ns.is_empty() && ns != "default" && ns != "kube-system" {
            mismatch(v);
        }
        let controller = v.string(obj.get(f.controller), f.controller);
        if controller.is_empty() {
            v.required(f.controller_path, "");
        }
        v.each(f.controller_path, &q(controller), qualified_name(controller));
        for (field, limit) in [("reportingInstance", 128), ("action", 128), ("reason", 128)] {
            let value = v.string(obj.get(field), field);
            if value.is_empty() {
                v.required(field, "");
            }
            if value.len() > limit {
                v.invalid(field, "\"\"", &format!("can have at most {limit} characters"));
            }
        }
        if v.string(obj.get(f.note), f.note).len() > 1024 {
            v.invalid("message", "\"\"", "can have at most 1024 characters");
        }
    }
    v.each("namespace", &q(ns), dns1123_subdomain(ns));
}

fn events_event(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
    if let Some(series) = v.obj(obj.get("series"), "series") {
        if v.int(series.get("count"), "series.count").unwrap_or(0) < 2 {
            v.invalid("series.count", "\"\"", "should be at least 2");
        }
        if deep_empty(series.get("lastObservedTime")) {
            v.required("series.lastObservedTime", "");
        }
    }
    // Internal field names, as upstream reports them, for the events.k8s.io/v1 fields.
    let renamed = [
        ("regarding", "involvedObject"),
        ("reason", "reason"),
        ("note", "message"),
        ("deprecatedSource", "source"),
        ("deprecatedFirstTimestamp", "firstTimestamp"),
        ("deprecatedLastTimestamp", "lastTimestamp"),
        ("deprecatedCount", "count"),
        ("type", "type"),
        ("eventTime", "eventTime"),
    ];
    match old {
        None => {
            if deep_empty(obj.get("eventTime")) {
                v.required("eventTime", "");
            }
            let kind = v.string(obj.get("type"), "type");
            if kind != "Normal" && kind != "Warning" {
                v.invalid("type", "\"\"", &format!("has invalid value: {kind}"));
            }
            for (json_name, field) in &renamed[3..7] {
                if !deep_empty(obj.get(*json_name)) {
                    v.invalid(field, "\"\"", "needs to be unset");
                }
            }
        }
        Some(old) => {
            for (json_name, field) in renamed {
                if !semantic_eq(obj.get(json_name), old.get(json_name)) {
                    v.invalid(field, &show(obj.get(json_name)), "field is immutable");
                }
            }
        }
    }
    legacy_event(v, obj, EventFields::EVENTS);
}

fn config_map(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
    let data = v.str_map(obj.get("data"), "data").unwrap_or_default();
    let binary = v.str_map(obj.get("binaryData"), "binaryData").unwrap_or_default();
    let mut total = 0;
    for (k, value) in &data {
        v.each(&key("data", k), &q(k), config_key(k));
        if binary.iter().any(|(b, _)| b == k) {
            v.invalid(&key("data", k), &q(k), "duplicate of key present in binaryData");
        }
        total += value.len();
    }
    for (k, value) in &binary {
        v.each(&key("binaryData", k), &q(k), config_key(k));
        total += decoded_len(v, value, &key("binaryData", k));
    }
    if total > MAX_SECRET_SIZE {
        v.too_long("", MAX_SECRET_SIZE);
    }
    immutable_contents(v, obj, old, &["data", "binaryData"]);
}

fn secret(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
    // Defaulting folds stringData into data; what is left here did not convert.
    let _ = v.str_map(obj.get("stringData"), "stringData");
    let data = v.str_map(obj.get("data"), "data").unwrap_or_default();
    let mut total = 0;
    for (k, value) in &data {
        v.each(&key("data", k), &q(k), config_key(k));
        total += decoded_len(v, value, &key("data", k));
    }
    if total > MAX_SECRET_SIZE {
        v.too_long("data", MAX_SECRET_SIZE);
    }
    let has = |k: &str| data.iter().any(|(name, _)| *name == k);
    let kind = v.string(obj.get("type"), "type");
    let missing: &[&str] = match kind {
        "kubernetes.io/service-account-token" => {
            if text(Some(obj), "/metadata/annotations/kubernetes.io~1service-account.name").is_empty() {
                v.required("metadata.annotations[kubernetes.io/service-account.name]", "");
            }
            &[]
        }
        "kubernetes.io/dockercfg" if !has(".dockercfg") => &[".dockercfg"],
        "kubernetes.io/dockerconfigjson" if !has(".dockerconfigjson") => &[".dockerconfigjson"],
        "kubernetes.io/basic-auth" if !has("username") && !has("password") => &["username", "password"],
        "kubernetes.io/ssh-auth" if data.iter().all(|(k, val)| *k != "ssh-privatekey" || val.is_empty()) => {
            &["ssh-privatekey"]
        }
        "kubernetes.io/tls" => &["tls.crt", "tls.key"],
        _ => &[],
    };
    for k in missing.iter().filter(|k| !(kind == "kubernetes.io/tls" && has(k))) {
        v.required(&key("data", k), "");
    }
    if let Some(old) = old {
        let old_type = text(Some(old), "/type");
        if !kind.is_empty() && kind != old_type {
            v.invalid("type", &q(kind), "field is immutable");
        }
    }
    immutable_contents(v, obj, old, &["data"]);
}

/// Length of base64 data once decoded; invalid base64 is what the real server's decoder refuses.
fn decoded_len(v: &mut V, data: &str, field: &str) -> usize {
    // Go's decoder skips line breaks, as wrapped base64 from some tools has them.
    let bytes: Vec<u8> = data.bytes().filter(|b| *b != b'\n' && *b != b'\r').collect();
    let body = bytes.iter().position(|b| *b == b'=').unwrap_or(bytes.len());
    let bad = bytes.iter().position(|b| !(b.is_ascii_alphanumeric() || *b == b'+' || *b == b'/' || *b == b'='));
    let bad = bad.or_else(|| {
        // Padding only at the end, at most two, and whole 4-byte groups.
        let padding = bytes.len() - body;
        (bytes[body..].iter().any(|b| *b != b'=') || padding > 2 || !bytes.len().is_multiple_of(4)).then_some(body)
    });
    if let Some(at) = bad {
        v.invalid(field, "\"<secret contents redacted>\"", &format!("illegal base64 data at input byte {at}"));
        return 0;
    }
    bytes.len() / 4 * 3 - (bytes.len() - body)
}

/// ConfigMaps and Secrets marked immutable may not change their contents or be unmarked.
fn immutable_contents(v: &mut V, obj: &Value, old: Option<&Value>, fields: &[&str]) {
    let Some(old) = old else { return };
    if old.get("immutable").and_then(Value::as_bool) != Some(true) {
        return;
    }
    if obj.get("immutable").and_then(Value::as_bool) != Some(true) {
        v.forbidden("immutable", "field is immutable when `immutable` is set");
    }
    for field in fields {
        if !semantic_eq(obj.get(*field), old.get(*field)) {
            v.forbidden(field, "field is immutable when `immutable` is set");
        }
    }
}

fn lease(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
    let Some(spec) = v.obj(obj.get("spec"), "spec") else { return };
    if let Some(d) = v.int(spec.get("leaseDurationSeconds"), "spec.leaseDurationSeconds").filter(|d| *d <= 0) {
        v.invalid("spec.leaseDurationSeconds", &d.to_string(), "must be greater than 0");
    }
    let transitions = v.int(spec.get("leaseTransitions"), "spec.leaseTransitions");
    v.nonnegative("spec.leaseTransitions", transitions);
}

// ---------------------------------------------------------------------------------------------
// Services (pkg/apis/core/validation: ValidateService, ValidateServiceUpdate).

fn service(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Dns1035, true);
    let empty = Map::new();
    let spec = v.obj(obj.get("spec"), "spec").unwrap_or(&empty);
    let ty = v.string(spec.get("type"), "spec.type");
    let cluster_ip = v.string(spec.get("clusterIP"), "spec.clusterIP");
    let cluster_ips = v.str_list(spec.get("clusterIPs"), "spec.clusterIPs");
    let headless = cluster_ip == "None";
    let ports = v.objs(spec.get("ports"), "spec.ports");
    if ports.is_empty() && !headless && ty != "ExternalName" {
        v.required("spec.ports", "");
    }
    if ty == "ExternalName" {
        if !cluster_ips.is_empty() {
            v.forbidden("spec.clusterIPs", "may not be set for ExternalName services");
        }
        if !deep_empty(spec.get("ipFamilies")) {
            v.forbidden("spec.ipFamilies", "may not be set for ExternalName services");
        }
        if spec.get("ipFamilyPolicy").is_some_and(|p| !p.is_null()) {
            v.forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services");
        }
        let external = v.string(spec.get("externalName"), "spec.externalName");
        let cname = external.strip_suffix('.').unwrap_or(external);
        if cname.is_empty() {
            v.required("spec.externalName", "");
        } else {
            v.each("spec.externalName", &q(cname), dns1123_subdomain(cname));
        }
    }
    for (i, ip) in cluster_ips.iter().enumerate() {
        if *ip != "None" && ip.parse::<std::net::IpAddr>().is_err() {
            v.invalid(
                &idx("spec.clusterIPs", i),
                &q(ip),
                "must be a valid IP address (e.g. 10.9.8.7 or 2001:db8::ffff)",
            );
        }
    }
    if !cluster_ip.is_empty() && cluster_ips.first().is_some_and(|first| *first != cluster_ip) {
        v.invalid("spec.clusterIPs", &go_strings(&cluster_ips), "element [0] must match clusterIP");
    } else if cluster_ips.is_empty()
        && !cluster_ip.is_empty()
        && cluster_ip != "None"
        && cluster_ip.parse::<std::net::IpAddr>().is_err()
    {
        v.invalid("spec.clusterIPs[0]", &q(cluster_ip), "must be a valid IP address (e.g. 10.9.8.7 or 2001:db8::ffff)");
    }

    let mut names: Vec<&str> = Vec::new();
    for (ppath, p) in &ports {
        let name = v.string(p.get("name"), &child(ppath, "name"));
        if ports.len() > 1 && name.is_empty() {
            v.required(&child(ppath, "name"), "");
        } else if !name.is_empty() {
            v.each(&child(ppath, "name"), &q(name), dns1123_label(name));
            if names.contains(&name) {
                v.duplicate(&child(ppath, "name"), &q(name));
            } else {
                names.push(name);
            }
        }
        let port = v.int(p.get("port"), &child(ppath, "port")).unwrap_or(0);
        port_number(v, &child(ppath, "port"), port);
        let protocol = v.string(p.get("protocol"), &child(ppath, "protocol"));
        one_of(v, &child(ppath, "protocol"), protocol, &["SCTP", "TCP", "UDP"]);
        let target = child(ppath, "targetPort");
        match p.get("targetPort") {
            Some(Value::String(s)) => v.each(&target, &q(s), port_name(s)),
            Some(Value::Null) | None => {}
            Some(other) => {
                if let Some(n) = v.int(Some(other), &target) {
                    port_number(v, &target, n);
                }
            }
        }
        let node_port = v.int(p.get("nodePort"), &child(ppath, "nodePort")).unwrap_or(0);
        if node_port != 0 {
            if ty == "ClusterIP" {
                v.forbidden(&child(ppath, "nodePort"), "may not be used when `type` is 'ClusterIP'");
            } else {
                port_number(v, &child(ppath, "nodePort"), node_port);
            }
        }
    }
    labels(v, spec.get("selector"), "spec.selector");
    let affinity = v.string(spec.get("sessionAffinity"), "spec.sessionAffinity");
    one_of(v, "spec.sessionAffinity", affinity, &["ClientIP", "None"]);
    one_of(v, "spec.type", ty, &["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]);

    // The primary address is fixed once allocated, unless the type goes to or from
    // ExternalName (upstream's validateUpgradeDowngradeClusterIPs).
    if let Some(old) = old {
        let old_ips: Vec<&str> = old
            .pointer("/spec/clusterIPs")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        let old_type = text(Some(old), "/spec/type");
        if ty != "ExternalName"
            && old_type != "ExternalName"
            && let (Some(new_first), Some(old_first)) = (cluster_ips.first(), old_ips.first())
            && new_first != old_first
        {
            v.invalid("spec.clusterIPs[0]", &go_strings(&cluster_ips), "may not change once set");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// PodDisruptionBudgets (pkg/apis/policy/validation).

fn pod_disruption_budget(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
    let empty = Map::new();
    let spec = v.obj(obj.get("spec"), "spec").unwrap_or(&empty);
    let set = |k: &str| spec.get(k).is_some_and(|x| !x.is_null());
    if set("minAvailable") && set("maxUnavailable") {
        let shown = json_short(&Value::Object(spec.clone()));
        v.invalid("spec", &shown, "minAvailable and maxUnavailable cannot be both set");
    }
    for field in ["minAvailable", "maxUnavailable"] {
        if !set(field) {
            continue;
        }
        let path = child("spec", field);
        if let Some(n) = int_or_percent(v, spec.get(field), &path)
            && n.percent().is_some_and(|p| p > 100)
        {
            v.invalid(&path, &n.shown(), "must not be greater than 100%");
        }
    }
    if let Some(sel) = v.obj(spec.get("selector"), "spec.selector") {
        selector(v, sel, "spec.selector");
    }
    let policy = v.string(spec.get("unhealthyPodEvictionPolicy"), "spec.unhealthyPodEvictionPolicy");
    if !policy.is_empty() && !["AlwaysAllow", "IfHealthyBudget"].contains(&policy) {
        v.unsupported("spec.unhealthyPodEvictionPolicy", &q(policy), &["AlwaysAllow", "IfHealthyBudget"]);
    }
}

// ---------------------------------------------------------------------------------------------
// RBAC (pkg/apis/rbac/validation). Names are path segments, as upstream's ValidateRBACName.

fn role(v: &mut V, obj: &Value, old: Option<&Value>, namespaced: bool) {
    let scope = if namespaced { Scope::Namespaced } else { Scope::Cluster };
    meta(v, obj, old, scope, NameRule::PathSegment, false);
    for (path, rule) in v.objs(obj.get("rules"), "rules") {
        policy_rule(v, rule, namespaced, &path);
    }
    if namespaced {
        return;
    }
    if let Some(aggregation) = v.obj(obj.get("aggregationRule"), "aggregationRule") {
        let selectors = v.objs(aggregation.get("clusterRoleSelectors"), "aggregationRule.clusterRoleSelectors");
        if selectors.is_empty() {
            v.required(
                "aggregationRule.clusterRoleSelectors",
                "at least one clusterRoleSelector required if aggregationRule is non-nil",
            );
        }
        for (path, sel) in selectors {
            selector(v, sel, &path);
        }
    }
}

fn policy_rule(v: &mut V, rule: &Obj, namespaced: bool, path: &str) {
    let list = |v: &mut V, k: &str| v.str_list(rule.get(k), &child(path, k));
    let (verbs, urls, groups, resources, names) = (
        list(v, "verbs"),
        list(v, "nonResourceURLs"),
        list(v, "apiGroups"),
        list(v, "resources"),
        list(v, "resourceNames"),
    );
    if verbs.is_empty() {
        v.required(&child(path, "verbs"), "verbs must contain at least one value");
    }
    if !urls.is_empty() {
        let field = child(path, "nonResourceURLs");
        if namespaced {
            v.invalid(&field, &go_strings(&urls), "namespaced rules cannot apply to non-resource URLs");
        }
        if !groups.is_empty() || !resources.is_empty() || !names.is_empty() {
            v.invalid(&field, &go_strings(&urls), "rules cannot apply to both regular resources and non-resource URLs");
        }
        return;
    }
    if groups.is_empty() {
        v.required(&child(path, "apiGroups"), "resource rules must supply at least one api group");
    }
    if resources.is_empty() {
        v.required(&child(path, "resources"), "resource rules must supply at least one resource");
    }
}

fn role_binding(v: &mut V, obj: &Value, old: Option<&Value>, namespaced: bool) {
    let scope = if namespaced { Scope::Namespaced } else { Scope::Cluster };
    meta(v, obj, old, scope, NameRule::PathSegment, false);
    let empty = Map::new();
    let role_ref = v.obj(obj.get("roleRef"), "roleRef").unwrap_or(&empty);
    let group = v.string(role_ref.get("apiGroup"), "roleRef.apiGroup");
    if group != "rbac.authorization.k8s.io" {
        v.unsupported("roleRef.apiGroup", &q(group), &["rbac.authorization.k8s.io"]);
    }
    let kind = v.string(role_ref.get("kind"), "roleRef.kind");
    let kinds: &[&str] = if namespaced { &["Role", "ClusterRole"] } else { &["ClusterRole"] };
    if !kinds.contains(&kind) {
        v.unsupported("roleRef.kind", &q(kind), kinds);
    }
    let name = v.string(role_ref.get("name"), "roleRef.name");
    if name.is_empty() {
        v.required("roleRef.name", "");
    } else {
        v.each("roleRef.name", &q(name), path_segment(name, false));
    }
    for (path, subject) in v.objs(obj.get("subjects"), "subjects") {
        let name = v.string(subject.get("name"), &child(&path, "name"));
        if name.is_empty() {
            v.required(&child(&path, "name"), "");
        }
        let group = v.string(subject.get("apiGroup"), &child(&path, "apiGroup"));
        match v.string(subject.get("kind"), &child(&path, "kind")) {
            "ServiceAccount" => {
                if !name.is_empty() {
                    v.each(&child(&path, "name"), &q(name), dns1123_subdomain(name));
                }
                if !group.is_empty() {
                    v.unsupported(&child(&path, "apiGroup"), &q(group), &[""]);
                }
                let ns = v.string(subject.get("namespace"), &child(&path, "namespace"));
                if !namespaced && ns.is_empty() {
                    v.required(&child(&path, "namespace"), "");
                }
            }
            "User" | "Group" if group != "rbac.authorization.k8s.io" => {
                v.unsupported(&child(&path, "apiGroup"), &q(group), &["rbac.authorization.k8s.io"]);
            }
            "User" | "Group" => {}
            other => v.unsupported(&child(&path, "kind"), &q(other), &["ServiceAccount", "User", "Group"]),
        }
    }
    // The role a binding grants is fixed: changing it means a new binding (upstream prints the
    // internal rbac.RoleRef with %#v).
    if let Some(old) = old {
        let old_ref = old.get("roleRef");
        if !semantic_eq(obj.get("roleRef"), old_ref) {
            let field = |k: &str| q(role_ref.get(k).and_then(Value::as_str).unwrap_or(""));
            let shown = format!(
                "rbac.RoleRef{{APIGroup:{}, Kind:{}, Name:{}}}",
                field("apiGroup"),
                field("kind"),
                field("name")
            );
            v.invalid("roleRef", &shown, "cannot change roleRef");
        }
    }
}

// ---------------------------------------------------------------------------------------------
// CustomResourceDefinitions (apiextensions-apiserver/pkg/apis/apiextensions/validation).

fn crd(v: &mut V, obj: &Value, old: Option<&Value>) {
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
    use serde_json::json;

    /// Applies `{"/json/pointer": value}` edits to a fixture; null removes. Objects are created
    /// on the way, and an index one past the end of an array appends.
    fn edit(object: &mut Value, edits: &Value) {
        for (pointer, value) in edits.as_object().unwrap() {
            let (parent, last) = pointer.rsplit_once('/').unwrap();
            let mut at = &mut *object;
            for part in parent.split('/').skip(1) {
                at = match at {
                    Value::Array(a) => &mut a[part.parse::<usize>().unwrap()],
                    _ => at.as_object_mut().unwrap().entry(part.replace("~1", "/")).or_insert(json!({})),
                };
            }
            let last = last.replace("~1", "/");
            match (at, value) {
                (Value::Array(a), v) if last.parse::<usize>().unwrap() == a.len() => a.push(v.clone()),
                (Value::Array(a), v) => a[last.parse::<usize>().unwrap()] = v.clone(),
                (Value::Object(m), Value::Null) => drop(m.remove(&last)),
                (Value::Object(m), v) => drop(m.insert(last, v.clone())),
                (other, _) => panic!("cannot edit {other} at {pointer}"),
            }
        }
    }

    /// "Invalid metadata.name, Required spec.selector" as sorted (reason, field) pairs.
    fn expected(want: &str) -> Vec<(String, String)> {
        let mut out: Vec<(String, String)> = want
            .split(", ")
            .filter(|w| !w.is_empty())
            .map(|w| {
                let (reason, field) = w.split_once(' ').unwrap_or((w, ""));
                (format!("FieldValue{reason}"), field.to_owned())
            })
            .collect();
        out.sort();
        out
    }

    fn check(api_version: &str, kind: &str, object: &Value, old: Option<&Value>, name: &str, want: &str) {
        let causes = validate(api_version, kind, object, old);
        let mut got: Vec<(String, String)> = causes.iter().map(|c| (c.reason.to_owned(), c.field.clone())).collect();
        got.sort();
        assert_eq!(got, expected(want), "{kind}: {name}: {causes:#?}");
    }

    /// Create cases: (name, edits to the fixture, expected causes).
    type Creates<'a> = &'a [(&'a str, Value, &'a str)];
    /// Update cases: (name, edits making the stored object, edits making the new one, expected).
    type Updates<'a> = &'a [(&'a str, Value, Value, &'a str)];

    fn run(api_version: &str, kind: &str, fixture: &Value, creates: Creates, updates: Updates) {
        for (name, edits, want) in creates {
            let mut object = fixture.clone();
            edit(&mut object, edits);
            check(api_version, kind, &object, None, name, want);
        }
        for (name, old_edits, edits, want) in updates {
            let (mut old, mut object) = (fixture.clone(), fixture.clone());
            edit(&mut old, old_edits);
            edit(&mut object, edits);
            check(api_version, kind, &object, Some(&old), name, want);
        }
    }

    fn container() -> Value {
        json!({"name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent", "resources": {},
            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
            "ports": [{"containerPort": 80, "protocol": "TCP"}]})
    }

    fn pod_spec() -> Value {
        json!({"containers": [container()], "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
            "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler", "securityContext": {}})
    }

    fn deployment() -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "web", "namespace": "default", "uid": "u1", "resourceVersion": "5"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                "template": {"metadata": {"labels": {"app": "web", "tier": "front"}}, "spec": pod_spec()},
                "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
                "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}})
    }

    fn pod() -> Value {
        let mut spec = pod_spec();
        spec["enableServiceLinks"] = json!(true);
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-1", "namespace": "default"}, "spec": spec,
            "status": {"phase": "Pending", "qosClass": "BestEffort"}})
    }

    #[test]
    fn deployment_create() {
        let big = "x".repeat(TOTAL_ANNOTATION_SIZE);
        let controllers = json!([{"apiVersion": "v1", "kind": "A", "name": "a", "uid": "1", "controller": true},
            {"apiVersion": "v1", "kind": "B", "name": "b", "uid": "2", "controller": true}]);
        let exprs = |e: Value| json!({"/spec/selector": {"matchExpressions": [e]}});
        let c0 = |field: &str, value: Value| {
            let mut edits = Map::new();
            edits.insert(format!("/spec/template/spec/containers/0/{field}"), value);
            Value::Object(edits)
        };
        let rolling =
            |u: Value, s: Value| json!({"/spec/strategy/rollingUpdate": {"maxUnavailable": u, "maxSurge": s}});
        let env = |e: Value| c0("env", json!([e]));
        let tolerations = json!([{"key": "a", "operator": "Maybe"}, {"operator": "Exists"},
            {"key": "b", "value": "x", "effect": "NoSchedule", "tolerationSeconds": 5}]);
        let volumes =
            json!([{"name": "a"}, {"name": "a", "emptyDir": {}}, {"name": "B", "emptyDir": {}, "secret": {}}]);
        let ct = "spec.template.spec.containers";
        let creates = [
            ("valid", json!({}), ""),
            ("bad name", json!({"/metadata/name": "Foo_Bar"}), "Invalid metadata.name"),
            ("no name", json!({"/metadata/name": null}), "Required metadata.name"),
            ("generateName", json!({"/metadata/name": null, "/metadata/generateName": "web-"}), ""),
            (
                "bad generateName",
                json!({"/metadata/name": null, "/metadata/generateName": "Web-"}),
                "Invalid metadata.generateName",
            ),
            ("name not a string", json!({"/metadata/name": 7}), "Invalid metadata.name, Required metadata.name"),
            ("no namespace", json!({"/metadata/namespace": null}), "Required metadata.namespace"),
            ("bad namespace", json!({"/metadata/namespace": "a.b"}), "Invalid metadata.namespace"),
            ("bad label key", json!({"/metadata/labels": {"a/b/c": "x"}}), "Invalid metadata.labels"),
            ("prefixed label", json!({"/metadata/labels": {"example.com/a_B.c": ""}}), ""),
            ("long label value", json!({"/metadata/labels": {"a": "a".repeat(64)}}), "Invalid metadata.labels"),
            ("label not a string", json!({"/metadata/labels": {"a": 1}}), "Invalid metadata.labels[a]"),
            ("bad annotation key", json!({"/metadata/annotations": {"-a": "x"}}), "Invalid metadata.annotations"),
            ("uppercase annotation key", json!({"/metadata/annotations": {"Example.COM/A": "x"}}), ""),
            ("annotations too big", json!({"/metadata/annotations": {"a": big}}), "TooLong metadata.annotations"),
            ("two controllers", json!({"/metadata/ownerReferences": controllers}), "Invalid metadata.ownerReferences"),
            (
                "owner without uid",
                json!({"/metadata/ownerReferences": [{"apiVersion": "apps/v1", "kind": "X", "name": "x"}]}),
                "Invalid metadata.ownerReferences.uid",
            ),
            ("nonstandard finalizer", json!({"/metadata/finalizers": ["foo"]}), "Invalid metadata.finalizers[0]"),
            ("qualified finalizer", json!({"/metadata/finalizers": ["example.com/x", "orphan"]}), ""),
            ("negative generation", json!({"/metadata/generation": -1}), "Invalid metadata.generation"),
            (
                "no selector",
                json!({"/spec/selector": null}),
                "Required spec.selector, Invalid spec.template.metadata.labels",
            ),
            ("empty selector", json!({"/spec/selector": {}}), "Invalid spec.selector"),
            (
                "selector mismatch",
                json!({"/spec/selector/matchLabels/app": "api"}),
                "Invalid spec.template.metadata.labels",
            ),
            ("In", exprs(json!({"key": "app", "operator": "In", "values": ["api", "web"]})), ""),
            (
                "NotIn",
                exprs(json!({"key": "app", "operator": "NotIn", "values": ["web"]})),
                "Invalid spec.template.metadata.labels",
            ),
            ("DoesNotExist", exprs(json!({"key": "gone", "operator": "DoesNotExist"})), ""),
            (
                "In without values",
                exprs(json!({"key": "app", "operator": "In"})),
                "Required spec.selector.matchExpressions[0].values, Invalid spec.selector",
            ),
            (
                "bad operator",
                exprs(json!({"key": "app", "operator": "Near"})),
                "Invalid spec.selector.matchExpressions[0].operator, Invalid spec.selector",
            ),
            (
                "bad selector value",
                json!({"/spec/selector/matchLabels/app": "-web"}),
                "Invalid spec.selector.matchLabels, Invalid spec.selector",
            ),
            ("negative replicas", json!({"/spec/replicas": -1}), "Invalid spec.replicas"),
            ("zero replicas", json!({"/spec/replicas": 0}), ""),
            ("replicas not a number", json!({"/spec/replicas": "3"}), "Invalid spec.replicas"),
            ("negative minReadySeconds", json!({"/spec/minReadySeconds": -1}), "Invalid spec.minReadySeconds"),
            (
                "Never restarts",
                json!({"/spec/template/spec/restartPolicy": "Never"}),
                "NotSupported spec.template.spec.restartPolicy",
            ),
            (
                "unknown restartPolicy",
                json!({"/spec/template/spec/restartPolicy": "Sometimes"}),
                "NotSupported spec.template.spec.restartPolicy, NotSupported spec.template.spec.restartPolicy",
            ),
            (
                "activeDeadlineSeconds",
                json!({"/spec/template/spec/activeDeadlineSeconds": 5}),
                "Forbidden spec.template.spec.activeDeadlineSeconds",
            ),
            (
                "ephemeral containers",
                json!({"/spec/template/spec/ephemeralContainers": [{"name": "debug", "image": "busybox"}]}),
                "Forbidden spec.template.spec.ephemeralContainers",
            ),
            ("bad template label", json!({"/spec/template/metadata/labels/x": "a b"}), "Invalid spec.template.labels"),
            ("unknown strategy", json!({"/spec/strategy": {"type": "BlueGreen"}}), "NotSupported spec.strategy"),
            ("Recreate", json!({"/spec/strategy": {"type": "Recreate"}}), ""),
            (
                "Recreate with rollingUpdate",
                json!({"/spec/strategy/type": "Recreate"}),
                "Forbidden spec.strategy.rollingUpdate",
            ),
            (
                "RollingUpdate without params",
                json!({"/spec/strategy/rollingUpdate": null}),
                "Required spec.strategy.rollingUpdate",
            ),
            ("both zero", rolling(json!(0), json!(0)), "Invalid spec.strategy.rollingUpdate.maxUnavailable"),
            (
                "both zero percent",
                rolling(json!("0%"), json!("0%")),
                "Invalid spec.strategy.rollingUpdate.maxUnavailable",
            ),
            ("surge only", rolling(json!(0), json!(1)), ""),
            ("over 100%", rolling(json!("110%"), json!(1)), "Invalid spec.strategy.rollingUpdate.maxUnavailable"),
            ("surge over 100%", rolling(json!(1), json!("200%")), ""),
            ("not a percent", rolling(json!(1), json!("abc")), "Invalid spec.strategy.rollingUpdate.maxSurge"),
            ("negative surge", rolling(json!(1), json!(-1)), "Invalid spec.strategy.rollingUpdate.maxSurge"),
            ("surge of wrong type", rolling(json!(1), json!(true)), "Invalid spec.strategy.rollingUpdate.maxSurge"),
            (
                "negative revisionHistoryLimit",
                json!({"/spec/revisionHistoryLimit": -1}),
                "Invalid spec.revisionHistoryLimit",
            ),
            (
                "deadline not after minReady",
                json!({"/spec/minReadySeconds": 600, "/spec/progressDeadlineSeconds": 600}),
                "Invalid spec.progressDeadlineSeconds",
            ),
            ("no containers", json!({"/spec/template/spec/containers": []}), "Required spec.template.spec.containers"),
            (
                "duplicate containers",
                json!({"/spec/template/spec/containers/1": container()}),
                &format!("Duplicate {ct}[1].name"),
            ),
            ("container name", c0("name", json!("Web")), &format!("Invalid {ct}[0].name")),
            ("no image", c0("image", json!(null)), &format!("Required {ct}[0].image")),
            (
                "pull policy",
                c0("imagePullPolicy", json!("Sometimes")),
                &format!("NotSupported {ct}[0].imagePullPolicy"),
            ),
            (
                "port range",
                c0("ports/0/containerPort", json!(70000)),
                &format!("Invalid {ct}[0].ports[0].containerPort"),
            ),
            (
                "port missing",
                c0("ports/0/containerPort", json!(null)),
                &format!("Required {ct}[0].ports[0].containerPort"),
            ),
            (
                "port protocol",
                c0("ports/0/protocol", json!("HTTP")),
                &format!("NotSupported {ct}[0].ports[0].protocol"),
            ),
            ("port name", c0("ports/0/name", json!("http--x")), &format!("Invalid {ct}[0].ports[0].name")),
            (
                "negative grace",
                json!({"/spec/template/spec/terminationGracePeriodSeconds": -1}),
                "Invalid spec.template.spec.terminationGracePeriodSeconds",
            ),
            (
                "dnsPolicy",
                json!({"/spec/template/spec/dnsPolicy": "Google"}),
                "NotSupported spec.template.spec.dnsPolicy",
            ),
            (
                "request over limit",
                c0("resources", json!({"requests": {"cpu": "2"}, "limits": {"cpu": "1500m"}})),
                &format!("Invalid {ct}[0].resources.requests"),
            ),
            (
                "request at limit",
                c0("resources", json!({"requests": {"memory": "1Gi"}, "limits": {"memory": "1024Mi"}})),
                "",
            ),
            (
                "bad quantity",
                c0("resources", json!({"limits": {"cpu": "lots", "memory": "-1"}})),
                &format!("Invalid {ct}[0].resources.limits[cpu], Invalid {ct}[0].resources.limits[memory]"),
            ),
            (
                "extended resource without limit",
                c0("resources", json!({"requests": {"example.com/gpu": "1"}})),
                &format!("Required {ct}[0].resources.limits"),
            ),
            (
                "env value and valueFrom",
                env(json!({"name": "A", "value": "x", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}})),
                &format!("Invalid {ct}[0].env[0].valueFrom"),
            ),
            (
                "env without name",
                env(json!({"value": "x"})),
                &format!("Required {ct}[0].env[0].name, Invalid {ct}[0].env[0].name"),
            ),
            (
                "env secret key",
                env(json!({"name": "A", "valueFrom": {"secretKeyRef": {"name": "s", "key": "a b"}}})),
                &format!("Invalid {ct}[0].env[0].valueFrom.secretKeyRef.key"),
            ),
            (
                "mount of unknown volume",
                c0("volumeMounts", json!([{"name": "data", "mountPath": "/data"}])),
                &format!("NotFound {ct}[0].volumeMounts[0].name"),
            ),
            (
                "mount of a volume",
                json!({"/spec/template/spec/containers/0/volumeMounts": [{"name": "data", "mountPath": "/data"}],
                    "/spec/template/spec/volumes": [{"name": "data", "emptyDir": {}}]}),
                "",
            ),
            (
                "volume problems",
                json!({"/spec/template/spec/volumes": volumes}),
                "Required spec.template.spec.volumes[0], Duplicate spec.template.spec.volumes[1].name, \
                 Invalid spec.template.spec.volumes[2].name, Forbidden spec.template.spec.volumes[2].secret",
            ),
            (
                "tolerations",
                json!({"/spec/template/spec/tolerations": tolerations}),
                "NotSupported spec.template.spec.tolerations[0].operator, \
                 Invalid spec.template.spec.tolerations[2].effect",
            ),
            (
                "nodeSelector",
                json!({"/spec/template/spec/nodeSelector": {"disk": "fast ssd"}}),
                "Invalid spec.template.spec.nodeSelector",
            ),
            (
                "container not an object",
                json!({"/spec/template/spec/containers/0": "nginx"}),
                &format!("Invalid {ct}[0], Required {ct}"),
            ),
            (
                "spec not an object",
                json!({"/spec": []}),
                "Invalid spec, Required spec.selector, Invalid spec.template.metadata.labels, Required \
                 spec.template.spec.containers, Required spec.template.spec.restartPolicy, NotSupported \
                 spec.template.spec.restartPolicy, Required spec.template.spec.dnsPolicy, NotSupported spec.strategy",
            ),
        ];
        let creates: Vec<(&str, Value, &str)> = creates.iter().map(|(n, e, w)| (*n, e.clone(), &**w)).collect();
        run("apps/v1", "Deployment", &deployment(), &creates, &[]);
    }

    #[test]
    fn deployment_update() {
        let deleting = json!({"/metadata/deletionTimestamp": "2024-01-01T00:00:00Z"});
        let deleting_finalized =
            json!({"/metadata/deletionTimestamp": "2024-01-01T00:00:00Z", "/metadata/finalizers": ["example.com/x"]});
        let updates = [
            ("unchanged", json!({}), json!({}), ""),
            (
                "scale, new image",
                json!({}),
                json!({"/spec/replicas": 5, "/spec/template/spec/containers/0/image": "nginx:2"}),
                "",
            ),
            (
                "selector change",
                json!({}),
                json!({"/spec/selector/matchLabels/tier": "front"}),
                "Invalid spec.selector",
            ),
            ("selector spelled differently", json!({"/spec/selector/matchExpressions": []}), json!({}), ""),
            ("rename", json!({}), json!({"/metadata/name": "other"}), "Invalid metadata.name"),
            ("move", json!({}), json!({"/metadata/namespace": "other"}), "Invalid metadata.namespace"),
            ("uid change", json!({}), json!({"/metadata/uid": "u2"}), "Invalid metadata.uid"),
            ("uid left out", json!({}), json!({"/metadata/uid": null}), ""),
            ("client sets deletionTimestamp", json!({}), deleting.clone(), "Invalid metadata.deletionTimestamp"),
            (
                "finalizer added while deleting",
                deleting.clone(),
                deleting_finalized.clone(),
                "Forbidden metadata.finalizers",
            ),
            ("finalizer removed while deleting", deleting_finalized, deleting, ""),
            ("spec still validated", json!({}), json!({"/spec/replicas": -2}), "Invalid spec.replicas"),
        ];
        run("apps/v1", "Deployment", &deployment(), &[], &updates);
    }

    #[test]
    fn replica_set() {
        let mut rs = deployment();
        rs["kind"] = json!("ReplicaSet");
        edit(
            &mut rs,
            &json!({"/spec/strategy": null, "/spec/revisionHistoryLimit": null, "/spec/progressDeadlineSeconds": null}),
        );
        let creates = [
            ("valid", json!({}), ""),
            ("no strategy checks", json!({"/spec/strategy": {"type": "Nonsense"}}), ""),
            (
                "selector mismatch",
                json!({"/spec/template/metadata/labels": {}}),
                "Invalid spec.template.metadata.labels",
            ),
            ("negative replicas", json!({"/spec/replicas": -1}), "Invalid spec.replicas"),
            (
                "restartPolicy",
                json!({"/spec/template/spec/restartPolicy": "OnFailure"}),
                "NotSupported spec.template.spec.restartPolicy",
            ),
        ];
        let updates = [
            ("scale", json!({}), json!({"/spec/replicas": 0}), ""),
            (
                "selector change",
                json!({}),
                json!({"/spec/selector/matchLabels": {"tier": "front"}}),
                "Invalid spec.selector",
            ),
        ];
        run("apps/v1", "ReplicaSet", &rs, &creates, &updates);
    }

    #[test]
    fn pod_create() {
        let init = |extra: Value| {
            let mut c =
                json!({"name": "init", "image": "x", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"});
            edit(&mut c, &extra);
            json!({"/spec/initContainers": [c]})
        };
        let debug =
            json!([{"name": "d", "image": "busybox", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}]);
        let creates = [
            ("valid", json!({}), ""),
            ("no containers", json!({"/spec/containers": null}), "Required spec.containers"),
            ("dotted container name", json!({"/spec/containers/0/name": "a.b"}), "Invalid spec.containers[0].name"),
            ("init named like a container", init(json!({"/name": "web"})), "Duplicate spec.initContainers[0].name"),
            ("init without image", init(json!({"/image": null})), "Required spec.initContainers[0].image"),
            ("sidecar", init(json!({"/restartPolicy": "Always"})), ""),
            (
                "init restartPolicy",
                init(json!({"/restartPolicy": "Never"})),
                "NotSupported spec.initContainers[0].restartPolicy",
            ),
            (
                "container restartPolicy",
                json!({"/spec/containers/0/restartPolicy": "Always"}),
                "Forbidden spec.containers[0].restartPolicy",
            ),
            ("restartPolicy", json!({"/spec/restartPolicy": "Sometimes"}), "NotSupported spec.restartPolicy"),
            ("Never restarts", json!({"/spec/restartPolicy": "Never"}), ""),
            ("dnsPolicy None", json!({"/spec/dnsPolicy": "None"}), "Required spec.dnsConfig"),
            ("ephemeral on create", json!({"/spec/ephemeralContainers": debug}), "Forbidden spec.ephemeralContainers"),
            ("nodeName", json!({"/spec/nodeName": "Bad_Node"}), "Invalid spec.nodeName"),
            ("bound", json!({"/spec/nodeName": "node-1.example.com"}), ""),
            ("serviceAccountName", json!({"/spec/serviceAccountName": "Me"}), "Invalid spec.serviceAccountName"),
            ("activeDeadlineSeconds", json!({"/spec/activeDeadlineSeconds": 0}), "Invalid spec.activeDeadlineSeconds"),
            ("long name", json!({"/metadata/name": "a".repeat(254)}), "Invalid metadata.name"),
        ];
        run("v1", "Pod", &pod(), &creates, &[]);
    }

    #[test]
    fn pod_update() {
        let toleration = json!({"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 60});
        let tolerated = json!({"/spec/tolerations": [toleration]});
        let gated = json!({"/spec/schedulingGates": [{"name": "example.com/wait"}]});
        let deleting = json!({"/metadata/deletionTimestamp": "2024-01-01T00:00:00Z"});
        let deadline = |s: i64| json!({"/spec/activeDeadlineSeconds": s});
        let grace = |s: i64| json!({"/spec/terminationGracePeriodSeconds": s});
        let node = |n: &str| json!({"/spec/nodeName": n});
        let second = json!({"/spec/containers/1":
            {"name": "b", "image": "x", "imagePullPolicy": "Always", "terminationMessagePolicy": "File"}});
        let updates = [
            ("unchanged", json!({}), json!({}), ""),
            ("labels", json!({}), json!({"/metadata/labels": {"a": "b"}}), ""),
            ("image", json!({}), json!({"/spec/containers/0/image": "nginx:2"}), ""),
            (
                "image whitespace",
                json!({}),
                json!({"/spec/containers/0/image": "nginx:2 "}),
                "Invalid spec.containers[0].image",
            ),
            ("status ignored", json!({}), json!({"/status/phase": "Running"}), ""),
            ("deadline set", json!({}), deadline(60), ""),
            ("deadline lowered", deadline(60), deadline(30), ""),
            ("deadline raised", deadline(60), deadline(90), "Invalid spec.activeDeadlineSeconds"),
            ("deadline removed", deadline(60), json!({}), "Invalid spec.activeDeadlineSeconds"),
            ("toleration added", json!({}), tolerated.clone(), ""),
            (
                "tolerationSeconds changed",
                tolerated.clone(),
                json!({"/spec/tolerations":
                    [{"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 5}]}),
                "",
            ),
            (
                "toleration changed",
                tolerated.clone(),
                json!({"/spec/tolerations": [{"key": "x", "operator": "Exists"}]}),
                "Forbidden spec.tolerations",
            ),
            ("toleration removed", tolerated, json!({}), "Forbidden spec.tolerations"),
            ("bind", json!({}), node("node-1"), ""),
            ("rebind", node("node-1"), node("node-2"), "Forbidden spec"),
            ("ports", json!({}), json!({"/spec/containers/0/ports/0/containerPort": 81}), "Forbidden spec"),
            ("restartPolicy", json!({}), json!({"/spec/restartPolicy": "Never"}), "Forbidden spec"),
            ("container added", json!({}), second, "Forbidden spec.containers"),
            (
                "init container removed",
                json!({"/spec/initContainers": [{"name": "i", "image": "x"}]}),
                json!({}),
                "Forbidden spec.initContainers",
            ),
            ("grace changed", json!({}), grace(5), "Forbidden spec"),
            ("negative grace to 1", grace(-1), grace(1), ""),
            (
                "grace changed while deleting",
                deleting.clone(),
                json!({"/metadata/deletionTimestamp": "2024-01-01T00:00:00Z",
                    "/spec/terminationGracePeriodSeconds": 0}),
                "",
            ),
            ("gate removed", gated.clone(), json!({}), ""),
            ("gate added", json!({}), gated, "Forbidden spec.schedulingGates[0].name"),
            ("explicit zero values", json!({}), json!({"/spec/hostNetwork": false, "/spec/volumes": []}), ""),
        ];
        run("v1", "Pod", &pod(), &[], &updates);
    }

    #[test]
    fn namespaces_nodes_service_accounts() {
        let ns = json!({"metadata": {"name": "team-a"}, "spec": {"finalizers": ["kubernetes"]},
            "status": {"phase": "Active"}});
        let creates = [
            ("valid", json!({}), ""),
            ("dots", json!({"/metadata/name": "team.a"}), "Invalid metadata.name"),
            ("too long", json!({"/metadata/name": "a".repeat(64)}), "Invalid metadata.name"),
            ("namespaced", json!({"/metadata/namespace": "default"}), "Forbidden metadata.namespace"),
            ("spec finalizer", json!({"/spec/finalizers": ["foo"]}), "Invalid spec.finalizers"),
        ];
        run("v1", "Namespace", &ns, &creates, &[("finalized", json!({}), json!({"/spec/finalizers": []}), "")]);

        let node = json!({"metadata": {"name": "node-1.example.com"},
            "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}]}});
        let creates = [
            ("valid", json!({}), ""),
            ("bad name", json!({"/metadata/name": "Node_1"}), "Invalid metadata.name"),
            ("taint effect", json!({"/spec/taints/0/effect": "Maybe"}), "NotSupported spec.taints[0].effect"),
            ("taint without effect", json!({"/spec/taints/0/effect": null}), "Required spec.taints[0].effect"),
            (
                "duplicate taint",
                json!({"/spec/taints/1": {"key": "a", "value": "b", "effect": "NoSchedule"}}),
                "Duplicate spec.taints[1]",
            ),
        ];
        run("v1", "Node", &node, &creates, &[("labels", json!({}), json!({"/metadata/labels": {"zone": "a"}}), "")]);

        let sa = json!({"metadata": {"name": "builder", "namespace": "ci"}});
        let creates =
            [("valid", json!({}), ""), ("bad name", json!({"/metadata/name": "Builder"}), "Invalid metadata.name")];
        run("v1", "ServiceAccount", &sa, &creates, &[]);
    }

    #[test]
    fn events() {
        let core = json!({"metadata": {"name": "web.17a3f", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
            "reason": "Started", "type": "Normal"});
        let creates = [
            ("valid", json!({}), ""),
            ("any name", json!({"/metadata/name": "Web_1:x"}), ""),
            ("no name", json!({"/metadata/name": null}), "Required metadata.name"),
            ("slash", json!({"/metadata/name": "a/b"}), "Invalid metadata.name"),
            ("dot dot", json!({"/metadata/name": ".."}), "Invalid metadata.name"),
            (
                "other namespace",
                json!({"/involvedObject/namespace": "kube-system"}),
                "Invalid involvedObject.namespace",
            ),
            ("cluster-scoped object", json!({"/involvedObject/namespace": null}), ""),
            (
                "new-style without reporter",
                json!({"/eventTime": "2024-01-01T00:00:00.000000Z", "/action": "Start"}),
                "Required source, Invalid source, Invalid source, Required reportingInstance",
            ),
        ];
        run("v1", "Event", &core, &creates, &[("count bump", json!({}), json!({"/count": 2}), "")]);

        let new_style = json!({"metadata": {"name": "web.17a3f", "namespace": "default"},
            "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "example.com/ctl",
            "reportingInstance": "ctl-1", "action": "Reconcile", "reason": "Synced", "type": "Normal",
            "regarding": {"kind": "Pod", "name": "web", "namespace": "default"}, "note": "ok"});
        let creates = [
            ("valid", json!({}), ""),
            ("no eventTime", json!({"/eventTime": null}), "Required eventTime"),
            ("type", json!({"/type": "Info"}), "Invalid type"),
            ("no action", json!({"/action": null}), "Required action"),
            ("long reason", json!({"/reason": "r".repeat(129)}), "Invalid reason"),
            ("deprecated fields", json!({"/deprecatedCount": 3}), "Invalid count"),
            ("bad name", json!({"/metadata/name": "Web_1"}), "Invalid metadata.name"),
            (
                "node event outside default",
                json!({"/metadata/namespace": "ns", "/regarding/namespace": null}),
                "Invalid involvedObject.namespace",
            ),
            ("series", json!({"/series": {"count": 1}}), "Invalid series.count, Required series.lastObservedTime"),
        ];
        let updates = [
            (
                "series",
                json!({}),
                json!({"/series": {"count": 2, "lastObservedTime": "2024-01-01T00:00:01.000000Z"}}),
                "",
            ),
            ("note change", json!({}), json!({"/note": "changed"}), "Invalid message"),
        ];
        run("events.k8s.io/v1", "Event", &new_style, &creates, &updates);
    }

    #[test]
    fn config_maps_and_secrets() {
        let cm = json!({"metadata": {"name": "cfg", "namespace": "default"}, "data": {"app.conf": "x", "KEY_1": "y"},
            "binaryData": {"b.bin": "AAEC"}});
        let creates = [
            ("valid", json!({}), ""),
            ("bad key", json!({"/data/a b": "x"}), "Invalid data[a b]"),
            ("dot dot key", json!({"/data/..x": "x"}), "Invalid data[..x]"),
            ("key in both", json!({"/data/b.bin": "x"}), "Invalid data[b.bin]"),
            ("bad base64", json!({"/binaryData/b.bin": "AAE"}), "Invalid binaryData[b.bin]"),
            ("value not a string", json!({"/data/n": 1}), "Invalid data[n]"),
            ("too big", json!({"/data/big": "x".repeat(MAX_SECRET_SIZE)}), "TooLong "),
        ];
        let immutable = json!({"/immutable": true});
        let updates = [
            ("mutable", json!({}), json!({"/data/app.conf": "z"}), ""),
            ("immutable data", immutable.clone(), json!({"/immutable": true, "/data/app.conf": "z"}), "Forbidden data"),
            ("unmarked", immutable.clone(), json!({}), "Forbidden immutable"),
        ];
        run("v1", "ConfigMap", &cm, &creates, &updates);

        let secret = json!({"metadata": {"name": "creds", "namespace": "default"}, "type": "Opaque",
            "data": {"password": "aHVudGVyMg=="}});
        let token = json!({"/type": "kubernetes.io/service-account-token",
            "/metadata/annotations/kubernetes.io~1service-account.name": "default"});
        let creates = [
            ("valid", json!({}), ""),
            ("bad key", json!({"/data/pass word": "eA=="}), "Invalid data[pass word]"),
            ("not base64", json!({"/data/password": "hunter2!"}), "Invalid data[password]"),
            ("tls", json!({"/type": "kubernetes.io/tls", "/data/tls.crt": ""}), "Required data[tls.key]"),
            ("basic auth", json!({"/type": "kubernetes.io/basic-auth"}), ""),
            (
                "token",
                json!({"/type": "kubernetes.io/service-account-token"}),
                "Required metadata.annotations[kubernetes.io/service-account.name]",
            ),
            ("token for an account", token, ""),
            ("leftover stringData", json!({"/stringData": {"a": 1}}), "Invalid stringData[a]"),
        ];
        let updates = [
            ("type change", json!({}), json!({"/type": "kubernetes.io/basic-auth"}), "Invalid type"),
            ("immutable", immutable, json!({"/immutable": true, "/data/password": "eA=="}), "Forbidden data"),
        ];
        run("v1", "Secret", &secret, &creates, &updates);
    }

    #[test]
    fn leases_and_custom_resources() {
        let lease = json!({"metadata": {"name": "ctl", "namespace": "kube-system"},
            "spec": {"holderIdentity": "a", "leaseDurationSeconds": 15, "leaseTransitions": 0}});
        let creates = [
            ("valid", json!({}), ""),
            ("zero duration", json!({"/spec/leaseDurationSeconds": 0}), "Invalid spec.leaseDurationSeconds"),
            ("no duration", json!({"/spec/leaseDurationSeconds": null}), ""),
            ("negative transitions", json!({"/spec/leaseTransitions": -1}), "Invalid spec.leaseTransitions"),
        ];
        let renew = json!({"/spec/renewTime": "2024-01-01T00:00:00.000000Z"});
        run("coordination.k8s.io/v1", "Lease", &lease, &creates, &[("renew", json!({}), renew, "")]);

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

    #[test]
    fn services_and_disruption_budgets() {
        let svc = json!({"metadata": {"name": "web", "namespace": "default"},
            "spec": {"type": "ClusterIP", "sessionAffinity": "None", "selector": {"app": "web"},
                "clusterIP": "10.96.0.10", "clusterIPs": ["10.96.0.10"],
                "ports": [{"port": 80, "protocol": "TCP", "targetPort": 8080}]}});
        let creates = [
            ("valid", json!({}), ""),
            ("name must start with a letter", json!({"/metadata/name": "1web"}), "Invalid metadata.name"),
            ("no ports", json!({"/spec/ports": []}), "Required spec.ports"),
            (
                "headless needs no ports",
                json!({"/spec/ports": [], "/spec/clusterIP": "None", "/spec/clusterIPs": ["None"]}),
                "",
            ),
            ("named target port", json!({"/spec/ports/0/targetPort": "http"}), ""),
            ("bad port", json!({"/spec/ports/0/port": 0}), "Invalid spec.ports[0].port"),
            (
                "second port unnamed",
                json!({"/spec/ports/1": {"port": 81, "protocol": "TCP", "name": ""}, "/spec/ports/0/name": "a"}),
                "Required spec.ports[1].name",
            ),
            ("protocol", json!({"/spec/ports/0/protocol": "HTTP"}), "NotSupported spec.ports[0].protocol"),
            ("node port on ClusterIP", json!({"/spec/ports/0/nodePort": 30080}), "Forbidden spec.ports[0].nodePort"),
            ("type", json!({"/spec/type": "Fancy"}), "NotSupported spec.type"),
            ("bad IP", json!({"/spec/clusterIPs": ["ten"], "/spec/clusterIP": "ten"}), "Invalid spec.clusterIPs[0]"),
            (
                "external name",
                json!({"/spec/type": "ExternalName", "/spec/clusterIP": null, "/spec/clusterIPs": null}),
                "Required spec.externalName",
            ),
        ];
        let updates = [
            ("keeps its address", json!({}), json!({"/spec/ports/0/port": 81}), ""),
            (
                "address changed",
                json!({}),
                json!({"/spec/clusterIP": "10.96.0.11", "/spec/clusterIPs": ["10.96.0.11"]}),
                "Invalid spec.clusterIPs[0]",
            ),
        ];
        run("v1", "Service", &svc, &creates, &updates);

        let pdb = json!({"metadata": {"name": "web", "namespace": "default"},
            "spec": {"minAvailable": "50%", "selector": {"matchLabels": {"app": "web"}}}});
        let creates = [
            ("valid", json!({}), ""),
            ("both", json!({"/spec/maxUnavailable": 1}), "Invalid spec"),
            ("over 100%", json!({"/spec/minAvailable": "150%"}), "Invalid spec.minAvailable"),
            ("negative", json!({"/spec/minAvailable": -1}), "Invalid spec.minAvailable"),
            (
                "policy",
                json!({"/spec/unhealthyPodEvictionPolicy": "Never"}),
                "NotSupported spec.unhealthyPodEvictionPolicy",
            ),
        ];
        run("policy/v1", "PodDisruptionBudget", &pdb, &creates, &[]);
    }

    #[test]
    fn roles_and_bindings() {
        let role = json!({"metadata": {"name": "system:reader", "namespace": "default"},
            "rules": [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]});
        let creates = [
            ("valid (colons are fine)", json!({}), ""),
            ("slash in name", json!({"/metadata/name": "a/b"}), "Invalid metadata.name"),
            ("no verbs", json!({"/rules/0/verbs": []}), "Required rules[0].verbs"),
            ("no groups", json!({"/rules/0/apiGroups": null}), "Required rules[0].apiGroups"),
            (
                "urls in a namespace",
                json!({"/rules/1": {"verbs": ["get"], "nonResourceURLs": ["/x"]}}),
                "Invalid rules[1].nonResourceURLs",
            ),
        ];
        run("rbac.authorization.k8s.io/v1", "Role", &role, &creates, &[]);
        let cluster_role = json!({"metadata": {"name": "reader"},
            "rules": [{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}]});
        let creates = [
            ("urls cluster-wide", json!({}), ""),
            ("both kinds of rule", json!({"/rules/0/resources": ["pods"]}), "Invalid rules[0].nonResourceURLs"),
            ("empty aggregation", json!({"/aggregationRule": {}}), "Required aggregationRule.clusterRoleSelectors"),
        ];
        run("rbac.authorization.k8s.io/v1", "ClusterRole", &cluster_role, &creates, &[]);

        let rb = json!({"metadata": {"name": "read", "namespace": "default"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "ctl"},
                {"kind": "User", "name": "alice", "apiGroup": "rbac.authorization.k8s.io"}]});
        let creates = [
            ("valid", json!({}), ""),
            (
                "no roleRef",
                json!({"/roleRef": null}),
                "NotSupported roleRef.apiGroup, NotSupported roleRef.kind, Required roleRef.name",
            ),
            ("kind", json!({"/roleRef/kind": "Group"}), "NotSupported roleRef.kind"),
            ("subject kind", json!({"/subjects/0/kind": "Robot"}), "NotSupported subjects[0].kind"),
            ("user group", json!({"/subjects/1/apiGroup": ""}), "NotSupported subjects[1].apiGroup"),
            ("unnamed", json!({"/subjects/0/name": ""}), "Required subjects[0].name"),
        ];
        let updates = [
            ("subjects change", json!({}), json!({"/subjects/1/name": "bob"}), ""),
            ("role changes", json!({}), json!({"/roleRef/name": "writer"}), "Invalid roleRef"),
        ];
        run("rbac.authorization.k8s.io/v1", "RoleBinding", &rb, &creates, &updates);
        let crb = json!({"metadata": {"name": "read"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"},
            "subjects": [{"kind": "ServiceAccount", "name": "ctl", "namespace": "wasmcm"}]});
        let creates = [
            ("valid", json!({}), ""),
            ("role", json!({"/roleRef/kind": "Role"}), "NotSupported roleRef.kind"),
            (
                "service account without namespace",
                json!({"/subjects/0/namespace": null}),
                "Required subjects[0].namespace",
            ),
        ];
        run("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", &crb, &creates, &[]);
        let message = &validate(
            "rbac.authorization.k8s.io/v1",
            "RoleBinding",
            &{
                let mut new = rb.clone();
                edit(&mut new, &json!({"/roleRef/name": "writer"}));
                new
            },
            Some(&rb),
        )[0]
        .message;
        assert_eq!(
            message,
            "Invalid value: rbac.RoleRef{APIGroup:\"rbac.authorization.k8s.io\", Kind:\"Role\", Name:\"writer\"}: cannot change roleRef"
        );
    }

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

    fn message(api_version: &str, kind: &str, object: &Value, old: Option<&Value>, field: &str) -> String {
        let causes = validate(api_version, kind, object, old);
        let found = causes.iter().find(|c| c.field == field);
        found.map(|c| c.message.clone()).unwrap_or_else(|| panic!("no cause at {field}: {causes:#?}"))
    }

    #[test]
    fn messages_match_upstream() {
        let subdomain = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or \
            '.', \
            and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is \
            '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
        let label_key = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end \
            with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation \
            is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
        let pod_update = "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,\
            `spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to \
            existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously \
            negative)\n  spec.nodeName: \"node-1\" -> \"node-2\"";
        let selector = "v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"api\"}, \
            MatchExpressions:[]v1.LabelSelectorRequirement(nil)}";
        let empty_selector =
            "v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}";
        let mismatch = "Invalid value: map[string]string{\"app\":\"web\", \"tier\":\"front\"}: `selector` does not \
            match template `labels`";
        let big = json!({"/metadata/annotations": {"a": "x".repeat(TOTAL_ANNOTATION_SIZE)}});
        let over = json!({"/spec/template/spec/containers/0/resources":
            {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}});
        let crd = json!({"/metadata/name": "x.example.com",
            "/spec": {"group": "example.com", "names": {"plural": "widgets"}}});
        let moved = json!({"/spec/nodeName": "node-2", "/spec/containers/0/image": "nginx:2"});
        let d = "Deployment";
        let cases: &[(&str, Value, Option<Value>, &str, String)] = &[
            (
                d,
                json!({"/metadata/name": "Foo_Bar"}),
                None,
                "metadata.name",
                format!("Invalid value: \"Foo_Bar\": {subdomain}"),
            ),
            (
                d,
                json!({"/metadata/labels": {"-x": "ok"}}),
                None,
                "metadata.labels",
                format!("Invalid value: \"-x\": {label_key}"),
            ),
            (
                d,
                json!({"/spec/selector/matchLabels/app": "api"}),
                None,
                "spec.template.metadata.labels",
                mismatch.into(),
            ),
            (
                d,
                json!({"/spec/selector/matchLabels/app": "api", "/spec/template/metadata/labels/app": "api"}),
                Some(json!({})),
                "spec.selector",
                format!("Invalid value: {selector}: field is immutable"),
            ),
            (
                d,
                json!({"/spec/selector": {}}),
                None,
                "spec.selector",
                format!("Invalid value: {empty_selector}: empty selector is invalid for deployment"),
            ),
            (
                d,
                json!({"/spec/strategy/rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}}),
                None,
                "spec.strategy.rollingUpdate.maxUnavailable",
                "Invalid value: 0: may not be 0 when `maxSurge` is 0".into(),
            ),
            (
                d,
                json!({"/spec/strategy/type": "Recreate"}),
                None,
                "spec.strategy.rollingUpdate",
                "Forbidden: may not be specified when strategy `type` is 'Recreate'".into(),
            ),
            (
                d,
                json!({"/spec/template/spec/restartPolicy": "Never"}),
                None,
                "spec.template.spec.restartPolicy",
                "Unsupported value: \"Never\": supported values: \"Always\"".into(),
            ),
            (
                d,
                json!({"/spec/template/spec/containers/1": container()}),
                None,
                "spec.template.spec.containers[1].name",
                "Duplicate value: \"web\"".into(),
            ),
            (
                d,
                json!({"/spec/template/spec/containers": []}),
                None,
                "spec.template.spec.containers",
                "Required value".into(),
            ),
            (
                d,
                json!({"/metadata/name": null}),
                None,
                "metadata.name",
                "Required value: name or generateName is required".into(),
            ),
            (d, big, None, "metadata.annotations", "Too long: must have at most 262144 bytes".into()),
            (
                d,
                over,
                None,
                "spec.template.spec.containers[0].resources.requests",
                "Invalid value: \"2\": must be less than or equal to cpu limit of 1".into(),
            ),
            ("Pod", moved, Some(json!({"/spec/nodeName": "node-1"})), "spec", pod_update.into()),
            (
                "Namespace",
                json!({"/metadata/name": "a.b"}),
                None,
                "metadata.name",
                "Invalid value: \"a.b\": must not contain dots".into(),
            ),
            (
                "Namespace",
                json!({"/metadata/namespace": "x"}),
                None,
                "metadata.namespace",
                "Forbidden: not allowed on this type".into(),
            ),
            (
                "CustomResourceDefinition",
                crd,
                None,
                "metadata.name",
                "Invalid value: \"x.example.com\": must be spec.names.plural+\".\"+spec.group".into(),
            ),
        ];
        for (kind, edits, old_edits, field, want) in cases {
            let (api_version, mut object) = match *kind {
                "Deployment" => ("apps/v1", deployment()),
                "Pod" => ("v1", pod()),
                "Namespace" => ("v1", json!({"metadata": {"name": "a"}})),
                _ => ("apiextensions.k8s.io/v1", json!({})),
            };
            let old = old_edits.as_ref().map(|e| {
                let mut old = object.clone();
                edit(&mut old, e);
                old
            });
            edit(&mut object, edits);
            assert_eq!(&message(api_version, kind, &object, old.as_ref(), field), want, "{kind} {field}");
        }
    }

    #[test]
    fn name_formats() {
        type Check = fn(&str) -> Vec<String>;
        let cases: &[(Check, &str, bool)] = &[
            (dns1123_subdomain, "a", true),
            (dns1123_subdomain, "a.b-c.d", true),
            (dns1123_subdomain, "0abc", true),
            (dns1123_subdomain, "-a", false),
            (dns1123_subdomain, "a.", false),
            (dns1123_subdomain, "a..b", false),
            (dns1123_subdomain, "A", false),
            (dns1123_subdomain, "", false),
            (dns1123_label, "a-b", true),
            (dns1123_label, "a.b", false),
            (dns1123_label, "a-", false),
            (dns1035_label, "v1", true),
            (dns1035_label, "1v", false),
            (qualified_name, "a", true),
            (qualified_name, "A.b_c-D", true),
            (qualified_name, "example.com/a", true),
            (qualified_name, "/a", false),
            (qualified_name, "example.com/", false),
            (qualified_name, "Example.com/a", false),
            (qualified_name, "a/b/c", false),
            (qualified_name, "_a", false),
            (label_value, "", true),
            (label_value, "a_b.c-d", true),
            (label_value, "a b", false),
            (config_key, "a.b_C-1", true),
            (config_key, ".", false),
            (config_key, "..a", false),
            (config_key, "a/b", false),
            (port_name, "http", true),
            (port_name, "8080", false),
            (port_name, "-http", false),
            (port_name, "very-long-port-name", false),
        ];
        for (check, value, ok) in cases {
            assert_eq!(check(value).is_empty(), *ok, "{value}: {:?}", check(value));
        }
        assert_eq!(dns1123_label(&"a".repeat(64)), vec![max_len(63)]);
        assert!(name_errors(NameRule::Subdomain, "web-", true).is_empty());
        assert_eq!(name_errors(NameRule::Label, "-", true).len(), 1);
        assert_eq!(wasmcm_core::quantity::nanos("1Gi"), Some(1_073_741_824_000_000_000));
        assert_eq!(wasmcm_core::quantity::nanos("250m"), Some(250_000_000));
        assert_eq!(wasmcm_core::quantity::nanos("1.5"), wasmcm_core::quantity::nanos("1500m"));
        assert_eq!(wasmcm_core::quantity::nanos("5x"), None);
        // Absurd sizes saturate instead of overflowing.
        assert_eq!(
            wasmcm_core::quantity::nanos(&format!("{}.{}", "9".repeat(60), "9".repeat(20))),
            Some(i128::MAX / 100_000_000_000)
        );
    }

    #[test]
    fn semantic_equality() {
        let same = [
            (json!(null), json!({})),
            (json!({"a": []}), json!({})),
            (json!({"a": {"b": null}}), json!({"a": {}})),
            (json!({"a": false, "b": 0, "c": ""}), json!({})),
            (json!(1), json!(1.0)),
        ];
        for (a, b) in same {
            assert!(semantic_eq(Some(&a), Some(&b)) && semantic_eq(Some(&b), Some(&a)), "{a} {b}");
        }
        let different = [
            (json!({"a": 1}), json!({})),
            (json!([{}]), json!([])),
            (json!("a"), json!("b")),
            (json!([1, 2]), json!([2, 1])),
        ];
        for (a, b) in different {
            assert!(!semantic_eq(Some(&a), Some(&b)), "{a} {b}");
        }
    }

    #[test]
    fn odd_json_never_panics() {
        let kinds = [
            ("apps/v1", "Deployment"),
            ("apps/v1", "ReplicaSet"),
            ("v1", "Pod"),
            ("v1", "Namespace"),
            ("v1", "Node"),
            ("v1", "Event"),
            ("events.k8s.io/v1", "Event"),
            ("v1", "ConfigMap"),
            ("v1", "Secret"),
            ("v1", "ServiceAccount"),
            ("coordination.k8s.io/v1", "Lease"),
            ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
            ("example.com/v1", "Widget"),
        ];
        let weird = [
            json!({}),
            json!({"metadata": null, "spec": null, "status": null}),
            json!({"metadata": 1, "spec": "x", "data": [], "type": 3}),
            json!({"metadata": {"name": [], "namespace": {}, "labels": [], "annotations": "x", "ownerReferences": {},
                "finalizers": [1, null]}}),
            json!({"metadata": {"name": "é/..", "generateName": "é-", "labels": {"é": "ü"}}, "regarding": 1,
                "involvedObject": [], "eventTime": 5}),
            json!({"spec": {"selector": [], "template": {"metadata": 1, "spec": {"containers": [null, 1,
                {"name": 1, "ports": "x", "env": [1], "resources": {"limits": {"cpu": [], "memory": "1é"}}}]}}}}),
            json!({"spec": {"containers": {"a": 1}, "tolerations": [1], "volumes": [{"name": "v", "a": 1, "b": 2}],
                "activeDeadlineSeconds": 1e100}}),
            json!({"spec": {"strategy": {"type": "RollingUpdate",
                "rollingUpdate": {"maxSurge": [], "maxUnavailable": "99999999999999999999%"}}}}),
            json!({"spec": {"versions": [1, {"schema":
                {"openAPIV3Schema": {"properties": {"a": 1, "b": {"items": 2}}}}}],
                "names": "x",
                "conversion": 1}, "status": {"storedVersions": "v1"}}),
            json!({"data": {"a": "=", "b": "ab=c", "c": "é"}, "binaryData": {"d": 1}, "series": [],
                "spec": {"leaseDurationSeconds": "x", "taints": [1, {"key": 2}]}}),
        ];
        for (api_version, kind) in kinds {
            for object in &weird {
                for old in [None, Some(&weird[0]), Some(object), Some(&json!("not an object"))] {
                    let _ = validate(api_version, kind, object, old);
                }
            }
            let causes = validate(api_version, kind, &json!([1]), None);
            assert_eq!(causes.len(), 1);
            assert_eq!((causes[0].reason, causes[0].field.as_str()), (INVALID, ""));
        }
    }
}
