//! `ptlab sweep` as a user meets it: the table on stdout or in a file, a
//! failed task kept in the table with exit status 1, a bad file refused
//! with its position and exit status 2.

use serde_json::Value;
use std::process::{Command, Output};

fn ptlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .env("PTLAB_COSTS", "xeon-kvm-2026")
        .args(args)
        .output()
        .expect("the binary runs")
}

fn write(dir: &tempfile::TempDir, name: &str, text: &str) -> String {
    let p = dir.path().join(name);
    std::fs::write(&p, text).unwrap();
    p.display().to_string()
}

#[test]
fn a_failed_task_is_kept_in_the_table_and_the_rest_complete() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        &dir,
        "s.toml",
        "workloads = [\"anon-write\"]\n[axes]\ntlb = [\"zen4\", \"no-such-tlb\"]\ngeometry = [\"x86-64-4l\", \"x86-64-5l\"]\n",
    );
    let out_path = dir.path().join("t.json");
    let out = ptlab(&[
        "sweep",
        &f,
        "--jobs",
        "2",
        "--out",
        &out_path.display().to_string(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("4 tasks"), "{err}");
    assert_eq!(err.matches("failed after 2 attempts").count(), 2, "{err}");
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&out_path).unwrap()).unwrap();
    assert_eq!(
        (t["tasks"].as_u64(), t["failed"].as_u64()),
        (Some(4), Some(2))
    );
    let cols: Vec<&str> = t["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_str().unwrap())
        .collect();
    let at = |name: &str| cols.iter().position(|c| *c == name).unwrap();
    let rows = t["rows"].as_array().unwrap();
    let failed: Vec<&Value> = rows
        .iter()
        .filter(|r| r[at("status")] == "failed")
        .collect();
    assert_eq!(failed.len(), 2);
    for r in &failed {
        assert_eq!(r[at("tlb")], "no-such-tlb");
        assert_eq!(r[at("attempts")], 2);
        let m = r[at("error")].as_str().unwrap();
        assert!(
            m.contains("key \"tlb\": unknown TLB preset \"no-such-tlb\""),
            "{m}"
        );
    }
    let ok = rows.iter().filter(|r| r[at("status")] == "ok");
    assert!(ok.clone().all(|r| r[at("minor_faults")].as_i64().is_some()));
    // The 4- and 5-level runs differ where the geometry shows: a 4-level
    // table has no P4D level at all, a 5-level one has P4D pages.
    let p4d = |g: &str| -> Vec<Value> {
        rows.iter()
            .filter(|r| r[at("geometry")] == g && r[at("status")] == "ok")
            .map(|r| r[at("pt_pages.P4D")].clone())
            .collect()
    };
    assert!(p4d("x86-64-4l").iter().all(Value::is_null));
    assert!(p4d("x86-64-5l").iter().any(|v| v.as_i64() >= Some(1)));
}

#[test]
fn the_table_goes_to_stdout_as_csv() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        &dir,
        "s.toml",
        "workloads = [\"anon-write\"]\n[axes]\ncpus = [1, 2]\n",
    );
    let out = ptlab(&["sweep", &f]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let csv = String::from_utf8(out.stdout).unwrap();
    let header = csv.lines().next().unwrap();
    assert!(
        header.starts_with("workload,config,tlb_used,cpus,run,mark,status,attempts,error,"),
        "{header}"
    );
    assert!(csv
        .lines()
        .skip(1)
        .all(|l| l.starts_with("anon-write,cpus=")));
    // The TLB each run used: the x86 preset its (default) geometry implies.
    assert!(csv.lines().skip(1).all(|l| {
        let tlb = l.split(',').nth(2).unwrap();
        tlb == "zen4" || tlb == "icelake"
    }));
}

#[test]
fn a_bad_sweep_file_is_refused_with_its_position() {
    let dir = tempfile::tempdir().unwrap();
    let f = write(
        &dir,
        "s.toml",
        "workloads = [\"anon-write\"]\n[axes]\nthp = [\"always\", \"sometimes\"]\n",
    );
    let out = ptlab(&["sweep", &f]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert_eq!(
        err.trim_end(),
        format!("error: {f}:3:18: key \"thp\": \"sometimes\" is not one of always, madvise, never")
    );
    let good = write(&dir, "good.toml", "workloads = [\"anon-write\"]\n");
    let out = ptlab(&["sweep", &good, "--out", "t.parquet"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("written as .csv or .json"), "{err}");
}
