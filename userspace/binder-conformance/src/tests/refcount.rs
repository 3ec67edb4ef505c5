//! refcount: BC_INCREFS/ACQUIRE/RELEASE/DECREFS, BR_INCREFS/ACQUIRE/RELEASE/DECREFS and
//! the _DONE handshake.

use crate::common::*;
use crate::Ctx;
use binder_uapi::harness::{fork_proc, Pipe};
use binder_uapi::*;
use std::time::Duration;

crate::tests!(
    "refcount",
    node_info_counts,
    release_decrefs_to_owner,
    manager_acquire_desc0_rejected,
    handle0_ref_by_client,
    unknown_handle_ignored,
    dec_below_zero_ignored,
    done_for_unknown_node_ignored,
    done_without_pending_ignored,
    done_cookie_mismatch_ignored,
    unacquired_ref_dropped_with_buffer,
    acquired_ref_survives_buffer,
    owner_death_dead_reply,
    increfs_then_acquire_order,
);

/// A manager that takes a node from the client (code 1), then reports node info for it
/// after code 2 (as is), code 3 (after BC_RELEASE), code 4 (after BC_DECREFS).
fn spawn_ref_holder(c: &Ctx) -> Result<harness::Proc, String> {
    let ready = Pipe::new().map_err(|e| e.to_string())?;
    let dev = c.dev.clone();
    let p = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr()?;
        b.enter_looper()?;
        ready.send_u64(1)?;
        let mut h = 0u32;
        loop {
            let t = b.recv_txn()?;
            let mut w = WriteBuf::new();
            match t.td.code {
                1 => {
                    let o: flat_binder_object = t.object(t.offsets[0]);
                    h = o.handle();
                    w.increfs(h).acquire(h);
                }
                3 => {
                    w.release(h);
                }
                4 => {
                    w.decrefs(h);
                }
                _ => {}
            }
            b.write(&w)?;
            let mut p = Payload::new();
            match b.node_info_for_ref(h) {
                Ok(i) => {
                    p.u32(0).u32(i.strong_count).u32(i.weak_count);
                }
                Err(e) => {
                    p.u32(e.raw_os_error().unwrap_or(-1) as u32).u32(0).u32(0);
                }
            }
            b.reply_and_free(t.td.buffer, &p)?;
        }
    })
    .map_err(|e| e.to_string())?;
    ready.recv_u64()?;
    Ok(p)
}

fn info_of(r: &Received) -> (u32, u32, u32) {
    let u = |o: usize| u32::from_ne_bytes(r.data[o..o + 4].try_into().unwrap());
    (u(0), u(4), u(8))
}

// 7.2 upstream Rust: GET_NODE_INFO_FOR_REF counts differ: node.rs:Node::populate_counts reports
//   the node's strong/weak ref counts (weak includes remote refs); C reports
//   local_strong+internal_strong and local_weak_refs (docs/oracle.md)
fn node_info_counts(c: &Ctx) -> TResult {
    let srv = spawn_ref_holder(c)?;
    let b = client(c)?;
    let mut p = Payload::new();
    p.binder(0xaa00, 0xaa01, 0);
    let r = b.call(0, 1, &p)?;
    // During code 1 the manager holds the transaction's ref plus its own, and the owner
    // has not yet answered BR_INCREFS/BR_ACQUIRE: only check the ioctl worked.
    ensure_eq!(
        info_of(&r).0,
        0,
        "GET_NODE_INFO_FOR_REF errno during code 1"
    );
    let r = b.call(0, 2, &Payload::new())?;
    ensure_eq!(
        info_of(&r),
        (0, 1, 0),
        "(errno, strong, weak) with one strong+weak ref"
    );
    // The ioctl needs a strong ref: after BC_RELEASE the weak-only ref is refused.
    let r = b.call(0, 3, &Payload::new())?;
    ensure_eq!(
        info_of(&r).0,
        libc::EINVAL as u32,
        "errno after BC_RELEASE (weak ref only)"
    );
    let r = b.call(0, 4, &Payload::new())?;
    ensure_eq!(
        info_of(&r).0,
        libc::EINVAL as u32,
        "errno after BC_DECREFS (ref gone)"
    );
    srv.kill();
    Ok(())
}

fn release_decrefs_to_owner(c: &Ctx) -> TResult {
    let srv = spawn_ref_holder(c)?;
    let b = client(c)?;
    let mut p = Payload::new();
    p.binder(0xbb00, 0xbb01, 0);
    b.transact(0, 1, 0, &p)?;
    // The owner gets BR_INCREFS and BR_ACQUIRE for its new node with the reply.
    let v = b.collect_until(&[BR_REPLY])?;
    let pc = binder_ptr_cookie {
        ptr: 0xbb00,
        cookie: 0xbb01,
    };
    ensure_eq!(
        v[..3].to_vec(),
        vec![
            Return::Increfs(pc),
            Return::Acquire(pc),
            Return::TransactionComplete
        ],
        "owner's returns before BR_REPLY"
    );
    b.free_buffer(v[3].txn().unwrap().buffer)?;
    let mut w = WriteBuf::new();
    w.increfs_done(0xbb00, 0xbb01).acquire_done(0xbb00, 0xbb01);
    b.write(&w)?;
    b.call(0, 3, &Payload::new())?;
    b.call(0, 4, &Payload::new())?;
    // With the last ref gone, the owner is told to release and drop the node.
    b.enter_looper()?;
    let v = b.drain(500);
    ensure_eq!(
        v,
        vec![Return::Release(pc), Return::Decrefs(pc)],
        "owner's returns after the refs went"
    );
    srv.kill();
    Ok(())
}

