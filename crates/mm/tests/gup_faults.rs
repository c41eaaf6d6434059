//! Faults taken by GUP rather than by an access (Linux mm/gup.c): how
//! `__mm_populate` (MAP_POPULATE, mlock) and `faultin_page_range`
//! (MADV_POPULATE_*) count the faults that drop the mmap lock to read a
//! file, what a GUP write does to a lazily freed page, and where
//! MADV_COLLAPSE refuses a VMA. The numbers asserted were measured on a
//! 6.18 host whose device reads ahead 8 MiB (see
//! crates/workload/validate/populate-*.toml).

mod common;
use common::*;
use mm::*;

fn file(len: u64, shared: bool) -> MmapArgs {
    MmapArgs {
        kind: MapKind::File {
            cached: false,
            offset: 0,
        },
        shared,
        ..MmapArgs::anon(BASE, len)
    }
}

fn cfg() -> MmConfig {
    MmConfig {
        readaround_bytes: 8 * M,
        thp: ThpMode::Madvise,
        ..MmConfig::default()
    }
}

fn faults(s: &AddressSpace, ctx: &ThreadCtx) -> (i64, i64) {
    let c = counters(s, ctx);
    (c.major_faults, c.minor_faults)
}

#[test]
fn mlock_and_map_populate_count_no_major_fault_for_a_cold_file() {
    // A private writable mapping is populated by write faults (a copy
    // each); a shared one by read faults with fault-around (16 pages).
    for (shared, minor) in [(false, 256), (true, 16)] {
        for by_mlock in [false, true] {
            let s = space(cfg());
            let mut ctx = ThreadCtx::new();
            let args = MmapArgs {
                populate: !by_mlock,
                ..file(M, shared)
            };
            done(&s, s.mmap(&mut ctx, args));
            if by_mlock {
                done(&s, s.mlock(&mut ctx, BASE, M));
            }
            assert_eq!(
                faults(&s, &ctx),
                (0, minor),
                "shared {shared}, mlock {by_mlock}"
            );
            finish(s, &mut ctx);
        }
    }
}

#[test]
fn madvise_populate_read_counts_a_fault_on_a_read_ahead_mark_major() {
    // A 4 MiB file advised hugepage: the first read's miss reads both 2 MiB
    // folios and marks the second for read-ahead. An access there counts
    // minor (its retry is a new fault); MADV_POPULATE_READ retries with
    // FAULT_FLAG_TRIED and counts it major.
    for by_gup in [false, true] {
        let s = space(cfg());
        let mut ctx = ThreadCtx::new();
        done(&s, s.mmap(&mut ctx, file(4 * M, false)));
        done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::HugePage));
        access(&s, &mut ctx, BASE, false);
        assert_eq!(faults(&s, &ctx), (1, 0));
        if by_gup {
            done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::PopulateRead));
        } else {
            access(&s, &mut ctx, BASE + 2 * M, false);
        }
        let want = if by_gup { (2, 0) } else { (1, 1) };
        assert_eq!(faults(&s, &ctx), want, "by GUP {by_gup}");
        // Both 2 MiB folios are mapped by PMD entries either way.
        assert_eq!(counters(&s, &ctx).file_pmd_kb, 4096);
        finish(s, &mut ctx);
    }
}

#[test]
fn a_gup_write_keeps_a_lazily_freed_page_from_being_discarded() {
    // 512 KiB written and lazily freed; GUP reads the first quarter and
    // writes the second (MADV_POPULATE_*), or mlock writes all of it.
    for by_mlock in [false, true] {
        let s = space(cfg());
        let mut ctx = ThreadCtx::new();
        done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 512 * K)));
        for va in (BASE..BASE + 512 * K).step_by(4096) {
            access(&s, &mut ctx, va, true);
        }
        done(&s, s.madvise(&mut ctx, BASE, 512 * K, Advice::Free));
        let kept = if by_mlock {
            done(&s, s.mlock(&mut ctx, BASE, 512 * K));
            done(&s, s.munlock(&mut ctx, BASE, 512 * K));
            512
        } else {
            let q = 128 * K;
            done(&s, s.madvise(&mut ctx, BASE, q, Advice::PopulateRead));
            done(&s, s.madvise(&mut ctx, BASE + q, q, Advice::PopulateWrite));
            128
        };
        let before = faults(&s, &ctx);
        done(&s, s.madvise(&mut ctx, BASE, 512 * K, Advice::PageOut));
        let c = counters(&s, &ctx);
        assert_eq!(c.rss_anon_kb, kept, "mlock {by_mlock}");
        // GUP found every page present: it faulted nothing.
        assert_eq!(before, (0, 128));
        finish(s, &mut ctx);
    }
}

#[test]
fn a_lazily_freed_thp_written_by_gup_is_kept_whole() {
    let s = space(cfg());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
    done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::HugePage));
    access(&s, &mut ctx, BASE, true);
    access(&s, &mut ctx, BASE + 2 * M, true);
    done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::Free));
    done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::PopulateWrite));
    done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::PageOut));
    // The first THP was written through by GUP, the second discarded.
    assert_eq!(counters(&s, &ctx).rss_anon_kb, 2048);
    finish(s, &mut ctx);
}

#[test]
fn madvise_collapse_refuses_a_vma_that_holds_no_whole_pmd_range() {
    let s = space(cfg());
    let mut ctx = ThreadCtx::new();
    // 1 MiB at a 2 MiB boundary, and 4 MiB after it.
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, M)));
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE + 4 * M, 4 * M)));
    for va in (BASE..BASE + M).step_by(4096) {
        access(&s, &mut ctx, va, true);
    }
    for va in (BASE + 4 * M..BASE + 8 * M).step_by(4096) {
        access(&s, &mut ctx, va, true);
    }
    assert!(matches!(
        s.madvise_collapse(&mut ctx, BASE, M),
        Err(Errno::Inval(_))
    ));
    // In a VMA that holds one, a range that covers no whole PMD range
    // collapses nothing and succeeds; one that covers one collapses it.
    done(&s, s.madvise_collapse(&mut ctx, BASE + 5 * M, M));
    assert_eq!(counters(&s, &ctx).anon_huge_kb, 0);
    done(&s, s.madvise_collapse(&mut ctx, BASE + 4 * M, 3 * M));
    assert_eq!(counters(&s, &ctx).anon_huge_kb, 2048);
    finish(s, &mut ctx);
}

#[test]
fn mlock_stops_with_enomem_at_a_prot_none_vma_but_keeps_the_lock() {
    let s = space(cfg());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, M)));
    done(
        &s,
        s.mprotect(&mut ctx, BASE + 256 * K, 256 * K, Prot::NONE),
    );
    assert!(matches!(s.mlock(&mut ctx, BASE, M), Err(Errno::NoMem(_))));
    // Populated up to the PROT_NONE VMA, not past it.
    assert_eq!(counters(&s, &ctx).rss_anon_kb, 256);
    // Still locked: advice refused on locked memory is refused.
    assert!(s.madvise(&mut ctx, BASE, 4 * K, Advice::DontNeed).is_err());
    finish(s, &mut ctx);
}
