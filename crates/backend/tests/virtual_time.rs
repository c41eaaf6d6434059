//! The virtual-time executor: deterministic predicted time, the cost
//! model's linear sums, lock waits in virtual time, barriers, shootdown
//! charges, and runs of up to 80 modeled CPUs.

use backend::model::{self, Executor, ModelConfig, ModelOptions, Thp};
use costs::{Cost, CostFile};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use timing::CostModel;
use workload::result::{Mark, Run};

fn config(locking: model::Locking) -> ModelConfig {
    let opts = ModelOptions {
        thp: Some(Thp::Never),
        tlb: Some("zen4".into()),
        cpus: Some(2),
        locking: Some(locking),
        ..ModelOptions::default()
    };
    ModelConfig::new(&opts).unwrap()
}

/// A cost file giving every catalog name 0 ns but those of `set`
/// (`(name, ns, lo, hi)`): a run's prediction is then a sum the test can
/// write down.
fn costs(set: &[(&str, f64, f64, f64)]) -> Arc<CostModel> {
    costs_lacking(set, &[])
}

/// [`costs`] of a file that lacks the names `lacking` (a file taken before
/// they existed).
fn costs_lacking(set: &[(&str, f64, f64, f64)], lacking: &[&str]) -> Arc<CostModel> {
    let mut f = CostFile::new(Default::default());
    for c in costs::CATALOG.iter().filter(|c| !lacking.contains(&c.name)) {
        f.costs
            .insert(c.name.into(), Cost::assumed(0.0, 0.0, 0.0, "test"));
    }
    for &(name, ns, lo, hi) in set {
        assert!(costs::catalog::lookup(name).is_some(), "{name}");
        f.costs
            .insert(name.into(), Cost::assumed(ns, lo, hi, "test"));
    }
    f.validate(std::path::Path::new("test")).unwrap();
    Arc::new(CostModel::new(&f, "test"))
}

fn parse(text: &str) -> workload::plan::Workload {
    workload::parse(text, "virtual_time.toml", 48).unwrap()
}

fn mark<'r>(run: &'r Run, name: &str) -> &'r Mark {
    run.marks
        .iter()
        .find(|m| m.name == name)
        .unwrap_or_else(|| panic!("no mark {name}"))
}

fn get(m: &Mark, name: &str) -> i64 {
    m.counters
        .get(name)
        .unwrap_or_else(|| panic!("{} has no {name}", m.name))
}

/// Every predicted counter of every mark.
fn predictions(run: &Run) -> Vec<(String, String, i64)> {
    run.marks
        .iter()
        .flat_map(|m| {
            m.counters
                .values
                .iter()
                .filter(|(k, _)| {
                    k.starts_with("predicted") || *k == "lock_wait_ns" || *k == "virtual_contended"
                })
                .map(move |(k, v)| (m.name.clone(), k.clone(), *v))
        })
        .collect()
}

const FOUR_THREADS: &str = r#"
name = "four"
description = "four threads fault, read at random, shoot down and unmap"

[[thread]]
count = 4
op = [
  { mmap = "r{tid}", size = "4MiB" },
  { touch = "r{tid}", access = "write" },
  { barrier = true },
  { touch = "r{tid}", access = "read", pattern = "random", count = 20000, seed = 7 },
  { madvise = "r{tid}", advice = "dontneed", len = "1MiB" },
  { touch = "r{tid}", access = "write", len = "2MiB" },
  { barrier = true },
  { mark = "done" },
  { munmap = "r{tid}" },
]
"#;

#[test]
fn the_same_run_twice_and_under_a_busy_host_predicts_the_same() {
    let w = parse(FOUR_THREADS);
    let cfg = config(model::Locking::SplitPte);
    let a = model::run(&w, &cfg).unwrap();
    let b = model::run(&w, &cfg).unwrap();
    let pa = predictions(&a);
    assert!(pa
        .iter()
        .any(|(m, k, v)| m == "end" && k == "predicted_ns" && *v > 0));
    assert!(pa.iter().any(|(_, k, _)| k == "predicted_cpu3_ns"));
    assert_eq!(pa, predictions(&b));
    // A host thread burning CPU meanwhile changes nothing modeled.
    let stop = AtomicBool::new(false);
    let c = std::thread::scope(|s| {
        s.spawn(|| {
            let mut x = 0u64;
            while !stop.load(Ordering::Relaxed) {
                x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
            }
        });
        let c = model::run(&w, &cfg);
        stop.store(true, Ordering::Relaxed);
        c
    })
    .unwrap();
    assert_eq!(pa, predictions(&c));
    // And every counter, not only the predicted ones.
    assert_eq!(
        mark(&a, "done").counters.values.get("minor_faults"),
        mark(&c, "done").counters.values.get("minor_faults")
    );
}

