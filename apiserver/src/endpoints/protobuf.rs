//! Decodes Kubernetes protobuf request bodies into the JSON the rest of the server stores.
//!
//! kubectl's typed commands (`kubectl create deployment ...`) and client-go clients configured
//! for protobuf send `k8s\0` followed by a `runtime.Unknown` envelope whose `raw` field is the
//! object's own message. Messages are walked with a schema generated at build time from the
//! k8s-pb and k8s-openapi sources (see `build/protobuf_schema.rs`), so no protobuf library
//! or per-kind code is needed, and field names come out exactly as in Kubernetes JSON.

use base64::Engine as _;
use serde_json::{Map, Value};

use crate::schema::{F, INLINE, KEEP_ZERO, Kind, MapValue, Message, REPEATED, Special, message, message_for};

#[derive(Debug, thiserror::Error)]
pub(crate) enum ProtobufError {
    #[error("{0}")]
    Malformed(String),
    #[error("{0}")]
    Unsupported(String),
}

type Result<T> = std::result::Result<T, ProtobufError>;

const MAGIC: &[u8] = b"k8s\0";
/// Real objects nest about a dozen messages deep; the limit only stops hostile bodies from
/// exhausting the stack.
const MAX_DEPTH: usize = 64;

fn malformed(msg: impl Into<String>) -> ProtobufError {
    ProtobufError::Malformed(format!("error decoding protobuf request body: {}", msg.into()))
}

/// Decodes a Kubernetes protobuf body (with the `k8s\0` magic) into Kubernetes JSON.
pub(crate) fn decode(body: &[u8]) -> Result<Value> {
    decode_envelope(body, 0)
}

fn decode_envelope(body: &[u8], depth: usize) -> Result<Value> {
    let envelope = body.strip_prefix(MAGIC).ok_or_else(|| malformed("missing the k8s protobuf magic prefix"))?;
    let (mut api_version, mut kind, mut raw, mut encoding, mut content_type) = ("", "", &[][..], "", "");
    let mut r = Reader::new(envelope);
    while let Some((tag, wire)) = r.key()? {
        match tag {
            1 => {
                let mut meta = Reader::new(r.len_delimited(wire)?);
                while let Some((tag, wire)) = meta.key()? {
                    match tag {
                        1 => api_version = meta.string(wire)?,
                        2 => kind = meta.string(wire)?,
                        _ => meta.skip(wire)?,
                    }
                }
            }
            2 => raw = r.len_delimited(wire)?,
            3 => encoding = r.string(wire)?,
            4 => content_type = r.string(wire)?,
            _ => r.skip(wire)?,
        }
    }
    if !encoding.is_empty() {
        return Err(ProtobufError::Unsupported(format!(
            "protobuf bodies with content encoding {encoding:?} are not supported"
        )));
    }
    if !content_type.is_empty() && content_type != "application/vnd.kubernetes.protobuf" {
        return Err(ProtobufError::Unsupported(format!(
            "protobuf envelopes carrying {content_type:?} are not supported"
        )));
    }
    if kind.is_empty() {
        return Err(malformed("the envelope names no kind"));
    }
    let index = message_for(api_version, kind).ok_or_else(|| {
        ProtobufError::Unsupported(format!(
            "protobuf is not supported for {kind} in {api_version:?}; send JSON or YAML instead"
        ))
    })?;
    let mut object = Map::new();
    object.insert("apiVersion".into(), Value::String(api_version.into()));
    object.insert("kind".into(), Value::String(kind.into()));
    if let Some(Value::Object(fields)) = decode_message(index, raw, depth + 1)? {
        object.extend(fields);
    }
    Ok(Value::Object(object))
}

