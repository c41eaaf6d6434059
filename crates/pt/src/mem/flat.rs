//! The contiguous part of the table arena: one zeroed allocation that holds
//! the words of the first arena chunks in address order, so that the
//! walker turns a physical address into a word with one subtraction and no
//! load of a chunk pointer (a dependent load per level on the walk's
//! critical path).
//!
//! ## Invariants
//!
//! - The allocation is `words` zeroed [`AtomicU64`]s, allocated once with
//!   `alloc_zeroed` and freed only when the [`FlatWords`] is dropped; it
//!   never moves, so references into it live as long as the owner.
//! - Memory is requested zeroed from the global allocator, which on Linux
//!   maps fresh pages that cost nothing until a table page is first
//!   written: the reservation is address space, not memory in use.
//! - The reservation shrinks by halves when the allocator refuses it (an
//!   overcommit limit, an address-space rlimit); with nothing granted the
//!   arena lives in separately allocated chunks only.
//! - This module never calls the operating system itself. A program that
//!   embeds the model may install an [`ArenaAdvisor`] (ptlab's binary
//!   asks for transparent huge pages), which sees each new reservation:
//!   walks over large tables then miss the host's TLB far less.

use std::alloc::{alloc_zeroed, dealloc, Layout};
use std::ptr::NonNull;
use std::sync::OnceLock;

/// Advice about a new contiguous reservation of table memory: its start
/// and length in bytes. It must not write the memory or free it.
pub type ArenaAdvisor = fn(*mut u8, usize);

static ADVISOR: OnceLock<ArenaAdvisor> = OnceLock::new();

/// Installs the advisor every later reservation is shown to; `false` if
/// one was installed before (the first stays).
pub fn set_arena_advisor(advisor: ArenaAdvisor) -> bool {
    ADVISOR.set(advisor).is_ok()
}

#[cfg(loom)]
use loom::sync::atomic::AtomicU64;
#[cfg(not(loom))]
use std::sync::atomic::AtomicU64;

/// A zeroed, never-moving run of atomic words.
pub(super) struct FlatWords {
    ptr: NonNull<AtomicU64>,
    words: usize,
}

// SAFETY: the allocation holds only atomics, which any thread may share and
// access; the owner frees it once, in `drop`.
unsafe impl Send for FlatWords {}
// SAFETY: as above: every access goes through `AtomicU64`'s own methods.
unsafe impl Sync for FlatWords {}

impl FlatWords {
    /// The largest run of at most `max_bytes` (rounded down to a multiple
    /// of `step`) and at least `step` bytes the allocator grants, or `None`.
    /// Under loom nothing is reserved (loom's atomics are not plain words).
    pub(super) fn reserve(max_bytes: u64, step: u64) -> Option<FlatWords> {
        if cfg!(loom) {
            return None;
        }
        let mut bytes = max_bytes / step * step;
        while bytes >= step {
            if let Some(f) = Self::try_alloc(usize::try_from(bytes).ok()?) {
                return Some(f);
            }
            bytes = (bytes / 2) / step * step;
        }
        None
    }

    fn try_alloc(bytes: usize) -> Option<FlatWords> {
        let words = bytes / std::mem::size_of::<AtomicU64>();
        // Word alignment keeps the request on the allocator's calloc path,
        // which hands out fresh zero pages without writing them.
        let layout = Layout::array::<AtomicU64>(words).ok()?;
        if layout.size() == 0 {
            return None;
        }
        // SAFETY: the layout has a non-zero size (checked above).
        let raw = unsafe { alloc_zeroed(layout) }.cast::<AtomicU64>();
        // An all-zero `AtomicU64` is a valid `AtomicU64` holding 0.
        let ptr = NonNull::new(raw)?;
        if let Some(advise) = ADVISOR.get() {
            advise(ptr.as_ptr().cast(), layout.size());
        }
        Some(FlatWords { ptr, words })
    }

    /// Bytes reserved.
    #[inline]
    pub(super) fn bytes(&self) -> u64 {
        (self.words * std::mem::size_of::<AtomicU64>()) as u64
    }

    /// A pointer to word `i` (`i <= words`), for publishing a chunk's first word.
    #[inline]
    pub(super) fn word_ptr(&self, i: usize) -> *mut AtomicU64 {
        assert!(i <= self.words, "word {i} past a run of {}", self.words);
        // SAFETY: in bounds of (or one past) the allocation, checked above.
        unsafe { self.ptr.as_ptr().add(i) }
    }
}

impl Drop for FlatWords {
    fn drop(&mut self) {
        let layout = Layout::array::<AtomicU64>(self.words).expect("the layout it was made with");
        // SAFETY: allocated in `try_alloc` with exactly this layout, freed once.
        unsafe { dealloc(self.ptr.as_ptr().cast(), layout) }
    }
}
