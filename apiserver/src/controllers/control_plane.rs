//! What kube-apiserver tells about itself as API objects: the ComponentStatuses of `kubectl
//! get cs` (read-only, made up on each request, as upstream's REST probes them), and the
//! APIServices its aggregator's autoregister controller stores at start, one per served
//! built-in group-version, each served locally and so always Available, and those its
//! crdregistration controller keeps for the group-versions CustomResourceDefinitions serve.

use std::collections::BTreeSet;

use serde_json::{Value, json};
use wasmcm_core::str_at;

use crate::State;
use crate::api::{self, DeleteOptions, Ownership};
use crate::registry::resources::Registry;
use crate::registry::resources::Target;
use crate::storage::query::Filter;

const API_SERVICES_ID: &str = "apiregistration.k8s.io/apiservices";
const AUTOMANAGED: &str = "kube-aggregator.kubernetes.io/automanaged";

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

fn api_service(group: &str, version: &str, priorities: (i64, i64), managed: &str, now: &str) -> Value {
    let mut spec = json!({"version": version, "groupPriorityMinimum": priorities.0, "versionPriority": priorities.1});
    if !group.is_empty() {
        spec["group"] = json!(group);
    }
    json!({
        "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
        "metadata": {"name": format!("{version}.{group}"), "labels": {AUTOMANAGED: managed}},
        "spec": spec,
        "status": {"conditions": [{"type": "Available", "status": "True", "lastTransitionTime": now,
                                   "reason": "Local", "message": "Local APIServices are always available"}]},
    })
}

/// The APIServices autoregister makes at start for the built-in group-versions served.
pub(crate) fn api_services(registry: &Registry, now: &str) -> Vec<Value> {
    let mut out = Vec::new();
    for (group, versions) in registry.groups() {
        for version in versions {
            let Some(priorities) = priority(&group, &version) else { continue };
            out.push(api_service(&group, &version, priorities, "onstart", now));
        }
    }
    out
}

/// What crdregistration does when CRDs come and go: an APIService (low group priority 1000,
/// version priority 100) for each group-version a CRD serves, and none for those no longer
/// served. Only the APIServices it manages (`automanaged: "true"`) are touched.
pub(crate) fn sync_crd_api_services(state: &State) {
    let Some(rt) = state.registry.lookup("apiregistration.k8s.io", "v1", "apiservices") else { return };
    let wanted: BTreeSet<(String, String)> = state
        .registry
        .all()
        .into_iter()
        .filter(|t| t.printer_columns.is_some())
        .map(|t| (t.group, t.version))
        .collect();
    let (existing, _) = state.store.list(API_SERVICES_ID, None, &Filter::for_type(API_SERVICES_ID));
    let target = |name: &str| Target { rt: rt.clone(), namespace: String::new(), name: name.into() };
    for service in &existing {
        let managed = service.pointer(&format!("/metadata/labels/{}", AUTOMANAGED.replace('/', "~1")));
        let key = (str_at(service, "/spec/group").to_string(), str_at(service, "/spec/version").to_string());
        if managed.and_then(Value::as_str) == Some("true") && !wanted.contains(&key) {
            let name = str_at(service, "/metadata/name");
            if let Err(e) = api::delete(state, &target(name), &DeleteOptions::default()) {
                tracing::warn!("removing APIService {name}: {e}");
            }
        }
    }
    for (group, version) in wanted {
        let name = format!("{version}.{group}");
        if existing.iter().any(|s| str_at(s, "/metadata/name") == name) {
            continue;
        }
        let service = api_service(&group, &version, (1000, 100), "true", &state.now_rfc3339());
        let created = api::create(state, &rt, "", service.clone(), false, Ownership::Unrecorded)
            .and_then(|_| api::update_status(state, &target(&name), service, false, Ownership::Unrecorded));
        if let Err(e) = created {
            tracing::warn!("registering APIService {name}: {e}");
        }
    }
}
