//! death: BC_REQUEST/CLEAR_DEATH_NOTIFICATION, BR_DEAD_BINDER, BC_DEAD_BINDER_DONE,
//! BR_CLEAR_DEATH_NOTIFICATION_DONE.

use crate::common::*;
use crate::Ctx;
use binder_uapi::*;
use std::time::Duration;

crate::tests!(
    "death",
    dead_binder_delivered,
    clear_death_done,
    request_on_dead_node_immediate,
    request_twice_single_notification,
    clear_wrong_cookie_ignored,
    clear_without_request_ignored,
    request_invalid_handle_ignored,
    clear_after_dead_before_done,
    dead_binder_done_unknown_cookie,
    manager_death,
    two_nodes_two_notifications,
    call_after_death_dead_reply,
    dead_binder_needs_no_done_for_calls,
    released_ref_no_notification,
    non_looper_thread_gets_notification,
);

const COOKIE: u64 = 0xdead_c0de_0000_0001;

/// svcmgr + service at 0x6600 + a looper client holding a handle to the service.
fn setup(c: &Ctx) -> TResult<(Server, Server, Binder, u32)> {
    let mgr = spawn_svcmgr(c)?;
    let svc = spawn_service(c, 0x6600)?;
    let b = client(c)?;
    let h = lookup(&b)?;
    b.enter_looper()?;
    Ok((mgr, svc, b, h))
}

fn wait_dead(b: &Binder, cookie: u64) -> TResult {
    let r = b.next_within(10_000)?;
    ensure!(
        r == Return::DeadBinder(cookie),
        "expected BR_DEAD_BINDER({cookie:#x}), got {r:?}"
    );
    Ok(())
}

/// Request a death notification (COOKIE) for `h`, kill the service behind it and wait
/// for BR_DEAD_BINDER(COOKIE).
fn request_kill_wait(b: &Binder, h: u32, svc: Server) -> TResult {
    let mut w = WriteBuf::new();
    w.request_death(h, COOKIE);
    b.write(&w)?;
    svc.kill();
    wait_dead(b, COOKIE)
}

/// BC_DEAD_BINDER_DONE(cookie).
fn dead_binder_done(b: &Binder, cookie: u64) -> TResult {
    let mut w = WriteBuf::new();
    w.dead_binder_done(cookie);
    b.write(&w)?;
    Ok(())
}

fn dead_binder_delivered(c: &Ctx) -> TResult {
    let (mgr, svc, b, h) = setup(c)?;
    let mut w = WriteBuf::new();
    w.request_death(h, COOKIE);
    expect_ok(b.write(&w), "BC_REQUEST_DEATH_NOTIFICATION")?;
    b.expect_nothing(200)?;
    svc.kill();
    wait_dead(&b, COOKIE)?;
    let mut w = WriteBuf::new();
    w.dead_binder_done(COOKIE);
    expect_ok(b.write(&w), "BC_DEAD_BINDER_DONE")?;
    b.expect_nothing(200)?;
    mgr.kill();
    Ok(())
}

fn clear_death_done(c: &Ctx) -> TResult {
    let (mgr, svc, b, h) = setup(c)?;
    let mut w = WriteBuf::new();
    w.request_death(h, COOKIE).clear_death(h, COOKIE);
    expect_ok(b.write(&w), "request + clear")?;
    let r = b.next()?;
    ensure_eq!(r, Return::ClearDeathNotificationDone(COOKIE), "after clear");
    svc.kill();
    // No BR_DEAD_BINDER for a cleared notification.
    b.expect_nothing(1000)?;
    mgr.kill();
    Ok(())
}

