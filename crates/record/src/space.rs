//! The recorded process's address space as the trace names it: which trace
//! region each native address belongs to, and the records each system
//! call's effect becomes.
//!
//! ## Invariants
//! 1. `live` holds disjoint native intervals, each in exactly one region;
//!    every record this module emits names a region and an offset inside
//!    its current size (the trace crate's invariant 2).
//! 2. A region id is never reused: a new mapping over an old one first
//!    unmaps the overlapped parts of the old, then gets a new id.

use std::collections::BTreeMap;
use trace::{MapEvent, MapFlags, Prot, Record, RegionId, RegionKind};

/// The stack region reserved below the stack's top at exec: room for the
/// stack to grow into (Linux's default RLIMIT_STACK), since a growing stack
/// makes no system call.
pub const STACK_RESERVE: u64 = 8 << 20;

#[derive(Debug, Clone, Copy)]
struct Interval {
    end: u64,
    id: RegionId,
    /// The region's native base: offsets are from here.
    base: u64,
}

#[derive(Debug, Clone, Copy)]
struct Heap {
    id: RegionId,
    base: u64,
    size: u64,
    announced: bool,
}

/// The address space, as trace regions.
#[derive(Debug, Default)]
pub struct Space {
    live: BTreeMap<u64, Interval>,
    /// Each region's current size.
    sizes: BTreeMap<RegionId, u64>,
    next_id: RegionId,
    heap: Option<Heap>,
    /// Events replayed approximately (partial mremap), for the notes.
    pub approximations: u64,
}

const PAGE: u64 = 4096;

fn page_up(v: u64) -> u64 {
    v.saturating_add(PAGE - 1) & !(PAGE - 1)
}

/// What a new mapping is, besides where: the fields of its trace record.
#[derive(Debug, Clone)]
pub struct Mapping {
    pub kind: RegionKind,
    pub prot: Prot,
    pub flags: MapFlags,
    /// The mapped file's path ("" for anonymous memory).
    pub name: String,
}

impl Mapping {
    /// A private anonymous read-write mapping.
    pub fn anon() -> Mapping {
        Mapping {
            kind: RegionKind::Anon,
            prot: Prot(Prot::READ | Prot::WRITE),
            flags: MapFlags::default(),
            name: String::new(),
        }
    }
}

