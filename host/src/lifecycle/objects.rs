//! Plugin objects (`plugins.wasmcm.dev`, deploy/manifests/00-crd-plugins.yaml) as a source of
//! plugins beside the manifest files: a watch of them keeps each one's entry, read by the
//! manifests' rules, and wakes the reloader when an entry changes (a new generation) or an
//! object goes, never for a status write. On a cluster that does not serve the kind (the CRD
//! not installed) it waits for it, said once, and the host runs its files' plugins meanwhile.
//!
//! Owns the watch and the entries; what becomes of them is the reloader's, and the status the
//! replicas write is `lifecycle::status`'s.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use kube::api::{ApiResource, DynamicObject, GroupVersionKind};
use kube::runtime::watcher;
use tokio::sync::watch;

use crate::lifecycle::manifest::{self, ManifestError, PluginSpec};

/// The CRD, as deploy/ installs it and `wasmcm run` creates it on its embedded cluster.
pub const PLUGIN_CRD: &str = include_str!("../../../deploy/manifests/00-crd-plugins.yaml");

/// The Plugin kind's resource.
pub fn plugin_resource() -> ApiResource {
    ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("wasmcm.dev", "v1alpha1", "Plugin"), "plugins")
}

/// One Plugin object as last seen.
#[derive(Clone)]
pub(crate) struct Entry {
    pub generation: i64,
    pub uid: String,
    /// Its spec by the manifests' rules, or why it is not a plugin entry.
    pub spec: Result<PluginSpec, String>,
    /// `spec.rollout.promote` and `.abandon`: what to do with the candidate of that digest
    /// (hex). Decisions, not part of the entry: a change of them offers no new version.
    pub promote: Option<String>,
    pub abandon: Option<String>,
}

pub struct PluginObjects {
    entries: Mutex<BTreeMap<String, Entry>>,
    /// True once the first list is in or has failed.
    listed: watch::Sender<bool>,
    /// Counts the changes of entries.
    changes: watch::Sender<u64>,
}

impl PluginObjects {
    /// Watches the cluster's Plugin objects until the returned task is dropped or aborted.
    /// `namespace`: the host's (a ConfigMap source that names none is read from it).
    pub fn watch(client: kube::Client, namespace: String) -> (Arc<PluginObjects>, tokio::task::JoinHandle<()>) {
        let objects = Arc::new(PluginObjects {
            entries: Mutex::default(),
            listed: watch::channel(false).0,
            changes: watch::channel(0).0,
        });
        let task = tokio::spawn(objects.clone().follow(client, namespace));
        (objects, task)
    }

    /// Each change of an entry (a new generation, an object added or gone).
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Resolves once the first list is in, or has failed (the kind not served, not allowed).
    pub async fn listed(&self) {
        let _ = self.listed.subscribe().wait_for(|l| *l).await;
    }

    /// The objects' entries, by name, and the objects that are not valid entries.
    pub fn specs(&self) -> (Vec<PluginSpec>, Vec<ManifestError>) {
        let entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let (mut specs, mut errors) = (Vec::new(), Vec::new());
        for (name, entry) in entries.iter() {
            match &entry.spec {
                Ok(spec) => specs.push(spec.clone()),
                Err(reason) => errors.push(ManifestError {
                    file: format!("Plugin {name}"),
                    plugin: Some(name.clone()),
                    reason: reason.clone(),
                }),
            }
        }
        (specs, errors)
    }

