//! fork: copy-on-write of private memory between two address spaces, in
//! both directions, THP shared as a PMD, and the child's exit (Linux
//! `dup_mmap`, `do_wp_page`, `do_huge_pmd_wp_page`, `exit_mmap`).

mod common;
use common::*;
use mm::*;
use proptest::prelude::*;
use pt::VirtAddr;

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

fn fork(s: &AddressSpace, ctx: &mut ThreadCtx) -> AddressSpace {
    let c = s.new_child().unwrap();
    s.fork(ctx, &c).unwrap().complete_without_tlb(s).unwrap();
    c
}

fn family(spaces: &[&AddressSpace]) {
    AddressSpace::check_family(spaces).unwrap();
}

fn live_frames(s: &AddressSpace) -> u64 {
    s.mem().live_data().0
}

/// The case: parent and child both write half of a shared private
/// region.
#[test]
fn cow_halves_child_copies_then_parent_reuses() {
    let p = space(MmConfig::default());
    let mut pc = ThreadCtx::new();
    let n = 64;
    done(&p, p.mmap(&mut pc, MmapArgs::anon(BASE, n * 4096)));
    for i in 0..n {
        access(&p, &mut pc, BASE + i * 4096, true);
    }
    let before = counters(&p, &pc);
    let mut cc = ThreadCtx::new();
    let c = fork(&p, &mut pc);
    family(&[&p, &c]);
    // Both map the same frames, read-only.
    assert_eq!(pa(&p, BASE), pa(&c, BASE));
    assert!(!writable(&p, BASE) && !writable(&c, BASE));
    let cs = counters(&c, &cc);
    assert_eq!(cs.rss_anon_kb, (n * 4) as i64);
    // copy_pte_range allocated the child's PUD, PMD and PTE tables.
    assert_eq!(cs.vmpte_kb, 12);
    assert_eq!(p.shared_frames(), n as usize);
    let frames = live_frames(&p);
    for i in 0..n / 2 {
        access(&c, &mut cc, BASE + i * 4096, true);
    }
    let cs = counters(&c, &cc);
    assert_eq!(cs.minor_faults, (n / 2) as i64, "one COW fault per page");
    assert_eq!(
        cs.rss_anon_kb,
        (n * 4) as i64,
        "a copy replaces a shared page"
    );
    assert_ne!(pa(&p, BASE), pa(&c, BASE));
    assert_eq!(pa(&p, BASE + (n - 1) * 4096), pa(&c, BASE + (n - 1) * 4096));
    assert_eq!(live_frames(&p), frames + n / 2);
    family(&[&p, &c]);
    c.exit(&mut cc).unwrap();
    family(&[&p, &c]);
    assert_eq!(p.shared_frames(), 0);
    // The parent's pages are its own again, but read-only: each write
    // faults once and reuses the page (no copy).
    let frames = live_frames(&p);
    let first = pa(&p, BASE + (n / 2) * 4096);
    for i in n / 2..n {
        access(&p, &mut pc, BASE + i * 4096, true);
    }
    assert_eq!(pa(&p, BASE + (n / 2) * 4096), first);
    assert_eq!(live_frames(&p), frames);
    let ps = counters(&p, &pc);
    assert_eq!(ps.minor_faults - before.minor_faults, (n / 2) as i64);
    assert_eq!(ps.rss_anon_kb, before.rss_anon_kb);
    drop(c);
    finish(p, &mut pc);
}

/// The other direction: the parent writes first (copies), then the
/// child's write finds itself the only holder and reuses.
#[test]
fn parent_copies_child_reuses() {
    let p = space(MmConfig::default());
    let mut pc = ThreadCtx::new();
    done(&p, p.mmap(&mut pc, MmapArgs::anon(BASE, 8 * 4096)));
    access(&p, &mut pc, BASE, true);
    let mut cc = ThreadCtx::new();
    let c = fork(&p, &mut pc);
    let shared = pa(&c, BASE);
    access(&p, &mut pc, BASE, true);
    assert_ne!(pa(&p, BASE), shared, "the parent copied");
    assert!(!writable(&c, BASE));
    access(&c, &mut cc, BASE, true);
    assert_eq!(pa(&c, BASE), shared, "the child reused the original");
    assert_eq!(counters(&c, &cc).minor_faults, 1);
    family(&[&p, &c]);
    assert_eq!(p.shared_frames(), 0);
    c.exit(&mut cc).unwrap();
    drop(c);
    finish(p, &mut pc);
}

