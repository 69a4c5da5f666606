//! Response bodies written as kube-apiserver's JSON serializer writes them, byte for byte where
//! the stored value allows: a built-in kind's object has `kind`, `apiVersion` first (Go's
//! `TypeMeta`) and then its fields in Go struct order, nested messages likewise, map keys
//! sorted (Go sorts map keys); strings escaped as Go's `encoding/json` does (`<`, `>`, `&`,
//! U+2028, U+2029 as `\u` escapes); and the body ends with the newline `json.Encoder` adds.
//!
//! The order comes from the generated schema (`schema.rs`, each message's JSON fields with
//! their rank in Go's declaration order, read from k8s-pb at build time). Keys the schema does
//! not know come after the known ones, sorted. Objects of kinds without a message (custom
//! resources, and everything else without a Go struct) are written with sorted keys: upstream
//! serves them as `Unstructured`, a `map[string]interface{}`, which Go's encoder writes sorted.
//!
//! Objects are stored as `serde_json::Value` (sorted maps); this module is the one place they
//! are reordered, while they are written, without copying them.

use serde_json::{Map, Value};

use crate::schema::{self, Kind, MapValue, Message, Special};

/// A whole response body: `value` and the trailing newline.
pub(crate) fn body(value: &Value) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    write_top(&mut out, value);
    out.push(b'\n');
    out
}

/// A value that may be a typed object: ordered by its `apiVersion`/`kind`'s message if it has
/// one, else written with sorted keys (also for a value that is not an object).
pub(crate) fn write_top(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Object(map) => {
            let api_version = map.get("apiVersion").and_then(Value::as_str);
            let kind = map.get("kind").and_then(Value::as_str);
            let order = match (api_version, kind) {
                (Some(v), Some(k)) => order_of(v, k),
                _ => Order::Sorted,
            };
            write_object(out, map, order, Meta::Write);
        }
        other => write_plain(out, other),
    }
}

/// The object of a built-in kind `kind` in `api_version` (what a list's item or a watch event's
/// object is), written in its order even if it does not carry its own `kind`.
pub(crate) fn write_typed(out: &mut Vec<u8>, api_version: &str, kind: &str, value: &Value) {
    match value {
        Value::Object(map) => write_object(out, map, order_of(api_version, kind), Meta::Write),
        other => write_plain(out, other),
    }
}

/// An item of a List of `kind`: a built-in kind's without its `kind` and `apiVersion` (see
/// [`Meta::Drop`]), a custom resource's with them, as it is stored.
pub(crate) fn write_list_item(out: &mut Vec<u8>, api_version: &str, kind: &str, value: &Value) {
    match value {
        Value::Object(map) => match order_of(api_version, kind) {
            order @ Order::Message(_) => write_object(out, map, order, Meta::Drop),
            order => write_object(out, map, order, Meta::Write),
        },
        other => write_plain(out, other),
    }
}

/// A List document: `kind`, `apiVersion`, `metadata`, `items` (Go's order) for a built-in
/// kind's list, sorted keys (`apiVersion`, `items`, `kind`, `metadata`) for an unstructured
/// one, as upstream's `UnstructuredList` encoding writes it. `item` writes each item.
pub(crate) fn write_list<T>(
    out: &mut Vec<u8>,
    api_version: &str,
    list_kind: &str,
    metadata: &Value,
    items: &[T],
    mut item: impl FnMut(&mut Vec<u8>, &T),
) {
    let mut items_json = |out: &mut Vec<u8>| {
        out.extend_from_slice(b"\"items\":[");
        for (i, it) in items.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            item(out, it);
        }
        out.push(b']');
    };
    match order_of(api_version, list_kind) {
        Order::Message(message) => {
            out.extend_from_slice(b"{\"kind\":");
            write_str(out, list_kind);
            out.extend_from_slice(b",\"apiVersion\":");
            write_str(out, api_version);
            out.extend_from_slice(b",\"metadata\":");
            match message.json_field("metadata") {
                Some(j) => write_field(out, j.2, metadata),
                None => write_plain(out, metadata),
            }
            out.push(b',');
            items_json(out);
        }
        _ => {
            out.extend_from_slice(b"{\"apiVersion\":");
            write_str(out, api_version);
            out.push(b',');
            items_json(out);
            out.extend_from_slice(b",\"kind\":");
            write_str(out, list_kind);
            out.extend_from_slice(b",\"metadata\":");
            write_plain(out, metadata);
        }
    }
    out.push(b'}');
}

