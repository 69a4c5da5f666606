//! indexed_job_utils_test.go's tables restated as data: `TestCalculateSucceededIndexes`,
//! `TestIsIndexFailed`, `TestCalculateFailedIndexes`, `TestGetPodsWithDelayedDeletionPerIndex`,
//! `TestGetNewIndexFailureCountValue`, `TestIntervalsHaveIndex`, `TestFirstPendingIndexes`,
//! `TestAppendDuplicatedIndexPodsForRemoval`, `TestPodGenerateNameWithIndex`,
//! `TestGetIndexFailureCount`. Upstream's `hollowPodsWithIndexPhase` and `buildPod()` are
//! [`hollow`] and [`built`].

use std::collections::BTreeSet;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Value, json};
use wasmcm_guest::pod;
use wasmcm_job::indexed_job_utils::{
    OrderedIntervals, calculate_failed_indexes, calculate_succeeded_indexes, duplicated_index_pods_for_removal,
    first_pending_indexes, index_failure_count, is_index_failed, new_index_failure_counts,
    pod_generate_name_with_index, pods_with_delayed_deletion_per_index,
};
use wasmcm_job::sync::is_pod_failed;
use wasmcm_job::tracking_utils::has_job_tracking_finalizer;

/// Upstream's `noIndex`: a pod without the index annotation.
const NO_INDEX: &str = "-";
const INDEX: &str = "batch.kubernetes.io/job-completion-index";
const FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";
const IGNORED_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-ignored-failure-count";
const TRACKING: &str = "batch.kubernetes.io/job-tracking";
// Phases, short for the tables.
const S: &str = "Succeeded";
const F: &str = "Failed";
const R: &str = "Running";
const P: &str = "Pending";

/// `hollowPodsWithIndexPhase`: pods with nothing but a phase and, unless `-`, an index.
fn hollow(descs: &[(&str, &str)]) -> Vec<Pod> {
    descs
        .iter()
        .map(|&(index, phase)| {
            let mut p = json!({"metadata": {}, "status": {"phase": phase}});
            if index != NO_INDEX {
                p["metadata"]["annotations"] = json!({INDEX: index});
            }
            serde_json::from_value(p).unwrap()
        })
        .collect()
}

/// `toIndexPhases`.
fn index_phases(pods: &[&Pod]) -> Vec<(String, String)> {
    pods.iter()
        .map(|p| {
            let index = p.metadata.annotations.as_ref().and_then(|a| a.get(INDEX)).map_or(NO_INDEX, String::as_str);
            let phase = p.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("");
            (index.to_string(), phase.to_string())
        })
        .collect()
}

fn owned(descs: &[(&str, &str)]) -> Vec<(String, String)> {
    descs.iter().map(|&(i, phase)| (i.to_string(), phase.to_string())).collect()
}

/// `buildPod()`: a uid, then what the steps in `pod` (merged in) add; `tracking` adds the
/// finalizer.
fn built(uid: &str, failure_count: &str, phase: &str, index: &str, tracking: bool, extra: Value) -> Pod {
    let mut p = json!({"metadata": {"uid": uid, "annotations": {FAILURE_COUNT: failure_count, INDEX: index}},
                       "status": {"phase": phase}});
    if tracking {
        p["metadata"]["finalizers"] = json!([TRACKING]);
    }
    wasmcm_guest::json::merge_patch(&mut p, extra);
    serde_json::from_value(p).unwrap()
}

fn job(spec: Value, status: Value) -> Job {
    serde_json::from_value(json!({"metadata": {}, "spec": spec, "status": status})).unwrap()
}

fn refs(pods: &[Pod]) -> Vec<&Pod> {
    pods.iter().collect()
}

fn iv(intervals: &[(i64, i64)]) -> OrderedIntervals {
    OrderedIntervals::from_intervals(intervals)
}

