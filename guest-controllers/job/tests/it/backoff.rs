//! backoff_utils_test.go's tables restated as data: `TestNewBackoffRecord` (the store a record
//! starts from is the record rebuilt from pods already counted, see `backoff_utils`),
//! `TestGetFinishedTime`, `TestGetRemainingBackoffTime`, `TestGetRemainingBackoffTimePerIndex`.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use wasmcm_guest::Instant;
use wasmcm_job::backoff_utils::{BackoffRecord, finished_time, new_backoff_record, remaining_time_per_index};

/// 2009-11-10T23:00:00Z, upstream's defaultTestTime.
fn t0() -> Timestamp {
    "2009-11-10T23:00:00Z".parse().unwrap()
}

fn at(ms: i64) -> Timestamp {
    t0().checked_add(SignedDuration::from_millis(ms)).unwrap()
}

fn status(name: &str, state: Value) -> Value {
    json!({"name": name, "image": "i", "imageID": "", "ready": false, "restartCount": 0, "state": state})
}

fn pod(v: Value) -> Pod {
    serde_json::from_value(v).unwrap()
}

/// A pod of `phase` whose one container finished at `t`.
fn finished(phase: &str, t: Timestamp) -> Pod {
    pod(json!({"metadata": {}, "status": {"phase": phase,
        "containerStatuses": [status("c", json!({"terminated": {"exitCode": 0, "finishedAt": t.to_string()}}))]}}))
}

#[test]
fn new_backoff_record_as_upstream() {
    let record = |failures, last: Option<Timestamp>| BackoffRecord {
        failures_after_last_success: failures,
        last_failure_time: last,
    };
    // (name, stored record, new succeeded (ms from t0), new failed, want)
    type Case = (&'static str, BackoffRecord, Vec<i64>, Vec<i64>, BackoffRecord);
    let cases: Vec<Case> = vec![
        ("Empty backoff store and one new failure", record(0, None), vec![], vec![0], record(1, Some(t0()))),
        ("Empty backoff store and two new failures", record(0, None), vec![], vec![0, -1], record(2, Some(t0()))),
        (
            "Empty backoff store, two failures followed by success",
            record(0, None),
            vec![0],
            vec![-2, -1],
            record(0, None),
        ),
        (
            "Empty backoff store, two failures, one success and two more failures",
            record(0, None),
            vec![-2],
            vec![0, -4, -3, -1],
            record(2, Some(t0())),
        ),
        (
            "Backoff store having failure count 2 and one new failure",
            record(2, None),
            vec![],
            vec![0],
            record(3, Some(t0())),
        ),
        (
            "Empty backoff store with success and failure at same timestamp",
            record(0, None),
            vec![0],
            vec![0],
            record(0, None),
        ),
        ("Empty backoff store with no success/failure", record(0, None), vec![], vec![], record(0, None)),
        ("Empty backoff store with one success", record(0, None), vec![0], vec![], record(0, None)),
    ];
    for (name, stored, succeeded, failed, want) in cases {
        let succeeded: Vec<Pod> = succeeded.into_iter().map(|ms| finished("Succeeded", at(ms))).collect();
        let failed: Vec<Pod> = failed.into_iter().map(|ms| finished("Failed", at(ms))).collect();
        let (s, f): (Vec<&Pod>, Vec<&Pod>) = (succeeded.iter().collect(), failed.iter().collect());
        assert_eq!(new_backoff_record(stored, &s, &f), want, "{name}");
    }
}

#[test]
fn finished_time_as_upstream() {
    let terminated =
        |secs: i64| status("c", json!({"terminated": {"exitCode": 0, "finishedAt": at(secs * 1000).to_string()}}));
    let running = status("c", json!({"running": {}}));
    let zero = status("c", json!({"terminated": {"exitCode": 0}}));
    let terminated_at = |at: &str| status("c", json!({"terminated": {"exitCode": 0, "finishedAt": at}}));
    let named = |name: &str, mut s: Value| {
        s["name"] = json!(name);
        s
    };
    let t = t0().to_string();
    let cases: Vec<(&str, Value, Timestamp)> = vec![
        (
            "Pod with multiple containers and all containers terminated",
            json!({"metadata": {}, "status": {"containerStatuses": [terminated(-1), terminated(0), terminated(-2)]}}),
            t0(),
        ),
        (
            "two containers in terminated state and one in running state; fallback to deletionTimestamp",
            json!({"metadata": {"deletionTimestamp": t}, "status": {"containerStatuses": [terminated(-1), running, terminated(-2)]}}),
            t0(),
        ),
        (
            "fallback to deletionTimestamp",
            json!({"metadata": {"deletionTimestamp": t}, "status": {"containerStatuses": [status("c", json!({"running": {}}))]}}),
            t0(),
        ),
        (
            "fallback to deletionTimestamp, decremented by grace period",
            json!({"metadata": {"deletionTimestamp": t, "deletionGracePeriodSeconds": 30},
                   "status": {"containerStatuses": [status("c", json!({"running": {}}))]}}),
            at(-30_000),
        ),
        (
            "fallback to PodReady.LastTransitionTime when status of the condition is False",
            json!({"metadata": {}, "status": {"containerStatuses": [zero.clone()],
                "conditions": [{"type": "Ready", "status": "False", "reason": "PodFailed", "lastTransitionTime": t}]}}),
            t0(),
        ),
        (
            "skip fallback to PodReady.LastTransitionTime when status of the condition is True",
            json!({"metadata": {"deletionTimestamp": t}, "status": {"containerStatuses": [zero.clone()],
                "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": at(-30_000).to_string()}]}}),
            t0(),
        ),
        (
            "fallback to creationTimestamp",
            json!({"metadata": {"creationTimestamp": t}, "status": {"containerStatuses": [zero]}}),
            t0(),
        ),
        (
            "Pod with sidecar container and all containers terminated",
            json!({"metadata": {}, "spec": {"containers": [], "initContainers": [{"name": "sidecar", "restartPolicy": "Always"}]},
                "status": {"containerStatuses": [terminated(-1)], "initContainerStatuses": [named("sidecar", terminated(0))]}}),
            t0(),
        ),
        // Ours: an init container that is not a sidecar finished before the others started.
        (
            "Pod with init container (not a sidecar) and all containers terminated",
            json!({"metadata": {}, "spec": {"containers": [], "initContainers": [{"name": "init"}]},
                "status": {"containerStatuses": [terminated(-1)], "initContainerStatuses": [named("init", terminated(0))]}}),
            at(-1000),
        ),
        (
            "zero finishedAt is not finished",
            json!({"metadata": {"creationTimestamp": t}, "status": {"containerStatuses": [terminated_at("0001-01-01T00:00:00Z")]}}),
            t0(),
        ),
    ];
    for (name, p, want) in cases {
        assert_eq!(finished_time(&pod(p)), want, "{name}");
    }
}

