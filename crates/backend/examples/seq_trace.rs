//! Writes a trace of sequential 8-byte accesses: one 64 MiB anonymous
//! region written once a page, then read 8 bytes at a time, `N` million
//! reads in all (wrapping around). Most reads fall in the page of the
//! previous one: the replay's repeat path. With a third argument
//! `filtered`, the reads are written as a tracer that filters them writes
//! them: the first read of each page, then one `Hits` record for the rest.
//! For the replay benchmark:
//! `cargo run --release -p backend --example seq_trace -- N OUT.ptl [filtered]`.

use trace::{Header, MapEvent, MapFlags, Prot, Record, RegionKind, TraceWriter};

fn main() -> std::io::Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(millions), Some(out)) = (
        args.first().and_then(|n| n.parse::<u64>().ok()),
        args.get(1),
    ) else {
        eprintln!("usage: seq_trace MILLIONS OUT.ptl");
        std::process::exit(2);
    };
    let size = 64u64 << 20;
    let header = Header {
        source: "test".into(),
        page_size: 4096,
        va_bits: 48,
        notes: vec!["sequential 8-byte reads over 64 MiB".into()],
        ..Header::default()
    };
    let mut t = TraceWriter::create(std::path::Path::new(out), &header)?.with_level(1);
    t.push(&Record::Map(MapEvent {
        id: 0,
        size,
        native: 0x2000_0000_0000,
        kind: RegionKind::Anon,
        prot: Prot(Prot::READ | Prot::WRITE),
        flags: MapFlags::default(),
        name: "data".into(),
    }))?;
    for p in 0..size / 4096 {
        t.push(&Record::Access {
            id: 0,
            offset: p * 4096,
            write: true,
        })?;
    }
    t.push(&Record::Mark {
        name: "written".into(),
    })?;
    let filtered = args.get(2).is_some_and(|a| a == "filtered");
    let reads = millions * 1_000_000;
    let mut i = 0;
    while i < reads {
        let offset = (i * 8) % size;
        t.push(&Record::Access {
            id: 0,
            offset,
            write: false,
        })?;
        i += 1;
        if filtered {
            // The rest of this page's reads, as the tracer's filter leaves them.
            let rest = ((4096 - offset % 4096) / 8 - 1).min(reads - i);
            if rest > 0 {
                t.push(&Record::Hits { count: rest })?;
                i += rest;
            }
        }
    }
    t.push(&Record::Mark {
        name: "read".into(),
    })?;
    let n = t.records();
    t.finish()?;
    eprintln!("{out}: {n} records");
    Ok(())
}
