//! The guest side of the wasmcm contract (`wit/reconciler.wit`), as plain Rust.
//!
//! A controller implements [`Controller`] against the [`Cache`] trait. Natively (tests,
//! benchmarks) the cache is a [`MemoryCache`]; inside a component it is the host's cache
//! import, wired by [`export_plugin!`]. The types here mirror the WIT records one to one, so
//! controller logic never sees generated bindings.

// Lets the generated bindings name this crate the same way from inside and from plugins.
extern crate self as wasmcm_guest;

#[cfg(target_arch = "wasm32")]
pub mod arena;
pub mod cache;
#[cfg(target_arch = "wasm32")]
pub mod component;
pub mod conditions;
pub mod finalizer;
pub mod json;
pub mod ownership;
pub mod pod;
pub mod resource;
pub mod time;

pub use cache::{Cache, CacheExt, MemoryCache, Object, controller_uid};
pub use k8s_openapi;
pub use resource::Resource;
pub use time::Instant;
pub use wasmcm_core::{Kind, Operator, Requirement, Selector};

/// The contract version these types implement; the host refuses plugins built for an
/// incompatible one.
pub const CONTRACT_VERSION: &str = "0.3.0";

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ObjectRef {
    pub kind: Kind,
    pub namespace: String,
    pub name: String,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PluginInfo {
    pub name: String,
    pub version: String,
    pub primary: Kind,
    pub owns: Vec<Kind>,
    pub watches: Vec<Watch>,
    pub writes: Vec<Kind>,
    pub contract: String,
}

impl PluginInfo {
    /// The kinds of `watches`.
    pub fn watched_kinds(&self) -> impl Iterator<Item = &Kind> {
        self.watches.iter().map(|w| &w.kind)
    }
}

/// A kind read beyond the primary and owned ones, and which of its changes wake the primary
/// above an object of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Watch {
    pub kind: Kind,
    pub wake_on: Changes,
}

impl Watch {
    pub fn new(kind: Kind, wake_on: Changes) -> Self {
        Watch { kind, wake_on }
    }
}

impl std::fmt::Display for Watch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let on: Vec<&str> =
            [(self.wake_on.created, "created"), (self.wake_on.updated, "updated"), (self.wake_on.deleted, "deleted")]
                .into_iter()
                .filter_map(|(on, name)| on.then_some(name))
                .collect();
        match on.is_empty() {
            true => write!(f, "{} (wakes on nothing)", self.kind),
            false => write!(f, "{} (wakes on {})", self.kind, on.join(", ")),
        }
    }
}

/// Kinds of change, as the contract's `changes` flags.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    pub created: bool,
    pub updated: bool,
    pub deleted: bool,
}

impl Changes {
    pub const NONE: Changes = Changes { created: false, updated: false, deleted: false };
    pub const ALL: Changes = Changes { created: true, updated: true, deleted: true };
    pub const DELETED: Changes = Changes { created: false, updated: false, deleted: true };
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Request {
    pub namespace: String,
    pub name: String,
    pub now: Instant,
    pub previous_failure: Option<String>,
    /// The manifest's `settings`, a JSON object (`{}` when none).
    pub settings: String,
}

impl Request {
    /// A first attempt at `namespace/name` with no settings.
    pub fn new(namespace: &str, name: &str, now: Instant) -> Self {
        Request { namespace: namespace.into(), name: name.into(), now, previous_failure: None, settings: "{}".into() }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Intent {
    Create(String),
    Update(String),
    UpdateStatus(String),
    Delete(DeleteTarget),
    Event(Event),
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeleteTarget {
    pub target: ObjectRef,
    pub uid: Option<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventType {
    Normal,
    Warning,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Event {
    pub regarding: ObjectRef,
    pub event_type: EventType,
    pub reason: String,
    pub message: String,
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Outcome {
    pub batches: Vec<Vec<Intent>>,
    pub requeue_after_ms: Option<u64>,
}

impl Outcome {
    /// Adds a batch, skipping empty ones so the host sees only real steps.
    pub fn push_batch(&mut self, batch: Vec<Intent>) {
        if !batch.is_empty() {
            self.batches.push(batch);
        }
    }

    pub fn intents(&self) -> impl Iterator<Item = &Intent> {
        self.batches.iter().flatten()
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub message: String,
    pub retryable: bool,
}

impl Error {
    pub fn retryable(message: impl Into<String>) -> Self {
        Error { message: message.into(), retryable: true }
    }

    pub fn permanent(message: impl Into<String>) -> Self {
        Error { message: message.into(), retryable: false }
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Level {
    Trace,
    Debug,
    Info,
    Warn,
    Error,
}

/// A controller: pure logic over a cache view. Static, because a plugin instance lives for
/// exactly one call.
pub trait Controller {
    fn describe() -> PluginInfo;
    fn reconcile(request: &Request, cache: &dyn Cache) -> Result<Outcome, Error>;
}

/// Logs through the host when running as a component; natively, to stderr only for warnings
/// and errors so tests stay quiet.
pub fn log(level: Level, message: &str) {
    #[cfg(target_arch = "wasm32")]
    component::log(level, message);
    #[cfg(not(target_arch = "wasm32"))]
    if level >= Level::Warn {
        eprintln!("[{level:?}] {message}");
    }
}
