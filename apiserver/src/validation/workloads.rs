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

use super::apps::{go_map, go_selector, int_or_percent, workload};
use super::meta::{NameRule, Scope, annotations, labels, meta, selector};
use super::pods::pod_spec;
use super::{Obj, V, deep_empty, json_short, q, semantic_eq};

pub(super) fn daemon_set(v: &mut V, obj: &Value, old: Option<&Value>) {
    workload(v, obj, old, "DaemonSet");
    let empty = Map::new();
    let spec = obj.get("spec").and_then(Value::as_object).unwrap_or(&empty);
    let strategy = v.obj(spec.get("updateStrategy"), "spec.updateStrategy").unwrap_or(&empty);
    match strategy.get("type").and_then(Value::as_str).unwrap_or("") {
        "OnDelete" => {}
        "RollingUpdate" => match v.obj(strategy.get("rollingUpdate"), "spec.updateStrategy.rollingUpdate") {
            None => v.required("spec.updateStrategy.rollingUpdate", ""),
            Some(rolling) => {
                let unavailable_path = "spec.updateStrategy.rollingUpdate.maxUnavailable";
                let unavailable = int_or_percent(v, rolling.get("maxUnavailable"), unavailable_path);
                let surge = int_or_percent(v, rolling.get("maxSurge"), "spec.updateStrategy.rollingUpdate.maxSurge");
                let zero = |x: &Option<super::apps::IntOrStr<'_>>| {
                    x.as_ref().is_some_and(|x| x.percent().map_or_else(|| x.shown() == "0", |p| p == 0))
                };
                if zero(&unavailable) && zero(&surge) {
                    let shown = unavailable.as_ref().map(|u| u.shown()).unwrap_or_default();
                    v.invalid(unavailable_path, &shown, "cannot be 0 when maxSurge is 0");
                }
                if let Some(u) = unavailable.filter(|u| u.percent().is_some_and(|p| p > 100)) {
                    v.invalid(unavailable_path, &u.shown(), "must not be greater than 100%");
                }
            }
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

pub(super) fn stateful_set(v: &mut V, obj: &Value, old: Option<&Value>) {
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
                    if let Some(m) = int_or_percent(v, r.get("maxUnavailable"), path)
                        && m.percent().map_or_else(|| m.shown() == "0", |p| p == 0)
                    {
                        v.invalid(path, &m.shown(), "must be greater than 0");
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

pub(super) fn replication_controller(v: &mut V, obj: &Value, old: Option<&Value>) {
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

/// The labels a Job's generated selector puts on its pods, and the Job field each must equal.
const GENERATED_LABELS: [(&str, &str); 4] = [
    ("controller-uid", "uid"),
    ("job-name", "name"),
    ("batch.kubernetes.io/controller-uid", "uid"),
    ("batch.kubernetes.io/job-name", "name"),
];

pub(super) fn job(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
    let empty = Map::new();
    let spec = v.obj(obj.get("spec"), "spec").unwrap_or(&empty);
    let manual = spec.get("manualSelector").and_then(Value::as_bool) == Some(true);
    if !manual {
        generated_selector(v, obj, spec);
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
    let Some(old_spec) = old.and_then(|o| o.get("spec")) else { return };
    // ValidateJobSpecUpdate: what a Job may never change once created.
    for (field, pointer) in [
        ("spec.selector", "/selector"),
        ("spec.completionMode", "/completionMode"),
        ("spec.podFailurePolicy", "/podFailurePolicy"),
    ] {
        let (new, old) = (obj.get("spec").and_then(|s| s.pointer(pointer)), old_spec.pointer(pointer));
        if !semantic_eq(new, old) {
            let shown = match field {
                "spec.selector" => go_selector(new),
                _ => new.map(json_short).unwrap_or_else(|| "null".into()),
            };
            v.invalid(field, &shown, "field is immutable");
        }
    }
    // The template may change only while the Job is suspended and has not started (upstream
    // then allows its scheduling directives and resources only).
    let suspended = spec.get("suspend").and_then(Value::as_bool) == Some(true);
    let never_started = old.is_some_and(|o| o.pointer("/status/startTime").is_none_or(Value::is_null));
    let mutable = suspended && never_started;
    if !mutable && !semantic_eq(spec.get("template"), old_spec.get("template")) {
        v.invalid("spec.template", &json_short(spec.get("template").unwrap_or(&Value::Null)), "field is immutable");
    }
}

/// validateGeneratedSelector: the generated labels must be on the pod template with the Job's
/// uid and name (a user's conflicting value stays and is refused here).
fn generated_selector(v: &mut V, obj: &Value, spec: &Obj) {
    let uid = obj.pointer("/metadata/uid").and_then(Value::as_str).unwrap_or("");
    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    if uid.is_empty() {
        v.required("metadata.uid", "");
    }
    let empty = Map::new();
    let template = spec.get("template").and_then(Value::as_object).unwrap_or(&empty);
    let labels = template_labels(template);
    for (key, of) in GENERATED_LABELS {
        let want = if of == "uid" { uid } else { name };
        let path = format!("spec.template.metadata.labels[{key}]");
        match labels.as_ref().and_then(|l| l.get(key)) {
            None => v.required(&path, &format!("must be '{want}'")),
            Some(got) if got != want => v.invalid(&path, &shown_labels(labels.as_ref()), &format!("must be '{want}'")),
            Some(_) => {}
        }
    }
}

/// validateJobSpec: what a Job and a CronJob's job template share.
fn job_spec(v: &mut V, spec: &Obj, path: &str) {
    for field in ["parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished"] {
        let p = format!("{path}.{field}");
        let n = v.int(spec.get(field), &p);
        v.nonnegative(&p, n);
    }
    let completions = spec.get("completions").filter(|c| !c.is_null());
    match spec.get("completionMode").and_then(Value::as_str) {
        None | Some("NonIndexed") => {}
        Some("Indexed") => {
            if completions.is_none() {
                v.required(&format!("{path}.completions"), "when completion mode is Indexed");
            }
        }
        Some(other) => v.unsupported(&format!("{path}.completionMode"), &q(other), &["NonIndexed", "Indexed"]),
    }
    if let Some(policy) = spec.get("podReplacementPolicy").and_then(Value::as_str)
        && !matches!(policy, "TerminatingOrFailed" | "Failed")
    {
        v.unsupported(&format!("{path}.podReplacementPolicy"), &q(policy), &["TerminatingOrFailed", "Failed"]);
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
            if restart != "Never" && spec.get("podFailurePolicy").is_some_and(|p| !p.is_null()) {
                v.invalid(&restart_path, &q(restart), "only \"Never\" is supported when podFailurePolicy is specified");
            }
        }
        other => v.unsupported(&restart_path, &q(other), &["OnFailure", "Never"]),
    }
}

/// CronJob names leave room for the 11 characters of the scheduled Job's suffix in a 63-character label.
const CRON_JOB_NAME_MAX: usize = 52;

pub(super) fn cron_job(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
    let name = obj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    if name.len() > CRON_JOB_NAME_MAX {
        v.invalid("metadata.name", &q(name), "must be no more than 52 characters");
    }
    let empty = Map::new();
    let spec = v.obj(obj.get("spec"), "spec").unwrap_or(&empty);
    let schedule = v.string(spec.get("schedule"), "spec.schedule");
    let time_zone = spec.get("timeZone").and_then(Value::as_str);
    if schedule.is_empty() {
        v.required("spec.schedule", "");
    } else {
        if let Err(e) = parse_standard(schedule) {
            v.invalid("spec.schedule", &q(schedule), &e);
        }
        if schedule.contains("TZ") {
            v.invalid(
                "spec.schedule",
                &q(schedule),
                "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
            );
        }
    }
    if let Some(zone) = time_zone {
        if zone.is_empty() {
            v.invalid("spec.timeZone", &q(zone), "timeZone must be nil or non-empty string");
        } else if zone.eq_ignore_ascii_case("local") {
            v.invalid(
                "spec.timeZone",
                &q(zone),
                "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones",
            );
        } else if jiff::tz::db().get(zone).is_err() {
            v.invalid("spec.timeZone", &q(zone), &format!("unknown time zone {zone}"));
        }
    }
    match spec.get("concurrencyPolicy").and_then(Value::as_str).unwrap_or("") {
        "Allow" | "Forbid" | "Replace" => {}
        "" => v.required("spec.concurrencyPolicy", ""),
        other => v.unsupported("spec.concurrencyPolicy", &q(other), &["Allow", "Forbid", "Replace"]),
    }
    for field in ["startingDeadlineSeconds", "successfulJobsHistoryLimit", "failedJobsHistoryLimit"] {
        let p = format!("spec.{field}");
        let n = v.int(spec.get(field), &p);
        v.nonnegative(&p, n);
    }
    // ValidateJobTemplateSpec: the cron job controller generates its Jobs' selectors.
    let template = v.obj(spec.get("jobTemplate"), "spec.jobTemplate").unwrap_or(&empty);
    let tmeta = v.obj(template.get("metadata"), "spec.jobTemplate.metadata").unwrap_or(&empty);
    labels(v, tmeta.get("labels"), "spec.jobTemplate.metadata.labels");
    annotations(v, tmeta.get("annotations"), "spec.jobTemplate.metadata.annotations");
    let job = v.obj(template.get("spec"), "spec.jobTemplate.spec").unwrap_or(&empty);
    job_spec(v, job, "spec.jobTemplate.spec");
    if let Some(sel) = job.get("selector").filter(|s| !s.is_null()) {
        v.invalid("spec.jobTemplate.spec.selector", &go_selector(Some(sel)), "`selector` will be auto-generated");
    }
    if job.get("manualSelector").and_then(Value::as_bool) == Some(true) {
        v.unsupported("spec.jobTemplate.spec.manualSelector", "true", &["nil", "false"]);
    }
}

/// A cron field's bounds and names (robfig/cron v3 `bounds`).
struct Bounds {
    min: u64,
    max: u64,
    names: &'static [(&'static str, u64)],
}

const MINUTES: Bounds = Bounds { min: 0, max: 59, names: &[] };
const HOURS: Bounds = Bounds { min: 0, max: 23, names: &[] };
const DOM: Bounds = Bounds { min: 1, max: 31, names: &[] };
const MONTHS: Bounds = Bounds {
    min: 1,
    max: 12,
    names: &[
        ("jan", 1),
        ("feb", 2),
        ("mar", 3),
        ("apr", 4),
        ("may", 5),
        ("jun", 6),
        ("jul", 7),
        ("aug", 8),
        ("sep", 9),
        ("oct", 10),
        ("nov", 11),
        ("dec", 12),
    ],
};
const DOW: Bounds = Bounds {
    min: 0,
    max: 6,
    names: &[("sun", 0), ("mon", 1), ("tue", 2), ("wed", 3), ("thu", 4), ("fri", 5), ("sat", 6)],
};

/// robfig/cron v3 `ParseStandard` (five fields or a descriptor, with an optional `TZ=` or
/// `CRON_TZ=` prefix): Ok when it parses, else its error text.
fn parse_standard(spec: &str) -> Result<(), String> {
    if spec.is_empty() {
        return Err("empty spec string".into());
    }
    let mut spec = spec;
    if spec.starts_with("TZ=") || spec.starts_with("CRON_TZ=") {
        let eq = spec.find('=').unwrap_or(0);
        let Some(space) = spec.find(' ') else {
            // Go slices spec[eq+1:-1] here and panics; robfig recovers nothing, so the server's
            // handler answers 500. Reporting the location as bad is the useful part of that.
            return Err(format!("provided bad location {}: unknown time zone {}", &spec[eq + 1..], &spec[eq + 1..]));
        };
        let zone = spec.get(eq + 1..space).unwrap_or("");
        if !(zone.is_empty() || zone == "UTC" || zone == "Local" || jiff::tz::db().get(zone).is_ok()) {
            return Err(format!("provided bad location {zone}: unknown time zone {zone}"));
        }
        spec = spec[space..].trim();
    }
    if let Some(descriptor) = spec.strip_prefix('@') {
        return match descriptor {
            "yearly" | "annually" | "monthly" | "weekly" | "daily" | "midnight" | "hourly" => Ok(()),
            _ => match descriptor.strip_prefix("every ") {
                Some(d) => go_duration(d).map_err(|e| format!("failed to parse duration {spec}: {e}")),
                None => Err(format!("unrecognized descriptor: {spec}")),
            },
        };
    }
    let fields: Vec<&str> = spec.split_whitespace().collect();
    if fields.len() != 5 {
        let shown = format!("[{}]", fields.join(" "));
        return Err(format!("expected exactly 5 fields, found {}: {shown}", fields.len()));
    }
    for (field, bounds) in fields.iter().zip([&MINUTES, &HOURS, &DOM, &MONTHS, &DOW]) {
        for range in field.split(',').filter(|r| !r.is_empty()) {
            cron_range(range, bounds)?;
        }
    }
    Ok(())
}

/// robfig/cron's getRange for one comma-separated part of a field.
fn cron_range(expr: &str, r: &Bounds) -> Result<(), String> {
    let range_and_step: Vec<&str> = expr.split('/').collect();
    let low_and_high: Vec<&str> = range_and_step[0].split('-').collect();
    let (start, mut end) = if low_and_high[0] == "*" || low_and_high[0] == "?" {
        (r.min, r.max)
    } else {
        let start = int_or_name(low_and_high[0], r)?;
        match low_and_high.len() {
            1 => (start, start),
            2 => (start, int_or_name(low_and_high[1], r)?),
            _ => return Err(format!("too many hyphens: {expr}")),
        }
    };
    let step = match range_and_step.len() {
        1 => 1,
        2 => {
            let step = must_parse_int(range_and_step[1])?;
            // "N/step" means "N-max/step".
            if low_and_high.len() == 1 {
                end = r.max;
            }
            step
        }
        _ => return Err(format!("too many slashes: {expr}")),
    };
    if start < r.min {
        return Err(format!("beginning of range ({start}) below minimum ({}): {expr}", r.min));
    }
    if end > r.max {
        return Err(format!("end of range ({end}) above maximum ({}): {expr}", r.max));
    }
    if start > end {
        return Err(format!("beginning of range ({start}) beyond end of range ({end}): {expr}"));
    }
    if step == 0 {
        return Err(format!("step of range should be a positive number: {expr}"));
    }
    Ok(())
}

fn int_or_name(expr: &str, r: &Bounds) -> Result<u64, String> {
    let lower = expr.to_ascii_lowercase();
    match r.names.iter().find(|(name, _)| *name == lower) {
        Some((_, n)) => Ok(*n),
        None => must_parse_int(expr),
    }
}

/// mustParseInt: strconv.Atoi, with its error text, and no negatives.
fn must_parse_int(expr: &str) -> Result<u64, String> {
    let digits = expr.strip_prefix(['+', '-']).unwrap_or(expr);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!("failed to parse int from {expr}: strconv.Atoi: parsing {}: invalid syntax", q(expr)));
    }
    match expr.parse::<i64>() {
        Err(_) => {
            Err(format!("failed to parse int from {expr}: strconv.Atoi: parsing {}: value out of range", q(expr)))
        }
        Ok(n) if n < 0 => Err(format!("negative number ({n}) not allowed: {expr}")),
        Ok(n) => Ok(n.unsigned_abs()),
    }
}

/// Whether Go's time.ParseDuration takes `s` (the units and signs it knows); its error text if not.
fn go_duration(s: &str) -> Result<(), String> {
    let bad = || format!("time: invalid duration {}", q(s));
    let mut rest = s.strip_prefix(['+', '-']).unwrap_or(s);
    if rest == "0" {
        return Ok(());
    }
    if rest.is_empty() {
        return Err(bad());
    }
    while !rest.is_empty() {
        let number_end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(rest.len());
        let number = &rest[..number_end];
        if number.is_empty() || number == "." {
            return Err(bad());
        }
        rest = &rest[number_end..];
        let unit_end = rest.find(|c: char| c.is_ascii_digit() || c == '.').unwrap_or(rest.len());
        let unit = &rest[..unit_end];
        if unit.is_empty() {
            return Err(format!("time: missing unit in duration {}", q(s)));
        }
        if !matches!(unit, "ns" | "us" | "µs" | "μs" | "ms" | "s" | "m" | "h") {
            return Err(format!("time: unknown unit {} in duration {}", q(unit), q(s)));
        }
        rest = &rest[unit_end..];
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_parse_as_robfig_cron_does() {
        for ok in [
            "*/1 * * * *",
            "0 0 * * 0",
            "5 4 * * sun",
            "0 0 1 jan,JUL *",
            "@hourly",
            "@every 1h30m",
            "0-59/15 * * * *",
            "? * * * *",
        ] {
            assert_eq!(parse_standard(ok), Ok(()), "{ok}");
        }
        for (bad, want) in [
            ("bad", "expected exactly 5 fields, found 1: [bad]"),
            ("* * * *", "expected exactly 5 fields, found 4: [* * * *]"),
            ("60 * * * *", "end of range (60) above maximum (59): 60"),
            ("* * 0 * *", "beginning of range (0) below minimum (1): 0"),
            ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
            ("*/0 * * * *", "step of range should be a positive number: */0"),
            ("x * * * *", "failed to parse int from x: strconv.Atoi: parsing \"x\": invalid syntax"),
            ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
            ("*/1/2 * * * *", "too many slashes: */1/2"),
            ("* * * * 7", "end of range (7) above maximum (6): 7"),
            ("@often", "unrecognized descriptor: @often"),
            ("@every 5", "failed to parse duration @every 5: time: missing unit in duration \"5\""),
        ] {
            assert_eq!(parse_standard(bad), Err(want.to_owned()), "{bad}");
        }
    }
}
