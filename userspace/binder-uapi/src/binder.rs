//! A small safe wrapper around a binder file descriptor.

use crate::proto::{decode, names, Payload, Pod, Return, WriteBuf};
use crate::uapi::*;
use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::ffi::CString;
use std::io;
use std::os::fd::RawFd;

/// Default mapping size for tests (libbinder uses 1 MiB - 8 KiB).
pub const DEFAULT_MAP_SIZE: usize = 1024 * 1024;
/// Default time to wait for an expected BR_* item.
pub const DEFAULT_WAIT_MS: i32 = 5000;

thread_local! {
    /// Decoded but not yet consumed returns, per (OS thread, fd): the driver's queues are
    /// per binder thread, so the buffering is too.
    static PENDING: RefCell<HashMap<RawFd, VecDeque<Return>>> = RefCell::new(HashMap::new());
}

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Render an errno as `EINVAL` style text.
pub fn errno_name(e: i32) -> String {
    let n = match e {
        libc::EPERM => "EPERM",
        libc::ENOENT => "ENOENT",
        libc::ESRCH => "ESRCH",
        libc::EINTR => "EINTR",
        libc::EIO => "EIO",
        libc::ENXIO => "ENXIO",
        libc::E2BIG => "E2BIG",
        libc::EBADF => "EBADF",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EACCES => "EACCES",
        libc::EFAULT => "EFAULT",
        libc::EBUSY => "EBUSY",
        libc::EEXIST => "EEXIST",
        libc::ENODEV => "ENODEV",
        libc::ENOTDIR => "ENOTDIR",
        libc::EINVAL => "EINVAL",
        libc::ENFILE => "ENFILE",
        libc::EMFILE => "EMFILE",
        libc::ENOTTY => "ENOTTY",
        libc::ENOSPC => "ENOSPC",
        libc::ESPIPE => "ESPIPE",
        libc::EROFS => "EROFS",
        libc::EPIPE => "EPIPE",
        libc::ERANGE => "ERANGE",
        libc::ENOSYS => "ENOSYS",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOTCONN => "ENOTCONN",
        libc::ETIMEDOUT => "ETIMEDOUT",
        libc::ENOSR => "ENOSR",
        libc::ECONNREFUSED => "ECONNREFUSED",
        libc::ENODATA => "ENODATA",
        libc::EOVERFLOW => "EOVERFLOW",
        libc::EOPNOTSUPP => "EOPNOTSUPP",
        _ => return format!("errno {e}"),
    };
    n.to_string()
}

/// `Ok` or the errno name, for messages.
pub fn res_name<T>(r: &io::Result<T>) -> String {
    match r {
        Ok(_) => "success".to_string(),
        Err(e) => match e.raw_os_error() {
            Some(n) => errno_name(n),
            None => e.to_string(),
        },
    }
}

/// A received transaction or reply, with its payload copied out of the mapping.
#[derive(Clone, Debug)]
pub struct Received {
    pub td: binder_transaction_data,
    pub data: Vec<u8>,
    pub offsets: Vec<u64>,
}

impl Received {
    /// Read a Pod object at `off` in the data.
    pub fn object<T: Pod>(&self, off: u64) -> T {
        crate::proto::read_pod(&self.data[off as usize..])
    }
}

/// An open binder device (one binder_proc in the driver).
pub struct Binder {
    fd: RawFd,
    map: usize,
    map_size: usize,
}

impl Binder {
    /// Open `path` read-write with O_CLOEXEC.
    pub fn open(path: &str) -> io::Result<Binder> {
        Self::open_flags(path, libc::O_RDWR | libc::O_CLOEXEC)
    }

    pub fn open_flags(path: &str, flags: i32) -> io::Result<Binder> {
        let c = CString::new(path).map_err(|_| io::Error::from_raw_os_error(libc::EINVAL))?;
        // SAFETY: plain syscall with a valid C string.
        let fd = cvt(unsafe { libc::open(c.as_ptr(), flags) })?;
        PENDING.with(|p| p.borrow_mut().remove(&fd));
        Ok(Binder {
            fd,
            map: 0,
            map_size: 0,
        })
    }

