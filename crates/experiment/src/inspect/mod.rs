//! `ptlab inspect`: a live process's page tables, predicted from its
//! present pages, checked against the kernel's VmPTE, and the same memory
//! under other geometries and policies.
//!
//! - [`leaves`]: the host's present pages as leaves of a geometry.
//! - [`tables`]: table pages per level and the PTE-table histogram.
//! - [`vmpte`]: predicted VmPTE against the kernel's, the difference explained.
//! - [`whatif`]: other geometries, eager reclaim, THP always: table memory
//!   and TLB reach.
//!
//! The reading is `host::pagemap`'s; this module computes only, so it is
//! tested on hand-made snapshots as well as live ones.

pub mod leaves;
pub mod tables;
pub mod vmpte;
pub mod whatif;

use host::pagemap::{PageFlags, Snapshot, Source};
use pt::Geometry;
use serde::Serialize;

/// The geometries of the what-if when none are asked for.
pub const DEFAULT_WHAT_IF: &[&str] = &[
    "x86-64-5l",
    "riscv-sv39-64k",
    "arm64-4k-48",
    "arm64-16k-48",
    "arm64-64k-48",
];

/// The preset that describes this machine's own page tables.
pub fn host_geometry_name() -> &'static str {
    let page = host::pagemap::host_page_size();
    if cfg!(target_arch = "aarch64") {
        match page {
            16384 => "arm64-16k-48",
            65536 => "arm64-64k-48",
            _ => "arm64-4k-48",
        }
    } else if cfg!(target_arch = "riscv64") {
        "riscv-sv39"
    } else {
        let la57 = host::CpuInfo::read().is_some_and(|c| c.has_flag("la57"));
        if la57 {
            "x86-64-5l"
        } else {
            "x86-64-4l"
        }
    }
}

/// Counts of what is mapped, in host pages.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Mapped {
    pub vmas: usize,
    /// Present pages, of any kind (a huge page counts its base pages).
    pub present_pages: u64,
    pub swapped_pages: u64,
    pub file_pages: u64,
    /// Pages mapping the shared zero page (None: the reader could not tell).
    pub zero_pages: Option<u64>,
    /// PMD-mapped huge pages: anonymous, file or shmem, and the huge zero page.
    pub huge_anon: u64,
    pub huge_file: u64,
    pub huge_zero: Option<u64>,
}

/// Everything `ptlab inspect` shows.
#[derive(Debug, Clone, Serialize)]
pub struct Inspection {
    pub pid: u32,
    pub source: Source,
    pub fallback_reason: Option<String>,
    pub read_ms: f64,
    pub complete: bool,
    pub page_size: u64,
    pub geometry: String,
    pub mapped: Mapped,
    /// Tables per level (leaf first) the present pages need.
    pub tables: Vec<tables::LevelTables>,
    pub deposited_tables: u64,
    pub pte_histogram: Vec<tables::Bucket>,
    pub vmpte: vmpte::VmPteCheck,
    pub what_if: Vec<whatif::WhatIf>,
    /// The folios mapping each VMA (`host::pagemap::folios`), when they
    /// could be read (root), else why not.
    pub folios: Option<host::pagemap::folios::Folios>,
    pub folios_unread: Option<String>,
}

fn mapped(snap: &Snapshot, huge: u64) -> Mapped {
    let mut m = Mapped {
        vmas: snap.vmas.len(),
        zero_pages: snap.zero_known.then_some(0),
        huge_zero: snap.zero_known.then_some(0),
        ..Mapped::default()
    };
    for r in &snap.runs {
        let pages = (r.end - r.start) / snap.page_size;
        let f = r.flags;
        if f.has(PageFlags::SWAPPED) {
            m.swapped_pages += pages;
        }
        if !f.has(PageFlags::PRESENT) {
            continue;
        }
        m.present_pages += pages;
        if f.has(PageFlags::FILE) {
            m.file_pages += pages;
        }
        let blocks = (r.end - r.start) / huge;
        match (f.has(PageFlags::HUGE), f.has(PageFlags::ZERO)) {
            (true, true) => *m.huge_zero.get_or_insert(0) += blocks,
            (true, false) if f.has(PageFlags::FILE) => m.huge_file += blocks,
            (true, false) => m.huge_anon += blocks,
            (false, true) => *m.zero_pages.get_or_insert(0) += pages,
            (false, false) => {}
        }
    }
    m
}

