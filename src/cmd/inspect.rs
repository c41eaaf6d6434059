//! `ptlab inspect PID`: a live process's page tables, its VmPTE explained,
//! and the same memory under other geometries.

use super::print_json;
use crate::cli::InspectArgs;
use crate::fail::{bad, CmdResult, Failure};
use crate::out::{out, outln};
use experiment::inspect::{self, Inspection};
use host::pagemap::{self, ReadError, ReadOptions};
use pt::geometry::{self, human_size};
use report::Unit;
use report::{Cell, Table};
use std::process::ExitCode;
use std::time::Duration;

fn parse_pid(s: &str) -> Result<u32, Failure> {
    match s.trim().parse::<u32>() {
        Ok(pid) if pid > 0 => Ok(pid),
        _ => Err(Failure::BadInput(format!(
            "PID \"{s}\": expected a process id, a whole number above 0 (see /proc)"
        ))),
    }
}

pub fn run(args: InspectArgs) -> CmdResult {
    let pid = parse_pid(&args.pid)?;
    let names: Vec<String> = if args.geometry.is_empty() {
        inspect::DEFAULT_WHAT_IF
            .iter()
            .map(|s| s.to_string())
            .collect()
    } else {
        args.geometry.clone()
    };
    let mut what_if = Vec::new();
    for n in &names {
        crate::suggest::check_preset("", "geometry", n)?;
        what_if.push(geometry::load(n).map_err(bad)?);
    }
    if !(args.time_limit.is_finite() && args.time_limit > 0.0 && args.time_limit < 1e6) {
        return Err(Failure::BadInput(format!(
            "--time-limit {}: expected seconds above 0",
            args.time_limit
        )));
    }
    let host = geometry::preset(inspect::host_geometry_name()).map_err(anyhow::Error::from)?;
    let opts = ReadOptions {
        time_limit: Duration::from_secs_f64(args.time_limit),
        force_entries: args.pagemap_entries,
    };
    let snap = pagemap::read(pid, &opts).map_err(|e| match e {
        ReadError::Io { .. } => Failure::Error(anyhow::Error::new(e)),
        _ => Failure::BadInput(e.to_string()),
    })?;
    let mut ins = inspect::inspect(&snap, &host, &what_if);
    let deadline = std::time::Instant::now() + opts.time_limit;
    match pagemap::folios::read(pid, &snap.vmas, snap.page_size, deadline, &|va| {
        snap.pmd_mapped(va)
    }) {
        Ok(f) => ins.folios = Some(f),
        Err(ReadError::NotPermitted { path, .. }) => {
            ins.folios_unread = Some(format!(
            "folio sizes need the page frame numbers of {path} and /proc/kpageflags: run as root"
        ))
        }
        Err(e @ ReadError::NoProcess { .. }) => return Err(Failure::BadInput(e.to_string())),
        Err(e) => return Err(Failure::Error(anyhow::Error::new(e))),
    }
    if args.json {
        return print_json(&ins);
    }
    print_human(&ins)?;
    Ok(ExitCode::SUCCESS)
}

fn kb(v: u64) -> Cell {
    Cell::quantity(v as f64, Unit::Kilobytes)
}
fn bytes(v: u64) -> Cell {
    Cell::quantity(v as f64, Unit::Bytes)
}
fn count(v: u64) -> Cell {
    Cell::quantity(v as f64, Unit::Count)
}

