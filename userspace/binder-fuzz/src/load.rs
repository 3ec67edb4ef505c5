//! Load: many processes and threads hammering one context manager at once.
//!
//! 64 client processes × 8 threads, each thread with a binder file of its own, call an echo
//! context manager (which serves with several looper threads) for a fixed time. Every call must
//! come back as the echo of what was sent (no BR_FAILED_REPLY or BR_DEAD_REPLY: the C driver
//! fails none of them either), nobody may hang, and once everybody has exited the driver's
//! object counts must be back at their baseline (no leak).

use crate::sys::{self, Fs};
use crate::Report;
use binder_uapi::harness::{fork_proc, sleep_ms, wait_drained, Pipe};
use binder_uapi::*;
use std::time::Duration;

/// Client processes.
pub const PROCS: usize = 64;
/// Threads per client process, each with its own binder file.
pub const THREADS: usize = 8;
/// Looper threads of the context manager (threads of its one binder file).
const SERVER_THREADS: usize = 4;
const CODE_ECHO: u32 = 0x4c44;

/// Runs the load test for `seconds` and reports `load::many_clients`.
pub fn run(fs: &Fs, seconds: u64, rep: &mut Report) {
    let mut fails = Vec::new();
    let base = fs.snapshot();
    let devname = format!("load{}", std::process::id());
    let dev = match binderfs::Device::create(&fs.mnt, &devname) {
        Ok(d) => d,
        Err(e) => {
            rep.result(
                "load::many_clients",
                &[format!("BINDER_CTL_ADD {devname}: {e}")],
            );
            return;
        }
    };
    let path = dev.path();
    match hammer(&path, seconds) {
        Ok((calls, bad)) => {
            rep.comment(&format!(
                "load: {PROCS} processes x {THREADS} threads, {seconds} s: {calls} calls, {} failed",
                bad.len()
            ));
            fails.extend(bad);
        }
        Err(e) => fails.push(e),
    }
    drop(dev);
    if let Some(b) = base {
        let mut last = None;
        // Back at (or below: earlier tests' processes may still have been exiting) the
        // counts before the load.
        // The C driver releases processes from a workqueue: on a loaded host 500 threads take
        // a while. Wait as long as the counts keep going down (15 s without progress, 180 s in
        // all), and say what was still outstanding.
        let back = wait_drained(Duration::from_secs(15), Duration::from_secs(180), || {
            last = fs.snapshot();
            last.as_ref().map(|s| excess(s, &b))
        });
        if !back {
            let d = last
                .map(|s| above(&s, &b).join(", "))
                .unwrap_or_else(|| "logs unreadable".into());
            fails.push(format!(
                "counts not back at baseline after the load (still outstanding when they stopped going down): {d}"
            ));
        }
    } else {
        rep.comment("load: no binder_logs to compare counts with");
    }
    rep.result("load::many_clients", &fails);
}

