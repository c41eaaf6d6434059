//! Swap: reclaim writing private anonymous pages to a swap device, the
//! faults that bring them back (from the swap cache, or read: major), and
//! the swap entries' life through fork, zap and MADV_FREE (Linux
//! `shrink_folio_list`, `do_swap_page`, `copy_nonpresent_pte`,
//! `free_swap_and_cache`). Counts are conserved: every swap entry names a
//! slot in use, fork duplicates, zap frees, and nothing leaks.

mod common;
use common::*;
use mm::*;
use proptest::prelude::*;
use pt::VirtAddr;

fn swap_cfg() -> MmConfig {
    MmConfig {
        swap: Some(G),
        ..MmConfig::default()
    }
}

fn present(s: &AddressSpace, va: u64) -> bool {
    s.page_table().translate(VirtAddr::new(va)).is_ok()
}

fn fork(s: &AddressSpace, ctx: &mut ThreadCtx) -> AddressSpace {
    let c = s.new_child().unwrap();
    s.fork(ctx, &c).unwrap().complete_without_tlb(s).unwrap();
    c
}

/// `n` pages at BASE, each written once.
fn written(s: &AddressSpace, ctx: &mut ThreadCtx, n: u64) {
    done(s, s.mmap(ctx, MmapArgs::anon(BASE, n * 4 * K)));
    for i in 0..n {
        access(s, ctx, BASE + i * 4 * K, true);
    }
}

fn faults(s: &AddressSpace, ctx: &ThreadCtx) -> (i64, i64) {
    let c = counters(s, ctx);
    (c.minor_faults, c.major_faults)
}

#[test]
fn without_a_swap_device_pageout_keeps_written_pages() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    written(&s, &mut ctx, 8);
    done(&s, s.madvise(&mut ctx, BASE, 32 * K, Advice::PageOut));
    assert_eq!(counters(&s, &ctx).rss_anon_kb, 32);
    assert_eq!(s.swap_entries(), 0);
    assert!(present(&s, BASE));
    finish(s, &mut ctx);
}

#[test]
fn pageout_swaps_out_and_reads_come_back_from_the_swap_cache() {
    let s = space(swap_cfg());
    let mut ctx = ThreadCtx::new();
    written(&s, &mut ctx, 8);
    let frames = s.mem().live_data().0;
    done(&s, s.madvise(&mut ctx, BASE, 32 * K, Advice::PageOut));
    assert_eq!(counters(&s, &ctx).rss_anon_kb, 0);
    assert_eq!(counters(&s, &ctx).vmswap_kb, 32);
    assert_eq!(s.swap_entries(), 8);
    assert_eq!(s.swap_slots_used(), 8);
    assert!(!present(&s, BASE));
    // The written pages stay in the swap cache while written.
    assert_eq!(s.mem().live_data().0, frames);
    s.check_invariants().unwrap();
    let before = faults(&s, &ctx);
    for i in 0..8 {
        access(&s, &mut ctx, BASE + i * 4 * K, false);
    }
    // Minor faults (swap cache hits), mapped writable: writes fault no more.
    assert_eq!(faults(&s, &ctx), (before.0 + 8, before.1));
    assert_eq!(counters(&s, &ctx).rss_anon_kb, 32);
    assert_eq!(s.swap_entries(), 0);
    for i in 0..8 {
        access(&s, &mut ctx, BASE + i * 4 * K, true);
    }
    assert_eq!(faults(&s, &ctx), (before.0 + 8, before.1));
    finish(s, &mut ctx);
}

#[test]
fn a_clean_page_in_the_swap_cache_is_dropped_and_read_back_major() {
    let s = space(swap_cfg());
    let mut ctx = ThreadCtx::new();
    written(&s, &mut ctx, 4);
    done(&s, s.madvise(&mut ctx, BASE, 16 * K, Advice::PageOut));
    for i in 0..4 {
        access(&s, &mut ctx, BASE + i * 4 * K, false);
    }
    let frames = s.mem().live_data().0;
    done(&s, s.madvise(&mut ctx, BASE, 16 * K, Advice::PageOut));
    // Clean and unmapped: freed without a write; the slots stay named.
    assert_eq!(s.mem().live_data().0, frames - 4);
    assert_eq!((s.swap_entries(), s.swap_slots_used()), (4, 4));
    let before = faults(&s, &ctx);
    access(&s, &mut ctx, BASE, true);
    assert_eq!(faults(&s, &ctx), (before.0, before.1 + 1));
    // A write by the only user frees the slot (should_try_to_free_swap).
    assert_eq!(s.swap_slots_used(), 3);
    finish(s, &mut ctx);
}

