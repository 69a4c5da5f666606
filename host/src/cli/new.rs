//! `wasmcm new`: a standalone plugin crate to start from (`wasmcm::scaffold`).

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;

#[derive(Args)]
pub(crate) struct NewArgs {
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

pub(crate) fn new(args: NewArgs) -> anyhow::Result<ExitCode> {
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
    Ok(ExitCode::SUCCESS)
}
