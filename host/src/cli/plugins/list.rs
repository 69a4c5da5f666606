//! `wasmcm plugins list`: the plugins of a running host, a line per version.

use std::process::ExitCode;

use wasmcm::terminal_safe;

use crate::cli::{AdminArgs, admin_call};

pub(crate) fn list(admin: &AdminArgs) -> anyhow::Result<ExitCode> {
    admin_call(admin, hyper::Method::GET, "/plugins", |body| {
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
    })
}
