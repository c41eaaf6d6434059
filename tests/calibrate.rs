//! `ptlab calibrate` end to end, at the hidden test scale (tiny sizes, five
//! repetitions): the file it writes loads back, and holds every figure
//! calibrate claims to measure, each with an interval around its point and
//! a method.

#![cfg(target_os = "linux")]

use experiment::calibrate::costs::{CostFile, Provenance};
use experiment::calibrate::MEASURED;
use std::process::{Command, Output};

fn ptlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .env("PTLAB_COSTS", "xeon-kvm-2026")
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Figures that need two threads on two CPUs at the same time (the
/// workload's for the shootdown, two clearing threads for the memory
/// bandwidth): on a host busy with other work that cannot be arranged, and
/// calibrate says so rather than write noise.
const NEED_A_QUIET_HOST: &[&str] = &[
    "shootdown.sender",
    "shootdown.receiver",
    "mem.bandwidth_kib",
];

#[test]
fn calibrate_writes_every_figure_it_claims() {
    let dir = tempfile::tempdir().unwrap();
    let out_path = dir.path().join("costs.toml");
    // --allow-busy: the test suite runs beside other tests.
    let out = ptlab(&[
        "calibrate",
        "--test-scale",
        "--allow-busy",
        "--out",
        out_path.to_str().unwrap(),
    ]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        matches!(out.status.code(), Some(0 | 1)),
        "{stdout}\n{stderr}"
    );
    assert!(
        stdout.starts_with("name "),
        "a table header first: {stdout}"
    );
    let file = CostFile::load(&out_path).expect("the file loads and validates");
    assert_eq!(file.host.mode.as_deref(), Some("test"));
    assert!(file.host.kernel_release.is_some() && file.host.taken.is_some());
    for name in MEASURED {
        match file.get(name) {
            Some(c) => {
                assert!(0.0 <= c.lo && c.lo <= c.ns && c.ns <= c.hi, "{name}: {c:?}");
                assert!(!c.method.is_empty(), "{name} has no method");
                assert_ne!(c.provenance, Provenance::Assumed, "{name}");
                assert!(c.n >= 1, "{name}: {c:?}");
                assert!(stdout.contains(name), "{name} is not in the table");
            }
            None => {
                assert!(NEED_A_QUIET_HOST.contains(name), "{name} missing: {stderr}");
                assert_eq!(out.status.code(), Some(1), "a missing figure fails");
                assert!(
                    stderr.contains(name) && stderr.contains("rarely running at the same time"),
                    "{name} missing without its reason: {stderr}"
                );
            }
        }
    }
    if out.status.code() == Some(0) {
        assert_eq!(file.costs.len(), MEASURED.len());
    }
}

#[test]
fn calibrate_into_a_missing_folder_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("no-such-folder");
    let target = missing.join("c.toml");
    let out = ptlab(&[
        "calibrate",
        "--test-scale",
        "--out",
        target.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(missing.to_str().unwrap()), "{err}");
    assert!(out.stdout.is_empty(), "nothing measured, nothing printed");
    assert!(!target.exists());
}

#[test]
fn calibrate_refuses_long_with_the_test_scale() {
    let out = ptlab(&["calibrate", "--long", "--test-scale"]);
    assert_eq!(out.status.code(), Some(2));
}

/// A load reading of other processes using `others` CPUs of 2.
fn reading(others: f64) -> String {
    format!(
        r#"{{"loadavg":[9.5,7.25,3.0],"cpus":2,"others_cpu":{others},"top":[["cc1plus",1.25],["rustc",0.5]]}}"#
    )
}

#[test]
fn calibrate_refuses_a_busy_host_naming_the_load_and_what_runs() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("c.toml");
    let out = ptlab(&[
        "calibrate",
        "--test-scale",
        "--load-reading",
        &reading(1.75),
        "--out",
        target.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    for part in [
        "busy",
        "1.75 of its 2 CPUs",
        "9.50 7.25 3.00",
        "cc1plus 1.25 CPU",
        "rustc 0.50 CPU",
        "--allow-busy",
    ] {
        assert!(err.contains(part), "{part} not in: {err}");
    }
    assert!(out.stdout.is_empty(), "nothing measured, nothing printed");
    assert!(!target.exists());
}

#[test]
fn a_bad_load_reading_is_bad_input() {
    let out = ptlab(&["calibrate", "--test-scale", "--load-reading", "{not json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--load-reading"));
}
