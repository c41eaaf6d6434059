//! Stress: the reverse map against concurrent faults. A parent's thread
//! write- and read-faults a shared file mapping and pages out parts of it,
//! while a fork child on another real thread writes the same pages, syncs
//! them (which write-protects them in the parent through the reverse map)
//! and pages them out; a third thread splits and reclaims THPs of a private
//! region in the parent. After every round, the family's invariants; at the
//! end, no leaked frame or table, and every page msync cleaned is read-only
//! in both processes right after the sync.
#![cfg(not(loom))]

mod common;
use common::*;
use mm::*;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

const ROUNDS: usize = 12;
const FILE: u64 = BASE;
const FILE_LEN: u64 = 2 * M;
const ANON: u64 = BASE + 64 * M;
const ANON_LEN: u64 = 8 * M;

fn cfg() -> MmConfig {
    MmConfig {
        thp: ThpMode::Madvise,
        ..MmConfig::default()
    }
}

fn join(s: &Arc<AddressSpace>) {
    let me: Weak<dyn FamilyMember> = Arc::downgrade(s) as _;
    s.join_rmap(me);
}

fn write(s: &AddressSpace, ctx: &mut ThreadCtx, va: u64) {
    access(s, ctx, va, true);
    if s.tracks_writes() {
        if let Ok(t) = s.page_table().translate(pt::VirtAddr::new(va)) {
            s.note_write(t.pa.get());
        }
    }
}

#[test]
fn msync_and_pageout_in_a_child_against_faults_in_the_parent() {
    let p = Arc::new(space(cfg()));
    join(&p);
    let mut ctx = ThreadCtx::new();
    let file = MmapArgs {
        kind: MapKind::File {
            cached: true,
            offset: 0,
        },
        shared: true,
        ..MmapArgs::anon(FILE, FILE_LEN)
    };
    done(&p, p.mmap(&mut ctx, file));
    done(&p, p.mmap(&mut ctx, MmapArgs::anon(ANON, ANON_LEN)));
    done(&p, p.madvise(&mut ctx, ANON, ANON_LEN, Advice::HugePage));
    let stop = Arc::new(AtomicBool::new(false));
    let spawn_worker = |seed: u64, anon: bool| {
        let (p, stop) = (p.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut ctx = ThreadCtx::new();
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
            let mut n = 0u64;
            while !stop.load(Ordering::Acquire) || n < 1000 {
                if anon {
                    let va = ANON + rng.random_range(0..ANON_LEN / 4096 - 64) * 4096;
                    let advice = match rng.random_range(0..8) {
                        0 => Some(Advice::PageOut),
                        1 => Some(Advice::Cold),
                        2 => Some(Advice::Free),
                        _ => None,
                    };
                    match advice {
                        Some(a) => done(&p, p.madvise(&mut ctx, va, 64 * 4096, a)),
                        None => write(&p, &mut ctx, va),
                    }
                } else {
                    let va = FILE + rng.random_range(0..FILE_LEN / 4096 - 16) * 4096;
                    match rng.random_range(0..10) {
                        0 => done(&p, p.madvise(&mut ctx, va, 16 * 4096, Advice::PageOut)),
                        1..=3 => {
                            access(&p, &mut ctx, va, false);
                        }
                        _ => {
                            access(&p, &mut ctx, va, true);
                        }
                    }
                }
                n += 1;
            }
            n
        })
    };
    let workers = [spawn_worker(1, false), spawn_worker(2, true)];
    let mut children = Vec::new();
    for round in 0..ROUNDS {
        let child = Arc::new(p.new_child().unwrap());
        p.fork(&mut ctx, &child)
            .unwrap()
            .complete_without_tlb(&p)
            .unwrap();
        join(&child);
        let c = child.clone();
        let t = std::thread::spawn(move || {
            let mut cc = ThreadCtx::new();
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(100 + round as u64);
            for _ in 0..100 {
                let va = FILE + rng.random_range(0..FILE_LEN / 4096 - 16) * 4096;
                match rng.random_range(0..8) {
                    0 => done(&c, c.msync(&mut cc, va, 16 * 4096)),
                    1 => done(&c, c.madvise(&mut cc, va, 16 * 4096, Advice::PageOut)),
                    _ => {
                        access(&c, &mut cc, va, true);
                    }
                }
            }
            cc
        });
        let mut cc = t.join().unwrap();
        if round % 2 == 0 {
            child.exit(&mut cc).unwrap();
        }
        children.push(child);
    }
    stop.store(true, Ordering::Release);
    for w in workers {
        assert!(w.join().unwrap() >= 1000);
    }
    let mut all: Vec<&AddressSpace> = vec![&p];
    all.extend(children.iter().map(|c| &**c));
    AddressSpace::check_family(&all).unwrap();
    // Quiet now: a sync in a live child leaves every page of the file
    // read-only in the parent.
    let live = children
        .iter()
        .find(|c| !c.vmas().is_empty())
        .expect("odd rounds leave their child alive")
        .clone();
    let mut cc = ThreadCtx::new();
    for i in 0..FILE_LEN / 4096 {
        access(&live, &mut cc, FILE + i * 4096, true);
    }
    done(&live, live.msync(&mut cc, FILE, FILE_LEN));
    for i in 0..FILE_LEN / 4096 {
        if let Ok(t) = p.page_table().translate(pt::VirtAddr::new(FILE + i * 4096)) {
            assert!(
                !t.attrs.perms.write,
                "page {i} still writable in the parent"
            );
        }
    }
    for c in &children {
        c.exit(&mut cc).unwrap();
    }
    AddressSpace::check_family(&all).unwrap();
    drop(all);
    drop(live);
    drop(children);
    let p = Arc::try_unwrap(p).expect("the workers have ended");
    finish(p, &mut ctx);
}
