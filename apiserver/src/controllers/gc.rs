//! The cluster's own housekeeping, as kube-controller-manager's garbage collector, namespace
//! controller and service-account controller do it: dependents of deleted owners go
//! (background), foreground deletion waits for dependents, orphaning strips ownerReferences,
//! a terminating namespace is emptied and then removed, and every namespace has a `default`
//! ServiceAccount. And as etcd's leases on them: an Event goes an hour (`event_ttl`) after its
//! last write.
//!
//! Incremental, as upstream's dependency graph: the collector follows every change in the
//! store and keeps its own view of objects by uid with an index from each owner's uid to its
//! dependents, and a change only makes it look at what the change can affect: the object
//! itself, its owners (which may now have no dependents left) and its dependents (whose owner
//! went or started deleting). There is no periodic full pass: every condition acted on is a
//! function of stored objects, each of whose changes reaches the collector in order; a write
//! that fails for another reason than the object having gone is retried after a second, and a
//! collector that fell behind the history starts over from the current state.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;
use wasmcm_core::str_at;

use crate::State;
use crate::api::{self, DeleteOptions};
use crate::registry::resources::Target;
use crate::storage::change::{Event, EventType, Key};
use crate::storage::store::{Changes, Subscription};

fn deleting(v: &Value) -> bool {
    v.pointer("/metadata/deletionTimestamp").is_some_and(|t| !t.is_null())
}

fn has_finalizer(v: &Value, f: &str) -> bool {
    v.pointer("/metadata/finalizers").and_then(Value::as_array).is_some_and(|l| l.iter().any(|x| x == f))
}

fn owner_uids(v: &Value) -> BTreeSet<&str> {
    v.pointer("/metadata/ownerReferences")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .map(|r| str_at(r, "/uid"))
        .collect()
}

/// What dependents react to: (deleting, orphan finalizer, foregroundDeletion finalizer).
fn owner_state(v: &Value) -> (bool, bool, bool) {
    (deleting(v), has_finalizer(v, "orphan"), has_finalizer(v, "foregroundDeletion"))
}

fn target_of(state: &State, key: &Key) -> Option<Target> {
    let rt = state.registry.by_id(&key.id)?;
    Some(Target { rt, namespace: key.namespace.clone(), name: key.name.clone() })
}

/// What is left to look at. Ordered sets: the order of the collector's writes follows keys
/// (uids, names), never hashing.
#[derive(Default)]
struct Work {
    /// Objects with ownerReferences whose owners may be gone, orphaning or going foreground.
    dependents: BTreeSet<String>,
    /// Deleting owners whose orphan or foregroundDeletion finalizer may be removable.
    owners: BTreeSet<String>,
    /// Namespaces that just started terminating: everything in them is deleted.
    sweeps: BTreeSet<String>,
    /// Objects that appeared or changed in a terminating namespace.
    content: BTreeSet<Key>,
    /// Namespaces to finalize if empty (terminating) or to give a default ServiceAccount.
    namespaces: BTreeSet<String>,
}

impl Work {
    fn is_empty(&self) -> bool {
        self.dependents.is_empty()
            && self.owners.is_empty()
            && self.sweeps.is_empty()
            && self.content.is_empty()
            && self.namespaces.is_empty()
    }

    fn merge(&mut self, other: Work) {
        self.dependents.extend(other.dependents);
        self.owners.extend(other.owners);
        self.sweeps.extend(other.sweeps);
        self.content.extend(other.content);
        self.namespaces.extend(other.namespaces);
    }
}

/// How long a terminating namespace keeps its contents before they are deleted: upstream's
/// `namespaceDeletionGracePeriod`, which lets HA API servers see the deletion and etcd the last
/// creations in it. It is also what lets `kubectl delete -k` delete a namespace and then each
/// of its objects (kustomize orders the namespace first) without NotFound errors.
const NAMESPACE_DELETION_GRACE: Duration = Duration::from_secs(5);

