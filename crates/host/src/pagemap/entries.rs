//! The fallback reader: `/proc/PID/pagemap`, one 8-byte entry per page,
//! where PAGEMAP_SCAN is missing or refused.
//!
//! Entry bits (Documentation/admin-guide/mm/pagemap.rst): 63 present,
//! 62 swapped, 61 file page or shared anonymous, 0-54 the PFN (zero
//! without CAP_SYS_ADMIN). The entry does not say whether a PMD maps the
//! page, and without the PFN not whether it is the zero page: see
//! [`mark_pmd_blocks`] for what smaps lets us recover.
//!
//! Invariants: entries are read in chunks of [`ENTRIES_PER_READ`], never an
//! array for a whole VMA; the deadline is checked between chunks.

use super::maps::Vma;
use super::scan::push_run;
use super::{PageFlags, PageRun};
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::time::Instant;

const PM_PRESENT: u64 = 1 << 63;
const PM_SWAPPED: u64 = 1 << 62;
const PM_FILE: u64 = 1 << 61;

/// Entries per read: 64 KiB of pagemap.
pub const ENTRIES_PER_READ: u64 = 8192;

/// The flags of one pagemap entry.
pub fn entry_flags(entry: u64) -> PageFlags {
    let mut f = PageFlags::NONE;
    if entry & PM_PRESENT != 0 {
        f = f.with(PageFlags::PRESENT);
    }
    if entry & PM_SWAPPED != 0 {
        f = f.with(PageFlags::SWAPPED);
    }
    if entry & PM_FILE != 0 {
        f = f.with(PageFlags::FILE);
    }
    f
}

/// Appends the present or swapped pages of `[start, end)` to `runs`.
///
/// # Errors
/// A read error of the pagemap file.
pub fn read_range(
    pagemap: &File,
    page_size: u64,
    start: u64,
    end: u64,
    deadline: Instant,
    runs: &mut Vec<PageRun>,
) -> io::Result<Option<u64>> {
    let mut buf = vec![0u8; (ENTRIES_PER_READ * 8) as usize];
    let mut va = start;
    while va < end {
        if Instant::now() > deadline {
            return Ok(Some(va));
        }
        let n = ((end - va) / page_size).min(ENTRIES_PER_READ);
        let bytes = &mut buf[..(n * 8) as usize];
        let got = pagemap.read_at(bytes, va / page_size * 8)?;
        if got < 8 {
            // The kernel returns nothing past the last user address.
            return Ok(None);
        }
        for (i, e) in bytes[..got / 8 * 8].chunks_exact(8).enumerate() {
            let entry = u64::from_ne_bytes(e.try_into().expect("8-byte chunk"));
            let flags = entry_flags(entry);
            if flags.has(PageFlags::PRESENT) || flags.has(PageFlags::SWAPPED) {
                let p = va + i as u64 * page_size;
                push_run(runs, p, p + page_size, flags);
            }
        }
        va += (got / 8) as u64 * page_size;
    }
    Ok(None)
}

/// Marks PMD-mapped huge pages the pagemap entries cannot show, from the
/// sizes smaps gives per VMA: in a VMA with `AnonHugePages` (or
/// `FilePmdMapped`) of k huge pages, the first k aligned blocks whose every
/// page is present are marked [`PageFlags::HUGE`]. This is a guess of
/// *where*, exact only in *how many* when enough fully present blocks exist
/// (a block of 512 separately mapped pages looks the same).
pub fn mark_pmd_blocks(vmas: &[Vma], runs: &mut Vec<PageRun>, huge_size: u64) {
    let mut out: Vec<PageRun> = Vec::with_capacity(runs.len());
    let mut vi = 0;
    let mut counted: Option<usize> = None;
    let mut left_in_vma = 0u64;
    for r in runs.iter() {
        while vi < vmas.len() && vmas[vi].end <= r.start {
            vi += 1;
        }
        let Some(v) = vmas.get(vi).filter(|v| v.start <= r.start) else {
            push_run(&mut out, r.start, r.end, r.flags);
            continue;
        };
        if counted != Some(vi) {
            counted = Some(vi);
            let kb = v.anon_huge_kb.unwrap_or(0) + v.file_pmd_kb.unwrap_or(0);
            left_in_vma = kb * 1024 / huge_size;
        }
        let mut at = r.start;
        let mut block = r.start.next_multiple_of(huge_size);
        while left_in_vma > 0
            && r.flags.has(PageFlags::PRESENT)
            && block + huge_size <= r.end.min(v.end)
        {
            push_run(&mut out, at, block, r.flags);
            push_run(
                &mut out,
                block,
                block + huge_size,
                r.flags.with(PageFlags::HUGE),
            );
            left_in_vma -= 1;
            at = block + huge_size;
            block = at;
        }
        push_run(&mut out, at, r.end, r.flags);
    }
    *runs = out;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entry_bits_decode() {
        assert_eq!(entry_flags(PM_PRESENT | 0x1234), PageFlags::PRESENT);
        assert_eq!(
            entry_flags(PM_SWAPPED | PM_FILE),
            PageFlags::SWAPPED.with(PageFlags::FILE)
        );
        assert_eq!(
            entry_flags(0x1234),
            PageFlags::NONE,
            "a PFN alone is not presence"
        );
    }

    #[test]
    fn smaps_counts_become_aligned_full_blocks() {
        const M2: u64 = 2 << 20;
        let vma = Vma {
            start: 0x4000_0000 - 0x1000,
            end: 0x4000_0000 + 3 * M2,
            perms: "rw-p".into(),
            offset: 0,
            inode: 0,
            path: String::new(),
            anon_huge_kb: Some(2048),
            file_pmd_kb: None,
        };
        // Present from the VMA's start over two full aligned blocks.
        let mut runs = vec![PageRun {
            start: vma.start,
            end: 0x4000_0000 + 2 * M2,
            flags: PageFlags::PRESENT,
        }];
        mark_pmd_blocks(&[vma], &mut runs, M2);
        let huge: Vec<_> = runs
            .iter()
            .filter(|r| r.flags.has(PageFlags::HUGE))
            .collect();
        assert_eq!(huge.len(), 1, "smaps says one huge page");
        assert_eq!(
            (huge[0].start, huge[0].end),
            (0x4000_0000, 0x4000_0000 + M2)
        );
        let total: u64 = runs.iter().map(|r| r.end - r.start).sum();
        assert_eq!(total, 0x1000 + 2 * M2, "no page lost or added");
    }
}
