//! Large folios with swap, by the kind of swap area (Linux 6.18
//! `folio_alloc_swap` → `cluster_alloc_swap_entry`, which refuses a swap
//! file; `do_swap_page`, which maps a large folio found whole in the swap
//! cache at once, and which reads past the cache on a device with
//! synchronous I/O; `shmem_writeout`). What a 6.18 host did (3 runs each,
//! zram, a loop device, a swap file): a whole THP is 2,048 kB of VmSwap on
//! every kind; it comes back in one minor fault on a block device, in 512
//! major faults on zram, in 510 minor faults (two zero subpages to the zero
//! page) on a file.

mod common;
use common::*;
use mm::*;
use pt::VirtAddr;

fn cfg(device: SwapDeviceKind) -> MmConfig {
    MmConfig {
        thp: ThpMode::Madvise,
        swap: Some(G),
        swap_device: device,
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

/// A write as the machine makes it (see tests/reclaim.rs).
fn write(s: &AddressSpace, ctx: &mut ThreadCtx, va: u64) {
    access(s, ctx, va, true);
    if s.tracks_writes() {
        s.note_write(pa(s, va));
    }
}

/// Two THPs at BASE with the first `written` pages of each written.
fn two_thps(s: &AddressSpace, ctx: &mut ThreadCtx, written: u64) {
    done(s, s.mmap(ctx, MmapArgs::anon(BASE, 4 * M)));
    done(s, s.madvise(ctx, BASE, 4 * M, Advice::HugePage));
    for t in [0, 2 * M] {
        for i in 0..written {
            write(s, ctx, BASE + t + i * 4 * K);
        }
    }
    let c = counters(s, ctx);
    assert_eq!((c.anon_huge_kb, c.rss_anon_kb), (4096, 4096));
}

/// (minor, major) faults of touching `pages` pages from `va`.
fn touch(s: &AddressSpace, ctx: &mut ThreadCtx, va: u64, pages: u64, w: bool) -> (i64, i64) {
    let c = counters(s, ctx);
    for i in 0..pages {
        access(s, ctx, va + i * 4 * K, w);
    }
    let d = counters(s, ctx);
    (
        d.minor_faults - c.minor_faults,
        d.major_faults - c.major_faults,
    )
}

#[test]
fn a_block_device_takes_a_thp_whole_and_a_fault_maps_it_back_whole() {
    let s = space(cfg(SwapDeviceKind::Block));
    let mut ctx = ThreadCtx::new();
    // Eight pages written of 512: a split would map 504 to the zero page.
    two_thps(&s, &mut ctx, 8);
    let frames = s.mem().live_data().0;
    done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::PageOut));
    let c = counters(&s, &ctx);
    assert_eq!(
        (c.vmswap_kb, c.rss_anon_kb, c.anon_huge_kb),
        (2048, 2048, 2048)
    );
    assert_eq!(s.swap_slots_used(), 512);
    // The folio waits whole in the swap cache: no frame freed (its one
    // block is a frame a page now).
    assert_eq!(s.mem().live_data().0, frames + 511);
    s.check_invariants().unwrap();
    // One minor fault maps the whole folio back, writable.
    assert_eq!(touch(&s, &mut ctx, BASE + 100 * 4 * K, 1, false), (1, 0));
    let c = counters(&s, &ctx);
    assert_eq!((c.vmswap_kb, c.rss_anon_kb), (0, 4096));
    assert_eq!(c.anon_huge_kb, 2048, "mapped by PTEs, not a PMD");
    assert_eq!(touch(&s, &mut ctx, BASE, 512, true), (0, 0));
    s.check_invariants().unwrap();
    finish(s, &mut ctx);
}

#[test]
fn a_swap_file_splits_the_thp_first() {
    let s = space(cfg(SwapDeviceKind::File));
    let mut ctx = ThreadCtx::new();
    two_thps(&s, &mut ctx, 8);
    done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::PageOut));
    let c = counters(&s, &ctx);
    // The 504 unwritten subpages went to the zero page; 8 to swap.
    assert_eq!((c.vmswap_kb, c.rss_anon_kb), (32, 2048));
    assert_eq!(touch(&s, &mut ctx, BASE, 8, false), (8, 0));
    finish(s, &mut ctx);
}

#[test]
fn a_synchronous_device_frees_the_thp_and_reads_each_page_back_major() {
    let s = space(cfg(SwapDeviceKind::Sync));
    let mut ctx = ThreadCtx::new();
    two_thps(&s, &mut ctx, 8);
    let frames = s.mem().live_data().0;
    done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::PageOut));
    let c = counters(&s, &ctx);
    assert_eq!((c.vmswap_kb, c.rss_anon_kb), (2048, 2048));
    // Written at once, then freed: 512 frames of the one split block.
    assert_eq!(frames + 511 - s.mem().live_data().0, 512);
    s.check_invariants().unwrap();
    assert_eq!(touch(&s, &mut ctx, BASE, 512, false), (0, 512));
    let c = counters(&s, &ctx);
    assert_eq!((c.vmswap_kb, c.rss_anon_kb), (0, 4096));
    // Each read freed its slot (swap_free past the cache), and each page
    // is mapped writable.
    assert_eq!(s.swap_slots_used(), 0);
    assert_eq!(touch(&s, &mut ctx, BASE, 512, true), (0, 0));
    finish(s, &mut ctx);
}

