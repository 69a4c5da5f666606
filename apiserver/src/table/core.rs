//! Printers of the core (`v1`) kinds: pods, namespaces, nodes, events (core/v1 and events.k8s.io/v1, which upstream
//! prints with one handler), config maps, secrets, service accounts and services; kubernetes
//! `pkg/printers/internalversion/printers.go` (printPod, printNode, printEvent, printService, ...).
//!
//! Each kind's columns sit next to its row. The shared machinery (`render`, field access, ages) is the parent's; other
//! groups' kinds are in their own files.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::{
    AGE_COLUMN, ColumnSpec, NAME_COLUMN, NAME_DOC, Row, age, entries, flag, human_duration, int, items, or_none,
    present, text, timestamp,
};

pub(super) const POD_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    ("Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic.", 0),
    ("Status", "string", "", "The aggregate status of the containers in this pod.", 0),
    (
        "Restarts",
        "string",
        "",
        "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
        0,
    ),
    AGE_COLUMN,
    (
        "IP",
        "string",
        "",
        "podIP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.",
        1,
    ),
    (
        "Node",
        "string",
        "",
        "NodeName indicates in which node this pod is scheduled. If empty, this pod is a candidate for scheduling by the scheduler defined in schedulerName. Once this field is set, the kubelet for this node becomes responsible for the lifecycle of this pod. This field should not be used to express a desire for the pod to be scheduled on a specific node. https://kubernetes.io/docs/concepts/scheduling-eviction/assign-pod-node/#nodename",
        1,
    ),
    (
        "Nominated Node",
        "string",
        "",
        "nominatedNodeName is set only when this pod preempts other pods on the node, but it cannot be scheduled right away as preemption victims receive their graceful termination periods. This field does not guarantee that the pod will be scheduled on this node. Scheduler may decide to place the pod elsewhere if other nodes become available sooner. Scheduler may also decide to give the resources on this node to a higher priority pod that is created after preemption. As a result, this field may be different than PodSpec.nodeName when the pod is scheduled.",
        1,
    ),
    (
        "Readiness Gates",
        "string",
        "",
        "If specified, all readiness gates will be evaluated for pod readiness. A pod is ready when all its containers are ready AND all conditions specified in the readiness gates have status equal to \"True\" More info: https://git.k8s.io/enhancements/keps/sig-network/580-pod-readiness-gates",
        1,
    ),
];

pub(super) const NAMESPACE_COLUMNS: &[ColumnSpec] =
    &[NAME_COLUMN, ("Status", "string", "", "The status of the namespace", 0), AGE_COLUMN];

const NODE_ADDRESSES_DOC: &str = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";

pub(super) const NODE_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    ("Status", "string", "", "The status of the node", 0),
    ("Roles", "string", "", "The roles of the node", 0),
    AGE_COLUMN,
    ("Version", "string", "", "Kubelet Version reported by the node.", 0),
    ("Internal-IP", "string", "", NODE_ADDRESSES_DOC, 1),
    ("External-IP", "string", "", NODE_ADDRESSES_DOC, 1),
    (
        "OS-Image",
        "string",
        "",
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
        1,
    ),
    (
        "Kernel-Version",
        "string",
        "",
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
        1,
    ),
    (
        "Container-Runtime",
        "string",
        "",
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
        1,
    ),
];

pub(super) const EVENT_COLUMNS: &[ColumnSpec] = &[
    ("Last Seen", "string", "", "The time at which the most recent occurrence of this event was recorded.", 0),
    ("Type", "string", "", "Type of this event (Normal, Warning), new types could be added in the future", 0),
    (
        "Reason",
        "string",
        "",
        "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.",
        0,
    ),
    ("Object", "string", "", "The object that this event is about.", 0),
    (
        "Subobject",
        "string",
        "",
        "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2]. For example, if the object reference is to a container within a pod, this would take on a value like: \"spec.containers{name}\" (where \"name\" refers to the name of the container that triggered the event) or if no container name is specified \"spec.containers[2]\" (container with index 2 in this pod). This syntax is chosen only to have some well-defined way of referencing a part of an object.",
        1,
    ),
    ("Source", "string", "", "The component reporting this event. Should be a short machine understandable string.", 1),
    ("Message", "string", "", "A human-readable description of the status of this operation.", 0),
    (
        "First Seen",
        "string",
        "",
        "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)",
        1,
    ),
    ("Count", "string", "", "The number of times this event has occurred.", 1),
    ("Name", "string", "name", NAME_DOC, 1),
];

pub(super) const CONFIG_MAP_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    (
        "Data",
        "string",
        "",
        "Data contains the configuration data. Each key must consist of alphanumeric characters, '-', '_' or '.'. Values with non-UTF-8 byte sequences must use the BinaryData field. The keys stored in Data must not overlap with the keys in the BinaryData field, this is enforced during validation process.",
        0,
    ),
    AGE_COLUMN,
];

