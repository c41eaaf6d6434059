//! Regions inferred from the pages an imported trace touches: touched 4 KiB
//! pages closer than [`GAP`] to each other share a region, which spans
//! from its first touched page to the end of its last. A replay lays these
//! out like any trace's regions (by identity and size).
//!
//! The input is read once: each access goes to a [`Collector`], which
//! keeps the touched pages and spills the access ([`crate::spill`]); at
//! the end the regions are known and [`Collector::write`] maps them all,
//! then finishes the spill's parts into the trace's chunks (a trace maps
//! every region before its first access, and an access names its region's
//! offset, so no chunk can be finished before the last access is read).
//! The spill is read back from the page cache as a rule.

use crate::spill::{self, Spill};
use crate::{Access, ImportError, Kind, Summary};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::mpsc;
use std::sync::Arc;
use trace::{Header, MapEvent, MapFlags, Prot, Record, RegionKind, TraceWriter};

const PAGE: u64 = 4096;
/// A gap between touched pages at least this large starts a new region.
pub const GAP: u64 = 2 << 20;

/// The zstd level of an imported trace's chunks: the fastest, since they
/// are compressed while the input is read or after it (at level 3, the
/// default, compression was the largest part of an import's own work in a
/// profile).
pub const LEVEL: i32 = 1;

/// Pages a bitmap of [`PageSet`] holds (16 MiB of address space).
const SPAN: u64 = 4096;

/// Hashes a span number with one multiplication (Fibonacci hashing): the
/// keys are small integers from the trace, not chosen by an adversary of
/// the hash table, and SipHash was a tenth of an import's time on a
/// random-access trace.
#[derive(Default)]
pub struct SpanHasher(u64);

impl std::hash::Hasher for SpanHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0 ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Slots of [`PageSet`]'s cache of spans.
const CACHE: usize = 256;

/// The touched pages, as bitmaps of [`SPAN`] pages by their first page.
#[derive(Debug)]
pub struct PageSet {
    index: HashMap<u64, usize, std::hash::BuildHasherDefault<SpanHasher>>,
    maps: Vec<[u64; (SPAN / 64) as usize]>,
    /// Spans recently used and their bitmaps, by a hash of the span
    /// (`u64::MAX`: none; no span is that large). Accesses cluster in a
    /// few spans at a time (code, a stack, an array, a table) but
    /// alternate between them, so that one remembered span missed at
    /// almost every access of an interleaved trace.
    cache: Box<[(u64, u32); CACHE]>,
}

impl Default for PageSet {
    fn default() -> Self {
        PageSet {
            index: HashMap::default(),
            maps: Vec::new(),
            cache: Box::new([(u64::MAX, 0); CACHE]),
        }
    }
}

impl PageSet {
    #[inline]
    pub fn insert(&mut self, page: u64) {
        let span = page / SPAN;
        let slot = (span.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as usize % CACHE;
        let (s, i) = self.cache[slot];
        let i = if s == span {
            i as usize
        } else {
            self.span(span, slot)
        };
        let bit = page % SPAN;
        self.maps[i][(bit / 64) as usize] |= 1 << (bit % 64);
    }

    /// The bitmap of `span`, made if new, remembered in `slot`.
    #[cold]
    fn span(&mut self, span: u64, slot: usize) -> usize {
        let next = self.maps.len();
        let i = *self.index.entry(span).or_insert(next);
        if i == next {
            self.maps.push([0; (SPAN / 64) as usize]);
        }
        self.cache[slot] = (span, i as u32);
        i
    }

    /// Every page, ascending.
    pub fn pages(&self) -> impl Iterator<Item = u64> + '_ {
        let mut spans: Vec<(u64, usize)> = self.index.iter().map(|(&s, &i)| (s, i)).collect();
        spans.sort_unstable();
        spans.into_iter().flat_map(move |(s, i)| {
            let map = &self.maps[i];
            (0..SPAN).filter_map(move |b| {
                (map[(b / 64) as usize] >> (b % 64) & 1 == 1).then_some(s * SPAN + b)
            })
        })
    }

    /// The regions: (start address, end address), sorted.
    ///
    /// Read a bitmap word (64 pages, 256 KiB) at a time: pages within one
    /// word are always closer than [`GAP`], so only a word's first and
    /// last page matter. Cheap enough to be asked at every spill part
    /// ([`Collector`] speculates with the regions so far).
    pub fn regions(&self) -> Vec<(u64, u64)> {
        let mut spans: Vec<(u64, usize)> = self.index.iter().map(|(&s, &i)| (s, i)).collect();
        spans.sort_unstable();
        let mut out: Vec<(u64, u64)> = Vec::new();
        for (s, i) in spans {
            for (w, &bits) in self.maps[i].iter().enumerate() {
                if bits == 0 {
                    continue;
                }
                let base = s * SPAN + 64 * w as u64;
                let first = base + u64::from(bits.trailing_zeros());
                let last = base + 63 - u64::from(bits.leading_zeros());
                // The address space's last page ends at 2^64, which a u64
                // cannot hold: its region ends a byte short (an importer
                // refuses such an address before: `Collector::write`).
                let a = first * PAGE;
                let e = (last * PAGE).saturating_add(PAGE);
                match out.last_mut() {
                    Some((_, end)) if a < end.saturating_add(GAP) => *end = e,
                    _ => out.push((a, e)),
                }
            }
        }
        out
    }
}

