//! `wasmcm plugins record`: one reconcile on a running host, recorded for `wasmcm simulate`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use wasmcm::{terminal_safe, terminal_safe_json};

use crate::cli::{AdminArgs, admin_call};

#[derive(Args)]
pub(crate) struct RecordArgs {
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
}

pub(crate) fn record(args: RecordArgs) -> anyhow::Result<ExitCode> {
    let RecordArgs { plugin, key, output, timeout, admin } = args;
    let query: String = form_urlencoded::Serializer::new(String::new())
        .append_pair("key", &key)
        .append_pair("timeout", &timeout.to_string())
        .finish();
    admin_call(&admin, hyper::Method::POST, &format!("/plugins/{plugin}/record?{query}"), |body| {
        let recording = wasmcm::record::Recording::from_json(&serde_json::from_str(body)?)
            .map_err(|e| anyhow::anyhow!("the host answered a broken recording: {e}"))?;
        let r = &recording.plugin;
        let what = format!("{} {} (sha256 {}) reconciling {key}: {}", r.name, r.version, r.digest, recording.summary());
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
