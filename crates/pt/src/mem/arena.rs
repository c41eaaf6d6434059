//! The table arena: where every table page's words live.
//!
//! Table page `n` of the arena is at `TABLE_ZONE_BASE + n * table_bytes`.
//! The arena is cut into chunks of [`CHUNK_BYTES`](super::CHUNK_BYTES),
//! created on first use; the first ones are one contiguous allocation
//! ([`super::flat`], a host-side acceleration: see `pt::accel`), the rest are
//! allocated one by one. A physical address becomes a word with one
//! subtraction in the contiguous part, and two loads past it.
//!
//! ## Invariants
//!
//! - A table page stays in the arena at the same address for its whole
//!   life, and a chunk once created is never freed or moved before the
//!   [`PhysMem`] is dropped: references into it live as long as the owner.
//! - A chunk's first word is published in `chunk_words` (Release) only after
//!   the chunk exists and is zeroed; a reader that sees the pointer
//!   (Acquire) sees the zeroed words.
//! - Words are read and written atomically, so hardware walkers may read
//!   while the OS model writes.
//! - PTE tables in the compact zone are read and written here too, by
//!   physical address, through `compact` (which keeps their invariants).
//! - A read outside the arena gives 0 (an unbacked bus read); a write or a
//!   compare-and-swap there is a bug in the caller and panics.

use super::{PhysMem, TableMeta, CHUNK_BYTES, CHUNK_SHIFT, TABLE_ZONE_BASE};
use crate::sync::{AtomicU64, Ordering};
use std::sync::atomic::{AtomicPtr as StdAtomicPtr, Ordering as StdOrdering};

/// Element `i` of chunk `c`, through the pointer to its first element that
/// `PhysMem::chunk_init` published in `firsts[c]`; `None` if `c` is out of
/// range or the chunk was not created yet.
///
/// # Safety
/// `i` must be below the number of elements of a chunk. Published pointers
/// point into memory the `PhysMem` owns (its contiguous part, or a chunk it
/// keeps boxed) and never frees or moves before it is dropped, which the
/// returned borrow of `firsts` (a field of it) cannot outlive.
#[inline(always)]
pub(super) unsafe fn published<T>(firsts: &[StdAtomicPtr<T>], c: usize, i: usize) -> Option<&T> {
    let first = firsts.get(c)?.load(StdOrdering::Acquire);
    if first.is_null() {
        return None;
    }
    // SAFETY: `first` points to a live chunk (above) and the caller keeps
    // `i` within it.
    Some(unsafe { &*first.add(i) })
}

impl PhysMem {
    pub(super) fn chunk_init(&self, c: usize) -> &[AtomicU64] {
        let metas = self.metas[c].get_or_init(|| {
            (0..(1u64 << self.pages_per_chunk_shift))
                .map(|_| super::ptdesc::PaddedMeta(TableMeta::new()))
                .collect()
        });
        self.meta_firsts[c].store(metas.as_ptr().cast_mut(), StdOrdering::Release);
        const CHUNK_WORDS: usize = (CHUNK_BYTES / 8) as usize;
        let first = match &self.flat {
            Some(f) if (c as u64) < self.flat_bytes / CHUNK_BYTES => f.word_ptr(c * CHUNK_WORDS),
            _ => self.chunks[c]
                .get_or_init(|| (0..CHUNK_WORDS).map(|_| AtomicU64::new(0)).collect())
                .as_ptr()
                .cast_mut(),
        };
        // Published after the chunk exists; readers that see the pointer
        // (Acquire) see the zeroed words.
        self.chunk_words[c].store(first, StdOrdering::Release);
        // SAFETY: `first` is the first of the CHUNK_WORDS words of chunk `c`,
        // in `self.flat` or in the box `self.chunks[c]` owns; neither is
        // freed or moved before `self` is dropped.
        unsafe { std::slice::from_raw_parts(first, CHUNK_WORDS) }
    }

    pub(super) fn slot_of(&self, pa: u64) -> Option<u64> {
        if pa < TABLE_ZONE_BASE || pa & ((1 << self.page_shift) - 1) != 0 {
            return None;
        }
        let slot = (pa - TABLE_ZONE_BASE) >> self.page_shift;
        let c = (slot >> self.pages_per_chunk_shift) as usize;
        let created = self
            .chunk_words
            .get(c)
            .is_some_and(|w| !w.load(StdOrdering::Acquire).is_null());
        created.then_some(slot)
    }

