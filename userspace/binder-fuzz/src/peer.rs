//! One fuzzing peer: a process with several threads on one binder fd, each thread
//! drawing BC_* streams (valid-looking and broken) and ioctls from its own seeded Rng,
//! and reacting to what the driver returns.

use crate::rng::{derive, Rng};
use crate::sys::{self, close, shared, write_read, MAX_PEERS};
use binder_uapi::proto::{bytes_of, decode, Pod};
use binder_uapi::*;
use std::sync::atomic::Ordering;

/// Local node addresses a peer hands out (cookie = ptr ^ COOKIE_XOR).
const NODE_PTRS: [u64; 4] = [0x1000, 0x2000, 0x3000, 0x4000];
const COOKIE_XOR: u64 = 0xc0c0_0000;
const SCRATCH: usize = 16 * 1024;

pub struct PeerSpec {
    pub dev: String,
    pub deadline_ms: u64,
    pub seed: u64,
    pub threads: usize,
    pub is_mgr: bool,
}

/// Fds other than binder's that a peer sends around (never a binder fd: a binder file
/// sitting in its own proc's todo list is a reference cycle no driver can collect).
#[derive(Clone, Copy)]
struct Fds {
    pipe_r: i32,
    pipe_w: i32,
    null: i32,
}

struct Th {
    fd: i32,
    map: u64,
    map_size: u64,
    rng: Rng,
    handles: Vec<u32>,
    bufs: Vec<u64>,
    fds: Fds,
    scratch: Vec<u8>,
    is_mgr: bool,
    deadline_ms: u64,
}

fn node_cookie(ptr: u64) -> u64 {
    ptr ^ COOKIE_XOR
}

/// Run a peer; never returns (the process `_exit`s).
pub fn run(spec: PeerSpec, ready_w: i32) -> ! {
    let code = match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| body(&spec, ready_w)))
    {
        Ok(()) => 0,
        Err(_) => 3,
    };
    // SAFETY: leave the forked child without running the parent's atexit handlers.
    unsafe { libc::_exit(code) }
}

fn body(spec: &PeerSpec, ready_w: i32) {
    let mut rng = Rng::new(spec.seed);
    let flags = libc::O_RDWR | libc::O_CLOEXEC | libc::O_NONBLOCK;
    let fd = match sys::open_dev(&spec.dev, flags) {
        Ok(fd) => fd,
        Err(_) => {
            signal_ready(ready_w);
            return;
        }
    };
    let map_size = *rng.pick(&[16 * 1024u64, 64 * 1024, 256 * 1024, 1024 * 1024]);
    let map = if rng.pct(97) {
        sys::map_dev(fd, map_size as usize).unwrap_or(0) as u64
    } else {
        0
    };
    if spec.is_mgr {
        if rng.pct(50) {
            let mut z: i32 = 0;
            let _ = sys::ioctl(fd, BINDER_SET_CONTEXT_MGR, &mut z as *mut _ as usize);
        } else {
            let mut fbo = flat_binder_object {
                hdr: binder_object_header {
                    type_: BINDER_TYPE_BINDER,
                },
                flags: if rng.pct(50) {
                    FLAT_BINDER_FLAG_ACCEPTS_FDS
                } else {
                    0
                },
                binder_or_handle: 0,
                cookie: 0,
            };
            let _ = sys::ioctl(fd, BINDER_SET_CONTEXT_MGR_EXT, &mut fbo as *mut _ as usize);
        }
    }
    signal_ready(ready_w);
    let fds = make_fds();
    let n = spec.threads.max(1);
    let mut joins = Vec::new();
    for t in 0..n {
        let mut th = Th {
            fd,
            map,
            map_size: if map == 0 { 0 } else { map_size },
            rng: Rng::new(derive(spec.seed, 100 + t as u64)),
            handles: vec![0],
            bufs: Vec::new(),
            fds,
            scratch: vec![0u8; SCRATCH],
            is_mgr: spec.is_mgr,
            deadline_ms: spec.deadline_ms,
        };
        joins.push(std::thread::spawn(move || th.run()));
    }
    for j in joins {
        let _ = j.join();
    }
    // Release some threads explicitly, leave the rest to process exit.
    if rng.pct(30) {
        close(fd);
    }
}

fn signal_ready(w: i32) {
    let b = [1u8];
    // SAFETY: one byte to our pipe.
    unsafe { libc::write(w, b.as_ptr() as *const _, 1) };
    close(w);
}

fn make_fds() -> Fds {
    let mut p = [-1i32; 2];
    // SAFETY: room for two fds.
    unsafe { libc::pipe2(p.as_mut_ptr(), libc::O_CLOEXEC) };
    let null = sys::open_dev("/dev/null", libc::O_RDWR | libc::O_CLOEXEC).unwrap_or(-1);
    Fds {
        pipe_r: p[0],
        pipe_w: p[1],
        null,
    }
}

