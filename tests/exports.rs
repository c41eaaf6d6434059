//! Exports of `run` and `compare` beside the terminal table: JSON, CSV and
//! Markdown files, parsed back; every run's raw values in JSON and CSV.

use serde_json::Value;
use std::process::{Command, Output};

fn ptlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .args(args)
        .output()
        .expect("the binary runs")
}

/// A fresh directory for one test's files, removed when dropped.
fn dir(name: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(&format!("ptlab-exports-{name}-"))
        .tempdir()
        .unwrap()
}

const SMALL: &str = r#"
name = "small"
description = "a few faults at two marks"

[[thread]]
op = [
  { mmap = "a", size = "256KiB" },
  { touch = "a", access = "write" },
  { mark = "touched" },
  { munmap = "a" },
]
"#;

fn small(d: &std::path::Path) -> String {
    let p = d.join("small.toml");
    std::fs::write(&p, SMALL).unwrap();
    p.to_string_lossy().into_owned()
}

#[test]
fn compare_writes_every_export_beside_the_table() {
    let tmp = dir("compare");
    let d = tmp.path();
    let w = small(d);
    let (j, c, m) = (d.join("r.json"), d.join("r.csv"), d.join("r.md"));
    let out = ptlab(&[
        "compare",
        &w,
        "--config",
        "reclaim=off",
        "--config",
        "reclaim=on",
        "--repeat",
        "3",
        "--export-json",
        j.to_str().unwrap(),
        "--export-csv",
        c.to_str().unwrap(),
        "--export-markdown",
        m.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The terminal table is still shown.
    let table = String::from_utf8(out.stdout).unwrap();
    assert!(table.contains("mark \"touched\""), "{table}");

    // JSON: every counter's samples at every mark, one per measured run.
    let v: Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
    let configs = v["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 2);
    for cfg in configs {
        for mark in cfg["marks"].as_array().unwrap() {
            let samples = mark["samples"].as_object().unwrap();
            assert!(samples.contains_key("minor_faults"));
            for (k, vals) in samples {
                assert_eq!(vals.as_array().unwrap().len(), 3, "{k}");
            }
        }
    }
    let touched = &configs[0]["marks"][0];
    assert_eq!(touched["name"], "touched");
    assert_eq!(
        touched["samples"]["minor_faults"],
        serde_json::json!([64, 64, 64])
    );

    // CSV: one header, one row per configuration, mark, counter and run, no
    // empty column in the header.
    // (No field here needs quoting: labels, names and numbers have no comma.)
    let text = std::fs::read_to_string(&c).unwrap();
    let mut lines = text.lines().map(|l| l.split(',').collect::<Vec<_>>());
    let header = lines.next().unwrap();
    assert_eq!(
        header,
        ["config", "workload", "mark", "counter", "unit", "run", "value"]
    );
    let rows: Vec<Vec<&str>> = lines.collect();
    assert!(rows.iter().all(|r| r.len() == header.len()));
    let faults: Vec<(&str, &str, &str)> = rows
        .iter()
        .filter(|r| r[2] == "touched" && r[3] == "minor_faults")
        .map(|r| (r[0], r[5], r[6]))
        .collect();
    assert_eq!(
        faults,
        [
            ("reclaim=off", "1", "64"),
            ("reclaim=off", "2", "64"),
            ("reclaim=off", "3", "64"),
            ("reclaim=on", "1", "64"),
            ("reclaim=on", "2", "64"),
            ("reclaim=on", "3", "64"),
        ]
    );
    for row in &rows {
        row[6].parse::<i64>().expect("every value an exact integer");
    }

    // Markdown: a pipe table per mark with the configurations as columns.
    let md = std::fs::read_to_string(&m).unwrap();
    assert!(md.contains("### mark \"touched\""), "{md}");
    assert!(
        md.contains("| counter | unit | reclaim=off | reclaim=on | ratio to first |"),
        "{md}"
    );
    assert!(
        md.lines().any(|l| l.starts_with("| minor_faults |")),
        "{md}"
    );
}

#[test]
fn run_exports_and_csv_on_stdout_has_one_clean_header() {
    let tmp = dir("run");
    let d = tmp.path();
    let w = small(d);
    let j = d.join("run.json");
    let out = ptlab(&[
        "run",
        &w,
        "--repeat",
        "2",
        "--csv",
        "--export-json",
        j.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(
        text.lines().next(),
        Some("config,workload,mark,counter,unit,run,value")
    );
    assert_eq!(text.lines().filter(|l| l.starts_with("config,")).count(), 1);
    let v: Value = serde_json::from_slice(&std::fs::read(&j).unwrap()).unwrap();
    assert_eq!(v["runs"], 2);
    assert_eq!(
        v["marks"][0]["samples"]["minor_faults"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}

#[test]
fn csv_and_json_on_stdout_together_are_refused_clearly() {
    let out = ptlab(&["run", "pagefault", "--csv", "--json"]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--json") && err.contains("--csv"), "{err}");
}
