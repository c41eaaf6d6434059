//! Page-table pages: `pt.alloc` and `pt.free`, on the kernel backend.
//!
//! Two regions get the same number N of write faults: `sparse` one page in
//! each of N 2 MiB ranges (a new PTE table per fault), `dense` N adjacent
//! pages (one table). The faults differ only in the tables they allocate:
//!
//! `pt.alloc = (time(sparse faults) - time(dense faults)) / (tables(sparse) - tables(dense))`
//!
//! and unmapping both, each zapping N pages, differs only in the tables it
//! frees: `pt.free` likewise. Tables are counted by the kernel (VmPTE, 4 KiB
//! a table), not assumed. Times are the process's CPU time (`cpu_ns`):
//! nothing here blocks, and it leaves out what other processes took. Both regions are advised `nohugepage`, so a host
//! with THP `always` still faults 4 KiB pages.

use super::estimate::measured;
use super::runner::{self, minus, per, Phases};
use super::{CalibrateError, Figures, Scale};

/// Faults (and tables) per region and repetition.
fn tables(scale: Scale) -> u64 {
    match scale {
        Scale::Test => 64,
        Scale::Quick => 256,
        Scale::Long => 512,
    }
}

fn workload(reps: usize, n: u64) -> String {
    let sparse = n * (2 << 20);
    let dense = n * 4096;
    format!(
        r#"name = "calibrate-tables"
description = "ptlab calibrate: page-table allocation and freeing"

[[thread]]
op = [
  {{ repeat = {reps}, op = [
    {{ mark = "empty0" }},
    {{ mark = "empty" }},
    {{ mmap = "sparse", size = {sparse} }},
    {{ mmap = "dense", size = {dense} }},
    {{ madvise = "sparse", advice = "nohugepage" }},
    {{ madvise = "dense", advice = "nohugepage" }},
    {{ mark = "p0" }},
    {{ touch = "sparse", access = "write", stride = "2MiB" }},
    {{ mark = "p1" }},
    {{ touch = "dense", access = "write" }},
    {{ mark = "p2" }},
    {{ munmap = "sparse" }},
    {{ mark = "p3" }},
    {{ munmap = "dense" }},
    {{ mark = "p4" }},
  ] }},
]
"#
    )
}

/// Table pages over a phase (VmPTE in KiB over 4 KiB a table), made
/// positive for phases that free them.
fn table_pages(p: &Phases, from: &str, to: &str) -> Vec<f64> {
    p.count(from, to, "vmpte_kb")
        .into_iter()
        .map(|kb| (kb / 4.0).abs())
        .collect()
}

pub fn probe(scale: Scale, figs: &mut Figures) -> Result<(), CalibrateError> {
    let n = tables(scale);
    let p = runner::run(
        "page tables",
        &workload(scale.reps(), n),
        scale.kernel_timeout(),
    )?;
    let alloc_tables = minus(&table_pages(&p, "p0", "p1"), &table_pages(&p, "p1", "p2"));
    let alloc = per(
        &minus(&p.cpu_time("p0", "p1"), &p.cpu_time("p1", "p2")),
        &alloc_tables,
    );
    figs.put(
        "pt.alloc",
        measured(
            &alloc,
            &format!("kernel backend: {n} write faults one per 2 MiB (a PTE table each) minus {n} on adjacent pages (one table), in process CPU time, over the difference in VmPTE tables ({:.0} per run)", runner::mean(&alloc_tables)),
        ),
    );
    let free_tables = minus(&table_pages(&p, "p2", "p3"), &table_pages(&p, "p3", "p4"));
    let free = per(
        &minus(&p.cpu_time("p2", "p3"), &p.cpu_time("p3", "p4")),
        &free_tables,
    );
    figs.put(
        "pt.free",
        measured(
            &free,
            &format!("kernel backend: munmap of {n} pages one per 2 MiB minus munmap of {n} adjacent pages, in process CPU time, over the difference in PTE tables freed ({:.0} per run)", runner::mean(&free_tables)),
        ),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workloads_pass_the_format_checks_at_every_scale() {
        crate::calibrate::runner::assert_parses_at_every_scale("tables.toml", |scale| {
            workload(scale.reps(), tables(scale))
        });
    }
}
