//! Pod predicates and construction shared by controllers (upstream `controller_utils.go` and
//! `podutil`).
//!
//! ```
//! use k8s_openapi::api::core::v1::Pod;
//! use serde_json::json;
//! use wasmcm_guest::{Instant, pod};
//!
//! let ready: Pod = serde_json::from_value(json!({"metadata": {"name": "p"}, "status": {"phase": "Running",
//!     "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-26T10:00:00Z"}]}}))
//! .unwrap();
//! let now = Instant::parse_rfc3339("2026-11-26T10:00:30Z").unwrap();
//! assert!(pod::is_active(&ready) && pod::is_ready(&ready));
//! assert!(pod::is_available(&ready, 10, now), "ready for 30 s");
//! assert!(!pod::is_available(&ready, 60, now), "not yet for 60 s");
//! ```

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::{Pod, PodCondition};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{OwnerReference, Time};
use k8s_openapi::jiff::SignedDuration;
use serde_json::{Map, Value, json};

use crate::{Error, Instant};

/// `controller.IsPodActive`: not terminated and not being deleted.
pub fn is_active(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    phase != Some("Succeeded") && phase != Some("Failed") && pod.metadata.deletion_timestamp.is_none()
}

/// The pod's `Ready` condition, if it has one.
pub fn ready_condition(pod: &Pod) -> Option<&PodCondition> {
    pod.status.as_ref()?.conditions.iter().flatten().find(|c| c.type_ == "Ready")
}

/// `podutil.IsPodReady`.
pub fn is_ready(pod: &Pod) -> bool {
    ready_condition(pod).is_some_and(|c| c.status == "True")
}

/// When the pod last became ready, if it is ready.
pub fn ready_since(pod: &Pod) -> Option<&Time> {
    ready_condition(pod).filter(|c| c.status == "True")?.last_transition_time.as_ref()
}

/// `podutil.IsPodAvailable`: ready for at least `min_ready_seconds` (strictly before `now`).
pub fn is_available(pod: &Pod, min_ready_seconds: i32, now: Instant) -> bool {
    if !is_ready(pod) {
        return false;
    }
    if min_ready_seconds <= 0 {
        return true;
    }
    ready_since(pod).is_some_and(|t| {
        let available_at = t.0.saturating_add(SignedDuration::from_secs(i64::from(min_ready_seconds)));
        available_at.is_ok_and(|at| at < now.timestamp())
    })
}

/// `controller.IsPodTerminating`: being deleted, and not yet in a terminal phase.
pub fn is_terminating(pod: &Pod) -> bool {
    let phase = pod.status.as_ref().and_then(|s| s.phase.as_deref());
    phase != Some("Succeeded") && phase != Some("Failed") && pod.metadata.deletion_timestamp.is_some()
}

/// `podPhaseToOrdinal`: Pending (and any other) 0 < Unknown 1 < Running 2.
pub fn phase_ordinal(pod: &Pod) -> u8 {
    match pod.status.as_ref().and_then(|s| s.phase.as_deref()) {
        Some("Unknown") => 1,
        Some("Running") => 2,
        _ => 0,
    }
}

/// The names of the pod's sidecars: its restartable init containers (`restartPolicy: Always`),
/// which run beside the regular containers rather than before them.
pub fn sidecar_names(pod: &Pod) -> BTreeSet<&str> {
    pod.spec
        .iter()
        .flat_map(|s| s.init_containers.iter().flatten())
        .filter(|c| c.restart_policy.as_deref() == Some("Always"))
        .map(|c| c.name.as_str())
        .collect()
}

/// `maxContainerRestarts`: the highest restart count of the regular containers, then of the
/// restartable init (sidecar) containers.
pub fn max_container_restarts(pod: &Pod) -> (i32, i32) {
    let Some(status) = pod.status.as_ref() else { return (0, 0) };
    let regular = status.container_statuses.iter().flatten().map(|c| c.restart_count).max().unwrap_or(0);
    let sidecars = sidecar_names(pod);
    let sidecar = status
        .init_container_statuses
        .iter()
        .flatten()
        .filter(|c| sidecars.contains(&c.name.as_str()))
        .map(|c| c.restart_count)
        .max()
        .unwrap_or(0);
    (regular, sidecar)
}

/// Go's `afterOrZero`: a zero (absent) time sorts first, then the later time.
pub fn after_or_zero(t1: Option<&Time>, t2: Option<&Time>) -> bool {
    match (t1, t2) {
        (None, _) | (_, None) => t1.is_none(),
        (Some(a), Some(b)) => a.0 > b.0,
    }
}

fn node_name(pod: &Pod) -> &str {
    pod.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("")
}

