//! mremap through the system call (Linux mm/mremap.c): shrinking, growing
//! in place, moving with whole tables, huge PMDs or single entries, Linux's
//! errors, and a property test against a reference that only knows which
//! page is mapped where.
#![cfg(not(loom))]

mod common;
use common::*;
use mm::*;
use proptest::prelude::*;
use std::collections::BTreeMap;

const P: u64 = 4096;

fn write_range(s: &AddressSpace, ctx: &mut ThreadCtx, start: u64, len: u64, stride: u64) {
    let mut va = start;
    while va < start + len {
        assert!(access(s, ctx, va, true).is_none(), "write at {va:#x}");
        va += stride;
    }
}

fn level(c: &MmCounters, name: &str) -> u64 {
    c.pt_pages.iter().find(|(n, _)| n == name).unwrap().1 as u64
}

fn pa(s: &AddressSpace, va: u64) -> Option<u64> {
    s.page_table()
        .translate(pt::VirtAddr::new(va))
        .ok()
        .map(|t| t.pa.get())
}

fn remap(s: &AddressSpace, ctx: &mut ThreadCtx, args: MremapArgs) -> Result<Remapped, Errno> {
    let (d, out) = s.mremap(ctx, args)?;
    d.complete_without_tlb(s).unwrap();
    Ok(out)
}

fn fixed(addr: u64, len: u64, new_addr: u64) -> MremapArgs {
    MremapArgs {
        addr,
        old_len: len,
        new_len: len,
        maymove: true,
        fixed: Some(new_addr),
        dontunmap: false,
    }
}

#[test]
fn an_aligned_move_moves_whole_pte_tables_and_copies_no_entry() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
    write_range(&s, &mut ctx, BASE, 4 * M, P);
    let before: Vec<Option<u64>> = (0..1024).map(|i| pa(&s, BASE + i * P)).collect();
    let c0 = counters(&s, &ctx);
    let dst = BASE + 64 * M;
    let out = remap(&s, &mut ctx, fixed(BASE, 4 * M, dst)).unwrap();
    assert_eq!(out.addr, dst);
    assert_eq!(out.pte_tables_moved, 2, "Linux: move_normal_pmd");
    assert_eq!(out.ptes_moved, 0);
    let after: Vec<Option<u64>> = (0..1024).map(|i| pa(&s, dst + i * P)).collect();
    assert_eq!(before, after, "every page keeps its frame");
    assert_eq!(pa(&s, BASE), None);
    let c = counters(&s, &ctx);
    assert_eq!(level(&c, "PTE"), level(&c0, "PTE"));
    assert_eq!(
        (c.rss_anon_kb, c.minor_faults),
        (c0.rss_anon_kb, c0.minor_faults)
    );
    assert_eq!(s.vmas().len(), 1);
    assert_eq!(s.vmas()[0].start, dst);
    // Writing the moved pages again faults nowhere.
    write_range(&s, &mut ctx, dst, 4 * M, P);
    assert_eq!(counters(&s, &ctx).minor_faults, c0.minor_faults);
    finish(s, &mut ctx);
}

#[test]
fn a_move_across_pud_boundaries_moves_the_pmd_table_when_both_are_aligned() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, G)));
    write_range(&s, &mut ctx, BASE, G, 2 * M);
    let c0 = counters(&s, &ctx);
    let out = remap(&s, &mut ctx, fixed(BASE, G, BASE + 4 * G)).unwrap();
    assert_eq!(out.pmd_tables_moved, 1, "Linux: move_normal_pud");
    assert_eq!(out.pte_tables_moved + out.ptes_moved, 0);
    let c = counters(&s, &ctx);
    assert_eq!(c.vmpte_kb, c0.vmpte_kb);
    write_range(&s, &mut ctx, BASE + 4 * G, G, 2 * M);
    assert_eq!(counters(&s, &ctx).minor_faults, c0.minor_faults);
    finish(s, &mut ctx);
}

