//! One call into a plugin: a fresh instance in a store of its own ([`CallState`]) under the
//! plugin's deadline (epoch ticks) and memory limit, its linear memory and the host's copies of
//! what it reads charged to the engine's memory budget, and its failure classified
//! ([`CallError`], [`TrapReason`]; a trap in a WASI stub named by `stubs`).
//!
//! It owns the store and what it counts; the imports a call may use are `cache_view`'s and
//! `log`'s, the outcome's caps `plugin`'s.

use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use wasmcm_guest::{Cache, Kind};
use wasmtime::{ResourceLimiter, Store, Trap};

use super::budget::MemoryBudget;
use super::config::EPOCH_TICK;
use super::load::TABLES_PER_CALL;
use super::plugin::{Instance, MAX_OUTCOME_INTENTS, MAX_OUTCOME_TEXT, Plugin, Pre};
use super::wit::wit;

/// Why a call trapped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrapReason {
    Deadline,
    Memory,
    StackOverflow,
    /// An access outside linear memory; with Rust guests usually a shadow-stack overflow.
    OutOfBounds,
    Panic,
    Capability,
    /// A WASI function the sandbox stubs out (a clock, randomness, files) was called: see
    /// `stubs`.
    Sandbox,
    /// The call returned more than the host accepts from one outcome.
    Outcome,
    /// The call read more than the host hands out to one call, or asked with an oversized
    /// selector.
    Reads,
    Other,
}

impl fmt::Display for TrapReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TrapReason::Deadline => "deadline",
            TrapReason::Memory => "memory",
            TrapReason::StackOverflow => "stack overflow",
            TrapReason::OutOfBounds => "out of bounds",
            TrapReason::Panic => "panic",
            TrapReason::Capability => "capability",
            TrapReason::Sandbox => "sandbox",
            TrapReason::Outcome => "outcome too large",
            TrapReason::Reads => "reads too large",
            TrapReason::Other => "trap",
        })
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("plugin {plugin} {version} trapped ({reason}): {detail}{}", panic.as_ref().map(|p| format!("; guest {p}")).unwrap_or_default())]
    Trap { plugin: String, version: String, reason: TrapReason, detail: String, panic: Option<String> },
    #[error("plugin {plugin} {version} failed: {message}{}", if *retryable { "" } else { " (retrying cannot help)" })]
    Plugin { plugin: String, version: String, message: String, retryable: bool },
    #[error("plugin {plugin} {version}: no instance could be started: {reason}")]
    Instantiate { plugin: String, version: String, reason: String },
}

impl CallError {
    /// Whether the same key may succeed later. Deadlines and instance shortages may pass;
    /// a plugin's own verdict is its to give; other traps are retried with backoff too, since
    /// the cached objects they read may change.
    pub fn retryable(&self) -> bool {
        match self {
            CallError::Plugin { retryable, .. } => *retryable,
            _ => true,
        }
    }
}

/// A capability the plugin did not declare; returned from a host import, it traps the call.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct CapabilityViolation(pub(super) String);

/// The store's data for one call.
pub(super) struct CallState {
    pub(super) cache: Arc<dyn Cache + Send + Sync>,
    pub(super) readable: Arc<HashSet<Kind>>,
    pub(super) plugin: Arc<str>,
    pub(super) key: String,
    pub(super) memory_limit: usize,
    pub(super) memory_exceeded: Option<usize>,
    /// Shared by every call; `reserved` is this call's linear memory in it, `copy` the host's
    /// copy of what its last read returned.
    pub(super) budget: Arc<MemoryBudget>,
    pub(super) reserved: usize,
    pub(super) copy: usize,
    /// Why the budget refused this call memory (growth, or a read's copy).
    pub(super) budget_refused: Option<String>,
    pub(super) violation: Option<String>,
    /// Why a read was refused: too many objects or bytes, or an oversized selector.
    pub(super) read_limit: Option<String>,
    /// Bytes of objects handed to this call so far.
    pub(super) read_bytes: usize,
    pub(super) panic: Option<String>,
    /// Log lines and bytes this call has written, and whether it has been told the rest are
    /// dropped.
    pub(super) logged: (usize, usize, bool),
}

