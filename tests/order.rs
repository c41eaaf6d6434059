//! Run order must not change what `compare` reports: with warm-up on the
//! model and the configurations interleaved, two model configurations give
//! the same figures whichever comes first, and the model's own speed is never
//! shown as a time of the modeled system.

use serde_json::Value;
use std::process::Command;

/// A small workload: faults, a partial DONTNEED (which reclaim acts on), an unmap.
const SMALL: &str = r#"
name = "dontneed-small"
description = "fault 8 MiB, give it back with MADV_DONTNEED, unmap"

[[thread]]
op = [
  { mmap = "a", size = "8MiB" },
  { touch = "a", access = "write" },
  { mark = "touched" },
  { madvise = "a", advice = "dontneed" },
  { mark = "dontneed" },
  { munmap = "a" },
]
"#;

fn compare(configs: [&str; 2]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("order.toml");
    std::fs::write(&path, SMALL).unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .args([
            "compare",
            path.to_str().unwrap(),
            "--config",
            configs[0],
            "--config",
            configs[1],
            "--repeat",
            "10",
            "--json",
        ])
        .output()
        .expect("the binary runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

/// Every counter's samples at every mark of configuration `label`.
fn samples(v: &Value, label: &str) -> Vec<(String, String, Vec<i64>)> {
    let cfg = v["configs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["config"]["label"] == label)
        .unwrap_or_else(|| panic!("no configuration {label}: {v}"));
    let mut out = Vec::new();
    for m in cfg["marks"].as_array().unwrap() {
        for (k, vals) in m["samples"].as_object().unwrap() {
            let vals: Vec<i64> = vals
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x.as_i64().unwrap())
                .collect();
            out.push((m["name"].as_str().unwrap().to_string(), k.clone(), vals));
        }
    }
    out
}

#[test]
fn two_model_configurations_agree_in_either_order() {
    let (a, b) = ("reclaim=off", "reclaim=on");
    let ab = compare([a, b]);
    let ba = compare([b, a]);
    for label in [a, b] {
        let (x, y) = (samples(&ab, label), samples(&ba, label));
        assert_eq!(x.len(), y.len());
        for ((m, k, vx), (_, _, vy)) in x.iter().zip(&y) {
            assert_eq!(vx.len(), 10);
            if k == counters::MODEL_WALL_NS.name {
                continue; // ptlab's own speed: never compared, not a figure of the model
            }
            // Counts of the model are deterministic: identical in either order.
            assert_eq!(vx, vy, "{label} at {m}: {k} depends on run order");
        }
        // No time of the modeled system is derived from ptlab's speed.
        for (m, k, _) in &x {
            assert!(
                k != counters::NS_PER_FAULT.name
                    && k != counters::NS_PER_ACCESS.name
                    && k != counters::ELAPSED_NS.name,
                "{label} at {m} carries {k}"
            );
        }
    }
}

/// A random touch of a huge count on the model, stopped by a short `--timeout`:
/// the command ends soon after the limit, exit status 1, and says which
/// workload, which limit and what to do.
#[test]
fn a_model_run_past_its_timeout_ends_with_a_message() {
    let huge = r#"
name = "huge"
description = "a random touch far longer than the limit"

[[thread]]
op = [
  { mmap = "a", size = "4MiB" },
  { touch = "a", access = "read", pattern = "random", count = 100000000000, seed = 1 },
]
"#;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("huge.toml");
    std::fs::write(&path, huge).unwrap();
    let t = std::time::Instant::now();
    let out = Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .args(["run", path.to_str().unwrap(), "--timeout", "1"])
        .output()
        .expect("the binary runs");
    assert!(t.elapsed() < std::time::Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("workload"), "{err}");
    assert!(err.contains("time limit of 1 s"), "{err}");
    assert!(err.contains("raise --timeout"), "{err}");
}
