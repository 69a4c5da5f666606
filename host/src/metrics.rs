//! Observability: the Prometheus metrics of the host (client-go's workqueue metric names,
//! reconciles by outcome and duration per plugin and version, leader status, informer object
//! counts, plugin versions, traps, shadow comparisons, swaps and reverts). It records what
//! others report and reads nothing from the cluster; `admin` serves it.

use std::collections::BTreeMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

use prometheus_client::encoding::{EncodeLabelSet, EncodeMetric, MetricEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::metrics::{MetricType, TypedMetric};
use prometheus_client::registry::Registry;

type HistogramFamily<S> = Family<S, Histogram, fn() -> Histogram>;

/// The label sets, one per family shape. Fields are labels, in the order they are exposed.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, EncodeLabelSet)]
pub(crate) struct QueueLabels {
    /// client-go's workqueue metrics name the queue `name`: the plugin's.
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, EncodeLabelSet)]
pub(crate) struct PluginLabels {
    pub plugin: String,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, EncodeLabelSet)]
pub(crate) struct VersionLabels {
    pub plugin: String,
    pub version: String,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, EncodeLabelSet)]
pub(crate) struct OutcomeLabels {
    pub plugin: String,
    pub version: String,
    pub outcome: String,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, EncodeLabelSet)]
pub(crate) struct TrapLabels {
    pub plugin: String,
    pub version: String,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, EncodeLabelSet)]
pub(crate) struct ShadowLabels {
    pub plugin: String,
    pub version: String,
    pub result: String,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, EncodeLabelSet)]
pub(crate) struct InfoLabels {
    pub plugin: String,
    pub version: String,
    pub digest: String,
    pub state: String,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, EncodeLabelSet)]
pub(crate) struct LoadLabels {
    pub plugin: String,
    pub version: String,
    pub cached: String,
}

/// A plugin and why it failed to load (`LoadFailure::reason`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, EncodeLabelSet)]
pub(crate) struct PluginReasonLabels {
    pub plugin: String,
    pub reason: String,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, EncodeLabelSet)]
pub(crate) struct ShardLabels {
    pub shard: String,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, EncodeLabelSet)]
pub(crate) struct ShardPluginLabels {
    pub plugin: String,
    pub shard: String,
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, EncodeLabelSet)]
pub(crate) struct HandoverLabels {
    /// acquired, released, lost.
    pub kind: String,
}

/// An informer: its kind, and the namespaces it lists when not every one (comma-separated;
/// the label is left out for a cluster-wide informer).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct KindLabels {
    pub kind: String,
    pub namespaces: Option<String>,
}

impl KindLabels {
    /// The labels of the informer of `kind` in `namespaces` (`None`: every one).
    pub(crate) fn of(kind: &wasmcm_guest::Kind, namespaces: Option<&std::collections::BTreeSet<String>>) -> Self {
        KindLabels {
            kind: kind.to_string(),
            namespaces: namespaces.map(|ns| ns.iter().cloned().collect::<Vec<_>>().join(",")),
        }
    }

    fn pairs(&self) -> Vec<(&str, &str)> {
        let mut pairs = vec![("kind", self.kind.as_str())];
        pairs.extend(self.namespaces.as_deref().map(|ns| ("namespaces", ns)));
        pairs
    }
}

impl EncodeLabelSet for KindLabels {
    fn encode(&self, encoder: &mut prometheus_client::encoding::LabelSetEncoder) -> Result<(), std::fmt::Error> {
        self.pairs().encode(encoder)
    }
}

#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub(crate) struct BytesLabels {
    pub of: KindLabels,
    /// `json`: the objects as served; `index`: entries, parsed fields and indexes besides.
    pub part: String,
}

impl EncodeLabelSet for BytesLabels {
    fn encode(&self, encoder: &mut prometheus_client::encoding::LabelSetEncoder) -> Result<(), std::fmt::Error> {
        let mut pairs = self.of.pairs();
        pairs.push(("part", &self.part));
        pairs.encode(encoder)
    }
}

type Refresher = Box<dyn Fn() + Send + Sync>;

/// A metric per label set, exposed in label order. prometheus-client's own `Family` keeps its
/// label sets in a `HashMap`, so `/metrics` would list them in a different order on every
/// start.
pub(crate) struct Family<S, M, C = fn() -> M> {
    metrics: Arc<Mutex<BTreeMap<S, M>>>,
    new: C,
}

