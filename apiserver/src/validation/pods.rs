//! Pods: `pkg/apis/core/validation` (ValidatePodSpec, ValidatePodCreate, ValidatePodUpdate) for
//! the fields controllers and kubectl depend on. The pod spec rules are also the ones a workload's
//! pod template is checked with, so `pod_spec` is shared with `apps`.
//!
//! Part of the core group, in a file of its own for its size; the other core kinds are in `core`.
//! It owns the pod spec and the pod update rules; metadata is `meta`'s, and what a template's
//! owner adds (restart policy, selector) is the owner's group's.

use serde_json::{Map, Value};
use wasmcm_core::validation::{dns1123_label, dns1123_subdomain, label_value, qualified_name};

use super::core::{config_key, taint_effect};
use super::meta::{NameRule, Scope, labels, meta, name_errors};
use super::{Obj, V, child, deep_empty, idx, json_short, key, one_of, port_name, port_number, q, semantic_eq, show};

const QUANTITY_MSG: &str =
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'";
const MAX_INT32: i64 = i32::MAX as i64;

// Pods (pkg/apis/core/validation: ValidatePodSpec, ValidatePodCreate, ValidatePodUpdate).

const POD_UPDATABLE: &str = "`spec.containers[*].image`,`spec.initContainers[*].image`,\
    `spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to existing tolerations),\
    `spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)";

pub(crate) fn pod(v: &mut V, obj: &Value, old: Option<&Value>) {
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

pub(super) fn pod_spec(v: &mut V, spec: Option<&Value>, path: &str) {
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

/// Fields an ephemeral container may not set (upstream's `allowedEphemeralContainerFields` is
/// the complement): they serve what ephemeral containers must not be relied upon for.
const NOT_FOR_EPHEMERAL: &[&str] = &[
    "ports",
    "resources",
    "resizePolicy",
    "lifecycle",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "restartPolicy",
    "restartPolicyRules",
];

/// An update through `pods/ephemeralcontainers` (`ValidatePodEphemeralContainersUpdate`): the
/// pod is valid with its ephemeral containers (`validateEphemeralContainers`), and those it had
/// are neither removed nor changed. Only `spec.ephemeralContainers` differs from `old` by the
/// time this runs (the strategy took nothing else).
pub(super) fn ephemeral_update(v: &mut V, new: &Value, old: &Value) {
    meta(v, new, Some(old), Scope::Namespaced, NameRule::Subdomain, true);
    pod_spec(v, new.get("spec"), "spec");
    if old.pointer("/metadata/annotations/kubernetes.io~1config.mirror").is_some() {
        v.forbidden("", "static pods do not support ephemeral containers");
        return;
    }
    const PATH: &str = "spec.ephemeralContainers";
    let empty = Map::new();
    let spec = new.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    let volumes: Vec<&str> = spec
        .get("volumes")
        .and_then(Value::as_array)
        .map(|vs| vs.iter().filter_map(|v| v.get("name").and_then(Value::as_str)).collect())
        .unwrap_or_default();
    let mut others: Vec<&str> = Vec::new();
    for list in ["containers", "initContainers"] {
        for c in spec.get(list).and_then(Value::as_array).into_iter().flatten() {
            others.push(c.get("name").and_then(Value::as_str).unwrap_or(""));
        }
    }
    let mut all = others.clone();
    let items = v.objs(spec.get("ephemeralContainers"), PATH);
    for (cpath, c) in &items {
        let name = container(v, c, cpath, &volumes, false);
        if all.contains(&name) {
            v.duplicate(&child(cpath, "name"), &q(name));
        } else {
            all.push(name);
        }
        let target = c.get("targetContainerName").and_then(Value::as_str).unwrap_or("");
        if !target.is_empty() && !others.contains(&target) {
            v.not_found(&child(cpath, "targetContainerName"), &q(target));
        }
        for field in NOT_FOR_EPHEMERAL {
            if !deep_empty(c.get(*field)) {
                v.forbidden(&child(cpath, field), "cannot be set for an Ephemeral Container");
            }
        }
        for (mpath, m) in v.objs(c.get("volumeMounts"), &child(cpath, "volumeMounts")) {
            for field in ["subPath", "subPathExpr"] {
                if !deep_empty(m.get(field)) {
                    v.forbidden(&child(&mpath, field), "cannot be set for an Ephemeral Container");
                }
            }
        }
    }
    let new_list: Vec<&Obj> = items.iter().map(|(_, c)| *c).collect();
    for o in old.pointer("/spec/ephemeralContainers").and_then(Value::as_array).into_iter().flatten() {
        let name = o.get("name").and_then(Value::as_str).unwrap_or("");
        match new_list.iter().find(|c| c.get("name").and_then(Value::as_str) == Some(name)) {
            None => v.forbidden(PATH, &format!("existing ephemeral containers {name:?} may not be removed\n")),
            Some(c) if !semantic_eq(Some(o), Some(&Value::Object((*c).clone()))) => {
                let mut changes = Vec::new();
                diff(Some(o), Some(&Value::Object((*c).clone())), "", &mut changes);
                v.forbidden(
                    PATH,
                    &format!("existing ephemeral containers {name:?} may not be changed\n{}", changes.join("\n")),
                );
            }
            Some(_) => {}
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::tests::{edit, pod, run};
    use serde_json::json;

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
}
