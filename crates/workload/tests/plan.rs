//! The plan as backends see it: built-ins, loading, touch offsets, bounds.

use workload::builtin;
use workload::plan::{Op, Pattern, Range, Touch, Workload};
use workload::{load, parse, WorkloadError};

const MIB: u64 = 1 << 20;
const GIB: u64 = 1 << 30;

#[test]
fn every_builtin_and_suite_workload_checks_on_every_width() {
    let all = builtin::list()
        .into_iter()
        .map(|(name, _, _)| (name, builtin::get(name).unwrap()))
        .chain(builtin::validate_suite());
    for (name, text) in all {
        for va_bits in [39, 48, 57] {
            let w = parse(text, name, va_bits)
                .unwrap_or_else(|e| panic!("{name} ({va_bits} bits): {e}"));
            assert_eq!(load(name, va_bits).unwrap(), w, "{name}");
        }
    }
}

#[test]
fn the_suite_is_small_single_threaded_and_marked() {
    let suite = builtin::validate_suite();
    assert!(suite.len() >= 15);
    for (name, text) in suite {
        let w = parse(text, name, 48).unwrap();
        assert_eq!(w.threads.len(), 1, "{name} must be deterministic");
        let mut marks = 0;
        w.for_each_op(|_, op| marks += usize::from(matches!(op, Op::Mark(_))));
        assert!(marks >= 2, "{name} has {marks} marks");
        if name != "dontneed-reclaim" {
            assert!(
                w.total_mapped_bytes() <= 8 * MIB,
                "{name} maps more than a few MiB"
            );
        }
    }
}

#[test]
fn builtins_name_their_seed() {
    let list = builtin::list();
    assert_eq!(list.len(), 11);
    let names: Vec<&str> = list.iter().map(|b| b.0).collect();
    for expected in [
        "pagefault",
        "pagefault-file",
        "ebizzy",
        "multi-fault",
        "thp-fault-scaling",
        "dontneed-reclaim",
        "tlb-shootdown",
        "writeback",
        "gups",
        "prefault",
        "tlb-flush2",
    ] {
        assert!(names.contains(&expected), "{expected} missing");
    }
    let seeds = [
        "5-level-vs-4-level-page-tables",
        "latency-implications-of-virtual-memory",
        "pte-page-table-reclaim-slides",
        "riscv-64k-base-page-rfc",
        "split-pmd-locks",
        "invlpgb-series-v5",
    ];
    for (name, description, seed) in list {
        assert!(seeds.contains(&seed), "{name}: unknown seed {seed}");
        assert!(
            description.contains("seed"),
            "{name}: the description should name its seed"
        );
    }
}

