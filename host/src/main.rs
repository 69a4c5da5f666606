use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use wasmcm::{Engine, EngineConfig, Limits, Plugin, terminal_safe, terminal_safe_json, terminal_safe_lines};
use wasmcm::{builtin, simulate};
use wasmcm_guest::Instant;

/// wasmcm — a WebAssembly controller manager for Kubernetes.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Where compiled plugins are kept between runs [default: $XDG_CACHE_HOME/wasmcm or ~/.cache/wasmcm].
    #[arg(long, global = true, env = "WASMCM_CACHE_DIR")]
    cache_dir: Option<PathBuf>,

    /// The key that authenticates the compiled plugins, created on first use; outside the
    /// cache directory [default: <cache-dir>.key].
    #[arg(long, global = true, env = "WASMCM_PRECOMPILED_KEY")]
    precompiled_key: Option<PathBuf>,

    /// Memory all plugin calls may hold at once (their linear memory, and the host's copies of
    /// what they read), e.g. 512Mi [default: half the container's memory limit; without one,
    /// each call is bounded by its plugin's limit only].
    #[arg(long, global = true, env = "WASMCM_PLUGIN_MEMORY_BUDGET")]
    plugin_memory_budget: Option<String>,

    /// Compile plugins on every start instead of keeping them.
    #[arg(long, global = true)]
    no_cache: bool,

    /// Log format: human-readable text, or one JSON object per line.
    #[arg(long, global = true, env = "WASMCM_LOG_FORMAT", default_value = "text", value_parser = ["text", "json"])]
    log_format: String,

    #[command(subcommand)]
    command: Option<Command>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the controller host with the built-in plugins (the default command): against the
    /// cluster of --kubeconfig, in-cluster credentials when running in a pod
    /// (KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT, and the ServiceAccount's token, ca.crt and
    /// namespace files in $WASMCM_SERVICEACCOUNT_DIR, default
    /// /var/run/secrets/kubernetes.io/serviceaccount), or else a new embedded cluster.
    Run(RunArgs),
    /// Run one reconcile of one key against a snapshot and print the writes and the result.
    Simulate(SimulateArgs),
    /// Start the embedded Kubernetes API server with simulated nodes, and keep it running.
    Cluster(ClusterArgs),
    /// Inspect plugin files, or list and steer the plugins of a running host.
    #[command(subcommand)]
    Plugins(PluginsCommand),
    /// The replica group as its Leases tell it: its shape (one leader, or N shards), which
    /// replica holds which shard, the live members, and any replica run in another shape.
    Shards(ShardsArgs),
    /// Create a standalone plugin crate to start from: describe(), a reconcile skeleton with
    /// unit tests, a simulate snapshot, a plugin manifest and, for a custom kind, its CRD.
    New(NewArgs),
}

#[derive(Args)]
struct NewArgs {
    /// The plugin's name, also its crate's: lowercase letters, digits and '-'.
    name: String,
    /// The kind it reconciles, group/version/Kind (version/Kind for the core group)
    /// [default: example.com/v1alpha1/<CamelCase of the name>, a custom kind with its CRD].
    #[arg(long)]
    kind: Option<String>,
    /// A custom kind's resource name [default: the kind in lowercase + "s"].
    #[arg(long)]
    plural: Option<String>,
    /// Where to create it (new or empty) [default: ./<name>].
    #[arg(long)]
    dir: Option<PathBuf>,
    /// The wasmcm-guest SDK to depend on by path [default: the SDK of the checkout this
    /// wasmcm was built from; without one, version only, from a registry].
    #[arg(long)]
    sdk: Option<PathBuf>,
}

#[derive(Args)]
struct ShardsArgs {
    /// The cluster's kubeconfig (else in-cluster credentials).
    #[arg(long, env = "WASMCM_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    #[arg(long, env = "WASMCM_CONTEXT")]
    context: Option<String>,
    /// The hosts' --leader-elect-resource-namespace.
    #[arg(long, env = "WASMCM_LEADER_ELECT_RESOURCE_NAMESPACE", default_value = "kube-system")]
    namespace: String,
    /// The hosts' --leader-elect-resource-name (the shard group's prefix).
    #[arg(long, env = "WASMCM_LEADER_ELECT_RESOURCE_NAME", default_value = "wasmcm")]
    name: String,
}

