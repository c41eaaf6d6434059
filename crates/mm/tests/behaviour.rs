//! One test per behaviour, each naming the Linux function it mirrors.

mod common;
use common::*;
use mm::*;
use pt::VirtAddr;

fn thp_cfg(thp: ThpMode) -> MmConfig {
    MmConfig {
        thp,
        ..MmConfig::default()
    }
}

#[test]
fn do_anonymous_page_read_maps_the_zero_page_without_rss() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 64 * K)));
    assert!(access(&s, &mut ctx, BASE, false).is_none());
    let c = counters(&s, &ctx);
    assert_eq!(c.minor_faults, 1);
    assert_eq!(c.rss_anon_kb, 0);
    assert_eq!(
        s.page_table()
            .translate(VirtAddr::new(BASE))
            .unwrap()
            .pa
            .get(),
        s.zero_page()
    );
    // PUD + PMD + PTE tables.
    assert_eq!(c.vmpte_kb, 12);
    finish(s, &mut ctx);
}

#[test]
fn do_anonymous_page_write_allocates_and_wp_page_copy_replaces_the_zero_page() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 64 * K)));
    access(&s, &mut ctx, BASE, true);
    access(&s, &mut ctx, BASE + 4096, false);
    access(&s, &mut ctx, BASE + 4096, true);
    let c = counters(&s, &ctx);
    assert_eq!(c.minor_faults, 3);
    assert_eq!(c.rss_anon_kb, 8);
    assert_ne!(
        s.page_table()
            .translate(VirtAddr::new(BASE + 4096))
            .unwrap()
            .pa
            .get(),
        s.zero_page()
    );
    finish(s, &mut ctx);
}

#[test]
fn mm_account_fault_64mib_written_page_by_page() {
    // REFERENCES: 64 MiB written page by page = 16,384 minor faults, +128 kB of PTE tables.
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 64 * M)));
    for p in 0..(64 * M / 4096) {
        access(&s, &mut ctx, BASE + p * 4096, true);
    }
    let c = counters(&s, &ctx);
    assert_eq!(c.minor_faults, 16384);
    assert_eq!(c.rss_anon_kb, 64 * 1024);
    let pte = c.pt_pages.iter().find(|(n, _)| n == "PTE").unwrap().1;
    assert_eq!(pte * 4, 128);
    finish(s, &mut ctx);
}

#[test]
fn do_huge_pmd_anonymous_page_maps_2m_and_deposits_a_table() {
    let s = space(thp_cfg(ThpMode::Madvise));
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
    done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::HugePage));
    access(&s, &mut ctx, BASE + 8192, true);
    let c = counters(&s, &ctx);
    assert_eq!(c.minor_faults, 1);
    assert_eq!(c.anon_huge_kb, 2048);
    assert_eq!(c.rss_anon_kb, 2048);
    // PUD + PMD + the deposited PTE table.
    assert_eq!(c.vmpte_kb, 12);
    assert_eq!(
        s.page_table().translate(VirtAddr::new(BASE)).unwrap().size,
        2 * M
    );
    // Second huge page by a read: the huge zero page, deposited too, no RSS.
    access(&s, &mut ctx, BASE + 2 * M, false);
    let c = counters(&s, &ctx);
    assert_eq!(c.rss_anon_kb, 2048);
    assert_eq!(c.vmpte_kb, 16);
    assert_eq!(
        s.page_table()
            .translate(VirtAddr::new(BASE + 2 * M))
            .unwrap()
            .pa
            .get(),
        s.huge_zero_page().unwrap()
    );
    s.check_invariants().unwrap();
    finish(s, &mut ctx);
}

#[test]
fn do_huge_zero_wp_pmd_replaces_the_huge_zero_page_with_a_thp() {
    let s = space(thp_cfg(ThpMode::Madvise));
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
    done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::HugePage));
    access(&s, &mut ctx, BASE + 4096, false);
    let zero = s.huge_zero_page().unwrap();
    assert_eq!(
        s.page_table()
            .translate(VirtAddr::new(BASE))
            .unwrap()
            .pa
            .get(),
        zero
    );
    let before = counters(&s, &ctx);
    // One write fault: a new THP in place of the huge zero page.
    let r = s.fault(&mut ctx, BASE + 8192, FaultAccess::WRITE);
    let FaultResult::Handled { deferred, major } = r else {
        panic!("write to the huge zero page: {r:?}");
    };
    assert!(!major);
    assert!(
        !deferred.is_empty(),
        "the huge zero page's TLB entry must be flushed"
    );
    deferred.complete_without_tlb(&s).unwrap();
    let t = s
        .page_table()
        .translate(VirtAddr::new(BASE + 8192))
        .unwrap();
    assert_eq!(t.size, 2 * M);
    assert_ne!(t.pa.align_down(2 * M).get(), zero);
    assert!(t.attrs.perms.write);
    // The whole 2 MiB is now writable without another fault.
    assert!(access(&s, &mut ctx, BASE + 2 * M - 4096, true).is_none());
    let c = counters(&s, &ctx);
    assert_eq!(c.minor_faults, before.minor_faults + 1);
    assert_eq!(c.rss_anon_kb, 2048);
    assert_eq!(c.anon_huge_kb, 2048);
    assert_eq!(
        c.threads.thp_fault_alloc,
        before.threads.thp_fault_alloc + 1
    );
    assert_eq!(c.vmpte_kb, before.vmpte_kb, "the deposited table stays");
    s.check_invariants().unwrap();
    // Unmapping frees the THP and the deposit.
    done(&s, s.munmap(&mut ctx, BASE, 2 * M));
    let c = counters(&s, &ctx);
    assert_eq!((c.rss_anon_kb, c.anon_huge_kb), (0, 0));
    finish(s, &mut ctx);
}

