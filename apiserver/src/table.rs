//! Server-side printing for `kubectl get`: renders stored objects as a meta.k8s.io/v1 `Table`.
//!
//! kubectl asks for `application/json;as=Table;v=v1;g=meta.k8s.io` and prints whatever columns and cells the
//! server sends; it has no printers of its own for server-printed kinds. To look like a real cluster to kubectl we
//! therefore port kube-apiserver's printers (kubernetes `pkg/printers/internalversion/printers.go`, v1.35), the CRD
//! table convertor (`apiextensions-apiserver/pkg/registry/customresource/tableconvertor`) and the generic
//! `rest.defaultTableConvertor` rule for rule, including their quirks (a column typed "string" whose cells are
//! integers, `<none>` versus empty cells, ...), so output diffs cleanly against a real cluster's.
//!
//! Like kube-apiserver (which prints with `GenerateOptions{Wide: true}`), every row carries every column; kubectl
//! hides the priority-1 columns itself unless `-o wide`.

use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};

/// Renders `objects` (Kubernetes JSON, all of one kind) as a meta.k8s.io/v1 Table, as kube-apiserver's printers do.
/// `now` is the server's clock (for AGE columns). `include_object` follows the `includeObject` query parameter:
/// "None", "Object", or "Metadata" (the default: each row's `object` is a meta.k8s.io/v1 PartialObjectMetadata with
/// apiVersion/kind/metadata of the item). `list_metadata` is the list's metadata (resourceVersion, continue) to carry
/// over. `custom_columns` are a CRD's additionalPrinterColumns (JSON array, each
/// {name,type,jsonPath,description?,priority?,format?}) when serving a custom resource, else None.
///
/// Any `include_object` value other than "None" and "Object" is treated as "Metadata": kube-apiserver answers an
/// unknown value with 400 Bad Request, and that check belongs to the request handler, which can still report it.
pub fn render(
    api_version: &str,
    kind: &str,
    objects: &[Value],
    now: Timestamp,
    include_object: &str,
    list_metadata: Value,
    custom_columns: Option<&Value>,
) -> Value {
    let printer = Printer::select(api_version, kind, custom_columns);
    let rows: Vec<Value> = objects
        .iter()
        .map(|obj| {
            let row = printer.row(obj, now);
            let mut out = Map::new();
            out.insert("cells".into(), Value::Array(row.cells));
            if let Some(conditions) = row.conditions {
                out.insert("conditions".into(), conditions);
            }
            out.insert("object".into(), row_object(api_version, kind, obj, include_object));
            Value::Object(out)
        })
        .collect();
    json!({
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": table_list_meta(&list_metadata),
        "columnDefinitions": printer.columns(),
        "rows": rows,
    })
}

/// kubectl's duration.HumanDuration as used in AGE columns ("0s", "45s", "3m2s", "10m", "5h3m", "2d3h", "25d",
/// "2y10d" ...). Port upstream's exact rules.
pub fn human_duration(d: SignedDuration) -> String {
    // Upstream tolerates up to (but excluding) 2s of clock skew between the writer and the server as "now".
    let seconds = d.as_secs();
    if seconds < -1 {
        return "<invalid>".into();
    }
    if seconds < 0 {
        return "0s".into();
    }
    if seconds < 60 * 2 {
        return format!("{seconds}s");
    }
    let minutes = seconds / 60;
    if minutes < 10 {
        let s = seconds % 60;
        return if s == 0 { format!("{minutes}m") } else { format!("{minutes}m{s}s") };
    }
    if minutes < 60 * 3 {
        return format!("{minutes}m");
    }
    let hours = seconds / 3600;
    if hours < 8 {
        let m = minutes % 60;
        return if m == 0 { format!("{hours}h") } else { format!("{hours}h{m}m") };
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        let h = hours % 24;
        return if h == 0 { format!("{}d", hours / 24) } else { format!("{}d{h}h", hours / 24) };
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        let dy = (hours / 24) % 365;
        return if dy == 0 { format!("{}y", hours / 24 / 365) } else { format!("{}y{dy}d", hours / 24 / 365) };
    }
    format!("{}y", hours / 24 / 365)
}

// Column descriptions are the upstream ones (mostly k8s.io/api SwaggerDoc text, checked against kubectl v1.35.2's
// embedded copies) so `kubectl explain`-style tooling and diffs against a real cluster see the same strings.
const NAME_DOC: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";
const CREATION_TIMESTAMP_DOC: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";
const CONTAINERS_DOC: &str = "Names of each container in the template.";
const IMAGES_DOC: &str = "Images referenced by each container in the template.";
const REPLICAS_SPEC_DOC: &str = "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller";

type ColumnSpec = (&'static str, &'static str, &'static str, &'static str, i64);

const NAME_COLUMN: ColumnSpec = ("Name", "string", "name", NAME_DOC, 0);
const AGE_COLUMN: ColumnSpec = ("Age", "string", "", CREATION_TIMESTAMP_DOC, 0);

const POD_COLUMNS: &[ColumnSpec] = &[
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

const DEPLOYMENT_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    ("Ready", "string", "", "Number of the pod with ready state", 0),
    (
        "Up-to-date",
        "string",
        "",
        "Total number of non-terminating pods targeted by this deployment that have the desired template spec.",
        0,
    ),
    (
        "Available",
        "string",
        "",
        "Total number of available non-terminating pods (ready for at least minReadySeconds) targeted by this deployment.",
        0,
    ),
    AGE_COLUMN,
    ("Containers", "string", "", CONTAINERS_DOC, 1),
    ("Images", "string", "", IMAGES_DOC, 1),
    (
        "Selector",
        "string",
        "",
        "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.",
        1,
    ),
];

const REPLICA_SET_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    ("Desired", "integer", "", REPLICAS_SPEC_DOC, 0),
    (
        "Current",
        "integer",
        "",
        "Replicas is the most recently observed number of replicas. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller",
        0,
    ),
    (
        "Ready",
        "integer",
        "",
        "The number of non-terminating pods targeted by this ReplicaSet with a Ready Condition.",
        0,
    ),
    AGE_COLUMN,
    ("Containers", "string", "", CONTAINERS_DOC, 1),
    ("Images", "string", "", IMAGES_DOC, 1),
    (
        "Selector",
        "string",
        "",
        "Selector is a label query over pods that should match the replica count. If the selector is empty, it is defaulted to the labels present on the pod template. Label keys and values that must match in order to be controlled by this replica set. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors",
        1,
    ),
];

const NAMESPACE_COLUMNS: &[ColumnSpec] =
    &[NAME_COLUMN, ("Status", "string", "", "The status of the namespace", 0), AGE_COLUMN];

