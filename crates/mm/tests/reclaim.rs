//! Reclaim on request with no swap, the split of large folios, and the
//! reverse map of page-cache pages (Linux `madvise_cold_or_pageout_pte_range`,
//! `shrink_folio_list`, `__folio_split` + `try_to_map_unused_to_zeropage`,
//! `folio_mkclean`).

mod common;
use common::*;
use mm::*;
use pt::VirtAddr;
use std::sync::Arc;

fn thp() -> MmConfig {
    MmConfig {
        thp: ThpMode::Madvise,
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

fn writable(s: &AddressSpace, va: u64) -> bool {
    s.page_table()
        .translate(VirtAddr::new(va))
        .unwrap()
        .attrs
        .perms
        .write
}

/// A write as the machine makes it: fault until writable, then tell the
/// model which page the write reached (the MMU's part).
fn write(s: &AddressSpace, ctx: &mut ThreadCtx, va: u64) {
    access(s, ctx, va, true);
    if s.tracks_writes() {
        s.note_write(pa(s, va));
    }
}

/// Two THPs at BASE, one byte written in each (at the given offsets).
fn two_thps(s: &AddressSpace, ctx: &mut ThreadCtx, at: [u64; 2]) {
    done(s, s.mmap(ctx, MmapArgs::anon(BASE, 4 * M)));
    done(s, s.madvise(ctx, BASE, 4 * M, Advice::HugePage));
    write(s, ctx, BASE + at[0]);
    write(s, ctx, BASE + 2 * M + at[1]);
    let c = counters(s, ctx);
    assert_eq!((c.anon_huge_kb, c.rss_anon_kb), (4096, 4096));
}

#[test]
fn pageout_splits_a_thp_and_maps_its_unwritten_subpages_to_the_zero_page() {
    let s = space(thp());
    let mut ctx = ThreadCtx::new();
    two_thps(&s, &mut ctx, [8 * K, 0]);
    let frames = s.mem().live_data().0;
    done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::PageOut));
    let c = counters(&s, &ctx);
    assert_eq!((c.anon_huge_kb, c.rss_anon_kb), (0, 8));
    // Two large frames became two base pages.
    assert_eq!(s.mem().live_data().0, frames);
    assert_eq!(pa(&s, BASE), s.zero_page());
    assert_ne!(pa(&s, BASE + 8 * K), s.zero_page());
    assert!(writable(&s, BASE + 8 * K));
    // The next write to a zero subpage faults once.
    let before = counters(&s, &ctx).minor_faults;
    write(&s, &mut ctx, BASE + 4 * K);
    assert_eq!(counters(&s, &ctx).minor_faults, before + 1);
    finish(s, &mut ctx);
}

#[test]
fn cold_over_a_whole_thp_keeps_it_and_over_part_splits_it() {
    let s = space(thp());
    let mut ctx = ThreadCtx::new();
    two_thps(&s, &mut ctx, [0, 0]);
    done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::Cold));
    let c = counters(&s, &ctx);
    assert_eq!((c.anon_huge_kb, c.rss_anon_kb), (4096, 4096));
    done(&s, s.madvise(&mut ctx, BASE, M, Advice::Cold));
    let c = counters(&s, &ctx);
    assert_eq!((c.anon_huge_kb, c.rss_anon_kb), (2048, 2052));
    s.check_invariants().unwrap();
    finish(s, &mut ctx);
}

#[test]
fn a_locked_range_is_refused_by_cold_and_pageout() {
    let s = space(thp());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, M)));
    done(&s, s.mlock(&mut ctx, BASE, M));
    for a in [Advice::Cold, Advice::PageOut] {
        assert!(matches!(
            s.madvise(&mut ctx, BASE, M, a),
            Err(Errno::Inval(_))
        ));
    }
    finish(s, &mut ctx);
}

#[test]
fn pageout_discards_lazily_freed_pages_and_keeps_the_others() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, 64 * K)));
    for i in 0..16 {
        write(&s, &mut ctx, BASE + i * 4 * K);
    }
    done(&s, s.madvise(&mut ctx, BASE, 32 * K, Advice::Free));
    done(&s, s.madvise(&mut ctx, BASE, 64 * K, Advice::PageOut));
    assert_eq!(counters(&s, &ctx).rss_anon_kb, 32);
    // A discarded page reads as the zero page.
    access(&s, &mut ctx, BASE, false);
    assert_eq!(pa(&s, BASE), s.zero_page());
    finish(s, &mut ctx);
}

