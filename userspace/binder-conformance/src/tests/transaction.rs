//! transaction: BC_TRANSACTION / BC_REPLY / BR_TRANSACTION / BR_REPLY semantics.

use crate::common::*;
use crate::Ctx;
use binder_uapi::harness::{fork_proc, geteuid, getpid, Pipe};
use binder_uapi::*;
use std::time::Duration;

crate::tests!(
    "transaction",
    sender_identity,
    oneway_sender_pid_zero,
    reply_fields,
    ctxmgr_target_ptr_cookie,
    code_passthrough,
    flags_passthrough,
    status_code_reply,
    no_context_manager_dead_reply,
    to_self_as_manager_failed,
    invalid_handle_failed_reply,
    reply_without_transaction,
    reply_twice,
    oneway_in_order,
    oneway_serialized_per_node,
    many_sequential_calls,
    large_payload,
    empty_payload,
    dead_manager_dead_reply,
    server_dies_before_reply,
    client_dies_before_reply,
    second_sync_before_reply_rejected,
    oneway_while_waiting_allowed,
    failed_stops_write_buffer,
    failed_then_works,
    transaction_sg_plain,
    reply_sg_plain,
    update_txn_flag_unfrozen,
    buffer_in_mapping,
    small_read_buffer,
    reply_sender_pid_zero,
    never_sent_codes,
    oneway_queue_is_per_node,
    sync_not_blocked_by_pending_oneway,
    reply_flags_passthrough,
    oneway_failed_copy_keeps_queue,
    oneway_failed_object_keeps_queue,
);

fn sender_identity(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let w = whoami(b, 0, 0)?;
        ensure_eq!(w.sender_pid, getpid(), "sender_pid");
        ensure_eq!(w.sender_euid, geteuid(), "sender_euid");
        ensure_eq!(w.code, CODE_WHOAMI, "code");
        // A second thread of the same process reports the same (process) pid.
        let r = std::thread::scope(|s| s.spawn(|| whoami(b, 0, 0)).join().unwrap())?;
        ensure_eq!(r.sender_pid, getpid(), "sender_pid from another thread");
        Ok(())
    })
}

fn oneway_sender_pid_zero(c: &Ctx) -> TResult {
    let got = Pipe::new()?;
    let srv = spawn_ctxmgr(c, |_, rec| {
        let mut v = Vec::new();
        v.extend_from_slice(&rec.td.sender_pid.to_ne_bytes());
        v.extend_from_slice(&rec.td.sender_euid.to_ne_bytes());
        v.extend_from_slice(&rec.td.flags.to_ne_bytes());
        let _ = got.send(&v);
        Ok(Step::Nothing)
    })?;
    let b = client(c)?;
    b.transact(0, 1, TF_ONE_WAY, &Payload::from_bytes(b"x"))?;
    b.expect(BR_TRANSACTION_COMPLETE)?;
    let v = got.recv_exact(12, Duration::from_secs(10))?;
    let pid = i32::from_ne_bytes(v[0..4].try_into().unwrap());
    let euid = u32::from_ne_bytes(v[4..8].try_into().unwrap());
    let flags = u32::from_ne_bytes(v[8..12].try_into().unwrap());
    ensure_eq!(pid, 0, "sender_pid of a one-way transaction");
    ensure_eq!(euid, geteuid(), "sender_euid of a one-way transaction");
    ensure_eq!(flags & TF_ONE_WAY, TF_ONE_WAY, "TF_ONE_WAY in flags");
    srv.kill();
    Ok(())
}

fn reply_fields(c: &Ctx) -> TResult {
    let srv = spawn_ctxmgr(c, |b, _rec| {
        let mut w = WriteBuf::new();
        let mut p = Payload::new();
        p.bytes(b"reply");
        // The reply's code field is passed through to BR_REPLY.
        let td = binder_transaction_data {
            code: 0x77,
            flags: 0,
            data_size: 5,
            buffer: p.data.as_ptr() as u64,
            ..Default::default()
        };
        w.raw_transaction(BC_REPLY, &td);
        b.write(&w).map_err(|e| e.to_string())?;
        Ok(Step::Nothing)
    })?;
    let b = client(c)?;
    let r = b.call_nofree(0, 5, &Payload::from_bytes(b"q"))?;
    ensure_eq!(r.td.target, 0, "BR_REPLY target.ptr");
    ensure_eq!(r.td.cookie, 0, "BR_REPLY cookie");
    ensure_eq!(r.td.code, 0x77, "BR_REPLY code");
    ensure_eq!(r.data, b"reply".to_vec(), "BR_REPLY data");
    ensure_eq!(r.td.offsets_size, 0, "offsets_size");
    ensure_eq!(r.td.sender_euid, geteuid(), "sender_euid");
    expect_ok(b.free_buffer(r.td.buffer), "BC_FREE_BUFFER")?;
    srv.kill();
    Ok(())
}

