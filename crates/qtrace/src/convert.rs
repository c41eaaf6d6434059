//! The plugin's stream into trace records: addresses become (region,
//! offset), memory system calls become the records `record` makes of them
//! (shared code: `record::calls`), vCPUs become trace threads.
//!
//! Regions: those the program's system calls make are known from the
//! calls; those QEMU's loader made before the first instruction (the
//! program, the dynamic loader, the stack) come from the host's maps at
//! that moment, and each becomes a region when the program first touches
//! it or a system call first names it (QEMU's own mappings in that list
//! are never touched by the program, so never become regions).
//!
//! ## Invariants
//! 1. Every record written names a region the trace has mapped, at an
//!    offset inside it (addresses no region holds are counted, not
//!    written, and so are the hits that follow such an access).
//! 2. A `Hits` record follows the access it belongs to, with nothing of
//!    another thread in between (the plugin writes them in one block).

use crate::wire::{self, ADDR_MASK, TAG_SHIFT};
use record::maps::{parse_line, MapsLine};
use record::space::Space;
use std::collections::BTreeMap;
use std::io::Write;
use trace::{MapFlags, Prot, Record, RegionId, RegionKind, TraceWriter};

/// What a conversion counted.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counts {
    /// Accesses written as records.
    pub accesses: u64,
    /// Accesses written as part of `Hits` records.
    pub hits: u64,
    pub syscalls: u64,
    /// Accesses (and their hits) at addresses no region held.
    pub unattributed: u64,
    /// Accesses the plugin could not carry (vCPU index too high).
    pub lost: u64,
    pub threads: u32,
    pub ended: bool,
}

/// The converter; [`Converter::block`] takes the plugin's blocks in order.
pub struct Converter<W: Write> {
    writer: TraceWriter<W>,
    space: Space,
    /// The host's mappings at the first instruction not yet made regions.
    snapshot: BTreeMap<u64, MapsLine>,
    /// vCPU index -> trace thread.
    threads: Vec<u32>,
    current: Option<u32>,
    /// The last interval an address was found in: (start, end, id, base).
    cache: (u64, u64, RegionId, u64),
    last_dropped: bool,
    heap_base: Option<u64>,
    out: Vec<Record>,
    pub counts: Counts,
}

fn kind_of(l: &MapsLine) -> RegionKind {
    match l.path.as_str() {
        "" => {
            if l.shared {
                RegionKind::Shmem
            } else {
                RegionKind::Anon
            }
        }
        "[stack]" => RegionKind::Stack,
        "[heap]" => RegionKind::Heap,
        p if p.starts_with('[') => RegionKind::Other,
        p if p.starts_with("/dev/shm/") || p.starts_with("/memfd:") => RegionKind::Shmem,
        _ => RegionKind::File,
    }
}

impl<W: Write> Converter<W> {
    pub fn new(writer: TraceWriter<W>) -> Self {
        Converter {
            writer,
            space: Space::default(),
            snapshot: BTreeMap::new(),
            threads: Vec::new(),
            current: None,
            cache: (0, 0, 0, 0),
            last_dropped: false,
            heap_base: None,
            out: Vec::new(),
            counts: Counts::default(),
        }
    }

    pub fn finish(self) -> std::io::Result<(W, Counts)> {
        let c = self.counts;
        Ok((self.writer.finish()?, c))
    }

    fn flush_out(&mut self) -> std::io::Result<()> {
        for r in self.out.drain(..) {
            self.writer.push(&r)?;
        }
        Ok(())
    }

    /// Makes regions of the snapshot's mappings that overlap `[a, a + len)`.
    fn materialize(&mut self, a: u64, len: u64) -> std::io::Result<()> {
        let end = a.saturating_add(len.max(1));
        let first = self.snapshot.range(..=a).next_back().map_or(a, |(&s, _)| s);
        let hit: Vec<u64> = self
            .snapshot
            .range(first..end)
            .filter(|(_, l)| l.end > a)
            .map(|(&s, _)| s)
            .collect();
        for s in hit {
            let l = self.snapshot.remove(&s).expect("listed");
            let flags = MapFlags(if l.shared { MapFlags::SHARED } else { 0 });
            let mut out = std::mem::take(&mut self.out);
            self.space.map(
                l.start,
                l.end - l.start,
                kind_of(&l),
                l.prot,
                flags,
                l.path.clone(),
                &mut out,
            );
            self.out = out;
        }
        self.flush_out()
    }

