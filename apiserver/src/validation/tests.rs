//! Fixtures and helpers for the validation tests of every group, and the tests that cut across
//! groups: upstream's exact messages, name formats, semantic equality and hostile JSON.

use super::core::config_key;
use super::meta::{NameRule, TOTAL_ANNOTATION_SIZE, name_errors};
use super::*;
use serde_json::json;
use wasmcm_core::validation::{dns1035_label, dns1123_label, dns1123_subdomain, label_value, qualified_name};

/// Applies `{"/json/pointer": value}` edits to a fixture; null removes. Objects are created
/// on the way, and an index one past the end of an array appends.
pub(super) fn edit(object: &mut Value, edits: &Value) {
    for (pointer, value) in edits.as_object().unwrap() {
        let (parent, last) = pointer.rsplit_once('/').unwrap();
        let mut at = &mut *object;
        for part in parent.split('/').skip(1) {
            at = match at {
                Value::Array(a) => &mut a[part.parse::<usize>().unwrap()],
                _ => at.as_object_mut().unwrap().entry(part.replace("~1", "/")).or_insert(json!({})),
            };
        }
        let last = last.replace("~1", "/");
        match (at, value) {
            (Value::Array(a), v) if last.parse::<usize>().unwrap() == a.len() => a.push(v.clone()),
            (Value::Array(a), v) => a[last.parse::<usize>().unwrap()] = v.clone(),
            (Value::Object(m), Value::Null) => drop(m.remove(&last)),
            (Value::Object(m), v) => drop(m.insert(last, v.clone())),
            (other, _) => panic!("cannot edit {other} at {pointer}"),
        }
    }
}

/// "Invalid metadata.name, Required spec.selector" as sorted (reason, field) pairs.
fn expected(want: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = want
        .split(", ")
        .filter(|w| !w.is_empty())
        .map(|w| {
            let (reason, field) = w.split_once(' ').unwrap_or((w, ""));
            (format!("FieldValue{reason}"), field.to_owned())
        })
        .collect();
    out.sort();
    out
}

fn check(api_version: &str, kind: &str, object: &Value, old: Option<&Value>, name: &str, want: &str) {
    let causes = validate_kind(api_version, kind, object, old);
    let mut got: Vec<(String, String)> = causes.iter().map(|c| (c.reason.to_owned(), c.field.clone())).collect();
    got.sort();
    assert_eq!(got, expected(want), "{kind}: {name}: {causes:#?}");
}

/// Create cases: (name, edits to the fixture, expected causes).
type Creates<'a> = &'a [(&'a str, Value, &'a str)];
/// Update cases: (name, edits making the stored object, edits making the new one, expected).
type Updates<'a> = &'a [(&'a str, Value, Value, &'a str)];

pub(super) fn run(api_version: &str, kind: &str, fixture: &Value, creates: Creates, updates: Updates) {
    for (name, edits, want) in creates {
        let mut object = fixture.clone();
        edit(&mut object, edits);
        check(api_version, kind, &object, None, name, want);
    }
    for (name, old_edits, edits, want) in updates {
        let (mut old, mut object) = (fixture.clone(), fixture.clone());
        edit(&mut old, old_edits);
        edit(&mut object, edits);
        check(api_version, kind, &object, Some(&old), name, want);
    }
}

pub(super) fn container() -> Value {
    json!({"name": "web", "image": "nginx:1.27", "imagePullPolicy": "IfNotPresent", "resources": {},
        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File",
        "ports": [{"containerPort": 80, "protocol": "TCP"}]})
}

fn pod_spec() -> Value {
    json!({"containers": [container()], "restartPolicy": "Always", "dnsPolicy": "ClusterFirst",
        "terminationGracePeriodSeconds": 30, "schedulerName": "default-scheduler", "securityContext": {}})
}

pub(super) fn deployment() -> Value {
    json!({"apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "uid": "u1", "resourceVersion": "5"},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web", "tier": "front"}}, "spec": pod_spec()},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "25%", "maxSurge": "25%"}},
            "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600}})
}

