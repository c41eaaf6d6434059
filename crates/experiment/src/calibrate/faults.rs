//! Minor faults by kind and the pages a system call populates, on the
//! kernel backend (the major fault has its own probe, `major`).
//!
//! ## Warm memory, workload-sized regions
//! Under a hypervisor a guest page the guest has not used lately may not
//! be backed by the host (never touched, or handed back by free page
//! reporting): its first use takes a host fault (an EPT violation) inside
//! the guest's fault. The workloads fault in regions of a few MiB that
//! they map and unmap again and again, so their pages come back from the
//! kernel's per-CPU and buddy free lists, host-backed and often still in
//! the cache. The probe therefore first touches and frees a large buffer
//! (`Sizes::warm`), then faults regions the workloads' size
//! (`Sizes::region`, 4 MiB). It also times the anonymous write fault over
//! a large region (`Sizes::large`, 64 MiB with `--long`) and says that
//! figure in `fault.anon_write`'s method: a large first-touched region's
//! faults cost more (pages not in the cache, some not host-backed).
//!
//! One workload repeats, per repetition: fault every 4 KiB page of a
//! region of each kind, in 16 slices (4 at the test scale), each slice
//! touched twice between marks: first faulting, then again with the pages
//! mapped. Per slice:
//!
//! `(time of the faulting touch - time of the second touch) / faults`
//!
//! so the loop's own accesses are not charged to the fault; a repetition's
//! figure is the median over its slices, so a slice in which another
//! process preempted this one (a busy host) does not move it. The faults are
//! counted by the kernel (getrusage), not assumed from the page count,
//! which matters for the file read (fault-around maps 16 pages per fault)
//! and for THP (one fault per 2 MiB). `fault.mthp_64k` is derived, not
//! measured (see `mthp_64k`).

use super::estimate::{derived_from, measured};
use super::runner::{self, minus, per, Phases};
use super::{CalibrateError, Figures, Scale};

struct Sizes {
    /// Bytes faulted per kind and repetition (the workloads' size).
    region: u64,
    /// Bytes of the large anonymous region (the figure said beside).
    large: u64,
    /// Bytes touched and freed once before the repetitions.
    warm: u64,
    /// Bytes of the cached file mapped privately (read, then written).
    file: u64,
    /// Bytes of the THP region (2 MiB faults).
    huge: u64,
}

fn sizes(scale: Scale) -> Sizes {
    match scale {
        Scale::Test => Sizes {
            file: 4 << 20,
            region: 1 << 20,
            large: 4 << 20,
            warm: 8 << 20,
            huge: 8 << 20,
        },
        Scale::Quick => Sizes {
            file: 16 << 20,
            region: 4 << 20,
            large: 16 << 20,
            warm: 128 << 20,
            huge: 32 << 20,
        },
        Scale::Long => Sizes {
            file: 16 << 20,
            region: 4 << 20,
            large: 64 << 20,
            warm: 256 << 20,
            huge: 128 << 20,
        },
    }
}

/// Slices per region: the faults of a kind are timed slice by slice, and
/// a repetition's figure is the median over its slices, so a slice in
/// which another process preempted this one does not move it. (Each slice
/// costs two marks, each reading the process's counters.)
fn slices(scale: Scale) -> u64 {
    match scale {
        Scale::Test => 4,
        _ => 16,
    }
}

/// The round of DONTNEED and rewriting the same region whose faults are
/// `fault.anon_recycled` (round 0 is the first after the fresh faults).
const RECYCLE_ROUND: usize = 3;

/// Slices of the file read: fault-around maps 16 pages per fault, so a
/// slice of the file region holds few faults; two slices keep enough in
/// each that the slice's start (after a mark's counter read) does not
/// weigh.
const FILE_SLICES: u64 = 2;

/// One kind's passes: after the mark `{prefix}0`, for each slice, the
/// faulting touch and then the same touch again, each ending in a mark
/// (`{prefix}f{i}`, `{prefix}s{i}`).
fn passes(
    ops: &mut String,
    prefix: &str,
    region: &str,
    access: &str,
    stride: &str,
    slices: u64,
    slice: u64,
) {
    for i in 0..slices {
        let touch = format!(
            "{{ touch = \"{region}\", access = \"{access}\", stride = \"{stride}\", offset = {}, len = {slice} }}",
            i * slice
        );
        ops.push_str(&format!(
            "    {touch},\n    {{ mark = \"{prefix}f{i}\" }},\n    {touch},\n    {{ mark = \"{prefix}s{i}\" }},\n"
        ));
    }
}

