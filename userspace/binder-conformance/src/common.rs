//! Shared building blocks for the tests: servers in forked processes.

use crate::Ctx;
use binder_uapi::harness::{fork_proc, Pipe, Proc};
use binder_uapi::*;
use std::time::Duration;

/// What a server handler wants done with a transaction.
pub enum Step {
    /// Reply with this payload (ignored for one-way transactions).
    Reply(Payload),
    /// Reply with a status code (TF_STATUS_CODE) carrying this value.
    Status(i32),
    /// Do not reply (one-way, or the handler replied itself).
    Nothing,
}

/// A server process.
pub struct Server {
    pub proc_: Proc,
    pub pid: i32,
}

impl Server {
    /// Kill the server and wait until it is gone.
    pub fn kill(self) {
        self.proc_.kill();
    }
}

/// Handle one incoming item in a server loop: transactions go to `handler` (their
/// buffer is freed afterwards), node reference requests and death notifications are
/// acknowledged, anything else (BR_TRANSACTION_COMPLETE of our replies...) is ignored.
pub fn serve_one<F>(b: &Binder, r: Return, handler: &mut F) -> Result<(), String>
where
    F: FnMut(&Binder, &Received) -> Result<Step, String>,
{
    let mut w = WriteBuf::new();
    match r {
        Return::Transaction(td) | Return::TransactionSecCtx(td, _) => {
            let rec = b.received(&td)?;
            let oneway = td.flags & TF_ONE_WAY != 0;
            let step = handler(b, &rec)?;
            w.free_buffer(td.buffer);
            match step {
                Step::Reply(p) if !oneway => {
                    w.reply(0, &p);
                }
                Step::Status(s) if !oneway => {
                    let mut p = Payload::new();
                    p.u32(s as u32);
                    w.reply(TF_STATUS_CODE, &p);
                }
                _ => {}
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
        _ => return Ok(()),
    }
    b.write(&w)
        .map(|_| ())
        .map_err(|e| format!("server: answering {}: {e}", r.name()))
}

/// Serve until the process is killed (or a handler fails: then report the failure).
pub fn serve_loop<F>(b: &Binder, mut handler: F) -> TResult
where
    F: FnMut(&Binder, &Received) -> Result<Step, String>,
{
    loop {
        match b.try_next(60_000) {
            Ok(Some(r)) => serve_one(b, r, &mut handler)?,
            Ok(None) => continue,
            Err(e) => return Err(format!("server read failed: {e}").into()),
        }
    }
}

/// Fork a context manager for `ctx.dev` that serves with `handler`. Returns once it is
/// ready to receive.
pub fn spawn_ctxmgr<F>(ctx: &Ctx, handler: F) -> Result<Server, String>
where
    F: FnMut(&Binder, &Received) -> Result<Step, String>,
{
    spawn_ctxmgr_with(ctx, |_| Ok(()), handler)
}

/// Like `spawn_ctxmgr`, with `setup` run after becoming context manager and before
/// announcing readiness.
pub fn spawn_ctxmgr_with<S, F>(ctx: &Ctx, setup: S, handler: F) -> Result<Server, String>
where
    S: FnOnce(&Binder) -> TResult,
    F: FnMut(&Binder, &Received) -> Result<Step, String>,
{
    spawn_ctxmgr_flags(ctx, None, setup, handler)
}

/// The general form: with `Some(flags)` the manager registers with
/// BINDER_SET_CONTEXT_MGR_EXT (node ptr and cookie 0) and those flat_binder flags.
pub fn spawn_ctxmgr_flags<S, F>(
    ctx: &Ctx,
    flags: Option<u32>,
    setup: S,
    handler: F,
) -> Result<Server, String>
where
    S: FnOnce(&Binder) -> TResult,
    F: FnMut(&Binder, &Received) -> Result<Step, String>,
{
    let ready = Pipe::new().map_err(|e| e.to_string())?;
    let dev = ctx.dev.clone();
    let p = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        match flags {
            None => b.set_context_mgr()?,
            Some(f) => b.set_context_mgr_ext(f, 0, 0)?,
        }
        b.enter_looper()?;
        setup(&b)?;
        ready.send_u64(harness::getpid() as u64)?;
        serve_loop(&b, handler)
    })
    .map_err(|e| format!("fork: {e}"))?;
    match ready.recv_u64_within(Duration::from_secs(10)) {
        Ok(pid) => Ok(Server {
            proc_: p,
            pid: pid as i32,
        }),
        Err(e) => {
            // The server failed before becoming ready: report its own verdict.
            match p.join_within(Duration::from_secs(2)) {
                Err(TestErr::Fail(m)) => Err(format!("server failed to start: {m}")),
                _ => Err(format!("server failed to start: {e}")),
            }
        }
    }
}

