//! `ptlab trace` as a user meets it: a real program (`sort`) traced under
//! QEMU user mode with the project's plugin, filtered and not, both traces
//! replayed with every counter equal; bad input refused with exit status 2,
//! leaving nothing behind.

use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

fn ptlab_in(tmp: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .env("PTLAB_COSTS", "xeon-kvm-2026")
        .args(args)
        .env("TMPDIR", tmp)
        .output()
        .expect("the binary runs")
}

fn nothing_in(dir: &Path) {
    let left: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Lines of pseudo-random numbers (an LCG: the same file every run).
fn numbers(path: &Path, n: usize) {
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    let mut s = String::new();
    for _ in 0..n {
        x = x.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        s.push_str(&format!("{}\n", x >> 40));
    }
    std::fs::write(path, s).unwrap();
}

fn replay(tmp: &Path, trace: &Path) -> Value {
    let r = ptlab_in(tmp, &["replay", trace.to_str().unwrap(), "--json"]);
    assert!(r.status.success(), "{}", String::from_utf8_lossy(&r.stderr));
    serde_json::from_slice(&r.stdout).unwrap()
}

fn header(trace: &Path) -> trace::Header {
    trace::TraceReader::open(trace).unwrap().header().clone()
}

#[test]
fn sort_traced_with_and_without_the_filter_replays_with_every_counter_equal() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let input = dir.path().join("numbers.txt");
    numbers(&input, 3000);
    let (f, u) = (dir.path().join("f.ptl"), dir.path().join("u.ptl"));
    for (out, extra) in [(&f, None), (&u, Some("--no-filter"))] {
        let mut args = vec!["trace", "-o", out.to_str().unwrap()];
        args.extend(extra);
        args.extend(["--", "sort", input.to_str().unwrap()]);
        let r = ptlab_in(tmp.path(), &args);
        let err = String::from_utf8_lossy(&r.stderr);
        assert!(r.status.success(), "{err}");
        // The program's own output passes through: sorted lines.
        let lines: Vec<&str> = std::str::from_utf8(&r.stdout).unwrap().lines().collect();
        assert_eq!(lines.len(), 3000);
        assert!(lines.windows(2).all(|w| w[0] <= w[1]));
    }
    let (hf, hu) = (header(&f), header(&u));
    assert_eq!(hf.source, "trace");
    // The same run (randomization off): the same accesses, differently
    // written.
    assert_eq!(hf.observed["accesses"], hu.observed["accesses"]);
    assert_eq!(hu.observed["hits_counted"], 0);
    assert!(hf.observed["hits_counted"] > 0);
    assert!(hf.observed["accesses_written"] < hu.observed["accesses_written"]);
    assert!(hf.observed["memory_calls"] > 0);
    assert_eq!(hf.observed["accesses_unattributed"], 0);
    let (rf, ru) = (replay(tmp.path(), &f), replay(tmp.path(), &u));
    let (mf, mu) = (&rf["marks"], &ru["marks"]);
    assert_eq!(mf.as_array().unwrap().len(), mu.as_array().unwrap().len());
    for (a, b) in mf.as_array().unwrap().iter().zip(mu.as_array().unwrap()) {
        let (ca, cb) = (
            a["counters"].as_object().unwrap(),
            b["counters"].as_object().unwrap(),
        );
        assert_eq!(ca.len(), cb.len());
        for (name, v) in ca {
            if name == "model_wall_ns" {
                continue;
            }
            assert_eq!(Some(v), cb.get(name), "counter {name}");
        }
        // Every access of the run reached the model (which counts a few
        // of its own besides, for the calls it replays).
        assert!(ca["accesses"].as_i64().unwrap() >= hf.observed["accesses"]);
        assert!(ca["minor_faults"].as_i64().unwrap() > 0);
    }
    nothing_in(tmp.path());
}

#[test]
fn bad_commands_exit_2_and_leave_nothing_behind() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let out = dir.path().join("t.ptl");
    let o = out.to_str().unwrap();
    let script = dir.path().join("s.sh");
    std::fs::write(&script, "#!/bin/sh\necho hi\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let missing_dir = dir.path().join("no/such/dir/t.ptl");
    for (args, needle) in [
        (
            vec!["trace", "-o", o, "--", "no-such-program-ptlab"],
            "no-such-program-ptlab: command not found",
        ),
        (
            vec!["trace", "-o", o, "--", "./no/such/path"],
            "command not found",
        ),
        (
            vec!["trace", "-o", o, "--", script.to_str().unwrap()],
            "not an ELF program",
        ),
        (
            vec!["trace", "-o", missing_dir.to_str().unwrap(), "--", "true"],
            "does not exist",
        ),
    ] {
        let r = ptlab_in(tmp.path(), &args);
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim_end().lines().count(), 1, "one line: {err}");
    }
    nothing_in(tmp.path());
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != "s.sh")
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A traced shell that forks one program and then executes another: the
/// trace is the shell's (up to the execve), complete and replayable; the
/// summary and the header say that a child was started and that a program
/// was executed, neither traced; both programs really ran.
#[test]
fn a_shell_that_forks_and_executes_is_traced_up_to_its_exec_and_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let input = dir.path().join("numbers.txt");
    numbers(&input, 500);
    let (first, second) = (dir.path().join("a.txt"), dir.path().join("b.txt"));
    let out = dir.path().join("sh.ptl");
    // The shell forks for the first command and executes the second in
    // its own place.
    let script = format!(
        "/usr/bin/sort -o {} {i}; exec /usr/bin/sort -o {} {i}",
        first.display(),
        second.display(),
        i = input.display()
    );
    let r = ptlab_in(
        tmp.path(),
        &[
            "trace",
            "-o",
            out.to_str().unwrap(),
            "--",
            "/bin/sh",
            "-c",
            &script,
        ],
    );
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(r.status.success(), "{err}");
    assert!(err.contains("started 1 child process(es)"), "{err}");
    assert!(err.contains("executed /usr/bin/sort"), "{err}");
    // Both ran (the child under QEMU, the exec'd one natively).
    for f in [&first, &second] {
        assert_eq!(std::fs::read_to_string(f).unwrap().lines().count(), 500);
    }
    let h = header(&out);
    assert_eq!(h.observed["child_processes"], 1);
    assert_eq!(h.observed["execs"], 1);
    assert!(h.notes.iter().any(|n| n.contains("child process")));
    assert!(h.notes.iter().any(|n| n.contains("executed /usr/bin/sort")));
    // The shell's own accesses are there and replay.
    assert!(h.observed["accesses"] > 0);
    let v = replay(tmp.path(), &out);
    assert!(v["marks"][0]["counters"]["minor_faults"].as_i64().unwrap() > 0);
    nothing_in(tmp.path());
}
