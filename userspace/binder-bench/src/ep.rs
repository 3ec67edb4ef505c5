//! A lean binder endpoint for measuring: one BINDER_WRITE_READ per step, commands
//! batched the way libbinder's IPCThreadState does (BC_FREE_BUFFER of a reply goes out
//! with the next command), no polling and no allocation on the hot path.

use binder_uapi::proto::{bytes_of, read_pod, Pod, ReadIter};
use binder_uapi::*;
use std::collections::HashSet;
use std::io;

/// Transaction code that makes a bench server reply and leave its loop.
pub const CODE_STOP: u32 = 0x5354_4f50;
/// Ordinary transaction code.
pub const CODE_PING: u32 = 1;

/// One open binder device, used by one thread.
pub struct Ep {
    pub b: Binder,
    pub(crate) out: Vec<u8>,
    pub(crate) rbuf: Vec<u8>,
}

fn ioctl_wr(fd: i32, bwr: &mut binder_write_read) -> io::Result<()> {
    loop {
        // SAFETY: bwr points at buffers that live for the whole call.
        let r = unsafe { libc::ioctl(fd, BINDER_WRITE_READ as _, bwr as *mut binder_write_read) };
        if r >= 0 {
            return Ok(());
        }
        let e = io::Error::last_os_error();
        if e.raw_os_error() != Some(libc::EINTR) {
            return Err(e);
        }
        // The driver resumes the write at write_consumed; a read that was interrupted
        // before anything arrived is simply repeated.
    }
}

fn status_name(r: &Return) -> String {
    r.name()
}

impl Ep {
    /// Open `path` and map `map` bytes of buffer space.
    pub fn open(path: &str, map: usize) -> Result<Ep, String> {
        let mut b = Binder::open(path).map_err(|e| format!("open {path}: {e}"))?;
        b.mmap(map)
            .map_err(|e| format!("mmap {map} of {path}: {e}"))?;
        Ok(Ep {
            b,
            out: Vec::with_capacity(512),
            rbuf: vec![0u8; 2048],
        })
    }

    /// An endpoint on an already open binder fd (another thread's view of the same process,
    /// see [`Binder::try_clone`]).
    pub fn from_binder(b: Binder) -> Ep {
        Ep {
            b,
            out: Vec::with_capacity(512),
            rbuf: vec![0u8; 2048],
        }
    }

    pub fn cmd(&mut self, code: u32) {
        self.out.extend_from_slice(&code.to_ne_bytes());
    }

    pub fn cmd_with<T: Pod>(&mut self, code: u32, v: &T) {
        self.cmd(code);
        self.out.extend_from_slice(bytes_of(v));
    }

    /// Write everything queued and, if `read`, block for returns. Returns the number of
    /// bytes read into the read buffer.
    pub fn talk(&mut self, read: bool) -> Result<usize, String> {
        let mut bwr = binder_write_read {
            write_size: self.out.len() as u64,
            write_consumed: 0,
            write_buffer: self.out.as_ptr() as u64,
            read_size: if read { self.rbuf.len() as u64 } else { 0 },
            read_consumed: 0,
            read_buffer: self.rbuf.as_mut_ptr() as u64,
        };
        let r = ioctl_wr(self.b.fd(), &mut bwr);
        let consumed = bwr.write_consumed as usize;
        match r {
            Ok(()) => {
                if consumed < self.out.len() {
                    self.out.drain(..consumed);
                    return Err(format!(
                        "driver consumed {consumed} of {} command bytes",
                        self.out.len() + consumed
                    ));
                }
                self.out.clear();
                Ok(bwr.read_consumed as usize)
            }
            Err(e) => {
                self.out.clear();
                Err(format!("BINDER_WRITE_READ: {}", res_name::<()>(&Err(e))))
            }
        }
    }

