//! Dependent-load latency, and what translation adds to it.
//!
//! A chase is a random cyclic permutation (Sattolo's algorithm) of nodes,
//! each node a cache line holding the address of the next: every load
//! depends on the one before, so the time per step is the latency of one
//! access, with no overlap. Figures:
//!
//! - `mem.latency_{32k,1m,32m}`: every line of a working set of that size
//!   is a node, on a buffer advised `MADV_HUGEPAGE` (few TLB misses).
//! - `mem.latency_1g`: eight random lines of every 4 KiB of a 1 GiB THP
//!   buffer (128 MiB of lines: far past the last-level cache).
//! - `tlb.miss_walk`: the same chase over the same layout on a 1 GiB buffer
//!   of 4 KiB pages (`MADV_NOHUGEPAGE`), minus the THP one: 262,144 pages
//!   miss every TLB level, 512 huge pages do not, and the data misses are
//!   the same. On a guest the difference is the two-dimensional walk.
//! - `tlb.l2_hit`: one line in each of 256 4 KiB pages (L1 TLB misses, L2
//!   TLB hits, all lines in the L1 cache, one per set way) minus 256 lines
//!   in 16 KiB (four pages: TLB hits).
//! - Derived from the curve: `access.tlb_hit` = `mem.latency_32k` (an L1
//!   cache and L1 TLB hit), `walk.ref_cached` = `mem.latency_1m` (a table
//!   line from the L2 cache), `walk.ref_memory` = `mem.latency_1g` (from
//!   memory).
//!
//! Memory: one 1 GiB buffer at a time, unmapped before the next.

use std::hint::black_box;

use rand::{Rng, SeedableRng};
use rand_pcg::Pcg64Mcg;

use super::clock::{self, CpuTimer};
use super::estimate::derived_from;
use super::robust::{
    self, min_of_k, paired_differences, paired_rounds, Paired, Robust, StoppingRule,
};
use super::{pin, CalibrateError, Figures, Scale, MAX_PROBE_BYTES};
use costs::Cost;

const LINE: usize = 64;
const PAGE: usize = 4096;
const HUGE: usize = 2 << 20;
/// Below this share of huge pages, the THP chase is not the TLB-hit
/// baseline `tlb.miss_walk` needs.
const MIN_HUGE_SHARE: f64 = 0.9;

pub fn probe(scale: Scale, figs: &mut Figures) -> Result<(), CalibrateError> {
    let _pin = pin::pin_to(pin::allowed_cpus().first().copied().unwrap_or(0));
    let rule = StoppingRule::at(scale);
    let err = |message: String| CalibrateError::Probe {
        what: "latency".into(),
        message,
    };
    for (name, size, steps) in [
        ("mem.latency_32k", 32 << 10, 2_000_000),
        ("mem.latency_1m", 1 << 20, 2_000_000),
        ("mem.latency_32m", 32 << 20, 500_000),
    ] {
        // At least one whole huge page, so small sets lie in one.
        let buf = Buffer::new(size.max(HUGE), Pages::Huge).map_err(err)?;
        let start = buf.link(&every_line(size));
        let rounds = paired_rounds(&rule, |_, _| (floor_of(start, steps, FLOOR_K), 0.0));
        let how = format!(
            "pointer chase over every 64-byte line of {} KiB in random cyclic order, THP-advised buffer ({:.0}% in huge pages), {steps} steps per chase, {}; a round is the fastest of {FLOOR_K} chases (a floor)",
            size >> 10,
            buf.huge_share.min(1.0) * 100.0,
            clock::name()
        );
        figs.put(name, rounds_cost(&rounds, &how));
    }
    l2_hit(&rule, figs).map_err(err)?;
    walk_cached(&rule, figs).map_err(err)?;
    walk_memory(scale, &rule, figs).map_err(err)?;

    let same = |name: &str, what: &str, figs: &Figures| {
        figs.get(name)
            .map(|c| derived_from(&[(c, 1.0)], &format!("equals {name}: {what}")))
    };
    let hit = same(
        "mem.latency_32k",
        "a dependent load served by the L1 cache with an L1 TLB hit",
        figs,
    );
    figs.put("access.tlb_hit", hit);
    let cached = same(
        "mem.latency_1m",
        "a walk reference to a table line held in the L2 cache",
        figs,
    );
    figs.put("walk.ref_cached", cached);
    let memory = same(
        "mem.latency_1g",
        "a walk reference to a table line that must come from memory",
        figs,
    );
    figs.put("walk.ref_memory", memory);
    Ok(())
}

/// Chases per round; the round's figure is the fastest (interference only
/// lengthens a chase). The first chase after the other buffer's also warms
/// its caches and TLB back up, which the minimum leaves out.
const FLOOR_K: usize = 2;

