//! The embedded Kubernetes-compatible API server with a simulated scheduler and kubelet: the
//! default cluster a newcomer's run uses and the test bed. It speaks the real HTTP API (TLS,
//! bearer tokens, RBAC, discovery, CRUD, subresources, patch, watch), so kubectl and kube-rs
//! work against it unchanged. The kubeconfig's admin token may do anything; ServiceAccount
//! tokens (TokenRequest) are held to the stored Roles and bindings, so a controller can be run
//! with the least privilege it will have in a real cluster.
//!
//! It owns its own state and loops; it must not reach into the controller host (plugins,
//! queues): the host talks to it only over HTTP, exactly as to a real cluster.

pub mod api;
pub mod auth;
mod defaults;
mod discovery;
pub mod faults;
mod gc;
pub mod kubelet;
mod openapi;
mod patch;
mod protobuf;
pub(crate) mod quantity;
pub mod query;
pub mod rbac;
pub mod resources;
mod server;
mod services;
pub mod store;
mod table;
mod tls;
mod validation;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use hyper_util::rt::{TokioExecutor, TokioIo};
use hyper_util::server::conn::auto;
use tokio::net::TcpListener;
use tokio::task::JoinSet;

pub use api::now_rfc3339;
pub use faults::FaultConfig;
pub use kubelet::KubeletConfig;

/// Shared by the HTTP layer and the cluster's own loops.
pub struct State {
    pub store: store::Store,
    pub registry: resources::Registry,
    /// The admin token. `None` only in the explicit plain-HTTP loopback mode.
    pub token: Option<String>,
    /// ServiceAccount tokens issued through TokenRequest.
    pub tokens: auth::Tokens,
    pub server_address: String,
    pub faults: faults::Faults,
}

#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// Port 0 picks a free one.
    pub bind: SocketAddr,
    /// Plain HTTP without authentication; refused unless `bind` is a loopback address.
    pub insecure_http: bool,
    /// Where the kubeconfig is written [default: a fresh directory under the system temp dir].
    pub kubeconfig: Option<PathBuf>,
    pub kubelet: KubeletConfig,
    /// Changes kept for resuming watches.
    pub history: usize,
    pub faults: FaultConfig,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            insecure_http: false,
            kubeconfig: None,
            kubelet: KubeletConfig::default(),
            history: store::DEFAULT_HISTORY,
            faults: FaultConfig::default(),
        }
    }
}

/// A running cluster. Dropping it stops the server and its loops.
pub struct Cluster {
    pub url: String,
    pub addr: SocketAddr,
    pub kubeconfig: PathBuf,
    pub token: Option<String>,
    pub ca_pem: Option<String>,
    state: Arc<State>,
    tasks: JoinSet<()>,
}

impl Cluster {
    pub async fn start(config: ClusterConfig) -> anyhow::Result<Cluster> {
        if config.insecure_http && !config.bind.ip().is_loopback() {
            anyhow::bail!(
                "plain HTTP without authentication is only allowed on a loopback address, not {}",
                config.bind
            );
        }
        let listener = TcpListener::bind(config.bind).await.with_context(|| format!("binding {}", config.bind))?;
        let addr = listener.local_addr()?;
        let (token, ca_pem, acceptor, url) = if config.insecure_http {
            (None, None, None, format!("http://{addr}"))
        } else {
            let hosts =
                vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string(), addr.ip().to_string()];
            let creds = tls::credentials(&hosts)?;
            let acceptor = tokio_rustls::TlsAcceptor::from(creds.server_config.clone());
            (Some(creds.token), Some(creds.ca_pem), Some(acceptor), format!("https://{addr}"))
        };
        let kubeconfig = match &config.kubeconfig {
            Some(p) => p.clone(),
            None => std::env::temp_dir()
                .join(format!("wasmcm-cluster-{}-{}", std::process::id(), addr.port()))
                .join("kubeconfig"),
        };
        tls::write_kubeconfig(&kubeconfig, &tls::kubeconfig(&url, ca_pem.as_deref(), token.as_deref().unwrap_or("")))?;

        let state = Arc::new(State {
            store: store::Store::new(config.history),
            registry: resources::Registry::default(),
            token: token.clone(),
            tokens: auth::Tokens::default(),
            server_address: addr.to_string(),
            faults: faults::Faults::default(),
        });
        state.faults.set(config.faults.clone());
        bootstrap(&state)?;

