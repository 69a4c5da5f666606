//! Printers of the apps kinds: deployments and replica sets (kubernetes `pkg/printers/internalversion/printers.go`:
//! printDeployment, printReplicaSet, layoutContainerCells) with the label selector text they show.
//!
//! It owns these kinds' columns and rows; the shared machinery is the parent's. Label keys and values are checked with
//! `wasmcm_core::validation`, as upstream's selector conversion checks them.

use jiff::Timestamp;
use serde_json::Value;
use wasmcm_core::validation::{label_value, qualified_name};

use super::{AGE_COLUMN, ColumnSpec, NAME_COLUMN, Row, age, int, items, text, timestamp};

pub(super) const CONTAINERS_DOC: &str = "Names of each container in the template.";
pub(super) const IMAGES_DOC: &str = "Images referenced by each container in the template.";
const REPLICAS_SPEC_DOC: &str = "Replicas is the number of desired replicas. This is a pointer to distinguish between explicit zero and unspecified. Defaults to 1. More info: https://kubernetes.io/docs/concepts/workloads/controllers/replicationcontroller#what-is-a-replicationcontroller";

pub(super) const DEPLOYMENT_COLUMNS: &[ColumnSpec] = &[
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

pub(super) const REPLICA_SET_COLUMNS: &[ColumnSpec] = &[
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

// ---- workloads

pub(super) fn deployment_row(obj: &Value, now: Timestamp) -> Row {
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

pub(super) fn replica_set_row(obj: &Value, now: Timestamp) -> Row {
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
pub(super) fn label_selector(selector: Option<&Value>) -> Result<String, ()> {
    let Some(selector) = selector.filter(|s| !s.is_null()) else {
        return Ok(String::new());
    };
    let mut requirements: Vec<(&str, String)> = Vec::new();
    if let Some(labels) = selector.get("matchLabels").and_then(Value::as_object) {
        for (key, value) in labels {
            let value = value.as_str().ok_or(())?;
            if !valid_key(key) || !valid_value(value) {
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
            if !valid_value(value) {
                return Err(());
            }
            values.push(value);
        }
        if !valid_key(key) {
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

/// A label key as labels.NewRequirement checks it: a qualified name (validation.IsQualifiedName).
fn valid_key(key: &str) -> bool {
    qualified_name(key).is_empty()
}

/// A label value as labels.NewRequirement checks it (validation.IsValidLabelValue).
fn valid_value(value: &str) -> bool {
    label_value(value).is_empty()
}

/// layoutContainerCells: comma-joined container names and images of a pod template.
pub(super) fn container_cells(obj: &Value, pointer: &str) -> (Value, Value) {
    let containers = items(obj, pointer);
    let names: Vec<&str> = containers.iter().map(|c| text(c, "/name")).collect();
    let images: Vec<&str> = containers.iter().map(|c| text(c, "/image")).collect();
    (names.join(",").into(), images.join(",").into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::table::tests::{ago, cells, columns, row, table};
    use serde_json::json;

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
}