#[test]
fn the_virtual_executor_counts_what_real_threads_count() {
    let w = parse(FOUR_THREADS);
    let virt = model::run(&w, &config(model::Locking::SplitPte)).unwrap();
    let mut cfg = config(model::Locking::SplitPte);
    cfg.executor = Executor::Threads;
    let threads = model::run(&w, &cfg).unwrap();
    for name in [
        "minor_faults",
        "rss_anon_kb",
        "vmpte_kb",
        "faults.anon_write",
        "faults.zero_read",
    ] {
        assert_eq!(
            get(mark(&virt, "done"), name),
            get(mark(&threads, "done"), name),
            "{name}"
        );
    }
    assert_eq!(
        mark(&virt, "done").counters.pt_pages,
        mark(&threads, "done").counters.pt_pages
    );
    // Only the virtual executor predicts time.
    assert!(mark(&threads, "done")
        .counters
        .get("predicted_ns")
        .is_none());
}

#[test]
fn one_thread_of_one_fault_kind_costs_faults_times_kind_plus_accesses_times_hit() {
    let (pages, reads) = (512u64, 10_000u64);
    let text = format!(
        r#"
name = "linear"
description = "faults of one kind, then hits"

[[thread]]
op = [
  {{ mmap = "a", size = "{pages}KiB" }},
  {{ mmap = "z", size = "{pages}KiB" }},
  {{ touch = "a", access = "write", stride = "4KiB" }},
  {{ touch = "z", access = "read", stride = "4KiB" }},
  {{ touch = "a", access = "read", pattern = "random", count = {reads}, seed = 3 }},
  {{ mark = "done" }},
]
"#,
        pages = pages * 4
    );
    let w = parse(&text);
    let mut cfg = config(model::Locking::SplitPte);
    // Every access costs 2 ns whatever it hit: the sum is then independent
    // of the TLB's behaviour.
    cfg.costs = costs(&[
        ("access.tlb_hit", 2.0, 1.0, 3.0),
        ("fault.anon_write", 1000.0, 900.0, 1300.0),
        ("fault.zero_read", 300.0, 200.0, 500.0),
        ("mmap.call", 50.0, 40.0, 60.0),
    ]);
    let run = model::run(&w, &cfg).unwrap();
    let m = mark(&run, "done");
    assert_eq!(get(m, "faults.anon_write"), pages as i64);
    assert_eq!(get(m, "faults.zero_read"), pages as i64);
    let accesses = 2 * pages + reads;
    let expect = |call: f64, anon: f64, zero: f64, hit: f64| {
        (2.0 * call + pages as f64 * (anon + zero) + accesses as f64 * hit).round() as i64
    };
    assert_eq!(get(m, "predicted_ns"), expect(50.0, 1000.0, 300.0, 2.0));
    assert_eq!(get(m, "predicted_lo_ns"), expect(40.0, 900.0, 200.0, 1.0));
    assert_eq!(get(m, "predicted_hi_ns"), expect(60.0, 1300.0, 500.0, 3.0));
    assert_eq!(get(m, "predicted_cpu0_ns"), get(m, "predicted_ns"));
}

/// Two threads fault their own 2 MiB, each in its own PTE table, after
/// thread 0 made both tables (so no table is allocated while they race).
const TWO_TABLES: &str = r#"
name = "two-tables"
description = "two CPUs fault at once in two PTE tables"

[[thread]]
op = [
  { mmap = "a", size = "2MiB" },
  { mmap = "b", size = "2MiB" },
  { touch = "a", access = "write", len = "4KiB" },
  { touch = "b", access = "write", len = "4KiB" },
  { barrier = true },
  { mark = "ready" },
  { touch = "a", access = "write" },
  { barrier = true },
  { mark = "done" },
]

[[thread]]
op = [
  { barrier = true },
  { touch = "b", access = "write" },
  { barrier = true },
]
"#;

fn waits(locking: model::Locking, text: &str) -> (i64, i64) {
    let mut cfg = config(locking);
    cfg.costs = costs(&[
        ("fault.anon_write", 1000.0, 1000.0, 1000.0),
        ("lock.hold_fault", 400.0, 400.0, 400.0),
        ("lock.handoff", 50.0, 50.0, 50.0),
    ]);
    let run = model::run(&parse(text), &cfg).unwrap();
    let (r, d) = (mark(&run, "ready"), mark(&run, "done"));
    (
        get(d, "virtual_contended") - get(r, "virtual_contended"),
        get(d, "lock_wait_ns") - get(r, "lock_wait_ns"),
    )
}

#[test]
fn faults_on_one_lock_wait_in_virtual_time_and_on_split_locks_do_not() {
    let (contended, wait) = waits(model::Locking::Global, TWO_TABLES);
    assert!(
        contended > 0 && wait > 0,
        "global: {contended} waits, {wait} ns"
    );
    assert_eq!(waits(model::Locking::SplitPte, TWO_TABLES), (0, 0));
    // Split locks, but both threads in one PTE table: they meet again.
    let one_table = TWO_TABLES
        .replace(
            r#"{ mmap = "a", size = "2MiB" }"#,
            r#"{ mmap = "a", size = "1MiB" }"#,
        )
        .replace(
            r#"{ mmap = "b", size = "2MiB" }"#,
            r#"{ mmap = "b", size = "1MiB" }"#,
        );
    let (contended, wait) = waits(model::Locking::SplitPte, &one_table);
    assert!(
        contended > 0 && wait > 0,
        "one table: {contended} waits, {wait} ns"
    );
}

