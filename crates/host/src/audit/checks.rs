//! One function per audit item. Each reads what it needs, picks a status, and
//! says why and how to fix in a sentence a reader can act on.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{AuditOptions, Item, Status};
use crate::fingerprint::Fingerprint;
use crate::kconfig::KernelConfig;
use crate::meminfo::MemInfo;
use crate::procfs;

/// What every check may look at, read once by the audit.
pub(super) struct Context<'a> {
    pub host: &'a Fingerprint,
    pub meminfo: Option<&'a MemInfo>,
    pub config: Option<&'a KernelConfig>,
    pub opts: &'a AuditOptions,
}

const TIB_KB: u64 = 1 << 30;

pub(super) fn la57(ctx: &Context) -> Item {
    let why_base = "5-level paging adds a fifth table level (P4D) to every page walk and fault: \
                    the seed measured handle_mm_fault at 640 ns vs 630 ns and a lower ebizzy \
                    throughput from 4 threads up, for address space only machines with over \
                    64 TiB of RAM need.";
    let Some(la57) = ctx.host.la57 else {
        let why = if cfg!(target_arch = "x86_64") {
            "The CPU flags of /proc/cpuinfo are unreadable, so whether 5-level paging is on is unknown."
        } else {
            "la57 is an x86-64 flag; this is another architecture (see va_bits in the host fingerprint)."
        };
        return Item::unavailable("la57", "/proc/cpuinfo flags", why);
    };
    let value = json!({
        "la57": la57,
        "va_bits": ctx.host.va_bits,
        "kernel_pgtable_levels": ctx.host.kernel_pgtable_levels,
    });
    let ram_kb = ctx.meminfo.and_then(MemInfo::mem_total_kb);
    if la57 {
        let small = ram_kb.is_none_or(|kb| kb < 64 * TIB_KB);
        let status = if small { Status::Warn } else { Status::Info };
        Item::new(
            "la57",
            value,
            status,
            format!("5-level paging is on. {why_base}"),
            if small {
                "RAM is below 64 TiB: boot with `no5lvl` on the kernel command line (the seed's \
                 recommendation) to walk 4 levels; check with `grep -c la57 /proc/cpuinfo`."
            } else {
                "This machine has 64 TiB of RAM or more: 5-level paging is needed to address it; keep it."
            },
        )
    } else {
        let built5 = ctx.host.kernel_5level == Some(true);
        Item::new(
            "la57",
            value,
            Status::Ok,
            if built5 {
                format!(
                    "The kernel is built for 5 levels but runs 4 (no la57 CPU, or `no5lvl`): the \
                     P4D level is folded at run time. {why_base}"
                )
            } else {
                format!("Page walks use 4 levels (48-bit addresses). {why_base}")
            },
            "Nothing to do.",
        )
    }
}

pub(super) fn thp(ctx: &Context) -> Item {
    let why = "With THP `always` every large enough anonymous region may get 2 MiB pages at fault \
               time, with direct compaction and khugepaged collapsing pages in the background: \
               fewer TLB misses, but latency spikes and page-table changes (TLB shootdowns) the \
               program did not ask for.";
    match ctx.host.thp_enabled.as_deref() {
        None => Item::unavailable("thp", "/sys/kernel/mm/transparent_hugepage/enabled", why),
        Some(v @ "always") => Item::new(
            "thp",
            json!(v),
            Status::Warn,
            why,
            "Set `madvise` (echo madvise > /sys/kernel/mm/transparent_hugepage/enabled, or boot \
             with transparent_hugepage=madvise) and ask for huge pages with MADV_HUGEPAGE where \
             they help; `never` for the strictest latency.",
        ),
        Some(v) => Item::new(
            "thp",
            json!(v),
            Status::Ok,
            why,
            if v == "madvise" {
                "Only regions that ask (MADV_HUGEPAGE) get huge pages; nothing to do."
            } else {
                "THP is off; use hugetlbfs or MADV_HUGEPAGE (after setting `madvise`) where huge pages help."
            },
        ),
    }
}

