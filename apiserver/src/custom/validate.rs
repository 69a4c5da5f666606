//! A custom resource checked against its schema as kube-openapi's `validate.SchemaValidator`
//! checks it (type, format, string, number, slice, enum, object and allOf/anyOf/oneOf/not
//! validators, in that order, none short-circuiting another), and the errors turned into
//! field errors as apiextensions' `kubeOpenAPIResultToFieldErrors` turns them: the same
//! cause types, field paths, bad values and messages (`spec.replicas in body must be of
//! type integer: "string"`).
//!
//! Values are JSON as Go's unstructured decoding sees them: an integer literal is an int64,
//! anything else numeric a float64 (which is what the type checks and messages depend on).
//!
//! Updates ratchet as upstream's `CRDValidationRatcheting` (on by default): a value equal to
//! the old value it correlates with (same map key; same list-map key or set member) keeps
//! its errors to itself, so an object stored under an older schema can still be changed
//! elsewhere. Items of atomic lists correlate with nothing.

use serde_json::Value;

use super::identity::{Identity, OldItems, first_repeats};
use super::props::{Additional, Props};
use wasmcm_core::Cause;

/// One kube-openapi error, before it becomes a field error.
struct Failure {
    /// kube-openapi's `Name`: the dotted path ("" at the root, ".x" for a root's extra key).
    name: String,
    kind: FailKind,
    message: String,
}

enum FailKind {
    Required,
    /// The value is shown, then the allowed values.
    Enum(Shown, Vec<Value>),
    TooLong,
    TooMany(i64, i64),
    TypeInvalid(Shown),
    Invalid(Shown),
    /// Not a `Validation` error upstream (composite schemas, range checks): reported at the
    /// validator's own path with an empty value.
    Plain,
}

/// A bad value as Go's `field.Error` prints it.
enum Shown {
    Str(String),
    Int(i64),
    Float(f64),
    Json(Value),
}

impl Shown {
    fn of(v: &Value) -> Shown {
        match v {
            Value::String(s) => Shown::Str(s.clone()),
            Value::Number(n) => match n.as_i64() {
                Some(i) => Shown::Int(i),
                None => Shown::Float(n.as_f64().unwrap_or(0.0)),
            },
            Value::Null => Shown::Str(String::new()),
            other => Shown::Json(other.clone()),
        }
    }

    fn render(&self) -> String {
        match self {
            Shown::Str(s) => format!("{s:?}"),
            Shown::Int(i) => i.to_string(),
            Shown::Float(f) => go_float(*f),
            Shown::Json(v) => match v {
                Value::Bool(b) => b.to_string(),
                other => other.to_string(),
            },
        }
    }
}

/// Go's `%v` of a float64 (strconv's shortest `%g` with the exponent switch at 21 digits
/// replaced by fmt's: exponent form from 1e+06 up or below 1e-04).
pub(super) fn go_float(f: f64) -> String {
    if f == 0.0 {
        return "0".into();
    }
    if !f.is_finite() {
        return if f.is_nan() {
            "NaN".into()
        } else if f > 0.0 {
            "+Inf".into()
        } else {
            "-Inf".into()
        };
    }
    let sci = format!("{f:e}");
    let Some((mantissa, exp)) = sci.split_once('e') else { return f.to_string() };
    let exp: i32 = exp.parse().unwrap_or(0);
    if !(-4..6).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{mantissa}e{sign}{:02}", exp.abs());
    }
    f.to_string()
}

/// The JSON type kube-openapi infers for a decoded value, with its format.
fn type_of(v: &Value) -> (&'static str, &'static str) {
    match v {
        Value::Null => ("null", ""),
        Value::Bool(_) => ("boolean", ""),
        Value::Number(n) if n.is_i64() => ("integer", "int64"),
        Value::Number(_) => ("number", "float64"),
        Value::String(_) => ("string", ""),
        Value::Array(_) => ("array", ""),
        Value::Object(_) => ("object", ""),
    }
}

fn is_integral(f: f64) -> bool {
    f.is_finite() && f.fract() == 0.0
}

/// Validates `value` against `schema`, ratcheting against `old` on an update; `prefix` is the
/// field path the errors hang from (None for a whole object, "status" for the status
/// subresource).
pub(crate) fn validate(schema: &Props, value: &Value, old: Option<&Value>, prefix: Option<&str>) -> Vec<Cause> {
    let mut out = Vec::new();
    check(schema, value, old, "", &mut out);
    out.into_iter().map(|f| to_cause(f, prefix)).collect()
}

