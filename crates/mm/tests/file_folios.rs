//! File faults as Linux 6.18 takes them on a host whose device reads ahead
//! 8 MiB and whose filesystem (ext4) gives large folios: the read-around
//! window, fault-around after a major fault, PMD-mapped page-cache folios
//! and the copy-on-write of one of their pages. The numbers asserted were
//! measured on such a host (see crates/workload/validate/file-*.toml).

mod common;
use common::*;
use mm::*;

fn file(addr: u64, len: u64, cached: bool, shared: bool) -> MmapArgs {
    MmapArgs {
        kind: MapKind::File { cached, offset: 0 },
        shared,
        ..MmapArgs::anon(addr, len)
    }
}

fn cfg(readaround: u64) -> MmConfig {
    MmConfig {
        readaround_bytes: readaround,
        ..MmConfig::default()
    }
}

fn faults(s: &AddressSpace, ctx: &ThreadCtx) -> (i64, i64) {
    let c = counters(s, ctx);
    (c.major_faults, c.minor_faults)
}

fn pte_tables(s: &AddressSpace, ctx: &ThreadCtx) -> i64 {
    let c = counters(s, ctx);
    c.pt_pages
        .iter()
        .find(|(l, _)| l == "PTE")
        .map_or(-1, |x| x.1)
}

fn advise_hugepage(s: &AddressSpace, ctx: &mut ThreadCtx, len: u64) {
    done(s, s.madvise(ctx, BASE, len, Advice::HugePage));
}

#[test]
fn the_read_around_window_is_the_configured_device_window() {
    // 8 MiB read around page 0 covers 4 MiB; 128 KiB does not.
    for (ra, major_at_4m) in [(8 * M, false), (128 * K, true)] {
        let s = space(cfg(ra));
        let mut ctx = ThreadCtx::new();
        done(&s, s.mmap(&mut ctx, file(BASE, 16 * M, false, false)));
        access(&s, &mut ctx, BASE, false);
        assert_eq!(faults(&s, &ctx), (1, 0));
        access(&s, &mut ctx, BASE + 4 * M, false);
        let want = if major_at_4m { (2, 0) } else { (1, 1) };
        assert_eq!(faults(&s, &ctx), want, "read-ahead {ra}");
        // The window ends at 8 MiB, whatever its size: past it, a miss.
        access(&s, &mut ctx, BASE + 12 * M, false);
        assert_eq!(faults(&s, &ctx).0, want.0 + 1);
        finish(s, &mut ctx);
    }
}

#[test]
fn a_major_fault_is_retried_with_fault_around() {
    let s = space(cfg(8 * M));
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, file(BASE, 16 * M, false, false)));
    access(&s, &mut ctx, BASE + 8 * M + 5 * 4096, false);
    let c = counters(&s, &ctx);
    assert_eq!((c.major_faults, c.minor_faults, c.rss_file_kb), (1, 0, 64));
    // The 64 KiB window is aligned: its first and last pages are mapped.
    access(&s, &mut ctx, BASE + 8 * M, false);
    access(&s, &mut ctx, BASE + 8 * M + 60 * K, false);
    assert_eq!(faults(&s, &ctx), (1, 0));
    access(&s, &mut ctx, BASE + 8 * M + 64 * K, false);
    assert_eq!(faults(&s, &ctx), (1, 1));
    finish(s, &mut ctx);
}

#[test]
fn a_sequential_read_ramps_folios_up_to_pmd_mapped_ones() {
    // Measured on 6.18 (ext4, read_ahead_kb 8192): 64 MiB read page by
    // page faults 436 times, once major; the last 24 MiB are PMD-mapped.
    let s = space(cfg(8 * M));
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, file(BASE, 64 * M, false, false)));
    for p in 0..(64 * M / 4096) {
        access(&s, &mut ctx, BASE + p * 4096, false);
    }
    let c = counters(&s, &ctx);
    assert_eq!((c.major_faults, c.minor_faults), (1, 435));
    assert_eq!(c.rss_file_kb, 64 * 1024);
    assert_eq!(
        pte_tables(&s, &ctx),
        20,
        "PTE tables for the first 40 MiB only"
    );
    // Without large folios, every 64 KiB costs a fault and every 2 MiB a table.
    let s2 = space(MmConfig {
        large_folios: false,
        ..cfg(8 * M)
    });
    let mut ctx2 = ThreadCtx::new();
    done(&s2, s2.mmap(&mut ctx2, file(BASE, 64 * M, false, false)));
    for p in 0..(64 * M / 4096) {
        access(&s2, &mut ctx2, BASE + p * 4096, false);
    }
    assert_eq!(faults(&s2, &ctx2), (1, 1023));
    assert_eq!(pte_tables(&s2, &ctx2), 32);
    done(&s, s.munmap(&mut ctx, BASE, 64 * M));
    assert_eq!(counters(&s, &ctx).rss_file_kb, 0);
    finish(s, &mut ctx);
    finish(s2, &mut ctx2);
}