#[test]
fn do_huge_zero_wp_pmd_falls_back_to_split_when_no_huge_page() {
    use pt::mem::AllocKind;
    let s = space(thp_cfg(ThpMode::Madvise));
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
    done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::HugePage));
    access(&s, &mut ctx, BASE + 2 * M, false);
    let vmpte = counters(&s, &ctx).vmpte_kb;
    s.mem().set_fault_injection(Some(Box::new(|k, _| {
        k == AllocKind::Data { size: 2 << 20 }
    })));
    // split_huge_pmd, then wp_page_copy of one page.
    access(&s, &mut ctx, BASE + 2 * M + 4096, true);
    s.mem().set_fault_injection(None);
    let c = counters(&s, &ctx);
    assert_eq!(c.minor_faults, 2, "the split and the copy are one fault");
    assert_eq!(c.rss_anon_kb, 4);
    assert_eq!(c.anon_huge_kb, 0);
    assert_eq!(c.threads.thp_fault_fallback, 1);
    assert_eq!(c.threads.thp_fault_alloc, 0);
    assert_eq!(
        c.vmpte_kb, vmpte,
        "the deposited table became the PTE table"
    );
    assert_eq!(
        s.page_table()
            .translate(VirtAddr::new(BASE + 2 * M))
            .unwrap()
            .pa
            .get(),
        s.zero_page()
    );
    finish(s, &mut ctx);
}

#[test]
fn thp_policies_never_madvise_and_nohugepage() {
    for (mode, advice, huge) in [
        (ThpMode::Never, Some(Advice::HugePage), false),
        (ThpMode::Madvise, None, false),
        (ThpMode::Always, None, true),
        (ThpMode::Always, Some(Advice::NoHugePage), false),
    ] {
        let s = space(thp_cfg(mode));
        let mut ctx = ThreadCtx::new();
        done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 2 * M)));
        if let Some(a) = advice {
            done(&s, s.madvise(&mut ctx, BASE, 2 * M, a));
        }
        access(&s, &mut ctx, BASE, true);
        let c = counters(&s, &ctx);
        assert_eq!(c.anon_huge_kb > 0, huge, "{mode:?} {advice:?}");
        finish(s, &mut ctx);
    }
}

#[test]
fn thp_vma_suitable_order_needs_an_aligned_2m_inside_the_vma() {
    let s = space(thp_cfg(ThpMode::Always));
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE + 4096, 4 * M)));
    access(&s, &mut ctx, BASE + 8192, true); // the first 2M is not wholly inside
    access(&s, &mut ctx, BASE + 2 * M, true); // this one is
    let c = counters(&s, &ctx);
    assert_eq!(c.anon_huge_kb, 2048);
    assert_eq!(c.rss_anon_kb, 2048 + 4);
    finish(s, &mut ctx);
}

#[test]
fn alloc_anon_folio_maps_a_multi_size_thp() {
    let mut cfg = MmConfig::default();
    cfg.mthp.insert(64 * K, MthpPolicy::Always);
    let s = space(cfg);
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 256 * K)));
    access(&s, &mut ctx, BASE + 5 * 4096, true);
    let c = counters(&s, &ctx);
    assert_eq!(c.minor_faults, 1);
    assert_eq!(c.rss_anon_kb, 64);
    assert_eq!(c.anon_huge_kb, 0, "mTHP is PTE-mapped, not AnonHugePages");
    assert_eq!(c.threads.mthp_fault_alloc, 1);
    // Partly unmapping the folio keeps the rest mapped.
    done(&s, s.munmap(&mut ctx, BASE, 8192));
    assert_eq!(counters(&s, &ctx).rss_anon_kb, 56);
    s.check_invariants().unwrap();
    // A range with a page already mapped falls back to a smaller size.
    access(&s, &mut ctx, BASE + 64 * K, false);
    access(&s, &mut ctx, BASE + 64 * K + 4096, true);
    assert_eq!(counters(&s, &ctx).rss_anon_kb, 60);
    finish(s, &mut ctx);
}