/// A context manager that echoes each transaction's data back.
pub fn spawn_echo(ctx: &Ctx) -> Result<Server, String> {
    spawn_ctxmgr(ctx, |_, rec| {
        Ok(Step::Reply(Payload::from_bytes(&rec.data)))
    })
}

/// Open the test device, mapped.
pub fn client(ctx: &Ctx) -> Result<Binder, String> {
    Binder::open_mapped(&ctx.dev).map_err(|e| format!("open+mmap {}: {e}", ctx.dev))
}

/// A follow-up call that must still work: echo `probe` through handle 0.
pub fn still_works(b: &Binder) -> TResult {
    let probe = b"still-alive";
    let r = b
        .call(0, 0x5a5a, &Payload::from_bytes(probe))
        .map_err(|e| format!("follow-up transaction failed: {e}"))?;
    if r.data != probe {
        binder_uapi::fail!("follow-up transaction: reply data {:?}", r.data);
    }
    Ok(())
}

/// Call `handle` and serve nested transactions that arrive on this thread meanwhile
/// with `serve` (which may itself call). Returns the reply (buffer freed).
pub fn call_serving<F>(
    b: &Binder,
    handle: u32,
    code: u32,
    p: &Payload,
    serve: &F,
) -> Result<Received, String>
where
    F: Fn(&Binder, &Received) -> Result<Payload, String>,
{
    b.transact(handle, code, 0, p).map_err(|e| e.to_string())?;
    loop {
        match b.next_auto()? {
            Return::TransactionComplete => {}
            Return::Transaction(td) => {
                let rec = b.received(&td)?;
                let reply = serve(b, &rec)?;
                let mut w = WriteBuf::new();
                w.free_buffer(td.buffer).reply(0, &reply);
                b.write(&w).map_err(|e| e.to_string())?;
            }
            Return::Reply(td) => {
                let rec = b.received(&td)?;
                b.free_buffer(td.buffer).map_err(|e| e.to_string())?;
                return Ok(rec);
            }
            other => return Err(format!("while waiting for a reply: {}", other.name())),
        }
    }
}

/// Expect an ioctl result to be a specific errno.
pub fn expect_errno<T>(r: std::io::Result<T>, errno: i32, what: &str) -> TResult {
    match r {
        Ok(_) => binder_uapi::fail!("{what}: expected {}, got success", errno_name(errno)),
        Err(e) if e.raw_os_error() == Some(errno) => Ok(()),
        Err(e) => binder_uapi::fail!(
            "{what}: expected {}, got {}",
            errno_name(errno),
            res_name::<()>(&Err(e))
        ),
    }
}

/// Expect an ioctl to succeed.
pub fn expect_ok<T>(r: std::io::Result<T>, what: &str) -> TResult<T> {
    r.map_err(|e| {
        TestErr::Fail(format!(
            "{what}: expected success, got {}",
            res_name::<()>(&Err(e))
        ))
    })
}

/// Default node a standard server hands out.
pub const NODE_PTR: u64 = 0x1000;
pub const NODE_COOKIE: u64 = 0xc00c_1e00;
/// Standard server codes.
pub const CODE_ECHO: u32 = 0x10;
/// Reply with a BINDER_TYPE_BINDER for the node whose ptr is the u64 in the data (or
/// NODE_PTR if none); the cookie is `ptr ^ NODE_COOKIE`.
pub const CODE_GET_NODE: u32 = 0x11;
/// Reply with target ptr, cookie, sender pid, sender euid, flags, code of the transaction.
pub const CODE_WHOAMI: u32 = 0x12;
/// Reply with a weak binder object for NODE_PTR.
pub const CODE_GET_WEAK_NODE: u32 = 0x13;

