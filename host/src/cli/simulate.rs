//! `wasmcm simulate`: one reconcile of one key against a snapshot or a recording
//! (`wasmcm::simulate`), printed as JSON, and compared with an expected recording.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use clap::Args;
use wasmcm::{Engine, Limits, simulate, terminal_safe, terminal_safe_json, terminal_safe_lines};
use wasmcm_guest::Instant;

use super::load_plugin;

#[derive(Args)]
pub(crate) struct SimulateArgs {
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

/// `wasmcm simulate`: exit 0 done (and identical to `--expect`), 1 different from `--expect`,
/// 2 bad input, 3 the plugin failed.
pub(crate) fn simulate(engine: &Engine, args: SimulateArgs) -> anyhow::Result<ExitCode> {
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
