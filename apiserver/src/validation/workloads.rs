//! DaemonSets, StatefulSets, ReplicationControllers, Jobs and CronJobs: what
//! `pkg/apis/apps/validation`, `pkg/apis/core/validation` (ValidateReplicationController) and
//! `pkg/apis/batch/validation` check beyond the workload rules `apps` shares, and the update
//! rules of their registry strategies; a CronJob's schedule is parsed as robfig/cron v3's
//! `ParseStandard` does, with its error texts.
//!
//! It owns these kinds' specs. The template's metadata and pod spec are checked with `meta`'s and
//! `pods`' rules, the selector-and-template rule of the apps kinds with `apps`'.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use wasmcm_core::validation::dns1123_label;

use super::apps::{IntOrStr, go_map, go_selector, int_or_percent, workload};
use super::meta::{NameRule, Scope, annotations, labels, meta, selector};
use super::pods::pod_spec;
use super::{Obj, V, deep_empty, json_short, q, semantic_eq, show};

pub(crate) fn daemon_set(v: &mut V, obj: &Value, old: Option<&Value>) {
    workload(v, obj, old, "DaemonSet");
    let empty = Map::new();
    let spec = obj.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    let strategy = v.obj(spec.get("updateStrategy"), "spec.updateStrategy").unwrap_or(&empty);
    match strategy.get("type").and_then(Value::as_str).unwrap_or("") {
        "OnDelete" => {}
        "RollingUpdate" => match v.obj(strategy.get("rollingUpdate"), "spec.updateStrategy.rollingUpdate") {
            None => v.required("spec.updateStrategy.rollingUpdate", ""),
            Some(rolling) => rolling_update_daemon_set(v, rolling),
        },
        _ => v.unsupported(
            "spec.updateStrategy",
            &json_short(&Value::Object(strategy.clone())),
            &["RollingUpdate", "OnDelete"],
        ),
    }
    let history = v.int(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit");
    v.nonnegative("spec.revisionHistoryLimit", history);
}

/// ValidateRollingUpdateDaemonSet: both bounds are non-negative ints or percents of at most
/// 100%, and exactly one of them is non-zero.
fn rolling_update_daemon_set(v: &mut V, rolling: &Obj) {
    let path = |field: &str| format!("spec.updateStrategy.rollingUpdate.{field}");
    let unavailable = int_or_percent(v, rolling.get("maxUnavailable"), &path("maxUnavailable"));
    let surge = int_or_percent(v, rolling.get("maxSurge"), &path("maxSurge"));
    for (field, bound) in [("maxUnavailable", &unavailable), ("maxSurge", &surge)] {
        if let Some(b) = bound.as_ref().filter(|b| b.percent().is_some_and(|p| p > 100)) {
            v.invalid(&path(field), &b.shown(), "must not be greater than 100%");
        }
    }
    // getIntOrPercentValue: a percent counts by its number, anything unparsable as 0.
    let non_zero = |b: &Option<IntOrStr<'_>>| {
        b.as_ref().is_some_and(|b| b.percent().map_or_else(|| b.shown().parse::<i64>().unwrap_or(0) != 0, |p| p != 0))
    };
    match (non_zero(&unavailable), non_zero(&surge)) {
        (true, true) => {
            let shown = surge.as_ref().map(IntOrStr::shown).unwrap_or_default();
            v.invalid(&path("maxSurge"), &shown, "may not be set when maxUnavailable is non-zero");
        }
        (false, false) => v.required(&path("maxUnavailable"), "cannot be 0 when maxSurge is 0"),
        _ => {}
    }
}

/// What a StatefulSet's spec may change on update (ValidateStatefulSetUpdate).
const STATEFUL_SET_UPDATABLE: [&str; 7] = [
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "revisionHistoryLimit",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
];

pub(crate) fn stateful_set(v: &mut V, obj: &Value, old: Option<&Value>) {
    workload(v, obj, old, "StatefulSet");
    let empty = Map::new();
    let spec = obj.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    match spec.get("podManagementPolicy").and_then(Value::as_str).unwrap_or("") {
        "" => v.required("spec.podManagementPolicy", ""),
        "OrderedReady" | "Parallel" => {}
        other => v.invalid("spec.podManagementPolicy", &q(other), "must be 'OrderedReady' or 'Parallel'"),
    }
    let strategy = v.obj(spec.get("updateStrategy"), "spec.updateStrategy").unwrap_or(&empty);
    let rolling = strategy.get("rollingUpdate").filter(|r| !r.is_null());
    match strategy.get("type").and_then(Value::as_str).unwrap_or("") {
        "" => v.required("spec.updateStrategy", ""),
        "OnDelete" => {
            if let Some(r) = rolling {
                v.invalid(
                    "spec.updateStrategy.rollingUpdate",
                    &json_short(r),
                    "only allowed for updateStrategy 'RollingUpdate'",
                );
            }
        }
        "RollingUpdate" => {
            if let Some(r) = v.obj(rolling, "spec.updateStrategy.rollingUpdate") {
                let partition = v.int(r.get("partition"), "spec.updateStrategy.rollingUpdate.partition");
                v.nonnegative("spec.updateStrategy.rollingUpdate.partition", partition);
                if r.get("maxUnavailable").is_some_and(|m| !m.is_null()) {
                    let path = "spec.updateStrategy.rollingUpdate.maxUnavailable";
                    if let Some(m) = int_or_percent(v, r.get("maxUnavailable"), path) {
                        if m.percent().map_or_else(|| m.shown() == "0", |p| p == 0) {
                            v.invalid(path, &m.shown(), "cannot be 0");
                        }
                        if m.percent().is_some_and(|p| p > 100) {
                            v.invalid(path, &m.shown(), "must not be greater than 100%");
                        }
                    }
                }
            }
        }
        _ => v.invalid(
            "spec.updateStrategy",
            &json_short(&Value::Object(strategy.clone())),
            "must be 'RollingUpdate' or 'OnDelete'",
        ),
    }
    if let Some(policy) =
        v.obj(spec.get("persistentVolumeClaimRetentionPolicy"), "spec.persistentVolumeClaimRetentionPolicy")
    {
        for field in ["whenDeleted", "whenScaled"] {
            let value = policy.get(field).and_then(Value::as_str).unwrap_or("");
            if !matches!(value, "Retain" | "Delete") {
                let path = format!("spec.persistentVolumeClaimRetentionPolicy.{field}");
                v.unsupported(&path, &q(value), &["Retain", "Delete"]);
            }
        }
    }
    let history = v.int(spec.get("revisionHistoryLimit"), "spec.revisionHistoryLimit");
    v.nonnegative("spec.revisionHistoryLimit", history);
    if let Some(ordinals) = v.obj(spec.get("ordinals"), "spec.ordinals") {
        let start = v.int(ordinals.get("start"), "spec.ordinals.start");
        v.nonnegative("spec.ordinals.start", start);
    }
    // The governing Service's name becomes part of the pods' DNS names.
    let service = v.string(spec.get("serviceName"), "spec.serviceName");
    if !service.is_empty() {
        v.each("spec.serviceName", &q(service), dns1123_label(service));
    }
    if let Some(old_spec) = old.and_then(|o| o.get("spec")).and_then(Value::as_object) {
        let frozen = |s: &Obj| -> Value {
            Value::Object(
                s.iter()
                    .filter(|(k, _)| !STATEFUL_SET_UPDATABLE.contains(&k.as_str()))
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            )
        };
        if !semantic_eq(Some(&frozen(spec)), Some(&frozen(old_spec))) {
            v.forbidden(
                "spec",
                "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', \
                 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden",
            );
        }
    }
}

