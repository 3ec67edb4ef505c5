//! Allocation failure: whichever allocation of a call fails, the call ends and nothing leaks.
//!
//! A kernel with CONFIG_FAULT_INJECTION, CONFIG_FAILSLAB and CONFIG_FAIL_PAGE_ALLOC (the test
//! kernels get them from binder-debug.cfg) fails the N-th slab or page allocation of a thread
//! once N is written to /proc/thread-self/fail-nth (the kernel's
//! Documentation/fault-injection/fault-injection.rst). Each case makes allocation 1, 2, 3, ...
//! of one binder call fail, one call per N, until a call no longer reaches its N-th allocation:
//! then every allocation on that path has failed once. It does this twice: once with only the
//! N-th allocation failing, once with every allocation from the N-th on failing until the
//! command returns (/proc/thread-self/make-it-fail, with failslab and fail_page_alloc at
//! probability 100 for such threads), so that the code that handles the first failure runs out
//! of memory too. Whatever failed, the caller must get an end to its call (its reply,
//! BR_FAILED_REPLY or BR_DEAD_REPLY; for a oneway call BR_TRANSACTION_COMPLETE or a failure)
//! within a few seconds, a normal call must work afterwards, and once both processes are gone
//! the driver's object counts (binder_logs) must be back where they were.
//!
//! The allocations of the sender are failed from the client; those of the reply from the
//! server, which arms its own thread when the client asks for it (CODE_ARM_*).

use crate::regress::Ctx;
use binder_uapi::harness::{fork_proc, sleep_ms, Pipe, Proc};
use binder_uapi::*;
use binder_uapi::{ensure, fail};
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::time::{Duration, Instant};

type TestFn = fn(&Ctx) -> TResult;

pub fn all() -> Vec<(&'static str, TestFn)> {
    vec![
        ("sync_call_ends", sync_call_ends as TestFn),
        ("sync_call_with_object_ends", sync_call_with_object_ends),
        ("oneway_call_ends", oneway_call_ends),
        ("reply_ends", reply_ends),
        ("reply_with_object_ends", reply_with_object_ends),
        ("death_notification_holds", death_notification_holds),
        ("freeze_notification_holds", freeze_notification_holds),
    ]
}

const FAILSLAB: &str = "/sys/kernel/debug/failslab";
const FAIL_PAGE_ALLOC: &str = "/sys/kernel/debug/fail_page_alloc";

/// A path with more allocations than this is taken for a test that does not end.
const MAX_N: u32 = 200;
/// How long a call may take to end, however it ends.
const CALL_MS: u64 = 5000;

/// Echo the data back.
const CODE_ECHO: u32 = 1;
/// Reply with a strong binder object for SERVER_PTR.
const CODE_NODE: u32 = 2;
/// Arm the server's thread with the N (and the mode, 1: from the N-th on) given in the data,
/// then reply as CODE_ECHO; the server then tells the client through a pipe whether the
/// failure was injected.
const CODE_ARM_ECHO: u32 = 3;
/// The same, replying as CODE_NODE.
const CODE_ARM_NODE: u32 = 4;

const SERVER_PTR: u64 = 0x6000;
const CLIENT_PTR: u64 = 0x7000;

/// The fault-injection settings the test changes, put back when it ends.
struct Knobs {
    saved: Vec<(String, String)>,
}

impl Knobs {
    fn set() -> Result<Knobs, TestErr> {
        if !Path::new("/proc/thread-self/fail-nth").exists() {
            binder_uapi::skip!(
                "kernel without CONFIG_FAULT_INJECTION (no /proc/thread-self/fail-nth)"
            );
        }
        if !Path::new(FAILSLAB).is_dir() {
            binder_uapi::skip!(
                "kernel without CONFIG_FAILSLAB or CONFIG_FAULT_INJECTION_DEBUG_FS (no {FAILSLAB})"
            );
        }
        let mut k = Knobs { saved: Vec::new() };
        let mut dirs = vec![FAILSLAB];
        if Path::new(FAIL_PAGE_ALLOC).is_dir() {
            dirs.push(FAIL_PAGE_ALLOC);
            k.write(FAIL_PAGE_ALLOC, "ignore-gfp-highmem", "N")?;
            // The pages of a binder buffer are single pages (order 0).
            k.write(FAIL_PAGE_ALLOC, "min-order", "0")?;
        }
        for dir in dirs {
            // By default only allocations that cannot sleep may fail; binder's mostly sleep.
            k.write(dir, "ignore-gfp-wait", "N")?;
            // No stack dump for each failure injected.
            k.write(dir, "verbose", "0")?;
            // Every allocation of a thread whose make-it-fail is set fails (once its fail-nth
            // count, if any, has run out); no other thread is affected.
            k.write(dir, "task-filter", "Y")?;
            k.write(dir, "probability", "100")?;
            k.write(dir, "interval", "1")?;
            k.write(dir, "space", "0")?;
            k.write(dir, "times", "-1")?;
        }
        Ok(k)
    }