#[test]
fn base_pages_on_a_synchronous_device_leave_memory_at_once() {
    let s = space(cfg(SwapDeviceKind::Sync));
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 32 * K)));
    touch(&s, &mut ctx, BASE, 8, true);
    let frames = s.mem().live_data().0;
    done(&s, s.madvise(&mut ctx, BASE, 32 * K, Advice::PageOut));
    assert_eq!(frames - s.mem().live_data().0, 8);
    assert_eq!(s.swap_slots_used(), 8);
    // No read-ahead past the cache: one major fault a page.
    assert_eq!(touch(&s, &mut ctx, BASE, 8, false), (0, 8));
    assert_eq!(s.swap_slots_used(), 0);
    // Out again: the pages were kept dirty, so they are written again.
    done(&s, s.madvise(&mut ctx, BASE, 32 * K, Advice::PageOut));
    assert_eq!((s.swap_entries(), s.swap_slots_used()), (8, 8));
    finish(s, &mut ctx);
}

#[test]
fn a_thp_mapped_in_part_or_by_a_fork_child_is_not_swapped_whole() {
    // A range over half the folio: split, and only that half swapped.
    let s = space(cfg(SwapDeviceKind::Block));
    let mut ctx = ThreadCtx::new();
    two_thps(&s, &mut ctx, 512);
    done(&s, s.madvise(&mut ctx, BASE, M, Advice::PageOut));
    let c = counters(&s, &ctx);
    assert_eq!((c.vmswap_kb, c.rss_anon_kb), (1024, 3072));
    assert_eq!(touch(&s, &mut ctx, BASE, 256, false), (256, 0));
    finish(s, &mut ctx);
    // A folio a fork child maps is left alone.
    let p = space(cfg(SwapDeviceKind::Block));
    let mut pc = ThreadCtx::new();
    two_thps(&p, &mut pc, 512);
    let c = p.new_child().unwrap();
    p.fork(&mut pc, &c)
        .unwrap()
        .complete_without_tlb(&p)
        .unwrap();
    done(&p, p.madvise(&mut pc, BASE, 2 * M, Advice::PageOut));
    assert_eq!(counters(&p, &pc).vmswap_kb, 0);
    let mut cc = ThreadCtx::new();
    c.exit(&mut cc).unwrap();
    finish(p, &mut pc);
}

#[test]
fn a_fault_after_part_of_the_folio_was_unmapped_maps_one_page() {
    let s = space(cfg(SwapDeviceKind::Block));
    let mut ctx = ThreadCtx::new();
    two_thps(&s, &mut ctx, 512);
    done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::PageOut));
    // A PTE of the folio's range no longer holds its entry: the folio is
    // not mapped whole (do_swap_page's swap_pte_batch check).
    done(&s, s.madvise(&mut ctx, BASE, 4 * K, Advice::DontNeed));
    assert_eq!(touch(&s, &mut ctx, BASE + 4 * K, 3, false), (3, 0));
    assert_eq!(counters(&s, &ctx).vmswap_kb, 2048 - 16);
    s.check_invariants().unwrap();
    finish(s, &mut ctx);
}

#[test]
fn no_free_cluster_falls_back_to_base_pages() {
    // 600 slots: the first cluster holds the header, the second is short.
    let s = space(MmConfig {
        swap: Some(600 * 4 * K),
        ..cfg(SwapDeviceKind::Block)
    });
    let mut ctx = ThreadCtx::new();
    two_thps(&s, &mut ctx, 512);
    done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::PageOut));
    assert_eq!(counters(&s, &ctx).vmswap_kb, 2048);
    // Split and swapped page by page: each comes back alone.
    assert_eq!(touch(&s, &mut ctx, BASE, 4, false), (4, 0));
    finish(s, &mut ctx);
}

fn huge_tmpfs(device: SwapDeviceKind) -> (AddressSpace, ThreadCtx) {
    let s = space(cfg(device));
    let mut ctx = ThreadCtx::new();
    let args = MmapArgs {
        kind: MapKind::Tmpfs(ShmemHuge::Always),
        shared: true,
        ..MmapArgs::anon(BASE, 4 * M)
    };
    done(&s, s.mmap(&mut ctx, args));
    touch(&s, &mut ctx, BASE, 1024, true);
    assert_eq!(counters(&s, &ctx).shmem_pmd_kb, 4096);
    (s, ctx)
}

#[test]
fn a_shmem_thp_is_split_for_a_swap_file_and_whole_for_a_block_device() {
    // (device, faults to read the folio back (minor, major), PMD-mapped)
    for (device, faults, pmd) in [
        (SwapDeviceKind::File, (512, 0), 2048),
        (SwapDeviceKind::Block, (1, 0), 4096),
        (SwapDeviceKind::Sync, (0, 1), 4096),
    ] {
        let (s, mut ctx) = huge_tmpfs(device);
        done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::PageOut));
        let c = counters(&s, &ctx);
        assert_eq!((c.rss_shmem_kb, c.vmswap_kb), (2048, 0), "{device:?}");
        assert_eq!(touch(&s, &mut ctx, BASE, 512, false), faults, "{device:?}");
        assert_eq!(counters(&s, &ctx).shmem_pmd_kb, pmd, "{device:?}");
        finish(s, &mut ctx);
    }
}
