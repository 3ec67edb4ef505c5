//! The uapi of `include/uapi/linux/android/binder.h` and `binderfs.h` as of Linux 6.12,
//! written by hand for the 64-bit layout (`BINDER_IPC_32BIT` unset).
//!
//! Every struct carries compile-time size and offset checks so a typo in a field cannot
//! silently shift the layout the kernel sees.

#![allow(non_camel_case_types)]

use core::mem::{offset_of, size_of};

pub type binder_size_t = u64;
pub type binder_uintptr_t = u64;

// ---------------------------------------------------------------------------
// ioctl number encoding (asm-generic/ioctl.h, used by arm64 and x86_64)
// ---------------------------------------------------------------------------

pub const IOC_NRBITS: u32 = 8;
pub const IOC_TYPEBITS: u32 = 8;
pub const IOC_SIZEBITS: u32 = 14;
pub const IOC_NRSHIFT: u32 = 0;
pub const IOC_TYPESHIFT: u32 = IOC_NRSHIFT + IOC_NRBITS;
pub const IOC_SIZESHIFT: u32 = IOC_TYPESHIFT + IOC_TYPEBITS;
pub const IOC_DIRSHIFT: u32 = IOC_SIZESHIFT + IOC_SIZEBITS;
pub const IOC_NONE: u32 = 0;
pub const IOC_WRITE: u32 = 1;
pub const IOC_READ: u32 = 2;

/// `_IOC(dir, type, nr, size)`.
pub const fn ioc(dir: u32, ty: u8, nr: u8, size: usize) -> u32 {
    assert!(size < (1 << IOC_SIZEBITS));
    (dir << IOC_DIRSHIFT)
        | ((ty as u32) << IOC_TYPESHIFT)
        | ((nr as u32) << IOC_NRSHIFT)
        | ((size as u32) << IOC_SIZESHIFT)
}
/// `_IO(type, nr)`.
pub const fn io(ty: u8, nr: u8) -> u32 {
    ioc(IOC_NONE, ty, nr, 0)
}
/// `_IOR(type, nr, T)`: the size argument is `size_of::<T>()`.
pub const fn ior(ty: u8, nr: u8, size: usize) -> u32 {
    ioc(IOC_READ, ty, nr, size)
}
/// `_IOW(type, nr, T)`.
pub const fn iow(ty: u8, nr: u8, size: usize) -> u32 {
    ioc(IOC_WRITE, ty, nr, size)
}
/// `_IOWR(type, nr, T)`.
pub const fn iowr(ty: u8, nr: u8, size: usize) -> u32 {
    ioc(IOC_READ | IOC_WRITE, ty, nr, size)
}
/// `_IOC_SIZE(nr)`: the payload size encoded in a command or ioctl number.
pub const fn ioc_size(nr: u32) -> usize {
    ((nr >> IOC_SIZESHIFT) & ((1 << IOC_SIZEBITS) - 1)) as usize
}
/// `_IOC_NR(nr)`.
pub const fn ioc_nr(nr: u32) -> u32 {
    (nr >> IOC_NRSHIFT) & ((1 << IOC_NRBITS) - 1)
}
/// `_IOC_TYPE(nr)`.
pub const fn ioc_type(nr: u32) -> u32 {
    (nr >> IOC_TYPESHIFT) & ((1 << IOC_TYPEBITS) - 1)
}

// ---------------------------------------------------------------------------
// Object types and flags
// ---------------------------------------------------------------------------

/// `B_PACK_CHARS(c1, c2, c3, c4)`.
pub const fn b_pack_chars(c1: u8, c2: u8, c3: u8, c4: u8) -> u32 {
    ((c1 as u32) << 24) | ((c2 as u32) << 16) | ((c3 as u32) << 8) | (c4 as u32)
}
pub const B_TYPE_LARGE: u8 = 0x85;

pub const BINDER_TYPE_BINDER: u32 = b_pack_chars(b's', b'b', b'*', B_TYPE_LARGE);
pub const BINDER_TYPE_WEAK_BINDER: u32 = b_pack_chars(b'w', b'b', b'*', B_TYPE_LARGE);
pub const BINDER_TYPE_HANDLE: u32 = b_pack_chars(b's', b'h', b'*', B_TYPE_LARGE);
pub const BINDER_TYPE_WEAK_HANDLE: u32 = b_pack_chars(b'w', b'h', b'*', B_TYPE_LARGE);
pub const BINDER_TYPE_FD: u32 = b_pack_chars(b'f', b'd', b'*', B_TYPE_LARGE);
pub const BINDER_TYPE_FDA: u32 = b_pack_chars(b'f', b'd', b'a', B_TYPE_LARGE);
pub const BINDER_TYPE_PTR: u32 = b_pack_chars(b'p', b't', b'*', B_TYPE_LARGE);

