use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand};
use wasmcm::plugins::{Engine, EngineConfig, Limits, Plugin};
use wasmcm::{builtin, simulate};
use wasmcm_guest::Instant;

/// wasmcm — a WebAssembly controller manager for Kubernetes.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// Where compiled plugins are kept between runs [default: $XDG_CACHE_HOME/wasmcm or ~/.cache/wasmcm].
    #[arg(long, global = true, env = "WASMCM_CACHE_DIR")]
    cache_dir: Option<PathBuf>,

    /// Compile plugins on every start instead of keeping them.
    #[arg(long, global = true)]
    no_cache: bool,

    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one reconcile of one key against a snapshot and print the writes and the result.
    Simulate(SimulateArgs),
    /// Load plugins and print what each declares.
    Describe {
        /// Built-in plugin names or .wasm files [default: every built-in].
        plugins: Vec<String>,
    },
}

#[derive(Args)]
struct SimulateArgs {
    /// A built-in plugin name (replicaset) or a path to a .wasm component.
    #[arg(long)]
    plugin: String,
    /// The cluster state: a Kubernetes List (JSON or YAML) or multi-document YAML.
    #[arg(long)]
    state: PathBuf,
    /// The object to reconcile, <namespace>/<name>.
    #[arg(long)]
    key: String,
    /// The time the plugin sees, RFC 3339 [default: now].
    #[arg(long)]
    now: Option<String>,
    #[command(flatten)]
    limits: LimitArgs,
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
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn,wasmcm=info".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            eprintln!("error: {e:#}");
            ExitCode::from(2)
        }
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let precompiled_dir = if cli.no_cache { None } else { cli.cache_dir.or_else(default_cache_dir) };
    let engine = Engine::new(&EngineConfig { precompiled_dir, ..EngineConfig::default() })?;
    match cli.command {
        Command::Simulate(args) => {
            let plugin = load_plugin(&engine, &args.plugin, args.limits.limits())?;
            let now = match &args.now {
                Some(t) => Instant::parse_rfc3339(t).map_err(anyhow::Error::msg).context("--now")?,
                None => Instant::from_timestamp(jiff::Timestamp::now()),
            };
            let state_name = args.state.display().to_string();
            let text = std::fs::read_to_string(&args.state).with_context(|| format!("{state_name}: cannot read"))?;
            match simulate::simulate(&plugin, &state_name, &text, &args.key, now) {
                Ok(out) => {
                    println!("{}", serde_json::to_string_pretty(&out)?);
                    Ok(ExitCode::SUCCESS)
                }
                Err(e) => {
                    eprintln!("error: {e}");
                    Ok(ExitCode::from(e.exit_code() as u8))
                }
            }
        }
        Command::Describe { plugins } => {
            let names: Vec<String> =
                if plugins.is_empty() { builtin::names().map(String::from).collect() } else { plugins };
            for name in names {
                let p = load_plugin(&engine, &name, Limits::default())?;
                let i = p.info();
                let kinds = |ks: &[wasmcm_guest::Kind]| ks.iter().map(|k| k.to_string()).collect::<Vec<_>>().join(", ");
                println!("{} {} (contract {}, sha256 {})", i.name, i.version, i.contract, p.digest());
                println!(
                    "  primary: {}\n  owns:    {}\n  watches: {}\n  writes:  {}",
                    i.primary,
                    kinds(&i.owns),
                    kinds(&i.watches),
                    kinds(&i.writes)
                );
            }
            Ok(ExitCode::SUCCESS)
        }
    }
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

fn default_cache_dir() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("wasmcm"))
}
