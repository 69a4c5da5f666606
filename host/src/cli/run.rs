//! `wasmcm run`: the host, on the cluster of `--kubeconfig`, in-cluster credentials in a pod,
//! or else a new embedded cluster; its plugins loaded, its admin endpoint served, its plugins
//! reloaded on change, until a stop signal or a lost lease.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use std::sync::Arc;

use anyhow::Context;
use clap::Args;
use tokio::sync::watch;
use wasmcm::{ClientRate, ControllerConfig, Engine, Host, HostConfig, LeaderConfig, Mode};

use super::{cluster_config, default_admin_token_file};

#[derive(Args)]
pub(crate) struct RunArgs {
    /// Use this kubeconfig's cluster instead of starting an embedded one (an ambient
    /// $KUBECONFIG is deliberately not enough, and a line says so: without flags the host runs
    /// on its own cluster).
    #[cfg_attr(
        not(feature = "embedded-cluster"),
        arg(help = "The cluster's kubeconfig (else in-cluster credentials: this build has no embedded cluster)")
    )]
    #[arg(long, env = "WASMCM_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, env = "WASMCM_CONTEXT")]
    context: Option<String>,
    /// The namespace this host runs in, which it keeps from its plugins (with its Leases) unless
    /// a manifest grants it, and where ConfigMap plugin sources that name none are read. In a
    /// pod it is the pod's (a different value is refused) [default: outside a pod, the
    /// kubeconfig context's namespace when the context names one but `default`, else `wasmcm`].
    #[arg(long, env = "WASMCM_NAMESPACE")]
    namespace: Option<String>,
    /// Plugin manifests: a file or a directory of them; repeatable, later ones override the
    /// built-in default manifest and each other by plugin name. Watched: a changed plugin is
    /// swapped in while the host runs.
    #[arg(long, env = "WASMCM_PLUGINS", value_delimiter = ',')]
    plugins: Vec<PathBuf>,
    /// Run the cluster's Plugin objects (wasmcm.dev/v1alpha1, deploy/manifests/00-crd-plugins.yaml)
    /// beside the manifests' plugins, an object replacing a manifest entry of the same name;
    /// watched: one applied, changed or deleted is added, swapped or removed while the host runs.
    #[arg(long, env = "WASMCM_PLUGIN_OBJECTS", default_value_t = true, action = clap::ArgAction::Set)]
    plugin_objects: bool,
    /// Refuse to start if any manifest or plugin fails to load (otherwise the others start), and
    /// refuse a new version declaring wider rights (otherwise it is held until promoted by hand).
    #[arg(long, env = "WASMCM_STRICT")]
    strict: bool,
    /// Refuse file, ConfigMap and OCI plugins whose manifest entry pins no sha256 (an OCI
    /// reference may pin its digest instead: registry/repository:tag@sha256:…).
    #[arg(long, env = "WASMCM_REQUIRE_PINS")]
    require_pins: bool,
    /// Secrets of the host's namespace (type kubernetes.io/dockerconfigjson, as `kubectl create
    /// secret docker-registry` makes) whose credentials OCI plugin pulls present, first match
    /// first, as a Pod's imagePullSecrets.
    #[arg(long, env = "WASMCM_REGISTRY_SECRETS", value_delimiter = ',')]
    registry_secrets: Vec<String>,
    /// Registries (host[:port]) spoken in plain HTTP besides loopback ones.
    #[arg(long, env = "WASMCM_INSECURE_REGISTRIES", value_delimiter = ',')]
    insecure_registries: Vec<String>,
    /// Namespaces besides the host's own that plugin ConfigMaps may be read from.
    #[arg(long, env = "WASMCM_PLUGIN_CONFIGMAP_NAMESPACES", value_delimiter = ',')]
    plugin_configmap_namespaces: Vec<String>,
    /// Workers per plugin, unless its manifest says.
    #[arg(long, env = "WASMCM_WORKERS", default_value_t = 5)]
    workers: usize,
    /// Client-side API rate limit (queries per second).
    #[arg(long, env = "WASMCM_KUBE_API_QPS", default_value_t = 20.0)]
    kube_api_qps: f64,
    /// Client-side API burst.
    #[arg(long, env = "WASMCM_KUBE_API_BURST", default_value_t = 30)]
    kube_api_burst: u32,
    /// Reconcile every object this often even without changes (`10m`; a bare number is seconds);
    /// 0 = off.
    #[arg(long, env = "WASMCM_RESYNC_PERIOD", default_value = "0", value_parser = super::duration)]
    resync_period: Duration,
    /// Where to serve /metrics, /healthz and /readyz.
    #[arg(long, env = "WASMCM_METRICS_BIND_ADDRESS", default_value = "127.0.0.1:8080")]
    metrics_bind_address: std::net::SocketAddr,
    /// The bearer token the plugin admin API (/plugins) needs, created (0600, 32 random bytes)
    /// if absent, refused (the API off) if another user owns it, group or others may read it, or
    /// it is shorter than 32 bytes; `wasmcm plugins` reads the same file [default:
    /// $XDG_CONFIG_HOME/wasmcm/admin-token or ~/.config/wasmcm/admin-token].
    #[arg(long, env = "WASMCM_ADMIN_TOKEN_FILE")]
    admin_token_file: Option<PathBuf>,
    /// Elect a leader through a Lease so that only one replica reconciles.
    #[arg(long, env = "WASMCM_LEADER_ELECT", default_value_t = true, action = clap::ArgAction::Set)]
    leader_elect: bool,
    /// Split the keys into this many shards (by a hash of their namespace), each a Lease that
    /// one replica at a time holds, so every replica reconciles its share (replaces leader
    /// election; 0 = off). The --leader-elect-* flags then name the shard group (its Leases are
    /// `<name>-shard-<i>` and `<name>-member-<identity>`) and time its Leases. Every replica
    /// must use the same number.
    #[arg(long, env = "WASMCM_SHARDS", default_value_t = 0)]
    shards: u32,
    /// Namespace of the leader-election Lease.
    #[arg(long, env = "WASMCM_LEADER_ELECT_RESOURCE_NAMESPACE", default_value = "kube-system")]
    leader_elect_resource_namespace: String,
    /// Name of the leader-election Lease.
    #[arg(long, env = "WASMCM_LEADER_ELECT_RESOURCE_NAME", default_value = "wasmcm")]
    leader_elect_resource_name: String,
    /// How long a standby waits after the leader's last renewal before taking over (Go's
    /// syntax, as kube-controller-manager: `15s`; a bare number is seconds).
    #[arg(long, env = "WASMCM_LEADER_ELECT_LEASE_DURATION", default_value = "15s", value_parser = super::duration)]
    leader_elect_lease_duration: Duration,
    /// How long the leader keeps trying to renew before giving up (`10s`).
    #[arg(long, env = "WASMCM_LEADER_ELECT_RENEW_DEADLINE", default_value = "10s", value_parser = super::duration)]
    leader_elect_renew_deadline: Duration,
    /// How long a stopping host waits for reconciles in flight before exiting anyway (`25s`);
    /// keep it below the pod's terminationGracePeriodSeconds.
    #[arg(long, env = "WASMCM_SHUTDOWN_GRACE_PERIOD", default_value = "25s", value_parser = super::duration)]
    shutdown_grace_period: Duration,
    /// How long between attempts to acquire or renew (`2s`).
    #[arg(long, env = "WASMCM_LEADER_ELECT_RETRY_PERIOD", default_value = "2s", value_parser = super::duration)]
    leader_elect_retry_period: Duration,
}

