//! The world the Job controller's tests run in: the embedded API server's own write path
//! (`wasmcm_apiserver::Offline`: defaulting, validation of every write, the Job status
//! transition rules, patches, graceful deletion held by finalizers) at the fixtures' clock, the
//! controller's outcome applied to it batch by batch as the host does (a failing batch stops the
//! rest), and what was written tallied as upstream's `FakePodControl` tallies it.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use wasmcm_apiserver::Offline;
use wasmcm_guest::{Controller, Intent, Kind, MemoryCache, Outcome, PatchType, Request};
use wasmcm_job::JobController;
use wasmcm_job::fixtures::{NAMESPACE, now, request};

pub fn parse(s: &str) -> Value {
    serde_json::from_str(s).expect("intents carry JSON")
}

fn pod_kind() -> Kind {
    Kind::new("v1", "Pod")
}

fn job_kind() -> Kind {
    Kind::new("batch/v1", "Job")
}

/// What the writes of one or more reconciles did.
#[derive(Clone, Debug, Default)]
pub struct Tally {
    /// The pods created, as sent (upstream's `FakePodControl.Templates`: not those past its
    /// create limit).
    pub created: Vec<Value>,
    pub deleted: Vec<String>,
    /// Pod patches (finalizer removals, adoptions, releases), as upstream counts `Patches`: a
    /// retry repeating a patch is the same patch.
    pub pod_patches: usize,
    patched: BTreeSet<(String, String)>,
    /// Every status written, in order.
    pub statuses: Vec<Value>,
    /// (type, reason, message) of every event.
    pub events: Vec<(String, String, String)>,
    /// Why the last outcome stopped, if it did.
    pub failure: Option<String>,
    pub requeue_after_ms: Option<u64>,
}

impl Tally {
    pub fn event_reasons(&self) -> Vec<String> {
        self.events.iter().map(|(_, r, _)| r.clone()).collect()
    }

    /// The completion indexes of the pods created.
    pub fn created_indexes(&self) -> BTreeSet<i64> {
        self.created
            .iter()
            .filter_map(|p| p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"].as_str())
            .filter_map(|s| s.parse().ok())
            .collect()
    }
}

/// Which pod writes fail, as upstream's `FakePodControl{Err}` makes them (every pod write).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Faults {
    #[default]
    None,
    /// Every create, delete and patch of a pod fails.
    PodWrites,
    /// Creates beyond this many fail (upstream's `CreateLimit`).
    CreateLimit(usize),
}

pub struct World {
    pub api: Offline,
    pub faults: Faults,
    pub request: Request,
    created: usize,
}

impl World {
    pub fn new(objects: &[Value]) -> Self {
        let api = Offline::new(objects.to_vec(), now().timestamp()).expect("the world loads");
        World { api, faults: Faults::None, request: request("foobar"), created: 0 }
    }

    pub fn with_faults(mut self, faults: Faults) -> Self {
        self.faults = faults;
        self
    }

    pub fn cache(&self) -> MemoryCache {
        MemoryCache::from_objects(&self.api.objects()).expect("the server's objects")
    }

    pub fn job(&self) -> Value {
        self.api.get(&job_kind(), NAMESPACE, "foobar").expect("the job exists")
    }

    pub fn pods(&self) -> Vec<Value> {
        self.api.objects().into_iter().filter(|o| o["kind"] == "Pod").collect()
    }

    pub fn reconcile(&self) -> Outcome {
        JobController::reconcile(&self.request, &self.cache()).expect("reconcile succeeds")
    }

    /// Applies `o` batch by batch as the host's writer does, adding what it did to `tally`.
    pub fn apply(&mut self, o: &Outcome, tally: &mut Tally) {
        tally.requeue_after_ms = o.requeue_after_ms;
        tally.failure = None;
        for batch in &o.batches {
            let mut failure = None;
            for intent in batch {
                if let Err(e) = self.send(intent, tally) {
                    failure.get_or_insert(e);
                }
            }
            if let Some(f) = failure {
                tally.failure = Some(f);
                break;
            }
        }
        self.request.previous_failure = tally.failure.clone();
    }

