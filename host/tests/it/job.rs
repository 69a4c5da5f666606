//! The Job plugin end to end: the real kubectl against the embedded cluster, whose simulated
//! kubelet runs pods to completion (`wasmcm.dev/run-seconds`, `wasmcm.dev/exit-code`), with the
//! host running the job plugin in-process as deploy/manifests' identities (so each scenario also
//! proves the plugin's ClusterRole sufficient: pods create, patch, delete; jobs/status).
//!
//! The cluster runs on a test clock ten times as fast as the real one: a pod's second of work
//! and the 10 s pod failure back-off take a tenth of that. Timeouts are generous: these tests
//! check behaviour, not speed.

use crate::common::{self, items};

use std::time::{Duration, Instant};

use k8s_openapi::api::batch::v1::Job;
use kube::api::{Api, DeleteParams, PostParams};
use kube::runtime::wait::{await_condition, conditions};
use serde_json::{Value, json};
use wasmcm::Version;
use wasmcm_apiserver::{ClusterConfig, KubeletConfig};
use wasmcm_core::clock::Clock;

/// How long any one expectation may take to come true.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(90);
/// The test clock's rate.
const RATE: f64 = 10.0;

/// The embedded cluster on a test clock and a host running built-in plugins
/// ([`common::Bed`]), with the Job tests' helpers; the CronJob tests (`cronjob.rs`) run in it too.
pub(crate) struct Env(common::Bed);

impl std::ops::Deref for Env {
    type Target = common::Bed;
    fn deref(&self) -> &common::Bed {
        &self.0
    }
}

impl Env {
    fn start() -> Env {
        Env::start_with(RATE, &["job"])
    }

    /// The cluster on a clock `rate` times as fast as the real one, and a host running the
    /// built-in `plugins`.
    pub(crate) fn start_with(rate: f64, plugins: &[&str]) -> Env {
        let now = jiff::Timestamp::now();
        let config = ClusterConfig {
            kubelet: KubeletConfig { start_delay: Duration::from_millis(100), ..KubeletConfig::default() },
            clock: Clock::test(now, now, rate).expect("a test clock"),
            ..ClusterConfig::default()
        };
        let plugins = plugins.iter().map(|name| Version::of(common::builtin(name).expect("built in"))).collect();
        Env(common::Bed::start(config, plugins))
    }

    pub(crate) fn job(&self, name: &str) -> Value {
        self.json(&["get", "job", name])
    }

    pub(crate) fn pods(&self, job: &str) -> Vec<Value> {
        let mut pods = items(self.json(&["get", "pods", "-l", &format!("batch.kubernetes.io/job-name={job}")]));
        pods.sort_by_key(|p| p["metadata"]["creationTimestamp"].as_str().unwrap_or("").to_string());
        pods
    }

    /// `kubectl wait --for=condition=<condition> job/<name>`, which must succeed.
    pub(crate) fn wait_for(&self, name: &str, condition: &str) {
        let out =
            self.run(&["wait", &format!("--for=condition={condition}"), &format!("job/{name}"), "--timeout=90s"], None);
        assert!(
            out.status.success(),
            "kubectl wait --for=condition={condition} job/{name}: {}{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr),
            self.ok(&["describe", "job", name])
        );
    }

    pub(crate) fn eventually<T>(&self, what: &str, f: impl FnMut() -> Option<T>) -> T {
        self.0.eventually(what, TIMEOUT, &["jobs"], f)
    }

    /// (reason, message) of the job's events, oldest first.
    pub(crate) fn events(&self, name: &str) -> Vec<(String, String)> {
        let mut events =
            items(self.json(&["get", "events", "--field-selector", &format!("involvedObject.name={name}")]));
        // As kubectl sorts them (SortableEvents): last seen, for either API's writes.
        let last = |e: &Value| {
            let seen = [&e["series"]["lastObservedTime"], &e["lastTimestamp"], &e["eventTime"]];
            seen.into_iter().find_map(|t| t.as_str()).map(|t| t.parse::<jiff::Timestamp>().unwrap())
        };
        events.sort_by_key(last);
        events
            .iter()
            .map(|e| (e["reason"].as_str().unwrap_or("").into(), e["message"].as_str().unwrap_or("").into()))
            .collect()
    }
}

