//! MADV_COLLAPSE of a regular file's mapping: Linux 6.18 built without
//! CONFIG_READ_ONLY_THP_FOR_FS (the kernels ptlab follows, this host's
//! among them) answers EINVAL whatever the mapping and its page cache, and
//! so does the model; the workload checker refuses it with that EINVAL
//! before anything runs. The plans here are built without the checker, so
//! that both backends meet the call.

mod kernel_support;

use backend::kernel::{self, KernelError, KernelOptions};
use backend::model::{self, ModelConfig, ModelError, ModelOptions};
use kernel_support::*;
use workload::plan::Advice;

/// A 4 MiB file mapped shared or private, read whole (its page cache
/// PMD-mapped where the filesystem gives large folios), then collapsed.
fn plan(shared: bool, write: bool) -> workload::plan::Workload {
    let mut b = Builder::new();
    let f = b.region("f", 4 * MIB);
    let access = if write {
        workload::plan::Access::Write
    } else {
        workload::plan::Access::Read
    };
    b.thread(vec![
        with(mmap(f, 4 * MIB, workload::plan::MapKind::File), |m| {
            m.shared = shared
        }),
        touch(f, all(4 * MIB), access, PAGE),
        mark("touched"),
        madvise(f, all(4 * MIB), Advice::Collapse),
        mark("collapsed"),
    ]);
    b.build()
}

/// Whether this kernel was built with CONFIG_READ_ONLY_THP_FOR_FS (`None`
/// when its configuration cannot be read).
fn kernel_has_read_only_thp_for_fs() -> Option<bool> {
    host::kconfig::KernelConfig::read()?.enabled("CONFIG_READ_ONLY_THP_FOR_FS")
}

#[test]
fn collapse_of_a_file_mapping_fails_with_einval_on_both_backends() {
    let cfg = ModelConfig::new(&ModelOptions::default()).unwrap();
    for (shared, write) in [(false, false), (true, false), (true, true), (false, true)] {
        let w = plan(shared, write);
        let what = format!("shared {shared}, write {write}");
        match model::run(&w, &cfg) {
            Err(ModelError::Op { errno, .. }) => {
                assert!(errno.starts_with("EINVAL"), "{what}: {errno}")
            }
            other => panic!("{what}: the model gave {other:?}"),
        }
        #[cfg(target_os = "linux")]
        {
            if kernel_has_read_only_thp_for_fs() == Some(true) {
                // That kernel may collapse a file no one writes; not this case.
                continue;
            }
            match kernel::run(&w, &KernelOptions::default()) {
                Err(KernelError::Op { call, source, .. }) => {
                    assert_eq!(call, "madvise", "{what}");
                    assert_eq!(source.raw_os_error(), Some(libc::EINVAL), "{what}");
                }
                other => panic!("{what}: the kernel gave {other:?}"),
            }
        }
    }
    // The checker refuses the same text with the kernel's answer.
    let text = r#"name = "c"
[[thread]]
op = [
  { mmap = "f", size = "4MiB", kind = "file", shared = true },
  { madvise = "f", advice = "collapse" },
]
"#;
    let e = workload::parse(text, "c.toml", 48).unwrap_err().to_string();
    assert!(e.starts_with("c.toml:5:"), "{e}");
    assert!(e.contains("EINVAL"), "{e}");
}
