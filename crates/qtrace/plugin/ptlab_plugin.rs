// ptlab's TCG plugin for QEMU user mode: every load and store of the guest
// program, and its memory system calls, written as compact binary words to
// a pipe that `ptlab trace` reads and converts into a trace.
//
// Part of ptlab (MIT OR Apache-2.0). Built by `ptlab trace` with rustc on
// first use; loaded by QEMU with `-plugin FILE,fd=N[,filter=off]`. It calls
// QEMU only through the declarations in qemu_plugin_api.rs (the project's
// own).
//
// ## The stream
// Blocks, each written whole by the plugin's writer thread: a header word
// (little-endian u64) `0xB10C << 48 | vcpu << 32 | n`, then n bytes of
// records. Accesses and hits are already in the trace format's own encoding
// (crates/trace/src/codec.rs), so ptlab copies runs of them unread when
// they stay in one region:
//   0x12 load, 0x13 store: LEB128 zigzag(address - the block's previous
//        access's address; 0 before the first)
//   0x18 hits: LEB128 count of accesses left out (the filter, below)
// and the rest in a form of its own (integers little-endian):
//   0xE3 system call: u16 number, u16 path bytes, 7 u64 (6 arguments, the
//        return value), the path
//   0xE4 the host's /proc/self/maps when the first block was translated
//        (or, in a forked child, at the fork): u32 bytes, the text
//   0xE5 the end (the program exited): u64 accesses lost
//   0xE6 execve or execveat about to run: u16 path bytes, the path (what
//        follows, if the call succeeds, runs outside QEMU, untraced)
//   0xE7 a child process was forked (clone without CLONE_VM): u64 its pid
//        (written by the parent when the call returns; the child's own
//        accesses are not traced)

// ## The filter (on unless `filter=off`)
// An access is left out, and counted in the next hits word, when it falls
// in the same 4 KiB page as the same thread's previous access and is a load,
// or a store after a store to that page. The first store to a page after
// loads is kept (a TLB entry filled by a load has its dirty bit clear).
// Every memory system call of any thread starts every thread afresh, and a
// thread's hits are written right after the access they follow, within one
// block, so a replay sees them next to it.
//
// ## Invariants
// 1. A vCPU's slot is used only by the thread that runs that vCPU (QEMU
//    user mode runs each guest thread on its own host thread with its own
//    vCPU index), except at exit, when QEMU has stopped the others.
// 2. Blocks go whole through one queue to one writer thread, so blocks of
//    different threads never interleave; a forked child (same plugin, other
//    pid, no writer thread) queues nothing.
// 4. Within a block, an access's delta is from the previous access of the
//    same block (the first from 0), so each block decodes on its own.
// 5. A slot's buffer has capacity BUF_BYTES + SLACK + HEAD and is flushed
//    as soon as an access leaves it holding BUF_BYTES or more; between two
//    such checks at most SLACK bytes are put (a fork record and its hits,
//    or two accesses of a page-crossing access with their hits: 11 bytes
//    each), so `Slot::put` always has room for its 11 bytes.
// 3. The queue is bounded (QUEUE_BLOCKS): memory stays bounded when ptlab
//    falls behind, and QEMU waits instead.

mod qemu_plugin_api;

use qemu_plugin_api::*;
use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::fs::File;
use std::io::Write;
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, AtomicPtr, AtomicU64, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;
use std::thread::JoinHandle;

#[no_mangle]
pub static qemu_plugin_version: c_int = QEMU_PLUGIN_VERSION;

const LOAD: u8 = 0x12;
const STORE: u8 = 0x13;
const HITS: u8 = 0x18;
const SYSCALL: u8 = 0xE3;
const MAPS: u8 = 0xE4;
const END: u8 = 0xE5;
const EXEC: u8 = 0xE6;
const FORK: u8 = 0xE7;
const BLOCK: u64 = 0xB10C << 48;
/// The header word's place at the start of every block.
const HEAD: usize = 8;

/// Bytes a slot holds before it writes them (256 KiB).
const BUF_BYTES: usize = 256 << 10;
/// Room past BUF_BYTES for the access (two of them, page-crossing) and hits
/// record that may follow the last check.
const SLACK: usize = 64;
const MAX_VCPUS: usize = 1024;
const NO_PAGE: u64 = u64::MAX;

