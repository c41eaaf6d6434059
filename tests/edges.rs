//! Rough edges of the command line (issue 15): a closed stdout, progress on a
//! non-terminal stderr, "did you mean", sizes in PiB and EiB, errors that name
//! their workload, and kernel placement of huge sparse regions.

use std::io::Read;
use std::process::{Command, Output, Stdio};

fn ptlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .env("PTLAB_COSTS", "xeon-kvm-2026")
        .args(args)
        .output()
        .expect("the binary runs")
}

/// Exit status 2 and one line on stderr containing every needle.
fn bad_input(args: &[&str], needles: &[&str]) -> String {
    let out = ptlab(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: no {n:?} in {err}");
    }
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    err
}

/// Runs ptlab with stdout a pipe whose reading end is closed before the
/// program can write (it is closed right after the spawn returns, which is
/// after exec, before `main` prints anything).
fn with_closed_stdout(args: &[&str]) -> (Option<i32>, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .env("PTLAB_COSTS", "xeon-kvm-2026")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    drop(child.stdout.take());
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("piped")
        .read_to_string(&mut err)
        .expect("stderr is text");
    let status = child.wait().expect("the child ends");
    (status.code(), err)
}

#[test]
fn a_closed_stdout_ends_quietly() {
    for args in [
        &["workloads", "list"][..],
        &["workloads", "list", "--json"],
        &["workloads", "show", "pagefault"],
        &["geometry", "list"],
        &["geometry", "show", "x86-64-5l"],
        &["explain", "0x7fdbef789000"],
        &["run", "anon-write", "--json"],
        &["run", "anon-write", "--csv"],
        &["run", "anon-write"],
    ] {
        let (code, err) = with_closed_stdout(args);
        assert_eq!(code, Some(0), "{args:?}: {err}");
        assert!(err.is_empty(), "{args:?}: nothing on stderr, got {err}");
    }
}

/// A workload file in a fresh temporary directory.
fn workload_file(toml: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().expect("a temporary directory");
    let path = dir.path().join("w.toml");
    std::fs::write(&path, toml).expect("written");
    let p = path.to_string_lossy().into_owned();
    (dir, p)
}

