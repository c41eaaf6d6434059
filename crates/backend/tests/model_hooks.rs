//! The model backend's run options: a deadline that stops a run inside a
//! long touch with a typed error, and progress reports that count every
//! thread's accesses against the plan.

use backend::model::{self, ModelConfig, ModelError, ModelOptions, RunOptions, Thp, CHECK_EVERY};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

fn config() -> ModelConfig {
    let opts = ModelOptions {
        thp: Some(Thp::Never),
        tlb: Some("zen4".into()),
        cpus: Some(2),
        ..ModelOptions::default()
    };
    ModelConfig::new(&opts).unwrap()
}

fn parse(text: &str) -> workload::plan::Workload {
    workload::parse(text, "hooks.toml", 48).unwrap()
}

const LONG: &str = r#"
name = "long"
description = "one touch far longer than the deadline"

[[thread]]
op = [
  { mmap = "a", size = "4MiB" },
  { touch = "a", access = "read", pattern = "random", count = 2000000000, seed = 1 },
]
"#;

#[test]
fn a_deadline_stops_a_run_inside_a_touch() {
    let w = parse(LONG);
    let planned = model::planned_accesses(&w);
    assert_eq!(planned, 2_000_000_000);
    let opts = RunOptions {
        deadline: Some(Instant::now() + Duration::from_millis(300)),
        progress: None,
    };
    match model::run_with(&w, &config(), &opts) {
        Err(ModelError::Timeout { done, planned: p }) => {
            assert_eq!(p, planned);
            // Stopped inside the touch, at one of its checks.
            assert!(done > 0 && done < planned, "done {done}");
            assert_eq!(done % CHECK_EVERY, 0);
        }
        other => panic!("expected a timeout, got {other:?}"),
    }
}

#[test]
fn a_passed_deadline_stops_before_the_first_operation() {
    let opts = RunOptions {
        deadline: Some(Instant::now()),
        progress: None,
    };
    let e = model::run_with(&parse(LONG), &config(), &opts).unwrap_err();
    assert_eq!(
        e,
        ModelError::Timeout {
            done: 0,
            planned: 2_000_000_000
        }
    );
}

#[test]
fn progress_counts_every_threads_accesses_up_to_the_plan() {
    let w = parse(
        r#"
name = "progress"
description = "two threads, touches in and out of repeats"

[[thread]]
count = 2
op = [
  { mmap = "r{tid}", size = "8MiB" },
  { touch = "r{tid}", access = "write" },
  { repeat = 3, op = [
    { touch = "r{tid}", access = "read", pattern = "random", count = 5000, seed = 7 },
  ] },
]
"#,
    );
    let planned = model::planned_accesses(&w);
    assert_eq!(planned, 2 * (2048 + 3 * 5000));
    let calls: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
    let sink = calls.clone();
    let opts = RunOptions {
        deadline: None,
        progress: Some(Arc::new(move |done, total| {
            sink.lock().unwrap().push((done, total))
        })),
    };
    let run = model::run_with(&w, &config(), &opts).unwrap();
    let calls = calls.lock().unwrap().clone();
    assert!(calls.iter().all(|&(_, total)| total == planned));
    let mut done: Vec<u64> = calls.iter().map(|c| c.0).collect();
    done.sort_unstable();
    let n = done.len();
    done.dedup();
    assert_eq!(done.len(), n, "each report counts new accesses");
    assert_eq!(done.last(), Some(&planned));
    // At least one report per touch (8 touches), one more per full
    // CHECK_EVERY accesses of a touch (5000 > 4096).
    assert!(n >= 8 + 6, "{n} reports");
    // The hooks change no counter: the same run without them agrees.
    let plain = model::run(&w, &config()).unwrap();
    let strip = |r: &workload::result::Run| {
        let mut c = r.marks.last().unwrap().counters.clone();
        c.set("elapsed_ns", 0);
        c
    };
    // Each of the 2 x 2048 first writes faults once and is retried: one
    // hardware access more than planned.
    let faults = strip(&run).get("minor_faults").unwrap();
    assert_eq!(faults, 2 * 2048);
    assert_eq!(strip(&run).get("accesses"), Some(planned as i64 + faults));
    assert_eq!(
        strip(&run).get("minor_faults"),
        strip(&plain).get("minor_faults")
    );
    assert_eq!(strip(&run).get("accesses"), strip(&plain).get("accesses"));
}