/// The workload: a warm-up, then `reps` repetitions of every kind's
/// sliced passes.
fn workload(reps: usize, s: &Sizes, n: u64) -> String {
    let (r, h) = (s.region, s.huge);
    let slice = r / n;
    let huge_slice = h / n;
    let mut ops = String::new();
    line(&mut ops, "{ mark = \"empty0\" }");
    line(&mut ops, "{ mark = \"empty\" }");
    anon_passes(&mut ops, s, n);
    populate_calls(&mut ops, r);
    zero_passes(&mut ops, r, n);
    file_passes(&mut ops, s, n);
    line(
        &mut ops,
        &format!("{{ mmap = \"s\", size = {r}, kind = \"shmem\" }}"),
    );
    line(&mut ops, "{ mark = \"s0\" }");
    passes(&mut ops, "s", "s", "write", "4KiB", n, slice);
    line(&mut ops, "{ munmap = \"s\" }");
    line(&mut ops, &format!("{{ mmap = \"h\", size = {h} }}"));
    line(&mut ops, "{ madvise = \"h\", advice = \"hugepage\" }");
    line(&mut ops, "{ mark = \"h0\" }");
    passes(&mut ops, "h", "h", "write", "2MiB", n, huge_slice);
    line(&mut ops, "{ munmap = \"h\" }");
    let w = s.warm;
    format!(
        "name = \"calibrate-faults\"\ndescription = \"ptlab calibrate: fault costs by kind\"\n\n[[thread]]\nop = [\n  {{ mmap = \"warm\", size = {w} }},\n  {{ touch = \"warm\", access = \"write\" }},\n  {{ munmap = \"warm\" }},\n  {{ repeat = {reps}, op = [\n{ops}  ] }},\n]\n"
    )
}

/// One op of the workload's list.
fn line(ops: &mut String, l: &str) {
    ops.push_str("    ");
    ops.push_str(l);
    ops.push_str(",\n");
}

/// Anonymous write faults: over the large region, a fresh one, and the same
/// pages recycled by MADV_DONTNEED.
fn anon_passes(ops: &mut String, s: &Sizes, n: u64) {
    let (r, big) = (s.region, s.large);
    let slice = r / n;
    line(ops, &format!("{{ mmap = \"A\", size = {big} }}"));
    line(ops, "{ mark = \"A0\" }");
    passes(ops, "A", "A", "write", "4KiB", n, big / n);
    line(ops, "{ munmap = \"A\" }");
    line(ops, &format!("{{ mmap = \"a\", size = {r} }}"));
    line(ops, "{ mark = \"a0\" }");
    passes(ops, "a", "a", "write", "4KiB", n, slice);
    // The same pages given back (MADV_DONTNEED frees them to this CPU's
    // free list) and written again: faults on recycled pages. The first
    // round (`R`) costs more than the rounds after it, which settle
    // within two; the figure is a settled round's (`r`), the state of a
    // loop that recycles its pages (the first round's is said beside).
    line(ops, "{ madvise = \"a\", advice = \"dontneed\" }");
    line(ops, "{ mark = \"R0\" }");
    passes(ops, "R", "a", "write", "4KiB", n, slice);
    for _ in 1..RECYCLE_ROUND {
        line(ops, "{ madvise = \"a\", advice = \"dontneed\" }");
        line(ops, "{ touch = \"a\", access = \"write\" }");
    }
    line(ops, "{ madvise = \"a\", advice = \"dontneed\" }");
    line(ops, "{ mark = \"r0\" }");
    passes(ops, "r", "a", "write", "4KiB", n, slice);
    line(ops, "{ munmap = \"a\" }");
}

