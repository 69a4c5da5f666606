//! When two list items are the same item, as upstream decides it, computed once per item so
//! that a list is checked in time linear in its size: the duplicates of an
//! `x-kubernetes-list-type: set` or `map` (`listtype.validateListSet`), and the old item a new
//! one correlates with on an update (`MakeMapList`'s keys). A pairwise comparison made two
//! 470 KB custom resources hold the server for 30 s.
//!
//! It owns only the identities; the errors they lead to stay with the validators.

use std::collections::HashMap;

use serde_json::Value;

/// An item's identity as a Go `map[interface{}]int` key sees a decoded JSON value: a scalar is
/// its dynamic type and value (int64 1 and float64 1 differ, +0.0 and -0.0 do not), an array
/// or object is its `json.Marshal` text (where 1 and 1.0 print the same).
#[derive(Clone, Debug, Hash, PartialEq, Eq)]
pub(super) enum Identity<'a> {
    Null,
    Bool(bool),
    Int(i64),
    /// A float64's bits, -0.0 counted as +0.0.
    Float(u64),
    Str(&'a str),
    /// A list-map item without the key (upstream's `unspecifiedKeyValue{}`).
    Unspecified,
    /// The canonical encoding of an array or object ([`marshal`]).
    Compound(String),
}

impl<'a> Identity<'a> {
    pub(super) fn of(v: &'a Value) -> Identity<'a> {
        match v {
            Value::Null => Identity::Null,
            Value::Bool(b) => Identity::Bool(*b),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Identity::Int(i),
                // Not an int64: unstructured decoding makes it a float64.
                None => {
                    let f = n.as_f64().unwrap_or(0.0);
                    Identity::Float(if f == 0.0 { 0 } else { f.to_bits() })
                }
            },
            Value::String(s) => Identity::Str(s),
            Value::Array(_) | Value::Object(_) => {
                let mut out = String::new();
                marshal(v, &mut out);
                Identity::Compound(out)
            }
        }
    }

    /// `v` as its JSON text alone, whatever its type: 1 and 1.0 are the same (the equality of
    /// numbers after kube-openapi's conversion, which `uniqueItems` compares with).
    pub(super) fn loose(v: &Value) -> Identity<'static> {
        let mut out = String::new();
        marshal(v, &mut out);
        Identity::Compound(out)
    }

    /// A scalar as a list-map key; `None` for an array or object, which upstream's
    /// `CompositeKeyFor` does not key.
    fn scalar(v: &'a Value) -> Option<Identity<'a>> {
        (!v.is_array() && !v.is_object() && !v.is_null()).then(|| Identity::of(v))
    }
}

/// `v` as Go's `json.Marshal` writes it, up to what equality depends on: object keys sorted,
/// an int64 in digits, a float64 in the shortest digits that round-trip (positional between
/// 1e-6 and 1e21, as Go's encoder, where an integral float and an int64 of the same value
/// print alike). Strings are escaped as serde_json escapes them: a different escaping than
/// Go's, but as injective, which is all a key needs.
fn marshal(v: &Value, out: &mut String) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_i64() {
            Some(i) => out.push_str(&i.to_string()),
            None => {
                let f = n.as_f64().unwrap_or(0.0);
                let abs = f.abs();
                if abs == 0.0 || (1e-6..1e21).contains(&abs) {
                    out.push_str(&format!("{f}"));
                } else {
                    out.push_str(&format!("{f:e}"));
                }
            }
        },
        Value::String(s) => out.push_str(&Value::String(s.clone()).to_string()),
        Value::Array(items) => {
            out.push('[');
            for (i, x) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                marshal(x, out);
            }
            out.push(']');
        }
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            keys.sort();
            out.push('{');
            for (i, k) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                marshal(&m[k], out);
            }
            out.push('}');
        }
    }
}

/// The index of each identity's second appearance, in order: upstream reports each repeated
/// value once, at its first repeat.
pub(super) fn first_repeats<'a>(ids: impl IntoIterator<Item = Identity<'a>>) -> Vec<usize> {
    let mut seen: HashMap<Identity<'a>, u32> = HashMap::new();
    let mut out = Vec::new();
    for (i, id) in ids.into_iter().enumerate() {
        let times = seen.entry(id).or_insert(0);
        *times += 1;
        if *times == 2 {
            out.push(i);
        }
    }
    out
}

