//! `qtrace`: `ptlab trace`. The program runs under QEMU user mode
//! (Debian's `qemu-x86_64`) with the project's TCG plugin (`plugin/`,
//! built on first use: [`plugin`]), which writes every load and store and
//! the memory system calls, in order, to a pipe; ptlab converts that
//! stream ([`wire`], [`convert`]) into a trace (crate `trace`) as it comes.
//!
//! ## Invariants
//! 1. Nothing is left behind: the trace is written to a partial file next
//!    to the output and renamed into place only when complete; on any
//!    failure it is removed, and QEMU dies with ptlab (parent-death signal).
//! 2. The program runs with address-space randomization off, so two traces
//!    of the same run have the same addresses.

pub mod convert;
pub mod plugin;
pub mod wire;

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use thiserror::Error;

/// How a trace is made.
#[derive(Debug, Clone)]
pub struct Options {
    pub out: PathBuf,
    /// The plugin's same-page filter (docs/trace.md says what it keeps exact).
    pub filter: bool,
}

/// What a trace run saw.
#[derive(Debug, Clone, Default)]
pub struct Summary {
    pub counts: convert::Counts,
    pub records: u64,
    /// The program's wait status (QEMU's, which passes the program's on).
    pub exit_status: i32,
    pub wall: Duration,
    /// Bytes of the plugin's stream.
    pub stream_bytes: u64,
    /// The program the traced one executed, ending the trace (what ran
    /// from there on ran natively, outside QEMU).
    pub exec: Option<String>,
}

#[derive(Debug, Error)]
pub enum QtraceError {
    #[error("{0}: command not found")]
    NotFound(String),
    #[error("{0}")]
    NotElf(String),
    #[error("{0}")]
    Setup(String),
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("{0}")]
    Stream(String),
}

impl QtraceError {
    /// Whether the user's input is at fault (exit status 2).
    pub fn is_bad_input(&self) -> bool {
        matches!(
            self,
            QtraceError::NotFound(_) | QtraceError::NotElf(_) | QtraceError::Io { .. }
        )
    }
}

/// `name` as a path: itself if it has a slash, else found on PATH.
pub fn resolve(name: &str) -> Option<PathBuf> {
    let ok = |p: &Path| {
        std::fs::metadata(p).is_ok_and(|m| {
            use std::os::unix::fs::PermissionsExt;
            m.is_file() && m.permissions().mode() & 0o111 != 0
        })
    };
    if name.contains('/') {
        let p = PathBuf::from(name);
        return ok(&p).then_some(p);
    }
    if name.is_empty() {
        return None;
    }
    std::env::var_os("PATH")
        .map(|p| {
            std::env::split_paths(&p)
                .map(|d| d.join(name))
                .find(|p| ok(p))
        })
        .unwrap_or(None)
}

fn partial_of(out: &Path) -> PathBuf {
    let mut name = out.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    out.with_file_name(name)
}

/// Traces `cmd` into `opts.out`.
///
/// # Errors
/// [`QtraceError`]; nothing is left behind (invariant 1).
pub fn trace(cmd: &[String], opts: &Options) -> Result<Summary, QtraceError> {
    let name = cmd.first().cloned().unwrap_or_default();
    let program = resolve(&name).ok_or_else(|| QtraceError::NotFound(name.clone()))?;
    let mut magic = [0u8; 4];
    let head = std::fs::File::open(&program)
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut magic));
    if head.is_err() || &magic != b"\x7fELF" {
        return Err(QtraceError::NotElf(format!(
            "{}: not an ELF program (QEMU user mode runs programs, not scripts: trace the interpreter, e.g. `ptlab trace -- python3 {name}`)",
            program.display()
        )));
    }
    let qemu = resolve("qemu-x86_64").ok_or_else(|| {
        QtraceError::Setup(
            "qemu-x86_64 not found: install Debian's qemu-user (scripts/install-qemu-user.sh)"
                .into(),
        )
    })?;
    let so = plugin::ensure(&qemu)?;
    let partial = partial_of(&opts.out);
    // On SIGINT or SIGTERM (crate interrupt) QEMU is killed, `run` returns
    // an error, the partial file is removed below, and then this section
    // exits the process.
    let _section = interrupt::Section::enter(format!(
        "the trace of {name} under QEMU: QEMU ended, {} removed, no trace written",
        partial.display()
    ));
    let result = run(&qemu, &so, &program, cmd, opts, &partial).and_then(|s| {
        std::fs::rename(&partial, &opts.out).map_err(|source| QtraceError::Io {
            path: opts.out.clone(),
            source,
        })?;
        Ok(s)
    });
    if result.is_err() {
        let _ = std::fs::remove_file(&partial);
    }
    result
}

