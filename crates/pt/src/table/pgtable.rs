//! The table layer: the primitives that read and edit one table's entries,
//! named as Linux's include/linux/pgtable.h and mm/memory.c name them. The
//! OS model (`mm`) edits its tables only through these, and so do the
//! tree-wide conveniences of [`PageTable`] (`map`, `unmap`, `protect`,
//! `free_empty`): every entry is written by [`PageTable::set_entry`] (or its
//! one-word fast path [`PageTable::set_leaf_bits`]), and every table is
//! installed by [`PageTable::install_table`].
//!
//! ## Contract
//! - A primitive addresses an entry as `(table, level, va)`: the table page,
//!   its level, and any virtual address the entry maps.
//! - Writers of one table's entries are serialized by the caller: it holds
//!   the lock over that table's entries (Linux: the PTE lock, the PMD lock or
//!   `page_table_lock`, whichever the locking scheme assigns). Readers need
//!   no lock.
//! - A table is installed only into an empty entry, with the lock over the
//!   parent's entries held ([`PageTable::install_table`], Linux
//!   `pmd_install`); [`PageTable::alloc_install`] is the allocate, lock,
//!   re-check and install-or-free sequence of Linux's `__pte_alloc`.
//!
//! ## Invariants kept here
//! - `TableMeta::present` of a table equals the number of its present
//!   software entries: every write goes through `write_word` or
//!   `write_group`, which keep it.
//! - The per-level table totals count every table linked into the tree
//!   (by `install_table`) and every table the OS model holds outside it
//!   (`count_table`, for Linux's deposited tables).

use super::types::{Level, PhysAddr, TableAddr, VirtAddr};
use super::{PageTable, PtError};
use crate::entry::{self, Attrs, Entry};
use crate::geometry::ENTRY_BYTES;
use crate::sync::{Ordering, SpinLock};

/// `nr` consecutive leaves mapping `va` onwards to `pa` onwards with one
/// `attrs`: what one Linux `set_ptes` call writes (a folio's PTEs, or the
/// entries a huge leaf splits into).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeafRun {
    pub va: VirtAddr,
    pub pa: PhysAddr,
    pub nr: u64,
    pub attrs: Attrs,
    /// Written as contiguous / NAPOT runs (ARM contpte, Svnapot).
    pub contiguous: bool,
}

impl PageTable {
    // ---------------------------------------------------------------
    // The geometry, by level.

    /// The root table's level.
    #[inline]
    pub fn root_level(&self) -> Level {
        Level::new(self.geom.root_level())
    }

    /// Whether the tree has `level` (a 2-level tree has no PUD).
    #[inline]
    pub fn has_level(&self, level: Level) -> bool {
        level.get() < self.geom.num_levels()
    }

    /// Bytes of virtual address space one entry of `level` maps (Linux
    /// `PMD_SIZE` for [`Level::PMD`]).
    #[inline]
    pub fn entry_size(&self, level: Level) -> u64 {
        self.geom.entry_size(level.get())
    }

    /// Entries in one table of `level` (Linux `PTRS_PER_PTE`, ...).
    #[inline]
    pub fn ptrs_per_table(&self, level: Level) -> u64 {
        self.geom.level(level.get()).entries()
    }

    /// The index of the entry for `va` in a table of `level` (Linux
    /// `pte_index`, `pmd_index`).
    #[inline]
    pub fn index(&self, level: Level, va: VirtAddr) -> u64 {
        self.geom.index(level.get(), va.get())
    }

    /// Whether entries of `level` may be leaves (PMD: PMD-sized THP).
    #[inline]
    pub fn holds_leaves(&self, level: Level) -> bool {
        self.geom.level(level.get()).leaf
    }

    /// Entries in one contiguous / NAPOT run at `level` (1: no runs).
    #[inline]
    pub fn contig_entries(&self, level: Level) -> u64 {
        u64::from(self.geom.level(level.get()).contig.max(1))
    }

    /// Whether `[va, va + size)` of `level` can be written as whole
    /// contiguous / NAPOT runs (Linux arm64 `contpte_set_ptes` folds such
    /// ranges): the geometry has runs, and the range is aligned to one and
    /// a multiple of one.
    #[inline]
    pub fn can_fold(&self, level: Level, va: VirtAddr, size: u64) -> bool {
        let n = self.contig_entries(level);
        let run = n * self.entry_size(level);
        n > 1 && size >= run && size.is_multiple_of(run) && va.is_aligned(run)
    }