    pub(super) fn page_words(&self, slot: u64) -> &[AtomicU64] {
        let c = (slot >> self.pages_per_chunk_shift) as usize;
        let chunk = self.chunk_init(c);
        let first =
            ((slot & ((1 << self.pages_per_chunk_shift) - 1)) * self.words_per_page) as usize;
        &chunk[first..first + self.words_per_page as usize]
    }

    #[inline]
    pub(super) fn word(&self, pa: u64) -> Option<&AtomicU64> {
        // The word holding byte `pa`, as the chunk path below finds it.
        if let Some(addr) = self.flat_addr(pa & !7) {
            // SAFETY: `flat_addr` gives the 8-aligned word at offset `pa -
            // TABLE_ZONE_BASE` of `flat`, which lives as long as `self`.
            return Some(unsafe { &*addr });
        }
        let off = pa.wrapping_sub(TABLE_ZONE_BASE);
        // A chunk holds the words of its pages in address order.
        let i = ((off & (CHUNK_BYTES - 1)) >> 3) as usize;
        // SAFETY: a chunk holds `CHUNK_BYTES / 8` words, so the masked index
        // `i` is in bounds.
        unsafe { published(&self.chunk_words, (off >> CHUNK_SHIFT) as usize, i) }
    }

    /// Reads the 8-byte word at physical address `pa` (0 outside the arena,
    /// as an unbacked bus read would give nothing useful).
    #[inline]
    pub fn read(&self, pa: u64) -> u64 {
        if let Some(addr) = self.flat_addr(pa & !7) {
            // SAFETY: as in `word`.
            return unsafe { &*addr }.load(Ordering::Acquire);
        }
        if let Some(w) = self.promoted_word(pa) {
            return w.load(Ordering::Acquire);
        }
        self.read_slow(pa)
    }

    /// [`PhysMem::read`] of a word neither in the contiguous arena nor in
    /// a promoted compact table.
    #[cold]
    #[inline(never)]
    fn read_slow(&self, pa: u64) -> u64 {
        if let Some((slot, i)) = self.compact_at(pa) {
            return slot.read(i);
        }
        self.word(pa).map_or(0, |w| w.load(Ordering::Acquire))
    }

    /// Sets the word at `pa` to `value` and returns what it held: a load
    /// and a store, for a writer that holds the lock over the word's table
    /// (a compact table stores nothing for a zero written where nothing is).
    ///
    /// # Panics
    /// If `pa` is outside the table arena (a bug in the caller).
    #[inline(always)]
    pub fn replace(&self, pa: u64, value: u64) -> u64 {
        if let Some(w) = self.promoted_word(pa) {
            let old = w.load(Ordering::Acquire);
            w.store(value, Ordering::Release);
            return old;
        }
        if let Some((slot, i)) = self.compact_at(pa) {
            return self.compact_replace(slot, i, value);
        }
        let w = self.word_at(pa);
        let old = w.load(Ordering::Acquire);
        w.store(value, Ordering::Release);
        old
    }

    /// The word at `pa`, for a read and a write of the same entry.
    ///
    /// # Panics
    /// If `pa` is outside the table arena (a bug in the caller).
    #[inline]
    pub fn word_at(&self, pa: u64) -> &AtomicU64 {
        if let Some((slot, i)) = self.compact_at(pa) {
            return self.compact_word_mut(slot, i);
        }
        self.word(pa)
            .unwrap_or_else(|| panic!("access outside the table arena at {pa:#x}"))
    }

    /// [`PhysMem::read`] for a hardware walk: the word at an entry address
    /// `pa` (8-byte aligned) with the fewest steps between the previous
    /// entry's value and this load, which is the walk's critical path.
    #[inline(always)]
    pub fn read_walk(&self, pa: u64) -> u64 {
        if let Some(addr) = self.flat_addr(pa) {
            // SAFETY: `flat_addr` gives the word at offset `pa -
            // TABLE_ZONE_BASE` of `flat` (8-aligned for an 8-aligned `pa`),
            // which lives as long as `self`.
            return unsafe { &*addr }.load(Ordering::Acquire);
        }
        if let Some(w) = self.promoted_word(pa) {
            return w.load(Ordering::Acquire);
        }
        self.read_outside_flat(pa)
    }