fn reply_sender_pid_zero(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let r = b.call(0, CODE_ECHO, &Payload::from_bytes(b"abc"))?;
        ensure_eq!(r.td.sender_pid, 0, "BR_REPLY sender_pid");
        Ok(())
    })
}

fn ctxmgr_target_ptr_cookie(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let w = whoami(&b, 0, 0)?;
    ensure_eq!(
        (w.target, w.cookie),
        (0, 0),
        "BR_TRANSACTION target/cookie for a plain manager"
    );
    srv.kill();
    // Now a manager registered with BINDER_SET_CONTEXT_MGR_EXT.
    let c2 = c;
    let ready = Pipe::new()?;
    let dev = c2.dev.clone();
    let p = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        // The old manager's release may still be in flight.
        let ok = harness::wait_until(Duration::from_secs(10), || {
            b.set_context_mgr_ext(0, 0xabc0, 0xdef0).is_ok()
        });
        ensure!(ok, "BINDER_SET_CONTEXT_MGR_EXT never succeeded");
        b.enter_looper()?;
        ready.send_u64(1)?;
        serve_loop(&b, std_handler)
    })?;
    ready.recv_u64()?;
    let w = whoami(&b, 0, 0)?;
    ensure_eq!(
        (w.target, w.cookie),
        (0xabc0, 0xdef0),
        "BR_TRANSACTION target/cookie for an _EXT manager"
    );
    p.kill();
    Ok(())
}

fn code_passthrough(c: &Ctx) -> TResult {
    let got = Pipe::new()?;
    let srv = spawn_ctxmgr(c, |_, rec| {
        let _ = got.send_u64(rec.td.code as u64);
        Ok(Step::Reply(Payload::new()))
    })?;
    let b = client(c)?;
    for code in [0u32, 1, 0x00ff_ffff, 0x5f4e_5446, u32::MAX] {
        b.call(0, code, &Payload::new())?;
        let seen = got.recv_u64()? as u32;
        ensure_eq!(seen, code, "code seen by the server");
    }
    srv.kill();
    Ok(())
}

fn flags_passthrough(c: &Ctx) -> TResult {
    with_std(c, |b| {
        for f in [
            0,
            TF_ACCEPT_FDS,
            TF_ROOT_OBJECT,
            TF_STATUS_CODE,
            TF_CLEAR_BUF,
            0x1000_0000,
        ] {
            let w = whoami(b, 0, f)?;
            ensure_eq!(w.flags, f, &format!("flags seen for {f:#x}"));
        }
        Ok(())
    })
}

fn status_code_reply(c: &Ctx) -> TResult {
    let srv = spawn_ctxmgr(c, |_, _| Ok(Step::Status(-22)))?;
    let b = client(c)?;
    let r = b.call(0, 1, &Payload::new())?;
    ensure_eq!(
        r.td.flags & TF_STATUS_CODE,
        TF_STATUS_CODE,
        "TF_STATUS_CODE in BR_REPLY flags"
    );
    ensure_eq!(r.data, (-22i32).to_ne_bytes().to_vec(), "status payload");
    srv.kill();
    Ok(())
}

fn no_context_manager_dead_reply(c: &Ctx) -> TResult {
    let b = client(c)?;
    let mut w = WriteBuf::new();
    w.transaction(0, 1, 0, &Payload::from_bytes(b"x"));
    expect_txn_error(&b, &w, BR_DEAD_REPLY, "call to handle 0 without a manager")?;
    b.expect_nothing(100)?;
    // One-way gets the same.
    let mut w = WriteBuf::new();
    w.transaction(0, 1, TF_ONE_WAY, &Payload::from_bytes(b"x"));
    expect_txn_error(
        &b,
        &w,
        BR_DEAD_REPLY,
        "one-way to handle 0 without a manager",
    )?;
    Ok(())
}

fn to_self_as_manager_failed(c: &Ctx) -> TResult {
    let b = client(c)?;
    b.set_context_mgr()?;
    let mut w = WriteBuf::new();
    w.transaction(0, 1, 0, &Payload::from_bytes(b"x"));
    expect_txn_error(&b, &w, BR_FAILED_REPLY, "manager calling handle 0")?;
    expect_ext_err(
        &b,
        BR_FAILED_REPLY,
        -libc::EINVAL,
        "manager calling handle 0",
    )
}

fn invalid_handle_failed_reply(c: &Ctx) -> TResult {
    with_std(c, |b| {
        for h in [1u32, 2, 1000, u32::MAX] {
            let mut w = WriteBuf::new();
            w.transaction(h, 1, 0, &Payload::from_bytes(b"x"));
            expect_txn_error(b, &w, BR_FAILED_REPLY, &format!("call to handle {h}"))?;
            let mut w = WriteBuf::new();
            w.transaction(h, 1, TF_ONE_WAY, &Payload::from_bytes(b"x"));
            expect_txn_error(b, &w, BR_FAILED_REPLY, &format!("one-way to handle {h}"))?;
        }
        still_works(b)?;
        Ok(())
    })
}