/// Zero pages map the child's own zero page; a VMA without an anon_vma
/// (only read) gets no tables in the child (vma_needs_copy).
#[test]
fn vma_needs_copy_skips_vmas_without_anon_vma() {
    let p = space(MmConfig::default());
    let mut pc = ThreadCtx::new();
    done(&p, p.mmap(&mut pc, MmapArgs::anon(BASE, 16 * 4096)));
    access(&p, &mut pc, BASE, false);
    let cc = ThreadCtx::new();
    let c = fork(&p, &mut pc);
    assert_eq!(counters(&c, &cc).vmpte_kb, 0);
    assert!(c.page_table().translate(VirtAddr::new(BASE)).is_err());
    // After a write the VMA has an anon_vma: the zero page read elsewhere
    // is copied as the child's zero page.
    access(&p, &mut pc, BASE + 4096, true);
    let mut cc = ThreadCtx::new();
    let c2 = fork(&p, &mut pc);
    assert_eq!(pa(&c2, BASE), c2.zero_page());
    assert_eq!(counters(&c2, &cc).rss_anon_kb, 4);
    family(&[&p, &c, &c2]);
    c2.exit(&mut cc).unwrap();
    drop(c);
    drop(c2);
    finish(p, &mut pc);
}

/// mprotect after fork does not make a shared page writable
/// (can_change_pte_writable needs PageAnonExclusive).
#[test]
fn mprotect_keeps_non_exclusive_pages_read_only() {
    let p = space(MmConfig::default());
    let mut pc = ThreadCtx::new();
    done(&p, p.mmap(&mut pc, MmapArgs::anon(BASE, 4 * 4096)));
    access(&p, &mut pc, BASE, true);
    let mut cc = ThreadCtx::new();
    let c = fork(&p, &mut pc);
    done(&p, p.mprotect(&mut pc, BASE, 4 * 4096, Prot::R));
    done(&p, p.mprotect(&mut pc, BASE, 4 * 4096, Prot::RW));
    assert!(!writable(&p, BASE));
    access(&p, &mut pc, BASE, true);
    assert_ne!(pa(&p, BASE), pa(&c, BASE));
    family(&[&p, &c]);
    c.exit(&mut cc).unwrap();
    drop(c);
    finish(p, &mut pc);
}

/// A THP is shared as a PMD (a table deposited in the child); a write to
/// it in either space splits that space's PMD and copies one page.
#[test]
fn thp_shared_as_pmd_split_on_write_both_ways() {
    let p = space(thp());
    let mut pc = ThreadCtx::new();
    done(&p, p.mmap(&mut pc, MmapArgs::anon(BASE, 4 * M)));
    done(&p, p.madvise(&mut pc, BASE, 4 * M, Advice::HugePage));
    access(&p, &mut pc, BASE, true);
    assert_eq!(counters(&p, &pc).anon_huge_kb, 2048);
    let mut cc = ThreadCtx::new();
    let c = fork(&p, &mut pc);
    let cs = counters(&c, &cc);
    assert_eq!(cs.anon_huge_kb, 2048);
    assert_eq!(cs.rss_anon_kb, 2048);
    assert_eq!(cs.vmpte_kb, 12, "PUD, PMD and the deposited table");
    family(&[&p, &c]);
    access(&c, &mut cc, BASE + 4096, true);
    let cs = counters(&c, &cc);
    assert_eq!(cs.minor_faults, 1);
    assert_eq!(cs.anon_huge_kb, 0, "the child's PMD was split");
    assert_eq!(cs.rss_anon_kb, 2048);
    assert_eq!(cs.vmpte_kb, 12, "the deposit became the PTE table");
    assert_eq!(counters(&p, &pc).anon_huge_kb, 2048);
    family(&[&p, &c]);
    let f0 = counters(&p, &pc).minor_faults;
    access(&p, &mut pc, BASE + 8192, true);
    let ps = counters(&p, &pc);
    assert_eq!(ps.minor_faults - f0, 1);
    assert_eq!(ps.anon_huge_kb, 0, "still shared: the parent splits too");
    assert_ne!(pa(&p, BASE + 8192), pa(&c, BASE + 8192));
    family(&[&p, &c]);
    c.exit(&mut cc).unwrap();
    family(&[&p, &c]);
    drop(c);
    finish(p, &mut pc);
}

