//! The `wasmcm` binary: parses the command line, sets up logging and hands the command to its
//! module in `cli/` (the binary's own; the library holds the host).

mod cli;

use std::process::ExitCode;

use clap::{Parser, Subcommand};
use wasmcm::terminal_safe_lines;

#[cfg(feature = "embedded-cluster")]
use cli::cluster;
use cli::{help, new, plugins, run, shards, simulate, version};

/// wasmcm — a WebAssembly controller manager for Kubernetes.
#[derive(Parser)]
#[command(version, about, after_help = help::TOP)]
struct Cli {
    #[command(flatten)]
    engine: cli::EngineArgs,

    /// Log format: human-readable text, or one JSON object per line.
    #[arg(long, global = true, help_heading = cli::GLOBAL, env = "WASMCM_LOG_FORMAT", default_value = "text", value_parser = ["text", "json"])]
    log_format: String,

    /// What to log: a level for wasmcm's own logs (error, warn, info, debug, trace; other crates
    /// stay at warn), or directives as RUST_LOG takes them (`warn,wasmcm::writes=debug`).
    /// Default: $RUST_LOG, else `warn,wasmcm=info`.
    #[arg(long, global = true, help_heading = cli::GLOBAL, value_name = "LEVEL|DIRECTIVES", value_parser = log_filter)]
    log_level: Option<String>,

    /// More of wasmcm's own logs: -v for debug, -vv for trace (--log-level wins).
    #[arg(short, long, global = true, help_heading = cli::GLOBAL, action = clap::ArgAction::Count)]
    verbose: u8,

    #[command(subcommand)]
    command: Option<Command>,
}

// One value per process, parsed once: its size does not matter.
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Run the controller host with the built-in plugins (the default command): against the
    /// cluster of --kubeconfig, in-cluster credentials when running in a pod
    /// (KUBERNETES_SERVICE_HOST/KUBERNETES_SERVICE_PORT, and the ServiceAccount's token, ca.crt and
    /// namespace files in $WASMCM_SERVICEACCOUNT_DIR, default
    /// /var/run/secrets/kubernetes.io/serviceaccount), or else a new embedded cluster.
    #[command(after_help = help::RUN)]
    #[cfg_attr(
        not(feature = "embedded-cluster"),
        command(
            about = "Run the controller host with the built-in plugins (the default command): against the cluster of \
                     --kubeconfig, or in-cluster credentials when running in a pod (this build has no embedded cluster)",
            long_about = None
        )
    )]
    Run(run::RunArgs),
    /// Run one reconcile of one key against a snapshot and print the writes and the result.
    #[command(after_help = help::SIMULATE)]
    Simulate(simulate::SimulateArgs),
    /// Start the embedded Kubernetes API server with simulated nodes, and keep it running.
    #[cfg(feature = "embedded-cluster")]
    #[command(after_help = help::CLUSTER)]
    Cluster(cluster::ClusterArgs),
    /// Not in this build, which has no embedded cluster: says so.
    #[cfg(not(feature = "embedded-cluster"))]
    #[command(hide = true)]
    Cluster {
        #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
        args: Vec<String>,
    },
    /// Inspect plugin files, or list and steer the plugins of a running host.
    #[command(subcommand, after_help = help::PLUGINS)]
    Plugins(plugins::PluginsCommand),
    /// The replica group as its Leases tell it: its shape (one leader, or N shards), which
    /// replica holds which shard, the live members, and any replica run in another shape.
    #[command(after_help = help::SHARDS)]
    Shards(shards::ShardsArgs),
    /// Create a standalone plugin crate to start from: describe(), a reconcile skeleton with
    /// unit tests, a simulate snapshot, a plugin manifest and, for a custom kind, its CRD.
    #[command(after_help = help::NEW)]
    New(new::NewArgs),
    /// This wasmcm's version and the plugin contracts it runs.
    #[command(after_help = help::VERSION)]
    Version(version::VersionArgs),
    /// A shell's completion script: `source <(wasmcm completion bash)`, or save it where the
    /// shell loads completions from (bash, zsh, fish, elvish, powershell).
    #[command(after_help = help::COMPLETION)]
    Completion { shell: clap_complete::Shell },
}

