//! The verbs and keys of issue 30 beyond the first format: the fork advice
//! (`dontfork`, `dofork`, `wipeonfork`, `keeponfork`), `mlock` with
//! `onfault`, and `file_offset` of a file mapping. Each is planned as
//! written, and bad input is refused with the place.

mod one_thread;

use one_thread::{err, ops};
use workload::plan::{Advice, Op};

#[test]
fn file_offset_is_planned_and_only_for_file_mappings() {
    let o = ops(r#"  { mmap = "f", size = "8KiB", kind = "file", file_offset = "1MiB" },"#);
    let Op::Mmap(m) = &o[0] else { panic!("{o:?}") };
    assert_eq!((m.file_offset, m.size), (1 << 20, 8192));
    let o = ops(r#"  { mmap = "f", size = "8KiB", kind = "file" },"#);
    let Op::Mmap(m) = &o[0] else { panic!("{o:?}") };
    assert_eq!(m.file_offset, 0);

    let e = err(r#"  { mmap = "a", size = "4KiB", file_offset = "4KiB" },"#);
    assert!(e.starts_with("workloads/x.toml:3:46: "), "{e}");
    assert!(e.contains("\"file_offset\""), "{e}");
    assert!(
        e.contains("kind = \\\"file\\\"") || e.contains("kind = \"file\""),
        "{e}"
    );

    let e = err(r#"  { mmap = "f", size = "4KiB", kind = "file", file_offset = 1000 },"#);
    assert!(e.starts_with("workloads/x.toml:3:61: "), "{e}");
    assert!(e.contains("a multiple of 4 KiB"), "{e}");

    let e = err(
        r#"  { mmap = "f", size = "4KiB", kind = "file", file_offset = 9223372036854771712 },"#,
    );
    assert!(e.starts_with("workloads/x.toml:3:61: "), "{e}");
    assert!(e.contains("2^63"), "{e}");
}

#[test]
fn mlock_onfault_is_planned_locks_and_is_not_inherited() {
    let o = ops(concat!(
        r#"  { mmap = "a", size = "8KiB" },"#,
        "\n",
        r#"  { mlock = "a", onfault = true },"#,
        "\n",
        r#"  { mlock = "a", len = "4KiB" },"#,
        "\n",
        // The child inherits no lock, so it may drop pages.
        r#"  { fork = "c", op = [ { madvise = "a", advice = "dontneed" } ] },"#,
    ));
    assert!(matches!(o[1], Op::Mlock { onfault: true, .. }), "{o:?}");
    assert!(matches!(o[2], Op::Mlock { onfault: false, .. }), "{o:?}");

    // Locked on fault is locked: the parent may not drop them.
    let e = err(concat!(
        r#"  { mmap = "a", size = "8KiB" },"#,
        "\n",
        r#"  { mlock = "a", onfault = true },"#,
        "\n",
        r#"  { madvise = "a", advice = "pageout" },"#,
    ));
    assert!(e.starts_with("workloads/x.toml:5:15: "), "{e}");
    assert!(e.contains("is locked at offset 0"), "{e}");

    let e = err(concat!(
        r#"  { mmap = "a", size = "8KiB" },"#,
        "\n",
        r#"  { mlock = "a", onfault = 1 },"#,
    ));
    assert!(e.starts_with("workloads/x.toml:4:28: "), "{e}");
    assert!(e.contains("\"onfault\""), "{e}");

    // munlock takes no onfault.
    let e = err(concat!(
        r#"  { mmap = "a", size = "8KiB" },"#,
        "\n",
        r#"  { munlock = "a", onfault = true },"#,
    ));
    assert!(e.starts_with("workloads/x.toml:4:"), "{e}");
    assert!(e.contains("onfault"), "{e}");
}

#[test]
fn a_dontfork_range_is_not_in_the_child_until_dofork() {
    // The child may not touch what it does not get.
    let e = err(concat!(
        r#"  { mmap = "a", size = "8KiB" },"#,
        "\n",
        r#"  { madvise = "a", advice = "dontfork" },"#,
        "\n",
        r#"  { fork = "c", op = [ { touch = "a" } ] },"#,
    ));
    assert!(e.starts_with("workloads/x.toml:5:"), "{e}");
    assert!(e.contains("\"a\""), "{e}");

    // Half of it: the child gets the other half.
    let o = ops(concat!(
        r#"  { mmap = "a", size = "8KiB" },"#,
        "\n",
        r#"  { madvise = "a", advice = "dontfork", len = "4KiB" },"#,
        "\n",
        r#"  { fork = "c", op = [ { touch = "a", offset = "4KiB" } ] },"#,
        "\n",
        r#"  { touch = "a" },"#,
    ));
    assert!(matches!(
        o[1],
        Op::Madvise {
            advice: Advice::DontFork,
            ..
        }
    ));
    let e = err(concat!(
        r#"  { mmap = "a", size = "8KiB" },"#,
        "\n",
        r#"  { madvise = "a", advice = "dontfork", len = "4KiB" },"#,
        "\n",
        r#"  { fork = "c", op = [ { touch = "a" } ] },"#,
    ));
    assert!(e.starts_with("workloads/x.toml:5:"), "{e}");

    // dofork gives it back.
    ops(concat!(
        r#"  { mmap = "a", size = "8KiB" },"#,
        "\n",
        r#"  { madvise = "a", advice = "dontfork" },"#,
        "\n",
        r#"  { madvise = "a", advice = "dofork" },"#,
        "\n",
        r#"  { fork = "c", op = [ { touch = "a" } ] },"#,
    ));
}

#[test]
fn wipeonfork_is_for_private_anonymous_memory_only() {
    for mapping in [r#"kind = "shmem""#, r#"kind = "file""#, r#"shared = true"#] {
        let e = err(&format!(
            "  {{ mmap = \"a\", size = \"8KiB\", {mapping} }},\n  {{ madvise = \"a\", advice = \"wipeonfork\" }},"
        ));
        assert!(e.starts_with("workloads/x.toml:4:15: "), "{e}");
        assert!(
            e.contains("advice \"wipeonfork\" applies only to private anonymous memory (EINVAL)"),
            "{e}"
        );
    }
    ops(concat!(
        r#"  { mmap = "a", size = "8KiB" },"#,
        "\n",
        r#"  { madvise = "a", advice = "wipeonfork" },"#,
        "\n",
        r#"  { fork = "c", op = [ { touch = "a", access = "read" } ] },"#,
        "\n",
        r#"  { madvise = "a", advice = "keeponfork" },"#,
    ));
}

#[test]
fn mremap_dontunmap_keeps_the_source_mapped_and_needs_to_and_the_size() {
    let o = ops(concat!(
        r#"  { mmap = "a", size = "8KiB" },"#,
        "\n",
        r#"  { mremap = "a", size = "8KiB", maymove = true, to = "b", dontunmap = true },"#,
        "\n",
        // Both are mapped now.
        r#"  { touch = "a" },"#,
        "\n",
        r#"  { touch = "b" },"#,
    ));
    assert!(
        matches!(&o[1], Op::Mremap(m) if m.dontunmap && m.to.is_some()),
        "{o:?}"
    );
    let e = err(concat!(
        r#"  { mmap = "a", size = "8KiB" },"#,
        "\n",
        r#"  { mremap = "a", size = "8KiB", maymove = true, dontunmap = true },"#,
    ));
    assert!(e.starts_with("workloads/x.toml:4:62: "), "{e}");
    assert!(e.contains("to = REGION"), "{e}");
    let e = err(concat!(
        r#"  { mmap = "a", size = "8KiB" },"#,
        "\n",
        r#"  { mremap = "a", size = "4KiB", maymove = true, to = "b", dontunmap = true },"#,
    ));
    assert!(e.starts_with("workloads/x.toml:4:72: "), "{e}");
    assert!(e.contains("keeps the size"), "{e}");
}
