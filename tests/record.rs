//! `ptlab record` and `ptlab replay` as a user meets them: a real program
//! recorded, its trace replayed under this host's geometry and another,
//! and bad input refused with exit status 2, leaving nothing behind.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn ptlab(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .env("PTLAB_COSTS", "xeon-kvm-2026")
        .args(args)
        .output()
        .expect("the binary runs")
}

fn bad_input(args: &[&str], needle: &str) -> String {
    let out = ptlab(args);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(needle), "{args:?}: {err}");
    assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    err
}

/// The number after `label` in the recorder's summary line.
fn figure(summary: &str, before: &str) -> u64 {
    let i = summary
        .find(before)
        .unwrap_or_else(|| panic!("{before:?} in {summary}"));
    summary[..i]
        .split_whitespace()
        .last()
        .unwrap()
        .replace(',', "")
        .parse()
        .unwrap()
}

fn end_counter(doc: &Value, name: &str) -> i64 {
    let marks = doc["marks"].as_array().unwrap();
    marks.last().unwrap()["counters"][name].as_i64().unwrap()
}

fn no_partial_left(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().ends_with(".partial"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_recorded_program_replays_with_the_faults_the_kernel_saw() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("dd.ptl");
    let o = out.to_str().unwrap();
    // dd reads 16 MiB into a fresh buffer: 4,096 faults taken by the
    // kernel writing into it, plus the program's own start.
    let r = ptlab(&[
        "record",
        "-o",
        o,
        "--",
        "dd",
        "if=/dev/zero",
        "of=/dev/null",
        "bs=16M",
        "count=1",
    ]);
    let summary = String::from_utf8_lossy(&r.stderr).into_owned();
    assert!(r.status.success(), "{summary}");
    no_partial_left(dir.path());
    let recorded = figure(&summary, "faults recorded");
    let kernel = figure(&summary, "minor +");
    assert!(recorded >= 4096, "{summary}");
    // What the recording could not see (faults inside exec, a few
    // dozen) is small and said.
    assert!(recorded <= kernel && kernel - recorded < 200, "{summary}");

    let replay = |geometry: &str| -> Value {
        let r = ptlab(&[
            "replay",
            o,
            "--geometry",
            geometry,
            "--thp",
            "never",
            "--json",
        ]);
        assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
        serde_json::from_slice(&r.stdout).unwrap()
    };
    let host = replay("x86-64-4l");
    let faults = end_counter(&host, "minor_faults") as u64;
    // The model takes a fault where the kernel did, or maps the page
    // earlier by fault-around on file mappings: never more faults.
    assert!(
        faults <= recorded && faults * 100 >= recorded * 95,
        "replay {faults}, recorded {recorded}"
    );
    // Under 64 KiB pages the 16 MiB buffer faults once per 64 KiB.
    let big = replay("riscv-sv39-64k");
    let big_faults = end_counter(&big, "minor_faults") as u64;
    assert!(big_faults < faults / 4, "{big_faults} vs {faults}");
}

#[test]
fn record_refuses_what_cannot_run_and_leaves_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("x.ptl");
    let o = out.to_str().unwrap();
    bad_input(
        &["record", "-o", o, "--", "no-such-program-ptlab"],
        "command not found",
    );
    assert!(!out.exists());
    no_partial_left(dir.path());
    let missing = dir.path().join("nope/x.ptl");
    bad_input(
        &["record", "-o", missing.to_str().unwrap(), "--", "true"],
        "does not exist",
    );
}