    /// Finds `addr`'s region into the cache; false if none holds it.
    #[cold]
    fn refill(&mut self, addr: u64) -> std::io::Result<bool> {
        if self.space.interval(addr).is_none() {
            self.materialize(addr, 1)?;
        }
        Ok(match self.space.interval(addr) {
            Some(iv) => {
                self.cache = iv;
                true
            }
            None => false,
        })
    }

    #[inline]
    fn access(&mut self, addr: u64, write: bool) -> std::io::Result<()> {
        let (s, e, ..) = self.cache;
        if !(s..e).contains(&addr) && !self.refill(addr)? {
            self.counts.unattributed += 1;
            self.last_dropped = true;
            return Ok(());
        }
        self.last_dropped = false;
        self.counts.accesses += 1;
        let (_, _, id, base) = self.cache;
        self.writer.push(&Record::Access {
            id,
            offset: addr - base,
            write,
        })
    }

    fn syscall(&mut self, nr: i64, a: [u64; 6], ret: i64, path: String) -> std::io::Result<()> {
        self.counts.syscalls += 1;
        self.cache = (0, 0, 0, 0);
        if !(ret < 0 && ret > -4096) {
            // The loader's mappings a call names become regions first, so
            // that the call applies to them.
            match nr {
                libc::SYS_mmap => self.materialize(ret as u64, a[1])?,
                libc::SYS_brk => {
                    let base = *self.heap_base.get_or_insert(ret as u64);
                    if ret as u64 > base {
                        self.materialize(base, ret as u64 - base)?;
                    }
                }
                libc::SYS_mremap => {
                    self.materialize(a[0], a[1])?;
                    self.materialize(ret as u64, a[2])?;
                }
                _ => self.materialize(a[0], a[1])?,
            }
        }
        let mut out = std::mem::take(&mut self.out);
        record::calls::apply(&mut self.space, nr, a, ret, &|_| path.clone(), &mut out);
        self.out = out;
        self.flush_out()
    }

    fn thread(&mut self, vcpu: u32) -> std::io::Result<()> {
        let v = vcpu as usize;
        if self.threads.len() <= v {
            self.threads.resize(v + 1, u32::MAX);
        }
        if self.threads[v] == u32::MAX {
            self.threads[v] = self.counts.threads;
            self.counts.threads += 1;
        }
        let tid = self.threads[v];
        if self.current != Some(tid) {
            self.current = Some(tid);
            self.writer.push(&Record::Thread { tid })?;
        }
        Ok(())
    }

