//! The metadata beside each table page, like Linux's `struct ptdesc`: the
//! table's own lock and its count of present entries.
//!
//! ## Invariants
//!
//! - Every table page of the arena has one [`TableMeta`], created with the
//!   page's chunk and never moved: [`PhysMem::meta`] is two loads.
//! - `allocated` is true exactly while the page is handed out (set with
//!   Release after the page is zeroed and its level and count are set;
//!   cleared once, by the one free that succeeds).
//! - Each meta of a full table page sits on its own cache lines
//!   ([`PaddedMeta`]): the lock and the count are written on every fault
//!   into the table, and two threads faulting into neighbouring tables
//!   must not share a line. A compact table's meta lives in its slot
//!   (`compact`), 12 bytes beside its entries: memory over false sharing,
//!   since compact tables are the many sparse ones.

use super::arena::published;
use super::PhysMem;
use super::{CHUNK_BYTES, CHUNK_SHIFT, TABLE_ZONE_BASE};
use crate::sync::{AtomicBool, AtomicU32, Ordering, SpinGuard, SpinLock};

/// The bookkeeping beside a table page (Linux's `ptdesc`).
pub struct TableMeta {
    /// The table's own lock (Linux: the split PTE / PMD lock in `ptdesc`).
    pub lock: SpinLock,
    /// Present (software) entries in the table.
    pub present: AtomicU32,
    pub(super) allocated: AtomicBool,
    pub(super) level: AtomicU32,
}

/// A full table page's meta, on its own cache lines (see the invariants).
#[repr(align(128))]
pub(super) struct PaddedMeta(pub(super) TableMeta);

impl TableMeta {
    pub(super) fn new() -> TableMeta {
        TableMeta {
            lock: SpinLock::new(()),
            present: AtomicU32::new(0),
            allocated: AtomicBool::new(false),
            level: AtomicU32::new(0),
        }
    }
    /// The level this table page was allocated for.
    pub fn level(&self) -> usize {
        self.level.load(Ordering::Relaxed) as usize
    }
    /// Locks the table (the caller holds the guard for as long as it edits).
    pub fn lock(&self) -> SpinGuard<'_> {
        self.lock.lock()
    }
}

impl PhysMem {
    pub(super) fn meta_of_slot(&self, slot: u64) -> &TableMeta {
        let c = (slot >> self.pages_per_chunk_shift) as usize;
        let metas = match self.metas[c].get() {
            Some(m) => m,
            None => {
                self.chunk_init(c);
                self.metas[c].get().expect("initialized with its chunk")
            }
        };
        &metas[(slot & ((1 << self.pages_per_chunk_shift) - 1)) as usize].0
    }

    /// The metadata (lock, present count) of the table page containing `pa`.
    ///
    /// # Panics
    /// If `pa` is not in the table zone: a bug in the caller.
    #[inline]
    pub fn meta(&self, pa: u64) -> &TableMeta {
        // The fast path of every entry write and table lock: no
        // initialization check beyond the chunk's presence.
        if let Some((slot, _)) = self.compact_at(pa) {
            return &slot.meta;
        }
        let found = pa.checked_sub(TABLE_ZONE_BASE).and_then(|off| {
            let i = ((off & (CHUNK_BYTES - 1)) >> self.page_shift) as usize;
            // SAFETY: a chunk has `CHUNK_BYTES >> page_shift` pages, one
            // meta each, so `i` is in bounds.
            unsafe { published(&self.meta_firsts, (off >> CHUNK_SHIFT) as usize, i) }
        });
        let found = found.map(|m| &m.0);
        found.unwrap_or_else(|| panic!("{pa:#x} is not a table page"))
    }

    /// Whether `pa` lies in a table page that is currently allocated.
    pub fn is_live_table(&self, pa: u64) -> bool {
        let page = pa & !((1u64 << self.page_shift) - 1);
        if let Some((slot, _)) = self.compact_at(page) {
            return slot.meta.allocated.load(Ordering::Acquire);
        }
        self.slot_of(page)
            .is_some_and(|s| self.meta_of_slot(s).allocated.load(Ordering::Acquire))
    }
}
