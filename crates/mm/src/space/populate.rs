//! Faulting a range in ahead of access (MAP_POPULATE, mlock,
//! MADV_POPULATE_*), as GUP does.

use super::AddressSpace;
use crate::counters::{FaultKind, ThreadCtx};
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::vma::{Vma, Vmas};
use pt::{Attrs, Entry, Level, VirtAddr};

/// How [`AddressSpace::populate`] faults pages in, and what it does with a
/// page it cannot fault in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PopulateMode {
    /// Linux `__mm_populate` (MAP_POPULATE, mlock, mremap of a locked
    /// mapping), which calls `populate_vma_page_range` with the mmap lock
    /// droppable: write faults for private writable mappings, read faults
    /// otherwise; what cannot be faulted in is skipped (`mm_populate`
    /// ignores the error). A fault that must read its page in drops the
    /// lock and returns VM_FAULT_RETRY, which `mm_account_fault` does not
    /// count; `__mm_populate` then calls `populate_vma_page_range` again
    /// without FOLL_TRIED, so the retried fault finds the page read and is
    /// counted minor: populating a cold file counts no major fault
    /// (measured on 6.18: MAP_POPULATE or mlock of a 1 MiB cold file, 0
    /// major; MADV_POPULATE_READ, which retries with FAULT_FLAG_TRIED, 1).
    PerVma,
    /// `populate_vma_page_range` called with the mmap lock held and not
    /// droppable (Linux `mprotect_fixup` making a locked private mapping
    /// writable): a fault that reads its page in waits for it under the
    /// lock and is counted major.
    PerVmaHeld,
    /// MADV_POPULATE_READ (Linux `faultin_page_range`): read faults; an
    /// error is returned. A fault that drops the mmap lock (a read, or a
    /// hit on a read-ahead mark) is retried with FAULT_FLAG_TRIED and
    /// counted major (measured on 6.18: a 4 MiB cold shared file, 3 major
    /// faults: its miss and two marks; user reads count 1).
    Read,
    /// MADV_POPULATE_WRITE: write faults; an error is returned.
    Write,
}

impl PopulateMode {
    /// Whether a page that cannot be faulted in fails the call
    /// (MADV_POPULATE_*) rather than being skipped.
    fn strict(self) -> bool {
        !self.per_vma()
    }

    /// Whether this is `populate_vma_page_range`'s rule (not MADV_POPULATE_*).
    fn per_vma(self) -> bool {
        matches!(self, PopulateMode::PerVma | PopulateMode::PerVmaHeld)
    }
}

