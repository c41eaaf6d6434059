//! `/proc/PID/maps` and the per-VMA sizes of `/proc/PID/smaps`.
//!
//! A maps line is `start-end perms offset dev inode   path`, where the path
//! is optional, may hold spaces, and may end in ` (deleted)`; pseudo paths
//! are bracketed (`[heap]`, `[stack]`, `[vdso]`, `[anon:name]`). The parser
//! takes the path as everything after the inode and its padding, so spaces
//! inside it survive.
//!
//! Invariant: [`parse_maps`] never panics; a line it cannot read is skipped
//! and counted, never guessed.

use serde::Serialize;

/// One virtual memory area, as maps (and smaps, when read) describe it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Vma {
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
    /// `rwxp` or `rw-s` as maps prints it.
    pub perms: String,
    pub offset: u64,
    pub inode: u64,
    /// The path, pseudo path (`[heap]`) or empty for an anonymous mapping.
    pub path: String,
    /// `AnonHugePages` of smaps: anonymous memory mapped by PMD leaves, kB.
    pub anon_huge_kb: Option<u64>,
    /// `FilePmdMapped` of smaps: file or shmem memory mapped by PMD leaves, kB.
    pub file_pmd_kb: Option<u64>,
}

impl Vma {
    pub fn len(&self) -> u64 {
        self.end - self.start
    }
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
    /// Shared mapping (`s` in the fourth permission column).
    pub fn is_shared(&self) -> bool {
        self.perms.as_bytes().get(3) == Some(&b's')
    }
    /// Private memory not backed by a file: the kind THP and the zero page
    /// serve (`[heap]`, `[stack]`, `[anon:...]` or no path at all).
    pub fn is_anonymous(&self) -> bool {
        !self.is_shared()
            && self.inode == 0
            && (self.path.is_empty()
                || self.path == "[heap]"
                || self.path.starts_with("[stack")
                || self.path.starts_with("[anon:"))
    }
    /// The path without the ` (deleted)` mark of an unlinked file.
    pub fn is_deleted(&self) -> bool {
        self.inode != 0 && self.path.ends_with(" (deleted)")
    }
}

/// The VMAs of a maps text, in address order, and how many lines could
/// not be read.
pub fn parse_maps(text: &str) -> (Vec<Vma>, usize) {
    let mut vmas = Vec::new();
    let mut bad = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match parse_line(line) {
            Some(v) => vmas.push(v),
            None => bad += 1,
        }
    }
    (vmas, bad)
}

/// One maps line, or `None` if its fixed fields are malformed.
pub fn parse_line(line: &str) -> Option<Vma> {
    let mut rest = line;
    let mut field = || -> Option<&str> {
        let t = rest.trim_start_matches(' ');
        let end = t.find(' ').unwrap_or(t.len());
        let (f, r) = t.split_at(end);
        rest = r;
        (!f.is_empty()).then_some(f)
    };
    let range = field()?;
    let perms = field()?;
    let offset = field()?;
    let _dev = field()?;
    let inode = field()?;
    let (s, e) = range.split_once('-')?;
    let start = u64::from_str_radix(s, 16).ok()?;
    let end = u64::from_str_radix(e, 16).ok()?;
    if end < start || perms.len() != 4 {
        return None;
    }
    Some(Vma {
        start,
        end,
        perms: perms.to_string(),
        offset: u64::from_str_radix(offset, 16).ok()?,
        inode: inode.parse().ok()?,
        // maps pads the inode to a column; the path is what follows.
        path: rest.trim_start_matches(' ').to_string(),
        anon_huge_kb: None,
        file_pmd_kb: None,
    })
}

/// Fills `anon_huge_kb` and `file_pmd_kb` from an smaps text: each VMA's
/// header line is a maps line, followed by `Key: value kB` lines.
pub fn apply_smaps(vmas: &mut [Vma], smaps: &str) {
    let mut current: Option<usize> = None;
    for line in smaps.lines() {
        if let Some(v) = header_start(line) {
            current = vmas.binary_search_by_key(&v, |m| m.start).ok();
            continue;
        }
        let Some(i) = current else { continue };
        if let Some(kb) = kb_field(line, "AnonHugePages") {
            vmas[i].anon_huge_kb = Some(kb);
        } else if let Some(kb) = kb_field(line, "FilePmdMapped") {
            vmas[i].file_pmd_kb = Some(kb);
        }
    }
}