#[test]
fn mthp_on_riscv_uses_napot_runs() {
    let g = std::sync::Arc::new(pt::geometry::preset("riscv-sv48").unwrap());
    let mut cfg = MmConfig::default();
    cfg.mthp.insert(64 * K, MthpPolicy::Always);
    let s = AddressSpace::new(g, cfg).unwrap();
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(1 << 40, 128 * K)));
    access(&s, &mut ctx, 1 << 40, true);
    let t = s.page_table().translate(VirtAddr::new(1 << 40)).unwrap();
    assert!(t.contiguous);
    assert_eq!(t.size, 64 * K);
    done(&s, s.munmap(&mut ctx, (1 << 40) + 4096, 4096));
    assert!(
        !s.page_table()
            .translate(VirtAddr::new(1 << 40))
            .unwrap()
            .contiguous
    );
    finish(s, &mut ctx);
}

#[test]
fn a_napot_run_cut_by_munmap_or_mprotect_keeps_each_page_its_own_frame() {
    // A NAPOT entry holds its run's address: unfolding must give each page
    // of the run its own frame back, not the run's first.
    let g = std::sync::Arc::new(pt::geometry::preset("riscv-sv39").unwrap());
    let mut cfg = MmConfig::default();
    cfg.mthp.insert(64 * K, MthpPolicy::Always);
    let s = AddressSpace::new(g, cfg).unwrap();
    let mut ctx = ThreadCtx::new();
    let base = 1u64 << 36;
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(base, 128 * K)));
    access(&s, &mut ctx, base, true);
    access(&s, &mut ctx, base + 64 * K, true);
    let first = s.page_table().translate(VirtAddr::new(base)).unwrap();
    let second = s
        .page_table()
        .translate(VirtAddr::new(base + 64 * K))
        .unwrap();
    assert!(first.contiguous && second.contiguous);
    done(&s, s.munmap(&mut ctx, base + 4096, 4096));
    done(
        &s,
        s.mprotect(&mut ctx, base + 64 * K + 8192, 4096, Prot::R),
    );
    for i in (0..32u64).filter(|i| *i != 1) {
        let va = base + i * 4096;
        let t = s.page_table().translate(VirtAddr::new(va)).unwrap();
        let run = if i < 16 {
            first.pa.get()
        } else {
            second.pa.get() - 64 * K
        };
        assert_eq!(t.pa.get(), run + i * 4096, "page {i}");
        assert!(!t.contiguous, "page {i}: both runs were cut");
    }
    s.check_invariants().unwrap();
    finish(s, &mut ctx);
}

fn file(addr: u64, len: u64, cached: bool, shared: bool) -> MmapArgs {
    MmapArgs {
        kind: MapKind::File { cached, offset: 0 },
        shared,
        ..MmapArgs::anon(addr, len)
    }
}

#[test]
fn do_fault_around_maps_16_cached_pages_for_one_fault() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, file(BASE, M, true, false)));
    for p in 0..32 {
        access(&s, &mut ctx, BASE + p * 4096, false);
    }
    let c = counters(&s, &ctx);
    assert_eq!(c.minor_faults, 2);
    assert_eq!(c.rss_file_kb, 128);
    // The window is aligned and clipped to the VMA.
    done(
        &s,
        s.mmap(&mut ctx, file(BASE + 2 * M + 8192, 16 * K, true, false)),
    );
    access(&s, &mut ctx, BASE + 2 * M + 8192 + 4096, false);
    assert_eq!(counters(&s, &ctx).rss_file_kb, 128 + 16);
    finish(s, &mut ctx);
}

#[test]
fn filemap_fault_cold_page_is_major_and_fault_around_maps_only_cached_pages() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, file(BASE, M, false, false)));
    access(&s, &mut ctx, BASE, false);
    let c = counters(&s, &ctx);
    assert_eq!((c.major_faults, c.minor_faults), (1, 0));
    // Linux 6.18 retries a major fault once the page is read; the retry's
    // fault-around maps the window read-around brought in (measured: one
    // major fault, 64 KiB of RssFile).
    assert_eq!(c.rss_file_kb, 64);
    access(&s, &mut ctx, BASE + 4096, false);
    let c = counters(&s, &ctx);
    assert_eq!((c.major_faults, c.minor_faults), (1, 0), "no second fault");
    // Past the 128 KiB read-around window: not cached, a major fault again.
    access(&s, &mut ctx, BASE + 256 * K, false);
    let c = counters(&s, &ctx);
    assert_eq!((c.major_faults, c.minor_faults), (2, 0));
    finish(s, &mut ctx);
}

