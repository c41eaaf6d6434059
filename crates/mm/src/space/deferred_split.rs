//! The deferred split queue of large anonymous folios and its shrinker, as
//! Linux 6.18 keeps them (mm/huge_memory.c: `deferred_split_folio`,
//! `deferred_split_scan`, `thp_underused`).
//!
//! A folio goes on the queue when
//! - a PMD-sized THP is allocated by a fault or a collapse (not partially
//!   mapped: only the shrinker's underused check may split it), or
//! - an unmap leaves it partially mapped (a `dontneed`, `munmap` or COW of
//!   some of its pages after its PMD was split).
//!
//! The shrinker (run by memory reclaim; a workload asks for it with the
//! `deferred_split` step) takes the whole queue: a partially mapped folio
//! is split (its pages no longer mapped are freed, its mapped pages no write
//! reached go to the shared zero page, see [`AddressSpace::split_folio`]);
//! a fully mapped one is split the same way if it is underused (more than
//! `max_ptes_none` of its pages are all zero; never with the default
//! `max_ptes_none`, 511), else it leaves the queue for good. A folio it
//! cannot split stays queued if partially mapped.
//!
//! The queue is per memory cgroup in Linux; the model keeps it per address
//! space (the flags of [`Folio`]) and the shrinker runs over the calling
//! space. A folio a fork shares with another process is not split (the
//! model's split acts on one space; Linux's would unmap it everywhere).

use super::{lock_plain, AddressSpace, Folio};
use crate::counters::ThreadCtx;
use crate::deferred::Deferred;
use crate::error::Errno;
use crate::vma::Vma;
use pt::{Entry, Level, TableAddr, VirtAddr};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

impl Folio {
    // Linux: mm/huge_memory.c, deferred_split_folio
    /// Puts the folio on the deferred split queue (order 2 and up only:
    /// more than two base pages of `page` bytes), marking it partially
    /// mapped if `partially_mapped`.
    pub(crate) fn deferred_split(&mut self, partially_mapped: bool, page: u64) {
        if self.size <= 2 * page {
            return;
        }
        if partially_mapped {
            self.partially_mapped = true;
        }
        self.queued = true;
    }
}

/// Where the shrinker found a queued folio mapped.
enum Mapped {
    /// By one huge PMD entry of the PMD table.
    Pmd(TableAddr, VirtAddr),
    /// By PTEs of a PTE table under the PMD table, from this address.
    Ptes(TableAddr, VirtAddr),
}

impl AddressSpace {
    /// Runs the deferred split shrinker over this space's queue (Linux:
    /// `deferred_split_scan` with the whole queue to scan, as a memory
    /// cgroup's reclaim at its lowest priority asks). Returns the number of
    /// folios split.
    ///
    /// # Errors
    /// [`Errno::Internal`] on an inconsistency of the tables.
    pub fn deferred_split_scan(&self, ctx: &mut ThreadCtx) -> Result<(Deferred, u64), Errno> {
        let mut d = Deferred::none();
        let mut split = 0;
        let r = self.deferred_split_scan_inner(ctx, &mut d, &mut split);
        self.finish_op(r, d).map(|d| (d, split))
    }

    fn deferred_split_scan_inner(
        &self,
        ctx: &mut ThreadCtx,
        d: &mut Deferred,
        split: &mut u64,
    ) -> Result<(), Errno> {
        if self.nr_folios.load(Ordering::Acquire) == 0 {
            return Ok(());
        }
        let queue: HashMap<u64, Folio> = lock_plain(&self.folios)
            .iter()
            .filter(|(_, f)| f.queued)
            .map(|(h, f)| (*h, *f))
            .collect();
        if queue.is_empty() {
            return Ok(());
        }
        let vmas = self.mmap_read(ctx);
        for vma in vmas.iter().filter(|v| v.is_anon()) {
            for (head, at) in self.find_queued(vma, &queue)? {
                let folio = queue[&head];
                let underused = !folio.partially_mapped && self.thp_underused(head, folio.size);
                if !folio.partially_mapped && !underused {
                    continue;
                }
                if self.shares.shared(head) {
                    continue;
                }
                if self.split_queued(ctx, vma, at, head, folio.size, d)? {
                    *split += 1;
                }
            }
        }
        drop(vmas);
        // A folio the scan found used leaves the queue; a partially mapped
        // one it could not split stays.
        for f in lock_plain(&self.folios).values_mut() {
            if f.queued && !f.partially_mapped {
                f.queued = false;
            }
        }
        Ok(())
    }

