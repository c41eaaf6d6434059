//! Writes a one-thread workload as a trace file, for trying `ptlab replay`
//! and for the replay benchmarks:
//! `cargo run --release -p backend --example workload_trace -- WORKLOAD OUT.ptl`.

use backend::replay::from_workload;
use trace::{Header, TraceWriter};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [workload, out] = args.as_slice() else {
        eprintln!("usage: workload_trace WORKLOAD OUT.ptl");
        std::process::exit(2);
    };
    let w = match workload::load(workload, 48) {
        Ok(w) => w,
        Err(e) => {
            eprintln!("{e}");
            std::process::exit(2);
        }
    };
    let records = match from_workload::records(&w) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{workload}: {e}");
            std::process::exit(2);
        }
    };
    let header = Header {
        source: "workload".into(),
        command: vec![workload.clone()],
        page_size: 4096,
        va_bits: 48,
        notes: vec![format!("the events of workload {workload}")],
        observed: Default::default(),
    };
    let write = || -> std::io::Result<u64> {
        let mut t = TraceWriter::create(std::path::Path::new(out), &header)?;
        for r in &records {
            t.push(r)?;
        }
        let n = t.records();
        t.finish()?;
        Ok(n)
    };
    match write() {
        Ok(n) => eprintln!("{out}: {n} records"),
        Err(e) => {
            eprintln!("{out}: {e}");
            std::process::exit(1);
        }
    }
}
