//! The fault handler, as Linux x86-64 does it (mm/memory.c
//! `handle_mm_fault` and mm/huge_memory.c).
//!
//! Faults run under the mmap lock held for reading; the PMD entry is
//! installed or changed under the PMD lock, PTEs under the PTE lock with the
//! `pmd_same` re-check (see [`crate::locking`]). Frames are allocated before
//! the lock is taken and released if the entry changed meanwhile (the fault
//! still counts, as on Linux, and the access is retried).
//!
//! [`AddressSpace::fault`] takes the faulting address as the workload gave
//! it (a bare word) and the handler carries it as a [`VirtAddr`] from there.

use crate::cache::{Lookup, MemObject};
use crate::counters::{FaultKind, ThreadCtx};
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::space::{AddressSpace, PageKind, Rss};
use crate::vma::Vma;
use pt::{Attrs, Entry, Level, Perms, PhysAddr, TableAddr, VirtAddr};

/// The access that faulted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct FaultAccess {
    pub write: bool,
    pub exec: bool,
    /// From user mode (all accesses of a workload are).
    pub user: bool,
}

impl FaultAccess {
    pub const READ: FaultAccess = FaultAccess {
        write: false,
        exec: false,
        user: true,
    };
    pub const WRITE: FaultAccess = FaultAccess {
        write: true,
        exec: false,
        user: true,
    };
}

/// SIGSEGV's si_code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SegvCode {
    /// No VMA there (SEGV_MAPERR).
    MapErr,
    /// The VMA forbids the access (SEGV_ACCERR).
    AccErr,
}

/// What a fault ended in.
#[must_use = "a handled fault may leave a TLB flush to do"]
#[derive(Debug)]
pub enum FaultResult {
    /// Handled (or found already handled): retry the access. `major` when
    /// the page had to be read in.
    Handled { deferred: Deferred, major: bool },
    /// SIGSEGV.
    Segv(SegvCode),
    /// VM_FAULT_OOM: no memory for a frame or a table.
    Oom,
    /// An inconsistency in the model (a bug).
    Internal(Errno),
}

enum Huge {
    Done,
    Fallback,
}

impl AddressSpace {
    /// Handles a fault at `va` (Linux: arch/x86/mm/fault.c
    /// `do_user_addr_fault` then `handle_mm_fault`). Counts one minor or
    /// major fault per handled fault (Linux `mm_account_fault`); SIGSEGV and
    /// OOM are not counted as faults.
    pub fn fault(&self, ctx: &mut ThreadCtx, va: u64, access: FaultAccess) -> FaultResult {
        ctx.fault_kind = FaultKind::Spurious;
        let vmas = self.mmap_read(ctx);
        let Some(vma) = vmas.find_cached(self.id, va) else {
            ctx.counters.segv_faults += 1;
            return FaultResult::Segv(SegvCode::MapErr);
        };
        // Linux: arch/x86/mm/fault.c, access_error
        let p = vma.prot;
        if !p.accessible() || (access.write && !p.write) || (access.exec && !p.exec) {
            ctx.counters.segv_faults += 1;
            return FaultResult::Segv(SegvCode::AccErr);
        }
        self.anon_vma_prepare_for_fault(&vmas, vma, va, access.write);
        let va = VirtAddr::new(va).align_down(self.page);
        match self.handle_mm_fault(ctx, vma, va, access.write) {
            Ok((deferred, major)) => {
                let kind = if major {
                    FaultKind::Major
                } else {
                    ctx.fault_kind
                };
                ctx.counters.fault_kinds[kind as usize] += 1;
                if major {
                    ctx.counters.major_faults += 1;
                } else {
                    ctx.counters.minor_faults += 1;
                }
                FaultResult::Handled { deferred, major }
            }
            Err(Errno::NoMem(_)) => {
                ctx.counters.oom_faults += 1;
                FaultResult::Oom
            }
            Err(e) => FaultResult::Internal(e),
        }
    }