/// client-go's rules for election timings (its `NewLeaderElector`): a lease longer than the
/// renew deadline, which is longer than the retry period with its jitter. The fence's safety
/// rests on the first: a standby waits a lease, a leader writes for at most a renew deadline.
fn check_lease_timing(lease: &wasmcm::LeaderConfig) -> anyhow::Result<()> {
    if lease.lease_duration <= lease.renew_deadline {
        anyhow::bail!(
            "--leader-elect-lease-duration ({:?}) must be greater than --leader-elect-renew-deadline ({:?})",
            lease.lease_duration,
            lease.renew_deadline
        );
    }
    if lease.renew_deadline.as_secs_f64() <= 1.2 * lease.retry_period.as_secs_f64() {
        anyhow::bail!(
            "--leader-elect-renew-deadline ({:?}) must be greater than 1.2 × --leader-elect-retry-period ({:?})",
            lease.renew_deadline,
            lease.retry_period
        );
    }
    Ok(())
}

/// `pulled`: where plugins pulled from registries are kept, by digest.
pub(crate) fn run(engine: &Engine, args: RunArgs, pulled: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(run_host(engine, args, pulled))
}

async fn run_host(engine: &Engine, args: RunArgs, pulled: Option<PathBuf>) -> anyhow::Result<ExitCode> {
    // Bound first: a second `make run` stops here, before it starts a cluster and prints what to try.
    let listener = tokio::net::TcpListener::bind(args.metrics_bind_address)
        .await
        .map_err(|e| metrics_address_error(args.metrics_bind_address, &e))?;
    // Caught from the start: as a container's PID 1 the kernel drops a signal the process has
    // no handler for, so a kubelet's SIGTERM sent while the plugins compile or the host takes
    // its Lease was lost and the pod killed at the end of its grace period (seen in CI).
    let mut stop = super::StopSignal::listen()?;
    // The flags checked before anything starts.
    let namespace =
        wasmcm::host_namespace(args.namespace.as_deref(), args.kubeconfig.as_deref(), args.context.as_deref())?;
    let host_config = host_config(&args, namespace.clone())?;
    let (config, cluster) = connect(&args).await?;
    let client = kube::Client::try_from(config.clone())?;
    tracing::info!("the host's namespace: {namespace}");
    let trust = wasmcm::Trust {
        namespace: namespace.clone(),
        configmap_namespaces: args.plugin_configmap_namespaces.clone(),
        require_pins: args.require_pins,
        registries: wasmcm::Registries {
            secrets: args.registry_secrets.clone(),
            insecure: args.insecure_registries.clone(),
            cache: pulled,
        },
    };
    let metrics = Arc::new(wasmcm::Metrics::default());
    let failures = Arc::new(wasmcm::LoadFailures::new(metrics.clone()));
    let objects = match args.plugin_objects {
        true => Some(plugin_objects(&client, cluster.is_some(), &namespace).await),
        false => None,
    };
    let objects_read = objects.as_ref().map(|(o, _)| o.clone());
    // Loading may compile for a while; a stop meanwhile ends it there, before any Lease is taken.
    let versions = tokio::select! {
        loaded = load(engine, &args, &client, cluster.is_some(), objects_read.as_deref(), &trust, &failures) => loaded?,
        () = stop.received() => {
            if let Some(c) = cluster {
                c.shutdown().await;
            }
            return Ok(ExitCode::SUCCESS);
        }
    };
    let names: Vec<String> = versions.iter().map(|v| v.name().to_string()).collect();
    let shown = serve_admin(listener, &args, metrics.clone(), failures.clone()).await?;
    let probe = tokio::spawn(wasmcm::probe_api_server(client.clone(), shown.cluster));
    let host = Host::start(config, versions, host_config, metrics).await?;
    // What the admin endpoint lists follows the plugins added and removed.
    let (mut running, listed) = (host.plugins().subscribe(), shown.plugins);
    tokio::spawn(async move {
        loop {
            listed.send_replace(running.borrow_and_update().clone());
            if running.changed().await.is_err() {
                return;
            }
        }
    });
    let mut group = host.standing();
    let standing = shown.standing;
    tokio::spawn(async move {
        loop {
            standing.send_replace(group.borrow_and_update().clone());
            if group.changed().await.is_err() {
                return;
            }
        }
    });
    let reloader = wasmcm::Reloader {
        engine: engine.clone(),
        client: Some(client.clone()),
        trust,
        paths: args.plugins.clone(),
        objects: objects_read,
        plugins: host.plugins().clone(),
        failures: failures.clone(),
    }
    .spawn()?;
    // Each replica's word in the status of the Plugin objects it runs.
    let (status_stop, stopped) = watch::channel(false);
    let status = objects.as_ref().map(|(objects, _)| {
        let writer = wasmcm::StatusWriter::new(
            client.clone(),
            host.identity(),
            objects.clone(),
            host.plugins().clone(),
            failures.clone(),
        );
        tokio::spawn(writer.run(stopped))
    });
    let decisions =
        objects.as_ref().map(|(objects, _)| wasmcm::act_on_decisions(objects.clone(), host.plugins().clone()));
    shown.ready.send_replace(true);
    match names.is_empty() {
        true => println!("wasmcm running: no plugin yet (Ctrl-C to stop)"),
        false => println!("wasmcm running: {} (Ctrl-C to stop)", names.join(", ")),
    }
    let mut leading = host.leading();
    let lost = async {
        let _ = leading.wait_for(|l| *l).await;
        let _ = leading.wait_for(|l| !*l).await;
    };
    // Like kube-controller-manager, a host that loses its lease exits at once: its fence
    // already refuses every write, so reconciles in flight have nothing left to finish, and
    // its restart rejoins as a standby with fresh state.
    tokio::select! {
        r = stop.received() => r,
        _ = lost => {
            tracing::error!("leadership lost; exiting");
            std::process::exit(1);
        }
    };
    reloader.abort();
    for task in objects.map(|(_, watch)| watch).into_iter().chain(decisions) {
        task.abort();
    }
    // This replica's status entries go before it does (bounded: the API may be what failed).
    status_stop.send_replace(true);
    if let Some(status) = status {
        let _ = tokio::time::timeout(Duration::from_secs(5), status).await;
    }
    // Stop taking work, let reconciles in flight finish, release the lease; a reconcile
    // stuck past the grace period is abandoned (its key is retried by the next leader).
    let grace = args.shutdown_grace_period;
    if tokio::time::timeout(grace, host.shutdown()).await.is_err() {
        tracing::warn!("reconciles still running after the {grace:?} grace period; exiting without waiting");
    }
    probe.abort();
    if let Some(c) = cluster {
        c.shutdown().await;
    }
    Ok(ExitCode::SUCCESS)
}

