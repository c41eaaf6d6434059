//! `shmem_pmd_kb` (ShmemPmdMapped of /proc/self/smaps_rollup) on the kernel
//! and the model: the sizes follow the workload, and reading smaps_rollup at
//! a mark (a walk of the process's tables) faults nothing and maps nothing,
//! so marks in a row with nothing between see no change.

#![cfg(target_os = "linux")]

mod kernel_support;

use backend::kernel::{run, KernelOptions};
use backend::model::{self, ModelConfig, ModelOptions};
use kernel_support::*;
use workload::plan::{Access, MapKind, ShmemHuge};

fn plan() -> workload::plan::Workload {
    let mut b = Builder::new();
    let s = b.region("s", 4 * MIB);
    b.thread(vec![
        with(mmap(s, 4 * MIB, MapKind::Shmem), |m| {
            m.shared = true;
            m.shmem_huge = Some(ShmemHuge::Always);
        }),
        mark("mapped"),
        touch(s, all(2 * MIB), Access::Write, PAGE),
        mark("half"),
        mark("half-again"),
        mark("half-once-more"),
        touch(s, all(4 * MIB), Access::Read, PAGE),
        mark("all"),
    ]);
    b.build()
}

#[test]
fn shmem_pmd_mapped_follows_the_thps_and_marks_disturb_nothing() {
    let w = plan();
    let cfg = ModelConfig::new(&ModelOptions::default()).unwrap();
    let m = model::run(&w, &cfg).expect("model run");
    let mut runs = vec![("model", m)];
    // Mounting the tmpfs needs root; elsewhere only the model is checked.
    if is_root() {
        runs.push((
            "kernel",
            run(&w, &KernelOptions::default()).expect("kernel run"),
        ));
    }
    for (who, r) in &runs {
        let kb = |mark: &str| counter(r, mark, "shmem_pmd_kb");
        assert_eq!(kb("mapped"), 0, "{who}");
        assert_eq!(kb("half"), 2048, "{who}: one THP written");
        assert_eq!(kb("all"), 4096, "{who}: the second read in as a THP");
        assert_eq!(counter(r, "all", "anon_huge_kb"), 0, "{who}");
        assert_eq!(counter(r, "all", "file_pmd_kb"), 0, "{who}");
        for (a, b) in [("half", "half-again"), ("half-again", "half-once-more")] {
            for c in workload::result::COMPARED {
                assert_eq!(delta(r, a, b, c), 0, "{who}: {c} from {a} to {b}");
            }
        }
    }
}

/// Whether this process runs as root (the kernel backend's tmpfs mounts
/// need CAP_SYS_ADMIN).
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .and_then(|l| l.split_whitespace().nth(1).map(|u| u == "0"))
        })
        .unwrap_or(false)
}
