//! What a simulated container does once it runs, for the kubelet (`controllers::kubelet`): how long a
//! run lasts and how it exits (the pod's `wasmcm.dev/run-seconds` and `wasmcm.dev/exit-code`
//! annotations, per container, per run and per completion index), upstream's restart back-off,
//! and the pod status the kubelet reports for its containers (container states, phase, and the
//! conditions pkg/kubelet/status/generate.go derives).
//!
//! Pure functions over the pod and the kubelet's account of its containers: it writes nothing
//! and keeps no time of its own (the kubelet passes instants and timestamps in). The rules are
//! documented in `apiserver/README.md`.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;
use wasmcm_core::str_at;

/// Seconds a run lasts (decimals allowed).
pub(crate) const RUN_SECONDS_ANNOTATION: &str = "wasmcm.dev/run-seconds";
/// The exit code of a run (0-255).
pub(crate) const EXIT_CODE_ANNOTATION: &str = "wasmcm.dev/exit-code";
/// A Job pod's completion index (label, or annotation on older pods).
const COMPLETION_INDEX: &str = "batch.kubernetes.io/job-completion-index";
/// How often a pod's index failed before this pod (backoffLimitPerIndex).
const INDEX_FAILURE_COUNT: &str = "batch.kubernetes.io/job-index-failure-count";

/// What a container of a `Never` or `OnFailure` pod does without annotations.
const DEFAULT_RUN: Duration = Duration::from_secs(1);
/// Exit code of a killed container (SIGKILL after the grace period).
pub(crate) const KILLED: i32 = 137;
/// Upstream's container restart back-off: 10 s, doubling, at most 5 minutes.
const BACKOFF_INITIAL: Duration = Duration::from_secs(10);
const BACKOFF_MAX: Duration = Duration::from_secs(300);

/// One run of a container: how long it lasts (`None`: until stopped) and its exit code.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Plan {
    pub run: Option<Duration>,
    pub exit: i32,
}

fn restart_policy(pod: &Value) -> &str {
    match str_at(pod, "/spec/restartPolicy") {
        "" => "Always",
        p => p,
    }
}

fn annotation<'a>(pod: &'a Value, key: &str) -> Option<&'a str> {
    pod.pointer("/metadata/annotations").and_then(|a| a.get(key)).and_then(Value::as_str)
}

fn completion_index(pod: &Value) -> Option<&str> {
    pod.pointer("/metadata/labels")
        .and_then(|l| l.get(COMPLETION_INDEX))
        .and_then(Value::as_str)
        .or_else(|| annotation(pod, COMPLETION_INDEX))
}

/// The annotation `base`, or `base.<i>` in its place for a pod of completion index `i`: with
/// the key it was read under.
fn steering<'a>(pod: &'a Value, base: &str) -> Option<(String, &'a str)> {
    if let Some(i) = completion_index(pod) {
        let key = format!("{base}.{i}");
        if let Some(v) = annotation(pod, &key) {
            return Some((key, v));
        }
    }
    annotation(pod, base).map(|v| (base.to_string(), v))
}

/// Whether the pod's containers end by themselves: a pod that does not restart them always
/// (`Never`, `OnFailure`), or one that says how long they run.
pub(crate) fn finite(pod: &Value) -> bool {
    restart_policy(pod) != "Always" || steering(pod, RUN_SECONDS_ANNOTATION).is_some()
}

/// Runs a container has had before this pod: for a pod of an Indexed Job, its index's failures.
pub(crate) fn earlier_runs(pod: &Value) -> usize {
    annotation(pod, INDEX_FAILURE_COUNT).and_then(|v| v.parse().ok()).unwrap_or(0)
}

