//! `wasmcm plugins push`: a built plugin published to an OCI registry as a WebAssembly
//! artifact, so a team's CI can ship one and a Plugin's `source.oci` can name it. The plugin
//! is loaded first, so what a registry receives is one the host can run.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use wasmcm::{Engine, Limits, Registries, terminal_safe};

#[derive(Args)]
pub(crate) struct PushArgs {
    /// The plugin's .wasm file.
    file: PathBuf,
    /// Where to push it: registry/repository:tag. Credentials are docker's
    /// ($DOCKER_CONFIG/config.json or ~/.docker/config.json, as `docker login` writes them).
    reference: String,
    /// Registries (host[:port]) spoken in plain HTTP besides loopback ones.
    #[arg(long, env = "WASMCM_INSECURE_REGISTRIES", value_delimiter = ',')]
    insecure_registries: Vec<String>,
}

pub(crate) fn push(engine: &Engine, args: PushArgs) -> anyhow::Result<ExitCode> {
    let plugin = engine.load_file(&args.file, Limits::default())?;
    let bytes = std::fs::read(&args.file)?;
    let registries = Registries { insecure: args.insecure_registries, ..Registries::default() };
    let runtime = tokio::runtime::Runtime::new()?;
    let digest = runtime.block_on(wasmcm::push_plugin(&registries, &bytes, &args.reference))?;
    let info = plugin.info();
    eprintln!(
        "pushed {} {} (component sha256 {}) as {digest}",
        terminal_safe(&info.name),
        terminal_safe(&info.version),
        plugin.digest()
    );
    // The pinned reference alone on stdout, for a script's `source: {oci: ...}`.
    println!("{}@{digest}", args.reference);
    Ok(ExitCode::SUCCESS)
}
