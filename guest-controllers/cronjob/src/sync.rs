//! Upstream's `pkg/controller/cronjob/cronjob_controllerv2.go`: `sync` (the Jobs to reconcile,
//! `cleanupFinishedJobs`, `syncCronJob`, one status update) as one reconcile.
//!
//! Where upstream calls the API and goes on with the answer, a plugin returns its writes in
//! batches: the deletes (history cleanup, Replace) first, then the new Job with the events of
//! the deletes, then the status with the event of the create, so an event is only recorded once
//! its write went through. The rest follows from that:
//!
//! - A created Job's uid is not known until the next reconcile (which the host holds back until
//!   its cache has the Job): the status written with it names the Job without a uid, and the
//!   next reconcile fills the uid in.
//! - Upstream's fresh GETs (the CronJob before calling a Job unexpected, an active Job missing
//!   from the lister) are reads of the cache here, which the host keeps up with the plugin's own
//!   creates and deletes. A Job this controller created (its name is the one for its
//!   scheduled-timestamp annotation) that is not yet in a cached status whose last schedule time
//!   is older is the status write not yet seen, or lost: it is taken into the active list, as
//!   upstream's AlreadyExists path does, not reported as unexpected.
//! - Creating a Job whose name the cache already has is upstream's AlreadyExists answer.
//! - A schedule change is synced at once (upstream's update handler waits for the new
//!   schedule's next time): a reconcile does not see what changed.

use crate::api::{CronJob, Job};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use wasmcm_core::cron::{load_location, parse_standard};
use wasmcm_guest::ownership::controller_of;
use wasmcm_guest::{
    Cache, CacheExt, DeleteTarget, Error, Event, EventType, Intent, Kind, Level, Object, ObjectRef, Outcome,
    Propagation, Request, Selector, log,
};

use crate::utils::{self, SCHEDULED_TIMESTAMP_ANNOTATION};

fn cron_job_kind() -> Kind {
    Kind::new("batch/v1", "CronJob")
}

fn job_kind() -> Kind {
    Kind::new("batch/v1", "Job")
}

/// What one reconcile decides, before it becomes batches.
#[derive(Default)]
pub struct Writes {
    /// Jobs to delete (background propagation), with the event recorded once they went.
    pub deletes: Vec<(Job, Event)>,
    /// The Job to create, with its event.
    pub create: Option<(Value, Event)>,
    /// Events that report no write of this reconcile.
    pub events: Vec<Event>,
}

/// One reconcile of a CronJob: `ControllerV2.sync`.
pub fn sync(request: &Request, cache: &dyn Cache) -> Result<Outcome, Error> {
    // Deleted: the API server's garbage collector deletes its Jobs.
    let Some(cron_job) = cache.get_as::<CronJob>(&request.namespace, &request.name)? else {
        return Ok(Outcome::default());
    };
    let jobs = jobs_to_be_reconciled(cache, &cron_job.value)?;
    let now = request.now.timestamp();
    let mut copy = cron_job.value.clone();
    let mut writes = Writes::default();
    let cleaned = cleanup_finished_jobs(&mut copy, &jobs, &mut writes);
    let synced = sync_cron_job(&mut copy, &jobs, now, cache, &mut writes)?;
    let update_status = cleaned || synced.update_status;
    Ok(outcome(&cron_job, &copy, writes, update_status, synced.requeue_after))
}

/// The batches: deletes (and the events that report no write), then the create with the
/// deletes' events, then the status with the create's event.
fn outcome(
    original: &Object<CronJob>,
    copy: &CronJob,
    writes: Writes,
    update_status: bool,
    requeue_after: Option<SignedDuration>,
) -> Outcome {
    let mut outcome = Outcome::default();
    let mut first: Vec<Intent> = writes
        .deletes
        .iter()
        .map(|(job, _)| {
            Intent::Delete(DeleteTarget {
                target: ObjectRef {
                    kind: job_kind(),
                    namespace: job.metadata.namespace.clone().unwrap_or_default(),
                    name: job.metadata.name.clone().unwrap_or_default(),
                },
                uid: job.metadata.uid.clone(),
                // With its pods, as upstream's DeleteJob (a Job's default is to orphan them).
                propagation: Some(Propagation::Background),
            })
        })
        .collect();
    first.extend(writes.events.into_iter().map(Intent::Event));
    outcome.push_batch(first);
    let mut second: Vec<Intent> = writes.deletes.into_iter().map(|(_, e)| Intent::Event(e)).collect();
    let mut third = Vec::new();
    if let Some((job, event)) = writes.create {
        second.push(Intent::Create(job.to_string()));
        third.push(Intent::Event(event));
    }
    outcome.push_batch(second);
    if update_status && copy.status != original.value.status {
        match original.raw() {
            Ok(mut raw) => {
                raw["status"] = serde_json::to_value(&copy.status).unwrap_or(Value::Null);
                third.push(Intent::UpdateStatus(raw.to_string()));
            }
            Err(e) => log(Level::Error, &format!("the CronJob's JSON: {e}")),
        }
    }
    outcome.push_batch(third);
    outcome.requeue_after_ms = requeue_after.map(|d| {
        let nanos = d.as_nanos().max(0);
        // Rounded up: a requeue never lands before the schedule time it waits for.
        u64::try_from((nanos + 999_999) / 1_000_000).unwrap_or(u64::MAX)
    });
    outcome
}

