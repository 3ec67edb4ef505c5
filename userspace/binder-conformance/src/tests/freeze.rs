//! freeze: BINDER_FREEZE and BINDER_GET_FROZEN_INFO, BR_FROZEN_REPLY and
//! BR_TRANSACTION_PENDING_FROZEN, TF_UPDATE_TXN.

use crate::common::*;
use crate::Ctx;
use binder_uapi::harness::{fork_proc, wait_until, Pipe};
use binder_uapi::*;
use std::time::{Duration, Instant};

crate::tests!(
    "freeze",
    sync_to_frozen_frozen_reply,
    frozen_info_sync_recv,
    oneway_to_frozen_pending,
    unfreeze_restores_calls,
    update_txn_supersedes_pending,
    freeze_with_pending_reply_eagain,
    freeze_timeout_waits_then_eagain,
    frozen_info_pending_bit,
    unfreeze_clears_recv_flags,
    freeze_twice_ok,
);

/// A synchronous call to handle 0 must fail with BR_FROZEN_REPLY.
fn expect_frozen_reply(b: &Binder, what: &str) -> TResult {
    let mut w = WriteBuf::new();
    w.transaction(0, CODE_ECHO, 0, &Payload::new());
    expect_txn_error(b, &w, BR_FROZEN_REPLY, what)
}

// 7.2 upstream Rust: BR_FROZEN_REPLY (BinderError::new_frozen, no errno) leaves the extended
//   error at (BR_OK, 0) (thread.rs:Thread::transaction); C sets (BR_FROZEN_REPLY, 0)
//   (docs/oracle.md)
fn sync_to_frozen_frozen_reply(c: &Ctx) -> TResult {
    with_ctxmgr(c, std_handler, |srv, b| {
        expect_ok(b.freeze(srv.pid, true, 0), "BINDER_FREEZE(server)")?;
        expect_frozen_reply(b, "call to a frozen process")?;
        expect_ext_err(b, BR_FROZEN_REPLY, 0, "call to a frozen process")?;
        b.expect_nothing(100)?;
        expect_ok(b.freeze(srv.pid, false, 0), "unfreeze")?;
        Ok(())
    })
}

fn frozen_info_sync_recv(c: &Ctx) -> TResult {
    with_ctxmgr(c, std_handler, |srv, b| {
        b.freeze(srv.pid, true, 0)?;
        let i = b.frozen_info(srv.pid)?;
        ensure_eq!(
            (i.sync_recv, i.async_recv),
            (0, 0),
            "(sync_recv, async_recv) right after freezing"
        );
        expect_frozen_reply(b, "call to a frozen process")?;
        let i = b.frozen_info(srv.pid)?;
        ensure_eq!(
            (i.sync_recv, i.async_recv),
            (1, 0),
            "(sync_recv, async_recv) after a refused call"
        );
        b.freeze(srv.pid, false, 0)?;
        Ok(())
    })
}

fn oneway_to_frozen_pending(c: &Ctx) -> TResult {
    let got = Pipe::new()?;
    let srv = spawn_ctxmgr(c, |_, rec| {
        let _ = got.send_u64(rec.td.code as u64);
        Ok(Step::Nothing)
    })?;
    let b = client(c)?;
    b.freeze(srv.pid, true, 0)?;
    b.transact(0, 42, TF_ONE_WAY, &Payload::from_bytes(b"queued"))?;
    let r = b.next()?;
    ensure!(
        r == Return::TransactionPendingFrozen,
        "one-way to a frozen process: expected BR_TRANSACTION_PENDING_FROZEN, got {}",
        r.name()
    );
    // (Bit 1 of sync_recv reports transactions still in flight, e.g. the one-way if the
    // server has not picked it up yet; only bit 0 is about the frozen period.)
    let i = b.frozen_info(srv.pid)?;
    ensure_eq!(
        (i.sync_recv & 1, i.async_recv),
        (0, 1),
        "(sync_recv bit 0, async_recv)"
    );
    b.freeze(srv.pid, false, 0)?;
    ensure_eq!(got.recv_u64()?, 42, "one-way delivered");
    srv.kill();
    Ok(())
}