/// The populating calls: MADV_POPULATE_WRITE, mlock, MADV_POPULATE_READ
/// and MADV_POPULATE_WRITE over zero pages, each of a fresh region.
fn populate_calls(ops: &mut String, r: u64) {
    // MADV_POPULATE_WRITE of a fresh region of the same size: its pages
    // faulted in by the kernel, no exception per page.
    line(ops, &format!("{{ mmap = \"p\", size = {r} }}"));
    line(ops, "{ mark = \"p0\" }");
    line(ops, "{ madvise = \"p\", advice = \"populate_write\" }");
    line(ops, "{ mark = \"p1\" }");
    line(ops, "{ munmap = \"p\" }");
    line(ops, "{ mark = \"p2\" }");
    // The same, but populated by mlock and unmapped locked: each new folio
    // is mlocked as it is mapped (mlock_new_folio) and munlocked as munmap
    // zaps it (munlock_folio); less the unlocked populate and munmap.
    line(ops, &format!("{{ mmap = \"l\", size = {r} }}"));
    line(ops, "{ mark = \"l0\" }");
    line(ops, "{ mlock = \"l\" }");
    line(ops, "{ mark = \"l1\" }");
    line(ops, "{ munmap = \"l\" }");
    line(ops, "{ mark = \"l2\" }");
    // MADV_POPULATE_READ of a fresh region: the zero page mapped at every
    // page by the kernel's own faults, no exception.
    line(ops, &format!("{{ mmap = \"q\", size = {r} }}"));
    line(ops, "{ mark = \"q0\" }");
    line(ops, "{ madvise = \"q\", advice = \"populate_read\" }");
    line(ops, "{ mark = \"q1\" }");
    line(ops, "{ munmap = \"q\" }");
    // MADV_POPULATE_WRITE over zero pages (mapped by MADV_POPULATE_READ
    // first): each replaced by a zeroed page from the kernel's own fault
    // call (do_wp_page -> wp_page_copy of the zero pfn, ptep_clear_flush
    // of the old entry), as mprotect of a locked read-only range to
    // read-write populates.
    line(ops, &format!("{{ mmap = \"u\", size = {r} }}"));
    line(ops, "{ madvise = \"u\", advice = \"populate_read\" }");
    line(ops, "{ mark = \"u0\" }");
    line(ops, "{ madvise = \"u\", advice = \"populate_write\" }");
    line(ops, "{ mark = \"u1\" }");
    line(ops, "{ munmap = \"u\" }");
}

/// Reads mapping the zero page, then writes replacing it.
fn zero_passes(ops: &mut String, r: u64, n: u64) {
    let slice = r / n;
    line(ops, &format!("{{ mmap = \"z\", size = {r} }}"));
    line(ops, "{ mark = \"z0\" }");
    passes(ops, "z", "z", "read", "4KiB", n, slice);
    // Writes to the same pages, each mapping the zero page: a zeroed page
    // replaces it (wp_page_copy).
    line(ops, "{ mark = \"y0\" }");
    passes(ops, "y", "z", "write", "4KiB", n, slice);
    line(ops, "{ munmap = \"z\" }");
}

/// A cached file mapped privately: read faults (after an unmeasured pass)
/// and copy-on-write faults.
fn file_passes(ops: &mut String, s: &Sizes, n: u64) {
    let map_file = format!(
        "{{ mmap = \"f\", size = {}, kind = \"file\", file = \"cached\" }}",
        s.file
    );
    // One pass mapping and reading the file, unmeasured, then unmapped:
    // the faults timed next find the file's folios (their struct pages,
    // the page cache's tree) in the CPU caches, as a workload that maps
    // a file again and again does; after the other kinds' passes (tens of
    // MiB streamed through the caches) they are not, and the first pass
    // costs several times more per fault (its figure is said beside).
    line(ops, &map_file);
    line(ops, "{ mark = \"g0\" }");
    line(
        ops,
        "{ touch = \"f\", access = \"read\", stride = \"4KiB\" }",
    );
    line(ops, "{ mark = \"g1\" }");
    line(
        ops,
        "{ touch = \"f\", access = \"read\", stride = \"4KiB\" }",
    );
    line(ops, "{ mark = \"g2\" }");
    line(ops, "{ munmap = \"f\" }");
    line(ops, &map_file);
    line(ops, "{ mark = \"f0\" }");
    passes(
        ops,
        "f",
        "f",
        "read",
        "4KiB",
        FILE_SLICES,
        s.file / FILE_SLICES,
    );
    line(ops, "{ mark = \"w0\" }");
    passes(ops, "w", "f", "write", "4KiB", n, s.file / n);
    line(ops, "{ munmap = \"f\" }");
}