// 7.2 upstream Rust: BC_REPLY without a transaction fails with -EINVAL
//   (thread.rs:InnerThread::pop_transaction_to_reply); C uses -EPROTO (docs/oracle.md)
fn reply_without_transaction(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut w = WriteBuf::new();
        w.reply(0, &Payload::from_bytes(b"r"));
        expect_txn_error(b, &w, BR_FAILED_REPLY, "BC_REPLY with no transaction")?;
        expect_ext_err(
            b,
            BR_FAILED_REPLY,
            -libc::EPROTO,
            "BC_REPLY with no transaction",
        )?;
        still_works(b)?;
        Ok(())
    })
}

fn reply_twice(c: &Ctx) -> TResult {
    let res = Pipe::new()?;
    let srv = spawn_ctxmgr(c, |b, rec| {
        if rec.td.code != 1 {
            return std_handler(b, rec);
        }
        let mut w = WriteBuf::new();
        w.reply(0, &Payload::from_bytes(b"one"));
        b.write(&w).map_err(|e| e.to_string())?;
        let first = b.next()?;
        let mut w = WriteBuf::new();
        w.reply(0, &Payload::from_bytes(b"two"));
        b.write(&w).map_err(|e| e.to_string())?;
        let second = b.next()?;
        let _ = res.send_u64(((first.code() as u64) << 32) | second.code() as u64);
        Ok(Step::Nothing)
    })?;
    let b = client(c)?;
    let r = b.call(0, 1, &Payload::new())?;
    ensure_eq!(r.data, b"one".to_vec(), "reply data");
    let v = res.recv_u64()?;
    ensure_eq!(
        (v >> 32) as u32,
        BR_TRANSACTION_COMPLETE,
        "server: first BC_REPLY result"
    );
    ensure!(
        v as u32 == BR_FAILED_REPLY,
        "server: second BC_REPLY: expected BR_FAILED_REPLY, got {}",
        br_name(v as u32).unwrap_or("?")
    );
    b.expect_nothing(100)?;
    still_works(&b)?;
    srv.kill();
    Ok(())
}

fn oneway_in_order(c: &Ctx) -> TResult {
    let got = Pipe::new()?;
    let srv = spawn_ctxmgr(c, |_, rec| {
        let _ = got.send_u64(rec.td.code as u64);
        Ok(Step::Nothing)
    })?;
    let b = client(c)?;
    for i in 0..20u32 {
        b.transact(0, i, TF_ONE_WAY, &Payload::from_bytes(&i.to_ne_bytes()))?;
        b.expect(BR_TRANSACTION_COMPLETE)?;
    }
    for i in 0..20u64 {
        let seen = got.recv_u64()?;
        ensure_eq!(seen, i, "one-way delivery order");
    }
    srv.kill();
    Ok(())
}

fn oneway_serialized_per_node(c: &Ctx) -> TResult {
    // The server does not free the first one-way buffer until told; the second one-way
    // to the same node must not be delivered before that.
    let got = Pipe::new()?;
    let go = Pipe::new()?;
    let dev = c.dev.clone();
    let p = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr()?;
        b.enter_looper()?;
        got.send_u64(0)?;
        let t1 = b.recv_txn()?;
        got.send_u64(t1.td.code as u64)?;
        if let Ok(Some(r)) = b.try_next(500) {
            fail!(
                "second one-way delivered before the first was freed: {}",
                r.name()
            );
        }
        go.recv_u64()?;
        b.free_buffer(t1.td.buffer)?;
        let t2 = b.recv_txn()?;
        got.send_u64(t2.td.code as u64)?;
        Ok(())
    })?;
    got.recv_u64()?;
    let b = client(c)?;
    b.transact(0, 1, TF_ONE_WAY, &Payload::new())?;
    b.expect(BR_TRANSACTION_COMPLETE)?;
    b.transact(0, 2, TF_ONE_WAY, &Payload::new())?;
    b.expect(BR_TRANSACTION_COMPLETE)?;
    ensure_eq!(got.recv_u64()?, 1, "first one-way code");
    go.send_u64(1)?;
    ensure_eq!(got.recv_u64()?, 2, "second one-way code");
    p.join()
}

fn many_sequential_calls(c: &Ctx) -> TResult {
    with_std(c, |b| {
        for i in 0..300u32 {
            let p = pattern(64 + (i as usize % 200), i as u8);
            let r = b.call(0, CODE_ECHO, &p)?;
            ensure!(r.data == p.data, "call {i}: echoed data differs");
        }
        Ok(())
    })
}

