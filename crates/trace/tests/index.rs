//! The index of a version-2 trace (what the first pass learns, written by
//! the writer at the end of the file): it equals the first pass's answer,
//! an older trace has none, and a cut or corrupt one is refused with the
//! byte offset.

mod common;

use proptest::prelude::*;
use std::io::Cursor;
use std::path::Path;
use trace::file::{read_index_from, CHUNK_TARGET};
use trace::regions::{self, Scan};
use trace::{
    Header, MapEvent, MapFlags, Prot, Record, RegionKind, TraceError, TraceReader, TraceWriter,
};

fn header() -> Header {
    Header {
        source: "test".into(),
        page_size: 4096,
        va_bits: 48,
        ..Header::default()
    }
}

fn write(records: &[Record], version: u16) -> Vec<u8> {
    let mut w = TraceWriter::new(Vec::new(), &header())
        .unwrap()
        .with_level(1)
        .with_version(version);
    for r in records {
        match r {
            // Accesses through the tracer's path too, as `ptlab trace` writes them.
            Record::Access { id, offset, write } if offset % 3 == 0 => {
                w.push_access(*id, *offset, *write).unwrap()
            }
            r => w.push(r).unwrap(),
        }
    }
    w.finish().unwrap()
}

fn index(bytes: &[u8]) -> Result<Option<trace::Index>, TraceError> {
    read_index_from(Cursor::new(bytes), Path::new("t.ptl"))
}

fn first_pass(bytes: &[u8]) -> Scan {
    regions::scan(&mut TraceReader::new(bytes, Path::new("t.ptl")).unwrap()).unwrap()
}

fn map(id: u32, size: u64, kind: RegionKind) -> Record {
    Record::Map(MapEvent {
        id,
        size,
        native: 0x7f00_0000_0000 + u64::from(id) * (1 << 24),
        kind,
        prot: Prot(Prot::READ | Prot::WRITE),
        flags: MapFlags::default(),
        name: format!("r{id}"),
    })
}

/// A valid trace from a list of small operations: regions made, grown,
/// moved and unmapped, accessed, faulted, by several threads.
fn valid(ops: &[(u8, u32, u64)]) -> Vec<Record> {
    let mut recs = Vec::new();
    let mut live: Vec<(u32, u64)> = Vec::new();
    let mut next = 0u32;
    for &(op, a, b) in ops {
        let pick = |live: &[(u32, u64)]| live[a as usize % live.len()];
        match op % 8 {
            0 | 1 if !live.is_empty() => {
                let (id, size) = pick(&live);
                recs.push(Record::Access {
                    id,
                    offset: b % size,
                    write: a % 2 == 0,
                });
            }
            2 if !live.is_empty() && a % 3 == 0 => {
                let (id, size) = pick(&live);
                recs.push(Record::Fetch {
                    id,
                    offset: b % size,
                });
            }
            2 if !live.is_empty() => {
                let (id, size) = pick(&live);
                recs.push(Record::Fault {
                    id,
                    offset: b % size,
                    write: true,
                });
            }
            3 if !live.is_empty() => {
                let i = a as usize % live.len();
                let size = ((b % 64) + 1) << 12;
                live[i].1 = size;
                recs.push(Record::Resize {
                    id: live[i].0,
                    size,
                });
            }
            4 if !live.is_empty() => {
                let i = a as usize % live.len();
                let (id, size) = live.remove(i);
                recs.push(Record::Unmap {
                    id,
                    offset: 0,
                    len: size,
                });
            }
            5 if !live.is_empty() => {
                let i = a as usize % live.len();
                let size = ((b % 64) + 1) << 12;
                recs.push(Record::Move {
                    id: live[i].0,
                    new_id: next,
                    size,
                    native: 0x6000_0000_0000 + u64::from(next) * (1 << 24),
                });
                live[i] = (next, size);
                next += 1;
            }
            6 => recs.push(Record::Thread { tid: a % 4 }),
            7 => recs.push(Record::Hits { count: b % 100 }),
            _ => {
                let size = ((b % 64) + 1) << 12;
                let kind = [RegionKind::Anon, RegionKind::File, RegionKind::Heap][a as usize % 3];
                recs.push(map(next, size, kind));
                live.push((next, size));
                next += 1;
            }
        }
    }
    recs
}

proptest! {
    /// The writer's index is the first pass's scan, record for record.
    #[test]
    fn the_index_is_the_first_pass(ops in prop::collection::vec((any::<u8>(), any::<u32>(), any::<u64>()), 0..200)) {
        let recs = valid(&ops);
        let bytes = write(&recs, trace::VERSION);
        let ix = index(&bytes).unwrap().expect("a version-2 trace has an index");
        prop_assert_eq!(ix.scan, first_pass(&bytes));
        prop_assert_eq!(&bytes[ix.at as usize..ix.at as usize + 4], b"PTLI");
    }
}

#[test]
fn a_long_trace_has_its_index_after_every_chunk() {
    let mut recs = vec![map(0, 1 << 30, RegionKind::Anon)];
    recs.extend((0..(CHUNK_TARGET as u64)).map(|i| Record::Access {
        id: 0,
        offset: (i * 4104) % (1 << 30),
        write: i % 3 == 0,
    }));
    recs.push(Record::Hits { count: 7 });
    let bytes = write(&recs, trace::VERSION);
    let ix = index(&bytes).unwrap().unwrap();
    assert_eq!(ix.scan, first_pass(&bytes));
    assert_eq!(ix.scan.accesses, CHUNK_TARGET as u64 + 7);
    // The sequential reader passes over the index and reads every record.
    let mut r = TraceReader::new(&bytes[..], Path::new("t.ptl")).unwrap();
    let mut n = 0;
    r.for_each(|_| {
        n += 1;
        Ok::<(), TraceError>(())
    })
    .unwrap();
    assert_eq!(n, recs.len());
}