/// ValidatePodTemplateSpec: the template's labels, annotations (reported without `metadata`, as
/// upstream does) and pod spec, and no ephemeral containers.
fn pod_template(v: &mut V, template: &Obj, path: &str) {
    let empty = Map::new();
    let tmeta = v.obj(template.get("metadata"), &format!("{path}.metadata")).unwrap_or(&empty);
    labels(v, tmeta.get("labels"), &format!("{path}.labels"));
    annotations(v, tmeta.get("annotations"), &format!("{path}.annotations"));
    pod_spec(v, template.get("spec"), &format!("{path}.spec"));
    if !deep_empty(template.get("spec").and_then(|s| s.get("ephemeralContainers"))) {
        v.forbidden(&format!("{path}.spec.ephemeralContainers"), "ephemeral containers not allowed in pod template");
    }
}

/// A template's labels as a sorted map (strings only; others are reported by `labels`).
fn template_labels(template: &Obj) -> Option<BTreeMap<String, String>> {
    template
        .get("metadata")
        .and_then(|m| m.get("labels"))
        .and_then(Value::as_object)
        .map(|m| m.iter().filter_map(|(k, v)| v.as_str().map(|v| (k.clone(), v.to_owned()))).collect())
}

fn shown_labels(labels: Option<&BTreeMap<String, String>>) -> String {
    let pairs: Option<Vec<(&str, &str)>> = labels.map(|l| l.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect());
    go_map(pairs.as_deref())
}

pub(crate) fn replication_controller(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
    let empty = Map::new();
    let spec = v.obj(obj.get("spec"), "spec").unwrap_or(&empty);
    let min_ready = v.int(spec.get("minReadySeconds"), "spec.minReadySeconds");
    v.nonnegative("spec.minReadySeconds", min_ready);
    let selector: BTreeMap<String, String> = v
        .str_map(spec.get("selector"), "spec.selector")
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    if selector.is_empty() {
        v.required("spec.selector", "");
    }
    labels(v, spec.get("selector"), "spec.selector");
    let replicas = v.int(spec.get("replicas"), "spec.replicas");
    v.nonnegative("spec.replicas", replicas);
    match v.obj(spec.get("template"), "spec.template") {
        None => v.required("spec.template", ""),
        Some(template) => {
            let labels = template_labels(template);
            let matches = selector.iter().all(|(k, want)| labels.as_ref().and_then(|l| l.get(k)) == Some(want));
            if !selector.is_empty() && !matches {
                v.invalid(
                    "spec.template.metadata.labels",
                    &shown_labels(labels.as_ref()),
                    "`selector` does not match template `labels`",
                );
            }
            pod_template(v, template, "spec.template");
            let restart =
                template.get("spec").and_then(|s| s.get("restartPolicy")).and_then(Value::as_str).unwrap_or("");
            if restart != "Always" {
                v.unsupported("spec.template.spec.restartPolicy", &q(restart), &["Always"]);
            }
            if template.get("spec").and_then(|s| s.get("activeDeadlineSeconds")).is_some_and(|a| !a.is_null()) {
                v.forbidden(
                    "spec.template.spec.activeDeadlineSeconds",
                    "activeDeadlineSeconds in ReplicationController is not Supported",
                );
            }
        }
    }
}

/// The labels a Job's generated selector puts on its pods, whether each is one of the
/// `batch.kubernetes.io/` pair, and the Job field each must equal.
const GENERATED_LABELS: [(&str, bool, &str); 4] = [
    ("controller-uid", false, "uid"),
    ("job-name", false, "name"),
    ("batch.kubernetes.io/controller-uid", true, "uid"),
    ("batch.kubernetes.io/job-name", true, "name"),
];

/// ValidateJob on create, ValidateJobUpdate (ValidateJobSpecUpdate) on update.
pub(crate) fn job(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
    let empty = Map::new();
    let spec = v.obj(obj.get("spec"), "spec").unwrap_or(&empty);
    if old.is_none() {
        generated_selector(v, obj, spec, true);
    }
    job_spec(v, spec, "spec");
    let sel_value = spec.get("selector").filter(|s| !s.is_null());
    let converted = match v.obj(sel_value, "spec.selector") {
        None => {
            if sel_value.is_none() {
                v.required("spec.selector", "");
            }
            None
        }
        Some(s) => selector(v, s, "spec.selector"),
    };
    // labels.Nothing() for a missing selector, which matches nothing.
    let template = spec.get("template").and_then(Value::as_object).unwrap_or(&empty);
    let labels = template_labels(template);
    let matched = match (&converted, sel_value.is_some()) {
        (Some(selector), _) => selector.matches(&labels.clone().unwrap_or_default()),
        (None, true) => true,
        (None, false) => false,
    };
    if !matched {
        v.invalid(
            "spec.template.metadata.labels",
            &shown_labels(labels.as_ref()),
            "`selector` does not match template `labels`",
        );
    }
    if old.is_none() {
        indexed_hostname(v, obj, spec);
    }
    let Some(old_spec) = old.and_then(|o| o.get("spec")).and_then(Value::as_object) else { return };
    job_update(v, spec, old_spec, old);
}

