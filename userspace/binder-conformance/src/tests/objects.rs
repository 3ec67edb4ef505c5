//! objects: binder/handle/fd/fda/ptr/secctx objects and their translation.

use crate::common::*;
use crate::Ctx;
use binder_uapi::harness::{fork_proc, Pipe};
use binder_uapi::*;
use std::time::Duration;

crate::tests!(
    "objects",
    binder_becomes_handle,
    handle_numbering,
    handle_numbering_many,
    same_node_same_handle,
    call_through_handle,
    handle_back_to_owner_becomes_binder,
    handle_to_third_party,
    weak_binder_becomes_weak_handle,
    weak_handle_cannot_transact,
    owner_gets_increfs_acquire,
    binder_in_oneway,
    handle_zero_with_ref_becomes_binder,
    fd_passed,
    fd_received_cloexec,
    fd_not_accepted,
    fd_in_reply_needs_accept_fds,
    fd_in_reply_accepted,
    ptr_buffer_copied,
    ptr_parent_fixup,
    fda_translated,
    fda_zero_fds,
    secctx_node,
    object_flags_preserved,
    fd_in_oneway,
    failed_fd_transfer_leaks_no_fd,
    fda_close_drops_posix_lock,
    untranslated_object_never_visible,
    failed_translation_leaves_no_object,
);

fn obj_at(rec: &Received, i: usize) -> Result<flat_binder_object, String> {
    let off = *rec
        .offsets
        .get(i)
        .ok_or_else(|| format!("object {i} missing: {} offsets", rec.offsets.len()))?;
    Ok(rec.object(off))
}

fn binder_becomes_handle(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let mut p = Payload::new();
    p.u64(NODE_PTR);
    let rec = b.call_nofree(0, CODE_GET_NODE, &p)?;
    ensure_eq!(rec.offsets, vec![0], "offsets");
    let o = obj_at(&rec, 0)?;
    ensure_eq!(o.hdr.type_, BINDER_TYPE_HANDLE, "translated type");
    ensure_eq!(
        o.binder_or_handle,
        1,
        "handle (first non-manager descriptor)"
    );
    ensure_eq!(o.cookie, 0, "cookie cleared");
    ensure_eq!(o.flags, 0, "flags");
    b.free_buffer(rec.td.buffer)?;
    srv.kill();
    Ok(())
}

fn handle_numbering(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let h1 = get_node(&b, 0x1000)?;
    let h2 = get_node(&b, 0x2000)?;
    let h3 = get_node(&b, 0x3000)?;
    ensure_eq!((h1, h2, h3), (1, 2, 3), "descriptors for three nodes");
    // Drop the middle one; the next new node reuses the lowest free descriptor.
    b.release_handle(h2)?;
    let h4 = get_node(&b, 0x4000)?;
    ensure_eq!(h4, 2, "descriptor reused after release");
    srv.kill();
    Ok(())
}

/// The lowest free descriptor, with more handles than one word of C's handle bitmap
/// (`dbitmap`) holds: 300 make it grow from 64 to 512 bits, holes in different words are
/// refilled lowest first, and after all but the first are released (the bitmap shrinks back)
/// numbering goes on from 2.
fn handle_numbering_many(c: &Ctx) -> TResult {
    const N: u32 = 300;
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let ptr = |i: u32| 0x1000 * u64::from(i);
    for i in 1..=N {
        let h = get_node(&b, ptr(i))?;
        ensure_eq!(h, i, format!("descriptor of new node {i}"));
    }
    for h in [200, 70, 5] {
        b.release_handle(h).map_err(|e| format!("release {h}: {e}"))?;
    }
    for (i, want) in (N + 1..).zip([5, 70, 200]) {
        let h = get_node(&b, ptr(i))?;
        ensure_eq!(h, want, format!("descriptor reused after release (node {i})"));
    }
    let h = get_node(&b, ptr(N + 4))?;
    ensure_eq!(h, N + 1, "descriptor after the highest");
    for h in (2..=N + 1).rev() {
        b.release_handle(h).map_err(|e| format!("release {h}: {e}"))?;
    }
    let h = get_node(&b, ptr(N + 5))?;
    ensure_eq!(h, 2, "descriptor after all but the first were released");
    let h = get_node(&b, ptr(1))?;
    ensure_eq!(h, 1, "the first node keeps its descriptor");
    srv.kill();
    Ok(())
}

fn same_node_same_handle(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let h1 = get_node(&b, 0x1000)?;
    let h2 = get_node(&b, 0x1000)?;
    ensure_eq!(h1, h2, "the same node gives the same handle");
    srv.kill();
    Ok(())
}

fn call_through_handle(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let h = get_node(&b, 0x1230)?;
    let w = whoami(&b, h, 0)?;
    ensure_eq!(w.target, 0x1230, "BR_TRANSACTION target.ptr");
    ensure_eq!(w.cookie, cookie_for(0x1230), "BR_TRANSACTION cookie");
    let w0 = whoami(&b, 0, 0)?;
    ensure_eq!(
        (w0.target, w0.cookie),
        (0, 0),
        "handle 0 still reaches the manager node"
    );
    srv.kill();
    Ok(())
}

fn handle_back_to_owner_becomes_binder(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let h = get_node(&b, 0x5550)?;
    let mut p = Payload::new();
    p.handle(h);
    // The echo reply carries the server's view of the object as plain bytes.
    let r = b.call(0, CODE_ECHO, &p)?;
    let o: flat_binder_object = proto::read_pod(&r.data);
    ensure_eq!(o.hdr.type_, BINDER_TYPE_BINDER, "type seen by the owner");
    ensure_eq!(o.binder_or_handle, 0x5550, "ptr seen by the owner");
    ensure_eq!(o.cookie, cookie_for(0x5550), "cookie seen by the owner");
    srv.kill();
    Ok(())
}

