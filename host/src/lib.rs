//! wasmcm, the host: loads controller plugins (WebAssembly components), feeds them a
//! read-only view of the cluster, and performs the writes they ask for.

pub mod admin;
pub mod builtin;
pub mod controller;
pub mod expectations;
pub mod host;
pub mod informers;
pub mod kubeapi;
pub mod leader;
pub mod loader;
pub mod manifest;
pub mod metrics;
pub mod plugins;
pub mod queue;
pub mod reload;
pub mod rollout;
pub mod simulate;
pub mod writer;