/// `value := entry ("," entry)*; entry := [container "="] runs; runs := number (" " number)*`:
/// the number for `container`'s run `k` (the last one repeating), a named entry before a bare
/// one. `Ok(None)` when no entry applies.
fn pick<'a>(value: &'a str, container: &str, k: usize) -> Result<Option<&'a str>, String> {
    let mut bare = None;
    let mut named = None;
    for entry in value.split(',').map(str::trim) {
        let (name, runs) = match entry.split_once('=') {
            Some((name, runs)) => (Some(name.trim()), runs),
            None => (None, entry),
        };
        let runs: Vec<&str> = runs.split_whitespace().collect();
        if runs.is_empty() {
            return Err(format!("{entry:?} names no value"));
        }
        match name {
            Some(n) if n == container => named = Some(runs),
            Some(_) => {}
            None => bare = Some(runs),
        }
    }
    Ok(named.or(bare).map(|runs| runs[k.min(runs.len() - 1)]))
}

/// What run `k` of container `name` (image `image`) of `pod` does, and what in the pod's
/// annotations could not be read (said, and the default taken).
pub(crate) fn plan(pod: &Value, name: &str, image: &str, k: usize) -> (Plan, Vec<String>) {
    let mut problems = Vec::new();
    let always = restart_policy(pod) == "Always";
    let mut run = (!always).then_some(DEFAULT_RUN);
    let fails = image.rsplit_once(':').is_some_and(|(_, tag)| tag == "fail");
    let mut exit = i32::from(fails);
    if let Some((key, value)) = steering(pod, RUN_SECONDS_ANNOTATION) {
        match pick(value, name, k) {
            Ok(Some(v)) => match v.parse::<f64>().ok().and_then(|s| Duration::try_from_secs_f64(s).ok()) {
                Some(d) => run = Some(d),
                None => problems.push(format!("{key}: {v:?} is not a number of seconds")),
            },
            Ok(None) => {}
            Err(e) => problems.push(format!("{key}: {e}")),
        }
    }
    if let Some((key, value)) = steering(pod, EXIT_CODE_ANNOTATION) {
        match pick(value, name, k) {
            Ok(Some(v)) => match v.parse::<u8>() {
                Ok(code) => exit = i32::from(code),
                Err(_) => problems.push(format!("{key}: {v:?} is not an exit code (0-255)")),
            },
            Ok(None) => {}
            Err(e) => problems.push(format!("{key}: {e}")),
        }
    }
    (Plan { run, exit }, problems)
}

/// The back-off before restart number `restarts + 1`.
pub(crate) fn backoff(restarts: u32) -> Duration {
    BACKOFF_INITIAL.saturating_mul(1 << restarts.min(10)).min(BACKOFF_MAX)
}

/// A Go duration as `%s` prints whole seconds: `10s`, `1m20s`.
fn go_seconds(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 { format!("{s}s") } else { format!("{}m{}s", s / 60, s % 60) }
}

/// A run that ended.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Exit {
    pub code: i32,
    pub started: String,
    pub finished: String,
    pub id: String,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum RunState {
    /// Until `ends` (never when `None`), then exits with `exit`.
    Running { started: String, ends: Option<Instant>, exit: i32 },
    /// Waiting `delay` (cluster time) to restart, at `until`.
    BackOff { until: Instant, delay: Duration },
    /// Terminated for good.
    Done(Exit),
}

/// The kubelet's account of one container.
#[derive(Clone, Debug)]
pub(crate) struct Run {
    pub name: String,
    pub image: String,
    pub image_id: String,
    pub id: String,
    pub restarts: u32,
    pub state: RunState,
    pub last: Option<Exit>,
}

impl Run {
    /// A run that has just ended with `exit` at `now_str`: restarted later (back-off) or done,
    /// by the pod's restart policy. `real` turns the cluster's back-off into real time.
    pub(crate) fn exited(&mut self, pod: &Value, exit: Exit, now: Instant, real: impl Fn(Duration) -> Duration) {
        let restart = match restart_policy(pod) {
            "Always" => true,
            "OnFailure" => exit.code != 0,
            _ => false,
        };
        if restart {
            let delay = backoff(self.restarts);
            self.last = Some(exit);
            self.state = RunState::BackOff { until: now + real(delay), delay };
        } else {
            self.state = RunState::Done(exit);
        }
    }

