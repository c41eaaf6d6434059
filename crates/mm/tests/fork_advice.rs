//! What a fork's child gets of a range advised MADV_DONTFORK or
//! MADV_WIPEONFORK (Linux `dup_mmap`), and mlock2(MLOCK_ONFAULT) (Linux
//! `apply_vma_lock_flags`, `populate_vma_page_range`).

mod common;
use common::*;
use mm::*;

const N: u64 = 32;
const P: u64 = 4096;

fn written(p: &AddressSpace, pc: &mut ThreadCtx) {
    done(p, p.mmap(pc, MmapArgs::anon(BASE, N * P)));
    for i in 0..N {
        access(p, pc, BASE + i * P, true);
    }
}

fn fork(p: &AddressSpace, pc: &mut ThreadCtx) -> AddressSpace {
    let c = p.new_child().unwrap();
    p.fork(pc, &c).unwrap().complete_without_tlb(p).unwrap();
    c
}

fn mapped(s: &AddressSpace, va: u64) -> bool {
    s.page_table().translate(pt::VirtAddr::new(va)).is_ok()
}

#[test]
fn dontfork_leaves_the_range_out_of_the_child_and_unshared() {
    let p = space(MmConfig::default());
    let mut pc = ThreadCtx::new();
    written(&p, &mut pc);
    done(&p, p.madvise(&mut pc, BASE, N / 2 * P, Advice::DontFork));
    let c = fork(&p, &mut pc);
    let mut cc = ThreadCtx::new();
    // The child has only the second half: the first is no mapping at all.
    assert!(matches!(
        access(&c, &mut cc, BASE, false),
        Some(FaultResult::Segv(_))
    ));
    assert!(mapped(&c, BASE + N / 2 * P));
    assert_eq!(counters(&c, &cc).rss_anon_kb, (N / 2 * 4) as i64);
    c.exit(&mut cc).unwrap();
    // The parent's first half was never shared: writing it faults nothing;
    // the second half faults once per page to reuse it.
    let before = counters(&p, &pc).minor_faults;
    for i in 0..N {
        access(&p, &mut pc, BASE + i * P, true);
    }
    assert_eq!(counters(&p, &pc).minor_faults - before, (N / 2) as i64);
    // MADV_DOFORK gives the whole range to the next child.
    done(&p, p.madvise(&mut pc, BASE, N * P, Advice::DoFork));
    let c = fork(&p, &mut pc);
    let mut cc = ThreadCtx::new();
    assert!(mapped(&c, BASE));
    assert_eq!(counters(&c, &cc).rss_anon_kb, (N * 4) as i64);
    c.exit(&mut cc).unwrap();
    finish(p, &mut pc);
}

#[test]
fn wipeonfork_gives_the_child_an_empty_range() {
    let p = space(MmConfig::default());
    let mut pc = ThreadCtx::new();
    written(&p, &mut pc);
    done(&p, p.madvise(&mut pc, BASE, N * P, Advice::WipeOnFork));
    let c = fork(&p, &mut pc);
    let mut cc = ThreadCtx::new();
    // No page, no table: reads map the zero page, one fault each.
    assert_eq!(counters(&c, &cc).rss_anon_kb, 0);
    assert_eq!(counters(&c, &cc).vmpte_kb, 0);
    for i in 0..N {
        access(&c, &mut cc, BASE + i * P, false);
    }
    let cs = counters(&c, &cc);
    assert_eq!((cs.minor_faults, cs.rss_anon_kb), (N as i64, 0));
    // The flag is inherited: a grandchild gets it empty too.
    access(&c, &mut cc, BASE, true);
    let g = fork(&c, &mut cc);
    let mut gc = ThreadCtx::new();
    assert!(!mapped(&g, BASE));
    g.exit(&mut gc).unwrap();
    c.exit(&mut cc).unwrap();
    // The parent's pages stayed its own: no write faults.
    let before = counters(&p, &pc).minor_faults;
    for i in 0..N {
        access(&p, &mut pc, BASE + i * P, true);
    }
    assert_eq!(counters(&p, &pc).minor_faults, before);
    // Refused on a shared mapping, as Linux refuses it (EINVAL).
    let shm = BASE + (1 << 30);
    done(
        &p,
        p.mmap(
            &mut pc,
            MmapArgs {
                kind: MapKind::Shmem,
                ..MmapArgs::anon(shm, N * P)
            },
        ),
    );
    assert!(matches!(
        p.madvise(&mut pc, shm, N * P, Advice::WipeOnFork),
        Err(Errno::Inval(_))
    ));
    finish(p, &mut pc);
}