/// After the child exits without writing, the parent's write reuses the
/// whole THP: no split, no copy.
#[test]
fn thp_reused_after_child_exit() {
    let p = space(thp());
    let mut pc = ThreadCtx::new();
    done(&p, p.mmap(&mut pc, MmapArgs::anon(BASE, 4 * M)));
    done(&p, p.madvise(&mut pc, BASE, 4 * M, Advice::HugePage));
    access(&p, &mut pc, BASE, true);
    let mut cc = ThreadCtx::new();
    let c = fork(&p, &mut pc);
    access(&c, &mut cc, BASE, false);
    c.exit(&mut cc).unwrap();
    let head = pa(&p, BASE);
    access(&p, &mut pc, BASE + 4096, true);
    assert_eq!(counters(&p, &pc).anon_huge_kb, 2048);
    assert_eq!(pa(&p, BASE), head);
    assert!(writable(&p, BASE));
    drop(c);
    finish(p, &mut pc);
}

/// The child unmaps the region: the parent keeps every page, and its
/// writes reuse them.
#[test]
fn child_unmap_leaves_parent_pages() {
    let p = space(MmConfig::default());
    let mut pc = ThreadCtx::new();
    done(&p, p.mmap(&mut pc, MmapArgs::anon(BASE, 16 * 4096)));
    for i in 0..16 {
        access(&p, &mut pc, BASE + i * 4096, true);
    }
    let mut cc = ThreadCtx::new();
    let c = fork(&p, &mut pc);
    let frames = live_frames(&p);
    done(&c, c.munmap(&mut cc, BASE, 16 * 4096));
    assert_eq!(counters(&c, &cc).rss_anon_kb, 0);
    assert_eq!(live_frames(&p), frames, "the parent still holds them");
    assert_eq!(p.shared_frames(), 0);
    for i in 0..16 {
        access(&p, &mut pc, BASE + i * 4096, true);
    }
    assert_eq!(live_frames(&p), frames);
    family(&[&p, &c]);
    c.exit(&mut cc).unwrap();
    drop(c);
    finish(p, &mut pc);
}

