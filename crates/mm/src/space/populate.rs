//! Faulting a range in ahead of access (MAP_POPULATE, mlock,
//! MADV_POPULATE_*), as GUP does.

use super::AddressSpace;
use crate::counters::{FaultKind, ThreadCtx};
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::vma::{Vma, Vmas};
use pt::VirtAddr;

/// How [`AddressSpace::populate`] faults pages in, and what it does with a
/// page it cannot fault in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum PopulateMode {
    /// Linux `populate_vma_page_range` (MAP_POPULATE, mlock, mremap and
    /// mprotect of a locked mapping): write faults for private writable
    /// mappings, read faults otherwise; what cannot be faulted in is
    /// skipped (`mm_populate` ignores the error).
    PerVma,
    /// MADV_POPULATE_READ (Linux `faultin_page_range`): read faults; an
    /// error is returned.
    Read,
    /// MADV_POPULATE_WRITE: write faults; an error is returned.
    Write,
}

impl PopulateMode {
    /// Whether a page that cannot be faulted in fails the call
    /// (MADV_POPULATE_*) rather than being skipped.
    fn strict(self) -> bool {
        self != PopulateMode::PerVma
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
            if mode == PopulateMode::PerVma && v.flags.lockonfault {
                continue;
            }
            if !v.prot.accessible() {
                if strict {
                    return Err(Errno::Fault("populate of a PROT_NONE mapping"));
                }
                continue;
            }
            let write = match mode {
                PopulateMode::PerVma => v.prot.write && !v.shared,
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
                    if !write || t.attrs.perms.write || tries >= 3 {
                        va = va.align_down(t.size) + t.size;
                        tries = 0;
                        continue;
                    }
                }
                tries += 1;
                self.anon_vma_prepare_for_fault(vmas, v, va.get(), write);
                ctx.fault_kind = FaultKind::Spurious;
                match self.handle_mm_fault(ctx, v, va, write) {
                    Ok((dd, major)) => {
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
