//! priority: nice inheritance. A thread picking up a BR_TRANSACTION runs at the lower
//! (better) of the caller's nice and the node's min_priority for a synchronous call, at
//! the lower of its own and the node's for a one-way one; BC_REPLY puts its nice back;
//! a looper going to wait for process work returns to the nice the process had at
//! open; without CAP_SYS_NICE each of these is capped by RLIMIT_NICE.
//!
//! Each server reports the nice of its handling thread through a pipe, and for a
//! synchronous call also the nice right after its own BC_REPLY. Every server starts
//! at a nice of its own, apart from the values it should take on.
//!
//! 7.2 upstream Rust: no priority inheritance at all (nothing in
//! drivers/android/binder/*.rs reads or sets a nice value), so every test here but
//! `rlimit_nice_unset_leaves_nice` (which expects no change) fails there
//! (known-differences-7.2.txt, docs/oracle.md).

use crate::common::*;
use crate::Ctx;
use binder_uapi::harness::{at_nice, drop_privileges, nice, set_nice};
use binder_uapi::*;
use std::time::Duration;

crate::tests!(
    "priority",
    sync_runs_at_caller_nice_below_node_min,
    sync_capped_at_context_mgr_min,
    sync_capped_at_published_node_min,
    sync_capped_at_context_mgr_ext_min,
    oneway_lowered_to_node_min,
    oneway_not_lowered_to_caller,
    reply_restores_handler_nice,
    nested_reply_restores_outer_nice,
    looper_waits_at_open_nice,
    rlimit_nice_caps_unprivileged_server,
    rlimit_nice_unset_leaves_nice,
);

/// The service node and a node of the client's.
const SVC_NODE: u64 = 0x9000;
const CALLER_NODE: u64 = 0xca11;
const CODE_OUTER: u32 = 1;
const CODE_CALLBACK: u32 = 2;
const CODE_INNER: u32 = 3;

fn send_nice(p: &Pipe, n: i32) -> Result<(), String> {
    p.send_u64(n as i64 as u64)
        .map_err(|e| format!("server: report pipe: {e}"))
}

fn recv_nice(p: &Pipe, what: &str) -> TResult<i32> {
    let v = p
        .recv_u64_within(Duration::from_secs(5))
        .map_err(|e| format!("{what}: no report from the server: {e}"))?;
    Ok(v as i64 as i32)
}

/// A handler reporting through `report`: its nice while handling, and for a
/// synchronous transaction (which it answers itself) the nice right after its BC_REPLY.
fn nice_reporter(report: &Pipe) -> impl FnMut(&Binder, &Received) -> Result<Step, String> + '_ {
    move |b, rec| {
        send_nice(report, nice())?;
        if rec.td.flags & TF_ONE_WAY != 0 {
            return Ok(Step::Nothing);
        }
        b.reply(0, &Payload::new())
            .map_err(|e| format!("server: BC_REPLY: {e}"))?;
        send_nice(report, nice())?;
        Ok(Step::Nothing)
    }
}

/// A context manager opened at nice `open_nice` running `nice_reporter`; `ext_flags`
/// registers it with BINDER_SET_CONTEXT_MGR_EXT and those node flags.
fn spawn_reporting_mgr(
    c: &Ctx,
    open_nice: i32,
    ext_flags: Option<u32>,
    report: &Pipe,
) -> TResult<Server> {
    Ok(at_nice(open_nice, || {
        spawn_ctxmgr_flags(c, ext_flags, |_| Ok(()), nice_reporter(report))
    })?)
}

/// From a thread at nice `caller`: call `handle` synchronously; returns the server's
/// nice while handling and right after its BC_REPLY.
fn sync_at(b: &Binder, handle: u32, caller: i32, report: &Pipe) -> TResult<(i32, i32)> {
    set_nice(caller).map_err(|e| format!("setpriority({caller}): {e}"))?;
    b.call(handle, CODE_ECHO, &Payload::new())
        .map_err(|e| format!("call at nice {caller}: {e}"))?;
    let during = recv_nice(report, "while handling")?;
    let after = recv_nice(report, "after BC_REPLY")?;
    Ok((during, after))
}

/// From a thread at nice `caller`: send a one-way transaction to `handle`; returns the
/// server's nice while handling it.
fn oneway_at(b: &Binder, handle: u32, caller: i32, report: &Pipe) -> TResult<i32> {
    set_nice(caller).map_err(|e| format!("setpriority({caller}): {e}"))?;
    b.transact(handle, CODE_ECHO, TF_ONE_WAY, &Payload::new())?;
    expect_br(b, BR_TRANSACTION_COMPLETE, "one-way transaction")?;
    recv_nice(report, "one-way handler")
}

