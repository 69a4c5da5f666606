//! The plugins that failed to load, by name, and why: what `GET /plugins` (so `wasmcm plugins
//! list`), `/readyz` and the `wasmcm_plugin_load_failures_total` series report, so that a
//! failure is more than a log line. A plugin that failed at start stays failed until the host
//! restarts; a new version of a running plugin that fails to load is counted, and the plugin
//! keeps running the version it has.
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

    /// `failure` of a plugin that does not run.
    pub fn failed(&self, failure: &LoadFailure) {
        self.count(failure);
        self.lock().insert(failure.plugin.clone(), failure.clone());
    }

    /// `failure` of a new version of a plugin that runs: counted, not listed.
    pub fn count(&self, failure: &LoadFailure) {
        let labels = PluginReasonLabels { plugin: failure.plugin.clone(), reason: failure.reason.as_str().into() };
        self.metrics.plugin_load_failures.get_or_create(&labels).inc();
    }

    /// The failed plugins, by name.
    pub fn list(&self) -> Vec<LoadFailure> {
        self.lock().values().cloned().collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, LoadFailure>> {
        self.failed.lock().unwrap_or_else(|e| e.into_inner())
    }
}
