//! Page faults of the recorded program, from perf events: the
//! `exceptions:page_fault_user` and `page_fault_kernel` tracepoints (address
//! and error code, so reads and writes are told apart), or where those are
//! not allowed (no privilege for raw tracepoint data), the software
//! page-fault event (address only).
//!
//! One ring buffer of [`RING_PAGES`] pages holds the samples of every thread
//! (the events are inherited by threads and children; samples of other
//! processes are dropped when read). Timestamps are CLOCK_MONOTONIC, so
//! they order against the tracer's own clock readings.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

/// Data pages of the ring buffer (a power of two): 16 MiB, about 400,000
/// samples before the reader must have drained it.
pub const RING_PAGES: usize = 4096;
/// The smallest ring a CPU is given when the user may not lock more.
const MIN_RING_PAGES: usize = 16;

const PERF_TYPE_SOFTWARE: u32 = 1;
const PERF_TYPE_TRACEPOINT: u32 = 2;
const PERF_COUNT_SW_PAGE_FAULTS: u64 = 2;
const SAMPLE_TID: u64 = 1 << 1;
const SAMPLE_TIME: u64 = 1 << 2;
const SAMPLE_ADDR: u64 = 1 << 3;
const SAMPLE_RAW: u64 = 1 << 10;
const FLAG_DISABLED: u64 = 1 << 0;
const FLAG_INHERIT: u64 = 1 << 1;
const FLAG_EXCLUDE_KERNEL: u64 = 1 << 5;
const FLAG_EXCLUDE_HV: u64 = 1 << 6;
const FLAG_ENABLE_ON_EXEC: u64 = 1 << 12;
const FLAG_WATERMARK: u64 = 1 << 14;
const FLAG_USE_CLOCKID: u64 = 1 << 25;
const RECORD_LOST: u32 = 2;
const RECORD_SAMPLE: u32 = 9;
const IOC_SET_OUTPUT: libc::c_ulong = 0x2405;
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// `struct perf_event_attr` up to `aux_watermark` (PERF_ATTR_SIZE_VER5).
#[repr(C)]
#[derive(Default)]
struct Attr {
    kind: u32,
    size: u32,
    config: u64,
    sample_period: u64,
    sample_type: u64,
    read_format: u64,
    flags: u64,
    wakeup_events: u32,
    bp_type: u32,
    config1: u64,
    config2: u64,
    branch_sample_type: u64,
    sample_regs_user: u64,
    sample_stack_user: u32,
    clockid: i32,
    sample_regs_intr: u64,
    aux_watermark: u32,
    sample_max_stack: u16,
    reserved: u16,
}

/// One fault the kernel saw.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FaultSample {
    pub pid: u32,
    pub tid: u32,
    /// CLOCK_MONOTONIC, ns.
    pub time: u64,
    pub addr: u64,
    /// `None` when the source does not say (the software event).
    pub write: Option<bool>,
}

/// Where the samples come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    Tracepoints,
    SoftwareEvent,
}

/// Which fault events are opened (the recorder uses [`Events::Sampled`];
/// the others are diagnostics, `ptlab record --only`, that price the
/// sample against the event).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Events {
    /// The tracepoints, every fault a sample into the ring (else, without
    /// tracepoint access, the software event with its address).
    Sampled,
    /// The same tracepoints counting: no sample, no ring.
    Counting,
    /// The software page-fault event, every fault a sample with its
    /// address (`PERF_SAMPLE_ADDR`), the same ring.
    SoftwareSampled,
}

/// Which events [`Sampler::open`] tries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Opened {
    /// The two `exceptions` tracepoints.
    Tracepoints,
    /// The software page-fault event, kernel-mode faults included.
    Software,
    /// The software page-fault event, user-mode faults only.
    SoftwareUserMode,
}

/// One mapped ring buffer (one per CPU).
struct Ring {
    ptr: *mut u8,
    len: usize,
}

/// The open events and their ring buffers.
pub struct Sampler {
    fds: Vec<OwnedFd>,
    rings: Vec<Ring>,
    page: usize,
    pub source: Source,
    /// Raw offsets of `address` and `error_code` in a tracepoint sample.
    addr_off: usize,
    code_off: usize,
    /// Samples the kernel dropped because the ring was full.
    pub lost: u64,
    /// Whether the events count instead of sampling ([`Events::Counting`]).
    counting: bool,
}

// SAFETY: the ring pointers are private mappings owned by the Sampler; they
// are only touched through `&mut self`, so moving the Sampler to another
// thread (behind a Mutex) cannot race.
unsafe impl Send for Sampler {}

