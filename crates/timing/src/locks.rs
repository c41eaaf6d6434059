//! [`VirtualLocks`]: the locks of one address space in virtual time.
//!
//! Each lock is an instant, "free at T". An event (a fault, a system call)
//! that ran on a CPU whose clock read `start`, cost `cost`, and took the
//! locks of its lock log (`mm::ThreadCtx::lock_log`) in order, is placed so:
//!
//! 1. The mmap lock covers the whole event. Taken to write, the event
//!    starts once every earlier holder has released it; taken to read, once
//!    every earlier writer has. (Faults read; mmap, munmap, mprotect write.)
//! 2. The rest of the cost comes before the table locks: in Linux the work
//!    of a fault (allocating and clearing the page, 2 MiB of it for a THP:
//!    `do_huge_pmd_anonymous_page` clears the folio, then takes `pmd_lock`)
//!    happens before it takes the page-table lock to set the entry. Then
//!    each table lock in the log's order: the event waits until it is free,
//!    pays a hand-off if it waited ([`Handoff`]), holds it for `hold`,
//!    releases it. The locks are treated one after the other (a PMD lock
//!    nested around a PTE lock is priced as two short holds).
//! 4. A hand-off costs `base + per_waiter x W`, W the acquisitions already
//!    queued on the lock when this one arrived (granted after its arrival):
//!    under a ticket spinlock every waiter spins on the lock's one line, so
//!    each release sends that line to every waiter (Boyd-Wickizer et al.,
//!    "Non-scalable locks are dangerous", Linux Symposium 2012); under
//!    Linux's queued spinlock (since 4.2) each waiter spins on its own
//!    node and `per_waiter` is about 0. An acquisition that finds the lock
//!    free but last taken by another CPU pays `base` without waiting: the
//!    lock's line moves to it.
//! 3. The event ends at `start + cost + waits + handoffs`; the mmap lock is
//!    released then.
//!
//! ## Invariants
//! 1. A lock's free instant only moves forward.
//! 2. Whether an acquisition waited is decided on the point figures; the
//!    low and high figures re-price the same order (crate invariant 2).
//! 3. Placement depends only on the events and the order they are placed
//!    in, never on the host.

use crate::ns3::Ns3;
use mm::{LockClass, LockEvent};
use std::collections::{HashMap, VecDeque};
use std::hash::{BuildHasherDefault, Hasher};

/// Hashes a lock identity (an address) with one multiplication: the
/// default SipHash cost more than the rest of placing an event.
#[derive(Default)]
struct IdHasher(u64);

impl Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }

    fn write_usize(&mut self, n: usize) {
        // Fibonacci hashing: the high bits, which the table's control bytes
        // use, depend on every bit of the address.
        self.0 = (n as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

/// Where an event ended and what it waited.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Acquired {
    /// The event's end (the CPU's clock after it).
    pub end: Ns3,
    /// Time spent waiting for locks (handoffs included).
    pub wait: Ns3,
    /// Acquisitions that found their lock held.
    pub contended: u32,
}

/// What handing a lock to another CPU costs (module documentation, 4).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Handoff {
    /// The lock's line moving to the CPU that takes it.
    pub base: Ns3,
    /// On top, per acquisition already waiting.
    pub per_waiter: Ns3,
}

/// One table lock in virtual time.
#[derive(Debug, Default)]
struct LockState {
    /// Free at.
    free: Ns3,
    /// The CPU that held it last (`usize::MAX`: none yet).
    last_cpu: usize,
    /// When each queued acquisition was granted (point figures, in
    /// increasing order): the ones granted after an arrival were waiting
    /// when it came.
    grants: VecDeque<f64>,
}

/// The locks of one address space (see the module documentation).
#[derive(Debug, Default)]
pub struct VirtualLocks {
    /// Table locks by identity.
    locks: HashMap<usize, LockState, BuildHasherDefault<IdHasher>>,
    /// The mmap lock is free of every holder at.
    mmap_all_free: Ns3,
    /// The mmap lock is free of writers at.
    mmap_writer_free: Ns3,
}