fn run(
    qemu: &Path,
    so: &Path,
    program: &Path,
    cmd: &[String],
    opts: &Options,
    partial: &Path,
) -> Result<Summary, QtraceError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| QtraceError::Io { path, source }
    };
    let (rd, wr) = pipe()?;
    // A larger pipe: fewer wake-ups of either side (best effort).
    // SAFETY: fcntl on a descriptor this function owns.
    unsafe { libc::fcntl(rd.as_raw_fd(), libc::F_SETPIPE_SZ, 1 << 20) };
    let wfd = wr.as_raw_fd();
    let header = header(cmd, opts);
    let writer = trace::TraceWriter::create(partial, &header)
        .map_err(io(partial))?
        .with_level(1);
    let mut conv = convert::Converter::new(writer);
    let mut c = qemu_command(qemu, so, program, cmd, opts, wfd);
    let start = Instant::now();
    let mut child = c
        .spawn()
        .map_err(|e| QtraceError::Setup(format!("{}: {e}", qemu.display())))?;
    drop(wr);
    let watched = interrupt::watch(child.id() as libc::pid_t);
    // Unbuffered: a block is read whole into its buffer (no second copy).
    let mut blocks = wire::Blocks::new(std::fs::File::from(rd));
    let converted = (|| -> std::io::Result<()> {
        while let Some((vcpu, words)) = blocks.next_block()? {
            conv.block(vcpu, words)?;
            if conv.counts.ended {
                break;
            }
        }
        Ok(())
    })();
    if let Err(e) = converted {
        let _ = child.kill();
        let _ = child.wait();
        return Err(QtraceError::Stream(e.to_string()));
    }
    let status = child
        .wait()
        .map_err(|e| QtraceError::Setup(format!("waiting for QEMU: {e}")))?;
    drop(watched);
    if let Some(sig) = interrupt::requested() {
        return Err(QtraceError::Setup(format!(
            "interrupted by {}",
            interrupt::name(sig)
        )));
    }
    let wall = start.elapsed();
    let stream_bytes = blocks.offset;
    let conv_exec = conv.pending_exec.clone();
    let (mut w, counts) = conv.finish().map_err(io(partial))?;
    std::io::Write::flush(&mut w).map_err(io(partial))?;
    drop(w);
    use std::os::unix::process::ExitStatusExt;
    let raw = status.into_raw();
    let exec = if counts.ended {
        None
    } else {
        conv_exec.clone()
    };
    if !counts.ended && exec.is_none() {
        return Err(QtraceError::Stream(format!(
            "QEMU ended ({status}) without the plugin's end record after {stream_bytes} bytes of its stream: the program could not be run under QEMU, or it executed another program (not traced)"
        )));
    }
    let mut s = Summary {
        counts,
        records: 0,
        exit_status: raw,
        wall,
        stream_bytes,
        exec: exec.clone(),
    };
    count_in_header(partial, &counts, exec.as_deref())?;
    s.records = counts.accesses + counts.syscalls;
    Ok(s)
}

