//! mmap, munmap, mprotect and madvise(MADV_DONTNEED): a part per call and
//! a part per page, on the kernel backend; and `syscall.call`, a call that
//! changes nothing (munlock of an unlocked region).
//!
//! Regions of a few sizes (1, 16 and 128 pages; more with `--long`), K of
//! each, every page present, go through one call each per phase, K calls
//! of one size between two marks. Per repetition, the time per call at each
//! size is fitted by least squares, `ns = a + b * pages`: `a` is the part
//! per call, `b` the part per page.
//!
//! Layout, so that each call does only its own work:
//! - every region has a fixed address with an unmapped page after it, so
//!   no two regions merge into one VMA and no call splits one;
//! - a one-page anchor region, mapped and touched for the whole run, sits
//!   at the start of every 2 MiB range the regions use, so an unmap never
//!   frees a page table (that is `pt.free`);
//! - all regions lie far from the placement rule's own regions (16 TiB).

use super::estimate::{least_squares, measured};
use super::runner::{self, Phases};
use super::{CalibrateError, Figures, Scale};

const PAGE: u64 = 4096;
const CHUNK: u64 = 2 << 20;
/// Where the regions go: below the placement rule's base (32 TiB), above
/// anything a process maps by itself.
const BASE: u64 = 16 << 40;

struct Plan {
    /// Region sizes in pages.
    sizes: Vec<u64>,
    /// Regions of each size.
    k: usize,
    /// Calls timed together between two marks; a size's time per call in
    /// a repetition is the median over its chunks (a chunk in which another
    /// process preempted this one does not move it).
    chunk: usize,
}

fn plan(scale: Scale) -> Plan {
    match scale {
        Scale::Test => Plan {
            sizes: vec![1, 16, 64],
            k: 8,
            chunk: 4,
        },
        Scale::Quick => Plan {
            sizes: vec![1, 16, 128],
            k: 64,
            chunk: 16,
        },
        Scale::Long => Plan {
            sizes: vec![1, 16, 64, 256],
            k: 128,
            chunk: 16,
        },
    }
}

/// One region: its name, address and pages.
type Placed = (String, u64, u64);

/// The regions, by size; and the anchors' addresses.
fn layout(p: &Plan) -> (Vec<Vec<Placed>>, Vec<u64>) {
    let mut anchors = Vec::new();
    // In every 2 MiB chunk: an anchor page, a gap page, then the regions.
    let mut at = BASE;
    let groups = p
        .sizes
        .iter()
        .enumerate()
        .map(|(g, &pages)| {
            (0..p.k)
                .map(|k| {
                    let len = pages * PAGE;
                    // The first place at or after `at` that leaves the
                    // chunk's anchor page and gap page free and ends a page
                    // short of the next chunk (whose anchor must not touch).
                    let chunk = loop {
                        let chunk = at / CHUNK * CHUNK;
                        at = at.max(chunk + 2 * PAGE);
                        if at + len + PAGE <= chunk + CHUNK {
                            break chunk;
                        }
                        at = chunk + CHUNK;
                    };
                    if !anchors.contains(&chunk) {
                        anchors.push(chunk);
                    }
                    let r = (format!("r{g}_{k}"), at, pages);
                    at += len + PAGE;
                    r
                })
                .collect()
        })
        .collect();
    (groups, anchors)
}

