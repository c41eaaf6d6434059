//! A VMA's anon_vma, reduced to what decides merges: its identity.

use std::sync::atomic::{AtomicU64, Ordering};

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
    pub(super) fn of(id: Option<u64>) -> AnonVma {
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
    pub(super) fn take_if_none(&self, other: Option<u64>) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_clone_copies_the_anon_vma_but_not_the_slot() {
        let a = AnonVma::default();
        let b = a.clone();
        assert_eq!(a.install(3), 3);
        assert_eq!(b.get(), None);
        assert_eq!(a.install(4), 3, "the first install wins");
        assert_eq!(a.clone().get(), Some(3));
    }
}
