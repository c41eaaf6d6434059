//! One page-table tree and the operations on it: map, unmap, protect,
//! translate, iterate, dump, free empty tables.
//!
//! The tree lives in [`PhysMem`]: every table is a real table page holding
//! the architecture's words, and every step down reads the next table's
//! physical address out of an entry.
//!
//! ## Concurrency contract
//!
//! Every method takes `&self`. Readers (translate, iterate, the MMU model's
//! hardware walk) may run at any time. Writers of *leaf* entries in the same
//! table must be serialized by the caller (the OS model holds that table's
//! lock, as Linux does); the present count of a leaf-level table relies on
//! it (kept with a plain load and store, since no table is ever installed
//! there). Installing a missing table is safe without a lock:
//! the parent entry is set with a compare-and-swap and the loser frees its
//! page (Linux: `__pte_alloc` re-checks `pmd_none` under the lock; a CAS
//! gives the same outcome).
//!
//! ## Invariants
//!
//! - `TableMeta::present` of a table equals the number of its present
//!   software entries (kept by [`PageTable::write_entry`], the only writer).
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
use crate::sync::Ordering;
use std::fmt::Write as _;
use std::sync::atomic::AtomicU64 as StdAtomicU64;
use std::sync::Arc;
use thiserror::Error;

mod memo;
pub use memo::WalkMemo;

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
    #[error("a table hangs below {va:#x} at level {level}: free empty tables before mapping a huge leaf there")]
    TableInTheWay { va: u64, level: usize },
    #[error("{va:#x} is not mapped (walk stopped at level {level})")]
    NotMapped { va: u64, level: usize },
    #[error("cannot split a {size:#x} leaf: level {level} holds no leaves")]
    CannotSplit { size: u64, level: usize },
    #[error("corrupt entry: {0}")]
    Corrupt(#[from] entry::DecodeError),
    #[error(transparent)]
    Mem(#[from] MemError),
}

/// The result of a software translation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Translation {
    pub pa: u64,
    /// Bytes mapped by the leaf (the run's size for a contiguous leaf).
    pub size: u64,
    /// Level of the leaf (0 = PTE level).
    pub level: usize,
    pub attrs: Attrs,
    pub contiguous: bool,
    /// Physical addresses of the hardware words a walk reads, root first.
    pub entry_pas: [u64; MAX_LEVELS],
    /// How many of `entry_pas` are used (the walk's memory references).
    pub reads: usize,
}

impl Translation {
    pub fn entry_pas(&self) -> &[u64] {
        &self.entry_pas[..self.reads]
    }
}

