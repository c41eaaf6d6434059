//! Mapping page-cache folios on a read fault, as Linux 6.18 does it
//! (mm/filemap.c `filemap_map_pages`, `filemap_map_pmd`; mm/memory.c
//! `do_fault_around`, `finish_fault`, `do_set_pmd`).
//!
//! - Fault-around maps the cached folios of a window of
//!   `fault_around_bytes` around the fault, each large folio whole when it
//!   lies in the VMA, in one PTE table and before the end of the file; it
//!   skips a folio carrying the read-ahead mark, so that the fault reaches
//!   `filemap_fault` and starts the next read-ahead.
//! - A major fault is retried once the page is read (Linux returns
//!   `VM_FAULT_RETRY` after dropping the mmap lock for the I/O): the retry
//!   runs fault-around again, so one major fault maps the window.
//! - Where the PMD entry is none, a PMD-sized folio is mapped by one PMD
//!   leaf (no PTE table, and on x86-64 no deposited one either). A write to
//!   it in a private mapping unmaps the PMD and copies one page into a new
//!   PTE table; in a shared one the PMD is mapped again, writable.
//!
//! ## Invariants
//! - A PMD leaf in a VMA with an object maps a PMD-sized page-cache folio
//!   (`CacheFolio::block`) at the file offset of its address; it counts
//!   `pmd_size / page` pages in the object's RSS counter.
//! - Entries are set under the lock that covers them (PMD lock for a PMD
//!   leaf, PTE lock for PTEs) after re-checking that they are still none.

use crate::cache::{MemObject, ObjectKind, ShmemHuge, Slot};
use crate::counters::ThreadCtx;
use crate::error::Errno;
use crate::readahead::RaRequest;
use crate::space::{AddressSpace, PageKind, Rss};
use crate::vma::Vma;
use pt::VirtAddr;
use pt::{Entry, Level, TableAddr};
use std::collections::HashMap;

/// Where [`AddressSpace::folio_span`] asks: the VMA and its object, and
/// whether for fault-around (else for the faulting page's own mapping).
#[derive(Clone, Copy)]
struct SpanOf<'a> {
    vma: &'a Vma,
    obj: &'a MemObject,
    around: bool,
}

/// A run of consecutive page-cache pages to map by PTEs: the pages
/// `first..first + count` of the object, the first at `first_va`.
///
/// Invariant: the run lies inside the VMA and inside the PTE table of
/// `first_va` (`folio_span` and the fault-around window only make such
/// runs), so page `first + k` maps at `first_va + k * page`.
#[derive(Clone, Copy)]
pub(crate) struct CachedRun {
    pub(crate) first: u64,
    pub(crate) first_va: u64,
    pub(crate) count: u64,
}

impl AddressSpace {
    /// The RSS counter of a PMD leaf in `vma` if the leaf maps a page-cache
    /// folio (any PMD leaf in a VMA with an object does).
    pub(crate) fn file_pmd_rss(&self, vma: &Vma) -> Option<Rss> {
        vma.object().map(|o| Rss::of_cache(o.kind))
    }

    /// What a fault in `vma` may read ahead in `obj`.
    pub(crate) fn ra_request(&self, vma: &Vma, obj: &MemObject) -> RaRequest {
        let vma_end = vma.pgoff_of(vma.start, self.page_shift) + vma.pages(self.page_shift);
        RaRequest {
            ra_pages: self.cfg.readaround_bytes >> self.page_shift,
            large_folios: self.cfg.large_folios,
            max_order: (self.pmd_size >> self.page_shift).trailing_zeros() as u8,
            eof: obj.size_pages().unwrap_or(vma_end),
            hugepage: vma.flags.hugepage && self.huge_zero_pa.is_some(),
        }
    }

