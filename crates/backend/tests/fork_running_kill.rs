//! A child forked with `wait = false` is ended and reaped on every way out
//! of the workload process: the parent failing mid-way while the child
//! sleeps, and the run's time limit. One binary of its own, and this
//! process made a subreaper, so that a grandchild orphaned by the workload
//! process would become ours: "no child of ours is left" is then exact.

#![cfg(target_os = "linux")]

mod kernel_support;

use std::time::{Duration, Instant};

use backend::kernel::{run, KernelError, KernelOptions};
use kernel_support::*;
use workload::plan::{Access, Op, Range};

/// The pids of our children that have ended, reaped within `within`;
/// stops at the first ECHILD.
fn reap_all(within: Duration) -> Vec<libc::c_int> {
    let until = Instant::now() + within;
    let mut statuses = Vec::new();
    loop {
        let mut status = 0;
        // SAFETY: waitpid with WNOHANG on any child; `status` is valid.
        let rc = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
        if rc > 0 {
            statuses.push(status);
            continue;
        }
        if rc < 0 || Instant::now() > until {
            return statuses;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn no_child_left() {
    let mut status = 0;
    // SAFETY: as above.
    let rc = unsafe { libc::waitpid(-1, &mut status, libc::WNOHANG) };
    assert_eq!(rc, -1, "a child is still there");
    assert_eq!(
        std::io::Error::last_os_error().raw_os_error(),
        Some(libc::ECHILD)
    );
}

fn running_child(ops: Vec<Op>) -> Op {
    Op::Fork {
        name: "kid".into(),
        ops,
        wait: false,
    }
}

#[test]
fn a_running_child_is_ended_on_failure_and_on_the_time_limit() {
    // SAFETY: prctl only sets a flag of this process.
    unsafe { libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) };

    // The parent unmaps a region and touches it (the plan is built without
    // the checker, which would refuse it): SIGSEGV while the child sleeps.
    let mut b = Builder::new();
    let a = b.region("a", 64 * KIB);
    b.thread(vec![
        anon(a, 64 * KIB),
        touch(a, all(64 * KIB), Access::Write, PAGE),
        running_child(vec![sleep(Duration::from_secs(30)), mark("slept")]),
        Op::Munmap {
            region: a,
            range: Range {
                offset: 0,
                len: 64 * KIB,
            },
        },
        touch(a, all(PAGE), Access::Read, PAGE),
    ]);
    let started = Instant::now();
    let r = run(&b.build(), &KernelOptions::default());
    assert!(r.is_err(), "the touch of an unmapped region ran: {r:?}");
    // The report came at once: the child (which holds the report pipe
    // too) was ended, not left to sleep its 30 s.
    assert!(started.elapsed() < Duration::from_secs(20));
    // And reaped by the workload process itself: nothing came to us.
    assert!(reap_all(Duration::ZERO).is_empty());
    no_child_left();

    // The time limit: the workload process is killed while both sleep; its
    // child dies with it (PR_SET_PDEATHSIG) and, orphaned, comes to us.
    let mut b = Builder::new();
    let a = b.region("a", 64 * KIB);
    b.thread(vec![
        anon(a, 64 * KIB),
        running_child(vec![sleep(Duration::from_secs(30))]),
        sleep(Duration::from_secs(30)),
    ]);
    let opts = KernelOptions {
        timeout: Duration::from_millis(500),
        ..KernelOptions::default()
    };
    let started = Instant::now();
    match run(&b.build(), &opts) {
        Err(KernelError::Timeout { .. }) => {}
        other => panic!("expected Timeout, got {other:?}"),
    }
    assert!(started.elapsed() < Duration::from_secs(20));
    let ended = reap_all(Duration::from_secs(5));
    assert_eq!(ended.len(), 1, "the orphaned child: {ended:?}");
    assert!(libc::WIFSIGNALED(ended[0]) && libc::WTERMSIG(ended[0]) == libc::SIGKILL);
    no_child_left();
}
