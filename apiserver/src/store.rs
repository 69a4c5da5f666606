//! Storage of the embedded API server: objects by (group/resource, namespace, name), one
//! global resourceVersion, a bounded history of changes, and watch fan-out.
//!
//! Every change is committed under one lock, numbered, appended to the history and handed to
//! each matching watcher in the same critical section: a watcher sees every change after its
//! starting point exactly once and in order. It knows nothing of HTTP, defaulting or
//! validation; callers pass closures that decide the new object from the current one.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;
use tokio::sync::{Notify, mpsc};

use super::change::{Event, EventType, Key};
use super::query::Filter;
use wasmcm_core::ApiError;

/// Changes kept for watches that resume from an older resourceVersion.
pub(crate) const DEFAULT_HISTORY: usize = 100_000;
/// Events a watcher may fall behind by before it is closed (the client re-watches).
const WATCHER_BUFFER: usize = 50_000;

struct Watcher {
    filter: Filter,
    tx: mpsc::Sender<Arc<Event>>,
}

struct Inner {
    rv: u64,
    objects: BTreeMap<Key, Arc<Value>>,
    history: VecDeque<Arc<Event>>,
    history_limit: usize,
    /// Changes at or below this resourceVersion are no longer in the history.
    compacted: u64,
    watchers: Vec<Watcher>,
}

pub(crate) struct Store {
    inner: Mutex<Inner>,
    /// Wakes the server's own loops (scheduler, kubelet, garbage collector) after a change.
    pub changed: Notify,
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

fn rv_of(v: &Value) -> u64 {
    v.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|s| s.parse().ok()).unwrap_or(0)
}

fn set_rv(v: &mut Value, rv: u64) {
    if let Some(meta) = v.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.insert("resourceVersion".into(), Value::String(rv.to_string()));
    }
}

impl Default for Store {
    fn default() -> Self {
        Self::new(DEFAULT_HISTORY)
    }
}

