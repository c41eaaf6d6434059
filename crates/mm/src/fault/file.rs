//! The page-cache side of the fault handler (Linux mm/memory.c
//! `do_read_fault`, `do_cow_fault`, `do_shared_fault` over `__do_fault` and
//! `finish_fault`): a PTE that is none in a file or shmem mapping. The
//! PMD-mapped page-cache folios and fault-around are in `filemap`.

use super::VmFault;
use crate::cache::{Lookup, MemObject, ObjectKind, Slot};
use crate::counters::{FaultKind, ThreadCtx};
use crate::error::Errno;
use crate::space::{AddressSpace, PageKind, Rss};
use crate::vma::Vma;
use pt::{Entry, Level, TableAddr, VirtAddr};

impl AddressSpace {
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
        let mut pages = obj.lock();
        // Linux: shmem_get_folio_gfp allocates a PMD-sized folio where the
        // mount and the VMA allow it, whatever maps it afterwards.
        if obj.kind == ObjectKind::Shmem
            && obj.cached(&mut pages, idx).is_none()
            && self.shmem_pmd_allowed(vma, obj, idx)
        {
            obj.shmem_add_pmd_folio(&mut pages, idx, ra.max_order)?;
        }
        let from_swap = obj.kind == ObjectKind::Shmem && MemObject::shmem_swap_in(&mut pages, idx);
        let mut lookup = obj.get(&mut pages, idx, &ra)?;
        lookup.major |= from_swap;
        drop(pages);
        Self::count_lookup(ctx, &lookup, lookup.major);
        Ok(lookup)
    }

    /// Counts in `ctx` what a page-cache lookup read and whether it met a
    /// read-ahead mark; `major`: whether the fault waited for its read.
    pub(crate) fn count_lookup(ctx: &mut ThreadCtx, lookup: &Lookup, major: bool) {
        ctx.counters.pages_read += lookup.read;
        ctx.counters.pmd_pages_read += lookup.read_pmd;
        ctx.fault_retry |= lookup.retry;
        if major && lookup.read_pmd > 0 {
            ctx.counters.pmd_major_faults += 1;
        }
    }

    // Linux: mm/memory.c, finish_fault
    /// Maps the page-cache page `lookup` (offset `idx` of `obj`) at `va` if
    /// the PTE is still none once its lock is taken; a write maps it dirty
    /// and marks the cached page dirty. `Ok(None)`: the PTE table changed,
    /// retry.
    fn finish_cache_fault(
        &self,
        ctx: &mut ThreadCtx,
        vmf: &VmFault,
        obj: &MemObject,
        table: TableAddr,
        (idx, lookup): (u64, Lookup),
    ) -> Result<Option<bool>, Errno> {
        let VmFault {
            vma,
            pmd_table,
            va,
            write,
        } = *vmf;
        let rss = Rss::of_cache(obj.kind);
        let Some(g) = self.pte_offset_map_lock(ctx, pmd_table, va, table) else {
            return Ok(None);
        };
        if self.pt.read_entry(table, Level::PTE, va)? == Entry::Invalid {
            let attrs = self.leaf_attrs(vma, PageKind::Cache(rss), write);
            ctx.fault_kind = if write {
                FaultKind::Shmem
            } else {
                FaultKind::FileRead
            };
            if obj.kind == ObjectKind::Shmem {
                // A tmpfs folio is mapped whole where it can be (Linux 6.18
                // finish_fault → set_pte_range: every entry written dirty).
                let mut pages = obj.lock();
                let run = self.fault_run(vma, obj, table, &pages, va.get())?;
                for k in 0..run.count {
                    let i = run.first + k;
                    let Some(Slot::Cached { pa, .. }) = pages.get(&i).copied() else {
                        continue;
                    };
                    let pv = VirtAddr::new(run.first_va + k * self.page);
                    self.set_ptes(table, pv, pa, self.page, attrs);
                    self.rss_add(rss, 1);
                    if write {
                        MemObject::set_dirty(&mut pages, i, true);
                    }
                }
            } else {
                self.set_ptes(table, va, lookup.pa, self.page, attrs);
                self.rss_add(rss, 1);
                if write {
                    MemObject::set_dirty(&mut obj.lock(), idx, true);
                }
            }
        }
        drop(g);
        Ok(Some(lookup.major))
    }

    // Linux: mm/memory.c, do_read_fault (do_fault_around, then __do_fault
    // and finish_fault; a major fault is retried, running fault-around)
    pub(super) fn do_read_fault(
        &self,
        ctx: &mut ThreadCtx,
        vmf: &VmFault,
        obj: &MemObject,
        table: TableAddr,
    ) -> Result<Option<bool>, Errno> {
        let VmFault {
            vma, pmd_table, va, ..
        } = *vmf;
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
    pub(super) fn do_cow_fault(
        &self,
        ctx: &mut ThreadCtx,
        vmf: &VmFault,
        obj: &MemObject,
        table: TableAddr,
    ) -> Result<Option<bool>, Errno> {
        let VmFault {
            vma, pmd_table, va, ..
        } = *vmf;
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
    pub(super) fn do_shared_fault(
        &self,
        ctx: &mut ThreadCtx,
        vmf: &VmFault,
        obj: &MemObject,
        table: TableAddr,
    ) -> Result<Option<bool>, Errno> {
        let VmFault { vma, va, .. } = *vmf;
        let idx = vma.pgoff_of(va.get(), self.page_shift);
        let lookup = self.do_fault_lookup(ctx, vma, obj, idx)?;
        self.finish_cache_fault(ctx, vmf, obj, table, (idx, lookup))
    }
}
