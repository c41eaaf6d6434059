//! Shootdowns across CPUs, IPIs, and deferred freeing of table pages.

mod common;
use common::*;

use mmu::{FlushKind, HitLevel, MmuConfig};
use pt::{PhysAddr, VirtAddr};
use std::sync::{Arc, Barrier};

fn page(n: u64) -> u64 {
    BASE + n * 4096
}

#[test]
fn a_cpu_moves_between_threads_and_the_mmu_is_shared() {
    fn send<T: Send>() {}
    fn sync<T: Send + Sync>() {}
    send::<mmu::Cpu>();
    sync::<mmu::Mmu>();
}

#[test]
fn munmap_in_a_two_thread_address_space_interrupts_only_the_other_cpu() {
    // CPUs 0 and 1 run address space 1 (two threads of one process); CPU 2
    // runs address space 2. CPU 0 unmaps a page.
    let a = Arc::new(table("x86-64-4l"));
    let b = Arc::new(table("x86-64-4l"));
    map4k(&a, BASE, 4, rw());
    map4k(&b, BASE, 4, rw());
    let m = mmu(MmuConfig::preset("zen4").unwrap(), &a, 3);
    let attached = Arc::new(Barrier::new(3));
    let unmapped = Arc::new(Barrier::new(3));
    std::thread::scope(|s| {
        let t0 = s.spawn(|| {
            let mut cpu = m.attach(0, 1);
            cpu.access(&a, page(0), true, true).unwrap();
            attached.wait();
            let un = a.unmap(VirtAddr::new(page(0)), 4096).unwrap();
            let sd = m.shootdown(&mut cpu, 1, &un.flush, FlushKind::Leaves);
            un.flush.done();
            unmapped.wait();
            let e = cpu.access(&a, page(0), false, true).unwrap_err();
            assert!(matches!(e, mmu::Fault::NotPresent { .. }));
            (sd, cpu.take_stats())
        });
        let t1 = s.spawn(|| {
            let mut cpu = m.attach(1, 1);
            let hit = cpu.access(&a, page(0), false, true).unwrap();
            assert_eq!(hit.pa, DATA);
            attached.wait();
            unmapped.wait();
            // The IPI is taken at the next access: the stale entry is gone.
            let e = cpu.access(&a, page(0), false, true).unwrap_err();
            assert!(matches!(e, mmu::Fault::NotPresent { .. }), "{e}");
            cpu.take_stats()
        });
        let t2 = s.spawn(|| {
            let mut cpu = m.attach(2, 2);
            cpu.access(&b, page(0), false, true).unwrap();
            attached.wait();
            unmapped.wait();
            let still = cpu.access(&b, page(0), false, true).unwrap();
            assert_eq!(
                still.hit,
                HitLevel::L1,
                "another address space keeps its entries"
            );
            cpu.take_stats()
        });
        let (sd, s0) = t0.join().unwrap();
        let s1 = t1.join().unwrap();
        let s2 = t2.join().unwrap();
        assert_eq!(sd.targets, vec![1]);
        assert_eq!(sd.ipis, 1);
        assert!(!sd.full_flush);
        assert_eq!(sd.local_flushed, 2, "the initiator's L1 and L2 entries");
        assert_eq!((s0.ipis, s0.shootdowns, s0.ipis_received), (1, 1, 0));
        assert_eq!((s1.ipis_received, s1.flushed_entries), (1, 2));
        assert_eq!((s2.ipis_received, s2.flushed_entries), (0, 0));
    });
    assert_eq!(m.ipis_received(), vec![0, 1, 0]);
}

#[test]
fn the_single_page_ceiling_is_33_pages() {
    for (pages, full) in [(33, false), (34, true)] {
        let pt = table("x86-64-4l");
        map4k(&pt, BASE, 64, rw());
        let m = mmu(MmuConfig::preset("icelake").unwrap(), &pt, 2);
        let mut c0 = m.attach(0, 1);
        let mut c1 = m.attach(1, 1);
        for p in 0..64 {
            c1.access(&pt, page(p), false, true).unwrap();
        }
        let un = pt.unmap(VirtAddr::new(page(0)), pages * 4096).unwrap();
        let sd = m.shootdown(&mut c0, 1, &un.flush, FlushKind::Leaves);
        un.flush.done();
        assert_eq!((sd.pages, sd.full_flush, sd.ipis), (pages, full, 1));
        c1.poll();
        let s = c1.stats();
        if full {
            assert_eq!((s.full_flushes, s.page_invalidations), (1, 0));
            assert_eq!(c1.tlb_occupancy().1, 0, "everything of ASID 1 went");
        } else {
            assert_eq!((s.full_flushes, s.page_invalidations), (0, 33));
            // 64 pages in the 2048-entry STLB, 33 of them invalidated.
            assert_eq!(c1.tlb_occupancy().1, 31);
        }
    }
}

