//! Fuzz rounds: a fresh binderfs device per round, a context manager and several
//! peers (each with several threads), a controller that freezes and unfreezes them and
//! churns binderfs devices, and kill -9 of peers at random points. After each round:
//! every child gone within a timeout, the driver still answers a ping on a fresh
//! device, and its node/ref/buffer counts are back at the baseline.

use crate::peer::{self, PeerSpec};
use crate::rng::{derive, Rng};
use crate::sys::{self, shared, Fs, Snapshot, MAX_PEERS};
use binder_uapi::harness::{fork_proc, Pipe};
use binder_uapi::*;
use std::sync::atomic::Ordering;
use std::time::Duration;

pub struct Config {
    pub seed: u64,
    pub rounds: Option<u64>,
    pub seconds: Option<u64>,
    /// Stop once the fuzz rounds have made this many ioctls (or `seconds` ran out).
    pub ioctls: Option<u64>,
    pub procs: usize,
    pub threads: usize,
    pub round_ms: u64,
    pub only_round: Option<u64>,
}

/// Failures per invariant, each message naming its round.
#[derive(Default)]
pub struct Verdicts {
    pub rounds: u64,
    pub stuck: Vec<String>,
    pub peers: Vec<String>,
    pub ping: Vec<String>,
    pub counts: Vec<String>,
    pub memory: Vec<String>,
    pub counts_skipped: Option<String>,
    pub first_failed_round: Option<u64>,
    pub fatal: bool,
    pub mem_note: String,
    /// Dead nodes with a negative count left before fuzzing (state lines): comments.
    pub leaks_before: Vec<String>,
    /// Dead nodes with a negative count left by the fuzz rounds: failures of
    /// fuzz::no_dead_node_leak.
    pub leaks: Vec<String>,
}

impl Verdicts {
    fn failed(&mut self, r: u64) {
        if self.first_failed_round.is_none() {
            self.first_failed_round = Some(r);
        }
    }
}

fn getpid() -> i32 {
    // SAFETY: trivial.
    unsafe { libc::getpid() }
}

fn sleep_ms(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms));
}

/// Wait up to `ms` for a byte on `fd`.
fn wait_byte(fd: i32, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one pollfd.
    let r = unsafe { libc::poll(&mut p, 1, ms) };
    if r <= 0 {
        return false;
    }
    let mut b = [0u8; 1];
    // SAFETY: one byte into our buffer.
    unsafe { libc::read(fd, b.as_mut_ptr() as *mut _, 1) == 1 }
}

struct Child {
    pid: i32,
    what: String,
    status: Option<i32>,
    killed: bool,
}

fn fork_child<F: FnOnce()>(f: F) -> i32 {
    // SAFETY: the parent is single-threaded; the child runs `f` and `_exit`s.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        f();
        // SAFETY: leave the forked child.
        unsafe { libc::_exit(0) };
    }
    pid
}

