//! A cluster snapshot held in memory, written to as the API server would: generated names,
//! uids, resourceVersions, generations, optimistic concurrency, status subresources, graceful
//! pod deletion. It backs `wasmcm simulate`; it must not hold controller logic.
//!
//! Everything it invents (names, uids) is derived from a counter, so a run is reproducible.

use serde_json::{Map, Value, json};
use wasmcm_guest::{Instant, Kind, MemoryCache, ObjectRef};

use crate::status::{ApiError, Cause, group_and_plural};
use crate::writer::Api;
use std::future::{Future, ready};
use std::sync::Mutex;
use wasmcm_guest::Event;

pub struct Snapshot {
    items: Vec<Value>,
    resource_version: u64,
    seq: u64,
    now: Instant,
}

/// Reads a Kubernetes `List` (JSON or YAML) or a multi-document YAML stream of objects.
pub fn parse_objects(text: &str) -> Result<Vec<Value>, String> {
    let docs: Vec<Value> = if text.trim_start().starts_with(['{', '[']) {
        vec![serde_json::from_str(text).map_err(|e| format!("invalid JSON: {e}"))?]
    } else {
        serde_saphyr::from_multiple(text).map_err(|e| format!("invalid YAML: {e}"))?
    };
    let mut items = Vec::new();
    for doc in docs {
        match doc {
            Value::Null => {}
            Value::Array(list) => items.extend(list),
            Value::Object(ref o) if o.get("kind").and_then(Value::as_str).is_some_and(|k| k.ends_with("List")) => {
                match o.get("items") {
                    Some(Value::Array(list)) => items.extend(list.iter().cloned()),
                    Some(Value::Null) | None => {}
                    Some(_) => return Err("a List's items must be a list".into()),
                }
            }
            other => items.push(other),
        }
    }
    for (i, item) in items.iter().enumerate() {
        let kind = item.get("kind").and_then(Value::as_str);
        let what = format!("item {} ({})", i + 1, kind.unwrap_or("no kind"));
        if !item.is_object() {
            return Err(format!("{what}: not an object"));
        }
        if item.get("apiVersion").and_then(Value::as_str).is_none() {
            return Err(format!("{what}: apiVersion is missing"));
        }
        if kind.is_none() {
            return Err(format!("{what}: kind is missing"));
        }
        if item.pointer("/metadata/name").and_then(Value::as_str).is_none_or(str::is_empty) {
            return Err(format!("{what}: metadata.name is missing"));
        }
    }
    Ok(items)
}

fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

pub fn kind_of(v: &Value) -> Kind {
    Kind::new(str_at(v, "/apiVersion"), str_at(v, "/kind"))
}

fn same_object(v: &Value, kind: &Kind, namespace: &str, name: &str) -> bool {
    str_at(v, "/metadata/name") == name
        && str_at(v, "/metadata/namespace") == namespace
        && str_at(v, "/kind") == kind.kind
        && str_at(v, "/apiVersion") == kind.api_version
}

/// Kinds whose status is written only through `/status` (and whose spec changes bump
/// `metadata.generation`): the built-ins that have the subresource, and custom resources.
fn has_status_subresource(kind: &Kind) -> bool {
    const BUILTIN: &[&str] = &[
        "Pod",
        "ReplicaSet",
        "Deployment",
        "StatefulSet",
        "DaemonSet",
        "Job",
        "CronJob",
        "Node",
        "Namespace",
        "Service",
        "PersistentVolume",
        "PersistentVolumeClaim",
        "ReplicationController",
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "CustomResourceDefinition",
    ];
    let group = kind.api_version.rsplit_once('/').map(|(g, _)| g).unwrap_or("");
    BUILTIN.contains(&kind.kind.as_str()) || (group.contains('.') && !group.ends_with("k8s.io"))
}

fn rfc3339(seconds: i64) -> String {
    Instant { seconds, nanoseconds: 0 }.timestamp().to_string()
}

impl Snapshot {
    pub fn new(items: Vec<Value>, now: Instant) -> Self {
        let resource_version =
            items.iter().filter_map(|i| str_at(i, "/metadata/resourceVersion").parse::<u64>().ok()).max().unwrap_or(0);
        Snapshot { items, resource_version, seq: 0, now }
    }

    pub fn cache(&self) -> Result<MemoryCache, String> {
        MemoryCache::from_objects(&self.items)
    }

    pub fn get(&self, kind: &Kind, namespace: &str, name: &str) -> Option<&Value> {
        self.items.iter().find(|v| same_object(v, kind, namespace, name))
    }

