//! freeze_notification: BC_REQUEST/CLEAR_FREEZE_NOTIFICATION, BR_FROZEN_BINDER,
//! BC_FREEZE_NOTIFICATION_DONE, BR_CLEAR_FREEZE_NOTIFICATION_DONE.

use crate::common::*;
use crate::Ctx;
use binder_uapi::*;

crate::tests!(
    "freeze_notification",
    initial_state_reported,
    freeze_and_unfreeze_reported,
    change_held_until_done,
    clear_done,
    request_twice_einval,
    request_invalid_handle_einval,
    clear_without_request_einval,
    clear_wrong_cookie_einval,
    done_unknown_cookie_einval,
    dead_node_no_event,
    many_holders_all_reported,
);

const COOKIE: u64 = 0xf2ee_2e00;

/// A std manager and a looper client holding a weak+strong ref to handle 0.
fn setup(c: &Ctx) -> TResult<(Server, Binder)> {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    b.acquire_handle(0)?;
    b.enter_looper()?;
    Ok((srv, b))
}

fn frozen_event(frozen: bool) -> Return {
    event(COOKIE, frozen)
}

fn event(cookie: u64, frozen: bool) -> Return {
    Return::FrozenBinder(binder_frozen_state_info {
        cookie,
        is_frozen: frozen as u32,
        reserved: 0,
    })
}

fn request(b: &Binder, h: u32, cookie: u64) -> std::io::Result<u64> {
    let mut w = WriteBuf::new();
    w.request_freeze_notification(h, cookie);
    b.write(&w)
}

fn done(b: &Binder, cookie: u64) -> std::io::Result<u64> {
    let mut w = WriteBuf::new();
    w.freeze_notification_done(cookie);
    b.write(&w)
}

fn initial_state_reported(c: &Ctx) -> TResult {
    let (srv, b) = setup(c)?;
    expect_ok(request(&b, 0, COOKIE), "BC_REQUEST_FREEZE_NOTIFICATION")?;
    ensure_eq!(b.next()?, frozen_event(false), "initial BR_FROZEN_BINDER");
    expect_ok(done(&b, COOKIE), "BC_FREEZE_NOTIFICATION_DONE")?;
    b.expect_nothing(200)?;
    srv.kill();
    Ok(())
}

fn freeze_and_unfreeze_reported(c: &Ctx) -> TResult {
    let (srv, b) = setup(c)?;
    request(&b, 0, COOKIE)?;
    ensure_eq!(b.next()?, frozen_event(false), "initial state");
    done(&b, COOKIE)?;
    b.freeze(srv.pid, true, 0)?;
    ensure_eq!(b.next()?, frozen_event(true), "after BINDER_FREEZE");
    done(&b, COOKIE)?;
    b.freeze(srv.pid, false, 0)?;
    ensure_eq!(b.next()?, frozen_event(false), "after unfreezing");
    done(&b, COOKIE)?;
    b.expect_nothing(200)?;
    srv.kill();
    Ok(())
}

// 7.2 upstream Rust: BUG: a freeze change while BR_FROZEN_BINDER is unacknowledged still queues
//   a FreezeMessage that writes nothing (freeze.rs:FreezeMessage::do_work, is_pending): poll()
//   says POLLIN and the blocking read then sleeps forever (the test hangs); C only sets
//   freeze->resend (docs/oracle.md)
fn change_held_until_done(c: &Ctx) -> TResult {
    let (srv, b) = setup(c)?;
    request(&b, 0, COOKIE)?;
    ensure_eq!(b.next()?, frozen_event(false), "initial state");
    // Not acknowledged yet: the freeze is remembered but not sent.
    b.freeze(srv.pid, true, 0)?;
    b.expect_nothing(300)?;
    done(&b, COOKIE)?;
    ensure_eq!(
        b.next()?,
        frozen_event(true),
        "state change delivered after the DONE"
    );
    done(&b, COOKIE)?;
    b.freeze(srv.pid, false, 0)?;
    srv.kill();
    Ok(())
}

fn clear_done(c: &Ctx) -> TResult {
    let (srv, b) = setup(c)?;
    request(&b, 0, COOKIE)?;
    ensure_eq!(b.next()?, frozen_event(false), "initial state");
    done(&b, COOKIE)?;
    let mut w = WriteBuf::new();
    w.clear_freeze_notification(0, COOKIE);
    expect_ok(b.write(&w), "BC_CLEAR_FREEZE_NOTIFICATION")?;
    ensure_eq!(
        b.next()?,
        Return::ClearFreezeNotificationDone(COOKIE),
        "after clear"
    );
    // No more events after clearing.
    b.freeze(srv.pid, true, 0)?;
    b.expect_nothing(300)?;
    b.freeze(srv.pid, false, 0)?;
    srv.kill();
    Ok(())
}