    // ---------------------------------------------------------------
    // Reading one entry.

    /// Physical address of the first hardware word of the software entry
    /// that indexes `va` in `table` (of `level`).
    #[inline]
    pub fn entry_pa(&self, table: TableAddr, level: Level, va: VirtAddr) -> PhysAddr {
        table
            .phys()
            .add(self.geom.index(level.get(), va.get()) << self.entry_shift)
    }

    /// Decodes the software entry for `va` in `table` (Linux `ptep_get`,
    /// `pmdp_get`).
    ///
    /// # Errors
    /// [`PtError::Corrupt`] for a reserved encoding.
    // Always inlined: the fault handler reads five entries per fault, and a
    // call per read was a tenth of its cost.
    #[inline(always)]
    pub fn read_entry(
        &self,
        table: TableAddr,
        level: Level,
        va: VirtAddr,
    ) -> Result<Entry, PtError> {
        let raw = self.mem.read(self.entry_pa(table, level, va).get());
        if raw == 0 {
            // Every supported format encodes an empty entry as zero (x86 P,
            // RISC-V V and ARM's valid bit clear): skip the decoder.
            return Ok(Entry::Invalid);
        }
        match entry::decode(&self.geom, level.get(), raw)? {
            // A nonzero word the hardware ignores: the OS's own (Linux
            // `is_swap_pte`), never on the path of a present entry.
            Entry::Invalid => Ok(Entry::Swap {
                val: entry::swap_val(raw),
            }),
            e => Ok(e),
        }
    }

    /// The table the entry for `va` in `table` (of `level`) points to, if it
    /// is a table entry; `None` for anything else (then
    /// [`PageTable::read_entry`] says what it is). The fault path's step
    /// down (Linux `pmd_offset` / `pte_offset_map` after a `pmd_present`
    /// test), without building the neutral view.
    #[inline(always)]
    pub fn next_table(&self, table: TableAddr, level: Level, va: VirtAddr) -> Option<TableAddr> {
        let raw = self.mem.read_walk(self.entry_pa(table, level, va).get());
        entry::table_pa(&self.geom, level.get(), raw).map(TableAddr::new)
    }

    /// Whether the entry for `va` in `table` is empty (Linux `pte_none`):
    /// every supported format encodes an empty entry as zero, and the
    /// engine writes nothing else into a non-present entry.
    #[inline(always)]
    pub fn is_none(&self, table: TableAddr, level: Level, va: VirtAddr) -> bool {
        self.mem.read(self.entry_pa(table, level, va).get()) == 0
    }

    /// The first address from `va` below `end` (both inside `table`'s
    /// range) whose entry in `table` may be present: entries before it are
    /// empty. A compact table answers from its stored words; a full page
    /// answers `va` (nothing skipped, no scan). Lets a walk over a range
    /// (zap) visit a sparse table in time that follows its entries.
    #[inline]
    pub fn skip_empty(
        &self,
        table: TableAddr,
        level: Level,
        va: VirtAddr,
        end: VirtAddr,
    ) -> VirtAddr {
        if va >= end || self.entry_shift != ENTRY_BYTES.trailing_zeros() {
            return va;
        }
        let epa = self.entry_pa(table, level, va).get();
        let last = end.get() - 1;
        let end_pa = self.entry_pa(table, level, VirtAddr::new(last)).get() + ENTRY_BYTES;
        let next = self.mem.next_stored(epa, end_pa);
        if next == epa {
            return va;
        }
        let skipped = (next - epa) >> self.entry_shift;
        if next >= end_pa {
            return end;
        }
        va + skipped * self.entry_size(level)
    }

    /// Present entries of `table` (the count kept beside it, Linux's
    /// `ptdesc` bookkeeping that PT reclaim reads).
    #[inline]
    pub fn present_entries(&self, table: TableAddr) -> u32 {
        self.mem.meta(table.pa()).present.load(Ordering::Acquire)
    }

    /// The lock beside `table` (Linux `ptlock_ptr`: the split PTE / PMD
    /// lock in the table's `ptdesc`). Whether it is the lock over the
    /// table's entries is the OS model's locking scheme.
    #[inline]
    pub fn ptlock_ptr(&self, table: TableAddr) -> &SpinLock {
        &self.mem.meta(table.pa()).lock
    }

    // ---------------------------------------------------------------
    // Writing entries: the one way.

