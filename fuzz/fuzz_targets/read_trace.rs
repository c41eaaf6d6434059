//! Feeds arbitrary bytes to the trace reader as a file: the header, every
//! chunk's records (both decoders: the records, and the replay's access
//! fast path), the first pass and the index read from the end. None may
//! panic; every error names a byte offset on one line.
//!
//! Run: `cargo +nightly fuzz run read_trace` (seed the corpus with a few
//! small traces: `ptlab import lackey`, `ptlab record -o ... -- true`).

#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Cursor;
use std::path::Path;
use trace::{regions, TraceError, TraceReader};

fn one_line(e: &TraceError) {
    let line = e.to_string();
    assert!(!line.contains('\n') && !line.contains('\r'), "{line:?}");
}

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.ptl");
    // Records, decoded one chunk at a time.
    if let Ok(mut r) = TraceReader::new(data, path) {
        let mut recs = Vec::new();
        loop {
            match r.next_chunk(&mut recs) {
                Ok(true) => recs.clear(),
                Ok(false) => break,
                Err(e) => {
                    one_line(&e);
                    break;
                }
            }
        }
    }
    // The replay's way: raw chunks, accesses and hits taken straight from
    // the bytes, anything else as a record.
    if let Ok(mut r) = TraceReader::new(data, path) {
        while let Ok(Some(chunk)) = r.next_raw_chunk() {
            let mut d = chunk.decoder();
            let mut n = 0u64;
            loop {
                if d.next_access().is_some() || d.next_hits().is_some() {
                    n += 1;
                    continue;
                }
                match d.next_record() {
                    Some(Ok(_)) => n += 1,
                    Some(Err(e)) => {
                        one_line(&chunk.error(e));
                        break;
                    }
                    None => {
                        if let Err(e) = chunk.check_count(n) {
                            one_line(&e);
                        }
                        break;
                    }
                }
            }
        }
    }
    // The first pass, and the index from the end.
    if let Ok(mut r) = TraceReader::new(data, path) {
        if let Err(e) = regions::scan(&mut r) {
            one_line(&e);
        }
    }
    if let Err(e) = trace::file::read_index_from(Cursor::new(data), path) {
        one_line(&e);
    }
});
