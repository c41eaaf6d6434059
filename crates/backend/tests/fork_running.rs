//! A `fork` with `wait = false`: the parent writes memory it shares with
//! the running child and unmaps a region the child still uses; the child
//! reads the shared memory and writes its own. Every count follows from
//! the sizes whatever the interleaving (a parent's write to a shared page
//! faults once, copy or reuse; the child's reads of pages present at the
//! fork do not fault), so both backends must give them exactly.

use backend::kernel::{self, KernelOptions};
use backend::model::{self, Executor, ModelConfig, ModelOptions, Thp};
use workload::result::Run;

const PAGES: i64 = 128;

fn text() -> String {
    format!(
        r#"
name = "fork-running-test"
[[thread]]
op = [
  {{ mmap = "a", size = "{kib}KiB" }},
  {{ mmap = "b", size = "{kib}KiB" }},
  {{ touch = "a", access = "write" }},
  {{ mark = "written" }},
  {{ fork = "kid", wait = false, op = [
    {{ touch = "a", access = "read" }},
    {{ mark = "read" }},
    {{ touch = "b", access = "write" }},
    {{ mark = "wrote_b" }},
  ] }},
  {{ touch = "a", access = "write" }},
  {{ mark = "parent_wrote" }},
  {{ munmap = "b" }},
  {{ mark = "unmapped" }},
  {{ waitpid = "kid" }},
  {{ mark = "back" }},
  {{ touch = "a", access = "write" }},
  {{ mark = "again" }},
  {{ fork = "late", wait = false, op = [ {{ touch = "a", access = "write", len = "8KiB" }}, {{ mark = "wrote" }} ] }},
]
"#,
        kib = PAGES * 4,
    )
}

fn get(r: &Run, mark: &str, c: &str) -> i64 {
    r.marks
        .iter()
        .find(|m| m.name == mark)
        .unwrap_or_else(|| panic!("no mark {mark}: {r:?}"))
        .counters
        .get(c)
        .unwrap_or_else(|| panic!("no {c} at {mark}"))
}

fn check(r: &Run) {
    let names: Vec<&str> = r.marks.iter().map(|m| m.name.as_str()).collect();
    // The child's marks come at its waitpid; the one never waited for is
    // waited for at the end, before `end`.
    assert_eq!(
        names,
        [
            "written",
            "parent_wrote",
            "unmapped",
            "kid.read",
            "kid.wrote_b",
            "back",
            "again",
            "late.wrote",
            "end"
        ]
    );
    let p = PAGES;
    assert_eq!(get(r, "written", "minor_faults"), p);
    // The parent: one fault per shared page it writes (a copy, or a reuse
    // once the child has exited), RSS unchanged; nothing of the runner's
    // own copy-on-write work around the fork.
    assert_eq!(get(r, "parent_wrote", "minor_faults"), 2 * p);
    assert_eq!(get(r, "parent_wrote", "rss_anon_kb"), p * 4);
    assert_eq!(get(r, "unmapped", "minor_faults"), 2 * p);
    assert_eq!(get(r, "back", "minor_faults"), 2 * p);
    assert_eq!(get(r, "back", "rss_anon_kb"), p * 4);
    // Its pages are its own now: no fault.
    assert_eq!(get(r, "again", "minor_faults"), 2 * p);
    // The child: reads of pages present at the fork map nothing new; its
    // writes to b (empty at the fork, unmapped by the parent meanwhile)
    // fault a page each.
    assert_eq!(get(r, "kid.read", "minor_faults"), 0);
    assert_eq!(get(r, "kid.read", "rss_anon_kb"), 0);
    assert_eq!(get(r, "kid.wrote_b", "minor_faults"), p);
    assert_eq!(get(r, "kid.wrote_b", "rss_anon_kb"), p * 4);
    // The second child: two COW faults, RSS unchanged (a copy each).
    assert_eq!(get(r, "late.wrote", "minor_faults"), 2);
    assert_eq!(get(r, "late.wrote", "rss_anon_kb"), 0);
    assert_eq!(get(r, "end", "minor_faults"), 2 * p);
}

fn model_run(executor: Executor) -> Run {
    let w = workload::parse(&text(), "fork-running-test.toml", 48).unwrap();
    let cfg = ModelConfig::new(&ModelOptions {
        thp: Some(Thp::Never),
        executor: Some(executor),
        ..ModelOptions::default()
    })
    .unwrap();
    model::run(&w, &cfg).unwrap()
}

