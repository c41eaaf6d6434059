//! Nested (two-dimensional) walks through `ptlab run`, as a user runs
//! them: a host geometry under the guest's, with the second dimension's
//! caches off (every walk cold) or on. The figures are the hardware's
//! arithmetic, `(g + 1)(h + 1) - 1` references for a `g`-level guest over
//! an `h`-level host, taken from the run's own counters.

use serde_json::Value;
use std::process::{Command, Output};

/// Random updates over a filled 16 MiB table: every update walks when the
/// TLB is off, and the host tables are complete after the fill.
const GUPS: &str = r#"name = "nested-gups"
[[thread]]
op = [
  { mmap = "table", size = "16MiB" },
  { touch = "table", access = "write" },
  { mark = "filled" },
  { touch = "table", access = "write", pattern = "random", count = 20000, seed = 1 },
  { mark = "updated" },
  { munmap = "table" },
]
"#;

fn ptlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .env("PTLAB_COSTS", "xeon-kvm-2026")
        .args(args)
        .output()
        .expect("the binary runs")
}

/// The run's counters at `filled` and `updated`.
struct Gups {
    filled: Value,
    updated: Value,
}

impl Gups {
    /// Counter `c` over the updates (a difference of the two marks).
    fn updates(&self, c: &str) -> i64 {
        self.updated[c]
            .as_i64()
            .unwrap_or_else(|| panic!("{c} missing"))
            - self.filled[c].as_i64().unwrap()
    }
    /// Memory references per walk over the updates.
    fn refs_per_walk(&self) -> f64 {
        self.updates("walk_refs") as f64 / self.updates("walks") as f64
    }
}

fn gups(config: &str) -> Gups {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("gups.toml");
    std::fs::write(&path, GUPS).unwrap();
    let out = ptlab(&[
        "run",
        path.to_str().unwrap(),
        "--config",
        &format!("thp=never,cpus=1,{config}"),
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{config}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let mark = |name: &str| {
        v["marks"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["name"] == name)
            .unwrap_or_else(|| panic!("mark {name}"))["counters"]
            .clone()
    };
    Gups {
        filled: mark("filled"),
        updated: mark("updated"),
    }
}

fn cold(guest: &str, host: &str) -> Gups {
    gups(&format!(
        "tlb=none,geometry={guest},host-geometry={host},host-caches=off"
    ))
}

#[test]
fn cold_nested_walks_make_the_two_dimensional_count() {
    for (guest, host, refs, g) in [
        ("x86-64-4l", "x86-64-4l", 24, 4),
        ("x86-64-5l", "x86-64-5l", 35, 5),
        ("x86-64-5l", "x86-64-4l", 29, 5),
        ("x86-64-4l", "x86-64-5l", 29, 4),
    ] {
        let r = cold(guest, host);
        let walks = r.updates("walks");
        assert_eq!(
            walks, 20_000,
            "{guest} on {host}: no TLB, every update walks"
        );
        assert_eq!(r.updates("walk_refs"), refs * walks, "{guest} on {host}");
        assert_eq!(r.updates("guest_walk_refs"), g * walks, "{guest} on {host}");
        assert_eq!(
            r.updates("guest_walk_refs") + r.updates("host_walk_refs"),
            r.updates("walk_refs")
        );
        assert_eq!(
            r.updated["refs_per_1000_walks"].as_i64(),
            Some(refs * 1000),
            "the derived figure of the update segment"
        );
        assert_eq!(
            r.updates("ept_violations"),
            0,
            "the fill left the host tables complete"
        );
        assert_eq!(r.updates("nested_tlb_hits"), 0);
    }
}

#[test]
fn the_hypervisor_maps_guest_memory_on_demand() {
    let r = cold("x86-64-4l", "x86-64-4l");
    let violations = r.filled["ept_violations"].as_i64().unwrap();
    // 4096 data pages of the fill, and the guest's table pages (root, PUD,
    // PMD, PTE tables) as the walks first read them.
    assert!(
        (4096 + 4..4096 + 16).contains(&violations),
        "one violation per guest page first used: {violations}"
    );
    // Host pages of 2 MiB: one violation per 2 MiB of guest memory, and
    // host walks that stop at the PMD level: (4 + 1) * 3 + 4 = 19.
    let big = gups("tlb=none,host-geometry=x86-64-4l,host-page=2M,host-caches=off");
    assert!(big.filled["ept_violations"].as_i64().unwrap() < 16);
    assert_eq!(big.refs_per_walk(), 19.0);
}

#[test]
fn the_second_dimensions_caches_shorten_nested_walks() {
    for (guest, host, cold_refs) in [
        ("x86-64-4l", "x86-64-4l", 24.0),
        ("x86-64-5l", "x86-64-5l", 35.0),
    ] {
        let r = gups(&format!(
            "tlb=zen4,geometry={guest},host-geometry={host},host-caches=on"
        ));
        let per = r.refs_per_walk();
        assert!(per < cold_refs / 4.0, "{guest} on {host}: {per} per walk");
        assert!(r.updates("nested_tlb_hits") > 0);
        assert!(r.updates("host_pwc_hits") > 0);
        // The guest's own walk caches still work: fewer guest references
        // than levels per walk.
        let g = r.updates("guest_walk_refs") as f64 / r.updates("walks") as f64;
        assert!(g < 2.0, "{g}");
        // The nested TLB alone (no host walk caches) helps less than both.
        let ntlb_only = gups(&format!(
            "tlb=zen4,geometry={guest},host-geometry={host},host-caches=none"
        ));
        assert!(ntlb_only.refs_per_walk() > per);
    }
}

#[test]
fn a_native_run_reports_no_second_dimension() {
    let r = gups("tlb=none,host-geometry=none");
    assert!(r.updated.get("host_walk_refs").is_none());
    assert_eq!(r.refs_per_walk(), 4.0);
}

#[test]
fn bad_host_keys_are_refused_naming_the_key() {
    for (config, needle) in [
        ("host-page=2M", "key \"host-page\": needs a host"),
        (
            "host-geometry=x86-64-4l,host-page=64K",
            "key \"host-page\": a 64 KiB host page is not one of host geometry x86-64-4l's leaf sizes",
        ),
        ("host-geometry=riscv-sv39", "key \"host-geometry\""),
        ("host-geometry=x86-64-4l,host-caches=zen44", "did you mean \"zen4\""),
        ("host-geometry=x86-64-5", "did you mean \"x86-64-5l\""),
        ("host-geometry=x86-64-4l,host-page=3M", "key \"host-page\": \"3M\" is not a page size"),
    ] {
        let out = ptlab(&["run", "gups", "--config", config]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{config}: {err}");
        assert!(err.contains(needle), "{config}: {err}");
    }
}