fn to_cause(f: Failure, prefix: Option<&str>) -> Cause {
    let name = f.name.strip_prefix('.').unwrap_or(&f.name);
    let at_own_path = matches!(f.kind, FailKind::Plain) || f.name.is_empty() || f.name == ".";
    let field = match (prefix, at_own_path) {
        (None, true) => "<nil>".to_string(),
        (Some(p), true) => p.to_string(),
        (None, false) => name.to_string(),
        (Some(p), false) => format!("{p}.{name}"),
    };
    let (reason, message) = match f.kind {
        FailKind::Required => ("FieldValueRequired", "Required value".to_string()),
        FailKind::Enum(shown, values) => {
            let allowed: Vec<String> = values
                .iter()
                .map(|v| match v {
                    Value::String(s) => format!("{s:?}"),
                    other => format!("{:?}", other.to_string()),
                })
                .collect();
            let detail =
                if allowed.is_empty() { String::new() } else { format!(": supported values: {}", allowed.join(", ")) };
            ("FieldValueNotSupported", format!("Unsupported value: {}{detail}", shown.render()))
        }
        FailKind::TooLong => ("FieldValueTooLong", f.message),
        FailKind::TooMany(actual, max) => {
            let items = if max == 1 { "item" } else { "items" };
            ("FieldValueTooMany", format!("Too many: {actual}: must have at most {max} {items}"))
        }
        FailKind::TypeInvalid(shown) => {
            ("FieldValueTypeInvalid", format!("Invalid value: {}: {}", shown.render(), f.message))
        }
        FailKind::Invalid(shown) => ("FieldValueInvalid", format!("Invalid value: {}: {}", shown.render(), f.message)),
        FailKind::Plain => ("FieldValueInvalid", format!("Invalid value: \"\": {}", f.message)),
    };
    Cause { reason: reason.into(), field, message }
}

fn fail(out: &mut Vec<Failure>, name: &str, kind: FailKind, message: String) {
    out.push(Failure { name: name.to_string(), kind, message });
}

/// The old items the items of an array correlate with, by their list-map keys (upstream's
/// ratcheting correlates no other list's items: not a set's, not an atomic list's), indexed
/// once per array.
fn correlation<'a>(s: &'a Props, old: Option<&'a Value>) -> Option<OldItems<'a>> {
    let olds = old?.as_array()?;
    match s.list_type.as_deref() {
        Some("map") if !s.list_map_keys.is_empty() => Some(OldItems::new(&s.list_map_keys, olds)),
        _ => None,
    }
}

fn check(s: &Props, v: &Value, old: Option<&Value>, path: &str, out: &mut Vec<Failure>) {
    if old.is_some_and(|o| json_equal(o, v)) {
        return;
    }
    let types = s.types();
    if v.is_null() {
        // Only the type and enum validators see a null.
        if !types.is_empty() && !types.contains(&"null") && !s.nullable {
            let joined = types.join(",");
            fail(
                out,
                path,
                FailKind::TypeInvalid(Shown::Str("null".into())),
                format!("{path} in body must be of type {joined}: \"null\""),
            );
        }
        enumeration(s, v, path, out);
        return;
    }
    type_check(s, &types, v, path, out);
    composite(s, v, old, path, out);
    if let Value::String(text) = v {
        string(s, text, path, out);
        if !s.format.is_empty() && !super::formats::valid(&s.format, text) {
            fail(
                out,
                path,
                FailKind::TypeInvalid(Shown::Str(text.clone())),
                format!("{path} in body must be of type {}: {text:?}", s.format),
            );
        }
    }
    if v.is_number() {
        number(s, &types, v, path, out);
    }
    if let Value::Array(items) = v {
        slice(s, items, old, path, out);
    }
    enumeration(s, v, path, out);
    if let Value::Object(m) = v {
        object(s, m, old, path, out);
    }
}

