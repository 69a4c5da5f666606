//! HTTP front of the embedded API server, per request: authentication, impersonation and
//! authorization (decided by `auth` and `rbac`), routing of the Kubernetes REST paths, request
//! bodies (kube-apiserver's 3 MiB limit), content negotiation (JSON, YAML bodies, Table and
//! PartialObjectMetadata views), list paging and watch streams (and their timeouts). The
//! semantics of each verb live in `api`; this module only translates. Connections, TLS and
//! their limits are `listener`'s.
//!
//! A write is served on tokio's blocking pool, not on a runtime worker: its decoding,
//! defaulting, validation and patching cost CPU in proportion to its body and object (up to
//! seconds for megabytes), and a worker held that long holds every task queued behind it (in
//! `wasmcm run`, the host's lease renewal). Reads, cheap or streamed, stay on the workers.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use base64::Engine as _;
use bytes::Bytes;
use http_body_util::{BodyExt, Full, Limited, StreamBody, combinators::BoxBody};
use hyper::body::{Frame, Incoming};
use hyper::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderValue, USER_AGENT};
use hyper::{Method, Request, Response, StatusCode};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::api::{self, DeleteOptions, Deleted, Ownership, Part};
use super::auth;
use super::change::{Event, EventType};
use super::custom::{self, Arrival, FieldValidation};
use super::managed::Writer;
use super::patch::PatchType;
use super::query::{self, Filter, query_bool};
use super::request_info::{self, RequestInfo};
use super::resources::ResourceType;
use super::resources::Target;
use super::store::WatchFrom;
use super::user::UserInfo;
use super::{State, certificates, control_plane, discovery, disruption, ephemeral, json, openapi, rbac, table};
use wasmcm_core::ApiError;

pub(crate) type Body = BoxBody<Bytes, Infallible>;

/// kube-apiserver's limit on a request body (`--max-request-body-bytes`' 3 MiB), which it
/// answers 413 "Request entity too large: limit is 3145728". What is stored is held to etcd's
/// smaller limit (`store::MAX_OBJECT_BYTES`).
const MAX_BODY: usize = 3 << 20;

fn full(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

fn json_response(code: StatusCode, value: &Value) -> Response<Body> {
    let mut r = Response::new(full(json::body(value)));
    *r.status_mut() = code;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    r
}

fn error_response(e: &ApiError) -> Response<Body> {
    let mut status = e.to_status();
    // A plain Go error becomes a Status without a reason (omitempty), not an empty one.
    if e.reason.is_empty()
        && let Some(fields) = status.as_object_mut()
    {
        fields.remove("reason");
    }
    json_response(StatusCode::from_u16(e.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR), &status)
}

fn text(code: StatusCode, body: &'static str) -> Response<Body> {
    let mut r = Response::new(full(body));
    *r.status_mut() = code;
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    r
}

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
    let attributes = RequestInfo::of_request(req.method().as_str(), &path, &query);
    let audited = state.audit.as_ref().and_then(|audit| {
        let agent = req.headers().get(USER_AGENT).and_then(|v| v.to_str().ok()).unwrap_or("");
        Some((audit, audit.arrived(&state.store, state.now(), &user, agent, &attributes)?))
    });
    let response = authorized(&state, &user, &attributes, query, req).await;
    if let Some((audit, record)) = audited {
        audit.answered(record, response.status().as_u16());
    }
    Ok(response)
}

