//! Swap read-ahead (Linux: mm/swap_state.c, `swap_vma_readahead`,
//! `swap_cluster_readahead`), the freeing of swap slots when the device is
//! more than half full (`vm_swap_full`), and shmem pages written to swap
//! (`shmem_writeout`). The fault counts asserted are those a Linux 6.18
//! guest gave for the same steps (a 1 GiB swap device; see the
//! swap-readahead-* validation workloads).

mod common;
use common::*;
use mm::*;

fn cfg(kind: SwapRaKind, page_cluster: u32, swap: u64) -> MmConfig {
    MmConfig {
        swap: Some(swap),
        swap_readahead: SwapReadahead { kind, page_cluster },
        ..MmConfig::default()
    }
}

fn faults(s: &AddressSpace, ctx: &ThreadCtx) -> (i64, i64) {
    let c = counters(s, ctx);
    (c.minor_faults, c.major_faults)
}

/// `n` written pages at BASE (2 MiB aligned) in a 2 MiB mapping, paged
/// out, read back from the swap cache, and paged out again: every page
/// clean, unmapped, its slot holding it, nothing cached.
fn swapped_clean(s: &AddressSpace, ctx: &mut ThreadCtx, n: u64) {
    done(s, s.mmap(ctx, MmapArgs::anon(BASE, 2 * M)));
    for i in 0..n {
        access(s, ctx, BASE + i * 4 * K, true);
    }
    done(s, s.madvise(ctx, BASE, n * 4 * K, Advice::PageOut));
    for i in 0..n {
        access(s, ctx, BASE + i * 4 * K, false);
    }
    done(s, s.madvise(ctx, BASE, n * 4 * K, Advice::PageOut));
    assert_eq!(s.swap_entries(), n as i64);
}

/// Reads pages `order` and returns the (minor, major) faults they took.
fn read(s: &AddressSpace, ctx: &mut ThreadCtx, order: impl Iterator<Item = u64>) -> (i64, i64) {
    let before = faults(s, ctx);
    for i in order {
        access(s, ctx, BASE + i * 4 * K, false);
    }
    let after = faults(s, ctx);
    (after.0 - before.0, after.1 - before.1)
}

#[test]
fn vma_readahead_reads_a_window_and_the_next_faults_are_minor() {
    let s = space(cfg(SwapRaKind::Vma, 3, G));
    let mut ctx = ThreadCtx::new();
    swapped_clean(&s, &mut ctx, 128);
    let frames = s.mem().live_data().0;
    // The first major fault of the VMA reads 8 pages centred on it,
    // clipped to the VMA: pages 0 to 4.
    assert_eq!(read(&s, &mut ctx, 0..1), (0, 1));
    assert_eq!(s.mem().live_data().0, frames + 5);
    // The pages read ahead are not mapped and still swapped.
    assert_eq!(counters(&s, &ctx).rss_anon_kb, 4);
    assert_eq!(s.swap_entries(), 127);
    // Sequential: a major fault per window of 8 (pages 5, 13, ..., 125).
    assert_eq!(read(&s, &mut ctx, 1..128), (111, 16));
    assert_eq!(s.swap_entries(), 0);
    finish(s, &mut ctx);
}

#[test]
fn vma_readahead_follows_a_reverse_read() {
    let s = space(cfg(SwapRaKind::Vma, 3, G));
    let mut ctx = ThreadCtx::new();
    swapped_clean(&s, &mut ctx, 128);
    // 127 reads 124..127; then each window ends at its fault.
    assert_eq!(read(&s, &mut ctx, (0..128).rev()), (111, 17));
    finish(s, &mut ctx);
}

#[test]
fn scattered_faults_shrink_the_window_to_one_page() {
    let s = space(cfg(SwapRaKind::Vma, 3, G));
    let mut ctx = ThreadCtx::new();
    swapped_clean(&s, &mut ctx, 128);
    let frames = s.mem().live_data().0;
    // Every 16th page: no hit, never next to the last fault; the window
    // halves from 8 (5 pages read at page 0, clipped) to 4, 2, then 1.
    assert_eq!(read(&s, &mut ctx, (0..128).step_by(16)), (0, 8));
    assert_eq!(s.mem().live_data().0, frames + 5 + 4 + 2 + 5);
    finish(s, &mut ctx);
}

