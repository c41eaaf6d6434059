//! fork: a child address space made from this one (Linux kernel/fork.c
//! `dup_mm` / `dup_mmap`, mm/memory.c `copy_page_range` and below,
//! mm/huge_memory.c `copy_huge_pmd`).
//!
//! # What is copied
//!
//! Every VMA is copied except those with `VM_DONTCOPY` (MADV_DONTFORK),
//! with `VM_LOCKED` and `VM_LOCKONFAULT` cleared and a new anon_vma where
//! the parent's VMA had one (`anon_vma_fork`). A `VM_WIPEONFORK` VMA
//! (MADV_WIPEONFORK) is copied empty: no anon_vma, no page table, so the
//! child faults it in afresh and the parent's pages stay its own. Page
//! tables are copied only where a fault could not rebuild them
//! (`vma_needs_copy`): for VMAs with an anon_vma. A shared
//! mapping, or a private one that never mapped anonymous memory, starts
//! with no tables in the child; its faults refill them.
//!
//! In a copied range: every present entry is copied; a private
//! anonymous page (or a private file mapping's COW copy) becomes shared by
//! both spaces, write-protected in both and no longer `PageAnonExclusive`;
//! a PMD-mapped THP is shared as a PMD, with a PTE table deposited in the
//! child; zero pages map the child's own zero page; page-cache pages are
//! mapped as they are (read-only in a private mapping already). Every
//! upper table and PTE table that the parent has under a copied range is
//! allocated in the child, even when its entries are all none (Linux
//! allocates the destination table before it scans the source one).
//!
//! # Locks
//!
//! The parent's mmap lock is held for writing for the whole copy, so no
//! fault, madvise or munmap of the parent runs meanwhile; the child is not
//! yet visible to anyone. The parent's PTE and PMD locks are taken around
//! each table's copy all the same, as Linux does, because a CPU's
//! page-table walker may still set accessed bits. The parent's TLB is
//! flushed for every range whose entries lost their write permission
//! (Linux: `flush_tlb_mm(oldmm)` at the end of `dup_mmap`), through the
//! returned [`Deferred`].

use super::{lock_plain, AddressSpace, Folio, PageKind, Rss};
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::vma::{AnonVma, Vma, Vmas};
use crate::walk::PmdExtent;
use pt::{Attrs, Entry, Level, Perms, TableAddr, VirtAddr};
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// The child's side of one PMD entry's copy (Linux `copy_pte_range`'s and
/// `copy_huge_pmd`'s `dst_*` arguments): the child space, its copy of the
/// source VMA, and its PMD table holding the entry for the same address
/// as the source extent (allocated by `walk_alloc_pmd_table`, so it
/// exists; the entry itself may still be none).
struct ForkDest<'a> {
    child: &'a AddressSpace,
    vma: &'a Vma,
    pmd_table: TableAddr,
}

impl AddressSpace {
    /// A new address space sharing this one's physical memory and anon
    /// share table, for [`AddressSpace::fork`] to fill.
    ///
    /// # Errors
    /// As [`AddressSpace::with_memory`].
    pub fn new_child(&self) -> Result<AddressSpace, Errno> {
        let geometry = Arc::new(self.pt.geometry().clone());
        let mut child = AddressSpace::with_memory(geometry, self.mem().clone(), self.cfg.clone())?;
        child.shares = self.shares.clone();
        child.shares.join();
        Ok(child)
    }

    // Linux: kernel/fork.c, dup_mmap
    /// Copies this space's VMAs and, where Linux copies them, its page
    /// tables into `child` (made by [`AddressSpace::new_child`], still
    /// empty). The returned work flushes this (the parent's) TLB for the
    /// entries write-protected here; the caller completes it.
    ///
    /// # Errors
    /// [`Errno::Inval`] if `child` is not empty or not of this family;
    /// [`Errno::NoMem`] if a table cannot be allocated (what was copied
    /// stays: the caller exits the child).
    pub fn fork(&self, ctx: &mut ThreadCtx, child: &AddressSpace) -> Result<Deferred, Errno> {
        if !Arc::ptr_eq(&self.shares, &child.shares) || !Arc::ptr_eq(self.mem(), child.mem()) {
            return Err(Errno::Inval("fork into a space not made by new_child"));
        }
        let mut d = Deferred::none();
        let vmas = self.mmap_write(ctx);
        let mut cvmas = child.mmap_write(ctx);
        if !cvmas.is_empty() {
            return Err(Errno::Inval("fork into a space that has mappings"));
        }
        let r = self.dup_vmas(ctx, &vmas, child, &mut cvmas, &mut d);
        drop(cvmas);
        drop(vmas);
        r.map(|()| d)
    }

