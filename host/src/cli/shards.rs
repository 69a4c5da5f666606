//! `wasmcm shards`: the replica group as its Leases tell it.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;

use super::cluster_config;

#[derive(Args)]
pub(crate) struct ShardsArgs {
    /// The cluster's kubeconfig (else in-cluster credentials).
    #[arg(long, env = "WASMCM_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    #[arg(long, env = "WASMCM_CONTEXT")]
    context: Option<String>,
    /// The hosts' --leader-elect-resource-namespace.
    #[arg(long, env = "WASMCM_LEADER_ELECT_RESOURCE_NAMESPACE", default_value = "kube-system")]
    namespace: String,
    /// The hosts' --leader-elect-resource-name (the shard group's prefix).
    #[arg(long, env = "WASMCM_LEADER_ELECT_RESOURCE_NAME", default_value = "wasmcm")]
    name: String,
}

pub(crate) fn shards(args: ShardsArgs) -> anyhow::Result<ExitCode> {
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let config = cluster_config(args.kubeconfig.as_ref(), args.context.clone())
            .await?
            .context("no cluster: give --kubeconfig (or run in a pod)")?;
        let client = kube::Client::try_from(config)?;
        let leases: kube::Api<k8s_openapi::api::coordination::v1::Lease> =
            kube::Api::namespaced(client, &args.namespace);
        let selector = format!("{}={}", wasmcm::SHARD_GROUP_LABEL, args.name);
        let list = leases
            .list(&kube::api::ListParams::default().labels(&selector))
            .await
            .with_context(|| format!("listing Leases {selector} in {}", args.namespace))?;
        let anchor = leases
            .get_opt(&args.name)
            .await
            .with_context(|| format!("reading the Lease {}/{}", args.namespace, args.name))?;
        if list.items.is_empty() && anchor.is_none() {
            anyhow::bail!(
                "no Lease {} and no Leases {selector} in namespace {}: is a wasmcm group running there?",
                args.name,
                args.namespace
            );
        }
        print!("{}", wasmcm::describe_shards(&args.name, anchor.as_ref(), &list.items, jiff::Timestamp::now()));
        Ok(ExitCode::SUCCESS)
    })
}