pub const FLAT_BINDER_FLAG_PRIORITY_MASK: u32 = 0xff;
pub const FLAT_BINDER_FLAG_ACCEPTS_FDS: u32 = 0x100;
pub const FLAT_BINDER_FLAG_TXN_SECURITY_CTX: u32 = 0x1000;

pub const BINDER_BUFFER_FLAG_HAS_PARENT: u32 = 0x01;

pub const TF_ONE_WAY: u32 = 0x01;
pub const TF_ROOT_OBJECT: u32 = 0x04;
pub const TF_STATUS_CODE: u32 = 0x08;
pub const TF_ACCEPT_FDS: u32 = 0x10;
pub const TF_CLEAR_BUF: u32 = 0x20;
pub const TF_UPDATE_TXN: u32 = 0x40;

pub const BINDER_CURRENT_PROTOCOL_VERSION: i32 = 8;

// ---------------------------------------------------------------------------
// Structures
// ---------------------------------------------------------------------------

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_object_header {
    pub type_: u32,
}

/// `struct flat_binder_object`; the `binder`/`handle` union is kept as a `u64`
/// (`handle` is its low 32 bits on little-endian).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct flat_binder_object {
    pub hdr: binder_object_header,
    pub flags: u32,
    pub binder_or_handle: binder_uintptr_t,
    pub cookie: binder_uintptr_t,
}

