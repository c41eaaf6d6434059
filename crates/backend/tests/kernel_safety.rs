//! The kernel backend's refusals and failures: each is a clear error, and
//! none leaves a file behind.

#![cfg(target_os = "linux")]

mod kernel_support;

use backend::kernel::{run, KernelError, KernelOptions};
use kernel_support::*;
use workload::plan::{Access, Advice, MapKind, Op, Prot};

#[test]
fn workload_larger_than_half_of_available_memory_is_refused() {
    let available = host::MemInfo::read()
        .and_then(|m| m.mem_available_kb())
        .expect("MemAvailable")
        * KIB;
    let size = (available * 3 / 4).next_multiple_of(2 * MIB);
    let mut b = Builder::new();
    let r0 = b.region("huge", size);
    b.thread(vec![with(anon(r0, size), |m| m.populate = true)]);
    match run(&b.build(), &KernelOptions::default()) {
        Err(KernelError::TooMuchMemory {
            needed_bytes,
            available_bytes,
        }) => {
            assert!(needed_bytes >= size);
            assert!(needed_bytes > available_bytes / 2);
        }
        other => panic!("expected TooMuchMemory, got {other:?}"),
    }
}

#[test]
fn sparse_noreserve_mapping_larger_than_memory_is_allowed() {
    // The seed's workload shape: a mapping far larger than the memory it
    // touches. 64 GiB mapped, one page per 1 GiB written.
    let size = 64 << 30;
    let mut b = Builder::new();
    let r0 = b.region("sparse", size);
    b.thread(vec![
        with(anon(r0, size), |m| m.noreserve = true),
        madvise(r0, all(size), Advice::NoHugePage),
        touch(r0, all(size), Access::Write, 1 << 30),
        mark("touched"),
    ]);
    let r = run(&b.build(), &KernelOptions::default()).expect("kernel run");
    assert_eq!(counter(&r, "touched", "minor_faults"), 64);
    assert_eq!(counter(&r, "touched", "rss_anon_kb"), 64 * 4);
}

#[test]
fn taken_address_is_reported_with_the_region() {
    // This process maps a page at the region's address; the child inherits
    // it, so MAP_FIXED_NOREPLACE must refuse.
    let addr = BASE + (7 << 30);
    // SAFETY: a fresh mapping at a fixed address that nothing else uses
    // (NOREPLACE fails rather than replace anything).
    let p = unsafe {
        libc::mmap(
            addr as *mut libc::c_void,
            PAGE as usize,
            libc::PROT_READ,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_FIXED_NOREPLACE,
            -1,
            0,
        )
    };
    assert_eq!(p as u64, addr);
    let mut b = Builder::new();
    let r0 = b.region_at("taken", 4 * PAGE, addr);
    b.thread(vec![anon(r0, 4 * PAGE)]);
    let got = run(&b.build(), &KernelOptions::default());
    // SAFETY: the page mapped above.
    unsafe { libc::munmap(p, PAGE as usize) };
    match got {
        Err(KernelError::AddressTaken {
            region,
            addr: a,
            len,
            ..
        }) => {
            assert_eq!((region.as_str(), a, len), ("taken", addr, 4 * PAGE));
        }
        other => panic!("expected AddressTaken, got {other:?}"),
    }
}

#[test]
fn forbidden_access_is_a_fault_in_the_region_and_files_are_removed() {
    let dir = scratch_dir("fault");
    let mut b = Builder::new();
    let size = MIB;
    let ro = b.region("ro", size);
    b.thread(vec![
        with(mmap(ro, size, MapKind::File), |m| m.prot = Prot::R),
        touch(ro, all(size), Access::Read, PAGE),
        touch(ro, all(size), Access::Write, PAGE),
    ]);
    let opts = KernelOptions {
        temp_dir: Some(dir.path().to_path_buf()),
        ..KernelOptions::default()
    };
    match run(&b.build(), &opts) {
        Err(KernelError::Fault {
            signal,
            addr,
            place,
        }) => {
            assert_eq!(signal, "SIGSEGV");
            assert_eq!(addr, BASE);
            assert!(place.contains("\"ro\""), "{place}");
        }
        other => panic!("expected Fault, got {other:?}"),
    }
    assert!(is_empty_dir(dir.path()));
}

#[test]
fn failing_syscall_names_the_op() {
    // MADV_POPULATE_WRITE on a read-only mapping fails.
    let mut b = Builder::new();
    let r0 = b.region("r", MIB);
    b.thread(vec![
        mark("start"),
        with(anon(r0, MIB), |m| m.prot = Prot::R),
        Op::Repeat {
            times: 2,
            ops: vec![madvise(r0, all(MIB), Advice::PopulateWrite)],
        },
    ]);
    match run(&b.build(), &KernelOptions::default()) {
        Err(e @ KernelError::Op { .. }) => {
            let KernelError::Op { op, call, .. } = &e else {
                unreachable!()
            };
            assert_eq!(*call, "madvise");
            assert!(op.starts_with("thread 0, op 3.1 (madvise \"r\""), "{op}");
            assert!(e.to_string().contains("madvise failed"), "{e}");
        }
        other => panic!("expected Op error, got {other:?}"),
    }
}
