//! Drives the machine access by access on two CPUs sharing one address
//! space, through the order a fault, a copy-on-write, an munmap's shootdown
//! and a PT reclaim must keep. Each check is one that a wrong order would
//! fail: a CPU reading through a stale TLB entry, or a table freed while a
//! CPU could still reach it.

mod common;

use machine::{
    AccessError, AccessKind, Advice, HitLevel, Machine, MachineConfig, MachineError, MmConfig,
    MmapArgs, MmuConfig, SegvCode,
};
use std::sync::Arc;

const PAGE: u64 = 4096;
const MIB: u64 = 1 << 20;
/// Three regions inside one PMD table's span (1 GiB), so that emptying a
/// PTE table never empties the PMD table above it.
const A: u64 = 0x1000_0000;
const B: u64 = 0x2000_0000;
const C: u64 = 0x3000_0000;

fn machine(cpus: usize) -> Machine {
    let mm = MmConfig {
        thp: mm::ThpMode::Never,
        reclaim: mm::Reclaim::On,
        ..MmConfig::default()
    };
    common::machine("zen4", mm, cpus)
}

#[test]
fn fault_cow_shootdown_and_reclaim_on_two_cpus() {
    let m = machine(2);
    let s = m.first_space();
    let mut cpu0 = m.cpu(0, s).unwrap();
    let mut cpu1 = m.cpu(1, s).unwrap();
    let zero = m.space(s).unwrap().zero_page();
    for (va, len) in [(A, 4 * MIB), (B, 2 * MIB), (C, 4 * MIB)] {
        cpu0.mmap(MmapArgs::anon(va, len)).unwrap();
    }

    // A fault: the first read of an anonymous page maps the zero page.
    let r = cpu0.access(A, AccessKind::Read).unwrap();
    assert_eq!(r.faults, 1);
    assert_eq!(r.translation.pa, zero);
    assert_eq!(cpu0.thread_counters().minor_faults, 1);
    let again = cpu0.access(A, AccessKind::Read).unwrap();
    assert_eq!((again.faults, again.translation.hit), (0, HitLevel::L1));

    // CPU 1 reads it too: no fault (the PTE is there), its TLB caches the
    // zero page.
    let r1 = cpu1.access(A, AccessKind::Read).unwrap();
    assert_eq!((r1.faults, r1.translation.pa), (0, zero));
    assert_eq!(
        cpu1.access(A, AccessKind::Read).unwrap().translation.hit,
        HitLevel::L1
    );

    // A copy-on-write: CPU 0 writes the zero page, gets a page of its own,
    // and the shootdown reaches CPU 1, whose next read sees the new page
    // instead of its cached zero page.
    let w = cpu0.access(A, AccessKind::Write).unwrap();
    assert_eq!(w.faults, 1);
    assert_ne!(w.translation.pa, zero);
    assert_eq!(cpu0.thread_counters().minor_faults, 2);
    let r1 = cpu1.access(A, AccessKind::Read).unwrap();
    assert_eq!(r1.faults, 0);
    assert_eq!(r1.translation.pa, w.translation.pa);

    // An munmap on CPU 0 while CPU 1 has the translation cached: one IPI
    // to CPU 1, and CPU 1's next access no longer hits its TLB but faults
    // with SIGSEGV (no VMA).
    cpu0.access(B, AccessKind::Write).unwrap();
    cpu1.access(B, AccessKind::Read).unwrap();
    assert_eq!(
        cpu1.access(B, AccessKind::Read).unwrap().translation.hit,
        HitLevel::L1
    );
    let ipis_before = m.mmu().ipis_received()[1];
    let received_before = cpu1.mmu_cpu().stats().ipis_received;
    cpu0.munmap(B, 2 * MIB).unwrap();
    assert_eq!(m.mmu().ipis_received()[1], ipis_before + 1);
    assert_eq!(
        cpu1.access(B, AccessKind::Read),
        Err(AccessError::Segv {
            va: B,
            code: SegvCode::MapErr
        })
    );
    assert_eq!(cpu1.mmu_cpu().stats().ipis_received, received_before + 1);

    // A PT reclaim: MADV_DONTNEED over a whole 2 MiB PTE table frees the
    // table, but only once CPU 1, which walked through it, has taken the
    // shootdown.
    for va in (C..C + 2 * MIB).step_by(PAGE as usize) {
        cpu0.access(va, AccessKind::Write).unwrap();
    }
    cpu1.access(C + 5 * PAGE, AccessKind::Read).unwrap();
    // B's table, unlinked by the munmap, waited for CPU 1, which has
    // polled since (at its access): it goes now, and counts no more.
    assert_eq!(m.reclaim_retired().unwrap(), 1);
    assert_eq!(m.mmu().retired_tables(), 0);
    let space = m.space(s).unwrap();
    let ptes = space.page_table().tables_at(pt::Level::PTE);
    let live = m.mem().live_tables();
    cpu0.madvise(C, 2 * MIB, Advice::DontNeed).unwrap();
    assert_eq!(m.mmu().retired_tables(), 1, "the PTE table was unlinked");
    // Not freed: CPU 1 has not acknowledged, whoever asks.
    assert_eq!(m.reclaim_retired().unwrap(), 0);
    assert_eq!(cpu0.reclaim_retired().unwrap(), 0);
    assert_eq!(space.page_table().tables_at(pt::Level::PTE), ptes);
    assert_eq!(m.mem().live_tables(), live);
    let snap = m.snapshot(s).unwrap();
    assert_eq!(
        snap.mm.pt_pages.iter().find(|(n, _)| n == "PTE").unwrap().1,
        ptes as i64
    );
    // CPU 1 takes its IPI: now the table goes.
    cpu1.poll();
    assert_eq!(m.reclaim_retired().unwrap(), 1);
    assert_eq!(space.page_table().tables_at(pt::Level::PTE), ptes - 1);
    assert_eq!(m.mem().live_tables(), live - 1);
    assert_eq!(m.mmu().retired_tables(), 0);
    // The range is empty again: CPU 1 faults a zero page in, through a new
    // PTE table.
    let r = cpu1.access(C + 5 * PAGE, AccessKind::Read).unwrap();
    assert_eq!((r.faults, r.translation.pa), (1, zero));
    assert_eq!(space.page_table().tables_at(pt::Level::PTE), ptes);
}