fn workload(reps: usize, p: &Plan) -> String {
    let (groups, anchors) = layout(p);
    let mut ops = String::new();
    let mut op = |s: String| {
        ops.push_str("    ");
        ops.push_str(&s);
        ops.push_str(",\n");
    };
    let each = |f: &mut dyn FnMut(&str, u64, u64)| {
        for g in &groups {
            for (name, addr, pages) in g {
                f(name, *addr, *pages);
            }
        }
    };
    op("{ mark = \"empty0\" }".into());
    op("{ mark = \"empty\" }".into());
    op("{ mark = \"s0\" }".into());
    for (g, regions) in groups.iter().enumerate() {
        for (i, (name, addr, pages)) in regions.iter().enumerate() {
            op(format!(
                "{{ mmap = \"{name}\", size = {}, addr = {addr} }}",
                pages * PAGE
            ));
            if (i + 1) % p.chunk == 0 {
                op(format!(
                    "{{ mark = \"{}\" }}",
                    chunk_mark("mmap", g, i / p.chunk)
                ));
            }
        }
    }
    each(&mut |name, _, _| op(format!("{{ touch = \"{name}\", access = \"write\" }}")));
    op("{ mark = \"touched\" }".into());
    for verb in ["mprotect", "madvise"] {
        for (g, regions) in groups.iter().enumerate() {
            for (i, (name, _, _)) in regions.iter().enumerate() {
                op(match verb {
                    "mprotect" => format!("{{ mprotect = \"{name}\", prot = \"r\" }}"),
                    _ => format!("{{ madvise = \"{name}\", advice = \"dontneed\" }}"),
                });
                if (i + 1) % p.chunk == 0 {
                    op(format!(
                        "{{ mark = \"{}\" }}",
                        chunk_mark(verb, g, i / p.chunk)
                    ));
                }
            }
        }
    }
    each(&mut |name, _, _| {
        op(format!("{{ mprotect = \"{name}\", prot = \"rw\" }}"));
        op(format!("{{ touch = \"{name}\", access = \"write\" }}"));
    });
    op("{ mark = \"retouched\" }".into());
    // munlock of a region never locked: the system call, the mmap lock and
    // the VMA lookup, nothing to change (Linux: mm/mlock.c, mlock_fixup
    // returns at once when the flags stay the same): `syscall.call`.
    for (g, regions) in groups.iter().enumerate() {
        for (i, (name, _, _)) in regions.iter().enumerate() {
            op(format!("{{ munlock = \"{name}\" }}"));
            if (i + 1) % p.chunk == 0 {
                op(format!(
                    "{{ mark = \"{}\" }}",
                    chunk_mark("munlock", g, i / p.chunk)
                ));
            }
        }
    }
    for (g, regions) in groups.iter().enumerate() {
        for (i, (name, _, _)) in regions.iter().enumerate() {
            op(format!("{{ munmap = \"{name}\" }}"));
            if (i + 1) % p.chunk == 0 {
                op(format!(
                    "{{ mark = \"{}\" }}",
                    chunk_mark("munmap", g, i / p.chunk)
                ));
            }
        }
    }
    let mut text = String::from(
        "name = \"calibrate-syscalls\"\ndescription = \"ptlab calibrate: system calls per call and per page\"\n\n[[thread]]\nop = [\n",
    );
    for (i, a) in anchors.iter().enumerate() {
        text.push_str(&format!(
            "  {{ mmap = \"anchor{i}\", size = {PAGE}, addr = {a} }},\n  {{ touch = \"anchor{i}\", access = \"write\" }},\n"
        ));
    }
    text.push_str(&format!("  {{ repeat = {reps}, op = [\n{ops}  ] }},\n]\n"));
    text
}

/// The mark after chunk `c` of size `g`'s `verb` calls.
fn chunk_mark(verb: &str, g: usize, c: usize) -> String {
    format!("{verb}{g}_{c}")
}

/// Per repetition, ns per call of the `verb` calls at each size (the
/// median over the size's chunks), with `first` the mark before the first
/// chunk.
fn per_call(p: &Phases, plan: &Plan, verb: &str, first: &str) -> Vec<Vec<(f64, f64)>> {
    let mut prev = first.to_string();
    let mut by_rep: Vec<Vec<(f64, f64)>> = Vec::new();
    for (g, &pages) in plan.sizes.iter().enumerate() {
        let mut chunks: Vec<Vec<f64>> = Vec::new();
        for c in 0..plan.k / plan.chunk {
            let mark = chunk_mark(verb, g, c);
            chunks.push(p.cpu_time(&prev, &mark));
            prev = mark;
        }
        let reps = chunks.iter().map(Vec::len).min().unwrap_or(0);
        for rep in 0..reps {
            let v: Vec<f64> = chunks.iter().map(|c| c[rep] / plan.chunk as f64).collect();
            if by_rep.len() <= rep {
                by_rep.push(Vec::new());
            }
            by_rep[rep].push((pages as f64, runner::median(v).unwrap_or(0.0)));
        }
    }
    by_rep
}