#[test]
fn pageout_discards_a_lazily_freed_thp_through_a_pte_table() {
    let s = space(thp());
    let mut ctx = ThreadCtx::new();
    two_thps(&s, &mut ctx, [0, 0]);
    done(&s, s.madvise(&mut ctx, BASE, 2 * M, Advice::Free));
    done(&s, s.madvise(&mut ctx, BASE, 4 * M, Advice::PageOut));
    let c = counters(&s, &ctx);
    // The freed THP is gone, the other split (one written page stays).
    assert_eq!((c.anon_huge_kb, c.rss_anon_kb), (0, 4));
    // Its PMD now holds a PTE table: a read faults a base zero page.
    access(&s, &mut ctx, BASE, false);
    let t = s.page_table().translate(VirtAddr::new(BASE)).unwrap();
    assert_eq!((t.size, t.pa.get()), (4 * K, s.zero_page()));
    finish(s, &mut ctx);
}

#[test]
fn a_thp_a_fork_child_shares_is_left_alone_until_the_child_exits() {
    let p = space(thp());
    let mut pc = ThreadCtx::new();
    two_thps(&p, &mut pc, [0, 0]);
    let c = p.new_child().unwrap();
    p.fork(&mut pc, &c)
        .unwrap()
        .complete_without_tlb(&p)
        .unwrap();
    let mut cc = ThreadCtx::new();
    done(&c, c.madvise(&mut cc, BASE, 4 * M, Advice::PageOut));
    done(&c, c.madvise(&mut cc, BASE, M, Advice::Cold));
    done(&c, c.madvise(&mut cc, BASE, M, Advice::Free));
    assert_eq!(counters(&c, &cc).anon_huge_kb, 4096);
    c.exit(&mut cc).unwrap();
    done(&p, p.madvise(&mut pc, BASE, 4 * M, Advice::PageOut));
    assert_eq!(counters(&p, &pc).rss_anon_kb, 8);
    finish(p, &mut pc);
}

#[test]
fn shmem_pageout_drops_clean_pages_and_keeps_dirty_ones() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    let shmem = MmapArgs {
        kind: MapKind::Shmem,
        shared: true,
        ..MmapArgs::anon(BASE, 128 * K)
    };
    done(&s, s.mmap(&mut ctx, shmem));
    for i in 0..16 {
        access(&s, &mut ctx, BASE + i * 4 * K, true);
        access(&s, &mut ctx, BASE + 64 * K + i * 4 * K, false);
    }
    assert_eq!(counters(&s, &ctx).rss_shmem_kb, 128);
    let frames = s.mem().live_data().0;
    done(&s, s.madvise(&mut ctx, BASE, 128 * K, Advice::PageOut));
    assert_eq!(counters(&s, &ctx).rss_shmem_kb, 0);
    // The 16 pages only read were freed.
    assert_eq!(s.mem().live_data().0, frames - 16);
    finish(s, &mut ctx);
}

#[test]
fn msync_write_protects_the_page_in_every_process_of_the_family() {
    let p = Arc::new(space(MmConfig::default()));
    let mut pc = ThreadCtx::new();
    let member: std::sync::Weak<dyn FamilyMember> = Arc::downgrade(&p) as _;
    p.join_rmap(member);
    done(&p, p.mmap(&mut pc, file_shared(BASE, 64 * K)));
    access(&p, &mut pc, BASE, true);
    assert!(writable(&p, BASE));
    let c = Arc::new(p.new_child().unwrap());
    p.fork(&mut pc, &c)
        .unwrap()
        .complete_without_tlb(&p)
        .unwrap();
    let member: std::sync::Weak<dyn FamilyMember> = Arc::downgrade(&c) as _;
    c.join_rmap(member);
    let mut cc = ThreadCtx::new();
    access(&c, &mut cc, BASE, true);
    done(&c, c.msync(&mut cc, BASE, 64 * K));
    assert!(!writable(&c, BASE));
    assert!(!writable(&p, BASE), "the parent's mapping was not cleaned");
    // The parent's next write faults (and makes the page dirty again).
    let before = counters(&p, &pc).minor_faults;
    access(&p, &mut pc, BASE, true);
    assert_eq!(counters(&p, &pc).minor_faults, before + 1);
    c.exit(&mut cc).unwrap();
    let p = Arc::try_unwrap(p).unwrap_or_else(|_| panic!("the parent is still shared"));
    finish(p, &mut pc);
}

