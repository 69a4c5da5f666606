//! The embedded API server's HTTP endpoints, per request, as kube-apiserver's handler chain:
//! authentication and impersonation (`auth`), the request's attributes parsed once
//! ([`RequestInfo`], read by authorization, the audit and dispatch alike), authorization
//! (`rbac`), injected faults, then dispatch — a non-resource path to its document (version,
//! discovery, OpenAPI), a resource request to the handler of its verb (`verbs`, `watch`) or of
//! its subresource (`subresources`), found in a table. What a verb means for the stored
//! objects is `api`'s; bodies and content negotiation are `request`'s and `response`'s.
//! Connections, TLS and their limits are `listener`'s.
//!
//! A write is served on tokio's blocking pool, not on a runtime worker: its decoding,
//! defaulting, validation and patching cost CPU in proportion to its body and object (up to
//! seconds for megabytes), and a worker held that long holds every task queued behind it (in
//! `wasmcm run`, the host's lease renewal). Reads, cheap or streamed, stay on the workers.

pub(crate) mod discovery;
pub(crate) mod openapi;
pub(crate) mod protobuf;

mod request;
mod response;
mod subresources;
mod verbs;
mod watch;

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use hyper::body::Incoming;
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue, USER_AGENT};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::Value;

use crate::State;
use crate::auth::{self, rbac};
use crate::custom;
use crate::registry::resources::ResourceType;
use crate::request_info::{self, RequestInfo};
use crate::storage::query::Filter;
use crate::user::UserInfo;
use request::{Ctx, read_body};
pub(crate) use response::Body;
use response::{error_response, full, json_response, text};
use wasmcm_core::ApiError;