pub(super) const SECRET_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    (
        "Type",
        "string",
        "",
        "Used to facilitate programmatic handling of secret data. More info: https://kubernetes.io/docs/concepts/configuration/secret/#secret-types",
        0,
    ),
    (
        "Data",
        "string",
        "",
        "Data contains the secret data. Each key must consist of alphanumeric characters, '-', '_' or '.'. The serialized form of the secret data is a base64 encoded string, representing the arbitrary (possibly non-string) data value here. Described in https://tools.ietf.org/html/rfc4648#section-4",
        0,
    ),
    AGE_COLUMN,
];

pub(super) const SERVICE_ACCOUNT_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    (
        "Secrets",
        "string",
        "",
        "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use. Pods are only limited to this list if this service account has a \"kubernetes.io/enforce-mountable-secrets\" annotation set to \"true\". The \"kubernetes.io/enforce-mountable-secrets\" annotation is deprecated since v1.32. Prefer separate namespaces to isolate access to mounted secrets. This field should not be used to find auto-generated service account token secrets for use outside of pods. Instead, tokens can be requested directly using the TokenRequest API, or service account token secrets can be manually created. More info: https://kubernetes.io/docs/concepts/configuration/secret",
        0,
    ),
    AGE_COLUMN,
];

pub(super) const SERVICE_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    (
        "Type",
        "string",
        "",
        "type determines how the Service is exposed. Defaults to ClusterIP. Valid options are ExternalName, ClusterIP, NodePort, and LoadBalancer. \"ClusterIP\" allocates a cluster-internal IP address for load-balancing to endpoints. Endpoints are determined by the selector or if that is not specified, by manual construction of an Endpoints object or EndpointSlice objects. If clusterIP is \"None\", no virtual IP is allocated and the endpoints are published as a set of endpoints rather than a virtual IP. \"NodePort\" builds on ClusterIP and allocates a port on every node which routes to the same endpoints as the clusterIP. \"LoadBalancer\" builds on NodePort and creates an external load-balancer (if supported in the current cloud) which routes to the same endpoints as the clusterIP. \"ExternalName\" aliases this service to the specified externalName. Several other fields do not apply to ExternalName services. More info: https://kubernetes.io/docs/concepts/services-networking/service/#publishing-services-service-types",
        0,
    ),
    (
        "Cluster-IP",
        "string",
        "",
        "clusterIP is the IP address of the service and is usually assigned randomly. If an address is specified manually, is in-range (as per system configuration), and is not in use, it will be allocated to the service; otherwise creation of the service will fail. This field may not be changed through updates unless the type field is also being changed to ExternalName (which requires this field to be blank) or the type field is being changed from ExternalName (in which case this field may optionally be specified, as describe above).  Valid values are \"None\", empty string (\"\"), or a valid IP address. Setting this to \"None\" makes a \"headless service\" (no virtual IP), which is useful when direct endpoint connections are preferred and proxying is not required.  Only applies to types ClusterIP, NodePort, and LoadBalancer. If this field is specified when creating a Service of type ExternalName, creation will fail. This field will be wiped when updating a Service to type ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
        0,
    ),
    (
        "External-IP",
        "string",
        "",
        "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.  These IPs are not managed by Kubernetes.  The user is responsible for ensuring that traffic arrives at a node with this IP.  A common example is external load-balancers that are not part of the Kubernetes system.",
        0,
    ),
    (
        "Port(s)",
        "string",
        "",
        "The list of ports that are exposed by this service. More info: https://kubernetes.io/docs/concepts/services-networking/service/#virtual-ips-and-service-proxies",
        0,
    ),
    AGE_COLUMN,
    (
        "Selector",
        "string",
        "",
        "Route service traffic to pods with label keys and values matching this selector. If empty or not present, the service is assumed to have an external process managing its endpoints, which Kubernetes will not modify. Only applies to types ClusterIP, NodePort, and LoadBalancer. Ignored if type is ExternalName. More info: https://kubernetes.io/docs/concepts/services-networking/service/",
        1,
    ),
];

// ---- Pod

