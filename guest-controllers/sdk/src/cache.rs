//! The read-only cache view a controller sees, typed helpers over it, and an in-memory
//! implementation for native tests, benchmarks and the host's `simulate`.
//!
//! Inside the host, [`Cache`] reads the host's informer caches: eventually consistent, possibly
//! behind the plugin's own last writes, limited to the kinds the plugin declared and the
//! namespaces its manifest lets it act in. The [guide](crate::guide#the-cache-view) says what
//! a reconcile may and may not rely on.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Error, Kind, Resource, Selector};

/// The `cache` import of the contract: reads of the host's informer caches. Objects are
/// Kubernetes JSON, as the API server serves them, each with its `apiVersion` and `kind`.
///
/// Only the kinds a plugin declared (primary, owned and watched) are readable: inside the
/// host, reading any other kind traps the call (a [`MemoryCache`] just has nothing of it).
/// Objects in namespaces outside the plugin's scope do not exist for it. [`CacheExt`] adds
/// typed reads.
///
/// ```
/// use serde_json::json;
/// use wasmcm_guest::{Cache, Kind, MemoryCache, Selector};
///
/// let cache = MemoryCache::from_objects(&[
///     json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "demo", "labels": {"app": "web"}}}),
///     json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "b", "namespace": "demo"}}),
/// ])
/// .unwrap();
/// let config_map = Kind::new("v1", "ConfigMap");
/// let a: serde_json::Value = serde_json::from_str(&cache.get(&config_map, "demo", "a").unwrap()).unwrap();
/// assert_eq!(a["metadata"]["labels"]["app"], "web");
/// assert_eq!(cache.get(&config_map, "demo", "c"), None);
/// assert_eq!(cache.list(&config_map, "demo", &Selector::parse("app=web").unwrap()).len(), 1);
/// assert_eq!(cache.list(&config_map, "", &Selector::everything()).len(), 2);
/// ```
pub trait Cache {
    /// The object of `kind` named `namespace/name` (`namespace` empty for a cluster-scoped
    /// kind), if the cache holds it.
    fn get(&self, kind: &Kind, namespace: &str, name: &str) -> Option<String>;

    /// The objects of `kind` in `namespace` (every namespace when empty) whose labels match
    /// `selector`, in no promised order. Costs every object of the namespace: for the objects
    /// an owner controls, [`list_controlled`](Cache::list_controlled) costs only what it
    /// returns. Inside the host one list returns at most 20,000 objects or 64 MiB, or the call
    /// traps.
    fn list(&self, kind: &Kind, namespace: &str, selector: &Selector) -> Vec<String>;

    /// The objects of `kind` in `namespace` whose controller ownerReference has `owner_uid`,
    /// then, with `orphans`, those with no controller at all (candidates for adoption), each
    /// group by name. Served from an index as client-go's controller-UID indexer: it costs
    /// what it returns, not the namespace's size.
    fn list_controlled(&self, kind: &Kind, namespace: &str, owner_uid: &str, orphans: bool) -> Vec<String>;
}

/// The uid of an object's controlling ownerReference (the one with `controller: true`), from
/// its `metadata` JSON.
///
/// ```
/// use serde_json::json;
///
/// let metadata = json!({"ownerReferences": [
///     {"apiVersion": "v1", "kind": "ConfigMap", "name": "x", "uid": "u0"},
///     {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web", "uid": "u1", "controller": true},
/// ]});
/// assert_eq!(wasmcm_guest::controller_uid(&metadata), Some("u1"));
/// assert_eq!(wasmcm_guest::controller_uid(&json!({})), None);
/// ```
pub fn controller_uid(metadata: &Value) -> Option<&str> {
    metadata
        .get("ownerReferences")?
        .as_array()?
        .iter()
        .find(|r| r.get("controller").and_then(Value::as_bool) == Some(true))
        .map(|r| r.get("uid").and_then(Value::as_str).unwrap_or(""))
}

/// An object read from the cache: typed for logic, with its JSON kept so that writes start
/// from exactly what the API served (fields this build does not know survive an update).
#[derive(Clone, Debug)]
pub struct Object<T> {
    /// The object, decoded.
    pub value: T,
    /// The object's JSON as the cache holds it.
    pub json: String,
}

