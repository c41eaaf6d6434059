//! The major fault that reads PMD-sized folios: the part per page read,
//! on the kernel backend.
//!
//! ## What Linux does
//! In a mapping advised `MADV_HUGEPAGE` of a file system with large folios,
//! `do_sync_mmap_readahead` (mm/filemap.c) reads two PMD-sized folios
//! (`ra->size = 2 x HPAGE_PMD_NR`, `page_cache_ra_order` at
//! `HPAGE_PMD_ORDER`, clipped to the file) instead of a window of small
//! folios. Two things differ from the base-page read `fault.major_page`
//! prices: the thread allocates one folio per 2 MiB, not one per page
//! (traced here: 65-90 us on CPU before it sleeps, against 550-650 us for
//! the same 4 MiB in base pages), and it waits for its whole folio's read,
//! because `filemap_fault` takes the folio lock (`lock_folio_maybe_drop_mmap`)
//! that the read releases only at the folio's last block (`folio_end_read`);
//! in base pages it waits only for the request holding its own page. So a
//! page read in a PMD folio is priced `fault.major_pmd_page`, in place of
//! `fault.major_page` (`mm::ThreadCounters::pmd_pages_read`), and the
//! fault itself `fault.major_pmd` in place of `fault.major`
//! (`mm::ThreadCounters::pmd_major_faults`): the wait that `fault.major`'s
//! intercept holds (the first request of a base-page window) is here in
//! the folios' part.
//!
//! ## The probe
//! Per repetition, two cold files advised hugepage, each read at page 0 by
//! one fault: 2 MiB (one PMD folio: the window clipped to the file) and
//! 8 MiB (two PMD folios read, the second marked for the next read-ahead;
//! the rest of the file is never read). Each is mapped `file = "cold"`
//! (fdatasync + `POSIX_FADV_DONTNEED` at mmap), its first page read between
//! two marks (elapsed time: the wait for the device is the fault's), then
//! 20 ms of sleep before munmap so the reads are done before the next file.
//! A repetition counts only if each read was one major fault that mapped
//! 2 MiB of the file (the first folio PMD-mapped: the kernel allocates read-
//! ahead folios without compaction and falls back to small ones when short
//! of free 2 MiB blocks). Per repetition the line through the two, per PMD
//! folio: `b = t_8M - t_2M`; `fault.major_pmd_page = b / 512` and
//! `fault.major_pmd = t_2M - b`, each summarized over the repetitions.

use super::estimate::measured;
use super::runner::{self, Phases};
use super::{CalibrateError, Figures, Scale};

const PAGE: u64 = 4096;
/// Pages of a PMD-sized folio (x86-64: 2 MiB).
const PMD_PAGES: u64 = 512;
/// The files: one PMD folio read, and two.
const FILES: [(&str, u64, u64); 2] = [("one", 512, 1), ("two", 2048, 2)];

fn workload(reps: usize) -> String {
    let mut ops = String::from("    { mark = \"empty0\" },\n    { mark = \"empty\" },\n");
    for (name, pages, _) in FILES {
        ops.push_str(&format!(
            "    {{ mmap = \"{name}\", size = {}, kind = \"file\", file = \"cold\" }},\n    {{ madvise = \"{name}\", advice = \"hugepage\" }},\n    {{ mark = \"{name}a\" }},\n    {{ touch = \"{name}\", access = \"read\", len = {PAGE} }},\n    {{ mark = \"{name}b\" }},\n    {{ sleep = \"20ms\" }},\n    {{ munmap = \"{name}\" }},\n",
            pages * PAGE
        ));
    }
    format!(
        "name = \"calibrate-major-pmd\"\ndescription = \"ptlab calibrate: major faults that read PMD-sized folios\"\n\n[[thread]]\nop = [\n  {{ repeat = {reps}, op = [\n{ops}  ] }},\n]\n"
    )
}

