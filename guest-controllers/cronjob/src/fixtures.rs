//! Upstream's test fixtures (`cronjob_controllerv2_test.go`, `utils_test.go`) as JSON builders,
//! shared by this crate's tests and the reconcile benchmark. Not used by the controller.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use wasmcm_guest::{Instant, MemoryCache, Request};

pub const NAMESPACE: &str = "snazzycats";
pub const NAME: &str = "mycronjob";
pub const UID: &str = "1a2b3c";

fn at(s: &str) -> Timestamp {
    s.parse().expect("a fixture time")
}

/// 2016-05-19T10:00:00Z, upstream's `topOfTheHour`.
pub fn top_of_the_hour() -> Timestamp {
    at("2016-05-19T10:00:00Z")
}

/// `topOfTheHour + d`.
pub fn after_top_of_the_hour(d: SignedDuration) -> Timestamp {
    top_of_the_hour() + d
}

pub fn just_a_second_before_the_hour() -> Timestamp {
    at("2016-05-19T09:59:59Z")
}

pub fn just_after_the_prior_hour() -> Timestamp {
    at("2016-05-19T09:01:00Z")
}

pub fn just_before_the_prior_hour() -> Timestamp {
    at("2016-05-19T08:59:00Z")
}

pub fn just_after_the_hour() -> Timestamp {
    at("2016-05-19T10:01:00Z")
}

pub fn just_before_the_hour() -> Timestamp {
    at("2016-05-19T09:59:00Z")
}

pub fn just_before_the_next_hour() -> Timestamp {
    at("2016-05-19T10:59:00Z")
}

pub fn week_after_the_hour() -> Timestamp {
    at("2016-05-26T10:00:00Z")
}

pub fn minutes(n: i64) -> SignedDuration {
    SignedDuration::from_mins(n)
}

pub fn hours(n: i64) -> SignedDuration {
    SignedDuration::from_hours(n)
}

pub fn seconds(n: i64) -> SignedDuration {
    SignedDuration::from_secs(n)
}

/// Fixture overrides are JSON merge patches (`null` removes a field).
pub use wasmcm_guest::json::merge_patch as merge;

/// Upstream's `cronJob()`: `snazzycats/mycronjob`, every minute, Allow, created just before the
/// hour, a Job template labelled a=b and annotated x=y, with `fields` merged over it.
pub fn cron_job(fields: Value) -> Value {
    let mut cj = json!({
        "apiVersion": "batch/v1", "kind": "CronJob",
        "metadata": {"name": NAME, "namespace": NAMESPACE, "uid": UID, "resourceVersion": "10",
                     "creationTimestamp": just_before_the_hour().to_string()},
        "spec": {
            "schedule": "* * * * ?",
            "concurrencyPolicy": "Allow",
            "jobTemplate": {
                "metadata": {"labels": {"a": "b"}, "annotations": {"x": "y"}},
                "spec": {"parallelism": 1, "completions": 1,
                         "template": {"metadata": {"labels": {"foo": "bar"}},
                                      "spec": {"containers": [{"name": "c", "image": "foo/bar"}]}}},
            },
        },
        "status": {},
    });
    merge(&mut cj, fields);
    cj
}

/// The Job the controller makes from `cj` for `scheduled`, created with uid `uid`, with
/// `fields` merged over it.
pub fn job(cj: &Value, scheduled: Timestamp, uid: &str, fields: Value) -> Value {
    let mut job = crate::utils::job_from_template(cj, scheduled).expect("the template makes a Job");
    job["metadata"]["uid"] = json!(uid);
    job["metadata"]["resourceVersion"] = json!("5");
    job["metadata"]["creationTimestamp"] = json!(scheduled.to_string());
    merge(&mut job, fields);
    job
}

/// A finished Job's status: the condition, and a completion time for `Complete`.
pub fn finished(condition: &str, completion: Timestamp) -> Value {
    let mut status = json!({"conditions": [{"type": condition, "status": "True"}]});
    if condition == "Complete" {
        status["completionTime"] = json!(completion.to_string());
    }
    json!({"status": status})
}

/// The active-list reference to a Job of [`job`].
pub fn reference(job: &Value) -> Value {
    json!({"apiVersion": "batch/v1", "kind": "Job", "namespace": job["metadata"]["namespace"],
           "name": job["metadata"]["name"], "uid": job["metadata"]["uid"],
           "resourceVersion": job["metadata"]["resourceVersion"]})
}

pub fn cache(objects: &[Value]) -> MemoryCache {
    MemoryCache::from_objects(objects).expect("fixtures are valid objects")
}

pub fn request_at(now: Timestamp) -> Request {
    Request::new(NAMESPACE, NAME, Instant::from_timestamp(now))
}