/// The collector's view of the store, as of the last change it applied.
#[derive(Default)]
struct Collector {
    /// How long a terminating namespace waits to be emptied (zero for a one-off `pass`).
    grace: Duration,
    /// Terminating namespaces not emptied yet, with when they will be.
    sweep_at: BTreeMap<String, Instant>,
    /// Every object by uid.
    objects: BTreeMap<String, (Key, Arc<Value>)>,
    /// Owner uid → the uids of the objects whose ownerReferences name it (whether the owner
    /// exists or not).
    dependents: BTreeMap<String, BTreeSet<String>>,
    /// Namespaces being deleted.
    terminating: BTreeSet<String>,
    /// How long an Event lives after its last write; zero: for ever (a one-off `pass`).
    event_ttl: Duration,
    /// When each Event expires, and the same ordered by time.
    event_expiry: BTreeMap<Key, Instant>,
    expiring: BTreeSet<(Instant, Key)>,
    work: Work,
    /// Work whose write failed, for another try after `retry_at`.
    later: Work,
    retry_at: Option<Instant>,
}

impl Collector {
    fn apply(&mut self, event: &Event) {
        let uid = str_at(&event.object, "/metadata/uid").to_string();
        let key = &event.key;
        let new = (event.event_type != EventType::Deleted).then_some(&event.object);
        let old = self.objects.get(&uid).map(|(_, o)| o.clone());

        let old_refs = old.as_deref().map(owner_uids).unwrap_or_default();
        let new_refs = new.map(|o| owner_uids(o)).unwrap_or_default();
        if old_refs != new_refs {
            for owner in old_refs.difference(&new_refs) {
                if let Some(set) = self.dependents.get_mut(*owner) {
                    set.remove(&uid);
                    if set.is_empty() {
                        self.dependents.remove(*owner);
                        // Its last dependent gone, a deleting owner may drop its finalizer.
                        self.work.owners.insert(owner.to_string());
                    }
                }
            }
            for owner in new_refs.difference(&old_refs) {
                self.dependents.entry(owner.to_string()).or_default().insert(uid.clone());
            }
            if !new_refs.is_empty() {
                self.work.dependents.insert(uid.clone());
            }
        }

        match new {
            None => {
                self.objects.remove(&uid);
                self.work.dependents.extend(self.dependents.get(&uid).into_iter().flatten().cloned());
            }
            Some(object) => {
                let now = owner_state(object);
                if old.as_deref().map(owner_state) != Some(now) {
                    if now.0 && (now.1 || now.2) {
                        self.work.owners.insert(uid.clone());
                    }
                    self.work.dependents.extend(self.dependents.get(&uid).into_iter().flatten().cloned());
                }
                self.objects.insert(uid.clone(), (key.clone(), object.clone()));
            }
        }

        if key.id == "/events" && !self.event_ttl.is_zero() {
            if let Some(at) = self.event_expiry.remove(key) {
                self.expiring.remove(&(at, key.clone()));
            }
            if new.is_some() {
                let at = Instant::now() + self.event_ttl;
                self.event_expiry.insert(key.clone(), at);
                self.expiring.insert((at, key.clone()));
            }
        }

        if key.id == "/namespaces" {
            match new {
                Some(ns) if deleting(ns) => {
                    if self.terminating.insert(key.name.clone()) {
                        self.sweep_at.insert(key.name.clone(), Instant::now() + self.grace);
                    }
                    self.work.namespaces.insert(key.name.clone());
                }
                Some(_) if old.is_none() => {
                    self.work.namespaces.insert(key.name.clone());
                }
                Some(_) => {}
                None => {
                    self.terminating.remove(&key.name);
                    self.sweep_at.remove(&key.name);
                }
            }
        } else if self.terminating.contains(&key.namespace) {
            match new {
                Some(object) if !deleting(object) => {
                    self.work.content.insert(key.clone());
                }
                Some(_) => {}
                None => {
                    self.work.namespaces.insert(key.namespace.clone());
                }
            }
        }
        if new.is_none() && key.id == "/serviceaccounts" && key.name == "default" {
            self.work.namespaces.insert(key.namespace.clone());
        }
    }

