//! Which VMAs merge, and the two merges Linux 6.18 attempts (mm/vma.c):
//! a new mapping with its neighbours (`vma_merge_new_range`), and part of
//! a VMA given new flags with the VMA before or after it
//! (`vma_merge_existing_range`, split otherwise: `vma_modify`).
//!
//! Two VMAs, one right after the other, may become one when they have the
//! same `vm_flags` and file (`is_mergeable_vma`), the second maps the file
//! from where the first stops (`vm_pgoff`), and they do not have two
//! different anon_vmas (`is_mergeable_anon_vma`). Without fork, Linux's
//! further anon_vma condition (no un-COWed parents) always holds.

use super::{anon_vmas_mergeable, Backing, Vma, Vmas};
use std::sync::Arc;

impl Vma {
    /// Whether both map the same file (or both anonymous memory): Linux
    /// compares `vm_file`.
    pub fn same_file(&self, other: &Vma) -> bool {
        match (&self.backing, &other.backing) {
            (Backing::Anon, Backing::Anon) => true,
            (Backing::Object { obj: a, .. }, Backing::Object { obj: b, .. }) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
    /// Whether both have the same `vm_flags` (protection, MAP_SHARED and
    /// [`VmaFlags`]); Linux `is_mergeable_vma` also wants the same file.
    pub fn same_vm_flags(&self, other: &Vma) -> bool {
        self.prot == other.prot && self.shared == other.shared && self.flags == other.flags
    }
    /// Linux `is_mergeable_vma`.
    pub fn is_mergeable(&self, other: &Vma) -> bool {
        self.same_vm_flags(other) && self.same_file(other)
    }
    /// Whether `next` maps the object from where `self` stops (Linux
    /// `can_vma_merge_after` / `_before`'s `vm_pgoff` test).
    pub fn pgoff_continues_into(&self, next: &Vma, page_shift: u32) -> bool {
        self.pgoff(page_shift) + self.pages(page_shift) == next.pgoff(page_shift)
    }
    /// Linux `anon_vma_compatible`: whether `next`, right after `self`,
    /// may share its anon_vma. Like a merge, but the access flags
    /// (read/write/exec) may differ.
    pub fn anon_vma_compatible(&self, next: &Vma, page_shift: u32) -> bool {
        self.end == next.start
            && self.shared == next.shared
            && self.flags == next.flags
            && self.same_file(next)
            && self.pgoff_continues_into(next, page_shift)
    }
}

impl Vmas {
    /// An anon_vma a neighbour of `vma` already has that `vma` may share
    /// (Linux `find_mergeable_anon_vma`: the next VMA first, then the
    /// previous one, each if `anon_vma_compatible`; without fork every
    /// anon_vma is reusable).
    pub fn mergeable_anon_vma(&self, vma: &Vma, page_shift: u32) -> Option<u64> {
        let next = self
            .starting_at(vma.end)
            .filter(|n| vma.anon_vma_compatible(n, page_shift))
            .and_then(|n| n.anon_vma.get());
        next.or_else(|| {
            self.ending_at(vma.start)
                .filter(|p| p.anon_vma_compatible(vma, page_shift))
                .and_then(|p| p.anon_vma.get())
        })
    }
    /// Whether `prev` and `next`, `prev` first, may become one VMA (Linux
    /// `can_vma_merge_after` / `can_vma_merge_before`): adjacent, the same
    /// flags and file (`is_mergeable_vma`), contiguous page offsets, and
    /// anon_vmas that do not conflict (`is_mergeable_anon_vma`).
    pub fn can_merge(prev: &Vma, next: &Vma, page_shift: u32) -> bool {
        prev.end == next.start
            && prev.is_mergeable(next)
            && prev.pgoff_continues_into(next, page_shift)
            && anon_vmas_mergeable(prev.anon_vma.get(), next.anon_vma.get())
    }
    /// The neighbours `v` would merge with: the VMA ending at `v.start`
    /// (if `left`) and the one starting at `v.end` (if `right`), each if
    /// [`Vmas::can_merge`]; the next one only if its anon_vma and the
    /// previous one's do not conflict either (Linux `can_vma_merge_right`).
    fn merge_partners(
        &self,
        v: &Vma,
        left: bool,
        right: bool,
        ps: u32,
    ) -> (Option<Vma>, Option<Vma>) {
        let prev = self
            .ending_at(v.start)
            .filter(|p| left && Self::can_merge(p, v, ps))
            .cloned();
        let next = self
            .starting_at(v.end)
            .filter(|n| right && Self::can_merge(v, n, ps))
            .filter(|n| {
                prev.as_ref()
                    .is_none_or(|p| anon_vmas_mergeable(p.anon_vma.get(), n.anon_vma.get()))
            })
            .cloned();
        (prev, next)
    }
    /// Adds a new mapping (no VMA overlaps it), merged with the VMAs
    /// before and after it when they are compatible (Linux
    /// `vma_merge_new_range`; a new mapping has no anon_vma). Returns the
    /// start of the VMA that holds it.
    pub(crate) fn insert_merging(&mut self, v: Vma, page_shift: u32) -> u64 {
        let (prev, next) = self.merge_partners(&v, true, true, page_shift);
        match (prev, next) {
            (Some(p), Some(n)) => {
                self.remove(n.start);
                let grown = self.get_mut(p.start).expect("found above");
                grown.end = n.end;
                grown.anon_vma.take_if_none(n.anon_vma.get());
                p.start
            }
            (Some(p), None) => {
                self.get_mut(p.start).expect("found above").end = v.end;
                p.start
            }
            (None, Some(n)) => {
                self.remove(n.start);
                let mut grown = n;
                grown.start = v.start;
                grown.backing = v.backing;
                self.insert(grown);
                v.start
            }
            (None, None) => {
                let start = v.start;
                self.insert(v);
                start
            }
        }
    }
    /// Gives `[start, end)`, which lies inside one VMA, the attributes `f`
    /// sets (which differ from the VMA's), merging it into the VMA before
    /// or after it when Linux would, else splitting it out (Linux
    /// `vma_modify`: `vma_merge_existing_range`, then `split_vma` at each
    /// end). Returns the start of the VMA that holds `[start, end)` after.
    /// Huge PMDs straddling `start` or `end` are the caller's
    /// (`AddressSpace::vma_modify`).
    // Linux: mm/vma.c, vma_modify + vma_merge_existing_range
    pub(crate) fn modify(
        &mut self,
        start: u64,
        end: u64,
        page_shift: u32,
        f: impl FnOnce(&mut Vma),
    ) -> u64 {
        let mid = self.find(start).cloned().expect("modify inside a VMA");
        debug_assert!(start < end && end <= mid.end, "one VMA's range");
        let mut p = mid.piece(start, end, page_shift);
        f(&mut p);
        // Merging is possible only at a side of the range that is a side
        // of the VMA.
        let (left, right) = (start == mid.start, end == mid.end);
        let (prev, next) = self.merge_partners(&p, left, right, page_shift);
        let mid_anon = mid.anon_vma.get();
        match (prev, next) {
            (Some(pv), Some(nx)) => {
                // prev grows over middle and next, which go.
                self.remove(mid.start);
                self.remove(nx.start);
                let grown = self.get_mut(pv.start).expect("found above");
                grown.end = nx.end;
                grown.anon_vma.take_if_none(nx.anon_vma.get().or(mid_anon));
                pv.start
            }
            (Some(pv), None) => {
                // prev grows over [start, end); middle shrinks or goes.
                self.remove(mid.start);
                if !right {
                    self.insert(mid.piece(end, mid.end, page_shift));
                }
                let grown = self.get_mut(pv.start).expect("found above");
                grown.end = end;
                grown.anon_vma.take_if_none(mid_anon);
                pv.start
            }
            (None, Some(nx)) => {
                // next grows down over [start, end); middle shrinks or goes.
                self.remove(nx.start);
                if left {
                    self.remove(mid.start);
                } else {
                    self.get_mut(mid.start).expect("found above").end = start;
                }
                let mut grown = nx;
                grown.start = start;
                grown.backing = p.backing;
                grown.anon_vma.take_if_none(mid_anon);
                self.insert(grown);
                start
            }
            (None, None) => {
                self.split_at(start, page_shift);
                self.split_at(end, page_shift);
                self.insert(p);
                start
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::{MemObject, ObjectKind};
    use crate::vma::{AnonVma, Prot, VmaFlags};
    use pt::PhysMem;

    const P: u64 = 4096;
    const PS: u32 = 12;

    fn anon(start: u64, end: u64, prot: Prot) -> Vma {
        Vma {
            start,
            end,
            prot,
            shared: false,
            backing: Backing::Anon,
            flags: VmaFlags::default(),
            anon_vma: AnonVma::default(),
        }
    }

    fn file(obj: &Arc<MemObject>, start: u64, end: u64, pgoff: u64) -> Vma {
        Vma {
            backing: Backing::Object {
                obj: obj.clone(),
                pgoff,
            },
            ..anon(start, end, Prot::RW)
        }
    }

    fn object() -> Arc<MemObject> {
        Arc::new(MemObject::new(
            ObjectKind::File,
            false,
            Arc::new(PhysMem::new(PS)),
        ))
    }

    /// (start, end) of every VMA.
    fn layout(v: &Vmas) -> Vec<(u64, u64)> {
        v.iter().map(|v| (v.start / P, v.end / P)).collect()
    }

    #[test]
    fn restoring_the_protection_merges_the_three_pieces_again() {
        let mut v = Vmas::default();
        v.insert_merging(anon(0, 16 * P, Prot::RW), PS);
        v.modify(4 * P, 8 * P, PS, |x| x.prot = Prot::R);
        assert_eq!(layout(&v), [(0, 4), (4, 8), (8, 16)]);
        let holder = v.modify(4 * P, 8 * P, PS, |x| x.prot = Prot::RW);
        assert_eq!(holder, 0);
        assert_eq!(layout(&v), [(0, 16)]);
        // A piece at the start that takes the next VMA's protection joins it
        // (merge right, the middle shrinks), and the other way round.
        v.modify(0, 8 * P, PS, |x| x.prot = Prot::R);
        v.modify(4 * P, 8 * P, PS, |x| x.prot = Prot::RW);
        assert_eq!(layout(&v), [(0, 4), (4, 16)]);
        assert_eq!(v.find(5 * P).unwrap().prot, Prot::RW);
        v.modify(4 * P, 6 * P, PS, |x| x.prot = Prot::R);
        assert_eq!(layout(&v), [(0, 6), (6, 16)]);
        assert_eq!(v.find(5 * P).unwrap().prot, Prot::R);
    }

    #[test]
    fn different_flags_do_not_merge() {
        let mut v = Vmas::default();
        v.insert_merging(anon(0, 16 * P, Prot::RW), PS);
        v.modify(4 * P, 8 * P, PS, |x| x.prot = Prot::R);
        v.modify(4 * P, 8 * P, PS, |x| x.prot = Prot::RX);
        assert_eq!(layout(&v), [(0, 4), (4, 8), (8, 16)]);
        v.modify(4 * P, 8 * P, PS, |x| {
            x.prot = Prot::RW;
            x.flags.locked = true;
        });
        assert_eq!(layout(&v), [(0, 4), (4, 8), (8, 16)]);
        // A new mapping next to one with another protection, or another
        // MAP_NORESERVE, stays apart; next to an equal one, it merges.
        v.insert_merging(anon(16 * P, 20 * P, Prot::R), PS);
        let mut nr = anon(20 * P, 24 * P, Prot::R);
        nr.flags.noreserve = true;
        v.insert_merging(nr, PS);
        assert_eq!(layout(&v), [(0, 4), (4, 8), (8, 16), (16, 20), (20, 24)]);
        v.insert_merging(anon(24 * P, 28 * P, Prot::R), PS);
        assert_eq!(layout(&v).len(), 6);
        v.insert_merging(anon(28 * P, 32 * P, Prot::R), PS);
        assert_eq!(layout(&v).last(), Some(&(24, 32)));
    }

    #[test]
    fn a_new_mapping_between_two_equal_ones_merges_all_three() {
        let mut v = Vmas::default();
        v.insert_merging(anon(0, 4 * P, Prot::RW), PS);
        v.insert_merging(anon(8 * P, 12 * P, Prot::RW), PS);
        assert_eq!(layout(&v), [(0, 4), (8, 12)]);
        assert_eq!(v.insert_merging(anon(4 * P, 8 * P, Prot::RW), PS), 0);
        assert_eq!(layout(&v), [(0, 12)]);
    }

    #[test]
    fn file_pieces_merge_only_at_contiguous_offsets_of_the_same_file() {
        let obj = object();
        let mut v = Vmas::default();
        v.insert_merging(file(&obj, 0, 4 * P, 0), PS);
        // Same file, offset 10 after pages 0..4: not contiguous.
        v.insert_merging(file(&obj, 4 * P, 8 * P, 10), PS);
        assert_eq!(layout(&v), [(0, 4), (4, 8)]);
        // Another file at the contiguous offset: not the same file.
        v.insert_merging(file(&object(), 8 * P, 12 * P, 14), PS);
        assert_eq!(layout(&v).len(), 3);
        // The first file continuing the second one's offsets, but after the
        // other file's VMA: not adjacent to its own.
        v.insert_merging(file(&obj, 12 * P, 16 * P, 14), PS);
        assert_eq!(layout(&v).len(), 4);
        let mut w = Vmas::default();
        w.insert_merging(file(&obj, 0, 4 * P, 0), PS);
        w.insert_merging(file(&obj, 4 * P, 8 * P, 4), PS);
        assert_eq!(layout(&w), [(0, 8)]);
        // A split advances the upper piece's offset, so restoring merges.
        w.modify(2 * P, 3 * P, PS, |x| x.prot = Prot::R);
        assert_eq!(w.find(3 * P).unwrap().pgoff(PS), 3);
        w.modify(2 * P, 3 * P, PS, |x| x.prot = Prot::RW);
        assert_eq!(layout(&w), [(0, 8)]);
        assert_eq!(w.find(7 * P).unwrap().pgoff_of(7 * P, PS), 7);
    }

    #[test]
    fn different_anon_vmas_do_not_merge() {
        let mut v = Vmas::default();
        v.insert_merging(anon(0, 16 * P, Prot::RW), PS);
        v.modify(4 * P, 8 * P, PS, |x| x.prot = Prot::R);
        v.find(0).unwrap().anon_vma.install(1);
        v.find(8 * P).unwrap().anon_vma.install(2);
        // The middle has none: it may join either side, but prev and next
        // conflict, so only prev takes it (Linux `can_vma_merge_right`).
        v.modify(4 * P, 8 * P, PS, |x| x.prot = Prot::RW);
        assert_eq!(layout(&v), [(0, 8), (8, 16)]);
        assert!(!Vmas::can_merge(
            v.find(0).unwrap(),
            v.find(8 * P).unwrap(),
            PS
        ));
        // Pieces split from one VMA share its anon_vma and merge again.
        v.modify(10 * P, 12 * P, PS, |x| x.prot = Prot::R);
        assert_eq!(v.find(10 * P).unwrap().anon_vma.get(), Some(2));
        v.modify(10 * P, 12 * P, PS, |x| x.prot = Prot::RW);
        assert_eq!(layout(&v), [(0, 8), (8, 16)]);
        // One side without an anon_vma merges, and the merged VMA has the
        // other's (Linux `dup_anon_vma`).
        let mut w = Vmas::default();
        w.insert_merging(anon(0, 4 * P, Prot::R), PS);
        w.insert_merging(anon(4 * P, 8 * P, Prot::RW), PS);
        w.find(4 * P).unwrap().anon_vma.install(7);
        w.modify(0, 4 * P, PS, |x| x.prot = Prot::RW);
        assert_eq!(layout(&w), [(0, 8)]);
        assert_eq!(w.find(0).unwrap().anon_vma.get(), Some(7));
    }

    #[test]
    fn a_neighbours_anon_vma_is_reused_only_if_just_the_access_flags_differ() {
        let mut v = Vmas::default();
        v.insert_merging(anon(0, 4 * P, Prot::RW), PS);
        v.insert_merging(anon(4 * P, 8 * P, Prot::R), PS);
        let mut locked = anon(8 * P, 12 * P, Prot::R);
        locked.flags.locked = true;
        v.insert_merging(locked, PS);
        v.find(0).unwrap().anon_vma.install(5);
        let mid = v.find(4 * P).unwrap();
        assert_eq!(v.mergeable_anon_vma(mid, PS), Some(5));
        let last = v.find(8 * P).unwrap();
        assert_eq!(v.mergeable_anon_vma(last, PS), None);
        // The next VMA is tried first.
        v.find(8 * P).unwrap().anon_vma.install(6);
        let mut w = Vmas::default();
        w.insert_merging(anon(0, 4 * P, Prot::RW), PS);
        w.insert_merging(anon(4 * P, 8 * P, Prot::R), PS);
        w.insert_merging(anon(8 * P, 12 * P, Prot::RW), PS);
        w.find(0).unwrap().anon_vma.install(5);
        w.find(8 * P).unwrap().anon_vma.install(6);
        assert_eq!(w.mergeable_anon_vma(w.find(4 * P).unwrap(), PS), Some(6));
    }
}
