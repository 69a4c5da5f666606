//! wasmcm, the host: loads controller plugins (WebAssembly components), feeds them a
//! read-only view of the cluster, and performs the writes they ask for.
//!
//! Its modules stack: each imports only those below it.
//!
//! - `ops`: serving metrics, health and the admin endpoint.
//! - `runtime`: informers, work queues, one controller per plugin, leader election, shards, the
//!   host.
//! - [`simulate`]: one reconcile offline, on the API server's own write path; [`rbac`]: the RBAC
//!   a plugin needs; [`scaffold`]: `wasmcm new`, a standalone plugin crate to start from.
//! - [`record`]: one live reconcile's reads, request and outcome, which `simulate` replays.
//! - `lifecycle`: which plugin versions run, from where, and how one replaces another.
//! - `writes`: checking an outcome's intents, performing them, and the expectations they raise.
//! - `engine`: compiling and calling components in a sandbox; the built-in plugins.
//! - `client`: the API clients and the fence on their writes, in-cluster credentials,
//!   discovery, rate limits.
//! - `metrics`, `key`, `outcome`, `terminal`: the metrics every layer records into, the key a
//!   controller reconciles, an outcome as JSON (and where two differ), what a plugin or the
//!   cluster said made safe to print.
//!
//! The binary (`main.rs` and `cli/`, a module per command) sits on top. The modules are
//! private; what the binary, the tests and the benchmarks use is re-exported here.

// Items not re-exported here are `pub(crate)`, and this keeps it so.
#![warn(unreachable_pub)]

mod client;
mod engine;
mod key;
mod lifecycle;
mod metrics;
mod ops;
mod outcome;
pub mod rbac;
pub mod record;
mod runtime;
pub mod scaffold;
pub mod simulate;
mod terminal;
mod writes;

pub use client::credentials::{host_namespace, in_cluster_config, service_account_dir};
pub use client::discovery::Discovery;
pub use client::fence::Fence;
pub use client::reach::{Reach, probe_api_server};
pub use engine::{
    CONTRACTS, CallError, Engine, EngineConfig, Limits, LoadError, Plugin, TrapReason, builtin, container_memory_budget,
};
pub use lifecycle::failures::LoadFailures;
pub use lifecycle::loader::{LoadFailure, Loaded, Reason, Trust, Version, configmap_bytes, load_all, load_plugins};
pub use lifecycle::manifest::{PluginSpec, Source, resolve_plugins};
pub use lifecycle::objects::{PLUGIN_CRD, PluginObjects, plugin_resource};
pub use lifecycle::oci::{Registries, push_plugin};
pub use lifecycle::reload::{HotSwap, PluginSet, Reloader};
pub use lifecycle::rollout::{Rollout, RolloutStatus};
pub use metrics::Metrics;
pub use ops::admin::{Admin, admin_request, admin_token, check_token_destination, needs_token, serve_admin};
pub use ops::approvals::act_on_decisions;
pub use ops::status::StatusWriter;
pub use runtime::controller::{ControllerConfig, PluginController};
pub use runtime::group::Agreement;
pub use runtime::host::{Host, HostConfig, Mode};
pub use runtime::informers::{Change, Informers, PluginCache, SyncStatus};
pub use runtime::leader::{LeaderConfig, default_identity};
pub use runtime::plugins::Plugins;
pub use runtime::queue::RateLimit;
pub use runtime::shards::{SHARD_GROUP_LABEL, SHARD_ROLE_LABEL, ShardConfig, assign_shards, describe_shards};
pub use terminal::{terminal_safe, terminal_safe_json, terminal_safe_lines};
pub use writes::kube::{ClientRate, KubeApi};
pub use writes::scope::{HostIdentity, Scope, ServiceAccounts};
pub use writes::writer::{Report, WriteApi, write_outcome};
