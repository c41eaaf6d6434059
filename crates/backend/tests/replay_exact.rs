//! The replay's shortcut (accesses that can only hit the first-level TLB
//! counted without translating, runs of them consumed as counts, hits
//! priced as n times one hit) changes nothing it reports: on random traces
//! of several threads, regions and system calls, a replay with it and one
//! translating every access (`ReplayOptions::translate_all`) give every
//! counter equal at every mark, `predicted_ns` and each thread's clock
//! included; so do a trace and its form filtered as `ptlab trace`'s
//! plugin filters it (accesses to the page of the thread's previous access
//! folded into `Hits` records).

use backend::model::{ModelConfig, ModelOptions, Thp};
use backend::replay::{self, ReplayOptions};
use proptest::prelude::*;
use std::path::Path;
use trace::{Header, MapEvent, MapFlags, Prot, Record, RegionKind, TraceWriter};
use workload::result::Run;

fn config(geometry: &str, tlb: &str, thp: Thp) -> ModelConfig {
    ModelConfig::new(&ModelOptions {
        geometry: Some(geometry.into()),
        thp: Some(thp),
        tlb: Some(tlb.into()),
        cpus: Some(1),
        ..ModelOptions::default()
    })
    .unwrap()
}

fn write_trace(path: &Path, records: &[Record]) {
    let header = Header {
        source: "test".into(),
        page_size: 4096,
        va_bits: 48,
        ..Header::default()
    };
    let mut w = TraceWriter::create(path, &header).unwrap();
    for r in records {
        w.push(r).unwrap();
    }
    w.finish().unwrap();
}

/// Every counter of every mark but ptlab's own speed.
fn same_counts(a: &Run, b: &Run) -> Result<(), TestCaseError> {
    prop_assert_eq!(a.marks.len(), b.marks.len());
    for (x, y) in a.marks.iter().zip(&b.marks) {
        prop_assert_eq!(&x.name, &y.name);
        let strip = |m: &workload::result::Mark| {
            let mut c = m.counters.clone();
            c.values.remove(counters::MODEL_WALL_NS.name);
            c
        };
        prop_assert_eq!(strip(x), strip(y), "mark {}", x.name);
    }
    Ok(())
}

const REGIONS: [u64; 3] = [64 << 10, 4 << 20, 1 << 20];

fn maps() -> Vec<Record> {
    REGIONS
        .iter()
        .enumerate()
        .map(|(i, &size)| {
            Record::Map(MapEvent {
                id: i as u32,
                size,
                native: 0x2000_0000_0000 + ((i as u64) << 24),
                kind: RegionKind::Anon,
                // Executable too: the random traces fetch instructions.
                prot: Prot(Prot::READ | Prot::WRITE | Prot::EXEC),
                flags: MapFlags::default(),
                name: format!("r{i}"),
            })
        })
        .collect()
}

/// One step of a random trace.
#[derive(Debug, Clone)]
enum Step {
    /// `n` accesses by `stride` bytes from where the thread's last access
    /// left off, in its last region (a run over one or a few pages).
    Run {
        n: u16,
        stride: u16,
        write: bool,
    },
    /// An access anywhere.
    Jump {
        id: u8,
        offset: u32,
        write: bool,
    },
    Thread(u8),
    /// An instruction fetch anywhere (through the instruction TLB, which
    /// shares the second level with data under Ice Lake and Neoverse N1).
    Fetch {
        id: u8,
        offset: u32,
    },
    /// MADV_DONTNEED (4) or MADV_HUGEPAGE (14) of a part of a region.
    Advise {
        id: u8,
        page: u16,
        pages: u16,
        advice: u8,
    },
    Mark,
}

fn any_step() -> impl Strategy<Value = Step> {
    prop_oneof![
        10 => (1u16..600, prop::sample::select(vec![1u16, 8, 8, 64, 512, 4096]), any::<bool>())
            .prop_map(|(n, stride, write)| Step::Run { n, stride, write }),
        4 => (0u8..3, any::<u32>(), any::<bool>()).prop_map(|(id, offset, write)| Step::Jump { id, offset, write }),
        2 => (0u8..3).prop_map(Step::Thread),
        2 => (0u8..3, any::<u32>()).prop_map(|(id, offset)| Step::Fetch { id, offset }),
        1 => (0u8..3, 0u16..1024, 1u16..600, prop::sample::select(vec![4u8, 14])).prop_map(
            |(id, page, pages, advice)| Step::Advise { id, page, pages, advice }
        ),
        1 => Just(Step::Mark),
    ]
}

