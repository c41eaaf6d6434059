//! Replaying a trace on the model: the same events as a workload give the
//! same counters as running it; a trace laid out anew under a smaller
//! address space still replays; filtered hits are counted; what the model
//! refuses is reported with the record's index; a replay predicts time on
//! a clock per trace thread, the same as running the workload.

use backend::model::{self, Executor, ModelConfig, ModelOptions, Thp};
use backend::replay::{self, from_workload, LayoutMode, ReplayError, ReplayOptions};
use std::path::Path;
use trace::{Header, Record, TraceWriter};
use workload::result::Run;

fn config(geometry: &str, thp: Thp) -> ModelConfig {
    ModelConfig::new(&ModelOptions {
        geometry: Some(geometry.into()),
        thp: Some(thp),
        tlb: Some("zen4".into()),
        cpus: Some(1),
        // The virtual-time executor: the replay's predicted time is
        // compared with the run's, counter for counter.
        executor: Some(Executor::Virtual),
        ..ModelOptions::default()
    })
    .unwrap()
}

const WORK: &str = r#"
name = "replayed"
description = "sparse and dense writes, random reads, then mprotect, DONTNEED and munmap"

[[thread]]
op = [
  { mmap = "a", size = "16MiB" },
  { mmap = "b", size = "64MiB", noreserve = true },
  { touch = "a", access = "write" },
  { touch = "b", access = "write", stride = "2MiB" },
  { mark = "written" },
  { touch = "a", access = "read", pattern = "random", count = 20000, seed = 7 },
  { madvise = "a", advice = "hugepage" },
  { touch = "b", access = "read", stride = "64KiB" },
  { touch = "a", offset = "1MiB", len = "8KiB", access = "read", count = 300 },
  { touch = "a", offset = "1MiB", len = "4KiB", access = "write", count = 50 },
  { touch = "a", offset = "3MiB", len = "4KiB", access = "read", count = 40 },
  { touch = "b", offset = "64KiB", len = "4KiB", access = "read", count = 5 },
  { touch = "b", offset = "64KiB", len = "4KiB", access = "write", count = 5 },
  { mark = "read" },
  { mprotect = "a", offset = "4MiB", len = "4MiB", prot = "r" },
  { madvise = "a", offset = "8MiB", len = "8MiB", advice = "dontneed" },
  { munmap = "b" },
  { mark = "freed" },
]
"#;

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

/// Every counter of every mark but ptlab's own speed (`predicted_ns`, its
/// ends and every CPU's clock included).
fn same_counts(a: &Run, b: &Run) {
    assert_eq!(a.marks.len(), b.marks.len());
    for (x, y) in a.marks.iter().zip(&b.marks) {
        assert_eq!(x.name, y.name);
        let strip = |m: &workload::result::Mark| {
            let mut c = m.counters.clone();
            c.values.remove(counters::MODEL_WALL_NS.name);
            c
        };
        assert_eq!(strip(x), strip(y), "mark {}", x.name);
    }
}

#[test]
fn a_workload_replayed_as_a_trace_counts_as_the_workload() {
    let dir = tempfile::tempdir().unwrap();
    for (geometry, va_bits, thp) in [
        ("x86-64-4l", 48, Thp::Never),
        ("x86-64-4l", 48, Thp::Madvise),
        ("x86-64-5l", 57, Thp::Never),
    ] {
        let w = workload::parse(WORK, "replayed.toml", va_bits).unwrap();
        let path = dir.path().join(format!("{geometry}-{thp:?}.ptl"));
        write_trace(&path, &from_workload::records(&w).unwrap());
        let cfg = config(geometry, thp);
        let ran = model::run(&w, &cfg).unwrap();
        let replayed = replay::replay(&path, &cfg, &ReplayOptions::default()).unwrap();
        assert!(replayed.layout.native);
        same_counts(&ran, &replayed.run);
        let faults = ran.marks[0].counters.get("minor_faults").unwrap();
        assert!(faults >= 4096 + 32 || thp == Thp::Madvise, "{faults}");
    }
}

#[test]
fn repeated_accesses_to_one_page_are_counted_as_first_level_hits_exactly() {
    // The workload's repeated reads and writes of one page: the replay
    // skips translating them, and its counters (every TLB level and size,
    // walks, dirty assists) still equal the run's.
    let dir = tempfile::tempdir().unwrap();
    let w = workload::parse(WORK, "replayed.toml", 48).unwrap();
    let path = dir.path().join("t.ptl");
    write_trace(&path, &from_workload::records(&w).unwrap());
    for thp in [Thp::Never, Thp::Madvise] {
        let cfg = config("x86-64-4l", thp);
        let ran = model::run(&w, &cfg).unwrap();
        let replayed = replay::replay(&path, &cfg, &ReplayOptions::default()).unwrap();
        same_counts(&ran, &replayed.run);
        let read = &replayed.run.marks[1].counters;
        assert!(read.get("tlb_l1_hits").unwrap() >= 380, "{read:?}");
    }
}