impl<T> Object<T> {
    /// The JSON as a [`Value`], to change and send back as an update: it keeps the fields
    /// `T` does not know, and the `resourceVersion` the update's precondition needs.
    ///
    /// ```
    /// use k8s_openapi::api::core::v1::ConfigMap;
    /// use serde_json::json;
    /// use wasmcm_guest::{CacheExt, Intent, MemoryCache};
    ///
    /// let cache = MemoryCache::from_objects(&[json!({"apiVersion": "v1", "kind": "ConfigMap",
    ///     "metadata": {"name": "a", "namespace": "demo", "resourceVersion": "7"},
    ///     "data": {"k": "old"}, "futureField": true})])
    /// .unwrap();
    /// let cm = cache.get_as::<ConfigMap>("demo", "a").unwrap().unwrap();
    /// let mut raw = cm.raw().unwrap();
    /// raw["data"]["k"] = json!("new");
    /// assert_eq!((raw["futureField"].clone(), raw["metadata"]["resourceVersion"].clone()), (json!(true), json!("7")));
    /// let update = Intent::Update(raw.to_string());
    /// # let _ = update;
    /// ```
    pub fn raw(&self) -> Result<Value, Error> {
        serde_json::from_str(&self.json).map_err(|e| Error::retryable(format!("object JSON: {e}")))
    }
}

fn parse<T: Resource + DeserializeOwned>(json: String) -> Result<Object<T>, Error> {
    match serde_json::from_str::<T>(&json) {
        Ok(value) => Ok(Object { value, json }),
        Err(e) => {
            let name = serde_json::from_str::<Value>(&json)
                .ok()
                .and_then(|v| {
                    let m = v.get("metadata")?;
                    Some(format!(
                        "{}/{}",
                        m.get("namespace").and_then(Value::as_str).unwrap_or(""),
                        m.get("name").and_then(Value::as_str).unwrap_or("")
                    ))
                })
                .unwrap_or_else(|| "<unnamed>".into());
            Err(Error::retryable(format!("cannot decode {} {name} from the cache: {e}", T::kind().kind)))
        }
    }
}

/// Typed reads for k8s-openapi resource types and custom resources ([`Resource`]), on any
/// [`Cache`] (`&dyn Cache` included). The kind comes from the type; an object the type cannot decode is a retryable [`Error`] naming
/// it.
///
/// ```
/// use k8s_openapi::api::core::v1::Pod;
/// use serde_json::json;
/// use wasmcm_guest::{CacheExt, MemoryCache, Selector};
///
/// let pod = |name: &str, owner: Option<&str>| json!({"apiVersion": "v1", "kind": "Pod",
///     "metadata": {"name": name, "namespace": "demo", "labels": {"app": "web"},
///         "ownerReferences": owner.map(|uid| vec![json!({"apiVersion": "apps/v1", "kind": "ReplicaSet",
///             "name": "web", "uid": uid, "controller": true})])}});
/// let cache = MemoryCache::from_objects(&[pod("mine", Some("rs-1")), pod("orphan", None), pod("theirs", Some("rs-2"))])
///     .unwrap();
///
/// let web = cache.get_as::<Pod>("demo", "mine").unwrap().unwrap();
/// assert_eq!(web.value.metadata.name.as_deref(), Some("mine"));
/// assert!(cache.get_as::<Pod>("demo", "nope").unwrap().is_none());
/// assert_eq!(cache.list_as::<Pod>("demo", &Selector::parse("app=web").unwrap()).unwrap().len(), 3);
///
/// let names = |orphans| -> Vec<String> {
///     let pods = cache.list_controlled_as::<Pod>("demo", "rs-1", orphans).unwrap();
///     pods.into_iter().map(|p| p.value.metadata.name.unwrap()).collect()
/// };
/// assert_eq!(names(false), ["mine"]);
/// assert_eq!(names(true), ["mine", "orphan"]);
/// ```
pub trait CacheExt: Cache {
    /// [`Cache::get`] of `T`'s kind, decoded.
    fn get_as<T: Resource + DeserializeOwned>(&self, namespace: &str, name: &str) -> Result<Option<Object<T>>, Error> {
        self.get(&T::kind(), namespace, name).map(parse).transpose()
    }

    /// [`Cache::list`] of `T`'s kind, decoded.
    fn list_as<T: Resource + DeserializeOwned>(
        &self,
        namespace: &str,
        selector: &Selector,
    ) -> Result<Vec<Object<T>>, Error> {
        self.list(&T::kind(), namespace, selector).into_iter().map(parse).collect()
    }