    fn write(&mut self, dir: &str, name: &str, value: &str) -> Result<(), String> {
        let path = format!("{dir}/{name}");
        let old = std::fs::read_to_string(&path).map_err(|e| format!("{path}: {e}"))?;
        std::fs::write(&path, value).map_err(|e| format!("{path} <- {value}: {e}"))?;
        self.saved.push((path, old.trim().to_string()));
        Ok(())
    }
}

impl Drop for Knobs {
    fn drop(&mut self) {
        for (path, value) in self.saved.iter().rev() {
            let _ = std::fs::write(path, value);
        }
    }
}

/// Which allocations fail.
#[derive(Clone, Copy)]
enum Mode {
    /// The N-th only.
    Nth,
    /// The N-th and every one after it, until the thread is disarmed.
    From,
}

/// The fail-nth and make-it-fail files of the thread that opened them.
struct FailNth {
    nth: File,
    all: File,
}

impl FailNth {
    fn open() -> Result<FailNth, String> {
        let open = |name: &str| {
            File::options()
                .read(true)
                .write(true)
                .open(format!("/proc/thread-self/{name}"))
                .map_err(|e| format!("/proc/thread-self/{name}: {e}"))
        };
        Ok(FailNth {
            nth: open("fail-nth")?,
            all: open("make-it-fail")?,
        })
    }

    /// Makes the `n`-th allocation of this thread from now on fail (and, with `Mode::From`,
    /// every later one).
    fn arm(&self, n: u32, mode: Mode) -> Result<(), String> {
        if let Mode::From = mode {
            self.all
                .write_at(b"1", 0)
                .map_err(|e| format!("make-it-fail <- 1: {e}"))?;
        }
        self.nth
            .write_at(n.to_string().as_bytes(), 0)
            .map(|_| ())
            .map_err(|e| format!("fail-nth <- {n}: {e}"))
    }

    /// Disarms the thread; returns whether the (first) failure was injected.
    fn disarm(&self) -> Result<bool, String> {
        self.all
            .write_at(b"0", 0)
            .map_err(|e| format!("make-it-fail <- 0: {e}"))?;
        let mut buf = [0u8; 16];
        let len = self
            .nth
            .read_at(&mut buf, 0)
            .map_err(|e| format!("reading fail-nth: {e}"))?;
        let left: u32 = std::str::from_utf8(&buf[..len])
            .ok()
            .and_then(|s| s.trim().parse().ok())
            .ok_or_else(|| format!("fail-nth reads {:?}", &buf[..len]))?;
        if left != 0 {
            self.nth
                .write_at(b"0", 0)
                .map_err(|e| format!("fail-nth <- 0: {e}"))?;
        }
        Ok(left == 0)
    }
}

/// How a call ended.
enum Ended {
    /// BR_REPLY, with the buffer to free.
    Reply(u64),
    /// BR_TRANSACTION_COMPLETE of a oneway call.
    Sent,
    /// BR_FAILED_REPLY, BR_DEAD_REPLY, BR_FROZEN_REPLY or BR_ERROR.
    Failed,
    /// The write consumed nothing (the ioctl itself failed): there is no call to end.
    NotSent,
}

/// Sends the one BC_TRANSACTION of `w` and reads until the call ends.
fn call(b: &Binder, w: &WriteBuf, oneway: bool) -> Result<Ended, String> {
    let sent = b.write_consumed(w);
    finish(b, sent, oneway)
}