#[test]
fn a_barrier_sets_every_clock_to_the_latest_arrival_and_sleep_is_virtual() {
    let w = parse(
        r#"
name = "barrier"
description = "one thread sleeps before the barrier"

[[thread]]
op = [ { sleep = "30s" }, { barrier = true }, { sleep = "10s" }, { mark = "after" }, { barrier = true } ]

[[thread]]
op = [ { barrier = true }, { barrier = true } ]

[[thread]]
op = [ { barrier = true }, { mark = "early" }, { barrier = true } ]
"#,
    );
    let mut cfg = config(model::Locking::SplitPte);
    cfg.costs = costs(&[]);
    let started = std::time::Instant::now();
    let run = model::run(&w, &cfg).unwrap();
    // 40 s of sleep in virtual time, none on the host.
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "no host sleep"
    );
    let early = mark(&run, "early");
    assert_eq!(get(early, "predicted_ns"), 30_000_000_000);
    // Every clock left the barrier at the latest arrival; CPU 0 (first in
    // the plan) has already run its next sleep when CPU 2 marks.
    for cpu in 1..3 {
        assert_eq!(
            get(early, &format!("predicted_cpu{cpu}_ns")),
            30_000_000_000,
            "cpu {cpu}"
        );
    }
    assert_eq!(get(early, "predicted_cpu0_ns"), 40_000_000_000);
    let after = mark(&run, "after");
    assert_eq!(get(after, "predicted_ns"), 40_000_000_000);
    // Thread 0 reaches the second barrier last, so the others wait for it.
    let end = mark(&run, "end");
    assert_eq!(get(end, "predicted_ns"), 40_000_000_000);
    assert_eq!(get(end, "predicted_cpu1_ns"), 40_000_000_000);
}

#[test]
fn a_shootdown_costs_its_sender_and_every_receiver() {
    let w = parse(
        r#"
name = "shootdown"
description = "thread 0 unmaps what all three threads' CPUs may cache"

[[thread]]
op = [
  { mmap = "p", size = "4KiB" },
  { touch = "p", access = "write" },
  { barrier = true },
  { munmap = "p" },
  { barrier = true },
  { mark = "done" },
]

[[thread]]
count = 2
op = [ { barrier = true }, { barrier = true } ]
"#,
    );
    let run = |receiver: f64, sender: f64| {
        let mut cfg = config(model::Locking::SplitPte);
        cfg.cpus = 3;
        cfg.costs = costs(&[
            ("shootdown.receiver", receiver, receiver, receiver),
            ("shootdown.sender", sender, sender, sender),
        ]);
        model::run(&w, &cfg).unwrap()
    };
    let r = run(0.0, 300_000.0);
    let m = mark(&r, "done");
    let shootdowns = get(m, "shootdowns");
    assert!(shootdowns >= 1);
    assert_eq!(get(m, "ipis"), 2 * shootdowns, "one IPI per other CPU");
    // Only the sender pays: its clock is the makespan.
    assert_eq!(get(m, "predicted_ns"), 300_000 * shootdowns);
    // Receivers pay per IPI, at the sender's time: both of them, so the
    // latest clock is a receiver's.
    let r = run(1_000_000.0, 0.0);
    let m = mark(&r, "done");
    assert_eq!(get(m, "predicted_ns"), 1_000_000 * shootdowns);
    let r = run(1_000_000.0, 300_000.0);
    assert_eq!(
        get(mark(&r, "done"), "predicted_ns"),
        1_000_000 * shootdowns
    );
}

/// `n` threads, each faulting 64 KiB of its own region and reading it.
fn many(n: usize) -> String {
    format!(
        r#"
name = "many"
description = "{n} threads"

[[thread]]
count = {n}
op = [
  {{ mmap = "r{{tid}}", size = "64KiB" }},
  {{ touch = "r{{tid}}", access = "write" }},
  {{ touch = "r{{tid}}", access = "read", pattern = "random", count = 500, seed = 1 }},
  {{ barrier = true }},
  {{ mark = "done" }},
  {{ munmap = "r{{tid}}" }},
]
"#
    )
}

#[test]
fn one_to_eighty_modeled_cpus_run_and_agree_with_themselves() {
    for n in [1usize, 8, 64, 80] {
        let w = parse(&many(n));
        let mut cfg = config(model::Locking::SplitPte);
        cfg.cpus = n;
        let a = model::run(&w, &cfg).unwrap();
        let m = mark(&a, "done");
        assert_eq!(get(m, "minor_faults"), 16 * n as i64, "{n} threads");
        assert!(
            get(m, &format!("predicted_cpu{}_ns", n - 1)) > 0,
            "{n} threads"
        );
        // After the barrier every clock reads the same.
        let first = get(m, "predicted_cpu0_ns");
        for cpu in 0..n {
            assert_eq!(
                get(m, &format!("predicted_cpu{cpu}_ns")),
                first,
                "cpu {cpu} of {n}"
            );
        }
        let b = model::run(&w, &cfg).unwrap();
        assert_eq!(predictions(&a), predictions(&b), "{n} threads");
    }
}

