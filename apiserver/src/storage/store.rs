//! Storage of the embedded API server: objects by (group/resource, namespace, name), one
//! global resourceVersion, a bounded history of changes, and watch fan-out.
//!
//! Every change is committed under one lock, numbered, appended to the history and handed to
//! each matching watcher in the same critical section: a watcher sees every change after its
//! starting point exactly once and in order. It knows nothing of HTTP, defaulting or
//! validation; callers pass closures that decide the new object from the current one: a
//! request's run outside the lock and are retried if the object changed meanwhile
//! ([`Store::guaranteed_update`], as upstream's `GuaranteedUpdate`), so that no request's work
//! holds up every other. An object past etcd's 1.5 MiB is refused as etcd refuses it.
//!
//! Nothing here costs in proportion to everything stored: objects are kept in key order, so a
//! type, or a type in one namespace, is a key range; a label index per type answers equality
//! and set-based label selectors; watchers are held by type, so a change is only offered to
//! the watches of its type; and the history is bounded by count and by (estimated serialized)
//! bytes. The server's own loops (kubelet, garbage collector) follow changes through
//! [`Store::subscribe`] rather than rescanning.

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::ops::Bound;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::mpsc;

use crate::storage::change::{Event, EventType, Key};
use crate::storage::query::{Filter, labels_of};
use wasmcm_core::ApiError;

/// Changes kept for watches that resume from an older resourceVersion. A client re-watches
/// from the last version it saw (bookmarks keep it within seconds); a 410 instead makes it
/// re-list the whole type, which at 10k Deployments is 30k pods. 100k changes are ~25 s at
/// the ~4k writes/s the bench reaches.
pub(crate) const DEFAULT_HISTORY: usize = 100_000;
/// The history's bound in estimated serialized JSON, each change counted with the version it
/// replaced (its `prev`). What bounds the history when objects are large: 256 MiB is ~70k
/// status changes of a running pod (1.8 KiB of JSON, counted twice), but only ~128 writes of a
/// 1 MiB ConfigMap (a plugin's bytes), where the count alone would let it grow to gigabytes.
/// In memory a version costs ~7x its JSON as a `serde_json::Value` (13 KiB for that pod), and
/// the history holds about one version of its own per change (a change's object is the store's
/// or the next change's `prev`): a full history of pod changes is ~1 GiB. Lower
/// `ClusterConfig::history_bytes` where memory matters more than sparing re-lists.
pub(crate) const DEFAULT_HISTORY_BYTES: usize = 256 << 20;
/// Events a watcher may fall behind by before it is closed (the client re-watches).
const WATCHER_BUFFER: usize = 50_000;
/// The largest object stored: etcd's default `--max-request-bytes` (1.5 MiB), past which etcd
/// refuses the write and kube-apiserver passes its error on (see [`too_large`]). Counted as
/// the object's compact JSON, which is how custom resources are stored; a built-in kind's
/// protobuf is smaller, so the embedded server is, if anything, stricter.
pub(crate) const MAX_OBJECT_BYTES: usize = 3 << 19;

/// What a client sees when etcd refuses a write as too large: kube-apiserver does not
/// translate etcd's `rpctypes.ErrRequestTooLarge`, so `responsewriters.ErrorToAPIStatus` makes
/// it a 500 Status without a reason, carrying etcd's message (kubectl prints "Error from
/// server: etcdserver: request is too large").
pub(crate) fn too_large() -> ApiError {
    ApiError::new(500, "", "etcdserver: request is too large")
}

fn check_size(bytes: usize) -> Result<(), ApiError> {
    if bytes > MAX_OBJECT_BYTES { Err(too_large()) } else { Ok(()) }
}

/// A client's watch.
struct Watcher {
    filter: Filter,
    tx: mpsc::Sender<Arc<Event>>,
}

/// One of the server's own loops following changes: of one type, or of all (`id` None).
struct Subscriber {
    id: Option<String>,
    tx: mpsc::Sender<Arc<Event>>,
}

struct Stored {
    object: Arc<Value>,
    /// Its serialized size, counted in the history when it is replaced.
    bytes: usize,
}

struct Retained {
    event: Arc<Event>,
    bytes: usize,
}

/// One type's label index: (label key, value) → the (namespace, name) of every object of the
/// type carrying that label.
type LabelIndex = BTreeMap<(String, String), BTreeSet<(String, String)>>;

struct Inner {
    rv: u64,
    objects: BTreeMap<Key, Stored>,
    /// Objects per type id: the types a namespace's content can be in.
    types: BTreeMap<String, usize>,
    /// By type id.
    labels: BTreeMap<String, LabelIndex>,
    history: VecDeque<Retained>,
    history_bytes: usize,
    limits: HistoryLimits,
    /// Changes at or below this resourceVersion are no longer in the history.
    compacted: u64,
    /// Clients' watches by type id.
    watchers: BTreeMap<String, Vec<Watcher>>,
    subscribers: Vec<Subscriber>,
}