pub(super) fn thp_defrag(ctx: &Context) -> Item {
    let why = "The THP defrag policy decides whether a fault that wants a huge page stalls in \
               direct reclaim and compaction (`always`, and `madvise` for regions that asked) or \
               leaves the work to kswapd/kcompactd (`defer`).";
    match ctx.host.thp_defrag.as_deref() {
        None => Item::unavailable(
            "thp_defrag",
            "/sys/kernel/mm/transparent_hugepage/defrag",
            why,
        ),
        Some(v) => {
            let (status, fix) = match v {
                "always" => (
                    Status::Warn,
                    "Set `defer+madvise` or `defer` (echo defer > /sys/kernel/mm/transparent_hugepage/defrag) so faults do not compact memory synchronously.",
                ),
                "madvise" | "defer+madvise" => (
                    Status::Info,
                    "Faults in MADV_HUGEPAGE regions may stall in compaction; set `defer` if those regions are latency-critical.",
                ),
                _ => (Status::Ok, "Faults never compact memory synchronously; nothing to do."),
            };
            Item::new("thp_defrag", json!(v), status, why, fix)
        }
    }
}

pub(super) fn mthp(ctx: &Context) -> Item {
    let why = "Multi-size THP maps anonymous folios of 16 KiB to 1 MiB with PTEs: fewer faults, \
               but a fault then allocates and zeroes more than one page.";
    if ctx.host.mthp.is_empty() {
        return Item::unavailable(
            "mthp",
            "/sys/kernel/mm/transparent_hugepage/hugepages-*",
            format!("{why} (Linux 6.8 and later.)"),
        );
    }
    let value: serde_json::Map<String, Value> = ctx
        .host
        .mthp
        .iter()
        .map(|m| (format!("{}kB", m.size_kb), json!(m.enabled)))
        .collect();
    let always = ctx.host.mthp.iter().any(|m| m.enabled == "always");
    Item::new(
        "mthp",
        Value::Object(value),
        if always { Status::Warn } else { Status::Info },
        why,
        if always {
            "A size set to `always` changes fault behaviour for every anonymous region; set it to `madvise` or `never` unless that is intended."
        } else {
            "Nothing to do; sizes set to `inherit` follow the top-level THP setting."
        },
    )
}

pub(super) fn ksm() -> Item {
    let why = "KSM merges identical pages: it write-protects page-table entries and sends TLB \
               shootdowns from ksmd, then breaks merged pages with copy-on-write faults.";
    match procfs::read_u64("/sys/kernel/mm/ksm/run") {
        None => Item::unavailable("ksm", "/sys/kernel/mm/ksm/run", why),
        Some(run) => {
            let sharing = procfs::read_u64("/sys/kernel/mm/ksm/pages_sharing");
            let value = json!({ "run": run, "pages_sharing": sharing });
            let (status, fix) = match run {
                0 => (Status::Ok, "KSM is off; nothing to do."),
                1 => (
                    Status::Warn,
                    "Stop it with `echo 0 > /sys/kernel/mm/ksm/run` (or `echo 2` to also unmerge) unless memory savings matter more than latency.",
                ),
                _ => (
                    Status::Info,
                    "KSM is unmerging its pages (run = 2); set 0 once done.",
                ),
            };
            Item::new("ksm", value, status, why, fix)
        }
    }
}

pub(super) fn numa_balancing() -> Item {
    let why = "Automatic NUMA balancing periodically unmaps pages (PROT_NONE hinting faults) \
               and migrates them between nodes: page faults and TLB shootdowns the program did \
               not cause.";
    let Some(value) = procfs::read_u64("/proc/sys/kernel/numa_balancing") else {
        return Item::unavailable("numa_balancing", "/proc/sys/kernel/numa_balancing", why);
    };
    let nodes = numa_nodes();
    let json_value = json!({ "numa_balancing": value, "nodes": nodes });
    let (status, fix) = match (value, nodes) {
        (0, _) => (Status::Ok, "Off; nothing to do."),
        (_, Some(1)) => (
            Status::Info,
            "On, but this machine has one NUMA node, where the kernel does not scan; turn it off with `echo 0 > /proc/sys/kernel/numa_balancing` for clarity.",
        ),
        _ => (
            Status::Warn,
            "Turn it off with `echo 0 > /proc/sys/kernel/numa_balancing` (and stop numad), and place memory yourself with numactl or mbind.",
        ),
    };
    Item::new("numa_balancing", json_value, status, why, fix)
}

