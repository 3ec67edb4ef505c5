//! trace: the `binder:*` trace events (tracefs), as perfetto and systrace record them.
//!
//! Each case enables the binder events in a tracefs instance of its own (so nothing else
//! that traces is disturbed), runs one exchange and checks the events of its processes:
//! names, order, the debug id linking `binder_transaction` to `binder_transaction_alloc_buf`
//! and `binder_transaction_received`, the reply flag, destinations and sizes. Both drivers
//! emit the same event definitions, so the same checks hold for both. Without tracefs or
//! without the binder events (a kernel without CONFIG_TRACING) the cases are skipped.

use crate::common::*;
use crate::Ctx;
use binder_uapi::harness::{getpid, Pipe};
use binder_uapi::*;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

crate::tests!(
    "trace",
    event_formats,
    sync_call,
    oneway_call,
    reply_with_fd,
    failed_transaction,
    failed_after_alloc,
);

/// The binder events perfetto and systrace use, with the fields both drivers record.
const FORMATS: &[(&str, &[&str])] = &[
    ("binder_ioctl", &["cmd", "arg"]),
    ("binder_ioctl_done", &["ret"]),
    ("binder_write_done", &["ret"]),
    ("binder_read_done", &["ret"]),
    (
        "binder_wait_for_work",
        &["proc_work", "transaction_stack", "thread_todo"],
    ),
    (
        "binder_transaction",
        &[
            "debug_id",
            "target_node",
            "to_proc",
            "to_thread",
            "reply",
            "code",
            "flags",
        ],
    ),
    ("binder_transaction_received", &["debug_id"]),
    (
        "binder_transaction_alloc_buf",
        &[
            "debug_id",
            "data_size",
            "offsets_size",
            "extra_buffers_size",
        ],
    ),
    ("binder_transaction_fd_send", &["debug_id", "fd", "offset"]),
    ("binder_transaction_fd_recv", &["debug_id", "fd", "offset"]),
    (
        "binder_transaction_node_to_ref",
        &[
            "debug_id",
            "node_debug_id",
            "node_ptr",
            "ref_debug_id",
            "ref_desc",
        ],
    ),
    (
        "binder_transaction_buffer_release",
        &[
            "debug_id",
            "data_size",
            "offsets_size",
            "extra_buffers_size",
        ],
    ),
    (
        "binder_transaction_failed_buffer_release",
        &[
            "debug_id",
            "data_size",
            "offsets_size",
            "extra_buffers_size",
        ],
    ),
    (
        "binder_transaction_update_buffer_release",
        &[
            "debug_id",
            "data_size",
            "offsets_size",
            "extra_buffers_size",
        ],
    ),
    ("binder_command", &["cmd"]),
    ("binder_return", &["cmd"]),
];

/// A tracefs instance with the binder events on; removed when dropped.
struct Tracer {
    dir: PathBuf,
}

fn tracefs_root() -> Option<PathBuf> {
    ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.join("instances").is_dir())
}

fn write_file(p: &Path, v: &str) -> TResult {
    std::fs::write(p, v).map_err(|e| format!("write {v:?} to {}: {e}", p.display()).into())
}

impl Tracer {
    fn start() -> TResult<Tracer> {
        let Some(root) = tracefs_root() else {
            skip!(
                "no tracefs at /sys/kernel/tracing (kernel without CONFIG_TRACING, or not mounted)"
            );
        };
        if !root.join("events/binder").is_dir() {
            skip!("tracefs has no binder events (kernel without the binder trace events)");
        }
        let dir = root.join(format!("instances/bct{}", getpid()));
        let _ = std::fs::remove_dir(&dir);
        std::fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let t = Tracer { dir };
        write_file(&t.dir.join("events/binder/enable"), "1")?;
        write_file(&t.dir.join("tracing_on"), "1")?;
        Ok(t)
    }