#[test]
fn do_cow_fault_and_wp_page_copy_on_private_files() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, file(BASE, 64 * K, true, false)));
    access(&s, &mut ctx, BASE, true); // do_cow_fault: no fault-around
    let c = counters(&s, &ctx);
    assert_eq!((c.rss_anon_kb, c.rss_file_kb), (4, 0));
    access(&s, &mut ctx, BASE + 4096, false);
    assert_eq!(counters(&s, &ctx).rss_file_kb, 60);
    access(&s, &mut ctx, BASE + 4096, true); // wp_page_copy
    let c = counters(&s, &ctx);
    assert_eq!((c.rss_anon_kb, c.rss_file_kb, c.minor_faults), (8, 56, 3));
    finish(s, &mut ctx);
}

#[test]
fn shmem_fault_allocates_no_zero_page_and_counts_rss_shmem() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    let a = MmapArgs {
        kind: MapKind::Shmem,
        ..MmapArgs::anon(BASE, 64 * K)
    };
    done(&s, s.mmap(&mut ctx, a));
    access(&s, &mut ctx, BASE, false);
    access(&s, &mut ctx, BASE + 4096, false);
    let c = counters(&s, &ctx);
    assert_eq!((c.rss_shmem_kb, c.rss_anon_kb, c.minor_faults), (8, 0, 2));
    // Shared anonymous memory is shmem too.
    let a = MmapArgs {
        shared: true,
        ..MmapArgs::anon(BASE + M, 64 * K)
    };
    done(&s, s.mmap(&mut ctx, a));
    access(&s, &mut ctx, BASE + M, true);
    assert_eq!(counters(&s, &ctx).rss_shmem_kb, 12);
    finish(s, &mut ctx);
}

#[test]
fn do_shared_fault_wp_page_shared_and_folio_mkclean() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, file(BASE, 64 * K, true, true)));
    access(&s, &mut ctx, BASE, false);
    assert!(
        !s.page_table()
            .translate(VirtAddr::new(BASE))
            .unwrap()
            .attrs
            .perms
            .write,
        "writenotify"
    );
    let kind = |ctx: &ThreadCtx| ctx.counters.fault_kinds[FaultKind::FileMkwrite as usize];
    assert_eq!(kind(&ctx), 0, "a read maps; it makes nothing writable");
    access(&s, &mut ctx, BASE, true);
    assert_eq!(counters(&s, &ctx).minor_faults, 2);
    // wp_page_shared: the write to the read-mapped page is page_mkwrite's.
    assert_eq!(kind(&ctx), 1);
    let d = s.msync(&mut ctx, BASE, 64 * K).unwrap();
    assert_eq!(d.flush.ranges, vec![(BASE, 4096)]);
    d.complete_without_tlb(&s).unwrap();
    // The one dirty page was written back; a second msync finds none.
    assert_eq!(ctx.counters.writeback_pages, 1);
    s.msync(&mut ctx, BASE, 64 * K)
        .unwrap()
        .complete_without_tlb(&s)
        .unwrap();
    assert_eq!(ctx.counters.writeback_pages, 1);
    assert!(
        !s.page_table()
            .translate(VirtAddr::new(BASE))
            .unwrap()
            .attrs
            .perms
            .write
    );
    access(&s, &mut ctx, BASE, true);
    assert_eq!(counters(&s, &ctx).minor_faults, 3);
    assert_eq!(kind(&ctx), 2, "written again after its writeback");
    // Another page fault-around mapped read-only with the first: the same.
    access(&s, &mut ctx, BASE + 8 * K, true);
    assert_eq!(kind(&ctx), 3);
    assert_eq!(ctx.counters.fault_kinds[FaultKind::Shmem as usize], 0);
    s.msync(&mut ctx, BASE, 64 * K)
        .unwrap()
        .complete_without_tlb(&s)
        .unwrap();
    assert_eq!(ctx.counters.writeback_pages, 3);
    assert_eq!(counters(&s, &ctx).rss_file_kb, 64);
    finish(s, &mut ctx);
}

