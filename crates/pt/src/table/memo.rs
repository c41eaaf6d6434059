//! The replay's walk prefetch with a memory of where the lowest tables are.
//!
//! A replay that knows its next addresses prefetches, a few accesses ahead,
//! the word the walk of each will read last, so that the host's cache misses
//! of consecutive walks overlap ([`PageTable::prefetch_walk`]). Finding that
//! word is itself a walk: on `x86-64-4l` three dependent reads above it and
//! about 140 instructions, a tenth of what the MMU model spends on a whole
//! TLB miss. A [`WalkMemo`] remembers, for each region that one level-2
//! entry maps (1 GiB on `x86-64-4l`), the level-1 table found there: a
//! prefetch in a remembered region reads one level-1 entry and prefetches
//! the leaf word it points to.
//!
//! ## Invariants
//!
//! - A slot holds a region, the physical address of a level-1 table a walk
//!   of that region reached, and [`PhysMem::upper_table_frees`] as it was
//!   before that walk. It is used only while that count is unchanged and
//!   for the root it was filled for: no table above the leaves has been
//!   freed since, so the page it names is still a level-1 table.
//! - A slot may still be out of date (its table unlinked and not yet freed,
//!   or replaced): the prefetch then names a useless address. That costs
//!   time, never a result: a prefetch changes nothing, and reading any
//!   physical address is safe (`PhysMem::read_walk`).
//!
//! [`PhysMem::upper_table_frees`]: crate::mem::PhysMem::upper_table_frees

use std::cell::Cell;

use super::{Level, PageTable, PhysAddr, TableAddr, VirtAddr};

/// Slots of a memo (a power of two): 64 GiB of 1 GiB regions fit with room.
const SLOTS: usize = 256;

#[derive(Debug, Clone, Copy)]
struct Slot {
    region: u64,
    table: TableAddr,
    generation: u64,
}

impl Slot {
    /// No address shifted right by a level's shift is all ones.
    const EMPTY: Slot = Slot {
        region: u64::MAX,
        table: TableAddr::new(0),
        generation: 0,
    };
}

/// A replaying thread's memory of level-1 tables (see the module docs).
/// Not shared between threads: each replay keeps its own.
#[derive(Debug)]
pub struct WalkMemo {
    /// The root the slots were filled under.
    root: Cell<u64>,
    slots: Box<[Cell<Slot>; SLOTS]>,
}

impl Default for WalkMemo {
    fn default() -> WalkMemo {
        WalkMemo::new()
    }
}

impl WalkMemo {
    pub fn new() -> WalkMemo {
        WalkMemo {
            root: Cell::new(u64::MAX),
            slots: Box::new([const { Cell::new(Slot::EMPTY) }; SLOTS]),
        }
    }

    /// Forgets every slot and starts over under `root`.
    #[cold]
    fn reset(&self, root: u64) {
        for s in self.slots.iter() {
            s.set(Slot::EMPTY);
        }
        self.root.set(root);
    }
}

/// One stage of a prefetch that runs ahead of the walk in two steps (see
/// [`PageTable::prefetch_walk_stage`]), some accesses apart, so that the
/// second step's loads find the line the first fetched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PrefetchStage {
    /// First: what turns the leaf table's address into host memory (a
    /// promoted compact table's bias word), found through the level-1
    /// entry (read, as the one-step prefetch reads it).
    Bias,
    /// Then the leaf word itself ([`PageTable::prefetch_walk_memo`]),
    /// whose bias the first stage fetched.
    Word,
}

impl PageTable {
    /// One stage of a staged walk prefetch of `va` through `memo`: a
    /// driver that knows its addresses far enough ahead calls
    /// [`PrefetchStage::Bias`] for an address and [`PrefetchStage::Word`]
    /// for it some accesses later, so that the second stage's loads find
    /// the lines the first fetched (a walk through promoted compact tables
    /// then waits for its table's bias word no more than a walk of the
    /// contiguous arena, which has none). Changes nothing in the table.
    #[inline]
    pub fn prefetch_walk_stage(&self, memo: &WalkMemo, va: VirtAddr, stage: PrefetchStage) {
        match stage {
            PrefetchStage::Bias => {
                if let Some(epa) = self.last_walk_word_memo(memo, va) {
                    self.mem.prefetch_bias(epa.get());
                }
            }
            PrefetchStage::Word => self.prefetch_walk_memo(memo, va),
        }
    }

    /// The level-1 entry a walk of `va` reads through `memo`'s level-1
    /// table (`Ok`), or where the walk stops above it (`Err`, what
    /// [`PageTable::last_walk_word`] says); `None` when the geometry has
    /// fewer than three levels (no memo) or `va` is not canonical.
    #[inline]
    fn upper_walk_word_memo(
        &self,
        memo: &WalkMemo,
        va: VirtAddr,
    ) -> Option<Result<PhysAddr, PhysAddr>> {
        let levels = self.geom.fast_levels();
        if levels.len() < 3 {
            return None;
        }
        let region = va.page_index(levels[2].hw_shift);
        let slot = &memo.slots[region as usize % SLOTS];
        let s = slot.get();
        // Only a canonical address fills a slot, and an address with the
        // slot's region has the same bits above the region's shift: it is
        // canonical too, so the hit path need not test it.
        let table = if s.region == region
            && s.generation == self.mem.upper_table_frees()
            && memo.root.get() == self.root
        {
            s.table
        } else {
            match self.learn_region(memo, slot, va, region) {
                Ok(table) => table,
                Err(last) => return last.map(Err),
            }
        };
        Some(Ok(table.phys() + levels[1].word_offset(va.get())))
    }

