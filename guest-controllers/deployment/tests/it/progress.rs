//! Progress conditions and the progress-deadline requeue, natively (upstream progress.go).

use crate::common::*;
use serde_json::{Value, json};
use wasmcm_deployment::fixtures::{deployment, replica_set};

/// A deployment rolling from web-1 (nginx:1) to web-2 (nginx:2), 4 replicas, surge 1 and no
/// unavailability, with web-2 at 1 replica that is not available yet: it can neither scale up
/// (surge used) nor scale down (no slack). `progressing` is its current Progressing condition.
fn stuck(progressing: Value, status: Value) -> Vec<Value> {
    let mut s = json!({"observedGeneration": 1, "replicas": 5, "updatedReplicas": 1, "readyReplicas": 4,
                       "availableReplicas": 4, "unavailableReplicas": 1,
                       "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable",
                                       "message": "Deployment has minimum availability.",
                                       "lastUpdateTime": "2026-06-01T10:00:00Z",
                                       "lastTransitionTime": "2026-06-01T10:00:00Z"}, progressing]});
    wasmcm_deployment::fixtures::merge(&mut s, status);
    vec![
        deployment(
            4,
            json!({"metadata": {"annotations": {"deployment.kubernetes.io/revision": "2"}},
                   "spec": {"strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                            "template": {"spec": {"containers": [{"name": "c", "image": "nginx:2"}]}}},
                   "status": s}),
        ),
        replica_set("web-1", "nginx:1", 1, 4, json!({})),
        replica_set(
            "web-2",
            "nginx:2",
            2,
            1,
            json!({"metadata": {"annotations": {"deployment.kubernetes.io/desired-replicas": "4",
                                                "deployment.kubernetes.io/max-replicas": "5"}},
                   "status": {"readyReplicas": 0, "availableReplicas": 0}}),
        ),
    ]
}

fn progressing(updated: &str, reason: &str) -> Value {
    json!({"type": "Progressing", "status": "True", "reason": reason, "message": "ReplicaSet \"web-2\" is progressing.",
           "lastUpdateTime": updated, "lastTransitionTime": "2026-06-01T09:00:00Z"})
}

#[test]
fn a_stuck_rollout_is_requeued_just_after_its_deadline() {
    // Last progress 100 s ago, deadline 600 s: look again in 500 s (+1 s), write nothing.
    let o = reconcile(&stuck(progressing("2026-06-01T11:58:20Z", "ReplicaSetUpdated"), json!({})));
    assert!(o.batches.is_empty(), "{o:?}");
    assert_eq!(o.requeue_after_ms, Some(501_000));
}

#[test]
fn past_the_deadline_progressing_turns_false() {
    let o = reconcile(&stuck(progressing("2026-06-01T11:49:59Z", "ReplicaSetUpdated"), json!({})));
    let status = status_write(&o).expect("status written");
    let c = condition(&status, "Progressing");
    assert_eq!(c["status"], "False");
    assert_eq!(c["reason"], "ProgressDeadlineExceeded");
    assert_eq!(c["message"], "ReplicaSet \"web-2\" has timed out progressing.");
    assert_eq!(c["lastTransitionTime"], "2026-06-01T12:00:00Z");
    assert_eq!(o.requeue_after_ms, None);

    // Once timed out it stays so, and is not requeued.
    let timed_out = json!({"type": "Progressing", "status": "False", "reason": "ProgressDeadlineExceeded",
        "message": "ReplicaSet \"web-2\" has timed out progressing.", "lastUpdateTime": "2026-06-01T11:55:00Z",
        "lastTransitionTime": "2026-06-01T11:55:00Z"});
    let o = reconcile(&stuck(timed_out, json!({})));
    assert!(o.batches.is_empty() && o.requeue_after_ms.is_none(), "{o:?}");
}

