//! Deployments and ReplicaSets: `pkg/apis/apps/validation` and the update rules of
//! `pkg/registry/apps/{deployment,replicaset}/strategy.go`, including the int-or-percent rule that
//! upstream's policy validation borrows from this package.
//!
//! It owns the workload spec: replicas, selector (and that it matches the template), strategy and
//! the template's restart rules. The template's metadata and pod spec are checked with `meta`'s
//! and `pods`' rules, unchanged; nothing pod-specific belongs here. DaemonSets and StatefulSets
//! share `workload` (their own rules are `workloads`').

use std::collections::BTreeMap;

use serde_json::{Map, Value};
use wasmcm_core::Selector;
use wasmcm_core::validation::regex_error;

use super::meta::{NameRule, Scope, annotations, labels, meta, selector};
use super::pods::pod_spec;
use super::{Obj, V, deep_empty, go_strings, json_short, q, semantic_eq};

/// What a workload's template labels are checked against: its selector as upstream converts it
/// (`metav1.LabelSelectorAsSelector`) for `ValidatePodTemplateSpecForReplicaSet`.
enum TemplateCheck {
    /// No selector: labels.Nothing(), which no template matches.
    Nothing,
    /// A valid, non-empty selector the template's labels must match.
    Match(Selector),
    /// Not checked: an empty selector is labels.Everything(), whose Empty() skips the check, and
    /// one that did not convert has been reported already.
    Skip,
}

/// The rules Deployments, ReplicaSets, DaemonSets and StatefulSets share (`kind` is which one):
/// replicas, the selector and that the template matches it, the template's pod spec and restart
/// rules, and (but for StatefulSets, whose update rule covers it) the immutable selector.
pub(crate) fn workload(v: &mut V, obj: &Value, old: Option<&Value>, kind: &str) {
    let deployment = kind == "Deployment";
    // Upstream's messages name the kind; ReplicaSets kept the Deployment's wording.
    let selector_kind = match kind {
        "DaemonSet" => "daemonset",
        "StatefulSet" => "statefulset",
        _ => "deployment",
    };
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
    let check = match sel {
        None => {
            // A DaemonSet's missing selector is only reported as the template mismatch.
            if sel_value.is_none() && kind != "DaemonSet" {
                v.required("spec.selector", "");
            }
            TemplateCheck::Nothing
        }
        Some(s) => {
            let converted = selector(v, s, "spec.selector");
            if deep_empty(s.get("matchLabels")) && deep_empty(s.get("matchExpressions")) {
                v.invalid(
                    "spec.selector",
                    &go_selector(sel_value),
                    &format!("empty selector is invalid for {selector_kind}"),
                );
            }
            if converted.is_none() {
                v.invalid("spec.selector", &go_selector(sel_value), "invalid label selector");
            }
            match converted {
                Some(selector) if !selector.is_empty() => TemplateCheck::Match(selector),
                _ => TemplateCheck::Skip,
            }
        }
    };

    let tmpl = v.obj(spec.get("template"), "spec.template").unwrap_or(&empty);
    let tmeta = v.obj(tmpl.get("metadata"), "spec.template.metadata").unwrap_or(&empty);
    let template_labels = tmeta
        .get("labels")
        .and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.as_str(), v))).collect::<Vec<_>>());
    let matched = match &check {
        TemplateCheck::Nothing => false,
        TemplateCheck::Match(selector) => {
            let labels: BTreeMap<String, String> =
                template_labels.iter().flatten().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
            selector.matches(&labels)
        }
        TemplateCheck::Skip => true,
    };
    if !matched {
        let shown = go_map(template_labels.as_deref());
        v.invalid("spec.template.metadata.labels", &shown, "`selector` does not match template `labels`");
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
        let message =
            format!("activeDeadlineSeconds in {} is not Supported", if deployment { "ReplicaSet" } else { kind });
        v.forbidden("spec.template.spec.activeDeadlineSeconds", &message);
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
    if let Some(old) = old.filter(|_| kind != "StatefulSet") {
        let old_sel = old.pointer("/spec/selector");
        if !semantic_eq(sel_value, old_sel) {
            v.invalid("spec.selector", &go_selector(sel_value), "field is immutable");
        }
    }
}

pub(super) enum IntOrStr<'a> {
    Int(i64),
    Str(&'a str),
}

impl IntOrStr<'_> {
    /// How `intstr.IntOrString.String()` prints it.
    pub(super) fn shown(&self) -> String {
        match self {
            IntOrStr::Int(i) => i.to_string(),
            IntOrStr::Str(s) => (*s).to_owned(),
        }
    }

    pub(super) fn percent(&self) -> Option<i64> {
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

pub(super) fn int_or_percent<'a>(v: &mut V, val: Option<&'a Value>, field: &str) -> Option<IntOrStr<'a>> {
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

pub(super) fn go_map(pairs: Option<&[(&str, &str)]>) -> String {
    let Some(pairs) = pairs else { return "map[string]string(nil)".into() };
    let mut pairs = pairs.to_vec();
    pairs.sort();
    let body = pairs.iter().map(|(k, v)| format!("{}:{}", q(k), q(v))).collect::<Vec<_>>().join(", ");
    format!("map[string]string{{{body}}}")
}

/// Go's `%#v` of a `metav1.LabelSelector`, as kubectl users see it in "field is immutable".
pub(super) fn go_selector(sel: Option<&Value>) -> String {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validation::meta::TOTAL_ANNOTATION_SIZE;
    use crate::validation::tests::{container, deployment, edit, run};
    use serde_json::json;

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
}
