//! The chaos soak: wasmcm hosts as separate processes electing a leader, a workload of
//! Deployments under continuous churn, and an embedded API server injecting faults, while the
//! invariants a Deployment promises are checked on the store's changes and every write is
//! audited against the leader Lease.
//!
//! - **Workload.** Deployments of 3 replicas (the server's default strategy: maxSurge 25% rounds
//!   up to 1, maxUnavailable 25% down to 0) in a few namespaces, in three groups: *rollout*
//!   (image changes), *scale* (replicas 1 to 5, and image changes), *disrupt* (pod deletions).
//! - **Faults**, for the whole chaos phase: a fraction of writes failing with 409, 429 or 500,
//!   watches dropped and the watch history compacted (410) periodically; and in each cycle a
//!   latency spike, a stall of the whole API for longer than the renew deadline, a SIGKILL of
//!   the leader and a SIGSTOP of the leader for longer than the lease, resumed after its lease
//!   expired. A host that exits is restarted (a new identity), as a kubelet restarts a container.
//! - **Invariants**, checked on every change the store makes, in resourceVersion order
//!   ([`Cluster::changes`]: the server's own view, which no injected fault touches, so no
//!   re-list leaves a gap in what is judged): no Deployment ever runs more live pods than
//!   replicas + maxSurge, and a rollout-group Deployment never has fewer ready ones than
//!   replicas - maxUnavailable; the ReplicaSets of a Deployment never ask for more than
//!   replicas + maxSurge together; no ReplicaSet gets a pod beyond its replicas (a duplicate).
//!   Where replicas change (the scale group, and every ReplicaSet) the bound is the largest of
//!   the last few seconds, as a controller may act on a cache that old, and only growth is
//!   judged (pod creations, a ReplicaSet scaled up), since a scale-down takes effect only as
//!   pods go. A violation is explained by the Deployment's Events and by its changes (its
//!   replicas, its ReplicaSets', its pods') in resourceVersion order.
//! - **The audit**: every write a host sent (but its Lease and Events) arrived while that host
//!   held the Lease validly (by the Lease's own renewTime and duration).
//! - **Convergence**: once the faults stop, every Deployment runs exactly its replicas of its
//!   current image, all ready, and nothing else.
//!
//! The test runs it small on every CI run; `cargo bench -p wasmcm --bench chaos` runs it long.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::apps::v1::{Deployment, ReplicaSet};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{Namespace, Pod};
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams};
use serde_json::json;
use tokio::time::Instant;
use wasmcm_apiserver::{
    AuditLease, Cluster, ClusterConfig, EventType, FaultConfig, FaultCounts, KubeletConfig, StoredChange,
};

/// The leader Lease the hosts elect through (`wasmcm run`'s default).
const LEASE: (&str, &str) = ("kube-system", "wasmcm");
/// How far back a changing bound looks: the skew between a Deployment's and its pods' watches,
/// and a controller acting on a cache a few seconds old.
const WINDOW: Duration = Duration::from_secs(10);

#[derive(Clone, Debug)]
pub struct SoakConfig {
    /// The `wasmcm` binary.
    pub binary: PathBuf,
    /// Its precompiled-plugin cache, shared by the hosts so that a restart is quick.
    pub cache_dir: PathBuf,
    /// Where each host process writes its log.
    pub log_dir: PathBuf,
    pub hosts: usize,
    pub deployments: usize,
    pub namespaces: usize,
    /// How long faults and churn last.
    pub chaos: Duration,
    /// Each cycle has one latency spike, one stall, one SIGKILL and one SIGSTOP of the leader.
    pub cycle: Duration,
    /// Leader election: lease duration, renew deadline, retry period.
    pub lease: Duration,
    pub renew: Duration,
    pub retry: Duration,
    /// Fraction of writes failed with 409, 429 or 500 during the chaos.
    pub write_errors: f64,
    /// Seeds the churn (which Deployment, what change), so a run can be repeated.
    pub seed: u64,
    /// How long the workload may take to converge, first and after the faults.
    pub patience: Duration,
}

/// What a soak injected and checked.
#[derive(Debug, Default)]
pub struct SoakReport {
    pub duration: Duration,
    pub faults: FaultCounts,
    pub stalls: u64,
    pub kills: u64,
    pub freezes: u64,
    pub restarts: u64,
    pub churn: BTreeMap<&'static str, u64>,
    /// Invariant evaluations made from the watch.
    pub checks: u64,
    pub violations: Vec<String>,
    /// For the first Deployments an invariant failed for: the Events recorded on it and its
    /// ReplicaSets, in order, with the host that recorded each.
    pub timelines: Vec<String>,
    /// Writes the hosts sent (Leases and Events aside), and those from a non-holder.
    pub writes_audited: u64,
    pub non_holder_writes: Vec<String>,
    /// Identities that held the Lease, in order.
    pub leaders: Vec<String>,
    pub converged: Option<Duration>,
    /// Why convergence was not reached, if it was not.
    pub unconverged: Vec<String>,
    pub pods: usize,
    pub replicas: i64,
}

impl fmt::Display for SoakReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let errors: Vec<String> = self.faults.write_errors.iter().map(|(code, n)| format!("{n}×{code}")).collect();
        writeln!(f, "chaos soak: {:.0} s", self.duration.as_secs_f64())?;
        writeln!(
            f,
            "  injected: write errors {}; {} requests delayed by latency spikes; {} watch drops; {} compactions (410); \
             {} stalls ({} requests held, answered 504); {} SIGKILLs and {} SIGSTOPs of the leader; {} host restarts",
            errors.join(" "),
            self.faults.delayed,
            self.faults.watch_drops,
            self.faults.compactions,
            self.stalls,
            self.faults.stalled_requests,
            self.kills,
            self.freezes,
            self.restarts
        )?;
        let churn: Vec<String> = self.churn.iter().map(|(k, n)| format!("{n} {k}")).collect();
        writeln!(f, "  churn: {}", churn.join(", "))?;
        writeln!(f, "  leaders in turn: {}", self.leaders.join(" → "))?;
        writeln!(f, "  checked: {} invariant evaluations, {} violations", self.checks, self.violations.len())?;
        writeln!(
            f,
            "  audited: {} writes by the hosts, {} from a process that was not the valid holder",
            self.writes_audited,
            self.non_holder_writes.len()
        )?;
        match self.converged {
            Some(d) => writeln!(
                f,
                "  converged {:.1} s after the faults stopped: {} pods for {} replicas",
                d.as_secs_f64(),
                self.pods,
                self.replicas
            )?,
            None => writeln!(f, "  NOT converged: {}", self.unconverged.join("; "))?,
        }
        for v in self.violations.iter().chain(&self.non_holder_writes).take(20) {
            writeln!(f, "  ! {v}")?;
        }
        for t in &self.timelines {
            writeln!(f, "{t}")?;
        }
        Ok(())
    }
}

