//! [`SharedLock`]: one lock (or one contended cache line) that every
//! modeled CPU of the machine shares, in virtual time: the page
//! allocator's zone lock, the LRU lock, the mmap_lock's count line.
//!
//! Unlike the table locks of [`crate::VirtualLocks`] (one per table,
//! taken inside an event's placement), these are taken by the pricing of
//! an event around its placement, each for its own hold. The fault
//! figures were measured by one CPU alone, so a hold is already inside
//! them: what a shared lock adds to its taker is only the wait for other
//! CPUs' holds and the hand-off of its line ([`Taken::extra`]); a CPU
//! alone gets nothing added.
//!
//! ## Invariants
//! 1. The lock's free instant only moves forward: the machine does at most
//!    one hold at a time (its throughput is one hold per `hold`).
//! 2. Whether a take waited, and how long, is decided on the point
//!    figures (crate invariant 2); the low and high evaluations wait the
//!    same and price the hold and the hand-off with their own figures.

use crate::locks::Handoff;
use crate::ns3::Ns3;
use std::collections::VecDeque;

/// One machine-wide lock in virtual time.
#[derive(Debug)]
pub struct SharedLock {
    free: Ns3,
    /// The CPU that held it last (`usize::MAX`: none yet).
    last_cpu: usize,
    /// Grant instants (point figures) of takes still queued or held, to
    /// count the waiters ahead of an arrival (a ticket lock's hand-off
    /// grows with them).
    grants: VecDeque<f64>,
    /// Takes that found it held, so far.
    pub contended: u64,
}

impl Default for SharedLock {
    fn default() -> SharedLock {
        SharedLock {
            free: Ns3::ZERO,
            last_cpu: usize::MAX,
            grants: VecDeque::new(),
            contended: 0,
        }
    }
}

/// What one take of a [`SharedLock`] did.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Taken {
    /// When the hold ended (the taker goes on from here).
    pub end: Ns3,
    /// The wait and the hand-off: what the take adds to an event whose
    /// figure already holds the hold itself.
    pub extra: Ns3,
}

impl SharedLock {
    pub fn new() -> SharedLock {
        SharedLock::default()
    }

    /// `cpu` takes the lock at `at` and holds it for `hold`: it waits for
    /// an earlier holder, pays `handoff` if it waited or if another CPU
    /// held the lock last (its line moves).
    pub fn take(&mut self, cpu: usize, at: Ns3, hold: Ns3, handoff: Handoff) -> Taken {
        while self.grants.front().is_some_and(|&g| g <= at.ns) {
            self.grants.pop_front();
        }
        // The wait is the point figures' (invariant 2), the same duration
        // in the low and high evaluations: comparing each evaluation's
        // clocks on their own let a high evaluation's waits chain across
        // 80 CPUs into absurd figures (1e17 ns) while the point one's did
        // not.
        let wait = (self.free.ns - at.ns).max(0.0);
        let mut t = at + Ns3::same(wait);
        if wait > 0.0 {
            self.contended += 1;
            t += handoff.base + handoff.per_waiter * self.grants.len() as f64;
        } else if self.last_cpu != cpu && self.last_cpu != usize::MAX {
            t += handoff.base;
        }
        self.grants.push_back(t.ns);
        self.last_cpu = cpu;
        let end = t + hold;
        self.free = end;
        Taken { end, extra: t - at }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const H: Handoff = Handoff {
        base: Ns3::same(10.0),
        per_waiter: Ns3::ZERO,
    };

    #[test]
    fn one_cpu_alone_adds_nothing_and_others_wait_their_turn() {
        let mut l = SharedLock::new();
        let hold = Ns3::same(100.0);
        for i in 0..5 {
            let t = l.take(0, Ns3::same(1000.0 * i as f64), hold, H);
            assert_eq!(t.extra, Ns3::ZERO);
        }
        // Three CPUs at once: the first takes it free but from CPU 0 (its
        // line moves), the others queue behind, one hold after another.
        let at = Ns3::same(10_000.0);
        let a = l.take(1, at, hold, H);
        let b = l.take(2, at, hold, H);
        let c = l.take(3, at, hold, H);
        assert_eq!(a.extra.ns, 10.0);
        assert_eq!(b.extra.ns, 10.0 + 100.0 + 10.0);
        assert_eq!(c.extra.ns, b.extra.ns + 100.0 + 10.0);
        assert_eq!(l.contended, 2);
        // Throughput: never more than one hold at a time.
        assert!(c.end.ns - a.end.ns >= 2.0 * hold.ns);
    }
}
