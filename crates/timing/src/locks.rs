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
//! 4. The map holds at most the locks whose free instant is within
//!    [`IDLE_NS`] of the latest event start seen (in any of the three
//!    figures), plus those taken since
//!    the last sweep: at most twice the locks taken in the last
//!    [`IDLE_NS`] of virtual time (or [`SWEEP_MIN`]), whatever the run's
//!    length. A lock idle longer is forgotten and, when taken again, is
//!    priced as a lock never taken (free, no hand-off).
//!
//! ## Forgetting idle locks
//! A run over 55 TB takes 27 M PTE-table locks once each; keeping one entry
//! per lock ever taken cost more host memory than the tables themselves. A
//! lock whose free instant is [`IDLE_NS`] (10 ms of virtual time) before the
//! latest event start is dropped at the next sweep. For waiting this is
//! exact whenever events are placed less than 10 ms out of order (the
//! virtual-time executor places them at most one quantum, 1 us, out of
//! order): such a lock is free for every later event and no acquisition
//! granted on it can still be queued. What is lost is its last holder: a
//! lock's cache line untouched for 10 ms of virtual time is taken to have
//! left that CPU's private caches (a fault clears at least a 4 KiB page, so
//! a CPU that ran anything in 10 ms has moved far more than its L2 through
//! them), and taking it costs no hand-off.

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

/// Virtual time (ns) a lock may stay free before it is forgotten
/// (invariant 4).
pub const IDLE_NS: f64 = 10e6;
/// Locks the map may hold before the first sweep.
pub const SWEEP_MIN: usize = 4096;

/// One table lock in virtual time.
#[derive(Debug, Default)]
struct LockState {
    /// Free at.
    free: Ns3,
    /// The CPU that held it last (`u32::MAX`: none yet).
    last_cpu: u32,
    /// When the queued acquisitions were granted (point figures, in
    /// increasing order): the ones granted after an arrival were waiting
    /// when it came. An uncontended lock has one grant at most, so the
    /// queue lives in a box made only when a second grant is still pending
    /// (no host allocation per lock in the common case).
    grants: Grants,
}

/// A queue of grant instants: inline while it holds at most one.
#[derive(Debug, Default)]
enum Grants {
    #[default]
    Empty,
    One(f64),
    // Boxed so that the queue's 32 bytes are paid only by a contended lock.
    #[allow(clippy::box_collection)]
    Many(Box<VecDeque<f64>>),
}

impl Grants {
    /// Drops the grants at or before `t`.
    fn pop_until(&mut self, t: f64) {
        match self {
            Grants::Empty => {}
            Grants::One(g) => {
                if *g <= t {
                    *self = Grants::Empty;
                }
            }
            Grants::Many(q) => {
                while q.front().is_some_and(|&g| g <= t) {
                    q.pop_front();
                }
                if q.len() <= 1 {
                    *self = q.front().map_or(Grants::Empty, |&g| Grants::One(g));
                }
            }
        }
    }

    fn len(&self) -> usize {
        match self {
            Grants::Empty => 0,
            Grants::One(_) => 1,
            Grants::Many(q) => q.len(),
        }
    }

    fn push(&mut self, t: f64) {
        match self {
            Grants::Empty => *self = Grants::One(t),
            Grants::One(g) => *self = Grants::Many(Box::new(VecDeque::from([*g, t]))),
            Grants::Many(q) => q.push_back(t),
        }
    }
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
    /// The latest event start placed (each figure the latest of its own).
    latest: Ns3,
    /// Sweep idle locks once the map holds this many (0: [`SWEEP_MIN`]).
    sweep_at: usize,
    /// Only one CPU places events ([`VirtualLocks::single_cpu`]): table
    /// locks are not kept at all.
    single: bool,
}

impl VirtualLocks {
    pub fn new() -> VirtualLocks {
        VirtualLocks::default()
    }

    /// The locks of a space only one CPU places events in (a run of one
    /// thread). Table locks need no state then: that CPU's events are
    /// placed in order, each starting at or after the previous one's end,
    /// so every lock is free when it is taken, last held by the same CPU,
    /// with no grant queued, whatever its history; [`VirtualLocks::place`]
    /// gives what it gives with a map and takes no host memory per lock
    /// (`tests::one_cpu_needs_no_map`). The mmap lock is kept as ever.
    pub fn single_cpu() -> VirtualLocks {
        VirtualLocks {
            single: true,
            ..VirtualLocks::default()
        }
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
        self.latest = self.latest.max(start);
        if self.locks.len() >= self.sweep_at.max(SWEEP_MIN) {
            self.sweep();
        }
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
        if self.single {
            // Each lock free at `t`, no hand-off (the constructor says why);
            // added one by one, as below, so that the sums round alike.
            for _ in tables {
                t += hold;
            }
            let end = s + cost.max(hold * n) + (t - (s + pre + hold * n));
            return self.release_mmap(has_mmap, writes, end, wait, contended);
        }
        for e in tables {
            let l = self.locks.entry(e.lock).or_insert_with(|| LockState {
                last_cpu: u32::MAX,
                ..LockState::default()
            });
            l.grants.pop_until(t.ns);
            let later = t.max(l.free);
            let mut w = later - t;
            if l.free.ns > t.ns {
                contended += 1;
                w += handoff.base + handoff.per_waiter * l.grants.len() as f64;
            }
            wait += w;
            t += w;
            let me = cpu as u32;
            if w.ns == 0.0 && l.last_cpu != me && l.last_cpu != u32::MAX {
                // Free, but its line is in another CPU's cache: a cost,
                // not a wait.
                t += handoff.base;
            }
            l.grants.push(t.ns);
            l.last_cpu = me;
            t += hold;
            l.free = t;
        }
        // What the locks' holds did not cover of the cost (none when the
        // holds add up to more than the cost).
        let end = s + cost.max(hold * n) + (t - (s + pre + hold * n));
        self.release_mmap(has_mmap, writes, end, wait, contended)
    }