    /// What the snapshot holds, for messages: "apps/v1 ReplicaSet ×1, v1 Pod ×3".
    pub fn summary(&self) -> String {
        let mut counts: Vec<(Kind, usize)> = Vec::new();
        for item in &self.items {
            let k = kind_of(item);
            match counts.iter_mut().find(|(c, _)| *c == k) {
                Some((_, n)) => *n += 1,
                None => counts.push((k, 1)),
            }
        }
        if counts.is_empty() {
            return "no objects".into();
        }
        counts.iter().map(|(k, n)| format!("{} {} ×{n}", k.api_version, k.kind)).collect::<Vec<_>>().join(", ")
    }

    pub fn to_list(&self) -> Value {
        json!({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": ""}, "items": self.items})
    }

    fn next_resource_version(&mut self) -> String {
        self.resource_version += 1;
        self.resource_version.to_string()
    }

    /// A deterministic stand-in for randomness: splitmix64 over a counter.
    fn next_random(&mut self) -> u64 {
        self.seq += 1;
        let mut z = self.seq.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn position(&self, kind: &Kind, namespace: &str, name: &str) -> Result<usize, ApiError> {
        self.items.iter().position(|v| same_object(v, kind, namespace, name)).ok_or_else(|| {
            let (group, plural) = group_and_plural(kind);
            ApiError::not_found(&group, &plural, name)
        })
    }

    /// The stored object a write targets, with the write's resourceVersion checked.
    fn current_for_write(&self, object: &Value) -> Result<usize, ApiError> {
        let kind = kind_of(object);
        let (ns, name) = (str_at(object, "/metadata/namespace"), str_at(object, "/metadata/name"));
        let i = self.position(&kind, ns, name)?;
        let wanted = str_at(object, "/metadata/resourceVersion");
        let have = str_at(&self.items[i], "/metadata/resourceVersion");
        if !wanted.is_empty() && wanted != have {
            let (group, plural) = group_and_plural(&kind);
            return Err(ApiError::stale(&group, &plural, name));
        }
        Ok(i)
    }
}

fn meta_mut(v: &mut Value) -> &mut Map<String, Value> {
    if !v.get("metadata").is_some_and(Value::is_object) {
        v["metadata"] = json!({});
    }
    v["metadata"].as_object_mut().expect("metadata was just made an object")
}

/// Everything but metadata and status: what a spec change is measured on.
fn spec_part(v: &Value) -> Map<String, Value> {
    let mut m = v.as_object().cloned().unwrap_or_default();
    m.remove("metadata");
    m.remove("status");
    m
}

/// API-server semantics on the snapshot; [`Api`] is implemented on `Mutex<Snapshot>`.
impl Snapshot {
    pub fn create(&mut self, mut object: Value) -> Result<Value, ApiError> {
        let kind = kind_of(&object);
        let ns = str_at(&object, "/metadata/namespace").to_string();
        let mut name = str_at(&object, "/metadata/name").to_string();
        if name.is_empty() {
            let prefix = str_at(&object, "/metadata/generateName").to_string();
            if prefix.is_empty() {
                let (group, _) = group_and_plural(&kind);
                let cause = Cause {
                    reason: "FieldValueRequired".into(),
                    field: "metadata.name".into(),
                    message: "Required value: name or generateName is required".into(),
                };
                return Err(ApiError::invalid(&group, &kind.kind, "", vec![cause]));
            }
            // The API server's alphabet for generated suffixes: no vowels, no look-alikes.
            const ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
            let mut r = self.next_random();
            let suffix: String = (0..5)
                .map(|_| {
                    let c = ALPHABET[(r % ALPHABET.len() as u64) as usize] as char;
                    r /= ALPHABET.len() as u64;
                    c
                })
                .collect();
            name = format!("{prefix}{suffix}");
        }
        if self.get(&kind, &ns, &name).is_some() {
            let (group, plural) = group_and_plural(&kind);
            return Err(ApiError::already_exists(&group, &plural, &name));
        }
        let r = self.next_random();
        let uid = format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            r >> 32,
            (r >> 16) & 0xffff,
            r & 0xfff,
            self.seq & 0xfff,
            r & 0xffff_ffff_ffff
        );
        let rv = self.next_resource_version();
        let now = rfc3339(self.now.seconds);
        let status_kind = has_status_subresource(&kind);
        let meta = meta_mut(&mut object);
        meta.insert("name".into(), name.into());
        meta.insert("uid".into(), uid.into());
        meta.insert("resourceVersion".into(), rv.into());
        meta.insert("creationTimestamp".into(), now.into());
        meta.remove("deletionTimestamp");
        if status_kind {
            meta.insert("generation".into(), 1.into());
            // Status is not settable on create; a new pod starts Pending.
            object["status"] = if kind.kind == "Pod" { json!({"phase": "Pending"}) } else { json!({}) };
        }
        self.items.push(object.clone());
        Ok(object)
    }

    pub fn update(&mut self, mut object: Value) -> Result<Value, ApiError> {
        let i = self.current_for_write(&object)?;
        let kind = kind_of(&object);
        let rv = self.next_resource_version();
        let current = &self.items[i];
        let spec_changed = spec_part(current) != spec_part(&object);
        let status_kind = has_status_subresource(&kind);
        if status_kind {
            match current.get("status") {
                Some(s) => object["status"] = s.clone(),
                None => {
                    if let Some(o) = object.as_object_mut() {
                        o.remove("status");
                    }
                }
            }
        }
        let current_meta = current.get("metadata").cloned().unwrap_or_default();
        let meta = meta_mut(&mut object);
        for owned in ["uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "generation"] {
            match current_meta.get(owned) {
                Some(v) => meta.insert(owned.into(), v.clone()),
                None => meta.remove(owned),
            };
        }
        if status_kind && spec_changed {
            let generation = current_meta.get("generation").and_then(Value::as_i64).unwrap_or(0) + 1;
            meta.insert("generation".into(), generation.into());
        }
        meta.insert("resourceVersion".into(), rv.into());
        self.items[i] = object.clone();
        Ok(object)
    }

    pub fn update_status(&mut self, object: Value) -> Result<Value, ApiError> {
        let i = self.current_for_write(&object)?;
        let rv = self.next_resource_version();
        let mut updated = self.items[i].clone();
        updated["status"] = object.get("status").cloned().unwrap_or_else(|| json!({}));
        let kind = |v: &Value, f: &str| v.get(f).and_then(Value::as_str).unwrap_or("").to_string();
        if crate::cluster::api::status_takes_annotations(&kind(&updated, "apiVersion"), &kind(&updated, "kind")) {
            match object.pointer("/metadata/annotations") {
                Some(a) if a.as_object().is_some_and(|m| !m.is_empty()) => {
                    meta_mut(&mut updated).insert("annotations".into(), a.clone());
                }
                _ => {
                    meta_mut(&mut updated).remove("annotations");
                }
            }
        }
        meta_mut(&mut updated).insert("resourceVersion".into(), rv.into());
        self.items[i] = updated.clone();
        Ok(updated)
    }

    pub fn delete(&mut self, target: &ObjectRef, uid: Option<&str>) -> Result<(), ApiError> {
        let i = self.position(&target.kind, &target.namespace, &target.name)?;
        let current = &self.items[i];
        if let Some(uid) = uid {
            let have = str_at(current, "/metadata/uid");
            if have != uid {
                let (group, plural) = group_and_plural(&target.kind);
                let why = format!("Precondition failed: UID in precondition: {uid}, UID in object meta: {have}");
                return Err(ApiError::conflict(&group, &plural, &target.name, &why));
            }
        }
        if current.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null()) {
            return Ok(());
        }
        let has_finalizers =
            current.pointer("/metadata/finalizers").and_then(Value::as_array).is_some_and(|f| !f.is_empty());
        // A pod bound to a node is deleted gracefully: the kubelet removes it after its grace
        // period. Unbound pods, like other objects without finalizers, go at once.
        let grace = if target.kind.kind == "Pod" && !str_at(current, "/spec/nodeName").is_empty() {
            current.pointer("/spec/terminationGracePeriodSeconds").and_then(Value::as_i64).unwrap_or(30)
        } else {
            0
        };
        if grace > 0 || has_finalizers {
            let rv = self.next_resource_version();
            let deletion = rfc3339(self.now.seconds + grace);
            let meta = meta_mut(&mut self.items[i]);
            meta.insert("deletionTimestamp".into(), deletion.into());
            meta.insert("deletionGracePeriodSeconds".into(), grace.into());
            meta.insert("resourceVersion".into(), rv.into());
        } else {
            self.items.remove(i);
        }
        Ok(())
    }
}

fn locked(m: &Mutex<Snapshot>) -> std::sync::MutexGuard<'_, Snapshot> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Api for Mutex<Snapshot> {
    fn create(&self, object: Value) -> impl Future<Output = Result<Value, ApiError>> + Send {
        ready(locked(self).create(object))
    }

