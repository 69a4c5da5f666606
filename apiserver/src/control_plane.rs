//! What kube-apiserver tells about itself as API objects: the ComponentStatuses of `kubectl
//! get cs` (read-only, made up on each request, as upstream's REST probes them), and the
//! APIServices its aggregator's autoregister controller stores at start, one per served
//! built-in group-version, each served locally and so always Available.

use serde_json::{Value, json};

use super::resources::Registry;

pub(crate) const COMPONENT_STATUS_ID: &str = "/componentstatuses";

/// The warning upstream's ComponentStatus REST answers every request with.
pub(crate) const COMPONENT_STATUS_WARNING: &str = "299 - \"v1 ComponentStatus is deprecated in v1.19+\"";

/// The components upstream probes, all healthy: there is no separate scheduler, controller
/// manager or etcd here, and what stands in for them runs in this process.
pub(crate) fn component_statuses() -> Vec<Value> {
    ["scheduler", "controller-manager", "etcd-0"]
        .iter()
        .map(|name| {
            json!({
                "kind": "ComponentStatus", "apiVersion": "v1",
                "metadata": {"name": name, "creationTimestamp": null},
                "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}],
            })
        })
        .collect()
}

/// `apiVersionPriorities` of kube-apiserver's aggregator: the group's place in discovery and
/// the version's within it. Groups it does not list get no APIService, as upstream.
fn priority(group: &str, version: &str) -> Option<(i64, i64)> {
    let group_priority = match group {
        "" => return (version == "v1").then_some((18000, 1)),
        "apiregistration.k8s.io" => 18000,
        "apps" => 17800,
        "events.k8s.io" => 17750,
        "authentication.k8s.io" => 17700,
        "authorization.k8s.io" => 17600,
        "autoscaling" => 17500,
        "batch" => 17400,
        "certificates.k8s.io" => 17300,
        "networking.k8s.io" => 17200,
        "policy" => 17100,
        "rbac.authorization.k8s.io" => 17000,
        "storage.k8s.io" => 16800,
        "apiextensions.k8s.io" | "admissionregistration.k8s.io" => 16700,
        "scheduling.k8s.io" => 16600,
        "coordination.k8s.io" => 16500,
        "node.k8s.io" => 16300,
        "discovery.k8s.io" => 16200,
        _ => return None,
    };
    (version == "v1").then_some((group_priority, 15))
}

/// The APIServices autoregister makes at start for the built-in group-versions served.
pub(crate) fn api_services(registry: &Registry, now: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for (group, versions) in registry.groups() {
        for version in versions {
            let Some((group_priority, version_priority)) = priority(&group, &version) else { continue };
            let mut spec = json!({"version": version, "groupPriorityMinimum": group_priority,
                                  "versionPriority": version_priority});
            if !group.is_empty() {
                spec["group"] = json!(group);
            }
            out.push(json!({
                "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                "metadata": {"name": format!("{version}.{group}"),
                             "labels": {"kube-aggregator.kubernetes.io/automanaged": "onstart"}},
                "spec": spec,
                "status": {"conditions": [{"type": "Available", "status": "True", "lastTransitionTime": now,
                                           "reason": "Local", "message": "Local APIServices are always available"}]},
            }));
        }
    }
    out
}