/// The time per step of `k` chases from `start`, the fastest.
fn floor_of(start: *const usize, steps: u64, k: usize) -> f64 {
    let times: Vec<f64> = (0..k).map(|_| time_chase(start, steps)).collect();
    min_of_k(&times, k)[0]
}

/// Rounds of a probe chase and its baseline, back to back in alternating
/// order, until `rule` stops them.
fn paired_chases(
    rule: &StoppingRule,
    probe: *const usize,
    base: *const usize,
    steps: u64,
) -> Paired {
    paired_rounds(rule, |_, probe_first| {
        if probe_first {
            let p = floor_of(probe, steps, FLOOR_K);
            (p, floor_of(base, steps, FLOOR_K))
        } else {
            let b = floor_of(base, steps, FLOOR_K);
            (floor_of(probe, steps, FLOOR_K), b)
        }
    })
}

/// The figure of rounds: the median of their paired differences.
fn rounds_cost(p: &Paired, method: &str) -> Option<Cost> {
    let est = p.estimate()?;
    Some(robust::cost(
        &est,
        &paired_differences(&p.probe, &p.baseline),
        p.stop,
        method,
    ))
}

/// The L2 TLB: the same 256 lines, over 256 pages or over four.
fn l2_hit(rule: &StoppingRule, figs: &mut Figures) -> Result<(), String> {
    let spread = Buffer::new(256 * PAGE, Pages::Small)?;
    let dense = Buffer::new(256 * LINE, Pages::Small)?;
    let p = paired_chases(
        rule,
        spread.link(&one_line_per_page(256)),
        dense.link(&every_line(256 * LINE)),
        2_000_000,
    );
    figs.put(
        "tlb.l2_hit",
        rounds_cost(
            &p,
            &format!("pointer chase over one line in each of 256 4 KiB pages (L1 TLB misses, L2 TLB hits) minus the same 256 lines in 16 KiB, interleaved in rounds (fastest of {FLOOR_K} chases each), {}", clock::name()),
        ),
    );
    Ok(())
}

/// The walk whose table lines are cached: one line in each of 8,192
/// 4 KiB pages (past every TLB level's reach; their PTEs, 64 KiB, and
/// their data lines, 512 KiB, stay in the caches), minus the same lines
/// over THP (TLB hits). A workload that runs through pages it just
/// faulted or mapped walks like this, not like the 1 GiB chase.
fn walk_cached(rule: &StoppingRule, figs: &mut Figures) -> Result<(), String> {
    let walked = 8192 * PAGE;
    let layout = one_line_per_page(8192);
    let huge = Buffer::new(walked, Pages::Huge)?;
    let share = huge.huge_share.min(1.0);
    if share < MIN_HUGE_SHARE {
        return Ok(());
    }
    let small = Buffer::new(walked, Pages::Small)?;
    let p = paired_chases(rule, small.link(&layout), huge.link(&layout), 2_000_000);
    figs.put(
        "tlb.miss_walk_cached",
        rounds_cost(
            &p,
            &format!(
                "pointer chase over one line in each of 8192 4 KiB pages (MADV_NOHUGEPAGE; past the TLBs, tables and lines in the caches) minus the same lines over THP ({:.0}% in huge pages), interleaved in rounds (fastest of {FLOOR_K} chases each), per access, {}",
                share * 100.0,
                clock::name()
            ),
        ),
    );
    Ok(())
}

/// `mem.latency_1g` and `tlb.miss_walk`: the chase over a large buffer of
/// huge pages, and the same chase over 4 KiB pages less it. Both buffers
/// are held at once so that the rounds interleave them (1 GiB each, or
/// 512 MiB when MemAvailable has no room for twice 2 GiB).
fn walk_memory(scale: Scale, rule: &StoppingRule, figs: &mut Figures) -> Result<(), String> {
    let big = match scale {
        Scale::Test => 64 << 20,
        _ if check_room(2 << 30).is_ok() => 1 << 30,
        _ => 512 << 20,
    };
    check_room(2 * big)?;
    let steps = match scale {
        Scale::Long => 400_000,
        _ => 100_000,
    };
    let layout = lines_per_page(big, 8, 0x6c61_7465);
    let huge = Buffer::new(big, Pages::Huge)?;
    let share = huge.huge_share.min(1.0);
    if share < MIN_HUGE_SHARE {
        return Err(format!(
            "mem.latency_1g and tlb.miss_walk not measured: the kernel backed only {:.0}% of the {} MiB THP-advised buffer with huge pages (memory too fragmented; THP defrag = {})",
            share * 100.0,
            big >> 20,
            host::Fingerprint::read().thp_defrag.as_deref().unwrap_or("unknown")
        ));
    }
    let small = Buffer::new(big, Pages::Small)?;
    let p = paired_chases(rule, small.link(&layout), huge.link(&layout), steps);
    drop((small, huge));
    let mib = big >> 20;
    let latency = Robust::median_of(&p.baseline).map(|est| {
        robust::cost(
            &est,
            &p.baseline,
            p.stop,
            &format!("pointer chase over 8 random lines per 4 KiB of a {mib} MiB THP-advised buffer ({:.0}% in huge pages), {steps} steps per chase, the fastest of {FLOOR_K} a round, {}", share * 100.0, clock::name()),
        )
    });
    figs.put("mem.latency_1g", latency);
    figs.put(
        "tlb.miss_walk",
        rounds_cost(
            &p,
            &format!("the {mib} MiB chase over 4 KiB pages (MADV_NOHUGEPAGE) minus the same chase over THP, the two interleaved in rounds (fastest of {FLOOR_K} chases each), per access"),
        ),
    );
    Ok(())
}

