//! The running server: its state, its listener and its loops (kubelet, garbage collector,
//! injected faults), started from a [`ClusterConfig`] and stopped by dropping or
//! [`Cluster::shutdown`], which also removes its credential files (`files`).

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use wasmcm_core::clock::Clock;

use crate::controllers::{disruption, gc, kubelet};
use crate::state::{Sources, State};
use crate::storage::change::StoredChange;
use crate::storage::store;
use crate::storage::store::{Changes, Subscription};
use crate::{AuditLease, AuditRecord, FaultConfig, FaultCounts, KubeletConfig};
use crate::{audit, auth, files, limits, listener, tls};

#[derive(Clone, Debug)]
pub struct ClusterConfig {
    /// Port 0 picks a free one.
    pub bind: SocketAddr,
    /// Plain HTTP without authentication; refused unless `bind` is a loopback address.
    pub insecure_http: bool,
    /// Where the kubeconfig is written [default: a new private directory under the system
    /// temp dir, removed with the cluster]. A file given here is replaced (with mode 0600),
    /// and removed with the cluster if it still holds what was written.
    pub kubeconfig: Option<PathBuf>,
    pub kubelet: KubeletConfig,
    /// Changes kept for resuming watches.
    pub history: usize,
    /// Estimated serialized bytes of the changes kept for resuming watches (each counted with
    /// the version it replaced): the older ones go when either bound is passed.
    pub history_bytes: usize,
    pub faults: FaultConfig,
    /// Record every write with who held the Lease entitling it when it arrived:
    /// [`Cluster::take_audit`].
    pub audit_lease: Option<AuditLease>,
    /// Serve KEP-5866's `shardSelector` on lists and watches (Kubernetes 1.36's alpha
    /// `ShardedListAndWatch` gate); off, the parameter is ignored, as by servers without it.
    pub sharded_list_watch: bool,
    /// The cluster's clock: what objects are stamped with and what the kubelet's simulated run
    /// times and back-offs run in. A test clock (`wasmcm_core::clock`) runs faster.
    pub clock: Clock,
    /// The listener's connection cap and timeouts.
    pub connections: limits::ConnectionLimits,
    /// How long an Event is kept after its last write (kube-apiserver's `--event-ttl`, 1 h).
    pub event_ttl: Duration,
}

