//! Virtual memory areas: what is mapped where, with which protection and
//! backing, kept in an ordered map by start address; with Linux's rules
//! for splitting them and merging them again.
//!
//! ## Invariants
//! - VMAs do not overlap; each is non-empty and page-aligned.
//! - Adjacent VMAs are merged when Linux would merge them: when a new
//!   mapping lands next to a compatible one (`vma_merge_new_range`) and when
//!   mprotect, mlock or madvise gives part of a VMA the attributes of its
//!   neighbour (`vma_merge_existing_range`). Two VMAs merge only with equal
//!   flags, the same file at contiguous page offsets, and anon_vmas that are
//!   compatible ([`Vmas::can_merge`]). Adjacent VMAs that could merge may
//!   still exist (Linux does not merge on every change either).
//!   Merging changes counters: PT reclaim needs one VMA's MADV_DONTNEED to
//!   cover a whole PTE table, a THP needs one VMA over its aligned range,
//!   and fault-around stops at a VMA's ends.
//! - A private anonymous VMA's page offset is its start in pages (Linux
//!   sets `vm_pgoff = addr >> PAGE_SHIFT` for anonymous mmaps, and the model
//!   has no mremap), so anonymous neighbours are always contiguous.
//! - The map changes only through `insert`, `remove` and `get_mut`, and
//!   each bumps `seq`: a VMA found while `seq` had a value is still at the
//!   same address, unchanged, while `seq` keeps it (what the per-thread
//!   lookup cache of `Vmas::find_cached`, in [`crate::accel`], relies on).
//!   The one exception is the anon_vma slot, which faults fill in under the
//!   mmap lock held for reading (an atomic, as Linux fills `vma->anon_vma`
//!   under `page_table_lock`): it goes from none to some, never back.

use crate::cache::{MemObject, ObjectKind};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Access rights of a mapping (PROT_READ/WRITE/EXEC).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
pub struct Prot {
    pub read: bool,
    pub write: bool,
    pub exec: bool,
}

impl Prot {
    pub const NONE: Prot = Prot {
        read: false,
        write: false,
        exec: false,
    };
    pub const R: Prot = Prot {
        read: true,
        write: false,
        exec: false,
    };
    pub const RW: Prot = Prot {
        read: true,
        write: true,
        exec: false,
    };
    pub const RX: Prot = Prot {
        read: true,
        write: false,
        exec: true,
    };
    pub const RWX: Prot = Prot {
        read: true,
        write: true,
        exec: true,
    };
    /// Whether any access is allowed (Linux `vma_is_accessible`).
    pub fn accessible(&self) -> bool {
        self.read || self.write || self.exec
    }
    /// A number for each of the 8 protections (read 1, write 2, exec 4).
    #[inline]
    pub fn index(&self) -> usize {
        usize::from(self.read) | usize::from(self.write) << 1 | usize::from(self.exec) << 2
    }
    /// The protection with number `i` (see [`Prot::index`]).
    pub fn from_index(i: usize) -> Prot {
        Prot {
            read: i & 1 != 0,
            write: i & 2 != 0,
            exec: i & 4 != 0,
        }
    }
}

/// What backs a VMA.
#[derive(Debug, Clone)]
pub enum Backing {
    /// Private anonymous memory.
    Anon,
    /// A file or shmem object, from page `pgoff` of it.
    Object { obj: Arc<MemObject>, pgoff: u64 },
}

/// Flags of a VMA besides its protection and MAP_SHARED: the ones madvise
/// and mlock change, and the commit-accounting ones (which decide merges
/// as much as the others do: Linux compares every `vm_flags` bit).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VmaFlags {
    /// VM_LOCKED.
    pub locked: bool,
    /// VM_HUGEPAGE (MADV_HUGEPAGE).
    pub hugepage: bool,
    /// VM_NOHUGEPAGE (MADV_NOHUGEPAGE).
    pub nohugepage: bool,
    /// VM_ACCOUNT: the mapping is charged to the commit limit (a private
    /// writable mapping without MAP_NORESERVE, or one mprotect made
    /// writable).
    pub account: bool,
    /// VM_NORESERVE (MAP_NORESERVE).
    pub noreserve: bool,
}

/// Source of anon_vma identities (0 means none).
static NEXT_ANON_VMA: AtomicU64 = AtomicU64::new(1);

