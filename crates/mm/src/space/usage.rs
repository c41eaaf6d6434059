//! The counters an address space reports: RSS, VmPTE and table pages per
//! level from its state, with its threads' event counters merged.

use super::AddressSpace;
use crate::cache::ObjectKind;
use crate::counters::{MmCounters, ThreadCounters, ThreadCtx};
use pt::{Entry, Level, VirtAddr};
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
    /// given threads' counters merged. The PMD-mapped page-cache sizes
    /// (`shmem_pmd_kb`, `file_pmd_kb`) come from a walk of the PMD entries
    /// of the VMAs with an object, as smaps_rollup walks them; a caller
    /// that needs only sizes kept as it goes takes
    /// [`AddressSpace::resident_counters`].
    pub fn counters(&self, threads: &[&ThreadCtx]) -> MmCounters {
        let mut c = self.resident_counters(threads);
        let (shmem, file) = self.cache_pmd_mapped();
        let kb = |pages: u64| (pages * self.page / 1024) as i64;
        c.shmem_pmd_kb = kb(shmem);
        c.file_pmd_kb = kb(file);
        c
    }

    // Linux: fs/proc/task_mmu.c, smaps_pmd_entry (ShmemPmdMapped for a
    // swap-backed page-cache folio, FilePmdMapped for another)
    /// Pages of shmem and of regular files mapped by PMD leaves now:
    /// (shmem, file).
    fn cache_pmd_mapped(&self) -> (u64, u64) {
        let (mut shmem, mut file) = (0, 0);
        let per = self.pmd_size / self.page;
        for v in self.vmas.read().0.iter() {
            let Some(obj) = v.object() else { continue };
            let mut a = v.start.next_multiple_of(self.pmd_size);
            while a + self.pmd_size <= v.end {
                let va = VirtAddr::new(a);
                if let Ok(t) = self.find_pmd_table(va) {
                    if let Ok(Entry::Leaf { pa, .. }) = self.pt.read_entry(t, Level::PMD, va) {
                        if Some(pa) != self.huge_zero_pa {
                            match obj.kind {
                                ObjectKind::Shmem => shmem += per,
                                ObjectKind::File => file += per,
                            }
                        }
                    }
                }
                a += self.pmd_size;
            }
        }
        (shmem, file)
    }

    /// The counters [`AddressSpace::counters`] gives, but for the
    /// PMD-mapped page-cache sizes (left 0): no walk of the tables, for
    /// callers that price every system call by the sizes it changed.
    pub fn resident_counters(&self, threads: &[&ThreadCtx]) -> MmCounters {
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
            shmem_pmd_kb: 0,
            file_pmd_kb: 0,
            vmswap_kb: kb(self.swapents.load(Ordering::Relaxed)),
            pt_pages,
            threads: t,
        }
    }
}