/// Reads until the call that the write with result `sent` (from `write_consumed`) made ends.
/// Node reference requests on the way are answered; a read that fails (a failure injected
/// into the read) is tried again.
fn finish(b: &Binder, sent: (std::io::Result<()>, u64), oneway: bool) -> Result<Ended, String> {
    let (res, consumed) = sent;
    if consumed == 0 {
        return match res {
            Err(_) => Ok(Ended::NotSent),
            Ok(()) => Err("BC_TRANSACTION was not consumed and the write did not fail".into()),
        };
    }
    let deadline = Instant::now() + Duration::from_millis(CALL_MS);
    let mut seen = Vec::new();
    let mut read_errors = Vec::new();
    loop {
        let left = deadline.saturating_duration_since(Instant::now()).as_millis() as i32;
        if left == 0 {
            return Err(format!(
                "the call did not end within {CALL_MS} ms (write: {res:?}; saw {}; read errors: {read_errors:?})",
                names(&seen)
            ));
        }
        match b.try_next(left) {
            Ok(Some(r)) => {
                let mut answer = WriteBuf::new();
                let end = match &r {
                    Return::Reply(td) => Some(Ended::Reply(td.buffer)),
                    Return::TransactionComplete if oneway => Some(Ended::Sent),
                    Return::FailedReply
                    | Return::DeadReply
                    | Return::FrozenReply
                    | Return::Error(_) => Some(Ended::Failed),
                    Return::Increfs(pc) => {
                        answer.increfs_done(pc.ptr, pc.cookie);
                        None
                    }
                    Return::Acquire(pc) => {
                        answer.acquire_done(pc.ptr, pc.cookie);
                        None
                    }
                    _ => None,
                };
                seen.push(r);
                if let Some(end) = end {
                    return Ok(end);
                }
                if !answer.is_empty() {
                    // Armed still, this may fail too; the driver must cope either way.
                    let _ = b.write(&answer);
                }
            }
            Ok(None) => continue,
            Err(e) => {
                read_errors.push(e.to_string());
                sleep_ms(10);
            }
        }
    }
}

fn names(v: &[Return]) -> String {
    let n: Vec<String> = v.iter().map(|r| r.name()).collect();
    if n.is_empty() {
        "nothing".into()
    } else {
        n.join(" ")
    }
}

/// Makes allocation 1, 2, ... of `one` fail until one runs without reaching its allocation N;
/// `one(n)` makes the call with allocation `n` armed and returns whether the failure was
/// injected. Returns how many allocations the path has.
fn sweep(
    what: &str,
    mode: Mode,
    mut one: impl FnMut(u32) -> Result<bool, String>,
) -> Result<u32, String> {
    let how = match mode {
        Mode::Nth => "alone",
        Mode::From => "and every later one",
    };
    for n in 1..=MAX_N {
        let injected = one(n).map_err(|e| format!("{what}, allocation {n} {how} failing: {e}"))?;
        if !injected {
            println!("# {what}: each of its {} allocations failed, {how}", n - 1);
            return Ok(n - 1);
        }
    }
    Err(format!(
        "{what}: allocation {MAX_N} still failed; a call does not allocate that often"
    ))
}

