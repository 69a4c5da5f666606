//! An embedded Kubernetes-compatible API server with a simulated scheduler and kubelet: the
//! default cluster a newcomer's `make run` uses and wasmcm's test bed. It speaks the real HTTP
//! API (TLS, bearer tokens, RBAC, discovery, CRUD, subresources, patch, watch, protobuf
//! bodies), so kubectl and kube-rs work against it unchanged. The kubeconfig's admin token may
//! do anything; ServiceAccount tokens (TokenRequest) are held to the stored Roles and bindings,
//! so a controller can be run with the least privilege it will have in a real cluster.
//!
//! It owns its own state and loops and knows nothing of the controller host: the host talks to
//! it over HTTP, as to any cluster. Start one with [`Cluster::start`]; [`Offline`] applies
//! writes with the same rules without a server (what `wasmcm simulate` runs on).

#![warn(unreachable_pub)]

mod api;
mod audit;
mod auth;
mod bootstrap;
mod cluster;
mod controllers;
mod custom;
mod defaults;
mod endpoints;
mod ephemeral;
mod faults;
mod files;
mod json;
mod limits;
mod listener;
mod managed;
mod offline;
mod patch;
mod registry;
mod request_info;
mod runs;
mod schema;
mod state;
mod storage;
mod table;
mod tls;
mod tokens;
mod user;
mod validation;

pub use audit::{AuditLease, AuditRecord, LeaseState};
pub use cluster::{Cluster, ClusterConfig};
pub use controllers::kubelet::KubeletConfig;
pub use faults::{FaultConfig, FaultCounts};
pub use limits::ConnectionLimits;
pub use offline::Offline;
pub use storage::change::{EventType, StoredChange};
pub use wasmcm_core::ApiError;

pub(crate) use state::State;
