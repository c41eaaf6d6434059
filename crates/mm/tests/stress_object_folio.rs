//! Stress: MADV_PAGEOUT and MADV_COLD of large page-cache folios mapped by
//! PTEs (the split that unmaps a folio from every VMA, the whole folio
//! dropped or kept) against concurrent read and write faults on the same
//! pages, in a shmem region of 2 MiB folios and a cold file advised
//! hugepage, both split into several VMAs by mprotect so that the folios
//! are mapped by PTEs. At the end, the space's invariants and no leaked
//! frame or table.
#![cfg(not(loom))]

mod common;
use common::*;
use mm::*;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

const P: u64 = 4096;
const SHMEM: u64 = BASE;
const FILE: u64 = BASE + 64 * M;
const LEN: u64 = 8 * M;

fn map(s: &AddressSpace, ctx: &mut ThreadCtx) {
    let shmem = MmapArgs {
        kind: MapKind::Tmpfs(ShmemHuge::Always),
        shared: true,
        ..MmapArgs::anon(SHMEM, LEN)
    };
    done(s, s.mmap(ctx, shmem));
    let file = MmapArgs {
        kind: MapKind::File {
            cached: false,
            offset: 0,
        },
        ..MmapArgs::anon(FILE, LEN)
    };
    done(s, s.mmap(ctx, file));
    done(s, s.madvise(ctx, FILE, LEN, Advice::HugePage));
    for base in [SHMEM, FILE] {
        for va in (base..base + LEN).step_by(P as usize) {
            access(s, ctx, va, false);
        }
        // A read-only page in each folio: its PMD mapping goes, and reads
        // map the folio by PTEs.
        for f in (base..base + LEN).step_by(2 * M as usize) {
            done(s, s.mprotect(ctx, f + M, P, Prot::R));
        }
        for va in (base..base + LEN).step_by(P as usize) {
            access(s, ctx, va, false);
        }
    }
}

#[test]
fn pageout_and_cold_of_pte_mapped_folios_against_faults() {
    let s = Arc::new(space(MmConfig::default()));
    let mut ctx = ThreadCtx::new();
    map(&s, &mut ctx);
    let stop = Arc::new(AtomicBool::new(false));
    let spawn_worker = |seed: u64, advise: bool| {
        let (s, stop) = (s.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut ctx = ThreadCtx::new();
            let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
            let mut n = 0u64;
            while !stop.load(Ordering::Acquire) || n < 2000 {
                let base = if rng.random_bool(0.5) { SHMEM } else { FILE };
                if advise {
                    // Whole folios, parts of one, or ranges across two.
                    let (off, len) = match rng.random_range(0..3) {
                        0 => (rng.random_range(0..LEN / (2 * M)) * 2 * M, 2 * M),
                        1 => (rng.random_range(0..LEN / P - 16) * P, 16 * P),
                        _ => (rng.random_range(0..LEN / (2 * M) - 1) * 2 * M + M, 2 * M),
                    };
                    let advice = if rng.random_bool(0.5) {
                        Advice::PageOut
                    } else {
                        Advice::Cold
                    };
                    // A range that meets a read-only page is still advised;
                    // only a locked one would be refused.
                    done(&s, s.madvise(&mut ctx, base + off, len, advice));
                } else {
                    let va = base + rng.random_range(0..LEN / P) * P;
                    // Writes only where the protection lets them.
                    let write = base == SHMEM && va % (2 * M) != M && rng.random_bool(0.5);
                    access(&s, &mut ctx, va, write);
                }
                n += 1;
            }
            n
        })
    };
    let workers = [
        spawn_worker(1, false),
        spawn_worker(2, false),
        spawn_worker(3, true),
    ];
    std::thread::sleep(std::time::Duration::from_millis(300));
    stop.store(true, Ordering::Release);
    for w in workers {
        assert!(w.join().unwrap() >= 2000);
    }
    s.check_invariants().unwrap();
    let s = Arc::try_unwrap(s).expect("the workers have ended");
    finish(s, &mut ctx);
}
