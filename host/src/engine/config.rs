//! The engine's settings: what one call may use ([`Limits`], per plugin), what every call
//! together may use ([`EngineConfig`]), and the epoch clock's tick that deadlines are counted in.
//!
//! It owns the numbers only; enforcing them is `call`'s (a call's store) and `load`'s (the
//! engine's pool).

use std::time::Duration;

/// How often the engine's epoch advances; deadlines are whole ticks.
pub(super) const EPOCH_TICK: Duration = Duration::from_millis(5);

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
