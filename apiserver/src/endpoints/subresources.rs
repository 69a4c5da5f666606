//! The handlers of the subresources a type's strategy lists besides status and scale
//! (`Strategy::subresources`), one per name: a ServiceAccount's `token`, a pod's `eviction`
//! and `ephemeralcontainers` and the kubelet's proxies, a CSR's `approval`; and of the two
//! kinds of resource that are answered rather than stored (the access reviews, and the
//! ComponentStatuses). What each writes is the module named in its handler's call.

use std::sync::Arc;

use hyper::header::HeaderValue;
use hyper::{Method, Response, StatusCode};
use serde_json::{Value, json};

use super::request::{parse_object, patch_type};
use super::response::{Body, json_response, object_response};
use super::{Handler, Resource, not_found_path};
use crate::controllers::{control_plane, disruption};
use crate::patch::PatchType;
use crate::registry::certificates;
use crate::registry::resources::Target;
use crate::user::UserInfo;
use crate::{State, api, auth, ephemeral, table, validation};
use wasmcm_core::{ApiError, str_at};

/// The handler of each subresource a strategy may list.
const HANDLERS: [(&str, Handler); 8] = [
    ("token", token),
    ("eviction", eviction),
    ("ephemeralcontainers", ephemeral_containers),
    ("approval", approval),
    ("log", proxied),
    ("exec", proxied),
    ("attach", proxied),
    ("portforward", proxied),
];

pub(super) fn handler(name: &str) -> Option<Handler> {
    HANDLERS.iter().find(|(n, _)| *n == name).map(|(_, h)| *h)
}

/// The object a subresource request's path names.
fn target(r: &Resource) -> Result<Target, ApiError> {
    let name = r.name.clone().ok_or_else(not_found_path)?;
    Ok(Target { rt: r.rt.clone(), namespace: r.namespace.clone(), name })
}

/// SelfSubjectAccessReview and the other reviews: answered at once, never stored.
pub(super) fn review(
    state: &Arc<State>,
    user: &UserInfo,
    r: Resource,
    body: &[u8],
) -> Result<Response<Body>, ApiError> {
    if r.name.is_some() || r.ctx.method != Method::POST {
        return Err(ApiError::method_not_allowed());
    }
    let answer = auth::review(state, user, &r.rt.resource, parse_object(&r.ctx, body)?)?;
    Ok(json_response(StatusCode::CREATED, &answer))
}

/// A ServiceAccount's TokenRequest.
fn token(state: &Arc<State>, _: &UserInfo, r: Resource, body: &[u8]) -> Result<Response<Body>, ApiError> {
    if r.ctx.method != Method::POST {
        return Err(ApiError::method_not_allowed());
    }
    let t = target(&r)?;
    let answer = auth::token_request(state, &t.namespace, &t.name, parse_object(&r.ctx, body)?, r.ctx.dry_run())?;
    Ok(json_response(StatusCode::CREATED, &answer))
}

/// A pod's eviction, with the disruption budget's `Retry-After` when it refuses.
fn eviction(state: &Arc<State>, _: &UserInfo, r: Resource, body: &[u8]) -> Result<Response<Body>, ApiError> {
    if r.ctx.method != Method::POST {
        return Err(ApiError::method_not_allowed());
    }
    let t = target(&r)?;
    let (code, answer) = disruption::evict(state, &t.namespace, &t.name, parse_object(&r.ctx, body)?, r.ctx.dry_run())?;
    let mut response = json_response(code, &answer);
    if let Some(seconds) = answer.pointer("/details/retryAfterSeconds").and_then(Value::as_u64) {
        response.headers_mut().insert("retry-after", HeaderValue::from(seconds));
    }
    Ok(response)
}

/// A pod's ephemeral containers: read, replaced or patched.
fn ephemeral_containers(
    state: &Arc<State>,
    _: &UserInfo,
    r: Resource,
    body: &[u8],
) -> Result<Response<Body>, ApiError> {
    let t = target(&r)?;
    let written = match r.ctx.method {
        Method::GET => api::get(state, &t)?,
        Method::PUT => ephemeral::update(state, &t, parse_object(&r.ctx, body)?, r.ctx.dry_run())?,
        Method::PATCH => {
            let media = r.ctx.content_type.split(';').next().unwrap_or("").trim();
            let ty = PatchType::from_content_type(media).ok_or_else(|| {
                ApiError::unsupported_media_type(format!(
                    "the body of the request was in an unknown format (got {media:?})"
                ))
            })?;
            ephemeral::patch(state, &t, ty, body, r.ctx.dry_run())?
        }
        _ => return Err(ApiError::method_not_allowed()),
    };
    Ok(object_response(StatusCode::OK, &r.rt, &written, &r.ctx))
}

/// What kube-apiserver proxies to the pod's kubelet: the simulated kubelet runs no processes,
/// so there is nothing to stream. The pod must exist, as upstream checks first.
fn proxied(state: &Arc<State>, _: &UserInfo, r: Resource, _: &[u8]) -> Result<Response<Body>, ApiError> {
    let t = target(&r)?;
    api::get(state, &t)?;
    let what = r.sub.as_deref().unwrap_or_default();
    Err(ApiError::bad_request(format!(
        "pods/{what} is not served by the wasmcm embedded cluster: its kubelet is simulated and runs no \
         containers, so pod {}/{} has no {} (see apiserver/README.md in wasmcm's repository)",
        t.namespace,
        t.name,
        match what {
            "log" => "logs",
            "portforward" => "ports to forward",
            _ => "processes to exec into or attach to",
        }
    )))
}