#[test]
fn without_a_shootdown_a_stale_entry_still_translates() {
    // What the shootdown is for: the hardware does not see unmaps by itself.
    let pt = table("x86-64-4l");
    map4k(&pt, BASE, 1, rw());
    let m = mmu(MmuConfig::preset("zen4").unwrap(), &pt, 1);
    let mut cpu = m.attach(0, 1);
    cpu.access(&pt, BASE, false, true).unwrap();
    let un = pt.unmap(VirtAddr::new(BASE), 4096).unwrap();
    let stale = cpu.access(&pt, BASE, false, true).unwrap();
    assert_eq!((stale.hit, stale.pa), (HitLevel::L1, DATA));
    m.shootdown(&mut cpu, 1, &un.flush, FlushKind::Leaves);
    un.flush.done();
    assert!(cpu.access(&pt, BASE, false, true).is_err());
}

#[test]
fn a_cpu_away_during_a_shootdown_flushes_when_it_returns() {
    let pt = table("x86-64-4l");
    map4k(&pt, BASE, 2, rw());
    let m = mmu(MmuConfig::preset("zen4").unwrap(), &pt, 2);
    let mut c0 = m.attach(0, 1);
    let mut c1 = m.attach(1, 1);
    c1.access(&pt, page(0), false, true).unwrap();
    c1.access(&pt, page(1), false, true).unwrap();
    c1.detach();
    // Nothing happened meanwhile: the entries survive the detach.
    let mut c1 = m.attach(1, 1);
    assert_eq!(
        c1.access(&pt, page(1), false, true).unwrap().hit,
        HitLevel::L1
    );
    c1.detach();
    let un = pt.unmap(VirtAddr::new(page(0)), 4096).unwrap();
    let sd = m.shootdown(&mut c0, 1, &un.flush, FlushKind::Leaves);
    un.flush.done();
    assert_eq!(sd.ipis, 0, "CPU 1 is not running the address space");
    let mut c1 = m.attach(1, 1);
    assert!(c1.access(&pt, page(0), false, true).is_err());
    assert_eq!(
        c1.access(&pt, page(1), false, true).unwrap().hit,
        HitLevel::Walk,
        "the whole ASID was flushed on return"
    );
    assert_eq!(m.ipis_received(), vec![0, 0]);
}

#[test]
fn tables_are_freed_only_after_every_cpu_has_flushed() {
    let pt = table("x86-64-4l");
    map4k(&pt, BASE, 4, rw());
    let m = mmu(MmuConfig::preset("icelake").unwrap(), &pt, 3);
    let mut c0 = m.attach(0, 1);
    let mut c1 = m.attach(1, 1);
    let c2 = m.attach(2, 1);
    c2.detach(); // a CPU that left counts as acknowledged
    c1.access(&pt, page(0), false, true).unwrap();
    assert_eq!(
        c1.pwc_occupancy(1),
        1,
        "CPU 1 caches the PTE table's address"
    );
    let live = pt.mem().live_tables();

    let un = pt.unmap(VirtAddr::new(BASE), 4 * 4096).unwrap();
    let freed = pt.free_empty(VirtAddr::new(BASE), 2 << 20).unwrap();
    assert_eq!(freed.tables.len(), 3, "the PTE, PMD and PUD tables emptied");
    let mut flush = un.flush.clone();
    flush.ranges.extend(freed.flush.ranges.iter().copied());
    un.flush.done();
    let sd = m.shootdown(&mut c0, 1, &flush, FlushKind::LeavesAndTables);
    flush.done();
    assert_eq!(sd.targets, vec![1]);
    m.retire_tables(&pt, freed);
    assert_eq!(
        m.reclaim_retired(&pt).unwrap(),
        0,
        "CPU 1 may still walk through them"
    );
    assert_eq!(pt.mem().live_tables(), live);
    c1.poll();
    assert_eq!(c1.pwc_occupancy(1), 0);
    assert_eq!(m.reclaim_retired(&pt).unwrap(), 3);
    assert_eq!(pt.mem().live_tables(), live - 3);
    assert_eq!(m.retired_tables(), 0);
}

#[test]
fn leaf_only_flushes_keep_walk_caches_except_on_x86() {
    for (geom, kept) in [("riscv-sv48", 1), ("x86-64-4l", 0)] {
        let pt = table(geom);
        let va = BASE >> 4;
        pt.map(VirtAddr::new(va), PhysAddr::new(DATA), 2 * 4096, 4096, rw())
            .unwrap();
        let m = mmu(MmuConfig::preset("icelake").unwrap(), &pt, 2);
        let mut c0 = m.attach(0, 1);
        let mut c1 = m.attach(1, 1);
        c1.access(&pt, va, false, true).unwrap();
        let f = pt
            .protect(VirtAddr::new(va + 4096), 4096, pt::Perms::USER_R)
            .unwrap();
        m.shootdown(&mut c0, 1, &f, FlushKind::Leaves);
        f.done();
        c1.poll();
        assert_eq!(c1.pwc_occupancy(1), kept, "{geom}");
    }
}

