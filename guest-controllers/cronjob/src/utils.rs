//! Upstream's `pkg/controller/cronjob/utils.go`: the active list, which schedule time is due
//! (`mostRecentScheduleTime`, `nextScheduleTime`, `nextScheduleTimeDuration`, with the "too many
//! missed start times" rule), the Job made from the template and its name, and the order in
//! which finished Jobs are cleaned up. Pure functions of a CronJob, its Jobs and a time.

use std::cmp::Ordering;

use crate::api::{CronJob, Job};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use wasmcm_core::cron::{Schedule, go_zero_time, load_location};

/// Upstream's `nextScheduleDelta`: requeues land this long after the schedule time, for clock
/// skew.
pub const NEXT_SCHEDULE_DELTA: SignedDuration = SignedDuration::from_millis(100);

/// More missed schedule times than this is "too many" (upstream's arbitrary 100).
pub const TOO_MANY_MISSED: i64 = 100;

/// The annotation upstream's CronJobsScheduledAnnotation feature (on by default since 1.32) puts
/// on every Job it schedules: the scheduled time, RFC 3339 in the CronJob's time zone.
pub const SCHEDULED_TIMESTAMP_ANNOTATION: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// How many schedule times were missed since the last one (upstream's `missedSchedulesType`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Missed {
    None,
    Few,
    Many,
}

/// Whether the active reference names `job`: by uid, or by name for a reference written before
/// the Job's uid was known (the plugin writes the reference in the reconcile that creates the
/// Job, and fills the uid in the next).
pub fn refers_to(r: &ObjectReference, job: &Job) -> bool {
    match r.uid.as_deref() {
        Some(uid) if !uid.is_empty() => job.metadata.uid.as_deref() == Some(uid),
        _ => r.name.is_some() && r.name == job.metadata.name,
    }
}

/// `inActiveList`.
pub fn in_active_list(cj: &CronJob, job: &Job) -> bool {
    active(cj).iter().any(|r| refers_to(r, job))
}

/// `inActiveListByName`.
pub fn in_active_list_by_name(cj: &CronJob, namespace: &str, name: &str) -> bool {
    active(cj).iter().any(|r| r.name.as_deref() == Some(name) && r.namespace.as_deref().unwrap_or("") == namespace)
}

/// `deleteFromActiveList`, for the reference(s) naming `job`.
pub fn delete_from_active_list(cj: &mut CronJob, job: &Job) {
    if let Some(active) = cj.status.as_mut().and_then(|s| s.active.as_mut()) {
        active.retain(|r| !refers_to(r, job));
    }
}

pub fn active(cj: &CronJob) -> &[ObjectReference] {
    cj.status.as_ref().and_then(|s| s.active.as_deref()).unwrap_or(&[])
}

pub fn last_schedule_time(cj: &CronJob) -> Option<Timestamp> {
    cj.status.as_ref().and_then(|s| s.last_schedule_time.as_ref()).map(|t| t.0)
}

fn creation(cj: &CronJob) -> Timestamp {
    cj.metadata.creation_timestamp.as_ref().map(|t| t.0).unwrap_or(go_zero_time())
}

/// What `mostRecentScheduleTime` returns: the last schedule time (or creation time), the most
/// recent time a Job should have been created if it is not after now, how many were missed,
/// and the error of a schedule that parses but never comes round (`59 23 31 2 *`).
#[derive(Clone, Debug, PartialEq)]
pub struct MostRecent {
    pub earliest: Timestamp,
    pub recent: Option<Timestamp>,
    pub missed: Missed,
    pub error: Option<String>,
}