    fn dup_vmas(
        &self,
        ctx: &mut ThreadCtx,
        vmas: &Vmas,
        child: &AddressSpace,
        cvmas: &mut Vmas,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        for vma in vmas.iter() {
            // Linux: dup_mmap leaves a VM_DONTCOPY VMA out of the child.
            if vma.flags.dontcopy {
                continue;
            }
            let mut tmp = vma.clone();
            // Linux: dup_mmap clears VM_LOCKED_MASK in the child.
            tmp.flags.locked = false;
            tmp.flags.lockonfault = false;
            // Linux: anon_vma_fork (a new anon_vma, child of the parent's);
            // a VM_WIPEONFORK VMA gets none until its first fault.
            tmp.anon_vma = AnonVma::default();
            let wipe = vma.flags.wipeonfork;
            if vma.anon_vma.get().is_some() && !wipe {
                tmp.anon_vma.install(AnonVma::fresh());
            }
            cvmas.insert(tmp.clone());
            self.dup_vma_ra(child, vma.start);
            // Linux: dup_mmap calls copy_page_range only without VM_WIPEONFORK.
            if !wipe && vma_needs_copy(vma) {
                self.copy_page_range(ctx, child, vma, &tmp, d)?;
            }
        }
        Ok(())
    }

    // Linux: mm/memory.c, copy_page_range (copy_p4d_range .. copy_pmd_range)
    fn copy_page_range(
        &self,
        ctx: &mut ThreadCtx,
        child: &AddressSpace,
        src_vma: &Vma,
        dst_vma: &Vma,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let (start, end) = (VirtAddr::new(src_vma.start), VirtAddr::new(src_vma.end));
        let mut a = start;
        while a < end {
            let src_pmd = match self.find_pmd_table(a) {
                Ok(t) => t,
                Err(level) => {
                    a = a.addr_end(self.pt.entry_size(level), end);
                    continue;
                }
            };
            let next = a.addr_end(self.pmd_size, end);
            let src = PmdExtent {
                vma: src_vma,
                pmd_table: src_pmd,
                start: a,
                end: next,
            };
            match self.pt.read_entry(src_pmd, Level::PMD, a)? {
                Entry::Invalid | Entry::Swap { .. } => {}
                Entry::Leaf { .. } => {
                    let dst = ForkDest {
                        child,
                        vma: dst_vma,
                        pmd_table: child.walk_alloc_pmd_table(ctx, a)?,
                    };
                    self.copy_huge_pmd(ctx, src, &dst, d)?;
                }
                Entry::Table { pa } => {
                    let dst = ForkDest {
                        child,
                        vma: dst_vma,
                        pmd_table: child.walk_alloc_pmd_table(ctx, a)?,
                    };
                    self.copy_pte_range(ctx, src, TableAddr::new(pa), &dst, d)?;
                }
            }
            a = next;
        }
        Ok(())
    }

    // Linux: mm/memory.c, copy_pte_range (copy_present_ptes / copy_present_pte)
    /// Copies the PTEs of the source extent `from` (in its PTE table `src`)
    /// into the child's PTE table under `to`'s PMD entry.
    fn copy_pte_range(
        &self,
        ctx: &mut ThreadCtx,
        from: PmdExtent,
        src: TableAddr,
        to: &ForkDest,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let PmdExtent {
            vma: src_vma,
            pmd_table: src_pmd,
            start,
            end,
        } = from;
        let (child, dst_pmd) = (to.child, to.pmd_table);
        // pte_alloc_map_lock on the destination first, even if nothing in
        // the source range is present.
        let dst_lock = || child.pmd_lock_uncounted(dst_pmd);
        child
            .pt
            .alloc_install(dst_pmd, Level::PMD, start, dst_lock)?;
        let dst = child
            .pt
            .next_table(dst_pmd, Level::PMD, start)
            .ok_or_else(|| Errno::Internal("the child's PTE table vanished".into()))?;
        let Some(g) = self.pte_offset_map_lock(ctx, src_pmd, start, src) else {
            return Err(Errno::Internal(
                "a PTE table changed under the mmap write lock".into(),
            ));
        };
        let cow = is_cow_mapping(src_vma);
        let mut addr = start;
        let mut protected = false;
        while addr < end {
            let e = self.pt.read_entry(src, Level::PTE, addr)?;
            if let Entry::Swap { val } = e {
                self.copy_swap_pte(child, src, dst, addr, val);
            }
            if let Entry::Leaf { pa, attrs, .. } = e {
                let kind = self.classify(src_vma, addr.get(), pa);
                let mut child_attrs = attrs;
                let mut child_pa = pa;
                match kind {
                    PageKind::Zero => child_pa = child.zero_pa,
                    PageKind::Anon => {
                        // folio_try_dup_anon_rmap_pte: one more holder, and
                        // the page is no longer exclusive in either space.
                        self.dup_anon_pte(child, pa);
                        if cow && attrs.perms.write {
                            // ptep_set_wrprotect on the parent's entry.
                            self.pt.contpte_try_unfold(src, Level::PTE, addr)?;
                            let ro = wrprotect(attrs);
                            self.pt.set_entry(
                                src,
                                Level::PTE,
                                addr,
                                &Entry::Leaf {
                                    pa,
                                    attrs: ro,
                                    contiguous: false,
                                },
                            );
                            protected = true;
                        }
                        if cow {
                            child_attrs = wrprotect(attrs);
                        }
                        child.rss_add(Rss::Anon, 1);
                    }
                    PageKind::Cache(rss) => {
                        if cow && attrs.perms.write {
                            child_attrs = wrprotect(attrs);
                        }
                        child.rss_add(rss, 1);
                    }
                }
                child.pt.set_entry(
                    dst,
                    Level::PTE,
                    addr,
                    &Entry::Leaf {
                        pa: child_pa,
                        attrs: child_attrs,
                        contiguous: false,
                    },
                );
            }
            addr += self.page;
        }
        drop(g);
        if protected {
            d.add_flush(start.get(), end.offset_from(start));
        }
        Ok(())
    }

