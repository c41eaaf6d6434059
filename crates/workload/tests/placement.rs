//! Property tests of the placement rule on random multi-threaded workloads.
//!
//! The oracle is independent of the checker: it runs the plan under random
//! interleavings (barriers respected, loops unrolled) and, at every mmap,
//! asserts that the new mapping overlaps no mapping live at that moment.

use proptest::prelude::*;
use workload::placement::{alignment, base};
use workload::plan::{Op, Workload};

const SIZES: &[&str] = &["4KiB", "64KiB", "2MiB", "3MiB", "4MiB"];
const SLOTS: usize = 3;
const SHARED: usize = 2;

/// Random choices, repaired into a valid workload by `render`.
#[derive(Debug, Clone)]
struct Gen {
    phases: usize,
    /// Thread counts of blocks 2.. (block 1 always has one thread).
    counts: Vec<usize>,
    /// Per block, per phase: actions `(kind, slot, size)`.
    actions: Vec<Vec<Vec<(u8, usize, usize)>>>,
    va_bits: u32,
}

fn gen() -> impl Strategy<Value = Gen> {
    (
        1usize..=3,
        prop::collection::vec(1usize..=2, 0..=2),
        prop::sample::select(vec![39u32, 48, 57]),
    )
        .prop_flat_map(|(phases, counts, va_bits)| {
            let blocks = counts.len() + 1;
            let action = (0u8..4, 0usize..SLOTS.max(SHARED), 0usize..SIZES.len());
            let per_phase = prop::collection::vec(action, 0..5);
            let per_block = prop::collection::vec(per_phase, phases);
            (
                Just(phases),
                Just(counts),
                prop::collection::vec(per_block, blocks),
                Just(va_bits),
            )
        })
        .prop_map(|(phases, counts, actions, va_bits)| Gen {
            phases,
            counts,
            actions,
            va_bits,
        })
}

/// Turns the choices into TOML that obeys the format's rules: a private
/// slot is mapped only when unmapped; block 1 maps and unmaps the shared
/// regions; other blocks touch a shared region only in phases where it was
/// mapped before the phase began and block 1 leaves it alone.
fn render(g: &Gen) -> String {
    // Block 1's shared regions: mapped at the end of each phase, changed in it.
    let mut mapped_end = vec![[false; SHARED]; g.phases];
    let mut changed = vec![[false; SHARED]; g.phases];
    let mut now = [false; SHARED];
    for (p, actions) in g.actions[0].iter().enumerate() {
        for &(kind, slot, _) in actions {
            if kind == 3 {
                now[slot % SHARED] = !now[slot % SHARED];
                changed[p][slot % SHARED] = true;
            }
        }
        mapped_end[p] = now;
    }
    let stable = |p: usize, s: usize| p > 0 && mapped_end[p - 1][s] && !changed[p][s];

    let mut out = String::from("name = \"prop\"\n");
    for (b, phases) in g.actions.iter().enumerate() {
        let mut ops = Vec::new();
        let mut mapped = [false; SLOTS];
        let mut shared = [false; SHARED];
        for (p, actions) in phases.iter().enumerate() {
            if p > 0 {
                ops.push("{ barrier = true }".to_string());
            }
            for &(kind, slot, size) in actions {
                let size = SIZES[size];
                if kind == 3 {
                    let s = slot % SHARED;
                    if b == 0 {
                        if shared[s] {
                            ops.push(format!("{{ munmap = \"s{s}\" }}"));
                        } else {
                            ops.push(format!("{{ mmap = \"s{s}\", size = \"{size}\" }}"));
                        }
                        shared[s] = !shared[s];
                    } else if stable(p, s) {
                        ops.push(format!("{{ touch = \"s{s}\", access = \"read\" }}"));
                    }
                    continue;
                }
                let slot = slot % SLOTS;
                let name = format!("p{slot}_{{tid}}");
                match (kind, mapped[slot]) {
                    (2, false) => ops.push(format!(
                        "{{ repeat = {}, op = [ {{ mmap = \"{name}\", size = \"{size}\" }}, {{ touch = \"{name}\" }}, {{ munmap = \"{name}\" }} ] }}",
                        1 + size.len() % 3
                    )),
                    (_, false) => {
                        ops.push(format!("{{ mmap = \"{name}\", size = \"{size}\" }}"));
                        mapped[slot] = true;
                    }
                    (_, true) => {
                        ops.push(format!("{{ munmap = \"{name}\" }}"));
                        mapped[slot] = false;
                    }
                }
            }
        }
        if ops.is_empty() {
            ops.push("{ mark = \"idle\" }".to_string());
        }
        let count = if b == 0 { 1 } else { g.counts[b - 1] };
        out.push_str(&format!("\n[[thread]]\ncount = {count}\nop = [\n"));
        for op in ops {
            out.push_str(&format!("  {op},\n"));
        }
        out.push_str("]\n");
    }
    out
}

/// One thread's plan flattened: loops unrolled.
#[derive(Debug, Clone, Copy)]
enum Flat {
    Map(usize, u64),
    Unmap(usize),
    Barrier,
}

