//! Loading a plugin: the [`Engine`] (compiler, linker, pooling allocator and epoch clock shared
//! by every plugin) compiles a component, or reads it from the precompiled cache, refuses
//! imports outside the contract and components of another contract, links it, asks it to
//! describe itself and checks what it says ([`LoadError`] for each refusal). A component of
//! the current contract (`wit/reconciler.wit`) or, through `compat`, of the frozen 0.3.0 one
//! is linked in its own; any other version is refused naming the versions ([`CONTRACTS`]).
//!
//! It owns loading only: the loaded [`Plugin`] and its calls are `plugin`'s and `call`'s.

use std::collections::{BTreeSet, HashSet};
use std::sync::Arc;
use std::time::Duration;

use sha2::{Digest, Sha256};
use wasmcm_guest::{CONTRACT_VERSION, Kind, MemoryCache};
use wasmtime::component::{Component, HasSelf, Linker};
use wasmtime::{Config, InstanceAllocationStrategy, PoolingAllocationConfig};

use super::budget::MemoryBudget;
use super::call::{CallError, CallState};
use super::compat;
use super::config::{EPOCH_TICK, EngineConfig, Limits};
use super::plugin::{Instance, Plugin, Pre, readable};
use super::precompiled::{CacheDir, Precompiled};
use super::wit::{bindings, plugin_info_from_wit};

/// The contracts this host implements, newest first: each plugin is called in the one it was
/// built for.
pub const CONTRACTS: [&str; 2] = [CONTRACT_VERSION, compat::CONTRACT_VERSION];

/// "0.4.0 and 0.3.0", for messages.
fn contracts_text() -> String {
    CONTRACTS.join(" and ")
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
        // Without a trustworthy cache the host still runs: it compiles at each start.
        let cache = config.precompiled_dir.as_ref().and_then(|dir| {
            let key = config.precompiled_key.clone().unwrap_or_else(|| {
                let mut file = dir.as_os_str().to_os_string();
                file.push(".key");
                file.into()
            });
            CacheDir::open(dir, &key)
                .inspect_err(|e| tracing::warn!("not using the precompiled cache {}: {e:#}", dir.display()))
                .ok()
        });
        let mut wasm = Config::new();
        wasm.wasm_component_model(true)
            .epoch_interruption(true)
            .allocation_strategy(InstanceAllocationStrategy::Pooling(pool));
        match cache.as_ref().map(CacheDir::functions) {
            Some(Ok(functions)) => {
                wasm.enable_incremental_compilation(Arc::new(functions))?;
            }
            Some(Err(e)) => tracing::warn!("compiling every function of every plugin: {e:#}"),
            None => {}
        }
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

        let precompiled = cache.map(|c| Arc::new(c.precompiled(&engine)));
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
}