/// What ValidateJobSpecUpdate adds to the spec rules: the fields a Job may not change.
fn job_update(v: &mut V, spec: &Obj, old_spec: &Obj, old: Option<&Value>) {
    let indexed = spec.get("completionMode").and_then(Value::as_str) == Some("Indexed");
    let (completions, old_completions) = (spec.get("completions"), old_spec.get("completions"));
    if !semantic_eq(completions, old_completions) {
        // Elastic Indexed Jobs may change completions together with parallelism.
        match completions.and_then(Value::as_i64) {
            Some(c) if indexed => {
                if spec.get("parallelism").and_then(Value::as_i64) != Some(c) {
                    v.invalid(
                        "spec.completions",
                        &c.to_string(),
                        "can only be modified in tandem with spec.parallelism",
                    );
                }
            }
            None if indexed => {}
            _ => v.invalid("spec.completions", &show(completions), "field is immutable"),
        }
    }
    let new_selector = spec.get("selector");
    if !semantic_eq(new_selector, old_spec.get("selector")) {
        v.invalid("spec.selector", &go_selector(new_selector), "field is immutable");
    }
    // A suspended Job that never started may change its pods' scheduling directives
    // (AllowMutableSchedulingDirectives); nothing else of the template.
    let suspended = spec.get("suspend").and_then(Value::as_bool) == Some(true);
    let never_started = old.is_some_and(|o| o.pointer("/status/startTime").is_none_or(Value::is_null));
    let template = spec.get("template").cloned().unwrap_or(Value::Null);
    let mut old_template = old_spec.get("template").cloned().unwrap_or(Value::Null);
    if suspended && never_started {
        allow_scheduling_changes(&template, &mut old_template);
    }
    if !semantic_eq(Some(&template), Some(&old_template)) {
        v.invalid("spec.template", &json_short(&template), "field is immutable");
    }
    for field in ["completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy", "successPolicy"] {
        if !semantic_eq(spec.get(field), old_spec.get(field)) {
            v.invalid(&format!("spec.{field}"), &show(spec.get(field)), "field is immutable");
        }
    }
}

/// validatePodTemplateUpdate's mutable scheduling directives: the old template takes the new
/// one's node selector, tolerations, scheduling gates, labels, annotations and node affinity.
fn allow_scheduling_changes(template: &Value, old: &mut Value) {
    let Some(old) = old.as_object_mut() else { return };
    for (parent, field) in [
        ("metadata", "labels"),
        ("metadata", "annotations"),
        ("spec", "nodeSelector"),
        ("spec", "tolerations"),
        ("spec", "schedulingGates"),
    ] {
        let new_value = template.get(parent).and_then(|p| p.get(field)).cloned();
        if let Some(part) = old.entry(parent).or_insert_with(|| Value::Object(Map::new())).as_object_mut() {
            match new_value {
                Some(value) => part.insert(field.to_owned(), value),
                None => part.remove(field),
            };
        }
    }
    let new_affinity = template.pointer("/spec/affinity").filter(|a| !a.is_null());
    let Some(spec) = old.get_mut("spec").and_then(Value::as_object_mut) else { return };
    match (new_affinity, spec.get_mut("affinity").and_then(Value::as_object_mut)) {
        (None, Some(affinity)) => {
            affinity.remove("nodeAffinity");
            if affinity.is_empty() {
                spec.remove("affinity");
            }
        }
        (Some(new), None) => {
            let node = new.get("nodeAffinity").cloned().map(|n| Map::from_iter([("nodeAffinity".to_owned(), n)]));
            spec.insert("affinity".into(), Value::Object(node.unwrap_or_default()));
        }
        (Some(new), Some(affinity)) => {
            match new.get("nodeAffinity") {
                Some(node) => affinity.insert("nodeAffinity".into(), node.clone()),
                None => affinity.remove("nodeAffinity"),
            };
        }
        (None, None) => {}
    }
}

/// validateGeneratedSelector: unless the selector is manual, the generated labels must be on the
/// pod template with the Job's uid and name (a user's conflicting value stays and is refused
/// here), and the selector must select them.
fn generated_selector(v: &mut V, obj: &Value, spec: &Obj, prefixed: bool) {
    if spec.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        return;
    }
    let Some(sel) = spec.get("selector").and_then(Value::as_object) else { return };
    let uid = obj.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("");
    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    if uid.is_empty() {
        v.required("metadata.uid", "");
    }
    let empty = Map::new();
    let template = spec.get("template").and_then(Value::as_object).unwrap_or(&empty);
    let labels = template_labels(template);
    let mut expected = BTreeMap::new();
    for (key, is_prefixed, of) in GENERATED_LABELS {
        if is_prefixed && !prefixed {
            continue;
        }
        let want = if of == "uid" { uid } else { name };
        expected.insert(key.to_owned(), want.to_owned());
        let path = format!("spec.template.metadata.labels[{key}]");
        match labels.as_ref().and_then(|l| l.get(key)) {
            None => v.required(&path, &format!("must be '{want}'")),
            Some(got) if got != want => v.invalid(&path, &shown_labels(labels.as_ref()), &format!("must be '{want}'")),
            Some(_) => {}
        }
    }
    // Converted quietly: a broken selector is reported by the spec's own check.
    if let Some(converted) = selector(&mut V::default(), sel, "spec.selector")
        && !converted.matches(&expected)
    {
        v.invalid("spec.selector", &go_selector(Some(&Value::Object(sel.clone()))), "`selector` not auto-generated");
    }
}

/// An Indexed Job's last pod hostname (`<name>-<completions-1>`) must be a DNS label.
fn indexed_hostname(v: &mut V, obj: &Value, spec: &Obj) {
    let indexed = spec.get("completionMode").and_then(Value::as_str) == Some("Indexed");
    let completions = spec.get("completions").and_then(Value::as_i64).filter(|c| *c > 0);
    if let Some(completions) = completions.filter(|_| indexed) {
        let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
        let hostname = format!("{name}-{}", completions - 1);
        if !dns1123_label(&hostname).is_empty() {
            v.invalid(
                "metadata.name",
                &q(name),
                &format!("will not able to create pod with invalid DNS label: {hostname}"),
            );
        }
    }
}