    // Linux: mm/memory.c, __handle_mm_fault
    pub(crate) fn handle_mm_fault(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        va: VirtAddr,
        write: bool,
    ) -> Result<(Deferred, bool), Errno> {
        let pmd_table = self.alloc_pmd_table(ctx, va)?;
        let mut d = Deferred::none();
        loop {
            // The common case first: the PMD entry points to a PTE table.
            if let Some(table) = self.pt.next_table(pmd_table, Level::PMD, va) {
                if let Some(major) =
                    self.handle_pte_fault(ctx, vma, pmd_table, table, va, write, &mut d)?
                {
                    return Ok((d, major));
                }
                continue;
            }
            if let Some(major) = self.pmd_entry_fault(ctx, vma, pmd_table, va, write, &mut d)? {
                return Ok((d, major));
            }
        }
    }

    /// The rest of `__handle_mm_fault`, for a PMD entry that is not (or
    /// no longer) a table pointer: allocate a PTE table or a THP, or handle
    /// a huge leaf. `Ok(None)`: the entry changed, look again. Out of line:
    /// the 4 KiB fault path never comes here once its PTE table exists.
    #[inline(never)]
    fn pmd_entry_fault(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        pmd_table: TableAddr,
        va: VirtAddr,
        write: bool,
        d: &mut Deferred,
    ) -> Result<Option<bool>, Errno> {
        match self.pt.read_entry(pmd_table, Level::PMD, va)? {
            Entry::Invalid => {
                if let Some(obj) = vma.object() {
                    if let Some(major) =
                        self.file_pmd_fault(ctx, vma, obj, pmd_table, va.get(), write)?
                    {
                        return Ok(Some(major));
                    }
                }
                if self.thp_allowed(vma, va.get()) {
                    match self.do_huge_pmd_anonymous_page(ctx, vma, pmd_table, va, write)? {
                        Huge::Done => return Ok(Some(false)),
                        Huge::Fallback => {}
                    }
                }
                self.pte_alloc(ctx, pmd_table, va)?;
                Ok(None)
            }
            orig @ Entry::Leaf { pa, attrs, .. } => {
                if write && attrs.perms.user && !attrs.perms.write && vma.object().is_some() {
                    // Linux: wp_huge_pmd on a page-cache folio: split (for a
                    // file: unmap) and fall back; the retry finds the PMD
                    // none (do_cow_fault copies one page into a PTE table;
                    // do_shared_fault maps the folio again, writable).
                    let g = self.pmd_lock(ctx, pmd_table);
                    if self.pt.read_entry(pmd_table, Level::PMD, va)? == orig {
                        self.split_huge_pmd_locked(vma, pmd_table, va, d)?;
                    }
                    drop(g);
                    return Ok(None);
                }
                if write && !attrs.perms.write && Some(pa) == self.huge_zero_pa {
                    // Linux: do_huge_pmd_wp_page on the huge zero page:
                    // replace it by a THP (6.12+), and only if no huge
                    // page can be had, split and let the PTE path copy.
                    match self.do_huge_zero_wp_pmd(ctx, vma, pmd_table, va, orig, d)? {
                        Huge::Done => return Ok(Some(false)),
                        Huge::Fallback => {}
                    }
                    let g = self.pmd_lock(ctx, pmd_table);
                    if let Entry::Leaf { pa: p2, .. } =
                        self.pt.read_entry(pmd_table, Level::PMD, va)?
                    {
                        if p2 == pa {
                            self.split_huge_pmd_locked(vma, pmd_table, va, d)?;
                        }
                    }
                    drop(g);
                    return Ok(None);
                }
                if write && attrs.perms.user && !attrs.perms.write && vma.prot.write {
                    // Linux: do_huge_pmd_wp_page on an anonymous THP that a
                    // fork write-protected.
                    return self.do_huge_pmd_wp_page(ctx, vma, pmd_table, va, orig, pa, d);
                }
                // Linux: huge_pmd_set_accessed (a spurious fault).
                Ok(Some(false))
            }
            Entry::Table { pa } => {
                let table = TableAddr::new(pa);
                self.handle_pte_fault(ctx, vma, pmd_table, table, va, write, d)
            }
        }
    }

    // Linux: mm/memory.c, __pte_alloc (pmd_install re-checks pmd_none under the PMD lock)
    fn pte_alloc(
        &self,
        ctx: &mut ThreadCtx,
        pmd_table: TableAddr,
        va: VirtAddr,
    ) -> Result<(), Errno> {
        let pmd_lock = || self.pmd_lock(ctx, pmd_table);
        Ok(self.pt.alloc_install(pmd_table, Level::PMD, va, pmd_lock)?)
    }

