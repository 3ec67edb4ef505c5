//! Regression tests for the known binder bug patterns. Each reproduces the scenario on
//! a fresh binderfs device and asserts what Linux 6.12's C driver does; a kernel splat
//! on the way is caught by the harness reading the console.

use crate::sys::Fs;
use crate::Report;
use binder_uapi::harness::{fork_proc, run_isolated, sleep_ms, Outcome, Pipe, Proc};
use binder_uapi::proto::bytes_of;
use binder_uapi::*;
use binder_uapi::{ensure, ensure_eq, fail};
use std::time::Duration;

pub struct Ctx {
    pub dev: String,
    pub logs: Option<String>,
}

pub type TestFn = fn(&Ctx) -> TResult;

pub fn all() -> Vec<(&'static str, TestFn)> {
    vec![
        ("epoll_thread_exit", epoll_thread_exit as TestFn),
        (
            "epoll_thread_exit_other_thread",
            epoll_thread_exit_other_thread,
        ),
        ("sg_parent_out_of_bounds", sg_parent_out_of_bounds),
        ("ref_release_vs_node_death", ref_release_vs_node_death),
        ("death_list_race_node_release", death_list_race_node_release),
        ("empty_fda_at_end_of_buffer", empty_fda_at_end_of_buffer),
        ("dead_binder_done_non_looper", dead_binder_done_non_looper),
        ("offsets_not_reread", offsets_not_reread),
        ("tf_update_txn_order", tf_update_txn_order),
        ("refcount_underflow", refcount_underflow),
        ("extended_error_updated", extended_error_updated),
        ("txn_vs_target_death", txn_vs_target_death),
        ("send_vs_last_ref_release", send_vs_last_ref_release),
        ("offer_vs_last_ref_release", offer_vs_last_ref_release),
    ]
}

pub fn run(fs: &Fs, filter: Option<&str>, rep: &mut Report) {
    run_group("regress", "rg", all(), fs, filter, rep);
}

/// Runs the tests `tests` of group `group` (named `group::test`), each on a binderfs device of
/// its own (`<dev_prefix><pid>-<i>`).
pub fn run_group(
    group: &str,
    dev_prefix: &str,
    tests: Vec<(&'static str, TestFn)>,
    fs: &Fs,
    filter: Option<&str>,
    rep: &mut Report,
) {
    let pid = std::process::id();
    for (i, (name, f)) in tests.into_iter().enumerate() {
        let full = format!("{group}::{name}");
        if let Some(flt) = filter {
            if !full.contains(flt) {
                continue;
            }
        }
        let devname = format!("{dev_prefix}{pid}-{i}");
        let o = match binderfs::Device::create(&fs.mnt, &devname) {
            Err(e) => Outcome::Fail(format!("BINDER_CTL_ADD {devname}: {e}")),
            Ok(d) => {
                let ctx = Ctx {
                    dev: d.path(),
                    logs: fs.logs.clone(),
                };
                let o = run_isolated(Duration::from_secs(60), || {
                    binder_uapi::harness::quiet_panics();
                    f(&ctx)
                });
                drop(d);
                o
            }
        };
        crate::sys::shared()
            .ioctls
            .fetch_add(20, std::sync::atomic::Ordering::Relaxed);
        match o {
            Outcome::Pass => rep.result(&full, &[]),
            Outcome::Fail(m) => rep.result(&full, &[m]),
            Outcome::Skip(m) => rep.skip(&full, &m),
        }
    }
}

// ---------------------------------------------------------------------------
// Building blocks
// ---------------------------------------------------------------------------

const NODE_PTR: u64 = 0x5000;
const NODE_COOKIE: u64 = 0x5001;
/// Server codes: reply with a strong binder object for NODE_PTR.
const CODE_NODE: u32 = 1;
/// Echo the data back.
const CODE_ECHO: u32 = 2;
/// Check an offsets-race transaction (see offsets_not_reread); reply 1 byte verdict.
const CODE_CHECK_OFFSETS: u32 = 3;
/// Check the empty-FDA transaction; reply 1 byte verdict.
const CODE_CHECK_EMPTY_FDA: u32 = 4;

struct Server {
    proc_: Proc,
    pid: i32,
}

/// BINDER_SET_CONTEXT_MGR on `b`, retried while the previous test's context manager is still
/// in its deferred release (EBUSY).
pub fn become_context_manager(b: &Binder) -> TResult {
    let mut tries = 0;
    while let Err(e) = b.set_context_mgr() {
        tries += 1;
        if e.raw_os_error() != Some(libc::EBUSY) || tries > 100 {
            return Err(format!("BINDER_SET_CONTEXT_MGR: {e}").into());
        }
        sleep_ms(50);
    }
    Ok(())
}

/// Fork a context manager for `dev` that answers CODE_* and node reference requests.
fn spawn_server(dev: &str) -> Result<Server, String> {
    let ready = Pipe::new().map_err(|e| e.to_string())?;
    let d = dev.to_string();
    let p = fork_proc(|| {
        let b = Binder::open_mapped(&d)?;
        become_context_manager(&b)?;
        b.enter_looper()?;
        ready.send_u64(harness::getpid() as u64)?;
        loop {
            let r = match b.try_next(60_000)? {
                Some(r) => r,
                None => return Ok(()),
            };
            let mut w = WriteBuf::new();
            match r {
                Return::Transaction(td) | Return::TransactionSecCtx(td, _) => {
                    let rec = b.received(&td)?;
                    let mut p = Payload::new();
                    match td.code {
                        CODE_NODE => {
                            p.binder(NODE_PTR, NODE_COOKIE, 0);
                        }
                        CODE_CHECK_OFFSETS => {
                            p.u32(check_offsets(&rec) as u32);
                        }
                        CODE_CHECK_EMPTY_FDA => {
                            p.u32(check_empty_fda(&b, &rec) as u32);
                        }
                        _ => {
                            p.bytes(&rec.data);
                        }
                    }
                    w.free_buffer(td.buffer);
                    if td.flags & TF_ONE_WAY == 0 {
                        w.reply(0, &p);
                    }
                }
                Return::Increfs(pc) => {
                    w.increfs_done(pc.ptr, pc.cookie);
                }
                Return::Acquire(pc) => {
                    w.acquire_done(pc.ptr, pc.cookie);
                }
                Return::DeadBinder(c) => {
                    w.dead_binder_done(c);
                }
                _ => {}
            }
            if !w.is_empty() {
                let _ = b.write(&w);
            }
        }
    })
    .map_err(|e| format!("fork: {e}"))?;
    let pid = ready
        .recv_u64_within(Duration::from_secs(10))
        .map_err(|e| format!("server did not start: {e}"))?;
    Ok(Server {
        proc_: p,
        pid: pid as i32,
    })
}

/// Get the server's node as a handle held with one strong and one weak reference of
/// our own (the reply buffer's reference is dropped by freeing it).
fn get_node(b: &Binder) -> Result<u32, String> {
    let rec = b.call_nofree(0, CODE_NODE, &Payload::new())?;
    if rec.offsets.len() != 1 {
        return Err(format!("node reply has {} objects", rec.offsets.len()));
    }
    let obj: flat_binder_object = rec.object(rec.offsets[0]);
    if obj.hdr.type_ != BINDER_TYPE_HANDLE {
        return Err(format!("node reply object type {:#x}", obj.hdr.type_));
    }
    let h = obj.handle();
    let mut w = WriteBuf::new();
    w.increfs(h).acquire(h).free_buffer(rec.td.buffer);
    b.write(&w)
        .map_err(|e| format!("BC_INCREFS/BC_ACQUIRE/BC_FREE_BUFFER: {e}"))?;
    Ok(h)
}

/// Write `w` and require the whole stream consumed and the ioctl to succeed.
fn write_all(b: &Binder, w: &WriteBuf, what: &str) -> TResult {
    let (r, consumed) = b.write_consumed(w);
    if let Err(e) = r {
        fail!("{what}: BINDER_WRITE_READ failed: {e}");
    }
    ensure_eq!(consumed, w.len() as u64, format!("{what}: write_consumed"));
    Ok(())
}

/// `(strong, weak)` of `handle` in process `pid`, from binder_logs/proc/<pid>;
/// None if the ref is not listed; Err if the logs cannot be read.
fn ref_counts(c: &Ctx, pid: i32, handle: u32) -> Result<Option<(i64, i64)>, TestErr> {
    let dir = match &c.logs {
        Some(d) => d,
        None => {
            return Err(TestErr::Skip(
                "no binder_logs to read ref counts from".into(),
            ))
        }
    };
    // binder_logs/proc/<pid>, or this process's section of binder_logs/state.
    let s = match std::fs::read_to_string(format!("{dir}/proc/{pid}")) {
        Ok(s) => s,
        Err(_) => {
            let st = std::fs::read_to_string(format!("{dir}/state"))
                .map_err(|e| TestErr::Fail(format!("{dir}/state: {e}")))?;
            let head = format!("proc {pid}");
            let mut sect = String::new();
            let mut inside = false;
            for l in st.lines() {
                if l.starts_with("proc ") {
                    inside = l.trim() == head;
                    continue;
                }
                if inside {
                    sect.push_str(l);
                    sect.push('\n');
                }
            }
            sect
        }
    };
    for l in s.lines() {
        let t = l.trim_start();
        if !t.starts_with("ref ") {
            continue;
        }
        let words: Vec<&str> = t.split_whitespace().collect();
        let at = |k: &str| {
            words
                .iter()
                .position(|w| *w == k)
                .and_then(|i| words.get(i + 1))
                .and_then(|v| v.parse::<i64>().ok())
        };
        if at("desc") == Some(handle as i64) {
            return Ok(Some((at("s").unwrap_or(-1), at("w").unwrap_or(-1))));
        }
    }
    Ok(None)
}

fn set_nonblock(fd: i32, on: bool) {
    // SAFETY: fcntl on our own fd.
    unsafe {
        let fl = libc::fcntl(fd, libc::F_GETFL);
        let fl = if on {
            fl | libc::O_NONBLOCK
        } else {
            fl & !libc::O_NONBLOCK
        };
        libc::fcntl(fd, libc::F_SETFL, fl);
    }
}

/// Progress notes on stderr when BINDER_FUZZ_TRACE is set.
fn trace(s: &str) {
    if std::env::var_os("BINDER_FUZZ_TRACE").is_some() {
        eprintln!("# trace: {s}");
    }
}

/// Answer BR_INCREFS/BR_ACQUIRE seen on the way, as libbinder does.
fn ack_node_refs(b: &Binder, seen: &[Return]) -> TResult {
    let mut w = WriteBuf::new();
    for r in seen {
        match r {
            Return::Increfs(pc) => {
                w.increfs_done(pc.ptr, pc.cookie);
            }
            Return::Acquire(pc) => {
                w.acquire_done(pc.ptr, pc.cookie);
            }
            _ => {}
        }
    }
    if !w.is_empty() {
        write_all(b, &w, "BC_INCREFS_DONE/BC_ACQUIRE_DONE")?;
    }
    Ok(())
}

fn epoll_add(ep: i32, fd: i32) -> i32 {
    let mut ev = libc::epoll_event {
        events: libc::EPOLLIN as u32,
        u64: fd as u64,
    };
    // SAFETY: valid epoll fd and event.
    if unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, fd, &mut ev) } < 0 {
        crate::sys::errno()
    } else {
        0
    }
}

