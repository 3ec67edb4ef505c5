//! looper: BC_ENTER/REGISTER/EXIT_LOOPER, BINDER_SET_MAX_THREADS and BR_SPAWN_LOOPER,
//! work distribution over several looper threads.

use crate::common::*;
use crate::Ctx;
use binder_uapi::harness::{fork_proc, Pipe};
use binder_uapi::*;
use std::sync::mpsc;
use std::time::Duration;

crate::tests!(
    "looper",
    spawn_looper_requested,
    no_spawn_without_max_threads,
    spawn_looper_once_until_registered,
    spawn_limited_by_max_threads,
    two_loopers_in_parallel,
    enter_looper_twice,
    exit_looper_accepted,
    register_after_enter_accepted,
    register_without_request_accepted,
    client_thread_never_spawned,
);

/// A manager with `max` max threads that reports, for each of `n` transactions, whether
/// the read that delivered it started with BR_SPAWN_LOOPER. Between transactions it can
/// run `between(i, &b)`.
fn spawn_spawn_reporter<F>(
    c: &Ctx,
    max: u32,
    n: usize,
    between: F,
) -> Result<(harness::Proc, Pipe), String>
where
    F: Fn(usize, &Binder) -> TResult,
{
    let ready = Pipe::new().map_err(|e| e.to_string())?;
    let out = Pipe::new().map_err(|e| e.to_string())?;
    let dev = c.dev.clone();
    let p = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr()?;
        b.set_max_threads(max)?;
        b.enter_looper()?;
        ready.send_u64(1)?;
        for i in 0..n {
            ensure!(b.poll(10_000)?, "no transaction {i}");
            let v = b.read_once()?;
            let first = v.first().map(|r| r.code()).unwrap_or(0);
            let td = v
                .iter()
                .find_map(|r| match r {
                    Return::Transaction(td) => Some(*td),
                    _ => None,
                })
                .ok_or_else(|| format!("read {i} had no BR_TRANSACTION: {}", names(&v)))?;
            out.send_u64((first == BR_SPAWN_LOOPER) as u64)?;
            b.reply_and_free(td.buffer, &Payload::new())?;
            between(i, &b)?;
        }
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    ready.recv_u64()?;
    Ok((p, out))
}

/// BC_REGISTER_LOOPER from a short-lived second thread (which then never reads).
fn register_looper_elsewhere(b: &Binder) -> std::io::Result<()> {
    std::thread::scope(|s| {
        s.spawn(|| {
            let mut w = WriteBuf::new();
            w.register_looper();
            b.write(&w).map(|_| ())
        })
        .join()
        .unwrap()
    })
}

/// Make `n` calls to a `spawn_spawn_reporter` server; returns its report for each.
fn spawn_flags(b: &Binder, out: &Pipe, n: usize) -> TResult<Vec<u64>> {
    let mut seen = Vec::new();
    for _ in 0..n {
        b.call(0, 1, &Payload::new())?;
        seen.push(out.recv_u64()?);
    }
    Ok(seen)
}

fn spawn_looper_requested(c: &Ctx) -> TResult {
    let (p, out) = spawn_spawn_reporter(c, 1, 1, |_, _| Ok(()))?;
    let b = client(c)?;
    b.call(0, 1, &Payload::new())?;
    ensure_eq!(
        out.recv_u64()?,
        1,
        "BR_SPAWN_LOOPER at the start of the read (max_threads 1)"
    );
    p.join()
}

fn no_spawn_without_max_threads(c: &Ctx) -> TResult {
    let (p, out) = spawn_spawn_reporter(c, 0, 2, |_, _| Ok(()))?;
    let b = client(c)?;
    for i in 0..2 {
        b.call(0, 1, &Payload::new())?;
        ensure_eq!(
            out.recv_u64()?,
            0,
            &format!("BR_SPAWN_LOOPER with max_threads 0 (call {i})")
        );
    }
    p.join()
}

fn spawn_looper_once_until_registered(c: &Ctx) -> TResult {
    // max_threads 2: the first read asks for a thread; until one registers, no second
    // request; after a BC_REGISTER_LOOPER (from a thread that then stays away), again.
    let (p, out) = spawn_spawn_reporter(c, 2, 3, |i, b| {
        if i == 1 {
            register_looper_elsewhere(b)?;
        }
        Ok(())
    })?;
    let b = client(c)?;
    let seen = spawn_flags(&b, &out, 3)?;
    ensure_eq!(seen, vec![1, 0, 1], "BR_SPAWN_LOOPER per read");
    p.join()
}