const NODE_ADDRESSES_DOC: &str = "List of addresses reachable to the node. Queried from cloud provider, if available. More info: https://kubernetes.io/docs/reference/node/node-status/#addresses Note: This field is declared as mergeable, but the merge key is not sufficiently unique, which can cause data corruption when it is merged. Callers should instead use a full-replacement patch. See https://pr.k8s.io/79391 for an example. Consumers should assume that addresses can change during the lifetime of a Node. However, there are some exceptions where this may not be possible, such as Pods that inherit a Node's address in its own status or consumers of the downward API (status.hostIP).";

const NODE_COLUMNS: &[ColumnSpec] = &[
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

const EVENT_COLUMNS: &[ColumnSpec] = &[
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

const LEASE_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    (
        "Holder",
        "string",
        "",
        "holderIdentity contains the identity of the holder of a current lease. If Coordinated Leader Election is used, the holder identity must be equal to the elected LeaseCandidate.metadata.name field.",
        0,
    ),
    AGE_COLUMN,
];

const CONFIG_MAP_COLUMNS: &[ColumnSpec] = &[
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

const SECRET_COLUMNS: &[ColumnSpec] = &[
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

const SERVICE_ACCOUNT_COLUMNS: &[ColumnSpec] = &[
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

const SERVICE_COLUMNS: &[ColumnSpec] = &[
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

const POD_DISRUPTION_BUDGET_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    ("Min Available", "string", "", "The minimum number of pods that must be available.", 0),
    ("Max Unavailable", "string", "", "The maximum number of pods that may be unavailable.", 0),
    ("Allowed Disruptions", "integer", "", "Calculated number of pods that may be disrupted at this time.", 0),
    AGE_COLUMN,
];

// The printers describe roleRef with the rbac/v1beta1 docs, which lack v1's "This field is immutable."
const ROLE_BINDING_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    (
        "Role",
        "string",
        "",
        "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
        0,
    ),
    AGE_COLUMN,
    ("Users", "string", "", "Users in the roleBinding", 1),
    ("Groups", "string", "", "Groups in the roleBinding", 1),
    ("ServiceAccounts", "string", "", "ServiceAccounts in the roleBinding", 1),
];

const CLUSTER_ROLE_BINDING_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    (
        "Role",
        "string",
        "",
        "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot be resolved, the Authorizer must return an error.",
        0,
    ),
    AGE_COLUMN,
    ("Users", "string", "", "Users in the clusterRoleBinding", 1),
    ("Groups", "string", "", "Groups in the clusterRoleBinding", 1),
    ("ServiceAccounts", "string", "", "ServiceAccounts in the clusterRoleBinding", 1),
];

// rest.defaultTableConvertor: what kube-apiserver uses for resources without a printer, the CRD resource included.
const DEFAULT_COLUMNS: &[ColumnSpec] = &[NAME_COLUMN, ("Created At", "date", "", CREATION_TIMESTAMP_DOC, 0)];

fn column(name: &str, kind: &str, format: &str, description: &str, priority: i64) -> Value {
    json!({"name": name, "type": kind, "format": format, "description": description, "priority": priority})
}

fn spec_column(&(name, kind, format, description, priority): &ColumnSpec) -> Value {
    column(name, kind, format, description, priority)
}

#[derive(Clone, Copy)]
enum Builtin {
    Pod,
    Deployment,
    ReplicaSet,
    Namespace,
    Node,
    CoreEvent,
    // events.k8s.io/v1 shares core Event's storage and printer upstream, under different field names.
    EventsEvent,
    Lease,
    ConfigMap,
    Secret,
    ServiceAccount,
    Service,
    PodDisruptionBudget,
    RoleBinding,
    ClusterRoleBinding,
}

enum Printer {
    Builtin(Builtin),
    Custom(Vec<CustomColumn>),
    Default,
}

struct Row {
    cells: Vec<Value>,
    conditions: Option<Value>,
}

impl Row {
    fn new(cells: Vec<Value>) -> Self {
        Row { cells, conditions: None }
    }
}

impl Printer {
    fn select(api_version: &str, kind: &str, custom_columns: Option<&Value>) -> Self {
        // A custom resource may reuse a built-in kind name ("Pod" in some other group), so CRD columns win.
        if let Some(columns) = custom_columns {
            return Printer::Custom(CustomColumn::from_crd(columns));
        }
        let group = api_version.rsplit_once('/').map_or("", |(group, _)| group);
        let builtin = match (group, kind) {
            ("", "Pod") => Builtin::Pod,
            ("apps", "Deployment") => Builtin::Deployment,
            ("apps", "ReplicaSet") => Builtin::ReplicaSet,
            ("", "Namespace") => Builtin::Namespace,
            ("", "Node") => Builtin::Node,
            ("", "Event") => Builtin::CoreEvent,
            ("events.k8s.io", "Event") => Builtin::EventsEvent,
            ("coordination.k8s.io", "Lease") => Builtin::Lease,
            ("", "ConfigMap") => Builtin::ConfigMap,
            ("", "Secret") => Builtin::Secret,
            ("", "ServiceAccount") => Builtin::ServiceAccount,
            ("", "Service") => Builtin::Service,
            ("policy", "PodDisruptionBudget") => Builtin::PodDisruptionBudget,
            ("rbac.authorization.k8s.io", "RoleBinding") => Builtin::RoleBinding,
            ("rbac.authorization.k8s.io", "ClusterRoleBinding") => Builtin::ClusterRoleBinding,
            _ => return Printer::Default,
        };
        Printer::Builtin(builtin)
    }

    fn columns(&self) -> Vec<Value> {
        let specs = match self {
            Printer::Custom(columns) => {
                let mut out = vec![spec_column(&NAME_COLUMN)];
                out.extend(columns.iter().map(|c| column(&c.name, &c.kind, &c.format, &c.description, c.priority)));
                return out;
            }
            Printer::Default => DEFAULT_COLUMNS,
            Printer::Builtin(b) => match b {
                Builtin::Pod => POD_COLUMNS,
                Builtin::Deployment => DEPLOYMENT_COLUMNS,
                Builtin::ReplicaSet => REPLICA_SET_COLUMNS,
                Builtin::Namespace => NAMESPACE_COLUMNS,
                Builtin::Node => NODE_COLUMNS,
                Builtin::CoreEvent | Builtin::EventsEvent => EVENT_COLUMNS,
                Builtin::Lease => LEASE_COLUMNS,
                Builtin::ConfigMap => CONFIG_MAP_COLUMNS,
                Builtin::Secret => SECRET_COLUMNS,
                Builtin::ServiceAccount => SERVICE_ACCOUNT_COLUMNS,
                Builtin::Service => SERVICE_COLUMNS,
                Builtin::PodDisruptionBudget => POD_DISRUPTION_BUDGET_COLUMNS,
                Builtin::RoleBinding => ROLE_BINDING_COLUMNS,
                Builtin::ClusterRoleBinding => CLUSTER_ROLE_BINDING_COLUMNS,
            },
        };
        specs.iter().map(spec_column).collect()
    }

    fn row(&self, obj: &Value, now: Timestamp) -> Row {
        let name = Value::from(text(obj, "/metadata/name"));
        let age_cell = || Value::from(age(now, timestamp(obj, "/metadata/creationTimestamp")));
        match self {
            Printer::Custom(columns) => {
                let mut cells = vec![name];
                cells.extend(columns.iter().map(|c| c.cell(obj, now)));
                Row::new(cells)
            }
            Printer::Default => {
                // Upstream formats the zero time when creationTimestamp is unset, rather than leaving it blank.
                let created = timestamp(obj, "/metadata/creationTimestamp").map_or_else(
                    || "0001-01-01T00:00:00Z".to_string(),
                    |t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
                );
                Row::new(vec![name, created.into()])
            }
            Printer::Builtin(b) => match b {
                Builtin::Pod => pod_row(obj, now),
                Builtin::Deployment => deployment_row(obj, now),
                Builtin::ReplicaSet => replica_set_row(obj, now),
                Builtin::Namespace => Row::new(vec![name, text(obj, "/status/phase").into(), age_cell()]),
                Builtin::Node => node_row(obj, now),
                Builtin::CoreEvent => event_row(obj, now, &CORE_EVENT_FIELDS),
                Builtin::EventsEvent => event_row(obj, now, &EVENTS_V1_FIELDS),
                Builtin::Lease => Row::new(vec![name, text(obj, "/spec/holderIdentity").into(), age_cell()]),
                Builtin::ConfigMap => {
                    let data = entries(obj, "/data") + entries(obj, "/binaryData");
                    Row::new(vec![name, data.into(), age_cell()])
                }
                Builtin::Secret => {
                    Row::new(vec![name, text(obj, "/type").into(), entries(obj, "/data").into(), age_cell()])
                }
                Builtin::ServiceAccount => Row::new(vec![name, items(obj, "/secrets").len().into(), age_cell()]),
                Builtin::Service => service_row(obj, now),
                Builtin::PodDisruptionBudget => {
                    let bound = |pointer: &str| match obj.pointer(pointer) {
                        Some(Value::Number(n)) => Value::from(n.to_string()),
                        Some(Value::String(s)) => Value::from(s.as_str()),
                        _ => Value::from("N/A"),
                    };
                    let allowed = int(obj, "/status/disruptionsAllowed").unwrap_or(0);
                    Row::new(vec![
                        name,
                        bound("/spec/minAvailable"),
                        bound("/spec/maxUnavailable"),
                        allowed.into(),
                        age_cell(),
                    ])
                }
                Builtin::RoleBinding | Builtin::ClusterRoleBinding => binding_row(obj, now),
            },
        }
    }
}

// ---- Service (printService, makePortString, getServiceExternalIP)

fn service_row(obj: &Value, now: Timestamp) -> Row {
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

// ---- RoleBinding and ClusterRoleBinding (printRoleBinding, rbac.SubjectsStrings)

fn binding_row(obj: &Value, now: Timestamp) -> Row {
    let (mut users, mut groups, mut service_accounts) = (Vec::new(), Vec::new(), Vec::new());
    for subject in items(obj, "/subjects") {
        match text(subject, "/kind") {
            "ServiceAccount" => {
                service_accounts.push(format!("{}/{}", text(subject, "/namespace"), text(subject, "/name")))
            }
            "User" => users.push(text(subject, "/name").to_string()),
            "Group" => groups.push(text(subject, "/name").to_string()),
            _ => {}
        }
    }
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        format!("{}/{}", text(obj, "/roleRef/kind"), text(obj, "/roleRef/name")).into(),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
        users.join(", ").into(),
        groups.join(", ").into(),
        service_accounts.join(", ").into(),
    ])
}

fn row_object(api_version: &str, kind: &str, obj: &Value, include_object: &str) -> Value {
    match include_object {
        "None" => Value::Null,
        "Object" => {
            // Upstream converts each item to the served version, which stamps apiVersion/kind; stored list items
            // often lack them, and clients decoding the embedded object need them.
            let mut full = obj.clone();
            if let Some(map) = full.as_object_mut() {
                map.entry("apiVersion").or_insert_with(|| api_version.into());
                map.entry("kind").or_insert_with(|| kind.into());
            }
            full
        }
        _ => json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": obj.get("metadata").cloned().unwrap_or_else(|| json!({})),
        }),
    }
}