#[test]
fn pages_a_system_call_populates_are_priced_by_what_they_mapped() {
    let text = r#"
name = "populate"
description = "MAP_POPULATE, then MADV_POPULATE_READ of fresh anonymous memory"

[[thread]]
op = [
  { mmap = "a", size = "256KiB", populate = true },
  { mark = "populated" },
  { mmap = "z", size = "128KiB" },
  { madvise = "z", advice = "populate_read" },
  { mark = "read" },
]
"#;
    let w = parse(text);
    let mut cfg = config(model::Locking::SplitPte);
    cfg.costs = costs(&[
        ("fault.anon_write", 1000.0, 1000.0, 1000.0),
        ("populate.page", 700.0, 700.0, 700.0),
        ("fault.zero_read", 300.0, 300.0, 300.0),
        ("populate.zero_page", 120.0, 120.0, 120.0),
        ("mmap.call", 50.0, 50.0, 50.0),
        ("madvise.call", 70.0, 70.0, 70.0),
    ]);
    let run = model::run(&w, &cfg).unwrap();
    let p = mark(&run, "populated");
    // 64 pages populated by the mmap: 64 faults, none of them a touch's,
    // each an anonymous page mapped without an exception: populate.page.
    assert_eq!(get(p, "minor_faults"), 64);
    assert_eq!(get(p, "faults.anon_write"), 0);
    assert_eq!(get(p, "predicted_ns"), 50 + 64 * 700);
    // 32 pages read-populated: the zero page, 32 faults the kernel made
    // itself (no exception): populate.zero_page, not fault.zero_read.
    let r = mark(&run, "read");
    assert_eq!(get(r, "minor_faults"), 96);
    assert_eq!(get(r, "faults.zero_read"), 0);
    assert_eq!(get(r, "predicted_ns"), 50 + 64 * 700 + 50 + 70 + 32 * 120);
}

#[test]
fn a_write_to_the_zero_page_is_priced_as_a_zeroed_page_not_a_copy() {
    let text = r#"
name = "zero-cow"
description = "reads map the zero page, writes replace it; a private file page written is copied"

[[thread]]
op = [
  { mmap = "z", size = "128KiB" },
  { touch = "z", access = "read" },
  { mark = "read" },
  { touch = "z", access = "write" },
  { mark = "written" },
  { mmap = "p", size = "128KiB" },
  { madvise = "p", advice = "populate_read" },
  { touch = "p", access = "write" },
  { mark = "populated" },
]
"#;
    let w = parse(text);
    let mut cfg = config(model::Locking::SplitPte);
    cfg.costs = costs(&[
        ("fault.zero_read", 300.0, 300.0, 300.0),
        ("fault.zero_cow", 900.0, 800.0, 1000.0),
        ("fault.cow", 5000.0, 5000.0, 5000.0),
        ("fault.anon_write", 3000.0, 3000.0, 3000.0),
        ("populate.zero_page", 100.0, 100.0, 100.0),
    ]);
    let run = model::run(&w, &cfg).unwrap();
    let r = mark(&run, "read");
    assert_eq!(get(r, "faults.zero_read"), 32);
    let before = get(r, "predicted_ns");
    assert_eq!(before, 32 * 300);
    // Linux: wp_page_copy zeroes a new folio for the zero pfn: 32 zero-page
    // writes, none a copy, none a fresh anonymous fault.
    let m = mark(&run, "written");
    assert_eq!(get(m, "faults.zero_cow"), 32);
    assert_eq!(get(m, "faults.cow"), 0);
    assert_eq!(get(m, "faults.anon_write"), 0);
    assert_eq!(get(m, "predicted_ns") - before, 32 * 900);
    assert_eq!(get(m, "predicted_lo_ns"), 32 * 300 + 32 * 800);
    // The same after MADV_POPULATE_READ mapped the zero page.
    let p = mark(&run, "populated");
    assert_eq!(get(p, "faults.zero_cow"), 64);
    assert_eq!(
        get(p, "predicted_ns") - get(m, "predicted_ns"),
        32 * 100 + 32 * 900
    );
}

