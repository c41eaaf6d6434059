//! Scan of /proc/*/maps for shared writable mappings of files on disk
//! filesystems (the seed's `grep '.w.s'`, with the filesystem looked up in
//! /proc/self/mountinfo instead of guessing from the path).

use std::collections::BTreeMap;

use serde::Serialize;

/// Filesystems whose pages are never written back to a disk.
const MEMORY_FS: &[&str] = &[
    "tmpfs",
    "devtmpfs",
    "ramfs",
    "hugetlbfs",
    "proc",
    "sysfs",
    "devpts",
    "mqueue",
    "cgroup",
    "cgroup2",
    "debugfs",
    "tracefs",
    "securityfs",
    "bpf",
    "configfs",
];

/// What the scan found among the processes this user may read.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct WritableMappings {
    /// Processes with at least one such mapping.
    pub processes: usize,
    /// Processes whose maps could be read.
    pub scanned: usize,
    /// One of them: `pid 123 (name): /path`.
    pub example: Option<String>,
}

/// Scans every readable /proc/PID/maps. `None` if /proc cannot be listed.
pub fn scan_writable_file_mappings() -> Option<WritableMappings> {
    let mounts = Mounts::read();
    let mut found = WritableMappings::default();
    let proc_dir = std::fs::read_dir("/proc").ok()?;
    for entry in proc_dir.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        let Some(maps) = crate::procfs::read_string(format!("/proc/{pid}/maps")) else {
            continue;
        };
        found.scanned += 1;
        if let Some(path) = maps.lines().find_map(|l| writable_file_path(l, &mounts)) {
            found.processes += 1;
            if found.example.is_none() {
                let comm =
                    crate::procfs::read_line(format!("/proc/{pid}/comm")).unwrap_or_default();
                found.example = Some(format!("pid {pid} ({comm}): {path}"));
            }
        }
    }
    Some(found)
}

/// The path of a maps line that is a shared writable mapping of a file on a
/// disk filesystem, else `None`.
fn writable_file_path<'a>(line: &'a str, mounts: &Mounts) -> Option<&'a str> {
    // address perms offset dev inode pathname
    let mut fields = line.splitn(6, ' ');
    let perms = fields.nth(1)?.as_bytes();
    if perms.len() < 4 || perms[1] != b'w' || perms[3] != b's' {
        return None;
    }
    let path = fields.nth(3)?.trim_start();
    let path = path.strip_suffix(" (deleted)").unwrap_or(path);
    // Not files of a mounted filesystem: memfd and SysV shm live on internal
    // tmpfs mounts; device mappings are not in the page cache.
    if !path.starts_with('/')
        || path.starts_with("/memfd:")
        || path.starts_with("/SYSV")
        || path.starts_with("/dev/")
    {
        return None;
    }
    match mounts.fs_type(path) {
        Some(fs) if MEMORY_FS.contains(&fs) => None,
        _ => Some(path),
    }
}

/// Mount points and their filesystem types.
struct Mounts {
    by_point: BTreeMap<String, String>,
}

impl Mounts {
    fn read() -> Mounts {
        let text = crate::procfs::read_string("/proc/self/mountinfo").unwrap_or_default();
        Mounts::parse(&text)
    }

    /// mountinfo: `id parent maj:min root mountpoint opts [optional...] - fstype source superopts`.
    fn parse(text: &str) -> Mounts {
        let by_point = text
            .lines()
            .filter_map(|line| {
                let (left, right) = line.split_once(" - ")?;
                let point = left.split(' ').nth(4)?;
                let fs = right.split(' ').next()?;
                Some((unescape_octal(point), fs.to_string()))
            })
            .collect();
        Mounts { by_point }
    }

    /// The filesystem of the longest mount point that contains `path`.
    fn fs_type(&self, path: &str) -> Option<&str> {
        self.by_point
            .iter()
            .filter(|(point, _)| {
                point.as_str() == "/"
                    || path == point.as_str()
                    || path
                        .strip_prefix(point.as_str())
                        .is_some_and(|rest| rest.starts_with('/'))
            })
            .max_by_key(|(point, _)| point.len())
            .map(|(_, fs)| fs.as_str())
    }
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape_octal(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && i + 3 < bytes.len()
            && bytes[i + 1..i + 4]
                .iter()
                .all(|b| (b'0'..=b'7').contains(b))
        {
            out.push(
                (bytes[i + 1] - b'0') * 64 + (bytes[i + 2] - b'0') * 8 + (bytes[i + 3] - b'0'),
            );
            i += 4;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "22 27 0:21 / /proc rw,relatime - proc proc rw\n\
        27 1 254:0 / / rw,relatime - ext4 /dev/vda rw\n\
        25 24 0:23 / /dev/shm rw,relatime - tmpfs tmpfs rw\n\
        30 27 0:30 / /run rw - tmpfs tmpfs rw\n\
        31 27 0:31 / /my\\040data rw - xfs /dev/vdb rw\n";

    #[test]
    fn mount_lookup_takes_longest_prefix() {
        let m = Mounts::parse(MOUNTINFO);
        assert_eq!(m.fs_type("/home/a"), Some("ext4"));
        assert_eq!(m.fs_type("/run/x"), Some("tmpfs"));
        assert_eq!(m.fs_type("/runner/x"), Some("ext4"));
        assert_eq!(m.fs_type("/my data/f"), Some("xfs"));
    }

    #[test]
    fn only_shared_writable_disk_files_count() {
        let m = Mounts::parse(MOUNTINFO);
        let line = |perms: &str, path: &str| {
            format!("7f0000000000-7f0000001000 {perms} 00000000 fe:00 1234                       {path}")
        };
        assert_eq!(
            writable_file_path(&line("rw-s", "/var/db/x"), &m),
            Some("/var/db/x")
        );
        assert_eq!(
            writable_file_path(&line("rw-s", "/var/db/x (deleted)"), &m),
            Some("/var/db/x")
        );
        assert_eq!(writable_file_path(&line("rw-p", "/var/db/x"), &m), None);
        assert_eq!(writable_file_path(&line("r--s", "/var/db/x"), &m), None);
        assert_eq!(writable_file_path(&line("rw-s", "/dev/shm/x"), &m), None);
        assert_eq!(writable_file_path(&line("rw-s", "/run/x"), &m), None);
        assert_eq!(
            writable_file_path(&line("rw-s", "/memfd:a (deleted)"), &m),
            None
        );
        assert_eq!(
            writable_file_path(&line("rw-s", "/dev/dri/card0"), &m),
            None
        );
        assert_eq!(writable_file_path(&line("rw-s", ""), &m), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn scan_sees_own_shared_file_mapping() {
        use std::os::fd::AsRawFd;
        // A shared writable mapping of a file on the disk filesystem of the
        // build directory; skipped where that directory is on tmpfs.
        let dir = std::env::temp_dir().join(format!("ptlab-host-scan-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(true)
            .read(true)
            .write(true)
            .open(&path)
            .unwrap();
        file.set_len(4096).unwrap();
        // SAFETY: maps our own 4 KiB file; unmapped below before the file goes.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                4096,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                file.as_raw_fd(),
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        let on_disk = Mounts::read()
            .fs_type(path.to_str().unwrap())
            .is_some_and(|fs| !MEMORY_FS.contains(&fs));
        let found = scan_writable_file_mappings().unwrap();
        // SAFETY: `p` is the 4 KiB mapping created above.
        unsafe { libc::munmap(p, 4096) };
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(found.scanned >= 1);
        if on_disk {
            assert!(found.processes >= 1, "{found:?}");
        }
    }
}
