//! VMA merging, the huge PMD split of a VMA split, and mprotect's populate
//! of locked private VMAs, through the system calls (Linux mm/vma.c,
//! mm/huge_memory.c, mm/mprotect.c). Default configuration: Linux 6.18 as
//! this project's hosts run it (THP "madvise", PT reclaim on).
#![cfg(not(loom))]

mod common;
use common::*;
use mm::*;

fn write_all(s: &AddressSpace, ctx: &mut ThreadCtx, start: u64, len: u64) {
    let mut va = start;
    while va < start + len {
        assert!(access(s, ctx, va, true).is_none());
        va += 4096;
    }
}

fn pte_tables(c: &MmCounters) -> u64 {
    c.pt_pages.iter().find(|(n, _)| n == "PTE").unwrap().1 as u64
}

#[test]
fn mprotect_restore_merges_so_dontneed_of_the_whole_table_reclaims_it() {
    // The same sequence with and without restoring the protection: only
    // the merged VMA lets one MADV_DONTNEED cover the 2 MiB PTE table.
    for restore in [true, false] {
        let s = space(MmConfig::default());
        let mut ctx = ThreadCtx::new();
        done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
        write_all(&s, &mut ctx, BASE, 4 * M);
        done(&s, s.mprotect(&mut ctx, BASE + M, 4096, Prot::R));
        assert_eq!(s.vmas().len(), 3);
        if restore {
            done(&s, s.mprotect(&mut ctx, BASE + M, 4096, Prot::RW));
            assert_eq!(s.vmas().len(), 1, "Linux: vma_merge_existing_range");
        }
        let before = counters(&s, &ctx).vmpte_kb;
        done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::DontNeed));
        let c = counters(&s, &ctx);
        assert_eq!(c.rss_anon_kb, 2048);
        let freed = if restore { 4 } else { 0 };
        assert_eq!(before - c.vmpte_kb, freed, "restore {restore}");
        finish(s, &mut ctx);
    }
}

#[test]
fn merged_vma_covers_the_aligned_range_so_a_thp_can_serve_it() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
    done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::HugePage));
    done(&s, s.mprotect(&mut ctx, BASE + M, 4096, Prot::NONE));
    done(&s, s.mprotect(&mut ctx, BASE + M, 4096, Prot::RW));
    write_all(&s, &mut ctx, BASE, 4 * M);
    let c = counters(&s, &ctx);
    assert_eq!(c.anon_huge_kb, 4096);
    assert_eq!(c.minor_faults, 2);
    finish(s, &mut ctx);
}

#[test]
fn a_new_mapping_next_to_a_compatible_one_merges_with_it() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, M)));
    write_all(&s, &mut ctx, BASE, 4096);
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE + M, M)));
    assert_eq!(s.vmas().len(), 1, "Linux: vma_merge_new_range");
    let ro = MmapArgs {
        prot: Prot::R,
        ..MmapArgs::anon(BASE + 2 * M, M)
    };
    done(&s, s.mmap(&mut ctx, ro));
    let nr = MmapArgs {
        noreserve: true,
        ..MmapArgs::anon(BASE + 3 * M, M)
    };
    done(&s, s.mmap(&mut ctx, nr));
    let file = MmapArgs {
        kind: MapKind::File {
            cached: true,
            offset: 0,
        },
        ..MmapArgs::anon(BASE + 4 * M, M)
    };
    done(&s, s.mmap(&mut ctx, file));
    assert_eq!(s.vmas().len(), 4, "other prot, MAP_NORESERVE, a file");
    // The read-only mapping made writable gets VM_ACCOUNT and merges with
    // the first; the MAP_NORESERVE one stays apart.
    done(&s, s.mprotect(&mut ctx, BASE + 2 * M, M, Prot::RW));
    let spans: Vec<(u64, u64)> = s.vmas().iter().map(|v| (v.start, v.end)).collect();
    assert_eq!(
        spans,
        [
            (BASE, BASE + 3 * M),
            (BASE + 3 * M, BASE + 4 * M),
            (BASE + 4 * M, BASE + 5 * M)
        ]
    );
    finish(s, &mut ctx);
}