    /// Open and map `DEFAULT_MAP_SIZE` bytes.
    pub fn open_mapped(path: &str) -> io::Result<Binder> {
        let mut b = Self::open(path)?;
        b.mmap(DEFAULT_MAP_SIZE)?;
        Ok(b)
    }

    /// A second handle on the same binder_proc (a dup of the fd, without the mapping): for
    /// another thread of the process, which the driver tells apart by its task.
    pub fn try_clone(&self) -> io::Result<Binder> {
        // SAFETY: plain syscall on our fd.
        let fd = cvt(unsafe { libc::fcntl(self.fd, libc::F_DUPFD_CLOEXEC, 0) })?;
        PENDING.with(|p| p.borrow_mut().remove(&fd));
        Ok(Binder {
            fd,
            map: 0,
            map_size: 0,
        })
    }

    pub fn fd(&self) -> RawFd {
        self.fd
    }
    pub fn map_addr(&self) -> u64 {
        self.map as u64
    }
    pub fn map_size(&self) -> usize {
        self.map_size
    }

    /// Map the buffer area read-only (MAP_PRIVATE), as libbinder does.
    pub fn mmap(&mut self, size: usize) -> io::Result<()> {
        let p = self.mmap_raw(size, libc::PROT_READ, libc::MAP_PRIVATE)?;
        self.map = p;
        self.map_size = size;
        Ok(())
    }

    /// A raw mmap of this fd; the mapping is not tracked (bad-input tests).
    pub fn mmap_raw(&self, size: usize, prot: i32, flags: i32) -> io::Result<usize> {
        // SAFETY: mmap of our own fd; the result is only used as an address.
        let p = unsafe { libc::mmap(core::ptr::null_mut(), size, prot, flags, self.fd, 0) };
        if p == libc::MAP_FAILED {
            Err(io::Error::last_os_error())
        } else {
            Ok(p as usize)
        }
    }

    /// ioctl with a pointer to `arg`.
    pub fn ioctl<T>(&self, req: u32, arg: &mut T) -> io::Result<i32> {
        // SAFETY: `arg` is a valid, writable T for the duration of the call.
        cvt(unsafe { libc::ioctl(self.fd, req as _, arg as *mut T) })
    }

    /// ioctl with an arbitrary integer argument (bad pointers).
    pub fn ioctl_raw(&self, req: u32, arg: usize) -> io::Result<i32> {
        // SAFETY: the kernel validates user pointers; we never dereference `arg` here.
        cvt(unsafe { libc::ioctl(self.fd, req as _, arg) })
    }

    pub fn version(&self) -> io::Result<i32> {
        let mut v = binder_version::default();
        self.ioctl(BINDER_VERSION, &mut v)?;
        Ok(v.protocol_version)
    }

    pub fn set_context_mgr(&self) -> io::Result<()> {
        let mut z: i32 = 0;
        self.ioctl(BINDER_SET_CONTEXT_MGR, &mut z).map(|_| ())
    }

    pub fn set_context_mgr_ext(&self, flags: u32, ptr: u64, cookie: u64) -> io::Result<()> {
        let mut fbo = flat_binder_object {
            hdr: binder_object_header {
                type_: BINDER_TYPE_BINDER,
            },
            flags,
            binder_or_handle: ptr,
            cookie,
        };
        self.ioctl(BINDER_SET_CONTEXT_MGR_EXT, &mut fbo).map(|_| ())
    }

    pub fn set_max_threads(&self, n: u32) -> io::Result<()> {
        let mut n = n;
        self.ioctl(BINDER_SET_MAX_THREADS, &mut n).map(|_| ())
    }

    pub fn thread_exit(&self) -> io::Result<()> {
        let mut z: i32 = 0;
        let r = self.ioctl(BINDER_THREAD_EXIT, &mut z).map(|_| ());
        PENDING.with(|p| p.borrow_mut().remove(&self.fd));
        r
    }