pub fn run(cfg: &Config, fs: &Fs, v: &mut Verdicts, log: &mut dyn FnMut(&str)) {
    sys::drop_caches();
    // Processes of earlier tests may still be in their deferred release: wait for
    // the counts to settle (no binder process left, or unchanged for a second).
    let mut base = fs.snapshot();
    let mut same = 0;
    let settle_until = sys::now_ms() + 15_000;
    while sys::now_ms() < settle_until {
        if base
            .as_ref()
            .map(|b| b.active.get("stats.proc").copied().unwrap_or(0) == 0)
            .unwrap_or(true)
        {
            break;
        }
        sleep_ms(250);
        let next = fs.snapshot();
        same = if next == base { same + 1 } else { 0 };
        base = next;
        if same >= 8 {
            break;
        }
    }
    sys::drop_caches();
    sys::shrink_slabs();
    let (free0, slab0) = sys::meminfo();
    if base.is_none() {
        v.counts_skipped =
            Some("no binder_logs/state and stats (nor debugfs binder) to read".into());
    }
    if let Some(b) = &base {
        for k in &b.dead_node_leaks {
            log(&format!(
                "before fuzzing (left by the regression tests or earlier runs): dead node with a negative count, not counted: {k}"
            ));
            v.leaks_before.push(k.clone());
        }
        log(&format!(
            "baseline: {}",
            b.active
                .iter()
                .chain(b.lines.iter())
                .map(|(k, n)| format!("{k}={n}"))
                .collect::<Vec<_>>()
                .join(" ")
        ));
    }
    log(&format!("baseline: MemFree={free0} kB Slab={slab0} kB"));
    let start = sys::now_ms();
    let ioctls0 = sys::ioctl_count();
    let rounds: Box<dyn Iterator<Item = u64>> = match cfg.only_round {
        Some(r) => Box::new(r..r + 1),
        None => Box::new(0..cfg.rounds.unwrap_or(u64::MAX)),
    };
    let mut worst_slab = 0i64;
    for r in rounds {
        if let Some(s) = cfg.seconds {
            if cfg.only_round.is_none() && sys::now_ms() - start >= s * 1000 {
                break;
            }
        }
        if let Some(n) = cfg.ioctls {
            if cfg.only_round.is_none() && sys::ioctl_count() - ioctls0 >= n {
                break;
            }
        }
        let before = sys::ioctl_count();
        let t0 = sys::now_ms();
        if let Some(nb) = round(cfg, fs, r, v, base.as_ref(), log) {
            base = Some(nb);
        }
        let took = sys::now_ms() - t0;
        v.rounds += 1;
        let (_, slab) = sys::meminfo();
        worst_slab = worst_slab.max(slab - slab0);
        log(&format!(
            "round {r} seed={} ioctls=+{} in {took} ms slab={:+} kB",
            derive(cfg.seed, r),
            sys::ioctl_count() - before,
            slab - slab0
        ));
        if v.fatal {
            break;
        }
    }
    // Memory: after the processes are gone, free memory and slab come back near the
    // baseline (both measured with the caches dropped and KASAN's quarantine drained).
    sys::drop_caches();
    let mut ok = false;
    let (mut free1, mut slab1) = (0, 0);
    let (slab_slack, free_slack) = (SLAB_SLACK_KB, FREE_SLACK_KB);
    for _ in 0..10 {
        sleep_ms(500);
        sys::drop_caches();
        sys::shrink_slabs();
        let (f, s) = sys::meminfo();
        free1 = f;
        slab1 = s;
        if slab1 - slab0 <= slab_slack && free0 - free1 <= free_slack {
            ok = true;
            break;
        }
    }
    v.mem_note = format!(
        "MemFree {free0}->{free1} kB ({:+}), Slab {slab0}->{slab1} kB ({:+}), worst Slab during run {:+} kB",
        free1 - free0,
        slab1 - slab0,
        worst_slab
    );
    if !ok {
        v.memory.push(format!(
            "memory did not return near the baseline (slack Slab {slab_slack} kB, MemFree {free_slack} kB): {}",
            v.mem_note
        ));
    }
}

// How far Slab may stay above, and MemFree below, the baseline after the fuzz rounds.
//
// Generic KASAN keeps freed objects in a quarantine of up to 1/32 of RAM (64 MiB on the
// 2 GiB test guest) before the slab allocator gets them back: the check used to allow
// that much plus 16 MiB (about 80 MiB), which no realistic leak reaches in one run.
// Both measurements are now taken after sys::shrink_slabs(), which empties the
// quarantine (the baseline Slab fell from about 80 MiB to 37.5 MiB with it), and the
// slack is what the runs measured, with room:
// - 6 boots of the 6.12 debug kernel without the drain (3 clean checks x C and Rust,
//   78-165 rounds, ~210,000 transactions each): Slab at the end -1612 to -164 kB from
//   the baseline, MemFree -3872 to +452 kB; over all 823 rounds the Slab right after a
//   round was -1948 to +2464 kB (99th percentile +1824 kB);
// - a scripts/soak boot with the drain and kmemleak (Rust, seed 4242, 81 rounds):
//   Slab -568 kB, MemFree -5164 kB, worst Slab after a round +224 kB.
// Slab: 8 MiB, over three times the largest excursion seen after any round; MemFree:
// 16 MiB, three times the largest drop seen. What trips it: a check run makes ~210,000
// transactions and 300-600 binder processes (2-4 per round), so a leak of ~40 bytes per
// transaction, ~14-28 KiB per process (a Process with its threads and nodes), or 7-14
// buffer pages per process fails it; smaller leaks are what the object counts
// (fuzz::counts_back_to_baseline) and kmemleak are for.
const SLAB_SLACK_KB: i64 = 8 * 1024;
const FREE_SLACK_KB: i64 = 16 * 1024;