/// `mostRecentScheduleTime`.
pub fn most_recent_schedule_time(
    cj: &CronJob,
    now: Timestamp,
    schedule: &Schedule,
    include_starting_deadline: bool,
) -> MostRecent {
    let mut earliest = last_schedule_time(cj).unwrap_or_else(|| creation(cj));
    let deadline = cj.spec.starting_deadline_seconds;
    if include_starting_deadline && let Some(seconds) = deadline {
        // The controller is not going to schedule anything below this point.
        let scheduling_deadline = now - SignedDuration::from_secs(seconds);
        if scheduling_deadline > earliest {
            earliest = scheduling_deadline;
        }
    }
    let result = |recent, missed, error| MostRecent { earliest, recent, missed, error };
    let t1 = schedule.next(earliest);
    let t2 = schedule.next(t1);
    if now < t1 {
        return result(None, Missed::None, None);
    }
    if now < t2 {
        return result(Some(t1), Missed::None, None);
    }
    // A schedule that parses but never comes round (31 February) gives Go's zero time twice.
    let between = round_to_second(t2.duration_since(t1)).as_secs();
    if between < 1 {
        return result(None, Missed::None, Some("time difference between two schedules is less than 1 second".into()));
    }
    // A rough count: how many intervals between the first two schedule times fit since then.
    let elapsed = now.duration_since(t1).as_secs();
    let missed = elapsed / between + 1;
    // Go back one interval more than that and let the schedule find the exact times (for
    // `@every`, and for schedules whose intervals differ, such as `30 6-16/4 * * 1-5`).
    let potential_earliest = t1 + SignedDuration::from_secs((missed - 1 - 1) * between);
    let mut most_recent = None;
    let mut t = schedule.next(potential_earliest);
    while t <= now {
        most_recent = Some(t);
        t = schedule.next(t);
    }
    let missed = if missed > TOO_MANY_MISSED { Missed::Many } else { Missed::Few };
    result(most_recent, missed, None)
}

/// Go's `Duration.Round(time.Second)`: halves away from zero.
fn round_to_second(d: SignedDuration) -> SignedDuration {
    let nanos = d.as_nanos();
    let second = 1_000_000_000i128;
    let rounded = (nanos + nanos.signum() * second / 2) / second;
    SignedDuration::from_secs(rounded as i64)
}

/// `nextScheduleTimeDuration`: how long until the schedule time after the most recent one
/// (or after now, when times were missed), plus [`NEXT_SCHEDULE_DELTA`].
pub fn next_schedule_time_duration(cj: &CronJob, now: Timestamp, schedule: &Schedule) -> SignedDuration {
    let m = most_recent_schedule_time(cj, now, schedule, false);
    let most_recent = match (m.error, m.recent, m.missed) {
        // Requeue at some point all the same: the next slot from now.
        (Some(_), _, _) => now,
        (None, Some(t), _) => t,
        (None, None, Missed::None) => m.earliest,
        (None, None, _) => now,
    };
    schedule.next(most_recent).duration_since(now) + NEXT_SCHEDULE_DELTA
}

/// What `nextScheduleTime` answers: the schedule time to act on (not after now), if any, with
/// the error of `mostRecentScheduleTime`, and whether there were too many missed start times
/// (which upstream reports with a `TooManyMissedTimes` warning).
#[derive(Clone, Debug, PartialEq)]
pub struct NextSchedule {
    pub time: Option<Timestamp>,
    pub error: Option<String>,
    pub too_many_missed: bool,
}

/// `nextScheduleTime`.
pub fn next_schedule_time(cj: &CronJob, now: Timestamp, schedule: &Schedule) -> NextSchedule {
    let m = most_recent_schedule_time(cj, now, schedule, true);
    match m.recent {
        Some(t) if t <= now => {
            NextSchedule { time: Some(t), error: m.error, too_many_missed: m.missed == Missed::Many }
        }
        _ => NextSchedule { time: None, error: m.error, too_many_missed: false },
    }
}

/// `getTimeHashInMinutes`: the scheduled time in minutes since the epoch.
pub fn time_hash_in_minutes(scheduled: Timestamp) -> i64 {
    scheduled.as_second() / 60
}

/// `getJobName`: `<cronjob>-<scheduled minutes since the epoch>`, the same for every attempt
/// at one scheduled time, so a second attempt finds the first's Job instead of making another.
pub fn job_name(cj_name: &str, scheduled: Timestamp) -> String {
    format!("{cj_name}-{}", time_hash_in_minutes(scheduled))
}

/// Go's `Time.Format(time.RFC3339)` in `zone`: `Z` for a zero offset.
pub fn rfc3339_in(zone: &str, t: Timestamp) -> Result<String, String> {
    let zone = load_location(zone)?;
    let zoned = t.to_zoned(zone);
    let base = zoned.strftime("%Y-%m-%dT%H:%M:%S").to_string();
    Ok(match zoned.offset().seconds() {
        0 => format!("{base}Z"),
        _ => format!("{base}{}", zoned.strftime("%:z")),
    })
}