// The memory system calls of x86-64 Linux the stream carries.
const MEMORY_CALLS: [i64; 9] = [9, 11, 10, 28, 149, 325, 150, 12, 25];
// The calls that start a process or replace the program.
const SYS_CLONE: i64 = 56;
const SYS_FORK: i64 = 57;
const SYS_VFORK: i64 = 58;
const SYS_EXECVE: i64 = 59;
const SYS_EXECVEAT: i64 = 322;
const CLONE_THREAD: u64 = 0x10000;
// mmap: the path of its file descriptor is read at entry.
const SYS_MMAP: i64 = 9;
const MAP_ANONYMOUS: u64 = 0x20;

struct Slot {
    buf: Vec<u8>,
    /// The block's previous access's address (0 at the block's start).
    prev: u64,
    page: u64,
    stored: bool,
    hits: u64,
    epoch: u64,
    /// The arguments of the call in flight, and its file's path.
    args: [u64; 6],
    path: Vec<u8>,
}

static SLOTS: [AtomicPtr<Slot>; MAX_VCPUS] = [const { AtomicPtr::new(std::ptr::null_mut()) }; MAX_VCPUS];
/// Bumped by every memory system call: every thread's filter starts afresh.
static EPOCH: AtomicU64 = AtomicU64::new(0);
static FILTER: AtomicBool = AtomicBool::new(true);
static SNAPSHOT_TAKEN: AtomicBool = AtomicBool::new(false);
/// Accesses of vCPUs past MAX_VCPUS, which the stream cannot carry.
static OVERFLOW: AtomicU64 = AtomicU64::new(0);
static OUT: Mutex<Option<Out>> = Mutex::new(None);
/// Blocks handed to the writer thread, and blocks it has written.
static QUEUED: AtomicU64 = AtomicU64::new(0);
static WRITTEN: AtomicU64 = AtomicU64::new(0);

struct Out {
    tx: SyncSender<Vec<u8>>,
    pid: u32,
}

/// Blocks queued for the writer thread at most (with 512 KiB blocks,
/// 256 MiB): QEMU's threads go on while ptlab catches up.
const QUEUE_BLOCKS: usize = 512;
static WRITER: Mutex<Option<JoinHandle<()>>> = Mutex::new(None);

extern "C" {
    fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
}

/// A fresh block buffer, its header's place reserved.
fn fresh_block() -> Vec<u8> {
    let mut b = Vec::with_capacity(BUF_BYTES + SLACK + HEAD);
    b.resize(HEAD, 0);
    b
}

/// Hands `block` (its first 8 bytes reserved for the header) to the writer
/// thread, which writes it as one block; a full queue makes the caller wait.
fn write_block(vcpu: u32, block: Vec<u8>) {
    if block.len() <= HEAD {
        return;
    }
    let mut block = block;
    let head = BLOCK | u64::from(vcpu & 0xffff) << 32 | (block.len() - HEAD) as u64;
    block[..HEAD].copy_from_slice(&head.to_le_bytes());
    let out = OUT.lock().unwrap_or_else(|e| e.into_inner());
    let Some(o) = out.as_ref() else { return };
    // A forked child has the queue but no writer thread.
    if o.pid != std::process::id() {
        return;
    }
    let tx = o.tx.clone();
    drop(out);
    // A writer that stopped (ptlab went away) drops what comes.
    if tx.send(block).is_ok() {
        QUEUED.fetch_add(1, Ordering::AcqRel);
    }
}

/// Waits until the writer has written every block queued so far (before an
/// execve, which would drop the queue with the process image).
fn drain() {
    let first = OUT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .is_some_and(|o| o.pid == std::process::id());
    // A forked child has no writer thread (invariant 2): nothing to wait for.
    if !first {
        return;
    }
    let want = QUEUED.load(Ordering::Acquire);
    // Bounded: a writer that stopped (ptlab gone) is not waited for long.
    for _ in 0..10_000 {
        if WRITTEN.load(Ordering::Acquire) >= want {
            return;
        }
        std::thread::sleep(std::time::Duration::from_millis(1));
    }
}

/// The writer thread: blocks from the queue to the pipe, in order.
fn writer(mut file: File, rx: Receiver<Vec<u8>>) {
    let mut ok = true;
    for block in rx {
        // A reader that went away (ptlab killed) ends the stream, not QEMU.
        if ok {
            ok = file.write_all(&block).is_ok();
        }
        WRITTEN.fetch_add(1, Ordering::AcqRel);
    }
}

#[inline(always)]
fn slot(vcpu: c_uint) -> Option<&'static mut Slot> {
    let cell = SLOTS.get(vcpu as usize)?;
    let p = cell.load(Ordering::Acquire);
    let p = if p.is_null() { new_slot(cell) } else { p };
    // SAFETY: slots are never freed, and only the thread running this vCPU
    // uses it (invariant 1), so no other reference to it exists now.
    Some(unsafe { &mut *p })
}

