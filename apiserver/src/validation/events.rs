//! Events, core/v1 and events.k8s.io/v1 alike: `pkg/apis/core/validation/events.go`, which
//! upstream applies to both groups (one internal type, field names differing by version).
//!
//! core/v1 Events keep their legacy rules (no ObjectMeta validation beyond a usable name);
//! events.k8s.io/v1 Events get the full `meta` rules and their own immutability rules. It owns the
//! event fields only.

use serde_json::{Map, Value};
use wasmcm_core::event;
use wasmcm_core::validation::{dns1123_subdomain, qualified_name};

use super::meta::{NameRule, Scope, meta, meta_name};
use super::{V, deep_empty, q, semantic_eq, show, text};

/// core/v1 Events keep their legacy rules: no ObjectMeta validation beyond a usable name.
pub(crate) fn core_event(v: &mut V, obj: &Value) {
    let empty = Map::new();
    let m = v.obj(obj.get("metadata"), "metadata").unwrap_or(&empty);
    meta_name(v, m, NameRule::PathSegment);
    legacy_event(v, obj, EventFields::CORE);
}

struct EventFields {
    regarding: &'static str,
    controller: &'static str,
    /// Where upstream reports a missing reporting controller; "source" for core/v1.
    controller_path: &'static str,
    note: &'static str,
}

impl EventFields {
    const CORE: EventFields = EventFields {
        regarding: "involvedObject",
        controller: "reportingComponent",
        controller_path: "source",
        note: "message",
    };
    const EVENTS: EventFields = EventFields {
        regarding: "regarding",
        controller: "reportingController",
        controller_path: "reportingController",
        note: "note",
    };
}

fn legacy_event(v: &mut V, obj: &Value, f: EventFields) {
    let ns = text(Some(obj), "/metadata/namespace");
    let regarding_ns =
        v.string(obj.get(f.regarding).and_then(|r| r.get("namespace")), &format!("{}.namespace", f.regarding));
    let mismatch =
        |v: &mut V| v.invalid("involvedObject.namespace", &q(regarding_ns), "does not match event.namespace");
    if deep_empty(obj.get("eventTime")) {
        if regarding_ns.is_empty() {
            if !ns.is_empty() && ns != "default" {
                mismatch(v);
            }
        } else if ns != regarding_ns {
            mismatch(v);
        }
    } else {
        if regarding_ns.is_empty() && ns != "default" && ns != "kube-system" {
            mismatch(v);
        }
        let controller = v.string(obj.get(f.controller), f.controller);
        if controller.is_empty() {
            v.required(f.controller_path, "");
        }
        v.each(f.controller_path, &q(controller), qualified_name(controller));
        for (field, limit) in [("reportingInstance", 128), ("action", 128), ("reason", 128)] {
            let value = v.string(obj.get(field), field);
            if value.is_empty() {
                v.required(field, "");
            }
            if value.len() > limit {
                v.invalid(field, "\"\"", &format!("can have at most {limit} characters"));
            }
        }
        if v.string(obj.get(f.note), f.note).len() > 1024 {
            v.invalid("message", "\"\"", "can have at most 1024 characters");
        }
    }
    v.each("namespace", &q(ns), dns1123_subdomain(ns));
}

/// What an update through events.k8s.io/v1 may not change (`ValidateEventUpdate`).
const IMMUTABLE: [&str; 13] = [
    "regarding",
    "reason",
    "note",
    "deprecatedSource",
    "deprecatedFirstTimestamp",
    "deprecatedLastTimestamp",
    "deprecatedCount",
    "type",
    "eventTime",
    "action",
    "related",
    "reportingController",
    "reportingInstance",
];