#[test]
fn concurrent_remaps_never_yield_a_translation_that_was_never_mapped() {
    // One thread remaps a page between two frames with a shootdown each
    // time; another reads it in a loop. Every successful read must see one
    // of the two frames, and after the last shootdown, the last one.
    let pt = Arc::new(table("x86-64-4l"));
    map4k(&pt, BASE, 1, rw());
    let m = mmu(MmuConfig::preset("zen4").unwrap(), &pt, 2);
    let start = Barrier::new(2);
    let done = Barrier::new(2);
    let frames = [DATA, DATA + (1 << 30)];
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut cpu = m.attach(0, 1);
            start.wait();
            for i in 0..2000 {
                let un = pt.unmap(VirtAddr::new(BASE), 4096).unwrap();
                pt.map(
                    VirtAddr::new(BASE),
                    PhysAddr::new(frames[(i + 1) % 2]),
                    4096,
                    4096,
                    rw(),
                )
                .unwrap();
                m.shootdown(&mut cpu, 1, &un.flush, FlushKind::Leaves);
                un.flush.done();
            }
            done.wait();
        });
        s.spawn(|| {
            let mut cpu = m.attach(1, 1);
            start.wait();
            for _ in 0..20000 {
                if let Ok(a) = cpu.access(&pt, BASE, false, true) {
                    assert!(frames.contains(&a.pa), "{:#x}", a.pa);
                }
            }
            done.wait();
            let a = cpu.access(&pt, BASE, false, true).unwrap();
            assert_eq!(a.pa, frames[2000 % 2]);
        });
    });
    let r = m.ipis_received();
    assert_eq!(r[0], 0);
    assert!(r[1] <= 2000);
}

/// The contract behind the ebizzy failure on `arm64-64k-48`: a walk-cache
/// entry for a table that munmap unlinked (`free_pgtables`) keeps leading
/// walks into that table until the shootdown reaches the CPU, however often
/// the access faults. Arm ARM (DDI 0487, TLB maintenance): table
/// descriptors a walk cached stay in use until a TLBI that covers them
/// (by VA, not last-level only, or by ASID) removes them; the rule that a
/// TLB holds no translation that faulted concerns the invalid descriptor,
/// not the valid table descriptors above it, so a fault removes nothing
/// here. The OS must therefore not let a new mapping in the span of
/// unlinked tables be used before their shootdown: Linux holds the mmap
/// lock from free_pgtables to tlb_finish_mmu (mm/vma.c, `vms_clear_ptes`).
#[test]
fn a_walk_cache_keeps_an_unlinked_table_until_the_shootdown_despite_faults() {
    const K64: u64 = 64 << 10;
    let pt = table("arm64-64k-48");
    let other = BASE + 0x30_0000; // another thread's chunk, in the same 512 MiB table
    let mine = BASE + 0x8_0000;
    pt.map(VirtAddr::new(other), PhysAddr::new(DATA), K64, K64, rw())
        .unwrap();
    let m = mmu(MmuConfig::preset("icelake").unwrap(), &pt, 2);
    let mut c0 = m.attach(0, 1);
    let mut c1 = m.attach(1, 1);
    c1.access(&pt, other, false, true).unwrap();
    assert_eq!(
        c1.pwc_occupancy(1),
        1,
        "CPU 1 caches the leaf table's address"
    );

    // CPU 0's munmap: the chunk goes, and with it every table above it.
    let un = pt.unmap(VirtAddr::new(other), K64).unwrap();
    let freed = pt.free_empty(VirtAddr::new(BASE), 512 << 20).unwrap();
    assert_eq!(freed.tables.len(), 2, "the leaf table and the one above it");
    // Before CPU 0 shoots them down, CPU 1 maps in the same span and faults
    // the page in: new tables, linked where the old ones were.
    pt.map(
        VirtAddr::new(mine),
        PhysAddr::new(DATA + K64),
        K64,
        K64,
        rw(),
    )
    .unwrap();
    assert_eq!(
        pt.translate(VirtAddr::new(mine)).unwrap().pa.get(),
        DATA + K64
    );
    for _ in 0..3 {
        assert!(
            matches!(
                c1.access(&pt, mine, true, true),
                Err(mmu::Fault::NotPresent { level: 0, .. })
            ),
            "the walk starts in the unlinked leaf table the walk cache names"
        );
    }

    let mut flush = un.flush.clone();
    flush.ranges.extend(freed.flush.ranges.iter().copied());
    un.flush.done();
    let sd = m.shootdown(&mut c0, 1, &flush, FlushKind::LeavesAndTables);
    flush.done();
    assert_eq!(sd.targets, vec![1]);
    m.retire_tables(&pt, freed);
    assert_eq!(c1.access(&pt, mine, true, true).unwrap().pa, DATA + K64);
    assert_eq!(m.reclaim_retired(&pt).unwrap(), 2);
}
