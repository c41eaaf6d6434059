//! Instruction fetches: the instruction TLB's first level (`l1i`), then its
//! own second level where the processor has one (`l2i`, AMD's L2 ITLB),
//! else the second level shared with data (`l2`, Intel's STLB, Arm's L2
//! TLB), then the walk with the same walk caches as data.
//!
//! A fetch needs what a read needs (present, user): the model's entries
//! carry no execute permission (no NX bit), so the mapping's execute
//! permission is checked by the OS model when a fetch faults (Linux:
//! arch/x86/mm/fault.c, access_error with X86_PF_INSTR). Invalidations
//! (INVLPG, a full flush, a shootdown) reach the instruction levels as the
//! data ones (`CpuState::invalidate_va`, `flush_asid`, `flush_all`).
//!
//! The statistics are the `itlb_*` counters; a fetch is not an access of
//! `accesses` and the data TLB counters, so a trace without fetches
//! counts exactly as before. A walk for a fetch is a walk (`walks`,
//! `walk_refs` and the walk caches' counters include it).

use std::sync::atomic::Ordering;

use pt::PageTable;

use crate::cpu::{hit, Access, Cpu, CpuState, HitLevel};
use crate::shootdown::Asid;
use crate::tlb;
use crate::walk::{needed_flags, Fault};

impl Cpu {
    /// Translates `va` for an instruction fetch from user or supervisor
    /// mode through the instruction TLB (see the module documentation).
    ///
    /// # Errors
    /// The [`Fault`] the hardware would raise (every TLB entry of `va`,
    /// data and instruction, invalidated); the OS model handles it and the
    /// caller fetches again.
    pub fn fetch(&mut self, pt: &PageTable, va: u64, user: bool) -> Result<Access, Fault> {
        if self.slot.pending.load(Ordering::Relaxed) {
            self.drain();
        }
        let need = needed_flags(false, user);
        let asid = self.asid;
        let key = tlb::key(va, asid);
        let st = &mut *self.st;
        if let Some((_, e)) = st.l1i.lookup(va, key) {
            st.stats.itlb_hits += 1;
            if e.flags() & need == need {
                return Ok(hit(e, va, HitLevel::L1, 0));
            }
            return Err(self.refuse(va, user));
        }
        st.stats.itlb_misses += 1;
        let l2 = if st.l2i.is_empty() {
            &mut st.l2
        } else {
            &mut st.l2i
        };
        if let Some((_, e)) = l2.lookup(va, key) {
            st.stats.itlb_l2_hits += 1;
            if e.flags() & need != need {
                return Err(self.refuse(va, user));
            }
            let mut a = hit(e, va, HitLevel::L2, 0);
            if let Some(fs) = st.l1i.fill(va, asid, a.pa, u32::from(e.shift()), e.flags()) {
                a.page_size = 1 << fs;
            }
            return Ok(a);
        }
        st.stats.itlb_l2_misses += 1;
        // The data levels may hold `va` (code read as data): a fault must
        // find and invalidate them (`cached`).
        let walked = if self.st.nested.is_some() {
            self.walk_nested(pt, va, false, user, true)
        } else {
            self.walk(pt, va, false, user, true)
        };
        // A fault invalidated the data levels' entries of `va` too: the
        // recent data hits may not answer for them.
        let (leaf, refs) = walked.inspect_err(|_| self.clear_hits())?;
        let st = &mut *self.st;
        let pa = leaf.pa.get();
        let f1 = st.l1i.fill(va, asid, pa, leaf.size_shift, leaf.flags);
        let l2 = if st.l2i.is_empty() {
            &mut st.l2
        } else {
            &mut st.l2i
        };
        let f2 = l2.fill(va, asid, pa, leaf.size_shift, leaf.flags);
        let shift = f1.or(f2).map_or(leaf.size_shift, u32::from);
        Ok(Access {
            pa,
            hit: HitLevel::Walk,
            walk_refs: refs,
            page_size: 1 << shift,
        })
    }

    /// A TLB entry of `va` that forbids the fetch: a permission fault, which
    /// invalidates every TLB entry of `va` (SDM §4.10.4.1).
    #[cold]
    fn refuse(&mut self, va: u64, user: bool) -> Fault {
        self.clear_hits();
        let asid = self.asid;
        let st = &mut *self.st;
        st.invalidate_va(va, asid);
        st.stats.faults_permission += 1;
        Fault::Permission {
            va,
            write: false,
            user,
        }
    }
}

/// Every TLB level, data and instruction, as the invalidations see them.
impl CpuState {
    /// Removes every TLB entry of `asid`, data and instruction; returns
    /// how many.
    pub(crate) fn flush_asid(&mut self, asid: Asid) -> u64 {
        self.l1.flush_asid(asid)
            + self.l2.flush_asid(asid)
            + self.l1i.flush_asid(asid)
            + self.l2i.flush_asid(asid)
    }

    /// Removes every TLB entry, data and instruction; returns how many.
    pub(crate) fn flush_all(&mut self) -> u64 {
        self.l1.flush_all() + self.l2.flush_all() + self.l1i.flush_all() + self.l2i.flush_all()
    }

    /// Removes the TLB entries of `va` in `asid`, data and instruction
    /// (INVLPG invalidates both: SDM §4.10.4.1); returns how many.
    pub(crate) fn invalidate_va(&mut self, va: u64, asid: Asid) -> u64 {
        self.l1.invalidate_va(va, asid)
            + self.l2.invalidate_va(va, asid)
            + self.invalidate_code_va(va, asid)
    }

    /// Removes the instruction TLB's own entries of `va` in `asid`.
    pub(crate) fn invalidate_code_va(&mut self, va: u64, asid: Asid) -> u64 {
        self.l1i.invalidate_va(va, asid) + self.l2i.invalidate_va(va, asid)
    }
}
