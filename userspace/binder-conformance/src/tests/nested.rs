//! nested: transactions made while handling a transaction (callbacks to the caller's
//! waiting thread, recursion, the todo-list and stack rules).

use crate::common::*;
use crate::Ctx;
use binder_uapi::*;

crate::tests!(
    "nested",
    callback_to_waiting_thread,
    recursion_depth_3,
    new_call_with_transaction_in_todo_rejected,
    oneway_callback_not_to_waiting_thread,
    nested_failure_keeps_outer_call,
    callback_across_three_processes,
);

const CALLER_NODE: u64 = 0xca11;

fn u32_of(d: &[u8]) -> u32 {
    u32::from_ne_bytes(d[0..4].try_into().unwrap())
}

fn callback_to_waiting_thread(c: &Ctx) -> TResult {
    // The manager calls back into the caller's node while handling the call; the
    // callback lands on the caller's waiting thread, with the manager as sender.
    let srv = spawn_ctxmgr(c, |b, rec| {
        if rec.offsets.is_empty() {
            return std_handler(b, rec);
        }
        let o: flat_binder_object = rec.object(rec.offsets[0]);
        let inner = b.call(o.handle(), 7, &Payload::from_bytes(b"callback"))?;
        let mut p = Payload::new();
        p.bytes(b"outer:").bytes(&inner.data);
        Ok(Step::Reply(p))
    })?;
    let b = client(c)?;
    let tid = harness::gettid();
    let seen = std::cell::RefCell::new(Vec::new());
    let mut p = Payload::new();
    p.binder(CALLER_NODE, 1, 0);
    let r = call_serving(&b, 0, 1, &p, &|_, rec| {
        seen.borrow_mut().push((
            rec.td.code,
            rec.td.target,
            rec.td.sender_pid,
            harness::gettid(),
            rec.data.clone(),
        ));
        Ok(Payload::from_bytes(b"inner"))
    })?;
    ensure_eq!(r.data, b"outer:inner".to_vec(), "outer reply");
    let seen = seen.into_inner();
    ensure_eq!(seen.len(), 1, "callbacks received");
    let (code, target, sender, on_tid, data) = &seen[0];
    ensure_eq!(*code, 7, "callback code");
    ensure_eq!(*target, CALLER_NODE, "callback target.ptr");
    ensure_eq!(*sender, srv.pid, "callback sender_pid");
    ensure_eq!(*on_tid, tid, "callback thread (the waiting one)");
    ensure_eq!(data.clone(), b"callback".to_vec(), "callback data");
    srv.kill();
    Ok(())
}

fn recursion_depth_3(c: &Ctx) -> TResult {
    // code n > 0: call the peer with n - 1 and answer (its answer + 1); code 0: answer 0.
    fn bounce(b: &Binder, rec: &Received, peer: u32) -> Result<Payload, String> {
        let n = rec.td.code;
        let mut p = Payload::new();
        if n == 0 {
            p.u32(0);
            return Ok(p);
        }
        let r = call_serving(b, peer, n - 1, &Payload::new(), &|b, rec| {
            bounce(b, rec, peer)
        })?;
        p.u32(u32_of(&r.data) + 1);
        Ok(p)
    }
    let peer_of_mgr = std::cell::Cell::new(0u32);
    let srv = spawn_ctxmgr(c, move |b, rec| {
        if !rec.offsets.is_empty() {
            let o: flat_binder_object = rec.object(rec.offsets[0]);
            peer_of_mgr.set(o.handle());
            b.acquire_handle(o.handle()).map_err(|e| e.to_string())?;
            return Ok(Step::Reply(Payload::new()));
        }
        let peer = peer_of_mgr.get();
        // Inside the manager, nested calls go to the client's node.
        let n = rec.td.code;
        let mut p = Payload::new();
        if n == 0 {
            p.u32(0);
        } else {
            let r = call_serving(b, peer, n - 1, &Payload::new(), &|b, rec| {
                bounce(b, rec, peer)
            })?;
            p.u32(u32_of(&r.data) + 1);
        }
        Ok(Step::Reply(p))
    })?;
    let b = client(c)?;
    let mut p = Payload::new();
    p.binder(CALLER_NODE, 1, 0);
    b.call(0, 100, &p)?;
    let depth = std::cell::Cell::new(0u32);
    let r = call_serving(&b, 0, 5, &Payload::new(), &|b, rec| {
        depth.set(depth.get().max(rec.td.code));
        bounce(b, rec, 0)
    })?;
    ensure_eq!(u32_of(&r.data), 5, "result of 5 nested calls");
    ensure_eq!(depth.get(), 4, "deepest callback code seen by the client");
    srv.kill();
    Ok(())
}