#[test]
fn replay_refuses_a_bad_trace_with_its_byte_offset() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.ptl");
    let o = out.to_str().unwrap();
    let r = ptlab(&["record", "-o", o, "--", "true"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let bytes = std::fs::read(&out).unwrap();

    let cut = dir.path().join("cut.ptl");
    std::fs::write(&cut, &bytes[..bytes.len() - 30]).unwrap();
    bad_input(&["replay", cut.to_str().unwrap()], "cut short");

    let mut newer = bytes.clone();
    newer[8] = 9;
    let newer_p = dir.path().join("newer.ptl");
    std::fs::write(&newer_p, &newer).unwrap();
    bad_input(
        &["replay", newer_p.to_str().unwrap()],
        "byte 8: trace format version 9",
    );

    let text = dir.path().join("w.toml");
    std::fs::write(&text, "name = \"x\"\n").unwrap();
    bad_input(
        &["replay", text.to_str().unwrap()],
        "byte 0: not a ptlab trace",
    );
    bad_input(
        &["replay", dir.path().join("gone.ptl").to_str().unwrap()],
        "gone.ptl",
    );

    // A trace runs on the model only.
    bad_input(&["compare", o, "--config", "backend=kernel"], "model only");
}

/// A recorded shell that forks one program and then executes another in
/// its own place: the exec'd program's faults are recorded (the recording
/// follows the process through execve, its regions start afresh); the
/// forked child's are counted, not recorded, and the summary says so.
#[test]
fn a_shell_that_forks_and_executes_records_the_exec_and_counts_the_child() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("sh.ptl");
    let (a, b) = (dir.path().join("a"), dir.path().join("b"));
    // dd writes into a fresh 16 MiB buffer: 4,096 faults in whichever
    // process runs it.
    let dd = |o: &Path| {
        format!(
            "/bin/dd if=/dev/zero of={} bs=16M count=1 status=none",
            o.display()
        )
    };
    let script = format!("{}; exec {}", dd(&a), dd(&b));
    let r = ptlab(&[
        "record",
        "-o",
        out.to_str().unwrap(),
        "--",
        "/bin/sh",
        "-c",
        &script,
    ]);
    let summary = String::from_utf8_lossy(&r.stderr).into_owned();
    assert!(r.status.success(), "{summary}");
    for f in [&a, &b] {
        assert_eq!(std::fs::metadata(f).unwrap().len(), 16 << 20);
    }
    // The exec'd dd's faults are the recording's; the child's are not.
    let recorded = figure(&summary, "faults recorded");
    assert!(recorded >= 4096, "{summary}");
    assert!(
        summary.contains("in 1 child process(es) not recorded"),
        "{summary}"
    );
    let other = figure(&summary, "in 1 child process(es)");
    assert!(other >= 4096, "{summary}");
    let h = trace::TraceReader::open(&out).unwrap().header().clone();
    assert!(h.observed["faults_other_processes"] >= 4096);
    no_partial_left(dir.path());
}

/// The `key=value` figures of `record --only`'s diagnostic line.
fn diagnostic(part: &str, dir: &Path, cmd: &[&str]) -> std::collections::HashMap<String, String> {
    let out = dir.join(format!("{part}.ptl"));
    let mut args = vec!["record", "--only", part, "-o", out.to_str().unwrap(), "--"];
    args.extend_from_slice(cmd);
    let r = ptlab(&args);
    let err = String::from_utf8_lossy(&r.stderr).into_owned();
    assert!(r.status.success(), "{part}: {err}");
    let line = err
        .lines()
        .find(|l| l.starts_with("diagnostic "))
        .unwrap_or_else(|| panic!("{part}: no diagnostic line in {err}"));
    line.split_whitespace()
        .skip(1)
        .map(|kv| {
            let (k, v) = kv.split_once('=').unwrap();
            (k.to_string(), v.to_string())
        })
        .collect()
}

#[test]
fn each_part_of_the_recorder_runs_alone_with_its_own_counts() {
    let dir = tempfile::tempdir().unwrap();
    // 4,096 faults taken by the kernel filling dd's buffer, a few memory
    // calls of its start.
    let dd = ["dd", "if=/dev/zero", "of=/dev/null", "bs=16M", "count=1"];
    let n = |d: &std::collections::HashMap<String, String>, k: &str| -> u64 {
        d[k].parse().unwrap_or_else(|_| panic!("{k}={}", d[k]))
    };
    let native = diagnostic("native", dir.path(), &dd);
    assert_eq!(n(&native, "fault_events"), 0);
    assert_eq!(n(&native, "calls"), 0);
    assert!(n(&native, "minflt") >= 4096);
    let calls = diagnostic("calls", dir.path(), &dd);
    assert_eq!(n(&calls, "fault_events"), 0);
    assert!(n(&calls, "calls") > 0);
    // Sampled or counted, the tracepoints see the program's faults from
    // its exec on: all but those of the exec itself (a few dozen).
    for part in ["faults", "faults-counting", "all"] {
        let d = diagnostic(part, dir.path(), &dd);
        let (events, minflt) = (n(&d, "fault_events"), n(&d, "minflt"));
        assert!(
            events >= 4096 && events <= minflt && minflt - events < 200,
            "{part}: {d:?}"
        );
        assert_eq!(n(&d, "lost"), 0, "{part}");
        assert_eq!(n(&d, "calls") > 0, part == "all", "{part}: {d:?}");
    }
    // The software event counts faults taken in kernel mode on the
    // program's addresses too (dd's buffer is filled by read()) where this
    // user may see kernel-mode events, as the tracepoints do; elsewhere only
    // the program's own.
    let sw = diagnostic("faults-software", dir.path(), &dd);
    let (events, minflt) = (n(&sw, "fault_events"), n(&sw, "minflt"));
    let paranoid: i32 = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
        .unwrap_or(2);
    // SAFETY: geteuid has no memory effects.
    if unsafe { libc::geteuid() } == 0 || paranoid <= 1 {
        assert!(
            events >= 4096 && events <= minflt && minflt - events < 200,
            "{sw:?}"
        );
    } else {
        assert!(events > 0 && events < 4096, "{sw:?}");
    }
}

