//! Hot swap triggers: watches the `--plugins` manifests and the plugin files they name (their
//! directories, so atomic renames and kubelet's ConfigMap-volume symlink swaps are seen), and
//! the ConfigMaps that hold plugins; after a burst of changes has settled, re-reads every
//! manifest and offers each changed plugin to its controller. Each offer runs on its own: a
//! version waiting for a new informer to sync (a CRD not installed yet) holds up no other
//! plugin's swap, and a newer version of the same plugin replaces it.
//!
//! It reads files, ConfigMaps and the engine's cache, and nothing else: whether a version is
//! promoted, shadowed or refused is the controller's rollout's decision. It offers versions to
//! whatever [`HotSwap`]s them (the runtime's controllers, which sit above it).

use std::future::Future;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use notify::Watcher;
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use crate::engine::Engine;
use crate::lifecycle::failures::LoadFailures;
use crate::lifecycle::loader::Trust;
use crate::lifecycle::loader::Version;
use crate::lifecycle::manifest::{self, PluginSpec, Source};
use crate::lifecycle::rollout::{Offered, Rollout};

/// How long changes must stop before they are acted on: a file written in several chunks is
/// read once, whole.
pub const RELOAD_SETTLE: Duration = Duration::from_millis(20);

/// A running plugin the reloader offers new versions to: the runtime's controller, which readies
/// the informers a version reads before its rollout takes it.
pub trait HotSwap: Send + Sync + 'static {
    /// The plugin's rollout: its name, and the versions it runs.
    fn rollout(&self) -> &Rollout;
    /// Hands `version` to the rollout, once what it reads is cached; what became of it.
    fn offer(self: Arc<Self>, version: Version) -> impl Future<Output = Result<Offered, String>> + Send;
}

pub struct Reloader<C> {
    pub engine: Engine,
    pub client: Option<kube::Client>,
    /// Where plugins may come from (and the host's namespace).
    pub trust: Trust,
    /// The `--plugins` paths, re-read on every change.
    pub paths: Vec<PathBuf>,
    pub controllers: Vec<Arc<C>>,
    /// Where a new version that fails to load is counted.
    pub failures: Arc<LoadFailures>,
}

impl<C: HotSwap> Reloader<C> {
    /// Watches until the returned task is dropped or aborted.
    pub fn spawn(self) -> anyhow::Result<tokio::task::JoinHandle<()>> {
        let (tx, rx) = mpsc::unbounded_channel::<()>();
        let file_tx = tx.clone();
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            // Reads (access events) change nothing.
            if event.is_ok_and(|e| !matches!(e.kind, notify::EventKind::Access(_))) {
                let _ = file_tx.send(());
            }
        })?;
        let (specs, _) = manifest::resolve_plugins(&self.paths, &self.trust.namespace);
        for dir in watched_dirs(&self.paths, &specs) {
            watcher
                .watch(&dir, notify::RecursiveMode::NonRecursive)
                .map_err(|e| anyhow::anyhow!("cannot watch {}: {e}", dir.display()))?;
            tracing::debug!(dir = %dir.display(), "watching for plugin changes");
        }
        let mut configmaps = tokio::task::JoinSet::new();
        if let Some(client) = &self.client {
            for (namespace, name) in configmap_sources(&specs) {
                configmaps.spawn(watch_configmap(client.clone(), namespace, name, tx.clone()));
            }
        }
        Ok(tokio::spawn(async move {
            let _keep = (watcher, configmaps);
            self.run(rx).await;
        }))
    }

    async fn run(self, mut rx: mpsc::UnboundedReceiver<()>) {
        let mut offers = Offers::default();
        while rx.recv().await.is_some() {
            // Settle: wait until no change has come for RELOAD_SETTLE.
            while let Ok(Some(())) = tokio::time::timeout(RELOAD_SETTLE, rx.recv()).await {}
            self.reload(&mut offers).await;
        }
    }

    /// Re-reads the manifests and offers every plugin whose bytes or entry changed.
    async fn reload(&self, offers: &mut Offers) {
        offers.retain(|_, (_, offer)| !offer.is_finished());
        let (specs, errors) = manifest::resolve_plugins(&self.paths, &self.trust.namespace);
        for e in errors {
            tracing::error!("not reloaded: {e}");
        }
        for spec in specs {
            let Some(controller) = self.controllers.iter().find(|c| c.rollout().name() == spec.name) else {
                if spec.enabled {
                    tracing::warn!(plugin = %spec.name, "a new plugin in the manifests: it starts with the next restart");
                }
                continue;
            };
            if !spec.enabled {
                tracing::warn!(plugin = %spec.name, "disabled in the manifests: it stops with the next restart");
                continue;
            }
            let bytes = match crate::lifecycle::loader::read(&spec, &self.trust, self.client.as_ref()).await {
                Ok(b) => b,
                Err(e) => {
                    tracing::error!("not reloaded: {e}");
                    self.failures.count(&e);
                    continue;
                }
            };
            // Most events concern other files: skip the compile when nothing changed.
            let digest = hex::encode(Sha256::digest(&bytes));
            let offered = offers.get(&spec.name).is_some_and(|(d, _)| *d == digest);
            if offered || controller.rollout().is_current(&digest, &spec) {
                continue;
            }
            let (engine, owned) = (self.engine.clone(), spec.clone());
            let compiled =
                tokio::task::spawn_blocking(move || crate::lifecycle::loader::compile(&engine, &owned, &bytes)).await;
            let version = match compiled {
                Ok(Ok(v)) => v,
                Ok(Err(e)) => {
                    tracing::error!("not reloaded: {e}");
                    self.failures.count(&e);
                    continue;
                }
                Err(e) => {
                    tracing::error!(plugin = %spec.name, "not reloaded: compile task failed: {e}");
                    continue;
                }
            };
            let what = format!("{} (sha256 {})", version.plugin.info().version, &digest[..12]);
            let (controller, name) = (controller.clone(), spec.name.clone());
            let offer = tokio::spawn(async move {
                match controller.offer(version).await {
                    Ok(offered) => tracing::info!(plugin = %name, "{what}: {offered:?}"),
                    Err(e) => tracing::error!(plugin = %name, "{what} refused: {e}"),
                }
            });
            if let Some((_, superseded)) = offers.insert(spec.name.clone(), (digest, offer)) {
                superseded.abort();
            }
        }
    }
}