    /// One more mapping of the anonymous page `pa` in `child`: the page,
    /// or its large folio, gains a holder, and it stops being exclusive.
    fn dup_anon_pte(&self, child: &AddressSpace, pa: u64) {
        self.not_exclusive.insert(pa);
        child.not_exclusive.insert(pa);
        if self.shares.swap.active() {
            // A page read back from swap and still in the swap cache.
            self.shares.swap.map_more(pa);
        }
        match self.folio_of(pa) {
            None => self.shares.get(pa),
            Some((head, size)) => {
                let mut f = lock_plain(&child.folios);
                match f.get_mut(&head) {
                    Some(folio) => folio.mapped += 1,
                    None => {
                        f.insert(head, Folio::new(size, 1));
                        child.nr_folios.fetch_add(1, Ordering::Release);
                        self.shares.get(head);
                    }
                }
            }
        }
    }

    // Linux: mm/huge_memory.c, copy_huge_pmd
    /// Copies the huge PMD leaf of the source extent `from` (which covers
    /// it whole) into the child's empty PMD entry under `to`.
    fn copy_huge_pmd(
        &self,
        ctx: &mut ThreadCtx,
        from: PmdExtent,
        to: &ForkDest,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let PmdExtent {
            vma: src_vma,
            pmd_table: src_pmd,
            start: addr,
            ..
        } = from;
        let (child, dst_vma, dst_pmd) = (to.child, to.vma, to.pmd_table);
        // A page-cache folio is not copied: the child's faults map it again.
        if !dst_vma.is_anon() && self.file_pmd_rss(src_vma).is_some() {
            return Ok(());
        }
        let haddr = addr.align_down(self.pmd_size);
        // pte_alloc_one: the table the child deposits (counted in VmPTE).
        let deposit = child.pt.alloc_table(Level::PTE)?;
        let g = self.pmd_lock(ctx, src_pmd);
        let Entry::Leaf { pa, attrs, .. } = self.pt.read_entry(src_pmd, Level::PMD, haddr)? else {
            drop(g);
            child.pt.free_table(deposit)?;
            return Ok(());
        };
        let n = (self.pmd_size / self.page) as i64;
        if Some(pa) == self.huge_zero_pa {
            // mm_get_huge_zero_folio + set_huge_zero_folio in the child.
            let zero = child
                .huge_zero_pa
                .ok_or_else(|| Errno::Internal("the child has no huge zero page".into()))?;
            child.set_huge_pmd(dst_pmd, haddr, zero, attrs, deposit);
            drop(g);
            return Ok(());
        }
        // folio_try_dup_anon_rmap_pmd: the child holds the folio too.
        self.not_exclusive.insert(pa);
        child.not_exclusive.insert(pa);
        self.shares.get(pa);
        lock_plain(&child.folios).insert(pa, Folio::new(self.pmd_size, n as u64));
        child.nr_folios.fetch_add(1, Ordering::Release);
        child.rss_add(Rss::Anon, n);
        child.anon_huge.fetch_add(n, Ordering::Relaxed);
        let ro = wrprotect(attrs);
        if attrs.perms.write {
            // pmdp_set_wrprotect on the parent.
            self.pt.set_entry(
                src_pmd,
                Level::PMD,
                haddr,
                &Entry::Leaf {
                    pa,
                    attrs: ro,
                    contiguous: false,
                },
            );
            d.add_flush(haddr.get(), self.pmd_size);
        }
        child.set_huge_pmd(dst_pmd, haddr, pa, ro, deposit);
        drop(g);
        Ok(())
    }

    /// The PMD lock of a table of a space no other thread can reach yet
    /// (the child during fork): taken for the protocol, not counted.
    fn pmd_lock_uncounted(&self, pmd_table: TableAddr) -> pt::sync::SpinGuard<'_> {
        let (m, _) = self.pmd_lockptr(pmd_table);
        m.lock()
    }
}

// Linux: mm/memory.c, vma_needs_copy (no VM_COPY_ON_FORK flag is modelled:
// no PFN maps, no uffd-wp)
fn vma_needs_copy(src: &Vma) -> bool {
    src.anon_vma.get().is_some()
}

// Linux: include/linux/mm.h, is_cow_mapping (VM_MAYWRITE is set on every
// private mapping the format can make)
fn is_cow_mapping(vma: &Vma) -> bool {
    !vma.shared
}

/// `pte_wrprotect`.
fn wrprotect(a: Attrs) -> Attrs {
    Attrs {
        perms: Perms {
            write: false,
            ..a.perms
        },
        ..a
    }
}
