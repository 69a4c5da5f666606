//! The controller host on a live API: shared informers, the API writer, and one controller
//! per plugin. Owns their lifecycle: start (caches synced before any reconcile) and a
//! shutdown that lets reconciles in flight finish and starts nothing new.

use std::sync::Arc;

use crate::controller::{Controller, ControllerConfig};
use crate::informers::Informers;
use crate::kubeapi::{ClientRate, KubeApi};
use crate::plugins::Plugin;

#[derive(Clone, Debug, Default)]
pub struct HostConfig {
    pub controller: ControllerConfig,
    pub client_rate: ClientRate,
}

pub struct Host {
    controllers: Vec<Arc<Controller<KubeApi>>>,
    tasks: tokio::task::JoinSet<()>,
    informers: Arc<Informers>,
}

impl Host {
    pub async fn start(client: kube::Client, plugins: Vec<Arc<Plugin>>, config: HostConfig) -> anyhow::Result<Host> {
        let informers = Arc::new(Informers::new(client.clone()));
        let instance = std::env::var("HOSTNAME").unwrap_or_else(|_| format!("wasmcm-{}", std::process::id()));
        let api = Arc::new(KubeApi::new(client, config.client_rate.clone(), &instance));
        let mut controllers = Vec::new();
        for plugin in plugins {
            let name = plugin.info().name.clone();
            let c = Controller::new(plugin, &informers, api.clone(), config.controller.clone())
                .await
                .map_err(|e| anyhow::anyhow!("plugin {name}: {e:#}"))?;
            tracing::info!(plugin = %name, "caches synced; reconciling");
            controllers.push(c);
        }
        let mut tasks = tokio::task::JoinSet::new();
        for c in &controllers {
            tasks.spawn(c.clone().run());
        }
        Ok(Host { controllers, tasks, informers })
    }

    pub fn informers(&self) -> &Arc<Informers> {
        &self.informers
    }

    /// Stops starting reconciles, waits for those in flight, then stops.
    pub async fn shutdown(mut self) {
        for c in &self.controllers {
            c.queue().shut_down_and_drain().await;
        }
        while self.tasks.join_next().await.is_some() {}
    }
}