fn manager_acquire_desc0_rejected(c: &Ctx) -> TResult {
    let b = client(c)?;
    b.set_context_mgr()?;
    for (name, code) in [("BC_INCREFS", BC_INCREFS), ("BC_ACQUIRE", BC_ACQUIRE)] {
        let mut w = WriteBuf::new();
        w.cmd_with(code, &0u32);
        let (r, consumed) = b.write_consumed(&w);
        expect_errno(r, libc::EINVAL, &format!("{name} 0 by the manager"))?;
        ensure_eq!(consumed, 0, "write_consumed");
    }
    // Release/decrefs of 0 are just invalid refs (ignored).
    let mut w = WriteBuf::new();
    w.release(0).decrefs(0);
    expect_ok(b.write(&w), "BC_RELEASE/BC_DECREFS 0 by the manager")?;
    Ok(())
}

fn handle0_ref_by_client(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    expect_ok(b.acquire_handle(0), "BC_INCREFS+BC_ACQUIRE 0")?;
    let mut p = Payload::new();
    p.handle(0);
    b.call(0, CODE_ECHO, &p)?;
    expect_ok(b.release_handle(0), "BC_RELEASE+BC_DECREFS 0")?;
    // The ref is gone: passing handle 0 as an object fails again.
    let mut w = WriteBuf::new();
    w.transaction(0, CODE_ECHO, 0, &p);
    expect_txn_error(
        &b,
        &w,
        BR_FAILED_REPLY,
        "handle 0 object after dropping the ref",
    )?;
    // ...but calling handle 0 does not need a ref.
    still_works(&b)?;
    srv.kill();
    Ok(())
}

fn unknown_handle_ignored(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let mut w = WriteBuf::new();
    w.increfs(5).acquire(6).release(7).decrefs(8);
    let (r, consumed) = b.write_consumed(&w);
    expect_ok(r, "refcount commands on handles that do not exist")?;
    ensure_eq!(consumed, w.len() as u64, "write_consumed");
    b.expect_nothing(100)?;
    // They did not create refs.
    let mut w = WriteBuf::new();
    w.transaction(5, 1, 0, &Payload::new());
    expect_txn_error(&b, &w, BR_FAILED_REPLY, "call to handle 5")?;
    still_works(&b)?;
    srv.kill();
    Ok(())
}

fn dec_below_zero_ignored(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let h = get_node(&b, 0x1000)?;
    // One strong, one weak: drop strong twice; the second is ignored, the ref survives
    // as weak (so a call fails), and the weak drop then deletes it.
    let mut w = WriteBuf::new();
    w.release(h).release(h);
    expect_ok(b.write(&w), "BC_RELEASE twice")?;
    let mut w = WriteBuf::new();
    w.transaction(h, CODE_ECHO, 0, &Payload::new());
    expect_txn_error(&b, &w, BR_FAILED_REPLY, "call through a weak-only handle")?;
    let mut w = WriteBuf::new();
    w.decrefs(h).decrefs(h);
    expect_ok(b.write(&w), "BC_DECREFS twice")?;
    still_works(&b)?;
    srv.kill();
    Ok(())
}

fn done_for_unknown_node_ignored(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let mut w = WriteBuf::new();
    w.increfs_done(0xdead, 0).acquire_done(0xbeef, 1);
    let (r, consumed) = b.write_consumed(&w);
    expect_ok(r, "_DONE for nodes that do not exist")?;
    ensure_eq!(consumed, w.len() as u64, "write_consumed");
    b.expect_nothing(100)?;
    still_works(&b)?;
    srv.kill();
    Ok(())
}

// 7.2 upstream Rust: GET_NODE_INFO_FOR_REF counts differ (node.rs:Node::populate_counts vs C
//   local/internal refs), not the _DONE handling (docs/oracle.md)
fn done_without_pending_ignored(c: &Ctx) -> TResult {
    let srv = spawn_ref_holder(c)?;
    let b = client(c)?;
    let mut p = Payload::new();
    p.binder(0xcc00, 0xcc01, 0);
    b.call(0, 1, &p)?; // next_auto answered BR_INCREFS/BR_ACQUIRE
    let mut w = WriteBuf::new();
    w.increfs_done(0xcc00, 0xcc01).acquire_done(0xcc00, 0xcc01);
    expect_ok(b.write(&w), "_DONE with nothing pending")?;
    // The counts are unchanged by the extra _DONEs.
    let r = b.call(0, 2, &Payload::new())?;
    ensure_eq!(info_of(&r), (0, 1, 0), "(errno, strong, weak)");
    srv.kill();
    Ok(())
}

