//! `node_of.call`: get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) of a present
//! page, per call, on the kernel backend.
//!
//! Per repetition, a region of 4 KiB pages (THP refused) is written whole,
//! then its node is asked once per page (the format's `node_of`); a region
//! advised `hugepage` likewise, so that every lookup lands on a THP. The
//! phase around each `node_of` has no fault (checked: a phase with faults
//! is left out), so its process CPU time over its calls is the call alone:
//! entry and exit, do_get_mempolicy's VMA lookup under the mmap lock,
//! lookup_node's get_user_pages_fast of one page and put_page (Linux:
//! mm/mempolicy.c). The 4 KiB figure is `node_of.call`; the THP one is
//! reported in its method (the model prices both alike).
//!
//! What a lookup holds a page-table lock for in Linux 3.12's slow path
//! (`lock.hold_lookup`) cannot be seen from here (this kernel's fast path
//! takes no table lock): it stays assumed.

use super::estimate::measured;
use super::runner::{self, Phases};
use super::{CalibrateError, Figures, Scale};

/// Pages asked per phase (a 4 KiB region of this many pages; the THP
/// region the same bytes, rounded up to 2 MiB).
fn pages(scale: Scale) -> u64 {
    match scale {
        Scale::Test => 256,
        Scale::Quick => 1024,
        Scale::Long => 4096,
    }
}

fn workload(reps: usize, pages: u64) -> String {
    let bytes = pages * 4096;
    let huge = bytes.div_ceil(2 << 20).max(1) * (2 << 20);
    let one = format!(
        "  {{ mmap = \"p\", size = {bytes} }},\n  {{ madvise = \"p\", advice = \"nohugepage\" }},\n  \
         {{ touch = \"p\", access = \"write\" }},\n  {{ mark = \"p0\" }},\n  {{ node_of = \"p\" }},\n  \
         {{ mark = \"p1\" }},\n  {{ munmap = \"p\" }},\n  \
         {{ mmap = \"h\", size = {huge} }},\n  {{ madvise = \"h\", advice = \"hugepage\" }},\n  \
         {{ touch = \"h\", access = \"write\" }},\n  {{ mark = \"h0\" }},\n  {{ node_of = \"h\" }},\n  \
         {{ mark = \"h1\" }},\n  {{ munmap = \"h\" }},\n"
    );
    format!(
        "name = \"calibrate-node-of\"\ndescription = \"ptlab calibrate: get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) of present 4 KiB pages and of THP pages\"\n\n[[thread]]\nop = [\n  {{ mark = \"empty0\" }},\n  {{ mark = \"empty\" }},\n  {{ repeat = {reps}, op = [\n{one}  ] }},\n]\n"
    )
}

/// Per phase `from -> to` without faults: CPU ns per call.
fn per_call(p: &Phases, from: &str, to: &str, calls: f64) -> Vec<f64> {
    let faults = p.count(from, to, "minor_faults");
    p.cpu_time(from, to)
        .iter()
        .zip(&faults)
        .filter(|(_, f)| **f == 0.0)
        .map(|(t, _)| t / calls)
        .collect()
}

pub fn probe(scale: Scale, figs: &mut Figures) -> Result<(), CalibrateError> {
    let n = pages(scale);
    let huge_pages = (n * 4096).div_ceil(2 << 20).max(1) * 512;
    let p = runner::run(
        "node lookup",
        &workload(scale.reps(), n),
        scale.kernel_timeout(),
    )?;
    let small = per_call(&p, "p0", "p1", n as f64);
    let thp = per_call(&p, "h0", "h1", huge_pages as f64);
    let thp_text = measured(&thp, "").map_or("not measured".to_string(), |c| {
        format!("{:.0} ns [{:.0}, {:.0}]", c.ns, c.lo, c.hi)
    });
    figs.put(
        "node_of.call",
        measured(
            &small,
            &format!(
                "kernel backend: get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) of every page of a written {n}-page anonymous region (4 KiB pages, no fault in the phase), process CPU time per call (the same over a THP region, {huge_pages} calls on huge pages: {thp_text})"
            ),
        ),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workloads_pass_the_format_checks_at_every_scale() {
        crate::calibrate::runner::assert_parses_at_every_scale("node_of.toml", |scale| {
            workload(scale.reps(), pages(scale))
        });
    }
}