/// Entry point for one request.
pub(crate) async fn handle(state: Arc<State>, req: Request<Incoming>) -> Result<Response<Body>, Infallible> {
    let path = req.uri().path().to_string();
    if matches!(path.as_str(), "/healthz" | "/livez" | "/readyz") || path.starts_with("/healthz/") {
        return Ok(text(StatusCode::OK, "ok"));
    }
    let authorization = req.headers().get(AUTHORIZATION).and_then(|v| v.to_str().ok());
    let user = match auth::authenticate(&state, req.extensions().get::<auth::Certified>(), authorization) {
        Ok(user) => user,
        Err(e) => return Ok(error_response(&e)),
    };
    let as_user = req.headers().get("impersonate-user").and_then(|v| v.to_str().ok());
    let as_groups: Vec<String> =
        req.headers().get_all("impersonate-group").iter().filter_map(|v| v.to_str().ok().map(String::from)).collect();
    let user = match auth::impersonate(&state, user, as_user, &as_groups) {
        Ok(user) => user,
        Err(e) => return Ok(error_response(&e)),
    };
    let query: HashMap<String, String> =
        req.uri().query().map(|q| form_urlencoded::parse(q.as_bytes()).into_owned().collect()).unwrap_or_default();
    let info = RequestInfo::of_request(req.method().as_str(), &path, &query);
    let audited = state.audit.as_ref().and_then(|audit| {
        let agent = req.headers().get(USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
        Some((audit, audit.arrived(&state.store, state.now(), &user, agent, &info)?))
    });
    let response = authorized(&state, &user, &info, query, req).await;
    if let Some((audit, record)) = audited {
        audit.answered(record, response.status().as_u16());
    }
    Ok(response)
}

/// A request from an authenticated user: authorized, subject to injected faults, and served.
async fn authorized(
    state: &Arc<State>,
    user: &UserInfo,
    info: &RequestInfo,
    query: HashMap<String, String>,
    req: Request<Incoming>,
) -> Response<Body> {
    if let Some(stalled) = state.faults.stalled().await {
        return error_response(&stalled);
    }
    // Authorization comes before routing, as upstream's filter chain: a request the user may
    // not make is refused even where nothing is served.
    let decision = rbac::authorize(state, user, info);
    if !decision.allowed {
        return error_response(&rbac::forbidden(user, info, &decision.reason));
    }
    if let Some(fault) = state.faults.on_request(req.method()) {
        return error_response(&fault);
    }
    if let Some(delay) = state.faults.latency() {
        tokio::time::sleep(delay).await;
    }
    let (resource, body) = match route(state, info, query, req).await {
        Ok(Routed::Answered(r)) => return r,
        Ok(Routed::Resource(resource, body)) => (resource, body),
        Err(e) => return error_response(&e),
    };
    if resource.ctx.method == Method::GET {
        return served(state, user, resource, body);
    }
    // A write's decoding, defaulting, validation and patching run on the blocking pool: with
    // a large body (or object) they take milliseconds to seconds of CPU, which on a runtime
    // worker would hold every other task of the runtime (in `wasmcm run`, the host's lease
    // renewal) behind them.
    let (state, user) = (state.clone(), user.clone());
    tokio::task::spawn_blocking(move || served(&state, &user, resource, body)).await.unwrap_or_else(|e| {
        tracing::error!("serving a write panicked: {e}");
        error_response(&ApiError::internal("an error on the server prevented the request from being served"))
    })
}

/// The answer to a request for a resource, with the warnings its write earned (they go with
/// the answer, failed or not, as upstream's warning recorder sends them). Runs on one thread
/// from start to end: the write's directive and warnings are that thread's (`custom::scoped`).
fn served(state: &Arc<State>, user: &UserInfo, resource: Box<Resource>, body: Bytes) -> Response<Body> {
    let mut response = match serve(state, user, *resource, &body) {
        Ok(r) => r,
        Err(e) => error_response(&e),
    };
    for w in custom::take_warnings() {
        if let Ok(v) = HeaderValue::from_str(&format!("299 - {w:?}")) {
            response.headers_mut().append("warning", v);
        }
    }
    response
}

/// What routing made of a request: answered already (discovery, OpenAPI), or one for a
/// resource, with its body read.
enum Routed {
    Answered(Response<Body>),
    Resource(Box<Resource>, Bytes),
}

/// A request for a resource, resolved: its served type, its namespace (empty for a
/// cluster-scoped type or all namespaces), and the name and subresource its path gives.
struct Resource {
    ctx: Ctx,
    rt: ResourceType,
    namespace: String,
    name: Option<String>,
    sub: Option<String>,
}

/// What serves one request for a resource.
type Handler = fn(&Arc<State>, &UserInfo, Resource, &[u8]) -> Result<Response<Body>, ApiError>;

/// The handler of each verb (`RequestInfo::verb`) on a type's objects, their status and scale.
const VERBS: [(&str, Handler); 8] = [
    ("get", verbs::get),
    ("list", verbs::list),
    ("watch", watch::watch),
    ("create", verbs::create),
    ("update", verbs::update),
    ("patch", verbs::patch),
    ("delete", verbs::delete),
    ("deletecollection", verbs::delete_collection),
];

/// Resolves the request `handle` parsed into `info` (and its `query`): a non-resource path is
/// answered; a resource request gets its type and its body read.
async fn route(
    state: &Arc<State>,
    info: &RequestInfo,
    query: HashMap<String, String>,
    req: Request<Incoming>,
) -> Result<Routed, ApiError> {
    let (parts, body) = req.into_parts();
    let header = |name| parts.headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok()).unwrap_or("").to_string();
    let mut ctx = Ctx {
        method: parts.method.clone(),
        verb: info.verb.clone(),
        query,
        accept: header(ACCEPT),
        content_type: header(CONTENT_TYPE),
        user_agent: header(USER_AGENT),
    };
    if !matches!(ctx.include_object(), "None" | "Metadata" | "Object") {
        return Err(ApiError::bad_request(format!("includeObject: Unsupported value: {:?}", ctx.include_object())));
    }
    if !info.resource_request {
        return non_resource(state, &info.path, &ctx).map(Routed::Answered);
    }
    // Beyond resource, name and subresource no path is served.
    if info.parts.len() > 3 {
        return Err(not_found_path());
    }
    let rt = state.registry.lookup(&info.group, &info.version, &info.resource).ok_or_else(not_found_path)?;
    if info.namespaced_path && !rt.namespaced {
        return Err(not_found_path());
    }
    let namespace = if info.namespaced_path { info.namespace.clone() } else { String::new() };
    let (mut name, sub) = (info.parts.get(1).cloned(), info.parts.get(2).cloned());
    // A watch with a name in its path is the deprecated `/watch/` prefix's, which upstream
    // still serves: of one object through a `metadata.name` field selector, as its
    // ListResource does; GET only, and no subresource.
    if info.verb == "watch" {
        if ctx.method != Method::GET {
            return Err(ApiError::method_not_allowed());
        }
        if sub.is_some() {
            return Err(not_found_path());
        }
        if let Some(name) = name.take() {
            match ctx.query.get("fieldSelector").filter(|s| !s.is_empty()) {
                Some(s) if request_info::exact_name(s).as_deref() != Some(name.as_str()) => {
                    return Err(ApiError::bad_request("fieldSelector metadata.name doesn't match requested name"));
                }
                Some(_) => {}
                None => {
                    ctx.query.insert("fieldSelector".into(), format!("metadata.name={name}"));
                }
            }
        }
    }
    let body = read_body(&parts.headers, body, state.limits.body).await?;
    Ok(Routed::Resource(Box::new(Resource { ctx, rt, namespace, name, sub }), body))
}