fn sync_runs_at_caller_nice_below_node_min(c: &Ctx) -> TResult {
    // The manager's node has min_priority 0: a caller at a lower nice lends it.
    let report = Pipe::new()?;
    let srv = spawn_reporting_mgr(c, 10, None, &report)?;
    let b = client(c)?;
    for caller in [-5, -12, -1] {
        let (during, _) = sync_at(&b, 0, caller, &report)?;
        ensure_eq!(
            during,
            caller,
            format!("manager's nice (opened at 10, node min 0) handling a call from nice {caller}")
        );
    }
    srv.kill();
    Ok(())
}

fn sync_capped_at_context_mgr_min(c: &Ctx) -> TResult {
    // A caller at a higher nice than the node's min_priority (0 for a node made by
    // BINDER_SET_CONTEXT_MGR): the handler runs at the node's min, not the caller's.
    let report = Pipe::new()?;
    let srv = spawn_reporting_mgr(c, 15, None, &report)?;
    let b = client(c)?;
    for caller in [7, 19, 0] {
        let (during, _) = sync_at(&b, 0, caller, &report)?;
        ensure_eq!(
            during,
            0,
            format!("manager's nice (opened at 15, node min 0) handling a call from nice {caller}")
        );
    }
    srv.kill();
    Ok(())
}

fn sync_capped_at_published_node_min(c: &Ctx) -> TResult {
    // A node sent as a flat_binder_object takes its min_priority from flags & 0xff
    // (here 8, with FLAT_BINDER_FLAG_ACCEPTS_FDS beside it).
    let report = Pipe::new()?;
    let mgr = spawn_svcmgr(c)?;
    let svc = at_nice(17, || {
        spawn_service_flags(
            c,
            SVC_NODE,
            8 | FLAT_BINDER_FLAG_ACCEPTS_FDS,
            nice_reporter(&report),
        )
    })?;
    let b = client(c)?;
    let h = lookup(&b)?;
    for (caller, want) in [(12, 8), (3, 3), (8, 8), (19, 8), (-4, -4)] {
        let (during, _) = sync_at(&b, h, caller, &report)?;
        ensure_eq!(
            during,
            want,
            format!("service's nice (opened at 17, node min 8) handling a call from nice {caller}")
        );
    }
    svc.kill();
    mgr.kill();
    Ok(())
}

fn sync_capped_at_context_mgr_ext_min(c: &Ctx) -> TResult {
    // BINDER_SET_CONTEXT_MGR_EXT's flat_binder_object flags give the manager's node
    // its min_priority (6 here).
    let report = Pipe::new()?;
    let srv = spawn_reporting_mgr(c, 16, Some(6 | FLAT_BINDER_FLAG_ACCEPTS_FDS), &report)?;
    let b = client(c)?;
    for (caller, want) in [(11, 6), (-3, -3), (5, 5)] {
        let (during, _) = sync_at(&b, 0, caller, &report)?;
        ensure_eq!(
            during,
            want,
            format!("manager's nice (opened at 16, node min 6) handling a call from nice {caller}")
        );
    }
    srv.kill();
    Ok(())
}

fn oneway_lowered_to_node_min(c: &Ctx) -> TResult {
    // A one-way transaction does not lend the caller's nice, but a handler above the
    // node's min_priority is brought down to it.
    let report = Pipe::new()?;
    let srv = spawn_reporting_mgr(c, 10, None, &report)?;
    let b = client(c)?;
    let during = oneway_at(&b, 0, -5, &report)?;
    ensure_eq!(
        during,
        0,
        "manager's nice (opened at 10, node min 0) handling a one-way from nice -5"
    );
    srv.kill();
    Ok(())
}

fn oneway_not_lowered_to_caller(c: &Ctx) -> TResult {
    // A handler already below the node's min_priority keeps its own nice for a one-way
    // transaction, however low the caller's is.
    let report = Pipe::new()?;
    let srv = spawn_reporting_mgr(c, 4, Some(12), &report)?;
    let b = client(c)?;
    for caller in [-5, 19] {
        let during = oneway_at(&b, 0, caller, &report)?;
        ensure_eq!(
            during,
            4,
            format!(
                "manager's nice (opened at 4, node min 12) handling a one-way from nice {caller}"
            )
        );
    }
    // A synchronous call to the same node does lend the caller's nice.
    let (during, _) = sync_at(&b, 0, -5, &report)?;
    ensure_eq!(
        during,
        -5,
        "manager's nice (opened at 4, node min 12) handling a call from nice -5"
    );
    srv.kill();
    Ok(())
}