/// How an object's keys are ordered.
#[derive(Clone, Copy)]
enum Order {
    /// Go struct order of this message.
    Message(&'static Message),
    /// `metav1.Table`, `TableColumnDefinition`, `TableRow`: they have no protobuf message (so
    /// are not in the generated schema); their Go field order, from
    /// k8s.io/apimachinery/pkg/apis/meta/v1/types.go.
    Table(&'static [&'static str]),
    Sorted,
}

const TABLE: &[&str] = &["metadata", "columnDefinitions", "rows"];
const TABLE_COLUMN: &[&str] = &["name", "type", "format", "description", "priority"];
const TABLE_ROW: &[&str] = &["cells", "conditions", "object"];

fn order_of(api_version: &str, kind: &str) -> Order {
    if kind == "Table" && matches!(api_version, "meta.k8s.io/v1" | "meta.k8s.io/v1beta1") {
        return Order::Table(TABLE);
    }
    if !schema::is_built_in(api_version) {
        return Order::Sorted;
    }
    match schema::message_for(api_version, kind).and_then(schema::message) {
        Some(m) => Order::Message(m),
        None => Order::Sorted,
    }
}

/// The order of a field's value, from the field's kind in its message.
fn nested(kind: Kind) -> Order {
    match kind {
        Kind::Msg(i) => schema::message(i).map_or(Order::Sorted, Order::Message),
        _ => Order::Sorted,
    }
}

/// What becomes of an object's `kind` and `apiVersion` where its message does not declare
/// them as fields (they are then Go's inline `TypeMeta`, the first fields of the struct).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Meta {
    /// Written first.
    Write,
    /// Left out: kube-apiserver's list items of built-in kinds carry no `TypeMeta` (the
    /// objects are converted from the internal version, which leaves it empty, and only the
    /// list is given its kind).
    Drop,
}

/// Objects with up to this many known fields are ordered without an allocation.
const STACK_FIELDS: usize = 24;

/// A known field of an object being written: its rank in Go's order, name, kind and value.
type Field<'a> = (u16, &'a str, Kind, &'a Value);

static NULL: Value = Value::Null;

fn is_type_meta(k: &str) -> bool {
    k == "kind" || k == "apiVersion"
}