    fn update(&self, object: Value) -> impl Future<Output = Result<Value, ApiError>> + Send {
        ready(locked(self).update(object))
    }

    fn update_status(&self, object: Value) -> impl Future<Output = Result<Value, ApiError>> + Send {
        ready(locked(self).update_status(object))
    }

    fn delete(&self, target: &ObjectRef, uid: Option<&str>) -> impl Future<Output = Result<(), ApiError>> + Send {
        ready(locked(self).delete(target, uid))
    }

    /// A snapshot keeps no events; the report lists them.
    fn record_event(&self, _event: &Event, _uid: Option<&str>) -> impl Future<Output = Result<(), ApiError>> + Send {
        ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snap() -> Snapshot {
        let items = parse_objects(
            "apiVersion: apps/v1\nkind: ReplicaSet\nmetadata: {name: rs, namespace: d, resourceVersion: '7', generation: 2}\nspec: {replicas: 1}\nstatus: {replicas: 0}\n\
             ---\napiVersion: v1\nkind: Pod\nmetadata: {name: bound, namespace: d, uid: u1}\nspec: {nodeName: n1}\n\
             ---\napiVersion: v1\nkind: Pod\nmetadata: {name: loose, namespace: d, uid: u2}\nspec: {}\n",
        )
        .unwrap();
        Snapshot::new(items, Instant::parse_rfc3339("2026-01-01T00:00:00Z").unwrap())
    }

    #[test]
    fn lists_and_documents_parse_alike() {
        let list =
            r#"{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a"}}]}"#;
        assert_eq!(parse_objects(list).unwrap().len(), 1);
        let yaml_list = "apiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: a}\n";
        assert_eq!(parse_objects(yaml_list).unwrap(), parse_objects(list).unwrap());
        assert!(parse_objects("kind: Pod\nmetadata: {name: a}").unwrap_err().contains("apiVersion is missing"));
        assert!(parse_objects("{not json").unwrap_err().starts_with("invalid JSON"));
        assert!(parse_objects("a: [b").unwrap_err().starts_with("invalid YAML"));
    }

    #[test]
    fn create_generates_name_uid_and_resets_status() {
        let mut s = snap();
        let pod = json!({"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"rs-","namespace":"d"},"status":{"phase":"Running"}});
        let a = s.create(pod.clone()).unwrap();
        let b = s.create(pod).unwrap();
        let name = str_at(&a, "/metadata/name");
        assert!(name.starts_with("rs-") && name.len() == 8, "{name}");
        assert_ne!(name, str_at(&b, "/metadata/name"));
        assert_ne!(str_at(&a, "/metadata/uid"), str_at(&b, "/metadata/uid"));
        assert_eq!(str_at(&a, "/metadata/resourceVersion"), "8");
        assert_eq!(a["status"], json!({"phase": "Pending"}));
        // Reproducible: a fresh snapshot generates the same name.
        let again = snap()
            .create(json!({"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"rs-","namespace":"d"}}))
            .unwrap();
        assert_eq!(str_at(&again, "/metadata/name"), name);
    }

    #[test]
    fn updates_honour_resource_version_status_and_generation() {
        let mut s = snap();
        let mut rs = s.get(&Kind::new("apps/v1", "ReplicaSet"), "d", "rs").unwrap().clone();
        rs["status"] = json!({"replicas": 5});
        let u = s.update(rs.clone()).unwrap();
        assert_eq!(u["status"], json!({"replicas": 0}), "update must not touch status");
        assert_eq!(u["metadata"]["generation"], 2, "no spec change, no generation bump");
        assert_eq!(s.update(rs.clone()).unwrap_err().code, 409, "stale resourceVersion");
        let mut fresh = u.clone();
        fresh["spec"]["replicas"] = json!(3);
        let u2 = s.update(fresh.clone()).unwrap();
        assert_eq!(u2["metadata"]["generation"], 3);
        let mut st = u2.clone();
        st["status"] = json!({"replicas": 3});
        st["spec"]["replicas"] = json!(9);
        let u3 = s.update_status(st).unwrap();
        assert_eq!(u3["status"]["replicas"], 3);
        assert_eq!(u3["spec"]["replicas"], 3, "status write must not touch spec");
    }

    #[test]
    fn deletes_are_graceful_for_bound_pods_and_check_uid() {
        let mut s = snap();
        let r = |name: &str| ObjectRef { kind: Kind::new("v1", "Pod"), namespace: "d".into(), name: name.into() };
        assert_eq!(s.delete(&r("bound"), Some("wrong")).unwrap_err().code, 409);
        s.delete(&r("bound"), Some("u1")).unwrap();
        let bound = s.get(&Kind::new("v1", "Pod"), "d", "bound").unwrap();
        assert_eq!(bound["metadata"]["deletionTimestamp"], "2026-01-01T00:00:30Z");
        s.delete(&r("loose"), Some("u2")).unwrap();
        assert!(s.get(&Kind::new("v1", "Pod"), "d", "loose").is_none());
        assert_eq!(s.delete(&r("loose"), None).unwrap_err().code, 404);
    }
}