#[test]
fn another_threads_fault_ends_the_shortcut() {
    // Thread 0 reads a page (the zero page), thread 1 writes it (a COW
    // fault that shoots down thread 0's entry), thread 0 reads it again:
    // that read must miss and walk, not count as a repeat.
    use trace::{MapEvent, MapFlags, Prot, RegionKind};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.ptl");
    let read = |write| Record::Access {
        id: 0,
        offset: 8,
        write,
    };
    write_trace(
        &path,
        &[
            Record::Map(MapEvent {
                id: 0,
                size: 1 << 20,
                native: 0x2000_0000_0000,
                kind: RegionKind::Anon,
                prot: Prot(Prot::READ | Prot::WRITE),
                flags: MapFlags::default(),
                name: "a".into(),
            }),
            Record::Thread { tid: 0 },
            read(false),
            Record::Thread { tid: 1 },
            read(true),
            Record::Thread { tid: 0 },
            read(false),
            read(false),
            Record::Mark { name: "m".into() },
        ],
    );
    let mut cfg = config("x86-64-4l", Thp::Never);
    cfg.cpus = 2;
    let r = replay::replay(&path, &cfg, &ReplayOptions::default()).unwrap();
    let c = &r.run.marks[0].counters;
    // Translations: the read and the write each miss, fault and miss again
    // on the retry; the third read misses (its entry was shot down); the
    // fourth is the only hit.
    assert_eq!(c.get("accesses"), Some(6), "{c:?}");
    assert_eq!(c.get("tlb_misses"), Some(5), "{c:?}");
    assert_eq!(c.get("tlb_l1_hits"), Some(1), "{c:?}");
}

#[test]
fn a_48_bit_trace_is_placed_anew_under_sv39_and_counts_as_the_workload_there() {
    let dir = tempfile::tempdir().unwrap();
    // The trace carries the 48-bit addresses, which do not fit Sv39.
    let w48 = workload::parse(WORK, "replayed.toml", 48).unwrap();
    let path = dir.path().join("t.ptl");
    write_trace(&path, &from_workload::records(&w48).unwrap());
    let cfg = config("riscv-sv39", Thp::Never);
    let replayed = replay::replay(&path, &cfg, &ReplayOptions::default()).unwrap();
    assert!(!replayed.layout.native);
    let w39 = workload::parse(WORK, "replayed.toml", 39).unwrap();
    let ran = model::run(&w39, &cfg).unwrap();
    same_counts(&ran, &replayed.run);
    // Asking for the native layout there is refused, saying why.
    let e = replay::replay(
        &path,
        &cfg,
        &ReplayOptions {
            layout: LayoutMode::Native,
            ..ReplayOptions::default()
        },
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("39-bit"), "{e}");
}

#[test]
fn filtered_hits_count_as_first_level_hits() {
    let dir = tempfile::tempdir().unwrap();
    let w = workload::parse(WORK, "replayed.toml", 48).unwrap();
    let mut recs = from_workload::records(&w).unwrap();
    let plain = dir.path().join("plain.ptl");
    write_trace(&plain, &recs);
    recs.insert(3, Record::Hits { count: 1234 });
    let with_hits = dir.path().join("hits.ptl");
    write_trace(&with_hits, &recs);
    let cfg = config("x86-64-4l", Thp::Never);
    let a = replay::replay(&plain, &cfg, &ReplayOptions::default()).unwrap();
    let b = replay::replay(&with_hits, &cfg, &ReplayOptions::default()).unwrap();
    for name in ["accesses", "tlb_hits", "tlb_l1_hits"] {
        let (x, y) = (
            a.run.marks[0].counters.get(name).unwrap(),
            b.run.marks[0].counters.get(name).unwrap(),
        );
        assert_eq!(y - x, 1234, "{name}");
    }
    assert_eq!(
        a.run.marks[0].counters.get("minor_faults"),
        b.run.marks[0].counters.get("minor_faults")
    );
}

