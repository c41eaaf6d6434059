// ptlab's TCG plugin for QEMU user mode: every load and store of the guest
// program, and its memory system calls, written as compact binary words to
// a pipe that `ptlab trace` reads and converts into a trace.
//
// Part of ptlab (MIT OR Apache-2.0). Built by `ptlab trace` with rustc on
// first use; loaded by QEMU with `-plugin FILE,fd=N[,filter=off]`. It calls
// QEMU only through the declarations in qemu_plugin_api.rs (the project's
// own).
//
// ## The stream (little-endian u64 words)
// Blocks, each written whole by the plugin's writer thread: a header word `0xB10C << 48 | vcpu << 32 | n`
// and n words. A word's top three bits say what it is:
//   0 load (the low 61 bits: the address)     1 store (the address)
//   2 hits: that many accesses left out (the filter, below)
//   3 system call: bits 0-15 its number, 16-31 the bytes of a path that
//     follows; then 7 words (6 arguments, the return value) and the path
//     padded to whole words
//   4 the host's /proc/self/maps when the first block was translated:
//     bits 0-31 its bytes, then the text padded to whole words
//   5 the end (the program exited; written once, by the first process)
//
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

const TAG_SHIFT: u32 = 61;
const LOAD: u64 = 0;
const STORE: u64 = 1 << TAG_SHIFT;
const HITS: u64 = 2 << TAG_SHIFT;
const SYSCALL: u64 = 3 << TAG_SHIFT;
const MAPS: u64 = 4 << TAG_SHIFT;
const END: u64 = 5 << TAG_SHIFT;
const BLOCK: u64 = 0xB10C << 48;
const ADDR_MASK: u64 = (1 << TAG_SHIFT) - 1;

/// Words a slot holds before it writes them (512 KiB).
const BUF_WORDS: usize = 64 << 10;
const MAX_VCPUS: usize = 1024;
const NO_PAGE: u64 = u64::MAX;

// The memory system calls of x86-64 Linux the stream carries.
const MEMORY_CALLS: [i64; 9] = [9, 11, 10, 28, 149, 325, 150, 12, 25];
// mmap: the path of its file descriptor is read at entry.
const SYS_MMAP: i64 = 9;
const MAP_ANONYMOUS: u64 = 0x20;

struct Slot {
    buf: Vec<u64>,
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

struct Out {
    tx: SyncSender<Vec<u64>>,
    pid: u32,
}

/// Blocks queued for the writer thread at most (with 512 KiB blocks,
/// 256 MiB): QEMU's threads go on while ptlab catches up.
const QUEUE_BLOCKS: usize = 512;
static WRITER: Mutex<Option<JoinHandle<()>>> = Mutex::new(None);

extern "C" {
    fn fcntl(fd: c_int, cmd: c_int, ...) -> c_int;
}

/// Hands `block` (its first word reserved for the header) to the writer
/// thread, which writes it as one block; a full queue makes the caller wait.
fn write_block(vcpu: u32, block: Vec<u64>) {
    if block.len() <= 1 {
        return;
    }
    let mut block = block;
    block[0] = BLOCK | u64::from(vcpu & 0xffff) << 32 | (block.len() - 1) as u64;
    let out = OUT.lock().unwrap_or_else(|e| e.into_inner());
    let Some(o) = out.as_ref() else { return };
    // A forked child has the queue but no writer thread.
    if o.pid != std::process::id() {
        return;
    }
    let tx = o.tx.clone();
    drop(out);
    // A writer that stopped (ptlab went away) drops what comes.
    let _ = tx.send(block);
}

/// The writer thread: blocks from the queue to the pipe, in order.
fn writer(mut file: File, rx: Receiver<Vec<u64>>) {
    let mut ok = true;
    for block in rx {
        if !ok {
            continue;
        }
        // SAFETY: the words are plain integers, read as their bytes for
        // the length of the vector; the host is little-endian (x86-64),
        // the stream's byte order.
        let bytes =
            unsafe { std::slice::from_raw_parts(block.as_ptr().cast::<u8>(), block.len() * 8) };
        // A reader that went away (ptlab killed) ends the stream, not QEMU.
        ok = file.write_all(bytes).is_ok();
    }
}

fn slot(vcpu: c_uint) -> Option<&'static mut Slot> {
    let cell = SLOTS.get(vcpu as usize)?;
    let mut p = cell.load(Ordering::Acquire);
    if p.is_null() {
        let fresh = Box::into_raw(Box::new(Slot {
            // Word 0 is the block header's place.
            buf: {
                let mut b = Vec::with_capacity(BUF_WORDS + 64);
                b.push(0);
                b
            },
            page: NO_PAGE,
            stored: false,
            hits: 0,
            epoch: EPOCH.load(Ordering::Relaxed),
            args: [0; 6],
            path: Vec::new(),
        }));
        p = match cell.compare_exchange(std::ptr::null_mut(), fresh, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => fresh,
            Err(other) => {
                // SAFETY: `fresh` came from Box::into_raw just above and was
                // not published.
                drop(unsafe { Box::from_raw(fresh) });
                other
            }
        };
    }
    // SAFETY: slots are never freed, and only the thread running this vCPU
    // uses it (invariant 1), so no other reference to it exists now.
    Some(unsafe { &mut *p })
}

impl Slot {
    /// Writes the pending hits word (so hits stay next to their access).
    #[inline]
    fn close_hits(&mut self) {
        if self.hits > 0 {
            self.buf.push(HITS | self.hits);
            self.hits = 0;
        }
    }

    fn flush(&mut self, vcpu: u32) {
        self.close_hits();
        // The next access is written whatever its page: the reader may see
        // another thread's block in between.
        self.page = NO_PAGE;
        if self.buf.len() > 1 {
            let mut fresh = Vec::with_capacity(BUF_WORDS + 64);
            fresh.push(0);
            write_block(vcpu, std::mem::replace(&mut self.buf, fresh));
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
        self.buf.push(if store { STORE } else { LOAD } | (vaddr & ADDR_MASK));
        if self.buf.len() >= BUF_WORDS {
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

fn padded(tag: u64, bytes: &[u8], out: &mut Vec<u64>) {
    out.push(tag | bytes.len() as u64);
    for c in bytes.chunks(8) {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        out.push(u64::from_le_bytes(w));
    }
}

extern "C" fn on_tb_trans(_id: qemu_plugin_id_t, tb: *mut qemu_plugin_tb) {
    if !SNAPSHOT_TAKEN.swap(true, Ordering::AcqRel) {
        // The mappings QEMU's loader made for the program (and QEMU's own),
        // before the program's first instruction runs.
        let maps = std::fs::read("/proc/self/maps").unwrap_or_default();
        let mut words = Vec::with_capacity(maps.len() / 8 + 3);
        words.push(0);
        padded(MAPS, &maps, &mut words);
        write_block(0, words);
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

#[allow(clippy::too_many_arguments)]
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
    if !MEMORY_CALLS.contains(&num) {
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
    if !MEMORY_CALLS.contains(&num) {
        return;
    }
    let Some(s) = slot(vcpu) else { return };
    s.close_hits();
    let path = std::mem::take(&mut s.path);
    s.buf.push(SYSCALL | (path.len() as u64) << 16 | (num as u64 & 0xffff));
    let args = s.args;
    s.buf.extend_from_slice(&args);
    s.buf.push(ret as u64);
    for c in path.chunks(8) {
        let mut w = [0u8; 8];
        w[..c.len()].copy_from_slice(c);
        s.buf.push(u64::from_le_bytes(w));
    }
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
    write_block(0, vec![0, END | lost.min(ADDR_MASK)]);
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