fn numa_nodes() -> Option<usize> {
    let dir = std::fs::read_dir("/sys/devices/system/node").ok()?;
    let n = dir
        .filter_map(Result::ok)
        .filter(|e| {
            let name = e.file_name();
            let name = name.to_string_lossy();
            name.strip_prefix("node")
                .is_some_and(|rest| !rest.is_empty() && rest.bytes().all(|b| b.is_ascii_digit()))
        })
        .count();
    (n > 0).then_some(n)
}

pub(super) fn swap(ctx: &Context) -> Item {
    let why = "With swap, anonymous memory can be written out and come back with a major fault \
               (disk latency) on the next touch.";
    let Some(total) = ctx.meminfo.and_then(MemInfo::swap_total_kb) else {
        return Item::unavailable("swap", "/proc/meminfo", why);
    };
    let swappiness = procfs::read_u64("/proc/sys/vm/swappiness");
    let value = json!({ "swap_total_kb": total, "swappiness": swappiness });
    if total == 0 {
        Item::new("swap", value, Status::Ok, why, "No swap; nothing to do.")
    } else {
        Item::new(
            "swap",
            value,
            Status::Warn,
            why,
            "Turn swap off (`swapoff -a`, and remove it from /etc/fstab), or mlock the memory that must not be swapped (mlockall, MAP_LOCKED).",
        )
    }
}

pub(super) fn pt_reclaim(ctx: &Context) -> Item {
    let why = "Without PT_RECLAIM an empty PTE table stays allocated after MADV_DONTNEED: sparse \
               allocators (jemalloc, tcmalloc) then pay page-table memory for memory they gave \
               back (the reclaim slides: VmPTE 110 GB for 590 GB resident). Linux 6.14 frees a \
               PTE table when MADV_DONTNEED covers all 2 MiB it maps.";
    let fix_absent = "Use Linux 6.14 or later built with CONFIG_PT_RECLAIM=y, or munmap (which \
                      frees tables no longer covered by a mapping) instead of MADV_DONTNEED.";
    if let Some(enabled) = ctx.config.and_then(|c| c.enabled("CONFIG_PT_RECLAIM")) {
        let value = json!({ "enabled": enabled, "source": "kernel config" });
        return if enabled {
            Item::new(
                "pt_reclaim",
                value,
                Status::Ok,
                why,
                "Enabled; nothing to do.",
            )
        } else {
            Item::new("pt_reclaim", value, Status::Info, why, fix_absent)
        };
    }
    if !ctx.opts.experiments {
        return Item::unavailable(
            "pt_reclaim",
            "The kernel config (/proc/config.gz, /boot/config-*)",
            why,
        );
    }
    match probe_result() {
        None => Item::unavailable(
            "pt_reclaim",
            "The kernel config, and the MADV_DONTNEED experiment,",
            why,
        ),
        Some(enabled) => {
            let value = json!({
                "enabled": enabled,
                "source": "experiment: VmPTE before and after MADV_DONTNEED of an aligned 2 MiB range",
            });
            if enabled {
                Item::new(
                    "pt_reclaim",
                    value,
                    Status::Ok,
                    why,
                    "Empty PTE tables are freed; nothing to do.",
                )
            } else {
                Item::new("pt_reclaim", value, Status::Info, why, fix_absent)
            }
        }
    }
}

fn probe_result() -> Option<bool> {
    super::probe_pt_reclaim()
}

