//! Locks: `lock.uncontended` (take and release a free spinlock) and
//! `lock.handoff` (a contended lock's cache line moving from one CPU to
//! another).
//!
//! The hand-off is a ping-pong: two threads pinned to two CPUs take turns
//! on one atomic word in its own cache line; each turn is one CPU waiting
//! for the other's store and then storing, which is what a spinlock handed
//! from its holder to a waiter costs (the line travels once per hand-off).
//! Both threads give up at the probe's deadline, so a CPU taken away by
//! another process cannot hang the command.

use std::hint::black_box;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use super::clock::{self, CpuTimer};
use super::estimate::measured;
use super::{pin, CalibrateError, Figures, Scale};

/// One word alone in its cache line (two lines: the adjacent-line
/// prefetcher pairs them).
#[repr(align(128))]
struct Line<T>(T);

pub fn probe(scale: Scale, figs: &mut Figures) -> Result<(), CalibrateError> {
    let deadline = Instant::now() + scale.probe_deadline();
    let (ops, rounds) = match scale {
        Scale::Test => (100_000, 10_000),
        Scale::Quick => (1_000_000, 20_000),
        Scale::Long => (4_000_000, 200_000),
    };
    let cpus = pin::allowed_cpus();
    let first = cpus.first().copied().unwrap_or(0);
    figs.put(
        "lock.uncontended",
        measured(
            &uncontended(first, ops, scale.reps(), deadline),
            &format!("compare-and-swap acquire, store release of a free spinlock, {ops} pairs per sample, one pinned thread, {}", clock::name()),
        ),
    );
    let [a, b] = match cpus[..] {
        [a, b, ..] => [a, b],
        _ => {
            return Err(CalibrateError::Probe {
                what: "lock.handoff".into(),
                message: "needs two CPUs this process may run on".into(),
            })
        }
    };
    let samples = handoff([a, b], rounds, scale.reps(), deadline);
    figs.put(
        "lock.handoff",
        measured(
            &samples,
            &format!("ping-pong of one cache line between threads pinned to CPUs {a} and {b}, {rounds} round trips (2 hand-offs each) per sample, wall time (a preempted player stalls both: run on a quiet host)"),
        ),
    );
    Ok(())
}

/// ns per lock/unlock pair, one sample per repetition.
fn uncontended(cpu: usize, ops: u64, reps: usize, deadline: Instant) -> Vec<f64> {
    let _pin = pin::pin_to(cpu);
    let lock = Line(AtomicBool::new(false));
    let mut out = Vec::new();
    for rep in 0..=reps {
        if Instant::now() > deadline {
            break;
        }
        let t = CpuTimer::start();
        for _ in 0..ops {
            while lock
                .0
                .compare_exchange(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                std::hint::spin_loop();
            }
            black_box(&lock);
            lock.0.store(false, Ordering::Release);
        }
        // The first repetition warms up and is not kept.
        if rep > 0 {
            out.push(t.ns() / ops as f64);
        }
    }
    out
}

/// ns per hand-off, one sample per repetition; samples cut short by the
/// deadline are dropped.
fn handoff(cpus: [usize; 2], rounds: u64, reps: usize, deadline: Instant) -> Vec<f64> {
    let turn = Line(AtomicU64::new(0));
    let stop = AtomicBool::new(false);
    let mut out = Vec::new();
    for rep in 0..=reps {
        if Instant::now() > deadline {
            break;
        }
        turn.0.store(0, Ordering::SeqCst);
        let t = Instant::now();
        let done = std::thread::scope(|s| {
            let players: Vec<_> = (0..2u64)
                .map(|me| {
                    let (turn, stop) = (&turn, &stop);
                    let cpu = cpus[me as usize];
                    s.spawn(move || play(cpu, me, rounds, turn, stop, deadline))
                })
                .collect();
            players.into_iter().all(|p| p.join().unwrap_or(false))
        });
        let ns = t.elapsed().as_nanos() as f64;
        if !done {
            break;
        }
        if rep > 0 {
            out.push(ns / (2 * rounds) as f64);
        }
    }
    out
}

/// Player `me` (0 or 1) of the ping-pong: waits for the word to reach its
/// turn, then passes it on. False if stopped by the deadline.
fn play(
    cpu: usize,
    me: u64,
    rounds: u64,
    turn: &Line<AtomicU64>,
    stop: &AtomicBool,
    deadline: Instant,
) -> bool {
    let _pin = pin::pin_to(cpu);
    let mut spins = 0u64;
    for r in 0..rounds {
        let mine = 2 * r + me;
        while turn.0.load(Ordering::Acquire) != mine {
            std::hint::spin_loop();
            spins += 1;
            if spins.is_multiple_of(65_536)
                && (stop.load(Ordering::Relaxed) || Instant::now() > deadline)
            {
                stop.store(true, Ordering::Relaxed);
                return false;
            }
        }
        turn.0.store(mine + 1, Ordering::Release);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn a_ping_pong_past_its_deadline_stops() {
        // A billion round trips on one CPU would take hours: the players
        // must give up at the deadline and report no sample.
        let cpu = pin::allowed_cpus()[0];
        let soon = Instant::now() + Duration::from_millis(200);
        let t = Instant::now();
        assert!(handoff([cpu, cpu], 1_000_000_000, 3, soon).is_empty());
        assert!(t.elapsed() < Duration::from_secs(5));
    }
}
