//! Shared informers: one store per kind and reach, whatever number of plugins read it. The
//! reach is every namespace, or the namespaces a plugin's scope lists: such a plugin's
//! informers list and watch each of its namespaces on its own (`Api::namespaced`, as
//! controller-runtime's `DefaultNamespaces` watches), so the host needs only namespaced list
//! and watch rights for it and caches nothing of other namespaces; plugins with the same
//! namespaces share them. A plugin of cluster-wide scope reading the same kind has informers
//! of its own: a scoped plugin does not borrow a cluster-wide store through a filtered view,
//! so what it needs (RBAC, a sync) never depends on which other plugins run, at the price of
//! a second watch and copy of its namespaces' objects where both read a kind. Cluster-scoped
//! kinds are listed whole whatever the reach: a plugin of listed namespaces gets the
//! cluster-wide informer of a kind discovery already knows to be cluster-scoped, and an
//! informer of listed namespaces whose kind turns out cluster-scoped lists all of it (beside
//! the cluster-wide one, if another plugin started it first).
//! Each store keeps every object's JSON as served (plugins receive exactly that) plus what
//! event routing needs (labels, controller reference), indexed by (namespace, name) and by
//! (namespace, controller uid) as client-go's controller-UID indexers are, so that what a
//! reconcile reads costs what it returns, not the size of the namespace. Re-lists on 410 and reconnects with
//! backoff through kube-runtime's watcher; a re-list is applied object by object as it streams
//! in (never buffered whole) and then diffed against the store, so subscribers see deletions
//! that happened while disconnected.
//!
//! An informer is handed out at once and syncs on its own: a kind the cluster does not serve
//! (yet: a CRD installed later) or may not be listed keeps being retried, and its status says
//! why it has not synced, so one plugin's broken informer holds up no one else.
//!
//! A warm cache is not a fresh one: a standby's watch may be reconnecting (after a stalled API,
//! in backoff) when it takes over, and the writes of the leader before it are not in its
//! expectations. So a new leader asks each informer for a list begun after it took over
//! ([`Informer::fresh_since`]), as kube-controller-manager starts its informers afresh.
//!
//! A sharded host's cluster-wide informers of namespaced kinds follow the shards it holds
//! (`runtime::shards`): where the server filters by KEP-5866's `shardSelector` (it echoes the
//! selector in `metadata.shardInfo`), each list and watch asks for the objects of the
//! namespaces in the held shards alone, each named by its exact hash, and a change of the held
//! set (or a namespace created in or deleted from it) starts the watch over with the new
//! selector, so each replica caches about its share. Where the server ignores it, the informers cache everything
//! and the controllers filter keys by shard: memory is then not split. Cluster-scoped kinds
//! are never sharded, nor are informers of listed namespaces (the controllers filter their keys
//! by shard). A replica holding no shard lists nothing of a sharded kind.
//!
//! It owns reading from the cluster and nothing else: no keys, no queues, no writes.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex, RwLock};

use futures_util::StreamExt;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::api::{Api, ApiResource};
use kube::core::DynamicResourceScope;
use kube::runtime::{WatchStreamExt, watcher};
use serde::Deserialize;
use serde_json::value::RawValue;
use tokio::sync::{broadcast, watch};
use tokio::time::Instant;
use wasmcm_core::{ShardField, ShardSelector};
use wasmcm_guest::{Cache, Kind, Selector};

use crate::client::discovery::{Discovery, Resource};
use crate::key::Key;

/// One cached object.
#[derive(Debug)]
pub struct Object {
    pub namespace: String,
    pub name: String,
    pub uid: String,
    pub resource_version: String,
    pub labels: BTreeMap<String, String>,
    /// The ownerReference with `controller: true`.
    pub controller: Option<ControllerRef>,
    /// Its deletionTimestamp is set: it is going, though it may linger for its grace period.
    pub deleting: bool,
    pub json: String,
}

impl Object {
    fn from_served(served: Served) -> Self {
        let Served { metadata: meta, json } = served;
        let controller = meta.owner_references.unwrap_or_default().into_iter().find(|r| r.controller == Some(true));
        Object {
            namespace: meta.namespace.unwrap_or_default(),
            name: meta.name.unwrap_or_default(),
            uid: meta.uid.unwrap_or_default(),
            resource_version: meta.resource_version.unwrap_or_default(),
            deleting: meta.deletion_timestamp.is_some(),
            labels: meta.labels.unwrap_or_default(),
            controller: controller.map(|r| ControllerRef {
                kind: Kind::new(&r.api_version, &r.kind),
                name: r.name,
                uid: r.uid,
            }),
            json: String::from(Box::<str>::from(json)),
        }
    }

    pub fn key(&self) -> Key {
        Key::new(&self.namespace, &self.name)
    }

    /// Its entry in the controller index: namespace and controller uid (`None`: an orphan).
    fn controller_key(&self) -> (String, Option<String>) {
        (self.namespace.clone(), self.controller.as_ref().map(|c| c.uid.clone()))
    }