/// A vCPU's first access: its slot made and published.
#[cold]
fn new_slot(cell: &AtomicPtr<Slot>) -> *mut Slot {
    {
        let fresh = Box::into_raw(Box::new(Slot {
            buf: fresh_block(),
            prev: 0,
            page: NO_PAGE,
            stored: false,
            hits: 0,
            epoch: EPOCH.load(Ordering::Relaxed),
            args: [0; 6],
            path: Vec::new(),
        }));
        match cell.compare_exchange(std::ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => fresh,
            Err(other) => {
                // SAFETY: `fresh` came from Box::into_raw just above and was
                // not published.
                drop(unsafe { Box::from_raw(fresh) });
                other
            }
        }
    }
}

impl Slot {
    /// Appends a tag and a LEB128 number (at most 11 bytes).
    #[inline(always)]
    fn put(&mut self, tag: u8, mut v: u64) {
        let len = self.buf.len();
        debug_assert!(self.buf.capacity() - len >= 11);
        // SAFETY: the buffer has room for 11 more bytes (invariant 5): the
        // writes stay inside its capacity, and the length is set to cover
        // exactly the bytes written.
        unsafe {
            let p = self.buf.as_mut_ptr().add(len);
            *p = tag;
            let mut i = 1;
            while v >= 0x80 {
                *p.add(i) = v as u8 | 0x80;
                v >>= 7;
                i += 1;
            }
            *p.add(i) = v as u8;
            self.buf.set_len(len + i + 1);
        }
    }

    /// Writes the pending hits record (so hits stay next to their access).
    #[inline(always)]
    fn close_hits(&mut self) {
        if self.hits > 0 {
            self.put(HITS, self.hits);
            self.hits = 0;
        }
    }

    fn flush(&mut self, vcpu: u32) {
        self.close_hits();
        // The next access is written whatever its page: the reader may see
        // another thread's block in between.
        self.page = NO_PAGE;
        self.prev = 0;
        if self.buf.len() > HEAD {
            write_block(vcpu, std::mem::replace(&mut self.buf, fresh_block()));
        }
    }

    #[inline(always)]
    fn access(&mut self, vcpu: u32, vaddr: u64, store: bool) {
        let epoch = EPOCH.load(Ordering::Relaxed);
        if epoch != self.epoch {
            self.epoch = epoch;
            self.close_hits();
            self.page = NO_PAGE;
        }
        let page = vaddr >> 12;
        if page == self.page {
            if !store || self.stored {
                if FILTER.load(Ordering::Relaxed) {
                    self.hits += 1;
                    return;
                }
            } else {
                self.stored = true;
            }
        } else {
            self.page = page;
            self.stored = store;
        }
        self.close_hits();
        let d = vaddr.wrapping_sub(self.prev) as i64;
        self.prev = vaddr;
        self.put(if store { STORE } else { LOAD }, ((d << 1) ^ (d >> 63)) as u64);
        if self.buf.len() >= BUF_BYTES {
            self.flush(vcpu);
        }
    }
}

#[inline(always)]
fn on_access(vcpu: c_uint, info: qemu_plugin_meminfo_t, vaddr: u64, store: bool) {
    let Some(s) = slot(vcpu) else {
        OVERFLOW.fetch_add(1, Ordering::Relaxed);
        return;
    };
    s.access(vcpu, vaddr, store);
    // An access that crosses into the next page touches it too.
    if vaddr & 0xfff > 0xfc0 {
        // SAFETY: `info` is the descriptor QEMU passed to this callback.
        let size = 1u64 << unsafe { qemu_plugin_mem_size_shift(info) };
        let last = vaddr + size - 1;
        if last >> 12 != vaddr >> 12 {
            s.access(vcpu, last & !0xfff, store);
        }
    }
}

extern "C" fn on_mem(vcpu: c_uint, info: qemu_plugin_meminfo_t, vaddr: u64, _u: *mut c_void) {
    // SAFETY: `info` is the descriptor QEMU passed to this callback.
    let store = unsafe { qemu_plugin_mem_is_store(info) };
    on_access(vcpu, info, vaddr, store);
}

/// The maps snapshot as one block of its own.
fn write_maps() {
    let maps = std::fs::read("/proc/self/maps").unwrap_or_default();
    let mut b = fresh_block();
    b.push(MAPS);
    b.extend_from_slice(&(maps.len() as u32).to_le_bytes());
    b.extend_from_slice(&maps);
    write_block(0, b);
}

