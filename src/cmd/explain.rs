//! `ptlab explain --geometry NAME ADDRESS`: the address split the way the
//! seeds draw it.

use super::print_json;
use crate::cli::ExplainArgs;
use crate::fail::{bad, CmdResult, Failure};
use crate::out::outln;
use pt::geometry;
use serde_json::json;
use std::process::ExitCode;

/// Parses `0x...` hex or decimal, with optional `_` separators.
pub fn parse_address(s: &str) -> Result<u64, Failure> {
    let t = s.trim().replace('_', "");
    let r = match t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        Some(h) => u64::from_str_radix(h, 16),
        None => t.parse::<u64>(),
    };
    r.map_err(|_| {
        Failure::BadInput(format!(
            "address \"{s}\": expected a 64-bit number, hex with 0x (0x7fdbef789000) or decimal"
        ))
    })
}

pub fn run(args: ExplainArgs) -> CmdResult {
    crate::suggest::check_preset("", "geometry", &args.geometry)?;
    let g = geometry::load(&args.geometry).map_err(bad)?;
    let va = parse_address(&args.address)?;
    if !g.is_canonical(va) {
        return Err(Failure::BadInput(format!(
            "address {va:#x} is not canonical for {} ({}-bit virtual addresses: bits 63..{} must all equal bit {})",
            g.name(),
            g.va_bits(),
            g.va_bits() - 1,
            g.va_bits() - 1
        )));
    }
    let offset_mask = g.page_size() - 1;
    let levels: Vec<_> = (0..g.num_levels())
        .rev()
        .map(|i| {
            let l = g.level(i);
            json!({"name": l.name, "bits": [l.high_bit(), l.shift], "index": g.index(i, va)})
        })
        .collect();
    if args.json {
        return print_json(&json!({
            "geometry": g.name(),
            "va_bits": g.va_bits(),
            "page_size": g.page_size(),
            "address": format!("{va:#x}"),
            "levels": levels,
            "offset_bits": [g.page_shift() - 1, 0],
            "offset": va & offset_mask,
        }));
    }
    outln!("{va:#x} in {}", g.summary())?;
    outln!("{:<6} {:>7} {:>8} {:>8}", "level", "bits", "index", "hex")?;
    for i in (0..g.num_levels()).rev() {
        let l = g.level(i);
        let idx = g.index(i, va);
        outln!(
            "{:<6} {:>7} {:>8} {:>8}",
            l.name,
            format!("{}-{}", l.high_bit(), l.shift),
            idx,
            format!("{idx:#x}")
        )?;
    }
    outln!(
        "{:<6} {:>7} {:>8} {:>8}",
        "offset",
        format!("{}-0", g.page_shift() - 1),
        va & offset_mask,
        format!("{:#x}", va & offset_mask)
    )?;
    Ok(ExitCode::SUCCESS)
}
