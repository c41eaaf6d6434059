//! `Decoder::run_within`, the replay's shortcut through runs of accesses in
//! one range: whatever it consumes, the records it stands for are exactly
//! those the record-at-a-time decoder gives at that point, and what it
//! leaves decodes as before.

use proptest::prelude::*;
use trace::codec::{encode_all, Decoder};
use trace::Record;

/// Accesses that mostly step a little (one-byte deltas), sometimes far
/// (several bytes) or to another region, with now and then another record.
fn any_record() -> impl Strategy<Value = Record> {
    prop_oneof![
        8 => (0u32..2, 0u64..1 << 14, any::<bool>()).prop_map(|(id, offset, write)| {
            Record::Access { id, offset, write }
        }),
        1 => (0u64..100).prop_map(|count| Record::Hits { count }),
        1 => (0u32..2).prop_map(|tid| Record::Thread { tid }),
    ]
}

/// Offsets near each other, so that runs form: each access steps from the
/// previous one by a small amount.
fn walk(steps: Vec<(i64, bool, u8)>) -> Vec<Record> {
    let mut off = 1i64 << 13;
    steps
        .into_iter()
        .map(|(d, write, other)| {
            off = (off + d).clamp(0, (1 << 14) - 1);
            match other {
                0 => Record::Hits { count: 3 },
                1 => Record::Access {
                    id: 1,
                    offset: off as u64,
                    write,
                },
                _ => Record::Access {
                    id: 0,
                    offset: off as u64,
                    write,
                },
            }
        })
        .collect()
}

/// Decodes `bytes`, trying a run before every record with the window
/// `choose` gives, and returns what each run stood for, record by record.
fn decode_with_runs(bytes: &[u8], choose: impl Fn(u64) -> (bool, u64, u64)) -> Vec<Record> {
    let mut d = Decoder::new(bytes);
    let mut out = Vec::new();
    loop {
        if let Some((id, offset)) = d.last_access() {
            let (write, lo, hi) = choose(offset);
            let before = offset;
            let n = d.run_within(write, lo, hi);
            let (id2, after) = d.last_access().unwrap();
            assert_eq!(id, id2);
            if n == 0 {
                assert_eq!(after, before);
            }
            // A run's records are replayed as a count: rebuild them here
            // from the offsets the decoder reached, by decoding the same
            // bytes without runs below and comparing counts.
            for _ in 0..n {
                out.push(Record::Access {
                    id,
                    offset: u64::MAX, // placeholder, checked by `runs_agree`
                    write,
                });
            }
            assert!(n == 0 || (lo..hi).contains(&after), "{after} in {lo}..{hi}");
        }
        match d.next_record() {
            Some(r) => out.push(r.unwrap()),
            None => return out,
        }
    }
}

/// The records `decode_with_runs` gives equal the plain decoding, a run's
/// placeholder standing for an access of its kind and region whose offset
/// lies in its window.
fn runs_agree(recs: &[Record], window: u64) {
    let bytes = encode_all(recs);
    let choose = |offset: u64| {
        let lo = offset / window * window;
        (offset.is_multiple_of(2), lo, lo + window)
    };
    let got = decode_with_runs(&bytes, choose);
    assert_eq!(got.len(), recs.len());
    let mut prev: Option<u64> = None;
    for (g, r) in got.iter().zip(recs) {
        match (g, r) {
            (
                Record::Access {
                    id,
                    offset: u64::MAX,
                    write,
                },
                Record::Access {
                    id: rid,
                    offset: ro,
                    write: rw,
                },
            ) => {
                assert_eq!((id, write), (rid, rw));
                // Same window as the access before it.
                let p = prev.expect("a run follows an access");
                assert_eq!(p / window, ro / window);
            }
            _ => assert_eq!(g, r),
        }
        if let Record::Access { offset, .. } = r {
            prev = Some(*offset);
        }
    }
}

proptest! {
    #[test]
    fn runs_stand_for_exactly_the_records_they_consume(
        recs in prop::collection::vec(any_record(), 0..200),
        shift in 6u32..14,
    ) {
        runs_agree(&recs, 1 << shift);
    }

    #[test]
    fn runs_of_small_and_large_steps(
        steps in prop::collection::vec((-300i64..300, any::<bool>(), 0u8..12), 0..400),
        shift in 6u32..13,
    ) {
        runs_agree(&walk(steps), 1 << shift);
    }
}

#[test]
fn a_run_stops_at_a_cut_delta_and_leaves_it_to_the_decoder() {
    let recs = [
        Record::Access {
            id: 0,
            offset: 4096,
            write: false,
        },
        Record::Access {
            id: 0,
            offset: 4104,
            write: false,
        },
        Record::Access {
            id: 0,
            offset: 4096 + 1000,
            write: false,
        },
    ];
    let mut bytes = encode_all(&recs);
    // Cut the last delta (two bytes) in half.
    bytes.pop();
    let mut d = Decoder::new(&bytes);
    d.next_record().unwrap().unwrap();
    assert_eq!(d.run_within(false, 4096, 8192), 1);
    assert_eq!(d.last_access(), Some((0, 4104)));
    let e = d.next_record().unwrap().unwrap_err();
    assert!(e.what.contains("cut"), "{e:?}");
}