fn round(
    cfg: &Config,
    fs: &Fs,
    r: u64,
    v: &mut Verdicts,
    base: Option<&Snapshot>,
    log: &mut dyn FnMut(&str),
) -> Option<Snapshot> {
    let mut rebase = None;
    let rs = derive(cfg.seed, r);
    let mut rng = Rng::new(rs);
    let tag = format!("fz{}-{}", getpid(), r);
    let dev = match binderfs::Device::create(&fs.mnt, &tag) {
        Ok(d) => d,
        Err(e) => {
            v.ping.push(format!("round {r}: BINDER_CTL_ADD {tag}: {e}"));
            v.failed(r);
            v.fatal = true;
            return None;
        }
    };
    let path = dev.path();
    let npeers = (rng.range(2, cfg.procs.max(2) as u64) as usize).min(MAX_PEERS);
    let round_ms = rng.range(cfg.round_ms / 2, cfg.round_ms);
    let deadline = sys::now_ms() + round_ms;
    for p in &shared().pids {
        p.store(0, Ordering::Relaxed);
    }
    let mut kids: Vec<Child> = Vec::new();
    for i in 0..npeers {
        let mut fds = [0i32; 2];
        // SAFETY: room for two fds.
        unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) };
        let spec = PeerSpec {
            dev: path.clone(),
            deadline_ms: deadline,
            seed: derive(rs, 1 + i as u64),
            threads: rng.range(1, cfg.threads.max(1) as u64) as usize,
            is_mgr: i == 0,
        };
        let rfd = fds[0];
        let wfd = fds[1];
        let pid = fork_child(move || {
            sys::close(rfd);
            peer::run(spec, wfd)
        });
        sys::close(wfd);
        if pid > 0 {
            shared().pids[i].store(pid, Ordering::Relaxed);
            kids.push(Child {
                pid,
                what: if i == 0 {
                    "context manager".into()
                } else {
                    format!("peer {i}")
                },
                status: None,
                killed: false,
            });
            // The context manager must be in place before the others start.
            wait_byte(rfd, 5000);
        }
        sys::close(rfd);
    }
    let cseed = derive(rs, 999);
    let cmnt = fs.mnt.clone();
    let ctag = tag.clone();
    let cpath = path.clone();
    let unlink_round_dev = rng.pct(15);
    let cpid = fork_child(move || {
        controller(
            &cpath,
            &cmnt,
            &ctag,
            deadline,
            cseed,
            npeers,
            unlink_round_dev,
        )
    });
    if cpid > 0 {
        kids.push(Child {
            pid: cpid,
            what: "controller".into(),
            status: None,
            killed: false,
        });
    }
    // kill -9 at random points.
    let nkills = rng.below(3);
    let mut times: Vec<u64> = (0..nkills).map(|_| rng.below(round_ms)).collect();
    times.sort();
    let t0 = deadline - round_ms;
    for t in times {
        let now = sys::now_ms();
        if t0 + t > now {
            sleep_ms(t0 + t - now);
        }
        let victim = rng.below(npeers as u64) as usize;
        if std::env::var_os("BINDER_FUZZ_NO_KILL").is_some() {
            continue;
        }
        if let Some(k) = kids.get_mut(victim) {
            // SAFETY: our own child (possibly a zombie already: harmless).
            unsafe { libc::kill(k.pid, libc::SIGKILL) };
            k.killed = true;
        }
    }
    let now = sys::now_ms();
    if deadline > now {
        sleep_ms(deadline - now);
    }
    let active_ioctls = sys::ioctl_count();
    // Everyone must be gone soon after the deadline: nothing may hang in the driver.
    let grace = deadline + STUCK_MS;
    loop {
        let mut left = 0;
        for k in kids.iter_mut().filter(|k| k.status.is_none()) {
            let mut st = 0;
            // SAFETY: our child.
            if unsafe { libc::waitpid(k.pid, &mut st, libc::WNOHANG) } == k.pid {
                k.status = Some(st);
            } else {
                left += 1;
            }
        }
        if left == 0 || sys::now_ms() > grace {
            break;
        }
        sleep_ms(20);
    }
    for k in kids.iter_mut().filter(|k| k.status.is_none()) {
        v.stuck.push(format!(
            "round {r} (seed {rs}): {} pid {} still running {} ms after its deadline:\n{}",
            k.what,
            k.pid,
            STUCK_MS,
            sys::describe_task(k.pid)
        ));
        v.failed(r);
        // SAFETY: our child.
        unsafe { libc::kill(k.pid, libc::SIGKILL) };
        let until = sys::now_ms() + 10_000;
        loop {
            let mut st = 0;
            // SAFETY: our child.
            if unsafe { libc::waitpid(k.pid, &mut st, libc::WNOHANG) } == k.pid {
                k.status = Some(st);
                break;
            }
            if sys::now_ms() > until {
                v.stuck.push(format!(
                    "round {r}: {} pid {} survives SIGKILL (unkillable in the kernel):\n{}",
                    k.what,
                    k.pid,
                    sys::describe_task(k.pid)
                ));
                v.fatal = true;
                break;
            }
            sleep_ms(50);
        }
    }
    for k in &kids {
        if let Some(st) = k.status {
            let bad = if libc::WIFEXITED(st) {
                libc::WEXITSTATUS(st) != 0
            } else if libc::WIFSIGNALED(st) {
                !(k.killed && libc::WTERMSIG(st) == libc::SIGKILL)
            } else {
                false
            };
            if bad {
                v.peers.push(format!(
                    "round {r} (seed {rs}): {} pid {} ended with wait status {st:#x}{}",
                    k.what,
                    k.pid,
                    if libc::WIFSIGNALED(st) {
                        format!(" (signal {})", libc::WTERMSIG(st))
                    } else {
                        String::new()
                    }
                ));
                v.failed(r);
            }
        }
    }
    let reaped = sys::now_ms();
    drop(dev);
    if v.fatal {
        return None;
    }
    let _ = active_ioctls;
    let ping_t = sys::now_ms();
    if let Err(e) = ping(fs, &tag) {
        v.ping.push(format!("round {r} (seed {rs}): {e}"));
        v.failed(r);
    }
    if let Some(b) = base {
        let mut last = None;
        let ok = binder_uapi::harness::wait_drained(
            Duration::from_millis(COUNTS_MS),
            Duration::from_millis(COUNTS_CAP_MS),
            || {
                last = fs.snapshot();
                last.as_ref().map(|s| s.distance(b))
            },
        );
        if let Some(snap) = &last {
            for k in &snap.dead_node_leaks {
                let seen = v.leaks_before.contains(k) || v.leaks.iter().any(|l| l.ends_with(k));
                if !seen {
                    let msg =
                        format!("round {r} (seed {rs}): dead node left with a negative count: {k}");
                    log(&msg);
                    v.leaks.push(msg);
                    v.failed(r);
                }
            }
        }
        if !ok {
            let d = last
                .as_ref()
                .map(|s| s.diff(b).join(", "))
                .unwrap_or_else(|| "logs unreadable".into());
            v.counts.push(format!(
                "round {r} (seed {rs}): counts not back at baseline ({COUNTS_MS} ms without progress): {d}"
            ));
            v.failed(r);
            log(&format!("round {r}: counts differ: {d}"));
            // Objects a kernel worker still holds (a release that sleeps) look like leaked
            // ones: the console gets the stacks of the blocked tasks to tell them apart.
            if sys::show_blocked_tasks() {
                log(&format!(
                    "round {r}: blocked tasks' stacks are on the console (sysrq w)"
                ));
            }
            if let Some(dir) = &fs.logs {
                let st = std::fs::read_to_string(format!("{dir}/state")).unwrap_or_default();
                v.counts.push(format!(
                    "round {r}: binder_logs/state now:\n{}",
                    st.lines().take(30).collect::<Vec<_>>().join("\n")
                ));
            }
            // Count from here on relative to what is left, so one leak is reported once.
            rebase = last.clone();
        }
    }
    log(&format!(
        "round {r}: peers={npeers} active {round_ms} ms, reap {} ms, ping+counts {} ms",
        reaped.saturating_sub(deadline),
        sys::now_ms().saturating_sub(ping_t)
    ));
    rebase
}

