//! Encoder for the write buffer (BC_* commands) and decoder for the read buffer (BR_* returns).

use crate::uapi::*;
use core::mem::size_of;

/// Plain-old-data structs that can be copied to and from byte buffers.
///
/// # Safety
/// Implementors must be `repr(C)` (or packed) with no padding-sensitive invariants: every
/// byte pattern must be a valid value.
pub unsafe trait Pod: Copy + 'static {}

unsafe impl Pod for u32 {}
unsafe impl Pod for i32 {}
unsafe impl Pod for u64 {}
unsafe impl Pod for i64 {}
unsafe impl Pod for flat_binder_object {}
unsafe impl Pod for binder_fd_object {}
unsafe impl Pod for binder_buffer_object {}
unsafe impl Pod for binder_fd_array_object {}
unsafe impl Pod for binder_write_read {}
unsafe impl Pod for binder_version {}
unsafe impl Pod for binder_node_debug_info {}
unsafe impl Pod for binder_node_info_for_ref {}
unsafe impl Pod for binder_freeze_info {}
unsafe impl Pod for binder_frozen_status_info {}
unsafe impl Pod for binder_frozen_state_info {}
unsafe impl Pod for binder_extended_error {}
unsafe impl Pod for binder_transaction_data {}
unsafe impl Pod for binder_transaction_data_secctx {}
unsafe impl Pod for binder_transaction_data_sg {}
unsafe impl Pod for binder_ptr_cookie {}
unsafe impl Pod for binder_handle_cookie {}
unsafe impl Pod for binder_pri_desc {}
unsafe impl Pod for binder_pri_ptr_cookie {}
unsafe impl Pod for binderfs_device {}

/// The raw bytes of a Pod value (padding bytes included, so callers zero-initialise).
pub fn bytes_of<T: Pod>(v: &T) -> &[u8] {
    // SAFETY: T is Pod, so viewing it as bytes is fine for the lifetime of the borrow.
    unsafe { core::slice::from_raw_parts(v as *const T as *const u8, size_of::<T>()) }
}

/// Read a Pod value from the start of `b` (unaligned). Panics if `b` is too short.
pub fn read_pod<T: Pod>(b: &[u8]) -> T {
    assert!(b.len() >= size_of::<T>(), "short buffer for Pod read");
    // SAFETY: length checked; T accepts any byte pattern.
    unsafe { core::ptr::read_unaligned(b.as_ptr() as *const T) }
}

/// A transaction payload under construction: data bytes plus the offsets of the
/// objects embedded in it.
#[derive(Clone, Debug, Default)]
pub struct Payload {
    pub data: Vec<u8>,
    pub offsets: Vec<u64>,
}

