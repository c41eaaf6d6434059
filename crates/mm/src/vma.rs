//! Virtual memory areas: what is mapped where, with which protection and
//! backing, kept in an ordered map by start address.
//!
//! ## Invariants
//! - VMAs do not overlap; each is non-empty and page-aligned.
//! - Adjacent VMAs with equal attributes are not merged (Linux merges them;
//!   merging changes no counter this model reports).
//! - The map changes only through `insert`, `remove` and `get_mut`, and
//!   each bumps `seq`: a VMA found while `seq` had a value is still at the
//!   same address, unchanged, while `seq` keeps it (what the per-thread
//!   lookup cache of `Vmas::find_cached`, in [`crate::accel`], relies on).

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

/// Flags of a VMA that madvise and mlock change.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct VmaFlags {
    /// VM_LOCKED.
    pub locked: bool,
    /// VM_HUGEPAGE (MADV_HUGEPAGE).
    pub hugepage: bool,
    /// VM_NOHUGEPAGE (MADV_NOHUGEPAGE).
    pub nohugepage: bool,
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
    /// Splits the VMA straddling `addr` (if any) in two at `addr` (Linux
    /// `split_vma`).
    pub(crate) fn split_at(&mut self, addr: u64, page_shift: u32) {
        let Some(v) = self.find(addr).cloned() else {
            return;
        };
        if v.start == addr {
            return;
        }
        let mut hi = v.clone();
        hi.start = addr;
        if let Backing::Object { pgoff, .. } = &mut hi.backing {
            *pgoff += (addr - v.start) >> page_shift;
        }
        self.get_mut(v.start).expect("found above").end = addr;
        self.insert(hi);
    }
    /// Start addresses of the VMAs inside `[start, end)` after splitting at
    /// both ends.
    pub(crate) fn isolate(&mut self, start: u64, end: u64, page_shift: u32) -> Vec<u64> {
        self.split_at(start, page_shift);
        self.split_at(end, page_shift);
        self.map.range(start..end).map(|(s, _)| *s).collect()
    }
}
