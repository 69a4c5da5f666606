//! The host's API clients, each built for one job from the one `kube::Config` it was given:
//!
//! - **reads** (informers, discovery, the host's own events): kube's retries of 429/503/504,
//!   and a read timeout longer than a watch may stay quiet, so a list the server never answers
//!   fails and is retried instead of holding an informer forever;
//! - **writes**, one per plugin: no hidden retries (the work queue retries a failed key with
//!   its backoff, where the fence sees every attempt), a read timeout, the plugin's identity
//!   when its manifest names one, and the leader's [`Fence`] checked three times, each nearer
//!   the wire: when the request is handed to the client (after the client's rate limit and
//!   concurrency cap); when the connection takes the request's body (the last check that knows
//!   which shard entitles the write: on a sharded host, the shard of the key whose reconcile
//!   sends it, chosen as the request is handed over, `Fence::for_key`); and beneath TLS, immediately
//!   before each write to the socket. In between a request may wait for a connection, or the
//!   whole process may be frozen (SIGSTOP) for longer than the lease; a refusal ends the
//!   request before anything of it is flushed, so nothing of it leaves the process. What no
//!   client can close is a freeze between the last check and the system call it guards (a few
//!   instructions); from the socket on, the kernel delivers while the process is stopped;
//! - **the Lease**: no retries, and a timeout of half the renew deadline, as KCM's
//!   leader-election client.
//!
//! Every client names this process and its job in its User-Agent (`wasmcm/0.1.0 (<identity>)
//! plugin/replicaset`), as KCM names each controller's, so an API server's audit log tells
//! which replica and which plugin sent a request.
//!
//! The write client is assembled from kube's own layers (base URI, auth, extra headers, TLS)
//! around a hyper client whose request body and socket are ours, because kube's `ClientBuilder`
//! fixes both and so offers no hook at write time.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use http::HeaderValue;
use tower::BoxError;

use crate::client::fence::Fence;

/// How long a write's answer may take. kube-apiserver's own request timeout is 60 s; a write
/// is answered in milliseconds, and a worker waiting longer holds its key.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a read may wait for the next bytes: past a watch's 290 s server timeout and kube's
/// 5 s margin, so only a request the server stopped answering hits it.
const READ_TIMEOUT: Duration = Duration::from_secs(300);

/// Builds the host's clients.
pub(crate) struct Clients {
    config: kube::Config,
    identity: String,
}

/// A write refused because this host does not hold the Lease that entitles it (the leader's,
/// or its shard's), or its renewal is overdue; it was never sent.
#[derive(Debug, thiserror::Error)]
#[error(
    "this host does not hold the lease for this write (the leader's or its shard's), or could not renew it in time: the write was not sent"
)]
pub(crate) struct Deposed;

impl Clients {
    pub(crate) fn new(config: kube::Config, identity: &str) -> Self {
        Clients { config, identity: identity.into() }
    }

    fn config(&self, job: &str, timeout: Duration, retries: bool) -> anyhow::Result<kube::Config> {
        let mut config = self.config.clone();
        let agent = format!("wasmcm/{} ({}) {job}", env!("CARGO_PKG_VERSION"), self.identity);
        config.headers.retain(|(name, _)| name != http::header::USER_AGENT);
        config.headers.push((http::header::USER_AGENT, HeaderValue::from_str(&agent)?));
        config.read_timeout = Some(timeout);
        // Otherwise the time a pooled connection sat idle counts against the next answer.
        config.reset_reader_on_write = true;
        config.default_retry = retries;
        Ok(config)
    }

    pub(crate) fn read(&self) -> anyhow::Result<kube::Client> {
        Ok(kube::Client::try_from(self.config("reads", READ_TIMEOUT, true)?)?)
    }

    /// The client of one plugin's writes, as `impersonate` (a user name) if given, fenced.
    pub(crate) fn write(
        &self,
        plugin: &str,
        impersonate: Option<String>,
        fence: Fence,
    ) -> anyhow::Result<kube::Client> {
        use kube::client::ConfigExt;
        let mut config = self.config(&format!("plugin/{plugin}"), WRITE_TIMEOUT, false)?;
        if impersonate.is_some() {
            config.auth_info.impersonate = impersonate;
        }
        let mut connector = hyper_timeout::TimeoutConnector::new(
            config.rustls_https_connector_with_connector(fenced_connector(fence.clone()))?,
        );
        connector.set_connect_timeout(config.connect_timeout);
        connector.set_read_timeout(config.read_timeout);
        connector.set_write_timeout(config.write_timeout);
        connector.set_reset_reader_on_write(true);
        let hyper = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build(connector);
        let body_fence = fence.clone();
        let service = tower::ServiceBuilder::new()
            .layer(FenceLayer(fence))
            .layer(config.base_uri_layer())
            .option_layer(config.auth_layer()?)
            .layer(config.extra_headers_layer()?)
            .map_request(move |request: http::Request<kube::client::Body>| {
                let fence = body_fence.for_path(request.uri().path());
                request.map(|body| FencedBody { body, fence, checked: false })
            })
            .map_err(BoxError::from)
            .service(hyper);
        Ok(kube::Client::new(service, config.default_namespace))
    }

