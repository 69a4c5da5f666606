//! The watch verb: a stream of a type's changes from a resourceVersion (or its current
//! objects first, on `sendInitialEvents`), in the view asked for, with bookmarks, ended by its
//! timeout, by an injected drop, or when the client goes.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Response};
use serde_json::{Value, json};
use tokio::sync::mpsc;

use super::response::{Body, as_served, full, partial, write_served};
use super::verbs::filter_from;
use super::{Resource, not_found_path};
use crate::State;
use crate::registry::resources::ResourceType;
use crate::storage::change::{Event, EventType};
use crate::storage::store::WatchFrom;
use crate::user::UserInfo;
use crate::{json, table};
use wasmcm_core::ApiError;

pub(super) fn watch(state: &Arc<State>, _: &UserInfo, r: Resource, _: &[u8]) -> Result<Response<Body>, ApiError> {
    let Resource { ctx, rt, namespace, name, sub } = r;
    if ctx.method != Method::GET {
        return Err(ApiError::method_not_allowed());
    }
    if name.is_some() || sub.is_some() {
        return Err(not_found_path());
    }
    let filter = filter_from(state, &rt, &namespace, &ctx)?;
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
