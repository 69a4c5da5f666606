//! `indexed_job_utils.go`: Indexed Jobs. Completion indexes as compressed intervals
//! (`status.completedIndexes` "1,3-5"), the indexes succeeded and failed, the first pending
//! ones to create pods for, the pods of repeated or out-of-range indexes to delete, the
//! per-index failure counts of `backoffLimitPerIndex` (pod annotations), and what a pod of an
//! index carries: the `batch.kubernetes.io/job-completion-index` annotation and label, the
//! `JOB_COMPLETION_INDEX` variable, the hostname and the generated name.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use k8s_openapi::api::batch::v1::Job;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Map, Value, json};
use wasmcm_guest::pod;

use crate::backoff_utils::finished_time;
use crate::pod_failure_policy::{Action, match_pod_failure_policy};
use crate::sync::{is_pod_failed, only_replace_failed_pods};
use crate::tracking_utils::has_job_tracking_finalizer;

pub const COMPLETION_INDEX_ENV_NAME: &str = "JOB_COMPLETION_INDEX";
/// `batch.JobCompletionIndexAnnotation`, also the label's key.
pub const JOB_COMPLETION_INDEX_ANNOTATION: &str = "batch.kubernetes.io/job-completion-index";
/// `batch.JobIndexFailureCountAnnotation`.
pub const JOB_INDEX_FAILURE_COUNT_ANNOTATION: &str = "batch.kubernetes.io/job-index-failure-count";
/// `batch.JobIndexIgnoredFailureCountAnnotation`.
pub const JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION: &str = "batch.kubernetes.io/job-index-ignored-failure-count";
/// `unknownCompletionIndex`.
pub const UNKNOWN_COMPLETION_INDEX: i64 = -1;
/// `names.MaxGeneratedNameLength`: a name's 63 characters less the 5 the server appends.
const MAX_GENERATED_NAME_LENGTH: usize = 58;

/// `isIndexedJob`.
pub fn is_indexed_job(job: &Job) -> bool {
    job.spec.as_ref().and_then(|s| s.completion_mode.as_deref()) == Some("Indexed")
}

/// `hasBackoffLimitPerIndex` (the feature is on in every release this follows).
pub fn has_backoff_limit_per_index(job: &Job) -> bool {
    job.spec.as_ref().is_some_and(|s| s.backoff_limit_per_index.is_some())
}

/// Sorted, non-overlapping, non-adjacent intervals of indexes: `orderedIntervals`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OrderedIntervals(Vec<(i64, i64)>);

impl OrderedIntervals {
    /// From intervals already in order (tests restate upstream's literals with this).
    pub fn from_intervals(intervals: &[(i64, i64)]) -> Self {
        OrderedIntervals(intervals.to_vec())
    }

    pub fn intervals(&self) -> &[(i64, i64)] {
        &self.0
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `withOrderedIndexes`: these intervals and `new_indexes` (in increasing order).
    pub fn with_ordered_indexes(&self, new_indexes: &[i64]) -> Self {
        self.merge(&OrderedIntervals(new_indexes.iter().map(|&i| (i, i)).collect()))
    }

    /// `merge`: the union of two lists of ordered intervals.
    pub fn merge(&self, other: &OrderedIntervals) -> Self {
        let mut result: Vec<(i64, i64)> = Vec::new();
        let mut push = |interval: (i64, i64)| match result.last_mut() {
            Some(last) if interval.0 <= last.1 + 1 => last.1 = last.1.max(interval.1),
            _ => result.push(interval),
        };
        let (a, b) = (&self.0, &other.0);
        let (mut i, mut j) = (0, 0);
        while i < a.len() && j < b.len() {
            if a[i].0 < b[j].0 {
                push(a[i]);
                i += 1;
            } else {
                push(b[j]);
                j += 1;
            }
        }
        a[i..].iter().chain(&b[j..]).for_each(|iv| push(*iv));
        OrderedIntervals(result)
    }

    /// `total`: how many indexes.
    pub fn total(&self) -> i64 {
        self.0.iter().map(|(first, last)| last - first + 1).sum()
    }

    /// `has`: whether `ix` is one of the indexes (binary search).
    pub fn has(&self, ix: i64) -> bool {
        let at = self.0.partition_point(|iv| iv.1 < ix);
        at < self.0.len() && self.0[at].0 <= ix
    }
}

/// `String`: "0,2-4,7,8" (two adjacent indexes are written as a pair, not a range).
impl fmt::Display for OrderedIntervals {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (n, (first, last)) in self.0.iter().enumerate() {
            if n > 0 {
                f.write_str(",")?;
            }
            write!(f, "{first}")?;
            if last > first {
                write!(f, "{}{last}", if *last == first + 1 { "," } else { "-" })?;
            }
        }
        Ok(())
    }
}