fn perf_event_open(attr: &Attr, pid: i32, cpu: i32) -> std::io::Result<OwnedFd> {
    // SAFETY: `attr` is a valid perf_event_attr of `attr.size` bytes that
    // lives across the call; the other arguments are plain integers.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const Attr,
            pid,
            cpu,
            -1i32,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: the kernel returned a new descriptor that nothing else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as i32) })
}

/// A tracepoint's id and the offsets of its `address` and `error_code`.
type Tracepoint = (u64, usize, usize);

/// The id and the offsets of `address` and `error_code` of an
/// `exceptions` tracepoint, from the tracefs at `tracefs`.
fn tracepoint(tracefs: &std::path::Path, name: &str) -> Option<Tracepoint> {
    let dir = tracefs
        .join("events/exceptions")
        .join(name)
        .display()
        .to_string();
    let id = std::fs::read_to_string(format!("{dir}/id"))
        .ok()?
        .trim()
        .parse()
        .ok()?;
    let format = std::fs::read_to_string(format!("{dir}/format")).ok()?;
    let offset = |field: &str| {
        format
            .lines()
            .find(|l| l.contains(&format!(" {field};")))
            .and_then(|l| l.split("offset:").nth(1))
            .and_then(|s| s.split(';').next())
            .and_then(|s| s.trim().parse().ok())
    };
    Some((id, offset("address")?, offset("error_code")?))
}

