//! Printer of coordination.k8s.io Leases (kubernetes `pkg/printers/internalversion/printers.go`: printLease).

use jiff::Timestamp;
use serde_json::Value;

use super::{AGE_COLUMN, ColumnSpec, NAME_COLUMN, Row, age, text, timestamp};

pub(super) const LEASE_COLUMNS: &[ColumnSpec] = &[
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

pub(super) fn lease_row(obj: &Value, now: Timestamp) -> Row {
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        text(obj, "/spec/holderIdentity").into(),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
    ])
}

#[cfg(test)]
mod tests {
    use crate::table::tests::{ago, cells, columns, table};
    use serde_json::json;

    #[test]
    fn leases() {
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
    }
}
