//! Accessed and dirty bits as each architecture sets them; nested walks.

mod common;
use common::*;

use mmu::{HitLevel, MmuConfig, NestedFault, NestedWalker};
use pt::entry::{riscv, x86};
use pt::{PageTable, PhysAddr, VirtAddr};

#[test]
fn x86_sets_accessed_on_every_level_and_dirty_on_the_leaf() {
    let pt = table("x86-64-4l");
    map4k(&pt, BASE, 1, rw());
    let t = pt.translate(VirtAddr::new(BASE)).unwrap();
    let pas: Vec<u64> = t.entry_pas().iter().map(|pa| pa.get()).collect();
    // Clear A in the PMD entry (Linux writes table entries with A set) and
    // check the leaf starts clean.
    pt.mem().write(pas[2], pt.mem().read(pas[2]) & !x86::A);
    assert_eq!(words(&pt, BASE)[3] & (x86::A | x86::D), 0);

    let m = mmu(MmuConfig::preset("zen4").unwrap(), &pt, 1);
    let mut cpu = m.attach(0, 1);
    cpu.access(&pt, BASE, false, true).unwrap();
    let w = words(&pt, BASE);
    assert!(
        w.iter().all(|&x| x & x86::A != 0),
        "A on all four levels: {w:x?}"
    );
    assert_eq!(w[3] & x86::D, 0, "a read leaves D clear");
    assert_eq!(
        cpu.stats().ad_writes,
        2,
        "the PMD entry's A and the leaf's A"
    );

    // A write that hits the clean TLB entry walks again to set D.
    let a = cpu.access(&pt, BASE, true, true).unwrap();
    assert_eq!(
        (a.hit, a.walk_refs),
        (HitLevel::L1, 1),
        "the PDE cache shortens the assist"
    );
    assert_ne!(words(&pt, BASE)[3] & x86::D, 0);
    assert_eq!((cpu.stats().dirty_assists, cpu.stats().walks), (1, 2));
    // Now the entry knows the page is dirty: a plain hit.
    let b = cpu.access(&pt, BASE, true, true).unwrap();
    assert_eq!((b.hit, b.walk_refs), (HitLevel::L1, 0));
    assert_eq!(cpu.stats().walks, 2);
}

#[test]
fn riscv_sets_accessed_and_dirty_in_leaves_only() {
    let pt = table("riscv-sv48");
    map4k(&pt, BASE >> 4, 1, rw());
    let va = BASE >> 4;
    let before = words(&pt, va);
    let m = mmu(MmuConfig::preset("none").unwrap(), &pt, 1);
    let mut cpu = m.attach(0, 1);
    cpu.access(&pt, va, false, true).unwrap();
    let after = words(&pt, va);
    assert_eq!(
        &after[..3],
        &before[..3],
        "pointer PTEs keep A, D, U zero (reserved)"
    );
    assert_eq!(after[3] & (riscv::A | riscv::D), riscv::A);
    cpu.access(&pt, va, true, true).unwrap();
    assert_eq!(
        words(&pt, va)[3] & (riscv::A | riscv::D),
        riscv::A | riscv::D
    );
    assert_eq!(cpu.stats().ad_writes, 2);
}

#[test]
fn a_software_page_gets_its_bits_in_the_hardware_word_used() {
    // riscv-sv39-64k: a 64 KiB page is 16 NAPOT words; the hardware sets A
    // in the one it read (the OS must OR the group, as Linux's contpte does).
    let pt = table("riscv-sv39-64k");
    let va = BASE >> 8;
    pt.map(
        VirtAddr::new(va),
        PhysAddr::new(DATA),
        64 << 10,
        64 << 10,
        rw(),
    )
    .unwrap();
    let m = mmu(MmuConfig::preset("none").unwrap(), &pt, 1);
    let mut cpu = m.attach(0, 1);
    cpu.access(&pt, va + 0x5000, false, true).unwrap();
    assert_ne!(words(&pt, va + 0x5000)[2] & riscv::A, 0);
    assert_eq!(
        words(&pt, va)[2] & riscv::A,
        0,
        "word 0 of the group is untouched"
    );
}

/// Maps every table page of `guest` and the frame at `data_gpa` in `host`,
/// with pages of `data_page` bytes for the data.
fn host_for(guest: &PageTable, host_geom: &str, data_gpa: u64, data_page: u64) -> PageTable {
    let host = table(host_geom);
    let off = 1u64 << 44; // host-physical = guest-physical + 16 TiB
    for gpa in guest.mem().leaks().tables {
        host.map(
            VirtAddr::new(gpa),
            PhysAddr::new(gpa + off),
            4096,
            4096,
            rw(),
        )
        .unwrap();
    }
    let base = data_gpa & !(data_page - 1);
    host.map(
        VirtAddr::new(base),
        PhysAddr::new(base + off),
        data_page,
        data_page,
        rw(),
    )
    .unwrap();
    host
}

fn nested(g: &str, h: &str) -> mmu::NestedWalk {
    let guest = table(g);
    map4k(&guest, BASE, 1, rw());
    let host = host_for(&guest, h, DATA, 4096);
    NestedWalker::new(&guest, &host)
        .walk(VirtAddr::new(BASE + 0x10), true, true)
        .unwrap()
}

#[test]
fn a_cold_4_on_4_nested_walk_makes_24_references() {
    let w = nested("x86-64-4l", "x86-64-4l");
    assert_eq!(w.refs, 24);
    assert_eq!((w.guest_refs, w.host_walks, w.host_refs), (4, 5, 20));
    assert_eq!(
        (w.gpa, w.hpa),
        (
            PhysAddr::new(DATA + 0x10),
            PhysAddr::new(DATA + (1 << 44) + 0x10)
        )
    );
}

#[test]
fn a_cold_5_on_5_nested_walk_makes_35_references() {
    assert_eq!(nested("x86-64-5l", "x86-64-5l").refs, 35);
    // Mixed depths follow (g + 1)(h + 1) - 1 as well.
    assert_eq!(nested("x86-64-4l", "x86-64-5l").refs, 29);
    assert_eq!(nested("x86-64-5l", "x86-64-4l").refs, 29);
}

#[test]
fn host_huge_pages_shorten_the_last_host_walk() {
    let guest = table("x86-64-4l");
    map4k(&guest, BASE, 1, rw());
    let host = host_for(&guest, "x86-64-4l", DATA, 2 << 20);
    let w = NestedWalker::new(&guest, &host)
        .walk(VirtAddr::new(BASE), false, true)
        .unwrap();
    assert_eq!(w.refs, 23, "the data's host walk stops at the 2 MiB PDE");
    assert_eq!(
        w.page_size, 4096,
        "a combined entry is as small as the smaller page"
    );
}

#[test]
fn nested_faults_say_whose_tables_fault() {
    let guest = table("x86-64-4l");
    map4k(&guest, BASE, 1, rw());
    let host = table("x86-64-4l");
    let w = NestedWalker::new(&guest, &host);
    match w.walk(VirtAddr::new(BASE), false, true) {
        Err(NestedFault::Host { gpa, .. }) => {
            assert_eq!(
                gpa.align_down(0x1000).get(),
                guest.root(),
                "the guest root's entry first"
            )
        }
        other => panic!("{other:?}"),
    }
    let host = host_for(&guest, "x86-64-4l", DATA, 4096);
    let w = NestedWalker::new(&guest, &host);
    assert!(matches!(
        w.walk(VirtAddr::new(BASE + 4096), false, true),
        Err(NestedFault::Guest(mmu::Fault::NotPresent { level: 0, .. }))
    ));
}