fn unfreeze_restores_calls(c: &Ctx) -> TResult {
    with_ctxmgr(c, std_handler, |srv, b| {
        b.freeze(srv.pid, true, 0)?;
        expect_frozen_reply(b, "call while frozen")?;
        b.freeze(srv.pid, false, 0)?;
        still_works(b)?;
        Ok(())
    })
}

fn update_txn_supersedes_pending(c: &Ctx) -> TResult {
    // The server holds the first one-way (so later ones queue on the node); while frozen,
    // a TF_UPDATE_TXN one-way replaces the queued one with the same code.
    let got = Pipe::new()?;
    let go = Pipe::new()?;
    let ready = Pipe::new()?;
    let dev = c.dev.clone();
    let p = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr()?;
        b.enter_looper()?;
        ready.send_u64(harness::getpid() as u64)?;
        let first = b.recv_txn()?;
        got.send_u64(u32::from_ne_bytes(first.data[..4].try_into().unwrap()) as u64)?;
        go.recv_u64()?;
        b.free_buffer(first.td.buffer)?;
        loop {
            match b.try_next(500)? {
                None => break,
                Some(Return::Transaction(td)) => {
                    let rec = b.received(&td)?;
                    got.send_u64(u32::from_ne_bytes(rec.data[..4].try_into().unwrap()) as u64)?;
                    b.free_buffer(td.buffer)?;
                }
                Some(other) => fail!("server got {}", other.name()),
            }
        }
        got.send_u64(0)?;
        Ok(())
    })?;
    let pid = ready.recv_u64()? as i32;
    let b = client(c)?;
    b.transact(
        0,
        5,
        TF_ONE_WAY | TF_UPDATE_TXN,
        &Payload::from_bytes(&1u32.to_ne_bytes()),
    )?;
    b.expect(BR_TRANSACTION_COMPLETE)?;
    ensure_eq!(got.recv_u64()?, 1, "first one-way");
    b.freeze(pid, true, 0)?;
    for v in [2u32, 3] {
        b.transact(
            0,
            5,
            TF_ONE_WAY | TF_UPDATE_TXN,
            &Payload::from_bytes(&v.to_ne_bytes()),
        )?;
        let r = b.next()?;
        ensure!(
            r == Return::TransactionPendingFrozen,
            "one-way {v} while frozen: expected BR_TRANSACTION_PENDING_FROZEN, got {}",
            r.name()
        );
    }
    b.freeze(pid, false, 0)?;
    go.send_u64(1)?;
    let mut rest = Vec::new();
    loop {
        let v = got.recv_u64()?;
        if v == 0 {
            break;
        }
        rest.push(v);
    }
    ensure_eq!(
        rest,
        vec![3],
        "one-ways delivered after the held one (2 superseded by 3)"
    );
    p.join()
}

/// A manager that holds call 1 unanswered until `release` gets a byte.
fn spawn_holder(c: &Ctx, held: &Pipe, release: &Pipe) -> Result<Server, String> {
    spawn_ctxmgr(c, |b, rec| {
        if rec.td.code == 1 {
            let _ = held.send_u64(1);
            release.recv_u64()?;
        }
        std_handler(b, rec)
    })
}

/// With the `spawn_holder` server holding `caller`'s call 1 (made from another thread),
/// run `during`; then release the call and check that it completed.
fn while_held<F>(caller: &Binder, held: &Pipe, release: &Pipe, during: F) -> TResult
where
    F: FnOnce() -> TResult,
{
    std::thread::scope(|s| {
        let h = s.spawn(|| caller.call(0, 1, &Payload::new()));
        held.recv_u64()?;
        during()?;
        release.send_u64(1)?;
        h.join().unwrap()?;
        Ok(())
    })
}