fn type_check(s: &Props, types: &[&str], v: &Value, path: &str, out: &mut Vec<Failure>) {
    if types.is_empty() && s.format.is_empty() {
        return;
    }
    let (ty, format) = type_of(v);
    let has = |t: &str| types.contains(&t);
    let is_float_int = ty == "number" && v.as_f64().is_some_and(is_integral) && has("integer");
    let is_int_float = ty == "integer" && has("number");
    let stringish = matches!(v, Value::String(_) | Value::Array(_));
    if !stringish
        && !s.format.is_empty()
        && !(has(ty)
            || format == s.format
            || is_float_int
            || is_int_float
            || (s.format == "int64" && format == "int32"))
    {
        fail(
            out,
            path,
            FailKind::TypeInvalid(Shown::Str(format.into())),
            format!("{path} in body must be of type {}: {format:?}", s.format),
        );
        return;
    }
    // A string (or list) with a format: the format validator's business, not the type's.
    let numeric = has("number") || has("integer");
    if !numeric && !s.format.is_empty() && stringish {
        return;
    }
    if !(has(ty) || is_float_int || is_int_float) {
        fail(
            out,
            path,
            FailKind::TypeInvalid(Shown::Str(ty.into())),
            format!("{path} in body must be of type {}: {ty:?}", types.join(",")),
        );
    }
}

fn composite(s: &Props, v: &Value, old: Option<&Value>, path: &str, out: &mut Vec<Failure>) {
    let run = |p: &Props| {
        let mut o = Vec::new();
        check(p, v, old, path, &mut o);
        o
    };
    if !s.any_of.is_empty() {
        let results: Vec<Vec<Failure>> = s.any_of.iter().map(run).collect();
        if results.iter().all(|r| !r.is_empty()) {
            fail(out, path, FailKind::Plain, format!("{path:?} must validate at least one schema (anyOf)"));
            // Upstream keeps the failures of the alternative that came closest.
            if let Some(best) = results.into_iter().min_by_key(Vec::len) {
                out.extend(best);
            }
        }
    }
    if !s.one_of.is_empty() {
        let results: Vec<Vec<Failure>> = s.one_of.iter().map(run).collect();
        let valid = results.iter().filter(|r| r.is_empty()).count();
        if valid != 1 {
            let more =
                if valid == 0 { "Found none valid".to_string() } else { format!("Found {valid} valid alternatives") };
            fail(out, path, FailKind::Plain, format!("{path:?} must validate one and only one schema (oneOf). {more}"));
            if valid == 0
                && let Some(best) = results.into_iter().min_by_key(Vec::len)
            {
                out.extend(best);
            }
        }
    }
    if !s.all_of.is_empty() {
        let mut valid = 0;
        for p in &s.all_of {
            let r = run(p);
            valid += usize::from(r.is_empty());
            out.extend(r);
        }
        if valid != s.all_of.len() {
            let more = if valid == 0 { ". None validated" } else { "" };
            fail(out, path, FailKind::Plain, format!("{path:?} must validate all the schemas (allOf){more}"));
        }
    }
    if let Some(not) = &s.not
        && run(not).is_empty()
    {
        fail(out, path, FailKind::Plain, format!("{path:?} must not validate the schema (not)"));
    }
}

fn string(s: &Props, text: &str, path: &str, out: &mut Vec<Failure>) {
    let len = text.chars().count() as i64;
    // Upstream's string validator stops at its first failure.
    if let Some(max) = s.max_length
        && len > max
    {
        let bytes = if max == 1 { "byte" } else { "bytes" };
        return fail(out, path, FailKind::TooLong, format!("Too long: may not be more than {max} {bytes}"));
    }
    if let Some(min) = s.min_length
        && len < min
    {
        let shown = Shown::Str(text.into());
        return fail(
            out,
            path,
            FailKind::Invalid(shown),
            format!("{path} in body should be at least {min} chars long"),
        );
    }
    if let Some(pattern) = &s.pattern
        && !super::pattern_matches(pattern, text)
    {
        fail(out, path, FailKind::Invalid(Shown::Str(text.into())), format!("{path} in body should match '{pattern}'"));
    }
}

/// The number's range for its declared format (int32, float), as `IsValueValidAgainstRange`.
fn in_range(f: f64, integer: bool, format: &str) -> bool {
    if integer {
        let (lo, hi) = if format == "int32" {
            (f64::from(i32::MIN), f64::from(i32::MAX))
        } else {
            (i64::MIN as f64, i64::MAX as f64)
        };
        is_integral(f) && f >= lo && f <= hi
    } else if format == "float" {
        f.abs() <= f64::from(f32::MAX)
    } else {
        true
    }
}

