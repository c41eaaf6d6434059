//! The environment fingerprint: what a reader of a result needs to know about
//! the machine it came from. Every field is optional: `None` (JSON `null`)
//! means "unavailable on this host", never a guess presented as a fact.

use serde::Serialize;

use crate::cpu::{self, CpuInfo};
use crate::kconfig::KernelConfig;
use crate::meminfo::MemInfo;
use crate::procfs;

const THP_DIR: &str = "/sys/kernel/mm/transparent_hugepage";

/// This host, as far as /proc and /sys tell.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Fingerprint {
    /// `uname -r`.
    pub kernel_release: Option<String>,
    pub cpu_model: Option<String>,
    /// CPUs online.
    pub cpus: Option<usize>,
    /// The CPU lists `la57`. Linux clears the flag when it does not use
    /// 5-level paging (e.g. booted with `no5lvl`), so on x86-64 this also
    /// means "5-level paging in use".
    pub la57: Option<bool>,
    /// CONFIG_PGTABLE_LEVELS of the running kernel, if its config is readable.
    pub kernel_pgtable_levels: Option<u64>,
    /// Whether the kernel is built for 5 levels: from the config when
    /// readable, else `true` only if 57-bit addresses are seen in use, else
    /// unknown (`None`).
    pub kernel_5level: Option<bool>,
    /// Virtual-address bits in use for user space (48 or 57 on x86-64).
    pub va_bits: Option<u8>,
    /// How `va_bits` was found.
    pub va_bits_source: Option<String>,
    /// /sys/kernel/mm/transparent_hugepage/enabled (`always`, `madvise`, `never`).
    pub thp_enabled: Option<String>,
    /// .../transparent_hugepage/defrag.
    pub thp_defrag: Option<String>,
    /// .../transparent_hugepage/shmem_enabled.
    pub thp_shmem_enabled: Option<String>,
    /// Multi-size THP: one entry per `hugepages-<size>kB/enabled`, by size.
    pub mthp: Vec<MthpSetting>,
    /// Base page size in bytes.
    pub page_size: Option<u64>,
    pub hypervisor: Hypervisor,
    pub mem_total_kb: Option<u64>,
    pub mem_available_kb: Option<u64>,
    pub swap_total_kb: Option<u64>,
    /// Where the kernel configuration was read from, if anywhere.
    pub kernel_config: Option<String>,
}

/// One multi-size THP policy.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct MthpSetting {
    pub size_kb: u64,
    /// `always`, `inherit`, `madvise` or `never`.
    pub enabled: String,
}

/// Signs that this machine is a virtual machine.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Hypervisor {
    /// The CPU lists the `hypervisor` flag (x86).
    pub cpu_flag: Option<bool>,
    /// /sys/hypervisor/type (Xen and a few others).
    pub sys_type: Option<String>,
    /// /sys/class/dmi/id/sys_vendor (QEMU, VMware, Microsoft, Amazon ...).
    pub dmi_vendor: Option<String>,
    /// Any of the above says yes; `None` if none of them is readable.
    pub present: Option<bool>,
}

impl Fingerprint {
    /// Reads everything it can; never fails.
    pub fn read() -> Fingerprint {
        let cpuinfo = CpuInfo::read();
        let meminfo = MemInfo::read();
        let config = KernelConfig::read();
        Fingerprint::from_parts(cpuinfo.as_ref(), meminfo.as_ref(), config.as_ref())
    }