    /// Queue a BC_TRANSACTION whose data and offsets live in the caller's buffers.
    fn queue_txn(&mut self, handle: u32, code: u32, flags: u32, data: &[u8], offs: &[u64]) {
        let td = binder_transaction_data {
            target: handle as u64,
            cookie: 0,
            code,
            flags,
            sender_pid: 0,
            sender_euid: 0,
            data_size: data.len() as u64,
            offsets_size: (offs.len() * 8) as u64,
            buffer: if data.is_empty() {
                0
            } else {
                data.as_ptr() as u64
            },
            offsets: if offs.is_empty() {
                0
            } else {
                offs.as_ptr() as u64
            },
        };
        self.cmd_with(BC_TRANSACTION, &td);
    }

    /// A call as a client does it: BC_TRANSACTION, then read until BR_REPLY (sync) or
    /// BR_TRANSACTION_COMPLETE (one-way). The reply buffer is freed with the next write.
    /// Node reference requests on the way are acknowledged as libbinder does.
    pub fn call(
        &mut self,
        handle: u32,
        code: u32,
        flags: u32,
        data: &[u8],
        offs: &[u64],
    ) -> Result<(), String> {
        self.call_impl(handle, code, flags, data, offs, None)
    }

    /// [`Ep::call`] that keeps the handles a reply carries: each new one gets BC_INCREFS and
    /// BC_ACQUIRE (before the reply's buffer is freed) and goes into `held`.
    pub fn call_hold(
        &mut self,
        handle: u32,
        code: u32,
        data: &[u8],
        held: &mut HashSet<u32>,
    ) -> Result<(), String> {
        self.call_impl(handle, code, 0, data, &[], Some(held))
    }

    fn call_impl(
        &mut self,
        handle: u32,
        code: u32,
        flags: u32,
        data: &[u8],
        offs: &[u64],
        mut held: Option<&mut HashSet<u32>>,
    ) -> Result<(), String> {
        self.queue_txn(handle, code, flags, data, offs);
        let oneway = flags & TF_ONE_WAY != 0;
        loop {
            let n = self.talk(true)?;
            let mut done = false;
            let mut err = None;
            let Ep { rbuf, out, .. } = self;
            for r in ReadIter::new(&rbuf[..n]) {
                match r {
                    Return::TransactionComplete => {
                        if oneway {
                            done = true;
                        }
                    }
                    // A one-way transaction queued to a frozen process.
                    Return::TransactionPendingFrozen if oneway => done = true,
                    Return::Reply(td) => {
                        if let Some(h) = held.as_deref_mut() {
                            if td.offsets_size > 0 {
                                scan_objects(&td, h, out);
                            }
                        }
                        out.extend_from_slice(&BC_FREE_BUFFER.to_ne_bytes());
                        out.extend_from_slice(&td.buffer.to_ne_bytes());
                        if td.flags & TF_STATUS_CODE != 0 {
                            err = Some("reply carries a status code".to_string());
                        }
                        done = true;
                    }
                    other => {
                        if let Some(other) = ack_or_drop(other, out) {
                            err = Some(format!("call: got {}", status_name(&other)));
                        }
                    }
                }
            }
            if let Some(e) = err {
                return Err(e);
            }
            if done {
                return Ok(());
            }
        }
    }

