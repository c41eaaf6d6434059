//! mprotect (Linux mm/mprotect.c).

use super::populate::PopulateMode;
use super::AddressSpace;
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::vma::{Prot, Vma};
use crate::walk::PteOp;

impl AddressSpace {
    /// Linux `mprotect`: changes the protection of `[addr, addr + len)`,
    /// splitting or merging VMAs (`mprotect_fixup`), and of the entries
    /// already mapped; a locked private VMA made writable is populated.
    ///
    /// # Errors
    /// [`Errno::Inval`] for a misaligned address; [`Errno::NoMem`] if part
    /// of the range is not mapped (the VMAs before the hole are changed, as
    /// Linux does).
    pub fn mprotect(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
        prot: Prot,
    ) -> Result<Deferred, Errno> {
        let mut d = Deferred::none();
        let r = self.mprotect_inner(ctx, addr, len, prot, &mut d);
        self.finish_op(r, d)
    }

    fn mprotect_inner(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
        prot: Prot,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        if !addr.is_multiple_of(self.page) {
            return Err(Errno::Inval("mprotect address not page-aligned"));
        }
        if len == 0 {
            return Ok(());
        }
        let len = self
            .page_align(len)
            .ok_or(Errno::NoMem("length overflows"))?;
        let end = addr
            .checked_add(len)
            .filter(|e| *e <= self.user_limit())
            .ok_or(Errno::NoMem("range past the user address space"))?;
        let mut vmas = self.mmap_write(ctx);
        let mut protect = || -> Result<(), Errno> {
            if vmas.find(addr).is_none() {
                return Err(Errno::NoMem("mprotect of an unmapped address"));
            }
            let mut cur = addr;
            while cur < end {
                let Some(old) = vmas.find(cur).cloned() else {
                    return Err(Errno::NoMem("mprotect range has a hole"));
                };
                let e = old.end.min(end);
                let set = |v: &mut Vma| mprotect_flags(v, prot);
                if let Some(v) = self.vma_modify(ctx, &mut vmas, cur, e, set, d)? {
                    self.walk_ptes(ctx, &v, cur, e, PteOp::Protect, d)?;
                    // Linux: mprotect_fixup: a private VM_LOCKED VMA becoming
                    // writable is populated for write now (populate_vma_page_range),
                    // so its COW faults happen here, not at the first writes.
                    if old.flags.locked && !old.prot.write && !old.shared && prot.write {
                        let _ = self.populate(ctx, &vmas, cur, e, PopulateMode::PerVmaHeld, d);
                    }
                }
                cur = e;
            }
            Ok(())
        };
        let r = protect();
        self.flush_unlinked_tables(ctx, d);
        drop(vmas);
        r
    }
}

// Linux: mm/mprotect.c, mprotect_fixup (the new vm_flags)
/// Gives `v` the protection `prot`, with VM_ACCOUNT as Linux keeps it: a
/// private mapping becoming writable is charged (unless MAP_NORESERVE);
/// one becoming read-only is uncharged only if it is anonymous and has no
/// anon_vma yet (later, pages may exist that the charge covers).
fn mprotect_flags(v: &mut Vma, prot: Prot) {
    if prot.write {
        if !(v.flags.account || v.prot.write || v.shared || v.flags.noreserve) {
            v.flags.account = true;
        }
    } else if v.flags.account && v.is_anon() && v.anon_vma.get().is_none() {
        v.flags.account = false;
    }
    v.prot = prot;
}
