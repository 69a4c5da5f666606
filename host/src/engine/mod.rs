//! The plugin engine: compiles components (through the precompiled cache), links them against
//! the host's `cache` and `log` imports and nothing else, and runs each call in a fresh
//! instance under a deadline and a memory cap. It speaks the contract of `wit/reconciler.wit`
//! and, through [`compat`], the frozen 0.3.0 one, so plugins built against either load; any
//! other version is refused naming the versions.
//!
//! It owns no cluster state and performs no writes: the cache view comes from the caller and
//! the outcome goes back to it unexecuted (see `writes`). [`builtin`] holds the components
//! shipped inside the binary.

mod budget;
pub mod builtin;
mod compat;
mod precompiled;

use std::collections::{BTreeSet, HashSet};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmcm_guest::{CONTRACT_VERSION, Cache, Kind, MemoryCache, Operator, Requirement, Selector};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, InstanceAllocationStrategy, PoolingAllocationConfig, ResourceLimiter, Store, Trap};

pub(crate) use budget::MemoryBudget;
pub use budget::container_memory_budget;
pub(crate) use precompiled::{Precompiled, euid};

mod bindings {
    wasmtime::component::bindgen!({
        path: "../wit",
        world: "plugin",
        imports: { default: trappable },
    });
}

use bindings::exports::wasmcm::reconciler::controller as wit;
use bindings::wasmcm::reconciler::{cache as wit_cache, log as wit_log, types as wit_types};

/// The contracts this host implements, newest first: each plugin is called in the one it was
/// built for.
pub const CONTRACTS: [&str; 2] = [CONTRACT_VERSION, compat::CONTRACT_VERSION];

/// "0.4.0 and 0.3.0", for messages.
fn contracts_text() -> String {
    CONTRACTS.join(" and ")
}

/// How often the engine's epoch advances; deadlines are whole ticks.
const EPOCH_TICK: Duration = Duration::from_millis(5);

/// Per-plugin bounds on one call.
#[derive(Clone, Debug)]
pub struct Limits {
    /// Largest linear memory a call may grow to.
    pub memory_bytes: usize,
    /// Wall-clock budget of one call; a call still running then is interrupted.
    pub deadline: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Limits { memory_bytes: 256 << 20, deadline: Duration::from_secs(2) }
    }
}

/// Engine-wide settings.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// Calls that may run at once, over all plugins (pool slots).
    pub max_concurrent_calls: u32,
    /// The ceiling for any plugin's `Limits::memory_bytes`.
    pub max_memory_bytes: usize,
    /// Where compiled plugins are kept across runs; `None` compiles every time.
    pub precompiled_dir: Option<std::path::PathBuf>,
    /// The key that authenticates them, outside that directory; `<dir>.key` by default.
    pub precompiled_key: Option<std::path::PathBuf>,
    /// Linear memory all calls may hold at once; `None` bounds each call only.
    pub memory_budget: Option<usize>,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            max_concurrent_calls: 128,
            max_memory_bytes: 1 << 30,
            precompiled_dir: None,
            precompiled_key: None,
            memory_budget: None,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("{source_name}: cannot read: {error}")]
    Read { source_name: String, error: std::io::Error },
    #[error("{source_name}: not a valid WebAssembly component: {reason}")]
    NotAComponent { source_name: String, reason: String },
    #[error(
        "{source_name}: imports `{import}`, which the host does not provide (a plugin may import only \
         wasmcm:reconciler/cache, log and types)"
    )]
    ForbiddenImport { source_name: String, import: String },
    #[error("{source_name}: cannot be linked: {reason}")]
    Link { source_name: String, reason: String },
    #[error("{source_name}: describe() failed: {error}")]
    Describe { source_name: String, error: Box<CallError> },
    #[error(
        "{source_name}: plugin {name} was built for contract {contract}; this host implements contracts {}",
        contracts_text()
    )]
    Contract { source_name: String, name: String, contract: String },
    #[error(
        "{source_name}: built for contract {contract}; this host implements contracts {}: rebuild the plugin \
         against the wasmcm-guest crate of contract {CONTRACT_VERSION}",
        contracts_text()
    )]
    ContractInterface { source_name: String, contract: String },
    #[error("{source_name}: invalid plugin metadata: {reason}")]
    Metadata { source_name: String, reason: String },
}

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
struct CapabilityViolation(String);

/// The store's data for one call.
struct CallState {
    cache: Arc<dyn Cache + Send + Sync>,
    readable: Arc<HashSet<Kind>>,
    plugin: Arc<str>,
    key: String,
    memory_limit: usize,
    memory_exceeded: Option<usize>,
    /// Shared by every call; `reserved` is this call's linear memory in it, `copy` the host's
    /// copy of what its last read returned.
    budget: Arc<MemoryBudget>,
    reserved: usize,
    copy: usize,
    /// Why the budget refused this call memory (growth, or a read's copy).
    budget_refused: Option<String>,
    violation: Option<String>,
    /// Why a read was refused: too many objects or bytes, or an oversized selector.
    read_limit: Option<String>,
    /// Bytes of objects handed to this call so far.
    read_bytes: usize,
    panic: Option<String>,
    /// Log lines and bytes this call has written, and whether it has been told the rest are
    /// dropped.
    logged: (usize, usize, bool),
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

fn mib(bytes: usize) -> String {
    format!("{} MiB", bytes >> 20)
}

/// `bytes` in MiB, or KiB below one MiB.
fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 { mib(bytes) } else { format!("{} KiB", bytes.div_ceil(1 << 10)) }
}

