//! The child's own memory against the workload's regions.
//!
//! The placement rule keeps regions without `addr` out of the ranges where
//! Linux puts a program (its rule 7), but the child is a real process: an
//! `addr` the workload chose, an unusual layout (`ulimit -s unlimited`) or
//! memory the parent mapped can still sit where a region must go. The child
//! checks every region against its /proc/self/maps before the baseline, and
//! a collision ends the run before any op with the region, the range and
//! what holds it, instead of an `EEXIST` from some later `mmap`.

use workload::plan::Region;

/// One line of /proc/self/maps: `[start, end)` and its path (or `[heap]`,
/// `[stack]`, empty for anonymous memory).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Mapping<'a> {
    pub start: u64,
    pub end: u64,
    pub path: &'a str,
}

/// The mappings of a /proc/<pid>/maps text (unparsable lines are skipped).
pub(crate) fn mappings(maps: &str) -> impl Iterator<Item = Mapping<'_>> {
    maps.lines().filter_map(|line| {
        let mut fields = line.split_whitespace();
        let (start, end) = fields.next()?.split_once('-')?;
        Some(Mapping {
            start: u64::from_str_radix(start, 16).ok()?,
            end: u64::from_str_radix(end, 16).ok()?,
            path: fields.nth(4).unwrap_or(""),
        })
    })
}

/// The first region (by id) that overlaps a mapping of `maps`, with that
/// mapping's range.
pub(crate) fn first_collision(maps: &str, regions: &[Region]) -> Option<(usize, u64, u64)> {
    regions.iter().enumerate().find_map(|(i, r)| {
        let end = r.addr.saturating_add(r.size);
        mappings(maps)
            .find(|m| m.start < end && r.addr < m.end)
            .map(|m| (i, m.start, m.end))
    })
}

/// What holds `[start, end)` in words, from a maps text of the same
/// address space (the parent's: the child inherited its mappings).
pub(crate) fn describe(maps: &str, start: u64, end: u64) -> String {
    let path = mappings(maps)
        .find(|m| m.start == start && m.end == end)
        .map(|m| m.path);
    let what = match path {
        Some("") => "anonymous memory of the program".to_string(),
        Some(p) => p.to_string(),
        None => "memory the child set up for the run (a thread stack or buffer)".to_string(),
    };
    format!("the program's own mapping {start:#x}-{end:#x} ({what})")
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAPS: &str = "\
55842e0c1000-55842e0c3000 r--p 00000000 fe:00 247026                     /usr/bin/ptlab
55842f000000-55842f021000 rw-p 00000000 00:00 0                          [heap]
7f9e21000000-7f9e21200000 rw-p 00000000 00:00 0 
7ffd30c83000-7ffd30ca4000 rw-p 00000000 00:00 0                          [stack]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
";

    fn region(name: &str, addr: u64, size: u64) -> Region {
        Region {
            name: name.into(),
            size,
            addr,
        }
    }

    #[test]
    fn parses_ranges_and_paths() {
        let m: Vec<Mapping> = mappings(MAPS).collect();
        assert_eq!(m.len(), 5);
        assert_eq!(m[0].start, 0x5584_2e0c_1000);
        assert_eq!(m[0].path, "/usr/bin/ptlab");
        assert_eq!(m[1].path, "[heap]");
        assert_eq!(m[2].path, "");
        assert_eq!(m[4].end, 0xffff_ffff_ff60_1000);
    }

    #[test]
    fn finds_the_first_region_that_overlaps_and_only_overlaps() {
        let tib = 1u64 << 40;
        let clear = [region("a", 32 * tib, tib), region("b", 4 << 30, 64 * tib)];
        assert_eq!(first_collision(MAPS, &clear), None);
        // Ends exactly where the executable begins: no overlap.
        let touching = [region("a", 0x5584_2e0c_0000, 0x1000)];
        assert_eq!(first_collision(MAPS, &touching), None);
        // 64 TiB from 32 TiB runs through the executable at 85 TiB.
        let big = [
            region("ok", 4 << 30, 4096),
            region("big", 32 * tib, 64 * tib),
        ];
        assert_eq!(
            first_collision(MAPS, &big),
            Some((1, 0x5584_2e0c_1000, 0x5584_2e0c_3000))
        );
        let on_stack = [region("s", 0x7ffd_30ca_3000, 0x2000)];
        assert_eq!(
            first_collision(MAPS, &on_stack),
            Some((0, 0x7ffd_30c8_3000, 0x7ffd_30ca_4000))
        );
    }

    #[test]
    fn describes_what_holds_the_range() {
        let d = describe(MAPS, 0x5584_2e0c_1000, 0x5584_2e0c_3000);
        assert!(
            d.contains("0x55842e0c1000-0x55842e0c3000 (/usr/bin/ptlab)"),
            "{d}"
        );
        assert!(describe(MAPS, 0x7f9e_2100_0000, 0x7f9e_2120_0000).contains("anonymous"));
        assert!(describe(MAPS, 0x1000, 0x2000).contains("thread stack or buffer"));
    }
}
