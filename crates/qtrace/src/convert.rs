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
//! The plugin writes accesses and hits in the trace format's own encoding
//! (a relative access is the delta from the block's previous access), so a
//! run of accesses that stay in the region of the access before them, with
//! their hits, is copied into the trace as it came: the converter reads each
//! delta only to check that the address stays in that region. An access
//! that leaves it (or the first of a block, or after a call or a chunk's
//! end) is looked up (in a cache indexed by its page first) and written naming its
//! region.
//!
//! ## Invariants
//! 1. Every record written names a region the trace has mapped, at an
//!    offset inside it (addresses no region holds are counted, not
//!    written, and so are the hits that follow such an access).
//! 2. A `Hits` record follows the access it belongs to, with nothing of
//!    another thread in between (the plugin writes them in one block).
//! 3. A copied access's bytes mean what the plugin meant: it is copied only
//!    while the trace's last access is the plugin's previous access of the
//!    same block, in the same region (`near`), so the deltas agree.

use crate::wire;
use record::maps::{parse_line, MapsLine};
use record::space::{Mapping, Space};
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
    /// Child processes the program forked (not traced).
    pub forks: u64,
    /// execve calls the program made (the last, if it succeeded, ended the
    /// trace).
    pub execs: u64,
    pub ended: bool,
}

/// An interval of the address space: (start, end, region, region's base).
type Interval = (u64, u64, RegionId, u64);
/// Entries of the interval cache, indexed by an address's 4 KiB page.
const CACHE: usize = 1 << 12;
const NO_INTERVAL: Interval = (0, 0, 0, 0);

