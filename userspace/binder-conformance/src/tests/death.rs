//! death: BC_REQUEST/CLEAR_DEATH_NOTIFICATION, BR_DEAD_BINDER, BC_DEAD_BINDER_DONE,
//! BR_CLEAR_DEATH_NOTIFICATION_DONE.

use crate::common::*;
use crate::Ctx;
use binder_uapi::*;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    receiver_killed_mid_traffic,
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

/// A's node in `receiver_killed_mid_traffic`.
const A_NODE: u64 = 0xa11c_e000;
/// Threads of A sending into B.
const KILL_THREADS: usize = 3;
/// Data per call (plus A's node at its end): each call of a round needs pages of B's mapping
/// that no call used before, and the object is translated only after the data.
const KILL_PAYLOAD: usize = 64 * 1024;
/// Calls per thread and round at most (a round ends with B's death).
const KILL_CALLS: usize = 24;
/// At most this many rounds (the run is also bounded in time).
const KILL_ROUNDS: usize = 200;

/// One call as libbinder makes it: BC_TRANSACTION and the read in one BINDER_WRITE_READ,
/// so that the thread stays in the kernel until something arrives; then reads until the
/// call's outcome (BR_REPLY, whose buffer is freed, BR_DEAD_REPLY or BR_FAILED_REPLY).
/// BR_INCREFS / BR_ACQUIRE of a node the call carries come to the calling thread (C
/// `binder_translate_binder` queues them on its todo) and are acknowledged. EINTR (C's
/// `binder_wait_for_work` returns it whenever `signal_pending()`; seen on C about once in 50
/// rounds of `receiver_killed_mid_traffic`, with no signal pending any more when the thread
/// looked at /proc) is retried as libbinder's `talkWithDriver` does, from what the kernel
/// wrote back; `eintr` counts them.
fn talk(b: &Binder, w: &WriteBuf, eintr: &mut usize) -> Result<u32, String> {
    let mut buf = [0u8; 256];
    let wb = w.as_slice();
    let mut written = 0usize;
    loop {
        let mut bwr = binder_write_read {
            write_size: (wb.len() - written) as u64,
            write_buffer: wb[written..].as_ptr() as u64,
            read_size: buf.len() as u64,
            read_buffer: buf.as_mut_ptr() as u64,
            ..Default::default()
        };
        let r = b.write_read_raw(&mut bwr);
        written += bwr.write_consumed as usize;
        match r {
            Ok(()) => {}
            Err(e) if e.raw_os_error() == Some(libc::EINTR) => *eintr += 1,
            Err(e) => return Err(format!("BINDER_WRITE_READ: {}", res_name::<()>(&Err(e)))),
        }
        for r in decode(&buf[..bwr.read_consumed as usize]) {
            match r {
                Return::Noop | Return::TransactionComplete => {}
                Return::Reply(td) => {
                    b.free_buffer(td.buffer)
                        .map_err(|e| format!("BC_FREE_BUFFER: {e}"))?;
                    return Ok(BR_REPLY);
                }
                Return::DeadReply | Return::FailedReply => return Ok(r.code()),
                Return::Increfs(pc) => {
                    b.write(WriteBuf::new().increfs_done(pc.ptr, pc.cookie))
                        .map_err(|e| format!("BC_INCREFS_DONE: {e}"))?;
                }
                Return::Acquire(pc) => {
                    b.write(WriteBuf::new().acquire_done(pc.ptr, pc.cookie))
                        .map_err(|e| format!("BC_ACQUIRE_DONE: {e}"))?;
                }
                Return::Release(_) | Return::Decrefs(_) => {}
                other => return Err(format!("a calling thread got {}", other.name())),
            }
        }
    }
}

/// Outcomes over all rounds of `receiver_killed_mid_traffic`.
#[derive(Default)]
struct KillStats {
    rounds: usize,
    replies: usize,
    dead: usize,
    failed: usize,
    /// BINDER_WRITE_READs of the calls that returned EINTR (and were retried).
    eintr: usize,
    /// Longest time from a round's first call to its last thread's return.
    worst: Duration,
}

