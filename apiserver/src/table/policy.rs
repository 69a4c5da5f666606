//! Printer of policy PodDisruptionBudgets (kubernetes `pkg/printers/internalversion/printers.go`:
//! printPodDisruptionBudget).

use jiff::Timestamp;
use serde_json::Value;

use super::{AGE_COLUMN, ColumnSpec, NAME_COLUMN, Row, age, int, text, timestamp};

pub(super) const POD_DISRUPTION_BUDGET_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    ("Min Available", "string", "", "The minimum number of pods that must be available.", 0),
    ("Max Unavailable", "string", "", "The maximum number of pods that may be unavailable.", 0),
    ("Allowed Disruptions", "integer", "", "Calculated number of pods that may be disrupted at this time.", 0),
    AGE_COLUMN,
];

pub(super) fn pod_disruption_budget_row(obj: &Value, now: Timestamp) -> Row {
    let bound = |pointer: &str| match obj.pointer(pointer) {
        Some(Value::Number(n)) => Value::from(n.to_string()),
        Some(Value::String(s)) => Value::from(s.as_str()),
        _ => Value::from("N/A"),
    };
    let allowed = int(obj, "/status/disruptionsAllowed").unwrap_or(0);
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        bound("/spec/minAvailable"),
        bound("/spec/maxUnavailable"),
        allowed.into(),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
    ])
}