impl Payload {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn from_bytes(b: &[u8]) -> Self {
        Payload {
            data: b.to_vec(),
            offsets: Vec::new(),
        }
    }
    pub fn bytes(&mut self, b: &[u8]) -> &mut Self {
        self.data.extend_from_slice(b);
        self
    }
    pub fn u32(&mut self, v: u32) -> &mut Self {
        self.data.extend_from_slice(&v.to_ne_bytes());
        self
    }
    pub fn u64(&mut self, v: u64) -> &mut Self {
        self.data.extend_from_slice(&v.to_ne_bytes());
        self
    }
    /// Pad the data to a multiple of 8 bytes (objects must be 4-aligned; 8 is what
    /// libbinder's Parcel does for objects).
    pub fn align8(&mut self) -> &mut Self {
        while self.data.len() % 8 != 0 {
            self.data.push(0);
        }
        self
    }
    /// Append an object at an 8-aligned offset and record the offset. Returns the offset.
    pub fn object<T: Pod>(&mut self, obj: &T) -> u64 {
        self.align8();
        let off = self.data.len() as u64;
        self.data.extend_from_slice(bytes_of(obj));
        self.offsets.push(off);
        off
    }
    /// Append raw object bytes without recording an offset (for lying offsets tests).
    pub fn raw_object<T: Pod>(&mut self, obj: &T) -> u64 {
        self.align8();
        let off = self.data.len() as u64;
        self.data.extend_from_slice(bytes_of(obj));
        off
    }
    /// `flat_binder_object` of type BINDER_TYPE_BINDER for a local object.
    pub fn binder(&mut self, ptr: u64, cookie: u64, flags: u32) -> u64 {
        self.object(&flat_binder_object {
            hdr: binder_object_header {
                type_: BINDER_TYPE_BINDER,
            },
            flags,
            binder_or_handle: ptr,
            cookie,
        })
    }
    /// `flat_binder_object` of type BINDER_TYPE_WEAK_BINDER.
    pub fn weak_binder(&mut self, ptr: u64, cookie: u64, flags: u32) -> u64 {
        self.object(&flat_binder_object {
            hdr: binder_object_header {
                type_: BINDER_TYPE_WEAK_BINDER,
            },
            flags,
            binder_or_handle: ptr,
            cookie,
        })
    }
    /// `flat_binder_object` of type BINDER_TYPE_HANDLE.
    pub fn handle(&mut self, handle: u32) -> u64 {
        self.object(&flat_binder_object {
            hdr: binder_object_header {
                type_: BINDER_TYPE_HANDLE,
            },
            flags: 0,
            binder_or_handle: handle as u64,
            cookie: 0,
        })
    }
    /// `flat_binder_object` of type BINDER_TYPE_WEAK_HANDLE.
    pub fn weak_handle(&mut self, handle: u32) -> u64 {
        self.object(&flat_binder_object {
            hdr: binder_object_header {
                type_: BINDER_TYPE_WEAK_HANDLE,
            },
            flags: 0,
            binder_or_handle: handle as u64,
            cookie: 0,
        })
    }
    /// `binder_fd_object`.
    pub fn fd(&mut self, fd: i32, cookie: u64) -> u64 {
        self.object(&binder_fd_object {
            hdr: binder_object_header {
                type_: BINDER_TYPE_FD,
            },
            pad_flags: 0,
            pad_binder_or_fd: fd as u32 as u64,
            cookie,
        })
    }
    /// `binder_buffer_object` (BINDER_TYPE_PTR).
    pub fn ptr(&mut self, buffer: u64, length: u64, parent: Option<(u64, u64)>) -> u64 {
        let (flags, parent, parent_offset) = match parent {
            Some((p, o)) => (BINDER_BUFFER_FLAG_HAS_PARENT, p, o),
            None => (0, 0, 0),
        };
        self.object(&binder_buffer_object {
            hdr: binder_object_header {
                type_: BINDER_TYPE_PTR,
            },
            flags,
            buffer,
            length,
            parent,
            parent_offset,
        })
    }
    /// `binder_fd_array_object` (BINDER_TYPE_FDA).
    pub fn fda(&mut self, num_fds: u64, parent: u64, parent_offset: u64) -> u64 {
        self.object(&binder_fd_array_object {
            hdr: binder_object_header {
                type_: BINDER_TYPE_FDA,
            },
            pad: 0,
            num_fds,
            parent,
            parent_offset,
        })
    }
    pub fn offsets_bytes(&self) -> Vec<u8> {
        let mut v = Vec::with_capacity(self.offsets.len() * 8);
        for o in &self.offsets {
            v.extend_from_slice(&o.to_ne_bytes());
        }
        v
    }
}

/// The write buffer: a sequence of BC_* codes each followed by its payload.
///
/// Payload memory referenced by transactions is owned by the buffer (`keep`) so the
/// pointers stay valid until the buffer is dropped.
#[derive(Default)]
pub struct WriteBuf {
    pub bytes: Vec<u8>,
    keep: Vec<Vec<u8>>,
}