    pub fn enable_oneway_spam_detection(&self, on: bool) -> io::Result<()> {
        let mut v: u32 = on as u32;
        self.ioctl(BINDER_ENABLE_ONEWAY_SPAM_DETECTION, &mut v)
            .map(|_| ())
    }

    pub fn node_info_for_ref(&self, handle: u32) -> io::Result<binder_node_info_for_ref> {
        let mut i = binder_node_info_for_ref {
            handle,
            ..Default::default()
        };
        self.ioctl(BINDER_GET_NODE_INFO_FOR_REF, &mut i)?;
        Ok(i)
    }

    pub fn node_debug_info(&self, ptr: u64) -> io::Result<binder_node_debug_info> {
        let mut i = binder_node_debug_info {
            ptr,
            ..Default::default()
        };
        self.ioctl(BINDER_GET_NODE_DEBUG_INFO, &mut i)?;
        Ok(i)
    }

    pub fn freeze(&self, pid: i32, enable: bool, timeout_ms: u32) -> io::Result<()> {
        let mut i = binder_freeze_info {
            pid: pid as u32,
            enable: enable as u32,
            timeout_ms,
        };
        self.ioctl(BINDER_FREEZE, &mut i).map(|_| ())
    }

    pub fn frozen_info(&self, pid: i32) -> io::Result<binder_frozen_status_info> {
        let mut i = binder_frozen_status_info {
            pid: pid as u32,
            ..Default::default()
        };
        self.ioctl(BINDER_GET_FROZEN_INFO, &mut i)?;
        Ok(i)
    }

    pub fn extended_error(&self) -> io::Result<binder_extended_error> {
        let mut e = binder_extended_error::default();
        self.ioctl(BINDER_GET_EXTENDED_ERROR, &mut e)?;
        Ok(e)
    }

    /// BINDER_WRITE_READ with a caller-built descriptor.
    pub fn write_read_raw(&self, bwr: &mut binder_write_read) -> io::Result<()> {
        self.ioctl(BINDER_WRITE_READ, bwr).map(|_| ())
    }

    /// Write all of `w` (no read). Returns write_consumed; an error carries the errno.
    pub fn write(&self, w: &WriteBuf) -> io::Result<u64> {
        self.write_bytes(w.as_slice())
    }

    pub fn write_bytes(&self, b: &[u8]) -> io::Result<u64> {
        let mut bwr = binder_write_read {
            write_size: b.len() as u64,
            write_buffer: b.as_ptr() as u64,
            ..Default::default()
        };
        self.write_read_raw(&mut bwr)?;
        Ok(bwr.write_consumed)
    }

    /// Write `w` and report write_consumed even when the ioctl fails.
    pub fn write_consumed(&self, w: &WriteBuf) -> (io::Result<()>, u64) {
        let b = w.as_slice();
        let mut bwr = binder_write_read {
            write_size: b.len() as u64,
            write_buffer: b.as_ptr() as u64,
            ..Default::default()
        };
        let r = self.write_read_raw(&mut bwr);
        (r, bwr.write_consumed)
    }

    /// One blocking read into a 4 KiB buffer; returns the decoded items.
    pub fn read_once(&self) -> io::Result<Vec<Return>> {
        let mut buf = vec![0u8; 4096];
        let mut bwr = binder_write_read {
            read_size: buf.len() as u64,
            read_buffer: buf.as_mut_ptr() as u64,
            ..Default::default()
        };
        self.write_read_raw(&mut bwr)?;
        Ok(decode(&buf[..bwr.read_consumed as usize]))
    }

    /// Wait up to `ms` for the fd to become readable (the calling thread has work).
    pub fn poll(&self, ms: i32) -> io::Result<bool> {
        let mut p = libc::pollfd {
            fd: self.fd,
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            // SAFETY: one valid pollfd.
            let r = unsafe { libc::poll(&mut p, 1, ms) };
            if r < 0 {
                let e = io::Error::last_os_error();
                if e.raw_os_error() == Some(libc::EINTR) {
                    continue;
                }
                return Err(e);
            }
            if p.revents & libc::POLLERR != 0 {
                return Err(io::Error::from_raw_os_error(libc::EIO));
            }
            return Ok(r > 0);
        }
    }