#[test]
fn free_pgtables_frees_only_tables_no_vma_needs() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
    for p in [0, 2 * M, 4 * M - 4096] {
        access(&s, &mut ctx, BASE + p, true);
    }
    assert_eq!(counters(&s, &ctx).vmpte_kb, 8 + 8);
    // Part of the first 2M: its table is still needed by the VMA.
    done(&s, s.munmap(&mut ctx, BASE, 64 * K));
    assert_eq!(counters(&s, &ctx).vmpte_kb, 16);
    // The whole second 2M: freed.
    done(&s, s.munmap(&mut ctx, BASE + 2 * M, 2 * M));
    assert_eq!(counters(&s, &ctx).vmpte_kb, 12);
    done(&s, s.munmap(&mut ctx, BASE, 2 * M));
    let c = counters(&s, &ctx);
    assert_eq!(c.vmpte_kb, 0, "no VMA left: PMD and PUD tables go too");
    assert_eq!(c.rss_anon_kb, 0);
    finish(s, &mut ctx);
}

#[test]
fn free_pgtables_invalidates_the_threads_cached_walk() {
    // A fault caches its walk to the PMD table; munmap frees that table
    // (and the PUD table above it); the next fault must walk again and
    // build new tables, not write into the freed ones.
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 64 * K)));
    access(&s, &mut ctx, BASE, true);
    let pmd_tables = |s: &AddressSpace| {
        let c = s.counters(&[]);
        c.pt_pages.iter().find(|(n, _)| n == "PMD").unwrap().1
    };
    assert_eq!(pmd_tables(&s), 1);
    done(&s, s.munmap(&mut ctx, BASE, 64 * K));
    assert_eq!(pmd_tables(&s), 0, "munmap freed the PMD table");
    assert_eq!(s.mem().live_tables(), 1, "only the root is left");
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 64 * K)));
    access(&s, &mut ctx, BASE + 4096, true);
    assert_eq!(pmd_tables(&s), 1);
    assert_eq!(
        s.page_table()
            .translate(VirtAddr::new(BASE + 4096))
            .unwrap()
            .size,
        4096
    );
    let c = counters(&s, &ctx);
    assert_eq!((c.minor_faults, c.rss_anon_kb), (2, 4));
    finish(s, &mut ctx);
}

#[test]
fn zap_pte_range_pt_reclaim_whole_vs_partial_and_off() {
    for reclaim in [Reclaim::Off, Reclaim::On, Reclaim::Eager] {
        let s = space(MmConfig {
            reclaim,
            ..MmConfig::default()
        });
        let mut ctx = ThreadCtx::new();
        done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
        access(&s, &mut ctx, BASE, true);
        access(&s, &mut ctx, BASE + 2 * M, true);
        // Partial DONTNEED of the first table's only page.
        done(&s, s.madvise(&mut ctx, BASE, 4096, Advice::DontNeed));
        let partial = counters(&s, &ctx).vmpte_kb;
        done(
            &s,
            s.madvise(&mut ctx, BASE + 2 * M, 2 * M, Advice::DontNeed),
        );
        let whole = counters(&s, &ctx).vmpte_kb;
        match reclaim {
            Reclaim::Off => assert_eq!((partial, whole), (16, 16)),
            Reclaim::On => assert_eq!((partial, whole), (16, 12)),
            Reclaim::Eager => assert_eq!((partial, whole), (12, 8)),
        }
        assert_eq!(counters(&s, &ctx).rss_anon_kb, 0);
        finish(s, &mut ctx);
    }
}

#[test]
fn seed_dontneed_reclaim_50gib() {
    // pte-page-table-reclaim-slides: VIRT 50 GB, one write per 2 MiB, DONTNEED.
    for reclaim in [Reclaim::On, Reclaim::Off] {
        let s = space(MmConfig {
            reclaim,
            ..MmConfig::default()
        });
        let mut ctx = ThreadCtx::new();
        done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 50 * G)));
        let mut va = BASE;
        while va < BASE + 50 * G {
            access(&s, &mut ctx, va, true);
            va += 2 * M;
        }
        let upper = (1 + 50) * 4; // one PUD table, 50 PMD tables
        let c = counters(&s, &ctx);
        assert_eq!(c.vmpte_kb, 102_400 + upper);
        assert_eq!(c.minor_faults, 25_600);
        done(&s, s.madvise(&mut ctx, BASE, 50 * G, Advice::DontNeed));
        let c = counters(&s, &ctx);
        let expect = if reclaim == Reclaim::On {
            upper
        } else {
            102_400 + upper
        };
        assert_eq!(c.vmpte_kb, expect, "{reclaim:?}");
        assert_eq!(c.rss_anon_kb, 0);
        finish(s, &mut ctx);
    }
}

