//! The retry after a handled fault ([`mmu::Cpu::retry_after_fault`], which
//! skips the TLB lookups the fault made sure miss) against the reference
//! that retries with a whole fresh access (`CpuHandle::set_retry_by_lookup`):
//! two machines run the same random program, one each way, and after every
//! step their translations, MMU statistics (TLB hits and misses by size,
//! walks and their references, walk-cache hits by level, A/D writes, fills
//! seen through later hits) and OS counters must be equal.

mod common;

use machine::{AccessKind, Advice, Machine, MmConfig, MmapArgs, Prot};
use proptest::prelude::*;

const PAGE: u64 = 4096;
/// Four PMD spans: room for PTE tables made and emptied, and huge pages.
const BASE: u64 = 0x4000_0000;
const PAGES: u64 = 2048;

#[derive(Debug, Clone)]
enum Op {
    Access {
        page: u64,
        write: bool,
    },
    /// The same page again, right away (a hit, or a second fault).
    Again {
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
    Unmap {
        page: u64,
        pages: u64,
    },
    Map {
        page: u64,
        pages: u64,
    },
    /// A child made and ended: the parent's private pages are left
    /// write-protected (copy-on-write), its TLB flushed.
    Fork,
}

fn op() -> impl Strategy<Value = Op> {
    let page = 0..PAGES;
    let run = 1..600u64;
    prop_oneof![
        12 => (page.clone(), any::<bool>()).prop_map(|(page, write)| Op::Access { page, write }),
        3 => any::<bool>().prop_map(|write| Op::Again { write }),
        1 => (page.clone(), run.clone()).prop_map(|(page, pages)| Op::DontNeed { page, pages }),
        1 => (page.clone(), run.clone(), any::<bool>())
            .prop_map(|(page, pages, write)| Op::Protect { page, pages, write }),
        1 => (page.clone(), run.clone()).prop_map(|(page, pages)| Op::Unmap { page, pages }),
        1 => (page, run).prop_map(|(page, pages)| Op::Map { page, pages }),
        1 => Just(Op::Fork),
    ]
}

fn machine(preset: &str, thp: bool) -> Machine {
    let mm = MmConfig {
        thp: if thp {
            mm::ThpMode::Always
        } else {
            mm::ThpMode::Never
        },
        reclaim: mm::Reclaim::On,
        ..MmConfig::default()
    };
    common::machine(preset, mm, 1)
}

fn kind(write: bool) -> AccessKind {
    if write {
        AccessKind::Write
    } else {
        AccessKind::Read
    }
}

/// Runs `ops` on `m`, retrying by lookup or not; returns what each step
/// showed: its result and the counters after it.
fn run(m: &Machine, ops: &[Op], by_lookup: bool) -> Vec<String> {
    let s = m.first_space();
    let mut cpu = m.cpu(0, s).unwrap();
    cpu.set_retry_by_lookup(by_lookup);
    let mut out = Vec::new();
    cpu.mmap(MmapArgs::anon(BASE, PAGES * PAGE)).unwrap();
    let range = |page: u64, pages: u64| (BASE + page * PAGE, pages.min(PAGES - page) * PAGE);
    let mut last = BASE;
    for op in ops {
        let r = match *op {
            Op::Access { page, write } => {
                last = BASE + page * PAGE + 8;
                format!("{:?}", cpu.access(last, kind(write)))
            }
            Op::Again { write } => format!("{:?}", cpu.access(last, kind(write))),
            Op::DontNeed { page, pages } => {
                let (a, l) = range(page, pages);
                format!("{:?}", cpu.madvise(a, l, Advice::DontNeed))
            }
            Op::Protect { page, pages, write } => {
                let (a, l) = range(page, pages);
                let prot = if write { Prot::RW } else { Prot::R };
                format!("{:?}", cpu.mprotect(a, l, prot))
            }
            Op::Unmap { page, pages } => {
                let (a, l) = range(page, pages);
                format!("{:?}", cpu.munmap(a, l))
            }
            Op::Map { page, pages } => {
                let (a, l) = range(page, pages);
                let mut args = MmapArgs::anon(a, l);
                args.replace = true;
                format!("{:?}", cpu.mmap(args))
            }
            Op::Fork => match cpu.fork() {
                Ok(child) => format!("{:?}", m.exit_space(child).map(|_| ())),
                Err(e) => format!("{e:?}"),
            },
        };
        out.push(format!(
            "{op:?} -> {r}\n{:?}\n{:?}",
            cpu.mmu_cpu().stats(),
            cpu.thread_counters()
        ));
    }
    out
}

fn check(preset: &str, thp: bool, ops: &[Op]) -> Result<(), TestCaseError> {
    let (fast, reference) = (machine(preset, thp), machine(preset, thp));
    let a = run(&fast, ops, false);
    let b = run(&reference, ops, true);
    for (i, (x, y)) in a.iter().zip(&b).enumerate() {
        prop_assert_eq!(x, y, "step {} of {:?}", i, ops);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn retry_counts_as_a_fresh_access_zen4(ops in prop::collection::vec(op(), 1..120)) {
        check("zen4", false, &ops)?;
    }

    #[test]
    fn retry_counts_as_a_fresh_access_zen4_thp(ops in prop::collection::vec(op(), 1..120)) {
        check("zen4", true, &ops)?;
    }

    #[test]
    fn retry_counts_as_a_fresh_access_icelake(ops in prop::collection::vec(op(), 1..120)) {
        check("icelake", false, &ops)?;
    }
}

/// The dense case the retry was made for, counted outright: one write per
/// page, each a fault whose retry walks once from the walk cache and fills
/// both TLB levels, exactly as the reference does.
#[test]
fn dense_writes_count_two_walks_per_fault_either_way() {
    let pages = 4096;
    let ops: Vec<Op> = (0..pages.min(PAGES))
        .map(|page| Op::Access { page, write: true })
        .collect();
    for by_lookup in [false, true] {
        let m = machine("zen4", false);
        let s = m.first_space();
        let mut cpu = m.cpu(0, s).unwrap();
        cpu.set_retry_by_lookup(by_lookup);
        cpu.mmap(MmapArgs::anon(BASE, PAGES * PAGE)).unwrap();
        for op in &ops {
            let Op::Access { page, .. } = op else {
                unreachable!()
            };
            let o = cpu.access(BASE + page * PAGE, AccessKind::Write).unwrap();
            assert_eq!(o.faults, 1);
            assert_eq!(o.translation.hit, machine::HitLevel::Walk);
        }
        let st = cpu.mmu_cpu().stats();
        let n = ops.len() as u64;
        assert_eq!(st.tlb_misses, 2 * n, "by lookup: {by_lookup}");
        assert_eq!(st.walks, 2 * n);
        assert_eq!(st.faults_not_present, n);
        assert_eq!(st.tlb_hits, 0);
    }
    // Each first write ends in the TLB: a second pass hits.
    let m = machine("zen4", false);
    let mut cpu = m.cpu(0, m.first_space()).unwrap();
    cpu.mmap(MmapArgs::anon(BASE, PAGES * PAGE)).unwrap();
    cpu.access(BASE, AccessKind::Write).unwrap();
    let o = cpu.access(BASE, AccessKind::Write).unwrap();
    assert_eq!((o.faults, o.translation.hit), (0, machine::HitLevel::L1));
}