pub(super) fn pod() -> Value {
    let mut spec = pod_spec();
    spec["enableServiceLinks"] = json!(true);
    json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web-1", "namespace": "default"}, "spec": spec,
        "status": {"phase": "Pending", "qosClass": "BestEffort"}})
}

fn message(api_version: &str, kind: &str, object: &Value, old: Option<&Value>, field: &str) -> String {
    let causes = validate_kind(api_version, kind, object, old);
    let found = causes.iter().find(|c| c.field == field);
    found.map(|c| c.message.clone()).unwrap_or_else(|| panic!("no cause at {field}: {causes:#?}"))
}

#[test]
fn messages_match_upstream() {
    let subdomain = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or \
        '.', \
        and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is \
        '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')";
    let label_key = "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end \
        with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation \
        is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";
    let pod_update = "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,\
        `spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to \
        existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously \
        negative)\n  spec.nodeName: \"node-1\" -> \"node-2\"";
    let selector = "v1.LabelSelector{MatchLabels:map[string]string{\"app\":\"api\"}, \
        MatchExpressions:[]v1.LabelSelectorRequirement(nil)}";
    let empty_selector =
        "v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement(nil)}";
    let mismatch = "Invalid value: map[string]string{\"app\":\"web\", \"tier\":\"front\"}: `selector` does not \
        match template `labels`";
    let big = json!({"/metadata/annotations": {"a": "x".repeat(TOTAL_ANNOTATION_SIZE)}});
    let over = json!({"/spec/template/spec/containers/0/resources":
        {"requests": {"cpu": "2"}, "limits": {"cpu": "1"}}});
    let crd = json!({"/metadata/name": "x.example.com",
        "/spec": {"group": "example.com", "names": {"plural": "widgets"}}});
    let moved = json!({"/spec/nodeName": "node-2", "/spec/containers/0/image": "nginx:2"});
    let d = "Deployment";
    let cases: &[(&str, Value, Option<Value>, &str, String)] = &[
        (
            d,
            json!({"/metadata/name": "Foo_Bar"}),
            None,
            "metadata.name",
            format!("Invalid value: \"Foo_Bar\": {subdomain}"),
        ),
        (
            d,
            json!({"/metadata/labels": {"-x": "ok"}}),
            None,
            "metadata.labels",
            format!("Invalid value: \"-x\": {label_key}"),
        ),
        (d, json!({"/spec/selector/matchLabels/app": "api"}), None, "spec.template.metadata.labels", mismatch.into()),
        (
            d,
            json!({"/spec/selector/matchLabels/app": "api", "/spec/template/metadata/labels/app": "api"}),
            Some(json!({})),
            "spec.selector",
            format!("Invalid value: {selector}: field is immutable"),
        ),
        (
            d,
            json!({"/spec/selector": {}}),
            None,
            "spec.selector",
            format!("Invalid value: {empty_selector}: empty selector is invalid for deployment"),
        ),
        (
            d,
            json!({"/spec/strategy/rollingUpdate": {"maxUnavailable": 0, "maxSurge": "0%"}}),
            None,
            "spec.strategy.rollingUpdate.maxUnavailable",
            "Invalid value: 0: may not be 0 when `maxSurge` is 0".into(),
        ),
        (
            d,
            json!({"/spec/strategy/type": "Recreate"}),
            None,
            "spec.strategy.rollingUpdate",
            "Forbidden: may not be specified when strategy `type` is 'Recreate'".into(),
        ),
        (
            d,
            json!({"/spec/template/spec/restartPolicy": "Never"}),
            None,
            "spec.template.spec.restartPolicy",
            "Unsupported value: \"Never\": supported values: \"Always\"".into(),
        ),
        (
            d,
            json!({"/spec/template/spec/containers/1": container()}),
            None,
            "spec.template.spec.containers[1].name",
            "Duplicate value: \"web\"".into(),
        ),
        (
            d,
            json!({"/spec/template/spec/containers": []}),
            None,
            "spec.template.spec.containers",
            "Required value".into(),
        ),
        (
            d,
            json!({"/metadata/name": null}),
            None,
            "metadata.name",
            "Required value: name or generateName is required".into(),
        ),
        (d, big, None, "metadata.annotations", "Too long: must have at most 262144 bytes".into()),
        (
            d,
            over,
            None,
            "spec.template.spec.containers[0].resources.requests",
            "Invalid value: \"2\": must be less than or equal to cpu limit of 1".into(),
        ),
        ("Pod", moved, Some(json!({"/spec/nodeName": "node-1"})), "spec", pod_update.into()),
        (
            "Namespace",
            json!({"/metadata/name": "a.b"}),
            None,
            "metadata.name",
            "Invalid value: \"a.b\": must not contain dots".into(),
        ),
        (
            "Namespace",
            json!({"/metadata/namespace": "x"}),
            None,
            "metadata.namespace",
            "Forbidden: not allowed on this type".into(),
        ),
        (
            "CustomResourceDefinition",
            crd,
            None,
            "metadata.name",
            "Invalid value: \"x.example.com\": must be spec.names.plural+\".\"+spec.group".into(),
        ),
    ];
    for (kind, edits, old_edits, field, want) in cases {
        let (api_version, mut object) = match *kind {
            "Deployment" => ("apps/v1", deployment()),
            "Pod" => ("v1", pod()),
            "Namespace" => ("v1", json!({"metadata": {"name": "a"}})),
            _ => ("apiextensions.k8s.io/v1", json!({})),
        };
        let old = old_edits.as_ref().map(|e| {
            let mut old = object.clone();
            edit(&mut old, e);
            old
        });
        edit(&mut object, edits);
        assert_eq!(&message(api_version, kind, &object, old.as_ref(), field), want, "{kind} {field}");
    }
}

