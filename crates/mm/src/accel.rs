//! The host-side accelerations of the model: shortcuts that make the model
//! run faster on the host without changing anything it computes. Each one
//! answers a question the plain path answers too, and each has a
//! differential test below against that plain path.
//!
//! 1. [`PmdWalkCache`] (thread-local): the PMD table of this thread's last
//!    fault walk, per address space. Plain path:
//!    `AddressSpace::walk_alloc_pmd_table`, the walk from the root. Safe
//!    because tables above the PTE level are unlinked only by
//!    `free_pgtables` under the mmap write lock, which bumps the space's
//!    `upper_gen` first (locking invariant 2): while the generation is
//!    unchanged, a walk that found every upper table would find the same
//!    tables again, allocating, locking and counting nothing.
//! 2. [`Vmas::find_cached`] (thread-local): the VMA of this thread's last
//!    lookup (Linux kept such a per-thread `vmacache` until 6.1). Plain
//!    path: [`Vmas::find`]. Safe because every change of the map bumps its
//!    `seq` (the invariant of [`crate::vma`]), and the cached answer is used
//!    only while `seq` is unchanged and the map is borrowed.
//! 3. The anonymous PTE template (`AddressSpace::anon_pte_bits`): the word
//!    of a dirty anonymous leaf for each protection, encoded once per
//!    address space and filled with the frame's address per fault by
//!    [`pt::PageTable::set_leaf_bits`] (as Linux builds a PTE from
//!    `vm_page_prot`). Plain path: [`pt::PageTable::set_entry`] with
//!    `AddressSpace::leaf_attrs`. Safe because the attributes of a
//!    protection do not change over the space's life.
//!
//! Invariant: removing any one of these (calling the plain path instead)
//! changes no entry, counter or result of the model.

use crate::vma::{Vma, Vmas};
use pt::{TableAddr, VirtAddr};
use std::cell::Cell;

thread_local! {
    /// (address space id, its `upper_gen` then, the first VA of the PMD
    /// table's span, the PMD table). Faults of one thread mostly stay inside
    /// one PMD table's span (1 GiB on x86-64).
    static PMD_WALK: Cell<(u64, u64, VirtAddr, TableAddr)> =
        const { Cell::new((0, 0, VirtAddr::new(0), TableAddr::new(0))) };

    /// (owner, seq, start, end, address of the VMA) of this thread's last
    /// VMA lookup.
    static LAST_VMA: Cell<(u64, u64, u64, u64, usize)> = const { Cell::new((0, 0, 0, 0, 0)) };
}

/// Acceleration 1: this thread's last upper-level walk (see the module
/// documentation).
pub(crate) struct PmdWalkCache;

impl PmdWalkCache {
    /// The PMD table remembered for the span starting at `span` of the
    /// address space `space` at generation `gen`, if this thread's last
    /// walk was that one.
    #[inline]
    pub(crate) fn get(space: u64, gen: u64, span: VirtAddr) -> Option<TableAddr> {
        let (id, cgen, cspan, table) = PMD_WALK.with(Cell::get);
        (id == space && cgen == gen && cspan == span).then_some(table)
    }

    /// Remembers the walk that found `table` for the span at `span`.
    #[inline]
    pub(crate) fn set(space: u64, gen: u64, span: VirtAddr, table: TableAddr) {
        PMD_WALK.with(|c| c.set((space, gen, span, table)));
    }
}

