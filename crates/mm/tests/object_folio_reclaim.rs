//! MADV_COLD and MADV_PAGEOUT of large page-cache folios mapped by PTEs
//! (Linux 6.18 `madvise_cold_or_pageout_pte_range`, the `folio_test_large`
//! part): a batch of PTEs shorter than the folio splits it, which unmaps
//! all of it and reclaims nothing; a whole batch is reclaimed whole by
//! pageout (clean: dropped; dirty: kept) and left by cold; a folio another
//! process maps is left. The counts asserted were measured on a 6.18 host
//! (crates/workload/validate/shmem-huge-pte-*.toml, file-thp-pte-*.toml).

mod common;
use common::*;
use mm::*;
use std::sync::{Arc, Weak};

const P: u64 = 4096;

fn tmpfs(s: &AddressSpace, ctx: &mut ThreadCtx, len: u64) {
    let args = MmapArgs {
        kind: MapKind::Tmpfs(ShmemHuge::Always),
        shared: true,
        ..MmapArgs::anon(BASE, len)
    };
    done(s, s.mmap(ctx, args));
}

fn touch(s: &AddressSpace, ctx: &mut ThreadCtx, from: u64, len: u64, write: bool) {
    for va in (from..from + len).step_by(P as usize) {
        access(s, ctx, va, write);
    }
}

/// Faults (major, minor) of reading `[from, from + len)`.
fn read_faults(s: &AddressSpace, ctx: &mut ThreadCtx, from: u64, len: u64) -> (i64, i64) {
    let c = counters(s, ctx);
    touch(s, ctx, from, len, false);
    let d = counters(s, ctx);
    (
        d.major_faults - c.major_faults,
        d.minor_faults - c.minor_faults,
    )
}

/// A tmpfs huge=always mapping of one 2 MiB folio, read or written, then
/// mapped by PTEs in one VMA: an mprotect of a page splits the PMD
/// mapping and the VMA, reads map the folio by PTEs, and the mprotect
/// undone merges the VMA again.
fn pte_mapped_shmem(write: bool) -> (AddressSpace, ThreadCtx) {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    tmpfs(&s, &mut ctx, 2 * M);
    touch(&s, &mut ctx, BASE, 2 * M, write);
    done(&s, s.mprotect(&mut ctx, BASE + M, P, Prot::R));
    touch(&s, &mut ctx, BASE, 2 * M, false);
    done(&s, s.mprotect(&mut ctx, BASE + M, P, Prot::RW));
    let c = counters(&s, &ctx);
    assert_eq!(
        (c.rss_shmem_kb, c.shmem_pmd_kb),
        (2048, 0),
        "mapped by PTEs"
    );
    (s, ctx)
}

#[test]
fn pageout_of_a_whole_clean_pte_mapped_folio_drops_it() {
    let (s, mut ctx) = pte_mapped_shmem(false);
    let frames = s.mem().live_data().1;
    done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::PageOut));
    assert_eq!(counters(&s, &ctx).rss_shmem_kb, 0);
    assert_eq!(frames - s.mem().live_data().1, 2 * M, "its 2 MiB freed");
    // A new folio, mapped whole through the PTE table by one fault.
    assert_eq!(read_faults(&s, &mut ctx, BASE, 2 * M), (0, 1));
    finish(s, &mut ctx);
}

#[test]
fn pageout_of_a_whole_dirty_pte_mapped_folio_unmaps_and_keeps_it() {
    let (s, mut ctx) = pte_mapped_shmem(true);
    let frames = s.mem().live_data();
    done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::PageOut));
    assert_eq!(counters(&s, &ctx).rss_shmem_kb, 0);
    assert_eq!(s.mem().live_data(), frames, "kept whole, one frame");
    assert_eq!(read_faults(&s, &mut ctx, BASE, 2 * M), (0, 1));
    finish(s, &mut ctx);
}

#[test]
fn advice_over_part_of_a_pte_mapped_folio_splits_and_unmaps_all_of_it() {
    for advice in [Advice::PageOut, Advice::Cold] {
        for write in [false, true] {
            let (s, mut ctx) = pte_mapped_shmem(write);
            let (frames, bytes) = s.mem().live_data();
            done(&s, s.madvise(&mut ctx, BASE + M, P, advice));
            assert_eq!(counters(&s, &ctx).rss_shmem_kb, 0, "{advice:?}");
            // Nothing freed: the folio's one frame is 512 base pages now,
            // read back 16 a fault.
            assert_eq!(s.mem().live_data(), (frames + 511, bytes), "{advice:?}");
            assert_eq!(read_faults(&s, &mut ctx, BASE, 2 * M), (0, 32));
            finish(s, &mut ctx);
        }
    }
}

#[test]
fn cold_over_a_whole_pte_mapped_folio_changes_nothing() {
    let (s, mut ctx) = pte_mapped_shmem(true);
    done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::Cold));
    assert_eq!(counters(&s, &ctx).rss_shmem_kb, 2048);
    assert_eq!(read_faults(&s, &mut ctx, BASE, 2 * M), (0, 0));
    finish(s, &mut ctx);
}

