//! This host's swap read-ahead settings: which kind Linux uses
//! (mm/swap_state.c, `swap_use_vma_readahead`: VMA read-ahead when
//! `/sys/kernel/mm/swap/vma_ra_enabled` is true and no active swap area is
//! on a rotational device, else cluster read-ahead) and its largest window
//! (`/proc/sys/vm/page-cluster`).

use std::os::unix::fs::{FileTypeExt, MetadataExt};

/// Linux's default `page-cluster`.
pub const DEFAULT_PAGE_CLUSTER: u32 = 3;

/// `/proc/sys/vm/page-cluster`, `None` if unreadable.
pub fn page_cluster() -> Option<u32> {
    crate::procfs::read_u64("/proc/sys/vm/page-cluster").and_then(|v| u32::try_from(v).ok())
}

/// `/sys/kernel/mm/swap/vma_ra_enabled`, `None` if unreadable.
pub fn vma_ra_enabled() -> Option<bool> {
    match crate::procfs::read_line("/sys/kernel/mm/swap/vma_ra_enabled")?.as_str() {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

/// The rotational flag of the block device `dev` (a partition reads its
/// disk's), `None` if unreadable.
fn dev_rotational(dev: u64) -> Option<bool> {
    let device = crate::storage::device_name(dev);
    let v: u64 = crate::storage::queue_attr(&device, "rotational")?
        .trim()
        .parse()
        .ok()?;
    Some(v != 0)
}

/// The paths of the active swap areas (/proc/swaps' first column, with
/// its `\040` escapes of spaces undone).
pub fn parse_swap_paths(text: &str) -> Vec<String> {
    text.lines()
        .skip(1)
        .filter_map(|l| l.split_whitespace().next())
        .map(|p| p.replace("\\040", " "))
        .collect()
}

/// Whether an active swap area is on a rotational device (Linux's
/// `nr_rotate_swap`): a swap partition's own device, a swap file's
/// filesystem device. `None` with no swap or when a device cannot be read.
pub fn any_rotational() -> Option<bool> {
    let text = crate::procfs::read_string("/proc/swaps")?;
    let paths = parse_swap_paths(&text);
    if paths.is_empty() {
        return None;
    }
    let mut any = false;
    for p in paths {
        let md = std::fs::metadata(&p).ok()?;
        let dev = if md.file_type().is_block_device() {
            md.rdev()
        } else {
            md.dev()
        };
        any |= dev_rotational(dev)?;
    }
    Some(any)
}

/// What kind of swap area Linux writes to first (see [`swap_area_kind`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SwapAreaKind {
    /// A swap file (no contiguous slots for a large folio).
    File,
    /// A block device with asynchronous I/O.
    Block,
    /// A block device with synchronous I/O (`SWP_SYNCHRONOUS_IO`).
    Sync,
}

/// Block drivers that declare synchronous I/O (`BLK_FEAT_SYNCHRONOUS`):
/// zram, brd (`ram`N) and pmem. Linux does not show the flag in sysfs,
/// so the device's name decides.
const SYNC_DRIVERS: &[&str] = &["zram", "ram", "pmem"];

/// The kind of the area of highest priority in /proc/swaps' text (Linux
/// allocates from it first; the first listed wins a tie): its Type column
/// says `file` or `partition`, and a partition on a synchronous driver is
/// [`SwapAreaKind::Sync`]. `None` with no area.
pub fn parse_swap_area_kind(text: &str) -> Option<SwapAreaKind> {
    let mut best: Option<(i64, SwapAreaKind)> = None;
    for line in text.lines().skip(1) {
        let cols: Vec<&str> = line.split_whitespace().collect();
        let [path, kind, _, _, prio, ..] = cols[..] else {
            continue;
        };
        let prio: i64 = prio.parse().unwrap_or(i64::MIN);
        let name = path.rsplit('/').next().unwrap_or(path);
        let k = if kind == "file" {
            SwapAreaKind::File
        } else if SYNC_DRIVERS.iter().any(|d| {
            name.strip_prefix(d)
                .is_some_and(|rest| rest.chars().all(|c| c.is_ascii_digit() || c == '.'))
        }) {
            SwapAreaKind::Sync
        } else {
            SwapAreaKind::Block
        };
        if best.is_none_or(|(p, _)| prio > p) {
            best = Some((prio, k));
        }
    }
    best.map(|(_, k)| k)
}

/// This host's swap area kind ([`parse_swap_area_kind`] of /proc/swaps).
pub fn swap_area_kind() -> Option<SwapAreaKind> {
    parse_swap_area_kind(&crate::procfs::read_string("/proc/swaps")?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swap_area_kind_is_the_highest_priority_areas() {
        let head = "Filename\tType\tSize\tUsed\tPriority\n";
        let k = |rows: &str| parse_swap_area_kind(&format!("{head}{rows}"));
        assert_eq!(k(""), None);
        assert_eq!(
            k("/dev/zram0 partition 8 0 100\n"),
            Some(SwapAreaKind::Sync)
        );
        assert_eq!(k("/dev/vda2 partition 8 0 -2\n"), Some(SwapAreaKind::Block));
        assert_eq!(k("/dev/ram0 partition 8 0 -2\n"), Some(SwapAreaKind::Sync));
        assert_eq!(
            k("/dev/ramdisk partition 8 0 -2\n"),
            Some(SwapAreaKind::Block),
            "a name merely starting with a driver's is not that driver"
        );
        assert_eq!(
            k("/swapfile file 8 0 -2\n/dev/zram0 partition 8 0 100\n"),
            Some(SwapAreaKind::Sync)
        );
        assert_eq!(
            k("/swapfile file 8 0 5\n/dev/zram0 partition 8 0 -3\n"),
            Some(SwapAreaKind::File)
        );
        assert_eq!(
            k("/dev/loop0 partition 8 0 -2\n/swapfile file 8 0 -2\n"),
            Some(SwapAreaKind::Block),
            "a tie goes to the first listed"
        );
    }

    #[test]
    fn swap_paths_are_the_first_column() {
        let text = "Filename\tType\tSize\tUsed\tPriority\n/dev/zram0  partition\t8\t0\t100\n/var/my\\040swap file 4 0 -2\n";
        assert_eq!(parse_swap_paths(text), vec!["/dev/zram0", "/var/my swap"]);
        assert!(parse_swap_paths("Filename\tType\tSize\tUsed\tPriority\n").is_empty());
    }

    #[test]
    fn device_numbers_split_as_glibc() {
        // makedev(253, 0) and makedev(259, 70000).
        assert_eq!(crate::storage::device_name(0xfd00), "253:0");
        let dev = (259u64 & 0xfff) << 8 | (70000u64 & 0xff) | (70000u64 & !0xff) << 12;
        assert_eq!(crate::storage::device_name(dev), "259:70000");
    }
}
