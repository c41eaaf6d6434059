//! One test per kind of bad workload: each asserts the whole one-line
//! message, position included. Positions are counted by hand from the text
//! (line 1 is the first line of the literal, columns count from 1).

use workload::{parse, WorkloadError};

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

fn ok(text: &str) -> workload::plan::Workload {
    parse(text, FILE, 48).unwrap_or_else(|e| panic!("{e}"))
}

#[test]
fn syntax_error() {
    let text = "name = \"x\"\n[[thread]]\nop = [ { mmap = \"a\", size = } ]\n";
    let e = err(text);
    // The value is missing where the `}` stands: line 3, column 29.
    assert!(
        e.starts_with("workloads/x.toml:3:29: TOML syntax error: "),
        "{e}"
    );
    assert!(matches!(
        parse(text, FILE, 48),
        Err(WorkloadError::Syntax { .. })
    ));
}

#[test]
fn duplicate_toml_key_is_a_syntax_error() {
    let e = err("name = \"x\"\nname = \"y\"\n");
    assert!(
        e.starts_with("workloads/x.toml:2:1: TOML syntax error: "),
        "{e}"
    );
    assert!(e.contains("duplicate key"), "{e}");
}

#[test]
fn unknown_key_with_suggestion() {
    let text = "name = \"x\"\n[[thread]]\nop = [ { mmap = \"a\", size = \"4KiB\" },\n  { mmap = \"b\", sizee = \"4KiB\" } ]\n";
    assert_eq!(
        err(text),
        "workloads/x.toml:4:17: unknown key \"sizee\" in op 2 of thread block 1, did you mean \"size\"?"
    );
}

#[test]
fn unknown_key_of_another_verb() {
    let text = "[[thread]]\nop = [ { mmap = \"a\", size = \"4KiB\" }, { touch = \"a\", advice = \"free\" } ]\n";
    assert_eq!(
        err(text),
        "workloads/x.toml:2:54: unknown key \"advice\" in op 2 of thread block 1; it belongs to madvise, and touch takes access, pattern, stride, count, seed, part, latency, offset, len"
    );
}

#[test]
fn unknown_keys_at_the_top_and_in_blocks() {
    assert_eq!(
        err("nmae = \"x\"\n[[thread]]\nop = [ { mark = \"m\" } ]\n"),
        "workloads/x.toml:1:1: unknown key \"nmae\" at the top level, did you mean \"name\"?"
    );
    assert_eq!(
        err("[[thread]]\ncuont = 2\nop = [ { mark = \"m\" } ]\n"),
        "workloads/x.toml:2:1: unknown key \"cuont\" in thread block 1, did you mean \"count\"?"
    );
}

#[test]
fn unknown_verb_with_suggestion_and_verb_count() {
    assert_eq!(
        err("[[thread]]\nop = [ { mmapp = \"a\", size = \"4KiB\" } ]\n"),
        "workloads/x.toml:2:10: unknown verb \"mmapp\" in op 1 of thread block 1, did you mean \"mmap\"?"
    );
    assert_eq!(
        err("[[thread]]\nop = [ { size = \"4KiB\" } ]\n"),
        "workloads/x.toml:2:8: no verb in op 1 of thread block 1; expected exactly one of mmap, munmap, mprotect, madvise, mlock, munlock, touch, sync, sleep, barrier, mark, repeat, fork, waitpid, mremap, node_of, deferred_split, khugepaged"
    );
    assert_eq!(
        err("[[thread]]\nop = [ { mmap = \"a\", size = \"4KiB\", touch = \"a\" } ]\n"),
        "workloads/x.toml:2:37: two verbs (\"mmap\" and \"touch\") in op 1 of thread block 1; an op takes exactly one verb, give each its own op"
    );
}

#[test]
fn bad_unit() {
    let expected = "expected a size: an integer number of bytes, or a string with a binary unit (KiB, MiB, GiB, TiB, PiB, EiB) such as \"4KiB\", \"2MiB\", \"1GiB\"";
    assert_eq!(
        err("[[thread]]\nop = [ { mmap = \"a\", size = \"4KB\" } ]\n"),
        format!("workloads/x.toml:2:29: bad value for \"size\" in op 1 of thread block 1: {expected}, found \"4KB\"")
    );
    assert_eq!(
        err("[[thread]]\nop = [ { mmap = \"a\", size = \"4k\" } ]\n"),
        format!("workloads/x.toml:2:29: bad value for \"size\" in op 1 of thread block 1: {expected}, found \"4k\"")
    );
}