/// Whether `command` only prints what it computes locally (to a reader that may stop early).
fn prints_for_a_pipe(command: &Command) -> bool {
    use plugins::PluginsCommand;
    matches!(
        command,
        Command::Simulate(_)
            | Command::New(_)
            | Command::Version(_)
            | Command::Completion { .. }
            | Command::Plugins(PluginsCommand::Inspect(_))
    )
}

/// The filter for wasmcm's own logs at `level`: others' at WARN, but not kube-client's ERROR
/// line for each request that got no answer ("failed with error client error (Connect)"),
/// which the host reports itself with the cause (the probe behind `/readyz`, the informers).
fn at_level(level: &str) -> String {
    format!("warn,wasmcm={level},kube_client::client::builder=off")
}

/// `--log-level`'s value as a filter: a bare level is wasmcm's own, anything else directives.
fn log_filter(value: &str) -> Result<String, String> {
    let directives = match value {
        "error" | "warn" | "info" | "debug" | "trace" => at_level(value),
        _ => value.to_string(),
    };
    tracing_subscriber::EnvFilter::try_new(&directives)
        .map_err(|e| format!("{e} (a level or RUST_LOG's directives)"))?;
    Ok(directives)
}

fn main() -> ExitCode {
    let mut cli = Cli::parse();
    let directives = match (&cli.log_level, cli.verbose) {
        (Some(d), _) => d.clone(),
        (None, 0) => std::env::var("RUST_LOG").ok().filter(|d| !d.is_empty()).unwrap_or_else(|| at_level("info")),
        (None, 1) => at_level("debug"),
        (None, _) => at_level("trace"),
    };
    let filter = tracing_subscriber::EnvFilter::try_new(&directives).unwrap_or_else(|e| {
        eprintln!("warning: RUST_LOG={directives:?} is not a filter ({e}); logging at wasmcm's defaults");
        at_level("info").into()
    });
    if cli.log_format == "json" {
        tracing_subscriber::fmt().json().with_env_filter(filter).with_writer(std::io::stderr).init();
    } else {
        // Colour only for a person at a terminal: never in a file, a pipe or `kubectl logs`.
        use std::io::IsTerminal;
        let ansi = std::io::stderr().is_terminal() && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
        tracing_subscriber::fmt().with_ansi(ansi).with_env_filter(filter).with_writer(std::io::stderr).init();
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
    if prints_for_a_pipe(&command) {
        // Rust ignores SIGPIPE, so `wasmcm plugins inspect x.wasm | head` panicked on the closed
        // pipe; a command that only prints ends quietly then, as any Unix tool. The host and
        // the commands that talk to one keep ignoring it: a peer closing a socket is an error
        // to handle, never a reason to die.
        // SAFETY: setting a signal's disposition to its default, before any thread starts.
        unsafe { libc::signal(libc::SIGPIPE, libc::SIG_DFL) };
    }
    match command {
        #[cfg(feature = "embedded-cluster")]
        Command::Cluster(args) => cluster::cluster(args),
        #[cfg(not(feature = "embedded-cluster"))]
        Command::Cluster { .. } => anyhow::bail!(
            "this wasmcm was built without an embedded cluster (cargo feature embedded-cluster): run the host on a \
             cluster with `wasmcm run --kubeconfig <file>`, or in a pod"
        ),
        Command::Shards(args) => shards::shards(args),
        Command::New(args) => new::new(args),
        Command::Version(args) => version::version(args),
        Command::Completion { shell } => {
            use clap::CommandFactory;
            clap_complete::generate(shell, &mut Cli::command(), "wasmcm", &mut std::io::stdout());
            Ok(ExitCode::SUCCESS)
        }
        Command::Run(args) => {
            let pulled = cli.engine.pulled_dir();
            run::run(&cli.engine.engine(true)?, args, pulled)
        }
        Command::Simulate(args) => simulate::simulate(&cli.engine.engine(false)?, args),
        Command::Plugins(command) => plugins::plugins(&cli.engine.engine(false)?, command),
    }
}