/// The cookie a standard server uses for node `ptr`.
pub fn cookie_for(ptr: u64) -> u64 {
    ptr ^ NODE_COOKIE
}

/// The standard handler: CODE_GET_NODE / CODE_GET_WEAK_NODE / CODE_WHOAMI, echo otherwise.
pub fn std_handler(_b: &Binder, rec: &Received) -> Result<Step, String> {
    let mut p = Payload::new();
    match rec.td.code {
        CODE_GET_NODE => {
            let ptr = if rec.data.len() >= 8 {
                u64::from_ne_bytes(rec.data[..8].try_into().unwrap())
            } else {
                NODE_PTR
            };
            p.binder(ptr, cookie_for(ptr), 0);
        }
        CODE_GET_WEAK_NODE => {
            p.weak_binder(NODE_PTR, cookie_for(NODE_PTR), 0);
        }
        CODE_WHOAMI => {
            p.u64(rec.td.target)
                .u64(rec.td.cookie)
                .u32(rec.td.sender_pid as u32)
                .u32(rec.td.sender_euid)
                .u32(rec.td.flags)
                .u32(rec.td.code);
        }
        _ => {
            p.bytes(&rec.data);
        }
    }
    Ok(Step::Reply(p))
}

/// A context manager running `std_handler`.
pub fn spawn_std(ctx: &Ctx) -> Result<Server, String> {
    spawn_ctxmgr(ctx, std_handler)
}

/// Spawn a `std_handler` context manager, open a client and run `body` with it; the
/// server is killed afterwards (on a failure, dropping it kills it).
pub fn with_std<B>(ctx: &Ctx, body: B) -> TResult
where
    B: FnOnce(&Binder) -> TResult,
{
    with_ctxmgr(ctx, std_handler, |_, b| body(b))
}

/// `with_std` with a custom handler; `body` also gets the server (for its pid).
pub fn with_ctxmgr<F, B>(ctx: &Ctx, handler: F, body: B) -> TResult
where
    F: FnMut(&Binder, &Received) -> Result<Step, String>,
    B: FnOnce(&Server, &Binder) -> TResult,
{
    let srv = spawn_ctxmgr(ctx, handler)?;
    let b = client(ctx)?;
    body(&srv, &b)?;
    srv.kill();
    Ok(())
}

/// Who-am-I answer.
#[derive(Debug, PartialEq, Eq)]
pub struct WhoAmI {
    pub target: u64,
    pub cookie: u64,
    pub sender_pid: i32,
    pub sender_euid: u32,
    pub flags: u32,
    pub code: u32,
}

/// Ask `handle` (served by std_handler) who we are talking to.
pub fn whoami(b: &Binder, handle: u32, flags: u32) -> Result<WhoAmI, String> {
    b.transact(handle, CODE_WHOAMI, flags, &Payload::new())
        .map_err(|e| format!("BC_TRANSACTION: {e}"))?;
    let r = b.next_auto()?;
    if r != Return::TransactionComplete {
        return Err(format!(
            "expected BR_TRANSACTION_COMPLETE, got {}",
            r.name()
        ));
    }
    let td = match b.next_auto()? {
        Return::Reply(td) => td,
        o => return Err(format!("expected BR_REPLY, got {}", o.name())),
    };
    let rec = b.received(&td)?;
    b.free_buffer(td.buffer).map_err(|e| e.to_string())?;
    if rec.data.len() < 32 {
        return Err(format!("whoami reply too short: {} bytes", rec.data.len()));
    }
    let u64at = |o: usize| u64::from_ne_bytes(rec.data[o..o + 8].try_into().unwrap());
    let u32at = |o: usize| u32::from_ne_bytes(rec.data[o..o + 4].try_into().unwrap());
    Ok(WhoAmI {
        target: u64at(0),
        cookie: u64at(8),
        sender_pid: u32at(16) as i32,
        sender_euid: u32at(20),
        flags: u32at(24),
        code: u32at(28),
    })
}