/// Per repetition `(intercept, per folio)` of the line through the two
/// files' times; a repetition where a read was not one major fault that
/// mapped a PMD folio is left out.
fn lines(p: &Phases) -> Vec<(f64, f64)> {
    let per_file: Vec<(Vec<f64>, Vec<bool>)> = FILES
        .iter()
        .map(|(name, _, _)| {
            let (a, b) = (format!("{name}a"), format!("{name}b"));
            let ok = p
                .count(&a, &b, "major_faults")
                .iter()
                .zip(p.count(&a, &b, "rss_file_kb"))
                .map(|(m, kb)| *m == 1.0 && kb == (PMD_PAGES * PAGE / 1024) as f64)
                .collect();
            (p.time(&a, &b), ok)
        })
        .collect();
    let reps = per_file.iter().map(|(t, _)| t.len()).min().unwrap_or(0);
    let (f1, f2) = (FILES[0].2 as f64, FILES[1].2 as f64);
    (0..reps)
        .filter(|&r| per_file.iter().all(|(_, ok)| ok[r]))
        .map(|r| {
            let (t1, t2) = (per_file[0].0[r], per_file[1].0[r]);
            let slope = (t2 - t1) / (f2 - f1);
            (t1 - slope * f1, slope)
        })
        .collect()
}

pub fn probe(scale: Scale, figs: &mut Figures) -> Result<(), CalibrateError> {
    let p = runner::run(
        "major pmd faults",
        &workload(2 * scale.reps()),
        scale.kernel_timeout(),
    )?;
    let fits = lines(&p);
    let per_page: Vec<f64> = fits.iter().map(|f| f.1 / PMD_PAGES as f64).collect();
    let calls: Vec<f64> = fits.iter().map(|f| f.0).collect();
    let method = |what: &str, how: &str| {
        format!(
        "kernel backend: {what}; cold files advised hugepage of 2 MiB (one 2 MiB folio read) and 8 MiB (two read), each mapped file = \"cold\" (fdatasync + POSIX_FADV_DONTNEED at mmap), its first page read between two marks (elapsed time: the fault waits for its whole folio's read), then a 20 ms sleep before munmap; only repetitions where each read was one major fault mapping 2 MiB by a PMD ({} of {}); per repetition {how}",
        fits.len(),
        p.count("onea", "oneb", "major_faults").len()
    )
    };
    figs.put(
        "fault.major_pmd",
        measured(
            &calls,
            &method(
                "the part per major fault that read PMD-sized folios, in place of fault.major (the exception, the folios allocated and submitted, the PMD mapped)",
                "the line's intercept t_2M - (t_8M - t_2M)",
            ),
        ),
    );
    figs.put(
        "fault.major_pmd_page",
        measured(
            &per_page,
            &method("per page read in a PMD-sized folio", "(t_8M - t_2M) / 512"),
        ),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use workload::result::{Counters, Mark, Run};

    fn mark(name: &str, elapsed: i64, major: i64, rss: i64) -> Mark {
        let mut c = Counters::default();
        c.set("elapsed_ns", elapsed);
        c.set("major_faults", major);
        c.set("rss_file_kb", rss);
        Mark {
            name: name.into(),
            counters: c,
            latency: None,
        }
    }

    /// Repetitions whose reads take `call + folio x folios` ns; `pmd[r][f]`
    /// says whether file `f`'s read mapped a PMD folio in repetition `r`.
    fn run(call: i64, folio: i64, pmd: &[[bool; 2]]) -> Run {
        let mut marks = Vec::new();
        let (mut t, mut faults, mut rss) = (0, 0, 0);
        for rep in pmd {
            for ((name, _, folios), mapped) in FILES.iter().zip(rep) {
                for m in [format!("{name}a"), format!("{name}a_again")] {
                    marks.push(mark(&m, t, faults, rss));
                }
                t += call + folio * *folios as i64;
                faults += 1;
                rss += if *mapped { 2048 } else { 64 };
                for m in [format!("{name}b"), format!("{name}b_again")] {
                    marks.push(mark(&m, t, faults, rss));
                }
                t += 20_000_000;
                rss = 0;
            }
        }
        Run { marks }
    }

    #[test]
    fn the_line_recovers_the_call_and_the_folio_parts() {
        let p = Phases::new(run(500_000, 1_300_000, &[[true, true]; 3]));
        assert_eq!(lines(&p), vec![(500_000.0, 1_300_000.0); 3]);
    }

    #[test]
    fn a_read_that_fell_back_to_small_folios_is_left_out() {
        let p = Phases::new(run(
            500_000,
            1_300_000,
            &[[true, false], [true, true], [false, true]],
        ));
        assert_eq!(lines(&p).len(), 1);
    }

    #[test]
    fn the_workload_passes_the_format_checks() {
        let text = workload(Scale::Long.reps());
        workload::parse(&runner::doubled_marks(&text), "major_pmd.toml", 48).unwrap();
    }
}