pub(super) fn pod_row(pod: &Value, now: Timestamp) -> Row {
    let mut total = items(pod, "/spec/containers").len();
    let mut ready = 0usize;
    let mut restarts: i64 = 0;
    let mut sidecar_restarts: i64 = 0;
    let mut last_restart: Option<Timestamp> = None;
    let mut last_sidecar_restart: Option<Timestamp> = None;

    let phase = text(pod, "/status/phase");
    let mut reason = match text(pod, "/status/reason") {
        "" => phase.to_string(),
        r => r.to_string(),
    };
    let conditions = items(pod, "/status/conditions");
    if conditions.iter().any(|c| text(c, "/type") == "PodScheduled" && text(c, "/reason") == "SchedulingGated") {
        reason = "SchedulingGated".into();
    }

    let row_conditions = match phase {
        "Succeeded" => Some(completed_condition("Succeeded", "The pod has completed successfully.")),
        "Failed" => Some(completed_condition("Failed", "The pod failed.")),
        _ => None,
    };

    // Sidecars (init containers with restartPolicy Always) keep running, so they count as pod containers.
    let init_specs = items(pod, "/spec/initContainers");
    let sidecars: Vec<&str> =
        init_specs.iter().filter(|c| text(c, "/restartPolicy") == "Always").map(|c| text(c, "/name")).collect();
    total += sidecars.len();

    let mut initializing = false;
    for (i, status) in items(pod, "/status/initContainerStatuses").iter().enumerate() {
        let count = int(status, "/restartCount").unwrap_or(0);
        let finished = present(status, "/lastState/terminated").and_then(|t| timestamp(t, "/finishedAt"));
        restarts = restarts.saturating_add(count);
        keep_latest(&mut last_restart, finished);
        let is_sidecar = sidecars.contains(&text(status, "/name"));
        if is_sidecar {
            sidecar_restarts = sidecar_restarts.saturating_add(count);
            keep_latest(&mut last_sidecar_restart, finished);
        }
        let terminated = present(status, "/state/terminated");
        let waiting_reason = present(status, "/state/waiting").map_or("", |w| text(w, "/reason"));
        if terminated.is_some_and(|t| int(t, "/exitCode").unwrap_or(0) == 0) {
            continue;
        }
        if is_sidecar && flag(status, "/started") {
            if flag(status, "/ready") {
                ready += 1;
            }
            continue;
        }
        reason = if let Some(t) = terminated {
            match text(t, "/reason") {
                "" => match int(t, "/signal").unwrap_or(0) {
                    0 => format!("Init:ExitCode:{}", int(t, "/exitCode").unwrap_or(0)),
                    signal => format!("Init:Signal:{signal}"),
                },
                r => format!("Init:{r}"),
            }
        } else if !waiting_reason.is_empty() && waiting_reason != "PodInitializing" {
            format!("Init:{waiting_reason}")
        } else {
            format!("Init:{i}/{}", init_specs.len())
        };
        initializing = true;
        break;
    }

    let initialized =
        conditions.iter().find(|c| text(c, "/type") == "Initialized").is_some_and(|c| text(c, "/status") == "True");
    if !initializing || initialized {
        // Only sidecar restarts carry over: a finished init container's restarts belong to the past.
        restarts = sidecar_restarts;
        last_restart = last_sidecar_restart;
        let mut has_running = false;
        // Reverse order so that the first container's state is the one left in `reason`, as upstream.
        for status in items(pod, "/status/containerStatuses").iter().rev() {
            restarts = restarts.saturating_add(int(status, "/restartCount").unwrap_or(0));
            keep_latest(
                &mut last_restart,
                present(status, "/lastState/terminated").and_then(|t| timestamp(t, "/finishedAt")),
            );
            let waiting_reason = present(status, "/state/waiting").map_or("", |w| text(w, "/reason"));
            if !waiting_reason.is_empty() {
                reason = waiting_reason.to_string();
            } else if let Some(t) = present(status, "/state/terminated") {
                reason = match text(t, "/reason") {
                    "" => match int(t, "/signal").unwrap_or(0) {
                        0 => format!("ExitCode:{}", int(t, "/exitCode").unwrap_or(0)),
                        signal => format!("Signal:{signal}"),
                    },
                    r => r.to_string(),
                };
            } else if flag(status, "/ready") && present(status, "/state/running").is_some() {
                has_running = true;
                ready += 1;
            }
        }
        // A pod whose first container completed while another still runs is not "Completed".
        if reason == "Completed" && has_running {
            let pod_ready = conditions.iter().any(|c| text(c, "/type") == "Ready" && text(c, "/status") == "True");
            reason = if pod_ready { "Running" } else { "NotReady" }.into();
        }
    }

    let deleting = pod.pointer("/metadata/deletionTimestamp").is_some_and(|v| !v.is_null());
    if deleting && text(pod, "/status/reason") == "NodeLost" {
        reason = "Unknown".into();
    } else if deleting && phase != "Failed" && phase != "Succeeded" {
        reason = "Terminating".into();
    }

    let restarts_cell = match last_restart {
        Some(last) if restarts != 0 => format!("{restarts} ({} ago)", human_duration(now.duration_since(last))),
        _ => restarts.to_string(),
    };

    // v1 -> internal conversion makes status.podIP authoritative over podIPs when both are set.
    let pod_ip = match text(pod, "/status/podIP") {
        "" => items(pod, "/status/podIPs").first().map_or("", |ip| text(ip, "/ip")),
        ip => ip,
    };
    let gates = items(pod, "/spec/readinessGates");
    let readiness_gates = if gates.is_empty() {
        "<none>".to_string()
    } else {
        let passing = gates
            .iter()
            .filter(|gate| {
                let wanted = text(gate, "/conditionType");
                conditions.iter().find(|c| text(c, "/type") == wanted).is_some_and(|c| text(c, "/status") == "True")
            })
            .count();
        format!("{passing}/{}", gates.len())
    };

    Row {
        cells: vec![
            text(pod, "/metadata/name").into(),
            format!("{ready}/{total}").into(),
            reason.into(),
            restarts_cell.into(),
            age(now, timestamp(pod, "/metadata/creationTimestamp")).into(),
            or_none(pod_ip),
            or_none(text(pod, "/spec/nodeName")),
            or_none(text(pod, "/status/nominatedNodeName")),
            readiness_gates.into(),
        ],
        conditions: row_conditions,
    }
}

