//! The controller host on a live API: shared informers, one write client and one controller per
//! plugin. Owns their lifecycle: each plugin's caches sync on their own (one that cannot is
//! reported, and the others run), the host campaigns once every plugin has synced or failed to,
//! workers run only while this host leads and only for plugins whose caches have synced, a lost
//! lease closes the fence at once (nothing more is sent) and stops new reconciles, and a
//! shutdown lets reconciles in flight finish before releasing the lease.

use std::sync::Arc;

use tokio::sync::watch;
use wasmcm_guest::{Event, EventType, Kind, ObjectRef};

use crate::lifecycle::loader::Version;
use crate::ops::metrics::{Metrics, PluginLabels};
use crate::runtime::clients::Clients;
use crate::runtime::controller::{ControllerConfig, PluginController};
use crate::runtime::discovery::Discovery;
use crate::runtime::informers::Informers;
use crate::runtime::leader::{Elector, Fence, LeaderConfig};
use crate::writes::kube::{ClientRate, KubeApi};
use crate::writes::writer::WriteApi;

#[derive(Clone, Debug, Default)]
pub struct HostConfig {
    pub controller: ControllerConfig,
    pub client_rate: ClientRate,
    /// `None` runs without leader election (a single replica).
    pub leader: Option<LeaderConfig>,
}

pub struct Host {
    controllers: Vec<Arc<PluginController<KubeApi>>>,
    tasks: tokio::task::JoinSet<()>,
    informers: Arc<Informers>,
    leading: watch::Receiver<bool>,
    fence: Fence,
    /// Keeps `leading` true when there is no election.
    _always: Option<watch::Sender<bool>>,
    stop: watch::Sender<bool>,
    elector: Option<tokio::task::JoinHandle<bool>>,
}

impl Host {
    /// Starts the host on the cluster `kube` describes (each of its clients is made from it:
    /// `runtime::clients`). Returns once every plugin's caches have synced or failed to.
    pub async fn start(
        kube: kube::Config,
        plugins: Vec<Version>,
        config: HostConfig,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<Host> {
        // Without election this host leads from the start, so the first lists are fresh enough.
        let started = tokio::time::Instant::now();
        let instance = match &config.leader {
            Some(l) => l.identity.clone(),
            None => crate::runtime::leader::default_identity(),
        };
        let clients = Clients::new(kube, &instance);
        let read = clients.read()?;
        // One discovery for the informers and the writers.
        let discovery = Discovery::new(read.clone());
        let informers = Arc::new(Informers::new(read, discovery.clone()));
        let fence = if config.leader.is_some() { Fence::closed() } else { Fence::open() };
        let mut controllers = Vec::new();
        for version in plugins {
            let name = version.name().to_string();
            // Each plugin writes through a client of its own, with its own budget, as its own
            // ServiceAccount when its manifest names one.
            let user = match &version.spec.service_account {
                None => None,
                Some((namespace, account)) => {
                    let user = impersonated(&config, namespace.as_deref(), account)
                        .map_err(|e| anyhow::anyhow!("plugin {name}: spec.serviceAccount: {e}"))?;
                    tracing::info!(plugin = %name, "writes as {user}");
                    Some(user)
                }
            };
            let client = clients.write(&name, user, fence.clone())?;
            let api = Arc::new(KubeApi::new(client, discovery.clone(), &config.client_rate, &instance));
            controllers.push(PluginController::new(
                version,
                &informers,
                api,
                config.controller.clone(),
                metrics.clone(),
            ));
        }
        futures_util::future::join_all(controllers.iter().map(|c| c.settled())).await;
        let (stop, stop_rx) = watch::channel(false);
        let (leading, always, elector) = match config.leader.clone() {
            Some(lc) => {
                let e = Elector::new(clients.lease(&lc)?, lc, fence.clone());
                (e.leading(), None, Some(e.run(stop_rx)))
            }
            None => {
                let (tx, rx) = watch::channel(true);
                (rx, Some(tx), None)
            }
        };
        let mut tasks = tokio::task::JoinSet::new();
        // The host's own events, about itself, come from any replica: not fenced.
        let reporter = Arc::new(KubeApi::new(
            clients.write("host", None, Fence::open())?,
            discovery,
            &config.client_rate,
            &instance,
        ));
        let regarding = config.leader.as_ref().map(|l| ObjectRef {
            kind: Kind::new("coordination.k8s.io/v1", "Lease"),
            namespace: l.namespace.clone(),
            name: l.name.clone(),
        });
        for c in &controllers {
            tasks.spawn(report_sync(c.clone(), metrics.clone(), reporter.clone(), regarding.clone(), instance.clone()));
        }
        // Campaign only once the caches are warm (or known broken), so a new leader can act at once.
        let elector = elector.map(tokio::spawn);
        let (workers, mut lead, electing) = (controllers.clone(), leading.clone(), config.leader.is_some());
        let gauge = metrics.clone();
        tasks.spawn(async move {
            if lead.wait_for(|l| *l).await.is_err() {
                return;
            }
            gauge.leader.set(1);
            // What the previous leader wrote up to the moment this host took over is in lists
            // begun from now on (a standby's warm caches may lag, and hold no expectations).
            let since = if electing { tokio::time::Instant::now() } else { started };
            let mut runs = tokio::task::JoinSet::new();
            for c in &workers {
                runs.spawn(c.clone().run(since));
            }
            // Not leading any more (lost, or shutting down): start nothing new.
            let _ = lead.wait_for(|l| !*l).await;
            gauge.leader.set(0);
            for c in &workers {
                c.queue().shut_down_and_drain().await;
            }
            // A controller still waiting for its caches has nothing in flight.
            runs.shutdown().await;
        });
        Ok(Host { controllers, tasks, informers, leading, fence, _always: always, stop, elector })
    }

    /// True while this host leads (always, without election).
    pub fn leading(&self) -> watch::Receiver<bool> {
        self.leading.clone()
    }

    /// Whether this host may write now: it leads, and its last renewal is recent enough.
    pub fn fence(&self) -> &Fence {
        &self.fence
    }

    /// The running plugins' controllers, to offer them new versions.
    pub fn controllers(&self) -> &[Arc<PluginController<KubeApi>>] {
        &self.controllers
    }

    pub fn controller(&self, name: &str) -> Option<&Arc<PluginController<KubeApi>>> {
        self.controllers.iter().find(|c| c.rollout().name() == name)
    }

    pub fn informers(&self) -> &Arc<Informers> {
        &self.informers
    }

    /// Stops starting reconciles, waits for those in flight, then releases the lease.
    pub async fn shutdown(mut self) {
        for c in &self.controllers {
            c.queue().shut_down_and_drain().await;
        }
        self.stop.send_replace(true);
        if let Some(e) = self.elector.take() {
            let _ = e.await;
        }
        self._always.take();
        self.tasks.shutdown().await;
    }
}

/// Tells whoever watches that a plugin's caches have not synced (a log line, the
/// `wasmcm_plugin_synced` gauge at 0, a Warning event on the Lease when electing), and when
/// they finally do.
async fn report_sync(
    controller: Arc<PluginController<KubeApi>>,
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

/// Dropped without `shutdown`, a host stops like a crashed process: the lease is not released
/// and a standby must wait for it to expire.
impl Drop for Host {
    fn drop(&mut self) {
        if let Some(e) = self.elector.take() {
            e.abort();
        }
    }
}
