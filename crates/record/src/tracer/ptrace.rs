//! The ptrace requests and /proc reads the recording loop makes on a
//! stopped tracee.

use super::shared::Shared;

pub(super) fn syscall_info(pid: i32) -> Option<libc::ptrace_syscall_info> {
    // SAFETY: an all-zero ptrace_syscall_info is a valid value of the
    // plain-data struct.
    let mut info: libc::ptrace_syscall_info = unsafe { std::mem::zeroed() };
    // SAFETY: `pid` is a tracee in a ptrace stop; the kernel writes at most
    // the given size into `info`.
    let r = unsafe {
        libc::ptrace(
            libc::PTRACE_GET_SYSCALL_INFO,
            pid,
            std::mem::size_of::<libc::ptrace_syscall_info>(),
            &mut info as *mut _,
        )
    };
    (r > 0).then_some(info)
}

pub(super) fn resume(request: libc::c_uint, pid: i32, sig: i32) {
    // SAFETY: resuming a tracee of ours; an error (it died meanwhile) is
    // seen at the next waitpid.
    unsafe { libc::ptrace(request, pid, 0, sig as libc::c_long) };
}

pub(super) fn tgid_of(pid: i32) -> Option<u32> {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()?
        .lines()
        .find_map(|l| l.strip_prefix("Tgid:"))
        .and_then(|v| v.trim().parse().ok())
}

/// The records of one finished call; `path` names the file an mmap
/// mapped (read while the program was stopped, [`mapped_file`]).
pub(super) fn handle_call(sh: &mut Shared, nr: i64, a: [u64; 6], ret: i64, path: String) {
    let mut out = std::mem::take(&mut sh.out);
    crate::calls::apply(&mut sh.space, nr, a, ret, &|_| path.clone(), &mut out);
    sh.out = out;
}

/// The descriptor a successful call mapped a file from (mmap without
/// MAP_ANONYMOUS), whose name `calls::apply` asks for.
pub(super) fn mapped_file(nr: i64, a: [u64; 6], ret: i64) -> Option<i32> {
    let failed = ret < 0 && ret > -4096;
    (nr == libc::SYS_mmap && a[3] as i32 & libc::MAP_ANONYMOUS == 0 && !failed)
        .then_some(a[4] as i32)
}

/// The path of descriptor `fd` of process `pid` ("" if unknown).
pub(super) fn fd_path(pid: i32, fd: i32) -> String {
    std::fs::read_link(format!("/proc/{pid}/fd/{fd}"))
        .map(|p| p.display().to_string())
        .unwrap_or_default()
}
