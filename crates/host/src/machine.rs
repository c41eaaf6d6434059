//! The machine a cost file describes: the part of the fingerprint that
//! changes what a modeled event costs (the CPU, the kernel, the hypervisor,
//! the THP settings and the page size), and a short key naming it.
//!
//! The key names a host's cost file in the per-user cache and is written in
//! the file (`host.fingerprint`), so a file can be told apart from this
//! host's even when copied elsewhere. Memory size, CPU count and
//! `va_bits` are left out: they do not change a fault's or a walk's price
//! (the CPU count is in the file's host table for the reader).

use crate::fingerprint::Fingerprint;
use serde::Serialize;

/// What identifies a host's costs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MachineKey {
    /// The CPU's model name (/proc/cpuinfo), `unknown` when unreadable.
    pub cpu_model: String,
    /// `uname -r`.
    pub kernel_release: String,
    /// [`hypervisor_name`].
    pub hypervisor: String,
    /// The THP policies: `enabled`, `defrag`, `shmem_enabled` and every
    /// multi-size policy, as one line (`enabled=madvise defrag=madvise
    /// shmem=never 64K=never ...`).
    pub thp: String,
    /// The base page size in bytes (0 when unreadable).
    pub page_size: u64,
}

impl MachineKey {
    /// This host's key.
    pub fn this_host() -> MachineKey {
        MachineKey::of(&Fingerprint::read())
    }

    /// The key of the host `fp` describes.
    pub fn of(fp: &Fingerprint) -> MachineKey {
        let or_unknown = |s: &Option<String>| s.clone().unwrap_or_else(|| "unknown".into());
        let mut thp = format!(
            "enabled={} defrag={} shmem={}",
            or_unknown(&fp.thp_enabled),
            or_unknown(&fp.thp_defrag),
            or_unknown(&fp.thp_shmem_enabled)
        );
        for m in &fp.mthp {
            thp.push_str(&format!(" {}K={}", m.size_kb, m.enabled));
        }
        MachineKey {
            cpu_model: or_unknown(&fp.cpu_model),
            kernel_release: or_unknown(&fp.kernel_release),
            hypervisor: hypervisor_name(fp),
            thp,
            page_size: fp.page_size.unwrap_or(0),
        }
    }

    /// The key as a file name: the CPU model's words (lower case, at most
    /// 32 characters), then 16 hex digits of a hash over every field, so
    /// two hosts that differ in any field have different keys
    /// (`amd-epyc-7b13-processor-3f09a1c2d4e5b6a7`).
    pub fn id(&self) -> String {
        let canonical = format!(
            "cpu={}\nkernel={}\nhypervisor={}\nthp={}\npage={}",
            self.cpu_model, self.kernel_release, self.hypervisor, self.thp, self.page_size
        );
        let mut slug = String::new();
        for ch in self.cpu_model.chars() {
            if ch.is_ascii_alphanumeric() {
                slug.push(ch.to_ascii_lowercase());
            } else if !slug.is_empty() && !slug.ends_with('-') {
                slug.push('-');
            }
            if slug.len() >= 32 {
                break;
            }
        }
        let slug = slug.trim_end_matches('-');
        let slug = if slug.is_empty() { "host" } else { slug };
        format!("{slug}-{:016x}", fnv1a(canonical.as_bytes()))
    }

    /// The key in a few words, for messages: `AMD EPYC 7B13, Linux
    /// 6.18.44, KVM, THP enabled=madvise ..., 4096-byte pages`.
    pub fn describe(&self) -> String {
        format!(
            "{}, Linux {}, hypervisor {}, THP {}, {}-byte pages",
            self.cpu_model, self.kernel_release, self.hypervisor, self.thp, self.page_size
        )
    }
}

/// 64-bit FNV-1a: a fixed function (unlike std's hasher, the same on every
/// build), good enough to tell configurations apart in a file name.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in bytes {
        h ^= u64::from(*b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// The hypervisor's name: CPUID's hypervisor vendor leaf on x86-64 (KVM
/// says "KVMKVMKVM"), else /sys/hypervisor or the DMI vendor, "none" when
/// every sign says bare metal, "unknown" when none is readable.
pub fn hypervisor_name(fp: &Fingerprint) -> String {
    if let Some(v) = cpuid_hypervisor() {
        return v;
    }
    let h = &fp.hypervisor;
    if let Some(t) = h.sys_type.clone().or_else(|| h.dmi_vendor.clone()) {
        if h.present == Some(true) {
            return t;
        }
    }
    match h.present {
        Some(true) => "present (vendor unknown)".into(),
        Some(false) => "none".into(),
        None => "unknown".into(),
    }
}

#[cfg(target_arch = "x86_64")]
fn cpuid_hypervisor() -> Option<String> {
    use std::arch::x86_64::__cpuid;
    // Leaf 1, ECX bit 31: running under a hypervisor.
    if __cpuid(1).ecx & (1 << 31) == 0 {
        return None;
    }
    let r = __cpuid(0x4000_0000);
    let bytes: Vec<u8> = [r.ebx, r.ecx, r.edx]
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .filter(|&b| b != 0)
        .collect();
    let vendor = String::from_utf8_lossy(&bytes).trim().to_string();
    Some(match vendor.as_str() {
        "KVMKVMKVM" => "KVM".to_string(),
        "" => "present (vendor unknown)".to_string(),
        other => other.to_string(),
    })
}

#[cfg(not(target_arch = "x86_64"))]
fn cpuid_hypervisor() -> Option<String> {
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key() -> MachineKey {
        MachineKey {
            cpu_model: "AMD EPYC 7B13 64-Core Processor".into(),
            kernel_release: "6.18.44".into(),
            hypervisor: "KVM".into(),
            thp: "enabled=madvise defrag=madvise shmem=never".into(),
            page_size: 4096,
        }
    }

    #[test]
    fn the_id_names_the_cpu_and_changes_with_every_field() {
        let k = key();
        let id = k.id();
        assert!(id.starts_with("amd-epyc-7b13-64-core-processor-"), "{id}");
        assert_eq!(id.len(), "amd-epyc-7b13-64-core-processor-".len() + 16);
        assert_eq!(id, key().id(), "the same host, the same key");
        let variants = [
            MachineKey {
                kernel_release: "6.18.45".into(),
                ..key()
            },
            MachineKey {
                hypervisor: "none".into(),
                ..key()
            },
            MachineKey {
                thp: "enabled=always defrag=madvise shmem=never".into(),
                ..key()
            },
            MachineKey {
                page_size: 16384,
                ..key()
            },
            MachineKey {
                cpu_model: "Intel(R) Xeon(R) Processor".into(),
                ..key()
            },
        ];
        for v in variants {
            assert_ne!(v.id(), id, "{v:?}");
        }
    }

    #[test]
    fn an_unreadable_cpu_still_gives_a_file_name() {
        let k = MachineKey {
            cpu_model: "(((".into(),
            ..key()
        };
        assert!(k.id().starts_with("host-"), "{}", k.id());
        assert!(k
            .id()
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '-'));
    }

    #[test]
    fn this_hosts_key_is_stable_within_a_run() {
        assert_eq!(MachineKey::this_host().id(), MachineKey::this_host().id());
    }
}
