//! Small builders of ReplicaSet and Pod JSON, shared by this crate's tests, the host's
//! WASM-vs-native parity tests and the benchmark. Not used by the controller itself.

use serde_json::{Value, json};
use wasmcm_guest::{Instant, MemoryCache, Request};

pub const NAMESPACE: &str = "default";
pub const RS_UID: &str = "rs-uid-web";
pub const NOW: &str = "2026-06-01T12:00:00Z";

pub fn now() -> Instant {
    Instant::parse_rfc3339(NOW).expect("NOW is valid")
}

pub fn request(name: &str) -> Request {
    Request::new(NAMESPACE, name, now())
}

/// Fixture overrides are JSON merge patches (`null` removes a field).
pub use wasmcm_guest::json::merge_patch as merge;

/// ReplicaSet `web` selecting `app=web`, generation 1, with `fields` merged over it.
pub fn replica_set(replicas: i32, fields: Value) -> Value {
    let mut rs = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": "web", "namespace": NAMESPACE, "uid": RS_UID, "resourceVersion": "10",
                     "generation": 1, "creationTimestamp": "2026-06-01T00:00:00Z"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web", "tier": "front"}},
                         "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
        },
        "status": {"replicas": 0},
    });
    merge(&mut rs, fields);
    rs
}

/// A running, ready pod `name` labelled `app=web, tier=front`, controlled by the ReplicaSet
/// `web` unless `fields` says otherwise.
pub fn pod(name: &str, fields: Value) -> Value {
    let mut p = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": format!("uid-{name}"), "resourceVersion": "5",
                     "creationTimestamp": "2026-06-01T10:00:00Z",
                     "labels": {"app": "web", "tier": "front"},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "web",
                                          "uid": RS_UID, "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"nodeName": "node-1", "containers": [{"name": "c", "image": "nginx"}]},
        "status": {"phase": "Running", "conditions": [
            {"type": "Ready", "status": "True", "lastTransitionTime": "2026-06-01T10:00:00Z"}]},
    });
    merge(&mut p, fields);
    p
}

pub fn cache(objects: &[Value]) -> MemoryCache {
    MemoryCache::from_objects(objects).expect("fixture objects are well formed")
}

/// A ReplicaSet of `replicas` wanting `desired`, its pods spread over 10 nodes with varied
/// readiness and age: the shape the benchmark and parity tests reconcile.
pub fn fleet(desired: i32, replicas: usize) -> Vec<Value> {
    let mut objects = vec![replica_set(desired, json!({"status": {"replicas": replicas}}))];
    for i in 0..replicas {
        let ready = if i % 7 == 3 { "False" } else { "True" };
        objects.push(pod(
            &format!("web-{i:05}"),
            json!({
                "metadata": {"creationTimestamp": format!("2026-05-{:02}T10:00:00Z", 1 + i % 28)},
                "spec": {"nodeName": format!("node-{}", i % 10)},
                "status": {"conditions": [{"type": "Ready", "status": ready,
                                           "lastTransitionTime": "2026-05-01T10:00:00Z"}],
                           "containerStatuses": [{"name": "c", "image": "nginx", "imageID": "", "ready": true,
                                                  "restartCount": i % 4}]},
            }),
        ));
    }
    objects
}