/// A pipe for the plugin's stream, both ends close-on-exec.
fn pipe() -> Result<(OwnedFd, OwnedFd), QtraceError> {
    let mut fds = [0i32; 2];
    // SAFETY: a valid out array of two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(QtraceError::Setup(format!(
            "pipe: {}",
            std::io::Error::last_os_error()
        )));
    }
    // SAFETY: pipe2 just returned these two descriptors, owned by nobody else.
    let (rd, wr) = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    Ok((rd, wr))
}

/// The trace's header before the run: QEMU user mode's layout, and what the
/// trace leaves out.
fn header(cmd: &[String], opts: &Options) -> trace::Header {
    let mut header = trace::Header {
        source: "trace".into(),
        command: cmd.to_vec(),
        page_size: 4096,
        va_bits: 47,
        ..Default::default()
    };
    header.notes = vec![
        "traced under QEMU user mode: the layout is QEMU's (the program at 0x4000000000), not a native run's; glibc may choose other routines on the emulated CPU".into(),
        "accesses the kernel makes for the program (read(2) into a buffer) and instruction fetches are not in the trace".into(),
    ];
    if opts.filter {
        header.notes.push("filtered in the plugin: an access in the same 4 KiB page as the same thread's previous one is a Hits count unless it is the first store after loads (TLB counts exact, docs/trace.md)".into());
    }
    header
}

/// QEMU with the plugin writing to `wfd`, the program's layout not
/// randomised, and killed when this process dies.
fn qemu_command(
    qemu: &Path,
    so: &Path,
    program: &Path,
    cmd: &[String],
    opts: &Options,
    wfd: i32,
) -> Command {
    let mut c = Command::new(qemu);
    c.arg("-plugin")
        .arg(format!(
            "{},fd={wfd}{}",
            so.display(),
            if opts.filter { "" } else { ",filter=off" }
        ))
        .arg("-0")
        .arg(&cmd[0])
        .arg(program)
        .args(&cmd[1..]);
    // SAFETY: only async-signal-safe calls between fork and exec.
    unsafe {
        c.pre_exec(move || {
            // The write end crosses exec; the read end does not (CLOEXEC).
            if libc::fcntl(wfd, libc::F_SETFD, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            libc::personality(libc::ADDR_NO_RANDOMIZE as libc::c_ulong);
            Ok(())
        });
    }
    c
}

/// The counts go into the header (a copy with the header rewritten), with
/// notes for child processes and an exec.
fn count_in_header(
    partial: &Path,
    counts: &convert::Counts,
    exec: Option<&str>,
) -> Result<(), QtraceError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| QtraceError::Io { path, source }
    };
    let mut r =
        trace::TraceReader::open(partial).map_err(|e| QtraceError::Stream(e.to_string()))?;
    let mut h = r.header().clone();
    drop(r.next_chunk(&mut Vec::new()));
    if counts.forks > 0 {
        h.notes.push(format!(
            "the program started {} child process(es) (fork, vfork, clone without CLONE_THREAD): their accesses are not in this trace, only the first process's",
            counts.forks
        ));
    }
    if let Some(p) = exec {
        h.notes.push(format!(
            "the program executed {p}: the trace ends there; what ran from then on ran natively, outside QEMU, and is not traced"
        ));
    }
    for (k, v) in [
        (
            "accesses",
            counts.accesses + counts.hits + counts.unattributed,
        ),
        ("accesses_written", counts.accesses),
        ("hits_counted", counts.hits),
        ("accesses_unattributed", counts.unattributed),
        ("accesses_lost", counts.lost),
        ("memory_calls", counts.syscalls),
        ("child_processes", counts.forks),
        ("execs", u64::from(exec.is_some())),
    ] {
        h.observed.insert(k.into(), v as i64);
    }
    let tmp = partial.with_extension("partial2");
    let rewrote = trace::rewrite_header(partial, &tmp, &h)
        .map_err(|e| QtraceError::Stream(e.to_string()))
        .and_then(|()| std::fs::rename(&tmp, partial).map_err(io(partial)));
    if rewrote.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    rewrote
}