fn reply_restores_handler_nice(c: &Ctx) -> TResult {
    // BC_REPLY puts the handler back at the nice it had when it picked the
    // transaction up (the manager's nice at open, as it waited for process work).
    let report = Pipe::new()?;
    let srv = spawn_reporting_mgr(c, 9, None, &report)?;
    let b = client(c)?;
    for (caller, want) in [(-3, -3), (13, 0), (-11, -11)] {
        let (during, after) = sync_at(&b, 0, caller, &report)?;
        ensure_eq!(
            during,
            want,
            format!("manager's nice (opened at 9) handling a call from nice {caller}")
        );
        ensure_eq!(
            after,
            9,
            format!("manager's nice right after BC_REPLY to a call from nice {caller}")
        );
    }
    srv.kill();
    Ok(())
}

fn nested_reply_restores_outer_nice(c: &Ctx) -> TResult {
    // The manager (opened at 10) handles A's call at A's nice -2, calls back into A,
    // and A calls the manager again from nice -6: the manager's waiting thread handles
    // that at -6 and its BC_REPLY restores -2 (the nice it had when it picked the
    // inner call up), not the nice of the process at open.
    let srv = at_nice(10, || {
        spawn_ctxmgr(c, |b, rec| {
            if rec.td.code != CODE_OUTER || rec.offsets.len() != 1 {
                return Err(format!("manager: unexpected code {}", rec.td.code));
            }
            let a: flat_binder_object = rec.object(rec.offsets[0]);
            let outer = nice();
            let inner = std::cell::Cell::new(99);
            call_serving(b, a.handle(), CODE_CALLBACK, &Payload::new(), &|_, r| {
                if r.td.code != CODE_INNER {
                    return Err(format!("manager: unexpected nested code {}", r.td.code));
                }
                inner.set(nice());
                Ok(Payload::new())
            })?;
            let after = nice();
            let mut p = Payload::new();
            p.u32(outer as u32)
                .u32(inner.get() as u32)
                .u32(after as u32);
            Ok(Step::Reply(p))
        })
    })?;
    let b = client(c)?;
    set_nice(-2)?;
    let callback_nice = std::cell::Cell::new(99);
    let mut p = Payload::new();
    p.binder(CALLER_NODE, 1, 0);
    let r = call_serving(&b, 0, CODE_OUTER, &p, &|b, rec| {
        if rec.td.code != CODE_CALLBACK {
            return Err(format!("client: unexpected callback code {}", rec.td.code));
        }
        callback_nice.set(nice());
        set_nice(-6).map_err(|e| format!("setpriority(-6): {e}"))?;
        b.call(0, CODE_INNER, &Payload::new())?;
        Ok(Payload::new())
    })?;
    ensure!(r.data.len() == 12, "outer reply of {} bytes", r.data.len());
    let at = |i: usize| u32::from_ne_bytes(r.data[i * 4..i * 4 + 4].try_into().unwrap()) as i32;
    ensure_eq!(
        at(0),
        -2,
        "manager's nice handling the outer call from nice -2"
    );
    ensure_eq!(
        callback_nice.get(),
        -2,
        "client's nice handling the manager's callback (sent from nice -2)"
    );
    ensure_eq!(
        at(1),
        -6,
        "manager's nice handling the nested call from nice -6"
    );
    ensure_eq!(
        at(2),
        -2,
        "manager's nice after its BC_REPLY to the nested call"
    );
    // The client moved itself to -6 inside the callback; its BC_REPLY to the callback
    // put it back at -2.
    ensure_eq!(nice(), -2, "client's nice after replying to the callback");
    srv.kill();
    Ok(())
}