fn handle_to_third_party(c: &Ctx) -> TResult {
    let mgr = spawn_svcmgr(c)?;
    let svc = spawn_service(c, 0x4242)?;
    let b = client(c)?;
    let h = lookup(&b)?;
    ensure_eq!(h, 1, "client's descriptor for the service");
    let w = whoami(&b, h, 0)?;
    ensure_eq!(w.target, 0x4242, "target.ptr at the service");
    ensure_eq!(w.cookie, cookie_for(0x4242), "cookie at the service");
    ensure_eq!(w.sender_pid, harness::getpid(), "sender_pid at the service");
    svc.kill();
    mgr.kill();
    Ok(())
}

fn weak_binder_becomes_weak_handle(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let rec = b.call_nofree(0, CODE_GET_WEAK_NODE, &Payload::new())?;
    let o = obj_at(&rec, 0)?;
    ensure_eq!(o.hdr.type_, BINDER_TYPE_WEAK_HANDLE, "translated type");
    ensure_eq!(o.binder_or_handle, 1, "handle");
    b.free_buffer(rec.td.buffer)?;
    srv.kill();
    Ok(())
}

fn weak_handle_cannot_transact(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let rec = b.call_nofree(0, CODE_GET_WEAK_NODE, &Payload::new())?;
    let h = obj_at(&rec, 0)?.handle();
    let mut w = WriteBuf::new();
    w.transaction(h, CODE_ECHO, 0, &Payload::new());
    expect_txn_error(&b, &w, BR_FAILED_REPLY, "call through a weak-only handle")?;
    // A weak ref cannot be upgraded with BC_ACQUIRE (ignored), so it stays unusable.
    let mut w = WriteBuf::new();
    w.acquire(h);
    expect_ok(b.write(&w), "BC_ACQUIRE on a weak-only handle (ignored)")?;
    let mut w = WriteBuf::new();
    w.transaction(h, CODE_ECHO, 0, &Payload::new());
    expect_txn_error(
        &b,
        &w,
        BR_FAILED_REPLY,
        "call through the handle after BC_ACQUIRE",
    )?;
    b.free_buffer(rec.td.buffer)?;
    still_works(&b)?;
    srv.kill();
    Ok(())
}

fn owner_gets_increfs_acquire(c: &Ctx) -> TResult {
    let seen = Pipe::new()?;
    let srv = spawn_ctxmgr(c, |b, _rec| {
        let mut p = Payload::new();
        p.binder(0x7700, 0x7701, 0);
        let mut w = WriteBuf::new();
        w.reply(0, &p);
        b.write(&w).map_err(|e| e.to_string())?;
        let mut got = Vec::new();
        for _ in 0..3 {
            got.push(b.next()?);
        }
        let ok = got
            == vec![
                Return::Increfs(binder_ptr_cookie {
                    ptr: 0x7700,
                    cookie: 0x7701,
                }),
                Return::Acquire(binder_ptr_cookie {
                    ptr: 0x7700,
                    cookie: 0x7701,
                }),
                Return::TransactionComplete,
            ];
        let _ = seen.send(if ok { b"ok" } else { b"no" });
        if !ok {
            return Err(format!("owner saw {}", names(&got)));
        }
        let mut w = WriteBuf::new();
        w.increfs_done(0x7700, 0x7701).acquire_done(0x7700, 0x7701);
        b.write(&w).map_err(|e| e.to_string())?;
        Ok(Step::Nothing)
    })?;
    let b = client(c)?;
    let rec = b.call_nofree(0, 1, &Payload::new())?;
    ensure_eq!(
        obj_at(&rec, 0)?.hdr.type_,
        BINDER_TYPE_HANDLE,
        "object type"
    );
    let v = seen.recv_exact(2, Duration::from_secs(5))?;
    ensure!(
        v == b"ok",
        "node owner did not see [BR_INCREFS, BR_ACQUIRE, BR_TRANSACTION_COMPLETE] with ptr/cookie"
    );
    b.free_buffer(rec.td.buffer)?;
    srv.kill();
    Ok(())
}

fn binder_in_oneway(c: &Ctx) -> TResult {
    let got = Pipe::new()?;
    let srv = spawn_ctxmgr(c, |_, rec| {
        if rec.td.flags & TF_ONE_WAY != 0 {
            let o: flat_binder_object = rec.object(rec.offsets[0]);
            let _ = got.send_u64(o.hdr.type_ as u64);
            let _ = got.send_u64(o.binder_or_handle);
        }
        Ok(Step::Nothing)
    })?;
    let b = client(c)?;
    b.enter_looper()?;
    let mut p = Payload::new();
    p.binder(0x8800, 0x8801, 0);
    b.transact(0, 1, TF_ONE_WAY, &p)?;
    let v = b.collect_until(&[BR_TRANSACTION_COMPLETE])?;
    ensure_eq!(
        got.recv_u64()? as u32,
        BINDER_TYPE_HANDLE,
        "type at the receiver"
    );
    ensure_eq!(got.recv_u64()?, 1, "handle at the receiver");
    let _ = v;
    srv.kill();
    Ok(())
}

fn handle_zero_with_ref_becomes_binder(c: &Ctx) -> TResult {
    // After BC_INCREFS/BC_ACQUIRE 0 the client holds a ref to the manager's node and
    // can pass it; the manager receives its own node back as a binder object.
    let srv = spawn_std(c)?;
    let b = client(c)?;
    b.acquire_handle(0)?;
    let mut p = Payload::new();
    p.handle(0);
    let r = b.call(0, CODE_ECHO, &p)?;
    let o: flat_binder_object = proto::read_pod(&r.data);
    ensure_eq!(o.hdr.type_, BINDER_TYPE_BINDER, "type seen by the manager");
    ensure_eq!(
        (o.binder_or_handle, o.cookie),
        (0, 0),
        "ptr/cookie of the manager node"
    );
    srv.kill();
    Ok(())
}

