//! The commands of the `wasmcm` binary, a module each (`run`, `simulate`, `cluster`, `plugins`,
//! `shards`, `new`), each command's arguments beside the function that runs it, and what several
//! share: the engine's flags, calls to a running host's admin endpoint and where its token lives,
//! the cluster a command talks to, a plugin by name or file, the kubectl a `try:` line names, the
//! signals that stop a long-running command.
//!
//! It belongs to the binary (`main.rs` declares it; the library does not): it uses the
//! library's public surface only, and holds argument handling and printing, no logic of the
//! host's own.

#[cfg(feature = "embedded-cluster")]
pub(crate) mod cluster;
pub(crate) mod help;
pub(crate) mod new;
pub(crate) mod plugins;
pub(crate) mod run;
pub(crate) mod shards;
pub(crate) mod simulate;
pub(crate) mod version;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use wasmcm::{Engine, EngineConfig, Limits, Plugin, builtin, terminal_safe_lines};

/// The heading of the flags every command takes, apart from each command's own.
pub(crate) const GLOBAL: &str = "Global options";

// The flags every command takes: the engine plugins run on.
#[derive(Args)]
pub(crate) struct EngineArgs {
    /// Where compiled plugins are kept between runs [default: $XDG_CACHE_HOME/wasmcm or ~/.cache/wasmcm].
    #[arg(long, global = true, help_heading = GLOBAL, env = "WASMCM_CACHE_DIR")]
    cache_dir: Option<PathBuf>,

    /// The key that authenticates the compiled plugins, created on first use; outside the
    /// cache directory [default: <cache-dir>.key].
    #[arg(long, global = true, help_heading = GLOBAL, env = "WASMCM_PRECOMPILED_KEY")]
    precompiled_key: Option<PathBuf>,

    /// Memory all plugin calls may hold at once (their linear memory, and the host's copies of
    /// what they read), e.g. 512Mi [default: half the container's memory limit; without one,
    /// each call is bounded by its plugin's limit only].
    #[arg(long, global = true, help_heading = GLOBAL, env = "WASMCM_PLUGIN_MEMORY_BUDGET")]
    plugin_memory_budget: Option<String>,

    /// Compile plugins on every start instead of keeping them.
    #[arg(long, global = true, help_heading = GLOBAL)]
    no_cache: bool,
}

impl EngineArgs {
    /// Where plugins pulled from registries are kept, by digest: `oci/` of the cache directory.
    pub(crate) fn pulled_dir(&self) -> Option<PathBuf> {
        if self.no_cache { None } else { self.cache_dir.clone().or_else(default_cache_dir).map(|d| d.join("oci")) }
    }

    /// The engine plugins run on; `run` says what memory budget their calls share.
    pub(crate) fn engine(self, announce_budget: bool) -> anyhow::Result<Engine> {
        let precompiled_dir = if self.no_cache { None } else { self.cache_dir.or_else(default_cache_dir) };
        let memory_budget = match &self.plugin_memory_budget {
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
            _ if !announce_budget => {}
            Some(b) => tracing::info!("plugin calls share a memory budget of {} MiB", b >> 20),
            None => tracing::info!("no container memory limit: each plugin call is bounded by its plugin's limit only"),
        }
        Engine::new(&EngineConfig {
            precompiled_dir,
            precompiled_key: self.precompiled_key,
            memory_budget,
            ..EngineConfig::default()
        })
    }
}