/// Per repetition, the median over the slices of `prefix`'s passes of
/// (faulting touch - second touch) / minor faults.
fn per_fault(p: &Phases, prefix: &str, slices: u64) -> Vec<f64> {
    let mut by_slice = Vec::new();
    for i in 0..slices {
        let from = if i == 0 {
            format!("{prefix}0")
        } else {
            format!("{prefix}s{}", i - 1)
        };
        let f = format!("{prefix}f{i}");
        let s = format!("{prefix}s{i}");
        let faults = p.count(&from, &f, "minor_faults");
        let net = minus(&p.cpu_time(&from, &f), &p.cpu_time(&f, &s));
        by_slice.push((net, faults));
    }
    let reps = by_slice.first().map_or(0, |(n, _)| n.len());
    (0..reps)
        .filter_map(|r| {
            let v: Vec<f64> = by_slice
                .iter()
                .filter(|(_, f)| f.get(r).is_some_and(|&f| f > 0.0))
                .map(|(n, f)| n[r] / f[r])
                .collect();
            runner::median(v)
        })
        .collect()
}

pub fn probe(scale: Scale, figs: &mut Figures) -> Result<(), CalibrateError> {
    let s = sizes(scale);
    let p = runner::run(
        "faults",
        &workload(scale.reps(), &s, slices(scale)),
        scale.kernel_timeout(),
    )?;
    let pages = s.region >> 12;
    let n = slices(scale);
    let warm = format!(
        "after {} MiB touched and freed (warm, host-backed memory)",
        s.warm >> 20
    );
    let pass = |what: &str| {
        format!(
            "kernel backend: {what}, {pages} pages per run in {n} slices, {warm}; per slice (faulting touch - the same touch again) / minor faults, in process CPU time, median over the slices"
        )
    };
    anon_figures(&p, &s, n, &pass, figs);
    populate_figures(&p, &s, &warm, figs);
    figs.put(
        "fault.zero_read",
        measured(
            &per_fault(&p, "z", n),
            &pass("read of every page of fresh anonymous memory (zero page)"),
        ),
    );
    figs.put(
        "fault.zero_cow",
        measured(
            &per_fault(&p, "y", n),
            &pass("write to every page of that mapping, each mapping the zero page after the reads (a zeroed page replaces it)"),
        ),
    );
    // The zero pages populated: the call's time over the faults it made
    // (Linux counts a populating fault in min_flt like a touch's).
    let zero = runner::mean(&p.count("q0", "q1", "minor_faults"));
    figs.put(
        "populate.zero_page",
        measured(
            &per(&p.cpu_time("q0", "q1"), &p.count("q0", "q1", "minor_faults")),
            &format!(
                "kernel backend: madvise(MADV_POPULATE_READ) of a fresh {} KiB anonymous mapping ({zero:.0} zero pages mapped per run, minor faults), {warm}; the call's process CPU time / its minor faults",
                s.region >> 10
            ),
        ),
    );
    populate_locked_figures(&p, &s, &warm, figs);
    file_figures(&p, &s, n, &warm, figs);
    figs.put(
        "fault.shmem",
        measured(
            &per_fault(&p, "s", n),
            &pass("write to every page of a fresh memfd mapping"),
        ),
    );
    let last = format!("hs{}", n - 1);
    let huge_kb = runner::mean(&p.count("h0", &last, "anon_huge_kb"));
    figs.put(
        "fault.thp",
        measured(
            &per_fault(&p, "h", n),
            &format!(
                "kernel backend: write to each 2 MiB of a {} MiB region advised hugepage ({:.0} MiB of AnonHugePages per run) in {n} slices; per slice (faulting touch - the same touch again) / minor faults, in process CPU time, median over the slices",
                s.huge >> 20,
                huge_kb / 1024.0
            ),
        ),
    );
    mthp_64k(figs);
    Ok(())
}