#[cfg(target_os = "linux")]
#[test]
fn a_long_run_logs_plain_progress_lines_to_a_non_terminal_stderr() {
    // Two kernel runs that sleep 1.5 s each (no CPU spent), with stderr a
    // pipe: plain lines, no bar.
    let (_dir, file) =
        workload_file("name = \"sleepy\"\n[[thread]]\nop = [ { sleep = \"1500ms\" } ]\n");
    let out = ptlab(&[
        "run",
        &file,
        "--backend",
        "kernel",
        "--repeat",
        "2",
        "--warmup",
        "0",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    // Lines come at updates (after each run) that are due: at least 2 s
    // after the start and after the previous line. Whatever the machine's
    // load, the second update (at 3 s or later) is due if the first was not.
    let lines: Vec<&str> = err.lines().filter(|l| l.starts_with("run ")).collect();
    assert!(!lines.is_empty(), "a line after 2 s: {err}");
    let mut last: Option<u64> = None;
    for l in &lines {
        let (head, secs) = l
            .strip_suffix(" s elapsed")
            .and_then(|t| t.rsplit_once(", "))
            .unwrap_or_else(|| panic!("{l}"));
        let secs: u64 = secs.parse().unwrap_or_else(|_| panic!("{l}"));
        assert!(
            head == format!("run 1/2 {file} (kernel): 50%")
                || head == format!("run 2/2 {file} (kernel): 100%"),
            "{l}"
        );
        assert!(secs >= 2, "not before 2 s: {l}");
        assert!(last.is_none_or(|t| secs >= t + 2), "2 s apart: {err}");
        last = Some(secs);
    }
    assert!(!err.contains('\r'), "no bar redraws in a log: {err:?}");
}

/// Exit status 1 (a failed run) and stderr containing every needle.
fn run_error(args: &[&str], needles: &[&str]) {
    let out = ptlab(args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{args:?}: {err}");
    for n in needles {
        assert!(err.contains(n), "{args:?}: no {n:?} in {err}");
    }
}

#[test]
fn errors_of_a_run_name_the_workload() {
    // Under a 64 KiB base page the workload's 4 KiB-aligned madvise is
    // refused by the model (EINVAL), an error that is about one workload.
    let arm = ["--geometry", "arm64-64k-48"];
    run_error(
        &[&["run", "pt-reclaim-partial"][..], &arm].concat(),
        &["workload \"pt-reclaim-partial\": ", "EINVAL"],
    );
    run_error(
        &[
            "compare",
            "pt-reclaim-partial",
            "--config",
            "geometry=arm64-64k-48",
        ],
        &["workload \"pt-reclaim-partial\": "],
    );
}

#[cfg(target_os = "linux")]
#[test]
fn errors_of_validate_name_the_workload_under_way() {
    // The first workload agrees or differs; the second fails on the model:
    // the error must name the second, not the first or none.
    let out = ptlab(&[
        "validate",
        "anon-write",
        "pt-reclaim-partial",
        "--geometry",
        "arm64-64k-48",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("workload \"pt-reclaim-partial\": "), "{err}");
    assert!(!err.contains("anon-write"), "{err}");
}

#[test]
fn misspelt_names_get_a_suggestion() {
    bad_input(
        &["run", "pagefalt"],
        &["\"pagefalt\"", "did you mean \"pagefault\"?"],
    );
    bad_input(
        &["workloads", "show", "ebizy"],
        &["did you mean \"ebizzy\"?"],
    );
    bad_input(
        &["run", "pagefault", "--geometry", "x86-64-4"],
        &["did you mean \"x86-64-4l\"?"],
    );
    bad_input(
        &["run", "pagefault", "--tlb", "zen44"],
        &["did you mean \"zen4\"?"],
    );
    bad_input(
        &["compare", "pagefault", "--config", "geometry=riscv-sv93"],
        &[
            "--config \"geometry=riscv-sv93\"",
            "did you mean \"riscv-sv39\"?",
        ],
    );
    bad_input(
        &["explain", "--geometry", "x86-64-5", "0x1000"],
        &["did you mean \"x86-64-5l\"?"],
    );
    bad_input(
        &["geometry", "show", "arm64-4k48"],
        &["did you mean \"arm64-4k-48\"?"],
    );
    bad_input(
        &["validate", "anon-wrte"],
        &["did you mean \"anon-write\"?"],
    );
}

#[test]
fn sizes_take_pib_and_eib() {
    let w = |size: &str| {
        format!(
            "name = \"vast\"\n[[thread]]\nop = [\n  {{ mmap = \"vast\", size = \"{size}\", noreserve = true }},\n  {{ touch = \"vast\", access = \"write\", count = 1 }},\n]\n"
        )
    };
    // 1 PiB fits the 56-bit user half of a 5-level space: one page touched.
    let (_d1, pib) = workload_file(&w("1PiB"));
    let out = ptlab(&["run", &pib, "--geometry", "x86-64-5l", "--json"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let end = &v["marks"].as_array().expect("marks").last().expect("end")["counters"];
    assert_eq!(end["minor_faults"], 1, "{v}");
    // 1 EiB is a size, but no user space here is that large.
    let (_d2, eib) = workload_file(&w("1EiB"));
    bad_input(
        &["run", &eib, "--geometry", "x86-64-5l"],
        &["region \"vast\" does not fit"],
    );
    // 16 EiB is 2^64 bytes: not a size at all.
    let (_d3, over) = workload_file(&w("16EiB"));
    bad_input(&["run", &over], &["\"16EiB\"", "fits in 64 bits"]);
}

#[cfg(target_os = "linux")]
#[test]
fn the_kernel_runs_a_64_tib_noreserve_region_without_an_addr() {
    // Placed by the rule alone, 64 TiB used to run through the child's
    // executable at 85 TiB. Four pages are touched, 1 TiB apart.
    let (_d, file) = workload_file(
        "name = \"vast\"\n[[thread]]\nop = [\n  { mmap = \"vast\", size = \"64TiB\", noreserve = true },\n  { touch = \"vast\", access = \"write\", stride = \"1TiB\", count = 4 },\n  { mark = \"touched\" },\n]\n",
    );
    for backend in ["kernel", "model"] {
        let out = ptlab(&["run", &file, "--backend", backend, "--json"]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{backend}: {err}");
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
        let touched = &v["marks"][0];
        assert_eq!(touched["name"], "touched");
        assert_eq!(touched["counters"]["minor_faults"], 4, "{backend}: {v}");
        assert_eq!(touched["counters"]["rss_anon_kb"], 16, "{backend}: {v}");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_mapping_the_kernel_cannot_make_is_bad_input_naming_the_region() {
    // 80 to 96 TiB holds the child's executable (Linux loads PIE programs
    // at 2/3 of the 47-bit window, 85.3 TiB, plus up to 1 TiB of ASLR).
    // The placement rule accepts an explicit `addr` there; the kernel
    // backend must refuse it before running, as bad input.
    let (_d1, on_exe) = workload_file(
        "name = \"x\"\n[[thread]]\nop = [ { mmap = \"onexe\", size = \"16TiB\", noreserve = true, addr = 0x500000000000 } ]\n",
    );
    bad_input(
        &["run", &on_exe, "--backend", "kernel"],
        &["region \"onexe\"", "the program's own mapping"],
    );
    // Without noreserve, 64 TiB is more than heuristic overcommit grants:
    // mmap fails with ENOMEM.
    let heuristic =
        std::fs::read_to_string("/proc/sys/vm/overcommit_memory").is_ok_and(|s| s.trim() == "0");
    if heuristic {
        let (_d2, committed) = workload_file(
            "name = \"x\"\n[[thread]]\nop = [ { mmap = \"committed\", size = \"64TiB\" } ]\n",
        );
        bad_input(
            &["run", &committed, "--backend", "kernel"],
            &[
                "region \"committed\"",
                "Cannot allocate memory",
                "noreserve",
            ],
        );
    }
}

#[test]
fn the_model_never_heads_its_own_time_per_access_as_a_latency() {
    let (_dir, path) = workload_file(
        r#"
name = "lat"
description = "a small touch with a latency histogram"
[[thread]]
op = [
  { mmap = "a", size = "4MiB" },
  { touch = "a", latency = true },
  { mark = "touched" },
]
"#,
    );
    // The real-thread executor's histogram is ptlab's own time.
    let out = ptlab(&["run", &path, "--config", "executor=threads"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("ptlab's own time per modeled access before mark \"touched\""),
        "{text}"
    );
    assert!(!text.contains("latency per access"), "{text}");
    // The virtual-time executor's (the default) is the predicted cost of
    // each access, headed as a prediction, not as a measured latency.
    let out = ptlab(&["run", &path]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("predicted time per access before mark \"touched\""),
        "{text}"
    );
    assert!(!text.contains("latency per access"), "{text}");
    assert!(!text.contains("ptlab's own time"), "{text}");
}

#[test]
fn a_cost_file_prices_the_run_and_a_bad_one_exits_2_naming_it() {
    let (_dir, path) = workload_file(
        "name = \"c\"\n[[thread]]\nop = [ { mmap = \"a\", size = \"64KiB\" }, { touch = \"a\", access = \"write\" } ]\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let costs = dir.path().join("costs.toml");
    let costs = costs.to_str().unwrap();
    // 16 write faults at 1 ms each (and every other cost built in).
    std::fs::write(
        costs,
        "format = 1\n[costs.\"fault.anon_write\"]\nns = 1000000.0\nlo = 500000.0\nhi = 2000000.0\nprovenance = \"assumed\"\nsource = \"a test\"\n",
    )
    .unwrap();
    let out = ptlab(&["run", &path, "--costs", costs, "--thp", "never"]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(&format!("from costs {costs}")), "{text}");
    assert!(text.contains("predicted 16.0 ms [8.0"), "{text}");
    let missing = dir.path().join("none.toml");
    bad_input(
        &["run", &path, "--costs", missing.to_str().unwrap()],
        &["costs", "none.toml"],
    );
    std::fs::write(
        costs,
        "format = 1\n[costs.\"fault.anon_wrte\"]\nns = 1.0\nlo = 1.0\nhi = 1.0\nprovenance = \"measured\"\n",
    )
    .unwrap();
    bad_input(
        &["compare", &path, "--config", "thp=never", "--costs", costs],
        &["fault.anon_wrte", "did you mean \"fault.anon_write\""],
    );
}