fn large_payload(c: &Ctx) -> TResult {
    with_std(c, |b| {
        for n in [4095usize, 4096, 4097, 65536, 256 * 1024] {
            let p = pattern(n, 7);
            let r = b.call(0, CODE_ECHO, &p)?;
            ensure!(r.data == p.data, "{n}-byte payload: echoed data differs");
        }
        Ok(())
    })
}

fn empty_payload(c: &Ctx) -> TResult {
    let got = Pipe::new()?;
    let srv = spawn_ctxmgr(c, |_, rec| {
        let _ = got.send_u64(rec.td.data_size);
        let _ = got.send_u64(rec.td.offsets_size);
        Ok(Step::Reply(Payload::new()))
    })?;
    let b = client(c)?;
    let r = b.call(0, 1, &Payload::new())?;
    ensure_eq!(got.recv_u64()?, 0, "data_size seen by the server");
    ensure_eq!(got.recv_u64()?, 0, "offsets_size seen by the server");
    ensure_eq!(r.td.data_size, 0, "reply data_size");
    srv.kill();
    Ok(())
}

fn dead_manager_dead_reply(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    still_works(&b)?;
    srv.kill();
    // Release of the dead manager is deferred; poll until handle 0 is dead.
    let mut last = String::new();
    let ok = harness::wait_until(Duration::from_secs(10), || {
        let mut w = WriteBuf::new();
        w.transaction(0, 1, 0, &Payload::new());
        match b.call_raw(&w) {
            Ok((_, Return::DeadReply)) => true,
            Ok((pre, r)) => {
                last = format!("{} {}", names(&pre), r.name());
                false
            }
            Err(e) => {
                last = e;
                false
            }
        }
    });
    ensure!(
        ok,
        "call to a dead manager: expected BR_DEAD_REPLY, last saw {last}"
    );
    Ok(())
}

fn server_dies_before_reply(c: &Ctx) -> TResult {
    let srv = spawn_ctxmgr(c, |_, _| {
        // Exit with the transaction unanswered.
        unsafe { libc::_exit(0) };
    })?;
    let b = client(c)?;
    b.transact(0, 1, 0, &Payload::from_bytes(b"x"))?;
    let v = b.collect_until(&[BR_DEAD_REPLY, BR_REPLY, BR_FAILED_REPLY])?;
    // The deferred BR_TRANSACTION_COMPLETE of the delivered call comes first.
    ensure!(
        v == vec![Return::TransactionComplete, Return::DeadReply],
        "expected [BR_TRANSACTION_COMPLETE, BR_DEAD_REPLY], got {}",
        names(&v)
    );
    drop(srv);
    Ok(())
}

fn client_dies_before_reply(c: &Ctx) -> TResult {
    // The client process sends a call and is killed; the server's late reply then
    // completes for the server (BR_TRANSACTION_COMPLETE) and the server keeps working.
    let stage = Pipe::new()?;
    let res = Pipe::new()?;
    let dev = c.dev.clone();
    let server = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr()?;
        b.enter_looper()?;
        stage.send_u64(0)?;
        let t = b.recv_txn()?;
        stage.send_u64(1)?;
        res.recv_u64_within(Duration::from_secs(10))?;
        let mut w = WriteBuf::new();
        w.free_buffer(t.td.buffer)
            .reply(0, &Payload::from_bytes(b"late"));
        b.write(&w)?;
        let r = b.next()?;
        ensure!(
            r == Return::TransactionComplete,
            "late reply to a dead client: expected BR_TRANSACTION_COMPLETE, got {}",
            r.name()
        );
        serve_loop(&b, std_handler)
    })?;
    stage.recv_u64()?;
    let dev2 = c.dev.clone();
    let cl = fork_proc(|| {
        let b = Binder::open_mapped(&dev2)?;
        b.transact(0, 1, 0, &Payload::from_bytes(b"q"))?;
        harness::sleep_ms(60_000);
        Ok(())
    })?;
    stage.recv_u64()?;
    cl.kill();
    harness::sleep_ms(200);
    res.send_u64(1)?;
    let b = client(c)?;
    still_works(&b)?;
    server.kill();
    Ok(())
}