impl Drop for CallState {
    fn drop(&mut self) {
        self.budget.give_back(self.reserved + self.copy);
    }
}

impl CallState {
    fn check_readable(&mut self, kind: Kind) -> wasmtime::Result<Kind> {
        if self.readable.contains(&kind) {
            return Ok(kind);
        }
        let msg = format!("read of {kind}, a kind the plugin did not declare");
        self.violation = Some(msg.clone());
        Err(CapabilityViolation(msg).into())
    }

    /// The host's copy of the last read's answer is gone: the guest, calling the host again,
    /// has been handed it (it lives on in linear memory, which is charged as it grows).
    fn copy_dropped(&mut self) {
        self.budget.give_back(std::mem::take(&mut self.copy));
    }

    /// Hands `objects` to the guest if they fit what one list and one call may read, and the
    /// host's memory budget: these copies are the host's memory until the guest has them.
    fn hand_out(&mut self, what: &str, objects: Vec<String>) -> wasmtime::Result<Vec<String>> {
        let bytes: usize = objects.iter().map(String::len).sum();
        self.read_bytes = self.read_bytes.saturating_add(bytes);
        let refused = if objects.len() > MAX_LIST_OBJECTS {
            Some(format!("{what} matched more than {MAX_LIST_OBJECTS} objects"))
        } else if bytes > MAX_LIST_BYTES {
            Some(format!("{what} matched more than {} of objects", mib(MAX_LIST_BYTES)))
        } else if self.read_bytes > MAX_CALL_READ_BYTES {
            Some(format!("the call read more than {} of objects", mib(MAX_CALL_READ_BYTES)))
        } else {
            None
        };
        if let Some(why) = refused {
            self.read_limit = Some(why.clone());
            return Err(CapabilityViolation(why).into());
        }
        // Overhead of a string beside its bytes (the guest's copy is charged as it grows).
        let copy = bytes + objects.len() * size_of::<String>();
        if !self.budget.try_take(copy) {
            let why = format!(
                "the host's memory budget for plugin calls ({}) cannot hold the {} {what} returned, beside what \
                 this and other calls hold",
                mib(self.budget.total()),
                size(copy)
            );
            self.budget_refused = Some(why.clone());
            return Err(CapabilityViolation(why).into());
        }
        self.copy = copy;
        Ok(objects)
    }

    /// Refuses a selector whose matching would cost more than any controller needs.
    fn check_selector(&mut self, selector: &Selector) -> wasmtime::Result<()> {
        let requirements = selector.match_labels.len() + selector.match_expressions.len();
        let values = selector.match_expressions.iter().map(|r| r.values.len()).max().unwrap_or(0);
        let why = if requirements > MAX_SELECTOR_REQUIREMENTS {
            format!("a selector of {requirements} requirements; at most {MAX_SELECTOR_REQUIREMENTS}")
        } else if values > MAX_SELECTOR_VALUES {
            format!("a selector requirement of {values} values; at most {MAX_SELECTOR_VALUES}")
        } else {
            return Ok(());
        };
        self.read_limit = Some(why.clone());
        Err(CapabilityViolation(why).into())
    }
}

/// Objects one `list` may return: a namespace of thousands of pods fits, a cluster-wide list
/// of a large cluster does not (`list-controlled` costs what the owner controls).
pub(crate) const MAX_LIST_OBJECTS: usize = 20_000;
/// Bytes of objects one `list` may return.
pub(crate) const MAX_LIST_BYTES: usize = 64 << 20;
/// Bytes of objects one call may read over all its `get`s and `list`s.
const MAX_CALL_READ_BYTES: usize = 128 << 20;
/// A selector's requirements, and values of one requirement: matching costs their product per
/// object, and every object of a namespace may be matched.
const MAX_SELECTOR_REQUIREMENTS: usize = 64;
const MAX_SELECTOR_VALUES: usize = 256;

impl CallState {
    /// `cache.get`, in either contract.
    fn read_get(&mut self, kind: Kind, namespace: &str, name: &str) -> wasmtime::Result<Option<String>> {
        self.copy_dropped();
        let kind = self.check_readable(kind)?;
        let object = self.cache.get(&kind, namespace, name);
        Ok(self.hand_out("get", object.into_iter().collect())?.pop())
    }

    /// `cache.list`, in either contract.
    fn read_list(&mut self, kind: Kind, namespace: &str, selector: Selector) -> wasmtime::Result<Vec<String>> {
        self.copy_dropped();
        let kind = self.check_readable(kind)?;
        self.check_selector(&selector)?;
        let objects = self.cache.list(&kind, namespace, &selector);
        self.hand_out(&format!("list of {kind}"), objects)
    }