impl ResourceLimiter for CallState {
    fn memory_growing(&mut self, current: usize, desired: usize, _max: Option<usize>) -> wasmtime::Result<bool> {
        if desired > self.memory_limit {
            self.memory_exceeded = Some(desired);
            // Trap rather than let `memory.grow` return -1: allocators abort on it anyway,
            // and a trap says why.
            return Err(wasmtime::format_err!(
                "memory limit of {} exceeded (growing to {})",
                mib(self.memory_limit),
                mib(desired)
            ));
        }
        let more = desired.saturating_sub(current);
        if !self.budget.try_take(more) {
            // Growth that fails while a read is handed over is the copy's doing as much as
            // the others'.
            let copy = match self.copy {
                0 => String::new(),
                bytes => format!(", beside the host's {} copy of what this call read", size(bytes)),
            };
            let why = format!(
                "the host's memory budget for plugin calls ({}) is held by other calls (growing to {}{copy})",
                mib(self.budget.total()),
                mib(desired)
            );
            self.budget_refused = Some(why.clone());
            return Err(wasmtime::Error::msg(why));
        }
        self.reserved += more;
        Ok(true)
    }

    fn table_growing(&mut self, _current: usize, desired: usize, _max: Option<usize>) -> wasmtime::Result<bool> {
        Ok(desired <= 100_000)
    }
}

/// Whether wasmtime refused to copy the call's result out of the guest for exceeding
/// `MAX_COPY_OUT`. wasmtime exports no type for it, only the message. Raised once the guest has
/// returned, it carries no wasm backtrace; refused import arguments, raised inside the guest,
/// do, and stay `Other`.
fn result_copy_refused(err: &wasmtime::Error) -> bool {
    format!("{err:#}").contains("fuel allocated for hostcalls has been exhausted")
        && err.downcast_ref::<wasmtime::WasmBacktrace>().is_none()
}

pub(super) fn mib(bytes: usize) -> String {
    format!("{} MiB", bytes >> 20)
}

/// `bytes` in MiB, or KiB below one MiB.
pub(super) fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 { mib(bytes) } else { format!("{} KiB", bytes.div_ceil(1 << 10)) }
}

impl Drop for CallState {
    fn drop(&mut self) {
        self.budget.give_back(self.reserved + self.copy);
    }
}

/// Host memory wasmtime may allocate for what it copies out of a plugin in one go: a call's
/// result, or the arguments of one import call (its "hostcall fuel", counted in the host's
/// representation). wasmtime's default, made explicit: far above the largest outcome the caps
/// accept, so those caps decide up to here and this decides past it.
const MAX_COPY_OUT: usize = 128 << 20;
const _: () = assert!(
    MAX_OUTCOME_TEXT + MAX_OUTCOME_INTENTS * (size_of::<wit::Intent>() + size_of::<Vec<wit::Intent>>()) < MAX_COPY_OUT
);