fn write_object(out: &mut Vec<u8>, map: &Map<String, Value>, order: Order, meta: Meta) {
    match order {
        Order::Sorted => {
            // A custom resource or other unstructured value: Go writes a map sorted, as it is
            // stored; embedded typed objects do not occur in unstructured content.
            out.push(b'{');
            for (i, (k, v)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                write_str(out, k);
                out.push(b':');
                write_plain(out, v);
            }
            out.push(b'}');
        }
        Order::Table(fields) => {
            let mut first = true;
            out.push(b'{');
            if meta == Meta::Write {
                type_meta(out, map, &mut first);
            }
            for name in fields {
                if let Some(v) = map.get(*name) {
                    key(out, name, &mut first);
                    match *name {
                        "columnDefinitions" => each(out, v, |out, v| write_order(out, v, Order::Table(TABLE_COLUMN))),
                        "rows" => each(out, v, |out, v| write_order(out, v, Order::Table(TABLE_ROW))),
                        // The embedded object (a PartialObjectMetadata or the whole object) in
                        // its own kind's order.
                        "object" => write_top(out, v),
                        _ => write_plain(out, v),
                    }
                }
            }
            rest(out, map, |k| is_type_meta(k) || fields.contains(&k), &mut first);
            out.push(b'}');
        }
        Order::Message(message) if message.special != Special::None => write_special(out, map, message),
        Order::Message(message) => {
            let mut first = true;
            out.push(b'{');
            // (rank, key, kind, value) of the known fields; the others, sorted, after them. On
            // the stack unless there are many: this runs for every object of every list.
            let mut stack: [Field<'_>; STACK_FIELDS] = [(0, "", Kind::Bool, &NULL); STACK_FIELDS];
            let mut heap: Vec<Field<'_>> = Vec::new();
            let mut n = 0;
            let mut unknown = false;
            let mut inline_meta = false;
            // The map's keys and the message's fields are both sorted by name: one merging
            // pass finds each key's field, cheaper than a search per key.
            let mut declared = message.json.iter().peekable();
            for (k, v) in map {
                while declared.next_if(|j| j.0 < k.as_str()).is_some() {}
                match declared.peek().filter(|j| j.0 == k.as_str()) {
                    Some(j) => {
                        let field = (j.1, k.as_str(), j.2, v);
                        match stack.get_mut(n) {
                            Some(slot) => *slot = field,
                            None => heap.push(field),
                        }
                        n += 1;
                    }
                    None if is_type_meta(k) => inline_meta = true,
                    None => unknown = true,
                }
            }
            if inline_meta && meta == Meta::Write {
                type_meta(out, map, &mut first);
            }
            let fields: &mut [Field<'_>] = if heap.is_empty() {
                &mut stack[..n]
            } else {
                heap.extend_from_slice(&stack);
                &mut heap
            };
            fields.sort_unstable_by_key(|f| f.0);
            for &mut (_, k, kind, v) in fields {
                key(out, k, &mut first);
                write_field(out, kind, v);
            }
            if unknown {
                rest(out, map, |k| is_type_meta(k) || message.json_field(k).is_some(), &mut first);
            }
            out.push(b'}');
        }
    }
}

/// `kind`, then `apiVersion`: `TypeMeta`'s order.
fn type_meta(out: &mut Vec<u8>, map: &Map<String, Value>, first: &mut bool) {
    for name in ["kind", "apiVersion"] {
        if let Some(v) = map.get(name) {
            key(out, name, first);
            write_plain(out, v);
        }
    }
}

/// The keys `skip` does not name, in sorted order.
fn rest(out: &mut Vec<u8>, map: &Map<String, Value>, skip: impl Fn(&str) -> bool, first: &mut bool) {
    for (k, v) in map {
        if !skip(k) {
            key(out, k, first);
            write_plain(out, v);
        }
    }
}

fn key(out: &mut Vec<u8>, name: &str, first: &mut bool) {
    if !*first {
        out.push(b',');
    }
    *first = false;
    write_str(out, name);
    out.push(b':');
}

fn write_order(out: &mut Vec<u8>, value: &Value, order: Order) {
    match value {
        Value::Object(map) => write_object(out, map, order, Meta::Write),
        other => write_plain(out, other),
    }
}

/// Each element of a list through `f`; anything else as it is.
fn each(out: &mut Vec<u8>, value: &Value, f: impl Fn(&mut Vec<u8>, &Value)) {
    match value {
        Value::Array(items) => {
            out.push(b'[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(b',');
                }
                f(out, item);
            }
            out.push(b']');
        }
        other => write_plain(out, other),
    }
}

/// A field's value: a message (or a list of them) in its order, a map of messages with sorted
/// keys and ordered values, anything else as it is.
fn write_field(out: &mut Vec<u8>, kind: Kind, value: &Value) {
    match (kind, value) {
        (Kind::Msg(_), Value::Array(_)) => each(out, value, |out, v| write_order(out, v, nested(kind))),
        (Kind::Msg(_), Value::Object(map)) => write_object(out, map, nested(kind), Meta::Write),
        (Kind::Map(MapValue::Msg(i)), Value::Object(map)) => {
            out.push(b'{');
            for (n, (k, v)) in map.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                write_str(out, k);
                out.push(b':');
                write_field(out, Kind::Msg(i), v);
            }
            out.push(b'}');
        }
        _ => write_plain(out, value),
    }
}

/// A message whose JSON is not an object of its fields. The apiextensions schema wrappers
/// (`JSONSchemaPropsOrBool` ...) are written as the schema they hold; RawExtension is the
/// embedded object, typed if it says so; the rest are scalars.
fn write_special(out: &mut Vec<u8>, map: &Map<String, Value>, message: &'static Message) {
    match message.special {
        Special::SchemaOrBool | Special::SchemaOrArray | Special::SchemaOrStringArray => {
            let schema = message.fields.iter().find_map(|f| match f.2 {
                Kind::Msg(i) => Some(Kind::Msg(i)),
                _ => None,
            });
            match schema {
                Some(kind) => write_object(out, map, nested(kind), Meta::Write),
                None => write_object(out, map, Order::Sorted, Meta::Write),
            }
        }
        Special::RawJson => {
            let api_version = map.get("apiVersion").and_then(Value::as_str);
            let kind = map.get("kind").and_then(Value::as_str);
            let order = match (api_version, kind) {
                (Some(v), Some(k)) => order_of(v, k),
                _ => Order::Sorted,
            };
            write_object(out, map, order, Meta::Write);
        }
        _ => write_object(out, map, Order::Sorted, Meta::Write),
    }
}

