//! `/openapi/v2` in protobuf: gnostic's `openapi.v2.Document`, the message kube-openapi
//! serves for `application/com.github.proto-openapi.spec.v2@v1.0+protobuf` and the only form
//! client-go's discovery asks for. kubectl reads it whenever the v3 index lacks an object's
//! group version (a CRD applied in the same command, a mistyped apiVersion), for its
//! `fieldValidation` check and client-side schema validation.
//!
//! Owns the encoding only: the document is the JSON one `super::v2` builds, so the two forms
//! cannot disagree. Encoded as gnostic's compiler reads JSON: `x-` keys become vendor
//! extensions, JSON maps become repeated `Named*` pairs in the map's order, and free-form
//! values (`default`, `enum`, `example`, extensions) an `Any` whose `yaml` is the value's JSON
//! (JSON is YAML). Keys the v2 message has no field for (a CRD's v3-only `nullable`, `oneOf`)
//! are dropped, as upstream's v3 → v2 conversion drops them. Field numbers are those of
//! gnostic's `openapiv2/OpenAPIv2.proto`.

use serde_json::{Map, Value};

/// The media type client-go asks for.
pub(crate) const MEDIA_TYPE: &str = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
/// The same, as kube-openapi spells it in its answers (and also accepts).
pub(crate) const ANSWERED_TYPE: &str = "application/com.github.proto-openapi.spec.v2.v1.0+protobuf";

/// `doc` (a Swagger 2.0 document) as an `openapi.v2.Document`.
pub(crate) fn document(doc: &Value) -> Vec<u8> {
    let o = object(doc);
    let mut m = Message::default();
    m.string(1, o.get("swagger"));
    m.message_of(2, o.get("info"), info);
    m.string(3, o.get("host"));
    m.string(4, o.get("basePath"));
    m.strings(5, o.get("schemes"));
    m.strings(6, o.get("consumes"));
    m.strings(7, o.get("produces"));
    m.message_of(8, o.get("paths"), |o| {
        let mut m = Message::default();
        m.extensions(1, o);
        m.named(2, o, path_item);
        m
    });
    m.message_of(9, o.get("definitions"), named_schemas);
    m.message_of(10, o.get("parameters"), |o| {
        let mut m = Message::default();
        m.named(1, o, |p| parameter(p).unwrap_or_default());
        m
    });
    m.message_of(11, o.get("responses"), |o| {
        let mut m = Message::default();
        m.named(1, o, response);
        m
    });
    m.extensions(16, o);
    m.0
}

fn info(o: &Map<String, Value>) -> Message {
    let mut m = Message::default();
    for (tag, key) in [(1, "title"), (2, "version"), (3, "description"), (4, "termsOfService")] {
        m.string(tag, o.get(key));
    }
    m.extensions(7, o);
    m
}

fn path_item(o: &Map<String, Value>) -> Message {
    let mut m = Message::default();
    m.string(1, o.get("$ref"));
    for (tag, verb) in [(2, "get"), (3, "put"), (4, "post"), (5, "delete"), (6, "options"), (7, "head"), (8, "patch")] {
        m.message_of(tag, o.get(verb), operation);
    }
    m.parameters(9, o.get("parameters"));
    m.extensions(10, o);
    m
}

fn operation(o: &Map<String, Value>) -> Message {
    let mut m = Message::default();
    m.strings(1, o.get("tags"));
    m.string(2, o.get("summary"));
    m.string(3, o.get("description"));
    m.string(5, o.get("operationId"));
    m.strings(6, o.get("produces"));
    m.strings(7, o.get("consumes"));
    m.parameters(8, o.get("parameters"));
    m.message_of(9, o.get("responses"), |o| {
        let mut m = Message::default();
        for (code, r) in o.iter().filter(|(k, _)| !k.starts_with("x-")) {
            let r = object(r);
            let value = if r.contains_key("$ref") { json_reference(r) } else { wrap(1, response(r)) };
            m.message(1, pair(code, value));
        }
        m.extensions(2, o);
        m
    });
    m.strings(10, o.get("schemes"));
    m.boolean(11, o.get("deprecated"));
    m.extensions(13, o);
    m
}

/// A `ParametersItem`: a reference, or a body or non-body `Parameter`.
fn parameters_item(o: &Map<String, Value>) -> Message {
    match parameter(o) {
        Some(p) => wrap(1, p),
        None => json_reference(o),
    }
}