/// validateJobSpec: what a Job and a CronJob's job template share.
fn job_spec(v: &mut V, spec: &Obj, path: &str) {
    let mut ints = BTreeMap::new();
    for field in [
        "parallelism",
        "completions",
        "activeDeadlineSeconds",
        "backoffLimit",
        "ttlSecondsAfterFinished",
        "backoffLimitPerIndex",
        "maxFailedIndexes",
    ] {
        let p = format!("{path}.{field}");
        let n = v.int(spec.get(field), &p);
        v.nonnegative(&p, n);
        if let Some(n) = n {
            ints.insert(field, n);
        }
    }
    if ints.contains_key("maxFailedIndexes") && !ints.contains_key("backoffLimitPerIndex") {
        v.required(&format!("{path}.backoffLimitPerIndex"), "when maxFailedIndexes is specified");
    }
    match spec.get("completionMode").and_then(Value::as_str) {
        None | Some("NonIndexed") => {
            for field in ["backoffLimitPerIndex", "maxFailedIndexes"] {
                if let Some(n) = ints.get(field) {
                    v.invalid(&format!("{path}.{field}"), &n.to_string(), "requires indexed completion mode");
                }
            }
        }
        Some("Indexed") => {
            if !ints.contains_key("completions") {
                v.required(&format!("{path}.completions"), "when completion mode is Indexed");
            }
            if let Some(p) = ints.get("parallelism").filter(|p| **p > MAX_INDEXED_PARALLELISM) {
                v.invalid(
                    &format!("{path}.parallelism"),
                    &p.to_string(),
                    &format!("must be less than or equal to {MAX_INDEXED_PARALLELISM} when completion mode is Indexed"),
                );
            }
        }
        Some(other) => v.unsupported(&format!("{path}.completionMode"), &q(other), &["NonIndexed", "Indexed"]),
    }
    let failure_policy = spec.get("podFailurePolicy").is_some_and(|p| !p.is_null());
    if let Some(policy) = spec.get("podReplacementPolicy").and_then(Value::as_str) {
        let supported: &[&str] = if failure_policy { &["Failed"] } else { &["Failed", "TerminatingOrFailed"] };
        if !supported.contains(&policy) {
            v.unsupported(&format!("{path}.podReplacementPolicy"), &q(policy), supported);
        }
    }
    let empty = Map::new();
    let template_path = format!("{path}.template");
    let template = v.obj(spec.get("template"), &template_path).unwrap_or(&empty);
    pod_template(v, template, &template_path);
    // Pod template defaulting makes an unset restartPolicy Always, so both read as unset here.
    let restart = template.get("spec").and_then(|s| s.get("restartPolicy")).and_then(Value::as_str).unwrap_or("");
    let restart_path = format!("{template_path}.spec.restartPolicy");
    match restart {
        "" | "Always" => v.required(&restart_path, "valid values: \"OnFailure\", \"Never\""),
        "OnFailure" | "Never" => {
            if restart != "Never" && failure_policy {
                v.invalid(&restart_path, &q(restart), "only \"Never\" is supported when podFailurePolicy is specified");
            }
        }
        other => v.unsupported(&restart_path, &q(other), &["OnFailure", "Never"]),
    }
}

/// maxParallelismForIndexedJob: it bounds the length of `status.completedIndexes`.
const MAX_INDEXED_PARALLELISM: i64 = 100_000;

/// CronJob names leave room for the 11 characters of the scheduled Job's suffix in a 63-character label.
const CRON_JOB_NAME_MAX: usize = 52;

pub(crate) fn cron_job(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
    let empty = Map::new();
    let spec = v.obj(obj.get("spec"), "spec").unwrap_or(&empty);
    let old_spec = old.and_then(|o| o.get("spec"));
    let schedule = v.string(spec.get("schedule"), "spec.schedule");
    let time_zone = spec.get("timeZone").filter(|z| !z.is_null());
    if schedule.is_empty() {
        v.required("spec.schedule", "");
    } else {
        if let Err(e) = parse_standard(schedule) {
            v.invalid("spec.schedule", &q(schedule), &e);
        }
        // A CronJob stored with TZ in its schedule (before the timeZone field) may keep it.
        let tz_allowed =
            old_spec.and_then(|s| s.get("schedule")).and_then(Value::as_str).is_some_and(|s| s.contains("TZ"));
        if schedule.contains("TZ") {
            if !tz_allowed {
                v.invalid(
                    "spec.schedule",
                    &q(schedule),
                    "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
                );
            } else if time_zone.is_some() {
                v.invalid(
                    "spec.schedule",
                    &q(schedule),
                    "cannot use both timeZone field and TZ or CRON_TZ in schedule",
                );
            }
        }
    }
    let start = v.int(spec.get("startingDeadlineSeconds"), "spec.startingDeadlineSeconds");
    v.nonnegative("spec.startingDeadlineSeconds", start);
    if old_spec.is_none_or(|o| o.get("timeZone").filter(|z| !z.is_null()) != time_zone) {
        let zone = v.string(time_zone, "spec.timeZone");
        if time_zone.is_some() {
            time_zone_errors(v, zone);
        }
    }
    match spec.get("concurrencyPolicy").and_then(Value::as_str).unwrap_or("") {
        "Allow" | "Forbid" | "Replace" => {}
        "" => v.required("spec.concurrencyPolicy", ""),
        other => v.unsupported("spec.concurrencyPolicy", &q(other), &["Allow", "Forbid", "Replace"]),
    }
    // ValidateJobTemplateSpec: the cron job controller generates its Jobs' selectors.
    let template = v.obj(spec.get("jobTemplate"), "spec.jobTemplate").unwrap_or(&empty);
    let job = v.obj(template.get("spec"), "spec.jobTemplate.spec").unwrap_or(&empty);
    job_spec(v, job, "spec.jobTemplate.spec");
    if let Some(sel) = job.get("selector").filter(|s| !s.is_null()) {
        v.invalid("spec.jobTemplate.spec.selector", &go_selector(Some(sel)), "`selector` will be auto-generated");
    }
    if job.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        v.unsupported("spec.jobTemplate.spec.manualSelector", "true", &["nil", "false"]);
    }
    for field in ["successfulJobsHistoryLimit", "failedJobsHistoryLimit"] {
        let p = format!("spec.{field}");
        let n = v.int(spec.get(field), &p);
        v.nonnegative(&p, n);
    }
    // The controller names its Jobs `<name>-<11 characters>`, which must fit a 63-character
    // label; checked on create only, so that older, longer ones can still be updated.
    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    if old.is_none() && name.len() > CRON_JOB_NAME_MAX {
        v.invalid("metadata.name", &q(name), "must be no more than 52 characters");
    }
}

