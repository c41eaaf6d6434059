//! The built-in cost file: the figure of every name a cost file lacks (a
//! file taken before the name existed, a probe that found no usable
//! sample; `CostModel::missing` lists them). Every figure is **assumed**
//! (provenance `assumed`), an order of magnitude for a current x86-64
//! server CPU under a hypervisor, with a wide interval; none was measured
//! on this host. A measured file (`ptlab calibrate`'s, this host's cached
//! one, costs/xeon-kvm-2026.toml) replaces them.

use costs::{Cost, CostFile, HostInfo};

/// Where every figure of [`assumed`] comes from.
pub const SOURCE: &str =
    "ptlab built-in default: an assumed order of magnitude, not measured; replace with `ptlab calibrate`";

/// Where the broadcast-invalidation figures come from: no instruction
/// count or latency is published for them, and user space cannot execute
/// INVLPGB (privileged), so `calibrate` measures none of them.
pub const BROADCAST_SOURCE: &str = "assumed, not measured: INVLPGB near INVLPG's latency (AMD's optimization guide, 80-100 cycles) per instruction; TLBSYNC a round trip of the fabric, sized so that a broadcast flush costs about a tenth of an IPI round (the INVLPGB series' v5 cover letter, January 2025: flush share of CPU time 40% -> 4% on a 36-core Milan); RAR as an IPI round without the remote interrupt entry and exit (Intel's RAR specification, 2021; no published latency)";