#[test]
fn fork_duplicates_swap_entries_and_a_shared_page_is_copied_on_write() {
    let p = space(swap_cfg());
    let mut pc = ThreadCtx::new();
    written(&p, &mut pc, 4);
    done(&p, p.madvise(&mut pc, BASE, 16 * K, Advice::PageOut));
    let c = fork(&p, &mut pc);
    let mut cc = ThreadCtx::new();
    assert_eq!((p.swap_entries(), c.swap_entries()), (4, 4));
    assert_eq!(p.swap_slots_used(), 4, "one slot per page, named twice");
    AddressSpace::check_family(&[&p, &c]).unwrap();
    // The child's read maps the cached page read-only (the entry is shared).
    access(&c, &mut cc, BASE, false);
    assert!(
        !c.page_table()
            .translate(VirtAddr::new(BASE))
            .unwrap()
            .attrs
            .perms
            .write
    );
    let frames = c.mem().live_data().0;
    // Its write copies; the parent's entry still names the cached page.
    access(&c, &mut cc, BASE, true);
    assert_eq!(c.mem().live_data().0, frames + 1);
    // A write straight to a shared entry reads and copies in one fault.
    let before = faults(&c, &cc);
    access(&c, &mut cc, BASE + 4 * K, true);
    assert_eq!(faults(&c, &cc), (before.0 + 1, before.1));
    AddressSpace::check_family(&[&p, &c]).unwrap();
    c.exit(&mut cc).unwrap();
    assert_eq!(p.swap_entries(), 4);
    // Alone again: the parent's write reuses the cached page (no copy).
    let frames = p.mem().live_data().0;
    access(&p, &mut pc, BASE, true);
    assert_eq!(p.mem().live_data().0, frames);
    finish(p, &mut pc);
}

#[test]
fn munmap_frees_slots_and_the_cache() {
    let s = space(swap_cfg());
    let mut ctx = ThreadCtx::new();
    written(&s, &mut ctx, 16);
    done(&s, s.madvise(&mut ctx, BASE, 64 * K, Advice::PageOut));
    access(&s, &mut ctx, BASE, false);
    done(&s, s.munmap(&mut ctx, BASE + 32 * K, 32 * K));
    assert_eq!(s.swap_entries(), 7);
    assert_eq!(s.swap_slots_used(), 8);
    done(&s, s.munmap(&mut ctx, BASE, 32 * K));
    assert_eq!((s.swap_entries(), s.swap_slots_used()), (0, 0));
    finish(s, &mut ctx);
}

#[test]
fn madv_free_drops_swap_entries() {
    let s = space(swap_cfg());
    let mut ctx = ThreadCtx::new();
    written(&s, &mut ctx, 4);
    done(&s, s.madvise(&mut ctx, BASE, 16 * K, Advice::PageOut));
    done(&s, s.madvise(&mut ctx, BASE, 16 * K, Advice::Free));
    assert_eq!((s.swap_entries(), s.swap_slots_used()), (0, 0));
    access(&s, &mut ctx, BASE, false);
    assert_eq!(
        s.page_table()
            .translate(VirtAddr::new(BASE))
            .unwrap()
            .pa
            .get(),
        s.zero_page()
    );
    finish(s, &mut ctx);
}

#[test]
fn a_full_device_leaves_pages_mapped() {
    let s = space(MmConfig {
        swap: Some(8 * K),
        ..MmConfig::default()
    });
    let mut ctx = ThreadCtx::new();
    written(&s, &mut ctx, 4);
    done(&s, s.madvise(&mut ctx, BASE, 16 * K, Advice::PageOut));
    assert_eq!(s.swap_entries(), 2);
    assert_eq!(counters(&s, &ctx).rss_anon_kb, 8);
    finish(s, &mut ctx);
}

#[derive(Debug, Clone)]
enum Op {
    Write(u64),
    Read(u64),
    PageOut(u64, u64),
    Free(u64, u64),
    Munmap(u64, u64),
    Fork,
    ChildWrite(u64),
    ChildExit,
}