fn put<T: Pod>(v: &mut Vec<u8>, x: &T) {
    v.extend_from_slice(bytes_of(x));
}

/// A write stream under construction plus the memory it points to.
struct Stream {
    w: Vec<u8>,
    keep: Vec<Vec<u8>>,
}

impl Stream {
    fn new() -> Stream {
        Stream {
            w: Vec::new(),
            keep: Vec::new(),
        }
    }
    fn cmd(&mut self, c: u32) {
        self.w.extend_from_slice(&c.to_ne_bytes());
    }
    fn cmd_with<T: Pod>(&mut self, c: u32, x: &T) {
        self.cmd(c);
        put(&mut self.w, x);
    }
    fn keep(&mut self, v: Vec<u8>) -> u64 {
        let p = v.as_ptr() as u64;
        self.keep.push(v);
        p
    }
}

/// Where an object of a generated payload sits and, for PTR objects, its buffer.
struct ObjInfo {
    off: u64,
    ptr_len: Option<u64>,
    scratch_off: usize,
}

impl Th {
    fn alive(&self) -> bool {
        sys::now_ms() < self.deadline_ms
    }

    fn run(&mut self) {
        if self.rng.pct(60) {
            let mut s = Stream::new();
            s.cmd(if self.rng.pct(80) {
                BC_ENTER_LOOPER
            } else {
                BC_REGISTER_LOOPER
            });
            self.send(&s, 256);
        }
        let max_ops = self.rng.range(200, 100_000);
        let mut ops = 0u64;
        while self.alive() && ops < max_ops {
            ops += 1;
            self.step();
        }
        // Leave buffers behind or free them: both must end clean.
        if self.rng.pct(50) {
            let mut s = Stream::new();
            for b in std::mem::take(&mut self.bufs) {
                s.cmd_with(BC_FREE_BUFFER, &b);
            }
            self.send(&s, 0);
        }
        if self.rng.pct(50) {
            let mut z = 0i32;
            let _ = sys::ioctl(self.fd, BINDER_THREAD_EXIT, &mut z as *mut _ as usize);
        }
    }

    fn step(&mut self) {
        let w = [30u32, 14, 16, 10, 5, 7, 3, 3, 7, 3, 2, 2, 14, 5, 1];
        let mut s = Stream::new();
        match self.rng.weighted(&w) {
            0 => self.gen_txn(&mut s, false, true),
            1 => self.gen_txn(&mut s, false, false),
            2 => {
                let honest = self.rng.pct(60);
                self.gen_txn(&mut s, true, honest)
            }
            3 => self.gen_refcount(&mut s),
            4 => self.gen_free(&mut s),
            5 => self.gen_death(&mut s),
            6 => self.gen_freeze_notif(&mut s),
            7 => self.gen_looper(&mut s),
            8 => return self.misc_ioctl(),
            9 => self.gen_garbage(&mut s),
            10 => return self.thread_exit(),
            11 => return self.epoll(),
            12 => {}
            13 => {
                for _ in 0..self.rng.range(2, 5) {
                    match self.rng.below(5) {
                        0 => self.gen_txn(&mut s, false, true),
                        1 => self.gen_refcount(&mut s),
                        2 => self.gen_death(&mut s),
                        3 => self.gen_free(&mut s),
                        _ => self.gen_txn(&mut s, true, false),
                    }
                }
            }
            _ => return self.remap(),
        }
        let rsz = *self.rng.pick(&[0usize, 8, 64, 256, 1024, 4096, 4096]);
        self.send(&s, rsz);
        // Sometimes drain a little more.
        if self.rng.pct(30) {
            self.send(&Stream::new(), 2048);
        }
    }

    /// BINDER_WRITE_READ of the stream, then react to what came back.
    fn send(&mut self, s: &Stream, rsz: usize) {
        let mut rbuf = vec![0u8; rsz];
        let (_r, _wc, rc) = write_read(self.fd, &s.w, &mut rbuf);
        let rc = (rc as usize).min(rbuf.len());
        if rc > 0 {
            let items = decode(&rbuf[..rc]);
            self.react(items);
        }
    }