    /// Releases the mmap lock at `end` (if the event took it).
    fn release_mmap(
        &mut self,
        has_mmap: bool,
        writes: bool,
        end: Ns3,
        wait: Ns3,
        contended: u32,
    ) -> Acquired {
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

    /// Table locks held in the map (invariant 4 bounds it).
    pub fn tracked(&self) -> usize {
        self.locks.len()
    }

    /// Drops the locks idle for [`IDLE_NS`] before the latest start
    /// (invariant 4). Every grant of a lock comes before its free instant,
    /// so a forgotten lock has no queued acquisition left. The next sweep
    /// waits until the map has doubled: amortized constant per event.
    fn sweep(&mut self) {
        let c = self.latest;
        // Each figure on its own (the low and high figures wait on their
        // own instants: invariant 2).
        self.locks.retain(|_, l| {
            l.free.ns > c.ns - IDLE_NS || l.free.lo > c.lo - IDLE_NS || l.free.hi > c.hi - IDLE_NS
        });
        let keep = self.locks.len();
        self.sweep_at = (2 * keep).max(SWEEP_MIN);
        if self.locks.capacity() > 4 * self.sweep_at {
            self.locks.shrink_to(2 * self.sweep_at);
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

    /// A run that takes a million distinct locks once each, one event
    /// every microsecond, keeps at most twice the locks of the last
    /// `IDLE_NS` in its map: bounded by the window, not the run.
    #[test]
    fn the_map_stays_bounded_by_the_idle_window_over_a_long_run() {
        let mut l = VirtualLocks::new();
        let window = (IDLE_NS / 1000.0) as usize + 1;
        let mut most = 0;
        for i in 0..1_000_000usize {
            let start = Ns3::same(i as f64 * 1000.0);
            l.place(0, start, COST, HOLD, HANDOFF, &[mmap(false), lock(i + 1)]);
            most = most.max(l.tracked());
        }
        assert!(most <= 2 * window.max(SWEEP_MIN), "{most} locks tracked");
        assert!(
            most >= window,
            "{most}: sweeps dropped locks still in the window"
        );
    }

    /// Forgetting changes no placement while events come in order: two
    /// CPUs taking locks from a small set at random, with idle gaps longer
    /// than the window now and then, against a map that never forgets.
    #[test]
    fn forgetting_idle_locks_changes_no_wait_of_in_order_events() {
        let mut fresh = VirtualLocks::new();
        let mut never = VirtualLocks::new();
        never.sweep_at = usize::MAX;
        let mut x: u64 = 12345;
        let mut clock = [Ns3::ZERO; 2];
        for i in 0..200_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // One CPU; lock ids from a set of 50,000 so that many are
            // reused after the window, most within it.
            let id = (x % 50_000) as usize + 1;
            let cpu = 0;
            if i % 10_000 == 0 {
                clock[cpu] += Ns3::same(2.0 * IDLE_NS);
            }
            let a = fresh.place(cpu, clock[cpu], COST, HOLD, HANDOFF, &[lock(id)]);
            let b = never.place(cpu, clock[cpu], COST, HOLD, HANDOFF, &[lock(id)]);
            assert_eq!(a, b, "event {i}");
            clock[cpu] = a.end;
        }
        assert!(fresh.tracked() < never.tracked());
    }

    /// One CPU placing events in order (each at or after the last one's
    /// end, as the executors do), with locks repeated within and across
    /// events: the map-less placement gives the same results.
    #[test]
    fn one_cpu_needs_no_map() {
        let mut with_map = VirtualLocks::new();
        let mut without = VirtualLocks::single_cpu();
        let mut x: u64 = 777;
        let mut clock = Ns3::ZERO;
        for i in 0..50_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut log = vec![mmap(i % 97 == 0)];
            for k in 0..(x % 4) {
                log.push(lock(((x >> (8 * k)) % 64) as usize + 1));
            }
            let gap = Ns3::same((x % 3) as f64 * 50.0);
            let cost = Ns3::same(100.0 + (x % 1000) as f64);
            // A hold that does not add up exactly in binary.
            let hold = Ns3::same(100.3);
            let a = with_map.place(0, clock + gap, cost, hold, HANDOFF, &log);
            let b = without.place(0, clock + gap, cost, hold, HANDOFF, &log);
            assert_eq!(a, b, "event {i}");
            clock = a.end;
        }
        assert_eq!(without.tracked(), 0);
    }
}
