//! The binder workloads: a server process per binderfs device (the device's context
//! manager, so clients reach it as handle 0) and clients that time their calls.

use crate::ep::{Ep, CODE_PING, CODE_STOP};
use crate::report::{figure, note, Better, Samples};
use crate::Cfg;
use binder_uapi::harness::{self, fork_proc, getpid, Pipe, Proc};
use binder_uapi::*;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// What a failed transaction to a full one-way buffer space looks like.
pub const FAILED_REPLY: &str = "call: got BR_FAILED_REPLY";

/// The client side mapping (libbinder maps 1 MiB - 8 KiB).
pub const CLIENT_MAP: usize = 1024 * 1024;
/// The server side mapping: the driver's maximum, so a 1 MiB payload fits.
pub const SERVER_MAP: usize = 4 * 1024 * 1024;

static DEV_SEQ: AtomicU32 = AtomicU32::new(0);

/// A fresh binderfs device of our own, removed on drop.
pub fn new_device() -> Result<binderfs::Device, String> {
    let mnt = binderfs::mount_point();
    let name = format!(
        "bench-{}-{}",
        getpid(),
        DEV_SEQ.fetch_add(1, Ordering::Relaxed)
    );
    binderfs::Device::create(&mnt, &name)
        .map_err(|e| format!("BINDER_CTL_ADD {name} on {mnt}: {e}"))
}

/// A server process serving one device as its context manager.
pub struct Service {
    pub dev: binderfs::Device,
    proc_: Option<Proc>,
    done: Pipe,
}

impl Service {
    /// Fork the server and wait until it is the context manager. Call this before the
    /// calling process opens any binder fd (the child would inherit it).
    pub fn start() -> Result<Service, String> {
        Self::start_on(None)
    }

    /// [`Service::start`] with the server pinned to `cpu`, if given.
    pub fn start_on(cpu: Option<usize>) -> Result<Service, String> {
        let dev = new_device()?;
        let path = dev.path();
        let ready = Pipe::new().map_err(|e| format!("pipe: {e}"))?;
        let done = Pipe::new().map_err(|e| format!("pipe: {e}"))?;
        let (rw, dw) = (ready.w, done.w);
        let proc_ = fork_proc(move || {
            if let Some(cpu) = cpu {
                crate::pin_to(cpu)?;
            }
            let mut ep = Ep::open(&path, SERVER_MAP)?;
            if ep
                .b
                .set_context_mgr_ext(FLAT_BINDER_FLAG_ACCEPTS_FDS, 0, 0)
                .is_err()
            {
                ep.b.set_context_mgr()
                    .map_err(|e| format!("BINDER_SET_CONTEXT_MGR: {e}"))?;
            }
            let w = Pipe { r: -1, w: rw };
            w.send_u64(1)?;
            std::mem::forget(w);
            let n = ep.serve()?;
            let d = Pipe { r: -1, w: dw };
            d.send_u64(n)?;
            std::mem::forget(d);
            Ok(())
        })
        .map_err(|e| format!("fork: {e}"))?;
        ready
            .recv_u64_within(Duration::from_secs(20))
            .map_err(|e| format!("server start: {e}"))?;
        Ok(Service {
            dev,
            proc_: Some(proc_),
            done,
        })
    }

    pub fn path(&self) -> String {
        self.dev.path()
    }

    /// Wait for the server's "stopped" message (it got CODE_STOP); returns its count.
    pub fn wait_done(&self, t: Duration) -> Result<u64, String> {
        self.done
            .recv_u64_within(t)
            .map_err(|e| format!("server stop: {e}"))
    }

    /// The server's pid.
    pub fn pid(&self) -> i32 {
        self.proc_.as_ref().map_or(-1, |p| p.pid)
    }

    /// SIGKILL the server and reap it (its binder fds are then released by the kernel).
    pub fn kill(mut self) {
        if let Some(p) = self.proc_.take() {
            p.kill();
        }
    }

    /// Stop the server with a CODE_STOP call on `ep` and reap it.
    pub fn stop(mut self, ep: &mut Ep) -> Result<u64, String> {
        ep.call(0, CODE_STOP, 0, &[], &[])?;
        let n = self.wait_done(Duration::from_secs(30))?;
        // The server has flushed its last reply; other children may hold its result
        // pipe, so reap it instead of waiting for that pipe's end.
        if let Some(p) = self.proc_.take() {
            p.kill();
        }
        Ok(n)
    }
}

