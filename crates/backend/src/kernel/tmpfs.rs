//! The tmpfs mounts of `shmem_huge` regions: a shmem region with its own
//! THP policy is a file on a tmpfs mounted with `huge=POLICY`, one mount
//! per policy the workload names.
//!
//! The parent makes one empty directory per mount in a private temporary
//! directory ([`TmpfsDirs`], a [`tempfile::TempDir`] removed on every path
//! out of the run). The child mounts the tmpfs filesystems on them inside
//! a mount namespace of its own ([`mount_all`], before its threads start),
//! so the mounts exist only for the workload's process and its forks, and
//! the kernel removes them with the namespace when the last of them exits,
//! whatever ends it (an error, SIGINT, SIGKILL): nothing is left mounted
//! on the host and no global setting changes. Each mmap of such a region
//! makes a fresh unnamed file there (`O_TMPFILE`), as a memfd region makes
//! a fresh memfd: its pages go when the mapping does.
//!
//! Mounting needs CAP_SYS_ADMIN: without root the run is refused before it
//! starts ([`KernelError::NeedsRoot`]).

use std::ffi::CString;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use workload::plan::{MapKind, Op, ShmemHuge, Workload};

use super::KernelError;

/// One tmpfs mount: its `huge=` option and its `size=` in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mount {
    pub huge: ShmemHuge,
    pub size: u64,
}

/// The `huge=` value of a policy (Documentation/filesystems/tmpfs.rst).
pub(crate) fn option(h: ShmemHuge) -> &'static str {
    match h {
        ShmemHuge::Never => "never",
        ShmemHuge::Always => "always",
        ShmemHuge::WithinSize => "within_size",
        ShmemHuge::Advise => "advise",
    }
}

/// The mounts the workload needs, in the order its policies first appear,
/// and for each region the mount its files live on. A mount holds every
/// region of its policy at its largest size, each rounded up to 2 MiB, and
/// 2 MiB more: a fault that may take a huge page always finds room for one
/// (a full tmpfs would give base pages instead and change the counts).
pub(crate) fn mounts(w: &Workload) -> (Vec<Mount>, Vec<Option<usize>>) {
    const HUGE: u64 = 2 << 20;
    let mut largest: Vec<Option<(ShmemHuge, u64)>> = vec![None; w.regions.len()];
    fn walk(ops: &[Op], largest: &mut [Option<(ShmemHuge, u64)>]) {
        for op in ops {
            match op {
                Op::Mmap(m) if m.kind == MapKind::Shmem => {
                    if let Some(h) = m.shmem_huge {
                        let size = largest[m.region].map_or(0, |(_, s)| s).max(m.size);
                        largest[m.region] = Some((h, size));
                    }
                }
                Op::Repeat { ops, .. } | Op::Fork { ops, .. } => walk(ops, largest),
                _ => {}
            }
        }
    }
    w.threads.iter().for_each(|t| walk(&t.ops, &mut largest));
    let mut mounts: Vec<Mount> = Vec::new();
    let of_region = largest
        .iter()
        .map(|r| {
            let (huge, size) = (*r)?;
            let i = match mounts.iter().position(|m| m.huge == huge) {
                Some(i) => i,
                None => {
                    mounts.push(Mount { huge, size: HUGE });
                    mounts.len() - 1
                }
            };
            mounts[i].size += size.div_ceil(HUGE) * HUGE;
            Some(i)
        })
        .collect();
    (mounts, of_region)
}

/// The empty directories the child mounts on (removed with the run).
#[derive(Debug)]
pub(crate) struct TmpfsDirs {
    /// Kept for its Drop, which removes the directories.
    _dir: tempfile::TempDir,
    /// One mount point per mount, as C strings for the child.
    pub paths: Vec<CString>,
}

impl TmpfsDirs {
    /// Makes the mount points, or refuses the run if this process may not
    /// mount (`region` names a region that needs a mount, for the message).
    pub fn create(mounts: &[Mount], region: &str, base: &Path) -> Result<TmpfsDirs, KernelError> {
        // SAFETY: geteuid has no preconditions.
        if unsafe { libc::geteuid() } != 0 {
            return Err(KernelError::NeedsRoot {
                region: region.to_string(),
                huge: option(mounts[0].huge),
            });
        }
        let dir = tempfile::Builder::new()
            .prefix("ptlab-tmpfs-")
            .tempdir_in(base)
            .map_err(|e| setup(format!("creating a directory in {}", base.display()), e))?;
        let mut paths = Vec::with_capacity(mounts.len());
        for m in mounts {
            let p = dir.path().join(option(m.huge));
            std::fs::create_dir(&p).map_err(|e| setup(format!("creating {}", p.display()), e))?;
            paths.push(
                CString::new(p.as_os_str().as_bytes())
                    .map_err(|e| setup(format!("the path {}", p.display()), e.into()))?,
            );
        }
        Ok(TmpfsDirs { _dir: dir, paths })
    }
}

