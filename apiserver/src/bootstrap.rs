//! What a kube-apiserver makes when it starts, so that clients and charts find what they
//! expect of any cluster: the system namespaces; the `default/kubernetes` Service with its
//! Endpoints and EndpointSlice, pointing at this server; and the default RBAC policy its
//! post-start hook reconciles: `cluster-admin` (bound to `system:masters`), the user-facing
//! `admin`, `edit` and `view`, and the `system:discovery`, `system:basic-user` and
//! `system:public-info-viewer` roles every user is bound to; and the APIServices of the
//! built-in group-versions (see `control_plane`).
//!
//! The roles are written here from what upstream grants, not copied from its policy files:
//! `admin`, `edit` and `view` hold the rules upstream aggregates into them (no controller
//! aggregates ClusterRoles here), including those for kinds this server does not serve yet,
//! which grant nothing until it does.
//!
//! It creates objects through `api` once, at start; it does nothing afterwards.

use anyhow::Context;
use serde_json::{Value, json};

use crate::State;
use crate::api::{self, Ownership};

/// The ClusterIP of `default/kubernetes`: the first address of the service range.
const KUBERNETES_SERVICE_IP: &str = "10.96.0.1";

pub(crate) fn bootstrap(state: &State) -> anyhow::Result<()> {
    let create = |resource: &str, namespace: &str, object: Value| -> anyhow::Result<()> {
        let api_version = object["apiVersion"].as_str().unwrap_or_default();
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        let rt = state.registry.lookup(group, version, resource).with_context(|| format!("{resource} is built in"))?;
        let name = object.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
        api::create(state, &rt, namespace, object, false, Ownership::Unrecorded)
            .map(drop)
            .map_err(|e| anyhow::anyhow!("creating {resource} {name}: {e}"))
    };
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        create("namespaces", "", json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}}))?;
    }
    for (resource, object) in kubernetes_service(&state.server_address) {
        create(resource, "default", object)?;
    }
    // Created, then marked Available as the availability controller does: status is not
    // settable on create.
    let api_services = state.registry.lookup("apiregistration.k8s.io", "v1", "apiservices");
    for service in crate::controllers::control_plane::api_services(&state.registry, &state.now_rfc3339()) {
        create("apiservices", "", service.clone())?;
        if let Some(rt) = &api_services {
            let name = service.pointer("/metadata/name").and_then(Value::as_str).unwrap_or_default().to_string();
            let target = crate::registry::resources::Target { rt: rt.clone(), namespace: String::new(), name };
            api::update_status(state, &target, service, false, Ownership::Unrecorded)
                .map_err(|e| anyhow::anyhow!("marking APIService {} available: {e}", target.name))?;
        }
    }
    let defaults = json!({"kubernetes.io/bootstrapping": "rbac-defaults"});
    let autoupdate = json!({"rbac.authorization.kubernetes.io/autoupdate": "true"});
    for (name, rules) in cluster_roles() {
        let role = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
            "metadata": {"name": name, "labels": defaults, "annotations": autoupdate}, "rules": rules});
        create("clusterroles", "", role)?;
    }
    for (name, groups) in [
        ("cluster-admin", &["system:masters"][..]),
        ("system:discovery", &["system:authenticated"]),
        ("system:basic-user", &["system:authenticated"]),
        ("system:public-info-viewer", &["system:authenticated", "system:unauthenticated"]),
    ] {
        let subjects: Vec<Value> = groups
            .iter()
            .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
            .collect();
        let binding = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
            "metadata": {"name": name, "labels": defaults, "annotations": autoupdate},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
            "subjects": subjects});
        create("clusterrolebindings", "", binding)?;
    }
    crate::controllers::gc::pass(state);
    Ok(())
}