/// Time `n` sync calls of one payload (after `warm` untimed ones).
fn timed_calls(
    ep: &mut Ep,
    n: usize,
    warm: usize,
    flags: u32,
    data: &[u8],
    offs: &[u64],
    cap: Option<Duration>,
) -> Result<Samples, String> {
    for _ in 0..warm {
        ep.call(0, CODE_PING, flags, data, offs)?;
    }
    let mut s = Samples::with_capacity(n);
    let start = Instant::now();
    for i in 0..n {
        let t = Instant::now();
        ep.call(0, CODE_PING, flags, data, offs)?;
        s.push_ns(t.elapsed().as_nanos());
        if let Some(c) = cap {
            if i >= 20 && i & 15 == 0 && start.elapsed() > c {
                break;
            }
        }
    }
    Ok(s)
}

/// Round trip of a sync transaction carrying `size` bytes (empty reply).
pub fn rtt(cfg: &Cfg, workload: &str, size: usize) -> Result<(), String> {
    rtt_on(cfg, workload, size, None)
}

/// Round trips of 0 B and 4 KiB with the server on another CPU than the client: under TCG
/// a round trip on one CPU falls into one of two groups of samples about 2 us apart, and
/// the share in each moves the median from one build to the next; across two CPUs the
/// samples form one group (with the cost of a cross-CPU wakeup in every figure). The client
/// runs on the `--pin` CPU (0 without one), the server on the next one; skipped with one CPU.
pub fn rtt_xcpu(cfg: &Cfg) -> harness::TResult {
    let cpus = crate::online_cpus();
    if cpus < 2 {
        binder_uapi::skip!("rtt_xcpu: one CPU online, no other CPU for the server");
    }
    let client = cfg.pin.unwrap_or(0);
    let server = (client + 1) % cpus;
    crate::pin_to(client)?;
    rtt_on(cfg, "rtt_xcpu_0b", 0, Some(server))?;
    rtt_on(cfg, "rtt_xcpu_4k", 4096, Some(server))?;
    Ok(())
}

/// 0 B round trips of a `SCHED_FIFO` client and server (priority 50, the server inherits it
/// through the fork) while a CPU-bound `SCHED_OTHER` process runs on every CPU: the latency a
/// real-time user of binder sees when the rest of the system is busy, which it judges by the
/// tail and the worst case (`max`), not the median. The client runs on the `--pin` CPU (0
/// without one), the server on the next one (skipped with one CPU), so that each CPU's
/// real-time load stays near half of it, below the kernel's real-time throttling; every
/// wake-up of the client or the server preempts a busy process, so the figures include how
/// long the kernel takes to do that (on PREEMPT_RT, how long the drivers' locks and the code
/// they run in keep it waiting). Not in the default set (`binder-bench rtt_load`).
pub fn rtt_load(cfg: &Cfg) -> harness::TResult {
    let cpus = crate::online_cpus();
    if cpus < 2 {
        binder_uapi::skip!("rtt_load: one CPU online, no other CPU for the server");
    }
    let client = cfg.pin.unwrap_or(0);
    let server = (client + 1) % cpus;
    let mut hogs = Vec::new();
    for cpu in 0..cpus {
        // SAFETY: fork; the child only spins until it is killed.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            stop_hogs(&hogs);
            return Err(format!("fork: {}", std::io::Error::last_os_error()).into());
        }
        if pid == 0 {
            let _ = crate::pin_to(cpu);
            loop {
                std::hint::spin_loop();
            }
        }
        hogs.push(pid);
    }
    let res = crate::pin_to(client).and_then(|()| set_fifo(50)).and_then(|()| {
        let svc = Service::start_on(Some(server))?;
        let mut ep = Ep::open(&svc.path(), CLIENT_MAP)?;
        let s = timed_calls(&mut ep, cfg.rtt_n, cfg.warm, 0, &[], &[], None)?;
        svc.stop(&mut ep)?;
        s.report_with_max("rtt_load");
        Ok(())
    });
    let back = set_other();
    stop_hogs(&hogs);
    Ok(res.and(back)?)
}