    /// Whether a PMD leaf may map the PMD-sized folio at `va` in `vma`
    /// (Linux `do_set_pmd`: `thp_vma_suitable_order`, which also wants the
    /// file offset aligned like the address, and no `MADV_NOHUGEPAGE`).
    fn file_pmd_suitable(&self, vma: &Vma, va: u64) -> bool {
        let haddr = va & !(self.pmd_size - 1);
        let pmd_pages = self.pmd_size >> self.page_shift;
        self.huge_zero_pa.is_some()
            && !vma.flags.nohugepage
            && haddr >= vma.start
            && haddr + self.pmd_size <= vma.end
            && vma
                .pgoff_of(haddr, self.page_shift)
                .is_multiple_of(pmd_pages)
    }

    /// Whether a shmem fault on page `idx` of `obj` in `vma` allocates a
    /// PMD-sized folio when the page is not there: the mount's `huge=`
    /// option allows it (Linux `shmem_allowable_huge_orders` →
    /// `shmem_huge_global_enabled`, which for a tmpfs reads the mount's
    /// option; `vma_thp_disabled` for `MADV_NOHUGEPAGE`), and the VMA holds
    /// the aligned folio with its file offset aligned like its address
    /// (`shmem_suitable_orders` → `thp_vma_suitable_orders`; the range
    /// being empty is the allocation's check). Measured on Linux 6.18: a
    /// tmpfs takes no folio between the base page and the PMD size here.
    pub(crate) fn shmem_pmd_allowed(&self, vma: &Vma, obj: &MemObject, idx: u64) -> bool {
        let pmd_pages = self.pmd_size >> self.page_shift;
        let head = idx & !(pmd_pages - 1);
        let lo = vma.pgoff(self.page_shift);
        self.shmem_pmd_order_allowed(vma, obj, head, false)
            && obj.kind == ObjectKind::Shmem
            && self.huge_zero_pa.is_some()
            && !vma.flags.nohugepage
            && ((vma.start >> self.page_shift).wrapping_sub(lo)).is_multiple_of(pmd_pages)
            && head >= lo
            && head + pmd_pages <= lo + vma.pages(self.page_shift)
    }

    // Linux: mm/shmem.c, shmem_allowable_huge_orders and
    // shmem_huge_global_enabled (the PMD order only: a tmpfs takes no other
    // order on a fault here)
    /// Whether the policies allow a PMD-sized folio at page `head` of the
    /// shmem object `obj` in `vma` (`force`: MADV_COLLAPSE's
    /// `shmem_huge_force`, which only `deny` overrides). The global
    /// `shmem_enabled` first: `deny` refuses and `force` allows on every
    /// mount; else the object's mount decides, and for anonymous shmem the
    /// PMD size's own policy, where `inherit` follows the mount.
    pub(crate) fn shmem_pmd_order_allowed(
        &self,
        vma: &Vma,
        obj: &MemObject,
        head: u64,
        force: bool,
    ) -> bool {
        use crate::config::{ShmemEnabled, ShmemOrderPolicy};
        let pmd_pages = self.pmd_size >> self.page_shift;
        // shmem_get_orders_within_size: the folio ends within i_size.
        let within = || {
            obj.size_pages()
                .is_some_and(|size| head + pmd_pages <= size)
        };
        let hugepage = vma.flags.hugepage;
        let global = self.cfg.shmem_enabled;
        let global_orders = match global {
            ShmemEnabled::Deny => false,
            ShmemEnabled::Force => true,
            _ if force => true,
            _ => match obj.huge {
                ShmemHuge::Never => false,
                ShmemHuge::Always => true,
                ShmemHuge::WithinSize => within() || hugepage,
                ShmemHuge::Advise => hugepage,
            },
        };
        if !obj.anon_shmem {
            return global_orders;
        }
        let inherit = self.cfg.shmem_pmd_policy == ShmemOrderPolicy::Inherit;
        match global {
            ShmemEnabled::Deny => false,
            ShmemEnabled::Force => inherit,
            _ => match self.cfg.shmem_pmd_policy {
                ShmemOrderPolicy::Always => true,
                ShmemOrderPolicy::WithinSize => within(),
                ShmemOrderPolicy::Advise => hugepage,
                ShmemOrderPolicy::Never => false,
                ShmemOrderPolicy::Inherit => global_orders,
            },
        }
    }