fn flatten(ops: &[Op], out: &mut Vec<Flat>) {
    for op in ops {
        match op {
            Op::Mmap(m) => out.push(Flat::Map(m.region, m.size)),
            Op::Munmap { region, .. } => out.push(Flat::Unmap(*region)),
            Op::Barrier => out.push(Flat::Barrier),
            Op::Repeat { times, ops } => {
                for _ in 0..*times {
                    flatten(ops, out);
                }
            }
            _ => {}
        }
    }
}

/// Runs the threads in the order `schedule` picks, asserting at every mmap
/// that no live mapping overlaps the new one.
fn run_interleaving(w: &Workload, schedule: &[u8]) -> Result<(), TestCaseError> {
    let progs: Vec<Vec<Flat>> = w
        .threads
        .iter()
        .map(|t| {
            let mut v = Vec::new();
            flatten(&t.ops, &mut v);
            v
        })
        .collect();
    let mut pc = vec![0usize; progs.len()];
    let mut live: Vec<(usize, u64)> = Vec::new();
    let mut picks = schedule.iter().cycle();
    loop {
        let runnable: Vec<usize> = (0..progs.len())
            .filter(|&t| matches!(progs[t].get(pc[t]), Some(Flat::Map(..) | Flat::Unmap(_))))
            .collect();
        if runnable.is_empty() {
            let at_barrier: Vec<usize> = (0..progs.len())
                .filter(|&t| matches!(progs[t].get(pc[t]), Some(Flat::Barrier)))
                .collect();
            if at_barrier.is_empty() {
                return Ok(());
            }
            prop_assert_eq!(
                at_barrier.len(),
                progs.len(),
                "a thread finished while others wait"
            );
            for t in at_barrier {
                pc[t] += 1;
            }
            continue;
        }
        let t = runnable[usize::from(*picks.next().unwrap_or(&0)) % runnable.len()];
        match progs[t][pc[t]] {
            Flat::Map(r, size) => {
                let a = w.regions[r].addr;
                for &(other, osize) in &live {
                    let b = w.regions[other].addr;
                    prop_assert!(
                        a + size <= b || b + osize <= a,
                        "{} at {a:#x}+{size:#x} overlaps live {} at {b:#x}+{osize:#x}",
                        w.regions[r].name,
                        w.regions[other].name
                    );
                }
                live.push((r, size));
            }
            Flat::Unmap(r) => live.retain(|&(x, _)| x != r),
            Flat::Barrier => unreachable!(),
        }
        pc[t] += 1;
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn live_regions_never_overlap(g in gen(), schedules in prop::collection::vec(prop::collection::vec(any::<u8>(), 1..64), 8)) {
        let text = render(&g);
        // Every generated workload is valid: the checker must accept it.
        let w = workload::parse(&text, "prop.toml", g.va_bits)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        for s in &schedules {
            run_interleaving(&w, s)?;
        }
    }

    #[test]
    fn placement_is_aligned_and_deterministic(g in gen()) {
        let text = render(&g);
        let w = workload::parse(&text, "prop.toml", g.va_bits)
            .map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        for r in &w.regions {
            prop_assert_eq!(r.addr % alignment(r.size), 0, "{:?}", r);
            prop_assert!(r.addr >= base(g.va_bits), "{:?}", r);
        }
        let again = workload::parse(&text, "prop.toml", g.va_bits).expect("parsed once");
        prop_assert_eq!(&w, &again);
    }
}

#[test]
fn sequential_reuse_and_concurrent_separation() {
    // One thread: b is mapped after a is gone, so it reuses a's place.
    let seq = "[[thread]]\nop = [\n  { mmap = \"a\", size = \"4MiB\" },\n  { munmap = \"a\" },\n  { mmap = \"b\", size = \"2MiB\" },\n]\n";
    let w = workload::parse(seq, "t.toml", 48).unwrap();
    assert_eq!(w.regions[0].addr, w.regions[1].addr);
    // Two threads without a barrier between: b may be mapped while a is.
    let conc = "[[thread]]\nop = [ { mmap = \"a\", size = \"4MiB\" }, { munmap = \"a\" } ]\n[[thread]]\nop = [ { mmap = \"b\", size = \"2MiB\" } ]\n";
    let w = workload::parse(conc, "t.toml", 48).unwrap();
    assert_eq!(w.regions[1].addr, w.regions[0].addr + (4 << 20));
    // With a barrier after the munmap, b may reuse a's space.
    let bar = "[[thread]]\nop = [ { mmap = \"a\", size = \"4MiB\" }, { munmap = \"a\" }, { barrier = true } ]\n[[thread]]\nop = [ { barrier = true }, { mmap = \"b\", size = \"2MiB\" } ]\n";
    let w = workload::parse(bar, "t.toml", 48).unwrap();
    assert_eq!(w.regions[1].addr, w.regions[0].addr);
    // A region mapped again later keeps its place reserved in between.
    let again = "[[thread]]\nop = [\n  { mmap = \"a\", size = \"4MiB\" },\n  { munmap = \"a\" },\n  { mmap = \"b\", size = \"2MiB\" },\n  { mmap = \"a\", size = \"4MiB\" },\n]\n";
    let w = workload::parse(again, "t.toml", 48).unwrap();
    assert_ne!(w.regions[0].addr, w.regions[1].addr);
}
