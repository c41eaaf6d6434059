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
    let header = Header {
        source: "workload".into(),
        command: vec![workload.clone()],
        page_size: 4096,
        va_bits: 48,
        notes: vec![format!("the events of workload {workload}")],
        observed: Default::default(),
    };
    let write = || -> Result<u64, String> {
        let mut t = TraceWriter::create(std::path::Path::new(out), &header)
            .map_err(|e| e.to_string())?
            .with_level(1);
        from_workload::for_each_record(&w, &mut |r| t.push(&r).map_err(|e| e.to_string()))?;
        let n = t.records();
        t.finish().map_err(|e| e.to_string())?;
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
