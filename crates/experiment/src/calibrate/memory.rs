//! Clearing and copying memory, per KiB: `clear.kib` and `copy.kib`.
//!
//! The kernel clears every page it gives a fault (clear_page) and copies
//! one on copy-on-write (copy_page); the model charges these per KiB. The
//! probe clears (memset) and copies (memcpy) a 2 MiB buffer that is
//! already faulted in, so neither faults nor TLB misses of a fresh page
//! are counted: those are in the fault figures.

use std::hint::black_box;
use std::time::Instant;

use super::clock::{self, CpuTimer};
use super::estimate::measured;
use super::{pin, CalibrateError, Figures, Scale};

/// The buffer cleared and copied: a huge page's worth, as a THP fault
/// clears.
const BUFFER: usize = 2 << 20;

pub fn probe(scale: Scale, figs: &mut Figures) -> Result<(), CalibrateError> {
    let _pin = pin::pin_to(pin::allowed_cpus().first().copied().unwrap_or(0));
    let passes = match scale {
        Scale::Test => 8,
        Scale::Quick => 32,
        Scale::Long => 128,
    };
    let deadline = Instant::now() + scale.probe_deadline();
    let mut src = vec![1u8; BUFFER];
    let mut dst = vec![2u8; BUFFER];
    let kib = (BUFFER / 1024 * passes) as f64;
    let mut clear = Vec::new();
    let mut copy = Vec::new();
    // One warm-up pass of each, not recorded.
    for rep in 0..=scale.reps() {
        if Instant::now() > deadline {
            break;
        }
        let t = CpuTimer::start();
        for _ in 0..passes {
            black_box(&mut dst[..]).fill(0);
        }
        let clear_ns = t.ns();
        src[rep % BUFFER] = rep as u8;
        let t = CpuTimer::start();
        for _ in 0..passes {
            black_box(&mut dst[..]).copy_from_slice(black_box(&src[..]));
        }
        let copy_ns = t.ns();
        if rep > 0 {
            clear.push(clear_ns / kib);
            copy.push(copy_ns / kib);
        }
    }
    black_box(&dst);
    let how = format!(
        "memset of a faulted-in 2 MiB buffer, {passes} passes per sample, {}",
        clock::name()
    );
    figs.put("clear.kib", measured(&clear, &how));
    let how = format!(
        "memcpy between two faulted-in 2 MiB buffers, {passes} passes per sample, {}",
        clock::name()
    );
    figs.put("copy.kib", measured(&copy, &how));
    Ok(())
}
