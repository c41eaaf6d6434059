//! The trace file end to end: round trips, chunking, and what a reader
//! says of a cut, corrupt or newer file.

mod common;

use proptest::prelude::*;
use std::path::Path;
use trace::file::CHUNK_TARGET;
use trace::regions;
use trace::{
    Header, MapEvent, MapFlags, Prot, Record, RegionKind, TraceError, TraceReader, TraceWriter,
};

fn header() -> Header {
    Header {
        source: "test".into(),
        command: vec!["prog".into(), "arg".into()],
        page_size: 4096,
        va_bits: 48,
        notes: vec![],
        observed: Default::default(),
    }
}

fn write(records: &[Record]) -> Vec<u8> {
    let mut w = TraceWriter::new(Vec::new(), &header())
        .unwrap()
        .with_level(1);
    for r in records {
        w.push(r).unwrap();
    }
    w.finish().unwrap()
}

fn read(bytes: &[u8]) -> Result<(Header, Vec<Record>), TraceError> {
    let mut r = TraceReader::new(bytes, Path::new("t.ptl"))?;
    let h = r.header().clone();
    let mut all = Vec::new();
    r.for_each(|rec| {
        all.push(rec.clone());
        Ok::<(), TraceError>(())
    })?;
    Ok((h, all))
}

fn map(id: u32, size: u64) -> Record {
    Record::Map(MapEvent {
        id,
        size,
        native: 0x7f00_0000_0000 + u64::from(id) * size,
        kind: RegionKind::Anon,
        prot: Prot(Prot::READ | Prot::WRITE),
        flags: MapFlags(MapFlags::NORESERVE),
        name: format!("r{id}"),
    })
}

fn any_record() -> impl Strategy<Value = Record> {
    prop_oneof![
        (0u32..4, 0u64..1 << 20, any::<bool>()).prop_map(|(id, offset, write)| Record::Access {
            id,
            offset,
            write
        }),
        (0u32..4, 0u64..1 << 20, any::<bool>()).prop_map(|(id, offset, write)| Record::Fault {
            id,
            offset,
            write
        }),
        (0u32..4, 0u64..1 << 20).prop_map(|(id, offset)| Record::Fetch { id, offset }),
        (0u64..1000).prop_map(|count| Record::Hits { count }),
        (0u32..3).prop_map(|tid| Record::Thread { tid }),
        "[a-z ]{0,12}".prop_map(|name| Record::Mark { name }),
        (0u32..4, 0u64..64, 1u64..64, 0u8..8).prop_map(|(id, o, l, p)| Record::Protect {
            id,
            offset: o << 12,
            len: l << 12,
            prot: Prot(p)
        }),
        (0u32..4, 0u64..64, 1u64..64, 0u8..30).prop_map(|(id, o, l, advice)| Record::Advise {
            id,
            offset: o << 12,
            len: l << 12,
            advice
        }),
    ]
}

proptest! {
    /// Any sequence of records reads back as written (the codec's relative
    /// offsets included: a region switch and a negative step; fetches
    /// relative to fetches between data accesses relative to accesses).
    #[test]
    fn records_round_trip(recs in prop::collection::vec(any_record(), 0..300)) {
        let bytes = write(&recs);
        let (h, back) = read(&bytes).unwrap();
        prop_assert_eq!(h, header());
        prop_assert_eq!(back, recs);
    }
}

#[test]
fn a_long_trace_spans_chunks_and_reads_back_in_order() {
    let mut recs = vec![map(0, 1 << 30), map(1, 1 << 21)];
    for i in 0..(CHUNK_TARGET as u64) {
        recs.push(Record::Access {
            id: (i % 7 == 0) as u32,
            offset: (i * 4104) % (1 << 21),
            write: i % 3 == 0,
        });
    }
    let bytes = write(&recs);
    let mut r = TraceReader::new(&bytes[..], Path::new("t.ptl")).unwrap();
    let mut chunk = Vec::new();
    let mut chunks = 0;
    let mut back = Vec::new();
    while r.next_chunk(&mut chunk).unwrap() {
        chunks += 1;
        back.extend(chunk.iter().cloned());
    }
    assert!(chunks >= 2, "{chunks} chunk(s)");
    assert_eq!(back, recs);
}