fn epoll_del(ep: i32, fd: i32) -> i32 {
    // SAFETY: valid epoll fd.
    if unsafe { libc::epoll_ctl(ep, libc::EPOLL_CTL_DEL, fd, core::ptr::null_mut()) } < 0 {
        crate::sys::errno()
    } else {
        0
    }
}

fn epoll_create() -> Result<i32, String> {
    // SAFETY: plain syscall.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        Err(format!("epoll_create1: errno {}", crate::sys::errno()))
    } else {
        Ok(ep)
    }
}

// ---------------------------------------------------------------------------
// CVE-2019-2215: BINDER_THREAD_EXIT while the binder fd is in an epoll set
// ---------------------------------------------------------------------------

/// The thread's wait queue is freed by BINDER_THREAD_EXIT; epoll must have been
/// detached from it (POLLFREE), so EPOLL_CTL_DEL and closing the epoll fd afterwards
/// touch no freed memory. The C driver: every step succeeds, the fd keeps working.
fn epoll_thread_exit(c: &Ctx) -> TResult {
    let srv = spawn_server(&c.dev)?;
    let b = Binder::open_mapped(&c.dev)?;
    for round in 0..3 {
        let ep = epoll_create()?;
        ensure_eq!(
            epoll_add(ep, b.fd()),
            0,
            format!("round {round}: EPOLL_CTL_ADD")
        );
        let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 4];
        // SAFETY: valid buffer of 4 events.
        unsafe { libc::epoll_wait(ep, evs.as_mut_ptr(), 4, 0) };
        b.thread_exit()
            .map_err(|e| format!("round {round}: BINDER_THREAD_EXIT: {e}"))?;
        // SAFETY: as above.
        unsafe { libc::epoll_wait(ep, evs.as_mut_ptr(), 4, 0) };
        match round {
            0 => ensure_eq!(
                epoll_del(ep, b.fd()),
                0,
                "EPOLL_CTL_DEL after BINDER_THREAD_EXIT"
            ),
            1 => {
                // A new binder thread comes with the next ioctl; poll it again.
                ensure_eq!(b.version()?, 8, "BINDER_VERSION after thread exit");
                ensure_eq!(epoll_del(ep, b.fd()), 0, "EPOLL_CTL_DEL after a new thread");
                ensure_eq!(epoll_add(ep, b.fd()), 0, "EPOLL_CTL_ADD of the new thread");
            }
            _ => {}
        }
        // Round 2 leaves the entry for close() to tear down.
        crate::sys::close(ep);
    }
    let r = b.call(0, CODE_ECHO, &Payload::from_bytes(b"after-epoll"))?;
    ensure_eq!(
        r.data,
        b"after-epoll".to_vec(),
        "echo after the epoll rounds"
    );
    drop(b);
    srv.proc_.kill();
    Ok(())
}

/// Same, with the epoll instance and the exiting binder thread on different OS threads:
/// the exiting thread polls then leaves (THREAD_EXIT) while the main thread still
/// holds the epoll fd and then closes it.
fn epoll_thread_exit_other_thread(c: &Ctx) -> TResult {
    let b = Binder::open_mapped(&c.dev)?;
    let ep = epoll_create()?;
    let fd = b.fd();
    let res = std::thread::scope(|s| {
        s.spawn(|| -> Result<(), String> {
            if epoll_add(ep, fd) != 0 {
                return Err("EPOLL_CTL_ADD in the worker".into());
            }
            let mut z = 0i32;
            // SAFETY: valid pointer to an int.
            if unsafe { libc::ioctl(fd, BINDER_THREAD_EXIT as _, &mut z) } != 0 {
                return Err(format!("BINDER_THREAD_EXIT errno {}", crate::sys::errno()));
            }
            Ok(())
        })
        .join()
        .unwrap_or(Err("worker panicked".into()))
    });
    res?;
    let mut evs = [libc::epoll_event { events: 0, u64: 0 }; 4];
    // SAFETY: valid buffer.
    let n = unsafe { libc::epoll_wait(ep, evs.as_mut_ptr(), 4, 0) };
    ensure!(
        n >= 0,
        "epoll_wait after the worker's thread exit: errno {}",
        crate::sys::errno()
    );
    crate::sys::close(ep);
    ensure_eq!(b.version()?, 8, "BINDER_VERSION afterwards");
    Ok(())
}

// ---------------------------------------------------------------------------
// CVE-2020-0041: scatter-gather parents out of bounds
// ---------------------------------------------------------------------------

fn sg_send(b: &Binder, p: &Payload, sg_size: u64, flags: u32) -> Result<Return, String> {
    let mut w = WriteBuf::new();
    w.transaction_sg(false, 0, CODE_ECHO, flags, p, sg_size);
    let (_pre, last) = b.call_raw(&w)?;
    if let Return::Reply(td) = last {
        b.free_buffer(td.buffer)
            .map_err(|e| format!("BC_FREE_BUFFER: {e}"))?;
    }
    Ok(last)
}

fn expect_failed(b: &Binder, what: &str, p: &Payload, sg: u64, param: i32) -> TResult {
    let r = sg_send(b, p, sg, TF_ACCEPT_FDS).map_err(|e| format!("{what}: {e}"))?;
    ensure!(
        r == Return::FailedReply,
        "{what}: expected BR_FAILED_REPLY, got {}",
        r.name()
    );
    let e = b.extended_error()?;
    ensure!(
        e.command == BR_FAILED_REPLY && e.param == param,
        "{what}: extended error expected (BR_FAILED_REPLY, {param}), got ({:#x}, {})",
        e.command,
        e.param
    );
    Ok(())
}

