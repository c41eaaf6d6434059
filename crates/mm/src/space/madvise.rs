//! madvise (Linux mm/madvise.c).

use super::populate::PopulateMode;
use super::AddressSpace;
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::vma::Vma;

/// madvise advice.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Advice {
    DontNeed,
    Free,
    HugePage,
    NoHugePage,
    PopulateRead,
    PopulateWrite,
    WillNeed,
    PageOut,
    /// MADV_COLD: deactivates the pages (no counter sees that); a large
    /// folio the range covers only in part is split.
    Cold,
}

impl AddressSpace {
    /// Linux `madvise`.
    ///
    /// # Errors
    /// [`Errno::Inval`] for a misaligned address, DONTNEED, PAGEOUT or COLD on a
    /// locked VMA, FREE on a VMA that is not private anonymous;
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
        match advice {
            Advice::HugePage | Advice::NoHugePage => {
                // Linux: hugepage_madvise, with VMA splits (madvise_update_vma).
                let mut vmas = self.mmap_write(ctx);
                // Linux: madvise_walk_vmas: advise every VMA in the range,
                // then report a hole.
                let pieces: Vec<(u64, u64)> = vmas
                    .overlapping(addr, end)
                    .map(|v| (v.start.max(addr), v.end.min(end)))
                    .collect();
                let mut covered = 0;
                for (s, e) in pieces {
                    covered += e - s;
                    let set = |v: &mut Vma| {
                        v.flags.hugepage = advice == Advice::HugePage;
                        v.flags.nohugepage = advice == Advice::NoHugePage;
                    };
                    self.vma_modify(ctx, &mut vmas, s, e, set, d)?;
                }
                if covered < end - addr {
                    return Err(Errno::NoMem("madvise range has a hole"));
                }
                Ok(())
            }
            _ => {
                let vmas = self.mmap_read(ctx);
                // Under the read lock, as Linux's madvise; tables that
                // PT_RECLAIM unlinked are shot down before it is released.
                let mut advise = || -> Result<(), Errno> {
                    let list: Vec<Vma> = vmas.overlapping(addr, end).cloned().collect();
                    let mut covered = 0;
                    for v in &list {
                        let s = v.start.max(addr);
                        let e = v.end.min(end);
                        covered += e - s;
                        match advice {
                            Advice::DontNeed => {
                                // Linux: madvise_dontneed_free_valid_vma
                                if v.flags.locked {
                                    return Err(Errno::Inval("MADV_DONTNEED on a locked VMA"));
                                }
                                self.zap_range(ctx, v, s, e, true, d)?;
                            }
                            Advice::Free => {
                                if !v.is_anon() || v.flags.locked {
                                    return Err(Errno::Inval(
                                        "MADV_FREE needs private anonymous memory",
                                    ));
                                }
                                self.madvise_free(ctx, v, s, e, d)?;
                            }
                            Advice::PageOut => {
                                // Linux: can_madv_lru_vma
                                if v.flags.locked {
                                    return Err(Errno::Inval("MADV_PAGEOUT on a locked VMA"));
                                }
                                self.pageout(ctx, v, s, e, d)?;
                            }
                            Advice::Cold => {
                                if v.flags.locked {
                                    return Err(Errno::Inval("MADV_COLD on a locked VMA"));
                                }
                                self.cold(ctx, v, s, e, d)?;
                            }
                            Advice::WillNeed => {
                                if let Some(obj) = v.object() {
                                    obj.readahead(
                                        v.pgoff_of(s, self.page_shift),
                                        (e - s) / self.page,
                                    );
                                }
                            }
                            Advice::PopulateRead | Advice::PopulateWrite => {
                                let mode = if advice == Advice::PopulateRead {
                                    PopulateMode::Read
                                } else {
                                    PopulateMode::Write
                                };
                                self.populate(ctx, &vmas, s, e, mode, true, d)?;
                            }
                            Advice::HugePage | Advice::NoHugePage => unreachable!("handled above"),
                        }
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
        }
    }
}
