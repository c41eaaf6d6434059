//! Broadcast TLB invalidation: how a shootdown reaches the other CPUs'
//! TLBs when the machine has an instruction for it, and Linux's rule for
//! when it is used instead of IPIs.
//!
//! - AMD's INVLPGB (Zen 3 onwards; Linux 6.15, arch/x86/mm/tlb.c,
//!   `broadcast_tlb_flush`): the initiator issues one INVLPGB per run of
//!   up to `invlpgb_count_max` pages of a global ASID (CPUID
//!   Fn8000_0008 EDX[15:0] + 1; 8 on Milan), or one for the whole ASID past
//!   the flush ceiling, then waits for every CPU to have done them with one
//!   TLBSYNC. No CPU is interrupted.
//! - Intel's remote action request (RAR; Rik van Riel's series of 2025, not
//!   merged as of Linux 6.18): the initiator sends one request to the CPUs
//!   of the address space's mask; each CPU's microcode invalidates without
//!   an interrupt and acknowledges, and the initiator waits for them.
//!
//! Both need a global ASID (the same PCID on every CPU), which Linux hands
//! out only to address spaces seen active on more than three CPUs at once
//! (`consider_global_asid`: `mm_active_cpus_exceeds(mm, 3)`, checked after
//! an IPI flush); until then the space's flushes are IPIs. Linux checks
//! once every 32 jiffies or so (`(current->pid & 0x1f) == (jiffies &
//! 0x1f)`); the model assigns the global ASID at the first IPI flush that
//! finds the space on four or more CPUs, so it switches a few flushes
//! earlier than Linux would. A global ASID is kept for the space's life.
//!
//! The invalidations themselves are the IPI path's: the same message is
//! posted to every CPU where the space is active and applied there at its
//! next access (the hardware's at-once invalidation is indistinguishable to
//! a CPU that does not access in between). Only what is sent and counted
//! differs: no IPI, the instructions or requests instead.

use serde::{Deserialize, Serialize};

/// How a shootdown reaches other CPUs (the `tlb_flush` option).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TlbFlush {
    /// Inter-processor interrupts (every x86 machine; Linux's only way
    /// before 6.15).
    #[default]
    Ipi,
    /// AMD INVLPGB and TLBSYNC, for spaces with a global ASID.
    Invlpgb,
    /// Intel remote action request, for spaces with a global ASID.
    Rar,
}

/// Pages one INVLPGB invalidates at most on AMD Milan (CPUID Fn8000_0008
/// EDX[15:0] = 7, plus one; Linux's `invlpgb_count_max`).
pub const MILAN_INVLPGB_COUNT_MAX: u32 = 8;

/// Linux: arch/x86/mm/tlb.c, `consider_global_asid`: a space is given a
/// global ASID when it is active on more than this many CPUs.
pub const GLOBAL_ASID_CPUS_EXCEED: usize = 3;

/// The broadcast part of an MMU configuration: which mechanism, and the
/// INVLPGB range limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Broadcast {
    pub kind: TlbFlush,
    /// Pages one INVLPGB covers at most (`invlpgb_count_max`).
    pub count_max: u32,
}

impl Default for Broadcast {
    fn default() -> Broadcast {
        Broadcast {
            kind: TlbFlush::Ipi,
            count_max: MILAN_INVLPGB_COUNT_MAX,
        }
    }
}

impl Broadcast {
    /// Linux: `consider_global_asid`, after an IPI flush: whether a space
    /// active on `active` CPUs gets a global ASID (never under IPIs).
    pub fn wants_global_asid(&self, active: usize) -> bool {
        self.kind != TlbFlush::Ipi && active > GLOBAL_ASID_CPUS_EXCEED
    }

    /// INVLPGB instructions (or RAR requests) one broadcast flush issues:
    /// one for a whole-ASID flush; else one per `count_max` pages of the
    /// span (Linux: `broadcast_tlb_flush`, `nr = clamp(nr, 1,
    /// invlpgb_count_max)` per step; the model's stride is the base page).
    /// A RAR request carries the whole range: one.
    pub fn instructions(&self, full: bool, pages: u64) -> u32 {
        match self.kind {
            TlbFlush::Ipi => 0,
            TlbFlush::Rar => 1,
            TlbFlush::Invlpgb if full => 1,
            TlbFlush::Invlpgb => {
                let n = pages.max(1).div_ceil(u64::from(self.count_max.max(1)));
                u32::try_from(n).unwrap_or(u32::MAX)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_global_asid_needs_more_than_three_cpus_and_a_broadcast_machine() {
        let inv = Broadcast {
            kind: TlbFlush::Invlpgb,
            ..Broadcast::default()
        };
        assert!(!inv.wants_global_asid(3));
        assert!(inv.wants_global_asid(4));
        assert!(!Broadcast::default().wants_global_asid(64));
    }

    #[test]
    fn invlpgb_covers_its_count_max_pages_per_instruction() {
        let inv = Broadcast {
            kind: TlbFlush::Invlpgb,
            count_max: 8,
        };
        assert_eq!(inv.instructions(false, 1), 1);
        assert_eq!(inv.instructions(false, 8), 1);
        assert_eq!(inv.instructions(false, 9), 2);
        assert_eq!(inv.instructions(false, 33), 5);
        assert_eq!(inv.instructions(true, 100_000), 1);
        let rar = Broadcast {
            kind: TlbFlush::Rar,
            count_max: 8,
        };
        assert_eq!(rar.instructions(false, 33), 1);
    }
}
