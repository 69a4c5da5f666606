//! ReplicaSet status, as upstream `replica_set_utils.go` (`calculateStatus`).
//!
//! Computed on the status JSON the API served, so fields this build does not set survive.

use k8s_openapi::api::apps::v1::ReplicaSet;
use k8s_openapi::api::core::v1::Pod;
use serde_json::{Map, Value, json};
use wasmcm_guest::Selector;
use wasmcm_guest::{Instant, pod};

pub const REPLICA_FAILURE: &str = "ReplicaFailure";

/// Why the last manageReplicas step failed, when it did.
pub struct ManageFailure<'a> {
    pub reason: &'a str,
    pub message: &'a str,
}

pub fn calculate(
    rs: &ReplicaSet,
    current: &Value,
    pods: &[&Pod],
    failure: Option<ManageFailure>,
    now: Instant,
) -> Value {
    let template_labels = rs.spec.template.as_ref().and_then(|t| t.metadata.as_ref()?.labels.clone());
    let template = Selector { match_labels: template_labels.into_iter().flatten().collect(), ..Default::default() };
    let min_ready = rs.spec.min_ready_seconds.unwrap_or(0);
    let fully_labeled = pods.iter().filter(|p| template.matches_opt(p.metadata.labels.as_ref())).count();
    let ready: Vec<_> = pods.iter().filter(|p| pod::is_ready(p)).collect();
    let available = ready.iter().filter(|p| pod::is_available(p, min_ready, now)).count();

    let mut status = current.as_object().cloned().unwrap_or_default();
    let mut conditions: Vec<Value> = status.get("conditions").and_then(Value::as_array).cloned().unwrap_or_default();
    let has_failure = conditions.iter().any(|c| c["type"] == REPLICA_FAILURE);
    match failure {
        Some(f) if !has_failure => conditions.push(json!({
            "type": REPLICA_FAILURE,
            "status": "True",
            "lastTransitionTime": Instant { seconds: now.seconds, nanoseconds: 0 }.timestamp().to_string(),
            "reason": f.reason,
            "message": f.message,
        })),
        None if has_failure => conditions.retain(|c| c["type"] != REPLICA_FAILURE),
        _ => {}
    }
    if conditions.is_empty() {
        status.remove("conditions");
    } else {
        status.insert("conditions".into(), Value::Array(conditions));
    }
    status.insert("replicas".into(), pods.len().into());
    set_count(&mut status, "fullyLabeledReplicas", fully_labeled);
    set_count(&mut status, "readyReplicas", ready.len());
    set_count(&mut status, "availableReplicas", available);
    Value::Object(status)
}

/// Go's `omitempty` on int32 status fields: zero is absent.
fn set_count(status: &mut Map<String, Value>, field: &str, n: usize) {
    if n == 0 {
        status.remove(field);
    } else {
        status.insert(field.into(), n.into());
    }
}

/// `updateReplicaSetStatus`'s skip rule: nothing to write when the counts and conditions are
/// unchanged and the generation was already observed.
pub fn needs_update(rs: &ReplicaSet, current: &Value, new: &Value) -> bool {
    let generation = rs.metadata.generation.unwrap_or(0);
    let observed = rs.status.as_ref().and_then(|s| s.observed_generation).unwrap_or(0);
    let field = |v: &Value, f: &str| v.get(f).cloned().unwrap_or(Value::Null);
    let counts_equal =
        ["replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "conditions"].iter().all(|f| {
            let (a, b) = (field(current, f), field(new, f));
            a == b || (is_zero(&a) && is_zero(&b))
        });
    !(counts_equal && generation == observed)
}

fn is_zero(v: &Value) -> bool {
    v.is_null() || v.as_i64() == Some(0) || v.as_array().is_some_and(Vec::is_empty)
}
