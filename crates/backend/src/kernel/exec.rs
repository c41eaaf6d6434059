//! One worker's ops as real system calls and real memory accesses.
//!
//! Runs after the baseline: nothing here allocates, and every failure ends the
//! process through [`Shared::fail`] with the op's id, the call and errno.

use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::time::Instant;

use workload::plan::{Access, FileState, MapKind, Touch};

use super::child::{Local, Shared};
use super::program::{KMmap, KOp, KOpKind};
use super::wire::Call;
use crate::latency::FineHist;

pub(crate) fn run_ops(sh: &Shared, tid: usize, ops: &[KOp], local: &mut Local) {
    for op in ops {
        let check = |call: Call, rc: libc::c_int| {
            if rc != 0 {
                sh.fail(op.id, call, errno());
            }
        };
        match &op.kind {
            KOpKind::Mmap(m) => mmap(sh, op.id, m, local),
            // Every call below acts on ranges that come from the checked plan
            // and lie inside regions at fixed addresses far from the program's
            // own memory (MAP_FIXED_NOREPLACE guaranteed that when mapping).
            // munmap, mprotect and madvise on them can only affect the
            // workload's regions, which no Rust reference points into.
            KOpKind::Munmap { addr, len } => {
                // SAFETY: a range of the workload's regions (above).
                check(Call::Munmap, unsafe {
                    libc::munmap(ptr(*addr), *len as usize)
                });
            }
            KOpKind::Mprotect { addr, len, prot } => {
                // SAFETY: a range of the workload's regions (above).
                check(Call::Mprotect, unsafe {
                    libc::mprotect(ptr(*addr), *len as usize, *prot)
                });
            }
            KOpKind::Madvise { addr, len, advice } => {
                // SAFETY: a range of the workload's regions (above).
                check(Call::Madvise, unsafe {
                    libc::madvise(ptr(*addr), *len as usize, *advice)
                });
            }
            KOpKind::Mlock {
                addr,
                len,
                onfault: false,
            } => {
                // SAFETY: a range of the workload's regions (above).
                check(Call::Mlock, unsafe {
                    libc::mlock(ptr(*addr), *len as usize)
                });
            }
            KOpKind::Mlock {
                addr,
                len,
                onfault: true,
            } => {
                // libc has no wrapper for every C library: the system call.
                // SAFETY: a range of the workload's regions (above).
                check(Call::Mlock, unsafe {
                    libc::syscall(libc::SYS_mlock2, *addr, *len as usize, libc::MLOCK_ONFAULT)
                        as libc::c_int
                });
            }
            KOpKind::Munlock { addr, len } => {
                // SAFETY: a range of the workload's regions (above).
                check(Call::Munlock, unsafe {
                    libc::munlock(ptr(*addr), *len as usize)
                });
            }
            KOpKind::DeferredSplit => deferred_split(sh, op.id),
            KOpKind::Khugepaged => khugepaged(sh, op.id),
            KOpKind::Sync { addr, len } => {
                // SAFETY: a range of the workload's regions (above).
                check(Call::Msync, unsafe {
                    libc::msync(ptr(*addr), *len as usize, libc::MS_SYNC)
                });
            }
            KOpKind::Mremap {
                addr,
                old_len,
                new_len,
                flags,
                new_addr,
                expect,
            } => {
                // SAFETY: as above; the destination (MREMAP_FIXED) is another
                // region's address, which the room check cleared of the
                // program's own memory like every region, and growing in
                // place stays inside the room the placement rule reserved
                // for the region's largest size.
                let p = unsafe {
                    libc::mremap(
                        ptr(*addr),
                        *old_len as usize,
                        *new_len as usize,
                        *flags,
                        ptr(*new_addr),
                    )
                };
                if p == libc::MAP_FAILED {
                    sh.fail(op.id, Call::Mremap, errno());
                }
                if p as u64 != *expect {
                    sh.fail(op.id, Call::MremapMoved, libc::EADDRINUSE);
                }
            }
            KOpKind::Touch { base, touch } => self::touch(*base, touch, &mut local.hist),
            KOpKind::NodeOf { base, touch } => node_of(sh, op.id, *base, touch),
            KOpKind::Sleep(d) => std::thread::sleep(*d),
            KOpKind::Barrier => sh.barrier.wait(),
            KOpKind::Mark(name) => sh.mark(*name, tid, &mut local.hist),
            KOpKind::Repeat { times, body } => {
                for _ in 0..*times {
                    run_ops(sh, tid, body, local);
                }
            }
            KOpKind::Fork { body, wait: true } => super::fork::fork(sh, tid, op.id, body, local),
            KOpKind::Fork { body, wait: false } => {
                super::fork::start(sh, tid, op.id, body, local);
            }
            KOpKind::Waitpid => super::fork::waitpid(sh, local),
        }
    }
}

