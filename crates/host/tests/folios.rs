//! `host::pagemap::folios` on this process, with the host's 64 KiB mTHP
//! policy set for the test's own run and restored after it (a guard, so a
//! failing assertion restores it too): the 64 KiB folios it finds in a
//! region it wrote are as many as the kernel's per-size statistics say
//! were allocated, and a region written without the policy holds none.
//! Needs root (the policy, the page frame numbers); skipped otherwise.

use host::pagemap::{self, folios, ReadOptions};
use std::time::{Duration, Instant};

const SIZE_DIR: &str = "/sys/kernel/mm/transparent_hugepage/hugepages-64kB";

/// The tests of this file share the host's policy: one at a time.
static POLICY: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The 64 KiB policy as it was, written back on drop (also on a panic).
struct PolicyGuard {
    old: String,
}

impl PolicyGuard {
    fn set(policy: &str) -> Option<PolicyGuard> {
        let path = format!("{SIZE_DIR}/enabled");
        let text = std::fs::read_to_string(&path).ok()?;
        // "always inherit madvise [never]": the bracketed word is in force.
        let old = text.split(['[', ']']).nth(1)?.to_string();
        std::fs::write(&path, policy).ok()?;
        Some(PolicyGuard { old })
    }
}

impl Drop for PolicyGuard {
    fn drop(&mut self) {
        let _ = std::fs::write(format!("{SIZE_DIR}/enabled"), &self.old);
    }
}

/// The kernel's count of 64 KiB anonymous folios allocated at a fault,
/// read into a buffer on the stack: a heap allocation here could itself
/// fault a fresh 64 KiB folio under the policy `always` and be counted.
fn allocated(file: &mut std::fs::File) -> u64 {
    use std::io::{Read, Seek};
    let mut buf = [0u8; 32];
    file.rewind().unwrap();
    let n = file.read(&mut buf).unwrap();
    std::str::from_utf8(&buf[..n])
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

/// Maps 4 MiB plus 64 KiB of anonymous memory and returns a 64 KiB-aligned
/// 4 MiB inside it (and the mapping to unmap).
fn region() -> (*mut u8, usize, u64) {
    let len = (4 << 20) + (64 << 10);
    // SAFETY: a fresh private anonymous mapping; nothing existing is
    // touched and the result is checked.
    let p = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    assert_ne!(p, libc::MAP_FAILED);
    let start = (p as u64).next_multiple_of(64 << 10);
    (p.cast(), len, start)
}

fn write_all(start: u64) {
    for off in (0..4u64 << 20).step_by(4096) {
        // SAFETY: inside the writable mapping `region` made.
        unsafe { ((start + off) as *mut u8).write_volatile(1) };
    }
}

/// 64 KiB folios (mapped by PTEs) in `[start, start + 4 MiB)`.
fn folios_64k(start: u64) -> u64 {
    let me = std::process::id();
    let snap = pagemap::read(me, &ReadOptions::default()).unwrap();
    let vmas: Vec<_> = snap
        .vmas
        .iter()
        .filter(|v| v.start <= start && start < v.end)
        .cloned()
        .collect();
    assert_eq!(vmas.len(), 1);
    let deadline = Instant::now() + Duration::from_secs(20);
    let f = folios::read(me, &vmas, snap.page_size, deadline, &|va| {
        snap.pmd_mapped(va)
    })
    .unwrap();
    assert!(f.complete);
    f.count(64 << 10, false)
}

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

#[test]
fn the_64k_folios_found_are_the_ones_the_kernel_allocated() {
    if !is_root() || !std::path::Path::new(SIZE_DIR).exists() {
        eprintln!("skipped: needs root and a kernel with 64 KiB mTHP ({SIZE_DIR})");
        return;
    }
    let _one = POLICY.lock().unwrap_or_else(|p| p.into_inner());
    let Some(guard) = PolicyGuard::set("always") else {
        eprintln!("skipped: {SIZE_DIR}/enabled could not be set");
        return;
    };
    // Another process may allocate 64 KiB folios meanwhile: the kernel's
    // count is then larger; try again, a few times.
    let mut stat = std::fs::File::open(format!("{SIZE_DIR}/stats/anon_fault_alloc")).unwrap();
    let mut last = (0, 0);
    for _ in 0..5 {
        let (p, len, start) = region();
        let before = allocated(&mut stat);
        write_all(start);
        let after = allocated(&mut stat);
        let found = folios_64k(start);
        // SAFETY: unmaps exactly the mapping `region` made, no longer used.
        unsafe { libc::munmap(p.cast(), len) };
        last = (found, after - before);
        if found == after - before {
            break;
        }
    }
    drop(guard);
    assert!(last.0 > 0, "no 64 KiB folio under the policy always");
    assert_eq!(last.0, last.1, "found vs the kernel's anon_fault_alloc");
}

#[test]
fn a_region_written_without_mthp_holds_no_64k_folio() {
    if !is_root() || !std::path::Path::new(SIZE_DIR).exists() {
        eprintln!("skipped: needs root and a kernel with 64 KiB mTHP ({SIZE_DIR})");
        return;
    }
    let _one = POLICY.lock().unwrap_or_else(|p| p.into_inner());
    let Some(_guard) = PolicyGuard::set("never") else {
        eprintln!("skipped: {SIZE_DIR}/enabled could not be set");
        return;
    };
    let (p, len, start) = region();
    write_all(start);
    assert_eq!(folios_64k(start), 0);
    // SAFETY: unmaps exactly the mapping `region` made, no longer used.
    unsafe { libc::munmap(p.cast(), len) };
}
