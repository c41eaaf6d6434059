//! Minor faults by kind, and the major fault, on the kernel backend.
//!
//! One workload repeats, per repetition: fault every 4 KiB page of a fresh
//! region of each kind between two marks, then touch the same pages again
//! (now mapped) between two more. Per fault:
//!
//! `(time of the faulting pass - time of the second pass) / faults`
//!
//! so the loop's own accesses are not charged to the fault. The faults are
//! counted by the kernel (getrusage), not assumed from the page count,
//! which matters for the file read (fault-around maps 16 pages per fault)
//! and for THP (one fault per 2 MiB). `fault.mthp_64k` is derived, not
//! measured (see `mthp_64k`).

use super::estimate::{derived_from, measured};
use super::runner::{self, minus, per, Phases};
use super::{CalibrateError, Figures, Scale};

struct Sizes {
    /// Bytes faulted per kind and repetition.
    region: u64,
    /// Bytes of the THP region (2 MiB faults).
    huge: u64,
    /// Bytes of the cold file read by major faults.
    cold: u64,
}

fn sizes(scale: Scale) -> Sizes {
    match scale {
        Scale::Test => Sizes {
            region: 4 << 20,
            huge: 8 << 20,
            cold: 1 << 20,
        },
        Scale::Quick => Sizes {
            region: 16 << 20,
            huge: 32 << 20,
            cold: 4 << 20,
        },
        Scale::Long => Sizes {
            region: 64 << 20,
            huge: 128 << 20,
            cold: 16 << 20,
        },
    }
}

/// The workload: `reps` repetitions of every kind's two passes.
fn workload(reps: usize, s: &Sizes) -> String {
    let (r, h, c) = (s.region, s.huge, s.cold);
    format!(
        r#"name = "calibrate-faults"
description = "ptlab calibrate: fault costs by kind"

[[thread]]
op = [
  {{ repeat = {reps}, op = [
    {{ mark = "empty0" }},
    {{ mark = "empty" }},
    {{ mmap = "a", size = {r} }},
    {{ mark = "a0" }},
    {{ touch = "a", access = "write" }},
    {{ mark = "a1" }},
    {{ touch = "a", access = "write" }},
    {{ mark = "a2" }},
    {{ munmap = "a" }},
    {{ mmap = "z", size = {r} }},
    {{ mark = "z0" }},
    {{ touch = "z", access = "read" }},
    {{ mark = "z1" }},
    {{ touch = "z", access = "read" }},
    {{ mark = "z2" }},
    {{ munmap = "z" }},
    {{ mmap = "f", size = {r}, kind = "file", file = "cached" }},
    {{ mark = "f0" }},
    {{ touch = "f", access = "read" }},
    {{ mark = "f1" }},
    {{ touch = "f", access = "read" }},
    {{ mark = "f2" }},
    {{ touch = "f", access = "write" }},
    {{ mark = "f3" }},
    {{ touch = "f", access = "write" }},
    {{ mark = "f4" }},
    {{ munmap = "f" }},
    {{ mmap = "s", size = {r}, kind = "shmem" }},
    {{ mark = "s0" }},
    {{ touch = "s", access = "write" }},
    {{ mark = "s1" }},
    {{ touch = "s", access = "write" }},
    {{ mark = "s2" }},
    {{ munmap = "s" }},
    {{ mmap = "h", size = {h} }},
    {{ madvise = "h", advice = "hugepage" }},
    {{ mark = "h0" }},
    {{ touch = "h", access = "write", stride = "2MiB" }},
    {{ mark = "h1" }},
    {{ touch = "h", access = "write", stride = "2MiB" }},
    {{ mark = "h2" }},
    {{ munmap = "h" }},
    {{ mmap = "c", size = {c}, kind = "file", file = "cold", prot = "r" }},
    {{ mark = "c0" }},
    {{ touch = "c", access = "read" }},
    {{ mark = "c1" }},
    {{ touch = "c", access = "read" }},
    {{ mark = "c2" }},
    {{ munmap = "c" }},
  ] }},
]
"#
    )
}

