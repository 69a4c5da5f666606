//! Builders of Deployment, ReplicaSet and Pod JSON shared by this crate's tests, the rollback
//! plugin's and the benchmark. Not used by the controller itself.

use serde_json::{Value, json};
use wasmcm_guest::{Instant, MemoryCache, Request};

pub const NAMESPACE: &str = "default";
pub const DEPLOYMENT_UID: &str = "d-uid-web";
pub const NOW: &str = "2026-06-01T12:00:00Z";

pub fn now() -> Instant {
    Instant::parse_rfc3339(NOW).expect("NOW is valid")
}

pub fn request(name: &str) -> Request {
    Request::new(NAMESPACE, name, now())
}

/// Fixture overrides are JSON merge patches (`null` removes a field).
pub use wasmcm_guest::json::merge_patch as merge;

fn template(image: &str) -> Value {
    json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": image}]}})
}

/// Deployment `web` (app=web, image nginx:1, RollingUpdate 25%/25%, deadline 600 s, history 10),
/// generation 1 observed, with `fields` merged over it.
pub fn deployment(replicas: i32, fields: Value) -> Value {
    let mut d = json!({
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NAMESPACE, "uid": DEPLOYMENT_UID, "resourceVersion": "20",
                     "generation": 1, "creationTimestamp": "2026-05-01T00:00:00Z"},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": "web"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "template": template("nginx:1"),
            "revisionHistoryLimit": 10,
            "progressDeadlineSeconds": 600,
        },
        "status": {"observedGeneration": 1},
    });
    merge(&mut d, fields);
    d
}

/// ReplicaSet `name` of the deployment running `image` at `revision`, wanting `replicas`, all of
/// them created, ready and available; `name` doubles as its pod-template-hash.
pub fn replica_set(name: &str, image: &str, revision: i64, replicas: i32, fields: Value) -> Value {
    let mut t = template(image);
    t["metadata"]["labels"]["pod-template-hash"] = name.into();
    let mut rs = json!({
        "apiVersion": "apps/v1", "kind": "ReplicaSet",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": format!("uid-{name}"), "resourceVersion": "10",
                     "generation": 1, "creationTimestamp": format!("2026-05-{:02}T00:00:00Z", 1 + revision.clamp(0, 27)),
                     "labels": {"app": "web", "pod-template-hash": name},
                     "annotations": {"deployment.kubernetes.io/revision": revision.to_string()},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web",
                                          "uid": DEPLOYMENT_UID, "controller": true, "blockOwnerDeletion": true}]},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "web", "pod-template-hash": name}},
                 "template": t},
        "status": {"replicas": replicas, "readyReplicas": replicas, "availableReplicas": replicas,
                   "fullyLabeledReplicas": replicas, "observedGeneration": 1},
    });
    merge(&mut rs, fields);
    rs
}

/// A running, ready pod of ReplicaSet `rs`.
pub fn pod(name: &str, rs: &str, fields: Value) -> Value {
    let mut p = json!({
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "uid": format!("uid-{name}"), "resourceVersion": "5",
                     "labels": {"app": "web", "pod-template-hash": rs},
                     "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs,
                                          "uid": format!("uid-{rs}"), "controller": true}]},
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

/// A deployment of `pods` replicas in the middle of its `rss`-th rollout: revisions 1..rss, the
/// newest (image nginx:<rss>, the deployment's) holding half the pods, the rest spread over
/// the older ones, one pod in seven of each not ready. The shape the benchmark reconciles.
pub fn rollout(rss: usize, pods: usize) -> Vec<Value> {
    let newest = format!("nginx:{rss}");
    let mut objects = vec![deployment(
        pods as i32,
        json!({"spec": {"template": template(&newest)}, "metadata": {"annotations": {
            "deployment.kubernetes.io/revision": rss.to_string()}}}),
    )];
    let new_pods = pods / 2;
    let per_old = (pods - new_pods) / (rss.max(2) - 1);
    let mut placed = 0;
    for r in 1..=rss {
        let count = if r == rss { pods - placed } else { per_old.min(pods - placed) };
        let name = format!("web-{r}");
        let available = count - count / 7;
        objects.push(replica_set(
            &name,
            &format!("nginx:{r}"),
            r as i64,
            count as i32,
            json!({"status": {"readyReplicas": available, "availableReplicas": available}}),
        ));
        for i in 0..count {
            let ready = if i % 7 == 6 { "False" } else { "True" };
            objects.push(pod(
                &format!("{name}-{i:03}"),
                &name,
                json!({"status": {"conditions": [{"type": "Ready", "status": ready,
                                                  "lastTransitionTime": "2026-06-01T10:00:00Z"}]}}),
            ));
        }
        placed += count;
    }
    objects
}