#[test]
fn a_misaligned_move_moves_each_entry_into_new_tables_and_frees_the_old() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
    write_range(&s, &mut ctx, BASE, 4 * M, 16 * P);
    let c0 = counters(&s, &ctx);
    assert_eq!(level(&c0, "PTE"), 2);
    let dst = BASE + 64 * M + 12 * P;
    let out = remap(&s, &mut ctx, fixed(BASE, 4 * M, dst)).unwrap();
    assert_eq!(out.pte_tables_moved, 0);
    assert_eq!(out.ptes_moved, 4 * M / (16 * P), "Linux: move_ptes");
    let c = counters(&s, &ctx);
    // The destination spans three 2 MiB ranges; the source's two tables
    // went with its VMA (free_pgtables).
    assert_eq!(level(&c, "PTE"), 3);
    assert_eq!(c.rss_anon_kb, c0.rss_anon_kb);
    finish(s, &mut ctx);
}

#[test]
fn a_huge_pmd_moves_with_its_deposit_or_is_split_when_misaligned() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
    done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::HugePage));
    write_range(&s, &mut ctx, BASE, 4 * M, 2 * M);
    let c0 = counters(&s, &ctx);
    assert_eq!(c0.anon_huge_kb, 4096);
    let out = remap(&s, &mut ctx, fixed(BASE, 4 * M, BASE + 64 * M)).unwrap();
    assert_eq!(out.huge_pmds_moved, 2, "Linux: move_huge_pmd");
    let c = counters(&s, &ctx);
    assert_eq!(
        (c.anon_huge_kb, c.vmpte_kb, c.rss_anon_kb),
        (c0.anon_huge_kb, c0.vmpte_kb, c0.rss_anon_kb)
    );
    s.check_invariants().unwrap();
    // On to a misaligned address: split first, then entry by entry.
    let out = remap(&s, &mut ctx, fixed(BASE + 64 * M, 4 * M, BASE + 8 * P)).unwrap();
    assert_eq!(out.huge_pmds_moved, 0);
    assert_eq!(out.ptes_moved, 1024);
    let c = counters(&s, &ctx);
    assert_eq!(c.anon_huge_kb, 0);
    assert_eq!(c.rss_anon_kb, c0.rss_anon_kb);
    finish(s, &mut ctx);
}

#[test]
fn growing_in_place_keeps_the_vma_and_merges_with_a_compatible_next() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, M)));
    write_range(&s, &mut ctx, BASE, M, P);
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE + 3 * M, M)));
    let grow = |new_len| MremapArgs {
        addr: BASE,
        old_len: M,
        new_len,
        maymove: false,
        fixed: None,
        dontunmap: false,
    };
    // The next VMA is in the way of 4 MiB: ENOMEM without MREMAP_MAYMOVE.
    assert!(matches!(
        remap(&s, &mut ctx, grow(4 * M)),
        Err(Errno::NoMem(_))
    ));
    let out = remap(&s, &mut ctx, grow(3 * M)).unwrap();
    assert_eq!(
        out,
        Remapped {
            addr: BASE,
            ..Remapped::default()
        }
    );
    // Linux: vma_merge_extend: the grown VMA meets the next one and they merge.
    assert_eq!(s.vmas().len(), 1);
    assert_eq!((s.vmas()[0].start, s.vmas()[0].end), (BASE, BASE + 4 * M));
    finish(s, &mut ctx);
}

#[test]
fn shrinking_unmaps_the_tail_and_frees_its_tables() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 6 * M)));
    write_range(&s, &mut ctx, BASE, 6 * M, P);
    let shrink = MremapArgs {
        addr: BASE,
        old_len: 6 * M,
        new_len: M,
        maymove: false,
        fixed: None,
        dontunmap: false,
    };
    remap(&s, &mut ctx, shrink).unwrap();
    let c = counters(&s, &ctx);
    assert_eq!(c.rss_anon_kb, 1024);
    assert_eq!(level(&c, "PTE"), 1);
    finish(s, &mut ctx);
}

#[test]
fn linux_errors() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
    done(&s, s.mprotect(&mut ctx, BASE + M, M, Prot::R));
    let mut a = fixed(BASE, M, BASE + 64 * M);
    a.maymove = false;
    assert!(matches!(remap(&s, &mut ctx, a), Err(Errno::Inval(_))));
    // Overlapping source and destination.
    assert!(matches!(
        remap(&s, &mut ctx, fixed(BASE, 2 * M, BASE + M)),
        Err(Errno::Inval(_))
    ));
    // Nothing mapped at the address.
    assert!(matches!(
        remap(&s, &mut ctx, fixed(BASE + 8 * M, M, BASE + 64 * M)),
        Err(Errno::Fault(_))
    ));
    // Two VMAs (the mprotect split them).
    assert!(matches!(
        remap(&s, &mut ctx, fixed(BASE, 2 * M, BASE + 64 * M)),
        Err(Errno::Fault(_))
    ));
    let zero = MremapArgs {
        new_len: 0,
        ..fixed(BASE, M, BASE + 64 * M)
    };
    assert!(matches!(remap(&s, &mut ctx, zero), Err(Errno::Inval(_))));
    // Growing the first piece needs room the second piece holds.
    let grow = MremapArgs {
        addr: BASE,
        old_len: M,
        new_len: 2 * M,
        maymove: false,
        fixed: None,
        dontunmap: false,
    };
    assert!(matches!(remap(&s, &mut ctx, grow), Err(Errno::NoMem(_))));
    assert_eq!(s.vmas().len(), 3, "failed calls change nothing");
    finish(s, &mut ctx);
}

