//! The scaling workloads: how the cost of one operation grows with the size of the work
//! (refs and nodes, live buffers, threads in a pool, death notifications). Each is a curve
//! of a few points over up to five decades; a figure is `<quantity>@<N>` of a workload
//! `scale_*`, so that `scripts/plot-scaling` can draw it against N. Run only when named.

use crate::ep::{ack_or_drop, Ep, CODE_PING, CODE_STOP};
use crate::report::{figure, note, Better};
use crate::sys::{meminfo, settle};
use crate::work::{new_device, Service, CLIENT_MAP, FAILED_REPLY, SERVER_MAP};
use crate::Cfg;
use binder_uapi::harness::{fork_proc, Pipe, Proc};
use binder_uapi::proto::{bytes_of, ReadIter};
use binder_uapi::*;
use std::collections::HashSet;
use std::time::{Duration, Instant};

/// Reply with `count` nodes of the server (data: first index u64, count u64).
const CODE_GIVE: u32 = 0x4749_5645;
/// Reply, and keep the request's buffer.
const CODE_HOLD: u32 = 0x484f_4c44;
/// Reply, and keep the request's buffer until CODE_FREE_TMP.
const CODE_HOLD_TMP: u32 = 0x484f_4c54;
/// Free every buffer kept by CODE_HOLD_TMP, and reply.
const CODE_FREE_TMP: u32 = 0x4652_4545;
/// One-way: write the number of transactions served since the last mark to the mark pipe.
const CODE_MARK: u32 = 0x4d41_524b;

/// Nodes per CODE_GIVE reply (24 KiB of objects).
const GIVE_BATCH: u64 = 1000;

/// Payload sizes of the held buffers, in turn (the allocator's mixed sizes).
const SIZES: [usize; 6] = [8, 16, 32, 64, 128, 256];

/// 1, 10, 100, ... up to `max` (and `max` itself if it is not a power of ten).
fn decades(max: usize) -> Vec<usize> {
    let mut v = Vec::new();
    let mut n = 1;
    while n <= max {
        v.push(n);
        n *= 10;
    }
    if v.last() != Some(&max) && max > 0 {
        v.push(max);
    }
    v
}

/// The median of `n` timed calls to `handle` (in us), after `warm` untimed ones.
fn rtt_p50(ep: &mut Ep, handle: u32, n: usize, warm: usize) -> Result<f64, String> {
    for _ in 0..warm {
        ep.call(handle, CODE_PING, 0, &[], &[])?;
    }
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        ep.call(handle, CODE_PING, 0, &[], &[])?;
        v.push(t.elapsed().as_nanos() as u64);
    }
    v.sort_unstable();
    Ok(v[v.len() / 2] as f64 / 1000.0)
}

fn fig_us(w: &str, q: &str, n: usize, us: f64) {
    figure(w, &format!("{q}@{n}"), "us", Better::Lower, us);
}

/// Kernel bytes per unit between two meminfo readings (Slab + KernelStack + PageTables +
/// VmallocUsed), and the slab part alone.
fn mem_figs(w: &str, what: &str, units: usize, a: crate::sys::Mem, b: crate::sys::Mem) {
    let u = units.max(1) as f64;
    figure(
        w,
        &format!("mem_{what}"),
        "B",
        Better::Lower,
        (b.kern - a.kern) as f64 / u,
    );
    figure(
        w,
        &format!("mem_{what}_slab"),
        "B",
        Better::Lower,
        (b.slab - a.slab) as f64 / u,
    );
}

/// The server of the scaling workloads: one looper thread, the device's context manager,
/// answering CODE_PING (empty reply, buffer freed) and the CODE_* requests above.
struct ScaleServer {
    dev: binderfs::Device,
    proc_: Option<Proc>,
    mark: Pipe,
}

impl ScaleServer {
    fn start() -> Result<ScaleServer, String> {
        let dev = new_device()?;
        let path = dev.path();
        let ready = Pipe::new().map_err(|e| format!("pipe: {e}"))?;
        let mark = Pipe::new().map_err(|e| format!("pipe: {e}"))?;
        let (rw, mw) = (ready.w, mark.w);
        let proc_ = fork_proc(move || {
            let mut ep = Ep::open(&path, SERVER_MAP)?;
            ep.b.set_context_mgr()
                .map_err(|e| format!("BINDER_SET_CONTEXT_MGR: {e}"))?;
            let r = Pipe { r: -1, w: rw };
            r.send_u64(1)?;
            std::mem::forget(r);
            let m = Pipe { r: -1, w: mw };
            let res = scale_serve(&mut ep, &m);
            std::mem::forget(m);
            res.map_err(Into::into)
        })
        .map_err(|e| format!("fork: {e}"))?;
        ready
            .recv_u64_within(Duration::from_secs(20))
            .map_err(|e| format!("server start: {e}"))?;
        Ok(ScaleServer {
            dev,
            proc_: Some(proc_),
            mark,
        })
    }

    fn path(&self) -> String {
        self.dev.path()
    }

    fn pid(&self) -> i32 {
        self.proc_.as_ref().map_or(-1, |p| p.pid)
    }

    /// Wait for the count of a CODE_MARK.
    fn wait_mark(&self) -> Result<u64, String> {
        self.mark.recv_u64_within(Duration::from_secs(120))
    }

    /// Stop with CODE_STOP on `ep` and reap.
    fn stop(mut self, ep: &mut Ep) -> Result<(), String> {
        ep.call(0, CODE_STOP, 0, &[], &[])?;
        if let Some(p) = self.proc_.take() {
            p.join_within(Duration::from_secs(60))
                .map_err(|e| format!("scale server: {e:?}"))?;
        }
        Ok(())
    }
}