fn request_on_dead_node_immediate(c: &Ctx) -> TResult {
    let (mgr, svc, b, h) = setup(c)?;
    svc.kill();
    let ok = harness::wait_until(Duration::from_secs(10), || {
        let mut w = WriteBuf::new();
        w.transaction(h, 1, 0, &Payload::new());
        matches!(b.call_raw(&w), Ok((_, Return::DeadReply)))
    });
    ensure!(ok, "the service never became dead");
    let mut w = WriteBuf::new();
    w.request_death(h, COOKIE);
    b.write(&w)?;
    wait_dead(&b, COOKIE)?;
    dead_binder_done(&b, COOKIE)?;
    mgr.kill();
    Ok(())
}

fn request_twice_single_notification(c: &Ctx) -> TResult {
    let (mgr, svc, b, h) = setup(c)?;
    let mut w = WriteBuf::new();
    w.request_death(h, COOKIE).request_death(h, COOKIE + 1);
    let (r, consumed) = b.write_consumed(&w);
    expect_ok(r, "two requests (second ignored)")?;
    ensure_eq!(consumed, w.len() as u64, "write_consumed");
    svc.kill();
    wait_dead(&b, COOKIE)?;
    dead_binder_done(&b, COOKIE)?;
    b.expect_nothing(300)?;
    mgr.kill();
    Ok(())
}

fn clear_wrong_cookie_ignored(c: &Ctx) -> TResult {
    let (mgr, svc, b, h) = setup(c)?;
    let mut w = WriteBuf::new();
    w.request_death(h, COOKIE).clear_death(h, COOKIE + 5);
    expect_ok(b.write(&w), "request + clear with a wrong cookie")?;
    b.expect_nothing(200)?;
    svc.kill();
    wait_dead(&b, COOKIE)?;
    mgr.kill();
    Ok(())
}

fn clear_without_request_ignored(c: &Ctx) -> TResult {
    let (mgr, svc, b, h) = setup(c)?;
    let mut w = WriteBuf::new();
    w.clear_death(h, COOKIE);
    expect_ok(b.write(&w), "clear without a request")?;
    b.expect_nothing(200)?;
    still_works(&b)?;
    svc.kill();
    mgr.kill();
    Ok(())
}

fn request_invalid_handle_ignored(c: &Ctx) -> TResult {
    let (mgr, svc, b, _h) = setup(c)?;
    let mut w = WriteBuf::new();
    w.request_death(77, COOKIE).clear_death(78, COOKIE);
    let (r, consumed) = b.write_consumed(&w);
    expect_ok(r, "death commands on handles that do not exist")?;
    ensure_eq!(consumed, w.len() as u64, "write_consumed");
    b.expect_nothing(200)?;
    still_works(&b)?;
    svc.kill();
    mgr.kill();
    Ok(())
}

fn clear_after_dead_before_done(c: &Ctx) -> TResult {
    let (mgr, svc, b, h) = setup(c)?;
    request_kill_wait(&b, h, svc)?;
    let mut w = WriteBuf::new();
    w.clear_death(h, COOKIE);
    expect_ok(b.write(&w), "clear after BR_DEAD_BINDER")?;
    // The clear completes only once the death is acknowledged.
    b.expect_nothing(300)?;
    dead_binder_done(&b, COOKIE)?;
    let r = b.next()?;
    ensure_eq!(
        r,
        Return::ClearDeathNotificationDone(COOKIE),
        "after BC_DEAD_BINDER_DONE"
    );
    mgr.kill();
    Ok(())
}

fn dead_binder_done_unknown_cookie(c: &Ctx) -> TResult {
    let (mgr, svc, b, _h) = setup(c)?;
    let mut w = WriteBuf::new();
    w.dead_binder_done(0x1234);
    expect_ok(b.write(&w), "BC_DEAD_BINDER_DONE for nothing")?;
    b.expect_nothing(200)?;
    still_works(&b)?;
    svc.kill();
    mgr.kill();
    Ok(())
}

fn manager_death(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    b.enter_looper()?;
    let mut w = WriteBuf::new();
    w.increfs(0).request_death(0, COOKIE);
    expect_ok(
        b.write(&w),
        "BC_INCREFS 0 + BC_REQUEST_DEATH_NOTIFICATION 0",
    )?;
    srv.kill();
    wait_dead(&b, COOKIE)?;
    Ok(())
}