// 7.2 upstream Rust: bad transaction stack gives -EINVAL
//   (thread.rs:Thread::top_of_transaction_stack); C uses -EPROTO (docs/oracle.md)
fn second_sync_before_reply_rejected(c: &Ctx) -> TResult {
    let hold = Pipe::new()?;
    let srv = spawn_ctxmgr(c, |b, rec| {
        if rec.td.code != 1 {
            return std_handler(b, rec);
        }
        // Hold the first call until the client has tried its second one.
        hold.recv_u64()?;
        Ok(Step::Reply(Payload::from_bytes(&rec.td.code.to_ne_bytes())))
    })?;
    let b = client(c)?;
    let mut w = WriteBuf::new();
    w.transaction(0, 1, 0, &Payload::new())
        .transaction(0, 2, 0, &Payload::new());
    b.write(&w)?;
    // The first call's deferred BR_TRANSACTION_COMPLETE is queued before the error.
    let v = b.collect_until(&[BR_FAILED_REPLY, BR_REPLY])?;
    ensure!(
        v == vec![Return::TransactionComplete, Return::FailedReply],
        "second call while the first awaits its reply: expected [BR_TRANSACTION_COMPLETE, BR_FAILED_REPLY], got {}",
        names(&v)
    );
    expect_ext_err(&b, BR_FAILED_REPLY, -libc::EPROTO, "second call")?;
    hold.send_u64(1)?;
    let v = b.collect_until(&[BR_REPLY])?;
    ensure_eq!(
        v.iter().map(|r| r.code()).collect::<Vec<_>>(),
        vec![BR_REPLY],
        "first call's completion"
    );
    let rec = b.received(v[0].txn().unwrap())?;
    ensure_eq!(rec.data, 1u32.to_ne_bytes().to_vec(), "first call's reply");
    b.free_buffer(rec.td.buffer)?;
    still_works(&b)?;
    srv.kill();
    Ok(())
}

fn oneway_while_waiting_allowed(c: &Ctx) -> TResult {
    let hold = Pipe::new()?;
    let got = Pipe::new()?;
    let srv = spawn_ctxmgr(c, |_, rec| {
        if rec.td.code == 1 {
            hold.recv_u64()?;
        }
        if rec.td.code == 2 {
            let _ = got.send_u64(2);
        }
        Ok(Step::Reply(Payload::new()))
    })?;
    let b = client(c)?;
    let mut w = WriteBuf::new();
    w.transaction(0, 1, 0, &Payload::new())
        .transaction(0, 2, TF_ONE_WAY, &Payload::new());
    let consumed = b.write(&w)?;
    ensure_eq!(consumed, w.len() as u64, "write_consumed");
    hold.send_u64(1)?;
    let v = b.collect_until(&[BR_REPLY])?;
    let codes: Vec<u32> = v.iter().map(|r| r.code()).collect();
    ensure!(
        !codes.contains(&BR_FAILED_REPLY),
        "one-way while waiting for a reply failed: {}",
        names(&v)
    );
    let tc = codes
        .iter()
        .filter(|c| **c == BR_TRANSACTION_COMPLETE)
        .count();
    ensure_eq!(tc, 2, "BR_TRANSACTION_COMPLETE count");
    b.free_buffer(v.last().unwrap().txn().unwrap().buffer)?;
    ensure_eq!(got.recv_u64()?, 2, "one-way delivered");
    srv.kill();
    Ok(())
}

fn failed_stops_write_buffer(c: &Ctx) -> TResult {
    // After a failed transaction the driver stops consuming the write buffer.
    with_std(c, |b| {
        let mut w = WriteBuf::new();
        w.transaction(99, 1, 0, &Payload::new());
        let first_len = w.len() as u64;
        w.transaction(0, 1, TF_ONE_WAY, &Payload::new());
        let (r, consumed) = b.write_consumed(&w);
        expect_ok(r, "BINDER_WRITE_READ")?;
        ensure_eq!(
            consumed,
            first_len,
            "write_consumed after a failed transaction"
        );
        expect_br(b, BR_FAILED_REPLY, "failed transaction")?;
        b.expect_nothing(200)?;
        still_works(b)?;
        Ok(())
    })
}

fn failed_then_works(c: &Ctx) -> TResult {
    with_std(c, |b| {
        for _ in 0..5 {
            let mut w = WriteBuf::new();
            w.transaction(42, 1, 0, &Payload::new());
            expect_txn_error(b, &w, BR_FAILED_REPLY, "call to handle 42")?;
            still_works(b)?;
        }
        Ok(())
    })
}

fn transaction_sg_plain(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let p = pattern(100, 3);
        let mut w = WriteBuf::new();
        w.transaction_sg(false, 0, CODE_ECHO, 0, &p, 0);
        let (pre, last) = b.call_raw(&w)?;
        ensure_eq!(pre, vec![Return::TransactionComplete], "before the reply");
        let td = match last {
            Return::Reply(td) => td,
            o => fail!("BC_TRANSACTION_SG: expected BR_REPLY, got {}", o.name()),
        };
        let rec = b.received(&td)?;
        ensure!(rec.data == p.data, "BC_TRANSACTION_SG echo differs");
        b.free_buffer(td.buffer)?;
        // With unused extra buffer space.
        let mut w = WriteBuf::new();
        w.transaction_sg(false, 0, CODE_ECHO, 0, &p, 64);
        let (_, last) = b.call_raw(&w)?;
        ensure!(
            last.code() == BR_REPLY,
            "BC_TRANSACTION_SG with buffers_size 64: got {}",
            last.name()
        );
        b.free_buffer(last.txn().unwrap().buffer)?;
        Ok(())
    })
}

