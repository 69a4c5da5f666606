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

const REVISION: &str = "deployment.kubernetes.io/revision";
const DESIRED: &str = "deployment.kubernetes.io/desired-replicas";
const MAX: &str = "deployment.kubernetes.io/max-replicas";

/// A table case: the objects of one sync of deployment `web`, and what it must do.
pub struct Case<T> {
    pub what: &'static str,
    pub objects: Vec<Value>,
    pub want: T,
}

/// An old, scaled-down ReplicaSet: `revision` `None` has no revision annotation; created on
/// `created` (a day of May 2026); `fields` merged over it.
fn old(name: &str, revision: Option<&str>, created: u32, fields: Value) -> Value {
    let revision = revision.map_or(Value::Null, Value::from);
    let mut rs = replica_set(name, &format!("nginx:{name}"), 0, 0, json!({"status": {"replicas": 0}}));
    merge(
        &mut rs,
        json!({"metadata": {"annotations": {REVISION: revision},
                            "creationTimestamp": format!("2026-05-{created:02}T00:00:00Z")}}),
    );
    merge(&mut rs, fields);
    rs
}

/// History cleanup (upstream `cleanupDeployment`): a completed deployment of 2 replicas at
/// revision 9 (`web-9`) with `revisionHistoryLimit` `limit` and the old ReplicaSets `olds`;
/// `want` is the ReplicaSets deleted, in order.
pub fn cleanup_cases() -> Vec<Case<Vec<&'static str>>> {
    let case = |what, limit: i32, olds: Vec<Value>, want: Vec<&'static str>| {
        let d = deployment(
            2,
            json!({"spec": {"revisionHistoryLimit": limit, "template": template("nginx:9")},
                   "status": {"replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}}),
        );
        let mut objects = vec![d, replica_set("web-9", "nginx:9", 9, 2, json!({}))];
        objects.extend(olds);
        Case { what, objects, want }
    };
    let empty = |name, revision, created| old(name, Some(revision), created, json!({}));
    vec![
        case(
            "the oldest revisions beyond the limit",
            2,
            vec![
                empty("r1", "1", 2),
                empty("r2", "2", 3),
                empty("r3", "3", 4),
                empty("r4", "4", 5),
                empty("r5", "5", 6),
            ],
            vec!["r1", "r2", "r3"],
        ),
        case(
            "a candidate with pods is skipped and no later one is deleted in its place",
            1,
            vec![old("r1", Some("1"), 2, json!({"status": {"replicas": 1}})), empty("r2", "2", 3), empty("r3", "3", 4)],
            vec!["r2"],
        ),
        {
            // Paused, or the rollout would scale r1 down before any cleanup.
            let mut c = case(
                "a candidate still wanting pods is skipped (paused)",
                1,
                vec![
                    old("r1", Some("1"), 2, json!({"spec": {"replicas": 1}})),
                    empty("r2", "2", 3),
                    empty("r3", "3", 4),
                ],
                vec!["r2"],
            );
            merge(&mut c.objects[0], json!({"spec": {"paused": true}}));
            c
        },
        case(
            "a candidate whose scale-down is not observed yet is skipped",
            1,
            vec![
                old("r1", Some("1"), 2, json!({"metadata": {"generation": 3}, "status": {"observedGeneration": 2}})),
                empty("r2", "2", 3),
                empty("r3", "3", 4),
            ],
            vec!["r2"],
        ),
        case(
            "no revision annotation is revision 0, the oldest, however new",
            2,
            vec![old("unannotated", None, 20, json!({})), empty("r1", "1", 2), empty("r2", "2", 3)],
            vec!["unannotated"],
        ),
        case(
            "an unreadable revision counts as 0 too",
            2,
            vec![old("spoiled", Some("two"), 20, json!({})), empty("r1", "1", 2), empty("r2", "2", 3)],
            vec!["spoiled"],
        ),
        case(
            "equal revisions by creation time, then name",
            1,
            vec![
                old("b-none", None, 10, json!({})),
                old("a-none", None, 10, json!({})),
                old("c-none", None, 5, json!({})),
            ],
            vec!["c-none", "a-none"],
        ),
        case(
            "a ReplicaSet being deleted is neither a candidate nor counted",
            1,
            vec![
                old(
                    "r1",
                    Some("1"),
                    2,
                    json!({"metadata": {"deletionTimestamp": "2026-06-01T11:00:00Z", "finalizers": ["foregroundDeletion"]}}),
                ),
                empty("r2", "2", 3),
                empty("r3", "3", 4),
            ],
            vec!["r2"],
        ),
        case(
            "a limit of 0 keeps no empty old ReplicaSet",
            0,
            vec![empty("r1", "1", 2), old("r2", Some("2"), 3, json!({"status": {"replicas": 1}}))],
            vec!["r1"],
        ),
        case("within the limit nothing goes", 2, vec![empty("r1", "1", 2), empty("r2", "2", 3)], vec![]),
    ]
}

/// Proportional scaling with damaged max-replicas annotations (upstream `getReplicaSetFraction`
/// falls back to `status.replicas` when the annotation is missing, unreadable or 0, and scales
/// nothing against 0): deployment `web` (maxSurge 0, maxUnavailable 0, so 1) scaled from
/// `status.replicas` to `replicas`, with the new ReplicaSet `web-new` and an old one `web-old`,
/// both last sized for 10 (or 5); `want` is every ReplicaSet's size after the sync.
pub fn damaged_annotation_cases() -> Vec<Case<Vec<(&'static str, i32)>>> {
    let case = |what, replicas: i32, status: Option<i32>, new: (i32, i32, Value), old: (i32, i32, Value), want| {
        let d = deployment(
            replicas,
            json!({"spec": {"strategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}},
                            "template": template("nginx:new")},
                   "status": {"replicas": status}}),
        );
        let sized = |name: &str, image: &str, revision, (size, before, max): (i32, i32, Value)| {
            replica_set(
                name,
                image,
                revision,
                size,
                json!({"metadata": {"annotations": {DESIRED: before.to_string(), MAX: max}}}),
            )
        };
        let objects = vec![d, sized("web-new", "nginx:new", 10, new), sized("web-old", "nginx:old", 1, old)];
        Case { what, objects, want }
    };
    vec![
        case(
            "intact: 5 -> 10 as upstream's TestScale",
            10,
            Some(5),
            (2, 5, json!("5")),
            (3, 5, json!("5")),
            vec![("web-new", 4), ("web-old", 6)],
        ),
        case(
            "removed: status.replicas stands in",
            10,
            Some(5),
            (2, 5, json!("5")),
            (3, 5, Value::Null),
            vec![("web-new", 4), ("web-old", 6)],
        ),
        case(
            "unreadable: status.replicas stands in",
            10,
            Some(5),
            (2, 5, json!("5")),
            (3, 5, json!("many")),
            vec![("web-new", 4), ("web-old", 6)],
        ),
        case(
            "negative: status.replicas stands in",
            10,
            Some(5),
            (2, 5, json!("5")),
            (3, 5, json!("-5")),
            vec![("web-new", 4), ("web-old", 6)],
        ),
        case(
            "zero: status.replicas stands in",
            10,
            Some(5),
            (2, 5, json!("5")),
            (3, 5, json!("0")),
            vec![("web-new", 4), ("web-old", 6)],
        ),
        case(
            "removed and no status.replicas: no share, the leftover goes to the largest",
            10,
            None,
            (3, 5, json!("5")),
            (2, 5, Value::Null),
            vec![("web-new", 8), ("web-old", 2)],
        ),
        case(
            "removed and no status.replicas, scaling down: bounded",
            4,
            None,
            (4, 10, json!("10")),
            (6, 10, Value::Null),
            vec![("web-new", 2), ("web-old", 2)],
        ),
        case(
            "zero with status.replicas, scaling down",
            4,
            Some(10),
            (4, 10, json!("10")),
            (6, 10, json!("0")),
            vec![("web-new", 2), ("web-old", 2)],
        ),
        case(
            "damaged to 1, scaling down: no ReplicaSet grows (upstream's goes to 20)",
            5,
            Some(10),
            (6, 10, json!("10")),
            (4, 10, json!("1")),
            vec![("web-new", 1), ("web-old", 4)],
        ),
    ]
}
