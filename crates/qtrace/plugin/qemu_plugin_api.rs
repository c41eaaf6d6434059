// ptlab's own declarations of the part of QEMU's TCG plugin interface that
// the ptlab trace plugin calls, written from the interface's documentation
// (QEMU's "TCG Plugins" manual and API reference). No QEMU header is copied
// or included: these are the C types and function signatures as documented,
// spelled in Rust. This file is part of ptlab, licensed MIT OR Apache-2.0
// like the rest of the project; QEMU itself is GPL-2.0-or-later and is only
// called through its documented C ABI at run time (a plugin is loaded by
// QEMU with dlopen).
//
// The plugin API version declared is 1, the one QEMU 6.0 to 8.0 accept
// (Debian's qemu-user 7.2 among them).

#![allow(non_camel_case_types, dead_code)]

use std::ffi::{c_char, c_int, c_uint, c_void};

/// The API version this plugin is written against.
pub const QEMU_PLUGIN_VERSION: c_int = 1;

/// A plugin's identity, given at install and passed back in callbacks.
pub type qemu_plugin_id_t = u64;
/// Opaque description of one memory access (size, sign, endianness, store).
pub type qemu_plugin_meminfo_t = u32;

/// What QEMU tells a plugin at install.
#[repr(C)]
pub struct qemu_info_t {
    pub target_name: *const c_char,
    pub version_min: c_int,
    pub version_cur: c_int,
    pub system_emulation: bool,
    // A union of system-mode figures follows (vCPU counts); user mode has
    // none and the plugin never reads it.
    pub smp_vcpus: c_int,
    pub max_vcpus: c_int,
}

/// Opaque: a translation block being translated.
#[repr(C)]
pub struct qemu_plugin_tb {
    _opaque: [u8; 0],
}
/// Opaque: one instruction of a translation block being translated.
#[repr(C)]
pub struct qemu_plugin_insn {
    _opaque: [u8; 0],
}

/// Whether a callback reads or writes the CPU's registers (none here).
pub const QEMU_PLUGIN_CB_NO_REGS: c_int = 0;
/// Which accesses a memory callback is called for.
pub const QEMU_PLUGIN_MEM_R: c_int = 1;
pub const QEMU_PLUGIN_MEM_W: c_int = 2;
pub const QEMU_PLUGIN_MEM_RW: c_int = 3;

pub type qemu_plugin_udata_cb_t = extern "C" fn(id: qemu_plugin_id_t, userdata: *mut c_void);
pub type qemu_plugin_vcpu_simple_cb_t = extern "C" fn(id: qemu_plugin_id_t, vcpu_index: c_uint);
pub type qemu_plugin_vcpu_tb_trans_cb_t =
    extern "C" fn(id: qemu_plugin_id_t, tb: *mut qemu_plugin_tb);
pub type qemu_plugin_vcpu_mem_cb_t = extern "C" fn(
    vcpu_index: c_uint,
    info: qemu_plugin_meminfo_t,
    vaddr: u64,
    userdata: *mut c_void,
);
pub type qemu_plugin_vcpu_syscall_cb_t = extern "C" fn(
    id: qemu_plugin_id_t,
    vcpu_index: c_uint,
    num: i64,
    a1: u64,
    a2: u64,
    a3: u64,
    a4: u64,
    a5: u64,
    a6: u64,
    a7: u64,
    a8: u64,
);
pub type qemu_plugin_vcpu_syscall_ret_cb_t =
    extern "C" fn(id: qemu_plugin_id_t, vcpu_idx: c_uint, num: i64, ret: i64);

extern "C" {
    pub fn qemu_plugin_register_vcpu_tb_trans_cb(
        id: qemu_plugin_id_t,
        cb: qemu_plugin_vcpu_tb_trans_cb_t,
    );
    pub fn qemu_plugin_register_vcpu_exit_cb(
        id: qemu_plugin_id_t,
        cb: qemu_plugin_vcpu_simple_cb_t,
    );
    pub fn qemu_plugin_register_atexit_cb(
        id: qemu_plugin_id_t,
        cb: qemu_plugin_udata_cb_t,
        userdata: *mut c_void,
    );
    pub fn qemu_plugin_register_vcpu_syscall_cb(
        id: qemu_plugin_id_t,
        cb: qemu_plugin_vcpu_syscall_cb_t,
    );
    pub fn qemu_plugin_register_vcpu_syscall_ret_cb(
        id: qemu_plugin_id_t,
        cb: qemu_plugin_vcpu_syscall_ret_cb_t,
    );
    pub fn qemu_plugin_tb_n_insns(tb: *const qemu_plugin_tb) -> usize;
    pub fn qemu_plugin_tb_get_insn(tb: *const qemu_plugin_tb, idx: usize)
        -> *mut qemu_plugin_insn;
    pub fn qemu_plugin_register_vcpu_mem_cb(
        insn: *mut qemu_plugin_insn,
        cb: qemu_plugin_vcpu_mem_cb_t,
        flags: c_int,
        rw: c_int,
        userdata: *mut c_void,
    );
    pub fn qemu_plugin_mem_size_shift(info: qemu_plugin_meminfo_t) -> c_uint;
    pub fn qemu_plugin_mem_is_store(info: qemu_plugin_meminfo_t) -> bool;
    pub fn qemu_plugin_outs(string: *const c_char);
}