#[test]
fn mprotect_splits_vmas_and_prot_none_faults_with_segv() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 64 * K)));
    access(&s, &mut ctx, BASE + 4096, true);
    done(&s, s.mprotect(&mut ctx, BASE + 4096, 4096, Prot::NONE));
    assert_eq!(s.vmas().len(), 3);
    assert!(matches!(
        access(&s, &mut ctx, BASE + 4096, false),
        Some(FaultResult::Segv(SegvCode::AccErr))
    ));
    assert_eq!(
        counters(&s, &ctx).rss_anon_kb,
        4,
        "PROT_NONE pages stay resident"
    );
    done(&s, s.mprotect(&mut ctx, BASE, 64 * K, Prot::R));
    assert!(matches!(
        access(&s, &mut ctx, BASE, true),
        Some(FaultResult::Segv(SegvCode::AccErr))
    ));
    done(&s, s.mprotect(&mut ctx, BASE, 64 * K, Prot::RW));
    assert!(
        s.page_table()
            .translate(VirtAddr::new(BASE + 4096))
            .unwrap()
            .attrs
            .perms
            .write
    );
    assert_eq!(
        s.mprotect(&mut ctx, BASE, 2 * M, Prot::R).unwrap_err(),
        Errno::NoMem("mprotect range has a hole")
    );
    finish(s, &mut ctx);
}

#[test]
fn change_huge_pmd_keeps_a_whole_thp_and_splits_a_partial_one() {
    let s = space(thp_cfg(ThpMode::Always));
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
    access(&s, &mut ctx, BASE, true);
    access(&s, &mut ctx, BASE + 2 * M, true);
    done(&s, s.mprotect(&mut ctx, BASE, 2 * M, Prot::R));
    assert_eq!(
        s.page_table().translate(VirtAddr::new(BASE)).unwrap().size,
        2 * M
    );
    done(&s, s.mprotect(&mut ctx, BASE + 2 * M, 4096, Prot::R));
    assert_eq!(
        s.page_table()
            .translate(VirtAddr::new(BASE + 2 * M))
            .unwrap()
            .size,
        4096
    );
    let c = counters(&s, &ctx);
    assert_eq!((c.anon_huge_kb, c.rss_anon_kb), (2048, 4096));
    // Partial munmap of a PTE-mapped THP keeps the rest resident.
    done(&s, s.munmap(&mut ctx, BASE + 2 * M, 64 * K));
    assert_eq!(counters(&s, &ctx).rss_anon_kb, 4096 - 64);
    finish(s, &mut ctx);
}

#[test]
fn errors_are_linux_errnos_never_panics() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    assert!(matches!(
        s.munmap(&mut ctx, BASE + 1, 4096),
        Err(Errno::Inval(_))
    ));
    assert!(matches!(s.munmap(&mut ctx, BASE, 0), Err(Errno::Inval(_))));
    done(&s, s.munmap(&mut ctx, BASE, 4096)); // nothing mapped: success
    assert!(matches!(
        s.mmap(&mut ctx, MmapArgs::anon(BASE + 1, 4096)),
        Err(Errno::Inval(_))
    ));
    assert!(matches!(
        s.mmap(&mut ctx, MmapArgs::anon(BASE, 0)),
        Err(Errno::Inval(_))
    ));
    assert!(matches!(
        s.mmap(&mut ctx, MmapArgs::anon(1 << 47, 4096)),
        Err(Errno::NoMem(_))
    ));
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 64 * K)));
    assert_eq!(
        s.mmap(&mut ctx, MmapArgs::anon(BASE, 4096)).unwrap_err(),
        Errno::Exist
    );
    assert!(matches!(
        s.madvise(&mut ctx, BASE, 128 * K, Advice::DontNeed),
        Err(Errno::NoMem(_))
    ));
    assert!(matches!(
        s.madvise(&mut ctx, BASE + 7, 4096, Advice::DontNeed),
        Err(Errno::Inval(_))
    ));
    assert!(matches!(
        s.fault(&mut ctx, BASE + M, FaultAccess::READ),
        FaultResult::Segv(SegvCode::MapErr)
    ));
    assert!(matches!(
        s.fault(&mut ctx, u64::MAX, FaultAccess::READ),
        FaultResult::Segv(SegvCode::MapErr)
    ));
    done(&s, s.mlock(&mut ctx, BASE, 4096));
    assert!(matches!(
        s.madvise(&mut ctx, BASE, 4096, Advice::DontNeed),
        Err(Errno::Inval(_))
    ));
    done(&s, s.mmap(&mut ctx, file(BASE + M, 4096, true, false)));
    assert!(matches!(
        s.madvise(&mut ctx, BASE + M, 4096, Advice::Free),
        Err(Errno::Inval(_))
    ));
    assert!(matches!(
        s.mlock(&mut ctx, BASE + 2 * M, 4096),
        Err(Errno::NoMem(_))
    ));
    assert_eq!(
        counters(&s, &ctx).minor_faults,
        1,
        "only the mlock populate faulted"
    );
    finish(s, &mut ctx);
}

