//! SIGINT and SIGTERM in the middle of the work that leaves files behind
//! (crate interrupt): the kernel backend's region files and the recorder's
//! partial trace are removed, the processes ptlab started are ended, one
//! line on stderr says what was interrupted, and the exit status is 128 +
//! the signal.

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Sends `sig` to ptlab `delay` after starting it with `args` (TMPDIR set
/// to `tmp`), and returns its exit status and stderr.
fn interrupted(args: &[&str], tmp: &Path, delay: Duration, sig: i32) -> (Option<i32>, String) {
    let child = Command::new(env!("CARGO_BIN_EXE_ptlab"))
        .args(args)
        .env("TMPDIR", tmp)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    std::thread::sleep(delay);
    // SAFETY: kill has no memory effects; the pid is our unreaped child.
    unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A fresh directory on the disk the build is on (not tmpfs, so the kernel
/// backend makes its files there rather than in /var/tmp), removed at the
/// end.
fn fresh_tmp() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

/// Whether a process whose arguments include `arg` is alive.
fn running_with(arg: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().any(|e| {
        let p = e.unwrap().path().join("cmdline");
        std::fs::read(p).is_ok_and(|c| c.split(|&b| b == 0).any(|a| a == arg.as_bytes()))
    })
}

#[test]
fn sigint_one_second_into_a_kernel_run_leaves_no_file() {
    let tmp = fresh_tmp();
    // writeback maps an 8 MiB file region and runs for several seconds.
    let (code, err) = interrupted(
        &["run", "writeback", "--backend", "kernel"],
        tmp.path(),
        Duration::from_secs(1),
        libc::SIGINT,
    );
    assert_eq!(code, Some(130), "{err}");
    let line = err.trim_end().lines().last().unwrap_or_default();
    assert!(
        line.starts_with("ptlab: interrupted by SIGINT: the kernel run of workload writeback"),
        "{err}"
    );
    assert!(line.contains("region files removed"), "{line}");
    assert_eq!(entries(tmp.path()), Vec::<String>::new());
}

#[test]
fn sigterm_during_a_recording_removes_the_partial_trace_and_ends_the_program() {
    let tmp = fresh_tmp();
    let out = tmp.path().join("t.ptl");
    // A program that runs far longer than the test: its argument names it.
    let mark = "31.4159";
    let started = Instant::now();
    let (code, err) = interrupted(
        &["record", "-o", out.to_str().unwrap(), "--", "sleep", mark],
        tmp.path(),
        Duration::from_millis(700),
        libc::SIGTERM,
    );
    assert!(started.elapsed() < Duration::from_secs(20), "{err}");
    assert_eq!(code, Some(143), "{err}");
    let line = err.trim_end().lines().last().unwrap_or_default();
    assert!(
        line.starts_with("ptlab: interrupted by SIGTERM: the recording of sleep"),
        "{err}"
    );
    assert!(line.contains("t.ptl.partial removed"), "{line}");
    assert_eq!(entries(tmp.path()), Vec::<String>::new());
    assert!(!running_with(mark), "the recorded program outlived ptlab");
}