/// The key of a list-map item as upstream's `validateListMap` compares them: the one key's
/// value (or [`Identity::Unspecified`]), or the object of the keys present.
pub(super) fn map_key<'a>(item: &'a Value, keys: &[String]) -> Identity<'a> {
    if let [key] = keys {
        return item.get(key).map(Identity::of).unwrap_or(Identity::Unspecified);
    }
    // The object of the keys present, written as `marshal` writes an object.
    let mut present: Vec<(&String, &Value)> = keys.iter().filter_map(|k| Some((k, item.get(k)?))).collect();
    present.sort_by_key(|(k, _)| *k);
    present.dedup_by_key(|(k, _)| *k);
    let mut out = String::from("{");
    for (i, (k, v)) in present.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&Value::String(k.clone()).to_string());
        out.push(':');
        marshal(v, &mut out);
    }
    out.push('}');
    Identity::Compound(out)
}

/// The old items of a list-map by their keys, for correlating new items with them as
/// upstream's `MakeMapList` does: keyed only when every key is present and scalar, the first
/// of equal keys kept.
pub(super) struct OldItems<'a> {
    keys: &'a [String],
    by_key: HashMap<Vec<Identity<'a>>, &'a Value>,
}

impl<'a> OldItems<'a> {
    pub(super) fn new(keys: &'a [String], olds: &'a [Value]) -> Self {
        let mut by_key = HashMap::with_capacity(olds.len());
        for old in olds {
            if let Some(key) = composite_key(old, keys) {
                by_key.entry(key).or_insert(old);
            }
        }
        OldItems { keys, by_key }
    }

    pub(super) fn get(&self, item: &Value) -> Option<&'a Value> {
        self.by_key.get(&composite_key(item, self.keys)?).copied()
    }
}

fn composite_key<'a>(item: &'a Value, keys: &[String]) -> Option<Vec<Identity<'a>>> {
    if keys.is_empty() || !item.is_object() {
        return None;
    }
    keys.iter().map(|k| item.get(k).and_then(Identity::scalar)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn repeats(items: Value) -> Vec<usize> {
        first_repeats(items.as_array().unwrap().iter().map(Identity::of))
    }

    #[test]
    fn identities_as_go_compares_them() {
        // Scalars by dynamic type: int64 1 is not float64 1; -0.0 is +0.0.
        assert_eq!(repeats(json!([1, 1.0, 2, 2, 2, -0.0, 0.0, "1", true, true, null, null])), [3, 6, 9, 11]);
        // Compounds by their JSON: key order is irrelevant, 1 and 1.0 print the same.
        assert_eq!(repeats(json!([{"a": 1, "b": [1]}, {"b": [1.0], "a": 1}, [1, 2], [2, 1]])), [1]);
        // Escaping keeps strings apart that a naive join would not.
        assert_eq!(repeats(json!([["a,b"], ["a", "b"], {"a\"": 1}, {"a": 1}])), Vec::<usize>::new());
        let keys = ["name".to_string()];
        let items = json!([{"name": "x"}, {}, {"name": "x", "p": 1}, null]);
        let ids = items.as_array().unwrap().iter().map(|i| map_key(i, &keys));
        assert_eq!(first_repeats(ids), [2, 3], "a null item has no key, as one without it");
    }

    #[test]
    fn old_items_by_their_keys() {
        let keys = ["name".to_string(), "port".to_string()];
        let olds = json!([{"name": "a", "port": 1, "v": "first"}, {"name": "a", "port": 1, "v": "second"},
            {"name": "b"}, {"name": "c", "port": {"x": 1}}]);
        let index = OldItems::new(&keys, olds.as_array().unwrap());
        assert_eq!(index.get(&json!({"port": 1, "name": "a"})).unwrap()["v"], "first");
        assert_eq!(index.get(&json!({"name": "a", "port": 1.0})), None, "float64 1 is not int64 1");
        assert_eq!(index.get(&json!({"name": "b"})), None, "an item without every key correlates with nothing");
        assert_eq!(index.get(&json!({"name": "c", "port": {"x": 1}})), None, "nor one with a compound key");
    }
}