extern "C" fn on_tb_trans(_id: qemu_plugin_id_t, tb: *mut qemu_plugin_tb) {
    if !SNAPSHOT_TAKEN.swap(true, Ordering::AcqRel) {
        // The mappings QEMU's loader made for the program (and QEMU's own),
        // before the program's first instruction runs.
        write_maps();
    }
    // SAFETY: `tb` is the block QEMU is translating, valid during this call;
    // indices are below its instruction count.
    unsafe {
        let n = qemu_plugin_tb_n_insns(tb);
        for i in 0..n {
            let insn = qemu_plugin_tb_get_insn(tb, i);
            // One callback for both kinds, asking each access whether it
            // stores: QEMU 7.2 calls callbacks registered for loads only or
            // stores only on the wrong accesses (measured: a load-only
            // callback saw exactly the stores).
            qemu_plugin_register_vcpu_mem_cb(
                insn,
                on_mem,
                QEMU_PLUGIN_CB_NO_REGS,
                QEMU_PLUGIN_MEM_RW,
                std::ptr::null_mut(),
            );
        }
    }
}

// The signature is QEMU's (qemu_plugin_vcpu_syscall_cb_t: the call's
// number and its eight arguments); clippy leaves an extern "C" function's
// argument count alone.
extern "C" fn on_syscall(
    _id: qemu_plugin_id_t,
    vcpu: c_uint,
    num: i64,
    a1: u64,
    a2: u64,
    a3: u64,
    a4: u64,
    a5: u64,
    a6: u64,
    _a7: u64,
    _a8: u64,
) {
    if num == SYS_EXECVE || num == SYS_EXECVEAT {
        let Some(s) = slot(vcpu) else { return };
        // The path: QEMU user mode on x86-64 runs the guest at its own
        // addresses (guest base 0), so the guest's pointer is readable here.
        let p = if num == SYS_EXECVE { a1 } else { a2 };
        let path = if p == 0 {
            Vec::new()
        } else {
            // SAFETY: a NUL-terminated string the guest passes to execve, in
            // memory this process maps (the call would fault otherwise, and
            // so would QEMU reading it right after this callback).
            unsafe { CStr::from_ptr(p as *const c_char) }.to_bytes()[..].to_vec()
        };
        let path = &path[..path.len().min(4096)];
        s.close_hits();
        s.buf.push(EXEC);
        s.buf.extend_from_slice(&(path.len() as u16).to_le_bytes());
        s.buf.extend_from_slice(path);
        s.flush(vcpu);
        // If the call succeeds the queue dies with this process image.
        drain();
        return;
    }
    if !MEMORY_CALLS.contains(&num) {
        if matches!(num, SYS_CLONE | SYS_FORK | SYS_VFORK) {
            if let Some(s) = slot(vcpu) {
                s.args[0] = a1;
            }
        }
        return;
    }
    let Some(s) = slot(vcpu) else { return };
    s.args = [a1, a2, a3, a4, a5, a6];
    s.path.clear();
    if num == SYS_MMAP && a4 & MAP_ANONYMOUS == 0 && (a5 as i64) >= 0 {
        // QEMU user mode shares the program's descriptors.
        if let Ok(p) = std::fs::read_link(format!("/proc/self/fd/{}", a5 as i64)) {
            s.path.extend_from_slice(p.as_os_str().as_encoded_bytes());
        }
    }
}

extern "C" fn on_syscall_ret(_id: qemu_plugin_id_t, vcpu: c_uint, num: i64, ret: i64) {
    if matches!(num, SYS_CLONE | SYS_FORK | SYS_VFORK) {
        // The parent's side of a new process (not a thread): ret is its pid.
        let Some(s) = slot(vcpu) else { return };
        let thread = num == SYS_CLONE && s.args[0] & CLONE_THREAD != 0;
        if ret > 0 && !thread {
            s.close_hits();
            s.buf.push(FORK);
            s.buf.extend_from_slice(&(ret as u64).to_le_bytes());
        }
        return;
    }
    if !MEMORY_CALLS.contains(&num) {
        return;
    }
    let Some(s) = slot(vcpu) else { return };
    s.close_hits();
    let path = std::mem::take(&mut s.path);
    s.buf.push(SYSCALL);
    s.buf.extend_from_slice(&(num as u16).to_le_bytes());
    s.buf.extend_from_slice(&(path.len().min(0xffff) as u16).to_le_bytes());
    let args = s.args;
    for v in args.iter().chain(std::iter::once(&(ret as u64))) {
        s.buf.extend_from_slice(&v.to_le_bytes());
    }
    s.buf.extend_from_slice(&path[..path.len().min(0xffff)]);
    s.path = path;
    EPOCH.fetch_add(1, Ordering::Relaxed);
    // Written now, so that other threads' later blocks come after it.
    s.flush(vcpu);
}