/// validateTimeZone: an IANA name (by its naming rules, then the time zone database).
fn time_zone_errors(v: &mut V, zone: &str) {
    if zone.is_empty() {
        v.invalid("spec.timeZone", &q(zone), "timeZone must be nil or non-empty string");
        return;
    }
    let valid_part = |part: &str| {
        (1..=14).contains(&part.len())
            && !part.starts_with('-')
            && part != "."
            && part != ".."
            && part.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'+'))
    };
    if !zone.split('/').all(valid_part) {
        v.invalid("spec.timeZone", &q(zone), &format!("unknown time zone {zone}"));
        return;
    }
    if zone.eq_ignore_ascii_case("local") {
        v.invalid(
            "spec.timeZone",
            &q(zone),
            "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
        );
    }
    // time.LoadLocation, as the controller loads it.
    if wasmcm_core::cron::load_location(zone).is_err() {
        v.invalid("spec.timeZone", &q(zone), &format!("unknown time zone {zone}"));
    }
}

/// Status counters that may not be negative, and (counter, bound) pairs where the counter may
/// not exceed the bound, with the bound as upstream's message names it.
struct StatusRules {
    counters: &'static [&'static str],
    bounded: &'static [(&'static str, &'static str, &'static str)],
}

const DAEMON_SET_STATUS: StatusRules = StatusRules {
    counters: &[
        "currentNumberScheduled",
        "numberMisscheduled",
        "desiredNumberScheduled",
        "numberReady",
        "observedGeneration",
        "updatedNumberScheduled",
        "numberAvailable",
        "numberUnavailable",
        "collisionCount",
    ],
    bounded: &[],
};

const STATEFUL_SET_STATUS: StatusRules = StatusRules {
    counters: &[
        "replicas",
        "readyReplicas",
        "currentReplicas",
        "updatedReplicas",
        "availableReplicas",
        "observedGeneration",
        "collisionCount",
    ],
    bounded: &[
        ("readyReplicas", "replicas", "status.replicas"),
        ("currentReplicas", "replicas", "status.replicas"),
        ("updatedReplicas", "replicas", "status.replicas"),
        ("availableReplicas", "readyReplicas", "status.readyReplicas"),
    ],
};

const REPLICATION_CONTROLLER_STATUS: StatusRules = StatusRules {
    counters: &["replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"],
    bounded: &[
        ("fullyLabeledReplicas", "replicas", "status.replicas"),
        ("readyReplicas", "replicas", "status.replicas"),
        ("availableReplicas", "replicas", "status.replicas"),
        ("availableReplicas", "readyReplicas", "readyReplicas"),
    ],
};

/// What the status strategies of these kinds check on a write to `/status` (`new` is the object
/// with its new status, `old` the stored one): counters, and a Job's status transitions.
pub(crate) fn status(v: &mut V, kind: &str, new: &Value, old: &Value) {
    let rules = match kind {
        "DaemonSet" => &DAEMON_SET_STATUS,
        "StatefulSet" => &STATEFUL_SET_STATUS,
        "ReplicationController" => &REPLICATION_CONTROLLER_STATUS,
        "Job" => return job_status(v, new, old),
        _ => return,
    };
    let empty = Map::new();
    let status = v.obj(new.get("status"), "status").unwrap_or(&empty);
    let mut values = BTreeMap::new();
    for counter in rules.counters {
        let path = format!("status.{counter}");
        let n = v.int(status.get(*counter), &path);
        v.nonnegative(&path, n);
        values.insert(*counter, n.unwrap_or(0));
    }
    for (counter, bound, shown_bound) in rules.bounded {
        let (n, limit) = (values.get(counter).copied().unwrap_or(0), values.get(bound).copied().unwrap_or(0));
        if n > limit {
            v.invalid(&format!("status.{counter}"), &n.to_string(), &format!("cannot be greater than {shown_bound}"));
        }
    }
}

/// field.Invalid with field.OmitValueType{}: upstream prints no value at all.
fn omitted(v: &mut V, field: &str, detail: &str) {
    v.add(super::INVALID, field, format!("Invalid value: {detail}"));
}

/// The status of the condition of type `kind`, if the Job has one.
fn condition_status<'a>(job: &'a Value, kind: &str) -> Option<&'a str> {
    job.pointer("/status/conditions")?
        .as_array()?
        .iter()
        .find(|c| c.get("type").and_then(Value::as_str) == Some(kind))?
        .get("status")?
        .as_str()
}

fn condition_true(job: &Value, kind: &str) -> bool {
    job.pointer("/status/conditions").and_then(Value::as_array).is_some_and(|conditions| {
        conditions.iter().any(|c| {
            c.get("type").and_then(Value::as_str) == Some(kind)
                && c.get("status").and_then(Value::as_str) == Some("True")
        })
    })
}

