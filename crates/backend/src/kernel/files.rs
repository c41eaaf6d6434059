//! Backing files of `kind = "file"` regions, in a private temporary directory
//! that ptlab creates and always removes (it is a [`tempfile::TempDir`]:
//! dropped on every path out of `run`, error and timeout included).
//!
//! Each file is as large as its region, written with zeros (so its pages are
//! in the page cache: `file = "cached"`) and fsynced, so that no writeback of
//! dirty pages starts during the run and write-protects mapped pages behind
//! the workload's back. `file = "cold"` is made at mmap time in the child
//! (fdatasync + POSIX_FADV_DONTNEED), so a region mapped cold after being
//! used starts cold again.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::fd::{AsRawFd, RawFd};
use std::path::{Path, PathBuf};

use super::program::Program;
use super::KernelError;

const TMPFS_MAGIC: i64 = 0x0102_1994;
const ZEROS: usize = 1 << 20;

/// The private directory and one open file per file region.
#[derive(Debug)]
pub(crate) struct RegionFiles {
    /// Kept for its Drop, which removes the directory and its files.
    _dir: Option<tempfile::TempDir>,
    files: Vec<Option<File>>,
}

impl RegionFiles {
    /// Creates and fills the files the program maps; no directory at all if
    /// it maps none.
    pub fn create(prog: &Program, base: Option<&Path>) -> Result<RegionFiles, KernelError> {
        let mut files: Vec<Option<File>> = (0..prog.regions.len()).map(|_| None).collect();
        if !prog.file_regions.contains(&true) {
            return Ok(RegionFiles { _dir: None, files });
        }
        let base = base.map_or_else(default_base, Path::to_path_buf);
        let dir = tempfile::Builder::new()
            .prefix("ptlab-kernel-")
            .tempdir_in(&base)
            .map_err(|e| {
                setup(
                    format!("creating a temporary directory in {}", base.display()),
                    e,
                )
            })?;
        let zeros = vec![0u8; ZEROS];
        for (id, region) in prog.regions.iter().enumerate() {
            if !prog.file_regions[id] {
                continue;
            }
            if interrupt::requested().is_some() {
                // The section around the run exits once this directory
                // is removed (dropped on the way out).
                return Err(setup(
                    "writing the region files".into(),
                    std::io::ErrorKind::Interrupted.into(),
                ));
            }
            let path = dir.path().join(format!("region-{id}"));
            let what = || format!("writing {} for region {:?}", path.display(), region.name);
            let mut file = OpenOptions::new()
                .read(true)
                .write(true)
                .create_new(true)
                .open(&path)
                .map_err(|e| setup(what(), e))?;
            // Written one 4 KiB page per call: the page cache then holds
            // base-page folios (a large write would make large folios, which
            // fault-around maps whole and which the model's page cache, like
            // most filesystems' defaults, does not have).
            let mut left = prog.file_bytes[id];
            while left > 0 {
                let n = left.min(ZEROS as u64).min(4096) as usize;
                file.write_all(&zeros[..n]).map_err(|e| setup(what(), e))?;
                left -= n as u64;
            }
            file.sync_all().map_err(|e| setup(what(), e))?;
            files[id] = Some(file);
        }
        Ok(RegionFiles {
            _dir: Some(dir),
            files,
        })
    }

    /// The descriptor of a region's file (`-1` if it has none).
    pub fn fds(&self) -> Vec<RawFd> {
        self.files
            .iter()
            .map(|f| f.as_ref().map_or(-1, AsRawFd::as_raw_fd))
            .collect()
    }
}

fn setup(what: String, source: std::io::Error) -> KernelError {
    KernelError::Setup { what, source }
}

/// The system's temporary directory, unless it is on tmpfs (where a "file"
/// would be shared memory, counted in RssShmem rather than RssFile); then
/// /var/tmp if that is on a disk.
pub(crate) fn default_base() -> PathBuf {
    let tmp = std::env::temp_dir();
    if is_tmpfs(&tmp) != Some(true) {
        return tmp;
    }
    let var_tmp = PathBuf::from("/var/tmp");
    if is_tmpfs(&var_tmp) == Some(false) {
        return var_tmp;
    }
    tmp
}

fn is_tmpfs(path: &Path) -> Option<bool> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: statfs is plain data; all-zero is valid.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is NUL-terminated and `st` is a valid out-pointer.
    if unsafe { libc::statfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    #[allow(clippy::unnecessary_cast)] // f_type's width differs by libc
    Some(st.f_type as i64 == TMPFS_MAGIC)
}