/// `fault.anon_write` (the large region's figure said beside) and
/// `fault.anon_recycled` (the first round's said beside).
fn anon_figures(p: &Phases, s: &Sizes, n: u64, pass: &dyn Fn(&str) -> String, figs: &mut Figures) {
    let large = measured(&per_fault(p, "A", n), "large region");
    let large = large.map_or("no usable sample".to_string(), |c| {
        format!("{:.0} ns [{:.0}, {:.0}]", c.ns, c.lo, c.hi)
    });
    figs.put(
        "fault.anon_write",
        measured(
            &per_fault(p, "a", n),
            &pass(&format!(
                "write to every page of a fresh anonymous mapping (the model's figure; over a {} MiB mapping instead, pages new to the cache: {large})",
                s.large >> 20
            )),
        ),
    );
    let first = measured(&per_fault(p, "R", n), "first round");
    let first = first.map_or("no usable sample".to_string(), |c| {
        format!("{:.0} ns [{:.0}, {:.0}]", c.ns, c.lo, c.hi)
    });
    figs.put(
        "fault.anon_recycled",
        measured(
            &per_fault(p, "r", n),
            &pass(&format!("write to every page of that mapping again after MADV_DONTNEED of it all (each page taken back from the pages this CPU just freed), in round {RECYCLE_ROUND} of DONTNEED and rewriting the whole mapping, as in a loop that recycles its pages (the first round after the fresh faults instead: {first})")),
        ),
    );
}

/// `populate.page`: MADV_POPULATE_WRITE's time over the pages it mapped.
fn populate_figures(p: &Phases, s: &Sizes, warm: &str, figs: &mut Figures) {
    // The populated pages: the call's time over the anonymous pages it
    // mapped (its fixed part, about syscall.call, is under 0.1% of it).
    let populated = runner::mean(&p.count("p0", "p1", "rss_anon_kb")) / 4.0;
    figs.put(
        "populate.page",
        measured(
            &per(&p.cpu_time("p0", "p1"), &per_kb_pages(&p.count("p0", "p1", "rss_anon_kb"))),
            &format!(
                "kernel backend: madvise(MADV_POPULATE_WRITE) of a fresh {} KiB anonymous mapping ({populated:.0} pages mapped per run), {warm}; the call's process CPU time / the pages it mapped (from RssAnon)",
                s.region >> 10
            ),
        ),
    );
}

/// `mlock.folio` and `populate.zero_cow`.
fn populate_locked_figures(p: &Phases, s: &Sizes, warm: &str, figs: &mut Figures) {
    // The locked folios: (mlock and munmap of a locked region - the
    // unlocked populate and munmap of one) over the pages mapped.
    let locked_pages = per_kb_pages(&p.count("l0", "l1", "rss_anon_kb"));
    figs.put(
        "mlock.folio",
        measured(
            &per(
                &minus(&p.cpu_time("l0", "l2"), &p.cpu_time("p0", "p2")),
                &locked_pages,
            ),
            &format!(
                "kernel backend: mlock of a fresh {} KiB anonymous mapping, then munmap of it, less MADV_POPULATE_WRITE of one and its munmap ({:.0} pages each), {warm}; the difference in process CPU time / the pages mapped (each an order-0 folio mlocked as it is mapped, munlocked as it is zapped)",
                s.region >> 10,
                runner::mean(&locked_pages)
            ),
        ),
    );
    // The zero pages replaced: the call's time over the anonymous pages
    // it mapped (each replaced a zero page; the zero page is not in RSS).
    let replaced = runner::mean(&p.count("u0", "u1", "rss_anon_kb")) / 4.0;
    figs.put(
        "populate.zero_cow",
        measured(
            &per(&p.cpu_time("u0", "u1"), &per_kb_pages(&p.count("u0", "u1", "rss_anon_kb"))),
            &format!(
                "kernel backend: madvise(MADV_POPULATE_WRITE) of a {} KiB anonymous mapping whose every page maps the zero page (MADV_POPULATE_READ before; {replaced:.0} pages replaced per run), {warm}; the call's process CPU time / the pages it mapped (from RssAnon)",
                s.region >> 10
            ),
        ),
    );
}