/// A `Parameter` (None for a `$ref`): the body's schema, or a header, formData, query or path
/// parameter's primitive description.
fn parameter(o: &Map<String, Value>) -> Option<Message> {
    if o.contains_key("$ref") {
        return None;
    }
    let location = o.get("in").and_then(Value::as_str).unwrap_or_default();
    if location == "body" {
        let mut m = Message::default();
        m.string(1, o.get("description"));
        m.string(2, o.get("name"));
        m.string(3, o.get("in"));
        m.boolean(4, o.get("required"));
        m.message_of(5, o.get("schema"), schema);
        m.extensions(6, o);
        return Some(wrap(1, m));
    }
    // Query and formData parameters carry `allowEmptyValue` at 5, which shifts the rest by one.
    let (choice, allow_empty) = match location {
        "header" => (1, false),
        "formData" => (2, true),
        "path" => (4, false),
        _ => (3, true),
    };
    let mut m = Message::default();
    m.boolean(1, o.get("required"));
    m.string(2, o.get("in"));
    m.string(3, o.get("description"));
    m.string(4, o.get("name"));
    let first = if allow_empty {
        m.boolean(5, o.get("allowEmptyValue"));
        6
    } else {
        5
    };
    let last = m.primitive(first, o);
    m.extensions(last + 1, o);
    Some(wrap(2, wrap(choice, m)))
}

fn json_reference(o: &Map<String, Value>) -> Message {
    let mut m = Message::default();
    m.string(1, o.get("$ref"));
    m.string(2, o.get("description"));
    wrap(2, m)
}

fn response(o: &Map<String, Value>) -> Message {
    let mut m = Message::default();
    m.string(1, o.get("description"));
    m.message_of(2, o.get("schema"), |s| wrap(1, schema(s)));
    m.extensions(5, o);
    m
}

fn named_schemas(o: &Map<String, Value>) -> Message {
    let mut m = Message::default();
    m.named(1, o, schema);
    m
}

fn schema(o: &Map<String, Value>) -> Message {
    let mut m = Message::default();
    for (tag, key) in [(1, "$ref"), (2, "format"), (3, "title"), (4, "description")] {
        m.string(tag, o.get(key));
    }
    m.any(5, o.get("default"));
    m.double(6, o.get("multipleOf"));
    m.double(7, o.get("maximum"));
    m.boolean(8, o.get("exclusiveMaximum"));
    m.double(9, o.get("minimum"));
    m.boolean(10, o.get("exclusiveMinimum"));
    m.int64(11, o.get("maxLength"));
    m.int64(12, o.get("minLength"));
    m.string(13, o.get("pattern"));
    m.int64(14, o.get("maxItems"));
    m.int64(15, o.get("minItems"));
    m.boolean(16, o.get("uniqueItems"));
    m.int64(17, o.get("maxProperties"));
    m.int64(18, o.get("minProperties"));
    m.strings(19, o.get("required"));
    for value in o.get("enum").and_then(Value::as_array).into_iter().flatten() {
        m.any(20, Some(value));
    }
    match o.get("additionalProperties") {
        Some(Value::Bool(b)) => {
            // A oneof's choice is written even at its zero value: `false` is not absent.
            let mut choice = Message::default();
            choice.key(2, 0);
            choice.varint(u64::from(*b));
            m.message(21, choice);
        }
        Some(Value::Object(s)) => m.message(21, wrap(1, schema(s))),
        _ => {}
    }
    if o.contains_key("type") {
        let mut types = Message::default();
        types.strings(1, o.get("type"));
        m.message(22, types);
    }
    match o.get("items") {
        Some(Value::Object(s)) => m.message(23, wrap(1, schema(s))),
        Some(Value::Array(items)) => {
            let mut all = Message::default();
            items.iter().for_each(|s| all.message(1, schema(object(s))));
            m.message(23, all);
        }
        _ => {}
    }
    for s in o.get("allOf").and_then(Value::as_array).into_iter().flatten() {
        m.message(24, schema(object(s)));
    }
    // Present though empty is not absent: kubectl reads `properties: {}` as a kind, not a map.
    m.message_of(25, o.get("properties"), named_schemas);
    m.string(26, o.get("discriminator"));
    m.boolean(27, o.get("readOnly"));
    m.any(30, o.get("example"));
    m.extensions(31, o);
    m
}