    fn react(&mut self, items: Vec<Return>) {
        let mut s = Stream::new();
        for it in items {
            match it {
                Return::Transaction(td) | Return::TransactionSecCtx(td, _) => {
                    self.scan(&td);
                    let oneway = td.flags & TF_ONE_WAY != 0;
                    let free_now = self.rng.pct(85);
                    if free_now {
                        s.cmd_with(BC_FREE_BUFFER, &td.buffer);
                    } else {
                        self.bufs.push(td.buffer);
                    }
                    if !oneway && self.rng.pct(85) {
                        let honest = self.rng.pct(80);
                        let sg = self.rng.pct(25);
                        self.gen_reply(&mut s, sg, honest);
                    }
                }
                Return::Reply(td) => {
                    self.scan(&td);
                    if self.rng.pct(92) {
                        s.cmd_with(BC_FREE_BUFFER, &td.buffer);
                        if self.rng.pct(2) {
                            // an immediate double free
                            s.cmd_with(BC_FREE_BUFFER, &td.buffer);
                        }
                    } else {
                        self.bufs.push(td.buffer);
                    }
                }
                Return::Increfs(pc) if self.rng.pct(92) => {
                    s.cmd_with(BC_INCREFS_DONE, &pc);
                }
                Return::Acquire(pc) if self.rng.pct(92) => {
                    s.cmd_with(BC_ACQUIRE_DONE, &pc);
                }
                Return::DeadBinder(c) if self.rng.pct(85) => {
                    s.cmd_with(BC_DEAD_BINDER_DONE, &c);
                }
                Return::FrozenBinder(info) if self.rng.pct(85) => {
                    s.cmd_with(BC_FREEZE_NOTIFICATION_DONE, &info.cookie);
                }
                _ => {}
            }
        }
        if self.bufs.len() > 8 {
            let b = self.bufs.remove(0);
            s.cmd_with(BC_FREE_BUFFER, &b);
        }
        if !s.w.is_empty() {
            let rsz = if self.rng.pct(70) { 1024 } else { 0 };
            let mut rbuf = vec![0u8; rsz];
            let (_r, _wc, rc) = write_read(self.fd, &s.w, &mut rbuf);
            let rc = (rc as usize).min(rbuf.len());
            if rc > 0 {
                // One level of reaction is enough; the rest is picked up next step.
                let items = decode(&rbuf[..rc]);
                let mut s2 = Stream::new();
                for it in items {
                    match it {
                        Return::Transaction(td)
                        | Return::TransactionSecCtx(td, _)
                        | Return::Reply(td) => {
                            self.scan(&td);
                            s2.cmd_with(BC_FREE_BUFFER, &td.buffer);
                        }
                        Return::Increfs(pc) => s2.cmd_with(BC_INCREFS_DONE, &pc),
                        Return::Acquire(pc) => s2.cmd_with(BC_ACQUIRE_DONE, &pc),
                        Return::DeadBinder(c) => s2.cmd_with(BC_DEAD_BINDER_DONE, &c),
                        _ => {}
                    }
                }
                if !s2.w.is_empty() {
                    let _ = write_read(self.fd, &s2.w, &mut []);
                }
            }
        }
    }

    fn in_map(&self, p: u64, n: u64) -> bool {
        self.map != 0
            && p >= self.map
            && n <= self.map_size
            && p.checked_add(n)
                .map(|e| e <= self.map + self.map_size)
                .unwrap_or(false)
    }

    fn rd<T: Pod>(&self, p: u64) -> Option<T> {
        let n = core::mem::size_of::<T>() as u64;
        if !self.in_map(p, n) {
            return None;
        }
        // SAFETY: inside our live read-only binder mapping, in a buffer this thread owns.
        Some(unsafe { core::ptr::read_unaligned(p as *const T) })
    }

    /// Learn handles from a received buffer and close the fds it brought.
    fn scan(&mut self, td: &binder_transaction_data) {
        if !self.in_map(td.buffer, td.data_size) || !self.in_map(td.offsets, td.offsets_size) {
            return;
        }
        let n = (td.offsets_size / 8).min(64);
        let mut offs = Vec::new();
        for i in 0..n {
            match self.rd::<u64>(td.offsets + 8 * i) {
                Some(o) => offs.push(o),
                None => return,
            }
        }
        for &o in &offs {
            if o + 8 > td.data_size {
                continue;
            }
            let at = td.buffer + o;
            let ty: u32 = match self.rd(at) {
                Some(t) => t,
                None => continue,
            };
            match ty {
                BINDER_TYPE_HANDLE | BINDER_TYPE_WEAK_HANDLE => {
                    if let Some(h) = self.rd::<u32>(at + 8) {
                        if !self.handles.contains(&h) && self.handles.len() < 32 {
                            self.handles.push(h);
                        }
                    }
                }
                BINDER_TYPE_FD => {
                    if let Some(f) = self.rd::<u32>(at + 8) {
                        if f > 2 {
                            close(f as i32);
                        }
                    }
                }
                BINDER_TYPE_FDA => {
                    let fda: Option<binder_fd_array_object> = self.rd(at);
                    if let Some(fda) = fda {
                        if let Some(&po) = offs.get(fda.parent as usize) {
                            let parent: Option<binder_buffer_object> = self.rd(td.buffer + po);
                            if let Some(p) = parent {
                                for k in 0..fda.num_fds.min(16) {
                                    if let Some(f) =
                                        self.rd::<u32>(p.buffer + fda.parent_offset + 4 * k)
                                    {
                                        if f > 2 {
                                            close(f as i32);
                                        }
                                    }
                                }
                            }
                        }
                    }
                }
                _ => {}
            }
        }
    }