    /// Acts on the work the applied changes made. Each step writes through `api` or the
    /// store; its own writes come back as changes.
    fn process(&mut self, state: &State) {
        if self.retry_at.is_some_and(|at| at <= Instant::now()) {
            self.retry_at = None;
            let later = std::mem::take(&mut self.later);
            self.work.merge(later);
        }
        let now = Instant::now();
        let due: Vec<String> = self.sweep_at.iter().filter(|(_, at)| **at <= now).map(|(ns, _)| ns.clone()).collect();
        for namespace in due {
            self.sweep_at.remove(&namespace);
            // Finalized once swept: at once if the sweep finds it empty.
            self.work.namespaces.insert(namespace.clone());
            self.work.sweeps.insert(namespace);
        }
        let work = std::mem::take(&mut self.work);
        let background = DeleteOptions { propagation_policy: Some("Background".into()), ..Default::default() };
        let foreground = DeleteOptions { propagation_policy: Some("Foreground".into()), ..Default::default() };

        for uid in work.dependents {
            let Some((key, object)) = self.objects.get(&uid) else { continue };
            let refs = object.pointer("/metadata/ownerReferences").and_then(Value::as_array);
            let Some(refs) = refs.filter(|r| !r.is_empty()) else { continue };
            let owners: Vec<&Arc<Value>> =
                refs.iter().filter_map(|r| self.objects.get(str_at(r, "/uid")).map(|(_, o)| o)).collect();
            let Some(target) = target_of(state, key) else { continue };
            if owners.is_empty() {
                if !deleting(object) {
                    let result = api::delete(state, &target, &background).map(drop);
                    if failed(result, key, "deleting a dependent of a deleted owner") {
                        self.later.dependents.insert(uid.clone());
                    }
                }
                continue;
            }
            let orphaning: Vec<&str> = owners
                .iter()
                .filter(|o| deleting(o) && has_finalizer(o, "orphan"))
                .map(|o| str_at(o, "/metadata/uid"))
                .collect();
            if !orphaning.is_empty() {
                let result = state.store.update(
                    key,
                    || api_missing(key),
                    |cur| {
                        let mut v = cur.clone();
                        if let Some(list) = v.pointer_mut("/metadata/ownerReferences").and_then(Value::as_array_mut) {
                            list.retain(|r| !orphaning.contains(&str_at(r, "/uid")));
                        }
                        Ok(Some(v))
                    },
                );
                if failed(result.map(drop), key, "orphaning a dependent") {
                    self.later.dependents.insert(uid.clone());
                }
                continue;
            }
            let owner_going = owners.iter().any(|o| deleting(o) && has_finalizer(o, "foregroundDeletion"));
            if owner_going && !deleting(object) {
                let result = api::delete(state, &target, &foreground).map(drop);
                if failed(result, key, "deleting a dependent in the foreground") {
                    self.later.dependents.insert(uid.clone());
                }
            }
        }

        for uid in work.owners {
            let Some((key, object)) = self.objects.get(&uid) else { continue };
            if !deleting(object) || self.dependents.contains_key(&uid) {
                continue;
            }
            for finalizer in ["foregroundDeletion", "orphan"] {
                if has_finalizer(object, finalizer) {
                    let result = state.store.update(
                        key,
                        || api_missing(key),
                        |cur| {
                            let mut v = cur.clone();
                            if let Some(list) = v.pointer_mut("/metadata/finalizers").and_then(Value::as_array_mut) {
                                list.retain(|f| f != finalizer);
                            }
                            Ok(Some(v))
                        },
                    );
                    if failed(result.map(drop), key, "removing a deletion finalizer") {
                        self.later.owners.insert(uid.clone());
                    }
                }
            }
        }

        for namespace in &work.sweeps {
            for key in state.store.keys_in_namespace(namespace) {
                if self.empty_one(state, &key) {
                    self.later.content.insert(key);
                }
            }
        }
        // Content of a namespace still in its grace period waits for that namespace's sweep.
        for key in work.content.iter().filter(|k| !self.sweep_at.contains_key(&k.namespace)) {
            if self.empty_one(state, key) {
                self.later.content.insert(key.clone());
            }
        }

        for name in work.namespaces {
            let key = Key { id: "/namespaces".into(), namespace: String::new(), name: name.clone() };
            let Some(ns) = state.store.get(&key) else { continue };
            if !deleting(&ns) {
                if !ensure_service_account(state, &name) {
                    self.later.namespaces.insert(name);
                }
                continue;
            }
            // Even an empty one waits out its grace period, as upstream's namespace controller
            // takes a deleted namespace up only after it.
            if self.sweep_at.contains_key(&name) || state.store.namespace_has_content(&name) {
                continue;
            }
            let result = state.store.update(
                &key,
                || api_missing(&key),
                |cur| {
                    let mut v = cur.clone();
                    v["spec"]["finalizers"] = json!([]);
                    Ok(Some(v))
                },
            );
            if failed(result.map(drop), &key, "finalizing a namespace") {
                self.later.namespaces.insert(name);
            }
        }
        while let Some((at, key)) = self.expiring.first().cloned().filter(|(at, _)| *at <= now) {
            self.expiring.remove(&(at, key.clone()));
            self.event_expiry.remove(&key);
            if let Some(target) = target_of(state, &key) {
                // Gone or changed meanwhile: its own change sets it expiring again.
                failed(api::delete(state, &target, &DeleteOptions::default()).map(drop), &key, "expiring an event");
            }
        }
        if !self.later.is_empty() && self.retry_at.is_none() {
            self.retry_at = Some(Instant::now() + Duration::from_secs(1));
        }
    }

