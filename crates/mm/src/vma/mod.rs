//! Virtual memory areas: what is mapped where, with which protection and
//! backing, kept in an ordered map by start address; with Linux's rules
//! for splitting them and merging them again.
//!
//! ## Invariants
//! - VMAs do not overlap; each is non-empty and page-aligned.
//! - VMAs merge when Linux 6.18 merges them, by its rules (the `merge`
//!   module): a new mapping with compatible neighbours, and part of a VMA
//!   given new flags with the VMA before or after it. Adjacent VMAs that
//!   could merge may still exist, as in Linux, which tries only on those
//!   changes. Which VMAs exist changes counters: PT reclaim needs one VMA's
//!   MADV_DONTNEED to cover a whole PTE table, a THP needs one VMA over its
//!   aligned range, and fault-around stops at a VMA's ends.
//! - A private anonymous VMA's page offset is its start in pages (Linux
//!   sets `vm_pgoff = addr >> PAGE_SHIFT` for anonymous mmaps), so
//!   anonymous neighbours are always contiguous. Linux keeps a faulted VMA's
//!   offset when mremap moves it; the model does not (a known limit: a
//!   moved VMA may merge with a new neighbour where Linux's would not).
//! - The map changes only through `insert`, `remove` and `get_mut`, and
//!   each bumps `seq`: a VMA found while `seq` had a value is still at the
//!   same address, unchanged, while `seq` keeps it (what the per-thread
//!   lookup cache of `Vmas::find_cached`, in [`crate::accel`], relies on).
//!   The one exception is the anon_vma slot, which faults fill in under the
//!   mmap lock held for reading (an atomic, as Linux fills `vma->anon_vma`
//!   under `page_table_lock`): it goes from none to some, never back.

mod anon_vma;
mod merge;

pub use anon_vma::{anon_vmas_mergeable, AnonVma};

use crate::cache::{MemObject, ObjectKind};
use std::collections::BTreeMap;
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
    /// VM_LOCKONFAULT (mlock2's MLOCK_ONFAULT, beside `locked`): the range
    /// is locked but not populated; pages are locked as they fault in.
    pub lockonfault: bool,
    /// VM_DONTCOPY (MADV_DONTFORK): fork does not give the child this VMA.
    pub dontcopy: bool,
    /// VM_WIPEONFORK (MADV_WIPEONFORK): fork gives the child this VMA
    /// empty.
    pub wipeonfork: bool,
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
    /// The piece `[start, end)` of this VMA as a VMA of its own (Linux
    /// `__split_vma`'s copy, with `vm_pgoff` advanced for the upper part).
    pub(super) fn piece(&self, start: u64, end: u64, page_shift: u32) -> Vma {
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
}