#[test]
fn a_fork_child_starts_from_its_parents_window() {
    let s = space(cfg(SwapRaKind::Vma, 3, G));
    let mut ctx = ThreadCtx::new();
    swapped_clean(&s, &mut ctx, 128);
    // The parent's window shrinks to one page (as above).
    assert_eq!(read(&s, &mut ctx, (0..128).step_by(16)), (0, 8));
    let c = s.new_child().unwrap();
    s.fork(&mut ctx, &c)
        .unwrap()
        .complete_without_tlb(&s)
        .unwrap();
    let mut cc = ThreadCtx::new();
    // The child's VMA is a copy of the parent's, read-ahead state included
    // (vm_area_dup): its first major fault reads one page, where a new
    // VMA's would read eight.
    let frames = s.mem().live_data().0;
    access(&c, &mut cc, BASE + 72 * 4 * K, false);
    assert_eq!(counters(&c, &cc).major_faults, 1);
    assert_eq!(s.mem().live_data().0, frames + 1);
    c.exit(&mut cc).unwrap();
    finish(s, &mut ctx);
}

#[test]
fn page_cluster_zero_reads_no_more_than_the_fault() {
    let s = space(cfg(SwapRaKind::Vma, 0, G));
    let mut ctx = ThreadCtx::new();
    swapped_clean(&s, &mut ctx, 32);
    assert_eq!(read(&s, &mut ctx, 0..32), (0, 32));
    finish(s, &mut ctx);
}

#[test]
fn cluster_readahead_reads_aligned_blocks_of_slots() {
    let s = space(cfg(SwapRaKind::Cluster, 3, G));
    let mut ctx = ThreadCtx::new();
    // Pages 0..64 in slots 1..64 (slot 0 is the header). A fresh state:
    // slot 1 alone, 2 and 3 (next to the last), 4..7 (one hit), then
    // blocks of 8; the kernel gave 11 majors on a fresh swap file.
    swapped_clean(&s, &mut ctx, 64);
    assert_eq!(read(&s, &mut ctx, 0..64), (53, 11));
    finish(s, &mut ctx);
}

#[test]
fn a_device_more_than_half_full_frees_slots_on_swap_in() {
    // 32 slots; 24 pages swapped leave 8 free: full (8 * 2 < 32).
    let s = space(cfg(SwapRaKind::Vma, 3, 128 * K));
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 2 * M)));
    for i in 0..24 {
        access(&s, &mut ctx, BASE + i * 4 * K, true);
    }
    done(&s, s.madvise(&mut ctx, BASE, 96 * K, Advice::PageOut));
    assert_eq!(s.swap_slots_used(), 24);
    // Reads free slots while fewer than half are free: down to 16 used.
    assert_eq!(read(&s, &mut ctx, 0..24), (24, 0));
    assert_eq!(s.swap_slots_used(), 16);
    // The 8 pages whose slot went are written again (and stay cached);
    // the 16 others are clean and dropped: majors when read.
    done(&s, s.madvise(&mut ctx, BASE, 96 * K, Advice::PageOut));
    assert_eq!(s.swap_slots_used(), 24);
    let (_, major) = read(&s, &mut ctx, 0..8);
    assert_eq!(major, 0);
    s.check_invariants().unwrap();
    finish(s, &mut ctx);
}

#[test]
fn written_shmem_pages_go_to_swap_and_fault_back_one_by_one() {
    let run = |swap: Option<u64>| {
        let s = space(MmConfig {
            swap,
            ..MmConfig::default()
        });
        let mut ctx = ThreadCtx::new();
        let shmem = MmapArgs {
            kind: MapKind::Shmem,
            shared: true,
            ..MmapArgs::anon(BASE, 128 * K)
        };
        done(&s, s.mmap(&mut ctx, shmem));
        for i in 0..32 {
            access(&s, &mut ctx, BASE + i * 4 * K, true);
        }
        done(&s, s.madvise(&mut ctx, BASE, 128 * K, Advice::PageOut));
        assert_eq!(counters(&s, &ctx).rss_shmem_kb, 0);
        // Not in any PTE: VmSwap does not count shmem swap.
        assert_eq!((counters(&s, &ctx).vmswap_kb, s.swap_entries()), (0, 0));
        let first = read(&s, &mut ctx, 0..32);
        assert_eq!(counters(&s, &ctx).rss_shmem_kb, 128);
        // Back in the page cache, dirty: a second pageout writes them again.
        done(&s, s.madvise(&mut ctx, BASE, 128 * K, Advice::PageOut));
        let second = read(&s, &mut ctx, 0..32);
        finish(s, &mut ctx);
        (first, second)
    };
    // No swap: the pages stay in the page cache; fault-around maps 16 a fault.
    assert_eq!(run(None), ((2, 0), (2, 0)));
    // Swap: each page is in the swap cache, which fault-around skips.
    assert_eq!(run(Some(G)), ((32, 0), (32, 0)));
}
