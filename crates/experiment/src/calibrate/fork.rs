//! A workload's `fork`, on the kernel backend: `fork.call` and `fork.page`
//! (`fork.table` is derived).
//!
//! Per repetition, one region gets more and more of its pages written
//! (sizes in `sizes`), and after each size the thread forks a child that
//! does nothing and exits; the parent waits for it. The phase around each
//! fork is the whole of what a workload's fork costs on the kernel
//! backend: fork(2) (Linux: kernel/fork.c, dup_mmap -> copy_page_range,
//! an entry per present page), the child's start, its exit (exit_mmap:
//! every copied entry zapped, every table freed) and the parent's wait.
//! A least-squares line over the sizes, one per repetition, gives
//! `fork.call` (the intercept) and `fork.page` (the slope, per present
//! page of the workload's memory).
//!
//! The intercept is a fork of the kernel backend's measured process, which
//! is a fork of ptlab itself: it copies ptlab's own mappings too, the child
//! makes its runner memory fault-free before it runs, the parent its own
//! after the reap, and the parent looks for the child's exit every 1 ms
//! (`backend::kernel::fork`). That is the fixed part of a fork as the
//! kernel backend runs one, which is what `validate --time` measures.

use super::estimate::{derived_from, least_squares, measured};
use super::runner::{self, Phases};
use super::{CalibrateError, Figures, Scale};

/// Written pages of the region at each fork, in increasing order.
fn sizes(scale: Scale) -> Vec<u64> {
    match scale {
        Scale::Test => vec![0, 64, 256],
        Scale::Quick => vec![0, 256, 2048],
        Scale::Long => vec![0, 256, 1024, 4096],
    }
}

/// The workload, unrolled: a fork may only be a top-level op of its
/// thread, so each repetition's ops are written out (the marks repeat
/// their names, the forks are named per repetition).
fn workload(reps: usize, sizes: &[u64]) -> String {
    let max = sizes.last().copied().unwrap_or(0).max(1) * 4096;
    let mut ops = String::new();
    for r in 0..reps {
        ops.push_str(&format!(
            "  {{ mark = \"empty0\" }},\n  {{ mark = \"empty\" }},\n  {{ mmap = \"k\", size = {max} }},\n  {{ madvise = \"k\", advice = \"nohugepage\" }},\n"
        ));
        for (i, s) in sizes.iter().enumerate() {
            if *s > 0 {
                ops.push_str(&format!(
                    "  {{ touch = \"k\", access = \"write\", len = {} }},\n",
                    s * 4096
                ));
            }
            ops.push_str(&format!(
                "  {{ mark = \"f{i}\" }},\n  {{ fork = \"c{r}_{i}\", op = [ {{ mark = \"in\" }} ] }},\n  {{ mark = \"g{i}\" }},\n"
            ));
        }
        ops.push_str("  { munmap = \"k\" },\n");
    }
    format!(
        "name = \"calibrate-fork\"\ndescription = \"ptlab calibrate: a fork whose child does nothing, by pages present\"\n\n[[thread]]\nop = [\n{ops}]\n"
    )
}

pub fn probe(scale: Scale, figs: &mut Figures) -> Result<(), CalibrateError> {
    let sizes = sizes(scale);
    let p: Phases = runner::run(
        "fork",
        &workload(scale.reps(), &sizes),
        scale.kernel_timeout(),
    )?;
    let per_size: Vec<Vec<f64>> = (0..sizes.len())
        .map(|i| p.time(&format!("f{i}"), &format!("g{i}")))
        .collect();
    let reps = per_size.first().map_or(0, Vec::len);
    let lines: Vec<_> = (0..reps)
        .filter_map(|r| {
            let pts: Vec<(f64, f64)> = sizes
                .iter()
                .zip(&per_size)
                .filter_map(|(s, t)| t.get(r).map(|t| (*s as f64, *t)))
                .collect();
            least_squares(&pts)
        })
        .collect();
    let list = sizes
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join(", ");
    let how = format!(
        "kernel backend: fork of a child that does nothing, the parent waiting for its exit, with {list} pages of an anonymous region present; least squares ns = a + b x pages, one fit per run"
    );
    let a: Vec<f64> = lines.iter().map(|l| l.intercept).collect();
    let b: Vec<f64> = lines.iter().map(|l| l.slope).collect();
    figs.put(
        "fork.call",
        measured(
            &a,
            &format!("{how}: a (the kernel backend's fork: ptlab's own process copied, the child's runner memory made fault-free, the parent's wait polled every 1 ms)"),
        ),
    );
    figs.put(
        "fork.page",
        measured(
            &b,
            &format!("{how}: b (each present page's entry copied, and zapped at the child's exit)"),
        ),
    );
    fork_table(figs);
    Ok(())
}

/// `fork.table`: the child allocates a table for each of the parent's
/// tables it copies into, and frees it at exit: `pt.alloc + pt.free`
/// (derived; the sizes above share tables, so the fit cannot split them).
fn fork_table(figs: &mut Figures) {
    let cost = match (figs.get("pt.alloc"), figs.get("pt.free")) {
        (Some(a), Some(f)) => Some(derived_from(
            &[(a, 1.0), (f, 1.0)],
            "pt.alloc + pt.free (not measured: the child allocates a table for each one it copies into and frees it at exit)",
        )),
        _ => None,
    };
    figs.put("fork.table", cost);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workloads_pass_the_format_checks_at_every_scale() {
        crate::calibrate::runner::assert_parses_at_every_scale("fork.toml", |scale| {
            workload(scale.reps(), &sizes(scale))
        });
    }
}
