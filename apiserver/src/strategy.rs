//! What the registry strategies of the workload kinds write on create and update beyond
//! defaulting and validation (pkg/registry/batch/job and pkg/registry/apps/daemonset
//! strategy.go): a Job's generated selector and pod labels, a DaemonSet's template generation,
//! and which kinds' status writes are defaulted like decoded objects.
//!
//! Server-owned metadata, status resets and `metadata.generation` are `api`'s, defaults are
//! `defaults`', and whether the result is acceptable is `validation`'s. Input of the wrong shape
//! is left for validation to report.

use serde_json::{Map, Value, json};
use wasmcm_core::str_at;

use super::defaults::{self, child_obj};

/// The labels the Job registry puts on a Job's pods: the legacy unprefixed pair and the
/// `batch.kubernetes.io/` pair (both still written in 1.35).
pub(crate) const JOB_NAME_LABELS: [&str; 2] = ["job-name", "batch.kubernetes.io/job-name"];
pub(crate) const CONTROLLER_UID_LABELS: [&str; 2] = ["controller-uid", "batch.kubernetes.io/controller-uid"];

/// A DaemonSet's `spec.templateGeneration`, which apps/v1 carries in this annotation.
pub(crate) const TEMPLATE_GENERATION: &str = "deprecated.daemonset.template.generation";

/// `PrepareForCreate`, after defaulting and after the server set name and uid.
pub(crate) fn prepare_create(api_version: &str, kind: &str, object: &mut Value) {
    match (api_version, kind) {
        ("batch/v1", "Job") => {
            generate_job_selector(object);
            // What upstream's defaulting does when the stored Job is read back: a Job created
            // without labels is shown with its pods' labels, the generated ones included.
            defaults::apply(api_version, kind, object);
        }
        ("apps/v1", "DaemonSet") => set_template_generation(object, 1),
        _ => {}
    }
}

/// `PrepareForUpdate` of the main resource, after defaulting, given the stored object.
pub(crate) fn prepare_update(api_version: &str, kind: &str, new: &mut Value, old: &Value) {
    if (api_version, kind) == ("apps/v1", "DaemonSet") {
        // The client's value is not taken: the generation moves on exactly when the
        // template changes.
        let old_generation = str_at(old, &format!("/metadata/annotations/{TEMPLATE_GENERATION}")).parse().unwrap_or(0);
        let changed = new.pointer("/spec/template") != old.pointer("/spec/template");
        set_template_generation(new, old_generation + i64::from(changed));
    }
}

/// Whether a write to this kind's `/status` is defaulted as a decoded object is: the workload
/// kinds, whose status defaults are counters Go always writes.
pub(crate) fn defaults_status(api_version: &str, kind: &str) -> bool {
    matches!(
        (api_version, kind),
        ("apps/v1", "DaemonSet" | "StatefulSet" | "ReplicaSet")
            | ("batch/v1", "Job" | "CronJob")
            | ("v1", "ReplicationController")
    )
}

fn set_template_generation(object: &mut Value, generation: i64) {
    let Some(obj) = object.as_object_mut() else { return };
    if let Some(annotations) = child_obj(obj, "metadata").and_then(|m| child_obj(m, "annotations")) {
        annotations.insert(TEMPLATE_GENERATION.into(), json!(generation.to_string()));
    }
}

