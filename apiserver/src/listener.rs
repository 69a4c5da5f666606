//! The API server's listener: accepting connections, the TLS handshake, HTTP/1 or HTTP/2 on
//! each, and the limits that keep clients that do nothing from holding the server. What a
//! request gets is `server`'s business; this module only decides which connections live.
//!
//! - **A connection cap** ([`ConnectionLimits::max`](crate::ConnectionLimits::max), 2048): past it the server accepts no more
//!   until one closes, and new clients wait in the kernel's backlog (or are refused once that
//!   is full). The test suites hold a few hundred at most (kube-rs opens one per watch over
//!   HTTP/1.1: a host with its plugins' informers holds tens; kubectl multiplexes over one
//!   HTTP/2 connection), so 2048 leaves room for many hosts while bounding what connections
//!   cost (a task, TLS and HTTP buffers: tens of KiB each).
//! - **A TLS-handshake timeout** (10 s): a handshake is two round trips and a millisecond of
//!   CPU; Go's HTTP client gives up on one after 10 s, as this server does now on a client
//!   that opens TCP and sends nothing.
//! - **A first-request timeout** (32 s, kube-apiserver's `ReadHeaderTimeout`): a connection
//!   whose first request has not been read whole (headers, and for HTTP/2 its preface) by then
//!   is closed.
//! - **An idle timeout** (120 s): a connection with no request in progress for that long is
//!   closed (HTTP/2 with a GOAWAY). A request is in progress until its answer is sent, so a
//!   watch, however long, keeps its connection. kube-apiserver's is 90 s, the same as Go's
//!   transport and hyper's pool (kube-rs): a client that reuses a connection at 90 s meets the
//!   close. Go resends a request that was never written; hyper answers `IncompleteMessage`
//!   (seen in the shards test, a PATCH after 90 s of waiting). Longer than the clients', so the
//!   client closes first.
//!
//! A request's body must arrive within [`ConnectionLimits::body`](crate::ConnectionLimits::body) (60 s, kube-apiserver's
//! `--request-timeout`), see `endpoints::request::read_body`.

use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::BodyExt as _;
use hyper::body::{Frame, SizeHint};
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::State;
use crate::auth;
use crate::endpoints::{self, Body};
use crate::limits::ConnectionLimits;

/// How long a connection closed for idleness may take to finish what it was answering.
const CLOSE_GRACE: Duration = Duration::from_secs(10);