#[test]
fn mlock_onfault_locks_without_populating() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    done(&s, s.mmap(&mut ctx, MmapArgs::anon(BASE, N * P)));
    done(&s, s.mlock_onfault(&mut ctx, BASE, N * P));
    assert_eq!(counters(&s, &ctx).minor_faults, 0);
    assert_eq!(counters(&s, &ctx).rss_anon_kb, 0);
    // Locked: the advice Linux refuses on locked memory is refused.
    assert!(matches!(
        s.madvise(&mut ctx, BASE, P, Advice::DontNeed),
        Err(Errno::Inval(_))
    ));
    for i in 0..N / 4 {
        access(&s, &mut ctx, BASE + i * P, true);
    }
    assert_eq!(counters(&s, &ctx).minor_faults, (N / 4) as i64);
    // A plain mlock populates what is still missing.
    done(&s, s.mlock(&mut ctx, BASE, N * P));
    let c = counters(&s, &ctx);
    assert_eq!((c.minor_faults, c.rss_anon_kb), (N as i64, (N * 4) as i64));
    finish(s, &mut ctx);
}

#[test]
fn a_file_mapped_from_an_offset_reads_its_pages_there() {
    let s = space(MmConfig::default());
    let mut ctx = ThreadCtx::new();
    // A cold 3 MiB file mapped from 1 MiB: the miss reads around file page
    // 256, so reading the mapping's first page is a major fault.
    done(
        &s,
        s.mmap(
            &mut ctx,
            MmapArgs {
                kind: MapKind::File {
                    cached: false,
                    offset: 1 << 20,
                },
                ..MmapArgs::anon(BASE, 2 << 20)
            },
        ),
    );
    access(&s, &mut ctx, BASE, false);
    assert_eq!(counters(&s, &ctx).major_faults, 1);
    // A misaligned offset is refused (EINVAL).
    assert!(matches!(
        s.mmap(
            &mut ctx,
            MmapArgs {
                kind: MapKind::File {
                    cached: true,
                    offset: 100,
                },
                ..MmapArgs::anon(BASE + (1 << 30), P)
            },
        ),
        Err(Errno::Inval(_))
    ));
    finish(s, &mut ctx);
}

#[test]
fn remove_punches_a_hole_in_every_process_that_maps_it() {
    use std::sync::{Arc, Weak};
    let p = Arc::new(space(MmConfig::default()));
    let mut pc = ThreadCtx::new();
    p.join_rmap(Arc::downgrade(&p) as Weak<dyn FamilyMember>);
    let shm = MmapArgs {
        kind: MapKind::Shmem,
        shared: true,
        ..MmapArgs::anon(BASE, N * P)
    };
    done(&p, p.mmap(&mut pc, shm));
    for i in 0..N {
        access(&p, &mut pc, BASE + i * P, true);
    }
    let c = Arc::new(p.new_child().unwrap());
    p.fork(&mut pc, &c)
        .unwrap()
        .complete_without_tlb(&p)
        .unwrap();
    c.join_rmap(Arc::downgrade(&c) as Weak<dyn FamilyMember>);
    let mut cc = ThreadCtx::new();
    for i in 0..N {
        access(&c, &mut cc, BASE + i * P, false);
    }
    done(&c, c.madvise(&mut cc, BASE, N / 2 * P, Advice::Remove));
    // Gone from both processes, the other half mapped in both.
    assert!(!mapped(&c, BASE) && !mapped(&p, BASE));
    assert!(mapped(&p, BASE + N / 2 * P));
    assert_eq!(counters(&p, &pc).rss_shmem_kb, (N / 2 * 4) as i64);
    c.exit(&mut cc).unwrap();
    let p = Arc::try_unwrap(p).unwrap_or_else(|_| panic!("the parent is still shared"));
    // The parent's reads of the hole allocate each page again.
    let before = counters(&p, &pc).minor_faults;
    for i in 0..N {
        access(&p, &mut pc, BASE + i * P, false);
    }
    assert_eq!(counters(&p, &pc).minor_faults - before, (N / 2) as i64);
    assert_eq!(counters(&p, &pc).rss_shmem_kb, (N * 4) as i64);
    // Refused on private anonymous memory.
    let anon = BASE + (1 << 30);
    done(&p, p.mmap(&mut pc, MmapArgs::anon(anon, P)));
    assert!(matches!(
        p.madvise(&mut pc, anon, P, Advice::Remove),
        Err(Errno::Inval(_))
    ));
    finish(p, &mut pc);
}
