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
//! Everything under `/plugins` ([`needs_token`]) needs `Authorization: Bearer <token>` with the
//! host's admin token (where it came from is the caller's business: a file only its user
//! reads, a Secret), never the peer's address: a sidecar or a hostNetwork pod reaches loopback
//! too. `GET /plugins` included: a shadow version's disagreement and a failed version's reason
//! quote what the plugin wrote, and a recording holds what it read, so reading them is as
//! guarded as a change. `/metrics`, `/healthz` and `/readyz` need nothing: the probes and
//! scrapers have no token. A request a browser sends on a page's behalf (it carries `Origin`)
//! is refused, so a port-forward cannot be driven by CSRF.
//!
//! [`admin_token`] reads the token file, refusing one that is not private (readable by group or
//! others, owned by another user) or shorter than 32 bytes, as ssh refuses a private key, and
//! creates a missing one (0600, 32 random bytes in hex); [`admin_request`] never sends the
//! token beyond loopback, since the endpoint is plain HTTP.
//!
//! The probes answer whatever the other connections do: at most [`MAX_CONNECTIONS`] are served
//! at once, and a new one beyond takes the place of the one idle longest (no request in flight:
//! an idle keep-alive, an HTTP/2 connection with no stream, a request whose headers are still
//! arriving), which is closed at once; only a connection with a request in flight keeps its
//! place (without the token, none stays in flight: every answer but a recording's is
//! immediate). A connection idle for [`IDLE_TIMEOUT`] is closed gracefully, any at
//! [`CONNECTION_LIFETIME`]; request headers must arrive within [`HEADER_TIMEOUT`]; HTTP/2 gets
//! keep-alive pings and a cap on streams. Accept errors (out of file descriptors) back off
//! instead of spinning.
//!
//! It reads what the controllers, rollouts and metrics report and changes nothing but shadow
//! periods (a recording only queues the key).

use std::collections::BTreeMap;
use std::convert::Infallible;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use tokio::sync::{Notify, watch};

use crate::client::reach::Reach;
use crate::lifecycle::failures::LoadFailures;
use crate::metrics::Metrics;
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
    /// Whether the API server answers ([`crate::probe_api_server`]).
    pub cluster: watch::Receiver<Reach>,
    /// The plugins that failed to load.
    pub failures: Arc<LoadFailures>,
}

/// Connections served at once; a new one beyond takes the place of the one idle longest, and
/// waits in the listen backlog only while every one has a request in flight.
pub(crate) const MAX_CONNECTIONS: usize = 512;
/// A client must have sent a request's headers within this.
pub(crate) const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// A connection with no request in flight for this long is closed (a scrape or a probe takes
/// milliseconds; Prometheus reconnects at its next scrape).
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(5);
/// No connection lives longer (a recording waits at most [`MAX_RECORD_TIMEOUT`]).
pub(crate) const CONNECTION_LIFETIME: Duration = Duration::from_secs(60);
/// A connection asked to close gets this long, once idle, to say goodbye (an HTTP/2 GOAWAY,
/// the rest of an answer) before it is dropped.
const CLOSE_GRACE: Duration = Duration::from_secs(2);
/// HTTP/2: a ping this often while a connection is open, which must be answered within
/// [`H2_PING_TIMEOUT`]; streams at once; bytes of one request's headers.
const H2_PING_INTERVAL: Duration = Duration::from_secs(10);
const H2_PING_TIMEOUT: Duration = Duration::from_secs(5);
const H2_MAX_STREAMS: u32 = 16;
const H2_MAX_HEADER_LIST_SIZE: u32 = 16 << 10;
/// An admin token has at least this many bytes (the host makes 64 hex digits).
pub(crate) const MIN_TOKEN_BYTES: usize = 32;