#[test]
fn name_formats() {
    type Check = fn(&str) -> Vec<String>;
    let cases: &[(Check, &str, bool)] = &[
        (dns1123_subdomain, "a", true),
        (dns1123_subdomain, "a.b-c.d", true),
        (dns1123_subdomain, "0abc", true),
        (dns1123_subdomain, "-a", false),
        (dns1123_subdomain, "a.", false),
        (dns1123_subdomain, "a..b", false),
        (dns1123_subdomain, "A", false),
        (dns1123_subdomain, "", false),
        (dns1123_label, "a-b", true),
        (dns1123_label, "a.b", false),
        (dns1123_label, "a-", false),
        (dns1035_label, "v1", true),
        (dns1035_label, "1v", false),
        (qualified_name, "a", true),
        (qualified_name, "A.b_c-D", true),
        (qualified_name, "example.com/a", true),
        (qualified_name, "/a", false),
        (qualified_name, "example.com/", false),
        (qualified_name, "Example.com/a", false),
        (qualified_name, "a/b/c", false),
        (qualified_name, "_a", false),
        (label_value, "", true),
        (label_value, "a_b.c-d", true),
        (label_value, "a b", false),
        (config_key, "a.b_C-1", true),
        (config_key, ".", false),
        (config_key, "..a", false),
        (config_key, "a/b", false),
        (port_name, "http", true),
        (port_name, "8080", false),
        (port_name, "-http", false),
        (port_name, "very-long-port-name", false),
    ];
    for (check, value, ok) in cases {
        assert_eq!(check(value).is_empty(), *ok, "{value}: {:?}", check(value));
    }
    assert_eq!(dns1123_label(&"a".repeat(64)), vec![max_len(63)]);
    assert!(name_errors(NameRule::Subdomain, "web-", true).is_empty());
    assert_eq!(name_errors(NameRule::Label, "-", true).len(), 1);
    assert_eq!(wasmcm_core::quantity::nanos("1Gi"), Some(1_073_741_824_000_000_000));
    assert_eq!(wasmcm_core::quantity::nanos("250m"), Some(250_000_000));
    assert_eq!(wasmcm_core::quantity::nanos("1.5"), wasmcm_core::quantity::nanos("1500m"));
    assert_eq!(wasmcm_core::quantity::nanos("5x"), None);
    // Absurd sizes saturate instead of overflowing.
    assert_eq!(
        wasmcm_core::quantity::nanos(&format!("{}.{}", "9".repeat(60), "9".repeat(20))),
        Some(i128::MAX / 100_000_000_000)
    );
}