#[test]
fn calculate_succeeded_indexes_as_upstream() {
    use wasmcm_job::fixtures::merge;
    type Case = (
        &'static str,
        &'static str,
        &'static [(&'static str, &'static str)],
        i32,
        &'static [(i64, i64)],
        &'static [(i64, i64)],
    );
    // (name, prevSucceeded, pods, completions, wantStatusIntervals, wantIntervals)
    let cases: Vec<Case> = vec![
        ("one index", "", &[("1", S)], 2, &[], &[(1, 1)]),
        ("two separate", "", &[("2", F), ("5", S), ("5", S), ("10", F), ("10", S)], 11, &[], &[(5, 5), (10, 10)]),
        (
            "two intervals",
            "",
            &[("0", R), ("1", P), ("2", S), ("3", S), ("5", S), ("6", S), ("7", S)],
            8,
            &[],
            &[(2, 3), (5, 7)],
        ),
        (
            "one index and one interval",
            "",
            &[("0", S), ("1", F), ("2", S), ("3", S), ("4", S), ("5", S), (NO_INDEX, S), ("-2", S)],
            6,
            &[],
            &[(0, 0), (2, 5)],
        ),
        (
            "out of range",
            "",
            &[("0", S), ("1", S), ("2", S), ("3", F), ("4", S), ("5", S), (NO_INDEX, S), ("-2", S)],
            5,
            &[],
            &[(0, 2), (4, 4)],
        ),
        ("prev interval out of range", "0-5,8-10", &[], 8, &[(0, 5)], &[(0, 5)]),
        ("prev interval partially out of range", "0-5,8-10", &[], 10, &[(0, 5), (8, 9)], &[(0, 5), (8, 9)]),
        (
            "prev and new separate",
            "0,4,5,10-12",
            &[("2", S), ("7", S), ("8", S)],
            13,
            &[(0, 0), (4, 5), (10, 12)],
            &[(0, 0), (2, 2), (4, 5), (7, 8), (10, 12)],
        ),
        ("prev between new", "3,4,6", &[("2", S), ("7", S), ("8", S)], 9, &[(3, 4), (6, 6)], &[(2, 4), (6, 8)]),
        ("new between prev", "2,7,8", &[("3", S), ("4", S), ("6", S)], 9, &[(2, 2), (7, 8)], &[(2, 4), (6, 8)]),
        ("new within prev", "2-7", &[("0", S), ("3", S), ("5", S), ("9", S)], 10, &[(2, 7)], &[(0, 0), (2, 7), (9, 9)]),
        ("corrupted interval", "0,1-foo,bar", &[("3", S)], 4, &[(0, 0)], &[(0, 0), (3, 3)]),
    ];
    for (name, prev, descs, completions, want_status, want) in cases {
        let j = job(json!({"completions": completions}), json!({"completedIndexes": prev}));
        let mut pods = hollow(descs);
        for p in &mut pods {
            let mut v = serde_json::to_value(&*p).unwrap();
            merge(&mut v, json!({"metadata": {"finalizers": [TRACKING]}}));
            *p = serde_json::from_value(v).unwrap();
        }
        let (got_status, got) = calculate_succeeded_indexes(&j, &refs(&pods));
        assert_eq!(got_status, iv(want_status), "{name}: completed indexes from status");
        assert_eq!(got, iv(want), "{name}: completed indexes");
    }
}