fn scale_serve(ep: &mut Ep, mark: &Pipe) -> Result<(), String> {
    let mut tmp: Vec<u64> = Vec::new();
    let mut kept = 0usize;
    let mut since_mark = 0u64;
    // Reply payloads, alive until the write that carries their BC_REPLY.
    let mut replies: Vec<(Payload, Vec<u8>)> = Vec::new();
    ep.cmd(BC_ENTER_LOOPER);
    loop {
        let n = ep.talk(true)?;
        replies.clear();
        let mut stop = false;
        let mut err = None;
        let Ep { rbuf, out, .. } = ep;
        for r in ReadIter::new(&rbuf[..n]) {
            match r {
                Return::Transaction(td) | Return::TransactionSecCtx(td, _) => {
                    since_mark += 1;
                    let free = |out: &mut Vec<u8>, b: u64| {
                        out.extend_from_slice(&BC_FREE_BUFFER.to_ne_bytes());
                        out.extend_from_slice(&b.to_ne_bytes());
                    };
                    let mut reply = Payload::new();
                    match td.code {
                        CODE_HOLD => kept += 1,
                        CODE_HOLD_TMP => tmp.push(td.buffer),
                        CODE_GIVE => {
                            if td.data_size < 16 {
                                err = Some("CODE_GIVE without its two u64".to_string());
                            } else {
                                // SAFETY: the driver put the 16 bytes checked above in our
                                // mapping; the buffer is freed after this read.
                                let (first, count) = unsafe {
                                    (
                                        core::ptr::read_unaligned(td.buffer as *const u64),
                                        core::ptr::read_unaligned((td.buffer + 8) as *const u64),
                                    )
                                };
                                for i in first..first + count {
                                    let ptr = 0x1000 * (i + 1);
                                    reply.binder(ptr, ptr, 0);
                                }
                            }
                            free(out, td.buffer);
                        }
                        CODE_FREE_TMP => {
                            free(out, td.buffer);
                            for b in tmp.drain(..) {
                                free(out, b);
                            }
                        }
                        CODE_MARK => {
                            free(out, td.buffer);
                            mark.send_u64(since_mark)
                                .map_err(|e| format!("mark pipe: {e}"))?;
                            since_mark = 0;
                        }
                        _ => free(out, td.buffer),
                    }
                    if td.flags & TF_ONE_WAY == 0 {
                        let offs = reply.offsets_bytes();
                        let rep = binder_transaction_data {
                            data_size: reply.data.len() as u64,
                            offsets_size: offs.len() as u64,
                            buffer: if reply.data.is_empty() {
                                0
                            } else {
                                reply.data.as_ptr() as u64
                            },
                            offsets: if offs.is_empty() {
                                0
                            } else {
                                offs.as_ptr() as u64
                            },
                            ..Default::default()
                        };
                        out.extend_from_slice(&BC_REPLY.to_ne_bytes());
                        out.extend_from_slice(bytes_of(&rep));
                        replies.push((reply, offs));
                    }
                    if td.code == CODE_STOP {
                        stop = true;
                    }
                }
                other => {
                    if let Some(other) = ack_or_drop(other, out) {
                        err = Some(format!("scale server: got {}", other.name()));
                    }
                }
            }
        }
        if let Some(e) = err {
            return Err(e);
        }
        if stop {
            ep.talk(true)?;
            note(&format!("scale server: {kept} buffers held at the end"));
            return Ok(());
        }
    }
}

/// Ask the server for nodes `first..first + count` in batches; the handles go into `held`.
fn take_nodes(ep: &mut Ep, first: u64, count: u64, held: &mut HashSet<u32>) -> Result<(), String> {
    let mut i = first;
    while i < first + count {
        let k = GIVE_BATCH.min(first + count - i);
        let mut d = [0u8; 16];
        d[..8].copy_from_slice(&i.to_ne_bytes());
        d[8..].copy_from_slice(&k.to_ne_bytes());
        ep.call_hold(0, CODE_GIVE, &d, held)?;
        i += k;
    }
    Ok(())
}

/// Round trip 0 B against the refs a client holds and the nodes the server owns: at each
/// point N the server owns N nodes, client R holds a ref to each and calls the last one,
/// client C (one ref, to the context manager) calls handle 0. Also the cost of a new
/// node + ref pair, and at the largest point the kernel bytes per pair and per ref (a
/// third client taking refs to the same N nodes).
pub fn refs(cfg: &Cfg) -> Result<(), String> {
    let w = "scale_refs";
    let srv = ScaleServer::start()?;
    let mut c = Ep::open(&srv.path(), CLIENT_MAP)?;
    let mut r = Ep::open(&srv.path(), CLIENT_MAP)?;
    let mut held = HashSet::new();
    let pts = decades(cfg.scale_refs_max);
    let mut have = 0usize;
    for (pi, &n) in pts.iter().enumerate() {
        let last = pi + 1 == pts.len();
        let m0 = if last { Some(meminfo()?) } else { None };
        let t = Instant::now();
        take_nodes(&mut r, have as u64, (n - have) as u64, &mut held)?;
        let grow = t.elapsed().as_nanos() as f64 / 1000.0;
        if held.len() != n {
            return Err(format!("client holds {} handles, expected {n}", held.len()));
        }
        if let Some(m0) = m0 {
            settle();
            let m1 = meminfo()?;
            mem_figs(w, "node_ref", n - have, m0, m1);
            // A third client takes refs to the same nodes: refs only.
            let mut e = Ep::open(&srv.path(), CLIENT_MAP)?;
            let mut held_e = HashSet::new();
            let m2 = meminfo()?;
            take_nodes(&mut e, 0, n as u64, &mut held_e)?;
            settle();
            let m3 = meminfo()?;
            if held_e.len() != n {
                return Err(format!(
                    "third client holds {} handles, expected {n}",
                    held_e.len()
                ));
            }
            mem_figs(w, "ref", n, m2, m3);
            note(&format!(
                "{w}: memory at {n} nodes (node_ref over the last {} added)",
                n - have
            ));
        }
        fig_us(w, "new_node_ref", n, grow / (n - have) as f64);
        have = n;
        let target = *held.iter().max().unwrap();
        let p = rtt_p50(&mut r, target, cfg.scale_n, cfg.warm.min(cfg.scale_n))?;
        fig_us(w, "rtt_refs", n, p);
        let p = rtt_p50(&mut c, 0, cfg.scale_n, cfg.warm.min(cfg.scale_n))?;
        fig_us(w, "rtt_nodes", n, p);
    }
    srv.stop(&mut c)?;
    Ok(())
}

