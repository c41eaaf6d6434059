//! Every counter a run produces, on the model and on this machine's kernel,
//! is registered in the `counters` registry (so it has a unit, a meaning and
//! a place in the tables), and the registry's compared set is what both
//! backends produce.

use experiment::config::{parse_inline, RunConfig};
use experiment::exec::{self, ExecOptions};
use workload::result::Run;

/// Two threads that fault, read at random, change protections and unmap:
/// faults, walks, walk caches, locks, shootdowns and latency all move.
const WORKLOAD: &str = r#"name = "registry-coverage"
[[thread]]
count = 2
op = [
  { mmap = "r{tid}", size = "8MiB" },
  { madvise = "r{tid}", advice = "hugepage" },
  { touch = "r{tid}", access = "write" },
  { mark = "touched" },
  { touch = "r{tid}", access = "read", pattern = "random", count = 4000, seed = 5 },
  { mprotect = "r{tid}", prot = "r" },
  { munmap = "r{tid}" },
]
"#;

fn run(cfg: &RunConfig) -> Run {
    let w = workload::parse(WORKLOAD, "<registry test>", exec::va_bits_of(cfg)).unwrap();
    exec::run_once(&w, cfg, &ExecOptions::default()).unwrap()
}

/// The names `run` carries that the registry does not know.
fn unregistered(run: &Run) -> Vec<String> {
    run.marks
        .iter()
        .flat_map(|m| report::views::flatten(&m.counters))
        .map(|(k, _)| k)
        .filter(|k| counters::lookup(k).is_none())
        .collect()
}

fn names(run: &Run) -> Vec<String> {
    run.marks
        .iter()
        .flat_map(|m| report::views::flatten(&m.counters))
        .map(|(k, _)| k)
        .collect()
}

#[test]
fn every_counter_of_a_model_run_is_registered() {
    let cfg = parse_inline("locking=split-pmd,cpus=2,thp=always").unwrap();
    let r = run(&cfg);
    assert_eq!(unregistered(&r), Vec::<String>::new());
    let names = names(&r);
    // The families and per-level counters are there to be checked.
    for family in [
        counters::LOCK_ACQUISITIONS_BY_LOCK[3],
        counters::TLB_MISSES_BY_SIZE[0],
        counters::MODEL_WALL_NS.name,
    ] {
        assert!(names.iter().any(|n| n == family), "{family} not produced");
    }
    // The model's own speed is no time of the modeled system: nothing is
    // derived from it (issue 15).
    for absent in [counters::ELAPSED_NS.name, counters::NS_PER_FAULT.name] {
        assert!(!names.iter().any(|n| n == absent), "{absent} produced");
    }
    assert!(names.iter().any(|n| n.starts_with("pt_pages.")));
    assert!(names.iter().any(|n| n.starts_with("walks_with_")));
    for c in counters::COMPARED {
        assert!(names.iter().any(|n| n == c), "the model lacks {c}");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn every_counter_of_a_kernel_run_is_registered() {
    let r = run(&RunConfig::kernel());
    assert_eq!(unregistered(&r), Vec::<String>::new());
    let names = names(&r);
    assert!(names.iter().any(|n| n == counters::ELAPSED_NS.name));
    assert!(names.iter().any(|n| n == counters::MINOR_FAULTS.name));
    for n in &names {
        let c = counters::lookup(n).unwrap();
        assert!(
            c.source.kernel_sampled()
                || matches!(
                    c.source,
                    counters::Source::MonotonicClock
                        | counters::Source::ProcessCpuClock
                        | counters::Source::Derived
                ),
            "the kernel produced {n}, which the registry calls model-only"
        );
    }
}
