//! Exact least-recently-used order of every set of a [`crate::cache::Cache`],
//! kept as one circular doubly linked list per set: a touch moves a way to
//! the front, the victim is the way at the back, both in constant time
//! whatever the associativity (a 72-way fully associative L1 TLB costs what
//! a 4-way set does).
//!
//! ## Invariants
//!
//! - Nodes `0..entries` are the ways (global entry indices); node
//!   `entries + s` is the sentinel of set `s`. Each set's list holds its
//!   sentinel and exactly the ways of that set.
//! - From the sentinel, `next` walks from the most to the least recently
//!   used way; the victim is the sentinel's `prev`.
//! - A new list is in index order with way 0 at the back, so an empty set
//!   fills its ways in order. An emptied way is moved to the back: empty
//!   ways are reused before any valid one.

/// The LRU lists of all sets of one array.
pub(crate) struct LruLists {
    /// `[next, prev]` of every node: both links of a node in one place.
    links: Box<[[u32; 2]]>,
    /// The sentinel of each way's set.
    home: Box<[u32]>,
    entries: usize,
    /// `sets - 1` (sets are a power of two).
    set_mask: usize,
}

const NEXT: usize = 0;
const PREV: usize = 1;

impl LruLists {
    pub(crate) fn new(sets: usize, ways: usize) -> LruLists {
        assert!(sets.is_power_of_two(), "{sets} sets");
        let entries = sets * ways;
        let nodes = entries + sets;
        assert!(u32::try_from(nodes).is_ok(), "{nodes} LRU nodes");
        let mut l = LruLists {
            links: vec![[0; 2]; nodes].into_boxed_slice(),
            home: vec![0; entries].into_boxed_slice(),
            entries,
            set_mask: sets - 1,
        };
        for s in 0..sets {
            let sentinel = (entries + s) as u32;
            l.links[sentinel as usize] = [sentinel, sentinel];
            // Pushing ways 0, 1, ... to the front leaves way 0 at the back.
            for w in 0..ways {
                let i = s * ways + w;
                l.home[i] = sentinel;
                l.push_front(sentinel as usize, i);
            }
        }
        l
    }

    /// Link `k` of node `n`.
    #[inline(always)]
    fn link(&self, n: usize, k: usize) -> usize {
        debug_assert!(n < self.links.len());
        // SAFETY: every caller passes a node index: a way below `entries`
        // (checked by the public methods) or a value read from `links` or
        // `home`, which hold only node indices (module invariant).
        (unsafe { *self.links.get_unchecked(n) })[k] as usize
    }

    #[inline(always)]
    fn set_link(&mut self, n: usize, k: usize, to: usize) {
        debug_assert!(n < self.links.len() && to < self.links.len());
        // SAFETY: as in `link`: `n` is a node index.
        (unsafe { self.links.get_unchecked_mut(n) })[k] = to as u32;
    }

    #[inline(always)]
    fn unlink(&mut self, i: usize) {
        let (n, p) = (self.link(i, NEXT), self.link(i, PREV));
        self.set_link(p, NEXT, n);
        self.set_link(n, PREV, p);
    }

    #[inline(always)]
    fn push_front(&mut self, sentinel: usize, i: usize) {
        let first = self.link(sentinel, NEXT);
        self.set_link(sentinel, NEXT, i);
        self.links[i] = [first as u32, sentinel as u32];
        self.set_link(first, PREV, i);
    }

    /// Way `i` was used: it becomes its set's most recent.
    #[inline(always)]
    pub(crate) fn touch(&mut self, i: usize) {
        let sentinel = self.home[i] as usize;
        self.touch_sentinel(sentinel, i);
    }

    /// [`LruLists::touch`] for a way `i` known to be in `set`.
    #[inline(always)]
    pub(crate) fn touch_in(&mut self, set: usize, i: usize) {
        debug_assert_eq!(self.home[i] as usize, self.entries + set);
        // Masked, the sentinel is a node index whatever `set` is.
        self.touch_sentinel(self.entries + (set & self.set_mask), i);
    }