    fn pick_handle(&mut self) -> u32 {
        match self.rng.below(10) {
            0 => self.rng.edgy_u64() as u32,
            1 => self.rng.below(8) as u32,
            _ => *self.rng.pick(&self.handles.clone()),
        }
    }

    fn pick_fd(&mut self) -> i32 {
        let f = self.fds;
        *self
            .rng
            .pick(&[f.pipe_r, f.pipe_w, f.null, f.null, -1, 1023, 0x7fff_ffff])
    }

    fn flags(&mut self) -> u32 {
        let mut f = 0;
        if self.rng.pct(35) {
            f |= TF_ONE_WAY;
        }
        if self.rng.pct(50) {
            f |= TF_ACCEPT_FDS;
        }
        if self.rng.pct(10) {
            f |= TF_CLEAR_BUF;
        }
        if self.rng.pct(10) {
            f |= TF_UPDATE_TXN;
        }
        if self.rng.pct(3) {
            f |= TF_STATUS_CODE;
        }
        if self.rng.pct(2) {
            f |= self.rng.u32();
        }
        f
    }

    /// A payload: data, offsets, scatter-gather size. `honest` keeps the lies out.
    fn gen_payload(&mut self, sg: bool, honest: bool) -> (Vec<u8>, Vec<u64>, u64) {
        let mut data = Vec::new();
        let plain = self.rng.below(48) as usize;
        for _ in 0..plain {
            data.push(self.rng.u32() as u8);
        }
        let mut objs: Vec<ObjInfo> = Vec::new();
        let mut sg_size = 0u64;
        let mut scratch_at = 0usize;
        let nobj = self.rng.below(6);
        for _ in 0..nobj {
            while data.len() % 8 != 0 {
                data.push(0);
            }
            let off = data.len() as u64;
            let kind = self.rng.weighted(&[
                20,
                8,
                20,
                8,
                10,
                if sg { 20 } else { 4 },
                if sg { 12 } else { 2 },
                5,
            ]);
            let mut info = ObjInfo {
                off,
                ptr_len: None,
                scratch_off: 0,
            };
            match kind {
                0 | 1 => {
                    let ptr = if honest || self.rng.pct(70) {
                        *self.rng.pick(&NODE_PTRS)
                    } else {
                        self.rng.edgy_u64()
                    };
                    let cookie = if honest || self.rng.pct(70) {
                        node_cookie(ptr)
                    } else {
                        self.rng.next_u64()
                    };
                    let fl = if self.rng.pct(50) {
                        FLAT_BINDER_FLAG_ACCEPTS_FDS
                    } else {
                        0
                    } | (self.rng.below(3) as u32)
                        | if self.rng.pct(5) {
                            FLAT_BINDER_FLAG_TXN_SECURITY_CTX
                        } else {
                            0
                        };
                    put(
                        &mut data,
                        &flat_binder_object {
                            hdr: binder_object_header {
                                type_: if kind == 0 {
                                    BINDER_TYPE_BINDER
                                } else {
                                    BINDER_TYPE_WEAK_BINDER
                                },
                            },
                            flags: fl,
                            binder_or_handle: ptr,
                            cookie,
                        },
                    );
                }
                2 | 3 => {
                    let h = self.pick_handle();
                    put(
                        &mut data,
                        &flat_binder_object {
                            hdr: binder_object_header {
                                type_: if kind == 2 {
                                    BINDER_TYPE_HANDLE
                                } else {
                                    BINDER_TYPE_WEAK_HANDLE
                                },
                            },
                            flags: 0,
                            binder_or_handle: h as u64,
                            cookie: 0,
                        },
                    );
                }
                4 => {
                    let f = self.pick_fd();
                    put(
                        &mut data,
                        &binder_fd_object {
                            hdr: binder_object_header {
                                type_: BINDER_TYPE_FD,
                            },
                            pad_flags: 0,
                            pad_binder_or_fd: f as u32 as u64,
                            cookie: self.rng.next_u64(),
                        },
                    );
                }
                5 => {
                    let len = if self.rng.pct(80) {
                        self.rng.range(0, 32) * 8
                    } else {
                        self.rng.range(0, 300)
                    };
                    let start = scratch_at.min(SCRATCH - 512);
                    scratch_at = (start + len as usize + 8) & !7;
                    for k in 0..len as usize {
                        self.scratch[start + k] = self.rng.u32() as u8;
                    }
                    let buffer = if honest || self.rng.pct(80) {
                        self.scratch.as_ptr() as u64 + start as u64
                    } else {
                        self.rng.edgy_u64()
                    };
                    let prev: Vec<usize> = objs
                        .iter()
                        .enumerate()
                        .filter(|(_, o)| o.ptr_len.is_some())
                        .map(|(i, _)| i)
                        .collect();
                    let (flags, parent, parent_offset) = if !prev.is_empty() && self.rng.pct(50) {
                        let pi = *self.rng.pick(&prev);
                        let plen = objs[pi].ptr_len.unwrap();
                        let po = if honest && plen >= 8 {
                            self.rng.below(plen / 8) * 8
                        } else {
                            self.rng.edgy_u64()
                        };
                        let parent = if honest {
                            pi as u64
                        } else if self.rng.pct(50) {
                            self.rng.edgy_u64()
                        } else {
                            pi as u64
                        };
                        (BINDER_BUFFER_FLAG_HAS_PARENT, parent, po)
                    } else if !honest && self.rng.pct(20) {
                        (
                            BINDER_BUFFER_FLAG_HAS_PARENT,
                            self.rng.edgy_u64(),
                            self.rng.edgy_u64(),
                        )
                    } else {
                        (0, 0, 0)
                    };
                    put(
                        &mut data,
                        &binder_buffer_object {
                            hdr: binder_object_header {
                                type_: BINDER_TYPE_PTR,
                            },
                            flags: if honest {
                                flags
                            } else {
                                flags | (self.rng.below(4) as u32 & !1)
                            },
                            buffer,
                            length: len,
                            parent,
                            parent_offset,
                        },
                    );
                    info.ptr_len = Some(len);
                    info.scratch_off = start;
                    sg_size += (len + 7) & !7;
                }
                6 => {
                    let prev: Vec<usize> = objs
                        .iter()
                        .enumerate()
                        .filter(|(_, o)| o.ptr_len.is_some())
                        .map(|(i, _)| i)
                        .collect();
                    let num = if honest || self.rng.pct(70) {
                        self.rng.below(4)
                    } else {
                        self.rng.edgy_u64()
                    };
                    let (parent, po) = if let Some(&pi) =
                        (!prev.is_empty()).then(|| self.rng.pick(&prev))
                    {
                        let plen = objs[pi].ptr_len.unwrap();
                        let po = if honest || self.rng.pct(50) {
                            let room = plen.saturating_sub(num.min(64) * 4);
                            self.rng.below(room / 4 + 1) * 4
                        } else {
                            self.rng.edgy_u64()
                        };
                        // Fill the parent buffer's slots with real fds.
                        let base = (objs[pi].scratch_off as u64).checked_add(po);
                        for k in 0..num.min(16) {
                            let fdv = self.pick_fd() as u32;
                            if let Some(at) = base.and_then(|b| b.checked_add(4 * k)) {
                                if at <= SCRATCH as u64 - 4 {
                                    let at = at as usize;
                                    self.scratch[at..at + 4].copy_from_slice(&fdv.to_ne_bytes());
                                }
                            }
                        }
                        let parent = if honest || self.rng.pct(60) {
                            pi as u64
                        } else {
                            self.rng.edgy_u64()
                        };
                        (parent, po)
                    } else {
                        (self.rng.edgy_u64(), self.rng.edgy_u64())
                    };
                    put(
                        &mut data,
                        &binder_fd_array_object {
                            hdr: binder_object_header {
                                type_: BINDER_TYPE_FDA,
                            },
                            pad: 0,
                            num_fds: num,
                            parent,
                            parent_offset: po,
                        },
                    );
                }
                _ => {
                    // An object with a lying type.
                    let ty = match self.rng.below(3) {
                        0 => self.rng.u32(),
                        1 => b_pack_chars(b'x', b'x', b'*', B_TYPE_LARGE),
                        _ => {
                            *self.rng.pick(&[
                                BINDER_TYPE_BINDER,
                                BINDER_TYPE_FDA,
                                BINDER_TYPE_PTR,
                                BINDER_TYPE_FD,
                            ]) ^ (1 << self.rng.below(32))
                        }
                    };
                    put(&mut data, &ty);
                    for _ in 0..self.rng.range(1, 9) {
                        put(&mut data, &self.rng.u32());
                    }
                }
            }
            objs.push(info);
        }
        let mut offsets: Vec<u64> = objs.iter().map(|o| o.off).collect();
        if !honest && !offsets.is_empty() {
            for _ in 0..self.rng.range(1, 3) {
                let i = self.rng.below(offsets.len() as u64) as usize;
                offsets[i] = match self.rng.below(6) {
                    0 => offsets[i] + self.rng.range(1, 7),
                    1 => data.len() as u64 - self.rng.below(8),
                    2 => self.rng.edgy_u64(),
                    3 => offsets[self.rng.below(offsets.len() as u64) as usize],
                    4 => offsets[i].saturating_sub(self.rng.range(1, 16)),
                    _ => offsets[i] + 8 * self.rng.range(1, 4),
                };
            }
            if self.rng.pct(20) {
                offsets.reverse();
            }
        }
        if !honest && self.rng.pct(20) {
            offsets.push(self.rng.edgy_u64());
        }
        if !honest && self.rng.pct(10) {
            data.truncate(self.rng.below(data.len() as u64 + 1) as usize);
        }
        let sgs = if honest || self.rng.pct(50) {
            sg_size
        } else {
            self.rng.edgy_u64() & 0xffff_ffff
        };
        (data, offsets, sgs)
    }