#[test]
fn is_index_failed_as_upstream() {
    let fail_index_on_3 = json!({"rules": [{"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [3]}}]});
    let cases = [
        (
            "failed pod exceeding backoffLimitPerIndex, when backoffLimitPerIndex=0",
            json!({"completions": 2, "backoffLimitPerIndex": 0}),
            built("a", "0", "Failed", "0", true, json!({})),
            true,
        ),
        (
            "failed pod exceeding backoffLimitPerIndex, when backoffLimitPerIndex=1",
            json!({"completions": 2, "backoffLimitPerIndex": 1}),
            built("a", "1", "Failed", "1", true, json!({})),
            true,
        ),
        (
            "matching FailIndex pod failure policy",
            json!({"completions": 2, "backoffLimitPerIndex": 1, "podFailurePolicy": fail_index_on_3}),
            built(
                "a",
                "0",
                "Failed",
                "0",
                true,
                json!({"status": {"containerStatuses": [{"name": "", "image": "", "imageID": "", "ready": false,
                    "restartCount": 0, "state": {"terminated": {"exitCode": 3}}}]}}),
            ),
            true,
        ),
        // Ours: below the limit, the index is retried.
        (
            "failed pod below backoffLimitPerIndex",
            json!({"completions": 2, "backoffLimitPerIndex": 2}),
            built("a", "1", "Failed", "1", true, json!({})),
            false,
        ),
    ];
    for (name, spec, p, want) in cases {
        assert_eq!(is_index_failed(&job(spec, json!({})), &p), want, "{name}");
    }
}

#[test]
fn calculate_failed_indexes_as_upstream() {
    let spec = |limit: i32| json!({"completions": 2, "backoffLimitPerIndex": limit});
    let cases = [
        (
            "one new index failed",
            job(spec(1), json!({})),
            vec![built("a", "0", "Failed", "0", true, json!({})), built("b", "1", "Failed", "1", true, json!({}))],
            vec![(1, 1)],
        ),
        (
            "pod without finalizer is ignored",
            job(spec(0), json!({})),
            vec![built("a", "0", "Failed", "0", false, json!({}))],
            vec![],
        ),
        (
            "pod outside completions is ignored",
            job(spec(0), json!({})),
            vec![built("a", "0", "Failed", "3", false, json!({}))],
            vec![],
        ),
        (
            "extend the failed indexes",
            job(spec(0), json!({"failedIndexes": "0"})),
            vec![built("a", "0", "Failed", "1", true, json!({}))],
            vec![(0, 1)],
        ),
        (
            "prev failed indexes empty",
            job(spec(0), json!({"failedIndexes": ""})),
            vec![built("a", "0", "Failed", "1", true, json!({}))],
            vec![(1, 1)],
        ),
        (
            "prev failed indexes outside the completions",
            job(spec(0), json!({"failedIndexes": "9"})),
            vec![built("a", "0", "Failed", "1", true, json!({}))],
            vec![(1, 1)],
        ),
    ];
    for (name, j, pods, want) in cases {
        assert_eq!(calculate_failed_indexes(&j, &refs(&pods)), iv(&want), "{name}");
    }
}

/// The case "failed pod with expected finalizer removal" is not restated: this controller keeps
/// no expectations of finalizer removals (see `tracking_utils`); a removal in flight is a pod
/// whose finalizer is gone once the cache shows it, the case "failed pod without finalizer".
#[test]
fn pods_with_delayed_deletion_per_index_as_upstream() {
    let spec = |completions: i32, limit: i32| json!({"completions": completions, "backoffLimitPerIndex": limit});
    let deleted = |offset_seconds: i64| {
        let at = wasmcm_job::fixtures::time(offset_seconds);
        json!({"metadata": {"deletionTimestamp": at}})
    };
    let cases = [
        (
            "failed pods are kept corresponding to non-failed indexes are kept",
            spec(3, 1),
            vec![
                built("a", "0", "Failed", "0", true, json!({})),
                built("b", "1", "Failed", "1", true, json!({})),
                built("c", "0", "Failed", "2", true, json!({})),
            ],
            vec!["a", "c"],
        ),
        (
            "failed pod without finalizer; the pod's deletion is not delayed as it already started",
            spec(2, 0),
            vec![built("a", "0", "Failed", "0", false, json!({}))],
            vec![],
        ),
        (
            "failed pod with index outside of completions; the pod's deletion is not delayed",
            spec(2, 0),
            vec![built("a", "0", "Failed", "4", true, json!({}))],
            vec![],
        ),
        (
            "failed pod for active index; the pod's deletion is not delayed as it is already replaced",
            spec(2, 1),
            vec![built("a1", "0", "Failed", "0", true, json!({})), built("a2", "1", "Running", "0", true, json!({}))],
            vec![],
        ),
        (
            "failed pod for succeeded index; the pod's deletion is not delayed as it is already replaced",
            spec(2, 1),
            vec![built("a1", "0", "Failed", "0", true, json!({})), built("a2", "1", "Succeeded", "0", true, json!({}))],
            vec![],
        ),
        (
            "multiple failed pods for index with different failure count; only the pod with highest failure count is kept",
            spec(2, 4),
            vec![
                built("a1", "0", "Failed", "0", true, json!({})),
                built("a3", "2", "Failed", "0", true, json!({})),
                built("a2", "1", "Failed", "0", true, json!({})),
            ],
            vec!["a3"],
        ),
        (
            "multiple failed pods for index with different finish times; only the last failed pod is kept",
            spec(2, 4),
            vec![
                built("a1", "1", "Failed", "0", true, deleted(-1)),
                built("a3", "1", "Failed", "0", true, deleted(0)),
                built("a2", "1", "Failed", "0", true, deleted(-2)),
            ],
            vec!["a3"],
        ),
    ];
    for (name, spec, pods, want) in cases {
        let j = job(spec, json!({}));
        let all = refs(&pods);
        let active: Vec<&Pod> = all.iter().copied().filter(|p| pod::is_active(p)).collect();
        let failed_indexes = calculate_failed_indexes(&j, &all);
        let (_, succeeded_indexes) = calculate_succeeded_indexes(&j, &all);
        // getValidPodsWithFilter(isPodFailed): tracked pods of a known index.
        let valid_failed: Vec<&Pod> =
            all.iter().copied().filter(|p| has_job_tracking_finalizer(p) && is_pod_failed(p, &j)).collect();
        let got =
            pods_with_delayed_deletion_per_index(&j, &valid_failed, &active, &succeeded_indexes, Some(&failed_indexes));
        let got: BTreeSet<&str> = got.values().map(|p| p.metadata.uid.as_deref().unwrap_or("")).collect();
        assert_eq!(got.into_iter().collect::<Vec<_>>(), want, "{name}");
    }
}

#[test]
fn new_index_failure_count_value_as_upstream() {
    let ignore_disruption =
        json!({"rules": [{"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]}]});
    let cases = [
        ("first pod created", json!({}), None, (0, 0)),
        (
            "failed pod being replaced with 0 index failure count",
            json!({}),
            Some(built("a", "0", "Failed", "0", true, json!({}))),
            (1, 0),
        ),
        (
            "failed pod being replaced with >0 index failure count",
            json!({}),
            Some(built("a", "3", "Failed", "0", true, json!({}))),
            (4, 0),
        ),
        (
            "failed pod being replaced, matching the ignore rule",
            json!({"podFailurePolicy": ignore_disruption}),
            Some(built(
                "a",
                "3",
                "Failed",
                "3",
                true,
                json!({"status": {"conditions": [{"type": "DisruptionTarget", "status": "True"}]}}),
            )),
            (3, 1),
        ),
        // Ours: ignored failures so far carry on.
        (
            "ignored failures carried",
            json!({}),
            Some(built(
                "a",
                "2",
                "Failed",
                "0",
                true,
                json!({"metadata": {"annotations": {IGNORED_FAILURE_COUNT: "5"}}}),
            )),
            (3, 5),
        ),
    ];
    for (name, spec, replaced, want) in cases {
        assert_eq!(new_index_failure_counts(&job(spec, json!({})), replaced.as_ref()), want, "{name}");
    }
}

#[test]
fn intervals_have_index_as_upstream() {
    type Case = (&'static str, &'static [(i64, i64)], i64, bool);
    let cases: [Case; 6] = [
        ("empty", &[], 4, false),
        ("before all", &[(2, 4), (5, 7)], 1, false),
        ("after all", &[(2, 4), (6, 8)], 9, false),
        ("in between", &[(2, 4), (6, 8)], 5, false),
        ("in first", &[(2, 4), (6, 8)], 2, true),
        ("in second", &[(2, 4), (6, 8)], 8, true),
    ];
    for (name, intervals, index, want) in cases {
        assert_eq!(iv(intervals).has(index), want, "{name}");
    }
}

#[test]
fn first_pending_indexes_as_upstream() {
    type Case = (
        &'static str,
        usize,
        i64,
        &'static [(&'static str, &'static str)],
        &'static [(i64, i64)],
        Option<&'static [(i64, i64)]>,
        &'static [i64],
    );
    // (name, cnt, completions, active pods, succeeded indexes, failed indexes, want)
    let cases: Vec<Case> = vec![
        ("cnt greater than completions", 5, 3, &[], &[], None, &[0, 1, 2]),
        ("cnt less than completions", 2, 5, &[], &[], None, &[0, 1]),
        ("first pods active", 3, 10, &[("0", R), ("1", P)], &[], None, &[2, 3, 4]),
        ("last pods active or succeeded", 6, 6, &[("6", P)], &[(4, 5)], None, &[0, 1, 2, 3]),
        (
            "mixed",
            5,
            20,
            &[("3", P), ("5", R), ("8", P), (NO_INDEX, R), ("-3", R)],
            &[(2, 4), (9, 9)],
            None,
            &[0, 1, 6, 7, 10],
        ),
        (
            "with failed indexes",
            5,
            20,
            &[("3", P), ("9", P)],
            &[(1, 1), (5, 5), (9, 9)],
            Some(&[(2, 2), (6, 7)]),
            &[0, 4, 8, 10, 11],
        ),
    ];
    // newJob(1, 1, 1, Indexed)
    let j = job(json!({"parallelism": 1, "completions": 1, "backoffLimit": 1, "completionMode": "Indexed"}), json!({}));
    for (name, cnt, completions, active, succeeded, failed, want) in cases {
        let active = hollow(active);
        let failed = failed.map(iv);
        let got = first_pending_indexes(&j, &[], &refs(&active), &iv(succeeded), failed.as_ref(), cnt, completions);
        assert_eq!(got, want, "{name}");
    }
}

#[test]
fn append_duplicated_index_pods_for_removal_as_upstream() {
    type Descs = &'static [(&'static str, &'static str)];
    // (name, pods, completions, wantRm, wantLeft)
    let cases: [(&str, Descs, i64, Descs, Descs); 3] = [
        (
            "all unique",
            &[(NO_INDEX, P), ("2", P), ("5", R), ("6", R)],
            6,
            &[(NO_INDEX, P), ("6", R)],
            &[("2", P), ("5", R)],
        ),
        (
            "all with index",
            &[("5", P), ("0", R), ("3", P), ("0", R), ("3", R), ("0", P), ("6", R), ("6", P)],
            6,
            &[("0", P), ("0", R), ("3", P), ("6", R), ("6", P)],
            &[("0", R), ("3", R), ("5", P)],
        ),
        (
            "mixed",
            &[(NO_INDEX, P), ("invalid", R), ("-2", R), ("0", P), ("1", P), ("1", P), ("1", R)],
            6,
            &[(NO_INDEX, P), ("invalid", R), ("-2", R), ("1", P), ("1", P)],
            &[("0", P), ("1", R)],
        ),
    ];
    for (name, descs, completions, want_rm, want_left) in cases {
        let pods = hollow(descs);
        let (rm, left) = duplicated_index_pods_for_removal(&refs(&pods), completions);
        assert_eq!(index_phases(&rm), owned(want_rm), "{name}: pods for removal");
        assert_eq!(index_phases(&left), owned(want_left), "{name}: pods to keep");
    }
}

#[test]
fn pod_generate_name_with_index_as_upstream() {
    let cases = [
        ("short job name", "indexed-job", 1, "indexed-job-1-"),
        (
            "job name exceeds MaxGeneneratedNameLength",
            "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooo",
            1,
            "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhh-1-",
        ),
        (
            "job name with index suffix exceeds MaxGeneratedNameLength",
            "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhoo",
            1,
            "hhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhhooooohhhhh-1-",
        ),
    ];
    for (name, job_name, index, want) in cases {
        assert_eq!(pod_generate_name_with_index(job_name, index), want, "{name}");
    }
}

#[test]
fn index_failure_count_as_upstream() {
    let with = |value: &str| -> Pod {
        serde_json::from_value(json!({"metadata": {"annotations": {FAILURE_COUNT: value}}})).unwrap()
    };
    let cases = [
        ("no annotation", serde_json::from_value(json!({"metadata": {}})).unwrap(), 0),
        ("valid value", with("2"), 2),
        ("valid maxint32 value", with(&i32::MAX.to_string()), i32::MAX),
        ("too large value", with(&(i64::from(i32::MAX) + 1).to_string()), 0),
        ("negative value", with("-1"), 0),
        ("invalid int value", with("xyz"), 0),
    ];
    for (name, p, want) in cases {
        assert_eq!(index_failure_count(&p), want, "{name}");
    }
}