    /// `cache.list-controlled`, in either contract.
    fn read_list_controlled(
        &mut self,
        kind: Kind,
        namespace: &str,
        owner_uid: &str,
        orphans: bool,
    ) -> wasmtime::Result<Vec<String>> {
        self.copy_dropped();
        let kind = self.check_readable(kind)?;
        let objects = self.cache.list_controlled(&kind, namespace, owner_uid, orphans);
        self.hand_out(&format!("list-controlled of {kind}"), objects)
    }
}

/// The contract's operator as the host's.
fn operator(op: wit_types::Operator) -> Operator {
    match op {
        wit_types::Operator::In => Operator::In,
        wit_types::Operator::NotIn => Operator::NotIn,
        wit_types::Operator::Exists => Operator::Exists,
        wit_types::Operator::DoesNotExist => Operator::DoesNotExist,
    }
}

fn selector_from_wit(selector: wit_types::Selector) -> Selector {
    Selector {
        match_labels: selector.match_labels,
        match_expressions: selector
            .match_expressions
            .into_iter()
            .map(|r| Requirement { key: r.key, operator: operator(r.operator), values: r.values })
            .collect(),
    }
}

impl wit_types::Host for CallState {}

impl wit_cache::Host for CallState {
    fn get(&mut self, kind: wit_types::Kind, namespace: String, name: String) -> wasmtime::Result<Option<String>> {
        self.read_get(kind_from_wit(kind), &namespace, &name)
    }

    fn list(
        &mut self,
        kind: wit_types::Kind,
        namespace: String,
        selector: wit_types::Selector,
    ) -> wasmtime::Result<Vec<String>> {
        self.read_list(kind_from_wit(kind), &namespace, selector_from_wit(selector))
    }

    fn list_controlled(
        &mut self,
        kind: wit_types::Kind,
        namespace: String,
        owner_uid: String,
        orphans: bool,
    ) -> wasmtime::Result<Vec<String>> {
        self.read_list_controlled(kind_from_wit(kind), &namespace, &owner_uid, orphans)
    }
}

/// Intents, and batches, one outcome may carry. Every intent is an API request: at the default
/// client rate (20 qps) 10,000 already take over 8 minutes, so an outcome past this is a
/// runaway plugin, not a reconcile.
const MAX_OUTCOME_INTENTS: usize = 10_000;
/// Text (objects, messages, names) one outcome may carry in total. The API server refuses a
/// request body over 3 MiB, so this is several of the largest writes there can be, while it
/// keeps a plugin from making the host validate, log and send arbitrary amounts.
const MAX_OUTCOME_TEXT: usize = 16 << 20;

/// Host memory wasmtime may allocate for what it copies out of a plugin in one go: a call's
/// result, or the arguments of one import call (its "hostcall fuel", counted in the host's
/// representation). wasmtime's default, made explicit: far above the largest outcome the caps
/// accept, so those caps decide up to here and this decides past it.
const MAX_COPY_OUT: usize = 128 << 20;
const _: () = assert!(
    MAX_OUTCOME_TEXT + MAX_OUTCOME_INTENTS * (size_of::<wit::Intent>() + size_of::<Vec<wit::Intent>>()) < MAX_COPY_OUT
);

/// Longest plugin log line or error message kept: a plugin cannot flood the host's logs (or
/// the events an error ends up in) with one call.
const MAX_LOG_LINE: usize = 4096;

/// Log output one call may write; past it, lines are dropped (after one warning).
const MAX_LOG_LINES_PER_CALL: usize = 100;
const MAX_LOG_BYTES_PER_CALL: usize = 64 << 10;

fn clip(mut message: String) -> String {
    if message.len() > MAX_LOG_LINE {
        let mut end = MAX_LOG_LINE;
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message.push('…');
    }
    message
}

impl wit_log::Host for CallState {
    fn log(&mut self, level: wit_log::Level, message: String) -> wasmtime::Result<()> {
        let level = match level {
            wit_log::Level::Trace => wasmcm_guest::Level::Trace,
            wit_log::Level::Debug => wasmcm_guest::Level::Debug,
            wit_log::Level::Info => wasmcm_guest::Level::Info,
            wit_log::Level::Warn => wasmcm_guest::Level::Warn,
            wit_log::Level::Error => wasmcm_guest::Level::Error,
        };
        self.write_log(level, message);
        Ok(())
    }
}