// 7.2 upstream Rust: rejected by thread.rs:Thread::top_of_transaction_stack with -EINVAL (Rust
//   has no todo-list check, see the TODO in transaction_inner); C uses -EPROTO (docs/oracle.md)
fn new_call_with_transaction_in_todo_rejected(c: &Ctx) -> TResult {
    // While a callback BR_TRANSACTION sits unread at the head of the thread's todo list,
    // a new synchronous call from that thread is refused (EPROTO).
    let srv = spawn_ctxmgr(c, |b, rec| {
        if rec.offsets.is_empty() {
            return std_handler(b, rec);
        }
        let o: flat_binder_object = rec.object(rec.offsets[0]);
        let inner = b.call(o.handle(), 9, &Payload::from_bytes(b"cb"))?;
        Ok(Step::Reply(Payload::from_bytes(&inner.data)))
    })?;
    let b = client(c)?;
    let mut p = Payload::new();
    p.binder(CALLER_NODE, 1, 0);
    b.transact(0, 1, 0, &p)?;
    // Wait for the callback to be queued, then read with a buffer too small for it:
    // only the node refcount items and BR_TRANSACTION_COMPLETE fit.
    ensure!(b.poll(5000)?, "no callback arrived");
    let mut got = Vec::new();
    // An 80-byte read fits BR_NOOP plus one 72-byte item at most, and stops before an
    // item when less than 76 bytes are left: read until BR_TRANSACTION_COMPLETE.
    for _ in 0..6 {
        let mut buf = [0u8; 80];
        let mut bwr = binder_write_read {
            read_size: 80,
            read_buffer: buf.as_mut_ptr() as u64,
            ..Default::default()
        };
        b.write_read_raw(&mut bwr)?;
        let v = decode(&buf[..bwr.read_consumed as usize]);
        got.extend(v.into_iter().filter(|r| *r != Return::Noop));
        if got.contains(&Return::TransactionComplete) || got.iter().any(|r| r.txn().is_some()) {
            break;
        }
    }
    ensure!(
        got.last() == Some(&Return::TransactionComplete),
        "small reads before the callback: {}",
        names(&got)
    );
    let pc = |r: &Return| match r {
        Return::Increfs(p) | Return::Acquire(p) => Some(*p),
        _ => None,
    };
    let mut w = WriteBuf::new();
    for r in &got {
        match (r, pc(r)) {
            (Return::Increfs(_), Some(p)) => {
                w.increfs_done(p.ptr, p.cookie);
            }
            (Return::Acquire(_), Some(p)) => {
                w.acquire_done(p.ptr, p.cookie);
            }
            _ => {}
        }
    }
    w.transaction(0, CODE_ECHO, 0, &Payload::new());
    b.write(&w)?;
    let r = b.next()?;
    let td = match r {
        Return::Transaction(td) => td,
        o => fail!(
            "expected the pending callback BR_TRANSACTION first, got {}",
            o.name()
        ),
    };
    let r = b.next()?;
    ensure!(
        r == Return::FailedReply,
        "new call with a transaction at the head of todo: expected BR_FAILED_REPLY, got {}",
        r.name()
    );
    expect_ext_err(
        &b,
        BR_FAILED_REPLY,
        -libc::EPROTO,
        "new call with a pending callback",
    )?;
    // Answer the callback; the outer call then completes.
    let mut w = WriteBuf::new();
    w.free_buffer(td.buffer)
        .reply(0, &Payload::from_bytes(b"late"));
    b.write(&w)?;
    let v = b.collect_until(&[BR_REPLY])?;
    let rec = b.received(v.last().unwrap().txn().unwrap())?;
    ensure_eq!(rec.data, b"late".to_vec(), "outer reply");
    b.free_buffer(rec.td.buffer)?;
    srv.kill();
    Ok(())
}