impl AddressSpace {
    /// Faults in `[start, end)` as GUP would (Linux `faultin_page_range` /
    /// `populate_vma_page_range`): one fault per unsatisfied page, counted
    /// like any fault; errors are returned or skipped as `mode` says
    /// ([`PopulateMode::strict`]).
    pub(crate) fn populate(
        &self,
        ctx: &mut ThreadCtx,
        vmas: &Vmas,
        start: u64,
        end: u64,
        mode: PopulateMode,
        d: &mut Deferred,
    ) -> Result<(), Errno> {
        let strict = mode.strict();
        let list: Vec<&Vma> = vmas.overlapping(start, end).collect();
        for v in list {
            // Linux: populate_vma_page_range faults nothing into a
            // VM_LOCKONFAULT VMA (its present pages are already mlocked).
            if mode.per_vma() && v.flags.lockonfault {
                continue;
            }
            if !v.prot.accessible() {
                if strict {
                    return Err(Errno::Fault("populate of a PROT_NONE mapping"));
                }
                continue;
            }
            let write = match mode {
                PopulateMode::PerVma | PopulateMode::PerVmaHeld => v.prot.write && !v.shared,
                PopulateMode::Read => false,
                PopulateMode::Write => true,
            };
            if write && !v.prot.write {
                if strict {
                    return Err(Errno::Fault("MADV_POPULATE_WRITE of a read-only mapping"));
                }
                continue;
            }
            let mut va = VirtAddr::new(v.start.max(start));
            let e = VirtAddr::new(v.end.min(end));
            let mut tries = 0;
            while va < e {
                if let Ok(t) = self.pt.translate(va) {
                    if write && t.attrs.perms.write && !t.attrs.dirty {
                        self.gup_touch_dirty(ctx, va, t.level)?;
                    }
                    if !write || t.attrs.perms.write || tries >= 3 {
                        va = va.align_down(t.size) + t.size;
                        tries = 0;
                        continue;
                    }
                }
                tries += 1;
                self.anon_vma_prepare_for_fault(vmas, v, va.get(), write);
                ctx.fault_kind = FaultKind::Spurious;
                ctx.fault_retry = false;
                match self.handle_mm_fault(ctx, v, va, write) {
                    Ok((dd, major)) => {
                        let major = match mode {
                            // The retry is a new call, not FAULT_FLAG_TRIED.
                            PopulateMode::PerVma => false,
                            // No retry: the lock is held over the read.
                            PopulateMode::PerVmaHeld => major,
                            // __get_user_pages_locked retries with
                            // FAULT_FLAG_TRIED, which mm_account_fault
                            // counts major, also after a read-ahead mark's
                            // retry (Lookup::retry).
                            PopulateMode::Read | PopulateMode::Write => major || ctx.fault_retry,
                        };
                        if major {
                            ctx.counters.major_faults += 1;
                        } else {
                            ctx.counters.minor_faults += 1;
                        }
                        // A zero page replaced by a zeroed one: priced
                        // apart from a fresh page populated (counters.rs).
                        if !major && ctx.fault_kind == FaultKind::ZeroCow {
                            ctx.counters.populate_zero_cow += 1;
                        }
                        // A new folio mapped into a locked VMA is mlocked
                        // (the zero page is no folio of its own; a fault
                        // that mapped nothing new mlocks nothing).
                        if v.flags.locked
                            && !matches!(ctx.fault_kind, FaultKind::ZeroRead | FaultKind::Spurious)
                        {
                            ctx.counters.populate_locked += 1;
                        }
                        d.merge(dd);
                    }
                    Err(e) => {
                        if strict {
                            return Err(e);
                        }
                        break;
                    }
                }
            }
        }
        Ok(())
    }
}

impl AddressSpace {
    // Linux: mm/gup.c, follow_page_pte (and touch_pmd) under FOLL_TOUCH |
    // FOLL_WRITE
    /// GUP for writing found the page at `va` present and writable but
    /// clean: Linux marks its folio dirty (a huge entry dirty), as a write
    /// through the entry would. A lazily freed page (MADV_FREE cleaned its
    /// entry) is then kept by reclaim (measured on 6.18: 512 KiB lazily
    /// freed, then mlock, then MADV_PAGEOUT: all 512 KiB stay).
    fn gup_touch_dirty(
        &self,
        ctx: &mut ThreadCtx,
        va: VirtAddr,
        level: Level,
    ) -> Result<(), Errno> {
        let Ok(pmd_table) = self.find_pmd_table(va) else {
            return Ok(());
        };
        let (table, _g) = match level {
            Level::PMD => (pmd_table, self.pmd_lock(ctx, pmd_table)),
            Level::PTE => {
                let Some(table) = self.pt.next_table(pmd_table, Level::PMD, va) else {
                    return Ok(());
                };
                let Some(g) = self.pte_offset_map_lock(ctx, pmd_table, va, table) else {
                    return Ok(());
                };
                (table, g)
            }
            _ => return Ok(()),
        };
        if let Entry::Leaf {
            pa,
            attrs,
            contiguous,
        } = self.pt.read_entry(table, level, va)?
        {
            if attrs.perms.write && !attrs.dirty {
                let attrs = Attrs {
                    dirty: true,
                    accessed: true,
                    ..attrs
                };
                let e = Entry::Leaf {
                    pa,
                    attrs,
                    contiguous,
                };
                self.pt.set_entry(table, level, va, &e);
            }
        }
        Ok(())
    }
}