    /// Heap bytes this entry holds besides its JSON, for the memory figures.
    fn overhead(&self) -> usize {
        let labels: usize = self.labels.iter().map(|(k, v)| k.len() + v.len() + 3 * size_of::<String>()).sum();
        let controller = self.controller.as_ref().map_or(0, |c| {
            size_of::<ControllerRef>() + c.kind.api_version.len() + c.kind.kind.len() + c.name.len() + c.uid.len()
        });
        size_of::<Object>()
            + self.namespace.len()
            + self.name.len()
            + self.uid.len()
            + self.resource_version.len()
            + labels
            + controller
    }
}

/// The objects of one kind and their indexes, changed together under one lock.
#[derive(Default)]
struct Store {
    /// By (namespace, name): lists come out in that order whatever the hash seed, and a
    /// namespace is one range.
    objects: BTreeMap<(String, String), Arc<Object>>,
    /// Names by (namespace, controller uid), orphans under `None`.
    by_controller: BTreeMap<(String, Option<String>), BTreeSet<String>>,
    /// Names by (namespace, label key, label value): a selector with an equality requirement
    /// (every ReplicaSet's) reads the objects carrying that label, not the whole namespace;
    /// the namespace scan made ReplicaSet scale-downs quadratic in the cluster's size.
    by_label: BTreeMap<(String, String, String), BTreeSet<String>>,
    /// Bytes of JSON held, and of everything else (entries, indexes), for the memory figures.
    json_bytes: usize,
    other_bytes: usize,
}

impl Store {
    /// Heap bytes of one index entry: the set's node share plus its key's strings.
    fn index_bytes(o: &Object) -> usize {
        let label_entries: usize = o
            .labels
            .iter()
            .map(|(k, v)| 5 * size_of::<String>() + o.namespace.len() + k.len() + v.len() + o.name.len())
            .sum();
        2 * size_of::<String>() + o.name.len() + label_entries
    }

    fn label_key(o: &Object, key: &str, value: &str) -> (String, String, String) {
        (o.namespace.clone(), key.to_string(), value.to_string())
    }

    fn insert(&mut self, object: Arc<Object>) -> Option<Arc<Object>> {
        let old = self.remove(&object.namespace, &object.name);
        self.json_bytes += object.json.len();
        self.other_bytes += object.overhead() + Self::index_bytes(&object);
        self.by_controller.entry(object.controller_key()).or_default().insert(object.name.clone());
        for (k, v) in &object.labels {
            self.by_label.entry(Self::label_key(&object, k, v)).or_default().insert(object.name.clone());
        }
        self.objects.insert((object.namespace.clone(), object.name.clone()), object);
        old
    }

    fn remove(&mut self, namespace: &str, name: &str) -> Option<Arc<Object>> {
        let old = self.objects.remove(&(namespace.to_string(), name.to_string()))?;
        self.json_bytes -= old.json.len();
        self.other_bytes -= old.overhead() + Self::index_bytes(&old);
        let key = old.controller_key();
        if let Some(names) = self.by_controller.get_mut(&key) {
            names.remove(&old.name);
            if names.is_empty() {
                self.by_controller.remove(&key);
            }
        }
        for (k, v) in &old.labels {
            let key = Self::label_key(&old, k, v);
            if let Some(names) = self.by_label.get_mut(&key) {
                names.remove(&old.name);
                if names.is_empty() {
                    self.by_label.remove(&key);
                }
            }
        }
        Some(old)
    }

    /// The names in `namespace` carrying the selector's rarest `key=value` requirement, by
    /// name; `None` when it has none (the caller scans the namespace).
    fn labelled(&self, namespace: &str, selector: &Selector) -> Option<&BTreeSet<String>> {
        static NONE: BTreeSet<String> = BTreeSet::new();
        let equalities = selector.match_labels.iter().map(|(k, v)| (k, v)).chain(
            selector
                .match_expressions
                .iter()
                .filter(|r| r.operator == wasmcm_core::Operator::In && r.values.len() == 1)
                .map(|r| (&r.key, &r.values[0])),
        );
        equalities
            .map(|(k, v)| self.by_label.get(&(namespace.to_string(), k.clone(), v.clone())).unwrap_or(&NONE))
            .min_by_key(|names| names.len())
    }

    fn controlled(&self, namespace: &str, owner: Option<&str>) -> impl Iterator<Item = &Arc<Object>> {
        let key = (namespace.to_string(), owner.map(str::to_string));
        self.by_controller
            .get(&key)
            .into_iter()
            .flatten()
            .filter_map(move |name| self.objects.get(&(namespace.to_string(), name.clone())))
    }
}

/// The controlling owner of an object.
#[derive(Clone, Debug)]
pub struct ControllerRef {
    pub kind: Kind,
    pub name: String,
    pub uid: String,
}

impl ControllerRef {
    /// Whether it names an object of `kind`, in any version of its group (as ownerReferences
    /// are matched).
    pub fn refers_to(&self, kind: &Kind) -> bool {
        self.kind.kind == kind.kind && self.kind.group() == kind.group()
    }
}