/// A manager that accepts fds and replies with up to 64 bytes read from each fd it got
/// (fd objects directly, or FDA arrays inside a PTR parent).
fn spawn_fd_reader(c: &Ctx) -> Result<(harness::Proc, ()), String> {
    let ready = Pipe::new().map_err(|e| e.to_string())?;
    let dev = c.dev.clone();
    let p = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr_ext(FLAT_BINDER_FLAG_ACCEPTS_FDS, 0, 0)?;
        b.enter_looper()?;
        ready.send_u64(1)?;
        serve_loop(&b, |b, rec| {
            let mut fds: Vec<i32> = Vec::new();
            for &off in &rec.offsets {
                let hdr: u32 = rec.object(off);
                if hdr == BINDER_TYPE_FD {
                    let o: binder_fd_object = rec.object(off);
                    fds.push(o.pad_binder_or_fd as u32 as i32);
                } else if hdr == BINDER_TYPE_FDA {
                    fds.extend(fda_object_fds(b, rec, off)?);
                }
            }
            let mut p = Payload::new();
            p.u32(fds.len() as u32);
            for fd in fds {
                let mut buf = [0u8; 64];
                // SAFETY: reading into a local buffer from an fd we received.
                let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut _, 64) };
                // SAFETY: fcntl on our fd.
                let fl = unsafe { libc::fcntl(fd, libc::F_GETFD) };
                p.u32(fd as u32).u32(fl as u32).u32(n.max(0) as u32);
                p.bytes(&buf[..n.max(0) as usize]);
                p.align8();
                // SAFETY: our fd.
                unsafe { libc::close(fd) };
            }
            Ok(Step::Reply(p))
        })
    })
    .map_err(|e| e.to_string())?;
    ready.recv_u64()?;
    Ok((p, ()))
}

/// A pipe with `msg` written into it; returns (read end, write end).
fn pipe_with(msg: &[u8]) -> TResult<Pipe> {
    let p = Pipe::new()?;
    p.send(msg)?;
    Ok(p)
}

fn fd_passed(c: &Ctx) -> TResult {
    let (srv, _) = spawn_fd_reader(c)?;
    let b = client(c)?;
    let pp = pipe_with(b"through binder")?;
    let mut p = Payload::new();
    p.fd(pp.r, 0);
    let r = b.call(0, 1, &p)?;
    let n = u32::from_ne_bytes(r.data[0..4].try_into().unwrap());
    ensure_eq!(n, 1, "fds received");
    let fd = u32::from_ne_bytes(r.data[4..8].try_into().unwrap()) as i32;
    let len = u32::from_ne_bytes(r.data[12..16].try_into().unwrap()) as usize;
    ensure!(fd >= 0, "received fd {fd}");
    ensure_eq!(
        &r.data[16..16 + len],
        b"through binder",
        "data read through the passed fd"
    );
    srv.kill();
    Ok(())
}

fn fd_received_cloexec(c: &Ctx) -> TResult {
    let (srv, _) = spawn_fd_reader(c)?;
    let b = client(c)?;
    let pp = pipe_with(b"x")?;
    // Our end has O_CLOEXEC too; clear it so the flag seen remotely is the driver's.
    // SAFETY: fcntl on our fd.
    unsafe { libc::fcntl(pp.r, libc::F_SETFD, 0) };
    let mut p = Payload::new();
    p.fd(pp.r, 0);
    let r = b.call(0, 1, &p)?;
    let fl = u32::from_ne_bytes(r.data[8..12].try_into().unwrap()) as i32;
    ensure_eq!(
        fl & libc::FD_CLOEXEC,
        libc::FD_CLOEXEC,
        "FD_CLOEXEC on the received fd"
    );
    srv.kill();
    Ok(())
}

fn fd_not_accepted(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let pp = pipe_with(b"x")?;
    let mut p = Payload::new();
    p.fd(pp.r, 0);
    let mut w = WriteBuf::new();
    w.transaction(0, CODE_ECHO, 0, &p);
    expect_txn_error(&b, &w, BR_FAILED_REPLY, "fd to a node without ACCEPTS_FDS")?;
    expect_ext_err(
        &b,
        BR_FAILED_REPLY,
        -libc::EPERM,
        "fd to a node without ACCEPTS_FDS",
    )?;
    still_works(&b)?;
    srv.kill();
    Ok(())
}

/// A manager that replies with an fd object for a pipe holding "reply-fd"; it reports
/// what its own BC_REPLY produced through `res`.
fn spawn_fd_replier(c: &Ctx, res: &Pipe) -> Result<Server, String> {
    spawn_ctxmgr(c, |b, _rec| {
        let pp = Pipe::new().map_err(|e| e.to_string())?;
        pp.send(b"reply-fd").map_err(|e| e.to_string())?;
        let mut p = Payload::new();
        p.fd(pp.r, 0);
        let mut w = WriteBuf::new();
        w.reply(0, &p);
        b.write(&w).map_err(|e| e.to_string())?;
        let r = b.next()?;
        let _ = res.send_u64(r.code() as u64);
        Ok(Step::Nothing)
    })
}

fn fd_in_reply_needs_accept_fds(c: &Ctx) -> TResult {
    let res = Pipe::new()?;
    let srv = spawn_fd_replier(c, &res)?;
    let b = client(c)?;
    b.transact(0, 1, 0, &Payload::new())?;
    let v = b.collect_until(&[BR_REPLY, BR_FAILED_REPLY, BR_DEAD_REPLY])?;
    ensure!(
        v == vec![Return::TransactionComplete, Return::FailedReply],
        "caller without TF_ACCEPT_FDS: expected [BR_TRANSACTION_COMPLETE, BR_FAILED_REPLY], got {}",
        names(&v)
    );
    expect_ext_err(&b, BR_FAILED_REPLY, -libc::EPERM, "caller's extended error")?;
    let code = res.recv_u64()? as u32;
    ensure!(
        code == BR_TRANSACTION_COMPLETE,
        "replier: expected BR_TRANSACTION_COMPLETE for its failed reply, got {}",
        br_name(code).unwrap_or("?")
    );
    srv.kill();
    Ok(())
}

fn fd_in_reply_accepted(c: &Ctx) -> TResult {
    let res = Pipe::new()?;
    let srv = spawn_fd_replier(c, &res)?;
    let b = client(c)?;
    let r = b.call_flags_nofree(0, 1, TF_ACCEPT_FDS, &Payload::new())?;
    let o: binder_fd_object = r.object(r.offsets[0]);
    ensure_eq!(o.hdr.type_, BINDER_TYPE_FD, "object type");
    let fd = o.pad_binder_or_fd as u32 as i32;
    let mut buf = [0u8; 16];
    // SAFETY: reading from the fd we received.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut _, 16) };
    ensure_eq!(
        &buf[..n.max(0) as usize],
        b"reply-fd",
        "data through the fd from the reply"
    );
    ensure_eq!(
        res.recv_u64()? as u32,
        BR_TRANSACTION_COMPLETE,
        "replier's result"
    );
    b.free_buffer(r.td.buffer)?;
    srv.kill();
    Ok(())
}