#[test]
fn a_hugepage_file_mapping_gets_a_pmd_folio_without_a_pte_table() {
    let s = space(cfg(8 * M));
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, file(BASE, 16 * M, false, false)));
    advise_hugepage(&s, &mut ctx, 16 * M);
    let before = counters(&s, &ctx).vmpte_kb;
    access(&s, &mut ctx, BASE + 3 * M, false);
    let c = counters(&s, &ctx);
    assert_eq!((c.major_faults, c.minor_faults), (1, 0));
    assert_eq!(c.rss_file_kb, 2048);
    assert_eq!(pte_tables(&s, &ctx), 0);
    // The PUD and PMD tables of the walk, no PTE table, no deposit.
    assert_eq!(c.vmpte_kb - before, 8);
    assert_eq!(c.anon_huge_kb, 0);
    // The fault read [2, 6) MiB (two aligned PMD folios); the rest of the
    // file read through: a miss at 0, then a fault per 2 MiB, all hits.
    for p in 0..8 {
        access(&s, &mut ctx, BASE + p * 2 * M, false);
    }
    let c = counters(&s, &ctx);
    assert_eq!((c.major_faults, c.minor_faults), (2, 6));
    assert_eq!((c.rss_file_kb, pte_tables(&s, &ctx)), (16 * 1024, 0));
    s.check_invariants().unwrap();
    done(&s, s.munmap(&mut ctx, BASE, 16 * M));
    assert_eq!(counters(&s, &ctx).rss_file_kb, 0);
    finish(s, &mut ctx);
}

#[test]
fn a_private_write_to_a_pmd_folio_unmaps_it_and_copies_one_page() {
    let s = space(cfg(8 * M));
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, file(BASE, 4 * M, false, false)));
    advise_hugepage(&s, &mut ctx, 4 * M);
    access(&s, &mut ctx, BASE, false);
    let vmpte = counters(&s, &ctx).vmpte_kb;
    access(&s, &mut ctx, BASE + 4096, true);
    let c = counters(&s, &ctx);
    assert_eq!((c.major_faults, c.minor_faults), (1, 1));
    assert_eq!(
        (c.rss_file_kb, c.rss_anon_kb),
        (0, 4),
        "PMD gone, one COW page"
    );
    assert_eq!(pte_tables(&s, &ctx), 1);
    assert_eq!(c.vmpte_kb - vmpte, 4);
    // A write elsewhere in the folio: do_cow_fault, no fault-around.
    access(&s, &mut ctx, BASE + 3 * 4096, true);
    let c = counters(&s, &ctx);
    assert_eq!((c.minor_faults, c.rss_file_kb, c.rss_anon_kb), (2, 0, 8));
    // A read maps the cached folio whole through the PTE table.
    access(&s, &mut ctx, BASE + 100 * 4096, false);
    let c = counters(&s, &ctx);
    assert_eq!((c.minor_faults, c.rss_file_kb), (3, 2048 - 8));
    s.check_invariants().unwrap();
    finish(s, &mut ctx);
}

#[test]
fn a_shared_write_to_a_pmd_folio_maps_it_again_writable() {
    let s = space(cfg(8 * M));
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, file(BASE, 4 * M, false, true)));
    advise_hugepage(&s, &mut ctx, 4 * M);
    access(&s, &mut ctx, BASE, false);
    access(&s, &mut ctx, BASE + 4096, true);
    let c = counters(&s, &ctx);
    assert_eq!((c.major_faults, c.minor_faults), (1, 1));
    assert_eq!((c.rss_file_kb, c.rss_anon_kb), (2048, 0));
    assert_eq!(pte_tables(&s, &ctx), 0);
    // Writable now: no further fault in the folio.
    access(&s, &mut ctx, BASE + 2 * M - 4096, true);
    assert_eq!(faults(&s, &ctx), (1, 1));
    finish(s, &mut ctx);
}

#[test]
fn a_cached_file_of_base_folios_is_never_pmd_mapped() {
    let s = space(cfg(8 * M));
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, file(BASE, 4 * M, true, false)));
    advise_hugepage(&s, &mut ctx, 4 * M);
    access(&s, &mut ctx, BASE, false);
    let c = counters(&s, &ctx);
    assert_eq!((c.major_faults, c.minor_faults, c.rss_file_kb), (0, 1, 64));
    assert_eq!(pte_tables(&s, &ctx), 1);
    finish(s, &mut ctx);
}
