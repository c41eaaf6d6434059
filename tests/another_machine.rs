//! The whole tool as on a machine that is not the development one: a
//! program recorded without tracefs (`PTLAB_TRACEFS=none`), replayed and
//! compared with an empty cost cache and a cost file of a different
//! fingerprint named by `PTLAB_COSTS` (no calibration: the named file is
//! used, labelled as that machine's, and the cache stays empty); and a
//! cost file whose figure did not hold still, whose predictions carry the
//! wider interval. Every folder is a temporary one, removed at the end.

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// `ptlab args` with `cache` as XDG_CACHE_HOME, no tracefs, and `costs`
/// as PTLAB_COSTS.
fn ptlab(cache: &Path, costs: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .env("XDG_CACHE_HOME", cache)
        .env("PTLAB_TRACEFS", "none")
        .env("PTLAB_COSTS", costs)
        .args(args)
        .output()
        .expect("the binary runs")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

fn shipped() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("costs/xeon-kvm-2026.toml"))
        .unwrap()
}

/// The reference file as another machine's (its CPU and key changed),
/// with `edit` applied, at `dir/name`.
fn other_machines_file(dir: &Path, name: &str, edit: impl Fn(String) -> String) -> PathBuf {
    let other = shipped().replacen(
        "cpu_model = \"Intel(R) Xeon(R) Processor\"",
        "cpu_model = \"Elsewhere CPU 9000\"\nfingerprint = \"elsewhere-cpu-9000-0123456789abcdef\"",
        1,
    );
    let p = dir.join(name);
    std::fs::write(&p, edit(other)).unwrap();
    p
}

/// A file of `n` lines of pseudo-random keys.
fn lines_file(dir: &Path, n: u64) -> PathBuf {
    let path = dir.join("in.txt");
    let mut x = 0x2545_f491_4f6c_dd1du64;
    let mut text = String::new();
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text.push_str(&format!("{x:016x}\n"));
    }
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn a_recording_without_tracefs_replays_priced_as_the_named_machine_and_nothing_is_measured() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let costs = other_machines_file(dir.path(), "elsewhere.toml", |s| s);
    let input = lines_file(dir.path(), 20_000);
    let trace = dir.path().join("sort.ptl");
    let t = trace.to_str().unwrap();
    let r = ptlab(
        cache.path(),
        &costs,
        &[
            "record",
            "-o",
            t,
            "--",
            "sort",
            input.to_str().unwrap(),
            "-o",
            "/dev/null",
        ],
    );
    let summary = text(&r.stderr);
    assert!(r.status.success(), "{summary}");
    assert!(summary.contains("PTLAB_TRACEFS=none"), "{summary}");

    let replay = ptlab(cache.path(), &costs, &["replay", t]);
    let out = text(&replay.stdout);
    assert!(replay.status.success(), "{}", text(&replay.stderr));
    let label = format!(
        "costs: {}, ANOTHER MACHINE's figures (Elsewhere CPU 9000",
        costs.display()
    );
    assert!(out.contains(&label), "{out}");

    let compare = ptlab(
        cache.path(),
        &costs,
        &[
            "compare",
            t,
            "--config",
            "geometry=x86-64-4l",
            "--config",
            "geometry=x86-64-5l",
            "--json",
        ],
    );
    assert_eq!(compare.status.code(), Some(0), "{}", text(&compare.stderr));
    let v: Value = serde_json::from_slice(&compare.stdout).unwrap();
    let configs = v["configs"].as_array().unwrap();
    assert_eq!(configs.len(), 2);
    for c in configs {
        assert_eq!(
            c["costs"]["this_host"],
            Value::Bool(false),
            "{}",
            c["costs"]
        );
        // How the file's host differs from this one, item by item.
        let differs = c["costs"]["differs"].as_array().unwrap();
        assert!(
            differs.iter().any(|d| d
                .as_str()
                .unwrap()
                .starts_with("CPU Elsewhere CPU 9000 (this host: ")),
            "{differs:?}"
        );
        let end = &c["marks"].as_array().unwrap().last().unwrap()["counters"];
        let (lo, ns, hi) = (
            end["predicted_lo_ns"].as_u64().unwrap(),
            end["predicted_ns"].as_u64().unwrap(),
            end["predicted_hi_ns"].as_u64().unwrap(),
        );
        assert!(0 < lo && lo <= ns && ns <= hi, "{lo} {ns} {hi}");
    }
    // A named file is used as it is: this host was not calibrated.
    assert!(!cache.path().join("ptlab").exists());
}

/// The end counters of `run prefault --json` priced with `costs`.
fn prefault_prediction(cache: &Path, costs: &Path) -> (u64, u64, u64) {
    let o = ptlab(cache, costs, &["run", "prefault", "--json"]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let end = &v["marks"].as_array().unwrap().last().unwrap()["counters"];
    let n = |k: &str| end[k].as_u64().unwrap();
    (
        n("predicted_lo_ns"),
        n("predicted_ns"),
        n("predicted_hi_ns"),
    )
}

#[test]
fn a_figure_marked_unstable_widens_the_predictions_that_use_it() {
    let dir = tempfile::tempdir().unwrap();
    let cache = tempfile::tempdir().unwrap();
    let stable = other_machines_file(dir.path(), "stable.toml", |s| s);
    // The same file, with its anonymous write fault marked unstable: its
    // rounds spread 60% of the figure (the shipped interval is about 1%).
    let unstable = other_machines_file(dir.path(), "unstable.toml", |s| {
        let at = s.find("[costs.\"fault.anon_write\"]").unwrap();
        let next = s[at + 1..].find("\n[").map_or(s.len(), |i| at + 1 + i);
        format!(
            "{}\n[costs.\"fault.anon_write\".stability]\nrounds = 10\nrel_halfwidth = 0.2\nrel_spread = 0.6\nunstable = true\ndrift = \"take 1: steal 9.0% of CPU time\"\n{}",
            &s[..next],
            &s[next..]
        )
    });
    let (slo, sns, shi) = prefault_prediction(cache.path(), &stable);
    let (ulo, uns, uhi) = prefault_prediction(cache.path(), &unstable);
    // The point is the figure's either way; the bounds move out.
    assert_eq!(sns, uns);
    assert!(
        ulo < slo && uhi > shi,
        "stable [{slo}, {shi}], unstable [{ulo}, {uhi}]"
    );
    // And a file of the old format (no stability at all) still loads: the
    // stable one above has none.
    assert!(!std::fs::read_to_string(&stable)
        .unwrap()
        .contains("stability"));
}
