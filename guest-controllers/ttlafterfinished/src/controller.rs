//! Upstream's `ttlafterfinished_controller.go`: `processJob`, `processTTL`, `needsCleanup`,
//! `timeLeft` and `jobFinishTime`, over the cache.
//!
//! Upstream checks the TTL twice, on the lister's Job and on a fresh GET, before it deletes
//! with a uid precondition; a plugin reads the cache once and deletes with the uid as
//! precondition (a TTL lengthened in the instant between is not seen).

use k8s_openapi::api::batch::v1::JobStatus;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde::Deserialize;
use wasmcm_guest::{
    Cache, CacheExt, DeleteTarget, Error, Intent, Kind, Level, ObjectRef, Outcome, Propagation, Request, Resource, log,
};

/// What the controller reads of a batch/v1 Job. Decoding no more than this (not k8s-openapi's
/// whole Job, whose pod-template decoder is most of a component) keeps the plugin small.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct Job {
    #[serde(default)]
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: Option<JobSpec>,
    #[serde(default)]
    pub status: Option<JobStatus>,
}

#[derive(Clone, Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct JobSpec {
    #[serde(default)]
    pub ttl_seconds_after_finished: Option<i32>,
}

impl Resource for Job {
    fn kind() -> Kind {
        Kind::new("batch/v1", "Job")
    }
}

/// `needsCleanup`: finished, with a TTL.
pub fn needs_cleanup(job: &Job) -> bool {
    job.spec.as_ref().is_some_and(|s| s.ttl_seconds_after_finished.is_some()) && finish_condition(job).is_some()
}

fn finish_condition(job: &Job) -> Option<&k8s_openapi::api::batch::v1::JobCondition> {
    job.status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| (c.type_ == "Complete" || c.type_ == "Failed") && c.status == "True")
}

fn name_of(job: &Job) -> String {
    format!("{}/{}", job.metadata.namespace.as_deref().unwrap_or(""), job.metadata.name.as_deref().unwrap_or(""))
}

/// `jobFinishTime`: the lastTransitionTime of the Complete or Failed condition.
pub fn job_finish_time(job: &Job) -> Result<Timestamp, String> {
    match finish_condition(job) {
        Some(c) => c
            .last_transition_time
            .as_ref()
            .map(|t| t.0)
            .ok_or_else(|| format!("unable to find the time when the Job {} finished", name_of(job))),
        None => Err(format!("unable to find the status of the finished Job {}", name_of(job))),
    }
}

/// `timeLeft`: how long until the TTL expires (negative once past), and when it does.
pub fn time_left(job: &Job, since: Timestamp) -> Result<(SignedDuration, Timestamp), String> {
    if !needs_cleanup(job) {
        return Err(format!("job {} should not be cleaned up", name_of(job)));
    }
    let finish_at = job_finish_time(job)?;
    let ttl = job.spec.as_ref().and_then(|s| s.ttl_seconds_after_finished).unwrap_or(0);
    let expire_at = finish_at + SignedDuration::from_secs(i64::from(ttl));
    if finish_at > since {
        log(
            Level::Info,
            &format!(
                "Warning: Found Job finished in the future. This is likely due to time skew in the cluster. Job cleanup will be deferred. job={}",
                name_of(job)
            ),
        );
    }
    Ok((expire_at.duration_since(since), expire_at))
}

/// `processJob`: a finished Job whose TTL has expired is deleted (foreground, with its uid as
/// precondition); one whose TTL has not is looked at again when it will have.
pub fn process_job(request: &Request, cache: &dyn Cache) -> Result<Outcome, Error> {
    let Some(job) = cache.get_as::<Job>(&request.namespace, &request.name)? else {
        return Ok(Outcome::default());
    };
    let job = job.value;
    // Going already, or nothing to clean up.
    if job.metadata.deletion_timestamp.is_some() || !needs_cleanup(&job) {
        return Ok(Outcome::default());
    }
    // A finished condition without a time cannot be fixed by trying again: its next change
    // brings the Job back.
    let (left, _) = time_left(&job, request.now.timestamp()).map_err(Error::permanent)?;
    let mut outcome = Outcome::default();
    if left > SignedDuration::ZERO {
        let nanos = left.as_nanos();
        outcome.requeue_after_ms = Some(u64::try_from((nanos + 999_999) / 1_000_000).unwrap_or(u64::MAX));
        return Ok(outcome);
    }
    outcome.push_batch(vec![Intent::Delete(DeleteTarget {
        target: ObjectRef { kind: Job::kind(), namespace: request.namespace.clone(), name: request.name.clone() },
        uid: job.metadata.uid.clone(),
        // Foreground, as upstream: the Job goes once its pods have.
        propagation: Some(Propagation::Foreground),
    })]);
    Ok(outcome)
}