fn looper_waits_at_open_nice(c: &Ctx) -> TResult {
    // The manager opens the device at nice 6, then its looper moves to nice 14 before
    // waiting: going to wait for process work puts it back at 6. A one-way to a node
    // with min_priority 19 leaves the handler at that nice, so the handler sees it.
    // The handler moves to 14 again each time; each wait restores 6.
    let report = Pipe::new()?;
    let srv = at_nice(6, || {
        spawn_ctxmgr_flags(
            c,
            Some(19),
            |_| {
                set_nice(14)?;
                Ok(())
            },
            |_, rec| {
                send_nice(&report, nice())?;
                set_nice(14).map_err(|e| format!("server: setpriority(14): {e}"))?;
                send_nice(&report, nice())?;
                if rec.td.flags & TF_ONE_WAY != 0 {
                    Ok(Step::Nothing)
                } else {
                    Ok(Step::Reply(Payload::new()))
                }
            },
        )
    })?;
    let b = client(c)?;
    for (i, caller) in [0, -7, 3].into_iter().enumerate() {
        set_nice(caller)?;
        b.transact(0, CODE_ECHO, TF_ONE_WAY, &Payload::new())?;
        expect_br(&b, BR_TRANSACTION_COMPLETE, "one-way transaction")?;
        let during = recv_nice(&report, "one-way handler")?;
        let moved = recv_nice(&report, "one-way handler after setpriority")?;
        ensure_eq!(moved, 14, "manager's setpriority(14) in the handler");
        ensure_eq!(
            during,
            6,
            format!(
                "nice of the manager's looper (opened at 6, at 14 before it waited) \
                 handling one-way #{i} from nice {caller} (node min 19)"
            )
        );
    }
    srv.kill();
    Ok(())
}

/// A context manager that opens the device as root at nice 0, then drops to uid 65534
/// with RLIMIT_NICE `rlimit` and moves to nice `nice`, reporting through `report`.
fn spawn_unprivileged_mgr(c: &Ctx, rlimit: u64, nice: i32, report: &Pipe) -> TResult<Server> {
    Ok(at_nice(0, || {
        spawn_ctxmgr_flags(
            c,
            None,
            |_| {
                drop_privileges(65534, rlimit).map_err(|e| format!("drop privileges: {e}"))?;
                set_nice(nice).map_err(|e| format!("setpriority({nice}): {e}"))?;
                // The lowest nice RLIMIT_NICE allows is 20 - rlimit: lowering the nice
                // below that must fail (raising it is always allowed).
                let below = 19 - rlimit as i32;
                if below < nice && set_nice(below).is_ok() {
                    fail!("uid 65534 with RLIMIT_NICE {rlimit} could set nice {below}");
                }
                Ok(())
            },
            nice_reporter(report),
        )
    })?)
}

/// Sync calls from each of `callers` to an unprivileged manager (`what`) must be
/// handled at nice `want`, and leave it there after its BC_REPLY.
fn sync_calls_at(b: &Binder, callers: &[i32], want: i32, what: &str, report: &Pipe) -> TResult {
    for &caller in callers {
        let (during, after) = sync_at(b, 0, caller, report)?;
        ensure_eq!(
            during,
            want,
            format!("{what} handling a call from nice {caller}")
        );
        ensure_eq!(
            after,
            want,
            format!("{what} after BC_REPLY (call from nice {caller})")
        );
    }
    Ok(())
}

fn rlimit_nice_caps_unprivileged_server(c: &Ctx) -> TResult {
    // The manager opens the device as root at nice 0, then drops to uid 65534 with
    // RLIMIT_NICE 15 (lowest nice it may set: 5) and moves to nice 10. Both the reset to
    // nice 0 on waiting and a caller's nice -8 are out of its reach: it gets nice 5.
    let report = Pipe::new()?;
    let srv = spawn_unprivileged_mgr(c, 15, 10, &report)?;
    let b = client(c)?;
    sync_calls_at(
        &b,
        &[-8, 2],
        5,
        "unprivileged manager's nice (RLIMIT_NICE 15, at 10, opened at 0)",
        &report,
    )?;
    // A one-way to the node (min 0) is capped the same way.
    let during = oneway_at(&b, 0, -8, &report)?;
    ensure_eq!(
        during,
        5,
        "unprivileged manager's nice (RLIMIT_NICE 15) handling a one-way"
    );
    srv.kill();
    Ok(())
}

fn rlimit_nice_unset_leaves_nice(c: &Ctx) -> TResult {
    // With RLIMIT_NICE 0 ("not set": the fallback nice would be 20, out of range) an
    // unprivileged manager's nice is left where it is: 7, not the nice 0 it opened at
    // nor the caller's.
    let report = Pipe::new()?;
    let srv = spawn_unprivileged_mgr(c, 0, 7, &report)?;
    let b = client(c)?;
    sync_calls_at(
        &b,
        &[-8, 3],
        7,
        "unprivileged manager's nice (RLIMIT_NICE 0, at 7, opened at 0)",
        &report,
    )?;
    srv.kill();
    Ok(())
}