    /// The `huge=` policy of the kernel's internal shmem mount, which
    /// memfds and shared anonymous mappings live on: `shmem_enabled`, which
    /// `deny` and `force` do not set (Linux `shmem_enabled_store` sets the
    /// mount's only for the four policies; the model takes the mount's
    /// then as `never`, its boot value).
    pub(crate) fn internal_mount_huge(&self) -> ShmemHuge {
        use crate::config::ShmemEnabled;
        match self.cfg.shmem_enabled {
            ShmemEnabled::Always => ShmemHuge::Always,
            ShmemEnabled::WithinSize => ShmemHuge::WithinSize,
            ShmemEnabled::Advise => ShmemHuge::Advise,
            ShmemEnabled::Never | ShmemEnabled::Deny | ShmemEnabled::Force => ShmemHuge::Never,
        }
    }

    /// A fault at `va` whose PMD entry is none, in a VMA with an object:
    /// maps a PMD-sized folio by one PMD leaf where Linux does. `Ok(None)`:
    /// not here, take the PTE path (the caller allocates the table).
    // Linux: mm/memory.c, do_read_fault / do_shared_fault → finish_fault →
    // do_set_pmd, with filemap_map_pmd for the fault-around of a read.
    pub(crate) fn file_pmd_fault(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        obj: &MemObject,
        pmd_table: TableAddr,
        va: u64,
        write: bool,
    ) -> Result<Option<bool>, Errno> {
        // A private write copies one page into a PTE table (do_cow_fault).
        if (write && !vma.shared) || !self.file_pmd_suitable(vma, va) {
            return Ok(None);
        }
        let idx = vma.pgoff_of(va, self.page_shift);
        let ra = self.ra_request(vma, obj);
        let mut pages = obj.lock();
        let major = match obj.cached(&mut pages, idx) {
            Some(_) => false,
            // Linux: shmem_fault → shmem_get_folio_gfp allocates the
            // PMD-sized folio the mount allows; finish_fault → do_set_pmd.
            None if obj.kind == ObjectKind::Shmem => {
                if !self.shmem_pmd_allowed(vma, obj, idx)
                    || !obj.shmem_add_pmd_folio(&mut pages, idx, ra.max_order)?
                {
                    return Ok(None);
                }
                ctx.fault_kind = crate::counters::FaultKind::Thp;
                false
            }
            // Only a MADV_HUGEPAGE miss reads PMD folios synchronously.
            None if ra.hugepage && ra.large_folios => true,
            None => return Ok(None),
        };
        // filemap_fault: a miss reads ahead, a hit on a marked folio reads on.
        let lookup = obj.get(&mut pages, idx, &ra)?;
        Self::count_lookup(ctx, &lookup, major);
        let Some(folio) = MemObject::folio_of(&pages, idx) else {
            return Ok(None);
        };
        if !folio.block {
            return Ok(None);
        }
        // A shmem folio a synchronous swap device freed is read back whole
        // (shmem_swapin_folio): a major fault.
        let major =
            major || (obj.kind == ObjectKind::Shmem && MemObject::shmem_swap_in(&mut pages, idx));
        let head = idx & !((1u64 << folio.order) - 1);
        let Some(Slot::Cached { pa, .. }) = pages.get(&head).copied() else {
            return Ok(None);
        };
        if write {
            for i in head..head + (1u64 << folio.order) {
                MemObject::set_dirty(&mut pages, i, true);
            }
        }
        drop(pages);
        self.do_set_pmd(ctx, vma, pmd_table, va, pa, write);
        Ok(Some(major))
    }