fn oneway_callback_not_to_waiting_thread(c: &Ctx) -> TResult {
    // A one-way sent back to the caller while it waits goes to the process queue, not to
    // the waiting thread: it arrives only after the call completed.
    let srv = spawn_ctxmgr(c, |b, rec| {
        if rec.offsets.is_empty() {
            return std_handler(b, rec);
        }
        let o: flat_binder_object = rec.object(rec.offsets[0]);
        b.transact(o.handle(), 3, TF_ONE_WAY, &Payload::from_bytes(b"ow"))
            .map_err(|e| e.to_string())?;
        let r = b.next_auto()?;
        if r != Return::TransactionComplete {
            return Err(format!("one-way callback: {}", r.name()));
        }
        Ok(Step::Reply(Payload::from_bytes(b"done")))
    })?;
    let b = client(c)?;
    b.enter_looper()?;
    let mut p = Payload::new();
    p.binder(CALLER_NODE, 1, 0);
    b.transact(0, 1, 0, &p)?;
    let mut before = Vec::new();
    loop {
        let r = b.next_auto()?;
        if let Return::Reply(td) = r {
            b.free_buffer(td.buffer)?;
            break;
        }
        before.push(r);
    }
    ensure_eq!(
        before,
        vec![Return::TransactionComplete],
        "returns before BR_REPLY"
    );
    let r = b.next_auto()?;
    match r {
        Return::Transaction(td) => {
            ensure_eq!(td.code, 3, "one-way callback code");
            ensure_eq!(td.flags & TF_ONE_WAY, TF_ONE_WAY, "one-way flag");
            b.free_buffer(td.buffer)?;
        }
        o => fail!(
            "expected the one-way callback after the reply, got {}",
            o.name()
        ),
    }
    srv.kill();
    Ok(())
}

fn nested_failure_keeps_outer_call(c: &Ctx) -> TResult {
    // A failing nested call (bad handle) inside the manager does not disturb the outer
    // call, which still gets its reply.
    let srv = spawn_ctxmgr(c, |b, rec| {
        if rec.td.code != 1 {
            return std_handler(b, rec);
        }
        let mut w = WriteBuf::new();
        w.transaction(55, 1, 0, &Payload::new());
        b.write(&w).map_err(|e| e.to_string())?;
        let r = b.next()?;
        Ok(Step::Reply(Payload::from_bytes(&r.code().to_ne_bytes())))
    })?;
    let b = client(c)?;
    let r = b.call(0, 1, &Payload::new())?;
    ensure_eq!(
        u32_of(&r.data),
        BR_FAILED_REPLY,
        "nested call result seen by the manager"
    );
    still_works(&b)?;
    srv.kill();
    Ok(())
}

fn callback_across_three_processes(c: &Ctx) -> TResult {
    // A calls the manager B, B calls the service C passing A's node along, C calls A's
    // node: the driver walks the transaction chain and delivers it to A's waiting thread.
    let mut svc_handle: Option<u32> = None;
    let mgr = spawn_ctxmgr(c, move |b, rec| match rec.td.code {
        CODE_REGISTER => {
            let o: flat_binder_object = rec.object(rec.offsets[0]);
            b.acquire_handle(o.handle()).map_err(|e| e.to_string())?;
            svc_handle = Some(o.handle());
            Ok(Step::Reply(Payload::new()))
        }
        1 => {
            let a: flat_binder_object = rec.object(rec.offsets[0]);
            let mut p = Payload::new();
            p.handle(a.handle());
            let svc = svc_handle.ok_or_else(|| "no service registered".to_string())?;
            let r = b.call(svc, 2, &p)?;
            Ok(Step::Reply(Payload::from_bytes(&r.data)))
        }
        _ => std_handler(b, rec),
    })?;
    let svc = spawn_service_with(c, 0xc000, |b, rec| {
        if rec.td.code != 2 {
            return std_handler(b, rec);
        }
        let a: flat_binder_object = rec.object(rec.offsets[0]);
        let r = b.call(a.handle(), 3, &Payload::from_bytes(b"from C"))?;
        Ok(Step::Reply(Payload::from_bytes(&r.data)))
    })?;
    let b = client(c)?;
    let tid = harness::gettid();
    let seen = std::cell::RefCell::new(Vec::new());
    let mut p = Payload::new();
    p.binder(CALLER_NODE, 1, 0);
    let r = call_serving(&b, 0, 1, &p, &|_, rec| {
        seen.borrow_mut().push((
            rec.td.code,
            rec.td.sender_pid,
            harness::gettid(),
            rec.data.clone(),
        ));
        Ok(Payload::from_bytes(b"A answers"))
    })?;
    ensure_eq!(r.data, b"A answers".to_vec(), "reply relayed back to A");
    let seen = seen.into_inner();
    ensure_eq!(seen.len(), 1, "callbacks at A");
    let (code, sender, on_tid, data) = &seen[0];
    ensure_eq!(*code, 3, "callback code");
    ensure_eq!(*sender, svc.pid, "callback sender (the service)");
    ensure_eq!(*on_tid, tid, "callback thread (A's waiting thread)");
    ensure_eq!(data.clone(), b"from C".to_vec(), "callback data");
    svc.kill();
    mgr.kill();
    Ok(())
}