/// `None` means the value is absent in JSON (a zero `Time`, an empty `RawExtension`).
fn decode_message(index: u16, bytes: &[u8], depth: usize) -> Result<Option<Value>> {
    if depth > MAX_DEPTH {
        return Err(malformed("objects are nested too deeply"));
    }
    let message = message(index).ok_or_else(|| malformed("schema index out of range"))?;
    match message.special {
        Special::None => {
            let mut object = Map::new();
            decode_fields(message, bytes, depth, &mut object)?;
            Ok(Some(Value::Object(object)))
        }
        special @ (Special::SchemaOrBool | Special::SchemaOrArray | Special::SchemaOrStringArray) => {
            let mut object = Map::new();
            decode_fields(message, bytes, depth, &mut object)?;
            Ok(Some(schema_or(special, message, object)))
        }
        special => decode_special(special, bytes, depth),
    }
}

/// The JSON of a JSONSchemaPropsOr* message, as its Go MarshalJSON writes it.
fn schema_or(special: Special, message: &Message, mut fields: Map<String, Value>) -> Value {
    let mut take = |tag: u32| message.field(tag).and_then(|f| fields.remove(f.1));
    match special {
        // Tag 1 `allows`, tag 2 `schema`: the schema if set, else the bool (false when unset).
        Special::SchemaOrBool => match take(2) {
            Some(schema) => schema,
            None => Value::Bool(take(1) == Some(Value::Bool(true))),
        },
        // Tag 1 `schema`, tag 2 the list: the list if not empty, else the schema (null if unset).
        _ => match take(2) {
            Some(Value::Array(items)) if !items.is_empty() => Value::Array(items),
            _ => take(1).unwrap_or(Value::Null),
        },
    }
}

fn decode_fields(message: &Message, bytes: &[u8], depth: usize, object: &mut Map<String, Value>) -> Result<()> {
    let mut r = Reader::new(bytes);
    while let Some((tag, wire)) = r.key()? {
        let Some(field) = message.field(tag) else {
            r.skip(wire)?;
            continue;
        };
        let F(_, json, kind, flags, _) = *field;
        let wrong_wire = || malformed(format!("field {json:?} of {}: unexpected wire type {wire}", message.name));
        match kind {
            Kind::Map(value_kind) => {
                let (key, value) = decode_map_entry(r.len_delimited(wire)?, value_kind, depth + 1)?;
                let entry = object.entry(json).or_insert_with(|| Value::Object(Map::new()));
                if !entry.is_object() {
                    *entry = Value::Object(Map::new());
                }
                if let Value::Object(map) = entry {
                    map.insert(key, value);
                }
            }
            Kind::Msg(index) if flags & INLINE != 0 => {
                let inner = crate::schema::message(index).ok_or_else(|| malformed("schema index out of range"))?;
                if depth + 1 > MAX_DEPTH {
                    return Err(malformed("objects are nested too deeply"));
                }
                decode_fields(inner, r.len_delimited(wire)?, depth + 1, object)?;
            }
            Kind::Msg(index) => {
                let value = decode_message(index, r.len_delimited(wire)?, depth + 1)?;
                put(object, json, flags, value, false);
            }
            Kind::I32 | Kind::I64 | Kind::Bool if wire == WIRE_LEN && flags & REPEATED != 0 => {
                // Packed encoding: proto2 allows it for repeated scalars even when not declared.
                let mut packed = Reader::new(r.len_delimited(wire)?);
                while !packed.is_empty() {
                    put(object, json, flags, Some(scalar(kind, packed.varint()?)), true);
                }
            }
            Kind::I32 | Kind::I64 | Kind::Bool => {
                if wire != WIRE_VARINT {
                    return Err(wrong_wire());
                }
                put(object, json, flags, Some(scalar(kind, r.varint()?)), true);
            }
            Kind::F64 => {
                if wire != WIRE_I64 {
                    return Err(wrong_wire());
                }
                let bits = r.take(8)?.try_into().map_err(|_| malformed("truncated double"))?;
                let number = serde_json::Number::from_f64(f64::from_le_bytes(bits));
                put(object, json, flags, Some(number.map_or(Value::Null, Value::Number)), true);
            }
            Kind::Str => put(object, json, flags, Some(Value::String(r.string(wire)?.to_owned())), true),
            Kind::Bytes => {
                let encoded = base64::engine::general_purpose::STANDARD.encode(r.len_delimited(wire)?);
                put(object, json, flags, Some(Value::String(encoded)), true);
            }
        }
    }
    Ok(())
}

