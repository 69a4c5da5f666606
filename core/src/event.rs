//! The two wire forms of one Event: core/v1 and events.k8s.io/v1, which kube-apiserver stores
//! once (as the internal core Event) and converts between (`pkg/apis/events/v1/conversion.go`).
//! The embedded API server stores the core/v1 form and serves both; the host writes the
//! events.k8s.io/v1 form and reads back whichever it is given.
//!
//! Owns the field correspondence and the fields Go's encoder always writes; not validation
//! (the API server's) nor when an Event is written (the host's).

use serde_json::{Map, Value, json};

/// The core/v1 apiVersion.
pub const CORE: &str = "v1";
/// The events.k8s.io/v1 apiVersion.
pub const EVENTS: &str = "events.k8s.io/v1";

/// The fields named differently in the two forms: (events.k8s.io/v1, core/v1). Every other
/// field (`reason`, `type`, `action`, `related`, `series`, `eventTime`, `reportingInstance`)
/// has one name in both.
const RENAMED: [(&str, &str); 6] = [
    ("regarding", "involvedObject"),
    ("note", "message"),
    ("deprecatedSource", "source"),
    ("deprecatedFirstTimestamp", "firstTimestamp"),
    ("deprecatedLastTimestamp", "lastTimestamp"),
    ("deprecatedCount", "count"),
];

/// `reportingController` is `reportingComponent` in core/v1 (the internal field is
/// `ReportingController`, serialised under the older name).
const REPORTING: (&str, &str) = ("reportingController", "reportingComponent");

/// The fields a Go server writes even when unset, with their zero JSON: what a client reading
/// a converted Event sees from kube-apiserver (struct fields without `omitempty` effect, and
/// times that encode as null).
const CORE_ALWAYS: [&str; 7] = [
    "involvedObject",
    "source",
    "firstTimestamp",
    "lastTimestamp",
    "eventTime",
    "reportingComponent",
    "reportingInstance",
];
const EVENTS_ALWAYS: [&str; 5] =
    ["eventTime", "regarding", "deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp"];

/// The field of the form `to` (`CORE` or `EVENTS`) that holds what `field` holds in the other.
fn counterpart(field: &str, to: &str) -> String {
    let pairs = RENAMED.iter().chain(std::iter::once(&REPORTING));
    let found = if to == CORE {
        pairs.clone().find(|(events, _)| *events == field).map(|(_, core)| *core)
    } else {
        pairs.clone().find(|(_, core)| *core == field).map(|(events, _)| *events)
    };
    found.unwrap_or(field).to_owned()
}

/// The field path upstream's validation reports for `field` of an events.k8s.io/v1 Event: the
/// internal type's name, which is core/v1's but for `reportingController`.
pub fn internal_field(field: &str) -> &str {
    RENAMED.iter().find(|(events, _)| *events == field).map_or(field, |(_, core)| core)
}

/// The zero value Go writes for an unset `field` of a converted Event.
fn zero(field: &str) -> Value {
    match field {
        "involvedObject" | "source" | "regarding" | "deprecatedSource" => json!({}),
        "reportingComponent" | "reportingInstance" => json!(""),
        _ => Value::Null,
    }
}

/// `event` (either form) in the form `to` (`CORE` or `EVENTS`); an Event already in that form
/// is returned as it is, so reads of the stored form cost nothing.
pub fn convert(event: &Value, to: &str) -> Value {
    let Some(fields) = event.as_object() else { return event.clone() };
    if fields.get("apiVersion").and_then(Value::as_str) == Some(to) {
        return event.clone();
    }
    let mut out = Map::new();
    for (field, value) in fields {
        out.insert(counterpart(field, to), value.clone());
    }
    out.insert("apiVersion".into(), json!(to));
    let always: &[&str] = if to == CORE { &CORE_ALWAYS } else { &EVENTS_ALWAYS };
    for &field in always {
        out.entry(field).or_insert_with(|| zero(field));
    }
    Value::Object(out)
}

