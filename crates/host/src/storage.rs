//! What backs the files of a directory: the device's read-ahead window and
//! whether its filesystem gives large page-cache folios. The model's file
//! faults take both from here (read-around reads `read_ahead_kb` around a
//! miss; large folios let read-ahead grow folios up to 2 MiB, which a PMD
//! entry maps).
//!
//! Read from `/proc/self/mountinfo` and `/sys/dev/block/<major>:<minor>`
//! (a partition's read-ahead is its disk's: `../queue/read_ahead_kb`). What
//! cannot be read is `None`.

use serde::Serialize;
use std::path::Path;

use crate::procfs;

/// The files of one directory, as Linux reads them.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct FileBacking {
    /// `major:minor` of the filesystem's device.
    pub device: Option<String>,
    /// The device's `read_ahead_kb` (Linux `bdi->ra_pages`).
    pub read_ahead_kb: Option<u64>,
    /// The filesystem type (`ext4`, `xfs`, ...).
    pub fs_type: Option<String>,
    /// Whether regular files get large folios on this kernel
    /// (`mapping_large_folio_support`).
    pub large_folios: Option<bool>,
}

impl FileBacking {
    /// Reads what backs the files of `dir`; never fails.
    pub fn of(dir: &Path) -> FileBacking {
        let device = device_of(dir);
        let read_ahead_kb = device.as_deref().and_then(read_ahead_kb);
        let fs_type = device.as_deref().and_then(|d| {
            let text = procfs::read_string("/proc/self/mountinfo")?;
            fs_type_in_mountinfo(&text, d, dir)
        });
        let release = procfs::read_line("/proc/sys/kernel/osrelease");
        let large_folios = match (&fs_type, &release) {
            (Some(fs), Some(r)) => large_folio_fs(fs, r),
            _ => None,
        };
        FileBacking {
            device,
            read_ahead_kb,
            fs_type,
            large_folios,
        }
    }
}

/// `major:minor` of the device holding `path` (glibc's encoding of st_dev).
fn device_of(path: &Path) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some(device_name(std::fs::metadata(path).ok()?.dev()))
    }
    #[cfg(not(unix))]
    {
        let _ = path;
        None
    }
}

/// `major:minor` of the device number `dev`, split as glibc's `major` and
/// `minor` split it: the name of its directory under /sys/dev/block.
pub(crate) fn device_name(dev: u64) -> String {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    format!("{major}:{minor}")
}

/// The block-queue attribute `attr` (/sys/dev/block/DEVICE/queue/ATTR) of
/// `device` (`major:minor`), its disk's for a partition.
pub(crate) fn queue_attr(device: &str, attr: &str) -> Option<String> {
    let base = format!("/sys/dev/block/{device}");
    procfs::read_line(format!("{base}/queue/{attr}"))
        .or_else(|| procfs::read_line(format!("{base}/../queue/{attr}")))
}

/// The read-ahead window of a block device (its disk's for a partition).
fn read_ahead_kb(device: &str) -> Option<u64> {
    queue_attr(device, "read_ahead_kb")
        .or_else(|| procfs::read_line(format!("/sys/class/bdi/{device}/read_ahead_kb")))
        .and_then(|t| t.trim().parse().ok())
}

/// The filesystem type of the mount of `device` that holds `path` (the
/// longest mount point that is a prefix of it), from mountinfo's text.
pub fn fs_type_in_mountinfo(text: &str, device: &str, path: &Path) -> Option<String> {
    text.lines()
        .filter_map(|l| {
            // id parent major:minor root mountpoint options ... - fstype source ...
            let (left, right) = l.split_once(" - ")?;
            let f: Vec<&str> = left.split(' ').collect();
            let (dev, mount) = (*f.get(2)?, *f.get(4)?);
            let fs = right.split(' ').next()?;
            (dev == device && path.starts_with(mount)).then(|| (mount.len(), fs.to_string()))
        })
        .max_by_key(|(len, _)| *len)
        .map(|(_, fs)| fs)
}

/// Whether `fs` gives regular files large folios on kernel `release`: the
/// kernel version since which the filesystem asks for them
/// (`mapping_set_large_folios`: XFS since 5.18, ext4 since 6.16, except
/// with data journalling, encryption or verity, not seen here). Other
/// filesystems are taken not to (`Some(false)`; btrfs has them only in
/// experimental builds); `None` if the release does not parse.
pub fn large_folio_fs(fs: &str, release: &str) -> Option<bool> {
    let mut parts = release.split(|c: char| !c.is_ascii_digit());
    let major: u32 = parts.next()?.parse().ok()?;
    let minor: u32 = parts.next()?.parse().ok()?;
    let since = match fs {
        "xfs" => (5, 18),
        "ext4" => (6, 16),
        _ => return Some(false),
    };
    Some((major, minor) >= since)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
22 27 0:21 / /proc rw,relatime - proc proc rw
27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard
30 27 8:1 / /data rw,relatime shared:5 - xfs /dev/sda1 rw
31 30 0:40 / /data/tmp rw - tmpfs tmpfs rw
";

    #[test]
    fn mountinfo_gives_the_longest_mount_of_the_device() {
        let t = |d: &str, p: &str| fs_type_in_mountinfo(MOUNTINFO, d, Path::new(p));
        assert_eq!(t("254:0", "/var/tmp").as_deref(), Some("ext4"));
        assert_eq!(t("8:1", "/data/x").as_deref(), Some("xfs"));
        assert_eq!(t("0:40", "/data/tmp/f").as_deref(), Some("tmpfs"));
        // The device must match too: /data/tmp is not on 8:1.
        assert_eq!(t("8:1", "/proc").as_deref(), None);
    }

    #[test]
    fn large_folios_by_filesystem_and_release() {
        assert_eq!(large_folio_fs("ext4", "6.18.44-fc-v657"), Some(true));
        assert_eq!(large_folio_fs("ext4", "6.15.2"), Some(false));
        assert_eq!(large_folio_fs("xfs", "5.18.0"), Some(true));
        assert_eq!(large_folio_fs("xfs", "5.17.9"), Some(false));
        assert_eq!(large_folio_fs("btrfs", "6.18.0"), Some(false));
        assert_eq!(large_folio_fs("ext4", "garbage"), None);
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_hosts_temporary_directory_has_a_device() {
        let b = FileBacking::of(&std::env::temp_dir());
        let dev = b.device.expect("st_dev of a directory");
        assert!(dev.contains(':'));
        if let Some(kb) = b.read_ahead_kb {
            assert!(kb < 1 << 30, "{kb}");
        }
    }
}
