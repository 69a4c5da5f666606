//! `wasmcm version`: what this binary is, for a bug report or a script: its version, the plugin
//! contracts it runs, the built-in plugins it carries and whether it has an embedded cluster.
//! Owns this report only; `--version` (clap's) prints the first line alone.

use std::process::ExitCode;

use clap::Args;

#[derive(Args)]
pub(crate) struct VersionArgs {
    /// Output format: text, or one JSON object.
    #[arg(short, long, default_value = "text", value_parser = ["text", "json"])]
    output: String,
}

pub(crate) fn version(args: VersionArgs) -> anyhow::Result<ExitCode> {
    let builtins: Vec<&str> = wasmcm::builtin::names().collect();
    let embedded = cfg!(feature = "embedded-cluster");
    if args.output == "json" {
        let report = serde_json::json!({
            "version": env!("CARGO_PKG_VERSION"),
            "contracts": wasmcm::CONTRACTS,
            "builtins": builtins,
            "embeddedCluster": embedded,
        });
        println!("{report}");
    } else {
        println!("wasmcm {}", env!("CARGO_PKG_VERSION"));
        println!("plugin contracts: {}", wasmcm::CONTRACTS.map(|v| format!("wasmcm:reconciler@{v}")).join(", "));
        println!("built-in plugins: {}", builtins.join(", "));
        println!("embedded cluster: {}", if embedded { "yes" } else { "no (this build runs on a cluster only)" });
    }
    Ok(ExitCode::SUCCESS)
}