fn reply_sg_plain(c: &Ctx) -> TResult {
    let srv = spawn_ctxmgr(c, |b, rec| {
        let mut w = WriteBuf::new();
        let _ = rec;
        w.transaction_sg(true, 0, 0, 0, &Payload::from_bytes(b"sg-reply"), 0);
        b.write(&w).map_err(|e| e.to_string())?;
        let r = b.next()?;
        if r != Return::TransactionComplete {
            return Err(format!(
                "BC_REPLY_SG: expected BR_TRANSACTION_COMPLETE, got {}",
                r.name()
            ));
        }
        Ok(Step::Nothing)
    })?;
    let b = client(c)?;
    let r = b.call(0, 1, &Payload::new())?;
    ensure_eq!(r.data, b"sg-reply".to_vec(), "BC_REPLY_SG data");
    srv.kill();
    Ok(())
}

fn update_txn_flag_unfrozen(c: &Ctx) -> TResult {
    // TF_UPDATE_TXN only matters for frozen targets: otherwise every one-way arrives.
    let got = Pipe::new()?;
    let srv = spawn_ctxmgr(c, |_, rec| {
        let _ = got.send_u64(rec.td.code as u64);
        Ok(Step::Nothing)
    })?;
    let b = client(c)?;
    for i in 1..=3u32 {
        b.transact(
            0,
            5,
            TF_ONE_WAY | TF_UPDATE_TXN,
            &Payload::from_bytes(&i.to_ne_bytes()),
        )?;
        b.expect(BR_TRANSACTION_COMPLETE)?;
    }
    for _ in 1..=3 {
        ensure_eq!(got.recv_u64()?, 5, "delivered code");
    }
    srv.kill();
    Ok(())
}

fn buffer_in_mapping(c: &Ctx) -> TResult {
    with_std(c, |b| {
        let mut p = Payload::new();
        p.bytes(b"abc");
        let r = b.call_nofree(0, CODE_GET_NODE, &Payload::new())?;
        let base = b.map_addr();
        let end = base + b.map_size() as u64;
        ensure!(
            r.td.buffer >= base && r.td.buffer < end,
            "reply buffer {:#x} outside the mapping {base:#x}..{end:#x}",
            r.td.buffer
        );
        ensure_eq!(
            r.td.offsets,
            r.td.buffer + ((r.td.data_size + 7) & !7),
            "offsets pointer"
        );
        ensure_eq!(r.td.offsets_size, 8, "offsets_size");
        b.free_buffer(r.td.buffer)?;
        let _ = p;
        Ok(())
    })
}

fn small_read_buffer(c: &Ctx) -> TResult {
    with_std(c, |b| {
        b.transact(0, 1, TF_ONE_WAY, &Payload::new())?;
        ensure!(b.poll(2000)?, "no work after a one-way");
        // A read buffer too small for any item only gets the leading BR_NOOP.
        let mut buf = [0u8; 8];
        let mut bwr = binder_write_read {
            read_size: 8,
            read_buffer: buf.as_mut_ptr() as u64,
            ..Default::default()
        };
        expect_ok(
            b.write_read_raw(&mut bwr),
            "BINDER_WRITE_READ with an 8-byte read buffer",
        )?;
        ensure_eq!(bwr.read_consumed, 4, "read_consumed");
        ensure_eq!(decode(&buf[..4]), vec![Return::Noop], "returns");
        // The item is still there for a normal read.
        b.expect(BR_TRANSACTION_COMPLETE)?;
        Ok(())
    })
}

fn never_sent_codes(c: &Ctx) -> TResult {
    // A varied workload never produces BR_ERROR, BR_OK, BR_ACQUIRE_RESULT,
    // BR_ATTEMPT_ACQUIRE, BR_FINISHED or anything undecodable.
    with_std(c, |b| {
        b.enter_looper()?;
        let mut all = Vec::new();
        for i in 0..10u32 {
            let mut w = WriteBuf::new();
            w.transaction(
                0,
                CODE_GET_NODE,
                0,
                Payload::new().u64(0x1000 + i as u64 * 0x10),
            );
            b.write(&w)?;
            let v = b.collect_until(&[BR_REPLY, BR_FAILED_REPLY, BR_DEAD_REPLY])?;
            if let Some(td) = v.last().and_then(|r| r.txn()) {
                b.free_buffer(td.buffer)?;
            }
            all.extend(v);
            let mut w = WriteBuf::new();
            w.transaction(0, CODE_ECHO, TF_ONE_WAY, &pattern(i as usize * 100, 1));
            w.transaction(42, 1, 0, &Payload::new());
            b.write(&w)?;
            all.extend(b.collect_until(&[BR_TRANSACTION_COMPLETE])?);
            all.extend(b.drain(50));
        }
        all.extend(b.drain(200));
        for r in &all {
            ensure!(
                ![
                    BR_ERROR,
                    BR_OK,
                    BR_ACQUIRE_RESULT,
                    BR_ATTEMPT_ACQUIRE,
                    BR_FINISHED
                ]
                .contains(&r.code())
                    && !matches!(r, Return::Unknown(_) | Return::Truncated(_)),
                "driver sent {}, which it never should",
                r.name()
            );
        }
        Ok(())
    })
}