/// The server: a context manager answering CODE_*; `verdicts` gets, for each CODE_ARM_*
/// call, 1 if the failure was injected into the reply and 0 if not.
fn spawn_server(dev: &str, verdicts: &Pipe) -> Result<(Proc, i32), String> {
    let ready = Pipe::new().map_err(|e| e.to_string())?;
    let d = dev.to_string();
    let p = fork_proc(|| {
        let b = Binder::open_mapped(&d)?;
        crate::regress::become_context_manager(&b)?;
        b.enter_looper()?;
        let fail = FailNth::open()?;
        ready.send_u64(harness::getpid() as u64)?;
        loop {
            let r = match b.try_next(60_000) {
                Ok(Some(r)) => r,
                Ok(None) => return Ok(()),
                // A failure injected into the last reply's path may show here.
                Err(_) => continue,
            };
            let mut w = WriteBuf::new();
            match r {
                Return::Transaction(td) | Return::TransactionSecCtx(td, _) => {
                    let rec = b.received(&td)?;
                    let mut p = Payload::new();
                    if td.code == CODE_NODE || td.code == CODE_ARM_NODE {
                        p.binder(SERVER_PTR, SERVER_PTR + 1, 0);
                    } else {
                        p.bytes(&rec.data);
                    }
                    w.free_buffer(td.buffer);
                    if td.flags & TF_ONE_WAY == 0 {
                        w.reply(0, &p);
                    }
                    if td.code == CODE_ARM_ECHO || td.code == CODE_ARM_NODE {
                        let word = |i: usize| {
                            rec.data
                                .get(i * 4..i * 4 + 4)
                                .map(|v| u32::from_ne_bytes(v.try_into().unwrap()))
                                .ok_or("CODE_ARM_* without N and mode")
                        };
                        let mode = if word(1)? == 1 { Mode::From } else { Mode::Nth };
                        fail.arm(word(0)?, mode)?;
                        let _ = b.write(&w);
                        let injected = fail.disarm()?;
                        verdicts.send_u64(injected as u64)?;
                        continue;
                    }
                }
                Return::Increfs(pc) => {
                    w.increfs_done(pc.ptr, pc.cookie);
                }
                Return::Acquire(pc) => {
                    w.acquire_done(pc.ptr, pc.cookie);
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
    Ok((p, pid as i32))
}

/// The object counts once they stop changing (processes of earlier tests may still be in
/// their deferred release).
fn settled_counts(dir: &str) -> Option<crate::sys::Snapshot> {
    let mut base = crate::sys::snapshot_at(dir)?;
    let mut same = 0;
    for _ in 0..40 {
        sleep_ms(250);
        let next = crate::sys::snapshot_at(dir)?;
        same = if next == base { same + 1 } else { 0 };
        base = next;
        if same >= 4 {
            break;
        }
    }
    Some(base)
}

/// Runs `body` with a server and a client, fault injection set up; then checks that a normal
/// call still works and that, both processes gone, the counts are back.
fn with_setup(
    c: &Ctx,
    body: impl FnOnce(&Binder, &FailNth, &Pipe) -> Result<u32, String>,
) -> TResult {
    let knobs = Knobs::set()?;
    let base = c.logs.as_deref().and_then(settled_counts);
    let verdicts = Pipe::new()?;
    let (mut srv, _pid) = spawn_server(&c.dev, &verdicts)?;
    let res = (|| -> TResult {
        let b = Binder::open_mapped(&c.dev)?;
        let fail = FailNth::open()?;
        let n = body(&b, &fail, &verdicts)?;
        ensure!(n > 0, "no allocation of the path was made to fail");
        // The driver is still in order: a normal call works.
        let p = Payload::from_bytes(b"after the failures");
        let mut w = WriteBuf::new();
        w.transaction(0, CODE_ECHO, 0, &p);
        match call(&b, &w, false)? {
            Ended::Reply(buf) => {
                let _ = b.free_buffer(buf);
            }
            _ => fail!("a normal call after {n} failed allocations did not get its reply"),
        }
        Ok(())
    })();
    srv.kill_and_reap();
    drop(knobs);
    res?;
    counts_back(c, base)
}

/// Once the processes of a case are gone, the driver's object counts are back at `base`.
fn counts_back(c: &Ctx, base: Option<crate::sys::Snapshot>) -> TResult {
    let (Some(dir), Some(base)) = (c.logs.as_deref(), base) else {
        return Ok(());
    };
    // At or below: a process of an earlier test may finish its release meanwhile.
    let mut left = Vec::new();
    let back = harness::wait_until(Duration::from_secs(15), || {
        left = match crate::sys::snapshot_at(dir) {
            Some(now) => above(&now, &base),
            None => vec!["binder_logs unreadable".into()],
        };
        left.is_empty()
    });
    if !back {
        fail!(
            "binder objects left once both processes exited: {}",
            left.join(", ")
        );
    }
    Ok(())
}

/// The counts of `now` that are above those of `base`, as "key base->now".
fn above(now: &crate::sys::Snapshot, base: &crate::sys::Snapshot) -> Vec<String> {
    let mut out = Vec::new();
    for (n, b) in [(&now.active, &base.active), (&now.lines, &base.lines)] {
        for (k, v) in n {
            let then = b.get(k).copied().unwrap_or(0);
            if *v > then {
                out.push(format!("{k} {then}->{v}"));
            }
        }
    }
    out
}

/// Fails each allocation of the client's side of `w` in turn, alone and then with every later
/// one; only the write is armed, the reads that follow are not.
fn client_sweep(c: &Ctx, what: &str, w: WriteBuf, oneway: bool) -> TResult {
    with_setup(c, |b, fail, _| {
        let mut total = 0;
        for mode in [Mode::Nth, Mode::From] {
            total += sweep(what, mode, |n| {
                fail.arm(n, mode)?;
                let sent = b.write_consumed(&w);
                let injected = fail.disarm()?;
                if let Ended::Reply(buf) = finish(b, sent, oneway)? {
                    let _ = b.free_buffer(buf);
                }
                Ok(injected)
            })?;
        }
        Ok(total)
    })
}

/// Fails each allocation of the server's reply to a CODE_ARM_* call in turn, alone and then
/// with every later one.
fn server_sweep(c: &Ctx, what: &str, code: u32) -> TResult {
    with_setup(c, |b, _, verdicts| {
        let mut total = 0;
        for (mode, word) in [(Mode::Nth, 0), (Mode::From, 1)] {
            total += sweep(what, mode, |n| {
                let mut p = Payload::new();
                p.u32(n).u32(word);
                let mut w = WriteBuf::new();
                w.transaction(0, code, 0, &p);
                if let Ended::Reply(buf) = call(b, &w, false)? {
                    let _ = b.free_buffer(buf);
                }
                let v = verdicts
                    .recv_u64_within(Duration::from_millis(CALL_MS))
                    .map_err(|e| format!("no word from the server: {e}"))?;
                Ok(v == 1)
            })?;
        }
        Ok(total)
    })
}

fn sync_call_ends(c: &Ctx) -> TResult {
    let mut w = WriteBuf::new();
    w.transaction(0, CODE_ECHO, 0, &Payload::from_bytes(&[0x5a; 64]));
    client_sweep(c, "BC_TRANSACTION", w, false)
}

fn sync_call_with_object_ends(c: &Ctx) -> TResult {
    // A node of the client and a ref to it in the server are made on the sender's path.
    let mut p = Payload::new();
    p.binder(CLIENT_PTR, CLIENT_PTR + 1, 0);
    let mut w = WriteBuf::new();
    w.transaction(0, CODE_ECHO, 0, &p);
    client_sweep(c, "BC_TRANSACTION with a binder object", w, false)
}

fn oneway_call_ends(c: &Ctx) -> TResult {
    let mut w = WriteBuf::new();
    w.transaction(0, CODE_ECHO, TF_ONE_WAY, &Payload::from_bytes(&[0xa5; 64]));
    client_sweep(c, "oneway BC_TRANSACTION", w, true)
}

fn reply_ends(c: &Ctx) -> TResult {
    server_sweep(c, "BC_REPLY", CODE_ARM_ECHO)
}

fn reply_with_object_ends(c: &Ctx) -> TResult {
    // The server's node and the client's ref to it are made on the replier's path.
    server_sweep(c, "BC_REPLY with a binder object", CODE_ARM_NODE)
}

/// BC_REQUEST_DEATH_NOTIFICATION with each of its allocations failing in turn: as in C, the
/// request either fails with BR_ERROR (C cannot allocate the notification) or holds, and then
/// the death of the node's owner is reported and clearing it is acknowledged. A request that
/// neither fails nor holds leaves its caller waiting for a BR_DEAD_BINDER that never comes.
/// Each attempt has a server of its own, killed after the request.
fn death_notification_holds(c: &Ctx) -> TResult {
    let knobs = Knobs::set()?;
    let base = c.logs.as_deref().and_then(settled_counts);
    let res = (|| -> TResult {
        let verdicts = Pipe::new()?;
        let b = Binder::open_mapped(&c.dev)?;
        // Death notifications go to the process's work list, which only loopers read.
        b.enter_looper()
            .map_err(|e| format!("BC_ENTER_LOOPER: {e}"))?;
        let fail = FailNth::open()?;
        let mut total = 0;
        for mode in [Mode::Nth, Mode::From] {
            total += sweep("BC_REQUEST_DEATH_NOTIFICATION", mode, |n| {
                death_once(c, &b, &fail, &verdicts, n, mode)
            })?;
        }
        ensure!(total > 0, "no allocation of the path was made to fail");
        Ok(())
    })();
    drop(knobs);
    res?;
    counts_back(c, base)
}

/// One death notification request with allocation `n` failing; returns whether it did.
fn death_once(
    c: &Ctx,
    b: &Binder,
    fail: &FailNth,
    verdicts: &Pipe,
    n: u32,
    mode: Mode,
) -> Result<bool, String> {
    const COOKIE: u64 = 0xdead_0001;
    let (mut srv, _) = spawn_server(&c.dev, verdicts)?;
    let res = (|| -> Result<bool, String> {
        let h = server_node(b)?;

        let mut w = WriteBuf::new();
        w.request_death(h, COOKIE);
        fail.arm(n, mode)?;
        let res = b.write(&w);
        let injected = fail.disarm()?;
        if let Err(e) = res {
            return Err(format!(
                "the write failed ({e}); C answers BR_ERROR when it cannot allocate"
            ));
        }
        // A request that failed has queued BR_ERROR on this thread by now (C writes the code
        // without its parameter, which the parser calls truncated).
        let mut held = true;
        while let Some(r) = b.try_next(100).map_err(|e| format!("read: {e}"))? {
            match r {
                Return::Error(_) | Return::Truncated(BR_ERROR) => held = false,
                other => return Err(format!("unexpected {} after the request", other.name())),
            }
        }
        srv.kill_and_reap();
        if held {
            let r = b
                .try_next(CALL_MS as i32)
                .map_err(|e| format!("read: {e}"))?
                .ok_or("no BR_DEAD_BINDER after the owner died (the request did not fail)")?;
            ensure_ret(r == Return::DeadBinder(COOKIE), &r, "BR_DEAD_BINDER")?;
            let mut w = WriteBuf::new();
            w.clear_death(h, COOKIE).dead_binder_done(COOKIE);
            b.write(&w).map_err(|e| format!("BC_CLEAR_DEATH_NOTIFICATION: {e}"))?;
            let r = b
                .try_next(CALL_MS as i32)
                .map_err(|e| format!("read: {e}"))?
                .ok_or("no BR_CLEAR_DEATH_NOTIFICATION_DONE")?;
            ensure_ret(
                r == Return::ClearDeathNotificationDone(COOKIE),
                &r,
                "BR_CLEAR_DEATH_NOTIFICATION_DONE",
            )?;
        }
        b.release_handle(h).map_err(|e| format!("releasing {h}: {e}"))?;
        Ok(injected)
    })();
    srv.kill_and_reap();
    res
}

/// The holder of a freeze notification learns of every freeze of the node's owner, whichever
/// allocation of `BINDER_FREEZE` fails: the ioctl either fails as a whole (C: ENOMEM for its
/// list of the processes to freeze, and nothing is frozen) or it succeeds and the holder gets
/// `BR_FROZEN_BINDER` (C's `binder_add_freeze_work` allocates nothing, so it cannot drop a
/// report). The freezer is the holder's own thread; the owner is a server of the test.
fn freeze_notification_holds(c: &Ctx) -> TResult {
    const COOKIE: u64 = 0xf1ee_0001;
    let knobs = Knobs::set()?;
    let base = c.logs.as_deref().and_then(settled_counts);
    let res = (|| -> TResult {
        let verdicts = Pipe::new()?;
        let b = Binder::open_mapped(&c.dev)?;
        // Freeze notifications go to the process's work list, which only loopers read.
        b.enter_looper()
            .map_err(|e| format!("BC_ENTER_LOOPER: {e}"))?;
        let (mut srv, pid) = spawn_server(&c.dev, &verdicts)?;
        let res = (|| -> TResult {
            let h = server_node(&b)?;
            let mut w = WriteBuf::new();
            w.request_freeze_notification(h, COOKIE);
            b.write(&w).map_err(|e| format!("BC_REQUEST_FREEZE_NOTIFICATION: {e}"))?;
            // The first report: not frozen.
            frozen_report(&b, COOKIE, false)?;
            let fail = FailNth::open()?;
            let mut total = 0;
            for mode in [Mode::Nth, Mode::From] {
                total += sweep("BINDER_FREEZE", mode, |n| {
                    freeze_once(&b, &fail, pid, COOKIE, n, mode)
                })?;
            }
            ensure!(total > 0, "no allocation of the path was made to fail");
            let mut w = WriteBuf::new();
            w.clear_freeze_notification(h, COOKIE);
            b.write(&w).map_err(|e| format!("BC_CLEAR_FREEZE_NOTIFICATION: {e}"))?;
            let r = b
                .try_next(CALL_MS as i32)
                .map_err(|e| format!("read: {e}"))?
                .ok_or("no BR_CLEAR_FREEZE_NOTIFICATION_DONE")?;
            ensure_ret(
                r == Return::ClearFreezeNotificationDone(COOKIE),
                &r,
                "BR_CLEAR_FREEZE_NOTIFICATION_DONE",
            )?;
            b.release_handle(h).map_err(|e| format!("releasing {h}: {e}"))?;
            Ok(())
        })();
        srv.kill_and_reap();
        res
    })();
    drop(knobs);
    res?;
    counts_back(c, base)
}

/// Freezes the owner `pid` with allocation `n` of the ioctl failing; whatever failed, the
/// holder is told of the freeze if the ioctl succeeded, and of nothing if it failed. Thaws
/// the owner again (with nothing failing). Returns whether the failure was injected.
fn freeze_once(
    b: &Binder,
    fail: &FailNth,
    pid: i32,
    cookie: u64,
    n: u32,
    mode: Mode,
) -> Result<bool, String> {
    fail.arm(n, mode)?;
    let res = b.freeze(pid, true, 1000);
    let injected = fail.disarm()?;
    match res {
        Ok(()) => {
            frozen_report(b, cookie, true)?;
            b.freeze(pid, false, 0)
                .map_err(|e| format!("BINDER_FREEZE (thaw): {e}"))?;
            frozen_report(b, cookie, false)?;
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOMEM) => {
            if let Some(r) = b.try_next(100).map_err(|e| format!("read: {e}"))? {
                return Err(format!("{} after a BINDER_FREEZE that failed", r.name()));
            }
        }
        Err(e) => return Err(format!("BINDER_FREEZE: {e}")),
    }
    Ok(injected)
}

/// Reads the next return, which must be the freeze notification `cookie` saying `frozen`, and
/// acknowledges it.
fn frozen_report(b: &Binder, cookie: u64, frozen: bool) -> Result<(), String> {
    let want = if frozen {
        "BR_FROZEN_BINDER (frozen)"
    } else {
        "BR_FROZEN_BINDER (thawed)"
    };
    let r = b
        .try_next(CALL_MS as i32)
        .map_err(|e| format!("read: {e}"))?
        .ok_or_else(|| format!("no {want}: the holder was not told"))?;
    let ok = matches!(&r, Return::FrozenBinder(i) if i.cookie == cookie && (i.is_frozen != 0) == frozen);
    ensure_ret(ok, &r, want)?;
    let mut w = WriteBuf::new();
    w.freeze_notification_done(cookie);
    b.write(&w)
        .map(|_| ())
        .map_err(|e| format!("BC_FREEZE_NOTIFICATION_DONE: {e}"))
}

/// A handle to the server's node (CODE_NODE), kept with BC_INCREFS + BC_ACQUIRE; the reply's
/// buffer is freed.
fn server_node(b: &Binder) -> Result<u32, String> {
    let rec = b.call_nofree(0, CODE_NODE, &Payload::new())?;
    let off = *rec.offsets.first().ok_or("CODE_NODE reply without an object")?;
    let h = rec.object::<flat_binder_object>(off).handle();
    b.acquire_handle(h).map_err(|e| format!("BC_ACQUIRE {h}: {e}"))?;
    b.free_buffer(rec.td.buffer).map_err(|e| format!("BC_FREE_BUFFER: {e}"))?;
    Ok(h)
}

fn ensure_ret(ok: bool, r: &Return, want: &str) -> Result<(), String> {
    if ok {
        Ok(())
    } else {
        Err(format!("expected {want}, got {}", r.name()))
    }
}