/// Round trip 0 B and the one-way rate against the live buffers in the receiver's area: at
/// each point N the server keeps N buffers of mixed sizes (8..256 B) with a hole freed
/// between each two (2N allocated, every second one freed), then client calls it.
pub fn buffers(cfg: &Cfg) -> Result<(), String> {
    let w = "scale_buffers";
    let srv = ScaleServer::start()?;
    let mut c = Ep::open(&srv.path(), CLIENT_MAP)?;
    let big = [0x5au8; 256];
    let pts = decades(cfg.scale_buffers_max);
    let mut have = 0usize;
    for (pi, &n) in pts.iter().enumerate() {
        let last = pi + 1 == pts.len();
        let m0 = if last { Some(meminfo()?) } else { None };
        for i in have..n {
            c.call(0, CODE_HOLD, 0, &big[..SIZES[i % SIZES.len()]], &[])?;
            c.call(
                0,
                CODE_HOLD_TMP,
                0,
                &big[..SIZES[(i + 3) % SIZES.len()]],
                &[],
            )?;
        }
        c.call(0, CODE_FREE_TMP, 0, &[], &[])?;
        if let Some(m0) = m0 {
            settle();
            let m1 = meminfo()?;
            mem_figs(w, "buffer", n - have, m0, m1);
        }
        have = n;
        let p = rtt_p50(&mut c, 0, cfg.scale_n, cfg.warm.min(cfg.scale_n))?;
        fig_us(w, "rtt", n, p);
        // One-way rate: scale_n transactions of 64 B, timed until the server has seen the last.
        let data = [0u8; 64];
        let mut full = 0u64;
        let t = Instant::now();
        for k in 0..=cfg.scale_n {
            let code = if k == cfg.scale_n {
                CODE_MARK
            } else {
                CODE_PING
            };
            loop {
                match c.call(0, code, TF_ONE_WAY, &data, &[]) {
                    Ok(()) => break,
                    Err(e) if e == FAILED_REPLY => {
                        full += 1;
                        std::thread::sleep(Duration::from_micros(200));
                    }
                    Err(e) => return Err(e),
                }
            }
        }
        let seen = srv.wait_mark()?;
        let secs = t.elapsed().as_secs_f64();
        // Since the last mark: this point's one-ways, its round trips and warm-up, and the
        // holds of this point (the first mark counts from the start).
        if seen < cfg.scale_n as u64 + 1 {
            return Err(format!(
                "server saw {seen} transactions since the last mark, fewer than the {} one-ways",
                cfg.scale_n + 1
            ));
        }
        figure(
            w,
            &format!("oneway_rate@{n}"),
            "txn/s",
            Better::Higher,
            (cfg.scale_n + 1) as f64 / secs,
        );
        if full > 0 {
            note(&format!("{w}@{n}: {full} retries on a full async space"));
        }
    }
    srv.stop(&mut c)?;
    Ok(())
}

/// The wake-up cost against the threads waiting in the server's pool: at each point T the
/// server has T looper threads blocked in a read, the client times round trips 0 B.
pub fn threads(cfg: &Cfg) -> Result<(), String> {
    let w = "scale_threads";
    let mut pts: Vec<usize> = [1usize, 4, 16, 64, 256]
        .into_iter()
        .filter(|&t| t <= cfg.scale_threads_max)
        .collect();
    if pts.is_empty() {
        pts.push(1);
    }
    for t in pts {
        let svc = pool_server(t)?;
        let mut c = Ep::open(&svc.0.path(), CLIENT_MAP)?;
        let p = rtt_p50(&mut c, 0, cfg.scale_n, cfg.warm.min(cfg.scale_n))?;
        fig_us(w, "rtt", t, p);
        drop(c);
        let (dev, proc_) = svc;
        proc_.kill();
        drop(dev);
    }
    Ok(())
}

/// A context manager with `t` looper threads (all but the main one on a dup of its fd);
/// returns once every thread is about to block in its read.
fn pool_server(t: usize) -> Result<(binderfs::Device, Proc), String> {
    let dev = new_device()?;
    let path = dev.path();
    let ready = Pipe::new().map_err(|e| format!("pipe: {e}"))?;
    let rw = ready.w;
    let proc_ = fork_proc(move || {
        let mut ep = Ep::open(&path, SERVER_MAP)?;
        ep.b.set_context_mgr()
            .map_err(|e| format!("BINDER_SET_CONTEXT_MGR: {e}"))?;
        let r: &'static Pipe = Box::leak(Box::new(Pipe { r: -1, w: rw }));
        for _ in 1..t {
            let b = ep.b.try_clone().map_err(|e| format!("dup: {e}"))?;
            std::thread::spawn(move || {
                let mut e = Ep::from_binder(b);
                let _ = r.send_u64(1);
                let _ = e.serve();
            });
        }
        r.send_u64(1)?;
        ep.serve()?;
        Ok(())
    })
    .map_err(|e| format!("fork: {e}"))?;
    for _ in 0..t {
        ready
            .recv_u64_within(Duration::from_secs(60))
            .map_err(|e| format!("pool of {t} threads: {e}"))?;
    }
    // Let the last threads reach their read.
    settle();
    Ok((dev, proc_))
}

