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
//!
//! The printers are split by API group, each file holding its kinds' column definitions next to their rows:
//! `core` (pods, nodes, services, events of both groups, ...), `apps` (deployments, replica sets), `coordination`
//! (leases), `policy` (disruption budgets), `workloads` (jobs, cron jobs, daemon sets, stateful sets, replication
//! controllers), `control_plane` (certificate signing requests, component statuses, API services), `rbac`
//! (bindings), `discovery` (endpoints and endpoint slices) and `custom` (custom resources' additionalPrinterColumns
//! and the JSONPath subset they use). This file is the shared machinery: `render`, each built-in kind's printer (named by its strategy),
//! column plumbing, the default convertor, `human_duration`, and the field accessors every printer reads JSON with.

mod apps;
mod control_plane;
mod coordination;
mod core;
mod custom;
mod discovery;
mod policy;
mod rbac;
#[cfg(test)]
mod tests;
mod workloads;

use jiff::{SignedDuration, Timestamp};
use serde_json::{Map, Value, json};

use custom::CustomColumn;

/// Renders `objects` (Kubernetes JSON, all of one kind) as a meta.k8s.io/v1 Table, as kube-apiserver's printers do.
/// `now` is the server's clock (for AGE columns). `include_object` follows the `includeObject` query parameter:
/// "None", "Object", or "Metadata" (the default: each row's `object` is a meta.k8s.io/v1 PartialObjectMetadata with
/// apiVersion/kind/metadata of the item). `list_metadata` is the list's metadata (resourceVersion, continue) to carry
/// over. `custom_columns` are a CRD's additionalPrinterColumns (JSON array, each
/// {name,type,jsonPath,description?,priority?,format?}) when serving a custom resource, else None.
///
/// Any `include_object` value other than "None" and "Object" is treated as "Metadata": kube-apiserver answers an
/// unknown value with 400 Bad Request, and that check belongs to the request handler, which can still report it.
pub(crate) fn render(
    api_version: &str,
    kind: &str,
    objects: &[Value],
    now: Timestamp,
    include_object: &str,
    list_metadata: Value,
    printer: Printer,
) -> Value {
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

/// A label map as `labels.Set.String()` writes it: `k=v` pairs sorted by key, joined by commas.
pub(crate) fn label_set_string(map: Option<&Value>) -> String {
    let mut pairs: Vec<String> = map
        .and_then(Value::as_object)
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}", v.as_str().unwrap_or_default()))
        .collect();
    pairs.sort();
    pairs.join(",")
}

/// `metav1.LabelSelectorAsSelector(selector).String()`, as a Scale's `status.selector` shows it;
/// Err for a selector upstream refuses to convert.
pub(crate) fn selector_string(selector: Option<&Value>) -> Result<String, ()> {
    apps::label_selector(selector)
}

