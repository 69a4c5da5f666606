//! The controller host on a live API: shared informers, one write client and one controller per
//! plugin. Owns their lifecycle: each plugin's caches sync on their own (one that cannot is
//! reported, and the others run), the host campaigns once every plugin has synced or failed to,
//! workers run only while this host leads and only for plugins whose caches have synced, a lost
//! lease closes the fence at once (nothing more is sent) and stops new reconciles, and a
//! shutdown lets reconciles in flight finish before releasing the lease.
//!
//! With shards (`runtime::shards`) there is no leader: every replica runs its workers from the
//! start, each controller takes only the keys of the shards the replica runs, a shard's keys
//! start once the caches hold a list begun after its Lease was acquired, and a shutdown hands
//! every shard back once the reconciles in flight are done.

use std::sync::Arc;

use tokio::sync::watch;
use wasmcm_guest::{Kind, ObjectRef};

use crate::client::clients::Clients;
use crate::client::discovery::Discovery;
use crate::client::fence::Fence;
use crate::lifecycle::loader::Version;
use crate::metrics::Metrics;
use crate::runtime::controller::{ControllerConfig, PluginController};
use crate::runtime::group::{self, Agreement};
use crate::runtime::informers::{Informers, ShardScope, server_filters_shards};
use crate::runtime::leader::{Elector, LeaderConfig};
use crate::runtime::plugins::{Controller, Parts, Plugins};
use crate::runtime::shards::{ShardConfig, ShardGate, Shards};
use crate::writes::kube::{ClientRate, KubeApi};

#[derive(Clone, Debug, Default)]
pub struct HostConfig {
    pub controller: ControllerConfig,
    pub client_rate: ClientRate,
    /// How this replica shares the work with the others of its group.
    pub mode: Mode,
}

/// How a replica shares the work with the others of its group.
#[derive(Clone, Debug, Default)]
pub enum Mode {
    /// The only replica: no election, it reconciles from the start and writes unfenced.
    #[default]
    Single,
    /// One replica at a time reconciles, elected through a Lease (`runtime::leader`).
    Leader(LeaderConfig),
    /// Every replica reconciles the keys of the shards it holds (`runtime::shards`).
    Shards(ShardConfig),
}

impl Mode {
    /// Who this replica is in its Leases, its events and its User-Agent.
    fn identity(&self) -> String {
        match self {
            Mode::Single => crate::runtime::leader::default_identity(),
            Mode::Leader(l) => l.identity.clone(),
            Mode::Shards(s) => s.lease.identity.clone(),
        }
    }

    /// The group's anchor Lease: the leader's, or the shard group's.
    fn anchor(&self) -> Option<&LeaderConfig> {
        match self {
            Mode::Single => None,
            Mode::Leader(l) => Some(l),
            Mode::Shards(s) => Some(&s.lease),
        }
    }
}

pub struct Host {
    /// Who this replica is (its Leases, events, status entries).
    identity: String,
    plugins: Arc<Plugins>,
    tasks: tokio::task::JoinSet<()>,
    informers: Arc<Informers>,
    leading: watch::Receiver<bool>,
    fence: Fence,
    /// Keeps `leading` true when there is no election.
    _always: Option<watch::Sender<bool>>,
    stop: watch::Sender<bool>,
    elector: Option<tokio::task::JoinHandle<bool>>,
    shards: Option<(Arc<ShardGate>, tokio::task::JoinHandle<()>)>,
    /// Whether this replica agrees with its group's shape (`Unknown` without one).
    standing: watch::Receiver<Agreement>,
}

/// A sharded host's shard loop, before it runs: its gate, the shards it acquires, and the
/// `shardSelector` its informers follow when the server filters by it.
struct Sharding {
    shards: Shards,
    gate: Arc<ShardGate>,
    acquired: tokio::sync::mpsc::UnboundedReceiver<(u32, u64, tokio::time::Instant)>,
    selector: Option<watch::Sender<Option<String>>>,
}

