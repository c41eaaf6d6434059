//! madvise (Linux mm/madvise.c).

use super::populate::PopulateMode;
use super::{AddressSpace, PageAdvice};
use crate::cache::{MemObject, ObjectKind};
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::vma::{Vma, VmaFlags, Vmas};
use crate::walk::PteOp;
use advice::Needs;

/// The madvise kinds, one vocabulary with the workload format and the kernel
/// backend (crates/advice): a kind's Linux number and name live there, what
/// the model does with it lives here.
pub use advice::Advice;

impl AddressSpace {
    /// Linux `madvise`.
    ///
    /// # Errors
    /// [`Errno::Inval`] for a misaligned address, an advice Linux refuses on
    /// a locked VMA there ([`Advice::refuses_locked`]), or one for private
    /// anonymous memory on another VMA ([`Advice::needs`]);
    /// [`Errno::NoMem`] if part of the range is not mapped (the rest is
    /// advised); [`Errno::Fault`] when POPULATE_* meets a range it cannot
    /// fault in (PROT_NONE, or writing a read-only mapping).
    pub fn madvise(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
        advice: Advice,
    ) -> Result<Deferred, Errno> {
        let mut d = Deferred::none();
        let r = self.madvise_inner(ctx, addr, len, advice, &mut d);
        self.finish_op(r, d)
    }

    fn madvise_inner(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        len: u64,
        advice: Advice,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        if !addr.is_multiple_of(self.page) {
            return Err(Errno::Inval("madvise address not page-aligned"));
        }
        if len == 0 {
            return Ok(());
        }
        let len = self
            .page_align(len)
            .ok_or(Errno::Inval("length overflows"))?;
        let end = addr
            .checked_add(len)
            .ok_or(Errno::Inval("range wraps around"))?;
        if advice == Advice::Collapse {
            // Linux: mm/khugepaged.c, madvise_collapse (its own walk over
            // the VMAs, under the mmap write lock: see khugepaged.rs).
            return self
                .collapse_range(ctx, addr, end - addr, false, d)
                .map(|_| ());
        }
        if advice.sets_vma_flags() {
            self.madvise_vma_flags(ctx, addr, end, advice, d)
        } else {
            self.madvise_pages(ctx, addr, end, advice, d)
        }
    }

    /// The advice that changes VMA flags, under the mmap write lock, with
    /// VMA splits (Linux: madvise_update_vma).
    fn madvise_vma_flags(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        end: u64,
        advice: Advice,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let mut vmas = self.mmap_write(ctx);
        // Linux: madvise_walk_vmas: advise every VMA in the range, then
        // report a hole.
        let pieces: Vec<(u64, u64, bool)> = vmas
            .overlapping(addr, end)
            .map(|v| (v.start.max(addr), v.end.min(end), v.is_anon()))
            .collect();
        let mut covered = 0;
        for (s, e, anon) in pieces {
            covered += e - s;
            // Linux: madvise_vma_behavior (MADV_WIPEONFORK on a file or
            // shared VMA is EINVAL), after the VMAs before it were advised.
            // (Only WIPEONFORK of the flag-setting advice has a need.)
            if advice.needs() == Needs::PrivateAnon && !anon {
                return Err(Errno::Inval(
                    "madvise advice needs private anonymous memory",
                ));
            }
            let set = |v: &mut Vma| set_flags(&mut v.flags, advice);
            self.vma_modify(ctx, &mut vmas, s, e, set, d)?;
        }
        if covered < end - addr {
            return Err(Errno::NoMem("madvise range has a hole"));
        }
        Ok(())
    }

    /// The advice that acts on pages, under the mmap read lock, as Linux's
    /// madvise; tables that PT_RECLAIM unlinked are shot down before it is
    /// released.
    fn madvise_pages(
        &self,
        ctx: &mut ThreadCtx,
        addr: u64,
        end: u64,
        advice: Advice,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let vmas = self.mmap_read(ctx);
        let mut advise = || -> Result<(), Errno> {
            let list: Vec<Vma> = vmas.overlapping(addr, end).cloned().collect();
            let mut covered = 0;
            for v in &list {
                let s = v.start.max(addr);
                let e = v.end.min(end);
                covered += e - s;
                self.advise_vma(ctx, &vmas, v, s..e, advice, d)?;
            }
            if covered < end - addr {
                return Err(Errno::NoMem("madvise range has a hole"));
            }
            Ok(())
        };
        let r = advise();
        self.flush_unlinked_tables(ctx, d);
        drop(vmas);
        r
    }