const STUCK_MS: u64 = 20_000;
/// Counts must go back to the baseline, and may take as long as they keep going down (a loaded
/// 2-core TCG guest releases a round's processes slowly): the round fails after this long
/// without progress...
const COUNTS_MS: u64 = 15_000;
/// ...or this long in all.
const COUNTS_CAP_MS: u64 = 120_000;

/// Freeze/unfreeze peers, query frozen info, add/remove binderfs devices.
fn controller(
    path: &str,
    mnt: &str,
    tag: &str,
    deadline: u64,
    seed: u64,
    npeers: usize,
    unlink: bool,
) -> ! {
    let mut rng = Rng::new(seed);
    let fd = sys::open_dev(path, libc::O_RDWR | libc::O_CLOEXEC | libc::O_NONBLOCK).unwrap_or(-1);
    let mid = deadline - (deadline - sys::now_ms()) / 2;
    let mut unlinked = false;
    let mut n = 0;
    let idle = std::env::var_os("BINDER_FUZZ_NO_CONTROLLER").is_some();
    while sys::now_ms() < deadline {
        sleep_ms(rng.range(5, 60));
        if idle {
            continue;
        }
        let i = rng.below(npeers as u64) as usize;
        let pid = shared().pids[i].load(Ordering::Relaxed) as u32;
        match rng.below(6) {
            0 | 1 => {
                let mut fi = binder_freeze_info {
                    pid,
                    enable: 1,
                    timeout_ms: rng.below(30) as u32,
                };
                let _ = sys::ioctl(fd, BINDER_FREEZE, &mut fi as *mut _ as usize);
            }
            2 | 3 => {
                let mut fi = binder_freeze_info {
                    pid,
                    enable: 0,
                    timeout_ms: 0,
                };
                let _ = sys::ioctl(fd, BINDER_FREEZE, &mut fi as *mut _ as usize);
            }
            4 => {
                let mut st = binder_frozen_status_info {
                    pid,
                    ..Default::default()
                };
                let _ = sys::ioctl(fd, BINDER_GET_FROZEN_INFO, &mut st as *mut _ as usize);
            }
            _ => {
                n += 1;
                let name = format!("{tag}-c{n}");
                if binderfs::add_device(mnt, &name).is_ok() {
                    let p = format!("{mnt}/{name}");
                    let early = rng.pct(50);
                    if let Ok(f) =
                        sys::open_dev(&p, libc::O_RDWR | libc::O_CLOEXEC | libc::O_NONBLOCK)
                    {
                        if early {
                            let _ = binderfs::remove_device(mnt, &name);
                        }
                        let _ = sys::map_dev(f, 16 * 1024);
                        let mut w = Vec::new();
                        w.extend_from_slice(&BC_ENTER_LOOPER.to_ne_bytes());
                        w.extend_from_slice(&BC_TRANSACTION.to_ne_bytes());
                        let td = binder_transaction_data::default();
                        w.extend_from_slice(binder_uapi::proto::bytes_of(&td));
                        let mut rb = [0u8; 64];
                        let _ = sys::write_read(f, &w, &mut rb);
                        if rng.pct(50) {
                            let mut z = 0i32;
                            let _ =
                                sys::ioctl(f, BINDER_SET_CONTEXT_MGR, &mut z as *mut _ as usize);
                        }
                        sys::close(f);
                    }
                    let _ = binderfs::remove_device(mnt, &name);
                }
            }
        }
        if unlink && !unlinked && sys::now_ms() >= mid {
            // The round's own device goes away under its users.
            let _ = std::fs::remove_file(path);
            unlinked = true;
        }
    }
    for i in 0..npeers {
        let pid = shared().pids[i].load(Ordering::Relaxed) as u32;
        let mut fi = binder_freeze_info {
            pid,
            enable: 0,
            timeout_ms: 0,
        };
        let _ = sys::ioctl(fd, BINDER_FREEZE, &mut fi as *mut _ as usize);
    }
    // SAFETY: leave the forked child.
    unsafe { libc::_exit(0) }
}