/// `default/kubernetes`: a Service on 443 for the API, with the Endpoints and EndpointSlice
/// that name this server's address (none when it listens nowhere, offline).
fn kubernetes_service(address: &str) -> Vec<(&'static str, Value)> {
    let labels = json!({"component": "apiserver", "provider": "kubernetes"});
    let (ip, port) = match address.rsplit_once(':') {
        Some((ip, port)) => {
            (ip.trim_start_matches('[').trim_end_matches(']').to_string(), port.parse::<u16>().unwrap_or(6443))
        }
        None => (String::new(), 6443),
    };
    let mut out = vec![(
        "services",
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "kubernetes", "labels": labels},
            "spec": {"type": "ClusterIP", "clusterIP": KUBERNETES_SERVICE_IP, "sessionAffinity": "None",
                     "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": port}]}}),
    )];
    if ip.is_empty() {
        return out;
    }
    let ipv6 = ip.contains(':');
    out.push((
        "endpoints",
        json!({"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": "kubernetes", "labels": {"endpointslice.kubernetes.io/skip-mirror": "true"}},
            "subsets": [{"addresses": [{"ip": ip}], "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}]}),
    ));
    out.push((
        "endpointslices",
        json!({"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": "kubernetes", "labels": {"kubernetes.io/service-name": "kubernetes"}},
            "addressType": if ipv6 { "IPv6" } else { "IPv4" },
            "endpoints": [{"addresses": [ip], "conditions": {"ready": true}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}),
    ));
    out
}

const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];

fn rule(groups: &[&str], resources: &[&str], verbs: &[&str]) -> Value {
    json!({"apiGroups": groups, "resources": resources, "verbs": verbs})
}

/// What `view` reads, and `edit` also writes: the workloads and their configuration, by group.
fn workloads() -> Vec<(&'static str, Vec<&'static str>)> {
    vec![
        (
            "",
            vec![
                "pods",
                "pods/status",
                "pods/log",
                "services",
                "services/status",
                "endpoints",
                "configmaps",
                "serviceaccounts",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "replicationcontrollers/status",
                "events",
                "limitranges",
                "resourcequotas",
                "resourcequotas/status",
                "namespaces",
                "namespaces/status",
                "bindings",
            ],
        ),
        (
            "apps",
            vec![
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status",
                "daemonsets",
                "daemonsets/status",
                "controllerrevisions",
            ],
        ),
        ("batch", vec!["jobs", "jobs/status", "cronjobs", "cronjobs/status"]),
        ("autoscaling", vec!["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
        ("policy", vec!["poddisruptionbudgets", "poddisruptionbudgets/status"]),
        ("networking.k8s.io", vec!["ingresses", "ingresses/status", "networkpolicies"]),
        ("discovery.k8s.io", vec!["endpointslices"]),
        ("coordination.k8s.io", vec!["leases"]),
        ("events.k8s.io", vec!["events"]),
    ]
}

fn cluster_roles() -> Vec<(&'static str, Vec<Value>)> {
    let view: Vec<Value> = workloads().iter().map(|(g, r)| rule(&[g], r, READ)).collect();
    // edit writes what view reads (but namespaces, status and read-only views) and Secrets.
    let writable =
        |r: &&&str| !r.contains('/') && !matches!(**r, "namespaces" | "bindings" | "limitranges" | "resourcequotas");
    let mut edit = view.clone();
    edit.push(rule(&[""], &["secrets"], READ));
    for (group, resources) in workloads() {
        let resources: Vec<&str> = resources.iter().filter(writable).copied().collect();
        edit.push(rule(&[group], &resources, WRITE));
    }
    edit.push(rule(&[""], &["secrets", "pods/eviction", "pods/exec", "pods/attach", "pods/portforward"], &["create"]));
    edit.push(rule(&[""], &["secrets"], WRITE));
    edit.push(rule(&[""], &["serviceaccounts"], &["impersonate"]));
    edit.push(rule(
        &["apps", ""],
        &["deployments/scale", "replicasets/scale", "statefulsets/scale", "replicationcontrollers/scale"],
        &["patch", "update"],
    ));
    let mut admin = edit.clone();
    admin.push(rule(
        &["rbac.authorization.k8s.io"],
        &["roles", "rolebindings"],
        &["create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"],
    ));
    admin.push(rule(&["authorization.k8s.io"], &["localsubjectaccessreviews"], &["create"]));
    let get = |urls: &[&str]| vec![json!({"verbs": ["get"], "nonResourceURLs": urls})];
    vec![
        ("cluster-admin", vec![rule(&["*"], &["*"], &["*"]), json!({"nonResourceURLs": ["*"], "verbs": ["*"]})]),
        ("admin", admin),
        ("edit", edit),
        ("view", view),
        (
            "system:discovery",
            get(&[
                "/api",
                "/api/*",
                "/apis",
                "/apis/*",
                "/healthz",
                "/livez",
                "/openapi",
                "/openapi/*",
                "/readyz",
                "/version",
                "/version/",
            ]),
        ),
        (
            "system:basic-user",
            vec![
                rule(&["authorization.k8s.io"], &["selfsubjectaccessreviews", "selfsubjectrulesreviews"], &["create"]),
                rule(&["authentication.k8s.io"], &["selfsubjectreviews"], &["create"]),
            ],
        ),
        ("system:public-info-viewer", get(&["/healthz", "/livez", "/readyz", "/version", "/version/"])),
        // What a component that delegates authentication and authorization to the API server
        // (an aggregated API server, kube-rbac-proxy) is bound to.
        (
            "system:auth-delegator",
            vec![
                rule(&["authentication.k8s.io"], &["tokenreviews"], &["create"]),
                rule(&["authorization.k8s.io"], &["subjectaccessreviews"], &["create"]),
            ],
        ),
    ]
}

/// A bootstrapped state on a fixed clock, for the unit tests of the server's own loops.
#[cfg(test)]
pub(crate) fn test_state() -> State {
    let sources = crate::state::Sources::Fixed { now: jiff::Timestamp::UNIX_EPOCH, seq: Default::default() };
    let state = State::new(
        crate::storage::store::Store::default(),
        sources,
        crate::controllers::control_plane::sync_crd_api_services,
    );
    bootstrap(&state).expect("bootstrap");
    state
}