/// A deferred-split step: the cgroup's reclaim trigger, which runs the
/// deferred-split shrinker.
fn deferred_split(sh: &Shared, id: u32) {
    if let Some(r) = &sh.prog.reclaim {
        if let Err(e) = super::thp_steps::write_file(&r.trigger, r.trigger_value) {
            sh.fail(id, Call::CgroupReclaim, e);
        }
    }
}

/// A khugepaged step: waits for khugepaged's scans (within the limit).
fn khugepaged(sh: &Shared, id: u32) {
    let limit = sh.prog.khugepaged_limit.unwrap_or_default();
    match super::thp_steps::wait_khugepaged(limit) {
        Ok(()) => {}
        Err(super::thp_steps::WaitError::Read(e)) => {
            sh.fail(id, Call::KhugepagedScans, e);
        }
        Err(super::thp_steps::WaitError::TimedOut) => {
            sh.fail(id, Call::KhugepagedWait, libc::ETIMEDOUT);
        }
    }
}

/// get_mempolicy(MPOL_F_NODE | MPOL_F_ADDR) of every page the touch
/// would touch.
fn node_of(sh: &Shared, id: u32, base: u64, touch: &Touch) {
    for off in crate::touch::touch_offsets(touch) {
        let mut node: libc::c_int = -1;
        // SAFETY: get_mempolicy writes one int to `node`, a
        // live local; with MPOL_F_ADDR it only looks up the page
        // at the address (in a workload region), never writes
        // there; the node mask pointer is null with maxnode 0.
        let rc = unsafe {
            libc::syscall(
                libc::SYS_get_mempolicy,
                &mut node as *mut libc::c_int,
                std::ptr::null_mut::<libc::c_ulong>(),
                0 as libc::c_ulong,
                base + off,
                (MPOL_F_NODE | MPOL_F_ADDR) as libc::c_ulong,
            )
        };
        if rc != 0 {
            sh.fail(id, Call::GetMempolicy, errno());
        }
    }
}

/// get_mempolicy's flags (include/uapi/linux/mempolicy.h): return the
/// node of the page at the address.
const MPOL_F_NODE: u32 = 1 << 0;
const MPOL_F_ADDR: u32 = 1 << 1;

