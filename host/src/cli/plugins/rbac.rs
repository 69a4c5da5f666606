//! `wasmcm plugins rbac`: the ServiceAccount, roles and bindings a plugin needs to run as its
//! own account, from what it declares and its manifest entry, its kinds resolved by the
//! cluster's discovery.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use clap::Args;
use wasmcm::{Engine, Limits, terminal_safe};

use crate::cli::{cluster_config, load_plugin};

#[derive(Args)]
pub(crate) struct RbacArgs {
    /// A built-in plugin's name or a .wasm file.
    plugin: String,
    /// Plugin manifests (a file or a directory, as `run --plugins`) holding the plugin's
    /// entry, by its name or its file: its scope and serviceAccount apply [default: the
    /// built-in default manifest].
    #[arg(long, value_delimiter = ',')]
    plugins: Vec<PathBuf>,
    /// The namespace the host runs in.
    #[arg(long, default_value = "wasmcm")]
    namespace: String,
    /// The plugin's ServiceAccount [default: wasmcm-<plugin's name>].
    #[arg(long)]
    service_account: Option<String>,
    /// The host's ServiceAccount, in the same namespace.
    #[arg(long, default_value = "wasmcm")]
    host_service_account: String,
    /// The cluster's kubeconfig (else in-cluster credentials).
    #[arg(long, env = "WASMCM_KUBECONFIG")]
    kubeconfig: Option<PathBuf>,
    #[arg(long, env = "WASMCM_CONTEXT")]
    context: Option<String>,
}

pub(crate) fn rbac(engine: &Engine, args: RbacArgs) -> anyhow::Result<ExitCode> {
    let RbacArgs { plugin, plugins, namespace, service_account, host_service_account, kubeconfig, context } = args;
    let p = load_plugin(engine, &plugin, Limits::default())?;
    let info = p.info().clone();
    let (specs, errors) = wasmcm::resolve_plugins(&plugins, &namespace);
    if let Some(e) = errors.first() {
        anyhow::bail!("{e}");
    }
    let file = Path::new(&plugin).canonicalize().ok();
    let entry = specs.into_iter().find(|s| {
        s.name == info.name
            || matches!(&s.source, wasmcm::Source::File(f) if file.is_some() && f.canonicalize().ok() == file)
    });
    if entry.is_none() && !plugins.is_empty() {
        anyhow::bail!("no entry for plugin {} (by name or file) in the manifests of --plugins", info.name);
    }
    let service_account = service_account
        .or_else(|| entry.as_ref()?.service_account.as_ref().map(|(_, name)| name.clone()))
        .unwrap_or_else(|| format!("wasmcm-{}", info.name));
    let writes_in = entry.and_then(|e| e.scope.namespaces);
    let who = wasmcm::rbac::Identities { namespace, service_account, host_service_account, writes_in };
    let runtime = tokio::runtime::Runtime::new()?;
    let discovery = runtime.block_on(async {
        let config = cluster_config(kubeconfig.as_ref(), context)
            .await?
            .context("no cluster to resolve the plugin's kinds: give --kubeconfig (or run in a pod)")?;
        anyhow::Ok(wasmcm::Discovery::new(kube::Client::try_from(config)?))
    })?;
    // Discovery asks the cluster once per kind, however often the rules name it.
    let objects = wasmcm::rbac::plugin_rbac(&info, &who, |kind| runtime.block_on(discovery.resolve(kind)))
        .map_err(|e| anyhow::anyhow!("plugin {}: {e}", info.name))?;
    println!(
        "# RBAC for plugin {} {}: name it in its manifest entry as `serviceAccount: {}`.",
        terminal_safe(&info.name),
        terminal_safe(&info.version),
        terminal_safe(&who.service_account)
    );
    print!("{}", serde_saphyr::to_string_multiple(&objects)?);
    Ok(ExitCode::SUCCESS)
}
