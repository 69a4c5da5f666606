//! The read-only cache view a controller sees, typed helpers over it, and an in-memory
//! implementation for native tests, benchmarks and the host's `simulate`.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::{Error, Kind, Resource, Selector};

/// The `cache` import of the contract. Objects are Kubernetes JSON.
pub trait Cache {
    fn get(&self, kind: &Kind, namespace: &str, name: &str) -> Option<String>;
    fn list(&self, kind: &Kind, namespace: &str, selector: &Selector) -> Vec<String>;
    /// The objects whose controller has `owner_uid`, then (with `orphans`) those with no
    /// controller, each group by name.
    fn list_controlled(&self, kind: &Kind, namespace: &str, owner_uid: &str, orphans: bool) -> Vec<String>;
}

/// The uid of an object's controlling ownerReference, from its `metadata` JSON.
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
    pub value: T,
    pub json: String,
}

impl<T> Object<T> {
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

/// Typed reads for k8s-openapi resource types and custom resources ([`Resource`]).
pub trait CacheExt: Cache {
    fn get_as<T: Resource + DeserializeOwned>(&self, namespace: &str, name: &str) -> Result<Option<Object<T>>, Error> {
        self.get(&T::kind(), namespace, name).map(parse).transpose()
    }

    fn list_as<T: Resource + DeserializeOwned>(
        &self,
        namespace: &str,
        selector: &Selector,
    ) -> Result<Vec<Object<T>>, Error> {
        self.list(&T::kind(), namespace, selector).into_iter().map(parse).collect()
    }

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

/// A cache over a fixed set of objects, keyed by kind, namespace and name.
#[derive(Default)]
pub struct MemoryCache {
    kinds: BTreeMap<Kind, BTreeMap<(String, String), Entry>>,
}

impl MemoryCache {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds or replaces an object; it must carry apiVersion, kind and metadata.name.
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

    pub fn remove(&mut self, kind: &Kind, namespace: &str, name: &str) {
        if let Some(objects) = self.kinds.get_mut(kind) {
            objects.remove(&(namespace.to_string(), name.to_string()));
        }
    }

    /// The kinds held, for error messages.
    pub fn kinds(&self) -> impl Iterator<Item = &Kind> {
        self.kinds.keys()
    }

    pub fn len(&self) -> usize {
        self.kinds.values().map(BTreeMap::len).sum()
    }

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
