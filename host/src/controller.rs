//! One plugin at work: informer changes become keys (its primary's own; the controlling
//! primary of an owned object; every matching primary for an adoptable orphan; the primary
//! above a watched object's owner), keys go through the work queue to N workers, each
//! reconcile runs the plugin off the async threads and hands the outcome to the writer, and
//! failures are retried with backoff up to a limit.
//!
//! It owns the queue, expectations and retry state of its plugin; it must not write to the
//! cluster itself (the writer does) nor touch other plugins.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use wasmcm_guest::{Instant, Kind, Request, Selector};

use crate::expectations::Expectations;
use crate::informers::{Change, Informer, Informers, Object, PluginCache};
use crate::metrics::Metrics;
use crate::plugins::{CallError, Plugin};
use crate::queue::{RateLimit, WorkQueue};
use crate::writer::{self, Api};

#[derive(Clone, Debug)]
pub struct ControllerConfig {
    pub workers: usize,
    /// Retries of one key before it is dropped until its next change (the deployment
    /// controller's `maxRetries`).
    pub max_retries: u32,
    pub rate: RateLimit,
    /// Reconcile every primary this often even without changes (off by default).
    pub resync: Option<std::time::Duration>,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig { workers: 5, max_retries: 15, rate: RateLimit::default(), resync: None }
    }
}

pub struct Controller<A> {
    plugin: Arc<Plugin>,
    api: Arc<A>,
    queue: Arc<WorkQueue<String>>,
    expectations: Expectations,
    cache: Arc<PluginCache>,
    primary: Arc<Informer>,
    owned: Vec<Arc<Informer>>,
    /// Every informer the plugin declared: primary, owned, watched.
    informers: Vec<Arc<Informer>>,
    /// Why each key's last outcome failed to be written.
    failures: Mutex<HashMap<String, String>>,
    config: ControllerConfig,
    metrics: Arc<Metrics>,
}

fn group_of(api_version: &str) -> &str {
    api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("")
}

fn refers_to(controller: &(String, String, String), kind: &Kind) -> bool {
    controller.1 == kind.kind && group_of(&controller.0) == group_of(&kind.api_version)
}

