//! Swap read-ahead in one address space: what a major fault on a swap
//! entry reads besides its own page, and the bookkeeping of a fault that
//! finds a page in the swap cache (Linux: mm/swap_state.c,
//! `swapin_readahead`, `swap_update_readahead`). The windows are
//! [`crate::swap_ra`]'s.
//!
//! The pages read ahead join the family's swap cache unmapped: RSS and
//! VmSwap do not move; a later fault on one maps it as a minor fault.

use super::AddressSpace;
use crate::config::SwapRaKind;
use crate::error::Errno;
use crate::fault::VmFault;
use crate::swap::SwapEntry;
use crate::swap_ra::{self, VmaRa};
use pt::{Entry, Level, TableAddr, VirtAddr};

impl AddressSpace {
    fn vma_ra(&self, vma_start: u64) -> VmaRa {
        let m = self.swap_ra.lock().unwrap_or_else(|p| p.into_inner());
        m.get(&vma_start).copied().unwrap_or_default()
    }

    fn set_vma_ra(&self, vma_start: u64, ra: VmaRa) {
        let mut m = self.swap_ra.lock().unwrap_or_else(|p| p.into_inner());
        m.insert(vma_start, ra);
    }

    // Linux: mm/vma_init.c, vm_area_init_from (vm_area_dup copies
    // swap_readahead_info into the child's VMA at fork)
    /// Fork copied the VMA starting at `vma_start` into `child`: the
    /// child's copy starts with this VMA's read-ahead state, if it has one.
    pub(crate) fn dup_vma_ra(&self, child: &AddressSpace, vma_start: u64) {
        let m = self.swap_ra.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(ra) = m.get(&vma_start).copied() {
            child.set_vma_ra(vma_start, ra);
        }
    }

    // Linux: mm/swap_state.c, swap_update_readahead
    /// A fault found its page in the swap cache: a VMA read-ahead keeps the
    /// address (the next fault's neighbour test) and counts a find of a
    /// page read ahead as a hit (the system-wide hit of cluster read-ahead
    /// is counted by the device).
    pub(crate) fn swap_cache_found(&self, vmf: &VmFault, ra_hit: bool) {
        if self.cfg.swap_readahead.kind != SwapRaKind::Vma {
            return;
        }
        let mut ra = self.vma_ra(vmf.vma.start);
        ra.page = vmf.va.get() >> self.page_shift;
        if ra_hit {
            ra.hits = (ra.hits + 1).min(swap_ra::VMA_HITS_MAX);
        }
        self.set_vma_ra(vmf.vma.start, ra);
    }

    // Linux: mm/swap_state.c, swap_vma_readahead / swap_cluster_readahead
    // (the pages besides the faulting one)
    /// Before a major fault on `entry` at `vmf.va` reads its page: reads
    /// the window's other pages that are swapped and not cached into the
    /// swap cache. The PTEs are read without their lock, as Linux does; an
    /// entry that changes meanwhile is found by the device's checks (a slot
    /// no entry names is not read).
    pub(crate) fn swap_read_ahead(
        &self,
        vmf: &VmFault,
        table: TableAddr,
        entry: SwapEntry,
    ) -> Result<(), Errno> {
        let ra = self.cfg.swap_readahead;
        let slots: Vec<u64> = match ra.kind {
            SwapRaKind::Vma => {
                let fpage = vmf.va.get() >> self.page_shift;
                let (start, end, next) = swap_ra::vma_window(
                    self.vma_ra(vmf.vma.start),
                    fpage,
                    vmf.vma.start >> self.page_shift,
                    vmf.vma.end >> self.page_shift,
                    self.pmd_size >> self.page_shift,
                    ra.page_cluster,
                );
                self.set_vma_ra(vmf.vma.start, next);
                let mut v = Vec::new();
                for page in (start..end).filter(|&p| p != fpage) {
                    let va = VirtAddr::new(page << self.page_shift);
                    if let Entry::Swap { val } = self.pt.read_entry(table, Level::PTE, va)? {
                        v.push(SwapEntry::from_val(val).slot);
                    }
                }
                v
            }
            SwapRaKind::Cluster => {
                let Some(capacity) = self.swap_slots() else {
                    return Ok(());
                };
                let swap = &self.shares.swap;
                let pages =
                    swap.cluster_window(entry.slot, swap_ra::cluster_max_pages(ra.page_cluster));
                if pages <= 1 {
                    return Ok(());
                }
                let (start, end) = swap_ra::cluster_block(entry.slot, pages, capacity);
                (start..end).filter(|&s| s != entry.slot).collect()
            }
        };
        let mem = self.pt.mem();
        for slot in slots {
            let fresh = mem.alloc_data(self.page)?;
            if !self.shares.swap.read_ahead(slot, fresh) {
                mem.free_data(fresh, self.page)?;
            }
        }
        Ok(())
    }
}
