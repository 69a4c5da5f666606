//! The plugins a host runs, as a set that changes while it runs. A plugin added gets its write
//! client (as its ServiceAccount when its manifest names one), its controller, whose informers
//! it shares with the other plugins or starts, and its sync report; its workers start once the
//! host leads and its caches have synced. A plugin removed takes no key any more, finishes the
//! reconciles in flight, and leaves behind no series and no informer that nothing else reads.
//!
//! Owns the set, and the making and unmaking of controllers. When workers run (leading,
//! shards) is the host's (`runtime::host`); which plugins should run is the reloader's.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use tokio::sync::watch;
use wasmcm_guest::{Event, EventType, ObjectRef};

use crate::client::clients::Clients;
use crate::client::discovery::Discovery;
use crate::client::fence::Fence;
use crate::lifecycle::loader::Version;
use crate::lifecycle::reload::PluginSet;
use crate::metrics::{KindLabels, Metrics, PluginLabels};
use crate::runtime::controller::PluginController;
use crate::runtime::host::HostConfig;
use crate::runtime::informers::Informers;
use crate::runtime::shards::ShardGate;
use crate::writes::kube::KubeApi;
use crate::writes::writer::WriteApi;

/// How long a removal waits for the others holding a removed controller to let it go before
/// releasing informers without it (those it holds are then released by a later removal).
const RELEASE_WAIT: std::time::Duration = std::time::Duration::from_secs(5);

/// A running plugin's controller.
pub(crate) type Controller = Arc<PluginController<KubeApi>>;

pub struct Plugins {
    clients: Clients,
    discovery: Discovery,
    informers: Arc<Informers>,
    fence: Fence,
    config: HostConfig,
    /// Who this replica is (its User-Agent, its events).
    instance: String,
    metrics: Arc<Metrics>,
    /// The host's own events (a plugin whose caches do not sync), and what they are about.
    reporter: Arc<KubeApi>,
    regarding: Option<ObjectRef>,
    /// On a sharded host: which keys each controller takes.
    gate: Option<Arc<ShardGate>>,
    running: watch::Sender<Vec<Controller>>,
    /// Each plugin's sync report, by plugin.
    reports: Mutex<BTreeMap<String, tokio::task::JoinHandle<()>>>,
    /// One change at a time: a removal releases informers knowing of every controller made.
    changing: tokio::sync::Mutex<()>,
}

/// What a host's plugin set is made with.
pub(crate) struct Parts {
    pub clients: Clients,
    pub discovery: Discovery,
    pub informers: Arc<Informers>,
    pub fence: Fence,
    pub config: HostConfig,
    pub instance: String,
    pub metrics: Arc<Metrics>,
    pub reporter: Arc<KubeApi>,
    pub regarding: Option<ObjectRef>,
    pub gate: Option<Arc<ShardGate>>,
}

impl Plugins {
    pub(crate) fn new(parts: Parts) -> Self {
        let Parts { clients, discovery, informers, fence, config, instance, metrics, reporter, regarding, gate } =
            parts;
        Plugins {
            clients,
            discovery,
            informers,
            fence,
            config,
            instance,
            metrics,
            reporter,
            regarding,
            gate,
            running: watch::channel(Vec::new()).0,
            reports: Mutex::default(),
            changing: tokio::sync::Mutex::new(()),
        }
    }

    /// The running plugins' controllers, in the order they were added.
    pub fn running(&self) -> Vec<Controller> {
        self.running.borrow().clone()
    }

    /// The running plugins, and each change of them.
    pub fn subscribe(&self) -> watch::Receiver<Vec<Controller>> {
        self.running.subscribe()
    }

    pub fn get(&self, name: &str) -> Option<Controller> {
        self.running.borrow().iter().find(|c| c.rollout().name() == name).cloned()
    }

    /// Starts running `version`: its informers start (or are shared) and sync on their own,
    /// and its workers start once they have and the host leads. Refused if a plugin of that
    /// name runs, or its ServiceAccount names no namespace where the host has none.
    pub async fn add(&self, version: Version) -> anyhow::Result<Controller> {
        let _one = self.changing.lock().await;
        let name = version.name().to_string();
        if self.get(&name).is_some() {
            anyhow::bail!("plugin {name} runs already");
        }
        // Each plugin writes through a client of its own, with its own budget, as its own
        // ServiceAccount when its manifest names one.
        let user = match &version.spec.service_account {
            None => None,
            Some((namespace, account)) => {
                let user = impersonated(&self.config, namespace.as_deref(), account)
                    .map_err(|e| anyhow::anyhow!("plugin {name}: spec.serviceAccount: {e}"))?;
                tracing::info!(plugin = %name, "writes as {user}");
                Some(user)
            }
        };
        let client = self.clients.write(&name, user, self.fence.clone())?;
        let api = KubeApi::new(client, self.discovery.clone(), &self.config.client_rate, &self.instance, Some(&name));
        let controller = PluginController::new(
            version,
            &self.informers,
            Arc::new(api),
            self.config.controller.clone(),
            self.metrics.clone(),
        );
        if let Some(gate) = &self.gate {
            controller.set_shards(gate.clone());
        }
        let report = report_sync(
            controller.clone(),
            self.metrics.clone(),
            self.reporter.clone(),
            self.regarding.clone(),
            self.instance.clone(),
        );
        self.reports.lock().unwrap_or_else(|e| e.into_inner()).insert(name, tokio::spawn(report));
        self.running.send_modify(|set| set.push(controller.clone()));
        Ok(controller)
    }

