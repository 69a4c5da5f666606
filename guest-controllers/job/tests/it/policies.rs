//! job_controller_test.go's sync-level policy tables restated as data and run against the API
//! server's write path: `TestSyncJobWithJobPodFailurePolicy`, `TestSyncJobWithJobSuccessPolicy`,
//! `TestSyncJobWithJobBackoffLimitPerIndex`.
//!
//! Upstream runs each case under several feature-gate settings; every gate of these tables is on
//! in the newest release (JobPodReplacementPolicy, JobManagedBy, JobBackoffLimitPerIndex,
//! JobSuccessPolicy), so a case is kept once, with the newest behaviour: `terminating` is
//! reported, a failing Job carries FailureTarget before Failed, and Failed or Complete waits
//! while pods terminate. Cases that only exercised a gate turned off are dropped. Pods are
//! upstream's `mypod-<i>`, bound to a node (a deleted pod terminates as a kubelet would make
//! it), carrying the tracking finalizer.

use serde_json::{Value, json};
use wasmcm_job::fixtures::{job, merge, pod, time};

use crate::common::*;

type Cond = (&'static str, &'static str, &'static str, &'static str);

struct Case {
    name: &'static str,
    /// Merged into upstream's Job (`parallelism`, `completions`, `backoffLimit` in `spec`).
    job: Value,
    pods: Vec<Value>,
    active: i64,
    succeeded: i64,
    failed: i64,
    terminating: i64,
    completed: &'static str,
    /// `status.failedIndexes` (absent: None).
    failed_indexes: Option<&'static str>,
    conditions: Vec<Cond>,
}

fn case(name: &'static str, job: Value, pods: Vec<Value>) -> Case {
    Case {
        name,
        job,
        pods,
        active: 0,
        succeeded: 0,
        failed: 0,
        terminating: 0,
        completed: "",
        failed_indexes: None,
        conditions: vec![],
    }
}

/// A spec of `parallelism`, `completions`, `backoffLimit` (None: MaxInt32) with `more`.
fn spec(parallelism: i32, completions: Option<i32>, backoff_limit: Option<i32>, more: Value) -> Value {
    let mut s = json!({"parallelism": parallelism, "completions": completions,
                       "backoffLimit": backoff_limit.unwrap_or(i32::MAX)});
    merge(&mut s, more);
    json!({"spec": s})
}

fn indexed(parallelism: i32, completions: i32, backoff_limit: Option<i32>, more: Value) -> Value {
    let mut j = spec(parallelism, Some(completions), backoff_limit, more);
    j["spec"]["completionMode"] = json!("Indexed");
    j
}

/// A container status, terminated with `code` (not finished: upstream's statuses carry no
/// finish time unless they say so).
fn terminated(name: &str, code: i32) -> Value {
    json!({"name": name, "image": "foo/bar", "imageID": "", "ready": false, "restartCount": 0,
           "state": {"terminated": {"exitCode": code}}})
}

/// Upstream's `mypod-<i>` in `phase`; `index` (Indexed Jobs) and `more` merged in. Upstream's
/// pods carry no container statuses unless they say so.
fn mypod(i: usize, phase: &str, index: Option<&str>, more: Value) -> Value {
    let mut p = pod(&format!("mypod-{i}"), phase, json!({"status": {"containerStatuses": null}}));
    if let Some(ix) = index {
        merge(
            &mut p,
            json!({"metadata": {"annotations": {"batch.kubernetes.io/job-completion-index": ix}},
                   "spec": {"hostname": format!("foobar-{ix}")}}),
        );
    }
    merge(&mut p, more);
    p
}

fn statuses(list: Vec<Value>) -> Value {
    json!({"status": {"containerStatuses": list}})
}

fn condition(type_: &str) -> Value {
    json!({"status": {"conditions": [{"type": type_, "status": "True"}]}})
}

fn failure_count(count: &str) -> Value {
    json!({"metadata": {"annotations": {"batch.kubernetes.io/job-index-failure-count": count}}})
}

fn with_status(mut j: Value, status: Value) -> Value {
    j["status"] = status;
    j
}

fn job_condition(c: Cond) -> Value {
    json!({"type": c.0, "status": c.1, "reason": c.2, "message": c.3,
           "lastProbeTime": time(-60), "lastTransitionTime": time(-60)})
}