impl Plugin {
    pub(super) fn call<R>(
        &self,
        cache: Arc<dyn Cache + Send + Sync>,
        key: &str,
        f: impl FnOnce(&Instance, &mut Store<CallState>) -> wasmtime::Result<R>,
    ) -> Result<R, CallError> {
        let state = CallState {
            cache,
            readable: self.readable.clone(),
            plugin: Arc::from(self.info.name.as_str()),
            key: key.to_string(),
            memory_limit: self.limits.memory_bytes,
            memory_exceeded: None,
            budget: self.budget.clone(),
            reserved: 0,
            copy: 0,
            budget_refused: None,
            violation: None,
            read_limit: None,
            read_bytes: 0,
            panic: None,
            logged: (0, 0, false),
        };
        let mut store = Store::new(&self.engine, state);
        store.limiter(|s| s);
        store.set_hostcall_fuel(MAX_COPY_OUT);
        let ticks = self.limits.deadline.as_micros().div_ceil(EPOCH_TICK.as_micros()).max(1);
        store.set_epoch_deadline(u64::try_from(ticks).unwrap_or(u64::MAX));
        store.epoch_deadline_trap();

        let instance = match &self.pre {
            Pre::V4(pre) => pre.instantiate(&mut store).map(Instance::V4),
            Pre::V3(pre) => pre.instantiate(&mut store).map(Instance::V3),
        };
        let instance = instance.map_err(|e| {
            let state = store.data();
            if state.memory_exceeded.is_some() || state.budget_refused.is_some() {
                self.trap(state, TrapReason::Memory, format!("{e:#}"))
            } else {
                let mut reason = format!("{e:#}");
                if e.downcast_ref::<wasmtime::PoolConcurrencyLimitError>().is_some() {
                    let slots = self.max_concurrent_calls;
                    reason = format!(
                        "{reason}: the host's instance pool is full: it holds {slots} plugin calls at once, over \
                         every plugin's workers and shadow candidates, with {} tables and {slots} linear memories \
                         between them; the call is retried",
                        slots * TABLES_PER_CALL
                    );
                }
                CallError::Instantiate { plugin: self.info.name.clone(), version: self.info.version.clone(), reason }
            }
        })?;
        f(&instance, &mut store).map_err(|e| self.classify(store.data(), e))
    }

    fn classify(&self, state: &CallState, err: wasmtime::Error) -> CallError {
        let (reason, detail) = if let Some(why) = &state.read_limit {
            (TrapReason::Reads, why.clone())
        } else if let Some(v) = &state.violation {
            (TrapReason::Capability, v.clone())
        } else if let Some(why) = &state.budget_refused {
            (TrapReason::Memory, why.clone())
        } else if let Some(wanted) = state.memory_exceeded {
            (
                TrapReason::Memory,
                format!("memory limit of {} exceeded (growing to {})", mib(state.memory_limit), mib(wanted)),
            )
        } else {
            match err.downcast_ref::<Trap>() {
                Some(Trap::Interrupt) => {
                    (TrapReason::Deadline, format!("deadline of {:?} exceeded", self.limits.deadline))
                }
                Some(Trap::StackOverflow) => (TrapReason::StackOverflow, "call stack exhausted".into()),
                Some(Trap::UnreachableCodeReached) if state.panic.is_some() => {
                    (TrapReason::Panic, "wasm `unreachable` executed after a panic".into())
                }
                Some(Trap::UnreachableCodeReached) if stubbed_call(&err).is_some() => {
                    (TrapReason::Sandbox, stubbed_call(&err).unwrap_or_default())
                }
                Some(Trap::MemoryOutOfBounds) => (
                    TrapReason::OutOfBounds,
                    "out of bounds memory access (a guest stack overflow ends this way)".into(),
                ),
                Some(trap) => (TrapReason::Other, trap.to_string()),
                None if result_copy_refused(&err) => (
                    TrapReason::Outcome,
                    format!("the result needs more than the {} the host copies out of one call", mib(MAX_COPY_OUT)),
                ),
                None => (TrapReason::Other, format!("{err:#}")),
            }
        };
        tracing::debug!(plugin = %self.info.name, "trap: {err:?}");
        self.trap(state, reason, detail)
    }

    fn trap(&self, state: &CallState, reason: TrapReason, detail: String) -> CallError {
        CallError::Trap {
            plugin: self.info.name.clone(),
            version: self.info.version.clone(),
            reason,
            detail,
            panic: state.panic.clone(),
        }
    }
}

/// What a trap in one of the sandbox's WASI stubs was: see `stubs`.
fn stubbed_call(err: &wasmtime::Error) -> Option<String> {
    let backtrace = err.downcast_ref::<wasmtime::WasmBacktrace>()?;
    let frames: Vec<String> = backtrace
        .frames()
        .iter()
        .map(|f| {
            let function = f.func_name().map_or_else(|| format!("<wasm function {}>", f.func_index()), str::to_string);
            format!("{}!{function}", f.module().name().unwrap_or("<unknown>"))
        })
        .collect();
    super::stubs::stubbed_call(&frames)
}
