//! The deferred split queue and its shrinker, MADV_COLLAPSE and khugepaged's
//! scan (Linux `deferred_split_scan`, `thp_underused`, `madvise_collapse`,
//! `hpage_collapse_scan_pmd`, `collapse_huge_page`).

mod common;
use common::*;
use mm::*;
use pt::VirtAddr;

fn thp(max_ptes_none: u32) -> MmConfig {
    MmConfig {
        thp: ThpMode::Madvise,
        khugepaged: Khugepaged {
            max_ptes_none,
            ..Khugepaged::default()
        },
        ..MmConfig::default()
    }
}

fn pa(s: &AddressSpace, va: u64) -> u64 {
    s.page_table()
        .translate(VirtAddr::new(va))
        .unwrap()
        .pa
        .get()
}

fn write(s: &AddressSpace, ctx: &mut ThreadCtx, va: u64) {
    access(s, ctx, va, true);
    if s.tracks_writes() {
        s.note_write(pa(s, va));
    }
}

fn shrink(s: &AddressSpace, ctx: &mut ThreadCtx) -> u64 {
    let (d, n) = s.deferred_split_scan(ctx).unwrap();
    d.complete(s).unwrap();
    n
}

fn huge_and_rss(s: &AddressSpace, ctx: &ThreadCtx) -> (i64, i64) {
    let c = counters(s, ctx);
    (c.anon_huge_kb, c.rss_anon_kb)
}

/// Two THPs at BASE, one byte written in each.
fn two_thps(s: &AddressSpace, ctx: &mut ThreadCtx) {
    done(s, s.mmap(ctx, MmapArgs::anon(BASE, 4 * M)));
    done(s, s.madvise(ctx, BASE, 4 * M, Advice::HugePage));
    write(s, ctx, BASE);
    write(s, ctx, BASE + 2 * M);
}

#[test]
fn the_shrinker_splits_a_partially_unmapped_thp_and_maps_its_zero_subpages_to_the_zero_page() {
    let s = space(thp(511));
    let mut ctx = ThreadCtx::new();
    two_thps(&s, &mut ctx);
    // A partial DONTNEED splits only the PMD: the folio stays whole.
    done(&s, s.madvise(&mut ctx, BASE + M, 4 * K, Advice::DontNeed));
    assert_eq!(huge_and_rss(&s, &ctx), (2048, 4092));
    // The shrinker splits the queued folio; the whole THP is left alone
    // (not underused with max_ptes_none at 511).
    assert_eq!(shrink(&s, &mut ctx), 1);
    assert_eq!(huge_and_rss(&s, &ctx), (2048, 2048 + 4));
    assert_eq!(pa(&s, BASE + 4 * K), s.zero_page());
    assert_ne!(pa(&s, BASE), s.zero_page());
    // A second run finds nothing queued.
    assert_eq!(shrink(&s, &mut ctx), 0);
    // The next write to a zero subpage faults once.
    let before = counters(&s, &ctx).minor_faults;
    write(&s, &mut ctx, BASE + 8 * K);
    assert_eq!(counters(&s, &ctx).minor_faults, before + 1);
    finish(s, &mut ctx);
}

#[test]
fn the_shrinker_splits_underused_thps_only_below_the_default_max_ptes_none() {
    for (max_none, split) in [(511, 0), (400, 2)] {
        let s = space(thp(max_none));
        let mut ctx = ThreadCtx::new();
        two_thps(&s, &mut ctx);
        assert_eq!(shrink(&s, &mut ctx), split, "max_ptes_none {max_none}");
        let want = if split == 0 { (4096, 4096) } else { (0, 8) };
        assert_eq!(huge_and_rss(&s, &ctx), want, "max_ptes_none {max_none}");
        // A THP found used leaves the queue: a second run splits nothing.
        assert_eq!(shrink(&s, &mut ctx), 0);
        finish(s, &mut ctx);
    }
}

#[test]
fn madvise_collapse_builds_a_thp_from_base_pages_and_zero_pages() {
    // No MADV_HUGEPAGE: faults take base pages, MADV_COLLAPSE ignores the mode.
    let s = space(thp(511));
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
    write(&s, &mut ctx, BASE + 2 * M);
    write(&s, &mut ctx, BASE + 2 * M + 12 * K);
    access(&s, &mut ctx, BASE + 2 * M + 20 * K, false);
    let vmpte = counters(&s, &ctx).vmpte_kb;
    assert_eq!(huge_and_rss(&s, &ctx), (0, 8));
    done(&s, s.madvise_collapse(&mut ctx, BASE + 2 * M, 2 * M));
    assert_eq!(huge_and_rss(&s, &ctx), (2048, 2048));
    // The PTE table is deposited, still counted.
    assert_eq!(counters(&s, &ctx).vmpte_kb, vmpte);
    // The first range has no PTE table: EINVAL, nothing collapsed after it.
    let r = s.madvise_collapse(&mut ctx, BASE, 4 * M);
    assert!(matches!(r, Err(Errno::Inval(_))), "{r:?}");
    // Writes to the new THP fault nothing.
    let before = counters(&s, &ctx).minor_faults;
    write(&s, &mut ctx, BASE + 2 * M + 4 * K);
    assert_eq!(counters(&s, &ctx).minor_faults, before);
    finish(s, &mut ctx);
}

#[test]
fn madvise_collapse_refuses_nohugepage_and_skips_a_partial_pmd_range() {
    let s = space(thp(511));
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 3 * M)));
    write(&s, &mut ctx, BASE);
    write(&s, &mut ctx, BASE + 2 * M);
    done(&s, s.madvise_collapse(&mut ctx, BASE, 3 * M));
    assert_eq!(huge_and_rss(&s, &ctx), (2048, 2048 + 4));
    done(&s, s.madvise(&mut ctx, BASE, 3 * M, Advice::NoHugePage));
    let r = s.madvise_collapse(&mut ctx, BASE, 2 * M);
    assert!(matches!(r, Err(Errno::Inval(_))), "{r:?}");
    finish(s, &mut ctx);
}

#[test]
fn khugepaged_keeps_to_max_ptes_none_and_advised_vmas() {
    for (max_none, advised, collapsed) in [(511, true, 1), (511, false, 0), (100, true, 0)] {
        let s = space(thp(max_none));
        let mut ctx = ThreadCtx::new();
        done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 2 * M)));
        for i in 0..4 {
            write(&s, &mut ctx, BASE + i * 4 * K);
        }
        if advised {
            // Advised after the faults: they took base pages.
            done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::HugePage));
        }
        let (d, n) = s.khugepaged_scan(&mut ctx, BASE, 2 * M).unwrap();
        d.complete(&s).unwrap();
        assert_eq!(n, collapsed, "max_ptes_none {max_none}, advised {advised}");
        let want = if collapsed == 1 {
            (2048, 2048)
        } else {
            (0, 16)
        };
        assert_eq!(huge_and_rss(&s, &ctx), want);
        finish(s, &mut ctx);
    }
}

#[test]
fn a_collapsed_thp_is_underused_for_the_shrinker_below_max_ptes_none() {
    let s = space(thp(400));
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 2 * M)));
    write(&s, &mut ctx, BASE);
    done(&s, s.madvise_collapse(&mut ctx, BASE, 2 * M));
    assert_eq!(huge_and_rss(&s, &ctx), (2048, 2048));
    assert_eq!(shrink(&s, &mut ctx), 1);
    assert_eq!(huge_and_rss(&s, &ctx), (0, 4));
    finish(s, &mut ctx);
}
