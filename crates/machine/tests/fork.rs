//! fork through the machine: the child is a second address space with its
//! own ASID and its own OS counters, and the parent's TLB is flushed for
//! the entries fork write-protected (a stale writable translation would
//! let the parent write into a page the child shares).

mod common;

use machine::{AccessKind, Machine, MmConfig, MmapArgs};

const BASE: u64 = 32 << 40;

fn machine() -> Machine {
    common::machine("zen4", MmConfig::default(), 2)
}

#[test]
fn parent_tlb_is_flushed_and_counters_are_per_space() {
    let m = machine();
    let parent = m.first_space();
    let mut cpu = m.cpu(0, parent).unwrap();
    cpu.mmap(MmapArgs::anon(BASE, 8 * 4096)).unwrap();
    cpu.access(BASE, AccessKind::Write).unwrap();
    cpu.access(BASE + 4096, AccessKind::Write).unwrap();
    // A writable translation is now cached in the parent's TLB.
    assert_eq!(cpu.access(BASE, AccessKind::Write).unwrap().faults, 0);
    let child = cpu.fork().unwrap();
    assert_ne!(m.asid(child).unwrap(), m.asid(parent).unwrap());
    // The write must fault (COW) instead of hitting the stale entry.
    assert_eq!(cpu.access(BASE, AccessKind::Write).unwrap().faults, 1);
    cpu.publish();
    let mut ccpu = m.cpu(1, child).unwrap();
    assert_eq!(ccpu.access(BASE, AccessKind::Write).unwrap().faults, 1);
    ccpu.access(BASE + 4096, AccessKind::Read).unwrap();
    ccpu.publish();
    drop(ccpu);
    let ps = m.snapshot(parent).unwrap();
    let cs = m.snapshot(child).unwrap();
    assert_eq!(ps.mm.minor_faults, 3, "the parent's own faults only");
    assert_eq!(cs.mm.minor_faults, 1, "the child's read hit its copied PTE");
    assert_eq!(cs.mm.rss_anon_kb, 8);
    m.exit_space(child).unwrap();
    drop(cpu);
    m.exit_space(parent).unwrap();
    assert!(m.mem().leaks().is_empty(), "{:?}", m.mem().leaks());
}
