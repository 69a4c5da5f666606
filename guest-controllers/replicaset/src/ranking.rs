//! Which pods to delete when a ReplicaSet has too many: upstream `ActivePodsWithRanks.Less`
//! with PodDeletionCost and LogarithmicScaleDown (both on by default), ranked by co-located
//! pods of related ReplicaSets (`getPodsRankedByRelatedPodsOnSameNode`).

use std::cmp::Ordering;
use std::collections::HashMap;

use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use wasmcm_guest::pod::{after_or_zero, max_container_restarts as max_restarts, phase_ordinal, sort_by_less};
use wasmcm_guest::{Instant, pod};

pub const DELETION_COST_ANNOTATION: &str = "controller.kubernetes.io/pod-deletion-cost";

/// The `count` pods of `pods` to delete first, given `related` pods (those of every
/// ReplicaSet with the same controller) for the co-location rank.
pub fn pods_to_delete<'a>(pods: &[&'a Pod], related: &[&Pod], count: usize, now: Instant) -> Vec<&'a Pod> {
    let mut ranked: Vec<(&Pod, usize)> = pods.iter().map(|p| (*p, 0)).collect();
    if count < pods.len() {
        let mut on_node: HashMap<&str, usize> = HashMap::new();
        for p in related.iter().filter(|p| pod::is_active(p)) {
            *on_node.entry(node_name(p)).or_default() += 1;
        }
        for (p, rank) in &mut ranked {
            *rank = on_node.get(node_name(p)).copied().unwrap_or(0);
        }
        sort_by_less(&mut ranked, |a, b| less(a, b, now));
    }
    ranked.into_iter().take(count).map(|(p, _)| p).collect()
}

fn node_name(p: &Pod) -> &str {
    p.spec.as_ref().and_then(|s| s.node_name.as_deref()).unwrap_or("")
}

fn deletion_cost(p: &Pod) -> i32 {
    p.metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(DELETION_COST_ANNOTATION))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

fn uid(p: &Pod) -> &str {
    p.metadata.uid.as_deref().unwrap_or("")
}

/// `logarithmicRankDiff`: compare ages on a log2 scale of nanoseconds.
fn log_rank(t: &Time, now: Instant) -> i64 {
    let d = now.since(t).as_nanos();
    if d > 0 { (d as f64).log2() as i64 } else { -1 }
}

/// Newer first, in logarithmic buckets of age, UID breaking ties within a bucket.
fn newer_first(a: Option<&Time>, b: Option<&Time>, ua: &str, ub: &str, now: Instant) -> bool {
    match (a, b) {
        (Some(ta), Some(tb)) => match log_rank(ta, now).cmp(&log_rank(tb, now)) {
            Ordering::Equal => ua < ub,
            o => o == Ordering::Less,
        },
        _ => after_or_zero(a, b),
    }
}