    /// Killed by the pod's deletion: what is running ends with [`KILLED`], what waits to restart
    /// stays as its last run ended.
    pub(crate) fn kill(&mut self, now_str: &str) {
        match &self.state {
            RunState::Running { started, .. } => {
                let exit =
                    Exit { code: KILLED, started: started.clone(), finished: now_str.into(), id: self.id.clone() };
                self.state = RunState::Done(exit);
            }
            RunState::BackOff { .. } => {
                let exit = self.last.clone().unwrap_or_else(|| Exit {
                    code: KILLED,
                    started: now_str.into(),
                    finished: now_str.into(),
                    id: self.id.clone(),
                });
                self.state = RunState::Done(exit);
            }
            RunState::Done(_) => {}
        }
    }

    pub(crate) fn wake(&self) -> Option<Instant> {
        match &self.state {
            RunState::Running { ends, .. } => *ends,
            RunState::BackOff { until, .. } => Some(*until),
            RunState::Done(_) => None,
        }
    }
}

fn terminated(e: &Exit) -> Value {
    json!({"terminated": {"exitCode": e.code, "reason": if e.code == 0 { "Completed" } else { "Error" },
                          "startedAt": e.started, "finishedAt": e.finished, "containerID": e.id}})
}

fn container_status(run: &Run, ready: bool, pod_ref: &str) -> Value {
    let (state, ready, started) = match &run.state {
        RunState::Running { started, .. } => (json!({"running": {"startedAt": started}}), ready, true),
        RunState::BackOff { delay, .. } => {
            let message =
                format!("back-off {} restarting failed container={} pod={pod_ref}", go_seconds(*delay), run.name);
            (json!({"waiting": {"reason": "CrashLoopBackOff", "message": message}}), false, false)
        }
        RunState::Done(exit) => (terminated(exit), false, false),
    };
    json!({
        "name": run.name, "image": run.image, "imageID": run.image_id, "containerID": run.id,
        "ready": ready, "started": started, "restartCount": run.restarts,
        "state": state, "lastState": run.last.as_ref().map(terminated).unwrap_or_else(|| json!({})),
    })
}

/// Conditions the kubelet owns, in the order it writes them; others (DisruptionTarget, a
/// controller's) are kept as they are.
const OWNED: [&str; 5] = ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"];

