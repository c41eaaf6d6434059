//! The kernel backend against the real kernel: the counters of known
//! workloads, derived from the workload's sizes (not copied from a run).

#![cfg(target_os = "linux")]

mod kernel_support;

use std::collections::BTreeSet;

use backend::kernel::{run, KernelOptions};
use backend::touch::touch_offsets;
use kernel_support::*;
use workload::plan::{Access, Advice, MapKind, Op, Pattern, Range, Touch};

const COMPARED: &[&str] = workload::result::COMPARED;

fn go(b: &Builder) -> workload::result::Run {
    run(&b.build(), &KernelOptions::default()).expect("kernel run")
}

#[test]
fn empty_workload_counts_nothing() {
    // The child's own activity (threads, marks, sleeping, a barrier) must not
    // show in the counters: they measure the workload only.
    let mut b = Builder::new();
    b.thread(vec![
        mark("start"),
        sleep(std::time::Duration::from_millis(5)),
        Op::Barrier,
        mark("after"),
    ]);
    b.thread(vec![Op::Barrier, mark("other")]);
    let r = go(&b);
    let names: Vec<&str> = r.marks.iter().map(|m| m.name.as_str()).collect();
    assert_eq!(names.last(), Some(&"end"));
    assert_eq!(r.marks.len(), 4, "{names:?}");
    for m in &r.marks {
        for c in COMPARED {
            assert_eq!(m.counters.get(c), Some(0), "{c} at {}: {m:?}", m.name);
        }
        assert!(m.counters.get("elapsed_ns").unwrap() >= 0);
        assert!(m.latency.is_none());
    }
    assert!(counter(&r, "after", "elapsed_ns") >= 5_000_000);
}

#[test]
fn writing_64_mib_page_by_page() {
    // measured on this project's development machine: one minor fault per 4 KiB page, one 4 KiB PTE table per
    // 2 MiB. A small region first maps the upper-level tables, so the big
    // one adds exactly its PTE tables.
    let mut b = Builder::new();
    let anchor = b.region("anchor", PAGE);
    let size = 64 * MIB;
    let big = b.region("big", size);
    b.thread(vec![
        anon(anchor, PAGE),
        touch(anchor, all(PAGE), Access::Write, PAGE),
        mark("anchored"),
        anon(big, size),
        madvise(big, all(size), Advice::NoHugePage),
        touch(big, all(size), Access::Write, PAGE),
        mark("touched"),
    ]);
    let r = go(&b);
    assert_eq!(
        delta(&r, "anchored", "touched", "minor_faults"),
        (size / PAGE) as i64
    );
    assert_eq!(delta(&r, "anchored", "touched", "major_faults"), 0);
    assert_eq!(
        delta(&r, "anchored", "touched", "vmpte_kb"),
        (size / (2 * MIB) * 4) as i64
    );
    assert_eq!(
        delta(&r, "anchored", "touched", "rss_anon_kb"),
        (size / KIB) as i64
    );
    assert_eq!(delta(&r, "anchored", "touched", "anon_huge_kb"), 0);
    // From the baseline: the anchor's page too, and its tables (at least a
    // PTE table and a PMD table).
    assert_eq!(
        counter(&r, "touched", "minor_faults"),
        (size / PAGE + 1) as i64
    );
    assert!(counter(&r, "anchored", "vmpte_kb") >= 8);
}

#[test]
fn reading_untouched_memory_maps_the_zero_page() {
    let mut b = Builder::new();
    let pages = 256;
    let size = pages * PAGE;
    let r0 = b.region("r", size);
    b.thread(vec![
        anon(r0, size),
        madvise(r0, all(size), Advice::NoHugePage),
        mark("mapped"),
        touch(r0, all(size), Access::Read, PAGE),
        mark("read"),
        touch(r0, all(size), Access::Write, PAGE),
        mark("written"),
    ]);
    let r = go(&b);
    // A fault per page, and no memory: the shared zero page is mapped.
    assert_eq!(delta(&r, "mapped", "read", "minor_faults"), pages as i64);
    assert_eq!(delta(&r, "mapped", "read", "rss_anon_kb"), 0);
    assert_eq!(delta(&r, "mapped", "read", "vmpte_kb") % 4, 0);
    assert!(delta(&r, "mapped", "read", "vmpte_kb") >= 4);
    // Writing then replaces each zero page: another fault, now with memory.
    assert_eq!(delta(&r, "read", "written", "minor_faults"), pages as i64);
    assert_eq!(
        delta(&r, "read", "written", "rss_anon_kb"),
        (size / KIB) as i64
    );
    assert_eq!(delta(&r, "read", "written", "vmpte_kb"), 0);
}