    /// Builds the fingerprint from already-read parts (the audit reads them
    /// once and shares them).
    pub(crate) fn from_parts(
        cpuinfo: Option<&CpuInfo>,
        meminfo: Option<&MemInfo>,
        config: Option<&KernelConfig>,
    ) -> Fingerprint {
        let la57 = cpuinfo
            .filter(|c| !c.flags.is_empty())
            .map(|c| c.has_flag("la57"));
        let (va_bits, va_bits_source) = va_bits(la57);
        let kernel_pgtable_levels = config.and_then(|c| c.number("CONFIG_PGTABLE_LEVELS"));
        let kernel_5level = match kernel_pgtable_levels {
            Some(levels) => Some(levels >= 5),
            // Without the config only a positive answer can be inferred: a
            // kernel that hands out 57-bit addresses is built for 5 levels; one
            // that does not may still be (booted with no5lvl, or no la57 CPU).
            None => (va_bits == Some(57)).then_some(true),
        };
        let thp = |file: &str| {
            procfs::read_string(format!("{THP_DIR}/{file}"))
                .and_then(|t| procfs::selected_choice(&t).map(str::to_string))
        };
        Fingerprint {
            kernel_release: procfs::read_line("/proc/sys/kernel/osrelease"),
            cpu_model: cpuinfo.and_then(|c| c.model.clone()),
            cpus: cpu::online_cpus(),
            la57,
            kernel_pgtable_levels,
            kernel_5level,
            va_bits,
            va_bits_source,
            thp_enabled: thp("enabled"),
            thp_defrag: thp("defrag"),
            thp_shmem_enabled: thp("shmem_enabled"),
            mthp: read_mthp(),
            page_size: cpu::page_size(),
            hypervisor: Hypervisor::read(cpuinfo),
            mem_total_kb: meminfo.and_then(MemInfo::mem_total_kb),
            mem_available_kb: meminfo.and_then(MemInfo::mem_available_kb),
            swap_total_kb: meminfo.and_then(MemInfo::swap_total_kb),
            kernel_config: config.map(|c| c.source.clone()),
        }
    }
}

impl Hypervisor {
    fn read(cpuinfo: Option<&CpuInfo>) -> Hypervisor {
        let cpu_flag = cpuinfo
            .filter(|c| !c.flags.is_empty())
            .map(|c| c.has_flag("hypervisor"));
        let sys_type = procfs::read_line("/sys/hypervisor/type");
        let dmi_vendor = procfs::read_line("/sys/class/dmi/id/sys_vendor");
        let vendor_is_vm = dmi_vendor.as_deref().map(dmi_vendor_is_vm);
        let signs = [cpu_flag, sys_type.as_ref().map(|_| true), vendor_is_vm];
        let present = if signs.iter().all(Option::is_none) {
            None
        } else {
            Some(signs.contains(&Some(true)))
        };
        Hypervisor {
            cpu_flag,
            sys_type,
            dmi_vendor,
            present,
        }
    }
}

/// DMI system vendors that name a hypervisor rather than a hardware maker.
fn dmi_vendor_is_vm(vendor: &str) -> bool {
    const VM_VENDORS: &[&str] = &[
        "qemu",
        "vmware",
        "microsoft corporation",
        "xen",
        "innotek",
        "amazon ec2",
        "google",
        "parallels",
        "bochs",
        "openstack",
        "red hat",
    ];
    let v = vendor.to_ascii_lowercase();
    VM_VENDORS.iter().any(|m| v.starts_with(m))
}

/// The top-level THP policy (`always`, `madvise`, `never`), if readable.
pub fn thp_enabled() -> Option<String> {
    procfs::read_string(format!("{THP_DIR}/enabled"))
        .and_then(|t| procfs::selected_choice(&t).map(str::to_string))
}

/// The shmem THP policy (`always`, `within_size`, `advise`, `never`,
/// `deny`, `force`) of shmem_enabled, if readable.
pub fn thp_shmem_enabled() -> Option<String> {
    procfs::read_string(format!("{THP_DIR}/shmem_enabled"))
        .and_then(|t| procfs::selected_choice(&t).map(str::to_string))
}

/// The PMD size's own shmem policy (`always`, `inherit`, `within_size`,
/// `advise`, `never`: hugepages-<hpage_pmd_size>kB/shmem_enabled, Linux
/// 6.11 and later), if readable.
pub fn thp_shmem_pmd_enabled() -> Option<String> {
    let bytes: u64 = procfs::read_string(format!("{THP_DIR}/hpage_pmd_size"))?
        .trim()
        .parse()
        .ok()?;
    procfs::read_string(format!(
        "{THP_DIR}/hugepages-{}kB/shmem_enabled",
        bytes >> 10
    ))
    .and_then(|t| procfs::selected_choice(&t).map(str::to_string))
}

/// The multi-size THP policies, by size (empty before Linux 6.8).
pub fn mthp_settings() -> Vec<MthpSetting> {
    read_mthp()
}