/// How much history is kept: the oldest changes go once either bound is passed.
#[derive(Clone, Copy, Debug)]
pub(crate) struct HistoryLimits {
    pub events: usize,
    pub bytes: usize,
}

impl Default for HistoryLimits {
    fn default() -> Self {
        HistoryLimits { events: DEFAULT_HISTORY, bytes: DEFAULT_HISTORY_BYTES }
    }
}

pub(crate) struct Store {
    inner: Mutex<Inner>,
}

/// A new watch: the events to send first (replayed history or the current state), then the
/// live stream.
pub(crate) struct Watch {
    pub initial: Vec<Arc<Event>>,
    pub rx: mpsc::Receiver<Arc<Event>>,
    /// The resourceVersion the initial events bring the watcher to.
    pub rv: u64,
}

/// How a watch starts.
pub(crate) enum WatchFrom {
    /// Changes after this resourceVersion (410 if no longer retained).
    Version(u64),
    /// The current state as ADDED events, then changes.
    Now,
}

/// One page of a list.
pub(crate) struct Page {
    pub items: Vec<Arc<Value>>,
    /// The resourceVersion the list is consistent with.
    pub rv: u64,
    /// Matching objects after the page.
    pub remaining: usize,
}

fn rv_of(v: &Value) -> u64 {
    v.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn set_rv(v: &mut Value, rv: u64) {
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
}

/// Counts what is written to it.
struct ByteCounter(usize);

impl std::io::Write for ByteCounter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// The size of `v` as compact JSON, without building the text.
fn json_size(v: &Value) -> usize {
    let mut counter = ByteCounter(0);
    let _ = serde_json::to_writer(&mut counter, v);
    counter.0
}

fn label_pairs(object: &Value) -> impl Iterator<Item = (&str, &str)> {
    labels_of(object).into_iter().flatten().filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
}

fn range_start(id: &str, namespace: &str, name: &str) -> Key {
    Key { id: id.into(), namespace: namespace.into(), name: name.into() }
}

impl Default for Store {
    fn default() -> Self {
        Self::new(HistoryLimits::default())
    }
}

impl Inner {
    /// Puts `object` at `key`, keeping the indexes; returns its size and what was there.
    fn put(&mut self, key: &Key, object: Arc<Value>) -> (usize, Option<Stored>) {
        let bytes = json_size(&object);
        self.put_sized(key, object, bytes)
    }

    /// [`Inner::put`] of an object whose size is known already.
    fn put_sized(&mut self, key: &Key, object: Arc<Value>, bytes: usize) -> (usize, Option<Stored>) {
        let old = self.objects.insert(key.clone(), Stored { object: object.clone(), bytes });
        if old.is_none() {
            *self.types.entry(key.id.clone()).or_default() += 1;
        }
        self.reindex(key, old.as_ref().map(|o| &*o.object), Some(&object));
        (bytes, old)
    }

    /// Writes `object` (of `size` bytes) over `current` at `key` as the next resourceVersion,
    /// and publishes the change. An object left with a deletionTimestamp, no finalizers and
    /// no grace period still running is removed instead.
    fn replace(&mut self, key: &Key, current: Arc<Value>, mut object: Value, size: usize) -> Arc<Value> {
        self.rv += 1;
        let rv = self.rv;
        set_rv(&mut object, rv);
        let object = Arc::new(object);
        let (event_type, bytes) = if deletion_complete(&object) {
            let old = self.take(key);
            (EventType::Deleted, old.map_or(0, |o| o.bytes) + size)
        } else {
            let (bytes, old) = self.put_sized(key, object.clone(), size);
            (EventType::Modified, old.map_or(0, |o| o.bytes) + bytes)
        };
        let event = Event { event_type, key: key.clone(), object: object.clone(), prev: Some(current), rv };
        self.publish(event, bytes);
        object
    }

    fn take(&mut self, key: &Key) -> Option<Stored> {
        let old = self.objects.remove(key)?;
        if let Some(n) = self.types.get_mut(&key.id) {
            *n -= 1;
            if *n == 0 {
                self.types.remove(&key.id);
            }
        }
        self.reindex(key, Some(&old.object), None);
        Some(old)
    }

    fn reindex(&mut self, key: &Key, old: Option<&Value>, new: Option<&Value>) {
        let before: BTreeSet<(&str, &str)> = old.map(|o| label_pairs(o).collect()).unwrap_or_default();
        let after: BTreeSet<(&str, &str)> = new.map(|o| label_pairs(o).collect()).unwrap_or_default();
        if before == after {
            return;
        }
        let index = self.labels.entry(key.id.clone()).or_default();
        let at = || (key.namespace.clone(), key.name.clone());
        for (k, v) in before.difference(&after) {
            let label = (k.to_string(), v.to_string());
            if let Some(set) = index.get_mut(&label) {
                set.remove(&at());
                if set.is_empty() {
                    index.remove(&label);
                }
            }
        }
        for (k, v) in after.difference(&before) {
            index.entry((k.to_string(), v.to_string())).or_default().insert(at());
        }
        if index.is_empty() {
            self.labels.remove(&key.id);
        }
    }

    /// The keys the label index offers for `filter` over `id` (in `namespace` if given), in
    /// key order: a superset of what the filter matches, from its most selective indexable
    /// term. None when the filter has no such term (the caller scans the range).
    fn candidates(&self, id: &str, namespace: Option<&str>, filter: &Filter) -> Option<Vec<Key>> {
        let terms = filter.index_terms();
        if terms.is_empty() {
            return None;
        }
        let empty = LabelIndex::new();
        let index = self.labels.get(id).unwrap_or(&empty);
        let sets = |(key, values): &(&str, Vec<&str>)| -> Vec<&BTreeSet<(String, String)>> {
            values.iter().filter_map(|v| index.get(&(key.to_string(), v.to_string()))).collect()
        };
        // Set sizes over the whole type, not the namespace: cheap, and close enough to pick.
        let size = |sets: &Vec<&BTreeSet<(String, String)>>| sets.iter().map(|s| s.len()).sum::<usize>();
        let best = terms.iter().map(sets).min_by_key(size)?;
        // Selecting most of a type, a scan of its range is cheaper than a lookup per object.
        if namespace.is_none() && size(&best) * 2 > self.types.get(id).copied().unwrap_or(0) {
            return None;
        }
        let mut keys: Vec<Key> = Vec::new();
        for set in best {
            let pairs: Box<dyn Iterator<Item = &(String, String)>> = match namespace {
                Some(ns) => {
                    Box::new(set.range((ns.to_string(), String::new())..).take_while(move |(n, _)| n.as_str() == ns))
                }
                None => Box::new(set.iter()),
            };
            keys.extend(pairs.map(|(ns, name)| range_start(id, ns, name)));
        }
        // A label has one value per object: the sets of one term are disjoint.
        keys.sort_unstable();
        Some(keys)
    }

    /// What `filter` selects of `id` (in `namespace` if given) after `after` (a namespace and
    /// name), in key order.
    fn select<'a>(
        &'a self,
        id: &'a str,
        namespace: Option<&'a str>,
        filter: &'a Filter,
        after: Option<(&'a str, &'a str)>,
    ) -> Box<dyn Iterator<Item = (&'a Key, &'a Arc<Value>)> + 'a> {
        let past = move |k: &Key| after.is_none_or(|(ns, name)| (k.namespace.as_str(), k.name.as_str()) > (ns, name));
        if let (Some(ns), Some(name)) = (namespace, filter.name()) {
            let key = range_start(id, ns, name);
            let hit = self.objects.get_key_value(&key).filter(|(k, s)| past(k) && filter.matches(&s.object));
            return Box::new(hit.into_iter().map(|(k, s)| (k, &s.object)));
        }
        if let Some(keys) = self.candidates(id, namespace, filter) {
            return Box::new(
                keys.into_iter()
                    .filter(move |k| past(k))
                    .filter_map(|k| self.objects.get_key_value(&k))
                    .filter(|(_, s)| filter.matches(&s.object))
                    .map(|(k, s)| (k, &s.object)),
            );
        }
        let start = match after {
            Some((ns, name)) => Bound::Excluded(range_start(id, ns, name)),
            None => Bound::Included(range_start(id, namespace.unwrap_or(""), "")),
        };
        Box::new(
            self.objects
                .range((start, Bound::Unbounded))
                .take_while(move |(k, _)| k.id == id && namespace.is_none_or(|ns| k.namespace == ns))
                .filter(|(_, s)| filter.matches(&s.object))
                .map(|(k, s)| (k, &s.object)),
        )
    }

    fn in_namespace<'a>(&'a self, namespace: &'a str) -> impl Iterator<Item = &'a Key> + 'a {
        self.types.keys().flat_map(move |id| {
            self.objects
                .range(range_start(id, namespace, "")..)
                .map(|(k, _)| k)
                .take_while(move |k| k.id == *id && k.namespace == namespace)
        })
    }

    fn publish(&mut self, event: Event, bytes: usize) {
        let event = Arc::new(event);
        self.history.push_back(Retained { event: event.clone(), bytes });
        self.history_bytes += bytes;
        while self.history.len() > self.limits.events || self.history_bytes > self.limits.bytes {
            let Some(old) = self.history.pop_front() else { break };
            self.history_bytes -= old.bytes;
            self.compacted = old.event.rv;
        }
        // A watcher that cannot keep up, or whose client went away, is dropped: its stream
        // ends and the client resumes from the last resourceVersion it saw.
        if let Some(watchers) = self.watchers.get_mut(&event.key.id) {
            watchers.retain(|w| match w.filter.view(&event) {
                Some(seen) => w.tx.try_send(seen).is_ok(),
                None => !w.tx.is_closed(),
            });
        }
        self.subscribers.retain(|s| match &s.id {
            Some(id) if *id != event.key.id => !s.tx.is_closed(),
            _ => s.tx.try_send(event.clone()).is_ok(),
        });
    }

    /// The retained changes after `rv`, in order; 410 if some are no longer retained.
    fn history_after(&self, rv: u64) -> Result<impl Iterator<Item = &Arc<Event>>, ApiError> {
        if rv < self.compacted {
            return Err(ApiError::gone(format!("too old resource version: {rv} ({})", self.compacted)));
        }
        // History is in resourceVersion order: skip what the client has already seen.
        let start = self.history.partition_point(|e| e.event.rv <= rv);
        Ok(self.history.range(start..).map(|e| &e.event))
    }
}

