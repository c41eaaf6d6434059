//! msync (Linux mm/msync.c).

use super::AddressSpace;
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::walk::PteOp;

impl AddressSpace {
    /// Linux `msync(MS_SYNC)`: writes back the dirty pages of shared file
    /// mappings, write-protecting their PTEs in every process of the family
    /// that maps them (`folio_mkclean`, see `rmap`).
    ///
    /// # Errors
    /// [`Errno::Inval`] for a misaligned address; [`Errno::NoMem`] if part
    /// of the range is not mapped.
    pub fn msync(&self, ctx: &mut ThreadCtx, addr: u64, len: u64) -> Result<Deferred, Errno> {
        let mut d = Deferred::none();
        let r = self.msync_inner(ctx, addr, len, &mut d);
        self.finish_op(r, d)
    }

    fn msync_inner(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        if !addr.is_multiple_of(self.page) {
            return Err(Errno::Inval("msync address not page-aligned"));
        }
        let len = self
            .page_align(len)
            .ok_or(Errno::NoMem("length overflows"))?;
        let end = addr
            .checked_add(len)
            .ok_or(Errno::NoMem("range wraps around"))?;
        let vmas = self.mmap_read(ctx);
        let mut covered = 0;
        for v in vmas.overlapping(addr, end) {
            let s = v.start.max(addr);
            let e = v.end.min(end);
            covered += e - s;
            if v.writenotify() {
                let dirty = |v: &crate::vma::Vma| self.dirty_pages(v, s, e);
                let before = dirty(v);
                if let Some(obj) = v.object() {
                    // folio_mkclean reaches every process mapping the pages.
                    let first = v.pgoff_of(s, self.page_shift);
                    let last = v.pgoff_of(e, self.page_shift);
                    self.mkclean_others(ctx, obj, first, last)?;
                }
                self.walk_ptes(ctx, v, s, e, PteOp::Writeback, d)?;
                self.writeback_unmapped(v, s, e);
                // The pages this writeback cleaned are the ones it wrote.
                ctx.counters.writeback_pages += before.saturating_sub(dirty(v));
            }
        }
        if covered < end - addr {
            return Err(Errno::NoMem("msync range has a hole"));
        }
        Ok(())
    }

    /// Writes back the dirty pages of `v`'s object behind `[s, e)` that no
    /// entry maps (the walk cleaned the mapped ones): Linux's
    /// `vfs_fsync_range` writes every dirty page of the range, and the end
    /// of writeback clears the `PG_reclaim` mark reclaim may have left
    /// (`folio_end_writeback`; the bit is `PG_readahead`).
    fn writeback_unmapped(&self, v: &crate::vma::Vma, s: u64, e: u64) {
        let Some(obj) = v.object() else {
            return;
        };
        let (first, last) = (
            v.pgoff_of(s, self.page_shift),
            v.pgoff_of(e, self.page_shift),
        );
        let mut pages = obj.lock();
        for i in first..last {
            if crate::cache::MemObject::is_dirty(&pages, i) {
                crate::cache::MemObject::set_dirty(&mut pages, i, false);
                crate::cache::MemObject::clear_readahead(&mut pages, i);
            }
        }
    }

    /// Dirty page-cache pages of `v`'s object behind `[s, e)`.
    fn dirty_pages(&self, v: &crate::vma::Vma, s: u64, e: u64) -> u64 {
        let Some(obj) = v.object() else {
            return 0;
        };
        let (first, last) = (
            v.pgoff_of(s, self.page_shift),
            v.pgoff_of(e, self.page_shift),
        );
        let pages = obj.lock();
        (first..last)
            .filter(|&i| crate::cache::MemObject::is_dirty(&pages, i))
            .count() as u64
    }
}
