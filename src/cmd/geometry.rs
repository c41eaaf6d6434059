//! `ptlab geometry list|show`.

use super::print_json;
use crate::cli::GeometryCmd;
use crate::fail::{bad, CmdResult};
use crate::out::outln;
use pt::geometry::{self, human_size, Geometry};
use serde_json::{json, Value};
use std::process::ExitCode;

pub fn summary_json(g: &Geometry) -> Value {
    json!({
        "name": g.name(),
        "arch": g.arch().name(),
        "description": g.description(),
        "levels": g.num_levels(),
        "va_bits": g.va_bits(),
        "page_size": g.page_size(),
        "hw_page_size": 1u64 << g.hw_page_shift(),
        "table_bytes": g.table_bytes(),
        "leaf_sizes": g.leaf_sizes(),
    })
}

fn detail_json(g: &Geometry) -> Value {
    let mut v = summary_json(g);
    v["level_list"] = g
        .levels()
        .iter()
        .enumerate()
        .rev()
        .map(|(i, l)| {
            json!({
                "level": i,
                "name": l.name,
                "bits": [l.high_bit(), l.shift],
                "entries": l.entries(),
                "entry_size": l.entry_size(),
                "leaf": l.leaf,
                "contiguous_entries": l.contig,
            })
        })
        .collect();
    v
}

pub fn run(what: GeometryCmd) -> CmdResult {
    match what {
        GeometryCmd::List { json } => {
            let all = geometry::presets();
            if json {
                return print_json(&all.iter().map(summary_json).collect::<Vec<_>>());
            }
            outln!(
                "{:<16} {:>6} {:>7} {:>8}  leaf sizes",
                "name",
                "levels",
                "va bits",
                "page"
            )?;
            for g in &all {
                let leaves: Vec<String> = g.leaf_sizes().iter().map(|s| human_size(*s)).collect();
                outln!(
                    "{:<16} {:>6} {:>7} {:>8}  {}",
                    g.name(),
                    g.num_levels(),
                    g.va_bits(),
                    human_size(g.page_size()),
                    leaves.join(", ")
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
        GeometryCmd::Show { name, json } => {
            crate::suggest::check_preset("", "geometry", &name)?;
            let g = geometry::load(&name).map_err(bad)?;
            if json {
                return print_json(&detail_json(&g));
            }
            outln!("{}", g.summary())?;
            outln!("{}", g.description())?;
            outln!(
                "table page: {}, hardware page: {}, {} hardware word(s) per entry",
                human_size(g.table_bytes()),
                human_size(1 << g.hw_page_shift()),
                g.hw_words_per_entry()
            )?;
            outln!(
                "{:<6} {:>9} {:>8} {:>10}  leaves",
                "level",
                "bits",
                "entries",
                "maps"
            )?;
            for l in g.levels().iter().rev() {
                let mut leaves = Vec::new();
                if l.leaf {
                    leaves.push(human_size(l.entry_size()));
                }
                if l.contig > 0 {
                    leaves.push(format!(
                        "{} ({} contiguous)",
                        human_size(l.entry_size() * u64::from(l.contig)),
                        l.contig
                    ));
                }
                outln!(
                    "{:<6} {:>9} {:>8} {:>10}  {}",
                    l.name,
                    format!("{}-{}", l.high_bit(), l.shift),
                    l.entries(),
                    human_size(l.entry_size()),
                    if leaves.is_empty() {
                        "-".to_string()
                    } else {
                        leaves.join(", ")
                    }
                )?;
            }
            Ok(ExitCode::SUCCESS)
        }
    }
}