    // Linux: mm/huge_memory.c, do_huge_pmd_anonymous_page / __do_huge_pmd_anonymous_page
    fn do_huge_pmd_anonymous_page(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        pmd_table: TableAddr,
        va: VirtAddr,
        write: bool,
    ) -> Result<Huge, Errno> {
        let haddr = va.align_down(self.pmd_size);
        let mem = self.pt.mem();
        let huge_zero = self.huge_zero_pa.expect("thp_allowed checked it");
        if !write && self.cfg.thp_use_zero_page {
            // set_huge_zero_folio: deposit a table, mm_inc_nr_ptes.
            let table = self.pt.alloc_table(Level::PTE)?;
            let g = self.pmd_lock(ctx, pmd_table);
            if self.pt.is_none(pmd_table, Level::PMD, haddr) {
                let attrs = self.leaf_attrs(vma, PageKind::Zero, false);
                self.set_huge_pmd(pmd_table, haddr, huge_zero, attrs, table);
                drop(g);
            } else {
                drop(g);
                self.pt.free_table(table)?;
            }
            return Ok(Huge::Done);
        }
        let Ok(folio) = mem.alloc_data(self.pmd_size) else {
            ctx.counters.thp_fault_fallback += 1;
            return Ok(Huge::Fallback);
        };
        let table = match self.pt.alloc_table(Level::PTE) {
            Ok(t) => t,
            Err(e) => {
                mem.free_data(folio, self.pmd_size)?;
                return Err(e.into());
            }
        };
        let g = self.pmd_lock(ctx, pmd_table);
        if self.pt.is_none(pmd_table, Level::PMD, haddr) {
            let attrs = self.leaf_attrs(vma, PageKind::Anon, true);
            self.add_folio(folio, self.pmd_size);
            self.set_huge_pmd(pmd_table, haddr, folio, attrs, table);
            let n = (self.pmd_size / self.page) as i64;
            self.rss_add(Rss::Anon, n);
            self.anon_huge
                .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
            drop(g);
            ctx.counters.thp_fault_alloc += 1;
            ctx.fault_kind = FaultKind::Thp;
        } else {
            drop(g);
            self.pt.free_table(table)?;
            mem.free_data(folio, self.pmd_size)?;
        }
        Ok(Huge::Done)
    }

    // Linux: mm/huge_memory.c, do_huge_zero_wp_pmd (since 6.12)
    /// A write to the huge zero page: allocate a THP and, if the PMD entry
    /// is still `orig` under the PMD lock, replace the huge zero page by it
    /// (clear and flush, then map writable). The deposited table stays with
    /// the PMD and stays counted (no `mm_inc_nr_ptes`). `Fallback` when no
    /// huge page can be had (counted as `THP_FAULT_FALLBACK` by
    /// `vma_alloc_anon_folio_pmd`); the caller then splits.
    fn do_huge_zero_wp_pmd(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        pmd_table: TableAddr,
        va: VirtAddr,
        orig: Entry,
        d: &mut Deferred,
    ) -> Result<Huge, Errno> {
        let haddr = va.align_down(self.pmd_size);
        let mem = self.pt.mem();
        let Ok(folio) = mem.alloc_data(self.pmd_size) else {
            ctx.counters.thp_fault_fallback += 1;
            return Ok(Huge::Fallback);
        };
        let g = self.pmd_lock(ctx, pmd_table);
        if self.pt.read_entry(pmd_table, Level::PMD, haddr)? != orig {
            // pmd_same failed: someone else changed it; the access retries.
            drop(g);
            mem.free_data(folio, self.pmd_size)?;
            return Ok(Huge::Done);
        }
        // pmdp_huge_clear_flush, then map_anon_folio_pmd_pf.
        self.pt.pte_clear(pmd_table, Level::PMD, haddr);
        d.add_flush(haddr.get(), self.pmd_size);
        let attrs = self.leaf_attrs(vma, PageKind::Anon, true);
        self.add_folio(folio, self.pmd_size);
        self.pt.set_entry(
            pmd_table,
            Level::PMD,
            haddr,
            &Entry::Leaf {
                pa: folio,
                attrs,
                contiguous: false,
            },
        );
        let n = (self.pmd_size / self.page) as i64;
        self.rss_add(Rss::Anon, n);
        self.anon_huge
            .fetch_add(n, std::sync::atomic::Ordering::Relaxed);
        drop(g);
        ctx.counters.thp_fault_alloc += 1;
        ctx.fault_kind = FaultKind::Thp;
        Ok(Huge::Done)
    }