#[test]
fn semantic_equality() {
    let same = [
        (json!(null), json!({})),
        (json!({"a": []}), json!({})),
        (json!({"a": {"b": null}}), json!({"a": {}})),
        (json!({"a": false, "b": 0, "c": ""}), json!({})),
        (json!(1), json!(1.0)),
    ];
    for (a, b) in same {
        assert!(semantic_eq(Some(&a), Some(&b)) && semantic_eq(Some(&b), Some(&a)), "{a} {b}");
    }
    let different = [
        (json!({"a": 1}), json!({})),
        (json!([{}]), json!([])),
        (json!("a"), json!("b")),
        (json!([1, 2]), json!([2, 1])),
    ];
    for (a, b) in different {
        assert!(!semantic_eq(Some(&a), Some(&b)), "{a} {b}");
    }
}

#[test]
fn odd_json_never_panics() {
    let kinds = [
        ("apps/v1", "Deployment"),
        ("apps/v1", "ReplicaSet"),
        ("v1", "Pod"),
        ("v1", "Namespace"),
        ("v1", "Node"),
        ("v1", "Event"),
        ("events.k8s.io/v1", "Event"),
        ("v1", "ConfigMap"),
        ("v1", "Secret"),
        ("v1", "ServiceAccount"),
        ("coordination.k8s.io/v1", "Lease"),
        ("apiextensions.k8s.io/v1", "CustomResourceDefinition"),
        ("example.com/v1", "Widget"),
    ];
    let weird = [
        json!({}),
        json!({"metadata": null, "spec": null, "status": null}),
        json!({"metadata": 1, "spec": "x", "data": [], "type": 3}),
        json!({"metadata": {"name": [], "namespace": {}, "labels": [], "annotations": "x", "ownerReferences": {},
            "finalizers": [1, null]}}),
        json!({"metadata": {"name": "é/..", "generateName": "é-", "labels": {"é": "ü"}}, "regarding": 1,
            "involvedObject": [], "eventTime": 5}),
        json!({"spec": {"selector": [], "template": {"metadata": 1, "spec": {"containers": [null, 1,
            {"name": 1, "ports": "x", "env": [1], "resources": {"limits": {"cpu": [], "memory": "1é"}}}]}}}}),
        json!({"spec": {"containers": {"a": 1}, "tolerations": [1], "volumes": [{"name": "v", "a": 1, "b": 2}],
            "activeDeadlineSeconds": 1e100}}),
        json!({"spec": {"strategy": {"type": "RollingUpdate",
            "rollingUpdate": {"maxSurge": [], "maxUnavailable": "99999999999999999999%"}}}}),
        json!({"spec": {"versions": [1, {"schema":
            {"openAPIV3Schema": {"properties": {"a": 1, "b": {"items": 2}}}}}],
            "names": "x",
            "conversion": 1}, "status": {"storedVersions": "v1"}}),
        json!({"data": {"a": "=", "b": "ab=c", "c": "é"}, "binaryData": {"d": 1}, "series": [],
            "spec": {"leaseDurationSeconds": "x", "taints": [1, {"key": 2}]}}),
    ];
    for (api_version, kind) in kinds {
        for object in &weird {
            for old in [None, Some(&weird[0]), Some(object), Some(&json!("not an object"))] {
                let _ = validate_kind(api_version, kind, object, old);
            }
        }
        let causes = validate_kind(api_version, kind, &json!([1]), None);
        assert_eq!(causes.len(), 1);
        assert_eq!((causes[0].reason.as_str(), causes[0].field.as_str()), (INVALID, ""));
    }
}
