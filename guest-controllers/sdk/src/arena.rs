//! The allocator of a plugin instance. An instance lives for exactly one call and is then
//! thrown away, so nothing needs to be freed: memory is handed out by bumping a pointer through
//! pages taken from `memory.grow`, and a free or shrink of the latest block gives it back.
//! General-purpose allocators spend most of their time on reuse this model never needs. The
//! price: what is freed mid-call (but the latest block) is not reused, so a call needs about as
//! much memory as it allocates in total; growing past the host's memory cap fails the
//! allocation, which traps as out of memory.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;

const PAGE: usize = 64 * 1024;
/// Pages asked of the host at least at a time. Small on purpose: the host resets every page an
/// instance had when the call ends, so memory taken and not used still costs.
const CHUNK_PAGES: usize = 4;

unsafe extern "C" {
    /// Where the linker put the end of the stack and static data: the heap starts here.
    static __heap_base: u8;
}

/// The bump allocator described above, the global allocator of every wasm32 build of this
/// crate.
pub struct Arena {
    next: Cell<usize>,
    end: Cell<usize>,
}

// wasm32-unknown-unknown runs one thread.
unsafe impl Sync for Arena {}

impl Arena {
    /// An allocator that has taken no memory yet.
    pub const fn new() -> Self {
        Arena { next: Cell::new(0), end: Cell::new(0) }
    }

    /// Makes `[.., needed)` addressable; false when the host refuses more memory. The first
    /// call takes the rest of the initial memory, above the static data.
    fn grow_to(&self, needed: usize) -> bool {
        if self.end.get() == 0 {
            // Only the address of the linker symbol is taken, which is safe.
            let base = std::ptr::addr_of!(__heap_base) as usize;
            self.next.set(base);
            self.end.set(core::arch::wasm32::memory_size(0) * PAGE);
            if needed.max(base) <= self.end.get() {
                return true;
            }
        }
        let missing = needed.saturating_sub(self.end.get());
        let pages = missing.div_ceil(PAGE).max(CHUNK_PAGES);
        let previous = core::arch::wasm32::memory_grow(0, pages);
        if previous == usize::MAX {
            return false;
        }
        if previous * PAGE != self.end.get() {
            // The first growth (or one by someone else): start at the new pages.
            self.next.set(previous * PAGE);
        }
        self.end.set((previous + pages) * PAGE);
        true
    }
}

impl Default for Arena {
    fn default() -> Self {
        Self::new()
    }
}

unsafe impl GlobalAlloc for Arena {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        loop {
            let start = self.next.get().next_multiple_of(layout.align());
            let Some(end) = start.checked_add(layout.size()) else { return std::ptr::null_mut() };
            if end <= self.end.get() && start != 0 {
                self.next.set(end);
                return start as *mut u8;
            }
            if !self.grow_to(end) {
                return std::ptr::null_mut();
            }
        }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        if ptr as usize + layout.size() == self.next.get() {
            self.next.set(ptr as usize);
        }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let start = ptr as usize;
        // The latest block grows or shrinks in place.
        if start + layout.size() == self.next.get() {
            let end = start + new_size;
            if end <= self.end.get() || self.grow_to(end) && self.next.get() == start + layout.size() {
                self.next.set(end);
                return ptr;
            }
        }
        if new_size <= layout.size() {
            return ptr;
        }
        // SAFETY: the caller guarantees `layout` describes `ptr` and `new_size` is valid for it.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        let new = unsafe { self.alloc(new_layout) };
        if !new.is_null() {
            unsafe { std::ptr::copy_nonoverlapping(ptr, new, layout.size()) };
        }
        new
    }
}