impl Vmas {
    /// Acceleration 2: [`Vmas::find`], answered from this thread's last
    /// lookup when it was in these VMAs (`owner` names the address space:
    /// every space has its own `seq`) with the map unchanged since.
    #[inline]
    pub(crate) fn find_cached(&self, owner: u64, va: u64) -> Option<&Vma> {
        let (o, seq, start, end, addr) = LAST_VMA.with(Cell::get);
        if o == owner && seq == self.seq && start <= va && va < end {
            // SAFETY: `addr` is the address of a VMA in this map (the owner
            // names this map), taken when `seq` had its present value; the
            // map has not changed since (the invariant of `crate::vma`:
            // every change bumps `seq`), so the VMA is still there, and the
            // `&self` borrow keeps the map from changing while the
            // reference lives.
            return Some(unsafe { &*(addr as *const Vma) });
        }
        let v = self.find(va)?;
        LAST_VMA.with(|c| c.set((owner, self.seq, v.start, v.end, v as *const Vma as usize)));
        Some(v)
    }
}

#[cfg(test)]
mod tests {
    use crate::counters::ThreadCtx;
    use crate::fault::{FaultAccess, FaultResult};
    use crate::space::{AddressSpace, MmapArgs};
    use crate::vma::{Backing, Prot, Vma, VmaFlags, Vmas};
    use crate::MmConfig;
    use pt::{Entry, Level, PhysAddr, VirtAddr};
    use std::sync::Arc;