/// A CSR's approval: read, replaced, or patched as kube-rs's `patch_approval` does it (the
/// patch applied to the object as it is, then the approval strategy as for a PUT, again if
/// the object changed meanwhile).
fn approval(state: &Arc<State>, _: &UserInfo, r: Resource, body: &[u8]) -> Result<Response<Body>, ApiError> {
    let t = target(&r)?;
    let written = match r.ctx.method {
        Method::GET => api::get(state, &t)?,
        Method::PUT => update_approval(state, &t, parse_object(&r.ctx, body)?, r.ctx.dry_run())?,
        Method::PATCH => {
            let ty = patch_type(&r.ctx)?;
            if ty == PatchType::Apply {
                return Err(ApiError::unsupported_media_type(
                    "the approval subresource takes json, merge and strategic merge patches",
                ));
            }
            let mut attempts = 0;
            loop {
                let current = api::get(state, &t)?;
                let patched = crate::patch::apply(ty, r.rt.strategy.merge_schema, &r.rt.kind, &current, body)?;
                match update_approval(state, &t, patched, r.ctx.dry_run()) {
                    Err(e) if e.code == 409 && attempts < 5 => attempts += 1,
                    result => break result?,
                }
            }
        }
        _ => return Err(ApiError::method_not_allowed()),
    };
    Ok(object_response(StatusCode::OK, &r.rt, &written, &r.ctx))
}

/// `PUT .../certificatesigningrequests/{name}/approval`: the approval strategy takes the
/// conditions of the object sent and nothing else, then validates the result as an update.
fn update_approval(state: &State, target: &Target, mut sent: Value, dry_run: bool) -> Result<Arc<Value>, ApiError> {
    let api_version = target.rt.api_version();
    match sent.get("apiVersion").and_then(Value::as_str) {
        Some(v) if v != api_version => {
            return Err(ApiError::bad_request(format!(
                "the API version in the data ({v}) does not match the expected API version ({api_version})"
            )));
        }
        _ => sent["apiVersion"] = json!(api_version),
    }
    let name = str_at(&sent, "/metadata/name");
    if !name.is_empty() && name != target.name {
        return Err(ApiError::bad_request(format!(
            "the name of the object ({name}) does not match the name on the URL ({})",
            target.name
        )));
    }
    let wanted_rv = str_at(&sent, "/metadata/resourceVersion").to_string();
    let now = state.now_rfc3339();
    let prepare = |current: &Value| -> Result<Option<Value>, ApiError> {
        if !wanted_rv.is_empty() && wanted_rv != str_at(current, "/metadata/resourceVersion") {
            return Err(ApiError::stale(&target.rt.group, &target.rt.resource, &target.name));
        }
        let mut updated = current.clone();
        if !updated.get("status").is_some_and(Value::is_object) {
            updated["status"] = json!({});
        }
        match sent.pointer("/status/conditions").filter(|c| !c.is_null()) {
            Some(list) => updated["status"]["conditions"] = list.clone(),
            None => {
                if let Some(s) = updated["status"].as_object_mut() {
                    s.remove("conditions");
                }
            }
        }
        certificates::fill_conditions(&mut updated, current, &now);
        let causes = validation::validate(target.rt.strategy.validate, &updated, Some(current));
        if !causes.is_empty() {
            return Err(ApiError::invalid(&target.rt.group, &target.rt.kind, &target.name, causes));
        }
        Ok((updated != *current).then_some(updated))
    };
    let not_found = || ApiError::not_found(&target.rt.group, &target.rt.resource, &target.name);
    if dry_run {
        let current = state.store.get(&target.key()).ok_or_else(not_found)?;
        return Ok(prepare(&current)?.map(Arc::new).unwrap_or(current));
    }
    state.store.guaranteed_update(&target.key(), not_found, prepare)
}

/// `GET` of the ComponentStatuses, made up on each request as upstream's REST does (no
/// resourceVersion, no watch), with its deprecation warning.
pub(super) fn component_statuses(
    _: &Arc<State>,
    _: &UserInfo,
    r: Resource,
    _: &[u8],
) -> Result<Response<Body>, ApiError> {
    let Resource { ctx, rt, name, .. } = r;
    let (rt, ctx, name) = (&rt, &ctx, name.as_deref());
    if ctx.method != Method::GET || ctx.verb == "watch" {
        return Err(ApiError::method_not_allowed());
    }
    let items = control_plane::component_statuses();
    let mut r = match name {
        Some(name) => {
            let item = items
                .iter()
                .find(|i| i.pointer("/metadata/name").and_then(Value::as_str) == Some(name))
                .ok_or_else(|| ApiError::not_found("", &rt.resource, name))?;
            object_response(StatusCode::OK, rt, item, ctx)
        }
        None if ctx.wants("Table") => {
            let t = table::render(
                &rt.api_version(),
                &rt.kind,
                &items,
                jiff::Timestamp::now(),
                ctx.include_object(),
                json!({}),
                table::Printer::of(rt.strategy.printer, None),
            );
            json_response(StatusCode::OK, &t)
        }
        None => json_response(
            StatusCode::OK,
            &json!({"kind": rt.list_kind(), "apiVersion": "v1", "metadata": {}, "items": items}),
        ),
    };
    r.headers_mut().insert("warning", HeaderValue::from_static(control_plane::COMPONENT_STATUS_WARNING));
    Ok(r)
}
