//! The handlers of the verbs on a type's objects, their status and their scale (watch is
//! `watch`'s): each decodes what its request carries, calls `api` for what the verb means for
//! the stored objects, and answers in the view asked for.

use std::sync::Arc;

use base64::Engine as _;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Response, StatusCode};
use serde_json::{Value, json};

use super::request::{Ctx, apply_config, delete_options, parse_object, patch_type};
use super::response::{Body, as_served, full, json_response, list_json, object_response, partial, with_warning};
use super::{Resource, not_found_path};
use crate::State;
use crate::api::{self, Deleted, Ownership, Part};
use crate::custom::{self, Arrival, FieldValidation};
use crate::patch::PatchType;
use crate::registry::resources::{ResourceType, Target};
use crate::storage::query::Filter;
use crate::table;
use crate::user::UserInfo;
use wasmcm_core::ApiError;

/// The object a request's path names and which part of it: itself, its status or its scale.
fn item(r: &Resource) -> Result<(Target, Part), ApiError> {
    // A write to the collection itself (PUT or PATCH without a name) is not served.
    let name = r.name.clone().ok_or_else(ApiError::method_not_allowed)?;
    let part = match r.sub.as_deref() {
        None => Part::Main,
        Some("status") if r.rt.status => Part::Status,
        Some("scale") if r.rt.scale => Part::Scale,
        Some(_) => return Err(not_found_path()),
    };
    Ok((Target { rt: r.rt.clone(), namespace: r.namespace.clone(), name }, part))
}

/// The writer of a write to `part`, for managedFields.
fn writer(state: &State, r: &Resource, part: Part) -> Result<crate::managed::Writer, ApiError> {
    let subresource = match part {
        Part::Main => "",
        Part::Status => "status",
        Part::Scale => "scale",
    };
    r.ctx.writer(state, &r.rt, subresource)
}

/// A write's `fieldValidation` directive, refused if it is not one; its scope holds while `api`
/// decodes the body (`custom::scoped`).
fn directive(ctx: &Ctx, options_kind: &str) -> Result<FieldValidation, ApiError> {
    FieldValidation::parse(ctx.query.get("fieldValidation").map(String::as_str), options_kind)
}

/// The answer to a request for `part`: a Scale as it is, else the object in the view asked for.
fn answer(code: StatusCode, r: &Resource, part: Part, object: &Value, warning: Option<&str>) -> Response<Body> {
    if part == Part::Scale {
        return json_response(StatusCode::OK, object);
    }
    with_warning(object_response(code, &r.rt, object, &r.ctx), warning)
}

pub(super) fn get(state: &Arc<State>, _: &UserInfo, r: Resource, _: &[u8]) -> Result<Response<Body>, ApiError> {
    let (target, part) = item(&r)?;
    let object = match part {
        Part::Scale => Arc::new(api::scale_of_type(&r.rt, &*api::get(state, &target)?)),
        _ => api::get(state, &target)?,
    };
    Ok(answer(StatusCode::OK, &r, part, &object, None))
}

pub(super) fn create(
    state: &Arc<State>,
    user: &UserInfo,
    r: Resource,
    body: &[u8],
) -> Result<Response<Body>, ApiError> {
    let directive = directive(&r.ctx, "CreateOptions")?;
    if r.name.is_some() {
        return Err(ApiError::method_not_allowed());
    }
    if r.rt.namespaced && r.namespace.is_empty() {
        return Err(ApiError::not_found("", "namespaces", ""));
    }
    let mut object = parse_object(&r.ctx, body)?;
    if let Some(requested_by) = r.rt.strategy.requested_by {
        requested_by(&mut object, user);
    }
    let writer = r.ctx.writer(state, &r.rt, "")?;
    let created = custom::scoped(directive, Arrival::Body, || {
        api::create(state, &r.rt, &r.namespace, object, r.ctx.dry_run(), Ownership::Update(&writer))
    })?;
    Ok(object_response(StatusCode::CREATED, &r.rt, &created, &r.ctx))
}

pub(super) fn update(state: &Arc<State>, _: &UserInfo, r: Resource, body: &[u8]) -> Result<Response<Body>, ApiError> {
    let directive = directive(&r.ctx, "UpdateOptions")?;
    let (target, part) = item(&r)?;
    let writer = writer(state, &r, part)?;
    let object = parse_object(&r.ctx, body)?;
    let (dry_run, owner) = (r.ctx.dry_run(), Ownership::Update(&writer));
    let written = custom::scoped(directive, Arrival::Body, || match part {
        Part::Main => api::update(state, &target, object, dry_run, owner),
        Part::Status => api::update_status(state, &target, object, dry_run, owner),
        Part::Scale => api::update_scale(state, &target, object, dry_run, owner),
    })?;
    Ok(answer(StatusCode::OK, &r, part, &written, None))
}

