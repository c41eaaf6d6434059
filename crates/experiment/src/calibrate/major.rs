//! The major fault: a part per call and a part per page its read-ahead
//! reads in, on the kernel backend.
//!
//! ## What Linux does
//! A fault on a file page that is not cached goes to `filemap_fault`
//! (mm/filemap.c), whose `do_sync_mmap_readahead` reads a window around
//! the page (`page_cache_ra_order`, mm/readahead.c): `read_ahead_kb` of the
//! device, starting half a window before the page, clipped to the file
//! (with `MADV_HUGEPAGE`: two PMD-sized folios). The faulting thread
//! allocates each folio, inserts it in the page cache, submits the reads
//! and waits for its own page; the retry maps the window's first pages
//! with fault-around. So the cost is a part per call and a part per page
//! read, and the model prices it so: `fault.major + fault.major_page x`
//! the pages its read-ahead read (`mm::ThreadCounters::pages_read`).
//!
//! ## The probe
//! Files of a few sizes, each no larger than the device's read-ahead
//! window, so one fault at page 0 reads the whole file (the window starts
//! at page 0 and is clipped at the end of the file): the pages read are
//! the file's, known without a counter. Per repetition and size: map the
//! file `file = "cold"` (the kernel backend's fdatasync then
//! `POSIX_FADV_DONTNEED` at mmap time: the state the validation workloads'
//! cold files are in), time the read of its first page between two marks
//! (elapsed time: the wait for the read is part of the fault), then sleep
//! 20 ms so the window's reads finish before the file is unmapped and made
//! cold again (as the validation workloads sleep after a major fault).
//!
//! Per repetition, the times at every size are fitted by a line,
//! `ns = a + b * pages`, by the Theil-Sen estimator (`estimate::theil_sen`:
//! the device's latency varies from read to read by milliseconds, so one
//! slow read would tilt a least-squares line): `a` is `fault.major`, `b`
//! `fault.major_page`; each figure is summarized over the repetitions
//! (mean, bootstrap interval; see `estimate`). A repetition in which a
//! timed read was not exactly one major fault is left out. A file of four
//! MiB advised hugepage (two 2 MiB folios) is timed alongside and said in
//! the method against the line, not fitted: its folios are allocated two at
//! a time instead of one per page.

use super::estimate::{measured, theil_sen};
use super::runner::{self, Phases};
use super::{CalibrateError, Figures, Scale};

const PAGE: u64 = 4096;

/// File sizes in pages (capped at the device's window, see [`window`]).
fn sizes(scale: Scale) -> Vec<u64> {
    match scale {
        Scale::Test => vec![4, 16, 64],
        Scale::Quick => vec![16, 64, 256, 1024],
        Scale::Long => vec![16, 64, 256, 512, 1024, 2048],
    }
}

/// Pages of the hugepage-advised file (two PMD folios of 2 MiB).
const HUGE_PAGES: u64 = 1024;

/// The device's read-ahead window in pages, where the kernel backend keeps
/// its files; `None` if it cannot be read.
fn window() -> Option<u64> {
    #[cfg(target_os = "linux")]
    {
        let b = host::FileBacking::of(&backend::kernel::default_file_dir());
        b.read_ahead_kb.map(|kb| kb * 1024 / PAGE)
    }
    #[cfg(not(target_os = "linux"))]
    None
}

/// The sizes a fault at page 0 reads whole: no larger than the window.
fn usable(sizes: &[u64], window: Option<u64>) -> Vec<u64> {
    sizes
        .iter()
        .copied()
        .filter(|&s| window.is_none_or(|w| s <= w))
        .collect()
}

fn timed(name: &str, mark: &str, size: u64, hugepage: bool) -> String {
    let advise = if hugepage {
        format!("    {{ madvise = \"{name}\", advice = \"hugepage\" }},\n")
    } else {
        String::new()
    };
    format!(
        "    {{ mmap = \"{name}\", size = {}, kind = \"file\", file = \"cold\" }},\n{advise}    {{ mark = \"{mark}a\" }},\n    {{ touch = \"{name}\", access = \"read\", len = {PAGE} }},\n    {{ mark = \"{mark}b\" }},\n    {{ sleep = \"20ms\" }},\n    {{ munmap = \"{name}\" }},\n",
        size * PAGE
    )
}

/// The workload: per repetition, the cold first read of each size's file,
/// then of the hugepage-advised file.
fn workload(reps: usize, sizes: &[u64], huge: bool) -> String {
    let mut ops = String::from("    { mark = \"empty0\" },\n    { mark = \"empty\" },\n");
    for (g, &s) in sizes.iter().enumerate() {
        ops.push_str(&timed(&format!("c{g}"), &format!("m{g}"), s, false));
    }
    if huge {
        ops.push_str(&timed("h", "h", HUGE_PAGES, true));
    }
    format!(
        "name = \"calibrate-major\"\ndescription = \"ptlab calibrate: major faults per call and per page read\"\n\n[[thread]]\nop = [\n  {{ repeat = {reps}, op = [\n{ops}  ] }},\n]\n"
    )
}