    /// Plugin object `name` as last seen.
    pub(crate) fn get(&self, name: &str) -> Option<Entry> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).get(name).cloned()
    }

    /// Every object as last seen, by name.
    pub(crate) fn entries(&self) -> BTreeMap<String, Entry> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    async fn follow(self: Arc<Self>, client: kube::Client, namespace: String) {
        let api: kube::Api<DynamicObject> = kube::Api::all_with(client, &plugin_resource());
        let mut events = std::pin::pin!(watcher(api, watcher::Config::default()));
        let mut relisted: Option<BTreeMap<String, Entry>> = None;
        let mut unserved_said = false;
        while let Some(event) = events.next().await {
            let wake = match event {
                Ok(watcher::Event::Init) => {
                    relisted = Some(BTreeMap::new());
                    false
                }
                Ok(watcher::Event::InitApply(o)) => {
                    if let (Some(fresh), Some((name, entry))) = (relisted.as_mut(), entry_of(&o, &namespace)) {
                        fresh.insert(name, entry);
                    }
                    false
                }
                Ok(watcher::Event::InitDone) => {
                    let fresh = relisted.take().unwrap_or_default();
                    let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
                    let differs = !same_generations(&entries, &fresh);
                    *entries = fresh;
                    drop(entries);
                    self.listed.send_replace(true);
                    differs
                }
                Ok(watcher::Event::Apply(o)) => match entry_of(&o, &namespace) {
                    Some((name, entry)) => {
                        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
                        let known =
                            entries.get(&name).is_some_and(|e| e.generation == entry.generation && e.uid == entry.uid);
                        entries.insert(name, entry);
                        !known
                    }
                    None => false,
                },
                Ok(watcher::Event::Delete(o)) => {
                    let name = o.metadata.name.unwrap_or_default();
                    self.entries.lock().unwrap_or_else(|e| e.into_inner()).remove(&name).is_some()
                }
                Err(e) => {
                    let unserved =
                        matches!(&e, watcher::Error::InitialListFailed(kube::Error::Api(s)) if s.code == 404);
                    if unserved {
                        if !unserved_said {
                            tracing::info!(
                                "the cluster does not serve wasmcm.dev/v1alpha1 Plugin (its CRD, \
                                 deploy/manifests/00-crd-plugins.yaml, not installed?): running the manifests' \
                                 plugins, waiting for it"
                            );
                            unserved_said = true;
                        }
                    } else {
                        tracing::warn!("watching Plugin objects: {e}");
                    }
                    // The host starts with its manifests' plugins; the objects come when listed.
                    self.listed.send_replace(true);
                    tokio::time::sleep(Duration::from_secs(if unserved { 5 } else { 1 })).await;
                    false
                }
            };
            if wake {
                self.changes.send_modify(|n| *n += 1);
            }
        }
    }
}

/// What should run: the manifests' entries with the Plugin objects' over them, and the
/// entries that do not read.
pub(crate) fn desired(
    paths: &[std::path::PathBuf],
    objects: Option<&PluginObjects>,
    namespace: &str,
) -> (Vec<PluginSpec>, Vec<ManifestError>) {
    let (specs, mut errors) = manifest::resolve_plugins(paths, namespace);
    let Some(objects) = objects else { return (specs, errors) };
    let (over, invalid) = objects.specs();
    errors.extend(invalid);
    (manifest::overlay(specs, over), errors)
}

/// The entry of Plugin object `o`, by name.
fn entry_of(o: &DynamicObject, namespace: &str) -> Option<(String, Entry)> {
    let name = o.metadata.name.clone()?;
    let mut spec = o.data.get("spec").cloned().unwrap_or_default();
    let mut decision = |key: &str| {
        let rollout = spec.get_mut("rollout")?.as_object_mut()?;
        let digest = rollout.remove(key)?;
        if rollout.is_empty() {
            spec.as_object_mut().map(|s| s.remove("rollout"));
        }
        digest.as_str().map(|d| d.trim_start_matches("sha256:").to_string())
    };
    let (promote, abandon) = (decision("promote"), decision("abandon"));
    let spec = manifest::from_object(&name, spec, namespace).map_err(|e| e.reason);
    let generation = o.metadata.generation.unwrap_or(0);
    let uid = o.metadata.uid.clone().unwrap_or_default();
    Some((name, Entry { generation, uid, spec, promote, abandon }))
}

fn same_generations(a: &BTreeMap<String, Entry>, b: &BTreeMap<String, Entry>) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|((n, x), (m, y))| n == m && x.generation == y.generation && x.uid == y.uid)
}
