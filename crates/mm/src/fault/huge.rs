//! The THP side of the fault handler (Linux mm/huge_memory.c): a THP or
//! the huge zero page for a PMD entry that is none, and a write to a
//! PMD-mapped anonymous folio or to the huge zero page.

use super::{Huge, VmFault};
use crate::counters::{FaultKind, ThreadCtx};
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::space::{AddressSpace, PageKind, Rss};
use pt::{Attrs, Entry, Level, TableAddr, VirtAddr};

impl AddressSpace {
    // Linux: mm/huge_memory.c, do_huge_pmd_anonymous_page / __do_huge_pmd_anonymous_page
    pub(super) fn do_huge_pmd_anonymous_page(
        &self,
        ctx: &mut ThreadCtx,
        vmf: &VmFault,
    ) -> Result<Huge, Errno> {
        let VmFault {
            vma,
            pmd_table,
            va,
            write,
        } = *vmf;
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
    pub(super) fn do_huge_zero_wp_pmd(
        &self,
        ctx: &mut ThreadCtx,
        vmf: &VmFault,
        orig: Entry,
        d: &mut Deferred,
    ) -> Result<Huge, Errno> {
        let VmFault {
            vma, pmd_table, va, ..
        } = *vmf;
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
    pub(super) fn do_huge_pmd_wp_page(
        &self,
        ctx: &mut ThreadCtx,
        vmf: &VmFault,
        orig: Entry,
        pa: u64,
        d: &mut Deferred,
    ) -> Result<Option<bool>, Errno> {
        let VmFault {
            vma, pmd_table, va, ..
        } = *vmf;
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
}