#[test]
fn model_counts_both_processes_on_both_executors() {
    let v = model_run(Executor::Virtual);
    check(&v);
    let t = model_run(Executor::Threads);
    check(&t);
    for (a, b) in v.marks.iter().zip(&t.marks) {
        for c in workload::result::COMPARED {
            assert_eq!(a.counters.get(c), b.counters.get(c), "{c} at {}", a.name);
        }
    }
}

#[test]
fn model_alternates_child_and_parent_ops() {
    // The child runs its next op before each op of the parent, so both
    // write the same two pages in turn: the child copies page 0 before the
    // parent writes it (the parent then reuses it), the parent copies page
    // 1 before the child writes it (the child then reuses it). Every write
    // is one fault either way and no RSS moves; the child's counts start
    // at the fork and the parent's marks have nothing of the child's.
    let text = r#"
name = "alternate"
[[thread]]
op = [
  { mmap = "a", size = "8KiB" },
  { touch = "a", access = "write" },
  { fork = "kid", wait = false, op = [
    { touch = "a", access = "write", len = "4KiB" },
    { mark = "one" },
    { touch = "a", access = "write", offset = "4KiB", len = "4KiB" },
    { mark = "two" },
  ] },
  { mark = "forked" },
  { touch = "a", access = "write" },
  { mark = "wrote" },
  { waitpid = "kid" },
]
"#;
    let w = workload::parse(text, "alternate.toml", 48).unwrap();
    let cfg = ModelConfig::new(&ModelOptions {
        thp: Some(Thp::Never),
        ..ModelOptions::default()
    })
    .unwrap();
    let r = model::run(&w, &cfg).unwrap();
    assert_eq!(get(&r, "forked", "minor_faults"), 2);
    assert_eq!(get(&r, "wrote", "minor_faults"), 4);
    assert_eq!(get(&r, "kid.one", "minor_faults"), 1);
    assert_eq!(get(&r, "kid.two", "minor_faults"), 2);
    assert_eq!(get(&r, "kid.two", "rss_anon_kb"), 0);
}

#[test]
fn a_sleeping_child_stays_alive_over_the_parents_ops() {
    // The child sleeps 200 ms: the parent's writes meanwhile meet the THP
    // it still shares (each write splits the PMD and copies one page, as
    // measured on 6.18), and the pages it did not write are shared until
    // the waitpid, after which each write reuses its page. The parent's
    // clock waits for the child at the waitpid (virtual time).
    let text = r#"
name = "sleeping-child"
[[thread]]
op = [
  { mmap = "a", size = "4MiB" },
  { madvise = "a", advice = "hugepage" },
  { touch = "a", access = "write" },
  { mark = "written" },
  { fork = "kid", wait = false, op = [ { sleep = "200ms" } ] },
  { touch = "a", access = "write", stride = "64KiB" },
  { mark = "wrote" },
  { waitpid = "kid" },
  { mark = "waited" },
  { touch = "a", access = "write" },
  { mark = "wrote_all" },
]
"#;
    let w = workload::parse(text, "sleeping-child.toml", 48).unwrap();
    for executor in [Executor::Virtual, Executor::Threads] {
        let cfg = ModelConfig::new(&ModelOptions {
            thp: Some(Thp::Madvise),
            executor: Some(executor),
            ..ModelOptions::default()
        })
        .unwrap();
        let r = model::run(&w, &cfg).unwrap();
        let at = |m: &str, c: &str| get(&r, m, c);
        assert_eq!(at("written", "anon_huge_kb"), 4096, "{executor:?}");
        assert_eq!(at("wrote", "minor_faults"), 2 + 64, "{executor:?}");
        assert_eq!(at("wrote", "anon_huge_kb"), 0, "{executor:?}");
        assert_eq!(at("wrote_all", "minor_faults"), 2 + 1024, "{executor:?}");
        if executor == Executor::Virtual {
            let t = |m: &str| at(m, "predicted_ns");
            assert!(t("waited") - t("wrote") >= 150_000_000, "{r:?}");
        }
    }
}

#[cfg(target_os = "linux")]
#[test]
fn kernel_counts_both_processes_and_reaps_every_child() {
    let w = workload::parse(&text(), "fork-running-test.toml", 48).unwrap();
    let r = match kernel::run(&w, &KernelOptions::default()) {
        Ok(r) => r,
        Err(e) if e.to_string().contains("ermission") => {
            eprintln!("skipped: the kernel backend is not usable here: {e}");
            return;
        }
        Err(e) => panic!("kernel run: {e}"),
    };
    check(&r);
    let me = std::process::id().to_string();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) {
            let after = stat.rsplit_once(") ").map_or("", |(_, r)| r);
            let ppid = after.split_whitespace().nth(1).unwrap_or("");
            assert_ne!(ppid, me, "a child is left: {stat}");
        }
    }
}
