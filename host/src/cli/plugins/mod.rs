//! `wasmcm plugins`: plugin files inspected offline (`inspect`), the RBAC a plugin needs
//! (`rbac`), published to a registry (`push`), and the plugins of a running host, through its admin endpoint: listed (`list`),
//! steered (`promote`, `abandon`) and recorded (`record`).

mod inspect;
mod list;
mod push;
mod rbac;
mod record;

use std::process::ExitCode;

use clap::{Args, Subcommand};
use wasmcm::Engine;

use super::{AdminArgs, admin_call, print_body};

#[derive(Subcommand)]
pub(crate) enum PluginsCommand {
    /// The plugins of a running host: versions, digests, states (live, shadow, previous,
    /// failed) and counters (with the admin token: they quote what plugins wrote).
    #[command(after_help = super::help::PLUGINS_LIST)]
    List(list::ListArgs),
    /// Load plugin files offline and print what each declares, imports, its digest and size.
    #[command(after_help = super::help::PLUGINS_INSPECT)]
    Inspect(inspect::InspectArgs),
    /// Publish a built plugin to an OCI registry (a WebAssembly artifact), for a Plugin's
    /// `source: {oci: ...}`; prints the reference pinned by digest.
    #[command(after_help = super::help::PLUGINS_PUSH)]
    Push(push::PushArgs),
    /// Promote a plugin's shadow candidate now.
    #[command(after_help = super::help::PLUGINS_PROMOTE)]
    Promote(ShadowArgs),
    /// Drop a plugin's shadow candidate.
    #[command(after_help = super::help::PLUGINS_ABANDON)]
    Abandon(ShadowArgs),
    /// Print the RBAC a plugin needs to run in-cluster as its own ServiceAccount, from what it
    /// declares: that account and a ClusterRole for exactly the kinds it writes (a Role and
    /// RoleBinding in each namespace instead, when its manifest entry's scope lists
    /// namespaces), the host's reads of the kinds it caches, and the host's right to
    /// impersonate it. Kinds are resolved by the cluster's discovery: apply a custom kind's CRD
    /// first. Pipe it to `kubectl apply -f -`, and name the account as the plugin's
    /// `serviceAccount`.
    #[command(after_help = super::help::PLUGINS_RBAC)]
    Rbac(rbac::RbacArgs),
    /// Reconcile one key on a running host now and save what the plugin read, was asked and
    /// returned: a recording `wasmcm simulate --state <file> --expect <file>` replays.
    #[command(after_help = super::help::PLUGINS_RECORD)]
    Record(record::RecordArgs),
}

#[derive(Args)]
pub(crate) struct ShadowArgs {
    name: String,
    #[command(flatten)]
    admin: AdminArgs,
}

pub(crate) fn plugins(engine: &Engine, command: PluginsCommand) -> anyhow::Result<ExitCode> {
    match command {
        PluginsCommand::Inspect(args) => inspect::inspect(engine, args),
        PluginsCommand::Rbac(args) => rbac::rbac(engine, args),
        PluginsCommand::Push(args) => push::push(engine, args),
        PluginsCommand::List(args) => list::list(args),
        PluginsCommand::Promote(ShadowArgs { name, admin }) => {
            admin_call(&admin, hyper::Method::POST, &format!("/plugins/{name}/promote"), print_body)
        }
        PluginsCommand::Abandon(ShadowArgs { name, admin }) => {
            admin_call(&admin, hyper::Method::POST, &format!("/plugins/{name}/abandon"), print_body)
        }
        PluginsCommand::Record(args) => record::record(args),
    }
}