/// Get a strong handle (acquired, so it survives the reply buffer) to node `ptr` of the
/// std server behind handle 0.
pub fn get_node(b: &Binder, ptr: u64) -> Result<u32, String> {
    let mut p = Payload::new();
    p.u64(ptr);
    let rec = b.call_nofree(0, CODE_GET_NODE, &p)?;
    if rec.offsets.len() != 1 {
        return Err(format!(
            "GET_NODE reply has {} objects, expected 1",
            rec.offsets.len()
        ));
    }
    let obj: flat_binder_object = rec.object(rec.offsets[0]);
    if obj.hdr.type_ != BINDER_TYPE_HANDLE {
        return Err(format!(
            "GET_NODE reply object type {:#x}, expected BINDER_TYPE_HANDLE",
            obj.hdr.type_
        ));
    }
    let h = obj.handle();
    b.acquire_handle(h)
        .map_err(|e| format!("BC_INCREFS/BC_ACQUIRE {h}: {e}"))?;
    b.free_buffer(rec.td.buffer)
        .map_err(|e| format!("BC_FREE_BUFFER: {e}"))?;
    Ok(h)
}

/// Expect the next return to be `code` (skipping nothing); message names `what`.
pub fn expect_br(b: &Binder, code: u32, what: &str) -> TResult<Return> {
    let r = b
        .next()
        .map_err(|e| TestErr::Fail(format!("{what}: {e}")))?;
    if r.code() != code {
        binder_uapi::fail!(
            "{what}: expected {}, got {}",
            br_name(code).unwrap_or("?"),
            r.name()
        );
    }
    Ok(r)
}

/// Send `w` (one transaction) and expect exactly `code` as the outcome (with no
/// BR_TRANSACTION_COMPLETE before it for errors).
pub fn expect_txn_error(b: &Binder, w: &WriteBuf, code: u32, what: &str) -> TResult {
    b.write(w)
        .map_err(|e| TestErr::Fail(format!("{what}: write failed: {e}")))?;
    expect_br(b, code, what)?;
    Ok(())
}

/// Read the thread's extended error.
pub fn ext_err(b: &Binder) -> TResult<binder_extended_error> {
    expect_ok(b.extended_error(), "BINDER_GET_EXTENDED_ERROR")
}

/// Check the extended error's command and param.
pub fn expect_ext_err(b: &Binder, command: u32, param: i32, what: &str) -> TResult {
    let e = ext_err(b)?;
    if e.command != command || e.param != param {
        binder_uapi::fail!(
            "{what}: extended error expected ({}, {}), got ({}, {})",
            br_name(command).unwrap_or("?"),
            param,
            br_name(e.command).unwrap_or("?"),
            e.param
        );
    }
    Ok(())
}

/// Print `msg` as a `# ` line of the test's output (measurements a passing test reports:
/// the line comes before its PASS line, and the ptest report keeps it as the detail).
pub fn note(msg: &str) {
    use std::io::Write;
    let out = std::io::stdout();
    let mut o = out.lock();
    for l in msg.lines() {
        let _ = writeln!(o, "# {l}");
    }
    let _ = o.flush();
}

/// The page size.
pub fn page_size() -> usize {
    // SAFETY: sysconf has no memory effects.
    unsafe { libc::sysconf(libc::_SC_PAGESIZE) as usize }
}

/// A transaction payload of `n` pattern bytes.
pub fn pattern(n: usize, seed: u8) -> Payload {
    let mut v = Vec::with_capacity(n);
    for i in 0..n {
        v.push((i as u8).wrapping_mul(31).wrapping_add(seed));
    }
    Payload::from_bytes(&v)
}

/// Mini service manager codes.
pub const CODE_REGISTER: u32 = 0x20;
/// Reply: the registered service as a BINDER_TYPE_HANDLE (or no object if none).
pub const CODE_LOOKUP: u32 = 0x21;