/// A manager that replies with, for each PTR object: in-mapping flag, then its bytes.
fn spawn_ptr_reader(c: &Ctx) -> Result<Server, String> {
    spawn_ctxmgr(c, |b, rec| {
        let mut p = Payload::new();
        for &off in &rec.offsets {
            let hdr: u32 = rec.object(off);
            if hdr != BINDER_TYPE_PTR {
                continue;
            }
            let o: binder_buffer_object = rec.object(off);
            let inside = o.buffer >= rec.td.buffer
                && o.buffer + o.length <= b.map_addr() + b.map_size() as u64;
            p.u64(inside as u64).u64(o.buffer).u64(o.length);
            p.bytes(&b.read_mapped(o.buffer, o.length as usize)?);
            p.align8();
        }
        Ok(Step::Reply(p))
    })
}

fn ptr_buffer_copied(c: &Ctx) -> TResult {
    let srv = spawn_ptr_reader(c)?;
    let b = client(c)?;
    let blob: Vec<u8> = (0..24u8).collect();
    let mut p = Payload::new();
    p.ptr(blob.as_ptr() as u64, 24, None);
    let mut w = WriteBuf::new();
    w.transaction_sg(false, 0, 1, 0, &p, 24);
    let (_, last) = b.call_raw(&w)?;
    let td = match last {
        Return::Reply(td) => td,
        o => fail!(
            "BC_TRANSACTION_SG with a PTR: expected BR_REPLY, got {}",
            o.name()
        ),
    };
    let r = b.received(&td)?;
    b.free_buffer(td.buffer)?;
    ensure_eq!(
        u64::from_ne_bytes(r.data[0..8].try_into().unwrap()),
        1,
        "PTR buffer inside the receiver's transaction buffer"
    );
    ensure_eq!(
        u64::from_ne_bytes(r.data[16..24].try_into().unwrap()),
        24,
        "length"
    );
    ensure_eq!(r.data[24..48].to_vec(), blob, "copied bytes");
    srv.kill();
    Ok(())
}

fn ptr_parent_fixup(c: &Ctx) -> TResult {
    let srv = spawn_ptr_reader(c)?;
    let b = client(c)?;
    let child: Vec<u8> = b"child-buffer-16b".to_vec();
    // parent: { u64 pointer to child, u64 tag }
    let mut parent = Vec::new();
    parent.extend_from_slice(&(child.as_ptr() as u64).to_ne_bytes());
    parent.extend_from_slice(&0x7a67u64.to_ne_bytes());
    let mut p = Payload::new();
    p.u64(0); // a parent at data offset 0 is rejected by the driver
    p.ptr(parent.as_ptr() as u64, 16, None);
    p.ptr(child.as_ptr() as u64, 16, Some((0, 0)));
    let mut w = WriteBuf::new();
    w.transaction_sg(false, 0, 1, 0, &p, 32);
    let (_, last) = b.call_raw(&w)?;
    let td = match last {
        Return::Reply(td) => td,
        o => fail!("parent/child PTRs: expected BR_REPLY, got {}", o.name()),
    };
    let r = b.received(&td)?;
    b.free_buffer(td.buffer)?;
    // Reply: [in, addr, len, 16 bytes parent] at 0, [in, addr, len, 16 bytes child] at 40
    let u = |o: usize| u64::from_ne_bytes(r.data[o..o + 8].try_into().unwrap());
    let child_addr = u(48);
    ensure_eq!(
        u(24),
        child_addr,
        "pointer in the parent fixed up to the child's new address"
    );
    ensure_eq!(u(32), 0x7a67, "rest of the parent");
    ensure_eq!(r.data[64..80].to_vec(), child, "child bytes");
    srv.kill();
    Ok(())
}

fn fda_translated(c: &Ctx) -> TResult {
    let (srv, _) = spawn_fd_reader(c)?;
    let b = client(c)?;
    let p1 = pipe_with(b"first")?;
    let p2 = pipe_with(b"second")?;
    let fds: Vec<u32> = vec![p1.r as u32, p2.r as u32];
    let mut p = Payload::new();
    p.u64(0);
    p.ptr(fds.as_ptr() as u64, 8, None);
    p.fda(2, 0, 0);
    let mut w = WriteBuf::new();
    w.transaction_sg(false, 0, 1, 0, &p, 8);
    let (_, last) = b.call_raw(&w)?;
    let td = match last {
        Return::Reply(td) => td,
        o => fail!("FDA transaction: expected BR_REPLY, got {}", o.name()),
    };
    let r = b.received(&td)?;
    b.free_buffer(td.buffer)?;
    let u = |o: usize| u32::from_ne_bytes(r.data[o..o + 4].try_into().unwrap());
    ensure_eq!(u(0), 2, "fds received");
    // entry: fd, flags, n, bytes (aligned to 8 within the payload)
    let n1 = u(12) as usize;
    ensure_eq!(&r.data[16..16 + n1], b"first", "first fd's data");
    let mut off = 16 + n1;
    off = (off + 7) & !7;
    let n2 = u(off + 8) as usize;
    ensure_eq!(
        &r.data[off + 12..off + 12 + n2],
        b"second",
        "second fd's data"
    );
    srv.kill();
    Ok(())
}

fn fda_zero_fds(c: &Ctx) -> TResult {
    let (srv, _) = spawn_fd_reader(c)?;
    let b = client(c)?;
    let fds = [0u32; 2];
    let mut p = Payload::new();
    p.u64(0);
    p.ptr(fds.as_ptr() as u64, 8, None);
    p.fda(0, 0, 0);
    let mut w = WriteBuf::new();
    w.transaction_sg(false, 0, 1, 0, &p, 8);
    let (_, last) = b.call_raw(&w)?;
    ensure!(
        last.code() == BR_REPLY,
        "FDA with 0 fds: expected BR_REPLY, got {}",
        last.name()
    );
    b.free_buffer(last.txn().unwrap().buffer)?;
    srv.kill();
    Ok(())
}

