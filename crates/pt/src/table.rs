//! One page-table tree: its root, its per-level totals, the hardware
//! walk's view (translate, the walk's words), iteration and dump, and the
//! tree-wide conveniences map, unmap, protect, free_empty and teardown.
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

use crate::entry::{self, Attrs, Entry, Perms};
use crate::geometry::{Geometry, LeafKind, ENTRY_BYTES, MAX_LEVELS};
use crate::mem::{MemError, PhysMem};
use std::fmt::Write as _;
use std::sync::atomic::AtomicU64 as StdAtomicU64;
use std::sync::Arc;
use thiserror::Error;

mod memo;
mod pgtable;
mod types;
pub use memo::{PrefetchStage, WalkMemo};
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

    // ---------------------------------------------------------------
    // Map.

    /// Maps `[va, va + len)` to `[pa, pa + len)` with leaves of `leaf_size`
    /// (any size [`Geometry::leaf_sizes`] lists: a page, a block, or a
    /// contiguous / NAPOT run). Either everything is mapped or nothing.
    ///
    /// # Errors
    /// [`PtError::BadLeafSize`], [`PtError::Misaligned`] (va, pa or len not
    /// multiples of the leaf size), [`PtError::OutOfRange`],
    /// [`PtError::PhysOutOfRange`], [`PtError::AlreadyMapped`] if any page
    /// of the range is mapped, [`PtError::Mem`] if tables run out.
    pub fn map(
        &self,
        va: VirtAddr,
        pa: PhysAddr,
        len: u64,
        leaf_size: u64,
        attrs: Attrs,
    ) -> Result<(), PtError> {
        let kind = self.leaf_kind(leaf_size)?;
        self.check_representable(&attrs)?;
        Self::check_aligned("virtual address", va.get(), leaf_size)?;
        Self::check_aligned("physical address", pa.get(), leaf_size)?;
        Self::check_aligned("length", len, leaf_size)?;
        self.check_va(va.get(), len)?;
        let oa = self.geom.oa_bits();
        if pa.checked_add(len).is_none_or(|end| end.get() > 1u64 << oa) {
            return Err(PtError::PhysOutOfRange {
                pa: pa.get(),
                len,
                oa_bits: oa,
            });
        }
        if let Some(m) = self.first_mapping(va, len)? {
            return Err(PtError::AlreadyMapped {
                va: m.va.max(va).get(),
            });
        }
        let mut done = 0;
        while done < len {
            match self.map_in_one_table(va + done, pa + done, len - done, kind, attrs) {
                Ok(n) => done += n,
                Err(e) => {
                    if done > 0 {
                        // Keep the all-or-nothing promise.
                        let undone = self.unmap(va, done)?;
                        undone.flush.done();
                    }
                    return Err(e);
                }
            }
        }
        Ok(())
    }

    /// Maps leaves from `va` up to `len` bytes or the end of the table that
    /// holds them, whichever comes first; returns the bytes mapped. One walk
    /// from the root serves a whole table of leaves.
    fn map_in_one_table(
        &self,
        va: VirtAddr,
        pa: PhysAddr,
        len: u64,
        kind: LeafKind,
        attrs: Attrs,
    ) -> Result<u64, PtError> {
        let g = &*self.geom;
        let leaf_level = Level::new(kind.level);
        let mut table = self.root_table();
        for level in self
            .root_level()
            .down_to_pte()
            .take_while(|l| *l > leaf_level)
        {
            table = self.table_below(table, level, va)?;
        }
        let l = g.level(kind.level);
        let step = l.entry_size();
        let table_left = table_end(va, l.shift + l.bits).offset_from(va) + 1;
        let n = len.min(table_left);
        let contiguous = kind.is_contiguous();
        let mut off = 0;
        while off < n {
            // An empty table below a would-be huge leaf must be freed first
            // (Linux maps a THP only on a pmd_none entry).
            if let Entry::Table { .. } = self.read_entry(table, leaf_level, va + off)? {
                return Err(PtError::TableInTheWay {
                    va: (va + off).get(),
                    level: leaf_level,
                });
            }
            off += step;
        }
        self.set_ptes(table, leaf_level, va, pa, n / step, attrs, contiguous);
        Ok(n)
    }

    /// The table below the entry for `va` of `table` (of `level`),
    /// installing an empty one if the entry is empty (under the parent
    /// table's own lock: the tree-wide operations have no OS model to say
    /// which lock covers an entry).
    ///
    /// # Errors
    /// [`PtError::AlreadyMapped`] if the entry is a leaf; [`PtError::Mem`]
    /// if no table page can be had.
    fn table_below(
        &self,
        table: TableAddr,
        level: Level,
        va: VirtAddr,
    ) -> Result<TableAddr, PtError> {
        if let Some(t) = self.next_table(table, level, va) {
            return Ok(t);
        }
        if self.is_none(table, level, va) {
            self.alloc_install(table, level, va, || self.ptlock_ptr(table).lock())?;
        }
        match self.read_entry(table, level, va)? {
            Entry::Table { pa } => Ok(TableAddr::new(pa)),
            _ => Err(PtError::AlreadyMapped { va: va.get() }),
        }
    }

    // ---------------------------------------------------------------
    // Translate.

    /// Walks the tree for `va` as the hardware would (the software view of
    /// a software-page geometry: one walk per software entry), recording the
    /// physical address of every hardware word read.
    ///
    /// # Errors
    /// [`PtError::NotMapped`] naming the level where the walk met an empty
    /// entry; [`PtError::OutOfRange`] for a non-canonical address;
    /// [`PtError::Corrupt`] for a reserved encoding.
    #[inline]
    pub fn translate(&self, va: VirtAddr) -> Result<Translation, PtError> {
        let g = &*self.geom;
        if !g.is_canonical(va.get()) {
            return Err(PtError::OutOfRange {
                va: va.get(),
                len: 1,
                va_bits: g.va_bits(),
            });
        }
        self.walk_to_leaf(va)
    }

    /// The walk of [`PageTable::translate`] for a canonical `va`. A table
    /// entry is tested and followed through the level's word test (which
    /// accepts exactly what [`entry::table_pa`] accepts, see
    /// `layout::TableFields`); any other word goes to the codec's decode.
    #[inline(always)]
    fn walk_to_leaf(&self, va: VirtAddr) -> Result<Translation, PtError> {
        let g = &*self.geom;
        let mut entry_pas = [PhysAddr::new(0); MAX_LEVELS];
        let mut table = self.root_table();
        for (i, (level, f)) in g.fast_levels().iter().enumerate().rev().enumerate() {
            let epa = table.phys() + f.word_offset(va.get());
            entry_pas[i] = epa;
            let reads = i + 1;
            let raw = self.mem.read_walk(epa.get());
            if raw & f.table.mask == f.table.value {
                table = TableAddr::new(f.table.next_table(raw));
                continue;
            }
            match entry::decode(g, level, raw)? {
                Entry::Table { pa } => table = TableAddr::new(pa),
                Entry::Invalid => {
                    return Err(PtError::NotMapped {
                        va: va.get(),
                        level: Level::new(level),
                    })
                }
                Entry::Leaf {
                    pa,
                    attrs,
                    contiguous,
                } => {
                    let size = if contiguous {
                        g.entry_size(level) * u64::from(g.contig(level).max(1))
                    } else {
                        g.entry_size(level)
                    };
                    return Ok(Translation {
                        pa: PhysAddr::new(entry::leaf_output(pa, size, va.get())),
                        size,
                        level: Level::new(level),
                        attrs,
                        contiguous,
                        entry_pas,
                        reads,
                    });
                }
            }
        }
        unreachable!("level 0 holds only leaves or nothing")
    }

    /// Hints the host to bring into its caches the word a walk for `va`
    /// reads at the lowest level it reaches ([`PageTable::last_walk_word`]):
    /// the levels above are read as a walk reads them (their few tables are
    /// usually cached), the last one is prefetched. A replay that knows its
    /// next addresses calls this a few accesses ahead, so that the walks'
    /// misses in the host's caches overlap instead of queueing. Changes
    /// nothing.
    #[inline]
    pub fn prefetch_walk(&self, va: VirtAddr) {
        if let Some(epa) = self.last_walk_word(va) {
            self.mem.prefetch(epa.get());
        }
    }

    /// The physical address of the last hardware word a walk for `va`
    /// reads: the leaf, or the first entry that is not a table; `None` for a
    /// non-canonical `va`. It reads the levels above with each level's table
    /// test and address fields rather than the codec: a replay calls it
    /// once per access.
    pub fn last_walk_word(&self, va: VirtAddr) -> Option<PhysAddr> {
        if !self.geom.is_canonical(va.get()) {
            return None;
        }
        Some(match self.table_on_path(va, Level::PTE) {
            Ok(table) => self.hw_entry_pa(table, Level::PTE, va),
            Err(last) => last,
        })
    }

    /// The table of `level` a walk for (canonical) `va` reaches, or the
    /// address of the word above it where the walk stops (a leaf or an
    /// empty entry).
    fn table_on_path(&self, va: VirtAddr, level: Level) -> Result<TableAddr, PhysAddr> {
        let mut table = self.root_table();
        for f in self.geom.fast_levels()[level.get() + 1..].iter().rev() {
            let epa = table.phys() + f.word_offset(va.get());
            let raw = self.mem.read_walk(epa.get());
            if raw & f.table.mask != f.table.value {
                return Err(epa);
            }
            table = TableAddr::new(f.table.next_table(raw));
        }
        Ok(table)
    }

    // ---------------------------------------------------------------
    // Iterate.

    /// Calls `f` for every leaf overlapping `[va, va + len)`, in address
    /// order; a contiguous run is reported once, whole.
    ///
    /// # Errors
    /// [`PtError::Corrupt`] for a reserved encoding.
    pub fn for_each_mapping(
        &self,
        va: VirtAddr,
        len: u64,
        f: &mut dyn FnMut(Mapping),
    ) -> Result<(), PtError> {
        if len == 0 {
            return Ok(());
        }
        self.walk_range(
            self.root_table(),
            self.root_level(),
            va,
            va.saturating_add(len - 1),
            f,
        )
    }

    /// Visits the entries of `table` (of `level`) that overlap `[first,
    /// last]`, in address order: `f(va, entry)` gets the first address the
    /// entry maps and returns how many bytes to step (the entry's size, or a
    /// whole contiguous run's). The one loop every range walk shares.
    fn visit_entries(
        &self,
        table: TableAddr,
        level: Level,
        first: VirtAddr,
        last: VirtAddr,
        f: &mut dyn FnMut(VirtAddr, Entry) -> Result<u64, PtError>,
    ) -> Result<(), PtError> {
        let g = &*self.geom;
        let l = g.level(level.get());
        let size = l.entry_size();
        let stop = last.min(table_end(first, l.shift + l.bits));
        let mut va = first.align_down(size);
        while va <= stop {
            let step = f(va, self.read_entry(table, level, va)?)?;
            match va.align_down(step).checked_add(step) {
                Some(n) => va = n,
                None => break,
            }
        }
        Ok(())
    }

    /// The leaf found at `va` of `level`, whole: a contiguous run from its
    /// first entry.
    fn leaf_mapping(
        &self,
        level: Level,
        va: VirtAddr,
        pa: u64,
        attrs: Attrs,
        contiguous: bool,
    ) -> Mapping {
        let size = self.entry_size(level);
        let run = if contiguous {
            size * self.contig_entries(level)
        } else {
            size
        };
        Mapping {
            va: va.align_down(run),
            pa: PhysAddr::new(pa).align_down(run),
            size: run,
            level,
            attrs,
            contiguous,
        }
    }

    fn walk_range(
        &self,
        table: TableAddr,
        level: Level,
        first: VirtAddr,
        last: VirtAddr,
        f: &mut dyn FnMut(Mapping),
    ) -> Result<(), PtError> {
        let size = self.entry_size(level);
        self.visit_entries(table, level, first, last, &mut |va, e| match e {
            Entry::Invalid => Ok(size),
            Entry::Table { pa } => {
                let (first, last) = (va.max(first), (va + (size - 1)).min(last));
                self.walk_range(TableAddr::new(pa), level.down(), first, last, f)?;
                Ok(size)
            }
            Entry::Leaf {
                pa,
                attrs,
                contiguous,
            } => {
                let m = self.leaf_mapping(level, va, pa, attrs, contiguous);
                f(m);
                Ok(m.size)
            }
        })
    }

    /// Every leaf overlapping the range.
    ///
    /// # Errors
    /// As [`PageTable::for_each_mapping`].
    pub fn mappings(&self, va: VirtAddr, len: u64) -> Result<Vec<Mapping>, PtError> {
        let mut v = Vec::new();
        self.for_each_mapping(va, len, &mut |m| v.push(m))?;
        Ok(v)
    }

    fn first_mapping(&self, va: VirtAddr, len: u64) -> Result<Option<Mapping>, PtError> {
        // The walk is cheap for a sparse range; stop reporting after one.
        let mut found = None;
        self.for_each_mapping(va, len, &mut |m| {
            if found.is_none() {
                found = Some(m)
            }
        })?;
        Ok(found)
    }

    // ---------------------------------------------------------------
    // Unmap and protect.

    /// Removes every leaf in `[va, va + len)`, splitting a huge leaf or a
    /// contiguous run that is only partly inside. Tables are not freed (see
    /// [`PageTable::free_empty`]).
    ///
    /// # Errors
    /// [`PtError::Misaligned`] (va or len not multiples of the base page),
    /// [`PtError::OutOfRange`], [`PtError::Mem`] if a split needs a table
    /// page and none can be had (the tree is unchanged for the leaf being split).
    pub fn unmap(&self, va: VirtAddr, len: u64) -> Result<Unmapped, PtError> {
        let page = self.geom.page_size();
        Self::check_aligned("virtual address", va.get(), page)?;
        Self::check_aligned("length", len, page)?;
        self.check_va(va.get(), len)?;
        let mut out = Unmapped::default();
        self.edit_range(va, len, &mut |pt, table, level, m| {
            let step = pt.entry_size(level);
            for i in 0..m.size / step {
                pt.pte_clear(table, level, m.va + i * step);
            }
            out.pieces.push((m.va.get(), m.pa.get(), m.size));
            out.flush.add(m.va.get(), m.size);
        })?;
        Ok(out)
    }

    /// Sets the permissions of every leaf in `[va, va + len)` to `perms`,
    /// keeping the other attributes (accessed, dirty, memory type), splitting
    /// leaves partly inside.
    ///
    /// # Errors
    /// As [`PageTable::unmap`].
    pub fn protect(&self, va: VirtAddr, len: u64, perms: Perms) -> Result<Flush, PtError> {
        let page = self.geom.page_size();
        self.check_representable(&Attrs::new(perms))?;
        Self::check_aligned("virtual address", va.get(), page)?;
        Self::check_aligned("length", len, page)?;
        self.check_va(va.get(), len)?;
        let mut flush = Flush::default();
        self.edit_range(va, len, &mut |pt, table, level, m| {
            let step = pt.entry_size(level);
            let attrs = Attrs { perms, ..m.attrs };
            pt.set_ptes(table, level, m.va, m.pa, m.size / step, attrs, m.contiguous);
            flush.add(m.va.get(), m.size);
        })?;
        Ok(flush)
    }

    /// Applies `edit` to every leaf wholly inside `[va, va + len)` after
    /// splitting the leaves that straddle its ends. `edit` gets the table and
    /// level holding the leaf and the leaf itself (a whole run for
    /// contiguous leaves).
    fn edit_range(
        &self,
        va: VirtAddr,
        len: u64,
        edit: &mut dyn FnMut(&PageTable, TableAddr, Level, Mapping),
    ) -> Result<(), PtError> {
        self.split_at(va)?;
        // The end needs a split only if something can lie beyond it.
        if let Some(end) = va
            .checked_add(len)
            .filter(|e| self.geom.is_canonical(e.get()))
        {
            self.split_at(end)?;
        }
        self.edit_walk(
            self.root_table(),
            self.root_level(),
            va,
            va + (len - 1),
            edit,
        )
    }

    fn edit_walk(
        &self,
        table: TableAddr,
        level: Level,
        first: VirtAddr,
        last: VirtAddr,
        edit: &mut dyn FnMut(&PageTable, TableAddr, Level, Mapping),
    ) -> Result<(), PtError> {
        let size = self.entry_size(level);
        self.visit_entries(table, level, first, last, &mut |va, e| match e {
            Entry::Invalid => Ok(size),
            Entry::Table { pa } => {
                self.edit_walk(
                    TableAddr::new(pa),
                    level.down(),
                    va.max(first),
                    (va + (size - 1)).min(last),
                    edit,
                )?;
                Ok(size)
            }
            Entry::Leaf {
                pa,
                attrs,
                contiguous,
            } => {
                let m = self.leaf_mapping(level, va, pa, attrs, contiguous);
                // split_at guarantees leaves here lie wholly inside.
                debug_assert!(m.va >= first && m.va + (m.size - 1) <= last);
                edit(self, table, level, m);
                Ok(m.size)
            }
        })
    }

    /// Makes `boundary` (a base-page-aligned address) a boundary between
    /// leaves: unfolds the contiguous run and splits the huge leaf that
    /// straddle it, through the table layer's primitives (under each
    /// table's own lock, as [`PageTable::table_below`] installs).
    fn split_at(&self, boundary: VirtAddr) -> Result<(), PtError> {
        let mut table = self.root_table();
        for level in self.root_level().down_to_pte() {
            match self.read_entry(table, level, boundary)? {
                Entry::Invalid => return Ok(()),
                Entry::Table { pa } => table = TableAddr::new(pa),
                Entry::Leaf { .. } => {
                    let _lock = self.ptlock_ptr(table).lock();
                    self.contpte_try_unfold(table, level, boundary)?;
                    if boundary.is_aligned(self.entry_size(level)) {
                        return Ok(());
                    }
                    // A huge leaf straddles the boundary: split it one level down.
                    let child = self.alloc_table(level.down())?;
                    match self.split_huge_leaf(table, level, boundary, child, None) {
                        Ok(true) => {}
                        other => {
                            self.free_table(child)?;
                            other?;
                        }
                    }
                    table = child;
                }
            }
        }
        Ok(())
    }

    // ---------------------------------------------------------------
    // Freeing tables.

    /// Unlinks every table below the root that maps nothing and lies in
    /// `[va, va + len)`'s tables, bottom-up (a parent emptied by freeing its
    /// children goes too). The tables are returned by [`FreedTables::release`].
    ///
    /// # Errors
    /// [`PtError::Corrupt`] for a reserved encoding.
    pub fn free_empty(&self, va: VirtAddr, len: u64) -> Result<FreedTables, PtError> {
        let mut out = FreedTables::default();
        if len > 0 {
            self.free_walk(
                self.root_table(),
                self.root_level(),
                va,
                va.saturating_add(len - 1),
                &mut out,
            )?;
        }
        Ok(out)
    }

    fn free_walk(
        &self,
        table: TableAddr,
        level: Level,
        first: VirtAddr,
        last: VirtAddr,
        out: &mut FreedTables,
    ) -> Result<(), PtError> {
        if level.is_pte() {
            return Ok(());
        }
        let size = self.entry_size(level);
        self.visit_entries(table, level, first, last, &mut |va, e| {
            if let Entry::Table { pa } = e {
                let child = TableAddr::new(pa);
                let (first, last) = (va.max(first), (va + (size - 1)).min(last));
                self.free_walk(child, level.down(), first, last, out)?;
                if self.present_entries(child) == 0 {
                    self.unlink_table(table, level, va);
                    out.tables.push((level.down(), child));
                    out.flush.add(va.get(), size);
                }
            }
            Ok(size)
        })
    }

    /// Frees every table page of the tree, the root included, without
    /// touching data frames (their owner frees them). After this the tree
    /// must not be used.
    ///
    /// # Errors
    /// A [`MemError`] if a table was already freed (a bug).
    pub fn teardown(&self) -> Result<(), PtError> {
        self.teardown_walk(self.root_table(), self.root_level())?;
        self.mem.free_table(self.root)?;
        for c in &self.tables_per_level {
            c.store(0, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    }

    fn teardown_walk(&self, table: TableAddr, level: Level) -> Result<(), PtError> {
        if level.is_pte() {
            return Ok(());
        }
        let size = self.entry_size(level);
        for i in 0..self.ptrs_per_table(level) {
            let va = VirtAddr::new(i * size);
            if let Some(child) = self.next_table(table, level, va) {
                self.teardown_walk(child, level.down())?;
                self.free_table(child)?;
            }
        }
        Ok(())
    }

    // ---------------------------------------------------------------
    // Dump.

    /// The tree over `[va, va + len)` as indented text: one line per table
    /// entry, and runs of leaves with consecutive addresses and equal
    /// attributes grouped on one line.
    ///
    /// # Errors
    /// [`PtError::Corrupt`] for a reserved encoding.
    pub fn dump(&self, va: VirtAddr, len: u64) -> Result<String, PtError> {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} root {:#x} ({} table)",
            self.geom.name(),
            self.root,
            self.geom.level(self.geom.root_level()).name
        );
        if len > 0 {
            self.dump_walk(
                self.root_table(),
                self.root_level(),
                va,
                va.saturating_add(len - 1),
                1,
                &mut s,
            )?;
        }
        Ok(s)
    }

    fn dump_walk(
        &self,
        table: TableAddr,
        level: Level,
        first: VirtAddr,
        last: VirtAddr,
        depth: usize,
        s: &mut String,
    ) -> Result<(), PtError> {
        let g = &*self.geom;
        let l = g.level(level.get());
        let below = g.level(level.get().saturating_sub(1));
        let size = l.entry_size();
        let mut group: Option<Mapping> = None;
        let indent = "  ".repeat(depth);
        let flush_group = |group: &mut Option<Mapping>, s: &mut String| {
            if let Some(m) = group.take() {
                let _ = writeln!(
                    s,
                    "{indent}{:#014x}-{:#014x} -> {:#x} {} {}{}",
                    m.va,
                    m.va + (m.size - 1),
                    m.pa,
                    l.name,
                    attrs_str(&m.attrs),
                    if m.contiguous { " contiguous" } else { "" }
                );
            }
        };
        self.visit_entries(table, level, first, last, &mut |va, e| match e {
            Entry::Invalid => {
                flush_group(&mut group, s);
                Ok(size)
            }
            Entry::Table { pa } => {
                flush_group(&mut group, s);
                let present = self.present_entries(TableAddr::new(pa));
                let _ = writeln!(
                    s,
                    "{indent}{:#014x} {} -> {} table {:#x} ({} of {} present)",
                    va,
                    l.name,
                    below.name,
                    pa,
                    present,
                    below.entries()
                );
                self.dump_walk(
                    TableAddr::new(pa),
                    level.down(),
                    va.max(first),
                    (va + (size - 1)).min(last),
                    depth + 1,
                    s,
                )?;
                Ok(size)
            }
            Entry::Leaf {
                pa,
                attrs,
                contiguous,
            } => {
                let m = self.leaf_mapping(level, va, pa, attrs, contiguous);
                match &mut group {
                    // Runs of leaves with consecutive addresses and equal
                    // attributes print as one line.
                    Some(gm)
                        if gm.va + gm.size == m.va
                            && gm.pa + gm.size == m.pa
                            && gm.attrs == m.attrs
                            && gm.contiguous == m.contiguous =>
                    {
                        gm.size += m.size
                    }
                    _ => {
                        flush_group(&mut group, s);
                        group = Some(m);
                    }
                }
                Ok(m.size)
            }
        })?;
        flush_group(&mut group, s);
        Ok(())
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

fn attrs_str(a: &Attrs) -> String {
    format!(
        "{}{}{}{}{}{}",
        if a.perms.read { 'r' } else { '-' },
        if a.perms.write { 'w' } else { '-' },
        if a.perms.exec { 'x' } else { '-' },
        if a.perms.user { " user" } else { " kernel" },
        if a.accessed { " A" } else { "" },
        if a.dirty { " D" } else { "" },
    )
}