pub(crate) fn events_event(v: &mut V, obj: &Value, old: Option<&Value>) {
    meta(v, obj, old, Scope::Namespaced, NameRule::Subdomain, true);
    if let Some(series) = v.obj(obj.get("series"), "series") {
        if v.int(series.get("count"), "series.count").unwrap_or(0) < 2 {
            v.invalid("series.count", "\"\"", "should be at least 2");
        }
        if deep_empty(series.get("lastObservedTime")) {
            v.required("series.lastObservedTime", "");
        }
    }
    match old {
        None => {
            if deep_empty(obj.get("eventTime")) {
                v.required("eventTime", "");
            }
            let kind = v.string(obj.get("type"), "type");
            if kind != "Normal" && kind != "Warning" {
                v.invalid("type", "\"\"", &format!("has invalid value: {kind}"));
            }
            for deprecated in
                ["deprecatedSource", "deprecatedFirstTimestamp", "deprecatedLastTimestamp", "deprecatedCount"]
            {
                if !deep_empty(obj.get(deprecated)) {
                    v.invalid(event::internal_field(deprecated), "\"\"", "needs to be unset");
                }
            }
        }
        // Through events.k8s.io/v1 only the series and metadata may change.
        Some(old) => {
            for field in IMMUTABLE {
                if !semantic_eq(obj.get(field), old.get(field)) {
                    v.invalid(event::internal_field(field), &show(obj.get(field)), "field is immutable");
                }
            }
        }
    }
    legacy_event(v, obj, EventFields::EVENTS);
}

#[cfg(test)]
mod tests {
    use crate::validation::tests::run;
    use serde_json::json;

    #[test]
    fn events() {
        let core = json!({"metadata": {"name": "web.17a3f", "namespace": "default"},
            "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default"},
            "reason": "Started", "type": "Normal"});
        let creates = [
            ("valid", json!({}), ""),
            ("any name", json!({"/metadata/name": "Web_1:x"}), ""),
            ("no name", json!({"/metadata/name": null}), "Required metadata.name"),
            ("slash", json!({"/metadata/name": "a/b"}), "Invalid metadata.name"),
            ("dot dot", json!({"/metadata/name": ".."}), "Invalid metadata.name"),
            (
                "other namespace",
                json!({"/involvedObject/namespace": "kube-system"}),
                "Invalid involvedObject.namespace",
            ),
            ("cluster-scoped object", json!({"/involvedObject/namespace": null}), ""),
            (
                "new-style without reporter",
                json!({"/eventTime": "2024-01-01T00:00:00.000000Z", "/action": "Start"}),
                "Required source, Invalid source, Invalid source, Required reportingInstance",
            ),
        ];
        run("v1", "Event", &core, &creates, &[("count bump", json!({}), json!({"/count": 2}), "")]);

        let new_style = json!({"metadata": {"name": "web.17a3f", "namespace": "default"},
            "eventTime": "2024-01-01T00:00:00.000000Z", "reportingController": "example.com/ctl",
            "reportingInstance": "ctl-1", "action": "Reconcile", "reason": "Synced", "type": "Normal",
            "regarding": {"kind": "Pod", "name": "web", "namespace": "default"}, "note": "ok"});
        let creates = [
            ("valid", json!({}), ""),
            ("no eventTime", json!({"/eventTime": null}), "Required eventTime"),
            ("type", json!({"/type": "Info"}), "Invalid type"),
            ("no action", json!({"/action": null}), "Required action"),
            ("long reason", json!({"/reason": "r".repeat(129)}), "Invalid reason"),
            ("deprecated fields", json!({"/deprecatedCount": 3}), "Invalid count"),
            ("bad name", json!({"/metadata/name": "Web_1"}), "Invalid metadata.name"),
            (
                "node event outside default",
                json!({"/metadata/namespace": "ns", "/regarding/namespace": null}),
                "Invalid involvedObject.namespace",
            ),
            ("series", json!({"/series": {"count": 1}}), "Invalid series.count, Required series.lastObservedTime"),
        ];
        let updates = [
            (
                "series",
                json!({}),
                json!({"/series": {"count": 2, "lastObservedTime": "2024-01-01T00:00:01.000000Z"}}),
                "",
            ),
            ("note change", json!({}), json!({"/note": "changed"}), "Invalid message"),
        ];
        run("events.k8s.io/v1", "Event", &new_style, &creates, &updates);
    }
}
