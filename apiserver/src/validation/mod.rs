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
//!
//! The rules are split by API group, as upstream splits them; each file says what it owns:
//!
//! - `meta`: ObjectMeta and label selectors, which every kind shares (apimachinery).
//! - `core`, `pods`, `events`: the core (`v1`) group; `events` also serves events.k8s.io/v1,
//!   whose Events upstream validates with the core ones.
//! - `apps`: Deployments and ReplicaSets, and the selector and template rules the other apps
//!   workloads share.
//! - `workloads`: DaemonSets, StatefulSets, ReplicationControllers, Jobs and CronJobs (with a
//!   port of robfig/cron's schedule parser for its error texts).
//! - `coordination`: Leases.
//! - `policy`: PodDisruptionBudgets.
//! - `certificates`: CertificateSigningRequests.
//! - `apiregistration`: APIServices.
//! - `rbac`: Roles, ClusterRoles and their bindings.
//! - `apiextensions`: CustomResourceDefinitions.
//!
//! Each kind's `Strategy` names its rules ([`Rules`], [`StatusRules`]). This file holds what the
//! groups share: the entry points, the cause collector `V` with its typed access to untrusted JSON, and small helpers that read JSON or
//! render values the way upstream prints them. A group file reaches into another only where
//! upstream does (a workload's pod template is checked with the pod rules, a disruption budget's
//! bounds with the apps int-or-percent rule).

pub(crate) mod apiextensions;
pub(crate) mod apiregistration;
pub(crate) mod apps;
pub(crate) mod certificates;
pub(crate) mod coordination;
pub(crate) mod core;
pub(crate) mod events;
mod meta;
pub(crate) mod pods;
pub(crate) mod policy;
pub(crate) mod rbac;
#[cfg(test)]
mod tests;
pub(crate) mod workloads;

use serde_json::{Map, Value};
use wasmcm_core::Cause;
use wasmcm_core::validation::max_len;

use meta::{NameRule, Scope, meta};

/// A kind's rules on create (`old` None) and update (`old` the stored object), as its
/// `Strategy` names them.
pub(crate) type Rules = fn(&mut V, &Value, Option<&Value>);

/// A kind's rules on a write to its status: the stored object with the new status, and the
/// stored one.
pub(crate) type StatusRules = fn(&mut V, &Value, &Value);

/// Validates `object` (already defaulted) under `rules`. Returns every problem found; empty =
/// valid.
pub(crate) fn validate(rules: Rules, object: &Value, old: Option<&Value>) -> Vec<Cause> {
    let mut v = V::default();
    if !object.is_object() {
        v.wrong_type("", object, "object");
        return v.causes;
    }
    // A stored object of the wrong shape cannot be compared against; validate as a create.
    rules(&mut v, object, old.filter(|o| o.is_object()));
    v.causes
}

/// Validates a write to the status subresource under `rules`: `object` is the stored object
/// with the new status, `old` the stored one.
pub(crate) fn validate_status(rules: StatusRules, object: &Value, old: &Value) -> Vec<Cause> {
    let mut v = V::default();
    rules(&mut v, object, old);
    v.causes
}

/// What the generic registry checks: custom resources and kinds without rules of their own.
pub(crate) fn generic(v: &mut V, object: &Value, old: Option<&Value>) {
    meta(v, object, old, Scope::Either, NameRule::Subdomain, false);
}

/// `object` of the built-in `api_version` and `kind` validated as its registered strategy
/// validates it (the generic rules for a kind not built in), for the rules' tests.
#[cfg(test)]
pub(crate) fn validate_kind(api_version: &str, kind: &str, object: &Value, old: Option<&Value>) -> Vec<Cause> {
    let registered = crate::registry::resources::Registry::default().by_kind(api_version, kind);
    validate(registered.map_or(generic as Rules, |t| t.strategy.validate), object, old)
}

/// Validates a pod updated through `pods/ephemeralcontainers`, whose strategy changes nothing
/// but `spec.ephemeralContainers` (upstream's `ValidatePodEphemeralContainersUpdate`).
pub(crate) fn validate_ephemeral_containers_update(new: &Value, old: &Value) -> Vec<Cause> {
    let mut v = V::default();
    pods::ephemeral_update(&mut v, new, old);
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
pub(crate) struct V {
    causes: Vec<Cause>,
}

impl V {
    fn add(&mut self, reason: &'static str, field: &str, message: String) {
        self.causes.push(Cause { reason: reason.into(), field: field.to_owned(), message });
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

fn text<'a>(v: Option<&'a Value>, pointer: &str) -> &'a str {
    v.and_then(|v| v.pointer(pointer)).and_then(Value::as_str).unwrap_or("")
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