    /// Stop tracing and return the events of the processes `pids`.
    fn stop(&self, pids: &[i32]) -> TResult<Vec<Event>> {
        write_file(&self.dir.join("tracing_on"), "0")?;
        let text = std::fs::read_to_string(self.dir.join("trace"))
            .map_err(|e| format!("read trace: {e}"))?;
        Ok(text
            .lines()
            .filter_map(Event::parse)
            .filter(|e| pids.contains(&e.pid))
            .collect())
    }
}

impl Drop for Tracer {
    fn drop(&mut self) {
        let _ = std::fs::write(self.dir.join("events/binder/enable"), "0");
        let _ = std::fs::remove_dir(&self.dir);
    }
}

/// One line of the `trace` file.
#[derive(Debug)]
struct Event {
    pid: i32,
    name: String,
    fields: HashMap<String, String>,
    /// Words of the line that are not `key=value` (the BC_/BR_ name of binder_command/return).
    words: Vec<String>,
}

impl Event {
    /// `  comm-pid  [cpu] flags  time: name: key=value ...`
    fn parse(line: &str) -> Option<Event> {
        if line.starts_with('#') {
            return None;
        }
        let at = line.find(": binder_")?;
        let head = &line[..at];
        let task = head[..head.rfind(" [")?].trim_end();
        let pid = task.rsplit_once('-')?.1.parse().ok()?;
        let rest = &line[at + 2..];
        let (name, body) = rest.split_once(':')?;
        let mut fields = HashMap::new();
        let mut words = Vec::new();
        for w in body.split_whitespace() {
            match w.split_once('=') {
                Some((k, v)) => {
                    fields.insert(k.to_string(), v.to_string());
                }
                None => words.push(w.to_string()),
            }
        }
        Some(Event {
            pid,
            name: name.to_string(),
            fields,
            words,
        })
    }

    fn num(&self, key: &str) -> Result<i64, String> {
        let v = self
            .fields
            .get(key)
            .ok_or_else(|| format!("{} has no {key}=: {:?}", self.name, self.fields))?;
        let r = match v.strip_prefix("0x") {
            Some(h) => i64::from_str_radix(h, 16),
            None => v.parse(),
        };
        r.map_err(|_| format!("{} {key}={v}: not a number", self.name))
    }
}