#[test]
fn bad_duration_and_choice() {
    assert_eq!(
        err("[[thread]]\nop = [ { sleep = 10 } ]\n"),
        "workloads/x.toml:2:18: bad value for \"sleep\" in op 1 of thread block 1: expected a duration: a string of whole digits with a unit (ns, us, ms, s) such as \"10ms\", \"2s\", \"500us\", found 10"
    );
    assert_eq!(
        err("[[thread]]\nop = [ { mmap = \"a\", size = \"4KiB\", kind = \"anno\" } ]\n"),
        "workloads/x.toml:2:44: bad value for \"kind\" in op 1 of thread block 1: expected one of \"anon\", \"file\", \"shmem\", found \"anno\", did you mean \"anon\"?"
    );
}

#[test]
fn wrong_types() {
    assert_eq!(
        err("[[thread]]\nop = [ { mmap = \"a\", size = true } ]\n"),
        "workloads/x.toml:2:29: bad value for \"size\" in op 1 of thread block 1: expected a size: an integer number of bytes, or a string with a binary unit (KiB, MiB, GiB, TiB, PiB, EiB) such as \"4KiB\", \"2MiB\", \"1GiB\", found true"
    );
    assert_eq!(
        err("[[thread]]\nop = [ { mmap = \"a\", size = \"4KiB\", populate = \"yes\" } ]\n"),
        "workloads/x.toml:2:48: bad value for \"populate\" in op 1 of thread block 1: expected true or false, found \"yes\""
    );
    assert_eq!(
        err("[thread]\nop = []\n"),
        "workloads/x.toml:1:1: bad value for \"thread\" at the top level: expected an array of tables ([[thread]] blocks), found a table"
    );
    assert_eq!(
        err("[[thread]]\nop = [ { barrier = false } ]\n"),
        "workloads/x.toml:2:20: bad value for \"barrier\" in op 1 of thread block 1: expected true (barrier = true), found false"
    );
}

#[test]
fn misaligned_size() {
    assert_eq!(
        err("[[thread]]\nop = [ { mmap = \"a\", size = 5000 } ]\n"),
        "workloads/x.toml:2:29: bad value for \"size\" in op 1 of thread block 1: expected a multiple of 4 KiB (4096 bytes), found 5000"
    );
    // Offsets and strides too, even when written with a unit.
    assert_eq!(
        err("[[thread]]\nop = [ { mmap = \"a\", size = \"1MiB\" }, { touch = \"a\", stride = \"6KiB\" } ]\n"),
        "workloads/x.toml:2:63: bad value for \"stride\" in op 2 of thread block 1: expected a multiple of 4 KiB (4096 bytes), found \"6KiB\" (6144 bytes)"
    );
}

#[test]
fn unmapped_region() {
    assert_eq!(
        err("[[thread]]\nop = [ { touch = \"a\" }, { mmap = \"a\", size = \"4KiB\" } ]\n"),
        "workloads/x.toml:2:18: region \"a\" is not mapped here in op 1 of thread block 1; mmap it earlier in this thread, or in another thread before a barrier both pass"
    );
}

#[test]
fn region_used_after_munmap() {
    let text = "[[thread]]\nop = [\n  { mmap = \"a\", size = \"4KiB\" },\n  { munmap = \"a\" },\n  { touch = \"a\" },\n]\n";
    assert_eq!(
        err(text),
        "workloads/x.toml:5:13: region \"a\" is not mapped here (the munmap at 4:14 unmapped it) in op 3 of thread block 1; mmap it earlier in this thread, or in another thread before a barrier both pass"
    );
}