#[test]
fn a_populate_for_write_over_zero_pages_is_priced_per_page_replaced() {
    // mlock of a read-only mapping maps the zero page at every page;
    // mprotect of half of it to read-write populates that half for write
    // (Linux: mprotect_fixup -> populate_vma_page_range), each zero page
    // replaced by a zeroed one (do_wp_page -> wp_page_copy). Then
    // MADV_POPULATE_WRITE of a fresh mapping next to MADV_POPULATE_WRITE
    // over zero pages.
    let text = r#"
name = "populate-zero-cow"
description = "populate for write over zero pages, and over nothing"

[[thread]]
op = [
  { mmap = "a", size = "128KiB", prot = "r" },
  { mlock = "a" },
  { mark = "locked" },
  { mprotect = "a", prot = "rw", offset = "64KiB", len = "64KiB" },
  { mark = "protected" },
  { mmap = "f", size = "64KiB" },
  { madvise = "f", advice = "populate_write" },
  { mark = "fresh" },
  { mmap = "z", size = "64KiB" },
  { madvise = "z", advice = "populate_read" },
  { mark = "zeroed" },
  { madvise = "z", advice = "populate_write" },
  { mark = "replaced" },
]
"#;
    let w = parse(text);
    let set = [
        ("fault.anon_write", 1000.0, 1000.0, 1000.0),
        ("fault.zero_cow", 1300.0, 1300.0, 1300.0),
        ("populate.page", 700.0, 700.0, 700.0),
        ("populate.zero_page", 100.0, 100.0, 100.0),
        ("mprotect.call", 40.0, 40.0, 40.0),
        ("madvise.call", 70.0, 70.0, 70.0),
    ];
    let mut cfg = config(model::Locking::SplitPte);
    let mut with = set.to_vec();
    with.push(("populate.zero_cow", 1500.0, 1400.0, 1600.0));
    with.push(("mlock.folio", 200.0, 200.0, 200.0));
    cfg.costs = costs(&with);
    let run = model::run(&w, &cfg).unwrap();
    // The mlock mapped zero pages: no folio of their own, none mlocked.
    let l = get(mark(&run, "locked"), "predicted_ns");
    assert_eq!(l, 32 * 100);
    let p = mark(&run, "protected");
    // 16 zero pages replaced: 16 faults the kernel made, none a touch's,
    // each a new folio in the locked VMA (mlock_new_folio).
    assert_eq!(get(p, "minor_faults"), 32 + 16);
    assert_eq!(get(p, "faults.zero_cow"), 0);
    assert_eq!(get(p, "predicted_ns") - l, 40 + 16 * 1500 + 16 * 200);
    assert_eq!(
        get(p, "predicted_lo_ns") - get(mark(&run, "locked"), "predicted_lo_ns"),
        40 + 16 * 1400 + 16 * 200
    );
    // A fresh page populated is populate.page, a zero page replaced is
    // populate.zero_cow.
    let f = get(mark(&run, "fresh"), "predicted_ns");
    assert_eq!(f - get(p, "predicted_ns"), 70 + 16 * 700);
    let z = get(mark(&run, "zeroed"), "predicted_ns");
    assert_eq!(z - f, 70 + 16 * 100);
    assert_eq!(
        get(mark(&run, "replaced"), "predicted_ns") - z,
        70 + 16 * 1500
    );

    // A cost file without the figure derives it: populate.page plus what
    // a zero-page write fault costs beyond a fresh one (700 + 300); one
    // without mlock.folio prices no locked folio.
    cfg.costs = costs_lacking(&set, &["populate.zero_cow", "mlock.folio"]);
    let run = model::run(&w, &cfg).unwrap();
    let l = get(mark(&run, "locked"), "predicted_ns");
    assert_eq!(
        get(mark(&run, "protected"), "predicted_ns") - l,
        40 + 16 * 1000
    );
}

#[test]
fn a_fork_is_priced_by_the_pages_and_tables_it_copies_and_the_childs_faults() {
    let text = r#"
name = "fork"
description = "a fork of 16 written pages whose child writes 4 of them"

[[thread]]
op = [
  { mmap = "a", size = "64KiB" },
  { touch = "a", access = "write" },
  { mark = "written" },
  { fork = "child", op = [ { touch = "a", access = "write", len = "16KiB" } ] },
  { mark = "forked" },
]
"#;
    let w = parse(text);
    let mut cfg = config(model::Locking::SplitPte);
    cfg.costs = costs(&[
        ("fault.anon_write", 1000.0, 1000.0, 1000.0),
        ("fault.cow", 3000.0, 3000.0, 3000.0),
        ("mmap.call", 50.0, 50.0, 50.0),
        ("fork.call", 100_000.0, 100_000.0, 100_000.0),
        ("fork.page", 10.0, 10.0, 10.0),
        ("fork.table", 500.0, 500.0, 500.0),
    ]);
    let run = model::run(&w, &cfg).unwrap();
    let before = get(mark(&run, "written"), "predicted_ns");
    let after = get(mark(&run, "forked"), "predicted_ns");
    // The call, the parent's 16 pages, the child's 4 copy-on-write faults
    // (every other cost is 0 here), and 500 ns per table page of the
    // parent's: a whole number of them, at least its one PTE table and at
    // most one per level.
    let tables_ns = after - before - (100_000 + 16 * 10 + 4 * 3000);
    assert_eq!(tables_ns % 500, 0, "fork priced {} ns", after - before);
    assert!((1..=5).contains(&(tables_ns / 500)), "{tables_ns}");
    // The same run twice predicts the same.
    let again = model::run(&w, &cfg).unwrap();
    assert_eq!(get(mark(&again, "forked"), "predicted_ns"), after);
}