/// The documents served outside the resource API, by path.
fn non_resource(state: &State, path: &str, ctx: &Ctx) -> Result<Response<Body>, ApiError> {
    let registry = &state.registry;
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    let known = matches!(
        segs.as_slice(),
        ["version" | "api" | "apis"]
            | ["openapi", "v2" | "v3"]
            | ["openapi", "v3", "api", _]
            | ["openapi", "v3", "apis", _, _]
            | ["api" | "apis", _]
            | ["apis", _, _]
    );
    if !known {
        return Err(not_found_path());
    }
    if ctx.method != Method::GET {
        return Err(ApiError::method_not_allowed());
    }
    let document = match segs.as_slice() {
        ["version"] => Some(discovery::version()),
        ["api"] | ["apis"] if ctx.wants("APIGroupDiscoveryList") => {
            let mut r = json_response(StatusCode::OK, &discovery::aggregated(registry, segs[0] == "api"));
            r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(discovery::AGGREGATED));
            return Ok(r);
        }
        ["api"] => Some(discovery::api_versions(&state.server_address)),
        ["openapi", "v2"] => return Ok(openapi_v2(state, ctx)),
        ["openapi", "v3"] => Some(openapi::v3_index(registry, &crds(state))),
        ["openapi", "v3", "api", version] => openapi::v3_group_version(registry, &crds(state), "", version),
        ["openapi", "v3", "apis", group, version] => openapi::v3_group_version(registry, &crds(state), group, version),
        ["apis"] => Some(discovery::api_group_list(registry)),
        ["apis", group] => discovery::api_group(registry, group),
        ["api", version] => discovery::resource_list(registry, "", version),
        ["apis", group, version] => discovery::resource_list(registry, group, version),
        _ => None,
    };
    document.map(|d| json_response(StatusCode::OK, &d)).ok_or_else(not_found_path)
}

/// The OpenAPI v2 document, in JSON or protobuf as the client accepts.
fn openapi_v2(state: &State, ctx: &Ctx) -> Response<Body> {
    let doc = openapi::v2(&state.registry, &crds(state));
    let mut r = match openapi::v2_form(&ctx.accept) {
        Some(openapi::V2Form::Json) => json_response(StatusCode::OK, &doc),
        Some(openapi::V2Form::Protobuf) => {
            let mut r = Response::new(full(openapi::v2_protobuf(&doc)));
            r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(openapi::V2_PROTOBUF_ANSWERED));
            r
        }
        None => {
            let mut r = Response::new(full(Bytes::new()));
            *r.status_mut() = StatusCode::NOT_ACCEPTABLE;
            r
        }
    };
    r.headers_mut().insert(hyper::header::VARY, HeaderValue::from_static("Accept"));
    r
}

/// Serves a request for a resource with the handler of its subresource or its verb.
fn serve(state: &Arc<State>, user: &UserInfo, r: Resource, body: &[u8]) -> Result<Response<Body>, ApiError> {
    if !matches!(r.ctx.method, Method::GET | Method::POST | Method::PUT | Method::PATCH | Method::DELETE) {
        return Err(ApiError::method_not_allowed());
    }
    if r.rt.create_only {
        return subresources::review(state, user, r, body);
    }
    if r.rt.strategy.read_only {
        return subresources::component_statuses(state, user, r, body);
    }
    if r.name.is_some() && r.rt.namespaced && r.namespace.is_empty() {
        return Err(not_found_path());
    }
    let handler = match r.sub.as_deref() {
        Some(sub) if !matches!(sub, "status" | "scale") => {
            r.rt.strategy.subresource(sub).and_then(|s| subresources::handler(s.name)).ok_or_else(not_found_path)?
        }
        _ => VERBS
            .iter()
            .find(|(verb, _)| *verb == r.ctx.verb)
            .map(|(_, h)| *h)
            .ok_or_else(ApiError::method_not_allowed)?,
    };
    handler(state, user, r, body)
}

/// The stored CustomResourceDefinitions (their schemas go into the OpenAPI documents).
fn crds(state: &State) -> Vec<Arc<Value>> {
    let id = "apiextensions.k8s.io/customresourcedefinitions";
    state.store.list(id, None, &Filter::for_type(id)).0
}

fn not_found_path() -> ApiError {
    ApiError::new(404, "NotFound", "the server could not find the requested resource")
}