/// The field of a core/v1 Event that a field selector's `label` on an events.k8s.io/v1 Event
/// addresses (`AddFieldLabelConversionsForEvent`); None if that version cannot select by it.
pub fn events_field_label(label: &str) -> Option<String> {
    match label {
        "metadata.name" | "metadata.namespace" | "reason" | "type" | "source" => Some(label.to_owned()),
        "reportingController" => Some(REPORTING.1.to_owned()),
        _ => {
            let field = label.strip_prefix("regarding.")?;
            matches!(field, "kind" | "namespace" | "name" | "uid" | "apiVersion" | "resourceVersion" | "fieldPath")
                .then(|| format!("involvedObject.{field}"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn events_v1() -> Value {
        json!({
            "apiVersion": EVENTS, "kind": "Event",
            "metadata": {"name": "web.1", "namespace": "default"},
            "regarding": {"kind": "Deployment", "name": "web", "namespace": "default"},
            "reason": "ScalingReplicaSet", "note": "Scaled up", "type": "Normal", "action": "Scale",
            "eventTime": "2026-11-28T10:00:00.000000Z",
            "series": {"count": 3, "lastObservedTime": "2026-11-28T10:01:00.000000Z"},
            "reportingController": "wasmcm.dev/deployment", "reportingInstance": "host-a",
        })
    }

    #[test]
    fn each_field_has_its_counterpart_and_go_zeros_fill_the_rest() {
        let core = convert(&events_v1(), CORE);
        assert_eq!(
            core,
            json!({
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": "web.1", "namespace": "default"},
                "involvedObject": {"kind": "Deployment", "name": "web", "namespace": "default"},
                "reason": "ScalingReplicaSet", "message": "Scaled up", "type": "Normal", "action": "Scale",
                "eventTime": "2026-11-28T10:00:00.000000Z",
                "series": {"count": 3, "lastObservedTime": "2026-11-28T10:01:00.000000Z"},
                "reportingComponent": "wasmcm.dev/deployment", "reportingInstance": "host-a",
                "source": {}, "firstTimestamp": null, "lastTimestamp": null,
            })
        );
        let back = convert(&core, EVENTS);
        let mut expected = events_v1();
        for (field, zero) in [
            ("deprecatedSource", json!({})),
            ("deprecatedFirstTimestamp", json!(null)),
            ("deprecatedLastTimestamp", json!(null)),
        ] {
            expected[field] = zero;
        }
        assert_eq!(back, expected);
    }

    #[test]
    fn a_legacy_event_keeps_its_source_and_count_under_the_deprecated_names() {
        let legacy = json!({
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": "e"},
            "involvedObject": {"kind": "Pod", "name": "p"}, "message": "m",
            "source": {"component": "replicaset-controller"}, "count": 4,
            "firstTimestamp": "2026-11-28T10:00:00Z", "lastTimestamp": "2026-11-28T10:05:00Z",
        });
        let v1 = convert(&legacy, EVENTS);
        assert_eq!(v1["deprecatedSource"], json!({"component": "replicaset-controller"}));
        assert_eq!(v1["deprecatedCount"], 4);
        assert_eq!(v1["deprecatedLastTimestamp"], "2026-11-28T10:05:00Z");
        assert_eq!(v1["eventTime"], Value::Null);
        assert_eq!(v1["note"], "m");
        assert!(v1.get("message").is_none() && v1.get("source").is_none());
        assert_eq!(convert(&v1, EVENTS), v1, "already in the form asked for");
    }

    #[test]
    fn events_v1_selects_by_its_own_names_only() {
        assert_eq!(events_field_label("regarding.name").as_deref(), Some("involvedObject.name"));
        assert_eq!(events_field_label("reportingController").as_deref(), Some("reportingComponent"));
        assert_eq!(events_field_label("type").as_deref(), Some("type"));
        assert_eq!(events_field_label("involvedObject.name"), None);
        assert_eq!(events_field_label("source").as_deref(), Some("source"));
        assert_eq!(events_field_label("reportingInstance"), None);
        assert_eq!(events_field_label("regarding.bogus"), None);
    }
}