#[test]
fn the_fault_handlers_own_walk_adds_a_cached_reference_per_level_past_four() {
    // Linux's __handle_mm_fault reads one entry per level on its way down;
    // the fault figures were taken on 4 levels, so a 5-level geometry
    // adds one walk.ref_cached per fault and a 3-level one takes one away.
    // Access costs are 0 but the hardware walks' references (walk_refs,
    // 20 ns each as the handler's).
    let pages = 256u64;
    let text = format!(
        r#"
name = "handler-walk"
[[thread]]
op = [
  {{ mmap = "a", size = "{}KiB" }},
  {{ mark = "mapped" }},
  {{ touch = "a", access = "write", stride = "4KiB" }},
  {{ mark = "done" }},
]
"#,
        pages * 4
    );
    let run_on = |geometry: &str, va_bits: u32| {
        let w = workload::parse(&text, "handler-walk.toml", va_bits).unwrap();
        let opts = ModelOptions {
            thp: Some(Thp::Never),
            geometry: Some(geometry.into()),
            ..ModelOptions::default()
        };
        let mut cfg = ModelConfig::new(&opts).unwrap();
        cfg.costs = costs(&[
            ("fault.anon_write", 1000.0, 900.0, 1100.0),
            ("walk.ref_cached", 20.0, 10.0, 30.0),
        ]);
        let run = model::run(&w, &cfg).unwrap();
        let (a, b) = (mark(&run, "mapped"), mark(&run, "done"));
        assert_eq!(
            get(b, "faults.anon_write") - get(a, "faults.anon_write"),
            pages as i64
        );
        // The walk that raised each fault is inside the fault's figure (the
        // default TLB's walk caches hold the upper levels: it reads the
        // PTE alone); the retries' walks are priced as accesses.
        let refs = get(b, "walk_refs") - get(a, "walk_refs") - pages as i64;
        let p =
            ["predicted_ns", "predicted_lo_ns", "predicted_hi_ns"].map(|k| get(b, k) - get(a, k));
        // Less the priced hardware walks' part, at each end's figure.
        [p[0] - 20 * refs, p[1] - 10 * refs, p[2] - 30 * refs]
    };
    let n = pages as i64;
    assert_eq!(run_on("x86-64-4l", 48), [1000 * n, 900 * n, 1100 * n]);
    assert_eq!(run_on("x86-64-5l", 57), [1020 * n, 910 * n, 1130 * n]);
    // Three levels: one reference fewer; the interval's ends stay ordered.
    assert_eq!(run_on("riscv-sv39", 39), [980 * n, 870 * n, 1090 * n]);
}

/// `threads` threads each writing 252 pages (4 zone batches of 63) of
/// their own region, in their own PTE tables.
fn zone_workload(threads: usize) -> String {
    format!(
        r#"
name = "zone"
[[thread]]
count = {threads}
op = [
  {{ mmap = "r{{tid}}", size = "2MiB" }},
  {{ barrier = true }},
  {{ mark = "start" }},
  {{ touch = "r{{tid}}", access = "write", len = "1008KiB" }},
  {{ barrier = true }},
  {{ mark = "done" }},
]
"#
    )
}

#[test]
fn the_zone_lock_is_free_to_one_cpu_and_serialises_many() {
    // Faults of 1 us; the zone lock held 10 us per 63 pages (inside the
    // fault figures: one CPU alone pays nothing more). Eight CPUs at once
    // share one zone lock: 32 holds, one at a time, take at least 320 us,
    // against 252 us for one CPU's faults.
    let phase = |threads: usize, zone: f64| {
        let opts = ModelOptions {
            thp: Some(Thp::Never),
            cpus: Some(threads as u32),
            ..ModelOptions::default()
        };
        let mut cfg = ModelConfig::new(&opts).unwrap();
        cfg.costs = costs(&[
            ("fault.anon_write", 1000.0, 1000.0, 1000.0),
            ("zone.lock_batch", zone, zone, zone),
        ]);
        let run = model::run(&parse(&zone_workload(threads)), &cfg).unwrap();
        get(mark(&run, "done"), "predicted_ns") - get(mark(&run, "start"), "predicted_ns")
    };
    assert_eq!(phase(1, 10_000.0), phase(1, 0.0));
    assert_eq!(phase(1, 0.0), 252_000);
    assert_eq!(phase(8, 0.0), 252_000);
    let eight = phase(8, 10_000.0);
    assert!(eight >= 8 * 4 * 10_000, "{eight}");
    assert_eq!(eight, phase(8, 10_000.0), "deterministic");
}

/// A cold file of `kib` KiB read one page at its start, then (after the
/// mark) the rest of the file.
fn cold_read(kib: u64) -> String {
    format!(
        r#"
name = "cold"
description = "one major fault reads a cold file's window"

[[thread]]
op = [
  {{ mmap = "f", size = "{kib}KiB", kind = "file", file = "cold" }},
  {{ touch = "f", access = "read", len = "4KiB" }},
  {{ mark = "major" }},
]
"#
    )
}