/// `generateSelectorIfNeeded`: unless `spec.manualSelector` is true, the pod template gets the
/// job-name and controller-uid labels (where the user did not set them; a conflicting value is
/// validation's to reject) and the selector gets `batch.kubernetes.io/controller-uid`.
fn generate_job_selector(job: &mut Value) {
    // Defaulting has made it false when unset; anything else is manual or for validation.
    if job.pointer("/spec/manualSelector") != Some(&json!(false)) {
        return;
    }
    let name = str_at(job, "/metadata/name").to_owned();
    let uid = str_at(job, "/metadata/uid").to_owned();
    let Some(spec) = job.get_mut("spec").and_then(Value::as_object_mut) else { return };
    let labels =
        child_obj(spec, "template").and_then(|t| child_obj(t, "metadata")).and_then(|m| child_obj(m, "labels"));
    if let Some(labels) = labels {
        for (keys, value) in [(JOB_NAME_LABELS, &name), (CONTROLLER_UID_LABELS, &uid)] {
            for key in keys {
                labels.entry(key).or_insert_with(|| json!(value));
            }
        }
    }
    let match_labels: Option<&mut Map<String, Value>> =
        child_obj(spec, "selector").and_then(|s| child_obj(s, "matchLabels"));
    if let Some(match_labels) = match_labels {
        match_labels.entry(CONTROLLER_UID_LABELS[1]).or_insert_with(|| json!(uid));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn created(api_version: &str, kind: &str, mut object: Value) -> Value {
        defaults::apply(api_version, kind, &mut object);
        prepare_create(api_version, kind, &mut object);
        object
    }

    fn job(template_labels: Option<Value>) -> Value {
        let mut j = json!({"metadata": {"name": "pi", "uid": "u-1"}, "spec": {"template": {"spec": {
            "restartPolicy": "Never", "containers": [{"name": "c", "image": "perl"}]}}}});
        if let Some(labels) = template_labels {
            j["spec"]["template"]["metadata"] = json!({"labels": labels});
        }
        j
    }

    #[test]
    fn a_job_gets_its_generated_selector_and_labels() {
        let j = created("batch/v1", "Job", job(None));
        let want = json!({"batch.kubernetes.io/controller-uid": "u-1", "batch.kubernetes.io/job-name": "pi",
            "controller-uid": "u-1", "job-name": "pi"});
        assert_eq!(j["spec"]["template"]["metadata"]["labels"], want);
        assert_eq!(j["spec"]["selector"], json!({"matchLabels": {"batch.kubernetes.io/controller-uid": "u-1"}}));
        // Read back with defaults: the Job's own labels are its pods'.
        assert_eq!(j["metadata"]["labels"], want);
        assert_eq!(j["spec"]["manualSelector"], json!(false));
    }

    #[test]
    fn a_job_keeps_its_own_labels_and_manual_selectors() {
        // Labels of the template given: those become the Job's before the generated ones exist.
        let j = created("batch/v1", "Job", job(Some(json!({"app": "pi", "job-name": "other"}))));
        assert_eq!(j["metadata"]["labels"], json!({"app": "pi", "job-name": "other"}));
        assert_eq!(j["spec"]["template"]["metadata"]["labels"]["job-name"], "other");
        assert_eq!(j["spec"]["template"]["metadata"]["labels"]["controller-uid"], "u-1");

        let mut manual = job(Some(json!({"app": "pi"})));
        manual["spec"]["manualSelector"] = json!(true);
        manual["spec"]["selector"] = json!({"matchLabels": {"app": "pi"}});
        let j = created("batch/v1", "Job", manual);
        assert_eq!(j["spec"]["selector"], json!({"matchLabels": {"app": "pi"}}));
        assert_eq!(j["spec"]["template"]["metadata"]["labels"], json!({"app": "pi"}));
    }

    #[test]
    fn a_daemon_set_counts_template_generations() {
        let ds = json!({"metadata": {"name": "d"}, "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}}});
        let ds = created("apps/v1", "DaemonSet", ds);
        assert_eq!(ds["metadata"]["annotations"][TEMPLATE_GENERATION], "1");

        let mut same = ds.clone();
        same["metadata"]["annotations"][TEMPLATE_GENERATION] = json!("7");
        same["spec"]["minReadySeconds"] = json!(5);
        prepare_update("apps/v1", "DaemonSet", &mut same, &ds);
        assert_eq!(same["metadata"]["annotations"][TEMPLATE_GENERATION], "1");

        let mut changed = ds.clone();
        changed["spec"]["template"]["spec"]["containers"][0]["image"] = json!("x");
        prepare_update("apps/v1", "DaemonSet", &mut changed, &ds);
        assert_eq!(changed["metadata"]["annotations"][TEMPLATE_GENERATION], "2");
    }

    #[test]
    fn odd_json_is_left_alone() {
        for (api_version, kind, object) in [
            ("batch/v1", "Job", json!({"spec": {"template": 3}})),
            ("batch/v1", "Job", json!({"spec": {"template": {"metadata": {"labels": "x"}}, "selector": []}})),
            ("batch/v1", "Job", json!("job")),
            ("apps/v1", "DaemonSet", json!({"metadata": {"annotations": 1}})),
        ] {
            let mut o = object.clone();
            prepare_create(api_version, kind, &mut o);
            let old = o.clone();
            prepare_update(api_version, kind, &mut o, &old);
        }
    }
}