fn freeze_with_pending_reply_eagain(c: &Ctx) -> TResult {
    let held = Pipe::new()?;
    let release = Pipe::new()?;
    let srv = spawn_holder(c, &held, &release)?;
    let b = client(c)?;
    let caller = client(c)?;
    while_held(&caller, &held, &release, || {
        expect_errno(
            b.freeze(srv.pid, true, 0),
            libc::EAGAIN,
            "BINDER_FREEZE with a call in progress",
        )?;
        // The failed freeze left the process unfrozen.
        let i = b.frozen_info(srv.pid)?;
        ensure_eq!(i.async_recv, 0, "async_recv");
        Ok(())
    })?;
    still_works(&b)?;
    srv.kill();
    Ok(())
}

// 7.2 upstream Rust: BUG: BINDER_FREEZE waits only while outstanding_txns > 0, but Rust drops
//   that count on delivery (transaction.rs:Transaction::do_work), so a call being handled returns
//   EAGAIN at once instead of waiting for the timeout (process.rs:Process::ioctl_freeze)
//   (docs/oracle.md)
fn freeze_timeout_waits_then_eagain(c: &Ctx) -> TResult {
    let held = Pipe::new()?;
    let release = Pipe::new()?;
    let srv = spawn_holder(c, &held, &release)?;
    let b = client(c)?;
    let caller = client(c)?;
    while_held(&caller, &held, &release, || {
        let t0 = Instant::now();
        expect_errno(
            b.freeze(srv.pid, true, 300),
            libc::EAGAIN,
            "BINDER_FREEZE(timeout 300ms) with a call in progress",
        )?;
        let dt = t0.elapsed();
        ensure!(
            dt >= Duration::from_millis(250),
            "BINDER_FREEZE returned after {dt:?}, before its 300 ms timeout"
        );
        Ok(())
    })?;
    srv.kill();
    Ok(())
}

fn frozen_info_pending_bit(c: &Ctx) -> TResult {
    let held = Pipe::new()?;
    let release = Pipe::new()?;
    let srv = spawn_holder(c, &held, &release)?;
    let b = client(c)?;
    let caller = client(c)?;
    while_held(&caller, &held, &release, || {
        let i = b.frozen_info(srv.pid)?;
        ensure_eq!(
            i.sync_recv,
            2,
            "sync_recv with a transaction in progress (bit 1)"
        );
        Ok(())
    })?;
    // The caller has its reply, but the server may still be inside its BC_REPLY: C frees
    // the answered transaction (and drops outstanding_txns) after it has queued the reply,
    // so a preempted server shows the bit for a moment. It must clear once the reply is done.
    let mut last = 0;
    let cleared = wait_until(Duration::from_secs(2), || match b.frozen_info(srv.pid) {
        Ok(i) => {
            last = i.sync_recv;
            last == 0
        }
        Err(_) => false,
    });
    ensure!(
        cleared,
        "sync_recv afterwards: {last} 2 s after the call returned (expected 0)"
    );
    srv.kill();
    Ok(())
}

fn unfreeze_clears_recv_flags(c: &Ctx) -> TResult {
    with_ctxmgr(c, std_handler, |srv, b| {
        b.freeze(srv.pid, true, 0)?;
        expect_frozen_reply(b, "call while frozen")?;
        b.transact(0, CODE_ECHO, TF_ONE_WAY, &Payload::new())?;
        expect_br(b, BR_TRANSACTION_PENDING_FROZEN, "one-way while frozen")?;
        let i = b.frozen_info(srv.pid)?;
        ensure_eq!(
            (i.sync_recv & 1, i.async_recv),
            (1, 1),
            "flags while frozen"
        );
        b.freeze(srv.pid, false, 0)?;
        let i = b.frozen_info(srv.pid)?;
        ensure_eq!(
            (i.sync_recv & 1, i.async_recv),
            (0, 0),
            "flags after unfreezing"
        );
        Ok(())
    })
}

fn freeze_twice_ok(c: &Ctx) -> TResult {
    with_ctxmgr(c, std_handler, |srv, b| {
        expect_ok(b.freeze(srv.pid, true, 0), "freeze")?;
        expect_ok(b.freeze(srv.pid, true, 10), "freeze again")?;
        expect_frozen_reply(b, "call while frozen")?;
        expect_ok(b.freeze(srv.pid, false, 0), "unfreeze")?;
        still_works(b)?;
        Ok(())
    })
}
