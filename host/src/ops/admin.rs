//! The host's HTTP endpoint: `/metrics`, `/healthz`, `/readyz` (ready once the host has
//! started: every plugin's caches synced or known not to; its body says which, as
//! kube-apiserver's `/readyz?verbose` lists its checks), and the plugin admin API that `wasmcm
//! plugins` talks to:
//!
//! - `GET /plugins`: every plugin's versions (live, shadow, previous, failed) with counters;
//! - `POST /plugins/<name>/promote` and `/abandon`: end a shadow period by hand;
//! - `POST /plugins/<name>/record?key=<namespace>/<name>[&timeout=<seconds>]`: reconcile that
//!   key now and answer what the live version read, was asked and returned (a
//!   [`Recording`](crate::record::Recording), JSON), or 504 when no reconcile of it ran within
//!   the timeout (default 30 s; a standby or another shard's replica never runs one).
//!
//! Each POST needs `Authorization: Bearer <token>` with the host's admin token (where it came
//! from is the caller's business: a file only its user reads, a Secret), never the peer's
//! address: a sidecar or a hostNetwork pod reaches loopback too. A recording holds what the
//! plugin read, so it is as guarded as a change. A request a browser sends on a page's behalf
//! (it carries `Origin`) is refused, so a port-forward cannot be driven by CSRF.
//!
//! Connections are capped and timed out (headers in 10 s, a connection at most 60 s) so idle
//! or slow clients cannot take the probes' port, and accept errors (out of file descriptors)
//! back off instead of spinning.
//!
//! It reads what the controllers, rollouts and metrics report and changes nothing but shadow
//! periods (a recording only queues the key).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::sync::watch;

use crate::ops::metrics::Metrics;
use crate::runtime::controller::PluginController;
use crate::runtime::group::Agreement;
use crate::writes::kube::KubeApi;

/// What the endpoint serves; `plugins` is filled once the host has started them.
#[derive(Clone)]
pub struct Admin {
    pub metrics: Arc<Metrics>,
    pub ready: watch::Receiver<bool>,
    pub plugins: watch::Receiver<Vec<Arc<PluginController<KubeApi>>>>,
    /// The bearer token plugin changes need; `None` refuses every change.
    pub token: Option<Arc<str>>,
    /// Whether this replica agrees with its group's shape.
    pub standing: watch::Receiver<Agreement>,
}

/// Connections served at once; more wait in the listen backlog.
const MAX_CONNECTIONS: usize = 512;
/// A client must have sent a request's headers within this.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// No connection lives longer (scrapes and probes take milliseconds).
const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);