/// The records of `steps`: every access inside its region.
fn records(steps: &[Step]) -> Vec<Record> {
    let mut out = maps();
    // Per thread: the region and offset of its last access.
    let mut at = [(0u32, 0u64); 3];
    let mut tid = 0usize;
    for s in steps {
        match *s {
            Step::Run { n, stride, write } => {
                let (id, mut off) = at[tid];
                let size = REGIONS[id as usize];
                for _ in 0..n {
                    out.push(Record::Access {
                        id,
                        offset: off,
                        write,
                    });
                    off = (off + u64::from(stride)) % size;
                }
                at[tid] = (id, off);
            }
            Step::Jump { id, offset, write } => {
                let id = u32::from(id);
                let off = u64::from(offset) % REGIONS[id as usize];
                out.push(Record::Access {
                    id,
                    offset: off,
                    write,
                });
                at[tid] = (id, off);
            }
            Step::Fetch { id, offset } => {
                let id = u32::from(id);
                let offset = u64::from(offset) % REGIONS[id as usize];
                out.push(Record::Fetch { id, offset });
            }
            Step::Thread(t) => {
                tid = usize::from(t);
                out.push(Record::Thread { tid: t.into() });
            }
            Step::Advise {
                id,
                page,
                pages,
                advice,
            } => {
                let size = REGIONS[id as usize];
                let offset = (u64::from(page) << 12) % size;
                let len = (u64::from(pages) << 12).min(size - offset);
                out.push(Record::Advise {
                    id: id.into(),
                    offset,
                    len,
                    advice,
                });
            }
            Step::Mark => out.push(Record::Mark {
                name: format!("m{}", out.len()),
            }),
        }
    }
    out
}

/// `records` as `ptlab trace`'s plugin filters them (docs/trace.md, "The
/// filter"): an access is written when it is not in the 4 KiB page of the
/// thread's previous access, or is the first store to that page after
/// loads; the others are counted into one `Hits` record after the access
/// they follow. A system call starts every thread's filter afresh, and so
/// does a change of thread (the plugin's threads interleave only at block
/// boundaries, which end a hit run).
fn filtered(records: &[Record]) -> Vec<Record> {
    let mut out = Vec::new();
    // The current thread's filter: the page (region, 4 KiB page) of its
    // previous access, and whether a store to it was written.
    let mut page: Option<(u32, u64)> = None;
    let mut stored = false;
    let mut hits = 0u64;
    let flush = |out: &mut Vec<Record>, hits: &mut u64| {
        if *hits > 0 {
            out.push(Record::Hits { count: *hits });
            *hits = 0;
        }
    };
    for r in records {
        match r {
            Record::Access { id, offset, write } => {
                let p = (*id, offset >> 12);
                if page == Some(p) && (!write || stored) {
                    hits += 1;
                    continue;
                }
                stored = if page == Some(p) { true } else { *write };
                page = Some(p);
                flush(&mut out, &mut hits);
                out.push(r.clone());
            }
            Record::Mark { .. } => {
                flush(&mut out, &mut hits);
                out.push(r.clone());
            }
            _ => {
                flush(&mut out, &mut hits);
                page = None;
                out.push(r.clone());
            }
        }
    }
    flush(&mut out, &mut hits);
    out
}

fn replay(path: &Path, cfg: &ModelConfig, translate_all: bool) -> Run {
    let opts = ReplayOptions {
        translate_all,
        ..ReplayOptions::default()
    };
    replay::replay(path, cfg, &opts).unwrap().run
}