fn spawn_limited_by_max_threads(c: &Ctx) -> TResult {
    // max_threads 1 and one registered thread: no more requests.
    let (p, out) = spawn_spawn_reporter(c, 1, 3, |i, b| {
        if i == 0 {
            register_looper_elsewhere(b)?;
        }
        Ok(())
    })?;
    let b = client(c)?;
    let seen = spawn_flags(&b, &out, 3)?;
    ensure_eq!(seen, vec![1, 0, 0], "BR_SPAWN_LOOPER per read");
    p.join()
}

fn two_loopers_in_parallel(c: &Ctx) -> TResult {
    // Two looper threads: the first holds call 1 until the second has received call 2,
    // which only works if the driver hands proc work to the idle second thread.
    let ready = Pipe::new()?;
    let dev = c.dev.clone();
    let srv = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr()?;
        let (tx, rx) = mpsc::channel::<u32>();
        let rx = std::sync::Mutex::new(rx);
        std::thread::scope(|s| {
            let mut hs = Vec::new();
            for _ in 0..2 {
                let tx = tx.clone();
                let (b, rx) = (&b, &rx);
                hs.push(s.spawn(move || -> TResult {
                    b.enter_looper()?;
                    let t = b.recv_txn()?;
                    if t.td.code == 1 {
                        let got = rx.lock().unwrap().recv_timeout(Duration::from_secs(5));
                        ensure!(got == Ok(2), "call 2 never reached the other thread");
                    } else {
                        tx.send(t.td.code).unwrap();
                    }
                    b.reply_and_free(t.td.buffer, &Payload::from_bytes(&t.td.code.to_ne_bytes()))?;
                    Ok(())
                }));
            }
            harness::sleep_ms(100);
            ready.send_u64(1)?;
            for h in hs {
                h.join().unwrap()?;
            }
            Ok(())
        })
    })?;
    ready.recv_u64()?;
    let b = client(c)?;
    std::thread::scope(|s| {
        let h1 = s.spawn(|| b.call(0, 1, &Payload::new()));
        harness::sleep_ms(200);
        let h2 = s.spawn(|| b.call(0, 2, &Payload::new()));
        let r2 = h2.join().unwrap()?;
        let r1 = h1.join().unwrap()?;
        ensure_eq!(r1.data, 1u32.to_ne_bytes().to_vec(), "reply to call 1");
        ensure_eq!(r2.data, 2u32.to_ne_bytes().to_vec(), "reply to call 2");
        Ok::<(), TestErr>(())
    })?;
    srv.join()
}

fn enter_looper_twice(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut w = WriteBuf::new();
        w.enter_looper().enter_looper();
        expect_ok(b.write(&w), "BC_ENTER_LOOPER twice")?;
        still_works(b)?;
        Ok(())
    })
}

fn exit_looper_accepted(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut w = WriteBuf::new();
        w.enter_looper().exit_looper();
        let (r, consumed) = b.write_consumed(&w);
        expect_ok(r, "BC_ENTER_LOOPER + BC_EXIT_LOOPER")?;
        ensure_eq!(consumed, 8, "write_consumed");
        still_works(b)?;
        Ok(())
    })
}

fn register_after_enter_accepted(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut w = WriteBuf::new();
        w.enter_looper().register_looper();
        expect_ok(
            b.write(&w),
            "BC_REGISTER_LOOPER after BC_ENTER_LOOPER (invalid, not an error)",
        )?;
        still_works(b)?;
        Ok(())
    })
}

fn register_without_request_accepted(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut w = WriteBuf::new();
        w.register_looper();
        expect_ok(b.write(&w), "BC_REGISTER_LOOPER without BR_SPAWN_LOOPER")?;
        still_works(b)?;
        Ok(())
    })
}

fn client_thread_never_spawned(c: &Ctx) -> TResult {
    // A non-looper thread never gets BR_SPAWN_LOOPER, even with max_threads set.
    with_std(c, |b| {
        b.set_max_threads(4)?;
        for _ in 0..3 {
            b.transact(0, CODE_ECHO, 0, &Payload::new())?;
            let v = b.collect_until(&[BR_REPLY])?;
            ensure!(
                !v.contains(&Return::SpawnLooper),
                "non-looper thread got BR_SPAWN_LOOPER: {}",
                names(&v)
            );
            b.free_buffer(v.last().unwrap().txn().unwrap().buffer)?;
        }
        Ok(())
    })
}
