//! One plugin at work: informer changes become keys (its primary's own; the controlling
//! primary of an owned object; every matching primary for an adoptable orphan; the primary
//! above a watched object's owner, for the kinds of change the plugin's `watches` wake on), keys go through the work queue to N workers, each
//! reconcile runs the plugin off the async threads and hands the outcome to the writer, and
//! failures are retried with backoff for as long as they fail: a key is never dropped (the
//! ReplicaSet controller's way; with resync off nothing else would bring it back), only
//! reported once it has failed `report_after` times. The version that runs (and a shadow
//! candidate beside it) comes from the plugin's `Rollout`, read once per reconcile; the
//! candidate is answered the live version's reads (`RecordingCache::replay`), so the two are
//! compared on the same cluster whatever changed while the live one ran.
//!
//! A plugin whose scope lists namespaces reads informers of those namespaces only (those of
//! them its tenancy admits, whatever a `namespaceSelector` says); a version offered later with
//! other namespaces widens them to the union (or to every namespace), never narrows them, so
//! whichever version runs, or is reverted to, finds its objects cached.
//!
//! It owns the queue, expectations and retry state of its plugin; it must not write to the
//! cluster itself (the writer does) nor touch other plugins.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use wasmcm_guest::{Instant, Kind, Outcome, Request, Selector};

use crate::client::fence::Fence;
use crate::engine::CallError;
use crate::key::Key;
use crate::lifecycle::loader::Version;
use crate::lifecycle::reload::HotSwap;
use crate::lifecycle::rollout::{Offered, Reverted, Rollout};
use crate::metrics::{
    BytesLabels, InfoLabels, KindLabels, LoadLabels, Metrics, OutcomeLabels, ShardPluginLabels, TrapLabels,
    VersionLabels,
};
use crate::record::{Recording, RecordingCache};
use crate::runtime::informers::{Change, Informer, Informers, Object, PluginCache, ScopedCache};
use crate::runtime::queue::{RateLimit, WorkQueue};
use crate::runtime::shards::ShardGate;
use crate::writes::expectations::Expectations;
use crate::writes::scope::{HostIdentity, Scope, Tenancy};
use crate::writes::writer::{self, Refusal, WriteApi};

/// A refusal's cause is logged, and reported on the object, at most this often.
const REPORT_REFUSALS_EVERY: std::time::Duration = std::time::Duration::from_secs(60);

#[derive(Clone, Debug)]
pub struct ControllerConfig {
    pub workers: usize,
    /// Failures of one key after which it is reported (an error log and a `ReconcileFailed`
    /// event on the object), once; it keeps being retried with backoff up to the queue's
    /// `max_delay`.
    pub report_after: u32,
    pub rate: RateLimit,
    /// Reconcile every primary this often even without changes (off by default).
    pub resync: Option<std::time::Duration>,
    /// What no plugin may borrow: the host's namespace and Lease.
    pub host: HostIdentity,
    /// Refuse a new version declaring wider rights instead of holding it for an operator.
    pub strict: bool,
    /// The cluster's clock: plugins' `now`, and what their `requeue-after` counts in (a test
    /// clock runs faster, so a requeue waits less real time).
    pub clock: wasmcm_core::clock::Clock,
}

impl Default for ControllerConfig {
    fn default() -> Self {
        ControllerConfig {
            workers: 5,
            report_after: 15,
            rate: RateLimit::default(),
            resync: None,
            host: HostIdentity::default(),
            strict: false,
            clock: wasmcm_core::clock::Clock::system(),
        }
    }
}

pub struct PluginController<A> {
    rollout: Arc<Rollout>,
    informers: Arc<Informers>,
    api: Arc<A>,
    queue: Arc<WorkQueue<Key>>,
    expectations: Expectations,
    /// Every informer any version declared: primary, owned, watched.
    cache: Arc<PluginCache>,
    primary: std::sync::RwLock<Arc<Informer>>,
    /// The namespaces its informers list (`None`: every one).
    reach: tokio::sync::Mutex<Option<BTreeSet<String>>>,
    /// Event routing tasks, one per informer, while running.
    routes: Mutex<Option<Routes>>,
    /// Why each key's last outcome failed to be written.
    failures: Mutex<HashMap<Key, String>>,
    /// Namespaces and their labels, once a version's scope selects namespaces by label.
    namespaces: std::sync::OnceLock<Arc<Informer>>,
    /// `config.host`, shared with each call's cache view.
    host: Arc<HostIdentity>,
    /// When each refusal cause was last reported.
    reported: Mutex<BTreeMap<String, std::time::Instant>>,
    /// On a sharded host: which keys it takes (those of the shards it runs).
    shards: std::sync::OnceLock<Arc<ShardGate>>,
    /// Keys whose next reconcile is to be recorded, and who waits for each recording.
    recordings: Mutex<BTreeMap<Key, Vec<oneshot::Sender<Recording>>>>,
    /// Set once the plugin is removed from the host: a run not started yet never starts.
    stopping: tokio::sync::watch::Sender<bool>,
    /// Held by `run` while it runs, so that a removal knows when it has returned.
    active: tokio::sync::Mutex<()>,
    config: ControllerConfig,
    metrics: Arc<Metrics>,
}

