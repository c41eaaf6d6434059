//! Starting the program to record: resolved on PATH first (so that a
//! command that does not exist is refused before anything runs), then
//! forked with tracing requested and the seccomp filter installed, stopped
//! before its `execve` so that the fault events can be attached.

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// `cmd` as a path to an executable file: itself if it has a slash, else
/// the first match on PATH.
pub fn resolve(cmd: &str) -> Option<PathBuf> {
    let executable = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| {
            use std::os::unix::fs::PermissionsExt;
            m.is_file() && m.permissions().mode() & 0o111 != 0
        })
    };
    if cmd.contains('/') {
        let p = PathBuf::from(cmd);
        return executable(&p).then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(cmd))
        .find(|p| executable(p))
}

/// A forked child, stopped (SIGSTOP) before its `execve`.
pub struct Child {
    pub pid: libc::pid_t,
}

/// Forks `program` with `args` (argv\[0\] first) and the current
/// environment; the child asks to be traced if `traced`, installs `filter`
/// unless it is empty, stops, and on being continued (PTRACE_CONT, or
/// SIGCONT when not traced) executes the program (or exits 127).
///
/// # Errors
/// fork failed, or the child did not reach its stop.
pub fn spawn(
    program: &Path,
    args: &[String],
    filter: &[libc::sock_filter],
    traced: bool,
) -> std::io::Result<Child> {
    let to_c = |s: &[u8]| {
        CString::new(s).map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                "a NUL byte in an argument",
            )
        })
    };
    let path = to_c(program.as_os_str().as_bytes())?;
    let argv_c: Vec<CString> = args
        .iter()
        .map(|a| to_c(a.as_bytes()))
        .collect::<Result<_, _>>()?;
    let mut argv: Vec<*const libc::c_char> = argv_c.iter().map(|a| a.as_ptr()).collect();
    argv.push(std::ptr::null());
    let env_c: Vec<CString> = std::env::vars_os()
        .filter_map(|(k, v)| {
            let mut kv = k.as_bytes().to_vec();
            kv.push(b'=');
            kv.extend_from_slice(v.as_bytes());
            CString::new(kv).ok()
        })
        .collect();
    let mut envp: Vec<*const libc::c_char> = env_c.iter().map(|e| e.as_ptr()).collect();
    envp.push(std::ptr::null());
    let prog = libc::sock_fprog {
        len: filter.len() as u16,
        filter: filter.as_ptr() as *mut libc::sock_filter,
    };
    // SAFETY: after fork the child calls only async-signal-safe functions
    // (ptrace, prctl, raise, execve, _exit) on memory prepared before the
    // fork; the parent continues normally.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error());
    }
    if pid == 0 {
        // SAFETY: in the child, see above; every pointer refers to data
        // allocated before the fork and still alive in the child's copy.
        unsafe {
            if traced {
                libc::ptrace(libc::PTRACE_TRACEME, 0, 0, 0);
            }
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            if !filter.is_empty() {
                libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
                if libc::prctl(
                    libc::PR_SET_SECCOMP,
                    libc::SECCOMP_MODE_FILTER,
                    &prog as *const _,
                ) != 0
                {
                    libc::_exit(126);
                }
            }
            libc::raise(libc::SIGSTOP);
            libc::execve(path.as_ptr(), argv.as_ptr(), envp.as_ptr());
            libc::_exit(127);
        }
    }
    let mut status = 0;
    // SAFETY: waiting for our own child, status a valid out pointer.
    // (WUNTRACED: an untraced child's stop is reported only when asked.)
    let r = unsafe { libc::waitpid(pid, &mut status, libc::__WALL | libc::WUNTRACED) };
    if r != pid || !libc::WIFSTOPPED(status) {
        return Err(std::io::Error::other(format!(
            "the child did not stop before exec (status {status:#x})"
        )));
    }
    Ok(Child { pid })
}