/// Any value with sorted keys (how `serde_json::Value` holds them, and how Go writes maps).
fn write_plain(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Null => out.extend_from_slice(b"null"),
        Value::Bool(true) => out.extend_from_slice(b"true"),
        Value::Bool(false) => out.extend_from_slice(b"false"),
        Value::Number(n) => write_number(out, n),
        Value::String(s) => write_str(out, s),
        Value::Array(_) => each(out, value, write_plain),
        Value::Object(map) => write_object(out, map, Order::Sorted, Meta::Write),
    }
}

/// Integers as they are; a float that holds an integer as Go writes it (`3`, not `3.0`).
fn write_number(out: &mut Vec<u8>, n: &serde_json::Number) {
    if let Some(f) = n.as_f64().filter(|_| n.is_f64())
        && f.fract() == 0.0
        && f.abs() < 1e21
    {
        let _ = std::io::Write::write_fmt(out, format_args!("{f:.0}"));
        return;
    }
    // Integers as itoa writes them, without an allocation.
    if serde_json::to_writer(&mut *out, n).is_err() {
        out.extend_from_slice(b"null");
    }
}

/// How each byte of a string is written (see [`write_str`]): 0 as it is, `u` as `\u00XX`,
/// `E` maybe the start of U+2028 / U+2029, anything else as a backslash and that byte.
static ESCAPE: [u8; 256] = {
    let mut table = [0u8; 256];
    let mut b = 0;
    while b < 0x20 {
        table[b] = b'u';
        b += 1;
    }
    table[0x08] = b'b';
    table[0x09] = b't';
    table[0x0a] = b'n';
    table[0x0c] = b'f';
    table[0x0d] = b'r';
    table[b'"' as usize] = b'"';
    table[b'\\' as usize] = b'\\';
    table[b'<' as usize] = b'u';
    table[b'>' as usize] = b'u';
    table[b'&' as usize] = b'u';
    table[0xE2] = b'E';
    table
};