    fn send(&mut self, intent: &Intent, tally: &mut Tally) -> Result<(), String> {
        let pods_fail = self.faults == Faults::PodWrites;
        match intent {
            Intent::Create(s) => {
                let p = parse(s);
                self.created += 1;
                // As FakePodControl records them: not past its limit, and before its error.
                if let Faults::CreateLimit(n) = self.faults
                    && self.created > n
                {
                    return Err(format!("not creating pod, limit {n} already reached"));
                }
                tally.created.push(p.clone());
                if pods_fail {
                    return Err("create: fake error".into());
                }
                self.api.create(p).map(drop).map_err(|e| format!("create: {e}"))
            }
            Intent::UpdateStatus(s) => {
                let v = parse(s);
                tally.statuses.push(v["status"].clone());
                self.api.update_status(v).map(drop).map_err(|e| format!("update status: {e}"))
            }
            Intent::Update(s) => self.api.update(parse(s)).map(drop).map_err(|e| format!("update: {e}")),
            Intent::Delete(d) => {
                tally.deleted.push(d.target.name.clone());
                if pods_fail {
                    return Err("delete: fake error".into());
                }
                let t = &d.target;
                let propagation = d.propagation.map(|p| p.as_str());
                match self.api.delete(&t.kind, &t.namespace, &t.name, d.uid.as_deref(), propagation) {
                    Err(e) if e.code != 404 => Err(format!("delete: {e}")),
                    _ => Ok(()),
                }
            }
            Intent::Patch(p) => {
                if p.target.kind == pod_kind() {
                    if tally.patched.insert((p.target.name.clone(), p.body.clone())) {
                        tally.pod_patches += 1;
                    }
                    if pods_fail {
                        return Err("patch: fake error".into());
                    }
                }
                let content_type = match p.patch_type {
                    PatchType::Json => "application/json-patch+json",
                    PatchType::Merge => "application/merge-patch+json",
                    PatchType::Strategic => "application/strategic-merge-patch+json",
                };
                let t = &p.target;
                self.api
                    .patch(&t.kind, &t.namespace, &t.name, content_type, p.body.as_bytes(), p.status)
                    .map(drop)
                    .map_err(|e| format!("patch {}: {e}", t.name))
            }
            Intent::Event(e) => {
                let kind = match e.event_type {
                    wasmcm_guest::EventType::Normal => "Normal",
                    wasmcm_guest::EventType::Warning => "Warning",
                };
                tally.events.push((kind.into(), e.reason.clone(), e.message.clone()));
                Ok(())
            }
        }
    }

    /// One reconcile, applied.
    pub fn step(&mut self, tally: &mut Tally) -> Outcome {
        let o = self.reconcile();
        self.apply(&o, tally);
        o
    }

    /// Reconciles until an outcome writes nothing (at most `rounds`), as the host does while
    /// the writes wake the key: what upstream does in one sync, with its status writes after
    /// the finalizer removals, takes this a reconcile or two more.
    pub fn settle(&mut self, rounds: usize) -> Tally {
        let mut tally = Tally::default();
        for _ in 0..rounds {
            let o = self.reconcile();
            let writes = o.intents().any(|i| !matches!(i, Intent::Event(_)));
            self.apply(&o, &mut tally);
            if !writes || tally.failure.is_some() {
                break;
            }
        }
        tally
    }

    /// Upstream's one `syncJob`, as this controller does it: a reconcile (and, when its writes
    /// failed, the retry, which writes the status first), then the reconciles the removal of
    /// counted pods' finalizers wakes, which write what upstream writes after the removals in
    /// the same sync (the counters and the terminal condition). `first` is the status after the
    /// sync's own writes (active, ready, terminating are upstream's at that point), `last` after
    /// the counting.
    pub fn sync(&mut self) -> Synced {
        let mut tally = Tally::default();
        let mut o = self.step(&mut tally);
        if tally.failure.is_some() {
            o = self.step(&mut tally);
        }
        let first = self.status();
        for _ in 0..2 {
            let removed = o.intents().any(|i| matches!(i, Intent::Patch(p) if p.target.kind == pod_kind()));
            if !removed || tally.failure.is_some() {
                break;
            }
            let mut counting = Tally::default();
            o = self.step(&mut counting);
            tally.events.extend(counting.events);
            tally.statuses.extend(counting.statuses);
            if counting.failure.is_some() {
                tally.failure = counting.failure;
            }
        }
        Synced { tally, first, last: self.status() }
    }

    /// The Job's status now.
    pub fn status(&self) -> Value {
        self.job()["status"].clone()
    }
}

/// `status.conditions` as (type, status, reason, message).
pub fn conditions(status: &Value) -> Vec<(String, String, String, String)> {
    status["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|c| {
            let f = |k: &str| c[k].as_str().unwrap_or("").to_string();
            (f("type"), f("status"), f("reason"), f("message"))
        })
        .collect()
}

pub fn int(status: &Value, field: &str) -> i64 {
    status[field].as_i64().unwrap_or(0)
}

/// What [`World::sync`] saw.
pub struct Synced {
    pub tally: Tally,
    pub first: Value,
    pub last: Value,
}

/// An empty JSON object.
pub fn none() -> Value {
    json!({})
}