#[derive(Args)]
pub(crate) struct AdminArgs {
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

/// A host's text answer (which quotes plugins), shown, never obeyed.
/// A duration flag as kube-controller-manager takes one (Go's syntax: `15s`, `2m`, `1h30m`), or
/// whole seconds, as wasmcm took them before.
pub(crate) fn duration(value: &str) -> Result<std::time::Duration, String> {
    if let Ok(seconds) = value.parse::<u64>() {
        return Ok(std::time::Duration::from_secs(seconds));
    }
    let nanos = wasmcm_core::cron::parse_go_duration(value)?;
    u64::try_from(nanos).map(std::time::Duration::from_nanos).map_err(|_| format!("{value:?} is negative"))
}

pub(crate) fn print_body(body: &str) -> anyhow::Result<()> {
    print!("{}", terminal_safe_lines(body));
    Ok(())
}

/// One call to a running host's admin endpoint; a non-2xx answer is an error carrying its body.
/// The admin token goes with the calls that need it only, and only to a loopback address
/// (refused before the token file is even read).
pub(crate) fn admin_call(
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
pub(crate) fn load_plugin(engine: &Engine, spec: &str, limits: Limits) -> anyhow::Result<Plugin> {
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

pub(crate) fn default_admin_token_file() -> Option<PathBuf> {
    Some(xdg_dir("XDG_CONFIG_HOME", ".config")?.join("admin-token"))
}

fn default_cache_dir() -> Option<PathBuf> {
    xdg_dir("XDG_CACHE_HOME", ".cache")
}

/// The cluster of `kubeconfig` (its `context`), else in-cluster credentials in a pod; `None`
/// when neither is given.
pub(crate) async fn cluster_config(
    kubeconfig: Option<&PathBuf>,
    context: Option<String>,
) -> anyhow::Result<Option<kube::Config>> {
    if let Some(path) = kubeconfig {
        let kc = kube::config::Kubeconfig::read_from(path).with_context(|| format!("reading {}", path.display()))?;
        let opts = kube::config::KubeConfigOptions { context, ..Default::default() };
        return Ok(Some(kube::Config::from_custom_kubeconfig(kc, &opts).await?));
    }
    // A developer's ambient cluster (production, perhaps) is never where a bare `wasmcm run` or
    // `make run` starts controllers; kubectl and controller-runtime read it, so say it was not.
    if let Some(ambient) = std::env::var_os("KUBECONFIG").filter(|v| !v.is_empty()) {
        tracing::warn!(
            "$KUBECONFIG ({}) is not read: give --kubeconfig (or WASMCM_KUBECONFIG) to use its cluster",
            PathBuf::from(ambient).display()
        );
    }
    if std::env::var_os("KUBERNETES_SERVICE_HOST").is_some() {
        let dir = wasmcm::service_account_dir();
        let config = wasmcm::in_cluster_config(&dir)
            .with_context(|| format!("in-cluster credentials from {}", dir.display()))?;
        return Ok(Some(config));
    }
    Ok(None)
}

#[cfg(feature = "embedded-cluster")]
/// The kubectl a `try:` line names, so it can be pasted as it is: the pinned one `make run`
/// installs (scripts/install-kubectl.sh, as the tests use) in the checkout this binary was built
/// from, or in $WASMCM_TOOLS_DIR as the script does; else the PATH's.
pub(crate) fn kubectl_for_try() -> String {
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

/// Ctrl-C, or SIGTERM (what the kubelet sends a pod's container to stop it), caught from the
/// moment it is made, and kept until [`StopSignal::received`] is awaited; before that, either
/// kills the process as the default disposition does (but as a container's PID 1, which the
/// kernel sends no signal it does not handle).
pub(crate) struct StopSignal {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl StopSignal {
    pub(crate) fn listen() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        Ok(StopSignal { interrupt: signal(SignalKind::interrupt())?, terminate: signal(SignalKind::terminate())? })
    }

    pub(crate) async fn received(&mut self) {
        tokio::select! {
            _ = self.interrupt.recv() => {}
            _ = self.terminate.recv() => tracing::info!("SIGTERM: shutting down"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    #[test]
    fn durations_take_gos_syntax_and_whole_seconds() {
        assert_eq!(super::duration("15"), Ok(Duration::from_secs(15)));
        assert_eq!(super::duration("15s"), Ok(Duration::from_secs(15)));
        assert_eq!(super::duration("1m30s"), Ok(Duration::from_secs(90)));
        assert_eq!(super::duration("1.5h"), Ok(Duration::from_secs(5400)));
        assert_eq!(super::duration("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(super::duration("0"), Ok(Duration::ZERO));
        assert_eq!(super::duration("15x"), Err("time: unknown unit \"x\" in duration \"15x\"".into()));
        assert_eq!(super::duration("-2s"), Err("\"-2s\" is negative".into()));
    }
}
