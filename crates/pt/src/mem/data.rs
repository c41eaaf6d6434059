//! The data-frame allocator: frames are numbers only (their contents are
//! never simulated), aligned to their size, in the data zone.
//!
//! Large frames and the batches of the per-thread lists come from a bump
//! pointer under the global `data` lock; the alignment gaps and freed
//! frames are kept by size for later requests.
//!
//! ## Invariants
//!
//! - A frame is either free or allocated exactly once: freeing a free frame,
//!   or a data frame with another size than it was allocated with, is
//!   reported as an error and changes nothing.
//! - Whether a data frame is allocated is one bit per base page (set at the
//!   frame's head), changed atomically: the double-free check of a base page
//!   takes no lock. A second bit marks the heads of large frames, whose
//!   sizes live in a map under the global lock.

use super::{lock, AllocKind, MemError, PhysMem, DATA_ZONE_BASE, PCP_BATCH, PCP_HIGH};
use crate::sync::Ordering;
use std::collections::HashMap;
use std::sync::atomic::AtomicU64 as StdAtomicU64;
use std::sync::OnceLock;

/// Words of one chunk of the frame bitmap (2^20 base pages).
pub(super) const BITS_CHUNK_WORDS: usize = 1 << 14;
/// Chunks of the frame bitmap: room for 2^32 base pages of data frames.
pub(super) const BITS_CHUNKS: usize = 1 << 12;

/// The global data-frame allocator (under [`PhysMem`]'s `data` lock).
pub(super) struct DataAlloc {
    /// Next unallocated byte of the data zone (bump pointer).
    pub(super) next: u64,
    /// Free frames by size (base pages given back by per-thread lists,
    /// alignment gaps, freed large frames).
    pub(super) free: HashMap<u64, Vec<u64>>,
    /// Sizes of allocated frames larger than the base page.
    pub(super) large: HashMap<u64, u64>,
    /// Large frames (and their bytes) allocated.
    pub(super) live_frames: u64,
    pub(super) live_bytes: u64,
}

/// One bit per base page of the data zone, in chunks allocated on first
/// use; bits are set and cleared atomically.
pub(super) struct FrameBits {
    pub(super) chunks: Box<[OnceLock<Box<[StdAtomicU64]>>]>,
}

impl FrameBits {
    pub(super) fn new() -> FrameBits {
        FrameBits {
            chunks: (0..BITS_CHUNKS).map(|_| OnceLock::new()).collect(),
        }
    }

    #[inline]
    pub(super) fn locate(bit: u64) -> (usize, usize, u64) {
        let word = (bit / 64) as usize;
        (
            word / BITS_CHUNK_WORDS,
            word % BITS_CHUNK_WORDS,
            1 << (bit % 64),
        )
    }

    /// Whether `bit` can be represented (the data zone is not exhausted).
    pub(super) fn holds(bit: u64) -> bool {
        bit / 64 < (BITS_CHUNKS * BITS_CHUNK_WORDS) as u64
    }

    #[inline]
    pub(super) fn word(&self, bit: u64) -> Option<(&StdAtomicU64, u64)> {
        let (c, w, mask) = Self::locate(bit);
        Some((&self.chunks.get(c)?.get()?[w], mask))
    }

    #[inline]
    pub(super) fn test(&self, bit: u64) -> bool {
        self.word(bit)
            .is_some_and(|(w, m)| w.load(Ordering::Acquire) & m != 0)
    }

    /// Sets `bit`; returns whether it was set before.
    #[inline]
    pub(super) fn set(&self, bit: u64) -> bool {
        let (c, w, mask) = Self::locate(bit);
        let chunk = self.chunks[c].get_or_init(|| {
            (0..BITS_CHUNK_WORDS)
                .map(|_| StdAtomicU64::new(0))
                .collect()
        });
        chunk[w].fetch_or(mask, Ordering::AcqRel) & mask != 0
    }

    /// Clears `bit`; returns whether it was set before.
    #[inline]
    pub(super) fn clear(&self, bit: u64) -> bool {
        self.word(bit)
            .is_some_and(|(w, m)| w.fetch_and(!m, Ordering::AcqRel) & m != 0)
    }
}

impl PhysMem {
    #[inline]
    pub(super) fn bit_of(&self, pa: u64) -> u64 {
        (pa - DATA_ZONE_BASE) >> self.page_shift
    }

    /// Allocates a data frame of `size` bytes (a power of two, at least the
    /// base page), aligned to its size. Base pages come from this thread's
    /// list (see the module documentation).
    ///
    /// # Errors
    /// [`MemError::OutOfMemory`] when injection says so, or when the data
    /// zone (2^32 base pages) is exhausted.
    pub fn alloc_data(&self, size: u64) -> Result<u64, MemError> {
        debug_assert!(size.is_power_of_two() && size >= 1 << self.page_shift);
        let kind = AllocKind::Data { size };
        if self.injected_failure(kind) {
            return Err(MemError::OutOfMemory(kind));
        }
        if size == 1 << self.page_shift {
            // Linux: mm/page_alloc.c, rmqueue_pcplist
            let pa = {
                let mut l = self.pcp().list.lock();
                let pa = match l.free.pop() {
                    Some(pa) => pa,
                    None => {
                        self.pcp_refill(&mut l.free)
                            .ok_or(MemError::OutOfMemory(kind))?;
                        l.free.pop().expect("a refill brings a batch")
                    }
                };
                l.live_frames = l.live_frames.wrapping_add(1);
                pa
            };
            let was = self.heads.set(self.bit_of(pa));
            debug_assert!(!was, "a free frame {pa:#x} had its head bit set");
            return Ok(pa);
        }
        let mut d = lock(&self.data);
        let pa = match d.free.get_mut(&size).and_then(Vec::pop) {
            Some(pa) => pa,
            None => self
                .carve(&mut d, size)
                .ok_or(MemError::OutOfMemory(kind))?,
        };
        let bit = self.bit_of(pa);
        self.heads.set(bit);
        self.large_heads.set(bit);
        d.large.insert(pa, size);
        d.live_frames += 1;
        d.live_bytes += size;
        Ok(pa)
    }