    /// `timeout` bounds each call: one election attempt's (`LeaderConfig::attempt_timeout`).
    pub(crate) fn lease(&self, timeout: Duration) -> anyhow::Result<kube::Client> {
        Ok(kube::Client::try_from(self.config("leader-election", timeout, false)?)?)
    }
}

/// A request's body that the fence checks when the connection first asks for it: the last
/// moment before the request leaves.
struct FencedBody {
    body: kube::client::Body,
    fence: Fence,
    checked: bool,
}

impl http_body::Body for FencedBody {
    type Data = bytes::Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, BoxError>>> {
        if !self.checked {
            if !self.fence.holds() {
                return Poll::Ready(Some(Err(BoxError::from(Deposed))));
            }
            self.checked = true;
        }
        Pin::new(&mut self.body).poll_frame(cx).map_err(BoxError::from)
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> http_body::SizeHint {
        self.body.size_hint()
    }
}

/// Whether an error of a write client is the fence's refusal, however deep the client wrapped it.
pub(crate) fn deposed(error: &(dyn std::error::Error + 'static)) -> bool {
    let mut cause = Some(error);
    while let Some(e) = cause {
        // An `io::Error`'s `source` skips the error it carries, where the socket's refusal is.
        let carried = e.downcast_ref::<std::io::Error>().and_then(std::io::Error::get_ref);
        if e.is::<Deposed>() || carried.is_some_and(|c| c.is::<Deposed>()) {
            return true;
        }
        cause = e.source();
    }
    false
}

/// kube's TCP connector, its sockets fenced: what TLS and HTTP write to them goes out only
/// while `fence` holds (for a sharded host, while it holds any shard: the write's own shard was
/// checked at its body, microseconds before).
fn fenced_connector(
    fence: Fence,
) -> impl tower::Service<
    http::Uri,
    Response = FencedIo<hyper_util::rt::TokioIo<tokio::net::TcpStream>>,
    Error = impl Into<BoxError>,
    Future = impl Send + 'static,
> + Clone
+ Send
+ Sync
+ 'static {
    use tower::ServiceExt;
    let mut http = hyper_util::client::legacy::connect::HttpConnector::new();
    http.enforce_http(false);
    http.map_response(move |io| FencedIo { io, fence: fence.clone() })
}

/// A socket that refuses to write once the fence no longer holds: the check nearest the wire,
/// so that a process frozen after the checks above (body, request) sends nothing on waking.
struct FencedIo<T> {
    io: T,
    fence: Fence,
}

impl<T> FencedIo<T> {
    fn check(&self) -> std::io::Result<()> {
        if self.fence.holds() { Ok(()) } else { Err(std::io::Error::other(Deposed)) }
    }
}

impl<T: hyper::rt::Read + Unpin> hyper::rt::Read for FencedIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_read(cx, buf)
    }
}

impl<T: hyper::rt::Write + Unpin> hyper::rt::Write for FencedIo<T> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<std::io::Result<usize>> {
        self.check()?;
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        self.check()?;
        Pin::new(&mut self.io).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

impl<T: hyper_util::client::legacy::connect::Connection> hyper_util::client::legacy::connect::Connection
    for FencedIo<T>
{
    fn connected(&self) -> hyper_util::client::legacy::connect::Connected {
        self.io.connected()
    }
}

/// Refuses every request while the fence does not hold.
#[derive(Clone)]
struct FenceLayer(Fence);

impl<S> tower::Layer<S> for FenceLayer {
    type Service = Fenced<S>;