/// Analyses `snap` under `host` (its own geometry) and the `what_if` ones.
pub fn inspect(snap: &Snapshot, host: &Geometry, what_if: &[Geometry]) -> Inspection {
    // The host's PMD leaf: what PAGEMAP_SCAN's PAGE_IS_HUGE runs are made of.
    let huge = host.entry_size(1);
    let ranges = leaves::host_ranges(snap, huge);
    let l = leaves::from_ranges(host, &ranges);
    let levels = tables::count(host, &l.runs);
    let deposited = vmpte::deposits(host, &l.runs);
    let places = vmpte::places(host, &snap.vmas, &l.runs);
    let facts = vmpte::ReadFacts {
        kernel_kb: snap.vm_pte_kb,
        kernel_kb_after: snap.vm_pte_kb_after,
        complete: snap.complete,
        huge_exact: snap.huge_exact,
    };
    let check = vmpte::check(host, &levels, deposited, places, &facts);

    let mut what = Vec::new();
    let mut host_rows = whatif::scenarios(host, &ranges, &snap.vmas);
    // The kernel now: its VmPTE plus the levels it does not count.
    if let Some(kernel_kb) = snap.vm_pte_kb {
        let mut now = host_rows[0].clone();
        now.scenario = "kernel now".into();
        let uncounted: u64 = levels.iter().filter(|t| !t.in_vmpte).map(|t| t.bytes).sum();
        now.table_bytes = kernel_kb * 1024 + uncounted;
        now.vmpte_kb = kernel_kb;
        now.kept = check.difference_tables.unwrap_or(0).max(0) as u64;
        what.push(now);
    }
    host_rows[0].scenario = "eager reclaim".into();
    what.extend(host_rows);
    for g in what_if.iter().filter(|g| g.name() != host.name()) {
        what.extend(whatif::scenarios(g, &ranges, &snap.vmas));
    }
    Inspection {
        pid: snap.pid,
        source: snap.source,
        fallback_reason: snap.fallback_reason.clone(),
        read_ms: snap.read_ms,
        complete: snap.complete,
        page_size: snap.page_size,
        geometry: host.name().to_string(),
        mapped: mapped(snap, huge),
        pte_histogram: tables::pte_histogram(host, &l.runs),
        tables: levels,
        deposited_tables: deposited,
        vmpte: check,
        what_if: what,
        folios: None,
        folios_unread: None,
    }
}

/// A private read-write VMA of `[start, end)` for the tests: anonymous
/// when `inode` is 0, else of the file "/f".
#[cfg(test)]
pub(crate) fn test_vma(start: u64, end: u64, inode: u64) -> host::pagemap::Vma {
    host::pagemap::Vma {
        start,
        end,
        perms: "rw-p".into(),
        offset: 0,
        inode,
        path: if inode == 0 {
            String::new()
        } else {
            "/f".into()
        },
        anon_huge_kb: None,
        file_pmd_kb: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use host::pagemap::PageRun;
    use pt::geometry::preset;

    const M2: u64 = 2 << 20;

    fn snapshot(vm_pte_kb: u64) -> Snapshot {
        let base = 1u64 << 40;
        let vma = test_vma;
        let run = |start: u64, end: u64, flags: PageFlags| PageRun { start, end, flags };
        let p = PageFlags::PRESENT;
        Snapshot {
            pid: 7,
            page_size: 4096,
            vmas: vec![
                vma(base, base + 4 * M2, 0),
                vma(base + 8 * M2, base + 10 * M2, 9),
            ],
            unparsed_lines: 0,
            runs: vec![
                run(base, base + 0x2000, p),
                run(base + 0x2000, base + 0x3000, p.with(PageFlags::ZERO)),
                run(base + M2, base + 2 * M2, p.with(PageFlags::HUGE)),
                run(
                    base + 2 * M2,
                    base + 3 * M2,
                    p.with(PageFlags::HUGE).with(PageFlags::ZERO),
                ),
                run(
                    base + 8 * M2,
                    base + 9 * M2,
                    p.with(PageFlags::HUGE).with(PageFlags::FILE),
                ),
            ],
            source: Source::PagemapScan,
            fallback_reason: None,
            zero_known: true,
            huge_exact: true,
            complete: true,
            stopped_at: None,
            vm_pte_kb: Some(vm_pte_kb),
            vm_pte_kb_after: Some(vm_pte_kb),
            read_ms: 0.0,
        }
    }

    #[test]
    fn kinds_are_counted_and_deposits_follow_anonymous_huge_pages() {
        let g = preset("x86-64-4l").unwrap();
        // 1 PTE + 1 PMD + 1 PUD table, 2 deposits (the anonymous huge page
        // and the huge zero page; none for the file one): 20 kB.
        let ins = inspect(&snapshot(20), &g, &[]);
        let m = &ins.mapped;
        assert_eq!(m.present_pages, 3 + 3 * 512);
        assert_eq!(m.zero_pages, Some(1));
        assert_eq!((m.huge_anon, m.huge_file, m.huge_zero), (1, 1, Some(1)));
        assert_eq!(ins.deposited_tables, 2);
        assert_eq!(ins.vmpte.verdict, vmpte::Verdict::Exact);
        // Two kept tables: the "kernel now" row holds them, eager reclaim not.
        let more = inspect(&snapshot(28), &g, &[]);
        assert_eq!(more.vmpte.difference_tables, Some(2));
        let now = &more.what_if[0];
        let eager = &more.what_if[1];
        assert_eq!(
            (now.scenario.as_str(), eager.scenario.as_str()),
            ("kernel now", "eager reclaim")
        );
        assert_eq!(now.kept, 2);
        assert_eq!(now.table_bytes - eager.table_bytes, 2 * 4096);
        // Places: PTE spans in the VMAs with nothing present: the fourth
        // 2 MiB of the first VMA and the second of the file VMA.
        assert_eq!(more.vmpte.places[0].places, 2);
    }
}
