//! `ptlab validate` as a user meets it: it says which counters it compares,
//! and shows the ones it does not compare (TLB shootdowns) beside the
//! kernel's spread, warning without failing.

use serde_json::Value;
use std::process::{Command, Output};

/// One thread maps, writes and unmaps a page 500 times while a second one
/// reads its own memory: every munmap must reach the second thread's CPU.
const TWO_THREAD_MUNMAP: &str = r#"name = "two-thread-munmap"
[[thread]]
op = [
  { barrier = true },
  { repeat = 500, op = [
    { mmap = "page", size = "4KiB" },
    { touch = "page", access = "write" },
    { munmap = "page" },
  ] },
  { barrier = true },
]

[[thread]]
op = [
  { mmap = "own", size = "1MiB" },
  { touch = "own", access = "write" },
  { barrier = true },
  { repeat = 20, op = [
    { touch = "own", access = "read", pattern = "random", count = 4096 },
  ] },
  { barrier = true },
  { munmap = "own" },
]
"#;

const MUNMAPS: i64 = 500;

fn ptlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .env("PTLAB_COSTS", "xeon-kvm-2026")
        .args(args)
        .output()
        .expect("the binary runs")
}

#[test]
fn shootdowns_are_shown_side_by_side_and_only_warn() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("two-thread-munmap.toml");
    std::fs::write(&path, TWO_THREAD_MUNMAP).unwrap();
    // Without the paravirtual flush the model interrupts the other thread's
    // CPU at every munmap, waiting or not (with it, a CPU waiting at the
    // barrier gets its flushes deferred: the mmu's pv_flush tests).
    let out = ptlab(&[
        "validate",
        path.to_str().unwrap(),
        "--pv-flush",
        "off",
        "--json",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{e}: {err}"));

    // What was compared, from the registry, and at which marks.
    let compared: Vec<&str> = v["compared"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    assert_eq!(compared, counters::COMPARED);
    let shootdowns = counters::TLB_SHOOTDOWNS.name;
    assert!(!compared.contains(&shootdowns));
    assert!(v["observed"]
        .as_array()
        .unwrap()
        .contains(&Value::from(shootdowns)));
    let w = &v["workloads"][0];
    assert_eq!(w["compared_marks"], serde_json::json!(["end"]), "{w}");

    // The shootdowns side by side: the model sends one per munmap to the
    // other thread's CPU, so the kernel was run several times for a spread.
    let o = w["observed"]
        .as_array()
        .unwrap()
        .iter()
        .find(|o| o["counter"] == shootdowns)
        .unwrap_or_else(|| panic!("no {shootdowns} entry: {w}"));
    assert_eq!(o["mark"], "end");
    let model = o["model"].as_i64().unwrap();
    assert!(model >= MUNMAPS, "{o}");
    let samples: Vec<i64> = o["kernel"]["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_i64().unwrap())
        .collect();
    assert_eq!(samples.len(), experiment::validate::KERNEL_RUNS, "{o}");
    assert_eq!(o["kernel"]["n"], samples.len());
    let (min, max) = (
        *samples.iter().min().unwrap(),
        *samples.iter().max().unwrap(),
    );
    assert_eq!(o["kernel"]["min"].as_f64(), Some(min as f64));
    assert_eq!(o["kernel"]["max"].as_f64(), Some(max as f64));
    // A warning exactly when the model lies outside the kernel's runs.
    let outside = model < min || model > max;
    assert_eq!(o["warning"].is_string(), outside, "{o}");
    assert_eq!(v["warnings"].as_u64(), Some(u64::from(outside)), "{v}");

    // Warnings never decide the exit status: the compared counters do.
    let ok = w["ok"].as_bool().unwrap();
    assert_eq!(w["diffs"].as_array().unwrap().is_empty(), ok);
    assert_eq!(out.status.code(), Some(if ok { 0 } else { 1 }), "{err}");
}

#[test]
fn the_terminal_output_names_what_it_compares() {
    let out = ptlab(&["validate", "anon-write"]);
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("Compared at every mark: "))
        .unwrap_or_else(|| panic!("{text}"));
    for c in counters::COMPARED {
        assert!(line.contains(c), "{line}");
    }
    assert!(text.contains("Observed, not compared"), "{text}");
    assert!(text.contains(counters::TLB_SHOOTDOWNS.name), "{text}");
    assert!(
        text.lines()
            .any(|l| l.starts_with("anon-write ") && l.contains(" ok (")),
        "{text}"
    );
}

/// Whether this host has an active swap area (the Size column of
/// /proc/swaps), as the kernel backend reads it.
fn host_has_swap() -> bool {
    std::fs::read_to_string("/proc/swaps").is_ok_and(|t| {
        t.lines()
            .skip(1)
            .any(|l| l.split_whitespace().nth(2).is_some_and(|s| s != "0"))
    })
}

/// A workload that `requires` what this host lacks is skipped, with one
/// line saying so, by `validate` and by `run --backend kernel`: neither an
/// agreement nor a failure (exit 0). The model, as configured, is held to
/// the same need.
#[test]
fn a_need_the_host_does_not_meet_skips_the_workload_with_one_line() {
    let (need, unmet) = if host_has_swap() {
        (
            "no-swap",
            "it requires no swap, and this host's kernel has a swap device",
        )
    } else {
        (
            "swap",
            "it requires swap, and this host's kernel has no swap device",
        )
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("needs.toml");
    std::fs::write(
        &path,
        format!(
            "name = \"needs\"\nrequires = [\"{need}\"]\n[[thread]]\nop = [\n  {{ mmap = \"a\", size = \"4KiB\" }},\n  {{ touch = \"a\" }},\n]\n"
        ),
    )
    .unwrap();
    let file = path.to_str().unwrap();
    let line = format!("needs: skipped: {unmet}");

    let out = ptlab(&["validate", file]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(stdout.lines().filter(|l| *l == line).count(), 1, "{stdout}");
    assert!(stdout.contains("0 of 0 workloads agree"), "{stdout}");
    assert!(stdout.contains("; 1 skipped"), "{stdout}");

    let out = ptlab(&["run", file, "--backend", "kernel"]);
    assert!(out.status.success());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim_end(), line);

    // Asked for JSON, the skip is one JSON document; asked for CSV, no rows
    // and the line on stderr.
    let out = ptlab(&["run", file, "--backend", "kernel", "--json"]);
    assert!(out.status.success());
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON document");
    assert_eq!(doc["workload"], file);
    assert_eq!(doc["skipped"], true);
    assert_eq!(doc["reason"], line.as_str());
    let out = ptlab(&["run", file, "--backend", "kernel", "--csv"]);
    assert!(out.status.success());
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert_eq!(String::from_utf8_lossy(&out.stderr).trim_end(), line);

    // The model with the opposite swap setting skips too; with the one the
    // workload needs, it runs.
    let (skip, runs) = if need == "swap" {
        ("swap=off", "swap=1GiB")
    } else {
        ("swap=1GiB", "swap=off")
    };
    let out = ptlab(&["run", file, "--config", skip]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("needs: skipped: it requires"));
    assert!(String::from_utf8_lossy(&out.stdout).contains("the model"));
    let out = ptlab(&["run", file, "--config", runs]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("minor_faults"));
}

/// A need that is not one is bad input: its place, exit status 2.
#[test]
fn an_unknown_need_is_refused_with_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad-need.toml");
    std::fs::write(
        &path,
        "requires = [\"swapp\"]\n[[thread]]\nop = [{ mmap = \"a\", size = \"4KiB\" }]\n",
    )
    .unwrap();
    let out = ptlab(&["run", path.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("bad-need.toml:1:13"), "{err}");
    assert!(
        err.contains("\"swap\", \"no-swap\", \"swap-vma-readahead\""),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}