    /// The server loop of one looper thread: every transaction is answered with an
    /// empty reply (sync) or just freed (one-way). Received fds are closed; received
    /// handles are held (BC_INCREFS + BC_ACQUIRE once per handle) so that a repeated
    /// transaction with the same objects measures translation, not node life cycles.
    /// Returns the number of transactions served when a CODE_STOP transaction arrives.
    pub fn serve(&mut self) -> Result<u64, String> {
        let mut held: HashSet<u32> = HashSet::new();
        let mut served = 0u64;
        self.cmd(BC_ENTER_LOOPER);
        loop {
            let n = self.talk(true)?;
            let mut stop = false;
            let mut stop_sync = false;
            let mut err = None;
            let Ep { rbuf, out, .. } = self;
            for r in ReadIter::new(&rbuf[..n]) {
                match r {
                    Return::Transaction(td) | Return::TransactionSecCtx(td, _) => {
                        served += 1;
                        if td.offsets_size > 0 {
                            scan_objects(&td, &mut held, out);
                        }
                        out.extend_from_slice(&BC_FREE_BUFFER.to_ne_bytes());
                        out.extend_from_slice(&td.buffer.to_ne_bytes());
                        if td.flags & TF_ONE_WAY == 0 {
                            let rep = binder_transaction_data::default();
                            out.extend_from_slice(&BC_REPLY.to_ne_bytes());
                            out.extend_from_slice(bytes_of(&rep));
                        }
                        if td.code == CODE_STOP {
                            stop = true;
                            stop_sync = td.flags & TF_ONE_WAY == 0;
                        }
                    }
                    other => {
                        if let Some(other) = ack_or_drop(other, out) {
                            err = Some(format!("server: got {}", status_name(&other)));
                        }
                    }
                }
            }
            if let Some(e) = err {
                return Err(e);
            }
            if stop {
                // Send the last free/reply; a reply's BR_TRANSACTION_COMPLETE is read
                // so that the driver has nothing undelivered when the thread goes.
                self.talk(stop_sync)?;
                return Ok(served);
            }
        }
    }
}

/// What a looper or a caller does, as libbinder does, with a return that needs no decision
/// of its own: a node reference request (BR_INCREFS, BR_ACQUIRE) is acknowledged on `out`
/// (BC_INCREFS_DONE, BC_ACQUIRE_DONE, sent with the next write), and BR_NOOP,
/// BR_TRANSACTION_COMPLETE, BR_SPAWN_LOOPER, BR_RELEASE and BR_DECREFS are dropped. Any other
/// return is given back.
#[inline]
pub(crate) fn ack_or_drop(r: Return, out: &mut Vec<u8>) -> Option<Return> {
    match r {
        Return::Noop
        | Return::TransactionComplete
        | Return::SpawnLooper
        | Return::Release(_)
        | Return::Decrefs(_) => {}
        Return::Increfs(pc) => {
            out.extend_from_slice(&BC_INCREFS_DONE.to_ne_bytes());
            out.extend_from_slice(bytes_of(&pc));
        }
        Return::Acquire(pc) => {
            out.extend_from_slice(&BC_ACQUIRE_DONE.to_ne_bytes());
            out.extend_from_slice(bytes_of(&pc));
        }
        other => return Some(other),
    }
    None
}

/// Look at the objects of a received transaction: close fds, hold new handles.
fn scan_objects(td: &binder_transaction_data, held: &mut HashSet<u32>, out: &mut Vec<u8>) {
    let count = (td.offsets_size / 8) as usize;
    for i in 0..count {
        // SAFETY: the driver put the offsets array and the data inside our mapping.
        let off = unsafe { core::ptr::read_unaligned((td.offsets + (i * 8) as u64) as *const u64) };
        if off + 8 > td.data_size {
            continue;
        }
        // SAFETY: the object lies inside the received data (checked above for its header;
        // the driver validated the whole object before delivering it).
        let obj = unsafe {
            core::slice::from_raw_parts(
                (td.buffer + off) as *const u8,
                (td.data_size - off) as usize,
            )
        };
        let ty: u32 = read_pod(obj);
        if ty == BINDER_TYPE_FD {
            let fo: binder_fd_object = read_pod(obj);
            // SAFETY: the driver installed this fd for us; we own it now.
            unsafe { libc::close(fo.pad_binder_or_fd as u32 as i32) };
        } else if ty == BINDER_TYPE_HANDLE {
            let fo: flat_binder_object = read_pod(obj);
            let h = fo.binder_or_handle as u32;
            if held.insert(h) {
                out.extend_from_slice(&BC_INCREFS.to_ne_bytes());
                out.extend_from_slice(&h.to_ne_bytes());
                out.extend_from_slice(&BC_ACQUIRE.to_ne_bytes());
                out.extend_from_slice(&h.to_ne_bytes());
            }
        }
    }
}