    fn build_td(
        &mut self,
        s: &mut Stream,
        target: u64,
        code: u32,
        flags: u32,
        data: Vec<u8>,
        offsets: Vec<u64>,
        honest: bool,
    ) -> binder_transaction_data {
        let mut ob = Vec::new();
        for o in &offsets {
            ob.extend_from_slice(&o.to_ne_bytes());
        }
        let mut data_size = data.len() as u64;
        let mut offsets_size = ob.len() as u64;
        let mut buffer = s.keep(data);
        let mut offp = s.keep(ob);
        if !honest {
            match self.rng.below(10) {
                0 => data_size = self.rng.edgy_u64(),
                1 => offsets_size = offsets_size.wrapping_add(self.rng.range(1, 7)),
                2 => offsets_size = self.rng.edgy_u64(),
                3 => buffer = *self.rng.pick(&[0u64, 8, 0xffff_8000_0000_0000, self.map]),
                4 => offp = *self.rng.pick(&[0u64, 8, 0xffff_8000_0000_0000, self.map]),
                _ => {}
            }
        }
        binder_transaction_data {
            target,
            cookie: self.rng.next_u64(),
            code,
            flags,
            sender_pid: self.rng.u32() as i32,
            sender_euid: self.rng.u32(),
            data_size,
            offsets_size,
            buffer,
            offsets: offp,
        }
    }