    /// Maps the PMD-sized folio at `pa` by one PMD leaf if the entry is
    /// still none under the PMD lock.
    // Linux: mm/memory.c, do_set_pmd
    fn do_set_pmd(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        pmd_table: TableAddr,
        va: u64,
        pa: u64,
        write: bool,
    ) {
        let haddr = va & !(self.pmd_size - 1);
        let rss = self.file_pmd_rss(vma).unwrap_or(Rss::File);
        let g = self.pmd_lock(ctx, pmd_table);
        if self.pt.is_none(pmd_table, Level::PMD, VirtAddr::new(haddr)) {
            let attrs = self.leaf_attrs(vma, PageKind::Cache(rss), write);
            self.pt.set_entry(
                pmd_table,
                Level::PMD,
                VirtAddr::new(haddr),
                &Entry::Leaf {
                    pa,
                    attrs,
                    contiguous: false,
                },
            );
            self.rss_add(rss, (self.pmd_size / self.page) as i64);
        }
        drop(g);
    }

    /// The folio holding page `idx` at `va` as a run, if it may be mapped
    /// whole there (in the VMA, in the PTE table of `va`, within the file);
    /// else the run of just that page. `around`: for fault-around, which
    /// (Linux 6.18 `filemap_map_pages`: `file_end >= folio_next_index`)
    /// maps a regular file's folio whole only if it ends before the file's
    /// last page, so the folio holding the last page is mapped a window at
    /// a time (measured: a 2 MiB folio ending at the end of a 4 MiB file
    /// takes 31 faults after a PTE table replaced its PMD, one if the file
    /// goes on); `finish_fault` and shmem map it whole when it ends at the
    /// end of the file.
    fn folio_span(&self, args: SpanOf<'_>, va: u64, idx: u64, order: u8) -> CachedRun {
        let SpanOf { vma, obj, around } = args;
        let n = 1u64 << order;
        let head = idx & !(n - 1);
        let first_va = va - (idx - head) * self.page;
        let last_va = first_va + n * self.page - 1;
        let eof = obj.size_pages().unwrap_or(u64::MAX);
        let within_file = if around && obj.kind == ObjectKind::File {
            head + n < eof
        } else {
            head + n <= eof
        };
        if n > 1
            && first_va >= vma.start
            && last_va < vma.end
            && first_va & !(self.pmd_size - 1) == last_va & !(self.pmd_size - 1)
            && within_file
        {
            CachedRun {
                first: head,
                first_va,
                count: n,
            }
        } else {
            CachedRun {
                first: idx,
                first_va: va,
                count: 1,
            }
        }
    }

    /// Maps every cached, unmarked folio of the fault-around window of `va`
    /// (with the PTE lock of `table` held by the caller's guard); returns
    /// whether `va` got mapped.
    // Linux: mm/memory.c, do_fault_around → mm/filemap.c, filemap_map_pages
    pub(crate) fn filemap_map_pages(
        &self,
        vma: &Vma,
        obj: &MemObject,
        table: TableAddr,
        va: u64,
    ) -> Result<bool, Errno> {
        let nr = (self.cfg.fault_around_bytes / self.page).max(1);
        let rss = Rss::of_cache(obj.kind);
        // The window: aligned to fault_around_bytes, clipped to the VMA and
        // the PTE table.
        let ptrs = self.pt.ptrs_per_table(Level::PTE);
        let pte_off = self.pt.index(Level::PTE, VirtAddr::new(va));
        let vma_off = (va - vma.start) / self.page;
        let from = (pte_off & !(nr - 1)).max(pte_off - pte_off.min(vma_off));
        let to = (from + nr)
            .min(ptrs)
            .min(pte_off + vma.pages(self.page_shift) - vma_off);
        let table_base = va - pte_off * self.page;
        let mut pages = obj.lock();
        let mut hit = false;
        let mut mapped = 0;
        let mut i = from;
        while i < to {
            let v = table_base + i * self.page;
            let idx = vma.pgoff_of(v, self.page_shift);
            if obj.cached(&mut pages, idx).is_none() {
                i += 1;
                continue;
            }
            let folio = MemObject::folio_of(&pages, idx).unwrap_or_default();
            let n = 1u64 << folio.order;
            let head = idx & !(n - 1);
            let next = i + (head + n - idx);
            // next_uptodate_folio: a marked folio is left to filemap_fault.
            if MemObject::folio_of(&pages, head).is_some_and(|f| f.readahead) {
                i = next;
                continue;
            }
            let around = SpanOf {
                vma,
                obj,
                around: true,
            };
            let span = self.folio_span(around, v, idx, folio.order);
            let run = if span.count > 1 {
                span
            } else {
                // Only the part inside the window.
                CachedRun {
                    first: idx,
                    first_va: v,
                    count: next.min(to) - i,
                }
            };
            let (n, h) = self.map_cached_run(vma, table, &pages, run, rss, va)?;
            mapped += n;
            hit |= h;
            i = next;
        }
        drop(pages);
        self.rss_add(rss, mapped as i64);
        obj.mmap_hits(mapped);
        Ok(hit)
    }