/// A Job `name` whose pods run `annotations`' steering, `spec` merged in.
pub(crate) fn job(name: &str, annotations: Value, spec: Value) -> Value {
    let mut j = json!({
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": "default"},
        "spec": {"template": {"metadata": {"annotations": annotations},
                              "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}},
    });
    wasmcm_guest::json::merge_patch(&mut j["spec"], spec);
    j
}

/// (type, status, reason) of each condition.
pub(crate) fn conditions_of(job: &Value) -> Vec<(String, String, String)> {
    job["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let f = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (f("type"), f("status"), f("reason"))
        })
        .collect()
}

fn has_tracking_finalizer(pod: &Value) -> bool {
    pod["metadata"]["finalizers"].as_array().is_some_and(|f| f.iter().any(|f| f == "batch.kubernetes.io/job-tracking"))
}

pub(crate) fn time_of(v: &Value) -> jiff::Timestamp {
    v.as_str().and_then(|s| s.parse().ok()).unwrap_or_else(|| panic!("not a time: {v}"))
}

#[test]
fn a_job_of_five_completions_two_at_a_time_completes() {
    let e = Env::start();
    e.apply(&job("pi", json!({"wasmcm.dev/run-seconds": "2"}), json!({"completions": 5, "parallelism": 2})));
    // Never more than parallelism pods at once, watched until done.
    let deadline = Instant::now() + TIMEOUT;
    loop {
        let pods = e.pods("pi");
        let running =
            pods.iter().filter(|p| !matches!(p["status"]["phase"].as_str(), Some("Succeeded" | "Failed"))).count();
        assert!(running <= 2, "{running} pods run at once:\n{}", e.ok(&["get", "pods", "-o", "wide"]));
        let j = e.job("pi");
        if conditions_of(&j).iter().any(|(t, s, _)| t == "Complete" && s == "True") {
            break;
        }
        assert!(Instant::now() < deadline, "pi did not complete\n{}", e.ok(&["describe", "job", "pi"]));
        std::thread::sleep(Duration::from_millis(50));
    }
    e.wait_for("pi", "complete");
    let j = e.job("pi");
    assert_eq!(j["status"]["succeeded"], 5, "{j:#}");
    assert_eq!(j["status"]["active"].as_i64().unwrap_or(0), 0);
    assert!(j["status"]["failed"].as_i64().unwrap_or(0) == 0);
    assert_eq!(
        conditions_of(&j),
        [
            ("SuccessCriteriaMet".into(), "True".into(), "CompletionsReached".into()),
            ("Complete".into(), "True".into(), "CompletionsReached".into())
        ]
    );
    assert!(time_of(&j["status"]["completionTime"]) >= time_of(&j["status"]["startTime"]));
    let pods = e.pods("pi");
    assert_eq!(pods.len(), 5, "one pod per completion");
    for p in &pods {
        assert_eq!(p["status"]["phase"], "Succeeded", "{p:#}");
        assert!(!has_tracking_finalizer(p), "counted pods lose the tracking finalizer: {p:#}");
        assert_eq!(p["metadata"]["ownerReferences"][0]["kind"], "Job");
    }
    let events = e.events("pi");
    assert_eq!(events.iter().filter(|(r, _)| r == "SuccessfulCreate").count(), 5, "{events:?}");
    assert!(events.contains(&("Completed".into(), "Job completed".into())), "{events:?}");
    let listed = e.ok(&["get", "job", "pi"]);
    assert!(listed.lines().nth(1).is_some_and(|l| l.contains("Complete") && l.contains("5/5")), "{listed}");
}

#[test]
fn an_indexed_jobs_indexes_complete() {
    let e = Env::start();
    let spec = json!({"completions": 4, "parallelism": 2, "completionMode": "Indexed"});
    e.apply(&job("idx", json!({"wasmcm.dev/run-seconds": "1"}), spec));
    e.wait_for("idx", "complete");
    let j = e.job("idx");
    assert_eq!((j["status"]["completedIndexes"].as_str(), j["status"]["succeeded"].as_i64()), (Some("0-3"), Some(4)));
    let pods = e.pods("idx");
    let mut indexes: Vec<String> = Vec::new();
    for p in &pods {
        let index =
            p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"].as_str().unwrap().to_string();
        assert_eq!(p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"], index.as_str());
        assert_eq!(p["spec"]["hostname"], format!("idx-{index}"));
        assert!(p["metadata"]["name"].as_str().unwrap().starts_with(&format!("idx-{index}-")), "{p:#}");
        let env = &p["spec"]["containers"][0]["env"];
        assert!(
            env.as_array().unwrap().iter().any(|v| v["name"] == "JOB_COMPLETION_INDEX"
                && v["valueFrom"]["fieldRef"]["fieldPath"]
                    == "metadata.labels['batch.kubernetes.io/job-completion-index']"),
            "{env}"
        );
        indexes.push(index);
    }
    indexes.sort();
    assert_eq!(indexes, ["0", "1", "2", "3"], "one pod per index");
}

#[test]
fn a_failing_job_backs_off_and_fails_at_its_backoff_limit() {
    let e = Env::start();
    let annotations = json!({"wasmcm.dev/exit-code": "1", "wasmcm.dev/run-seconds": "1"});
    e.apply(&job("flaky", annotations, json!({"backoffLimit": 2})));
    e.wait_for("flaky", "failed");
    let j = e.job("flaky");
    assert_eq!(j["status"]["failed"], 3, "backoffLimit 2: the third failure fails it: {j:#}");
    assert_eq!(
        conditions_of(&j),
        [
            ("FailureTarget".into(), "True".into(), "BackoffLimitExceeded".into()),
            ("Failed".into(), "True".into(), "BackoffLimitExceeded".into())
        ]
    );
    let pods = e.pods("flaky");
    assert_eq!(pods.len(), 3, "no pod after the limit");
    // Each replacement waited its back-off after the failure before it: 10 s, then 20 s.
    for (i, pair) in pods.windows(2).enumerate() {
        let finished = time_of(&pair[0]["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]);
        let created = time_of(&pair[1]["metadata"]["creationTimestamp"]);
        let waited = created.duration_since(finished).as_secs_f64();
        let back_off = 10.0 * f64::from(1 << i);
        // The cluster stamps whole seconds.
        assert!(
            waited >= back_off - 1.0,
            "pod {} came {waited} s after its predecessor failed, not {back_off} s",
            i + 1
        );
    }
    assert!(pods.iter().all(|p| p["status"]["phase"] == "Failed" && !has_tracking_finalizer(p)));
    let events = e.events("flaky");
    assert!(
        events.contains(&("BackoffLimitExceeded".into(), "Job has reached the specified backoff limit".into())),
        "{events:?}"
    );
}

#[test]
fn a_pod_failure_policy_fails_the_job_on_an_exit_code() {
    let e = Env::start();
    let policy = json!({"rules": [
        {"action": "Ignore", "onExitCodes": {"operator": "In", "values": [3]}},
        {"action": "FailJob", "onExitCodes": {"containerName": "c", "operator": "In", "values": [42]}},
    ]});
    e.apply(&job(
        "exits",
        json!({"wasmcm.dev/exit-code": "42"}),
        json!({"backoffLimit": 6, "podFailurePolicy": policy}),
    ));
    e.wait_for("exits", "failed");
    let j = e.job("exits");
    let pods = e.pods("exits");
    assert_eq!(pods.len(), 1, "the first failure fails the Job, whatever backoffLimit says");
    let pod = pods[0]["metadata"]["name"].as_str().unwrap();
    let failed = j["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Failed").cloned().unwrap();
    assert_eq!(failed["reason"], "PodFailurePolicy");
    assert_eq!(
        failed["message"],
        format!("Container c for pod default/{pod} failed with exit code 42 matching FailJob rule at index 1")
    );
    assert_eq!(j["status"]["failed"], 1);
}

#[test]
fn a_suspended_job_starts_nothing_until_resumed() {
    let e = Env::start();
    e.apply(&job("later", json!({}), json!({"suspend": true, "completions": 2, "parallelism": 2})));
    let suspended = e.eventually("the Suspended condition", || {
        let j = e.job("later");
        conditions_of(&j).contains(&("Suspended".into(), "True".into(), "JobSuspended".into())).then_some(j)
    });
    assert!(suspended["status"]["startTime"].is_null(), "a suspended Job has not started: {suspended:#}");
    // Time passes (a reconcile or more), and still nothing runs.
    std::thread::sleep(Duration::from_millis(500));
    assert!(e.pods("later").is_empty(), "a suspended Job creates no pods");
    e.ok(&["patch", "job", "later", "--type=merge", "-p", r#"{"spec":{"suspend":false}}"#]);
    e.wait_for("later", "complete");
    let j = e.job("later");
    assert!(conditions_of(&j).contains(&("Suspended".into(), "False".into(), "JobResumed".into())), "{j:#}");
    let resumed = j["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Suspended").unwrap();
    assert!(time_of(&j["status"]["startTime"]) >= time_of(&resumed["lastTransitionTime"]), "startTime is the resume's");
    assert_eq!(e.pods("later").len(), 2);
    let reasons: Vec<String> = e.events("later").into_iter().map(|(r, _)| r).collect();
    let (s, r) = (reasons.iter().position(|r| r == "Suspended"), reasons.iter().position(|r| r == "Resumed"));
    assert!(s.is_some() && r.is_some() && s < r, "{reasons:?}");
}

#[test]
fn kubectl_create_job_and_wait_and_kube_rs_await_its_completion() {
    let e = Env::start();
    let out = e.ok(&["create", "job", "hello", "--image=busybox", "--", "echo", "hi"]);
    assert_eq!(out.trim(), "job.batch/hello created");
    e.wait_for("hello", "complete");
    let described = e.ok(&["describe", "job", "hello"]);
    assert!(described.contains("1 Succeeded"), "{described}");
    // The kubelet is simulated: no logs, and kubectl says so plainly.
    let logs = e.run(&["logs", "job/hello"], None);
    let stderr = String::from_utf8_lossy(&logs.stderr);
    assert!(
        !logs.status.success() && stderr.contains("pods/log is not served by the wasmcm embedded cluster"),
        "{stderr}"
    );
    // kube-rs's own e2e test of Jobs (e2e/job.rs): create one, await its completion, delete it
    // with background propagation.
    e.runtime.block_on(async {
        let jobs: Api<Job> = Api::namespaced(e.client.clone(), "default");
        let object: Job = serde_json::from_value(json!({
            "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "empty-job"},
            "spec": {"template": {"metadata": {"name": "empty-job-pod"},
                                  "spec": {"containers": [{"name": "empty", "image": "alpine:latest"}],
                                           "restartPolicy": "Never"}}},
        }))
        .unwrap();
        jobs.create(&PostParams::default(), &object).await.expect("created");
        let done =
            tokio::time::timeout(TIMEOUT, await_condition(jobs.clone(), "empty-job", conditions::is_job_completed()));
        let job = done.await.expect("completes in time").expect("watched").expect("still there");
        assert_eq!(job.status.and_then(|s| s.succeeded), Some(1));
        jobs.delete("empty-job", &DeleteParams::background()).await.expect("deleted");
    });
    // The garbage collector takes its pod too.
    e.eventually("empty-job's pod gone", || e.pods("empty-job").is_empty().then_some(()));
    assert!(!e.run(&["get", "job", "empty-job"], None).status.success(), "empty-job is gone");
}