impl<S: Ord + Clone, M: Default + Clone> Default for Family<S, M> {
    fn default() -> Self {
        Family::new_with_constructor(M::default)
    }
}

impl<S, M, C: Clone> Clone for Family<S, M, C> {
    fn clone(&self) -> Self {
        Family { metrics: self.metrics.clone(), new: self.new.clone() }
    }
}

impl<S: Ord + Clone, M: Clone, C: Fn() -> M> Family<S, M, C> {
    pub(crate) fn new_with_constructor(new: C) -> Self {
        Family { metrics: Arc::default(), new }
    }

    /// The metric of `labels` (prometheus-client's metrics share their value between clones).
    pub(crate) fn get_or_create(&self, labels: &S) -> M {
        let mut metrics = self.metrics.lock().unwrap_or_else(|e| e.into_inner());
        metrics.entry(labels.clone()).or_insert_with(&self.new).clone()
    }

    pub(crate) fn remove(&self, labels: &S) {
        self.metrics.lock().unwrap_or_else(|e| e.into_inner()).remove(labels);
    }

    /// Keeps only the label sets `keep` accepts.
    pub(crate) fn retain(&self, keep: impl Fn(&S) -> bool) {
        self.metrics.lock().unwrap_or_else(|e| e.into_inner()).retain(|labels, _| keep(labels));
    }
}

impl<S, M, C> std::fmt::Debug for Family<S, M, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Family").finish_non_exhaustive()
    }
}

impl<S, M, C> EncodeMetric for Family<S, M, C>
where
    S: EncodeLabelSet + Send + Sync + 'static,
    M: EncodeMetric + TypedMetric,
    C: Send + Sync + 'static,
{
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        let metrics = self.metrics.lock().unwrap_or_else(|e| e.into_inner());
        for (labels, metric) in metrics.iter() {
            metric.encode(encoder.encode_family(labels)?)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        M::TYPE
    }
}

fn latency_histogram() -> Histogram {
    // 1 ms … ~16 s, as client-go's workqueue buckets span.
    Histogram::new(exponential_buckets(0.001, 2.0, 15))
}