/// A VMA's `anon_vma` (Linux `vma->anon_vma`): the identity of the reverse
/// map its anonymous pages hang on, if it has one yet. A VMA gets one when
/// its first anonymous page is about to be mapped (`anon_vma_prepare`);
/// pieces split from a VMA share its anon_vma; a merge keeps the one of
/// whichever side had it. Only its identity matters here (it decides
/// merges), so it is a number.
#[derive(Debug, Default)]
pub struct AnonVma(AtomicU64);

impl AnonVma {
    fn of(id: Option<u64>) -> AnonVma {
        AnonVma(AtomicU64::new(id.unwrap_or(0)))
    }
    /// The anon_vma's identity, if the VMA has one.
    pub fn get(&self) -> Option<u64> {
        match self.0.load(Ordering::Acquire) {
            0 => None,
            id => Some(id),
        }
    }
    /// A new identity, shared by no VMA yet (Linux `anon_vma_alloc`).
    pub(crate) fn fresh() -> u64 {
        NEXT_ANON_VMA.fetch_add(1, Ordering::Relaxed)
    }
    /// Sets the anon_vma to `id` unless the VMA has one already (another
    /// fault won the race: Linux re-checks `vma->anon_vma` under
    /// `page_table_lock`); returns the one it has.
    pub(crate) fn install(&self, id: u64) -> u64 {
        match self
            .0
            .compare_exchange(0, id, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => id,
            Err(old) => old,
        }
    }
    /// Linux `dup_anon_vma`: a VMA growing over another's range takes that
    /// one's anon_vma if it had none (under the mmap write lock).
    fn take_if_none(&self, other: Option<u64>) {
        if self.get().is_none() {
            if let Some(id) = other {
                self.0.store(id, Ordering::Release);
            }
        }
    }
}

impl Clone for AnonVma {
    /// A copy of the identity (a split shares the anon_vma; the slots stay
    /// separate, so a later fault filling one does not fill the other).
    fn clone(&self) -> AnonVma {
        AnonVma::of(self.get())
    }
}

/// Linux `is_mergeable_anon_vma` (without fork, no VMA has parents): two
/// ranges can become one VMA unless both already have different anon_vmas.
pub fn anon_vmas_mergeable(a: Option<u64>, b: Option<u64>) -> bool {
    a.is_none() || b.is_none() || a == b
}

/// One mapping.
#[derive(Debug, Clone)]
pub struct Vma {
    pub start: u64,
    pub end: u64,
    pub prot: Prot,
    /// MAP_SHARED (shmem is always shared).
    pub shared: bool,
    pub backing: Backing,
    pub flags: VmaFlags,
    pub anon_vma: AnonVma,
}

impl Vma {
    /// Linux `vma_is_anonymous` for a private mapping: THP and MADV_FREE apply.
    pub fn is_anon(&self) -> bool {
        matches!(self.backing, Backing::Anon)
    }
    pub fn object(&self) -> Option<&Arc<MemObject>> {
        match &self.backing {
            Backing::Anon => None,
            Backing::Object { obj, .. } => Some(obj),
        }
    }
    pub fn is_shmem(&self) -> bool {
        self.object().is_some_and(|o| o.kind == ObjectKind::Shmem)
    }
    /// The object page index of `va`.
    pub fn pgoff_of(&self, va: u64, page_shift: u32) -> u64 {
        match &self.backing {
            Backing::Anon => (va - self.start) >> page_shift,
            Backing::Object { pgoff, .. } => pgoff + ((va - self.start) >> page_shift),
        }
    }
    /// Pages of the object this VMA can reach (from its pgoff).
    pub fn pages(&self, page_shift: u32) -> u64 {
        (self.end - self.start) >> page_shift
    }
    /// Linux `vm_pgoff`: the object page mapped at `start`; for anonymous
    /// memory its start in pages (see the module invariants).
    pub fn pgoff(&self, page_shift: u32) -> u64 {
        match &self.backing {
            Backing::Anon => self.start >> page_shift,
            Backing::Object { pgoff, .. } => *pgoff,
        }
    }
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
    /// The piece `[start, end)` of this VMA as a VMA of its own (Linux
    /// `__split_vma`'s copy, with `vm_pgoff` advanced for the upper part).
    fn piece(&self, start: u64, end: u64, page_shift: u32) -> Vma {
        let mut p = self.clone();
        p.start = start;
        p.end = end;
        if let Backing::Object { pgoff, .. } = &mut p.backing {
            *pgoff += (start - self.start) >> page_shift;
        }
        p
    }
    /// Whether a shared mapping write-protects clean pages to track dirtying
    /// (Linux `vma_wants_writenotify`: regular files yes, shmem no).
    pub fn writenotify(&self) -> bool {
        self.shared && self.object().is_some_and(|o| o.kind == ObjectKind::File)
    }
}