impl CallState {
    /// `log.log`, in either contract.
    fn write_log(&mut self, level: wasmcm_guest::Level, message: String) {
        use wasmcm_guest::Level;
        let message = clip(message);
        let (plugin, key) = (&*self.plugin, &self.key);
        // A panic message is kept whatever came before it: it is what the trap reports.
        let panicked = level == Level::Error && message.starts_with("panicked");
        let (lines, bytes, dropping) = self.logged;
        let over = lines >= MAX_LOG_LINES_PER_CALL || bytes + message.len() > MAX_LOG_BYTES_PER_CALL;
        if over && !panicked {
            if !dropping {
                tracing::warn!(
                    plugin,
                    key,
                    "this call logged more than {MAX_LOG_LINES_PER_CALL} lines or {} KiB; the rest are dropped",
                    MAX_LOG_BYTES_PER_CALL >> 10
                );
            }
            self.logged.2 = true;
            return;
        }
        self.logged = (lines + 1, bytes + message.len(), dropping);
        match level {
            Level::Trace => tracing::trace!(plugin, key, "{message}"),
            Level::Debug => tracing::debug!(plugin, key, "{message}"),
            Level::Info => tracing::info!(plugin, key, "{message}"),
            Level::Warn => tracing::warn!(plugin, key, "{message}"),
            Level::Error => tracing::error!(plugin, key, "{message}"),
        }
        if panicked {
            self.panic = Some(message);
        }
    }
}

/// The compiler, linker and epoch clock shared by every plugin.
#[derive(Clone)]
pub struct Engine {
    engine: wasmtime::Engine,
    linker: Arc<Linker<CallState>>,
    precompiled: Option<Arc<Precompiled>>,
    max_memory_bytes: usize,
    budget: Arc<MemoryBudget>,
}