type Reply = (StatusCode, &'static str, String);

/// How long a recording waits for its reconcile unless the request says otherwise, and at most.
const RECORD_TIMEOUT: Duration = Duration::from_secs(30);
pub(crate) const MAX_RECORD_TIMEOUT: Duration = Duration::from_secs(50);

/// Whether a request for `path` needs the admin token: everything under `/plugins` (see the
/// module doc). The CLI sends the token on exactly these.
pub fn needs_token(path: &str) -> bool {
    path == "/plugins" || path.starts_with("/plugins/") || path.starts_with("/plugins?")
}

impl Admin {
    async fn handle(&self, req: &Request<hyper::body::Incoming>) -> Reply {
        const TEXT: &str = "text/plain";
        let (method, path) = (req.method(), req.uri().path());
        if needs_token(path)
            && let Err(reply) = self.authorize(req)
        {
            return reply;
        }
        match (method, path) {
            (&Method::GET, "/metrics") => {
                (StatusCode::OK, "text/plain; version=0.0.4; charset=utf-8", self.metrics.encode())
            }
            (&Method::GET, "/healthz" | "/livez") => (StatusCode::OK, TEXT, "ok".into()),
            (&Method::GET, "/readyz") => self.readiness(),
            (&Method::GET, "/plugins") => {
                let statuses = self.plugins.borrow().iter().map(|c| serde_json::json!(c.rollout().status())).collect();
                let body = serde_json::to_string_pretty(&self.with_failures(statuses))
                    .unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"));
                (StatusCode::OK, "application/json", body)
            }
            (&Method::POST, p) if p.starts_with("/plugins/") => {
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

    /// The running plugins' statuses, then each plugin that failed to load as one of state
    /// `failed` (what `wasmcm plugins list` prints), with the reason, by name.
    fn with_failures(&self, mut statuses: Vec<serde_json::Value>) -> Vec<serde_json::Value> {
        for f in self.failures.list() {
            let reason = format!("{}: {}", f.reason.as_str(), f.message);
            statuses.push(serde_json::json!({
                "name": f.plugin,
                "versions": [{"version": "", "digest": "", "state": "failed", "reason": reason}],
                "loadFailure": {"reason": f.reason.as_str(), "message": f.message},
            }));
        }
        statuses
    }

    /// Ready once the host has started, while the API server answers; a plugin whose caches
    /// have not synced is listed (it does not reconcile) without making the host unready, since
    /// the others run.
    fn readiness(&self) -> Reply {
        const TEXT: &str = "text/plain";
        let unreachable = match &*self.cluster.borrow() {
            Reach::Unreachable(why) => Some(format!("[-]apiserver failed: {why}\n")),
            _ => None,
        };
        if !*self.ready.borrow() || unreachable.is_some() {
            let started =
                if *self.ready.borrow() { "[+]started ok\n" } else { "[-]started failed: caches not synced yet\n" };
            let body = format!("{started}{}readyz check failed\n", unreachable.unwrap_or_default());
            return (StatusCode::SERVICE_UNAVAILABLE, TEXT, body);
        }
        let mut body = String::from("[+]started ok\n");
        if *self.cluster.borrow() == Reach::Reached {
            body.push_str("[+]apiserver ok\n");
        }
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
        for f in self.failures.list() {
            body.push_str(&format!(
                "[-]plugin/{} failed to load (excluded: the other plugins run): {}: {}\n",
                f.plugin,
                f.reason.as_str(),
                f.message
            ));
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
                "the plugin admin API is off: the host has no admin token (--admin-token-file)\n".into(),
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

/// The connections being served, so that a new one can take the place of the one idle longest.
#[derive(Default)]
struct Connections {
    open: std::sync::Mutex<BTreeMap<u64, Arc<Activity>>>,
    next: AtomicU64,
    /// A connection ended: one waiting for a place may take it.
    freed: Notify,
}

impl Connections {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Arc<Activity>>> {
        self.open.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// A place for a new connection: a free one, else that of the connection idle longest
    /// (told to close at once); `None` when every connection has a request in flight.
    fn admit(&self) -> Option<(u64, Arc<Activity>)> {
        let mut open = self.lock();
        if open.len() >= MAX_CONNECTIONS {
            let idlest = open.iter().filter_map(|(id, a)| Some((a.idle_since()?, *id))).min()?;
            if let Some(evicted) = open.remove(&idlest.1) {
                evicted.evicted.notify_one();
            }
        }
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        let activity = Arc::new(Activity::new());
        open.insert(id, activity.clone());
        Some((id, activity))
    }

    fn remove(&self, id: u64) {
        if self.lock().remove(&id).is_some() {
            self.freed.notify_one();
        }
    }
}

/// What one connection is doing: requests in flight, or idle since when.
struct Activity {
    /// (requests in flight, when the last one ended or the connection opened).
    state: std::sync::Mutex<(usize, tokio::time::Instant)>,
    /// A request began or ended.
    changed: Notify,
    /// Its place was given to a new connection: close now.
    evicted: Notify,
}

impl Activity {
    fn new() -> Self {
        Activity {
            state: std::sync::Mutex::new((0, tokio::time::Instant::now())),
            changed: Notify::new(),
            evicted: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, (usize, tokio::time::Instant)> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// When it became idle; `None` while a request is in flight.
    fn idle_since(&self) -> Option<tokio::time::Instant> {
        let (busy, since) = *self.lock();
        (busy == 0).then_some(since)
    }

    fn begin(self: &Arc<Self>) -> InFlight {
        self.lock().0 += 1;
        self.changed.notify_one();
        InFlight(self.clone())
    }
}

/// A request being handled; its connection is idle again when the last is dropped.
struct InFlight(Arc<Activity>);

impl Drop for InFlight {
    fn drop(&mut self) {
        {
            let mut state = self.0.lock();
            state.0 = state.0.saturating_sub(1);
            state.1 = tokio::time::Instant::now();
        }
        self.0.changed.notify_one();
    }
}

/// Serves on `listener` until the runtime stops; returns its address.
pub async fn serve_admin(listener: tokio::net::TcpListener, admin: Admin) -> anyhow::Result<SocketAddr> {
    let bound = listener.local_addr()?;
    let connections = Arc::new(Connections::default());
    tokio::spawn(async move {
        let mut backoff = Duration::from_millis(5);
        loop {
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
            let (id, activity) = loop {
                // Created before looking, so that a place freed meanwhile is not missed.
                let freed = connections.freed.notified();
                if let Some(admitted) = connections.admit() {
                    break admitted;
                }
                freed.await;
            };
            let (admin, connections) = (admin.clone(), connections.clone());
            tokio::spawn(async move {
                serve_connection(stream, admin, &activity).await;
                connections.remove(id);
            });
        }
    });
    Ok(bound)
}

/// Serves one connection until it ends, is evicted, has been idle for [`IDLE_TIMEOUT`] or has
/// lived [`CONNECTION_LIFETIME`] (then closed gracefully: what is in flight finishes, within
/// [`CLOSE_GRACE`] once idle).
async fn serve_connection(stream: tokio::net::TcpStream, admin: Admin, activity: &Arc<Activity>) {
    let requests = activity.clone();
    let service = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
        let admin = admin.clone();
        let in_flight = requests.begin();
        async move {
            let _in_flight = in_flight;
            let (code, content_type, body) = admin.handle(&req).await;
            let mut r = Response::new(Full::new(Bytes::from(body)));
            *r.status_mut() = code;
            r.headers_mut().insert(hyper::header::CONTENT_TYPE, hyper::header::HeaderValue::from_static(content_type));
            Ok::<_, Infallible>(r)
        }
    });
    let mut builder = hyper_util::server::conn::auto::Builder::new(TokioExecutor::new());
    builder.http1().timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(H2_PING_INTERVAL)
        .keep_alive_timeout(H2_PING_TIMEOUT)
        .max_concurrent_streams(H2_MAX_STREAMS)
        .max_header_list_size(H2_MAX_HEADER_LIST_SIZE);
    let conn = builder.serve_connection(TokioIo::new(stream), service);
    tokio::pin!(conn);
    let opened = tokio::time::Instant::now();
    let hard_end = opened + CONNECTION_LIFETIME + CLOSE_GRACE;
    // When the graceful close was asked, if it was.
    let mut closing: Option<tokio::time::Instant> = None;
    loop {
        let idle_since = activity.idle_since();
        let next_check = match (closing, idle_since) {
            (None, Some(idle)) => (idle + IDLE_TIMEOUT).min(opened + CONNECTION_LIFETIME),
            (None, None) => opened + CONNECTION_LIFETIME,
            (Some(asked), Some(idle)) => (asked.max(idle) + CLOSE_GRACE).min(hard_end),
            (Some(_), None) => hard_end,
        };
        tokio::select! {
            _ = conn.as_mut() => return,
            _ = activity.evicted.notified() => return,
            _ = tokio::time::sleep_until(hard_end) => return,
            _ = activity.changed.notified() => {}
            _ = tokio::time::sleep_until(next_check) => {
                let now = tokio::time::Instant::now();
                match (closing, activity.idle_since()) {
                    (None, idle) if idle.is_some_and(|i| i + IDLE_TIMEOUT <= now)
                        || opened + CONNECTION_LIFETIME <= now =>
                    {
                        conn.as_mut().graceful_shutdown();
                        closing = Some(now);
                    }
                    (Some(asked), Some(idle)) if asked.max(idle) + CLOSE_GRACE <= now => return,
                    _ => {}
                }
            }
        }
    }
}

/// Refuses to send the admin token to `addr` unless it is a loopback address: the endpoint is
/// plain HTTP, so the token would cross the network in clear text (and anyone on the path, or
/// whoever answers at that address, would hold it).
pub fn check_token_destination(addr: SocketAddr) -> anyhow::Result<()> {
    if addr.ip().to_canonical().is_loopback() {
        return Ok(());
    }
    anyhow::bail!(
        "refusing to send the admin token to {addr}: the admin endpoint is plain HTTP, so it would cross the network \
         in clear text. Reach a pod's endpoint on loopback: `kubectl -n <namespace> port-forward pod/<pod> 8080` and \
         --address 127.0.0.1:8080 (with that pod's token in --admin-token-file), or run the command in the pod: \
         `kubectl -n <namespace> exec pod/<pod> -- /wasmcm plugins ...`"
    )
}

/// One request to a running host's endpoint, with the admin token if given (only to a loopback
/// address: [`check_token_destination`]): (status, body).
pub async fn admin_request(
    addr: SocketAddr,
    method: Method,
    path: &str,
    token: Option<&str>,
) -> anyhow::Result<(u16, String)> {
    if token.is_some() {
        check_token_destination(addr)?;
    }
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

/// The admin token in `path`, created when there is none yet and `create` says so: the host
/// and `wasmcm plugins` on the same machine or pod share it through the file. An existing file
/// is refused, with the rule it breaks, unless it is a regular file owned by this user that
/// neither group nor others may read or write (as ssh requires of a private key), holding at
/// least [`MIN_TOKEN_BYTES`] bytes of printable ASCII. A new one is created with its final mode
/// (0600, `O_EXCL`, never chmod'ed afterwards) holding 32 random bytes in hex, in a directory
/// created 0700 if missing.
pub fn admin_token(path: &Path, create: bool) -> anyhow::Result<String> {
    use std::io::{Read, Write};
    use std::os::unix::fs::{DirBuilderExt, MetadataExt, OpenOptionsExt};
    let name = path.display();
    let open = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK).open(path);
    let file = match open {
        Ok(f) => Some(f),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && create => None,
        Err(e) => anyhow::bail!("cannot read the admin token {name}: {e}"),
    };
    if let Some(mut file) = file {
        // Checked on the file opened, so a swap between the check and the read changes nothing.
        let meta = file.metadata().map_err(|e| anyhow::anyhow!("cannot read the admin token {name}: {e}"))?;
        if !meta.is_file() {
            anyhow::bail!("the admin token {name} is not a regular file");
        }
        let me = crate::engine::euid();
        if meta.uid() != me {
            anyhow::bail!(
                "the admin token {name} is owned by uid {}, not by this user (uid {me}): a token file must be its \
                 user's own",
                meta.uid()
            );
        }
        if meta.mode() & 0o077 != 0 {
            anyhow::bail!(
                "permissions {:04o} for the admin token {name} are too open: a token file must not be accessible by \
                 group or others (chmod 600 {name})",
                meta.mode() & 0o7777
            );
        }
        let mut text = String::new();
        Read::by_ref(&mut file)
            .take(4096)
            .read_to_string(&mut text)
            .map_err(|e| anyhow::anyhow!("cannot read the admin token {name}: {e}"))?;
        let token = text.trim();
        if token.len() < MIN_TOKEN_BYTES {
            anyhow::bail!(
                "the admin token {name} has {} bytes; a token has at least {MIN_TOKEN_BYTES} (remove the file and the \
                 host creates one)",
                token.len()
            );
        }
        if !token.bytes().all(|b| b.is_ascii_graphic()) {
            anyhow::bail!("the admin token {name} may hold only printable ASCII (it is sent as an HTTP header)");
        }
        return Ok(token.to_string());
    }
    let mut raw = [0u8; 32];
    getrandom::fill(&mut raw).map_err(|e| anyhow::anyhow!("no randomness for a token: {e}"))?;
    let token = hex::encode(raw);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)
            .map_err(|e| anyhow::anyhow!("cannot create the admin token's directory {}: {e}", dir.display()))?;
    }
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(|e| anyhow::anyhow!("cannot create the admin token {name}: {e}"))?;
    f.write_all(token.as_bytes()).map_err(|e| anyhow::anyhow!("cannot write the admin token {name}: {e}"))?;
    Ok(token)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn mode(path: &Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o7777
    }

    #[test]
    fn a_missing_token_is_created_private_and_read_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("config/wasmcm/admin-token");
        let token = admin_token(&path, true).unwrap();
        assert_eq!(token.len(), 64, "32 random bytes in hex");
        assert!(token.bytes().all(|b| b.is_ascii_hexdigit()));
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        assert_eq!(admin_token(&path, false).unwrap(), token);
        let err = admin_token(&dir.path().join("nope"), false).unwrap_err().to_string();
        assert!(err.starts_with("cannot read the admin token"), "{err}");
    }

    #[test]
    fn a_token_file_is_refused_unless_private_owned_and_long_enough() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("admin-token");
        let token = admin_token(&path, true).unwrap();
        let name = path.display();
        for open in [0o640, 0o604, 0o620, 0o700 | 0o007] {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(open)).unwrap();
            let err = admin_token(&path, true).unwrap_err().to_string();
            assert_eq!(
                err,
                format!(
                    "permissions {open:04o} for the admin token {name} are too open: a token file must not be \
                     accessible by group or others (chmod 600 {name})"
                )
            );
        }
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o400)).unwrap();
        assert_eq!(admin_token(&path, false).unwrap(), token, "read-only by its owner is private");

        let short = dir.path().join("short");
        std::fs::write(&short, "x\n").unwrap();
        std::fs::set_permissions(&short, std::fs::Permissions::from_mode(0o600)).unwrap();
        let err = admin_token(&short, true).unwrap_err().to_string();
        assert!(err.contains("has 1 bytes; a token has at least 32"), "{err}");
        std::fs::write(&short, format!("{}\u{1b}", "a".repeat(40))).unwrap();
        let err = admin_token(&short, true).unwrap_err().to_string();
        assert!(err.contains("only printable ASCII"), "{err}");

        // A link to a token is not followed (whoever may write the directory could point it
        // anywhere).
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&path, &link).unwrap();
        assert!(admin_token(&link, false).unwrap_err().to_string().starts_with("cannot read the admin token"));

        if crate::engine::euid() == 0 {
            // Root can give the file away and so see the owner refused.
            let theirs = dir.path().join("theirs");
            std::fs::copy(&path, &theirs).unwrap();
            std::os::unix::fs::chown(&theirs, Some(65534), None).unwrap();
            let err = admin_token(&theirs, false).unwrap_err().to_string();
            assert_eq!(
                err,
                format!(
                    "the admin token {} is owned by uid 65534, not by this user (uid 0): a token file must be its \
                     user's own",
                    theirs.display()
                )
            );
        }
    }

    #[test]
    fn the_token_is_sent_to_loopback_only_and_only_for_plugins() {
        for ok in ["127.0.0.1:8080", "127.3.2.1:1", "[::1]:8080", "[::ffff:127.0.0.1]:8080"] {
            assert!(check_token_destination(ok.parse().unwrap()).is_ok(), "{ok}");
        }
        for refused in ["10.0.0.7:8080", "0.0.0.0:8080", "[::]:8080", "192.168.1.1:80", "[::ffff:10.0.0.1]:8080"] {
            let err = check_token_destination(refused.parse().unwrap()).unwrap_err().to_string();
            assert!(err.starts_with(&format!("refusing to send the admin token to {refused}")), "{err}");
        }
        assert!(needs_token("/plugins") && needs_token("/plugins/x/record?key=a/b"));
        assert!(!needs_token("/healthz") && !needs_token("/readyz") && !needs_token("/metrics"));
        assert!(!needs_token("/pluginsx"));
    }
}
