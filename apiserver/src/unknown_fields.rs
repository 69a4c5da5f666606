//! Finds the fields a schema does not declare, as kube-apiserver's strict decoding does
//! (sigs.k8s.io/json with `DisallowUnknownFields` / `DisallowDuplicateFields` for a request
//! body, `FromUnstructuredWithValidation` for a patched object), and removes them, as decoding
//! into a Go struct drops them.
//!
//! It is generic over the schema ([`Node`]): [`Typed`] walks the generated schema of the
//! built-in kinds (`schema.rs`); a custom resource's structural schema can implement the same
//! trait. Paths are written as upstream writes them: fields joined by `.`, list items as
//! `[index]` (`spec.template.spec.containers[0].foo`).

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde_json::Value;

use super::schema::{self, Kind, MapValue, Message, Shape, Special};

/// Where a walk is in a schema.
pub(crate) trait Node: Copy {
    /// The schema of the field `name` of an object here, or None if no such field is declared.
    fn field(self, name: &str) -> Option<Self>;
    /// The schema of the items of a list here.
    fn item(self) -> Self;
}

/// A place in a built-in kind's schema.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Typed {
    /// The object of a kind: its message, and `kind`/`apiVersion` (Go's `TypeMeta`).
    Top(&'static Message),
    /// A field's value, of this kind.
    Field(Kind),
    /// Anything goes (a scalar, a time, raw JSON): nothing inside is checked.
    Any,
}

impl Typed {
    /// The kind `kind` of `api_version`, or None if it has no generated message.
    pub(crate) fn of(api_version: &str, kind: &str) -> Option<Typed> {
        if !schema::is_built_in(api_version) {
            return None;
        }
        schema::message_for(api_version, kind).and_then(schema::message).map(Typed::Top)
    }

    fn in_message(message: &'static Message, name: &str) -> Option<Typed> {
        match message.special {
            Special::None => message.json_field(name).map(|j| Typed::Field(j.2)),
            // JSONSchemaPropsOr*: an object here is the schema it holds.
            Special::SchemaOrBool | Special::SchemaOrArray | Special::SchemaOrStringArray => {
                match message.fields.iter().find(|f| matches!(f.2, Kind::Msg(_))) {
                    Some(f) => Typed::Field(f.2).field(name),
                    None => Some(Typed::Any),
                }
            }
            _ => Some(Typed::Any),
        }
    }
}

impl Typed {
    /// How the list field `name` of an object here merges (for its items' paths).
    fn shape_of(self, name: &str) -> Shape {
        let message = match self {
            Typed::Top(m) => Some(m),
            Typed::Field(Kind::Msg(i)) => schema::message(i),
            _ => None,
        };
        message.and_then(|m| m.field_named(name)).map_or(Shape::Default, |f| f.4)
    }
}

impl Node for Typed {
    fn field(self, name: &str) -> Option<Typed> {
        match self {
            Typed::Top(_) if name == "kind" || name == "apiVersion" => Some(Typed::Any),
            Typed::Top(message) => Typed::in_message(message, name),
            Typed::Field(Kind::Msg(i)) => match schema::message(i) {
                Some(message) => Typed::in_message(message, name),
                None => Some(Typed::Any),
            },
            Typed::Field(Kind::Map(MapValue::Msg(i))) => Some(Typed::Field(Kind::Msg(i))),
            Typed::Field(_) | Typed::Any => Some(Typed::Any),
        }
    }

    fn item(self) -> Typed {
        match self {
            // A JSONSchemaPropsOrArray given a list: a list of schemas.
            Typed::Field(Kind::Msg(i)) => match schema::message(i) {
                Some(m) if m.special == Special::SchemaOrArray => {
                    m.fields.iter().find(|f| matches!(f.2, Kind::Msg(_))).map_or(Typed::Any, |f| Typed::Field(f.2))
                }
                _ => self,
            },
            // A repeated field's items have the field's kind.
            other => other,
        }
    }
}

/// One strict decoding error, as upstream words it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Finding {
    Unknown(String),
    Duplicate(String),
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Finding::Unknown(path) => write!(f, "unknown field {path:?}"),
            Finding::Duplicate(path) => write!(f, "duplicate field {path:?}"),
        }
    }
}