impl Engine {
    pub fn new(config: &EngineConfig) -> anyhow::Result<Self> {
        let mut pool = PoolingAllocationConfig::default();
        let n = config.max_concurrent_calls;
        pool.total_component_instances(n)
            // A Rust component holds its main module plus small shim modules.
            .total_core_instances(n * 4)
            .total_memories(n)
            .total_tables(n * 4)
            .max_memory_size(config.max_memory_bytes)
            // A freed slot's first pages stay mapped and are reset by hand, so the next
            // instance starts warm; the kernel's page scan (Linux ≥ 6.7) finds the pages the
            // call touched, where resetting the whole initial memory (384 KiB for a built-in)
            // was 60% of a call's fixed cost (make bench: 21 → 13 µs). Left mapped, a page is
            // reset on every later call of the slot, hence a bound well above what a small
            // reconcile touches.
            .linear_memory_keep_resident(1 << 20)
            .pagemap_scan(wasmtime::Enabled::Auto)
            .table_keep_resident(64 << 10);
        let mut wasm = Config::new();
        wasm.wasm_component_model(true)
            .epoch_interruption(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        let engine = wasmtime::Engine::new(&wasm)?;

        let mut linker = Linker::new(&engine);
        bindings::Plugin::add_to_linker::<_, HasSelf<CallState>>(&mut linker, |s| s)?;
        compat::add_to_linker(&mut linker)?;

        let weak = engine.weak();
        std::thread::Builder::new().name("wasmcm-epoch".into()).spawn(move || {
            while let Some(engine) = weak.upgrade() {
                engine.increment_epoch();
                drop(engine);
                std::thread::sleep(EPOCH_TICK);
            }
        })?;

        let precompiled = match &config.precompiled_dir {
            Some(dir) => {
                let key = config.precompiled_key.clone().unwrap_or_else(|| {
                    let mut file = dir.as_os_str().to_os_string();
                    file.push(".key");
                    file.into()
                });
                // Without a trustworthy cache the host still runs: it compiles at each start.
                match Precompiled::new(&engine, dir, &key) {
                    Ok(p) => Some(Arc::new(p)),
                    Err(e) => {
                        tracing::warn!("not using the precompiled cache {}: {e:#}", dir.display());
                        None
                    }
                }
            }
            None => None,
        };
        let budget = Arc::new(MemoryBudget::new(config.memory_budget.unwrap_or(usize::MAX)));
        Ok(Engine { engine, linker: Arc::new(linker), precompiled, max_memory_bytes: config.max_memory_bytes, budget })
    }

    /// Loads a plugin from a file.
    pub fn load_file(&self, path: &std::path::Path, limits: Limits) -> Result<Plugin, LoadError> {
        let source_name = path.display().to_string();
        let bytes = std::fs::read(path).map_err(|error| LoadError::Read { source_name: source_name.clone(), error })?;
        self.load(&source_name, &bytes, limits)
    }

    /// Compiles (or fetches from the precompiled cache), checks imports, links, and asks the
    /// plugin to describe itself. `source_name` names the plugin in errors.
    pub fn load(&self, source_name: &str, bytes: &[u8], limits: Limits) -> Result<Plugin, LoadError> {
        let digest = hex::encode(Sha256::digest(bytes));
        let not_a_component =
            |reason: String| LoadError::NotAComponent { source_name: source_name.to_string(), reason };
        if !bytes.starts_with(b"\0asm") {
            return Err(not_a_component("no WebAssembly header".into()));
        }
        let started = std::time::Instant::now();
        let (component, cached) = match &self.precompiled {
            Some(cache) => cache.load_or_compile(&self.engine, bytes, &digest),
            None => Component::new(&self.engine, bytes).map(|c| (c, false)),
        }
        .map_err(|e| not_a_component(format!("{e:#}")))?;
        let compiled = Compiled { duration: started.elapsed(), cached, size: bytes.len() };

        let ty = component.component_type();
        let imports: Vec<String> = ty.imports(&self.engine).map(|(name, _)| name.to_string()).collect();
        let exports: Vec<String> = ty.exports(&self.engine).map(|(name, _)| name.to_string()).collect();
        if let Some(contract) = imports.iter().chain(&exports).find_map(|name| other_contract(name)) {
            return Err(LoadError::ContractInterface { source_name: source_name.into(), contract });
        }
        if let Some(name) = imports.iter().find(|name| !is_allowed_import(name)) {
            return Err(LoadError::ForbiddenImport { source_name: source_name.into(), import: name.clone() });
        }
        // The contract of its exported controller (else of its imports): one for the whole
        // component, which is called in it.
        let named: BTreeSet<&'static str> = imports.iter().chain(&exports).filter_map(|n| contract_of(n)).collect();
        if named.len() > 1 {
            let named: Vec<&str> = named.into_iter().collect();
            let reason = format!("it mixes the interfaces of contracts {}", named.join(" and "));
            return Err(LoadError::Metadata { source_name: source_name.into(), reason });
        }
        let contract = named.into_iter().next().unwrap_or(CONTRACT_VERSION);
        let link = |e: wasmtime::Error| LoadError::Link { source_name: source_name.into(), reason: format!("{e:#}") };
        let instance_pre = self.linker.instantiate_pre(&component).map_err(link)?;
        let pre = if contract == compat::CONTRACT_VERSION {
            Pre::V3(compat::PluginPre::new(instance_pre).map_err(link)?)
        } else {
            Pre::V4(bindings::PluginPre::new(instance_pre).map_err(link)?)
        };

        let limits = Limits { memory_bytes: limits.memory_bytes.min(self.max_memory_bytes), ..limits };
        let mut plugin = Plugin {
            engine: self.engine.clone(),
            pre,
            info: placeholder_info(source_name),
            readable: Arc::new(HashSet::new()),
            digest,
            limits,
            compiled,
            imports,
            budget: self.budget.clone(),
        };
        let info = plugin
            .call(Arc::new(MemoryCache::new()), "describe()", |instance, store| match instance {
                Instance::V4(p) => p.wasmcm_reconciler_controller().call_describe(store),
                Instance::V3(p) => compat::describe(p, store),
            })
            .map_err(|e| LoadError::Describe { source_name: source_name.into(), error: Box::new(e) })?;
        let info = plugin_info_from_wit(info);
        validate_info(source_name, &info, contract)?;
        plugin.readable = readable(&info);
        plugin.info = info;
        Ok(plugin)
    }
}

fn is_allowed_import(name: &str) -> bool {
    let Some((interface, version)) = name.split_once('@') else { return false };
    matches!(interface, "wasmcm:reconciler/cache" | "wasmcm:reconciler/log" | "wasmcm:reconciler/types")
        && contract_compatible(version).is_some()
}

/// The version of a `wasmcm:reconciler` interface this host does not implement, if `name` is one.
fn other_contract(name: &str) -> Option<String> {
    let (interface, version) = name.split_once('@')?;
    (interface.starts_with("wasmcm:reconciler/") && contract_compatible(version).is_none()).then(|| version.to_string())
}

/// The contract (of [`CONTRACTS`]) of a `wasmcm:reconciler` interface `name`, if it is one.
fn contract_of(name: &str) -> Option<&'static str> {
    let (interface, version) = name.split_once('@')?;
    interface.starts_with("wasmcm:reconciler/").then(|| contract_compatible(version)).flatten()
}

/// The contract of [`CONTRACTS`] `version` is semver-compatible with (for 0.x: same major and
/// minor), if any.
fn contract_compatible(version: &str) -> Option<&'static str> {
    let theirs: Vec<&str> = version.split('.').collect();
    if theirs.len() != 3 || theirs[2].parse::<u32>().is_err() {
        return None;
    }
    CONTRACTS.into_iter().find(|ours| ours.split('.').take(2).eq(theirs[..2].iter().copied()))
}