/// The host's plugins, loaded (the embedded cluster first given the host's namespace), and
/// those that failed recorded in `failures`.
async fn load(
    engine: &Engine,
    args: &RunArgs,
    client: &kube::Client,
    embedded: bool,
    objects: Option<&wasmcm::PluginObjects>,
    trust: &wasmcm::Trust,
    failures: &wasmcm::LoadFailures,
) -> anyhow::Result<Vec<wasmcm::Version>> {
    if embedded {
        // The embedded cluster starts with the system namespaces only; the host's is made
        // so that what is said of it (plugin ConfigMaps, the grant) means something there.
        let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client.clone());
        let object = serde_json::from_value(serde_json::json!({"metadata": {"name": trust.namespace}}))?;
        if let Err(e) = namespaces.create(&kube::api::PostParams::default(), &object).await
            && !matches!(&e, kube::Error::Api(s) if s.code == 409)
        {
            tracing::warn!("creating the host's namespace {} on the embedded cluster: {e}", trust.namespace);
        }
    }
    let loaded = wasmcm::load_plugins(engine, &args.plugins, objects, trust, Some(client)).await;
    for f in &loaded.failed {
        failures.failed(f);
    }
    for (plugin, message) in &loaded.invalid {
        let reason = wasmcm::Reason::InvalidSpec;
        failures.failed(&wasmcm::LoadFailure { plugin: plugin.clone(), reason, message: message.clone() });
    }
    let messages: Vec<String> =
        loaded.manifest_errors.into_iter().chain(loaded.failed.iter().map(ToString::to_string)).collect();
    for m in &messages {
        tracing::error!("not loaded: {m}");
    }
    if args.strict && !messages.is_empty() {
        anyhow::bail!("--strict: {} failed to load:\n  {}", messages.len(), messages.join("\n  "));
    }
    // With Plugin objects, a host may start with none: they come when applied.
    if loaded.versions.is_empty() && objects.is_none() {
        anyhow::bail!("no plugin to run: every one is disabled or failed to load");
    }
    Ok(loaded.versions)
}