#[test]
fn a_split_vma_makes_any_range_partial_and_the_split_unmaps_locked_pages() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    tmpfs(&s, &mut ctx, 2 * M);
    touch(&s, &mut ctx, BASE, 2 * M, true);
    done(&s, s.mlock(&mut ctx, BASE + M, P));
    touch(&s, &mut ctx, BASE, 2 * M, false);
    assert_eq!(counters(&s, &ctx).rss_shmem_kb, 2048);
    // The locked VMA refuses the advice; the first one's pageout splits
    // the folio, which unmaps the locked page and the third VMA's too.
    assert!(s.madvise(&mut ctx, BASE, 2 * M, Advice::PageOut).is_err());
    done(&s, s.madvise(&mut ctx, BASE, M, Advice::PageOut));
    assert_eq!(counters(&s, &ctx).rss_shmem_kb, 0);
    // 16 pages a fault in each unlocked half, 1 for the locked page.
    assert_eq!(read_faults(&s, &mut ctx, BASE, 2 * M), (0, 33));
    finish(s, &mut ctx);
}

#[test]
fn a_pte_mapped_folio_a_fork_child_maps_is_left_alone() {
    let p = Arc::new(space(MmConfig::default()));
    let mut pc = ThreadCtx::new();
    p.join_rmap(Arc::downgrade(&p) as Weak<dyn FamilyMember>);
    tmpfs(&p, &mut pc, 2 * M);
    touch(&p, &mut pc, BASE, 2 * M, false);
    done(&p, p.mprotect(&mut pc, BASE + M, P, Prot::R));
    touch(&p, &mut pc, BASE, 2 * M, false);
    done(&p, p.mprotect(&mut pc, BASE + M, P, Prot::RW));
    let c = Arc::new(p.new_child().unwrap());
    p.fork(&mut pc, &c)
        .unwrap()
        .complete_without_tlb(&p)
        .unwrap();
    c.join_rmap(Arc::downgrade(&c) as Weak<dyn FamilyMember>);
    let mut cc = ThreadCtx::new();
    access(&c, &mut cc, BASE, false);
    for (off, len) in [(M, P), (0, 2 * M)] {
        done(&p, p.madvise(&mut pc, BASE + off, len, Advice::PageOut));
        done(&c, c.madvise(&mut cc, BASE + off, len, Advice::PageOut));
    }
    assert_eq!(counters(&p, &pc).rss_shmem_kb, 2048);
    assert_eq!(counters(&c, &cc).rss_shmem_kb, 2048);
    c.exit(&mut cc).unwrap();
    // Alone again: the parent's pageout drops the clean folio.
    done(&p, p.madvise(&mut pc, BASE, 2 * M, Advice::PageOut));
    assert_eq!(counters(&p, &pc).rss_shmem_kb, 0);
}

/// A 4 MiB cold file advised hugepage, read (two PMD-mapped folios); a
/// private write in the first folio and MADV_DONTNEED of the copy leave a
/// PTE table there, and a read maps the first folio back whole by PTEs.
fn pte_mapped_file() -> (AddressSpace, ThreadCtx) {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    let args = MmapArgs {
        kind: MapKind::File {
            cached: false,
            offset: 0,
        },
        ..MmapArgs::anon(BASE, 4 * M)
    };
    done(&s, s.mmap(&mut ctx, args));
    done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::HugePage));
    touch(&s, &mut ctx, BASE, 4 * M, false);
    access(&s, &mut ctx, BASE + P, true);
    done(&s, s.madvise(&mut ctx, BASE + P, P, Advice::DontNeed));
    assert_eq!(read_faults(&s, &mut ctx, BASE, 2 * M), (0, 1));
    let c = counters(&s, &ctx);
    assert_eq!((c.rss_file_kb, c.file_pmd_kb), (4096, 2048));
    (s, ctx)
}

#[test]
fn pageout_of_a_whole_pte_mapped_file_folio_drops_it_from_the_cache() {
    let (s, mut ctx) = pte_mapped_file();
    done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::PageOut));
    assert_eq!(counters(&s, &ctx).rss_file_kb, 2048);
    // Read from the file again: one major fault maps the new folio whole.
    assert_eq!(read_faults(&s, &mut ctx, BASE, 2 * M), (1, 0));
    finish(s, &mut ctx);
}

#[test]
fn pageout_of_part_of_a_pte_mapped_file_folio_keeps_its_pages_cached() {
    let (s, mut ctx) = pte_mapped_file();
    done(&s, s.madvise(&mut ctx, BASE + M, P, Advice::PageOut));
    assert_eq!(counters(&s, &ctx).rss_file_kb, 2048);
    assert_eq!(read_faults(&s, &mut ctx, BASE, 2 * M), (0, 32));
    finish(s, &mut ctx);
}

#[test]
fn a_private_copy_in_the_batch_splits_the_file_folio_and_stays() {
    let (s, mut ctx) = pte_mapped_file();
    access(&s, &mut ctx, BASE + P, true);
    done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::PageOut));
    let c = counters(&s, &ctx);
    assert_eq!((c.rss_file_kb, c.rss_anon_kb), (2048, 4));
    assert_eq!(read_faults(&s, &mut ctx, BASE, 2 * M), (0, 32));
    finish(s, &mut ctx);
}