#[test]
fn a_major_fault_costs_its_call_plus_each_page_its_read_ahead_read() {
    let mut cfg = config(model::Locking::SplitPte);
    // A 1 MiB read-ahead window: a file of up to 1 MiB is read whole by a
    // fault at its first page; a longer one, a window from page 0.
    cfg.mm.readaround_bytes = 1 << 20;
    cfg.costs = costs(&[
        ("fault.major", 30_000.0, 20_000.0, 40_000.0),
        ("fault.major_page", 500.0, 300.0, 900.0),
    ]);
    for (kib, read) in [(4u64, 1i64), (64, 16), (512, 128), (1024, 256), (4096, 256)] {
        let run = model::run(&parse(&cold_read(kib)), &cfg).unwrap();
        let m = mark(&run, "major");
        assert_eq!(get(m, "major_faults"), 1, "{kib} KiB");
        let at = |call: i64, page: i64| call + read * page;
        assert_eq!(get(m, "predicted_ns"), at(30_000, 500), "{kib} KiB");
        assert_eq!(get(m, "predicted_lo_ns"), at(20_000, 300), "{kib} KiB");
        assert_eq!(get(m, "predicted_hi_ns"), at(40_000, 900), "{kib} KiB");
    }
}

#[test]
fn a_hugepage_major_fault_prices_its_pmd_folios_pages_apart() {
    // A cold 4 MiB file advised hugepage: one fault reads two 2 MiB folios
    // (Linux do_sync_mmap_readahead with VM_HUGEPAGE) and maps the first by
    // a PMD; the fault is priced fault.major_pmd, the 1,024 pages
    // fault.major_pmd_page, none fault.major_page. With MADV_NOHUGEPAGE the same read is 1,024 pages of
    // base-page folios, priced fault.major_page.
    let text = |advice: &str| {
        format!(
            r#"
name = "cold-huge"
description = "a cold file's first page read, with or without MADV_HUGEPAGE"

[[thread]]
op = [
  {{ mmap = "f", size = "4MiB", kind = "file", file = "cold" }},
  {{ madvise = "f", advice = "{advice}" }},
  {{ mark = "advised" }},
  {{ touch = "f", access = "read", len = "4KiB" }},
  {{ mark = "major" }},
]
"#
        )
    };
    let mut cfg = ModelConfig::new(&ModelOptions {
        thp: Some(Thp::Madvise),
        tlb: Some("zen4".into()),
        cpus: Some(1),
        ..ModelOptions::default()
    })
    .unwrap();
    cfg.costs = costs(&[
        ("fault.major", 30_000.0, 20_000.0, 40_000.0),
        ("fault.major_page", 500.0, 300.0, 900.0),
        ("fault.major_pmd_page", 2_000.0, 1_000.0, 3_000.0),
        ("fault.major_pmd", 70_000.0, 60_000.0, 80_000.0),
    ]);
    let run = model::run(&parse(&text("hugepage")), &cfg).unwrap();
    let (a, m) = (mark(&run, "advised"), mark(&run, "major"));
    assert_eq!(get(m, "major_faults"), 1);
    assert_eq!(get(m, "rss_file_kb"), 2048, "the first folio PMD-mapped");
    let d = |k: &str| get(m, k) - get(a, k);
    assert_eq!(get(m, "faults.major"), 1);
    // The fault is fault.major_pmd, not fault.major.
    assert_eq!(d("predicted_ns"), 70_000 + 1024 * 2_000);
    assert_eq!(d("predicted_lo_ns"), 60_000 + 1024 * 1_000);
    assert_eq!(d("predicted_hi_ns"), 80_000 + 1024 * 3_000);
    // MADV_NOHUGEPAGE: the same file read in base-page folios by one fault (a
    // window from page 0, clipped to the file), its fault-around priced 0.
    let run = model::run(&parse(&text("nohugepage")), &cfg).unwrap();
    let (a, m) = (mark(&run, "advised"), mark(&run, "major"));
    assert_eq!(get(m, "major_faults"), 1);
    assert_eq!(
        get(m, "predicted_ns") - get(a, "predicted_ns"),
        30_000 + 1024 * 500
    );
}

/// Table pages below the root at mark `m` (VmPTE counts them, 4 KiB each;
/// the root is never allocated by a fault).
fn tables(m: &Mark) -> i64 {
    get(m, "vmpte_kb") / 4
}

