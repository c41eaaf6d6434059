//! The time limit: the child is killed and reaped, and its files removed.
//! One test in its own binary, so "this process has no child" is exact.

#![cfg(target_os = "linux")]

mod kernel_support;

use std::time::{Duration, Instant};

use backend::kernel::{run, KernelError, KernelOptions};
use kernel_support::*;
use workload::plan::{Access, MapKind};

#[test]
fn timeout_kills_the_child_and_leaves_nothing() {
    let dir = scratch_dir("timeout");
    let mut b = Builder::new();
    let r0 = b.region("f", MIB);
    let sleeper = vec![
        mmap(r0, MIB, MapKind::File),
        touch(r0, all(MIB), Access::Write, PAGE),
        sleep(Duration::from_secs(60)),
    ];
    // Two threads, so the kill must end more than the main thread.
    b.thread(sleeper)
        .thread(vec![sleep(Duration::from_secs(60))]);
    let limit = Duration::from_millis(500);
    let opts = KernelOptions {
        timeout: limit,
        temp_dir: Some(dir.path().to_path_buf()),
        ..KernelOptions::default()
    };
    let started = Instant::now();
    match run(&b.build(), &opts) {
        Err(KernelError::Timeout { limit: l }) => assert_eq!(l, limit),
        other => panic!("expected Timeout, got {other:?}"),
    }
    // Returned long before the sleep would have ended.
    assert!(started.elapsed() < Duration::from_secs(30));

    // No child of ours is left, not even a zombie.
    let mut status = 0;
    // SAFETY: waitpid with WNOHANG on any child; `status` is valid.
    let rc = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
    assert_eq!(rc, -1, "a child was still there");
    assert_eq!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::ECHILD)
    );
    let me = std::process::id().to_string();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(status) = host::procfs::read_string(entry.path().join("status")) else {
            continue;
        };
        let ppid = status
            .lines()
            .find_map(|l| l.strip_prefix("PPid:"))
            .map(str::trim);
        assert_ne!(
            ppid,
            Some(me.as_str()),
            "process {:?} is our child",
            entry.file_name()
        );
    }
    assert!(
        is_empty_dir(dir.path()),
        "the temporary directory is removed"
    );
}
