//! mlock and munlock (Linux mm/mlock.c).

use super::populate::PopulateMode;
use super::AddressSpace;
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;

/// What an mlock call leaves on its range.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lock {
    Off,
    /// VM_LOCKED, populated now.
    Populate,
    /// VM_LOCKED | VM_LOCKONFAULT.
    OnFault,
}

impl AddressSpace {
    /// Linux `mlock`: marks the VMAs VM_LOCKED (splitting or merging them) and faults
    /// the range in. The start is rounded down to a page, as Linux does.
    ///
    /// # Errors
    /// [`Errno::NoMem`] if part of the range is not mapped, or is PROT_NONE
    /// (locked, but not faulted in from there on).
    pub fn mlock(&self, ctx: &mut ThreadCtx, addr: u64, len: u64) -> Result<Deferred, Errno> {
        self.set_locked(ctx, addr, len, Lock::Populate)
    }

    /// Linux `mlock2(addr, len, MLOCK_ONFAULT)`: marks the VMAs VM_LOCKED |
    /// VM_LOCKONFAULT and faults nothing in; later faults lock their pages.
    ///
    /// # Errors
    /// [`Errno::NoMem`] if part of the range is not mapped.
    pub fn mlock_onfault(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
    ) -> Result<Deferred, Errno> {
        self.set_locked(ctx, addr, len, Lock::OnFault)
    }

    /// Linux `munlock`.
    ///
    /// # Errors
    /// [`Errno::NoMem`] if part of the range is not mapped.
    pub fn munlock(&self, ctx: &mut ThreadCtx, addr: u64, len: u64) -> Result<Deferred, Errno> {
        self.set_locked(ctx, addr, len, Lock::Off)
    }

    // Linux: mm/mlock.c, do_mlock / apply_vma_lock_flags, then __mm_populate
    fn set_locked(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
        how: Lock,
    ) -> Result<Deferred, Errno> {
        let mut d = Deferred::none();
        let r = self.set_locked_inner(ctx, addr, len, how, &mut d);
        self.finish_op(r, d)
    }

    fn set_locked_inner(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
        how: Lock,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let start = addr & !(self.page - 1);
        let len = self
            .page_align(len + (addr - start))
            .ok_or(Errno::Inval("length overflows"))?;
        if len == 0 {
            return Ok(());
        }
        let end = start
            .checked_add(len)
            .ok_or(Errno::Inval("range wraps around"))?;
        {
            let mut vmas = self.mmap_write(ctx);
            if vmas.find(start).is_none() {
                return Err(Errno::NoMem("mlock of an unmapped address"));
            }
            let mut cur = start;
            while cur < end {
                let Some(v) = vmas.find(cur) else {
                    return Err(Errno::NoMem("mlock range has a hole"));
                };
                let e = v.end.min(end);
                // Linux: mm/mlock.c, mlock_fixup (apply_vma_lock_flags
                // replaces both VM_LOCKED_MASK bits).
                let set = |v: &mut crate::vma::Vma| {
                    v.flags.locked = how != Lock::Off;
                    v.flags.lockonfault = how == Lock::OnFault;
                };
                self.vma_modify(ctx, &mut vmas, cur, e, set, d)?;
                cur = e;
            }
        }
        // Linux: __mm_populate, which skips VM_LOCKONFAULT VMAs
        // (populate_vma_page_range).
        // mlock does not ignore its errors: GUP cannot fault a PROT_NONE
        // VMA in, so the call stops there with ENOMEM (the range stays
        // locked; measured on 6.18).
        if how == Lock::Populate {
            let vmas = self.mmap_read(ctx);
            let none = vmas
                .overlapping(start, end)
                .find(|v| !v.prot.accessible())
                .map(|v| v.start.max(start));
            let _ = self.populate(
                ctx,
                &vmas,
                start,
                none.unwrap_or(end),
                PopulateMode::PerVma,
                d,
            );
            if none.is_some() {
                return Err(Errno::NoMem("mlock cannot fault in a PROT_NONE range"));
            }
        }
        Ok(())
    }
}