#[test]
fn range_outside_region() {
    let text = "[[thread]]\nop = [\n  { mmap = \"a\", size = \"4MiB\" },\n  { touch = \"a\", offset = \"2MiB\", len = \"4MiB\" },\n]\n";
    assert_eq!(
        err(text),
        "workloads/x.toml:4:41: region \"a\" has size 4MiB here, but offset 2MiB + len 4MiB reaches past its end in op 2 of thread block 1"
    );
    let text = "[[thread]]\nop = [\n  { mmap = \"a\", size = \"4MiB\" },\n  { madvise = \"a\", advice = \"dontneed\", offset = \"4MiB\" },\n]\n";
    assert_eq!(
        err(text),
        "workloads/x.toml:4:50: region \"a\" has size 4MiB here, but offset 4MiB lies past its end in op 2 of thread block 1"
    );
}

#[test]
fn range_over_an_unmapped_part() {
    let text = "[[thread]]\nop = [\n  { mmap = \"a\", size = \"4MiB\" },\n  { munmap = \"a\", offset = \"1MiB\", len = \"1MiB\" },\n  { touch = \"a\" },\n]\n";
    assert_eq!(
        err(text),
        "workloads/x.toml:5:13: region \"a\" is not mapped at offset 1MiB (part of it was unmapped), inside the range of this touch in op 3 of thread block 1"
    );
}

#[test]
fn random_touch_without_count() {
    let text = "[[thread]]\nop = [\n  { mmap = \"a\", size = \"4MiB\" },\n  { touch = \"a\", pattern = \"random\" },\n]\n";
    assert_eq!(
        err(text),
        "workloads/x.toml:4:3: missing key \"count\" in op 2 of thread block 1: a random touch needs the number of accesses (count = N)"
    );
}

#[test]
fn duplicate_region_name() {
    let text = "[[thread]]\nop = [\n  { mmap = \"a\", size = \"4MiB\" },\n  { mmap = \"a\", size = \"2MiB\" },\n]\n";
    assert_eq!(
        err(text),
        "workloads/x.toml:4:12: region \"a\" is already mapped (by the mmap at 3:12, thread 0) in op 2 of thread block 1; munmap it first, or use another name"
    );
    // Mapping twice in a loop without munmap is the same mistake, on pass 2.
    let text = "[[thread]]\nop = [ { repeat = 3, op = [ { mmap = \"a\", size = \"4MiB\" } ] } ]\n";
    assert_eq!(
        err(text),
        "workloads/x.toml:2:38: region \"a\" is already mapped (by the mmap at 2:38, thread 0) in op 1.1 of thread block 1; munmap it first, or use another name"
    );
}

#[test]
fn remapping_after_munmap_is_legal() {
    let text = "[[thread]]\nop = [ { repeat = 3, op = [\n  { mmap = \"a\", size = \"4MiB\" },\n  { touch = \"a\" },\n  { munmap = \"a\" },\n] } ]\n";
    let w = ok(text);
    assert_eq!(w.regions.len(), 1);
}

#[test]
fn same_name_in_several_threads_without_tid() {
    let text = "[[thread]]\ncount = 2\nop = [ { mmap = \"buf\", size = \"4MiB\" } ]\n";
    assert_eq!(
        err(text),
        "workloads/x.toml:3:17: region \"buf\" is changed by thread 0 (mmap at 3:17) and used by thread 1 (mmap) between the same barriers in op 1 of thread block 1 (thread 1); give each thread its own region (a name with {tid}), or put a barrier between the two"
    );
    // With {tid} each thread has its own region.
    let w = ok("[[thread]]\ncount = 2\nop = [ { mmap = \"buf{tid}\", size = \"4MiB\" } ]\n");
    let names: Vec<&str> = w.regions.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["buf0", "buf1"]);
}

#[test]
fn region_mapped_by_another_thread_needs_a_barrier() {
    let without = "[[thread]]\nop = [ { mmap = \"s\", size = \"4MiB\" } ]\n[[thread]]\nop = [ { touch = \"s\" } ]\n";
    assert_eq!(
        err(without),
        "workloads/x.toml:4:18: region \"s\" is changed by thread 0 (mmap at 2:17) and used by thread 1 (touch) between the same barriers in op 1 of thread block 2; give each thread its own region (a name with {tid}), or put a barrier between the two"
    );
    let with = "[[thread]]\nop = [ { mmap = \"s\", size = \"4MiB\" }, { barrier = true } ]\n[[thread]]\nop = [ { barrier = true }, { touch = \"s\" } ]\n";
    let w = ok(with);
    assert_eq!(w.regions.len(), 1);
    // A later block that touches first and maps never: not mapped.
    let backwards = "[[thread]]\nop = [ { barrier = true }, { mmap = \"s\", size = \"4MiB\" } ]\n[[thread]]\nop = [ { touch = \"s\" }, { barrier = true } ]\n";
    assert_eq!(
        err(backwards),
        "workloads/x.toml:4:18: region \"s\" is not mapped here in op 1 of thread block 2; mmap it earlier in this thread, or in another thread before a barrier both pass"
    );
}