/// A short listing of events for failure messages.
fn listing(ev: &[Event]) -> String {
    ev.iter()
        .map(|e| {
            let mut s = format!("{}:{}", e.pid, e.name.trim_start_matches("binder_"));
            if let Some(w) = e.words.first() {
                s.push_str(&format!("({w})"));
            } else if let Some(id) = e.fields.get("transaction") {
                s.push_str(&format!("(#{id})"));
            }
            s
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Index of the first event after `from` named `name` for which `f` holds.
fn find<F: Fn(&Event) -> bool>(ev: &[Event], from: usize, name: &str, f: F) -> Option<usize> {
    (from..ev.len()).find(|&i| ev[i].name == name && f(&ev[i]))
}

fn need<F: Fn(&Event) -> bool>(
    ev: &[Event],
    from: usize,
    name: &str,
    what: &str,
    f: F,
) -> TResult<usize> {
    find(ev, from, name, f).ok_or_else(|| {
        format!(
            "no {name} ({what}) after event {from}; events: {}",
            listing(ev)
        )
        .into()
    })
}

fn has_word(e: &Event, w: &str) -> bool {
    e.words.iter().any(|x| x == w)
}

/// Checks that hold for any trace: from a process's first binder_ioctl on (it may be inside
/// an ioctl when tracing starts), ioctls do not nest, each ends with binder_ioctl_done, and
/// commands and returns come inside an ioctl, printed with their BC_/BR_ names.
fn common_checks(ev: &[Event], pids: &[i32]) -> TResult {
    for &pid in pids {
        let mut open = 0i32;
        let first = ev
            .iter()
            .position(|e| e.pid == pid && e.name == "binder_ioctl");
        let Some(first) = first else {
            continue;
        };
        for e in ev[first..].iter().filter(|e| e.pid == pid) {
            match e.name.as_str() {
                "binder_ioctl" => {
                    ensure!(
                        open == 0,
                        "{pid}: binder_ioctl inside an ioctl: {}",
                        listing(ev)
                    );
                    open += 1;
                }
                "binder_ioctl_done" => {
                    ensure!(open == 1, "{pid}: binder_ioctl_done without binder_ioctl");
                    open -= 1;
                }
                "binder_command" | "binder_return" => {
                    ensure!(
                        open == 1,
                        "{pid}: {} outside an ioctl: {}",
                        e.name,
                        listing(ev)
                    );
                    let cmd = e.num("cmd")? as u32;
                    let want = if e.name == "binder_command" {
                        bc_name(cmd)
                    } else {
                        br_name(cmd)
                    };
                    ensure!(
                        want.is_some() && e.words.first().map(|s| s.as_str()) == want,
                        "{pid}: {} cmd={cmd:#x} printed as {:?}",
                        e.name,
                        e.words
                    );
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// The checks of one transaction (or reply) `t` sent by `from` to process `to_proc`: the
/// command that sent it, its buffer, and its delivery in `to_proc`. Returns the index of
/// binder_transaction_received (None for `delivered == false`).
struct Txn {
    reply: bool,
    code: u32,
    flags: u32,
    to_proc: i32,
    to_thread: i32,
    data_size: i64,
    offsets_size: i64,
}

fn check_txn(ev: &[Event], from: i32, t: &Txn, delivered: bool) -> TResult<(i64, usize)> {
    let bc = if t.reply {
        "BC_REPLY"
    } else {
        "BC_TRANSACTION"
    };
    let c = need(ev, 0, "binder_command", bc, |e| {
        e.pid == from && has_word(e, bc)
    })?;
    let ti = need(ev, c, "binder_transaction", "sent", |e| {
        e.pid == from && e.num("reply").ok() == Some(t.reply as i64)
    })?;
    let te = &ev[ti];
    let id = te.num("transaction")?;
    ensure!(id > 0, "binder_transaction transaction={id}");
    ensure_eq!(te.num("code")? as u32, t.code, "binder_transaction code");
    ensure_eq!(te.num("flags")? as u32, t.flags, "binder_transaction flags");
    ensure_eq!(
        te.num("dest_proc")? as i32,
        t.to_proc,
        "binder_transaction dest_proc"
    );
    ensure_eq!(
        te.num("dest_thread")? as i32,
        t.to_thread,
        "binder_transaction dest_thread"
    );
    let node = te.num("dest_node")?;
    if t.reply {
        ensure_eq!(node, 0, "dest_node of a reply");
    } else {
        ensure!(node > 0, "dest_node of a transaction: {node}");
    }
    let a = need(ev, ti, "binder_transaction_alloc_buf", "its buffer", |e| {
        e.num("transaction").ok() == Some(id)
    })?;
    ensure_eq!(ev[a].pid, from, "process allocating the buffer");
    ensure_eq!(ev[a].num("data_size")?, t.data_size, "alloc_buf data_size");
    ensure_eq!(
        ev[a].num("offsets_size")?,
        t.offsets_size,
        "alloc_buf offsets_size"
    );
    ensure_eq!(
        ev[a].num("extra_buffers_size")?,
        0,
        "alloc_buf extra_buffers_size"
    );
    let recv = find(ev, 0, "binder_transaction_received", |e| {
        e.num("transaction").ok() == Some(id)
    });
    if !delivered {
        ensure!(recv.is_none(), "transaction {id} received: {}", listing(ev));
        return Ok((id, a));
    }
    let r = recv.ok_or_else(|| format!("transaction {id} never received: {}", listing(ev)))?;
    ensure!(
        r > a,
        "transaction {id} received before its buffer: {}",
        listing(ev)
    );
    ensure_eq!(ev[r].pid, t.to_proc, "process receiving transaction {id}");
    // The BR_ code follows the received event in the same thread.
    let br = if t.reply {
        "BR_REPLY"
    } else {
        "BR_TRANSACTION"
    };
    need(ev, r, "binder_return", br, |e| {
        e.pid == t.to_proc && has_word(e, br)
    })?;
    Ok((id, r))
}

fn event_formats(_c: &Ctx) -> TResult {
    let Some(root) = tracefs_root() else {
        skip!("no tracefs at /sys/kernel/tracing (kernel without CONFIG_TRACING, or not mounted)");
    };
    if !root.join("events/binder").is_dir() {
        skip!("tracefs has no binder events (kernel without the binder trace events)");
    }
    for (name, fields) in FORMATS {
        let p = root.join(format!("events/binder/{name}/format"));
        let f = std::fs::read_to_string(&p).map_err(|e| format!("{}: {e}", p.display()))?;
        ensure!(
            f.contains(&format!("name: {name}\n")),
            "{}: no name line",
            p.display()
        );
        for field in *fields {
            // "field:int debug_id;" and the like.
            ensure!(
                f.lines()
                    .any(|l| l.trim_start().starts_with("field:")
                        && l.contains(&format!(" {field};"))),
                "{name}: no field {field}"
            );
        }
    }
    Ok(())
}

fn sync_call(c: &Ctx) -> TResult {
    let srv = spawn_ctxmgr(c, |_, _| Ok(Step::Reply(Payload::from_bytes(b"pong!"))))?;
    let b = client(c)?;
    let me = getpid();
    let tr = Tracer::start()?;
    let r = b.call(0, 0x51, &Payload::from_bytes(b"ping"))?;
    ensure_eq!(r.data, b"pong!".to_vec(), "reply data");
    let spid = srv.pid;
    let ev = tr.stop(&[me, spid])?;
    srv.kill();
    common_checks(&ev, &[me, spid])?;
    let call = Txn {
        reply: false,
        code: 0x51,
        flags: 0,
        to_proc: spid,
        to_thread: 0,
        data_size: 4,
        offsets_size: 0,
    };
    let (id, got) = check_txn(&ev, me, &call, true)?;
    let reply = Txn {
        reply: true,
        code: 0,
        flags: 0,
        to_proc: me,
        to_thread: me,
        data_size: 5,
        offsets_size: 0,
    };
    let (rid, rgot) = check_txn(&ev, spid, &reply, true)?;
    ensure!(rid != id, "the reply has the call's debug id {id}");
    ensure!(
        rgot > got,
        "reply received before the call: {}",
        listing(&ev)
    );
    // The caller waited for its reply in BINDER_WRITE_READ, after BR_TRANSACTION_COMPLETE.
    need(&ev, 0, "binder_return", "BR_TRANSACTION_COMPLETE", |e| {
        e.pid == me && has_word(e, "BR_TRANSACTION_COMPLETE")
    })?;
    // What is sure to happen before the caller has its reply: the caller's whole call, and
    // the end of the server's read that got the call (its later events race with the end
    // of the trace).
    for name in [
        "binder_ioctl",
        "binder_ioctl_done",
        "binder_write_done",
        "binder_read_done",
        "binder_wait_for_work",
    ] {
        need(&ev, 0, name, "caller", |e| e.pid == me)?;
    }
    for name in ["binder_read_done", "binder_ioctl_done", "binder_ioctl"] {
        need(&ev, got, name, "server, after the call", |e| e.pid == spid)?;
    }
    Ok(())
}

fn oneway_call(c: &Ctx) -> TResult {
    let got = Pipe::new()?;
    let srv = spawn_ctxmgr(c, |_, rec| {
        let _ = got.send_u64(rec.data.len() as u64);
        Ok(Step::Nothing)
    })?;
    let b = client(c)?;
    let me = getpid();
    let tr = Tracer::start()?;
    b.transact(0, 0x52, TF_ONE_WAY, &Payload::from_bytes(b"one way"))?;
    b.expect(BR_TRANSACTION_COMPLETE)?;
    ensure_eq!(got.recv_u64()?, 7, "bytes received by the server");
    let spid = srv.pid;
    let ev = tr.stop(&[me, spid])?;
    srv.kill();
    common_checks(&ev, &[me, spid])?;
    let call = Txn {
        reply: false,
        code: 0x52,
        flags: TF_ONE_WAY,
        to_proc: spid,
        to_thread: 0,
        data_size: 7,
        offsets_size: 0,
    };
    check_txn(&ev, me, &call, true)?;
    ensure!(
        find(&ev, 0, "binder_transaction", |e| e.num("reply").ok()
            == Some(1))
        .is_none(),
        "a reply to a oneway transaction: {}",
        listing(&ev)
    );
    need(&ev, 0, "binder_return", "BR_TRANSACTION_COMPLETE", |e| {
        e.pid == me && has_word(e, "BR_TRANSACTION_COMPLETE")
    })?;
    Ok(())
}

fn reply_with_fd(c: &Ctx) -> TResult {
    let srv = spawn_ctxmgr(c, |b, _rec| {
        let pp = Pipe::new().map_err(|e| e.to_string())?;
        let mut p = Payload::new();
        p.fd(pp.r, 0);
        let mut w = WriteBuf::new();
        w.reply(0, &p);
        b.write(&w).map_err(|e| e.to_string())?;
        let _ = b.next()?;
        Ok(Step::Nothing)
    })?;
    let b = client(c)?;
    let me = getpid();
    let tr = Tracer::start()?;
    let r = b.call_flags_nofree(0, 0x53, TF_ACCEPT_FDS, &Payload::new())?;
    let o: binder_fd_object = r.object(r.offsets[0]);
    let fd = o.pad_binder_or_fd as u32 as i32;
    b.free_buffer(r.td.buffer)?;
    let spid = srv.pid;
    let ev = tr.stop(&[me, spid])?;
    srv.kill();
    // SAFETY: closing the descriptor the reply gave us.
    unsafe { libc::close(fd) };
    common_checks(&ev, &[me, spid])?;
    let reply = Txn {
        reply: true,
        code: 0,
        flags: 0,
        to_proc: me,
        to_thread: me,
        data_size: std::mem::size_of::<binder_fd_object>() as i64,
        offsets_size: 8,
    };
    let (rid, rgot) = check_txn(&ev, spid, &reply, true)?;
    // The fd is taken while the reply is built (after its buffer), and installed in the
    // caller before the reply is received; both at offset 8 (the fd of the object at 0).
    let s = need(
        &ev,
        0,
        "binder_transaction_fd_send",
        "the reply's fd",
        |e| e.num("transaction").ok() == Some(rid),
    )?;
    ensure_eq!(ev[s].pid, spid, "process sending the fd");
    ensure!(ev[s].num("src_fd")? >= 0, "src_fd {}", ev[s].num("src_fd")?);
    ensure_eq!(ev[s].num("offset")?, 8, "fd_send offset");
    let alloc = need(&ev, 0, "binder_transaction_alloc_buf", "reply", |e| {
        e.num("transaction").ok() == Some(rid)
    })?;
    ensure!(
        s > alloc,
        "fd_send before the reply's buffer: {}",
        listing(&ev)
    );
    let v = need(
        &ev,
        0,
        "binder_transaction_fd_recv",
        "the reply's fd",
        |e| e.num("transaction").ok() == Some(rid),
    )?;
    ensure_eq!(ev[v].pid, me, "process receiving the fd");
    ensure_eq!(ev[v].num("dest_fd")? as i32, fd, "fd_recv dest_fd");
    ensure_eq!(ev[v].num("offset")?, 8, "fd_recv offset");
    ensure!(
        s < v && v < rgot,
        "fd_send, fd_recv, received out of order: {}",
        listing(&ev)
    );
    // BC_FREE_BUFFER of the reply: its buffer is released, with the sizes it was allocated
    // with.
    let f = need(
        &ev,
        rgot,
        "binder_transaction_buffer_release",
        "the caller's BC_FREE_BUFFER of the reply",
        |e| e.num("transaction").ok() == Some(rid),
    )?;
    ensure_eq!(ev[f].pid, me, "process freeing the reply's buffer");
    ensure_eq!(
        ev[f].num("data_size")?,
        reply.data_size,
        "released data_size"
    );
    ensure_eq!(ev[f].num("offsets_size")?, 8, "released offsets_size");
    Ok(())
}

fn failed_transaction(c: &Ctx) -> TResult {
    let srv = spawn_echo(c)?;
    let b = client(c)?;
    let me = getpid();
    let tr = Tracer::start()?;
    b.transact(77, 0x54, 0, &Payload::from_bytes(b"lost"))?;
    let v = b.collect_until(&[BR_FAILED_REPLY, BR_REPLY, BR_DEAD_REPLY])?;
    ensure!(
        v.last() == Some(&Return::FailedReply),
        "expected BR_FAILED_REPLY for an invalid handle, got {}",
        names(&v)
    );
    let spid = srv.pid;
    let ev = tr.stop(&[me, spid])?;
    srv.kill();
    common_checks(&ev, &[me, spid])?;
    let c0 = need(&ev, 0, "binder_command", "BC_TRANSACTION", |e| {
        e.pid == me && has_word(e, "BC_TRANSACTION")
    })?;
    // The handle is checked before the transaction is built: no transaction, no buffer.
    for name in ["binder_transaction", "binder_transaction_alloc_buf"] {
        ensure!(
            find(&ev, 0, name, |_| true).is_none(),
            "{name} for a transaction to an invalid handle: {}",
            listing(&ev)
        );
    }
    need(&ev, c0, "binder_return", "BR_FAILED_REPLY", |e| {
        e.pid == me && has_word(e, "BR_FAILED_REPLY")
    })?;
    // The failure is reported through the read, not as an error of the write.
    let w = need(
        &ev,
        c0,
        "binder_write_done",
        "the failed transaction's write",
        |e| e.pid == me,
    )?;
    ensure_eq!(ev[w].num("ret")?, 0, "binder_write_done ret");
    Ok(())
}

/// A transaction that fails after its buffer was allocated (an object offset at the very end of
/// the data, EINVAL): the transaction and its buffer are traced, then
/// `binder_transaction_failed_buffer_release` of that buffer, and it is never received.
fn failed_after_alloc(c: &Ctx) -> TResult {
    let srv = spawn_echo(c)?;
    let b = client(c)?;
    let me = getpid();
    let data = [0u8; 48];
    let offsets = 48u64.to_ne_bytes();
    let td = binder_transaction_data {
        target: 0,
        code: 0x55,
        data_size: data.len() as u64,
        offsets_size: offsets.len() as u64,
        buffer: data.as_ptr() as u64,
        offsets: offsets.as_ptr() as u64,
        ..Default::default()
    };
    let tr = Tracer::start()?;
    let mut w = WriteBuf::new();
    w.raw_transaction(BC_TRANSACTION, &td);
    b.write(&w)?;
    let v = b.collect_until(&[BR_FAILED_REPLY, BR_REPLY, BR_DEAD_REPLY])?;
    ensure!(
        v.last() == Some(&Return::FailedReply),
        "expected BR_FAILED_REPLY for an object offset at the end of the data, got {}",
        names(&v)
    );
    let spid = srv.pid;
    let ev = tr.stop(&[me, spid])?;
    srv.kill();
    common_checks(&ev, &[me, spid])?;
    let call = Txn {
        reply: false,
        code: 0x55,
        flags: 0,
        to_proc: spid,
        to_thread: 0,
        data_size: 48,
        offsets_size: 8,
    };
    let (id, a) = check_txn(&ev, me, &call, false)?;
    let f = need(
        &ev,
        a,
        "binder_transaction_failed_buffer_release",
        "the failed transaction's buffer",
        |e| e.num("transaction").ok() == Some(id),
    )?;
    ensure_eq!(ev[f].pid, me, "process releasing the failed buffer");
    ensure_eq!(ev[f].num("data_size")?, 48, "released data_size");
    ensure_eq!(ev[f].num("offsets_size")?, 8, "released offsets_size");
    ensure!(
        find(&ev, 0, "binder_transaction_buffer_release", |_| true).is_none(),
        "a failed transaction's buffer released as freed by userspace: {}",
        listing(&ev)
    );
    need(&ev, f, "binder_return", "BR_FAILED_REPLY", |e| {
        e.pid == me && has_word(e, "BR_FAILED_REPLY")
    })?;
    Ok(())
}
