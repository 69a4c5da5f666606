//! `wasmcm plugins inspect`: plugin files loaded offline, and what each declares, imports, its
//! digest, size and load time.

use std::process::ExitCode;

use clap::Args;
use wasmcm::{Engine, Limits, builtin, terminal_safe};

use crate::cli::load_plugin;

#[derive(Args)]
pub(crate) struct InspectArgs {
    /// Built-in plugin names or .wasm files [default: every built-in].
    plugins: Vec<String>,
}

pub(crate) fn inspect(engine: &Engine, InspectArgs { plugins }: InspectArgs) -> anyhow::Result<ExitCode> {
    let names: Vec<String> = if plugins.is_empty() { builtin::names().map(String::from).collect() } else { plugins };
    for name in names {
        let p = load_plugin(engine, &name, Limits::default())?;
        let i = p.info();
        // All but the digest and the sizes are the plugin's own words.
        fn list<T: std::fmt::Display>(ts: &[T]) -> String {
            let shown: Vec<String> = ts.iter().map(|t| terminal_safe(&t.to_string()).into_owned()).collect();
            shown.join(", ")
        }
        let (name, version, contract) = (terminal_safe(&i.name), terminal_safe(&i.version), terminal_safe(&i.contract));
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