/// The pod's status as the kubelet reports `runs` at `now_str`: container statuses, the phase
/// (Succeeded or Failed once every container is done), and the conditions, each keeping its
/// lastTransitionTime while its status stays. `ready`: the pod's ready-after has passed.
pub(crate) fn pod_status(pod: &Value, runs: &[Run], ready: bool, now_str: &str) -> Value {
    let pod_ref = format!(
        "{}_{}({})",
        str_at(pod, "/metadata/name"),
        str_at(pod, "/metadata/namespace"),
        str_at(pod, "/metadata/uid")
    );
    let done = !runs.is_empty() && runs.iter().all(|r| matches!(r.state, RunState::Done(_)));
    let succeeded = done && runs.iter().all(|r| matches!(&r.state, RunState::Done(e) if e.code == 0));
    let phase = match (done, succeeded) {
        (false, _) => "Running",
        (true, true) => "Succeeded",
        (true, false) => "Failed",
    };
    let unready: Vec<&str> = runs
        .iter()
        .filter(|r| !(ready && matches!(r.state, RunState::Running { .. })))
        .map(|r| r.name.as_str())
        .collect();
    let terminal_reason = if succeeded { "PodCompleted" } else { "PodFailed" };
    let condition = |t: &str| -> (bool, Option<&str>, Option<String>) {
        match t {
            "PodReadyToStartContainers" => (!done, None, None),
            "Initialized" => (true, succeeded.then_some("PodCompleted"), None),
            "Ready" | "ContainersReady" if done => (false, Some(terminal_reason), None),
            "Ready" | "ContainersReady" if !unready.is_empty() => (
                false,
                Some("ContainersNotReady"),
                Some(format!("containers with unready status: [{}]", unready.join(" "))),
            ),
            _ => (true, None, None),
        }
    };
    let current = pod.pointer("/status/conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let mut conditions: Vec<Value> = OWNED
        .iter()
        .map(|t| {
            let (status, reason, message) = condition(t);
            let status = if status { "True" } else { "False" };
            let since = current
                .iter()
                .find(|c| c["type"] == *t && c["status"] == status)
                .and_then(|c| c.get("lastTransitionTime").cloned())
                .unwrap_or_else(|| json!(now_str));
            let mut c = json!({"type": t, "status": status, "lastProbeTime": null, "lastTransitionTime": since});
            if let Some(r) = reason {
                c["reason"] = json!(r);
            }
            if let Some(m) = message {
                c["message"] = json!(m);
            }
            c
        })
        .collect();
    conditions.extend(current.into_iter().filter(|c| !OWNED.iter().any(|t| c["type"] == *t)));
    let mut status = pod.get("status").cloned().unwrap_or_else(|| json!({}));
    status["phase"] = json!(phase);
    status["conditions"] = json!(conditions);
    status["containerStatuses"] = json!(runs.iter().map(|r| container_status(r, ready, &pod_ref)).collect::<Vec<_>>());
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(policy: &str, annotations: Value) -> Value {
        json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u", "annotations": annotations},
               "spec": {"restartPolicy": policy, "containers": [{"name": "main"}, {"name": "side"}]}})
    }

    #[test]
    fn runs_are_steered_per_container_per_run_and_per_index() {
        let p = pod("Never", json!({}));
        assert_eq!(plan(&p, "main", "busybox", 0).0, Plan { run: Some(Duration::from_secs(1)), exit: 0 });
        assert_eq!(plan(&p, "main", "busybox:fail", 0).0.exit, 1);
        let always = pod("Always", json!({}));
        assert_eq!(plan(&always, "main", "nginx", 0).0, Plan { run: None, exit: 0 });
        assert!(!finite(&always) && finite(&p));

        let p = pod("OnFailure", json!({"wasmcm.dev/run-seconds": "0.5", "wasmcm.dev/exit-code": "main=1 1 0,3"}));
        let exits: Vec<i32> = (0..4).map(|k| plan(&p, "main", "x", k).0.exit).collect();
        assert_eq!(exits, [1, 1, 0, 0], "per run, the last repeating");
        assert_eq!(plan(&p, "side", "x", 0).0.exit, 3, "the bare entry for the others");
        assert_eq!(plan(&p, "side", "x", 0).0.run, Some(Duration::from_millis(500)));

        let mut indexed = pod(
            "Never",
            json!({"wasmcm.dev/exit-code": "0", "wasmcm.dev/exit-code.1": "42",
                                              "batch.kubernetes.io/job-index-failure-count": "1"}),
        );
        indexed["metadata"]["labels"] = json!({"batch.kubernetes.io/job-completion-index": "1"});
        assert_eq!(plan(&indexed, "main", "x", earlier_runs(&indexed)).0.exit, 42);
        indexed["metadata"]["labels"] = json!({"batch.kubernetes.io/job-completion-index": "2"});
        assert_eq!(plan(&indexed, "main", "x", 0).0.exit, 0);
        assert_eq!(earlier_runs(&indexed), 1);

        let always_timed = pod("Always", json!({"wasmcm.dev/run-seconds": "5"}));
        assert!(finite(&always_timed));

        let bad = pod("Never", json!({"wasmcm.dev/exit-code": "300", "wasmcm.dev/run-seconds": "soon"}));
        let (p, problems) = plan(&bad, "main", "x", 0);
        assert_eq!(p, Plan { run: Some(Duration::from_secs(1)), exit: 0 }, "defaults kept");
        assert_eq!(
            problems,
            [
                "wasmcm.dev/run-seconds: \"soon\" is not a number of seconds",
                "wasmcm.dev/exit-code: \"300\" is not an exit code (0-255)"
            ]
        );
    }

    #[test]
    fn backoff_doubles_from_ten_seconds_to_five_minutes() {
        let delays: Vec<String> = (0..7).map(|n| go_seconds(backoff(n))).collect();
        assert_eq!(delays, ["10s", "20s", "40s", "1m20s", "2m40s", "5m0s", "5m0s"]);
    }

    fn run(name: &str, state: RunState) -> Run {
        Run {
            name: name.into(),
            image: "busybox".into(),
            image_id: "busybox@sha256:1".into(),
            id: "containerd://1".into(),
            restarts: 0,
            state,
            last: None,
        }
    }

    fn exit(code: i32) -> Exit {
        Exit { code, started: "T1".into(), finished: "T2".into(), id: "containerd://1".into() }
    }

    #[test]
    fn finished_pods_show_the_kubelets_phase_and_conditions() {
        let mut p = pod("Never", json!({}));
        p["status"] = json!({"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "T0"},
            {"type": "DisruptionTarget", "status": "True", "reason": "EvictionByEvictionAPI", "lastTransitionTime": "T0"}]});
        let s =
            pod_status(&p, &[run("main", RunState::Done(exit(0))), run("side", RunState::Done(exit(0)))], true, "T3");
        assert_eq!(s["phase"], "Succeeded");
        let cond = |s: &Value, t: &str| s["conditions"].as_array().unwrap().iter().find(|c| c["type"] == t).cloned();
        assert_eq!(cond(&s, "Ready").unwrap()["reason"], "PodCompleted");
        assert_eq!(cond(&s, "Ready").unwrap()["status"], "False");
        assert_eq!(cond(&s, "Initialized").unwrap()["reason"], "PodCompleted");
        assert_eq!(cond(&s, "PodReadyToStartContainers").unwrap()["status"], "False");
        assert_eq!(cond(&s, "DisruptionTarget").unwrap()["lastTransitionTime"], "T0", "kept");
        assert_eq!(s["containerStatuses"][0]["state"]["terminated"]["reason"], "Completed");

        let s =
            pod_status(&p, &[run("main", RunState::Done(exit(2))), run("side", RunState::Done(exit(0)))], true, "T3");
        assert_eq!(s["phase"], "Failed");
        assert_eq!(cond(&s, "ContainersReady").unwrap()["reason"], "PodFailed");
        assert_eq!(s["containerStatuses"][0]["state"]["terminated"]["exitCode"], 2);
        assert_eq!(s["containerStatuses"][0]["state"]["terminated"]["reason"], "Error");

        // One done, one running: Running, not ready, naming the one that is not.
        let running = RunState::Running { started: "T1".into(), ends: None, exit: 0 };
        let s = pod_status(&p, &[run("main", RunState::Done(exit(0))), run("side", running.clone())], true, "T3");
        assert_eq!(s["phase"], "Running");
        assert_eq!(cond(&s, "Ready").unwrap()["message"], "containers with unready status: [main]");
        // All running and ready: the Ready condition keeps its time.
        let s = pod_status(&p, &[run("main", running.clone()), run("side", running)], true, "T3");
        assert_eq!(cond(&s, "Ready").unwrap()["lastTransitionTime"], "T0");

        // Backing off: waiting with upstream's message, the last run as lastState.
        let mut backing = run("main", RunState::BackOff { until: Instant::now(), delay: Duration::from_secs(20) });
        backing.last = Some(exit(1));
        backing.restarts = 1;
        let s = pod_status(&p, &[backing], true, "T3");
        assert_eq!(
            s["containerStatuses"][0]["state"]["waiting"]["message"],
            "back-off 20s restarting failed container=main pod=p_ns(u)"
        );
        assert_eq!(s["containerStatuses"][0]["lastState"]["terminated"]["exitCode"], 1);
        assert_eq!(s["containerStatuses"][0]["restartCount"], 1);
    }
}
