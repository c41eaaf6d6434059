//! Feeds arbitrary text to the workload parser and checker. It must never
//! panic, every error must print on one line, and every accepted workload
//! must keep the plan's invariants.
//!
//! Run: `cargo +nightly fuzz run parse_workload -- -dict=parse_workload.dict`
//! (seed it with `../crates/workload/builtin` and `../crates/workload/validate`).

#![no_main]

use libfuzzer_sys::fuzz_target;
use workload::placement;
use workload::plan::{Op, Workload, FORMAT_PAGE};

/// The plan's documented invariants, checked on every accepted workload.
fn check_plan(w: &Workload, va_bits: u32) {
    let top = placement::user_top(va_bits);
    for r in &w.regions {
        assert!(r.size > 0 && r.size % FORMAT_PAGE == 0, "{r:?}");
        assert!(r.addr % FORMAT_PAGE == 0 && r.addr + r.size <= top, "{r:?}");
    }
    w.for_each_op(|_, op| {
        let in_region = |region: usize, offset: u64, len: u64| {
            let size = w.regions[region].size;
            assert!(len > 0 && offset % FORMAT_PAGE == 0 && len % FORMAT_PAGE == 0);
            assert!(offset + len <= size, "{op:?} outside {size}");
        };
        match op {
            Op::Mmap(m) => assert!(m.size <= w.regions[m.region].size),
            Op::Touch(t) => {
                in_region(t.region, t.range.offset, t.range.len);
                assert!(t.count > 0 && t.stride > 0);
            }
            Op::Munmap { region, range }
            | Op::Mprotect { region, range, .. }
            | Op::Madvise { region, range, .. }
            | Op::Mlock { region, range, .. }
            | Op::Munlock { region, range }
            | Op::Sync { region, range }
            | Op::Khugepaged { region, range } => in_region(*region, range.offset, range.len),
            Op::Repeat { times, ops } => assert!(*times > 0 && !ops.is_empty()),
            // Ops added to the format after this target was written: parsed
            // and walked (for_each_op enters a fork's ops), no invariant of
            // their own checked here yet.
            Op::NodeOf(_) | Op::Fork { .. } | Op::Mremap(_) => {}
            Op::Sleep(_) | Op::Barrier | Op::Mark(_) | Op::DeferredSplit => {}
        }
    });
    let _ = w.max_touched_bytes();
    let _ = w.max_touched_bytes_thp_always();
    let _ = w.total_mapped_bytes();
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    for va_bits in [48, 39] {
        match workload::parse(text, "fuzz.toml", va_bits) {
            Ok(w) => check_plan(&w, va_bits),
            Err(e) => {
                let line = e.to_string();
                assert!(!line.contains('\n') && !line.contains('\r'), "{line:?}");
            }
        }
    }
});