impl Sampler {
    /// Opens the fault events on `pid` (a process stopped before its
    /// `execve`), enabled at its exec and inherited by its threads; the
    /// tracepoints from the tracefs at `tracefs` (none: the software
    /// event).
    ///
    /// # Errors
    /// Neither the tracepoints nor the software event could be opened
    /// (perf_event_paranoid, a seccomp sandbox, no perf support).
    pub fn open(
        pid: i32,
        events: Events,
        tracefs: Option<&std::path::Path>,
    ) -> std::io::Result<Sampler> {
        let counting = events == Events::Counting;
        let base = |kind: u32, config: u64, sample_type: u64, extra: u64| Attr {
            kind,
            size: std::mem::size_of::<Attr>() as u32,
            config,
            // A period of 0 is a counting event: no sample, no ring.
            sample_period: u64::from(!counting),
            sample_type: sample_type | SAMPLE_TID | SAMPLE_TIME,
            flags: FLAG_DISABLED
                | FLAG_INHERIT
                | FLAG_ENABLE_ON_EXEC
                | FLAG_EXCLUDE_HV
                | FLAG_USE_CLOCKID
                | FLAG_WATERMARK
                | extra,
            clockid: libc::CLOCK_MONOTONIC,
            // With `watermark`, this is `wakeup_watermark`: bytes before
            // the kernel wakes a reader. Nobody waits on the ring (the
            // drainer polls it), so a wake-up per sample would be wasted
            // work in the program's fault path.
            wakeup_events: 1 << 20,
            ..Attr::default()
        };
        // The kernel refuses to map the ring of an inherited per-task event
        // (its children would all write one buffer): one event per CPU,
        // as perf record does, each with its own ring.
        // SAFETY: sysconf has no memory effects.
        let ncpu = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1) as usize;
        let pages = (RING_PAGES / ncpu).next_power_of_two().max(64);
        // SAFETY: sysconf has no memory effects.
        let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as usize;
        let tracepoints = match (events, tracefs) {
            (Events::SoftwareSampled, _) | (_, None) => None,
            (_, Some(t)) => {
                tracepoint(t, "page_fault_user").zip(tracepoint(t, "page_fault_kernel"))
            }
        };
        let opening = Opening {
            pid,
            ncpu,
            page,
            tracepoints,
            base: &base,
        };
        let unmap = |rings: &[Ring]| {
            for r in rings {
                // SAFETY: unmapping a ring mapped below, used nowhere else.
                unsafe { libc::munmap(r.ptr.cast(), r.len) };
            }
        };
        // Each try with the largest ring the user may lock: an
        // unprivileged user's rings are limited by perf_event_mlock_kb (516
        // KiB a CPU by default) plus RLIMIT_MEMLOCK, and a ring that does
        // not fit is refused with EPERM; halved down to MIN_RING_PAGES.
        let open_all = |tp: Opened| -> std::io::Result<(Vec<OwnedFd>, Vec<Ring>)> {
            let mut pages = pages;
            loop {
                let mut fds = Vec::new();
                let mut rings = Vec::new();
                let r =
                    opening.open_rings(if counting { 0 } else { pages }, tp, &mut fds, &mut rings);
                match r {
                    Ok(()) => return Ok((fds, rings)),
                    Err(e) => {
                        unmap(&rings);
                        if e.raw_os_error() != Some(libc::EPERM) || pages <= MIN_RING_PAGES {
                            return Err(e);
                        }
                        pages /= 2;
                    }
                }
            }
        };
        // The software event counts the faults the kernel takes in kernel
        // mode on user addresses too (read(2) filling a fresh buffer), as
        // the page_fault_kernel tracepoint does, where the user may see
        // kernel-mode events (perf_event_paranoid 1 or less, or root);
        // else the program's own user-mode faults only.
        let (fds, rings, source) = match tracepoints.map(|_| open_all(Opened::Tracepoints)) {
            Some(Ok((f, r))) => (f, r, Source::Tracepoints),
            _ => {
                let (f, r) =
                    open_all(Opened::Software).or_else(|_| open_all(Opened::SoftwareUserMode))?;
                (f, r, Source::SoftwareEvent)
            }
        };
        let (addr_off, code_off) = tracepoints.map_or((0, 0), |(u, _)| (u.1, u.2));
        Ok(Sampler {
            fds,
            rings,
            page,
            source,
            addr_off,
            code_off,
            lost: 0,
            counting,
        })
    }

    /// The events' count summed over CPUs (a counting sampler; 0 for a
    /// sampling one, whose samples are the count).
    pub fn count(&self) -> u64 {
        if !self.counting {
            return 0;
        }
        let mut total = 0;
        for fd in &self.fds {
            let mut v = 0u64;
            // SAFETY: reading one u64 (read_format 0) from an open perf
            // event into a local of that size.
            let n = unsafe {
                libc::read(
                    fd.as_raw_fd(),
                    (&mut v as *mut u64).cast(),
                    std::mem::size_of::<u64>(),
                )
            };
            if n == std::mem::size_of::<u64>() as isize {
                total += v;
            }
        }
        total
    }

    /// Moves every sample in the rings to `out`, in each ring's order.
    pub fn drain(&mut self, out: &mut Vec<FaultSample>) {
        for i in 0..self.rings.len() {
            self.drain_ring(i, out);
        }
    }

    fn drain_ring(&mut self, i: usize, out: &mut Vec<FaultSample>) {
        let (ring, ring_len) = (self.rings[i].ptr, self.rings[i].len);
        let data_size = (ring_len - self.page) as u64;
        // SAFETY: the first page of the ring is the kernel's
        // perf_event_mmap_page: data_head at 1024, data_tail at 1032 (u64
        // each, naturally aligned). data_head is read with acquire order
        // (the kernel's samples before it are visible), data_tail written
        // with release order after the samples are copied out.
        let (head_ptr, tail_ptr) = unsafe {
            (
                &*(ring.add(1024) as *const std::sync::atomic::AtomicU64),
                &*(ring.add(1032) as *const std::sync::atomic::AtomicU64),
            )
        };
        let head = head_ptr.load(std::sync::atomic::Ordering::Acquire);
        let mut tail = tail_ptr.load(std::sync::atomic::Ordering::Relaxed);
        let mut rec = Vec::with_capacity(256);
        while tail + 8 <= head {
            let read = |at: u64, buf: &mut [u8]| {
                for (i, b) in buf.iter_mut().enumerate() {
                    let off = (at + i as u64) % data_size;
                    // SAFETY: `off` < data_size, inside the data pages
                    // that follow the control page.
                    *b = unsafe { *ring.add(self.page + off as usize) };
                }
            };
            let mut h = [0u8; 8];
            read(tail, &mut h);
            let kind = u32::from_ne_bytes(h[0..4].try_into().expect("4 bytes"));
            let size = u16::from_ne_bytes(h[6..8].try_into().expect("2 bytes")) as u64;
            if size < 8 || tail + size > head {
                break;
            }
            rec.resize(size as usize - 8, 0);
            read(tail + 8, &mut rec);
            tail += size;
            match kind {
                RECORD_SAMPLE => {
                    if let Some(s) = self.parse(&rec) {
                        out.push(s);
                    }
                }
                RECORD_LOST if rec.len() >= 16 => {
                    self.lost += u64::from_ne_bytes(rec[8..16].try_into().expect("8 bytes"));
                }
                _ => {}
            }
        }
        tail_ptr.store(tail, std::sync::atomic::Ordering::Release);
    }

    fn parse(&self, r: &[u8]) -> Option<FaultSample> {
        let u32_at = |o: usize| {
            r.get(o..o + 4)
                .map(|b| u32::from_ne_bytes(b.try_into().expect("4")))
        };
        let u64_at = |o: usize| {
            r.get(o..o + 8)
                .map(|b| u64::from_ne_bytes(b.try_into().expect("8")))
        };
        let (pid, tid, time) = (u32_at(0)?, u32_at(4)?, u64_at(8)?);
        match self.source {
            Source::SoftwareEvent => Some(FaultSample {
                pid,
                tid,
                time,
                addr: u64_at(16)?,
                write: None,
            }),
            Source::Tracepoints => {
                // RAW: a u32 size, then the tracepoint's record.
                let raw = 20;
                let addr = u64_at(raw + self.addr_off)?;
                let code = u64_at(raw + self.code_off)?;
                Some(FaultSample {
                    pid,
                    tid,
                    time,
                    addr,
                    // x86 error code bit 1: the access was a write.
                    write: Some(code & 2 != 0),
                })
            }
        }
    }
}