extern "C" fn on_vcpu_exit(_id: qemu_plugin_id_t, vcpu: c_uint) {
    if let Some(s) = slot(vcpu) {
        s.flush(vcpu);
    }
}

extern "C" fn on_exit(_id: qemu_plugin_id_t, _u: *mut c_void) {
    for (i, cell) in SLOTS.iter().enumerate() {
        let p = cell.load(Ordering::Acquire);
        if !p.is_null() {
            // SAFETY: at exit QEMU has stopped every other vCPU (invariant 1).
            unsafe { &mut *p }.flush(i as u32);
        }
    }
    let lost = OVERFLOW.load(Ordering::Relaxed);
    let mut b = fresh_block();
    b.push(END);
    b.extend_from_slice(&lost.to_le_bytes());
    write_block(0, b);
    // The queue closes and the writer drains it before QEMU exits (in the
    // first process only: a forked child has no writer thread to join).
    let first = OUT
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .take()
        .is_some_and(|o| o.pid == std::process::id());
    if let Some(h) = WRITER.lock().unwrap_or_else(|e| e.into_inner()).take() {
        if first {
            let _ = h.join();
        }
    }
}

fn arg<'a>(argv: &'a [*mut c_char], key: &str) -> Option<&'a str> {
    argv.iter().find_map(|&a| {
        // SAFETY: QEMU passes argc NUL-terminated strings.
        let s = unsafe { CStr::from_ptr(a) }.to_str().ok()?;
        s.strip_prefix(key)?.strip_prefix('=')
    })
}

fn say(msg: &str) {
    let s = std::ffi::CString::new(msg).unwrap_or_default();
    // SAFETY: a NUL-terminated string that lives across the call.
    unsafe { qemu_plugin_outs(s.as_ptr()) };
}

/// # Safety
/// Called by QEMU once, with `argc` valid strings at `argv`.
#[no_mangle]
pub unsafe extern "C" fn qemu_plugin_install(
    id: qemu_plugin_id_t,
    info: *const qemu_info_t,
    argc: c_int,
    argv: *mut *mut c_char,
) -> c_int {
    // SAFETY: QEMU passes a valid description.
    if unsafe { (*info).system_emulation } {
        say("ptlab plugin: user mode only\n");
        return -1;
    }
    let argv = if argc > 0 && !argv.is_null() {
        // SAFETY: argc pointers at argv, as QEMU documents.
        unsafe { std::slice::from_raw_parts(argv, argc as usize) }
    } else {
        &[]
    };
    let Some(fd) = arg(argv, "fd").and_then(|v| v.parse::<c_int>().ok()) else {
        say("ptlab plugin: needs fd=N, the pipe to write to\n");
        return -1;
    };
    if arg(argv, "filter") == Some("off") {
        FILTER.store(false, Ordering::Relaxed);
    }
    // The pipe is QEMU's: a program the guest executes must not inherit it.
    // SAFETY: F_SETFD (2) with FD_CLOEXEC (1) on a descriptor number.
    unsafe { fcntl(fd, 2, 1) };
    // SAFETY: ptlab handed this descriptor to QEMU for the plugin alone;
    // the writer thread owns it from here.
    let file = unsafe { File::from_raw_fd(fd) };
    let (tx, rx) = sync_channel(QUEUE_BLOCKS);
    let Ok(h) = std::thread::Builder::new()
        .name("ptlab-writer".into())
        .spawn(move || writer(file, rx))
    else {
        say("ptlab plugin: cannot start its writer thread\n");
        return -1;
    };
    *WRITER.lock().unwrap_or_else(|e| e.into_inner()) = Some(h);
    *OUT.lock().unwrap_or_else(|e| e.into_inner()) = Some(Out {
        tx,
        pid: std::process::id(),
    });
    // SAFETY: registering callbacks with the id QEMU gave.
    unsafe {
        qemu_plugin_register_vcpu_tb_trans_cb(id, on_tb_trans);
        qemu_plugin_register_vcpu_syscall_cb(id, on_syscall);
        qemu_plugin_register_vcpu_syscall_ret_cb(id, on_syscall_ret);
        qemu_plugin_register_vcpu_exit_cb(id, on_vcpu_exit);
        qemu_plugin_register_atexit_cb(id, on_exit, std::ptr::null_mut());
    }
    0
}
