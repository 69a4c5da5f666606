//! A CRD version's `openAPIV3Schema`, read once from its JSON into the shape the rest of
//! `custom` walks: apiextensions' `JSONSchemaProps` with the value validations kube-openapi
//! checks and the Kubernetes extensions the structural-schema code reads.
//!
//! Reading never fails and never panics: a field of the wrong JSON type is taken as absent
//! (CRD validation, `validation::apiextensions`, is what refuses such a schema).

use serde_json::Value;

/// `additionalProperties`: a bool or a schema (upstream's `JSONSchemaPropsOrBool`).
#[derive(Debug)]
pub(crate) enum Additional {
    Allows(bool),
    Schema(Box<Props>),
}

#[derive(Debug, Default)]
pub(crate) struct Props {
    /// "" when absent; ["integer", "string"] for int-or-string, as upstream's conversion
    /// to kube-openapi makes it (see [`Props::types`]).
    pub ty: String,
    /// After upstream's `StripUnsupportedFormatsPostProcessorForVersion`: a format CRDs do
    /// not know for the type is "" (strings: [`SUPPORTED_FORMATS`]; integers: int32/int64;
    /// numbers: float/double).
    pub format: String,
    pub nullable: bool,
    pub default: Option<Value>,
    pub enumeration: Option<Vec<Value>>,
    pub maximum: Option<f64>,
    pub exclusive_maximum: bool,
    pub minimum: Option<f64>,
    pub exclusive_minimum: bool,
    pub multiple_of: Option<f64>,
    pub max_length: Option<i64>,
    pub min_length: Option<i64>,
    pub pattern: Option<String>,
    pub max_items: Option<i64>,
    pub min_items: Option<i64>,
    pub unique_items: bool,
    pub max_properties: Option<i64>,
    pub min_properties: Option<i64>,
    pub required: Vec<String>,
    /// Sorted by name (serde_json's map order), which fixes the order errors come in where
    /// upstream's Go map iteration has none.
    pub properties: Vec<(String, Props)>,
    pub additional_properties: Option<Additional>,
    pub items: Option<Box<Props>>,
    pub all_of: Vec<Props>,
    pub any_of: Vec<Props>,
    pub one_of: Vec<Props>,
    pub not: Option<Box<Props>>,
    pub preserve_unknown_fields: Option<bool>,
    pub embedded_resource: bool,
    pub int_or_string: bool,
    pub list_type: Option<String>,
    pub list_map_keys: Vec<String>,
    /// `x-kubernetes-map-type`: "atomic" (owned and replaced whole by server-side apply) or
    /// "granular" (field by field, the default).
    pub map_type: Option<String>,
}

/// The formats upstream's CRD schemas validate (apiextensions' `supportedVersionedFormats`,
/// named as go-openapi normalizes them: without dashes).
const SUPPORTED_FORMATS: [&str; 26] = [
    "bsonobjectid",
    "uri",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "cidr",
    "mac",
    "uuid",
    "uuid3",
    "uuid4",
    "uuid5",
    "isbn",
    "isbn10",
    "isbn13",
    "creditcard",
    "ssn",
    "hexcolor",
    "rgbcolor",
    "byte",
    "password",
    "date",
    "duration",
    "datetime",
    // Since Kubernetes 1.34.
    "k8sshortname",
    "k8slongname",
];

/// Deep enough for any real schema; bounds the work on a hostile one.
const MAX_DEPTH: usize = 64;

impl Props {
    pub(crate) fn parse(v: &Value) -> Props {
        Self::parse_at(v, 0)
    }