#[test]
fn a_table_a_fault_allocates_costs_pt_alloc_once() {
    let text = r#"
name = "sparse"
description = "one write per 2 MiB (a PTE table each), then a populated mapping"

[[thread]]
op = [
  { mmap = "s", size = "64MiB" },
  { mark = "mapped" },
  { touch = "s", access = "write", stride = "2MiB" },
  { mark = "touched" },
  { touch = "s", access = "write", stride = "2MiB", offset = 4096 },
  { mark = "again" },
  { mmap = "p", size = "4MiB", populate = true },
  { mark = "populated" },
]
"#;
    let w = parse(text);
    let mut cfg = config(model::Locking::SplitPte);
    cfg.costs = costs(&[
        ("fault.anon_write", 1000.0, 1000.0, 1000.0),
        ("populate.page", 10.0, 10.0, 10.0),
        ("pt.alloc", 300.0, 200.0, 400.0),
    ]);
    let run = model::run(&w, &cfg).unwrap();
    let (m, t) = (mark(&run, "mapped"), mark(&run, "touched"));
    // 32 faults, each in a PTE table of its own; the faults allocated
    // every table the space gained (PTE tables and the upper levels).
    assert_eq!(get(t, "faults.anon_write"), 32);
    let added = tables(t) - tables(m);
    assert!(added >= 32, "{added}");
    assert_eq!(get(t, "predicted_ns"), 32 * 1000 + added * 300);
    assert_eq!(get(t, "predicted_lo_ns"), 32 * 1000 + added * 200);
    // The same pages' neighbours: their tables exist, nothing allocated.
    let a = mark(&run, "again");
    assert_eq!(tables(a), tables(t));
    assert_eq!(get(a, "predicted_ns") - get(t, "predicted_ns"), 32 * 1000);
    // A populating mmap's tables are the call's, priced once.
    let p = mark(&run, "populated");
    let by_call = tables(p) - tables(a);
    assert!(by_call >= 2, "{by_call}");
    assert_eq!(
        get(p, "predicted_ns") - get(a, "predicted_ns"),
        1024 * 10 + by_call * 300
    );
}

#[test]
fn shared_file_writes_pay_page_mkwrite_and_msync_pays_per_page_written_back() {
    let text = r#"
name = "mkwrite"
description = "a shared file mapping read, 8 pages written, msynced, written again, msynced twice"

[[thread]]
op = [
  { mmap = "f", size = "64KiB", kind = "file", shared = true, file = "cached" },
  { touch = "f", access = "read" },
  { mark = "read" },
  { touch = "f", access = "write", len = "32KiB" },
  { mark = "written" },
  { sync = "f" },
  { mark = "synced" },
  { touch = "f", access = "write", len = "16KiB" },
  { sync = "f" },
  { mark = "again" },
  { sync = "f" },
  { mark = "clean" },
]
"#;
    let w = parse(text);
    let mut cfg = config(model::Locking::SplitPte);
    cfg.costs = costs(&[
        ("fault.file_read", 100.0, 100.0, 100.0),
        ("fault.file_mkwrite", 1000.0, 1000.0, 1000.0),
        ("fault.spurious", 7.0, 7.0, 7.0),
        ("syscall.call", 30.0, 30.0, 30.0),
        ("msync.call", 50_000.0, 50_000.0, 50_000.0),
        ("msync.page", 2000.0, 2000.0, 2000.0),
    ]);
    let run = model::run(&w, &cfg).unwrap();
    let at = |m: &str| get(mark(&run, m), "predicted_ns");
    // One fault-around read fault maps all 16 pages read-only.
    assert_eq!(get(mark(&run, "read"), "minor_faults"), 1);
    // Each of the 8 writes is wp_page_shared's page_mkwrite, not spurious.
    let w8 = mark(&run, "written");
    assert_eq!(get(w8, "faults.file_mkwrite"), 8);
    assert_eq!(get(w8, "faults.spurious"), 0);
    assert_eq!(at("written") - at("read"), 8 * 1000);
    // The msync writes back the 8 dirty pages.
    assert_eq!(at("synced") - at("written"), 50_000 + 8 * 2000);
    // 4 pages written again (cleaned, so 4 more mkwrite faults), then 4
    // written back.
    assert_eq!(at("again") - at("synced"), 4 * 1000 + 50_000 + 4 * 2000);
    // Nothing dirty: a plain call.
    assert_eq!(at("clean") - at("again"), 30);
}

#[test]
fn populating_a_private_file_mapping_for_write_is_priced_as_copies() {
    let text = r#"
name = "locked-cow"
description = "a read-only locked private file mapping made writable: mprotect populates copies"

[[thread]]
op = [
  { mmap = "f", size = "64KiB", kind = "file", file = "cached", prot = "r", locked = true },
  { mark = "mapped" },
  { mprotect = "f", prot = "rw" },
  { mark = "protected" },
]
"#;
    let w = parse(text);
    let mut cfg = config(model::Locking::SplitPte);
    cfg.costs = costs(&[
        ("fault.cow", 3000.0, 3000.0, 3000.0),
        ("populate.page", 700.0, 700.0, 700.0),
        ("mprotect.call", 90.0, 90.0, 90.0),
    ]);
    let run = model::run(&w, &cfg).unwrap();
    let (m, p) = (mark(&run, "mapped"), mark(&run, "protected"));
    assert_eq!(get(p, "minor_faults") - get(m, "minor_faults"), 16);
    // Each of the 16 file pages replaced by an anonymous copy:
    // wp_page_copy, a fault.cow each, not a zeroed populate.page.
    assert_eq!(
        get(p, "predicted_ns") - get(m, "predicted_ns"),
        90 + 16 * 3000
    );
}