fn table_list_meta(list_metadata: &Value) -> Value {
    let mut meta = Map::new();
    for key in ["resourceVersion", "continue"] {
        if let Some(value) = list_metadata.get(key).and_then(Value::as_str).filter(|s| !s.is_empty()) {
            meta.insert(key.into(), value.into());
        }
    }
    if let Some(count) = list_metadata.get("remainingItemCount").filter(|v| v.is_number()) {
        meta.insert("remainingItemCount".into(), count.clone());
    }
    Value::Object(meta)
}

// ---- field access: absent, null and mistyped fields read as Go's zero values, as the typed upstream code sees them.

fn text<'a>(obj: &'a Value, pointer: &str) -> &'a str {
    obj.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

fn int(obj: &Value, pointer: &str) -> Option<i64> {
    let value = obj.pointer(pointer)?;
    value.as_i64().or_else(|| value.as_f64().map(|f| f as i64))
}

fn flag(obj: &Value, pointer: &str) -> bool {
    obj.pointer(pointer).and_then(Value::as_bool).unwrap_or(false)
}

fn items<'a>(obj: &'a Value, pointer: &str) -> &'a [Value] {
    obj.pointer(pointer).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn entries(obj: &Value, pointer: &str) -> usize {
    obj.pointer(pointer).and_then(Value::as_object).map_or(0, Map::len)
}

/// A non-null object at `pointer`: the JSON form of a Go pointer-to-struct being non-nil.
fn present<'a>(obj: &'a Value, pointer: &str) -> Option<&'a Value> {
    obj.pointer(pointer).filter(|v| v.is_object())
}

fn timestamp(obj: &Value, pointer: &str) -> Option<Timestamp> {
    obj.pointer(pointer).and_then(Value::as_str).and_then(|s| s.parse().ok())
}

/// translateTimestampSince: "<unknown>" for the zero (here: absent or unparsable) time.
fn age(now: Timestamp, then: Option<Timestamp>) -> String {
    then.map_or_else(|| "<unknown>".into(), |t| human_duration(now.duration_since(t)))
}

fn or_none(s: &str) -> Value {
    if s.is_empty() { "<none>".into() } else { s.into() }
}

/// layoutContainerCells: comma-joined container names and images of a pod template.
fn container_cells(obj: &Value, pointer: &str) -> (Value, Value) {
    let containers = items(obj, pointer);
    let names: Vec<&str> = containers.iter().map(|c| text(c, "/name")).collect();
    let images: Vec<&str> = containers.iter().map(|c| text(c, "/image")).collect();
    (names.join(",").into(), images.join(",").into())
}

// ---- Pod