fn lsm_active() -> bool {
    std::fs::read_to_string("/sys/kernel/security/lsm")
        .map(|s| !s.trim().is_empty() && s.trim() != "capability")
        .unwrap_or(false)
}

/// The security context of process `pid` as /proc shows it (`attr/current`), without
/// the trailing newline or NUL, if there is one.
fn proc_secctx(pid: i32) -> Option<Vec<u8>> {
    let mut ctx = std::fs::read(format!("/proc/{pid}/attr/current")).ok()?;
    while matches!(ctx.last(), Some(b'\n' | 0)) {
        ctx.pop();
    }
    (!ctx.is_empty()).then_some(ctx)
}

fn secctx_node(c: &Ctx) -> TResult {
    // A node flagged FLAT_BINDER_FLAG_TXN_SECURITY_CTX asks for the sender's security
    // context. Without an LSM providing one the C driver fails the transaction with
    // -EOPNOTSUPP; with one it delivers BR_TRANSACTION_SEC_CTX, whose secctx points
    // into the buffer at the sender's context (the harness's 6.12 kernels have Smack:
    // "_", the same as /proc/<sender>/attr/current).
    let got = Pipe::new()?;
    let ready = Pipe::new()?;
    let dev = c.dev.clone();
    let srv = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr_ext(FLAT_BINDER_FLAG_TXN_SECURITY_CTX, 0, 0)?;
        b.enter_looper()?;
        ready.send_u64(1)?;
        loop {
            let r = b.next_within(30_000)?;
            if let Return::TransactionSecCtx(td, secctx) = r {
                let inside = secctx >= td.buffer && secctx < b.map_addr() + b.map_size() as u64;
                // 1: inside the buffer and the sender's context; 3: inside but another
                // text; 0: outside the buffer.
                let verdict = match (inside, proc_secctx(td.sender_pid)) {
                    (false, _) => 0,
                    (true, Some(want)) => {
                        let have = b.read_mapped(secctx, want.len())?;
                        if have == want {
                            1
                        } else {
                            3
                        }
                    }
                    (true, None) => 3,
                };
                got.send_u64(verdict)?;
                b.reply_and_free(td.buffer, &Payload::new())?;
            } else if let Return::Transaction(td) = r {
                got.send_u64(2)?;
                b.reply_and_free(td.buffer, &Payload::new())?;
            }
        }
    })?;
    ready.recv_u64()?;
    let b = client(c)?;
    let mut w = WriteBuf::new();
    w.transaction(0, 1, 0, &Payload::from_bytes(b"ctx"));
    let (pre, last) = b.call_raw(&w)?;
    if lsm_active() {
        ensure!(
            last.code() == BR_REPLY,
            "with an LSM: expected BR_REPLY, got {} {}",
            names(&pre),
            last.name()
        );
        ensure_eq!(
            got.recv_u64()?,
            1,
            "BR_TRANSACTION_SEC_CTX with secctx inside the buffer, pointing at the sender's \
             context (1; 0 = outside the buffer, 2 = plain BR_TRANSACTION, 3 = another text)"
        );
        b.free_buffer(last.txn().unwrap().buffer)?;
    } else {
        ensure!(
            last == Return::FailedReply,
            "without an LSM: expected BR_FAILED_REPLY, got {} {}",
            names(&pre),
            last.name()
        );
        expect_ext_err(
            &b,
            BR_FAILED_REPLY,
            -libc::EOPNOTSUPP,
            "secctx without an LSM",
        )?;
    }
    srv.kill();
    Ok(())
}

fn object_flags_preserved(c: &Ctx) -> TResult {
    // flat_binder_object.flags travel unchanged through the translation.
    let srv = spawn_ctxmgr(c, |_, _| {
        let mut p = Payload::new();
        p.binder(0x9900, 0x9901, FLAT_BINDER_FLAG_ACCEPTS_FDS | 0x7f);
        Ok(Step::Reply(p))
    })?;
    let b = client(c)?;
    let rec = b.call_nofree(0, 1, &Payload::new())?;
    let o = obj_at(&rec, 0)?;
    ensure_eq!(o.hdr.type_, BINDER_TYPE_HANDLE, "type");
    ensure_eq!(o.flags, FLAT_BINDER_FLAG_ACCEPTS_FDS | 0x7f, "flags");
    b.free_buffer(rec.td.buffer)?;
    srv.kill();
    Ok(())
}

fn fd_in_oneway(c: &Ctx) -> TResult {
    let got = Pipe::new()?;
    let ready = Pipe::new()?;
    let dev = c.dev.clone();
    let srv = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr_ext(FLAT_BINDER_FLAG_ACCEPTS_FDS, 0, 0)?;
        b.enter_looper()?;
        ready.send_u64(1)?;
        let t = b.recv_txn()?;
        ensure_eq!(t.td.flags & TF_ONE_WAY, TF_ONE_WAY, "one-way flag");
        let o: binder_fd_object = t.object(t.offsets[0]);
        let mut buf = [0u8; 16];
        // SAFETY: reading from the fd we received.
        let n = unsafe { libc::read(o.pad_binder_or_fd as i32, buf.as_mut_ptr() as *mut _, 16) };
        got.send(&buf[..n.max(0) as usize])?;
        b.free_buffer(t.td.buffer)?;
        Ok(())
    })?;
    ready.recv_u64()?;
    let b = client(c)?;
    let pp = pipe_with(b"oneway-fd")?;
    let mut p = Payload::new();
    p.fd(pp.r, 0);
    b.transact(0, 1, TF_ONE_WAY, &p)?;
    b.expect(BR_TRANSACTION_COMPLETE)?;
    let v = got.recv_exact(9, Duration::from_secs(5))?;
    ensure_eq!(v, b"oneway-fd".to_vec(), "data through an fd sent one-way");
    srv.join()
}

fn count_fds() -> usize {
    std::fs::read_dir("/proc/self/fd")
        .map(|d| d.count())
        .unwrap_or(0)
}