    /// When the loop must wake with no change to apply: a retry, a namespace's sweep or an
    /// Event's expiry.
    fn wake_at(&self) -> Option<Instant> {
        let first_expiry = self.expiring.first().map(|(at, _)| *at);
        self.retry_at.into_iter().chain(self.sweep_at.values().copied()).chain(first_expiry).min()
    }

    /// Deletes an object of a terminating namespace unless it is already going; true if that
    /// failed and is worth retrying.
    fn empty_one(&self, state: &State, key: &Key) -> bool {
        let Some(target) = target_of(state, key) else { return false };
        if state.store.get(key).is_none_or(|o| deleting(&o)) {
            return false;
        }
        let background = DeleteOptions { propagation_policy: Some("Background".into()), ..Default::default() };
        failed(api::delete(state, &target, &background).map(drop), key, "emptying a terminating namespace")
    }
}

pub(crate) async fn run(state: Arc<State>, event_ttl: Duration) {
    let (mut changes, initial) = Subscription::start(&state.store, None);
    let running = || Collector { grace: NAMESPACE_DELETION_GRACE, event_ttl, ..Default::default() };
    let mut gc = running();
    for event in &initial {
        gc.apply(event);
    }
    loop {
        gc.process(&state);
        match changes.next(gc.wake_at()).await {
            Changes::Events(events) => {
                for event in &events {
                    gc.apply(event);
                }
            }
            Changes::Reset(events) => {
                gc = running();
                for event in &events {
                    gc.apply(event);
                }
            }
        }
    }
}

/// Everything the collector would do about the current state, done now: what a cluster's
/// bootstrap (and an offline run) relies on before the collector's loop is running.
pub(crate) fn pass(state: &State) {
    let mut gc = Collector::default();
    for (key, object) in state.store.snapshot() {
        gc.apply(&Event { event_type: EventType::Added, key, rv: 0, object, prev: None });
    }
    gc.process(state);
}

/// Creates the namespace's `default` ServiceAccount if missing; false if that failed and is
/// worth retrying.
fn ensure_service_account(state: &State, namespace: &str) -> bool {
    let key = Key { id: "/serviceaccounts".into(), namespace: namespace.into(), name: "default".into() };
    if state.store.get(&key).is_some() {
        return true;
    }
    let Some(rt) = state.registry.lookup("", "v1", "serviceaccounts") else { return true };
    let sa =
        json!({"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default", "namespace": namespace}});
    match api::create(state, &rt, namespace, sa, false, api::Ownership::Unrecorded) {
        Ok(_) => true,
        Err(e) if e.code == 409 || e.code == 403 || e.code == 404 => true,
        Err(e) => {
            tracing::warn!(namespace, "creating the default ServiceAccount: {e}");
            false
        }
    }
}

