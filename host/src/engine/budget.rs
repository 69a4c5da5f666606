//! The memory all plugin calls may hold at once. Each plugin's limit bounds one call; this
//! bounds their sum over every worker of every plugin, so that many calls at their limits
//! cannot take more than the container has. A call's linear memory grows only while the total
//! stays within the budget; past it the growth traps (the key is retried with backoff), and a
//! call gives back what it held when its store is dropped. What a call reads is charged too:
//! the host's copy of each answer (up to 64 MiB a list) from when the cache hands it over
//! until the guest has it (its next host call, or its end), and the guest's copy as its linear
//! memory grows to take it; an answer the budget cannot hold fails the call the same way.
//!
//! It owns the count only; what a call may hold on its own is the engine's `Limits`.

use std::sync::atomic::{AtomicUsize, Ordering};

pub(crate) struct MemoryBudget {
    total: usize,
    used: AtomicUsize,
}

impl MemoryBudget {
    pub(crate) fn new(total: usize) -> Self {
        MemoryBudget { total, used: AtomicUsize::new(0) }
    }

    pub(crate) fn total(&self) -> usize {
        self.total
    }

    /// Takes `bytes` if they fit.
    pub(crate) fn try_take(&self, bytes: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(bytes).filter(|after| *after <= self.total)
            })
            .is_ok()
    }

    pub(crate) fn give_back(&self, bytes: usize) {
        self.used.fetch_sub(bytes, Ordering::AcqRel);
    }
}

/// Half the container's memory limit (cgroup v2 `memory.max`, or v1 `memory.limit_in_bytes`),
/// the other half being the host's own (informer caches, compiling a swapped plugin); `None`
/// when the host runs without a limit.
pub fn container_memory_budget() -> Option<usize> {
    let read = |path: &str| std::fs::read_to_string(path).ok()?.trim().parse::<u64>().ok();
    // v1 reports "no limit" as a number near 2^63.
    let limit = read("/sys/fs/cgroup/memory.max")
        .or_else(|| read("/sys/fs/cgroup/memory/memory.limit_in_bytes"))
        .filter(|l| *l < 1 << 60)?;
    usize::try_from(limit / 2).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn takes_only_what_fits_and_gets_it_back() {
        let b = MemoryBudget::new(100);
        assert!(b.try_take(60));
        assert!(!b.try_take(41), "past the total");
        assert!(b.try_take(40));
        b.give_back(60);
        assert!(b.try_take(60));
        assert!(!b.try_take(usize::MAX), "no overflow");
    }
}