    fn layer(&self, inner: S) -> Fenced<S> {
        Fenced { inner, fence: self.0.clone() }
    }
}

#[derive(Clone)]
struct Fenced<S> {
    inner: S,
    fence: Fence,
}

impl<S, B> tower::Service<http::Request<B>> for Fenced<S>
where
    S: tower::Service<http::Request<B>>,
    S::Response: Send + 'static,
    S::Error: Into<BoxError>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        self.inner.poll_ready(cx).map_err(Into::into)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        // The last moment before the request leaves: nothing that waited (rate limit,
        // concurrency cap, a slow caller) can carry a write past the lease.
        if !self.fence.for_path(request.uri().path()).holds() {
            return Box::pin(std::future::ready(Err(BoxError::from(Deposed))));
        }
        let sent = self.inner.call(request);
        Box::pin(async move { sent.await.map_err(Into::into) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn first_frame(fence: Fence) -> Option<Result<http_body::Frame<bytes::Bytes>, BoxError>> {
        let mut body = FencedBody { body: kube::client::Body::from(b"{}".to_vec()), fence, checked: false };
        std::future::poll_fn(|cx| http_body::Body::poll_frame(Pin::new(&mut body), cx)).await
    }

    /// Checked when the connection asks for the body: a request issued while leading whose
    /// body is taken once the lease has lapsed (a frozen process, a slow connection) never
    /// leaves, and its error says why.
    #[tokio::test]
    async fn a_body_is_sent_only_while_the_fence_holds() {
        let refused = first_frame(Fence::closed()).await;
        assert!(matches!(&refused, Some(Err(e)) if deposed(e.as_ref())), "{refused:?}");
        let sent = first_frame(Fence::open()).await;
        assert!(matches!(&sent, Some(Ok(f)) if f.data_ref().is_some_and(|d| &d[..] == b"{}")), "{sent:?}");
    }

    /// A body that lets the lease lapse as it is taken, as a process frozen just after the
    /// body's check and woken after its lease expired: what the socket is then asked to send.
    struct Lapsing {
        fence: Fence,
        lapse: bool,
        data: Option<bytes::Bytes>,
    }

    impl http_body::Body for Lapsing {
        type Data = bytes::Bytes;
        type Error = BoxError;

        fn poll_frame(
            mut self: Pin<&mut Self>,
            _: &mut Context<'_>,
        ) -> Poll<Option<Result<http_body::Frame<bytes::Bytes>, BoxError>>> {
            if self.lapse {
                self.fence.close();
            }
            Poll::Ready(self.data.take().map(|d| Ok(http_body::Frame::data(d))))
        }

        fn size_hint(&self) -> http_body::SizeHint {
            http_body::SizeHint::with_exact(self.data.as_ref().map_or(0, |d| d.len() as u64))
        }
    }

    /// Sends a request through the fenced connector to a bare TCP server; the request's outcome
    /// and every byte the server received.
    async fn send(lapse: bool) -> (Result<u16, String>, Vec<u8>) {
        use tokio::io::AsyncReadExt;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let received = tokio::spawn(async move {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut bytes = Vec::new();
            let mut buf = [0u8; 4096];
            loop {
                match tokio::time::timeout(Duration::from_secs(2), socket.read(&mut buf)).await {
                    Ok(Ok(n)) if n > 0 => bytes.extend_from_slice(&buf[..n]),
                    _ => return bytes,
                }
            }
        });
        let fence = Fence::closed();
        fence.extend(tokio::time::Instant::now() + Duration::from_secs(60));
        let client = hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new())
            .build::<_, Lapsing>(fenced_connector(fence.clone()));
        let body = Lapsing { fence, lapse, data: Some(bytes::Bytes::from_static(b"{\"kind\":\"Pod\"}")) };
        let request = http::Request::post(format!("http://{address}/api/v1/namespaces/a/pods")).body(body).unwrap();
        let outcome = match tokio::time::timeout(Duration::from_secs(1), client.request(request)).await {
            Ok(Ok(response)) => Ok(response.status().as_u16()),
            Ok(Err(e)) if deposed(&e) => Err("deposed".into()),
            Ok(Err(e)) => Err(format!("{e:?}")),
            Err(_) => Err("no answer".into()),
        };
        drop(client);
        (outcome, received.await.unwrap())
    }

    /// The check nearest the wire: a lease that lapses after every check above the socket (the
    /// process frozen between the body's check and the send, woken in another's lease) lets
    /// nothing of the request out, and the error says why; a fence that holds sends it whole.
    #[tokio::test]
    async fn a_socket_sends_nothing_once_the_fence_lapses() {
        let (outcome, received) = send(true).await;
        assert_eq!(outcome, Err("deposed".into()));
        assert!(received.is_empty(), "the server received {:?}", String::from_utf8_lossy(&received));
        let (outcome, received) = send(false).await;
        assert_eq!(outcome, Err("no answer".into()), "the bare server never answers");
        let received = String::from_utf8_lossy(&received);
        assert!(
            received.starts_with("POST /api/v1/namespaces/a/pods") && received.ends_with("{\"kind\":\"Pod\"}"),
            "{received}"
        );
    }
}