/// Takes the accesses of one read of the input: their pages, their counts,
/// and each in the spill.
pub struct Collector {
    pub pages: PageSet,
    /// The pages instructions were fetched from (their regions may be
    /// executed).
    pub code: PageSet,
    /// The page of the last data access and of the last fetch: each stream
    /// stays on a page for a while, though the two alternate.
    last_page: [u64; 2],
    spill: Spill,
    /// When each spill part is finished as it is closed, with the regions
    /// so far ([`crate::spill::Spec`]): always (`Some(None)`), or while
    /// the count given grows (the parser waits for its input), or never.
    speculate: Option<Option<(Arc<AtomicU64>, u64)>>,
    pub loads: u64,
    pub stores: u64,
    pub fetches: u64,
}

impl Collector {
    /// Spills into `file` (a temporary file, read back by [`Collector::write`]).
    pub fn new(file: std::fs::File) -> Collector {
        Collector::with_spill(Spill::new(file))
    }

    /// Spills into `spill` (of any part size: tests make small ones).
    pub fn with_spill(spill: Spill) -> Collector {
        Collector {
            pages: PageSet::default(),
            code: PageSet::default(),
            last_page: [u64::MAX; 2],
            spill,
            speculate: None,
            loads: 0,
            stores: 0,
            fetches: 0,
        }
    }

    /// Finishes each spill part as it is closed, with the regions of the
    /// pages so far, on the parser's thread, when `waits` (if given) has
    /// grown since the last part: when the decompressor is slower than the
    /// parser (an xz ChampSim trace), the parser has time to spare while
    /// the input is read, and a part whose regions have not moved by the
    /// end (most, once a program's regions have been touched at their
    /// lowest page) needs nothing more then. A parser that never waits
    /// ([`crate::source::Input::waits`]: a gzip or raw input) leaves every
    /// part to the end, finished on every core.
    pub fn speculate(mut self, waits: Option<Arc<AtomicU64>>) -> Self {
        self.speculate = Some(waits.map(|w| (w, 0)));
        self
    }

    /// One access: its page kept, and spilled ([`crate::spill`]).
    #[inline(always)]
    pub fn push(&mut self, a: Access) {
        let page = a.addr / PAGE;
        let kind: u8 = match a.kind {
            Kind::Load => {
                self.loads += 1;
                0
            }
            Kind::Store => {
                self.stores += 1;
                1
            }
            Kind::Fetch => {
                self.fetches += 1;
                2
            }
        };
        let stream = usize::from(kind == 2);
        if page != self.last_page[stream] {
            self.last_page[stream] = page;
            self.pages.insert(page);
            if stream == 1 {
                self.code.insert(page);
            }
        }
        if self.spill.put(a.addr, kind) {
            self.close_part();
        }
    }

    #[cold]
    fn close_part(&mut self) {
        let now = match &mut self.speculate {
            None => false,
            Some(None) => true,
            Some(Some((waits, seen))) => {
                let w = waits.load(Ordering::Relaxed);
                std::mem::replace(seen, w) != w
            }
        };
        let regions = now.then(|| self.pages.regions());
        self.spill.close(regions.as_deref());
    }

