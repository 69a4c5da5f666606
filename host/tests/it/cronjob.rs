//! The CronJob plugin end to end, with the Job plugin running the Jobs it creates: the real
//! kubectl against the embedded cluster, the host running both plugins as deploy/manifests'
//! identities (which proves their ClusterRoles sufficient), in the Job tests' environment
//! (`job.rs`).
//!
//! The cluster runs on a test clock thirty times as fast as the real one, so a CronJob "every
//! minute" fires every two real seconds and a pod's 150 s of work takes five. Assertions are on
//! what the cluster records (scheduled times, creation and completion times, in cluster time),
//! never on real durations.

use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::items;
use crate::job::{Env, TIMEOUT, conditions_of, time_of};

/// The test clock's rate: a cluster minute is two real seconds.
const RATE: f64 = 30.0;
const SCHEDULED: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

/// A CronJob `name` every minute under `policy`, whose pods run `annotations`' steering.
fn cron_job(name: &str, policy: &str, annotations: Value) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedule": "* * * * *",
            "concurrencyPolicy": policy,
            "jobTemplate": {"spec": {"template": {
                "metadata": {"annotations": annotations},
                "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]},
            }}},
        },
    })
}

fn start() -> Env {
    Env::start_with(RATE, &["job", "cronjob"])
}

/// The CronJob's Jobs, in the order of their scheduled times.
fn jobs_of(e: &Env, cron_job: &str) -> Vec<Value> {
    let mut jobs: Vec<Value> = items(e.json(&["get", "jobs"]))
        .into_iter()
        .filter(|j| {
            j["metadata"]["ownerReferences"]
                .as_array()
                .is_some_and(|o| o.iter().any(|o| o["kind"] == "CronJob" && o["name"] == cron_job))
        })
        .collect();
    jobs.sort_by_key(scheduled);
    jobs
}

fn scheduled(job: &Value) -> jiff::Timestamp {
    time_of(&job["metadata"]["annotations"][SCHEDULED])
}

fn name_of(v: &Value) -> String {
    v["metadata"]["name"].as_str().unwrap_or("").to_string()
}

fn finished(job: &Value) -> bool {
    conditions_of(job).iter().any(|(t, s, _)| (t == "Complete" || t == "Failed") && s == "True")
}

/// Upstream's Job name: the CronJob's, then the scheduled time in minutes since the epoch.
fn assert_named_by_schedule(cron_job: &str, job: &Value) {
    let t = scheduled(job);
    assert_eq!(t.as_second() % 60, 0, "scheduled on a minute: {job:#}");
    assert_eq!(name_of(job), format!("{cron_job}-{}", t.as_second() / 60));
}

#[test]
fn a_cronjob_under_forbid_starts_nothing_while_its_job_runs() {
    let e = start();
    // Each run takes two and a half minutes: the schedules inside it are skipped.
    e.apply(&cron_job("tick", "Forbid", json!({"wasmcm.dev/run-seconds": "150"})));
    let deadline = Instant::now() + TIMEOUT;
    let jobs = loop {
        let jobs = jobs_of(&e, "tick");
        let running: Vec<String> = jobs.iter().filter(|j| !finished(j)).map(name_of).collect();
        assert!(running.len() <= 1, "Forbid ran {running:?} at once\n{}", e.ok(&["describe", "cronjob", "tick"]));
        if jobs.len() >= 2 {
            break jobs;
        }
        assert!(Instant::now() < deadline, "no second Job\n{}", e.ok(&["describe", "cronjob", "tick"]));
        std::thread::sleep(Duration::from_millis(100));
    };
    let (first, second) = (e.job(&name_of(&jobs[0])), &jobs[1]);
    assert_named_by_schedule("tick", &first);
    assert_named_by_schedule("tick", second);
    assert!(conditions_of(&first).iter().any(|(t, s, _)| t == "Complete" && s == "True"), "{first:#}");
    // The second started only once the first had completed, for the most recent schedule it
    // had missed (started late, as upstream does without a startingDeadlineSeconds): the
    // minute after the first's was skipped.
    let completed = time_of(&first["status"]["completionTime"]);
    let created = time_of(&second["metadata"]["creationTimestamp"]);
    assert!(created >= completed, "{first:#}\n{second:#}");
    assert!(scheduled(second) <= created && created.duration_since(scheduled(second)).as_secs() < 60, "{second:#}");
    assert!(scheduled(second).duration_since(scheduled(&first)).as_secs() >= 120, "{first:#}\n{second:#}");
    let events = e.events("tick");
    let forbid = "Not starting job because prior execution is running and concurrency policy is Forbid";
    assert!(events.contains(&("JobAlreadyActive".into(), forbid.into())), "{events:?}");
    let created = format!("Created job {}", name_of(&first));
    assert!(events.contains(&("SuccessfulCreate".into(), created)), "{events:?}");
    let saw = format!("Saw completed job: {}, condition: Complete", name_of(&first));
    assert!(events.contains(&("SawCompletedJob".into(), saw)), "{events:?}");
    e.eventually("lastSuccessfulTime", || {
        let cj = e.json(&["get", "cronjob", "tick"]);
        cj["status"]["lastSuccessfulTime"]
            .as_str()
            .is_some_and(|_| time_of(&cj["status"]["lastSuccessfulTime"]) >= completed)
            .then_some(())
    });
}