fn failed_fd_transfer_leaks_no_fd(c: &Ctx) -> TResult {
    // A transaction carrying a good fd followed by a bad object fails as a whole, and
    // the receiver gets no fd installed.
    let res = Pipe::new()?;
    let srv = spawn_ctxmgr_flags(
        c,
        Some(FLAT_BINDER_FLAG_ACCEPTS_FDS),
        |_| Ok(()),
        |b, rec| {
            let _ = res.send_u64(count_fds() as u64);
            std_handler(b, rec)
        },
    )?;
    let b = client(c)?;
    b.call(0, CODE_ECHO, &Payload::new())?;
    let before = res.recv_u64()?;
    let pp = pipe_with(b"x")?;
    let mut p = Payload::new();
    p.fd(pp.r, 0);
    p.handle(77);
    let mut w = WriteBuf::new();
    w.transaction(0, CODE_ECHO, 0, &p);
    expect_txn_error(&b, &w, BR_FAILED_REPLY, "fd + bad handle")?;
    b.call(0, CODE_ECHO, &Payload::new())?;
    let after = res.recv_u64()?;
    ensure_eq!(after, before, "fds open in the receiver");
    srv.kill();
    Ok(())
}

/// A POSIX lock request on `fd` for the whole file: `cmd` F_SETLK / F_GETLK, `ty` F_WRLCK /
/// F_UNLCK. Returns the `flock` (F_GETLK fills it in) or the errno.
fn posix_lock(fd: i32, cmd: i32, ty: i32) -> std::io::Result<libc::flock> {
    // SAFETY: an all-zero flock is valid (start 0, len 0: the whole file).
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = ty as _;
    fl.l_whence = libc::SEEK_SET as _;
    // SAFETY: fcntl with a valid flock.
    if unsafe { libc::fcntl(fd, cmd, &mut fl) } < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fl)
}

/// The lines of /proc/locks for a POSIX lock held by `pid` on inode `ino`.
fn proc_locks(pid: i32, ino: u64) -> TResult<Vec<String>> {
    let s = std::fs::read_to_string("/proc/locks").map_err(|e| format!("/proc/locks: {e}"))?;
    let pid = pid.to_string();
    let ino = format!(":{ino}");
    Ok(s.lines()
        .filter(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            // "N: [->] POSIX ADVISORY WRITE pid maj:min:ino start end"
            match t.iter().position(|x| *x == "POSIX") {
                Some(i) => {
                    t.get(i + 3) == Some(&pid.as_str())
                        && t.get(i + 4).is_some_and(|d| d.ends_with(&ino))
                }
                None => false,
            }
        })
        .map(str::to_string)
        .collect())
}

/// A regular file on the tmpfs of `std::env::temp_dir()`, already unlinked; returns (fd, inode).
fn tmpfs_file() -> TResult<(i32, u64)> {
    let path = std::env::temp_dir().join(format!("bct-lock-{}", harness::getpid()));
    let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
    // SAFETY: open/unlink/fstat/write with valid arguments.
    unsafe {
        let fd = libc::open(
            c.as_ptr(),
            libc::O_RDWR | libc::O_CREAT | libc::O_EXCL | libc::O_CLOEXEC,
            0o600,
        );
        if fd < 0 {
            fail!(
                "create {}: {}",
                path.display(),
                std::io::Error::last_os_error()
            );
        }
        libc::unlink(c.as_ptr());
        let _ = libc::write(fd, b"locked".as_ptr() as *const _, 6);
        let mut st: libc::stat = std::mem::zeroed();
        if libc::fstat(fd, &mut st) < 0 {
            fail!("fstat: {}", std::io::Error::last_os_error());
        }
        Ok((fd, st.st_ino as u64))
    }
}

/// The fds of the received fd array object at data offset `off` of `rec`, read from its
/// parent buffer in the mapping.
fn fda_object_fds(b: &Binder, rec: &Received, off: u64) -> Result<Vec<i32>, String> {
    let o: binder_fd_array_object = rec.object(off);
    let parent_off = *rec
        .offsets
        .get(o.parent as usize)
        .ok_or_else(|| format!("fd array parent {} out of range", o.parent))?;
    let parent: binder_buffer_object = rec.object(parent_off);
    let bytes = b.read_mapped(parent.buffer + o.parent_offset, 4 * o.num_fds as usize)?;
    Ok(bytes
        .chunks(4)
        .map(|x| i32::from_ne_bytes(x.try_into().unwrap()))
        .collect())
}

