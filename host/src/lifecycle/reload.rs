//! Hot add, swap and remove: watches the `--plugins` manifests and the plugin files they name
//! (their directories, so atomic renames and kubelet's ConfigMap-volume symlink swaps are
//! seen), and the ConfigMaps that hold plugins; once a write is complete (a file closed or
//! renamed into place, an object changed), re-reads every manifest and brings the running
//! plugins to what they say. A new plugin is loaded and added; a removed or disabled one is
//! removed; a changed one is offered to its controller, or replaced (removed, then added) when
//! what its controller was made for changed (its ServiceAccount, its workers, its primary
//! kind). A plugin that failed to load is tried again when its entry or bytes change. Each offer runs on its own: a version waiting for a new
//! informer to sync (a CRD not installed yet) holds up no other plugin's swap, and a newer
//! version of the same plugin replaces it. The watches follow the manifests: a file or
//! ConfigMap a new entry names is watched from then on.
//!
//! A manifest that fails to read removes nothing (a half-written file must not stop a plugin).
//!
//! It reads files, ConfigMaps and the engine's cache, and nothing else: whether a version is
//! promoted, shadowed or refused is the controller's rollout's decision, and how a plugin is
//! started or stopped the [`PluginSet`]'s (the runtime's, which sits above it).

use std::future::Future;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt;
use notify::Watcher;
use sha2::{Digest, Sha256};
use tokio::sync::mpsc;

use crate::engine::Engine;
use crate::lifecycle::failures::LoadFailures;
use crate::lifecycle::loader::{LoadFailure, Reason, Trust, Version};
use crate::lifecycle::manifest::{self, PluginSpec, Source};
use crate::lifecycle::objects::{self, PluginObjects};
use crate::lifecycle::rollout::{Offered, Rollout};

/// How long a write under way (a file changed and not yet closed) must be quiet before it is
/// read anyway, where the watcher reports no close; Linux's (inotify) does, so there a file is
/// read only once closed, however slowly it is written. A completed write (a file closed,
/// renamed into place, removed or its mode changed; a ConfigMap or Plugin object changed) is
/// acted on at once, so a release swaps in milliseconds.
const RELOAD_SETTLE: Option<Duration> = if cfg!(target_os = "linux") { None } else { Some(Duration::from_millis(500)) };

/// What a change says of the write behind it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Written {
    Complete,
    UnderWay,
}

impl Written {
    /// `None` for reads, which change nothing (the reloader's own among them).
    fn of(kind: &notify::EventKind) -> Option<Written> {
        use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind};
        match kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => Some(Written::Complete),
            EventKind::Access(_) => None,
            // A rename (atomic installs, the kubelet's ConfigMap-volume swap), a removal or a
            // new mode is whole; a created file starts empty and a modified one is being written.
            EventKind::Modify(ModifyKind::Name(_) | ModifyKind::Metadata(_)) | EventKind::Remove(_) => {
                Some(Written::Complete)
            }
            _ => Some(Written::UnderWay),
        }
    }
}

/// A running plugin the reloader offers new versions to: the runtime's controller, which readies
/// the informers a version reads before its rollout takes it.
pub trait HotSwap: Send + Sync + 'static {
    /// The plugin's rollout: its name, and the versions it runs.
    fn rollout(&self) -> &Rollout;
    /// Hands `version` to the rollout, once what it reads is cached; what became of it.
    fn offer(self: Arc<Self>, version: Version) -> impl Future<Output = Result<Offered, String>> + Send;
}

/// The plugins a host runs, which the reloader adds to and removes from.
pub trait PluginSet: Send + Sync + 'static {
    type Plugin: HotSwap;
    /// The running plugins.
    fn running(&self) -> Vec<Arc<Self::Plugin>>;
    /// Starts running `version`.
    fn add(&self, version: Version) -> impl Future<Output = anyhow::Result<()>> + Send;
    /// Stops running plugin `name`, once the reconciles in flight are done.
    fn remove(&self, name: &str) -> impl Future<Output = bool> + Send;
}

pub struct Reloader<S> {
    pub engine: Engine,
    pub client: Option<kube::Client>,
    /// Where plugins may come from (and the host's namespace).
    pub trust: Trust,
    /// The `--plugins` paths, re-read on every change.
    pub paths: Vec<PathBuf>,
    /// The Plugin objects, laid over the manifests' entries, when the host reads them.
    pub objects: Option<Arc<PluginObjects>>,
    pub plugins: Arc<S>,
    /// Where a plugin that fails to load is recorded, and a new version that fails counted.
    pub failures: Arc<LoadFailures>,
}

/// What the reloader watches, following the manifests.
struct Watches {
    files: notify::RecommendedWatcher,
    dirs: BTreeSet<PathBuf>,
    configmaps: BTreeMap<(String, String), tokio::task::JoinHandle<()>>,
    client: Option<kube::Client>,
    changed: mpsc::UnboundedSender<Written>,
}