/// `controller.ActivePods.Less`: whether `a` goes before `b` when picking pods to delete
/// (unassigned < assigned, Pending < Unknown < Running, not ready < ready, ready for less time <
/// more, more restarts < fewer, newer < older).
pub fn active_pods_less(a: &Pod, b: &Pod) -> bool {
    let (na, nb) = (node_name(a), node_name(b));
    if na != nb && (na.is_empty() || nb.is_empty()) {
        return na.is_empty();
    }
    if phase_ordinal(a) != phase_ordinal(b) {
        return phase_ordinal(a) < phase_ordinal(b);
    }
    let (ready_a, ready_b) = (is_ready(a), is_ready(b));
    if ready_a != ready_b {
        return !ready_a;
    }
    if ready_a && ready_b {
        let (ta, tb) = (ready_since(a), ready_since(b));
        if ta != tb {
            return after_or_zero(ta, tb);
        }
    }
    let (ra, rb) = (max_container_restarts(a), max_container_restarts(b));
    if ra.0 != rb.0 {
        return ra.0 > rb.0;
    }
    if ra.1 != rb.1 {
        return ra.1 > rb.1;
    }
    let (ca, cb) = (a.metadata.creation_timestamp.as_ref(), b.metadata.creation_timestamp.as_ref());
    if ca != cb {
        return after_or_zero(ca, cb);
    }
    false
}

/// A stable merge sort on a Go-style `less` predicate. Upstream's orderings are not always
/// transitive (tie-breaks can form cycles), and `slice::sort_by` may panic on such orders; this
/// never does, and keeps equal elements in their order.
pub fn sort_by_less<T: Copy>(v: &mut [T], less: impl Fn(&T, &T) -> bool) {
    let mut buf = v.to_vec();
    let mut width = 1;
    while width < v.len() {
        for start in (0..v.len()).step_by(2 * width) {
            let mid = (start + width).min(v.len());
            let end = (start + 2 * width).min(v.len());
            let (mut i, mut j) = (start, mid);
            for slot in &mut buf[start..end] {
                // Take from the right only when strictly less, which keeps the sort stable.
                if j < end && (i >= mid || less(&v[j], &v[i])) {
                    *slot = v[j];
                    j += 1;
                } else {
                    *slot = v[i];
                    i += 1;
                }
            }
        }
        v.copy_from_slice(&buf);
        width *= 2;
    }
}

/// `controller.GetPodFromTemplate` on the template's JSON, so fields this build does not know
/// reach the pod: labels, annotations and finalizers of the template, `generateName`
/// `<parent>-`, the controller reference, and the template's spec. A template without labels
/// is a permanent [`Error`] (the pods could never be selected).
///
/// ```
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
/// use serde_json::json;
/// use wasmcm_guest::{Intent, ownership::new_controller_ref, pod::pod_from_template};
///
/// let owner = ObjectMeta { name: Some("web".into()), uid: Some("u1".into()), ..Default::default() };
/// let template = json!({"metadata": {"labels": {"app": "web"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}});
/// let pod = pod_from_template(&template, "demo", "web", &new_controller_ref("apps/v1", "ReplicaSet", &owner)).unwrap();
/// assert_eq!(pod["metadata"]["generateName"], "web-");
/// assert_eq!(pod["metadata"]["ownerReferences"][0]["uid"], "u1");
/// let create = Intent::Create(pod.to_string());
/// # let _ = create;
/// ```
pub fn pod_from_template(
    template: &Value,
    namespace: &str,
    parent_name: &str,
    controller_ref: &OwnerReference,
) -> Result<Value, Error> {
    let tmeta = template.get("metadata").cloned().unwrap_or(Value::Null);
    let labels = tmeta.get("labels").cloned().unwrap_or(Value::Null);
    if labels.as_object().is_none_or(Map::is_empty) {
        return Err(Error::permanent("unable to create pods, no labels"));
    }
    let mut metadata = Map::new();
    metadata.insert("generateName".into(), pod_name_prefix(parent_name).into());
    metadata.insert("namespace".into(), namespace.into());
    metadata.insert("labels".into(), labels);
    for field in ["annotations", "finalizers"] {
        if let Some(v) = tmeta.get(field).filter(|v| !v.is_null()) {
            metadata.insert(field.into(), v.clone());
        }
    }
    let owner = serde_json::to_value(controller_ref).map_err(|e| Error::permanent(e.to_string()))?;
    metadata.insert("ownerReferences".into(), Value::Array(vec![owner]));
    Ok(json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": template.get("spec").cloned().unwrap_or_else(|| json!({})),
    }))
}