/// A fresh device, a context manager that echoes one call, a client that makes it.
pub fn ping(fs: &Fs, tag: &str) -> Result<(), String> {
    let dev = binderfs::Device::create(&fs.mnt, &format!("{tag}-ping"))
        .map_err(|e| format!("ping: BINDER_CTL_ADD: {e}"))?;
    let path = dev.path();
    let ready = Pipe::new().map_err(|e| e.to_string())?;
    let p2 = path.clone();
    let server = fork_proc(|| {
        let b = Binder::open_mapped(&p2)?;
        b.set_context_mgr()?;
        b.enter_looper()?;
        ready.send_u64(1)?;
        loop {
            match b.try_next(15_000)? {
                Some(Return::Transaction(td)) => {
                    let rec = b.received(&td)?;
                    b.reply_and_free(td.buffer, &Payload::from_bytes(&rec.data))?;
                    return Ok(());
                }
                Some(_) => continue,
                None => return Err("ping server: no transaction within 15 s".into()),
            }
        }
    })
    .map_err(|e| format!("fork: {e}"))?;
    ready
        .recv_u64_within(Duration::from_secs(10))
        .map_err(|e| format!("ping server not ready: {e}"))?;
    let client = fork_proc(|| {
        let b = Binder::open_mapped(&path)?;
        let probe = b"binder-fuzz ping";
        let r = b.call(0, 1, &Payload::from_bytes(probe))?;
        if r.data != probe {
            return Err(format!("ping reply data {:?}", r.data).into());
        }
        Ok(())
    })
    .map_err(|e| format!("fork: {e}"))?;
    let c = client.join_within(Duration::from_secs(20));
    let s = server.join_within(Duration::from_secs(5));
    sys::shared().ioctls.fetch_add(8, Ordering::Relaxed);
    match (c, s) {
        (Ok(()), Ok(())) => Ok(()),
        (Err(e), _) => Err(format!("ping client: {e:?}")),
        (_, Err(e)) => Err(format!("ping server: {e:?}")),
    }
}