/// kubectl's duration.HumanDuration as used in AGE columns ("0s", "45s", "3m2s", "10m", "5h3m", "2d3h", "25d",
/// "2y10d" ...). Port upstream's exact rules.
pub(crate) fn human_duration(d: SignedDuration) -> String {
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

type ColumnSpec = (&'static str, &'static str, &'static str, &'static str, i64);

const NAME_COLUMN: ColumnSpec = ("Name", "string", "name", NAME_DOC, 0);
const AGE_COLUMN: ColumnSpec = ("Age", "string", "", CREATION_TIMESTAMP_DOC, 0);

// rest.defaultTableConvertor: what kube-apiserver uses for resources without a printer, the CRD resource included.
const DEFAULT_COLUMNS: &[ColumnSpec] = &[NAME_COLUMN, ("Created At", "date", "", CREATION_TIMESTAMP_DOC, 0)];

fn column(name: &str, kind: &str, format: &str, description: &str, priority: i64) -> Value {
    json!({"name": name, "type": kind, "format": format, "description": description, "priority": priority})
}

fn spec_column(&(name, kind, format, description, priority): &ColumnSpec) -> Value {
    column(name, kind, format, description, priority)
}

/// Renders one object's cells for a built-in kind's columns.
type RowPrinter = fn(&Value, Timestamp) -> Row;

/// A built-in kind's printer, as kube-apiserver's printers.go has it: its columns and how to
/// print a row. The kind's `Strategy` names it.
#[derive(Debug)]
pub(crate) struct Builtin {
    columns: &'static [ColumnSpec],
    row: RowPrinter,
}

pub(crate) const POD: Builtin = Builtin { columns: core::POD_COLUMNS, row: core::pod_row };
pub(crate) const DEPLOYMENT: Builtin = Builtin { columns: apps::DEPLOYMENT_COLUMNS, row: apps::deployment_row };
pub(crate) const REPLICA_SET: Builtin = Builtin { columns: apps::REPLICA_SET_COLUMNS, row: apps::replica_set_row };
pub(crate) const NAMESPACE: Builtin = Builtin { columns: core::NAMESPACE_COLUMNS, row: core::namespace_row };
pub(crate) const NODE: Builtin = Builtin { columns: core::NODE_COLUMNS, row: core::node_row };
pub(crate) const EVENT: Builtin = Builtin { columns: core::EVENT_COLUMNS, row: core::core_event_row };
pub(crate) const EVENTS_V1_EVENT: Builtin = Builtin { columns: core::EVENT_COLUMNS, row: core::events_event_row };
pub(crate) const LEASE: Builtin = Builtin { columns: coordination::LEASE_COLUMNS, row: coordination::lease_row };
pub(crate) const CONFIG_MAP: Builtin = Builtin { columns: core::CONFIG_MAP_COLUMNS, row: core::config_map_row };
pub(crate) const SECRET: Builtin = Builtin { columns: core::SECRET_COLUMNS, row: core::secret_row };
pub(crate) const SERVICE_ACCOUNT: Builtin =
    Builtin { columns: core::SERVICE_ACCOUNT_COLUMNS, row: core::service_account_row };
pub(crate) const SERVICE: Builtin = Builtin { columns: core::SERVICE_COLUMNS, row: core::service_row };
pub(crate) const ENDPOINTS: Builtin = Builtin { columns: discovery::ENDPOINTS_COLUMNS, row: discovery::endpoints_row };
pub(crate) const ENDPOINT_SLICE: Builtin =
    Builtin { columns: discovery::ENDPOINT_SLICE_COLUMNS, row: discovery::endpoint_slice_row };
pub(crate) const POD_DISRUPTION_BUDGET: Builtin =
    Builtin { columns: policy::POD_DISRUPTION_BUDGET_COLUMNS, row: policy::pod_disruption_budget_row };
pub(crate) const CERTIFICATE_SIGNING_REQUEST: Builtin = Builtin {
    columns: control_plane::CERTIFICATE_SIGNING_REQUEST_COLUMNS,
    row: control_plane::certificate_signing_request_row,
};
pub(crate) const COMPONENT_STATUS: Builtin =
    Builtin { columns: control_plane::COMPONENT_STATUS_COLUMNS, row: control_plane::component_status_row };
pub(crate) const API_SERVICE: Builtin =
    Builtin { columns: control_plane::API_SERVICE_COLUMNS, row: control_plane::api_service_row };
pub(crate) const ROLE_BINDING: Builtin = Builtin { columns: rbac::ROLE_BINDING_COLUMNS, row: rbac::binding_row };
pub(crate) const CLUSTER_ROLE_BINDING: Builtin =
    Builtin { columns: rbac::CLUSTER_ROLE_BINDING_COLUMNS, row: rbac::binding_row };
pub(crate) const JOB: Builtin = Builtin { columns: workloads::JOB_COLUMNS, row: workloads::job_row };
pub(crate) const CRON_JOB: Builtin = Builtin { columns: workloads::CRON_JOB_COLUMNS, row: workloads::cron_job_row };
pub(crate) const DAEMON_SET: Builtin =
    Builtin { columns: workloads::DAEMON_SET_COLUMNS, row: workloads::daemon_set_row };
pub(crate) const STATEFUL_SET: Builtin =
    Builtin { columns: workloads::STATEFUL_SET_COLUMNS, row: workloads::stateful_set_row };
pub(crate) const REPLICATION_CONTROLLER: Builtin =
    Builtin { columns: workloads::REPLICATION_CONTROLLER_COLUMNS, row: workloads::replication_controller_row };

/// How a type's objects are printed.
pub(crate) enum Printer {
    Builtin(&'static Builtin),
    /// A custom resource's additionalPrinterColumns.
    Custom(Vec<CustomColumn>),
    /// `rest.defaultTableConvertor`: what kube-apiserver uses for resources without a printer.
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
    /// The printer of a type with the built-in printer `builtin` (its strategy's) or the CRD
    /// columns `custom_columns` (a custom resource's, which win: a custom resource may reuse a
    /// built-in kind's name).
    pub(crate) fn of(builtin: Option<&'static Builtin>, custom_columns: Option<&Value>) -> Self {
        match (custom_columns, builtin) {
            (Some(columns), _) => Printer::Custom(CustomColumn::from_crd(columns)),
            (None, Some(builtin)) => Printer::Builtin(builtin),
            (None, None) => Printer::Default,
        }
    }

    fn columns(&self) -> Vec<Value> {
        match self {
            Printer::Builtin(builtin) => builtin.columns.iter().map(spec_column).collect(),
            Printer::Custom(columns) => custom::columns(columns),
            Printer::Default => DEFAULT_COLUMNS.iter().map(spec_column).collect(),
        }
    }

    fn row(&self, obj: &Value, now: Timestamp) -> Row {
        match self {
            Printer::Builtin(builtin) => (builtin.row)(obj, now),
            Printer::Custom(columns) => custom::row(columns, obj, now),
            Printer::Default => default_row(obj),
        }
    }
}

fn default_row(obj: &Value) -> Row {
    // Upstream formats the zero time when creationTimestamp is unset, rather than leaving it blank.
    let created = timestamp(obj, "/metadata/creationTimestamp")
        .map_or_else(|| "0001-01-01T00:00:00Z".to_string(), |t| t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string());
    Row::new(vec![text(obj, "/metadata/name").into(), created.into()])
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
