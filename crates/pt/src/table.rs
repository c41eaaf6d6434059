//! One page-table tree: its root and its per-level totals (here), the
//! hardware walk's view (`walk`: translate, the walk's words), iteration
//! (`iter`), the dump (`dump`), and the tree-wide conveniences map, unmap,
//! protect, free_empty and teardown (`edit`).
//!
//! The tree lives in [`PhysMem`]: every table is a real table page holding
//! the architecture's words, and every step down reads the next table's
//! physical address out of an entry. Entries are read and written, and
//! tables installed, only through the table layer's primitives (module
//! `pgtable`, named as Linux's pgtable.h names them), which the OS model
//! (`mm`) uses directly under its own locks; the conveniences here are the
//! same primitives driven over a range, for callers without an OS model
//! (tests, benches, the MMU's experiments).
//!
//! ## Concurrency contract
//!
//! Every method takes `&self`. Readers (translate, iterate, the MMU model's
//! hardware walk) may run at any time. Writers of entries in the same table
//! must be serialized by the caller (the OS model holds that table's lock,
//! as Linux does). The conveniences install a missing table under the
//! parent table's own lock ([`crate::mem::TableMeta::lock`]) with the
//! `pmd_none` re-check of Linux's `__pte_alloc`, so two of them may race to
//! install the same table; they do not serialize their leaf writes.
//!
//! ## Invariants
//!
//! - `TableMeta::present` of a table equals the number of its present
//!   software entries (kept by the primitives, the only writers).
//! - A contiguous / NAPOT run is always whole: all its entries present, with
//!   the contiguous flag, aligned to the run. Partial unmap or protect of a
//!   run first rewrites it as plain entries (ARM's break-before-make for the
//!   contiguous bit).
//! - A huge leaf partly unmapped or protected is split into a table of the
//!   next level down that maps the same pages with the same attributes.
//! - Tables are unlinked by [`PageTable::free_empty`] but returned to the
//!   allocator only by [`FreedTables::release`], which the caller calls after
//!   the TLB shootdown (Linux: `mmu_gather` / `tlb_remove_table`).

use crate::entry::{self, Attrs, Perms};
use crate::geometry::{Geometry, LeafKind, ENTRY_BYTES, MAX_LEVELS};
use crate::mem::{MemError, PhysMem};
use std::sync::atomic::AtomicU64 as StdAtomicU64;
use std::sync::Arc;
use thiserror::Error;

mod dump;
mod edit;
mod iter;
mod memo;
mod pgtable;
mod types;
mod walk;
pub use memo::{PrefetchStage, WalkMemo};
pub use pgtable::LeafRun;
pub use types::{Level, PhysAddr, TableAddr, VirtAddr};

/// Errors of the page-table operations.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum PtError {
    #[error("{size:#x} is not a leaf size of this geometry (allowed: {allowed})")]
    BadLeafSize { size: u64, allowed: String },
    #[error("{what} {value:#x} is not aligned to {align:#x}")]
    Misaligned {
        what: &'static str,
        value: u64,
        align: u64,
    },
    #[error("virtual range {va:#x}+{len:#x} is outside the {va_bits}-bit address space or not canonical")]
    OutOfRange { va: u64, len: u64, va_bits: u32 },
    #[error("physical address {pa:#x}+{len:#x} does not fit in {oa_bits} output bits")]
    PhysOutOfRange { pa: u64, len: u64, oa_bits: u32 },
    #[error("{va:#x} is already mapped")]
    AlreadyMapped { va: u64 },
    #[error("{arch} cannot express the permissions {perms:?} in a present entry")]
    Unrepresentable { arch: &'static str, perms: Perms },
    #[error("a table hangs below {va:#x} at {level}: free empty tables before mapping a huge leaf there")]
    TableInTheWay { va: u64, level: Level },
    #[error("{va:#x} is not mapped (walk stopped at {level})")]
    NotMapped { va: u64, level: Level },
    #[error("cannot split a {size:#x} leaf: {level} holds no leaves")]
    CannotSplit { size: u64, level: Level },
    #[error("corrupt entry: {0}")]
    Corrupt(#[from] entry::DecodeError),
    #[error(transparent)]
    Mem(#[from] MemError),
}

/// The result of a software translation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Translation {
    /// The physical address `va` translates to.
    pub pa: PhysAddr,
    /// Bytes mapped by the leaf (the run's size for a contiguous leaf).
    pub size: u64,
    /// Level of the leaf.
    pub level: Level,
    pub attrs: Attrs,
    pub contiguous: bool,
    /// Physical addresses of the hardware words a walk reads, root first.
    pub entry_pas: [PhysAddr; MAX_LEVELS],
    /// How many of `entry_pas` are used (the walk's memory references).
    pub reads: usize,
}

impl Translation {
    pub fn entry_pas(&self) -> &[PhysAddr] {
        &self.entry_pas[..self.reads]
    }
}

/// One leaf mapping (a contiguous run counts as one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    /// The first address it maps (aligned to `size`).
    pub va: VirtAddr,
    /// The physical address `va` maps to (aligned to `size`).
    pub pa: PhysAddr,
    pub size: u64,
    pub level: Level,
    pub attrs: Attrs,
    pub contiguous: bool,
}