#[test]
fn remaining_backoff_time_as_upstream() {
    let now = |secs: i64| Instant::from_timestamp(at(secs * 1000));
    let (default, max) = (SignedDuration::from_secs(5), SignedDuration::from_secs(700));
    let record = |failures, last: Option<Timestamp>| BackoffRecord {
        failures_after_last_success: failures,
        last_failure_time: last,
    };
    let cases = [
        ("no failures", record(0, None), now(0), 0),
        ("one failure; current time and failure time are same", record(1, Some(t0())), now(0), 5),
        ("one failure; current time == 1 second + failure time", record(1, Some(t0())), now(1), 4),
        ("one failure; current time == expected backoff time", record(1, Some(t0())), now(5), 0),
        ("one failure; current time == expected backoff time + 1 Second", record(1, Some(t0())), now(6), 0),
        ("three failures; current time and failure time are same", record(3, Some(t0())), now(0), 20),
        ("eight failures; backoff not exceeding maxBackoff", record(8, Some(t0())), now(0), 640),
        ("nine failures; backoff exceeding maxBackoff", record(9, Some(t0())), now(0), 700),
    ];
    for (name, r, now, want) in cases {
        assert_eq!(r.remaining_time(now, default, max), SignedDuration::from_secs(want), "{name}");
    }

    // Per index: the failure counts of the index's last failed pod, plus its own failure.
    let failed = |counted: &str, ignored: Option<&str>| {
        let mut annotations = json!({"batch.kubernetes.io/job-index-failure-count": counted});
        if let Some(i) = ignored {
            annotations["batch.kubernetes.io/job-index-ignored-failure-count"] = json!(i);
        }
        pod(
            json!({"metadata": {"annotations": annotations, "deletionTimestamp": t0().to_string()}, "status": {"phase": "Failed"}}),
        )
    };
    let per_index = [
        ("no failures", None, 0),
        ("two prev failures; current time and failure time are same", Some(failed("2", None)), 20),
        (
            "one prev failure counted and one ignored; current time and failure time are same",
            Some(failed("1", Some("1"))),
            20,
        ),
    ];
    for (name, p, want) in per_index {
        assert_eq!(
            remaining_time_per_index(now(0), default, max, p.as_ref()),
            SignedDuration::from_secs(want),
            "{name}"
        );
    }
}