/// Upstream keeps at most this many strict errors (sigs.k8s.io/json's `saveStrictError`).
const MAX_FINDINGS: usize = 100;

fn record(findings: &mut Vec<Finding>, finding: Finding) {
    // Deduplicated, as upstream's saveStrictError does.
    if findings.len() < MAX_FINDINGS && !findings.contains(&finding) {
        findings.push(finding);
    }
}

fn join(path: &str, name: &str) -> String {
    if path.is_empty() { name.to_owned() } else { format!("{path}.{name}") }
}

/// The undeclared and the duplicated fields of a JSON body, in the order they appear in it
/// (which is the order upstream reports them in). A body that is not JSON is an error.
pub(crate) fn in_json<N: Node>(body: &[u8], root: N) -> Result<Vec<Finding>, serde_json::Error> {
    let mut findings = Vec::new();
    let mut de = serde_json::Deserializer::from_slice(body);
    Walk { node: Some(root), path: String::new(), findings: &mut findings }.deserialize(&mut de)?;
    Ok(findings)
}

/// The undeclared fields of a decoded value (keys in sorted order, as upstream's unstructured
/// maps are walked).
pub(crate) fn in_value<N: Node>(value: &Value, root: N) -> Vec<Finding> {
    fn walk<N: Node>(value: &Value, node: N, path: &str, out: &mut Vec<Finding>) {
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    let at = join(path, k);
                    match node.field(k) {
                        Some(child) => walk(v, child, &at, out),
                        None => record(out, Finding::Unknown(at)),
                    }
                }
            }
            Value::Array(items) => {
                for (i, v) in items.iter().enumerate() {
                    walk(v, node.item(), &format!("{path}[{i}]"), out);
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    walk(value, root, "", &mut out);
    out
}

/// The undeclared fields of a server-side apply configuration, as structured-merge-diff's
/// typed conversion names them: `.spec.foo`, list items by their keys
/// (`.spec.template.spec.containers[name="app"].foo`), set items by value (`[="a"]`), other
/// list items by index.
pub(crate) fn in_apply_config(value: &Value, root: Typed) -> Vec<String> {
    fn walk(value: &Value, node: Typed, path: &str, out: &mut Vec<String>) {
        let Value::Object(map) = value else { return };
        for (k, v) in map {
            let at = format!("{path}.{k}");
            let Some(child) = node.field(k) else {
                out.push(at);
                continue;
            };
            match v {
                Value::Array(items) => {
                    let shape = node.shape_of(k);
                    for (i, item) in items.iter().enumerate() {
                        walk(item, child.item(), &format!("{at}{}", element(shape, item, i)), out);
                    }
                }
                _ => walk(v, child, &at, out),
            }
        }
    }
    let mut out = Vec::new();
    walk(value, root, "", &mut out);
    out
}

/// A list item's path element as structured-merge-diff writes it.
fn element(shape: Shape, item: &Value, index: usize) -> String {
    match shape {
        Shape::Keys(keys) => {
            let mut keys: Vec<&str> = keys.to_vec();
            keys.sort_unstable();
            let pairs: Vec<String> = keys.iter().filter_map(|k| item.get(*k).map(|v| format!("{k}={v}"))).collect();
            format!("[{}]", pairs.join(","))
        }
        Shape::Set => format!("[={item}]"),
        Shape::Atomic | Shape::Default => format!("[{index}]"),
    }
}

/// Removes the undeclared fields of `value`.
pub(crate) fn prune<N: Node>(value: &mut Value, node: N) {
    match value {
        Value::Object(map) => {
            map.retain(|k, _| node.field(k).is_some());
            for (k, v) in map.iter_mut() {
                if let Some(child) = node.field(k) {
                    prune(v, child);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| prune(v, node.item())),
        _ => {}
    }
}

/// A value being read, at `path` in the schema `node` (None: inside an undeclared field,
/// where nothing more is reported).
struct Walk<'f, N> {
    node: Option<N>,
    path: String,
    findings: &'f mut Vec<Finding>,
}

impl<'de, N: Node> DeserializeSeed<'de> for Walk<'_, N> {
    type Value = ();

    fn deserialize<D: Deserializer<'de>>(self, de: D) -> Result<(), D::Error> {
        de.deserialize_any(self)
    }
}

