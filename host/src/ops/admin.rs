//! The host's HTTP endpoint: `/metrics`, `/healthz`, `/readyz` (ready once every plugin's
//! caches synced), and the plugin admin API that `wasmcm plugins` talks to:
//!
//! - `GET /plugins`: every plugin's versions (live, shadow, previous, failed) with counters;
//! - `POST /plugins/<name>/promote` and `/abandon`: end a shadow period by hand. Changing what
//!   runs is accepted from loopback only (in a pod: `kubectl port-forward` or `exec`), never
//!   from the network the metrics port is exposed on.
//!
//! It reads what the rollouts and metrics report and changes nothing but shadow periods.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo};
use tokio::sync::watch;

use crate::lifecycle::rollout::Rollout;
use crate::ops::metrics::Metrics;

/// What the endpoint serves; `plugins` is filled once the host has started them.
#[derive(Clone)]
pub struct Admin {
    pub metrics: Arc<Metrics>,
    pub ready: watch::Receiver<bool>,
    pub plugins: watch::Receiver<Vec<Arc<Rollout>>>,
}

type Reply = (StatusCode, &'static str, String);

impl Admin {
    fn handle(&self, method: &Method, path: &str, peer: SocketAddr) -> Reply {
        const TEXT: &str = "text/plain";
        match (method, path) {
            (&Method::GET, "/metrics") => {
                (StatusCode::OK, "text/plain; version=0.0.4; charset=utf-8", self.metrics.encode())
            }
            (&Method::GET, "/healthz" | "/livez") => (StatusCode::OK, TEXT, "ok".into()),
            (&Method::GET, "/readyz") if *self.ready.borrow() => (StatusCode::OK, TEXT, "ok".into()),
            (&Method::GET, "/readyz") => (StatusCode::SERVICE_UNAVAILABLE, TEXT, "caches not synced".into()),
            (&Method::GET, "/plugins") => {
                let statuses: Vec<_> = self.plugins.borrow().iter().map(|r| r.status()).collect();
                let body = serde_json::to_string_pretty(&statuses).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
                (StatusCode::OK, "application/json", body)
            }
            (&Method::POST, p) if p.starts_with("/plugins/") => {
                if !peer.ip().is_loopback() {
                    return (StatusCode::FORBIDDEN, TEXT, "plugin changes are accepted from loopback only\n".into());
                }
                let Some((name, action)) = p["/plugins/".len()..].split_once('/') else {
                    return (StatusCode::NOT_FOUND, TEXT, "POST /plugins/<name>/promote or /abandon\n".into());
                };
                let Some(rollout) = self.plugins.borrow().iter().find(|r| r.name() == name).cloned() else {
                    return (StatusCode::NOT_FOUND, TEXT, format!("no plugin {name}\n"));
                };
                let result = match action {
                    "promote" => rollout.promote(),
                    "abandon" => rollout.abandon(),
                    _ => return (StatusCode::NOT_FOUND, TEXT, format!("unknown action {action}\n")),
                };
                match result {
                    Ok(m) => (StatusCode::OK, TEXT, format!("plugin {name}: {m}\n")),
                    Err(e) => (StatusCode::CONFLICT, TEXT, format!("{e}\n")),
                }
            }
            _ => (StatusCode::NOT_FOUND, TEXT, "not found\n".into()),
        }
    }
}

/// Listens on `addr` and serves until the runtime stops; returns the bound address.
pub async fn serve_admin(addr: SocketAddr, admin: Admin) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    tokio::spawn(async move {
        loop {
            let Ok((stream, peer)) = listener.accept().await else { continue };
            let admin = admin.clone();
            tokio::spawn(async move {
                let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    let (code, content_type, body) = admin.handle(req.method(), req.uri().path(), peer);
                    let mut r = Response::new(Full::new(Bytes::from(body)));
                    *r.status_mut() = code;
                    r.headers_mut()
                        .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static(content_type));
                    async move { Ok::<_, Infallible>(r) }
                });
                let _ = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new())
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
    });
    Ok(bound)
}

/// One request to a running host's endpoint: (status, body).
pub async fn admin_request(addr: SocketAddr, method: Method, path: &str) -> anyhow::Result<(u16, String)> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot reach a wasmcm host at {addr}: {e}"))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let req = Request::builder()
        .method(method)
        .uri(path)
        .header(hyper::header::HOST, addr.to_string())
        .body(http_body_util::Empty::<Bytes>::new())?;
    let resp = sender.send_request(req).await?;
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await?.to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}