/// `ActivePodsWithRanks.Less`: true when `a` should be deleted before `b`.
fn less(a: &(&Pod, usize), b: &(&Pod, usize), now: Instant) -> bool {
    let ((pa, ra), (pb, rb)) = (a, b);
    let (na, nb) = (node_name(pa), node_name(pb));
    // 1. Unassigned < assigned.
    if na != nb && (na.is_empty() || nb.is_empty()) {
        return na.is_empty();
    }
    // 2. Pending < Unknown < Running.
    if phase_ordinal(pa) != phase_ordinal(pb) {
        return phase_ordinal(pa) < phase_ordinal(pb);
    }
    // 3. Not ready < ready.
    let (ready_a, ready_b) = (pod::is_ready(pa), pod::is_ready(pb));
    if ready_a != ready_b {
        return !ready_a;
    }
    // 4. Lower pod-deletion-cost < higher.
    if deletion_cost(pa) != deletion_cost(pb) {
        return deletion_cost(pa) < deletion_cost(pb);
    }
    // 5. More co-located related pods < fewer.
    if ra != rb {
        return ra > rb;
    }
    // 6. Ready for less time < more time.
    if ready_a && ready_b {
        let (ta, tb) = (pod::ready_since(pa), pod::ready_since(pb));
        if ta != tb {
            return newer_first(ta, tb, uid(pa), uid(pb), now);
        }
    }
    // 7. More restarts < fewer.
    let (rsa, rsb) = (max_restarts(pa), max_restarts(pb));
    if rsa.0 != rsb.0 {
        return rsa.0 > rsb.0;
    }
    if rsa.1 != rsb.1 {
        return rsa.1 > rsb.1;
    }
    // 8. Newer < older.
    let (ca, cb) = (pa.metadata.creation_timestamp.as_ref(), pb.metadata.creation_timestamp.as_ref());
    if ca != cb {
        return newer_first(ca, cb, uid(pa), uid(pb), now);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixtures::now;
    use serde_json::{Value, json};

    fn pod(name: &str, fields: Value) -> Pod {
        serde_json::from_value(crate::fixtures::pod(name, fields)).unwrap()
    }

    fn first(pods: &[Pod], related: &[Pod]) -> String {
        let refs: Vec<&Pod> = pods.iter().collect();
        let rel: Vec<&Pod> = related.iter().collect();
        let picked = pods_to_delete(&refs, &rel, 1, now());
        picked[0].metadata.name.clone().unwrap()
    }

    #[test]
    fn each_rule_decides_in_order() {
        let cases: Vec<(&str, Value, Value)> = vec![
            ("unassigned first", json!({"spec": {"nodeName": null}}), json!({})),
            ("pending before running", json!({"status": {"phase": "Pending"}}), json!({})),
            ("unknown before running", json!({"status": {"phase": "Unknown"}}), json!({})),
            (
                "not ready before ready",
                json!({"status": {"conditions": [{"type": "Ready", "status": "False"}]}}),
                json!({}),
            ),
            (
                "lower deletion cost first",
                json!({"metadata": {"annotations": {DELETION_COST_ANNOTATION: "-5"}}}),
                json!({"metadata": {"annotations": {DELETION_COST_ANNOTATION: "10"}}}),
            ),
            (
                "ready more recently first (different log2 bucket)",
                json!({"status": {"conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": "2026-06-01T11:59:00Z"}]}}),
                json!({}),
            ),
            (
                "more restarts first",
                json!({"status": {"containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": true, "restartCount": 7}]}}),
                json!({}),
            ),
            ("newer first", json!({"metadata": {"creationTimestamp": "2026-06-01T11:59:00Z"}}), json!({})),
        ];
        for (what, victim, other) in cases {
            let pods = [pod("keep", other.clone()), pod("victim", victim.clone())];
            assert_eq!(first(&pods, &[]), "victim", "{what}");
            let pods = [pod("victim", victim), pod("keep", other)];
            assert_eq!(first(&pods, &[]), "victim", "{what} (reversed input)");
        }
    }

    #[test]
    fn doubled_up_pods_go_first() {
        let pods = [pod("alone", json!({"spec": {"nodeName": "node-2"}})), pod("crowded", json!({}))];
        let related = [
            pod("crowded", json!({})),
            pod("sibling", json!({})),
            pod("alone", json!({"spec": {"nodeName": "node-2"}})),
        ];
        assert_eq!(first(&pods, &related), "crowded");
    }

    #[test]
    fn same_log_bucket_breaks_ties_by_uid() {
        // 2h vs 2h1m of age are in the same log2(ns) bucket: the UID decides, not the time.
        let pods = [pod("b", json!({"metadata": {"creationTimestamp": "2026-06-01T09:59:00Z"}})), pod("a", json!({}))];
        assert_eq!(first(&pods, &[]), "a");
    }

    #[test]
    fn cost_beats_rank_and_phase_beats_cost() {
        let cheap = json!({"metadata": {"annotations": {DELETION_COST_ANNOTATION: "-100"}}});
        let pods = [pod("pending", json!({"status": {"phase": "Pending"}})), pod("cheap", cheap)];
        assert_eq!(first(&pods, &[]), "pending");
    }

    #[test]
    fn picks_exactly_count_and_survives_inconsistent_orders() {
        let pods: Vec<Pod> = (0..40)
            .map(|i| {
                pod(&format!("p{i:02}"), json!({
                    "metadata": {"creationTimestamp": format!("2026-06-01T{:02}:00:00Z", i % 12)},
                    "status": {"containerStatuses": [{"name": "c", "image": "i", "imageID": "", "ready": true, "restartCount": i % 3}]},
                }))
            })
            .collect();
        let refs: Vec<&Pod> = pods.iter().collect();
        let picked = pods_to_delete(&refs, &refs, 25, now());
        assert_eq!(picked.len(), 25);
        // Restart count outranks age: 13 pods with 2 restarts, then 12 of the 13 with 1.
        let with = |n: i32| picked.iter().filter(|p| max_restarts(p).0 == n).count();
        assert_eq!((with(2), with(1), with(0)), (13, 12, 0));
    }
}
