//! The bounded gather of a zap (`mm::gather`, Linux's `mmu_gather`):
//! against the same operation gathered whole (the unbatched reference), over
//! random sparse and dense ranges, MADV_DONTNEED and munmap, reclaim off, on
//! and eager, and small and Linux's own bounds:
//! - the gather never holds more than its bound (what each flush hands over,
//!   and what the call returns);
//! - the pages and tables freed, VmPTE and RSS equal the reference's;
//! - the number of TLB flushes is what Linux's two batches give (a simple
//!   count of the zap order, below).

mod common;
use common::*;
use mm::config::DebugKnobs;
use mm::*;
use proptest::prelude::*;
use std::sync::{Arc, Mutex};

/// What the flusher saw: per call, (leaf pages flushed, tables handed over).
type Seen = Arc<Mutex<Vec<(u64, usize)>>>;

struct Run {
    vmpte_kb: i64,
    rss_anon_kb: i64,
    live_data: (u64, u64),
    live_tables: u64,
    /// Flushes: the mid-call ones plus the call's own, if it has a range.
    flushes: usize,
    seen: Vec<(u64, usize)>,
    /// What the returned work still held: frames, tables.
    left: (usize, usize),
}

#[derive(Debug, Clone, Copy)]
enum Op {
    DontNeed,
    Munmap,
}

/// Maps `tables` x 2 MiB, writes pages `pages[i] + k * stride` of each 2 MiB,
/// applies `op` to `[from, to)` (in 2 MiB units) with the given bounds.
fn run(
    reclaim: Reclaim,
    tables: u64,
    pages: &[u64],
    op: Op,
    from: u64,
    to: u64,
    bounds: (u32, u32),
) -> Run {
    let cfg = MmConfig {
        reclaim,
        thp: ThpMode::Never,
        fault_around_bytes: 4 * K,
        debug: DebugKnobs {
            gather_pages: bounds.0,
            gather_tables: bounds.1,
            ..DebugKnobs::default()
        },
        ..MmConfig::default()
    };
    let s = space(cfg);
    let seen: Seen = Arc::default();
    let seen2 = seen.clone();
    assert!(s.set_table_flusher(Box::new(move |g| {
        let leaves = if g.tables_too {
            0
        } else {
            g.flush.bytes() / (4 * K)
        };
        seen2.lock().unwrap().push((leaves, g.tables.tables.len()));
        // No TLB is modeled: the tables can go at once.
        g.tables.release(g.pt).unwrap();
    })));
    let mut ctx = ThreadCtx::new();
    let len = tables * 2 * M;
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, len)));
    for t in 0..tables {
        for &p in pages {
            access(&s, &mut ctx, BASE + t * 2 * M + p * 4 * K, true);
        }
    }
    seen.lock().unwrap().clear();
    let (a, b) = (BASE + from * 2 * M, (to - from) * 2 * M);
    let d = match op {
        Op::DontNeed => s.madvise(&mut ctx, a, b, Advice::DontNeed),
        Op::Munmap => s.munmap(&mut ctx, a, b),
    }
    .unwrap();
    let left = (d.frames.len(), d.tables.tables.len());
    let own = usize::from(!d.flush.is_empty() || !d.tables.flush.is_empty());
    d.complete_without_tlb(&s).unwrap();
    let seen = seen.lock().unwrap().clone();
    // A flush with nothing to invalidate is no TLB flush (the table
    // flusher is also called for the tables a call unlinked at its end).
    let c = counters(&s, &ctx);
    let r = Run {
        vmpte_kb: c.vmpte_kb,
        rss_anon_kb: c.rss_anon_kb,
        live_data: s.mem().live_data(),
        live_tables: s.mem().live_tables(),
        flushes: seen.len() + own,
        seen,
        left,
    };
    finish(s, &mut ctx);
    r
}

/// Linux's count of TLB flushes for a DONTNEED over `n` whole PTE tables of
/// `per` present pages each (tlb_flush_mmu when the page batch fills,
/// tlb_table_flush when the table batch does, tlb_finish_mmu at the end; the
/// table flusher's own call at the end of a reclaiming DONTNEED is the
/// call's final flush).
fn linux_dontneed_flushes(n: u64, per: u64, reclaim: bool, bounds: (u32, u32)) -> usize {
    let (lp, lt) = (u64::from(bounds.0), u64::from(bounds.1));
    let (mut pages, mut tables, mut range, mut flushes) = (0, 0, false, 0);
    for _ in 0..n {
        for _ in 0..per {
            pages += 1;
            range = true;
            if pages == lp {
                flushes += 1;
                (pages, tables, range) = (0, 0, false);
            }
        }
        if reclaim {
            tables += 1;
            range = true;
            if tables == lt {
                flushes += 1;
                (tables, range) = (0, false);
            }
        }
    }
    flushes + usize::from(range)
}

