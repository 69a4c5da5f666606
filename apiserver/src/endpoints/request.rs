//! What a request carries besides its path: the parsed query and the headers that matter
//! (`Ctx`), its body read within the server's limits, and the body decoded as an object, an
//! apply configuration, DeleteOptions or a patch's type.

use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Limited};
use hyper::Method;
use hyper::body::Incoming;
use serde_json::{Value, json};

use crate::State;
use crate::api::DeleteOptions;
use crate::managed::Writer;
use crate::patch::PatchType;
use crate::registry::resources::ResourceType;
use crate::storage::query::query_bool;
use wasmcm_core::ApiError;

/// kube-apiserver's limit on a request body (`--max-request-body-bytes`' 3 MiB), which it
/// answers 413 "Request entity too large: limit is 3145728". What is stored is held to etcd's
/// smaller limit (`store::MAX_OBJECT_BYTES`).
const MAX_BODY: usize = 3 << 20;

pub(super) struct Ctx {
    pub method: Method,
    /// `RequestInfo::verb`: what authorization took the request for, and so what serves it.
    pub verb: String,
    pub query: HashMap<String, String>,
    pub accept: String,
    pub content_type: String,
    pub user_agent: String,
}

impl Ctx {
    pub(super) fn flag(&self, name: &str) -> bool {
        query_bool(&self.query, name)
    }

    pub(super) fn dry_run(&self) -> bool {
        self.query.get("dryRun").is_some_and(|v| v == "All")
    }

    /// `includeObject`, validated when the request is routed.
    pub(super) fn include_object(&self) -> &str {
        self.query.get("includeObject").map(String::as_str).unwrap_or("Metadata")
    }

    /// Who the request writes as, for managedFields: `fieldManager`, else its User-Agent's
    /// first word, as kube-apiserver.
    pub(super) fn writer(
        &self,
        state: &State,
        rt: &ResourceType,
        subresource: &'static str,
    ) -> Result<Writer, ApiError> {
        let manager = match self.query.get("fieldManager") {
            Some(m) if m.chars().count() > 128 => {
                return Err(ApiError::bad_request("fieldManager: Too long: may not be more than 128 bytes"));
            }
            Some(m) if m.chars().any(char::is_control) => {
                return Err(ApiError::bad_request(
                    "fieldManager: Invalid value: must only contain printable characters",
                ));
            }
            Some(m) => m.clone(),
            None => Writer::default_manager(&self.user_agent),
        };
        Ok(Writer { manager, api_version: rt.api_version(), subresource, time: state.now_rfc3339() })
    }

    pub(super) fn wants(&self, view: &str) -> bool {
        self.accept.split(',').any(|part| part.contains(&format!("as={view}")))
    }
}

