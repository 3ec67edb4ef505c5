//! node_info: BINDER_GET_NODE_DEBUG_INFO iteration and BINDER_GET_NODE_INFO_FOR_REF
//! counts with several holders.

use crate::common::*;
use crate::Ctx;
use binder_uapi::*;

crate::tests!(
    "node_info",
    debug_info_iterates_nodes,
    debug_info_between_ptrs,
    for_ref_counts_two_holders,
    for_ref_after_owner_death,
);

/// A manager that strongly acquires every handle it is sent.
fn spawn_collector(c: &Ctx) -> Result<Server, String> {
    spawn_ctxmgr(c, |b, rec| {
        for &off in &rec.offsets {
            let o: flat_binder_object = rec.object(off);
            if o.hdr.type_ == BINDER_TYPE_HANDLE {
                b.acquire_handle(o.handle()).map_err(|e| e.to_string())?;
            }
        }
        std_handler(b, rec)
    })
}

fn send_nodes(b: &Binder, ptrs: &[u64]) -> TResult {
    let mut p = Payload::new();
    for &ptr in ptrs {
        p.binder(ptr, ptr + 1, 0);
    }
    b.call(0, CODE_ECHO, &p)?;
    Ok(())
}

fn debug_info_iterates_nodes(c: &Ctx) -> TResult {
    let srv = spawn_collector(c)?;
    let b = client(c)?;
    send_nodes(&b, &[0x3000, 0x1000, 0x2000])?;
    let mut ptr = 0;
    let mut seen = Vec::new();
    for _ in 0..5 {
        let i = expect_ok(b.node_debug_info(ptr), "BINDER_GET_NODE_DEBUG_INFO")?;
        if i.ptr == 0 {
            ensure_eq!(i, binder_node_debug_info::default(), "end of iteration");
            break;
        }
        ensure_eq!(i.cookie, i.ptr + 1, "cookie");
        ensure_eq!(
            (i.has_strong_ref, i.has_weak_ref),
            (1, 1),
            "has_strong_ref/has_weak_ref"
        );
        seen.push(i.ptr);
        ptr = i.ptr;
    }
    ensure_eq!(seen, vec![0x1000, 0x2000, 0x3000], "nodes in ptr order");
    srv.kill();
    Ok(())
}

fn debug_info_between_ptrs(c: &Ctx) -> TResult {
    let srv = spawn_collector(c)?;
    let b = client(c)?;
    send_nodes(&b, &[0x1000, 0x5000])?;
    let i = b.node_debug_info(0x1001)?;
    ensure_eq!(i.ptr, 0x5000, "first node above 0x1001");
    let i = b.node_debug_info(0x0fff)?;
    ensure_eq!(i.ptr, 0x1000, "first node above 0xfff");
    let i = b.node_debug_info(u64::MAX)?;
    ensure_eq!(i.ptr, 0, "nothing above u64::MAX");
    srv.kill();
    Ok(())
}

/// Manager code: report BINDER_GET_NODE_INFO_FOR_REF for the registered service.
const CODE_INFO: u32 = 0x30;

fn spawn_info_svcmgr(c: &Ctx) -> Result<Server, String> {
    let mut held: Option<u32> = None;
    spawn_ctxmgr(c, move |b, rec| match rec.td.code {
        CODE_REGISTER => {
            let o: flat_binder_object = rec.object(rec.offsets[0]);
            b.acquire_handle(o.handle()).map_err(|e| e.to_string())?;
            held = Some(o.handle());
            Ok(Step::Reply(Payload::new()))
        }
        CODE_LOOKUP => {
            let mut p = Payload::new();
            if let Some(h) = held {
                p.handle(h);
            }
            Ok(Step::Reply(p))
        }
        CODE_INFO => {
            let mut p = Payload::new();
            match b.node_info_for_ref(held.unwrap_or(u32::MAX)) {
                Ok(i) => p.u32(0).u32(i.strong_count).u32(i.weak_count),
                Err(e) => p.u32(e.raw_os_error().unwrap_or(-1) as u32).u32(0).u32(0),
            };
            Ok(Step::Reply(p))
        }
        _ => std_handler(b, rec),
    })
}

fn info(b: &Binder) -> TResult<(u32, u32, u32)> {
    let r = b.call(0, CODE_INFO, &Payload::new())?;
    let u = |o: usize| u32::from_ne_bytes(r.data[o..o + 4].try_into().unwrap());
    Ok((u(0), u(4), u(8)))
}

// 7.2 upstream Rust: GET_NODE_INFO_FOR_REF counts differ: node.rs:Node::populate_counts weak
//   count includes remote refs; C reports local_weak_refs only (docs/oracle.md)
fn for_ref_counts_two_holders(c: &Ctx) -> TResult {
    let mgr = spawn_info_svcmgr(c)?;
    let svc = spawn_service(c, 0x7100)?;
    let b = client(c)?;
    ensure_eq!(
        info(&b)?,
        (0, 1, 0),
        "(errno, strong, weak) with the manager's ref only"
    );
    let h = lookup(&b)?;
    ensure_eq!(
        info(&b)?,
        (0, 2, 0),
        "(errno, strong, weak) with a second holder"
    );
    b.release_handle(h)?;
    ensure_eq!(
        info(&b)?,
        (0, 1, 0),
        "(errno, strong, weak) after the second holder released"
    );
    svc.kill();
    mgr.kill();
    Ok(())
}

// 7.2 upstream Rust: GET_NODE_INFO_FOR_REF counts differ: node.rs:Node::populate_counts weak
//   count includes remote refs; C reports local_weak_refs only (docs/oracle.md)
fn for_ref_after_owner_death(c: &Ctx) -> TResult {
    let mgr = spawn_info_svcmgr(c)?;
    let svc = spawn_service(c, 0x7200)?;
    let b = client(c)?;
    ensure_eq!(info(&b)?, (0, 1, 0), "before the owner dies");
    svc.kill();
    // A dead node still answers with its counts: the manager's ref keeps it.
    let ok = harness::wait_until(std::time::Duration::from_secs(10), || {
        let h = lookup(&b);
        match h {
            Ok(h) => {
                let mut w = WriteBuf::new();
                w.transaction(h, 1, 0, &Payload::new());
                let dead = matches!(b.call_raw(&w), Ok((_, Return::DeadReply)));
                let _ = b.release_handle(h);
                dead
            }
            Err(_) => false,
        }
    });
    ensure!(ok, "the service never became dead");
    ensure_eq!(info(&b)?, (0, 1, 0), "after the owner died");
    mgr.kill();
    Ok(())
}