fn scalar(kind: Kind, v: u64) -> Value {
    match kind {
        // Go writes a negative int32 sign-extended to 64 bits; truncating undoes that.
        Kind::I32 => Value::from(v as i32),
        Kind::Bool => Value::Bool(v != 0),
        _ => Value::from(v as i64),
    }
}

fn is_zero(value: &Value) -> bool {
    match value {
        Value::Bool(b) => !b,
        Value::Number(n) => n.as_i64() == Some(0),
        Value::String(s) => s.is_empty(),
        _ => false,
    }
}

/// Stores a decoded value: appended for repeated fields, else last one wins (as in protobuf).
fn put(object: &mut Map<String, Value>, json: &str, flags: u8, value: Option<Value>, scalar: bool) {
    if flags & REPEATED != 0 {
        let entry = object.entry(json).or_insert_with(|| Value::Array(Vec::new()));
        if !entry.is_array() {
            *entry = Value::Array(Vec::new());
        }
        if let (Value::Array(items), Some(value)) = (entry, value) {
            items.push(value);
        }
        return;
    }
    match value {
        Some(value) if !(scalar && flags & KEEP_ZERO == 0 && is_zero(&value)) => {
            object.insert(json.to_owned(), value);
        }
        _ => {
            object.remove(json);
        }
    }
}

fn decode_map_entry(bytes: &[u8], value_kind: MapValue, depth: usize) -> Result<(String, Value)> {
    let mut r = Reader::new(bytes);
    let (mut key, mut value) = (String::new(), None);
    while let Some((tag, wire)) = r.key()? {
        match tag {
            1 => key = r.string(wire)?.to_owned(),
            2 => value = Some(map_value(value_kind, r.len_delimited(wire)?, depth)?),
            _ => r.skip(wire)?,
        }
    }
    // An absent value is the type's zero value, as for any protobuf field.
    let value = match value {
        Some(value) => value,
        None => map_value(value_kind, &[], depth)?,
    };
    Ok((key, value))
}

fn map_value(kind: MapValue, bytes: &[u8], depth: usize) -> Result<Value> {
    Ok(match kind {
        MapValue::Str => Value::String(utf8(bytes)?.to_owned()),
        MapValue::Bytes => Value::String(base64::engine::general_purpose::STANDARD.encode(bytes)),
        MapValue::Msg(index) => decode_message(index, bytes, depth)?.unwrap_or(Value::Null),
    })
}