/// `getJobFromTemplate2`: the Job for `scheduled` from the CronJob's JSON (`cj`, so that fields
/// this build does not know are copied too): the template's labels, annotations and spec, the
/// scheduled-timestamp annotation, the name of [`job_name`] and a controller reference.
pub fn job_from_template(cj: &Value, scheduled: Timestamp) -> Result<Value, String> {
    let name = cj.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("");
    let template = cj.pointer("/spec/jobTemplate").cloned().unwrap_or_else(|| json!({}));
    let zone = cj.pointer("/spec/timeZone").and_then(Value::as_str).unwrap_or("");
    let mut annotations = template.pointer("/metadata/annotations").cloned().unwrap_or_else(|| json!({}));
    if !annotations.is_object() {
        annotations = json!({});
    }
    annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = json!(rfc3339_in(zone, scheduled)?);
    let mut metadata = json!({
        "name": job_name(name, scheduled),
        "namespace": cj.pointer("/metadata/namespace").cloned().unwrap_or(Value::Null),
        "annotations": annotations,
        "ownerReferences": [{
            "apiVersion": "batch/v1", "kind": "CronJob", "name": name,
            "uid": cj.pointer("/metadata/uid").cloned().unwrap_or(Value::Null),
            "controller": true, "blockOwnerDeletion": true,
        }],
    });
    if let Some(labels) = template.pointer("/metadata/labels").filter(|l| l.is_object()) {
        metadata["labels"] = labels.clone();
    }
    Ok(json!({
        "apiVersion": "batch/v1", "kind": "Job",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    }))
}

/// `getRef`: the active-list reference to a Job (its uid empty while unknown).
pub fn job_ref(namespace: &str, name: &str, uid: Option<&str>, resource_version: Option<&str>) -> ObjectReference {
    ObjectReference {
        api_version: Some("batch/v1".into()),
        kind: Some("Job".into()),
        namespace: Some(namespace.into()),
        name: Some(name.into()),
        uid: uid.filter(|u| !u.is_empty()).map(String::from),
        resource_version: resource_version.map(String::from),
        ..Default::default()
    }
}

/// Upstream's `byJobStartTime`: by `status.startTime`, Jobs without one last, then by name.
pub fn by_job_start_time(a: &Job, b: &Job) -> Ordering {
    let start = |j: &Job| j.status.as_ref().and_then(|s| s.start_time.as_ref()).map(|t| t.0);
    match (start(a), start(b)) {
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (x, y) if x == y => a.metadata.name.cmp(&b.metadata.name),
        (x, y) => x.cmp(&y),
    }
}

/// The type of a Job's finished condition (`Complete` or `Failed`, status True), if it has one:
/// `jobutil.FinishedCondition`.
pub fn finished_condition(j: &Job) -> Option<&str> {
    j.status.as_ref()?.conditions.as_ref()?.iter().find_map(|c| {
        (c.status == "True" && (c.type_ == "Complete" || c.type_ == "Failed")).then_some(c.type_.as_str())
    })
}

/// `jobutil.IsJobFinished`.
pub fn is_job_finished(j: &Job) -> bool {
    finished_condition(j).is_some()
}

/// `jobutil.IsJobSucceeded`.
pub fn is_job_succeeded(j: &Job) -> bool {
    j.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Complete" && c.status == "True"))
}

/// Go's `Time.Format(time.RFC1123Z)` in UTC: `Thu, 19 May 2016 10:00:00 +0000`.
pub fn rfc1123z(t: Timestamp) -> String {
    t.to_zoned(k8s_openapi::jiff::tz::TimeZone::UTC).strftime("%a, %d %b %Y %H:%M:%S +0000").to_string()
}

/// A Go duration as `%v` prints one (`1h59m0.1s`, `100ms`), for log lines.
pub fn go_duration(d: SignedDuration) -> String {
    let nanos = d.as_nanos();
    if nanos == 0 {
        return "0s".into();
    }
    let sign = if nanos < 0 { "-" } else { "" };
    let n = nanos.unsigned_abs();
    if n < 1_000_000_000 {
        return match n {
            n if n < 1_000 => format!("{sign}{n}ns"),
            n if n < 1_000_000 => format!("{sign}{}µs", trim(n as f64 / 1e3)),
            n => format!("{sign}{}ms", trim(n as f64 / 1e6)),
        };
    }
    let (h, rest) = (n / 3_600_000_000_000, n % 3_600_000_000_000);
    let (m, rest) = (rest / 60_000_000_000, rest % 60_000_000_000);
    let s = trim(rest as f64 / 1e9);
    match (h, m) {
        (0, 0) => format!("{sign}{s}s"),
        (0, m) => format!("{sign}{m}m{s}s"),
        (h, m) => format!("{sign}{h}h{m}m{s}s"),
    }
}

fn trim(x: f64) -> String {
    let s = format!("{x:.9}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}