/// ValidateJobUpdateStatus with the options the Job status strategy sets (JobManagedBy on):
/// most transition rules apply only when the fields they read change, so a status that was
/// already off is not made unwritable.
fn job_status(v: &mut V, new: &Value, old: &Value) {
    let empty = Map::new();
    let status = v.obj(new.get("status"), "status").unwrap_or(&empty);
    let old_status = old.get("status").and_then(Value::as_object).unwrap_or(&empty);
    let mut counts = BTreeMap::new();
    for counter in ["active", "succeeded", "failed", "ready", "terminating"] {
        let path = format!("status.{counter}");
        let n = v.int(status.get(counter), &path);
        v.nonnegative(&path, n);
        counts.insert(counter, n.unwrap_or(0));
    }
    let changed = |field: &str| !semantic_eq(status.get(field), old_status.get(field));
    let is = |job: &Value, kind: &str| condition_true(job, kind);
    let complete = is(new, "Complete");
    let failed = is(new, "Failed");
    let finished = complete || failed;
    let complete_changed = complete != is(old, "Complete");
    let failed_changed = failed != is(old, "Failed");
    let finished_changed = finished != (is(old, "Complete") || is(old, "Failed"));
    let target = is(new, "FailureTarget");
    let target_changed = target != is(old, "FailureTarget");
    let criteria_met = is(new, "SuccessCriteriaMet");
    let criteria_changed = criteria_met != is(old, "SuccessCriteriaMet");
    let time = |field: &str| status.get(field).and_then(Value::as_str).and_then(|t| t.parse::<jiff::Timestamp>().ok());
    let conditions = "status.conditions";
    if (complete_changed || failed_changed) && complete && failed {
        omitted(v, conditions, "cannot set Complete=True and Failed=true conditions");
    }
    if (complete_changed || target_changed) && complete && target {
        omitted(v, conditions, "cannot set Complete=True and FailureTarget=true conditions");
    }
    let completion_changed = changed("completionTime");
    let has_completion = status.get("completionTime").is_some_and(|t| !t.is_null());
    if (complete_changed || completion_changed) && has_completion && !complete {
        v.invalid(
            "status.completionTime",
            &show(status.get("completionTime")),
            "cannot set completionTime when there is no Complete=True condition",
        );
    }
    if (complete_changed || completion_changed) && !has_completion && complete {
        v.required("status.completionTime", "completionTime is required for Complete jobs");
    }
    let start_changed = changed("startTime");
    if (start_changed || completion_changed)
        && let (Some(start), Some(end)) = (time("startTime"), time("completionTime"))
        && end < start
    {
        v.invalid(
            "status.completionTime",
            &show(status.get("completionTime")),
            "completionTime cannot be set before startTime",
        );
    }
    if (failed_changed || target_changed) && failed && !target {
        omitted(v, conditions, "cannot set Failed=True condition without the FailureTarget=true condition");
    }
    if (complete_changed || criteria_changed) && complete && !criteria_met {
        omitted(v, conditions, "cannot set Complete=True condition without the SuccessCriteriaMet=true condition");
    }
    let active = counts.get("active").copied().unwrap_or(0);
    if (finished_changed || changed("active")) && finished && active > 0 {
        v.invalid("status.active", &active.to_string(), "active>0 is invalid for finished job");
    }
    if (finished_changed || start_changed) && finished && status.get("startTime").is_none_or(Value::is_null) {
        v.required("status.startTime", "startTime is required for finished job");
    }
    let terminating = counts.get("terminating").copied().unwrap_or(0);
    if (finished_changed || changed("terminating")) && finished && terminating > 0 {
        v.invalid("status.terminating", &terminating.to_string(), "terminating>0 is invalid for finished job");
    }
    if (changed("ready") || changed("active"))
        && let Some(ready) = status.get("ready").and_then(Value::as_i64).filter(|r| *r > active)
    {
        v.invalid("status.ready", &ready.to_string(), "cannot set more ready pods than active");
    }
    if criteria_met && failed {
        omitted(v, conditions, "cannot set SuccessCriteriaMet=True and Failed=true conditions");
    }
    if criteria_met && target {
        omitted(v, conditions, "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions");
    }
    // ValidateJobStatusUpdate's own rules.
    for kind in ["Failed", "Complete", "FailureTarget"] {
        if is(old, kind) && !is(new, kind) {
            omitted(v, conditions, &format!("cannot disable the terminal {kind}=True condition"));
        }
    }
    let old_count = |field: &str| old_status.get(field).and_then(Value::as_i64).unwrap_or(0);
    let indexed = new.pointer("/spec/completionMode").and_then(Value::as_str) == Some("Indexed");
    let elastic = indexed && new.pointer("/spec/completions") == new.pointer("/spec/parallelism");
    if counts.get("failed").copied().unwrap_or(0) < old_count("failed") {
        v.invalid("status.failed", &counts["failed"].to_string(), "cannot decrease the failed counter");
    }
    if !elastic && counts.get("succeeded").copied().unwrap_or(0) < old_count("succeeded") {
        v.invalid("status.succeeded", &counts["succeeded"].to_string(), "cannot decrease the succeeded counter");
    }
    let old_completion = old_status.get("completionTime").filter(|t| !t.is_null());
    if has_completion && old_completion.is_some() && completion_changed {
        v.invalid("status.completionTime", &show(status.get("completionTime")), "completionTime cannot be mutated");
    }
    let suspended = new.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
    // A resumed Job's startTime restarts with its JobSuspended True -> False transition
    // (kubernetes#134769, in 1.34.2 and 1.35).
    let resuming =
        condition_status(old, "Suspended") == Some("True") && condition_status(new, "Suspended") == Some("False");
    if start_changed && old_status.get("startTime").is_some_and(|t| !t.is_null()) && !suspended && !resuming {
        v.required("status.startTime", "startTime cannot be removed for unsuspended job");
    }
    if is(old, "SuccessCriteriaMet") && !criteria_met {
        omitted(v, conditions, "cannot disable the SuccessCriteriaMet=True condition");
    }
    if is(old, "Complete") && !is(old, "SuccessCriteriaMet") && criteria_met {
        omitted(v, conditions, "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions");
    }
}