#[test]
fn an_access_the_model_refuses_names_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let w = workload::parse(WORK, "replayed.toml", 48).unwrap();
    let mut recs = from_workload::records(&w).unwrap();
    // Write to the read-only part after the mprotect (record index 3 after
    // the mprotect).
    let at = recs
        .iter()
        .position(|r| matches!(r, Record::Protect { .. }))
        .unwrap();
    recs.insert(
        at + 1,
        Record::Access {
            id: 0,
            offset: 5 << 20,
            write: true,
        },
    );
    let path = dir.path().join("t.ptl");
    write_trace(&path, &recs);
    let cfg = config("x86-64-4l", Thp::Never);
    match replay::replay(&path, &cfg, &ReplayOptions::default()) {
        Err(ReplayError::Record { index, what }) => {
            assert_eq!(index, at as u64 + 1);
            assert!(what.contains("SIGSEGV"), "{what}");
        }
        other => panic!("{other:?}"),
    }
}

/// The workload's records with a recorded write `Fault` into the part of
/// region 0 that its mprotect left read-only, right after that mprotect,
/// written under `header`; the fault's record index.
fn trace_with_refused_fault(path: &Path, header: &Header) -> u64 {
    let w = workload::parse(WORK, "replayed.toml", 48).unwrap();
    let mut recs = from_workload::records(&w).unwrap();
    let at = recs
        .iter()
        .position(|r| matches!(r, Record::Protect { .. }))
        .unwrap();
    recs.insert(
        at + 1,
        Record::Fault {
            id: 0,
            offset: 5 << 20,
            write: true,
        },
    );
    let mut wr = TraceWriter::create(path, header).unwrap();
    for r in &recs {
        wr.push(r).unwrap();
    }
    wr.finish().unwrap();
    at as u64 + 1
}

#[test]
fn a_recorded_fault_the_model_refuses_is_counted_and_gone_past() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = config("x86-64-4l", Thp::Never);
    let plain = dir.path().join("plain.ptl");
    write_trace(
        &plain,
        &from_workload::records(&workload::parse(WORK, "replayed.toml", 48).unwrap()).unwrap(),
    );
    let base = replay::replay(&plain, &cfg, &ReplayOptions::default()).unwrap();
    assert_eq!(base.refused.count, 0);
    assert_eq!(base.refused.describe(), None);
    let faults = |r: &replay::Replayed| {
        r.run
            .marks
            .last()
            .unwrap()
            .counters
            .get("minor_faults")
            .unwrap()
    };

    // Kinds read from the kernel: the write was the program's own (the
    // kernel refused it too): skipped, nothing mapped for it.
    let known = dir.path().join("known.ptl");
    let header = Header {
        source: "record".into(),
        page_size: 4096,
        va_bits: 48,
        ..Header::default()
    };
    let at = trace_with_refused_fault(&known, &header);
    let r = replay::replay(&known, &cfg, &ReplayOptions::default()).unwrap();
    assert_eq!((r.refused.count, r.refused.as_reads), (1, 0));
    let f = &r.refused.first[0];
    assert_eq!(
        (f.index, f.region, f.offset, f.write, f.as_read),
        (at, 0, 5 << 20, true, false)
    );
    let line = r.refused.describe().unwrap();
    assert!(
        line.contains(&format!(
            "record {at} (write at offset 0x500000 of region 0"
        )),
        "{line}"
    );
    assert_eq!(faults(&r), faults(&base));

    // Kinds inferred by the recorder: replayed as the read it most likely
    // was (the page is mapped already: no fault either way).
    let inferred = dir.path().join("inferred.ptl");
    let mut header = header.clone();
    header.observed.insert("faults_inferred".into(), 1);
    trace_with_refused_fault(&inferred, &header);
    let r = replay::replay(&inferred, &cfg, &ReplayOptions::default()).unwrap();
    assert_eq!((r.refused.count, r.refused.as_reads), (1, 1));
    assert!(r.refused.first[0].as_read);
    assert!(r
        .refused
        .describe()
        .unwrap()
        .contains("1 replayed as reads"));
    assert_eq!(faults(&r), faults(&base));
}

