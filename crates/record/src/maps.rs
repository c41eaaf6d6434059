//! /proc/PID/maps at exec: the mappings the kernel and the loader made
//! before the first recorded system call, as trace regions.

use crate::space::{Mapping, Space, STACK_RESERVE};
use trace::{MapFlags, Prot, Record, RegionKind};

/// One line of /proc/PID/maps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MapsLine {
    pub start: u64,
    pub end: u64,
    pub prot: Prot,
    pub shared: bool,
    pub path: String,
}

/// Parses one line; `None` for a line that is not a mapping.
pub fn parse_line(line: &str) -> Option<MapsLine> {
    let mut it = line.splitn(6, ' ');
    let range = it.next()?;
    let perms = it.next()?.as_bytes();
    let (_offset, _dev, _inode) = (it.next()?, it.next()?, it.next()?);
    let path = it.next().map_or("", str::trim_start).to_string();
    let (s, e) = range.split_once('-')?;
    let start = u64::from_str_radix(s, 16).ok()?;
    let end = u64::from_str_radix(e, 16).ok()?;
    if perms.len() < 4 || end <= start {
        return None;
    }
    let mut p = 0;
    if perms[0] == b'r' {
        p |= Prot::READ;
    }
    if perms[1] == b'w' {
        p |= Prot::WRITE;
    }
    if perms[2] == b'x' {
        p |= Prot::EXEC;
    }
    Some(MapsLine {
        start,
        end,
        prot: Prot(p),
        shared: perms[3] == b's',
        path,
    })
}

/// Emits the regions of `maps` (the text of /proc/PID/maps) into `space`.
pub fn regions_at_exec(maps: &str, space: &mut Space, out: &mut Vec<Record>) {
    for l in maps.lines().filter_map(parse_line) {
        let (kind, start) = match l.path.as_str() {
            // Above the user address space: never faulted through tables.
            "[vsyscall]" => continue,
            // Room below the stack's top for it to grow into.
            "[stack]" => (
                RegionKind::Stack,
                l.start.min(l.end.saturating_sub(STACK_RESERVE)),
            ),
            "[heap]" => (RegionKind::Heap, l.start),
            p if p.starts_with('[') => (RegionKind::Other, l.start),
            "" => (RegionKind::Anon, l.start),
            _ => (RegionKind::File, l.start),
        };
        let flags = MapFlags(if l.shared { MapFlags::SHARED } else { 0 });
        let m = Mapping {
            kind,
            prot: l.prot,
            flags,
            name: l.path,
        };
        space.map(start, l.end - start, m, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_of_every_kind_parse() {
        let l =
            parse_line("7f00a000-7f00c000 r-xp 00002000 08:01 1234   /usr/lib/x y.so (deleted)")
                .unwrap();
        assert_eq!((l.start, l.end), (0x7f00a000, 0x7f00c000));
        assert_eq!(l.prot, Prot(Prot::READ | Prot::EXEC));
        assert_eq!(l.path, "/usr/lib/x y.so (deleted)");
        let anon = parse_line("7f00c000-7f00d000 rw-s 00000000 00:00 0 ").unwrap();
        assert!(anon.shared);
        assert_eq!(anon.path, "");
        assert!(parse_line("garbage").is_none());
    }

    #[test]
    fn the_stack_gets_room_to_grow_and_vsyscall_is_left_out() {
        let maps = "\
7ffd0000000-7ffd0021000 rw-p 00000000 00:00 0                          [stack]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
";
        let mut s = Space::default();
        let mut out = Vec::new();
        regions_at_exec(maps, &mut s, &mut out);
        assert_eq!(out.len(), 1);
        let Record::Map(m) = &out[0] else { panic!() };
        assert_eq!(m.kind, RegionKind::Stack);
        assert_eq!(m.native + m.size, 0x7ffd0021000);
        assert_eq!(m.size, STACK_RESERVE);
        assert!(s.locate(0x7ffd0021000 - STACK_RESERVE).is_some());
    }
}
