//! The rest of job_controller_test.go's syncJob tables, restated as data and run against the API
//! server's write path: `TestSyncJobPastDeadline`, `TestSingleJobFailedCondition`,
//! `TestSyncJobComplete`, `TestSyncJobDeleted`, `TestSyncJobWhenManagedBy`,
//! `TestGetPodsForJob` (adoption and release), `TestJobBackoffForOnFailure`,
//! `TestJobBackoffOnRestartPolicyNever`, `TestEnsureJobConditions`, and the finalizer cleanup
//! of `TestSyncOrphanPod`, `TestWatchOrphanPods` and `TestFinalizerCleanup` as far as a Job's key
//! reaches the pods (see [`finalizers_of_a_gone_or_finished_jobs_pods`]).
//!
//! As in `sync`: every feature gate is at its newest default, so a failing Job carries
//! FailureTarget before Failed and Failed waits while pods terminate (pods are bound to a node,
//! so a deleted pod terminates as a kubelet makes it); cases only about a gate turned off are
//! dropped.

use serde_json::{Value, json};
use wasmcm_guest::{Intent, Kind};
use wasmcm_job::fixtures::{NAMESPACE, job, merge, now, pod, pods, time};
use wasmcm_job::sync::{ensure_job_condition_status, new_condition};

use crate::common::*;

type Cond = (&'static str, &'static str, &'static str, &'static str);

fn owned(conds: &[Cond]) -> Vec<(String, String, String, String)> {
    conds.iter().map(|(a, b, r, m)| (a.to_string(), b.to_string(), r.to_string(), m.to_string())).collect()
}