fn number(s: &Props, types: &[&str], v: &Value, path: &str, out: &mut Vec<Failure>) {
    let data = v.as_f64().unwrap_or(0.0);
    let int_data = v.as_i64().filter(|_| v.is_i64());
    // The format only counts where the type is one and only one numeric type.
    let (ty, format) = match types {
        ["integer"] => ("integer", s.format.as_str()),
        ["number"] => ("number", s.format.as_str()),
        _ => ("", ""),
    };
    if !ty.is_empty() && !in_range(data, ty == "integer", format) {
        let shown =
            if format.is_empty() { format!("{ty} (default format)") } else { format!("{ty} with format {format}") };
        fail(out, path, FailKind::Plain, format!("Checked value must be of type {shown} in {path}"));
    }
    let shown = || Shown::of(v);
    if let Some(factor) = s.multiple_of {
        if factor <= 0.0 {
            let msg = format!("factor MultipleOf declared for {path} must be positive: {}", go_float(factor));
            fail(out, path, FailKind::Invalid(Shown::Float(factor)), msg);
        } else {
            let ok = match int_data {
                Some(i) if is_integral(factor) && factor <= i64::MAX as f64 => i % (factor as i64) == 0,
                _ => is_integral(if factor < 1.0 { 1.0 / factor * data } else { data / factor }),
            };
            if !ok {
                let f = if int_data.is_some() && is_integral(factor) {
                    (factor as i64).to_string()
                } else {
                    go_float(factor)
                };
                fail(out, path, FailKind::Invalid(shown()), format!("{path} in body should be a multiple of {f}"));
            }
        }
    }
    let bound = |b: f64| if int_data.is_some() { (b as i64).to_string() } else { go_float(b) };
    if let Some(max) = s.maximum {
        let over = match int_data {
            Some(i) => i > max as i64 || (s.exclusive_maximum && i >= max as i64),
            None => data > max || (s.exclusive_maximum && data >= max),
        };
        if over {
            let rel = if s.exclusive_maximum { "less than" } else { "less than or equal to" };
            fail(out, path, FailKind::Invalid(shown()), format!("{path} in body should be {rel} {}", bound(max)));
        }
    }
    if let Some(min) = s.minimum {
        let under = match int_data {
            Some(i) => i < min as i64 || (s.exclusive_minimum && i <= min as i64),
            None => data < min || (s.exclusive_minimum && data <= min),
        };
        if under {
            let rel = if s.exclusive_minimum { "greater than" } else { "greater than or equal to" };
            fail(out, path, FailKind::Invalid(shown()), format!("{path} in body should be {rel} {}", bound(min)));
        }
    }
}

fn slice(s: &Props, items: &[Value], old: Option<&Value>, path: &str, out: &mut Vec<Failure>) {
    if let Some(item_schema) = &s.items {
        let olds = correlation(s, old);
        for (i, item) in items.iter().enumerate() {
            let old = olds.as_ref().and_then(|o| o.get(item));
            check(item_schema, item, old, &format!("{path}[{i}]"), out);
        }
    }
    let size = items.len() as i64;
    if let Some(min) = s.min_items
        && size < min
    {
        fail(
            out,
            path,
            FailKind::Invalid(Shown::Int(size)),
            format!("{path} in body should have at least {min} items"),
        );
    }
    if let Some(max) = s.max_items
        && size > max
    {
        fail(out, path, FailKind::TooMany(size, max), String::new());
    }
    // CRDs may not ask for uniqueItems (upstream refuses them for this check's cost); a
    // schema of a built-in kind may, and gets it in linear time.
    if s.unique_items && !first_repeats(items.iter().map(Identity::loose)).is_empty() {
        fail(
            out,
            path,
            FailKind::Invalid(Shown::Str(String::new())),
            format!("{path} in body shouldn't contain duplicates"),
        );
    }
}

/// Equality as Go's `reflect.DeepEqual` after its numeric conversion: 1 and 1.0 are equal.
fn json_equal(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x == y || x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, p)| y.get(k).is_some_and(|q| json_equal(p, q)))
        }
        _ => a == b,
    }
}

fn enumeration(s: &Props, v: &Value, path: &str, out: &mut Vec<Failure>) {
    let Some(allowed) = &s.enumeration else { return };
    if allowed.is_empty() || allowed.iter().any(|a| json_equal(a, v)) {
        return;
    }
    let listed: Vec<String> = allowed.iter().map(go_value).collect();
    let message = format!("{path} in body should be one of [{}]", listed.join(" "));
    fail(out, path, FailKind::Enum(Shown::of(v), allowed.clone()), message);
}