/// An object as the watcher hands it over: its metadata, which the watcher resumes from, and
/// its JSON exactly as served, which the store keeps and plugins receive. Decoding into a
/// `DynamicObject` instead buffered every event through serde's `Content`, converted it into a
/// `Value` and serialised that again: four passes, and most of the host's allocations at scale.
#[derive(Clone, Debug)]
pub(crate) struct Served {
    metadata: ObjectMeta,
    json: Box<RawValue>,
}

impl<'de> Deserialize<'de> for Served {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let json = Box::<RawValue>::deserialize(d)?;
        let json = without_managed_fields(json).map_err(serde::de::Error::custom)?;
        #[derive(Deserialize)]
        struct Metadata {
            #[serde(default)]
            metadata: ObjectMeta,
        }
        let Metadata { metadata } = serde_json::from_str(json.get()).map_err(serde::de::Error::custom)?;
        Ok(Served { metadata, json })
    }
}

/// The object without `metadata.managedFields`: who owns which field is the API server's
/// bookkeeping, no plugin's business, and a third of a pod's JSON. Dropped as
/// controller-runtime's `TransformStripManagedFields` drops it, by re-joining the raw pieces
/// of the object and of its metadata (no `Value` built); objects without it are kept as served.
fn without_managed_fields(json: Box<RawValue>) -> serde_json::Result<Box<RawValue>> {
    if !json.get().contains("\"managedFields\"") {
        return Ok(json);
    }
    let mut object: BTreeMap<String, Box<RawValue>> = serde_json::from_str(json.get())?;
    let Some(meta) = object.get("metadata") else { return Ok(json) };
    let mut meta: BTreeMap<String, Box<RawValue>> = serde_json::from_str(meta.get())?;
    if meta.remove("managedFields").is_none() {
        return Ok(json);
    }
    object.insert("metadata".into(), serde_json::value::to_raw_value(&meta)?);
    serde_json::value::to_raw_value(&object)
}

/// The object with its `apiVersion` and `kind`. kube-apiserver writes the items of a typed list
/// without them (only the list has a TypeMeta; watch events carry it), and a plugin reads the
/// same object whichever way it arrived. Objects that start with either are kept as served (a
/// server writes the TypeMeta first, in Go's order, or `apiVersion` first, sorted); others get
/// both in front.
fn with_type_meta(json: Box<RawValue>, kind: &Kind) -> serde_json::Result<Box<RawValue>> {
    let text = json.get();
    if text.starts_with("{\"kind\"") || text.starts_with("{\"apiVersion\"") {
        return Ok(json);
    }
    let mut object: BTreeMap<String, Box<RawValue>> = serde_json::from_str(text)?;
    object.entry("apiVersion".into()).or_insert(serde_json::value::to_raw_value(&kind.api_version)?);
    object.entry("kind".into()).or_insert(serde_json::value::to_raw_value(&kind.kind)?);
    serde_json::value::to_raw_value(&object)
}

/// As `DynamicObject`'s: the kind is known at run time, from discovery.
impl kube::Resource for Served {
    type DynamicType = ApiResource;
    type Scope = DynamicResourceScope;

    fn group(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.group.as_str().into()
    }

    fn version(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.version.as_str().into()
    }

    fn kind(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.kind.as_str().into()
    }

    fn api_version(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.api_version.as_str().into()
    }

    fn plural(dt: &ApiResource) -> std::borrow::Cow<'_, str> {
        dt.plural.as_str().into()
    }

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

/// A change seen by an informer.
#[derive(Clone, Debug)]
pub struct Change {
    pub kind: Kind,
    /// The object now (for a deletion: its last state).
    pub object: Arc<Object>,
    /// The object before, if it was cached.
    pub old: Option<Arc<Object>>,
    pub deleted: bool,
}

/// Where an informer stands: synced once its first full list is in, and the last error that
/// kept it from the cluster (cleared by the next success).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SyncStatus {
    pub synced: bool,
    pub error: Option<String>,
}

/// The list-and-watch streams of one informer, each named by its namespace ("" for the one
/// stream of every namespace, or of a cluster-scoped kind).
#[derive(Default)]
struct Streams {
    /// Which there are, once the kind is resolved.
    expected: BTreeSet<String>,
    /// When each one's last completed list began.
    listed: BTreeMap<String, Instant>,
    /// Why each failing one failed ("" also while the kind cannot be resolved).
    errors: BTreeMap<String, String>,
}

pub struct Informer {
    kind: Kind,
    /// The namespaces it lists and watches; `None`: every one.
    namespaces: Option<BTreeSet<String>>,
    /// Its kind is cluster-scoped: it lists all of it whatever `namespaces` says.
    whole: std::sync::atomic::AtomicBool,
    store: RwLock<Store>,
    status: watch::Sender<SyncStatus>,
    changes: broadcast::Sender<Change>,
    streams: Mutex<Streams>,
    /// When the last list that completed began (the oldest of its streams').
    last_list: watch::Sender<Option<Instant>>,
    /// A list begun at or after this is wanted: the watch starts over.
    list_wanted: watch::Sender<Option<Instant>>,
}