fn read_mthp() -> Vec<MthpSetting> {
    let Ok(dir) = std::fs::read_dir(THP_DIR) else {
        return Vec::new();
    };
    let mut out: Vec<MthpSetting> = dir
        .filter_map(|entry| {
            let name = entry.ok()?.file_name().into_string().ok()?;
            let size_kb = name
                .strip_prefix("hugepages-")?
                .strip_suffix("kB")?
                .parse()
                .ok()?;
            let text = procfs::read_string(format!("{THP_DIR}/{name}/enabled"))?;
            let enabled = procfs::selected_choice(&text)?.to_string();
            Some(MthpSetting { size_kb, enabled })
        })
        .collect();
    out.sort_by_key(|m| m.size_kb);
    out
}

/// Virtual-address bits of user space, and how they were found.
fn va_bits(la57: Option<bool>) -> (Option<u8>, Option<String>) {
    if let Some(high) = probe_high_mapping() {
        if high {
            return (
                Some(57),
                Some("an mmap hint above 2^47 was honoured".into()),
            );
        }
    }
    if cfg!(target_arch = "x86_64") {
        return match la57 {
            Some(true) => (
                Some(57),
                Some("cpu flag la57 (kept only when 5-level paging is on)".into()),
            ),
            Some(false) => (Some(48), Some("no la57 cpu flag".into())),
            None => (
                highest_mapped_bits(),
                Some("highest address in /proc/self/maps".into()),
            ),
        };
    }
    (
        highest_mapped_bits(),
        Some("highest address in /proc/self/maps".into()),
    )
}

/// Asks for a 4 KiB PROT_NONE mapping at 2^50. A kernel running 5-level
/// paging (x86-64) or 52-bit VAs (arm64) honours hints above 47 bits; a 4-level
/// one ignores the hint and places the mapping below 2^47. `None` if mmap fails.
fn probe_high_mapping() -> Option<bool> {
    #[cfg(target_os = "linux")]
    {
        let hint = 1usize << 50;
        // SAFETY: a fresh PROT_NONE mapping without MAP_FIXED cannot alias any
        // existing memory; it is unmapped right away.
        let p = unsafe {
            libc::mmap(
                hint as *mut libc::c_void,
                4096,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return None;
        }
        // SAFETY: `p` is the mapping just created, nobody else refers to it.
        unsafe { libc::munmap(p, 4096) };
        Some(p as usize >= 1 << 47)
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// Bits of the highest user address in /proc/self/maps, rounded up to a
/// width some MMU uses (39, 48, 52, 57). The stack sits near the top of the
/// default window, so this finds the window even when no hint is honoured.
fn highest_mapped_bits() -> Option<u8> {
    let maps = procfs::read_string("/proc/self/maps")?;
    let highest = maps
        .lines()
        .filter(|l| !l.ends_with("[vsyscall]"))
        .filter_map(|l| {
            let range = l.split_whitespace().next()?;
            let end = range.split_once('-')?.1;
            u64::from_str_radix(end, 16).ok()
        })
        .max()?;
    let bits = 64 - highest.checked_sub(1)?.leading_zeros() as u8 + 1;
    [39u8, 48, 52, 57].into_iter().find(|w| *w >= bits)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dmi_vendors() {
        assert!(dmi_vendor_is_vm("QEMU"));
        assert!(dmi_vendor_is_vm("Microsoft Corporation"));
        assert!(!dmi_vendor_is_vm("Dell Inc."));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_host_fingerprint_is_consistent() {
        let f = Fingerprint::read();
        assert!(f.kernel_release.is_some());
        assert!(f.cpus.unwrap() >= 1);
        assert_eq!(f.page_size.unwrap() % 4096, 0);
        let va = f.va_bits.expect("va bits found on Linux");
        assert!([39, 48, 52, 57].contains(&va), "{va}");
        // 57-bit addresses need a 5-level kernel and, on x86, la57.
        if va == 57 {
            assert_ne!(f.kernel_5level, Some(false));
            if cfg!(target_arch = "x86_64") {
                assert_eq!(f.la57, Some(true));
            }
        }
        if let Some(levels) = f.kernel_pgtable_levels {
            assert_eq!(f.kernel_5level, Some(levels >= 5));
        }
        // Every mTHP size is a power of two above the base page.
        for m in &f.mthp {
            assert!(m.size_kb.is_power_of_two() && m.size_kb * 1024 > f.page_size.unwrap());
        }
        serde_json::to_string(&f).unwrap();
    }
}