    fn pending_pop(&self) -> Option<Return> {
        PENDING.with(|p| p.borrow_mut().get_mut(&self.fd).and_then(|q| q.pop_front()))
    }

    fn pending_push(&self, v: Vec<Return>) {
        PENDING.with(|p| p.borrow_mut().entry(self.fd).or_default().extend(v));
    }

    /// Number of already-read, unconsumed returns of this thread.
    pub fn pending_len(&self) -> usize {
        PENDING.with(|p| p.borrow().get(&self.fd).map(|q| q.len()).unwrap_or(0))
    }

    /// Next return (BR_NOOP skipped), waiting at most `ms`; `Ok(None)` on timeout.
    pub fn try_next(&self, ms: i32) -> io::Result<Option<Return>> {
        loop {
            if let Some(r) = self.pending_pop() {
                if r == Return::Noop {
                    continue;
                }
                return Ok(Some(r));
            }
            if !self.poll(ms)? {
                return Ok(None);
            }
            let v = self.read_once()?;
            self.pending_push(v);
        }
    }

    /// Next return (BR_NOOP skipped) or an error message after `DEFAULT_WAIT_MS`.
    pub fn next(&self) -> Result<Return, String> {
        self.next_within(DEFAULT_WAIT_MS)
    }

    pub fn next_within(&self, ms: i32) -> Result<Return, String> {
        match self.try_next(ms) {
            Ok(Some(r)) => Ok(r),
            Ok(None) => Err(format!("no BR_* item within {ms} ms")),
            Err(e) => Err(format!(
                "BINDER_WRITE_READ (read) failed: {}",
                res_name::<()>(&Err(e))
            )),
        }
    }

    /// Next return, answering node reference requests on the way as libbinder does
    /// (BR_INCREFS -> BC_INCREFS_DONE, BR_ACQUIRE -> BC_ACQUIRE_DONE; BR_RELEASE,
    /// BR_DECREFS and BR_SPAWN_LOOPER are dropped).
    pub fn next_auto(&self) -> Result<Return, String> {
        self.next_auto_within(DEFAULT_WAIT_MS)
    }

    /// `next_auto`, waiting at most `ms` for each return.
    pub fn next_auto_within(&self, ms: i32) -> Result<Return, String> {
        loop {
            let r = self.next_within(ms)?;
            match r {
                Return::Increfs(pc) => {
                    let mut w = WriteBuf::new();
                    w.increfs_done(pc.ptr, pc.cookie);
                    self.write(&w)
                        .map_err(|e| format!("BC_INCREFS_DONE: {e}"))?;
                }
                Return::Acquire(pc) => {
                    let mut w = WriteBuf::new();
                    w.acquire_done(pc.ptr, pc.cookie);
                    self.write(&w)
                        .map_err(|e| format!("BC_ACQUIRE_DONE: {e}"))?;
                }
                Return::Release(_) | Return::Decrefs(_) | Return::SpawnLooper => {}
                other => return Ok(other),
            }
        }
    }

    /// Expect the next return to have code `code`.
    pub fn expect(&self, code: u32) -> Result<Return, String> {
        let r = self.next()?;
        if r.code() != code {
            return Err(format!(
                "expected {}, got {}",
                br_name(code).unwrap_or("?"),
                r.name()
            ));
        }
        Ok(r)
    }

    /// Assert nothing (other than BR_NOOP) arrives within `ms`.
    pub fn expect_nothing(&self, ms: i32) -> Result<(), String> {
        match self.try_next(ms) {
            Ok(None) => Ok(()),
            Ok(Some(r)) => Err(format!("expected no BR_* item, got {}", r.name())),
            Err(e) => Err(format!("read failed: {e}")),
        }
    }