fn print_human(ins: &Inspection) -> Result<(), Failure> {
    let m = &ins.mapped;
    let source = match ins.source {
        pagemap::Source::PagemapScan => "PAGEMAP_SCAN".to_string(),
        pagemap::Source::Pagemap => format!(
            "pagemap entries ({})",
            ins.fallback_reason.as_deref().unwrap_or("fallback")
        ),
    };
    outln!(
        "process {}: {} VMAs, read with {} in {:.1} ms; tables as {} builds them{}",
        ins.pid,
        m.vmas,
        source,
        ins.read_ms,
        ins.geometry,
        if ins.complete {
            ""
        } else {
            " (read stopped at its time limit: partial)"
        }
    )?;
    let opt = |v: Option<u64>| v.map_or("unknown".to_string(), |n| n.to_string());
    outln!(
        "mapped: {} present pages ({}), {} swapped, {} file; zero-page mappings: {}; PMD-mapped huge pages: {} anonymous, {} file, {} huge zero",
        report::group_thousands(m.present_pages as i64),
        human_size(m.present_pages * ins.page_size),
        m.swapped_pages,
        m.file_pages,
        opt(m.zero_pages),
        m.huge_anon,
        m.huge_file,
        opt(m.huge_zero),
    )?;
    outln!()?;

    let mut t = Table::new(["level", "tables", "memory", "in VmPTE", "leaves"])
        .with_title("Tables the present pages need");
    for l in ins.tables.iter().rev() {
        t.push_row([
            Cell::text(&l.name),
            count(l.tables),
            bytes(l.bytes),
            Cell::text(if l.in_vmpte { "yes" } else { "no" }),
            count(l.leaves),
        ]);
    }
    t.push_row([
        Cell::text("deposited"),
        count(ins.deposited_tables),
        bytes(ins.deposited_tables * ins.page_size),
        Cell::text("yes"),
        Cell::Empty,
    ]);
    t.push_note("deposited: one PTE table Linux keeps beside each anonymous PMD-mapped huge page");
    out!("{}", t.render())?;
    outln!()?;

    let mut h =
        Table::new(["present entries", "PTE tables"]).with_title("Present entries per PTE table");
    for b in &ins.pte_histogram {
        let label = if b.min == b.max {
            b.min.to_string()
        } else {
            format!("{}-{}", b.min, b.max)
        };
        h.push_row([Cell::text(label), count(b.tables)]);
    }
    out!("{}", h.render())?;
    outln!()?;

    let v = &ins.vmpte;
    outln!(
        "VmPTE: predicted {} kB, kernel {}",
        v.predicted_kb,
        v.kernel_kb.map_or("unknown".into(), |k| format!("{k} kB"))
    )?;
    for line in &v.explanation {
        outln!("  {line}")?;
    }
    outln!()?;

    let mut w = Table::new([
        "geometry",
        "scenario",
        "tables",
        "table memory",
        "VmPTE",
        "mapped",
        "TLB entries",
        "reach of 1,536",
        "coverage",
    ])
    .with_title("What if: the same present memory");
    for r in &ins.what_if {
        w.push_row([
            Cell::text(if r.folded {
                format!("{} (folded)", r.geometry)
            } else {
                r.geometry.clone()
            }),
            Cell::text(&r.scenario),
            count(r.levels.iter().map(|l| l.tables).sum::<u64>() + r.deposited + r.kept),
            bytes(r.table_bytes),
            kb(r.vmpte_kb),
            bytes(r.mapped_bytes),
            count(r.tlb.entries),
            bytes(r.tlb.reach_bytes),
            Cell::quantity(r.tlb.coverage * 100.0, Unit::Percent),
        ]);
    }
    w.push_note("kernel now: the kernel's VmPTE plus the levels it does not count (PGD, P4D); eager reclaim: only tables with a present entry");
    w.push_note("THP always: every block of the geometry's level-1 leaf size inside an anonymous VMA with a page present is one huge page");
    w.push_note("folded: addresses past the geometry's user range were taken modulo it");
    out!("{}", w.render())?;
    print_folios(ins)
}

/// The folios table: per VMA with large folios, their sizes and mappings,
/// and what contpte or Svnapot folding would save.
fn print_folios(ins: &Inspection) -> Result<(), Failure> {
    outln!()?;
    let Some(f) = &ins.folios else {
        outln!(
            "folios: not read ({})",
            ins.folios_unread.as_deref().unwrap_or("unknown reason")
        )?;
        return Ok(());
    };
    let mut t = Table::new([
        "VMA",
        "mapping",
        "folios by size",
        "64 KiB runs to fold",
        "TLB entries saved",
        "table pages saved",
    ])
    .with_title("Folios mapping each VMA (VMAs with large folios)");
    let mut small_only = 0;
    for v in &f.vmas {
        if v.sizes.iter().all(|s| s.order == 0) {
            small_only += 1;
            continue;
        }
        let sizes: Vec<String> = v
            .sizes
            .iter()
            .map(|s| {
                format!(
                    "{} x {}{}",
                    report::group_thousands(s.count as i64),
                    human_size(s.bytes),
                    if s.pmd_mapped {
                        " (PMD)"
                    } else if s.order > 0 {
                        " (PTEs)"
                    } else {
                        ""
                    }
                )
            })
            .collect();
        t.push_row([
            Cell::text(format!("{:#x}-{:#x}", v.start, v.end)),
            Cell::text(if v.path.is_empty() { "[anon]" } else { &v.path }),
            Cell::text(sizes.join(", ")),
            count(v.cont_runs),
            Cell::text(format!(
                "{} contpte/Svnapot, {} PMD",
                report::group_thousands(v.cont_tlb_saved as i64),
                report::group_thousands(v.pmd_tlb_saved as i64)
            )),
            Cell::text(format!(
                "{} (PMD: {} PTE tables unlinked)",
                report::group_thousands(v.cont_tables_saved as i64),
                report::group_thousands(v.pmd_pte_tables_unlinked as i64)
            )),
        ]);
    }
    t.push_note(format!(
        "{small_only} more VMAs are mapped by order-0 pages only{}",
        if f.complete {
            ""
        } else {
            "; the read stopped at its time limit: partial"
        }
    ));
    t.push_note("runs to fold: 16 present pages, 64 KiB-aligned in both address spaces, of one folio: one arm64 contpte or RISC-V Svnapot entry each, saving 15 TLB entries and no table page (the 16 PTEs stay)");
    out!("{}", t.render())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pids_are_whole_numbers_above_zero() {
        assert_eq!(parse_pid(" 42 ").ok(), Some(42));
        for s in ["0", "-3", "abc", "1.5", ""] {
            assert!(matches!(parse_pid(s), Err(Failure::BadInput(_))), "{s}");
        }
    }
}