        let mut tasks = JoinSet::new();
        tasks.spawn(accept_loop(state.clone(), listener, acceptor));
        tasks.spawn(kubelet::run(state.clone(), config.kubelet.clone()));
        tasks.spawn(gc::run(state.clone()));
        tasks.spawn(periodic_faults(state.clone()));
        Ok(Cluster { url, addr, kubeconfig, token, ca_pem, state, tasks })
    }

    /// Writes a kubeconfig like the admin one but presenting `token` (a ServiceAccount token
    /// from TokenRequest, say) next to it, and returns its path. Each call writes a new file.
    pub fn kubeconfig_for_token(&self, token: &str) -> anyhow::Result<PathBuf> {
        static WRITTEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = WRITTEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let dir = self.kubeconfig.parent().map(PathBuf::from).unwrap_or_else(std::env::temp_dir);
        let path = dir.join(format!("kubeconfig-token-{n}"));
        tls::write_kubeconfig(&path, &tls::kubeconfig(&self.url, self.ca_pem.as_deref(), token))?;
        Ok(path)
    }

    /// A token for the ServiceAccount `namespace/name` (which must exist), valid for an hour:
    /// what `kubectl create token` gets, without going through HTTP.
    pub fn service_account_token(&self, namespace: &str, name: &str) -> anyhow::Result<String> {
        let answer = auth::token_request(&self.state, namespace, name, serde_json::json!({}), false)
            .map_err(|e| anyhow::anyhow!("issuing a token for {namespace}/{name}: {e}"))?;
        answer
            .pointer("/status/token")
            .and_then(serde_json::Value::as_str)
            .map(String::from)
            .context("a TokenRequest answer carries the token")
    }

    pub fn state(&self) -> &Arc<State> {
        &self.state
    }

    /// Fault injection, settable while running.
    pub fn set_faults(&self, faults: FaultConfig) {
        self.state.faults.set(faults);
    }

    /// Forgets the watch history: watchers resuming from before now get 410 Gone.
    pub fn compact(&self) {
        self.state.store.compact();
    }

    /// Closes every open watch stream now.
    pub fn drop_watches(&self) {
        self.state.faults.drop_watches();
        self.state.store.drop_watchers();
    }

    pub async fn shutdown(mut self) {
        self.tasks.shutdown().await;
        if let Some(dir) = self.kubeconfig.parent()
            && dir.file_name().is_some_and(|n| n.to_string_lossy().starts_with("wasmcm-cluster-"))
        {
            let _ = std::fs::remove_dir_all(dir);
        }
    }
}

/// The namespaces every cluster starts with.
fn bootstrap(state: &State) -> anyhow::Result<()> {
    let rt = state.registry.lookup("", "v1", "namespaces").context("the namespaces type is built in")?;
    for ns in ["default", "kube-system", "kube-public", "kube-node-lease"] {
        let object = serde_json::json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}});
        api::create(state, &rt, "", object, false).map_err(|e| anyhow::anyhow!("creating namespace {ns}: {e}"))?;
    }
    gc::pass(state);
    Ok(())
}

/// Drops watches and compacts the history on the configured fault intervals.
async fn periodic_faults(state: Arc<State>) {
    let (mut last_drop, mut last_compact) = (tokio::time::Instant::now(), tokio::time::Instant::now());
    loop {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let config = state.faults.config();
        let now = tokio::time::Instant::now();
        if config.watch_drop_interval.is_some_and(|i| now.duration_since(last_drop) >= i) {
            last_drop = now;
            state.faults.drop_watches();
            state.store.drop_watchers();
        }
        if config.compact_interval.is_some_and(|i| now.duration_since(last_compact) >= i) {
            last_compact = now;
            state.store.compact();
        }
    }
}

async fn accept_loop(state: Arc<State>, listener: TcpListener, acceptor: Option<tokio_rustls::TlsAcceptor>) {
    let mut connections = JoinSet::new();
    loop {
        let (stream, peer) = match listener.accept().await {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!("accepting a connection: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let _ = stream.set_nodelay(true);
        let state = state.clone();
        let acceptor = acceptor.clone();
        connections.spawn(async move {
            let service = hyper::service::service_fn(move |req| server::handle(state.clone(), req));
            let builder = auto::Builder::new(TokioExecutor::new());
            let result = match acceptor {
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(tls) => builder.serve_connection(TokioIo::new(tls), service).await,
                    Err(e) => {
                        tracing::debug!(%peer, "TLS handshake failed: {e}");
                        return;
                    }
                },
                None => builder.serve_connection(TokioIo::new(stream), service).await,
            };
            if let Err(e) = result {
                tracing::debug!(%peer, "connection ended: {e}");
            }
        });
        // Reap finished connections so the set does not grow without bound.
        while connections.try_join_next().is_some() {}
    }
}