/// The inode of a pipe descriptor (its /proc link reads `pipe:[N]`).
fn pipe_of(link: &Path) -> Option<String> {
    let target = std::fs::read_link(link).ok()?;
    let t = target.to_string_lossy();
    t.starts_with("pipe:").then(|| t.into_owned())
}

#[test]
fn the_process_that_releases_the_events_keeps_none_of_the_recorders_output() {
    use std::os::fd::AsRawFd;
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.ptl");
    let mut child = Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .env("PTLAB_COSTS", "xeon-kvm-2026")
        .args(["record", "-o", out.to_str().unwrap(), "--", "true"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let fd = child.stdout.as_ref().unwrap().as_raw_fd();
    let pipe = pipe_of(&Path::new("/proc/self/fd").join(fd.to_string())).unwrap();
    assert!(child.wait().unwrap().success());
    // The recorder has exited; the grandchild that closes its fault
    // events may still be waiting on the kernel, but must not hold the
    // recorder's stdout (a caller reading it would wait too).
    let me = std::process::id().to_string();
    for proc_dir in std::fs::read_dir("/proc").unwrap().filter_map(|e| e.ok()) {
        let name = proc_dir.file_name().to_string_lossy().into_owned();
        if name == me || !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(fds) = std::fs::read_dir(proc_dir.path().join("fd")) else {
            continue;
        };
        for f in fds.filter_map(|e| e.ok()) {
            assert_ne!(
                pipe_of(&f.path()).as_deref(),
                Some(pipe.as_str()),
                "process {name} holds the recorder's stdout"
            );
        }
    }
    assert!(out.exists());
}

#[test]
fn a_file_mapped_then_closed_at_once_keeps_its_name() {
    // The dynamic loader maps libc from a descriptor and closes it right
    // after: the recorder reads the name while the program is stopped at
    // the mmap's exit, before letting it go on.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("true.ptl");
    let r = ptlab(&["record", "-o", out.to_str().unwrap(), "--", "true"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let mut reader = trace::TraceReader::open(&out).unwrap();
    let (mut records, mut chunk) = (Vec::new(), Vec::new());
    while reader.next_chunk(&mut chunk).unwrap() {
        records.append(&mut chunk);
    }
    let names: Vec<&str> = records
        .iter()
        .filter_map(|r| match r {
            trace::Record::Map(m) => Some(m.name.as_str()),
            _ => None,
        })
        .collect();
    assert!(
        names.iter().any(|n| n.contains("libc.so")),
        "no Map names libc: {names:?}"
    );
}

/// `ptlab` with `PTLAB_TRACEFS` set (the recorder's diagnostic: `none`
/// records as a host without tracefs does, whatever this one has).
fn ptlab_env(args: &[&str], tracefs: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .args(args)
        .env("PTLAB_TRACEFS", tracefs)
        .output()
        .expect("the binary runs")
}

/// Every record of the trace at `path`.
fn all_records(path: &Path) -> Vec<trace::Record> {
    let mut r = trace::TraceReader::open(path).unwrap();
    let mut all = Vec::new();
    let mut chunk = Vec::new();
    while r.next_chunk(&mut chunk).unwrap() {
        all.append(&mut chunk);
    }
    all
}

/// A file of `n` lines of pseudo-random keys for `sort`.
fn lines_file(dir: &Path, n: u64) -> std::path::PathBuf {
    let path = dir.join("in.txt");
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let mut text = String::new();
    for _ in 0..n {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        text.push_str(&format!("{x:016x} {}\n", "x".repeat((x % 41) as usize)));
    }
    std::fs::write(&path, text).unwrap();
    path
}

#[test]
fn without_tracefs_fault_kinds_are_inferred_and_the_trace_replays_under_two_geometries() {
    let dir = tempfile::tempdir().unwrap();
    let input = lines_file(dir.path(), 50_000);
    let out = dir.path().join("sort.ptl");
    let o = out.to_str().unwrap();
    let r = ptlab_env(
        &[
            "record",
            "-o",
            o,
            "--",
            "sort",
            input.to_str().unwrap(),
            "-o",
            "/dev/null",
        ],
        "none",
    );
    let summary = String::from_utf8_lossy(&r.stderr).into_owned();
    assert!(r.status.success(), "{summary}");
    no_partial_left(dir.path());
    let recorded = figure(&summary, "faults recorded");
    // Every recorded fault's kind was inferred, and the summary says so.
    assert_eq!(figure(&summary, "faults (no access"), recorded, "{summary}");
    assert!(summary.contains("PTLAB_TRACEFS=none"), "{summary}");
    let h = trace::TraceReader::open(&out).unwrap().header().clone();
    assert_eq!(h.observed["faults_inferred"], recorded as i64);
    let reads = h.observed["faults_inferred_reads"];
    assert!(reads > 0 && reads < recorded as i64, "{:?}", h.observed);
    assert!(
        h.notes
            .iter()
            .any(|n| n.starts_with("fault kinds inferred")),
        "{:?}",
        h.notes
    );

    // Rule 1 in the trace itself: no fault is a write into a region its
    // Map made without write permission (sort makes no mprotect after its
    // loader's, which the trace holds as Protect records: those are
    // followed too).
    let mut prot: std::collections::HashMap<u32, trace::Prot> = Default::default();
    let mut protected: std::collections::HashSet<u32> = Default::default();
    let mut checked = 0;
    for rec in all_records(&out) {
        match rec {
            trace::Record::Map(m) => {
                prot.insert(m.id, m.prot);
            }
            trace::Record::Protect { id, .. } => {
                protected.insert(id);
            }
            trace::Record::Fault { id, write, .. }
                if !protected.contains(&id) && !prot[&id].writable() =>
            {
                assert!(!write, "a write fault into read-only region {id}");
                checked += 1;
            }
            _ => {}
        }
    }
    assert!(checked > 0, "the libraries' read-only pages fault");

    // The replay runs to the end under both geometries (issue 28: it
    // stopped at a write into a read-only library page).
    let c = ptlab(&[
        "compare",
        o,
        "--config",
        "geometry=x86-64-4l",
        "--config",
        "geometry=x86-64-5l",
    ]);
    let err = String::from_utf8_lossy(&c.stderr);
    assert_eq!(c.status.code(), Some(0), "{err}");
}

#[test]
fn a_trace_that_recorded_every_fault_as_a_write_replays_to_its_end() {
    // What a recorder without the inference wrote on a host without
    // tracefs: every fault a write, a note saying the kinds are unknown.
    let dir = tempfile::tempdir().unwrap();
    let input = lines_file(dir.path(), 2_000);
    let recorded = dir.path().join("sort.ptl");
    let r = ptlab_env(
        &[
            "record",
            "-o",
            recorded.to_str().unwrap(),
            "--",
            "sort",
            input.to_str().unwrap(),
            "-o",
            "/dev/null",
        ],
        "none",
    );
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    let mut header = trace::TraceReader::open(&recorded)
        .unwrap()
        .header()
        .clone();
    header.observed.remove("faults_inferred");
    header.notes = vec!["fault kinds unknown (no access to the exceptions tracepoints): every recorded fault replays as a write".into()];
    let old = dir.path().join("old.ptl");
    let mut w = trace::TraceWriter::create(&old, &header).unwrap();
    for rec in all_records(&recorded) {
        let rec = match rec {
            trace::Record::Fault { id, offset, .. } => trace::Record::Fault {
                id,
                offset,
                write: true,
            },
            other => other,
        };
        w.push(&rec).unwrap();
    }
    w.finish().unwrap();
    let c = ptlab(&[
        "compare",
        old.to_str().unwrap(),
        "--config",
        "geometry=x86-64-4l",
        "--config",
        "geometry=x86-64-5l",
    ]);
    let err = String::from_utf8_lossy(&c.stderr);
    assert_eq!(c.status.code(), Some(0), "{err}");
    // Each configuration says what it went past: writes into read-only
    // pages, replayed as reads.
    for label in ["x86-64-4l", "x86-64-5l"] {
        let line = err
            .lines()
            .find(|l| l.contains(label) && l.contains("the model refused"))
            .unwrap_or_else(|| panic!("{label}: {err}"));
        assert!(line.contains("replayed as reads"), "{line}");
        assert!(line.contains("first: record "), "{line}");
    }
}
