//! Parsing a one-thread workload from its ops alone, for the format tests:
//! its ops when accepted, its one-line error when refused.

#![allow(dead_code)] // each test binary uses a different part

use workload::parse;
use workload::plan::Op;

pub const FILE: &str = "workloads/x.toml";

/// The error of a workload of one thread with `ops`, which must be refused
/// in one line.
pub fn err(ops: &str) -> String {
    let text = format!("[[thread]]\nop = [\n{ops}\n]\n");
    match parse(&text, FILE, 48) {
        Ok(w) => panic!("accepted: {w:?}"),
        Err(e) => {
            let s = e.to_string();
            assert!(!s.contains('\n'), "two lines: {s}");
            s
        }
    }
}

/// The planned ops of a workload of one thread with `ops`, which must be
/// accepted.
pub fn ops(ops: &str) -> Vec<Op> {
    let text = format!("[[thread]]\nop = [\n{ops}\n]\n");
    let w = parse(&text, FILE, 48).unwrap_or_else(|e| panic!("{e}"));
    w.threads[0].ops.clone()
}