/// `parseIndexesFromString`: the intervals of `text` below `completions`; a corrupt interval is
/// skipped, and the list ends at the first interval starting at or past `completions`.
pub fn parse_indexes_from_string(text: &str, completions: i32) -> OrderedIntervals {
    let completions = i64::from(completions);
    let mut result: Vec<(i64, i64)> = Vec::new();
    if text.is_empty() {
        return OrderedIntervals(result);
    }
    for interval in text.split(',') {
        let mut limits = interval.split('-');
        let Some(first) = limits.next().and_then(go_atoi) else { continue };
        if first >= completions {
            break;
        }
        let last = match limits.next() {
            Some(l) => match go_atoi(l) {
                Some(last) => last.min(completions - 1),
                None => continue,
            },
            None => first,
        };
        match result.last_mut() {
            Some(prev) if prev.1 == first - 1 => prev.1 = last,
            _ => result.push((first, last)),
        }
    }
    OrderedIntervals(result)
}

/// Go's `strconv.Atoi`: an optional sign and decimal digits.
fn go_atoi(s: &str) -> Option<i64> {
    let digits = s.strip_prefix(['+', '-']).unwrap_or(s);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

fn completions(job: &Job) -> i64 {
    i64::from(job.spec.as_ref().and_then(|s| s.completions).unwrap_or(0))
}

/// `calculateSucceededIndexes`: the indexes of `status.completedIndexes`, and those with the
/// indexes of succeeded pods not yet counted (still carrying the finalizer) added.
pub fn calculate_succeeded_indexes(job: &Job, pods: &[&Pod]) -> (OrderedIntervals, OrderedIntervals) {
    let completed = job.status.as_ref().and_then(|s| s.completed_indexes.as_deref()).unwrap_or("");
    let prev = parse_indexes_from_string(completed, completions(job) as i32);
    let new: BTreeSet<i64> = pods
        .iter()
        .filter(|p| phase(p) == "Succeeded" && has_job_tracking_finalizer(p))
        .map(|p| completion_index(p))
        .filter(|&ix| ix != UNKNOWN_COMPLETION_INDEX && ix < completions(job))
        .collect();
    let result = prev.with_ordered_indexes(&new.into_iter().collect::<Vec<_>>());
    (prev, result)
}

/// `calculateFailedIndexes`: the indexes of `status.failedIndexes` and those whose pods failed
/// for good (not yet counted).
pub fn calculate_failed_indexes(job: &Job, pods: &[&Pod]) -> OrderedIntervals {
    let prev = match job.status.as_ref().and_then(|s| s.failed_indexes.as_deref()) {
        Some(text) => parse_indexes_from_string(text, completions(job) as i32),
        None => OrderedIntervals::default(),
    };
    let new: BTreeSet<i64> = pods
        .iter()
        .filter(|p| {
            let ix = completion_index(p);
            ix != UNKNOWN_COMPLETION_INDEX
                && ix < completions(job)
                && has_job_tracking_finalizer(p)
                && is_index_failed(job, p)
        })
        .map(|p| completion_index(p))
        .collect();
    prev.with_ordered_indexes(&new.into_iter().collect::<Vec<_>>())
}

/// `isIndexFailed`: the pod failed and its index may not be retried (a FailIndex rule, or the
/// index's counted failures reached `backoffLimitPerIndex`).
pub fn is_index_failed(job: &Job, pod: &Pod) -> bool {
    let mut counted = false;
    if is_pod_failed(pod, job) {
        let policy = job.spec.as_ref().and_then(|s| s.pod_failure_policy.as_ref());
        if policy.is_some() {
            let matched = match_pod_failure_policy(policy, pod);
            if matched.action == Some(Action::FailIndex) {
                return true;
            }
            counted = matched.count_failed;
        } else {
            counted = true;
        }
    }
    let limit = job.spec.as_ref().and_then(|s| s.backoff_limit_per_index).unwrap_or(0);
    counted && index_failure_count(pod) >= limit
}

/// `firstPendingIndexes`: the first `count` indexes below `completions` that no active pod,
/// succeeded or failed index covers (nor, when only failed pods are replaced, a terminating
/// pod).
pub fn first_pending_indexes(
    job: &Job,
    pods: &[&Pod],
    active_pods: &[&Pod],
    succeeded_indexes: &OrderedIntervals,
    failed_indexes: Option<&OrderedIntervals>,
    count: usize,
    completions: i64,
) -> Vec<i64> {
    if count == 0 {
        return Vec::new();
    }
    let mut non_pending = succeeded_indexes.with_ordered_indexes(&indexes(active_pods));
    if only_replace_failed_pods(job) {
        let terminating: Vec<&Pod> = pods.iter().copied().filter(|p| pod::is_terminating(p)).collect();
        non_pending = non_pending.with_ordered_indexes(&indexes(&terminating));
    }
    if let Some(failed) = failed_indexes {
        non_pending = non_pending.merge(failed);
    }
    let mut result = Vec::with_capacity(count);
    let mut candidate = 0;
    for &(first, last) in non_pending.intervals() {
        while candidate < completions && result.len() < count && candidate < first {
            result.push(candidate);
            candidate += 1;
        }
        candidate = candidate.max(last + 1);
    }
    while candidate < completions && result.len() < count {
        result.push(candidate);
        candidate += 1;
    }
    result
}

/// `getIndexes`: the known completion indexes of `pods`, in order.
pub fn indexes(pods: &[&Pod]) -> Vec<i64> {
    let set: BTreeSet<i64> =
        pods.iter().map(|p| completion_index(p)).filter(|&ix| ix != UNKNOWN_COMPLETION_INDEX).collect();
    set.into_iter().collect()
}

/// `appendDuplicatedIndexPodsForRemoval`: of active `pods`, those to remove (no index, an index
/// past `completions`, all but one of a repeated index) and those left.
pub fn duplicated_index_pods_for_removal<'a>(pods: &[&'a Pod], completions: i64) -> (Vec<&'a Pod>, Vec<&'a Pod>) {
    let mut sorted = pods.to_vec();
    sorted.sort_by_key(|p| completion_index(p));
    let (mut rm, mut left) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < sorted.len() {
        let ix = completion_index(sorted[i]);
        if ix >= completions {
            rm.extend_from_slice(&sorted[i..]);
            break;
        }
        let end = sorted[i..].iter().position(|p| completion_index(p) != ix).map_or(sorted.len(), |n| i + n);
        let mut same = sorted[i..end].to_vec();
        if ix == UNKNOWN_COMPLETION_INDEX {
            rm.extend(same);
        } else if same.len() == 1 {
            left.extend(same);
        } else {
            pod::sort_by_less(&mut same, |a, b| pod::active_pods_less(a, b));
            let keep = same.pop();
            rm.extend(same);
            left.extend(keep);
        }
        i = end;
    }
    (rm, left)
}

