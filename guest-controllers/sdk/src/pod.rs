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