const PAGES: u64 = 32;

fn op() -> impl Strategy<Value = Op> {
    let page = 0..PAGES;
    let range = (0..PAGES, 1..PAGES).prop_map(|(a, n)| (a, n.min(PAGES - a)));
    prop_oneof![
        page.clone().prop_map(Op::Write),
        page.clone().prop_map(Op::Read),
        range.clone().prop_map(|(a, n)| Op::PageOut(a, n)),
        range.clone().prop_map(|(a, n)| Op::Free(a, n)),
        range.prop_map(|(a, n)| Op::Munmap(a, n)),
        Just(Op::Fork),
        page.prop_map(Op::ChildWrite),
        Just(Op::ChildExit),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Any mix of writes, reads, pageouts, MADV_FREE, munmaps and a fork
    /// child keeps every count: each space's swap entries are recounted
    /// from its tables, each names a slot in use that counts it, every
    /// live frame is held (mapped or in the swap cache), and nothing is
    /// left after every process exits.
    ///
    /// Both kinds of read-ahead, every kind of device (a synchronous one
    /// frees written pages at once and reads past the swap cache); a
    /// device of 24 slots for 32 pages fills (pages stay mapped) and is
    /// more than half full (swap-ins free slots).
    #[test]
    fn swap_counts_are_conserved(
        ops in proptest::collection::vec(op(), 1..40),
        cluster in any::<bool>(),
        small in any::<bool>(),
        device in prop_oneof![
            Just(SwapDeviceKind::File),
            Just(SwapDeviceKind::Block),
            Just(SwapDeviceKind::Sync),
        ],
    ) {
        let kind = if cluster { SwapRaKind::Cluster } else { SwapRaKind::Vma };
        let p = space(MmConfig {
            swap: Some(if small { 24 * 4 * K } else { G }),
            swap_readahead: SwapReadahead { kind, page_cluster: 3 },
            swap_device: device,
            ..MmConfig::default()
        });
        let mut pc = ThreadCtx::new();
        done(&p, p.mmap(&mut pc, MmapArgs::anon(BASE, PAGES * 4 * K)));
        let mut mapped = vec![true; PAGES as usize];
        let mut child: Option<(AddressSpace, ThreadCtx, Vec<bool>)> = None;
        let at = |i: u64| BASE + i * 4 * K;
        for o in ops {
            match o {
                Op::Write(i) if mapped[i as usize] => { access(&p, &mut pc, at(i), true); }
                Op::Read(i) if mapped[i as usize] => { access(&p, &mut pc, at(i), false); }
                Op::PageOut(a, n) if mapped[a as usize..(a + n) as usize].iter().all(|m| *m) => {
                    done(&p, p.madvise(&mut pc, at(a), n * 4 * K, Advice::PageOut));
                }
                Op::Free(a, n) if mapped[a as usize..(a + n) as usize].iter().all(|m| *m) => {
                    done(&p, p.madvise(&mut pc, at(a), n * 4 * K, Advice::Free));
                }
                Op::Munmap(a, n) => {
                    done(&p, p.munmap(&mut pc, at(a), n * 4 * K));
                    for m in &mut mapped[a as usize..(a + n) as usize] { *m = false; }
                }
                Op::Fork if child.is_none() => {
                    let c = fork(&p, &mut pc);
                    child = Some((c, ThreadCtx::new(), mapped.clone()));
                }
                Op::ChildWrite(i) => {
                    if let Some((c, cc, cm)) = child.as_mut() {
                        if cm[i as usize] { access(c, cc, at(i), true); }
                    }
                }
                Op::ChildExit => {
                    if let Some((c, mut cc, _)) = child.take() {
                        c.exit(&mut cc).unwrap();
                    }
                }
                _ => {}
            }
            match &child {
                Some((c, _, _)) => AddressSpace::check_family(&[&p, c]).unwrap(),
                None => { p.check_invariants().unwrap(); }
            }
        }
        if let Some((c, mut cc, _)) = child.take() {
            c.exit(&mut cc).unwrap();
        }
        p.check_invariants().unwrap();
        p.exit(&mut pc).unwrap();
        prop_assert_eq!(p.swap_slots_used(), 0, "every slot freed by the last exit");
        prop_assert!(p.mem().leaks().is_empty(), "leaks: {:?}", p.mem().leaks());
    }
}
