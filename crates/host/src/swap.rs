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

#[cfg(test)]
mod tests {
    use super::*;

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