fn two_nodes_two_notifications(c: &Ctx) -> TResult {
    let (mgr, svc, b, h) = setup(c)?;
    // A second node of the same service, fetched through the service itself.
    let mut p = Payload::new();
    p.u64(0x6700);
    let rec = b.call_nofree(h, CODE_GET_NODE, &p)?;
    let o: flat_binder_object = rec.object(rec.offsets[0]);
    let h2 = o.handle();
    b.acquire_handle(h2)?;
    b.free_buffer(rec.td.buffer)?;
    ensure!(h2 != h, "second node got the same handle {h}");
    let mut w = WriteBuf::new();
    w.request_death(h, 1).request_death(h2, 2);
    b.write(&w)?;
    svc.kill();
    let mut got = vec![b.next_within(10_000)?, b.next_within(10_000)?];
    got.sort_by_key(|r| format!("{r:?}"));
    ensure_eq!(
        got,
        vec![Return::DeadBinder(1), Return::DeadBinder(2)],
        "notifications"
    );
    mgr.kill();
    Ok(())
}

// 7.2 upstream Rust: BR_DEAD_REPLY (BinderError::new_dead, no errno) leaves the extended error
//   at (BR_OK, 0) (thread.rs:Thread::transaction); C sets (BR_DEAD_REPLY, -EINVAL)
//   (docs/oracle.md)
fn call_after_death_dead_reply(c: &Ctx) -> TResult {
    let (mgr, svc, b, h) = setup(c)?;
    request_kill_wait(&b, h, svc)?;
    // Once BR_DEAD_BINDER arrived, the node is dead: calls get BR_DEAD_REPLY at once.
    let mut w = WriteBuf::new();
    w.transaction(h, 1, 0, &Payload::new());
    expect_txn_error(&b, &w, BR_DEAD_REPLY, "call after BR_DEAD_BINDER")?;
    let mut w = WriteBuf::new();
    w.transaction(h, 1, TF_ONE_WAY, &Payload::new());
    expect_txn_error(&b, &w, BR_DEAD_REPLY, "one-way after BR_DEAD_BINDER")?;
    expect_ext_err(&b, BR_DEAD_REPLY, -libc::EINVAL, "one-way to a dead node")?;
    mgr.kill();
    Ok(())
}

fn dead_binder_needs_no_done_for_calls(c: &Ctx) -> TResult {
    // Without BC_DEAD_BINDER_DONE, other calls still work (the manager is alive).
    let (mgr, svc, b, h) = setup(c)?;
    request_kill_wait(&b, h, svc)?;
    still_works(&b)?;
    mgr.kill();
    Ok(())
}

fn released_ref_no_notification(c: &Ctx) -> TResult {
    // Dropping the last ref with a death notification still registered discards it.
    let (mgr, svc, b, h) = setup(c)?;
    let mut w = WriteBuf::new();
    w.request_death(h, COOKIE).release(h).decrefs(h);
    expect_ok(b.write(&w), "request, then drop the ref")?;
    svc.kill();
    b.expect_nothing(1500)?;
    mgr.kill();
    Ok(())
}

// 7.2 upstream Rust: a thread that never entered the looper never reads process work
//   (thread.rs:InnerThread::should_use_process_work_queue requires is_looper()); C's
//   binder_available_for_proc_work_ilocked does not (docs/oracle.md)
fn non_looper_thread_gets_notification(c: &Ctx) -> TResult {
    // Death notifications are process work; a thread that never entered the looper still
    // receives it when it reads with nothing else to do.
    let mgr = spawn_svcmgr(c)?;
    let svc = spawn_service(c, 0x6800)?;
    let b = client(c)?;
    let h = lookup(&b)?;
    request_kill_wait(&b, h, svc)?;
    mgr.kill();
    Ok(())
}
