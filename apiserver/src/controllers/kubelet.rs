//! The simulated scheduler and kubelet: virtual Nodes, pods bound to the least loaded node,
//! started after a short jittered delay, graceful deletion finished after a capped grace
//! period. Writes through `api` like any client would, with resourceVersion preconditions;
//! a conflict is retried when the change that caused it arrives (or shortly after).
//!
//! It follows the store's pod changes and keeps its own account of each pod (binding, start
//! and ready times, restart backoff, termination) and of each node's load, with a timer per
//! pod, so a step costs in proportion to the pods that changed or are due.
//!
//! Pods that do not restart their containers always (`restartPolicy` `Never`, `OnFailure`, or a
//! pod that says how long its containers run) run to completion: each container runs for a
//! simulated run time and exits with an exit code, both steered per pod by annotations
//! (`runs.rs` holds those rules and the status they show), `OnFailure` restarts with
//! upstream's back-off, and the pod ends `Succeeded` or `Failed`; a deleted one is written
//! terminal (its running containers killed) before it goes. Run times and back-offs are in the
//! cluster's clock, which a test may speed up.
//!
//! Test hooks, documented in the README: an image whose tag is `fail` crash-loops when the pod
//! restarts always (never Ready, restartCount grows with backoff) and exits 1 otherwise; the
//! annotation `wasmcm.dev/ready-after-seconds: N` keeps a started pod not Ready for N seconds.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;
use wasmcm_core::str_at;

use crate::State;
use crate::api::{self, DeleteOptions};
use crate::registry::resources::ResourceType;
use crate::registry::resources::Target;
use crate::runs::{self, Exit, Run, RunState};
use crate::storage::change::{Event, EventType, Key};
use crate::storage::store::{Changes, Subscription};

pub(crate) const READY_AFTER_ANNOTATION: &str = "wasmcm.dev/ready-after-seconds";

#[derive(Clone, Debug)]
pub struct KubeletConfig {
    pub nodes: usize,
    /// Time from binding to running (±20% jitter).
    pub start_delay: Duration,
    /// Longest a terminating pod lingers, whatever its grace period.
    pub grace_cap: Duration,
}

impl Default for KubeletConfig {
    fn default() -> Self {
        KubeletConfig { nodes: 3, start_delay: Duration::from_millis(500), grace_cap: Duration::from_secs(2) }
    }
}

pub(crate) fn node_name(i: usize) -> String {
    format!("wasmcm-node-{i}")
}