/// `getJobsToBeReconciled`: the Jobs of the namespace whose controller reference names the
/// CronJob (by name, as upstream: also Jobs whose labels no longer match the template), by name.
pub fn jobs_to_be_reconciled(cache: &dyn Cache, cj: &CronJob) -> Result<Vec<Job>, Error> {
    let namespace = cj.metadata.namespace.as_deref().unwrap_or("");
    let mut jobs: Vec<Job> = cache
        .list_as::<Job>(namespace, &Selector::everything())?
        .into_iter()
        .map(|j| j.value)
        .filter(|j| controller_of(&j.metadata).is_some_and(|r| Some(&r.name) == cj.metadata.name.as_ref()))
        .collect();
    jobs.sort_by(|a, b| a.metadata.name.cmp(&b.metadata.name));
    Ok(jobs)
}

fn event(cj: &CronJob, event_type: EventType, reason: &str, message: String) -> Event {
    Event {
        regarding: ObjectRef {
            kind: cron_job_kind(),
            namespace: cj.metadata.namespace.clone().unwrap_or_default(),
            name: cj.metadata.name.clone().unwrap_or_default(),
        },
        event_type,
        reason: reason.into(),
        message,
    }
}

/// `cleanupFinishedJobs`: deletes the oldest finished Jobs past the history limits. Whether the
/// status changes.
pub fn cleanup_finished_jobs(cj: &mut CronJob, jobs: &[Job], writes: &mut Writes) -> bool {
    let spec = cj.spec.clone();
    if spec.failed_jobs_history_limit.is_none() && spec.successful_jobs_history_limit.is_none() {
        return false;
    }
    let mut successful: Vec<&Job> = Vec::new();
    let mut failed: Vec<&Job> = Vec::new();
    for job in jobs {
        match utils::finished_condition(job) {
            Some("Complete") => successful.push(job),
            Some("Failed") => failed.push(job),
            _ => {}
        }
    }
    let mut update = false;
    for (limit, mut finished) in
        [(spec.successful_jobs_history_limit, successful), (spec.failed_jobs_history_limit, failed)]
    {
        let Some(limit) = limit else { continue };
        let excess = finished.len().saturating_sub(usize::try_from(limit).unwrap_or(0));
        finished.sort_by(|a, b| utils::by_job_start_time(a, b));
        for job in finished.into_iter().take(excess) {
            delete_job(cj, job, writes);
            update = true;
        }
    }
    update
}

/// `deleteJob`: the Job goes (with its pods), and its reference from the active list.
fn delete_job(cj: &mut CronJob, job: &Job, writes: &mut Writes) {
    let name = job.metadata.name.clone().unwrap_or_default();
    let e = event(cj, EventType::Normal, "SuccessfulDelete", format!("Deleted job {name}"));
    writes.deletes.push((job.clone(), e));
    utils::delete_from_active_list(cj, job);
}

/// What `syncCronJob` returns beside the writes.
#[derive(Debug, PartialEq)]
pub struct Synced {
    pub requeue_after: Option<SignedDuration>,
    pub update_status: bool,
}

/// Whether `job` is one this controller created for a schedule time its cached status does not
/// show yet: named for its scheduled-timestamp annotation, not older than the last schedule time.
fn created_unrecorded(cj: &CronJob, job: &Job) -> Option<Timestamp> {
    let stamp = job.metadata.annotations.as_ref()?.get(SCHEDULED_TIMESTAMP_ANNOTATION)?;
    let scheduled: Timestamp = stamp.parse().ok()?;
    let name = cj.metadata.name.as_deref()?;
    if job.metadata.name.as_deref() != Some(utils::job_name(name, scheduled).as_str()) {
        return None;
    }
    match utils::last_schedule_time(cj) {
        Some(last) if scheduled < last => None,
        _ => Some(scheduled),
    }
}

fn status_mut(cj: &mut CronJob) -> &mut k8s_openapi::api::batch::v1::CronJobStatus {
    cj.status.get_or_insert_with(Default::default)
}