#[test]
fn barrier_counts_must_match() {
    let text = "[[thread]]\nop = [ { barrier = true }, { barrier = true } ]\n[[thread]]\nop = [ { repeat = 3, op = [ { barrier = true } ] } ]\n";
    assert_eq!(
        err(text),
        "workloads/x.toml:3:1: thread block 2 passes 3 barriers but thread block 1 passes 2; every thread must pass the same number of barriers, or the run would wait forever"
    );
}

#[test]
fn repeat_nesting_is_bounded() {
    let mut text = String::from("[[thread]]\nop = [ { mark = \"m\" }");
    for _ in 0..9 {
        text = text.replacen(
            "{ mark = \"m\" }",
            "{ repeat = 2, op = [ { mark = \"m\" } ] }",
            1,
        );
    }
    text.push_str(" ]\n");
    let e = err(&text);
    // Eight levels are fine.
    ok(&text.replacen(
        "{ repeat = 2, op = [ { mark = \"m\" } ] }",
        "{ mark = \"m\" }",
        1,
    ));
    assert!(
        e.ends_with("repeat nested more than 8 deep in op 1.1.1.1.1.1.1.1.1 of thread block 1"),
        "{e}"
    );
}

#[test]
fn split_must_divide_evenly() {
    let text = "[[thread]]\nop = [ { mmap = \"s\", size = \"4MiB\" }, { barrier = true } ]\n[[thread]]\ncount = 3\nop = [ { barrier = true }, { touch = \"s\", part = \"split\" } ]\n";
    assert_eq!(
        err(text),
        "workloads/x.toml:5:50: bad value for \"part\" in op 2 of thread block 2 (thread 1): expected a range that splits into equal 4 KiB multiples among the block's 3 threads (a multiple of 12KiB), found \"split\" over 4MiB"
    );
    let good = text.replace("4MiB", "3MiB");
    let w = ok(&good);
    let slices: Vec<(u64, u64)> = w.threads[1..]
        .iter()
        .map(|t| match &t.ops[1] {
            workload::plan::Op::Touch(t) => (t.range.offset, t.range.len),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(
        slices,
        [(0, 1 << 20), (1 << 20, 1 << 20), (2 << 20, 1 << 20)]
    );
}

#[test]
fn access_must_match_protection() {
    let text = "[[thread]]\nop = [\n  { mmap = \"a\", size = \"4MiB\", prot = \"r\" },\n  { touch = \"a\" },\n]\n";
    assert_eq!(
        err(text),
        "workloads/x.toml:4:13: region \"a\" is mapped with prot \"r\" at offset 0, so a write there would die of SIGSEGV in op 2 of thread block 1; mprotect it to \"rw\" first, or touch with access = \"read\""
    );
}

#[test]
fn mlock_cannot_populate_prot_none() {
    let none = "[[thread]]\nop = [\n  { mmap = \"a\", size = \"1MiB\" },\n  { mprotect = \"a\", prot = \"none\", offset = \"256KiB\", len = \"256KiB\" },\n  { mlock = \"a\" },\n]\n";
    assert_eq!(
        err(none),
        "workloads/x.toml:5:13: region \"a\" is mapped with prot \"none\" at offset 256KiB, and mlock cannot fault it in (ENOMEM) in op 3 of thread block 1; mprotect it first, or use onfault = true"
    );
    // MLOCK_ONFAULT populates nothing; a range that leaves the PROT_NONE
    // part out is populated whole.
    ok(&none.replace("{ mlock = \"a\" }", "{ mlock = \"a\", onfault = true }"));
    ok(&none.replace("{ mlock = \"a\" }", "{ mlock = \"a\", len = \"256KiB\" }"));
}

#[test]
fn collapse_needs_a_mapping_that_can_hold_a_thp() {
    let small = "[[thread]]\nop = [\n  { mmap = \"a\", size = \"1MiB\" },\n  { madvise = \"a\", advice = \"collapse\" },\n]\n";
    assert_eq!(
        err(small),
        "workloads/x.toml:4:15: region \"a\" is 1MiB long, and advice \"collapse\" needs a mapping that holds a whole aligned 2MiB range (EINVAL) in op 2 of thread block 1"
    );
    // 2 MiB may hold one (where it lands decides); so may a part of a
    // larger region, which the run leaves alone.
    ok(&small.replace("\"1MiB\"", "\"2MiB\""));
    ok(&small
        .replace("\"1MiB\"", "\"4MiB\"")
        .replace("\"collapse\"", "\"collapse\", len = \"1MiB\""));
}

#[test]
fn advice_must_suit_the_mapping() {
    let free_file = "[[thread]]\nop = [\n  { mmap = \"f\", size = \"4MiB\", kind = \"file\" },\n  { madvise = \"f\", advice = \"free\" },\n]\n";
    assert_eq!(
        err(free_file),
        "workloads/x.toml:4:15: region \"f\" is a private file mapping, and advice \"free\" applies only to private anonymous memory (EINVAL) in op 2 of thread block 1"
    );
    let locked = "[[thread]]\nop = [\n  { mmap = \"a\", size = \"4MiB\", locked = true },\n  { madvise = \"a\", advice = \"dontneed\" },\n]\n";
    assert_eq!(
        err(locked),
        "workloads/x.toml:4:15: region \"a\" is locked at offset 0, and Linux refuses advice \"dontneed\" on locked memory (EINVAL) in op 2 of thread block 1; munlock it first"
    );
    let unlocked = locked.replace("  { madvise", "  { munlock = \"a\" },\n  { madvise");
    ok(&unlocked);
    // MADV_COLD, like MADV_PAGEOUT, is refused on locked memory (can_madv_lru_vma).
    let cold = locked.replace("\"dontneed\"", "\"cold\"");
    assert_eq!(
        err(&cold),
        "workloads/x.toml:4:15: region \"a\" is locked at offset 0, and Linux refuses advice \"cold\" on locked memory (EINVAL) in op 2 of thread block 1; munlock it first"
    );
    ok(&cold.replace("  { madvise", "  { munlock = \"a\" },\n  { madvise"));
    // A misspelt advice is named with the closest one.
    let colt = locked.replace("\"dontneed\"", "\"colt\"");
    assert!(
        err(&colt).contains("did you mean \"cold\"?"),
        "{}",
        err(&colt)
    );
}

#[test]
fn placeholders_and_reserved_names() {
    assert_eq!(
        err("[[thread]]\nop = [ { mmap = \"buf{id}\", size = \"4KiB\" } ]\n"),
        "workloads/x.toml:2:17: bad value for \"mmap\" in op 1 of thread block 1: expected a region name (a non-empty string; {tid} is the only placeholder), found \"buf{id}\""
    );
    assert_eq!(
        err("[[thread]]\nop = [ { mark = \"end\" } ]\n"),
        "workloads/x.toml:2:17: bad value for \"mark\" in op 1 of thread block 1: expected a non-empty label other than \"end\" (the implicit last mark), found \"end\""
    );
    assert_eq!(
        err("[[thread]]\nop = [ { mmap = \"a\", size = \"4KiB\", file = \"cold\" } ]\n"),
        "workloads/x.toml:2:44: bad value for \"file\" in op 1 of thread block 1: expected no \"file\" key: it applies only to kind = \"file\", found \"cold\""
    );
}

#[test]
fn missing_pieces() {
    assert_eq!(
        err("name = \"x\"\n"),
        "workloads/x.toml:1:1: missing key \"thread\" at the top level: a workload needs at least one [[thread]] block"
    );
    assert_eq!(
        err("[[thread]]\nop = [ { mmap = \"a\" } ]\n"),
        "workloads/x.toml:2:8: missing key \"size\" in op 1 of thread block 1: mmap needs the size of the mapping"
    );
}

#[test]
fn default_range_must_not_change_between_passes() {
    let text = "[[thread]]\nop = [\n  { mmap = \"a\", size = \"4MiB\" },\n  { repeat = 2, op = [\n    { touch = \"a\" },\n    { munmap = \"a\" },\n    { mmap = \"a\", size = \"2MiB\" },\n  ] },\n]\n";
    assert_eq!(
        err(text),
        "workloads/x.toml:5:15: region \"a\" gives this op the range 0+4MiB on one pass and 0+2MiB on another (the region was re-mapped with another size) in op 2.1 of thread block 1; give offset and len explicitly"
    );
}

#[test]
fn fixed_addresses() {
    let clash = "[[thread]]\nop = [\n  { mmap = \"a\", size = \"8KiB\", addr = 0x200000000000 },\n  { mmap = \"b\", size = \"8KiB\", addr = 0x200000001000 },\n]\n";
    assert_eq!(
        err(clash),
        "workloads/x.toml:4:39: region \"b\" has addr 0x200000001000, which overlaps region \"a\" at 0x200000000000 while both can be mapped"
    );
    let w = ok(&clash.replace("0x200000001000", "0x200000002000"));
    assert_eq!(w.regions[1].addr, 0x2000_0000_2000);
    let low = "[[thread]]\nop = [ { mmap = \"a\", size = \"8KiB\", addr = 4096 } ]\n";
    assert!(err(low).starts_with("workloads/x.toml:2:44: region \"a\" has addr 0x1000, but"));
}

#[test]
fn limits_and_va_bits() {
    assert_eq!(
        parse("", FILE, 31).unwrap_err().to_string(),
        "address spaces of 31 bits are not supported (expected 32 to 64 bits)"
    );
    let e = err("[[thread]]\ncount = 2000\nop = [ { mark = \"m\" } ]\n");
    assert_eq!(
        e,
        "workloads/x.toml:2:9: bad value for \"count\" in thread block 1: expected a whole number from 1 to 1024, found 2000"
    );
    // 50 GiB does not fit in a 39-bit space above its 64 GiB base... it does;
    // 1 TiB does not.
    let big = "[[thread]]\nop = [ { mmap = \"a\", size = \"1TiB\", noreserve = true } ]\n";
    assert!(parse(big, FILE, 48).is_ok());
    assert!(parse(big, FILE, 39)
        .unwrap_err()
        .to_string()
        .starts_with("workloads/x.toml:2:17: region \"a\" does not fit"));
}

#[test]
fn errors_stay_on_one_line_with_hostile_keys() {
    let e = err("\"a\\nb\" = 1\n[[thread]]\nop = [ { mark = \"m\" } ]\n");
    assert_eq!(e, "workloads/x.toml:1:1: unknown key \"a\\nb\" at the top level; the top level takes name, description, requires and [[thread]] blocks");
}

#[test]
fn fork_in_a_workload_of_two_threads() {
    let text = "[[thread]]\ncount = 2\nop = [ { fork = \"c\", op = [ { mark = \"x\" } ] } ]\n";
    assert_eq!(
        err(text),
        "workloads/x.toml:3:17: fork \"c\" in a workload of 2 threads; fork needs a workload of one thread (in op 1 of thread block 1)"
    );
}

#[test]
fn mmap_inside_a_fork() {
    let text =
        "[[thread]]\nop = [ { fork = \"c\", op = [ { mmap = \"a\", size = \"4KiB\" } ] } ]\n";
    let e = err(text);
    assert!(
        e.starts_with("workloads/x.toml:2:38: mmap (map the region before the fork) inside fork \"c\" is not supported"),
        "{e}"
    );
}

#[test]
fn fork_inside_a_repeat() {
    let text = "[[thread]]\nop = [ { repeat = 2, op = [ { fork = \"c\", op = [ { mark = \"x\" } ] } ] } ]\n";
    let e = err(text);
    assert!(
        e.starts_with("workloads/x.toml:2:38: fork \"c\" inside a repeat"),
        "{e}"
    );
}

#[test]
fn fork_name_and_unmapped_region_in_child() {
    let e = err("[[thread]]\nop = [ { fork = \"a.b\", op = [ { mark = \"x\" } ] } ]\n");
    assert!(e.starts_with("workloads/x.toml:2:17: "), "{e}");
    assert!(e.contains("fork"), "{e}");
    // A region the child unmaps is still mapped in the parent afterwards;
    // one the parent never mapped is refused inside the child.
    let w = ok("[[thread]]\nop = [ { mmap = \"a\", size = \"8KiB\" },\n  { fork = \"c\", op = [ { munmap = \"a\" }, { mark = \"gone\" } ] },\n  { touch = \"a\" } ]\n");
    assert!(matches!(
        w.threads[0].ops[1],
        workload::plan::Op::Fork { .. }
    ));
    let e = err("[[thread]]\nop = [ { fork = \"c\", op = [ { touch = \"a\" } ] } ]\n");
    assert!(e.starts_with("workloads/x.toml:2:39: "), "{e}");
    assert!(e.contains("not mapped"), "{e}");
}

#[test]
fn node_of_takes_the_range_and_stride_keys_only() {
    let text = "[[thread]]\nop = [ { mmap = \"a\", size = \"64KiB\" },\n  { node_of = \"a\", access = \"write\" } ]\n";
    let e = err(text);
    assert!(
        e.starts_with("workloads/x.toml:3:20: unknown key \"access\" in op 2 of thread block 1"),
        "{e}"
    );
    assert!(e.contains("node_of takes stride, offset, len"), "{e}");
    let bad = "[[thread]]\nop = [ { mmap = \"a\", size = \"64KiB\" },\n  { node_of = \"a\", stride = \"3KiB\" } ]\n";
    assert_eq!(
        err(bad),
        "workloads/x.toml:3:29: bad value for \"stride\" in op 2 of thread block 1: expected a multiple of 4 KiB (4096 bytes), found \"3KiB\" (3072 bytes)"
    );
}

#[test]
fn node_of_an_unreadable_range_is_refused_where_it_is_written() {
    let text = "[[thread]]\nop = [ { mmap = \"a\", size = \"64KiB\", prot = \"none\" },\n  { node_of = \"a\" } ]\n";
    let e = err(text);
    assert!(e.starts_with("workloads/x.toml:3:15: "), "{e}");
    assert!(
        e.contains("get_mempolicy's page lookup there would fail (EFAULT)"),
        "{e}"
    );
}

#[test]
fn node_of_plans_one_lookup_per_stride_step() {
    let w = ok("[[thread]]\nop = [ { mmap = \"a\", size = \"64KiB\" },\n  { node_of = \"a\", offset = \"8KiB\", len = \"32KiB\", stride = \"16KiB\" } ]\n");
    let workload::plan::Op::NodeOf(t) = &w.threads[0].ops[1] else {
        panic!("{:?}", w.threads[0].ops[1]);
    };
    let offsets: Vec<u64> = t.offsets().collect();
    assert_eq!(offsets, vec![8 << 10, 24 << 10]);
}

/// `requires`: each need once, not both, nothing else; the plan keeps them.
#[test]
fn requires_takes_known_needs_once() {
    let ops = "[[thread]]\nop = [{ mmap = \"a\", size = \"4KiB\" }]\n";
    let w = ok(&format!("requires = [\"swap\"]\n{ops}"));
    assert_eq!(w.requires, vec![workload::plan::Need::Swap]);
    let w = ok(&format!(
        "requires = [\"swap\", \"swap-vma-readahead\"]\n{ops}"
    ));
    assert_eq!(
        w.requires,
        vec![
            workload::plan::Need::Swap,
            workload::plan::Need::SwapVmaReadahead
        ]
    );
    let w = ok(ops);
    assert!(w.requires.is_empty());
    for (bad, col, what) in [
        ("requires = [\"swap\", \"swap\"]", 21, "each need once"),
        ("requires = [\"no-swap\", \"swap\"]", 24, "not both"),
        (
            "requires = [\"swap-vma-readahead\", \"no-swap\"]",
            35,
            "not both",
        ),
        ("requires = \"swap\"", 12, "an array of needs"),
        (
            "requires = [1]",
            13,
            "\"swap\", \"no-swap\", \"swap-vma-readahead\"",
        ),
    ] {
        let e = err(&format!("{bad}\n{ops}"));
        assert!(e.starts_with(&format!("{FILE}:1:{col}: ")), "{e}");
        assert!(e.contains(what), "{e}");
        assert_eq!(e.lines().count(), 1);
    }
}