    /// [`PageTable::prefetch_walk`], finding the word through `memo` when
    /// it remembers the region of `va` (and teaching it the region when it
    /// does not). Changes nothing in the table.
    #[inline]
    pub fn prefetch_walk_memo(&self, memo: &WalkMemo, va: VirtAddr) {
        if let Some(epa) = self.last_walk_word_memo(memo, va) {
            self.mem.prefetch(epa.get());
        }
    }

    /// [`PageTable::last_walk_word`] through `memo`: the same address
    /// whenever the memo is up to date (see the module docs).
    #[inline]
    pub fn last_walk_word_memo(&self, memo: &WalkMemo, va: VirtAddr) -> Option<PhysAddr> {
        let epa = match self.upper_walk_word_memo(memo, va) {
            None if self.geom.fast_levels().len() < 3 => return self.last_walk_word(va),
            None => return None,
            Some(Err(last)) => return Some(last),
            Some(Ok(epa)) => epa,
        };
        let levels = self.geom.fast_levels();
        let (f1, f0) = (&levels[1], &levels[0]);
        let raw = self.mem.read_walk(epa.get());
        if raw & f1.table.mask != f1.table.value {
            // A leaf or an empty entry: the walk's last read is this one.
            return Some(epa);
        }
        Some(PhysAddr::new(f1.table.next_table(raw)) + f0.word_offset(va.get()))
    }

    /// The level-1 table of `va`'s region, remembered in `slot` of `memo`;
    /// or, where the walk stops above it, the last word it reads (what
    /// [`PageTable::last_walk_word`] says). Out of line: a replay comes
    /// here once per region.
    #[cold]
    #[inline(never)]
    fn learn_region(
        &self,
        memo: &WalkMemo,
        slot: &Cell<Slot>,
        va: VirtAddr,
        region: u64,
    ) -> Result<TableAddr, Option<PhysAddr>> {
        if !self.geom.is_canonical(va.get()) {
            return Err(self.last_walk_word(va));
        }
        if memo.root.get() != self.root {
            memo.reset(self.root);
        }
        // Read before the walk: a free during it leaves the slot stale.
        let generation = self.mem.upper_table_frees();
        let table = self.table_on_path(va, Level::PMD).map_err(Some)?;
        slot.set(Slot {
            region,
            table,
            generation,
        });
        Ok(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Attrs, Perms};

    /// Through a memo or not, the same word, on every preset, while the
    /// tables change under it: mappings of every size, unmaps, and tables
    /// freed and allocated again for other regions.
    #[test]
    fn the_memo_names_the_word_the_walk_reads_last() {
        for g in crate::geometry::presets() {
            let pt = PageTable::with_new_memory(g.clone()).unwrap();
            let memo = WalkMemo::new();
            let sizes = g.leaf_sizes();
            let step = (*sizes.iter().max().unwrap()).max(1 << 30);
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            let mut next = || {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                x
            };
            let check = |va: u64| {
                let va = VirtAddr::new(va);
                let last = pt.last_walk_word(va);
                assert_eq!(
                    pt.last_walk_word_memo(&memo, va),
                    last,
                    "{} {va:#x}",
                    g.name()
                );
                // The level-1 entry the memo names is the one the walk
                // reads (or where it stops above it).
                if g.fast_levels().len() >= 3 {
                    match pt.upper_walk_word_memo(&memo, va) {
                        Some(Err(stop)) => assert_eq!(Some(stop), last),
                        Some(Ok(epa)) => {
                            let table = pt.table_on_path(va, Level::PMD);
                            assert_eq!(
                                table.map(|t| pt.hw_entry_pa(t, Level::PMD, va)),
                                Ok(epa),
                                "{} {va:#x}",
                                g.name()
                            );
                        }
                        None => assert_eq!(last, None),
                    }
                }
                // Every stage runs on any address and changes nothing.
                for stage in [PrefetchStage::Bias, PrefetchStage::Word] {
                    pt.prefetch_walk_stage(&memo, va, stage);
                }
                assert_eq!(pt.last_walk_word(va), last);
            };
            for round in 0..6u64 {
                // Map a few leaves of random sizes in a few regions.
                let mut mapped = Vec::new();
                for k in 0..12 {
                    let r = next();
                    let size = sizes[r as usize % sizes.len()].min(1 << 30);
                    let va = (1 + (k + round * 3) % 8) * step + (r >> 20) % 64 * size;
                    let va = va - va % size;
                    if pt
                        .map(
                            VirtAddr::new(va),
                            PhysAddr::new(va % (1 << 40)),
                            size,
                            size,
                            Attrs::new(Perms::USER_RW),
                        )
                        .is_ok()
                    {
                        mapped.push((va, size));
                    }
                }
                for &(va, size) in &mapped {
                    for off in [0, size / 2, size - 8] {
                        check(va + off);
                    }
                    // Unmapped neighbours and far addresses too, and a
                    // non-canonical address in the same slot as a
                    // remembered region (its top bit flipped).
                    check(va + size + 4096 * (next() % 16));
                    check(va ^ (1 << 63));
                    check(next() % (8 * step));
                }
                // Tear everything down and free the tables: the memo's
                // tables are gone and may come back for other regions.
                pt.unmap(VirtAddr::new(step), 8 * step)
                    .unwrap()
                    .flush
                    .done();
                pt.free_empty(VirtAddr::new(step), 8 * step)
                    .unwrap()
                    .release(&pt)
                    .unwrap();
                for &(va, _) in &mapped {
                    check(va);
                }
            }
        }
    }
}