impl<A: WriteApi + Send + Sync + 'static> PluginController<A> {
    /// Starts (or shares) the informers the plugin declared; they sync on their own, and the
    /// controller reconciles once they have ([`PluginController::run`]).
    pub fn new(
        version: Version,
        informers: &Arc<Informers>,
        api: Arc<A>,
        config: ControllerConfig,
        metrics: Arc<Metrics>,
    ) -> Arc<Self> {
        let info = version.plugin.info().clone();
        let reach = informer_reach(&version.spec.scope, &config.host);
        let primary = informers.informer_in(&info.primary, reach.as_ref());
        let cache = Arc::new(PluginCache::new([primary.clone()]));
        for kind in info.owns.iter().chain(info.watched_kinds()) {
            cache.add(informers.informer_in(kind, reach.as_ref()));
        }
        let namespaces = std::sync::OnceLock::new();
        if version.spec.scope.namespace_selector.is_some() {
            let _ = namespaces.set(informers.informer(&namespace_kind()));
        }
        let name = version.name().to_string();
        let config = ControllerConfig { workers: version.spec.workers.unwrap_or(config.workers), ..config };
        let queue = Arc::new(WorkQueue::new(config.rate.clone()).with_metrics(metrics.clone(), &name));
        let rollout = Arc::new(Rollout::new(version, metrics.clone()).strict(config.strict));
        {
            let (queue, cache, m, rollout) = (queue.clone(), cache.clone(), metrics.clone(), rollout.clone());
            // The info series of versions no longer loaded are removed, not left at 1, as are
            // those of informers no longer read (their namespaces widened).
            let shown = Mutex::new(Vec::<InfoLabels>::new());
            let cached = Mutex::new(Vec::<KindLabels>::new());
            metrics.on_scrape_of(&name, move || {
                queue.refresh_metrics();
                let mut now = Vec::new();
                for i in cache.informers() {
                    let labels = KindLabels::of(i.kind(), i.namespaces());
                    let part = |part: &str| BytesLabels { of: labels.clone(), part: part.into() };
                    let (json, index) = i.bytes();
                    m.informer_objects.get_or_create(&labels).set(i.len() as i64);
                    m.informer_bytes.get_or_create(&part("json")).set(json as i64);
                    m.informer_bytes.get_or_create(&part("index")).set(index as i64);
                    now.push(labels);
                }
                if let Ok(mut cached) = cached.lock() {
                    for old in cached.iter().filter(|l| !now.contains(l)) {
                        m.informer_objects.remove(old);
                        for part in ["json", "index"] {
                            m.informer_bytes.remove(&BytesLabels { of: old.clone(), part: part.into() });
                        }
                    }
                    *cached = now;
                }
                let (live, shadow) = rollout.current();
                let info = |v: &Version, state: &str| InfoLabels {
                    plugin: rollout.name().into(),
                    version: v.plugin.info().version.clone(),
                    digest: v.plugin.digest().into(),
                    state: state.into(),
                };
                let now: Vec<_> =
                    std::iter::once(info(&live, "live")).chain(shadow.map(|s| info(&s, "shadow"))).collect();
                if let Ok(mut shown) = shown.lock() {
                    for old in shown.iter().filter(|l| !now.contains(l)) {
                        m.plugin_info.remove(old);
                    }
                    *shown = now.clone();
                }
                for l in &now {
                    m.plugin_info.get_or_create(l).set(1);
                }
            });
        }
        record_load(&metrics, &rollout.live());
        Arc::new(PluginController {
            rollout,
            informers: informers.clone(),
            cache,
            queue,
            metrics,
            expectations: Expectations::default(),
            failures: Mutex::new(HashMap::new()),
            namespaces,
            host: Arc::new(config.host.clone()),
            reported: Mutex::default(),
            routes: Mutex::new(None),
            shards: std::sync::OnceLock::new(),
            recordings: Mutex::default(),
            api,
            primary: std::sync::RwLock::new(primary),
            reach: tokio::sync::Mutex::new(reach),
            stopping: tokio::sync::watch::channel(false).0,
            active: tokio::sync::Mutex::new(()),
            config,
        })
    }

    /// The informer of its primary kind.
    fn primary(&self) -> Arc<Informer> {
        self.primary.read().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// Every informer this controller reads: its cache's, and the namespaces' when its scope
    /// selects namespaces by label.
    fn all_informers(&self) -> Vec<Arc<Informer>> {
        let mut all = self.cache.informers();
        all.extend(self.namespaces.get().cloned());
        all
    }

    /// Resolves once every informer it reads has synced.
    pub async fn synced(&self) {
        for i in self.all_informers() {
            i.wait_synced().await;
        }
    }

    /// Resolves once every informer it reads has synced, or one has failed to.
    pub async fn settled(&self) {
        for i in self.all_informers() {
            i.settled().await;
            if !i.is_synced() {
                return;
            }
        }
    }

    /// Ok once every informer it reads has synced; else what each one that has not is waiting
    /// for, by kind.
    pub fn cache_status(&self) -> Result<(), String> {
        let waiting: Vec<String> = self
            .all_informers()
            .iter()
            .filter(|i| !i.is_synced())
            .map(|i| match i.status().error {
                Some(e) => format!("{}: {e}", i.kind()),
                None => format!("{}: listing", i.kind()),
            })
            .collect();
        if waiting.is_empty() { Ok(()) } else { Err(waiting.join("; ")) }
    }

    pub fn queue(&self) -> &Arc<WorkQueue<Key>> {
        &self.queue
    }

    /// Takes only the keys of the shards `gate` runs, and reports keys and queue depth per shard.
    pub(crate) fn set_shards(&self, gate: Arc<ShardGate>) {
        let (queue, cache, m, plugin) =
            (self.queue.clone(), self.cache.clone(), self.metrics.clone(), self.rollout.name().to_string());
        let primary = self.primary().kind().clone();
        let scraped = gate.clone();
        self.metrics.on_scrape_of(self.rollout.name(), move || {
            let count = scraped.count() as usize;
            let (mut keys, mut queued) = (vec![0i64; count], vec![0i64; count]);
            let primaries = cache.informer(&primary).map(|i| i.list("", &Selector::everything()));
            for o in primaries.unwrap_or_default() {
                keys[scraped.shard_of(&o.namespace) as usize] += 1;
            }
            for key in queue.queued() {
                queued[scraped.shard_of(&key.namespace) as usize] += 1;
            }
            for shard in 0..count {
                let l = ShardPluginLabels { plugin: plugin.clone(), shard: shard.to_string() };
                m.shard_keys.get_or_create(&l).set(keys[shard]);
                m.shard_queue_depth.get_or_create(&l).set(queued[shard]);
            }
        });
        let _ = self.shards.set(gate);
    }

    /// Shards this replica now runs (its caches hold a list begun after they were acquired):
    /// nothing is expected of their keys any more, and every primary in them is reconciled.
    pub(crate) fn shards_started(&self, shards: &std::collections::BTreeSet<u32>) {
        let Some(gate) = self.shards.get() else { return };
        self.expectations.forget_where(|key| shards.contains(&gate.shard_of(&key.namespace)));
        for o in self.primary().list("", &Selector::everything()) {
            if shards.contains(&gate.shard_of(&o.namespace)) {
                self.queue.add(o.key());
            }
        }
    }

    /// Queues `key` if this replica takes it (always, unless sharded).
    fn add(&self, key: Key) {
        if self.shards.get().is_none_or(|g| g.admits(&key.namespace)) {
            self.queue.add(key);
        }
    }

    /// Records the next reconcile of `key` (`namespace/name`), which it queues now: what the
    /// live version read, was asked and returned. The answer comes once that reconcile has run;
    /// on a replica that does not reconcile the key (a standby, another shard's) it never does.
    pub fn record(&self, text: &str) -> Result<oneshot::Receiver<Recording>, String> {
        let Some(key) = Key::parse(text) else {
            return Err(format!(
                "invalid key {text:?}: expected <namespace>/<name>, or <name> for a cluster-scoped kind"
            ));
        };
        self.cache_status().map_err(|why| format!("plugin {} is not reconciling: {why}", self.rollout.name()))?;
        let primary = self.primary();
        if primary.get(&key.namespace, &key.name).is_none() {
            return Err(format!("no {} {text} in the host's cache", primary.kind()));
        }
        let (tx, rx) = oneshot::channel();
        self.recordings.lock().unwrap_or_else(|e| e.into_inner()).entry(key.clone()).or_default().push(tx);
        self.add(key);
        Ok(rx)
    }

    /// Resolves once every informer it reads holds a list begun at or after `since`.
    pub(crate) async fn fresh_since(&self, since: tokio::time::Instant) {
        for i in self.all_informers() {
            i.fresh_since(since).await;
        }
    }

    pub fn rollout(&self) -> &Arc<Rollout> {
        &self.rollout
    }

    /// Hands a new version to the rollout, first starting (and syncing) informers for kinds
    /// it reads that no version read before, and for namespaces its scope lists that the
    /// informers do not cover, so it never runs against a cold cache.
    pub async fn offer(self: &Arc<Self>, version: Version) -> Result<Offered, String> {
        let info = version.plugin.info().clone();
        // Held throughout: offers one after the other, each seeing the last one's reach.
        let mut reach = self.reach.lock().await;
        let wider = widened(&reach, informer_reach(&version.spec.scope, &self.host));
        if wider != *reach {
            let kinds: Vec<Kind> = self.cache.informers().iter().map(|i| i.kind().clone()).collect();
            let mut swapped = Vec::new();
            for kind in &kinds {
                swapped.push(self.synced_informer(kind, wider.as_ref(), &info.version).await);
            }
            tracing::info!(
                plugin = %self.rollout.name(),
                "version {} reads {}: its informers now list them",
                info.version,
                wider.as_ref().map_or("every namespace".to_string(), |ns| format!("namespaces {ns:?}"))
            );
            *reach = wider;
            for informer in swapped {
                if informer.kind() == self.primary().kind() {
                    *self.primary.write().unwrap_or_else(|e| e.into_inner()) = informer.clone();
                }
                self.cache.add(informer.clone());
                self.follow(informer);
            }
            // What the new informers listed came before their routes: every key takes a look.
            self.enqueue_all();
        }
        for kind in info.owns.iter().chain(info.watched_kinds()) {
            if self.cache.has(kind) {
                continue;
            }
            let informer = self.synced_informer(kind, reach.as_ref(), &info.version).await;
            self.cache.add(informer.clone());
            self.follow(informer);
        }
        drop(reach);
        if version.spec.scope.namespace_selector.is_some() && self.namespaces.get().is_none() {
            let _ = self.namespaces.set(self.synced_informer(&namespace_kind(), None, &info.version).await);
        }
        record_load(&self.metrics, &version);
        self.rollout.offer(version)
    }

    /// The informer of `kind` in `namespaces` once synced; while it cannot sync, `version`
    /// waits (and says why).
    async fn synced_informer(
        &self,
        kind: &Kind,
        namespaces: Option<&BTreeSet<String>>,
        version: &str,
    ) -> Arc<Informer> {
        let informer = self.informers.informer_in(kind, namespaces);
        informer.settled().await;
        if let Some(error) = informer.status().error.filter(|_| !informer.is_synced()) {
            tracing::warn!(plugin = %self.rollout.name(), "version {version} waits for {kind} to sync: {error}");
        }
        informer.wait_synced().await;
        informer
    }

    fn namespace_labels(&self, namespace: &str) -> Option<BTreeMap<String, String>> {
        labels_of(self.namespaces.get().map(|i| &**i), namespace)
    }

    /// Logs a refused intent and tells the object's watchers, once per cause and interval:
    /// a plugin refused 10,000 times must not write 10,000 log lines or Events.
    fn refused(&self, key: &Key, refusal: &Refusal) {
        let plugin = self.rollout.name();
        if self.due(format!("log\0{}", refusal.reason)) {
            tracing::warn!(plugin, key = key.to_string(), intent = %refusal.intent, "refused: {} (reported at most once a minute)", refusal.reason);
        }
        if self.due(format!("event\0{key}\0{}", refusal.reason)) {
            self.event(key, "WriteRefused", format!("plugin {plugin}: {} refused: {}", refusal.intent, refusal.reason));
        }
    }

    /// Whether `cause` is to be reported now: at most once per `REPORT_REFUSALS_EVERY`.
    fn due(&self, cause: String) -> bool {
        let now = std::time::Instant::now();
        let Ok(mut reported) = self.reported.lock() else { return false };
        if reported.len() >= 4096 {
            reported.retain(|_, at| now.duration_since(*at) < REPORT_REFUSALS_EVERY);
            if reported.len() >= 4096 {
                reported.clear();
            }
        }
        match reported.get(&cause) {
            Some(at) if now.duration_since(*at) < REPORT_REFUSALS_EVERY => false,
            _ => {
                reported.insert(cause, now);
                true
            }
        }
    }

    /// Routes `informer`'s changes to keys from now on, in place of the informer of its kind
    /// before it (nothing, unless running).
    fn follow(self: &Arc<Self>, informer: Arc<Informer>) {
        let mut routes = self.routes.lock().unwrap_or_else(|e| e.into_inner());
        let Some(routes) = routes.as_mut() else { return };
        let kind = informer.kind().clone();
        let task = routes.tasks.spawn(self.clone().route_changes(informer));
        if let Some(before) = routes.by_kind.insert(kind, task) {
            before.abort();
        }
    }

    /// Routes one informer's changes to keys.
    async fn route_changes(self: Arc<Self>, informer: Arc<Informer>) {
        let mut changes = informer.subscribe();
        loop {
            match changes.recv().await {
                Ok(change) => self.route(&change),
                Err(tokio::sync::broadcast::error::RecvError::Lagged(n)) => {
                    // Events were lost: reconcile everything this plugin owns.
                    tracing::warn!(plugin = %self.rollout.name(), missed = n, "event stream lagged; resyncing");
                    self.enqueue_all();
                }
                Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
            }
        }
    }

    /// Once its caches hold a list begun at or after `since` (when this host began to lead: as
    /// KCM's controllers wait for informers started afresh), routes changes and runs the
    /// workers until the queue is shut down.
    pub async fn run(self: Arc<Self>, since: tokio::time::Instant) {
        let _active = self.active.lock().await;
        let mut stopping = self.stopping.subscribe();
        tokio::select! {
            () = self.fresh_since(since) => {}
            _ = stopping.wait_for(|s| *s) => return,
        }
        *self.routes.lock().unwrap_or_else(|e| e.into_inner()) = Some(Routes::default());
        for informer in self.cache.informers() {
            self.follow(informer);
        }
        let mut tasks = tokio::task::JoinSet::new();
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
                    // A shard handed over meanwhile: its next holder reconciles the key.
                    let in_flight = match me.shards.get() {
                        None => None,
                        Some(gate) => match gate.enter(&key.namespace) {
                            Some(in_flight) => Some(in_flight),
                            None => {
                                me.queue.forget(&key);
                                me.queue.done(&key);
                                continue;
                            }
                        },
                    };
                    me.process(&key).await;
                    drop(in_flight);
                    me.queue.done(&key);
                }
            });
        }
        while workers.join_next().await.is_some() {}
        tasks.shutdown().await;
        let routes = self.routes.lock().ok().and_then(|mut r| r.take());
        if let Some(mut routes) = routes {
            routes.tasks.shutdown().await;
        }
    }

    /// Stops for good, as a plugin removed from the host: takes no key any more, lets the
    /// reconciles in flight finish, and returns once `run` has (or at once if it never ran).
    pub(crate) async fn stop(&self) {
        self.stopping.send_replace(true);
        self.queue.shut_down_and_drain().await;
        drop(self.active.lock().await);
    }

    fn enqueue_all(&self) {
        for o in self.primary().list("", &Selector::everything()) {
            self.add(o.key());
        }
    }

    /// The keys a change concerns, and what it tells the expectations.
    fn route(&self, change: &Change) {
        let live = self.rollout.live();
        let info = live.plugin.info();
        let o = &change.object;
        if change.kind == info.primary {
            if change.deleted {
                self.expectations.forget(&o.key());
            }
            self.add(o.key());
            return;
        }
        let owner_key = |obj: &Object| {
            obj.controller.as_ref().filter(|c| c.refers_to(&info.primary)).map(|c| Key::new(&obj.namespace, &c.name))
        };
        if info.owns.contains(&change.kind) {
            // A deletion is observed once the object is marked (as KCM's updatePod does), not when
            // it is gone: a pod may linger for its whole grace period, and the controller must not
            // wait that out before replacing it.
            if change.deleted || o.deleting {
                self.expectations.deletion_observed(&writer::deletion_id(&change.kind, &o.namespace, &o.name));
            }
            match owner_key(o) {
                Some(key) => {
                    if change.old.is_none() && !change.deleted {
                        self.expectations.creation_observed(&key);
                    }
                    self.add(key);
                }
                // An orphan: every primary that could adopt it takes a look (as KCM does).
                None if !change.deleted => self.enqueue_matching_primaries(o),
                None => {}
            }
            // The controller changed: the previous owner must recount too.
            if let Some(old_key) = change.old.as_deref().and_then(owner_key)
                && Some(&old_key) != owner_key(o).as_ref()
            {
                self.add(old_key);
            }
            return;
        }
        // A watched kind wakes the primary only on the changes the plugin declared (KCM's
        // deployment controller hears of pod deletions only).
        let wakes = info.watches.iter().find(|w| w.kind == change.kind).is_some_and(|w| match change {
            Change { deleted: true, .. } => w.wake_on.deleted,
            Change { old: None, .. } => w.wake_on.created,
            Change { old: Some(_), .. } => w.wake_on.updated,
        });
        if !wakes {
            return;
        }
        // Its controller is either the primary or an owned object.
        if let Some(key) = owner_key(o) {
            self.add(key);
        } else if let Some(c) = &o.controller
            && let Some(parent_kind) = info.owns.iter().find(|k| c.refers_to(k))
            && let Some(parent) = self.cache.informer(parent_kind).and_then(|i| i.get(&o.namespace, &c.name))
            && let Some(key) = owner_key(&parent)
        {
            self.add(key);
        }
    }

    fn enqueue_matching_primaries(&self, orphan: &Object) {
        for p in self.primary().list(&orphan.namespace, &Selector::everything()) {
            let selector = serde_json::from_str::<serde_json::Value>(&p.json)
                .ok()
                .and_then(|v| v.pointer("/spec/selector").cloned())
                .and_then(|s| serde_json::from_value(s).ok())
                .and_then(|ls| Selector::from_label_selector(&ls).ok());
            if selector.is_some_and(|s| !s.is_empty() && s.matches(&orphan.labels)) {
                self.add(p.key());
            }
        }
    }

    async fn process(&self, key: &Key) {
        if !self.expectations.satisfied(key) {
            // The informers have not seen this key's last writes yet; their events bring it
            // back. Expired expectations bring it back at the latest.
            self.queue.add_after(key.clone(), crate::writes::expectations::TIMEOUT);
            return;
        }
        // Taken once: this reconcile runs on this version to the end, whatever is promoted
        // meanwhile.
        let (live, shadow) = self.rollout.current();
        let info = live.plugin.info();
        let labels = |ns: &str| self.namespace_labels(ns);
        let tenancy = Tenancy { scope: &live.spec.scope, host: &self.host, namespace_labels: &labels };
        if let Err(why) = tenancy.admits(&key.namespace) {
            // Said once a minute per cause, so an operator sees why a namespace is left alone.
            if self.due(format!("scope\0{why}")) {
                tracing::info!(plugin = %info.name, key = key.to_string(), "not reconciled: {why} (reported at most once a minute)");
            } else {
                tracing::debug!(plugin = %info.name, key = key.to_string(), "not reconciled: {why}");
            }
            self.queue.forget(key);
            let l = OutcomeLabels {
                plugin: info.name.clone(),
                version: info.version.clone(),
                outcome: "out_of_scope".into(),
            };
            self.metrics.reconciles.get_or_create(&l).inc();
            return;
        }
        let previous_failure = self.failures.lock().ok().and_then(|f| f.get(key).cloned());
        let request = Request {
            namespace: key.namespace.clone(),
            name: key.name.clone(),
            now: Instant::from_timestamp(self.config.clock.now()),
            previous_failure,
            settings: live.spec.settings.clone(),
        };
        let started = std::time::Instant::now();
        let span = tracing::info_span!(
            "reconcile",
            plugin = %info.name,
            version = %info.version,
            key = key.to_string(),
            duration_ms = tracing::field::Empty,
            outcome = tracing::field::Empty,
        );
        let outcome = tracing::Instrument::instrument(self.reconcile(key, &live, shadow, request), span.clone()).await;
        span.record("duration_ms", started.elapsed().as_millis() as u64);
        span.record("outcome", outcome);
        span.in_scope(|| tracing::debug!("reconciled"));
        let version = VersionLabels { plugin: info.name.clone(), version: info.version.clone() };
        let outcome =
            OutcomeLabels { plugin: info.name.clone(), version: info.version.clone(), outcome: outcome.into() };
        self.metrics.reconciles.get_or_create(&outcome).inc();
        self.metrics.reconcile_duration.get_or_create(&version).observe(started.elapsed().as_secs_f64());
    }

    /// Runs the plugin (and its shadow candidate) and the writer for `key`; returns the
    /// outcome's metric label.
    async fn reconcile(
        &self,
        key: &Key,
        live: &Arc<Version>,
        shadow: Option<Arc<Version>>,
        request: Request,
    ) -> &'static str {
        let info = live.plugin.info();
        // `request.now`, give or take the microseconds since: a requeue counts from it.
        let begun = std::time::Instant::now();
        // Objects outside the live version's scope do not exist for either version.
        let (version, host, namespaces) = (live.clone(), self.host.clone(), self.namespaces.get().cloned());
        let admits = move |ns: &str| {
            let labels = |n: &str| labels_of(namespaces.as_deref(), n);
            Tenancy { scope: &version.spec.scope, host: &host, namespace_labels: &labels }.admits(ns).is_ok()
        };
        let cache: Arc<dyn wasmcm_guest::Cache + Send + Sync> =
            Arc::new(ScopedCache { cache: self.cache.clone(), admits });
        let waiting: Vec<_> = {
            let mut recordings = self.recordings.lock().unwrap_or_else(|e| e.into_inner());
            recordings.remove(key).into_iter().flatten().filter(|w| !w.is_closed()).collect()
        };
        // The live version's reads are noted for a recording, and for a shadow candidate, which
        // is answered what the live version was (the informers move on while it runs).
        let noted = (!waiting.is_empty() || shadow.is_some()).then(|| Arc::new(RecordingCache::new(cache.clone())));
        let live_cache = match &noted {
            Some(r) => r.clone() as Arc<dyn wasmcm_guest::Cache + Send + Sync>,
            None => cache.clone(),
        };
        let recorder = noted.clone().filter(|_| !waiting.is_empty()).map(|r| (r, request.clone()));
        let plugin = live.plugin.clone();
        let shadow_plugin = shadow.as_ref().map(|s| (s.plugin.clone(), s.spec.settings.clone()));
        let result = tokio::task::spawn_blocking(move || {
            let result = plugin.reconcile(&request, live_cache);
            // The candidate sees the same request and the same answers, right after.
            let candidate = shadow_plugin.map(|(p, settings)| {
                let cache = match &noted {
                    Some(reads) => Arc::new(reads.replay(cache)) as Arc<dyn wasmcm_guest::Cache + Send + Sync>,
                    None => cache,
                };
                p.reconcile(&Request { settings, ..request }, cache)
            });
            (result, candidate)
        })
        .await;
        let (result, candidate) = match result {
            Ok(r) => r,
            Err(e) => {
                tracing::error!(plugin = %info.name, key = key.to_string(), "reconcile task failed: {e}");
                self.retry(key, "the reconcile task failed", false);
                return "error";
            }
        };
        if let Some((reads, request)) = recorder {
            let recording = Recording::new(&live.plugin, request, &reads, &result);
            tracing::info!(plugin = %info.name, key = key.to_string(), "recorded: {}", recording.summary());
            for w in waiting {
                let _ = w.send(recording.clone());
            }
        }
        if let (Some(version), Some(candidate)) = (&shadow, &candidate) {
            if let Err(CallError::Trap { reason, .. }) = candidate {
                let version = version.plugin.info().version.clone();
                let l = TrapLabels { plugin: info.name.clone(), version, reason: reason.to_string() };
                self.metrics.traps.get_or_create(&l).inc();
            }
            self.rollout.compare(version, key, &result, candidate);
        }
        if let Err(CallError::Trap { reason, .. }) = &result {
            let l = TrapLabels { plugin: info.name.clone(), version: info.version.clone(), reason: reason.to_string() };
            self.metrics.traps.get_or_create(&l).inc();
        }
        if let Some(reverted) = self.rollout.record(live, result.is_err()) {
            self.reverted(key, &reverted);
        }
        match result {
            Ok(outcome) => self.write(key, live, &outcome, begun).await,
            Err(e @ CallError::Plugin { retryable: false, .. }) => {
                tracing::error!(plugin = %info.name, key = key.to_string(), "{e}; not retrying until the object changes");
                self.queue.forget(key);
                "error"
            }
            Err(e @ CallError::Plugin { .. }) => {
                tracing::warn!(plugin = %info.name, key = key.to_string(), "{e}");
                self.retry(key, &e.to_string(), false);
                "error"
            }
            Err(e) => {
                tracing::warn!(plugin = %info.name, key = key.to_string(), "{e}");
                self.retry(key, &e.to_string(), false);
                "trap"
            }
        }
    }

    /// Hands `outcome` to the writer, its writes fenced by the key's shard, and settles the key:
    /// retried with backoff unless the outcome was written in full, else forgotten (and queued
    /// again when the plugin asked); returns the outcome's metric label.
    async fn write(&self, key: &Key, live: &Version, outcome: &Outcome, begun: std::time::Instant) -> &'static str {
        let info = live.plugin.info();
        let uid = self.primary().get(&key.namespace, &key.name).map(|o| o.uid.clone());
        let labels = |ns: &str| self.namespace_labels(ns);
        let tenancy = Tenancy { scope: &live.spec.scope, host: &self.host, namespace_labels: &labels };
        let context = writer::Context {
            expectations: Some(&self.expectations),
            primary_uid: uid.as_deref(),
            tenancy: Some(tenancy),
        };
        let writes = writer::write_outcome(&*self.api, info, &key.namespace, &key.name, outcome, context);
        let report = Fence::for_key(&key.namespace, writes).await;
        for r in &report.refused {
            self.refused(key, r);
        }
        tracing::debug!(actions = report.actions.len(), refused = report.refused.len(), "outcome written");
        let l = VersionLabels { plugin: info.name.clone(), version: info.version.clone() };
        if !report.actions.is_empty() {
            self.metrics.intents_executed.get_or_create(&l).inc_by(report.actions.len() as u64);
        }
        if !report.refused.is_empty() {
            self.metrics.intents_refused.get_or_create(&l).inc_by(report.refused.len() as u64);
        }
        match &report.failure {
            Some(failure) => {
                if let Ok(mut f) = self.failures.lock() {
                    f.insert(key.clone(), failure.clone());
                }
                self.retry(key, failure, report.conflicted());
                "write_failed"
            }
            None => {
                if let Ok(mut f) = self.failures.lock() {
                    f.remove(key);
                }
                self.queue.forget(key);
                if let Some(ms) = outcome.requeue_after_ms {
                    // Cluster time (a test clock runs faster), counted from the request's now:
                    // what the reconcile and its writes took is already spent.
                    let wait = self.config.clock.real(std::time::Duration::from_millis(ms));
                    self.queue.add_after(key.clone(), wait.saturating_sub(begun.elapsed()));
                }
                "success"
            }
        }
    }

    /// Tells whoever looks at the object whose reconcile tipped the balance: the log alone
    /// would not reach them.
    fn reverted(&self, key: &Key, r: &Reverted) {
        let (from, to) = (r.from.plugin.info(), r.to.plugin.info());
        let message = format!(
            "plugin {}: version {} (sha256 {}) failed {} of its first {} reconciles; reverted to {} (sha256 {})",
            self.rollout.name(),
            from.version,
            r.from.plugin.digest(),
            r.failures,
            r.reconciles,
            to.version,
            r.to.plugin.digest()
        );
        self.event(key, "PluginReverted", message);
    }

    fn event(&self, key: &Key, reason: &str, message: String) {
        let uid = self.primary().get(&key.namespace, &key.name).map(|o| o.uid.clone());
        let event = wasmcm_guest::Event {
            regarding: wasmcm_guest::ObjectRef {
                kind: self.rollout.live().plugin.info().primary.clone(),
                namespace: key.namespace.clone(),
                name: key.name.clone(),
            },
            event_type: wasmcm_guest::EventType::Warning,
            reason: reason.into(),
            message,
        };
        let api = self.api.clone();
        let namespace = key.namespace.clone();
        tokio::spawn(async move {
            let recorded = Fence::for_key(&namespace, api.record_event(&event, uid.as_deref())).await;
            if let Err(e) = recorded {
                tracing::debug!("recording an event: {e}");
            }
        });
    }

    /// Requeues `key` with backoff; `conflict` says the failure was a 409, retried quietly.
    fn retry(&self, key: &Key, why: &str, conflict: bool) {
        if self.queue.num_requeues(key) + 1 == self.config.report_after {
            let live = self.rollout.live();
            let info = live.plugin.info();
            let failures = self.config.report_after;
            tracing::error!(plugin = %info.name, key = key.to_string(), "failed {failures} times, still retrying with backoff: {why}");
            let message = format!(
                "plugin {} {} failed {failures} times; retrying with backoff until it succeeds: {why}",
                info.name, info.version
            );
            self.event(key, "ReconcileFailed", message);
        }
        if conflict {
            tracing::debug!(plugin = %self.rollout.name(), key = key.to_string(), "conflict, retrying");
        }
        self.queue.add_rate_limited(key.clone());
    }
}

