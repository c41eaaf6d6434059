//! The `mremap` verb: what it plans (sizes, destinations, the placement of
//! a destination and of the room to grow) and what it refuses, with where.

use workload::parse;
use workload::plan::{Op, Workload};

const FILE: &str = "workloads/x.toml";

fn wl(ops: &str) -> String {
    format!("[[thread]]\nop = [\n{ops}\n]\n")
}

fn err(ops: &str) -> String {
    match parse(&wl(ops), FILE, 48) {
        Ok(w) => panic!("accepted: {w:?}"),
        Err(e) => e.to_string(),
    }
}

fn ok(ops: &str) -> Workload {
    parse(&wl(ops), FILE, 48).unwrap_or_else(|e| panic!("{e}"))
}

fn mremaps(w: &Workload) -> Vec<workload::plan::Mremap> {
    let mut out = Vec::new();
    w.for_each_op(|_, op| {
        if let Op::Mremap(m) = op {
            out.push(m.clone());
        }
    });
    out
}

#[test]
fn a_move_plans_the_destination_as_a_region_placed_apart_from_the_source() {
    let w = ok(r#"{ mmap = "a", size = "4MiB" },
{ touch = "a" },
{ mremap = "a", size = "6MiB", maymove = true, to = "b" },
{ touch = "b" },
{ mmap = "c", size = "4MiB" },"#);
    let (a, b, c) = (
        w.region("a").unwrap(),
        w.region("b").unwrap(),
        w.region("c").unwrap(),
    );
    let m = &mremaps(&w)[0];
    assert_eq!((m.region, m.to), (a, Some(b)));
    assert_eq!(
        (m.old_size, m.new_size, m.maymove),
        (4 << 20, 6 << 20, true)
    );
    let r = |id: usize| (w.regions[id].addr, w.regions[id].addr + w.regions[id].size);
    // Source and destination live at the same moment: they never overlap
    // (Linux refuses an overlapping move with EINVAL).
    assert!(
        r(a).1 <= r(b).0 || r(b).1 <= r(a).0,
        "{:?} {:?}",
        r(a),
        r(b)
    );
    assert_eq!(w.regions[b].size, 6 << 20);
    // After the move the source's room is free again: c reuses it.
    assert_eq!(r(c).0, r(a).0);
}

#[test]
fn growing_in_place_reserves_the_largest_size() {
    let w = ok(r#"{ mmap = "a", size = "2MiB" },
{ mremap = "a", size = "10MiB" },
{ mmap = "n", size = "2MiB" },
{ touch = "a", offset = "8MiB" },
{ mremap = "a", size = "4KiB" },"#);
    let (a, n) = (w.region("a").unwrap(), w.region("n").unwrap());
    assert_eq!(w.regions[a].size, 10 << 20);
    assert!(w.regions[n].addr >= w.regions[a].addr + (10 << 20));
    let m = mremaps(&w);
    assert_eq!(
        (m[1].old_size, m[1].new_size, m[1].to),
        (10 << 20, 4096, None)
    );
}

#[test]
fn the_source_is_unmapped_after_a_move() {
    let e = err(r#"{ mmap = "a", size = "4MiB" },
{ mremap = "a", size = "4MiB", maymove = true, to = "b" },
{ touch = "a" },"#);
    assert!(e.starts_with("workloads/x.toml:5:11: "), "{e}");
    assert!(e.contains("\"a\" is not mapped here"), "{e}");
}

#[test]
fn part_of_a_region_is_refused_with_where() {
    let e = err(r#"{ mmap = "a", size = "4MiB" },
{ mremap = "a", size = "1MiB", offset = "1MiB" },"#);
    assert!(
        e.starts_with("workloads/x.toml:4:32: unknown key \"offset\""),
        "{e}"
    );
    assert!(e.contains("part of one is not supported"), "{e}");
}

#[test]
fn a_fixed_destination_needs_maymove() {
    let e = err(r#"{ mmap = "a", size = "4MiB" },
{ mremap = "a", size = "4MiB", to = "b" },"#);
    assert!(e.starts_with("workloads/x.toml:4:37: "), "{e}");
    assert!(e.contains("maymove = true"), "{e}");
}

#[test]
fn what_the_model_does_not_model_is_refused() {
    let cases = [
        (
            r#"{ mmap = "a", size = "4MiB", kind = "file" },
{ mremap = "a", size = "8MiB" },"#,
            "is a private file mapping whose object ends 4MiB from its start; mremap to size 8MiB would map past the object's end",
        ),
        (
            r#"{ mmap = "a", size = "4MiB", shared = true },
{ mremap = "a", size = "2MiB" },
{ mremap = "a", size = "4MiB", maymove = true, to = "b" },
{ mremap = "b", size = "6MiB" },"#,
            "shared anonymous mapping whose object ends 4MiB",
        ),
        (
            r#"{ mmap = "a", size = "4MiB", kind = "shmem" },
{ mremap = "a", size = "8MiB", maymove = true, to = "b" },"#,
            "past the object's end",
        ),
        (
            r#"{ mmap = "a", size = "4MiB" },
{ mlock = "a", len = "1MiB" },
{ mremap = "a", size = "8MiB" },"#,
            "several VMAs",
        ),
        (
            r#"{ mmap = "a", size = "4MiB" },
{ mlock = "a" },
{ mlock = "a", onfault = true, len = "1MiB" },
{ mremap = "a", size = "8MiB" },"#,
            "several VMAs",
        ),
        (
            r#"{ mmap = "a", size = "4MiB" },
{ mprotect = "a", prot = "r", len = "1MiB" },
{ mremap = "a", size = "8MiB" },"#,
            "several VMAs",
        ),
        (
            r#"{ mmap = "a", size = "4MiB" },
{ madvise = "a", advice = "hugepage", len = "2MiB" },
{ mremap = "a", size = "8MiB" },"#,
            "several VMAs",
        ),
        (
            r#"{ mmap = "a", size = "4MiB" },
{ munmap = "a", offset = "1MiB", len = "4KiB" },
{ mremap = "a", size = "8MiB" },"#,
            "is not mapped at offset 1MiB",
        ),
        (
            r#"{ mmap = "a", size = "4MiB" },
{ mmap = "b", size = "8MiB" },
{ mremap = "a", size = "4MiB", maymove = true, to = "b" },"#,
            "its tail would stay mapped",
        ),
        (
            r#"{ mmap = "a", size = "4MiB" },
{ mremap = "a", size = "4MiB", maymove = true, to = "a" },"#,
            "both the mremap's source and its destination",
        ),
    ];
    for (ops, want) in cases {
        let e = err(ops);
        assert!(e.starts_with("workloads/x.toml:"), "{e}");
        assert!(e.contains(want), "{want:?} not in {e}");
    }
    // MREMAP_FIXED onto a mapped region unmaps it first (Linux
    // mremap_to): one no longer than the new size, of any kind.
    ok(r#"{ mmap = "a", size = "4MiB" },
{ mmap = "b", size = "4MiB" },
{ mremap = "a", size = "4MiB", maymove = true, to = "b" },
{ touch = "b", access = "write" },"#);
    ok(r#"{ mmap = "a", size = "2MiB" },
{ mmap = "b", size = "1MiB", kind = "shmem" },
{ mremap = "a", size = "2MiB", maymove = true, to = "b" },
{ touch = "b", access = "write" },"#);
    // The same region restored to one set of attributes is one VMA again.
    ok(r#"{ mmap = "a", size = "4MiB" },
{ mprotect = "a", prot = "r", len = "1MiB" },
{ mprotect = "a", prot = "rw", len = "1MiB" },
{ mremap = "a", size = "8MiB" },"#);
}

#[test]
fn every_kind_of_mapping_and_locked_memory_move() {
    // Within its object a file, shmem or shared anonymous mapping shrinks,
    // moves and grows back.
    for kind in [
        r#"kind = "file""#,
        r#"kind = "file", shared = true"#,
        r#"kind = "file", file_offset = "64KiB""#,
        r#"kind = "shmem""#,
        r#"shared = true"#,
    ] {
        let w = ok(&format!(
            r#"{{ mmap = "a", size = "4MiB", {kind} }},
{{ touch = "a", access = "write" }},
{{ mremap = "a", size = "2MiB" }},
{{ mremap = "a", size = "4MiB", maymove = true, to = "b" }},
{{ touch = "b", access = "write" }},"#
        ))
        .regions
        .len();
        assert_eq!(w, 2, "{kind}");
    }
    // Locked memory keeps its lock through the move: advice refused on
    // locked memory is refused at the destination too...
    let e = err(r#"{ mmap = "a", size = "1MiB" },
{ mlock = "a" },
{ mremap = "a", size = "2MiB", maymove = true, to = "b" },
{ madvise = "b", advice = "pageout" },"#);
    assert!(e.starts_with("workloads/x.toml:6:"), "{e}");
    assert!(e.contains("is locked at offset 0"), "{e}");
    // ...but with dontunmap the source is left unlocked (Linux
    // dontunmap_complete clears VM_LOCKED), the destination locked.
    ok(r#"{ mmap = "a", size = "1MiB", locked = true },
{ mremap = "a", size = "1MiB", maymove = true, to = "b", dontunmap = true },
{ madvise = "a", advice = "pageout" },"#);
    let e = err(r#"{ mmap = "a", size = "1MiB", locked = true },
{ mremap = "a", size = "1MiB", maymove = true, to = "b", dontunmap = true },
{ madvise = "b", advice = "pageout" },"#);
    assert!(e.contains("is locked at offset 0"), "{e}");
}