impl flat_binder_object {
    pub fn handle(&self) -> u32 {
        self.binder_or_handle as u32
    }
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_fd_object {
    pub hdr: binder_object_header,
    pub pad_flags: u32,
    /// union { pad_binder; fd } — the fd is the low 32 bits.
    pub pad_binder_or_fd: binder_uintptr_t,
    pub cookie: binder_uintptr_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_buffer_object {
    pub hdr: binder_object_header,
    pub flags: u32,
    pub buffer: binder_uintptr_t,
    pub length: binder_size_t,
    pub parent: binder_size_t,
    pub parent_offset: binder_size_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_fd_array_object {
    pub hdr: binder_object_header,
    pub pad: u32,
    pub num_fds: binder_size_t,
    pub parent: binder_size_t,
    pub parent_offset: binder_size_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_write_read {
    pub write_size: binder_size_t,
    pub write_consumed: binder_size_t,
    pub write_buffer: binder_uintptr_t,
    pub read_size: binder_size_t,
    pub read_consumed: binder_size_t,
    pub read_buffer: binder_uintptr_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_version {
    pub protocol_version: i32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_node_debug_info {
    pub ptr: binder_uintptr_t,
    pub cookie: binder_uintptr_t,
    pub has_strong_ref: u32,
    pub has_weak_ref: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_node_info_for_ref {
    pub handle: u32,
    pub strong_count: u32,
    pub weak_count: u32,
    pub reserved1: u32,
    pub reserved2: u32,
    pub reserved3: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_freeze_info {
    pub pid: u32,
    pub enable: u32,
    pub timeout_ms: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_frozen_status_info {
    pub pid: u32,
    pub sync_recv: u32,
    pub async_recv: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_frozen_state_info {
    pub cookie: binder_uintptr_t,
    pub is_frozen: u32,
    pub reserved: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_extended_error {
    pub id: u32,
    pub command: u32,
    pub param: i32,
}

/// `struct binder_transaction_data`. `target` is the handle/ptr union (handle in the low
/// 32 bits); `data` is the { buffer, offsets } / `buf[8]` union, kept as the two pointers.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_transaction_data {
    pub target: binder_uintptr_t,
    pub cookie: binder_uintptr_t,
    pub code: u32,
    pub flags: u32,
    pub sender_pid: i32,
    pub sender_euid: u32,
    pub data_size: binder_size_t,
    pub offsets_size: binder_size_t,
    pub buffer: binder_uintptr_t,
    pub offsets: binder_uintptr_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_transaction_data_secctx {
    pub transaction_data: binder_transaction_data,
    pub secctx: binder_uintptr_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_transaction_data_sg {
    pub transaction_data: binder_transaction_data,
    pub buffers_size: binder_size_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_ptr_cookie {
    pub ptr: binder_uintptr_t,
    pub cookie: binder_uintptr_t,
}

#[repr(C, packed)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_handle_cookie {
    pub handle: u32,
    pub cookie: binder_uintptr_t,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_pri_desc {
    pub priority: i32,
    pub desc: u32,
}

#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct binder_pri_ptr_cookie {
    pub priority: i32,
    pub ptr: binder_uintptr_t,
    pub cookie: binder_uintptr_t,
}

pub const BINDERFS_MAX_NAME: usize = 255;

#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct binderfs_device {
    pub name: [u8; BINDERFS_MAX_NAME + 1],
    pub major: u32,
    pub minor: u32,
}

impl Default for binderfs_device {
    fn default() -> Self {
        binderfs_device {
            name: [0; BINDERFS_MAX_NAME + 1],
            major: 0,
            minor: 0,
        }
    }
}

// Layout checks for the 64-bit ABI.
const _: () = assert!(size_of::<binder_object_header>() == 4);
const _: () = assert!(size_of::<flat_binder_object>() == 24);
const _: () = assert!(offset_of!(flat_binder_object, flags) == 4);
const _: () = assert!(offset_of!(flat_binder_object, binder_or_handle) == 8);
const _: () = assert!(offset_of!(flat_binder_object, cookie) == 16);
const _: () = assert!(size_of::<binder_fd_object>() == 24);
const _: () = assert!(offset_of!(binder_fd_object, pad_binder_or_fd) == 8);
const _: () = assert!(size_of::<binder_buffer_object>() == 40);
const _: () = assert!(offset_of!(binder_buffer_object, buffer) == 8);
const _: () = assert!(offset_of!(binder_buffer_object, length) == 16);
const _: () = assert!(offset_of!(binder_buffer_object, parent) == 24);
const _: () = assert!(offset_of!(binder_buffer_object, parent_offset) == 32);
const _: () = assert!(size_of::<binder_fd_array_object>() == 32);
const _: () = assert!(offset_of!(binder_fd_array_object, num_fds) == 8);
const _: () = assert!(offset_of!(binder_fd_array_object, parent) == 16);
const _: () = assert!(offset_of!(binder_fd_array_object, parent_offset) == 24);
const _: () = assert!(size_of::<binder_write_read>() == 48);
const _: () = assert!(offset_of!(binder_write_read, write_buffer) == 16);
const _: () = assert!(offset_of!(binder_write_read, read_size) == 24);
const _: () = assert!(offset_of!(binder_write_read, read_buffer) == 40);
const _: () = assert!(size_of::<binder_version>() == 4);
const _: () = assert!(size_of::<binder_node_debug_info>() == 24);
const _: () = assert!(offset_of!(binder_node_debug_info, has_strong_ref) == 16);
const _: () = assert!(size_of::<binder_node_info_for_ref>() == 24);
const _: () = assert!(size_of::<binder_freeze_info>() == 12);
const _: () = assert!(size_of::<binder_frozen_status_info>() == 12);
const _: () = assert!(size_of::<binder_frozen_state_info>() == 16);
const _: () = assert!(offset_of!(binder_frozen_state_info, is_frozen) == 8);
const _: () = assert!(size_of::<binder_extended_error>() == 12);
const _: () = assert!(size_of::<binder_transaction_data>() == 64);
const _: () = assert!(offset_of!(binder_transaction_data, cookie) == 8);
const _: () = assert!(offset_of!(binder_transaction_data, code) == 16);
const _: () = assert!(offset_of!(binder_transaction_data, flags) == 20);
const _: () = assert!(offset_of!(binder_transaction_data, sender_pid) == 24);
const _: () = assert!(offset_of!(binder_transaction_data, sender_euid) == 28);
const _: () = assert!(offset_of!(binder_transaction_data, data_size) == 32);
const _: () = assert!(offset_of!(binder_transaction_data, offsets_size) == 40);
const _: () = assert!(offset_of!(binder_transaction_data, buffer) == 48);
const _: () = assert!(offset_of!(binder_transaction_data, offsets) == 56);
const _: () = assert!(size_of::<binder_transaction_data_secctx>() == 72);
const _: () = assert!(offset_of!(binder_transaction_data_secctx, secctx) == 64);
const _: () = assert!(size_of::<binder_transaction_data_sg>() == 72);
const _: () = assert!(offset_of!(binder_transaction_data_sg, buffers_size) == 64);
const _: () = assert!(size_of::<binder_ptr_cookie>() == 16);
const _: () = assert!(size_of::<binder_handle_cookie>() == 12);
const _: () = assert!(offset_of!(binder_handle_cookie, cookie) == 4);
const _: () = assert!(size_of::<binder_pri_desc>() == 8);
const _: () = assert!(size_of::<binder_pri_ptr_cookie>() == 24);
const _: () = assert!(offset_of!(binder_pri_ptr_cookie, ptr) == 8);
const _: () = assert!(size_of::<binderfs_device>() == 264);
const _: () = assert!(offset_of!(binderfs_device, major) == 256);
const _: () = assert!(offset_of!(binderfs_device, minor) == 260);

// ---------------------------------------------------------------------------
// ioctls
// ---------------------------------------------------------------------------

pub const BINDER_WRITE_READ: u32 = iowr(b'b', 1, size_of::<binder_write_read>());
pub const BINDER_SET_IDLE_TIMEOUT: u32 = iow(b'b', 3, size_of::<i64>());
pub const BINDER_SET_MAX_THREADS: u32 = iow(b'b', 5, size_of::<u32>());
pub const BINDER_SET_IDLE_PRIORITY: u32 = iow(b'b', 6, size_of::<i32>());
pub const BINDER_SET_CONTEXT_MGR: u32 = iow(b'b', 7, size_of::<i32>());
pub const BINDER_THREAD_EXIT: u32 = iow(b'b', 8, size_of::<i32>());
pub const BINDER_VERSION: u32 = iowr(b'b', 9, size_of::<binder_version>());
pub const BINDER_GET_NODE_DEBUG_INFO: u32 = iowr(b'b', 11, size_of::<binder_node_debug_info>());
pub const BINDER_GET_NODE_INFO_FOR_REF: u32 = iowr(b'b', 12, size_of::<binder_node_info_for_ref>());
pub const BINDER_SET_CONTEXT_MGR_EXT: u32 = iow(b'b', 13, size_of::<flat_binder_object>());
pub const BINDER_FREEZE: u32 = iow(b'b', 14, size_of::<binder_freeze_info>());
pub const BINDER_GET_FROZEN_INFO: u32 = iowr(b'b', 15, size_of::<binder_frozen_status_info>());
pub const BINDER_ENABLE_ONEWAY_SPAM_DETECTION: u32 = iow(b'b', 16, size_of::<u32>());
pub const BINDER_GET_EXTENDED_ERROR: u32 = iowr(b'b', 17, size_of::<binder_extended_error>());

pub const BINDER_CTL_ADD: u32 = iowr(b'b', 1, size_of::<binderfs_device>());

// Known values from the C headers on 64-bit, as a cross-check of the encoder.
const _: () = assert!(BINDER_WRITE_READ == 0xc030_6201);
const _: () = assert!(BINDER_VERSION == 0xc004_6209);
const _: () = assert!(BINDER_SET_CONTEXT_MGR == 0x4004_6207);
const _: () = assert!(BINDER_CTL_ADD == 0xc108_6201);

// ---------------------------------------------------------------------------
// Return (BR_*) and command (BC_*) codes
// ---------------------------------------------------------------------------

pub const BR_ERROR: u32 = ior(b'r', 0, size_of::<i32>());
pub const BR_OK: u32 = io(b'r', 1);
pub const BR_TRANSACTION_SEC_CTX: u32 = ior(b'r', 2, size_of::<binder_transaction_data_secctx>());
pub const BR_TRANSACTION: u32 = ior(b'r', 2, size_of::<binder_transaction_data>());
pub const BR_REPLY: u32 = ior(b'r', 3, size_of::<binder_transaction_data>());
pub const BR_ACQUIRE_RESULT: u32 = ior(b'r', 4, size_of::<i32>());
pub const BR_DEAD_REPLY: u32 = io(b'r', 5);
pub const BR_TRANSACTION_COMPLETE: u32 = io(b'r', 6);
pub const BR_INCREFS: u32 = ior(b'r', 7, size_of::<binder_ptr_cookie>());
pub const BR_ACQUIRE: u32 = ior(b'r', 8, size_of::<binder_ptr_cookie>());
pub const BR_RELEASE: u32 = ior(b'r', 9, size_of::<binder_ptr_cookie>());
pub const BR_DECREFS: u32 = ior(b'r', 10, size_of::<binder_ptr_cookie>());
pub const BR_ATTEMPT_ACQUIRE: u32 = ior(b'r', 11, size_of::<binder_pri_ptr_cookie>());
pub const BR_NOOP: u32 = io(b'r', 12);
pub const BR_SPAWN_LOOPER: u32 = io(b'r', 13);
pub const BR_FINISHED: u32 = io(b'r', 14);
pub const BR_DEAD_BINDER: u32 = ior(b'r', 15, size_of::<binder_uintptr_t>());
pub const BR_CLEAR_DEATH_NOTIFICATION_DONE: u32 = ior(b'r', 16, size_of::<binder_uintptr_t>());
pub const BR_FAILED_REPLY: u32 = io(b'r', 17);
pub const BR_FROZEN_REPLY: u32 = io(b'r', 18);
pub const BR_ONEWAY_SPAM_SUSPECT: u32 = io(b'r', 19);
pub const BR_TRANSACTION_PENDING_FROZEN: u32 = io(b'r', 20);
pub const BR_FROZEN_BINDER: u32 = ior(b'r', 21, size_of::<binder_frozen_state_info>());
pub const BR_CLEAR_FREEZE_NOTIFICATION_DONE: u32 = ior(b'r', 22, size_of::<binder_uintptr_t>());

pub const BC_TRANSACTION: u32 = iow(b'c', 0, size_of::<binder_transaction_data>());
pub const BC_REPLY: u32 = iow(b'c', 1, size_of::<binder_transaction_data>());
pub const BC_ACQUIRE_RESULT: u32 = iow(b'c', 2, size_of::<i32>());
pub const BC_FREE_BUFFER: u32 = iow(b'c', 3, size_of::<binder_uintptr_t>());
pub const BC_INCREFS: u32 = iow(b'c', 4, size_of::<u32>());
pub const BC_ACQUIRE: u32 = iow(b'c', 5, size_of::<u32>());
pub const BC_RELEASE: u32 = iow(b'c', 6, size_of::<u32>());
pub const BC_DECREFS: u32 = iow(b'c', 7, size_of::<u32>());
pub const BC_INCREFS_DONE: u32 = iow(b'c', 8, size_of::<binder_ptr_cookie>());
pub const BC_ACQUIRE_DONE: u32 = iow(b'c', 9, size_of::<binder_ptr_cookie>());
pub const BC_ATTEMPT_ACQUIRE: u32 = iow(b'c', 10, size_of::<binder_pri_desc>());
pub const BC_REGISTER_LOOPER: u32 = io(b'c', 11);
pub const BC_ENTER_LOOPER: u32 = io(b'c', 12);
pub const BC_EXIT_LOOPER: u32 = io(b'c', 13);
pub const BC_REQUEST_DEATH_NOTIFICATION: u32 = iow(b'c', 14, size_of::<binder_handle_cookie>());
pub const BC_CLEAR_DEATH_NOTIFICATION: u32 = iow(b'c', 15, size_of::<binder_handle_cookie>());
pub const BC_DEAD_BINDER_DONE: u32 = iow(b'c', 16, size_of::<binder_uintptr_t>());
pub const BC_TRANSACTION_SG: u32 = iow(b'c', 17, size_of::<binder_transaction_data_sg>());
pub const BC_REPLY_SG: u32 = iow(b'c', 18, size_of::<binder_transaction_data_sg>());
pub const BC_REQUEST_FREEZE_NOTIFICATION: u32 = iow(b'c', 19, size_of::<binder_handle_cookie>());
pub const BC_CLEAR_FREEZE_NOTIFICATION: u32 = iow(b'c', 20, size_of::<binder_handle_cookie>());
pub const BC_FREEZE_NOTIFICATION_DONE: u32 = iow(b'c', 21, size_of::<binder_uintptr_t>());

const _: () = assert!(BC_TRANSACTION == 0x4040_6300);
const _: () = assert!(BR_TRANSACTION == 0x8040_7202);
const _: () = assert!(BR_NOOP == 0x0000_720c);

/// Every BR_* code with its name, in header order.
pub const BR_NAMES: &[(u32, &str)] = &[
    (BR_ERROR, "BR_ERROR"),
    (BR_OK, "BR_OK"),
    (BR_TRANSACTION_SEC_CTX, "BR_TRANSACTION_SEC_CTX"),
    (BR_TRANSACTION, "BR_TRANSACTION"),
    (BR_REPLY, "BR_REPLY"),
    (BR_ACQUIRE_RESULT, "BR_ACQUIRE_RESULT"),
    (BR_DEAD_REPLY, "BR_DEAD_REPLY"),
    (BR_TRANSACTION_COMPLETE, "BR_TRANSACTION_COMPLETE"),
    (BR_INCREFS, "BR_INCREFS"),
    (BR_ACQUIRE, "BR_ACQUIRE"),
    (BR_RELEASE, "BR_RELEASE"),
    (BR_DECREFS, "BR_DECREFS"),
    (BR_ATTEMPT_ACQUIRE, "BR_ATTEMPT_ACQUIRE"),
    (BR_NOOP, "BR_NOOP"),
    (BR_SPAWN_LOOPER, "BR_SPAWN_LOOPER"),
    (BR_FINISHED, "BR_FINISHED"),
    (BR_DEAD_BINDER, "BR_DEAD_BINDER"),
    (
        BR_CLEAR_DEATH_NOTIFICATION_DONE,
        "BR_CLEAR_DEATH_NOTIFICATION_DONE",
    ),
    (BR_FAILED_REPLY, "BR_FAILED_REPLY"),
    (BR_FROZEN_REPLY, "BR_FROZEN_REPLY"),
    (BR_ONEWAY_SPAM_SUSPECT, "BR_ONEWAY_SPAM_SUSPECT"),
    (
        BR_TRANSACTION_PENDING_FROZEN,
        "BR_TRANSACTION_PENDING_FROZEN",
    ),
    (BR_FROZEN_BINDER, "BR_FROZEN_BINDER"),
    (
        BR_CLEAR_FREEZE_NOTIFICATION_DONE,
        "BR_CLEAR_FREEZE_NOTIFICATION_DONE",
    ),
];

/// Every BC_* code with its name, in header order.
pub const BC_NAMES: &[(u32, &str)] = &[
    (BC_TRANSACTION, "BC_TRANSACTION"),
    (BC_REPLY, "BC_REPLY"),
    (BC_ACQUIRE_RESULT, "BC_ACQUIRE_RESULT"),
    (BC_FREE_BUFFER, "BC_FREE_BUFFER"),
    (BC_INCREFS, "BC_INCREFS"),
    (BC_ACQUIRE, "BC_ACQUIRE"),
    (BC_RELEASE, "BC_RELEASE"),
    (BC_DECREFS, "BC_DECREFS"),
    (BC_INCREFS_DONE, "BC_INCREFS_DONE"),
    (BC_ACQUIRE_DONE, "BC_ACQUIRE_DONE"),
    (BC_ATTEMPT_ACQUIRE, "BC_ATTEMPT_ACQUIRE"),
    (BC_REGISTER_LOOPER, "BC_REGISTER_LOOPER"),
    (BC_ENTER_LOOPER, "BC_ENTER_LOOPER"),
    (BC_EXIT_LOOPER, "BC_EXIT_LOOPER"),
    (
        BC_REQUEST_DEATH_NOTIFICATION,
        "BC_REQUEST_DEATH_NOTIFICATION",
    ),
    (BC_CLEAR_DEATH_NOTIFICATION, "BC_CLEAR_DEATH_NOTIFICATION"),
    (BC_DEAD_BINDER_DONE, "BC_DEAD_BINDER_DONE"),
    (BC_TRANSACTION_SG, "BC_TRANSACTION_SG"),
    (BC_REPLY_SG, "BC_REPLY_SG"),
    (
        BC_REQUEST_FREEZE_NOTIFICATION,
        "BC_REQUEST_FREEZE_NOTIFICATION",
    ),
    (BC_CLEAR_FREEZE_NOTIFICATION, "BC_CLEAR_FREEZE_NOTIFICATION"),
    (BC_FREEZE_NOTIFICATION_DONE, "BC_FREEZE_NOTIFICATION_DONE"),
];

/// Name of a BR_* code, or `None` if it is not one.
pub fn br_name(code: u32) -> Option<&'static str> {
    BR_NAMES.iter().find(|(c, _)| *c == code).map(|(_, n)| *n)
}

/// Name of a BC_* code, or `None` if it is not one.
pub fn bc_name(code: u32) -> Option<&'static str> {
    BC_NAMES.iter().find(|(c, _)| *c == code).map(|(_, n)| *n)
}