impl Host {
    /// Starts the host on the cluster `kube` describes (each of its clients is made from it:
    /// `client::clients`). Returns once every plugin's caches have synced or failed to; more
    /// are added, and removed, through [`Host::plugins`].
    pub async fn start(
        kube: kube::Config,
        plugins: Vec<Version>,
        config: HostConfig,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<Host> {
        // Without election this host leads from the start, so the first lists are fresh enough.
        let started = tokio::time::Instant::now();
        let instance = config.mode.identity();
        let clients = Clients::new(kube, &instance);
        let read = clients.read()?;
        // One discovery for the informers and the writers.
        let discovery = Discovery::new(read.clone());
        let informers = Informers::new(read.clone(), discovery.clone());
        let (fence, informers, mut sharding) = match &config.mode {
            Mode::Single => (Fence::open(), informers, None),
            Mode::Leader(_) => (Fence::closed(), informers, None),
            Mode::Shards(sc) => {
                let (sharding, informers) = Sharding::new(&clients, &read, sc, informers, &metrics).await?;
                (sharding.shards.fence(), informers, Some(sharding))
            }
        };
        let informers = Arc::new(informers);
        let mut tasks = tokio::task::JoinSet::new();
        if let Some(s) = &mut sharding
            && let Some(tx) = s.selector.take()
        {
            let namespaces = informers.informer(&Kind::new("v1", "Namespace"));
            tasks.spawn(publish_selector(namespaces, s.gate.clone(), tx));
        }
        // The host's own events, about itself, come from any replica: not fenced.
        let reporter = Arc::new(KubeApi::new(
            clients.write("host", None, Fence::open())?,
            discovery.clone(),
            &config.client_rate,
            &instance,
            None,
        ));
        let regarding = config.mode.anchor().map(|l| ObjectRef {
            kind: Kind::new("coordination.k8s.io/v1", "Lease"),
            namespace: l.namespace.clone(),
            name: l.name.clone(),
        });
        let (stop, stop_rx) = watch::channel(false);
        let (leading, always, elector, standing) = match &config.mode {
            Mode::Leader(lc) => {
                let e = Elector::new(clients.lease(lc.attempt_timeout())?, lc.clone(), fence.clone());
                let (leading, standing) = (e.leading(), e.standing());
                (leading, None, Some(e.run(stop_rx.clone())), standing)
            }
            Mode::Single | Mode::Shards(_) => {
                let (tx, rx) = watch::channel(true);
                let standing = match &sharding {
                    Some(s) => s.shards.standing(),
                    None => watch::channel(Agreement::Unknown).1,
                };
                (rx, Some(tx), None, standing)
            }
        };
        let set = Arc::new(Plugins::new(Parts {
            clients,
            discovery,
            informers: informers.clone(),
            fence: fence.clone(),
            config: config.clone(),
            instance: instance.clone(),
            metrics: metrics.clone(),
            reporter: reporter.clone(),
            regarding: regarding.clone(),
            gate: sharding.as_ref().map(|s| s.gate.clone()),
        }));
        for version in plugins {
            set.add(version).await?;
        }
        futures_util::future::join_all(set.running().iter().map(|c| c.settled())).await;
        if let Some(anchor) = &regarding {
            let (anchor, instance) = (anchor.clone(), instance.clone());
            tasks.spawn(group::report(standing.clone(), anchor, instance, metrics.clone(), reporter));
        }
        // Campaign only once the caches are warm (or known broken), so a new leader can act at once.
        let elector = elector.map(tokio::spawn);
        let shards = sharding.map(|Sharding { shards, gate, acquired, .. }| {
            tasks.spawn(start_shards(set.subscribe(), gate.clone(), acquired));
            (gate, tokio::spawn(shards.run(stop_rx.clone())))
        });
        tasks.spawn(run_workers(set.subscribe(), leading.clone(), config.mode, started, metrics));
        Ok(Host {
            identity: instance,
            plugins: set,
            tasks,
            informers,
            leading,
            fence,
            _always: always,
            stop,
            elector,
            shards,
            standing,
        })
    }

    /// Whether this replica agrees with its group's shape (leader or shard count, lease
    /// duration), and each change of it: one that disagrees takes nothing.
    pub fn standing(&self) -> watch::Receiver<Agreement> {
        self.standing.clone()
    }

    /// True while this host leads (always, without election).
    pub fn leading(&self) -> watch::Receiver<bool> {
        self.leading.clone()
    }

    /// Whether this host may write now: it leads, and its last renewal is recent enough.
    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// Who this replica is.
    pub fn identity(&self) -> &str {
        &self.identity
    }

    /// The running plugins: to offer them new versions, add and remove them.
    pub fn plugins(&self) -> &Arc<Plugins> {
        &self.plugins
    }

    /// The running plugins' controllers, now.
    pub fn controllers(&self) -> Vec<Controller> {
        self.plugins.running()
    }

    pub fn controller(&self, name: &str) -> Option<Controller> {
        self.plugins.get(name)
    }

    pub fn informers(&self) -> &Arc<Informers> {
        &self.informers
    }

    /// The shards whose keys this host takes now (none unless sharded).
    pub fn active_shards(&self) -> Vec<u32> {
        self.shards.as_ref().map(|(gate, _)| gate.active()).unwrap_or_default()
    }

    /// Stops starting reconciles, waits for those in flight, then releases the lease.
    pub async fn shutdown(mut self) {
        for c in self.plugins.running() {
            c.queue().shut_down_and_drain().await;
        }
        self.plugins.stop_reports();
        self.stop.send_replace(true);
        if let Some(e) = self.elector.take() {
            let _ = e.await;
        }
        if let Some((_, shards)) = self.shards.take() {
            let _ = shards.await;
        }
        self._always.take();
        self.tasks.shutdown().await;
        self.informers.shutdown().await;
    }
}

impl Sharding {
    /// The shard loop of `config`, and `informers`, made to follow the shards held when the
    /// server filters by `shardSelector`.
    async fn new(
        clients: &Clients,
        read: &kube::Client,
        config: &ShardConfig,
        mut informers: Informers,
        metrics: &Arc<Metrics>,
    ) -> anyhow::Result<(Sharding, Informers)> {
        let (shards, gate, acquired) =
            Shards::new(clients.lease(config.lease.attempt_timeout())?, config.clone(), metrics.clone());
        let mut selector = None;
        if server_filters_shards(read, &config.lease.namespace).await {
            tracing::info!(
                shards = config.count,
                "the server filters by shardSelector: each replica caches its shards' objects"
            );
            let (tx, rx) = watch::channel(None);
            informers = informers.sharded(ShardScope { selector: rx });
            selector = Some(tx);
        } else {
            tracing::warn!(
                shards = config.count,
                "the server does not filter by shardSelector (KEP-5866): every replica caches every object and filters keys itself"
            );
        }
        Ok((Sharding { shards, gate, acquired, selector }, informers))
    }
}

/// Runs every controller's workers while this host leads (from the start, unless it elects a
/// leader), the `leader` gauge at 1 meanwhile, and those of each plugin added meanwhile; once
/// it no longer leads (lost, or shutting down), starts nothing new.
async fn run_workers(
    mut plugins: watch::Receiver<Vec<Controller>>,
    mut leading: watch::Receiver<bool>,
    mode: Mode,
    started: tokio::time::Instant,
    metrics: Arc<Metrics>,
) {
    if leading.wait_for(|l| *l).await.is_err() {
        return;
    }
    let sharded = matches!(mode, Mode::Shards(_));
    if !sharded {
        metrics.leader.set(1);
    }
    // What the previous leader wrote up to the moment this host took over is in lists
    // begun from now on (a standby's warm caches may lag, and hold no expectations). A plugin
    // added later starts informers of its own or shares these.
    let since = if matches!(mode, Mode::Leader(_)) { tokio::time::Instant::now() } else { started };
    let mut runs = tokio::task::JoinSet::new();
    // The controllers whose workers were started, by identity (a plugin removed and added
    // again is a new controller), not kept alive by it.
    let mut running: Vec<std::sync::Weak<PluginController<KubeApi>>> = Vec::new();
    loop {
        let now = plugins.borrow_and_update().clone();
        running.retain(|r| now.iter().any(|c| std::ptr::eq(Arc::as_ptr(c), r.as_ptr())));
        for c in now {
            if !running.iter().any(|r| std::ptr::eq(Arc::as_ptr(&c), r.as_ptr())) {
                running.push(Arc::downgrade(&c));
                runs.spawn(c.run(since));
            }
        }
        tokio::select! {
            changed = plugins.changed() => if changed.is_err() { break },
            // Not leading any more (lost, or shutting down): start nothing new.
            _ = leading.wait_for(|l| !*l) => break,
        }
    }
    let _ = leading.wait_for(|l| !*l).await;
    metrics.leader.set(0);
    let last = plugins.borrow().clone();
    for c in last {
        c.queue().shut_down_and_drain().await;
    }
    // A controller still waiting for its caches has nothing in flight.
    runs.shutdown().await;
}

/// Dropped without `shutdown`, a host stops like a crashed process: the lease is not released
/// and a standby must wait for it to expire.
impl Drop for Host {
    fn drop(&mut self) {
        if let Some(e) = self.elector.take() {
            e.abort();
        }
        if let Some((_, shards)) = self.shards.take() {
            shards.abort();
        }
    }
}

/// Keeps the sharded informers' `shardSelector` at the namespaces of the shards held: each
/// namespace by its exact hash, as the server hashes it (`wasmcm_core::shard`).
async fn publish_selector(
    namespaces: Arc<crate::runtime::informers::Informer>,
    gate: Arc<ShardGate>,
    selector: watch::Sender<Option<String>>,
) {
    let mut held = gate.held();
    let mut changes = namespaces.subscribe();
    namespaces.wait_synced().await;
    loop {
        let shards = held.borrow_and_update().clone();
        let listed = namespaces.list("", &wasmcm_guest::Selector::everything());
        let names: Vec<&str> =
            listed.iter().map(|o| o.name.as_str()).filter(|n| shards.contains(&gate.shard_of(n))).collect();
        let wanted = (!names.is_empty())
            .then(|| wasmcm_core::ShardSelector::of_values(wasmcm_core::ShardField::Namespace, names).to_string());
        selector.send_if_modified(|s| {
            let changed = *s != wanted;
            *s = wanted;
            changed
        });
        tokio::select! {
            r = held.changed() => if r.is_err() { return },
            r = changes.recv() => if matches!(r, Err(tokio::sync::broadcast::error::RecvError::Closed)) { return },
        }
    }
}

/// Starts each acquired shard once every controller's caches hold a list begun after it was
/// acquired (the previous holder's last writes are then in them): acquisitions that arrive
/// together share one wait.
async fn start_shards(
    plugins: watch::Receiver<Vec<Controller>>,
    gate: Arc<ShardGate>,
    mut acquired: tokio::sync::mpsc::UnboundedReceiver<(u32, u64, tokio::time::Instant)>,
) {
    while let Some(first) = acquired.recv().await {
        let mut batch = vec![first];
        while let Ok(next) = acquired.try_recv() {
            batch.push(next);
        }
        let since = batch.iter().map(|(_, _, at)| *at).max().unwrap_or_else(tokio::time::Instant::now);
        let controllers = plugins.borrow().clone();
        futures_util::future::join_all(controllers.iter().map(|c| c.fresh_since(since))).await;
        let started: std::collections::BTreeSet<u32> = batch
            .into_iter()
            .filter(|(shard, generation, _)| gate.activate(*shard, *generation))
            .map(|b| b.0)
            .collect();
        if started.is_empty() {
            continue;
        }
        tracing::info!(shards = ?started, "shards started");
        for c in &controllers {
            c.shards_started(&started);
        }
    }
}