fn decode_special(special: Special, bytes: &[u8], depth: usize) -> Result<Option<Value>> {
    // All special messages have at most three fields with small tags; collect them generically.
    let mut ints = [0u64; 4];
    let mut blobs: [&[u8]; 4] = [&[]; 4];
    let mut r = Reader::new(bytes);
    while let Some((tag, wire)) = r.key()? {
        let slot = usize::try_from(tag).unwrap_or(usize::MAX);
        match (ints.get_mut(slot), wire) {
            (Some(int), WIRE_VARINT) => *int = r.varint()?,
            (Some(_), WIRE_LEN) => {
                if let Some(blob) = blobs.get_mut(slot) {
                    *blob = r.len_delimited(wire)?;
                }
            }
            _ => r.skip(wire)?,
        }
    }
    let [_, first, second, _] = ints;
    Ok(match special {
        Special::None | Special::SchemaOrBool | Special::SchemaOrArray | Special::SchemaOrStringArray => None,
        Special::Time | Special::MicroTime => {
            let (seconds, nanos) = (first as i64, second as i32);
            if seconds == 0 && nanos == 0 {
                // Go's zero time, which Kubernetes JSON writes as null or leaves out.
                return Ok(None);
            }
            let ts = jiff::Timestamp::new(seconds, nanos).map_err(|e| malformed(format!("invalid time: {e}")))?;
            let format = if special == Special::Time { "%Y-%m-%dT%H:%M:%SZ" } else { "%Y-%m-%dT%H:%M:%S%.6fZ" };
            Some(Value::String(ts.strftime(format).to_string()))
        }
        Special::Duration => Some(Value::String(go_duration(first as i64))),
        Special::IntOrString => Some(match first {
            1 => Value::String(utf8(blobs[3])?.to_owned()),
            _ => Value::from(second as i32),
        }),
        Special::Quantity => {
            let text = utf8(blobs[1])?;
            (!text.is_empty()).then(|| Value::String(text.to_owned()))
        }
        Special::RawJson => {
            let raw = blobs[1];
            if raw.is_empty() {
                None
            } else if raw.starts_with(MAGIC) {
                // An embedded object serialised as protobuf rather than JSON.
                Some(decode_envelope(raw, depth + 1)?)
            } else {
                Some(serde_json::from_slice(raw).map_err(|e| malformed(format!("embedded JSON: {e}")))?)
            }
        }
    })
}

/// Go's `time.Duration.String()`, which is how metav1.Duration appears in JSON.
fn go_duration(nanos: i64) -> String {
    let mut u = nanos.unsigned_abs();
    let sign = if nanos < 0 { "-" } else { "" };
    if u == 0 {
        return "0s".into();
    }
    // Drops trailing zeros of the fraction below 10^digits, and the point when nothing is left.
    let frac = |v: u64, digits: u32| -> (String, u64) {
        let scale = 10u64.pow(digits);
        let text = format!("{:0width$}", v % scale, width = digits as usize);
        let text = text.trim_end_matches('0');
        (if text.is_empty() { String::new() } else { format!(".{text}") }, v / scale)
    };
    if u < 1_000_000_000 {
        let (digits, unit) = match u {
            0..1_000 => (0, "ns"),
            1_000..1_000_000 => (3, "µs"),
            _ => (6, "ms"),
        };
        let (fraction, whole) = frac(u, digits);
        return format!("{sign}{whole}{fraction}{unit}");
    }
    let (fraction, seconds) = frac(u, 9);
    u = seconds;
    let mut out = format!("{}{fraction}s", u % 60);
    u /= 60;
    if u > 0 {
        out = format!("{}m{out}", u % 60);
        u /= 60;
        if u > 0 {
            out = format!("{u}h{out}");
        }
    }
    format!("{sign}{out}")
}

fn utf8(bytes: &[u8]) -> Result<&str> {
    std::str::from_utf8(bytes).map_err(|_| malformed("a string field is not valid UTF-8"))
}

const WIRE_VARINT: u8 = 0;
const WIRE_I64: u8 = 1;
const WIRE_LEN: u8 = 2;
const WIRE_I32: u8 = 5;