#[derive(Subcommand)]
enum PluginsCommand {
    /// The plugins of a running host: versions, digests, states (live, shadow, previous,
    /// failed) and counters (with the admin token: they quote what plugins wrote).
    List(AdminArgs),
    /// Load plugin files offline and print what each declares, imports, its digest and size.
    Inspect {
        /// Built-in plugin names or .wasm files [default: every built-in].
        plugins: Vec<String>,
    },
    /// Promote a plugin's shadow candidate now.
    Promote {
        name: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Drop a plugin's shadow candidate.
    Abandon {
        name: String,
        #[command(flatten)]
        admin: AdminArgs,
    },
    /// Print the RBAC a plugin needs to run in-cluster as its own ServiceAccount, from what it
    /// declares: that account and a ClusterRole for exactly the kinds it writes (a Role and
    /// RoleBinding in each namespace instead, when its manifest entry's scope lists
    /// namespaces), the host's reads of the kinds it caches, and the host's right to
    /// impersonate it. Kinds are resolved by the cluster's discovery: apply a custom kind's CRD
    /// first. Pipe it to `kubectl apply -f -`, and name the account as the plugin's
    /// `serviceAccount`.
    Rbac {
        /// A built-in plugin's name or a .wasm file.
        plugin: String,
        /// Plugin manifests (a file or a directory, as `run --plugins`) holding the plugin's
        /// entry, by its name or its file: its scope and serviceAccount apply [default: the
        /// built-in default manifest].
        #[arg(long, value_delimiter = ',')]
        plugins: Vec<PathBuf>,
        /// The namespace the host runs in.
        #[arg(long, default_value = "wasmcm")]
        namespace: String,
        /// The plugin's ServiceAccount [default: wasmcm-<plugin's name>].
        #[arg(long)]
        service_account: Option<String>,
        /// The host's ServiceAccount, in the same namespace.
        #[arg(long, default_value = "wasmcm")]
        host_service_account: String,
        /// The cluster's kubeconfig (else in-cluster credentials).
        #[arg(long, env = "WASMCM_KUBECONFIG")]
        kubeconfig: Option<PathBuf>,
        #[arg(long, env = "WASMCM_CONTEXT")]
        context: Option<String>,
    },
    /// Reconcile one key on a running host now and save what the plugin read, was asked and
    /// returned: a recording `wasmcm simulate --state <file> --expect <file>` replays.
    Record {
        /// The plugin's name on that host.
        plugin: String,
        /// The object, <namespace>/<name>.
        key: String,
        /// Where to write the recording [default: standard output].
        #[arg(long, short)]
        output: Option<PathBuf>,
        /// Seconds to wait for the reconcile (at most 50).
        #[arg(long, default_value_t = 30)]
        timeout: u64,
        #[command(flatten)]
        admin: AdminArgs,
    },
}

#[derive(Args)]
struct AdminArgs {
    /// The host's metrics/admin address (its --metrics-bind-address): a loopback address, since
    /// the token is never sent in clear text beyond it (`kubectl port-forward` reaches a pod's).
    #[arg(long, env = "WASMCM_ADMIN_ADDRESS", default_value = "127.0.0.1:8080")]
    address: std::net::SocketAddr,
    /// The host's admin token, which every `wasmcm plugins` call to a host needs: a file of at
    /// least 32 bytes that is this user's and no one else may read [default:
    /// $XDG_CONFIG_HOME/wasmcm/admin-token or ~/.config/wasmcm/admin-token].
    #[arg(long, env = "WASMCM_ADMIN_TOKEN_FILE")]
    admin_token_file: Option<PathBuf>,
}

#[derive(Args)]
struct SimulateArgs {
    /// A built-in plugin name (replicaset, deployment, rollback) or a path to a .wasm component.
    #[arg(long)]
    plugin: String,
    /// The cluster state: a Kubernetes List (JSON or YAML), multi-document YAML, or a recording
    /// from `wasmcm plugins record` (the plugin reads what the recorded reconcile read, with its
    /// request). At most 256 MiB; a recording past one of the caps a replay reads (objects,
    /// calls, objects answered) is refused with the cap named.
    #[arg(long)]
    state: PathBuf,
    /// The object to reconcile, <namespace>/<name> [default: a recording's].
    #[arg(long)]
    key: Option<String>,
    /// The time the plugin sees, RFC 3339 [default: a recording's, else now].
    #[arg(long)]
    now: Option<String>,
    /// A recording whose outcome this one must equal: prints where they differ and exits 1 if
    /// they do.
    #[arg(long)]
    expect: Option<PathBuf>,
    #[command(flatten)]
    limits: LimitArgs,
}

#[derive(Args)]
struct RunArgs {
    /// Use this kubeconfig's cluster instead of starting an embedded one (an ambient
    /// $KUBECONFIG is deliberately not enough: without flags the host runs on its own cluster).
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
    /// Refuse to start if any manifest or plugin fails to load (otherwise the others start), and
    /// refuse a new version declaring wider rights (otherwise it is held until promoted by hand).
    #[arg(long, env = "WASMCM_STRICT")]
    strict: bool,
    /// Refuse file and ConfigMap plugins whose manifest entry pins no sha256.
    #[arg(long, env = "WASMCM_REQUIRE_PINS")]
    require_pins: bool,
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
    /// Reconcile every object this often (seconds) even without changes; 0 = off.
    #[arg(long, env = "WASMCM_RESYNC_PERIOD", default_value_t = 0)]
    resync_period: u64,
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
    /// Seconds a standby waits after the leader's last renewal before taking over.
    #[arg(long, env = "WASMCM_LEADER_ELECT_LEASE_DURATION", default_value_t = 15)]
    leader_elect_lease_duration: u64,
    /// Seconds the leader keeps trying to renew before giving up.
    #[arg(long, env = "WASMCM_LEADER_ELECT_RENEW_DEADLINE", default_value_t = 10)]
    leader_elect_renew_deadline: u64,
    /// Seconds a stopping host waits for reconciles in flight before exiting anyway; keep it
    /// below the pod's terminationGracePeriodSeconds.
    #[arg(long, env = "WASMCM_SHUTDOWN_GRACE_PERIOD", default_value_t = 25)]
    shutdown_grace_period: u64,
    /// Seconds between attempts to acquire or renew.
    #[arg(long, env = "WASMCM_LEADER_ELECT_RETRY_PERIOD", default_value_t = 2)]
    leader_elect_retry_period: u64,
}

#[derive(Args)]
struct ClusterArgs {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1")]
    address: std::net::IpAddr,
    /// Port to listen on; 0 picks a free one.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Where to write the kubeconfig [default: a new directory under the system temp dir].
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Serve plain HTTP without authentication (loopback addresses only).
    #[arg(long)]
    insecure_http: bool,
    /// Number of simulated nodes.
    #[arg(long, default_value_t = 3)]
    nodes: usize,
    /// Milliseconds from a pod's binding to its start (±20% jitter).
    #[arg(long, default_value_t = 500)]
    pod_start_delay_ms: u64,
    /// Fault injection: probability (0-1) that a client write fails with 409, 429 or 500.
    #[arg(long, default_value_t = 0.0)]
    fault_write_error_rate: f64,
    /// Fault injection: milliseconds added to every request.
    #[arg(long, default_value_t = 0)]
    fault_latency_ms: u64,
    /// Fault injection: close every watch stream this often (seconds).
    #[arg(long)]
    fault_watch_drop_seconds: Option<u64>,
    /// Fault injection: compact the watch history this often (seconds), so watchers get 410.
    #[arg(long)]
    fault_compact_seconds: Option<u64>,
    /// Fault injection: hold back every watch event this many milliseconds.
    #[arg(long, default_value_t = 0)]
    fault_watch_delay_ms: u64,
}

#[derive(Args)]
struct LimitArgs {
    /// Per-call deadline in milliseconds.
    #[arg(long, default_value_t = 2000)]
    deadline_ms: u64,
    /// Per-call memory cap in MiB.
    #[arg(long, default_value_t = 256)]
    memory_mib: usize,
}

impl LimitArgs {
    fn limits(&self) -> Limits {
        Limits { memory_bytes: self.memory_mib << 20, deadline: Duration::from_millis(self.deadline_ms) }
    }
}

fn main() -> ExitCode {
    let mut cli = Cli::parse();
    let filter = || tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn,wasmcm=info".into());
    if cli.log_format == "json" {
        tracing_subscriber::fmt().json().with_env_filter(filter()).with_writer(std::io::stderr).init();
    } else {
        tracing_subscriber::fmt().with_env_filter(filter()).with_writer(std::io::stderr).init();
    }
    // `wasmcm` alone runs the host.
    let command = match cli.command.take() {
        Some(c) => c,
        // Parsed rather than built, so `wasmcm` alone gets exactly `wasmcm run`'s defaults
        // (including its environment variables).
        None => match Cli::try_parse_from(["wasmcm", "run"]).map(|c| c.command) {
            Ok(Some(run)) => run,
            Ok(None) => return ExitCode::from(2),
            Err(e) => {
                eprintln!("error: {e}");
                return ExitCode::from(2);
            }
        },
    };
    match run(cli, command) {
        Ok(code) => code,
        Err(e) => {
            // Errors quote what plugins and hosts said.
            eprintln!("error: {}", terminal_safe_lines(&format!("{e:#}")));
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli, command: Command) -> anyhow::Result<ExitCode> {
    if let Command::Cluster(args) = command {
        return run_cluster(args);
    }
    if let Command::Shards(args) = command {
        return show_shards(args);
    }
    if let Command::New(args) = command {
        let options = wasmcm::scaffold::Options {
            name: args.name,
            kind: args.kind,
            plural: args.plural,
            dir: args.dir,
            sdk: args.sdk,
        };
        let created = wasmcm::scaffold::create(&options).map_err(anyhow::Error::msg)?;
        let exe = std::env::current_exe().map(|p| p.display().to_string()).unwrap_or_else(|_| "wasmcm".into());
        print!("{}", wasmcm::scaffold::next_steps(&created, &exe));
        return Ok(ExitCode::SUCCESS);
    }
    let precompiled_dir = if cli.no_cache { None } else { cli.cache_dir.or_else(default_cache_dir) };
    let memory_budget = match &cli.plugin_memory_budget {
        Some(q) => Some(
            wasmcm_core::quantity::nanos(q)
                .map(|n| n / 1_000_000_000)
                .and_then(|b| usize::try_from(b).ok())
                .filter(|b| *b >= 1 << 20)
                .with_context(|| format!("--plugin-memory-budget {q:?}: a quantity of at least 1Mi, e.g. 512Mi"))?,
        ),
        None => wasmcm::container_memory_budget(),
    };
    match memory_budget {
        _ if !matches!(command, Command::Run(_)) => {}
        Some(b) => tracing::info!("plugin calls share a memory budget of {} MiB", b >> 20),
        None => tracing::info!("no container memory limit: each plugin call is bounded by its plugin's limit only"),
    }
    let engine = Engine::new(&EngineConfig {
        precompiled_dir,
        precompiled_key: cli.precompiled_key,
        memory_budget,
        ..EngineConfig::default()
    })?;
    match command {
        Command::Run(args) => run_host(&engine, args),
        Command::Simulate(args) => simulate_command(&engine, args),
        Command::Cluster(_) | Command::Shards(_) | Command::New(_) => unreachable!("handled above"),
        Command::Plugins(PluginsCommand::Inspect { plugins }) => {
            let names: Vec<String> =
                if plugins.is_empty() { builtin::names().map(String::from).collect() } else { plugins };
            for name in names {
                let p = load_plugin(&engine, &name, Limits::default())?;
                let i = p.info();
                // All but the digest and the sizes are the plugin's own words.
                fn list<T: std::fmt::Display>(ts: &[T]) -> String {
                    let shown: Vec<String> = ts.iter().map(|t| terminal_safe(&t.to_string()).into_owned()).collect();
                    shown.join(", ")
                }
                let (name, version, contract) =
                    (terminal_safe(&i.name), terminal_safe(&i.version), terminal_safe(&i.contract));
                println!("{name} {version} (contract {contract})");
                let c = p.compiled();
                let how = if c.cached { "from the precompiled cache" } else { "compiled" };
                println!("  sha256:  {}\n  size:    {} bytes", p.digest(), c.size);
                println!("  load:    {how} in {:.1} ms", c.duration.as_secs_f64() * 1e3);
                println!(
                    "  primary: {}\n  owns:    {}\n  watches: {}\n  writes:  {}\n  imports: {}",
                    terminal_safe(&i.primary.to_string()),
                    list(&i.owns),
                    list(&i.watches),
                    list(&i.writes),
                    list(p.imports())
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugins(PluginsCommand::Rbac {
            plugin,
            plugins,
            namespace,
            service_account,
            host_service_account,
            kubeconfig,
            context,
        }) => {
            let p = load_plugin(&engine, &plugin, Limits::default())?;
            let info = p.info().clone();
            let (specs, errors) = wasmcm::resolve_plugins(&plugins, &namespace);
            if let Some(e) = errors.first() {
                anyhow::bail!("{e}");
            }
            let file = Path::new(&plugin).canonicalize().ok();
            let entry = specs.into_iter().find(|s| {
                s.name == info.name
                    || matches!(&s.source, wasmcm::Source::File(f) if file.is_some() && f.canonicalize().ok() == file)
            });
            if entry.is_none() && !plugins.is_empty() {
                anyhow::bail!("no entry for plugin {} (by name or file) in the manifests of --plugins", info.name);
            }
            let service_account = service_account
                .or_else(|| entry.as_ref()?.service_account.as_ref().map(|(_, name)| name.clone()))
                .unwrap_or_else(|| format!("wasmcm-{}", info.name));
            let writes_in = entry.and_then(|e| e.scope.namespaces);
            let who = wasmcm::rbac::Identities { namespace, service_account, host_service_account, writes_in };
            let runtime = tokio::runtime::Runtime::new()?;
            let discovery = runtime.block_on(async {
                let config = cluster_config(kubeconfig.as_ref(), context)
                    .await?
                    .context("no cluster to resolve the plugin's kinds: give --kubeconfig (or run in a pod)")?;
                anyhow::Ok(wasmcm::Discovery::new(kube::Client::try_from(config)?))
            })?;
            // Discovery asks the cluster once per kind, however often the rules name it.
            let objects = wasmcm::rbac::plugin_rbac(&info, &who, |kind| runtime.block_on(discovery.resolve(kind)))
                .map_err(|e| anyhow::anyhow!("plugin {}: {e}", info.name))?;
            println!(
                "# RBAC for plugin {} {}: name it in its manifest entry as `serviceAccount: {}`.",
                terminal_safe(&info.name),
                terminal_safe(&info.version),
                terminal_safe(&who.service_account)
            );
            print!("{}", serde_saphyr::to_string_multiple(&objects)?);
            Ok(ExitCode::SUCCESS)
        }
        Command::Plugins(PluginsCommand::List(admin)) => admin_call(&admin, hyper::Method::GET, "/plugins", |body| {
            let statuses: Vec<serde_json::Value> = serde_json::from_str(body)?;
            println!("{:<14} {:<10} {:<9} {:<14} COUNTERS", "NAME", "VERSION", "STATE", "DIGEST");
            for s in &statuses {
                for v in s["versions"].as_array().into_iter().flatten() {
                    // The host's answer quotes plugins (versions, reasons): shown, never obeyed.
                    let text = |k: &str| terminal_safe(v[k].as_str().unwrap_or("")).into_owned();
                    let counters: Vec<String> = ["reconciles", "failures", "agreements", "mismatches"]
                        .iter()
                        .filter_map(|k| v[*k].as_u64().map(|n| format!("{k}={n}")))
                        .chain(v["reason"].as_str().map(|r| terminal_safe(r).into_owned()))
                        .collect();
                    let digest: String = text("digest").chars().take(12).collect();
                    println!(
                        "{:<14} {:<10} {:<9} {:<14} {}",
                        terminal_safe(s["name"].as_str().unwrap_or("")),
                        text("version"),
                        text("state"),
                        digest,
                        counters.join(" ")
                    );
                }
            }
            Ok(())
        }),
        Command::Plugins(PluginsCommand::Promote { name, admin }) => {
            admin_call(&admin, hyper::Method::POST, &format!("/plugins/{name}/promote"), print_body)
        }
        Command::Plugins(PluginsCommand::Abandon { name, admin }) => {
            admin_call(&admin, hyper::Method::POST, &format!("/plugins/{name}/abandon"), print_body)
        }
        Command::Plugins(PluginsCommand::Record { plugin, key, output, timeout, admin }) => {
            let query: String = form_urlencoded::Serializer::new(String::new())
                .append_pair("key", &key)
                .append_pair("timeout", &timeout.to_string())
                .finish();
            admin_call(&admin, hyper::Method::POST, &format!("/plugins/{plugin}/record?{query}"), |body| {
                let recording = wasmcm::record::Recording::from_json(&serde_json::from_str(body)?)
                    .map_err(|e| anyhow::anyhow!("the host answered a broken recording: {e}"))?;
                let r = &recording.plugin;
                let what = format!(
                    "{} {} (sha256 {}) reconciling {key}: {}",
                    r.name,
                    r.version,
                    r.digest,
                    recording.summary()
                );
                let what = terminal_safe(&what);
                match &output {
                    Some(path) => {
                        // What the plugin read, Secrets included: its owner's alone.
                        wasmcm::record::write_private(path, body.as_bytes())
                            .with_context(|| format!("cannot write {}", path.display()))?;
                        eprintln!("recorded {what} -> {}", path.display());
                    }
                    None => {
                        print!("{}", terminal_safe_json(body));
                        eprintln!("recorded {what}");
                    }
                }
                Ok(())
            })
        }
    }
}

/// `wasmcm simulate`: exit 0 done (and identical to `--expect`), 1 different from `--expect`,
/// 2 bad input, 3 the plugin failed.
fn simulate_command(engine: &Engine, args: SimulateArgs) -> anyhow::Result<ExitCode> {
    let plugin = load_plugin(engine, &args.plugin, args.limits.limits())?;
    let now = match &args.now {
        Some(t) => Some(Instant::parse_rfc3339(t).map_err(anyhow::Error::msg).context("--now")?),
        None => None,
    };
    let read = |path: &Path| {
        use std::io::Read;
        let name = path.display().to_string();
        let mut text = String::new();
        // One byte past the cap, for the parser to refuse naming it.
        let cap = wasmcm::record::MAX_RECORDING_BYTES as u64 + 1;
        std::fs::File::open(path)
            .and_then(|f| f.take(cap).read_to_string(&mut text))
            .with_context(|| format!("{name}: cannot read"))?;
        simulate::Snapshot::parse(&text).map_err(|e| anyhow::anyhow!("{name}: {e}"))
    };
    let expect = match &args.expect {
        Some(path) => match read(path)? {
            simulate::Snapshot::Recording(r) => Some(r),
            simulate::Snapshot::Objects(_) => anyhow::bail!("--expect {}: not a recording", path.display()),
        },
        None => None,
    };
    let state_name = args.state.display().to_string();
    match simulate::simulate(&plugin, &state_name, read(&args.state)?, args.key.as_deref(), now, expect.as_deref()) {
        Ok(out) => {
            println!("{}", terminal_safe_json(&serde_json::to_string_pretty(&out.document)?));
            let Some(expected) = out.document.get("expected") else { return Ok(ExitCode::SUCCESS) };
            let file = args.expect.as_deref().unwrap_or(Path::new("")).display();
            if !expected["samePlugin"].as_bool().unwrap_or(false) {
                let p = &expected["plugin"];
                let plugin = format!("{} {}, sha256 {}", p["name"], p["version"], p["digest"]);
                eprintln!("note: replayed with another plugin than recorded ({})", terminal_safe(&plugin));
            }
            match expected["difference"].as_str() {
                Some(difference) => {
                    eprintln!("differs from {file}: {}", terminal_safe_lines(difference));
                    Ok(ExitCode::from(1))
                }
                None => {
                    eprintln!("identical to {file}");
                    Ok(ExitCode::SUCCESS)
                }
            }
        }
        Err(e) => {
            eprintln!("error: {}", terminal_safe_lines(&e.to_string()));
            Ok(ExitCode::from(e.exit_code() as u8))
        }
    }
}

/// A host's text answer (which quotes plugins), shown, never obeyed.
fn print_body(body: &str) -> anyhow::Result<()> {
    print!("{}", terminal_safe_lines(body));
    Ok(())
}

/// One call to a running host's admin endpoint; a non-2xx answer is an error carrying its body.
/// The admin token goes with the calls that need it only, and only to a loopback address
/// (refused before the token file is even read).
fn admin_call(
    admin: &AdminArgs,
    method: hyper::Method,
    path: &str,
    show: impl FnOnce(&str) -> anyhow::Result<()>,
) -> anyhow::Result<ExitCode> {
    let address = admin.address;
    let token = if wasmcm::needs_token(path) {
        wasmcm::check_token_destination(address)?;
        let file = admin
            .admin_token_file
            .clone()
            .or_else(default_admin_token_file)
            .context("no admin token file: give --admin-token-file (no $HOME to find the default in)")?;
        Some(wasmcm::admin_token(&file, false)?)
    } else {
        None
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
    let (status, body) = runtime.block_on(wasmcm::admin_request(address, method, path, token.as_deref()))?;
    if !(200..300).contains(&status) {
        anyhow::bail!("{address}{path}: {status}: {}", body.trim());
    }
    show(&body)?;
    Ok(ExitCode::SUCCESS)
}

/// A plugin by built-in name or by path.
fn load_plugin(engine: &Engine, spec: &str, limits: Limits) -> anyhow::Result<Plugin> {
    let path = Path::new(spec);
    if path.exists() || spec.ends_with(".wasm") {
        return Ok(engine.load_file(path, limits)?);
    }
    match builtin::get(spec) {
        Some(bytes) => Ok(engine.load(&format!("built-in plugin {spec}"), bytes, limits)?),
        None => anyhow::bail!(
            "unknown plugin {spec:?}: not a file, and not a built-in (built-ins: {})",
            builtin::names().collect::<Vec<_>>().join(", ")
        ),
    }
}

/// `$<xdg>/wasmcm`, else `~/<home_dir>/wasmcm`.
fn xdg_dir(xdg: &str, home_dir: &str) -> Option<PathBuf> {
    let base = std::env::var_os(xdg)
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(home_dir)))?;
    Some(base.join("wasmcm"))
}

fn default_admin_token_file() -> Option<PathBuf> {
    Some(xdg_dir("XDG_CONFIG_HOME", ".config")?.join("admin-token"))
}

fn default_cache_dir() -> Option<PathBuf> {
    xdg_dir("XDG_CACHE_HOME", ".cache")
}

fn run_cluster(args: ClusterArgs) -> anyhow::Result<ExitCode> {
    use wasmcm_apiserver::{Cluster, ClusterConfig, FaultConfig, KubeletConfig};
    let clock = wasmcm_core::clock::Clock::from_env().map_err(anyhow::Error::msg)?;
    let config = ClusterConfig {
        clock,
        bind: std::net::SocketAddr::new(args.address, args.port),
        insecure_http: args.insecure_http,
        kubeconfig: args.kubeconfig,
        kubelet: KubeletConfig {
            nodes: args.nodes,
            start_delay: Duration::from_millis(args.pod_start_delay_ms),
            ..KubeletConfig::default()
        },
        faults: FaultConfig {
            write_error_rate: args.fault_write_error_rate.clamp(0.0, 1.0),
            latency: Duration::from_millis(args.fault_latency_ms),
            watch_drop_interval: args.fault_watch_drop_seconds.map(Duration::from_secs),
            compact_interval: args.fault_compact_seconds.map(Duration::from_secs),
            watch_delay: Duration::from_millis(args.fault_watch_delay_ms),
            ..FaultConfig::default()
        },
        ..ClusterConfig::default()
    };
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let cluster = Cluster::start(config).await?;
        println!("wasmcm cluster serving at {}", cluster.url);
        println!("kubeconfig: {}", cluster.kubeconfig.display());
        println!("try: export KUBECONFIG={} && {} get nodes", cluster.kubeconfig.display(), kubectl_for_try());
        tokio::signal::ctrl_c().await?;
        cluster.shutdown().await;
        Ok(ExitCode::SUCCESS)
    })
}

/// The kubectl a `try:` line names, so it can be pasted as it is: the pinned one `make run`
/// installs (scripts/install-kubectl.sh, as the tests use) in the checkout this binary was built
/// from, or in $WASMCM_TOOLS_DIR as the script does; else the PATH's.
fn kubectl_for_try() -> String {
    let tools = std::env::var_os("WASMCM_TOOLS_DIR")
        .map(PathBuf::from)
        .or_else(|| wasmcm::scaffold::checkout().map(|c| c.join("target/tools")));
    match tools.map(|t| t.join("kubectl")).filter(|k| k.is_file()) {
        Some(k)
            if k.to_str().is_some_and(|s| s.bytes().all(|b| b.is_ascii_alphanumeric() || b"/._-+".contains(&b))) =>
        {
            k.display().to_string()
        }
        Some(k) => format!("'{}'", k.display().to_string().replace('\'', r"'\''")),
        None => "kubectl".into(),
    }
}

/// Ctrl-C, or SIGTERM (what the kubelet sends a pod's container to stop it).
async fn stop_signal() -> std::io::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r,
        _ = term.recv() => {
            tracing::info!("SIGTERM: shutting down");
            Ok(())
        }
    }
}

/// The namespace of a host run outside a pod whose kubeconfig context names none (and of one
/// on its embedded cluster): the namespace deploy/manifests runs it in.
const DEFAULT_HOST_NAMESPACE: &str = "wasmcm";

/// The namespace this host runs in and protects: the pod's in a pod (`flag` must agree);
/// outside one `flag`, else the namespace the kubeconfig context names, else
/// [`DEFAULT_HOST_NAMESPACE`]. A host always has one, so that no plugin acts in it unasked.
/// A context naming `default` counts as naming none: that is where users' workloads live (and
/// what kubeconfigs often spell out), which a host must not withhold from its plugins by
/// accident; `--namespace default` says so on purpose.
fn host_namespace(flag: Option<&str>, kubeconfig: Option<&Path>, context: Option<&str>) -> anyhow::Result<String> {
    if let Some(pod) = pod_namespace() {
        if let Some(flag) = flag.filter(|f| *f != pod) {
            anyhow::bail!("--namespace {flag:?}: this host runs in a pod of namespace {pod:?}, which is its namespace");
        }
        return Ok(pod);
    }
    let namespace = match (flag, kubeconfig) {
        (Some(flag), _) => flag.to_string(),
        (None, Some(path)) => {
            let kc =
                kube::config::Kubeconfig::read_from(path).with_context(|| format!("reading {}", path.display()))?;
            context_namespace(&kc, context)
                .filter(|ns| ns != "default")
                .unwrap_or_else(|| DEFAULT_HOST_NAMESPACE.into())
        }
        (None, None) => DEFAULT_HOST_NAMESPACE.into(),
    };
    if let Some(why) = wasmcm_core::validation::dns1123_label(&namespace).first() {
        anyhow::bail!("--namespace {namespace:?} is not a namespace name: {why}");
    }
    Ok(namespace)
}

/// The namespace the kubeconfig's context `context` (else its current context) names, if any.
fn context_namespace(kc: &kube::config::Kubeconfig, context: Option<&str>) -> Option<String> {
    let name = context.map(String::from).or_else(|| kc.current_context.clone())?;
    let named = kc.contexts.iter().find(|c| c.name == name)?;
    named.context.as_ref()?.namespace.clone().filter(|ns| !ns.is_empty())
}

/// The namespace of the pod this host runs in, if it runs in one.
fn pod_namespace() -> Option<String> {
    std::env::var("POD_NAMESPACE")
        .ok()
        .or_else(|| std::fs::read_to_string(wasmcm::service_account_dir().join("namespace")).ok())
        .map(|s| s.trim().to_string())
        .filter(|s| !s.is_empty())
}

/// The cluster of `kubeconfig` (its `context`), else in-cluster credentials in a pod; `None`
/// when neither is given.
async fn cluster_config(kubeconfig: Option<&PathBuf>, context: Option<String>) -> anyhow::Result<Option<kube::Config>> {
    if let Some(path) = kubeconfig {
        let kc = kube::config::Kubeconfig::read_from(path).with_context(|| format!("reading {}", path.display()))?;
        let opts = kube::config::KubeConfigOptions { context, ..Default::default() };
        return Ok(Some(kube::Config::from_custom_kubeconfig(kc, &opts).await?));
    }
    if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
        let dir = wasmcm::service_account_dir();
        let config = wasmcm::in_cluster_config(&dir)
            .with_context(|| format!("in-cluster credentials from {}", dir.display()))?;
        return Ok(Some(config));
    }
    Ok(None)
}