impl Sampler {
    /// Unmaps the rings and closes the events without waiting for the
    /// kernel to release them ([`crate::release`]); the samples must have
    /// been drained.
    pub fn release(mut self) {
        self.unmap();
        crate::release::close_detached(std::mem::take(&mut self.fds));
    }

    fn unmap(&mut self) {
        for r in self.rings.drain(..) {
            // SAFETY: a mapping made in `open`, not used after this (it
            // leaves `rings` here).
            unsafe { libc::munmap(r.ptr.cast(), r.len) };
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.unmap();
    }
}
/// What opening the events of every CPU needs besides the ring size and
/// the kind of event, which [`Sampler::open`] varies between tries.
struct Opening<'a> {
    pid: i32,
    ncpu: usize,
    /// The host's page size (a ring is 1 + 2^n pages).
    page: usize,
    tracepoints: Option<(Tracepoint, Tracepoint)>,
    /// The perf attributes of one event: type, config, sample type, flags.
    base: &'a dyn Fn(u32, u64, u64, u64) -> Attr,
}

impl Opening<'_> {
    /// Opens the events of every CPU into `fds`, each CPU's ring of
    /// `pages` data pages into `rings` (none if `pages` is 0: counting
    /// events); what was opened stays there for the caller to undo.
    fn open_rings(
        &self,
        pages: usize,
        tp: Opened,
        fds: &mut Vec<OwnedFd>,
        rings: &mut Vec<Ring>,
    ) -> std::io::Result<()> {
        let (pid, page, base) = (self.pid, self.page, self.base);
        for cpu in 0..self.ncpu as i32 {
            let first = fds.len();
            if let (Opened::Tracepoints, Some((user, kernel))) = (tp, self.tracepoints) {
                for (id, _, _) in [user, kernel] {
                    fds.push(perf_event_open(
                        &base(PERF_TYPE_TRACEPOINT, id, SAMPLE_RAW, 0),
                        pid,
                        cpu,
                    )?);
                }
            } else {
                fds.push(perf_event_open(
                    &base(
                        PERF_TYPE_SOFTWARE,
                        PERF_COUNT_SW_PAGE_FAULTS,
                        SAMPLE_ADDR,
                        if tp == Opened::SoftwareUserMode {
                            FLAG_EXCLUDE_KERNEL
                        } else {
                            0
                        },
                    ),
                    pid,
                    cpu,
                )?);
            }
            if pages == 0 {
                continue;
            }
            let len = page * (pages + 1);
            // SAFETY: a fresh shared mapping of a perf descriptor, of
            // the size the kernel requires (1 + 2^n pages); checked
            // below.
            let ptr = unsafe {
                libc::mmap(
                    std::ptr::null_mut(),
                    len,
                    libc::PROT_READ | libc::PROT_WRITE,
                    libc::MAP_SHARED,
                    fds[first].as_raw_fd(),
                    0,
                )
            };
            if ptr == libc::MAP_FAILED {
                return Err(std::io::Error::last_os_error());
            }
            rings.push(Ring {
                ptr: ptr.cast(),
                len,
            });
            for fd in &fds[first + 1..] {
                // SAFETY: both descriptors are open perf events of the
                // same task and CPU; SET_OUTPUT makes the second write
                // into the first's ring.
                let r =
                    unsafe { libc::ioctl(fd.as_raw_fd(), IOC_SET_OUTPUT, fds[first].as_raw_fd()) };
                if r < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
        }
        Ok(())
    }
}