pub struct Metrics {
    registry: Registry,
    pub(crate) queue_depth: Family<QueueLabels, Gauge>,
    pub(crate) queue_adds: Family<QueueLabels, Counter>,
    pub(crate) queue_duration: HistogramFamily<QueueLabels>,
    pub(crate) work_duration: HistogramFamily<QueueLabels>,
    pub(crate) queue_retries: Family<QueueLabels, Counter>,
    pub(crate) unfinished_work: Family<QueueLabels, Gauge<f64, AtomicU64>>,
    pub(crate) longest_running: Family<QueueLabels, Gauge<f64, AtomicU64>>,
    pub(crate) keys_in_backoff: Family<QueueLabels, Gauge>,
    pub(crate) reconciles: Family<OutcomeLabels, Counter>,
    pub(crate) reconcile_duration: HistogramFamily<VersionLabels>,
    pub(crate) intents_refused: Family<VersionLabels, Counter>,
    pub(crate) intents_executed: Family<VersionLabels, Counter>,
    pub(crate) traps: Family<TrapLabels, Counter>,
    pub(crate) shadow_comparisons: Family<ShadowLabels, Counter>,
    pub(crate) plugin_swaps: Family<PluginLabels, Counter>,
    pub(crate) plugin_reverts: Family<PluginLabels, Counter>,
    pub(crate) plugin_info: Family<InfoLabels, Gauge>,
    pub(crate) plugin_load_seconds: Family<LoadLabels, Gauge<f64, AtomicU64>>,
    pub(crate) plugin_load_failures: Family<PluginReasonLabels, Counter>,
    pub(crate) leader: Gauge,
    pub(crate) plugin_synced: Family<PluginLabels, Gauge>,
    pub(crate) informer_objects: Family<KindLabels, Gauge>,
    pub(crate) informer_bytes: Family<BytesLabels, Gauge>,
    pub(crate) shard_held: Family<ShardLabels, Gauge>,
    pub(crate) shard_handovers: Family<HandoverLabels, Counter>,
    pub(crate) shard_keys: Family<ShardPluginLabels, Gauge>,
    pub(crate) shard_queue_depth: Family<ShardPluginLabels, Gauge>,
    pub(crate) group_shape_mismatch: Gauge,
    /// Gauges computed when scraped (in-flight work ages, informer sizes), with the plugin
    /// each one reports on, if one.
    refreshers: Mutex<Vec<(Option<String>, Refresher)>>,
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::default();
        let m = Metrics {
            queue_depth: Family::default(),
            queue_adds: Family::default(),
            queue_duration: Family::new_with_constructor(latency_histogram),
            work_duration: Family::new_with_constructor(latency_histogram),
            queue_retries: Family::default(),
            unfinished_work: Family::default(),
            longest_running: Family::default(),
            keys_in_backoff: Family::default(),
            reconciles: Family::default(),
            reconcile_duration: Family::new_with_constructor(latency_histogram),
            intents_refused: Family::default(),
            intents_executed: Family::default(),
            traps: Family::default(),
            shadow_comparisons: Family::default(),
            plugin_swaps: Family::default(),
            plugin_reverts: Family::default(),
            plugin_info: Family::default(),
            plugin_load_seconds: Family::default(),
            plugin_load_failures: Family::default(),
            leader: Gauge::default(),
            plugin_synced: Family::default(),
            informer_objects: Family::default(),
            informer_bytes: Family::default(),
            shard_held: Family::default(),
            shard_handovers: Family::default(),
            shard_keys: Family::default(),
            shard_queue_depth: Family::default(),
            group_shape_mismatch: Gauge::default(),
            refreshers: Mutex::new(Vec::new()),
            registry: Registry::default(),
        };
        registry.register("workqueue_depth", "Current depth of the work queue", m.queue_depth.clone());
        registry.register("workqueue_adds", "Total number of adds handled by the work queue", m.queue_adds.clone());
        registry.register(
            "workqueue_queue_duration_seconds",
            "How long in seconds an item stays in the work queue before being requested",
            m.queue_duration.clone(),
        );
        registry.register(
            "workqueue_work_duration_seconds",
            "How long in seconds processing an item from the work queue takes",
            m.work_duration.clone(),
        );
        registry.register(
            "workqueue_retries",
            "Total number of retries handled by the work queue",
            m.queue_retries.clone(),
        );
        registry.register(
            "workqueue_unfinished_work_seconds",
            "How many seconds of work has been done that is in progress and hasn't been observed by work_duration",
            m.unfinished_work.clone(),
        );
        registry.register(
            "workqueue_longest_running_processor_seconds",
            "How many seconds the longest running processor for the work queue has been running",
            m.longest_running.clone(),
        );
        registry.register(
            "wasmcm_keys_in_backoff",
            "Keys whose last reconcile failed, waiting for a retry with backoff (never dropped)",
            m.keys_in_backoff.clone(),
        );
        registry.register("wasmcm_reconciles", "Reconciles by plugin, version and outcome", m.reconciles.clone());
        registry.register(
            "wasmcm_reconcile_duration_seconds",
            "Duration of a reconcile (plugin call and writes) by plugin and version",
            m.reconcile_duration.clone(),
        );
        registry.register(
            "wasmcm_intents_refused",
            "Intents refused by the writer (undeclared kind, other namespace, malformed), by plugin and version",
            m.intents_refused.clone(),
        );
        registry.register(
            "wasmcm_intents_executed",
            "Intents the writer performed, by plugin and version",
            m.intents_executed.clone(),
        );
        registry.register(
            "wasmcm_plugin_traps",
            "Plugin calls that trapped, by plugin, version and reason (deadline, memory, panic, capability, ...)",
            m.traps.clone(),
        );
        registry.register(
            "wasmcm_shadow_comparisons",
            "Shadow candidate outcomes compared with the live version's, by plugin, candidate version and result",
            m.shadow_comparisons.clone(),
        );
        registry.register("wasmcm_plugin_swaps", "New plugin versions promoted while running", m.plugin_swaps.clone());
        registry.register("wasmcm_plugin_reverts", "Promoted versions reverted for failing", m.plugin_reverts.clone());
        registry.register(
            "wasmcm_plugin_info",
            "1 for each loaded plugin version, with its digest and state (live, shadow)",
            m.plugin_info.clone(),
        );
        registry.register(
            "wasmcm_plugin_load_seconds",
            "Time to compile (or read from the precompiled cache) each loaded plugin version",
            m.plugin_load_seconds.clone(),
        );
        registry.register(
            "wasmcm_plugin_load_failures",
            "Plugin versions that failed to load, by plugin and reason (NotTrusted, NotFound, Unreadable, \
             DigestMismatch, InvalidComponent)",
            m.plugin_load_failures.clone(),
        );
        registry.register("wasmcm_leader", "1 while this host holds the leader lease", m.leader.clone());
        registry.register(
            "wasmcm_plugin_synced",
            "1 once every informer a plugin reads has synced; until then it does not reconcile",
            m.plugin_synced.clone(),
        );
        registry.register("wasmcm_informer_objects", "Objects in each informer's cache", m.informer_objects.clone());
        registry.register(
            "wasmcm_informer_bytes",
            "Heap bytes of each informer's cache: the objects' JSON, and entries and indexes besides",
            m.informer_bytes.clone(),
        );
        registry.register("wasmcm_shard_held", "1 for each shard whose Lease this replica holds", m.shard_held.clone());
        registry.register(
            "wasmcm_shard_handovers",
            "Shard Leases this replica acquired, released (handed over) or lost (not renewed in time)",
            m.shard_handovers.clone(),
        );
        registry.register(
            "wasmcm_shard_keys",
            "Primaries cached in each shard this replica runs, by plugin",
            m.shard_keys.clone(),
        );
        registry.register(
            "wasmcm_group_shape_mismatch",
            "1 while the replica group's Lease says another shape (leader or shard count, lease duration) than this \
             replica's, which then takes nothing",
            m.group_shape_mismatch.clone(),
        );
        registry.register(
            "wasmcm_shard_queue_depth",
            "Keys waiting in each plugin's work queue, by the shard they fall in",
            m.shard_queue_depth.clone(),
        );
        Metrics { registry, ..m }
    }
}