impl<S: PluginSet> Reloader<S> {
    /// Watches until the returned task is dropped or aborted.
    pub fn spawn(self) -> anyhow::Result<tokio::task::JoinHandle<()>> {
        let (tx, rx) = mpsc::unbounded_channel::<Written>();
        let file_tx = tx.clone();
        let files = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            if let Some(written) = event.ok().and_then(|e| Written::of(&e.kind)) {
                let _ = file_tx.send(written);
            }
        })?;
        let mut watches = Watches {
            files,
            dirs: BTreeSet::new(),
            configmaps: BTreeMap::new(),
            client: self.client.clone(),
            changed: tx,
        };
        let (specs, _) = manifest::resolve_plugins(&self.paths, &self.trust.namespace);
        // Those the host starts with must be watched: a failure is an error of `wasmcm run`.
        for dir in watched_dirs(&self.paths, &specs) {
            watches
                .files
                .watch(&dir, notify::RecursiveMode::NonRecursive)
                .map_err(|e| anyhow::anyhow!("cannot watch {}: {e}", dir.display()))?;
            tracing::debug!(dir = %dir.display(), "watching for plugin changes");
            watches.dirs.insert(dir);
        }
        watches.follow(&self.paths, &specs);
        if let Some(objects) = &self.objects {
            let (mut changes, tx) = (objects.changes(), watches.changed.clone());
            tokio::spawn(async move { while changes.changed().await.is_ok() && tx.send(Written::Complete).is_ok() {} });
        }
        Ok(tokio::spawn(async move { self.run(rx, watches).await }))
    }

    async fn run(self, mut rx: mpsc::UnboundedReceiver<Written>, mut watches: Watches) {
        let mut state = Reloads::default();
        while let Some(mut written) = rx.recv().await {
            while written == Written::UnderWay {
                let next = match RELOAD_SETTLE {
                    Some(quiet) => tokio::time::timeout(quiet, rx.recv()).await.ok().flatten(),
                    None => rx.recv().await,
                };
                match next {
                    Some(w) => written = w,
                    None => break,
                }
            }
            // What came meanwhile is read by this reload.
            while rx.try_recv().is_ok() {}
            self.reload(&mut state, &mut watches).await;
        }
    }

    /// Re-reads the manifests and brings the running plugins to what they say.
    async fn reload(&self, state: &mut Reloads, watches: &mut Watches) {
        state.offers.retain(|_, (_, offer)| !offer.is_finished());
        let (specs, errors) = objects::desired(&self.paths, self.objects.as_deref(), &self.trust.namespace);
        for e in &errors {
            tracing::error!("not reloaded: {e}");
        }
        watches.follow(&self.paths, &specs);
        // Names only: a plugin held here could not let its informers go once removed.
        let running: Vec<String> = self.plugins.running().iter().map(|c| c.rollout().name().to_string()).collect();
        // Gone from the manifests, or disabled: removed (unless a manifest failed to read,
        // which may have hidden its entry).
        for name in &running {
            let spec = specs.iter().find(|s| s.name == *name);
            // An entry that failed to read may be this plugin's.
            let unread = errors.iter().any(|e| e.plugin.as_ref().is_none_or(|p| p == name));
            let gone = match spec {
                Some(s) => !s.enabled,
                None => !unread,
            };
            if gone {
                state.forget(name);
                tracing::info!(plugin = %name, "no longer in the manifests, or disabled: removing it");
                self.plugins.remove(name).await;
            }
        }
        // A failed plugin no manifest names any more is not a failure any more; an entry that
        // does not read is one.
        for failed in self.failures.list() {
            let unread = errors.iter().any(|e| e.plugin.as_ref().is_none_or(|p| *p == failed.plugin));
            if !unread && !specs.iter().any(|s| s.name == failed.plugin && s.enabled) {
                self.failures.loaded(&failed.plugin);
            }
        }
        for e in &errors {
            if let Some(plugin) = &e.plugin {
                self.failures.failed(&LoadFailure {
                    plugin: plugin.clone(),
                    reason: Reason::InvalidSpec,
                    message: e.to_string(),
                });
            }
        }
        for spec in specs.into_iter().filter(|s| s.enabled) {
            let running = self.plugins.running().into_iter().find(|c| c.rollout().name() == spec.name);
            self.reconcile(spec, running, state).await;
        }
    }

    /// Brings plugin `spec.name` to `spec`: loads and adds it, offers its new version, or
    /// replaces it.
    async fn reconcile(&self, spec: PluginSpec, running: Option<Arc<S::Plugin>>, state: &mut Reloads) {
        let bytes = match crate::lifecycle::loader::read(&spec, &self.trust, self.client.as_ref()).await {
            Ok(b) => b,
            Err(e) => return self.failed(&e, running.is_some()),
        };
        // Most events concern other files: skip the compile when nothing changed.
        let digest = hex::encode(Sha256::digest(&bytes));
        let offered = state.offers.get(&spec.name).is_some_and(|(d, _)| *d == digest);
        let current = running.as_ref().is_some_and(|c| offered || c.rollout().is_current(&digest, &spec));
        let tried = state.tried.get(&spec.name).is_some_and(|(d, s)| *d == digest && *s == spec);
        if current || (running.is_none() && tried) {
            return;
        }
        let (engine, owned) = (self.engine.clone(), spec.clone());
        let compiled =
            tokio::task::spawn_blocking(move || crate::lifecycle::loader::compile(&engine, &owned, &bytes)).await;
        let version = match compiled {
            Ok(Ok(v)) => v,
            Ok(Err(e)) => {
                if running.is_none() {
                    state.tried.insert(spec.name.clone(), (digest, spec));
                }
                return self.failed(&e, running.is_some());
            }
            Err(e) => return tracing::error!(plugin = %spec.name, "not reloaded: compile task failed: {e}"),
        };
        let what = format!("{} (sha256 {})", version.plugin.info().version, &digest[..12]);
        let name = spec.name.clone();
        let Some(controller) = running else {
            state.tried.remove(&name);
            return self.start(version, &what).await;
        };
        if let Some(why) = made_for_another(&controller.rollout().live(), &version) {
            state.forget(&name);
            tracing::info!(plugin = %name, "{what} {why}: replacing the running plugin");
            self.plugins.remove(&name).await;
            return self.start(version, &what).await;
        }
        let offer = tokio::spawn(async move {
            match controller.offer(version).await {
                Ok(offered) => tracing::info!(plugin = %name, "{what}: {offered:?}"),
                Err(e) => tracing::error!(plugin = %name, "{what} refused: {e}"),
            }
        });
        if let Some((_, superseded)) = state.offers.insert(spec.name, (digest, offer)) {
            superseded.abort();
        }
    }

    async fn start(&self, version: Version, what: &str) {
        let name = version.name().to_string();
        match self.plugins.add(version).await {
            Ok(()) => {
                self.failures.loaded(&name);
                tracing::info!(plugin = %name, "{what}: added");
            }
            Err(e) => tracing::error!(plugin = %name, "{what} not added: {e:#}"),
        }
    }

    /// A load that failed: a plugin that does not run is listed as failed; a new version of
    /// one that runs is counted, and the plugin keeps its version.
    fn failed(&self, failure: &LoadFailure, running: bool) {
        tracing::error!("not reloaded: {failure}");
        if running {
            self.failures.count(failure);
        } else {
            self.failures.failed(failure);
        }
    }
}