/// `getPodsPrefix`: `<name>-`, unless that is not a valid generateName prefix.
fn pod_name_prefix(parent: &str) -> String {
    let prefix = format!("{parent}-");
    // A DNS subdomain prefix: generateName may end in '-', the server appends 5 characters.
    let valid = prefix.len() <= 253 - 5
        && prefix.starts_with(|c: char| c.is_ascii_lowercase() || c.is_ascii_digit())
        && prefix.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '.');
    if valid { prefix } else { parent.to_string() }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(v: Value) -> Pod {
        serde_json::from_value(v).unwrap()
    }

    #[test]
    fn readiness_and_availability() {
        let ready = pod(json!({"metadata":{},"status":{"phase":"Running","conditions":[
            {"type":"Ready","status":"True","lastTransitionTime":"2026-01-01T00:00:00Z"}]}}));
        let now = Instant::parse_rfc3339("2026-01-01T00:00:10Z").unwrap();
        assert!(is_ready(&ready));
        assert!(is_available(&ready, 0, now));
        assert!(is_available(&ready, 9, now));
        assert!(!is_available(&ready, 10, now), "must be strictly before now");
        let not_ready = pod(json!({"metadata":{},"status":{"conditions":[{"type":"Ready","status":"False"}]}}));
        assert!(!is_ready(&not_ready));
        assert!(!is_available(&not_ready, 0, now));
    }

    #[test]
    fn activity() {
        assert!(is_active(&pod(json!({"metadata":{},"status":{"phase":"Pending"}}))));
        assert!(!is_active(&pod(json!({"metadata":{},"status":{"phase":"Failed"}}))));
        assert!(!is_active(&pod(json!({"metadata":{},"status":{"phase":"Succeeded"}}))));
        assert!(!is_active(&pod(json!({"metadata":{"deletionTimestamp":"2026-01-01T00:00:00Z"}}))));
    }

    #[test]
    fn active_pods_order_as_upstream() {
        let p = |name: &str, v: Value| {
            let mut v = v;
            v["metadata"]["name"] = json!(name);
            pod(v)
        };
        let ready = |at: &str| json!({"type": "Ready", "status": "True", "lastTransitionTime": at});
        let pods = [
            p(
                "running-ready-old",
                json!({"metadata": {}, "spec": {"nodeName": "n"}, "status": {"phase": "Running", "conditions": [ready("2026-01-01T00:00:00Z")]}}),
            ),
            p(
                "running-ready-new",
                json!({"metadata": {}, "spec": {"nodeName": "n"}, "status": {"phase": "Running", "conditions": [ready("2026-01-02T00:00:00Z")]}}),
            ),
            p("running", json!({"metadata": {}, "spec": {"nodeName": "n"}, "status": {"phase": "Running"}})),
            p(
                "restarted",
                json!({"metadata": {}, "spec": {"nodeName": "n"}, "status": {"phase": "Running", "containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": false, "restartCount": 3}]}}),
            ),
            p("pending", json!({"metadata": {}, "spec": {"nodeName": "n"}, "status": {"phase": "Pending"}})),
            p("unassigned", json!({"metadata": {}, "status": {"phase": "Running"}})),
            p("unknown", json!({"metadata": {}, "spec": {"nodeName": "n"}, "status": {"phase": "Unknown"}})),
        ];
        let mut refs: Vec<&Pod> = pods.iter().collect();
        sort_by_less(&mut refs, |a, b| active_pods_less(a, b));
        let names: Vec<&str> = refs.iter().map(|p| p.metadata.name.as_deref().unwrap()).collect();
        assert_eq!(
            names,
            ["unassigned", "pending", "unknown", "restarted", "running", "running-ready-new", "running-ready-old"]
        );
        assert!(is_terminating(&pod(
            json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": {"phase": "Running"}})
        )));
        assert!(!is_terminating(&pod(
            json!({"metadata": {"deletionTimestamp": "2026-01-01T00:00:00Z"}, "status": {"phase": "Failed"}})
        )));
    }

    #[test]
    fn pods_come_from_the_template() {
        let t = json!({"metadata":{"labels":{"app":"x"},"annotations":{"a":"b"}},
                       "spec":{"containers":[{"name":"c","image":"i","futureField":true}]}});
        let r = OwnerReference { uid: "u".into(), name: "rs".into(), ..Default::default() };
        let p = pod_from_template(&t, "ns", "rs", &r).unwrap();
        assert_eq!(p["metadata"]["generateName"], "rs-");
        assert_eq!(p["metadata"]["namespace"], "ns");
        assert_eq!(p["metadata"]["annotations"]["a"], "b");
        assert_eq!(p["metadata"]["ownerReferences"][0]["uid"], "u");
        assert_eq!(p["spec"]["containers"][0]["futureField"], true);
        assert!(pod_from_template(&json!({"spec":{}}), "ns", "rs", &r).is_err());
        assert_eq!(pod_name_prefix("Bad_Name"), "Bad_Name");
    }
}