fn pod_row(pod: &Value, now: Timestamp) -> Row {
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

// ---- workloads

fn deployment_row(obj: &Value, now: Timestamp) -> Row {
    // Defaulting sets spec.replicas to 1 when omitted; upstream prints the defaulted object.
    let desired = int(obj, "/spec/replicas").unwrap_or(1);
    let ready = int(obj, "/status/readyReplicas").unwrap_or(0);
    let (containers, images) = container_cells(obj, "/spec/template/spec/containers");
    let selector = label_selector(obj.pointer("/spec/selector")).unwrap_or_else(|()| "<invalid>".into());
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        format!("{ready}/{desired}").into(),
        int(obj, "/status/updatedReplicas").unwrap_or(0).into(),
        int(obj, "/status/availableReplicas").unwrap_or(0).into(),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
        containers,
        images,
        selector.into(),
    ])
}

fn replica_set_row(obj: &Value, now: Timestamp) -> Row {
    let (containers, images) = container_cells(obj, "/spec/template/spec/containers");
    // metav1.FormatLabelSelector, which (unlike the Deployment printer) spells out the empty and broken cases.
    let selector = match label_selector(obj.pointer("/spec/selector")) {
        Ok(s) if s.is_empty() => "<none>".to_string(),
        Ok(s) => s,
        Err(()) => "<error>".to_string(),
    };
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        int(obj, "/spec/replicas").unwrap_or(1).into(),
        int(obj, "/status/replicas").unwrap_or(0).into(),
        int(obj, "/status/readyReplicas").unwrap_or(0).into(),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
        containers,
        images,
        selector.into(),
    ])
}

/// metav1.LabelSelectorAsSelector(...).String(): requirements sorted by key, values of set operators sorted.
/// Err for selectors upstream refuses to convert (unknown operator, wrong value count, invalid key or value).
fn label_selector(selector: Option<&Value>) -> Result<String, ()> {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return Ok(String::new());
    };
    let mut requirements: Vec<(&str, String)> = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in labels {
            let value = value.as_str().ok_or(())?;
            if !valid_label_key(key) || !valid_label_value(value) {
                return Err(());
            }
            requirements.push((key, format!("{key}={value}")));
        }
    }
    for expr in selector.get("matchExpressions").and_then(Value::as_array).map_or(&[][..], Vec::as_slice) {
        let key = text(expr, "/key");
        let mut values = Vec::new();
        for value in items(expr, "/values") {
            let value = value.as_str().ok_or(())?;
            if !valid_label_value(value) {
                return Err(());
            }
            values.push(value);
        }
        if !valid_label_key(key) {
            return Err(());
        }
        values.sort_unstable();
        let rendered = match (text(expr, "/operator"), values.is_empty()) {
            ("In", false) => format!("{key} in ({})", values.join(",")),
            ("NotIn", false) => format!("{key} notin ({})", values.join(",")),
            ("Exists", true) => key.to_string(),
            ("DoesNotExist", true) => format!("!{key}"),
            _ => return Err(()),
        };
        requirements.push((key, rendered));
    }
    requirements.sort_by(|a, b| a.0.cmp(b.0));
    Ok(requirements.into_iter().map(|(_, r)| r).collect::<Vec<_>>().join(","))
}

/// A qualified name, optionally prefixed by a DNS subdomain and '/', as validation.IsQualifiedName.
fn valid_label_key(key: &str) -> bool {
    let (prefix, name) = match key.rsplit_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|label| {
                !label.is_empty()
                    && label.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !label.starts_with('-')
                    && !label.ends_with('-')
            })
    });
    prefix_ok && !name.is_empty() && valid_label_value(name)
}