/// One leaf mapping (a contiguous run counts as one).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mapping {
    pub va: u64,
    pub pa: u64,
    pub size: u64,
    pub level: usize,
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
    /// (level, physical address) of each unlinked table.
    pub tables: Vec<(usize, u64)>,
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
        for (level, pa) in self.tables {
            pt.mem.free_table(pa)?;
            pt.tables_per_level[level].fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
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

    /// Table pages currently in the tree at `level`.
    pub fn tables_at(&self, level: usize) -> u64 {
        self.tables_per_level[level].load(std::sync::atomic::Ordering::Relaxed)
    }

    // ---------------------------------------------------------------
    // Primitives: one software entry of one table.

    /// Physical address of the first hardware word of the software entry
    /// that indexes `va` in the table at `table` (of `level`).
    #[inline]
    pub fn entry_pa(&self, table: u64, level: usize, va: u64) -> u64 {
        table + (self.geom.index(level, va) << self.entry_shift)
    }

    /// Physical address of the hardware word a hardware walk reads for `va`
    /// in the table at `table`: inside the software entry, the word of the
    /// hardware page that `va` falls in.
    #[inline]
    pub fn hw_entry_pa(&self, table: u64, level: usize, va: u64) -> u64 {
        table + self.geom.hw_word_offset(level, va)
    }

    /// Decodes the software entry for `va` in `table`.
    ///
    /// # Errors
    /// [`PtError::Corrupt`] for a reserved encoding.
    // Always inlined: the fault handler reads five entries per fault, and a
    // call per read was a tenth of its cost.
    #[inline(always)]
    pub fn read_entry(&self, table: u64, level: usize, va: u64) -> Result<Entry, PtError> {
        let raw = self.mem.read(self.entry_pa(table, level, va));
        if raw == 0 {
            // Every supported format encodes an empty entry as zero (x86 P,
            // RISC-V V and ARM's valid bit clear): skip the decoder.
            return Ok(Entry::Invalid);
        }
        Ok(entry::decode(&self.geom, level, raw)?)
    }

    /// The table the entry for `va` in `table` (of `level`) points to, if it
    /// is a table entry; `None` for anything else (then [`read_entry`]
    /// says what it is). The fault path's step down, without building the
    /// neutral view.
    ///
    /// [`read_entry`]: PageTable::read_entry
    #[inline(always)]
    pub fn next_table(&self, table: u64, level: usize, va: u64) -> Option<u64> {
        let raw = self.mem.read_walk(self.entry_pa(table, level, va));
        entry::table_pa(&self.geom, level, raw)
    }

    /// Whether the entry for `va` in `table` is empty (Linux `pte_none`):
    /// every supported format encodes an empty entry as zero, and the
    /// engine writes nothing else into a non-present entry.
    #[inline(always)]
    pub fn is_none(&self, table: u64, level: usize, va: u64) -> bool {
        self.mem.read(self.entry_pa(table, level, va)) == 0
    }

    /// Writes the software entry for `va` in `table` (every hardware word of
    /// it) and keeps the table's present count. The caller serializes
    /// writers of this table.
    #[inline]
    pub fn write_entry(&self, table: u64, level: usize, va: u64, e: &Entry) {
        if self.entry_shift != ENTRY_BYTES.trailing_zeros() {
            return self.write_group(table, level, va, e);
        }
        // The common case (no software page): one word.
        let w = match e {
            Entry::Invalid => 0,
            _ => entry::encode(&self.geom, level, e),
        };
        self.write_word(table, level, va, w);
    }

    /// The word of a plain (not contiguous) leaf at `level` with `attrs` at
    /// address 0: the template [`PageTable::write_leaf`] fills with an
    /// address. `None` if a software entry is a group of words here, or the
    /// architecture cannot express `attrs`.
    pub fn leaf_bits(&self, level: usize, attrs: &Attrs) -> Option<u64> {
        let single = self.entry_shift == ENTRY_BYTES.trailing_zeros();
        (single && self.geom.is_leaf_level(level) && entry::representable(&self.geom, attrs)).then(
            || {
                let leaf = Entry::Leaf {
                    pa: 0,
                    attrs: *attrs,
                    contiguous: false,
                };
                entry::encode(&self.geom, level, &leaf)
            },
        )
    }

    /// Writes the plain leaf `bits` (from [`PageTable::leaf_bits`]) mapping
    /// `pa` as the entry for `va`: what [`PageTable::write_entry`] writes for
    /// that leaf, without encoding the attributes again. Same contract.
    #[inline]
    pub fn write_leaf(&self, table: u64, level: usize, va: u64, bits: u64, pa: u64) {
        debug_assert_eq!(self.entry_shift, ENTRY_BYTES.trailing_zeros());
        let w = entry::leaf_with_address(&self.geom, bits, pa);
        self.write_word(table, level, va, w);
    }

    /// Writes `w` as the one-word entry for `va` in `table` and keeps the
    /// present count (a word is present exactly when it is not 0: every
    /// codec encodes the empty entry, and only it, as 0).
    #[inline(always)]
    fn write_word(&self, table: u64, level: usize, va: u64, w: u64) {
        let word = self.mem.word_at(self.entry_pa(table, level, va));
        let was = word.load(Ordering::Acquire) != 0;
        word.store(w, Ordering::Release);
        self.count_present(table, level, was, w != 0);
    }

    /// [`PageTable::write_entry`] for a geometry whose software entry is a
    /// group of hardware words.
    #[inline(never)]
    fn write_group(&self, table: u64, level: usize, va: u64, e: &Entry) {
        let pa = self.entry_pa(table, level, va);
        let was = self.mem.read(pa) != 0;
        // Linux's set_pte order: for a group, the first word last, so that a
        // walker that sees it present sees the whole group.
        for j in (0..self.geom.hw_words_per_entry()).rev() {
            let w = match e {
                Entry::Invalid => 0,
                _ => entry::encode_group_word(&self.geom, level, e, j),
            };
            self.mem.write(pa + j * ENTRY_BYTES, w);
        }
        self.count_present(table, level, was, e.is_present());
    }

    /// Keeps `table`'s present count after one of its entries went from
    /// present (`was`) to present (`now`) or not.
    #[inline(always)]
    fn count_present(&self, table: u64, level: usize, was: bool, now: bool) {
        if was == now {
            return;
        }
        let meta = self.mem.meta(table);
        if level == 0 {
            // No table is ever installed in a leaf-level table, so every
            // writer of this count writes a leaf entry here and holds the
            // table's lock (the concurrency contract): a plain load and
            // store cannot lose an update.
            let n = meta.present.load(Ordering::Relaxed);
            let n = if now { n + 1 } else { n - 1 };
            meta.present.store(n, Ordering::Release);
        } else if now {
            meta.present.fetch_add(1, Ordering::AcqRel);
        } else {
            meta.present.fetch_sub(1, Ordering::AcqRel);
        }
    }

    /// The table below the entry for `va` at `level` (> 0), allocating and
    /// linking an empty one if the entry is empty.
    ///
    /// # Errors
    /// [`PtError::AlreadyMapped`] if the entry is a leaf; [`PtError::Mem`]
    /// if no table page can be had.
    pub fn get_or_alloc_table(&self, table: u64, level: usize, va: u64) -> Result<u64, PtError> {
        debug_assert!(level > 0);
        match self.read_entry(table, level, va)? {
            Entry::Table { pa } => Ok(pa),
            Entry::Leaf { .. } => Err(PtError::AlreadyMapped { va }),
            Entry::Invalid => {
                let child = self.mem.alloc_table(level - 1)?;
                let e = Entry::Table { pa: child };
                let epa = self.entry_pa(table, level, va);
                let words = self.geom.hw_words_per_entry();
                for j in 1..words {
                    let w = entry::encode_group_word(&self.geom, level, &e, j);
                    self.mem.write(epa + j * ENTRY_BYTES, w);
                }
                let w0 = entry::encode_group_word(&self.geom, level, &e, 0);
                match self.mem.compare_exchange(epa, 0, w0) {
                    Ok(_) => {
                        self.mem.meta(table).present.fetch_add(1, Ordering::AcqRel);
                        self.tables_per_level[level - 1]
                            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        Ok(child)
                    }
                    Err(_) => {
                        // Someone else linked a table first: use theirs.
                        self.mem.free_table(child)?;
                        match self.read_entry(table, level, va)? {
                            Entry::Table { pa } => Ok(pa),
                            _ => Err(PtError::AlreadyMapped { va }),
                        }
                    }
                }
            }
        }
    }

    /// Links an already-allocated table page `child` (of `level - 1`) into
    /// the empty entry for `va` (used for deposited tables, Linux's
    /// `pgtable_trans_huge_withdraw`). Counts it in the per-level totals.
    pub fn link_table(&self, table: u64, level: usize, va: u64, child: u64) {
        self.write_entry(table, level, va, &Entry::Table { pa: child });
        self.tables_per_level[level - 1].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Clears the table entry for `va` at `level` and returns the unlinked
    /// table (not yet freed). The caller guarantees the child is empty.
    pub fn unlink_table(&self, table: u64, level: usize, va: u64) -> Option<u64> {
        match self.read_entry(table, level, va) {
            Ok(Entry::Table { pa }) => {
                self.write_entry(table, level, va, &Entry::Invalid);
                Some(pa)
            }
            _ => None,
        }
    }

    /// Forgets a table from the per-level totals without freeing it (used
    /// by the OS model when it takes over an unlinked table, e.g. to deposit it).
    pub fn uncount_table(&self, level: usize) {
        self.tables_per_level[level].fetch_sub(1, std::sync::atomic::Ordering::Relaxed);
    }

    /// Counts a table that the OS model holds outside the tree (a deposited
    /// table is still page-table memory: Linux counts it in VmPTE).
    pub fn count_table(&self, level: usize) {
        self.tables_per_level[level].fetch_add(1, std::sync::atomic::Ordering::Relaxed);
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
        va: u64,
        pa: u64,
        len: u64,
        leaf_size: u64,
        attrs: Attrs,
    ) -> Result<(), PtError> {
        let kind = self.leaf_kind(leaf_size)?;
        self.check_representable(&attrs)?;
        Self::check_aligned("virtual address", va, leaf_size)?;
        Self::check_aligned("physical address", pa, leaf_size)?;
        Self::check_aligned("length", len, leaf_size)?;
        self.check_va(va, len)?;
        let oa = self.geom.oa_bits();
        if pa.checked_add(len).is_none_or(|end| end > 1u64 << oa) {
            return Err(PtError::PhysOutOfRange {
                pa,
                len,
                oa_bits: oa,
            });
        }
        if let Some(m) = self.first_mapping(va, len)? {
            return Err(PtError::AlreadyMapped { va: m.va.max(va) });
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
        va: u64,
        pa: u64,
        len: u64,
        kind: LeafKind,
        attrs: Attrs,
    ) -> Result<u64, PtError> {
        let g = &*self.geom;
        let mut table = self.root;
        for level in (kind.level + 1..g.num_levels()).rev() {
            table = self.get_or_alloc_table(table, level, va)?;
        }
        let l = g.level(kind.level);
        let step = l.entry_size();
        let table_left = (table_end(va, l.shift + l.bits) - va) + 1;
        let n = len.min(table_left);
        let contiguous = kind.is_contiguous();
        let mut off = 0;
        while off < n {
            // An empty table below a would-be huge leaf must be freed first
            // (Linux maps a THP only on a pmd_none entry).
            if let Entry::Table { .. } = self.read_entry(table, kind.level, va + off)? {
                return Err(PtError::TableInTheWay {
                    va: va + off,
                    level: kind.level,
                });
            }
            off += step;
        }
        let mut off = 0;
        while off < n {
            let e = Entry::Leaf {
                pa: pa + off,
                attrs,
                contiguous,
            };
            self.write_entry(table, kind.level, va + off, &e);
            off += step;
        }
        Ok(n)
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
    pub fn translate(&self, va: u64) -> Result<Translation, PtError> {
        let g = &*self.geom;
        if !g.is_canonical(va) {
            return Err(PtError::OutOfRange {
                va,
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
    fn walk_to_leaf(&self, va: u64) -> Result<Translation, PtError> {
        let g = &*self.geom;
        let mut entry_pas = [0u64; MAX_LEVELS];
        let mut table = self.root;
        for (i, (level, f)) in g.fast_levels().iter().enumerate().rev().enumerate() {
            let epa = table + f.word_offset(va);
            entry_pas[i] = epa;
            let reads = i + 1;
            let raw = self.mem.read_walk(epa);
            if raw & f.table.mask == f.table.value {
                table = f.table.next_table(raw);
                continue;
            }
            match entry::decode(g, level, raw)? {
                Entry::Table { pa } => table = pa,
                Entry::Invalid => return Err(PtError::NotMapped { va, level }),
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
                        pa: entry::leaf_output(pa, size, va),
                        size,
                        level,
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
    pub fn prefetch_walk(&self, va: u64) {
        if let Some(epa) = self.last_walk_word(va) {
            self.mem.prefetch(epa);
        }
    }

    /// The physical address of the last hardware word a walk for `va`
    /// reads: the leaf, or the first entry that is not a table; `None` for a
    /// non-canonical `va`. It reads the levels above with each level's table
    /// test and address fields rather than the codec: a replay calls it
    /// once per access.
    pub fn last_walk_word(&self, va: u64) -> Option<u64> {
        if !self.geom.is_canonical(va) {
            return None;
        }
        Some(match self.table_on_path(va, 0) {
            Ok(table) => self.hw_entry_pa(table, 0, va),
            Err(last) => last,
        })
    }

    /// The table of `level` a walk for (canonical) `va` reaches, or the
    /// address of the word above it where the walk stops (a leaf or an
    /// empty entry).
    fn table_on_path(&self, va: u64, level: usize) -> Result<u64, u64> {
        let mut table = self.root;
        for f in self.geom.fast_levels()[level + 1..].iter().rev() {
            let epa = table + f.word_offset(va);
            let raw = self.mem.read_walk(epa);
            if raw & f.table.mask != f.table.value {
                return Err(epa);
            }
            table = f.table.next_table(raw);
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
        va: u64,
        len: u64,
        f: &mut dyn FnMut(Mapping),
    ) -> Result<(), PtError> {
        if len == 0 {
            return Ok(());
        }
        self.walk_range(
            self.root,
            self.geom.root_level(),
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
        table: u64,
        level: usize,
        first: u64,
        last: u64,
        f: &mut dyn FnMut(u64, Entry) -> Result<u64, PtError>,
    ) -> Result<(), PtError> {
        let g = &*self.geom;
        let l = g.level(level);
        let size = l.entry_size();
        let stop = last.min(table_end(first, l.shift + l.bits));
        let mut va = first & !(size - 1);
        while va <= stop {
            let step = f(va, self.read_entry(table, level, va)?)?;
            match (va & !(step - 1)).checked_add(step) {
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
        level: usize,
        va: u64,
        pa: u64,
        attrs: Attrs,
        contiguous: bool,
    ) -> Mapping {
        let g = &*self.geom;
        let size = g.entry_size(level);
        let run = if contiguous {
            size * u64::from(g.contig(level))
        } else {
            size
        };
        Mapping {
            va: va & !(run - 1),
            pa: pa & !(run - 1),
            size: run,
            level,
            attrs,
            contiguous,
        }
    }

    fn walk_range(
        &self,
        table: u64,
        level: usize,
        first: u64,
        last: u64,
        f: &mut dyn FnMut(Mapping),
    ) -> Result<(), PtError> {
        let size = self.geom.entry_size(level);
        self.visit_entries(table, level, first, last, &mut |va, e| match e {
            Entry::Invalid => Ok(size),
            Entry::Table { pa } => {
                self.walk_range(pa, level - 1, va.max(first), (va + size - 1).min(last), f)?;
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
    pub fn mappings(&self, va: u64, len: u64) -> Result<Vec<Mapping>, PtError> {
        let mut v = Vec::new();
        self.for_each_mapping(va, len, &mut |m| v.push(m))?;
        Ok(v)
    }

    fn first_mapping(&self, va: u64, len: u64) -> Result<Option<Mapping>, PtError> {
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
    pub fn unmap(&self, va: u64, len: u64) -> Result<Unmapped, PtError> {
        let page = self.geom.page_size();
        Self::check_aligned("virtual address", va, page)?;
        Self::check_aligned("length", len, page)?;
        self.check_va(va, len)?;
        let mut out = Unmapped::default();
        self.edit_range(va, len, &mut |pt, table, level, m| {
            for i in 0..m.size / pt.geom.entry_size(level) {
                let eva = m.va + i * pt.geom.entry_size(level);
                pt.write_entry(table, level, eva, &Entry::Invalid);
            }
            out.pieces.push((m.va, m.pa, m.size));
            out.flush.add(m.va, m.size);
        })?;
        Ok(out)
    }

    /// Sets the permissions of every leaf in `[va, va + len)` to `perms`,
    /// keeping the other attributes (accessed, dirty, memory type), splitting
    /// leaves partly inside.
    ///
    /// # Errors
    /// As [`PageTable::unmap`].
    pub fn protect(&self, va: u64, len: u64, perms: Perms) -> Result<Flush, PtError> {
        let page = self.geom.page_size();
        self.check_representable(&Attrs::new(perms))?;
        Self::check_aligned("virtual address", va, page)?;
        Self::check_aligned("length", len, page)?;
        self.check_va(va, len)?;
        let mut flush = Flush::default();
        self.edit_range(va, len, &mut |pt, table, level, m| {
            let step = pt.geom.entry_size(level);
            let attrs = Attrs { perms, ..m.attrs };
            for i in 0..m.size / step {
                let e = Entry::Leaf {
                    pa: m.pa + i * step,
                    attrs,
                    contiguous: m.contiguous,
                };
                pt.write_entry(table, level, m.va + i * step, &e);
            }
            flush.add(m.va, m.size);
        })?;
        Ok(flush)
    }

    /// Applies `edit` to every leaf wholly inside `[va, va + len)` after
    /// splitting the leaves that straddle its ends. `edit` gets the table and
    /// level holding the leaf and the leaf itself (a whole run for
    /// contiguous leaves).
    fn edit_range(
        &self,
        va: u64,
        len: u64,
        edit: &mut dyn FnMut(&PageTable, u64, usize, Mapping),
    ) -> Result<(), PtError> {
        self.split_at(va)?;
        // The end needs a split only if something can lie beyond it.
        if let Some(end) = va.checked_add(len).filter(|e| self.geom.is_canonical(*e)) {
            self.split_at(end)?;
        }
        self.edit_walk(self.root, self.geom.root_level(), va, va + (len - 1), edit)
    }

    fn edit_walk(
        &self,
        table: u64,
        level: usize,
        first: u64,
        last: u64,
        edit: &mut dyn FnMut(&PageTable, u64, usize, Mapping),
    ) -> Result<(), PtError> {
        let size = self.geom.entry_size(level);
        self.visit_entries(table, level, first, last, &mut |va, e| match e {
            Entry::Invalid => Ok(size),
            Entry::Table { pa } => {
                self.edit_walk(
                    pa,
                    level - 1,
                    va.max(first),
                    (va + size - 1).min(last),
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
                debug_assert!(m.va >= first && m.va + m.size - 1 <= last);
                edit(self, table, level, m);
                Ok(m.size)
            }
        })
    }

    /// Makes `boundary` (a base-page-aligned address) a boundary between
    /// leaves: splits the huge leaf or contiguous run that straddles it.
    fn split_at(&self, boundary: u64) -> Result<(), PtError> {
        let g = &*self.geom;
        let mut table = self.root;
        for level in (0..g.num_levels()).rev() {
            let l = g.level(level);
            match self.read_entry(table, level, boundary)? {
                Entry::Invalid => return Ok(()),
                Entry::Table { pa } => table = pa,
                Entry::Leaf {
                    pa,
                    attrs,
                    contiguous,
                } => {
                    let size = l.entry_size();
                    if contiguous {
                        let run = size * u64::from(l.contig);
                        if !boundary.is_multiple_of(run) {
                            // Break the run into plain entries (ARM: clear the
                            // contiguous bit on all of them before reuse).
                            let base_va = boundary & !(run - 1);
                            let base_pa = pa & !(run - 1);
                            for i in 0..u64::from(l.contig) {
                                let e = Entry::Leaf {
                                    pa: base_pa + i * size,
                                    attrs,
                                    contiguous: false,
                                };
                                self.write_entry(table, level, base_va + i * size, &e);
                            }
                        }
                    }
                    if boundary.is_multiple_of(size) {
                        return Ok(());
                    }
                    // A huge leaf straddles the boundary: split it one level down.
                    self.split_leaf(table, level, boundary, pa, attrs)?;
                    table = match self.read_entry(table, level, boundary)? {
                        Entry::Table { pa } => pa,
                        _ => unreachable!("split_leaf links a table"),
                    };
                }
            }
        }
        Ok(())
    }

    /// Replaces the huge leaf for `va` at `level` with a table of the next
    /// level down mapping the same pages (Linux: `__split_huge_pmd`).
    fn split_leaf(
        &self,
        table: u64,
        level: usize,
        va: u64,
        pa: u64,
        attrs: Attrs,
    ) -> Result<(), PtError> {
        let g = &*self.geom;
        let below = level - 1;
        let size = g.entry_size(level);
        if !g.level(below).leaf {
            return Err(PtError::CannotSplit { size, level: below });
        }
        let child = self.mem.alloc_table(below)?;
        let step = g.entry_size(below);
        let base_va = va & !(size - 1);
        let base_pa = pa & !(size - 1);
        for i in 0..size / step {
            let e = Entry::Leaf {
                pa: base_pa + i * step,
                attrs,
                contiguous: false,
            };
            self.write_entry(child, below, base_va + i * step, &e);
        }
        // Break before make: the huge entry goes invalid, then the table appears.
        self.write_entry(table, level, va, &Entry::Invalid);
        self.link_table(table, level, va, child);
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
    pub fn free_empty(&self, va: u64, len: u64) -> Result<FreedTables, PtError> {
        let mut out = FreedTables::default();
        if len > 0 {
            self.free_walk(
                self.root,
                self.geom.root_level(),
                va,
                va.saturating_add(len - 1),
                &mut out,
            )?;
        }
        Ok(out)
    }

    fn free_walk(
        &self,
        table: u64,
        level: usize,
        first: u64,
        last: u64,
        out: &mut FreedTables,
    ) -> Result<(), PtError> {
        if level == 0 {
            return Ok(());
        }
        let size = self.geom.entry_size(level);
        self.visit_entries(table, level, first, last, &mut |va, e| {
            if let Entry::Table { pa } = e {
                self.free_walk(pa, level - 1, va.max(first), (va + size - 1).min(last), out)?;
                if self.mem.meta(pa).present.load(Ordering::Acquire) == 0 {
                    self.write_entry(table, level, va, &Entry::Invalid);
                    out.tables.push((level - 1, pa));
                    out.flush.add(va, size);
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
        self.teardown_walk(self.root, self.geom.root_level())?;
        self.mem.free_table(self.root)?;
        for c in &self.tables_per_level {
            c.store(0, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(())
    }

    fn teardown_walk(&self, table: u64, level: usize) -> Result<(), PtError> {
        if level == 0 {
            return Ok(());
        }
        let n = self.geom.level(level).entries();
        let size = self.geom.entry_size(level);
        for i in 0..n {
            let va = i * size;
            if let Entry::Table { pa } = self.read_entry(table, level, va)? {
                self.teardown_walk(pa, level - 1)?;
                self.mem.free_table(pa)?;
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
    pub fn dump(&self, va: u64, len: u64) -> Result<String, PtError> {
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
                self.root,
                self.geom.root_level(),
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
        table: u64,
        level: usize,
        first: u64,
        last: u64,
        depth: usize,
        s: &mut String,
    ) -> Result<(), PtError> {
        let g = &*self.geom;
        let l = g.level(level);
        let size = l.entry_size();
        let mut group: Option<Mapping> = None;
        let indent = "  ".repeat(depth);
        let flush_group = |group: &mut Option<Mapping>, s: &mut String| {
            if let Some(m) = group.take() {
                let _ = writeln!(
                    s,
                    "{indent}{:#014x}-{:#014x} -> {:#x} {} {}{}",
                    m.va,
                    m.va + m.size - 1,
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
                let present = self.mem.meta(pa).present.load(Ordering::Relaxed);
                let _ = writeln!(
                    s,
                    "{indent}{:#014x} {} -> {} table {:#x} ({} of {} present)",
                    va,
                    l.name,
                    g.level(level - 1).name,
                    pa,
                    present,
                    g.level(level - 1).entries()
                );
                self.dump_walk(
                    pa,
                    level - 1,
                    va.max(first),
                    (va + size - 1).min(last),
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
fn table_end(va: u64, span_bits: u32) -> u64 {
    if span_bits >= 64 {
        u64::MAX
    } else {
        va | ((1u64 << span_bits) - 1)
    }
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
