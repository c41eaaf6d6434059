//! The counters an address space reports: RSS, VmPTE and table pages per
//! level from its state, with its threads' event counters merged.

use super::AddressSpace;
use crate::counters::{MmCounters, ThreadCounters, ThreadCtx};
use pt::Level;
use std::sync::atomic::Ordering;

impl AddressSpace {
    /// Table pages in the tree now, at every level (the root included):
    /// what the cost model prices a fault's table allocations by, without
    /// building [`AddressSpace::counters`].
    pub fn table_pages(&self) -> u64 {
        self.pt
            .root_level()
            .down_to_pte()
            .map(|l| self.pt.tables_at(l))
            .sum()
    }

    /// Every counter now: the address-space-wide values from state plus the
    /// given threads' counters merged.
    pub fn counters(&self, threads: &[&ThreadCtx]) -> MmCounters {
        let mut t = ThreadCounters::default();
        for c in threads {
            t.merge(&c.counters);
        }
        let g = self.pt.geometry();
        let kb = |pages: i64| pages * (self.page as i64) / 1024;
        // Linux mm_pgtables_bytes: nr_ptes + nr_pmds + nr_puds (the PGD and a
        // P4D are not counted): the lowest three levels below the root.
        let vmpte_kb = [Level::PTE, Level::PMD, Level::PUD]
            .into_iter()
            .filter(|l| *l < self.pt.root_level())
            .map(|l| self.pt.tables_at(l) as i64 * g.table_bytes() as i64 / 1024)
            .sum();
        let pt_pages = self
            .pt
            .root_level()
            .down_to_pte()
            .map(|l| {
                (
                    self.pt.level_name(l).to_string(),
                    self.pt.tables_at(l) as i64,
                )
            })
            .collect();
        MmCounters {
            minor_faults: t.minor_faults as i64,
            major_faults: t.major_faults as i64,
            vmpte_kb,
            rss_anon_kb: kb(self.rss.sum(0)),
            rss_file_kb: kb(self.rss.sum(1)),
            rss_shmem_kb: kb(self.rss.sum(2)),
            anon_huge_kb: kb(self.anon_huge.load(Ordering::Relaxed)),
            vmswap_kb: kb(self.swapents.load(Ordering::Relaxed)),
            pt_pages,
            threads: t,
        }
    }
}