/// Offers on their way to a controller, by plugin: the digest offered, and the task.
type Offers = std::collections::BTreeMap<String, (String, tokio::task::JoinHandle<()>)>;

/// The directories holding the manifests and the plugin files they name.
fn watched_dirs(paths: &[PathBuf], specs: &[PluginSpec]) -> BTreeSet<PathBuf> {
    let dir_of = |p: &Path| -> Option<PathBuf> {
        if p.is_dir() {
            return Some(p.to_path_buf());
        }
        let parent = p.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
        parent.is_dir().then(|| parent.to_path_buf())
    };
    let files = specs.iter().filter_map(|s| match &s.source {
        Source::File(f) => Some(f.as_path()),
        _ => None,
    });
    paths.iter().map(PathBuf::as_path).chain(files).filter_map(dir_of).collect()
}

fn configmap_sources(specs: &[PluginSpec]) -> BTreeSet<(String, String)> {
    specs
        .iter()
        .filter_map(|s| match &s.source {
            Source::ConfigMap { namespace, name, .. } => Some((namespace.clone(), name.clone())),
            _ => None,
        })
        .collect()
}

/// One ConfigMap, watched by name: a narrow watch needs only namespaced `get/list/watch` on
/// ConfigMaps, not a cluster-wide informer.
async fn watch_configmap(client: kube::Client, namespace: String, name: String, tx: mpsc::UnboundedSender<()>) {
    use kube::runtime::watcher;
    let api: kube::Api<k8s_openapi::api::core::v1::ConfigMap> = kube::Api::namespaced(client, &namespace);
    let config = watcher::Config::default().fields(&format!("metadata.name={name}"));
    let mut events = std::pin::pin!(watcher(api, config));
    let mut seen_initial = false;
    while let Some(event) = events.next().await {
        match event {
            // A re-list after a disconnection may hide a change.
            Ok(watcher::Event::InitDone) => {
                if seen_initial {
                    let _ = tx.send(());
                }
                seen_initial = true;
            }
            // The initial list is what the host started with.
            Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) if seen_initial => {
                let _ = tx.send(());
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(configmap = %format!("{namespace}/{name}"), "watching plugin ConfigMap: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}