/// Per repetition, the line `ns = a + b * pages` through the sizes' times;
/// a repetition with a timed read that was not one major fault, or with
/// fewer than two sizes, gives none.
fn lines(p: &Phases, sizes: &[u64]) -> Vec<(f64, f64)> {
    let by_size: Vec<(Vec<f64>, Vec<f64>)> = (0..sizes.len())
        .map(|g| {
            let (a, b) = (format!("m{g}a"), format!("m{g}b"));
            (p.time(&a, &b), p.count(&a, &b, "major_faults"))
        })
        .collect();
    let reps = by_size.iter().map(|(t, _)| t.len()).min().unwrap_or(0);
    (0..reps)
        .filter_map(|r| {
            let points: Vec<(f64, f64)> = sizes
                .iter()
                .zip(&by_size)
                .filter(|(_, (_, m))| m[r] == 1.0)
                .map(|(&s, (t, _))| (s as f64, t[r]))
                .collect();
            if points.len() < sizes.len() {
                return None;
            }
            theil_sen(&points).map(|l| (l.intercept, l.slope))
        })
        .collect()
}

pub fn probe(scale: Scale, figs: &mut Figures) -> Result<(), CalibrateError> {
    let win = window();
    let sizes = usable(&sizes(scale), win);
    let huge = scale != Scale::Test && win.is_none_or(|w| w >= HUGE_PAGES);
    let p = runner::run(
        "major faults",
        &workload(2 * scale.reps(), &sizes, huge),
        scale.kernel_timeout(),
    )?;
    let fits = lines(&p, &sizes);
    let calls: Vec<f64> = fits.iter().map(|f| f.0).collect();
    let pages: Vec<f64> = fits.iter().map(|f| f.1).collect();
    let list = sizes
        .iter()
        .map(|s| format!("{} KiB", s * PAGE / 1024))
        .collect::<Vec<_>>()
        .join(", ");
    let win_text = win.map_or("unknown (not read)".to_string(), |w| {
        format!("{} KiB", w * PAGE / 1024)
    });
    // The hugepage-advised file beside the line's figure for its pages.
    let beside = if huge && !calls.is_empty() {
        let t: Vec<f64> = p
            .time("ha", "hb")
            .into_iter()
            .zip(p.count("ha", "hb", "major_faults"))
            .filter(|(_, m)| *m == 1.0)
            .map(|(t, _)| t)
            .collect();
        let line = runner::mean(&calls) + runner::mean(&pages) * HUGE_PAGES as f64;
        match runner::median(t) {
            Some(m) => format!(
                "; beside it, not fitted: a 4 MiB file advised hugepage (two 2 MiB folios) took {m:.0} ns per fault (median), the line gives {line:.0} ns"
            ),
            None => "; the 4 MiB hugepage-advised file gave no one-major-fault sample".into(),
        }
    } else {
        String::new()
    };
    let method = |what: &str| {
        format!(
            "kernel backend: {what}; files of {list} (each read whole by one fault at page 0: the device's read-ahead window is {win_text}), mapped file = \"cold\" (fdatasync + POSIX_FADV_DONTNEED at mmap, as the validation workloads' cold files), the first page read between two marks (elapsed time), then a 20 ms sleep before munmap; per repetition, the line ns = a + b x pages through the sizes by Theil-Sen (median of the pairwise slopes, median intercept) ({} repetitions with one major fault per read){beside}",
            fits.len()
        )
    };
    figs.put(
        "fault.major",
        measured(&calls, &method("the part per call, a (the fault, the retry's fault-around, the wait for the device)")),
    );
    figs.put(
        "fault.major_page",
        measured(
            &pages,
            &method(
                "the part per page read, b (a folio allocated, inserted in the page cache, read)",
            ),
        ),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use workload::result::{Counters, Mark, Run};

    fn mark(name: &str, elapsed: i64, major: i64) -> Mark {
        let mut c = Counters::default();
        c.set("elapsed_ns", elapsed);
        c.set("major_faults", major);
        Mark {
            name: name.into(),
            counters: c,
            latency: None,
        }
    }

    /// A run of two repetitions over sizes 16 and 64 pages, each read
    /// taking `call + page x pages` ns, its marks doubled as the runner's.
    fn run(call: i64, page: i64, majors: [[i64; 2]; 2]) -> Run {
        let mut marks = Vec::new();
        let mut t = 0;
        let mut faults = 0;
        for rep in majors {
            for (g, (s, m)) in [16i64, 64].iter().zip(rep).enumerate() {
                for name in [format!("m{g}a"), format!("m{g}a_again")] {
                    marks.push(mark(&name, t, faults));
                }
                t += call + page * s;
                faults += m;
                for name in [format!("m{g}b"), format!("m{g}b_again")] {
                    marks.push(mark(&name, t, faults));
                }
                t += 20_000_000;
            }
        }
        Run { marks }
    }

    #[test]
    fn the_fit_recovers_the_call_and_the_page_parts() {
        let p = Phases::new(run(30_000, 1_800, [[1, 1], [1, 1]]));
        assert_eq!(lines(&p, &[16, 64]), vec![(30_000.0, 1_800.0); 2]);
    }

    #[test]
    fn a_repetition_without_exactly_one_major_fault_per_read_is_left_out() {
        let p = Phases::new(run(30_000, 1_800, [[1, 0], [1, 1]]));
        assert_eq!(lines(&p, &[16, 64]).len(), 1);
        let p = Phases::new(run(30_000, 1_800, [[2, 1], [1, 1]]));
        assert_eq!(lines(&p, &[16, 64]).len(), 1);
    }

    #[test]
    fn only_files_one_window_reads_whole_are_used() {
        assert_eq!(usable(&[16, 64, 1024], Some(32)), vec![16]);
        assert_eq!(usable(&[16, 64], None), vec![16, 64]);
    }

    #[test]
    fn the_workloads_pass_the_format_checks_at_every_scale() {
        crate::calibrate::runner::assert_parses_at_every_scale("major.toml", |scale| {
            workload(scale.reps(), &sizes(scale), scale != Scale::Test)
        });
    }
}