/// Per-fault cost of the pass `from -> mid` less the pass `mid -> to`.
fn per_fault(p: &Phases, from: &str, mid: &str, to: &str) -> Vec<f64> {
    let faults = p.count(from, mid, "minor_faults");
    per(&minus(&p.time(from, mid), &p.time(mid, to)), &faults)
}

pub fn probe(scale: Scale, figs: &mut Figures) -> Result<(), CalibrateError> {
    let s = sizes(scale);
    let p = runner::run(
        "faults",
        &workload(scale.reps(), &s),
        scale.kernel_timeout(),
    )?;
    let pages = s.region >> 12;
    let pass = |what: &str| {
        format!(
            "kernel backend: {what}, {pages} pages per run; (faulting pass - second pass over the mapped pages) / minor faults"
        )
    };
    figs.put(
        "fault.anon_write",
        measured(
            &per_fault(&p, "a0", "a1", "a2"),
            &pass("write to every page of fresh anonymous memory"),
        ),
    );
    figs.put(
        "fault.zero_read",
        measured(
            &per_fault(&p, "z0", "z1", "z2"),
            &pass("read of every page of fresh anonymous memory (zero page)"),
        ),
    );
    figs.put(
        "fault.file_read",
        measured(
            &per_fault(&p, "f0", "f1", "f2"),
            &pass("read of every page of a private mapping of a cached file (fault-around: one fault maps up to 16 pages)"),
        ),
    );
    figs.put(
        "fault.cow",
        measured(
            &per_fault(&p, "f2", "f3", "f4"),
            &pass("write to every page of that file mapping, already read (each page copied)"),
        ),
    );
    figs.put(
        "fault.shmem",
        measured(
            &per_fault(&p, "s0", "s1", "s2"),
            &pass("write to every page of a fresh memfd mapping"),
        ),
    );
    let huge_kb = runner::mean(&p.count("h0", "h1", "anon_huge_kb"));
    figs.put(
        "fault.thp",
        measured(
            &per_fault(&p, "h0", "h1", "h2"),
            &format!(
                "kernel backend: write to each 2 MiB of a {} MiB region advised hugepage ({:.0} MiB of AnonHugePages per run); (faulting pass - second pass) / minor faults",
                s.huge >> 20,
                huge_kb / 1024.0
            ),
        ),
    );
    // A major fault reads from the file system and brings in read-ahead;
    // the minor faults on pages read ahead are charged at the file-read
    // rate of the same repetition and taken out.
    let file_read = per_fault(&p, "f0", "f1", "f2");
    let cold_time = minus(&p.time("c0", "c1"), &p.time("c1", "c2"));
    let cold_minor = p.count("c0", "c1", "minor_faults");
    let major = p.count("c0", "c1", "major_faults");
    let rest: Vec<f64> = cold_time
        .iter()
        .zip(&cold_minor)
        .zip(&file_read)
        .map(|((t, m), f)| t - m * f)
        .collect();
    figs.put(
        "fault.major",
        measured(
            &per(&rest, &major),
            &format!(
                "kernel backend: read of every page of a {} MiB file dropped from the page cache (fadvise DONTNEED), read-ahead included; (pass - second pass - minor faults x fault.file_read) / major faults ({:.0} per run)",
                s.cold >> 20,
                runner::mean(&major)
            ),
        ),
    );
    mthp_64k(figs);
    Ok(())
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
    fn the_workloads_pass_the_format_checks_at_every_scale() {
        for scale in [Scale::Test, Scale::Quick, Scale::Long] {
            let text = workload(scale.reps(), &sizes(scale));
            workload::parse(&super::runner::doubled_marks(&text), "faults.toml", 48).unwrap();
        }
    }
}