    // Linux: mm/huge_memory.c, do_huge_pmd_wp_page (anonymous folio)
    /// A write to a write-protected anonymous THP: reuse it (map the PMD
    /// writable) when this space is its only holder; else split the PMD
    /// and fall back to the PTE path (`VM_FAULT_FALLBACK`), whose
    /// `do_wp_page` copies the one page written. `Ok(None)`: look again.
    #[allow(clippy::too_many_arguments)]
    fn do_huge_pmd_wp_page(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        pmd_table: TableAddr,
        va: VirtAddr,
        orig: Entry,
        pa: u64,
        d: &mut Deferred,
    ) -> Result<Option<bool>, Errno> {
        let haddr = va.align_down(self.pmd_size);
        let g = self.pmd_lock(ctx, pmd_table);
        if self.pt.read_entry(pmd_table, Level::PMD, haddr)? != orig {
            drop(g);
            return Ok(None);
        }
        if self.not_exclusive.exclusive(pa) || !self.shares.shared(pa) {
            // folio_ref_count == 1: reuse (maybe_pmd_mkwrite, pmd_mkdirty).
            self.not_exclusive.remove(pa);
            let attrs = self.leaf_attrs(vma, PageKind::Anon, true);
            self.pt.set_entry(
                pmd_table,
                Level::PMD,
                haddr,
                &Entry::Leaf {
                    pa,
                    attrs,
                    contiguous: false,
                },
            );
            drop(g);
            return Ok(Some(false));
        }
        // __split_huge_pmd, then VM_FAULT_FALLBACK.
        self.split_huge_pmd_locked(vma, pmd_table, haddr, d)?;
        drop(g);
        Ok(None)
    }

    /// Installs a huge PMD leaf with its deposited table (caller holds the
    /// PMD lock, or the space is a fork's child no one else can reach yet;
    /// the entry is empty).
    pub(crate) fn set_huge_pmd(
        &self,
        pmd_table: TableAddr,
        haddr: VirtAddr,
        pa: u64,
        attrs: Attrs,
        deposit: TableAddr,
    ) {
        crate::space::lock_plain(&self.deposits).insert(haddr.get(), deposit);
        // The deposited table is page-table memory: Linux counts it in VmPTE.
        self.pt.count_table(Level::PTE);
        self.pt.set_entry(
            pmd_table,
            Level::PMD,
            haddr,
            &Entry::Leaf {
                pa,
                attrs,
                contiguous: false,
            },
        );
    }

    /// Linux `handle_pte_fault`. `Ok(None)`: the PMD entry changed, retry.
    #[allow(clippy::too_many_arguments)]
    fn handle_pte_fault(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        pmd_table: TableAddr,
        table: TableAddr,
        va: VirtAddr,
        write: bool,
        d: &mut Deferred,
    ) -> Result<Option<bool>, Errno> {
        let orig = self.pt.read_entry(table, Level::PTE, va)?;
        match orig {
            Entry::Invalid => match vma.object() {
                None => self.do_anonymous_page(ctx, vma, pmd_table, table, va, write),
                Some(obj) if !write => self.do_read_fault(ctx, vma, obj, pmd_table, table, va),
                Some(obj) if !vma.shared => self.do_cow_fault(ctx, vma, obj, pmd_table, table, va),
                Some(obj) => self.do_shared_fault(ctx, vma, obj, pmd_table, table, va),
            },
            Entry::Leaf { pa, attrs, .. } if write && !attrs.perms.write => {
                self.do_wp_page(ctx, vma, pmd_table, table, va, orig, pa, d)
            }
            // Spurious: someone else handled it, or a stale TLB entry.
            _ => Ok(Some(false)),
        }
    }

    /// Whether every PTE of `[base, base + size)` in `table` is none
    /// (Linux `pte_range_none`).
    #[inline(always)]
    fn range_none(&self, table: TableAddr, base: VirtAddr, size: u64) -> bool {
        if size == self.page {
            return self.pt.is_none(table, Level::PTE, base);
        }
        (0..size >> self.page_shift)
            .all(|i| self.pt.is_none(table, Level::PTE, base + i * self.page))
    }