impl VirtualLocks {
    pub fn new() -> VirtualLocks {
        VirtualLocks::default()
    }

    /// Places an event of `cpu` (see the module documentation): it
    /// started at `start`, cost `cost`, took the locks of `log` in order,
    /// each held for `hold`; taking a lock from another CPU costs
    /// `handoff` on top.
    pub fn place(
        &mut self,
        cpu: usize,
        start: Ns3,
        cost: Ns3,
        hold: Ns3,
        handoff: Handoff,
        log: &[LockEvent],
    ) -> Acquired {
        let mut wait = Ns3::ZERO;
        let mut contended = 0;
        let (has_mmap, writes) = log
            .iter()
            .filter(|e| e.class == LockClass::Mmap)
            .fold((false, false), |(_, w), e| (true, w || e.exclusive));
        let mut s = start;
        if has_mmap {
            let ready = if writes {
                self.mmap_all_free
            } else {
                self.mmap_writer_free
            };
            if ready.ns > s.ns {
                contended += 1;
            }
            let later = s.max(ready);
            wait += later - s;
            s = later;
        }
        let tables = log.iter().filter(|e| e.class != LockClass::Mmap);
        let n = tables.clone().count() as f64;
        let pre = cost.saturating_sub(hold * n);
        let mut t = s + pre;
        for e in tables {
            let l = self.locks.entry(e.lock).or_insert_with(|| LockState {
                last_cpu: usize::MAX,
                ..LockState::default()
            });
            while l.grants.front().is_some_and(|&g| g <= t.ns) {
                l.grants.pop_front();
            }
            let later = t.max(l.free);
            let mut w = later - t;
            if l.free.ns > t.ns {
                contended += 1;
                w += handoff.base + handoff.per_waiter * l.grants.len() as f64;
            }
            wait += w;
            t += w;
            if w.ns == 0.0 && l.last_cpu != cpu && l.last_cpu != usize::MAX {
                // Free, but its line is in another CPU's cache: a cost,
                // not a wait.
                t += handoff.base;
            }
            l.grants.push_back(t.ns);
            l.last_cpu = cpu;
            t += hold;
            l.free = t;
        }
        // What the locks' holds did not cover of the cost (none when the
        // holds add up to more than the cost).
        let end = s + cost.max(hold * n) + (t - (s + pre + hold * n));
        if has_mmap {
            self.mmap_all_free = self.mmap_all_free.max(end);
            if writes {
                self.mmap_writer_free = self.mmap_writer_free.max(end);
            }
        }
        Acquired {
            end,
            wait,
            contended,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lock(id: usize) -> LockEvent {
        LockEvent {
            lock: id,
            class: LockClass::Pte,
            exclusive: true,
        }
    }

    fn mmap(write: bool) -> LockEvent {
        LockEvent {
            lock: 0,
            class: LockClass::Mmap,
            exclusive: write,
        }
    }

    const COST: Ns3 = Ns3::same(1000.0);
    const HOLD: Ns3 = Ns3::same(100.0);
    const HANDOFF: Handoff = Handoff {
        base: Ns3::same(10.0),
        per_waiter: Ns3::ZERO,
    };

    #[test]
    fn two_events_on_one_lock_at_once_wait_and_on_two_locks_do_not() {
        let mut l = VirtualLocks::new();
        let a = l.place(0, Ns3::ZERO, COST, HOLD, HANDOFF, &[mmap(false), lock(1)]);
        assert_eq!(a.end, Ns3::same(1000.0));
        assert_eq!(a.contended, 0);
        // The same lock, same start: held 900..1000 by the first, so the
        // second waits until 1000 and pays the handoff.
        let b = l.place(0, Ns3::ZERO, COST, HOLD, HANDOFF, &[mmap(false), lock(1)]);
        assert_eq!(b.contended, 1);
        assert_eq!(b.wait, Ns3::same(100.0 + 10.0));
        assert_eq!(b.end, Ns3::same(1110.0));
        // Another lock: no wait (readers of the mmap lock share it).
        let c = l.place(0, Ns3::ZERO, COST, HOLD, HANDOFF, &[mmap(false), lock(2)]);
        assert_eq!((c.contended, c.end), (0, Ns3::same(1000.0)));
    }

    #[test]
    fn a_writer_of_the_mmap_lock_waits_for_readers_and_readers_for_it() {
        let mut l = VirtualLocks::new();
        l.place(0, Ns3::ZERO, COST, HOLD, HANDOFF, &[mmap(false)]);
        let w = l.place(0, Ns3::same(500.0), COST, HOLD, HANDOFF, &[mmap(true)]);
        assert_eq!(w.wait, Ns3::same(500.0));
        assert_eq!(w.end, Ns3::same(2000.0));
        let r = l.place(0, Ns3::same(1500.0), COST, HOLD, HANDOFF, &[mmap(false)]);
        assert_eq!((r.contended, r.end), (1, Ns3::same(3000.0)));
    }

    #[test]
    fn a_later_event_does_not_wait_for_a_released_lock() {
        let mut l = VirtualLocks::new();
        l.place(0, Ns3::ZERO, COST, HOLD, HANDOFF, &[lock(7)]);
        let b = l.place(0, Ns3::same(5000.0), COST, HOLD, HANDOFF, &[lock(7)]);
        assert_eq!(
            (b.contended, b.wait, b.end),
            (0, Ns3::ZERO, Ns3::same(6000.0))
        );
    }

    #[test]
    fn a_ticket_handoff_grows_with_the_waiters_ahead_and_a_queued_one_does_not() {
        let ticket = Handoff {
            base: Ns3::same(10.0),
            per_waiter: Ns3::same(5.0),
        };
        // Four CPUs arrive at once on one lock (at 900, their work done):
        // the first takes it free, the second waits for the holder alone,
        // the third behind one waiter, the fourth behind two.
        let mut l = VirtualLocks::new();
        let ends: Vec<f64> = (0..4)
            .map(|cpu| {
                l.place(cpu, Ns3::ZERO, COST, HOLD, ticket, &[lock(1)])
                    .end
                    .ns
            })
            .collect();
        // Held 900..1000; then each hand-off 10 + 5 x (grants after 900).
        assert_eq!(ends[0], 1000.0);
        assert_eq!(ends[1], 1000.0 + 10.0 + 100.0);
        assert_eq!(ends[2], ends[1] + 10.0 + 5.0 + 100.0);
        assert_eq!(ends[3], ends[2] + 10.0 + 5.0 * 2.0 + 100.0);
        // The same arrivals under a queued lock (no per-waiter part): each
        // hand-off costs the same.
        let mut q = VirtualLocks::new();
        let qe: Vec<f64> = (0..4)
            .map(|cpu| {
                q.place(cpu, Ns3::ZERO, COST, HOLD, HANDOFF, &[lock(1)])
                    .end
                    .ns
            })
            .collect();
        assert_eq!(qe[3] - qe[2], qe[2] - qe[1]);
        assert!(ends[3] > qe[3]);
    }

    #[test]
    fn a_free_lock_last_held_by_another_cpu_costs_its_line_not_a_wait() {
        let mut l = VirtualLocks::new();
        l.place(0, Ns3::ZERO, COST, HOLD, HANDOFF, &[lock(3)]);
        let same = l.place(0, Ns3::same(5000.0), COST, HOLD, HANDOFF, &[lock(3)]);
        assert_eq!(same.end, Ns3::same(6000.0));
        let other = l.place(1, Ns3::same(9000.0), COST, HOLD, HANDOFF, &[lock(3)]);
        assert_eq!(
            (other.contended, other.wait, other.end),
            (0, Ns3::ZERO, Ns3::same(10_010.0))
        );
    }
}
