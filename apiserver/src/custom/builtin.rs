//! Unknown fields of built-in kinds, found as kube-apiserver's strict JSON decoder finds them
//! (sigs.k8s.io/json: `unknown field "spec.template.spec.containers[0].foo"`) and dropped as
//! its typed decoding drops them. The fields known are the generated schema's (`schema`, from
//! k8s-pb); values of special types (times, quantities, int-or-string, raw JSON) are leaves.

use serde_json::Value;

use crate::schema::{self, F, Kind, MapValue, REPEATED, Special};

/// Drops the fields of `object` that its kind does not have; returns their paths in the order
/// met (sorted by key within an object, as serde_json keeps keys).
pub(crate) fn prune(api_version: &str, kind: &str, object: &mut Value) -> Vec<String> {
    let mut unknown = Vec::new();
    let Some(index) = schema::message_for(api_version, kind) else { return unknown };
    let Some(m) = object.as_object_mut() else { return unknown };
    let mut removed = Vec::new();
    for (k, v) in m.iter_mut() {
        if k == "apiVersion" || k == "kind" {
            continue;
        }
        if !field(index, k, v, k, &mut unknown) {
            removed.push(k.clone());
        }
    }
    for k in removed {
        m.remove(&k);
    }
    unknown
}

/// Walks field `name` of message `index` holding `v`; false when the message has no such field
/// (the caller removes it and `path` is recorded).
fn field(index: u16, name: &str, v: &mut Value, path: &str, unknown: &mut Vec<String>) -> bool {
    let Some(F(_, _, kind, flags, _)) = schema::message(index).and_then(|m| m.field_named(name)) else {
        unknown.push(path.to_string());
        return false;
    };
    match (kind, v) {
        (Kind::Msg(inner), Value::Array(items)) if flags & REPEATED != 0 => {
            for (i, item) in items.iter_mut().enumerate() {
                message(*inner, item, &format!("{path}[{i}]"), unknown);
            }
        }
        (Kind::Msg(inner), v) => message(*inner, v, path, unknown),
        (Kind::Map(MapValue::Msg(inner)), Value::Object(entries)) => {
            for (k, x) in entries.iter_mut() {
                message(*inner, x, &format!("{path}.{k}"), unknown);
            }
        }
        _ => {}
    }
    true
}

fn message(index: u16, v: &mut Value, path: &str, unknown: &mut Vec<String>) {
    let Some(msg) = schema::message(index) else { return };
    // Times, quantities, int-or-string, raw JSON: JSON of their own, not objects of fields.
    if msg.special != Special::None {
        return;
    }
    let Some(m) = v.as_object_mut() else { return };
    let mut removed = Vec::new();
    for (k, x) in m.iter_mut() {
        if !field(index, k, x, &format!("{path}.{k}"), unknown) {
            removed.push(k.clone());
        }
    }
    for k in removed {
        m.remove(&k);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn unknown_fields_of_built_in_kinds() {
        let mut d = json!({"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": "d", "labels": {"a": "b"}, "colour": 1, "creationTimestamp": "2024-01-01T00:00:00Z"},
            "spec": {"replicas": 1, "foo": true, "selector": {"matchLabels": {"a": "b"}},
                "strategy": {"rollingUpdate": {"maxSurge": "25%"}},
                "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [
                    {"name": "c", "image": "i", "bar": 1, "resources": {"limits": {"cpu": "1"}}}]}}}});
        let unknown = prune("apps/v1", "Deployment", &mut d);
        assert_eq!(unknown, ["metadata.colour", "spec.foo", "spec.template.spec.containers[0].bar"]);
        assert!(d["spec"].get("foo").is_none() && d["metadata"].get("colour").is_none());
        assert_eq!(d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["cpu"], "1");
        assert_eq!(d["spec"]["strategy"]["rollingUpdate"]["maxSurge"], "25%");
        let mut cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}, "data": {"k": "v"}});
        assert!(prune("v1", "ConfigMap", &mut cm).is_empty());
    }
}