/// A manager that hands out nodes (CODE_GET_NODE), holds every one-way buffer unfreed
/// and reports (target ptr, code) of each one-way it receives; sync calls are echoed.
fn spawn_oneway_holder(c: &Ctx, got: &Pipe) -> Result<harness::Proc, String> {
    let ready = Pipe::new().map_err(|e| e.to_string())?;
    let dev = c.dev.clone();
    let p = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr()?;
        b.enter_looper()?;
        ready.send_u64(1)?;
        loop {
            let r = b.next_within(60_000)?;
            match r {
                Return::Transaction(td) if td.flags & TF_ONE_WAY != 0 => {
                    got.send_u64(td.target)?;
                    got.send_u64(td.code as u64)?;
                }
                Return::Transaction(td) => {
                    let rec = b.received(&td)?;
                    if let Step::Reply(p) = std_handler(&b, &rec)? {
                        let mut w = WriteBuf::new();
                        w.free_buffer(td.buffer).reply(0, &p);
                        b.write(&w)?;
                    }
                }
                other => {
                    serve_one(&b, other, &mut |_, _| Ok(Step::Nothing))?;
                }
            }
        }
    })
    .map_err(|e| e.to_string())?;
    ready.recv_u64()?;
    Ok(p)
}

fn oneway_queue_is_per_node(c: &Ctx) -> TResult {
    // With a one-way to node X unfreed, further one-ways to X wait, but a one-way to
    // node Y is delivered.
    let got = Pipe::new()?;
    let srv = spawn_oneway_holder(c, &got)?;
    let b = client(c)?;
    let hx = get_node(&b, 0x1000)?;
    let hy = get_node(&b, 0x2000)?;
    for (h, code) in [(hx, 1u32), (hx, 2), (hy, 3)] {
        b.transact(h, code, TF_ONE_WAY, &Payload::new())?;
        b.expect(BR_TRANSACTION_COMPLETE)?;
    }
    let mut seen = Vec::new();
    for _ in 0..2 {
        seen.push((got.recv_u64()?, got.recv_u64()?));
    }
    seen.sort();
    ensure_eq!(
        seen,
        vec![(0x1000, 1), (0x2000, 3)],
        "one-ways delivered (target, code)"
    );
    let extra = got.recv_u64_within(Duration::from_millis(500));
    ensure!(
        extra.is_err(),
        "the second one-way to node X was delivered while the first was held"
    );
    srv.kill();
    Ok(())
}

fn sync_not_blocked_by_pending_oneway(c: &Ctx) -> TResult {
    let got = Pipe::new()?;
    let srv = spawn_oneway_holder(c, &got)?;
    let b = client(c)?;
    b.transact(0, 1, TF_ONE_WAY, &Payload::new())?;
    b.expect(BR_TRANSACTION_COMPLETE)?;
    ensure_eq!((got.recv_u64()?, got.recv_u64()?), (0, 1), "first one-way");
    b.transact(0, 2, TF_ONE_WAY, &Payload::new())?;
    b.expect(BR_TRANSACTION_COMPLETE)?;
    // The queued one-way does not hold up a synchronous call to the same node.
    let r = b.call(0, CODE_ECHO, &Payload::from_bytes(b"sync"))?;
    ensure_eq!(r.data, b"sync".to_vec(), "sync reply");
    srv.kill();
    Ok(())
}

fn reply_flags_passthrough(c: &Ctx) -> TResult {
    // BC_REPLY flags reach BR_REPLY unchanged, TF_ONE_WAY included.
    let srv = spawn_ctxmgr(c, |b, rec| {
        if rec.td.code != 1 {
            return std_handler(b, rec);
        }
        let mut w = WriteBuf::new();
        w.reply(
            TF_ONE_WAY | TF_ACCEPT_FDS | 0x100,
            &Payload::from_bytes(b"f"),
        );
        b.write(&w).map_err(|e| e.to_string())?;
        Ok(Step::Nothing)
    })?;
    let b = client(c)?;
    let r = b.call(0, 1, &Payload::new())?;
    ensure_eq!(
        r.td.flags,
        TF_ONE_WAY | TF_ACCEPT_FDS | 0x100,
        "BR_REPLY flags"
    );
    still_works(&b)?;
    srv.kill();
    Ok(())
}

/// What the holder of a one-way queue reports (`oneway_failure_keeps_queue`): a transaction's
/// code with DELIVERED, another return's BR code with OTHER, or QUIET when nothing arrived in
/// its window.
const DELIVERED: u64 = 1 << 32;
const OTHER: u64 = 1 << 33;
const QUIET: u64 = 0;