// 7.2 upstream Rust: FDA to a node without ACCEPTS_FDS: -EPERM before the parent check
//   (thread.rs:Thread::translate_object, Fda arm); C -EINVAL (docs/oracle.md)
/// Parents must be earlier objects, fixups must stay inside the parent, fd arrays must
/// fit their parent. 6.12's C driver: BR_FAILED_REPLY with extended error -EINVAL for
/// each lie, and the honest chain goes through.
fn sg_parent_out_of_bounds(c: &Ctx) -> TResult {
    let srv = spawn_server(&c.dev)?;
    let b = Binder::open_mapped(&c.dev)?;
    let buf_a = [0x11u8; 16];
    let buf_b = [0x22u8; 16];
    let fds = [0i32, 1i32];
    let pa = buf_a.as_ptr() as u64;
    let pb = buf_b.as_ptr() as u64;
    // 1. FDA whose parent is a later (not yet validated) object: the CVE-2020-0041
    //    num_valid miscalculation.
    // Objects start at offset 8: the C driver cannot fix up into a parent at offset 0
    // (last_fixup_obj_off == 0 means "no parent yet"), so every buffer here leads with
    // 8 bytes of plain data to hit the intended check.
    let mut p = Payload::new();
    p.u64(0);
    p.fda(1, 1, 0);
    p.ptr(fds.as_ptr() as u64, 8, None);
    expect_failed(&b, "FDA with a later parent", &p, 8, -libc::EINVAL)?;
    // 2. PTR whose parent is itself.
    let mut p = Payload::new();
    p.u64(0);
    p.ptr(pa, 16, None);
    p.ptr(pb, 16, Some((1, 0)));
    expect_failed(&b, "PTR parented to itself", &p, 32, -libc::EINVAL)?;
    // 3. parent index far out of range.
    let mut p = Payload::new();
    p.u64(0);
    p.ptr(pa, 16, None);
    p.ptr(pb, 16, Some((0x4000_0000, 0)));
    expect_failed(&b, "PTR parent index out of range", &p, 32, -libc::EINVAL)?;
    // 4. parent_offset past the parent's end (the pointer would be written beyond it).
    let mut p = Payload::new();
    p.u64(0);
    p.ptr(pa, 16, None);
    p.ptr(pb, 16, Some((0, 16)));
    expect_failed(
        &b,
        "PTR parent_offset == parent length",
        &p,
        32,
        -libc::EINVAL,
    )?;
    let mut p = Payload::new();
    p.u64(0);
    p.ptr(pa, 16, None);
    p.ptr(pb, 16, Some((0, u64::MAX - 3)));
    expect_failed(&b, "PTR parent_offset wrapping", &p, 32, -libc::EINVAL)?;
    // 5. fd array running past its parent.
    let mut p = Payload::new();
    p.u64(0);
    p.ptr(fds.as_ptr() as u64, 8, None);
    p.fda(2, 0, 4);
    expect_failed(&b, "FDA past the parent's end", &p, 8, -libc::EINVAL)?;
    let mut p = Payload::new();
    p.u64(0);
    p.ptr(fds.as_ptr() as u64, 8, None);
    p.fda(u64::MAX / 2, 0, 0);
    expect_failed(&b, "FDA with a huge num_fds", &p, 8, -libc::EINVAL)?;
    // 6. the parent is not a PTR object.
    let mut p = Payload::new();
    p.u64(0);
    p.binder(0x7000, 0x7001, 0);
    p.ptr(pb, 16, Some((0, 0)));
    expect_failed(&b, "PTR parented to a binder object", &p, 16, -libc::EINVAL)?;
    // 7. an honest chain still works afterwards.
    let mut p = Payload::new();
    p.u64(0);
    p.ptr(pa, 16, None);
    p.ptr(pb, 16, Some((0, 8)));
    let r = sg_send(&b, &p, 32, 0)?;
    ensure!(
        matches!(r, Return::Reply(_)),
        "honest scatter-gather chain: expected BR_REPLY, got {}",
        r.name()
    );
    drop(b);
    srv.proc_.kill();
    Ok(())
}

// ---------------------------------------------------------------------------
// Ref release racing node death
// ---------------------------------------------------------------------------