    /// A fresh frame of `size` from the bump pointer; the frames skipped by
    /// the alignment are kept for smaller requests. `None` when the data
    /// zone is exhausted.
    pub(super) fn carve(&self, d: &mut DataAlloc, size: u64) -> Option<u64> {
        let pa = d.next.checked_next_multiple_of(size)?;
        let end = pa.checked_add(size)?;
        if !FrameBits::holds(self.bit_of(end - 1)) {
            return None;
        }
        let mut gap = d.next;
        while gap < pa {
            let piece = 1u64 << gap.trailing_zeros().min((pa - gap).ilog2());
            d.free.entry(piece).or_default().push(gap);
            gap += piece;
        }
        d.next = end;
        Some(pa)
    }

    /// Returns a data frame.
    ///
    /// # Errors
    /// [`MemError::DoubleFree`], [`MemError::WrongSize`] or
    /// [`MemError::NotAFrame`]; nothing changes.
    pub fn free_data(&self, pa: u64, size: u64) -> Result<(), MemError> {
        let page = 1u64 << self.page_shift;
        if pa < DATA_ZONE_BASE || pa & (page - 1) != 0 {
            return Err(MemError::NotAFrame(pa));
        }
        let bit = self.bit_of(pa);
        if size == page && !self.large_heads.test(bit) {
            // Linux: mm/page_alloc.c, free_frozen_page_commit (to the pcp list)
            if !self.heads.clear(bit) {
                return Err(MemError::DoubleFree(pa));
            }
            let mut l = self.pcp().list.lock();
            l.free.push(pa);
            l.live_frames = l.live_frames.wrapping_sub(1);
            if l.free.len() > PCP_HIGH {
                let at = l.free.len() - PCP_BATCH;
                let mut d = lock(&self.data);
                d.free.entry(page).or_default().extend(l.free.drain(at..));
            }
            return Ok(());
        }
        let mut d = lock(&self.data);
        if !self.heads.test(bit) {
            return Err(MemError::DoubleFree(pa));
        }
        let allocated = d.large.get(&pa).copied().unwrap_or(page);
        if allocated != size {
            return Err(MemError::WrongSize {
                pa,
                allocated,
                freed: size,
            });
        }
        self.heads.clear(bit);
        self.large_heads.clear(bit);
        d.large.remove(&pa);
        d.free.entry(size).or_default().push(pa);
        d.live_frames -= 1;
        d.live_bytes -= size;
        Ok(())
    }

    /// Splits the allocated data frame at `pa` of `size` bytes into base
    /// pages, each then allocated on its own and freed with
    /// [`PhysMem::free_data`] of one base page (Linux `split_page`, as a
    /// large folio's split leaves base pages). A base page is left as it is.
    ///
    /// # Errors
    /// [`MemError::NotAFrame`], [`MemError::DoubleFree`] (not allocated) or
    /// [`MemError::WrongSize`]; nothing changes.
    pub fn split_data(&self, pa: u64, size: u64) -> Result<(), MemError> {
        let page = 1u64 << self.page_shift;
        if pa < DATA_ZONE_BASE || pa & (page - 1) != 0 {
            return Err(MemError::NotAFrame(pa));
        }
        let bit = self.bit_of(pa);
        let mut d = lock(&self.data);
        if !self.heads.test(bit) {
            return Err(MemError::DoubleFree(pa));
        }
        let allocated = d.large.get(&pa).copied().unwrap_or(page);
        if allocated != size {
            return Err(MemError::WrongSize {
                pa,
                allocated,
                freed: size,
            });
        }
        if size == page {
            return Ok(());
        }
        d.large.remove(&pa);
        self.large_heads.clear(bit);
        d.live_frames -= 1;
        d.live_bytes -= size;
        drop(d);
        let n = size / page;
        for i in 1..n {
            self.heads.set(bit + i);
        }
        // The base pages are counted as the per-thread lists count theirs
        // (the sum over lists is what `live_data` reports).
        let mut l = self.pcp().list.lock();
        l.live_frames = l.live_frames.wrapping_add(n);
        Ok(())
    }

    /// Data frames and bytes currently allocated.
    pub fn live_data(&self) -> (u64, u64) {
        let (large_frames, large_bytes) = {
            let d = lock(&self.data);
            (d.live_frames, d.live_bytes)
        };
        let small = self
            .pcps
            .iter()
            .fold(0u64, |n, p| n.wrapping_add(p.list.lock().live_frames));
        (
            large_frames + small,
            large_bytes + (small << self.page_shift),
        )
    }
}