impl SoakReport {
    /// Every invariant held, no write came from a non-holder, and the workload converged.
    pub fn passed(&self) -> bool {
        self.violations.is_empty() && self.non_holder_writes.is_empty() && self.converged.is_some()
    }
}

/// splitmix64: the churn's choices, reproducible from the seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Group {
    Rollout,
    Scale,
    Disrupt,
}

fn group(i: usize) -> Group {
    match i % 3 {
        0 => Group::Rollout,
        1 => Group::Scale,
        _ => Group::Disrupt,
    }
}

/// maxSurge 25% rounds up, maxUnavailable 25% down (both zero → unavailable 1).
fn bounds(replicas: i64) -> (i64, i64) {
    let surge = (replicas * 25 + 99) / 100;
    let unavailable = replicas * 25 / 100;
    if surge == 0 && unavailable == 0 { (0, 1) } else { (surge, unavailable) }
}

#[derive(Clone, Debug)]
struct PodView {
    app: String,
    owner: Option<String>,
    ready: bool,
    terminating: bool,
    image: String,
}

fn pod_view(p: &Pod) -> Option<PodView> {
    let app = p.metadata.labels.as_ref()?.get("app")?.clone();
    let owner = p.metadata.owner_references.as_ref().and_then(|refs| {
        refs.iter().find(|r| r.controller == Some(true) && r.kind == "ReplicaSet").map(|r| r.name.clone())
    });
    let ready = p
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"));
    let image = p.spec.as_ref().and_then(|s| s.containers.first()).and_then(|c| c.image.clone()).unwrap_or_default();
    Some(PodView { app, owner, ready, terminating: p.metadata.deletion_timestamp.is_some(), image })
}

type Key = (String, String);