/// A client hammers BC_ACQUIRE/BC_RELEASE/BC_INCREFS/BC_DECREFS on a handle while the
/// node's owner is killed. Afterwards a transaction to the handle is BR_DEAD_REPLY, the
/// death notification arrives, and dropping the last references is clean.
fn ref_release_vs_node_death(c: &Ctx) -> TResult {
    for round in 0..4u64 {
        let srv = spawn_server(&c.dev)?;
        let b = Binder::open_mapped(&c.dev)?;
        b.enter_looper()?;
        let h = get_node(&b)?;
        let mut w = WriteBuf::new();
        w.request_death(h, 0xd0 + round);
        write_all(&b, &w, "BC_REQUEST_DEATH_NOTIFICATION")?;
        let victim = srv.pid;
        let delay = 5 + round * 7;
        let killer = std::thread::spawn(move || {
            sleep_ms(delay);
            // SAFETY: our child.
            unsafe { libc::kill(victim, libc::SIGKILL) };
        });
        let mut hammer = WriteBuf::new();
        hammer.acquire(h).release(h).increfs(h).decrefs(h);
        for _ in 0..300 {
            write_all(&b, &hammer, "refcount hammer")?;
        }
        let _ = killer.join();
        srv.proc_.kill();
        // The node is dead now: the death notification comes, transactions fail.
        let mut seen_death = false;
        let mut tries = 0;
        loop {
            tries += 1;
            let mut w = WriteBuf::new();
            w.transaction(h, CODE_ECHO, 0, &Payload::from_bytes(b"x"));
            let (pre, last) = b.call_raw(&w)?;
            for r in &pre {
                if let Return::DeadBinder(ck) = r {
                    ensure_eq!(*ck, 0xd0 + round, "BR_DEAD_BINDER cookie");
                    seen_death = true;
                }
            }
            if last == Return::DeadReply {
                break;
            }
            if let Return::Reply(td) = last {
                // The owner was still being torn down; its reply came first.
                let _ = b.free_buffer(td.buffer);
            } else {
                fail!(
                    "round {round}: transaction to the dying node: {}",
                    last.name()
                );
            }
            ensure!(
                tries < 50,
                "round {round}: no BR_DEAD_REPLY after the owner was killed"
            );
            sleep_ms(50);
        }
        if !seen_death {
            match b.next_within(5000)? {
                Return::DeadBinder(ck) => ensure_eq!(ck, 0xd0 + round, "BR_DEAD_BINDER cookie"),
                o => fail!("round {round}: expected BR_DEAD_BINDER, got {}", o.name()),
            }
        }
        let mut w = WriteBuf::new();
        w.dead_binder_done(0xd0 + round)
            .release(h)
            .decrefs(h)
            // past zero on a ref that is gone by now: only a user error
            .release(h)
            .decrefs(h);
        write_all(&b, &w, "final release")?;
        if c.logs.is_some() {
            ensure_eq!(
                ref_counts(c, harness::getpid(), h)?,
                None,
                format!("round {round}: ref of handle {h} after its last reference went")
            );
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// CVE-2025-68260: death notification list race in node release
// ---------------------------------------------------------------------------

/// Several processes with two threads each request and clear death notifications on
/// the same node in a loop while its owner dies. Afterwards each process can still
/// register a death notification (delivered at once, the node being dead), and
/// clear-after-delivery ends with BR_CLEAR_DEATH_NOTIFICATION_DONE.
fn death_list_race_node_release(c: &Ctx) -> TResult {
    for round in 0..3u64 {
        let srv = spawn_server(&c.dev)?;
        let mut clients = Vec::new();
        let mut pipes = Vec::new();
        for k in 0..3u64 {
            let ready = Pipe::new()?;
            let go = Pipe::new()?;
            let dev = c.dev.clone();
            let (rref, gref) = (&ready, &go);
            clients.push(fork_proc(move || death_client(&dev, k, rref, gref))?);
            pipes.push((ready, go));
        }
        for (r, _) in &pipes {
            r.recv_u64_within(Duration::from_secs(15))
                .map_err(|e| format!("round {round}: client not ready: {e}"))?;
        }
        for (_, g) in &pipes {
            g.send(&[1])?;
        }
        sleep_ms(10 + 15 * round);
        let mut s = srv;
        s.proc_.kill_and_reap();
        for (_, g) in &pipes {
            g.send(&[2])?;
        }
        for (i, p) in clients.into_iter().enumerate() {
            p.join_within(Duration::from_secs(40))
                .map_err(|e| format!("round {round} client {i}: {e:?}"))?;
        }
    }
    Ok(())
}

fn death_client(dev: &str, k: u64, ready: &Pipe, go: &Pipe) -> TResult {
    let b = Binder::open_mapped(dev)?;
    b.enter_looper()?;
    let h = get_node(&b)?;
    ready.send_u64(1)?;
    go.recv_exact(1, Duration::from_secs(20))?;
    // Reads during the hammering must never block (the threads are not loopers).
    set_nonblock(b.fd(), true);
    let bref = &b;
    std::thread::scope(|s| {
        for t in 0..2u64 {
            s.spawn(move || {
                let ck = 0x100 * (k + 1) + t;
                for _ in 0..150 {
                    let mut w = WriteBuf::new();
                    w.request_death(h, ck).clear_death(h, ck);
                    let _ = bref.write(&w);
                    if bref.poll(0).unwrap_or(false) {
                        let mut rb = [0u8; 256];
                        let mut bwr = binder_write_read {
                            read_size: rb.len() as u64,
                            read_buffer: rb.as_mut_ptr() as u64,
                            ..Default::default()
                        };
                        let _ = bref.write_read_raw(&mut bwr);
                        let mut w = WriteBuf::new();
                        for r in decode(&rb[..bwr.read_consumed as usize]) {
                            if let Return::DeadBinder(c) = r {
                                w.dead_binder_done(c);
                            }
                        }
                        if !w.is_empty() {
                            let _ = bref.write(&w);
                        }
                    }
                }
            });
        }
    });
    set_nonblock(b.fd(), false);
    trace(&format!("client {k}: hammer done"));
    // The second byte comes once the owner has been killed and reaped.
    go.recv_exact(1, Duration::from_secs(20))?;
    trace(&format!("client {k}: owner dead"));
    // Settle: acknowledge every delivered death, drop every registration.
    let settle = |b: &Binder| -> TResult {
        while let Some(r) = b.try_next(200)? {
            if let Return::DeadBinder(c) = r {
                let mut w = WriteBuf::new();
                w.dead_binder_done(c);
                let _ = b.write(&w);
            }
        }
        Ok(())
    };
    settle(&b)?;
    for t in 0..2u64 {
        let mut w = WriteBuf::new();
        w.clear_death(h, 0x100 * (k + 1) + t);
        let _ = b.write(&w);
    }
    settle(&b)?;
    trace(&format!("client {k}: settled"));
    // A fresh registration on the dead node is delivered at once.
    let fin = 0xf00 + k;
    let mut w = WriteBuf::new();
    w.request_death(h, fin);
    write_all(&b, &w, "BC_REQUEST_DEATH_NOTIFICATION on a dead node")?;
    loop {
        match b.next_within(5000)? {
            Return::DeadBinder(c) if c == fin => break,
            Return::DeadBinder(c) => {
                let mut w = WriteBuf::new();
                w.dead_binder_done(c);
                let _ = b.write(&w);
            }
            Return::ClearDeathNotificationDone(_) => {}
            o => fail!("waiting for BR_DEAD_BINDER({fin:#x}): got {}", o.name()),
        }
    }
    let mut w = WriteBuf::new();
    w.clear_death(h, fin).dead_binder_done(fin);
    write_all(&b, &w, "BC_CLEAR_DEATH_NOTIFICATION + BC_DEAD_BINDER_DONE")?;
    match b.next_within(5000)? {
        Return::ClearDeathNotificationDone(c) => {
            ensure_eq!(c, fin, "BR_CLEAR_DEATH_NOTIFICATION_DONE cookie")
        }
        o => fail!(
            "expected BR_CLEAR_DEATH_NOTIFICATION_DONE, got {}",
            o.name()
        ),
    }
    let mut w = WriteBuf::new();
    w.release(h).decrefs(h);
    write_all(&b, &w, "BC_RELEASE + BC_DECREFS")?;
    Ok(())
}

// ---------------------------------------------------------------------------
// An empty fd array at the very end of the buffer
// ---------------------------------------------------------------------------

/// Receiver side of empty_fda_at_end_of_buffer: two objects, the FDA last, empty,
/// pointing at the end of its parent.
fn check_empty_fda(b: &Binder, rec: &Received) -> bool {
    if rec.offsets.len() != 2 {
        return false;
    }
    let fda: binder_fd_array_object = rec.object(rec.offsets[1]);
    let parent: binder_buffer_object = rec.object(rec.offsets[0]);
    fda.hdr.type_ == BINDER_TYPE_FDA
        && fda.num_fds == 0
        && fda.parent == 0
        && fda.parent_offset == 16
        && rec.offsets[1] + 32 == rec.data.len() as u64
        && parent.length == 16
        && b.read_mapped(parent.buffer, 16)
            .map(|v| v == vec![0x33u8; 16])
            .unwrap_or(false)
}

// 7.2 upstream Rust: an FDA of 0 fds to a node without ACCEPTS_FDS is refused with -EPERM
//   (thread.rs:Thread::translate_object checks allow_fds first); C accepts it incidentally
//   (binder_translate_fd_array returns early for num_fds == 0) (docs/oracle.md)
/// A zero-length fd array whose parent_offset is the parent's length, as the last
/// object of the buffer. The C driver accepts it: the transaction is delivered, the
/// buffer frees cleanly (nothing to close), and the reply arrives.
fn empty_fda_at_end_of_buffer(c: &Ctx) -> TResult {
    let srv = spawn_server(&c.dev)?;
    let b = Binder::open_mapped(&c.dev)?;
    let parent = [0x33u8; 16];
    for flags in [0, TF_ACCEPT_FDS] {
        let mut p = Payload::new();
        p.u64(0);
        p.ptr(parent.as_ptr() as u64, 16, None);
        p.fda(0, 0, 16);
        let mut w = WriteBuf::new();
        w.transaction_sg(false, 0, CODE_CHECK_EMPTY_FDA, flags, &p, 16);
        let (_pre, last) = b.call_raw(&w)?;
        match last {
            Return::Reply(td) => {
                let rec = b.received(&td)?;
                b.free_buffer(td.buffer)?;
                ensure_eq!(
                    rec.data,
                    1u32.to_ne_bytes().to_vec(),
                    "receiver's verdict on the buffer"
                );
            }
            o => fail!(
                "empty fd array at the end (flags {flags:#x}): expected BR_REPLY, got {}",
                o.name()
            ),
        }
    }
    // The same as a one-way transaction the receiver frees without replying.
    let mut p = Payload::new();
    p.u64(0);
    p.ptr(parent.as_ptr() as u64, 16, None);
    p.fda(0, 0, 16);
    let mut w = WriteBuf::new();
    w.transaction_sg(false, 0, CODE_ECHO, TF_ONE_WAY, &p, 16);
    write_all(&b, &w, "one-way empty fd array")?;
    ensure_eq!(
        b.next()?.name(),
        "BR_TRANSACTION_COMPLETE",
        "one-way completion"
    );
    let r = b.call(0, CODE_ECHO, &Payload::from_bytes(b"ok"))?;
    ensure_eq!(r.data, b"ok".to_vec(), "echo afterwards");
    drop(b);
    srv.proc_.kill();
    Ok(())
}

// ---------------------------------------------------------------------------
// BC_DEAD_BINDER_DONE from a thread that is not a looper
// ---------------------------------------------------------------------------

/// A looper thread receives BR_DEAD_BINDER; a non-looper thread clears the
/// notification and sends BC_DEAD_BINDER_DONE. The C driver queues the
/// BR_CLEAR_DEATH_NOTIFICATION_DONE to the process (not to the non-looper thread's
/// own list), so the looper, the only thread reading, receives it; the non-looper's
/// write returns at once (the Rust driver deadlocked here).
fn dead_binder_done_non_looper(c: &Ctx) -> TResult {
    let srv = spawn_server(&c.dev)?;
    let b = Binder::open_mapped(&c.dev)?;
    let h = get_node(&b)?;
    // No read may block here: a wrong turn becomes an error message, not a hang.
    set_nonblock(b.fd(), true);
    trace(&format!(" got node {h}"));
    const CK: u64 = 0xdeadc0de;
    let (tx, rx) = std::sync::mpsc::channel::<u32>();
    let bref = &b;
    let victim = srv.pid;
    let res: TResult = std::thread::scope(|s| {
        let looper = s.spawn(move || -> Result<Vec<Return>, String> {
            bref.enter_looper()
                .map_err(|e| format!("BC_ENTER_LOOPER: {e}"))?;
            let _ = tx.send(1);
            let mut seen = Vec::new();
            loop {
                let r = bref.next_within(10_000);
                trace(&format!(" looper got {r:?}"));
                match r? {
                    r @ Return::DeadBinder(_) => {
                        seen.push(r);
                        let _ = tx.send(2);
                    }
                    r @ Return::ClearDeathNotificationDone(_) => {
                        seen.push(r);
                        return Ok(seen);
                    }
                    r => seen.push(r),
                }
            }
        });
        // This (main) thread never enters the looper.
        rx.recv_timeout(Duration::from_secs(5))
            .map_err(|_| "looper did not start".to_string())?;
        let mut w = WriteBuf::new();
        w.request_death(h, CK);
        write_all(bref, &w, "BC_REQUEST_DEATH_NOTIFICATION (non-looper)")?;
        trace(&" requested death".to_string());
        // SAFETY: our child.
        unsafe { libc::kill(victim, libc::SIGKILL) };
        trace(&" killed".to_string());
        rx.recv_timeout(Duration::from_secs(10))
            .map_err(|_| "the looper got no BR_DEAD_BINDER".to_string())?;
        trace(&" main saw looper death".to_string());
        let t0 = std::time::Instant::now();
        let mut w = WriteBuf::new();
        w.clear_death(h, CK).dead_binder_done(CK);
        write_all(
            bref,
            &w,
            "BC_CLEAR_DEATH_NOTIFICATION + BC_DEAD_BINDER_DONE (non-looper)",
        )?;
        ensure!(
            t0.elapsed() < Duration::from_secs(2),
            "the non-looper's write took {:?}",
            t0.elapsed()
        );
        trace(&" main wrote clear+done".to_string());
        // The non-looper thread does not read: in the C driver any thread with an
        // empty todo list takes process work (not entering the looper only logs an
        // error), so a read here could take the BR_CLEAR_DEATH_NOTIFICATION_DONE.
        let seen = looper.join().map_err(|_| "looper panicked".to_string())??;
        ensure_eq!(
            seen,
            vec![
                Return::DeadBinder(CK),
                Return::ClearDeathNotificationDone(CK)
            ],
            "what the looper thread received"
        );
        Ok(())
    });
    res?;
    let mut w = WriteBuf::new();
    w.release(h).decrefs(h).dead_binder_done(CK);
    write_all(&b, &w, "release and a stray BC_DEAD_BINDER_DONE")?;
    srv.proc_.kill();
    Ok(())
}

// ---------------------------------------------------------------------------
// Offsets are read once, from the kernel's copy
// ---------------------------------------------------------------------------

/// Receiver side of offsets_not_reread: exactly one object, at offset 0, translated
/// into a handle (a node sent by the client).
fn check_offsets(rec: &Received) -> bool {
    if rec.offsets != vec![0] || rec.data.len() != 48 {
        return false;
    }
    let o: flat_binder_object = rec.object(0);
    let tail_zero = rec.data[24..].iter().all(|b| *b == 0);
    o.hdr.type_ == BINDER_TYPE_HANDLE && tail_zero
}

/// The sender flips its offsets array between a valid object (0) and zero bytes (24)
/// while sending. Each transaction either fails (BR_FAILED_REPLY, the zeros are no
/// object) or arrives consistent: the receiver's offsets say 0 and the object there
/// was translated. The receiver cannot write its mapping, so it cannot change the
/// offsets under the driver either.
fn offsets_not_reread(c: &Ctx) -> TResult {
    let srv = spawn_server(&c.dev)?;
    let b = Binder::open_mapped(&c.dev)?;
    // The receiver's mapping is read-only for good.
    // SAFETY: mprotect on our own binder mapping; refusal expected.
    let r = unsafe {
        libc::mprotect(
            b.map_addr() as *mut libc::c_void,
            4096,
            libc::PROT_READ | libc::PROT_WRITE,
        )
    };
    ensure!(
        r != 0,
        "mprotect(PROT_WRITE) of the binder mapping succeeded"
    );
    // A writable mapping is refused outright (on a fresh fd, so that "already
    // mapped" cannot be the reason).
    let fresh = Binder::open(&c.dev)?;
    ensure_eq!(
        fresh
            .mmap_raw(4096, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED)
            .map_err(|e| e.raw_os_error()),
        Err(Some(libc::EPERM)),
        "a writable mmap of a binder fd"
    );
    drop(fresh);
    let mut data = [0u8; 48];
    let fbo = flat_binder_object {
        hdr: binder_object_header {
            type_: BINDER_TYPE_BINDER,
        },
        flags: 0,
        binder_or_handle: 0x9000,
        cookie: 0x9001,
    };
    data[..24].copy_from_slice(bytes_of(&fbo));
    let offsets = Box::new(std::sync::atomic::AtomicU64::new(0));
    let stop = std::sync::atomic::AtomicBool::new(false);
    let (mut ok, mut failed) = (0, 0);
    let res: TResult = std::thread::scope(|s| {
        s.spawn(|| {
            let mut v = 0u64;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                v ^= 24;
                offsets.store(v, std::sync::atomic::Ordering::Relaxed);
            }
        });
        let res = (|| -> TResult {
            for i in 0..300 {
                let td = binder_transaction_data {
                    target: 0,
                    code: CODE_CHECK_OFFSETS,
                    flags: 0,
                    data_size: 48,
                    offsets_size: 8,
                    buffer: data.as_ptr() as u64,
                    offsets: &*offsets as *const _ as u64,
                    ..Default::default()
                };
                let mut w = WriteBuf::new();
                w.raw_transaction(BC_TRANSACTION, &td);
                let (pre, last) = b.call_raw(&w)?;
                ack_node_refs(&b, &pre)?;
                match last {
                    Return::Reply(td) => {
                        let rec = b.received(&td)?;
                        b.free_buffer(td.buffer)?;
                        ensure_eq!(
                            rec.data,
                            1u32.to_ne_bytes().to_vec(),
                            format!("transaction {i}: receiver saw an inconsistent object/offset")
                        );
                        ok += 1;
                    }
                    Return::FailedReply => failed += 1,
                    o => fail!("transaction {i}: {}", o.name()),
                }
            }
            Ok(())
        })();
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
        res
    });
    res?;
    ensure!(ok + failed == 300, "lost transactions");
    // Every reference the receiver got through those buffers is gone again.
    if c.logs.is_some() {
        let gone = harness::wait_until(Duration::from_secs(5), || {
            ref_counts(c, srv.pid, 1)
                .map(|r| r.is_none())
                .unwrap_or(false)
        });
        ensure!(
            gone,
            "the receiver still holds a ref to the sender's node after freeing every buffer"
        );
    }
    drop(b);
    srv.proc_.kill();
    Ok(())
}

// ---------------------------------------------------------------------------
// TF_UPDATE_TXN ordering
// ---------------------------------------------------------------------------

/// One-way transactions to a frozen process with TF_UPDATE_TXN: a queued one-way with
/// the same code, flags, sender and node is superseded by the newer one, which keeps
/// its own place at the end of the queue; the first one (already handed to the
/// process's todo list) is never superseded. Each one-way gets
/// BR_TRANSACTION_PENDING_FROZEN. Delivery order after thawing, in the C driver:
/// A(code 1), C(2), D(1), E(3, no UPDATE flag), F(3).
fn tf_update_txn_order(c: &Ctx) -> TResult {
    let ready = Pipe::new()?;
    let thaw = Pipe::new()?;
    let result = Pipe::new()?;
    let dev = c.dev.clone();
    let srv = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr()?;
        b.enter_looper()?;
        ready.send_u64(harness::getpid() as u64)?;
        thaw.recv_u64_within(Duration::from_secs(20))?;
        let mut got = Vec::new();
        while got.len() < 10 {
            if let Return::Transaction(td) = b.next_within(5000)? {
                let rec = b.received(&td)?;
                got.push(td.code as u8);
                got.push(*rec.data.first().unwrap_or(&0));
                b.free_buffer(td.buffer)?;
            }
        }
        result.send(&got)?;
        b.expect_nothing(300)?;
        result.send(b"end")?;
        Ok(())
    })?;
    let spid = ready.recv_u64_within(Duration::from_secs(10))? as i32;
    let b = Binder::open_mapped(&c.dev)?;
    b.freeze(spid, true, 0)
        .map_err(|e| format!("BINDER_FREEZE enable: {e}"))?;
    let upd = TF_ONE_WAY | TF_UPDATE_TXN;
    for (code, flags, byte) in [
        (1u32, upd, b'A'),
        (2, upd, b'B'),
        (1, upd, b'X'),
        (2, upd, b'C'),
        (1, upd, b'D'),
        (3, TF_ONE_WAY, b'E'),
        (3, upd, b'F'),
    ] {
        let mut w = WriteBuf::new();
        w.transaction(0, code, flags, &Payload::from_bytes(&[byte]));
        write_all(&b, &w, "one-way to the frozen process")?;
        let r = b.next()?;
        ensure!(
            r == Return::TransactionPendingFrozen,
            "one-way {} to a frozen process: expected BR_TRANSACTION_PENDING_FROZEN, got {}",
            byte as char,
            r.name()
        );
    }
    let fi = b.frozen_info(spid)?;
    ensure_eq!(
        (fi.sync_recv, fi.async_recv),
        (2, 1),
        "BINDER_GET_FROZEN_INFO (sync_recv, async_recv): bit 1 of sync_recv is 'transactions pending', which queued one-ways count as"
    );
    b.freeze(spid, false, 0)
        .map_err(|e| format!("BINDER_FREEZE disable: {e}"))?;
    thaw.send_u64(1)?;
    let got = match result.recv_exact(10, Duration::from_secs(20)) {
        Ok(g) => g,
        Err(e) => {
            let why = srv.join_within(Duration::from_secs(2));
            fail!("no delivery report from the thawed process ({e}); its result: {why:?}");
        }
    };
    let want: Vec<u8> = vec![1, b'A', 2, b'C', 1, b'D', 3, b'E', 3, b'F'];
    let show = |v: &[u8]| {
        v.chunks(2)
            .map(|c| format!("{}:{}", c[0], c[1] as char))
            .collect::<Vec<_>>()
            .join(" ")
    };
    ensure!(
        got == want,
        "delivery order after thawing: expected [{}], got [{}]",
        show(&want),
        show(&got)
    );
    let end = result.recv_exact(3, Duration::from_secs(5))?;
    ensure_eq!(end, b"end".to_vec(), "no further transaction delivered");
    srv.join_within(Duration::from_secs(10))?;
    Ok(())
}