fn keep_latest(latest: &mut Option<Timestamp>, candidate: Option<Timestamp>) {
    if candidate > *latest {
        *latest = candidate;
    }
}

fn completed_condition(reason: &str, message: &str) -> Value {
    json!([{"type": "Completed", "status": "True", "reason": reason, "message": message}])
}

pub(super) fn namespace_row(obj: &Value, now: Timestamp) -> Row {
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        text(obj, "/status/phase").into(),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
    ])
}

// ---- Node

pub(super) fn node_row(node: &Value, now: Timestamp) -> Row {
    // Upstream indexes conditions by type (the last duplicate wins) and only reports Ready.
    let ready = items(node, "/status/conditions").iter().rev().find(|c| text(c, "/type") == "Ready");
    let mut status = vec![match ready {
        Some(c) if text(c, "/status") == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if flag(node, "/spec/unschedulable") {
        status.push("SchedulingDisabled");
    }

    let mut roles = std::collections::BTreeSet::new();
    if let Some(labels) = node.pointer("/metadata/labels").and_then(Value::as_object) {
        for (key, value) in labels {
            let role = match key.strip_prefix("node-role.kubernetes.io/") {
                Some(role) => role,
                None if key == "kubernetes.io/role" => value.as_str().unwrap_or(""),
                None => "",
            };
            if !role.is_empty() {
                roles.insert(role);
            }
        }
    }
    let roles: Vec<&str> = roles.into_iter().collect();

    let address = |kind: &str| -> Value {
        let found = items(node, "/status/addresses").iter().find(|a| text(a, "/type") == kind);
        found.map_or_else(|| "<none>".into(), |a| text(a, "/address").into())
    };
    let info = |field: &str| -> Value {
        match text(node, &format!("/status/nodeInfo/{field}")) {
            "" => "<unknown>".into(),
            v => v.into(),
        }
    };
    Row::new(vec![
        text(node, "/metadata/name").into(),
        status.join(",").into(),
        or_none(&roles.join(",")),
        age(now, timestamp(node, "/metadata/creationTimestamp")).into(),
        text(node, "/status/nodeInfo/kubeletVersion").into(),
        address("InternalIP"),
        address("ExternalIP"),
        info("osImage"),
        info("kernelVersion"),
        info("containerRuntimeVersion"),
    ])
}

// ---- Events

/// Where the fields of upstream's internal Event live in each served version's JSON.
struct EventFields {
    regarding: &'static str,
    message: &'static str,
    first_timestamp: &'static str,
    last_timestamp: &'static str,
    count: &'static str,
    source: &'static str,
    reporting_controller: &'static str,
}

const CORE_EVENT_FIELDS: EventFields = EventFields {
    regarding: "/involvedObject",
    message: "/message",
    first_timestamp: "/firstTimestamp",
    last_timestamp: "/lastTimestamp",
    count: "/count",
    source: "/source",
    reporting_controller: "/reportingComponent",
};

const EVENTS_V1_FIELDS: EventFields = EventFields {
    regarding: "/regarding",
    message: "/note",
    first_timestamp: "/deprecatedFirstTimestamp",
    last_timestamp: "/deprecatedLastTimestamp",
    count: "/deprecatedCount",
    source: "/deprecatedSource",
    reporting_controller: "/reportingController",
};

fn event_row(event: &Value, now: Timestamp, fields: &EventFields) -> Row {
    // New-style events only carry eventTime/series; old-style ones only the first/last timestamps and count.
    let first_seen = match timestamp(event, fields.first_timestamp) {
        Some(t) => age(now, Some(t)),
        None => age(now, timestamp(event, "/eventTime")),
    };
    let mut last_seen = match timestamp(event, fields.last_timestamp) {
        Some(t) => age(now, Some(t)),
        None => first_seen.clone(),
    };
    let mut count = int(event, fields.count).unwrap_or(0);
    if let Some(series) = present(event, "/series") {
        last_seen = age(now, timestamp(series, "/lastObservedTime"));
        count = int(series, "/count").unwrap_or(0);
    } else if count == 0 {
        count = 1;
    }

    let regarding = event.pointer(fields.regarding).unwrap_or(&Value::Null);
    let kind = text(regarding, "/kind").to_lowercase();
    let target = match text(regarding, "/name") {
        "" => kind,
        name => format!("{kind}/{name}"),
    };
    let component =
        first_non_empty(text(event, &format!("{}/component", fields.source)), text(event, fields.reporting_controller));
    let instance = first_non_empty(text(event, &format!("{}/host", fields.source)), text(event, "/reportingInstance"));
    let source = if instance.is_empty() { component.to_string() } else { format!("{component}, {instance}") };

    Row::new(vec![
        last_seen.into(),
        text(event, "/type").into(),
        text(event, "/reason").into(),
        target.into(),
        text(regarding, "/fieldPath").into(),
        source.into(),
        text(event, fields.message).trim().into(),
        first_seen.into(),
        count.into(),
        text(event, "/metadata/name").into(),
    ])
}

fn first_non_empty<'a>(a: &'a str, b: &'a str) -> &'a str {
    if a.is_empty() { b } else { a }
}

pub(super) fn core_event_row(event: &Value, now: Timestamp) -> Row {
    event_row(event, now, &CORE_EVENT_FIELDS)
}

pub(super) fn events_event_row(event: &Value, now: Timestamp) -> Row {
    event_row(event, now, &EVENTS_V1_FIELDS)
}

// ---- ConfigMap, Secret, ServiceAccount

pub(super) fn config_map_row(obj: &Value, now: Timestamp) -> Row {
    let data = entries(obj, "/data") + entries(obj, "/binaryData");
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        data.into(),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
    ])
}

