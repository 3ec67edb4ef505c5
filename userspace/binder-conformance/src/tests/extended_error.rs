//! extended_error: BINDER_GET_EXTENDED_ERROR after successes and each failure kind.

use crate::common::*;
use crate::Ctx;
use binder_uapi::*;

crate::tests!(
    "extended_error",
    success_reports_ok_with_id,
    read_clears,
    invalid_handle,
    no_context_manager,
    next_transaction_resets,
    ids_increase,
    per_thread,
    replier_of_failed_reply_sees_ok,
    dead_target_no_mmap,
    failed_reply_keeps_pending_error,
);

fn success_reports_ok_with_id(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    still_works(&b)?;
    let e = ext_err(&b)?;
    ensure_eq!(
        (e.command, e.param),
        (BR_OK, 0),
        "(command, param) after a successful call"
    );
    ensure!(e.id != 0, "id of the last transaction is 0");
    srv.kill();
    Ok(())
}

fn read_clears(c: &Ctx) -> TResult {
    let b = client(c)?;
    let mut w = WriteBuf::new();
    w.transaction(3, 1, 0, &Payload::new());
    expect_txn_error(&b, &w, BR_FAILED_REPLY, "call to handle 3")?;
    let e = ext_err(&b)?;
    ensure_eq!(e.command, BR_FAILED_REPLY, "command");
    let e = ext_err(&b)?;
    ensure_eq!(
        e,
        binder_extended_error {
            id: 0,
            command: BR_OK,
            param: 0
        },
        "second read"
    );
    Ok(())
}

// 7.2 upstream Rust: unknown handle: (BR_FAILED_REPLY, -ENOENT) from
//   process.rs:Process::get_node_from_handle; C -EINVAL (docs/oracle.md)
fn invalid_handle(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let mut w = WriteBuf::new();
    w.transaction(9, 1, 0, &Payload::new());
    expect_txn_error(&b, &w, BR_FAILED_REPLY, "call to handle 9")?;
    let e = ext_err(&b)?;
    ensure_eq!(
        (e.command, e.param),
        (BR_FAILED_REPLY, -libc::EINVAL),
        "(command, param)"
    );
    ensure!(e.id != 0, "id is 0");
    srv.kill();
    Ok(())
}

// 7.2 upstream Rust: no manager: BinderError::new_dead (context.rs:Context::get_manager_node)
//   has no errno, extended error stays (BR_OK, 0); C (BR_DEAD_REPLY, -EINVAL) (docs/oracle.md)
fn no_context_manager(c: &Ctx) -> TResult {
    let b = client(c)?;
    let mut w = WriteBuf::new();
    w.transaction(0, 1, 0, &Payload::new());
    expect_txn_error(&b, &w, BR_DEAD_REPLY, "call without a manager")?;
    expect_ext_err(&b, BR_DEAD_REPLY, -libc::EINVAL, "call without a manager")
}

fn next_transaction_resets(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let mut w = WriteBuf::new();
    w.transaction(9, 1, 0, &Payload::new());
    expect_txn_error(&b, &w, BR_FAILED_REPLY, "call to handle 9")?;
    still_works(&b)?;
    let e = ext_err(&b)?;
    ensure_eq!(
        (e.command, e.param),
        (BR_OK, 0),
        "after a later successful call"
    );
    srv.kill();
    Ok(())
}

fn ids_increase(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let mut ids = Vec::new();
    for _ in 0..3 {
        let mut w = WriteBuf::new();
        w.transaction(9, 1, 0, &Payload::new());
        expect_txn_error(&b, &w, BR_FAILED_REPLY, "call to handle 9")?;
        ids.push(ext_err(&b)?.id);
    }
    ensure!(
        ids[0] < ids[1] && ids[1] < ids[2],
        "ids not increasing: {ids:?}"
    );
    srv.kill();
    Ok(())
}

// 7.2 upstream Rust: a new thread's extended error has a fresh id (thread.rs:InnerThread::new);
//   C id 0 (docs/oracle.md)
fn per_thread(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let mut w = WriteBuf::new();
    w.transaction(9, 1, 0, &Payload::new());
    expect_txn_error(&b, &w, BR_FAILED_REPLY, "call to handle 9")?;
    let other = std::thread::scope(|s| s.spawn(|| b.extended_error()).join().unwrap())?;
    ensure_eq!(
        other,
        binder_extended_error {
            id: 0,
            command: BR_OK,
            param: 0
        },
        "another thread's extended error"
    );
    let e = ext_err(&b)?;
    ensure_eq!(e.command, BR_FAILED_REPLY, "this thread's extended error");
    srv.kill();
    Ok(())
}