// ---------------------------------------------------------------------------
// Refcount underflow
// ---------------------------------------------------------------------------

/// BC_RELEASE/BC_DECREFS past zero. The C driver refuses the decrement ("invalid dec
/// strong/weak", the write still succeeds and is consumed), keeps the other count, and
/// deletes the ref when both reach zero; later commands on the handle hit "invalid
/// ref" and a transaction to it is BR_FAILED_REPLY (-EINVAL).
fn refcount_underflow(c: &Ctx) -> TResult {
    let srv = spawn_server(&c.dev)?;
    let b = Binder::open_mapped(&c.dev)?;
    let me = harness::getpid();
    // A ref with one strong and no weak reference: the reply's, plus our BC_ACQUIRE,
    // minus the reply's again when its buffer is freed.
    let rec = b.call_nofree(0, CODE_NODE, &Payload::new())?;
    ensure_eq!(rec.offsets.len(), 1, "objects in the node reply");
    let obj: flat_binder_object = rec.object(rec.offsets[0]);
    ensure_eq!(obj.hdr.type_, BINDER_TYPE_HANDLE, "node reply object type");
    let h = obj.handle();
    let mut w = WriteBuf::new();
    w.acquire(h).free_buffer(rec.td.buffer);
    write_all(&b, &w, "BC_ACQUIRE + BC_FREE_BUFFER")?;
    let counts = |what: &str, want: Option<(i64, i64)>| -> TResult {
        let got = ref_counts(c, me, h)?;
        ensure_eq!(
            got,
            want,
            format!("ref (strong, weak) of handle {h} {what}")
        );
        Ok(())
    };
    if ref_counts(c, me, h)?.is_none() {
        binder_uapi::skip!(
            "the driver's binder_logs do not list handle {h} of process {me} (no per-ref lines to read counts from)"
        );
    }
    counts("after BC_ACQUIRE and freeing the reply", Some((1, 0)))?;
    // Weak underflow with a strong reference left: "invalid dec weak", nothing changes.
    let mut w = WriteBuf::new();
    w.decrefs(h).decrefs(h);
    write_all(&b, &w, "BC_DECREFS past zero")?;
    counts("after BC_DECREFS past zero", Some((1, 0)))?;
    let mut w = WriteBuf::new();
    w.increfs(h).release(h);
    write_all(&b, &w, "BC_INCREFS + BC_RELEASE")?;
    counts("after BC_INCREFS + BC_RELEASE", Some((0, 1)))?;
    // Strong underflow: a strong command on a weak-only ref finds no ref ("tried to
    // use weak ref as strong ref"): nothing changes, BC_ACQUIRE included.
    let mut w = WriteBuf::new();
    w.release(h).release(h).acquire(h);
    write_all(&b, &w, "BC_RELEASE past zero + BC_ACQUIRE")?;
    counts("after BC_RELEASE past zero and BC_ACQUIRE", Some((0, 1)))?;
    // A transaction needs a strong ref: BR_FAILED_REPLY, -EINVAL.
    let mut w = WriteBuf::new();
    w.transaction(h, CODE_ECHO, 0, &Payload::from_bytes(b"weak"));
    let (_pre, last) = b.call_raw(&w)?;
    ensure!(
        last == Return::FailedReply,
        "transaction through a weak-only handle: expected BR_FAILED_REPLY, got {}",
        last.name()
    );
    let e = b.extended_error()?;
    ensure_eq!(
        (e.command, e.param),
        (BR_FAILED_REPLY, -libc::EINVAL),
        "extended error"
    );
    // The last weak reference deletes the ref; everything after is "invalid ref".
    let mut w = WriteBuf::new();
    w.decrefs(h);
    write_all(&b, &w, "last BC_DECREFS")?;
    counts("after the last BC_DECREFS", None)?;
    let mut w = WriteBuf::new();
    w.decrefs(h).release(h).acquire(h).increfs(h);
    write_all(&b, &w, "commands on a deleted ref")?;
    counts("after commands on the deleted ref", None)?;
    let mut w = WriteBuf::new();
    w.transaction(h, CODE_ECHO, 0, &Payload::from_bytes(b"gone"));
    let (_pre, last) = b.call_raw(&w)?;
    ensure!(
        last == Return::FailedReply,
        "transaction to a deleted handle: expected BR_FAILED_REPLY, got {}",
        last.name()
    );
    let r = b.call(0, CODE_ECHO, &Payload::from_bytes(b"ok"))?;
    ensure_eq!(r.data, b"ok".to_vec(), "echo afterwards");
    drop(b);
    srv.proc_.kill();
    Ok(())
}

