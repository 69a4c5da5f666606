//! A tiny world for driving the Deployment controller natively: it applies an outcome's writes
//! to an in-memory cluster with API semantics that matter here (uids, resourceVersions,
//! creation order, status subresource) and can play the ReplicaSet controller.

use std::collections::BTreeMap;

use serde_json::{Value, json};
use wasmcm_deployment::DeploymentController;
use wasmcm_deployment::fixtures::{NAMESPACE, cache, request};
use wasmcm_guest::{Controller, Event, Intent, Outcome, Request};

pub fn parse(s: &str) -> Value {
    serde_json::from_str(s).expect("intents carry JSON")
}

pub fn reconcile(objects: &[Value]) -> Outcome {
    reconcile_req(&request("web"), objects)
}

pub fn reconcile_req(req: &Request, objects: &[Value]) -> Outcome {
    DeploymentController::reconcile(req, &cache(objects)).expect("reconcile succeeds")
}

pub fn creates(o: &Outcome) -> Vec<Value> {
    o.intents().filter_map(|i| if let Intent::Create(s) = i { Some(parse(s)) } else { None }).collect()
}

pub fn updates(o: &Outcome) -> Vec<Value> {
    o.intents().filter_map(|i| if let Intent::Update(s) = i { Some(parse(s)) } else { None }).collect()
}

pub fn deletes(o: &Outcome) -> Vec<String> {
    o.intents().filter_map(|i| if let Intent::Delete(d) = i { Some(d.target.name.clone()) } else { None }).collect()
}

pub fn status_write(o: &Outcome) -> Option<Value> {
    o.intents().find_map(|i| if let Intent::UpdateStatus(s) = i { Some(parse(s)) } else { None })
}

pub fn events(o: &Outcome) -> Vec<Event> {
    o.intents().filter_map(|i| if let Intent::Event(e) = i { Some(e.clone()) } else { None }).collect()
}

pub fn messages(o: &Outcome) -> Vec<String> {
    events(o).into_iter().map(|e| e.message).collect()
}

/// `name → spec.replicas` of the ReplicaSets an outcome creates or updates.
pub fn sizes(o: &Outcome) -> BTreeMap<String, i64> {
    creates(o)
        .into_iter()
        .chain(updates(o))
        .filter(|v| v["kind"] == "ReplicaSet")
        .map(|v| (v["metadata"]["name"].as_str().unwrap().to_string(), v["spec"]["replicas"].as_i64().unwrap()))
        .collect()
}

/// The Progressing (or other) condition of a status write.
pub fn condition(status_write: &Value, t: &str) -> Value {
    status_write["status"]["conditions"]
        .as_array()
        .and_then(|cs| cs.iter().find(|c| c["type"] == t).cloned())
        .unwrap_or(Value::Null)
}

/// Objects by (kind, name), in one namespace.
#[derive(Clone, Default)]
pub struct World {
    pub objects: BTreeMap<(String, String), Value>,
    seq: u64,
}

impl World {
    pub fn new(objects: &[Value]) -> Self {
        let mut w = World::default();
        for o in objects {
            w.put(o.clone());
        }
        w
    }

    fn key(v: &Value) -> (String, String) {
        (v["kind"].as_str().unwrap().to_string(), v["metadata"]["name"].as_str().unwrap().to_string())
    }

    pub fn put(&mut self, v: Value) {
        self.objects.insert(Self::key(&v), v);
    }

    pub fn get(&self, kind: &str, name: &str) -> &Value {
        &self.objects[&(kind.to_string(), name.to_string())]
    }

    pub fn get_mut(&mut self, kind: &str, name: &str) -> &mut Value {
        self.objects.get_mut(&(kind.to_string(), name.to_string())).expect("object exists")
    }

    pub fn all(&self) -> Vec<Value> {
        self.objects.values().cloned().collect()
    }

    pub fn of_kind(&self, kind: &str) -> Vec<&Value> {
        self.objects.values().filter(|v| v["kind"] == kind).collect()
    }

    pub fn deployment(&self) -> &Value {
        self.get("Deployment", "web")
    }

    pub fn reconcile(&self) -> Outcome {
        reconcile(&self.all())
    }

    fn next_rv(&mut self) -> String {
        self.seq += 1;
        (1000 + self.seq).to_string()
    }

