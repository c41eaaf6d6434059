//! mprotect (Linux mm/mprotect.c).

use super::AddressSpace;
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::vma::Prot;

impl AddressSpace {
    /// Linux `mprotect`: changes the protection of `[addr, addr + len)`,
    /// splitting VMAs, and of the entries already mapped.
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
            let starts = vmas.isolate(addr, end, self.page_shift);
            let mut cur = addr;
            for s in starts {
                if s > cur {
                    return Err(Errno::NoMem("mprotect range has a hole"));
                }
                let v = {
                    let v = vmas.get_mut(s).expect("isolated");
                    v.prot = prot;
                    v.clone()
                };
                self.change_protection(ctx, &v, v.start, v.end, d)?;
                cur = v.end;
            }
            if cur < end {
                return Err(Errno::NoMem("mprotect range has a hole"));
            }
            Ok(())
        };
        let r = protect();
        self.flush_unlinked_tables(ctx, d);
        drop(vmas);
        r
    }
}
