//! spam: BINDER_ENABLE_ONEWAY_SPAM_DETECTION and BR_ONEWAY_SPAM_SUSPECT, the async
//! space limit (half the mapping).

use crate::common::*;
use crate::Ctx;
use binder_uapi::harness::{fork_proc, Pipe};
use binder_uapi::*;

crate::tests!(
    "spam",
    suspect_reported_once,
    not_reported_when_disabled,
    not_reported_after_disable,
    async_space_exhausted,
    sync_still_possible_when_async_full,
);

/// A manager with a 1 MiB mapping that never reads: one-ways pile up in its buffer.
fn spawn_sink(c: &Ctx) -> Result<harness::Proc, String> {
    let ready = Pipe::new().map_err(|e| e.to_string())?;
    let dev = c.dev.clone();
    let p = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr()?;
        ready.send_u64(1)?;
        harness::sleep_ms(120_000);
        Ok(())
    })
    .map_err(|e| e.to_string())?;
    ready.recv_u64()?;
    Ok(p)
}

/// Send `n` one-ways of 32 KiB and return the BR_* each produced.
fn flood(b: &Binder, n: usize) -> TResult<Vec<u32>> {
    let p = pattern(32 * 1024, 1);
    let mut out = Vec::new();
    for _ in 0..n {
        b.transact(0, 1, TF_ONE_WAY, &p)?;
        out.push(b.next()?.code());
    }
    Ok(out)
}

fn names_of(v: &[u32]) -> String {
    v.iter()
        .map(|c| br_name(*c).unwrap_or("?"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Expected for 17 one-ways of 32 KiB into 512 KiB of async space: the 13th crosses the
/// detection threshold (less than 10% of the buffer free, over 25% used by this sender),
/// the 17th does not fit.
fn expected(suspect: bool) -> Vec<u32> {
    let mut v = vec![BR_TRANSACTION_COMPLETE; 16];
    if suspect {
        v[12] = BR_ONEWAY_SPAM_SUSPECT;
    }
    v.push(BR_FAILED_REPLY);
    v
}

/// Flood with 17 one-ways of 32 KiB and compare the returns with `expected(suspect)`.
fn expect_flood(b: &Binder, suspect: bool) -> TResult {
    let got = flood(b, 17)?;
    ensure!(
        got == expected(suspect),
        "returns for 17 one-ways: [{}]",
        names_of(&got)
    );
    Ok(())
}

// 7.2 upstream Rust: BR_ONEWAY_SPAM_SUSPECT on every one-way while space is low:
//   range_alloc/{tree,array}.rs reserve_new have no latch like C's alloc->oneway_spam_detected
//   (docs/oracle.md)
fn suspect_reported_once(c: &Ctx) -> TResult {
    let sink = spawn_sink(c)?;
    let b = client(c)?;
    expect_ok(b.enable_oneway_spam_detection(true), "enable detection")?;
    expect_flood(&b, true)?;
    sink.kill();
    Ok(())
}

fn not_reported_when_disabled(c: &Ctx) -> TResult {
    let sink = spawn_sink(c)?;
    let b = client(c)?;
    expect_flood(&b, false)?;
    sink.kill();
    Ok(())
}

fn not_reported_after_disable(c: &Ctx) -> TResult {
    let sink = spawn_sink(c)?;
    let b = client(c)?;
    b.enable_oneway_spam_detection(true)?;
    b.enable_oneway_spam_detection(false)?;
    expect_flood(&b, false)?;
    sink.kill();
    Ok(())
}

fn async_space_exhausted(c: &Ctx) -> TResult {
    let sink = spawn_sink(c)?;
    let b = client(c)?;
    let p = pattern(64 * 1024, 2);
    for i in 0..8 {
        b.transact(0, 1, TF_ONE_WAY, &p)?;
        let r = b.next()?;
        ensure!(
            r == Return::TransactionComplete,
            "one-way {i} of 64 KiB: got {}",
            r.name()
        );
    }
    b.transact(0, 1, TF_ONE_WAY, &p)?;
    expect_br(
        &b,
        BR_FAILED_REPLY,
        "9th 64 KiB one-way into 512 KiB of async space",
    )?;
    expect_ext_err(&b, BR_FAILED_REPLY, -libc::ENOSPC, "async space exhausted")?;
    // A small one-way does not fit either: the async half is completely used.
    b.transact(0, 1, TF_ONE_WAY, &Payload::from_bytes(b"x"))?;
    expect_br(&b, BR_FAILED_REPLY, "8-byte one-way with no async space")?;
    sink.kill();
    Ok(())
}

fn sync_still_possible_when_async_full(c: &Ctx) -> TResult {
    // Fill the async half of a server that holds one-ways unread... then a sync call still
    // fits in the other half. The server reads only the sync call (it frees nothing).
    let ready = Pipe::new()?;
    let dev = c.dev.clone();
    let srv = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.set_context_mgr()?;
        b.enter_looper()?;
        ready.send_u64(1)?;
        loop {
            let r = b.next_within(30_000)?;
            if let Return::Transaction(td) = r {
                if td.flags & TF_ONE_WAY == 0 {
                    let mut w = WriteBuf::new();
                    w.reply(0, &Payload::from_bytes(b"sync-ok"));
                    b.write(&w)?;
                }
            }
        }
    })?;
    ready.recv_u64()?;
    let b = client(c)?;
    let p = pattern(64 * 1024, 3);
    for _ in 0..8 {
        b.transact(0, 1, TF_ONE_WAY, &p)?;
        b.expect(BR_TRANSACTION_COMPLETE)?;
    }
    let r = b.call(0, 2, &pattern(64 * 1024, 4))?;
    ensure_eq!(
        r.data,
        b"sync-ok".to_vec(),
        "sync call with the async half full"
    );
    srv.kill();
    Ok(())
}