#[test]
fn sequential_accesses_compress_below_a_byte_each() {
    let mut recs = vec![map(0, 1 << 30)];
    recs.extend((0..1_000_000u64).map(|i| Record::Access {
        id: 0,
        offset: i * 8,
        write: false,
    }));
    let bytes = write(&recs);
    assert!(
        (bytes.len() as f64) < 1_000_000.0 * 0.5,
        "{} bytes for a million sequential reads",
        bytes.len()
    );
}

#[test]
fn every_cut_is_refused_with_the_offset_where_the_file_ends() {
    let recs: Vec<Record> = (0..500u64)
        .map(|i| Record::Access {
            id: 0,
            offset: i * 64,
            write: false,
        })
        .collect();
    let mut all = vec![map(0, 1 << 20)];
    all.extend(recs);
    let bytes = write(&all);
    common::assert_every_cut_refused(&bytes, read);
}

#[test]
fn a_corrupt_chunk_is_refused_never_replayed() {
    let mut all = vec![map(0, 1 << 20)];
    all.extend((0..2000u64).map(|i| Record::Access {
        id: 0,
        offset: (i * 4096 * 7) % (1 << 20),
        write: i % 2 == 0,
    }));
    let bytes = write(&all);
    let hlen = u32::from_le_bytes(bytes[12..16].try_into().unwrap()) as usize;
    let chunk_start = 16 + hlen;
    // Every byte after the file header: a flip is either refused or, where
    // it cannot change a record (none such in a frame with a checksum),
    // yields the same records.
    let mut refused = 0;
    for i in chunk_start..bytes.len() {
        let mut b = bytes.clone();
        b[i] ^= 0x5a;
        match read(&b) {
            Err(TraceError::Format { offset, .. }) => {
                assert!(offset as usize <= bytes.len());
                refused += 1;
            }
            Err(e) => panic!("byte {i}: {e}"),
            Ok((_, back)) => assert_eq!(back, all, "byte {i} flipped changed the records silently"),
        }
    }
    assert!(
        refused > (bytes.len() - chunk_start) * 9 / 10,
        "{refused} refused"
    );
}

#[test]
fn a_newer_version_is_refused_at_byte_8() {
    let mut bytes = write(&[map(0, 4096)]);
    let newer = trace::VERSION + 1;
    bytes[8..10].copy_from_slice(&newer.to_le_bytes());
    let e = read(&bytes).unwrap_err().to_string();
    assert!(
        e.contains("byte 8") && e.contains(&format!("version {newer}")),
        "{e}"
    );
    let e = trace::file::read_index_from(std::io::Cursor::new(&bytes), Path::new("t.ptl"))
        .unwrap_err()
        .to_string();
    assert!(e.contains("byte 8"), "{e}");
}

#[test]
fn not_a_trace_is_said_so() {
    let e = read(b"name = \"a workload\"\n[[thread]]\n")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("byte 0") && e.contains("not a ptlab trace"),
        "{e}"
    );
}

#[test]
fn scan_collects_lifetimes_and_refuses_an_unmapped_region() {
    let recs = vec![
        map(0, 1 << 21),
        Record::Access {
            id: 0,
            offset: 8,
            write: true,
        },
        Record::Thread { tid: 2 },
        map(1, 1 << 12),
        Record::Hits { count: 10 },
        Record::Unmap {
            id: 0,
            offset: 0,
            len: 1 << 21,
        },
        Record::Fault {
            id: 1,
            offset: 0,
            write: false,
        },
    ];
    let bytes = write(&recs);
    let mut r = TraceReader::new(&bytes[..], Path::new("t.ptl")).unwrap();
    let s = regions::scan(&mut r).unwrap();
    assert_eq!(s.records, 7);
    assert_eq!(s.accesses, 11);
    assert_eq!(s.faults, 1);
    assert_eq!(s.threads, 3);
    assert_eq!(s.regions[&0].died, Some(5));
    assert_eq!(s.regions[&1].tid, 2);
    assert_eq!(s.regions[&1].died, None);

    // Accesses are passed over (the replay checks them); a fault outside
    // its region is refused with its index, counting the accesses before.
    let bad = write(&[
        map(0, 4096),
        Record::Access {
            id: 0,
            offset: 8,
            write: false,
        },
        Record::Fault {
            id: 0,
            offset: 4096,
            write: false,
        },
    ]);
    let mut r = TraceReader::new(&bad[..], Path::new("t.ptl")).unwrap();
    let e = regions::scan(&mut r).unwrap_err().to_string();
    assert!(
        e.contains("record 2") && e.contains("outside region 0"),
        "{e}"
    );
}
