//! KVM's paravirtual remote TLB flush: whether this guest kernel uses it.
//!
//! A guest that runs on KVM with `KVM_FEATURE_PV_TLB_FLUSH` and steal time
//! (and no `KVM_HINTS_REALTIME`) flushes other vCPUs through
//! `kvm_flush_tlb_multi`: a vCPU the host has preempted is not interrupted;
//! its flush is recorded in its steal-time area and done by the host before
//! it runs again. So a munmap counts fewer shootdown IPIs than it has
//! target CPUs (dmesg says "KVM setup pv remote TLB flush").
//!
//! Read from CPUID (leaves 0x4000_0000 and 0x4000_0001), which needs no
//! permission; `None` where there is no CPUID (not x86-64).

use serde::Serialize;

/// `KVM_FEATURE_STEAL_TIME` (CPUID 0x4000_0001 EAX bit).
const KVM_FEATURE_STEAL_TIME: u32 = 5;
/// `KVM_FEATURE_PV_TLB_FLUSH`.
const KVM_FEATURE_PV_TLB_FLUSH: u32 = 9;
/// `KVM_HINTS_REALTIME` (CPUID 0x4000_0001 EDX bit).
const KVM_HINTS_REALTIME: u32 = 0;

/// The KVM paravirtual features that decide remote TLB flushes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct PvTlbFlush {
    /// CPUID says "KVMKVMKVM".
    pub kvm: bool,
    pub pv_tlb_flush: bool,
    pub steal_time: bool,
    /// The host promises vCPUs are never preempted (then no pv flush).
    pub realtime_hint: bool,
    /// Linux uses `kvm_flush_tlb_multi` (its `pv_tlb_flush_supported`, with
    /// more than one possible CPU).
    pub in_use: bool,
}

impl PvTlbFlush {
    /// From the CPUID words: the hypervisor bit (leaf 1 ECX bit 31), the
    /// signature of leaf 0x4000_0000 (EBX, ECX, EDX), and leaf
    /// 0x4000_0001's EAX (features) and EDX (hints).
    // Linux: arch/x86/kernel/kvm.c, pv_tlb_flush_supported
    pub fn from_cpuid(
        hypervisor: bool,
        signature: [u32; 3],
        features: u32,
        hints: u32,
        possible_cpus: usize,
    ) -> PvTlbFlush {
        let mut sig = [0u8; 12];
        for (i, w) in signature.iter().enumerate() {
            sig[i * 4..i * 4 + 4].copy_from_slice(&w.to_le_bytes());
        }
        let kvm = hypervisor && &sig[..9] == b"KVMKVMKVM";
        let bit = |w: u32, b: u32| kvm && w & (1 << b) != 0;
        let pv_tlb_flush = bit(features, KVM_FEATURE_PV_TLB_FLUSH);
        let steal_time = bit(features, KVM_FEATURE_STEAL_TIME);
        let realtime_hint = bit(hints, KVM_HINTS_REALTIME);
        PvTlbFlush {
            kvm,
            pv_tlb_flush,
            steal_time,
            realtime_hint,
            in_use: pv_tlb_flush && steal_time && !realtime_hint && possible_cpus > 1,
        }
    }

    /// This machine's, or `None` without CPUID.
    pub fn read() -> Option<PvTlbFlush> {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::__cpuid;
            let hypervisor = __cpuid(1).ecx & (1 << 31) != 0;
            let s = __cpuid(0x4000_0000);
            let (features, hints) = if hypervisor && s.eax >= 0x4000_0001 {
                let f = __cpuid(0x4000_0001);
                (f.eax, f.edx)
            } else {
                (0, 0)
            };
            let sig = [s.ebx, s.ecx, s.edx];
            let cpus = crate::cpu::online_cpus().unwrap_or(1);
            Some(PvTlbFlush::from_cpuid(
                hypervisor, sig, features, hints, cpus,
            ))
        }
        #[cfg(not(target_arch = "x86_64"))]
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// "KVMKVMKVM\0\0\0" as CPUID returns it in EBX, ECX, EDX.
    const KVM: [u32; 3] = [0x4b4d_564b, 0x564b_4d56, 0x0000_004d];

    #[test]
    fn kvm_with_pv_flush_and_steal_time_uses_it() {
        // This host's leaf 0x4000_0001 EAX (read with cpuid): 0x1007efb.
        let p = PvTlbFlush::from_cpuid(true, KVM, 0x0100_7efb, 0, 2);
        assert!(p.kvm && p.pv_tlb_flush && p.steal_time && p.in_use);
        // One CPU, a realtime hint, or no steal time: not used.
        assert!(!PvTlbFlush::from_cpuid(true, KVM, 0x0100_7efb, 0, 1).in_use);
        assert!(!PvTlbFlush::from_cpuid(true, KVM, 0x0100_7efb, 1, 2).in_use);
        assert!(!PvTlbFlush::from_cpuid(true, KVM, 0x0100_7efb & !(1 << 5), 0, 2).in_use);
    }

    #[test]
    fn another_hypervisor_or_bare_metal_does_not() {
        let hyperv = [0x7263_694d, 0x666f_736f, 0x7648_2074]; // "Microsoft Hv"
        assert!(!PvTlbFlush::from_cpuid(true, hyperv, !0, 0, 8).kvm);
        // Bare metal: leaf 0x4000_0000 is not the hypervisor's.
        assert_eq!(
            PvTlbFlush::from_cpuid(false, KVM, !0, 0, 8),
            PvTlbFlush::default()
        );
    }
}