fn api_missing(key: &Key) -> wasmcm_core::ApiError {
    wasmcm_core::ApiError::not_found("", &key.id, &key.name)
}

/// Logs a failed write; true if it is worth retrying (the object has not gone or changed
/// under it: then its change brings it back anyway).
fn failed(result: Result<(), wasmcm_core::ApiError>, key: &Key, what: &str) -> bool {
    match result {
        Ok(()) => false,
        Err(e) if e.is_not_found() || e.is_conflict() => false,
        Err(e) => {
            tracing::warn!(object = %format!("{}/{}/{}", key.id, key.namespace, key.name), "{what}: {e}");
            true
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::test_state;
    use crate::registry::resources::ResourceType;

    fn state() -> State {
        test_state()
    }

    fn configmaps(state: &State) -> ResourceType {
        state.registry.lookup("", "v1", "configmaps").unwrap()
    }

    fn create(state: &State, name: &str, owners: &[&Value]) -> Arc<Value> {
        let refs: Vec<Value> = owners
            .iter()
            .map(|o| json!({"apiVersion": "v1", "kind": "ConfigMap", "name": o["metadata"]["name"], "uid": o["metadata"]["uid"]}))
            .collect();
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "ownerReferences": refs}});
        api::create(state, &configmaps(state), "default", cm, false, api::Ownership::Unrecorded).unwrap()
    }

    fn delete(state: &State, name: &str, policy: &str) {
        let t = Target { rt: configmaps(state), namespace: "default".into(), name: name.into() };
        let opts = DeleteOptions { propagation_policy: Some(policy.into()), ..Default::default() };
        api::delete(state, &t, &opts).map(drop).unwrap();
    }

    fn exists(state: &State, name: &str) -> Option<Arc<Value>> {
        state.store.get(&Key { id: "/configmaps".into(), namespace: "default".into(), name: name.into() })
    }

    /// Runs the collector as its loop does, fed by a subscription, until nothing changes.
    fn settle(state: &State, changes: &mut Subscription<'_>, gc: &mut Collector) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_time().build().unwrap();
        for _ in 0..20 {
            gc.process(state);
            let deadline = Some(Instant::now() + Duration::from_millis(20));
            match rt.block_on(changes.next(deadline)) {
                Changes::Events(events) if events.is_empty() => return,
                Changes::Events(events) | Changes::Reset(events) => events.iter().for_each(|e| gc.apply(e)),
            }
        }
        panic!("the collector does not settle");
    }

    #[test]
    fn owners_deleted_in_the_background_foreground_and_orphaning_are_followed_incrementally() {
        let state = state();
        let (mut changes, initial) = Subscription::start(&state.store, None);
        let mut gc = Collector::default();
        initial.iter().for_each(|e| gc.apply(e));

        let a = create(&state, "a", &[]);
        create(&state, "a-child", &[&a]);
        let b = create(&state, "b", &[]);
        create(&state, "b-child", &[&b]);
        let c = create(&state, "c", &[]);
        create(&state, "c-child", &[&c]);
        create(&state, "c-grandchild", &[&exists(&state, "c-child").unwrap()]);
        // Two owners, one of which stays: the dependent stays too.
        let d = create(&state, "d", &[]);
        create(&state, "shared", &[&a, &d]);
        settle(&state, &mut changes, &mut gc);
        assert!(exists(&state, "a-child").is_some());

        delete(&state, "a", "Background");
        settle(&state, &mut changes, &mut gc);
        assert!(exists(&state, "a-child").is_none());
        assert!(exists(&state, "shared").is_some(), "one owner remains");

        delete(&state, "b", "Orphan");
        settle(&state, &mut changes, &mut gc);
        assert!(exists(&state, "b").is_none());
        let orphan = exists(&state, "b-child").expect("an orphaned dependent stays");
        assert!(orphan["metadata"]["ownerReferences"].as_array().is_none_or(Vec::is_empty));

        delete(&state, "c", "Foreground");
        settle(&state, &mut changes, &mut gc);
        for gone in ["c", "c-child", "c-grandchild"] {
            assert!(exists(&state, gone).is_none(), "{gone}");
        }

        // A dependent created after its owner went is collected as soon as it appears.
        create(&state, "late", &[&a]);
        settle(&state, &mut changes, &mut gc);
        assert!(exists(&state, "late").is_none());
        assert!(exists(&state, "d").is_some() && exists(&state, "shared").is_some());
    }

    #[test]
    fn an_empty_namespace_stays_terminating_for_its_grace_period() {
        let state = state();
        let (mut changes, initial) = Subscription::start(&state.store, None);
        let grace = Duration::from_millis(300);
        let mut gc = Collector { grace, ..Default::default() };
        initial.iter().for_each(|e| gc.apply(e));
        let namespaces = state.registry.lookup("", "v1", "namespaces").unwrap();
        let ns = json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "idle"}});
        api::create(&state, &namespaces, "", ns, false, api::Ownership::Unrecorded).unwrap();
        settle(&state, &mut changes, &mut gc);
        let sa = state.registry.lookup("", "v1", "serviceaccounts").unwrap();
        let t = Target { rt: sa, namespace: "idle".into(), name: "default".into() };
        api::delete(&state, &t, &DeleteOptions::default()).map(drop).unwrap();
        let key = Key { id: "/namespaces".into(), namespace: String::new(), name: "idle".into() };
        let t = Target { rt: namespaces, namespace: String::new(), name: "idle".into() };
        api::delete(&state, &t, &DeleteOptions::default()).map(drop).unwrap();
        settle(&state, &mut changes, &mut gc);
        let terminating = state.store.get(&key).expect("kept for its grace period");
        assert_eq!(terminating["status"]["phase"], "Terminating");
        std::thread::sleep(grace);
        settle(&state, &mut changes, &mut gc);
        assert!(state.store.get(&key).is_none(), "finalized once its grace period is over");
    }

    #[test]
    fn an_event_expires_its_ttl_after_its_last_write() {
        let state = state();
        let (mut changes, initial) = Subscription::start(&state.store, None);
        let ttl = Duration::from_secs(2);
        let mut gc = Collector { event_ttl: ttl, ..Default::default() };
        initial.iter().for_each(|e| gc.apply(e));
        let events = state.registry.lookup("", "v1", "events").unwrap();
        let event = |message: &str| {
            json!({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "default"},
                   "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}, "message": message})
        };
        let key = Key { id: "/events".into(), namespace: "default".into(), name: "e".into() };
        let t = Target { rt: events.clone(), namespace: "default".into(), name: "e".into() };
        let start = std::time::Instant::now();
        api::create(&state, &events, "default", event("first"), false, api::Ownership::Unrecorded).unwrap();
        settle(&state, &mut changes, &mut gc);
        std::thread::sleep(ttl * 3 / 5);
        api::update(&state, &t, event("again"), false, api::Ownership::Unrecorded).unwrap();
        settle(&state, &mut changes, &mut gc);
        std::thread::sleep((ttl * 6 / 5).saturating_sub(start.elapsed()));
        settle(&state, &mut changes, &mut gc);
        assert!(state.store.get(&key).is_some(), "a write starts its time again");
        std::thread::sleep((ttl * 9 / 5).saturating_sub(start.elapsed()));
        settle(&state, &mut changes, &mut gc);
        assert!(state.store.get(&key).is_none(), "gone a TTL after its last write");
    }

    #[test]
    fn a_pass_over_the_current_state_does_what_the_loop_would() {
        let state = state();
        let a = create(&state, "a", &[]);
        create(&state, "a-child", &[&a]);
        delete(&state, "a", "Orphan");
        pass(&state);
        let orphan = exists(&state, "a-child").unwrap();
        assert!(orphan["metadata"]["ownerReferences"].as_array().is_none_or(Vec::is_empty));
        pass(&state);
        assert!(exists(&state, "a").is_none(), "the orphan finalizer goes once no dependent is left");
    }
}