    /// Writes the PTEs of a folio of `size` at `base` (Linux `set_ptes`;
    /// as contiguous runs where the geometry has them and the folio covers
    /// whole runs: ARM contpte, Svnapot).
    #[inline]
    fn set_ptes(&self, table: TableAddr, base: VirtAddr, pa: u64, size: u64, attrs: Attrs) {
        let fold = self.pt.can_fold(Level::PTE, base, size);
        let nr = size >> self.page_shift;
        self.pt
            .set_ptes(table, Level::PTE, base, PhysAddr::new(pa), nr, attrs, fold);
    }

    // Linux: mm/memory.c, do_anonymous_page (+ alloc_anon_folio for mTHP)
    fn do_anonymous_page(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        pmd_table: TableAddr,
        table: TableAddr,
        va: VirtAddr,
        write: bool,
    ) -> Result<Option<bool>, Errno> {
        if !write {
            // The shared zero page: a fault, no RSS.
            let Some(g) = self.pte_offset_map_lock(ctx, pmd_table, va, table) else {
                return Ok(None);
            };
            if self.pt.read_entry(table, Level::PTE, va)? == Entry::Invalid {
                let attrs = self.leaf_attrs(vma, PageKind::Zero, false);
                self.set_ptes(table, va, self.zero_pa, self.page, attrs);
                ctx.fault_kind = FaultKind::ZeroRead;
            }
            drop(g);
            return Ok(Some(false));
        }
        let mem = self.pt.mem();
        let mut folio = None;
        for size in self.mthp_sizes(vma, va.get()) {
            let base = va.align_down(size);
            if !self.range_none(table, base, size) {
                continue;
            }
            if let Ok(pa) = mem.alloc_data(size) {
                folio = Some((base, pa, size));
                break;
            }
        }
        let (base, pa, size) = match folio {
            Some(f) => f,
            None => (va, mem.alloc_data(self.page)?, self.page),
        };
        let Some(g) = self.pte_offset_map_lock(ctx, pmd_table, va, table) else {
            mem.free_data(pa, size)?;
            return Ok(None);
        };
        if !self.range_none(table, base, size) {
            drop(g);
            mem.free_data(pa, size)?;
            return Ok(Some(false));
        }
        match self.anon_pte_bits[vma.prot.index()] {
            // One page: the PTE from this protection's template (the
            // attributes are encoded once per address space).
            Some(bits) if size == self.page => {
                self.pt
                    .set_leaf_bits(table, Level::PTE, base, bits, PhysAddr::new(pa))
            }
            _ => {
                let attrs = self.leaf_attrs(vma, PageKind::Anon, true);
                if size > self.page {
                    self.add_folio(pa, size);
                    ctx.counters.mthp_fault_alloc += 1;
                }
                self.set_ptes(table, base, pa, size, attrs);
            }
        }
        self.rss_add(Rss::Anon, (size >> self.page_shift) as i64);
        drop(g);
        ctx.fault_kind = if size > self.page {
            FaultKind::Mthp
        } else {
            FaultKind::AnonWrite
        };
        Ok(Some(false))
    }

    fn cache_rss(obj: &MemObject) -> Rss {
        match obj.kind {
            crate::cache::ObjectKind::File => Rss::File,
            crate::cache::ObjectKind::Shmem => Rss::Shmem,
        }
    }

    // Linux: mm/memory.c, __do_fault (filemap_fault: read-ahead on a miss
    // or on a marked folio, see crate::readahead)
    /// The page of `obj` at page offset `idx`, read in if it is not cached.
    /// The pages its read-ahead read in are counted in `ctx`.
    fn do_fault_lookup(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        obj: &MemObject,
        idx: u64,
    ) -> Result<Lookup, Errno> {
        let ra = self.ra_request(vma, obj);
        let lookup = obj.get(&mut obj.lock(), idx, &ra)?;
        ctx.counters.pages_read += lookup.read;
        ctx.counters.pmd_pages_read += lookup.read_pmd;
        if lookup.major && lookup.read_pmd > 0 {
            ctx.counters.pmd_major_faults += 1;
        }
        Ok(lookup)
    }