impl<A: Api + Send + Sync + 'static> Controller<A> {
    /// Starts the informers the plugin declared and waits until they have synced.
    pub async fn new(
        plugin: Arc<Plugin>,
        informers: &Informers,
        api: Arc<A>,
        config: ControllerConfig,
        metrics: Arc<Metrics>,
    ) -> anyhow::Result<Arc<Self>> {
        let info = plugin.info().clone();
        let primary = informers.informer(&info.primary).await?;
        let mut owned = Vec::new();
        for k in &info.owns {
            owned.push(informers.informer(k).await?);
        }
        let mut watched = Vec::new();
        for k in &info.watches {
            watched.push(informers.informer(k).await?);
        }
        let all: Vec<Arc<Informer>> = std::iter::once(primary.clone()).chain(owned.clone()).chain(watched).collect();
        for i in &all {
            i.wait_synced().await;
        }
        let queue = Arc::new(WorkQueue::new(config.rate.clone()).with_metrics(metrics.clone(), &info.name));
        {
            let (queue, informers, m) = (queue.clone(), all.clone(), metrics.clone());
            metrics.on_scrape(move || {
                queue.refresh_metrics();
                for i in &informers {
                    m.informer_objects.get_or_create(&vec![("kind".into(), i.kind().to_string())]).set(i.len() as i64);
                }
            });
        }
        Ok(Arc::new(Controller {
            cache: Arc::new(PluginCache::new(all.clone())),
            informers: all,
            queue,
            metrics,
            expectations: Expectations::default(),
            failures: Mutex::new(HashMap::new()),
            plugin,
            api,
            primary,
            owned,
            config,
        }))
    }

    pub fn queue(&self) -> &Arc<WorkQueue<String>> {
        &self.queue
    }

    /// Routes changes and runs the workers until the queue is shut down.
    pub async fn run(self: Arc<Self>) {
        let mut tasks = tokio::task::JoinSet::new();
        for informer in self.informers.clone() {
            let me = self.clone();
            let mut changes = informer.subscribe();
            tasks.spawn(async move {
                loop {
                    match changes.recv().await {
                        Ok(change) => me.route(&change),
                        Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                            // Events were lost: reconcile everything this plugin owns.
                            tracing::warn!(plugin = %me.plugin.info().name, missed = n, "event stream lagged; resyncing");
                            me.enqueue_all();
                        }
                        Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
                    }
                }
            });
        }
        self.enqueue_all();
        if let Some(period) = self.config.resync.filter(|p| !p.is_zero()) {
            let me = self.clone();
            tasks.spawn(async move {
                let mut tick = tokio::time::interval(period);
                tick.tick().await;
                loop {
                    tick.tick().await;
                    me.enqueue_all();
                }
            });
        }
        let mut workers = tokio::task::JoinSet::new();
        for _ in 0..self.config.workers.max(1) {
            let me = self.clone();
            workers.spawn(async move {
                while let Some(key) = me.queue.get().await {
                    me.process(&key).await;
                    me.queue.done(&key);
                }
            });
        }
        while workers.join_next().await.is_some() {}
        tasks.shutdown().await;
    }

    fn enqueue_all(&self) {
        for o in self.primary.list("", &Selector::everything()) {
            self.queue.add(o.key());
        }
    }

    /// The keys a change concerns, and what it tells the expectations.
    fn route(&self, change: &Change) {
        let info = self.plugin.info();
        let o = &change.object;
        if change.kind == info.primary {
            if change.deleted {
                self.expectations.forget(&o.key());
            }
            self.queue.add(o.key());
            return;
        }
        let owner_key = |obj: &Object| {
            obj.controller
                .as_ref()
                .filter(|c| refers_to(c, &info.primary))
                .map(|c| if obj.namespace.is_empty() { c.2.clone() } else { format!("{}/{}", obj.namespace, c.2) })
        };
        if info.owns.contains(&change.kind) {
            if change.deleted {
                self.expectations.deletion_observed(&writer::deletion_id(&change.kind, &o.namespace, &o.name));
            }
            match owner_key(o) {
                Some(key) => {
                    if change.old.is_none() && !change.deleted {
                        self.expectations.creation_observed(&key);
                    }
                    self.queue.add(key);
                }
                // An orphan: every primary that could adopt it takes a look (as KCM does).
                None if !change.deleted => self.enqueue_matching_primaries(o),
                None => {}
            }
            // The controller changed: the previous owner must recount too.
            if let Some(old_key) = change.old.as_deref().and_then(owner_key)
                && Some(&old_key) != owner_key(o).as_ref()
            {
                self.queue.add(old_key);
            }
            return;
        }
        // A watched kind: its controller is either the primary or an owned object.
        if let Some(key) = owner_key(o) {
            self.queue.add(key);
        } else if let Some(c) = &o.controller
            && let Some(parent_informer) = self.owned.iter().find(|i| refers_to(c, i.kind()))
            && let Some(parent) = parent_informer.get(&o.namespace, &c.2)
            && let Some(key) = owner_key(&parent)
        {
            self.queue.add(key);
        }
    }

    fn enqueue_matching_primaries(&self, orphan: &Object) {
        for p in self.primary.list(&orphan.namespace, &Selector::everything()) {
            let selector = serde_json::from_str::<serde_json::Value>(&p.json)
                .ok()
                .and_then(|v| v.pointer("/spec/selector").cloned())
                .and_then(|s| serde_json::from_value(s).ok())
                .and_then(|ls| Selector::from_label_selector(&ls).ok());
            if selector.is_some_and(|s| !s.is_empty() && s.matches(&orphan.labels)) {
                self.queue.add(p.key());
            }
        }
    }

    async fn process(&self, key: &str) {
        let info = self.plugin.info();
        if !self.expectations.satisfied(key) {
            // The informers have not seen this key's last writes yet; their events bring it
            // back. Expired expectations bring it back at the latest.
            self.queue.add_after(key.to_string(), crate::expectations::TIMEOUT);
            return;
        }
        let (namespace, name) = key.split_once('/').unwrap_or(("", key));
        let previous_failure = self.failures.lock().ok().and_then(|f| f.get(key).cloned());
        let request = Request {
            namespace: namespace.into(),
            name: name.into(),
            now: Instant::from_timestamp(jiff::Timestamp::now()),
            previous_failure,
            settings: "{}".into(),
        };
        let plugin = self.plugin.clone();
        let cache: Arc<dyn wasmcm_guest::Cache + Send + Sync> = self.cache.clone();
        let started = std::time::Instant::now();
        let span = tracing::info_span!(
            "reconcile",
            plugin = %info.name,
            version = %info.version,
            key,
            duration_ms = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        let outcome =
            tracing::Instrument::instrument(self.reconcile(key, namespace, name, request, plugin, cache), span.clone())
                .await;
        span.record("duration_ms", started.elapsed().as_millis() as u64);
        span.record("outcome", outcome);
        span.in_scope(|| tracing::debug!("reconciled"));
        let labels = vec![
            ("plugin".to_string(), info.name.clone()),
            ("version".to_string(), info.version.clone()),
            ("outcome".to_string(), outcome.to_string()),
        ];
        self.metrics.reconciles.get_or_create(&labels).inc();
        self.metrics.reconcile_duration.get_or_create(&labels[..2].to_vec()).observe(started.elapsed().as_secs_f64());
    }

    /// Runs the plugin and the writer for `key`; returns the outcome's metric label.
    async fn reconcile(
        &self,
        key: &str,
        namespace: &str,
        name: &str,
        request: Request,
        plugin: Arc<Plugin>,
        cache: Arc<dyn wasmcm_guest::Cache + Send + Sync>,
    ) -> &'static str {
        let info = self.plugin.info();
        let result = tokio::task::spawn_blocking(move || plugin.reconcile(&request, cache)).await;
        let result = match result {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(plugin = %info.name, key, "reconcile task failed: {e}");
                self.retry(key, "the reconcile task failed");
                return "error";
            }
        };
        match result {
            Ok(outcome) => {
                let uid = self.primary.get(namespace, name).map(|o| o.uid.clone());
                let context = writer::Context { expectations: Some(&self.expectations), primary_uid: uid.as_deref() };
                let report = writer::execute(&*self.api, info, namespace, name, &outcome, context).await;
                tracing::debug!(actions = report.actions.len(), refused = report.refused.len(), "outcome written");
                if !report.refused.is_empty() {
                    let labels = vec![("plugin".to_string(), info.name.clone())];
                    self.metrics.intents_refused.get_or_create(&labels).inc_by(report.refused.len() as u64);
                }
                match report.failure {
                    Some(failure) => {
                        if let Ok(mut f) = self.failures.lock() {
                            f.insert(key.to_string(), failure.clone());
                        }
                        self.retry(key, &failure);
                        "write_failed"
                    }
                    None => {
                        if let Ok(mut f) = self.failures.lock() {
                            f.remove(key);
                        }
                        self.queue.forget(&key.to_string());
                        if let Some(ms) = outcome.requeue_after_ms {
                            self.queue.add_after(key.to_string(), std::time::Duration::from_millis(ms));
                        }
                        "success"
                    }
                }
            }
            Err(e @ CallError::Plugin { retryable: false, .. }) => {
                tracing::error!(plugin = %info.name, key, "{e}; not retrying until the object changes");
                self.queue.forget(&key.to_string());
                "error"
            }
            Err(e @ CallError::Plugin { .. }) => {
                tracing::warn!(plugin = %info.name, key, "{e}");
                self.retry(key, &e.to_string());
                "error"
            }
            Err(e) => {
                tracing::warn!(plugin = %info.name, key, "{e}");
                self.retry(key, &e.to_string());
                "trap"
            }
        }
    }

    fn retry(&self, key: &str, why: &str) {
        let key = key.to_string();
        if self.queue.num_requeues(&key) >= self.config.max_retries {
            let info = self.plugin.info();
            tracing::error!(plugin = %info.name, key, "dropping after {} retries: {why}", self.config.max_retries);
            self.queue.forget(&key);
            // Tell whoever looks at the object, as the log alone would not.
            let (namespace, name) = key.split_once('/').unwrap_or(("", key.as_str()));
            let uid = self.primary.get(namespace, name).map(|o| o.uid.clone());
            let event = wasmcm_guest::Event {
                regarding: wasmcm_guest::ObjectRef {
                    kind: info.primary.clone(),
                    namespace: namespace.into(),
                    name: name.into(),
                },
                event_type: wasmcm_guest::EventType::Warning,
                reason: "ReconcileFailed".into(),
                message: format!(
                    "plugin {} {} gave up after {} retries until the object changes: {why}",
                    info.name, info.version, self.config.max_retries
                ),
            };
            let api = self.api.clone();
            tokio::spawn(async move {
                if let Err(e) = api.record_event(&event, uid.as_deref()).await {
                    tracing::debug!("recording ReconcileFailed: {e}");
                }
            });
            return;
        }
        // Conflicts are the normal price of optimistic concurrency: retried quietly.
        if why.contains("Operation cannot be fulfilled") {
            tracing::debug!(plugin = %self.plugin.info().name, key, "conflict, retrying");
        }
        self.queue.add_rate_limited(key);
    }
}