    /// [`Cache::list_controlled`] of `T`'s kind, decoded.
    fn list_controlled_as<T: Resource + DeserializeOwned>(
        &self,
        namespace: &str,
        owner_uid: &str,
        orphans: bool,
    ) -> Result<Vec<Object<T>>, Error> {
        self.list_controlled(&T::kind(), namespace, owner_uid, orphans).into_iter().map(parse).collect()
    }
}

impl<C: Cache + ?Sized> CacheExt for C {}

struct Entry {
    labels: BTreeMap<String, String>,
    /// The controller's uid; `None` for an orphan.
    controller: Option<String>,
    json: String,
}

/// A cache over a fixed set of objects, keyed by kind, namespace and name: what a plugin's
/// unit tests reconcile against, and what `wasmcm simulate` loads a snapshot into. Lists are
/// ordered by namespace and name.
///
/// It answers reads and nothing more: unlike the host's cache view it lets any kind be read
/// (an undeclared kind is simply empty), applies no scope and no read caps, and never lags.
/// `wasmcm simulate` runs the built component against one in the real sandbox, where reads of
/// undeclared kinds trap.
///
/// ```
/// use serde_json::json;
/// use wasmcm_guest::{Cache, Kind, MemoryCache};
///
/// let mut cache = MemoryCache::new();
/// cache.insert(&json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}})).unwrap();
/// cache.insert(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "demo"}})).unwrap();
/// assert_eq!(cache.len(), 2);
/// assert!(cache.get(&Kind::new("v1", "Namespace"), "", "demo").is_some());
///
/// // Inserting the same kind, namespace and name replaces; a test steps time this way.
/// cache.insert(&json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "namespace": "demo"},
///     "data": {"k": "v"}})).unwrap();
/// assert_eq!(cache.len(), 2);
/// cache.remove(&Kind::new("v1", "ConfigMap"), "demo", "a");
/// assert!(cache.get(&Kind::new("v1", "ConfigMap"), "demo", "a").is_none());
///
/// // An object must say what it is.
/// assert_eq!(cache.insert(&json!({"kind": "Pod", "metadata": {"name": "p"}})).unwrap_err(), "object has no apiVersion");
/// ```
#[derive(Default)]
pub struct MemoryCache {
    kinds: BTreeMap<Kind, BTreeMap<(String, String), Entry>>,
}

impl MemoryCache {
    /// An empty cache.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces an object; it must carry `apiVersion`, `kind` and `metadata.name`
    /// (`metadata.namespace` is empty for a cluster-scoped object). Its labels and controller
    /// ownerReference are indexed as the host's informers index them.
    pub fn insert(&mut self, object: &Value) -> Result<(), String> {
        let field =
            |path: &[&str]| path.iter().try_fold(object, |v, k| v.get(k)).and_then(Value::as_str).map(str::to_string);
        let api_version = field(&["apiVersion"]).ok_or("object has no apiVersion")?;
        let kind = field(&["kind"]).ok_or("object has no kind")?;
        let name = field(&["metadata", "name"]).ok_or("object has no metadata.name")?;
        let namespace = field(&["metadata", "namespace"]).unwrap_or_default();
        let labels = match object.pointer("/metadata/labels") {
            None | Some(Value::Null) => BTreeMap::new(),
            Some(l) => serde_json::from_value(l.clone())
                .map_err(|e| format!("{kind} {namespace}/{name}: metadata.labels: {e}"))?,
        };
        let controller = object.get("metadata").and_then(controller_uid).map(str::to_string);
        let json = object.to_string();
        let entry = Entry { labels, controller, json };
        self.kinds.entry(Kind { api_version, kind }).or_default().insert((namespace, name), entry);
        Ok(())
    }

    /// A cache holding `objects` (see [`insert`](Self::insert)).
    pub fn from_objects(objects: &[Value]) -> Result<Self, String> {
        let mut c = Self::new();
        for o in objects {
            c.insert(o)?;
        }
        Ok(c)
    }

    /// Removes an object, if held.
    pub fn remove(&mut self, kind: &Kind, namespace: &str, name: &str) {
        if let Some(objects) = self.kinds.get_mut(kind) {
            objects.remove(&(namespace.to_string(), name.to_string()));
        }
    }