impl WriteBuf {
    pub fn new() -> Self {
        Self::default()
    }
    pub fn len(&self) -> usize {
        self.bytes.len()
    }
    pub fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }
    pub fn as_slice(&self) -> &[u8] {
        &self.bytes
    }
    /// Append a bare 32-bit command code.
    pub fn cmd(&mut self, code: u32) -> &mut Self {
        self.bytes.extend_from_slice(&code.to_ne_bytes());
        self
    }
    /// Append a command code followed by a Pod payload.
    pub fn cmd_with<T: Pod>(&mut self, code: u32, payload: &T) -> &mut Self {
        self.cmd(code);
        self.bytes.extend_from_slice(bytes_of(payload));
        self
    }
    /// Append raw bytes (for truncated or malformed commands).
    pub fn raw(&mut self, b: &[u8]) -> &mut Self {
        self.bytes.extend_from_slice(b);
        self
    }
    /// Keep `v` alive as long as this buffer and return its address.
    pub fn keep(&mut self, v: Vec<u8>) -> u64 {
        let p = if v.is_empty() { 0 } else { v.as_ptr() as u64 };
        self.keep.push(v);
        p
    }
    fn txn_data(
        &mut self,
        target: u64,
        code: u32,
        flags: u32,
        p: &Payload,
    ) -> binder_transaction_data {
        let data = self.keep(p.data.clone());
        let offs = self.keep(p.offsets_bytes());
        binder_transaction_data {
            target,
            cookie: 0,
            code,
            flags,
            sender_pid: 0,
            sender_euid: 0,
            data_size: p.data.len() as u64,
            offsets_size: (p.offsets.len() * 8) as u64,
            buffer: data,
            offsets: offs,
        }
    }
    /// BC_TRANSACTION to `handle`.
    pub fn transaction(&mut self, handle: u32, code: u32, flags: u32, p: &Payload) -> &mut Self {
        let td = self.txn_data(handle as u64, code, flags, p);
        self.cmd_with(BC_TRANSACTION, &td)
    }
    /// BC_REPLY.
    pub fn reply(&mut self, flags: u32, p: &Payload) -> &mut Self {
        let td = self.txn_data(0, 0, flags, p);
        self.cmd_with(BC_REPLY, &td)
    }
    /// BC_TRANSACTION_SG / BC_REPLY_SG with `buffers_size` of extra scatter-gather space.
    pub fn transaction_sg(
        &mut self,
        reply: bool,
        handle: u32,
        code: u32,
        flags: u32,
        p: &Payload,
        buffers_size: u64,
    ) -> &mut Self {
        let td = self.txn_data(handle as u64, code, flags, p);
        let sg = binder_transaction_data_sg {
            transaction_data: td,
            buffers_size,
        };
        self.cmd_with(
            if reply {
                BC_REPLY_SG
            } else {
                BC_TRANSACTION_SG
            },
            &sg,
        )
    }
    /// A transaction command with a caller-built `binder_transaction_data` (for bad input).
    pub fn raw_transaction(&mut self, code: u32, td: &binder_transaction_data) -> &mut Self {
        self.cmd_with(code, td)
    }
    pub fn free_buffer(&mut self, ptr: u64) -> &mut Self {
        self.cmd_with(BC_FREE_BUFFER, &ptr)
    }
    pub fn increfs(&mut self, h: u32) -> &mut Self {
        self.cmd_with(BC_INCREFS, &h)
    }
    pub fn acquire(&mut self, h: u32) -> &mut Self {
        self.cmd_with(BC_ACQUIRE, &h)
    }
    pub fn release(&mut self, h: u32) -> &mut Self {
        self.cmd_with(BC_RELEASE, &h)
    }
    pub fn decrefs(&mut self, h: u32) -> &mut Self {
        self.cmd_with(BC_DECREFS, &h)
    }
    pub fn increfs_done(&mut self, ptr: u64, cookie: u64) -> &mut Self {
        self.cmd_with(BC_INCREFS_DONE, &binder_ptr_cookie { ptr, cookie })
    }
    pub fn acquire_done(&mut self, ptr: u64, cookie: u64) -> &mut Self {
        self.cmd_with(BC_ACQUIRE_DONE, &binder_ptr_cookie { ptr, cookie })
    }
    pub fn enter_looper(&mut self) -> &mut Self {
        self.cmd(BC_ENTER_LOOPER)
    }
    pub fn register_looper(&mut self) -> &mut Self {
        self.cmd(BC_REGISTER_LOOPER)
    }
    pub fn exit_looper(&mut self) -> &mut Self {
        self.cmd(BC_EXIT_LOOPER)
    }
    pub fn request_death(&mut self, handle: u32, cookie: u64) -> &mut Self {
        self.cmd_with(
            BC_REQUEST_DEATH_NOTIFICATION,
            &binder_handle_cookie { handle, cookie },
        )
    }
    pub fn clear_death(&mut self, handle: u32, cookie: u64) -> &mut Self {
        self.cmd_with(
            BC_CLEAR_DEATH_NOTIFICATION,
            &binder_handle_cookie { handle, cookie },
        )
    }
    pub fn dead_binder_done(&mut self, cookie: u64) -> &mut Self {
        self.cmd_with(BC_DEAD_BINDER_DONE, &cookie)
    }
    pub fn request_freeze_notification(&mut self, handle: u32, cookie: u64) -> &mut Self {
        self.cmd_with(
            BC_REQUEST_FREEZE_NOTIFICATION,
            &binder_handle_cookie { handle, cookie },
        )
    }
    pub fn clear_freeze_notification(&mut self, handle: u32, cookie: u64) -> &mut Self {
        self.cmd_with(
            BC_CLEAR_FREEZE_NOTIFICATION,
            &binder_handle_cookie { handle, cookie },
        )
    }
    pub fn freeze_notification_done(&mut self, cookie: u64) -> &mut Self {
        self.cmd_with(BC_FREEZE_NOTIFICATION_DONE, &cookie)
    }
}

