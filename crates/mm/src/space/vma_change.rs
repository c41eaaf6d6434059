//! Changing the VMA list under the mmap lock held for writing: splitting a
//! VMA (and the huge PMDs that straddle the new boundary), and giving part
//! of a VMA new attributes with the merge Linux attempts first. The rules
//! of which VMAs merge are in [`crate::vma`]; mprotect, mlock and
//! MADV_[NO]HUGEPAGE go through [`AddressSpace::vma_modify`], munmap
//! through [`AddressSpace::split_vma`], mmap through
//! `Vmas::insert_merging`.
//!
//! ## Invariant
//! A huge PMD leaf lies wholly inside one VMA: wherever a VMA boundary
//! appears inside the aligned range of a huge PMD, the PMD is split into a
//! PTE table first (the deposited table; VmPTE does not change, RSS does
//! not change, AnonHugePages drops: the folio stays whole, now mapped by
//! PTEs, as in Linux until reclaim splits it).

use super::AddressSpace;
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::vma::{Vma, Vmas};
use pt::VirtAddr;
use pt::{Entry, Level};

impl AddressSpace {
    // Linux: mm/huge_memory.c, split_huge_pmd_if_needed (from vma_adjust_trans_huge)
    /// Splits the huge PMD mapping `addr` in `vma` if `addr` is about to
    /// become a VMA boundary inside it: `addr` is not PMD-aligned and `vma`
    /// covers the aligned range around it (else no huge PMD can be there).
    pub(crate) fn split_huge_pmd_if_needed(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        addr: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let haddr = addr & !(self.pmd_size - 1);
        if haddr == addr || haddr < vma.start || haddr + self.pmd_size > vma.end {
            return Ok(());
        }
        let Ok(pmd_table) = self.find_pmd_table(VirtAddr::new(addr)) else {
            return Ok(());
        };
        if !matches!(
            self.pt
                .read_entry(pmd_table, Level::PMD, VirtAddr::new(haddr))?,
            Entry::Leaf { .. }
        ) {
            return Ok(());
        }
        // Linux: split_huge_pmd_address -> __split_huge_pmd, under the PMD lock.
        let g = self.pmd_lock(ctx, pmd_table);
        let r = self.split_huge_pmd_locked(vma, pmd_table, VirtAddr::new(haddr), d);
        drop(g);
        r
    }

    // Linux: mm/vma.c, __split_vma (vma_adjust_trans_huge, then the split)
    /// Splits the VMA straddling `addr` (if any) at `addr`, splitting the
    /// huge PMD that straddles it first.
    pub(crate) fn split_vma(
        &self,
        ctx: &mut ThreadCtx,
        vmas: &mut Vmas,
        addr: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let Some(v) = vmas.find(addr).filter(|v| v.start != addr).cloned() else {
            return Ok(());
        };
        self.split_huge_pmd_if_needed(ctx, &v, addr, d)?;
        vmas.split_at(addr, self.page_shift);
        Ok(())
    }

    // Linux: mm/vma.c, vma_modify_flags (vma_merge_existing_range, else split_vma)
    /// Gives `[start, end)`, inside one VMA, the attributes `f` sets. If
    /// they are the VMA's already, nothing happens (Linux's fixups return
    /// early: no split, no merge) and `None` is returned; else the range is
    /// merged into a neighbour or split out (see `Vmas::modify`), the huge
    /// PMDs straddling its new ends split first (Linux: both paths reach
    /// `vma_adjust_trans_huge`), and the VMA that now holds the range is
    /// returned.
    pub(crate) fn vma_modify(
        &self,
        ctx: &mut ThreadCtx,
        vmas: &mut Vmas,
        start: u64,
        end: u64,
        f: impl FnOnce(&mut Vma),
        d: &mut Deferred,
    ) -> Result<Option<Vma>, Errno> {
        let mid = vmas
            .find(start)
            .cloned()
            .ok_or_else(|| Errno::Internal(format!("vma_modify: no VMA at {start:#x}")))?;
        let mut new = mid.clone();
        f(&mut new);
        if new.same_vm_flags(&mid) {
            return Ok(None);
        }
        // The range's ends that fall inside the VMA become boundaries
        // whether it merges or splits (a merge takes a side of the range
        // only where it is a side of the VMA).
        if start > mid.start {
            self.split_huge_pmd_if_needed(ctx, &mid, start, d)?;
        }
        if end < mid.end {
            self.split_huge_pmd_if_needed(ctx, &mid, end, d)?;
        }
        let attrs = |v: &mut Vma| {
            v.prot = new.prot;
            v.shared = new.shared;
            v.flags = new.flags;
        };
        let holder = vmas.modify(start, end, self.page_shift, attrs);
        Ok(vmas.starting_at(holder).cloned())
    }
}