// ---------------------------------------------------------------------------
// Extended error is updated on every failure and reset by reading it
// ---------------------------------------------------------------------------

// 7.2 upstream Rust: a new thread's extended error has a fresh id (thread.rs:InnerThread::new),
//   and a bad handle would give -ENOENT; C (0, BR_OK, 0) and -EINVAL (docs/oracle.md)
fn extended_error_updated(c: &Ctx) -> TResult {
    let srv = spawn_server(&c.dev)?;
    let b = Binder::open_mapped(&c.dev)?;
    let e0 = b.extended_error()?;
    ensure_eq!(
        (e0.id, e0.command, e0.param),
        (0, BR_OK, 0),
        "extended error of a new thread"
    );
    // 1. invalid handle: (BR_FAILED_REPLY, -EINVAL)
    let mut w = WriteBuf::new();
    w.transaction(77, CODE_ECHO, 0, &Payload::from_bytes(b"x"));
    let (_p, last) = b.call_raw(&w)?;
    ensure!(
        last == Return::FailedReply,
        "transaction to handle 77: {}",
        last.name()
    );
    let e1 = b.extended_error()?;
    ensure_eq!(
        (e1.command, e1.param),
        (BR_FAILED_REPLY, -libc::EINVAL),
        "extended error after the bad handle"
    );
    ensure!(
        e1.id != 0,
        "extended error id is 0 after a failed transaction"
    );
    // Reading it resets it.
    let e1b = b.extended_error()?;
    ensure_eq!(
        (e1b.id, e1b.command, e1b.param),
        (0, BR_OK, 0),
        "extended error read a second time"
    );
    // 2. another failure with another reason: bad data pointer (-EFAULT).
    let td = binder_transaction_data {
        target: 0,
        code: CODE_ECHO,
        data_size: 16,
        buffer: 8,
        ..Default::default()
    };
    let mut w = WriteBuf::new();
    w.raw_transaction(BC_TRANSACTION, &td);
    let (_p, last) = b.call_raw(&w)?;
    ensure!(
        last == Return::FailedReply,
        "transaction with a bad data pointer: {}",
        last.name()
    );
    let e2 = b.extended_error()?;
    ensure_eq!(
        (e2.command, e2.param),
        (BR_FAILED_REPLY, -libc::EFAULT),
        "extended error after the bad pointer"
    );
    ensure!(
        e2.id > e1.id,
        "extended error id did not advance ({} then {})",
        e1.id,
        e2.id
    );
    // 3. a failure not read, then a success: the success resets it to BR_OK.
    let mut w = WriteBuf::new();
    w.transaction(78, CODE_ECHO, 0, &Payload::from_bytes(b"x"));
    let (_p, last) = b.call_raw(&w)?;
    ensure!(
        last == Return::FailedReply,
        "transaction to handle 78: {}",
        last.name()
    );
    let r = b.call(0, CODE_ECHO, &Payload::from_bytes(b"fine"))?;
    ensure_eq!(r.data, b"fine".to_vec(), "echo");
    let e3 = b.extended_error()?;
    ensure_eq!(
        (e3.command, e3.param),
        (BR_OK, 0),
        "extended error after a successful transaction"
    );
    ensure!(
        e3.id > e2.id,
        "extended error id of the successful transaction ({}) not after {}",
        e3.id,
        e2.id
    );
    // 4. per thread: another thread's failure is not ours.
    let mut w = WriteBuf::new();
    w.transaction(79, CODE_ECHO, 0, &Payload::from_bytes(b"x"));
    let (_p, last) = b.call_raw(&w)?;
    ensure!(
        last == Return::FailedReply,
        "transaction to handle 79: {}",
        last.name()
    );
    let other = std::thread::scope(|s| s.spawn(|| b.extended_error()).join());
    let other = other.map_err(|_| "thread panicked".to_string())??;
    ensure_eq!(
        (other.id, other.command, other.param),
        (0, BR_OK, 0),
        "another thread's extended error"
    );
    let e4 = b.extended_error()?;
    ensure_eq!(
        (e4.command, e4.param),
        (BR_FAILED_REPLY, -libc::EINVAL),
        "this thread's extended error"
    );
    drop(b);
    srv.proc_.kill();
    Ok(())
}

// ---------------------------------------------------------------------------
// Transactions racing the death of their target (found by the fuzzer)
// ---------------------------------------------------------------------------

/// Dead nodes in binder_logs/state whose counts went negative: `(line, ls)`.
pub fn negative_dead_nodes(state: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_dead = false;
    for l in state.lines() {
        if l.starts_with("dead nodes:") {
            in_dead = true;
            continue;
        }
        if !l.starts_with("  ") {
            in_dead = false;
        }
        if in_dead && l.trim_start().starts_with("node ") {
            let w: Vec<&str> = l.split_whitespace().collect();
            let neg = ["hs", "hw", "ls", "lw", "is", "iw"].iter().any(|k| {
                w.iter()
                    .position(|x| x == k)
                    .and_then(|i| w.get(i + 1))
                    .and_then(|v| v.parse::<i64>().ok())
                    .map(|n| n < 0)
                    .unwrap_or(false)
            });
            if neg {
                out.push(l.trim().to_string());
            }
        }
    }
    out
}

