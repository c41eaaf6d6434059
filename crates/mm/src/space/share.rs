//! Anonymous memory shared between address spaces by fork: how many
//! spaces hold a frame, and which of this space's anonymous pages may be
//! mapped by another (Linux: the folio's reference and map counts, and
//! `PageAnonExclusive`).
//!
//! # Invariants
//!
//! 1. [`AnonShares`] is one table per family of address spaces (a space
//!    made by [`AddressSpace::fork`] holds its parent's). An entry `head ->
//!    n` says that `n + 1` holders keep the anonymous frame at `head`: for
//!    a base page, each holder is one PTE (in any space of the family); for
//!    a large folio, each holder is one space whose `folios` map has it.
//!    A frame without an entry has one holder, and is freed when that one
//!    lets go: the fast path of a process that never forked.
//! 2. `not_exclusive` (per space) holds the pages (base page address, or a
//!    PMD-mapped folio's head) whose `PageAnonExclusive` Linux clears at
//!    fork: such a page may be mapped by another process, so mprotect does
//!    not make it writable (`can_change_pte_writable`) and a write fault
//!    decides between copy and reuse by the holders count
//!    (`wp_can_reuse_anon_folio`). A reuse sets the page exclusive again;
//!    an unmap forgets it.

use super::{lock_plain, AddressSpace};
use pt::sync::Mutex;
use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Extra holders of anonymous frames shared by fork (invariant 1).
#[derive(Debug, Default)]
pub(crate) struct AnonShares {
    pub(crate) extra: Mutex<HashMap<u64, u64>>,
    /// Entries in `extra` (read without the lock on the fast path).
    len: AtomicUsize,
    /// Spaces of the family not yet exited.
    live: AtomicUsize,
    /// Base pages of large anonymous folios that a write has reached (see
    /// [`WrittenPages`]).
    pub(crate) written: WrittenPages,
    /// The family's spaces, for the reverse map of page-cache pages (see
    /// `rmap`).
    pub(crate) members: RmapMembers,
    /// The family's swap device and swap cache.
    pub(crate) swap: crate::swap::SwapDevice,
}

/// The spaces of a family that joined its reverse map (weak: a space that
/// is gone is skipped).
#[derive(Default)]
pub(crate) struct RmapMembers(pub(crate) Mutex<Vec<std::sync::Weak<dyn super::FamilyMember>>>);

impl std::fmt::Debug for RmapMembers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RmapMembers").finish_non_exhaustive()
    }
}

/// The base pages of large anonymous folios whose contents a write has
/// made nonzero. The model keeps no data; Linux's folio split asks whether
/// a subpage is all zero (`try_to_map_unused_to_zeropage`, memchr_inv), and
/// in a workload a page is nonzero exactly when a write touched it (every
/// write stores a nonzero byte; faults and populate only zero pages). Kept
/// per family, as a frame is one frame whichever space maps it; a new large
/// folio forgets the stale entries of its frames (`forget`).
#[derive(Debug, Default)]
pub(crate) struct WrittenPages {
    pages: Mutex<HashSet<u64>>,
    len: AtomicUsize,
}

impl WrittenPages {
    /// A write reached base page `pa`.
    pub(crate) fn insert(&self, pa: u64) {
        if lock_plain(&self.pages).insert(pa) {
            self.len.fetch_add(1, Ordering::Release);
        }
    }

    /// Whether a write reached base page `pa`.
    pub(crate) fn contains(&self, pa: u64) -> bool {
        self.len.load(Ordering::Acquire) != 0 && lock_plain(&self.pages).contains(&pa)
    }

    /// Forgets the base pages of `[head, head + size)` (a folio freed,
    /// split, or newly allocated there, zero-filled).
    pub(crate) fn forget(&self, head: u64, size: u64, page: u64) {
        if self.len.load(Ordering::Acquire) == 0 {
            return;
        }
        let mut m = lock_plain(&self.pages);
        let mut pa = head;
        while pa < head + size {
            if m.remove(&pa) {
                self.len.fetch_sub(1, Ordering::Release);
            }
            pa += page;
        }
    }
}

impl AnonShares {
    /// The table of a new family, of one space.
    pub(crate) fn new_family() -> AnonShares {
        AnonShares {
            live: AtomicUsize::new(1),
            ..AnonShares::default()
        }
    }

