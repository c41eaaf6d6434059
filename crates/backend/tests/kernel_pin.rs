//! `KernelOptions::pin_threads`: while the run sleeps, the child's worker
//! threads are read from /proc: each may run on one CPU only, thread `i` on
//! the `i`-th CPU this process may use; unpinned, they keep the whole set.
//! One test binary of its own, so the only child of this process is the
//! run's.

#![cfg(target_os = "linux")]

mod kernel_support;

use std::time::{Duration, Instant};

use backend::kernel::{run, KernelOptions};
use kernel_support::*;

/// The CPU lists (`Cpus_allowed_list`) of every task of this process's one
/// child, read as soon as the child has `want` tasks or more, with the
/// tasks' ids in ascending order (the child's main thread first, then its
/// workers in the order they were spawned).
fn child_task_cpus(want: usize) -> Option<Vec<String>> {
    let me = std::process::id().to_string();
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        for entry in std::fs::read_dir("/proc").ok()?.flatten() {
            let Some(status) = host::procfs::read_string(entry.path().join("status")) else {
                continue;
            };
            let ppid = status.lines().find_map(|l| l.strip_prefix("PPid:"));
            if ppid.map(str::trim) != Some(me.as_str()) {
                continue;
            }
            let mut tids: Vec<u64> = std::fs::read_dir(entry.path().join("task"))
                .ok()?
                .flatten()
                .filter_map(|t| t.file_name().to_str()?.parse().ok())
                .collect();
            if tids.len() < want {
                continue;
            }
            tids.sort_unstable();
            let lists = tids
                .iter()
                .filter_map(|t| {
                    let s =
                        host::procfs::read_string(entry.path().join(format!("task/{t}/status")))?;
                    s.lines()
                        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
                        .map(|v| v.trim().to_string())
                })
                .collect();
            return Some(lists);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    None
}

fn sleepers(threads: usize) -> workload::plan::Workload {
    let mut b = Builder::new();
    for _ in 0..threads {
        b.thread(vec![sleep(Duration::from_millis(1500))]);
    }
    b.build()
}

fn watch(threads: usize, pin_threads: bool) -> Vec<String> {
    let w = sleepers(threads);
    let opts = KernelOptions {
        pin_threads,
        ..KernelOptions::default()
    };
    let runner = std::thread::spawn(move || run(&w, &opts).map(|_| ()));
    // The child's main thread and one per workload thread.
    let lists = child_task_cpus(threads + 1).expect("the run's child and its threads");
    runner.join().unwrap().expect("kernel run");
    lists
}

#[test]
fn pinned_threads_each_get_one_cpu_in_order_and_unpinned_keep_the_set() {
    let cpus = host::affinity::allowed_cpus();
    assert!(!cpus.is_empty());
    let threads = 3;

    let lists = watch(threads, true);
    let workers = &lists[lists.len() - threads..];
    for (i, list) in workers.iter().enumerate() {
        assert_eq!(
            list,
            &cpus[i % cpus.len()].to_string(),
            "worker {i} of {lists:?} (allowed: {cpus:?})"
        );
    }

    if cpus.len() > 1 {
        let lists = watch(threads, false);
        let workers = &lists[lists.len() - threads..];
        for list in workers {
            assert!(
                list.contains(',') || list.contains('-'),
                "an unpinned worker was confined to {list} (allowed: {cpus:?})"
            );
        }
    }
}