    /// Writes the software entry for `va` in `table` (every hardware word of
    /// it) and keeps the table's present count (Linux `set_pte`,
    /// `set_pmd`). The caller holds the lock over `table`'s entries.
    #[inline]
    pub fn set_entry(&self, table: TableAddr, level: Level, va: VirtAddr, e: &Entry) {
        if self.entry_shift != ENTRY_BYTES.trailing_zeros() {
            return self.write_group(table, level, va, e);
        }
        // The common case (no software page): one word.
        let w = match e {
            Entry::Invalid => 0,
            Entry::Swap { val } => entry::swap_word(*val),
            _ => entry::encode(&self.geom, level.get(), e),
        };
        self.write_word(table, level, va, w);
    }

    /// Clears the entry for `va` (Linux `pte_clear`, `pmd_clear`). Same
    /// contract as [`PageTable::set_entry`].
    #[inline]
    pub fn pte_clear(&self, table: TableAddr, level: Level, va: VirtAddr) {
        self.set_entry(table, level, va, &Entry::Invalid);
    }

    /// Clears the entry for `va` and returns what it was (Linux
    /// `ptep_get_and_clear`, `pmdp_huge_get_and_clear`). Same contract as
    /// [`PageTable::set_entry`].
    ///
    /// # Errors
    /// [`PtError::Corrupt`] for a reserved encoding (the entry is cleared).
    #[inline]
    pub fn ptep_get_and_clear(
        &self,
        table: TableAddr,
        level: Level,
        va: VirtAddr,
    ) -> Result<Entry, PtError> {
        let old = self.read_entry(table, level, va);
        self.pte_clear(table, level, va);
        old
    }

    /// Writes the leaves of `run` at `level` (Linux `set_ptes`), as
    /// contiguous / NAPOT runs when `run.contiguous` (the caller checked
    /// [`PageTable::can_fold`]). Same contract as [`PageTable::set_entry`];
    /// the leaves may span only one table.
    pub fn set_ptes(&self, table: TableAddr, level: Level, run: LeafRun) {
        let step = self.entry_size(level);
        let LeafRun {
            va,
            pa,
            nr,
            attrs,
            contiguous,
        } = run;
        // Offsets from the start, not a running address: the last leaf may
        // end at the top of the address space.
        for i in 0..nr {
            let e = Entry::Leaf {
                pa: (pa + i * step).get(),
                attrs,
                contiguous,
            };
            self.set_entry(table, level, va + i * step, &e);
        }
    }

    /// The word of a plain (not contiguous) leaf at `level` with `attrs` at
    /// address 0: the template [`PageTable::set_leaf_bits`] fills with an
    /// address. `None` if a software entry is a group of words here, or the
    /// architecture cannot express `attrs`.
    pub fn leaf_bits(&self, level: Level, attrs: &Attrs) -> Option<u64> {
        let single = self.entry_shift == ENTRY_BYTES.trailing_zeros();
        (single && self.geom.is_leaf_level(level.get()) && entry::representable(&self.geom, attrs))
            .then(|| {
                let leaf = Entry::Leaf {
                    pa: 0,
                    attrs: *attrs,
                    contiguous: false,
                };
                entry::encode(&self.geom, level.get(), &leaf)
            })
    }

    /// Writes the plain leaf `bits` (from [`PageTable::leaf_bits`]) mapping
    /// `pa` as the entry for `va`: what [`PageTable::set_entry`] writes for
    /// that leaf, without encoding the attributes again (the fault path's
    /// `set_pte` of a template, as Linux builds a PTE from `vm_page_prot`
    /// once per VMA). Same contract.
    #[inline]
    pub fn set_leaf_bits(
        &self,
        table: TableAddr,
        level: Level,
        va: VirtAddr,
        bits: u64,
        pa: PhysAddr,
    ) {
        debug_assert_eq!(self.entry_shift, ENTRY_BYTES.trailing_zeros());
        let w = entry::leaf_with_address(&self.geom, bits, pa.get());
        self.write_word(table, level, va, w);
    }

    /// Writes `w` as the one-word entry for `va` in `table` and keeps the
    /// present count (a word is present exactly when it is not 0: every
    /// codec encodes the empty entry, and only it, as 0).
    #[inline(always)]
    fn write_word(&self, table: TableAddr, level: Level, va: VirtAddr, w: u64) {
        let was = self.mem.replace(self.entry_pa(table, level, va).get(), w) != 0;
        self.count_present(table, level, was, w != 0);
    }