fn key_of(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Key {
    (meta.namespace.clone().unwrap_or_default(), meta.name.clone().unwrap_or_default())
}

fn resource_version(meta: &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Option<u64> {
    meta.resource_version.as_deref()?.parse().ok()
}

/// An object's replicas as its versions gave them, with when each came.
#[derive(Default)]
struct History(VecDeque<(i64, Instant)>);

impl History {
    fn push(&mut self, replicas: i64) {
        self.0.push_back((replicas, Instant::now()));
        if self.0.len() > 64 {
            self.0.pop_front();
        }
    }

    fn current(&self) -> Option<i64> {
        self.0.back().map(|(r, _)| *r)
    }

    /// The most replicas it asked for within [`WINDOW`]: the current version and those
    /// replaced since (a controller may act on a cache a few seconds old).
    fn recent_most(&self) -> i64 {
        let replaced = self.0.iter().zip(self.0.iter().skip(1)).filter(|(_, next)| next.1.elapsed() <= WINDOW);
        replaced.map(|(v, _)| v.0).fold(self.current().unwrap_or(0), i64::max)
    }
}

/// The time of day (UTC), as the hosts' logs show it.
fn clock() -> String {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let (secs, millis) = (now.as_secs() % 86_400, now.subsec_millis());
    format!("{:02}:{:02}:{:02}.{millis:03}", secs / 3600, secs / 60 % 60, secs % 60)
}

/// What the store's changes show, and what was found in them.
#[derive(Default)]
struct World {
    pods: BTreeMap<Key, PodView>,
    /// ReplicaSets: their Deployment (app label) and replicas.
    rss: BTreeMap<Key, (String, History)>,
    /// Deployments by (namespace, name): their replicas.
    deployments: BTreeMap<Key, History>,
    /// Each Deployment's last changes (its own replicas, its ReplicaSets' and its pods'), by
    /// resourceVersion: what a violation is explained with.
    changes: BTreeMap<Key, VecDeque<String>>,
    /// Deployments whose lower bound is checked: the rollout group, once first available.
    guarded: BTreeSet<Key>,
    checks: u64,
    violations: Vec<String>,
    /// The Deployments (namespace, name) an invariant failed for, or that did not converge.
    culprits: BTreeSet<Key>,
    /// Whether the store's changes stopped coming before the soak ended.
    stream_lost: bool,
}

impl World {
    fn violation(&mut self, what: String) {
        if self.violations.len() < 1000 {
            self.violations.push(format!("{} {what}", clock()));
        }
    }

    /// An invariant failed for the Deployment `key`: said with its ReplicaSets as they stand.
    fn broken(&mut self, key: &Key, what: String) {
        let state = self.describe(&key.0, &key.1);
        self.culprits.insert(key.clone());
        self.violation(format!("{}/{}: {what} [{state}]", key.0, key.1));
    }

    fn note(&mut self, namespace: &str, app: &str, rv: u64, what: String) {
        let log = self.changes.entry((namespace.to_string(), app.to_string())).or_default();
        log.push_back(format!("    {} rv {rv}: {what}", clock()));
        if log.len() > 400 {
            log.pop_front();
        }
    }

    /// A Deployment's ReplicaSets as they stand: name, replicas, live and ready pods.
    fn describe(&self, namespace: &str, app: &str) -> String {
        let mut out = Vec::new();
        for ((_, name), (a, replicas)) in self.rss.range((namespace.to_string(), String::new())..) {
            if a != app {
                continue;
            }
            let (live, ready, going) = self.owned(namespace, name);
            let asked = replicas.current().unwrap_or(0);
            if asked > 0 || live > 0 || going > 0 {
                out.push(format!("{name}: {asked} asked, {live} live ({ready} ready), {going} going"));
            }
        }
        out.join("; ")
    }

    /// (live, ready, terminating) pods a ReplicaSet controls.
    fn owned(&self, namespace: &str, rs: &str) -> (i64, i64, i64) {
        let pods = self.in_namespace(namespace).filter(|p| p.owner.as_deref() == Some(rs));
        pods.fold((0, 0, 0), |(l, r, g), p| {
            (l + i64::from(!p.terminating), r + i64::from(!p.terminating && p.ready), g + i64::from(p.terminating))
        })
    }

    fn in_namespace(&self, namespace: &str) -> impl Iterator<Item = &PodView> {
        let namespace = namespace.to_string();
        self.pods.range((namespace.clone(), String::new())..).take_while(move |(k, _)| k.0 == namespace).map(|(_, p)| p)
    }

    /// A soak Deployment's group, its replicas now and the most of the last [`WINDOW`].
    fn replicas_of(&self, key: &Key) -> Option<(Group, i64, i64)> {
        let i: usize = key.1.strip_prefix("d-")?.parse().ok()?;
        let history = self.deployments.get(key)?;
        Some((group(i), history.current().unwrap_or(0), history.recent_most()))
    }

    /// (live, ready) pods of a Deployment, where live counts no more pods of a ReplicaSet than it
    /// asks for now. Upstream's Deployment controller bounds what its ReplicaSets ask for, not
    /// their pods (NewRSNewReplicas sums spec.replicas); pods beyond a ReplicaSet's ask are its
    /// controller's to delete, and whether they should have been made at all is
    /// [`World::check_created`]'s to judge. Counting them here flagged a race upstream runs too:
    /// a ReplicaSet scaled down while its controller still created for the old ask.
    fn counts(&self, namespace: &str, app: &str) -> (i64, i64) {
        let mut live_by_owner: BTreeMap<Option<&str>, i64> = BTreeMap::new();
        let mut ready = 0;
        for p in self.in_namespace(namespace).filter(|p| p.app == app && !p.terminating) {
            *live_by_owner.entry(p.owner.as_deref()).or_default() += 1;
            ready += i64::from(p.ready);
        }
        let asked = |rs: &str| self.rss.get(&(namespace.to_string(), rs.to_string())).and_then(|(_, h)| h.current());
        let live = live_by_owner
            .into_iter()
            .map(|(owner, live)| match owner.and_then(asked) {
                Some(asked) => live.min(asked),
                None => live,
            })
            .sum();
        (live, ready)
    }

    /// The bounds on a Deployment's pods: where its replicas do not change, live pods and ready
    /// ones at every change; where they do, at each pod created, against the most replicas of
    /// the last [`WINDOW`].
    fn check_deployment(&mut self, namespace: &str, app: &str, created: bool) {
        let key = (namespace.to_string(), app.to_string());
        let Some((group, replicas, recent)) = self.replicas_of(&key) else { return };
        let (live, ready) = self.counts(namespace, app);
        if group == Group::Scale {
            if created {
                self.checks += 1;
                let most = recent + bounds(recent).0;
                if live > most {
                    self.broken(&key, format!("{live} live pods > replicas + maxSurge = {most} (replicas {recent})"));
                }
            }
            return;
        }
        self.checks += 1;
        let most = replicas + bounds(replicas).0;
        if live > most {
            self.broken(&key, format!("{live} live pods > replicas {replicas} + maxSurge"));
        }
        if self.guarded.contains(&key) {
            let least = replicas - bounds(replicas).1;
            if ready < least {
                self.broken(&key, format!("{ready} ready pods < replicas {replicas} - maxUnavailable = {least}"));
            }
        }
    }

    /// The ReplicaSets of a Deployment together: at every change where replicas do not change,
    /// else whenever one of them grows, against the most replicas of the last [`WINDOW`] (a
    /// scale-down of the Deployment takes effect as its ReplicaSets are scaled down, which is
    /// no one's fault while it lasts).
    fn check_replica_sets(&mut self, namespace: &str, app: &str, grew: bool) {
        let key = (namespace.to_string(), app.to_string());
        let Some((group, replicas, recent)) = self.replicas_of(&key) else { return };
        let asked: i64 = self
            .rss
            .range((namespace.to_string(), String::new())..)
            .take_while(|(k, _)| k.0 == namespace)
            .filter(|(_, (a, _))| a == app)
            .filter_map(|(_, (_, r))| r.current())
            .sum();
        let (replicas, judged) = if group == Group::Scale { (recent, grew) } else { (replicas, true) };
        if !judged {
            return;
        }
        self.checks += 1;
        let most = replicas + bounds(replicas).0;
        if asked > most {
            self.broken(&key, format!("its ReplicaSets ask for {asked} pods > replicas {replicas} + maxSurge"));
        }
    }

    /// A pod just created: no ReplicaSet controls more live pods than it asked for within the
    /// last [`WINDOW`] (else a duplicate was made).
    fn check_created(&mut self, namespace: &str, rs: &str, rv: u64) {
        let key = (namespace.to_string(), rs.to_string());
        let Some((app, asked)) = self.rss.get(&key).map(|(app, h)| (app.clone(), h.recent_most())) else { return };
        self.checks += 1;
        let (live, _, _) = self.owned(namespace, rs);
        if live > asked {
            let what = format!("{rs}: {live} live pods for {asked} replicas at resourceVersion {rv} (a duplicate)");
            self.broken(&(namespace.to_string(), app), what);
        }
    }

    /// One change from the store, in resourceVersion order.
    fn apply(&mut self, change: &StoredChange) {
        let object = &*change.object;
        let labelled = object.pointer("/metadata/labels/chaos").and_then(|v| v.as_str()) == Some("soak");
        if !labelled {
            return;
        }
        let rv = change.resource_version;
        let deleted = change.event_type == EventType::Deleted;
        match change.resource.as_str() {
            "apps/deployments" => {
                let Ok(d) = serde_json::from_value::<Deployment>(object.clone()) else { return };
                let key = key_of(&d.metadata);
                let replicas = i64::from(d.spec.replicas.unwrap_or(1));
                let history = self.deployments.entry(key.clone()).or_default();
                if history.current() != Some(replicas) {
                    history.push(replicas);
                    self.note(&key.0, &key.1, rv, format!("Deployment replicas {replicas}"));
                }
            }
            "apps/replicasets" => {
                let Ok(rs) = serde_json::from_value::<ReplicaSet>(object.clone()) else { return };
                let (namespace, name) = key_of(&rs.metadata);
                let app = rs.metadata.labels.as_ref().and_then(|l| l.get("app")).cloned().unwrap_or_default();
                let key = (namespace.clone(), name.clone());
                if deleted {
                    self.rss.remove(&key);
                    self.note(&namespace, &app, rv, format!("{name} deleted"));
                    return;
                }
                let replicas = i64::from(rs.spec.replicas.unwrap_or(1));
                let (_, history) = self.rss.entry(key).or_insert_with(|| (app.clone(), History::default()));
                let before = history.current();
                if before == Some(replicas) {
                    return;
                }
                history.push(replicas);
                self.note(&namespace, &app, rv, format!("{name} replicas {} → {replicas}", before.unwrap_or(0)));
                self.check_replica_sets(&namespace, &app, replicas > before.unwrap_or(0));
            }
            "/pods" => {
                let Ok(pod) = serde_json::from_value::<Pod>(object.clone()) else { return };
                let Some(view) = pod_view(&pod) else { return };
                let key = key_of(&pod.metadata);
                let (namespace, name) = key.clone();
                let (app, owner) = (view.app.clone(), view.owner.clone().unwrap_or_default());
                if deleted {
                    self.pods.remove(&key);
                    self.note(&namespace, &app, rv, format!("pod {name} of {owner} gone"));
                    self.check_deployment(&namespace, &app, false);
                    return;
                }
                let old = self.pods.insert(key, view.clone());
                let created = old.is_none();
                match &old {
                    None => self.note(&namespace, &app, rv, format!("pod {name} created for {owner}")),
                    Some(o) if o.terminating != view.terminating => {
                        self.note(&namespace, &app, rv, format!("pod {name} of {owner} terminating"))
                    }
                    Some(o) if o.ready != view.ready => {
                        self.note(&namespace, &app, rv, format!("pod {name} of {owner} ready {}", view.ready))
                    }
                    Some(_) => {}
                }
                self.check_deployment(&namespace, &app, created);
                if created && view.owner.is_some() {
                    self.check_created(&namespace, &owner, rv);
                }
            }
            _ => {}
        }
    }
}

/// Follows the store's changes (every one, in order: see [`Cluster::changes`]) into the world.
fn watch_world(cluster: &mut Cluster, world: &Arc<Mutex<World>>) -> tokio::task::JoinHandle<()> {
    let mut changes = cluster.changes();
    let world = world.clone();
    tokio::spawn(async move {
        while let Some(change) = changes.recv().await {
            let Ok(mut w) = world.lock() else { return };
            w.apply(&change);
        }
        if let Ok(mut w) = world.lock() {
            w.stream_lost = true;
        }
    })
}

/// The soak's invariants on a cluster's every change, for a test of its own workload: its
/// Deployments made by [`soak_deployment`] (`d-<i>`, in groups by `i` as the soak's), judged as
/// the soak judges them from [`Invariants::watch`] to [`Invariants::finish`].
pub struct Invariants {
    world: Arc<Mutex<World>>,
    follower: tokio::task::JoinHandle<()>,
}

impl Invariants {
    pub fn watch(cluster: &mut Cluster) -> Invariants {
        let world = Arc::new(Mutex::new(World::default()));
        let follower = watch_world(cluster, &world);
        Invariants { world, follower }
    }

    /// The checks made and every violation found (a lost stream of changes is one).
    pub fn finish(self) -> (u64, Vec<String>) {
        self.follower.abort();
        let Ok(w) = self.world.lock() else { return (0, vec!["the checker panicked".into()]) };
        let mut violations = w.violations.clone();
        if w.stream_lost {
            violations.push("the store's changes stopped coming: not everything was judged".into());
        }
        (w.checks, violations)
    }
}

/// One host process and its successors in a slot.
struct Slot {
    name: String,
    generation: u32,
    child: Child,
    identity: String,
    frozen: bool,
}

struct Hosts {
    config: SoakConfig,
    kubeconfig: PathBuf,
    slots: Vec<Slot>,
    restarts: u64,
}

impl Hosts {
    fn spawn(config: &SoakConfig, kubeconfig: &PathBuf, name: &str, generation: u32) -> (Child, String) {
        let identity = format!("chaos-{name}-{generation}");
        let log = std::fs::File::create(config.log_dir.join(format!("{identity}.log"))).expect("a host log file");
        let secs = |d: Duration| d.as_secs().max(1).to_string();
        let child = Command::new(&config.binary)
            .arg("--cache-dir")
            .arg(&config.cache_dir)
            .arg("run")
            .arg("--kubeconfig")
            .arg(kubeconfig)
            .args(["--metrics-bind-address", "127.0.0.1:0", "--kube-api-qps", "500", "--kube-api-burst", "1000"])
            .args(["--leader-elect-lease-duration", &secs(config.lease)])
            .args(["--leader-elect-renew-deadline", &secs(config.renew)])
            .args(["--leader-elect-retry-period", &secs(config.retry)])
            .env("POD_NAME", &identity)
            .env("RUST_LOG", "warn,wasmcm=info")
            .env("WASMCM_ADMIN_TOKEN_FILE", config.log_dir.join(format!("{identity}.token")))
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .expect("wasmcm runs");
        (child, identity)
    }

    fn start(config: &SoakConfig, kubeconfig: PathBuf) -> Hosts {
        let slots = (0..config.hosts)
            .map(|i| {
                let name = ((b'a' + i as u8) as char).to_string();
                let (child, identity) = Self::spawn(config, &kubeconfig, &name, 1);
                Slot { name, generation: 1, child, identity, frozen: false }
            })
            .collect();
        Hosts { config: config.clone(), kubeconfig, slots, restarts: 0 }
    }

    /// Restarts the processes that exited, as a kubelet restarts a container.
    fn supervise(&mut self) {
        for slot in &mut self.slots {
            if let Ok(Some(_)) = slot.child.try_wait() {
                slot.generation += 1;
                let (child, identity) = Self::spawn(&self.config, &self.kubeconfig, &slot.name, slot.generation);
                slot.child = child;
                slot.identity = identity;
                slot.frozen = false;
                self.restarts += 1;
            }
        }
    }

    fn by_identity(&mut self, identity: &str) -> Option<&mut Slot> {
        self.slots.iter_mut().find(|s| s.identity == identity)
    }

    fn stop_all(&mut self) {
        for slot in &mut self.slots {
            if slot.frozen {
                signal(&slot.child, "-CONT");
            }
            let _ = slot.child.kill();
            let _ = slot.child.wait();
        }
    }
}

#[derive(Clone, Copy)]
enum Step {
    Spike,
    Calm,
    Stall,
    Kill,
    Freeze,
    Thaw,
}

/// Resumes the host frozen as `identity`, if any.
fn thaw(hosts: &Mutex<Hosts>, identity: Option<String>) {
    if let Some(identity) = identity
        && let Ok(mut h) = hosts.lock()
        && let Some(slot) = h.by_identity(&identity)
    {
        signal(&slot.child, "-CONT");
        slot.frozen = false;
    }
}

fn signal(child: &Child, signal: &str) {
    let _ = Command::new("kill").args([signal, &child.id().to_string()]).status();
}

/// The host that holds the Lease now, if the Lease says one does.
async fn holder(client: &kube::Client) -> Option<String> {
    let lease = Api::<Lease>::namespaced(client.clone(), LEASE.0).get_opt(LEASE.1).await.ok()??;
    lease.spec?.holder_identity.filter(|h| !h.is_empty())
}

/// The identity a host names in its User-Agent: `wasmcm/0.1.0 (<identity>) plugin/x`.
fn agent_identity(agent: &str) -> Option<&str> {
    let rest = agent.strip_prefix("wasmcm/")?;
    let start = rest.find('(')? + 1;
    let end = rest[start..].find(')')? + start;
    Some(&rest[start..end])
}

/// Judges the writes audited since the last call.
fn audit(cluster: &Cluster, report: &mut SoakReport) {
    for record in cluster.take_audit() {
        let Some(identity) = agent_identity(&record.user_agent) else { continue };
        if matches!(record.resource.as_str(), "leases" | "events") {
            continue;
        }
        report.writes_audited += 1;
        if record.valid_holder() != Some(identity) && report.non_holder_writes.len() < 100 {
            report.non_holder_writes.push(format!(
                "{} {} {}/{} by {identity} at {} ({}): the Lease said {:?}",
                record.verb, record.resource, record.namespace, record.name, record.received, record.code, record.lease
            ));
        }
    }
}

/// A soak Deployment: `d-<i>` of 3 replicas, labelled for the invariants.
pub fn soak_deployment(namespace: &str, i: usize) -> Deployment {
    let name = format!("d-{i:03}");
    serde_json::from_value(json!({
        "metadata": {"name": name, "namespace": namespace, "labels": {"chaos": "soak"}},
        "spec": {
            "replicas": 3,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name, "chaos": "soak"}},
                "spec": {"containers": [{"name": "c", "image": "img:1"}], "terminationGracePeriodSeconds": 1},
            },
        },
    }))
    .expect("a Deployment")
}