pub(super) fn split_ptlocks(ctx: &Context) -> Item {
    let why = "Without split page-table locks every page fault of every thread takes the one \
               mm->page_table_lock; with them each PTE table (and with split PMD locks each PMD \
               table) has its own lock. The seed's THP benchmark: 49.9 s with one lock, 33.9 s \
               with split PMD locks.";
    let fix_off = "Use a kernel with CONFIG_SPLIT_PTE_PTLOCKS=y and CONFIG_SPLIT_PMD_PTLOCKS=y \
                   (the default on x86-64 SMP kernels with NR_CPUS >= 4).";
    if let Some(config) = ctx.config {
        let pte = config.enabled("CONFIG_SPLIT_PTE_PTLOCKS").unwrap_or(false);
        let pmd = config.enabled("CONFIG_SPLIT_PMD_PTLOCKS").unwrap_or(false);
        let value = json!({ "pte": pte, "pmd": pmd, "source": "kernel config" });
        let status = if pte && pmd { Status::Ok } else { Status::Warn };
        let fix = if status == Status::Ok {
            "Both on; nothing to do."
        } else {
            fix_off
        };
        return Item::new("split_ptlocks", value, status, why, fix);
    }
    // Kconfig: SPLIT_PTE_PTLOCKS defaults to y on SMP kernels with NR_CPUS >= 4
    // (except a few 32-bit architectures); NR_CPUS is at least the count of
    // possible CPUs.
    match possible_cpus() {
        Some(n) if n >= 4 => Item::new(
            "split_ptlocks",
            json!({ "pte": true, "pmd": null, "source": format!("inferred: {n} possible CPUs, so NR_CPUS >= 4, where Kconfig enables SPLIT_PTE_PTLOCKS") }),
            Status::Info,
            why,
            "Inferred, not read: make the kernel config readable (CONFIG_IKCONFIG_PROC or /boot/config-*) to confirm.",
        ),
        _ => Item::unavailable(
            "split_ptlocks",
            "The kernel config (/proc/config.gz, /boot/config-*)",
            why,
        ),
    }
}

/// Count of CPUs in /sys/devices/system/cpu/possible.
fn possible_cpus() -> Option<usize> {
    parse_cpu_list(&procfs::read_line("/sys/devices/system/cpu/possible")?)
}

/// Count of CPUs in a kernel CPU list (`0-255`, `0,2-3`).
fn parse_cpu_list(text: &str) -> Option<usize> {
    let mut n = 0usize;
    for part in text.trim().split(',') {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (
                    a.trim().parse::<usize>().ok()?,
                    b.trim().parse::<usize>().ok()?,
                );
                n += b.checked_sub(a)? + 1;
            }
            None => {
                part.trim().parse::<usize>().ok()?;
                n += 1;
            }
        }
    }
    Some(n)
}

pub(super) fn hypervisor(ctx: &Context) -> Item {
    let why = "In a virtual machine a TLB miss walks two page tables at once: every reference of \
               the guest's walk is itself a guest-physical address translated by the host's \
               tables. With 4 levels on 4 levels that is up to 24 memory references ((4+1) x \
               (4+1) - 1) instead of 4, and 35 with 5 levels on 5.";
    let h = &ctx.host.hypervisor;
    let Some(present) = h.present else {
        return Item::unavailable(
            "hypervisor",
            "The cpu flags, /sys/hypervisor/type and /sys/class/dmi/id/sys_vendor",
            why,
        );
    };
    let value = serde_json::to_value(h).unwrap_or(Value::Null);
    if present {
        Item::new(
            "hypervisor",
            value,
            Status::Info,
            why,
            "Back the guest with huge pages on the host (hugetlbfs or THP) and use huge pages in \
             the guest to shorten both dimensions of the walk; run latency-critical work on bare \
             metal.",
        )
    } else {
        Item::new(
            "hypervisor",
            value,
            Status::Ok,
            why,
            "Bare metal as far as visible; nothing to do.",
        )
    }
}

