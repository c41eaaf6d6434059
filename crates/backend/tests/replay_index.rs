//! Replaying from a trace's index (format version 2) against the first
//! pass (version 1): the same counters; an index that does not describe
//! its records is refused at the index's byte offset, never replayed.

use backend::model::{ModelConfig, ModelOptions};
use backend::replay::{self, from_workload, ReplayError, ReplayOptions};
use std::path::Path;
use trace::{Header, MapEvent, MapFlags, Prot, Record, RegionKind, TraceError, TraceWriter};

fn config() -> ModelConfig {
    ModelConfig::new(&ModelOptions {
        geometry: Some("x86-64-4l".into()),
        tlb: Some("zen4".into()),
        ..ModelOptions::default()
    })
    .unwrap()
}

fn write(path: &Path, records: &[Record], version: u16) {
    let header = Header {
        source: "test".into(),
        page_size: 4096,
        va_bits: 48,
        ..Header::default()
    };
    let mut w = TraceWriter::create(path, &header)
        .unwrap()
        .with_version(version);
    for r in records {
        w.push(r).unwrap();
    }
    w.finish().unwrap();
}

const WORK: &str = r#"
name = "indexed"
description = "two threads, regions mapped, written, protected, freed"

[[thread]]
op = [
  { mmap = "a", size = "8MiB" },
  { mmap = "b", size = "4MiB" },
  { touch = "a", access = "write", stride = "4KiB" },
  { mark = "written" },
  { touch = "b", access = "read", pattern = "random", count = 5000, seed = 3 },
  { mprotect = "a", offset = "1MiB", len = "1MiB", prot = "r" },
  { madvise = "a", offset = "4MiB", len = "4MiB", advice = "dontneed" },
  { munmap = "b" },
  { mark = "freed" },
]
"#;

fn strip(r: &replay::Replayed) -> Vec<(String, workload::result::Counters)> {
    r.run
        .marks
        .iter()
        .map(|m| {
            let mut c = m.counters.clone();
            c.values.remove(counters::MODEL_WALL_NS.name);
            (m.name.clone(), c)
        })
        .collect()
}

#[test]
fn a_version_1_trace_replays_as_its_version_2_form() {
    let dir = tempfile::tempdir().unwrap();
    let w = workload::parse(WORK, "indexed.toml", 48).unwrap();
    let recs = from_workload::records(&w).unwrap();
    let (v1, v2) = (dir.path().join("v1.ptl"), dir.path().join("v2.ptl"));
    write(&v1, &recs, 1);
    write(&v2, &recs, trace::VERSION);
    assert!(trace::read_index(&v1).unwrap().is_none());
    let ix = trace::read_index(&v2).unwrap().unwrap();
    let cfg = config();
    let a = replay::replay(&v1, &cfg, &ReplayOptions::default()).unwrap();
    let b = replay::replay(&v2, &cfg, &ReplayOptions::default()).unwrap();
    assert_eq!(strip(&a), strip(&b));
    assert_eq!(a.scan, b.scan);
    assert_eq!(a.scan, ix.scan);
    assert_eq!(a.layout, b.layout);
}

fn region(id: u32, size: u64, kind: RegionKind) -> Record {
    Record::Map(MapEvent {
        id,
        size,
        native: 0x7f00_0000_0000,
        kind,
        prot: Prot(Prot::READ | Prot::WRITE),
        flags: MapFlags::default(),
        name: String::new(),
    })
}

/// The bytes of a trace of `recs` whose index is that of `lie` (a trace of
/// as many records): chunks and end marker of one, index of the other.
fn with_index_of(recs: &[Record], lie: &[Record], dir: &Path) -> (std::path::PathBuf, u64) {
    let (a, b) = (dir.join("a.ptl"), dir.join("b.ptl"));
    write(&a, recs, trace::VERSION);
    write(&b, lie, trace::VERSION);
    let (ia, ib) = (
        trace::read_index(&a).unwrap().unwrap(),
        trace::read_index(&b).unwrap().unwrap(),
    );
    let (ba, bb) = (std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap());
    let mut out = ba[..ia.at as usize].to_vec();
    out.extend_from_slice(&bb[ib.at as usize..bb.len() - 20]);
    let index_len = (bb.len() - 20 - ib.at as usize) as u32;
    out.extend_from_slice(&ba[ba.len() - 20..ba.len() - 4]);
    out.extend_from_slice(&index_len.to_le_bytes());
    let path = dir.join("lying.ptl");
    std::fs::write(&path, out).unwrap();
    (path, ia.at)
}

fn refused_at(path: &Path, at: u64, needle: &str) {
    match replay::replay(path, &config(), &ReplayOptions::default()) {
        Err(ReplayError::Trace(TraceError::Format { offset, what, .. })) => {
            assert_eq!(offset, at, "{what}");
            assert!(what.contains(needle), "{what}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn an_index_that_does_not_describe_its_records_is_refused_at_its_offset() {
    let dir = tempfile::tempdir().unwrap();
    let access = Record::Access {
        id: 0,
        offset: 8,
        write: true,
    };
    // Another kind of region: found at the record that maps it.
    let (p, at) = with_index_of(
        &[region(0, 1 << 20, RegionKind::Anon), access.clone()],
        &[region(0, 1 << 20, RegionKind::File), access.clone()],
        dir.path(),
    );
    refused_at(&p, at, "record 0 on region 0");
    // A region larger in the index than in the records: found at the end.
    let (p, at) = with_index_of(
        &[region(0, 1 << 20, RegionKind::Anon), access.clone()],
        &[region(0, 1 << 21, RegionKind::Anon), access.clone()],
        dir.path(),
    );
    refused_at(&p, at, "does not describe the records");
    // Smaller: refused before any access could fall outside its placement.
    let (p, at) = with_index_of(
        &[region(0, 1 << 21, RegionKind::Anon), access.clone()],
        &[region(0, 1 << 20, RegionKind::Anon), access],
        dir.path(),
    );
    refused_at(&p, at, "record 0 on region 0");
}
