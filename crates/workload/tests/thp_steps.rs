//! The `deferred_split` and `khugepaged` steps: what they become in the
//! plan, and the bad input refused with its place.

use workload::parse;
use workload::plan::Op;

const FILE: &str = "w.toml";

fn err(text: &str) -> String {
    match parse(text, FILE, 48) {
        Ok(w) => panic!("accepted: {w:?}"),
        Err(e) => e.to_string(),
    }
}

#[test]
fn the_steps_become_their_ops() {
    let w = parse(
        "[[thread]]\nop = [ { mmap = \"a\", size = \"4MiB\" },\n  { khugepaged = \"a\", offset = \"2MiB\" },\n  { deferred_split = true } ]\n",
        FILE,
        48,
    )
    .unwrap();
    let ops = &w.threads[0].ops;
    match &ops[1] {
        Op::Khugepaged { region, range } => {
            assert_eq!(*region, 0);
            assert_eq!((range.offset, range.len), (2 << 20, 2 << 20));
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(ops[2], Op::DeferredSplit);
}

#[test]
fn deferred_split_takes_only_true() {
    let e = err("[[thread]]\nop = [ { deferred_split = false } ]\n");
    assert!(e.starts_with("w.toml:2:27: "), "{e}");
    assert!(e.contains("true (deferred_split = true)"), "{e}");
    let e = err("[[thread]]\nop = [ { deferred_split = true, len = \"4KiB\" } ]\n");
    assert!(e.starts_with("w.toml:2:33: "), "{e}");
    assert!(e.contains("deferred_split takes no other key"), "{e}");
}

#[test]
fn khugepaged_needs_private_anonymous_memory() {
    let e = err(
        "[[thread]]\nop = [ { mmap = \"f\", size = \"2MiB\", kind = \"shmem\" },\n  { khugepaged = \"f\" } ]\n",
    );
    assert!(e.starts_with("w.toml:3:18: "), "{e}");
    assert!(
        e.contains("khugepaged is modelled only for private anonymous memory"),
        "{e}"
    );
}

#[test]
fn deferred_split_is_refused_beside_a_cold_file() {
    let e = err(
        "[[thread]]\nop = [ { mmap = \"f\", size = \"2MiB\", kind = \"file\", file = \"cold\" },\n  { deferred_split = true } ]\n",
    );
    assert!(e.starts_with("w.toml:3:22: "), "{e}");
    assert!(e.contains("maps a cold file (at 2:"), "{e}");
}