/// A string as Go's `encoding/json` escapes it with HTML escaping on (its default, and
/// apimachinery's serializer keeps it): `"`, `\`, control characters, `<`, `>`, `&`, U+2028
/// and U+2029.
fn write_str(out: &mut Vec<u8>, s: &str) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        let escape = ESCAPE[usize::from(b)];
        if escape == 0 {
            i += 1;
            continue;
        }
        if escape == b'E' {
            // U+2028 / U+2029: E2 80 A8 / E2 80 A9.
            match (bytes.get(i + 1), bytes.get(i + 2)) {
                (Some(0x80), Some(last @ (0xA8 | 0xA9))) => {
                    out.extend_from_slice(&bytes[start..i]);
                    out.extend_from_slice(if *last == 0xA8 { b"\\u2028" } else { b"\\u2029" });
                    i += 3;
                    start = i;
                }
                _ => i += 1,
            }
            continue;
        }
        out.extend_from_slice(&bytes[start..i]);
        if escape == b'u' {
            out.extend_from_slice(b"\\u00");
            out.push(HEX[usize::from(b >> 4)]);
            out.push(HEX[usize::from(b & 0xf)]);
        } else {
            out.push(b'\\');
            out.push(escape);
        }
        i += 1;
        start = i;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn text(v: &Value) -> String {
        String::from_utf8(body(v)).unwrap()
    }

    #[test]
    fn built_in_kinds_are_written_in_go_struct_order() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "data": {"b": "1", "a": "2"},
                        "metadata": {"uid": "u", "name": "n", "namespace": "ns", "labels": {"z": "1", "a": "2"}}});
        assert_eq!(
            text(&cm),
            "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"n\",\"namespace\":\"ns\",\
             \"uid\":\"u\",\"labels\":{\"a\":\"2\",\"z\":\"1\"}},\"data\":{\"a\":\"2\",\"b\":\"1\"}}\n"
        );
        let status = json!({"apiVersion": "v1", "kind": "Status", "code": 404, "details": {"name": "x", "kind": "pods"},
                            "message": "m", "metadata": {}, "reason": "NotFound", "status": "Failure"});
        assert_eq!(
            text(&status),
            "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"metadata\":{},\"status\":\"Failure\",\"message\":\"m\",\
             \"reason\":\"NotFound\",\"details\":{\"name\":\"x\",\"kind\":\"pods\"},\"code\":404}\n"
        );
    }

    #[test]
    fn unknown_keys_follow_sorted_and_custom_resources_stay_sorted() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "zz": 1, "aa": 2, "data": {}});
        assert_eq!(text(&cm), "{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\"data\":{},\"aa\":2,\"zz\":1}\n");
        let cr = json!({"kind": "Widget", "apiVersion": "example.com/v1", "spec": {"b": 1, "a": 2}, "metadata": {"name": "w"}});
        assert_eq!(
            text(&cr),
            "{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\"metadata\":{\"name\":\"w\"},\"spec\":{\"a\":2,\"b\":1}}\n"
        );
    }

    #[test]
    fn nested_lists_and_maps_of_messages_are_ordered() {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
            "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"protocol": "TCP", "containerPort": 80}]}],
                     "restartPolicy": "Always"},
            "status": {"phase": "Running"}});
        assert_eq!(
            text(&pod),
            "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"p\"},\"spec\":{\"containers\":[{\"name\":\"c\",\
             \"image\":\"i\",\"ports\":[{\"containerPort\":80,\"protocol\":\"TCP\"}]}],\"restartPolicy\":\"Always\"},\
             \"status\":{\"phase\":\"Running\"}}\n"
        );
    }

    #[test]
    fn built_in_list_items_carry_no_type_meta_and_nested_type_meta_comes_first() {
        let mut out = Vec::new();
        let items = [json!({"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "a"}, "data": {}})];
        write_list(&mut out, "v1", "ConfigMapList", &json!({"resourceVersion": "5"}), &items, |out, item| {
            write_list_item(out, "v1", "ConfigMap", item)
        });
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"kind\":\"ConfigMapList\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"5\"},\
             \"items\":[{\"metadata\":{\"name\":\"a\"},\"data\":{}}]}"
        );
        let mut out = Vec::new();
        let items = [json!({"kind": "Widget", "apiVersion": "example.com/v1", "metadata": {"name": "w"}})];
        write_list(&mut out, "example.com/v1", "WidgetList", &json!({}), &items, |out, item| {
            write_list_item(out, "example.com/v1", "Widget", item)
        });
        assert_eq!(
            String::from_utf8(out).unwrap(),
            "{\"apiVersion\":\"example.com/v1\",\"items\":[{\"apiVersion\":\"example.com/v1\",\"kind\":\"Widget\",\
             \"metadata\":{\"name\":\"w\"}}],\"kind\":\"WidgetList\",\"metadata\":{}}"
        );
        // PartialObjectMetadata in its list: TypeMeta first, then metadata; an
        // OwnerReference's own apiVersion and kind stay in their declared places.
        let list = json!({"kind": "PartialObjectMetadataList", "apiVersion": "meta.k8s.io/v1", "metadata": {},
            "items": [{"metadata": {"name": "a", "ownerReferences": [{"uid": "u", "name": "o", "kind": "K", "apiVersion": "v1"}]},
                       "kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1"}]});
        assert_eq!(
            text(&list),
            "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{},\"items\":[{\
             \"kind\":\"PartialObjectMetadata\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{\"name\":\"a\",\
             \"ownerReferences\":[{\"apiVersion\":\"v1\",\"kind\":\"K\",\"name\":\"o\",\"uid\":\"u\"}]}}]}\n"
        );
    }

    #[test]
    fn strings_are_escaped_as_go_does() {
        let v = json!({"a": "<b>&\u{2028}\u{1}\n\"\\é"});
        assert_eq!(text(&v), "{\"a\":\"\\u003cb\\u003e\\u0026\\u2028\\u0001\\n\\\"\\\\é\"}\n");
        assert_eq!(text(&json!(3.0)), "3\n");
        assert_eq!(text(&json!(0.5)), "0.5\n");
    }

    #[test]
    fn tables_follow_their_go_order_and_embed_objects_in_theirs() {
        let t = json!({"kind": "Table", "apiVersion": "meta.k8s.io/v1", "metadata": {"resourceVersion": "1"},
            "rows": [{"object": {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"uid": "u", "name": "n"}}, "cells": ["n"]}],
            "columnDefinitions": [{"type": "string", "name": "Name", "priority": 0, "format": "name", "description": "d"}]});
        assert_eq!(
            text(&t),
            "{\"kind\":\"Table\",\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{\"resourceVersion\":\"1\"},\
             \"columnDefinitions\":[{\"name\":\"Name\",\"type\":\"string\",\"format\":\"name\",\"description\":\"d\",\
             \"priority\":0}],\"rows\":[{\"cells\":[\"n\"],\"object\":{\"kind\":\"ConfigMap\",\"apiVersion\":\"v1\",\
             \"metadata\":{\"name\":\"n\",\"uid\":\"u\"}}}]}\n"
        );
    }
}