/// Review-36 4.3: BC_FREE_BUFFER closes the fds of a buffer's fd arrays, and that close is
/// a real close (C `binder_deferred_fd_close`: `file_close_fd` + `filp_close`, which
/// removes the closer's POSIX locks through `locks_remove_posix`). The receiver takes a write
/// lock on a tmpfs file it got in an fd array and frees the buffer: its fd is closed, the
/// lock is gone from /proc/locks, and another process (the sender, which still has the same
/// file open) can take a conflicting lock.
fn fda_close_drops_posix_lock(c: &Ctx) -> TResult {
    let (file, ino) = tmpfs_file()?;
    let rep = Pipe::new()?;
    let go = Pipe::new()?;
    let dev = c.dev.clone();
    let srv = fork_proc(|| {
        // The fd array's fd is to be the receiver's only reference to the file (as in the
        // review's scenario): not the copy that fork gave it.
        // SAFETY: closing our copy of the sender's fd.
        unsafe { libc::close(file) };
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr_ext(FLAT_BINDER_FLAG_ACCEPTS_FDS, 0, 0)?;
        b.enter_looper()?;
        rep.send_u64(1)?;
        let t = b.recv_txn()?;
        let fda = t
            .offsets
            .iter()
            .copied()
            .find(|&off| t.object::<u32>(off) == BINDER_TYPE_FDA)
            .ok_or("no BINDER_TYPE_FDA in the transaction")?;
        let fds = fda_object_fds(&b, &t, fda)?;
        ensure_eq!(fds.len(), 1, "fds in the received fd array");
        let fd = fds[0];
        let r = posix_lock(fd, libc::F_SETLK, libc::F_WRLCK);
        rep.send_u64(fd as u32 as u64)?;
        rep.send_u64(r.err().and_then(|e| e.raw_os_error()).unwrap_or(0) as u64)?;
        go.recv_u64()?;
        b.free_buffer(t.td.buffer)?;
        // SAFETY: fcntl on an fd number; EBADF once it is closed.
        let open = unsafe { libc::fcntl(fd, libc::F_GETFD) } >= 0
            || std::path::Path::new(&format!("/proc/self/fd/{fd}")).exists();
        rep.send_u64(open as u64)?;
        // Stay alive (an exit would drop the lock anyway) until the checks are done.
        go.recv_u64_within(Duration::from_secs(30))?;
        Ok(())
    })?;
    rep.recv_u64()?;
    let b = client(c)?;
    let fds = [file as u32, 0];
    let mut p = Payload::new();
    p.u64(0); // a parent at data offset 0 is rejected by C
    p.ptr(fds.as_ptr() as u64, 4, None);
    p.fda(1, 0, 0);
    b.write(WriteBuf::new().transaction_sg(false, 0, 1, TF_ONE_WAY, &p, 8))?;
    b.expect(BR_TRANSACTION_COMPLETE)?;
    let fd = rep.recv_u64()? as u32 as i32;
    let err = rep.recv_u64()? as i32;
    ensure!(
        err == 0,
        "receiver's F_SETLK write lock on the received fd {fd}: {}",
        errno_name(err)
    );
    let pid = srv.pid;
    // The lock is there and conflicts with us: the test can see it.
    let held = proc_locks(pid, ino)?;
    ensure!(
        !held.is_empty(),
        "/proc/locks has no POSIX lock of the receiver {pid} on inode {ino}"
    );
    let fl = expect_ok(
        posix_lock(file, libc::F_GETLK, libc::F_WRLCK),
        "F_GETLK from the sender",
    )?;
    ensure!(
        fl.l_type as i32 == libc::F_WRLCK && fl.l_pid == pid,
        "F_GETLK from the sender: expected the receiver's ({pid}) write lock, got type {} pid {}",
        fl.l_type,
        fl.l_pid
    );
    go.send_u64(1)?;
    let open = rep.recv_u64()?;
    ensure!(
        open == 0,
        "received fd {fd} still open in the receiver after BC_FREE_BUFFER"
    );
    let left = proc_locks(pid, ino)?;
    ensure!(
        left.is_empty(),
        "the receiver's POSIX lock survived BC_FREE_BUFFER's close of its fd-array fd {fd} \
         (a close without filp_close): /proc/locks {left:?}"
    );
    let r = posix_lock(file, libc::F_SETLK, libc::F_WRLCK);
    ensure!(
        r.is_ok(),
        "conflicting F_SETLK from another process after the receiver's fd was closed: {}",
        res_name(&r)
    );
    expect_ok(
        posix_lock(file, libc::F_SETLK, libc::F_UNLCK),
        "F_SETLK F_UNLCK",
    )?;
    go.send_u64(2)?;
    srv.join()?;
    // SAFETY: our fd.
    unsafe { libc::close(file) };
    Ok(())
}

/// What the sender puts in `binder` and `cookie` of its flat_binder_objects in the tests of
/// review-36 4.4: no translated object carries it, so the receiver must never see it.
const SENTINEL: u64 = 0x5e47_1e10_c0de_b1d5;
/// Plain data before the objects (copied by every driver).
const MARKER: u64 = 0x3a5c_0ffe_e15d_a7a0;

/// `len` bytes at `addr` of this process, through process_vm_readv: a page of the binder
/// mapping that the driver never installed reads as EFAULT (None), where a load would
/// take SIGBUS.
fn read_own(addr: u64, len: usize) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; len];
    let local = libc::iovec {
        iov_base: buf.as_mut_ptr() as *mut _,
        iov_len: len,
    };
    let remote = libc::iovec {
        iov_base: addr as usize as *mut _,
        iov_len: len,
    };
    // SAFETY: reads our own address space into `buf`; the kernel checks `addr`.
    let n = unsafe { libc::process_vm_readv(libc::getpid(), &local, 1, &remote, 1, 0) };
    (n == len as isize).then_some(buf)
}

/// Every page of `b`'s mapping that can be read, scanned for the aligned u64s `needle` and
/// `marker`: (pages read, offsets of `needle` in the mapping, whether `marker` was seen).
fn scan_mapping(b: &Binder, needle: u64, marker: u64) -> (u64, Vec<u64>, bool) {
    let ps = page_size();
    let (mut pages, mut hits, mut seen) = (0, Vec::new(), false);
    for off in (0..b.map_size()).step_by(ps) {
        let Some(page) = read_own(b.map_addr() + off as u64, ps) else {
            continue;
        };
        pages += 1;
        for (i, w) in page.chunks_exact(8).enumerate() {
            let v = u64::from_ne_bytes(w.try_into().unwrap());
            if v == needle {
                hits.push((off + i * 8) as u64);
            }
            seen |= v == marker;
        }
    }
    (pages, hits, seen)
}

const CODE_PIN: u32 = 0x51;
const CODE_OBJS: u32 = 0x52;
const CODE_DONE: u32 = 0x53;
/// Objects per transaction in `untranslated_object_never_visible`: the later ones wait
/// longest for their translation.
const SCAN_OBJECTS: usize = 8;
/// At most this many transactions (the run is also bounded in time).
const SCAN_MAX_TXNS: u64 = 5000;