/// How long `wasmcm run` waits for the first list of Plugin objects before it starts without
/// them (they are added once listed).
const OBJECTS_LISTED: Duration = Duration::from_secs(10);

/// The cluster's Plugin objects, watched (the embedded cluster first given their CRD), once
/// listed or after `OBJECTS_LISTED`.
async fn plugin_objects(
    client: &kube::Client,
    embedded: bool,
    namespace: &str,
) -> (Arc<wasmcm::PluginObjects>, tokio::task::JoinHandle<()>) {
    if embedded {
        let crds: kube::Api<
            k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition,
        > = kube::Api::all(client.clone());
        let created = match serde_saphyr::from_str(wasmcm::PLUGIN_CRD) {
            Ok(crd) => crds.create(&kube::api::PostParams::default(), &crd).await.map(drop).map_err(|e| e.to_string()),
            Err(e) => Err(e.to_string()),
        };
        if let Err(e) = created {
            tracing::warn!("creating the Plugin CRD on the embedded cluster: {e}");
        }
    }
    let (objects, watch) = wasmcm::PluginObjects::watch(client.clone(), namespace.to_string());
    if tokio::time::timeout(OBJECTS_LISTED, objects.listed()).await.is_err() {
        tracing::warn!(
            "Plugin objects not listed within {OBJECTS_LISTED:?}: starting without them; they are added once listed"
        );
    }
    (objects, watch)
}