pub(super) fn patch(state: &Arc<State>, _: &UserInfo, r: Resource, body: &[u8]) -> Result<Response<Body>, ApiError> {
    let directive = directive(&r.ctx, "PatchOptions")?;
    let (target, part) = item(&r)?;
    let writer = writer(state, &r, part)?;
    let ty = patch_type(&r.ctx)?;
    let (force, dry_run) = (r.ctx.flag("force"), r.ctx.dry_run());
    if ty != PatchType::Apply {
        if force {
            return Err(ApiError::bad_request("force may not be specified for non-apply patch"));
        }
        let written = custom::scoped(directive, Arrival::Patch, || {
            api::patch(state, &target, part, ty, body, dry_run, Ownership::Update(&writer))
        })?;
        return Ok(answer(StatusCode::OK, &r, part, &written, None));
    }
    if !r.ctx.query.contains_key("fieldManager") {
        return Err(ApiError::bad_request("fieldManager is required for apply requests"));
    }
    let config = apply_config(body)?;
    let (written, created) =
        custom::scoped(directive, Arrival::Body, || api::apply(state, &target, part, config, dry_run, &writer, force))?;
    Ok(answer(if created { StatusCode::CREATED } else { StatusCode::OK }, &r, part, &written, None))
}

pub(super) fn delete(state: &Arc<State>, _: &UserInfo, r: Resource, body: &[u8]) -> Result<Response<Body>, ApiError> {
    let (target, part) = item(&r)?;
    if part != Part::Main {
        return Err(ApiError::method_not_allowed());
    }
    let opts = delete_options(&r.ctx, body)?;
    let warning = api::delete_warning(&r.rt, &opts);
    let deleted = match api::delete(state, &target, &opts)? {
        Deleted::Gone(o) if !r.rt.strategy.returns_deleted_object => {
            let mut details = json!({"name": target.name, "kind": r.rt.resource,
                                     "uid": o.pointer("/metadata/uid").cloned().unwrap_or(Value::Null)});
            if !r.rt.group.is_empty() {
                details["group"] = json!(r.rt.group);
            }
            let status =
                json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details});
            return Ok(with_warning(json_response(StatusCode::OK, &status), warning));
        }
        Deleted::Gone(o) | Deleted::Pending(o) => o,
    };
    Ok(answer(StatusCode::OK, &r, part, &deleted, warning))
}
pub(super) fn filter_from(state: &State, rt: &ResourceType, namespace: &str, ctx: &Ctx) -> Result<Filter, ApiError> {
    let labels = match ctx.query.get("labelSelector") {
        Some(s) => wasmcm_core::Selector::parse(s).map_err(ApiError::bad_request)?,
        None => Default::default(),
    };
    let fields = match ctx.query.get("fieldSelector") {
        Some(s) => rt.strategy.parse_field_selector(s).map_err(ApiError::bad_request)?,
        None => Vec::new(),
    };
    let shards = match ctx.query.get("shardSelector").filter(|s| !s.is_empty() && state.sharded_list_watch) {
        Some(s) => Some(
            wasmcm_core::ShardSelector::parse(s)
                .map_err(|why| ApiError::bad_request(format!("invalid shardSelector: {why}")))?,
        ),
        None => None,
    };
    Ok(Filter {
        id: rt.id(),
        namespace: (!namespace.is_empty()).then(|| namespace.to_string()),
        labels,
        fields,
        shards,
    })
}

/// The position a `continue` token resumes after, and the resourceVersion of the list's first
/// page.
fn decode_continue(token: &str) -> Result<(String, String, Option<u64>), ApiError> {
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| ApiError::bad_request("invalid continue token"))?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|_| ApiError::bad_request("invalid continue token"))?;
    Ok((v["ns"].as_str().unwrap_or("").into(), v["name"].as_str().unwrap_or("").into(), v["rv"].as_u64()))
}