/// Virtual ranges whose translations changed: the caller must invalidate
/// them in every TLB that may hold them before relying on the change.
#[must_use = "changed translations must be flushed from the TLBs"]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Flush {
    pub ranges: Vec<(u64, u64)>,
}

impl Flush {
    fn add(&mut self, va: u64, len: u64) {
        if let Some(last) = self.ranges.last_mut() {
            if last.0 + last.1 == va {
                last.1 += len;
                return;
            }
        }
        self.ranges.push((va, len));
    }
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }
    /// Bytes of virtual address space to invalidate.
    pub fn bytes(&self) -> u64 {
        self.ranges.iter().map(|r| r.1).sum()
    }
    /// The caller has invalidated the ranges (or has no TLB to invalidate).
    pub fn done(self) {}
}

/// What [`PageTable::unmap`] removed.
#[must_use = "unmapped translations must be flushed and their frames freed"]
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unmapped {
    /// The leaf pieces removed: (va, pa, size). A split leaf shows its pieces.
    pub pieces: Vec<(u64, u64, u64)>,
    pub flush: Flush,
}

/// Table pages unlinked from the tree, waiting to be returned to the allocator.
#[must_use = "unlinked tables must be released after the TLB shootdown"]
#[derive(Debug, Default, PartialEq, Eq)]
pub struct FreedTables {
    /// The level and page of each unlinked table.
    pub tables: Vec<(Level, TableAddr)>,
    /// Virtual ranges whose walks went through them (for the walk caches).
    pub flush: Flush,
}

impl FreedTables {
    /// Returns the tables to the allocator. Call only once no walker can
    /// reach them any more.
    ///
    /// # Errors
    /// A [`MemError`] if a table was freed twice (a bug).
    pub fn release(self, pt: &PageTable) -> Result<usize, MemError> {
        let n = self.tables.len();
        for (level, table) in self.tables {
            pt.mem.free_table(table.pa())?;
            pt.tables_per_level[level.get()].fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(n)
    }
}

/// A page-table tree of one geometry.
pub struct PageTable {
    geom: Arc<Geometry>,
    mem: Arc<PhysMem>,
    root: u64,
    /// Table pages per level (counted here so that VmPTE is O(1)).
    tables_per_level: [StdAtomicU64; MAX_LEVELS],
    /// log2 of the bytes of one software entry (its group of hardware words).
    entry_shift: u32,
}

impl PageTable {
    /// A tree with an empty root table.
    ///
    /// # Errors
    /// [`PtError::Mem`] if the root cannot be allocated.
    pub fn new(geom: Arc<Geometry>, mem: Arc<PhysMem>) -> Result<PageTable, PtError> {
        assert_eq!(
            mem.page_shift(),
            geom.page_shift(),
            "table pages must be as large as the base page"
        );
        let root = mem.alloc_table(geom.root_level())?;
        let entry_shift = (ENTRY_BYTES * geom.hw_words_per_entry()).trailing_zeros();
        let pt = PageTable {
            geom,
            mem,
            root,
            tables_per_level: Default::default(),
            entry_shift,
        };
        pt.tables_per_level[pt.geom.root_level()].store(1, std::sync::atomic::Ordering::Relaxed);
        Ok(pt)
    }

