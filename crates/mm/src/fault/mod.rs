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
//! it (a bare word) and the handler carries it, with the VMA, the access
//! and the PMD table, as one `VmFault` from there.
//!
//! - here: the entry (`fault`, `__handle_mm_fault`), the PMD entry's
//!   cases, and the anonymous PTE faults (`do_anonymous_page`,
//!   `do_wp_page`);
//! - `huge`: THP faults (mm/huge_memory.c);
//! - `file`: PTE faults in file and shmem mappings (`do_read_fault`,
//!   `do_cow_fault`, `do_shared_fault`).

mod file;
mod huge;

use crate::cache::MemObject;
use crate::counters::{FaultKind, ThreadCtx};
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::space::{AddressSpace, PageKind, Rss};
use crate::vma::Vma;
use pt::{Attrs, Entry, LeafRun, Level, Perms, PhysAddr, TableAddr, VirtAddr};

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

/// What a THP fault did.
enum Huge {
    /// Handled (or found handled by someone else): the access retries.
    Done,
    /// No huge page could be had: go on with the PTE path.
    Fallback,
}

/// One fault being handled (Linux `struct vm_fault`): the VMA, the
/// faulting address, whether the access writes, and the PMD table holding
/// the entry for the address. Every handler below `__handle_mm_fault`
/// takes it; the PTE-level ones take the PTE table beside it, since that
/// one can change while the fault retries.
///
/// Invariants: `va` is page-aligned and inside `vma`, whose protection
/// allows the access (`fault` checked both); `pmd_table` exists
/// (`alloc_pmd_table` made it) and stays, since the fault holds the mmap
/// lock for reading and only a writer frees PMD tables; the entries in and
/// below it may change under concurrent faults and zaps, so each handler
/// re-reads them under their lock.
#[derive(Clone, Copy)]
pub(crate) struct VmFault<'a> {
    pub(crate) vma: &'a Vma,
    pub(crate) pmd_table: TableAddr,
    pub(crate) va: VirtAddr,
    pub(crate) write: bool,
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
        let vmf = VmFault {
            vma,
            pmd_table,
            va,
            write,
        };
        let mut d = Deferred::none();
        loop {
            // The common case first: the PMD entry points to a PTE table.
            if let Some(table) = self.pt.next_table(pmd_table, Level::PMD, va) {
                if let Some(major) = self.handle_pte_fault(ctx, &vmf, table, &mut d)? {
                    return Ok((d, major));
                }
                continue;
            }
            if let Some(major) = self.pmd_entry_fault(ctx, &vmf, &mut d)? {
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
        vmf: &VmFault,
        d: &mut Deferred,
    ) -> Result<Option<bool>, Errno> {
        let VmFault {
            vma,
            pmd_table,
            va,
            write,
        } = *vmf;
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
                    match self.do_huge_pmd_anonymous_page(ctx, vmf)? {
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
                    match self.do_huge_zero_wp_pmd(ctx, vmf, orig, d)? {
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
                    return self.do_huge_pmd_wp_page(ctx, vmf, orig, pa, d);
                }
                // Linux: huge_pmd_set_accessed (a spurious fault).
                Ok(Some(false))
            }
            Entry::Table { pa } => {
                let table = TableAddr::new(pa);
                self.handle_pte_fault(ctx, vmf, table, d)
            }
            Entry::Swap { .. } => Err(Errno::Internal(format!(
                "a swap entry in a PMD at {:#x}",
                va.get()
            ))),
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

    /// Linux `handle_pte_fault`. `Ok(None)`: the PMD entry changed, retry.
    fn handle_pte_fault(
        &self,
        ctx: &mut ThreadCtx,
        vmf: &VmFault,
        table: TableAddr,
        d: &mut Deferred,
    ) -> Result<Option<bool>, Errno> {
        let VmFault { vma, va, write, .. } = *vmf;
        let orig = self.pt.read_entry(table, Level::PTE, va)?;
        match orig {
            Entry::Invalid => match vma.object() {
                None => self.do_anonymous_page(ctx, vmf, table),
                Some(obj) if !write => self.do_read_fault(ctx, vmf, obj, table),
                Some(obj) if !vma.shared => self.do_cow_fault(ctx, vmf, obj, table),
                Some(obj) => self.do_shared_fault(ctx, vmf, obj, table),
            },
            Entry::Leaf { pa, attrs, .. } if write && !attrs.perms.write => {
                self.do_wp_page(ctx, vmf, table, orig, pa, d)
            }
            // Not present, not none: a swap entry (Linux `is_swap_pte`).
            Entry::Swap { val } => self.do_swap_page(ctx, vmf, table, orig, val),
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
        let run = LeafRun {
            va: base,
            pa: PhysAddr::new(pa),
            nr,
            attrs,
            contiguous: fold,
        };
        self.pt.set_ptes(table, Level::PTE, run);
    }

    // Linux: mm/memory.c, do_anonymous_page (+ alloc_anon_folio for mTHP)
    fn do_anonymous_page(
        &self,
        ctx: &mut ThreadCtx,
        vmf: &VmFault,
        table: TableAddr,
    ) -> Result<Option<bool>, Errno> {
        let VmFault {
            vma,
            pmd_table,
            va,
            write,
        } = *vmf;
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

    // Linux: mm/memory.c, do_wp_page (wp_page_copy for the zero page and
    // private file pages; wp_page_shared for shared file pages)
    fn do_wp_page(
        &self,
        ctx: &mut ThreadCtx,
        vmf: &VmFault,
        table: TableAddr,
        orig: Entry,
        pa: u64,
        d: &mut Deferred,
    ) -> Result<Option<bool>, Errno> {
        let VmFault {
            vma, pmd_table, va, ..
        } = *vmf;
        let kind = self.classify(vma, va.get(), pa);
        let mem = self.pt.mem();
        let copy = match kind {
            PageKind::Zero => true,
            PageKind::Cache(_) => !vma.shared,
            // Linux: PageAnonExclusive, else wp_can_reuse_anon_folio: reuse
            // when no other holder is left (fork's other side copied,
            // unmapped or exited); copy while one is.
            // A page in the swap cache whose slot another process's entry
            // still names is not reused either (folio_free_swap fails).
            PageKind::Anon => {
                !self.not_exclusive.exclusive(pa)
                    && (self.shares.shared(self.share_head(pa)) || self.swap_named(pa))
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
                // wp_page_reuse after a successful reuse check: exclusive
                // again, and out of the swap cache (folio_free_swap).
                self.not_exclusive.remove(pa);
                if self.shares.swap.active() {
                    self.shares.swap.free_swap(pa);
                }
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
