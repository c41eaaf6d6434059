//! `validate`'s verdict on synthetic runs: the compared counters decide `ok`,
//! the observed ones are shown beside the kernel's spread and only warn.

use experiment::validate::{self, Machine, WorkloadVerdict};
use workload::result::{Counters, Mark, Run};

const SHOOTDOWNS: &str = counters::TLB_SHOOTDOWNS.name;

/// A run of two marks, `touched` then `end`, with `minor_faults` at each and
/// `shootdowns` at the end.
fn run(faults: i64, shootdowns: i64) -> Run {
    let mark = |name: &str, pairs: &[(&str, i64)]| {
        let mut c = Counters::default();
        for (k, v) in pairs {
            c.set(k, *v);
        }
        Mark {
            name: name.into(),
            counters: c,
            latency: None,
        }
    };
    Run {
        marks: vec![
            mark("touched", &[("minor_faults", faults), (SHOOTDOWNS, 0)]),
            mark("end", &[("minor_faults", faults), (SHOOTDOWNS, shootdowns)]),
        ],
    }
}

fn kernel_runs(faults: i64, shootdowns: &[i64]) -> Vec<Run> {
    shootdowns.iter().map(|&s| run(faults, s)).collect()
}

#[test]
fn the_compared_list_is_the_registrys() {
    let from_registry: Vec<&str> = counters::ALL
        .iter()
        .filter(|c| c.compared)
        .map(|c| c.name)
        .collect();
    assert_eq!(validate::COMPARED.to_vec(), from_registry);
    // Observed: read by the kernel, not compared; never a compared one.
    let observed = validate::observed_counters();
    assert!(observed.contains(&SHOOTDOWNS), "{observed:?}");
    for n in &observed {
        let c = counters::lookup(n).unwrap();
        assert!(!c.compared && c.source.kernel_sampled(), "{n}");
        assert!(!validate::COMPARED.contains(n), "{n}");
    }
    // The model's own clock is not the kernel's: not shown side by side.
    assert!(!observed.contains(&counters::ELAPSED_NS.name));
}

#[test]
fn a_model_within_the_kernels_spread_gives_no_warning() {
    let v = WorkloadVerdict::of(
        "w",
        &kernel_runs(100, &[4, 9, 6]),
        &run(100, 5),
        &Machine::default(),
    );
    assert!(v.ok);
    assert_eq!(v.compared_marks, ["touched", "end"]);
    let o = &v.observed[0];
    assert_eq!((o.counter.as_str(), o.mark.as_str()), (SHOOTDOWNS, "end"));
    assert_eq!(o.kernel.samples, [4, 9, 6]);
    assert_eq!(o.kernel.range(), (4, 9));
    assert_eq!(o.model, 5);
    assert_eq!(o.warning, None);
    assert_eq!(v.warnings().count(), 0);
    // The bounds belong to the spread.
    for model in [4, 9] {
        let v = WorkloadVerdict::of(
            "w",
            &kernel_runs(1, &[4, 9, 6]),
            &run(1, model),
            &Machine::default(),
        );
        assert_eq!(v.warnings().count(), 0, "{model}");
    }
}

#[test]
fn a_model_outside_the_spread_warns_with_a_reason_and_stays_ok() {
    let vm = Machine {
        hypervisor: Some("KVM".into()),
    };
    let above = WorkloadVerdict::of("w", &kernel_runs(100, &[40, 55, 47]), &run(100, 501), &vm);
    assert!(above.ok, "a warning never fails a workload");
    assert!(above.diffs.is_empty());
    let w = above.observed[0].warning.as_deref().expect("a warning");
    assert!(
        w.contains("501 is above the kernel's 40 to 55 over 3 runs"),
        "{w}"
    );
    assert!(
        w.contains("lazy TLB") && w.contains("virtual machine (KVM)"),
        "{w}"
    );

    let below = WorkloadVerdict::of("w", &kernel_runs(100, &[3, 3, 3]), &run(100, 0), &vm);
    assert!(below.ok);
    let w = below.observed[0].warning.as_deref().expect("a warning");
    assert!(w.contains("0 is below the kernel's 3 in 3 runs"), "{w}");
    assert!(w.contains("whole system's"), "{w}");

    // Without a hypervisor the virtual-machine cause is not offered.
    let bare = WorkloadVerdict::of("w", &kernel_runs(1, &[1]), &run(1, 9), &Machine::default());
    let w = bare.observed[0].warning.as_deref().expect("a warning");
    assert!(!w.contains("virtual machine"), "{w}");
}

#[test]
fn only_a_compared_difference_fails() {
    // A fault count that differs fails, whatever the observed counters say.
    let v = WorkloadVerdict::of(
        "w",
        &kernel_runs(100, &[5, 5, 5]),
        &run(101, 5),
        &Machine::default(),
    );
    assert!(!v.ok);
    assert_eq!(v.diffs.len(), 2, "{:?}", v.diffs);
    assert!(v.diffs.iter().all(|d| d.counter == "minor_faults"));
    assert_eq!(v.warnings().count(), 0);
}

#[test]
fn the_kernel_is_repeated_only_when_an_observed_counter_moves() {
    assert!(!validate::any_nonzero(&run(100, 0)));
    assert!(validate::any_nonzero(&run(100, 1)));
    assert!(!validate::any_nonzero(&Run::default()));
}
