//! Objects for the tests and the reconcile bench, shaped as upstream's test helpers make them
//! (`newJob`, `newPod`, `newPodList`, `buildPod`): a Job `foobar` in `default` selecting
//! `foo: bar`, and pods it controls carrying the tracking finalizer.

use serde_json::{Value, json};
use wasmcm_guest::{Instant, MemoryCache, Request};

pub const NAMESPACE: &str = "default";

/// The clock of the tests: 2026-06-01T12:00:00Z.
pub fn now() -> Instant {
    Instant { seconds: 1_780_315_200, nanoseconds: 0 }
}

/// `now` as RFC 3339, `offset_seconds` away.
pub fn time(offset_seconds: i64) -> String {
    Instant { seconds: now().seconds + offset_seconds, nanoseconds: 0 }.timestamp().to_string()
}

pub fn request(name: &str) -> Request {
    Request::new(NAMESPACE, name, now())
}

pub fn cache(objects: &[Value]) -> MemoryCache {
    MemoryCache::from_objects(objects).expect("fixtures are Kubernetes JSON")
}

/// RFC 7386 merge of `patch` into `target`.
pub fn merge(target: &mut Value, patch: Value) {
    wasmcm_guest::json::merge_patch(target, patch);
}

/// `newJob(parallelism, completions, backoffLimit, completionMode)`: `None` leaves a field
/// unset (upstream's -1), `extra` is merged in.
pub fn job(parallelism: Option<i32>, completions: Option<i32>, backoff_limit: i32, mode: &str, extra: Value) -> Value {
    let mut j = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "foobar", "namespace": NAMESPACE, "uid": "job-uid", "resourceVersion": "10",
                     "generation": 1, "creationTimestamp": time(-3600)},
        "spec": {
            "selector": {"matchLabels": {"foo": "bar"}},
            "manualSelector": true,
            "template": {
                "metadata": {"labels": {"foo": "bar"}},
                "spec": {"containers": [{"name": "c", "image": "foo/bar"}], "restartPolicy": "Never"},
            },
            "backoffLimit": backoff_limit,
            "parallelism": parallelism,
            "completions": completions,
        },
        "status": {},
    });
    if !mode.is_empty() {
        j["spec"]["completionMode"] = json!(mode);
    }
    merge(&mut j, extra);
    j
}

/// `newPod(name, job)` in `phase`, carrying the tracking finalizer, with upstream's
/// `testFinishedAt` (long ago: no back-off) on terminated pods; `extra` is merged in. Pods are
/// scheduled (a node), so a delete leaves them terminating as a kubelet would.
pub fn pod(name: &str, phase: &str, extra: Value) -> Value {
    let mut p = json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name, "namespace": NAMESPACE, "uid": name, "resourceVersion": "20",
            "creationTimestamp": time(-600),
            "labels": {"foo": "bar"},
            "finalizers": ["batch.kubernetes.io/job-tracking"],
            "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": "foobar", "uid": "job-uid",
                                 "controller": true, "blockOwnerDeletion": true}],
        },
        // As the API server defaults a pod, so that patching one changes nothing else.
        "spec": {
            "containers": [{"name": "c", "image": "foo/bar", "imagePullPolicy": "Always",
                            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
            "restartPolicy": "Never", "nodeName": "node-1", "dnsPolicy": "ClusterFirst", "enableServiceLinks": true,
            "schedulerName": "default-scheduler", "terminationGracePeriodSeconds": 30,
        },
        "status": {"phase": phase},
    });
    if phase == "Succeeded" || phase == "Failed" {
        p["status"]["containerStatuses"] = json!([{"name": "c", "image": "foo/bar", "imageID": "", "ready": false,
            "restartCount": 0, "state": {"terminated": {"exitCode": i32::from(phase == "Failed"),
            "finishedAt": "0001-01-01T00:00:01Z"}}}]);
    }
    merge(&mut p, extra);
    p
}

/// A Ready condition, True since `now`.
pub fn ready() -> Value {
    json!({"status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": time(-60)}]}})
}

/// `count` pods `<prefix>-<i>` in `phase`.
pub fn pods(prefix: &str, count: usize, phase: &str, extra: &Value) -> Vec<Value> {
    (0..count).map(|i| pod(&format!("{prefix}-{i}"), phase, extra.clone())).collect()
}

/// A pod of completion index `index` ("invalid" or any text works as upstream's), with the
/// hostname a Job gives it.
pub fn indexed_pod(name: &str, index: &str, phase: &str) -> Value {
    pod(
        name,
        phase,
        json!({"metadata": {"annotations": {"batch.kubernetes.io/job-completion-index": index}},
               "spec": {"hostname": format!("foobar-{index}")}}),
    )
}