/// Empty, or up to 63 alphanumerics with '-', '_', '.' inside, as validation.IsValidLabelValue.
fn valid_label_value(value: &str) -> bool {
    let bytes = value.as_bytes();
    match (bytes.first(), bytes.last()) {
        (None, _) | (_, None) => true,
        (Some(first), Some(last)) => {
            bytes.len() <= 63
                && first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes.iter().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
    }
}

// ---- Node

fn node_row(node: &Value, now: Timestamp) -> Row {
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

// ---- custom resources

/// One additionalPrinterColumn. `path` is None when the JSONPath is outside the supported subset (or invalid):
/// the column is still listed, with empty cells, rather than hiding the columns after it as upstream does.
struct CustomColumn {
    name: String,
    kind: String,
    format: String,
    description: String,
    priority: i64,
    path: Option<Vec<Step>>,
}

impl CustomColumn {
    fn from_crd(columns: &Value) -> Vec<CustomColumn> {
        let defined = columns.as_array().map_or(&[][..], Vec::as_slice);
        if defined.is_empty() {
            // apiextensions serves this column when a CRD version declares none.
            return vec![CustomColumn {
                name: "Age".into(),
                kind: "date".into(),
                format: String::new(),
                description: CREATION_TIMESTAMP_DOC.into(),
                priority: 0,
                path: parse_json_path(".metadata.creationTimestamp"),
            }];
        }
        defined
            .iter()
            .map(|c| {
                let json_path = text(c, "/jsonPath");
                let description = match text(c, "/description") {
                    "" => format!("Custom resource definition column (in JSONPath format): {json_path}"),
                    d => d.to_string(),
                };
                CustomColumn {
                    name: text(c, "/name").into(),
                    kind: text(c, "/type").into(),
                    format: text(c, "/format").into(),
                    description,
                    priority: int(c, "/priority").unwrap_or(0),
                    path: parse_json_path(json_path),
                }
            })
            .collect()
    }

    /// The tableconvertor's cell: the first JSONPath match, shaped by the column type; null when nothing matches.
    fn cell(&self, obj: &Value, now: Timestamp) -> Value {
        let Some(path) = &self.path else { return Value::Null };
        let Some(value) = eval_json_path(path, obj).ok().and_then(|found| found.into_iter().next()) else {
            return Value::Null;
        };
        match (self.kind.as_str(), value) {
            (_, Value::Null) => Value::Null,
            ("string", Value::String(s)) => s.as_str().into(),
            ("string", Value::Number(n)) => go_number_text(n).into(),
            ("string", Value::Bool(b)) => b.to_string().into(),
            ("string", other) => serde_json::to_string(other).map_or(Value::Null, Value::from),
            ("integer", Value::Number(n)) => {
                n.as_i64().or_else(|| n.as_f64().map(|f| f as i64)).map_or(Value::Null, Value::from)
            }
            ("number", Value::Number(n)) => n.as_f64().map_or(Value::Null, Value::from),
            ("boolean", Value::Bool(b)) => Value::Bool(*b),
            ("date", Value::String(s)) => match s.as_str() {
                "" | "null" => "<unknown>".into(),
                s => s.parse::<Timestamp>().map_or_else(|_| "<invalid>".into(), |t| age(now, Some(t)).into()),
            },
            _ => Value::Null,
        }
    }
}

/// Go's `fmt.Print` of a decoded JSON number: integers as-is, floats as `%v` (shortest digits, exponent form
/// outside 1e-4 <= |f| < 1e6, e.g. "1.5e+06").
fn go_number_text(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let Some(f) = n.as_f64() else { return n.to_string() };
    let scientific = format!("{f:e}");
    let Some((mantissa, exponent)) = scientific.split_once('e') else { return f.to_string() };
    let Ok(exponent) = exponent.parse::<i32>() else { return f.to_string() };
    if (-4..6).contains(&exponent) {
        return f.to_string();
    }
    let sign = if exponent < 0 { '-' } else { '+' };
    format!("{mantissa}e{sign}{:02}", exponent.unsigned_abs())
}

// ---- a JSONPath subset: what additionalPrinterColumns use in practice (.a.b, ['a.b'], [n], [*], [?(@.x=="y")]).

#[derive(Debug, Clone, PartialEq)]
enum Step {
    Field(String),
    Index(i64),
    All,
    Filter(Box<Filter>),
}

#[derive(Debug, Clone, PartialEq)]
struct Filter {
    left: Vec<Step>,
    // None: an existence test, `[?(@.x)]`.
    compare: Option<(Op, Operand)>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Op {
    Eq,
    Ne,
    Lt,
    Gt,
    Le,
    Ge,
}

#[derive(Debug, Clone, PartialEq)]
enum Operand {
    Literal(Value),
    Path(Vec<Step>),
}

fn parse_json_path(path: &str) -> Option<Vec<Step>> {
    let path = path.trim();
    // Users sometimes paste kubectl's `{...}` template form or a leading `$`.
    let path = path.strip_prefix('{').and_then(|p| p.strip_suffix('}')).unwrap_or(path);
    let path = path.strip_prefix('$').unwrap_or(path);
    if path == "." {
        return Some(Vec::new());
    }
    let (steps, rest) = parse_steps(path)?;
    rest.is_empty().then_some(steps)
}

/// Parses steps until the input ends or something that is not a step starts; returns the steps and the rest.
fn parse_steps(mut s: &str) -> Option<(Vec<Step>, &str)> {
    let mut steps = Vec::new();
    loop {
        if let Some(rest) = s.strip_prefix('.') {
            if rest.starts_with('.') {
                return None; // recursive descent: not supported
            }
            let mut name = String::new();
            let mut end = rest.len();
            let mut chars = rest.char_indices();
            while let Some((i, c)) = chars.next() {
                if c == '\\' {
                    // A backslash escapes the next character, as in `.metadata.labels.app\.kubernetes\.io/name`.
                    name.push(chars.next()?.1);
                } else if matches!(c, '.' | '[' | ']' | ',' | '$' | '@' | '{' | '}' | '(' | ')') || c.is_whitespace() {
                    end = i;
                    break;
                } else {
                    name.push(c);
                }
            }
            if name.is_empty() {
                return None;
            }
            steps.push(if name == "*" { Step::All } else { Step::Field(name) });
            s = &rest[end..];
        } else if let Some(rest) = s.strip_prefix("[?(") {
            let close = filter_end(rest)?;
            steps.push(Step::Filter(Box::new(parse_filter(&rest[..close])?)));
            s = rest[close..].strip_prefix(")]")?;
        } else if let Some(rest) = s.strip_prefix('[') {
            let close = bracket_end(rest)?;
            let inner = rest[..close].trim();
            steps.push(if inner == "*" {
                Step::All
            } else if let Some(key) = unquote(inner) {
                Step::Field(key)
            } else {
                Step::Index(inner.parse().ok()?)
            });
            s = &rest[close + 1..];
        } else {
            return Some((steps, s));
        }
    }
}

/// Index of the `)` that closes a `[?(` filter (followed by `]`), skipping quoted text. The first such `)]` ends the
/// filter, so filters cannot nest (as upstream), which also keeps parsing from recursing more than one level.
fn filter_end(s: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut escaped = false;
    for (i, c) in s.char_indices() {
        match quote {
            Some(q) => {
                if escaped {
                    escaped = false;
                } else if c == '\\' {
                    escaped = true;
                } else if c == q {
                    quote = None;
                }
            }
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == ')' && s[i + 1..].starts_with(']') => return Some(i),
            None => {}
        }
    }
    None
}

/// Index of the `]` closing a bracket step, skipping quoted text.
fn bracket_end(s: &str) -> Option<usize> {
    let mut quote: Option<char> = None;
    for (i, c) in s.char_indices() {
        match quote {
            Some(q) if c == q => quote = None,
            Some(_) => {}
            None if c == '"' || c == '\'' => quote = Some(c),
            None if c == ']' => return Some(i),
            None => {}
        }
    }
    None
}

fn unquote(s: &str) -> Option<String> {
    let quote = s.chars().next().filter(|c| *c == '"' || *c == '\'')?;
    let body = s.strip_prefix(quote)?.strip_suffix(quote)?;
    let mut out = String::with_capacity(body.len());
    let mut chars = body.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            out.push(chars.next()?);
        } else {
            out.push(c);
        }
    }
    Some(out)
}

fn parse_filter(expr: &str) -> Option<Filter> {
    // Like upstream: the left side runs up to the first operator character, the operator is the run of them.
    let Some(op_start) = expr.find(['!', '<', '>', '=']) else {
        return Some(Filter { left: parse_current_path(expr.trim())?, compare: None });
    };
    let op_len = expr[op_start..].find(|c: char| !matches!(c, '!' | '<' | '>' | '=')).unwrap_or(expr.len() - op_start);
    let op = match &expr[op_start..op_start + op_len] {
        "==" => Op::Eq,
        "!=" => Op::Ne,
        "<" => Op::Lt,
        ">" => Op::Gt,
        "<=" => Op::Le,
        ">=" => Op::Ge,
        _ => return None,
    };
    let left = parse_current_path(expr[..op_start].trim())?;
    let right = expr[op_start + op_len..].trim();
    let operand = if right.starts_with('@') {
        Operand::Path(parse_current_path(right)?)
    } else if let Some(s) = unquote(right) {
        Operand::Literal(Value::String(s))
    } else {
        // Numbers and true/false; JSON's grammar is close enough to upstream's literals.
        Operand::Literal(serde_json::from_str(right).ok().filter(|v: &Value| v.is_number() || v.is_boolean())?)
    };
    Some(Filter { left, compare: Some((op, operand)) })
}

fn parse_current_path(s: &str) -> Option<Vec<Step>> {
    let (steps, rest) = parse_steps(s.strip_prefix('@')?)?;
    rest.is_empty().then_some(steps)
}

/// All matches of `steps` under `root`, in document order. Missing keys yield no match (upstream's
/// AllowMissingKeys); Err for what upstream reports as an error (filtering a non-list, mixed-type comparisons),
/// which the caller also shows as an empty cell.
fn eval_json_path<'a>(steps: &[Step], root: &'a Value) -> Result<Vec<&'a Value>, ()> {
    let mut current = vec![root];
    for step in steps {
        let mut next = Vec::new();
        for value in current {
            if value.is_null() {
                continue;
            }
            match step {
                Step::Field(name) => next.extend(value.as_object().and_then(|m| m.get(name))),
                Step::Index(i) => {
                    let list = value.as_array().ok_or(())?;
                    let index = if *i < 0 { i + list.len() as i64 } else { *i };
                    let element = usize::try_from(index).ok().and_then(|i| list.get(i)).ok_or(())?;
                    next.push(element);
                }
                Step::All => match value {
                    Value::Array(list) => next.extend(list),
                    Value::Object(map) => next.extend(map.values()),
                    _ => return Err(()),
                },
                Step::Filter(filter) => {
                    for element in value.as_array().ok_or(())? {
                        if filter.matches(element)? {
                            next.push(element);
                        }
                    }
                }
            }
        }
        current = next;
    }
    Ok(current)
}