impl<A: WriteApi + Send + Sync + 'static> HotSwap for PluginController<A> {
    fn rollout(&self) -> &Rollout {
        PluginController::rollout(self)
    }

    async fn offer(self: Arc<Self>, version: Version) -> Result<Offered, String> {
        PluginController::offer(&self, version).await
    }
}

/// The tasks routing each informer's changes to keys, by kind.
#[derive(Default)]
struct Routes {
    tasks: tokio::task::JoinSet<()>,
    by_kind: BTreeMap<Kind, tokio::task::AbortHandle>,
}

/// The namespaces a plugin's informers list: those its scope lists that its tenancy admits
/// (whatever labels they carry: a `namespaceSelector` is applied to each key and read), or
/// every namespace (`None`) when its scope lists none.
fn informer_reach(scope: &Scope, host: &HostIdentity) -> Option<BTreeSet<String>> {
    let listed = scope.namespaces.as_ref()?;
    let unselected = Scope { namespace_selector: None, ..scope.clone() };
    let tenancy = Tenancy { scope: &unselected, host, namespace_labels: &|_| None };
    Some(listed.iter().filter(|ns| tenancy.admits(ns).is_ok()).cloned().collect())
}

/// Informers reaching both `now` and `wanted`.
fn widened(now: &Option<BTreeSet<String>>, wanted: Option<BTreeSet<String>>) -> Option<BTreeSet<String>> {
    match (now, wanted) {
        (Some(now), Some(wanted)) => Some(now.union(&wanted).cloned().collect()),
        _ => None,
    }
}

/// A namespace's labels, from the Namespace informer when one runs.
fn labels_of(namespaces: Option<&Informer>, namespace: &str) -> Option<BTreeMap<String, String>> {
    namespaces.and_then(|i| i.get("", namespace)).map(|o| o.labels.clone())
}

/// The kind whose labels a scope's `namespaceSelector` reads.
fn namespace_kind() -> Kind {
    Kind::new("v1", "Namespace")
}

/// The compile (or precompiled-cache read) time of a version, as a gauge.
fn record_load(metrics: &Metrics, v: &Version) {
    let c = v.plugin.compiled();
    let l =
        LoadLabels { plugin: v.name().into(), version: v.plugin.info().version.clone(), cached: c.cached.to_string() };
    metrics.plugin_load_seconds.get_or_create(&l).set(c.duration.as_secs_f64());
}