fn node(state: &State, i: usize) -> Value {
    let name = node_name(i);
    let now = state.now_rfc3339();
    let cond = |t: &str, status: &str, reason: &str, message: &str| {
        json!({"type": t, "status": status, "reason": reason, "message": message,
               "lastHeartbeatTime": now, "lastTransitionTime": now})
    };
    let resources = json!({"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "100Gi"});
    json!({
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {
            "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
            "node.kubernetes.io/instance-type": "wasmcm-simulated"}},
        "spec": {"podCIDR": format!("10.244.{i}.0/24"), "podCIDRs": [format!("10.244.{i}.0/24")]},
        "status": {
            "capacity": resources, "allocatable": resources,
            "conditions": [
                cond("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
                cond("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
                cond("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
                cond("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
            ],
            "addresses": [{"type": "InternalIP", "address": format!("10.0.0.{}", 10 + i)}, {"type": "Hostname", "address": name}],
            "nodeInfo": {
                "kubeletVersion": "v1.35.0", "kubeProxyVersion": "", "containerRuntimeVersion": "wasmcm-sim://0.1.0",
                "osImage": "wasmcm simulated node", "kernelVersion": "n/a", "operatingSystem": "linux",
                "architecture": "amd64", "machineID": "", "systemUUID": "", "bootID": "",
            },
            "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
        },
    })
}

fn jitter(base: Duration) -> Duration {
    let mut b = [0u8; 2];
    let _ = getrandom::fill(&mut b);
    let factor = 0.8 + 0.4 * f64::from(u16::from_le_bytes(b)) / f64::from(u16::MAX);
    base.mul_f64(factor)
}

/// What the kubelet knows of one pod.
struct Tracked {
    /// The newest version seen: from the store's changes or from the kubelet's own writes.
    pod: Arc<Value>,
    /// The simulated node the pod counts against.
    node: Option<String>,
    /// When the pod starts (bound and pending) or, once running, turns ready.
    due: Option<Instant>,
    /// Crash-looping: when the next restart is counted, and the backoff after it.
    next_restart: Option<(Instant, Duration)>,
    terminating_since: Option<Instant>,
    /// When the pod is next looked at if nothing changes it: its entry in `Kubelet::timers`.
    wake: Option<Instant>,
    /// The containers of a pod that runs to completion, once started.
    runs: Vec<Run>,
}

/// How soon a write that failed for another reason than a change to the pod is tried again
/// (a change brings the pod back by itself).
const RETRY: Duration = Duration::from_millis(100);

/// The scheduler and kubelet of every simulated node. Driven by the store's pod changes and by
/// its own timers, so each step costs in proportion to the pods that changed or are due, not
/// to all pods.
struct Kubelet {
    config: KubeletConfig,
    pods_rt: ResourceType,
    pods: BTreeMap<Key, Tracked>,
    /// Pods per simulated node, kept as pods are bound, rebound and go.
    load: BTreeMap<String, usize>,
    /// (when, pod): what is due when.
    timers: BTreeSet<(Instant, Key)>,
    /// Pods to look at now.
    dirty: BTreeSet<Key>,
    ip_seq: u32,
}

fn rv_of(v: &Value) -> u64 {
    str_at(v, "/metadata/resourceVersion").parse().unwrap_or(0)
}

impl Kubelet {
    fn new(config: KubeletConfig, pods_rt: ResourceType) -> Self {
        let load = (1..=config.nodes).map(|i| (node_name(i), 0)).collect();
        Kubelet {
            config,
            pods_rt,
            pods: BTreeMap::new(),
            load,
            timers: BTreeSet::new(),
            dirty: BTreeSet::new(),
            ip_seq: 0,
        }
    }

    fn forget(&mut self, key: &Key) {
        if let Some(t) = self.pods.remove(key) {
            if let Some(at) = t.wake {
                self.timers.remove(&(at, key.clone()));
            }
            if let Some(n) = t.node.and_then(|n| self.load.get_mut(&n)) {
                *n -= 1;
            }
        }
        self.dirty.remove(key);
    }

    /// Takes `pod` as the newest version of the pod at `key` unless a newer one is known,
    /// keeping the node counts. True if it was taken.
    fn learn(&mut self, key: &Key, pod: Arc<Value>) -> bool {
        if let Some(t) = self.pods.get(key) {
            if str_at(&t.pod, "/metadata/uid") != str_at(&pod, "/metadata/uid") {
                // Deleted and created again while the kubelet was not following.
                self.forget(key);
            } else if rv_of(&pod) <= rv_of(&t.pod) {
                return false;
            }
        }
        let node = Some(str_at(&pod, "/spec/nodeName")).filter(|n| self.load.contains_key(*n)).map(String::from);
        let t = self.pods.entry(key.clone()).or_insert_with(|| Tracked {
            pod: pod.clone(),
            node: None,
            due: None,
            next_restart: None,
            terminating_since: None,
            wake: None,
            runs: Vec::new(),
        });
        t.pod = pod;
        if t.node != node {
            if let Some(n) = t.node.as_ref().and_then(|n| self.load.get_mut(n)) {
                *n -= 1;
            }
            if let Some(n) = node.as_ref().and_then(|n| self.load.get_mut(n)) {
                *n += 1;
            }
            t.node = node;
        }
        true
    }

    fn apply(&mut self, event: &Event) {
        if event.event_type == EventType::Deleted {
            self.forget(&event.key);
        } else if self.learn(&event.key, event.object.clone()) {
            self.dirty.insert(event.key.clone());
        }
    }

    /// Starts over from the current pods, keeping what it knew of those still there.
    fn reset(&mut self, events: &[Arc<Event>]) {
        let present: BTreeSet<&Key> = events.iter().map(|e| &e.key).collect();
        let gone: Vec<Key> = self.pods.keys().filter(|k| !present.contains(k)).cloned().collect();
        for key in &gone {
            self.forget(key);
        }
        for event in events {
            self.apply(event);
        }
    }

    fn set_wake(&mut self, key: &Key, at: Option<Instant>) {
        let Some(t) = self.pods.get_mut(key) else { return };
        if t.wake == at {
            return;
        }
        if let Some(old) = t.wake {
            self.timers.remove(&(old, key.clone()));
        }
        t.wake = at;
        if let Some(at) = at {
            self.timers.insert((at, key.clone()));
        }
    }

    /// Moves what is due at `now` to the pods to look at.
    fn due(&mut self, now: Instant) {
        while let Some((at, key)) = self.timers.first().cloned()
            && at <= now
        {
            self.timers.pop_first();
            if let Some(t) = self.pods.get_mut(&key) {
                t.wake = None;
            }
            self.dirty.insert(key);
        }
    }

    fn step(&mut self, state: &State, now: Instant) {
        self.due(now);
        for key in std::mem::take(&mut self.dirty) {
            let wake = self.look_at(state, &key, now);
            self.set_wake(&key, wake);
        }
    }

    /// Does what is due for one pod; returns when to look at it again if nothing changes it.
    fn look_at(&mut self, state: &State, key: &Key, now: Instant) -> Option<Instant> {
        let t = self.pods.get_mut(key)?;
        let pod = t.pod.clone();
        let target = Target { rt: self.pods_rt.clone(), namespace: key.namespace.clone(), name: key.name.clone() };
        if pod.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null()) {
            return self.terminate(state, key, target, now);
        }
        // A pod the defaulting has not touched yet has no phase: it is pending.
        let phase = match str_at(&pod, "/status/phase") {
            "" => "Pending",
            p => p,
        };
        let node = str_at(&pod, "/spec/nodeName");
        if node.is_empty() {
            return if phase == "Pending" { self.schedule(state, key, target, &pod, now) } else { None };
        }
        if phase == "Pending" {
            let due = *t.due.get_or_insert_with(|| now + jitter(self.config.start_delay));
            if now < due {
                return Some(due);
            }
            self.ip_seq = self.ip_seq.wrapping_add(1);
            let ready_after = pod
                .pointer(&format!("/metadata/annotations/{}", READY_AFTER_ANNOTATION.replace('/', "~1")))
                .and_then(Value::as_str)
                .and_then(|s| s.parse::<u64>().ok())
                .unwrap_or(0);
            let finite = runs::finite(&pod);
            let crashing = failing(&pod) && !finite;
            let ready_now = ready_after == 0 && !crashing;
            let Some(started) = start(state, &target, &pod, self.ip_seq, ready_now, crashing) else {
                return Some(now + RETRY);
            };
            t.due = (ready_after > 0).then(|| now + state.real(Duration::from_secs(ready_after)));
            if crashing {
                t.next_restart = Some((now + Duration::from_secs(1), Duration::from_secs(2)));
            }
            if finite {
                t.runs = first_runs(state, &started, now);
            }
            let wake = [t.due, t.next_restart.map(|(at, _)| at)]
                .into_iter()
                .flatten()
                .chain(t.runs.iter().filter_map(Run::wake))
                .min();
            self.learn(key, started);
            return wake;
        }
        if phase != "Running" {
            return None;
        }
        if runs::finite(&pod) {
            return self.look_at_runs(state, key, now);
        }
        let mut retry = false;
        let crashing = failing(&pod);
        let mut pod = pod;
        if let Some(due) = t.due
            && now >= due
            && !crashing
        {
            match set_ready(state, &target, &pod) {
                Some(ready) => {
                    t.due = None;
                    pod = ready;
                }
                None => retry = true,
            }
        }
        if let Some((at, backoff)) = t.next_restart
            && now >= at
        {
            match restart(state, &target, &pod) {
                Some(restarted) => {
                    t.next_restart = Some((now + backoff, (backoff * 2).min(Duration::from_secs(30))));
                    pod = restarted;
                }
                None => retry = true,
            }
        }
        let due = t.due.filter(|_| !crashing);
        let wake = [due, t.next_restart.map(|(at, _)| at), retry.then(|| now + RETRY)].into_iter().flatten().min();
        self.learn(key, pod);
        wake
    }
}

impl Kubelet {
    /// A running pod whose containers end: each container's run ends, backs off and restarts
    /// as due, and the status is written when it differs from what the pod shows (also after a
    /// write lost to a conflict: the pod's next change brings it back).
    /// A pod being deleted: its grace period waited out (or cut short by its end), its
    /// containers killed and its terminal status written, then the final delete.
    /// A pending pod bound to a node, its start due after the configured delay.
    fn schedule(&mut self, state: &State, key: &Key, target: Target, pod: &Value, now: Instant) -> Option<Instant> {
        // The first of the least loaded in name order, as the map is ordered, of the nodes
        // that take pods: a cordoned node (spec.unschedulable, `kubectl cordon`/`drain`)
        // does not. With none, the pod waits, looked at again shortly.
        let Some(chosen) = self
            .load
            .iter()
            .filter(|(n, _)| schedulable(state, n, pod))
            .min_by_key(|(_, count)| **count)
            .map(|(n, _)| n.clone())
        else {
            return Some(now + UNSCHEDULABLE_RETRY);
        };
        let Some(bound) = bind(state, &target, pod, &chosen) else { return Some(now + RETRY) };
        let due = now + jitter(self.config.start_delay);
        let t = self.pods.get_mut(key)?;
        t.due = Some(due);
        self.learn(key, bound);
        Some(due)
    }

    fn terminate(&mut self, state: &State, key: &Key, target: Target, now: Instant) -> Option<Instant> {
        let t = self.pods.get_mut(key)?;
        let pod = t.pod.clone();
        let grace = pod.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_u64).unwrap_or(0);
        let since = *t.terminating_since.get_or_insert(now);
        let at = since + Duration::from_secs(grace).min(self.config.grace_cap);
        let terminal = matches!(str_at(&pod, "/status/phase"), "Succeeded" | "Failed");
        if now < at && !terminal {
            return Some(at);
        }
        // A pod that runs to completion ends terminal: its running containers are killed,
        // and the phase written before it goes (a finalizer may keep it, as a Job's does).
        if !terminal && !t.runs.is_empty() {
            let now_str = state.now_rfc3339();
            t.runs.iter_mut().for_each(|r| r.kill(&now_str));
            let mut killed = (*pod).clone();
            killed["status"] = runs::pod_status(&pod, &t.runs, false, &now_str);
            match api::update_status(state, &target, killed, false, api::Ownership::Unrecorded) {
                Ok(written) => {
                    self.learn(key, written);
                }
                Err(e) if e.is_not_found() => return None,
                Err(e) => {
                    tracing::debug!(pod = %target.name, "kubelet: terminal status: {e}");
                    return Some(now + RETRY);
                }
            }
        }
        let opts = DeleteOptions { grace_period_seconds: Some(0), ..Default::default() };
        match api::delete(state, &target, &opts) {
            // Gone, or held by finalizers: their removal is a change that brings it back.
            Ok(_) => None,
            Err(e) if e.is_not_found() => None,
            Err(e) => {
                tracing::debug!(pod = %target.name, "kubelet: final delete: {e}");
                Some(now + RETRY)
            }
        }
    }

    fn look_at_runs(&mut self, state: &State, key: &Key, now: Instant) -> Option<Instant> {
        let t = self.pods.get_mut(key)?;
        let pod = t.pod.clone();
        let target = Target { rt: self.pods_rt.clone(), namespace: key.namespace.clone(), name: key.name.clone() };
        if t.runs.is_empty() {
            // Started before this kubelet knew it (a pod created Running): its runs start now.
            t.runs = first_runs(state, &pod, now);
        }
        let now_str = state.now_rfc3339();
        let earlier = runs::earlier_runs(&pod);
        for run in &mut t.runs {
            // A run of no time ends at once, and a restart after no back-off starts at once:
            // a few steps at most.
            for _ in 0..4 {
                match &run.state {
                    RunState::Running { started, ends: Some(ends), exit } if now >= *ends => {
                        let exit = Exit {
                            code: *exit,
                            started: started.clone(),
                            finished: now_str.clone(),
                            id: run.id.clone(),
                        };
                        run.exited(&pod, exit, now, |d| state.real(d));
                    }
                    RunState::BackOff { until, .. } if now >= *until => {
                        run.restarts += 1;
                        run.id = container_id(state);
                        let (plan, problems) = runs::plan(&pod, &run.name, &run.image, earlier + run.restarts as usize);
                        warn_steering(&target, &problems);
                        run.state = RunState::Running {
                            started: now_str.clone(),
                            ends: plan.run.map(|d| now + state.real(d)),
                            exit: plan.exit,
                        };
                    }
                    _ => break,
                }
            }
        }
        let ready = t.due.is_none_or(|due| now >= due);
        if ready {
            t.due = None;
        }
        let status = runs::pod_status(&pod, &t.runs, ready, &now_str);
        let mut wake: Option<Instant> = t.runs.iter().filter_map(Run::wake).chain(t.due).min();
        if pod.get("status") != Some(&status) {
            let mut updated = (*pod).clone();
            updated["status"] = status;
            match api::update_status(state, &target, updated, false, api::Ownership::Unrecorded) {
                Ok(written) => {
                    self.learn(key, written);
                }
                Err(e) if e.is_not_found() => return None,
                Err(e) => {
                    tracing::debug!(pod = %target.name, "kubelet: status: {e}");
                    wake = Some(wake.map_or(now + RETRY, |w| w.min(now + RETRY)));
                }
            }
        }
        wake
    }
}

/// A fresh container ID, as the runtime gives each run of a container.
fn container_id(state: &State) -> String {
    let mut id = [0u8; 16];
    state.fill(&mut id);
    format!("containerd://{}", hex::encode(id))
}

/// Says, at warn, what in a pod's steering annotations was not understood (the default was
/// taken).
fn warn_steering(target: &Target, problems: &[String]) {
    for p in problems {
        tracing::warn!(pod = %format!("{}/{}", target.namespace, target.name), "kubelet: {p}; the default applies");
    }
}

/// The runs of a pod whose containers have just started (as `started` shows them).
fn first_runs(state: &State, started: &Value, now: Instant) -> Vec<Run> {
    let target_name = format!("{}/{}", str_at(started, "/metadata/namespace"), str_at(started, "/metadata/name"));
    let earlier = runs::earlier_runs(started);
    let statuses = started.pointer("/status/containerStatuses").and_then(Value::as_array).cloned().unwrap_or_default();
    let containers = started.pointer("/spec/containers").and_then(Value::as_array).cloned().unwrap_or_default();
    containers
        .iter()
        .map(|c| {
            let name = str_at(c, "/name");
            let image = str_at(c, "/image");
            let status = statuses.iter().find(|s| str_at(s, "/name") == name);
            let (plan, problems) = runs::plan(started, name, image, earlier);
            for p in problems {
                tracing::warn!(pod = %target_name, "kubelet: {p}; the default applies");
            }
            let started_at = status
                .map(|s| str_at(s, "/state/running/startedAt"))
                .filter(|s| !s.is_empty())
                .map(String::from)
                .unwrap_or_else(|| state.now_rfc3339());
            Run {
                name: name.into(),
                image: image.into(),
                image_id: status.map(|s| str_at(s, "/imageID").to_string()).unwrap_or_default(),
                id: status.map(|s| str_at(s, "/containerID").to_string()).unwrap_or_else(|| container_id(state)),
                restarts: 0,
                state: RunState::Running {
                    started: started_at,
                    ends: plan.run.map(|d| now + state.real(d)),
                    exit: plan.exit,
                },
                last: None,
            }
        })
        .collect()
}

pub(crate) async fn run(state: Arc<State>, config: KubeletConfig) {
    let nodes = state.registry.lookup("", "v1", "nodes");
    for i in 1..=config.nodes {
        if let Some(rt) = &nodes
            && let Err(e) = api::create(&state, rt, "", node(&state, i), false, api::Ownership::Unrecorded)
            && e.code != 409
        {
            tracing::warn!("cannot register simulated node {}: {e}", node_name(i));
        }
    }
    let Some(pods_rt) = state.registry.lookup("", "v1", "pods") else { return };
    let mut kubelet = Kubelet::new(config, pods_rt);
    let (mut changes, initial) = Subscription::start(&state.store, Some("/pods"));
    for event in &initial {
        kubelet.apply(event);
    }
    loop {
        kubelet.step(&state, Instant::now());
        let next = kubelet.timers.first().map(|(at, _)| *at);
        match changes.next(next).await {
            Changes::Events(events) => events.iter().for_each(|e| kubelet.apply(e)),
            Changes::Reset(events) => kubelet.reset(&events),
        }
    }
}

/// How soon a pod no node would take is looked at again (a node's uncordoning is not a pod
/// change).
const UNSCHEDULABLE_RETRY: Duration = Duration::from_secs(1);

/// Whether the scheduler may bind the pod to the node: it is not cordoned (spec.unschedulable),
/// or the pod tolerates the `node.kubernetes.io/unschedulable:NoSchedule` taint, as the
/// scheduler's NodeUnschedulable plugin decides. (A simulated node whose Node object is gone
/// still takes pods, as it always has here: the kubelet's nodes are fixed by its configuration.)
fn schedulable(state: &State, node: &str, pod: &Value) -> bool {
    let key = Key { id: "/nodes".into(), namespace: String::new(), name: node.into() };
    let cordoned =
        state.store.get(&key).is_some_and(|n| n.pointer("/spec/unschedulable").and_then(Value::as_bool) == Some(true));
    !cordoned || tolerates_unschedulable(pod)
}

/// `TolerationsTolerateTaint` for the taint of a cordoned node.
fn tolerates_unschedulable(pod: &Value) -> bool {
    const KEY: &str = "node.kubernetes.io/unschedulable";
    pod.pointer("/spec/tolerations").and_then(Value::as_array).is_some_and(|ts| {
        ts.iter().any(|t| {
            let effect_ok = matches!(str_at(t, "/effect"), "" | "NoSchedule");
            let key_ok = match str_at(t, "/operator") {
                "Exists" => matches!(str_at(t, "/key"), "" | KEY),
                "" | "Equal" => str_at(t, "/key") == KEY && str_at(t, "/value").is_empty(),
                _ => false,
            };
            effect_ok && key_ok
        })
    })
}

/// The image tag that never becomes ready.
fn failing(pod: &Value) -> bool {
    pod.pointer("/spec/containers")
        .and_then(Value::as_array)
        .is_some_and(|cs| cs.iter().any(|c| str_at(c, "/image").rsplit_once(':').is_some_and(|(_, tag)| tag == "fail")))
}

fn condition(t: &str, status: &str, now: &str) -> Value {
    json!({"type": t, "status": status, "lastProbeTime": null, "lastTransitionTime": now})
}

/// The pod as written, if it was.
fn bind(state: &State, target: &Target, pod: &Value, node: &str) -> Option<Arc<Value>> {
    let now = state.now_rfc3339();
    let mut bound = pod.clone();
    bound["spec"]["nodeName"] = json!(node);
    api::update(state, target, bound, false, api::Ownership::Unrecorded).ok()?;
    let current = api::get(state, target).ok()?;
    let mut status = (*current).clone();
    status["status"]["conditions"] = json!([condition("PodScheduled", "True", &now)]);
    api::update_status(state, target, status, false, api::Ownership::Unrecorded).ok()
}

fn container_status(c: &Value, now: &str, ready: bool) -> Value {
    let image = str_at(c, "/image");
    let mut id = [0u8; 16];
    let _ = getrandom::fill(&mut id);
    json!({
        "name": str_at(c, "/name"),
        "image": image,
        "imageID": format!("{image}@sha256:{}", hex::encode([id, id].concat())),
        "containerID": format!("containerd://{}", hex::encode(id)),
        "ready": ready,
        "started": true,
        "restartCount": 0,
        "state": {"running": {"startedAt": now}},
        "lastState": {},
    })
}

fn start(state: &State, target: &Target, pod: &Value, ip_seq: u32, ready: bool, crashing: bool) -> Option<Arc<Value>> {
    let now = state.now_rfc3339();
    let node = str_at(pod, "/spec/nodeName");
    let node_index: u32 = node.rsplit('-').next().and_then(|n| n.parse().ok()).unwrap_or(0);
    let pod_ip = format!("10.244.{node_index}.{}", 2 + ip_seq % 250);
    let host_ip = format!("10.0.0.{}", 10 + node_index);
    let containers = pod.pointer("/spec/containers").and_then(Value::as_array).cloned().unwrap_or_default();
    let statuses: Vec<Value> = containers
        .iter()
        .map(|c| {
            let mut s = container_status(c, &now, ready);
            if crashing {
                s["started"] = json!(false);
                s["state"] = json!({"waiting": {"reason": "CrashLoopBackOff",
                    "message": format!("back-off 10s restarting failed container={} pod={}", str_at(c, "/name"), target.name)}});
                s["lastState"] = json!({"terminated": {"exitCode": 1, "reason": "Error", "startedAt": now, "finishedAt": now}});
            }
            s
        })
        .collect();
    let ready_str = if ready { "True" } else { "False" };
    let mut updated = pod.clone();
    let mut conditions = vec![
        condition("PodReadyToStartContainers", "True", &now),
        condition("Initialized", "True", &now),
        condition("Ready", ready_str, &now),
        condition("ContainersReady", ready_str, &now),
        condition("PodScheduled", "True", &now),
    ];
    if !ready {
        let names: Vec<&str> = containers.iter().map(|c| str_at(c, "/name")).collect();
        for c in conditions.iter_mut().filter(|c| c["type"] == "Ready" || c["type"] == "ContainersReady") {
            c["reason"] = json!("ContainersNotReady");
            c["message"] = json!(format!("containers with unready status: [{}]", names.join(" ")));
        }
    }
    updated["status"]["phase"] = json!("Running");
    updated["status"]["conditions"] = json!(conditions);
    updated["status"]["hostIP"] = json!(host_ip);
    updated["status"]["hostIPs"] = json!([{"ip": host_ip}]);
    updated["status"]["podIP"] = json!(pod_ip);
    updated["status"]["podIPs"] = json!([{"ip": pod_ip}]);
    updated["status"]["startTime"] = json!(now);
    updated["status"]["containerStatuses"] = json!(statuses);
    api::update_status(state, target, updated, false, api::Ownership::Unrecorded).ok()
}

fn set_ready(state: &State, target: &Target, pod: &Value) -> Option<Arc<Value>> {
    let now = state.now_rfc3339();
    let mut updated = pod.clone();
    if let Some(conds) = updated.pointer_mut("/status/conditions").and_then(Value::as_array_mut) {
        for c in conds.iter_mut().filter(|c| c["type"] == "Ready" || c["type"] == "ContainersReady") {
            *c = condition(c["type"].as_str().unwrap_or("Ready"), "True", &now);
        }
    }
    if let Some(statuses) = updated.pointer_mut("/status/containerStatuses").and_then(Value::as_array_mut) {
        for s in statuses {
            s["ready"] = json!(true);
        }
    }
    api::update_status(state, target, updated, false, api::Ownership::Unrecorded).ok()
}

fn restart(state: &State, target: &Target, pod: &Value) -> Option<Arc<Value>> {
    let mut updated = pod.clone();
    if let Some(statuses) = updated.pointer_mut("/status/containerStatuses").and_then(Value::as_array_mut) {
        for s in statuses {
            let n = s["restartCount"].as_i64().unwrap_or(0) + 1;
            s["restartCount"] = json!(n);
        }
    }
    api::update_status(state, target, updated, false, api::Ownership::Unrecorded).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::test_state;

    fn state() -> State {
        test_state()
    }

    fn pod(name: &str, image: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
               "spec": {"containers": [{"name": "c", "image": image}], "terminationGracePeriodSeconds": 1}})
    }

    fn get(state: &State, name: &str) -> Option<Arc<Value>> {
        state.store.get(&Key { id: "/pods".into(), namespace: "default".into(), name: name.into() })
    }

    /// Runs the kubelet as its loop does until `done` holds.
    async fn until(
        state: &State,
        kubelet: &mut Kubelet,
        changes: &mut Subscription<'_>,
        done: impl Fn(&State) -> bool,
    ) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while !done(state) {
            assert!(Instant::now() < deadline, "the kubelet does not get there");
            kubelet.step(state, Instant::now());
            let next =
                kubelet.timers.first().map(|(at, _)| *at).unwrap_or_else(|| Instant::now() + Duration::from_millis(20));
            match changes.next(Some(next.min(Instant::now() + Duration::from_millis(20)))).await {
                Changes::Events(events) => events.iter().for_each(|e| kubelet.apply(e)),
                Changes::Reset(events) => kubelet.reset(&events),
            }
        }
    }

    #[tokio::test]
    async fn pods_are_spread_started_crash_looped_and_finished_from_changes_alone() {
        let state = state();
        let config =
            KubeletConfig { nodes: 3, start_delay: Duration::from_millis(10), grace_cap: Duration::from_millis(200) };
        let rt = state.registry.lookup("", "v1", "pods").unwrap();
        let mut kubelet = Kubelet::new(config, rt.clone());
        let (mut changes, initial) = Subscription::start(&state.store, Some("/pods"));
        initial.iter().for_each(|e| kubelet.apply(e));

        for i in 0..6 {
            api::create(&state, &rt, "default", pod(&format!("p{i}"), "app:1"), false, api::Ownership::Unrecorded)
                .unwrap();
        }
        api::create(&state, &rt, "default", pod("crash", "app:fail"), false, api::Ownership::Unrecorded).unwrap();
        let ready = |p: &Value| {
            p.pointer("/status/conditions")
                .and_then(Value::as_array)
                .is_some_and(|cs| cs.iter().any(|c| c["type"] == "Ready" && c["status"] == "True"))
        };
        until(&state, &mut kubelet, &mut changes, |s| {
            (0..6).all(|i| get(s, &format!("p{i}")).is_some_and(|p| ready(&p)))
        })
        .await;
        let mut per_node: BTreeMap<String, usize> = BTreeMap::new();
        for i in 0..6 {
            *per_node.entry(str_at(&get(&state, &format!("p{i}")).unwrap(), "/spec/nodeName").into()).or_default() += 1;
        }
        assert!(per_node.values().all(|n| *n <= 3) && per_node.len() == 3, "{per_node:?}");
        assert_eq!(kubelet.load.values().sum::<usize>(), 7, "counted as bound");

        let restarts = |s: &State| {
            get(s, "crash").and_then(|p| p.pointer("/status/containerStatuses/0/restartCount").and_then(Value::as_i64))
        };
        until(&state, &mut kubelet, &mut changes, |s| restarts(s).is_some_and(|n| n >= 1)).await;
        assert!(!ready(&get(&state, "crash").unwrap()));

        // Nothing changed and nothing due but the crash loop: a step looks at no pod.
        kubelet.step(&state, Instant::now());
        assert!(kubelet.dirty.is_empty());
        assert!(kubelet.timers.iter().all(|(_, k)| k.name == "crash"), "{:?}", kubelet.timers);

        let target = Target { rt: rt.clone(), namespace: "default".into(), name: "p0".into() };
        api::delete(&state, &target, &DeleteOptions::default()).map(drop).unwrap();
        assert!(get(&state, "p0").unwrap()["metadata"]["deletionTimestamp"].is_string(), "graceful");
        until(&state, &mut kubelet, &mut changes, |s| get(s, "p0").is_none()).await;
        // The deletion's own change, if the loop stopped before it came.
        if let Changes::Events(events) = changes.next(Some(Instant::now() + Duration::from_millis(50))).await {
            events.iter().for_each(|e| kubelet.apply(e));
        }
        assert_eq!(kubelet.load.values().sum::<usize>(), 6, "a deleted pod no longer counts");
        assert!(!kubelet.pods.contains_key(&target.key()));
    }

    /// A state on a test clock a hundred times as fast as the system's, so back-offs of
    /// seconds take milliseconds.
    fn fast_state() -> State {
        let epoch = jiff::Timestamp::now();
        let clock = wasmcm_core::clock::Clock::test(epoch, epoch, 100.0).unwrap();
        let sources = crate::state::Sources::System(clock);
        let state = State::new(
            crate::storage::store::Store::default(),
            sources,
            crate::controllers::control_plane::sync_crd_api_services,
        );
        crate::bootstrap::bootstrap(&state).expect("bootstrap");
        state
    }

    fn job_pod(name: &str, policy: &str, annotations: Value) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "annotations": annotations},
               "spec": {"restartPolicy": policy, "containers": [{"name": "c", "image": "busybox"}],
                        "terminationGracePeriodSeconds": 30}})
    }

    #[tokio::test]
    async fn pods_that_do_not_restart_always_run_to_completion() {
        let state = fast_state();
        let config =
            KubeletConfig { nodes: 2, start_delay: Duration::from_millis(10), grace_cap: Duration::from_millis(100) };
        let rt = state.registry.lookup("", "v1", "pods").unwrap();
        let mut kubelet = Kubelet::new(config, rt.clone());
        let (mut changes, initial) = Subscription::start(&state.store, Some("/pods"));
        initial.iter().for_each(|e| kubelet.apply(e));
        let create = |pod: Value| api::create(&state, &rt, "default", pod, false, api::Ownership::Unrecorded).unwrap();

        create(job_pod("ok", "Never", json!({})));
        create(job_pod("bad", "Never", json!({"wasmcm.dev/exit-code": "3"})));
        create(job_pod("retry", "OnFailure", json!({"wasmcm.dev/exit-code": "1 0"})));
        create(job_pod("long", "Never", json!({"wasmcm.dev/run-seconds": "100000"})));
        create(pod("web", "nginx:1"));
        let phase = |s: &State, name: &str| get(s, name).map(|p| str_at(&p, "/status/phase").to_string());
        until(&state, &mut kubelet, &mut changes, |s| {
            ["ok", "bad", "retry"].iter().all(|n| matches!(phase(s, n).as_deref(), Some("Succeeded" | "Failed")))
                && phase(s, "long").as_deref() == Some("Running")
        })
        .await;

        let ok = get(&state, "ok").unwrap();
        assert_eq!(ok["status"]["phase"], "Succeeded");
        assert_eq!(ok["status"]["containerStatuses"][0]["state"]["terminated"]["reason"], "Completed");
        let bad = get(&state, "bad").unwrap();
        assert_eq!(bad["status"]["phase"], "Failed");
        assert_eq!(bad["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 3);
        let ready = bad["status"]["conditions"].as_array().unwrap().iter().find(|c| c["type"] == "Ready").cloned();
        assert_eq!(ready.unwrap()["reason"], "PodFailed");
        // OnFailure: the failed run restarted once (after the back-off), then succeeded.
        let retry = get(&state, "retry").unwrap();
        assert_eq!(retry["status"]["phase"], "Succeeded");
        assert_eq!(retry["status"]["containerStatuses"][0]["restartCount"], 1);
        assert_eq!(retry["status"]["containerStatuses"][0]["lastState"]["terminated"]["exitCode"], 1);
        assert_eq!(phase(&state, "web").as_deref(), Some("Running"), "restartPolicy Always runs on");

        // A running pod deleted while a finalizer holds it: killed, written Failed, kept.
        let target = Target { rt: rt.clone(), namespace: "default".into(), name: "long".into() };
        let mut held = (*get(&state, "long").unwrap()).clone();
        held["metadata"]["finalizers"] = json!(["batch.kubernetes.io/job-tracking"]);
        api::update(&state, &target, held, false, api::Ownership::Unrecorded).unwrap();
        api::delete(&state, &target, &DeleteOptions::default()).map(drop).unwrap();
        until(&state, &mut kubelet, &mut changes, |s| phase(s, "long").as_deref() == Some("Failed")).await;
        let long = get(&state, "long").unwrap();
        assert_eq!(long["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 137);
        assert!(long["metadata"]["deletionTimestamp"].is_string(), "held by its finalizer");
    }
}