impl Informer {
    fn new(kind: Kind, namespaces: Option<BTreeSet<String>>) -> Self {
        Informer {
            kind,
            namespaces,
            whole: std::sync::atomic::AtomicBool::new(false),
            store: RwLock::new(Store::default()),
            status: watch::channel(SyncStatus::default()).0,
            changes: broadcast::channel(65_536).0,
            streams: Mutex::default(),
            last_list: watch::channel(None).0,
            list_wanted: watch::channel(None).0,
        }
    }

    pub fn kind(&self) -> &Kind {
        &self.kind
    }

    /// The namespaces it caches, when not every one.
    pub fn namespaces(&self) -> Option<&BTreeSet<String>> {
        self.namespaces.as_ref().filter(|_| !self.whole.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Resolves once the first full list is in the store.
    pub async fn wait_synced(&self) {
        let mut rx = self.status.subscribe();
        let _ = rx.wait_for(|s| s.synced).await;
    }

    /// Resolves once synced, or once an error says why it is not.
    pub async fn settled(&self) {
        let mut rx = self.status.subscribe();
        let _ = rx.wait_for(|s| s.synced || s.error.is_some()).await;
    }

    pub fn is_synced(&self) -> bool {
        self.status.borrow().synced
    }

    pub fn status(&self) -> SyncStatus {
        self.status.borrow().clone()
    }

    /// Resolves once a full list begun at or after `since` is in the store (the initial one, or
    /// one asked for now).
    pub async fn fresh_since(&self, since: Instant) {
        let fresh = |began: &Option<Instant>| began.is_some_and(|t| t >= since);
        if !fresh(&self.last_list.borrow()) {
            self.list_wanted.send_if_modified(|asked| {
                let newer = asked.is_none_or(|t| t < since);
                if newer {
                    *asked = Some(since);
                }
                newer
            });
        }
        let mut rx = self.last_list.subscribe();
        let _ = rx.wait_for(fresh).await;
    }

    /// Changes the state of its streams and publishes what follows: synced once every stream
    /// has listed once, fresh as of the oldest stream's last list, failing while any stream
    /// fails.
    fn streams(&self, change: impl FnOnce(&mut Streams)) {
        let mut streams = self.streams.lock().unwrap_or_else(|e| e.into_inner());
        change(&mut streams);
        let Streams { expected, listed, errors } = &*streams;
        let synced = !expected.is_empty() && expected.iter().all(|s| listed.contains_key(s));
        let error = (!errors.is_empty()).then(|| {
            let each = errors.iter().map(|(stream, e)| match stream.as_str() {
                "" => e.clone(),
                ns => format!("namespace {ns}: {e}"),
            });
            each.collect::<Vec<_>>().join("; ")
        });
        self.status.send_if_modified(|s| {
            let now = SyncStatus { synced, error };
            let changed = *s != now;
            *s = now;
            changed
        });
        if synced {
            let oldest = expected.iter().filter_map(|s| listed.get(s)).min().copied();
            self.last_list.send_if_modified(|l| {
                let changed = *l != oldest;
                *l = oldest;
                changed
            });
        }
    }

    fn failed(&self, stream: &str, error: String) {
        self.streams(|s| {
            s.errors.insert(stream.to_string(), error);
        });
    }

    fn succeeded(&self, stream: &str) {
        if self.status.borrow().error.is_some() {
            self.streams(|s| {
                s.errors.remove(stream);
            });
        }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    pub fn len(&self) -> usize {
        self.store.read().map(|s| s.objects.len()).unwrap_or(0)
    }

    /// Bytes of JSON cached, and of everything else the cache holds for it (entries, indexes).
    pub fn bytes(&self) -> (usize, usize) {
        self.store.read().map(|s| (s.json_bytes, s.other_bytes)).unwrap_or((0, 0))
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, namespace: &str, name: &str) -> Option<Arc<Object>> {
        self.store.read().ok()?.objects.get(&(namespace.to_string(), name.to_string())).cloned()
    }

    /// The objects of `namespace` whose controller has `owner_uid`, then, with `orphans`,
    /// those without a controller; each group by name.
    pub fn list_controlled(&self, namespace: &str, owner_uid: &str, orphans: bool) -> Vec<Arc<Object>> {
        let Ok(store) = self.store.read() else { return Vec::new() };
        let mut found: Vec<Arc<Object>> = store.controlled(namespace, Some(owner_uid)).cloned().collect();
        if orphans {
            found.extend(store.controlled(namespace, None).cloned());
        }
        found
    }

    /// The objects of `namespace` (all namespaces if empty) matching `selector`, by
    /// (namespace, name).
    ///
    /// The lock is held only to take the candidates (the label index's, or the namespace's);
    /// the selector is matched after, so a costly selector never holds up the informer.
    pub fn list(&self, namespace: &str, selector: &Selector) -> Vec<Arc<Object>> {
        let candidates: Vec<Arc<Object>> = {
            let Ok(store) = self.store.read() else { return Vec::new() };
            let objects = &store.objects;
            if namespace.is_empty() {
                objects.values().cloned().collect()
            } else if let Some(names) = store.labelled(namespace, selector) {
                names.iter().filter_map(|name| objects.get(&(namespace.to_string(), name.clone()))).cloned().collect()
            } else {
                let from = (namespace.to_owned(), String::new());
                objects.range(from..).map(|(_, o)| o).take_while(|o| o.namespace == namespace).cloned().collect()
            }
        };
        candidates.into_iter().filter(|o| selector.matches(&o.labels)).collect()
    }

    fn apply(&self, mut served: Served) {
        match with_type_meta(served.json, &self.kind) {
            Ok(json) => served.json = json,
            Err(e) => {
                tracing::warn!(kind = %self.kind, "an object that is not a JSON object: {e}");
                return;
            }
        }
        let object = Arc::new(Object::from_served(served));
        let old = match self.store.write() {
            Ok(mut store) => store.insert(object.clone()),
            Err(_) => return,
        };
        // Same resourceVersion: nothing changed (a resync or a replayed event).
        if old.as_ref().is_some_and(|o| o.resource_version == object.resource_version) {
            return;
        }
        let _ = self.changes.send(Change { kind: self.kind.clone(), object, old, deleted: false });
    }

    fn delete(&self, served: Served) {
        let object = Object::from_served(served);
        let old = self.store.write().ok().and_then(|mut s| s.remove(&object.namespace, &object.name));
        let _ = self.changes.send(Change { kind: self.kind.clone(), object: Arc::new(object), old, deleted: true });
    }

    /// Ends a re-list of `stream` begun at `began`: what it did not bring (`listed`) is gone
    /// from its part of the store, and that part is synced.
    fn relisted(&self, stream: &str, listed: &BTreeSet<(String, String)>, began: Instant) {
        let gone: Vec<Arc<Object>> = match self.store.read() {
            // A namespace's objects are one range of the store; "" starts the whole of it.
            Ok(store) => store
                .objects
                .range((stream.to_string(), String::new())..)
                .take_while(|(k, _)| stream.is_empty() || k.0 == stream)
                .filter(|(k, _)| !listed.contains(*k))
                .map(|(_, o)| o.clone())
                .collect(),
            Err(_) => return,
        };
        for object in gone {
            if let Ok(mut store) = self.store.write() {
                store.remove(&object.namespace, &object.name);
            }
            let _ = self.changes.send(Change {
                kind: self.kind.clone(),
                object: object.clone(),
                old: Some(object),
                deleted: true,
            });
        }
        self.streams(|s| {
            s.listed.insert(stream.to_string(), began);
            s.errors.remove(stream);
        });
    }
}

/// What a sharded host's informers of namespaced kinds ask the server for: the `shardSelector`
/// of the namespaces in the shards it holds (`None`: it holds none, and lists nothing).
#[derive(Clone)]
pub(crate) struct ShardScope {
    pub(crate) selector: watch::Receiver<Option<String>>,
}

/// An informer, and the task that lists and watches for it.
type Running = (Arc<Informer>, tokio::task::AbortHandle);

/// The references to an informer that mean no one reads it: `Informers`' map's, and its task's.
const HELD_BY_INFORMERS: usize = 2;

/// Where an informer lists and watches: `None` every namespace, or these namespaces.
type Reach = Option<BTreeSet<String>>;

/// The informers of one host, by kind and reach.
pub struct Informers {
    client: kube::Client,
    discovery: Discovery,
    shards: Option<ShardScope>,
    by_kind: Mutex<BTreeMap<(Kind, Reach), Running>>,
    tasks: Mutex<tokio::task::JoinSet<()>>,
}

impl Informers {
    pub fn new(client: kube::Client, discovery: Discovery) -> Self {
        Informers {
            client,
            discovery,
            shards: None,
            by_kind: Mutex::new(BTreeMap::new()),
            tasks: Mutex::new(tokio::task::JoinSet::new()),
        }
    }

    /// Cluster-wide informers of namespaced kinds list and watch only the shards `scope` holds
    /// (the server filters).
    pub(crate) fn sharded(self, scope: ShardScope) -> Self {
        Informers { shards: Some(scope), ..self }
    }

    /// The cluster-wide informer of `kind`, started on first use; it syncs on its own
    /// ([`Informer::status`]).
    pub fn informer(&self, kind: &Kind) -> Arc<Informer> {
        self.informer_in(kind, None)
    }

    /// The informer of `kind` in `namespaces` (`None`: all of them), started on first use.
    /// A kind discovery already knows to be cluster-scoped gets the cluster-wide informer.
    pub fn informer_in(&self, kind: &Kind, namespaces: Option<&BTreeSet<String>>) -> Arc<Informer> {
        let reach = namespaces.filter(|_| self.discovery.known_namespaced(kind) != Some(false)).cloned();
        let mut by_kind = self.by_kind.lock().unwrap_or_else(|e| e.into_inner());
        let key = (kind.clone(), reach);
        if let Some((i, _)) = by_kind.get(&key) {
            return i.clone();
        }
        let informer = Arc::new(Informer::new(kind.clone(), key.1.clone()));
        let task = run(self.client.clone(), self.discovery.clone(), self.shards.clone(), informer.clone());
        let mut tasks = self.tasks.lock().unwrap_or_else(|e| e.into_inner());
        by_kind.insert(key, (informer.clone(), tasks.spawn(task)));
        informer
    }

    /// Stops the informers nothing reads any more (a plugin removed, a scope widened) and
    /// returns them: no controller, cache or route holds one, only this map and its own task.
    /// Counted under the map's lock, which every new reader takes first, so none is lost.
    pub(crate) fn release_unused(&self) -> Vec<Arc<Informer>> {
        let mut by_kind = self.by_kind.lock().unwrap_or_else(|e| e.into_inner());
        let unused: Vec<(Kind, Reach)> = by_kind
            .iter()
            .filter(|(_, (informer, task))| {
                Arc::strong_count(informer) <= HELD_BY_INFORMERS - usize::from(task.is_finished())
            })
            .map(|(key, _)| key.clone())
            .collect();
        let mut released = Vec::new();
        for key in unused {
            if let Some((informer, task)) = by_kind.remove(&key) {
                task.abort();
                tracing::info!(kind = %informer.kind, "no plugin reads it any more: informer stopped");
                released.push(informer);
            }
        }
        released
    }

    /// Stops every informer's list and watch: a host that stops reads nothing more, and an
    /// embedded cluster stopped next does not see its watches fail.
    pub(crate) async fn shutdown(&self) {
        let tasks = self.tasks.lock().map(|mut t| std::mem::take(&mut *t));
        if let Ok(mut tasks) = tasks {
            tasks.shutdown().await;
        }
    }

    pub fn all(&self) -> Vec<Arc<Informer>> {
        self.by_kind.lock().map(|m| m.values().map(|(i, _)| i.clone()).collect()).unwrap_or_default()
    }
}

/// Retries to find a kind the cluster does not serve (yet) no faster than this.
const RESOLVE_BACKOFF: (std::time::Duration, std::time::Duration) =
    (std::time::Duration::from_secs(1), std::time::Duration::from_secs(30));

async fn run(client: kube::Client, discovery: Discovery, shards: Option<ShardScope>, informer: Arc<Informer>) {
    let mut backoff = RESOLVE_BACKOFF.0;
    let mut waiting = false;
    let kind = &informer.kind;
    let resource = loop {
        match discovery.resolve_fresh(kind).await {
            Ok(r) => {
                if waiting {
                    tracing::info!(%kind, "the cluster serves kind {kind}: watching it");
                }
                break r;
            }
            Err(why) => {
                // A kind the cluster answers it does not serve is a state to wait out (a CRD
                // applied after the host started): said once. A cluster that does not answer is
                // a fault: said at each retry, as their interval grows.
                let unserved = discovery.unserved(kind);
                if !unserved {
                    tracing::warn!(%kind, "cannot watch, retrying in {backoff:?}: {why}");
                } else if !waiting {
                    tracing::info!(
                        %kind,
                        "waiting for the cluster to serve kind {kind} (a CRD not installed yet?); its plugins \
                         reconcile nothing of it until then"
                    );
                } else {
                    tracing::debug!(%kind, "still waiting, next try in {backoff:?}: {why}");
                }
                waiting |= unserved;
                informer.failed("", why);
                tokio::time::sleep(backoff).await;
                backoff = (backoff * 2).min(RESOLVE_BACKOFF.1);
            }
        }
    };
    informer.whole.store(!resource.namespaced, std::sync::atomic::Ordering::Relaxed);
    let namespaces = informer.namespaces();
    // One stream per namespace listed, or one of them all.
    let streams: BTreeSet<String> = match namespaces {
        Some(listed) if !listed.is_empty() => listed.clone(),
        _ => [String::new()].into(),
    };
    informer.streams(|s| {
        s.errors.clear();
        s.expected = streams.clone();
    });
    match namespaces {
        Some(listed) if listed.is_empty() => nothing(&informer, None).await,
        Some(listed) => {
            let each = listed.iter().map(|ns| stream(&client, &resource, &informer, Some(ns), None));
            futures_util::future::join_all(each).await;
        }
        None => {
            let shards = shards.filter(|_| resource.namespaced);
            stream(&client, &resource, &informer, None, shards).await;
        }
    }
}

/// Lists nothing, and so is fresh whenever asked: an informer of no namespaces, or (with
/// `shards`) of none held, until some are.
async fn nothing(informer: &Informer, mut shards: Option<&mut ShardScope>) {
    let mut asked = informer.list_wanted.subscribe();
    loop {
        asked.borrow_and_update();
        informer.relisted("", &BTreeSet::new(), Instant::now());
        let held_changed = async {
            match shards.as_mut() {
                Some(scope) => scope.selector.changed().await.is_ok(),
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            true = held_changed => return,
            r = asked.changed() => if r.is_err() { return },
        }
    }
}

/// Lists and watches `namespace` (all of them if `None`, and then, with `shards`, the held
/// shards' alone) into the informer's store for good.
async fn stream(
    client: &kube::Client,
    resource: &Resource,
    informer: &Informer,
    namespace: Option<&str>,
    mut shards: Option<ShardScope>,
) {
    let mut asked = informer.list_wanted.subscribe();
    loop {
        let started = Instant::now();
        asked.borrow_and_update();
        let api: Api<Served> = match (namespace, shards.as_mut()) {
            (Some(ns), _) => Api::namespaced_with(client.clone(), ns, &resource.api),
            (None, None) => Api::all_with(client.clone(), &resource.api),
            (None, Some(scope)) => {
                let Some(selector) = scope.selector.borrow_and_update().clone() else {
                    // Nothing to list: the cache is empty, and fresh as of now.
                    nothing(informer, Some(scope)).await;
                    continue;
                };
                Api::all_with(with_query(client.clone(), "shardSelector", &selector), &resource.api)
            }
        };
        let events = watcher(api, watcher::Config::default()).default_backoff().boxed();
        let follow = follow(informer, namespace.unwrap_or(""), events);
        tokio::pin!(follow);
        loop {
            let held_changed = async {
                match shards.as_mut() {
                    Some(scope) => scope.selector.changed().await.is_ok(),
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = &mut follow => return,
                // A list begun after this watch started is asked for: start over.
                Ok(()) = asked.changed() => {
                    if asked.borrow_and_update().is_some_and(|t| t > started) {
                        break;
                    }
                }
                // Other shards held, or namespaces added to or gone from them: list and watch
                // those instead.
                true = held_changed => break,
            }
        }
    }
}

/// `client` with `name=value` added to every request's query (the informer's lists and watches).
fn with_query(client: kube::Client, name: &str, value: &str) -> kube::Client {
    let pair: String = form_urlencoded::Serializer::new(String::new()).append_pair(name, value).finish();
    let service = tower::service_fn(move |mut request: http::Request<kube::client::Body>| {
        let client = client.clone();
        let uri = request.uri().to_string();
        let joined = if uri.contains('?') { format!("{uri}&{pair}") } else { format!("{uri}?{pair}") };
        let parsed = joined.parse::<http::Uri>();
        async move {
            *request.uri_mut() = parsed.map_err(|e| kube::Error::Service(e.into()))?;
            client.send(request).await
        }
    });
    kube::Client::new(service, "default")
}

/// Whether the server filters lists by `shardSelector` (KEP-5866): it echoes the selector in
/// the list's `metadata.shardInfo`; a server without the feature ignores the parameter.
pub(crate) async fn server_filters_shards(client: &kube::Client, namespace: &str) -> bool {
    let selector = ShardSelector::of_shards(ShardField::Namespace, [0], 1).to_string();
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("limit", "1")
        .append_pair("shardSelector", &selector)
        .finish();
    let path = format!("/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases?{query}");
    let Ok(request) = http::Request::get(path).body(Vec::new()) else { return false };
    match client.request_text(request).await {
        Ok(text) => serde_json::from_str::<serde_json::Value>(&text)
            .is_ok_and(|v| v.pointer("/metadata/shardInfo/selector").is_some()),
        Err(e) => {
            tracing::warn!("probing for shardSelector support: {e}");
            false
        }
    }
}

/// Applies the events of `stream` (a namespace, or "" for all) to the informer.
async fn follow(
    informer: &Informer,
    stream: &str,
    mut events: impl futures_util::Stream<Item = watcher::Result<watcher::Event<Served>>> + Unpin,
) {
    // What the re-list in progress has brought: the rest of the store is gone at its end.
    let mut listed = BTreeSet::new();
    let mut began = Instant::now();
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Init) => {
                listed.clear();
                began = Instant::now();
            }
            Ok(watcher::Event::InitApply(o)) => {
                let meta = &o.metadata;
                listed.insert((meta.namespace.clone().unwrap_or_default(), meta.name.clone().unwrap_or_default()));
                informer.apply(o);
            }
            Ok(watcher::Event::InitDone) => {
                informer.relisted(stream, &std::mem::take(&mut listed), began);
            }
            Ok(watcher::Event::Apply(o)) => {
                informer.succeeded(stream);
                informer.apply(o);
            }
            Ok(watcher::Event::Delete(o)) => {
                informer.succeeded(stream);
                informer.delete(o);
            }
            // The watcher backs off and resumes (re-listing after 410) by itself.
            Err(e) => {
                tracing::warn!(kind = %informer.kind, namespace = stream, "watch failed, retrying: {e}");
                informer.failed(stream, e.to_string());
            }
        }
    }
}

/// The cache view a plugin gets: only the informers of the kinds it declared.
/// The informers of every kind any version of a plugin declared. What one call may read is
/// narrower and enforced by the engine (`Plugin`'s readable kinds), so versions share this.
pub struct PluginCache {
    informers: RwLock<BTreeMap<Kind, Arc<Informer>>>,
}

impl PluginCache {
    pub fn new(informers: impl IntoIterator<Item = Arc<Informer>>) -> Self {
        PluginCache { informers: RwLock::new(informers.into_iter().map(|i| (i.kind.clone(), i)).collect()) }
    }

    pub fn add(&self, informer: Arc<Informer>) {
        if let Ok(mut m) = self.informers.write() {
            m.insert(informer.kind.clone(), informer);
        }
    }

    pub fn has(&self, kind: &Kind) -> bool {
        self.informers.read().is_ok_and(|m| m.contains_key(kind))
    }

    pub fn informers(&self) -> Vec<Arc<Informer>> {
        self.informers.read().map(|m| m.values().cloned().collect()).unwrap_or_default()
    }

    pub fn informer(&self, kind: &Kind) -> Option<Arc<Informer>> {
        self.informers.read().ok()?.get(kind).cloned()
    }
}

/// The JSON of `objects`, copied only as far as one list may go: past the engine's caps the
/// copy stops (one object over), and the engine refuses the read.
fn copied(objects: Vec<Arc<Object>>) -> Vec<String> {
    use crate::engine::{MAX_LIST_BYTES, MAX_LIST_OBJECTS};
    let mut bytes = 0usize;
    let mut out = Vec::with_capacity(objects.len().min(MAX_LIST_OBJECTS + 1));
    for o in objects {
        if out.len() > MAX_LIST_OBJECTS || bytes > MAX_LIST_BYTES {
            break;
        }
        bytes += o.json.len();
        out.push(o.json.clone());
    }
    out
}

impl Cache for PluginCache {
    fn get(&self, kind: &Kind, namespace: &str, name: &str) -> Option<String> {
        self.informer(kind)?.get(namespace, name).map(|o| o.json.clone())
    }

    fn list(&self, kind: &Kind, namespace: &str, selector: &Selector) -> Vec<String> {
        self.informer(kind).map(|i| copied(i.list(namespace, selector))).unwrap_or_default()
    }

    fn list_controlled(&self, kind: &Kind, namespace: &str, owner_uid: &str, orphans: bool) -> Vec<String> {
        self.informer(kind).map(|i| copied(i.list_controlled(namespace, owner_uid, orphans))).unwrap_or_default()
    }
}

/// A plugin's view of its cache within the namespaces its scope admits: objects elsewhere do
/// not exist for it.
pub(crate) struct ScopedCache<F> {
    pub(crate) cache: Arc<PluginCache>,
    /// Whether the plugin may see objects of a namespace ("" for cluster-scoped objects).
    pub(crate) admits: F,
}

impl<F: Fn(&str) -> bool + Send + Sync> Cache for ScopedCache<F> {
    fn get(&self, kind: &Kind, namespace: &str, name: &str) -> Option<String> {
        let o = self.cache.informer(kind)?.get(namespace, name)?;
        (self.admits)(&o.namespace).then(|| o.json.clone())
    }

    fn list(&self, kind: &Kind, namespace: &str, selector: &Selector) -> Vec<String> {
        if !namespace.is_empty() && !(self.admits)(namespace) {
            return Vec::new();
        }
        let Some(informer) = self.cache.informer(kind) else { return Vec::new() };
        let mut objects = informer.list(namespace, selector);
        if namespace.is_empty() {
            objects.retain(|o| (self.admits)(&o.namespace));
        }
        copied(objects)
    }

    fn list_controlled(&self, kind: &Kind, namespace: &str, owner_uid: &str, orphans: bool) -> Vec<String> {
        if !(self.admits)(namespace) {
            return Vec::new();
        }
        let Some(informer) = self.cache.informer(kind) else { return Vec::new() };
        let mut objects = informer.list_controlled(namespace, owner_uid, orphans);
        objects.retain(|o| (self.admits)(&o.namespace));
        copied(objects)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A typed list's items come without their TypeMeta (kube-apiserver's JSON); cached, they
    /// have it, as a watch event's objects do.
    #[test]
    fn listed_items_get_their_kind_and_api_version() {
        let kind = Kind::new("apps/v1", "ReplicaSet");
        let bare = RawValue::from_string(r#"{"metadata":{"name":"r"},"spec":{"replicas":1}}"#.into()).unwrap();
        let typed: serde_json::Value = serde_json::from_str(with_type_meta(bare, &kind).unwrap().get()).unwrap();
        assert_eq!((typed["apiVersion"].as_str(), typed["kind"].as_str()), (Some("apps/v1"), Some("ReplicaSet")));
        assert_eq!(typed["spec"]["replicas"], 1);
        let served = r#"{"kind":"ReplicaSet","apiVersion":"apps/v1","metadata":{"name":"r"}}"#;
        let kept = with_type_meta(RawValue::from_string(served.into()).unwrap(), &kind).unwrap();
        assert_eq!(kept.get(), served, "an object with its TypeMeta is kept as served");
    }

    #[test]
    fn cached_objects_carry_no_managed_fields_and_keep_the_rest() {
        let served: Served = serde_json::from_str(
            r#"{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"n","resourceVersion":"7",
                "managedFields":[{"manager":"m","operation":"Update","fieldsV1":{"f:spec":{}}}]},"spec":{"x":1}}"#,
        )
        .unwrap();
        let v: serde_json::Value = serde_json::from_str(served.json.get()).unwrap();
        assert_eq!(v["metadata"].get("managedFields"), None);
        assert_eq!((v["metadata"]["name"].as_str(), v["spec"]["x"].as_i64()), (Some("p"), Some(1)));
        assert_eq!(served.metadata.resource_version.as_deref(), Some("7"));
        let plain = r#"{"metadata":{"name":"q"}}"#;
        let served: Served = serde_json::from_str(plain).unwrap();
        assert_eq!(served.json.get(), plain, "an object without them is kept as served");
    }
}