    // Linux: mm/memory.c, finish_fault
    /// Maps the page-cache page `lookup` (offset `idx` of `obj`) at `va` if
    /// the PTE is still none once its lock is taken; a write maps it dirty
    /// and marks the cached page dirty. `Ok(None)`: the PTE table changed,
    /// retry.
    #[allow(clippy::too_many_arguments)]
    fn finish_cache_fault(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        obj: &MemObject,
        (pmd_table, table): (TableAddr, TableAddr),
        va: VirtAddr,
        (idx, lookup): (u64, Lookup),
        write: bool,
    ) -> Result<Option<bool>, Errno> {
        let rss = Self::cache_rss(obj);
        let Some(g) = self.pte_offset_map_lock(ctx, pmd_table, va, table) else {
            return Ok(None);
        };
        if self.pt.read_entry(table, Level::PTE, va)? == Entry::Invalid {
            let attrs = self.leaf_attrs(vma, PageKind::Cache(rss), write);
            self.set_ptes(table, va, lookup.pa, self.page, attrs);
            self.rss_add(rss, 1);
            ctx.fault_kind = if write {
                FaultKind::Shmem
            } else {
                FaultKind::FileRead
            };
            if write {
                MemObject::set_dirty(&mut obj.lock(), idx, true);
            }
        }
        drop(g);
        Ok(Some(lookup.major))
    }

    // Linux: mm/memory.c, do_read_fault (do_fault_around, then __do_fault
    // and finish_fault; a major fault is retried, running fault-around)
    fn do_read_fault(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        obj: &MemObject,
        pmd_table: TableAddr,
        table: TableAddr,
        va: VirtAddr,
    ) -> Result<Option<bool>, Errno> {
        let around = self.cfg.fault_around_bytes / self.page > 1;
        if around {
            let Some(g) = self.pte_offset_map_lock(ctx, pmd_table, va, table) else {
                return Ok(None);
            };
            let hit = self.filemap_map_pages(vma, obj, table, va.get())?;
            drop(g);
            if hit {
                ctx.fault_kind = FaultKind::FileRead;
                return Ok(Some(false));
            }
        }
        let idx = vma.pgoff_of(va.get(), self.page_shift);
        let lookup = self.do_fault_lookup(ctx, vma, obj, idx)?;
        let Some(g) = self.pte_offset_map_lock(ctx, pmd_table, va, table) else {
            return Ok(None);
        };
        if lookup.major && around && self.filemap_map_pages(vma, obj, table, va.get())? {
            // The retry after the read: fault-around mapped it.
            drop(g);
            return Ok(Some(true));
        }
        if self.pt.read_entry(table, Level::PTE, va)? == Entry::Invalid {
            self.finish_read_fault(vma, obj, table, va.get())?;
        }
        drop(g);
        Ok(Some(lookup.major))
    }

    // Linux: mm/memory.c, do_cow_fault
    fn do_cow_fault(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        obj: &MemObject,
        pmd_table: TableAddr,
        table: TableAddr,
        va: VirtAddr,
    ) -> Result<Option<bool>, Errno> {
        let mem = self.pt.mem();
        let copy = mem.alloc_data(self.page)?;
        let idx = vma.pgoff_of(va.get(), self.page_shift);
        let lookup = match self.do_fault_lookup(ctx, vma, obj, idx) {
            Ok(l) => l,
            Err(e) => {
                mem.free_data(copy, self.page)?;
                return Err(e);
            }
        };
        let Some(g) = self.pte_offset_map_lock(ctx, pmd_table, va, table) else {
            mem.free_data(copy, self.page)?;
            return Ok(None);
        };
        if self.pt.read_entry(table, Level::PTE, va)? == Entry::Invalid {
            let attrs = self.leaf_attrs(vma, PageKind::Anon, true);
            self.set_ptes(table, va, copy, self.page, attrs);
            self.rss_add(Rss::Anon, 1);
            drop(g);
            ctx.fault_kind = FaultKind::Cow;
        } else {
            drop(g);
            mem.free_data(copy, self.page)?;
        }
        Ok(Some(lookup.major))
    }

