//! `fork` on both backends: the counters derived from the workload's sizes
//! (a COW fault per page the child writes, a reuse fault per page the
//! parent writes afterwards), the child reaped, and the model's two
//! executors agreeing.

use backend::kernel::{self, KernelOptions};
use backend::model::{self, Executor, ModelConfig, ModelOptions, Thp};
use workload::result::Run;

const PAGES: u64 = 256;

fn text() -> String {
    format!(
        r#"
name = "fork-test"
[[thread]]
op = [
  {{ mmap = "a", size = "{kib}KiB" }},
  {{ touch = "a", access = "write" }},
  {{ mark = "written" }},
  {{ fork = "kid", op = [
    {{ touch = "a", access = "write", len = "{half}KiB" }},
    {{ mark = "wrote" }},
    {{ mprotect = "a", prot = "r" }},
    {{ mark = "protected" }},
  ] }},
  {{ mark = "back" }},
  {{ touch = "a", access = "write" }},
  {{ mark = "rewritten" }},
]
"#,
        kib = PAGES * 4,
        half = PAGES * 2
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
    assert_eq!(
        names,
        [
            "written",
            "kid.wrote",
            "kid.protected",
            "back",
            "rewritten",
            "end"
        ]
    );
    let p = PAGES as i64;
    assert_eq!(get(r, "written", "minor_faults"), p);
    // The child: one COW fault per page it writes, RSS unchanged (a copy
    // replaces a shared page), no new table.
    assert_eq!(get(r, "kid.wrote", "minor_faults"), p / 2);
    assert_eq!(get(r, "kid.wrote", "rss_anon_kb"), 0);
    assert_eq!(get(r, "kid.wrote", "vmpte_kb"), 0);
    assert_eq!(get(r, "kid.protected", "minor_faults"), p / 2);
    // The parent: nothing from the fork or the child...
    assert_eq!(get(r, "back", "minor_faults"), p);
    assert_eq!(get(r, "back", "rss_anon_kb"), p * 4);
    // ...then one fault per page written again (reuse, no copy: RSS the same).
    assert_eq!(get(r, "rewritten", "minor_faults"), 2 * p);
    assert_eq!(get(r, "rewritten", "rss_anon_kb"), p * 4);
}

fn model_run(executor: Executor) -> Run {
    let w = workload::parse(&text(), "fork-test.toml", 48).unwrap();
    let cfg = ModelConfig::new(&ModelOptions {
        thp: Some(Thp::Never),
        executor: Some(executor),
        ..ModelOptions::default()
    })
    .unwrap();
    model::run(&w, &cfg).unwrap()
}

#[test]
fn model_counts_cow_and_reuse_on_both_executors() {
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

#[cfg(target_os = "linux")]
#[test]
fn kernel_counts_cow_and_reuse_and_reaps_the_child() {
    let w = workload::parse(&text(), "fork-test.toml", 48).unwrap();
    let r = kernel::run(&w, &KernelOptions::default()).expect("kernel run");
    check(&r);
    // Every process the run made is reaped: none is left with this
    // process as its parent.
    let me = std::process::id().to_string();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(stat) = std::fs::read_to_string(e.path().join("stat")) {
            let after = stat.rsplit_once(") ").map_or("", |(_, r)| r);
            let ppid = after.split_whitespace().nth(1).unwrap_or("");
            assert_ne!(ppid, me, "a child is left: {stat}");
        }
    }
}
