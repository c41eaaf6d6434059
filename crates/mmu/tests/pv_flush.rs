//! KVM's paravirtual remote TLB flush: a shootdown defers its flush to a
//! target CPU that is not running, sends it no IPI, and the CPU still
//! cannot use a stale translation when it runs again.

mod common;
use common::*;

use mmu::{FlushKind, HitLevel, MmuConfig};

fn page(n: u64) -> u64 {
    BASE + n * 4096
}

fn config(pv: bool) -> MmuConfig {
    MmuConfig {
        pv_tlb_flush: pv,
        host: None,
        ..MmuConfig::preset("zen4").unwrap()
    }
}

/// CPU 1 caches pages 0 and 1, then stops running (or not); CPU 0 moves
/// page 0 to another frame. Returns (IPIs sent, flushes deferred).
fn remap_while_cpu1(pv: bool, running: bool) -> (u32, u32) {
    let pt = table("x86-64-4l");
    map4k(&pt, BASE, 2, rw());
    let m = mmu(config(pv), &pt, 2);
    let mut c0 = m.attach(0, 1);
    let mut c1 = m.attach(1, 1);
    for p in 0..2 {
        assert_eq!(
            c1.access(&pt, page(p), false, true).unwrap().pa,
            DATA + p * 4096
        );
    }
    c1.set_running(running);
    let un = pt.unmap(pt::VirtAddr::new(page(0)), 4096).unwrap();
    let sd = m.shootdown(&mut c0, 1, &un.flush, FlushKind::Leaves);
    un.flush.done();
    let moved = DATA + 100 * 4096;
    pt.map(
        pt::VirtAddr::new(page(0)),
        pt::PhysAddr::new(moved),
        4096,
        4096,
        rw(),
    )
    .unwrap();
    assert_eq!(sd.ipis as usize, sd.targets.len());
    c1.set_running(true);
    // The safety property: running again, CPU 1 sees the new frame.
    assert_eq!(c1.access(&pt, page(0), false, true).unwrap().pa, moved);
    let s1 = c1.stats();
    if sd.deferred > 0 {
        assert_eq!(s1.ipis_received, 0);
        // The host flushed its whole TLB: page 1 walks again.
        let p1 = c1.access(&pt, page(1), false, true).unwrap();
        assert_eq!(p1.pa, DATA + 4096);
        assert_ne!(p1.hit, HitLevel::L1);
        assert_eq!(c0.stats().deferred_flushes, 1);
    } else {
        assert_eq!(s1.ipis_received, 1);
        // Page by page: page 1's entry stays.
        assert_eq!(
            c1.access(&pt, page(1), false, true).unwrap().hit,
            HitLevel::L1
        );
    }
    assert_eq!(m.ipis_received()[1], u64::from(sd.ipis));
    (sd.ipis, sd.deferred)
}

#[test]
fn a_cpu_that_is_not_running_gets_a_deferred_flush_and_no_ipi() {
    assert_eq!(remap_while_cpu1(true, false), (0, 1));
}

#[test]
fn a_running_cpu_still_gets_its_ipi() {
    assert_eq!(remap_while_cpu1(true, true), (1, 0));
}

#[test]
fn without_the_paravirtual_flush_every_target_gets_an_ipi() {
    assert_eq!(remap_while_cpu1(false, false), (1, 0));
}

#[test]
fn a_cpu_waiting_at_a_barrier_is_flushed_before_it_goes_on() {
    // Two threads; CPU 1 waits (not running) while CPU 0 unmaps; after
    // the barrier CPU 1 must fault, not hit its old entry.
    use std::sync::{Arc, Barrier};
    let pt = Arc::new(table("x86-64-4l"));
    map4k(&pt, BASE, 1, rw());
    let m = mmu(config(true), &pt, 2);
    let cached = Arc::new(Barrier::new(2));
    let done = Arc::new(Barrier::new(2));
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut c1 = m.attach(1, 1);
            c1.access(&pt, page(0), false, true).unwrap();
            c1.set_running(false);
            cached.wait();
            done.wait();
            c1.set_running(true);
            let e = c1.access(&pt, page(0), false, true).unwrap_err();
            assert!(matches!(e, mmu::Fault::NotPresent { .. }), "{e}");
            assert_eq!(c1.stats().ipis_received, 0);
        });
        let mut c0 = m.attach(0, 1);
        cached.wait();
        let un = pt.unmap(pt::VirtAddr::new(page(0)), 4096).unwrap();
        let sd = m.shootdown(&mut c0, 1, &un.flush, FlushKind::Leaves);
        un.flush.done();
        assert_eq!((sd.ipis, sd.deferred), (0, 1));
        done.wait();
    });
}