fn pages_strategy() -> impl Strategy<Value = Vec<u64>> {
    prop::collection::btree_set(0u64..512, 1..24).prop_map(|s| s.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Small bounds (many flushes per call) against the whole call gathered
    /// at once: the same end state, every flush within the bounds, and for
    /// a DONTNEED of whole tables Linux's number of flushes.
    #[test]
    fn batched_equals_unbatched(
        reclaim in prop::sample::select(vec![Reclaim::Off, Reclaim::On, Reclaim::Eager]),
        tables in 1u64..24,
        pages in pages_strategy(),
        cut in (0u64..24, 0u64..24),
        munmap in any::<bool>(),
        bp in 1u32..40,
        bt in 1u32..6,
    ) {
        let (from, to) = (cut.0.min(tables - 1), cut.1.min(tables - 1) + 1);
        let (from, to) = (from.min(to - 1), to.max(from + 1));
        let op = if munmap { Op::Munmap } else { Op::DontNeed };
        let whole = run(reclaim, tables, &pages, op, from, to, (u32::MAX, u32::MAX));
        let small = run(reclaim, tables, &pages, op, from, to, (bp, bt));
        prop_assert_eq!(small.vmpte_kb, whole.vmpte_kb);
        prop_assert_eq!(small.rss_anon_kb, whole.rss_anon_kb);
        prop_assert_eq!(small.live_data, whole.live_data);
        prop_assert_eq!(small.live_tables, whole.live_tables);
        prop_assert!(whole.flushes <= 2, "gathered whole: {:?}", whole.seen);
        for &(leaves, t) in &small.seen {
            prop_assert!(leaves <= u64::from(bp), "{leaves} pages in one flush (bound {bp})");
            prop_assert!(t <= bt as usize, "{t} tables in one flush (bound {bt})");
        }
        prop_assert!(small.left.0 < bp as usize, "{:?} left", small.left);
        prop_assert!(small.left.1 < bt as usize, "{:?} left", small.left);
        if !munmap {
            let n = (to - from) * pages.len() as u64;
            let expect = if reclaim == Reclaim::Off {
                linux_dontneed_flushes(1, n, false, (bp, bt))
            } else {
                linux_dontneed_flushes(to - from, pages.len() as u64, true, (bp, bt))
            };
            prop_assert_eq!(small.flushes, expect, "{:?}", small.seen);
        }
    }
}

/// Linux's own bounds: a dense DONTNEED of 64 MiB (16,384 pages, reclaim
/// off) is two TLB flushes (one when the 9,678th page fills the gather, one
/// at the end); with reclaim on, 32 tables stay under the 509-table batch.
#[test]
fn linux_bounds_flush_once_per_full_batch() {
    let all: Vec<u64> = (0..512).collect();
    let off = run(Reclaim::Off, 32, &all, Op::DontNeed, 0, 32, (0, 0));
    assert_eq!(off.flushes, 2, "{:?}", off.seen);
    assert_eq!(off.seen[0].0, 9_678, "the first flush holds a full batch");
    assert_eq!(
        off.flushes,
        linux_dontneed_flushes(1, 16_384, false, (9_678, 509))
    );
    let on = run(Reclaim::On, 32, &all, Op::DontNeed, 0, 32, (0, 0));
    assert_eq!(
        on.flushes,
        linux_dontneed_flushes(32, 512, true, (9_678, 509))
    );
}

/// The table batch at Linux's bound: one page in each of 1,100 PTE tables,
/// DONTNEED with reclaim on frees the 1,100 tables in batches of 509: two
/// table flushes midway and the call's own.
#[test]
fn linux_bounds_table_batch() {
    let r = run(Reclaim::On, 1_100, &[7], Op::DontNeed, 0, 1_100, (0, 0));
    assert_eq!(r.flushes, 3, "{:?}", r.seen);
    assert_eq!(
        r.flushes,
        linux_dontneed_flushes(1_100, 1, true, (9_678, 509))
    );
    assert!(r.seen.iter().all(|&(_, t)| t <= 509));
}
