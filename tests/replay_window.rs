//! `ptlab replay`'s window as a ChampSim user meets it: an imported trace
//! replayed with `--skip`, `--warmup`, `--limit` (in instructions: the
//! trace has them) and `--prefault`, its fetches through the instruction
//! TLB; a replay
//! stopped by its time limit printing its counters so far, marked partial;
//! `--help` naming every TLB preset.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn ptlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptlab"))
        // The shipped reference costs: a test never calibrates this host.
        .env("PTLAB_COSTS", "xeon-kvm-2026")
        .args(args)
        .output()
        .expect("the binary runs")
}

/// One ChampSim input_instr record.
fn record(ip: u64, loads: &[u64], stores: &[u64]) -> [u8; 64] {
    let mut r = [0u8; 64];
    r[..8].copy_from_slice(&ip.to_le_bytes());
    for (i, a) in stores.iter().enumerate() {
        r[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    for (i, a) in loads.iter().enumerate() {
        r[32 + 8 * i..40 + 8 * i].copy_from_slice(&a.to_le_bytes());
    }
    r
}

/// An uncompressed ChampSim trace of `n` instructions over 600 pages of a
/// heap and a stack, imported into `dir/t.ptl`; returns its path and the
/// accesses it has.
fn imported(dir: &Path, n: u64) -> (std::path::PathBuf, i64) {
    let heap = 0x5555_0000_0000u64;
    let stack = 0x7ffd_0000_0000u64;
    let mut x = 12345u64;
    let mut bytes = Vec::new();
    let mut accesses = 0;
    for i in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let page = (x >> 33) % 600;
        let a = heap + page * 4096 + (x >> 20) % 4096;
        let s = stack - 8 * (i % 700);
        let rec = match i % 4 {
            0 => record(0x40_1000 + i, &[a], &[]),
            1 => record(0x40_1000 + i, &[a], &[a]),
            2 => record(0x40_1000 + i, &[], &[s]),
            _ => record(0x40_1000 + i, &[], &[]),
        };
        accesses += [1, 2, 1, 0][(i % 4) as usize];
        bytes.extend_from_slice(&rec);
    }
    let input = dir.join("t.champsimtrace");
    std::fs::write(&input, &bytes).unwrap();
    let out = dir.join("t.ptl");
    let r = ptlab(&[
        "import",
        "champsim",
        input.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    assert!(
        err.contains("(uncompressed)")
            && err.contains(&format!("{n} instructions, {accesses} accesses")),
        "{err}"
    );
    (out, accesses)
}

/// The replay's JSON document.
fn replay(trace: &Path, extra: &[&str]) -> Value {
    let mut args = vec![
        "replay",
        trace.to_str().unwrap(),
        "--json",
        "--tlb",
        "icelake",
    ];
    args.extend_from_slice(extra);
    let r = ptlab(&args);
    assert!(
        r.status.success(),
        "{extra:?}: {}",
        String::from_utf8_lossy(&r.stderr)
    );
    serde_json::from_slice(&r.stdout).unwrap()
}

fn mark<'a>(v: &'a Value, name: &str) -> &'a Value {
    v["marks"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == name)
        .unwrap_or_else(|| panic!("no mark {name}: {v}"))
}

fn counter(v: &Value, mark_name: &str, c: &str) -> i64 {
    mark(v, mark_name)["counters"][c].as_i64().unwrap_or(0)
}

/// Counters that add up over consecutive parts of a replay.
const EVENTS: &[&str] = &[
    "accesses",
    "minor_faults",
    "tlb_hits",
    "tlb_misses",
    "tlb_l1_hits",
    "tlb_l1_misses",
    "tlb_l2_hits",
    "tlb_l2_misses",
    "walks",
    "walk_refs",
    "pwc_hits",
    "itlb_hits",
    "itlb_misses",
    "itlb_l2_hits",
    "itlb_l2_misses",
];

/// Instruction fetches translated (a fetch that faults is translated
/// again after the fault).
fn fetches(v: &Value, mark_name: &str) -> i64 {
    counter(v, mark_name, "itlb_hits") + counter(v, mark_name, "itlb_misses")
}

#[test]
fn the_window_counts_only_the_window() {
    let dir = tempfile::tempdir().unwrap();
    let (t, total) = imported(dir.path(), 20_000);
    let (w, n) = (6_001u64, 9_000u64);
    let first = replay(&t, &["--limit", &w.to_string()]);
    let both = replay(&t, &["--limit", &(w + n).to_string()]);
    let window = replay(&t, &["--warmup", &w.to_string(), "--limit", &n.to_string()]);
    // The window is in instructions (the trace has them): one fetch each.
    // `accesses` counts data translations: an access that faults is
    // translated again after the fault, so with faults it exceeds the
    // trace's; instructions 6,001 to 15,000 make 9,000 accesses (1, 2, 1
    // and 0 by instruction).
    assert!(fetches(&window, "end") >= n as i64);
    assert!(fetches(&window, "warmup") >= w as i64);
    assert!(counter(&window, "end", "accesses") >= n as i64);
    for c in EVENTS {
        assert_eq!(
            counter(&window, "end", c),
            counter(&both, "end", c) - counter(&first, "end", c),
            "{c}: the window against the difference of two replays"
        );
    }
    // The warm-up is warm: the window misses less than the same accesses
    // replayed cold (skipped: not replayed at all).
    let cold = replay(&t, &["--skip", &w.to_string(), "--limit", &n.to_string()]);
    assert!(fetches(&cold, "end") >= n as i64);
    assert!(
        counter(&cold, "end", "minor_faults") > counter(&window, "end", "minor_faults"),
        "{cold}\n{window}"
    );
    // No window: every access counted, no warmup mark.
    let all = replay(&t, &[]);
    assert!(counter(&all, "end", "accesses") >= total);
    assert!(all["marks"]
        .as_array()
        .unwrap()
        .iter()
        .all(|m| m["name"] != "warmup"));
    assert_eq!(all["partial"], false);
}

#[test]
fn prefault_shows_no_fault() {
    let dir = tempfile::tempdir().unwrap();
    let (t, total) = imported(dir.path(), 8_000);
    let plain = replay(&t, &[]);
    assert!(counter(&plain, "end", "minor_faults") > 600);
    let pre = replay(&t, &["--prefault"]);
    assert_eq!(counter(&pre, "end", "minor_faults"), 0, "{pre}");
    // No fault: each access and each fetch translated once, the trace's
    // own counts.
    assert_eq!(counter(&pre, "end", "accesses"), total);
    assert_eq!(fetches(&pre, "end"), 8_000);
    // Two pages of code (8,000 one-byte steps from 0x401000), each missed
    // once by the instruction TLB and the STLB (the populate filled no TLB).
    assert_eq!(counter(&pre, "end", "itlb_l2_misses"), 2, "{pre}");
    assert_eq!(counter(&pre, "end", "itlb_misses"), 2, "{pre}");
    // The populate is before the window.
    assert!(counter(&pre, "warmup", "minor_faults") > 600);
    // Faults take two misses and two walks each: without them the
    // prefaulted replay misses less.
    assert!(counter(&pre, "end", "tlb_misses") < counter(&plain, "end", "tlb_misses"));
    let pre_window = replay(&t, &["--prefault", "--warmup", "100", "--limit", "5000"]);
    assert_eq!(counter(&pre_window, "end", "minor_faults"), 0);
    // 5,000 instructions (100 to 5,099): 5,000 fetches and, at 1, 2, 1
    // and 0 accesses by instruction, 5,000 accesses.
    assert_eq!(fetches(&pre_window, "end"), 5000);
    assert_eq!(counter(&pre_window, "end", "accesses"), 5000);
}

/// A lackey trace's window counts its `I` lines: the loads and stores of
/// an instruction are on its side of a boundary.
#[test]
fn a_lackey_window_counts_instructions() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::from("==1== Lackey\n");
    // Instruction k: a fetch at 0x400000 + 4k, then k % 3 loads and one
    // store to its own page of data.
    let mut per = Vec::new();
    for k in 0..40u64 {
        text += &format!("I  {:08x},4\n", 0x40_0000 + 4 * k);
        for _ in 0..k % 3 {
            text += &format!(" L {:08x},8\n", 0x60_0000 + 4096 * k);
        }
        text += &format!(" S {:08x},8\n", 0x60_0000 + 4096 * k + 8);
        per.push(k % 3 + 1);
    }
    let input = dir.path().join("lackey.txt");
    std::fs::write(&input, text).unwrap();
    let t = dir.path().join("l.ptl");
    let r = ptlab(&[
        "import",
        "lackey",
        input.to_str().unwrap(),
        "-o",
        t.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let v = replay(&t, &["--prefault", "--warmup", "10", "--limit", "20"]);
    assert_eq!(fetches(&v, "end"), 20, "{v}");
    let want: u64 = per[10..30].iter().sum();
    assert_eq!(counter(&v, "end", "accesses"), want as i64, "{v}");
    assert_eq!(counter(&v, "end", "minor_faults"), 0);
    // Each instruction's data page is new: one data TLB miss each.
    assert_eq!(counter(&v, "end", "tlb_misses"), 20, "{v}");
    // The code page was met in the warm-up.
    assert_eq!(counter(&v, "end", "itlb_misses"), 0, "{v}");
    assert_eq!(counter(&v, "warmup", "itlb_misses"), 1, "{v}");
}

/// A lackey trace of `n` instructions over 300 pages of data and 40 of
/// code (`M` lines among them), imported into `dir/l.ptl`.
fn imported_lackey(dir: &Path, n: u64) -> std::path::PathBuf {
    let mut text = String::from("==7== Lackey, an example Valgrind tool\n");
    let mut x = 777u64;
    for i in 0..n {
        x = x
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        // Blocks of 16 instructions, each block on one of 40 code pages.
        let ip = 0x40_0000 + 4096 * ((i / 16) % 40) + 4 * (i % 16);
        text += &format!("I  {ip:08x},4\n");
        let a = 0x1ff_0000_0000u64 + 4096 * ((x >> 33) % 300) + 8 * ((x >> 20) % 512);
        match i % 5 {
            0 => text += &format!(" L {a:x},8\n"),
            1 => text += &format!(" M {a:x},8\n"),
            2 => text += &format!(" S {a:x},8\n L {:x},4\n", a ^ 0x40),
            _ => {}
        }
    }
    let input = dir.join("lackey.txt");
    std::fs::write(&input, text).unwrap();
    let t = dir.join("l.ptl");
    let r = ptlab(&[
        "import",
        "lackey",
        input.to_str().unwrap(),
        "-o",
        t.to_str().unwrap(),
    ]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    t
}

/// The ChampSim test's checks on a lackey trace: the window is the
/// difference of two replays from the start, counter by counter, and
/// with `--prefault` the whole trace and a window fault nowhere.
#[test]
fn a_lackey_window_counts_only_the_window_and_prefault_shows_no_fault() {
    let dir = tempfile::tempdir().unwrap();
    let t = imported_lackey(dir.path(), 12_000);
    let (w, n) = (3_001u64, 5_000u64);
    let first = replay(&t, &["--limit", &w.to_string()]);
    let both = replay(&t, &["--limit", &(w + n).to_string()]);
    let window = replay(&t, &["--warmup", &w.to_string(), "--limit", &n.to_string()]);
    for c in EVENTS {
        assert_eq!(
            counter(&window, "end", c),
            counter(&both, "end", c) - counter(&first, "end", c),
            "{c}: the window against the difference of two replays"
        );
    }
    // The window met new pages (it faults without --prefault) and the
    // warm-up took the first touches of the pages it met.
    assert!(counter(&window, "end", "minor_faults") > 0, "{window}");
    assert!(counter(&window, "warmup", "minor_faults") > counter(&window, "end", "minor_faults"));

    let pre = replay(&t, &["--prefault"]);
    assert_eq!(counter(&pre, "end", "minor_faults"), 0, "{pre}");
    assert_eq!(fetches(&pre, "end"), 12_000);
    // Loads, modifies (a load and a store), stores with a load: 1, 2, 2,
    // 0, 0 accesses by instruction, each translated once.
    assert_eq!(counter(&pre, "end", "accesses"), 12_000 / 5 * 5);
    // 40 code pages round robin through a 128-entry ITLB: each missed once.
    assert_eq!(counter(&pre, "end", "itlb_misses"), 40, "{pre}");
    let pre_window = replay(
        &t,
        &[
            "--prefault",
            "--warmup",
            &w.to_string(),
            "--limit",
            &n.to_string(),
        ],
    );
    assert_eq!(
        counter(&pre_window, "end", "minor_faults"),
        0,
        "{pre_window}"
    );
    assert_eq!(fetches(&pre_window, "end"), n as i64);
    assert_eq!(
        counter(&pre_window, "end", "itlb_misses"),
        0,
        "{pre_window}"
    );
}

#[test]
fn a_window_past_the_end_is_refused_and_a_time_limit_gives_partial_counters() {
    let dir = tempfile::tempdir().unwrap();
    let (t, _) = imported(dir.path(), 2_000);
    let r = ptlab(&["replay", t.to_str().unwrap(), "--warmup", "2000"]);
    let err = String::from_utf8_lossy(&r.stderr);
    assert_eq!(r.status.code(), Some(2), "{err}");
    assert!(err.contains("the trace has 2000 instructions"), "{err}");
    assert_eq!(err.trim_end().lines().count(), 1, "{err}");

    // A limit of 0 s passes before the first chunk: the counters so far
    // (none), marked partial, exit status 1.
    let r = ptlab(&["replay", t.to_str().unwrap(), "--timeout", "0", "--json"]);
    assert_eq!(r.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&r.stdout).unwrap();
    assert_eq!(v["partial"], true);
    assert_eq!(counter(&v, "end", "accesses"), 0);
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(err.contains("partial"), "{err}");
    let r = ptlab(&["replay", t.to_str().unwrap(), "--timeout", "0"]);
    assert!(String::from_utf8_lossy(&r.stdout).contains("PARTIAL (the time limit was reached)"));
}

#[test]
fn replay_help_names_every_tlb_preset() {
    let r = ptlab(&["replay", "--help"]);
    let help = String::from_utf8_lossy(&r.stdout);
    for p in ["zen4", "icelake", "neoverse-n1", "none"] {
        assert!(help.contains(p), "{p} not in {help}");
    }
}