/// `fault.file_read` (the unmeasured first pass said beside) and
/// `fault.cow`.
fn file_figures(p: &Phases, s: &Sizes, n: u64, warm: &str, figs: &mut Figures) {
    // The unmeasured first pass, in the state the other passes leave.
    let first: Vec<f64> = minus(&p.cpu_time("g0", "g1"), &p.cpu_time("g1", "g2"))
        .iter()
        .zip(&p.count("g0", "g1", "minor_faults"))
        .filter(|(_, f)| **f > 0.0)
        .map(|(t, f)| t / f)
        .collect();
    let first = measured(&first, "first pass").map_or("no usable sample".to_string(), |c| {
        format!("{:.0} ns [{:.0}, {:.0}]", c.ns, c.lo, c.hi)
    });
    figs.put(
        "fault.file_read",
        measured(
            &per_fault(p, "f", FILE_SLICES),
            &format!("kernel backend: read of every page of a private mapping of a cached {} MiB file (fault-around: one fault maps up to 16 pages), in {FILE_SLICES} slices, {warm}, right after one unmeasured pass reading a mapping of the same file (the file's folios in the CPU caches, as in a workload that maps it again and again; that first pass, after the other kinds' passes: {first}); per slice (faulting touch - the same touch again) / minor faults, in process CPU time, median over the slices", s.file >> 20),
        ),
    );
    figs.put(
        "fault.cow",
        measured(
            &per_fault(p, "w", n),
            &format!("kernel backend: write to every page of that file mapping, already read (each page copied), in {n} slices; per slice (faulting touch - the same touch again) / minor faults, in process CPU time, median over the slices"),
        ),
    );
}

/// Pages of 4 KiB in each of `kb`.
fn per_kb_pages(kb: &[f64]) -> Vec<f64> {
    kb.iter().map(|k| k / 4.0).collect()
}

/// `fault.mthp_64k`: a 64 KiB folio's fault is a 4 KiB fault that clears
/// 60 KiB more (one fault, one allocation, sixteen entries set). Measuring
/// it needs 64 KiB mTHP enabled, a host-wide setting calibrate does not
/// change (it is `never` by default), so the figure is derived from
/// `fault.anon_write` and `clear.kib`.
fn mthp_64k(figs: &mut Figures) {
    let cost = match (figs.get("fault.anon_write"), figs.get("clear.kib")) {
        (Some(fault), Some(clear)) => Some(derived_from(
            &[(fault, 1.0), (clear, 60.0)],
            "fault.anon_write + 60 x clear.kib (not measured: calibrate does not change the host's mTHP settings; the fault clears 60 KiB more than a 4 KiB one)",
        )),
        _ => None,
    };
    figs.put("fault.mthp_64k", cost);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_preempted_slice_does_not_move_the_figure() {
        use workload::result::{Counters, Mark, Run};
        // (mark, elapsed ns, minor faults): three slices of 10 faults, each
        // faulting touch 1,000 ns and its second touch 100 ns, except the
        // second slice's faulting touch, preempted for 50 us.
        let marks = [
            ("a0", 0, 0),
            ("af0", 1_000, 10),
            ("as0", 1_100, 10),
            ("af1", 51_100, 20),
            ("as1", 51_200, 20),
            ("af2", 52_200, 30),
            ("as2", 52_300, 30),
        ];
        let run = Run {
            marks: marks
                .iter()
                .map(|&(name, t, faults)| {
                    let mut c = Counters::default();
                    c.set("elapsed_ns", t);
                    c.set("cpu_ns", t);
                    c.set("minor_faults", faults);
                    Mark {
                        name: name.into(),
                        counters: c,
                        latency: None,
                    }
                })
                .collect(),
        };
        assert_eq!(per_fault(&Phases::new(run), "a", 3), vec![90.0]);
    }

    #[test]
    fn the_workloads_pass_the_format_checks_at_every_scale() {
        crate::calibrate::runner::assert_parses_at_every_scale("faults.toml", |scale| {
            workload(scale.reps(), &sizes(scale), slices(scale))
        });
    }
}