    fn parse_at(v: &Value, depth: usize) -> Props {
        let Some(m) = v.as_object() else { return Props::default() };
        if depth > MAX_DEPTH {
            return Props { preserve_unknown_fields: Some(true), ..Props::default() };
        }
        let s = |k: &str| m.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        let b = |k: &str| m.get(k).and_then(Value::as_bool).unwrap_or(false);
        let f = |k: &str| m.get(k).and_then(Value::as_f64);
        let i = |k: &str| m.get(k).and_then(Value::as_i64);
        let sub = |x: &Value| Props::parse_at(x, depth + 1);
        let list =
            |k: &str| m.get(k).and_then(Value::as_array).map(|a| a.iter().map(sub).collect()).unwrap_or_default();
        let strings = |k: &str| -> Vec<String> {
            m.get(k)
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(Value::as_str).map(String::from).collect())
                .unwrap_or_default()
        };
        let format = s("format");
        let int_or_string = b("x-kubernetes-int-or-string");
        let kept = match s("type").as_str() {
            // int-or-string has two types: no single type, so no format upstream either.
            _ if int_or_string => false,
            "" | "string" => SUPPORTED_FORMATS.contains(&format.replace('-', "").as_str()),
            "integer" => matches!(format.as_str(), "int32" | "int64"),
            "number" => matches!(format.as_str(), "float" | "double"),
            _ => false,
        };
        let format = if kept { format } else { String::new() };
        Props {
            ty: s("type"),
            format,
            nullable: b("nullable"),
            default: m.get("default").cloned(),
            enumeration: m.get("enum").and_then(Value::as_array).cloned(),
            maximum: f("maximum"),
            exclusive_maximum: b("exclusiveMaximum"),
            minimum: f("minimum"),
            exclusive_minimum: b("exclusiveMinimum"),
            multiple_of: f("multipleOf"),
            max_length: i("maxLength"),
            min_length: i("minLength"),
            pattern: m.get("pattern").and_then(Value::as_str).map(String::from),
            max_items: i("maxItems"),
            min_items: i("minItems"),
            unique_items: b("uniqueItems"),
            max_properties: i("maxProperties"),
            min_properties: i("minProperties"),
            required: strings("required"),
            properties: m
                .get("properties")
                .and_then(Value::as_object)
                .map(|p| p.iter().map(|(k, x)| (k.clone(), sub(x))).collect())
                .unwrap_or_default(),
            additional_properties: match m.get("additionalProperties") {
                Some(Value::Bool(allows)) => Some(Additional::Allows(*allows)),
                Some(x @ Value::Object(_)) => Some(Additional::Schema(Box::new(sub(x)))),
                _ => None,
            },
            items: m.get("items").filter(|x| x.is_object()).map(|x| Box::new(sub(x))),
            all_of: list("allOf"),
            any_of: list("anyOf"),
            one_of: list("oneOf"),
            not: m.get("not").filter(|x| x.is_object()).map(|x| Box::new(sub(x))),
            preserve_unknown_fields: m.get("x-kubernetes-preserve-unknown-fields").and_then(Value::as_bool),
            embedded_resource: b("x-kubernetes-embedded-resource"),
            int_or_string,
            list_type: m.get("x-kubernetes-list-type").and_then(Value::as_str).map(String::from),
            list_map_keys: strings("x-kubernetes-list-map-keys"),
            map_type: m.get("x-kubernetes-map-type").and_then(Value::as_str).map(String::from),
        }
    }

    /// The types kube-openapi checks against: int-or-string is `integer,string`.
    pub(crate) fn types(&self) -> Vec<&str> {
        if self.int_or_string {
            vec!["integer", "string"]
        } else if self.ty.is_empty() {
            Vec::new()
        } else {
            vec![self.ty.as_str()]
        }
    }

    pub(crate) fn property(&self, name: &str) -> Option<&Props> {
        self.properties.iter().find(|(k, _)| k == name).map(|(_, p)| p)
    }

    /// The schema of an object's field `name` that is not a property: additionalProperties'.
    pub(crate) fn additional(&self) -> Option<&Props> {
        match &self.additional_properties {
            Some(Additional::Schema(s)) => Some(s),
            _ => None,
        }
    }

    /// The schema a field `name` of an object of this schema has, structurally.
    pub(crate) fn field(&self, name: &str) -> Option<&Props> {
        self.property(name).or_else(|| self.additional())
    }

    pub(crate) fn preserves_unknown(&self) -> bool {
        self.preserve_unknown_fields == Some(true)
    }
}