    /// A space joins (fork) or leaves (exit) the family.
    pub(crate) fn join(&self) {
        self.live.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn leave(&self) {
        self.live.fetch_sub(1, Ordering::AcqRel);
    }

    /// Whether no other live space of the family could map a page-cache
    /// page this one maps (the family is this space alone).
    pub(crate) fn alone(&self) -> bool {
        self.live.load(Ordering::Acquire) <= 1
    }

    /// One more holder of the frame at `head` (Linux `folio_try_dup_anon_rmap_*`
    /// taking a reference).
    pub(crate) fn get(&self, head: u64) {
        let mut m = lock_plain(&self.extra);
        let n = m.entry(head).or_insert(0);
        if *n == 0 {
            self.len.fetch_add(1, Ordering::Release);
        }
        *n += 1;
    }

    /// One holder of `head` lets go (Linux `folio_put`): `true` if another
    /// still holds it (the frame must not be freed).
    pub(crate) fn put(&self, head: u64) -> bool {
        if self.len.load(Ordering::Acquire) == 0 {
            return false;
        }
        let mut m = lock_plain(&self.extra);
        match m.get_mut(&head) {
            None => false,
            Some(n) => {
                *n -= 1;
                if *n == 0 {
                    m.remove(&head);
                    self.len.fetch_sub(1, Ordering::Release);
                }
                true
            }
        }
    }

    /// Whether another holder keeps `head` (Linux: `folio_ref_count > 1`
    /// once the caller's own reference is accounted for).
    pub(crate) fn shared(&self, head: u64) -> bool {
        self.len.load(Ordering::Acquire) != 0 && lock_plain(&self.extra).contains_key(&head)
    }

    /// Frames with more than one holder (for tests: 0 once every child has
    /// exited and the parent unmapped or reused what it shared).
    pub(crate) fn len(&self) -> usize {
        self.len.load(Ordering::Acquire)
    }
}

/// The per-space set of invariant 2.
#[derive(Debug, Default)]
pub(crate) struct NotExclusive {
    pages: Mutex<HashSet<u64>>,
    len: AtomicUsize,
}

impl NotExclusive {
    /// Linux: fork clears `PageAnonExclusive` (`folio_try_dup_anon_rmap_*`).
    pub(crate) fn insert(&self, pa: u64) {
        if lock_plain(&self.pages).insert(pa) {
            self.len.fetch_add(1, Ordering::Release);
        }
    }

    /// Forgets `pa` (unmapped, or reused and exclusive again); whether it
    /// was there.
    pub(crate) fn remove(&self, pa: u64) -> bool {
        if self.len.load(Ordering::Acquire) == 0 {
            return false;
        }
        let removed = lock_plain(&self.pages).remove(&pa);
        if removed {
            self.len.fetch_sub(1, Ordering::Release);
        }
        removed
    }

    /// Whether the page at `pa` is exclusive (`PageAnonExclusive`).
    pub(crate) fn exclusive(&self, pa: u64) -> bool {
        self.len.load(Ordering::Acquire) == 0 || !lock_plain(&self.pages).contains(&pa)
    }
}

impl AddressSpace {
    /// Frames shared with another space of this family (0 when none).
    pub fn shared_frames(&self) -> usize {
        self.shares.len()
    }

    /// The head of the large anonymous folio containing `pa` in this
    /// space, with its size, if `pa` is part of one.
    pub(crate) fn folio_of(&self, pa: u64) -> Option<(u64, u64)> {
        if self.nr_folios.load(Ordering::Acquire) == 0 {
            return None;
        }
        let f = lock_plain(&self.folios);
        // Only the sizes a folio can have here: the PMD's (THP) and the
        // configured mTHP sizes (one lookup under the default config).
        let sizes = std::iter::once(self.pmd_size).chain(self.mthp.iter().map(|m| m.0));
        for size in sizes {
            let head = pa & !(size - 1);
            if let Some(folio) = f.get(&head) {
                if folio.size == size {
                    return Some((head, size));
                }
            }
        }
        None
    }

    /// The frame whose holders count decides a write fault on `pa`: its
    /// large folio's head, or the page itself.
    pub(crate) fn share_head(&self, pa: u64) -> u64 {
        self.folio_of(pa).map_or(pa, |(head, _)| head)
    }
}