    fn gen_txn(&mut self, s: &mut Stream, sg: bool, honest: bool) {
        let target = if self.is_mgr {
            self.pick_handle()
        } else if self.rng.pct(60) {
            0
        } else {
            self.pick_handle()
        };
        let flags = if honest {
            self.flags() & (TF_ONE_WAY | TF_ACCEPT_FDS | TF_CLEAR_BUF | TF_UPDATE_TXN)
        } else {
            self.flags()
        };
        let (data, offsets, sgs) = self.gen_payload(sg, honest);
        let code = self.rng.below(8) as u32;
        let td = self.build_td(s, target as u64, code, flags, data, offsets, honest);
        let stray_reply = self.rng.pct(4);
        if sg {
            let c = if stray_reply {
                BC_REPLY_SG
            } else {
                BC_TRANSACTION_SG
            };
            s.cmd_with(
                c,
                &binder_transaction_data_sg {
                    transaction_data: td,
                    buffers_size: sgs,
                },
            );
        } else {
            s.cmd_with(
                if stray_reply {
                    BC_REPLY
                } else {
                    BC_TRANSACTION
                },
                &td,
            );
        }
        shared().txns.fetch_add(1, Ordering::Relaxed);
    }

    fn gen_reply(&mut self, s: &mut Stream, sg: bool, honest: bool) {
        let mut flags = if honest {
            0
        } else {
            self.flags() & !TF_ONE_WAY
        };
        if self.rng.pct(10) {
            flags |= TF_STATUS_CODE;
        }
        let (data, offsets, sgs) = self.gen_payload(sg, honest);
        let td = self.build_td(s, 0, 0, flags, data, offsets, honest);
        if sg {
            s.cmd_with(
                BC_REPLY_SG,
                &binder_transaction_data_sg {
                    transaction_data: td,
                    buffers_size: sgs,
                },
            );
        } else {
            s.cmd_with(BC_REPLY, &td);
        }
    }

    fn gen_refcount(&mut self, s: &mut Stream) {
        for _ in 0..self.rng.range(1, 6) {
            let h = self.pick_handle();
            let c = *self.rng.pick(&[
                BC_INCREFS, BC_ACQUIRE, BC_RELEASE, BC_DECREFS, BC_RELEASE, BC_DECREFS,
            ]);
            s.cmd_with(c, &h);
        }
        if self.rng.pct(20) {
            let ptr = *self.rng.pick(&NODE_PTRS);
            let pc = binder_ptr_cookie {
                ptr: if self.rng.pct(70) {
                    ptr
                } else {
                    self.rng.edgy_u64()
                },
                cookie: if self.rng.pct(70) {
                    node_cookie(ptr)
                } else {
                    self.rng.next_u64()
                },
            };
            s.cmd_with(
                if self.rng.pct(50) {
                    BC_INCREFS_DONE
                } else {
                    BC_ACQUIRE_DONE
                },
                &pc,
            );
        }
        if self.rng.pct(5) {
            s.cmd_with(
                BC_ATTEMPT_ACQUIRE,
                &binder_pri_desc {
                    priority: 0,
                    desc: self.pick_handle(),
                },
            );
        }
        if self.rng.pct(5) {
            s.cmd_with(BC_ACQUIRE_RESULT, &0i32);
        }
    }