#[test]
fn a_cronjob_under_replace_deletes_the_running_job_for_the_next() {
    let e = start();
    // A run takes ten minutes: every schedule finds the previous Job running.
    e.apply(&cron_job("swap", "Replace", json!({"wasmcm.dev/run-seconds": "600"})));
    let first = e.eventually("a first Job", || jobs_of(&e, "swap").into_iter().next());
    let first_name = name_of(&first);
    e.eventually("a pod of the first Job running", || {
        e.pods(&first_name).iter().any(|p| p["status"]["phase"] == "Running").then_some(())
    });
    let next = e.eventually("the Job of a later schedule", || {
        jobs_of(&e, "swap").into_iter().find(|j| scheduled(j) > scheduled(&first))
    });
    assert_named_by_schedule("swap", &next);
    // Deleted with background propagation: the Job, then its pods (killed, and freed of the
    // tracking finalizer by the Job plugin).
    e.eventually("the first Job gone", || (!e.run(&["get", "job", &first_name], None).status.success()).then_some(()));
    e.eventually("the first Job's pods gone", || e.pods(&first_name).is_empty().then_some(()));
    let events = e.events("swap");
    assert!(events.contains(&("SuccessfulDelete".into(), format!("Deleted job {first_name}"))), "{events:?}");
    // Only ever the latest in the active list; none of them completed.
    let active = e.eventually("one active Job", || {
        let cj = e.json(&["get", "cronjob", "swap"]);
        let active = cj["status"]["active"].as_array().cloned().unwrap_or_default();
        (active.len() == 1 && active[0]["name"] != first_name.as_str()).then_some(cj)
    });
    assert!(active["status"]["lastSuccessfulTime"].is_null(), "{active:#}");
}

#[test]
fn kubectl_create_cronjob_and_a_job_from_it() {
    let e = start();
    // Once a year: it never fires during the test.
    let out = e.ok(&["create", "cronjob", "nightly", "--image=busybox", "--schedule=0 0 1 1 *", "--", "echo", "hi"]);
    assert_eq!(out.trim(), "cronjob.batch/nightly created");
    let listed = e.ok(&["get", "cronjob", "nightly"]);
    assert!(listed.lines().nth(1).is_some_and(|l| l.contains("0 0 1 1 *") && l.contains("False")), "{listed}");
    // Its pods run half a minute: the CronJob sees the Job before it finishes.
    let steer = r#"{"spec":{"jobTemplate":{"spec":{"template":{"metadata":{"annotations":{"wasmcm.dev/run-seconds":"30"}}}}}}}"#;
    e.ok(&["patch", "cronjob", "nightly", "--type=merge", "-p", steer]);
    let out = e.ok(&["create", "job", "manual", "--from=cronjob/nightly"]);
    assert_eq!(out.trim(), "job.batch/manual created");
    e.wait_for("manual", "complete");
    let job = e.job("manual");
    assert_eq!(job["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"], "manual", "{job:#}");
    assert_eq!(job["metadata"]["ownerReferences"][0]["name"], "nightly");
    assert_eq!(job["status"]["succeeded"], 1);
    // Not one of its own schedule: the CronJob says so, and does not count it.
    let events = e.events("nightly");
    let unexpected = "Saw a job that the controller did not create or forgot: manual";
    assert!(events.contains(&("UnexpectedJob".into(), unexpected.into())), "{events:?}");
    let cj = e.json(&["get", "cronjob", "nightly"]);
    assert!(cj["status"]["active"].is_null() && cj["status"]["lastScheduleTime"].is_null(), "{cj:#}");
}