impl Filter {
    fn matches(&self, element: &Value) -> Result<bool, ()> {
        let lefts = eval_json_path(&self.left, element)?;
        let Some((op, operand)) = &self.compare else { return Ok(!lefts.is_empty()) };
        let right = match operand {
            Operand::Literal(v) => v,
            Operand::Path(path) => {
                let rights = eval_json_path(path, element)?;
                match rights.as_slice() {
                    [] => return Ok(false),
                    [one] => *one,
                    _ => return Err(()),
                }
            }
        };
        let left = match lefts.as_slice() {
            [] => return Ok(false),
            [one] => *one,
            _ => return Err(()),
        };
        let ordering = match (left, right) {
            (Value::String(a), Value::String(b)) => a.cmp(b),
            (Value::Number(a), Value::Number(b)) => {
                let (a, b) = (a.as_f64().ok_or(())?, b.as_f64().ok_or(())?);
                a.partial_cmp(&b).ok_or(())?
            }
            (Value::Bool(a), Value::Bool(b)) if matches!(op, Op::Eq | Op::Ne) => a.cmp(b),
            _ => return Err(()),
        };
        Ok(match op {
            Op::Eq => ordering.is_eq(),
            Op::Ne => ordering.is_ne(),
            Op::Lt => ordering.is_lt(),
            Op::Gt => ordering.is_gt(),
            Op::Le => ordering.is_le(),
            Op::Ge => ordering.is_ge(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn now() -> Timestamp {
        "2026-03-01T12:00:00Z".parse().unwrap()
    }

    /// An RFC 3339 time `secs` seconds before `now()`.
    fn ago(secs: i64) -> String {
        now().checked_sub(SignedDuration::from_secs(secs)).unwrap().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
    }

    fn table(api_version: &str, kind: &str, objects: &[Value]) -> Value {
        render(api_version, kind, objects, now(), "Metadata", json!({}), None)
    }

    /// `[[name, priority], ...]` of a table's columns.
    fn columns(table: &Value) -> Value {
        table["columnDefinitions"].as_array().unwrap().iter().map(|c| json!([c["name"], c["priority"]])).collect()
    }

    fn cells(table: &Value, row: usize) -> Value {
        table["rows"][row]["cells"].clone()
    }

    /// The cells of the only row of `kind` rendered from `object`.
    fn row(api_version: &str, kind: &str, object: Value) -> Value {
        cells(&table(api_version, kind, &[object]), 0)
    }

    fn pod(status: Value) -> Value {
        json!({
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": "web-abc12", "namespace": "default", "creationTimestamp": ago(300)},
            "spec": {"nodeName": "node-1", "containers": [{"name": "web", "image": "nginx:1.27"}]},
            "status": status,
        })
    }

    fn running_status() -> Value {
        json!({
            "phase": "Running",
            "podIP": "10.0.0.7",
            "conditions": [{"type": "Ready", "status": "True"}],
            "containerStatuses": [
                {"name": "web", "ready": true, "restartCount": 0, "state": {"running": {"startedAt": ago(290)}}},
            ],
        })
    }

    #[test]
    fn human_duration_follows_upstream_ranges() {
        let cases: &[(i64, &str)] = &[
            (-3, "<invalid>"),
            (-2, "<invalid>"),
            (-1, "0s"),
            (0, "0s"),
            (45, "45s"),
            (119, "119s"),
            (120, "2m"),
            (182, "3m2s"),
            (599, "9m59s"),
            (600, "10m"),
            (179 * 60 + 59, "179m"),
            (3 * 3600, "3h"),
            (5 * 3600 + 3 * 60 + 7, "5h3m"),
            (8 * 3600, "8h"),
            (47 * 3600 + 59 * 60, "47h"),
            (48 * 3600, "2d"),
            (51 * 3600, "2d3h"),
            (7 * 86400 + 23 * 3600, "7d23h"),
            (8 * 86400, "8d"),
            (25 * 86400 + 5 * 3600, "25d"),
            (729 * 86400, "729d"),
            (730 * 86400, "2y"),
            (740 * 86400, "2y10d"),
            (8 * 365 * 86400 - 86400, "7y364d"),
            (8 * 365 * 86400, "8y"),
            (30 * 365 * 86400, "30y"),
        ];
        for &(secs, want) in cases {
            assert_eq!(human_duration(SignedDuration::from_secs(secs)), want, "{secs}s");
        }
        // Sub-second parts truncate toward zero, as Go's int(d.Seconds()).
        assert_eq!(human_duration(SignedDuration::from_millis(-1_999)), "0s");
        assert_eq!(human_duration(SignedDuration::from_millis(1_999)), "1s");
    }

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
    fn malformed_objects_render_without_panicking() {
        let junk = [
            json!({}),
            json!(null),
            json!(7),
            json!({"status": {"containerStatuses": "oops", "initContainerStatuses": [null, 3]}}),
        ];
        for (api_version, kind) in [
            ("v1", "Pod"),
            ("apps/v1", "Deployment"),
            ("apps/v1", "ReplicaSet"),
            ("v1", "Node"),
            ("v1", "Event"),
            ("events.k8s.io/v1", "Event"),
            ("x/v1", "X"),
        ] {
            let t = table(api_version, kind, &junk);
            assert_eq!(t["rows"].as_array().unwrap().len(), junk.len(), "{kind}");
        }
        assert_eq!(
            row("v1", "Pod", json!({})),
            json!(["", "0/0", "", "0", "<unknown>", "<none>", "<none>", "<none>", "<none>"])
        );
        let mut huge = pod(running_status());
        huge["status"]["containerStatuses"][0]["restartCount"] = json!(i64::MAX);
        huge["status"]["containerStatuses"] =
            json!([huge["status"]["containerStatuses"][0], huge["status"]["containerStatuses"][0]]);
        assert_eq!(row("v1", "Pod", huge)[3], i64::MAX.to_string());
    }

    fn deployment() -> Value {
        json!({
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web", "creationTimestamp": ago(3 * 86400 + 4 * 3600)},
            "spec": {
                "replicas": 3,
                "selector": {
                    "matchLabels": {"app": "web", "tier": "front"},
                    "matchExpressions": [{"key": "env", "operator": "In", "values": ["prod", "canary"]}],
                },
                "template": {"spec": {"containers": [
                    {"name": "web", "image": "nginx:1.27"},
                    {"name": "log", "image": "fluent-bit:3"},
                ]}},
            },
            "status": {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 2, "availableReplicas": 2},
        })
    }

    #[test]
    fn deployment_columns_and_row() {
        let t = table("apps/v1", "Deployment", &[deployment()]);
        assert_eq!(
            columns(&t),
            json!([
                ["Name", 0],
                ["Ready", 0],
                ["Up-to-date", 0],
                ["Available", 0],
                ["Age", 0],
                ["Containers", 1],
                ["Images", 1],
                ["Selector", 1]
            ])
        );
        assert_eq!(
            cells(&t, 0),
            json!([
                "web",
                "2/3",
                3,
                2,
                "3d4h",
                "web,log",
                "nginx:1.27,fluent-bit:3",
                "app=web,env in (canary,prod),tier=front"
            ])
        );
        let mut defaulted = deployment();
        defaulted["spec"].as_object_mut().unwrap().remove("replicas");
        defaulted["status"] = json!({});
        let c = row("apps/v1", "Deployment", defaulted);
        assert_eq!(json!([c[1], c[2], c[3]]), json!(["0/1", 0, 0]));
    }

    #[test]
    fn replica_set_columns_and_row() {
        let mut rs = deployment();
        rs["kind"] = json!("ReplicaSet");
        rs["metadata"]["name"] = json!("web-7d9f8");
        rs["spec"]["selector"] = json!({});
        let t = table("apps/v1", "ReplicaSet", &[rs]);
        assert_eq!(
            columns(&t),
            json!([
                ["Name", 0],
                ["Desired", 0],
                ["Current", 0],
                ["Ready", 0],
                ["Age", 0],
                ["Containers", 1],
                ["Images", 1],
                ["Selector", 1]
            ])
        );
        assert_eq!(t["columnDefinitions"][1]["type"], "integer");
        assert_eq!(cells(&t, 0), json!(["web-7d9f8", 3, 3, 2, "3d4h", "web,log", "nginx:1.27,fluent-bit:3", "<none>"]));
    }

    #[test]
    fn label_selectors_render_like_upstream() {
        let render = |v: Value| label_selector(Some(&v));
        assert_eq!(render(json!({"matchLabels": {"b": "2", "a": "1"}})), Ok("a=1,b=2".into()));
        let expressions = json!({"matchExpressions": [
            {"key": "x", "operator": "DoesNotExist"},
            {"key": "k", "operator": "NotIn", "values": ["b", "a"]},
            {"key": "e", "operator": "Exists"},
        ]});
        assert_eq!(render(expressions), Ok("e,k notin (a,b),!x".into()));
        assert_eq!(label_selector(None), Ok(String::new()));
        assert_eq!(
            render(json!({"matchLabels": {"example.com/app": "a.b-c_d"}})),
            Ok("example.com/app=a.b-c_d".into())
        );
        assert_eq!(render(json!({"matchExpressions": [{"key": "k", "operator": "In", "values": []}]})), Err(()));
        assert_eq!(render(json!({"matchExpressions": [{"key": "k", "operator": "Exists", "values": ["v"]}]})), Err(()));
        assert_eq!(render(json!({"matchExpressions": [{"key": "k", "operator": "Near"}]})), Err(()));
        assert_eq!(render(json!({"matchLabels": {"bad key": "v"}})), Err(()));
        assert_eq!(render(json!({"matchLabels": {"Example.com/app": "v"}})), Err(()));
        assert_eq!(render(json!({"matchLabels": {"app": "-v"}})), Err(()));
        let mut d = deployment();
        d["spec"]["selector"] = json!({"matchExpressions": [{"key": "k", "operator": "Near"}]});
        assert_eq!(row("apps/v1", "Deployment", d.clone())[7], "<invalid>");
        assert_eq!(row("apps/v1", "ReplicaSet", d)[7], "<error>");
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
        let idle = json!({"metadata": meta("idle"), "spec": {"holderIdentity": null}});
        let t = table(
            "coordination.k8s.io/v1",
            "Lease",
            &[json!({"metadata": meta("wasmcm"), "spec": {"holderIdentity": "wasmcm-0_1234"}}), idle],
        );
        assert_eq!(columns(&t), json!([["Name", 0], ["Holder", 0], ["Age", 0]]));
        assert_eq!(cells(&t, 0), json!(["wasmcm", "wasmcm-0_1234", "120m"]));
        assert_eq!(cells(&t, 1)[1], "");

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

    #[test]
    fn crds_and_unknown_kinds_use_the_default_convertor() {
        let crd = json!({"metadata": {"name": "widgets.example.com", "creationTimestamp": "2026-02-27T08:30:00Z"}});
        let t = table("apiextensions.k8s.io/v1", "CustomResourceDefinition", &[crd]);
        assert_eq!(columns(&t), json!([["Name", 0], ["Created At", 0]]));
        assert_eq!(t["columnDefinitions"][1]["type"], "date");
        assert_eq!(cells(&t, 0), json!(["widgets.example.com", "2026-02-27T08:30:00Z"]));
        assert_eq!(
            row("apps/v1", "StatefulSet", json!({"metadata": {"name": "db"}})),
            json!(["db", "0001-01-01T00:00:00Z"])
        );
        // A core kind name in another group is not the core kind.
        assert_eq!(columns(&table("example.com/v1", "Pod", &[])), json!([["Name", 0], ["Created At", 0]]));
    }

    fn widget() -> Value {
        json!({
            "apiVersion": "example.com/v1",
            "kind": "Widget",
            "metadata": {
                "name": "gizmo",
                "creationTimestamp": ago(3600 * 5),
                "labels": {"app.kubernetes.io/name": "gizmo"},
            },
            "spec": {"replicas": 3, "size": 2.5, "paused": false, "ports": [80, 443], "owner": {"team": "a"}},
            "status": {
                "conditions": [
                    {"type": "Synced", "status": "True"},
                    {"type": "Ready", "status": "False", "lastTransitionTime": ago(40)},
                ],
                "observedAt": "not a time",
            },
        })
    }

    #[test]
    fn custom_resource_columns() {
        let columns = json!([
            {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
            {
                "name": "Ready",
                "type": "string",
                "jsonPath": ".status.conditions[?(@.type==\"Ready\")].status",
                "description": "Readiness",
            },
            {"name": "Since", "type": "date", "jsonPath": ".status.conditions[?(@.type=='Ready')].lastTransitionTime"},
            {"name": "Size", "type": "number", "jsonPath": ".spec.size", "priority": 1},
            {"name": "Paused", "type": "boolean", "jsonPath": ".spec.paused", "format": "flag"},
            {"name": "Port", "type": "integer", "jsonPath": ".spec.ports[-1]"},
            {"name": "Owner", "type": "string", "jsonPath": ".spec.owner"},
            {"name": "App", "type": "string", "jsonPath": ".metadata.labels['app.kubernetes.io/name']"},
            {"name": "Observed", "type": "date", "jsonPath": ".status.observedAt"},
            {"name": "Missing", "type": "string", "jsonPath": ".status.nothing.here"},
            {"name": "Mistyped", "type": "integer", "jsonPath": ".metadata.name"},
            {"name": "Unsupported", "type": "string", "jsonPath": "..name"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
        ]);
        let t = render("example.com/v1", "Widget", &[widget()], now(), "Metadata", json!({}), Some(&columns));
        let defs = &t["columnDefinitions"];
        assert_eq!(defs.as_array().unwrap().len(), 14);
        assert_eq!(defs[0], column("Name", "string", "name", NAME_DOC, 0));
        let replicas_doc = "Custom resource definition column (in JSONPath format): .spec.replicas";
        assert_eq!(defs[1], column("Replicas", "integer", "", replicas_doc, 0));
        assert_eq!(defs[2]["description"], "Readiness");
        assert_eq!(json!([defs[4]["priority"], defs[5]["format"]]), json!([1, "flag"]));
        assert_eq!(
            cells(&t, 0),
            json!([
                "gizmo",
                3,
                "False",
                "40s",
                2.5,
                false,
                443,
                "{\"team\":\"a\"}",
                "gizmo",
                "<invalid>",
                null,
                null,
                null,
                "5h"
            ])
        );
    }

    #[test]
    fn custom_resource_without_columns_gets_age() {
        let t = render("example.com/v1", "Widget", &[widget()], now(), "Metadata", json!({}), Some(&json!([])));
        assert_eq!(columns(&t), json!([["Name", 0], ["Age", 0]]));
        assert_eq!(t["columnDefinitions"][1]["type"], "date");
        assert_eq!(cells(&t, 0), json!(["gizmo", "5h"]));
    }

    #[test]
    fn json_path_subset() {
        let doc = widget();
        let eval = |path: &str| -> Option<Value> {
            let steps = parse_json_path(path)?;
            eval_json_path(&steps, &doc).ok().map(|found| found.into_iter().cloned().collect())
        };
        assert_eq!(eval(".spec.ports[*]"), Some(json!([80, 443])));
        assert_eq!(eval(".spec.owner.*"), Some(json!(["a"])));
        assert_eq!(eval("{.spec.ports[0]}"), Some(json!([80])));
        assert_eq!(eval("$.spec.replicas"), Some(json!([3])));
        assert_eq!(eval(".status.conditions[?(@.status != 'True')].type"), Some(json!(["Ready"])));
        assert_eq!(eval(".status.conditions[?(@.lastTransitionTime)].type"), Some(json!(["Ready"])));
        assert_eq!(eval(".spec.ports[?(@ > 100)]"), Some(json!([443])));
        assert_eq!(eval(".metadata.labels.app\\.kubernetes\\.io/name"), Some(json!(["gizmo"])));
        assert_eq!(eval(".spec.missing[0]"), Some(json!([])));
        assert_eq!(eval("."), Some(json!([doc.clone()])));
        // Upstream errors; the cell stays empty.
        assert_eq!(eval(".spec.ports[5]"), None);
        assert_eq!(eval(".spec.replicas[?(@.x==1)]"), None);
        assert_eq!(eval(".status.conditions[?(@.type==1)]"), None);
        // Outside the subset, or not JSONPath at all.
        assert_eq!(eval(".spec[0:1]"), None);
        assert_eq!(eval("..name"), None);
        assert_eq!(eval(".spec."), None);
        assert_eq!(eval(".spec.ports[0"), None);
        assert_eq!(eval(".status.conditions[?(@.x[?(@.y)])]"), None, "filters do not nest");
        let deep = format!(".a{}{}", "[?(@.b".repeat(10_000), ")]".repeat(10_000));
        assert_eq!(parse_json_path(&deep), None);
    }

    #[test]
    fn go_style_number_text() {
        let text = |v: Value| go_number_text(v.as_number().unwrap());
        assert_eq!(text(json!(3)), "3");
        assert_eq!(text(json!(2.5)), "2.5");
        assert_eq!(text(json!(3.0)), "3");
        assert_eq!(text(json!(123456.0)), "123456");
        assert_eq!(text(json!(1234567.0)), "1.234567e+06");
        assert_eq!(text(json!(0.0001)), "0.0001");
        assert_eq!(text(json!(0.00001)), "1e-05");
    }

    #[test]
    fn include_object_variants() {
        let p = json!({"metadata": {"name": "web-abc12", "namespace": "default", "uid": "u1"}, "spec": {}});
        let object = |mode: &str| {
            render("v1", "Pod", std::slice::from_ref(&p), now(), mode, json!({}), None)["rows"][0]["object"].clone()
        };
        assert_eq!(
            object("Metadata"),
            json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": {"name": "web-abc12", "namespace": "default", "uid": "u1"},
            })
        );
        assert_eq!(object(""), object("Metadata"));
        assert_eq!(object("None"), Value::Null);
        let full = object("Object");
        assert_eq!(
            full,
            json!({
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": "web-abc12", "namespace": "default", "uid": "u1"},
                "spec": {},
            })
        );
        // Objects that carry their own apiVersion/kind keep them.
        let custom = json!({"apiVersion": "example.com/v2", "kind": "Widget", "metadata": {"name": "w"}});
        let t = render(
            "example.com/v2",
            "Widget",
            std::slice::from_ref(&custom),
            now(),
            "Object",
            json!({}),
            Some(&json!([])),
        );
        assert_eq!(t["rows"][0]["object"], custom);
    }

    #[test]
    fn table_envelope_and_list_metadata() {
        let list_meta = json!({"resourceVersion": "42", "continue": "", "remainingItemCount": 7, "selfLink": "/x"});
        let t = render("v1", "Namespace", &[], now(), "Metadata", list_meta, None);
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(t["metadata"], json!({"resourceVersion": "42", "remainingItemCount": 7}));
        assert_eq!(t["rows"], json!([]));
        let t = render("v1", "Namespace", &[], now(), "Metadata", json!({"continue": "abc"}), None);
        assert_eq!(t["metadata"], json!({"continue": "abc"}));
        let t = render("v1", "Namespace", &[], now(), "Metadata", Value::Null, None);
        assert_eq!(t["metadata"], json!({}));
        for def in t["columnDefinitions"].as_array().unwrap() {
            for key in ["name", "type", "format", "description", "priority"] {
                assert!(def.get(key).is_some(), "{key} missing from {def}");
            }
        }
    }
}
