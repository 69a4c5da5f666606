//! Upstream's `ttlafterfinished_controller_test.go` (TestTimeLeft) restated as data, and what
//! the reconcile writes: nothing for a Job that is not finished, has no TTL or is going; a
//! requeue at the expiry; a delete of exactly that Job once it has expired.

use k8s_openapi::jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use wasmcm_guest::{Controller, Instant, Intent, MemoryCache, Request};
use wasmcm_ttlafterfinished::TtlAfterFinishedController;
use wasmcm_ttlafterfinished::controller::{Job, time_left};

const NOW: &str = "2026-06-01T12:00:00Z";

fn now() -> Timestamp {
    NOW.parse().unwrap()
}

/// Upstream's `newJob`: `default/foobar`, with a Complete and/or Failed condition at the given
/// times and the TTL.
fn new_job(completion: Option<Timestamp>, failed: Option<Timestamp>, ttl: Option<i32>) -> Value {
    let mut conditions = Vec::new();
    if let Some(t) = completion {
        conditions.push(json!({"type": "Complete", "status": "True", "lastTransitionTime": t.to_string()}));
    }
    if let Some(t) = failed {
        conditions.push(json!({"type": "Failed", "status": "True", "lastTransitionTime": t.to_string()}));
    }
    json!({"apiVersion": "batch/v1", "kind": "Job",
           "metadata": {"name": "foobar", "namespace": "default", "uid": "foobar-uid"},
           "spec": {"selector": {"matchLabels": {"foo": "bar"}}, "ttlSecondsAfterFinished": ttl,
                    "template": {"metadata": {"labels": {"foo": "bar"}}, "spec": {"containers": [{"image": "foo/bar"}]}}},
           "status": {"conditions": conditions}})
}

fn typed(v: &Value) -> Job {
    serde_json::from_value(v.clone()).unwrap()
}

#[test]
fn time_left_as_upstream() {
    let now = now();
    let s = |n: i64| SignedDuration::from_secs(n);
    // (what, completed at, failed at, TTL, the error, or time left and expiry)
    type Case =
        (&'static str, Option<Timestamp>, Option<Timestamp>, Option<i32>, Result<(i64, Timestamp), &'static str>);
    let cases: &[Case] = &[
        ("Error case: Job unfinished", None, None, Some(100), Err("should not be cleaned up")),
        ("Error case: Job completed now, no TTL", Some(now), None, None, Err("should not be cleaned up")),
        ("Job completed now, 0s TTL", Some(now), None, Some(0), Ok((0, now))),
        ("Job completed now, 10s TTL", Some(now), None, Some(10), Ok((10, now + s(10)))),
        ("Job completed 10s ago, 15s TTL", Some(now - s(10)), None, Some(15), Ok((5, now + s(5)))),
        ("Error case: Job failed now, no TTL", None, Some(now), None, Err("should not be cleaned up")),
        ("Job failed now, 0s TTL", None, Some(now), Some(0), Ok((0, now))),
        ("Job failed now, 10s TTL", None, Some(now), Some(10), Ok((10, now + s(10)))),
        ("Job failed 10s ago, 15s TTL", None, Some(now - s(10)), Some(15), Ok((5, now + s(5)))),
    ];
    for (what, completion, failed, ttl, want) in cases {
        let got = time_left(&typed(&new_job(*completion, *failed, *ttl)), now);
        match (want, got) {
            (Err(text), Err(e)) => assert!(e.contains(text), "{what}: {e}"),
            (Ok((left, expire)), Ok((got_left, got_expire))) => {
                assert_eq!(got_left, s(*left), "{what}: time left");
                assert_eq!(got_expire, *expire, "{what}: expire at");
            }
            (want, got) => panic!("{what}: want {want:?}, got {got:?}"),
        }
    }
}

fn reconcile(job: &Value, at: Timestamp) -> wasmcm_guest::Outcome {
    let cache = MemoryCache::from_objects(std::slice::from_ref(job)).unwrap();
    TtlAfterFinishedController::reconcile(&Request::new("default", "foobar", Instant::from_timestamp(at)), &cache)
        .unwrap()
}

#[test]
fn a_finished_job_goes_when_its_ttl_expires_and_not_before() {
    let finished = new_job(Some(now()), None, Some(30));
    // Before: nothing written, back at the expiry.
    let o = reconcile(&finished, now() + SignedDuration::from_millis(10_500));
    assert!(o.batches.is_empty());
    assert_eq!(o.requeue_after_ms, Some(19_500));
    // At and after: deleted, that Job only (its uid as precondition).
    for at in [now() + SignedDuration::from_secs(30), now() + SignedDuration::from_secs(3600)] {
        let o = reconcile(&finished, at);
        let [Intent::Delete(d)] = &o.batches[..].concat()[..] else { panic!("{o:?}") };
        assert_eq!((d.target.name.as_str(), d.uid.as_deref()), ("foobar", Some("foobar-uid")));
        // Foreground, as upstream: the Job goes once its pods have (not orphaning them).
        assert_eq!(d.propagation, Some(wasmcm_guest::Propagation::Foreground));
        assert_eq!(o.requeue_after_ms, None);
    }
    // A failed Job too.
    let failed = new_job(None, Some(now()), Some(0));
    assert_eq!(reconcile(&failed, now()).batches.len(), 1);
}

#[test]
fn jobs_without_a_ttl_unfinished_or_going_are_left_alone() {
    let late = now() + SignedDuration::from_secs(86_400);
    let mut going = new_job(Some(now()), None, Some(0));
    going["metadata"]["deletionTimestamp"] = json!(NOW);
    let mut not_true = new_job(Some(now()), None, Some(0));
    not_true["status"]["conditions"][0]["status"] = json!("False");
    for (what, job) in [
        ("no TTL", new_job(Some(now()), None, None)),
        ("unfinished", new_job(None, None, Some(0))),
        ("being deleted", going),
        ("a Complete condition that is not True", not_true),
    ] {
        let o = reconcile(&job, late);
        assert!(o.batches.is_empty() && o.requeue_after_ms.is_none(), "{what}: {o:?}");
    }
    // Gone: nothing.
    let cache = MemoryCache::new();
    let o =
        TtlAfterFinishedController::reconcile(&Request::new("default", "gone", Instant::from_timestamp(late)), &cache)
            .unwrap();
    assert!(o.batches.is_empty());
}

#[test]
fn a_finished_condition_without_a_time_is_an_error_naming_the_job() {
    let mut job = new_job(Some(now()), None, Some(0));
    job["status"]["conditions"][0]["lastTransitionTime"] = Value::Null;
    let cache = MemoryCache::from_objects(&[job]).unwrap();
    let e = TtlAfterFinishedController::reconcile(
        &Request::new("default", "foobar", Instant::from_timestamp(now())),
        &cache,
    )
    .unwrap_err();
    assert!(!e.retryable);
    assert_eq!(e.message, "unable to find the time when the Job default/foobar finished");
}