    /// Writes the trace at `path`: every region mapped first, then the
    /// spill's parts, each finished into a chunk.
    ///
    /// # Errors
    /// I/O errors writing `path` or the spill.
    pub fn write(
        mut self,
        path: &Path,
        source: &str,
        input: &Path,
        instructions: u64,
    ) -> Result<Summary, ImportError> {
        let io = |source| ImportError::Io {
            path: path.to_path_buf(),
            source,
        };
        self.close_part();
        if let Some(e) = self.spill.failed.take() {
            return Err(io(e));
        }
        // No program has the last page of the 64-bit address space (the
        // kernel's, on every ABI): refused, rather than a region that
        // would end at 2^64 (found by fuzz/fuzz_targets/import_champsim.rs).
        if self.pages.pages().last() == Some(u64::MAX / PAGE) {
            return Err(ImportError::Input {
                path: input.to_path_buf(),
                what: format!(
                    "an access at {:#x} or above, in the last page of the 64-bit address space: not a program's address",
                    u64::MAX / PAGE * PAGE
                ),
            });
        }
        let regions = self.pages.regions();
        let header = Header {
            source: source.into(),
            command: vec![input.display().to_string()],
            page_size: PAGE,
            va_bits: 0,
            notes: vec![
                format!("imported from {source}: no address-space events; regions inferred from the touched pages (a gap of 2 MiB or more starts a new one), mapped at the start"),
                "one thread; every instruction a Fetch record at its ip, before its loads and stores; regions holding fetched pages are mapped read-write-execute".into(),
            ],
            observed: [("instructions".to_string(), i64::try_from(instructions).unwrap_or(i64::MAX))].into(),
        };
        let mut w = TraceWriter::create(path, &header)
            .map_err(io)?
            .with_level(LEVEL);
        let code: Vec<u64> = self.code.pages().collect();
        for (id, &(s, e)) in regions.iter().enumerate() {
            // Whether an instruction was fetched from the region.
            let i = code.partition_point(|&p| p * PAGE < s);
            let exec = code.get(i).is_some_and(|&p| p * PAGE < e);
            let rw = Prot::READ | Prot::WRITE;
            w.push(&Record::Map(MapEvent {
                id: id as u32,
                size: e - s,
                native: s,
                kind: RegionKind::Anon,
                prot: Prot(if exec { rw | Prot::EXEC } else { rw }),
                flags: MapFlags::default(),
                name: String::new(),
            }))
            .map_err(io)?;
        }
        self.finish_parts(&regions, &mut w).map_err(io)?;
        w.finish().map_err(io)?;
        Ok(Summary {
            loads: self.loads,
            stores: self.stores,
            regions: regions.len() as u64,
            instructions,
        })
    }

    /// The spill's parts finished and compressed on one thread per core
    /// (the decompressor's core is free by now), each a chunk written in
    /// order as they come.
    fn finish_parts(
        &self,
        regions: &[(u64, u64)],
        w: &mut TraceWriter<std::io::BufWriter<std::fs::File>>,
    ) -> std::io::Result<()> {
        let parts = &self.spill.parts;
        let file = self.spill.file();
        let level = w.level();
        let cores = std::thread::available_parallelism().map_or(1, usize::from);
        let next = AtomicUsize::new(0);
        // The parts written so far: a thread takes a part at most `window`
        // ahead of them, so that the chunks waiting for an earlier one stay
        // few (parts finished early come fast, one finished now is slow).
        let window = 4 * cores;
        let written = Written::default();
        std::thread::scope(|scope| {
            let (tx, rx) = mpsc::channel();
            for _ in 0..cores.min(parts.len()) {
                let (tx, next, written) = (tx.clone(), &next, &written);
                scope.spawn(move || {
                    let mut f = spill::Finisher::new(level);
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(part) = parts.get(i) else {
                            return;
                        };
                        if !written.wait_for(i.saturating_sub(window)) {
                            return;
                        }
                        let r = match &mut f {
                            Ok(f) => f.finish(part, file, regions),
                            Err(e) => Err(std::io::Error::new(e.kind(), e.to_string())),
                        };
                        // An error stops this thread; the writer stops the
                        // others once it reaches it.
                        let failed = r.is_err();
                        if tx.send((i, r)).is_err() || failed {
                            return;
                        }
                    }
                });
            }
            drop(tx);
            // However the writer ends, the threads waiting are let go.
            let _stop = Stop(&written);
            let mut ahead = std::collections::BTreeMap::new();
            let mut want = 0;
            for (i, r) in rx {
                ahead.insert(i, r);
                while let Some(r) = ahead.remove(&want) {
                    let c = r?;
                    w.push_chunk(c.raw, &c.frame, c.accesses, c.fetches)?;
                    want += 1;
                    written.set(want);
                }
            }
            Ok(())
        })
    }
}

/// How many chunks the writer has written (`usize::MAX`: it stopped),
/// for the threads finishing parts to wait on.
#[derive(Default)]
struct Written {
    n: std::sync::Mutex<usize>,
    moved: std::sync::Condvar,
}

impl Written {
    fn set(&self, n: usize) {
        if let Ok(mut g) = self.n.lock() {
            *g = n;
        }
        self.moved.notify_all();
    }

    /// Waits until at least `n` are written; false if the writer stopped.
    fn wait_for(&self, n: usize) -> bool {
        let Ok(mut g) = self.n.lock() else {
            return false;
        };
        while *g < n {
            match self.moved.wait(g) {
                Ok(next) => g = next,
                Err(_) => return false,
            }
        }
        *g != usize::MAX
    }
}

/// Marks the writer stopped when dropped.
struct Stop<'a>(&'a Written);