    fn gen_free(&mut self, s: &mut Stream) {
        let p = match self.rng.below(6) {
            0 if !self.bufs.is_empty() => {
                let i = self.rng.below(self.bufs.len() as u64) as usize;
                self.bufs.swap_remove(i)
            }
            1 => self.map.wrapping_add(
                (self.rng.below(self.map_size.max(8) / 8) * 8) | self.rng.range(1, 7),
            ),
            2 => self.map.wrapping_add(self.map_size),
            3 => self.map.wrapping_sub(8),
            4 => 0,
            _ => self.rng.edgy_u64() | 1,
        };
        s.cmd_with(BC_FREE_BUFFER, &p);
    }

    fn gen_death(&mut self, s: &mut Stream) {
        let h = self.pick_handle();
        let cookie = 0xdead_0000 | self.rng.below(4);
        match self.rng.below(5) {
            0 | 1 => s.cmd_with(
                BC_REQUEST_DEATH_NOTIFICATION,
                &binder_handle_cookie { handle: h, cookie },
            ),
            2 => s.cmd_with(
                BC_CLEAR_DEATH_NOTIFICATION,
                &binder_handle_cookie { handle: h, cookie },
            ),
            3 => s.cmd_with(BC_DEAD_BINDER_DONE, &cookie),
            _ => {
                s.cmd_with(
                    BC_REQUEST_DEATH_NOTIFICATION,
                    &binder_handle_cookie { handle: h, cookie },
                );
                s.cmd_with(
                    BC_CLEAR_DEATH_NOTIFICATION,
                    &binder_handle_cookie { handle: h, cookie },
                );
                s.cmd_with(BC_DEAD_BINDER_DONE, &cookie);
            }
        }
    }

    fn gen_freeze_notif(&mut self, s: &mut Stream) {
        let h = self.pick_handle();
        let cookie = 0xf0f0_0000 | self.rng.below(4);
        let c = *self.rng.pick(&[
            BC_REQUEST_FREEZE_NOTIFICATION,
            BC_REQUEST_FREEZE_NOTIFICATION,
            BC_CLEAR_FREEZE_NOTIFICATION,
        ]);
        s.cmd_with(c, &binder_handle_cookie { handle: h, cookie });
        if self.rng.pct(30) {
            s.cmd_with(BC_FREEZE_NOTIFICATION_DONE, &cookie);
        }
    }

    fn gen_looper(&mut self, s: &mut Stream) {
        s.cmd(
            *self
                .rng
                .pick(&[BC_ENTER_LOOPER, BC_REGISTER_LOOPER, BC_EXIT_LOOPER]),
        );
    }

    fn gen_garbage(&mut self, s: &mut Stream) {
        match self.rng.below(4) {
            0 => {
                let c = self.rng.u32();
                s.cmd(c);
            }
            1 => {
                // A known command cut short.
                let (c, _) = *self.rng.pick(BC_NAMES);
                s.cmd(c);
                for _ in 0..self.rng.below(3) {
                    s.w.push(self.rng.u32() as u8);
                }
            }
            2 => {
                // A known command with a random payload.
                let (c, _) = *self.rng.pick(BC_NAMES);
                s.cmd(c);
                for _ in 0..ioc_size(c) {
                    s.w.push(self.rng.u32() as u8);
                }
            }
            _ => {
                for _ in 0..self.rng.range(1, 64) {
                    s.w.push(self.rng.u32() as u8);
                }
            }
        }
    }

