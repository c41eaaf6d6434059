//! Shmem THPs: which mappings take PMD-sized folios under each value of
//! `shmem_enabled` (Linux 6.18 mm/shmem.c `shmem_allowable_huge_orders`,
//! `shmem_huge_global_enabled`), and MADV_COLD / MADV_PAGEOUT of a shmem
//! folio mapped by one PMD entry (`madvise_cold_or_pageout_pte_range`,
//! `shrink_folio_list`), with the counters smaps_rollup would give.

mod common;
use common::*;
use mm::*;
use std::sync::{Arc, Weak};

const P: u64 = 4096;

fn cfg(global: ShmemEnabled, pmd: ShmemOrderPolicy) -> MmConfig {
    MmConfig {
        shmem_enabled: global,
        shmem_pmd_policy: pmd,
        ..MmConfig::default()
    }
}

fn mmap(s: &AddressSpace, ctx: &mut ThreadCtx, kind: MapKind, len: u64) {
    let args = MmapArgs {
        kind,
        shared: true,
        ..MmapArgs::anon(BASE, len)
    };
    done(s, s.mmap(ctx, args));
}

/// Writes every page of `[BASE, BASE + len)`; returns the faults taken and
/// the shmem mapped by PMD leaves then, in kB.
fn write_all(s: &AddressSpace, ctx: &mut ThreadCtx, len: u64) -> (i64, i64) {
    let before = counters(s, ctx).minor_faults;
    for va in (BASE..BASE + len).step_by(P as usize) {
        access(s, ctx, va, true);
    }
    let c = counters(s, ctx);
    assert_eq!(c.rss_shmem_kb, (len / 1024) as i64, "every page resident");
    (c.minor_faults - before, c.shmem_pmd_kb)
}

/// (faults, ShmemPmdMapped kB) of writing 4 MiB of a fresh mapping.
fn written(config: MmConfig, kind: MapKind, hugepage: bool) -> (i64, i64) {
    let s = space(config);
    let mut ctx = ThreadCtx::new();
    mmap(&s, &mut ctx, kind, 4 * M);
    if hugepage {
        done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::HugePage));
    }
    let r = write_all(&s, &mut ctx, 4 * M);
    finish(s, &mut ctx);
    r
}

const HUGE: (i64, i64) = (2, 4096);
const BASE_PAGES: (i64, i64) = (1024, 0);

#[test]
fn a_memfd_follows_shmem_enabled_as_its_mount_policy() {
    use ShmemEnabled as G;
    let inherit = ShmemOrderPolicy::Inherit;
    for (global, plain, advised) in [
        (G::Never, BASE_PAGES, BASE_PAGES),
        (G::Always, HUGE, HUGE),
        // Both folios end within the 4 MiB file.
        (G::WithinSize, HUGE, HUGE),
        (G::Advise, BASE_PAGES, HUGE),
        (G::Deny, BASE_PAGES, BASE_PAGES),
        (G::Force, HUGE, HUGE),
    ] {
        let c = cfg(global, inherit);
        assert_eq!(
            written(c.clone(), MapKind::Shmem, false),
            plain,
            "{global:?}"
        );
        assert_eq!(
            written(c, MapKind::Shmem, true),
            advised,
            "{global:?} + hugepage"
        );
    }
}

#[test]
fn within_size_takes_a_folio_only_where_it_ends_inside_the_file() {
    // A 3 MiB memfd: the folio at 0 ends inside it, the one at 2 MiB would
    // not (and does not fit the mapping either): 1 fault + 256 base pages.
    let s = space(cfg(ShmemEnabled::WithinSize, ShmemOrderPolicy::Inherit));
    let mut ctx = ThreadCtx::new();
    mmap(&s, &mut ctx, MapKind::Shmem, 3 * M);
    assert_eq!(write_all(&s, &mut ctx, 3 * M), (1 + 256, 2048));
    finish(s, &mut ctx);
}