/// Retries a churn write through the injected faults.
async fn persist<T, F, Fut>(mut write: F) -> bool
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = kube::Result<T>>,
{
    for _ in 0..20 {
        if write().await.is_ok() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

/// Whether every Deployment runs exactly its replicas of its current image, all ready and
/// nothing else; else which do not, and why.
async fn converged(client: &kube::Client) -> Result<(usize, i64), Vec<(Key, String)>> {
    let lp = ListParams::default().labels("chaos=soak");
    let (Ok(deployments), Ok(pods), Ok(rss)) = (
        Api::<Deployment>::all(client.clone()).list(&lp).await,
        Api::<Pod>::all(client.clone()).list(&lp).await,
        Api::<ReplicaSet>::all(client.clone()).list(&lp).await,
    ) else {
        return Err(vec![(Key::default(), "cannot list".into())]);
    };
    let mut why = Vec::new();
    let mut replicas_total = 0;
    for d in &deployments.items {
        let (namespace, name) = key_of(&d.metadata);
        let replicas = i64::from(d.spec.replicas.unwrap_or(1));
        replicas_total += replicas;
        let image = d
            .spec
            .template
            .spec
            .as_ref()
            .and_then(|s| s.containers.first())
            .and_then(|c| c.image.clone())
            .unwrap_or_default();
        let mine: Vec<PodView> = pods
            .items
            .iter()
            .filter(|p| p.metadata.namespace.as_deref() == Some(namespace.as_str()))
            .filter_map(pod_view)
            .filter(|p| p.app == name)
            .collect();
        let good = mine.iter().filter(|p| !p.terminating && p.ready && p.image == image).count() as i64;
        let asking = rss
            .items
            .iter()
            .filter(|rs| rs.metadata.namespace.as_deref() == Some(namespace.as_str()))
            .filter(|rs| rs.metadata.labels.as_ref().and_then(|l| l.get("app")) == Some(&name))
            .filter(|rs| rs.spec.replicas.unwrap_or(1) > 0)
            .count();
        let status = d.status.clone().unwrap_or_default();
        let observed = status.observed_generation == d.metadata.generation;
        let counted = [status.replicas, status.updated_replicas, status.ready_replicas, status.available_replicas]
            .iter()
            .all(|n| i64::from(n.unwrap_or(0)) == replicas);
        if good != replicas
            || mine.len() as i64 != replicas
            || !observed
            || !counted
            || asking != usize::from(replicas > 0)
        {
            let said = format!(
                "{namespace}/{name}: {good} good of {} pods for {replicas} of {image}, {asking} ReplicaSets asking, \
                 status observed {observed} counted {counted}",
                mine.len()
            );
            why.push(((namespace, name), said));
        }
    }
    if why.is_empty() { Ok((pods.items.len(), replicas_total)) } else { Err(why) }
}

/// The Events of a Deployment and its ReplicaSets (scaling, pod creates and deletes), in order.
async fn timeline(client: &kube::Client, namespace: &str, name: &str) -> String {
    use k8s_openapi::api::core::v1::Event;
    let Ok(events) = Api::<Event>::namespaced(client.clone(), namespace).list(&ListParams::default()).await else {
        return format!("  {namespace}/{name}: no events");
    };
    let mut lines: Vec<(u64, String)> = events
        .items
        .into_iter()
        .filter(|e| e.involved_object.name.as_deref().is_some_and(|n| n == name || n.starts_with(&format!("{name}-"))))
        .map(|e| {
            let at = e.first_timestamp.map(|t| t.0.to_string()).unwrap_or_default();
            let by = e.reporting_instance.unwrap_or_default();
            let what = format!(
                "{} {}: {}",
                e.involved_object.name.unwrap_or_default(),
                e.reason.unwrap_or_default(),
                e.message.unwrap_or_default()
            );
            (resource_version(&e.metadata).unwrap_or(0), format!("    {at} [{by}] {what}"))
        })
        .collect();
    lines.sort();
    let body: Vec<String> = lines.into_iter().map(|(_, l)| l).collect();
    format!("  {namespace}/{name} events:\n{}", body.join("\n"))
}

/// Runs the soak and reports; see the module doc.
pub async fn soak(config: SoakConfig) -> SoakReport {
    let started = Instant::now();
    std::fs::create_dir_all(&config.log_dir).expect("the log directory");
    let pods = config.deployments * 5;
    let mut cluster = Cluster::start(ClusterConfig {
        kubelet: KubeletConfig {
            nodes: (pods / 100).max(3),
            start_delay: Duration::from_millis(200),
            ..KubeletConfig::default()
        },
        audit_lease: Some(AuditLease::Single { namespace: LEASE.0.into(), name: LEASE.1.into() }),
        ..ClusterConfig::default()
    })
    .await
    .expect("the cluster starts");
    let client = crate::client(&cluster.kubeconfig).await;
    let mut report = SoakReport::default();
    let world = Arc::new(Mutex::new(World::default()));
    let follower = watch_world(&mut cluster, &world);

    let namespaces: Vec<String> = (0..config.namespaces.max(1)).map(|i| format!("chaos-{i}")).collect();
    for ns in &namespaces {
        let object: Namespace = serde_json::from_value(json!({"metadata": {"name": ns}})).expect("a namespace");
        Api::<Namespace>::all(client.clone()).create(&PostParams::default(), &object).await.expect("a namespace");
    }
    let placed: Vec<(String, String, usize)> =
        (0..config.deployments).map(|i| (namespaces[i % namespaces.len()].clone(), format!("d-{i:03}"), i)).collect();
    for (ns, _, i) in &placed {
        Api::<Deployment>::namespaced(client.clone(), ns)
            .create(&PostParams::default(), &soak_deployment(ns, *i))
            .await
            .expect("a Deployment");
    }

    let hosts = Arc::new(Mutex::new(Hosts::start(&config, cluster.kubeconfig.clone())));
    let supervisor = {
        let hosts = hosts.clone();
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(500)).await;
                if let Ok(mut h) = hosts.lock() {
                    h.supervise();
                }
            }
        })
    };

    // First, the workload as it is, without faults.
    let deadline = Instant::now() + config.patience;
    while let Err(why) = converged(&client).await {
        if Instant::now() > deadline {
            report.unconverged = why.into_iter().take(5).map(|(_, said)| said).collect();
            hosts.lock().map(|mut h| h.stop_all()).ok();
            return report;
        }
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    if let Ok(mut w) = world.lock() {
        w.guarded = placed
            .iter()
            .filter(|(_, _, i)| group(*i) == Group::Rollout)
            .map(|(ns, name, _)| (ns.clone(), name.clone()))
            .collect();
    }
    audit(&cluster, &mut report);

    // Then the chaos.
    let background = FaultConfig {
        write_error_rate: config.write_errors,
        watch_drop_interval: Some(Duration::from_secs(20)),
        compact_interval: Some(Duration::from_secs(30)),
        ..FaultConfig::default()
    };
    cluster.set_faults(background.clone());
    let chaos_start = Instant::now();
    let mut rng = Rng(config.seed);
    let mut images: BTreeMap<usize, u64> = BTreeMap::new();
    let mut next_fault = 0usize;
    let mut last_audit = Instant::now();
    let cycle = config.cycle;
    assert!(
        cycle.mul_f64(0.25) > config.lease + Duration::from_secs(2),
        "a cycle of {cycle:?} freezes the leader for less than its lease"
    );
    // When in a cycle each fault comes, as a fraction of it.
    let steps: [(f64, Step); 6] = [
        (0.1, Step::Spike),
        (0.15, Step::Calm),
        (0.2, Step::Stall),
        (0.45, Step::Kill),
        (0.7, Step::Freeze),
        (0.95, Step::Thaw),
    ];
    let mut frozen: Option<String> = None;
    while chaos_start.elapsed() < config.chaos {
        let (cycle_no, step) = (next_fault / steps.len(), next_fault % steps.len());
        let due = cycle.mul_f64(cycle_no as f64 + steps[step].0);
        if chaos_start.elapsed() >= due {
            next_fault += 1;
            // A leader that the stall deposed has exited and may still name the Lease until a
            // standby takes it: until the next step is due, a kill or freeze waits for a live one.
            let next_due = cycle.mul_f64(cycle_no as f64 + steps.get(step + 1).map_or(1.0 + steps[0].0, |s| s.0));
            let mut retry = false;
            match steps[step].1 {
                Step::Spike => {
                    cluster.set_faults(FaultConfig { latency: Duration::from_millis(300), ..background.clone() })
                }
                Step::Calm => cluster.set_faults(background.clone()),
                Step::Stall => {
                    cluster.stall(config.renew + Duration::from_secs(2));
                    report.stalls += 1;
                }
                Step::Kill => {
                    if let Some(leader) = holder(&client).await
                        && let Ok(mut h) = hosts.lock()
                        && let Some(slot) = h.by_identity(&leader)
                        && !slot.frozen
                    {
                        let _ = slot.child.kill();
                        report.kills += 1;
                    } else {
                        retry = chaos_start.elapsed() < next_due;
                    }
                }
                Step::Freeze => {
                    if let Some(leader) = holder(&client).await
                        && let Ok(mut h) = hosts.lock()
                        && let Some(slot) = h.by_identity(&leader)
                    {
                        signal(&slot.child, "-STOP");
                        slot.frozen = true;
                        frozen = Some(leader);
                        report.freezes += 1;
                    } else {
                        retry = chaos_start.elapsed() < next_due;
                    }
                }
                // Resumed only after its lease expired and another took over: it must not write.
                Step::Thaw => thaw(&hosts, frozen.take()),
            }
            if retry {
                next_fault -= 1;
                tokio::time::sleep(Duration::from_millis(200)).await;
            }
            continue;
        }
        // Churn: one change to one Deployment.
        let (ns, name, i) = placed[rng.below(placed.len())].clone();
        let deployments = Api::<Deployment>::namespaced(client.clone(), &ns);
        let (params, delete) = (PatchParams::default(), DeleteParams::default());
        let kind = match group(i) {
            Group::Scale if rng.below(2) == 0 => {
                let replicas = 1 + rng.below(5) as i32;
                let patch = Patch::Merge(json!({"spec": {"replicas": replicas}}));
                persist(|| deployments.patch(&name, &params, &patch)).await.then_some("scales")
            }
            Group::Rollout | Group::Scale => {
                let image = images.entry(i).or_insert(1);
                *image += 1;
                let patch = Patch::Strategic(
                    json!({"spec": {"template": {"spec": {"containers": [{"name": "c", "image": format!("img:{image}")}]}}}}),
                );
                persist(|| deployments.patch(&name, &params, &patch)).await.then_some("image changes")
            }
            Group::Disrupt => {
                let pods = Api::<Pod>::namespaced(client.clone(), &ns);
                let lp = ListParams::default().labels(&format!("app={name}"));
                let victim = pods.list(&lp).await.ok().and_then(|l| {
                    let live: Vec<Pod> =
                        l.items.into_iter().filter(|p| p.metadata.deletion_timestamp.is_none()).collect();
                    live.get(rng.below(live.len())).cloned()
                });
                match victim.and_then(|p| p.metadata.name) {
                    Some(pod) => persist(|| pods.delete(&pod, &delete)).await.then_some("pod deletions"),
                    None => None,
                }
            }
        };
        if let Some(kind) = kind {
            *report.churn.entry(kind).or_default() += 1;
        }
        if last_audit.elapsed() > Duration::from_secs(2) {
            audit(&cluster, &mut report);
            last_audit = Instant::now();
            if let Some(leader) = holder(&client).await
                && report.leaders.last() != Some(&leader)
            {
                report.leaders.push(leader);
            }
        }
        tokio::time::sleep(Duration::from_millis(150)).await;
    }

    // The faults stop; everything must converge.
    cluster.set_faults(FaultConfig::default());
    thaw(&hosts, frozen.take());
    let calm = Instant::now();
    let deadline = calm + config.patience;
    loop {
        match converged(&client).await {
            Ok((pods, replicas)) => {
                report.converged = Some(calm.elapsed());
                (report.pods, report.replicas) = (pods, replicas);
                break;
            }
            Err(why) if Instant::now() > deadline => {
                // Told as a violation is: the events and the changes the watch saw.
                if let Ok(mut w) = world.lock() {
                    w.culprits.extend(why.iter().take(2).map(|(key, _)| key.clone()));
                }
                report.unconverged = why.into_iter().take(5).map(|(_, said)| said).collect();
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(500)).await,
        }
    }
    // What the watch saw last, and every write up to now.
    tokio::time::sleep(Duration::from_secs(1)).await;
    audit(&cluster, &mut report);
    if let Some(leader) = holder(&client).await
        && report.leaders.last() != Some(&leader)
    {
        report.leaders.push(leader);
    }
    supervisor.abort();
    if let Ok(mut h) = hosts.lock() {
        report.restarts = h.restarts;
        h.stop_all();
    }
    follower.abort();
    let culprits: Vec<(Key, Vec<String>)> = match world.lock() {
        Ok(mut w) => {
            if w.stream_lost {
                w.violation("the store's changes stopped coming: nothing after that was checked".into());
            }
            report.checks = w.checks;
            report.violations = w.violations.clone();
            let culprits: Vec<Key> = w.culprits.iter().take(2).cloned().collect();
            culprits
                .into_iter()
                .map(|k| {
                    let changes = w.changes.get(&k).map(|l| l.iter().cloned().collect()).unwrap_or_default();
                    (k, changes)
                })
                .collect()
        }
        Err(_) => Vec::new(),
    };
    for ((namespace, name), changes) in culprits {
        report.timelines.push(timeline(&client, &namespace, &name).await);
        report
            .timelines
            .push(format!("  {namespace}/{name} changes, in resourceVersion order:\n{}", changes.join("\n")));
    }
    report.faults = cluster.fault_counts();
    report.duration = started.elapsed();
    cluster.shutdown().await;
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Feeds the world one change of the store, with the next resourceVersion.
    struct Feed {
        world: World,
        rv: u64,
    }

    impl Feed {
        fn new() -> Self {
            Feed { world: World::default(), rv: 0 }
        }

        fn change(&mut self, resource: &str, event_type: EventType, object: serde_json::Value) {
            self.rv += 1;
            let change = StoredChange {
                resource: resource.into(),
                event_type,
                object: Arc::new(object),
                resource_version: self.rv,
            };
            self.world.apply(&change);
        }

        /// Deployment `d-<i>` (group by i % 3) with `replicas`.
        fn deployment(&mut self, i: usize, replicas: i32) {
            let mut d = serde_json::to_value(soak_deployment("ns", i)).unwrap();
            d["spec"]["replicas"] = json!(replicas);
            self.change("apps/deployments", EventType::Modified, d);
        }

        fn replica_set(&mut self, app: &str, name: &str, replicas: i32) {
            let rs = json!({
                "metadata": {"name": name, "namespace": "ns", "labels": {"app": app, "chaos": "soak"}},
                "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": app}}},
            });
            self.change("apps/replicasets", EventType::Modified, rs);
        }

        fn pod(&mut self, app: &str, rs: &str, name: &str, event_type: EventType, ready: bool) {
            let pod = json!({
                "metadata": {
                    "name": name, "namespace": "ns", "labels": {"app": app, "chaos": "soak"},
                    "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs, "uid": "u", "controller": true}],
                },
                "spec": {"containers": [{"name": "c", "image": "img:1"}]},
                "status": {"conditions": [{"type": "Ready", "status": if ready { "True" } else { "False" }}]},
            });
            self.change("/pods", event_type, pod);
        }
    }

    #[test]
    fn a_second_pod_for_a_replica_set_of_one_is_a_duplicate() {
        let mut f = Feed::new();
        f.deployment(1, 3);
        f.replica_set("d-001", "d-001-a", 1);
        f.pod("d-001", "d-001-a", "p1", EventType::Added, true);
        assert!(f.world.violations.is_empty(), "{:?}", f.world.violations);
        f.pod("d-001", "d-001-a", "p2", EventType::Added, false);
        assert_eq!(f.world.violations.len(), 1, "{:?}", f.world.violations);
        assert!(
            f.world.violations[0].contains("d-001-a: 2 live pods for 1 replicas at resourceVersion 4 (a duplicate)")
        );
        let changes = f.world.changes.get(&("ns".to_string(), "d-001".to_string())).unwrap();
        assert!(changes.iter().any(|c| c.contains("rv 4: pod p2 created for d-001-a")), "{changes:?}");
    }

    #[test]
    fn a_replica_set_scaled_down_moments_ago_may_still_get_the_pod_it_asked_for() {
        let mut f = Feed::new();
        f.deployment(1, 3);
        f.replica_set("d-001", "d-001-a", 2);
        f.pod("d-001", "d-001-a", "p1", EventType::Added, true);
        f.replica_set("d-001", "d-001-a", 1);
        // Created from a cache that still said 2: no duplicate.
        f.pod("d-001", "d-001-a", "p2", EventType::Added, false);
        assert!(f.world.violations.is_empty(), "{:?}", f.world.violations);
        // A third is one too many even for 2.
        f.pod("d-001", "d-001-a", "p3", EventType::Added, false);
        assert_eq!(f.world.violations.len(), 1, "{:?}", f.world.violations);
    }

    #[test]
    fn pods_a_replica_set_no_longer_asks_for_are_its_own_to_delete() {
        // As in a fresh-clone CI run: ReplicaSet b went 1 → 3 and, 20 ms later, 3 → 0 (the
        // Deployment's template moved on); its controller, acting on the 3, created two pods
        // after the 0 was stored. The Deployment controller bounds what ReplicaSets ask for, not
        // their pods (upstream's NewRSNewReplicas sums spec.replicas), so it scaled a up to the
        // new replicas meanwhile: 8 pods for 5 + 2 for a moment, as upstream would run.
        let mut f = Feed::new();
        f.deployment(1, 5);
        f.replica_set("d-001", "d-001-a", 3);
        for p in ["a1", "a2", "a3"] {
            f.pod("d-001", "d-001-a", p, EventType::Added, true);
        }
        f.replica_set("d-001", "d-001-c", 1);
        f.pod("d-001", "d-001-c", "c1", EventType::Added, true);
        f.replica_set("d-001", "d-001-b", 1);
        f.pod("d-001", "d-001-b", "b1", EventType::Added, true);
        f.replica_set("d-001", "d-001-b", 3);
        f.replica_set("d-001", "d-001-b", 0);
        f.pod("d-001", "d-001-b", "b2", EventType::Added, true);
        f.pod("d-001", "d-001-b", "b3", EventType::Added, true);
        f.deployment(1, 4);
        f.replica_set("d-001", "d-001-a", 4);
        f.pod("d-001", "d-001-a", "a4", EventType::Added, false);
        assert!(f.world.violations.is_empty(), "{:?}", f.world.violations);
        // Pods a ReplicaSet asks for still count: 5 + 3 is past 5 + 2.
        f.replica_set("d-001", "d-001-a", 5);
        f.pod("d-001", "d-001-a", "a5", EventType::Added, false);
        f.replica_set("d-001", "d-001-c", 3);
        f.pod("d-001", "d-001-c", "c2", EventType::Added, false);
        f.pod("d-001", "d-001-c", "c3", EventType::Added, false);
        assert!(
            f.world.violations.iter().any(|v| v.contains("8 live pods > replicas + maxSurge = 7")),
            "{:?}",
            f.world.violations
        );
    }

    #[test]
    fn a_rollout_never_goes_past_its_surge_nor_below_its_availability() {
        let mut f = Feed::new();
        f.deployment(0, 3);
        f.replica_set("d-000", "d-000-a", 3);
        for p in ["p1", "p2", "p3"] {
            f.pod("d-000", "d-000-a", p, EventType::Added, true);
        }
        // Guarded once first available, as the soak does.
        f.world.guarded.insert(("ns".into(), "d-000".into()));
        f.replica_set("d-000", "d-000-b", 1);
        f.pod("d-000", "d-000-b", "q1", EventType::Added, false);
        assert!(f.world.violations.is_empty(), "{:?}", f.world.violations);
        // 3 + 1 is the bound; 3 + 2 is past it.
        f.replica_set("d-000", "d-000-b", 2);
        assert!(f.world.violations.iter().any(|v| v.contains("ask for 5 pods > replicas 3 + maxSurge")));
        // A ready pod going away leaves 2 ready < 3 - 0.
        f.pod("d-000", "d-000-a", "p1", EventType::Deleted, true);
        assert!(f.world.violations.iter().any(|v| v.contains("2 ready pods < replicas 3 - maxUnavailable = 3")));
    }

    #[test]
    fn objects_of_other_workloads_are_not_judged() {
        let mut f = Feed::new();
        let rs =
            json!({"metadata": {"name": "x", "namespace": "ns", "labels": {"app": "d-001"}}, "spec": {"replicas": 0}});
        f.change("apps/replicasets", EventType::Added, rs);
        assert!(f.world.rss.is_empty());
    }
}