    /// [`PageTable::set_entry`] for a geometry whose software entry is a
    /// group of hardware words.
    #[inline(never)]
    fn write_group(&self, table: TableAddr, level: Level, va: VirtAddr, e: &Entry) {
        let pa = self.entry_pa(table, level, va).get();
        let was = self.mem.read(pa) != 0;
        // Linux's set_pte order: for a group, the first word last, so that a
        // walker that sees it present sees the whole group.
        for j in (0..self.geom.hw_words_per_entry()).rev() {
            let w = match e {
                Entry::Invalid => 0,
                _ => entry::encode_group_word(&self.geom, level.get(), e, j),
            };
            self.mem.write(pa + j * ENTRY_BYTES, w);
        }
        self.count_present(table, level, was, !e.is_none());
    }

    /// Keeps `table`'s present count after one of its entries went from
    /// present (`was`) to present (`now`) or not.
    #[inline(always)]
    fn count_present(&self, table: TableAddr, level: Level, was: bool, now: bool) {
        if was == now {
            return;
        }
        let meta = self.mem.meta(table.pa());
        if level.is_pte() {
            // Every writer of a PTE table's entries holds its lock (the
            // contract): a plain load and store cannot lose an update.
            let n = meta.present.load(Ordering::Relaxed);
            let n = if now { n + 1 } else { n - 1 };
            meta.present.store(n, Ordering::Release);
        } else if now {
            meta.present.fetch_add(1, Ordering::AcqRel);
        } else {
            meta.present.fetch_sub(1, Ordering::AcqRel);
        }
    }

    // ---------------------------------------------------------------
    // Huge leaves and contiguous runs.

    /// Replaces the huge leaf for `va` in `table` (of `level`) with the
    /// table page `child` of the level below, filled with leaves mapping the
    /// same pages with the same attributes (Linux `__split_huge_pmd_locked`
    /// with a withdrawn deposit as `child`); with `each` = `Some((pa,
    /// attrs))`, every new leaf maps that one page instead (Linux
    /// `__split_huge_zero_page_pmd`: the small zero page). The huge entry
    /// is cleared before the table is installed (break before make).
    /// Returns `Ok(false)`, changing nothing, if the entry is not a leaf.
    /// The caller holds the lock over `table`'s entries; `child` is empty
    /// and not counted in the per-level totals ([`PageTable::install_table`]
    /// counts it).
    ///
    /// # Errors
    /// [`PtError::CannotSplit`] if the level below holds no leaves;
    /// [`PtError::Corrupt`] for a reserved encoding.
    pub fn split_huge_leaf(
        &self,
        table: TableAddr,
        level: Level,
        va: VirtAddr,
        child: TableAddr,
        each: Option<(PhysAddr, Attrs)>,
    ) -> Result<bool, PtError> {
        let Entry::Leaf { pa, attrs, .. } = self.read_entry(table, level, va)? else {
            return Ok(false);
        };
        let below = level.down();
        let size = self.entry_size(level);
        if !self.holds_leaves(below) {
            return Err(PtError::CannotSplit { size, level: below });
        }
        let step = self.entry_size(below);
        let base_va = va.align_down(size);
        let n = size / step;
        match each {
            None => self.set_ptes(
                child,
                below,
                LeafRun {
                    va: base_va,
                    pa: PhysAddr::new(pa).align_down(size),
                    nr: n,
                    attrs,
                    contiguous: false,
                },
            ),
            Some((one, a)) => {
                let e = Entry::Leaf {
                    pa: one.get(),
                    attrs: a,
                    contiguous: false,
                };
                for i in 0..n {
                    self.set_entry(child, below, base_va + i * step, &e);
                }
            }
        }
        self.pte_clear(table, level, base_va);
        let linked = self.install_table(table, level, base_va, child);
        debug_assert!(linked, "the huge entry was just cleared under the lock");
        Ok(true)
    }

