//! Per-thread lists of free base pages.
//!
//! Base-page data frames (the 4 KiB anonymous-fault path) come from a
//! per-thread free list, as Linux serves order-0 pages from per-CPU lists
//! (`struct per_cpu_pages`, mm/page_alloc.c `rmqueue_pcplist`): a list
//! takes [`PCP_BATCH`] frames from the global allocator when empty and
//! gives [`PCP_BATCH`] back when it holds more than [`PCP_HIGH`].
//!
//! ## Invariants
//!
//! - A thread uses list `thread number % PCP_LISTS`, so threads running at
//!   the same time take different (uncontended) list locks.
//! - A frame on a list is free (its head bit is clear); a frame may be
//!   freed to another thread's list than the one it came from, so a list's
//!   `live_frames` wraps, and only the sum over the lists is exact.

use super::{lock, PhysMem};
use crate::sync::SpinLock;
use std::sync::atomic::AtomicUsize as StdAtomicUsize;

/// Base-page frames a per-thread list takes from the global allocator at
/// once, and gives back at once (Linux `pcp->batch`). 512 frames fill whole
/// words of the frame bitmap, so two threads' fresh batches share no word.
pub const PCP_BATCH: usize = 512;
/// Frames a per-thread list keeps before it gives a batch back (Linux `pcp->high`).
pub const PCP_HIGH: usize = 8 * PCP_BATCH;
/// Per-thread lists (a thread uses `thread number % PCP_LISTS`). Under loom
/// one list, which keeps the model small.
#[cfg(not(loom))]
pub const PCP_LISTS: usize = 16;
#[cfg(loom)]
pub const PCP_LISTS: usize = 1;

/// One per-thread list of free base pages (its own cache lines).
#[repr(align(128))]
pub(super) struct Pcp {
    /// A spinlock, as Linux's `pcp->lock`.
    pub(super) list: SpinLock<PcpList>,
}

pub(super) struct PcpList {
    pub(super) free: Vec<u64>,
    /// Base pages allocated through this list minus those freed through it
    /// (wrapping: a frame may be freed through another list; the sum over
    /// the lists is exact).
    pub(super) live_frames: u64,
}

/// Numbers threads for the choice of their per-thread list.
static NEXT_THREAD: StdAtomicUsize = StdAtomicUsize::new(0);

thread_local! {
    static THREAD_NUMBER: usize = NEXT_THREAD.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
}

impl PhysMem {
    /// This thread's list of free base pages.
    #[inline]
    pub(super) fn pcp(&self) -> &Pcp {
        if PCP_LISTS == 1 {
            return &self.pcps[0];
        }
        &self.pcps[THREAD_NUMBER.with(|n| *n) % PCP_LISTS]
    }

    /// Fills an empty per-thread list with a batch of base pages: frames
    /// given back to the global allocator first, else a fresh aligned run.
    pub(super) fn pcp_refill(&self, list: &mut Vec<u64>) -> Option<()> {
        let page = 1u64 << self.page_shift;
        let mut d = lock(&self.data);
        if let Some(free) = d.free.get_mut(&page).filter(|f| !f.is_empty()) {
            let take = free.len().min(PCP_BATCH);
            let at = free.len() - take;
            list.extend(free.drain(at..));
            return Some(());
        }
        let run = page * PCP_BATCH as u64;
        let base = self.carve(&mut d, run)?;
        // Popped from the end: hand out ascending addresses.
        list.extend((0..PCP_BATCH as u64).rev().map(|i| base + i * page));
        Some(())
    }
}