/// Review-36 4.4, while it happens: C copies only the bytes between objects into the
/// receiver's buffer and writes each object once translated (`binder_transaction`, "Copy the
/// source user buffer up to the next object", 6d98eb95b450), so the receiver, whose mapping
/// shows the buffer as it is filled, never sees a sender's raw flat_binder_object. A thread of
/// the receiver scans the page its buffers land on (pinned by a held first buffer) in a tight
/// loop while the sender sends transactions of BINDER_TYPE_BINDER objects whose `binder` and
/// `cookie` are SENTINEL.
fn untranslated_object_never_visible(c: &Ctx) -> TResult {
    use std::sync::atomic::{AtomicBool, Ordering};
    let rep = Pipe::new()?;
    let dev = c.dev.clone();
    let srv = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr()?;
        b.enter_looper()?;
        rep.send_u64(1)?;
        // Held until the end: the page under it stays installed, and the other (freed)
        // buffers land right after it.
        let pin = b.recv_txn()?;
        ensure_eq!(pin.td.code, CODE_PIN, "first transaction");
        b.reply(0, &Payload::new())?;
        b.expect(BR_TRANSACTION_COMPLETE)?;
        let ps = page_size();
        let page = (pin.td.buffer as usize) & !(ps - 1);
        let stop = AtomicBool::new(false);
        let (scanned, served) = std::thread::scope(|s| {
            let scanner = s.spawn(|| {
                let (mut scans, mut hit, mut hits) = (0u64, u64::MAX, 0u64);
                while !stop.load(Ordering::Relaxed) {
                    let mut seen = false;
                    for i in 0..ps / 8 {
                        // SAFETY: the page of the held buffer: mapped, installed and
                        // readable until the process exits.
                        let v = unsafe { std::ptr::read_volatile((page + i * 8) as *const u64) };
                        if v == SENTINEL {
                            seen = true;
                            if hit == u64::MAX {
                                hit = (i * 8) as u64;
                            }
                        }
                    }
                    scans += 1;
                    hits += seen as u64;
                }
                (scans, hit, hits)
            });
            let served = (|| -> TResult<u64> {
                let mut n = 0u64;
                let mut held = false;
                loop {
                    let td = match b.next_within(10_000)? {
                        Return::Transaction(td) => td,
                        _ => continue,
                    };
                    if td.code == CODE_DONE {
                        b.reply_and_free(td.buffer, &Payload::new())?;
                        return Ok(n);
                    }
                    if !held {
                        // Keep the sender's node (and our ref) for the whole run.
                        let rec = b.received(&td)?;
                        let o: flat_binder_object = rec.object(rec.offsets[0]);
                        ensure_eq!(o.hdr.type_, BINDER_TYPE_HANDLE, "translated type");
                        b.acquire_handle(o.handle())?;
                        held = true;
                    }
                    n += 1;
                    b.reply_and_free(td.buffer, &Payload::new())?;
                }
            })();
            stop.store(true, Ordering::Relaxed);
            (scanner.join().unwrap(), served)
        });
        let served = served?;
        rep.send_u64(scanned.0)?;
        rep.send_u64(scanned.1)?;
        rep.send_u64(scanned.2)?;
        rep.send_u64(served)?;
        Ok(())
    })?;
    rep.recv_u64()?;
    let b = client(c)?;
    b.call(0, CODE_PIN, &Payload::new())?;
    let mut p = Payload::new();
    p.u64(MARKER);
    for _ in 0..SCAN_OBJECTS {
        p.binder(SENTINEL, SENTINEL, 0);
    }
    // A quarter of the test's time; a few thousand transactions under TCG.
    let budget = c.timeout / 4;
    let t0 = std::time::Instant::now();
    let mut n = 0u64;
    while n < SCAN_MAX_TXNS && t0.elapsed() < budget {
        b.call(0, CODE_OBJS, &p)?;
        n += 1;
    }
    let took = t0.elapsed();
    b.call(0, CODE_DONE, &Payload::new())?;
    let scans = rep.recv_u64()?;
    let hit = rep.recv_u64()?;
    let hits = rep.recv_u64()?;
    let served = rep.recv_u64()?;
    srv.join()?;
    note(&format!(
        "{n} transactions of {SCAN_OBJECTS} objects in {} ms; the receiver scanned its page \
         {scans} times meanwhile",
        took.as_millis()
    ));
    ensure_eq!(served, n, "transactions served");
    ensure!(
        hit == u64::MAX,
        "the receiver saw the sender's untranslated flat_binder_object (binder/cookie \
         {SENTINEL:#x}) at offset {hit} of the page its buffers land on, in {hits} of \
         {scans} scans during {n} transactions"
    );
    // Without scans concurrent with the traffic the test would prove nothing.
    ensure!(
        scans >= n,
        "the receiver's scanner ran only {scans} scans during {n} transactions"
    );
    Ok(())
}

/// Review-36 4.4, after a failure: C stops copying at the object that fails translation,
/// so the objects after it never reach the receiver's buffer. The second object of a
/// transaction carries SENTINEL, the first is a handle the sender does not hold; after the
/// BR_FAILED_REPLY the receiver reads every installed page of its mapping.
fn failed_translation_leaves_no_object(c: &Ctx) -> TResult {
    let rep = Pipe::new()?;
    let go = Pipe::new()?;
    let dev = c.dev.clone();
    let srv = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr()?;
        b.enter_looper()?;
        rep.send_u64(1)?;
        go.recv_u64()?;
        let (pages, hits, marker) = scan_mapping(&b, SENTINEL, MARKER);
        rep.send_u64(pages)?;
        rep.send_u64(hits.first().copied().unwrap_or(u64::MAX))?;
        rep.send_u64(marker as u64)?;
        Ok(())
    })?;
    rep.recv_u64()?;
    let b = client(c)?;
    let mut p = Payload::new();
    p.u64(MARKER);
    p.handle(77);
    p.binder(SENTINEL, SENTINEL, 0);
    let mut w = WriteBuf::new();
    w.transaction(0, 1, 0, &p);
    expect_txn_error(
        &b,
        &w,
        BR_FAILED_REPLY,
        "handle 77 (not held) followed by a binder object",
    )?;
    go.send_u64(1)?;
    let pages = rep.recv_u64()?;
    let hit = rep.recv_u64()?;
    let marker = rep.recv_u64()? != 0;
    srv.join()?;
    note(&format!(
        "{pages} installed pages of the receiver's mapping read; the data before the failing \
         object {} in them",
        if marker { "is" } else { "is not" }
    ));
    ensure!(
        hit == u64::MAX,
        "after the failed transaction the receiver's mapping holds the untranslated object \
         after the failing one (binder/cookie {SENTINEL:#x} at mapping offset {hit})"
    );
    Ok(())
}