    fn misc_ioctl(&mut self) {
        let fd = self.fd;
        match self.rng.below(13) {
            0 => {
                let mut n = self.rng.below(16) as u32;
                let _ = sys::ioctl(fd, BINDER_SET_MAX_THREADS, &mut n as *mut _ as usize);
            }
            1 => {
                let mut v = binder_version::default();
                let _ = sys::ioctl(fd, BINDER_VERSION, &mut v as *mut _ as usize);
            }
            2 => {
                let mut i = binder_node_debug_info {
                    ptr: if self.rng.pct(50) {
                        *self.rng.pick(&NODE_PTRS) - 1
                    } else {
                        self.rng.edgy_u64()
                    },
                    ..Default::default()
                };
                let _ = sys::ioctl(fd, BINDER_GET_NODE_DEBUG_INFO, &mut i as *mut _ as usize);
            }
            3 => {
                let mut i = binder_node_info_for_ref {
                    handle: self.pick_handle(),
                    ..Default::default()
                };
                if self.rng.pct(10) {
                    i.reserved1 = 1;
                }
                let _ = sys::ioctl(fd, BINDER_GET_NODE_INFO_FOR_REF, &mut i as *mut _ as usize);
            }
            4 => {
                let mut e = binder_extended_error::default();
                let _ = sys::ioctl(fd, BINDER_GET_EXTENDED_ERROR, &mut e as *mut _ as usize);
            }
            5 => {
                let mut v = self.rng.below(2) as u32;
                let _ = sys::ioctl(
                    fd,
                    BINDER_ENABLE_ONEWAY_SPAM_DETECTION,
                    &mut v as *mut _ as usize,
                );
            }
            6 => {
                let mut z = 0i32;
                let _ = sys::ioctl(fd, BINDER_SET_CONTEXT_MGR, &mut z as *mut _ as usize);
            }
            7 | 8 => {
                let pid = self.peer_pid();
                let mut i = binder_freeze_info {
                    pid: pid as u32,
                    enable: self.rng.below(2) as u32,
                    timeout_ms: self.rng.below(20) as u32,
                };
                let _ = sys::ioctl(fd, BINDER_FREEZE, &mut i as *mut _ as usize);
            }
            9 => {
                let mut i = binder_frozen_status_info {
                    pid: self.peer_pid() as u32,
                    ..Default::default()
                };
                let _ = sys::ioctl(fd, BINDER_GET_FROZEN_INFO, &mut i as *mut _ as usize);
            }
            10 => {
                // Bad argument pointers.
                let req = *self.rng.pick(&[
                    BINDER_WRITE_READ,
                    BINDER_VERSION,
                    BINDER_GET_EXTENDED_ERROR,
                    BINDER_FREEZE,
                    BINDER_GET_NODE_DEBUG_INFO,
                ]);
                let _ = sys::ioctl(fd, req, *self.rng.pick(&[0usize, 1, 0xffff_8000_0000_0000]));
            }
            11 => {
                // An unknown ioctl number.
                let req = iowr(b'b', 20 + self.rng.below(200) as u8, 4);
                let mut z = 0u64;
                let _ = sys::ioctl(fd, req, &mut z as *mut _ as usize);
            }
            _ => {
                // A write_read whose read buffer lies.
                let w: Vec<u8> = Vec::new();
                let mut bwr = binder_write_read {
                    write_size: 0,
                    write_consumed: 0,
                    write_buffer: w.as_ptr() as u64,
                    read_size: self.rng.range(1, 64),
                    read_consumed: 0,
                    read_buffer: *self.rng.pick(&[0u64, 8, self.map, 0xffff_8000_0000_0000]),
                };
                if self.rng.pct(30) {
                    bwr.write_size = self.rng.range(1, 64);
                    bwr.write_buffer = *self.rng.pick(&[0u64, 8, self.map]);
                }
                let _ = sys::ioctl(fd, BINDER_WRITE_READ, &mut bwr as *mut _ as usize);
            }
        }
    }

    fn peer_pid(&mut self) -> i32 {
        let i = self.rng.below(MAX_PEERS as u64) as usize;
        let p = shared().pids[i].load(Ordering::Relaxed);
        if p > 0 {
            p
        } else {
            // SAFETY: trivial.
            unsafe { libc::getpid() }
        }
    }

    fn thread_exit(&mut self) {
        let mut z = 0i32;
        let _ = sys::ioctl(self.fd, BINDER_THREAD_EXIT, &mut z as *mut _ as usize);
        // Buffers delivered to the old thread stay valid; keep some, drop the rest.
        if self.rng.pct(50) {
            self.bufs.clear();
        }
    }

    /// The CVE-2019-2215 pattern at random: the binder fd in an epoll set while the
    /// thread exits.
    fn epoll(&mut self) {
        // SAFETY: plain syscalls on our own fds.
        unsafe {
            let ep = libc::epoll_create1(libc::EPOLL_CLOEXEC);
            if ep < 0 {
                return;
            }
            let mut ev = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: 7,
            };
            libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, self.fd, &mut ev);
            let exit_first = self.rng.pct(60);
            if exit_first {
                let mut z = 0i32;
                let _ = sys::ioctl(self.fd, BINDER_THREAD_EXIT, &mut z as *mut _ as usize);
            }
            let mut out = [libc::epoll_event { events: 0, u64: 0 }; 2];
            libc::epoll_wait(ep, out.as_mut_ptr(), 2, 0);
            if self.rng.pct(50) {
                libc::epoll_ctl(ep, libc::EPOLL_CTL_DEL, self.fd, core::ptr::null_mut());
            }
            if !exit_first && self.rng.pct(50) {
                let mut z = 0i32;
                let _ = sys::ioctl(self.fd, BINDER_THREAD_EXIT, &mut z as *mut _ as usize);
            }
            libc::close(ep);
        }
    }

    /// mmap games: a second mapping of the fd (refused), munmap/mprotect attempts on
    /// a private copy are not done: the first mapping stays as it is.
    fn remap(&mut self) {
        if let Ok(p) = sys::map_dev(self.fd, 4096) {
            // SAFETY: unmapping what we just mapped.
            unsafe { libc::munmap(p as *mut libc::c_void, 4096) };
        }
        if self.map != 0 {
            // SAFETY: asking for write access to the binder mapping must be refused.
            unsafe {
                libc::mprotect(
                    self.map as *mut libc::c_void,
                    4096,
                    libc::PROT_READ | libc::PROT_WRITE,
                )
            };
        }
    }
}