fn validate_info(source_name: &str, info: &wasmcm_guest::PluginInfo, exported: &str) -> Result<(), LoadError> {
    let Some(declared) = contract_compatible(&info.contract) else {
        return Err(LoadError::Contract {
            source_name: source_name.into(),
            name: info.name.clone(),
            contract: info.contract.clone(),
        });
    };
    if declared != exported {
        let reason = format!(
            "describe() declares contract {}, but the component exports the interfaces of contract {exported}",
            info.contract
        );
        return Err(LoadError::Metadata { source_name: source_name.into(), reason });
    }
    let bad = |reason: String| Err(LoadError::Metadata { source_name: source_name.into(), reason });
    if let Some(why) = wasmcm_core::validation::dns1123_label(&info.name).first() {
        return bad(format!("name {:?} must be a DNS label: {why}", info.name));
    }
    if info.version.len() > MAX_DESCRIBE_TEXT {
        return bad(format!("version is {} bytes; at most {MAX_DESCRIBE_TEXT}", info.version.len()));
    }
    for (what, n) in [("owns", info.owns.len()), ("watches", info.watches.len()), ("writes", info.writes.len())] {
        if n > MAX_DESCRIBE_KINDS {
            return bad(format!("{what} lists {n} kinds; at most {MAX_DESCRIBE_KINDS}"));
        }
    }
    let all_kinds = std::iter::once(&info.primary).chain(&info.owns).chain(info.watched_kinds()).chain(&info.writes);
    for kind in all_kinds {
        if kind.kind.is_empty() || kind.api_version.is_empty() {
            return bad(format!("kind {kind} needs both apiVersion and kind"));
        }
        if kind.kind.len() + kind.api_version.len() > MAX_DESCRIBE_TEXT {
            let shown: String = kind.to_string().chars().take(64).collect();
            return bad(format!("kind {shown}… is longer than {MAX_DESCRIBE_TEXT} bytes"));
        }
    }
    Ok(())
}

/// Kinds a plugin may list in each of `owns`, `watches` and `writes`: a controller needs a
/// handful, and every refusal and informer scales with them.
const MAX_DESCRIBE_KINDS: usize = 64;
/// Longest version, or apiVersion and kind together, in `describe()`.
const MAX_DESCRIBE_TEXT: usize = 256;

/// What a plugin may read: its primary, owned and watched kinds.
fn readable(info: &wasmcm_guest::PluginInfo) -> Arc<HashSet<Kind>> {
    let kinds = std::iter::once(&info.primary).chain(&info.owns).chain(info.watched_kinds());
    Arc::new(kinds.cloned().collect())
}

fn placeholder_info(source_name: &str) -> wasmcm_guest::PluginInfo {
    wasmcm_guest::PluginInfo {
        name: source_name.to_string(),
        version: "?".into(),
        primary: Kind::new("", ""),
        owns: vec![],
        watches: vec![],
        writes: vec![],
        contract: String::new(),
    }
}

/// A linked plugin, ready to instantiate, in the contract it was built for.
enum Pre {
    V4(bindings::PluginPre<CallState>),
    V3(compat::PluginPre<CallState>),
}

/// One call's instance.
enum Instance {
    V4(bindings::Plugin),
    V3(compat::Plugin),
}

/// How a plugin's code was obtained.
#[derive(Clone, Copy, Debug)]
pub struct Compiled {
    /// Compiling, or reading the precompiled artefact.
    pub duration: Duration,
    /// Whether the precompiled cache had it.
    pub cached: bool,
    /// Size of the component.
    pub size: usize,
}

/// A loaded plugin, ready to be called from any thread.
pub struct Plugin {
    engine: wasmtime::Engine,
    pre: Pre,
    info: wasmcm_guest::PluginInfo,
    readable: Arc<HashSet<Kind>>,
    digest: String,
    limits: Limits,
    compiled: Compiled,
    imports: Vec<String>,
    budget: Arc<MemoryBudget>,
}

impl Plugin {
    pub fn info(&self) -> &wasmcm_guest::PluginInfo {
        &self.info
    }