    /// One VMA's part `span` of a page advice (Linux: madvise_vma_behavior).
    fn advise_vma(
        &self,
        ctx: &mut ThreadCtx,
        vmas: &Vmas,
        v: &Vma,
        span: std::ops::Range<u64>,
        advice: Advice,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let (s, e) = (span.start, span.end);
        // Linux: madvise_dontneed_free_valid_vma, can_madv_lru_vma
        if advice.refuses_locked() && v.flags.locked {
            return Err(Errno::Inval("madvise advice refused on a locked VMA"));
        }
        match advice.needs() {
            Needs::Any => {}
            Needs::PrivateAnon | Needs::ModelledAnon if v.is_anon() => {}
            Needs::AnonShmem if v.is_anon() || v.is_shmem() => {}
            Needs::PrivateAnon | Needs::ModelledAnon | Needs::AnonShmem => {
                return Err(Errno::Inval(
                    "madvise advice needs private anonymous memory",
                ))
            }
            Needs::SharedObject if v.shared && v.object().is_some() => {}
            // Linux answers EACCES for a private file mapping.
            Needs::SharedObject => {
                return Err(Errno::Inval(
                    "madvise advice needs a shared file or shmem mapping",
                ))
            }
        }
        match advice {
            Advice::DontNeed => self.zap_range(ctx, v, s, e, true, d),
            Advice::Free => self.walk_ptes(ctx, v, s, e, PteOp::Free, d),
            Advice::PageOut => {
                self.object_folios_reclaim(ctx, vmas, v, s..e, PageAdvice::PageOut, d)?;
                self.pageout(ctx, v, s, e, d)
            }
            Advice::Cold => {
                self.object_folios_reclaim(ctx, vmas, v, s..e, PageAdvice::Cold, d)?;
                self.walk_ptes(ctx, v, s, e, PteOp::Cold, d)
            }
            Advice::Remove => self.remove(ctx, v, s, e, d),
            Advice::WillNeed => {
                if let Some(obj) = v.object() {
                    obj.readahead(v.pgoff_of(s, self.page_shift), (e - s) / self.page);
                }
                Ok(())
            }
            Advice::PopulateRead => self.populate(ctx, vmas, s, e, PopulateMode::Read, d),
            Advice::PopulateWrite => self.populate(ctx, vmas, s, e, PopulateMode::Write, d),
            Advice::HugePage
            | Advice::NoHugePage
            | Advice::DontFork
            | Advice::DoFork
            | Advice::WipeOnFork
            | Advice::KeepOnFork => unreachable!("sets VMA flags: madvise_vma_flags"),
            Advice::Collapse => unreachable!("its own walk: collapse_range"),
        }
    }
}

impl AddressSpace {
    // Linux: mm/madvise.c, madvise_remove -> vfs_fallocate(FALLOC_FL_PUNCH_HOLE
    // | FALLOC_FL_KEEP_SIZE) -> shmem_fallocate or the filesystem's hole
    // punch: unmap_mapping_range over the hole in every process, then
    // truncate_inode_pages_range.
    /// MADV_REMOVE of `s..e` of the shared object mapping `v`: the object's
    /// pages there are unmapped here and in every process of the family that
    /// maps them, then dropped from the object whether dirty or not. The
    /// next access of a file page reads it in again (a major fault), of a
    /// shmem page allocates a zeroed one. A large shmem folio the hole cuts
    /// is split (`MemObject::punch_hole`); a page of a PMD-sized folio of a
    /// regular file stays cached (the model does not split those).
    fn remove(
        &self,
        ctx: &mut ThreadCtx,
        v: &Vma,
        s: u64,
        e: u64,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let Some(obj) = v.object() else {
            return Err(Errno::Inval("MADV_REMOVE needs a file or shmem mapping"));
        };
        self.zap_range(ctx, v, s, e, false, d)?;
        let (first, last) = (
            v.pgoff_of(s, self.page_shift),
            v.pgoff_of(e, self.page_shift),
        );
        self.zap_object_others(ctx, obj, first, last)?;
        let mut pages = obj.lock();
        if obj.kind == ObjectKind::Shmem {
            d.frames.extend(obj.punch_hole(&mut pages, first, last)?);
            return Ok(());
        }
        for idx in first..last {
            if let Some(f) = MemObject::evict(&mut pages, idx) {
                d.frames.push((f, self.page));
            }
        }
        Ok(())
    }
}

/// The VMA flags an advice that [`Advice::sets_vma_flags`] leaves (Linux:
/// madvise_vma_behavior's flag cases, hugepage_madvise).
fn set_flags(f: &mut VmaFlags, advice: Advice) {
    match advice {
        Advice::HugePage => {
            f.hugepage = true;
            f.nohugepage = false;
        }
        Advice::NoHugePage => {
            f.hugepage = false;
            f.nohugepage = true;
        }
        Advice::DontFork => f.dontcopy = true,
        Advice::DoFork => f.dontcopy = false,
        Advice::WipeOnFork => f.wipeonfork = true,
        Advice::KeepOnFork => f.wipeonfork = false,
        _ => unreachable!("acts on pages: madvise_pages"),
    }
}