fn ptr(addr: u64) -> *mut libc::c_void {
    addr as *mut libc::c_void
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

fn mmap(sh: &Shared, op: u32, m: &KMmap, local: &mut Local) {
    let sharing = if m.shared {
        libc::MAP_SHARED
    } else {
        libc::MAP_PRIVATE
    };
    let (fd, flags, close_after): (RawFd, libc::c_int, bool) = match m.kind {
        MapKind::Anon => (-1, sharing | libc::MAP_ANONYMOUS | m.extra_flags, false),
        MapKind::File => {
            let fd = sh.fds[m.region];
            prepare_file(sh, op, m, fd, local);
            (fd, sharing | m.extra_flags, false)
        }
        MapKind::Shmem if m.tmpfs.is_some() => {
            // A fresh file on the region's tmpfs per mmap (see `tmpfs`).
            let dir = sh.tmpfs_fds[m.tmpfs.expect("matched")];
            match super::tmpfs::new_file(dir, m.len) {
                Ok(fd) => (fd, libc::MAP_SHARED | m.extra_flags, true),
                Err((true, e)) => sh.fail(op, Call::TmpfsFile, e),
                Err((false, e)) => sh.fail(op, Call::Ftruncate, e),
            }
        }
        MapKind::Shmem => {
            // A fresh shmem object per mmap, as a fresh anonymous mapping is:
            // its pages go when the mapping does (the fd is closed below).
            // SAFETY: memfd_create with a NUL-terminated literal name.
            let fd = unsafe { libc::memfd_create(c"ptlab-shmem".as_ptr(), libc::MFD_CLOEXEC) };
            if fd < 0 {
                sh.fail(op, Call::MemfdCreate, errno());
            }
            // SAFETY: `fd` is the memfd just created.
            if unsafe { libc::ftruncate(fd, m.len as libc::off_t) } != 0 {
                sh.fail(op, Call::Ftruncate, errno());
            }
            (fd, libc::MAP_SHARED | m.extra_flags, true)
        }
    };
    let offset = m.file_offset as libc::off_t;
    // SAFETY: MAP_FIXED_NOREPLACE (in extra_flags) never replaces an existing
    // mapping: it fails with EEXIST instead, so no memory the program uses
    // can be unmapped by this call.
    let p = unsafe { libc::mmap(ptr(m.addr), m.len as usize, m.prot, flags, fd, offset) };
    let err = errno();
    if close_after {
        // SAFETY: our memfd; the mapping keeps its own reference.
        unsafe { libc::close(fd) };
    }
    if p == libc::MAP_FAILED {
        sh.fail(op, Call::Mmap, err);
    }
    if p as u64 != m.addr {
        // Kernels before 4.17 ignore MAP_FIXED_NOREPLACE and treat the
        // address as a hint.
        // SAFETY: `p` is the mapping just made, nobody refers to it.
        unsafe { libc::munmap(p, m.len as usize) };
        sh.fail(op, Call::Mmap, libc::ENOTSUP);
    }
}

/// Puts a file region's pages where `file` says: out of the page cache for
/// `cold`; back in it for `cached` if an earlier mmap made it cold.
fn prepare_file(sh: &Shared, op: u32, m: &KMmap, fd: RawFd, local: &mut Local) {
    let cold = &sh.cold[m.region];
    match m.file {
        FileState::Cold => {
            // Dirty pages cannot be dropped: write them first.
            // SAFETY: `fd` is the region's open file.
            if unsafe { libc::fdatasync(fd) } != 0 {
                sh.fail(op, Call::Fdatasync, errno());
            }
            // SAFETY: as above; offset 0, length 0 means the whole file.
            let rc = unsafe { libc::posix_fadvise(fd, 0, 0, libc::POSIX_FADV_DONTNEED) };
            if rc != 0 {
                sh.fail(op, Call::PosixFadvise, rc);
            }
            cold.store(true, Ordering::Relaxed);
        }
        FileState::Cached if cold.load(Ordering::Relaxed) => {
            let size = sh.prog.file_bytes[m.region];
            let mut at = 0u64;
            while at < size {
                // SAFETY: reads into the worker's own buffer, within its length.
                let n = unsafe {
                    libc::pread(
                        fd,
                        local.warm.as_mut_ptr().cast(),
                        local.warm.len(),
                        at as libc::off_t,
                    )
                };
                if n <= 0 {
                    if n < 0 && errno() == libc::EINTR {
                        continue;
                    }
                    sh.fail(op, Call::Pread, if n == 0 { libc::EIO } else { errno() });
                }
                at += n as u64;
            }
            cold.store(false, Ordering::Relaxed);
        }
        FileState::Cached => {}
    }
}

/// The accesses of a touch, as volatile one-byte loads or stores at the
/// offsets of the shared generator.
fn touch(base: u64, t: &Touch, hist: &mut FineHist) {
    let p = base as *mut u8;
    // Every access below is sound: the checker guarantees that each offset
    // lies inside the region's mapped range, which the workload (not any Rust
    // object) owns. A protection that forbids the access raises SIGSEGV,
    // which the child reports as a failure of the workload.
    match (t.access, t.latency) {
        (Access::Read, false) => {
            for off in crate::touch::touch_offsets(t) {
                // SAFETY: an offset inside the region (above).
                unsafe { p.add(off as usize).read_volatile() };
            }
        }
        (Access::Write, false) => {
            for off in crate::touch::touch_offsets(t) {
                // SAFETY: an offset inside the region (above).
                unsafe { p.add(off as usize).write_volatile(1) };
            }
        }
        (access, true) => {
            for off in crate::touch::touch_offsets(t) {
                let start = Instant::now();
                match access {
                    Access::Read => {
                        // SAFETY: an offset inside the region (above).
                        unsafe { p.add(off as usize).read_volatile() };
                    }
                    Access::Write => {
                        // SAFETY: an offset inside the region (above).
                        unsafe { p.add(off as usize).write_volatile(1) }
                    }
                }
                hist.record(start.elapsed().as_nanos() as u64);
            }
        }
    }
}