impl Metrics {
    pub fn on_scrape(&self, refresh: impl Fn() + Send + Sync + 'static) {
        if let Ok(mut r) = self.refreshers.lock() {
            r.push((None, Box::new(refresh)));
        }
    }

    /// `refresh`, run on every scrape until `plugin` is forgotten.
    pub(crate) fn on_scrape_of(&self, plugin: &str, refresh: impl Fn() + Send + Sync + 'static) {
        if let Ok(mut r) = self.refreshers.lock() {
            r.push((Some(plugin.into()), Box::new(refresh)));
        }
    }

    /// A plugin removed from the host: its refreshers and the gauges that describe it now go
    /// (its counters stay, so a rate over them is not broken by a removal and a return).
    pub(crate) fn forget_plugin(&self, plugin: &str) {
        if let Ok(mut r) = self.refreshers.lock() {
            r.retain(|(of, _)| of.as_deref() != Some(plugin));
        }
        let queue = |l: &QueueLabels| l.name != plugin;
        self.queue_depth.retain(queue);
        self.unfinished_work.retain(queue);
        self.longest_running.retain(queue);
        self.keys_in_backoff.retain(queue);
        self.plugin_info.retain(|l| l.plugin != plugin);
        self.plugin_synced.retain(|l| l.plugin != plugin);
        self.shard_keys.retain(|l| l.plugin != plugin);
        self.shard_queue_depth.retain(|l| l.plugin != plugin);
    }

    /// An informer no longer running: its size series go.
    pub(crate) fn forget_informer(&self, labels: &KindLabels) {
        self.informer_objects.remove(labels);
        self.informer_bytes.retain(|l| l.of != *labels);
    }

    /// The Prometheus text exposition.
    pub fn encode(&self) -> String {
        if let Ok(refreshers) = self.refreshers.lock() {
            for (_, r) in refreshers.iter() {
                r();
            }
        }
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            return String::new();
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exposition is the same whatever order label sets were first seen in.
    #[test]
    fn label_sets_are_exposed_in_order() {
        let text = |plugins: &[&str]| {
            let m = Metrics::default();
            for p in plugins {
                let labels = OutcomeLabels { plugin: (*p).into(), version: "1".into(), outcome: "ok".into() };
                m.reconciles.get_or_create(&labels).inc();
            }
            m.encode()
        };
        let forward = text(&["a", "b", "c", "d", "e", "f", "g", "h"]);
        assert_eq!(forward, text(&["h", "g", "f", "e", "d", "c", "b", "a"]));
        let (a, h) = (forward.find("plugin=\"a\"").unwrap(), forward.find("plugin=\"h\"").unwrap());
        assert!(a < h, "{forward}");
    }
}