pub(super) fn secret_row(obj: &Value, now: Timestamp) -> Row {
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        text(obj, "/type").into(),
        entries(obj, "/data").into(),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
    ])
}

pub(super) fn service_account_row(obj: &Value, now: Timestamp) -> Row {
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        items(obj, "/secrets").len().into(),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
    ])
}

// ---- Service (printService, makePortString, getServiceExternalIP)

pub(super) fn service_row(obj: &Value, now: Timestamp) -> Row {
    let ty = text(obj, "/spec/type");
    let cluster_ip = items(obj, "/spec/clusterIPs").first().and_then(Value::as_str).unwrap_or("<none>");
    let external_ips: Vec<&str> = items(obj, "/spec/externalIPs").iter().filter_map(Value::as_str).collect();
    let external = match ty {
        "ClusterIP" | "NodePort" if external_ips.is_empty() => "<none>".to_string(),
        "ClusterIP" | "NodePort" => external_ips.join(","),
        "LoadBalancer" => {
            let mut ingress: Vec<&str> = items(obj, "/status/loadBalancer/ingress")
                .iter()
                .map(|i| if text(i, "/ip").is_empty() { text(i, "/hostname") } else { text(i, "/ip") })
                .filter(|s| !s.is_empty())
                .collect();
            ingress.sort_unstable();
            ingress.dedup();
            ingress.extend(&external_ips);
            if ingress.is_empty() { "<pending>".to_string() } else { ingress.join(",") }
        }
        "ExternalName" => text(obj, "/spec/externalName").to_string(),
        _ => "<unknown>".to_string(),
    };
    let ports: Vec<String> = items(obj, "/spec/ports")
        .iter()
        .map(|p| {
            let (port, protocol) = (int(p, "/port").unwrap_or(0), text(p, "/protocol"));
            match int(p, "/nodePort").filter(|n| *n > 0) {
                Some(node_port) => format!("{port}:{node_port}/{protocol}"),
                None => format!("{port}/{protocol}"),
            }
        })
        .collect();
    let mut selector: Vec<String> = obj
        .pointer("/spec/selector")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or(""))).collect())
        .unwrap_or_default();
    selector.sort();
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        ty.into(),
        cluster_ip.into(),
        external.into(),
        or_none(&ports.join(",")),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
        or_none(&selector.join(",")),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::tests::{ago, cells, columns, pod, row, running_status, table};

    #[test]
    fn running_ready_pod() {
        let t = table("v1", "Pod", &[pod(running_status())]);
        assert_eq!(
            columns(&t),
            json!([
                ["Name", 0],
                ["Ready", 0],
                ["Status", 0],
                ["Restarts", 0],
                ["Age", 0],
                ["IP", 1],
                ["Node", 1],
                ["Nominated Node", 1],
                ["Readiness Gates", 1]
            ])
        );
        assert_eq!(t["columnDefinitions"][0]["format"], "name");
        // Upstream types RESTARTS as a string since it grew the "(5m ago)" suffix.
        assert_eq!(t["columnDefinitions"][3]["type"], "string");
        assert_eq!(
            cells(&t, 0),
            json!(["web-abc12", "1/1", "Running", "0", "5m", "10.0.0.7", "node-1", "<none>", "<none>"])
        );
        assert!(t["rows"][0].get("conditions").is_none());
    }

    #[test]
    fn pod_with_deletion_timestamp_is_terminating() {
        let mut p = pod(running_status());
        p["metadata"]["deletionTimestamp"] = json!(ago(5));
        assert_eq!(row("v1", "Pod", p.clone())[2], "Terminating");
        // A terminal pod keeps its phase; a pod on a lost node is Unknown.
        p["status"]["phase"] = json!("Succeeded");
        p["status"]["containerStatuses"][0]["state"] = json!({"terminated": {"exitCode": 0, "reason": "Completed"}});
        assert_eq!(row("v1", "Pod", p.clone())[2], "Completed");
        p["status"]["phase"] = json!("Running");
        p["status"]["reason"] = json!("NodeLost");
        assert_eq!(row("v1", "Pod", p)[2], "Unknown");
    }

    #[test]
    fn crash_looping_pod_shows_waiting_reason_and_last_restart() {
        let p = pod(json!({
            "phase": "Running",
            "containerStatuses": [{
                "name": "web",
                "ready": false,
                "restartCount": 5,
                "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                "lastState": {"terminated": {"exitCode": 1, "reason": "Error", "finishedAt": ago(120)}},
            }],
        }));
        assert_eq!(
            row("v1", "Pod", p),
            json!(["web-abc12", "0/1", "CrashLoopBackOff", "5 (2m ago)", "5m", "<none>", "node-1", "<none>", "<none>"])
        );
    }

    #[test]
    fn terminated_containers_report_reason_signal_or_exit_code() {
        let reason = |terminated: Value| {
            let status = json!({"terminated": terminated});
            let p = pod(json!({"phase": "Running", "containerStatuses": [{"name": "web", "state": status}]}));
            row("v1", "Pod", p)[2].clone()
        };
        assert_eq!(reason(json!({"exitCode": 137, "reason": "OOMKilled"})), "OOMKilled");
        assert_eq!(reason(json!({"exitCode": 2})), "ExitCode:2");
        assert_eq!(reason(json!({"exitCode": 143, "signal": 15})), "Signal:15");
    }

    #[test]
    fn finished_pods_carry_a_completed_row_condition() {
        let p = pod(json!({
            "phase": "Succeeded",
            "containerStatuses": [{"name": "web", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}}],
        }));
        let t = table("v1", "Pod", std::slice::from_ref(&p));
        assert_eq!(cells(&t, 0)[2], "Completed");
        assert_eq!(
            t["rows"][0]["conditions"],
            json!([{
                "type": "Completed",
                "status": "True",
                "reason": "Succeeded",
                "message": "The pod has completed successfully.",
            }])
        );
        let mut failed = p;
        failed["status"]["phase"] = json!("Failed");
        let t = table("v1", "Pod", &[failed]);
        assert_eq!(t["rows"][0]["conditions"][0]["message"], "The pod failed.");
    }

    #[test]
    fn completed_container_beside_a_running_one_is_running_or_not_ready() {
        let mut p = pod(json!({
            "phase": "Running",
            "conditions": [{"type": "Ready", "status": "False"}],
            "containerStatuses": [
                {"name": "job", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}},
                {"name": "web", "ready": true, "state": {"running": {}}},
            ],
        }));
        assert_eq!(row("v1", "Pod", p.clone())[2], "NotReady");
        p["status"]["conditions"][0]["status"] = json!("True");
        assert_eq!(row("v1", "Pod", p)[2], "Running");
    }

    #[test]
    fn init_containers_report_progress_and_failures() {
        let with_init = |statuses: Value| {
            let mut p = pod(json!({"phase": "Pending", "initContainerStatuses": statuses}));
            p["spec"]["initContainers"] = json!([{"name": "migrate"}, {"name": "seed"}]);
            let c = row("v1", "Pod", p);
            json!([c[1], c[2], c[3]])
        };
        let done = json!({"name": "migrate", "state": {"terminated": {"exitCode": 0, "reason": "Completed"}}});
        assert_eq!(
            with_init(json!([done, {"name": "seed", "state": {"running": {}}}])),
            json!(["0/1", "Init:1/2", "0"])
        );
        assert_eq!(
            with_init(
                json!([{"name": "migrate", "restartCount": 3, "state": {"waiting": {"reason": "CrashLoopBackOff"}}}])
            ),
            json!(["0/1", "Init:CrashLoopBackOff", "3"])
        );
        assert_eq!(
            with_init(json!([{"name": "migrate", "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}]))[1],
            "Init:Error"
        );
        assert_eq!(
            with_init(json!([{"name": "migrate", "state": {"terminated": {"exitCode": 3}}}]))[1],
            "Init:ExitCode:3"
        );
        assert_eq!(
            with_init(json!([{"name": "migrate", "state": {"terminated": {"exitCode": 9, "signal": 9}}}]))[1],
            "Init:Signal:9"
        );
        assert_eq!(
            with_init(json!([{"name": "migrate", "state": {"waiting": {"reason": "PodInitializing"}}}]))[1],
            "Init:0/2"
        );
    }

    #[test]
    fn started_sidecars_count_as_containers() {
        let mut p = pod(json!({
            "phase": "Running",
            "conditions": [{"type": "Initialized", "status": "True"}],
            "initContainerStatuses": [{
                "name": "proxy", "started": true, "ready": true, "restartCount": 1,
                "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(600)}},
            }],
            "containerStatuses": [{
                "name": "web", "ready": true, "restartCount": 2, "state": {"running": {}},
                "lastState": {"terminated": {"exitCode": 1, "finishedAt": ago(60)}},
            }],
        }));
        p["spec"]["initContainers"] = json!([{"name": "proxy", "restartPolicy": "Always"}]);
        let c = row("v1", "Pod", p);
        assert_eq!(json!([c[1], c[2], c[3]]), json!(["2/2", "Running", "3 (60s ago)"]));
    }

    #[test]
    fn pod_wide_columns() {
        let mut p = pod(running_status());
        p["status"]["podIP"] = json!("");
        p["status"]["podIPs"] = json!([{"ip": "fd00::7"}, {"ip": "10.0.0.9"}]);
        p["status"]["nominatedNodeName"] = json!("node-2");
        p["status"]["conditions"] =
            json!([{"type": "Ready", "status": "True"}, {"type": "example.com/lb", "status": "True"}]);
        p["spec"]["readinessGates"] =
            json!([{"conditionType": "example.com/lb"}, {"conditionType": "example.com/dns"}]);
        let c = row("v1", "Pod", p);
        assert_eq!(json!([c[5], c[6], c[7], c[8]]), json!(["fd00::7", "node-1", "node-2", "1/2"]));
    }

    #[test]
    fn scheduling_gated_pod() {
        let p = pod(json!({
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}],
        }));
        assert_eq!(row("v1", "Pod", p)[2], "SchedulingGated");
    }

    #[test]
    fn namespace_row() {
        let ns =
            json!({"metadata": {"name": "kube-system", "creationTimestamp": ago(45)}, "status": {"phase": "Active"}});
        let t = table("v1", "Namespace", &[ns]);
        assert_eq!(columns(&t), json!([["Name", 0], ["Status", 0], ["Age", 0]]));
        assert_eq!(cells(&t, 0), json!(["kube-system", "Active", "45s"]));
    }

    #[test]
    fn node_rows() {
        let node = json!({
            "metadata": {
                "name": "cp-1",
                "creationTimestamp": ago(10 * 86400),
                "labels": {
                    "node-role.kubernetes.io/control-plane": "",
                    "kubernetes.io/role": "master",
                    "node-role.kubernetes.io/": "",
                },
            },
            "spec": {"unschedulable": true},
            "status": {
                "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}],
                "addresses": [{"type": "Hostname", "address": "cp-1"}, {"type": "InternalIP", "address": "192.0.2.10"}],
                "nodeInfo": {
                    "kubeletVersion": "v1.35.2",
                    "osImage": "Debian GNU/Linux 12 (bookworm)",
                    "kernelVersion": "6.1.0",
                    "containerRuntimeVersion": "containerd://2.0.0",
                },
            },
        });
        let not_ready =
            json!({"metadata": {"name": "bare"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}});
        let t = table("v1", "Node", &[node, not_ready, json!({"metadata": {"name": "new"}})]);
        assert_eq!(
            columns(&t),
            json!([
                ["Name", 0],
                ["Status", 0],
                ["Roles", 0],
                ["Age", 0],
                ["Version", 0],
                ["Internal-IP", 1],
                ["External-IP", 1],
                ["OS-Image", 1],
                ["Kernel-Version", 1],
                ["Container-Runtime", 1]
            ])
        );
        assert_eq!(
            cells(&t, 0),
            json!([
                "cp-1",
                "Ready,SchedulingDisabled",
                "control-plane,master",
                "10d",
                "v1.35.2",
                "192.0.2.10",
                "<none>",
                "Debian GNU/Linux 12 (bookworm)",
                "6.1.0",
                "containerd://2.0.0"
            ])
        );
        assert_eq!(
            cells(&t, 1),
            json!([
                "bare",
                "NotReady",
                "<none>",
                "<unknown>",
                "",
                "<none>",
                "<none>",
                "<unknown>",
                "<unknown>",
                "<unknown>"
            ])
        );
        assert_eq!(cells(&t, 2)[1], "Unknown");
    }

    #[test]
    fn core_events() {
        let old_style = json!({
            "metadata": {"name": "web.17f3", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "web-abc12", "fieldPath": "spec.containers{web}"},
            "reason": "BackOff",
            "message": "Back-off restarting failed container\n",
            "type": "Warning",
            "firstTimestamp": ago(3600),
            "lastTimestamp": ago(30),
            "count": 12,
            "source": {"component": "kubelet", "host": "node-1"},
        });
        let new_style = json!({
            "metadata": {"name": "web.17f4"},
            "involvedObject": {"kind": "ReplicaSet", "name": "web-7d9f8"},
            "reason": "SuccessfulCreate",
            "message": "Created pod: web-abc12",
            "type": "Normal",
            "eventTime": "2026-03-01T11:58:00.000000Z",
            "reportingComponent": "replicaset-controller",
        });
        let series = json!({
            "metadata": {"name": "s"},
            "involvedObject": {"kind": "Node"},
            "eventTime": ago(600),
            "series": {"count": 4, "lastObservedTime": ago(5)},
            "reportingComponent": "kubelet",
            "reportingInstance": "node-1",
        });
        let t = table("v1", "Event", &[old_style, new_style, series]);
        assert_eq!(
            columns(&t),
            json!([
                ["Last Seen", 0],
                ["Type", 0],
                ["Reason", 0],
                ["Object", 0],
                ["Subobject", 1],
                ["Source", 1],
                ["Message", 0],
                ["First Seen", 1],
                ["Count", 1],
                ["Name", 1]
            ])
        );
        assert_eq!(t["columnDefinitions"][9]["format"], "name");
        assert_eq!(
            cells(&t, 0),
            json!([
                "30s",
                "Warning",
                "BackOff",
                "pod/web-abc12",
                "spec.containers{web}",
                "kubelet, node-1",
                "Back-off restarting failed container",
                "60m",
                12,
                "web.17f3"
            ])
        );
        assert_eq!(
            cells(&t, 1),
            json!([
                "2m",
                "Normal",
                "SuccessfulCreate",
                "replicaset/web-7d9f8",
                "",
                "replicaset-controller",
                "Created pod: web-abc12",
                "2m",
                1,
                "web.17f4"
            ])
        );
        assert_eq!(cells(&t, 2), json!(["5s", "", "", "node", "", "kubelet, node-1", "", "10m", 4, "s"]));
    }

    #[test]
    fn events_k8s_io_events_use_their_own_field_names() {
        let event = json!({
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {"name": "web.17f5"},
            "regarding": {"kind": "Deployment", "name": "web"},
            "reason": "ScalingReplicaSet",
            "note": " Scaled up replica set web-7d9f8 from 0 to 3 ",
            "type": "Normal",
            "eventTime": ago(90),
            "reportingController": "deployment-controller",
            "reportingInstance": "wasmcm-0",
            "deprecatedCount": 2,
        });
        let t = table("events.k8s.io/v1", "Event", &[event]);
        assert_eq!(columns(&t), columns(&table("v1", "Event", &[])));
        assert_eq!(
            cells(&t, 0),
            json!([
                "90s",
                "Normal",
                "ScalingReplicaSet",
                "deployment/web",
                "",
                "deployment-controller, wasmcm-0",
                "Scaled up replica set web-7d9f8 from 0 to 3",
                "90s",
                2,
                "web.17f5"
            ])
        );
    }
    #[test]
    fn small_core_kinds() {
        let meta = |name: &str| json!({"name": name, "creationTimestamp": ago(7200)});

        let t = table(
            "v1",
            "ConfigMap",
            &[json!({"metadata": meta("cfg"), "data": {"a": "1", "b": "2"}, "binaryData": {"c": "AA=="}})],
        );
        assert_eq!(columns(&t), json!([["Name", 0], ["Data", 0], ["Age", 0]]));
        assert_eq!(cells(&t, 0), json!(["cfg", 3, "120m"]));

        let t = table(
            "v1",
            "Secret",
            &[json!({"metadata": meta("tls"), "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": ""}})],
        );
        assert_eq!(columns(&t), json!([["Name", 0], ["Type", 0], ["Data", 0], ["Age", 0]]));
        assert_eq!(cells(&t, 0), json!(["tls", "kubernetes.io/tls", 2, "120m"]));

        let t = table(
            "v1",
            "ServiceAccount",
            &[json!({"metadata": meta("default")}), json!({"metadata": meta("ci"), "secrets": [{"name": "t"}]})],
        );
        assert_eq!(columns(&t), json!([["Name", 0], ["Secrets", 0], ["Age", 0]]));
        assert_eq!(cells(&t, 0), json!(["default", 0, "120m"]));
        assert_eq!(cells(&t, 1)[1], 1);
    }
}