/// Refuses a probe that would not leave half of MemAvailable free.
fn check_room(bytes: usize) -> Result<(), String> {
    if bytes as u64 > MAX_PROBE_BYTES {
        return Err(format!("{bytes} bytes is over the probe bound"));
    }
    let avail = host::MemInfo::read()
        .and_then(|m| m.mem_available_kb())
        .map(|kb| kb * 1024);
    match avail {
        Some(a) if (bytes as u64) * 2 <= a => Ok(()),
        Some(a) => Err(format!(
            "needs {} MiB but only {} MiB is available; free memory or use a smaller host",
            bytes >> 20,
            a >> 20
        )),
        None => Err("MemAvailable is unreadable".into()),
    }
}

/// Which pages back a buffer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Pages {
    /// `MADV_HUGEPAGE`: THP wherever the kernel can.
    Huge,
    /// `MADV_NOHUGEPAGE`: 4 KiB pages only.
    Small,
}

/// An anonymous mapping, 2 MiB aligned, unmapped on drop.
struct Buffer {
    /// What mmap returned, and its length (for munmap).
    map: *mut u8,
    map_len: usize,
    /// The aligned start and the usable length.
    ptr: *mut u8,
    len: usize,
    /// The share of the buffer the kernel backed with huge pages (from
    /// AnonHugePages before and after populating it).
    huge_share: f64,
}

impl Buffer {
    fn new(len: usize, pages: Pages) -> Result<Buffer, String> {
        let map_len = len + HUGE;
        // SAFETY: a fresh private anonymous mapping; no existing memory is
        // named.
        let map = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                map_len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if map == libc::MAP_FAILED {
            return Err(format!(
                "mmap of {} MiB failed: {}",
                map_len >> 20,
                std::io::Error::last_os_error()
            ));
        }
        let map = map.cast::<u8>();
        let offset = (map as usize).next_multiple_of(HUGE) - map as usize;
        let mut counters = host::CounterReader::open();
        let huge_before = counters.read().anon_huge_kb.unwrap_or(0);
        let mut b = Buffer {
            map,
            map_len,
            // SAFETY: offset < HUGE, inside the mapping.
            ptr: unsafe { map.add(offset) },
            len,
            huge_share: 0.0,
        };
        let advice = match pages {
            Pages::Huge => libc::MADV_HUGEPAGE,
            Pages::Small => libc::MADV_NOHUGEPAGE,
        };
        // SAFETY: the range is inside our mapping; advice changes how it
        // is backed, not what it holds. A refusal (THP off) is harmless.
        unsafe { libc::madvise(b.ptr.cast(), b.len, advice) };
        // Fault it all in now, without an exception per page where the
        // kernel can (Linux 5.14); the node writes fault the rest.
        // SAFETY: as above.
        unsafe { libc::madvise(b.ptr.cast(), b.len, libc::MADV_POPULATE_WRITE) };
        let huge_after = counters.read().anon_huge_kb.unwrap_or(0);
        b.huge_share = huge_after.saturating_sub(huge_before) as f64 * 1024.0 / b.len as f64;
        Ok(b)
    }