    /// Makes `va` a boundary between runs: if the leaf for `va` in `table`
    /// (of `level`) belongs to a contiguous / NAPOT run that `va` falls
    /// inside of, rewrites every entry of the run as a plain leaf mapping
    /// its own page, keeping each entry's attributes (Linux arm64
    /// `contpte_try_unfold`; ARM's break-before-make rule for the
    /// contiguous bit). Same contract as [`PageTable::set_entry`].
    ///
    /// # Errors
    /// [`PtError::Corrupt`] for a reserved encoding.
    pub fn contpte_try_unfold(
        &self,
        table: TableAddr,
        level: Level,
        va: VirtAddr,
    ) -> Result<(), PtError> {
        let n = self.contig_entries(level);
        let step = self.entry_size(level);
        let run = n * step;
        if n <= 1 || va.is_aligned(run) {
            return Ok(());
        }
        if let Entry::Leaf {
            contiguous: true, ..
        } = self.read_entry(table, level, va)?
        {
            let base = va.align_down(run);
            for i in 0..n {
                let v = base + i * step;
                if let Entry::Leaf { pa, attrs, .. } = self.read_entry(table, level, v)? {
                    // A NAPOT entry holds the run's address, not its own
                    // page's (ARM's contiguous entries hold their own).
                    let e = Entry::Leaf {
                        pa: (pa & !(run - 1)) + i * step,
                        attrs,
                        contiguous: false,
                    };
                    self.set_entry(table, level, v, &e);
                }
            }
        }
        Ok(())
    }

    // ---------------------------------------------------------------
    // Tables: the one way to install one.

    /// A new empty table page for `level`, not yet in the tree (Linux
    /// `pte_alloc_one`).
    ///
    /// # Errors
    /// [`PtError::Mem`] if no table page can be had.
    #[inline]
    pub fn alloc_table(&self, level: Level) -> Result<TableAddr, PtError> {
        Ok(TableAddr::new(self.mem.alloc_table(level.get())?))
    }

    /// Returns a table page that never entered the tree, or that left it
    /// and can no longer be reached by any walker (Linux `pte_free`).
    ///
    /// # Errors
    /// A [`crate::MemError`] if the table was already freed (a bug).
    #[inline]
    pub fn free_table(&self, table: TableAddr) -> Result<(), PtError> {
        Ok(self.mem.free_table(table.pa())?)
    }

    /// Installs the empty table page `child` (of `level.down()`) in the
    /// entry for `va` of `parent` (of `level`) if that entry is empty, and
    /// counts it in the per-level totals (Linux `pmd_install`: the
    /// `pmd_none` re-check under the lock). Returns whether it did; if not,
    /// `child` is still the caller's. The caller holds the lock over
    /// `parent`'s entries.
    #[inline]
    pub fn install_table(
        &self,
        parent: TableAddr,
        level: Level,
        va: VirtAddr,
        child: TableAddr,
    ) -> bool {
        if !self.is_none(parent, level, va) {
            return false;
        }
        self.set_entry(parent, level, va, &Entry::Table { pa: child.pa() });
        self.tables_per_level[level.down().get()]
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        true
    }

    /// Linux `__pte_alloc` (and `__pmd_alloc`, `__pud_alloc`): allocates a
    /// table page for the entry for `va` of `parent` (of `level`), takes the
    /// lock over `parent`'s entries with `lock`, installs the page if the
    /// entry is still empty, and otherwise frees it (another thread
    /// installed a table or a huge leaf first). The caller reads the entry
    /// again to learn what it holds now.
    ///
    /// # Errors
    /// [`PtError::Mem`] if no table page can be had.
    #[inline(never)]
    pub fn alloc_install<G>(
        &self,
        parent: TableAddr,
        level: Level,
        va: VirtAddr,
        lock: impl FnOnce() -> G,
    ) -> Result<(), PtError> {
        let child = self.alloc_table(level.down())?;
        let guard = lock();
        let linked = self.install_table(parent, level, va, child);
        drop(guard);
        if !linked {
            self.free_table(child)?;
        }
        Ok(())
    }

    /// Clears the table entry for `va` of `parent` (of `level`) and returns
    /// the table it pointed to, still counted and not yet freed (it leaves
    /// through [`super::FreedTables`] after the shootdown); `None` if the
    /// entry is not a table. The caller holds the lock over `parent`'s
    /// entries and knows the child is empty.
    pub fn unlink_table(&self, parent: TableAddr, level: Level, va: VirtAddr) -> Option<TableAddr> {
        let child = self.next_table(parent, level, va)?;
        self.pte_clear(parent, level, va);
        Some(child)
    }

    /// Forgets a table from the per-level totals without freeing it (used
    /// by the OS model when it takes over a table, e.g. a deposit it is
    /// about to install, which [`PageTable::install_table`] counts again).
    pub fn uncount_table(&self, level: Level) {
        self.tables_per_level[level.get()].fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Counts a table that the OS model holds outside the tree (a deposited
    /// table is still page-table memory: Linux counts it in VmPTE).
    pub fn count_table(&self, level: Level) {
        self.tables_per_level[level.get()].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}