/// `(name, ns, lo, hi)` of every catalog name.
const FIGURES: &[(&str, f64, f64, f64)] = &[
    ("fault.anon_write", 1500.0, 1000.0, 2500.0),
    // The same fault on a page the CPU freed just before; with no figure
    // of its own it costs as much as a fresh one.
    ("fault.anon_recycled", 1500.0, 1000.0, 2500.0),
    ("fault.zero_read", 700.0, 450.0, 1200.0),
    ("fault.cow", 2000.0, 1400.0, 3200.0),
    ("fault.file_read", 1000.0, 650.0, 1800.0),
    ("fault.shmem", 1800.0, 1200.0, 3000.0),
    ("fault.thp", 80_000.0, 50_000.0, 150_000.0),
    ("fault.mthp_64k", 5000.0, 3500.0, 8000.0),
    ("fault.major", 10_000.0, 5000.0, 50_000.0),
    ("fault.major_page", 1000.0, 200.0, 5000.0),
    // A page of a 2 MiB folio read: the device's streaming time per 4 KiB
    // (about 1.6 GB/s assumed), the fault waiting for the whole folio.
    ("fault.major_pmd_page", 2500.0, 1000.0, 8000.0),
    // Its fault: the exception, the two folios' allocation and submission,
    // the PMD mapped after the wait.
    ("fault.major_pmd", 100_000.0, 20_000.0, 500_000.0),
    ("fault.spurious", 400.0, 250.0, 800.0),
    // A write to the zero page: an anonymous write fault's allocation and
    // clearing, plus replacing the old entry with a local flush.
    ("fault.zero_cow", 1700.0, 1100.0, 2800.0),
    // A write-protect fault plus the file system's page_mkwrite (a journal
    // handle on ext4) and the page's dirtying.
    ("fault.file_mkwrite", 1200.0, 600.0, 3000.0),
    ("populate.page", 600.0, 400.0, 1200.0),
    // A zero page replaced by a populate-for-write: a populated page plus
    // the zero-page write fault's extra (the old entry cleared and
    // flushed).
    ("populate.zero_cow", 800.0, 500.0, 1600.0),
    // A folio mlocked as it is mapped into a locked VMA, and munlocked
    // when unmapped: the LRU lock and list moves twice.
    ("mlock.folio", 250.0, 100.0, 600.0),
    // A zero page populated: a zero-page read without the exception.
    ("populate.zero_page", 400.0, 200.0, 900.0),
    ("pt.alloc", 300.0, 200.0, 600.0),
    ("fork.call", 100_000.0, 50_000.0, 1_000_000.0),
    ("fork.page", 30.0, 15.0, 80.0),
    ("fork.table", 500.0, 300.0, 1000.0),
    ("pt.free", 200.0, 100.0, 400.0),
    ("munmap.call", 1500.0, 1000.0, 3000.0),
    ("munmap.page", 50.0, 30.0, 100.0),
    ("mprotect.call", 1500.0, 1000.0, 3000.0),
    ("mprotect.page", 30.0, 15.0, 60.0),
    ("madvise.call", 1000.0, 700.0, 2000.0),
    ("madvise.page", 50.0, 30.0, 100.0),
    ("mmap.call", 1500.0, 1000.0, 3000.0),
    ("syscall.call", 1000.0, 500.0, 2000.0),
    // fsync of a file on a local disk: a journal commit and a cache flush
    // (a fraction of a millisecond on an SSD, several on a disk), and a
    // 4 KiB write per page (SSD: 10-50 us each, largely overlapped).
    ("msync.call", 1_000_000.0, 200_000.0, 10_000_000.0),
    ("msync.page", 5000.0, 1000.0, 50_000.0),
    // A system call that looks up a VMA and gets one present page: entry
    // and exit, the mmap lock, a lockless walk, a page reference.
    ("node_of.call", 600.0, 300.0, 1500.0),
    ("shootdown.sender", 3000.0, 1500.0, 8000.0),
    ("shootdown.receiver", 1500.0, 700.0, 4000.0),
    ("tlb.flush_local", 150.0, 80.0, 300.0),
    // Broadcast invalidation: no host here has it (see BROADCAST_SOURCE).
    ("invlpgb.instruction", 60.0, 30.0, 200.0),
    ("invlpgb.tlbsync", 600.0, 200.0, 2000.0),
    ("rar.sender", 1000.0, 400.0, 3000.0),
    ("rar.receiver", 150.0, 50.0, 500.0),
    ("clear.kib", 25.0, 15.0, 50.0),
    ("copy.kib", 40.0, 25.0, 80.0),
    ("lock.uncontended", 20.0, 10.0, 40.0),
    // follow_page under the lock: an entry re-read and a page reference
    // (an atomic on the page's line), a few tens of ns.
    ("lock.hold_lookup", 40.0, 20.0, 100.0),
    ("lock.hold_fault", 100.0, 50.0, 200.0),
    ("lock.handoff", 150.0, 80.0, 300.0),
    // Linux's queued spinlock: each waiter spins on its own node.
    ("lock.handoff_waiter", 0.0, 0.0, 10.0),
    // A current server's memory: 200-400 GB/s for the machine.
    ("mem.bandwidth_kib", 3.4, 2.5, 5.0),
    // 63 pages moved between the buddy lists and a CPU's list, 15-60 ns
    // each (mm/page_alloc.c, rmqueue_bulk / free_pcppages_bulk).
    ("zone.lock_batch", 1900.0, 950.0, 3800.0),
    // 15 folios put on or taken off the LRU lists, 20-80 ns each
    // (mm/swap.c, folio_batch_move_lru / lru_add_fn).
    ("lru.lock_batch", 600.0, 300.0, 1200.0),
    ("access.tlb_hit", 1.0, 0.5, 2.0),
    ("tlb.l2_hit", 7.0, 5.0, 10.0),
    ("tlb.miss_walk", 30.0, 20.0, 60.0),
    ("tlb.miss_walk_cached", 20.0, 10.0, 40.0),
    ("walk.ref_cached", 5.0, 4.0, 8.0),
    ("walk.ref_memory", 100.0, 80.0, 150.0),
    ("mem.latency_32k", 1.2, 1.0, 1.5),
    ("mem.latency_1m", 4.0, 3.0, 6.0),
    ("mem.latency_32m", 60.0, 40.0, 90.0),
    ("mem.latency_1g", 100.0, 80.0, 150.0),
];

/// The built-in cost file (see the module documentation).
pub fn assumed() -> CostFile {
    let mut f = CostFile::new(HostInfo {
        mode: Some("assumed".into()),
        description: Some(SOURCE.into()),
        ..HostInfo::default()
    });
    for &(name, ns, lo, hi) in FIGURES {
        let source = if name.starts_with("invlpgb.") || name.starts_with("rar.") {
            BROADCAST_SOURCE
        } else {
            SOURCE
        };
        f.costs
            .insert(name.to_string(), Cost::assumed(ns, lo, hi, source));
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_catalog_name_has_a_valid_assumed_figure() {
        let f = assumed();
        f.validate(std::path::Path::new("built-in")).unwrap();
        for c in costs::CATALOG {
            let cost = f
                .get(c.name)
                .unwrap_or_else(|| panic!("{} has no figure", c.name));
            assert_eq!(cost.provenance, costs::Provenance::Assumed, "{}", c.name);
        }
        assert_eq!(
            f.costs.len(),
            costs::CATALOG.len(),
            "a figure names no catalog entry"
        );
    }
}