fn setup(what: String, source: std::io::Error) -> KernelError {
    KernelError::Setup { what, source }
}

/// The options string of a mount, made before the fork.
pub(crate) fn mount_data(m: &Mount) -> CString {
    CString::new(format!("huge={},size={}", option(m.huge), m.size))
        .expect("no NUL in a formatted option string")
}

/// In the child, before its threads start: a mount namespace of its own
/// (its mounts private, so nothing propagates to the host's), each tmpfs
/// mounted on its directory, and a descriptor of each mount's root to
/// make files in. Allocates nothing. The error is the errno of the step
/// that failed.
pub(crate) fn mount_all(paths: &[CString], data: &[CString], fds: &mut [RawFd]) -> Result<(), i32> {
    let errno = || std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    // SAFETY: unshare only changes this (single-threaded) process's mount
    // namespace.
    if unsafe { libc::unshare(libc::CLONE_NEWNS) } != 0 {
        return Err(errno());
    }
    // SAFETY: NUL-terminated literals; MS_REC | MS_PRIVATE changes only the
    // propagation of this namespace's copy of the mounts.
    let rc = unsafe {
        libc::mount(
            c"none".as_ptr(),
            c"/".as_ptr(),
            std::ptr::null(),
            libc::MS_REC | libc::MS_PRIVATE,
            std::ptr::null(),
        )
    };
    if rc != 0 {
        return Err(errno());
    }
    for ((path, data), fd) in paths.iter().zip(data).zip(fds.iter_mut()) {
        // SAFETY: NUL-terminated strings that outlive the call; the mount
        // is in this process's own namespace.
        let rc = unsafe {
            libc::mount(
                c"tmpfs".as_ptr(),
                path.as_ptr(),
                c"tmpfs".as_ptr(),
                libc::MS_NOSUID | libc::MS_NODEV,
                data.as_ptr().cast(),
            )
        };
        if rc != 0 {
            return Err(errno());
        }
        // SAFETY: a NUL-terminated path; the descriptor is this process's.
        let d = unsafe {
            libc::open(
                path.as_ptr(),
                libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if d < 0 {
            return Err(errno());
        }
        *fd = d;
    }
    Ok(())
}

/// A fresh unnamed file of `len` bytes on the mount `dir` (an open
/// descriptor of its root). `Err((open_failed, errno))`.
pub(crate) fn new_file(dir: RawFd, len: u64) -> Result<RawFd, (bool, i32)> {
    let errno = || std::io::Error::last_os_error().raw_os_error().unwrap_or(0);
    // SAFETY: a NUL-terminated literal path relative to `dir`; O_TMPFILE
    // makes an unnamed file there.
    let fd = unsafe {
        libc::openat(
            dir,
            c".".as_ptr(),
            libc::O_TMPFILE | libc::O_RDWR | libc::O_CLOEXEC,
            0o600 as libc::c_uint,
        )
    };
    if fd < 0 {
        return Err((true, errno()));
    }
    // SAFETY: `fd` is the file just made.
    if unsafe { libc::ftruncate(fd, len as libc::off_t) } != 0 {
        let e = errno();
        // SAFETY: our descriptor, closed once.
        unsafe { libc::close(fd) };
        return Err((false, e));
    }
    Ok(fd)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_mount_per_option_sized_for_its_regions() {
        let text = r#"
[[thread]]
op = [
  { mmap = "a", kind = "shmem", shmem_huge = "always", size = "3MiB" },
  { mmap = "m", kind = "shmem", size = "4MiB" },
  { mmap = "b", kind = "shmem", shmem_huge = "never", size = "4KiB" },
  { mmap = "c", kind = "shmem", shmem_huge = "always", size = "2MiB" },
  { munmap = "c" },
  { mmap = "c", kind = "shmem", shmem_huge = "always", size = "4MiB" },
]
"#;
        let w = workload::parse(text, "x.toml", 48).unwrap();
        let (mounts, of_region) = mounts(&w);
        const MIB: u64 = 1 << 20;
        assert_eq!(
            mounts,
            vec![
                // a (3 MiB -> 4) and c at its largest (4), plus 2 MiB.
                Mount {
                    huge: ShmemHuge::Always,
                    size: 10 * MIB
                },
                Mount {
                    huge: ShmemHuge::Never,
                    size: 4 * MIB
                },
            ]
        );
        let by_name = |n: &str| of_region[w.regions.iter().position(|r| r.name == n).unwrap()];
        assert_eq!(by_name("a"), Some(0));
        assert_eq!(by_name("c"), Some(0));
        assert_eq!(by_name("b"), Some(1));
        // A memfd region needs no mount.
        assert_eq!(by_name("m"), None);
        assert_eq!(
            mount_data(&mounts[1]).to_str().unwrap(),
            "huge=never,size=4194304"
        );
    }
}