    /// xorshift64: a repeatable stream of test choices.
    fn next(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    fn space() -> AddressSpace {
        let g = Arc::new(pt::geometry::preset("x86-64-4l").unwrap());
        AddressSpace::new(g, MmConfig::default()).unwrap()
    }

    #[test]
    fn the_pmd_walk_cache_answers_as_the_walk_does() {
        let s = space();
        let mut ctx = ThreadCtx::new();
        let gib = 1u64 << 30;
        let base = 16 * gib;
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut hits = 0;
        for round in 0..400 {
            // Map, unmap and fault at random over eight PUD spans, so that
            // free_pgtables unlinks PMD tables under the cache's feet.
            let span = base + (next(&mut x) % 8) * gib;
            let va = span + (next(&mut x) % 512) * (2 << 20);
            match next(&mut x) % 4 {
                0 => {
                    let _ = s
                        .munmap(&mut ctx, span, gib)
                        .map(|d| d.complete_without_tlb(&s).unwrap());
                }
                _ => {
                    let mut args = MmapArgs::anon(va, 4096);
                    args.replace = true;
                    s.mmap(&mut ctx, args)
                        .unwrap()
                        .complete_without_tlb(&s)
                        .unwrap();
                    match s.fault(&mut ctx, va, FaultAccess::WRITE) {
                        FaultResult::Handled { deferred, .. } => {
                            deferred.complete_without_tlb(&s).unwrap()
                        }
                        other => panic!("round {round}: {other:?}"),
                    }
                }
            }
            // The cached answer, under the mmap lock as faults take it.
            let vmas = s.mmap_read(&mut ctx);
            let gen = s.upper_gen.load(std::sync::atomic::Ordering::Acquire);
            let va = VirtAddr::new(va);
            let cspan = va.align_down(s.pt.entry_size(Level::PUD));
            let cached = super::PmdWalkCache::get(s.id, gen, cspan);
            let walked = s.find_pmd_table(va).ok();
            if let Some(t) = cached {
                hits += 1;
                assert_eq!(
                    Some(t),
                    walked,
                    "round {round}: the cache outlived its table"
                );
            }
            let via = s.alloc_pmd_table(&mut ctx, va).unwrap();
            let plain = s.walk_alloc_pmd_table(&mut ctx, va).unwrap();
            assert_eq!(via, plain, "round {round}");
            drop(vmas);
        }
        assert!(hits > 100, "the cache was hit only {hits} times");
        s.check_invariants().unwrap();
    }

    #[test]
    fn the_vma_cache_answers_as_find_does() {
        let mut vmas = Vmas::default();
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let page = 4096u64;
        let mut hits = 0;
        for round in 0..2000 {
            let slot = next(&mut x) % 64;
            let start = slot * 16 * page;
            match next(&mut x) % 8 {
                0 => {
                    vmas.remove(start);
                }
                1 if vmas.find(start).is_none() => {
                    let len = (1 + next(&mut x) % 16) * page;
                    let end = vmas
                        .next_start(start)
                        .map_or(start + len, |n| n.min(start + len));
                    vmas.insert(Vma {
                        start,
                        end,
                        prot: Prot::RW,
                        shared: false,
                        backing: Backing::Anon,
                        flags: VmaFlags::default(),
                        anon_vma: Default::default(),
                    });
                }
                2 => {
                    vmas.split_at(start + 4 * page, 12);
                }
                // A protection change of one page: merges and splits.
                3 if vmas.find(start).is_some() => {
                    let prot = if next(&mut x).is_multiple_of(2) {
                        Prot::R
                    } else {
                        Prot::RW
                    };
                    if vmas.find(start).is_some_and(|v| v.prot != prot) {
                        vmas.modify(start, start + page, 12, |v| v.prot = prot);
                    }
                }
                _ => {}
            }
            for _ in 0..4 {
                let va = (next(&mut x) % (64 * 16)) * page + next(&mut x) % page;
                let before = vmas.seq;
                let cached = vmas.find_cached(7, va).map(|v| (v.start, v.end));
                let plain = vmas.find(va).map(|v| (v.start, v.end));
                assert_eq!(cached, plain, "round {round} va {va:#x}");
                assert_eq!(before, vmas.seq, "a lookup changes nothing");
                hits += usize::from(cached.is_some());
            }
        }
        assert!(hits > 500, "only {hits} lookups found a VMA");
    }

    #[test]
    fn the_anonymous_pte_template_writes_what_set_entry_writes() {
        let s = space();
        let t = s.pt.alloc_table(Level::PTE).unwrap();
        let page = 4096u64;
        let mut checked = 0;
        for (i, bits) in s.anon_pte_bits.iter().enumerate() {
            let Some(bits) = *bits else {
                continue;
            };
            let (a, b) = (
                VirtAddr::new(2 * i as u64 * page),
                VirtAddr::new((2 * i as u64 + 1) * page),
            );
            let pa = (0x1234_5000 + i as u64) << 12;
            s.pt.set_leaf_bits(t, Level::PTE, a, bits, PhysAddr::new(pa));
            let plain = Entry::Leaf {
                pa,
                attrs: crate::space::anon_leaf_attrs(Prot::from_index(i), true),
                contiguous: false,
            };
            s.pt.set_entry(t, Level::PTE, b, &plain);
            let word = |va| s.pt.mem().read(s.pt.entry_pa(t, Level::PTE, va).get());
            assert_eq!(word(a), word(b), "protection {:?}", Prot::from_index(i));
            s.pt.pte_clear(t, Level::PTE, a);
            s.pt.pte_clear(t, Level::PTE, b);
            checked += 1;
        }
        assert!(checked >= 4, "only {checked} protections have a template");
        assert_eq!(s.pt.present_entries(t), 0);
        s.pt.free_table(t).unwrap();
        // A real write fault maps what the plain path's attributes say.
        let mut ctx = ThreadCtx::new();
        let va = 8u64 << 30;
        s.mmap(&mut ctx, MmapArgs::anon(va, page))
            .unwrap()
            .complete_without_tlb(&s)
            .unwrap();
        match s.fault(&mut ctx, va, FaultAccess::WRITE) {
            FaultResult::Handled { deferred, .. } => deferred.complete_without_tlb(&s).unwrap(),
            other => panic!("{other:?}"),
        }
        let va = VirtAddr::new(va);
        let pmd = s.find_pmd_table(va).unwrap();
        let table = s.pt.next_table(pmd, Level::PMD, va).unwrap();
        let Ok(Entry::Leaf { attrs, .. }) = s.pt.read_entry(table, Level::PTE, va) else {
            panic!("the fault mapped nothing");
        };
        let vma = s.vmas().into_iter().next().unwrap();
        assert_eq!(
            attrs,
            s.leaf_attrs(&vma, crate::space::PageKind::Anon, true)
        );
    }
}
