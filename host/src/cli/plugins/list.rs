//! `wasmcm plugins list`: the plugins of a running host through its admin endpoint, a line per
//! version; or, with `--kubeconfig`, the Plugin objects of a cluster with what every replica
//! wrote in their status (RBAC on plugins, no admin token).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use serde_json::Value;
use wasmcm::terminal_safe;

use crate::cli::{AdminArgs, admin_call, cluster_config};

#[derive(Args)]
pub(crate) struct ListArgs {
    #[command(flatten)]
    admin: AdminArgs,
    /// Read the Plugin objects of this kubeconfig's cluster (their status, a line per replica)
    /// instead of asking one host.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// The kubeconfig context to use.
    #[arg(long, requires = "kubeconfig")]
    context: Option<String>,
}

pub(crate) fn list(args: ListArgs) -> anyhow::Result<ExitCode> {
    match &args.kubeconfig {
        Some(kubeconfig) => objects(kubeconfig, args.context),
        None => admin(&args.admin),
    }
}

/// Every Plugin object: its summary, then each replica's entry.
fn objects(kubeconfig: &PathBuf, context: Option<String>) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new()?;
    let items = runtime.block_on(async {
        let config = cluster_config(Some(kubeconfig), context).await?.context("no cluster")?;
        let client = kube::Client::try_from(config)?;
        let api: kube::Api<kube::api::DynamicObject> = kube::Api::all_with(client, &wasmcm::plugin_resource());
        let list = api.list(&Default::default()).await.context("listing Plugin objects (is the CRD installed?)")?;
        anyhow::Ok(list.items)
    })?;
    println!("{:<16} {:<10} {:<12} {:<14} {:<6} REPLICAS", "NAME", "VERSION", "STATE", "DIGEST", "READY");
    for item in &items {
        // Status is what hosts wrote (and what plugins declared): shown, never obeyed.
        let status = &item.data["status"];
        let text = |v: &Value, k: &str| terminal_safe(v[k].as_str().unwrap_or("")).into_owned();
        let short = |v: &Value| text(v, "digest").trim_start_matches("sha256:").chars().take(12).collect::<String>();
        let replicas: Vec<&Value> = status["replicas"].as_array().map(|r| r.iter().collect()).unwrap_or_default();
        println!(
            "{:<16} {:<10} {:<12} {:<14} {:<6} {}",
            terminal_safe(item.metadata.name.as_deref().unwrap_or("")),
            text(status, "version"),
            text(status, "state"),
            short(status),
            text(status, "ready"),
            replicas.len()
        );
        for r in replicas {
            let counters: Vec<String> = ["reconciles", "failures"]
                .iter()
                .filter_map(|k| r[*k].as_u64().map(|n| format!("{k}={n}")))
                .chain(r["since"].as_str().map(|s| format!("since={}", terminal_safe(s))))
                .chain(r["reason"].as_str().map(|s| terminal_safe(s).into_owned()))
                .collect();
            println!(
                "  {:<30} {:<10} {:<12} {:<14} {}",
                text(r, "identity"),
                text(r, "version"),
                text(r, "state"),
                short(r),
                counters.join(" ")
            );
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn admin(admin: &AdminArgs) -> anyhow::Result<ExitCode> {
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