fn show_shards(args: ShardsArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let config = cluster_config(args.kubeconfig.as_ref(), args.context.clone())
            .await?
            .context("no cluster: give --kubeconfig (or run in a pod)")?;
        let client = kube::Client::try_from(config)?;
        let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
            kube::Api::namespaced(client, &args.namespace);
        let selector = format!("{}={}", wasmcm::SHARD_GROUP_LABEL, args.name);
        let list = leases
            .list(&kube::api::ListParams::default().labels(&selector))
            .await
            .with_context(|| format!("listing Leases {selector} in {}", args.namespace))?;
        let anchor = leases
            .get_opt(&args.name)
            .await
            .with_context(|| format!("reading the Lease {}/{}", args.namespace, args.name))?;
        if list.items.is_empty() && anchor.is_none() {
            anyhow::bail!(
                "no Lease {} and no Leases {selector} in namespace {}: is a wasmcm group running there?",
                args.name,
                args.namespace
            );
        }
        print!("{}", wasmcm::describe_shards(&args.name, anchor.as_ref(), &list.items, jiff::Timestamp::now()));
        Ok(ExitCode::SUCCESS)
    })
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

fn run_host(engine: &Engine, args: RunArgs) -> anyhow::Result<ExitCode> {
    use wasmcm::ClientRate;
    use wasmcm::ControllerConfig;
    use wasmcm::LeaderConfig;
    use wasmcm::{Host, HostConfig};
    use wasmcm_apiserver::{Cluster, ClusterConfig};
    // The cluster's clock (WASMCM_CLOCK: a test clock runs faster), the embedded cluster's too.
    let clock = wasmcm_core::clock::Clock::from_env().map_err(anyhow::Error::msg)?;
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let (cluster, config) = match cluster_config(args.kubeconfig.as_ref(), args.context.clone()).await? {
            Some(config) => (None, config),
            None => {
                let cluster = Cluster::start(ClusterConfig { clock, ..ClusterConfig::default() }).await?;
                let kc = kube::config::Kubeconfig::read_from(&cluster.kubeconfig)?;
                let config = kube::Config::from_custom_kubeconfig(kc, &Default::default()).await?;
                println!("embedded cluster at {}", cluster.url);
                let k = kubectl_for_try();
                println!(
                    "try: export KUBECONFIG={} && {k} create deployment web --image=nginx:1 --replicas=3 && {k} rollout \
                     status deployment/web && {k} get pods",
                    cluster.kubeconfig.display()
                );
                (Some(cluster), config)
            }
        };
        let client = kube::Client::try_from(config.clone())?;
        let namespace = host_namespace(args.namespace.as_deref(), args.kubeconfig.as_deref(), args.context.as_deref())?;
        tracing::info!("the host's namespace: {namespace}");
        if cluster.is_some() {
            // The embedded cluster starts with the system namespaces only; the host's is made
            // so that what is said of it (plugin ConfigMaps, the grant) means something there.
            let namespaces: kube::Api<k8s_openapi::api::core::v1::Namespace> = kube::Api::all(client.clone());
            let object = serde_json::from_value(serde_json::json!({"metadata": {"name": namespace}}))?;
            if let Err(e) = namespaces.create(&kube::api::PostParams::default(), &object).await
                && !matches!(&e, kube::Error::Api(s) if s.code == 409)
            {
                tracing::warn!("creating the host's namespace {namespace} on the embedded cluster: {e}");
            }
        }
        let trust = wasmcm::Trust {
            namespace: namespace.clone(),
            configmap_namespaces: args.plugin_configmap_namespaces.clone(),
            require_pins: args.require_pins,
        };
        let (versions, failures) = wasmcm::load_all(engine, &args.plugins, &trust, Some(&client)).await;
        for f in &failures {
            tracing::error!("not loaded: {f}");
        }
        if args.strict && !failures.is_empty() {
            anyhow::bail!("--strict: {} failed to load:\n  {}", failures.len(), failures.join("\n  "));
        }
        if versions.is_empty() {
            anyhow::bail!("no plugin to run: every one is disabled or failed to load");
        }
        let names: Vec<String> = versions.iter().map(|v| v.name().to_string()).collect();
        let identity = wasmcm::default_identity();
        let lease = LeaderConfig {
            lease_duration: Duration::from_secs(args.leader_elect_lease_duration),
            renew_deadline: Duration::from_secs(args.leader_elect_renew_deadline),
            retry_period: Duration::from_secs(args.leader_elect_retry_period),
            ..LeaderConfig::new(&args.leader_elect_resource_namespace, &args.leader_elect_resource_name, &identity)
        };
        check_lease_timing(&lease)?;
        let sharded = args.shards > 0;
        let leader = (args.leader_elect && !sharded).then(|| lease.clone());
        let shards = sharded.then_some(wasmcm::ShardConfig { count: args.shards, lease });
        let host_config = HostConfig {
            controller: ControllerConfig {
                workers: args.workers,
                resync: Some(Duration::from_secs(args.resync_period)).filter(|d| !d.is_zero()),
                strict: args.strict,
                // Protected whether or not this host elects or shards: another replica may.
                host: wasmcm::HostIdentity {
                    namespace: Some(namespace),
                    lease: Some((args.leader_elect_resource_namespace.clone(), args.leader_elect_resource_name.clone())),
                },
                clock,
                ..ControllerConfig::default()
            },
            client_rate: ClientRate { qps: args.kube_api_qps, burst: args.kube_api_burst },
            leader,
            shards,
        };
        let metrics = std::sync::Arc::new(wasmcm::Metrics::default());
        let (ready, ready_rx) = tokio::sync::watch::channel(false);
        let (plugins, plugins_rx) = tokio::sync::watch::channel(Vec::new());
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
        let (standing, standing_rx) = tokio::sync::watch::channel(wasmcm::Agreement::Unknown);
        let admin = wasmcm::Admin {
            metrics: metrics.clone(),
            ready: ready_rx,
            plugins: plugins_rx,
            token,
            standing: standing_rx,
        };
        let bound = wasmcm::serve_admin(args.metrics_bind_address, admin)
            .await
            .with_context(|| format!("serving metrics on {}", args.metrics_bind_address))?;
        println!("metrics: http://{bound}/metrics");
        let host = Host::start(config, versions, host_config, metrics).await?;
        plugins.send_replace(host.controllers().to_vec());
        let mut group = host.standing();
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
            client: Some(client),
            trust,
            paths: args.plugins.clone(),
            controllers: host.controllers().to_vec(),
        }
        .spawn()?;
        ready.send_replace(true);
        println!("wasmcm running: {} (Ctrl-C to stop)", names.join(", "));
        let mut leading = host.leading();
        let lost = async {
            let _ = leading.wait_for(|l| *l).await;
            let _ = leading.wait_for(|l| !*l).await;
        };
        // Like kube-controller-manager, a host that loses its lease exits at once: its fence
        // already refuses every write, so reconciles in flight have nothing left to finish, and
        // its restart rejoins as a standby with fresh state.
        tokio::select! {
            r = stop_signal() => r?,
            _ = lost => {
                tracing::error!("leadership lost; exiting");
                std::process::exit(1);
            }
        };
        reloader.abort();
        // Stop taking work, let reconciles in flight finish, release the lease; a reconcile
        // stuck past the grace period is abandoned (its key is retried by the next leader).
        let grace = Duration::from_secs(args.shutdown_grace_period);
        if tokio::time::timeout(grace, host.shutdown()).await.is_err() {
            tracing::warn!("reconciles still running after the {grace:?} grace period; exiting without waiting");
        }
        if let Some(c) = cluster {
            c.shutdown().await;
        }
        Ok(ExitCode::SUCCESS)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outside_a_pod_the_host_namespace_is_the_flag_else_the_contexts_else_wasmcm() {
        let kubeconfig = |current: &str| -> kube::config::Kubeconfig {
            serde_json::from_value(serde_json::json!({
                "current-context": current,
                "contexts": [
                    {"name": "plain", "context": {"cluster": "c", "user": "u"}},
                    {"name": "team", "context": {"cluster": "c", "user": "u", "namespace": "team-a"}},
                    {"name": "default", "context": {"cluster": "c", "user": "u", "namespace": "default"}},
                ],
            }))
            .unwrap()
        };
        assert_eq!(context_namespace(&kubeconfig("team"), None).as_deref(), Some("team-a"));
        assert_eq!(context_namespace(&kubeconfig("plain"), None), None);
        assert_eq!(context_namespace(&kubeconfig("plain"), Some("team")).as_deref(), Some("team-a"));
        assert_eq!(context_namespace(&kubeconfig("missing"), None), None);

        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("kubeconfig");
        std::fs::write(&path, serde_json::to_string(&kubeconfig("team")).unwrap()).unwrap();
        // These run outside a pod (no POD_NAMESPACE, no service-account namespace file).
        if pod_namespace().is_none() {
            assert_eq!(host_namespace(None, Some(&path), None).unwrap(), "team-a");
            assert_eq!(host_namespace(None, Some(&path), Some("plain")).unwrap(), DEFAULT_HOST_NAMESPACE);
            assert_eq!(host_namespace(None, Some(&path), Some("default")).unwrap(), DEFAULT_HOST_NAMESPACE);
            assert_eq!(host_namespace(Some("default"), Some(&path), None).unwrap(), "default");
            assert_eq!(host_namespace(Some("mine"), Some(&path), None).unwrap(), "mine");
            assert_eq!(host_namespace(None, None, None).unwrap(), "wasmcm");
            let e = host_namespace(Some("Not_A_Namespace"), None, None).unwrap_err().to_string();
            assert!(e.starts_with("--namespace \"Not_A_Namespace\" is not a namespace name"), "{e}");
        }
    }
}