/// Review-36 addendum, findings 1 and 2 (process exit in the middle of operations). Round
/// after round, on a binderfs device of its own, a fresh B becomes context manager; A
/// (KILL_THREADS threads, each call and its read in one ioctl) sends it calls of
/// KILL_PAYLOAD bytes carrying A's own node; B keeps every buffer (so each call needs new
/// pages of its mapping) and SIGKILLs itself when its k-th call arrives (k = 1..4 by
/// round), with the others on the way. Asserted each round: every ioctl of A returns
/// (BR_REPLY, BR_DEAD_REPLY or BR_FAILED_REPLY) within a quarter of the test's time (a thread
/// stuck in its ioctl is the hang of finding 1: B's teardown run by A's last `mmput`);
/// A's death notification on handle 0 arrives; and A's node ends with no reference from B
/// (BINDER_GET_NODE_DEBUG_INFO: gone, or neither strong nor weak: A got BR_RELEASE and
/// BR_DECREFS back), which a ref added to B after its refs were cleaned (finding 2) keeps
/// forever. Calls go to handle 0: C's dead-node leak through handles (docs/robustness.md)
/// is not reachable that way.
fn receiver_killed_mid_traffic(c: &Ctx) -> TResult {
    let budget = c.timeout / 3;
    let hang = c.timeout / 4;
    let devname = c.dev.rsplit('/').next().unwrap().to_string();
    let mut p = Payload::new();
    p.bytes(&vec![0x6b; KILL_PAYLOAD]);
    p.binder(A_NODE, A_NODE + 1, 0);
    let p = Arc::new(p);
    let mut st = KillStats::default();
    let t0 = Instant::now();
    while st.rounds < KILL_ROUNDS && t0.elapsed() < budget {
        let dev = binderfs::Device::create(&c.mnt, &format!("{devname}-k{}", st.rounds))
            .map_err(|e| format!("BINDER_CTL_ADD: {e}"))?;
        kill_round(&dev.path(), 1 + st.rounds % 4, &p, hang, &mut st).map_err(|e| {
            format!(
                "round {} ({} ms in; {} replies, {} BR_DEAD_REPLY, {} BR_FAILED_REPLY before): \
                 {e}",
                st.rounds,
                t0.elapsed().as_millis(),
                st.replies,
                st.dead,
                st.failed
            )
        })?;
        st.rounds += 1;
    }
    note(&format!(
        "{} rounds in {} ms: {} replies, {} BR_DEAD_REPLY, {} BR_FAILED_REPLY ({} EINTR \
         retried); slowest round {} ms",
        st.rounds,
        t0.elapsed().as_millis(),
        st.replies,
        st.dead,
        st.failed,
        st.eintr,
        st.worst.as_millis()
    ));
    ensure!(st.dead > 0, "no call ever saw B dead");
    Ok(())
}