    /// Read until one of `codes` arrives; everything else seen on the way is returned too.
    pub fn collect_until(&self, codes: &[u32]) -> Result<Vec<Return>, String> {
        let mut seen = Vec::new();
        loop {
            match self.try_next(DEFAULT_WAIT_MS) {
                Ok(Some(r)) => {
                    let stop = codes.contains(&r.code());
                    seen.push(r);
                    if stop {
                        return Ok(seen);
                    }
                }
                Ok(None) => {
                    return Err(format!(
                        "waited {} ms for {:?}, saw {}",
                        DEFAULT_WAIT_MS,
                        codes
                            .iter()
                            .map(|c| br_name(*c).unwrap_or("?"))
                            .collect::<Vec<_>>(),
                        names(&seen)
                    ))
                }
                Err(e) => return Err(format!("read failed: {e}, saw {}", names(&seen))),
            }
        }
    }

    /// Drain everything currently available (waiting `ms` for each further item).
    pub fn drain(&self, ms: i32) -> Vec<Return> {
        let mut v = Vec::new();
        while let Ok(Some(r)) = self.try_next(ms) {
            v.push(r);
        }
        v
    }

    /// Copy a received buffer out of the mapping.
    pub fn received(&self, td: &binder_transaction_data) -> Result<Received, String> {
        let start = self.map as u64;
        let end = start + self.map_size as u64;
        let check = |p: u64, n: u64, what: &str| -> Result<(), String> {
            if n == 0 {
                return Ok(());
            }
            if p < start || p.checked_add(n).map(|e| e > end).unwrap_or(true) {
                return Err(format!(
                    "{what} {p:#x}+{n} lies outside the mapping {start:#x}..{end:#x}"
                ));
            }
            Ok(())
        };
        check(td.buffer, td.data_size, "data buffer")?;
        check(td.offsets, td.offsets_size, "offsets buffer")?;
        // SAFETY: both ranges checked to lie inside our live read-only mapping.
        let data = unsafe {
            core::slice::from_raw_parts(td.buffer as *const u8, td.data_size as usize).to_vec()
        };
        let mut offsets = Vec::new();
        for i in 0..(td.offsets_size / 8) {
            // SAFETY: inside the checked offsets range.
            let o = unsafe { core::ptr::read_unaligned((td.offsets + i * 8) as *const u64) };
            offsets.push(o);
        }
        Ok(Received {
            td: *td,
            data,
            offsets,
        })
    }

    /// Read `len` bytes at address `addr` inside the mapping (e.g. a PTR object's target).
    pub fn read_mapped(&self, addr: u64, len: usize) -> Result<Vec<u8>, String> {
        let start = self.map as u64;
        let end = start + self.map_size as u64;
        if addr < start || addr + len as u64 > end {
            return Err(format!("{addr:#x}+{len} outside the mapping"));
        }
        // SAFETY: checked to be inside our mapping.
        Ok(unsafe { core::slice::from_raw_parts(addr as *const u8, len).to_vec() })
    }

    /// BC_ENTER_LOOPER.
    pub fn enter_looper(&self) -> io::Result<()> {
        let mut w = WriteBuf::new();
        w.enter_looper();
        self.write(&w).map(|_| ())
    }

    /// BC_FREE_BUFFER.
    pub fn free_buffer(&self, ptr: u64) -> io::Result<()> {
        let mut w = WriteBuf::new();
        w.free_buffer(ptr);
        self.write(&w).map(|_| ())
    }

    /// Send BC_TRANSACTION (write only).
    pub fn transact(&self, handle: u32, code: u32, flags: u32, p: &Payload) -> io::Result<()> {
        let mut w = WriteBuf::new();
        w.transaction(handle, code, flags, p);
        self.write(&w).map(|_| ())
    }

    /// Send BC_REPLY (write only).
    pub fn reply(&self, flags: u32, p: &Payload) -> io::Result<()> {
        let mut w = WriteBuf::new();
        w.reply(flags, p);
        self.write(&w).map(|_| ())
    }

    /// Synchronous call: BC_TRANSACTION, then expect BR_TRANSACTION_COMPLETE and BR_REPLY.
    /// Returns the reply (copied) after freeing its buffer. Other outcomes are errors
    /// that name what arrived instead.
    pub fn call(&self, handle: u32, code: u32, p: &Payload) -> Result<Received, String> {
        self.call_within(handle, code, p, DEFAULT_WAIT_MS)
    }

