//! The simulated scheduler and kubelet: virtual Nodes, pods bound to the least loaded node,
//! started after a short jittered delay, graceful deletion finished after a capped grace
//! period. Writes through `api` like any client would, with resourceVersion preconditions;
//! a conflict is simply retried on the next pass.
//!
//! Test hooks, documented in the README: an image whose tag is `fail` crash-loops (never
//! Ready, restartCount grows with backoff); the annotation `wasmcm.dev/ready-after-seconds: N`
//! keeps a started pod not Ready for N seconds.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use wasmcm_core::str_at;

use super::State;
use super::api::{self, DeleteOptions, Target};
use super::query::Filter;

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

#[derive(Default)]
struct PodTrack {
    /// When the pod starts (bound and pending) or, once running, turns ready.
    due: Option<Instant>,
    /// Crash-looping: when the next restart is counted, and the backoff after it.
    next_restart: Option<(Instant, Duration)>,
    terminating_since: Option<Instant>,
}

pub(crate) async fn run(state: Arc<State>, config: KubeletConfig) {
    let nodes = state.registry.lookup("", "v1", "nodes");
    for i in 1..=config.nodes {
        if let Some(rt) = &nodes
            && let Err(e) = api::create(&state, rt, "", node(&state, i), false)
            && e.code != 409
        {
            tracing::warn!("cannot register simulated node {}: {e}", node_name(i));
        }
    }
    let Some(pods_rt) = state.registry.lookup("", "v1", "pods") else { return };
    let mut tracks: HashMap<String, PodTrack> = HashMap::new();
    let mut ip_seq: u32 = 0;
    loop {
        let notified = state.store.changed.notified();
        tokio::select! {
            _ = notified => {}
            _ = tokio::time::sleep(Duration::from_millis(100)) => {}
        }
        // Let a burst of writes settle before one pass over the pods.
        tokio::time::sleep(Duration::from_millis(20)).await;
        let (pods, _) = state.store.list("/pods", None, &Filter::for_type("/pods"));
        let mut load: HashMap<String, usize> = (1..=config.nodes).map(|i| (node_name(i), 0)).collect();
        for p in &pods {
            if let Some(n) = load.get_mut(str_at(p, "/spec/nodeName")) {
                *n += 1;
            }
        }
        let live: std::collections::HashSet<&str> = pods.iter().map(|p| str_at(p, "/metadata/uid")).collect();
        tracks.retain(|uid, _| live.contains(uid.as_str()));
        let now = Instant::now();
        for pod in &pods {
            let uid = str_at(pod, "/metadata/uid").to_string();
            let target = Target {
                rt: pods_rt.clone(),
                namespace: str_at(pod, "/metadata/namespace").into(),
                name: str_at(pod, "/metadata/name").into(),
            };
            let track = tracks.entry(uid).or_default();
            if pod.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null()) {
                let grace = pod.pointer("/metadata/deletionGracePeriodSeconds").and_then(Value::as_u64).unwrap_or(0);
                let since = *track.terminating_since.get_or_insert(now);
                if now.duration_since(since) >= Duration::from_secs(grace).min(config.grace_cap) {
                    let opts = DeleteOptions { grace_period_seconds: Some(0), ..Default::default() };
                    if let Err(e) = api::delete(&state, &target, &opts)
                        && !e.is_not_found()
                    {
                        tracing::debug!(pod = %target.name, "kubelet: final delete: {e}");
                    }
                }
                continue;
            }
            // A pod the defaulting has not touched yet has no phase: it is pending.
            let phase = match str_at(pod, "/status/phase") {
                "" => "Pending",
                p => p,
            };
            let node = str_at(pod, "/spec/nodeName");
            if node.is_empty() {
                if phase == "Pending" {
                    let Some(chosen) = load.iter().min_by_key(|(n, c)| (**c, (*n).clone())).map(|(n, _)| n.clone())
                    else {
                        continue;
                    };
                    if bind(&state, &target, pod, &chosen) {
                        *load.entry(chosen).or_default() += 1;
                        track.due = Some(now + jitter(config.start_delay));
                    }
                }
                continue;
            }
            if phase == "Pending" {
                let due = *track.due.get_or_insert_with(|| now + jitter(config.start_delay));
                if now >= due {
                    ip_seq = ip_seq.wrapping_add(1);
                    let ready_after = pod
                        .pointer(&format!("/metadata/annotations/{}", READY_AFTER_ANNOTATION.replace('/', "~1")))
                        .and_then(Value::as_str)
                        .and_then(|s| s.parse::<u64>().ok())
                        .unwrap_or(0);
                    let crashing = failing(pod);
                    let ready_now = ready_after == 0 && !crashing;
                    if start(&state, &target, pod, ip_seq, ready_now, crashing) {
                        track.due = (ready_after > 0).then(|| now + Duration::from_secs(ready_after));
                        if crashing {
                            track.next_restart = Some((now + Duration::from_secs(1), Duration::from_secs(2)));
                        }
                    }
                }
                continue;
            }
            if phase == "Running" {
                if let Some(due) = track.due
                    && now >= due
                    && !failing(pod)
                    && set_ready(&state, &target, pod)
                {
                    track.due = None;
                }
                if let Some((at, backoff)) = track.next_restart
                    && now >= at
                    && restart(&state, &target, pod)
                {
                    track.next_restart = Some((now + backoff, (backoff * 2).min(Duration::from_secs(30))));
                }
            }
        }
    }
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

fn bind(state: &State, target: &Target, pod: &Value, node: &str) -> bool {
    let now = state.now_rfc3339();
    let mut bound = pod.clone();
    bound["spec"]["nodeName"] = json!(node);
    if api::update(state, target, bound, false).is_err() {
        return false;
    }
    let Ok(current) = api::get(state, target) else { return false };
    let mut status = (*current).clone();
    status["status"]["conditions"] = json!([condition("PodScheduled", "True", &now)]);
    api::update_status(state, target, status, false).is_ok()
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

fn start(state: &State, target: &Target, pod: &Value, ip_seq: u32, ready: bool, crashing: bool) -> bool {
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
    api::update_status(state, target, updated, false).is_ok()
}

fn set_ready(state: &State, target: &Target, pod: &Value) -> bool {
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
    api::update_status(state, target, updated, false).is_ok()
}

fn restart(state: &State, target: &Target, pod: &Value) -> bool {
    let mut updated = pod.clone();
    if let Some(statuses) = updated.pointer_mut("/status/containerStatuses").and_then(Value::as_array_mut) {
        for s in statuses {
            let n = s["restartCount"].as_i64().unwrap_or(0) + 1;
            s["restartCount"] = json!(n);
        }
    }
    api::update_status(state, target, updated, false).is_ok()
}
