//! A memory system call's effect on the address space, as trace records:
//! shared by the native recorder (ptrace stops) and `ptlab trace` (QEMU's
//! plugin stream), which see the same calls with the same numbers.

use crate::space::{Mapping, Space};
use trace::{MapFlags, Prot, Record, RegionKind};

/// The records of one finished memory system call `nr` (x86-64 Linux's
/// numbers) with arguments `a` and result `ret`, appended to `out`; a
/// failed call makes none. `fd_path` names a mapped file's descriptor.
pub fn apply(
    space: &mut Space,
    nr: i64,
    a: [u64; 6],
    ret: i64,
    fd_path: &dyn Fn(i32) -> String,
    out: &mut Vec<Record>,
) {
    if ret < 0 && ret > -4096 {
        return;
    }
    let r = ret as u64;
    match nr {
        libc::SYS_mmap => {
            let (len, prot, flags, fd) = (a[1], a[2] as i32, a[3] as i32, a[4] as i32);
            let shared = flags & libc::MAP_SHARED != 0;
            let (kind, name) = if flags & libc::MAP_ANONYMOUS != 0 {
                (
                    if shared {
                        RegionKind::Shmem
                    } else {
                        RegionKind::Anon
                    },
                    String::new(),
                )
            } else {
                let path = fd_path(fd);
                let kind = if path == "/dev/zero" {
                    if shared {
                        RegionKind::Shmem
                    } else {
                        RegionKind::Anon
                    }
                } else if path.starts_with("/memfd:") || path.starts_with("/dev/shm/") {
                    RegionKind::Shmem
                } else {
                    RegionKind::File
                };
                (kind, path)
            };
            let mut f = 0;
            if shared {
                f |= MapFlags::SHARED;
            }
            if flags & libc::MAP_NORESERVE != 0 {
                f |= MapFlags::NORESERVE;
            }
            if flags & libc::MAP_POPULATE != 0 {
                f |= MapFlags::POPULATE;
            }
            if flags & libc::MAP_LOCKED != 0 {
                f |= MapFlags::LOCKED;
            }
            if flags & (libc::MAP_FIXED | libc::MAP_FIXED_NOREPLACE) != 0 {
                f |= MapFlags::FIXED;
            }
            let m = Mapping {
                kind,
                prot: Prot(prot as u8 & 7),
                flags: MapFlags(f),
                name,
            };
            space.map(r, len, m, out);
        }
        libc::SYS_munmap => space.unmap(a[0], a[1], out),
        libc::SYS_mprotect => {
            let p = Prot(a[2] as u8 & 7);
            space.ranged(a[0], a[1], out, |id, offset, len| Record::Protect {
                id,
                offset,
                len,
                prot: p,
            });
        }
        libc::SYS_madvise => {
            let advice = a[2] as u8;
            space.ranged(a[0], a[1], out, |id, offset, len| Record::Advise {
                id,
                offset,
                len,
                advice,
            });
        }
        libc::SYS_mlock | libc::SYS_mlock2 => {
            space.ranged(a[0], a[1], out, |id, offset, len| Record::Lock {
                id,
                offset,
                len,
            });
        }
        libc::SYS_munlock => {
            space.ranged(a[0], a[1], out, |id, offset, len| Record::Unlock {
                id,
                offset,
                len,
            });
        }
        libc::SYS_brk => space.brk(r, out),
        libc::SYS_mremap => space.mremap(a[0], a[1], r, a[2], out),
        _ => {}
    }
}