#[test]
fn deny_and_force_override_a_tmpfs_mount() {
    let tmpfs = |h| MapKind::Tmpfs(h);
    let inherit = ShmemOrderPolicy::Inherit;
    assert_eq!(
        written(
            cfg(ShmemEnabled::Never, inherit),
            tmpfs(ShmemHuge::Always),
            false
        ),
        HUGE,
        "the mount's own policy when not overridden"
    );
    assert_eq!(
        written(
            cfg(ShmemEnabled::Deny, inherit),
            tmpfs(ShmemHuge::Always),
            false
        ),
        BASE_PAGES
    );
    assert_eq!(
        written(
            cfg(ShmemEnabled::Force, inherit),
            tmpfs(ShmemHuge::Never),
            false
        ),
        HUGE
    );
    assert_eq!(
        written(
            cfg(ShmemEnabled::Always, inherit),
            tmpfs(ShmemHuge::Never),
            false
        ),
        BASE_PAGES,
        "a policy other than deny or force is the internal mount's only"
    );
}

#[test]
fn shared_anonymous_memory_also_follows_the_pmd_size_policy() {
    use ShmemEnabled as G;
    use ShmemOrderPolicy as O;
    for (global, pmd, plain, advised) in [
        (G::Always, O::Inherit, HUGE, HUGE),
        (G::Never, O::Inherit, BASE_PAGES, BASE_PAGES),
        (G::Always, O::Never, BASE_PAGES, BASE_PAGES),
        (G::Never, O::Always, HUGE, HUGE),
        (G::Never, O::WithinSize, HUGE, HUGE),
        (G::Never, O::Advise, BASE_PAGES, HUGE),
        // force gives the inherited orders only; deny none.
        (G::Force, O::Inherit, HUGE, HUGE),
        (G::Force, O::Always, BASE_PAGES, BASE_PAGES),
        (G::Deny, O::Always, BASE_PAGES, BASE_PAGES),
    ] {
        let c = cfg(global, pmd);
        let what = format!("{global:?}, 2048kB {pmd:?}");
        assert_eq!(written(c.clone(), MapKind::Anon, false), plain, "{what}");
        assert_eq!(
            written(c, MapKind::Anon, true),
            advised,
            "{what} + hugepage"
        );
        // A memfd ignores the PMD size's policy.
        let memfd = written(cfg(global, pmd), MapKind::Shmem, false);
        let mount = written(cfg(global, O::Inherit), MapKind::Shmem, false);
        assert_eq!(memfd, mount, "{what}: memfd");
    }
}

#[test]
fn collapse_of_shmem_is_refused_under_deny_only() {
    for (global, ok) in [(ShmemEnabled::Never, true), (ShmemEnabled::Deny, false)] {
        let s = space(cfg(global, ShmemOrderPolicy::Inherit));
        let mut ctx = ThreadCtx::new();
        mmap(&s, &mut ctx, MapKind::Shmem, 2 * M);
        assert_eq!(write_all(&s, &mut ctx, 2 * M), (512, 0));
        let r = s.madvise(&mut ctx, BASE, 2 * M, Advice::Collapse);
        assert_eq!(r.is_ok(), ok, "{global:?}");
        if let Ok(d) = r {
            d.complete_without_tlb(&s).unwrap();
            assert_eq!(counters(&s, &ctx).shmem_pmd_kb, 2048);
        }
        finish(s, &mut ctx);
    }
}

/// A tmpfs huge=always mapping of `len`, every page read or written.
fn huge_tmpfs(len: u64, write: bool) -> (AddressSpace, ThreadCtx) {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    mmap(&s, &mut ctx, MapKind::Tmpfs(ShmemHuge::Always), len);
    for va in (BASE..BASE + len).step_by(P as usize) {
        access(&s, &mut ctx, va, write);
    }
    assert_eq!(counters(&s, &ctx).shmem_pmd_kb, (len / 1024) as i64);
    (s, ctx)
}

/// Faults of reading `[BASE, BASE + len)`.
fn read_faults(s: &AddressSpace, ctx: &mut ThreadCtx, len: u64) -> i64 {
    let before = counters(s, ctx).minor_faults;
    for va in (BASE..BASE + len).step_by(P as usize) {
        access(s, ctx, va, false);
    }
    counters(s, ctx).minor_faults - before
}