type Reply = (StatusCode, &'static str, String);

/// How long a recording waits for its reconcile unless the request says otherwise, and at most.
const RECORD_TIMEOUT: Duration = Duration::from_secs(30);
const MAX_RECORD_TIMEOUT: Duration = Duration::from_secs(50);

impl Admin {
    async fn handle(&self, req: &Request<hyper::body::Incoming>) -> Reply {
        const TEXT: &str = "text/plain";
        let (method, path) = (req.method(), req.uri().path());
        match (method, path) {
            (&Method::GET, "/metrics") => {
                (StatusCode::OK, "text/plain; version=0.0.4; charset=utf-8", self.metrics.encode())
            }
            (&Method::GET, "/healthz" | "/livez") => (StatusCode::OK, TEXT, "ok".into()),
            (&Method::GET, "/readyz") => self.readiness(),
            (&Method::GET, "/plugins") => {
                let statuses: Vec<_> = self.plugins.borrow().iter().map(|c| c.rollout().status()).collect();
                let body = serde_json::to_string_pretty(&statuses).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
                (StatusCode::OK, "application/json", body)
            }
            (&Method::POST, p) if p.starts_with("/plugins/") => {
                if let Err(reply) = self.authorize(req) {
                    return reply;
                }
                let Some((name, action)) = p["/plugins/".len()..].split_once('/') else {
                    return (StatusCode::NOT_FOUND, TEXT, "POST /plugins/<name>/promote, /abandon or /record\n".into());
                };
                let found = self.plugins.borrow().iter().find(|c| c.rollout().name() == name).cloned();
                let Some(controller) = found else {
                    return (StatusCode::NOT_FOUND, TEXT, format!("no plugin {name}\n"));
                };
                let rollout = controller.rollout();
                let result = match action {
                    "promote" => rollout.promote(),
                    "abandon" => rollout.abandon(),
                    "record" => return record(&controller, req.uri().query().unwrap_or("")).await,
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

    /// Ready once the host has started; a plugin whose caches have not synced is listed (it
    /// does not reconcile) without making the host unready, since the others run.
    fn readiness(&self) -> Reply {
        const TEXT: &str = "text/plain";
        if !*self.ready.borrow() {
            return (
                StatusCode::SERVICE_UNAVAILABLE,
                TEXT,
                "[-]started failed: caches not synced yet\nreadyz check failed\n".into(),
            );
        }
        let mut body = String::from("[+]started ok\n");
        // A replica in another shape than its group's is listed without making the host
        // unready: a rolling change of the shape replaces the group's pods with ones that wait,
        // and would never finish if those waiting pods were not ready.
        match &*self.standing.borrow() {
            Agreement::Unknown => {}
            Agreement::Agrees(shape) => body.push_str(&format!("[+]group ok: {shape}\n")),
            waiting => {
                let why = waiting.disagreement().unwrap_or_default();
                body.push_str(&format!("[-]group not taking part (excluded: the host waits): {why}\n"));
            }
        }
        for c in self.plugins.borrow().iter() {
            match c.cache_status() {
                Ok(()) => body.push_str(&format!("[+]plugin/{} ok\n", c.rollout().name())),
                Err(why) => body.push_str(&format!(
                    "[-]plugin/{} not synced, not reconciling (excluded: the other plugins run): {why}\n",
                    c.rollout().name()
                )),
            }
        }
        body.push_str("readyz check passed\n");
        (StatusCode::OK, TEXT, body)
    }

    /// A change needs the admin token, from a client that is not a browser acting for a page.
    fn authorize(&self, req: &Request<hyper::body::Incoming>) -> Result<(), Reply> {
        const TEXT: &str = "text/plain";
        if req.headers().contains_key(hyper::header::ORIGIN) {
            return Err((StatusCode::FORBIDDEN, TEXT, "cross-origin requests may not change plugins\n".into()));
        }
        let Some(token) = &self.token else {
            return Err((
                StatusCode::FORBIDDEN,
                TEXT,
                "plugin changes are off: the host has no admin token (--admin-token-file)\n".into(),
            ));
        };
        let presented = req
            .headers()
            .get(hyper::header::AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "));
        let matches = presented.is_some_and(|p| {
            // Constant time in the token's content.
            p.len() == token.len() && p.bytes().zip(token.bytes()).fold(0u8, |acc, (a, b)| acc | (a ^ b)) == 0
        });
        if !matches {
            return Err((StatusCode::UNAUTHORIZED, TEXT, "a valid admin bearer token is required\n".into()));
        }
        Ok(())
    }
}

/// Records the next reconcile of the query's `key` (see the module doc).
async fn record(controller: &PluginController<KubeApi>, query: &str) -> Reply {
    const TEXT: &str = "text/plain";
    let param =
        |name: &str| form_urlencoded::parse(query.as_bytes()).find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
    let Some(key) = param("key") else {
        return (StatusCode::BAD_REQUEST, TEXT, "record: ?key=<namespace>/<name> is required\n".into());
    };
    let timeout = match param("timeout").map(|t| t.parse::<u64>()) {
        None => RECORD_TIMEOUT,
        Some(Ok(s)) if s > 0 && Duration::from_secs(s) <= MAX_RECORD_TIMEOUT => Duration::from_secs(s),
        Some(_) => {
            let why =
                format!("record: timeout is a whole number of seconds from 1 to {}\n", MAX_RECORD_TIMEOUT.as_secs());
            return (StatusCode::BAD_REQUEST, TEXT, why);
        }
    };
    let waiting = match controller.record(&key) {
        Ok(w) => w,
        Err(why) => return (StatusCode::NOT_FOUND, TEXT, format!("record: {why}\n")),
    };
    match tokio::time::timeout(timeout, waiting).await {
        Ok(Ok(recording)) => {
            let body =
                serde_json::to_string_pretty(&recording.to_json()).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
            (StatusCode::OK, "application/json", body + "\n")
        }
        Ok(Err(_)) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            TEXT,
            format!("record: the reconcile of {key} ended before it returned\n"),
        ),
        Err(_) => (
            StatusCode::GATEWAY_TIMEOUT,
            TEXT,
            format!(
                "record: {key} was not reconciled within {}s: this host reconciles it only while it leads (or holds \
                 the key's shard), and a key in backoff waits for its retry\n",
                timeout.as_secs()
            ),
        ),
    }
}

/// Listens on `addr` and serves until the runtime stops; returns the bound address.
pub async fn serve_admin(addr: SocketAddr, admin: Admin) -> anyhow::Result<SocketAddr> {
    let listener = tokio::net::TcpListener::bind(addr).await?;
    let bound = listener.local_addr()?;
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    tokio::spawn(async move {
        let mut backoff = Duration::from_millis(5);
        loop {
            let Ok(slot) = slots.clone().acquire_owned().await else { return };
            let stream = match listener.accept().await {
                Ok((stream, _)) => stream,
                Err(e) => {
                    // Out of file descriptors, mostly: retrying at once would spin.
                    tracing::warn!("admin endpoint: accept failed, retrying in {backoff:?}: {e}");
                    tokio::time::sleep(backoff).await;
                    backoff = (backoff * 2).min(Duration::from_secs(1));
                    continue;
                }
            };
            backoff = Duration::from_millis(5);
            let admin = admin.clone();
            tokio::spawn(async move {
                let _slot = slot;
                let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                    let admin = admin.clone();
                    async move {
                        let (code, content_type, body) = admin.handle(&req).await;
                        let mut r = Response::new(Full::new(Bytes::from(body)));
                        *r.status_mut() = code;
                        r.headers_mut()
                            .insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static(content_type));
                        Ok::<_, Infallible>(r)
                    }
                });
                let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
                builder.http1().timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
                let conn = builder.serve_connection(TokioIo::new(stream), service);
                let _ = tokio::time::timeout(CONNECTION_LIFETIME, conn).await;
            });
        }
    });
    Ok(bound)
}

/// One request to a running host's endpoint, with the admin token if given: (status, body).
pub async fn admin_request(
    addr: SocketAddr,
    method: Method,
    path: &str,
    token: Option<&str>,
) -> anyhow::Result<(u16, String)> {
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| anyhow::anyhow!("cannot reach a wasmcm host at {addr}: {e}"))?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(conn);
    let mut req = Request::builder().method(method).uri(path).header(hyper::header::HOST, addr.to_string());
    if let Some(token) = token {
        req = req.header(hyper::header::AUTHORIZATION, format!("Bearer {token}"));
    }
    let resp = sender.send_request(req.body(http_body_util::Empty::<Bytes>::new())?).await?;
    let status = resp.status().as_u16();
    let body = resp.into_body().collect().await?.to_bytes();
    Ok((status, String::from_utf8_lossy(&body).into_owned()))
}

/// The admin token in `path`, created (random, mode 0600) when there is none yet: the host and
/// `wasmcm plugins` on the same machine or pod share it through the file.
pub fn admin_token(path: &std::path::Path, create: bool) -> anyhow::Result<String> {
    use std::io::Write;
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::read_to_string(path) {
        Ok(t) if !t.trim().is_empty() => return Ok(t.trim().to_string()),
        Ok(_) => anyhow::bail!("{} is empty", path.display()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => {}
        Err(e) => anyhow::bail!("cannot read the admin token {}: {e}", path.display()),
    }
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw).map_err(|e| anyhow::anyhow!("no randomness for a token: {e}"))?;
    let token = hex::encode(raw);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .map_err(|e| anyhow::anyhow!("cannot create the admin token {}: {e}", path.display()))?;
    f.write_all(token.as_bytes())?;
    Ok(token)
}