/// Makes the calling thread `SCHED_FIFO` at `prio`.
fn set_fifo(prio: i32) -> Result<(), String> {
    let p = libc::sched_param {
        sched_priority: prio,
    };
    // SAFETY: `p` is a valid sched_param for the call.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) } != 0 {
        return Err(format!(
            "sched_setscheduler(SCHED_FIFO, {prio}): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

/// Makes the calling thread `SCHED_OTHER` again.
fn set_other() -> Result<(), String> {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: `p` is a valid sched_param for the call.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_OTHER, &p) } != 0 {
        return Err(format!(
            "sched_setscheduler(SCHED_OTHER): {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

fn stop_hogs(hogs: &[libc::pid_t]) {
    for &pid in hogs {
        // SAFETY: `pid` is a child of ours that has not been reaped.
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, core::ptr::null_mut(), 0);
        }
    }
}

fn rtt_on(cfg: &Cfg, workload: &str, size: usize, server: Option<usize>) -> Result<(), String> {
    let svc = Service::start_on(server)?;
    let mut ep = Ep::open(&svc.path(), CLIENT_MAP)?;
    let data = vec![0xa5u8; size];
    let s = timed_calls(&mut ep, cfg.rtt_n, cfg.warm, 0, &data, &[], None)?;
    svc.stop(&mut ep)?;
    s.report(workload, true);
    Ok(())
}

/// Payload sweep 0 B .. 1 MiB: p50 round trip per size.
pub fn payload_sweep(cfg: &Cfg) -> Result<(), String> {
    let sizes: [(usize, &str); 9] = [
        (0, "0b"),
        (64, "64b"),
        (256, "256b"),
        (1024, "1k"),
        (4096, "4k"),
        (16384, "16k"),
        (65536, "64k"),
        (262144, "256k"),
        (1048576, "1m"),
    ];
    let svc = Service::start()?;
    let mut ep = Ep::open(&svc.path(), CLIENT_MAP)?;
    let big = vec![0x5au8; 1048576];
    for (size, name) in sizes {
        let n = if size <= 4096 {
            cfg.sweep_n
        } else {
            (cfg.sweep_n * 4096 / size).max(cfg.sweep_min)
        };
        let s = timed_calls(
            &mut ep,
            n,
            cfg.warm.min(n),
            0,
            &big[..size],
            &[],
            Some(cfg.sweep_cap),
        )?;
        s.report(&format!("payload_{name}"), false);
    }
    svc.stop(&mut ep)?;
    Ok(())
}

/// Round trip of a sync transaction carrying one fd (BINDER_TYPE_FD).
pub fn fd_pass(cfg: &Cfg) -> Result<(), String> {
    let svc = Service::start()?;
    let mut ep = Ep::open(&svc.path(), CLIENT_MAP)?;
    // SAFETY: plain open of a static path.
    let fd = unsafe { libc::open(c"/dev/null".as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(format!(
            "open /dev/null: {}",
            std::io::Error::last_os_error()
        ));
    }
    let mut p = Payload::new();
    p.fd(fd, 0);
    let s = timed_calls(
        &mut ep,
        cfg.obj_n,
        cfg.warm,
        TF_ACCEPT_FDS,
        &p.data,
        &p.offsets,
        None,
    )?;
    svc.stop(&mut ep)?;
    // SAFETY: our fd.
    unsafe { libc::close(fd) };
    s.report("fd_pass", true);
    Ok(())
}

/// Round trip of a sync transaction carrying 16 binder objects (local nodes of the
/// client; the server holds the handles after the first call).
pub fn objects16(cfg: &Cfg) -> Result<(), String> {
    let svc = Service::start()?;
    let mut ep = Ep::open(&svc.path(), CLIENT_MAP)?;
    let mut p = Payload::new();
    for i in 1..=16u64 {
        p.binder(0x1000 * i, 0x10_0000 + i, 0);
    }
    let s = timed_calls(&mut ep, cfg.obj_n, cfg.warm, 0, &p.data, &p.offsets, None)?;
    svc.stop(&mut ep)?;
    s.report("objects16", true);
    Ok(())
}

/// Throughput with `pairs` client/server process pairs calling in a closed loop
/// (AOSP binderThroughputTest style): total transactions per second.
pub fn throughput(cfg: &Cfg, pairs: usize) -> Result<(), String> {
    let mut svcs = Vec::new();
    for _ in 0..pairs {
        svcs.push(Service::start()?);
    }
    let go = Pipe::new().map_err(|e| format!("pipe: {e}"))?;
    let secs = cfg.tput_secs;
    let mut clients = Vec::new();
    for s in &svcs {
        let path = s.path();
        let res = Pipe::new().map_err(|e| format!("pipe: {e}"))?;
        let (rw, gr) = (res.w, go.r);
        let p = fork_proc(move || {
            let mut ep = Ep::open(&path, CLIENT_MAP)?;
            let data = [0u8; 16];
            for _ in 0..100 {
                ep.call(0, CODE_PING, 0, &data, &[])?;
            }
            let out = Pipe { r: -1, w: rw };
            out.send_u64(0)?;
            let gate = Pipe { r: gr, w: -1 };
            gate.recv_exact(1, Duration::from_secs(60))
                .map_err(|e| format!("start gate: {e}"))?;
            std::mem::forget(gate);
            let start = Instant::now();
            let mut count = 0u64;
            let limit = Duration::from_secs_f64(secs);
            loop {
                for _ in 0..32 {
                    ep.call(0, CODE_PING, 0, &data, &[])?;
                }
                count += 32;
                if start.elapsed() >= limit {
                    break;
                }
            }
            let ns = start.elapsed().as_nanos() as u64;
            out.send_u64(count)?;
            out.send_u64(ns)?;
            std::mem::forget(out);
            Ok(())
        })
        .map_err(|e| format!("fork: {e}"))?;
        clients.push((p, res));
    }
    for (_, res) in &clients {
        res.recv_u64_within(Duration::from_secs(60))
            .map_err(|e| format!("client ready: {e}"))?;
    }
    go.send(&vec![b'g'; pairs])
        .map_err(|e| format!("start: {e}"))?;
    let wait = Duration::from_secs_f64(secs * 4.0 + 60.0);
    let mut rate = 0.0;
    for (p, res) in clients {
        let count = res.recv_u64_within(wait)?;
        let ns = res.recv_u64_within(wait)?;
        rate += count as f64 / (ns as f64 / 1e9);
        p.join_within(Duration::from_secs(30))
            .map_err(|e| format!("client: {e:?}"))?;
    }
    for s in svcs {
        let mut ep = Ep::open(&s.path(), CLIENT_MAP)?;
        s.stop(&mut ep)?;
    }
    figure(
        &format!("tput_{pairs}p"),
        "rate",
        "txn/s",
        Better::Higher,
        rate,
    );
    Ok(())
}

/// One-way throughput into one node: one client sends `oneway_n` one-way transactions
/// as fast as the driver takes them; the time runs until the server has seen the last.
pub fn oneway(cfg: &Cfg) -> Result<(), String> {
    let svc = Service::start()?;
    let mut ep = Ep::open(&svc.path(), CLIENT_MAP)?;
    let data = [0u8; 16];
    let mut full = 0u64;
    let mut send = |ep: &mut Ep, code: u32| -> Result<(), String> {
        loop {
            match ep.call(0, code, TF_ONE_WAY, &data, &[]) {
                Ok(()) => return Ok(()),
                Err(e) if e == FAILED_REPLY => {
                    full += 1;
                    std::thread::sleep(Duration::from_micros(200));
                }
                Err(e) => return Err(e),
            }
        }
    };
    let start = Instant::now();
    for _ in 0..cfg.oneway_n {
        send(&mut ep, CODE_PING)?;
    }
    send(&mut ep, CODE_STOP)?;
    let served = svc.wait_done(Duration::from_secs(120))?;
    let secs = start.elapsed().as_secs_f64();
    if served != cfg.oneway_n as u64 + 1 {
        return Err(format!(
            "server saw {served} of {} one-way transactions",
            cfg.oneway_n + 1
        ));
    }
    figure(
        "oneway",
        "rate",
        "txn/s",
        Better::Higher,
        served as f64 / secs,
    );
    note(&format!(
        "oneway: {served} transactions, {full} retries on a full async space"
    ));
    Ok(())
}
