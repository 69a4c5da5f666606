//! What the endpoints answer with: a JSON body, a `Status` for an error, an object or a list
//! in the view the client asked for (itself, PartialObjectMetadata, or a Table), in the version
//! it asked for, and the warnings a write earned.

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full, combinators::BoxBody};
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};

use super::request::Ctx;
use crate::api;
use crate::registry::resources::ResourceType;
use crate::{json, table};
use wasmcm_core::ApiError;

pub(crate) type Body = BoxBody<Bytes, Infallible>;

pub(super) fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

pub(super) fn json_response(code: StatusCode, value: &Value) -> Response<Body> {
    let mut r = Response::new(full(json::body(value)));
    *r.status_mut() = code;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

pub(super) fn error_response(e: &ApiError) -> Response<Body> {
    let mut status = e.to_status();
    // A plain Go error becomes a Status without a reason (omitempty), not an empty one.
    if e.reason.is_empty()
        && let Some(fields) = status.as_object_mut()
    {
        fields.remove("reason");
    }
    json_response(StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), &status)
}

pub(super) fn text(code: StatusCode, body: &'static str) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = code;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

/// Adds a `Warning` header as kube-apiserver writes them (code 299, no agent), which client-go
/// and kubectl print.
pub(super) fn with_warning(mut r: Response<Body>, warning: Option<&str>) -> Response<Body> {
    if let Some(text) = warning
        && let Ok(value) = HeaderValue::from_str(&format!("299 - {text:?}"))
    {
        r.headers_mut().append("warning", value);
    }
    r
}

/// The object as the client asked to see it: itself, its metadata only, or a Table.
pub(super) fn object_response(code: StatusCode, rt: &ResourceType, object: &Value, ctx: &Ctx) -> Response<Body> {
    let object = as_served(rt, object);
    if ctx.wants("Table") {
        let rv = object.pointer("/metadata/resourceVersion").cloned().unwrap_or(json!(""));
        let t = table::render(
            &rt.api_version(),
            &rt.kind,
            &[object],
            jiff::Timestamp::now(),
            ctx.include_object(),
            json!({"resourceVersion": rv}),
            table::Printer::of(rt.strategy.printer, rt.printer_columns.as_ref()),
        );
        return json_response(code, &t);
    }
    if ctx.wants("PartialObjectMetadata") {
        return json_response(code, &partial(&object));
    }
    json_response(code, &object)
}

/// Objects are stored with the apiVersion they were written in; serve them in the version
/// requested (custom resources with several versions and no conversion).
pub(super) fn as_served(rt: &ResourceType, object: &Value) -> Value {
    let mut o = api::served(rt, object).unwrap_or_else(|| object.clone());
    if o.get("apiVersion").and_then(Value::as_str) != Some(&rt.api_version()) {
        o["apiVersion"] = json!(rt.api_version());
    }
    o
}

pub(super) fn partial(object: &Value) -> Value {
    json!({
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": object.get("metadata").cloned().unwrap_or(json!({})),
    })
}

/// Writes `object` as served in `rt`'s version (in its kind's order, see `json`), copying it
/// only if its stored version differs.
pub(super) fn write_served(out: &mut Vec<u8>, rt: &ResourceType, api_version: &str, object: &Value) {
    let converted = api::served(rt, object);
    let object = converted.as_ref().unwrap_or(object);
    if object.get("apiVersion").and_then(Value::as_str) == Some(api_version) {
        json::write_typed(out, api_version, &rt.kind, object);
    } else {
        json::write_typed(out, api_version, &rt.kind, &as_served(rt, object));
    }
}

/// The List document straight from the stored objects (no deep copy of each item), with the
/// newline kube-apiserver ends a body with.
pub(super) fn list_json(rt: &ResourceType, metadata: &Value, items: &[Arc<Value>]) -> Vec<u8> {
    let api_version = rt.api_version();
    let mut out = Vec::with_capacity(256 + items.len() * 1024);
    json::write_list(&mut out, &api_version, &rt.list_kind(), metadata, items, |out, item| {
        let converted = api::served(rt, item);
        let item = converted.as_ref().unwrap_or(item);
        if item.get("apiVersion").and_then(Value::as_str) == Some(&api_version) {
            json::write_list_item(out, &api_version, &rt.kind, item);
        } else {
            json::write_list_item(out, &api_version, &rt.kind, &as_served(rt, item));
        }
    });
    out.push(b'\n');
    out
}