fn added(key: &Key, object: &Arc<Value>) -> Arc<Event> {
    Arc::new(Event {
        event_type: EventType::Added,
        key: key.clone(),
        object: object.clone(),
        prev: None,
        rv: rv_of(object),
    })
}

impl Store {
    pub(crate) fn new(limits: HistoryLimits) -> Self {
        Store {
            inner: Mutex::new(Inner {
                rv: 1,
                objects: BTreeMap::new(),
                types: BTreeMap::new(),
                labels: BTreeMap::new(),
                history: VecDeque::new(),
                history_bytes: 0,
                limits: HistoryLimits { events: limits.events.max(1), bytes: limits.bytes },
                compacted: 1,
                watchers: BTreeMap::new(),
                subscribers: Vec::new(),
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic while holding the lock leaves consistent data (each commit is one insert),
        // so keep serving rather than poisoning every later request.
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    #[cfg(test)]
    pub(crate) fn current_rv(&self) -> u64 {
        self.lock().rv
    }

    /// (changes retained, their estimated bytes).
    #[cfg(test)]
    pub(crate) fn history_size(&self) -> (usize, usize) {
        let inner = self.lock();
        (inner.history.len(), inner.history_bytes)
    }

    pub(crate) fn get(&self, key: &Key) -> Option<Arc<Value>> {
        self.lock().objects.get(key).map(|s| s.object.clone())
    }

    /// Objects of `id` (in `namespace` if given) passing `filter`, in name order, with the
    /// resourceVersion the list is consistent with.
    pub(crate) fn list(&self, id: &str, namespace: Option<&str>, filter: &Filter) -> (Vec<Arc<Value>>, u64) {
        let page = self.list_page(id, namespace, filter, None, usize::MAX);
        (page.items, page.rv)
    }

    /// Up to `limit` objects of a list, starting after the (namespace, name) `after`.
    pub(crate) fn list_page(
        &self,
        id: &str,
        namespace: Option<&str>,
        filter: &Filter,
        after: Option<(&str, &str)>,
        limit: usize,
    ) -> Page {
        let inner = self.lock();
        let mut selected = inner.select(id, namespace, filter, after);
        let items: Vec<Arc<Value>> = selected.by_ref().take(limit).map(|(_, v)| v.clone()).collect();
        let remaining = selected.count();
        Page { items, rv: inner.rv, remaining }
    }

    /// Every key of every type in a namespace (for namespace deletion).
    pub(crate) fn keys_in_namespace(&self, namespace: &str) -> Vec<Key> {
        self.lock().in_namespace(namespace).cloned().collect()
    }

    /// Whether anything is left in a namespace.
    pub(crate) fn namespace_has_content(&self, namespace: &str) -> bool {
        self.lock().in_namespace(namespace).next().is_some()
    }

    /// Every object: the garbage collector's resynchronisation, an offline run's output.
    pub(crate) fn snapshot(&self) -> Vec<(Key, Arc<Value>)> {
        self.lock().objects.iter().map(|(k, s)| (k.clone(), s.object.clone())).collect()
    }

    /// Creates `object` at `key`; `exists` builds the error when something is already there.
    /// An object larger than [`MAX_OBJECT_BYTES`] is refused as etcd refuses it.
    pub(crate) fn create(
        &self,
        key: Key,
        mut object: Value,
        exists: impl FnOnce() -> ApiError,
    ) -> Result<Arc<Value>, ApiError> {
        let size = json_size(&object);
        check_size(size)?;
        let mut inner = self.lock();
        if inner.objects.contains_key(&key) {
            return Err(exists());
        }
        inner.rv += 1;
        let rv = inner.rv;
        set_rv(&mut object, rv);
        let object = Arc::new(object);
        let (bytes, _) = inner.put_sized(&key, object.clone(), size);
        inner.publish(Event { event_type: EventType::Added, key, object: object.clone(), prev: None, rv }, bytes);
        Ok(object)
    }

    /// Puts `object` at `key` as it is, resourceVersion included (a restore, not a write: no
    /// event), and keeps later writes' resourceVersions above it.
    pub(crate) fn restore(&self, key: Key, object: Value) {
        let mut inner = self.lock();
        let rv = object.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|v| v.parse().ok());
        inner.rv = inner.rv.max(rv.unwrap_or(0));
        inner.put(&key, Arc::new(object));
    }

    /// Atomically replaces the object at `key` with what `f` makes of it. `f` returning
    /// `Ok(None)` means no change (nothing is written, no resourceVersion is spent). An object
    /// left with a deletionTimestamp, no finalizers and no grace period still running is
    /// removed, as the API server does when the last finalizer goes.
    ///
    /// `f` runs under the store's lock: for the server's own loops, whose changes are small.
    /// A request's write goes through [`Store::guaranteed_update`].
    pub(crate) fn update(
        &self,
        key: &Key,
        missing: impl FnOnce() -> ApiError,
        f: impl FnOnce(&Value) -> Result<Option<Value>, ApiError>,
    ) -> Result<Arc<Value>, ApiError> {
        let mut inner = self.lock();
        let Some(current) = inner.objects.get(key).map(|s| s.object.clone()) else { return Err(missing()) };
        let Some(object) = f(&current)? else { return Ok(current) };
        let size = json_size(&object);
        check_size(size)?;
        Ok(inner.replace(key, current, object, size))
    }

    /// [`Store::update`] with `f` run outside the store's lock, as upstream's
    /// `GuaranteedUpdate` runs its `tryUpdate` outside etcd: `f` sees the object as read, and
    /// its result is written only if the object is still that version, else `f` runs again on
    /// the newer one. A request's decoding, patching and validation, however long, then hold
    /// up no other write (nor any read) of the store.
    pub(crate) fn guaranteed_update(
        &self,
        key: &Key,
        missing: impl Fn() -> ApiError,
        mut f: impl FnMut(&Value) -> Result<Option<Value>, ApiError>,
    ) -> Result<Arc<Value>, ApiError> {
        loop {
            let current = self.get(key).ok_or_else(&missing)?;
            let Some(object) = f(&current)? else { return Ok(current) };
            let size = json_size(&object);
            check_size(size)?;
            let mut inner = self.lock();
            match inner.objects.get(key) {
                Some(stored) if Arc::ptr_eq(&stored.object, &current) => {
                    return Ok(inner.replace(key, current, object, size));
                }
                // Changed or gone meanwhile: again from what is there now.
                _ => continue,
            }
        }
    }

    /// Removes the object at `key` if `check` accepts the current one.
    pub(crate) fn delete(
        &self,
        key: &Key,
        missing: impl FnOnce() -> ApiError,
        check: impl FnOnce(&Value) -> Result<(), ApiError>,
    ) -> Result<Arc<Value>, ApiError> {
        let mut inner = self.lock();
        let Some(current) = inner.objects.get(key).map(|s| s.object.clone()) else { return Err(missing()) };
        check(&current)?;
        let old_bytes = inner.take(key).map_or(0, |o| o.bytes);
        inner.rv += 1;
        let rv = inner.rv;
        let mut gone = (*current).clone();
        set_rv(&mut gone, rv);
        let gone = Arc::new(gone);
        let event =
            Event { event_type: EventType::Deleted, key: key.clone(), object: gone.clone(), prev: Some(current), rv };
        inner.publish(event, 2 * old_bytes);
        Ok(gone)
    }

    /// Forgets the history up to now: watches from an older resourceVersion get 410.
    pub(crate) fn compact(&self) {
        let mut inner = self.lock();
        inner.history.clear();
        inner.history_bytes = 0;
        inner.compacted = inner.rv;
    }

    /// Closes every open watch, as a dropped connection would. The server's own loops keep
    /// their subscriptions: they are not clients.
    pub(crate) fn drop_watchers(&self) {
        self.lock().watchers.clear();
    }

    pub(crate) fn watch(&self, filter: Filter, from: WatchFrom) -> Result<Watch, ApiError> {
        let mut inner = self.lock();
        let initial = match from {
            WatchFrom::Version(rv) => inner.history_after(rv)?.filter_map(|e| filter.view(e)).collect(),
            WatchFrom::Now => {
                inner.select(&filter.id, filter.namespace.as_deref(), &filter, None).map(|(k, v)| added(k, v)).collect()
            }
        };
        let (tx, rx) = mpsc::channel(WATCHER_BUFFER);
        let watchers = inner.watchers.entry(filter.id.clone()).or_default();
        // Watches of a quiet type are otherwise only swept when a change of it comes.
        watchers.retain(|w| !w.tx.is_closed());
        watchers.push(Watcher { filter, tx });
        Ok(Watch { initial, rx, rv: inner.rv })
    }

    /// Every change of type `id` (of every type if None), unfiltered, from `from`, for the
    /// server's own loops: see [`Subscription`].
    fn subscribe(&self, id: Option<&str>, from: WatchFrom) -> Result<Watch, ApiError> {
        let mut inner = self.lock();
        let of_type = |k: &Key| id.is_none_or(|id| k.id == id);
        let initial = match from {
            WatchFrom::Version(rv) => inner.history_after(rv)?.filter(|e| of_type(&e.key)).cloned().collect(),
            WatchFrom::Now => {
                let start = range_start(id.unwrap_or(""), "", "");
                inner.objects.range(start..).take_while(|(k, _)| of_type(k)).map(|(k, s)| added(k, &s.object)).collect()
            }
        };
        let (tx, rx) = mpsc::channel(WATCHER_BUFFER);
        inner.subscribers.retain(|s| !s.tx.is_closed());
        inner.subscribers.push(Subscriber { id: id.map(String::from), tx });
        Ok(Watch { initial, rx, rv: inner.rv })
    }
}

/// What a [`Subscription`] brings.
pub(crate) enum Changes {
    /// The next changes, in order (none if the deadline passed first).
    Events(Vec<Arc<Event>>),
    /// The history no longer reaches back to where the stream was closed: the current state,
    /// as ADDED events, replaces whatever the loop knew.
    Reset(Vec<Arc<Event>>),
}

/// How one of the server's own loops (kubelet, garbage collector) follows the store: every
/// change of one type, or of all, in order, exactly once. Unlike clients' watches it is not
/// closed by [`Store::drop_watchers`]; if the loop falls [`WATCHER_BUFFER`] changes behind, its
/// stream is closed like any watch and it resumes from the history, or from a fresh [`Changes::Reset`]
/// once the history has moved past it.
pub(crate) struct Subscription<'a> {
    store: &'a Store,
    id: Option<String>,
    rx: mpsc::Receiver<Arc<Event>>,
    /// The last resourceVersion seen.
    rv: u64,
}

impl<'a> Subscription<'a> {
    /// A subscription, and the current state as ADDED events.
    pub(crate) fn start(store: &'a Store, id: Option<&str>) -> (Self, Vec<Arc<Event>>) {
        let (rx, rv, initial) = match store.subscribe(id, WatchFrom::Now) {
            Ok(w) => (w.rx, w.rv, w.initial),
            // Starting from now is never refused; a closed stream makes the first `next` resume.
            Err(_) => (mpsc::channel(1).1, 0, Vec::new()),
        };
        (Subscription { store, id: id.map(String::from), rx, rv }, initial)
    }

    /// The changes that came since the last call, waiting for at least one until `deadline`.
    pub(crate) async fn next(&mut self, deadline: Option<tokio::time::Instant>) -> Changes {
        let first = match deadline {
            Some(deadline) => tokio::select! {
                event = self.rx.recv() => event,
                _ = tokio::time::sleep_until(deadline) => return Changes::Events(Vec::new()),
            },
            None => self.rx.recv().await,
        };
        let Some(first) = first else { return self.resume() };
        let mut events = vec![first];
        while let Ok(event) = self.rx.try_recv() {
            events.push(event);
        }
        if let Some(last) = events.last() {
            self.rv = last.rv;
        }
        Changes::Events(events)
    }

    fn resume(&mut self) -> Changes {
        let id = self.id.as_deref();
        if let Ok(w) = self.store.subscribe(id, WatchFrom::Version(self.rv)) {
            (self.rx, self.rv) = (w.rx, w.rv);
            return Changes::Events(w.initial);
        }
        let (fresh, initial) = Subscription::start(self.store, id);
        *self = fresh;
        Changes::Reset(initial)
    }
}

/// Deleting, no finalizers left (a Namespace also waits on `spec.finalizers`, cleared once its
/// content is gone), and no grace period for a kubelet to finish.
pub(crate) fn deletion_complete(object: &Value) -> bool {
    let meta = &object["metadata"];
    let empty = |v: Option<&Value>| v.and_then(Value::as_array).is_none_or(Vec::is_empty);
    meta.get("deletionTimestamp").is_some_and(|t| !t.is_null())
        && empty(meta.get("finalizers"))
        && (object["kind"] != "Namespace" || empty(object.pointer("/spec/finalizers")))
        && meta.get("deletionGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(0) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;
    use wasmcm_core::Selector;

    fn key(name: &str) -> Key {
        Key { id: "/pods".into(), namespace: "default".into(), name: name.into() }
    }

    fn pod(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"}})
    }

    fn exists() -> ApiError {
        ApiError::already_exists("", "pods", "x")
    }

    fn missing() -> ApiError {
        ApiError::not_found("", "pods", "x")
    }

    #[test]
    fn resource_versions_increase_and_watches_resume_in_order() {
        let s = Store::new(HistoryLimits { events: 100, bytes: usize::MAX });
        let a = s.create(key("a"), pod("a"), exists).unwrap();
        let start = rv_of(&a);
        s.create(key("b"), pod("b"), exists).unwrap();
        s.update(&key("a"), missing, |v| Ok(Some(v.clone()))).unwrap();
        s.delete(&key("b"), missing, |_| Ok(())).unwrap();
        let mut w = s.watch(Filter::for_type("/pods"), WatchFrom::Version(start)).unwrap();
        let seen: Vec<_> = w.initial.iter().map(|e| (e.event_type, e.key.name.clone(), e.rv)).collect();
        assert_eq!(
            seen,
            vec![
                (EventType::Added, "b".into(), start + 1),
                (EventType::Modified, "a".into(), start + 2),
                (EventType::Deleted, "b".into(), start + 3)
            ]
        );
        s.create(key("c"), pod("c"), exists).unwrap();
        assert_eq!(w.rx.try_recv().unwrap().key.name, "c");
        assert!(s.create(key("c"), pod("c"), exists).is_err());
    }

    #[test]
    fn compacted_history_answers_410() {
        let s = Store::new(HistoryLimits { events: 2, bytes: usize::MAX });
        for n in ["a", "b", "c", "d"] {
            s.create(key(n), pod(n), exists).unwrap();
        }
        let err = s.watch(Filter::for_type("/pods"), WatchFrom::Version(2)).err().unwrap();
        assert_eq!(err.code, 410);
        assert!(s.watch(Filter::for_type("/pods"), WatchFrom::Version(s.current_rv() - 1)).is_ok());
        s.compact();
        assert_eq!(s.watch(Filter::for_type("/pods"), WatchFrom::Version(s.current_rv() - 1)).err().unwrap().code, 410);
        assert_eq!(s.watch(Filter::for_type("/pods"), WatchFrom::Now).unwrap().initial.len(), 4);
    }

    #[test]
    fn removing_the_last_finalizer_of_a_deleting_object_deletes_it() {
        let s = Store::default();
        let mut p = pod("a");
        p["metadata"]["finalizers"] = json!(["x"]);
        p["metadata"]["deletionTimestamp"] = json!("2026-01-01T00:00:00Z");
        s.create(key("a"), p, exists).unwrap();
        s.update(&key("a"), missing, |v| {
            let mut v = v.clone();
            v["metadata"]["finalizers"] = json!([]);
            Ok(Some(v))
        })
        .unwrap();
        assert!(s.get(&key("a")).is_none());
    }

    /// A deterministic sequence for the tests below (splitmix64).
    struct Seq(u64);

    impl Seq {
        fn next(&mut self, n: usize) -> usize {
            self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = self.0;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            ((z ^ (z >> 31)) % n as u64) as usize
        }
    }

    fn labelled(seq: &mut Seq, ns: &str, name: &str) -> Value {
        let mut labels = serde_json::Map::new();
        for key in ["app", "tier", "shard"] {
            match seq.next(5) {
                0 => {}
                n => {
                    labels.insert(key.into(), json!(format!("v{n}")));
                }
            }
        }
        if seq.next(20) == 0 {
            // Not a map[string]string: selected as having no labels at all.
            labels.insert("odd".into(), json!(1));
        }
        json!({"metadata": {"name": name, "namespace": ns, "labels": labels}})
    }

    /// What a list must return, by brute force.
    fn expected(s: &Store, filter: &Filter) -> Vec<Arc<Value>> {
        s.snapshot().into_iter().filter(|(k, v)| filter.matches_key(k) && filter.matches(v)).map(|(_, v)| v).collect()
    }

    #[test]
    fn indexed_lists_and_watches_equal_a_scan_through_label_changes_and_deletes() {
        let s = Store::default();
        let mut seq = Seq(7);
        let namespaces = ["a", "b", "c"];
        let at = |ns: &str, name: &str| Key { id: "/pods".into(), namespace: ns.into(), name: name.into() };
        for round in 0..6 {
            for i in 0..120 {
                let (ns, name) = (namespaces[seq.next(3)], format!("p{}", seq.next(60)));
                let object = labelled(&mut seq, ns, &name);
                match (round + i) % 3 {
                    0 => {
                        let _ = s.create(at(ns, &name), object, exists);
                    }
                    1 => {
                        let _ = s.update(&at(ns, &name), missing, |_| Ok(Some(object)));
                    }
                    _ => {
                        let _ = s.delete(&at(ns, &name), missing, |_| Ok(()));
                    }
                }
            }
            // Another type with the same labels must not leak into the lists.
            let cm = labelled(&mut seq, "a", "p1");
            let cm_key = Key { id: "/configmaps".into(), namespace: "a".into(), name: format!("p{round}") };
            s.create(cm_key, cm, exists).unwrap();
            for selector in [
                "",
                "app=v1",
                "app==v2,tier=v3",
                "app in (v1,v4)",
                "app in (v2),tier notin (v1)",
                "app!=v1",
                "shard",
                "!shard",
                "app=v1,shard in (v2,v3,v4)",
                "tier in (v9)",
            ] {
                for namespace in [None, Some("a"), Some("b"), Some("d")] {
                    let filter = Filter {
                        id: "/pods".into(),
                        namespace: namespace.map(String::from),
                        labels: Selector::parse(selector).unwrap(),
                        ..Default::default()
                    };
                    let want = expected(&s, &filter);
                    let (got, _) = s.list("/pods", namespace, &filter);
                    assert_eq!(got, want, "list {selector:?} in {namespace:?}, round {round}");
                    let initial = s.watch(filter.clone(), WatchFrom::Now).unwrap().initial;
                    let watched: Vec<Arc<Value>> = initial.iter().map(|e| e.object.clone()).collect();
                    assert_eq!(watched, want, "watch {selector:?} in {namespace:?}, round {round}");
                    // Pages of 7 add up to the list.
                    let mut paged: Vec<Arc<Value>> = Vec::new();
                    let mut after: Option<(String, String)> = None;
                    loop {
                        let page = s.list_page(
                            "/pods",
                            namespace,
                            &filter,
                            after.as_ref().map(|(a, b)| (a.as_str(), b.as_str())),
                            7,
                        );
                        assert_eq!(page.remaining, want.len() - paged.len() - page.items.len());
                        paged.extend(page.items);
                        if page.remaining == 0 {
                            break;
                        }
                        let last = paged.last().unwrap();
                        after = Some((str_of(last, "namespace"), str_of(last, "name")));
                    }
                    assert_eq!(paged, want, "pages of {selector:?} in {namespace:?}");
                }
            }
        }
        let by_name = Filter {
            id: "/pods".into(),
            namespace: Some("a".into()),
            fields: crate::registry::strategy::POD.parse_field_selector("metadata.name=p3").unwrap(),
            ..Default::default()
        };
        assert_eq!(s.list("/pods", Some("a"), &by_name).0, expected(&s, &by_name));
    }

    fn str_of(v: &Value, field: &str) -> String {
        v["metadata"][field].as_str().unwrap_or("").to_string()
    }

    #[test]
    fn history_bounded_by_bytes_answers_410_for_what_it_dropped() {
        let big = |name: &str| {
            let mut p = pod(name);
            p["data"] = json!("x".repeat(1000));
            p
        };
        let s = Store::new(HistoryLimits { events: 1000, bytes: 10_000 });
        let first = rv_of(&s.create(key("a"), big("a"), exists).unwrap());
        for n in 0..20 {
            s.update(&key("a"), missing, |v| {
                let mut v = v.clone();
                v["metadata"]["labels"] = json!({"n": n.to_string()});
                Ok(Some(v))
            })
            .unwrap();
        }
        let (events, bytes) = s.history_size();
        assert!(bytes <= 10_000, "{bytes} bytes kept");
        // Each update counts the new version and the one it replaced: ~2 KiB.
        assert!((3..=5).contains(&events), "{events} changes kept");
        assert_eq!(s.watch(Filter::for_type("/pods"), WatchFrom::Version(first)).err().unwrap().code, 410);
        let recent = s.current_rv() - 2;
        let w = s.watch(Filter::for_type("/pods"), WatchFrom::Version(recent)).unwrap();
        assert_eq!(w.initial.len(), 2);
        s.delete(&key("a"), missing, |_| Ok(())).unwrap();
        let (_, bytes) = s.history_size();
        assert!(bytes <= 10_000);
        s.compact();
        assert_eq!(s.history_size(), (0, 0));
    }

    #[tokio::test]
    async fn subscriptions_survive_dropped_watches_and_resume_after_falling_behind() {
        let s = Store::default();
        s.create(key("a"), pod("a"), exists).unwrap();
        let (mut sub, initial) = Subscription::start(&s, Some("/pods"));
        assert_eq!(initial.len(), 1);
        s.drop_watchers();
        s.create(key("b"), pod("b"), exists).unwrap();
        let cm = Key { id: "/configmaps".into(), namespace: "default".into(), name: "c".into() };
        s.create(cm, pod("c"), exists).unwrap();
        let Changes::Events(events) = sub.next(None).await else { panic!("a reset") };
        let names: Vec<_> = events.iter().map(|e| e.key.name.as_str()).collect();
        assert_eq!(names, ["b"], "only its type, and not dropped");
        // Closed as a lagging subscriber is: it picks up from the history.
        s.lock().subscribers.clear();
        s.delete(&key("a"), missing, |_| Ok(())).unwrap();
        let Changes::Events(events) = sub.next(None).await else { panic!("a reset") };
        assert_eq!(
            events.iter().map(|e| (e.event_type, e.key.name.as_str())).collect::<Vec<_>>(),
            [(EventType::Deleted, "a")]
        );
        // Past the history: the current state instead.
        s.lock().subscribers.clear();
        s.create(key("d"), pod("d"), exists).unwrap();
        s.compact();
        let Changes::Reset(state) = sub.next(None).await else { panic!("no reset") };
        assert_eq!(state.iter().map(|e| e.key.name.as_str()).collect::<Vec<_>>(), ["b", "d"]);
        s.create(key("e"), pod("e"), exists).unwrap();
        let Changes::Events(events) = sub.next(None).await else { panic!("a reset") };
        assert_eq!(events.len(), 1);
    }
}