// 7.2 upstream Rust: node.rs:Node::populate_counts does not count a pending
//   BR_ACQUIRE/BR_INCREFS handshake (C's local_strong/local_weak refs), so (1,1) instead of (2,1)
//   (docs/oracle.md)
fn done_cookie_mismatch_ignored(c: &Ctx) -> TResult {
    let srv = spawn_ref_holder(c)?;
    let b = client(c)?;
    let mut p = Payload::new();
    p.binder(0xdd00, 0xdd01, 0);
    b.transact(0, 1, 0, &p)?;
    let v = b.collect_until(&[BR_REPLY])?;
    b.free_buffer(v.last().unwrap().txn().unwrap().buffer)?;
    // Wrong cookie: ignored, the acquire stays pending (local refs held).
    let mut w = WriteBuf::new();
    w.increfs_done(0xdd00, 0x1).acquire_done(0xdd00, 0x1);
    expect_ok(b.write(&w), "_DONE with a wrong cookie")?;
    let r = b.call(0, 2, &Payload::new())?;
    ensure_eq!(
        info_of(&r),
        (0, 2, 1),
        "(errno, strong, weak) with the handshake still pending"
    );
    let mut w = WriteBuf::new();
    w.increfs_done(0xdd00, 0xdd01).acquire_done(0xdd00, 0xdd01);
    b.write(&w)?;
    let r = b.call(0, 2, &Payload::new())?;
    ensure_eq!(
        info_of(&r),
        (0, 1, 0),
        "(errno, strong, weak) after the right _DONEs"
    );
    srv.kill();
    Ok(())
}

fn unacquired_ref_dropped_with_buffer(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let rec = b.call_nofree(0, CODE_GET_NODE, &Payload::new())?;
    let h: flat_binder_object = rec.object(rec.offsets[0]);
    let h = h.handle();
    // While the buffer is held, the handle works.
    let w = whoami(&b, h, 0)?;
    ensure_eq!(w.target, NODE_PTR, "target through the handle");
    b.free_buffer(rec.td.buffer)?;
    let mut wb = WriteBuf::new();
    wb.transaction(h, CODE_ECHO, 0, &Payload::new());
    expect_txn_error(
        &b,
        &wb,
        BR_FAILED_REPLY,
        "call after the buffer holding the only ref was freed",
    )?;
    srv.kill();
    Ok(())
}

fn acquired_ref_survives_buffer(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let h = get_node(&b, 0x2200)?;
    for _ in 0..3 {
        let w = whoami(&b, h, 0)?;
        ensure_eq!(w.target, 0x2200, "target through an acquired handle");
    }
    srv.kill();
    Ok(())
}

fn owner_death_dead_reply(c: &Ctx) -> TResult {
    let mgr = spawn_svcmgr(c)?;
    let svc = spawn_service(c, 0x4400)?;
    let b = client(c)?;
    let h = lookup(&b)?;
    whoami(&b, h, 0)?;
    svc.kill();
    let mut last = String::new();
    let ok = harness::wait_until(Duration::from_secs(10), || {
        let mut w = WriteBuf::new();
        w.transaction(h, 1, 0, &Payload::new());
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
        "call to a node whose owner died: expected BR_DEAD_REPLY, last {last}"
    );
    // The ref itself is still valid (a dead ref): refcount commands on it are accepted.
    expect_ok(b.release_handle(h), "release of a dead ref")?;
    still_works(&b)?;
    mgr.kill();
    Ok(())
}

fn increfs_then_acquire_order(c: &Ctx) -> TResult {
    // A weak-only transfer produces only BR_INCREFS at the owner.
    let seen = Pipe::new()?;
    let srv = spawn_ctxmgr(c, |b, _rec| {
        let mut p = Payload::new();
        p.weak_binder(0x3300, 0x3301, 0);
        let mut w = WriteBuf::new();
        w.reply(0, &p);
        b.write(&w).map_err(|e| e.to_string())?;
        let v = b.collect_until(&[BR_TRANSACTION_COMPLETE])?;
        let pc = binder_ptr_cookie {
            ptr: 0x3300,
            cookie: 0x3301,
        };
        let ok = v == vec![Return::Increfs(pc), Return::TransactionComplete];
        let _ = seen.send(if ok { b"ok" } else { b"no" });
        Ok(Step::Nothing)
    })?;
    let b = client(c)?;
    let rec = b.call_nofree(0, 1, &Payload::new())?;
    let v = seen.recv_exact(2, Duration::from_secs(10))?;
    ensure!(
        v == b"ok",
        "owner of a weakly sent node: expected [BR_INCREFS, BR_TRANSACTION_COMPLETE]"
    );
    b.free_buffer(rec.td.buffer)?;
    srv.kill();
    Ok(())
}
