//! The command line as a user meets it: the JSON shapes of docs/cli.md,
//! exit statuses, and one-line errors for bad input.

use serde_json::Value;
use std::process::{Command, Output};

fn ptlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .env("PTLAB_COSTS", "xeon-kvm-2026")
        .args(args)
        .output()
        .expect("the binary runs")
}

fn json(args: &[&str]) -> Value {
    let out = ptlab(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("one JSON document on stdout")
}

/// Exit status 2 and a single line on stderr that contains `needle`.
fn bad_input(args: &[&str], needle: &str) {
    let out = ptlab(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    assert!(out.stdout.is_empty(), "nothing on stdout");
}

fn levels(v: &Value) -> Vec<(String, u64, u64, u64)> {
    v["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| {
            (
                l["name"].as_str().unwrap().to_string(),
                l["bits"][0].as_u64().unwrap(),
                l["bits"][1].as_u64().unwrap(),
                l["index"].as_u64().unwrap(),
            )
        })
        .collect()
}

#[test]
fn explain_splits_the_seeds_address() {
    let va: u64 = 0x7fdb_ef78_9000;
    let v = json(&[
        "explain",
        "--geometry",
        "x86-64-4l",
        "0x7fdbef789000",
        "--json",
    ]);
    let idx = |hi: u32, lo: u32| (va >> lo) & ((1 << (hi - lo + 1)) - 1);
    assert_eq!(
        levels(&v),
        vec![
            ("PGD".into(), 47, 39, idx(47, 39)),
            ("PUD".into(), 38, 30, idx(38, 30)),
            ("PMD".into(), 29, 21, idx(29, 21)),
            ("PTE".into(), 20, 12, idx(20, 12)),
        ]
    );
    assert_eq!(v["offset_bits"], serde_json::json!([11, 0]));
    assert_eq!(v["va_bits"], 48);

    let v = json(&[
        "explain",
        "--geometry",
        "x86-64-5l",
        "0x7fdbef789000",
        "--json",
    ]);
    let l = levels(&v);
    assert_eq!(l.len(), 5);
    assert_eq!((l[0].0.as_str(), l[0].1, l[0].2), ("PGD", 56, 48));
    assert_eq!((l[1].0.as_str(), l[1].1, l[1].2), ("P4D", 47, 39));

    let v = json(&[
        "explain",
        "--geometry",
        "riscv-sv39-64k",
        "0x3bef789000",
        "--json",
    ]);
    let bits: Vec<(u64, u64)> = levels(&v).iter().map(|l| (l.1, l.2)).collect();
    assert_eq!(bits, vec![(38, 34), (33, 25), (24, 16)]);
    assert_eq!(v["offset_bits"], serde_json::json!([15, 0]));
    assert_eq!(v["page_size"], 65536);
}

/// docs/cli.md lists the geometry presets; the list is the code's.
#[test]
fn docs_list_every_geometry_preset() {
    let docs =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cli.md")).unwrap();
    let para = docs
        .split("\n\n")
        .find(|p| p.starts_with("Presets: `x86-64-4l`"))
        .expect("docs/cli.md has a \"Presets:\" paragraph for geometries");
    let listed: Vec<&str> = para.split('`').skip(1).step_by(2).collect();
    assert_eq!(listed, pt::geometry::PRESET_NAMES);
}

#[test]
fn geometry_list_has_every_preset() {
    let v = json(&["geometry", "list", "--json"]);
    let names: Vec<&str> = v
        .as_array()
        .unwrap()
        .iter()
        .map(|g| g["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        pt::geometry::PRESET_NAMES,
        "geometry list shows every preset in order"
    );
    let x5 = v
        .as_array()
        .unwrap()
        .iter()
        .find(|g| g["name"] == "x86-64-5l")
        .unwrap();
    assert_eq!(x5["levels"], 5);
    assert_eq!(x5["va_bits"], 57);
    assert_eq!(
        x5["leaf_sizes"],
        serde_json::json!([4096, 2097152, 1073741824])
    );
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    bad_input(
        &["explain", "--geometry", "x86-64-6l", "0x1000"],
        "unknown geometry \"x86-64-6l\"",
    );
    bad_input(
        &["explain", "--geometry", "x86-64-4l", "0x800000000000"],
        "not canonical",
    );
    bad_input(
        &["explain", "--geometry", "x86-64-4l", "0xzz"],
        "expected a 64-bit number",
    );
    // An unknown study section is refused before anything runs, naming them.
    bad_input(
        &[
            "study",
            "--quick",
            "--only",
            "split-pmd,nope",
            "--out",
            "/nonexistent/x",
        ],
        &format!(
            "no section \"nope\" (the sections: {})",
            experiment::study::section_ids().join(", ")
        ),
    );
    let dir = tempfile::tempdir().unwrap();
    let g = dir.path().join("g.toml");
    std::fs::write(&g, "name = \"g\"\narch = \"x86-64\"\npage_shift = 12\n[[level]]\nname = \"PTE\"\nbits = 10\nleaf = true\n").unwrap();
    bad_input(&["geometry", "show", g.to_str().unwrap()], "more than one");
    let w = dir.path().join("w.toml");
    std::fs::write(
        &w,
        "[[thread]]\nop = [ { mmap = \"a\", sizee = \"4KiB\" } ]\n",
    )
    .unwrap();
    bad_input(&["run", w.to_str().unwrap()], "did you mean \"size\"");
    bad_input(
        &["compare", "pagefault", "--config", "lockng=global"],
        "did you mean \"locking\"",
    );
    bad_input(&["run", "no-such-workload"], "neither a built-in workload");
    let t = dir.path().join("tlb.toml");
    std::fs::write(&t, "name = \"bad\"\n[tlb]\nl1 = [ { name = \"d\", entries = 48, ways = 5, sizes = [\"4KiB\"] } ]\nl2 = []\n").unwrap();
    bad_input(
        &["run", "prefault", "--tlb", t.to_str().unwrap()],
        "5 ways do not divide 48 entries",
    );
    bad_input(
        &["run", "prefault", "--tlb", "zen5"],
        "unknown TLB preset \"zen5\"",
    );
}

#[test]
fn compare_4_and_5_levels_on_the_model() {
    let v = json(&[
        "compare",
        "prefault",
        "--config",
        "geometry=x86-64-4l,tlb=none",
        "--config",
        "geometry=x86-64-5l,tlb=none",
        "--json",
    ]);
    let end = |i: usize, c: &str| {
        let marks = v["configs"][i]["marks"].as_array().unwrap();
        marks.last().unwrap()["counters"][c].as_i64().unwrap()
    };
    assert_eq!(end(0, "minor_faults"), end(1, "minor_faults"));
    assert_eq!(end(0, "walks"), end(1, "walks"));
    // Without walk caches every walk that gets past the root reads exactly
    // one more entry (a walk stopped by an empty root entry reads one in both).
    assert_eq!(
        end(1, "walk_refs") - end(0, "walk_refs"),
        end(0, "walks") - end(0, "walks_with_1_refs")
    );
    assert!(end(0, "walks") > 1000);
}

#[test]
fn run_json_has_the_spec_shape() {
    let v = json(&["run", "prefault", "--json"]);
    assert_eq!(v["backend"], "model");
    assert_eq!(v["workload"], "prefault");
    let marks = v["marks"].as_array().unwrap();
    assert_eq!(marks.last().unwrap()["name"], "end");
    for c in [
        "minor_faults",
        "vmpte_kb",
        "accesses",
        "walks",
        "tlb_hits",
        "ipis",
    ] {
        assert!(marks[0]["counters"][c].is_i64(), "{c} missing");
    }
    assert!(marks[0]["counters"]["pt_pages"].is_object());
    assert!(v["host"].is_object());
}

#[test]
fn workloads_list_names_the_seeds() {
    let v = json(&["workloads", "list", "--json"]);
    let all = v.as_array().unwrap();
    for n in [
        "pagefault",
        "ebizzy",
        "multi-fault",
        "thp-fault-scaling",
        "dontneed-reclaim",
        "tlb-shootdown",
        "writeback",
        "gups",
        "prefault",
    ] {
        let w = all
            .iter()
            .find(|w| w["name"] == n)
            .unwrap_or_else(|| panic!("{n}"));
        assert!(!w["seed"].as_str().unwrap().is_empty());
    }
}

#[test]
fn validate_can_fail_and_says_where() {
    // A model with reclaim off must disagree with this kernel on the
    // whole-range reclaim workload (PT_RECLAIM is on here).
    let out = ptlab(&["validate", "pt-reclaim-whole", "--reclaim", "off", "--json"]);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], false);
    let diffs = v["workloads"][0]["diffs"].as_array().unwrap();
    assert!(
        diffs.iter().any(|d| d["counter"] == "vmpte_kb"),
        "{diffs:?}"
    );
    // And the host-like model agrees.
    let out = ptlab(&["validate", "pt-reclaim-whole", "anon-write", "--json"]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(v["ok"], true, "{v}");
    assert_eq!(out.status.code(), Some(0));
}

/// One bad workload of each kind the workload issue names, through the
/// command line: exit status 2, one line with file:line:column and the
/// message, nothing run.
#[test]
fn bad_workloads_exit_2_with_where_and_what() {
    let dir = tempfile::tempdir().unwrap();
    let cases: &[(&str, &str, &str)] = &[
        ("syntax", "[[thread]]\nop = [ { mmap = \"a\", size = \"4KiB\" \n", "TOML syntax error"),
        (
            "unknown-key",
            "[[thread]]\nop = [ { mmap = \"a\", sizee = \"4KiB\" } ]\n",
            "syntax.toml:2:",
        ),
        (
            "bad-unit",
            "[[thread]]\nop = [ { mmap = \"a\", size = \"4KB\" } ]\n",
            "expected a size",
        ),
        (
            "unmapped",
            "[[thread]]\nop = [ { touch = \"a\" } ]\n",
            "not mapped",
        ),
        (
            "outside",
            "[[thread]]\nop = [ { mmap = \"a\", size = \"8KiB\" }, { touch = \"a\", offset = \"8KiB\", len = \"4KiB\" } ]\n",
            "lies past its end",
        ),
        (
            "random-no-count",
            "[[thread]]\nop = [ { mmap = \"a\", size = \"8KiB\" }, { touch = \"a\", pattern = \"random\" } ]\n",
            "missing key \"count\"",
        ),
        (
            "duplicate",
            "[[thread]]\nop = [ { mmap = \"a\", size = \"8KiB\" }, { mmap = \"a\", size = \"8KiB\" } ]\n",
            "is already mapped",
        ),
    ];
    for (name, text, needle) in cases {
        let path = dir.path().join(format!("{name}.toml"));
        std::fs::write(&path, text).unwrap();
        let p = path.to_str().unwrap();
        let out = ptlab(&["run", p, "--backend", "kernel"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "{name}: {err}");
        let needle = needle.replace("syntax.toml", &format!("{name}.toml"));
        assert!(err.contains(&needle), "{name}: {err}");
        // Every message says where: the file, then line and column.
        let loc = format!("{p}:");
        let after = err
            .split(&loc)
            .nth(1)
            .unwrap_or_else(|| panic!("{name}: no location in {err}"));
        let mut parts = after.splitn(3, ':');
        let line: u32 = parts
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("{name}: {err}"));
        let col: u32 = parts
            .next()
            .unwrap()
            .parse()
            .unwrap_or_else(|_| panic!("{name}: {err}"));
        assert!(line >= 1 && col >= 1, "{name}: {err}");
    }
}

/// The end mark's value of `counter` in a `run --json` document.
fn at_end(v: &Value, counter: &str) -> i64 {
    let marks = v["marks"].as_array().unwrap();
    marks.last().unwrap()["counters"][counter]
        .as_i64()
        .unwrap_or_else(|| panic!("no {counter} at the end: {v}"))
}

#[test]
fn a_geometry_brings_its_architectures_tlb_and_the_run_names_it() {
    // A RISC-V 64 KiB page under an x86 preset hit nothing; its own
    // architecture's preset hits.
    let v = json(&["run", "pagefault", "--geometry", "riscv-sv39-64k", "--json"]);
    assert_eq!(v["tlb"], "neoverse-n1", "{}", v["tlb"]);
    assert!(at_end(&v, "tlb_hits") > 0);
    // --tlb still wins, and says so.
    let v = json(&[
        "run",
        "pagefault",
        "--geometry",
        "riscv-sv39-64k",
        "--tlb",
        "none",
        "--json",
    ]);
    assert_eq!(v["tlb"], "none");
    assert_eq!(at_end(&v, "tlb_hits"), 0);
    // An x86 geometry keeps an x86 preset.
    let v = json(&["run", "pagefault", "--geometry", "x86-64-5l", "--json"]);
    let t = v["tlb"].as_str().unwrap();
    assert!(t == "zen4" || t == "icelake", "{t}");
    // The terminal's heading names it too.
    let out = ptlab(&["run", "pagefault", "--geometry", "arm64-64k-48"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.lines().next().unwrap().contains("TLB neoverse-n1"),
        "{text}"
    );
    // The kernel has no model TLB.
    let v = json(&["run", "pagefault", "--backend", "kernel", "--json"]);
    assert!(v["tlb"].is_null(), "{}", v["tlb"]);
}

#[test]
fn the_docs_list_every_study_section_the_code_declares() {
    // docs/cli.md's `--only` row names the ids; they are the code's, in its
    // order (a question added in the code and not in the docs fails here).
    let doc = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/cli.md")).unwrap();
    let row = doc
        .lines()
        .find(|l| l.starts_with("| `--only ID,...` |"))
        .expect("docs/cli.md has the study's --only row");
    let listed = row
        .split_once("by id: ")
        .and_then(|(_, rest)| rest.split_once(" ("))
        .map(|(ids, _)| ids)
        .expect("the row lists the ids after \"by id: \"");
    let ids: Vec<&str> = listed.split(", ").map(|id| id.trim_matches('`')).collect();
    assert_eq!(ids, experiment::study::section_ids(), "{row}");
    // And the help of `study --only` lists the same (clap may wrap it).
    let help = String::from_utf8_lossy(&ptlab(&["study", "--help"]).stdout).to_string();
    for id in experiment::study::section_ids() {
        assert!(help.contains(id), "{id} not in {help}");
    }
}