/// Clients keep calling the context manager while it is killed. Every call ends in
/// BR_REPLY, BR_DEAD_REPLY or BR_FAILED_REPLY, nobody hangs, and once everyone is gone
/// no dead node is left behind. 6.12's C driver leaks here: a transaction that took
/// its local strong ref on the target node (binder_get_node_refs_for_txn) and then
/// fails because the target died drops that ref after binder_node_release() zeroed
/// local_strong_refs, leaving a dead node with "ls -1" that is never freed. The test
/// fails on that leak whatever the driver; the harness lists it as a known defect of
/// the C driver (userspace/known-defects-6.12.txt).
fn txn_vs_target_death(c: &Ctx) -> TResult {
    let dir = match &c.logs {
        Some(d) => d.clone(),
        None => binder_uapi::skip!("no binder_logs"),
    };
    let before = negative_dead_nodes(&std::fs::read_to_string(format!("{dir}/state"))?);
    for round in 0..8u64 {
        let srv = spawn_server(&c.dev)?;
        let mut clients = Vec::new();
        let mut readies = Vec::new();
        for _ in 0..3 {
            let dev = c.dev.clone();
            let ready = Pipe::new()?;
            let rr = &ready;
            clients.push(fork_proc(move || {
                let b = Binder::open_mapped(&dev)?;
                // Through a handle to the server's node (not handle 0: the context
                // manager node is unhooked before the owner's nodes are released).
                let h = get_node(&b)?;
                rr.send_u64(1)?;
                let big = Payload::from_bytes(&vec![0x5au8; 96 * 1024]);
                let big = &big;
                std::thread::scope(|s| {
                    for t in 0..2u32 {
                        let b = &b;
                        s.spawn(move || -> TResult {
                            for i in 0..400u32 {
                                let mut w = WriteBuf::new();
                                let flags = if (i + t) % 3 == 0 { TF_ONE_WAY } else { 0 };
                                // Big payloads: a long copy between the driver taking
                                // its node reference and queueing the transaction.
                                w.transaction(h, CODE_ECHO, flags, big);
                                if flags != 0 {
                                    let _ = b.write(&w);
                                    let _ = b.next_within(2000);
                                    continue;
                                }
                                let (_pre, last) = b.call_raw(&w)?;
                                match last {
                                    Return::Reply(td) => {
                                        let _ = b.free_buffer(td.buffer);
                                    }
                                    Return::DeadReply | Return::FailedReply => return Ok(()),
                                    o => fail!("call {i}: {}", o.name()),
                                }
                            }
                            Ok(())
                        });
                    }
                });
                Ok(())
            })?);
            readies.push(ready);
        }
        for r in &readies {
            r.recv_u64_within(Duration::from_secs(15))?;
        }
        sleep_ms(30 + 40 * (round % 4));
        let mut s = srv;
        s.proc_.kill_and_reap();
        for (i, p) in clients.into_iter().enumerate() {
            p.join_within(Duration::from_secs(30))
                .map_err(|e| format!("round {round} client {i}: {e:?}"))?;
        }
    }
    // Let the deferred releases run, then look for leftovers.
    let mut leaked = Vec::new();
    harness::wait_until(Duration::from_secs(5), || {
        let st = std::fs::read_to_string(format!("{dir}/state")).unwrap_or_default();
        leaked = negative_dead_nodes(&st);
        leaked.len() == before.len()
    });
    if leaked.len() > before.len() {
        let new: Vec<String> = leaked.into_iter().filter(|l| !before.contains(l)).collect();
        let msg = format!(
            "{} dead node(s) left with a negative count after every process exited:\n{}",
            new.len(),
            new.join("\n")
        );
        fail!("{msg}");
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// The client's rounds of the races with a node's last ref below
// ---------------------------------------------------------------------------

/// Where the client's free of an offer fell, in a round of [`last_ref_rounds`], against its
/// senders' use of the offered node; the spin before the next free follows it.
enum Fell {
    /// Too soon for the senders: spin longer.
    Early,
    /// Too late, after all of them: spin shorter.
    Late,
    /// Among them, where the race is.
    Within,
}

/// Read the next transaction of round `round`, an offer (named `what` in errors) whose one
/// object is a handle: its buffer, to free, and the handle.
fn read_offer(b: &Binder, round: u64, what: &str) -> TResult<(u64, u32)> {
    let td = match b.next_auto_within(5000)? {
        Return::Transaction(td) => td,
        o => fail!("round {round}: expected {what}, got {}", o.name()),
    };
    let rec = b.received(&td)?;
    ensure_eq!(rec.offsets.len(), 1, format!("objects in {what}"));
    let obj: flat_binder_object = rec.object(rec.offsets[0]);
    ensure_eq!(
        obj.hdr.type_,
        BINDER_TYPE_HANDLE,
        format!("object type of {what}")
    );
    Ok((td.buffer, obj.handle()))
}

/// The client's side of a race between senders and the last ref to a node going away, for
/// up to `rounds` rounds and at most `secs` seconds. Each round reads the node owner's offer
/// (a transaction whose one object is a handle; `offer` names it in an error), lets the
/// senders go with `go(round, handle)`, spins, and then hands the offer's buffer, which
/// holds the client's only ref to the node, and what `go` returned to `free(round, buffer,
/// ..)`, which frees it and says where the free fell. The spin is around a length that this
/// tunes, +- 1/8 so that the frees spread over the window. Returns the rounds begun.
fn last_ref_rounds<S>(
    b: &Binder,
    rounds: u64,
    secs: u64,
    offer: &str,
    mut go: impl FnMut(u64, u32) -> S,
    mut free: impl FnMut(u64, u64, S) -> TResult<Fell>,
) -> TResult<u64> {
    let (mut spin, mut jitter) = (2000u64, u64::from(harness::getpid() as u32));
    let start = std::time::Instant::now();
    let mut begun = 0;
    for i in 0..rounds {
        // The offers not taken stay queued to the client, which is fine.
        if start.elapsed() > Duration::from_secs(secs) {
            break;
        }
        begun += 1;
        let (buffer, handle) = read_offer(b, i, offer)?;
        let gone = go(i, handle);
        // Around spin +- 1/8.
        jitter = jitter
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let n = spin - spin / 8 + (jitter >> 33) % (spin / 4 + 1);
        for _ in 0..n {
            std::hint::spin_loop();
        }
        match free(i, buffer, gone)? {
            Fell::Early => spin += spin / 8 + 64,
            Fell::Late => spin -= spin / 8,
            Fell::Within => {}
        }
    }
    Ok(begun)
}

// ---------------------------------------------------------------------------
// A node looked up through a ref while its last ref goes away
// ---------------------------------------------------------------------------

const RACE_ROUNDS: u64 = 1000;
const RACE_PTR: u64 = 0x7000_0000;
const RACE_SENDERS: u64 = 3;
/// The rounds stop after this long (a debug kernel on a busy host runs a few hundred).
const RACE_SECS: u64 = 25;

/// A process offers the client a node per round (a strong binder object in a one-way
/// transaction, the client's only reference to it), and never reads meanwhile, so it never
/// acknowledges the node: once the reference is gone, the node has no count left and its
/// owner forgets it at once. The client's sender threads all send a one-way transaction to
/// the node at the moment its main thread frees the offer's buffer, which drops that
/// reference; the main thread spins first, as long as keeps the free at the edge where some
/// sends win the race and some lose.
/// A transaction that found the node through the reference before it went, and took its
/// count on the node after, must still target a node its owner has: 6.12's C driver keeps
/// a node known while a lookup holds it (`tmp_refs`), as the count of a transaction does
/// afterwards. The owner then reads its transactions and, holding each one's buffer, finds
/// its node in its node list (BINDER_GET_NODE_DEBUG_INFO). A node forgotten under a
/// queued transaction is one whose one-way queue the owner's release never empties: the
/// transactions waiting there and their processes are leaked.
fn send_vs_last_ref_release(c: &Ctx) -> TResult {
    use std::sync::atomic::{AtomicU32, AtomicU64, Ordering::SeqCst};
    let ready = Pipe::new()?;
    let done = Pipe::new()?;
    let result = Pipe::new()?;
    let dev = c.dev.clone();
    // The client is the context manager before the owner sends it anything.
    let b = Binder::open_mapped(&c.dev)?;
    become_context_manager(&b)?;
    b.enter_looper()?;
    let owner = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.enter_looper()?;
        for i in 0..RACE_ROUNDS {
            let mut p = Payload::new();
            p.binder(RACE_PTR + i * 16, i, 0);
            let mut w = WriteBuf::new();
            w.transaction(0, CODE_NODE, TF_ONE_WAY, &p);
            write_all(&b, &w, "one-way offer of a node")?;
        }
        ready.send_u64(1)?;
        done.recv_u64_within(Duration::from_secs(50))
            .map_err(|e| format!("the owner, waiting for the client's rounds: {e}"))?;
        // A transaction's buffer holds a count on its node: each is checked before its buffer
        // is freed (which lets the next one-way to the same node through).
        let (mut txns, mut missing) = (0u64, Vec::new());
        // Non-blocking: a read that finds nothing after poll() said there was something
        // must not wait for good.
        set_nonblock(b.fd(), true);
        let mut empty = 0;
        loop {
            let r = match b.try_next(300) {
                Ok(Some(r)) => r,
                Ok(None) => break,
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) && empty < 3 => {
                    empty += 1;
                    sleep_ms(100);
                    continue;
                }
                Err(e) if e.raw_os_error() == Some(libc::EAGAIN) => break,
                Err(e) => return Err(format!("the owner's read: {e}").into()),
            };
            if let Return::Transaction(td) = r {
                txns += 1;
                let info = b
                    .node_debug_info(td.target - 1)
                    .map_err(|e| format!("BINDER_GET_NODE_DEBUG_INFO: {e}"))?;
                if info.ptr != td.target {
                    missing.push(format!("{:#x}", td.target));
                }
                b.free_buffer(td.buffer)?;
            }
        }
        result.send_u64(txns)?;
        result.send_u64(missing.len() as u64)?;
        let names = missing.join(" ");
        result.send_u64(names.len() as u64)?;
        result.send(names.as_bytes())?;
        Ok(())
    })?;
    ready
        .recv_u64_within(Duration::from_secs(20))
        .map_err(|e| format!("waiting for the owner's offers: {e}"))?;
    let generation = AtomicU64::new(0);
    let handle = AtomicU32::new(0);
    let sent = AtomicU64::new(0);
    let queued = AtomicU64::new(0);
    std::thread::scope(|s| -> TResult {
        let mut senders = Vec::new();
        for _ in 0..RACE_SENDERS {
            let (b, generation, handle, sent, queued) = (&b, &generation, &handle, &sent, &queued);
            senders.push(s.spawn(move || -> TResult {
                let mut seen = 0;
                loop {
                    let g = loop {
                        let g = generation.load(SeqCst);
                        if g != seen {
                            break g;
                        }
                        std::hint::spin_loop();
                    };
                    if g == u64::MAX {
                        return Ok(());
                    }
                    seen = g;
                    let mut w = WriteBuf::new();
                    w.transaction(
                        handle.load(SeqCst),
                        CODE_ECHO,
                        TF_ONE_WAY,
                        &Payload::from_bytes(b"race"),
                    );
                    let _ = b.write(&w);
                    match b.next_within(5000)? {
                        Return::TransactionComplete => {
                            queued.fetch_add(1, SeqCst);
                        }
                        Return::FailedReply | Return::DeadReply => {}
                        o => fail!("one-way to the offered node: {}", o.name()),
                    }
                    sent.fetch_add(1, SeqCst);
                }
            }));
        }
        let res = last_ref_rounds(
            &b,
            RACE_ROUNDS,
            RACE_SECS,
            "the offer",
            |i, h| {
                handle.store(h, SeqCst);
                let before = queued.load(SeqCst);
                generation.store(i + 1, SeqCst);
                before
            },
            |i, buffer, before| {
                // The offer's buffer holds the only reference to the node.
                b.free_buffer(buffer)?;
                let t0 = std::time::Instant::now();
                while sent.load(SeqCst) < (i + 1) * RACE_SENDERS {
                    ensure!(
                        t0.elapsed() < Duration::from_secs(10),
                        "round {i}: a sender is stuck"
                    );
                    std::thread::yield_now();
                }
                // Keep the free where some sends win the race and some lose: the window is
                // at that edge.
                Ok(match queued.load(SeqCst) - before {
                    0 => Fell::Early,
                    n if n == RACE_SENDERS => Fell::Late,
                    _ => Fell::Within,
                })
            },
        )
        .map(|_| ());
        generation.store(u64::MAX, SeqCst);
        for t in senders {
            t.join().map_err(|_| "a sender thread panicked")??;
        }
        res
    })?;
    done.send_u64(1)?;
    let txns = result
        .recv_u64_within(Duration::from_secs(30))
        .map_err(|e| format!("waiting for the owner's check: {e}"))?;
    let missing = result.recv_u64_within(Duration::from_secs(5))?;
    let len = result.recv_u64_within(Duration::from_secs(5))? as usize;
    let names =
        String::from_utf8_lossy(&result.recv_exact(len, Duration::from_secs(5))?).to_string();
    owner
        .join_within(Duration::from_secs(10))
        .map_err(|e| format!("the node owner: {e:?}"))?;
    println!(
        "# send_vs_last_ref_release: {} of {} one-ways queued, {txns} read by the owner",
        queued.load(SeqCst),
        sent.load(SeqCst)
    );
    ensure_eq!(
        txns,
        queued.load(SeqCst),
        "one-ways the owner read (each queued one is delivered)"
    );
    ensure!(
        missing == 0,
        "{missing} of {txns} one-way transactions targeted a node that its owner no longer had: {names}"
    );
    Ok(())
}