/// `getPodsWithDelayedDeletionPerIndex`: per index still to be retried (no active pod,
/// neither succeeded nor failed), its latest failed pod not yet counted, whose finalizer stays
/// until the replacement carries the index's failure count.
pub fn pods_with_delayed_deletion_per_index<'a>(
    job: &Job,
    valid_failed_pods: &[&'a Pod],
    active_pods: &[&Pod],
    succeeded_indexes: &OrderedIntervals,
    failed_indexes: Option<&OrderedIntervals>,
) -> BTreeMap<i64, &'a Pod> {
    let active: BTreeSet<i64> = indexes(active_pods).into_iter().collect();
    let mut result: BTreeMap<i64, &Pod> = BTreeMap::new();
    for &p in valid_failed_pods {
        let ix = completion_index(p);
        if ix == UNKNOWN_COMPLETION_INDEX || ix >= completions(job) {
            continue;
        }
        if succeeded_indexes.has(ix) || failed_indexes.is_some_and(|f| f.has(ix)) || active.contains(&ix) {
            continue;
        }
        match result.get(&ix) {
            Some(last)
                if !(index_absolute_failure_count(last) <= index_absolute_failure_count(p)
                    && finished_time(p) >= finished_time(last)) => {}
            _ => {
                result.insert(ix, p);
            }
        }
    }
    result
}

/// `getNewIndexFailureCounts`: the failure and ignored-failure counts a pod replacing
/// `replaced` carries.
pub fn new_index_failure_counts(job: &Job, replaced: Option<&Pod>) -> (i32, i32) {
    let Some(replaced) = replaced else { return (0, 0) };
    let (mut failures, mut ignored) = (index_failure_count(replaced), index_ignored_failure_count(replaced));
    let policy = job.spec.as_ref().and_then(|s| s.pod_failure_policy.as_ref());
    if policy.is_none() || match_pod_failure_policy(policy, replaced).count_failed {
        failures += 1;
    } else {
        ignored += 1;
    }
    (failures, ignored)
}

/// `getCompletionIndex`: the pod's completion index annotation, or -1.
pub fn completion_index(pod: &Pod) -> i64 {
    let Some(value) = annotation(pod, JOB_COMPLETION_INDEX_ANNOTATION) else { return UNKNOWN_COMPLETION_INDEX };
    match go_atoi(value) {
        Some(i) if i >= 0 => i,
        _ => UNKNOWN_COMPLETION_INDEX,
    }
}