#[test]
fn a_fixed_move_replaces_what_was_at_the_destination() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 2 * M)));
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE + 64 * M, 2 * M)));
    write_range(&s, &mut ctx, BASE, 2 * M, P);
    write_range(&s, &mut ctx, BASE + 64 * M, 2 * M, P);
    let moved_pa = pa(&s, BASE).unwrap();
    let out = remap(&s, &mut ctx, fixed(BASE, 2 * M, BASE + 64 * M)).unwrap();
    // do_munmap freed the destination's table (nothing else maps its
    // 2 MiB), so the source's table moves whole into the empty entry.
    assert_eq!(out.pte_tables_moved, 1);
    assert_eq!(pa(&s, BASE + 64 * M), Some(moved_pa));
    assert_eq!(counters(&s, &ctx).rss_anon_kb, 2048);
    finish(s, &mut ctx);
}

/// One step of the property test: a mremap of region `from` (one of a few
/// fixed slots) to slot `to`, or a resize in place, with its new size.
#[derive(Debug, Clone)]
enum Step {
    Move { from: usize, to: usize, pages: u64 },
    Resize { slot: usize, pages: u64 },
    Write { slot: usize, page: u64 },
}

const SLOT: u64 = 8 * M;
/// Slot starts: some 2 MiB-aligned, some not, so every path is taken.
fn slot_addr(i: usize) -> u64 {
    BASE + i as u64 * SLOT + [0, 0, 12 * P, 256 * P][i % 4]
}
const SLOTS: usize = 6;
const MAX_PAGES: u64 = 1024;

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0..SLOTS, 0..SLOTS, 1..=MAX_PAGES).prop_map(|(from, to, pages)| Step::Move {
            from,
            to,
            pages
        }),
        (0..SLOTS, 1..=MAX_PAGES).prop_map(|(slot, pages)| Step::Resize { slot, pages }),
        (0..SLOTS, 0..MAX_PAGES).prop_map(|(slot, page)| Step::Write { slot, page }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// After any sequence of moves and resizes, the model maps exactly the
    /// pages the reference says, each to the frame it had when written.
    #[test]
    fn moves_and_resizes_keep_every_page_where_the_reference_says(
        thp in any::<bool>(),
        steps in proptest::collection::vec(step(), 1..24),
    ) {
        let s = space(MmConfig::default());
        let mut ctx = ThreadCtx::new();
        // Reference: slot -> its mapping's length in pages, and the frame
        // of each written page by its address.
        let mut len: Vec<Option<u64>> = vec![None; SLOTS];
        let mut frames: BTreeMap<u64, u64> = BTreeMap::new();
        for (i, l) in len.iter_mut().enumerate() {
            if i % 2 == 0 {
                done(&s, s.mmap(&mut ctx, MmapArgs::anon(slot_addr(i), 512 * P)));
                if thp {
                    done(&s, s.madvise(&mut ctx, slot_addr(i), 512 * P, Advice::HugePage));
                }
                *l = Some(512);
            }
        }
        for st in steps {
            match st {
                Step::Write { slot, page } => {
                    let Some(n) = len[slot] else { continue };
                    let va = slot_addr(slot) + (page % n) * P;
                    prop_assert!(access(&s, &mut ctx, va, true).is_none());
                    // A huge page may have filled its neighbours too.
                    for p in 0..n {
                        let a = slot_addr(slot) + p * P;
                        if let (None, Some(f)) = (frames.get(&a), pa(&s, a)) {
                            if f != s.zero_page() {
                                frames.insert(a, f);
                            }
                        }
                    }
                }
                Step::Resize { slot, pages } => {
                    let Some(n) = len[slot] else { continue };
                    let room = SLOT - 256 * P;
                    let pages = pages.min(room / P);
                    let a = MremapArgs {
                        addr: slot_addr(slot),
                        old_len: n * P,
                        new_len: pages * P,
                        maymove: false,
                        fixed: None,
                        dontunmap: false,
                    };
                    let out = remap(&s, &mut ctx, a);
                    prop_assert!(out.is_ok(), "{out:?}");
                    let (start, cut) = (slot_addr(slot), slot_addr(slot) + pages * P);
                    frames.retain(|a, _| !(*a >= cut && *a < start + n * P));
                    len[slot] = Some(pages);
                }
                Step::Move { from, to, pages } => {
                    let (Some(n), None) = (len[from], len[to]) else { continue };
                    let (src, dst) = (slot_addr(from), slot_addr(to));
                    let out = remap(&s, &mut ctx, MremapArgs {
                        new_len: pages * P,
                        ..fixed(src, n * P, dst)
                    });
                    prop_assert!(out.is_ok(), "{out:?}");
                    let kept = n.min(pages);
                    let moved: Vec<(u64, u64)> = frames
                        .range(src..src + n * P)
                        .map(|(a, f)| (*a, *f))
                        .collect();
                    for (a, f) in moved {
                        frames.remove(&a);
                        if a < src + kept * P {
                            frames.insert(a - src + dst, f);
                        }
                    }
                    len[from] = None;
                    len[to] = Some(pages);
                }
            }
            // Every page: mapped to its written frame, or not mapped to a
            // private page at all.
            for (i, l) in len.iter().enumerate() {
                for p in 0..MAX_PAGES + 64 {
                    let a = slot_addr(i) + p * P;
                    let got = pa(&s, a).filter(|f| *f != s.zero_page());
                    let want = frames.get(&a).copied().filter(|_| l.is_some_and(|n| p < n));
                    prop_assert_eq!(got, want, "page {:#x} of slot {}", a, i);
                }
            }
        }
        s.check_invariants().map_err(TestCaseError::fail)?;
        let written = frames.len() as u64;
        prop_assert!(counters(&s, &ctx).rss_anon_kb >= written as i64 * 4);
        finish(s, &mut ctx);
    }
}