/// Go's `%v` of a decoded JSON value (what the enum message lists).
fn go_value(v: &Value) -> String {
    match v {
        Value::Null => "<nil>".into(),
        Value::String(s) => s.clone(),
        Value::Number(n) => n.as_i64().map(|i| i.to_string()).unwrap_or_else(|| go_float(n.as_f64().unwrap_or(0.0))),
        Value::Bool(b) => b.to_string(),
        Value::Array(a) => format!("[{}]", a.iter().map(go_value).collect::<Vec<_>>().join(" ")),
        Value::Object(m) => {
            format!("map[{}]", m.iter().map(|(k, x)| format!("{k}:{}", go_value(x))).collect::<Vec<_>>().join(" "))
        }
    }
}

fn object(s: &Props, m: &serde_json::Map<String, Value>, old: Option<&Value>, path: &str, out: &mut Vec<Failure>) {
    let old_of = |k: &str| old.and_then(|o| o.get(k));
    let keys = m.len() as i64;
    if let Some(min) = s.min_properties
        && keys < min
    {
        fail(
            out,
            path,
            FailKind::Invalid(Shown::Int(keys)),
            format!("{path} in body should have at least {min} properties"),
        );
    }
    if let Some(max) = s.max_properties
        && keys > max
    {
        fail(out, path, FailKind::TooMany(keys, max), String::new());
    }
    match &s.additional_properties {
        Some(Additional::Allows(false)) => {
            for k in m.keys().filter(|k| s.property(k).is_none()) {
                let shown = Shown::Str(k.clone());
                fail(out, path, FailKind::Invalid(shown), format!("{path}.{k} in body is a forbidden property"));
            }
        }
        Some(Additional::Schema(extra)) => {
            for (k, x) in m.iter().filter(|(k, _)| s.property(k).is_none()) {
                check(extra, x, old_of(k), &format!("{path}.{k}"), out);
            }
        }
        _ => {}
    }
    for (name, p) in &s.properties {
        if let Some(x) = m.get(name) {
            let child = if path.is_empty() { name.clone() } else { format!("{path}.{name}") };
            check(p, x, old_of(name), &child, out);
        }
    }
    for k in &s.required {
        if !m.contains_key(k) {
            fail(out, &format!("{path}.{k}"), FailKind::Required, String::new());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn causes(schema: Value, value: Value) -> Vec<String> {
        validate(&Props::parse(&schema), &value, None, None)
            .into_iter()
            .map(|c| format!("{} {}: {}", c.reason, c.field, c.message))
            .collect()
    }

    #[test]
    fn messages_as_kube_openapi_prints_them() {
        let schema = json!({"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object",
        "required": ["size"],
        "properties": {
            "replicas": {"type": "integer", "minimum": 1, "maximum": 1000000},
            "name": {"type": "string", "minLength": 3, "maxLength": 5, "pattern": "^[a-z]+$"},
            "mode": {"type": "string", "enum": ["a", "b"]},
            "when": {"type": "string", "format": "date"},
            "small": {"type": "integer", "format": "int32"},
            "ratio": {"type": "number", "multipleOf": 0.5, "exclusiveMaximum": true, "maximum": 2},
            "tags": {"type": "array", "maxItems": 2, "minItems": 1, "uniqueItems": true, "items": {"type": "string"}},
            "labels": {"type": "object", "maxProperties": 1, "additionalProperties": {"type": "string"}},
            "size": {"x-kubernetes-int-or-string": true},
            "opt": {"type": "string", "nullable": true}
        }}}});
        let check = |spec: Value| causes(schema.clone(), json!({"spec": spec}));
        assert_eq!(
            check(json!({"replicas": "string", "size": 1})),
            [
                "FieldValueTypeInvalid spec.replicas: Invalid value: \"string\": spec.replicas in body must be of type integer: \"string\""
            ]
        );
        assert_eq!(
            check(json!({"replicas": 0, "size": "x"})),
            [
                "FieldValueInvalid spec.replicas: Invalid value: 0: spec.replicas in body should be greater than or equal to 1"
            ]
        );
        assert_eq!(
            check(json!({"replicas": 2.5, "size": 1})),
            [
                "FieldValueTypeInvalid spec.replicas: Invalid value: \"number\": spec.replicas in body must be of type integer: \"number\"",
                "FieldValueInvalid <nil>: Invalid value: \"\": Checked value must be of type integer (default format) in spec.replicas"
            ]
        );
        assert_eq!(
            check(json!({"replicas": 2000000.5, "size": 1}))[2],
            "FieldValueInvalid spec.replicas: Invalid value: 2.0000005e+06: spec.replicas in body should be less than or equal to 1e+06"
        );
        assert_eq!(
            check(json!({"name": "abcdefg", "size": 1})),
            ["FieldValueTooLong spec.name: Too long: may not be more than 5 bytes"]
        );
        assert_eq!(
            check(json!({"name": "ab", "size": 1})),
            ["FieldValueInvalid spec.name: Invalid value: \"ab\": spec.name in body should be at least 3 chars long"]
        );
        assert_eq!(
            check(json!({"name": "ABC", "size": 1})),
            ["FieldValueInvalid spec.name: Invalid value: \"ABC\": spec.name in body should match '^[a-z]+$'"]
        );
        assert_eq!(
            check(json!({"mode": "c", "size": 1})),
            ["FieldValueNotSupported spec.mode: Unsupported value: \"c\": supported values: \"a\", \"b\""]
        );
        assert_eq!(
            check(json!({"when": "2024-13-01", "size": 1})),
            [
                "FieldValueTypeInvalid spec.when: Invalid value: \"2024-13-01\": spec.when in body must be of type date: \"2024-13-01\""
            ]
        );
        assert_eq!(
            check(json!({"small": 3000000000i64, "size": 1})),
            [
                "FieldValueInvalid <nil>: Invalid value: \"\": Checked value must be of type integer with format int32 in spec.small"
            ]
        );
        assert_eq!(
            check(json!({"ratio": 2, "size": 1})),
            ["FieldValueInvalid spec.ratio: Invalid value: 2: spec.ratio in body should be less than 2"]
        );
        assert_eq!(
            check(json!({"ratio": 0.7, "size": 1})),
            ["FieldValueInvalid spec.ratio: Invalid value: 0.7: spec.ratio in body should be a multiple of 0.5"]
        );
        assert_eq!(
            check(json!({"tags": ["a", "a", "b"], "size": 1})),
            [
                "FieldValueTooMany spec.tags: Too many: 3: must have at most 2 items",
                "FieldValueInvalid spec.tags: Invalid value: \"\": spec.tags in body shouldn't contain duplicates"
            ]
        );
        assert_eq!(
            check(json!({"labels": {"a": "x", "b": 1}, "size": 1})),
            [
                "FieldValueTooMany spec.labels: Too many: 2: must have at most 1 item",
                "FieldValueTypeInvalid spec.labels.b: Invalid value: \"integer\": spec.labels.b in body must be of type string: \"integer\""
            ]
        );
        assert_eq!(
            check(json!({"size": true})),
            [
                "FieldValueTypeInvalid spec.size: Invalid value: \"boolean\": spec.size in body must be of type integer,string: \"boolean\""
            ]
        );
        assert_eq!(check(json!({"size": 1, "opt": null})), Vec::<String>::new());
        assert_eq!(
            check(json!({"size": 1, "name": null})),
            [
                "FieldValueTypeInvalid spec.name: Invalid value: \"null\": spec.name in body must be of type string: \"null\""
            ]
        );
        assert_eq!(check(json!({})), ["FieldValueRequired spec.size: Required value"]);
        assert_eq!(causes(schema.clone(), json!({})), ["FieldValueRequired spec: Required value"]);
    }

    #[test]
    fn updates_ratchet_unchanged_values() {
        let schema = Props::parse(&json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "a": {"type": "string", "maxLength": 2},
            "b": {"type": "string", "maxLength": 2},
            "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                "items": {"type": "object", "properties": {"name": {"type": "string"}, "n": {"type": "integer", "maximum": 9}}}},
            "plain": {"type": "array", "items": {"type": "integer", "maximum": 9}}}}}}));
        let old = json!({"spec": {"a": "long", "ports": [{"name": "x", "n": 10}], "plain": [10]}});
        let new = json!({"spec": {"a": "long", "b": "ok", "ports": [{"name": "y", "n": 1}, {"name": "x", "n": 10}], "plain": [10, 1]}});
        let fields: Vec<String> = validate(&schema, &new, Some(&old), None).into_iter().map(|c| c.field).collect();
        assert_eq!(fields, ["spec.plain[0]"], "unchanged values ratchet; atomic list items do not correlate");
        let fields: Vec<String> = validate(&schema, &new, None, None).into_iter().map(|c| c.field).collect();
        assert_eq!(fields, ["spec.a", "spec.plain[0]", "spec.ports[1].n"]);
    }

    #[test]
    fn go_float_formatting() {
        for (f, want) in [(1e6, "1e+06"), (123456.0, "123456"), (0.5, "0.5"), (1e-5, "1e-05"), (2.5e21, "2.5e+21")] {
            assert_eq!(go_float(f), want);
        }
    }
}