#[test]
fn vm_account_stays_on_a_vma_with_an_anon_vma_made_read_only() {
    // Linux mprotect_fixup uncharges a private anonymous VMA made
    // read-only only while it has no anon_vma; a read-only mapping is never
    // charged, so the two differ in VM_ACCOUNT and do not merge.
    for written in [false, true] {
        let s = space(MmConfig::default());
        let mut ctx = ThreadCtx::new();
        done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, M)));
        if written {
            write_all(&s, &mut ctx, BASE, 4096);
        }
        done(&s, s.mprotect(&mut ctx, BASE, M, Prot::R));
        let ro = MmapArgs {
            prot: Prot::R,
            ..MmapArgs::anon(BASE + M, M)
        };
        done(&s, s.mmap(&mut ctx, ro));
        let n = if written { 2 } else { 1 };
        assert_eq!(s.vmas().len(), n, "written {written}");
        finish(s, &mut ctx);
    }
}

#[test]
fn vmas_with_different_anon_vmas_stay_apart_after_munlock() {
    // The second VMA faults (mlock) while its flags differ from the
    // first's, so each gets its own anon_vma; munlock cannot merge them.
    // Written first, the whole VMA has one anon_vma the pieces share.
    for written_first in [false, true] {
        let s = space(MmConfig::default());
        let mut ctx = ThreadCtx::new();
        done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
        if written_first {
            write_all(&s, &mut ctx, BASE, M);
        }
        done(&s, s.mlock(&mut ctx, BASE + M, 3 * M));
        if !written_first {
            write_all(&s, &mut ctx, BASE, M);
        }
        let ids: Vec<Option<u64>> = s.vmas().iter().map(|v| v.anon_vma.get()).collect();
        assert!(ids.iter().all(Option::is_some));
        assert_eq!(ids[0] == ids[1], written_first);
        done(&s, s.munlock(&mut ctx, BASE + M, 3 * M));
        let n = if written_first { 1 } else { 2 };
        assert_eq!(s.vmas().len(), n);
        let before = counters(&s, &ctx);
        done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::DontNeed));
        let c = counters(&s, &ctx);
        let reclaimed = if written_first { 2 } else { 1 };
        assert_eq!(pte_tables(&before) - pte_tables(&c), reclaimed);
        finish(s, &mut ctx);
    }
}

#[test]
fn a_zero_page_read_gives_no_anon_vma_but_a_thp_eligible_read_does() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 2 * M)));
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE + 4 * M, 2 * M)));
    done(
        &s,
        s.madvise(&mut ctx, BASE + 4 * M, 2 * M, Advice::HugePage),
    );
    assert!(access(&s, &mut ctx, BASE, false).is_none());
    assert!(access(&s, &mut ctx, BASE + 4 * M, false).is_none());
    let v = s.vmas();
    assert_eq!(
        v[0].anon_vma.get(),
        None,
        "do_anonymous_page: zero page first"
    );
    assert!(
        v[1].anon_vma.get().is_some(),
        "do_huge_pmd_anonymous_page prepares before the huge zero page"
    );
    finish(s, &mut ctx);
}

/// Two THPs, then `op` over the middle 2 MiB: both PMDs are split into
/// their deposited tables, which changes neither VmPTE nor RSS.
fn split_by(op: impl Fn(&AddressSpace, &mut ThreadCtx) -> Result<Deferred, Errno>, vmas: usize) {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
    done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::HugePage));
    write_all(&s, &mut ctx, BASE, 4 * M);
    let before = counters(&s, &ctx);
    assert_eq!(before.anon_huge_kb, 4096);
    done(&s, op(&s, &mut ctx));
    let c = counters(&s, &ctx);
    assert_eq!(s.vmas().len(), vmas);
    assert_eq!(c.anon_huge_kb, 0);
    assert_eq!(c.rss_anon_kb, 4096);
    assert_eq!(c.vmpte_kb, before.vmpte_kb);
    assert_eq!(pte_tables(&c), pte_tables(&before));
    assert_eq!(
        s.page_table()
            .translate(pt::VirtAddr::new(BASE))
            .unwrap()
            .size,
        4096
    );
    s.check_invariants().unwrap();
    // Mapped still: writes do not fault.
    write_all(&s, &mut ctx, BASE, 4 * M);
    assert_eq!(counters(&s, &ctx).minor_faults, before.minor_faults);
    finish(s, &mut ctx);
}