impl Space {
    fn new_id(&mut self) -> RegionId {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    /// The region and offset of native address `va`.
    pub fn locate(&self, va: u64) -> Option<(RegionId, u64)> {
        let (_, iv) = self.live.range(..=va).next_back()?;
        (va < iv.end).then(|| (iv.id, va - iv.base))
    }

    /// The mapped interval holding `va`: (start, end, region, the region's
    /// native base), for a caller that caches the last lookup.
    pub fn interval(&self, va: u64) -> Option<(u64, u64, RegionId, u64)> {
        let (&s, iv) = self.live.range(..=va).next_back()?;
        (va < iv.end).then_some((s, iv.end, iv.id, iv.base))
    }

    /// The parts of `[addr, addr + len)` that are mapped, per interval:
    /// (interval start, overlap start, overlap end).
    fn overlaps(&self, addr: u64, len: u64) -> Vec<(u64, u64, u64)> {
        let end = addr.saturating_add(len);
        let first = self
            .live
            .range(..=addr)
            .next_back()
            .map_or(addr, |(&s, _)| s);
        self.live
            .range(first..end)
            .filter(|(_, iv)| iv.end > addr)
            .map(|(&s, iv)| (s, s.max(addr), iv.end.min(end)))
            .collect()
    }

    /// One record per mapped part of `[addr, addr + len)`, made by `f`
    /// from (region, offset, length).
    pub fn ranged(
        &self,
        addr: u64,
        len: u64,
        out: &mut Vec<Record>,
        f: impl Fn(RegionId, u64, u64) -> Record,
    ) {
        for (s, a, e) in self.overlaps(addr, page_up(len)) {
            let iv = self.live[&s];
            out.push(f(iv.id, a - iv.base, e - a));
        }
    }

    /// munmap: Unmap records, and the intervals cut.
    pub fn unmap(&mut self, addr: u64, len: u64, out: &mut Vec<Record>) {
        let len = page_up(len);
        if len == 0 {
            return;
        }
        let end = addr.saturating_add(len);
        for (s, a, e) in self.overlaps(addr, len) {
            let iv = self.live.remove(&s).expect("an overlap is live");
            out.push(Record::Unmap {
                id: iv.id,
                offset: a - iv.base,
                len: e - a,
            });
            if s < a {
                self.live.insert(s, Interval { end: a, ..iv });
            }
            if e < iv.end {
                self.live.insert(e, iv);
            }
        }
        if let Some(h) = self.heap {
            if addr <= h.base && end >= h.base + h.size {
                self.heap = None;
            }
        }
    }

    /// A new mapping of `len` bytes at `addr` (what was there is unmapped
    /// first, as MAP_FIXED does).
    pub fn map(&mut self, addr: u64, len: u64, m: Mapping, out: &mut Vec<Record>) -> RegionId {
        let Mapping {
            kind,
            prot,
            flags,
            name,
        } = m;
        let len = page_up(len);
        self.unmap(addr, len, out);
        let id = self.new_id();
        self.live.insert(
            addr,
            Interval {
                end: addr + len,
                id,
                base: addr,
            },
        );
        self.sizes.insert(id, len);
        out.push(Record::Map(MapEvent {
            id,
            size: len,
            native: addr,
            kind,
            prot,
            flags,
            name,
        }));
        id
    }

    /// brk returned `brk`: the heap grows, shrinks or is found.
    pub fn brk(&mut self, brk: u64, out: &mut Vec<Record>) {
        let brk = page_up(brk);
        let Some(mut h) = self.heap else {
            let id = self.new_id();
            self.heap = Some(Heap {
                id,
                base: brk,
                size: 0,
                announced: false,
            });
            return;
        };
        if brk < h.base {
            return;
        }
        let size = brk - h.base;
        if size == h.size {
            return;
        }
        if !h.announced {
            if size == 0 {
                return;
            }
            // The heap's first growth: any mapping in the way is replaced,
            // as brk never overlaps a mapping in Linux.
            self.unmap(h.base, size, out);
            out.push(Record::Map(MapEvent {
                id: h.id,
                size,
                native: h.base,
                kind: RegionKind::Heap,
                prot: Prot(Prot::READ | Prot::WRITE),
                flags: MapFlags::default(),
                name: "[heap]".into(),
            }));
            h.announced = true;
        } else {
            if size < h.size {
                // The tail given back is unmapped first, then the region
                // shrinks (the trace's offsets stay inside its size).
                let (from, to) = (h.base + size, h.base + h.size);
                self.unmap(from, to - from, out);
            }
            out.push(Record::Resize { id: h.id, size });
        }
        self.live.remove(&h.base);
        if size > 0 {
            self.live.insert(
                h.base,
                Interval {
                    end: h.base + size,
                    id: h.id,
                    base: h.base,
                },
            );
        }
        self.sizes.insert(h.id, size);
        h.size = size;
        self.heap = Some(h);
    }

    /// execve: the old address space ends whole (every live part is
    /// unmapped), ids keep counting up.
    pub fn exec(&mut self, out: &mut Vec<Record>) {
        let starts: Vec<(u64, u64)> = self.live.iter().map(|(&s, iv)| (s, iv.end)).collect();
        for (s, e) in starts {
            self.unmap(s, e - s, out);
        }
        self.heap = None;
    }

    /// mremap moved or resized `[old, old + old_len)` to `[new, new + new_len)`.
    pub fn mremap(
        &mut self,
        old: u64,
        old_len: u64,
        new: u64,
        new_len: u64,
        out: &mut Vec<Record>,
    ) {
        let (old_len, new_len) = (page_up(old_len), page_up(new_len));
        let whole = self.live.get(&old).copied().filter(|iv| {
            iv.base == old && iv.end == old + old_len && self.sizes.get(&iv.id) == Some(&old_len)
        });
        match whole {
            Some(iv) if new == old => {
                // In place: the region grows or shrinks.
                if new_len < old_len {
                    self.unmap(old + new_len, old_len - new_len, out);
                }
                self.unmap(old + old_len, new_len.saturating_sub(old_len), out);
                out.push(Record::Resize {
                    id: iv.id,
                    size: new_len,
                });
                self.live.insert(
                    old,
                    Interval {
                        end: old + new_len,
                        ..iv
                    },
                );
                self.sizes.insert(iv.id, new_len);
            }
            Some(iv) => {
                self.live.remove(&old);
                self.unmap(new, new_len, out);
                let id = self.new_id();
                out.push(Record::Move {
                    id: iv.id,
                    new_id: id,
                    size: new_len,
                    native: new,
                });
                self.live.insert(
                    new,
                    Interval {
                        end: new + new_len,
                        id,
                        base: new,
                    },
                );
                self.sizes.insert(id, new_len);
            }
            None => {
                // Part of a region, or several: recorded as the old part
                // unmapped and a new anonymous mapping (its pages fault in
                // again on replay).
                self.approximations += 1;
                self.unmap(old, old_len, out);
                self.map(new, new_len, Mapping::anon(), out);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A private anonymous read-write mapping.
    fn anon(s: &mut Space, addr: u64, len: u64, out: &mut Vec<Record>) -> RegionId {
        s.map(addr, len, Mapping::anon(), out)
    }

    #[test]
    fn a_partial_unmap_leaves_the_rest_located() {
        let mut s = Space::default();
        let mut out = Vec::new();
        let id = anon(&mut s, 0x10000, 0x8000, &mut out);
        s.unmap(0x12000, 0x2000, &mut out);
        assert_eq!(s.locate(0x11000), Some((id, 0x1000)));
        assert_eq!(s.locate(0x12000), None);
        assert_eq!(s.locate(0x14000), Some((id, 0x4000)));
        assert_eq!(
            out.last(),
            Some(&Record::Unmap {
                id,
                offset: 0x2000,
                len: 0x2000
            })
        );
    }

    #[test]
    fn a_fixed_map_over_two_regions_unmaps_their_parts_first() {
        let mut s = Space::default();
        let mut out = Vec::new();
        let a = anon(&mut s, 0x10000, 0x4000, &mut out);
        let b = anon(&mut s, 0x14000, 0x4000, &mut out);
        out.clear();
        let c = anon(&mut s, 0x12000, 0x4000, &mut out);
        assert_eq!(
            out[..2],
            [
                Record::Unmap {
                    id: a,
                    offset: 0x2000,
                    len: 0x2000
                },
                Record::Unmap {
                    id: b,
                    offset: 0,
                    len: 0x2000
                },
            ]
        );
        assert_eq!(s.locate(0x13000), Some((c, 0x1000)));
        assert_eq!(s.locate(0x16000), Some((b, 0x2000)));
    }

    #[test]
    fn the_heap_appears_at_its_first_growth_and_resizes_after() {
        let mut s = Space::default();
        let mut out = Vec::new();
        s.brk(0x55_0000_0000, &mut out);
        assert!(out.is_empty());
        s.brk(0x55_0002_1000, &mut out);
        s.brk(0x55_0004_2000, &mut out);
        s.brk(0x55_0001_0000, &mut out);
        let id = match &out[0] {
            Record::Map(m) => {
                assert_eq!(
                    (m.size, m.native, m.kind),
                    (0x21000, 0x55_0000_0000, RegionKind::Heap)
                );
                m.id
            }
            r => panic!("{r:?}"),
        };
        assert_eq!(out[1], Record::Resize { id, size: 0x42000 });
        assert_eq!(
            out[2],
            Record::Unmap {
                id,
                offset: 0x10000,
                len: 0x32000
            }
        );
        assert_eq!(out[3], Record::Resize { id, size: 0x10000 });
        assert_eq!(s.locate(0x55_0000_f000), Some((id, 0xf000)));
        assert_eq!(s.locate(0x55_0001_0000), None);
    }

    #[test]
    fn a_whole_region_moved_by_mremap_keeps_its_pages_under_a_new_id() {
        let mut s = Space::default();
        let mut out = Vec::new();
        let a = anon(&mut s, 0x10000, 0x4000, &mut out);
        out.clear();
        s.mremap(0x10000, 0x4000, 0x80000, 0x8000, &mut out);
        let Record::Move {
            id,
            new_id,
            size,
            native,
        } = out[0]
        else {
            panic!("{out:?}")
        };
        assert_eq!((id, size, native), (a, 0x8000, 0x80000));
        assert_eq!(s.locate(0x87000), Some((new_id, 0x7000)));
        assert_eq!(s.locate(0x10000), None);
        out.clear();
        s.mremap(0x80000, 0x8000, 0x80000, 0x2000, &mut out);
        assert_eq!(
            out.last(),
            Some(&Record::Resize {
                id: new_id,
                size: 0x2000
            })
        );
        assert_eq!(s.approximations, 0);
    }
}
