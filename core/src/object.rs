//! Reading and shaping objects held as JSON, as the API server stores them and plugins send
//! them.

use serde_json::{Map, Value, json};

/// The string at a JSON pointer, `""` when absent or not a string.
pub fn str_at<'a>(v: &'a Value, pointer: &str) -> &'a str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or("")
}

/// `metadata`, made an object first if it is missing or not one.
pub fn meta_mut(v: &mut Value) -> &mut Map<String, Value> {
    if !v.get("metadata").is_some_and(Value::is_object) {
        v["metadata"] = json!({});
    }
    match v.get_mut("metadata").and_then(Value::as_object_mut) {
        Some(m) => m,
        None => unreachable!("metadata was just made an object"),
    }
}

/// Everything but metadata and status: what a spec change (a new `generation`) is measured on.
pub fn spec_part(v: &Value) -> Map<String, Value> {
    let mut m = v.as_object().cloned().unwrap_or_default();
    m.remove("metadata");
    m.remove("status");
    m
}

/// `namespace/name`, or `name` for a cluster-scoped object: the key of work queues and logs.
pub fn key(namespace: &str, name: &str) -> String {
    if namespace.is_empty() { name.to_string() } else { format!("{namespace}/{name}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn access_and_shapes() {
        let mut v = json!({"metadata": "broken", "spec": {"a": 1}, "status": {}});
        assert_eq!(str_at(&v, "/metadata/name"), "");
        meta_mut(&mut v).insert("name".into(), json!("x"));
        assert_eq!(str_at(&v, "/metadata/name"), "x");
        assert_eq!(Value::Object(spec_part(&v)), json!({"spec": {"a": 1}}));
        assert_eq!((key("", "n"), key("d", "n")), ("n".to_string(), "d/n".to_string()));
    }
}