    /// SHA-256 of the component bytes, hex.
    pub fn digest(&self) -> &str {
        &self.digest
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    pub fn compiled(&self) -> Compiled {
        self.compiled
    }

    /// The interfaces the component imports (all within the contract, or it would not load).
    pub fn imports(&self) -> &[String] {
        &self.imports
    }

    /// Runs this plugin as `name` (several copies of one component can run side by side),
    /// with its reads and writes narrowed to the kinds given. A manifest may only narrow: a
    /// kind the plugin did not declare is an error, and its primary kind cannot be taken away.
    pub fn configure(mut self, name: &str, reads: Option<&[Kind]>, writes: Option<&[Kind]>) -> Result<Self, String> {
        let info = &mut self.info;
        if let Some(reads) = reads {
            let declared: Vec<&Kind> = info.owns.iter().chain(info.watched_kinds()).chain([&info.primary]).collect();
            if let Some(k) = reads.iter().find(|k| !declared.contains(k)) {
                return Err(format!("capabilities.reads names {k}, which the plugin does not declare"));
            }
            info.owns.retain(|k| reads.contains(k));
            info.watches.retain(|w| reads.contains(&w.kind));
        }
        if let Some(writes) = writes {
            if let Some(k) = writes.iter().find(|k| !info.writes.contains(k)) {
                return Err(format!("capabilities.writes names {k}, which the plugin does not declare"));
            }
            info.writes.retain(|k| writes.contains(k));
        }
        info.name = name.to_string();
        self.readable = readable(info);
        Ok(self)
    }

    /// One reconcile of `request` against `cache`, in a fresh instance.
    pub fn reconcile(
        &self,
        request: &wasmcm_guest::Request,
        cache: Arc<dyn Cache + Send + Sync>,
    ) -> Result<wasmcm_guest::Outcome, CallError> {
        let key = format!("{}/{}", request.namespace, request.name);
        let wit_request = wit::Request {
            namespace: request.namespace.clone(),
            name: request.name.clone(),
            now: wit_types::Instant { seconds: request.now.seconds, nanoseconds: request.now.nanoseconds },
            previous_failure: request.previous_failure.clone(),
            settings: request.settings.clone(),
        };
        let result = self.call(cache, &key, |instance, store| match instance {
            Instance::V4(p) => p.wasmcm_reconciler_controller().call_reconcile(store, &wit_request),
            Instance::V3(p) => compat::reconcile(p, store, &wit_request),
        })?;
        match result {
            Ok(outcome) => {
                check_outcome(&outcome).map_err(|detail| CallError::Trap {
                    plugin: self.info.name.clone(),
                    version: self.info.version.clone(),
                    reason: TrapReason::Outcome,
                    detail,
                    panic: None,
                })?;
                Ok(outcome_from_wit(outcome))
            }
            Err(e) => Err(CallError::Plugin {
                plugin: self.info.name.clone(),
                version: self.info.version.clone(),
                message: clip(e.message),
                retryable: e.retryable,
            }),
        }
    }

    fn call<R>(
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
                CallError::Instantiate {
                    plugin: self.info.name.clone(),
                    version: self.info.version.clone(),
                    reason: format!("{e:#}"),
                }
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

fn kind_from_wit(k: wit_types::Kind) -> Kind {
    Kind { api_version: k.api_version, kind: k.kind }
}

fn ref_from_wit(r: wit_types::ObjectRef) -> wasmcm_guest::ObjectRef {
    wasmcm_guest::ObjectRef { kind: kind_from_wit(r.kind), namespace: r.namespace, name: r.name }
}

fn plugin_info_from_wit(i: wit::PluginInfo) -> wasmcm_guest::PluginInfo {
    let kinds = |ks: Vec<wit_types::Kind>| ks.into_iter().map(kind_from_wit).collect();
    wasmcm_guest::PluginInfo {
        name: i.name,
        version: i.version,
        primary: kind_from_wit(i.primary),
        owns: kinds(i.owns),
        watches: i
            .watches
            .into_iter()
            .map(|w| wasmcm_guest::Watch {
                kind: kind_from_wit(w.kind),
                wake_on: wasmcm_guest::Changes {
                    created: w.wake_on.contains(wit::Changes::CREATED),
                    updated: w.wake_on.contains(wit::Changes::UPDATED),
                    deleted: w.wake_on.contains(wit::Changes::DELETED),
                },
            })
            .collect(),
        writes: kinds(i.writes),
        contract: i.contract,
    }
}

/// Refuses an outcome larger than the host acts on. It can only look once the outcome has been
/// lifted out of the guest, but that copy is bounded too: what a plugin returns must fit in its
/// linear memory (the lift checks every list and string against it before copying), and
/// wasmtime copies no more than `MAX_COPY_OUT` of it whatever the plugin's memory limit. What
/// the caps bound is everything after: conversion, validation, logs and API requests.
fn check_outcome(o: &wit::Outcome) -> Result<(), String> {
    let too_many =
        |n: usize, what: &str| format!("outcome has {n} {what}; the host accepts at most {MAX_OUTCOME_INTENTS}");
    // No outcome needs more batches than intents, and empty batches still cost the host.
    if o.batches.len() > MAX_OUTCOME_INTENTS {
        return Err(too_many(o.batches.len(), "batches"));
    }
    let intents: usize = o.batches.iter().map(Vec::len).sum();
    if intents > MAX_OUTCOME_INTENTS {
        return Err(too_many(intents, "intents"));
    }
    let text: usize = o.batches.iter().flatten().map(intent_text).sum();
    if text > MAX_OUTCOME_TEXT {
        return Err(format!(
            "outcome has {text} bytes of text (objects, messages, names); the host accepts at most {MAX_OUTCOME_TEXT}"
        ));
    }
    Ok(())
}

/// Bytes of every string an intent carries.
fn intent_text(i: &wit::Intent) -> usize {
    let object_ref =
        |r: &wit_types::ObjectRef| r.kind.api_version.len() + r.kind.kind.len() + r.namespace.len() + r.name.len();
    match i {
        wit::Intent::Create(o) | wit::Intent::Update(o) | wit::Intent::UpdateStatus(o) => o.len(),
        wit::Intent::Delete(d) => object_ref(&d.target) + d.uid.as_ref().map_or(0, String::len),
        wit::Intent::Event(e) => object_ref(&e.regarding) + e.reason.len() + e.message.len(),
        wit::Intent::Patch(p) => {
            object_ref(&p.target) + p.body.len() + p.resource_version.as_ref().map_or(0, String::len)
        }
    }
}

fn outcome_from_wit(o: wit::Outcome) -> wasmcm_guest::Outcome {
    use wasmcm_guest::Intent;
    let intent = |i: wit::Intent| match i {
        wit::Intent::Create(o) => Intent::Create(o),
        wit::Intent::Update(o) => Intent::Update(o),
        wit::Intent::UpdateStatus(o) => Intent::UpdateStatus(o),
        wit::Intent::Delete(d) => Intent::Delete(wasmcm_guest::DeleteTarget {
            target: ref_from_wit(d.target),
            uid: d.uid,
            propagation: d.propagation.map(|p| match p {
                wit::Propagation::Orphan => wasmcm_guest::Propagation::Orphan,
                wit::Propagation::Background => wasmcm_guest::Propagation::Background,
                wit::Propagation::Foreground => wasmcm_guest::Propagation::Foreground,
            }),
        }),
        wit::Intent::Patch(p) => Intent::Patch(wasmcm_guest::Patch {
            target: ref_from_wit(p.target),
            patch_type: match p.patch_type {
                wit::PatchType::Json => wasmcm_guest::PatchType::Json,
                wit::PatchType::Merge => wasmcm_guest::PatchType::Merge,
                wit::PatchType::Strategic => wasmcm_guest::PatchType::Strategic,
            },
            body: p.body,
            resource_version: p.resource_version,
            status: p.status,
        }),
        wit::Intent::Event(e) => Intent::Event(wasmcm_guest::Event {
            regarding: ref_from_wit(e.regarding),
            event_type: match e.event_type {
                wit::EventType::Normal => wasmcm_guest::EventType::Normal,
                wit::EventType::Warning => wasmcm_guest::EventType::Warning,
            },
            reason: e.reason,
            message: e.message,
        }),
    };
    wasmcm_guest::Outcome {
        batches: o.batches.into_iter().map(|b| b.into_iter().map(intent).collect()).collect(),
        requeue_after_ms: o.requeue_after_ms,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_contract_interfaces_may_be_imported() {
        assert!(is_allowed_import("wasmcm:reconciler/cache@0.4.0"));
        assert!(is_allowed_import("wasmcm:reconciler/cache@0.3.0"));
        assert!(is_allowed_import("wasmcm:reconciler/log@0.3.7"));
        assert!(is_allowed_import("wasmcm:reconciler/log@0.4.2"));
        assert!(!is_allowed_import("wasmcm:reconciler/cache@0.2.0"));
        assert!(!is_allowed_import("wasmcm:reconciler/cache@0.5.0"));
        assert!(!is_allowed_import("wasmcm:reconciler/cache@1.4.0"));
        assert_eq!(contract_of("wasmcm:reconciler/controller@0.3.1"), Some("0.3.0"));
        assert_eq!(contract_of("wasmcm:reconciler/controller@0.4.0"), Some("0.4.0"));
        assert_eq!(contract_of("wasi:cli/environment@0.4.0"), None);
        assert!(!is_allowed_import("wasi:filesystem/types@0.2.0"));
        assert!(!is_allowed_import("wasmcm:reconciler/cache"));
    }

    #[test]
    fn outcomes_are_accepted_up_to_the_caps_and_not_past_them() {
        let outcome = |batches: Vec<Vec<wit::Intent>>| wit::Outcome { batches, requeue_after_ms: None };
        let create = |bytes: usize| wit::Intent::Create("x".repeat(bytes));
        let event = |message: String| {
            let kind = wit_types::Kind { api_version: "v1".into(), kind: "Pod".into() };
            let regarding = wit_types::ObjectRef { kind, namespace: "ns".into(), name: "p".into() };
            wit::Intent::Event(wit::Event {
                regarding,
                event_type: wit::EventType::Normal,
                reason: "R".into(),
                message,
            })
        };

        let at_cap = || (0..MAX_OUTCOME_INTENTS).map(|_| create(1)).collect::<Vec<_>>();
        assert_eq!(check_outcome(&outcome(vec![at_cap()])), Ok(()));
        let mut past = at_cap();
        past.push(create(1));
        assert_eq!(
            check_outcome(&outcome(vec![past])),
            Err("outcome has 10001 intents; the host accepts at most 10000".into())
        );
        // Counted over every batch, and empty batches count on their own.
        assert!(check_outcome(&outcome(vec![at_cap(), vec![create(1)]])).is_err());
        assert!(check_outcome(&outcome(vec![vec![]; MAX_OUTCOME_INTENTS])).is_ok());
        assert_eq!(
            check_outcome(&outcome(vec![vec![]; MAX_OUTCOME_INTENTS + 1])),
            Err("outcome has 10001 batches; the host accepts at most 10000".into())
        );

        // Every string counts: "v1" "Pod" "ns" "p" "R" are 9 bytes besides the message.
        let text = |message_bytes| outcome(vec![vec![create(8 << 20), event("m".repeat(message_bytes))]]);
        assert_eq!(check_outcome(&text((8 << 20) - 9)), Ok(()));
        assert_eq!(
            check_outcome(&text((8 << 20) - 8)),
            Err("outcome has 16777217 bytes of text (objects, messages, names); the host accepts at most 16777216"
                .into())
        );
    }
}