fn object(v: &Value) -> &Map<String, Value> {
    static EMPTY: std::sync::LazyLock<Map<String, Value>> = std::sync::LazyLock::new(Map::new);
    v.as_object().unwrap_or(&EMPTY)
}

/// A message whose only field, `tag`, is `inner` (a oneof's choice, or a one-field wrapper).
fn wrap(tag: u32, inner: Message) -> Message {
    let mut m = Message::default();
    m.message(tag, inner);
    m
}

fn any(v: &Value) -> Message {
    let mut m = Message::default();
    m.bytes(2, v.to_string().as_bytes());
    m
}

/// A `Named*` pair: the key at 1, the value's message at 2.
fn pair(name: &str, value: Message) -> Message {
    let mut m = Message::default();
    m.string(1, Some(&Value::String(name.to_owned())));
    m.message(2, value);
    m
}

/// One message's encoding, fields appended in tag order by the functions above. Proto3: a
/// scalar at its zero value is left out, a present sub-message is written even when empty.
#[derive(Default)]
struct Message(Vec<u8>);

impl Message {
    fn varint(&mut self, mut v: u64) {
        while v >= 0x80 {
            self.0.push((v as u8) | 0x80);
            v >>= 7;
        }
        self.0.push(v as u8);
    }

    fn key(&mut self, tag: u32, wire_type: u8) {
        self.varint(u64::from(tag) << 3 | u64::from(wire_type));
    }

    fn bytes(&mut self, tag: u32, data: &[u8]) {
        self.key(tag, 2);
        self.varint(data.len() as u64);
        self.0.extend_from_slice(data);
    }

    fn message(&mut self, tag: u32, m: Message) {
        self.bytes(tag, &m.0);
    }

    /// The message `f` makes of `v`, if `v` is an object.
    fn message_of(&mut self, tag: u32, v: Option<&Value>, f: impl FnOnce(&Map<String, Value>) -> Message) {
        if let Some(Value::Object(o)) = v {
            self.message(tag, f(o));
        }
    }

    fn string(&mut self, tag: u32, v: Option<&Value>) {
        if let Some(s) = v.and_then(Value::as_str).filter(|s| !s.is_empty()) {
            self.bytes(tag, s.as_bytes());
        }
    }

    /// A repeated string from an array, or from a lone string (a schema's `type: string`).
    fn strings(&mut self, tag: u32, v: Option<&Value>) {
        match v {
            Some(Value::Array(items)) => {
                items.iter().filter_map(Value::as_str).for_each(|s| self.bytes(tag, s.as_bytes()))
            }
            Some(Value::String(s)) => self.bytes(tag, s.as_bytes()),
            _ => {}
        }
    }

    fn boolean(&mut self, tag: u32, v: Option<&Value>) {
        if v.and_then(Value::as_bool) == Some(true) {
            self.key(tag, 0);
            self.varint(1);
        }
    }

    fn int64(&mut self, tag: u32, v: Option<&Value>) {
        if let Some(i) = v.and_then(Value::as_i64).filter(|i| *i != 0) {
            self.key(tag, 0);
            // Two's complement in ten bytes, as protobuf encodes a negative int64.
            self.varint(i as u64);
        }
    }

    fn double(&mut self, tag: u32, v: Option<&Value>) {
        if let Some(f) = v.and_then(Value::as_f64).filter(|f| *f != 0.0) {
            self.key(tag, 1);
            self.0.extend_from_slice(&f.to_le_bytes());
        }
    }

    /// gnostic's `Any`: the value as YAML text at 2.
    fn any(&mut self, tag: u32, v: Option<&Value>) {
        if let Some(v) = v {
            self.message(tag, any(v));
        }
    }

    /// The object's `x-` keys as repeated `NamedAny`.
    fn extensions(&mut self, tag: u32, o: &Map<String, Value>) {
        for (k, v) in o.iter().filter(|(k, _)| k.starts_with("x-")) {
            self.message(tag, pair(k, any(v)));
        }
    }