    /// Links `nodes` (byte offsets, 8-aligned, inside the buffer) into
    /// one random cycle, chases it once to warm up, and returns its start
    /// for [`time_chase`].
    fn link(&self, nodes: &[usize]) -> *const usize {
        let next = sattolo(nodes.len(), 0x7074_6c61_625f_6368);
        for (i, &to) in next.iter().enumerate() {
            assert!(nodes[i] + 8 <= self.len && nodes[i].is_multiple_of(8));
            // SAFETY: the node lies inside the buffer (checked above) and
            // is 8-aligned; the buffer is ours, mapped read-write.
            unsafe {
                self.ptr
                    .add(nodes[i])
                    .cast::<usize>()
                    .write(self.ptr.add(nodes[to as usize]) as usize);
            }
        }
        // SAFETY: node 0 is inside the buffer.
        let start = unsafe { self.ptr.add(nodes[0]) }.cast::<usize>();
        black_box(chase(start, nodes.len() as u64));
        start
    }
}

/// Thread CPU ns per step of `steps` dependent loads from `start` (a node
/// [`Buffer::link`] returned, of a buffer still alive).
fn time_chase(start: *const usize, steps: u64) -> f64 {
    let t = CpuTimer::start();
    black_box(chase(start, steps));
    t.ns() / steps as f64
}

impl Drop for Buffer {
    fn drop(&mut self) {
        // SAFETY: exactly the mapping `new` made; nothing refers to it
        // after the buffer goes.
        unsafe { libc::munmap(self.map.cast(), self.map_len) };
    }
}

/// `steps` dependent loads from `start`.
fn chase(start: *const usize, steps: u64) -> usize {
    let mut p = start;
    for _ in 0..steps {
        // SAFETY: every node holds the address of another node of the
        // same live buffer (written by `chase_samples`), 8-aligned.
        p = unsafe { p.read() } as *const usize;
    }
    p as usize
}

/// A random permutation of `0..n` that is one cycle (Sattolo's
/// algorithm): `next[i]` is the node after `i`.
fn sattolo(n: usize, seed: u64) -> Vec<u32> {
    let mut next: Vec<u32> = (0..n as u32).collect();
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    for i in (1..n).rev() {
        let j = rng.random_range(0..i);
        next.swap(i, j);
    }
    next
}

/// Every line of `len` bytes.
fn every_line(len: usize) -> Vec<usize> {
    (0..len / LINE).map(|i| i * LINE).collect()
}

/// One line in each of `pages` 4 KiB pages, page `i` at line `i % 64`, so
/// the lines fill the cache's sets evenly.
fn one_line_per_page(pages: usize) -> Vec<usize> {
    (0..pages)
        .map(|i| i * PAGE + (i % (PAGE / LINE)) * LINE)
        .collect()
}

/// `k` distinct random lines of every 4 KiB page of `len` bytes.
fn lines_per_page(len: usize, k: usize, seed: u64) -> Vec<usize> {
    let mut rng = Pcg64Mcg::seed_from_u64(seed);
    let mut lines: Vec<usize> = (0..PAGE / LINE).collect();
    let mut out = Vec::with_capacity(len / PAGE * k);
    for page in 0..len / PAGE {
        // A partial Fisher-Yates: the first k of a fresh shuffle.
        for i in 0..k {
            let j = rng.random_range(i..lines.len());
            lines.swap(i, j);
            out.push(page * PAGE + lines[i] * LINE);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sattolo_makes_one_cycle_through_every_node() {
        for n in [2, 3, 17, 1000] {
            let next = sattolo(n, 9);
            let mut seen = vec![false; n];
            let mut at = 0usize;
            for _ in 0..n {
                assert!(!seen[at], "node {at} visited twice (n = {n})");
                seen[at] = true;
                at = next[at] as usize;
            }
            assert_eq!(at, 0, "the walk returns to its start after n steps");
            assert!(seen.iter().all(|&s| s));
        }
    }

    #[test]
    fn layouts_stay_inside_their_pages_and_do_not_repeat() {
        let l = lines_per_page(16 * PAGE, 8, 1);
        assert_eq!(l.len(), 16 * 8);
        for (p, chunk) in l.chunks(8).enumerate() {
            let mut c = chunk.to_vec();
            c.sort_unstable();
            c.dedup();
            assert_eq!(c.len(), 8, "page {p} has a line twice");
            assert!(c.iter().all(|&o| o / PAGE == p && o % LINE == 0));
        }
        let one = one_line_per_page(128);
        assert!(one.iter().enumerate().all(|(i, &o)| o / PAGE == i));
    }

    #[test]
    fn a_chase_visits_the_cycle() {
        let buf = Buffer::new(64 * LINE, Pages::Small).unwrap();
        let start = buf.link(&every_line(64 * LINE));
        assert!(time_chase(start, 64) > 0.0);
        // After exactly 64 steps a 64-node cycle is back at its start.
        assert_eq!(start, buf.ptr.cast::<usize>().cast_const());
        assert_eq!(chase(start, 64), start as usize);
        assert_ne!(chase(start, 63), start as usize);
    }
}
