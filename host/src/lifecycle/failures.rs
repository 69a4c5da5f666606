//! The plugins that failed to load, by name, and why: what `GET /plugins` (so `wasmcm plugins
//! list`), `/readyz` and the `wasmcm_plugin_load_failures_total` series report, so that a
//! failure is more than a log line. A plugin that failed stays failed until it loads (the
//! reloader tries it again when its entry or bytes change) or leaves the manifests; a new
//! version of a running plugin that fails to load is counted, and the plugin keeps running the
//! version it has.
//!
//! Owns the record only; the loader says what failed and the admin endpoint shows it.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::lifecycle::loader::LoadFailure;
use crate::metrics::{Metrics, PluginReasonLabels};

pub struct LoadFailures {
    failed: Mutex<BTreeMap<String, LoadFailure>>,
    metrics: Arc<Metrics>,
}

impl LoadFailures {
    pub fn new(metrics: Arc<Metrics>) -> Self {
        LoadFailures { failed: Mutex::default(), metrics }
    }

    /// `failure` of a plugin that does not run; counted once however often it is tried
    /// again unchanged.
    pub fn failed(&self, failure: &LoadFailure) {
        let mut failed = self.lock();
        let same =
            failed.get(&failure.plugin).is_some_and(|f| f.reason == failure.reason && f.message == failure.message);
        if !same {
            self.count(failure);
            failed.insert(failure.plugin.clone(), failure.clone());
        }
    }

    /// `failure` of a new version of a plugin that runs: counted, not listed.
    pub fn count(&self, failure: &LoadFailure) {
        let labels = PluginReasonLabels { plugin: failure.plugin.clone(), reason: failure.reason.as_str().into() };
        self.metrics.plugin_load_failures.get_or_create(&labels).inc();
    }

    /// Plugin `plugin` loaded, or is no longer asked for: not failed any more.
    pub fn loaded(&self, plugin: &str) {
        self.lock().remove(plugin);
    }

    /// The failed plugins, by name.
    pub fn list(&self) -> Vec<LoadFailure> {
        self.lock().values().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, LoadFailure>> {
        self.failed.lock().unwrap_or_else(|e| e.into_inner())
    }
}