/// A context manager that stores one registered service (any object sent with
/// CODE_REGISTER, acquired strongly) and hands it out on CODE_LOOKUP.
pub fn spawn_svcmgr(ctx: &Ctx) -> Result<Server, String> {
    let mut held: Option<u32> = None;
    spawn_ctxmgr(ctx, move |b, rec| match rec.td.code {
        CODE_REGISTER => {
            let off = *rec
                .offsets
                .first()
                .ok_or_else(|| "svcmgr: REGISTER without an object".to_string())?;
            let obj: flat_binder_object = rec.object(off);
            if obj.hdr.type_ != BINDER_TYPE_HANDLE {
                return Err(format!("svcmgr: REGISTER object type {:#x}", obj.hdr.type_));
            }
            if let Some(old) = held.take() {
                b.release_handle(old).map_err(|e| e.to_string())?;
            }
            b.acquire_handle(obj.handle()).map_err(|e| e.to_string())?;
            held = Some(obj.handle());
            let mut p = Payload::new();
            p.u32(obj.handle());
            Ok(Step::Reply(p))
        }
        CODE_LOOKUP => {
            let mut p = Payload::new();
            if let Some(h) = held {
                p.handle(h);
            }
            Ok(Step::Reply(p))
        }
        _ => std_handler(b, rec),
    })
}

/// Fork a service that registers node `ptr` (cookie `cookie_for(ptr)`) with the
/// svcmgr behind handle 0 and then serves `std_handler`. Returns once registered.
pub fn spawn_service(ctx: &Ctx, ptr: u64) -> Result<Server, String> {
    spawn_service_with(ctx, ptr, std_handler)
}

/// `spawn_service` with a custom handler.
pub fn spawn_service_with<F>(ctx: &Ctx, ptr: u64, handler: F) -> Result<Server, String>
where
    F: FnMut(&Binder, &Received) -> Result<Step, String>,
{
    spawn_service_flags(ctx, ptr, 0, handler)
}

/// `spawn_service_with`, publishing the node with these flat_binder_object `flags`
/// (FLAT_BINDER_FLAG_PRIORITY_MASK bits: the node's min_priority, ...).
pub fn spawn_service_flags<F>(ctx: &Ctx, ptr: u64, flags: u32, handler: F) -> Result<Server, String>
where
    F: FnMut(&Binder, &Received) -> Result<Step, String>,
{
    let ready = Pipe::new().map_err(|e| e.to_string())?;
    let dev = ctx.dev.clone();
    let p = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.enter_looper()?;
        let mut pl = Payload::new();
        pl.binder(ptr, cookie_for(ptr), flags);
        b.call(0, CODE_REGISTER, &pl)?;
        ready.send_u64(harness::getpid() as u64)?;
        serve_loop(&b, handler)
    })
    .map_err(|e| format!("fork: {e}"))?;
    match ready.recv_u64_within(Duration::from_secs(10)) {
        Ok(pid) => Ok(Server {
            proc_: p,
            pid: pid as i32,
        }),
        Err(e) => match p.join_within(Duration::from_secs(2)) {
            Err(TestErr::Fail(m)) => Err(format!("service failed to start: {m}")),
            _ => Err(format!("service failed to start: {e}")),
        },
    }
}

/// Look up the registered service; returns an acquired handle.
pub fn lookup(b: &Binder) -> Result<u32, String> {
    let rec = b.call_nofree(0, CODE_LOOKUP, &Payload::new())?;
    if rec.offsets.len() != 1 {
        return Err(format!("LOOKUP reply has {} objects", rec.offsets.len()));
    }
    let obj: flat_binder_object = rec.object(rec.offsets[0]);
    if obj.hdr.type_ != BINDER_TYPE_HANDLE {
        return Err(format!("LOOKUP object type {:#x}", obj.hdr.type_));
    }
    b.acquire_handle(obj.handle()).map_err(|e| e.to_string())?;
    b.free_buffer(rec.td.buffer).map_err(|e| e.to_string())?;
    Ok(obj.handle())
}
