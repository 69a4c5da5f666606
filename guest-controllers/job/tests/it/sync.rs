//! `TestControllerSyncJob`'s table (job_controller_test.go), restated as data and run against
//! the API server's write path.
//!
//! Upstream checks the status its sync wrote last; here a sync is followed by the reconciles
//! the removal of counted pods' finalizers wakes, which write what upstream writes after the
//! removals in the same sync (`World::sync`), and the Job's status is checked as stored.
//! Feature gates are upstream's newest defaults (every gate of the table on), so:
//! `terminating` is always reported; a Job completes through SuccessCriteriaMet (reason
//! CompletionsReached) and fails through FailureTarget, each kept beside its terminal
//! condition. Cases whose only difference was a gate turned off are kept with the newest
//! behaviour. Cases of unsatisfied expectations are the host's (it holds the key until its
//! creates and deletes are observed; `host/src/runtime/expectations.rs` pins that).

use std::collections::BTreeSet;

use serde_json::{Value, json};
use wasmcm_job::fixtures::{indexed_pod, job, pod, pods, ready, time};

use crate::common::*;

#[derive(Clone)]
struct Case {
    name: &'static str,
    parallelism: Option<i32>,
    completions: Option<i32>,
    backoff_limit: i32,
    deleting: bool,
    pod_limit: usize,
    mode: &'static str,
    was_suspended: bool,
    suspend: bool,
    pod_replacement_policy: Option<&'static str>,
    pod_failure_policy: Option<Value>,
    /// (active, succeeded, failed) of the status, and its extra fields.
    initial_status: Option<(i64, i64, i64, Value)>,
    /// A counted failed pod finished this many seconds ago (upstream's back-off record).
    failed_before_s: Option<i64>,
    pod_writes_fail: bool,
    pending: usize,
    active: usize,
    ready: usize,
    succeeded: usize,
    failed: usize,
    terminating: usize,
    with_indexes: &'static [(&'static str, &'static str)],

    expected_creations: usize,
    expected_deletions: usize,
    expected_active: i64,
    expected_ready: i64,
    expected_succeeded: i64,
    expected_completed_idxs: &'static str,
    expected_failed: i64,
    expected_terminating: i64,
    /// (type, status, reason, message)
    expected_conditions: Vec<(&'static str, &'static str, &'static str, &'static str)>,
    expected_created_indexes: &'static [i64],
    expected_pod_patches: usize,
}

fn base(name: &'static str, parallelism: i32, completions: Option<i32>, backoff_limit: i32) -> Case {
    Case {
        name,
        parallelism: Some(parallelism),
        completions,
        backoff_limit,
        deleting: false,
        pod_limit: 0,
        mode: "",
        was_suspended: false,
        suspend: false,
        pod_replacement_policy: None,
        pod_failure_policy: None,
        initial_status: None,
        failed_before_s: None,
        pod_writes_fail: false,
        pending: 0,
        active: 0,
        ready: 0,
        succeeded: 0,
        failed: 0,
        terminating: 0,
        with_indexes: &[],
        expected_creations: 0,
        expected_deletions: 0,
        expected_active: 0,
        expected_ready: 0,
        expected_succeeded: 0,
        expected_completed_idxs: "",
        expected_failed: 0,
        expected_terminating: 0,
        expected_conditions: vec![],
        expected_created_indexes: &[],
        expected_pod_patches: 0,
    }
}