impl Store {
    pub(crate) fn new(history_limit: usize) -> Self {
        Store {
            inner: Mutex::new(Inner {
                rv: 1,
                objects: BTreeMap::new(),
                history: VecDeque::new(),
                history_limit: history_limit.max(1),
                compacted: 1,
                watchers: Vec::new(),
            }),
            changed: Notify::new(),
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

    pub(crate) fn get(&self, key: &Key) -> Option<Arc<Value>> {
        self.lock().objects.get(key).cloned()
    }

    /// Objects of `id` (in `namespace` if given) passing `filter`, in name order, with the
    /// resourceVersion the list is consistent with.
    pub(crate) fn list(&self, id: &str, namespace: Option<&str>, filter: &Filter) -> (Vec<Arc<Value>>, u64) {
        let inner = self.lock();
        let start = Key { id: id.to_string(), namespace: namespace.unwrap_or("").to_string(), name: String::new() };
        let items = inner
            .objects
            .range(start..)
            .take_while(|(k, _)| k.id == id && namespace.is_none_or(|ns| k.namespace == ns))
            .filter(|(_, v)| filter.matches(v))
            .map(|(_, v)| v.clone())
            .collect();
        (items, inner.rv)
    }

    /// Every key of every type in a namespace (for namespace deletion).
    pub(crate) fn keys_in_namespace(&self, namespace: &str) -> Vec<Key> {
        self.lock().objects.keys().filter(|k| k.namespace == namespace).cloned().collect()
    }

    /// Every object (for the garbage collector's ownership scan).
    pub(crate) fn snapshot(&self) -> Vec<(Key, Arc<Value>)> {
        self.lock().objects.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    /// Creates `object` at `key`; `exists` builds the error when something is already there.
    pub(crate) fn create(
        &self,
        key: Key,
        mut object: Value,
        exists: impl FnOnce() -> ApiError,
    ) -> Result<Arc<Value>, ApiError> {
        let mut inner = self.lock();
        if inner.objects.contains_key(&key) {
            return Err(exists());
        }
        inner.rv += 1;
        let rv = inner.rv;
        set_rv(&mut object, rv);
        let object = Arc::new(object);
        inner.objects.insert(key.clone(), object.clone());
        Self::publish(&mut inner, Event { event_type: EventType::Added, key, object: object.clone(), prev: None, rv });
        drop(inner);
        self.changed.notify_waiters();
        Ok(object)
    }

    /// Puts `object` at `key` as it is, resourceVersion included (a restore, not a write: no
    /// event), and keeps later writes' resourceVersions above it.
    pub(crate) fn restore(&self, key: Key, object: Value) {
        let mut inner = self.lock();
        let rv = object.pointer("/metadata/resourceVersion").and_then(Value::as_str).and_then(|v| v.parse().ok());
        inner.rv = inner.rv.max(rv.unwrap_or(0));
        inner.objects.insert(key, Arc::new(object));
    }

    /// Atomically replaces the object at `key` with what `f` makes of it. `f` returning
    /// `Ok(None)` means no change (nothing is written, no resourceVersion is spent). An object
    /// left with a deletionTimestamp, no finalizers and no grace period still running is
    /// removed, as the API server does when the last finalizer goes.
    pub(crate) fn update(
        &self,
        key: &Key,
        missing: impl FnOnce() -> ApiError,
        f: impl FnOnce(&Value) -> Result<Option<Value>, ApiError>,
    ) -> Result<Arc<Value>, ApiError> {
        let mut inner = self.lock();
        let Some(current) = inner.objects.get(key).cloned() else { return Err(missing()) };
        let Some(mut object) = f(&current)? else { return Ok(current) };
        inner.rv += 1;
        let rv = inner.rv;
        set_rv(&mut object, rv);
        let object = Arc::new(object);
        let event_type = if deletion_complete(&object) {
            inner.objects.remove(key);
            EventType::Deleted
        } else {
            inner.objects.insert(key.clone(), object.clone());
            EventType::Modified
        };
        let event = Event { event_type, key: key.clone(), object: object.clone(), prev: Some(current), rv };
        Self::publish(&mut inner, event);
        drop(inner);
        self.changed.notify_waiters();
        Ok(object)
    }

    /// Removes the object at `key` if `check` accepts the current one.
    pub(crate) fn delete(
        &self,
        key: &Key,
        missing: impl FnOnce() -> ApiError,
        check: impl FnOnce(&Value) -> Result<(), ApiError>,
    ) -> Result<Arc<Value>, ApiError> {
        let mut inner = self.lock();
        let Some(current) = inner.objects.get(key).cloned() else { return Err(missing()) };
        check(&current)?;
        inner.objects.remove(key);
        inner.rv += 1;
        let rv = inner.rv;
        let mut gone = (*current).clone();
        set_rv(&mut gone, rv);
        let gone = Arc::new(gone);
        let event =
            Event { event_type: EventType::Deleted, key: key.clone(), object: gone.clone(), prev: Some(current), rv };
        Self::publish(&mut inner, event);
        drop(inner);
        self.changed.notify_waiters();
        Ok(gone)
    }

    fn publish(inner: &mut Inner, event: Event) {
        let event = Arc::new(event);
        inner.history.push_back(event.clone());
        while inner.history.len() > inner.history_limit {
            if let Some(old) = inner.history.pop_front() {
                inner.compacted = old.rv;
            }
        }
        // A watcher that cannot keep up, or whose client went away, is dropped: its stream
        // ends and the client resumes from the last resourceVersion it saw.
        inner.watchers.retain(|w| match w.filter.view(&event) {
            Some(seen) => w.tx.try_send(seen).is_ok(),
            None => !w.tx.is_closed(),
        });
    }

    /// Forgets the history up to now: watches from an older resourceVersion get 410.
    pub(crate) fn compact(&self) {
        let mut inner = self.lock();
        inner.history.clear();
        inner.compacted = inner.rv;
    }

    /// Closes every open watch, as a dropped connection would.
    pub(crate) fn drop_watchers(&self) {
        self.lock().watchers.clear();
    }

    pub(crate) fn watch(&self, filter: Filter, from: WatchFrom) -> Result<Watch, ApiError> {
        let mut inner = self.lock();
        let initial: Vec<Arc<Event>> = match from {
            WatchFrom::Version(rv) if rv < inner.compacted => {
                return Err(ApiError::gone(format!("too old resource version: {rv} ({})", inner.compacted)));
            }
            WatchFrom::Version(rv) => {
                // History is in resourceVersion order: skip what the client has already seen.
                let start = inner.history.partition_point(|e| e.rv <= rv);
                inner.history.range(start..).filter_map(|e| filter.view(e)).collect()
            }
            WatchFrom::Now => inner
                .objects
                .iter()
                .filter(|(k, v)| filter.matches_key(k) && filter.matches(v))
                .map(|(k, v)| {
                    let rv = rv_of(v);
                    Arc::new(Event { event_type: EventType::Added, key: k.clone(), object: v.clone(), prev: None, rv })
                })
                .collect(),
        };
        let (tx, rx) = mpsc::channel(WATCHER_BUFFER);
        inner.watchers.push(Watcher { filter, tx });
        Ok(Watch { initial, rx, rv: inner.rv })
    }
}

/// Deleting, no finalizers left (a Namespace also waits on `spec.finalizers`, cleared once its
/// content is gone), and no grace period for a kubelet to finish.
fn deletion_complete(object: &Value) -> bool {
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
        let s = Store::new(100);
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
        let s = Store::new(2);
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
        let s = Store::new(10);
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
}