// ---------------------------------------------------------------------------
// A node its owner sends while the last ref to it goes away
// ---------------------------------------------------------------------------

const OFFER_ROUNDS: u64 = 1000;
const OFFER_PTR: u64 = 0x7100_0000;
const OFFER_SENDERS: u64 = 3;
/// The rounds stop after this long (a debug kernel runs a few hundred).
const OFFER_SECS: u64 = 25;

/// What the two processes of [`offer_vs_last_ref_release`] share (a page mapped before the
/// fork): the round the client lets the senders go in, and the senders' progress.
#[repr(C)]
struct OfferShared {
    /// Rounds the client is done with.
    finished: std::sync::atomic::AtomicU64,
    /// The senders may send the round's second offers (round + 1); `u64::MAX`: stop.
    go: std::sync::atomic::AtomicU64,
    /// Second offers about to be written, and written, over all rounds.
    started: std::sync::atomic::AtomicU64,
    sent: std::sync::atomic::AtomicU64,
}

/// The owner of a node offers it to the client (a strong binder object in a one-way
/// transaction; the client's reference is the node's only count, and the owner never reads, so
/// it never acknowledges the node: without that reference its owner forgets it at once). Its
/// three sender threads then offer the same object again while the client frees the first
/// offer, which drops that reference; the client spins first, as long as keeps the free
/// overlapping the sends. A sender that found the node in its owner's tree just before the
/// free and gives the client its reference just after must not hand out a node its owner has
/// forgotten: 6.12's C driver keeps the node known from its lookup on (`tmp_refs` of
/// `binder_get_node`/`binder_new_node`). The client holds every second offer of a round at
/// once, so all of them refer to one node and carry one handle; a forgotten node next to the
/// one its owner creates again for the same address shows as two handles. Transactions queued
/// on a forgotten node are never released with its owner (a leak of both processes).
fn offer_vs_last_ref_release(c: &Ctx) -> TResult {
    use std::sync::atomic::Ordering::SeqCst;
    let m = harness::map_shared(4096).map_err(|_| "mmap of a shared page failed")?;
    // SAFETY: mapped just above, page-sized and never unmapped in this test (the page
    // outlives it); zero bytes are valid atomics.
    let sh: &'static OfferShared = unsafe { &*(m as *const OfferShared) };
    let dev = c.dev.clone();
    // The client is the context manager before the owner sends it anything.
    let b = Binder::open_mapped(&c.dev)?;
    become_context_manager(&b)?;
    b.enter_looper()?;
    let wait = |what: &str, done: &dyn Fn() -> bool| -> TResult {
        let t0 = std::time::Instant::now();
        while !done() {
            ensure!(t0.elapsed() < Duration::from_secs(10), "waiting for {what}");
            std::thread::yield_now();
        }
        Ok(())
    };
    let owner = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        let offer = |i: u64| -> TResult {
            let mut p = Payload::new();
            p.binder(OFFER_PTR + i * 16, i, 0);
            let mut w = WriteBuf::new();
            w.transaction(0, CODE_NODE, TF_ONE_WAY, &p);
            write_all(&b, &w, "one-way offer of a node")
        };
        std::thread::scope(|s| -> TResult {
            let mut senders = Vec::new();
            for _ in 0..OFFER_SENDERS {
                let offer = &offer;
                senders.push(s.spawn(move || -> TResult {
                    let mut seen = 0;
                    loop {
                        // Spins to go at once, and lets the others run when a round is long.
                        let mut spins = 0u32;
                        let g = loop {
                            let g = sh.go.load(SeqCst);
                            if g != seen {
                                break g;
                            }
                            spins += 1;
                            if spins < 20_000 {
                                std::hint::spin_loop();
                            } else {
                                std::thread::yield_now();
                            }
                        };
                        if g == u64::MAX {
                            return Ok(());
                        }
                        seen = g;
                        sh.started.fetch_add(1, SeqCst);
                        let r = offer(g - 1);
                        sh.sent.fetch_add(1, SeqCst);
                        r?;
                    }
                }));
            }
            let res = (|| -> TResult {
                for i in 0..OFFER_ROUNDS {
                    // The client is done with the previous round's offers.
                    let t0 = std::time::Instant::now();
                    while sh.finished.load(SeqCst) != i {
                        if sh.go.load(SeqCst) == u64::MAX {
                            return Ok(());
                        }
                        ensure!(
                            t0.elapsed() < Duration::from_secs(20),
                            "round {i}: the owner waits for the client"
                        );
                        std::thread::yield_now();
                    }
                    offer(i)?;
                }
                Ok(())
            })();
            if res.is_err() {
                sh.go.store(u64::MAX, SeqCst);
            }
            for t in senders {
                t.join().map_err(|_| "a sender thread panicked")??;
            }
            res
        })
    })?;
    let res = (|| -> TResult {
        let (mut overlapped, mut mismatched) = (0u64, Vec::new());
        let rounds = last_ref_rounds(
            &b,
            OFFER_ROUNDS,
            OFFER_SECS,
            "the first offer",
            |i, _| sh.go.store(i + 1, SeqCst),
            |i, buffer, ()| {
                let base = i * OFFER_SENDERS;
                let done_before = sh.sent.load(SeqCst) - base;
                // The first offer's buffer holds the client's only count on the node.
                b.free_buffer(buffer)?;
                let started_after = sh.started.load(SeqCst) - base;
                // Keep the free overlapping the sends: the window is among them.
                let fell = if done_before == OFFER_SENDERS {
                    Fell::Late
                } else if started_after == 0 {
                    Fell::Early
                } else {
                    overlapped += 1;
                    Fell::Within
                };
                wait(&format!("round {i}: the second offers"), &|| {
                    sh.sent.load(SeqCst) >= base + OFFER_SENDERS
                })?;
                // Each second offer holds a count on the client's reference: the client
                // reads them one at a time (one-way transactions to one node), and they all
                // refer to the node they were given at once.
                let mut handles = Vec::new();
                for _ in 0..OFFER_SENDERS {
                    let (buffer, handle) = read_offer(&b, i, "a second offer")?;
                    handles.push(handle);
                    // The offers still unread hold their counts on the reference.
                    b.free_buffer(buffer)?;
                }
                if handles.iter().any(|&h| h != handles[0]) {
                    mismatched.push(format!("round {i}: handles {handles:?}"));
                }
                sh.finished.store(i + 1, SeqCst);
                Ok(fell)
            },
        )?;
        println!(
            "# offer_vs_last_ref_release: {rounds} rounds, the free overlapped the second \
             offers in {overlapped}"
        );
        ensure!(
            mismatched.is_empty(),
            "{} of {rounds} rounds gave the client one address of its peer as two \
             nodes (a node its owner had forgotten): {}",
            mismatched.len(),
            mismatched.join("; ")
        );
        Ok(())
    })();
    // Ends the owner's senders, and its loop if the client failed.
    sh.go.store(u64::MAX, SeqCst);
    owner
        .join_within(Duration::from_secs(20))
        .map_err(|e| format!("the node owner: {e:?}"))?;
    res
}