/// A one-way T1 to a node is delivered and its buffer held; T2 to the same node waits in the
/// node's queue; then the same sender's one-way T3 to that node fails after its buffer was
/// allocated (`send_t3` sends it and checks the error). T2 must still wait until T1's buffer is
/// freed, then arrive; T3 never arrives. C's failure path (`binder_transaction`,
/// `err_copy_data_failed` / `err_translate_failed`) frees T3's buffer without touching the
/// node's queue: only BC_FREE_BUFFER of T1 lets T2 go (`binder_free_buf`).
fn oneway_failure_keeps_queue(c: &Ctx, send_t3: impl Fn(&Binder) -> TResult) -> TResult {
    let got = Pipe::new()?;
    let go = Pipe::new()?;
    let dev = c.dev.clone();
    let report = |b: &Binder, ms: i32| -> Result<u64, String> {
        match b.try_next(ms).map_err(|e| e.to_string())? {
            Some(Return::Transaction(td)) => Ok(DELIVERED | td.code as u64),
            Some(other) => Ok(OTHER | other.code() as u64),
            None => Ok(QUIET),
        }
    };
    let p = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr()?;
        b.enter_looper()?;
        got.send_u64(0)?;
        let t1 = b.recv_txn()?;
        got.send_u64(DELIVERED | t1.td.code as u64)?;
        // The client has sent T2 and the failing T3: nothing may arrive while T1 is held.
        go.recv_u64()?;
        got.send_u64(report(&b, 500)?)?;
        go.recv_u64()?;
        b.free_buffer(t1.td.buffer)?;
        got.send_u64(report(&b, 5000)?)?;
        // T3 failed: it never comes.
        got.send_u64(report(&b, 300)?)?;
        Ok(())
    })?;
    got.recv_u64()?;
    let b = client(c)?;
    b.transact(0, 1, TF_ONE_WAY, &Payload::from_bytes(b"T1"))?;
    b.expect(BR_TRANSACTION_COMPLETE)?;
    ensure_eq!(got.recv_u64()?, DELIVERED | 1, "T1 delivered");
    b.transact(0, 2, TF_ONE_WAY, &Payload::from_bytes(b"T2"))?;
    b.expect(BR_TRANSACTION_COMPLETE)?;
    send_t3(&b)?;
    go.send_u64(1)?;
    let early = got.recv_u64()?;
    ensure!(
        early == QUIET,
        "while T1's buffer was still held and after a one-way to the same node failed, \
         {} arrived (expected nothing: T2 must wait; the failure let the node's one-way \
         queue go)",
        br_or_code(early)
    );
    go.send_u64(2)?;
    ensure_eq!(
        got.recv_u64()?,
        DELIVERED | 2,
        "after BC_FREE_BUFFER of T1: T2 delivered"
    );
    let late = got.recv_u64()?;
    ensure!(
        late == QUIET,
        "after T2, nothing more: got {}",
        br_or_code(late)
    );
    p.join()
}

/// Names a report of the holder for messages.
fn br_or_code(v: u64) -> String {
    match v {
        QUIET => "nothing".to_string(),
        v if v & DELIVERED != 0 => format!("the transaction with code {}", v as u32),
        v => br_name(v as u32).unwrap_or("an unknown return").to_string(),
    }
}

// 4.1 of review-36: a one-way whose data cannot be read (EFAULT after the allocation).
fn oneway_failed_copy_keeps_queue(c: &Ctx) -> TResult {
    oneway_failure_keeps_queue(c, |b| {
        let td = binder_transaction_data {
            target: 0,
            code: 3,
            flags: TF_ONE_WAY,
            data_size: 16,
            buffer: 0,
            ..Default::default()
        };
        let mut w = WriteBuf::new();
        w.raw_transaction(BC_TRANSACTION, &td);
        expect_txn_error(
            b,
            &w,
            BR_FAILED_REPLY,
            "one-way T3 with a NULL data pointer",
        )?;
        expect_ext_err(
            b,
            BR_FAILED_REPLY,
            -libc::EFAULT,
            "one-way T3 with a NULL data pointer",
        )
    })
}

// 4.1 of review-36: a one-way whose object fails translation (a handle the sender does
// not hold; C -EINVAL, upstream Rust -ENOENT: only the BR_FAILED_REPLY is checked).
fn oneway_failed_object_keeps_queue(c: &Ctx) -> TResult {
    oneway_failure_keeps_queue(c, |b| {
        let mut p = Payload::new();
        p.u64(0x7733);
        p.handle(77);
        let mut w = WriteBuf::new();
        w.transaction(0, 3, TF_ONE_WAY, &p);
        expect_txn_error(
            b,
            &w,
            BR_FAILED_REPLY,
            "one-way T3 carrying handle 77, which it does not hold",
        )
    })
}