/// One decoded BR_* item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Return {
    Error(i32),
    Ok,
    TransactionSecCtx(binder_transaction_data, u64),
    Transaction(binder_transaction_data),
    Reply(binder_transaction_data),
    AcquireResult(i32),
    DeadReply,
    TransactionComplete,
    Increfs(binder_ptr_cookie),
    Acquire(binder_ptr_cookie),
    Release(binder_ptr_cookie),
    Decrefs(binder_ptr_cookie),
    AttemptAcquire(binder_pri_ptr_cookie),
    Noop,
    SpawnLooper,
    Finished,
    DeadBinder(u64),
    ClearDeathNotificationDone(u64),
    FailedReply,
    FrozenReply,
    OnewaySpamSuspect,
    TransactionPendingFrozen,
    FrozenBinder(binder_frozen_state_info),
    ClearFreezeNotificationDone(u64),
    /// A code this decoder does not know; decoding stops after it.
    Unknown(u32),
    /// A known code whose payload was cut short by the end of the buffer.
    Truncated(u32),
}

impl Return {
    /// The BR_* code this item was decoded from.
    pub fn code(&self) -> u32 {
        match self {
            Return::Error(_) => BR_ERROR,
            Return::Ok => BR_OK,
            Return::TransactionSecCtx(..) => BR_TRANSACTION_SEC_CTX,
            Return::Transaction(_) => BR_TRANSACTION,
            Return::Reply(_) => BR_REPLY,
            Return::AcquireResult(_) => BR_ACQUIRE_RESULT,
            Return::DeadReply => BR_DEAD_REPLY,
            Return::TransactionComplete => BR_TRANSACTION_COMPLETE,
            Return::Increfs(_) => BR_INCREFS,
            Return::Acquire(_) => BR_ACQUIRE,
            Return::Release(_) => BR_RELEASE,
            Return::Decrefs(_) => BR_DECREFS,
            Return::AttemptAcquire(_) => BR_ATTEMPT_ACQUIRE,
            Return::Noop => BR_NOOP,
            Return::SpawnLooper => BR_SPAWN_LOOPER,
            Return::Finished => BR_FINISHED,
            Return::DeadBinder(_) => BR_DEAD_BINDER,
            Return::ClearDeathNotificationDone(_) => BR_CLEAR_DEATH_NOTIFICATION_DONE,
            Return::FailedReply => BR_FAILED_REPLY,
            Return::FrozenReply => BR_FROZEN_REPLY,
            Return::OnewaySpamSuspect => BR_ONEWAY_SPAM_SUSPECT,
            Return::TransactionPendingFrozen => BR_TRANSACTION_PENDING_FROZEN,
            Return::FrozenBinder(_) => BR_FROZEN_BINDER,
            Return::ClearFreezeNotificationDone(_) => BR_CLEAR_FREEZE_NOTIFICATION_DONE,
            Return::Unknown(c) | Return::Truncated(c) => *c,
        }
    }
    /// Human-readable name (`BR_REPLY`, ...), `BR_?(0x...)` for unknown codes.
    pub fn name(&self) -> String {
        match self {
            Return::Unknown(c) => format!("BR_?({c:#x})"),
            Return::Truncated(c) => format!("truncated {}", br_name(*c).unwrap_or("BR_?")),
            Return::Error(e) => format!("BR_ERROR({e})"),
            r => br_name(r.code()).unwrap_or("BR_?").to_string(),
        }
    }
    /// The transaction data of BR_TRANSACTION(_SEC_CTX) / BR_REPLY.
    pub fn txn(&self) -> Option<&binder_transaction_data> {
        match self {
            Return::Transaction(t) | Return::Reply(t) | Return::TransactionSecCtx(t, _) => Some(t),
            _ => None,
        }
    }
}

/// Iterator over the BR_* items in a filled read buffer.
pub struct ReadIter<'a> {
    buf: &'a [u8],
    pos: usize,
    done: bool,
}

impl<'a> ReadIter<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        ReadIter {
            buf,
            pos: 0,
            done: false,
        }
    }
}

