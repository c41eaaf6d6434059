//! End-to-end accesses through the machine, beside the same composition
//! written out by hand (what the model backend's worker did before the
//! machine existed), for instruction counts under callgrind:
//!
//! ```text
//! cargo build --release -p machine --example machine_icount
//! valgrind --tool=callgrind --toggle-collect='*icount*measured*' \
//!     target/release/examples/machine_icount <scenario> <path> <n>
//! ```
//!
//! `<path>` is `machine` or `direct`; the collected count divided by the
//! accesses made is the cost of one access. Scenarios (zen4 TLBs, x86-64
//! 4-level tables, THP off):
//!
//! - `fault`: `n` pages of a fresh anonymous mapping written once each: a
//!   miss, a walk to an empty entry, the OS model's fault, the retry;
//! - `hit`: `n` reads round robin over 16 written pages (first-level hits);
//! - `walk`: `n` reads over 8192 written pages in a scattered order (more
//!   pages than the TLBs hold: walks from the walk caches).
//!
//! Measured when the machine was introduced (2026-11-24, release build,
//! instructions per access, machine / direct): `fault` (20,000) 1947 / 1895
//! (+2.7%), `hit` (200,000) 58 / 79, `walk` (20,000) 743 / 773.

use std::hint::black_box;
use std::sync::Arc;

use machine::{AccessKind, CpuHandle, Machine, MachineConfig, MmConfig, MmapArgs, MmuConfig};
use mm::{AddressSpace, FaultAccess, FaultResult, ThreadCtx};
use mmu::{Cpu, FlushKind, Mmu};

const PAGE: u64 = 4096;
const BASE: u64 = 0x10_0000_0000;

fn config() -> MachineConfig {
    let geometry = Arc::new(pt::geometry::preset("x86-64-4l").unwrap());
    MachineConfig {
        mmu: MmuConfig::preset("zen4").unwrap().fit_to(&geometry),
        geometry,
        mm: MmConfig {
            thp: mm::ThpMode::Never,
            ..MmConfig::default()
        },
        cpus: 1,
    }
}

/// The accesses to count, through the machine.
#[inline(never)]
fn measured_machine(cpu: &mut CpuHandle<'_>, vas: &[u64], kind: AccessKind) -> u64 {
    let mut sum = 0u64;
    for &va in vas {
        let a = cpu.access(black_box(va), kind).unwrap();
        sum = sum.wrapping_add(a.translation.pa);
    }
    sum
}

/// The hand-written composition the machine replaced.
struct Direct {
    mmu: Arc<Mmu>,
    cpu: Cpu,
    space: AddressSpace,
    ctx: ThreadCtx,
}

impl Direct {
    #[inline]
    fn access(&mut self, va: u64, write: bool) -> u64 {
        let access = if write {
            FaultAccess::WRITE
        } else {
            FaultAccess::READ
        };
        for _ in 0..64 {
            match self.cpu.access(self.space.page_table(), va, write, true) {
                Ok(a) => return a.pa,
                Err(_) => match self.space.fault(&mut self.ctx, va, access) {
                    FaultResult::Handled { deferred, .. } => self.complete(deferred),
                    r => panic!("{r:?}"),
                },
            }
        }
        panic!("stuck at {va:#x}")
    }

    fn complete(&mut self, mut d: mm::Deferred) {
        if d.is_empty() {
            return;
        }
        let pt = self.space.page_table();
        let (flush, tables_too) = d.take_flush();
        if !flush.is_empty() {
            let kind = if tables_too {
                FlushKind::LeavesAndTables
            } else {
                FlushKind::Leaves
            };
            let _ = self.mmu.shootdown(&mut self.cpu, 1, &flush, kind);
        }
        flush.done();
        self.cpu.poll();
        let tables = std::mem::take(&mut d.tables);
        self.mmu.retire_tables(pt, tables);
        d.complete(&self.space).unwrap();
        self.mmu.reclaim_retired(pt).unwrap();
    }
}

/// The accesses to count, by hand.
#[inline(never)]
fn measured_direct(d: &mut Direct, vas: &[u64], write: bool) -> u64 {
    let mut sum = 0u64;
    for &va in vas {
        sum = sum.wrapping_add(d.access(black_box(va), write));
    }
    sum
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let scenario = args.get(1).map_or("fault", String::as_str);
    let path = args.get(2).map_or("machine", String::as_str);
    let n: usize = args.get(3).map_or(100_000, |s| s.parse().unwrap());
    let (pages, vas, write): (u64, Vec<u64>, bool) = match scenario {
        "fault" => (
            n as u64,
            (0..n as u64).map(|i| BASE + i * PAGE).collect(),
            true,
        ),
        "hit" => (
            16,
            (0..n as u64).map(|i| BASE + (i % 16) * PAGE + 64).collect(),
            false,
        ),
        "walk" => (
            8192,
            (0..n as u64)
                .map(|i| BASE + (i.wrapping_mul(2_654_435_761) % 8192) * PAGE)
                .collect(),
            false,
        ),
        s => panic!("unknown scenario {s}"),
    };
    let len = pages * PAGE;
    // The warm-up writes every page first, except for `fault`.
    let warm: Vec<u64> = if scenario == "fault" {
        Vec::new()
    } else {
        (0..pages).map(|i| BASE + i * PAGE).collect()
    };
    let sum = if path == "machine" {
        let m = Machine::new(config()).unwrap();
        let mut cpu = m.cpu(0, m.first_space()).unwrap();
        cpu.mmap(MmapArgs::anon(BASE, len)).unwrap();
        warm_up(&mut cpu, &warm);
        let kind = if write {
            AccessKind::Write
        } else {
            AccessKind::Read
        };
        measured_machine(&mut cpu, &vas, kind)
    } else {
        let cfg = config();
        let mmu = Mmu::new(cfg.mmu.clone(), &cfg.geometry, 1).unwrap();
        let space = AddressSpace::new(cfg.geometry.clone(), cfg.mm.clone()).unwrap();
        let flusher = mmu.clone();
        space.set_table_flusher(Box::new(move |g| {
            let _ = flusher.shootdown_from(g.cpu, 1, g.flush, FlushKind::LeavesAndTables);
            flusher.retire_tables(g.pt, g.tables);
        }));
        let mut ctx = ThreadCtx::new();
        ctx.cpu = Some(0);
        let d = space.mmap(&mut ctx, MmapArgs::anon(BASE, len)).unwrap();
        let mut direct = Direct {
            cpu: mmu.attach(0, 1),
            mmu,
            space,
            ctx,
        };
        direct.complete(d);
        for &va in &warm {
            direct.access(va, true);
        }
        measured_direct(&mut direct, &vas, write)
    };
    println!(
        "{scenario} {path}: {} accesses, checksum {sum:#x}",
        vas.len()
    );
}

/// Warm-up writes (not counted: the name lacks the toggle's pattern).
fn warm_up(cpu: &mut CpuHandle<'_>, vas: &[u64]) {
    for &va in vas {
        cpu.access(va, AccessKind::Write).unwrap();
    }
}
