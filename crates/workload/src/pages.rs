//! The mapped parts of one region while the checker walks the ops: a sorted
//! list of disjoint byte intervals, each with the protection and lock state
//! the ops gave it.
//!
//! Invariants: intervals are sorted, disjoint, non-empty, 4 KiB aligned, and
//! two neighbours with equal attributes are merged, so two equal states
//! compare equal whatever ops led to them.

use crate::plan::Prot;

/// What the checker tracks of a mapped page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Attrs {
    pub prot: Prot,
    pub locked: bool,
    /// Locked by mlock2(MLOCK_ONFAULT) (VM_LOCKONFAULT, with `locked`): a
    /// VMA flag, so a range locked on fault and one locked whole are
    /// different VMAs.
    pub onfault: bool,
    /// The last `hugepage` (`Some(true)`) or `nohugepage` (`Some(false)`)
    /// advice: a VMA flag, so pages that differ in it are in different
    /// VMAs (what `mremap` needs to know).
    pub thp: Option<bool>,
    /// `dontfork` advice (VM_DONTCOPY): a fork's child does not get it.
    pub dontfork: bool,
    /// `wipeonfork` advice (VM_WIPEONFORK): a VMA flag like `thp`.
    pub wipeonfork: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct Pages {
    /// `(start, end, attrs)`, end exclusive.
    parts: Vec<(u64, u64, Attrs)>,
}

impl Pages {
    /// All of `0..size` mapped with `attrs`.
    pub fn mapped(size: u64, attrs: Attrs) -> Pages {
        Pages {
            parts: vec![(0, size, attrs)],
        }
    }

    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// The first offset in `start..end` that is not mapped, if any.
    pub fn first_hole(&self, start: u64, end: u64) -> Option<u64> {
        let mut at = start;
        for &(s, e, _) in &self.parts {
            if e <= at {
                continue;
            }
            if s > at {
                break;
            }
            at = e;
            if at >= end {
                return None;
            }
        }
        (at < end).then_some(at)
    }

    /// The first mapped offset in `start..end` whose attributes fail `ok`.
    pub fn first_where(
        &self,
        start: u64,
        end: u64,
        bad: impl Fn(Attrs) -> bool,
    ) -> Option<(u64, Attrs)> {
        self.parts
            .iter()
            .filter(|&&(s, e, a)| s < end && e > start && bad(a))
            .map(|&(s, _, a)| (s.max(start), a))
            .next()
    }

    /// Removes every part whose attributes satisfy `gone`.
    pub fn remove_where(&mut self, gone: impl Fn(Attrs) -> bool) {
        self.parts.retain(|&(_, _, a)| !gone(a));
    }

    /// Removes `start..end` (holes inside it are fine, as for munmap).
    pub fn remove(&mut self, start: u64, end: u64) {
        self.rewrite(start, end, |_| None);
    }

    /// Applies `f` to the attributes of the mapped parts of `start..end`.
    pub fn update(&mut self, start: u64, end: u64, f: impl Fn(Attrs) -> Attrs) {
        self.rewrite(start, end, |a| Some(f(a)));
    }

    /// Replaces each mapped part of `start..end` by what `f` makes of its
    /// attributes (`None`: unmapped), keeping the parts outside as they are.
    fn rewrite(&mut self, start: u64, end: u64, f: impl Fn(Attrs) -> Option<Attrs>) {
        let mut out: Vec<(u64, u64, Attrs)> = Vec::with_capacity(self.parts.len() + 2);
        for &(s, e, a) in &self.parts {
            if e <= start || s >= end {
                out.push((s, e, a));
                continue;
            }
            if s < start {
                out.push((s, start, a));
            }
            if let Some(b) = f(a) {
                out.push((s.max(start), e.min(end), b));
            }
            if e > end {
                out.push((end, e, a));
            }
        }
        // Merge equal neighbours so equal states have one representation.
        let mut merged: Vec<(u64, u64, Attrs)> = Vec::with_capacity(out.len());
        for part in out {
            match merged.last_mut() {
                Some(last) if last.1 == part.0 && last.2 == part.2 => last.1 = part.1,
                _ => merged.push(part),
            }
        }
        self.parts = merged;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RW: Attrs = Attrs {
        prot: Prot::Rw,
        locked: false,
        onfault: false,
        thp: None,
        dontfork: false,
        wipeonfork: false,
    };
    const R: Attrs = Attrs {
        prot: Prot::R,
        locked: false,
        onfault: false,
        thp: None,
        dontfork: false,
        wipeonfork: false,
    };

    #[test]
    fn holes_and_updates() {
        let mut p = Pages::mapped(10, RW);
        assert_eq!(p.first_hole(0, 10), None);
        p.remove(3, 5);
        assert_eq!(p.first_hole(0, 10), Some(3));
        assert_eq!(p.first_hole(5, 10), None);
        assert_eq!(p.first_hole(0, 3), None);
        p.update(2, 8, |a| Attrs { prot: Prot::R, ..a });
        assert_eq!(p.first_where(0, 10, |a| a.prot == Prot::R), Some((2, R)));
        assert_eq!(p.first_where(0, 2, |a| a.prot == Prot::R), None);
        p.update(0, 10, |a| Attrs {
            prot: Prot::Rw,
            ..a
        });
        p.remove(0, 3);
        p.remove(5, 10);
        assert!(p.is_empty());
    }

    #[test]
    fn equal_states_compare_equal() {
        let mut a = Pages::mapped(10, RW);
        a.update(2, 4, |x| Attrs { prot: Prot::R, ..x });
        a.update(2, 4, |x| Attrs {
            prot: Prot::Rw,
            ..x
        });
        assert_eq!(a, Pages::mapped(10, RW));
    }
}