fn add_active(cj: &mut CronJob, job: &Job) {
    let r = utils::job_ref(
        job.metadata.namespace.as_deref().unwrap_or(""),
        job.metadata.name.as_deref().unwrap_or(""),
        job.metadata.uid.as_deref(),
        job.metadata.resource_version.as_deref(),
    );
    status_mut(cj).active.get_or_insert_with(Vec::new).push(r);
}

/// `syncCronJob`: the active list against the Jobs, then whether a Job is due, by the schedule,
/// the time zone, suspend, the starting deadline and the concurrency policy.
pub fn sync_cron_job(
    cj: &mut CronJob,
    jobs: &[Job],
    now: Timestamp,
    cache: &dyn Cache,
    writes: &mut Writes,
) -> Result<Synced, Error> {
    let mut update_status = false;
    let done = |requeue_after, update_status| Ok(Synced { requeue_after, update_status });
    let namespace = cj.metadata.namespace.clone().unwrap_or_default();

    for j in jobs {
        let found = utils::in_active_list(cj, j);
        let finished = utils::is_job_finished(j);
        if found && !finished {
            // A reference written before the Job's uid was known gets it now.
            let uid = j.metadata.uid.as_deref().unwrap_or("");
            if let Some(r) = status_mut(cj).active.iter_mut().flatten().find(|r| utils::refers_to(r, j))
                && r.uid.as_deref().unwrap_or("").is_empty()
                && !uid.is_empty()
            {
                r.uid = Some(uid.into());
                r.resource_version = j.metadata.resource_version.clone();
                update_status = true;
            }
        } else if !found && !finished {
            if let Some(scheduled) = created_unrecorded(cj, j) {
                add_active(cj, j);
                let later = utils::last_schedule_time(cj).is_none_or(|last| scheduled > last);
                if later {
                    status_mut(cj).last_schedule_time = Some(Time(scheduled));
                }
                update_status = true;
                continue;
            }
            let name = j.metadata.name.clone().unwrap_or_default();
            writes.events.push(event(
                cj,
                EventType::Warning,
                "UnexpectedJob",
                format!("Saw a job that the controller did not create or forgot: {name}"),
            ));
        } else if finished {
            if found {
                let condition = utils::finished_condition(j).unwrap_or_default().to_string();
                utils::delete_from_active_list(cj, j);
                let name = j.metadata.name.clone().unwrap_or_default();
                writes.events.push(event(
                    cj,
                    EventType::Normal,
                    "SawCompletedJob",
                    format!("Saw completed job: {name}, condition: {condition}"),
                ));
                update_status = true;
            }
            if utils::is_job_succeeded(j) {
                // A Job need not be in the active list: any that completed counts.
                let completion = j.status.as_ref().and_then(|s| s.completion_time.clone());
                let status = status_mut(cj);
                match (&status.last_successful_time, completion) {
                    (None, Some(c)) => {
                        status.last_successful_time = Some(c);
                        update_status = true;
                    }
                    (Some(last), Some(c)) if c.0 > last.0 => {
                        status.last_successful_time = Some(c);
                        update_status = true;
                    }
                    _ => {}
                }
            }
        }
    }

    // An active reference whose Job is gone would keep the CronJob active for ever.
    let missing: Vec<String> = utils::active(cj)
        .iter()
        .filter(|r| !jobs.iter().any(|j| utils::refers_to(r, j)))
        .map(|r| r.name.clone().unwrap_or_default())
        .collect();
    for name in missing {
        writes.events.push(event(cj, EventType::Normal, "MissingJob", format!("Active job went missing: {name}")));
        if let Some(active) = status_mut(cj).active.as_mut() {
            active.retain(|r| r.name.as_deref() != Some(name.as_str()));
        }
        update_status = true;
    }

    if cj.metadata.deletion_timestamp.is_some() {
        // Being deleted: nothing but the status.
        return done(None, update_status);
    }
    let spec = cj.spec.clone();
    if let Some(zone) = &spec.time_zone
        && let Err(e) = load_location(zone)
    {
        writes.events.push(event(
            cj,
            EventType::Warning,
            "UnknownTimeZone",
            format!("invalid timeZone: {zone:?}: {e}"),
        ));
        return done(None, update_status);
    }
    if spec.suspend == Some(true) {
        return done(None, update_status);
    }
    let schedule = match parse_standard(&format_schedule(cj, &mut writes.events)) {
        Ok(s) => s,
        Err(e) => {
            // A user's error: nothing until the spec changes.
            writes.events.push(event(
                cj,
                EventType::Warning,
                "UnparseableSchedule",
                format!("unparseable schedule: {:?} : {e}", spec.schedule),
            ));
            return done(None, update_status);
        }
    };
    let next = utils::next_schedule_time(cj, now, &schedule);
    if next.too_many_missed {
        writes.events.push(event(
            cj,
            EventType::Warning,
            "TooManyMissedTimes",
            "too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew".into(),
        ));
    }
    if let Some(e) = next.error {
        writes.events.push(event(
            cj,
            EventType::Warning,
            "InvalidSchedule",
            format!("invalid schedule: {} : {e}", spec.schedule),
        ));
        return done(None, update_status);
    }
    let requeue = |cj: &CronJob| Some(utils::next_schedule_time_duration(cj, now, &schedule));
    let Some(scheduled) = next.time else {
        // No unmet start time: the queue brings it back at the next one.
        return done(requeue(cj), update_status);
    };
    if let Some(deadline) = spec.starting_deadline_seconds
        && scheduled + SignedDuration::from_secs(deadline) < now
    {
        writes.events.push(event(
            cj,
            EventType::Warning,
            "MissSchedule",
            format!("Missed scheduled time to start a job: {}", utils::rfc1123z(scheduled)),
        ));
        return done(requeue(cj), update_status);
    }
    let name = cj.metadata.name.clone().unwrap_or_default();
    let job_name = utils::job_name(&name, scheduled);
    if utils::in_active_list_by_name(cj, &namespace, &job_name) || utils::last_schedule_time(cj) == Some(scheduled) {
        // Already processed.
        return done(requeue(cj), update_status);
    }
    let policy = spec.concurrency_policy.as_deref().unwrap_or("Allow");
    if policy == "Forbid" && !utils::active(cj).is_empty() {
        writes.events.push(event(
            cj,
            EventType::Normal,
            "JobAlreadyActive",
            "Not starting job because prior execution is running and concurrency policy is Forbid".into(),
        ));
        return done(requeue(cj), update_status);
    }
    if policy == "Replace" {
        for r in utils::active(cj).to_vec() {
            let r_name = r.name.clone().unwrap_or_default();
            match jobs.iter().find(|j| utils::refers_to(&r, j)) {
                Some(job) => {
                    delete_job(cj, &job.clone(), writes);
                    update_status = true;
                }
                None => {
                    writes.events.push(event(
                        cj,
                        EventType::Warning,
                        "FailedGet",
                        format!("Get job: jobs.batch {r_name:?} not found"),
                    ));
                    return Err(Error::retryable(format!("could not replace job {namespace}/{r_name}")));
                }
            }
        }
    }

    let cj_json = cache
        .get(&cron_job_kind(), &namespace, &name)
        .and_then(|s| serde_json::from_str::<Value>(&s).ok())
        .unwrap_or_else(|| serde_json::to_value(&*cj).unwrap_or(Value::Null));
    let job_request = utils::job_from_template(&cj_json, scheduled).map_err(Error::retryable)?;
    match cache.get_as::<Job>(&namespace, &job_name)? {
        // Upstream's AlreadyExists: the Job was made, by someone else (left alone, as its
        // creator is assumed to update the status) or by us, then not recorded.
        Some(existing) => {
            let owned =
                controller_of(&existing.value.metadata).is_some_and(|r| Some(&r.uid) == cj.metadata.uid.as_ref());
            if !owned || utils::in_active_list(cj, &existing.value) {
                return done(None, update_status);
            }
            log(Level::Info, &format!("job {job_name} already exists"));
            add_active(cj, &existing.value);
        }
        None => {
            let e = event(cj, EventType::Normal, "SuccessfulCreate", format!("Created job {job_name}"));
            writes.create = Some((job_request, e));
            status_mut(cj).active.get_or_insert_with(Vec::new).push(utils::job_ref(&namespace, &job_name, None, None));
        }
    }
    status_mut(cj).last_schedule_time = Some(Time(scheduled));
    Ok(Synced { requeue_after: requeue(cj), update_status: true })
}

/// `formatSchedule`: the schedule with the CronJob's time zone as a `TZ=` prefix; a schedule
/// that carries its own `TZ`/`CRON_TZ` (refused by validation since `timeZone` exists, but kept
/// by older objects) is used as it is, with upstream's warning.
pub fn format_schedule(cj: &CronJob, events: &mut Vec<Event>) -> String {
    let spec = cj.spec.clone();
    if spec.schedule.contains("TZ") {
        events.push(event(
            cj,
            EventType::Warning,
            "UnsupportedSchedule",
            format!(
                "CRON_TZ or TZ used in schedule {:?} is not officially supported, see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details",
                spec.schedule
            ),
        ));
        return spec.schedule;
    }
    match &spec.time_zone {
        Some(zone) if load_location(zone).is_ok() => format!("TZ={zone} {}", spec.schedule),
        _ => spec.schedule,
    }
}