pub(super) fn list(state: &Arc<State>, _: &UserInfo, r: Resource, _: &[u8]) -> Result<Response<Body>, ApiError> {
    let Resource { ctx, rt, namespace, .. } = r;
    let (rt, ctx) = (&rt, &ctx);
    let filter = filter_from(state, rt, &namespace, ctx)?;
    let after = match ctx.query.get("continue").filter(|c| !c.is_empty()) {
        Some(token) => Some(decode_continue(token)?),
        None => None,
    };
    let limit = ctx.query.get("limit").and_then(|l| l.parse::<usize>().ok()).filter(|l| *l > 0);
    // The page only, not the whole list: a client paging through N objects costs O(N).
    let page = state.store.list_page(
        &rt.id(),
        filter.namespace.as_deref(),
        &filter,
        after.as_ref().map(|(ns, name, _)| (ns.as_str(), name.as_str())),
        limit.unwrap_or(usize::MAX),
    );
    // Every page of a list answers the first page's resourceVersion, as kube-apiserver's
    // (which serves them from that snapshot): a client then watches from there and sees every
    // change made while it paged. Answering each page's own version made a watch start after
    // changes to objects already listed, which the client then never saw.
    let rv = after.as_ref().and_then(|(_, _, rv)| *rv).unwrap_or(page.rv);
    if ctx.query.get("resourceVersionMatch").map(String::as_str) == Some("Exact")
        && let Some(wanted) = ctx.query.get("resourceVersion")
        && *wanted != rv.to_string()
    {
        return Err(ApiError::gone(format!("too old resource version: {wanted} ({rv})")));
    }
    let position = |v: &Value| {
        (
            v.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("").to_string(),
            v.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").to_string(),
        )
    };
    let items = page.items;
    let mut metadata = json!({"resourceVersion": rv.to_string()});
    if page.remaining > 0
        && let Some(last) = items.last()
    {
        let (ns, name) = position(last);
        let token = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(json!({"ns": ns, "name": name, "rv": rv}).to_string());
        metadata["continue"] = json!(token);
        metadata["remainingItemCount"] = json!(page.remaining);
    }
    // Echoed as given: how a client tells a sharded list from a server that ignored the selector.
    if filter.shards.is_some()
        && let Some(selector) = ctx.query.get("shardSelector")
    {
        metadata["shardInfo"] = json!({"selector": selector});
    }
    if ctx.wants("Table") {
        let items: Vec<Value> = items.iter().map(|v| as_served(rt, v)).collect();
        let t = table::render(
            &rt.api_version(),
            &rt.kind,
            &items,
            jiff::Timestamp::now(),
            ctx.include_object(),
            metadata,
            table::Printer::of(rt.strategy.printer, rt.printer_columns.as_ref()),
        );
        return Ok(json_response(StatusCode::OK, &t));
    }
    if ctx.wants("PartialObjectMetadataList") {
        let items: Vec<Value> = items.iter().map(|v| partial(v)).collect();
        let doc = json!({"apiVersion": "meta.k8s.io/v1", "kind": "PartialObjectMetadataList", "metadata": metadata, "items": items});
        return Ok(json_response(StatusCode::OK, &doc));
    }
    let mut r = Response::new(full(list_json(rt, &metadata, &items)));
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(r)
}

pub(super) fn delete_collection(
    state: &Arc<State>,
    _: &UserInfo,
    r: Resource,
    body: &[u8],
) -> Result<Response<Body>, ApiError> {
    let Resource { ctx, rt, namespace, .. } = r;
    let (rt, ctx) = (&rt, &ctx);
    let filter = filter_from(state, rt, &namespace, ctx)?;
    let opts = delete_options(ctx, body)?;
    let (items, rv) = state.store.list(&rt.id(), filter.namespace.as_deref(), &filter);
    let mut deleted = Vec::new();
    for item in items {
        let target = Target {
            rt: rt.clone(),
            namespace: item.pointer("/metadata/namespace").and_then(Value::as_str).unwrap_or("").into(),
            name: item.pointer("/metadata/name").and_then(Value::as_str).unwrap_or("").into(),
        };
        match api::delete(state, &target, &opts) {
            Ok(Deleted::Gone(o) | Deleted::Pending(o)) => deleted.push(o),
            Err(e) if e.is_not_found() => {}
            Err(e) => return Err(e),
        }
    }
    // Written as a list is (items of built-in kinds without their TypeMeta).
    let mut r = Response::new(full(list_json(rt, &json!({"resourceVersion": rv.to_string()}), &deleted)));
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(with_warning(r, api::delete_warning(rt, &opts)))
}
