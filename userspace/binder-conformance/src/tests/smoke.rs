//! smoke: the minimum that must work before anything else is meaningful.

use crate::common::*;
use crate::Ctx;
use binder_uapi::harness::{fork_proc, getpid, Pipe};
use binder_uapi::*;

crate::tests!("smoke", version, ctxmgr_roundtrip, echo_server, oneway);

/// BINDER_VERSION on a fresh binderfs device reports protocol 8.
fn version(c: &Ctx) -> TResult {
    let b = Binder::open(&c.dev)?;
    let v = expect_ok(b.version(), "BINDER_VERSION")?;
    ensure_eq!(v, BINDER_CURRENT_PROTOCOL_VERSION, "protocol_version");
    Ok(())
}

/// A context manager receives a transaction from another process and replies.
fn ctxmgr_roundtrip(c: &Ctx) -> TResult {
    let ready = Pipe::new()?;
    let dev = c.dev.clone();
    let client_pid = getpid();
    let euid = harness::geteuid();
    let server = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        expect_ok(b.set_context_mgr(), "BINDER_SET_CONTEXT_MGR")?;
        expect_ok(b.enter_looper(), "BC_ENTER_LOOPER")?;
        ready.send_u64(1)?;
        let t = b.recv_txn()?;
        ensure_eq!(t.td.code, 0x1234, "BR_TRANSACTION code");
        ensure_eq!(t.data, b"hello binder".to_vec(), "BR_TRANSACTION data");
        ensure_eq!(t.td.sender_pid, client_pid, "sender_pid");
        ensure_eq!(t.td.sender_euid, euid, "sender_euid");
        ensure_eq!(t.td.flags & TF_ONE_WAY, 0, "TF_ONE_WAY in flags");
        ensure_eq!(t.td.offsets_size, 0, "offsets_size");
        b.reply_and_free(t.td.buffer, &Payload::from_bytes(b"hello back"))?;
        Ok(())
    })?;
    ready.recv_u64()?;
    let b = client(c)?;
    let mut p = Payload::new();
    p.bytes(b"hello binder");
    b.transact(0, 0x1234, 0, &p)?;
    let r = b.next()?;
    ensure!(
        r == Return::TransactionComplete,
        "expected BR_TRANSACTION_COMPLETE, got {}",
        r.name()
    );
    let r = b.next()?;
    let td = match r {
        Return::Reply(td) => td,
        other => fail!("expected BR_REPLY, got {}", other.name()),
    };
    let rec = b.received(&td)?;
    ensure_eq!(rec.data, b"hello back".to_vec(), "BR_REPLY data");
    ensure_eq!(td.offsets_size, 0, "reply offsets_size");
    expect_ok(b.free_buffer(td.buffer), "BC_FREE_BUFFER")?;
    server.join()
}

/// The shared echo server helper works and can be reused for several calls.
fn echo_server(c: &Ctx) -> TResult {
    let srv = spawn_echo(c)?;
    let b = client(c)?;
    for i in 0..3u32 {
        let mut p = Payload::new();
        p.u32(i).bytes(b"echo");
        let r = b.call(0, i, &p)?;
        ensure_eq!(r.data, p.data, "echoed data");
    }
    still_works(&b)?;
    srv.kill();
    Ok(())
}

/// A one-way transaction completes with BR_TRANSACTION_COMPLETE and no reply.
fn oneway(c: &Ctx) -> TResult {
    let got = Pipe::new()?;
    let srv = spawn_ctxmgr(c, |_, rec| {
        if rec.td.flags & TF_ONE_WAY != 0 {
            let _ = got.send(&rec.data);
            return Ok(Step::Nothing);
        }
        Ok(Step::Reply(Payload::new()))
    })?;
    let b = client(c)?;
    b.transact(0, 1, TF_ONE_WAY, &Payload::from_bytes(b"oneway!!"))?;
    b.expect(BR_TRANSACTION_COMPLETE)?;
    let data = got.recv_exact(8, std::time::Duration::from_secs(5))?;
    ensure_eq!(
        data,
        b"oneway!!".to_vec(),
        "one-way data seen by the server"
    );
    b.expect_nothing(200)?;
    srv.kill();
    Ok(())
}