    /// Maps, for a read fault, the folio of the page-cache page at `va`
    /// (whole where [`AddressSpace::filemap_map_pages`] would map it whole)
    /// under the PTE lock held by the caller's guard.
    // Linux: mm/memory.c, finish_fault
    pub(crate) fn finish_read_fault(
        &self,
        vma: &Vma,
        obj: &MemObject,
        table: TableAddr,
        va: u64,
    ) -> Result<(), Errno> {
        let rss = Rss::of_cache(obj.kind);
        let pages = obj.lock();
        let run = self.fault_run(vma, obj, table, &pages, va)?;
        let (mapped, _) = self.map_cached_run(vma, table, &pages, run, rss, va)?;
        drop(pages);
        self.rss_add(rss, mapped as i64);
        Ok(())
    }

    /// The pages `finish_fault` maps for a fault at `va` whose page is
    /// cached: its whole folio where [`AddressSpace::folio_span`] allows and,
    /// in a shmem mapping, every PTE of it is none (Linux 6.18 maps a
    /// tmpfs folio whole and falls back to the one page when a PTE of the
    /// folio's range is set: `pte_range_none`); else the one page.
    pub(crate) fn fault_run(
        &self,
        vma: &Vma,
        obj: &MemObject,
        table: TableAddr,
        pages: &HashMap<u64, Slot>,
        va: u64,
    ) -> Result<CachedRun, Errno> {
        let idx = vma.pgoff_of(va, self.page_shift);
        let order = MemObject::folio_of(pages, idx).map_or(0, |f| f.order);
        let fault = SpanOf {
            vma,
            obj,
            around: false,
        };
        let span = self.folio_span(fault, va, idx, order);
        let one = CachedRun {
            first: idx,
            first_va: va,
            count: 1,
        };
        if span.count == 1 || obj.kind == ObjectKind::File {
            return Ok(span);
        }
        for k in 0..span.count {
            let pv = VirtAddr::new(span.first_va + k * self.page);
            if self.pt.read_entry(table, Level::PTE, pv)? != Entry::Invalid {
                return Ok(one);
            }
        }
        Ok(span)
    }

    /// Maps the cached pages of `run` (of `vma`'s object) into the PTE
    /// table `table`, where its entries are empty (the caller holds the
    /// table's lock and the object's pages); returns how many it mapped and
    /// whether `va` was one of them.
    fn map_cached_run(
        &self,
        vma: &Vma,
        table: TableAddr,
        pages: &HashMap<u64, Slot>,
        run: CachedRun,
        rss: Rss,
        va: u64,
    ) -> Result<(u64, bool), Errno> {
        let CachedRun {
            first,
            first_va,
            count,
        } = run;
        let (mut mapped, mut hit) = (0, false);
        for k in 0..count {
            let pv = first_va + k * self.page;
            if self.pt.read_entry(table, Level::PTE, VirtAddr::new(pv))? != Entry::Invalid {
                continue;
            }
            let Some(Slot::Cached { pa, .. }) = pages.get(&(first + k)).copied() else {
                continue;
            };
            let attrs = self.leaf_attrs(vma, PageKind::Cache(rss), false);
            self.pt.set_entry(
                table,
                Level::PTE,
                VirtAddr::new(pv),
                &Entry::Leaf {
                    pa,
                    attrs,
                    contiguous: false,
                },
            );
            mapped += 1;
            hit |= pv == va;
        }
        Ok((mapped, hit))
    }
}