    /// A JSON map as repeated `Named*` pairs, each value made by `f` (vendor extensions, where
    /// the message has them, are written apart by `extensions`).
    fn named(&mut self, tag: u32, o: &Map<String, Value>, f: impl Fn(&Map<String, Value>) -> Message) {
        for (k, v) in o.iter().filter(|(k, _)| !k.starts_with("x-")) {
            self.message(tag, pair(k, f(object(v))));
        }
    }

    fn parameters(&mut self, tag: u32, v: Option<&Value>) {
        for p in v.and_then(Value::as_array).into_iter().flatten() {
            self.message(tag, parameters_item(object(p)));
        }
    }

    /// The primitive description a non-body parameter and `PrimitivesItems` share, from
    /// `type` at `first` to `multipleOf` at `first + 16`; returns that last tag.
    fn primitive(&mut self, first: u32, o: &Map<String, Value>) -> u32 {
        self.string(first, o.get("type"));
        self.string(first + 1, o.get("format"));
        self.message_of(first + 2, o.get("items"), |items| {
            let mut m = Message::default();
            let last = m.primitive(1, items);
            m.extensions(last + 1, items);
            m
        });
        self.string(first + 3, o.get("collectionFormat"));
        self.any(first + 4, o.get("default"));
        self.double(first + 5, o.get("maximum"));
        self.boolean(first + 6, o.get("exclusiveMaximum"));
        self.double(first + 7, o.get("minimum"));
        self.boolean(first + 8, o.get("exclusiveMinimum"));
        self.int64(first + 9, o.get("maxLength"));
        self.int64(first + 10, o.get("minLength"));
        self.string(first + 11, o.get("pattern"));
        self.int64(first + 12, o.get("maxItems"));
        self.int64(first + 13, o.get("minItems"));
        self.boolean(first + 14, o.get("uniqueItems"));
        for value in o.get("enum").and_then(Value::as_array).into_iter().flatten() {
            self.any(first + 15, Some(value));
        }
        self.double(first + 16, o.get("multipleOf"));
        first + 16
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    // Keys of tags 16 and up take two bytes: (tag << 3 | wire type) as a varint.
    #[test]
    fn a_schema_keeps_what_presence_means_and_drops_what_v2_lacks() {
        let s = json!({"type": "object", "properties": {}, "additionalProperties": false,
                       "nullable": true, "minimum": -1, "x-kubernetes-int-or-string": true});
        let mut want = vec![9 << 3 | 1]; // minimum, a double
        want.extend_from_slice(&(-1.0f64).to_le_bytes());
        want.extend_from_slice(&[0xAA, 1, 2, 2 << 3, 0]); // 21 additionalProperties: {boolean: false}
        want.extend_from_slice(&[0xB2, 1, 8, 1 << 3 | 2, 6]); // 22 type: {value: ["object"]}
        want.extend_from_slice(b"object");
        want.extend_from_slice(&[0xCA, 1, 0]); // 25 properties: {}, present though empty
        let ext = b"x-kubernetes-int-or-string";
        want.extend_from_slice(&[0xFA, 1, 36, 1 << 3 | 2, 26]); // 31 NamedAny{name, value}
        want.extend_from_slice(ext);
        want.extend_from_slice(&[2 << 3 | 2, 6, 2 << 3 | 2, 4]); // Any{yaml: "true"}
        want.extend_from_slice(b"true");
        assert_eq!(schema(object(&s)).0, want);
    }

    #[test]
    fn a_query_parameter_is_a_non_body_parameters_query_choice() {
        let p = json!({"name": "dryRun", "in": "query", "type": "string", "uniqueItems": true});
        let mut fields = vec![2 << 3 | 2, 5];
        fields.extend_from_slice(b"query");
        fields.extend_from_slice(&[4 << 3 | 2, 6]);
        fields.extend_from_slice(b"dryRun");
        fields.extend_from_slice(&[6 << 3 | 2, 6]);
        fields.extend_from_slice(b"string");
        fields.extend_from_slice(&[0xA0, 1, 1]); // 20 uniqueItems
        // ParametersItem.parameter(1) → Parameter.non_body_parameter(2) → query(3) → fields.
        let n = fields.len() as u8;
        let mut want = vec![1 << 3 | 2, n + 4, 2 << 3 | 2, n + 2, 3 << 3 | 2, n];
        want.extend_from_slice(&fields);
        assert_eq!(parameters_item(object(&p)).0, want);
    }
}