#[test]
fn pageout_of_a_clean_pmd_folio_drops_it_whole() {
    let (s, mut ctx) = huge_tmpfs(4 * M, false);
    let frames = s.mem().live_data().0;
    done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::PageOut));
    let c = counters(&s, &ctx);
    assert_eq!((c.rss_shmem_kb, c.shmem_pmd_kb), (0, 0));
    assert_eq!(frames - s.mem().live_data().0, 2, "two 2 MiB frames freed");
    // New folios, mapped by a PMD each.
    assert_eq!(read_faults(&s, &mut ctx, 4 * M), 2);
    assert_eq!(counters(&s, &ctx).shmem_pmd_kb, 4096);
    finish(s, &mut ctx);
}

#[test]
fn pageout_of_a_dirty_pmd_folio_unmaps_it_and_keeps_it() {
    let (s, mut ctx) = huge_tmpfs(4 * M, true);
    let frames = s.mem().live_data().0;
    done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::PageOut));
    let c = counters(&s, &ctx);
    assert_eq!((c.rss_shmem_kb, c.shmem_pmd_kb), (2048, 2048));
    assert_eq!(s.mem().live_data().0, frames, "the folio stays in the file");
    assert_eq!(read_faults(&s, &mut ctx, 4 * M), 1);
    assert_eq!(counters(&s, &ctx).shmem_pmd_kb, 4096);
    finish(s, &mut ctx);
}

#[test]
fn advice_over_part_of_a_pmd_splits_the_folio_and_unmaps_it() {
    for advice in [Advice::PageOut, Advice::Cold] {
        for write in [false, true] {
            let (s, mut ctx) = huge_tmpfs(4 * M, write);
            done(&s, s.madvise(&mut ctx, BASE + M, P, advice));
            let c = counters(&s, &ctx);
            assert_eq!((c.rss_shmem_kb, c.shmem_pmd_kb), (2048, 2048), "{advice:?}");
            // Nothing was freed: 512 base pages, read back 16 a fault.
            assert_eq!(read_faults(&s, &mut ctx, 4 * M), 32, "{advice:?}");
            let c = counters(&s, &ctx);
            assert_eq!((c.rss_shmem_kb, c.shmem_pmd_kb), (4096, 2048));
            finish(s, &mut ctx);
        }
    }
}

#[test]
fn cold_over_a_whole_pmd_changes_nothing() {
    let (s, mut ctx) = huge_tmpfs(4 * M, true);
    done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::Cold));
    let c = counters(&s, &ctx);
    assert_eq!((c.rss_shmem_kb, c.shmem_pmd_kb), (4096, 4096));
    assert_eq!(read_faults(&s, &mut ctx, 4 * M), 0);
    finish(s, &mut ctx);
}

#[test]
fn a_folio_a_fork_child_maps_is_left_alone() {
    let p = Arc::new(space(MmConfig::default()));
    let mut pc = ThreadCtx::new();
    p.join_rmap(Arc::downgrade(&p) as Weak<dyn FamilyMember>);
    mmap(&p, &mut pc, MapKind::Tmpfs(ShmemHuge::Always), 4 * M);
    for va in (BASE..BASE + 4 * M).step_by(P as usize) {
        access(&p, &mut pc, va, true);
    }
    let c = Arc::new(p.new_child().unwrap());
    p.fork(&mut pc, &c)
        .unwrap()
        .complete_without_tlb(&p)
        .unwrap();
    c.join_rmap(Arc::downgrade(&c) as Weak<dyn FamilyMember>);
    let mut cc = ThreadCtx::new();
    // The child maps only the first folio.
    access(&c, &mut cc, BASE, false);
    for (off, len) in [(0, 4 * M), (M, P), (3 * M, P)] {
        for advice in [Advice::PageOut, Advice::Cold] {
            done(&p, p.madvise(&mut pc, BASE + off, len, advice));
        }
    }
    // The first folio is mapped in both, untouched; the second was the
    // parent's alone: paged out whole (dirty, so kept but unmapped).
    assert_eq!(counters(&p, &pc).shmem_pmd_kb, 2048);
    assert_eq!(counters(&c, &cc).shmem_pmd_kb, 2048);
    c.exit(&mut cc).unwrap();
}