    #[inline(always)]
    fn touch_sentinel(&mut self, sentinel: usize, i: usize) {
        // The unchecked link accesses below rely on both being nodes.
        assert!(i < self.entries);
        if self.link(sentinel, NEXT) == i {
            return; // already the most recent
        }
        self.unlink(i);
        self.push_front(sentinel, i);
    }

    /// Way `i` was emptied: it becomes its set's next victim.
    pub(crate) fn demote(&mut self, i: usize) {
        let sentinel = self.home[i] as usize;
        self.unlink(i);
        let last = self.link(sentinel, PREV);
        self.set_link(last, NEXT, i);
        self.links[i] = [sentinel as u32, last as u32];
        self.set_link(sentinel, PREV, i);
    }

    /// The least recently used way of `set`, made its most recent: what a
    /// fill into a full set does to the order ([`LruLists::victim`], then
    /// [`LruLists::touch_in`]), in one step.
    #[inline(always)]
    pub(crate) fn renew_victim(&mut self, set: usize) -> usize {
        let sentinel = self.entries + (set & self.set_mask);
        // A value read from `links`: a node index (module invariant), and a
        // way, since every set has at least one.
        let i = self.link(sentinel, PREV);
        let first = self.link(sentinel, NEXT);
        if first != i {
            let p = self.link(i, PREV);
            self.set_link(p, NEXT, sentinel);
            self.set_link(sentinel, PREV, p);
            self.set_link(sentinel, NEXT, i);
            self.links[i] = [first as u32, sentinel as u32];
            self.set_link(first, PREV, i);
        }
        i
    }

    /// The least recently used way of `set` (tests; fills use
    /// [`LruLists::renew_victim`]).
    #[cfg(test)]
    pub(crate) fn victim(&self, set: usize) -> usize {
        self.links[self.entries + set][PREV] as usize
    }

    /// The ways of `set` from the most to the least recently used (tests).
    #[cfg(test)]
    pub(crate) fn order(&self, set: usize) -> Vec<usize> {
        let sentinel = self.entries + set;
        let mut out = Vec::new();
        let mut i = self.link(sentinel, NEXT);
        while i != sentinel {
            out.push(i);
            i = self.link(i, NEXT);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        /// The lists agree with a plain vector per set (move to front on a
        /// touch, to the back on a demotion, the back to the front on a
        /// renewal), and the victim is its back.
        #[test]
        fn lists_keep_the_order_a_vector_keeps(
            ops in proptest::collection::vec((0u8..3, 0usize..96), 1..400),
            shape in 0usize..3,
        ) {
            let (sets, ways) = [(1, 72), (4, 24), (16, 6)][shape];
            let mut l = LruLists::new(sets, ways);
            // Reference: per set, most recent first; way 0 last to start.
            let mut want: Vec<Vec<usize>> = (0..sets)
                .map(|s| (0..ways).rev().map(|w| s * ways + w).collect())
                .collect();
            for (op, x) in ops {
                let i = x % (sets * ways);
                let set = i / ways;
                let v = &mut want[set];
                match op {
                    0 => {
                        v.retain(|&j| j != i);
                        l.touch(i);
                        v.insert(0, i);
                    }
                    1 => {
                        v.retain(|&j| j != i);
                        l.demote(i);
                        v.push(i);
                    }
                    _ => {
                        let back = v.pop().unwrap();
                        proptest::prop_assert_eq!(l.renew_victim(set), back);
                        v.insert(0, back);
                    }
                }
                for (s, v) in want.iter().enumerate() {
                    proptest::prop_assert_eq!(&l.order(s), v);
                    proptest::prop_assert_eq!(l.victim(s), *v.last().unwrap());
                }
            }
        }
    }
}