    /// One block of the plugin's stream.
    ///
    /// # Errors
    /// Writing the trace, or a block that does not parse.
    pub fn block(&mut self, vcpu: u32, words: &[u64]) -> std::io::Result<()> {
        let bad =
            |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
        let mut i = 0;
        let mut threaded = false;
        while i < words.len() {
            let w = words[i];
            i += 1;
            let tag = w >> TAG_SHIFT;
            if tag <= wire::STORE {
                if !threaded {
                    self.thread(vcpu)?;
                    threaded = true;
                }
                self.access(w & ADDR_MASK, tag == wire::STORE)?;
                continue;
            }
            match tag {
                wire::HITS => {
                    let n = w & ADDR_MASK;
                    if self.last_dropped {
                        self.counts.unattributed += n;
                    } else {
                        self.counts.hits += n;
                        self.writer.push(&Record::Hits { count: n })?;
                    }
                }
                wire::SYSCALL => {
                    if !threaded {
                        self.thread(vcpu)?;
                        threaded = true;
                    }
                    let nr = (w & 0xffff) as i64;
                    let plen = (w >> 16 & 0xffff) as usize;
                    let Some(v) = words.get(i..i + 7) else {
                        return Err(bad("a system call record cut short"));
                    };
                    let a: [u64; 6] = v[..6].try_into().expect("6 words");
                    let ret = v[6] as i64;
                    i += 7;
                    let (p, n) = wire::text(&words[i..], plen)
                        .ok_or_else(|| bad("a system call's path cut short"))?;
                    i += n;
                    self.syscall(nr, a, ret, String::from_utf8_lossy(&p).into_owned())?;
                }
                wire::MAPS => {
                    let len = (w & 0xffff_ffff) as usize;
                    let (t, n) = wire::text(&words[i..], len)
                        .ok_or_else(|| bad("the maps text cut short"))?;
                    i += n;
                    for l in String::from_utf8_lossy(&t).lines().filter_map(parse_line) {
                        // Above the user address space: no tables.
                        if l.path != "[vsyscall]" && l.prot != Prot(0) {
                            self.snapshot.insert(l.start, l);
                        }
                    }
                }
                wire::END => {
                    self.counts.lost = w & ADDR_MASK;
                    self.counts.ended = true;
                }
                t => return Err(bad(&format!("an unknown word kind {t}"))),
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use trace::TraceReader;

    fn sys(nr: u64, a: [u64; 6], ret: u64) -> Vec<u64> {
        let mut v = vec![3 << TAG_SHIFT | nr];
        v.extend_from_slice(&a);
        v.push(ret);
        v
    }

    fn convert(blocks: &[(u32, Vec<u64>)]) -> (Vec<Record>, Counts) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ptl");
        let w = TraceWriter::create(&path, &trace::Header::default()).unwrap();
        let mut c = Converter::new(w);
        for (v, b) in blocks {
            c.block(*v, b).unwrap();
        }
        let (_, counts) = c.finish().unwrap();
        let mut recs = Vec::new();
        TraceReader::open(&path)
            .unwrap()
            .for_each::<trace::TraceError>(|r| {
                recs.push(r.clone());
                Ok(())
            })
            .unwrap();
        (recs, counts)
    }

    #[test]
    fn a_loader_mapping_becomes_a_region_at_its_first_touch() {
        let maps = b"400000-402000 rw-p 00000000 00:00 0 \n7f0000-7f1000 r-xp 00000000 00:00 0  /usr/bin/qemu\n";
        let mut b = vec![4 << TAG_SHIFT | maps.len() as u64];
        b.extend(maps.chunks(8).map(|c| {
            let mut w = [0u8; 8];
            w[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(w)
        }));
        let blocks = vec![
            (0, b),
            (
                0,
                vec![
                    0x401008,
                    2 << TAG_SHIFT | 5,
                    1 << TAG_SHIFT | 0x401010,
                    0x900000,
                ],
            ),
        ];
        let (recs, counts) = convert(&blocks);
        let Record::Map(m) = &recs[1] else {
            panic!("{recs:?}")
        };
        assert_eq!(
            (m.size, m.native, m.kind),
            (0x2000, 0x400000, RegionKind::Anon)
        );
        assert_eq!(
            recs[2..],
            [
                Record::Access {
                    id: m.id,
                    offset: 0x1008,
                    write: false
                },
                Record::Hits { count: 5 },
                Record::Access {
                    id: m.id,
                    offset: 0x1010,
                    write: true
                },
            ]
        );
        // The QEMU binary is never touched, so never a region; the access
        // at 0x900000 has none.
        assert_eq!(recs.len(), 5);
        assert_eq!(
            (counts.accesses, counts.hits, counts.unattributed),
            (2, 5, 1)
        );
    }

    #[test]
    fn an_mmap_then_munmap_in_the_stream_bracket_the_accesses() {
        let mut b = sys(9, [0, 0x3000, 3, 0x22, u64::MAX, 0], 0x7000_0000);
        b.push(1 << TAG_SHIFT | 0x7000_2000);
        b.extend(sys(11, [0x7000_0000, 0x3000, 0, 0, 0, 0], 0));
        b.push(0x7000_2000);
        let (recs, counts) = convert(&[(3, b)]);
        assert!(matches!(recs[0], Record::Thread { tid: 0 }));
        let Record::Map(m) = &recs[1] else {
            panic!("{recs:?}")
        };
        assert_eq!(
            recs[2],
            Record::Access {
                id: m.id,
                offset: 0x2000,
                write: true
            }
        );
        assert_eq!(
            recs[3],
            Record::Unmap {
                id: m.id,
                offset: 0,
                len: 0x3000
            }
        );
        assert_eq!(recs.len(), 4);
        assert_eq!((counts.syscalls, counts.unattributed), (2, 1));
    }
}