#[test]
fn madvise_free_keeps_pages_mapped_and_counted() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 64 * K)));
    access(&s, &mut ctx, BASE, true);
    let d = s.madvise(&mut ctx, BASE, 64 * K, Advice::Free).unwrap();
    assert_eq!(d.flush.ranges, vec![(BASE, 4096)]);
    d.complete_without_tlb(&s).unwrap();
    let t = s.page_table().translate(VirtAddr::new(BASE)).unwrap();
    assert!(!t.attrs.dirty);
    assert_eq!(counters(&s, &ctx).rss_anon_kb, 4);
    finish(s, &mut ctx);
}

#[test]
fn populate_vma_page_range_map_populate_and_madv_populate() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    let a = MmapArgs {
        populate: true,
        ..MmapArgs::anon(BASE, 64 * K)
    };
    done(&s, s.mmap(&mut ctx, a));
    let c = counters(&s, &ctx);
    assert_eq!(
        (c.minor_faults, c.rss_anon_kb),
        (16, 64),
        "write faults for private writable"
    );
    // Shared file: read faults, fault-around maps 16 pages per fault.
    let a = MmapArgs {
        populate: true,
        ..file(BASE + M, 128 * K, true, true)
    };
    done(&s, s.mmap(&mut ctx, a));
    let c = counters(&s, &ctx);
    assert_eq!((c.minor_faults, c.rss_file_kb), (18, 128));
    // MADV_POPULATE_READ on anon maps the zero page.
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE + 2 * M, 32 * K)));
    done(
        &s,
        s.madvise(&mut ctx, BASE + 2 * M, 32 * K, Advice::PopulateRead),
    );
    let c = counters(&s, &ctx);
    assert_eq!((c.minor_faults, c.rss_anon_kb), (26, 64));
    done(
        &s,
        s.madvise(&mut ctx, BASE + 2 * M, 32 * K, Advice::PopulateWrite),
    );
    let c = counters(&s, &ctx);
    assert_eq!((c.minor_faults, c.rss_anon_kb), (34, 96));
    done(&s, s.mprotect(&mut ctx, BASE + 2 * M, 32 * K, Prot::NONE));
    assert!(matches!(
        s.madvise(&mut ctx, BASE + 2 * M, 32 * K, Advice::PopulateRead),
        Err(Errno::Fault(_))
    ));
    finish(s, &mut ctx);
}

#[test]
fn madv_pageout_evicts_clean_file_pages_and_the_refault_is_major() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, file(BASE, 64 * K, true, false)));
    access(&s, &mut ctx, BASE, false);
    assert_eq!(counters(&s, &ctx).rss_file_kb, 64);
    done(&s, s.madvise(&mut ctx, BASE, 64 * K, Advice::PageOut));
    assert_eq!(counters(&s, &ctx).rss_file_kb, 0);
    access(&s, &mut ctx, BASE, false);
    assert_eq!(counters(&s, &ctx).major_faults, 1);
    finish(s, &mut ctx);
}

#[test]
fn willneed_reads_a_cold_file_in_without_mapping() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, file(BASE, 64 * K, false, false)));
    done(&s, s.madvise(&mut ctx, BASE, 64 * K, Advice::WillNeed));
    assert_eq!(counters(&s, &ctx).rss_file_kb, 0);
    access(&s, &mut ctx, BASE, false);
    let c = counters(&s, &ctx);
    assert_eq!((c.major_faults, c.minor_faults, c.rss_file_kb), (0, 1, 64));
    finish(s, &mut ctx);
}

#[test]
fn fault_injection_oom_and_thp_fallback() {
    use pt::mem::AllocKind;
    // A table page for a new PMD fails: VM_FAULT_OOM.
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
    s.mem()
        .set_fault_injection(Some(Box::new(|k, _| k == AllocKind::Table { level: 1 })));
    assert!(matches!(
        s.fault(&mut ctx, BASE, FaultAccess::WRITE),
        FaultResult::Oom
    ));
    // A data frame fails: VM_FAULT_OOM.
    s.mem()
        .set_fault_injection(Some(Box::new(|k, _| matches!(k, AllocKind::Data { .. }))));
    assert!(matches!(
        s.fault(&mut ctx, BASE, FaultAccess::WRITE),
        FaultResult::Oom
    ));
    assert_eq!(
        counters(&s, &ctx).minor_faults,
        0,
        "failed faults are not counted"
    );
    s.mem().set_fault_injection(None);
    s.check_invariants().unwrap();
    done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::HugePage));
    // A huge page fails: fall back to a small page.
    s.mem().set_fault_injection(Some(Box::new(|k, _| {
        k == AllocKind::Data { size: 2 << 20 }
    })));
    access(&s, &mut ctx, BASE + 2 * M, true);
    let c = counters(&s, &ctx);
    assert_eq!(
        (c.anon_huge_kb, c.rss_anon_kb, c.threads.thp_fault_fallback),
        (0, 4, 1)
    );
    // The deposit table fails: OOM, the huge page is released.
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE + 8 * M, 2 * M)));
    done(
        &s,
        s.madvise(&mut ctx, BASE + 8 * M, 2 * M, Advice::HugePage),
    );
    s.mem()
        .set_fault_injection(Some(Box::new(|k, _| k == AllocKind::Table { level: 0 })));
    assert!(matches!(
        s.fault(&mut ctx, BASE + 8 * M, FaultAccess::WRITE),
        FaultResult::Oom
    ));
    s.mem().set_fault_injection(None);
    finish(s, &mut ctx);
}