    /// [`PhysMem::read_walk`] of a word of a table above the leaf level:
    /// such tables are never compact (the compact zone holds PTE tables
    /// only), so the walk's upper steps test the contiguous arena alone and
    /// leave every other address to the out-of-line read, which answers for
    /// any address as [`PhysMem::read`] does. Keeping the compact test out
    /// of these steps keeps the walk loop as small as before compact tables.
    #[inline(always)]
    pub fn read_walk_upper(&self, pa: u64) -> u64 {
        if let Some(addr) = self.flat_addr(pa) {
            // SAFETY: as in `read_walk`.
            return unsafe { &*addr }.load(Ordering::Acquire);
        }
        self.read_outside_flat(pa)
    }

    /// [`PhysMem::read_walk`] of a PTE (a word of a leaf-level table): a
    /// promoted compact table first, where a dense table lives when this
    /// memory has a compact zone; then the contiguous arena (memories
    /// without one); any other address out of line, as [`PhysMem::read`].
    #[inline(always)]
    pub fn read_walk_pte(&self, pa: u64) -> u64 {
        if let Some(w) = self.promoted_word(pa) {
            return w.load(Ordering::Acquire);
        }
        if let Some(addr) = self.flat_addr(pa) {
            // SAFETY: as in `read_walk`.
            return unsafe { &*addr }.load(Ordering::Acquire);
        }
        self.read_outside_flat(pa)
    }

    /// The host address of the word at `pa` if it lies in the contiguous
    /// part of the arena: one addition (see `flat_biased`).
    #[inline(always)]
    pub(super) fn flat_addr(&self, pa: u64) -> Option<*const AtomicU64> {
        // Below the zone, the offset wraps past `flat_bytes`: one check.
        (pa.wrapping_sub(TABLE_ZONE_BASE) < self.flat_bytes)
            .then(|| self.flat_biased.wrapping_add(pa as usize) as *const AtomicU64)
    }

    /// [`PhysMem::read`] past the contiguous part of the arena: out of line,
    /// so that a walk's loop carries none of its work.
    #[cold]
    #[inline(never)]
    pub(super) fn read_outside_flat(&self, pa: u64) -> u64 {
        self.read(pa)
    }

    /// Hints the host CPU to bring the word at `pa` into its caches (a
    /// software prefetch) when it lies in the contiguous part of the arena
    /// or in a promoted compact table (where dense PTE tables live when the
    /// memory has a compact zone: the table's bias is read, the word is
    /// prefetched); nothing happens elsewhere or on hosts without a
    /// prefetch instruction. Changes nothing.
    #[inline(always)]
    pub fn prefetch(&self, pa: u64) {
        let addr = match self.flat_addr(pa) {
            Some(addr) => addr,
            None => match self.promoted_word(pa) {
                Some(w) => std::ptr::from_ref(w),
                None => return,
            },
        };
        #[cfg(target_arch = "x86_64")]
        // SAFETY: a prefetch reads nothing the program can see and cannot
        // fault; `addr` lies inside `flat` or a live pool page anyway.
        unsafe {
            core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(addr.cast());
        }
        #[cfg(not(target_arch = "x86_64"))]
        let _ = addr;
    }

    /// Writes the word at `pa`.
    ///
    /// # Panics
    /// If `pa` is outside the table arena (a bug in the caller).
    #[inline]
    pub fn write(&self, pa: u64, value: u64) {
        if self.compact_at(pa).is_some() {
            self.replace(pa, value);
            return;
        }
        self.word(pa)
            .unwrap_or_else(|| panic!("write outside the table arena at {pa:#x}"))
            .store(value, Ordering::Release);
    }

    /// Compare-and-swap on the word at `pa`; returns the previous value on failure.
    ///
    /// # Errors
    /// The word's current value when it is not `current`.
    #[inline]
    pub fn compare_exchange(&self, pa: u64, current: u64, new: u64) -> Result<u64, u64> {
        if let Some((slot, i)) = self.compact_at(pa) {
            return self.compact_cas(slot, i, current, new);
        }
        self.word(pa)
            .unwrap_or_else(|| panic!("cas outside the table arena at {pa:#x}"))
            .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire)
    }
}