    // Linux: mm/memory.c, do_shared_fault (page_mkwrite, then a dirty writable PTE)
    fn do_shared_fault(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        obj: &MemObject,
        pmd_table: TableAddr,
        table: TableAddr,
        va: VirtAddr,
    ) -> Result<Option<bool>, Errno> {
        let idx = vma.pgoff_of(va.get(), self.page_shift);
        let lookup = self.do_fault_lookup(ctx, vma, obj, idx)?;
        self.finish_cache_fault(ctx, vma, obj, (pmd_table, table), va, (idx, lookup), true)
    }

    // Linux: mm/memory.c, do_wp_page (wp_page_copy for the zero page and
    // private file pages; wp_page_shared for shared file pages)
    #[allow(clippy::too_many_arguments)]
    fn do_wp_page(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        pmd_table: TableAddr,
        table: TableAddr,
        va: VirtAddr,
        orig: Entry,
        pa: u64,
        d: &mut Deferred,
    ) -> Result<Option<bool>, Errno> {
        let kind = self.classify(vma, va.get(), pa);
        let mem = self.pt.mem();
        let copy = match kind {
            PageKind::Zero => true,
            PageKind::Cache(_) => !vma.shared,
            // Linux: PageAnonExclusive, else wp_can_reuse_anon_folio: reuse
            // when no other holder is left (fork's other side copied,
            // unmapped or exited); copy while one is.
            PageKind::Anon => {
                !self.not_exclusive.exclusive(pa) && self.shares.shared(self.share_head(pa))
            }
        };
        if copy {
            let new = mem.alloc_data(self.page)?;
            let Some(g) = self.pte_offset_map_lock(ctx, pmd_table, va, table) else {
                mem.free_data(new, self.page)?;
                return Ok(None);
            };
            if self.pt.read_entry(table, Level::PTE, va)? != orig {
                drop(g);
                mem.free_data(new, self.page)?;
                return Ok(Some(false));
            }
            let attrs = self.leaf_attrs(vma, PageKind::Anon, true);
            self.pt.contpte_try_unfold(table, Level::PTE, va)?;
            self.pt.pte_clear(table, Level::PTE, va);
            self.set_ptes(table, va, new, self.page, attrs);
            match kind {
                PageKind::Cache(rss) => {
                    self.rss_add(rss, -1);
                    self.rss_add(Rss::Anon, 1);
                }
                // wp_page_copy: the old anonymous page loses this holder
                // (freed after the flush if it was the last).
                PageKind::Anon => self.put_anon_page(pa, d),
                PageKind::Zero => self.rss_add(Rss::Anon, 1),
            }
            drop(g);
            // wp_page_copy zeroes a new page for the zero pfn and copies
            // the old page otherwise: two kinds, priced apart.
            ctx.fault_kind = if kind == PageKind::Zero {
                FaultKind::ZeroCow
            } else {
                FaultKind::Cow
            };
            d.add_flush(va.get(), self.page);
            return Ok(Some(false));
        }
        // Reuse: make the PTE writable and dirty.
        let Some(g) = self.pte_offset_map_lock(ctx, pmd_table, va, table) else {
            return Ok(None);
        };
        if self.pt.read_entry(table, Level::PTE, va)? == orig {
            if kind == PageKind::Anon {
                // wp_page_reuse after a successful reuse check: exclusive again.
                self.not_exclusive.remove(pa);
            }
            let attrs = self.leaf_attrs(vma, kind, true);
            let attrs = Attrs {
                perms: Perms {
                    write: vma.prot.write,
                    ..attrs.perms
                },
                ..attrs
            };
            self.pt.set_entry(
                table,
                Level::PTE,
                va,
                &Entry::Leaf {
                    pa,
                    attrs,
                    contiguous: matches!(
                        orig,
                        Entry::Leaf {
                            contiguous: true,
                            ..
                        }
                    ),
                },
            );
            if let (PageKind::Cache(rss), Some(obj)) = (kind, vma.object()) {
                let idx = vma.pgoff_of(va.get(), self.page_shift);
                MemObject::set_dirty(&mut obj.lock(), idx, true);
                // Linux: mm/memory.c, wp_page_shared: a shared file page
                // (not shmem, which has no page_mkwrite and maps writable)
                // goes through do_page_mkwrite and fault_dirty_shared_page.
                if rss == Rss::File && vma.shared {
                    ctx.fault_kind = FaultKind::FileMkwrite;
                }
            }
        }
        drop(g);
        Ok(Some(false))
    }
}