/// The converter; [`Converter::block`] takes the plugin's blocks in order.
pub struct Converter<W: Write> {
    writer: TraceWriter<W>,
    space: Space,
    /// The host's mappings at the first instruction not yet made regions.
    snapshot: BTreeMap<u64, MapsLine>,
    /// vCPU index -> trace thread.
    threads: Vec<u32>,
    current: Option<u32>,
    /// Direct-mapped by page number: the interval an access to a page with
    /// that index was last found in (emptied by every call).
    cache: Box<[Interval]>,
    last_dropped: bool,
    /// The path of the last execve seen since the program's last record:
    /// if the stream ends without the end record, that call succeeded.
    pub pending_exec: Option<String>,
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
            cache: vec![NO_INTERVAL; CACHE].into_boxed_slice(),
            last_dropped: false,
            pending_exec: None,
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
            let m = Mapping {
                kind: kind_of(&l),
                prot: l.prot,
                flags,
                name: l.path.clone(),
            };
            self.space.map(l.start, l.end - l.start, m, &mut out);
            self.out = out;
        }
        self.flush_out()
    }

    /// The interval holding `addr`, from the cache if it has it; `None` if
    /// no region holds it.
    #[inline]
    fn lookup(&mut self, addr: u64) -> std::io::Result<Option<Interval>> {
        let i = (addr >> 12) as usize & (CACHE - 1);
        let iv = self.cache[i];
        if (iv.0..iv.1).contains(&addr) {
            return Ok(Some(iv));
        }
        self.refill(addr, i)
    }

    #[cold]
    fn refill(&mut self, addr: u64, i: usize) -> std::io::Result<Option<Interval>> {
        if self.space.interval(addr).is_none() {
            self.materialize(addr, 1)?;
            self.cache.fill(NO_INTERVAL);
        }
        let found = self.space.interval(addr);
        if let Some(iv) = found {
            self.cache[i] = iv;
        }
        Ok(found)
    }

    fn syscall(&mut self, nr: i64, a: [u64; 6], ret: i64, path: String) -> std::io::Result<()> {
        self.counts.syscalls += 1;
        self.cache.fill(NO_INTERVAL);
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
    pub fn block(&mut self, vcpu: u32, bytes: &[u8]) -> std::io::Result<()> {
        let bad = |what: &str, at: usize| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{what} at byte {at} of a block"),
            )
        };
        let num = |pos: &mut usize, what: &str| {
            let at = *pos;
            trace::varint::get(bytes, pos).ok_or_else(|| bad(what, at))
        };
        let mut pos = 0;
        // The plugin's previous access of this block (invariant 4 there).
        let mut prev = 0u64;
        // The interval of the trace's last access, and whether that access
        // is `prev` (invariant 3).
        let mut cur: Interval = (0, 0, 0, 0);
        let mut near = false;
        // The run being copied: from `run_start`, `run` records, the last
        // access's offset.
        let mut run_start = 0;
        let mut run = 0u32;
        // The accesses the run's records stand for (hits by their count).
        let mut run_acc = 0u64;
        let mut run_last = None;
        let mut threaded = false;
        while pos < bytes.len() {
            let tag = bytes[pos];
            if tag == wire::LOAD || tag == wire::STORE {
                let mut p = pos + 1;
                let d = trace::varint::unzigzag(num(&mut p, "an access cut short")?);
                let addr = prev.wrapping_add(d as u64);
                prev = addr;
                if near && (cur.0..cur.1).contains(&addr) {
                    run += 1;
                    run_acc += 1;
                    run_last = Some(addr - cur.3);
                    self.counts.accesses += 1;
                    pos = p;
                    continue;
                }
                if run > 0 {
                    self.writer
                        .push_encoded(&bytes[run_start..pos], run, run_acc, run_last)?;
                    run = 0;
                    run_acc = 0;
                    run_last = None;
                }
                if !threaded {
                    self.thread(vcpu)?;
                    threaded = true;
                }
                self.pending_exec = None;
                pos = p;
                run_start = pos;
                match self.lookup(addr)? {
                    Some(iv) => {
                        cur = iv;
                        let offset = addr - iv.3;
                        self.writer.push_access(iv.2, offset, tag == wire::STORE)?;
                        self.counts.accesses += 1;
                        self.last_dropped = false;
                        // A chunk closed after it: the next names its region.
                        near = self.writer.last_access() == Some((iv.2, offset));
                    }
                    None => {
                        self.counts.unattributed += 1;
                        self.last_dropped = true;
                        near = false;
                    }
                }
                continue;
            }
            if tag == wire::HITS {
                let mut p = pos + 1;
                let n = num(&mut p, "a hits record cut short")?;
                if self.last_dropped {
                    // Hits of an access no region held: counted, not written.
                    if run > 0 {
                        self.writer
                            .push_encoded(&bytes[run_start..pos], run, run_acc, run_last)?;
                        run = 0;
                        run_acc = 0;
                        run_last = None;
                    }
                    self.counts.unattributed += n;
                    run_start = p;
                } else {
                    self.counts.hits += n;
                    run += 1;
                    run_acc += n;
                }
                pos = p;
                continue;
            }
            if run > 0
                && self
                    .writer
                    .push_encoded(&bytes[run_start..pos], run, run_acc, run_last)?
            {
                near = false;
            }
            run = 0;
            run_acc = 0;
            run_last = None;
            pos = self.other(vcpu, bytes, pos, &mut threaded)?;
            run_start = pos;
            // A call may have changed the regions.
            near = near && tag != wire::SYSCALL;
        }
        if run > 0 {
            self.writer
                .push_encoded(&bytes[run_start..pos], run, run_acc, run_last)?;
        }
        Ok(())
    }

    /// A record of the plugin's own at `bytes[pos]`; returns where the next
    /// starts.
    fn other(
        &mut self,
        vcpu: u32,
        bytes: &[u8],
        pos: usize,
        threaded: &mut bool,
    ) -> std::io::Result<usize> {
        let bad = |what: &str| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!("{what} at byte {pos} of a block"),
            )
        };
        let field = |from: usize, len: usize, what: &str| {
            bytes
                .get(from..from + len)
                .ok_or_else(|| bad(&format!("{what} cut short")))
        };
        let u16_at = |at: usize, what: &str| {
            field(at, 2, what).map(|b| u16::from_le_bytes(b.try_into().expect("2 bytes")))
        };
        let u64_at = |at: usize, what: &str| {
            field(at, 8, what).map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
        };
        let tag = bytes[pos];
        let next = match tag {
            wire::SYSCALL => {
                if !*threaded {
                    self.thread(vcpu)?;
                    *threaded = true;
                }
                self.pending_exec = None;
                let nr = u16_at(pos + 1, "a system call")?;
                let plen = u16_at(pos + 3, "a system call")? as usize;
                let mut v = [0u64; 7];
                for (i, x) in v.iter_mut().enumerate() {
                    *x = u64_at(pos + 5 + 8 * i, "a system call")?;
                }
                let p = field(pos + 61, plen, "a system call's path")?;
                let a: [u64; 6] = v[..6].try_into().expect("6 words");
                self.syscall(
                    i64::from(nr),
                    a,
                    v[6] as i64,
                    String::from_utf8_lossy(p).into_owned(),
                )?;
                pos + 61 + plen
            }
            wire::MAPS => {
                let len = field(pos + 1, 4, "the maps text")?;
                let len = u32::from_le_bytes(len.try_into().expect("4 bytes")) as usize;
                let t = field(pos + 5, len, "the maps text")?;
                // A forked child's or an exec'd program's maps replace the
                // loader's (only the first is in the stream today).
                for l in String::from_utf8_lossy(t).lines().filter_map(parse_line) {
                    // Above the user address space: no tables.
                    if l.path != "[vsyscall]" && l.prot != Prot(0) {
                        self.snapshot.insert(l.start, l);
                    }
                }
                pos + 5 + len
            }
            wire::END => {
                self.counts.lost = u64_at(pos + 1, "the end record")?;
                self.counts.ended = true;
                pos + 9
            }
            wire::EXEC => {
                let len = u16_at(pos + 1, "an exec record")? as usize;
                let p = field(pos + 3, len, "an exec record's path")?;
                self.counts.execs += 1;
                self.pending_exec = Some(String::from_utf8_lossy(p).into_owned());
                pos + 3 + len
            }
            wire::FORK => {
                u64_at(pos + 1, "a fork record")?;
                self.counts.forks += 1;
                pos + 9
            }
            t => return Err(bad(&format!("an unknown record kind {t:#04x}"))),
        };
        Ok(next)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::Encoder;
    use trace::TraceReader;

    fn convert(blocks: &[(u32, Vec<u8>)]) -> (Vec<Record>, Counts) {
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

    fn access(id: RegionId, offset: u64, write: bool) -> Record {
        Record::Access { id, offset, write }
    }

    #[test]
    fn a_loader_mapping_becomes_a_region_at_its_first_touch() {
        let maps = b"400000-402000 rw-p 00000000 00:00 0 \n7f0000-7f1000 r-xp 00000000 00:00 0  /usr/bin/qemu\n";
        let mut m = Encoder::default();
        m.maps(maps);
        let mut a = Encoder::default();
        a.access(0x401008, false)
            .hits(5)
            .access(0x401010, true)
            .access(0x900000, false)
            .hits(3);
        let (recs, counts) = convert(&[(0, m.bytes), (0, a.bytes)]);
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
                access(m.id, 0x1008, false),
                Record::Hits { count: 5 },
                access(m.id, 0x1010, true),
            ]
        );
        // The QEMU binary is never touched, so never a region; the access
        // at 0x900000 has none, nor do its hits.
        assert_eq!(recs.len(), 5);
        assert_eq!(
            (counts.accesses, counts.hits, counts.unattributed),
            (2, 5, 4)
        );
    }

    #[test]
    fn an_mmap_then_munmap_in_the_stream_bracket_the_accesses() {
        let mut b = Encoder::default();
        b.syscall(9, [0, 0x3000, 3, 0x22, u64::MAX, 0], 0x7000_0000, b"")
            .access(0x7000_2000, true)
            .syscall(11, [0x7000_0000, 0x3000, 0, 0, 0, 0], 0, b"")
            .access(0x7000_2000, false);
        let (recs, counts) = convert(&[(3, b.bytes)]);
        assert!(matches!(recs[0], Record::Thread { tid: 0 }));
        let Record::Map(m) = &recs[1] else {
            panic!("{recs:?}")
        };
        assert_eq!(recs[2], access(m.id, 0x2000, true));
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

    proptest::proptest! {
        /// Accesses wandering over two regions, a hole and page crossings,
        /// in blocks of two threads: the trace holds, in order, exactly the
        /// accesses inside a region (with their region and offset) and the
        /// hits of those, whichever were copied and whichever re-encoded.
        #[test]
        fn copied_and_reencoded_accesses_are_the_plugin_s(
            blocks in proptest::collection::vec(
                (0u32..2, proptest::collection::vec((0u64..3, 0u64..0x3000, proptest::bool::ANY, 0u64..4), 1..60)),
                1..12,
            )
        ) {
            // Regions at 0x10000 (0x3000 bytes) and 0x20000 (0x2000: the
            // last 0x1000 of slot 1 is a hole); slot 2 is 0x30000, none.
            let maps = b"10000-13000 rw-p 00000000 00:00 0 \n20000-22000 rw-p 00000000 00:00 0 \n";
            let mut m = Encoder::default();
            m.maps(maps);
            let mut stream = vec![(0, m.bytes)];
            let mut want = Vec::new();
            for (vcpu, accs) in &blocks {
                let mut e = Encoder::default();
                for &(slot, off, w, hits) in accs {
                    let addr = 0x10000 * (slot + 1) + off;
                    e.access(addr, w);
                    if hits > 0 {
                        e.hits(hits);
                    }
                    let inside = slot == 0 || (slot == 1 && off < 0x2000);
                    if inside {
                        want.push((addr, w, hits));
                    }
                }
                stream.push((*vcpu, e.bytes));
            }
            let (recs, counts) = convert(&stream);
            let mut bases = std::collections::BTreeMap::new();
            let mut got = Vec::new();
            for r in &recs {
                match r {
                    Record::Map(m) => {
                        bases.insert(m.id, m.native);
                    }
                    Record::Access { id, offset, write } => got.push((bases[id] + offset, *write, 0)),
                    Record::Hits { count } => got.last_mut().unwrap().2 += count,
                    _ => {}
                }
            }
            proptest::prop_assert_eq!(&got, &want);
            proptest::prop_assert_eq!(counts.accesses, want.len() as u64);
        }
    }

    #[test]
    fn a_cut_or_unknown_record_is_an_error_that_says_where() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.ptl");
        let mut e = Encoder::default();
        e.access(0x1234_5678, false);
        let whole = e.bytes.len();
        let cases: [(Vec<u8>, &str); 3] = [
            // The delta's last byte missing (the delta starts at byte 1).
            (
                e.bytes[..whole - 1].to_vec(),
                "an access cut short at byte 1",
            ),
            // A system call without its arguments.
            (
                vec![crate::wire::SYSCALL, 9, 0],
                "a system call cut short at byte 0",
            ),
            (
                vec![crate::wire::HITS, 1, 0x77],
                "an unknown record kind 0x77 at byte 2",
            ),
        ];
        for (bytes, want) in cases {
            let w = TraceWriter::create(&path, &trace::Header::default()).unwrap();
            let mut c = Converter::new(w);
            let err = c.block(0, &bytes).unwrap_err().to_string();
            assert!(err.contains(want), "{err}");
        }
    }

    #[test]
    fn a_long_run_across_chunks_names_its_region_again_in_each() {
        let maps = b"10000000-14000000 rw-p 00000000 00:00 0 \n";
        let mut m = Encoder::default();
        m.maps(maps);
        let mut stream = vec![(0, m.bytes)];
        // Far more than a chunk (1 MiB) of copied records, in big blocks.
        let mut want = Vec::new();
        for n in 0..8u64 {
            let mut e = Encoder::default();
            for i in 0..200_000u64 {
                let off = (n * 4096 + i * 8) % 0x400_0000;
                e.access(0x1000_0000 + off, i % 3 == 0);
                want.push(access(0, off, i % 3 == 0));
            }
            stream.push((0, e.bytes));
        }
        let (recs, counts) = convert(&stream);
        assert_eq!(counts.accesses, 1_600_000);
        let got: Vec<Record> = recs
            .into_iter()
            .filter(|r| matches!(r, Record::Access { .. }))
            .collect();
        assert!(got == want, "the accesses differ");
    }
}
