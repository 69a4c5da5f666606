//! Printers of the kinds about the cluster itself (kubernetes `pkg/printers/internalversion/printers.go`:
//! printCertificateSigningRequest, printComponentStatus; kube-aggregator's APIService printer).

use jiff::{SignedDuration, Timestamp};
use serde_json::Value;

use super::{
    AGE_COLUMN, ColumnSpec, NAME_COLUMN, Row, age, human_duration, int, items, or_none, present, text, timestamp,
};

pub(super) const CERTIFICATE_SIGNING_REQUEST_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    AGE_COLUMN,
    ("SignerName", "string", "", "Requested signer for the request.", 0),
    ("Requestor", "string", "", "Base64-encoded PKCS#10 CSR data", 0),
    ("RequestedDuration", "string", "", "The requested duration of validity of the issued certificate.", 0),
    ("Condition", "string", "", "Conditions applied to the request, such as approval or denial.", 0),
];

/// `extractCSRStatus`: Denied over Approved over Pending, then Failed and Issued.
fn csr_condition(obj: &Value) -> String {
    let has = |ty: &str| items(obj, "/status/conditions").iter().any(|c| text(c, "/type") == ty);
    let mut status = if has("Denied") {
        "Denied".to_string()
    } else if has("Approved") {
        "Approved".to_string()
    } else {
        "Pending".to_string()
    };
    if has("Failed") {
        status.push_str(",Failed");
    }
    if !text(obj, "/status/certificate").is_empty() {
        status.push_str(",Issued");
    }
    status
}

pub(super) fn certificate_signing_request_row(obj: &Value, now: Timestamp) -> Row {
    let duration = match int(obj, "/spec/expirationSeconds") {
        Some(seconds) => human_duration(SignedDuration::from_secs(seconds)).into(),
        None => "<none>".into(),
    };
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
        or_none(text(obj, "/spec/signerName")),
        text(obj, "/spec/username").into(),
        duration,
        csr_condition(obj).into(),
    ])
}

pub(super) const COMPONENT_STATUS_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    ("Status", "string", "", "Status of the component conditions", 0),
    ("Message", "string", "", "Message of the component conditions", 0),
    ("Error", "string", "", "Error of the component conditions", 0),
];

pub(super) fn component_status_row(obj: &Value, _now: Timestamp) -> Row {
    let healthy = items(obj, "/conditions").iter().find(|c| text(c, "/type") == "Healthy");
    let (status, message, error) = match healthy {
        Some(c) => {
            (if text(c, "/status") == "True" { "Healthy" } else { "Unhealthy" }, text(c, "/message"), text(c, "/error"))
        }
        None => ("Unknown", "", ""),
    };
    Row::new(vec![text(obj, "/metadata/name").into(), status.into(), message.into(), error.into()])
}

pub(super) const API_SERVICE_COLUMNS: &[ColumnSpec] = &[
    NAME_COLUMN,
    ("Service", "string", "", "The reference to the service that hosts this API endpoint.", 0),
    ("Available", "string", "", "Whether this service is available.", 0),
    AGE_COLUMN,
];

pub(super) fn api_service_row(obj: &Value, now: Timestamp) -> Row {
    let service = match present(obj, "/spec/service") {
        Some(s) => format!("{}/{}", text(s, "/namespace"), text(s, "/name")),
        None => "Local".into(),
    };
    let available = match items(obj, "/status/conditions").iter().find(|c| text(c, "/type") == "Available") {
        Some(c) if text(c, "/status") == "True" => "True".to_string(),
        Some(c) => format!("{} ({})", text(c, "/status"), text(c, "/reason")),
        None => "Unknown".into(),
    };
    Row::new(vec![
        text(obj, "/metadata/name").into(),
        service.into(),
        available.into(),
        age(now, timestamp(obj, "/metadata/creationTimestamp")).into(),
    ])
}