#[test]
fn no_run_before_the_chunks_first_access() {
    let bytes = encode_all(&[Record::Hits { count: 5 }]);
    let mut d = Decoder::new(&bytes);
    assert_eq!(d.last_access(), None);
    assert_eq!(d.run_within(false, 0, u64::MAX), 0);
    assert_eq!(d.next_record().unwrap().unwrap(), Record::Hits { count: 5 });
}

proptest! {
    /// The first pass's skip over accesses (four two-byte accesses at a
    /// time where it can) passes over exactly the accesses the decoder
    /// gives, and stops at the same other records.
    #[test]
    fn skipping_accesses_counts_what_decoding_finds(
        steps in prop::collection::vec((-80i64..80, any::<bool>(), 0u8..40), 0..400),
    ) {
        let recs = walk(steps);
        let bytes = encode_all(&recs);
        let mut d = Decoder::new(&bytes);
        let (mut accesses, mut others) = (0u64, Vec::new());
        while let Some(r) = d.next_non_access(&mut accesses) {
            others.push(r.unwrap());
        }
        let want: Vec<Record> = recs
            .iter()
            .filter(|r| !matches!(r, Record::Access { .. }))
            .cloned()
            .collect();
        prop_assert_eq!(others, want);
        prop_assert_eq!(accesses as usize, recs.len() - recs.iter().filter(|r| !matches!(r, Record::Access { .. })).count());
    }
}

/// Records with fields of every length: offsets up to 2^40 (one to six
/// bytes), near and far accesses, `Hits` of any count, other records.
fn any_wide_record() -> impl Strategy<Value = Record> {
    prop_oneof![
        4 => (0u32..3, 0u64..1 << 40, any::<bool>()).prop_map(|(id, offset, write)| {
            Record::Access { id, offset, write }
        }),
        4 => (0u32..3, 0u64..1 << 12, any::<bool>()).prop_map(|(id, offset, write)| {
            Record::Access { id, offset, write }
        }),
        2 => (0u64..1 << 30).prop_map(|count| Record::Hits { count }),
        1 => (0u32..300).prop_map(|tid| Record::Thread { tid }),
        1 => "[a-z]{0,3}".prop_map(|name| Record::Mark { name }),
    ]
}

proptest! {
    /// The first pass's skip over accesses and `Hits` records (one word
    /// per access where 8 bytes follow its tag) passes over exactly the
    /// accesses and hits the decoder gives, and stops at the same records.
    #[test]
    fn skipping_accesses_and_hits_counts_what_decoding_finds(
        recs in prop::collection::vec(any_wide_record(), 0..300),
    ) {
        let bytes = encode_all(&recs);
        let mut d = Decoder::new(&bytes);
        let (mut accesses, mut hits, mut others) = (0u64, trace::codec::Tally::default(), Vec::new());
        while let Some(r) = d.next_non_access_or_hits(&mut accesses, &mut hits) {
            others.push(r.unwrap());
        }
        let is_access = |r: &Record| matches!(r, Record::Access { .. });
        let want: Vec<Record> = recs
            .iter()
            .filter(|r| !is_access(r) && !matches!(r, Record::Hits { .. }))
            .cloned()
            .collect();
        prop_assert_eq!(others, want);
        prop_assert_eq!(accesses as usize, recs.iter().filter(|r| is_access(r)).count());
        let counts: Vec<u64> = recs
            .iter()
            .filter_map(|r| match r {
                Record::Hits { count } => Some(*count),
                _ => None,
            })
            .collect();
        prop_assert_eq!(hits.records as usize, counts.len());
        prop_assert_eq!(hits.count, counts.iter().sum::<u64>());
    }

    /// The replay's loop (`next_access`, `next_hits`, else `next_record`)
    /// gives exactly the records record-at-a-time decoding gives.
    #[test]
    fn access_and_hits_fast_paths_decode_as_records(
        recs in prop::collection::vec(any_wide_record(), 0..300),
    ) {
        let bytes = encode_all(&recs);
        let mut d = Decoder::new(&bytes);
        let mut got = Vec::new();
        loop {
            if let Some((id, offset, write)) = d.next_access() {
                got.push(Record::Access { id, offset, write });
            } else if let Some(count) = d.next_hits() {
                got.push(Record::Hits { count });
            } else if let Some(r) = d.next_record() {
                got.push(r.unwrap());
            } else {
                break;
            }
        }
        prop_assert_eq!(got, recs);
    }
}

/// A cut access is left to `next_record`, which reports it.
#[test]
fn a_cut_access_is_reported_by_next_record() {
    let mut bytes = encode_all(&[Record::Access {
        id: 1,
        offset: 1 << 30,
        write: true,
    }]);
    bytes.pop();
    let mut d = Decoder::new(&bytes);
    assert_eq!(d.next_access(), None);
    assert!(d.next_record().unwrap().is_err());
}
