//! `fork` with `wait = false` and `waitpid`: what is accepted, and each
//! refusal with its place (line:column counted by hand from the text).

use workload::parse;
use workload::plan::Op;

const FILE: &str = "workloads/x.toml";

fn err(text: &str) -> String {
    match parse(text, FILE, 48) {
        Ok(w) => panic!("accepted: {w:?}"),
        Err(e) => {
            let s = e.to_string();
            assert!(!s.contains('\n'), "two lines: {s}");
            s
        }
    }
}

const MAP: &str = "[[thread]]\nop = [ { mmap = \"a\", size = \"8KiB\" },\n";

#[test]
fn a_running_child_and_its_waitpid_become_plan_ops() {
    let text = format!(
        "{MAP}  {{ fork = \"c\", wait = false, op = [ {{ touch = \"a\" }} ] }},\n  {{ touch = \"a\" }},\n  {{ waitpid = \"c\" }},\n  {{ fork = \"d\", op = [ {{ mark = \"x\" }} ] }} ]\n"
    );
    let w = parse(&text, FILE, 48).unwrap_or_else(|e| panic!("{e}"));
    let ops = &w.threads[0].ops;
    assert!(matches!(&ops[1], Op::Fork { name, wait: false, .. } if name == "c"));
    assert!(matches!(&ops[2], Op::Touch(_)));
    assert!(matches!(&ops[3], Op::Waitpid(n) if n == "c"));
    // The key left out keeps today's meaning: the thread waits.
    assert!(matches!(&ops[4], Op::Fork { name, wait: true, .. } if name == "d"));
}

#[test]
fn waitpid_of_an_unknown_child() {
    let e = err(&format!("{MAP}  {{ waitpid = \"nobody\" }} ]\n"));
    assert_eq!(
        e,
        "workloads/x.toml:3:15: waitpid \"nobody\" names no child; it needs the name of a fork with wait = false before it (in op 2 of thread block 1)"
    );
}

#[test]
fn waitpid_before_its_fork() {
    let e = err(&format!(
        "{MAP}  {{ waitpid = \"c\" }},\n  {{ fork = \"c\", wait = false, op = [ {{ touch = \"a\" }} ] }} ]\n"
    ));
    assert_eq!(
        e,
        "workloads/x.toml:3:15: waitpid \"c\" before its fork (at 4:12); wait for a child after forking it (in op 2 of thread block 1)"
    );
}

#[test]
fn waitpid_of_a_waiting_fork() {
    let e = err(&format!(
        "{MAP}  {{ fork = \"c\", op = [ {{ touch = \"a\" }} ] }},\n  {{ waitpid = \"c\" }} ]\n"
    ));
    assert_eq!(
        e,
        "workloads/x.toml:4:15: waitpid \"c\", but fork \"c\" (at 3:12) waits for its child itself; give that fork wait = false (in op 3 of thread block 1)"
    );
}

#[test]
fn waitpid_twice() {
    let e = err(&format!(
        "{MAP}  {{ fork = \"c\", wait = false, op = [ {{ touch = \"a\" }} ] }},\n  {{ waitpid = \"c\" }},\n  {{ waitpid = \"c\" }} ]\n"
    ));
    assert_eq!(
        e,
        "workloads/x.toml:5:15: a second waitpid \"c\" (the first is at 4:15); a child is waited for once (in op 4 of thread block 1)"
    );
}

#[test]
fn a_second_fork_while_a_child_runs() {
    let e = err(&format!(
        "{MAP}  {{ fork = \"c\", wait = false, op = [ {{ touch = \"a\" }} ] }},\n  {{ fork = \"d\", op = [ {{ mark = \"x\" }} ] }} ]\n"
    ));
    assert_eq!(
        e,
        "workloads/x.toml:4:12: fork \"d\" while child \"c\" (forked with wait = false at 3:12) still runs; one child at a time: add { waitpid = \"c\" } before this fork (in op 3 of thread block 1)"
    );
}

#[test]
fn waitpid_inside_a_repeat_or_a_child() {
    let e = err(&format!(
        "{MAP}  {{ fork = \"c\", wait = false, op = [ {{ touch = \"a\" }} ] }},\n  {{ repeat = 2, op = [ {{ waitpid = \"c\" }} ] }} ]\n"
    ));
    assert!(
        e.starts_with("workloads/x.toml:4:36: waitpid \"c\" inside a repeat"),
        "{e}"
    );
    let e = err(&format!(
        "{MAP}  {{ fork = \"c\", wait = false, op = [ {{ waitpid = \"c\" }} ] }} ]\n"
    ));
    assert!(
        e.starts_with("workloads/x.toml:3:50: waitpid (the child has no child) inside fork \"c\""),
        "{e}"
    );
}

#[test]
fn system_wide_steps_while_a_child_runs() {
    let e = err(&format!(
        "{MAP}  {{ fork = \"c\", wait = false, op = [ {{ touch = \"a\" }} ] }},\n  {{ khugepaged = \"a\" }} ]\n"
    ));
    assert!(
        e.starts_with("workloads/x.toml:4:18: khugepaged while child \"c\" (forked with wait = false at 3:12) runs"),
        "{e}"
    );
    // After the waitpid it is the parent's own again.
    parse(
        &format!(
            "{MAP}  {{ fork = \"c\", wait = false, op = [ {{ touch = \"a\" }} ] }},\n  {{ waitpid = \"c\" }},\n  {{ khugepaged = \"a\" }} ]\n"
        ),
        FILE,
        48,
    )
    .unwrap_or_else(|e| panic!("{e}"));
}

#[test]
fn wait_must_be_a_boolean() {
    let e = err(&format!(
        "{MAP}  {{ fork = \"c\", wait = \"no\", op = [ {{ touch = \"a\" }} ] }} ]\n"
    ));
    assert!(e.starts_with("workloads/x.toml:3:24: "), "{e}");
    assert!(e.contains("wait"), "{e}");
}

#[test]
fn the_child_checks_against_the_regions_at_the_fork() {
    // The parent unmaps a region the running child still uses: legal (the
    // child has its own copy of the mapping) ...
    parse(
        &format!(
            "{MAP}  {{ fork = \"c\", wait = false, op = [ {{ sleep = \"1ms\" }}, {{ touch = \"a\" }} ] }},\n  {{ munmap = \"a\" }},\n  {{ waitpid = \"c\" }} ]\n"
        ),
        FILE,
        48,
    )
    .unwrap_or_else(|e| panic!("{e}"));
    // ... but the parent may not use it after its own munmap.
    let e = err(&format!(
        "{MAP}  {{ fork = \"c\", wait = false, op = [ {{ touch = \"a\" }} ] }},\n  {{ munmap = \"a\" }},\n  {{ touch = \"a\" }} ]\n"
    ));
    assert!(e.starts_with("workloads/x.toml:5:13: "), "{e}");
}
