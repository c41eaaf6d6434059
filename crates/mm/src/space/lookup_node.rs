//! get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR): the node of the page at an
//! address, found by getting the page as GUP does (Linux: mm/mempolicy.c,
//! do_get_mempolicy -> lookup_node).
//!
//! Two generations of Linux, chosen by [`Gup`] (`MmConfig::gup`):
//! - [`Gup::Fast`] (Linux since the 2022 GUP clean-ups, John Hubbard,
//!   "mm/gup: remove get_user_pages_locked()", v2 4/4, 1 Feb 2022, which
//!   moved lookup_node to get_user_pages_fast): do_get_mempolicy takes the
//!   mmap lock for reading to find the VMA and drops it; the lookup walks
//!   the tables without a lock (mm/gup.c, gup_fast). A present page takes no
//!   table lock. What gup_fast refuses (an empty entry; the zero page and the
//!   huge zero page, which are special mappings) goes to the slow path below,
//!   under the mmap lock again (get_user_pages_unlocked).
//! - [`Gup::Slow`] (Linux 3.12, the split-PMD seed's kernel): lookup_node
//!   calls get_user_pages with the mmap lock held for the whole call;
//!   follow_page_mask reads a huge PMD under the PMD's lock (then
//!   mm->page_table_lock: [`AddressSpace::pmd_lock`] under `split-pte`) and
//!   a PTE under its table's lock (follow_page_pte ->
//!   pte_offset_map_lock).
//!
//! In both, an absent page is faulted in for read (mm/gup.c, faultin_page ->
//! handle_mm_fault: the zero page for anonymous memory, a huge zero page
//! under THP, a page-cache page for a file) and looked up again. Such a fault
//! is counted a minor (or major) fault, as mm_account_fault counts a GUP
//! fault, but no fault kind: no exception was taken (as populate's).
//!
//! The model has one node: the answer is node 0.

use super::AddressSpace;
use crate::config::Gup;
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::vma::Vma;
use pt::{Entry, Level, VirtAddr};

/// How many times the slow path faults a page in before it gives up (Linux
/// retries while handle_mm_fault succeeds; a page that keeps disappearing
/// would be a model bug).
const MAX_FAULTINS: u32 = 4;

impl AddressSpace {
    /// Linux `get_mempolicy(&node, NULL, 0, addr, MPOL_F_NODE |
    /// MPOL_F_ADDR)`: the node of the page at `addr` (always 0 here),
    /// faulting it in for read if absent.
    ///
    /// # Errors
    /// [`Errno::Fault`] if no VMA covers `addr` or it is not readable
    /// (Linux: find_vma_intersection fails; GUP's check_vma_flags refuses a
    /// VMA without VM_READ).
    pub fn lookup_node(&self, ctx: &mut ThreadCtx, addr: u64) -> Result<Deferred, Errno> {
        let mut d = Deferred::none();
        let r = self.lookup_node_inner(ctx, addr, &mut d);
        self.finish_op(r, d)
    }

    fn lookup_node_inner(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let va = VirtAddr::new(addr).align_down(self.page);
        // do_get_mempolicy: mmap_read_lock, find_vma_intersection.
        let vmas = self.mmap_read(ctx);
        let Some(vma) = vmas.find(addr) else {
            return Err(Errno::Fault("get_mempolicy of an unmapped address"));
        };
        if !vma.prot.read {
            return Err(Errno::Fault("get_mempolicy of an unreadable mapping"));
        }
        if self.cfg.gup == Gup::Fast {
            // The mmap lock is dropped before lookup_node; get_user_pages_fast
            // walks locklessly.
            drop(vmas);
            if self.gup_fast_ok(va) {
                return Ok(());
            }
            // get_user_pages_unlocked: the slow path under the lock again.
            let vmas = self.mmap_read(ctx);
            let Some(vma) = vmas.find(addr) else {
                return Err(Errno::Fault("get_mempolicy of an unmapped address"));
            };
            return self.get_page_slow(ctx, &vmas, vma, va, d);
        }
        self.get_page_slow(ctx, &vmas, vma, va, d)
    }

    /// Whether gup_fast gets the page at `va` without the slow path: a
    /// present leaf that is not a special mapping (mm/gup.c,
    /// gup_fast_pte_range refuses pte_special, which the zero page is;
    /// gup_fast_pmd_leaf likewise the huge zero page).
    fn gup_fast_ok(&self, va: VirtAddr) -> bool {
        let Ok(t) = self.pt.translate(va) else {
            return false;
        };
        let base = t.pa.get() & !(t.size - 1);
        base != self.zero_pa && Some(base) != self.huge_zero_pa
    }

    /// Linux 3.12 `__get_user_pages` for one page, read, with the mmap lock
    /// held: follow_page_mask under the lock of the entry that maps it, and
    /// faultin_page -> handle_mm_fault when it is absent.
    fn get_page_slow(
        &self,
        ctx: &mut ThreadCtx,
        vmas: &crate::vma::Vmas,
        vma: &Vma,
        va: VirtAddr,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        for _ in 0..MAX_FAULTINS {
            if self.follow_page_mask(ctx, va)? {
                return Ok(());
            }
            // Linux: mm/gup.c, faultin_page (no FOLL_WRITE).
            self.anon_vma_prepare_for_fault(vmas, vma, va.get(), false);
            let (dd, major) = self.handle_mm_fault(ctx, vma, va, false)?;
            if major {
                ctx.counters.major_faults += 1;
            } else {
                ctx.counters.minor_faults += 1;
            }
            d.merge(dd);
        }
        Err(Errno::Fault("get_mempolicy: the page kept disappearing"))
    }

    /// Linux `follow_page_mask` for a read: whether a page is mapped at
    /// `va`, read under the lock of the entry that maps it (a huge PMD:
    /// follow_trans_huge_pmd under pmd_lock; a PTE: follow_page_pte under
    /// pte_offset_map_lock). `false`: no page (no_page_table or pte_none).
    fn follow_page_mask(&self, ctx: &mut ThreadCtx, va: VirtAddr) -> Result<bool, Errno> {
        let Ok(pmd_table) = self.find_pmd_table(va) else {
            return Ok(false);
        };
        loop {
            if let Some(table) = self.pt.next_table(pmd_table, Level::PMD, va) {
                let Some(g) = self.pte_offset_map_lock(ctx, pmd_table, va, table) else {
                    continue; // the PMD entry changed: look again
                };
                let present = self.pt.read_entry(table, Level::PTE, va)?.is_present();
                drop(g);
                return Ok(present);
            }
            return match self.pt.read_entry(pmd_table, Level::PMD, va)? {
                Entry::Leaf { .. } => {
                    let g = self.pmd_lock(ctx, pmd_table);
                    let e = self.pt.read_entry(pmd_table, Level::PMD, va)?;
                    drop(g);
                    match e {
                        Entry::Leaf { .. } => Ok(true),
                        // Split or zapped meanwhile: look again.
                        _ => continue,
                    }
                }
                _ => Ok(false),
            };
        }
    }
}