fn kill_round(
    dev: &str,
    k: usize,
    p: &Arc<Payload>,
    hang: Duration,
    st: &mut KillStats,
) -> Result<(), String> {
    let ready = harness::Pipe::new().map_err(|e| e.to_string())?;
    let dev_b = dev.to_string();
    let b_proc = harness::fork_proc(|| {
        let b = Binder::open_mapped(&dev_b)?;
        b.set_context_mgr()?;
        b.enter_looper()?;
        ready.send_u64(1)?;
        let mut n = 0;
        loop {
            match b.next_within(30_000)? {
                Return::Transaction(_) => {
                    n += 1;
                    if n == k {
                        // Die with this call, and whatever else is on the way, in flight.
                        // SAFETY: signalling ourselves.
                        unsafe { libc::kill(libc::getpid(), libc::SIGKILL) };
                    }
                    // The buffer is kept: the next call needs new pages.
                    let mut w = WriteBuf::new();
                    w.reply(0, &Payload::new());
                    b.write(&w)?;
                }
                r @ (Return::Increfs(_) | Return::Acquire(_)) => {
                    serve_one(&b, r, &mut |_, _| Ok(Step::Nothing))?;
                }
                _ => {}
            }
        }
    })
    .map_err(|e| format!("fork: {e}"))?;
    ready.recv_u64()?;
    let a = Arc::new(Binder::open_mapped(dev).map_err(|e| format!("open {dev}: {e}"))?);
    let mut w = WriteBuf::new();
    w.enter_looper()
        .increfs(0)
        .acquire(0)
        .request_death(0, COOKIE);
    a.write(&w)
        .map_err(|e| format!("A: BC_ACQUIRE 0 + death request: {e}"))?;
    let (tx, rx) = std::sync::mpsc::channel();
    let start = Instant::now();
    for _ in 0..KILL_THREADS {
        let (a, p, tx) = (a.clone(), p.clone(), tx.clone());
        std::thread::spawn(move || {
            let mut w = WriteBuf::new();
            w.transaction(0, CODE_ECHO, 0, &p);
            let mut codes = Vec::new();
            let mut eintr = 0;
            let r = (|| -> Result<(), String> {
                for _ in 0..KILL_CALLS {
                    let code = talk(&a, &w, &mut eintr)?;
                    codes.push(code);
                    if code == BR_DEAD_REPLY {
                        break;
                    }
                }
                Ok(())
            })();
            let _ = tx.send(r.map(|()| (codes, eintr)));
        });
    }
    drop(tx);
    for _ in 0..KILL_THREADS {
        let left = hang.saturating_sub(start.elapsed());
        let (codes, eintr) = rx.recv_timeout(left).map_err(|_| {
            format!(
                "a thread of A is still in its BINDER_WRITE_READ {} ms after its round \
                 began (B died with its call {k} in flight): the call never returned",
                start.elapsed().as_millis()
            )
        })??;
        st.eintr += eintr;
        for code in codes {
            match code {
                BR_REPLY => st.replies += 1,
                BR_DEAD_REPLY => st.dead += 1,
                _ => st.failed += 1,
            }
        }
    }
    st.worst = st.worst.max(start.elapsed());
    b_proc.kill();
    // B is gone: its death notification, then A's node released by B's teardown.
    let deadline = Instant::now() + hang;
    let mut dead = false;
    let mut log = Vec::new();
    loop {
        while let Some(r) = a.try_next(50).map_err(|e| format!("A: read: {e}"))? {
            match r {
                Return::Increfs(pc) => {
                    a.write(WriteBuf::new().increfs_done(pc.ptr, pc.cookie))
                        .map_err(|e| e.to_string())?;
                }
                Return::Acquire(pc) => {
                    a.write(WriteBuf::new().acquire_done(pc.ptr, pc.cookie))
                        .map_err(|e| e.to_string())?;
                }
                Return::DeadBinder(COOKIE) => {
                    a.write(
                        WriteBuf::new()
                            .dead_binder_done(COOKIE)
                            .release(0)
                            .decrefs(0),
                    )
                    .map_err(|e| e.to_string())?;
                    dead = true;
                }
                _ => {}
            }
            log.push(r.name());
        }
        let i = a
            .node_debug_info(0)
            .map_err(|e| format!("BINDER_GET_NODE_DEBUG_INFO: {e}"))?;
        let released = i.ptr == 0 || (i.has_strong_ref == 0 && i.has_weak_ref == 0);
        if dead && released {
            return Ok(());
        }
        if Instant::now() >= deadline {
            return Err(format!(
                "{} ms after B died: {}; A read {log:?}",
                hang.as_millis(),
                if !dead {
                    "no BR_DEAD_BINDER for handle 0 (B's teardown did not run)".to_string()
                } else {
                    format!(
                        "A's node {A_NODE:#x} still referenced (has_strong_ref {}, has_weak_ref \
                         {}): a reference from the dead B was never given back",
                        i.has_strong_ref, i.has_weak_ref
                    )
                }
            ));
        }
    }
}