    /// `call`, waiting at most `ms` for each return (e.g. behind many other callers).
    pub fn call_within(
        &self,
        handle: u32,
        code: u32,
        p: &Payload,
        ms: i32,
    ) -> Result<Received, String> {
        self.transact(handle, code, 0, p)
            .map_err(|e| format!("BC_TRANSACTION write failed: {e}"))?;
        let r = self.next_auto_within(ms)?;
        if r != Return::TransactionComplete {
            return Err(format!(
                "expected BR_TRANSACTION_COMPLETE, got {}",
                r.name()
            ));
        }
        let r = self.next_auto_within(ms)?;
        match r {
            Return::Reply(td) => {
                let rec = self.received(&td)?;
                self.free_buffer(td.buffer)
                    .map_err(|e| format!("BC_FREE_BUFFER failed: {e}"))?;
                Ok(rec)
            }
            other => Err(format!("expected BR_REPLY, got {}", other.name())),
        }
    }

    /// Like `call` but leaves the reply buffer allocated (objects in it keep their refs);
    /// the caller frees `rec.td.buffer`.
    pub fn call_nofree(&self, handle: u32, code: u32, p: &Payload) -> Result<Received, String> {
        self.call_flags_nofree(handle, code, 0, p)
    }

    /// `call_nofree` with transaction flags.
    pub fn call_flags_nofree(
        &self,
        handle: u32,
        code: u32,
        flags: u32,
        p: &Payload,
    ) -> Result<Received, String> {
        self.transact(handle, code, flags, p)
            .map_err(|e| format!("BC_TRANSACTION write failed: {e}"))?;
        let r = self.next_auto()?;
        if r != Return::TransactionComplete {
            return Err(format!(
                "expected BR_TRANSACTION_COMPLETE, got {}",
                r.name()
            ));
        }
        match self.next_auto()? {
            Return::Reply(td) => self.received(&td),
            other => Err(format!("expected BR_REPLY, got {}", other.name())),
        }
    }

    /// BC_INCREFS + BC_ACQUIRE on a handle (what libbinder does to keep a proxy).
    pub fn acquire_handle(&self, h: u32) -> io::Result<()> {
        let mut w = WriteBuf::new();
        w.increfs(h).acquire(h);
        self.write(&w).map(|_| ())
    }

    /// BC_RELEASE + BC_DECREFS on a handle.
    pub fn release_handle(&self, h: u32) -> io::Result<()> {
        let mut w = WriteBuf::new();
        w.release(h).decrefs(h);
        self.write(&w).map(|_| ())
    }

    /// Send a transaction and return the first terminal return (BR_REPLY, BR_DEAD_REPLY,
    /// BR_FAILED_REPLY, BR_FROZEN_REPLY, BR_ERROR) plus what came before it.
    /// BR_TRANSACTION_COMPLETE is included in the prefix.
    pub fn call_raw(&self, w: &WriteBuf) -> Result<(Vec<Return>, Return), String> {
        self.write(w)
            .map_err(|e| format!("BC_TRANSACTION write failed: {e}"))?;
        let mut v = self.collect_until(&[
            BR_REPLY,
            BR_DEAD_REPLY,
            BR_FAILED_REPLY,
            BR_FROZEN_REPLY,
            BR_ERROR,
        ])?;
        let last = v.pop().expect("collect_until returns the terminal item");
        Ok((v, last))
    }

    /// Wait for a BR_TRANSACTION (or _SEC_CTX) and copy it out.
    pub fn recv_txn(&self) -> Result<Received, String> {
        let r = self.next()?;
        match r {
            Return::Transaction(td) | Return::TransactionSecCtx(td, _) => self.received(&td),
            other => Err(format!("expected BR_TRANSACTION, got {}", other.name())),
        }
    }

