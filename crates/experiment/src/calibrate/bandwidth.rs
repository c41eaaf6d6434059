//! The machine's memory bandwidth for clearing, shared by its CPUs:
//! `mem.bandwidth_kib` (ns per KiB for the whole machine).
//!
//! Every fault clears its new page; with many CPUs faulting at once they
//! share the machine's memory bandwidth (`timing::SharedBandwidth`). The
//! probe clears (memset) a buffer much larger than the last-level cache,
//! already faulted in, first on one CPU alone, then on two CPUs at once,
//! each its own buffer: the figure is both threads' KiB over the longer
//! thread's CPU time. On a host of two CPUs (the development guest) this
//! shows only two-CPU sharing: the machine's aggregate is at least this
//! (a lower bound on the bandwidth, an upper bound on ns per KiB); the
//! method says how the two threads' time compares with one alone.
//!
//! Each thread's CPU time is used, not the wall's: a thread waiting on
//! memory is still running, while one preempted by another process is
//! not, so preemption on a shared host does not count as sharing. A pair
//! whose threads did not run at once for most of it (the wall time of the
//! pair against their CPU times) is dropped and tried again; too few kept
//! and the figure is left out (a problem, as the shootdown probe's).

use std::hint::black_box;
use std::sync::Barrier;
use std::time::Instant;

use super::clock::CpuTimer;
use super::estimate::measured;
use super::{pin, CalibrateError, Figures, Scale};

/// The least fraction of the longer thread's CPU time the two threads must
/// have run at once for a pair to count.
const MIN_OVERLAP: f64 = 0.75;

/// One thread's buffer: far beyond a last-level cache.
fn buffer(scale: Scale) -> usize {
    match scale {
        Scale::Test => 16 << 20,
        Scale::Quick => 64 << 20,
        Scale::Long => 256 << 20,
    }
}

/// One thread clears its buffer `passes` times: its CPU ns.
fn clear(buf: &mut [u8], passes: usize) -> f64 {
    let t = CpuTimer::start();
    for p in 0..passes {
        black_box(&mut buf[..]).fill(p as u8);
    }
    t.ns()
}

pub fn probe(scale: Scale, figs: &mut Figures) -> Result<(), CalibrateError> {
    let cpus = pin::allowed_cpus();
    let (a, b) = match cpus[..] {
        [a, b, ..] => (a, b),
        _ => {
            return Err(CalibrateError::Probe {
                what: "mem.bandwidth_kib".into(),
                message: "needs two CPUs to clear at once; this process may use one".into(),
            })
        }
    };
    let size = buffer(scale);
    let passes = 1;
    let kib = (size / 1024 * passes) as f64;
    let deadline = Instant::now() + scale.probe_deadline();
    let mut bufs = [vec![1u8; size], vec![1u8; size]];
    let (mut alone, mut pair, mut overlaps) = (Vec::new(), Vec::new(), Vec::new());
    let mut tries = 0usize;
    // One warm-up repetition, not recorded; on a busy host the two threads
    // often do not run at once, and such a pair says nothing of sharing:
    // it is tried again (up to the deadline).
    while pair.len() < scale.reps() && Instant::now() < deadline {
        tries += 1;
        let one = {
            let _pin = pin::pin_to(a);
            clear(&mut bufs[0], passes)
        };
        let start = Barrier::new(2);
        let wall = Instant::now();
        let both: Vec<f64> = std::thread::scope(|s| {
            let start = &start;
            let threads: Vec<_> = bufs
                .iter_mut()
                .zip([a, b])
                .map(|(buf, cpu)| {
                    s.spawn(move || {
                        let _pin = pin::pin_to(cpu);
                        start.wait();
                        clear(buf, passes)
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().unwrap_or(f64::NAN))
                .collect()
        });
        let wall = wall.elapsed().as_nanos() as f64;
        let longer = both.iter().copied().fold(0.0f64, f64::max);
        if tries == 1 || !(longer.is_finite() && longer > 0.0) {
            continue;
        }
        // The time both ran at once, over the longer one's time.
        let overlap = ((both[0] + both[1] - wall).max(0.0) / longer).min(1.0);
        overlaps.push(overlap);
        if overlap >= MIN_OVERLAP {
            alone.push(one / kib);
            pair.push(longer / (2.0 * kib));
        }
    }
    black_box(&bufs);
    if pair.len() < 3 {
        return Err(CalibrateError::Probe {
            what: "mem.bandwidth_kib".into(),
            message: format!(
                "not measured: the two clearing threads were rarely running at the same time ({} of {} pairs ran at once for {:.0}% of their time, at least 3 needed; the best pair {:.0}%); run calibrate on a quieter host",
                pair.len(),
                overlaps.len(),
                100.0 * MIN_OVERLAP,
                100.0 * overlaps.iter().copied().fold(0.0f64, f64::max)
            ),
        });
    }
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let (one, two) = (mean(&alone), mean(&pair));
    let how = format!(
        "memset of a faulted-in {} MiB buffer per thread on CPUs {a} and {b} at once \
         (each its own buffer): both threads' KiB over the longer thread's CPU time, kept when \
         the two ran at once for at least {:.0}% of it ({} of {} tries); one thread alone took \
         {one:.2} ns per KiB, so two at once moved {:.2}x one's bytes per ns. This host has {} \
         CPUs: the probe shows only their sharing, so the machine's aggregate is at least this",
        size >> 20,
        100.0 * MIN_OVERLAP,
        pair.len(),
        overlaps.len(),
        if two > 0.0 { one / two } else { 0.0 },
        cpus.len()
    );
    figs.put("mem.bandwidth_kib", measured(&pair, &how));
    Ok(())
}
