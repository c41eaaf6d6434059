//! The seccomp filter the recorded program runs under: the memory system
//! calls stop for the tracer (SECCOMP_RET_TRACE), every other one runs
//! untouched, so the program pays for the tracer only on those.

/// The system calls recorded, by this architecture's numbers.
pub const TRACED: &[libc::c_long] = &[
    libc::SYS_mmap,
    libc::SYS_munmap,
    libc::SYS_mprotect,
    libc::SYS_madvise,
    libc::SYS_mremap,
    libc::SYS_brk,
    libc::SYS_mlock,
    libc::SYS_mlock2,
    libc::SYS_munlock,
];

#[cfg(target_arch = "x86_64")]
const AUDIT_ARCH: u32 = 0xc000_003e; // AUDIT_ARCH_X86_64
#[cfg(target_arch = "aarch64")]
const AUDIT_ARCH: u32 = 0xc000_00b7; // AUDIT_ARCH_AARCH64

const LD_W_ABS: u16 = (libc::BPF_LD | libc::BPF_W | libc::BPF_ABS) as u16;
const JEQ_K: u16 = (libc::BPF_JMP | libc::BPF_JEQ | libc::BPF_K) as u16;
const RET_K: u16 = (libc::BPF_RET | libc::BPF_K) as u16;
/// Offsets in `struct seccomp_data`.
const NR: u32 = 0;
const ARCH: u32 = 4;

fn stmt(code: u16, k: u32) -> libc::sock_filter {
    libc::sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> libc::sock_filter {
    libc::sock_filter { code, jt, jf, k }
}

/// The filter program: another architecture's calls (a 32-bit call
/// through int 0x80) are allowed untraced; each traced number returns
/// TRACE; the rest ALLOW.
pub fn program() -> Vec<libc::sock_filter> {
    let n = TRACED.len() as u8;
    let mut p = vec![
        stmt(LD_W_ABS, ARCH),
        // Not this architecture: skip to ALLOW (past the load, the n
        // comparisons).
        jump(JEQ_K, AUDIT_ARCH, 0, n + 1),
        stmt(LD_W_ABS, NR),
    ];
    for (i, &nr) in TRACED.iter().enumerate() {
        // Match: jump to TRACE, which follows ALLOW.
        let to_trace = (n - 1 - i as u8) + 1;
        p.push(jump(JEQ_K, nr as u32, to_trace, 0));
    }
    p.push(stmt(RET_K, libc::SECCOMP_RET_ALLOW));
    p.push(stmt(RET_K, libc::SECCOMP_RET_TRACE));
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tiny interpreter of the program's three instructions, to check
    /// the jumps land where they should.
    fn run(p: &[libc::sock_filter], arch: u32, nr: u32) -> u32 {
        let mut acc = 0u32;
        let mut pc = 0usize;
        loop {
            let i = p[pc];
            match i.code {
                LD_W_ABS => acc = if i.k == ARCH { arch } else { nr },
                JEQ_K => {
                    pc += usize::from(if acc == i.k { i.jt } else { i.jf });
                }
                RET_K => return i.k,
                c => panic!("unexpected code {c}"),
            }
            pc += 1;
        }
    }

    #[test]
    fn traced_calls_trace_and_others_run() {
        let p = program();
        for &nr in TRACED {
            assert_eq!(
                run(&p, AUDIT_ARCH, nr as u32),
                libc::SECCOMP_RET_TRACE,
                "{nr}"
            );
        }
        for nr in [
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_openat,
            libc::SYS_clone,
        ] {
            assert_eq!(
                run(&p, AUDIT_ARCH, nr as u32),
                libc::SECCOMP_RET_ALLOW,
                "{nr}"
            );
        }
        assert_eq!(
            run(&p, 0x4000_0003, libc::SYS_mmap as u32),
            libc::SECCOMP_RET_ALLOW
        );
    }
}
