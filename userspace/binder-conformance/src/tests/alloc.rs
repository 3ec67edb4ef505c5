//! alloc: buffer allocation in the receiver's mapping: sizes, layout, exhaustion and
//! reuse, TF_CLEAR_BUF.

use crate::common::*;
use crate::Ctx;
use binder_uapi::harness::{fork_proc, Pipe};
use binder_uapi::*;

crate::tests!(
    "alloc",
    odd_sizes_roundtrip,
    offsets_follow_aligned_data,
    held_buffers_distinct,
    unfreed_buffers_exhaust_space,
    freed_space_reused,
    clear_buf_zeroes_on_free,
    zero_size_buffers_distinct,
);

fn odd_sizes_roundtrip(c: &Ctx) -> TResult {
    let srv = spawn_std(c)?;
    let b = client(c)?;
    for n in [
        1usize, 2, 3, 5, 7, 8, 9, 15, 17, 255, 4095, 4097, 8191, 12289,
    ] {
        let p = pattern(n, n as u8);
        let r = b.call(0, CODE_ECHO, &p)?;
        ensure!(r.data == p.data, "{n}-byte echo differs");
        ensure_eq!(r.td.data_size, n as u64, "data_size");
    }
    srv.kill();
    Ok(())
}

fn offsets_follow_aligned_data(c: &Ctx) -> TResult {
    // The offsets array starts at the data size rounded up to 8.
    let got = Pipe::new()?;
    let srv = spawn_ctxmgr(c, |_, rec| {
        let _ = got.send_u64(rec.td.offsets - rec.td.buffer);
        let _ = got.send_u64(rec.offsets.first().copied().unwrap_or(u64::MAX));
        Ok(Step::Reply(Payload::new()))
    })?;
    let b = client(c)?;
    for pad in [0usize, 1, 4, 7] {
        let mut p = Payload::new();
        p.binder(0x100, 0x101, 0);
        p.bytes(&vec![0xee; pad]);
        b.call(0, 1, &p)?;
        let want = ((24 + pad + 7) & !7) as u64;
        ensure_eq!(
            got.recv_u64()?,
            want,
            &format!("offsets - buffer for data_size {}", 24 + pad)
        );
        ensure_eq!(got.recv_u64()?, 0, "offset of the object");
    }
    srv.kill();
    Ok(())
}

/// A manager that never frees what it receives; replies with the buffer address.
fn spawn_hoarder(c: &Ctx, release: Option<&Pipe>) -> Result<harness::Proc, String> {
    let ready = Pipe::new().map_err(|e| e.to_string())?;
    let dev = c.dev.clone();
    let p = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr()?;
        b.enter_looper()?;
        ready.send_u64(1)?;
        let mut held = Vec::new();
        loop {
            match b.next_within(60_000)? {
                Return::Transaction(td) => {
                    if td.code == 99 {
                        // Free everything held so far, then answer.
                        for p in held.drain(..) {
                            b.free_buffer(p)?;
                        }
                        if let Some(r) = release {
                            r.send_u64(1)?;
                        }
                    } else {
                        held.push(td.buffer);
                    }
                    let mut w = WriteBuf::new();
                    let mut p = Payload::new();
                    p.u64(td.buffer);
                    if td.code == 99 {
                        w.free_buffer(td.buffer);
                    }
                    w.reply(0, &p);
                    b.write(&w)?;
                }
                _ => {}
            }
        }
    })
    .map_err(|e| e.to_string())?;
    ready.recv_u64()?;
    Ok(p)
}

fn addr_of(r: &Received) -> u64 {
    u64::from_ne_bytes(r.data[0..8].try_into().unwrap())
}

fn held_buffers_distinct(c: &Ctx) -> TResult {
    let srv = spawn_hoarder(c, None)?;
    let b = client(c)?;
    let mut addrs = Vec::new();
    for i in 0..8 {
        addrs.push(addr_of(&b.call(0, 1, &pattern(1000, i))?));
    }
    let mut sorted = addrs.clone();
    sorted.sort();
    sorted.dedup();
    ensure_eq!(
        sorted.len(),
        addrs.len(),
        "distinct addresses for held buffers"
    );
    for w in sorted.windows(2) {
        ensure!(
            w[1] - w[0] >= 1000,
            "buffers overlap: {:#x} and {:#x}",
            w[0],
            w[1]
        );
    }
    srv.kill();
    Ok(())
}

fn unfreed_buffers_exhaust_space(c: &Ctx) -> TResult {
    let srv = spawn_hoarder(c, None)?;
    let b = client(c)?;
    let p = pattern(64 * 1024, 5);
    for i in 0..16 {
        b.call(0, 1, &p)
            .map_err(|e| format!("64 KiB call {i}: {e}"))?;
    }
    let mut w = WriteBuf::new();
    w.transaction(0, 1, 0, &p);
    expect_txn_error(
        &b,
        &w,
        BR_FAILED_REPLY,
        "17th 64 KiB call into a full 1 MiB mapping",
    )?;
    expect_ext_err(&b, BR_FAILED_REPLY, -libc::ENOSPC, "mapping full")?;
    srv.kill();
    Ok(())
}

fn freed_space_reused(c: &Ctx) -> TResult {
    let srv = spawn_hoarder(c, None)?;
    let b = client(c)?;
    let p = pattern(64 * 1024, 6);
    for _ in 0..15 {
        b.call(0, 1, &p)?;
    }
    // Code 99 frees everything the server held: the space is available again.
    b.call(0, 99, &Payload::new())?;
    for i in 0..15 {
        b.call(0, 1, &p)
            .map_err(|e| format!("call {i} after freeing: {e}"))?;
    }
    srv.kill();
    Ok(())
}

fn clear_buf_zeroes_on_free(c: &Ctx) -> TResult {
    // With TF_CLEAR_BUF the driver zeroes the buffer when it is freed; the pages stay
    // mapped, so the receiver can look.
    let res = Pipe::new()?;
    let srv = spawn_ctxmgr(c, |b, rec| {
        if rec.td.flags & TF_CLEAR_BUF != 0 {
            b.free_buffer(rec.td.buffer).map_err(|e| e.to_string())?;
            let after = b.read_mapped(rec.td.buffer, rec.data.len())?;
            let _ = res.send_u64(after.iter().all(|x| *x == 0) as u64);
        }
        Ok(Step::Reply(Payload::new()))
    })?;
    let b = client(c)?;
    let mut w = WriteBuf::new();
    w.transaction(0, 1, TF_CLEAR_BUF, &Payload::from_bytes(&[0xab; 256]));
    let (_, last) = b.call_raw(&w)?;
    ensure!(
        last.code() == BR_REPLY,
        "TF_CLEAR_BUF call: got {}",
        last.name()
    );
    b.free_buffer(last.txn().unwrap().buffer)?;
    ensure_eq!(res.recv_u64()?, 1, "buffer zeroed after BC_FREE_BUFFER");
    srv.kill();
    Ok(())
}

fn zero_size_buffers_distinct(c: &Ctx) -> TResult {
    let srv = spawn_hoarder(c, None)?;
    let b = client(c)?;
    let a1 = addr_of(&b.call(0, 1, &Payload::new())?);
    let a2 = addr_of(&b.call(0, 1, &Payload::new())?);
    ensure!(a1 != a2, "two held empty buffers share the address {a1:#x}");
    srv.kill();
    Ok(())
}