/// Returns the number of successful calls and the failures.
fn hammer(dev: &str, seconds: u64) -> Result<(u64, Vec<String>), String> {
    let ready = Pipe::new().map_err(|e| e.to_string())?;
    let d = dev.to_string();
    let server = fork_proc(|| {
        let b = Binder::open_mapped(&d)?;
        b.set_context_mgr()?;
        b.set_max_threads(SERVER_THREADS as u32)?;
        std::thread::scope(|s| {
            for _ in 0..SERVER_THREADS {
                s.spawn(|| serve(&b));
            }
            let _ = ready.send_u64(1);
        });
        Ok(())
    })
    .map_err(|e| format!("fork server: {e}"))?;
    ready
        .recv_u64_within(Duration::from_secs(10))
        .map_err(|e| format!("server did not start: {e}"))?;

    let results = Pipe::new().map_err(|e| e.to_string())?;
    let mut clients = Vec::new();
    for p in 0..PROCS {
        let d = dev.to_string();
        let results = &results;
        let c = fork_proc(move || {
            let out: Vec<(u64, Vec<String>)> = std::thread::scope(|s| {
                let hs: Vec<_> = (0..THREADS)
                    .map(|t| {
                        let d = d.clone();
                        s.spawn(move || client(&d, p, t, seconds))
                    })
                    .collect();
                hs.into_iter()
                    .map(|h| {
                        h.join()
                            .unwrap_or((0, vec!["client thread panicked".into()]))
                    })
                    .collect()
            });
            let calls: u64 = out.iter().map(|o| o.0).sum();
            let bad: Vec<String> = out.into_iter().flat_map(|o| o.1).take(4).collect();
            // One record per process, in one write (atomic on a pipe): calls, failures.
            let mut rec = calls.to_ne_bytes().to_vec();
            rec.extend_from_slice(&(bad.len() as u64).to_ne_bytes());
            results.send(&rec)?;
            for m in &bad {
                println!("# load client {p}: {m}");
            }
            Ok(())
        })
        .map_err(|e| format!("fork client {p}: {e}"))?;
        clients.push(c);
    }
    let mut calls = 0;
    let mut bad = Vec::new();
    for p in 0..PROCS {
        let wait = Duration::from_secs(seconds + 120);
        let rec = results.recv_exact(16, wait);
        let field =
            |r: &[u8], i: usize| u64::from_ne_bytes(r[i * 8..i * 8 + 8].try_into().unwrap());
        match rec.as_deref().map(|r| (field(r, 0), field(r, 1))) {
            Ok((n, f)) => {
                calls += n;
                if f > 0 {
                    bad.push(format!(
                        "a client process had {f} failed call(s) (see # lines)"
                    ));
                }
            }
            Err(e) => bad.push(format!(
                "client result {p} missing ({e}): a client hung or died"
            )),
        }
    }
    for c in clients {
        if let Err(e) = c.join_within(Duration::from_secs(30)) {
            bad.push(format!("client: {e:?}"));
        }
    }
    server.kill();
    sleep_ms(200);
    Ok((calls, bad))
}

/// A looper thread of the server: echoes every call.
fn serve(b: &Binder) {
    if b.enter_looper().is_err() {
        return;
    }
    loop {
        let r = match b.try_next(30_000) {
            Ok(Some(r)) => r,
            _ => return,
        };
        let mut w = WriteBuf::new();
        if let Return::Transaction(td) = r {
            let Ok(rec) = b.received(&td) else { return };
            let mut p = Payload::new();
            p.bytes(&rec.data);
            w.free_buffer(td.buffer);
            if td.flags & TF_ONE_WAY == 0 {
                w.reply(0, &p);
            }
        }
        if !w.is_empty() && b.write(&w).is_err() {
            return;
        }
    }
}

/// How long a call may wait for its reply: with 512 callers queued on a few server threads
/// of an emulated, shared machine, a turn can take seconds.
const CALL_WAIT_MS: i32 = 60_000;

/// A client thread: calls the server until the time is up.
fn client(dev: &str, p: usize, t: usize, seconds: u64) -> (u64, Vec<String>) {
    let b = match Binder::open_mapped(dev) {
        Ok(b) => b,
        Err(e) => return (0, vec![format!("open {dev}: {e}")]),
    };
    let end = sys::now_ms() + seconds * 1000;
    let mut n = 0u64;
    let mut bad = Vec::new();
    while sys::now_ms() < end && bad.is_empty() {
        let msg = format!("{p}/{t}/{n}");
        let mut pl = Payload::new();
        pl.bytes(msg.as_bytes());
        match b.call_within(0, CODE_ECHO, &pl, CALL_WAIT_MS) {
            Ok(rec) if rec.data == msg.as_bytes() => n += 1,
            Ok(rec) => bad.push(format!("call {n}: echo {:?} for {msg:?}", rec.data)),
            Err(e) => bad.push(format!("call {n}: {e}")),
        }
    }
    (n, bad)
}

/// The counts of `now` that are above those of `base`.
/// How many objects are above their count in `base`, all kinds together.
fn excess(now: &sys::Snapshot, base: &sys::Snapshot) -> u64 {
    let mut n = 0;
    for (a, b) in [(&now.active, &base.active), (&now.lines, &base.lines)] {
        for (k, v) in a.iter() {
            n += v.saturating_sub(b.get(k).copied().unwrap_or(0)).max(0) as u64;
        }
    }
    n
}

fn above(now: &sys::Snapshot, base: &sys::Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    for (a, b) in [(&now.active, &base.active), (&now.lines, &base.lines)] {
        for (k, n) in a.iter() {
            let then = b.get(k).copied().unwrap_or(0);
            if *n > then {
                out.push(format!("{k} {then}->{n}"));
            }
        }
    }
    out
}