/// Accepts connections on `listener` (TLS when `acceptor` is given) and serves each, within
/// `state.limits`. Runs until dropped; dropping it closes every connection.
pub(crate) async fn serve(state: Arc<State>, listener: TcpListener, acceptor: Option<tokio_rustls::TlsAcceptor>) {
    let limits = state.limits;
    let slots = Arc::new(Semaphore::new(limits.max.max(1)));
    let mut connections = JoinSet::new();
    loop {
        // A slot first: at the cap, nothing more is accepted and clients wait in the backlog.
        let Ok(slot) = slots.clone().acquire_owned().await else { return };
        let (stream, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("accepting a connection: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        connections.spawn(connection(state.clone(), stream, peer, acceptor.clone(), slot));
        // Reap finished connections so the set does not grow without bound.
        while connections.try_join_next().is_some() {}
    }
}

async fn connection(
    state: Arc<State>,
    stream: TcpStream,
    peer: SocketAddr,
    acceptor: Option<tokio_rustls::TlsAcceptor>,
    _slot: OwnedSemaphorePermit,
) {
    let limits = state.limits;
    let result = match acceptor {
        Some(acceptor) => match tokio::time::timeout(limits.tls_handshake, acceptor.accept(stream)).await {
            Ok(Ok(tls)) => {
                let certified = tls.get_ref().1.peer_certificates().and_then(|chain| chain.first());
                let certified = certified.and_then(|leaf| auth::certificate_identity(leaf)).map(auth::Certified);
                http(state, TokioIo::new(tls), limits, certified).await
            }
            Ok(Err(e)) => {
                tracing::debug!(%peer, "TLS handshake failed: {e}");
                return;
            }
            Err(_) => {
                tracing::debug!(%peer, "TLS handshake not done after {:?}: closed", limits.tls_handshake);
                return;
            }
        },
        None => http(state, TokioIo::new(stream), limits, None).await,
    };
    if let Err(e) = result {
        tracing::debug!(%peer, "connection ended: {e}");
    }
}

/// Serves HTTP/1 or HTTP/2 on `io` until the client closes, or it has been idle too long;
/// `certified` is who the connection's client certificate names.
async fn http<I>(
    state: Arc<State>,
    io: I,
    limits: ConnectionLimits,
    certified: Option<auth::Certified>,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
{
    let activity = Arc::new(Activity::new(limits));
    let service = {
        let activity = activity.clone();
        hyper::service::service_fn(move |mut req: hyper::Request<hyper::body::Incoming>| {
            let in_progress = activity.begin();
            let state = state.clone();
            if let Some(certified) = &certified {
                req.extensions_mut().insert(certified.clone());
            }
            async move {
                let response = endpoints::handle(state, req).await?;
                // In progress until the answer's body is sent (or dropped): a watch's, for as
                // long as the watch runs.
                Ok::<_, std::convert::Infallible>(
                    response.map(|body| Tracked { body, _in_progress: in_progress }.boxed()),
                )
            }
        })
    };
    let builder = auto::Builder::new(TokioExecutor::new());
    let conn = builder.serve_connection(io, service);
    tokio::pin!(conn);
    tokio::select! {
        result = conn.as_mut() => return result,
        () = activity.idle() => {}
    }
    conn.as_mut().graceful_shutdown();
    match tokio::time::timeout(CLOSE_GRACE, conn).await {
        Ok(result) => result,
        Err(_) => Ok(()),
    }
}

/// Whether a connection has requests in progress, and since when it has had none.
struct Activity {
    limits: ConnectionLimits,
    state: Mutex<Idle>,
    /// Told when the last request in progress ends.
    ended: Notify,
}

struct Idle {
    in_progress: usize,
    since: Instant,
    /// Whether a request has been read yet (the first-request timeout, else the idle one).
    served: bool,
}

impl Activity {
    fn new(limits: ConnectionLimits) -> Activity {
        Activity {
            limits,
            state: Mutex::new(Idle { in_progress: 0, since: Instant::now(), served: false }),
            ended: Notify::new(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Idle> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn begin(self: &Arc<Self>) -> InProgress {
        let mut idle = self.lock();
        idle.in_progress += 1;
        idle.served = true;
        InProgress(self.clone())
    }

    /// When the connection has had no request in progress for its limit.
    async fn idle(&self) {
        loop {
            let ended = self.ended.notified();
            let deadline = {
                let idle = self.lock();
                (idle.in_progress == 0)
                    .then(|| idle.since + if idle.served { self.limits.idle } else { self.limits.first_request })
            };
            match deadline {
                Some(deadline) if deadline <= Instant::now() => return,
                Some(deadline) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(deadline) => {}
                        () = ended => {}
                    }
                }
                None => ended.await,
            }
        }
    }
}

/// A request in progress on its connection, until dropped.
struct InProgress(Arc<Activity>);

impl Drop for InProgress {
    fn drop(&mut self) {
        let mut idle = self.0.lock();
        idle.in_progress -= 1;
        if idle.in_progress == 0 {
            idle.since = Instant::now();
            drop(idle);
            self.0.ended.notify_one();
        }
    }
}

/// An answer's body, holding its request in progress until it is sent or dropped.
struct Tracked {
    body: Body,
    _in_progress: InProgress,
}

impl hyper::body::Body for Tracked {
    type Data = Bytes;
    type Error = std::convert::Infallible;

    fn poll_frame(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Result<Frame<Bytes>, Self::Error>>> {
        Pin::new(&mut self.body).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.body.size_hint()
    }
}
