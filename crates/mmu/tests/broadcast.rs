//! Broadcast TLB invalidation (INVLPGB, RAR): a space seen on more than
//! three CPUs at an IPI flush gets a global ASID, its later flushes send
//! no IPI, and every CPU still loses the stale translation.

mod common;
use common::*;

use mmu::{Broadcast, FlushKind, HitLevel, MmuConfig, TlbFlush};

fn config(kind: TlbFlush) -> MmuConfig {
    MmuConfig {
        broadcast: Broadcast { kind, count_max: 8 },
        host: None,
        ..MmuConfig::preset("zen4").unwrap()
    }
}

/// `cpus` CPUs cache the first 20 pages; CPU 0 unmaps `n` pages twice
/// (then remaps them). Returns the two shootdowns' stats, after checking
/// that every CPU sees the remapped frames afterwards.
fn flush_twice(kind: TlbFlush, cpus: usize, n: u64) -> [mmu::ShootdownStats; 2] {
    let pt = table("x86-64-4l");
    let page = |p: u64| BASE + p * 4096;
    pt.map(
        pt::VirtAddr::new(BASE),
        pt::PhysAddr::new(DATA),
        20 * 4096,
        4096,
        rw(),
    )
    .unwrap();
    let m = mmu(config(kind), &pt, cpus);
    let mut c: Vec<_> = (0..cpus).map(|i| m.attach(i, 1)).collect();
    let mut out = Vec::new();
    for round in 0..2u64 {
        for cpu in c.iter_mut() {
            for p in 0..20 {
                cpu.access(&pt, page(p), false, true).unwrap();
            }
        }
        let un = pt.unmap(pt::VirtAddr::new(BASE), n * 4096).unwrap();
        let (first, rest) = c.split_at_mut(1);
        let sd = m.shootdown(&mut first[0], 1, &un.flush, FlushKind::Leaves);
        un.flush.done();
        let moved = DATA + (100 + round * 50) * 4096;
        pt.map(
            pt::VirtAddr::new(BASE),
            pt::PhysAddr::new(moved),
            n * 4096,
            4096,
            rw(),
        )
        .unwrap();
        for cpu in first.iter_mut().chain(rest.iter_mut()) {
            let a = cpu.access(&pt, page(0), false, true).unwrap();
            assert_eq!(a.pa, moved, "CPU {} used a stale entry", cpu.id());
            // Page by page: a page past the range keeps its entry.
            let kept = cpu.access(&pt, page(19), false, true).unwrap();
            assert_eq!(kept.hit, HitLevel::L1);
        }
        out.push(sd);
    }
    [out.remove(0), out.remove(0)]
}

#[test]
fn four_cpus_get_a_global_asid_and_the_next_flush_is_broadcast() {
    let [first, second] = flush_twice(TlbFlush::Invlpgb, 4, 9);
    assert_eq!((first.ipis, first.broadcast), (3, false));
    assert_eq!(second.ipis, 0);
    assert!(second.broadcast);
    assert_eq!(second.broadcast_targets, 3);
    // Nine pages, eight per INVLPGB.
    assert_eq!(second.instructions, 2);
}

#[test]
fn three_cpus_stay_on_ipis() {
    let [first, second] = flush_twice(TlbFlush::Invlpgb, 3, 2);
    assert_eq!(first.ipis, 2);
    assert_eq!((second.ipis, second.broadcast), (2, false));
}

#[test]
fn an_ipi_machine_never_broadcasts() {
    let [_, second] = flush_twice(TlbFlush::Ipi, 8, 2);
    assert_eq!(
        (second.ipis, second.broadcast, second.instructions),
        (7, false, 0)
    );
}

#[test]
fn rar_sends_one_request_handled_by_each_target() {
    let [_, second] = flush_twice(TlbFlush::Rar, 5, 18);
    assert!(second.broadcast);
    assert_eq!((second.ipis, second.instructions), (0, 1));
    assert_eq!(second.broadcast_targets, 4);
}