pub fn probe(scale: Scale, figs: &mut Figures) -> Result<(), CalibrateError> {
    let plan = plan(scale);
    let p = runner::run(
        "system calls",
        &workload(scale.reps(), &plan),
        scale.kernel_timeout(),
    )?;
    let sizes: Vec<String> = plan.sizes.iter().map(u64::to_string).collect();
    let sizes = sizes.join(", ");
    let k = plan.k;
    let last = plan.sizes.len() - 1;
    for (verb, first, what) in [
        (
            "munmap",
            chunk_mark("munlock", last, plan.k / plan.chunk - 1),
            "munmap of a whole region, every page present",
        ),
        (
            "mprotect",
            "touched".to_string(),
            "mprotect rw -> r of a whole region, every page present",
        ),
        (
            "madvise",
            chunk_mark("mprotect", last, plan.k / plan.chunk - 1),
            "madvise(MADV_DONTNEED) of a whole region, every page present",
        ),
    ] {
        let lines: Vec<_> = per_call(&p, &plan, verb, &first)
            .iter()
            .filter_map(|pts| least_squares(pts))
            .collect();
        let how = format!(
            "kernel backend: {what}, {k} calls per size timed {} at a time (median per size), process CPU time; least squares ns = a + b x pages over sizes {sizes} pages, one fit per run",
            plan.chunk
        );
        let a: Vec<f64> = lines.iter().map(|l| l.intercept).collect();
        let b: Vec<f64> = lines.iter().map(|l| l.slope).collect();
        figs.put(&format!("{verb}.call"), measured(&a, &format!("{how}: a")));
        figs.put(&format!("{verb}.page"), measured(&b, &format!("{how}: b")));
    }
    // mmap populates nothing, so its cost does not depend on the size: the
    // mean per call over every size.
    let mmap: Vec<f64> = per_call(&p, &plan, "mmap", "s0")
        .iter()
        .map(|pts| pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64)
        .collect();
    figs.put(
        "mmap.call",
        measured(
            &mmap,
            &format!("kernel backend: mmap of an anonymous region at a fixed free address (MAP_FIXED_NOREPLACE, no population), {k} calls at each of sizes {sizes} pages, process CPU time, mean per call"),
        ),
    );
    // munlock of an unlocked region does the same whatever its size: the
    // mean per call over every size, as for mmap.
    let munlock: Vec<f64> = per_call(&p, &plan, "munlock", "retouched")
        .iter()
        .map(|pts| pts.iter().map(|p| p.1).sum::<f64>() / pts.len() as f64)
        .collect();
    figs.put(
        "syscall.call",
        measured(
            &munlock,
            &format!("kernel backend: munlock of an anonymous region never locked (the call, the mmap lock, the VMA lookup; nothing changes), {k} calls at each of sizes {sizes} pages, process CPU time, mean per call; priced for mlock, munlock and msync, whose pages are priced apart"),
        ),
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_workloads_pass_the_format_checks_at_every_scale() {
        crate::calibrate::runner::assert_parses_at_every_scale("syscalls.toml", |scale| {
            workload(scale.reps(), &plan(scale))
        });
    }

    #[test]
    fn regions_never_touch_and_never_cross_a_2mib_range() {
        let p = plan(Scale::Long);
        let (groups, anchors) = layout(&p);
        let mut all: Vec<(u64, u64)> = groups
            .iter()
            .flatten()
            .map(|(_, a, pages)| (*a, a + pages * PAGE))
            .chain(anchors.iter().map(|&a| (a, a + PAGE)))
            .collect();
        all.sort_unstable();
        for w in all.windows(2) {
            assert!(
                w[0].1 < w[1].0,
                "{:#x}..{:#x} touches {:#x}",
                w[0].0,
                w[0].1,
                w[1].0
            );
        }
        for (_, a, pages) in groups.iter().flatten() {
            let end = a + pages * PAGE - 1;
            assert_eq!(a / CHUNK, end / CHUNK, "{a:#x} crosses a 2 MiB boundary");
            assert!(
                anchors.contains(&(a / CHUNK * CHUNK)),
                "no anchor for {a:#x}"
            );
        }
    }
}