impl Iterator for ReadIter<'_> {
    type Item = Return;
    fn next(&mut self) -> Option<Return> {
        if self.done || self.pos + 4 > self.buf.len() {
            return None;
        }
        let code: u32 = read_pod(&self.buf[self.pos..]);
        self.pos += 4;
        let rest = &self.buf[self.pos..];
        let need = ioc_size(code);
        if br_name(code).is_none() {
            self.done = true;
            return Some(Return::Unknown(code));
        }
        if rest.len() < need {
            self.done = true;
            return Some(Return::Truncated(code));
        }
        self.pos += need;
        let r = match code {
            BR_ERROR => Return::Error(read_pod(rest)),
            BR_OK => Return::Ok,
            BR_TRANSACTION_SEC_CTX => {
                let s: binder_transaction_data_secctx = read_pod(rest);
                Return::TransactionSecCtx(s.transaction_data, s.secctx)
            }
            BR_TRANSACTION => Return::Transaction(read_pod(rest)),
            BR_REPLY => Return::Reply(read_pod(rest)),
            BR_ACQUIRE_RESULT => Return::AcquireResult(read_pod(rest)),
            BR_DEAD_REPLY => Return::DeadReply,
            BR_TRANSACTION_COMPLETE => Return::TransactionComplete,
            BR_INCREFS => Return::Increfs(read_pod(rest)),
            BR_ACQUIRE => Return::Acquire(read_pod(rest)),
            BR_RELEASE => Return::Release(read_pod(rest)),
            BR_DECREFS => Return::Decrefs(read_pod(rest)),
            BR_ATTEMPT_ACQUIRE => Return::AttemptAcquire(read_pod(rest)),
            BR_NOOP => Return::Noop,
            BR_SPAWN_LOOPER => Return::SpawnLooper,
            BR_FINISHED => Return::Finished,
            BR_DEAD_BINDER => Return::DeadBinder(read_pod(rest)),
            BR_CLEAR_DEATH_NOTIFICATION_DONE => Return::ClearDeathNotificationDone(read_pod(rest)),
            BR_FAILED_REPLY => Return::FailedReply,
            BR_FROZEN_REPLY => Return::FrozenReply,
            BR_ONEWAY_SPAM_SUSPECT => Return::OnewaySpamSuspect,
            BR_TRANSACTION_PENDING_FROZEN => Return::TransactionPendingFrozen,
            BR_FROZEN_BINDER => Return::FrozenBinder(read_pod(rest)),
            BR_CLEAR_FREEZE_NOTIFICATION_DONE => {
                Return::ClearFreezeNotificationDone(read_pod(rest))
            }
            other => Return::Unknown(other),
        };
        Some(r)
    }
}

/// Decode a whole read buffer.
pub fn decode(buf: &[u8]) -> Vec<Return> {
    ReadIter::new(buf).collect()
}

/// Names of a list of returns, for messages: `[BR_NOOP, BR_REPLY]`.
pub fn names(v: &[Return]) -> String {
    let n: Vec<String> = v.iter().map(|r| r.name()).collect();
    format!("[{}]", n.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_transaction() {
        let mut p = Payload::new();
        p.u32(7).handle(3);
        assert_eq!(p.offsets, vec![8]);
        assert_eq!(p.data.len(), 32);
        let mut w = WriteBuf::new();
        w.transaction(5, 9, TF_ONE_WAY, &p).enter_looper();
        assert_eq!(w.len(), 4 + 64 + 4);
        let code: u32 = read_pod(&w.bytes);
        assert_eq!(code, BC_TRANSACTION);
        let td: binder_transaction_data = read_pod(&w.bytes[4..]);
        assert_eq!((td.target, td.code, td.flags), (5, 9, TF_ONE_WAY));
        assert_eq!((td.data_size, td.offsets_size), (32, 8));
        let tail: u32 = read_pod(&w.bytes[68..]);
        assert_eq!(tail, BC_ENTER_LOOPER);
    }

    #[test]
    fn decode_returns() {
        let mut b = Vec::new();
        b.extend_from_slice(&BR_NOOP.to_ne_bytes());
        b.extend_from_slice(&BR_DEAD_BINDER.to_ne_bytes());
        b.extend_from_slice(&0x55u64.to_ne_bytes());
        b.extend_from_slice(&BR_INCREFS.to_ne_bytes());
        b.extend_from_slice(bytes_of(&binder_ptr_cookie { ptr: 1, cookie: 2 }));
        b.extend_from_slice(&BR_REPLY.to_ne_bytes());
        b.extend_from_slice(&[0u8; 10]);
        let v = decode(&b);
        assert_eq!(
            v,
            vec![
                Return::Noop,
                Return::DeadBinder(0x55),
                Return::Increfs(binder_ptr_cookie { ptr: 1, cookie: 2 }),
                Return::Truncated(BR_REPLY),
            ]
        );
        assert_eq!(
            decode(&0x1234u32.to_ne_bytes()),
            vec![Return::Unknown(0x1234)]
        );
    }

    #[test]
    fn names_cover_all_codes() {
        assert_eq!(BR_NAMES.len(), 24);
        assert_eq!(BC_NAMES.len(), 22);
        for (c, n) in BR_NAMES {
            assert_eq!(br_name(*c), Some(*n));
        }
    }
}