fn fail_job(message: &'static str) -> Vec<Cond> {
    vec![("FailureTarget", "True", "PodFailurePolicy", message), ("Failed", "True", "PodFailurePolicy", message)]
}

const SUCCESS_POLICY: Cond = ("SuccessCriteriaMet", "True", "SuccessPolicy", "Matched rules at index 0");
const COMPLETE_BY_POLICY: Cond = ("Complete", "True", "SuccessPolicy", "Matched rules at index 0");
const BACKOFF_LIMIT: [Cond; 2] = [
    ("FailureTarget", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
    ("Failed", "True", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
];
const FAILED_INDEXES: [Cond; 2] = [
    ("FailureTarget", "True", "FailedIndexes", "Job has failed indexes"),
    ("Failed", "True", "FailedIndexes", "Job has failed indexes"),
];

fn run(cases: Vec<Case>) {
    let mut failures = Vec::new();
    for c in cases {
        let mut j = job(None, None, 0, "", json!({"spec": {"podReplacementPolicy": null}}));
        merge(&mut j, c.job.clone());
        let mut objects = vec![j];
        objects.extend(c.pods.iter().cloned());
        let mut w = World::new(&objects);
        let Synced { first, last, .. } = w.sync();
        let mut check = |what: &str, got: String, want: String| {
            if got != want {
                failures.push(format!("{}: {what}: got {got}, want {want}", c.name));
            }
        };
        check("active", int(&first, "active").to_string(), c.active.to_string());
        check("terminating", int(&first, "terminating").to_string(), c.terminating.to_string());
        check("succeeded", int(&last, "succeeded").to_string(), c.succeeded.to_string());
        check("failed", int(&last, "failed").to_string(), c.failed.to_string());
        check("completedIndexes", last["completedIndexes"].as_str().unwrap_or("").into(), c.completed.into());
        check("failedIndexes", last["failedIndexes"].to_string(), json!(c.failed_indexes).to_string());
        let uncounted = &last["uncountedTerminatedPods"];
        let empty = |k: &str| uncounted[k].as_array().is_none_or(Vec::is_empty);
        check("uncountedTerminatedPods empty", (empty("succeeded") && empty("failed")).to_string(), "true".into());
        let want: Vec<(String, String, String, String)> = c
            .conditions
            .iter()
            .map(|(a, b, r, m)| (a.to_string(), b.to_string(), r.to_string(), m.to_string()))
            .collect();
        check("conditions", format!("{:?}", conditions(&last)), format!("{want:?}"));
    }
    assert!(failures.is_empty(), "{} mismatches:\n{}", failures.len(), failures.join("\n"));
}

#[test]
fn sync_job_with_pod_failure_policy_as_upstream() {
    let on_exit_codes = json!([
        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [1, 2, 3]}},
        {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [5, 6, 7]}},
    ]);
    let policy = |rules: Value| json!({"podFailurePolicy": {"rules": rules}});
    let one = |backoff_limit: i32, rules: Value| spec(1, Some(1), Some(backoff_limit), policy(rules));
    let failed_with = |codes: Vec<Value>| mypod(0, "Failed", None, statuses(codes));
    let exit5 =
        "Container main-container for pod default/mypod-0 failed with exit code 5 matching FailJob rule at index 1";
    let disruption = "Pod default/mypod-0 has condition DisruptionTarget matching FailJob rule at index 0";
    let mut marked = one(6, on_exit_codes.clone());
    marked["status"] = json!({"conditions": [job_condition(("FailureTarget", "True", "PodFailurePolicy", exit5))]});
    let deleted_pod_message = "Container main-container for pod default/already-deleted-pod failed with exit code 5 matching FailJob rule at index 1";
    let mut marked_deleted = one(6, on_exit_codes.clone());
    marked_deleted["status"] =
        json!({"conditions": [job_condition(("FailureTarget", "True", "PodFailurePolicy", deleted_pod_message))]});
    let mut finished_main = terminated("main-container", 42);
    finished_main["state"]["terminated"]["finishedAt"] = json!("0001-01-01T00:00:01Z");
    let mut finished_5 = terminated("main-container", 5);
    finished_5["state"]["terminated"]["finishedAt"] = json!("0001-01-01T00:00:01Z");
    let mut finished_2 = terminated("", 2);
    finished_2["state"]["terminated"]["finishedAt"] = json!("0001-01-01T00:00:01Z");
    let named_rules = json!([
        {"action": "Ignore", "onExitCodes": {"containerName": "main-container", "operator": "In", "values": [1, 2, 3]}},
        {"action": "FailJob", "onExitCodes": {"containerName": "main-container", "operator": "In", "values": [5, 6, 7]}},
    ]);
    let not_in = json!([{"action": "FailJob", "onExitCodes": {"operator": "NotIn", "values": [5, 6, 7]}}]);
    let on_condition =
        |action: &str| json!([{"action": action, "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]);
    let deleting_now = json!({"metadata": {"deletionTimestamp": time(0), "deletionGracePeriodSeconds": 0}});
    let mut indexed_exit = indexed(1, 1, Some(6), policy(on_exit_codes.clone()));
    indexed_exit["spec"]["backoffLimit"] = json!(6);

    let cases = vec![
        Case {
            active: 1,
            failed: 1,
            ..case(
                "default handling for pod failure if the container matching the exit codes does not match the containerName restriction",
                one(6, named_rules),
                vec![failed_with(vec![terminated("monitoring-container", 5), finished_main])],
            )
        },
        Case {
            active: 1,
            ..case(
                "running pod should not result in job fail based on OnExitCodes",
                one(6, on_exit_codes.clone()),
                vec![mypod(0, "Running", None, statuses(vec![terminated("main-container", 5)]))],
            )
        },
        Case {
            failed: 1,
            conditions: fail_job(exit5),
            ..case(
                "fail job based on OnExitCodes",
                one(6, on_exit_codes.clone()),
                vec![failed_with(vec![terminated("main-container", 5)])],
            )
        },
        Case {
            failed: 1,
            conditions: fail_job(exit5),
            ..case(
                "job marked already as failure target with failed pod",
                marked,
                vec![failed_with(vec![terminated("main-container", 5)])],
            )
        },
        Case {
            failed: 1,
            conditions: fail_job(deleted_pod_message),
            ..case(
                "job marked already as failure target with failed pod, message based on already deleted pod",
                marked_deleted,
                vec![failed_with(vec![terminated("main-container", 5)])],
            )
        },
        // Newest: the running pod deleted terminates; Failed waits for it.
        Case {
            failed: 2,
            terminating: 1,
            conditions: vec![(
                "FailureTarget",
                "True",
                "PodFailurePolicy",
                "Container main-container for pod default/mypod-1 failed with exit code 5 matching FailJob rule at index 1",
            )],
            ..case(
                "fail job with multiple pods",
                spec(2, Some(2), Some(6), policy(on_exit_codes.clone())),
                vec![
                    mypod(0, "Running", None, json!({})),
                    mypod(1, "Failed", None, statuses(vec![terminated("main-container", 5)])),
                ],
            )
        },
        Case {
            failed: 1,
            conditions: fail_job(exit5),
            ..case(
                "fail indexed job based on OnExitCodes",
                indexed_exit,
                vec![mypod(0, "Failed", Some("0"), statuses(vec![terminated("main-container", 5)]))],
            )
        },
        Case {
            failed: 1,
            conditions: vec![
                (
                    "FailureTarget",
                    "True",
                    "PodFailurePolicy",
                    "Container main-container for pod default/mypod-0 failed with exit code 42 matching FailJob rule at index 0",
                ),
                (
                    "Failed",
                    "True",
                    "PodFailurePolicy",
                    "Container main-container for pod default/mypod-0 failed with exit code 42 matching FailJob rule at index 0",
                ),
            ],
            ..case(
                "fail job based on OnExitCodes with NotIn operator",
                one(6, not_in.clone()),
                vec![failed_with(vec![terminated("main-container", 42)])],
            )
        },
        Case {
            active: 1,
            failed: 1,
            ..case(
                "default handling job based on OnExitCodes with NotIn operator",
                one(6, not_in),
                vec![failed_with(vec![finished_5])],
            )
        },
        Case {
            failed: 1,
            conditions: fail_job(
                "Container init-container for pod default/mypod-0 failed with exit code 5 matching FailJob rule at index 1",
            ),
            ..case(
                "fail job based on OnExitCodes for InitContainer",
                one(6, on_exit_codes.clone()),
                vec![mypod(
                    0,
                    "Failed",
                    None,
                    json!({"status": {"initContainerStatuses": [terminated("init-container", 5)],
                                      "containerStatuses": [terminated("main-container", 143)]}}),
                )],
            )
        },
        Case {
            active: 1,
            ..case(
                "ignore pod failure; both rules are matching, the first is executed only",
                one(0, on_exit_codes.clone()),
                vec![failed_with(vec![terminated("container1", 2), terminated("container2", 6)])],
            )
        },
        Case {
            active: 1,
            ..case(
                "ignore pod failure based on OnExitCodes",
                one(0, on_exit_codes.clone()),
                vec![failed_with(vec![terminated("", 1)])],
            )
        },
        // Newest: FailureTarget first.
        Case {
            failed: 1,
            conditions: BACKOFF_LIMIT.to_vec(),
            ..case(
                "default job based on OnExitCodes",
                one(0, on_exit_codes),
                vec![failed_with(vec![terminated("", 10)])],
            )
        },
        Case {
            active: 1,
            failed: 1,
            ..case(
                "count pod failure based on OnExitCodes; both rules are matching, the first is executed only",
                one(
                    6,
                    json!([{"action": "Count", "onExitCodes": {"operator": "In", "values": [1, 2]}},
                           {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [2, 3]}}]),
                ),
                vec![failed_with(vec![finished_2])],
            )
        },
        Case {
            active: 1,
            failed: 1,
            ..case(
                "count pod failure based on OnPodConditions; both rules are matching, the first is executed only",
                one(
                    6,
                    json!([{"action": "Count", "onPodConditions": [{"type": "ResourceLimitExceeded", "status": "True"}]},
                           {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]),
                ),
                vec![mypod(
                    0,
                    "Failed",
                    None,
                    json!({"status": {"conditions": [{"type": "ResourceLimitExceeded", "status": "True"},
                                                     {"type": "DisruptionTarget", "status": "True"}],
                                      "containerStatuses": [{"name": "", "image": "foo/bar", "imageID": "", "ready": false,
                                          "restartCount": 0, "state": {"terminated": {"exitCode": 0,
                                          "finishedAt": "0001-01-01T00:00:01Z"}}}]}}),
                )],
            )
        },
        Case {
            active: 1,
            ..case(
                "ignore pod failure based on OnPodConditions",
                one(0, on_condition("Ignore")),
                vec![mypod(0, "Failed", None, condition("DisruptionTarget"))],
            )
        },
        // The ignored failure (deleted now) counts in the back-off record: no replacement yet.
        {
            let mut p = mypod(0, "Failed", None, condition("DisruptionTarget"));
            merge(&mut p, deleting_now.clone());
            case(
                "ignore pod failure based on OnPodConditions, ignored failures delays pod recreation",
                one(0, on_condition("Ignore")),
                vec![p],
            )
        },
        Case {
            failed: 1,
            conditions: fail_job(disruption),
            ..case(
                "fail job based on OnPodConditions",
                one(6, on_condition("FailJob")),
                vec![mypod(0, "Failed", None, condition("DisruptionTarget"))],
            )
        },
        // Newest: the terminating pod is reported, and not replaced (podReplacementPolicy
        // Failed, the default with a pod failure policy).
        {
            let mut p = mypod(0, "Pending", None, json!({}));
            merge(&mut p, json!({"metadata": {"deletionTimestamp": time(0), "deletionGracePeriodSeconds": 30}}));
            Case {
                terminating: 1,
                ..case(
                    "terminating Pod not considered failed when JobPodFailurePolicy is enabled and used",
                    spec(
                        1,
                        None,
                        Some(0),
                        policy(
                            json!([{"action": "Count", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]),
                        ),
                    ),
                    vec![p],
                )
            }
        },
    ];
    run(cases);
}

#[test]
fn sync_job_with_success_policy_as_upstream() {
    let rule = json!({"successPolicy": {"rules": [{"succeededIndexes": "0,1", "succeededCount": 1}]}});
    let with = |more: Value| {
        let mut r = rule.clone();
        merge(&mut r, more);
        r
    };
    let disruption_fail_job = json!({"podFailurePolicy": {"rules": [{"action": "FailJob", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]}});
    let scm = json!({"conditions": [job_condition(SUCCESS_POLICY)]});
    let disruption = "Pod default/mypod-0 has condition DisruptionTarget matching FailJob rule at index 0";
    let p = |i: usize, phase: &str, ix: &str| mypod(i, phase, Some(ix), json!({}));
    let cases = vec![
        Case {
            failed: 1,
            succeeded: 1,
            terminating: 2,
            completed: "1",
            conditions: vec![SUCCESS_POLICY],
            ..case(
                "job with successPolicy; job has SuccessCriteriaMet condition if job meets to successPolicy and some indexes fail",
                indexed(3, 3, None, rule.clone()),
                vec![p(0, "Failed", "0"), p(1, "Running", "0"), p(2, "Succeeded", "1"), p(3, "Running", "2")],
            )
        },
        Case {
            failed: 1,
            succeeded: 1,
            terminating: 1,
            completed: "1",
            conditions: vec![SUCCESS_POLICY],
            ..case(
                "job with podFailurePolicy and successPolicy; job has SuccessCriteriaMet condition if job meets to successPolicy and doesn't meet to podFailurePolicy",
                indexed(2, 2, None, with(disruption_fail_job.clone())),
                vec![p(0, "Failed", "0"), p(1, "Running", "0"), p(2, "Succeeded", "1")],
            )
        },
        Case {
            failed: 1,
            succeeded: 1,
            terminating: 1,
            completed: "1",
            failed_indexes: Some(""),
            conditions: vec![SUCCESS_POLICY],
            ..case(
                "job with backoffLimitPerIndex and successPolicy; job has SuccessCriteriaMet condition if job meets to successPolicy and doesn't meet backoffLimitPerIndex",
                indexed(2, 2, None, with(json!({"backoffLimitPerIndex": 2}))),
                vec![p(0, "Failed", "0"), p(1, "Running", "0"), p(2, "Succeeded", "1")],
            )
        },
        // Newest: failedIndexes is reported (JobBackoffLimitPerIndex was off in upstream's case).
        Case {
            failed: 1,
            succeeded: 1,
            completed: "1",
            failed_indexes: Some(""),
            conditions: vec![SUCCESS_POLICY, COMPLETE_BY_POLICY],
            ..case(
                "job with successPolicy; job has both Complete and SuccessCriteriaMet condition when job meets to successPolicy and all pods have been already removed",
                with_status(indexed(2, 2, None, with(json!({"backoffLimitPerIndex": 2}))), scm.clone()),
                vec![p(0, "Failed", "0"), p(1, "Succeeded", "1")],
            )
        },
        Case {
            failed: 1,
            succeeded: 1,
            terminating: 2,
            completed: "1",
            failed_indexes: Some(""),
            conditions: vec![SUCCESS_POLICY],
            ..case(
                "job with successPolicy; job has SuccessCriteriaMet condition when job meets to successPolicy and some pods still are running",
                with_status(indexed(3, 3, None, with(json!({"backoffLimitPerIndex": 3}))), scm.clone()),
                vec![p(0, "Failed", "0"), p(1, "Running", "1"), p(2, "Succeeded", "1"), p(3, "Running", "2")],
            )
        },
        Case {
            failed: 2,
            succeeded: 1,
            terminating: 1,
            completed: "1",
            conditions: vec![("FailureTarget", "True", "PodFailurePolicy", disruption)],
            ..case(
                "job with successPolicy and podFailurePolicy; job has a failed condition when job meets to both successPolicy and podFailurePolicy",
                indexed(2, 2, None, with(disruption_fail_job.clone())),
                vec![
                    mypod(0, "Failed", Some("0"), condition("DisruptionTarget")),
                    p(1, "Running", "0"),
                    p(2, "Succeeded", "1"),
                ],
            )
        },
        Case {
            failed: 1,
            succeeded: 1,
            completed: "1",
            failed_indexes: Some("0"),
            conditions: FAILED_INDEXES.to_vec(),
            ..case(
                "job with successPolicy and backoffLimitPerIndex; job has a failed condition when job meets to both successPolicy and backoffLimitPerIndex",
                indexed(2, 2, None, with(json!({"backoffLimitPerIndex": 1}))),
                vec![mypod(0, "Failed", Some("0"), failure_count("1")), p(1, "Succeeded", "1")],
            )
        },
        Case {
            failed: 2,
            succeeded: 1,
            completed: "1",
            conditions: BACKOFF_LIMIT.to_vec(),
            ..case(
                "job with successPolicy and backoffLimit; job has a failed condition when job meets to both successPolicy and backoffLimit",
                indexed(2, 2, Some(1), rule.clone()),
                vec![p(0, "Failed", "0"), p(1, "Failed", "0"), p(2, "Succeeded", "1")],
            )
        },
        Case {
            failed: 1,
            succeeded: 1,
            completed: "1",
            conditions: vec![SUCCESS_POLICY, COMPLETE_BY_POLICY],
            ..case(
                "job with successPolicy and podFailurePolicy; job with SuccessCriteriaMet has never been transitioned to FailureTarget and Failed even if job meets podFailurePolicy",
                with_status(
                    indexed(
                        2,
                        2,
                        None,
                        json!({"successPolicy": {"rules": [{"succeededCount": 1}]},
                               "podFailurePolicy": disruption_fail_job["podFailurePolicy"]}),
                    ),
                    json!({"succeeded": 1, "completedIndexes": "1", "terminating": 0,
                           "uncountedTerminatedPods": {}, "conditions": [job_condition(SUCCESS_POLICY)]}),
                ),
                vec![mypod(0, "Failed", Some("0"), condition("DisruptionTarget")), p(1, "Succeeded", "1")],
            )
        },
        Case {
            failed: 1,
            succeeded: 1,
            completed: "1",
            failed_indexes: Some("0"),
            conditions: vec![SUCCESS_POLICY, COMPLETE_BY_POLICY],
            ..case(
                "job with successPolicy and backoffLimitPerIndex; job with SuccessCriteriaMet has never been transitioned to FailureTarget and Failed even if job meet backoffLimitPerIndex",
                with_status(
                    indexed(
                        2,
                        2,
                        None,
                        json!({"backoffLimitPerIndex": 1, "successPolicy": {"rules": [{"succeededIndexes": "1"}]}}),
                    ),
                    json!({"succeeded": 1, "completedIndexes": "1", "terminating": 0,
                           "uncountedTerminatedPods": {}, "conditions": [job_condition(SUCCESS_POLICY)]}),
                ),
                vec![mypod(0, "Failed", Some("0"), failure_count("1")), p(1, "Succeeded", "1")],
            )
        },
        Case {
            failed: 1,
            succeeded: 1,
            completed: "1",
            conditions: vec![SUCCESS_POLICY, COMPLETE_BY_POLICY],
            ..case(
                "job with successPolicy and backoffLimit; job with SuccessCriteriaMet has never been transitioned to FailureTarget and Failed even if job meets backoffLimit",
                with_status(
                    indexed(2, 2, Some(1), rule.clone()),
                    json!({"succeeded": 1, "completedIndexes": "1", "terminating": 0,
                           "uncountedTerminatedPods": {}, "conditions": [job_condition(SUCCESS_POLICY)]}),
                ),
                vec![p(0, "Failed", "0"), p(1, "Succeeded", "1")],
            )
        },
        Case {
            failed: 1,
            succeeded: 1,
            completed: "1",
            conditions: fail_job(disruption),
            ..case(
                "job with successPolicy and podFailureTarget; job with FailureTarget has never been transitioned to SuccessCriteriaMet even if job meets successPolicy",
                with_status(
                    indexed(2, 2, None, with(disruption_fail_job)),
                    json!({"failed": 1, "completedIndexes": "1", "terminating": 0, "uncountedTerminatedPods": {},
                           "conditions": [job_condition(("FailureTarget", "True", "PodFailurePolicy", disruption))]}),
                ),
                // The failed pod is counted already (no finalizer).
                vec![
                    {
                        let mut f = mypod(0, "Failed", Some("0"), condition("DisruptionTarget"));
                        f["metadata"]["finalizers"] = json!(null);
                        f
                    },
                    p(1, "Succeeded", "1"),
                ],
            )
        },
    ];
    run(cases);
}

#[test]
fn sync_job_with_backoff_limit_per_index_as_upstream() {
    let per_index = |limit: i32, more: Value| {
        let mut m = json!({"backoffLimitPerIndex": limit});
        merge(&mut m, more);
        m
    };
    let with_count = |i: usize, phase: &str, ix: &str, count: &str| mypod(i, phase, Some(ix), failure_count(count));
    let exit3 = |name: &str| {
        let mut s = failure_count("0");
        merge(&mut s, statuses(vec![terminated(name, 3)]));
        s
    };
    let cases = vec![
        Case {
            failed: 1,
            succeeded: 2,
            completed: "0,1",
            failed_indexes: Some(""),
            conditions: vec![
                ("SuccessCriteriaMet", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
                ("Complete", "True", "CompletionsReached", "Reached expected number of succeeded pods"),
            ],
            ..case(
                "successful job after a single failure within index",
                indexed(2, 2, None, per_index(1, json!({}))),
                vec![
                    with_count(0, "Failed", "0", "0"),
                    with_count(1, "Succeeded", "0", "1"),
                    with_count(2, "Succeeded", "1", "0"),
                ],
            )
        },
        Case {
            active: 2,
            failed_indexes: Some(""),
            ..case(
                "single failed pod, not counted as the replacement pod creation is delayed",
                indexed(2, 2, None, per_index(1, json!({}))),
                vec![with_count(0, "Failed", "0", "0")],
            )
        },
        Case {
            active: 2,
            failed: 1,
            failed_indexes: Some(""),
            ..case(
                "single failed pod replaced already",
                indexed(2, 2, None, per_index(1, json!({}))),
                vec![with_count(0, "Failed", "0", "0"), with_count(1, "Pending", "0", "1")],
            )
        },
        Case {
            active: 1,
            failed: 1,
            failed_indexes: Some("0"),
            ..case(
                "single failed index due to exceeding the backoff limit per index, the job continues",
                indexed(2, 2, None, per_index(1, json!({}))),
                vec![with_count(0, "Failed", "0", "1")],
            )
        },
        Case {
            active: 1,
            failed: 1,
            failed_indexes: Some("0"),
            ..case(
                "single failed index due to FailIndex action, the job continues",
                indexed(
                    2,
                    2,
                    None,
                    per_index(
                        1,
                        json!({"podFailurePolicy": {"rules": [{"action": "FailIndex",
                        "onExitCodes": {"operator": "In", "values": [3]}}]}}),
                    ),
                ),
                vec![mypod(0, "Failed", Some("0"), exit3(""))],
            )
        },
        Case {
            failed: 1,
            failed_indexes: Some(""),
            conditions: fail_job(
                "Container x for pod default/mypod-0 failed with exit code 3 matching FailJob rule at index 0",
            ),
            ..case(
                "job failed index due to FailJob action",
                indexed(
                    2,
                    2,
                    Some(6),
                    per_index(
                        1,
                        json!({"podFailurePolicy": {"rules": [{"action": "FailJob",
                        "onExitCodes": {"operator": "In", "values": [3]}}]}}),
                    ),
                ),
                vec![mypod(0, "Failed", Some("0"), exit3("x"))],
            )
        },
        Case {
            active: 2,
            failed_indexes: Some(""),
            ..case(
                "job pod failure ignored due to matching Ignore action",
                indexed(
                    2,
                    2,
                    Some(6),
                    per_index(
                        1,
                        json!({"podFailurePolicy": {"rules": [{"action": "Ignore",
                        "onExitCodes": {"operator": "In", "values": [3]}}]}}),
                    ),
                ),
                vec![mypod(0, "Failed", Some("0"), exit3("x"))],
            )
        },
        Case {
            failed: 2,
            failed_indexes: Some(""),
            conditions: BACKOFF_LIMIT.to_vec(),
            ..case(
                "job failed due to exceeding backoffLimit before backoffLimitPerIndex",
                indexed(2, 2, Some(1), per_index(1, json!({}))),
                vec![with_count(0, "Failed", "0", "0"), with_count(1, "Failed", "1", "0")],
            )
        },
        Case {
            failed: 1,
            succeeded: 1,
            completed: "1",
            failed_indexes: Some("0"),
            conditions: FAILED_INDEXES.to_vec(),
            ..case(
                "job failed due to failed indexes",
                indexed(2, 2, None, per_index(1, json!({}))),
                vec![with_count(0, "Failed", "0", "1"), with_count(1, "Succeeded", "1", "0")],
            )
        },
        Case {
            failed: 3,
            succeeded: 1,
            terminating: 1,
            completed: "1",
            failed_indexes: Some("0,2"),
            conditions: vec![(
                "FailureTarget",
                "True",
                "MaxFailedIndexesExceeded",
                "Job has exceeded the specified maximal number of failed indexes",
            )],
            ..case(
                "job failed due to exceeding max failed indexes",
                indexed(4, 4, None, per_index(1, json!({"maxFailedIndexes": 1}))),
                vec![
                    with_count(0, "Failed", "0", "1"),
                    with_count(1, "Succeeded", "1", "0"),
                    with_count(2, "Failed", "2", "1"),
                    with_count(3, "Running", "3", "0"),
                ],
            )
        },
    ];
    run(cases);
}