/// MREMAP_DONTUNMAP (Linux `dontunmap_complete`): the pages move, the
/// source stays mapped, empty and unlocked.
#[test]
fn dontunmap_moves_the_pages_and_keeps_the_source_empty() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    let n = 32;
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, n * P)));
    for i in 0..n {
        access(&s, &mut ctx, BASE + i * P, true);
    }
    done(&s, s.mlock(&mut ctx, BASE, n * P));
    let dst = BASE + (1 << 30);
    let before = counters(&s, &ctx);
    let args = MremapArgs {
        dontunmap: true,
        ..fixed(BASE, n * P, dst)
    };
    remap(&s, &mut ctx, args).unwrap();
    let after = counters(&s, &ctx);
    assert_eq!(after.minor_faults, before.minor_faults);
    assert_eq!(after.rss_anon_kb, before.rss_anon_kb);
    // Both ranges are mappings; only the destination has pages.
    assert_eq!(s.vmas().len(), 2);
    // The destination keeps the lock, the source loses it.
    let locked: Vec<(u64, bool)> = s.vmas().iter().map(|v| (v.start, v.flags.locked)).collect();
    assert_eq!(locked, [(BASE, false), (dst, true)]);
    for i in 0..n {
        assert!(access(&s, &mut ctx, dst + i * P, true).is_none());
    }
    assert_eq!(counters(&s, &ctx).minor_faults, before.minor_faults);
    for i in 0..n {
        access(&s, &mut ctx, BASE + i * P, false);
    }
    let c = counters(&s, &ctx);
    assert_eq!(c.minor_faults, before.minor_faults + n as i64);
    assert_eq!(c.rss_anon_kb, before.rss_anon_kb, "zero pages");
    // Lengths must be equal, and the model needs the destination.
    let bad = MremapArgs {
        new_len: 2 * n * P,
        dontunmap: true,
        ..fixed(dst, n * P, BASE + (2 << 30))
    };
    assert!(matches!(remap(&s, &mut ctx, bad), Err(Errno::Inval(_))));
    finish(s, &mut ctx);
}