const DEADLINE: [Cond; 2] = [
    ("FailureTarget", "True", "DeadlineExceeded", "Job was active longer than specified deadline"),
    ("Failed", "True", "DeadlineExceeded", "Job was active longer than specified deadline"),
];
const BACKOFF_LIMIT: [Cond; 2] = [
    ("FailureTarget", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
    ("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
];
const SUSPENDED: Cond = ("Suspended", "True", "JobSuspended", "Job suspended");
const COMPLETE: [Cond; 2] = [
    ("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
    ("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
];

#[test]
fn sync_job_past_deadline_as_upstream() {
    struct Case {
        name: &'static str,
        parallelism: i32,
        completions: i32,
        active_deadline_seconds: i64,
        start_time: i64,
        backoff_limit: i32,
        suspend: bool,
        active: usize,
        succeeded: usize,
        failed: usize,
        deletions: usize,
        want_succeeded: i64,
        want_failed: i64,
        conditions: Vec<Cond>,
    }
    let cases = vec![
        // Newest: the deleted pod terminates; Failed waits for it.
        Case {
            name: "activeDeadlineSeconds less than single pod execution",
            parallelism: 1,
            completions: 1,
            active_deadline_seconds: 10,
            start_time: 15,
            backoff_limit: 6,
            suspend: false,
            active: 1,
            succeeded: 0,
            failed: 0,
            deletions: 1,
            want_succeeded: 0,
            want_failed: 1,
            conditions: vec![DEADLINE[0]],
        },
        Case {
            name: "activeDeadlineSeconds bigger than single pod execution",
            parallelism: 1,
            completions: 2,
            active_deadline_seconds: 10,
            start_time: 15,
            backoff_limit: 6,
            suspend: false,
            active: 1,
            succeeded: 1,
            failed: 0,
            deletions: 1,
            want_succeeded: 1,
            want_failed: 1,
            conditions: vec![DEADLINE[0]],
        },
        Case {
            name: "activeDeadlineSeconds times-out before any pod starts",
            parallelism: 1,
            completions: 1,
            active_deadline_seconds: 10,
            start_time: 10,
            backoff_limit: 6,
            suspend: false,
            active: 0,
            succeeded: 0,
            failed: 0,
            deletions: 0,
            want_succeeded: 0,
            want_failed: 0,
            conditions: DEADLINE.to_vec(),
        },
        Case {
            name: "activeDeadlineSeconds with backofflimit reach",
            parallelism: 1,
            completions: 1,
            active_deadline_seconds: 1,
            start_time: 10,
            backoff_limit: 0,
            suspend: false,
            active: 0,
            succeeded: 0,
            failed: 1,
            deletions: 0,
            want_succeeded: 0,
            want_failed: 1,
            conditions: BACKOFF_LIMIT.to_vec(),
        },
        Case {
            name: "activeDeadlineSeconds is not triggered when Job is suspended",
            parallelism: 1,
            completions: 2,
            active_deadline_seconds: 10,
            start_time: 15,
            backoff_limit: 6,
            suspend: true,
            active: 0,
            succeeded: 0,
            failed: 0,
            deletions: 0,
            want_succeeded: 0,
            want_failed: 0,
            conditions: vec![SUSPENDED],
        },
    ];
    let mut failures = Vec::new();
    for c in cases {
        let j = job(
            Some(c.parallelism),
            Some(c.completions),
            c.backoff_limit,
            "",
            json!({"spec": {"activeDeadlineSeconds": c.active_deadline_seconds, "suspend": c.suspend},
                   "status": {"startTime": time(-c.start_time)}}),
        );
        let mut objects = vec![j];
        objects.extend(pods("running", c.active, "Running", &none()));
        objects.extend(pods("succeeded", c.succeeded, "Succeeded", &none()));
        objects.extend(pods("failed", c.failed, "Failed", &none()));
        let mut w = World::new(&objects);
        let Synced { tally, first, last } = w.sync();
        let mut check = |what: &str, got: String, want: String| {
            if got != want {
                failures.push(format!("{}: {what}: got {got}, want {want}", c.name));
            }
        };
        check("creations", tally.created.len().to_string(), "0".into());
        check("deletions", tally.deleted.len().to_string(), c.deletions.to_string());
        check("active", int(&first, "active").to_string(), "0".into());
        check("succeeded", int(&last, "succeeded").to_string(), c.want_succeeded.to_string());
        check("failed", int(&last, "failed").to_string(), c.want_failed.to_string());
        check("conditions", format!("{:?}", conditions(&last)), format!("{:?}", owned(&c.conditions)));
        check("startTime set", (!last["startTime"].is_null()).to_string(), "true".into());
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

/// Ours: a Job with a deadline still ahead is synced again when it passes, to the second
/// (upstream's `queue.AddAfter(key, syncDuration)`), and the deadline then fails it.
#[test]
fn active_deadline_requeues_for_the_deadline() {
    let j =
        job(Some(1), Some(1), 6, "", json!({"spec": {"activeDeadlineSeconds": 10}, "status": {"startTime": time(-4)}}));
    let mut objects = vec![j];
    objects.extend(pods("running", 1, "Running", &none()));
    let mut w = World::new(&objects);
    let synced = w.sync();
    assert_eq!(synced.tally.requeue_after_ms, Some(6_000), "the deadline is 6 s away");
    assert!(conditions(&synced.last).is_empty(), "{:?}", conditions(&synced.last));
    // Six seconds on, the same Job has passed its deadline.
    w.request.now.seconds += 6;
    let after = w.sync();
    assert_eq!(after.tally.deleted, vec!["running-0".to_string()], "the running pod goes");
    assert_eq!(conditions(&after.last), owned(&[DEADLINE[0]]));
}

#[test]
fn single_job_failed_condition_as_upstream() {
    let j = job(
        Some(1),
        Some(1),
        6,
        "",
        json!({"spec": {"activeDeadlineSeconds": 10}, "status": {"startTime": time(-15), "conditions": [
            {"type": "Failed", "status": "False", "reason": "DeadlineExceeded",
             "message": "Job was active longer than specified deadline",
             "lastProbeTime": time(-60), "lastTransitionTime": time(-60)}]}}),
    );
    let mut w = World::new(&[j]);
    let synced = w.sync();
    assert!(synced.tally.deleted.is_empty(), "{:?}", synced.tally.deleted);
    let failed: Vec<_> = conditions(&synced.last).into_iter().filter(|c| c.0 == "Failed").collect();
    assert_eq!(failed.len(), 1, "one Failed condition: {failed:?}");
    assert_eq!(failed[0].1, "True");
}

#[test]
fn sync_job_complete_as_upstream() {
    let j = job(
        Some(1),
        Some(1),
        6,
        "",
        json!({"status": {"startTime": time(-60), "completionTime": time(-1), "succeeded": 1, "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastProbeTime": time(-1), "lastTransitionTime": time(-1)},
            {"type": "Complete", "status": "True", "lastProbeTime": time(-1), "lastTransitionTime": time(-1)}]}}),
    );
    let mut w = World::new(&[j]);
    let before = w.status();
    let o = w.reconcile();
    assert_eq!(o.intents().count(), 0, "a finished Job is not synced again: {o:?}");
    let mut tally = Tally::default();
    w.apply(&o, &mut tally);
    assert_eq!(w.status(), before, "the conditions are the same");
}

#[test]
fn sync_job_deleted_as_upstream() {
    let w = World::new(&[]);
    let o = w.reconcile();
    assert_eq!(o.intents().count(), 0, "no pods created or deleted for a Job that is gone: {o:?}");
}

#[test]
fn sync_job_when_managed_by_as_upstream() {
    let base = |managed_by: Option<&str>| {
        let mut j = job(Some(2), Some(2), 6, "", json!({"status": {"active": 1, "ready": 1, "startTime": time(-30)}}));
        if let Some(m) = managed_by {
            j["spec"]["managedBy"] = json!(m);
        }
        j
    };
    // (name, managedBy, status unchanged)
    let cases = [
        ("job with custom value of managedBy; the status is unchanged", Some("custom-managed-by"), true),
        (
            "job with well known value of the managedBy; the status is updated",
            Some("kubernetes.io/job-controller"),
            false,
        ),
        ("job without the managedBy; the status is updated", None, false),
    ];
    for (name, managed_by, unchanged) in cases {
        let mut w = World::new(&[base(managed_by)]);
        let before = w.status();
        let synced = w.sync();
        if unchanged {
            assert_eq!(synced.tally.created.len(), 0, "{name}");
            assert_eq!(synced.tally.statuses.len(), 0, "{name}");
            assert_eq!(w.status(), before, "{name}");
        } else {
            let s = &synced.first;
            assert_eq!(
                (int(s, "active"), int(s, "ready"), int(s, "terminating"), s["startTime"].clone()),
                (2, 0, 0, json!(time(-30))),
                "{name}: {s}"
            );
            assert_eq!(s["uncountedTerminatedPods"], json!({}), "{name}");
        }
    }
}

/// A pod of the other Job (`other`, same selector) or, with `owner` None, an orphan.
fn pod_of(name: &str, owner: Option<(&str, &str)>, labels: Value, finalizer: bool) -> Value {
    let mut p = pod(name, "Pending", json!({}));
    p["metadata"]["labels"] = labels;
    p["metadata"]["ownerReferences"] = match owner {
        Some((job_name, uid)) => json!([{"apiVersion": "batch/v1", "kind": "Job", "name": job_name, "uid": uid,
                                          "controller": true, "blockOwnerDeletion": true}]),
        None => json!(null),
    };
    if !finalizer {
        p["metadata"]["finalizers"] = json!(null);
    }
    p
}

/// The pods the Job `foobar` controls after a sync, and those of them carrying the finalizer.
fn claimed(w: &World) -> (Vec<String>, Vec<String>) {
    let mut ours = Vec::new();
    let mut with_finalizer = Vec::new();
    for p in w.pods() {
        let controlled = p["metadata"]["ownerReferences"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|r| r["uid"] == "job-uid" && r["controller"] == true);
        if controlled {
            let name = p["metadata"]["name"].as_str().unwrap_or("").to_string();
            if p["metadata"]["finalizers"]
                .as_array()
                .into_iter()
                .flatten()
                .any(|f| f == "batch.kubernetes.io/job-tracking")
            {
                with_finalizer.push(name.clone());
            }
            ours.push(name);
        }
    }
    ours.sort();
    with_finalizer.sort();
    (ours, with_finalizer)
}

/// `TestGetPodsForJob`: what the Job claims. The Job's parallelism is the number of pods it
/// keeps, so that the claim is all the sync changes. "no adopt when deleting race" (the Job
/// deleted in the API server but not yet in the cache) has no counterpart: the cache is this
/// controller's only view.
#[test]
fn get_pods_for_job_as_upstream() {
    let foo = json!({"foo": "bar"});
    let other = job(Some(1), Some(1), 6, "", json!({"metadata": {"name": "other", "uid": "other-uid"}}));
    // (name, parallelism, deleting, pods, want pods, want pods with the finalizer)
    type Case = (&'static str, i32, bool, Vec<Value>, Vec<&'static str>, Vec<&'static str>);
    let cases: Vec<Case> = vec![
        (
            "only matching",
            2,
            false,
            vec![
                pod_of("pod1", Some(("foobar", "job-uid")), foo.clone(), true),
                pod_of("pod2", Some(("other", "other-uid")), foo.clone(), false),
                pod_of("pod3", None, json!(null), false),
                pod_of("pod4", Some(("foobar", "job-uid")), foo.clone(), false),
            ],
            vec!["pod1", "pod4"],
            vec!["pod1"],
        ),
        (
            "adopt",
            2,
            false,
            vec![
                pod_of("pod1", Some(("foobar", "job-uid")), foo.clone(), false),
                pod_of("pod2", None, foo.clone(), false),
                pod_of("pod3", Some(("other", "other-uid")), foo.clone(), false),
            ],
            vec!["pod1", "pod2"],
            vec!["pod2"],
        ),
        (
            "no adopt when deleting",
            1,
            true,
            vec![
                pod_of("pod1", Some(("foobar", "job-uid")), foo.clone(), false),
                pod_of("pod2", None, foo.clone(), false),
            ],
            vec!["pod1"],
            vec![],
        ),
        (
            "release",
            1,
            false,
            vec![
                pod_of("pod1", Some(("foobar", "job-uid")), foo.clone(), false),
                pod_of("pod2", Some(("foobar", "job-uid")), json!(null), false),
            ],
            vec!["pod1"],
            vec![],
        ),
    ];
    for (name, parallelism, deleting, ps, want, want_finalizer) in cases {
        let mut j = job(Some(parallelism), Some(5), 6, "", json!({}));
        if deleting {
            j["metadata"]["deletionTimestamp"] = json!(time(0));
            j["metadata"]["finalizers"] = json!(["foregroundDeletion"]);
        }
        let mut objects = vec![j, other.clone()];
        objects.extend(ps);
        let mut w = World::new(&objects);
        let synced = w.sync();
        assert!(synced.tally.failure.is_none(), "{name}: {:?}", synced.tally.failure);
        assert!(synced.tally.created.is_empty() && synced.tally.deleted.is_empty(), "{name}: the claim only");
        let (got, got_finalizer) = claimed(&w);
        assert_eq!(got, want, "{name}: pods");
        assert_eq!(got_finalizer, want_finalizer, "{name}: pods with finalizers");
    }
}

#[test]
fn job_backoff_for_on_failure_as_upstream() {
    struct Case {
        name: &'static str,
        parallelism: i32,
        completions: i32,
        backoff_limit: i32,
        suspend: bool,
        restart_counts: &'static [i32],
        phase: &'static str,
        active: i64,
        succeeded: i64,
        failed: i64,
        conditions: Vec<Cond>,
    }
    let case = |name, parallelism, completions, backoff_limit, restart_counts, phase| Case {
        name,
        parallelism,
        completions,
        backoff_limit,
        suspend: false,
        restart_counts,
        phase,
        active: 0,
        succeeded: 0,
        failed: 0,
        conditions: vec![],
    };
    // Newest: the pods of a Job past its limit are deleted and terminate; Failed waits for them.
    let past_limit = vec![BACKOFF_LIMIT[0]];
    let cases = vec![
        Case { active: 1, ..case("backoffLimit 0 should have 1 pod active", 1, 1, 0, &[0], "Running") },
        Case {
            active: 1,
            ..case("backoffLimit 1 with restartCount 0 should have 1 pod active", 1, 1, 1, &[0], "Running")
        },
        Case {
            failed: 1,
            conditions: past_limit.clone(),
            ..case(
                "backoffLimit 1 with restartCount 1 and podRunning should have 0 pod active",
                1,
                1,
                1,
                &[1],
                "Running",
            )
        },
        Case {
            failed: 1,
            conditions: past_limit.clone(),
            ..case(
                "backoffLimit 1 with restartCount 1 and podPending should have 0 pod active",
                1,
                1,
                1,
                &[1],
                "Pending",
            )
        },
        Case {
            failed: 1,
            conditions: past_limit.clone(),
            ..case("too many job failures with podRunning - single pod", 1, 5, 2, &[2], "Running")
        },
        Case {
            failed: 1,
            conditions: past_limit.clone(),
            ..case("too many job failures with podPending - single pod", 1, 5, 2, &[2], "Pending")
        },
        Case {
            failed: 2,
            conditions: past_limit.clone(),
            ..case("too many job failures with podRunning - multiple pods", 2, 5, 2, &[1, 1], "Running")
        },
        Case {
            failed: 2,
            conditions: past_limit.clone(),
            ..case("too many job failures with podPending - multiple pods", 2, 5, 2, &[1, 1], "Pending")
        },
        Case { active: 2, ..case("not enough failures", 2, 5, 3, &[1, 1], "Running") },
        Case { suspend: true, conditions: vec![SUSPENDED], ..case("suspending a job", 2, 4, 6, &[1, 1], "Running") },
        Case {
            suspend: true,
            succeeded: 4,
            conditions: COMPLETE.to_vec(),
            ..case("finished job", 2, 4, 6, &[1, 1, 2, 0], "Succeeded")
        },
    ];
    let mut failures = Vec::new();
    for c in cases {
        let j = job(
            Some(c.parallelism),
            Some(c.completions),
            c.backoff_limit,
            "",
            // Started before (its pods ran): the API server refuses to finish a Job without a
            // startTime ("finished job" of upstream's table, whose fake status handler takes it).
            json!({"spec": {"suspend": c.suspend, "template": {"spec": {"restartPolicy": "OnFailure"}}},
                   "status": {"startTime": time(-60)}}),
        );
        let mut objects = vec![j];
        for (i, restarts) in c.restart_counts.iter().enumerate() {
            let state = if c.phase == "Succeeded" {
                json!({"terminated": {"exitCode": 0, "finishedAt": "0001-01-01T00:00:01Z"}})
            } else {
                json!({"running": {}})
            };
            let mut p = pod(&format!("pod-{i}"), c.phase, json!({}));
            p["spec"]["restartPolicy"] = json!("OnFailure");
            p["status"]["containerStatuses"] = json!([{"name": "c", "image": "foo/bar", "imageID": "", "ready": false,
                "restartCount": restarts, "state": state}]);
            objects.push(p);
        }
        let mut w = World::new(&objects);
        let Synced { first, last, tally } = w.sync();
        assert!(tally.failure.is_none(), "{}: {:?}", c.name, tally.failure);
        let mut check = |what: &str, got: String, want: String| {
            if got != want {
                failures.push(format!("{}: {what}: got {got}, want {want}", c.name));
            }
        };
        check("active", int(&first, "active").to_string(), c.active.to_string());
        check("succeeded", int(&last, "succeeded").to_string(), c.succeeded.to_string());
        check("failed", int(&last, "failed").to_string(), c.failed.to_string());
        check("conditions", format!("{:?}", conditions(&last)), format!("{:?}", owned(&c.conditions)));
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn job_backoff_on_restart_policy_never_as_upstream() {
    // (name, parallelism, completions, backoffLimit, active phase, active, failed, want active, want failed, conditions)
    type Case = (&'static str, i32, i32, i32, &'static str, usize, usize, i64, i64, Vec<Cond>);
    let cases: Vec<Case> = vec![
        ("not enough failures with backoffLimit 0 - single pod", 1, 1, 0, "Running", 1, 0, 1, 0, vec![]),
        ("not enough failures with backoffLimit 1 - single pod", 1, 1, 1, "", 0, 1, 1, 1, vec![]),
        ("too many failures with backoffLimit 1 - single pod", 1, 1, 1, "", 0, 2, 0, 2, BACKOFF_LIMIT.to_vec()),
        ("not enough failures with backoffLimit 6 - multiple pods", 2, 2, 6, "Running", 1, 6, 2, 6, vec![]),
        ("too many failures with backoffLimit 6 - multiple pods", 2, 2, 6, "", 0, 7, 0, 7, BACKOFF_LIMIT.to_vec()),
    ];
    let mut failures = Vec::new();
    for (name, parallelism, completions, backoff_limit, phase, active, failed, want_active, want_failed, conds) in cases
    {
        let j = job(Some(parallelism), Some(completions), backoff_limit, "", json!({}));
        let mut objects = vec![j];
        objects.extend(pods("failed", failed, "Failed", &none()));
        objects.extend(pods("active", active, phase, &none()));
        let mut w = World::new(&objects);
        let Synced { first, last, .. } = w.sync();
        let got = (int(&first, "active"), int(&last, "succeeded"), int(&last, "failed"), conditions(&last));
        let want = (want_active, 0, want_failed, owned(&conds));
        if got != want {
            failures.push(format!("{name}: got {got:?}, want {want:?}"));
        }
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn ensure_job_conditions_as_upstream() {
    let c = |status: &str, reason: &str| new_condition("Suspended", status, reason, "", now());
    // (name, have, status, reason, expect, expect update)
    let cases = vec![
        ("append true condition", vec![], "True", "foo", vec![c("True", "foo")], true),
        ("append false condition", vec![], "False", "foo", vec![], false),
        ("update true condition reason", vec![c("True", "foo")], "True", "bar", vec![c("True", "bar")], true),
        ("update true condition status", vec![c("True", "foo")], "False", "foo", vec![c("False", "foo")], true),
        ("update false condition status", vec![c("False", "foo")], "True", "foo", vec![c("True", "foo")], true),
        ("condition already exists", vec![c("True", "foo")], "True", "foo", vec![c("True", "foo")], false),
    ];
    for (name, mut have, status, reason, expect, expect_update) in cases {
        let updated = ensure_job_condition_status(&mut have, "Suspended", status, reason, "", now());
        assert_eq!(updated, expect_update, "{name}");
        assert_eq!(have, expect, "{name}");
    }
}

/// Upstream's orphan worker (`TestSyncOrphanPod`, `TestWatchOrphanPods`, `TestFinalizerCleanup`)
/// takes the tracking finalizer off pods whose Job is gone or finished, and leaves pods of
/// other controllers alone. Here the Job's key does it: a pod's change wakes the key of its
/// controller (or of its previous controller, when the garbage collector orphans it), and a
/// Job that is gone finds its pods by the `batch.kubernetes.io/job-name` label every pod it
/// creates carries. A pod with the finalizer that names no Job at all (upstream's "orphan"
/// case, and a pod controlled by a Job it never created carrying no job-name label) is not
/// reached: no Job key hears of it.
#[test]
fn finalizers_of_a_gone_or_finished_jobs_pods() {
    let job_name = json!({"batch.kubernetes.io/job-name": "foobar", "foo": "bar"});
    let terminating = json!({"metadata": {"deletionTimestamp": time(0), "deletionGracePeriodSeconds": 30}});
    let owner = |api_version: &str, kind: &str, controller: bool| json!([{"apiVersion": api_version, "kind": kind, "name": "foobar", "uid": "111", "controller": controller}]);
    let with = |name: &str, owner: Value| {
        let mut p = pod(name, "Running", terminating.clone());
        p["metadata"]["labels"] = job_name.clone();
        p["metadata"]["ownerReferences"] = owner;
        p
    };
    let pods_of_gone_job = vec![
        (
            "controlled_by_non_existing_job",
            with("controlled-by-non-existing-job", owner("batch/v1", "Job", true)),
            true,
        ),
        ("not_controlled", with("not-controlled", json!(null)), true),
        ("owned_by_custom_crd", with("owned-by-custom-crd", owner("example/v1", "Job", false)), true),
        ("controlled_by_cronjob", with("controlled-by-cronjob", owner("batch/v1", "CronJob", true)), false),
        ("controlled_by_custom_crd", with("controlled-by-custom-crd", owner("example/v1", "Job", true)), false),
    ];
    // The Job is gone.
    let mut w = World::new(&pods_of_gone_job.iter().map(|(_, p, _)| p.clone()).collect::<Vec<_>>());
    let o = w.reconcile();
    let mut tally = Tally::default();
    w.apply(&o, &mut tally);
    assert!(tally.failure.is_none(), "{:?}", tally.failure);
    for (name, p, removed) in &pods_of_gone_job {
        let now = w.api.get(&Kind::new("v1", "Pod"), NAMESPACE, p["metadata"]["name"].as_str().unwrap_or(""));
        let has =
            now.is_some_and(|p| p["metadata"]["finalizers"].to_string().contains("batch.kubernetes.io/job-tracking"));
        assert_eq!(!has, *removed, "{name}: finalizer removed");
    }
    // The Job finished: its pods lose the finalizer (controlled_by_existing_finished_job).
    let mut finished = job(
        Some(2),
        Some(2),
        6,
        "",
        json!({"status": {"startTime": time(-60), "completionTime": time(-1), "succeeded": 2, "conditions": [
            {"type": "SuccessCriteriaMet", "status": "True", "lastProbeTime": time(-1), "lastTransitionTime": time(-1)},
            {"type": "Complete", "status": "True", "lastProbeTime": time(-1), "lastTransitionTime": time(-1)}]}}),
    );
    merge(&mut finished, json!({"metadata": {"uid": "111"}}));
    let mut p = with("controlled-by-existing-finished-job", owner("batch/v1", "Job", true));
    p["metadata"]["ownerReferences"][0]["blockOwnerDeletion"] = json!(true);
    let mut w = World::new(&[finished, p]);
    let o = w.reconcile();
    let patches = o.intents().filter(|i| matches!(i, Intent::Patch(_))).count();
    assert_eq!(patches, 1, "{o:?}");
    let mut tally = Tally::default();
    w.apply(&o, &mut tally);
    let pods = w.pods();
    assert!(pods.iter().all(|p| !p["metadata"]["finalizers"].to_string().contains("job-tracking")), "{pods:?}");
}
