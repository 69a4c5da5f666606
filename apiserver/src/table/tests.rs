//! Helpers and fixtures for the table tests of every group, and the tests of the shared machinery: durations, the
//! Table envelope, `includeObject`, the default convertor and malformed input.

use super::*;

pub(super) fn now() -> Timestamp {
    "2026-03-01T12:00:00Z".parse().unwrap()
}

/// An RFC 3339 time `secs` seconds before `now()`.
pub(super) fn ago(secs: i64) -> String {
    now().checked_sub(SignedDuration::from_secs(secs)).unwrap().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

/// The printer `api_version` and `kind`'s strategy names (the default one for a kind not built in).
pub(super) fn printer(api_version: &str, kind: &str) -> Printer {
    let registered = crate::registry::resources::Registry::default().by_kind(api_version, kind);
    Printer::of(registered.and_then(|t| t.strategy.printer), None)
}

pub(super) fn table(api_version: &str, kind: &str, objects: &[Value]) -> Value {
    render(api_version, kind, objects, now(), "Metadata", json!({}), printer(api_version, kind))
}

/// `[[name, priority], ...]` of a table's columns.
pub(super) fn columns(table: &Value) -> Value {
    table["columnDefinitions"].as_array().unwrap().iter().map(|c| json!([c["name"], c["priority"]])).collect()
}

pub(super) fn cells(table: &Value, row: usize) -> Value {
    table["rows"][row]["cells"].clone()
}

/// The cells of the only row of `kind` rendered from `object`.
pub(super) fn row(api_version: &str, kind: &str, object: Value) -> Value {
    cells(&table(api_version, kind, &[object]), 0)
}

pub(super) fn pod(status: Value) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "web-abc12", "namespace": "default", "creationTimestamp": ago(300)},
        "spec": {"nodeName": "node-1", "containers": [{"name": "web", "image": "nginx:1.27"}]},
        "status": status,
    })
}

pub(super) fn running_status() -> Value {
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

#[test]
fn crds_and_unknown_kinds_use_the_default_convertor() {
    let crd = json!({"metadata": {"name": "widgets.example.com", "creationTimestamp": "2026-02-27T08:30:00Z"}});
    let t = table("apiextensions.k8s.io/v1", "CustomResourceDefinition", &[crd]);
    assert_eq!(columns(&t), json!([["Name", 0], ["Created At", 0]]));
    assert_eq!(t["columnDefinitions"][1]["type"], "date");
    assert_eq!(cells(&t, 0), json!(["widgets.example.com", "2026-02-27T08:30:00Z"]));
    assert_eq!(
        row("storage.k8s.io/v1", "StorageClass", json!({"metadata": {"name": "db"}})),
        json!(["db", "0001-01-01T00:00:00Z"])
    );
    // A core kind name in another group is not the core kind.
    assert_eq!(columns(&table("example.com/v1", "Pod", &[])), json!([["Name", 0], ["Created At", 0]]));
}

#[test]
fn include_object_variants() {
    let p = json!({"metadata": {"name": "web-abc12", "namespace": "default", "uid": "u1"}, "spec": {}});
    let object = |mode: &str| {
        render("v1", "Pod", std::slice::from_ref(&p), now(), mode, json!({}), printer("v1", "Pod"))["rows"][0]["object"]
            .clone()
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
        Printer::of(None, Some(&json!([]))),
    );
    assert_eq!(t["rows"][0]["object"], custom);
}

#[test]
fn table_envelope_and_list_metadata() {
    let list_meta = json!({"resourceVersion": "42", "continue": "", "remainingItemCount": 7, "selfLink": "/x"});
    let t = render("v1", "Namespace", &[], now(), "Metadata", list_meta, printer("v1", "Namespace"));
    assert_eq!(t["kind"], "Table");
    assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
    assert_eq!(t["metadata"], json!({"resourceVersion": "42", "remainingItemCount": 7}));
    assert_eq!(t["rows"], json!([]));
    let t = render("v1", "Namespace", &[], now(), "Metadata", json!({"continue": "abc"}), printer("v1", "Namespace"));
    assert_eq!(t["metadata"], json!({"continue": "abc"}));
    let t = render("v1", "Namespace", &[], now(), "Metadata", Value::Null, printer("v1", "Namespace"));
    assert_eq!(t["metadata"], json!({}));
    for def in t["columnDefinitions"].as_array().unwrap() {
        for key in ["name", "type", "format", "description", "priority"] {
            assert!(def.get(key).is_some(), "{key} missing from {def}");
        }
    }
}
