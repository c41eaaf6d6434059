//! `shmem_huge` (a shmem region on a tmpfs with its own `huge=` option) and
//! MADV_COLLAPSE of shmem: planned as written, and bad input refused with
//! the place (file:line:column, the key, what was expected).

mod one_thread;

use one_thread::{err, ops};
use workload::plan::{Op, ShmemHuge};

#[test]
fn each_option_is_planned_and_a_memfd_has_none() {
    for (name, want) in [
        ("never", ShmemHuge::Never),
        ("always", ShmemHuge::Always),
        ("within_size", ShmemHuge::WithinSize),
        ("advise", ShmemHuge::Advise),
    ] {
        let o = ops(&format!(
            r#"  {{ mmap = "s", size = "4MiB", kind = "shmem", shmem_huge = "{name}" }},"#
        ));
        let Op::Mmap(m) = &o[0] else { panic!("{o:?}") };
        assert_eq!(m.shmem_huge, Some(want), "{name}");
        assert!(m.shared);
    }
    let o = ops(r#"  { mmap = "s", size = "4MiB", kind = "shmem" },"#);
    let Op::Mmap(m) = &o[0] else { panic!("{o:?}") };
    assert_eq!(m.shmem_huge, None);
}

#[test]
fn shmem_huge_applies_only_to_shmem() {
    let e = err(r#"  { mmap = "a", size = "4MiB", shmem_huge = "always" },"#);
    assert!(e.starts_with("workloads/x.toml:3:45: "), "{e}");
    assert!(e.contains("\"shmem_huge\""), "{e}");
    assert!(
        e.contains("kind = \\\"shmem\\\"") || e.contains("kind = \"shmem\""),
        "{e}"
    );

    let e = err(
        r#"  { mmap = "f", size = "4MiB", kind = "file", shared = true, shmem_huge = "always" },"#,
    );
    assert!(e.starts_with("workloads/x.toml:3:75: "), "{e}");
    assert!(e.contains("\"shmem_huge\""), "{e}");
}

#[test]
fn an_unknown_option_is_refused_with_a_suggestion() {
    let e = err(r#"  { mmap = "s", size = "4MiB", kind = "shmem", shmem_huge = "within-size" },"#);
    assert!(e.starts_with("workloads/x.toml:3:61: "), "{e}");
    assert!(e.contains("\"within_size\""), "{e}");
    let e = err(r#"  { mmap = "s", size = "4MiB", kind = "shmem", shmem_huge = true },"#);
    assert!(e.starts_with("workloads/x.toml:3:61: "), "{e}");
    assert!(e.contains("one of"), "{e}");
}

#[test]
fn reclaim_of_shmem_thps_is_taken_on_every_policy() {
    for huge in ["always", "within_size", "advise"] {
        for advice in ["pageout", "cold"] {
            let o = ops(&format!(
                concat!(
                    r#"  {{ mmap = "s", size = "4MiB", kind = "shmem", shmem_huge = "{}" }},"#,
                    "\n",
                    r#"  {{ madvise = "s", advice = "{}" }},"#
                ),
                huge, advice
            ));
            assert!(matches!(o[1], Op::Madvise { .. }), "{o:?}");
        }
    }
    let o = ops(concat!(
        r#"  { mmap = "s", size = "4MiB", kind = "shmem", shmem_huge = "never" },"#,
        "\n",
        r#"  { madvise = "s", advice = "pageout" },"#
    ));
    assert_eq!(o.len(), 2);
}

#[test]
fn collapse_takes_shmem_but_not_a_regular_file() {
    for map in [
        r#"  { mmap = "s", size = "4MiB", kind = "shmem", shmem_huge = "never" },"#,
        r#"  { mmap = "s", size = "4MiB", kind = "shmem" },"#,
        r#"  { mmap = "s", size = "4MiB", shared = true },"#,
    ] {
        let o = ops(&format!(
            "{map}\n  {{ madvise = \"s\", advice = \"collapse\" }},"
        ));
        assert!(matches!(o[1], Op::Madvise { .. }), "{o:?}");
    }
    let e = err(concat!(
        r#"  { mmap = "f", size = "4MiB", kind = "file", shared = true },"#,
        "\n",
        r#"  { madvise = "f", advice = "collapse" },"#
    ));
    assert!(e.starts_with("workloads/x.toml:4:15: "), "{e}");
    assert!(e.contains("EINVAL"), "{e}");
}
