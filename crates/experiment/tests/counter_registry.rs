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

/// Every name a registry entry stands for, as a run carries it: the entry's
/// own name, a family's members, one level of a per-level counter and CPU 0
/// of a per-CPU one.
fn registered_names() -> Vec<String> {
    counters::ALL
        .iter()
        .flat_map(|c| match c.members {
            counters::Members::One => vec![c.name.to_string()],
            counters::Members::Listed(names) => names.iter().map(|n| n.to_string()).collect(),
            counters::Members::PerLevel => vec![format!("{}.PTE", c.name)],
            counters::Members::PerCpu => vec![c.name.replace("<n>", "0")],
        })
        .collect()
}

/// A run whose one mark holds every registered name (each with its own
/// value), as a producer that counts them all would write it.
fn run_of_every_counter() -> Run {
    let mut c = workload::result::Counters::default();
    for (i, name) in registered_names().iter().enumerate() {
        match name.strip_prefix(&format!("{}.", counters::PT_PAGES.name)) {
            Some(level) => {
                c.pt_pages.insert(level.to_string(), i as i64 + 1);
            }
            None => c.set(name, i as i64 + 1),
        }
    }
    Run {
        marks: vec![workload::result::Mark {
            name: "end".into(),
            counters: c,
            latency: None,
        }],
    }
}

/// The outputs follow from the registry: a counter added there (and counted
/// by its producer) reaches the run's table with the registry's unit, the
/// CSV and the JSON, and the kernel wire and validate's compared set are the
/// registry's own selections. Fails if an output keeps a list of its own
/// that forgets a counter.
#[test]
fn every_registered_counter_reaches_every_output() {
    let run = run_of_every_counter();
    let names = registered_names();
    assert!(names.len() > counters::ALL.len(), "families add members");

    // The table: one row per counter, its unit the registry's.
    let table = report::views::run_table(std::slice::from_ref(&run)).render();
    for name in &names {
        let line = table
            .lines()
            .find(|l| l.split_whitespace().nth(1) == Some(name.as_str()))
            .unwrap_or_else(|| panic!("{name} is not a row of the table:\n{table}"));
        let unit = counters::unit_of(name);
        assert!(
            unit.is_empty() || line.trim_end().ends_with(unit),
            "{name}: {line:?} does not end with its unit {unit:?}"
        );
    }

    // The CSV: a line per counter.
    let csv = report::runs_to_csv(&[report::ConfigRuns {
        config: "c",
        workload: "w",
        runs: std::slice::from_ref(&run),
    }])
    .unwrap();
    for name in &names {
        assert!(
            csv.lines().any(|l| l.split(',').any(|f| f == name)),
            "{name} is not in the CSV"
        );
    }

    // The JSON of the run: every counter under its name.
    let json = serde_json::to_value(&run).unwrap();
    let at_end = &json["marks"][0]["counters"];
    for name in &names {
        let found = match name.strip_prefix(&format!("{}.", counters::PT_PAGES.name)) {
            Some(level) => at_end[counters::PT_PAGES.name][level].is_i64(),
            None => at_end[name.as_str()].is_i64(),
        };
        assert!(found, "{name} is not in the JSON: {at_end}");
    }

    // The kernel wire samples, in the registry's order, exactly the entries
    // whose source the kernel reads; validate compares exactly the entries
    // marked compared.
    let sampled: Vec<&str> = counters::ALL
        .iter()
        .filter(|c| c.source.kernel_sampled())
        .map(|c| c.name)
        .collect();
    assert_eq!(counters::KERNEL_SAMPLED, &sampled[..]);
    let compared: Vec<&str> = counters::ALL
        .iter()
        .filter(|c| c.compared)
        .map(|c| c.name)
        .collect();
    assert_eq!(experiment::validate::COMPARED, &compared[..]);
    assert_eq!(workload::result::COMPARED, &compared[..]);
}