fn request_twice_einval(c: &Ctx) -> TResult {
    let (srv, b) = setup(c)?;
    request(&b, 0, COOKIE)?;
    let mut w = WriteBuf::new();
    w.request_freeze_notification(0, COOKIE + 1);
    let (r, consumed) = b.write_consumed(&w);
    expect_errno(r, libc::EINVAL, "second BC_REQUEST_FREEZE_NOTIFICATION")?;
    ensure_eq!(consumed, 0, "write_consumed");
    ensure_eq!(
        b.next()?,
        frozen_event(false),
        "only the first request reports"
    );
    srv.kill();
    Ok(())
}

fn request_invalid_handle_einval(c: &Ctx) -> TResult {
    let (srv, b) = setup(c)?;
    let mut w = WriteBuf::new();
    w.enter_looper();
    let good = w.len() as u64;
    w.request_freeze_notification(33, COOKIE);
    let (r, consumed) = b.write_consumed(&w);
    expect_errno(
        r,
        libc::EINVAL,
        "BC_REQUEST_FREEZE_NOTIFICATION on handle 33",
    )?;
    ensure_eq!(consumed, good, "write_consumed");
    b.expect_nothing(100)?;
    still_works(&b)?;
    srv.kill();
    Ok(())
}

fn clear_without_request_einval(c: &Ctx) -> TResult {
    let (srv, b) = setup(c)?;
    let mut w = WriteBuf::new();
    w.clear_freeze_notification(0, COOKIE);
    expect_errno(b.write(&w), libc::EINVAL, "clear without a request")?;
    still_works(&b)?;
    srv.kill();
    Ok(())
}

fn clear_wrong_cookie_einval(c: &Ctx) -> TResult {
    let (srv, b) = setup(c)?;
    request(&b, 0, COOKIE)?;
    ensure_eq!(b.next()?, frozen_event(false), "initial state");
    done(&b, COOKIE)?;
    let mut w = WriteBuf::new();
    w.clear_freeze_notification(0, COOKIE + 9);
    expect_errno(b.write(&w), libc::EINVAL, "clear with a wrong cookie")?;
    // The notification is still active.
    b.freeze(srv.pid, true, 0)?;
    ensure_eq!(
        b.next()?,
        frozen_event(true),
        "event after the failed clear"
    );
    done(&b, COOKIE)?;
    b.freeze(srv.pid, false, 0)?;
    srv.kill();
    Ok(())
}

fn done_unknown_cookie_einval(c: &Ctx) -> TResult {
    let (srv, b) = setup(c)?;
    expect_errno(
        done(&b, 0x4242),
        libc::EINVAL,
        "BC_FREEZE_NOTIFICATION_DONE for nothing",
    )?;
    request(&b, 0, COOKIE)?;
    ensure_eq!(b.next()?, frozen_event(false), "initial state");
    expect_ok(done(&b, COOKIE), "DONE for the delivered event")?;
    expect_errno(
        done(&b, COOKIE),
        libc::EINVAL,
        "second DONE for the same event",
    )?;
    srv.kill();
    Ok(())
}

// 7.2 upstream Rust: BC_REQUEST_FREEZE_NOTIFICATION on a dead node still reports
//   BR_FROZEN_BINDER(not frozen) (freeze.rs:Process::request_freeze_notif always queues one); C
//   queues nothing when ref->node->proc is NULL (docs/oracle.md)
fn dead_node_no_event(c: &Ctx) -> TResult {
    // (Handle 0 answers BR_DEAD_REPLY as soon as the manager starts dying, before its
    // node is released: wait for the death notification, sent once the node is dead.)
    let (srv, b) = setup(c)?;
    let mut w = WriteBuf::new();
    w.request_death(0, 7);
    b.write(&w)?;
    srv.kill();
    let r = b.next_within(10_000)?;
    ensure_eq!(r, Return::DeadBinder(7), "death of the manager");
    expect_ok(request(&b, 0, COOKIE), "request on a dead node")?;
    b.expect_nothing(300)?;
    Ok(())
}

/// Holders of notifications on one node, more than a first allocation of its list holds.
const HOLDERS: u64 = 9;

/// Every one of many holders (one binder file each, so one ref each on the manager's node)
/// gets each change of the node's owner, with its own cookie.
fn many_holders_all_reported(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let mut holders = Vec::new();
    for i in 0..HOLDERS {
        let b = client(c)?;
        b.acquire_handle(0)?;
        b.enter_looper()?;
        expect_ok(request(&b, 0, COOKIE + i), "BC_REQUEST_FREEZE_NOTIFICATION")?;
        ensure_eq!(
            b.next()?,
            event(COOKIE + i, false),
            "initial state of holder"
        );
        done(&b, COOKIE + i)?;
        holders.push(b);
    }
    for frozen in [true, false] {
        holders[0].freeze(srv.pid, frozen, 0)?;
        for (i, b) in (0..HOLDERS).zip(holders.iter()) {
            ensure_eq!(
                b.next()?,
                event(COOKIE + i, frozen),
                "change seen by holder"
            );
            done(b, COOKIE + i)?;
        }
    }
    for b in holders.iter() {
        b.expect_nothing(100)?;
    }
    srv.kill();
    Ok(())
}