    /// The kinds held, for error messages.
    pub fn kinds(&self) -> impl Iterator<Item = &Kind> {
        self.kinds.keys()
    }

    /// The number of objects held, over every kind.
    pub fn len(&self) -> usize {
        self.kinds.values().map(BTreeMap::len).sum()
    }

    /// Whether no object is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Cache for MemoryCache {
    fn get(&self, kind: &Kind, namespace: &str, name: &str) -> Option<String> {
        let key = (namespace.to_string(), name.to_string());
        self.kinds.get(kind)?.get(&key).map(|e| e.json.clone())
    }

    fn list(&self, kind: &Kind, namespace: &str, selector: &Selector) -> Vec<String> {
        let Some(objects) = self.kinds.get(kind) else { return Vec::new() };
        objects
            .iter()
            .filter(|((ns, _), e)| (namespace.is_empty() || ns == namespace) && selector.matches(&e.labels))
            .map(|(_, e)| e.json.clone())
            .collect()
    }

    fn list_controlled(&self, kind: &Kind, namespace: &str, owner_uid: &str, orphans: bool) -> Vec<String> {
        let Some(objects) = self.kinds.get(kind) else { return Vec::new() };
        let group = |owner: Option<&str>| -> Vec<String> {
            objects
                .iter()
                .filter(|((ns, _), e)| ns == namespace && e.controller.as_deref() == owner)
                .map(|(_, e)| e.json.clone())
                .collect()
        };
        let mut found = group(Some(owner_uid));
        if orphans {
            found.extend(group(None));
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::Pod;
    use serde_json::json;

    #[test]
    fn get_list_and_typed_reads() {
        let mut c = MemoryCache::new();
        c.insert(
            &json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"a","namespace":"x","labels":{"app":"web"}}}),
        )
        .unwrap();
        c.insert(&json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"b","namespace":"x"}})).unwrap();
        c.insert(
            &json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"c","namespace":"y","labels":{"app":"web"}}}),
        )
        .unwrap();
        let web = Selector { match_labels: vec![("app".into(), "web".into())], ..Default::default() };
        assert_eq!(c.list(&Kind::of::<Pod>(), "x", &web).len(), 1);
        assert_eq!(c.list(&Kind::of::<Pod>(), "x", &Selector::everything()).len(), 2);
        assert_eq!(c.list(&Kind::of::<Pod>(), "", &web).len(), 2);
        let a = c.get_as::<Pod>("x", "a").unwrap().unwrap();
        assert_eq!(a.value.metadata.name.as_deref(), Some("a"));
        assert!(c.get_as::<Pod>("x", "zz").unwrap().is_none());
    }

    #[test]
    fn controlled_objects_then_orphans_of_one_namespace() {
        let pod = |ns: &str, name: &str, owner: Option<(&str, bool)>| {
            let refs: Vec<Value> = owner
                .map(|(uid, controller)| json!({"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": uid, "controller": controller}))
                .into_iter()
                .collect();
            json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":name,"namespace":ns,"ownerReferences":refs}})
        };
        let c = MemoryCache::from_objects(&[
            pod("x", "b-mine", Some(("u1", true))),
            pod("x", "a-mine", Some(("u1", true))),
            pod("x", "theirs", Some(("u2", true))),
            pod("x", "z-orphan", None),
            pod("x", "not-controller", Some(("u1", false))),
            pod("y", "elsewhere", Some(("u1", true))),
        ])
        .unwrap();
        let names = |orphans| -> Vec<String> {
            c.list_controlled_as::<Pod>("x", "u1", orphans)
                .unwrap()
                .into_iter()
                .map(|p| p.value.metadata.name.unwrap())
                .collect()
        };
        assert_eq!(names(false), ["a-mine", "b-mine"]);
        assert_eq!(names(true), ["a-mine", "b-mine", "not-controller", "z-orphan"]);
    }

    #[test]
    fn broken_objects_are_reported_by_name() {
        let mut c = MemoryCache::new();
        c.insert(&json!({"apiVersion":"v1","kind":"Pod","metadata":{"name":"bad","namespace":"x"},"spec":{"containers":"nope"}})).unwrap();
        let err = c.list_as::<Pod>("x", &Selector::everything()).unwrap_err();
        assert!(err.message.contains("Pod x/bad"), "{}", err.message);
        assert!(c.insert(&json!({"kind":"Pod"})).is_err());
    }
}