#[test]
fn madvise_nohugepage_of_part_splits_the_huge_pmds_it_straddles() {
    split_by(|s, c| s.madvise(c, BASE + M, 2 * M, Advice::NoHugePage), 3);
}

#[test]
fn mlock_and_munlock_of_part_split_the_huge_pmds_it_straddles() {
    split_by(
        |s, c| {
            s.mlock(c, BASE + M, 2 * M)?
                .complete_without_tlb(s)
                .unwrap();
            s.munlock(c, BASE + M, 2 * M)
        },
        1,
    );
}

#[test]
fn mprotect_of_part_splits_the_huge_pmds_it_straddles() {
    split_by(|s, c| s.mprotect(c, BASE + M, 2 * M, Prot::RWX), 3);
}

#[test]
fn mprotect_to_the_same_protection_changes_nothing() {
    // Linux mprotect_fixup returns early: no split of the VMA or the PMD.
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 2 * M)));
    done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::HugePage));
    write_all(&s, &mut ctx, BASE, 4096);
    done(&s, s.mprotect(&mut ctx, BASE + M, 4096, Prot::RW));
    assert_eq!(s.vmas().len(), 1);
    assert_eq!(counters(&s, &ctx).anon_huge_kb, 2048);
    finish(s, &mut ctx);
}

#[test]
fn munmap_of_part_of_a_thp_keeps_the_rest_pte_mapped() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 2 * M)));
    done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::HugePage));
    write_all(&s, &mut ctx, BASE, 4096);
    done(&s, s.munmap(&mut ctx, BASE + M, M));
    let c = counters(&s, &ctx);
    assert_eq!((c.anon_huge_kb, c.rss_anon_kb), (0, 1024));
    assert_eq!(
        s.page_table()
            .translate(pt::VirtAddr::new(BASE))
            .unwrap()
            .size,
        4096
    );
    finish(s, &mut ctx);
}

#[test]
fn mprotect_populates_a_locked_private_vma_made_writable() {
    // Locked or not: the copy-on-write faults land at the mprotect or at
    // the writes.
    for locked in [true, false] {
        let s = space(MmConfig::default());
        let mut ctx = ThreadCtx::new();
        let ro = MmapArgs {
            prot: Prot::R,
            ..MmapArgs::anon(BASE, 2 * M)
        };
        done(&s, s.mmap(&mut ctx, ro));
        if locked {
            done(&s, s.mlock(&mut ctx, BASE, 2 * M));
        }
        let c0 = counters(&s, &ctx);
        assert_eq!(c0.minor_faults, if locked { 512 } else { 0 });
        done(&s, s.mprotect(&mut ctx, BASE + M, M, Prot::RW));
        let c1 = counters(&s, &ctx);
        let at_mprotect = if locked { 256 } else { 0 };
        assert_eq!(c1.minor_faults - c0.minor_faults, at_mprotect);
        assert_eq!(c1.rss_anon_kb, if locked { 1024 } else { 0 });
        write_all(&s, &mut ctx, BASE + M, M);
        let c2 = counters(&s, &ctx);
        assert_eq!(c2.minor_faults - c1.minor_faults, 256 - at_mprotect);
        assert_eq!(c2.rss_anon_kb, 1024);
        finish(s, &mut ctx);
    }
}

#[test]
fn mprotect_of_a_locked_private_file_mapping_copies_every_page_at_once() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    let f = MmapArgs {
        kind: MapKind::File {
            cached: true,
            offset: 0,
        },
        prot: Prot::R,
        locked: true,
        ..MmapArgs::anon(BASE, 2 * M)
    };
    done(&s, s.mmap(&mut ctx, f));
    let c0 = counters(&s, &ctx);
    assert_eq!(
        (c0.minor_faults, c0.rss_file_kb),
        (32, 2048),
        "fault-around"
    );
    done(&s, s.mprotect(&mut ctx, BASE, 2 * M, Prot::RW));
    let c1 = counters(&s, &ctx);
    assert_eq!(c1.minor_faults - c0.minor_faults, 512);
    assert_eq!((c1.rss_anon_kb, c1.rss_file_kb), (2048, 0));
    write_all(&s, &mut ctx, BASE, 2 * M);
    assert_eq!(counters(&s, &ctx).minor_faults, c1.minor_faults);
    finish(s, &mut ctx);
}