    /// A tree with its own fresh physical memory.
    ///
    /// # Errors
    /// As [`PageTable::new`].
    pub fn with_new_memory(geom: Geometry) -> Result<PageTable, PtError> {
        let mem = Arc::new(PhysMem::new(geom.page_shift()));
        PageTable::new(Arc::new(geom), mem)
    }

    pub fn geometry(&self) -> &Geometry {
        &self.geom
    }
    pub fn geometry_arc(&self) -> &Arc<Geometry> {
        &self.geom
    }
    pub fn mem(&self) -> &PhysMem {
        &self.mem
    }
    pub fn mem_arc(&self) -> &Arc<PhysMem> {
        &self.mem
    }
    /// Physical address of the root table (what CR3 / satp / TTBR0 holds).
    pub fn root(&self) -> u64 {
        self.root
    }
    /// The root table, for the table layer's primitives.
    #[inline]
    pub fn root_table(&self) -> TableAddr {
        TableAddr::new(self.root)
    }

    /// Table pages currently in the tree, at every level (the root
    /// included): the sum of [`PageTable::tables_at`] over the levels, read
    /// without stepping through them (levels the geometry lacks count 0).
    #[inline]
    pub fn tables_total(&self) -> u64 {
        self.tables_per_level
            .iter()
            .map(|c| c.load(std::sync::atomic::Ordering::Relaxed))
            .sum()
    }

    /// Table pages currently in the tree at `level`.
    pub fn tables_at(&self, level: Level) -> u64 {
        self.tables_per_level[level.get()].load(std::sync::atomic::Ordering::Relaxed)
    }

    /// The architecture's name for `level` (PTE, PMD, ... on x86-64; L3 to
    /// L0 on ARM64).
    pub fn level_name(&self, level: Level) -> &str {
        &self.geom.level(level.get()).name
    }

    // ---------------------------------------------------------------
    // The hardware walk's view.

    /// Physical address of the hardware word a hardware walk reads for `va`
    /// in `table` (of `level`): inside the software entry, the word of the
    /// hardware page that `va` falls in.
    #[inline]
    pub fn hw_entry_pa(&self, table: TableAddr, level: Level, va: VirtAddr) -> PhysAddr {
        table
            .phys()
            .add(self.geom.hw_word_offset(level.get(), va.get()))
    }

    // ---------------------------------------------------------------
    // Checks.

    fn check_va(&self, va: u64, len: u64) -> Result<(), PtError> {
        let g = &*self.geom;
        let end = va.checked_add(len.saturating_sub(1));
        let ok = len > 0
            && end.is_some_and(|e| g.is_canonical(va) && g.is_canonical(e))
            && ((va as i64) < 0) == ((end.unwrap_or(0) as i64) < 0);
        if ok {
            Ok(())
        } else {
            Err(PtError::OutOfRange {
                va,
                len,
                va_bits: g.va_bits(),
            })
        }
    }

    fn check_representable(&self, attrs: &Attrs) -> Result<(), PtError> {
        if entry::representable(&self.geom, attrs) {
            Ok(())
        } else {
            Err(PtError::Unrepresentable {
                arch: self.geom.arch().name(),
                perms: attrs.perms,
            })
        }
    }

    fn check_aligned(what: &'static str, value: u64, align: u64) -> Result<(), PtError> {
        if value.is_multiple_of(align) {
            Ok(())
        } else {
            Err(PtError::Misaligned { what, value, align })
        }
    }

    /// The leaf kind for `size`, or the error listing the allowed sizes.
    ///
    /// # Errors
    /// [`PtError::BadLeafSize`].
    pub fn leaf_kind(&self, size: u64) -> Result<LeafKind, PtError> {
        self.geom
            .leaf_kind(size)
            .ok_or_else(|| PtError::BadLeafSize {
                size,
                allowed: self
                    .geom
                    .leaf_sizes()
                    .iter()
                    .map(|s| crate::geometry::human_size(*s))
                    .collect::<Vec<_>>()
                    .join(", "),
            })
    }
}

/// The last address covered by the table (spanning `span_bits` of VA) that
/// contains `va`.
fn table_end(va: VirtAddr, span_bits: u32) -> VirtAddr {
    VirtAddr::new(if span_bits >= 64 {
        u64::MAX
    } else {
        va.get() | ((1u64 << span_bits) - 1)
    })
}