#[test]
fn an_access_outside_its_region_names_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let w = workload::parse(WORK, "replayed.toml", 48).unwrap();
    let mut recs = from_workload::records(&w).unwrap();
    recs.insert(
        3,
        Record::Access {
            id: 1,
            offset: 64 << 20,
            write: false,
        },
    );
    let path = dir.path().join("t.ptl");
    write_trace(&path, &recs);
    let cfg = config("x86-64-4l", Thp::Never);
    match replay::replay(&path, &cfg, &ReplayOptions::default()) {
        Err(ReplayError::Record { index, what }) => {
            assert_eq!(index, 3);
            assert!(what.contains("region 1"), "{what}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn a_cut_trace_is_refused_with_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let w = workload::parse(WORK, "replayed.toml", 48).unwrap();
    let path = dir.path().join("t.ptl");
    write_trace(&path, &from_workload::records(&w).unwrap());
    let bytes = std::fs::read(&path).unwrap();
    std::fs::write(&path, &bytes[..bytes.len() - 40]).unwrap();
    let e = replay::replay(
        &path,
        &config("x86-64-4l", Thp::Never),
        &ReplayOptions::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("t.ptl: byte") && e.contains("cut short"), "{e}");
}

#[test]
fn a_one_thread_trace_predicts_the_time_of_running_its_workload() {
    // `same_counts` above already compares every counter; this names the
    // time: predicted_ns (and its interval, and the CPU's clock) at every
    // mark, equal, and moving as the work does.
    let dir = tempfile::tempdir().unwrap();
    for (thp, geometry, va_bits) in [
        (Thp::Never, "x86-64-4l", 48),
        (Thp::Madvise, "x86-64-4l", 48),
        (Thp::Never, "x86-64-5l", 57),
    ] {
        let w = workload::parse(WORK, "replayed.toml", va_bits).unwrap();
        let path = dir.path().join(format!("{geometry}-{thp:?}.ptl"));
        write_trace(&path, &from_workload::records(&w).unwrap());
        let cfg = config(geometry, thp);
        let ran = model::run(&w, &cfg).unwrap();
        let replayed = replay::replay(&path, &cfg, &ReplayOptions::default()).unwrap();
        let mut last = 0;
        for (a, b) in ran.marks.iter().zip(&replayed.run.marks) {
            for name in [
                "predicted_ns",
                "predicted_lo_ns",
                "predicted_hi_ns",
                "predicted_cpu0_ns",
            ] {
                let (x, y) = (a.counters.get(name), b.counters.get(name));
                assert!(x.is_some(), "{name} at {}", a.name);
                assert_eq!(x, y, "{name} at {} ({thp:?}, {geometry})", a.name);
            }
            let (lo, ns, hi) = (
                b.counters.get("predicted_lo_ns").unwrap(),
                b.counters.get("predicted_ns").unwrap(),
                b.counters.get("predicted_hi_ns").unwrap(),
            );
            assert!(lo <= ns && ns <= hi && lo > 0, "{lo} {ns} {hi}");
            // Work between marks moves time on; the end follows the last mark
            // with nothing between.
            assert!(
                ns > last || b.name == "end",
                "{ns} after {last} at {}",
                b.name
            );
            last = ns;
        }
    }
}

#[test]
fn each_trace_thread_has_its_own_clock() {
    // Thread 0 writes 64 pages, thread 1 (appearing then) writes 1, thread
    // 0 writes 64 more, thread 1 marks: thread 1's clock is one fault past
    // where it started, thread 0's is 128 faults on; the mark is thread
    // 1's, the end the later clock.
    use trace::{MapEvent, MapFlags, Prot, RegionKind};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.ptl");
    let mut recs = vec![Record::Map(MapEvent {
        id: 0,
        size: 1 << 20,
        native: 0x2000_0000_0000,
        kind: RegionKind::Anon,
        prot: Prot(Prot::READ | Prot::WRITE),
        flags: MapFlags::default(),
        name: "a".into(),
    })];
    let write = |p: u64| Record::Access {
        id: 0,
        offset: p * 4096,
        write: true,
    };
    recs.push(Record::Thread { tid: 0 });
    recs.extend((0..64).map(write));
    recs.push(Record::Mark { name: "t0".into() });
    recs.push(Record::Thread { tid: 1 });
    recs.push(write(200));
    recs.push(Record::Thread { tid: 0 });
    recs.extend((64..128).map(write));
    recs.push(Record::Thread { tid: 1 });
    recs.push(Record::Mark { name: "t1".into() });
    write_trace(&path, &recs);
    let mut cfg = config("x86-64-4l", Thp::Never);
    cfg.cpus = 2;
    let r = replay::replay(&path, &cfg, &ReplayOptions::default()).unwrap();
    let first = r.run.marks[0].counters.get("predicted_ns").unwrap();
    let (m, end) = (&r.run.marks[1].counters, &r.run.marks[2].counters);
    let (c0, c1) = (
        m.get("predicted_cpu0_ns").unwrap(),
        m.get("predicted_cpu1_ns").unwrap(),
    );
    // Thread 1 started where the trace was when it appeared (thread 0's
    // clock at its 64th fault) and took one fault.
    assert!(c1 > first && c1 - first < first / 16, "{first} {c1}");
    assert!(c0 > c1 + first / 2, "{c0} {c1}");
    assert_eq!(m.get("predicted_ns"), Some(c1), "the mark is thread 1's");
    assert_eq!(
        end.get("predicted_ns"),
        Some(c0),
        "the end is the latest clock"
    );
}