/// The request body, refused with upstream's 413 past [`MAX_BODY`]: by its announced length
/// before reading any of it, else as soon as more arrives (a 52 MB body is never buffered).
/// One that has not all arrived within `within` is answered as kube-apiserver's timeout
/// filter answers a request past `--request-timeout`.
pub(super) async fn read_body(headers: &hyper::HeaderMap, body: Incoming, within: Duration) -> Result<Bytes, ApiError> {
    let too_large =
        || ApiError::new(413, "RequestEntityTooLarge", format!("Request entity too large: limit is {MAX_BODY}"));
    let announced = headers.get(hyper::header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    if announced.is_some_and(|n| n > MAX_BODY as u64) {
        return Err(too_large());
    }
    match tokio::time::timeout(within, Limited::new(body, MAX_BODY).collect()).await {
        Ok(Ok(collected)) => Ok(collected.to_bytes()),
        Ok(Err(e)) if e.is::<http_body_util::LengthLimitError>() => Err(too_large()),
        Ok(Err(e)) => Err(ApiError::bad_request(format!("reading the request body: {e}"))),
        Err(_) => {
            let mut e = ApiError::new(
                504,
                "Timeout",
                "Timeout: request did not complete within requested timeout - context deadline exceeded",
            );
            e.details = Some(Box::default());
            Err(e)
        }
    }
}

/// An apply configuration: YAML (JSON is YAML), as `application/apply-patch+yaml` sends it.
pub(super) fn apply_config(body: &[u8]) -> Result<Value, ApiError> {
    let text = std::str::from_utf8(body).map_err(|_| ApiError::bad_request("the apply configuration is not UTF-8"))?;
    let config: Value =
        serde_saphyr::from_str(text).map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !config.is_object() {
        return Err(ApiError::bad_request("the apply configuration must be an object"));
    }
    Ok(config)
}

pub(super) fn parse_object(ctx: &Ctx, body: &[u8]) -> Result<Value, ApiError> {
    let media = ctx.content_type.split(';').next().unwrap_or("").trim();
    let value: Value = match media {
        "" | "application/json" | "*/*" => serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding JSON request body: {e}")))?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            let text = std::str::from_utf8(body).map_err(|_| ApiError::bad_request("the YAML body is not UTF-8"))?;
            serde_saphyr::from_str(text)
                .map_err(|e| ApiError::bad_request(format!("error decoding YAML request body: {e}")))?
        }
        "application/vnd.kubernetes.protobuf" => crate::endpoints::protobuf::decode(body).map_err(|e| match e {
            crate::endpoints::protobuf::ProtobufError::Malformed(msg) => ApiError::bad_request(msg),
            crate::endpoints::protobuf::ProtobufError::Unsupported(msg) => ApiError::unsupported_media_type(msg),
        })?,
        other => {
            return Err(ApiError::unsupported_media_type(format!(
                "the body of the request was in an unknown format - accepted media types include: application/json, \
                 application/yaml (got {other:?})"
            )));
        }
    };
    if !value.is_object() {
        return Err(ApiError::bad_request("the request body must be an object"));
    }
    Ok(value)
}

/// The patch a request's Content-Type names, or upstream's 415.
pub(super) fn patch_type(ctx: &Ctx) -> Result<PatchType, ApiError> {
    let media = ctx.content_type.split(';').next().unwrap_or("").trim();
    PatchType::from_content_type(media).ok_or_else(|| {
        ApiError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: \
             application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, \
             application/strategic-merge-patch+json (got {media:?})"
        ))
    })
}

pub(super) fn delete_options(ctx: &Ctx, body: &[u8]) -> Result<DeleteOptions, ApiError> {
    let doc: Value = if body.iter().all(u8::is_ascii_whitespace) {
        json!({})
    } else {
        // JSON, YAML or protobuf, as any body (helm sends protobuf).
        parse_object(ctx, body)?
    };
    let q = |name: &str| ctx.query.get(name).cloned();
    let grace = match (doc.get("gracePeriodSeconds").and_then(Value::as_i64), q("gracePeriodSeconds")) {
        (Some(g), _) => Some(g),
        (None, Some(g)) => Some(g.parse().map_err(|_| ApiError::bad_request("gracePeriodSeconds must be an integer"))?),
        _ => None,
    };
    let mut policy =
        doc.get("propagationPolicy").and_then(Value::as_str).map(String::from).or_else(|| q("propagationPolicy"));
    let orphan_dependents =
        doc.get("orphanDependents").and_then(Value::as_bool).or(match q("orphanDependents").as_deref() {
            Some("true") => Some(true),
            Some("false") => Some(false),
            _ => None,
        });
    match orphan_dependents {
        Some(true) => policy = Some("Orphan".into()),
        // An explicit false deletes dependents, whatever the kind's default policy.
        Some(false) if policy.is_none() => policy = Some("Background".into()),
        _ => {}
    }
    if let Some(p) = &policy
        && !matches!(p.as_str(), "Background" | "Foreground" | "Orphan")
    {
        return Err(ApiError::bad_request(format!("unsupported propagationPolicy {p:?}")));
    }
    let dry_run =
        ctx.dry_run() || doc.get("dryRun").and_then(Value::as_array).is_some_and(|a| a.iter().any(|v| v == "All"));
    Ok(DeleteOptions {
        grace_period_seconds: grace,
        propagation_policy: policy,
        precondition_uid: doc.pointer("/preconditions/uid").and_then(Value::as_str).map(String::from),
        precondition_rv: doc.pointer("/preconditions/resourceVersion").and_then(Value::as_str).map(String::from),
        dry_run,
    })
}
