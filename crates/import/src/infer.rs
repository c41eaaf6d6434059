//! Regions inferred from the pages an imported trace touches: touched 4 KiB
//! pages closer than [`GAP`] to each other share a region, which spans
//! from its first touched page to the end of its last. A replay lays these
//! out like any trace's regions (by identity and size).

use crate::{Access, ImportError, Summary};
use std::collections::BTreeSet;
use std::path::Path;
use trace::{Header, MapEvent, MapFlags, Prot, Record, RegionKind, TraceWriter};

const PAGE: u64 = 4096;
/// A gap between touched pages at least this large starts a new region.
pub const GAP: u64 = 2 << 20;

/// The touched pages, and the instructions counted on the way.
#[derive(Debug, Default)]
pub struct Pages {
    pub pages: BTreeSet<u64>,
}

impl Pages {
    /// Runs `read` (which calls its argument once per access and returns
    /// the instructions it saw), keeping the pages.
    ///
    /// # Errors
    /// What `read` returns.
    pub fn collect(
        read: impl FnOnce(&mut dyn FnMut(Access)) -> Result<u64, ImportError>,
    ) -> Result<Pages, ImportError> {
        let mut p = Pages::default();
        let mut last = u64::MAX;
        read(&mut |a| {
            let page = a.addr / PAGE;
            if page != last {
                p.pages.insert(page);
                last = page;
            }
        })?;
        Ok(p)
    }

    /// The regions: (start address, end address), sorted.
    pub fn regions(&self) -> Vec<(u64, u64)> {
        let mut out: Vec<(u64, u64)> = Vec::new();
        for &p in &self.pages {
            let a = p * PAGE;
            match out.last_mut() {
                Some((_, end)) if a < end.saturating_add(GAP) => *end = a + PAGE,
                _ => out.push((a, a + PAGE)),
            }
        }
        out
    }
}

/// Writes the trace: every region mapped first, then the accesses of a
/// second `read`.
///
/// # Errors
/// What `read` returns; I/O errors writing `path`.
pub fn write(
    pages: &Pages,
    path: &Path,
    source: &str,
    input: &Path,
    read: impl FnOnce(&mut dyn FnMut(Access)) -> Result<u64, ImportError>,
) -> Result<Summary, ImportError> {
    let io = |source| ImportError::Io {
        path: path.to_path_buf(),
        source,
    };
    let regions = pages.regions();
    let header = Header {
        source: source.into(),
        command: vec![input.display().to_string()],
        page_size: PAGE,
        va_bits: 0,
        notes: vec![
            format!("imported from {source}: no address-space events; regions inferred from the touched pages (a gap of 2 MiB or more starts a new one), mapped at the start"),
            "one thread; instruction fetches not included".into(),
        ],
        observed: Default::default(),
    };
    let mut w = TraceWriter::create(path, &header).map_err(io)?;
    for (id, &(s, e)) in regions.iter().enumerate() {
        w.push(&Record::Map(MapEvent {
            id: id as u32,
            size: e - s,
            native: s,
            kind: RegionKind::Anon,
            prot: Prot(Prot::READ | Prot::WRITE),
            flags: MapFlags::default(),
            name: String::new(),
        }))
        .map_err(io)?;
    }
    let mut s = Summary {
        regions: regions.len() as u64,
        ..Summary::default()
    };
    let mut err = None;
    // The region of the last access, as (start, end, id).
    let mut cur = (0u64, 0u64, 0u32);
    s.instructions = read(&mut |a| {
        if !(a.addr >= cur.0 && a.addr < cur.1) {
            let i = regions.partition_point(|&(_, e)| e <= a.addr);
            let (st, e) = regions[i];
            cur = (st, e, i as u32);
        }
        if a.write {
            s.stores += 1;
        } else {
            s.loads += 1;
        }
        if err.is_none() {
            if let Err(e) = w.push(&Record::Access {
                id: cur.2,
                offset: a.addr - cur.0,
                write: a.write,
            }) {
                err = Some(e);
            }
        }
    })?;
    if let Some(e) = err {
        return Err(io(e));
    }
    w.finish().map_err(io)?;
    Ok(s)
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
            let p = Pages { pages: pages.clone() };
            let r = p.regions();
            for w in r.windows(2) {
                prop_assert!(w[1].0 >= w[0].1 + GAP);
            }
            for pg in pages {
                let a = pg * PAGE;
                prop_assert_eq!(r.iter().filter(|&&(s, e)| a >= s && a < e).count(), 1);
            }
        }
    }
}