/// robfig/cron v3 `ParseStandard`, as the CronJob controller parses it (wasmcm-core's cron):
/// Ok when it parses, else its error text.
fn parse_standard(spec: &str) -> Result<(), String> {
    wasmcm_core::cron::parse_standard(spec).map(drop)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::registry::resources::Registry;

    /// The object as the server validates it: defaulted, with server-set metadata and what the
    /// registry strategy writes.
    fn prepared(api_version: &str, kind: &str, mut object: Value) -> Value {
        object["metadata"]["namespace"] = json!("default");
        object["metadata"]["uid"] = json!("u-1");
        let strategy = Registry::default().by_kind(api_version, kind).expect("a built-in type").strategy;
        strategy.default(&mut object);
        (strategy.prepare_create)(&mut object);
        object
    }

    /// The causes as "Reason field: message" lines.
    fn causes(api_version: &str, kind: &str, object: &Value, old: Option<&Value>) -> Vec<String> {
        super::super::validate_kind(api_version, kind, object, old)
            .into_iter()
            .map(|c| format!("{} {}: {}", c.reason.trim_start_matches("FieldValue"), c.field, c.message))
            .collect()
    }

    fn template(labels: Value, restart: &str) -> Value {
        json!({"metadata": {"labels": labels}, "spec": {"restartPolicy": restart, "containers": [{"name": "c", "image": "busybox"}]}})
    }

    fn job() -> Value {
        prepared(
            "batch/v1",
            "Job",
            json!({"metadata": {"name": "pi"}, "spec": {"template": template(json!(null), "Never")}}),
        )
    }

    #[test]
    fn jobs() {
        assert_eq!(causes("batch/v1", "Job", &job(), None), Vec::<String>::new());

        let mut always = json!({"metadata": {"name": "pi"}, "spec": {"template": template(json!(null), "")}});
        always = prepared("batch/v1", "Job", always);
        assert_eq!(
            causes("batch/v1", "Job", &always, None),
            ["Required spec.template.spec.restartPolicy: Required value: valid values: \"OnFailure\", \"Never\""]
        );

        // A label the generator would have set, set otherwise by the user.
        let conflicting =
            json!({"metadata": {"name": "pi"}, "spec": {"template": template(json!({"job-name": "other"}), "Never")}});
        let conflicting = prepared("batch/v1", "Job", conflicting);
        let got = causes("batch/v1", "Job", &conflicting, None);
        assert_eq!(got.len(), 1, "{got:?}");
        assert!(
            got[0].starts_with("Invalid spec.template.metadata.labels[job-name]: Invalid value: map[string]string{"),
            "{got:?}"
        );
        assert!(got[0].ends_with(": must be 'pi'"), "{got:?}");
        // A selector of the user's that the generated labels do not satisfy.
        let mut foreign = job();
        foreign["spec"]["selector"] = json!({"matchLabels": {"controller-uid": "u-2"}});
        foreign["spec"]["template"]["metadata"]["labels"]["controller-uid"] = json!("u-2");
        let got = causes("batch/v1", "Job", &foreign, None);
        assert_eq!(got.len(), 2, "{got:?}");
        assert!(got[0].starts_with("Invalid spec.template.metadata.labels[controller-uid]"), "{got:?}");
        assert_eq!(
            got[1],
            r#"Invalid spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"controller-uid":"u-2"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` not auto-generated"#
        );

        let mut manual = json!({"metadata": {"name": "pi"}, "spec": {"manualSelector": true,
            "selector": {"matchLabels": {"app": "other"}}, "template": template(json!({"app": "pi"}), "OnFailure")}});
        manual = prepared("batch/v1", "Job", manual);
        assert_eq!(
            causes("batch/v1", "Job", &manual, None),
            [
                r#"Invalid spec.template.metadata.labels: Invalid value: map[string]string{"app":"pi"}: `selector` does not match template `labels`"#
            ]
        );

        let mut indexed = job();
        indexed["spec"]["completionMode"] = json!("Indexed");
        indexed["spec"]["completions"] = json!(null);
        indexed["spec"]["backoffLimit"] = json!(-1);
        assert_eq!(
            causes("batch/v1", "Job", &indexed, None),
            [
                "Invalid spec.backoffLimit: Invalid value: -1: must be greater than or equal to 0",
                "Required spec.completions: Required value: when completion mode is Indexed"
            ]
        );
    }

    #[test]
    fn job_updates() {
        let old = job();
        let mut new = old.clone();
        new["spec"]["template"]["spec"]["containers"][0]["image"] = json!("busybox:2");
        new["spec"]["completions"] = json!(3);
        let got = causes("batch/v1", "Job", &new, Some(&old));
        assert_eq!(got.len(), 2, "{got:?}");
        assert_eq!(got[0], "Invalid spec.completions: Invalid value: 3: field is immutable");
        assert!(
            got[1].starts_with("Invalid spec.template: Invalid value: {") && got[1].ends_with("field is immutable"),
            "{got:?}"
        );

        // Suspended and never started: scheduling directives may change, the image may not.
        let mut suspended = old.clone();
        suspended["spec"]["suspend"] = json!(true);
        let mut moved = suspended.clone();
        moved["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
        moved["spec"]["template"]["metadata"]["annotations"] = json!({"note": "x"});
        assert_eq!(causes("batch/v1", "Job", &moved, Some(&suspended)), Vec::<String>::new());
        moved["spec"]["template"]["spec"]["containers"][0]["image"] = json!("busybox:2");
        assert_eq!(causes("batch/v1", "Job", &moved, Some(&suspended)).len(), 1);
        // Once started, not even those.
        let mut started = suspended.clone();
        started["status"] = json!({"startTime": "2026-01-01T00:00:00Z"});
        let mut moved = started.clone();
        moved["spec"]["template"]["spec"]["nodeSelector"] = json!({"zone": "a"});
        assert_eq!(causes("batch/v1", "Job", &moved, Some(&started)).len(), 1);
    }

    #[test]
    fn job_status_transitions() {
        let old = job();
        let status = |s: Value| {
            let mut j = old.clone();
            j["status"] = s;
            j
        };
        let cond = |t: &str| json!({"type": t, "status": "True"});
        let check = |new: &Value, against: &Value| {
            let mut v = V::default();
            super::status(&mut v, "Job", new, against);
            v.causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect::<Vec<_>>()
        };
        let done = status(
            json!({"startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:01:00Z", "succeeded": 1,
            "conditions": [cond("SuccessCriteriaMet"), cond("Complete")]}),
        );
        assert_eq!(check(&done, &old), Vec::<String>::new());
        let bare = status(json!({"succeeded": 1, "active": 1, "conditions": [cond("Complete")]}));
        assert_eq!(
            check(&bare, &old),
            [
                "status.completionTime: Required value: completionTime is required for Complete jobs",
                "status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition",
                "status.active: Invalid value: 1: active>0 is invalid for finished job",
                "status.startTime: Required value: startTime is required for finished job"
            ]
        );
        let undone = status(json!({"succeeded": 0}));
        assert_eq!(
            check(&undone, &done),
            [
                "status.conditions: Invalid value: cannot disable the terminal Complete=True condition",
                "status.succeeded: Invalid value: 0: cannot decrease the succeeded counter",
                "status.startTime: Required value: startTime cannot be removed for unsuspended job",
                "status.conditions: Invalid value: cannot disable the SuccessCriteriaMet=True condition"
            ]
        );
        let failed = status(json!({"startTime": "2026-01-01T00:00:00Z", "failed": 1, "conditions": [cond("Failed")]}));
        assert_eq!(
            check(&failed, &old),
            [
                "status.conditions: Invalid value: cannot set Failed=True condition without the FailureTarget=true condition"
            ]
        );
        // Upstream's fix of kubernetes#134521 (v1.34.2, 1.35): a resumed Job's startTime
        // restarts with its JobSuspended True -> False transition, and only then.
        let suspended = |s: &str, start: &str| {
            status(json!({"startTime": start, "conditions": [{"type": "Suspended", "status": s}]}))
        };
        let (before, after) = ("2026-01-01T00:00:00Z", "2026-01-01T00:01:00Z");
        assert_eq!(check(&suspended("False", after), &suspended("True", before)), Vec::<String>::new());
        assert_eq!(
            check(&suspended("False", after), &suspended("False", before)),
            ["status.startTime: Required value: startTime cannot be removed for unsuspended job"]
        );
    }

    #[test]
    fn cron_jobs() {
        let cron = |name: &str, schedule: &str| {
            prepared(
                "batch/v1",
                "CronJob",
                json!({"metadata": {"name": name}, "spec": {"schedule": schedule,
                "jobTemplate": {"spec": {"template": template(json!(null), "OnFailure")}}}}),
            )
        };
        assert_eq!(causes("batch/v1", "CronJob", &cron("c", "*/5 * * * *"), None), Vec::<String>::new());
        assert_eq!(
            causes("batch/v1", "CronJob", &cron("c", "* * * * * *"), None),
            [
                r#"Invalid spec.schedule: Invalid value: "* * * * * *": expected exactly 5 fields, found 6: [* * * * * *]"#
            ]
        );
        let long = "a".repeat(53);
        assert_eq!(
            causes("batch/v1", "CronJob", &cron(&long, "@daily"), None),
            [format!("Invalid metadata.name: Invalid value: \"{long}\": must be no more than 52 characters")]
        );
        // An existing long name, or a schedule stored with TZ, may still be updated.
        let old = cron(&long, "TZ=UTC 0 0 * * *");
        assert_eq!(causes("batch/v1", "CronJob", &old, Some(&old)), Vec::<String>::new());

        let mut zoned = cron("c", "@hourly");
        zoned["spec"]["timeZone"] = json!("Mars/Olympus");
        zoned["spec"]["concurrencyPolicy"] = json!("Sometimes");
        zoned["spec"]["jobTemplate"]["spec"]["selector"] = json!({"matchLabels": {"a": "b"}});
        assert_eq!(
            causes("batch/v1", "CronJob", &zoned, None),
            [
                r#"Invalid spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus"#,
                r#"NotSupported spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace""#,
                r#"Invalid spec.jobTemplate.spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"a":"b"}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` will be auto-generated"#
            ]
        );
        zoned["spec"]["timeZone"] = json!("Europe/Paris");
        zoned["spec"]["concurrencyPolicy"] = json!("Forbid");
        zoned["spec"]["jobTemplate"]["spec"]["selector"] = json!(null);
        assert_eq!(causes("batch/v1", "CronJob", &zoned, None), Vec::<String>::new());
    }

    #[test]
    fn daemon_sets_stateful_sets_and_replication_controllers() {
        let spec =
            |labels: Value| json!({"selector": {"matchLabels": {"app": "x"}}, "template": template(labels, "Always")});
        let ds =
            prepared("apps/v1", "DaemonSet", json!({"metadata": {"name": "d"}, "spec": spec(json!({"app": "x"}))}));
        assert_eq!(causes("apps/v1", "DaemonSet", &ds, None), Vec::<String>::new());
        let mut odd = ds.clone();
        odd["spec"]["updateStrategy"] =
            json!({"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 0, "maxSurge": 0}});
        odd["spec"]["template"]["metadata"]["labels"] = json!({"app": "y"});
        assert_eq!(
            causes("apps/v1", "DaemonSet", &odd, None),
            [
                r#"Invalid spec.template.metadata.labels: Invalid value: map[string]string{"app":"y"}: `selector` does not match template `labels`"#,
                "Required spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"
            ]
        );

        let mut both = ds.clone();
        both["spec"]["updateStrategy"]["rollingUpdate"] = json!({"maxUnavailable": "10%", "maxSurge": "150%"});
        assert_eq!(
            causes("apps/v1", "DaemonSet", &both, None),
            [
                "Invalid spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 150%: must not be greater than 100%",
                "Invalid spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: 150%: may not be set when maxUnavailable is non-zero"
            ]
        );

        let sts =
            prepared("apps/v1", "StatefulSet", json!({"metadata": {"name": "s"}, "spec": spec(json!({"app": "x"}))}));
        assert_eq!(causes("apps/v1", "StatefulSet", &sts, None), Vec::<String>::new());
        let mut scaled = sts.clone();
        scaled["spec"]["replicas"] = json!(5);
        scaled["spec"]["template"]["spec"]["containers"][0]["image"] = json!("busybox:2");
        assert_eq!(causes("apps/v1", "StatefulSet", &scaled, Some(&sts)), Vec::<String>::new());
        let mut renamed = sts.clone();
        renamed["spec"]["serviceName"] = json!("other");
        renamed["spec"]["podManagementPolicy"] = json!("Eager");
        assert_eq!(
            causes("apps/v1", "StatefulSet", &renamed, Some(&sts)),
            [
                r#"Invalid spec.podManagementPolicy: Invalid value: "Eager": must be 'OrderedReady' or 'Parallel'"#,
                "Forbidden spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', \
                 'updateStrategy', 'revisionHistoryLimit', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
            ]
        );

        let rc = prepared(
            "v1",
            "ReplicationController",
            json!({"metadata": {"name": "r"}, "spec": {"template": template(json!({"app": "x"}), "Always")}}),
        );
        assert_eq!(rc["spec"]["selector"], json!({"app": "x"}));
        assert_eq!(causes("v1", "ReplicationController", &rc, None), Vec::<String>::new());
        let bare = prepared(
            "v1",
            "ReplicationController",
            json!({"metadata": {"name": "r"}, "spec": {"selector": {"app": "x"}, "template": template(json!({"app": "z"}), "Never")}}),
        );
        assert_eq!(
            causes("v1", "ReplicationController", &bare, None),
            [
                r#"Invalid spec.template.metadata.labels: Invalid value: map[string]string{"app":"z"}: `selector` does not match template `labels`"#,
                r#"NotSupported spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always""#
            ]
        );
        let mut status = rc.clone();
        status["status"] = json!({"replicas": 1, "readyReplicas": 2, "availableReplicas": -1});
        let mut v = V::default();
        super::status(&mut v, "ReplicationController", &status, &rc);
        let got: Vec<String> = v.causes.into_iter().map(|c| format!("{}: {}", c.field, c.message)).collect();
        assert_eq!(
            got,
            [
                "status.availableReplicas: Invalid value: -1: must be greater than or equal to 0",
                "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas"
            ]
        );
    }
}
