//! Kubernetes helpers shared by wasmcm's embedded API server (`wasmcm-apiserver`), its host
//! (`wasmcm`) and its guest SDK (`wasmcm-guest`), as kube-core is for kube-rs: kinds, label
//! selectors, shards (sharded list and watch), the Leases of a replica group, access to objects
//! held as JSON, name formats, generated names, resource quantities, the Pod Security Standards
//! and the API error `Status`, the two forms of an Event, cron schedules, and the cluster's
//! (possibly sped-up) clock.
//!
//! Plain functions and types: no I/O, no clock (but [`now_rfc3339`] and [`clock::Clock`], which
//! guests never call), no randomness (callers supply it), so it also compiles for the guests'
//! wasm32 target.

pub mod clock;
pub mod cron;
mod error;
pub mod event;
pub mod group;
mod kind;
pub mod names;
mod object;
pub mod pod_security;
pub mod quantity;
mod selector;
mod shard;
pub mod validation;

pub use error::{ApiError, Cause, Details};
pub use kind::Kind;
pub use object::{key, meta_mut, spec_part, str_at};
pub use selector::{Operator, Requirement, Selector};
pub use shard::{ShardField, ShardRange, ShardSelector, shard_hash, shard_of, shard_start};

/// The current time in whole seconds, RFC 3339, as the API server stamps objects.
pub fn now_rfc3339() -> String {
    let now = jiff::Timestamp::now();
    jiff::Timestamp::from_second(now.as_second()).unwrap_or(now).to_string()
}