/// Bounds-checked cursor over protobuf wire data.
struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    fn new(buf: &'a [u8]) -> Self {
        Reader { buf }
    }

    fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.buf.len() {
            return Err(malformed("truncated message"));
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    fn varint(&mut self) -> Result<u64> {
        let mut value = 0u64;
        for i in 0..10 {
            let [byte, rest @ ..] = self.buf else { return Err(malformed("truncated varint")) };
            self.buf = rest;
            value |= u64::from(byte & 0x7f) << (7 * i);
            if byte & 0x80 == 0 {
                return Ok(value);
            }
        }
        Err(malformed("varint longer than 10 bytes"))
    }

    /// The next field's (tag, wire type), or `None` at the end of the message.
    fn key(&mut self) -> Result<Option<(u32, u8)>> {
        if self.is_empty() {
            return Ok(None);
        }
        let key = self.varint()?;
        let tag = u32::try_from(key >> 3).map_err(|_| malformed("field number out of range"))?;
        if tag == 0 {
            return Err(malformed("field number 0"));
        }
        Ok(Some((tag, (key & 7) as u8)))
    }

    fn len_delimited(&mut self, wire: u8) -> Result<&'a [u8]> {
        if wire != WIRE_LEN {
            return Err(malformed(format!("expected a length-delimited field, got wire type {wire}")));
        }
        let len = self.varint()?;
        self.take(usize::try_from(len).map_err(|_| malformed("length out of range"))?)
    }

    fn string(&mut self, wire: u8) -> Result<&'a str> {
        utf8(self.len_delimited(wire)?)
    }

    fn skip(&mut self, wire: u8) -> Result<()> {
        match wire {
            WIRE_VARINT => self.varint().map(drop),
            WIRE_I64 => self.take(8).map(drop),
            WIRE_LEN => self.len_delimited(wire).map(drop),
            WIRE_I32 => self.take(4).map(drop),
            _ => Err(malformed(format!("unsupported wire type {wire}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/protobuf");

    /// Each `<name>.pb` is the body kubectl v1.35 POSTed for a typed `kubectl create` command,
    /// `<name>.json` the output of the same command with `--dry-run=client -o json`.
    #[test]
    fn kubectl_bodies_decode_to_kubectl_json() {
        let names = [
            "namespace",
            "deployment-web",
            "deployment-api",
            "deployment-zero",
            "configmap",
            "secret",
            "serviceaccount",
            "service",
        ];
        for name in names {
            let pb = std::fs::read(format!("{FIXTURES}/{name}.pb")).unwrap();
            let expected: Value =
                serde_json::from_slice(&std::fs::read(format!("{FIXTURES}/{name}.json")).unwrap()).unwrap();
            assert_eq!(decode(&pb).unwrap(), expected, "fixture {name}");
        }
    }

    fn varint(mut v: u64, out: &mut Vec<u8>) {
        while v >= 0x80 {
            out.push((v as u8) | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn int_field(tag: u32, v: u64) -> Vec<u8> {
        let mut out = Vec::new();
        varint(u64::from(tag) << 3, &mut out);
        varint(v, &mut out);
        out
    }

    fn len_field(tag: u32, bytes: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        varint((u64::from(tag) << 3) | 2, &mut out);
        varint(bytes.len() as u64, &mut out);
        out.extend_from_slice(bytes);
        out
    }

    fn envelope(api_version: &str, kind: &str, raw: &[u8]) -> Vec<u8> {
        let type_meta = [len_field(1, api_version.as_bytes()), len_field(2, kind.as_bytes())].concat();
        [MAGIC.to_vec(), len_field(1, &type_meta), len_field(2, raw)].concat()
    }

    #[test]
    fn special_types_transcode_like_kubernetes_json() {
        let time = [int_field(1, 1_700_000_000), int_field(2, 0)].concat();
        let micro = [int_field(1, 1_700_000_000), int_field(2, 123_456_000)].concat();
        let metadata = [len_field(1, b"e"), len_field(8, &time), len_field(9, &[])].concat();
        let event = [
            len_field(1, &metadata),
            len_field(2, &micro),
            // An unknown field of every wire type is skipped.
            int_field(99, 5),
            len_field(98, b"ignored"),
            vec![0xb9, 0x06, 1, 2, 3, 4, 5, 6, 7, 8],
            vec![0xc5, 0x06, 1, 2, 3, 4],
        ]
        .concat();
        let decoded = decode(&envelope("events.k8s.io/v1", "Event", &event)).unwrap();
        assert_eq!(
            decoded,
            json!({
                "apiVersion": "events.k8s.io/v1",
                "kind": "Event",
                "metadata": {"name": "e", "creationTimestamp": "2023-11-14T22:13:20Z"},
                "eventTime": "2023-11-14T22:13:20.123456Z",
            })
        );

        // Quantities in a map, a negative int32, and a string IntOrString.
        let quantity = len_field(1, b"500m");
        let limits = [len_field(1, b"cpu"), len_field(2, &quantity)].concat();
        let resources = len_field(1, &limits);
        let int_or_string = [int_field(1, 1), len_field(3, b"http")].concat();
        let http_get = [len_field(1, b"/healthz"), len_field(2, &int_or_string)].concat();
        let handler = len_field(2, &http_get);
        let probe = [len_field(1, &handler), int_field(4, 10)].concat();
        let container = [
            len_field(1, b"c"),
            len_field(8, &resources),
            len_field(10, &probe),
            // terminationMessagePath "" from Go's always-written strings is dropped.
            len_field(13, b""),
        ]
        .concat();
        let spec = [len_field(2, &container), int_field(4, u64::MAX - 1), int_field(21, 0)].concat();
        let decoded = decode(&envelope("v1", "Pod", &len_field(2, &spec))).unwrap();
        assert_eq!(
            decoded["spec"],
            json!({
                "containers": [{
                    "name": "c",
                    "resources": {"limits": {"cpu": "500m"}},
                    "livenessProbe": {"httpGet": {"path": "/healthz", "port": "http"}, "periodSeconds": 10},
                }],
                "terminationGracePeriodSeconds": -2,
                "automountServiceAccountToken": false,
            })
        );

        // RawExtension holds JSON; FieldsV1 too.
        let revision = [len_field(2, &len_field(1, br#"{"a":[1]}"#)), int_field(3, 2)].concat();
        let decoded = decode(&envelope("apps/v1", "ControllerRevision", &revision)).unwrap();
        assert_eq!(
            decoded,
            json!({"apiVersion": "apps/v1", "kind": "ControllerRevision", "data": {"a": [1]}, "revision": 2})
        );
    }

    /// What the generator once got wrong here: `$schema` (JSONSchemaProps') for the `schema` of
    /// JSONSchemaPropsOr*, which Go writes as a bare value, and `JSON` (`Json` in prost) decoded
    /// as an object of its raw bytes.
    #[test]
    fn crd_schemas_transcode_like_kubernetes_json() {
        let string = len_field(5, b"string");
        let with_type = |t: &[u8], rest: &[u8]| [len_field(5, t), rest.to_vec()].concat();
        // additionalProperties: a schema (OrBool tag 2), then `false` (tag 1 unset).
        let labels = with_type(b"object", &len_field(30, &len_field(2, &string)));
        let closed = with_type(b"object", &len_field(30, &[]));
        // items: one schema (OrArray tag 1), then a list of two (tag 2).
        let tags = with_type(b"array", &len_field(24, &len_field(1, &string)));
        let tuple = with_type(b"array", &len_field(24, &[len_field(2, &string), len_field(2, &string)].concat()));
        // default: apiextensions JSON (prost's `Json`), raw JSON in field 1.
        let mode = with_type(b"string", &len_field(8, &len_field(1, br#""fast""#)));
        let property = |name: &[u8], schema: &[u8]| len_field(29, &[len_field(1, name), len_field(2, schema)].concat());
        let root = with_type(
            b"object",
            &[
                property(b"labels", &labels),
                property(b"closed", &closed),
                property(b"tags", &tags),
                property(b"pair", &tuple),
                property(b"mode", &mode),
            ]
            .concat(),
        );
        let version =
            [len_field(1, b"v1"), int_field(2, 1), int_field(3, 1), len_field(4, &len_field(1, &root))].concat();
        let spec = [len_field(1, b"example.com"), len_field(4, b"Namespaced"), len_field(7, &version)].concat();
        let decoded =
            decode(&envelope("apiextensions.k8s.io/v1", "CustomResourceDefinition", &len_field(2, &spec))).unwrap();
        let string = json!({"type": "string"});
        assert_eq!(
            decoded["spec"]["versions"][0],
            json!({
                "name": "v1",
                "served": true,
                "storage": true,
                "schema": {"openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "labels": {"type": "object", "additionalProperties": string},
                        "closed": {"type": "object", "additionalProperties": false},
                        "tags": {"type": "array", "items": string},
                        "pair": {"type": "array", "items": [string, string]},
                        "mode": {"type": "string", "default": "fast"},
                    },
                }},
            })
        );
    }

    #[test]
    fn lists_and_meta_kinds_resolve() {
        let item = len_field(1, &len_field(1, b"a"));
        let decoded = decode(&envelope("v1", "ConfigMapList", &len_field(2, &item))).unwrap();
        assert_eq!(decoded["items"], json!([{"metadata": {"name": "a"}}]));
        let decoded = decode(&envelope("meta.k8s.io/v1", "DeleteOptions", &int_field(1, 0))).unwrap();
        assert_eq!(decoded["kind"], "DeleteOptions");
    }

    #[test]
    fn go_durations() {
        for (nanos, text) in [
            (0, "0s"),
            (1, "1ns"),
            (1_500, "1.5µs"),
            (2_000_000, "2ms"),
            (1_500_000_000, "1.5s"),
            (90_000_000_000, "1m30s"),
            (3_600_000_000_000, "1h0m0s"),
            (-5_000_000_000, "-5s"),
        ] {
            assert_eq!(go_duration(nanos), text);
        }
    }

    #[test]
    fn rejects_what_it_cannot_decode() {
        assert!(matches!(decode(b"{}"), Err(ProtobufError::Malformed(_))));
        assert!(
            matches!(decode(&envelope("example.com/v1", "Widget", &[])), Err(ProtobufError::Unsupported(m)) if m.contains("Widget"))
        );
        let mut gzip = envelope("v1", "ConfigMap", &[]);
        gzip.extend(len_field(3, b"gzip"));
        assert!(matches!(decode(&gzip), Err(ProtobufError::Unsupported(_))));
        // Wrong wire type for a known field.
        assert!(matches!(decode(&envelope("v1", "ConfigMap", &int_field(1, 3))), Err(ProtobufError::Malformed(_))));
        // Nesting beyond the limit (RawExtension → embedded protobuf object → ...).
        let mut body = envelope("apps/v1", "ControllerRevision", &[]);
        for _ in 0..200 {
            body = envelope("apps/v1", "ControllerRevision", &len_field(2, &len_field(1, &body)));
        }
        assert!(matches!(decode(&body), Err(ProtobufError::Malformed(m)) if m.contains("deeply")));
    }

    /// Random, truncated and mutated bodies must yield errors or values, never panics.
    #[test]
    fn fuzz_never_panics() {
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        // In name order: which mutation hits which body must not depend on read_dir's order.
        let mut paths: Vec<_> = std::fs::read_dir(FIXTURES).unwrap().map(|e| e.unwrap().path()).collect();
        paths.sort();
        let corpus: Vec<Vec<u8>> = paths
            .iter()
            .filter(|path| path.extension().is_some_and(|e| e == "pb"))
            .map(|path| std::fs::read(path).unwrap())
            .collect();
        for body in &corpus {
            for end in 0..body.len() {
                let _ = decode(&body[..end]);
            }
        }
        for round in 0..20_000 {
            let mut body = corpus[round % corpus.len()].clone();
            for _ in 0..1 + next() % 4 {
                let at = (next() as usize) % body.len();
                match next() % 3 {
                    0 => body[at] = next() as u8,
                    1 => body.insert(at, next() as u8),
                    _ => {
                        body.remove(at);
                    }
                }
                if body.is_empty() {
                    body.push(0);
                }
            }
            let _ = decode(&body);
            let mut random = MAGIC.to_vec();
            random.extend((0..next() % 64).map(|_| next() as u8));
            let _ = decode(&random);
        }
    }
}