    /// Applies every write of `o` (all batches succeed), as the API server would.
    pub fn apply(&mut self, o: &Outcome) {
        for intent in o.intents() {
            match intent {
                Intent::Create(s) => {
                    let mut v = parse(s);
                    let rv = self.next_rv();
                    let m = &mut v["metadata"];
                    m["uid"] = format!("uid-{}", m["name"].as_str().unwrap()).into();
                    m["resourceVersion"] = rv.into();
                    m["generation"] = 1.into();
                    // Later creations are younger: minutes after the fixtures' timestamps.
                    m["creationTimestamp"] = format!("2026-06-01T11:{:02}:00Z", self.seq.min(59)).into();
                    v["status"] = json!({});
                    self.put(v);
                }
                Intent::Update(s) => {
                    let mut v = parse(s);
                    let current = self.get(v["kind"].as_str().unwrap(), v["metadata"]["name"].as_str().unwrap());
                    assert_eq!(
                        v["metadata"]["resourceVersion"], current["metadata"]["resourceVersion"],
                        "stale update"
                    );
                    let spec_changed = v["spec"] != current["spec"];
                    let generation = current["metadata"]["generation"].as_i64().unwrap_or(1);
                    v["status"] = current["status"].clone();
                    v["metadata"]["generation"] = (generation + i64::from(spec_changed)).into();
                    v["metadata"]["resourceVersion"] = self.next_rv().into();
                    self.put(v);
                }
                Intent::UpdateStatus(s) => {
                    let v = parse(s);
                    let rv = self.next_rv();
                    let current = self.get_mut(v["kind"].as_str().unwrap(), v["metadata"]["name"].as_str().unwrap());
                    assert_eq!(
                        v["metadata"]["resourceVersion"], current["metadata"]["resourceVersion"],
                        "stale status"
                    );
                    current["status"] = v["status"].clone();
                    if current["kind"] == "Deployment" {
                        current["metadata"]["annotations"] = v["metadata"]["annotations"].clone();
                    }
                    current["metadata"]["resourceVersion"] = rv.into();
                }
                Intent::Delete(d) => {
                    self.objects.remove(&(d.target.kind.kind.clone(), d.target.name.clone()));
                }
                Intent::Event(_) | Intent::Patch(_) => {}
            }
        }
    }

    /// Plays the ReplicaSet controller and kubelet: every ReplicaSet's pods exist, and the
    /// first `available(name, replicas)` of them are available.
    pub fn settle(&mut self, available: impl Fn(&str, i64) -> i64) {
        for ((kind, name), rs) in self.objects.iter_mut() {
            if kind != "ReplicaSet" {
                continue;
            }
            let replicas = rs["spec"]["replicas"].as_i64().unwrap_or(1);
            let avail = available(name, replicas).min(replicas);
            rs["status"] = json!({"replicas": replicas, "fullyLabeledReplicas": replicas, "readyReplicas": avail,
                                  "availableReplicas": avail, "observedGeneration": rs["metadata"]["generation"]});
        }
    }

    /// Reconciles and applies until nothing is written, settling ReplicaSets between steps
    /// with `available`, checking `invariant` after every step; returns the steps taken.
    pub fn converge(&mut self, available: impl Fn(&str, i64) -> i64, mut invariant: impl FnMut(&World)) -> usize {
        for step in 0..100 {
            let o = self.reconcile();
            if o.batches.is_empty() {
                return step;
            }
            self.apply(&o);
            invariant(self);
            self.settle(&available);
            invariant(self);
        }
        panic!("the deployment did not converge in 100 steps");
    }

    pub fn replica_sets(&self) -> BTreeMap<String, (i64, i64)> {
        self.of_kind("ReplicaSet")
            .into_iter()
            .map(|rs| {
                (
                    rs["metadata"]["name"].as_str().unwrap().to_string(),
                    (
                        rs["spec"]["replicas"].as_i64().unwrap_or(1),
                        rs["status"]["availableReplicas"].as_i64().unwrap_or(0),
                    ),
                )
            })
            .collect()
    }

    /// Changes the deployment's spec as a user would (generation moves).
    pub fn edit(&mut self, patch: Value) {
        let d = self.get_mut("Deployment", "web");
        wasmcm_deployment::fixtures::merge(d, patch);
        let generation = d["metadata"]["generation"].as_i64().unwrap_or(1) + 1;
        d["metadata"]["generation"] = generation.into();
    }
}

pub const NS: &str = NAMESPACE;
