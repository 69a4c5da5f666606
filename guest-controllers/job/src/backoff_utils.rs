//! `backoff_utils.go`: the delay before a failed Job's pods are recreated: 10 s after the first
//! failure, doubling with each consecutive failure since the last success, at most 10 minutes
//! (`DefaultJobPodFailureBackOff`, `MaxJobPodFailureBackOff`), counted from when the last
//! failed pod finished; per index, from that index's failure count annotation.
//!
//! Upstream keeps each Job's record (consecutive failures since the last success, and when the
//! last one finished) in the controller's memory, updated as it counts newly finished pods and
//! lost on a restart. A plugin remembers nothing between reconciles, so the record is rebuilt
//! each time from the pods still in the cache: [`record_from_counted`] folds the finished pods
//! already counted exactly as upstream folds newly counted ones, then [`new_backoff_record`]
//! adds the new ones. Pods deleted before they finished are left out of the rebuilt history
//! (upstream counted them as failures when it saw them), so the delay can only come out shorter.

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use wasmcm_guest::Instant;

/// `DefaultJobPodFailureBackOff`.
pub const DEFAULT_JOB_POD_FAILURE_BACKOFF: SignedDuration = SignedDuration::from_secs(10);
/// `MaxJobPodFailureBackOff`.
pub const MAX_JOB_POD_FAILURE_BACKOFF: SignedDuration = SignedDuration::from_secs(600);

/// `backoffRecord`, without its key (the Job is the reconcile's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BackoffRecord {
    pub failures_after_last_success: i32,
    pub last_failure_time: Option<Timestamp>,
}

impl BackoffRecord {
    /// `getRemainingTime`.
    pub fn remaining_time(&self, now: Instant, default: SignedDuration, max: SignedDuration) -> SignedDuration {
        remaining_time_for_failures_count(now, default, max, self.failures_after_last_success, self.last_failure_time)
    }
}

/// `newBackoffRecord`: `old` after the newly counted pods: a success resets it, failures after
/// the last success count, the latest failure's time is kept.
pub fn new_backoff_record(old: BackoffRecord, new_succeeded: &[&Pod], new_failed: &[&Pod]) -> BackoffRecord {
    let (succeeded, failed) = (by_finished_time(new_succeeded), by_finished_time(new_failed));
    let mut record = old;
    match (succeeded.last(), failed.last()) {
        (None, None) => {}
        (None, Some(&last)) => {
            record.failures_after_last_success = record.failures_after_last_success.saturating_add(failed.len() as i32);
            record.last_failure_time = Some(last);
        }
        (Some(_), None) => record = BackoffRecord::default(),
        (Some(&last_success), Some(_)) => {
            record = BackoffRecord::default();
            for &failed_at in failed.iter().rev() {
                if failed_at <= last_success {
                    break;
                }
                record.last_failure_time.get_or_insert(failed_at);
                record.failures_after_last_success += 1;
            }
        }
    }
    record
}

/// The record of the pods already counted, rebuilt as upstream built it when it counted them.
pub fn record_from_counted(succeeded: &[&Pod], failed: &[&Pod]) -> BackoffRecord {
    new_backoff_record(BackoffRecord::default(), succeeded, failed)
}

/// `sortByFinishedTime`, keeping only the times.
fn by_finished_time(pods: &[&Pod]) -> Vec<Timestamp> {
    let mut times: Vec<Timestamp> = pods.iter().map(|p| finished_time(p)).collect();
    times.sort();
    times
}

/// `getFinishedTime`: the last container's finish when every container finished, else the time
/// Ready turned False, else the deletion time less the grace period, else the creation time.
pub fn finished_time(pod: &Pod) -> Timestamp {
    finish_time_from_containers(pod)
        .or_else(|| finish_time_from_ready_false(pod))
        .or_else(|| finish_time_from_deletion(pod))
        .or_else(|| pod.metadata.creation_timestamp.as_ref().map(|t| t.0))
        // Go's zero time: long before anything.
        .unwrap_or(Timestamp::MIN)
}

/// `getFinishTimeFromContainers`: the latest finish of the containers and of the sidecars
/// (restartable init containers, which finish after the regular ones); none while any of them
/// has not finished. Init containers that ran to completion before the others are not looked at.
fn finish_time_from_containers(pod: &Pod) -> Option<Timestamp> {
    let status = pod.status.as_ref()?;
    let sidecars = wasmcm_guest::pod::sidecar_names(pod);
    let regular = status.container_statuses.iter().flatten();
    let init = status.init_container_statuses.iter().flatten().filter(|c| sidecars.contains(c.name.as_str()));
    let mut latest: Option<Timestamp> = None;
    for c in regular.chain(init) {
        // Go's zero time (an unset finishedAt) counts as not finished.
        let finished = c.state.as_ref()?.terminated.as_ref()?.finished_at.as_ref()?.0;
        if finished == go_zero_time() {
            return None;
        }
        if latest.is_none_or(|l| l < finished) {
            latest = Some(finished);
        }
    }
    latest
}

/// Go's `time.Time{}`, 0001-01-01T00:00:00Z, which `IsZero` tells apart.
fn go_zero_time() -> Timestamp {
    Timestamp::new(-62_135_596_800, 0).unwrap_or(Timestamp::MIN)
}

fn finish_time_from_ready_false(pod: &Pod) -> Option<Timestamp> {
    let ready = pod.status.as_ref()?.conditions.as_ref()?.iter().find(|c| c.type_ == "Ready")?;
    if ready.status != "False" {
        return None;
    }
    ready.last_transition_time.as_ref().map(|t| t.0)
}

fn finish_time_from_deletion(pod: &Pod) -> Option<Timestamp> {
    let deleted = pod.metadata.deletion_timestamp.as_ref()?.0;
    let grace = pod.metadata.deletion_grace_period_seconds.unwrap_or(0);
    Some(deleted.checked_sub(SignedDuration::from_secs(grace)).unwrap_or(deleted))
}

/// `getRemainingTimePerIndex`: the wait before the index of `last_failed_pod` gets a new pod,
/// from its failure count annotation plus this failure.
pub fn remaining_time_per_index(
    now: Instant,
    default: SignedDuration,
    max: SignedDuration,
    last_failed_pod: Option<&Pod>,
) -> SignedDuration {
    let Some(pod) = last_failed_pod else { return SignedDuration::ZERO };
    let failures = crate::indexed_job_utils::index_absolute_failure_count(pod).saturating_add(1);
    remaining_time_for_failures_count(now, default, max, failures, Some(finished_time(pod)))
}

/// `getRemainingTimeForFailuresCount`: `default` doubled per failure after the first, capped at
/// `max`, less the time since the last failure; zero once passed.
pub fn remaining_time_for_failures_count(
    now: Instant,
    default: SignedDuration,
    max: SignedDuration,
    failures: i32,
    last_failure_time: Option<Timestamp>,
) -> SignedDuration {
    if failures == 0 {
        return SignedDuration::ZERO;
    }
    let mut backoff = default;
    for _ in 1..failures {
        backoff = backoff.saturating_mul(2);
        if backoff >= max {
            backoff = max;
            break;
        }
    }
    // Upstream dereferences the time; a record with failures always has one.
    let Some(last) = last_failure_time else { return SignedDuration::ZERO };
    let elapsed = now.timestamp().duration_since(last);
    if backoff < elapsed { SignedDuration::ZERO } else { backoff.saturating_sub(elapsed) }
}