#[test]
fn pageout_keeps_the_file_pages_another_process_maps() {
    let p = Arc::new(space(MmConfig::default()));
    let mut pc = ThreadCtx::new();
    let member: std::sync::Weak<dyn FamilyMember> = Arc::downgrade(&p) as _;
    p.join_rmap(member);
    let private = MmapArgs {
        kind: MapKind::File {
            cached: true,
            offset: 0,
        },
        ..MmapArgs::anon(BASE, 128 * K)
    };
    done(&p, p.mmap(&mut pc, private));
    access(&p, &mut pc, BASE, false);
    assert_eq!(counters(&p, &pc).rss_file_kb, 64);
    let c = Arc::new(p.new_child().unwrap());
    p.fork(&mut pc, &c)
        .unwrap()
        .complete_without_tlb(&p)
        .unwrap();
    let member: std::sync::Weak<dyn FamilyMember> = Arc::downgrade(&c) as _;
    c.join_rmap(member);
    let mut cc = ThreadCtx::new();
    access(&c, &mut cc, BASE, false);
    access(&c, &mut cc, BASE + 64 * K, false);
    assert_eq!(counters(&c, &cc).rss_file_kb, 128);
    done(&c, c.madvise(&mut cc, BASE, 128 * K, Advice::PageOut));
    // The 64 KiB the parent maps stay mapped in the child too.
    assert_eq!(counters(&c, &cc).rss_file_kb, 64);
    c.exit(&mut cc).unwrap();
    let p = Arc::try_unwrap(p).unwrap_or_else(|_| panic!("the parent is still shared"));
    finish(p, &mut pc);
}

fn file_shared(addr: u64, len: u64) -> MmapArgs {
    MmapArgs {
        kind: MapKind::File {
            cached: true,
            offset: 0,
        },
        shared: true,
        ..MmapArgs::anon(addr, len)
    }
}

/// Sets the dirty bit of the PTE mapping `va`, as the MMU does on a write
/// through a writable entry (no fault).
fn hardware_write(s: &AddressSpace, va: u64) {
    let t = s.page_table().translate(VirtAddr::new(va)).unwrap();
    assert!(
        t.attrs.perms.write && !t.attrs.dirty,
        "a writable, clean entry"
    );
    let word = t.entry_pas[t.reads - 1].get();
    let table = pt::TableAddr::new(word & !(4 * K - 1));
    let attrs = pt::Attrs {
        dirty: true,
        ..t.attrs
    };
    let e = pt::Entry::Leaf {
        pa: t.pa.get(),
        attrs,
        contiguous: false,
    };
    s.page_table()
        .set_entry(table, pt::Level::PTE, VirtAddr::new(va), &e);
}

#[test]
fn a_zapped_dirty_shmem_pte_dirties_the_page_so_pageout_keeps_it() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    let shmem = MmapArgs {
        kind: MapKind::Shmem,
        shared: true,
        ..MmapArgs::anon(BASE, 64 * K)
    };
    done(&s, s.mmap(&mut ctx, shmem));
    // Read faults map shmem pages writable and clean; four are then written
    // without a fault.
    for i in 0..16 {
        access(&s, &mut ctx, BASE + i * 4 * K, false);
    }
    for i in 0..4 {
        hardware_write(&s, BASE + i * 4 * K);
    }
    // The zap moves the entries' dirty bits to the pages (Linux
    // zap_present_folio_ptes), so after the pages are mapped again, clean,
    // pageout keeps the four and frees the twelve never written.
    done(&s, s.madvise(&mut ctx, BASE, 64 * K, Advice::DontNeed));
    for i in 0..16 {
        access(&s, &mut ctx, BASE + i * 4 * K, false);
    }
    assert_eq!(counters(&s, &ctx).rss_shmem_kb, 64);
    let frames = s.mem().live_data().0;
    done(&s, s.madvise(&mut ctx, BASE, 64 * K, Advice::PageOut));
    assert_eq!(counters(&s, &ctx).rss_shmem_kb, 0);
    assert_eq!(s.mem().live_data().0, frames - 12);
    finish(s, &mut ctx);
}