impl<'de, N: Node> Visitor<'de> for Walk<'_, N> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let item = self.node.map(Node::item);
        let mut i = 0usize;
        loop {
            let walk = Walk { node: item, path: format!("{}[{i}]", self.path), findings: &mut *self.findings };
            if seq.next_element_seed(walk)?.is_none() {
                return Ok(());
            }
            i += 1;
        }
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen: Vec<String> = Vec::new();
        while let Some(key) = map.next_key::<String>()? {
            let at = join(&self.path, &key);
            let Some(node) = self.node else {
                map.next_value::<IgnoredAny>()?;
                continue;
            };
            if seen.contains(&key) {
                record(self.findings, Finding::Duplicate(at.clone()));
            } else {
                seen.push(key.clone());
            }
            match node.field(&key) {
                Some(child) => {
                    map.next_value_seed(Walk { node: Some(child), path: at, findings: &mut *self.findings })?
                }
                None => {
                    record(self.findings, Finding::Unknown(at));
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn deployment() -> Typed {
        Typed::of("apps/v1", "Deployment").unwrap()
    }

    #[test]
    fn json_bodies_report_unknown_and_duplicate_fields_in_document_order() {
        let body = br#"{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x","bogus":1},
            "spec":{"replicas":1,"unknownField":{"a":{"b":1}},"replicas":2,
              "template":{"spec":{"containers":[{"name":"c"},{"name":"d","imagePullPolicyy":"x"}]}}}}"#;
        let found: Vec<String> = in_json(body, deployment()).unwrap().iter().map(ToString::to_string).collect();
        assert_eq!(
            found,
            [
                r#"unknown field "metadata.bogus""#,
                r#"unknown field "spec.unknownField""#,
                r#"duplicate field "spec.replicas""#,
                r#"unknown field "spec.template.spec.containers[1].imagePullPolicyy""#,
            ]
        );
    }

    #[test]
    fn maps_raw_json_and_quantities_accept_any_key() {
        let body = br#"{"kind":"Pod","apiVersion":"v1","metadata":{"labels":{"any":"x"},"annotations":{"b":"c"}},
            "spec":{"containers":[{"name":"c","resources":{"limits":{"cpu":"1","example.com/gpu":"2"}}}],
                    "nodeSelector":{"k":"v"}}}"#;
        assert_eq!(in_json(body, Typed::of("v1", "Pod").unwrap()).unwrap(), []);
        let crd = json!({"kind": "CustomResourceDefinition", "apiVersion": "apiextensions.k8s.io/v1",
            "spec": {"versions": [{"name": "v1", "schema": {"openAPIV3Schema": {"type": "object",
                "properties": {"a": {"type": "string", "default": {"x": 1}}}, "additionalProperties": false,
                "nope": 1}}}]}});
        assert_eq!(
            in_value(&crd, Typed::of("apiextensions.k8s.io/v1", "CustomResourceDefinition").unwrap()),
            [Finding::Unknown("spec.versions[0].schema.openAPIV3Schema.nope".into())]
        );
    }

    #[test]
    fn apply_configurations_name_list_items_by_their_keys() {
        let config = json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x"},
            "spec": {"foo": 1, "template": {"spec": {"containers": [{"name": "app", "bogus": true,
                "ports": [{"containerPort": 80, "protocol": "TCP", "x": 1}]}]}}}});
        assert_eq!(
            in_apply_config(&config, deployment()),
            [
                ".spec.foo",
                ".spec.template.spec.containers[name=\"app\"].bogus",
                ".spec.template.spec.containers[name=\"app\"].ports[containerPort=80,protocol=\"TCP\"].x",
            ]
        );
    }

    #[test]
    fn pruning_drops_what_is_undeclared() {
        let mut v = json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x", "zz": 1},
                           "data": {"k": "v"}, "foo": {"bar": 1}});
        prune(&mut v, Typed::of("v1", "ConfigMap").unwrap());
        assert_eq!(v, json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "x"}, "data": {"k": "v"}}));
    }
}
