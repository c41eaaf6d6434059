//! get_mempolicy's node lookup (`AddressSpace::lookup_node`), fast and
//! slow, against what Linux does: which locks each takes, what it faults
//! in, and that both leave the same pages mapped.

mod common;
use common::*;
use mm::*;

fn cfg(gup: Gup, locking: Locking, thp: ThpMode) -> MmConfig {
    MmConfig {
        gup,
        locking,
        thp,
        ..MmConfig::default()
    }
}

/// Acquisitions of each lock class made by `f`.
fn locks_of(ctx: &mut ThreadCtx, f: impl FnOnce(&mut ThreadCtx)) -> [u64; 4] {
    let before = ctx.counters.lock_acquisitions;
    f(ctx);
    let after = ctx.counters.lock_acquisitions;
    std::array::from_fn(|i| after[i] - before[i])
}

fn lookup(s: &AddressSpace, ctx: &mut ThreadCtx, va: u64) {
    done(s, s.lookup_node(ctx, va));
}

#[test]
fn a_present_page_takes_no_table_lock_fast_and_its_table_lock_slow() {
    for gup in [Gup::Fast, Gup::Slow] {
        let s = space(cfg(gup, Locking::SplitPmd, ThpMode::Never));
        let mut ctx = ThreadCtx::new();
        done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, M)));
        access(&s, &mut ctx, BASE, true);
        let faults = ctx.counters.minor_faults;
        let l = locks_of(&mut ctx, |c| lookup(&s, c, BASE));
        assert_eq!(ctx.counters.minor_faults, faults, "{gup:?}: no fault");
        assert_eq!(l[LockClass::Mmap as usize], 1, "{gup:?}");
        let pte = l[LockClass::Pte as usize];
        assert_eq!(pte, u64::from(gup == Gup::Slow), "{gup:?}: PTE locks");
        assert_eq!(l[LockClass::PageTableLock as usize], 0);
        finish(s, &mut ctx);
    }
}

#[test]
fn an_absent_anonymous_page_is_faulted_in_as_the_zero_page() {
    for gup in [Gup::Fast, Gup::Slow] {
        let s = space(cfg(gup, Locking::SplitPmd, ThpMode::Never));
        let mut ctx = ThreadCtx::new();
        done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, M)));
        for p in 0..8 {
            lookup(&s, &mut ctx, BASE + p * 4096);
        }
        let c = counters(&s, &ctx);
        assert_eq!(ctx.counters.minor_faults, 8, "{gup:?}: one fault per page");
        assert_eq!(c.rss_anon_kb, 0, "{gup:?}: the zero page is no RSS");
        // Asked again: mapped, no fault; the zero page is a special
        // mapping gup_fast refuses, so even the fast lookup takes the PTE
        // lock on the slow path.
        let l = locks_of(&mut ctx, |c| lookup(&s, c, BASE));
        assert_eq!(ctx.counters.minor_faults, 8);
        assert_eq!(l[LockClass::Pte as usize], 1, "{gup:?}");
        finish(s, &mut ctx);
    }
}

#[test]
fn a_huge_pmd_is_read_under_page_table_lock_unless_pmd_locks_are_split() {
    // The seed's kernel: 3.12's follow_page_mask took mm->page_table_lock
    // for a huge PMD; with split PMD locks, the PMD table's own lock.
    for (locking, class) in [
        (Locking::SplitPte, LockClass::PageTableLock),
        (Locking::SplitPmd, LockClass::Pmd),
    ] {
        let s = space(cfg(Gup::Slow, locking, ThpMode::Always));
        let mut ctx = ThreadCtx::new();
        done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 4 * M)));
        access(&s, &mut ctx, BASE, true);
        assert!(counters(&s, &ctx).anon_huge_kb >= 2048, "a THP");
        let l = locks_of(&mut ctx, |c| {
            for p in 0..512 {
                lookup(&s, c, BASE + p * 4096);
            }
        });
        assert_eq!(l[class as usize], 512, "{locking:?}");
        assert_eq!(l[LockClass::Pte as usize], 0);
        // The fast lookup takes no table lock on the same THP.
        let fast = space(cfg(Gup::Fast, locking, ThpMode::Always));
        let mut fctx = ThreadCtx::new();
        done(&fast, fast.mmap(&mut fctx, MmapArgs::anon(BASE, 4 * M)));
        access(&fast, &mut fctx, BASE, true);
        let l = locks_of(&mut fctx, |c| lookup(&fast, c, BASE + 4096));
        assert_eq!(l[1..], [0, 0, 0]);
        finish(s, &mut ctx);
        finish(fast, &mut fctx);
    }
}

#[test]
fn an_unmapped_or_unreadable_address_is_efault() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    assert!(matches!(
        s.lookup_node(&mut ctx, BASE),
        Err(Errno::Fault(_))
    ));
    done(
        &s,
        s.mmap(
            &mut ctx,
            MmapArgs {
                prot: Prot::NONE,
                ..MmapArgs::anon(BASE, M)
            },
        ),
    );
    assert!(matches!(
        s.lookup_node(&mut ctx, BASE),
        Err(Errno::Fault(_))
    ));
    assert_eq!(ctx.counters.minor_faults, 0);
    finish(s, &mut ctx);
}
