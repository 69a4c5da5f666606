//! The controller host on a live API: shared informers, the API writer, and one controller
//! per plugin. Owns their lifecycle: caches synced before any reconcile (and kept warm on a
//! standby), workers only while this host leads, a lost lease stopping new reconciles at once,
//! and a shutdown that lets reconciles in flight finish before releasing the lease.

use std::sync::Arc;

use tokio::sync::watch;

use crate::lifecycle::loader::Version;
use crate::ops::metrics::Metrics;
use crate::runtime::controller::{ControllerConfig, PluginController};
use crate::runtime::discovery::Discovery;
use crate::runtime::informers::Informers;
use crate::runtime::leader::{Elector, LeaderConfig};
use crate::writes::kube::{ClientRate, KubeApi};

#[derive(Clone, Debug, Default)]
pub struct HostConfig {
    pub controller: ControllerConfig,
    pub client_rate: ClientRate,
    /// `None` runs without leader election (a single replica).
    pub leader: Option<LeaderConfig>,
    /// The client configuration behind `client`, from which a plugin with a `serviceAccount`
    /// gets a client impersonating it.
    pub kube_config: Option<kube::Config>,
}

pub struct Host {
    controllers: Vec<Arc<PluginController<KubeApi>>>,
    tasks: tokio::task::JoinSet<()>,
    informers: Arc<Informers>,
    leading: watch::Receiver<bool>,
    /// Keeps `leading` true when there is no election.
    _always: Option<watch::Sender<bool>>,
    stop: watch::Sender<bool>,
    elector: Option<tokio::task::JoinHandle<bool>>,
}

impl Host {
    pub async fn start(
        client: kube::Client,
        plugins: Vec<Version>,
        config: HostConfig,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<Host> {
        // One discovery for the informers and the writer.
        let discovery = Discovery::new(client.clone());
        let informers = Arc::new(Informers::new(client.clone(), discovery.clone()));
        let instance = match &config.leader {
            Some(l) => l.identity.clone(),
            None => crate::runtime::leader::default_identity(),
        };
        let mut api = KubeApi::new(client.clone(), discovery, config.client_rate.clone(), &instance);
        let (stop, stop_rx) = watch::channel(false);
        let (leading, always, elector) = match config.leader.clone() {
            Some(lc) => {
                let e = Elector::new(client, lc);
                (e.leading(), None, Some(e.run(stop_rx)))
            }
            None => {
                let (tx, rx) = watch::channel(true);
                (rx, Some(tx), None)
            }
        };
        api = api.gated_by(leading.clone());
        let mut controllers = Vec::new();
        for version in plugins {
            let name = version.name().to_string();
            // Each plugin writes through a client of its own, with its own budget, as its own
            // ServiceAccount when its manifest names one.
            let api = match &version.spec.service_account {
                None => Arc::new(api.share()),
                Some((namespace, account)) => {
                    let user = impersonated(&config, namespace.as_deref(), account)
                        .map_err(|e| anyhow::anyhow!("plugin {name}: spec.serviceAccount: {e}"))?;
                    let mut kube_config = config.kube_config.clone().ok_or_else(|| {
                        anyhow::anyhow!("plugin {name}: spec.serviceAccount needs the host's client configuration")
                    })?;
                    tracing::info!(plugin = %name, "writes as {user}");
                    kube_config.auth_info.impersonate = Some(user);
                    Arc::new(api.share_as(kube::Client::try_from(kube_config)?))
                }
            };
            let c = PluginController::new(version, &informers, api, config.controller.clone(), metrics.clone())
                .await
                .map_err(|e| anyhow::anyhow!("plugin {name}: {e:#}"))?;
            tracing::info!(plugin = %name, "caches synced; reconciling");
            controllers.push(c);
        }
        // Campaign only once the caches are warm, so a new leader can act at once.
        let elector = elector.map(tokio::spawn);
        let mut tasks = tokio::task::JoinSet::new();
        let (workers, mut lead) = (controllers.clone(), leading.clone());
        let gauge = metrics.clone();
        tasks.spawn(async move {
            if lead.wait_for(|l| *l).await.is_err() {
                return;
            }
            gauge.leader.set(1);
            let mut runs = tokio::task::JoinSet::new();
            for c in &workers {
                runs.spawn(c.clone().run());
            }
            // Not leading any more (lost, or shutting down): start nothing new.
            let _ = lead.wait_for(|l| !*l).await;
            gauge.leader.set(0);
            for c in &workers {
                c.queue().shut_down_and_drain().await;
            }
            while runs.join_next().await.is_some() {}
        });
        Ok(Host { controllers, tasks, informers, leading, _always: always, stop, elector })
    }

    /// True while this host leads (always, without election).
    pub fn leading(&self) -> watch::Receiver<bool> {
        self.leading.clone()
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