const COMPLETE: [(&str, &str, &str, &str); 2] = [
    ("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
    ("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
];
const BACKOFF_LIMIT_EXCEEDED: [(&str, &str, &str, &str); 2] = [
    ("FailureTarget", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
    ("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
];
const SUSPENDED: (&str, &str, &str, &str) = ("Suspended", "True", "JobSuspended", "Job suspended");

fn cases() -> Vec<Case> {
    vec![
        Case { expected_creations: 2, expected_active: 2, ..base("job start", 2, Some(5), 6) },
        Case { expected_creations: 2, expected_active: 2, ..base("WQ job start", 2, None, 6) },
        Case { pending: 2, expected_active: 2, ..base("pending pods", 2, Some(5), 6) },
        Case { active: 3, ready: 2, expected_active: 3, expected_ready: 2, ..base("correct # of pods", 3, Some(5), 6) },
        Case { active: 2, expected_active: 2, ..base("WQ job: correct # of pods", 2, None, 6) },
        Case {
            active: 1,
            succeeded: 1,
            expected_creations: 1,
            expected_active: 2,
            expected_succeeded: 1,
            expected_pod_patches: 1,
            ..base("too few active pods", 2, Some(5), 6)
        },
        Case {
            active: 1,
            failed: 1,
            pod_replacement_policy: Some("Failed"),
            terminating: 1,
            expected_terminating: 1,
            // Removes the failed pod's finalizer; the terminating one is not failed yet.
            expected_pod_patches: 1,
            expected_failed: 1,
            expected_active: 1,
            ..base("WQ job: recreate pods when failed", 1, None, 6)
        },
        Case {
            active: 1,
            failed: 1,
            terminating: 1,
            expected_terminating: 1,
            expected_active: 1,
            expected_pod_patches: 2,
            expected_failed: 2,
            ..base("WQ job: turn on PodReplacementPolicy but not set PodReplacementPolicy", 1, Some(1), 6)
        },
        Case {
            active: 1,
            failed: 1,
            pod_replacement_policy: Some("TerminatingOrFailed"),
            terminating: 1,
            expected_terminating: 1,
            expected_active: 1,
            expected_pod_patches: 2,
            expected_failed: 2,
            ..base("WQ job: recreate pods when terminating or failed", 1, None, 6)
        },
        Case {
            active: 2,
            terminating: 4,
            pod_replacement_policy: Some("Failed"),
            expected_terminating: 5,
            expected_active: 1,
            expected_deletions: 1,
            expected_pod_patches: 1,
            ..base("more terminating pods than parallelism", 1, Some(1), 6)
        },
        Case {
            // Repro for https://github.com/kubernetes/kubernetes/issues/122235
            active: 2,
            terminating: 4,
            pod_failure_policy: Some(json!({"rules": []})),
            // Upstream: nil with the gates off; reported with them on.
            expected_terminating: 5,
            expected_active: 1,
            expected_deletions: 1,
            expected_pod_patches: 1,
            ..base("more terminating pods than parallelism; PodFailurePolicy used", 1, Some(1), 6)
        },
        Case {
            failed_before_s: Some(0),
            initial_status: Some((0, 0, 0, json!({"startTime": time(0)}))),
            ..base("too few active pods and active back-off", 1, Some(1), 6)
        },
        Case {
            // A record of no failures: the pod is created.
            expected_creations: 1,
            expected_active: 1,
            ..base("too few active pods and no back-offs", 1, Some(1), 6)
        },
        Case {
            active: 1,
            expected_creations: 1,
            expected_active: 2,
            ..base("too few active pods with a dynamic job", 2, None, 6)
        },
        Case {
            pod_writes_fail: true,
            active: 1,
            succeeded: 1,
            expected_creations: 1,
            expected_active: 1,
            expected_succeeded: 0,
            expected_pod_patches: 1,
            ..base("too few active pods, with controller error", 2, Some(5), 6)
        },
        Case {
            active: 3,
            expected_deletions: 1,
            expected_active: 2,
            expected_pod_patches: 1,
            expected_terminating: 1,
            ..base("too many active pods", 2, Some(5), 6)
        },
        Case {
            active: 3,
            expected_deletions: 1,
            expected_active: 2,
            expected_pod_patches: 1,
            expected_terminating: 1,
            ..base("too many active pods; PodReplacementPolicy enabled", 2, Some(5), 6)
        },
        Case {
            pod_writes_fail: true,
            active: 3,
            expected_deletions: 0,
            expected_pod_patches: 1,
            expected_active: 3,
            ..base("too many active pods, with controller error", 2, Some(5), 6)
        },
        Case {
            active: 3,
            ready: 3,
            expected_deletions: 1,
            expected_active: 2,
            expected_pod_patches: 1,
            expected_ready: 2,
            expected_terminating: 1,
            ..base("count ready pods when too many active pods", 2, Some(5), 6)
        },
        Case {
            active: 1,
            succeeded: 1,
            failed: 1,
            expected_creations: 1,
            expected_active: 2,
            expected_succeeded: 1,
            expected_failed: 1,
            expected_pod_patches: 2,
            ..base("failed + succeed pods: reset backoff delay", 2, Some(5), 6)
        },
        Case {
            active: 1,
            failed: 1,
            expected_creations: 1,
            expected_active: 2,
            expected_failed: 1,
            expected_pod_patches: 1,
            ..base("new failed pod", 2, Some(5), 6)
        },
        Case {
            initial_status: Some((1, 0, 1, json!({}))),
            active: 1,
            expected_active: 1,
            expected_failed: 1,
            ..base("no new pod; possible finalizer update of failed pod", 1, Some(1), 6)
        },
        Case {
            pod_writes_fail: true,
            active: 1,
            failed: 1,
            expected_creations: 1,
            expected_active: 1,
            expected_failed: 0,
            expected_pod_patches: 1,
            ..base("only new failed pod with controller error", 2, Some(5), 6)
        },
        Case {
            succeeded: 5,
            expected_succeeded: 5,
            expected_conditions: COMPLETE.to_vec(),
            expected_pod_patches: 5,
            ..base("job finish", 2, Some(5), 6)
        },
        Case {
            active: 1,
            succeeded: 1,
            expected_active: 1,
            expected_succeeded: 1,
            expected_pod_patches: 1,
            ..base("WQ job finishing", 2, None, 6)
        },
        Case {
            succeeded: 2,
            expected_succeeded: 2,
            expected_conditions: COMPLETE.to_vec(),
            expected_pod_patches: 2,
            ..base("WQ job all finished", 2, None, 6)
        },
        Case {
            succeeded: 1,
            failed: 1,
            expected_succeeded: 1,
            expected_failed: 1,
            expected_conditions: COMPLETE.to_vec(),
            expected_pod_patches: 2,
            ..base("WQ job all finished despite one failure", 2, None, 6)
        },
        Case {
            active: 10,
            expected_deletions: 8,
            expected_active: 2,
            expected_pod_patches: 8,
            expected_terminating: 8,
            ..base("more active pods than parallelism", 2, Some(5), 6)
        },
        Case {
            active: 3,
            succeeded: 2,
            expected_deletions: 1,
            expected_active: 2,
            expected_succeeded: 2,
            expected_pod_patches: 3,
            expected_terminating: 1,
            ..base("more active pods than remaining completions", 3, Some(4), 6)
        },
        Case {
            active: 2,
            succeeded: 2,
            expected_active: 2,
            expected_succeeded: 2,
            expected_pod_patches: 2,
            ..base("status change", 2, Some(5), 6)
        },
        Case {
            deleting: true,
            pending: 1,
            active: 1,
            succeeded: 1,
            expected_active: 2,
            expected_succeeded: 1,
            expected_pod_patches: 3,
            ..base("deleting job", 2, Some(5), 6)
        },
        Case { pod_limit: 10, expected_creations: 10, expected_active: 10, ..base("limited pods", 100, Some(200), 6) },
        Case {
            deleting: true,
            failed: 1,
            expected_failed: 1,
            expected_conditions: BACKOFF_LIMIT_EXCEEDED.to_vec(),
            expected_pod_patches: 1,
            ..base("too many job failures", 2, Some(5), 0)
        },
        Case {
            mode: "Indexed",
            expected_creations: 2,
            expected_active: 2,
            expected_created_indexes: &[0, 1],
            ..base("indexed job start", 2, Some(5), 6)
        },
        Case {
            mode: "Indexed",
            pod_replacement_policy: Some("Failed"),
            terminating: 1,
            expected_creations: 1,
            expected_active: 1,
            expected_created_indexes: &[0],
            expected_terminating: 1,
            ..base("indexed job with some pods deleted, podReplacementPolicy Failed", 2, Some(5), 6)
        },
        Case {
            mode: "Indexed",
            pod_replacement_policy: Some("TerminatingOrFailed"),
            terminating: 1,
            expected_creations: 2,
            expected_active: 2,
            expected_created_indexes: &[0, 1],
            expected_terminating: 1,
            expected_pod_patches: 1,
            ..base("indexed job with some pods deleted, podReplacementPolicy TerminatingOrFailed", 2, Some(5), 6)
        },
        Case {
            mode: "Indexed",
            with_indexes: &[("0", "Succeeded"), ("1", "Failed"), ("1", "Succeeded"), ("2", "Succeeded")],
            expected_succeeded: 3,
            expected_failed: 1,
            expected_completed_idxs: "0-2",
            expected_conditions: COMPLETE.to_vec(),
            expected_pod_patches: 4,
            ..base("indexed job completed", 2, Some(3), 6)
        },
        Case {
            mode: "Indexed",
            with_indexes: &[("0", "Succeeded"), ("1", "Failed"), ("2", "Running")],
            expected_succeeded: 1,
            expected_failed: 2,
            expected_completed_idxs: "0",
            // Newest defaults: Failed waits for the deleted pod to terminate.
            expected_conditions: vec![BACKOFF_LIMIT_EXCEEDED[0]],
            expected_pod_patches: 3,
            expected_deletions: 1,
            expected_terminating: 1,
            ..base("indexed job failed", 2, Some(3), 0)
        },
        Case {
            mode: "Indexed",
            with_indexes: &[("0", "Succeeded"), ("1", "Failed"), ("2", "Running")],
            expected_succeeded: 1,
            expected_failed: 2,
            expected_completed_idxs: "0",
            expected_conditions: vec![BACKOFF_LIMIT_EXCEEDED[0]],
            expected_pod_patches: 3,
            expected_deletions: 1,
            expected_terminating: 1,
            ..base("count terminating pods when indexed job fails and PodReplacementPolicy enabled", 2, Some(3), 0)
        },
        Case {
            active: 2,
            ready: 2,
            failed: 1,
            expected_failed: 3,
            expected_conditions: vec![BACKOFF_LIMIT_EXCEEDED[0]],
            expected_pod_patches: 3,
            expected_deletions: 2,
            expected_terminating: 2,
            ..base("count ready pods when job fails", 2, Some(3), 0)
        },
        Case {
            mode: "Indexed",
            with_indexes: &[("0", "Succeeded"), ("1", "Succeeded"), ("1", "Succeeded")],
            expected_creations: 1,
            expected_active: 1,
            expected_succeeded: 2,
            expected_completed_idxs: "0,1",
            expected_created_indexes: &[2],
            expected_pod_patches: 3,
            ..base("indexed job repeated completed index", 2, Some(3), 6)
        },
        Case {
            mode: "Indexed",
            with_indexes: &[
                ("0", "Running"),
                ("2", "Succeeded"),
                ("3", "Pending"),
                ("4", "Succeeded"),
                ("5", "Succeeded"),
                ("7", "Succeeded"),
                ("8", "Succeeded"),
                ("9", "Succeeded"),
            ],
            expected_creations: 6,
            expected_active: 8,
            expected_succeeded: 6,
            expected_completed_idxs: "2,4,5,7-9",
            expected_created_indexes: &[1, 6, 10, 11, 12, 13],
            expected_pod_patches: 6,
            ..base("indexed job some running and completed pods", 8, Some(20), 6)
        },
        Case {
            mode: "Indexed",
            with_indexes: &[("0", "Failed"), ("1", "Pending"), ("2", "Failed")],
            expected_creations: 2,
            expected_active: 3,
            expected_failed: 2,
            expected_created_indexes: &[0, 2],
            expected_pod_patches: 2,
            ..base("indexed job some failed pods", 3, Some(4), 6)
        },
        Case {
            mode: "Indexed",
            active: 1,
            succeeded: 1,
            failed: 1,
            with_indexes: &[
                ("invalid", "Running"),
                ("invalid", "Succeeded"),
                ("invalid", "Failed"),
                ("invalid", "Pending"),
                ("0", "Succeeded"),
                ("1", "Running"),
                ("2", "Running"),
            ],
            expected_deletions: 3,
            expected_active: 2,
            expected_succeeded: 1,
            expected_failed: 0,
            expected_completed_idxs: "0",
            expected_pod_patches: 8,
            expected_terminating: 3,
            ..base("indexed job some pods without index", 2, Some(5), 6)
        },
        Case {
            mode: "Indexed",
            succeeded: 1,
            failed: 1,
            with_indexes: &[
                ("invalid", "Running"),
                ("0", "Succeeded"),
                ("1", "Running"),
                ("2", "Running"),
                ("2", "Pending"),
            ],
            expected_creations: 0,
            expected_deletions: 2,
            expected_active: 2,
            expected_succeeded: 1,
            expected_completed_idxs: "0",
            expected_pod_patches: 5,
            expected_terminating: 2,
            ..base("indexed job repeated indexes", 5, Some(5), 6)
        },
        Case {
            mode: "Indexed",
            with_indexes: &[
                ("0", "Succeeded"),
                ("5", "Running"),
                ("6", "Succeeded"),
                ("7", "Pending"),
                ("8", "Failed"),
            ],
            // Only one of creations and deletions happens in a sync: the next one creates.
            expected_creations: 0,
            expected_succeeded: 1,
            expected_deletions: 2,
            expected_completed_idxs: "0",
            expected_active: 0,
            expected_failed: 0,
            expected_pod_patches: 5,
            expected_terminating: 2,
            ..base("indexed job with indexes outside of range", 2, Some(5), 6)
        },
        Case {
            suspend: true,
            active: 2,
            expected_deletions: 2,
            expected_active: 0,
            expected_conditions: vec![SUSPENDED],
            expected_pod_patches: 2,
            expected_terminating: 2,
            ..base("suspending a job with satisfied expectations", 2, Some(4), 6)
        },
        Case {
            suspend: true,
            active: 2,
            ready: 2,
            expected_deletions: 2,
            expected_active: 0,
            expected_conditions: vec![SUSPENDED],
            expected_pod_patches: 2,
            expected_ready: 0,
            expected_terminating: 2,
            ..base("count ready pods when suspending a job with satisfied expectations", 2, Some(4), 6)
        },
        Case {
            was_suspended: true,
            expected_creations: 2,
            expected_active: 2,
            expected_conditions: vec![("Suspended", "False", "JobResumed", "Job resumed")],
            ..base("resuming a suspended job", 2, Some(4), 6)
        },
        Case {
            // A Job being deleted keeps what it had: no Suspended condition, no deletes.
            suspend: true,
            deleting: true,
            active: 2,
            expected_active: 2,
            expected_pod_patches: 2,
            ..base("suspending a deleted job", 2, Some(4), 6)
        },
        Case {
            mode: "Indexed",
            expected_creations: 2,
            expected_active: 2,
            expected_created_indexes: &[0, 1],
            ..base("indexed job with podIndexLabel feature disabled (on, as in the newest release)", 2, Some(5), 6)
        },
        Case {
            active: 1,
            ready: 1,
            initial_status: Some((
                1,
                0,
                0,
                json!({"startTime": time(0), "conditions": [{"type": "FailureTarget", "status": "False",
                    "reason": "ConditionAddedManually", "message": "Testing", "lastTransitionTime": time(0)}]}),
            )),
            expected_active: 1,
            expected_ready: 1,
            expected_conditions: vec![("FailureTarget", "False", "ConditionAddedManually", "Testing")],
            ..base("FailureTarget=False condition added manually is ignored", 1, Some(1), 6)
        },
        Case {
            active: 1,
            ready: 1,
            initial_status: Some((
                1,
                0,
                0,
                json!({"startTime": time(0), "conditions": [{"type": "SuccessCriteriaMet", "status": "False",
                    "reason": "ConditionAddedManually", "message": "Testing", "lastTransitionTime": time(0)}]}),
            )),
            expected_active: 1,
            expected_ready: 1,
            expected_conditions: vec![("SuccessCriteriaMet", "False", "ConditionAddedManually", "Testing")],
            ..base("SuccessCriteriaMet=False condition added manually is ignored", 1, Some(1), 6)
        },
        Case {
            mode: "Indexed",
            with_indexes: &[("0", "Succeeded"), ("1", "Failed"), ("2", "Running")],
            expected_succeeded: 1,
            expected_failed: 2,
            expected_completed_idxs: "0",
            expected_conditions: vec![BACKOFF_LIMIT_EXCEEDED[0]],
            expected_pod_patches: 3,
            expected_deletions: 1,
            expected_terminating: 1,
            ..base("backoff limit exceeded; JobManagedBy enabled", 2, Some(3), 0)
        },
    ]
}

/// The world of a case: its Job and pods.
fn world(c: &Case) -> World {
    let mut extra = json!({"spec": {"suspend": c.suspend}});
    if let Some(policy) = c.pod_replacement_policy {
        extra["spec"]["podReplacementPolicy"] = json!(policy);
    }
    if let Some(policy) = &c.pod_failure_policy {
        extra["spec"]["podFailurePolicy"] = policy.clone();
        // Upstream's test Job carries no restartPolicy; a pod failure policy requires Never.
    }
    let mut j = job(c.parallelism, c.completions, c.backoff_limit, c.mode, extra);
    if let Some((active, succeeded, failed, more)) = &c.initial_status {
        j["status"] = json!({"startTime": time(0), "active": active, "succeeded": succeeded, "failed": failed});
        wasmcm_job::fixtures::merge(&mut j["status"], more.clone());
    }
    if c.was_suspended {
        j["status"]["conditions"] = json!([{"type": "Suspended", "status": "True", "reason": "JobSuspended",
            "message": "Job suspended", "lastProbeTime": time(-60), "lastTransitionTime": time(-60)}]);
        j["status"]["startTime"] = json!(time(-120));
    }
    if c.deleting {
        j["metadata"]["deletionTimestamp"] = json!(time(0));
        j["metadata"]["finalizers"] = json!(["foregroundDeletion"]);
    }
    let mut objects = vec![j];
    objects.extend(pods("pending", c.pending, "Pending", &none()));
    let mut running = pods("running", c.active, "Running", &none());
    for p in running.iter_mut().take(c.ready) {
        wasmcm_job::fixtures::merge(p, ready());
    }
    objects.extend(running);
    objects.extend(pods("succeeded", c.succeeded, "Succeeded", &none()));
    objects.extend(pods("failed", c.failed, "Failed", &none()));
    let deleting = json!({"metadata": {"deletionTimestamp": time(0), "deletionGracePeriodSeconds": 30}});
    objects.extend(pods("terminating", c.terminating, "Running", &deleting));
    for (i, (index, phase)) in c.with_indexes.iter().enumerate() {
        objects.push(indexed_pod(&format!("indexed-{i}"), index, phase));
    }
    if let Some(ago) = c.failed_before_s {
        // Counted already (no finalizer): the back-off record's one failure.
        let finished = json!({"metadata": {"finalizers": null}, "status": {"containerStatuses": [{"name": "c",
            "image": "foo/bar", "imageID": "", "ready": false, "restartCount": 0,
            "state": {"terminated": {"exitCode": 1, "finishedAt": time(-ago)}}}]}});
        objects.push(pod("counted-failure", "Failed", finished));
    }
    let faults = if c.pod_writes_fail {
        Faults::PodWrites
    } else if c.pod_limit > 0 {
        Faults::CreateLimit(c.pod_limit)
    } else {
        Faults::None
    };
    World::new(&objects).with_faults(faults)
}

#[test]
fn controller_sync_job_as_upstream() {
    let mut failures = Vec::new();
    for c in cases() {
        let mut w = world(&c);
        let Synced { tally, first, last: status } = w.sync();
        let mut check = |what: &str, got: String, want: String| {
            if got != want {
                failures.push(format!("{}: {what}: got {got}, want {want}", c.name));
            }
        };
        let pods_created = tally.created.len();
        check("creations", pods_created.to_string(), c.expected_creations.to_string());
        check("deletions", tally.deleted.len().to_string(), c.expected_deletions.to_string());
        check("active", int(&first, "active").to_string(), c.expected_active.to_string());
        check("ready", int(&first, "ready").to_string(), c.expected_ready.to_string());
        check("succeeded", int(&status, "succeeded").to_string(), c.expected_succeeded.to_string());
        check(
            "completedIndexes",
            status["completedIndexes"].as_str().unwrap_or("").to_string(),
            c.expected_completed_idxs.to_string(),
        );
        check("failed", int(&status, "failed").to_string(), c.expected_failed.to_string());
        check("terminating", int(&first, "terminating").to_string(), c.expected_terminating.to_string());
        let want_conditions: Vec<(String, String, String, String)> = c
            .expected_conditions
            .iter()
            .map(|(a, b, r, m)| (a.to_string(), b.to_string(), r.to_string(), m.to_string()))
            .collect();
        check("conditions", format!("{:?}", conditions(&status)), format!("{want_conditions:?}"));
        check("pod patches", tally.pod_patches.to_string(), c.expected_pod_patches.to_string());
        if c.mode == "Indexed" {
            let want: BTreeSet<i64> = c.expected_created_indexes.iter().copied().collect();
            check("created indexes", format!("{:?}", tally.created_indexes()), format!("{want:?}"));
            for p in &tally.created {
                let ix = &p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"];
                check(
                    "index label",
                    p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"].to_string(),
                    ix.to_string(),
                );
                let ix = ix.as_str().unwrap_or("");
                check("hostname", p["spec"]["hostname"].to_string(), json!(format!("foobar-{ix}")).to_string());
                check(
                    "generateName",
                    p["metadata"]["generateName"].to_string(),
                    json!(format!("foobar-{ix}-")).to_string(),
                );
                let env = &p["spec"]["containers"][0]["env"][0];
                check("env", env["name"].to_string(), "\"JOB_COMPLETION_INDEX\"".into());
                check(
                    "env source",
                    env["valueFrom"]["fieldRef"]["fieldPath"].to_string(),
                    "\"metadata.labels['batch.kubernetes.io/job-completion-index']\"".into(),
                );
            }
        } else {
            for p in &tally.created {
                check("generateName", p["metadata"]["generateName"].to_string(), "\"foobar-\"".into());
                check("hostname", p["spec"]["hostname"].to_string(), "null".into());
            }
        }
        for p in &tally.created {
            let r = &p["metadata"]["ownerReferences"][0];
            check(
                "controllerRef",
                format!("{} {} {} {} {}", r["apiVersion"], r["kind"], r["name"], r["uid"], r["controller"]),
                r#""batch/v1" "Job" "foobar" "job-uid" true"#.into(),
            );
            check(
                "finalizers",
                p["metadata"]["finalizers"].to_string(),
                r#"["batch.kubernetes.io/job-tracking"]"#.into(),
            );
        }
        if c.suspend {
            check("startTime", status["startTime"].to_string(), "null".into());
        } else if status["startTime"].is_null() {
            failures.push(format!("{}: missing .status.startTime", c.name));
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}