#[test]
fn dontneed_of_whole_2mib_ranges_frees_pte_tables() {
    let reclaim = host::audit::probe_pt_reclaim();
    let mut b = Builder::new();
    let tables = 4;
    let size = tables * 2 * MIB;
    let r0 = b.region("r", size);
    b.thread(vec![
        anon(r0, size),
        madvise(r0, all(size), Advice::NoHugePage),
        touch(r0, all(size), Access::Write, 2 * MIB),
        mark("touched"),
        // Half of the first table's range: the table still maps pages of
        // the range, and PT_RECLAIM only frees a table DONTNEED covers whole.
        madvise(
            r0,
            Range {
                offset: MIB,
                len: MIB,
            },
            Advice::DontNeed,
        ),
        mark("partial"),
        madvise(r0, all(size), Advice::DontNeed),
        mark("dontneed"),
    ]);
    let r = go(&b);
    assert_eq!(delta(&r, "touched", "partial", "vmpte_kb"), 0);
    assert_eq!(
        delta(&r, "touched", "dontneed", "rss_anon_kb"),
        -((tables * 4) as i64)
    );
    let freed = -delta(&r, "touched", "dontneed", "vmpte_kb");
    match reclaim {
        Some(true) => assert_eq!(freed, (tables * 4) as i64),
        Some(false) => assert_eq!(freed, 0),
        None => {}
    }
    // this project's development machine has PT_RECLAIM.
    let config = host::KernelConfig::read().and_then(|c| c.enabled("CONFIG_PT_RECLAIM"));
    if config == Some(true) {
        assert_eq!(freed, (tables * 4) as i64);
    }
}

#[test]
fn random_touch_faults_once_per_distinct_page() {
    let mut b = Builder::new();
    let size = 4 * MIB;
    let r0 = b.region("r", size);
    let t = Touch {
        region: r0,
        range: all(size),
        access: Access::Write,
        pattern: Pattern::Random,
        stride: PAGE,
        count: 700,
        seed: 42,
        latency: false,
    };
    let distinct: BTreeSet<u64> = touch_offsets(&t).collect();
    assert!(distinct.len() < 700, "some draws repeat");
    b.thread(vec![
        anon(r0, size),
        madvise(r0, all(size), Advice::NoHugePage),
        mark("mapped"),
        Op::Touch(t),
        mark("touched"),
    ]);
    let r = go(&b);
    assert_eq!(
        delta(&r, "mapped", "touched", "minor_faults"),
        distinct.len() as i64
    );
    assert_eq!(
        delta(&r, "mapped", "touched", "rss_anon_kb"),
        (distinct.len() as u64 * PAGE / KIB) as i64
    );
}

#[test]
fn threads_split_work_and_marks_come_from_each() {
    let mut b = Builder::new();
    let size = 2 * MIB;
    let r0 = b.region("buf0", size);
    let r1 = b.region("buf1", size);
    let ops = |r| {
        vec![
            anon(r, size),
            madvise(r, all(size), Advice::NoHugePage),
            Op::Barrier,
            touch(r, all(size), Access::Write, PAGE),
            Op::Barrier,
            mark("done"),
        ]
    };
    b.thread(ops(r0)).thread(ops(r1));
    let r = go(&b);
    let done: Vec<_> = r.marks.iter().filter(|m| m.name == "done").collect();
    assert_eq!(done.len(), 2, "one mark per thread");
    // After the second barrier both threads have written everything.
    for m in done {
        assert_eq!(
            m.counters.get("minor_faults"),
            Some((2 * size / PAGE) as i64)
        );
        assert_eq!(m.counters.get("rss_anon_kb"), Some((2 * size / KIB) as i64));
    }
}