/// The VMAs of one address space.
#[derive(Debug, Default)]
pub struct Vmas {
    map: BTreeMap<u64, Vma>,
    /// Bumped on every change (lets lookups be cached by callers).
    pub(crate) seq: u64,
}

impl Vmas {
    /// The VMA containing `va` (Linux `vma_lookup`).
    #[inline]
    pub fn find(&self, va: u64) -> Option<&Vma> {
        self.map
            .range(..=va)
            .next_back()
            .map(|(_, v)| v)
            .filter(|v| va < v.end)
    }
    /// Every VMA overlapping `[start, end)`, in order.
    pub fn overlapping(&self, start: u64, end: u64) -> impl Iterator<Item = &Vma> {
        let first = self.find(start).map_or(start, |v| v.start);
        self.map.range(first..end).map(|(_, v)| v)
    }
    /// The end of the last VMA ending at or before `va` (0 if none).
    pub fn prev_end(&self, va: u64) -> u64 {
        self.map
            .range(..va)
            .next_back()
            .map_or(0, |(_, v)| if v.end <= va { v.end } else { va })
    }
    /// The start of the first VMA starting at or after `va`, if any.
    pub fn next_start(&self, va: u64) -> Option<u64> {
        self.map.range(va..).next().map(|(s, _)| *s)
    }
    pub fn iter(&self) -> impl Iterator<Item = &Vma> {
        self.map.values()
    }
    pub fn len(&self) -> usize {
        self.map.len()
    }
    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }
    pub(crate) fn insert(&mut self, v: Vma) {
        self.seq += 1;
        self.map.insert(v.start, v);
    }
    pub(crate) fn remove(&mut self, start: u64) -> Option<Vma> {
        self.seq += 1;
        self.map.remove(&start)
    }
    pub(crate) fn get_mut(&mut self, start: u64) -> Option<&mut Vma> {
        self.seq += 1;
        self.map.get_mut(&start)
    }
    /// The VMA ending exactly at `addr`, if any.
    pub fn ending_at(&self, addr: u64) -> Option<&Vma> {
        self.map
            .range(..addr)
            .next_back()
            .map(|(_, v)| v)
            .filter(|v| v.end == addr)
    }
    /// The VMA starting exactly at `addr`, if any.
    pub fn starting_at(&self, addr: u64) -> Option<&Vma> {
        self.map.get(&addr)
    }
    /// Start addresses of the VMAs starting inside `[start, end)`.
    pub(crate) fn starts_in(&self, start: u64, end: u64) -> Vec<u64> {
        self.map.range(start..end).map(|(s, _)| *s).collect()
    }
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
    /// Splits the VMA straddling `addr` (if any) in two at `addr` (Linux
    /// `split_vma`); both pieces keep the anon_vma. Returns whether it
    /// split one. The huge PMDs straddling `addr` are the caller's
    /// (`AddressSpace::split_vma`).
    pub(crate) fn split_at(&mut self, addr: u64, page_shift: u32) -> bool {
        let Some(v) = self.find(addr).cloned() else {
            return false;
        };
        if v.start == addr {
            return false;
        }
        self.get_mut(v.start).expect("found above").end = addr;
        self.insert(v.piece(addr, v.end, page_shift));
        true
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

    #[test]
    fn a_clone_copies_the_anon_vma_but_not_the_slot() {
        let a = anon(0, P, Prot::RW);
        let b = a.clone();
        assert_eq!(a.anon_vma.install(3), 3);
        assert_eq!(b.anon_vma.get(), None);
        assert_eq!(a.anon_vma.install(4), 3, "the first install wins");
        assert_eq!(a.clone().anon_vma.get(), Some(3));
    }
}