/// `getIndexFailureCount`: the pod's failure-count annotation, 0 when absent or invalid.
pub fn index_failure_count(pod: &Pod) -> i32 {
    annotation(pod, JOB_INDEX_FAILURE_COUNT_ANNOTATION).map_or(0, parse_int32)
}

fn index_ignored_failure_count(pod: &Pod) -> i32 {
    annotation(pod, JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION).map_or(0, parse_int32)
}

/// `getIndexAbsoluteFailureCount`: counted and ignored failures of the index so far.
pub fn index_absolute_failure_count(pod: &Pod) -> i32 {
    index_failure_count(pod).saturating_add(index_ignored_failure_count(pod))
}

/// `parseInt32`: 0 for anything not a number in 0..=MaxInt32.
fn parse_int32(value: &str) -> i32 {
    go_atoi(value).and_then(|v| i32::try_from(v).ok()).filter(|v| *v >= 0).unwrap_or(0)
}

fn annotation<'a>(pod: &'a Pod, key: &str) -> Option<&'a str> {
    pod.metadata.annotations.as_ref()?.get(key).map(String::as_str)
}

fn phase(pod: &Pod) -> &str {
    pod.status.as_ref().and_then(|s| s.phase.as_deref()).unwrap_or("")
}

/// `addCompletionIndexEnvVariables` on a pod template's JSON: `JOB_COMPLETION_INDEX` from the
/// index label, in every container and init container that does not set it.
pub fn add_completion_index_env_variables(template: &mut Value) {
    let field_path = format!("metadata.labels['{JOB_COMPLETION_INDEX_ANNOTATION}']");
    for list in ["initContainers", "containers"] {
        let Some(containers) = template.pointer_mut(&format!("/spec/{list}")).and_then(Value::as_array_mut) else {
            continue;
        };
        for container in containers.iter_mut().filter_map(Value::as_object_mut) {
            let env = container.entry("env").or_insert_with(|| json!([]));
            if env.is_null() {
                *env = json!([]);
            }
            let Some(env) = env.as_array_mut() else { continue };
            if env.iter().any(|v| v.get("name").and_then(Value::as_str) == Some(COMPLETION_INDEX_ENV_NAME)) {
                continue;
            }
            env.push(json!({"name": COMPLETION_INDEX_ENV_NAME,
                            "valueFrom": {"fieldRef": {"fieldPath": field_path}}}));
        }
    }
}

/// The template's `metadata.<field>` map, made if missing.
fn metadata_map<'a>(template: &'a mut Value, field: &str) -> Option<&'a mut Map<String, Value>> {
    let metadata = template.as_object_mut()?.entry("metadata").or_insert_with(|| json!({}));
    let map = metadata.as_object_mut()?.entry(field).or_insert_with(|| json!({}));
    if map.is_null() {
        *map = json!({});
    }
    map.as_object_mut()
}

/// `addCompletionIndexAnnotation` and `addCompletionIndexLabel` (PodIndexLabel is on).
pub fn add_completion_index(template: &mut Value, index: i64) {
    for field in ["annotations", "labels"] {
        if let Some(map) = metadata_map(template, field) {
            map.insert(JOB_COMPLETION_INDEX_ANNOTATION.into(), json!(index.to_string()));
        }
    }
}

/// `addIndexFailureCountAnnotation`.
pub fn add_index_failure_count_annotation(template: &mut Value, job: &Job, replaced: Option<&Pod>) {
    let (failures, ignored) = new_index_failure_counts(job, replaced);
    if let Some(map) = metadata_map(template, "annotations") {
        map.insert(JOB_INDEX_FAILURE_COUNT_ANNOTATION.into(), json!(failures.to_string()));
        if ignored > 0 {
            map.insert(JOB_INDEX_IGNORED_FAILURE_COUNT_ANNOTATION.into(), json!(ignored.to_string()));
        }
    }
}

/// `podGenerateNameWithIndex`: `<job>-<index>-`, the job's name cut to leave room.
pub fn pod_generate_name_with_index(job_name: &str, index: i64) -> String {
    let append = format!("-{index}-");
    let prefix = format!("{job_name}{append}");
    if prefix.len() > MAX_GENERATED_NAME_LENGTH {
        // Names are ASCII (a DNS subdomain), so a byte cut is a character cut; anything else is
        // left whole for the API server to refuse.
        let keep = MAX_GENERATED_NAME_LENGTH.saturating_sub(append.len());
        return format!("{}{append}", job_name.get(..keep).unwrap_or(job_name));
    }
    prefix
}
