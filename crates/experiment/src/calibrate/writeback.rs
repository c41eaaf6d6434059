//! Writes through a shared file mapping and their writeback, on the kernel
//! backend: `fault.file_mkwrite`, `msync.call` and `msync.page`.
//!
//! One shared mapping of a cached file of its own (on the file system the
//! kernel backend puts every workload's files on) is written whole and
//! msynced once, so every page is mapped, clean and write-protected. Then,
//! per repetition:
//! - `S` pages written (each a write-protect fault on a shared file page:
//!   Linux mm/memory.c, wp_page_shared -> do_page_mkwrite, then
//!   fault_dirty_shared_page), written again (no fault), msync(MS_SYNC);
//! - `L` pages the same way.
//!
//! `fault.file_mkwrite` is, for the `L` pages, (faulting touch - the same
//! touch again) / minor faults, in process CPU time. msync's price is a
//! line through the two msyncs of a repetition, in elapsed time (the
//! writeback's I/O and the file system's commit are waits, and a workload
//! waits for them too): `msync.page = (t_L - t_S) / (L - S)`,
//! `msync.call = t_S - S x msync.page`.

use super::estimate::measured;
use super::runner::{self, minus, per, Phases};
use super::{CalibrateError, Figures, Scale};

/// (mapping bytes, S pages, L pages).
fn sizes(scale: Scale) -> (u64, u64, u64) {
    match scale {
        Scale::Test => (1 << 20, 4, 64),
        Scale::Quick | Scale::Long => (8 << 20, 16, 1024),
    }
}

fn workload(reps: usize, (size, small, large): (u64, u64, u64)) -> String {
    let touch = |pages: u64| {
        format!(
            "{{ touch = \"m\", access = \"write\", stride = \"4KiB\", len = {} }}",
            pages * 4096
        )
    };
    let (s, l) = (touch(small), touch(large));
    format!(
        "name = \"calibrate-writeback\"
description = \"ptlab calibrate: writes to a shared file mapping, and msync\"

[[thread]]
op = [
  {{ mark = \"empty0\" }},
  {{ mark = \"empty\" }},
  {{ mmap = \"m\", size = {size}, kind = \"file\", shared = true, file = \"cached\" }},
  {{ touch = \"m\", access = \"write\", stride = \"4KiB\" }},
  {{ sync = \"m\" }},
  {{ repeat = {reps}, op = [
    {{ mark = \"s0\" }},
    {s},
    {{ mark = \"s1\" }},
    {s},
    {{ mark = \"s2\" }},
    {{ sync = \"m\" }},
    {{ mark = \"s3\" }},
    {l},
    {{ mark = \"l1\" }},
    {l},
    {{ mark = \"l2\" }},
    {{ sync = \"m\" }},
    {{ mark = \"l3\" }},
  ] }},
  {{ munmap = \"m\" }},
]
"
    )
}

pub fn probe(scale: Scale, figs: &mut Figures) -> Result<(), CalibrateError> {
    let sz = sizes(scale);
    let (size, small, large) = sz;
    let p: Phases = runner::run(
        "writeback",
        &workload(scale.reps(), sz),
        scale.kernel_timeout(),
    )?;
    let mkwrite = per(
        &minus(&p.cpu_time("s3", "l1"), &p.cpu_time("l1", "l2")),
        &p.count("s3", "l1", "minor_faults"),
    );
    let faults = runner::mean(&p.count("s3", "l1", "minor_faults"));
    figs.put(
        "fault.file_mkwrite",
        measured(
            &mkwrite,
            &format!(
                "kernel backend: write to {large} pages of a shared mapping of a cached {} MiB file, every page mapped and cleaned by an msync before (each write a write-protect fault: page_mkwrite, the page dirtied; {faults:.0} faults per run); (faulting touch - the same touch again) / minor faults, in process CPU time",
                size >> 20
            ),
        ),
    );
    let (t_s, t_l) = (p.time("s2", "s3"), p.time("l2", "l3"));
    let span = (large - small) as f64;
    let page: Vec<f64> = t_l.iter().zip(&t_s).map(|(l, s)| (l - s) / span).collect();
    let call: Vec<f64> = t_s
        .iter()
        .zip(&page)
        .map(|(s, pg)| s - small as f64 * pg)
        .collect();
    let how = format!(
        "kernel backend: msync(MS_SYNC) of a shared mapping of a cached {} MiB file with {small} and then {large} pages dirtied through it, in elapsed time (the writeback's I/O and the file system's commit waited for); per run the line through the two",
        size >> 20
    );
    figs.put(
        "msync.page",
        measured(
            &page,
            &format!("{how}: (t_{large} - t_{small}) / {}", large - small),
        ),
    );
    figs.put(
        "msync.call",
        measured(
            &call,
            &format!("{how}: t_{small} - {small} x the per-page figure"),
        ),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workloads_pass_the_format_checks_at_every_scale() {
        crate::calibrate::runner::assert_parses_at_every_scale("writeback.toml", |scale| {
            workload(scale.reps(), sizes(scale))
        });
    }
}