/// Why `new` cannot be a version of the controller `live` runs in (made for its identity, its
/// workers and its primary kind), if it cannot.
fn made_for_another(live: &Version, new: &Version) -> Option<String> {
    if live.spec.service_account != new.spec.service_account {
        return Some("writes as another ServiceAccount".into());
    }
    if live.spec.workers != new.spec.workers {
        return Some("has another number of workers".into());
    }
    let (old, now) = (&live.plugin.info().primary, &new.plugin.info().primary);
    (old != now).then(|| format!("reconciles {now}, not {old}"))
}

/// What the reloader remembers between reloads.
#[derive(Default)]
struct Reloads {
    offers: Offers,
    /// Plugins that do not run and failed to compile: the bytes (digest) and entry tried, not
    /// tried again until one of them changes.
    tried: BTreeMap<String, (String, PluginSpec)>,
}

impl Reloads {
    fn forget(&mut self, name: &str) {
        if let Some((_, offer)) = self.offers.remove(name) {
            offer.abort();
        }
        self.tried.remove(name);
    }
}

impl Watches {
    /// Watches what the manifests name now and did not before: their directories and
    /// ConfigMaps; stops watching the ConfigMaps they no longer name.
    fn follow(&mut self, paths: &[PathBuf], specs: &[PluginSpec]) {
        for dir in watched_dirs(paths, specs) {
            if self.dirs.contains(&dir) {
                continue;
            }
            match self.files.watch(&dir, notify::RecursiveMode::NonRecursive) {
                Ok(()) => {
                    tracing::debug!(dir = %dir.display(), "watching for plugin changes");
                    self.dirs.insert(dir);
                }
                Err(e) => tracing::warn!("cannot watch {}: {e}", dir.display()),
            }
        }
        let Some(client) = &self.client else { return };
        let wanted = configmap_sources(specs);
        self.configmaps.retain(|named, task| {
            let keep = wanted.contains(named);
            if !keep {
                task.abort();
            }
            keep
        });
        for (namespace, name) in wanted {
            if !self.configmaps.contains_key(&(namespace.clone(), name.clone())) {
                let task = tokio::spawn(watch_configmap(
                    client.clone(),
                    namespace.clone(),
                    name.clone(),
                    self.changed.clone(),
                ));
                self.configmaps.insert((namespace, name), task);
            }
        }
    }
}

impl Drop for Watches {
    fn drop(&mut self) {
        for task in self.configmaps.values() {
            task.abort();
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
async fn watch_configmap(client: kube::Client, namespace: String, name: String, tx: mpsc::UnboundedSender<Written>) {
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
                    let _ = tx.send(Written::Complete);
                }
                seen_initial = true;
            }
            // The initial list is what the host started with.
            Ok(watcher::Event::Apply(_) | watcher::Event::Delete(_)) if seen_initial => {
                let _ = tx.send(Written::Complete);
            }
            Ok(_) => {}
            Err(e) => {
                tracing::warn!(configmap = %format!("{namespace}/{name}"), "watching plugin ConfigMap: {e}");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}