#[test]
fn repeat_maps_and_unmaps_each_time() {
    let mut b = Builder::new();
    let size = MIB;
    let r0 = b.region("r", size);
    b.thread(vec![
        Op::Repeat {
            times: 3,
            ops: vec![
                anon(r0, size),
                touch(r0, all(size), Access::Write, PAGE),
                mark("loop"),
                Op::Munmap {
                    region: r0,
                    range: all(size),
                },
            ],
        },
        mark("after"),
    ]);
    let r = go(&b);
    let loops: Vec<i64> = r
        .marks
        .iter()
        .filter(|m| m.name == "loop")
        .map(|m| m.counters.get("minor_faults").unwrap())
        .collect();
    let per = (size / PAGE) as i64;
    assert_eq!(loops, vec![per, 2 * per, 3 * per]);
    assert_eq!(counter(&r, "after", "rss_anon_kb"), 0);
    assert_eq!(counter(&r, "after", "minor_faults"), 3 * per);
}

#[test]
fn shmem_and_file_regions() {
    let dir = scratch_dir("shmem-file");
    let mut b = Builder::new();
    let size = 4 * MIB;
    let shm = b.region("shm", size);
    let cached = b.region("cached", size);
    let cold = b.region("cold", size);
    b.thread(vec![
        mmap(shm, size, MapKind::Shmem),
        touch(shm, all(size), Access::Write, PAGE),
        mark("shm"),
        with(mmap(cached, size, MapKind::File), |m| m.shared = true),
        touch(cached, all(size), Access::Read, PAGE),
        mark("cached"),
        with(mmap(cold, size, MapKind::File), |m| {
            m.file = workload::plan::FileState::Cold
        }),
        touch(cold, all(size), Access::Read, PAGE),
        mark("cold"),
    ]);
    let opts = KernelOptions {
        temp_dir: Some(dir.path().to_path_buf()),
        ..KernelOptions::default()
    };
    let r = run(&b.build(), &opts).expect("kernel run");
    let pages = (size / PAGE) as i64;
    let kb = (size / KIB) as i64;
    assert_eq!(counter(&r, "shm", "minor_faults"), pages);
    assert_eq!(counter(&r, "shm", "rss_shmem_kb"), kb);
    assert_eq!(counter(&r, "shm", "rss_anon_kb"), 0);
    // Page-cache pages, mapped by fault-around several per fault.
    let faults = delta(&r, "shm", "cached", "minor_faults");
    assert!(faults > 0 && faults <= pages, "{faults}");
    // Served from the page cache: minor faults. A fault that finds a folio
    // locked by writeback of the just-written file retries and is counted
    // major by the kernel (VM_FAULT_RETRY), which a busy disk can cause
    // once or twice (seen on a cold CI build); never most of them.
    let major = delta(&r, "shm", "cached", "major_faults");
    assert!(
        major * 4 < faults.max(1),
        "{major} major of {faults} faults"
    );
    assert_eq!(delta(&r, "shm", "cached", "rss_file_kb"), kb);
    // A cold file is read from the disk: major faults.
    assert!(delta(&r, "cached", "cold", "major_faults") >= 1);
    assert_eq!(delta(&r, "cached", "cold", "rss_file_kb"), kb);
    assert!(
        is_empty_dir(dir.path()),
        "the temporary directory is removed"
    );
}

#[test]
fn latency_histogram_goes_to_the_next_mark() {
    let mut b = Builder::new();
    let size = MIB;
    let r0 = b.region("r", size);
    let count = size / PAGE;
    let timed = match touch(r0, all(size), Access::Write, PAGE) {
        Op::Touch(mut t) => {
            t.latency = true;
            Op::Touch(t)
        }
        _ => unreachable!(),
    };
    b.thread(vec![
        anon(r0, size),
        mark("before"),
        timed,
        touch(r0, all(size), Access::Read, PAGE),
        mark("after"),
    ]);
    let r = go(&b);
    assert!(get(&r, "before").latency.is_none());
    assert!(get(&r, "end").latency.is_none());
    let h = get(&r, "after")
        .latency
        .as_ref()
        .expect("histogram at the next mark");
    assert_eq!(h.count, count);
    assert_eq!(h.buckets.iter().sum::<u64>(), count);
    assert!(h.p50_ns <= h.p99_ns && h.p99_ns <= h.p999_ns && h.p999_ns <= h.max_ns);
    assert!(h.sum_ns >= h.max_ns && h.max_ns > 0);
}