    /// Stops running plugin `name`: it takes no key any more, the reconciles in flight finish,
    /// then its series and the informers nothing else reads go. False if it does not run.
    pub async fn remove(&self, name: &str) -> bool {
        let _one = self.changing.lock().await;
        let mut removed = None;
        self.running.send_if_modified(|set| {
            removed = set.iter().position(|c| c.rollout().name() == name).map(|i| set.remove(i));
            removed.is_some()
        });
        let Some(controller) = removed else { return false };
        if let Some(report) = self.reports.lock().unwrap_or_else(|e| e.into_inner()).remove(name) {
            report.abort();
        }
        controller.stop().await;
        self.metrics.forget_plugin(name);
        // Whoever else holds it (the worker loop, the admin endpoint's list) lets it go once it
        // sees the set without it; its informers are unused only then.
        let deadline = tokio::time::Instant::now() + RELEASE_WAIT;
        while Arc::strong_count(&controller) > 1 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        if Arc::strong_count(&controller) > 1 {
            tracing::warn!(plugin = %name, "still held after {RELEASE_WAIT:?}: the informers only it read stay");
        }
        drop(controller);
        for informer in self.informers.release_unused() {
            self.metrics.forget_informer(&KindLabels::of(informer.kind(), informer.namespaces()));
        }
        tracing::info!(plugin = %name, "removed: it reconciles nothing more");
        true
    }

    /// The sync reports still waiting, stopped (the host shuts down).
    pub(crate) fn stop_reports(&self) {
        for (_, report) in std::mem::take(&mut *self.reports.lock().unwrap_or_else(|e| e.into_inner())) {
            report.abort();
        }
    }
}

impl PluginSet for Plugins {
    type Plugin = PluginController<KubeApi>;

    fn running(&self) -> Vec<Controller> {
        Plugins::running(self)
    }

    async fn add(&self, version: Version) -> anyhow::Result<()> {
        Plugins::add(self, version).await.map(drop)
    }

    async fn remove(&self, name: &str) -> bool {
        Plugins::remove(self, name).await
    }
}

/// Tells whoever watches that a plugin's caches have not synced (a log line, the
/// `wasmcm_plugin_synced` gauge at 0, a Warning event on the Lease when electing), and when
/// they finally do.
async fn report_sync(
    controller: Controller,
    metrics: Arc<Metrics>,
    events: Arc<KubeApi>,
    regarding: Option<ObjectRef>,
    instance: String,
) {
    let plugin = controller.rollout().name().to_string();
    let gauge = metrics.plugin_synced.get_or_create(&PluginLabels { plugin: plugin.clone() });
    gauge.set(0);
    controller.settled().await;
    if let Err(why) = controller.cache_status() {
        tracing::error!(plugin, "caches not synced, so not reconciling (the other plugins run): {why}");
        if let Some(regarding) = regarding {
            let event = Event {
                regarding,
                event_type: EventType::Warning,
                reason: "PluginNotSynced".into(),
                message: format!("{instance}: plugin {plugin} does not reconcile until its caches sync: {why}"),
            };
            if let Err(e) = events.record_event(&event, None).await {
                tracing::debug!("recording an event: {e}");
            }
        }
        controller.synced().await;
        tracing::info!(plugin, "caches synced; reconciling");
    }
    gauge.set(1);
}

/// The user a plugin's ServiceAccount is, in `namespace` or else the host's.
fn impersonated(config: &HostConfig, namespace: Option<&str>, account: &str) -> anyhow::Result<String> {
    let namespace = namespace.or(config.controller.host.namespace.as_deref()).ok_or_else(|| {
        anyhow::anyhow!("{account:?} names no namespace, and the host runs in none: write namespace/{account}")
    })?;
    Ok(format!("system:serviceaccount:{namespace}:{account}"))
}