pub(super) fn tlb_shootdowns(ctx: &Context) -> Item {
    let why = "A TLB shootdown interrupts every CPU that may cache a translation the kernel \
               changed (munmap, mprotect, THP, KSM, migration, writeback): each target CPU \
               enters the kernel, so other threads see latency spikes.";
    let read =
        || procfs::read_string("/proc/interrupts").and_then(|t| procfs::tlb_total(t.as_bytes()));
    let Some(before) = read() else {
        return Item::unavailable("tlb_shootdowns", "The TLB line of /proc/interrupts", why);
    };
    let start = Instant::now();
    std::thread::sleep(ctx.opts.tlb_sample);
    let Some(after) = read() else {
        return Item::unavailable("tlb_shootdowns", "The TLB line of /proc/interrupts", why);
    };
    let seconds = start.elapsed().max(Duration::from_millis(1)).as_secs_f64();
    let rate = after.saturating_sub(before) as f64 / seconds;
    let value =
        json!({ "total": after, "per_second": (rate * 10.0).round() / 10.0, "sampled_s": seconds });
    if rate >= 1000.0 {
        Item::new(
            "tlb_shootdowns",
            value,
            Status::Warn,
            why,
            "Find the process that changes its mappings (perf record -e tlb:tlb_flush -a); map memory once at start, avoid munmap/mprotect/madvise on hot paths, and isolate latency-critical CPUs.",
        )
    } else {
        Item::new(
            "tlb_shootdowns",
            value,
            Status::Ok,
            why,
            "Low system-wide rate while sampled; watch it again under your real load.",
        )
    }
}

pub(super) fn pv_tlb_flush() -> Item {
    let why = "Under KVM with the paravirtual remote TLB flush, a shootdown does not interrupt \
               a vCPU the host has preempted: its flush is left in its steal-time area and done \
               before it runs again. /proc/interrupts then counts fewer TLB shootdown IPIs than \
               CPUs flushed (on a host whose vCPUs share few cores, a fraction of one per \
               munmap of a two-thread process), and a shootdown's cost depends on whether its \
               targets are running.";
    let Some(p) = crate::pvflush::PvTlbFlush::read() else {
        return Item::unavailable("pv_tlb_flush", "CPUID (x86-64 only)", why);
    };
    let value = serde_json::to_value(p).unwrap_or(Value::Null);
    let fix = if p.in_use {
        "Nothing to change: the model's --pv-flush is on by default on such a host; a host \
         that pins vCPUs and sets KVM_HINTS_REALTIME turns it off (one IPI per target)."
    } else {
        "Nothing to do: every target CPU gets an IPI."
    };
    Item::new("pv_tlb_flush", value, Status::Info, why, fix)
}

pub(super) fn writable_file_mappings() -> Item {
    let why = "A shared writable mapping of a file on a disk filesystem is written back: \
               writeback write-protects its page-table entries (TLB shootdowns) and the next \
               write stalls in a fault, for hundreds of microseconds if the page is under I/O.";
    let Some(found) = super::scan_writable_file_mappings() else {
        return Item::unavailable("writable_file_mappings", "/proc/*/maps", why);
    };
    let value = json!({
        "processes": found.processes,
        "processes_scanned": found.scanned,
        "example": found.example,
    });
    if found.processes == 0 {
        Item::new(
            "writable_file_mappings",
            value,
            Status::Ok,
            why,
            "No readable process maps a disk file shared and writable; nothing to do.",
        )
    } else {
        Item::new(
            "writable_file_mappings",
            value,
            Status::Warn,
            why,
            "Map files read-only, or put them on tmpfs/hugetlbfs, or use anonymous memory and write the file with write(2) off the latency-critical path.",
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-255\n"), Some(256));
        assert_eq!(parse_cpu_list("0,2-3"), Some(3));
        assert_eq!(parse_cpu_list("0"), Some(1));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list("x"), None);
        if let Some(n) = possible_cpus() {
            assert!(n >= crate::cpu::online_cpus().unwrap_or(1));
        }
    }
}