const CONFIGS: [(&str, &str, Thp); 6] = [
    ("x86-64-4l", "zen4", Thp::Never),
    ("x86-64-4l", "icelake", Thp::Always),
    ("x86-64-5l", "zen4", Thp::Madvise),
    ("riscv-sv39-64k", "neoverse-n1", Thp::Never),
    // No first-level TLB for some or all sizes: the shortcut must not count
    // a hit there.
    ("x86-64-4l", "neoverse-n1", Thp::Always),
    ("x86-64-4l", "none", Thp::Never),
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn the_shortcut_changes_no_counter_and_no_predicted_time(
        steps in prop::collection::vec(any_step(), 1..60),
        which in 0usize..CONFIGS.len(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ptl");
        write_trace(&path, &records(&steps));
        let (g, tlb, thp) = CONFIGS[which];
        let cfg = config(g, tlb, thp);
        let fast = replay(&path, &cfg, false);
        let slow = replay(&path, &cfg, true);
        same_counts(&fast, &slow)?;
    }

    #[test]
    fn a_filtered_trace_replays_as_the_unfiltered_one(
        steps in prop::collection::vec(any_step(), 1..60),
        which in 0usize..3,
    ) {
        let dir = tempfile::tempdir().unwrap();
        let (all, some) = (dir.path().join("all.ptl"), dir.path().join("some.ptl"));
        let recs = records(&steps);
        write_trace(&all, &recs);
        write_trace(&some, &filtered(&recs));
        // The filter's exactness holds where the first level holds the
        // page of every access (docs/trace.md).
        let (g, tlb, thp) = CONFIGS[which];
        let cfg = config(g, tlb, thp);
        same_counts(&replay(&all, &cfg, false), &replay(&some, &cfg, false))?;
    }
}

/// Long runs in one page cross chunk boundaries, and the shortcut's count
/// is the bulk of the accesses.
#[test]
fn a_long_sequential_trace_counts_as_translating_each_access() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("seq.ptl");
    let mut recs = maps();
    for pass in 0..3 {
        for i in 0..(REGIONS[1] / 8) {
            recs.push(Record::Access {
                id: 1,
                offset: i * 8,
                write: pass == 0,
            });
        }
        recs.push(Record::Mark {
            name: format!("pass{pass}"),
        });
    }
    write_trace(&path, &recs);
    for (g, tlb, thp) in CONFIGS {
        let cfg = config(g, tlb, thp);
        let fast = replay(&path, &cfg, false);
        let slow = replay(&path, &cfg, true);
        same_counts(&fast, &slow).unwrap();
        let c = &fast.marks[2].counters;
        // A faulting access is counted again when it is retried.
        let faults = c.get("minor_faults").unwrap();
        assert_eq!(
            c.get("accesses").unwrap() - faults,
            3 * (REGIONS[1] / 8) as i64
        );
        if tlb != "none" {
            assert!(
                c.get("tlb_l1_hits").unwrap() > 3 * (REGIONS[1] / 8 - REGIONS[1] / 4096) as i64 - 1
            );
        } else {
            assert_eq!(c.get("tlb_l1_hits"), Some(0));
        }
    }
}

/// Accesses that change page at every record, over more pages than the
/// MMU's hit cache holds and fewer than its first level (as `sort`'s
/// trace does): most are answered by the first-level hit probe, from the
/// hit cache or the first-level arrays; every counter and the predicted
/// time equal those of translating each the plain way.
#[test]
fn page_changing_accesses_count_as_plain_translations() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pages.ptl");
    let mut recs = maps();
    for i in 0..20_000u64 {
        let id = (i % 3) as u32;
        let pages = REGIONS[id as usize] / 4096;
        // 40 pages of each region, visited in a scrambled order.
        let page = (i * 7 + i / 5) % 40 * 13 % pages;
        recs.push(Record::Access {
            id,
            offset: page * 4096 + (i % 512) * 8,
            write: i % 5 == 0,
        });
        if i % 5000 == 4999 {
            recs.push(Record::Mark {
                name: format!("m{i}"),
            });
        }
    }
    write_trace(&path, &recs);
    for (g, tlb, thp) in CONFIGS {
        let cfg = config(g, tlb, thp);
        same_counts(&replay(&path, &cfg, false), &replay(&path, &cfg, true)).unwrap();
    }
}