    /// Reply to the current transaction and free its buffer; expects BR_TRANSACTION_COMPLETE.
    pub fn reply_and_free(&self, txn_buffer: u64, p: &Payload) -> Result<(), String> {
        let mut w = WriteBuf::new();
        w.free_buffer(txn_buffer).reply(0, p);
        self.write(&w)
            .map_err(|e| format!("BC_FREE_BUFFER+BC_REPLY failed: {e}"))?;
        let r = self.next_auto()?;
        if r != Return::TransactionComplete {
            return Err(format!(
                "expected BR_TRANSACTION_COMPLETE after BC_REPLY, got {}",
                r.name()
            ));
        }
        Ok(())
    }
}

impl Drop for Binder {
    fn drop(&mut self) {
        PENDING.with(|p| p.borrow_mut().remove(&self.fd));
        // SAFETY: we own the mapping and the fd.
        unsafe {
            if self.map != 0 {
                libc::munmap(self.map as *mut libc::c_void, self.map_size);
            }
            libc::close(self.fd);
        }
    }
}

/// binderfs device management.
pub mod binderfs {
    use super::*;

    /// Where the harness mounts binderfs (`BINDERFS` in the environment overrides it).
    pub fn mount_point() -> String {
        std::env::var("BINDERFS").unwrap_or_else(|_| "/dev/binderfs".to_string())
    }

    /// BINDER_CTL_ADD on `<mnt>/binder-control`; returns the device struct the kernel filled in.
    pub fn add_device(mnt: &str, name: &str) -> io::Result<binderfs_device> {
        let ctl = Binder::open(&format!("{mnt}/binder-control"))?;
        let mut d = binderfs_device::default();
        let n = name.as_bytes();
        let len = n.len().min(BINDERFS_MAX_NAME + 1);
        d.name[..len].copy_from_slice(&n[..len]);
        ctl.ioctl(BINDER_CTL_ADD, &mut d)?;
        Ok(d)
    }

    /// Remove a device node created with `add_device`.
    pub fn remove_device(mnt: &str, name: &str) -> io::Result<()> {
        std::fs::remove_file(format!("{mnt}/{name}"))
    }

    /// A binderfs device that is unlinked when dropped.
    pub struct Device {
        pub mnt: String,
        pub name: String,
        pub info: binderfs_device,
    }

    impl Device {
        pub fn create(mnt: &str, name: &str) -> io::Result<Device> {
            let info = add_device(mnt, name)?;
            Ok(Device {
                mnt: mnt.to_string(),
                name: name.to_string(),
                info,
            })
        }
        pub fn path(&self) -> String {
            format!("{}/{}", self.mnt, self.name)
        }
    }

    impl Drop for Device {
        fn drop(&mut self) {
            let _ = remove_device(&self.mnt, &self.name);
        }
    }

    /// A binderfs instance of its own, mounted on a directory; detached (umount2 with
    /// MNT_DETACH) and the directory removed when dropped.
    pub struct Mount {
        pub dir: String,
    }

    impl Mount {
        /// Mount a new binderfs instance on the existing directory `dir`, with the mount
        /// options `opts` (`""` for none; `"stats=global"` gives it binder_logs). On error
        /// the directory is left as it was.
        pub fn new(dir: &str, opts: &str) -> io::Result<Mount> {
            let c = |s: &str| {
                CString::new(s).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))
            };
            let (fs, tgt, data) = (c("binder")?, c(dir)?, c(opts)?);
            // SAFETY: mount(2) with NUL-terminated strings that outlive the call.
            let r = unsafe {
                libc::mount(
                    fs.as_ptr(),
                    tgt.as_ptr(),
                    fs.as_ptr(),
                    0,
                    data.as_ptr() as *const libc::c_void,
                )
            };
            if r != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(Mount {
                dir: dir.to_string(),
            })
        }
    }

    impl Drop for Mount {
        fn drop(&mut self) {
            if let Ok(t) = CString::new(self.dir.as_str()) {
                // SAFETY: umount2 of our own mount point, a NUL-terminated string.
                unsafe { libc::umount2(t.as_ptr(), libc::MNT_DETACH) };
            }
            let _ = std::fs::remove_dir(&self.dir);
        }
    }
}