impl Default for ClusterConfig {
    fn default() -> Self {
        ClusterConfig {
            bind: SocketAddr::from(([127, 0, 0, 1], 0)),
            insecure_http: false,
            kubeconfig: None,
            kubelet: KubeletConfig::default(),
            history: store::DEFAULT_HISTORY,
            history_bytes: store::DEFAULT_HISTORY_BYTES,
            faults: FaultConfig::default(),
            audit_lease: None,
            sharded_list_watch: true,
            clock: Clock::system(),
            connections: limits::ConnectionLimits::default(),
            event_ttl: Duration::from_secs(3600),
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
    /// The kubeconfig and the other credential files, removed when the cluster is dropped.
    files: files::ClusterFiles,
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
        let (token, ca_pem, admin, acceptor, url) = if config.insecure_http {
            (None, None, None, None, format!("http://{addr}"))
        } else {
            let hosts =
                vec!["localhost".to_string(), "127.0.0.1".to_string(), "::1".to_string(), addr.ip().to_string()];
            let creds = tls::credentials(&hosts)?;
            let acceptor = tokio_rustls::TlsAcceptor::from(creds.server_config.clone());
            (Some(creds.token), Some(creds.ca_pem), Some(creds.admin), Some(acceptor), format!("https://{addr}"))
        };
        let files = files::ClusterFiles::create(
            &std::env::temp_dir(),
            config.kubeconfig.as_deref(),
            &tls::kubeconfig(&url, ca_pem.as_deref(), token.as_deref().unwrap_or(""), admin.as_ref()),
        )?;
        let kubeconfig = files.kubeconfig().to_path_buf();

        let state = Arc::new(State {
            token: token.clone(),
            server_address: addr.to_string(),
            audit: config.audit_lease.clone().map(audit::Audit::new),
            sharded_list_watch: config.sharded_list_watch,
            limits: config.connections,
            ..State::new(
                store::Store::new(store::HistoryLimits { events: config.history, bytes: config.history_bytes }),
                Sources::System(config.clock),
                crate::controllers::control_plane::sync_crd_api_services,
            )
        });
        state.faults.set(config.faults.clone());
        crate::bootstrap::bootstrap(&state)?;

        let mut tasks = JoinSet::new();
        tasks.spawn(listener::serve(state.clone(), listener, acceptor));
        tasks.spawn(kubelet::run(state.clone(), config.kubelet.clone()));
        tasks.spawn(gc::run(state.clone(), config.event_ttl));
        tasks.spawn(disruption::run(state.clone()));
        tasks.spawn(periodic_faults(state.clone()));
        Ok(Cluster { url, addr, kubeconfig, token, ca_pem, state, tasks, files })
    }

    /// Writes a kubeconfig like the admin one but presenting `token` (a ServiceAccount token
    /// from TokenRequest, say) in the cluster's private directory, and returns its path. Each
    /// call writes a new file; all go with the cluster.
    pub fn kubeconfig_for_token(&self, token: &str) -> anyhow::Result<PathBuf> {
        static WRITTEN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = WRITTEN.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        self.files.dir().write_new(
            &format!("kubeconfig-token-{n}"),
            &tls::kubeconfig(&self.url, self.ca_pem.as_deref(), token, None),
        )
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

    /// Fault injection, settable while running.
    pub fn set_faults(&self, faults: FaultConfig) {
        self.state.faults.set(faults);
    }

    /// Forgets the watch history: watchers resuming from before now get 410 Gone.
    pub fn compact(&self) {
        self.state.faults.compacted();
        self.state.store.compact();
    }

    /// Serves nothing for `duration`: open watches are closed, and every request that arrives
    /// meanwhile waits for the stall to end and is answered 504 without being served.
    pub fn stall(&self, duration: Duration) {
        self.state.faults.stall(duration);
        self.state.store.drop_watchers();
    }

    /// The writes audited since the last call (none unless `ClusterConfig::audit_lease`), in
    /// the order they were answered.
    pub fn take_audit(&self) -> Vec<AuditRecord> {
        self.state.audit.as_ref().map(audit::Audit::take).unwrap_or_default()
    }

    /// Every change the store makes from now on, in resourceVersion order and exactly once, as
    /// a watch of etcd's whole keyspace sees them: the view of the server's own loops, which no
    /// injected fault, dropped watch or compaction touches. A test checks invariants on it
    /// without the gaps a client's re-list leaves. The stream ends when the cluster stops, or if
    /// its reader fell so far behind that the history no longer reaches back to it.
    pub fn changes(&mut self) -> tokio::sync::mpsc::UnboundedReceiver<StoredChange> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let state = self.state.clone();
        // One of the cluster's tasks: it ends with the cluster, or at the first change after
        // the receiver is dropped.
        self.tasks.spawn(async move {
            let (mut changes, _) = Subscription::start(&state.store, None);
            loop {
                let Changes::Events(events) = changes.next(None).await else { return };
                for e in events {
                    let change = StoredChange {
                        resource: e.key.id.clone(),
                        event_type: e.event_type,
                        object: e.object.clone(),
                        resource_version: e.rv,
                    };
                    if tx.send(change).is_err() {
                        return;
                    }
                }
            }
        });
        rx
    }

    /// What fault injection has done so far.
    pub fn fault_counts(&self) -> FaultCounts {
        self.state.faults.counts()
    }

    /// Closes every open watch stream now.
    pub fn drop_watches(&self) {
        self.state.faults.drop_watches();
        self.state.store.drop_watchers();
    }

    /// Stops the server and its loops, and removes the cluster's files (as dropping it does).
    pub async fn shutdown(mut self) {
        self.tasks.shutdown().await;
    }
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
            state.faults.compacted();
            state.store.compact();
        }
    }
}
