//! The first-level hit probe ([`machine::CpuHandle::hit`], over
//! [`mmu::Cpu::hit`]) against plain accesses: two machines run the same
//! random program, one asking the probe first and making the access only
//! when it answers `None`, the other making every access; after every step
//! the outcome (a probe hit stands for a clean first-level hit of its size)
//! and every MMU statistic and OS counter must be equal. The ops revisit a
//! few pages often, so that most accesses hit the first level, from the
//! hit cache or from the arrays, with system calls and faults between.

mod common;

use machine::{AccessKind, Advice, HitLevel, Machine, MmConfig, MmapArgs, Prot};
use proptest::prelude::*;

const PAGE: u64 = 4096;
const BASE: u64 = 0x4000_0000;
const PAGES: u64 = 1024;

#[derive(Debug, Clone)]
enum Op {
    /// An access to one of a few hot pages (`hot` < 40) or anywhere.
    Access {
        page: u64,
        write: bool,
    },
    DontNeed {
        page: u64,
        pages: u64,
    },
    Protect {
        page: u64,
        pages: u64,
        write: bool,
    },
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        20 => (0..40u64, any::<bool>()).prop_map(|(p, write)| Op::Access { page: p * 37 % PAGES, write }),
        4 => (0..PAGES, any::<bool>()).prop_map(|(page, write)| Op::Access { page, write }),
        1 => (0..PAGES, 1..64u64).prop_map(|(page, pages)| Op::DontNeed { page, pages }),
        1 => (0..PAGES, 1..64u64, any::<bool>())
            .prop_map(|(page, pages, write)| Op::Protect { page, pages, write }),
    ]
}

fn machine(preset: &str, thp: bool) -> Machine {
    let mm = MmConfig {
        thp: if thp {
            mm::ThpMode::Always
        } else {
            mm::ThpMode::Never
        },
        ..MmConfig::default()
    };
    common::machine(preset, mm, 1)
}

/// Runs `ops`, probing first or not; returns each step's outcome and
/// counters, and how many accesses the probe answered.
fn run(m: &Machine, ops: &[Op], probe: bool) -> (Vec<String>, u64) {
    let s = m.first_space();
    let mut cpu = m.cpu(0, s).unwrap();
    cpu.mmap(MmapArgs::anon(BASE, PAGES * PAGE)).unwrap();
    let range = |page: u64, pages: u64| (BASE + page * PAGE, pages.min(PAGES - page) * PAGE);
    let (mut out, mut probed) = (Vec::new(), 0);
    for op in ops {
        let r = match *op {
            Op::Access { page, write } => {
                let va = BASE + page * PAGE + 8;
                let kind = if write {
                    AccessKind::Write
                } else {
                    AccessKind::Read
                };
                match probe.then(|| cpu.hit(va, kind)).flatten() {
                    Some(shift) => {
                        probed += 1;
                        format!("clean L1 hit of {}", 1u64 << shift)
                    }
                    None => match cpu.access(va, kind) {
                        Ok(o)
                            if o.faults == 0
                                && o.translation.hit == HitLevel::L1
                                && o.translation.walk_refs == 0 =>
                        {
                            format!("clean L1 hit of {}", o.translation.page_size)
                        }
                        r => format!("{r:?}"),
                    },
                }
            }
            Op::DontNeed { page, pages } => {
                let (a, l) = range(page, pages);
                format!("{:?}", cpu.madvise(a, l, Advice::DontNeed))
            }
            Op::Protect { page, pages, write } => {
                let (a, l) = range(page, pages);
                format!(
                    "{:?}",
                    cpu.mprotect(a, l, if write { Prot::RW } else { Prot::R })
                )
            }
        };
        out.push(format!(
            "{op:?} -> {r}\n{:?}\n{:?}",
            cpu.mmu_cpu().stats(),
            cpu.thread_counters()
        ));
    }
    (out, probed)
}

fn check(preset: &str, thp: bool, ops: &[Op]) -> Result<u64, TestCaseError> {
    let (a, probed) = run(&machine(preset, thp), ops, true);
    let (b, _) = run(&machine(preset, thp), ops, false);
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        prop_assert_eq!(x, y, "step {} of {:?}", i, ops);
    }
    Ok(probed)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn the_probe_counts_as_the_access(
        ops in prop::collection::vec(op(), 1..200),
        which in 0usize..5,
    ) {
        let (preset, thp) = [("zen4", false), ("zen4", true), ("icelake", false),
            ("neoverse-n1", true), ("none", false)][which];
        check(preset, thp, &ops)?;
    }
}

/// The probe answers the common case: pages revisited in turn, more of
/// them than the hit cache holds, hit from the hit cache and the arrays.
#[test]
fn revisited_pages_are_answered_by_the_probe() {
    let ops: Vec<Op> = (0..2000u64)
        .map(|i| Op::Access {
            page: (i * 7) % 40 * 3,
            write: i % 3 == 0,
        })
        .collect();
    let probed = check("zen4", false, &ops).unwrap();
    // 40 pages, each first faulted (read, then perhaps a write fault and a
    // dirty walk): the rest are probe hits.
    assert!(probed > 1800, "{probed} of 2000 answered by the probe");
}