#[test]
fn counters_are_published_per_cpu_and_merged() {
    let m = machine(2);
    let s = m.first_space();
    let mut cpu0 = m.cpu(0, s).unwrap();
    let mut cpu1 = m.cpu(1, s).unwrap();
    cpu0.mmap(MmapArgs::anon(A, 4 * MIB)).unwrap();
    for k in 0..3 {
        cpu0.access(A + k * PAGE, AccessKind::Write).unwrap();
    }
    cpu1.access(A + 10 * PAGE, AccessKind::Write).unwrap();
    // Nothing published yet.
    assert_eq!(m.snapshot(s).unwrap().mm.minor_faults, 0);
    cpu0.publish();
    assert_eq!(m.snapshot(s).unwrap().mm.minor_faults, 3);
    cpu1.publish();
    let snap = m.snapshot(s).unwrap();
    assert_eq!(snap.mm.minor_faults, 4);
    assert_eq!(snap.mmu.accesses, cpu0.mmu_cpu().stats().accesses + 1 + 1);
    // A handle publishes when dropped, and the next handle of that CPU
    // resumes its counters.
    cpu1.access(A + 11 * PAGE, AccessKind::Write).unwrap();
    drop(cpu1);
    assert_eq!(m.snapshot(s).unwrap().mm.minor_faults, 5);
    let cpu1 = m.cpu(1, s).unwrap();
    assert_eq!(cpu1.thread_counters().minor_faults, 2);
}

#[test]
fn cpus_are_claimed_once_and_spaces_get_their_own_asid() {
    let m = machine(2);
    let s = m.first_space();
    let cpu0 = m.cpu(0, s).unwrap();
    assert_eq!(m.cpu(0, s).unwrap_err(), MachineError::CpuBusy(0));
    assert_eq!(
        m.cpu(2, s).unwrap_err(),
        MachineError::NoSuchCpu { cpu: 2, cpus: 2 }
    );
    drop(cpu0);
    assert!(m.cpu(0, s).is_ok(), "a dropped handle frees its CPU");

    // A second address space: its own ASID and tables; a shootdown in one
    // sends no IPI to a CPU running the other.
    let t = m.new_space().unwrap();
    assert_ne!(m.asid(s).unwrap(), m.asid(t).unwrap());
    let mut cpu0 = m.cpu(0, s).unwrap();
    let mut cpu1 = m.cpu(1, t).unwrap();
    cpu0.mmap(MmapArgs::anon(A, 2 * MIB)).unwrap();
    cpu1.mmap(MmapArgs::anon(A, 2 * MIB)).unwrap();
    let p0 = cpu0.access(A, AccessKind::Write).unwrap().translation.pa;
    let p1 = cpu1.access(A, AccessKind::Write).unwrap().translation.pa;
    assert_ne!(p0, p1, "the same address in two spaces maps two frames");
    cpu0.munmap(A, 2 * MIB).unwrap();
    assert_eq!(m.mmu().ipis_received()[1], 0);
    assert_eq!(cpu1.access(A, AccessKind::Read).unwrap().translation.pa, p1);
    // CPU 1 switches to the first space, where A is gone now.
    cpu1.switch_to(s).unwrap();
    assert!(matches!(
        cpu1.access(A, AccessKind::Read),
        Err(AccessError::Segv { .. })
    ));
}

#[test]
fn failed_syscall_is_an_errno_and_a_stuck_machine_is_a_config_error() {
    let m = machine(1);
    let mut cpu = m.cpu(0, m.first_space()).unwrap();
    cpu.mmap(MmapArgs::anon(A, 2 * MIB)).unwrap();
    let e = cpu.mmap(MmapArgs::anon(A, 2 * MIB)).unwrap_err();
    assert_eq!(e, machine::SyscallError::Errno(machine::Errno::Exist));
    drop(cpu);
    let geometry = Arc::new(pt::geometry::preset("x86-64-4l").unwrap());
    let r = Machine::new(MachineConfig {
        mmu: MmuConfig::preset("zen4").unwrap().fit_to(&geometry),
        geometry,
        mm: MmConfig::default(),
        cpus: 0,
    });
    assert!(matches!(r, Err(MachineError::Config(_))));
}

#[test]
fn the_machine_is_shared_and_a_handle_moves_between_threads() {
    fn shared<T: Send + Sync>() {}
    fn sent<T: Send>() {}
    shared::<Machine>();
    sent::<machine::CpuHandle<'static>>();
    // Two real threads run their CPUs at once on one machine.
    let m = machine(2);
    let s = m.first_space();
    m.cpu(0, s)
        .unwrap()
        .mmap(MmapArgs::anon(A, 4 * MIB))
        .unwrap();
    std::thread::scope(|sc| {
        for c in 0..2u64 {
            let m = &m;
            sc.spawn(move || {
                let mut cpu = m.cpu(c as usize, s).unwrap();
                for k in 0..256 {
                    cpu.access(A + (2 * k + c) * PAGE, AccessKind::Write)
                        .unwrap();
                }
                cpu.publish();
            });
        }
    });
    assert_eq!(m.snapshot(s).unwrap().mm.minor_faults, 512);
}