/// The cluster of `--kubeconfig` or of in-cluster credentials, else a new embedded one (kept
/// running until the host stops).
async fn connect(args: &RunArgs) -> anyhow::Result<(kube::Config, Option<Embedded>)> {
    match cluster_config(args.kubeconfig.as_ref(), args.context.clone()).await? {
        Some(config) => Ok((config, None)),
        None => embedded().await,
    }
}

#[cfg(feature = "embedded-cluster")]
type Embedded = wasmcm_apiserver::Cluster;

/// A new embedded cluster, and the `try:` line that shows it off.
#[cfg(feature = "embedded-cluster")]
async fn embedded() -> anyhow::Result<(kube::Config, Option<Embedded>)> {
    // The cluster's clock (WASMCM_CLOCK: a test clock runs faster), the host's too.
    let clock = wasmcm_core::clock::Clock::from_env().map_err(anyhow::Error::msg)?;
    let config = wasmcm_apiserver::ClusterConfig { clock, ..wasmcm_apiserver::ClusterConfig::default() };
    let cluster = wasmcm_apiserver::Cluster::start(config).await?;
    let kc = kube::config::Kubeconfig::read_from(&cluster.kubeconfig)?;
    let config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?;
    println!("embedded cluster at {}", cluster.url);
    let k = super::kubectl_for_try();
    println!(
        "try: export KUBECONFIG={} && {k} create deployment web --image=nginx:1 --replicas=3 && {k} rollout status \
         deployment/web && {k} get pods",
        cluster.kubeconfig.display()
    );
    Ok((config, Some(cluster)))
}

/// No embedded cluster in this build: there is never one to stop.
#[cfg(not(feature = "embedded-cluster"))]
enum Embedded {}

#[cfg(not(feature = "embedded-cluster"))]
impl Embedded {
    async fn shutdown(self) {
        match self {}
    }
}

#[cfg(not(feature = "embedded-cluster"))]
async fn embedded() -> anyhow::Result<(kube::Config, Option<Embedded>)> {
    anyhow::bail!(
        "no cluster to run on: give --kubeconfig, or run in a pod (in-cluster credentials, \
         KUBERNETES_SERVICE_HOST); this wasmcm was built without an embedded cluster (cargo feature \
         embedded-cluster)"
    )
}