fn replier_of_failed_reply_sees_ok(c: &Ctx) -> TResult {
    // A reply that fails (fd to a caller without TF_ACCEPT_FDS) is reported to the
    // caller; the replier gets BR_TRANSACTION_COMPLETE and an OK extended error.
    let res = harness::Pipe::new()?;
    let srv = spawn_ctxmgr(c, |b, rec| {
        if rec.td.code != 1 {
            return std_handler(b, rec);
        }
        let pp = harness::Pipe::new().map_err(|e| e.to_string())?;
        let mut p = Payload::new();
        p.fd(pp.r, 0);
        let mut w = WriteBuf::new();
        w.reply(0, &p);
        b.write(&w).map_err(|e| e.to_string())?;
        let r = b.next()?;
        let e = b.extended_error().map_err(|e| e.to_string())?;
        let _ = res.send_u64(r.code() as u64);
        let _ = res.send_u64(e.command as u64);
        let _ = res.send_u64(e.param as u32 as u64);
        Ok(Step::Nothing)
    })?;
    let b = client(c)?;
    b.transact(0, 1, 0, &Payload::new())?;
    b.collect_until(&[BR_FAILED_REPLY, BR_REPLY])?;
    ensure_eq!(
        res.recv_u64()? as u32,
        BR_TRANSACTION_COMPLETE,
        "replier's return"
    );
    ensure_eq!(
        res.recv_u64()? as u32,
        BR_OK,
        "replier's extended error command"
    );
    ensure_eq!(res.recv_u64()? as u32, 0, "replier's extended error param");
    expect_ext_err(&b, BR_FAILED_REPLY, -libc::EPERM, "caller")?;
    srv.kill();
    Ok(())
}

// 7.2 upstream Rust: no mapping: BinderError::new_dead (process.rs:Process::buffer_alloc) has
//   no errno, extended error stays (BR_OK, 0); C (BR_DEAD_REPLY, -ESRCH) (docs/oracle.md)
fn dead_target_no_mmap(c: &Ctx) -> TResult {
    // A manager that never mapped its buffer cannot receive: BR_DEAD_REPLY, -ESRCH.
    let ready = harness::Pipe::new()?;
    let dev = c.dev.clone();
    let p = harness::fork_proc(|| {
        let b = Binder::open(&dev)?;
        b.set_context_mgr()?;
        ready.send_u64(1)?;
        harness::sleep_ms(60_000);
        Ok(())
    })?;
    ready.recv_u64()?;
    let b = client(c)?;
    let mut w = WriteBuf::new();
    w.transaction(0, 1, 0, &Payload::from_bytes(b"x"));
    expect_txn_error(&b, &w, BR_DEAD_REPLY, "call to a manager without a mapping")?;
    expect_ext_err(
        &b,
        BR_DEAD_REPLY,
        -libc::ESRCH,
        "call to a manager without a mapping",
    )?;
    p.kill();
    Ok(())
}

/// Review-36 4.5: a reply that fails sets the caller's extended error only if the caller has
/// none pending. C `binder_set_txn_from_error`: "don't override existing errors"
/// (`from->ee.command == BR_OK`, under the caller's inner lock). While its call waits for the
/// reply, the caller's one-way with a NULL data pointer fails (BR_FAILED_REPLY, -EFAULT) and
/// it does not read its extended error; then the server's reply fails (an fd to a caller
/// without TF_ACCEPT_FDS, -EPERM). The caller reads the first error, not the reply's.
fn failed_reply_keeps_pending_error(c: &Ctx) -> TResult {
    let go = harness::Pipe::new()?;
    let res = harness::Pipe::new()?;
    let srv = spawn_ctxmgr(c, |b, rec| {
        if rec.td.code != 1 {
            return std_handler(b, rec);
        }
        go.recv_u64()?;
        let pp = harness::Pipe::new().map_err(|e| e.to_string())?;
        let mut p = Payload::new();
        p.fd(pp.r, 0);
        let mut w = WriteBuf::new();
        w.reply(0, &p);
        b.write(&w).map_err(|e| e.to_string())?;
        let _ = res.send_u64(b.next()?.code() as u64);
        Ok(Step::Nothing)
    })?;
    let b = client(c)?;
    b.transact(0, 1, 0, &Payload::new())?;
    // The one-way goes out while the call waits (C checks the stack only for calls).
    let td = binder_transaction_data {
        code: 2,
        flags: TF_ONE_WAY,
        data_size: 16,
        buffer: 0,
        ..Default::default()
    };
    let mut w = WriteBuf::new();
    w.raw_transaction(BC_TRANSACTION, &td);
    b.write(&w)?;
    let v = b.collect_until(&[BR_FAILED_REPLY])?;
    ensure!(
        !v.iter().any(|r| r.code() == BR_REPLY),
        "call answered before the server was told to: {}",
        names(&v)
    );
    go.send_u64(1)?;
    ensure_eq!(
        res.recv_u64()? as u32,
        BR_TRANSACTION_COMPLETE,
        "replier's return for its failed reply"
    );
    let v = b.collect_until(&[BR_FAILED_REPLY, BR_REPLY, BR_DEAD_REPLY])?;
    ensure!(
        v.last() == Some(&Return::FailedReply),
        "the call's outcome: expected BR_FAILED_REPLY (reply with an fd, no TF_ACCEPT_FDS), \
         got {}",
        names(&v)
    );
    let e = ext_err(&b)?;
    ensure!(
        (e.command, e.param) == (BR_FAILED_REPLY, -libc::EFAULT),
        "extended error: expected the pending one of the failed one-way (BR_FAILED_REPLY, \
         {}), got ({}, {}): the failed reply overwrote it",
        -libc::EFAULT,
        br_name(e.command).unwrap_or("?"),
        e.param
    );
    ensure!(e.id != 0, "id of the kept error is 0");
    // Read once, it is gone.
    ensure_eq!(
        ext_err(&b)?,
        binder_extended_error {
            id: 0,
            command: BR_OK,
            param: 0
        },
        "second read"
    );
    still_works(&b)?;
    srv.kill();
    Ok(())
}