/// The start of a VMA header line of smaps (`7f..-7f.. rw-p ...`); `None`
/// for a `Key: value` line.
fn header_start(line: &str) -> Option<u64> {
    let (range, _) = line.split_once(' ')?;
    let (s, e) = range.split_once('-')?;
    if e.is_empty() || !e.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u64::from_str_radix(s, 16).ok()
}

fn kb_field(line: &str, key: &str) -> Option<u64> {
    let rest = line.strip_prefix(key)?.strip_prefix(':')?;
    rest.trim().strip_suffix("kB")?.trim().parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55d0c0a00000-55d0c0a2a000 r--p 00000000 fd:01 1835050                    /usr/bin/my prog
55d0c2000000-55d0c2021000 rw-p 00000000 00:00 0                          [heap]
7f1c00000000-7f1c00400000 rw-s 00000000 00:01 4096                       /memfd:pool (deleted)
7f1c00400000-7f1c00600000 rw-p 00000000 00:00 0 
7f1c00600000-7f1c00601000 rw-p 00000000 00:00 0                          [anon:my arena]
7ffc8d3e0000-7ffc8d401000 rw-p 00000000 00:00 0                          [stack]
7ffc8d5f0000-7ffc8d5f2000 r-xp 00000000 00:00 0                          [vdso]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
";

    #[test]
    fn odd_lines_keep_their_paths_and_kinds() {
        let (v, bad) = parse_maps(MAPS);
        assert_eq!(bad, 0);
        assert_eq!(v.len(), 8);
        assert_eq!(v[0].path, "/usr/bin/my prog", "a space inside a path");
        assert_eq!(v[0].inode, 1835050);
        assert!(!v[0].is_anonymous());
        assert!(v[1].is_anonymous(), "[heap]");
        assert_eq!(v[2].path, "/memfd:pool (deleted)");
        assert!(v[2].is_deleted() && v[2].is_shared() && !v[2].is_anonymous());
        assert_eq!(v[3].path, "", "trailing blank after the inode");
        assert!(v[3].is_anonymous());
        assert_eq!(v[3].len(), 2 << 20);
        assert_eq!(v[4].path, "[anon:my arena]");
        assert!(v[4].is_anonymous());
        assert!(v[5].is_anonymous(), "[stack]");
        assert_eq!(v[6].path, "[vdso]");
        assert!(!v[6].is_anonymous(), "[vdso] is not anonymous memory");
        assert_eq!(v[7].start, 0xffff_ffff_ff60_0000);
    }

    #[test]
    fn malformed_lines_are_counted_not_guessed() {
        let text = "zz-10 rw-p 0 00:00 0\n1000-2000 rw-p 0 00:00\n2000-1000 rw-p 0 00:00 0\n1000-2000 rwp 0 00:00 0\n";
        let (v, bad) = parse_maps(text);
        assert!(v.is_empty());
        assert_eq!(bad, 4);
    }

    #[test]
    fn smaps_sizes_land_on_their_vma() {
        let (mut v, _) = parse_maps(MAPS);
        let smaps = "\
7f1c00000000-7f1c00400000 rw-s 00000000 00:01 4096                       /memfd:pool (deleted)
Size:               4096 kB
AnonHugePages:         0 kB
FilePmdMapped:      2048 kB
7f1c00400000-7f1c00600000 rw-p 00000000 00:00 0 
AnonHugePages:      2048 kB
FilePmdMapped:         0 kB
";
        apply_smaps(&mut v, smaps);
        assert_eq!(v[2].file_pmd_kb, Some(2048));
        assert_eq!(v[2].anon_huge_kb, Some(0));
        assert_eq!(v[3].anon_huge_kb, Some(2048));
        assert_eq!(v[0].anon_huge_kb, None, "not in this smaps text");
    }
}