#[test]
fn lock_classes_follow_the_locking_scheme() {
    for (locking, class) in [
        (Locking::Global, LockClass::PageTableLock),
        (Locking::SplitPte, LockClass::Pte),
        (Locking::SplitPmd, LockClass::Pte),
    ] {
        let s = space(MmConfig {
            locking,
            ..MmConfig::default()
        });
        let mut ctx = ThreadCtx::new();
        done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 64 * K)));
        access(&s, &mut ctx, BASE, true);
        let t = &counters(&s, &ctx).threads;
        assert!(t.lock_acquisitions[class as usize] >= 1, "{locking:?}");
        let pmd = t.lock_acquisitions[LockClass::Pmd as usize];
        assert_eq!(pmd > 0, locking == Locking::SplitPmd, "{locking:?}");
        assert_eq!(t.lock_contended.iter().sum::<u64>(), 0);
        finish(s, &mut ctx);
    }
}

#[test]
fn eager_reclaim_frees_tables_emptied_by_munmap_and_pageout() {
    let s = space(MmConfig {
        reclaim: Reclaim::Eager,
        ..MmConfig::default()
    });
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
    access(&s, &mut ctx, BASE + 4096, true);
    done(&s, s.munmap(&mut ctx, BASE, 64 * K));
    assert_eq!(
        counters(&s, &ctx).vmpte_kb,
        8,
        "PTE table freed though the VMA still covers it"
    );
    done(
        &s,
        s.mmap(&mut ctx, file(BASE + 8 * M, 64 * K, true, false)),
    );
    access(&s, &mut ctx, BASE + 8 * M, false);
    assert_eq!(counters(&s, &ctx).vmpte_kb, 12);
    done(
        &s,
        s.madvise(&mut ctx, BASE + 8 * M, 64 * K, Advice::PageOut),
    );
    assert_eq!(counters(&s, &ctx).vmpte_kb, 8);
    finish(s, &mut ctx);
}

/// Linux: vms_clear_ptes / tlb_finish_mmu run before mmap_write_unlock: the
/// unlinked tables are shot down while munmap still holds the mmap lock, so
/// no other thread can refill their span meanwhile.
#[test]
fn free_pgtables_shoots_down_before_the_mmap_lock_is_released() {
    use std::sync::{Arc, Mutex};
    let s = Arc::new(space(MmConfig::default()));
    type Calls = Vec<(Option<usize>, u64, bool)>;
    let seen: Arc<Mutex<Calls>> = Arc::default();
    let (s2, seen2) = (Arc::downgrade(&s), seen.clone());
    assert!(s.set_table_flusher(Box::new(move |g| {
        // The flusher runs under the write lock: a reader would block.
        let held = s2.upgrade().is_some_and(|s| s.mmap_lock_is_write_locked());
        seen2.lock().unwrap().push((g.cpu, g.flush.bytes(), held));
        g.tables.release(g.pt).unwrap();
    })));
    let mut ctx = ThreadCtx::new();
    ctx.cpu = Some(3);
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 64 * K)));
    access(&s, &mut ctx, BASE, true);
    let d = s.munmap(&mut ctx, BASE, 64 * K).unwrap();
    let calls = seen.lock().unwrap().clone();
    assert_eq!(calls.len(), 1, "one shootdown for the unlinked tables");
    let (cpu, bytes, held) = calls[0];
    assert_eq!(cpu, Some(3));
    assert!(held, "flushed while the mmap lock was held");
    assert!(bytes >= 2 << 20, "the span of the freed PTE table at least");
    assert!(d.flush.is_empty(), "nothing left to flush after munmap");
    assert!(
        !d.tables.tables.is_empty(),
        "the tables are still to be freed"
    );
    d.complete_without_tlb(&s).unwrap();
    let mut ctx = ThreadCtx::new();
    let Ok(s) = Arc::try_unwrap(s) else {
        panic!("no other owner")
    };
    finish(s, &mut ctx);
}