#[test]
fn dontneed_reclaim_is_the_spec_example() {
    let w = load("dontneed-reclaim", 48).unwrap();
    assert_eq!(w.regions.len(), 1);
    assert_eq!(w.regions[0].size, 50 * GIB);
    assert_eq!(w.regions[0].addr, 0x2000_0000_0000);
    let ops = &w.threads[0].ops;
    let Op::Mmap(m) = &ops[0] else { panic!() };
    assert!(m.noreserve);
    let Op::Touch(t) = &ops[1] else { panic!() };
    assert_eq!((t.stride, t.count), (2 * MIB, 50 * GIB / (2 * MIB)));
    let marks: Vec<&str> = ops
        .iter()
        .filter_map(|op| match op {
            Op::Mark(m) => Some(m.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(marks, ["touched", "dontneed"]);
}

#[test]
fn resident_bounds_follow_the_documented_rule() {
    // 25,600 touches of 4 KiB, each in its own 2 MiB: 100 MiB of pages and a
    // PTE table per touch.
    let w = load("dontneed-reclaim", 48).unwrap();
    let touches = 25_600u64;
    assert_eq!(w.max_touched_bytes(), 2 * touches * 4096);
    // Under THP "always" every touch may fault a whole huge page: all 50 GiB.
    assert_eq!(
        w.max_touched_bytes_thp_always(),
        50 * GIB + (touches + 2) * 4096
    );
    assert_eq!(w.total_mapped_bytes(), 50 * GIB);

    // Touching 1 MiB of 8 MiB: 256 pages, tables capped by the 2 MiB spans.
    let text = "[[thread]]\nop = [ { mmap = \"a\", size = \"8MiB\" }, { touch = \"a\", len = \"1MiB\" } ]\n";
    let w = parse(text, "t.toml", 48).unwrap();
    assert_eq!(w.max_touched_bytes(), MIB + (8 / 2 + 2) * 4096);
    // A file mapping counts whole (the page cache holds it).
    let text = "[[thread]]\nop = [ { mmap = \"f\", size = \"8MiB\", kind = \"file\" }, { touch = \"f\", len = \"1MiB\" } ]\n";
    let w = parse(text, "t.toml", 48).unwrap();
    assert_eq!(w.max_touched_bytes(), 8 * MIB + (8 / 2 + 2) * 4096);
    // ebizzy: 4 threads, two 512 KiB chunks each, loops do not multiply.
    let w = load("ebizzy", 48).unwrap();
    assert_eq!(w.total_mapped_bytes(), 4 * 2 * 512 * 1024);
    assert!(w.max_touched_bytes() <= w.total_mapped_bytes() + 8 * 2 * 4096);
}

fn touch(pattern: Pattern, offset: u64, len: u64, stride: u64, count: u64, seed: u64) -> Touch {
    Touch {
        region: 0,
        range: Range { offset, len },
        access: workload::plan::Access::Read,
        pattern,
        stride,
        count,
        seed,
        latency: false,
    }
}

#[test]
fn touch_offsets() {
    let seq: Vec<u64> = touch(Pattern::Seq, 8192, 3 * 4096, 4096, 5, 1)
        .offsets()
        .collect();
    assert_eq!(seq, [8192, 12288, 16384, 8192, 12288]);
    let rev: Vec<u64> = touch(Pattern::Reverse, 0, 10 * 4096, 8192, 5, 1)
        .offsets()
        .collect();
    assert_eq!(rev, [32768, 24576, 16384, 8192, 0]);
    let t = touch(Pattern::Random, 4096, 64 * 4096, 4096, 1000, 9);
    let a: Vec<u64> = t.offsets().collect();
    assert_eq!(a, t.offsets().collect::<Vec<_>>(), "deterministic");
    assert!(a
        .iter()
        .all(|o| (4096..65 * 4096).contains(o) && o % 4096 == 0));
    let distinct: std::collections::BTreeSet<_> = a.iter().collect();
    assert!(
        distinct.len() > 32,
        "1000 draws over 64 points should hit most of them"
    );
    let b: Vec<u64> = touch(Pattern::Random, 4096, 64 * 4096, 4096, 1000, 10)
        .offsets()
        .collect();
    assert_ne!(a, b, "the seed matters");
}

#[test]
fn load_reads_files_and_reports_unknown_names() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("mine.toml");
    std::fs::write(
        &path,
        "[[thread]]\nop = [ { mmap = \"a\", size = \"4KiB\" } ]\n",
    )
    .unwrap();
    let w: Workload = load(path.to_str().unwrap(), 48).unwrap();
    assert_eq!(
        w.name, "mine",
        "named after the file when the TOML has no name"
    );
    drop(dir);

    let e = load("no-such-workload", 48).unwrap_err();
    assert!(matches!(e, WorkloadError::NotFound { .. }));
    assert!(
        e.to_string()
            .starts_with("\"no-such-workload\" is neither a built-in workload (pagefault, "),
        "{e}"
    );
}

#[test]
fn threads_and_blocks_are_numbered() {
    // One block sets a shared mapping up, a block of four faults it in slices.
    let text = r#"
[[thread]]
op = [ { mmap = "shared", size = "256MiB" }, { barrier = true }, { barrier = true } ]

[[thread]]
count = 4
op = [
  { barrier = true },
  { repeat = 2, op = [ { touch = "shared", access = "write", part = "split" } ] },
  { barrier = true },
]
"#;
    let w = workload::parse(text, "two-blocks.toml", 48).unwrap();
    let shape: Vec<(usize, usize, usize, usize)> = w
        .threads
        .iter()
        .map(|t| (t.tid, t.block, t.block_count, t.index_in_block))
        .collect();
    assert_eq!(
        shape,
        [
            (0, 0, 1, 0),
            (1, 1, 4, 0),
            (2, 1, 4, 1),
            (3, 1, 4, 2),
            (4, 1, 4, 3)
        ]
    );
    // Each faulting thread owns a quarter of the 256 MiB, aligned for THP.
    for t in &w.threads[1..] {
        let Op::Repeat { ops, .. } = &t.ops[1] else {
            panic!()
        };
        let Op::Touch(touch) = &ops[0] else { panic!() };
        assert_eq!(touch.range.len, 64 * MIB);
        assert_eq!(touch.range.offset, 64 * MIB * t.index_in_block as u64);
        assert_eq!(touch.count, 64 * MIB / 4096);
    }
    assert_eq!(w.regions[0].addr % (2 * MIB), 0);
}