#[derive(Debug, Clone)]
enum Step {
    Write(usize, u64),
    Read(usize, u64),
    DontNeed(usize, u64),
    Fork(usize),
    Exit(usize),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        4 => (0usize..3, 0u64..12).prop_map(|(s, p)| Step::Write(s, p)),
        2 => (0usize..3, 0u64..12).prop_map(|(s, p)| Step::Read(s, p)),
        1 => (0usize..3, 0u64..12).prop_map(|(s, p)| Step::DontNeed(s, p)),
        1 => (0usize..3).prop_map(Step::Fork),
        1 => (1usize..3).prop_map(Step::Exit),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Against a reference of what each page holds: a write gives the
    /// writer a frame no other live space maps at that address (COW), and
    /// keeps the frame when the reference says no other space holds it
    /// (reuse); the share table and leak checks hold after every step.
    #[test]
    fn cow_against_reference(steps in prop::collection::vec(step(), 1..40)) {
        let n = 12u64;
        let root = space(MmConfig::default());
        let mut ctxs = vec![ThreadCtx::new()];
        done(&root, root.mmap(&mut ctxs[0], MmapArgs::anon(BASE, n * 4096)));
        let mut spaces: Vec<Option<AddressSpace>> = vec![Some(root)];
        let mut dead: Vec<AddressSpace> = Vec::new();
        for st in steps {
            match st {
                Step::Write(i, pg) | Step::Read(i, pg) | Step::DontNeed(i, pg) => {
                    let Some(Some(s)) = spaces.get(i) else { continue };
                    let va = BASE + pg * 4096;
                    match st {
                        Step::Write(..) => {
                            let before = s.page_table().translate(VirtAddr::new(va)).ok().map(|t| t.pa.get());
                            let others: Vec<u64> = spaces.iter().enumerate()
                                .filter(|(j, o)| *j != i && o.is_some())
                                .filter_map(|(_, o)| o.as_ref().unwrap().page_table().translate(VirtAddr::new(va)).ok())
                                .map(|t| t.pa.get())
                                .collect();
                            let shared = before.is_some_and(|b| others.contains(&b));
                            access(s, &mut ctxs[i], va, true);
                            let after = pa(s, va);
                            prop_assert!(!others.contains(&after), "a write must not land on a frame another space maps");
                            if let Some(b) = before {
                                if !shared && b != s.zero_page() {
                                    prop_assert_eq!(after, b, "sole holder reuses");
                                }
                            }
                        }
                        Step::Read(..) => { access(s, &mut ctxs[i], va, false); }
                        _ => done(s, s.madvise(&mut ctxs[i], va, 4096, Advice::DontNeed)),
                    }
                }
                Step::Fork(i) => {
                    if spaces.len() >= 3 { continue; }
                    let Some(Some(s)) = spaces.get(i) else { continue };
                    let c = fork(s, &mut ctxs[i]);
                    spaces.push(Some(c));
                    ctxs.push(ThreadCtx::new());
                }
                Step::Exit(i) => {
                    if let Some(slot) = spaces.get_mut(i) {
                        if let Some(s) = slot.take() {
                            s.exit(&mut ctxs[i]).unwrap();
                            dead.push(s);
                        }
                    }
                }
            }
            let all: Vec<&AddressSpace> = spaces.iter().flatten().chain(dead.iter()).collect();
            AddressSpace::check_family(&all).map_err(TestCaseError::fail)?;
        }
        for (i, s) in spaces.iter().enumerate().skip(1) {
            if let Some(s) = s { s.exit(&mut ctxs[i]).unwrap(); }
        }
        let root = spaces.swap_remove(0).unwrap();
        prop_assert_eq!(root.shared_frames(), 0);
        root.exit(&mut ctxs[0]).unwrap();
        drop(spaces);
        drop(dead);
        prop_assert!(root.mem().leaks().is_empty(), "leaks: {:?}", root.mem().leaks());
    }
}

/// MADV_PAGEOUT evicts a clean file page only if no other process may map
/// it: with a child alive the model keeps it (it keeps no map count of
/// page-cache pages across spaces), after the child's exit it evicts.
#[test]
fn pageout_keeps_file_pages_while_a_child_lives() {
    let p = space(MmConfig::default());
    let mut pc = ThreadCtx::new();
    let args = MmapArgs {
        kind: MapKind::File {
            cached: true,
            offset: 0,
        },
        shared: true,
        ..MmapArgs::anon(BASE, 16 * 4096)
    };
    done(&p, p.mmap(&mut pc, args));
    access(&p, &mut pc, BASE, false);
    let rss = counters(&p, &pc).rss_file_kb;
    assert!(rss > 0);
    let mut cc = ThreadCtx::new();
    let c = fork(&p, &mut pc);
    access(&c, &mut cc, BASE, false);
    done(&p, p.madvise(&mut pc, BASE, 16 * 4096, Advice::PageOut));
    assert_eq!(counters(&p, &pc).rss_file_kb, rss);
    family(&[&p, &c]);
    c.exit(&mut cc).unwrap();
    done(&p, p.madvise(&mut pc, BASE, 16 * 4096, Advice::PageOut));
    assert_eq!(counters(&p, &pc).rss_file_kb, 0);
    drop(c);
    finish(p, &mut pc);
}