/// A request from an authenticated user: authorized, subject to injected faults, and served.
async fn authorized(
    state: &Arc<State>,
    user: &UserInfo,
    attributes: &RequestInfo,
    query: HashMap<String, String>,
    req: Request<Incoming>,
) -> Response<Body> {
    if let Some(stalled) = state.faults.stalled().await {
        return error_response(&stalled);
    }
    // Authorization comes before routing, as upstream's filter chain: a request the user may
    // not make is refused even where nothing is served.
    let decision = rbac::authorize(state, user, attributes);
    if !decision.allowed {
        return error_response(&rbac::forbidden(user, attributes, &decision.reason));
    }
    if let Some(fault) = state.faults.on_request(req.method()) {
        return error_response(&fault);
    }
    if let Some(delay) = state.faults.latency() {
        tokio::time::sleep(delay).await;
    }
    let (resource, body) = match route(state, attributes, query, req).await {
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

/// A request for a resource, its path resolved.
struct Resource {
    ctx: Ctx,
    rt: ResourceType,
    /// Empty for a cluster-scoped type or all namespaces.
    namespace: String,
    name: Option<String>,
    sub: Option<String>,
}

struct Ctx {
    method: Method,
    /// Whether authorization took the request for a watch (`?watch=`, or the deprecated
    /// `/watch/` prefix): it is served as one exactly then.
    watch: bool,
    query: HashMap<String, String>,
    accept: String,
    content_type: String,
    user_agent: String,
}

impl Ctx {
    fn flag(&self, name: &str) -> bool {
        query_bool(&self.query, name)
    }

    fn dry_run(&self) -> bool {
        self.query.get("dryRun").is_some_and(|v| v == "All")
    }

    /// `includeObject`, validated when the request is routed.
    fn include_object(&self) -> &str {
        self.query.get("includeObject").map(String::as_str).unwrap_or("Metadata")
    }

    /// Who the request writes as, for managedFields: `fieldManager`, else its User-Agent's
    /// first word, as kube-apiserver.
    fn writer(&self, state: &State, rt: &ResourceType, subresource: &'static str) -> Result<Writer, ApiError> {
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

    fn wants(&self, view: &str) -> bool {
        self.accept.split(',').any(|part| part.contains(&format!("as={view}")))
    }
}

/// Resolves the request's path; `attributes` and `query` are what `handle` parsed of it once.
async fn route(
    state: &Arc<State>,
    attributes: &RequestInfo,
    query: HashMap<String, String>,
    req: Request<Incoming>,
) -> Result<Routed, ApiError> {
    let (parts, body) = req.into_parts();
    let header = |name| parts.headers.get(name).and_then(|v: &HeaderValue| v.to_str().ok()).unwrap_or("").to_string();
    let mut ctx = Ctx {
        method: parts.method.clone(),
        watch: attributes.verb == "watch",
        query,
        accept: header(ACCEPT),
        content_type: header(CONTENT_TYPE),
        user_agent: header(USER_AGENT),
    };
    let segs: Vec<&str> = parts.uri.path().split('/').filter(|s| !s.is_empty()).collect();
    if !matches!(ctx.include_object(), "None" | "Metadata" | "Object") {
        return Err(ApiError::bad_request(format!("includeObject: Unsupported value: {:?}", ctx.include_object())));
    }

    let registry = &state.registry;
    let get_only = |doc: Option<Value>| -> Result<Routed, ApiError> {
        if ctx.method != Method::GET {
            return Err(ApiError::method_not_allowed());
        }
        doc.map(|d| Routed::Answered(json_response(StatusCode::OK, &d))).ok_or_else(not_found_path)
    };
    match segs.as_slice() {
        ["version"] => return get_only(Some(discovery::version())),
        ["api"] | ["apis"] if ctx.wants("APIGroupDiscoveryList") => {
            if ctx.method != Method::GET {
                return Err(ApiError::method_not_allowed());
            }
            let mut r = json_response(StatusCode::OK, &discovery::aggregated(registry, segs[0] == "api"));
            r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static(discovery::AGGREGATED));
            return Ok(Routed::Answered(r));
        }
        ["api"] => return get_only(Some(discovery::api_versions(&state.server_address))),
        ["openapi", "v2"] => {
            if ctx.method != Method::GET {
                return Err(ApiError::method_not_allowed());
            }
            let doc = openapi::v2(registry, &crds(state));
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
            return Ok(Routed::Answered(r));
        }
        ["openapi", "v3"] => return get_only(Some(openapi::v3_index(registry, &crds(state)))),
        ["openapi", "v3", "api", version] => {
            return get_only(openapi::v3_group_version(registry, &crds(state), "", version));
        }
        ["openapi", "v3", "apis", group, version] => {
            return get_only(openapi::v3_group_version(registry, &crds(state), group, version));
        }
        ["apis"] => return get_only(Some(discovery::api_group_list(registry))),
        ["apis", group] => return get_only(discovery::api_group(registry, group)),
        ["api", version] => return get_only(discovery::resource_list(registry, "", version)),
        ["apis", group, version] => return get_only(discovery::resource_list(registry, group, version)),
        _ => {}
    }
    let (group, version, rest) = match segs.as_slice() {
        ["api", version, rest @ ..] => ("", *version, rest),
        ["apis", group, version, rest @ ..] => (*group, *version, rest),
        _ => return Err(not_found_path()),
    };
    // The deprecated `/watch/` prefix, which upstream still serves: a watch of the collection,
    // or of one object through a `metadata.name` field selector, as its ListResource does.
    let (watch_prefix, rest) = match rest {
        ["watch", rest @ ..] => (true, rest),
        _ => (false, rest),
    };
    let (namespace, resource, name, sub) = match rest {
        ["namespaces", ns, resource, tail @ ..] if !(tail.is_empty() && matches!(*resource, "status" | "finalize")) => {
            (Some(*ns), *resource, tail.first().copied(), tail.get(1).copied())
        }
        [resource, tail @ ..] => (None, *resource, tail.first().copied(), tail.get(1).copied()),
        [] => return Err(not_found_path()),
    };
    if rest.len() > 5 {
        return Err(not_found_path());
    }
    let rt = registry.lookup(group, version, resource).ok_or_else(not_found_path)?;
    if namespace.is_some() && !rt.namespaced {
        return Err(not_found_path());
    }
    let namespace = namespace.unwrap_or("").to_string();
    let (mut name, sub) = (name.map(String::from), sub.map(String::from));
    if watch_prefix {
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

/// Serves a request for a resource: the verbs of `api` and the subresources.
fn serve(state: &Arc<State>, user: &UserInfo, resource: Resource, body: &[u8]) -> Result<Response<Body>, ApiError> {
    let Resource { ctx, rt, namespace, name, sub } = resource;
    let (name, sub) = (name.as_deref(), sub.as_deref());
    let options_kind = match ctx.method {
        Method::POST => "CreateOptions",
        Method::PUT => "UpdateOptions",
        _ => "PatchOptions",
    };
    let directive = match ctx.method {
        Method::POST | Method::PUT | Method::PATCH => {
            FieldValidation::parse(ctx.query.get("fieldValidation").map(String::as_str), options_kind)?
        }
        _ => FieldValidation::default(),
    };
    // The writes below run on this thread, in the directive's scope.
    let body_write = |f: &mut dyn FnMut() -> Result<Arc<Value>, ApiError>| custom::scoped(directive, Arrival::Body, f);
    if rt.create_only {
        if name.is_some() || ctx.method != Method::POST {
            return Err(ApiError::method_not_allowed());
        }
        let answer = auth::review(state, user, &rt.resource, parse_object(&ctx, body)?)?;
        return Ok(json_response(StatusCode::CREATED, &answer));
    }

    if rt.id() == control_plane::COMPONENT_STATUS_ID {
        return component_statuses(&rt, name, &ctx);
    }
    let Some(name) = name else {
        return match ctx.method {
            Method::GET if ctx.watch => watch(state, &rt, &namespace, &ctx),
            Method::GET => list(state, &rt, &namespace, &ctx),
            Method::POST => {
                if rt.namespaced && namespace.is_empty() {
                    return Err(ApiError::not_found("", "namespaces", ""));
                }
                let mut object = parse_object(&ctx, body)?;
                if rt.id() == certificates::CSR_ID {
                    certificates::stamp_requestor(&mut object, user);
                }
                let writer = ctx.writer(state, &rt, "")?;
                let mut object = Some(object);
                let created = body_write(&mut || {
                    let object = object.take().unwrap_or_default();
                    api::create(state, &rt, &namespace, object, ctx.dry_run(), Ownership::Update(&writer))
                })?;
                Ok(object_response(StatusCode::CREATED, &rt, &created, &ctx))
            }
            Method::DELETE => delete_collection(state, &rt, &namespace, &ctx, body),
            _ => Err(ApiError::method_not_allowed()),
        };
    };
    if rt.namespaced && namespace.is_empty() {
        return Err(not_found_path());
    }
    if sub == Some("token") && rt.strategy.token_subresource {
        if ctx.method != Method::POST {
            return Err(ApiError::method_not_allowed());
        }
        let answer = auth::token_request(state, &namespace, name, parse_object(&ctx, body)?, ctx.dry_run())?;
        return Ok(json_response(StatusCode::CREATED, &answer));
    }
    if sub == Some("eviction") && rt.strategy.eviction_subresource {
        if ctx.method != Method::POST {
            return Err(ApiError::method_not_allowed());
        }
        let (code, answer) = disruption::evict(state, &namespace, name, parse_object(&ctx, body)?, ctx.dry_run())?;
        let mut r = json_response(code, &answer);
        if let Some(seconds) = answer.pointer("/details/retryAfterSeconds").and_then(Value::as_u64) {
            r.headers_mut().insert("retry-after", HeaderValue::from(seconds));
        }
        return Ok(r);
    }
    if sub == Some("ephemeralcontainers") && rt.strategy.eviction_subresource {
        let target = Target { rt: rt.clone(), namespace, name: name.to_string() };
        let written = match ctx.method {
            Method::GET => api::get(state, &target)?,
            Method::PUT => ephemeral::update(state, &target, parse_object(&ctx, body)?, ctx.dry_run())?,
            Method::PATCH => {
                let media = ctx.content_type.split(';').next().unwrap_or("").trim();
                let ty = PatchType::from_content_type(media).ok_or_else(|| {
                    ApiError::unsupported_media_type(format!(
                        "the body of the request was in an unknown format (got {media:?})"
                    ))
                })?;
                ephemeral::patch(state, &target, ty, body, ctx.dry_run())?
            }
            _ => return Err(ApiError::method_not_allowed()),
        };
        return Ok(object_response(StatusCode::OK, &rt, &written, &ctx));
    }
    if let Some(what @ ("log" | "exec" | "attach" | "portforward")) = sub
        && rt.strategy.eviction_subresource
    {
        // What kube-apiserver proxies to the pod's kubelet: the simulated kubelet runs no
        // processes, so there is nothing to stream. The pod must exist, as upstream checks first.
        let target = Target { rt: rt.clone(), namespace, name: name.to_string() };
        api::get(state, &target)?;
        return Err(ApiError::bad_request(format!(
            "pods/{what} is not served by the wasmcm embedded cluster: its kubelet is simulated and runs no \
             containers, so pod {}/{} has no {} (see apiserver/README.md in wasmcm's repository)",
            target.namespace,
            target.name,
            match what {
                "log" => "logs",
                "portforward" => "ports to forward",
                _ => "processes to exec into or attach to",
            }
        )));
    }
    if sub == Some("approval") && rt.id() == certificates::CSR_ID {
        let target = Target { rt: rt.clone(), namespace, name: name.to_string() };
        let written = match ctx.method {
            Method::GET => api::get(state, &target)?,
            Method::PUT => certificates::update_approval(state, &target, parse_object(&ctx, body)?, ctx.dry_run())?,
            // What kube-rs's `patch_approval` sends: the patch applied to the object as it is,
            // then the approval strategy as for a PUT, again if the object changed meanwhile.
            Method::PATCH => {
                let ty = patch_type(&ctx)?;
                if ty == PatchType::Apply {
                    return Err(ApiError::unsupported_media_type(
                        "the approval subresource takes json, merge and strategic merge patches",
                    ));
                }
                let mut attempts = 0;
                loop {
                    let current = api::get(state, &target)?;
                    let patched = crate::patch::apply(ty, rt.strategy.merge_schema, &rt.kind, &current, body)?;
                    match certificates::update_approval(state, &target, patched, ctx.dry_run()) {
                        Err(e) if e.code == 409 && attempts < 5 => attempts += 1,
                        result => break result?,
                    }
                }
            }
            _ => return Err(ApiError::method_not_allowed()),
        };
        return Ok(object_response(StatusCode::OK, &rt, &written, &ctx));
    }
    let target = Target { rt: rt.clone(), namespace, name: name.to_string() };
    let part = match sub {
        None => Part::Main,
        Some("status") if rt.status => Part::Status,
        Some("scale") if rt.scale => Part::Scale,
        Some(_) => return Err(not_found_path()),
    };
    let dry_run = ctx.dry_run();
    let subresource = match part {
        Part::Main => "",
        Part::Status => "status",
        Part::Scale => "scale",
    };
    let writer = ctx.writer(state, &rt, subresource)?;
    let owner = Ownership::Update(&writer);
    let mut code = StatusCode::OK;
    let mut warning = None;
    let written = match (ctx.method.clone(), part) {
        (Method::GET, Part::Scale) => Arc::new(api::scale_of_type(&rt, &*api::get(state, &target)?)),
        (Method::GET, _) => api::get(state, &target)?,
        (Method::PUT, part) => {
            let mut object = Some(parse_object(&ctx, body)?);
            body_write(&mut || {
                let object = object.take().unwrap_or_default();
                match part {
                    Part::Main => api::update(state, &target, object, dry_run, owner),
                    Part::Status => api::update_status(state, &target, object, dry_run, owner),
                    Part::Scale => api::update_scale(state, &target, object, dry_run, owner),
                }
            })?
        }
        (Method::PATCH, part) => {
            let ty = patch_type(&ctx)?;
            let force = ctx.flag("force");
            if ty != PatchType::Apply {
                if force {
                    return Err(ApiError::bad_request("force may not be specified for non-apply patch"));
                }
                custom::scoped(directive, Arrival::Patch, || {
                    api::patch(state, &target, part, ty, body, dry_run, owner)
                })?
            } else {
                if !ctx.query.contains_key("fieldManager") {
                    return Err(ApiError::bad_request("fieldManager is required for apply requests"));
                }
                let config = apply_config(body)?;
                let (written, created) = custom::scoped(directive, Arrival::Body, || {
                    api::apply(state, &target, part, config, dry_run, &writer, force)
                })?;
                if created {
                    code = StatusCode::CREATED;
                }
                written
            }
        }
        (Method::DELETE, Part::Main) => {
            let opts = delete_options(&ctx, body)?;
            warning = api::delete_warning(&rt, &opts);
            match api::delete(state, &target, &opts)? {
                Deleted::Gone(o) if !rt.strategy.returns_deleted_object => {
                    let mut details = json!({"name": target.name, "kind": rt.resource,
                                             "uid": o.pointer("/metadata/uid").cloned().unwrap_or(Value::Null)});
                    if !rt.group.is_empty() {
                        details["group"] = json!(rt.group);
                    }
                    let status = json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details});
                    return Ok(with_warning(json_response(StatusCode::OK, &status), warning));
                }
                Deleted::Gone(o) | Deleted::Pending(o) => o,
            }
        }
        _ => return Err(ApiError::method_not_allowed()),
    };
    if part == Part::Scale {
        return Ok(json_response(StatusCode::OK, &written));
    }
    Ok(with_warning(object_response(code, &rt, &written, &ctx), warning))
}

/// The patch a request's Content-Type names, or upstream's 415.
fn patch_type(ctx: &Ctx) -> Result<PatchType, ApiError> {
    let media = ctx.content_type.split(';').next().unwrap_or("").trim();
    PatchType::from_content_type(media).ok_or_else(|| {
        ApiError::unsupported_media_type(format!(
            "the body of the request was in an unknown format - accepted media types include: \
             application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml, \
             application/strategic-merge-patch+json (got {media:?})"
        ))
    })
}

/// Adds a `Warning` header as kube-apiserver writes them (code 299, no agent), which client-go
/// and kubectl print.
fn with_warning(mut r: Response<Body>, warning: Option<&str>) -> Response<Body> {
    if let Some(text) = warning
        && let Ok(value) = HeaderValue::from_str(&format!("299 - {text:?}"))
    {
        r.headers_mut().append("warning", value);
    }
    r
}

/// The stored CustomResourceDefinitions (their schemas go into the OpenAPI documents).
fn crds(state: &State) -> Vec<Arc<Value>> {
    let id = "apiextensions.k8s.io/customresourcedefinitions";
    state.store.list(id, None, &Filter::for_type(id)).0
}

fn not_found_path() -> ApiError {
    ApiError::new(404, "NotFound", "the server could not find the requested resource")
}

/// The request body, refused with upstream's 413 past [`MAX_BODY`]: by its announced length
/// before reading any of it, else as soon as more arrives (a 52 MB body is never buffered).
/// One that has not all arrived within `within` is answered as kube-apiserver's timeout
/// filter answers a request past `--request-timeout`.
async fn read_body(headers: &hyper::HeaderMap, body: Incoming, within: Duration) -> Result<Bytes, ApiError> {
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
fn apply_config(body: &[u8]) -> Result<Value, ApiError> {
    let text = std::str::from_utf8(body).map_err(|_| ApiError::bad_request("the apply configuration is not UTF-8"))?;
    let config: Value =
        serde_saphyr::from_str(text).map_err(|e| ApiError::bad_request(format!("error decoding YAML: {e}")))?;
    if !config.is_object() {
        return Err(ApiError::bad_request("the apply configuration must be an object"));
    }
    Ok(config)
}

fn parse_object(ctx: &Ctx, body: &[u8]) -> Result<Value, ApiError> {
    let media = ctx.content_type.split(';').next().unwrap_or("").trim();
    let value: Value = match media {
        "" | "application/json" | "*/*" => serde_json::from_slice(body)
            .map_err(|e| ApiError::bad_request(format!("error decoding JSON request body: {e}")))?,
        "application/yaml" | "application/x-yaml" | "text/yaml" => {
            let text = std::str::from_utf8(body).map_err(|_| ApiError::bad_request("the YAML body is not UTF-8"))?;
            serde_saphyr::from_str(text)
                .map_err(|e| ApiError::bad_request(format!("error decoding YAML request body: {e}")))?
        }
        "application/vnd.kubernetes.protobuf" => super::protobuf::decode(body).map_err(|e| match e {
            super::protobuf::ProtobufError::Malformed(msg) => ApiError::bad_request(msg),
            super::protobuf::ProtobufError::Unsupported(msg) => ApiError::unsupported_media_type(msg),
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

fn delete_options(ctx: &Ctx, body: &[u8]) -> Result<DeleteOptions, ApiError> {
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

/// `GET` of the ComponentStatuses, made up on each request as upstream's REST does (no
/// resourceVersion, no watch), with its deprecation warning.
fn component_statuses(rt: &ResourceType, name: Option<&str>, ctx: &Ctx) -> Result<Response<Body>, ApiError> {
    if ctx.method != Method::GET || ctx.watch {
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

/// The object as the client asked to see it: itself, its metadata only, or a Table.
fn object_response(code: StatusCode, rt: &ResourceType, object: &Value, ctx: &Ctx) -> Response<Body> {
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
fn as_served(rt: &ResourceType, object: &Value) -> Value {
    let mut o = api::served(rt, object).unwrap_or_else(|| object.clone());
    if o.get("apiVersion").and_then(Value::as_str) != Some(&rt.api_version()) {
        o["apiVersion"] = json!(rt.api_version());
    }
    o
}

fn partial(object: &Value) -> Value {
    json!({
        "apiVersion": "meta.k8s.io/v1",
        "kind": "PartialObjectMetadata",
        "metadata": object.get("metadata").cloned().unwrap_or(json!({})),
    })
}

fn filter_from(state: &State, rt: &ResourceType, namespace: &str, ctx: &Ctx) -> Result<Filter, ApiError> {
    let labels = match ctx.query.get("labelSelector") {
        Some(s) => wasmcm_core::Selector::parse(s).map_err(ApiError::bad_request)?,
        None => Default::default(),
    };
    let fields = match ctx.query.get("fieldSelector") {
        Some(s) => query::parse_field_selector(s, rt.strategy).map_err(ApiError::bad_request)?,
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

fn list(state: &State, rt: &ResourceType, namespace: &str, ctx: &Ctx) -> Result<Response<Body>, ApiError> {
    let filter = filter_from(state, rt, namespace, ctx)?;
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

/// Writes `object` as served in `rt`'s version (in its kind's order, see `json`), copying it
/// only if its stored version differs.
fn write_served(out: &mut Vec<u8>, rt: &ResourceType, api_version: &str, object: &Value) {
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
fn list_json(rt: &ResourceType, metadata: &Value, items: &[Arc<Value>]) -> Vec<u8> {
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

fn delete_collection(
    state: &State,
    rt: &ResourceType,
    namespace: &str,
    ctx: &Ctx,
    body: &[u8],
) -> Result<Response<Body>, ApiError> {
    let filter = filter_from(state, rt, namespace, ctx)?;
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

fn watch(state: &Arc<State>, rt: &ResourceType, namespace: &str, ctx: &Ctx) -> Result<Response<Body>, ApiError> {
    let filter = filter_from(state, rt, namespace, ctx)?;
    let timeout = watch_timeout(state, ctx.query.get("timeoutSeconds").map(String::as_str))?;
    let send_initial = ctx.flag("sendInitialEvents");
    let bookmarks = ctx.flag("allowWatchBookmarks");
    let from = match ctx.query.get("resourceVersion").map(String::as_str) {
        _ if send_initial => WatchFrom::Now,
        None | Some("") | Some("0") => WatchFrom::Now,
        Some(rv) => WatchFrom::Version(
            rv.parse().map_err(|_| ApiError::bad_request(format!("invalid resourceVersion {rv:?}")))?,
        ),
    };
    let mut watch = match state.store.watch(filter, from) {
        Ok(w) => w,
        // As the API server's watch cache does: a 200 stream carrying one ERROR event, so
        // informers see "expired" and re-list.
        Err(e) if e.code == 410 => {
            let mut line = watch_event("ERROR", &e.to_status());
            line.push(b'\n');
            let mut r = Response::new(full(line));
            r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            return Ok(r);
        }
        Err(e) => return Err(e),
    };
    let view = if ctx.wants("Table") {
        View::Table(ctx.include_object().to_string())
    } else if ctx.wants("PartialObjectMetadata") {
        View::Metadata
    } else {
        View::Object
    };
    let (tx, rx) = mpsc::channel::<Result<Frame<Bytes>, Infallible>>(256);
    let rt = rt.clone();
    let state_for_drops = state.clone();
    tokio::spawn(async move {
        let frame = |mut bytes: Vec<u8>| {
            bytes.push(b'\n');
            Ok(Frame::data(Bytes::from(bytes)))
        };
        let bookmark = |rv: u64, initial_end: bool| {
            let mut metadata = json!({"resourceVersion": rv.to_string()});
            if initial_end {
                metadata["annotations"] = json!({"k8s.io/initial-events-end": "true"});
            }
            watch_event("BOOKMARK", &json!({"kind": rt.kind, "apiVersion": rt.api_version(), "metadata": metadata}))
        };
        let mut last_rv = watch.rv;
        for event in std::mem::take(&mut watch.initial) {
            last_rv = last_rv.max(event.rv);
            if tx.send(frame(render_event(&rt, &event, &view))).await.is_err() {
                return;
            }
        }
        if send_initial && tx.send(frame(bookmark(watch.rv, true))).await.is_err() {
            return;
        }
        let deadline = tokio::time::Instant::now() + timeout.min(MAX_WATCH_TIMEOUT);
        let mut ticker = tokio::time::interval(Duration::from_secs(5));
        ticker.tick().await;
        let mut drops = state_for_drops.faults.watch_drop_signal();
        loop {
            tokio::select! {
                event = watch.rx.recv() => match event {
                    Some(event) => {
                        let lag = state_for_drops.faults.config().watch_delay;
                        if !lag.is_zero() {
                            tokio::time::sleep(lag).await;
                        }
                        last_rv = event.rv;
                        if tx.send(frame(render_event(&rt, &event, &view))).await.is_err() {
                            return;
                        }
                    }
                    None => return,
                },
                _ = ticker.tick(), if bookmarks => {
                    if tx.send(frame(bookmark(last_rv, false))).await.is_err() {
                        return;
                    }
                }
                _ = drops.changed() => return,
                _ = tokio::time::sleep_until(deadline) => return,
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|f| (f, rx)) });
    let mut r = Response::new(StreamBody::new(stream).boxed());
    r.headers_mut().insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
    Ok(r)
}

/// kube-apiserver's `--min-request-timeout` default: a watch without a timeout of its own ends
/// after between this and twice this, so that clients' re-watches spread out.
const MIN_REQUEST_TIMEOUT: Duration = Duration::from_secs(1800);

/// The longest a watch runs: a client's `timeoutSeconds` beyond it is clamped (upstream's
/// `time.Duration(seconds) * time.Second` wraps around past 292 years; a deadline that far
/// overflowed `Instant` here and panicked the watch's task).
const MAX_WATCH_TIMEOUT: Duration = Duration::from_secs(365 * 24 * 3600);

/// How long a watch runs, as upstream's `GetTimeoutForWatch`: the client's `timeoutSeconds`
/// (an int64, refused as its query decoding refuses one that is not; a negative one ends the
/// watch at once), or if it gives none or 0, a random time between [`MIN_REQUEST_TIMEOUT`]
/// and twice it.
fn watch_timeout(state: &State, given: Option<&str>) -> Result<Duration, ApiError> {
    let seconds = match given.map(str::parse::<i64>) {
        None => 0,
        Some(Ok(s)) => s,
        Some(Err(e)) => {
            let why = match e.kind() {
                std::num::IntErrorKind::PosOverflow | std::num::IntErrorKind::NegOverflow => "value out of range",
                _ => "invalid syntax",
            };
            return Err(ApiError::bad_request(format!("strconv.ParseInt: parsing {:?}: {why}", given.unwrap_or(""))));
        }
    };
    if seconds != 0 {
        return Ok(Duration::from_secs(seconds.max(0).unsigned_abs()).min(MAX_WATCH_TIMEOUT));
    }
    let mut b = [0u8; 8];
    state.fill(&mut b);
    let fraction = (u64::from_le_bytes(b) >> 11) as f64 / (1u64 << 53) as f64;
    Ok(MIN_REQUEST_TIMEOUT.mul_f64(1.0 + fraction))
}

enum View {
    Object,
    Metadata,
    Table(String),
}

/// One line of a watch stream, `type` first (see `watch_event`). The plain object view is
/// written straight from the stored object, as the list is: every watcher of a type gets every
/// change, so no deep copy each.
fn render_event(rt: &ResourceType, event: &Event, view: &View) -> Vec<u8> {
    let event_type = match event.event_type {
        EventType::Added => "ADDED",
        EventType::Modified => "MODIFIED",
        EventType::Deleted => "DELETED",
    };
    let object = match view {
        View::Object => {
            let mut out = Vec::with_capacity(1024);
            out.extend_from_slice(b"{\"type\":\"");
            out.extend_from_slice(event_type.as_bytes());
            out.extend_from_slice(b"\",\"object\":");
            write_served(&mut out, rt, &rt.api_version(), &event.object);
            out.push(b'}');
            return out;
        }
        View::Metadata => partial(&event.object),
        View::Table(include) => table::render(
            &rt.api_version(),
            &rt.kind,
            &[as_served(rt, &event.object)],
            jiff::Timestamp::now(),
            include,
            json!({}),
            table::Printer::of(rt.strategy.printer, rt.printer_columns.as_ref()),
        ),
    };
    watch_event(event_type, &object)
}

/// One watch event as kube-apiserver writes it: `type` before `object` (Go's field order).
/// Clients may rely on it: kube-rs decodes `object` straight into the target type only when
/// the tag came first, and the host keeps each object's JSON as served that way.
fn watch_event(event_type: &str, object: &Value) -> Vec<u8> {
    let mut line = format!("{{\"type\":\"{event_type}\",\"object\":").into_bytes();
    json::write_top(&mut line, object);
    line.push(b'}');
    line
}