fn raise_nofile(n: usize) -> Result<(), String> {
    let want = (n + 256) as libc::rlim_t;
    let mut r = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls on a local struct.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut r);
        if r.rlim_cur >= want {
            return Ok(());
        }
        r.rlim_cur = want;
        r.rlim_max = r.rlim_max.max(want);
        if libc::setrlimit(libc::RLIMIT_NOFILE, &r) != 0 {
            return Err(format!(
                "setrlimit(RLIMIT_NOFILE, {want}): {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

fn write_cmds(b: &Binder, w: &WriteBuf) -> Result<(), String> {
    b.write(w).map(|_| ()).map_err(|e| format!("write: {e}"))
}

/// Death notifications on one node, against the number of binder processes holding a ref
/// to it: at each point N, N binder fds of this process (each a binder_proc of its own to
/// the driver, one open each) take a ref to the context manager's node (BC_INCREFS +
/// BC_ACQUIRE) and register a death notification on it; a client times round trips to the
/// node with those N refs on it; then the server is killed and the time runs from the
/// signal until every one of the N has read its BR_DEAD_BINDER (each read checked for its
/// own cookie): the median of three such runs.
pub fn death(cfg: &Cfg) -> Result<(), String> {
    let w = "scale_death";
    let pts = decades(cfg.scale_death_max);
    raise_nofile(*pts.last().unwrap())?;
    for (pi, &n) in pts.iter().enumerate() {
        let last = pi + 1 == pts.len();
        let mut deliver = Vec::new();
        for rep in 0..DEATH_REPS {
            deliver.push(death_point(cfg, n, last && rep == 0, rep == 0)?);
        }
        // The median of the repetitions.
        deliver.sort_by(f64::total_cmp);
        let us = deliver[deliver.len() / 2];
        note(&format!(
            "{w}@{n}: deliver_all of {DEATH_REPS} runs: {deliver:.0?} us"
        ));
        fig_us(w, "deliver_all", n, us);
        fig_us(w, "deliver_per", n, us / n as f64);
    }
    Ok(())
}

/// Kills and deliveries per point of scale_death.
const DEATH_REPS: usize = 3;

/// One run of a scale_death point; returns the time to deliver all (us). `mem`: report the
/// memory figures; `report`: report the figures other than the delivery time.
fn death_point(cfg: &Cfg, n: usize, mem: bool, report: bool) -> Result<f64, String> {
    let w = "scale_death";
    let last = mem;
    let svc = Service::start()?;
    let path = svc.path();
    let mut c = Ep::open(&path, CLIENT_MAP)?;
    let m0 = if last { Some(meminfo()?) } else { None };
    let mut bs = Vec::with_capacity(n);
    for _ in 0..n {
        let b = Binder::open(&path).map_err(|e| format!("open {path}: {e}"))?;
        let mut wb = WriteBuf::new();
        wb.enter_looper();
        write_cmds(&b, &wb)?;
        bs.push(b);
    }
    let m1 = if last { Some(meminfo()?) } else { None };
    let t = Instant::now();
    for b in &bs {
        let mut wb = WriteBuf::new();
        wb.increfs(0).acquire(0);
        write_cmds(b, &wb)?;
    }
    if report {
        fig_us(
            w,
            "ref_acquire",
            n,
            t.elapsed().as_nanos() as f64 / 1000.0 / n as f64,
        );
    }
    let m2 = if last { Some(meminfo()?) } else { None };
    let t = Instant::now();
    for (i, b) in bs.iter().enumerate() {
        let mut wb = WriteBuf::new();
        wb.request_death(0, i as u64 + 1);
        write_cmds(b, &wb)?;
    }
    if report {
        fig_us(
            w,
            "register",
            n,
            t.elapsed().as_nanos() as f64 / 1000.0 / n as f64,
        );
    }
    if let (Some(m0), Some(m1), Some(m2)) = (m0, m1, m2) {
        let m3 = meminfo()?;
        mem_figs(w, "proc_open", n, m0, m1);
        mem_figs(w, "ref", n, m1, m2);
        mem_figs(w, "death", n, m2, m3);
    }
    if report {
        let p = rtt_p50(&mut c, 0, cfg.scale_n, cfg.warm.min(cfg.scale_n))?;
        fig_us(w, "rtt_holders", n, p);
    }
    drop(c);
    // From the signal to the last BR_DEAD_BINDER read; the server is reaped after (a reap
    // loop's sleeps would count otherwise).
    let pid = svc.pid();
    let t = Instant::now();
    // SAFETY: our child, not reaped yet.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    let mut buf = [0u8; 256];
    for (i, b) in bs.iter().enumerate() {
        let want = i as u64 + 1;
        let mut got = false;
        while !got {
            let mut bwr = binder_write_read {
                read_size: buf.len() as u64,
                read_buffer: buf.as_mut_ptr() as u64,
                ..Default::default()
            };
            b.write_read_raw(&mut bwr)
                .map_err(|e| format!("read of binder {i}: {e}"))?;
            for r in ReadIter::new(&buf[..bwr.read_consumed as usize]) {
                match r {
                    Return::DeadBinder(ck) if ck == want => got = true,
                    Return::Noop | Return::SpawnLooper => {}
                    other => {
                        return Err(format!(
                            "binder {i}: got {} waiting for BR_DEAD_BINDER {want}",
                            other.name()
                        ))
                    }
                }
            }
        }
    }
    let us = t.elapsed().as_nanos() as f64 / 1000.0;
    svc.kill();
    drop(bs);
    settle();
    Ok(us)
}

/// The time of one BINDER_FREEZE ioctl (us); `Ok(Err(e))` if the driver refused it.
fn freeze_us(b: &Binder, pid: i32, enable: bool) -> Result<f64, String> {
    let t = Instant::now();
    let r = b.freeze(pid, enable, 100);
    let us = t.elapsed().as_nanos() as f64 / 1000.0;
    r.map_err(|e| format!("BINDER_FREEZE(pid {pid}, enable {enable}): {e}"))?;
    Ok(us)
}

fn median3(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// BINDER_FREEZE and unfreeze of a process against what it owns: at each point N the server
/// owns N nodes (client R holds a ref to each); freeze and unfreeze of the server, and of this
/// process (R's, with the N refs), are timed (the median of three of each). Then with N one-way transactions pending: the server is stopped (SIGSTOP,
/// as the cgroup freezer stops a frozen app), frozen, sent N one-ways (each answered
/// BR_TRANSACTION_PENDING_FROZEN or BR_TRANSACTION_COMPLETE), and unfreezing it is timed;
/// after SIGCONT the server must see all N.
pub fn freeze(cfg: &Cfg) -> Result<(), String> {
    let w = "scale_freeze";
    let srv = ScaleServer::start()?;
    let pid = srv.pid();
    let mut r = Ep::open(&srv.path(), CLIENT_MAP)?;
    let mut held = HashSet::new();
    let mut have = 0usize;
    for n in decades(cfg.scale_freeze_max) {
        take_nodes(&mut r, have as u64, (n - have) as u64, &mut held)?;
        have = n;
        let mut f = Vec::new();
        let mut u = Vec::new();
        for _ in 0..3 {
            f.push(freeze_us(&r.b, pid, true)?);
            u.push(freeze_us(&r.b, pid, false)?);
        }
        fig_us(w, "freeze", n, median3(f));
        fig_us(w, "unfreeze", n, median3(u));
        // The process holding the N refs: this one (R is its only binder fd here).
        let me = binder_uapi::harness::getpid();
        let mut f = Vec::new();
        let mut u = Vec::new();
        for _ in 0..3 {
            f.push(freeze_us(&r.b, me, true)?);
            u.push(freeze_us(&r.b, me, false)?);
        }
        fig_us(w, "freeze_refs", n, median3(f));
        fig_us(w, "unfreeze_refs", n, median3(u));
        // A mark first, so that the count of the next one is this point's one-ways only.
        r.call(0, CODE_MARK, TF_ONE_WAY, &[], &[])?;
        srv.wait_mark()?;
        // SAFETY: our child.
        unsafe { libc::kill(pid, libc::SIGSTOP) };
        settle();
        let fp = freeze_us(&r.b, pid, true);
        let sent = fp.and_then(|fp| {
            for _ in 0..n {
                r.call(0, CODE_PING, TF_ONE_WAY, &[], &[])?;
            }
            let up = freeze_us(&r.b, pid, false)?;
            Ok((fp, up))
        });
        // SAFETY: our child.
        unsafe { libc::kill(pid, libc::SIGCONT) };
        let (fp, up) = sent?;
        fig_us(w, "freeze_stopped", n, fp);
        fig_us(w, "unfreeze_pending", n, up);
        r.call(0, CODE_MARK, TF_ONE_WAY, &[], &[])?;
        let seen = srv.wait_mark()?;
        if seen != n as u64 + 1 {
            return Err(format!(
                "the server saw {seen} transactions after its unfreeze, not the {} sent",
                n + 1
            ));
        }
    }
    srv.stop(&mut r)?;
    Ok(())
}

/// A private binderfs mount with `stats=global` (for binder_logs), unmounted on drop.
struct LogsMount(binderfs::Mount);

impl LogsMount {
    fn new() -> Result<LogsMount, String> {
        let dir = format!("/tmp/bench-logs.{}", std::process::id());
        std::fs::create_dir_all(&dir).map_err(|e| format!("mkdir {dir}: {e}"))?;
        let m = binderfs::Mount::new(&dir, "stats=global")
            .map_err(|e| format!("mount binderfs stats=global on {dir}: {e}"))?;
        Ok(LogsMount(m))
    }

    fn state(&self) -> String {
        format!("{}/binder_logs/state", self.0.dir)
    }
}

/// Read a whole file in 64 KiB reads; returns its length.
fn read_all(path: &str, buf: &mut [u8]) -> Result<usize, String> {
    use std::io::Read;
    let mut f = std::fs::File::open(path).map_err(|e| format!("open {path}: {e}"))?;
    let mut total = 0;
    loop {
        let k = f.read(buf).map_err(|e| format!("read {path}: {e}"))?;
        if k == 0 {
            return Ok(total);
        }
        total += k;
    }
}

/// Round trips of `c` to handle 0 while a thread on `cpu` reads the file at `path` in a loop:
/// their median and worst (us), and the number of whole reads done meanwhile (at least one).
fn rtt_while_reading(
    c: &mut Ep,
    path: &str,
    cpu: usize,
    n: usize,
) -> Result<(f64, f64, u64), String> {
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let st = stop.clone();
    let p = path.to_string();
    let reader = std::thread::spawn(move || -> Result<u64, String> {
        crate::pin_to(cpu)?;
        let mut b = vec![0u8; 65536];
        let mut reads = 0u64;
        while !st.load(std::sync::atomic::Ordering::Relaxed) {
            read_all(&p, &mut b)?;
            reads += 1;
        }
        Ok(reads)
    });
    // Let the reader start.
    std::thread::sleep(Duration::from_millis(20));
    let mut v = Vec::with_capacity(n);
    let res = (|| {
        for _ in 0..n {
            let t = Instant::now();
            c.call(0, CODE_PING, 0, &[], &[])?;
            v.push(t.elapsed().as_nanos() as u64);
        }
        Ok::<(), String>(())
    })();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let reads = reader
        .join()
        .map_err(|_| "state reader panicked".to_string())??;
    res?;
    if reads == 0 {
        return Err("the state reader finished no read during the round trips".into());
    }
    v.sort_unstable();
    Ok((
        v[v.len() / 2] as f64 / 1000.0,
        *v.last().unwrap() as f64 / 1000.0,
        reads,
    ))
}

/// Reading binder_logs/state against the nodes and refs it lists, and a round trip while
/// another thread reads it: at each point N the server owns N nodes and client R holds a
/// ref to each. Timed: one whole read of state (its size must grow with N), and round trips
/// of client C to the server while a thread reads state in a loop, on the other CPU (the
/// same one with a single CPU) and then on the client's CPU: their median and their worst
/// (a debug read must not stall binder traffic).
pub fn state(cfg: &Cfg) -> Result<(), String> {
    let w = "scale_state";
    let logs = LogsMount::new()?;
    let path = logs.state();
    let srv = ScaleServer::start()?;
    let mut c = Ep::open(&srv.path(), CLIENT_MAP)?;
    let mut r = Ep::open(&srv.path(), CLIENT_MAP)?;
    let mut held = HashSet::new();
    let mut have = 0usize;
    let mut buf = vec![0u8; 65536];
    let mut last_len = 0usize;
    let same = cfg.pin.unwrap_or(0);
    let other = (same + 1) % crate::online_cpus();
    for n in decades(cfg.scale_state_max) {
        take_nodes(&mut r, have as u64, (n - have) as u64, &mut held)?;
        have = n;
        let t = Instant::now();
        let len = read_all(&path, &mut buf)?;
        fig_us(w, "read_state", n, t.elapsed().as_nanos() as f64 / 1000.0);
        // Each node and each ref has a line of its own.
        if len < last_len || (n >= 100 && len < n * 20) {
            return Err(format!(
                "binder_logs/state has {len} bytes with {n} nodes and refs"
            ));
        }
        last_len = len;
        let (p50, max, reads) = rtt_while_reading(&mut c, &path, other, cfg.scale_n)?;
        fig_us(w, "rtt_during_read", n, p50);
        fig_us(w, "rtt_max_during_read", n, max);
        let (p50, max, reads_same) = rtt_while_reading(&mut c, &path, same, cfg.scale_n)?;
        fig_us(w, "rtt_same_cpu_read", n, p50);
        fig_us(w, "rtt_max_same_cpu_read", n, max);
        note(&format!(
            "{w}@{n}: state {len} bytes, {reads} reads during the round trips with the reader on \
             CPU {other}, {reads_same} on CPU {same}"
        ));
    }
    srv.stop(&mut c)?;
    drop(logs);
    Ok(())
}

/// A child of scale_procs: take a ref to handle 0 of `path` and register a death notification
/// with `cookie`, say so on `ready`, then block until the notification comes and say so on
/// `done` (`d`; `E` on any error), and wait to be killed. Never returns.
fn holder(path: &str, cookie: u64, ready: i32, done: i32) -> ! {
    let say = |fd: i32, b: u8| {
        // SAFETY: a one-byte write to our pipe.
        unsafe { libc::write(fd, [b].as_ptr() as *const libc::c_void, 1) };
    };
    let ok = (|| -> Result<(), String> {
        let b = Binder::open(path).map_err(|e| format!("open: {e}"))?;
        let mut wb = WriteBuf::new();
        wb.enter_looper()
            .increfs(0)
            .acquire(0)
            .request_death(0, cookie);
        write_cmds(&b, &wb)?;
        say(ready, b'r');
        let mut buf = [0u8; 256];
        loop {
            let mut bwr = binder_write_read {
                read_size: buf.len() as u64,
                read_buffer: buf.as_mut_ptr() as u64,
                ..Default::default()
            };
            b.write_read_raw(&mut bwr)
                .map_err(|e| format!("read: {e}"))?;
            for r in ReadIter::new(&buf[..bwr.read_consumed as usize]) {
                match r {
                    Return::DeadBinder(ck) if ck == cookie => return Ok(()),
                    Return::Noop | Return::SpawnLooper => {}
                    other => return Err(format!("got {}", other.name())),
                }
            }
        }
    })();
    say(done, if ok.is_ok() { b'd' } else { b'E' });
    // Wait to be killed: an exit now (its binder release) would run among the deliveries
    // to the others and count in their time.
    loop {
        // SAFETY: pause() only returns on a signal.
        unsafe { libc::pause() };
    }
}

/// Round trip and death delivery against real processes holding a ref to the server's node:
/// at each point N (1 ... 1,000) N forked processes each take a ref to the context manager's
/// node and register a death notification on it, then block in a read; a client times round
/// trips to the node; then the server is killed and the time runs until every process has
/// read its BR_DEAD_BINDER (with its own cookie) and said so on a pipe. Unlike scale_death's
/// binder fds of one process, each notification wakes a process of its own.
pub fn procs(cfg: &Cfg) -> Result<(), String> {
    let w = "scale_procs";
    for n in decades(cfg.scale_procs_max) {
        let svc = Service::start()?;
        let path = svc.path();
        let ready = Pipe::new().map_err(|e| format!("pipe: {e}"))?;
        let done = Pipe::new().map_err(|e| format!("pipe: {e}"))?;
        let mut pids = Vec::with_capacity(n);
        let res = (|| -> Result<(), String> {
            for i in 0..n {
                // SAFETY: the child only runs `holder`, which never returns.
                let pid = unsafe { libc::fork() };
                if pid < 0 {
                    return Err(format!("fork: {}", std::io::Error::last_os_error()));
                }
                if pid == 0 {
                    holder(&path, i as u64 + 1, ready.w, done.w);
                }
                pids.push(pid);
            }
            ready
                .recv_exact(n, Duration::from_secs(120))
                .map_err(|e| format!("{n} holders did not come up: {e}"))?;
            // Let the last ones reach their read.
            settle();
            let mut c = Ep::open(&path, CLIENT_MAP)?;
            let p = rtt_p50(&mut c, 0, cfg.scale_n, cfg.warm.min(cfg.scale_n))?;
            fig_us(w, "rtt_holders", n, p);
            drop(c);
            let t = Instant::now();
            // SAFETY: our child, not reaped yet.
            unsafe { libc::kill(svc.pid(), libc::SIGKILL) };
            let got = done
                .recv_exact(n, Duration::from_secs(120))
                .map_err(|e| format!("death notifications to {n} processes: {e}"))?;
            let us = t.elapsed().as_nanos() as f64 / 1000.0;
            let bad = got.iter().filter(|&&b| b != b'd').count();
            if bad > 0 {
                return Err(format!(
                    "{bad} of {n} processes did not get their BR_DEAD_BINDER"
                ));
            }
            fig_us(w, "deliver_all", n, us);
            fig_us(w, "deliver_per", n, us / n as f64);
            Ok(())
        })();
        svc.kill();
        for &p in &pids {
            // SAFETY: our children.
            unsafe {
                libc::kill(p, libc::SIGKILL);
                libc::waitpid(p, core::ptr::null_mut(), 0);
            }
        }
        res?;
    }
    Ok(())
}

// The per-operation workloads of `scripts/insn-profile` (count option `--ops-n`): each
// repeats one operation `ops_n` times after a set-up that does not depend on `ops_n`, in a
// process that keeps what it made until the guest powers off (see `kept`), so that the
// difference of two runs is the operation alone. With `--alloc-trace` each also prints the
// kernel allocations of its operations (see `AllocTrace`).

/// Run `f` in a process of a session of its own that stays, holding what `f` returns (its
/// binder fds, its server's process), until the guest powers off: the harness kills the
/// workload's process group at its end, and the release of `ops_n` refs or nodes would
/// count in the difference of two runs.
fn kept<F: FnOnce() -> Result<Box<dyn std::any::Any>, String>>(f: F) -> Result<(), String> {
    let done = Pipe::new().map_err(|e| format!("pipe: {e}"))?;
    // SAFETY: the workload's process is single-threaded; the child runs `f` and never returns.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(format!("fork: {}", std::io::Error::last_os_error()));
    }
    if pid == 0 {
        // SAFETY: plain syscalls in the child.
        unsafe { libc::setsid() };
        let ok = match f() {
            Ok(keep) => {
                std::mem::forget(keep);
                0
            }
            Err(e) => {
                note(&format!("kept: {e}"));
                1
            }
        };
        let _ = std::io::Write::flush(&mut std::io::stdout());
        let _ = done.send_u64(ok);
        // SAFETY: stdio to /dev/null, so that no reader waits for this process.
        unsafe {
            let null = libc::open(c"/dev/null".as_ptr(), libc::O_RDWR);
            for fd in 0..3 {
                libc::dup2(null, fd);
            }
        }
        loop {
            // SAFETY: pause() only returns on a signal.
            unsafe { libc::pause() };
        }
    }
    match done.recv_u64_within(Duration::from_secs(3000))? {
        0 => Ok(()),
        _ => Err("the kept process failed (its note above)".into()),
    }
}

/// The mean time of one of the `n` operations since `t0`, the figure of an ops_* workload.
fn op_fig(w: &str, t0: Instant, n: usize) {
    let us = t0.elapsed().as_nanos() as f64 / 1000.0 / n.max(1) as f64;
    figure(w, "per_op", "us", Better::Lower, us);
}

/// New node + ref pairs: the server sends `ops_n` nodes of its own (in replies of 1,000), a
/// client takes a ref to each (BC_INCREFS + BC_ACQUIRE).
pub fn ops_node_ref(cfg: &Cfg) -> Result<(), String> {
    let (n, trace) = (cfg.ops_n, cfg.alloc_trace);
    kept(move || {
        let srv = ScaleServer::start()?;
        let mut r = Ep::open(&srv.path(), CLIENT_MAP)?;
        let mut held = HashSet::new();
        let t = AllocTrace::start(trace)?;
        let t0 = Instant::now();
        take_nodes(&mut r, 0, n as u64, &mut held)?;
        op_fig("ops_node_ref", t0, n);
        t.report("ops_node_ref", "node + ref", n)?;
        Ok(Box::new((srv, r)))
    })
}

/// `--ops-fds` binder fds of this process (each a process to the driver) with a looper; of
/// those, `ops_n` take a ref to the context manager's node (`deaths` false), or all take a
/// ref and `ops_n` register a death notification on it (`deaths` true).
pub fn ops_ref(cfg: &Cfg, deaths: bool) -> Result<(), String> {
    let f = cfg.ops_fds.max(cfg.ops_n);
    let (n, trace) = (cfg.ops_n, cfg.alloc_trace);
    raise_nofile(f)?;
    kept(move || {
        let svc = Service::start()?;
        let path = svc.path();
        let mut bs = Vec::with_capacity(f);
        for _ in 0..f {
            let b = Binder::open(&path).map_err(|e| format!("open {path}: {e}"))?;
            let mut wb = WriteBuf::new();
            wb.enter_looper();
            write_cmds(&b, &wb)?;
            bs.push(b);
        }
        let t = AllocTrace::start(trace && !deaths)?;
        let t0 = Instant::now();
        for b in &bs[..if deaths { f } else { n }] {
            let mut wb = WriteBuf::new();
            wb.increfs(0).acquire(0);
            write_cmds(b, &wb)?;
        }
        if !deaths {
            op_fig("ops_ref", t0, n);
        }
        t.report("ops_ref", "ref", n)?;
        let t = AllocTrace::start(trace && deaths)?;
        let t0 = Instant::now();
        for (i, b) in bs[..if deaths { n } else { 0 }].iter().enumerate() {
            let mut wb = WriteBuf::new();
            wb.request_death(0, i as u64 + 1);
            write_cmds(b, &wb)?;
        }
        if deaths {
            op_fig("ops_death", t0, n);
        }
        t.report("ops_death", "death notification", n)?;
        Ok(Box::new((svc, bs)))
    })
}

/// Round trips 0 B (`ops_n`) with `--ops-buffers` live buffers in the server's area, of
/// mixed sizes with a free hole between each two, as scale_buffers makes them.
pub fn ops_rtt_buffers(cfg: &Cfg) -> Result<(), String> {
    let (n, b, trace) = (cfg.ops_n, cfg.ops_buffers, cfg.alloc_trace);
    kept(move || {
        let srv = ScaleServer::start()?;
        let mut c = Ep::open(&srv.path(), CLIENT_MAP)?;
        let big = [0x5au8; 256];
        let t = AllocTrace::start(trace)?;
        for i in 0..b {
            c.call(0, CODE_HOLD, 0, &big[..SIZES[i % SIZES.len()]], &[])?;
            let s = SIZES[(i + 3) % SIZES.len()];
            c.call(0, CODE_HOLD_TMP, 0, &big[..s], &[])?;
        }
        c.call(0, CODE_FREE_TMP, 0, &[], &[])?;
        t.report("ops_rtt_buffers", "live buffer + hole", b)?;
        let t0 = Instant::now();
        for _ in 0..n {
            c.call(0, CODE_PING, 0, &[], &[])?;
        }
        op_fig("ops_rtt_buffers", t0, n);
        Ok(Box::new((srv, c)))
    })
}

const TRACING: &str = "/sys/kernel/tracing";

/// The kernel's slab allocations across a stretch of a workload (tracefs: kmem:kmalloc,
/// kmem:kmem_cache_alloc and their frees, each with its kernel stack): those still live at
/// the end and those freed within it, per operation, by size and by the first two binder
/// functions on the stack.
struct AllocTrace(bool);

/// One kmem event of the trace.
struct KmemEvent {
    /// `kmalloc`, `kmem_cache_alloc`, `kfree` or `kmem_cache_free`.
    kind: String,
    /// The object's address (hashed, the same for the same object).
    ptr: String,
    /// `bytes_req`: the size asked for.
    asked: usize,
    /// `bytes_alloc`: the size of the slab object.
    size: usize,
    /// The kernel functions on the stack, innermost first.
    stack: Vec<String>,
}

impl KmemEvent {
    fn is_free(&self) -> bool {
        self.kind.ends_with("free")
    }

    /// What the allocations are summed by: kind, sizes and the first two binder functions.
    fn key(&self) -> String {
        let fns: Vec<&str> = self
            .stack
            .iter()
            .filter(|f| f.contains("binder"))
            .take(2)
            .map(|s| s.as_str())
            .collect();
        let fns = if fns.is_empty() {
            "(no binder function)".to_string()
        } else {
            fns.join(" < ")
        };
        format!("{} {} B (asked {}) {fns}", self.kind, self.size, self.asked)
    }
}

/// The kmem events of the text of tracefs's `trace`, and the number of lost-event marks.
fn kmem_events(text: &str) -> (Vec<KmemEvent>, usize) {
    const KINDS: [&str; 4] = ["kmalloc", "kmem_cache_alloc", "kfree", "kmem_cache_free"];
    let mut events: Vec<KmemEvent> = Vec::new();
    let mut lost = 0;
    for l in text.lines() {
        if let Some(f) = l.trim_start().strip_prefix("=> ") {
            if let Some(e) = events.last_mut() {
                e.stack.push(f.split('+').next().unwrap_or(f).to_string());
            }
            continue;
        }
        if l.contains("LOST") {
            lost += 1;
        }
        let Some((at, kind)) = KINDS
            .iter()
            .find_map(|k| l.find(&format!(" {k}: ")).map(|i| (i + k.len() + 3, *k)))
        else {
            continue;
        };
        let field = |k: &str| {
            l[at..]
                .split_whitespace()
                .find_map(|f| f.strip_prefix(k))
                .unwrap_or("")
                .to_string()
        };
        let num = |k: &str| field(k).parse::<usize>().unwrap_or(0);
        events.push(KmemEvent {
            kind: kind.to_string(),
            ptr: field("ptr="),
            asked: num("bytes_req="),
            size: num("bytes_alloc="),
            stack: Vec::new(),
        });
    }
    (events, lost)
}

fn tracefs(file: &str, v: &str) -> Result<(), String> {
    std::fs::write(format!("{TRACING}/{file}"), v).map_err(|e| format!("{TRACING}/{file}: {e}"))
}

impl AllocTrace {
    fn start(on: bool) -> Result<AllocTrace, String> {
        if on {
            tracefs("tracing_on", "0")?;
            tracefs("buffer_size_kb", "32768")?;
            tracefs("trace", "")?;
            tracefs("options/stacktrace", "1")?;
            tracefs(
                "set_event",
                "kmem:kmalloc kmem:kmem_cache_alloc kmem:kfree kmem:kmem_cache_free",
            )?;
            tracefs("tracing_on", "1")?;
        }
        Ok(AllocTrace(on))
    }

    /// Stop tracing and print, per one of the `n` objects (`what`), the allocations still live
    /// and those freed again, of each key with at least half as many as objects.
    fn report(self, w: &str, what: &str, n: usize) -> Result<(), String> {
        if !self.0 {
            return Ok(());
        }
        tracefs("tracing_on", "0")?;
        let text = std::fs::read_to_string(format!("{TRACING}/trace"))
            .map_err(|e| format!("{TRACING}/trace: {e}"))?;
        tracefs("set_event", "")?;
        tracefs("options/stacktrace", "0")?;
        let (events, lost) = kmem_events(&text);
        // The key of each live allocation by address; per key, how many stayed and how many
        // were freed again (kept: true / false), and the object size.
        let mut live: std::collections::HashMap<&str, String> = Default::default();
        let mut sums: std::collections::BTreeMap<(String, bool), (usize, usize)> =
            Default::default();
        for e in &events {
            if e.is_free() {
                if let Some(k) = live.remove(e.ptr.as_str()) {
                    if let Some(s) = sums.get_mut(&(k.clone(), true)) {
                        s.0 -= 1;
                    }
                    sums.entry((k, false)).or_default().0 += 1;
                }
            } else {
                let k = e.key();
                live.insert(&e.ptr, k.clone());
                let s = sums.entry((k.clone(), true)).or_default();
                s.0 += 1;
                s.1 = e.size;
                sums.entry((k, false)).or_default().1 = e.size;
            }
        }
        let per = n.max(1) as f64;
        let mut kept_bytes = 0.0;
        for ((k, kept), (count, size)) in &sums {
            if *count as f64 >= per / 2.0 {
                let c = *count as f64 / per;
                if *kept {
                    kept_bytes += c * *size as f64;
                }
                let how = if *kept { "kept" } else { "freed" };
                note(&format!("alloc {w}: per {what}: {how} {c:.2} x {k}"));
            }
        }
        note(&format!(
            "alloc {w}: per {what}: {kept_bytes:.0} B kept in slab objects ({} events over {n}, \
             {lost} lost-event marks)",
            events.len()
        ));
        Ok(())
    }
}
