//! The plugin engine: compiles components (through the precompiled cache), links them against
//! the host's `cache` and `log` imports and nothing else, and runs each call in a fresh
//! instance under a deadline and a memory cap.
//!
//! It owns no cluster state and performs no writes: the cache view comes from the caller and
//! the outcome goes back to it unexecuted (see `writes`). [`builtin`] holds the components
//! shipped inside the binary. It speaks the contract of `wit/reconciler.wit` and, through
//! `compat`, the frozen 0.3.0 one, so plugins built against either load; any other version is
//! refused naming the versions.
//!
//! One module per concept, behind this façade:
//!
//! - `config`: [`Limits`] (one call) and [`EngineConfig`] (every call);
//! - `load`: the [`Engine`] and loading, import and contract checks, [`LoadError`];
//! - `plugin`: a loaded [`Plugin`], its reconcile and the caps on its outcome;
//! - `call`: one call's store, its limits and budget, [`CallError`] and [`TrapReason`];
//! - `cache_view` and `log`: the imports a call may use;
//! - `wit`: the WIT bindings and their conversions; `compat`: contract 0.3.0's, lifted into them;
//! - `budget`, `precompiled`: the memory budget shared by all calls, compiled plugins on disk;
//! - `stubs`: what a trap in a WASI stub of a Python or JavaScript component was calling.

mod budget;
pub mod builtin;
mod cache_view;
mod call;
mod compat;
mod config;
mod load;
mod log;
mod plugin;
mod precompiled;
mod stubs;
mod wit;

pub use budget::container_memory_budget;
pub(crate) use cache_view::{MAX_LIST_BYTES, MAX_LIST_OBJECTS};
pub use call::{CallError, TrapReason};
pub use config::{EngineConfig, Limits};
pub use load::{CONTRACTS, Engine, LoadError};
pub use plugin::Plugin;
pub(crate) use precompiled::{euid, write_private};