#[test]
fn a_version_1_trace_has_no_index_and_reads_as_before() {
    let recs = valid(&[(8, 0, 5), (0, 0, 100), (6, 1, 0), (3, 0, 9), (0, 0, 7000)]);
    let v1 = write(&recs, 1);
    assert_eq!(u16::from_le_bytes([v1[8], v1[9]]), 1);
    assert_eq!(index(&v1).unwrap(), None);
    let v2 = write(&recs, trace::VERSION);
    assert_eq!(first_pass(&v1), first_pass(&v2));
    let mut back = Vec::new();
    TraceReader::new(&v1[..], Path::new("t.ptl"))
        .unwrap()
        .for_each(|r| {
            back.push(r.clone());
            Ok::<(), TraceError>(())
        })
        .unwrap();
    assert_eq!(back, recs);
}

#[test]
fn a_writer_given_a_bad_record_writes_no_index() {
    // An unmap of a region never mapped: the first pass names it.
    let recs = vec![
        map(0, 4096, RegionKind::Anon),
        Record::Unmap {
            id: 3,
            offset: 0,
            len: 4096,
        },
    ];
    let bytes = write(&recs, trace::VERSION);
    assert_eq!(index(&bytes).unwrap(), None);
    let e = regions::scan(&mut TraceReader::new(&bytes[..], Path::new("t.ptl")).unwrap())
        .unwrap_err()
        .to_string();
    assert!(e.contains("record 1"), "{e}");
}

#[test]
fn every_cut_of_a_version_2_trace_is_refused_with_where_it_ends() {
    let recs = valid(&[(8, 0, 5), (0, 0, 100), (8, 1, 9), (1, 1, 4000), (4, 0, 0)]);
    let bytes = write(&recs, trace::VERSION);
    common::assert_every_cut_refused(&bytes, index);
}

#[test]
fn a_corrupt_index_is_refused_with_its_offset() {
    let recs = valid(&[
        (8, 0, 5),
        (0, 0, 100),
        (8, 1, 9),
        (5, 1, 4000),
        (6, 2, 0),
        (2, 0, 1),
    ]);
    let bytes = write(&recs, trace::VERSION);
    let good = index(&bytes).unwrap().unwrap();
    let at = good.at as usize;
    let mut refused = 0;
    // Every byte of the index and the end marker.
    for i in at..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x5a;
        match index(&b) {
            Err(TraceError::Format { offset, .. }) => {
                assert!(
                    offset as usize >= at.min(bytes.len() - 20),
                    "byte {i}: offset {offset}"
                );
                assert!(offset as usize <= bytes.len(), "byte {i}: offset {offset}");
                refused += 1;
                // The sequential reader refuses it too, or reads on (a
                // flip in a field only the end reader uses).
            }
            Err(e) => panic!("byte {i}: {e}"),
            Ok(ix) => assert_eq!(
                ix,
                Some(good.clone()),
                "byte {i} changed the index silently"
            ),
        }
    }
    // All but the reserved word and the chunk count (unchecked here).
    assert!(
        refused >= bytes.len() - at - 8,
        "{refused} of {}",
        bytes.len() - at
    );
}

/// Chunks encoded and compressed outside the writer (as the importer does
/// on several threads) read back as the same records, and the index
/// counts them as the first pass does.
#[test]
fn chunks_pushed_whole_read_back_and_are_indexed() {
    let mut w = TraceWriter::new(Vec::new(), &header())
        .unwrap()
        .with_level(1);
    w.push(&map(0, 1 << 20, RegionKind::Anon)).unwrap();
    w.push(&map(1, 1 << 20, RegionKind::Anon)).unwrap();
    let mut want = vec![
        map(0, 1 << 20, RegionKind::Anon),
        map(1, 1 << 20, RegionKind::Anon),
    ];
    let mut z = trace::file::chunk_compressor(w.level()).unwrap();
    for part in 0..3u64 {
        let mut st = trace::codec::State::default();
        let mut buf = Vec::new();
        let (mut accesses, mut fetches) = (0, 0);
        for i in 0..1000u64 {
            let r = if i % 3 == 0 {
                fetches += 1;
                Record::Fetch {
                    id: 1,
                    offset: (part * 1000 + i) * 4 % (1 << 20),
                }
            } else {
                accesses += 1;
                Record::Access {
                    id: (i % 2) as u32,
                    offset: (i * 4096 + part) % (1 << 20),
                    write: i % 5 == 0,
                }
            };
            trace::codec::encode(&r, &mut st, &mut buf);
            want.push(r);
        }
        let frame = z.compress(&buf).unwrap();
        w.push_chunk(buf.len(), &frame, accesses, fetches).unwrap();
    }
    let bytes = w.finish().unwrap();
    let mut r = TraceReader::new(&bytes[..], Path::new("t.ptl")).unwrap();
    let mut got = Vec::new();
    let mut chunk = Vec::new();
    while r.next_chunk(&mut chunk).unwrap() {
        got.append(&mut chunk);
    }
    assert_eq!(got, want);
    let idx = index(&bytes).unwrap().expect("an index");
    assert_eq!(idx.scan, first_pass(&bytes));
    assert_eq!(idx.scan.instructions, 1002);
}