#[test]
fn progress_refreshes_the_deadline_but_is_no_transition() {
    // web-2's pod turned ready and available since the last status: progress.
    let mut objects = stuck(progressing("2026-06-01T11:00:00Z", "ReplicaSetUpdated"), json!({}));
    objects[2]["status"]["readyReplicas"] = 1.into();
    objects[2]["status"]["availableReplicas"] = 1.into();
    let o = reconcile(&objects);
    let status = status_write(&o).expect("status written");
    let c = condition(&status, "Progressing");
    assert_eq!(c["reason"], "ReplicaSetUpdated");
    assert_eq!(c["lastUpdateTime"], "2026-06-01T12:00:00Z");
    assert_eq!(c["lastTransitionTime"], "2026-06-01T09:00:00Z");
}

#[test]
fn without_a_deadline_there_is_no_progressing_condition_and_no_requeue() {
    let mut objects = stuck(progressing("2026-06-01T11:00:00Z", "ReplicaSetUpdated"), json!({}));
    objects[0]["spec"]["progressDeadlineSeconds"] = i32::MAX.into();
    let o = reconcile(&objects);
    let status = status_write(&o).expect("the condition is removed");
    assert_eq!(condition(&status, "Progressing"), Value::Null);
    assert_eq!(o.requeue_after_ms, None);
}

#[test]
fn availability_follows_max_unavailable() {
    // (available pods, maxUnavailable, Available status, reason)
    let cases = [
        (4, json!(0), "True", "MinimumReplicasAvailable"),
        (3, json!(1), "True", "MinimumReplicasAvailable"),
        (3, json!(0), "False", "MinimumReplicasUnavailable"),
        (2, json!("25%"), "False", "MinimumReplicasUnavailable"),
    ];
    for (available, unavailable, want, reason) in cases {
        // A surge of 1, so that a maxUnavailable of 0 stays 0.
        let d = deployment(
            4,
            json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1, "maxUnavailable": unavailable}}}}),
        );
        let rs = replica_set("web-1", "nginx:1", 1, 4, json!({"status": {"availableReplicas": available}}));
        let o = reconcile(&[d, rs]);
        let c = condition(&status_write(&o).unwrap(), "Available");
        assert_eq!((c["status"].as_str(), c["reason"].as_str()), (Some(want), Some(reason)), "{available} available");
    }
}

#[test]
fn a_complete_rollout_says_so_and_counts_match() {
    let d = deployment(3, json!({}));
    let rs = replica_set("web-1", "nginx:1", 1, 3, json!({}));
    let o = reconcile(&[d, rs]);
    let status = status_write(&o).unwrap();
    let s = &status["status"];
    assert_eq!(
        (s["replicas"].as_i64(), s["updatedReplicas"].as_i64(), s["readyReplicas"].as_i64()),
        (Some(3), Some(3), Some(3))
    );
    assert_eq!((s["availableReplicas"].as_i64(), s.get("unavailableReplicas")), (Some(3), None), "zero is omitted");
    let c = condition(&status, "Progressing");
    assert_eq!(c["reason"], "NewReplicaSetAvailable");
    assert_eq!(c["message"], "ReplicaSet \"web-1\" has successfully progressed.");
}

#[test]
fn replica_failure_is_lifted_from_the_replica_sets_and_cleared_with_them() {
    let failure = json!({"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
                         "message": "pods \"web-1-x\" is forbidden: exceeded quota",
                         "lastTransitionTime": "2026-06-01T11:00:00Z"});
    let d = deployment(3, json!({}));
    let rs = replica_set("web-1", "nginx:1", 1, 3, json!({"status": {"conditions": [failure]}}));
    let o = reconcile(&[d.clone(), rs]);
    let status = status_write(&o).unwrap();
    let c = condition(&status, "ReplicaFailure");
    assert_eq!(c["reason"], "FailedCreate");
    assert_eq!(c["lastUpdateTime"], "2026-06-01T11:00:00Z");

    let mut with_failure = d;
    with_failure["status"] = status["status"].clone();
    let o = reconcile(&[with_failure, replica_set("web-1", "nginx:1", 1, 3, json!({}))]);
    assert_eq!(condition(&status_write(&o).unwrap(), "ReplicaFailure"), Value::Null);
}
