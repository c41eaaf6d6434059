//! MADV_COLD and MADV_PAGEOUT of a page-cache folio (shmem or a regular
//! file) mapped by one PMD entry, as Linux 6.18 does them with no swap
//! device (mm/madvise.c, the `pmd_trans_huge` part of
//! `madvise_cold_or_pageout_pte_range`; mm/vmscan.c `shrink_folio_list`;
//! mm/shmem.c `shmem_writeout`), as measured on a 6.18 host (the
//! shmem-huge-pageout-*, shmem-huge-cold-* and file-thp-* validation
//! workloads). Both kinds take the same path; what differs is where a
//! dropped folio's next access goes (a new shmem folio, a minor fault; a
//! file read, a major fault with read-ahead).
//!
//! - A folio another process of the family maps (a fork child still
//!   mapping it) is left alone, whole range or not
//!   (`folio_maybe_mapped_shared`).
//! - A range that covers the PMD only in part, under either advice: the
//!   folio is split into base pages (`split_folio`), which unmaps it (a
//!   page-cache folio is not mapped again after a split); its pages stay in
//!   the object, dirty or clean as the folio was, and the next reads map
//!   them by fault-around. Nothing is reclaimed (the PTE walk that follows
//!   finds no table).
//! - `cold` over the whole PMD changes nothing the counters see.
//! - `pageout` over the whole PMD unmaps it (`try_to_unmap` with
//!   `TTU_SPLIT_HUGE_PMD`: a file PMD is just cleared). A clean folio (only
//!   read since it was allocated or read from its file) is then dropped
//!   from the object whole. A dirty one stays whole (there is no swap to
//!   write shmem to, and reclaim on request does not write file pages
//!   back), and the next access maps it again. With swap, a dirty shmem
//!   folio is written to it: split first on a swap file, whole on a block
//!   device (see `object_huge_pmd_reclaim`).
//!
//! The same folio mapped by PTEs is `reclaim_object_folio.rs`'s.

use super::{AddressSpace, Rss};
use crate::cache::{MemObject, ObjectKind};
use crate::config::SwapDeviceKind;
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::space::reclaim::{HugeStep, PageAdvice};
use crate::space::rmap::Elsewhere;
use crate::walk::PmdExtent;
use pt::{Entry, Level};
use std::sync::Arc;

impl AddressSpace {
    /// MADV_COLD or MADV_PAGEOUT (`how`) meeting the huge PMD entry of
    /// `ext` in a VMA of the object `obj` (no lock held). See the module
    /// documentation.
    pub(crate) fn object_huge_pmd_reclaim(
        &self,
        ctx: &mut ThreadCtx,
        ext: PmdExtent,
        obj: &Arc<MemObject>,
        how: PageAdvice,
        d: &mut Deferred,
    ) -> Result<HugeStep, Errno> {
        let PmdExtent {
            vma,
            pmd_table,
            start: a,
            ..
        } = ext;
        let whole = ext.whole(self.pmd_size);
        if how == PageAdvice::Free || (how == PageAdvice::Cold && whole) {
            return Ok(HugeStep::Done);
        }
        let haddr = a.align_down(self.pmd_size);
        let n = self.pmd_size >> self.page_shift;
        let head = vma.pgoff_of(haddr.get(), self.page_shift);
        // folio_maybe_mapped_shared: asked before any lock of ours is
        // taken (the reverse map reads other spaces under their locks).
        let shared = match self.mapped_elsewhere(ctx, obj, head, head + n) {
            Elsewhere::All => true,
            Elsewhere::Pages(p) => !p.is_empty(),
        };
        if shared {
            return Ok(HugeStep::Done);
        }
        let g = self.pmd_lock(ctx, pmd_table);
        let Entry::Leaf { attrs, .. } = self.pt.read_entry(pmd_table, Level::PMD, haddr)? else {
            drop(g);
            return Ok(HugeStep::Walk);
        };
        // try_to_unmap (TTU_SPLIT_HUGE_PMD) or split_folio's unmap: the PMD
        // goes, its dirty bit to the folio.
        self.pt.pte_clear(pmd_table, Level::PMD, haddr);
        d.add_flush(haddr.get(), self.pmd_size);
        self.rss_add(Rss::of_cache(obj.kind), -(n as i64));
        drop(g);
        let mut pages = obj.lock();
        if attrs.dirty {
            for i in head..head + n {
                MemObject::set_dirty(&mut pages, i, true);
            }
        }
        if !whole {
            obj.split_folio_uniform(&mut pages, head)?;
            return Ok(HugeStep::Done);
        }
        let dirty = (head..head + n).any(|i| MemObject::is_dirty(&pages, i));
        if !dirty {
            d.frames.extend(obj.evict_folio(&mut pages, head));
        } else if obj.kind == ObjectKind::Shmem && self.has_swap() {
            // Linux: mm/shmem.c, shmem_writeout. A swap file takes no large
            // folio: it is split and each page written (each faults back
            // alone, from the swap cache). A block device takes it whole:
            // with asynchronous I/O it waits in the swap cache, where the
            // next access finds it whole, as with no swap; with synchronous
            // I/O it leaves memory, and the next access reads it back whole
            // (shmem_swapin_folio of a large folio: one major fault).
            match self.cfg.swap_device {
                SwapDeviceKind::File => {
                    obj.split_folio_uniform(&mut pages, head)?;
                    for i in head..head + n {
                        MemObject::shmem_swap_out(&mut pages, i, false);
                    }
                }
                SwapDeviceKind::Block => {}
                SwapDeviceKind::Sync => MemObject::shmem_swap_out(&mut pages, head, true),
            }
        }
        Ok(HugeStep::Done)
    }
}