    /// The queued folios mapped in `vma`, with where (found by walking its
    /// tables: the model's stand-in for the folio's reverse map).
    fn find_queued(
        &self,
        vma: &Vma,
        queue: &HashMap<u64, Folio>,
    ) -> Result<Vec<(u64, Mapped)>, Errno> {
        let mut found = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut a = VirtAddr::new(vma.start);
        let end = VirtAddr::new(vma.end);
        while a < end {
            let next = a.addr_end(self.pmd_size, end);
            let Ok(pmd_table) = self.find_pmd_table(a) else {
                a = next;
                continue;
            };
            match self.pt.read_entry(pmd_table, Level::PMD, a)? {
                Entry::Leaf { pa, .. } => {
                    if queue.contains_key(&pa) && seen.insert(pa) {
                        found.push((pa, Mapped::Pmd(pmd_table, a.align_down(self.pmd_size))));
                    }
                }
                Entry::Table { pa: t } => {
                    let table = TableAddr::new(t);
                    let mut va = a;
                    while va < next {
                        if let Entry::Leaf { pa, .. } = self.pt.read_entry(table, Level::PTE, va)? {
                            if let Some((head, size)) = self.folio_of(pa) {
                                let base = va.sub(pa - head);
                                let chunk = a.align_down(self.pmd_size);
                                // split_folio reads the folio's entries in
                                // this table only (a folio mremap moved
                                // across a PMD boundary is left alone).
                                let inside = base.align_down(self.pmd_size) == chunk
                                    && base.add(size - self.page).align_down(self.pmd_size)
                                        == chunk;
                                if inside && queue.contains_key(&head) && seen.insert(head) {
                                    found.push((head, Mapped::Ptes(pmd_table, base)));
                                }
                            }
                        }
                        va += self.page;
                    }
                }
                Entry::Invalid | Entry::Swap { .. } => {}
            }
            a = next;
        }
        Ok(found)
    }

    // Linux: mm/huge_memory.c, thp_underused
    /// Whether more than `max_ptes_none` pages of the folio are all zero
    /// (no write reached them). Never with `max_ptes_none` at its maximum.
    fn thp_underused(&self, head: u64, size: u64) -> bool {
        let n = size / self.page;
        let max_none = u64::from(self.cfg.khugepaged.max_ptes_none);
        if size != self.pmd_size || max_none >= n - 1 {
            return false;
        }
        let (mut zero, mut filled) = (0, 0);
        for i in 0..n {
            if self.shares.written.contains(head + i * self.page) {
                filled += 1;
                if filled >= n - max_none {
                    return false;
                }
            } else {
                zero += 1;
                if zero > max_none {
                    return true;
                }
            }
        }
        false
    }

    /// Splits one queued folio where [`Self::find_queued`] found it (Linux:
    /// `split_folio` from the shrinker: a PMD mapping is split first).
    /// Returns whether it was split.
    fn split_queued(
        &self,
        ctx: &mut ThreadCtx,
        vma: &Vma,
        at: Mapped,
        head: u64,
        size: u64,
        d: &mut Deferred,
    ) -> Result<bool, Errno> {
        let (pmd_table, base) = match at {
            Mapped::Pmd(pmd_table, haddr) => {
                let g = self.pmd_lock(ctx, pmd_table);
                if !matches!(
                    self.pt.read_entry(pmd_table, Level::PMD, haddr)?,
                    Entry::Leaf { pa, .. } if pa == head
                ) {
                    return Ok(false);
                }
                self.split_huge_pmd_locked(vma, pmd_table, haddr, d)?;
                drop(g);
                (pmd_table, haddr)
            }
            Mapped::Ptes(pmd_table, base) => (pmd_table, base),
        };
        let Some(table) = self.pt.next_table(pmd_table, Level::PMD, base) else {
            return Ok(false);
        };
        let Some(g) = self.pte_offset_map_lock(ctx, pmd_table, base, table) else {
            return Ok(false);
        };
        self.split_folio(vma, table, base, head, size, d)?;
        drop(g);
        Ok(!lock_plain(&self.folios).contains_key(&head))
    }
}