impl Drop for Stop<'_> {
    fn drop(&mut self) {
        self.0.set(usize::MAX);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Every touched page lies in exactly one region; regions are
        /// disjoint, sorted, and separated by at least GAP.
        #[test]
        fn regions_cover_every_page_and_gaps_separate_them(
            pages in proptest::collection::btree_set(0u64..1 << 24, 1..200)
        ) {
            let mut p = PageSet::default();
            for &pg in &pages {
                p.insert(pg);
            }
            prop_assert_eq!(p.pages().collect::<Vec<_>>(), pages.iter().copied().collect::<Vec<_>>());
            let r = p.regions();
            for w in r.windows(2) {
                prop_assert!(w[1].0 >= w[0].1 + GAP);
            }
            for pg in pages {
                let a = pg * PAGE;
                prop_assert_eq!(r.iter().filter(|&&(s, e)| a >= s && a < e).count(), 1);
            }
        }

        /// The spill gives back every access, in order, whatever the
        /// addresses (the trace holds them as region offsets).
        #[test]
        fn the_spill_gives_back_every_access(
            accesses in proptest::collection::vec((any::<u64>(), 0u8..3, 0u8..6), 1..300),
            small in any::<bool>(),
            early in any::<bool>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let file = tempfile::tempfile_in(dir.path()).unwrap();
            // Small: a part (a chunk) every few accesses, each stream's
            // first access in it named by its region.
            let mut c = if small {
                Collector::with_spill(Spill::with_size(file, 16))
            } else {
                Collector::new(file)
            };
            // Early: parts finished as they close, with the regions so
            // far; those whose regions moved since are finished again.
            if early {
                c = c.speculate(None);
            }
            // Addresses of the user half: in four clusters of 8 MiB (so
            // that an access is often near the one before it in its
            // stream, and regions merge or not across gaps of about GAP),
            // or anywhere.
            let kinds = [Kind::Load, Kind::Store, Kind::Fetch];
            let clusters = [0x40_0000u64, 0x1000_0000, 0x5555_5555_0000, 0x7fff_ff00_0000];
            let accesses: Vec<Access> = accesses
                .iter()
                .map(|&(a, k, w)| Access {
                    addr: clusters
                        .get(usize::from(w))
                        .map_or(a >> 17, |&b| b + a % (8 << 20)),
                    kind: kinds[usize::from(k)],
                })
                .collect();
            for &a in &accesses {
                c.push(a);
            }
            let out = dir.path().join("t.ptl");
            let s = c.write(&out, "test", Path::new("in"), 7).unwrap();
            prop_assert_eq!(s.loads + s.stores + c_fetches(&accesses), accesses.len() as u64);
            let idx = trace::read_index(&out).unwrap().unwrap();
            let base: Vec<u64> = (0..idx.scan.regions.len() as u32)
                .map(|id| idx.scan.regions[&id].native)
                .collect();
            prop_assert_eq!(idx.scan.instructions, c_fetches(&accesses));
            let mut exec = vec![false; base.len()];
            let mut got = Vec::new();
            let mut r = trace::TraceReader::open(&out).unwrap();
            let mut recs = Vec::new();
            while r.next_chunk(&mut recs).unwrap() {
                for rec in recs.drain(..) {
                    if let Record::Map(m) = &rec {
                        exec[m.id as usize] = m.prot.executable();
                    }
                    match rec {
                        Record::Access { id, offset, write } => got.push(Access {
                            addr: base[id as usize] + offset,
                            kind: if write { Kind::Store } else { Kind::Load },
                        }),
                        Record::Fetch { id, offset } => {
                            // Code is fetched only from executable regions.
                            prop_assert!(exec[id as usize]);
                            got.push(Access::fetch(base[id as usize] + offset))
                        }
                        _ => {}
                    }
                }
            }
            prop_assert_eq!(got, accesses);
        }
    }
}

#[cfg(test)]
fn c_fetches(a: &[Access]) -> u64 {
    a.iter().filter(|a| a.kind == Kind::Fetch).count() as u64
}

#[cfg(test)]
mod edge {
    use super::*;

    #[test]
    fn the_last_page_of_the_address_space_is_refused_not_a_panic() {
        let mut p = PageSet::default();
        p.insert(u64::MAX / PAGE);
        assert_eq!(p.regions(), vec![(u64::MAX / PAGE * PAGE, u64::MAX)]);
        let dir = tempfile::tempdir().unwrap();
        let mut c = Collector::new(tempfile::tempfile_in(dir.path()).unwrap());
        c.push(Access::load(u64::MAX - 3));
        let e = c
            .write(&dir.path().join("t.ptl"), "test", Path::new("in"), 1)
            .unwrap_err();
        assert!(
            e.to_string()
                .contains("last page of the 64-bit address space"),
            "{e}"
        );
        assert!(e.is_bad_input());
    }
}