/// The host's configuration from the flags: its controllers', its client rate, and how it
/// shares the work (`--shards`, else `--leader-elect`).
fn host_config(args: &RunArgs, namespace: String) -> anyhow::Result<HostConfig> {
    let identity = wasmcm::default_identity();
    let lease = LeaderConfig {
        lease_duration: args.leader_elect_lease_duration,
        renew_deadline: args.leader_elect_renew_deadline,
        retry_period: args.leader_elect_retry_period,
        ..LeaderConfig::new(&args.leader_elect_resource_namespace, &args.leader_elect_resource_name, &identity)
    };
    check_lease_timing(&lease)?;
    let mode = match (args.shards, args.leader_elect) {
        (0, false) => Mode::Single,
        (0, true) => Mode::Leader(lease),
        (count, _) => Mode::Shards(wasmcm::ShardConfig { count, lease }),
    };
    Ok(HostConfig {
        controller: ControllerConfig {
            workers: args.workers,
            resync: Some(args.resync_period).filter(|d| !d.is_zero()),
            strict: args.strict,
            // Protected whether or not this host elects or shards: another replica may.
            host: wasmcm::HostIdentity {
                namespace: Some(namespace),
                lease: Some((args.leader_elect_resource_namespace.clone(), args.leader_elect_resource_name.clone())),
            },
            // The cluster's clock (WASMCM_CLOCK): plugins' now, and requeues shortened by its rate.
            clock: wasmcm_core::clock::Clock::from_env().map_err(anyhow::Error::msg)?,
            ..ControllerConfig::default()
        },
        client_rate: ClientRate { qps: args.kube_api_qps, burst: args.kube_api_burst },
        mode,
    })
}

/// Why `--metrics-bind-address` cannot be bound, and what to do about it.
fn metrics_address_error(address: std::net::SocketAddr, e: &std::io::Error) -> anyhow::Error {
    if e.kind() == std::io::ErrorKind::AddrInUse {
        anyhow::anyhow!(
            "cannot serve metrics on {address}: the address is in use, perhaps by another wasmcm (a second `make \
             run`?): stop it, or give --metrics-bind-address another address (127.0.0.1:0 takes a free port and \
             prints it)"
        )
    } else {
        anyhow::anyhow!("cannot serve metrics on {address} (--metrics-bind-address): {e}")
    }
}

/// What the metrics and admin endpoint shows of the host, filled in as it starts.
struct Shown {
    ready: watch::Sender<bool>,
    plugins: watch::Sender<Vec<Arc<wasmcm::PluginController<wasmcm::KubeApi>>>>,
    standing: watch::Sender<wasmcm::Agreement>,
    cluster: watch::Sender<wasmcm::Reach>,
}

/// Serves `/metrics`, `/healthz`, `/readyz` and the plugin admin API (when its token is
/// usable) on `--metrics-bind-address`.
async fn serve_admin(
    listener: tokio::net::TcpListener,
    args: &RunArgs,
    metrics: Arc<wasmcm::Metrics>,
    failures: Arc<wasmcm::LoadFailures>,
) -> anyhow::Result<Shown> {
    let (ready, ready_rx) = watch::channel(false);
    let (plugins, plugins_rx) = watch::channel(Vec::new());
    let token = match args.admin_token_file.clone().or_else(default_admin_token_file) {
        Some(file) => match wasmcm::admin_token(&file, true) {
            Ok(t) => Some(t.into()),
            Err(e) => {
                tracing::warn!("the plugin admin API (/plugins: list, promote, abandon, record) is off: {e:#}");
                None
            }
        },
        None => None,
    };
    let (standing, standing_rx) = watch::channel(wasmcm::Agreement::Unknown);
    let (cluster, cluster_rx) = watch::channel(wasmcm::Reach::Unknown);
    let admin = wasmcm::Admin {
        metrics,
        ready: ready_rx,
        plugins: plugins_rx,
        token,
        standing: standing_rx,
        cluster: cluster_rx,
        failures,
    };
    let bound = wasmcm::serve_admin(listener, admin)
        .await
        .with_context(|| format!("serving metrics on {}", args.metrics_bind_address))?;
    println!("metrics: http://{bound}/metrics");
    Ok(Shown { ready, plugins, standing, cluster })
}
