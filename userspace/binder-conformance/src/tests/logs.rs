//! logs: the binder_logs files (state, stats, transactions, transaction_log,
//! failed_transaction_log, proc/<pid>) and that object counts return to their baseline
//! once the test processes are gone.

use crate::common::*;
use crate::tests::binderfs::Mount;
use crate::Ctx;
use binder_uapi::harness::{fork_proc, wait_until, Pipe};
use binder_uapi::*;
use std::collections::BTreeMap;
use std::time::Duration;

crate::tests!(
    "logs",
    files_present,
    proc_listed_while_open,
    stats_return_to_baseline,
    failed_transaction_logged,
    transaction_logged,
    pending_transaction_in_state,
    proc_stats_count_commands,
    looper_state_bits,
    failed_transactions_leak_nothing,
);

/// The binder_logs directory: the harness mount's if it has one (stats=global),
/// otherwise a private binderfs instance mounted with stats=global.
pub(crate) struct Logs {
    dir: String,
    _mount: Option<Mount>,
}

impl Logs {
    pub(crate) fn open(c: &Ctx) -> TResult<Logs> {
        let d = format!("{}/binder_logs", c.mnt);
        if std::path::Path::new(&d).is_dir() {
            return Ok(Logs {
                dir: d,
                _mount: None,
            });
        }
        let m = Mount::new("logs", "stats=global")?;
        let dir = format!("{}/binder_logs", m.dir);
        ensure!(
            std::path::Path::new(&dir).is_dir(),
            "binderfs mounted with stats=global has no binder_logs"
        );
        Ok(Logs {
            dir,
            _mount: Some(m),
        })
    }
    /// A device in the same binderfs instance as these logs: the test's own device, or
    /// a new one in the private mount (removed when the returned node is dropped).
    fn device(&self, c: &Ctx) -> TResult<(String, Option<binderfs::Device>)> {
        match &self._mount {
            None => Ok((c.dev.clone(), None)),
            Some(m) => {
                let name = c.dev.rsplit('/').next().unwrap().to_string();
                let d = binderfs::Device::create(&m.dir, &name)?;
                Ok((d.path(), Some(d)))
            }
        }
    }
    pub(crate) fn read(&self, f: &str) -> TResult<String> {
        let p = format!("{}/{f}", self.dir);
        std::fs::read_to_string(&p).map_err(|e| TestErr::Fail(format!("{p}: {e}")))
    }
    /// Global object counters of `stats`: name -> active.
    fn active(&self) -> TResult<BTreeMap<String, i64>> {
        let s = self.read("stats")?;
        let mut m = BTreeMap::new();
        for line in s.lines() {
            if line.starts_with("proc ") {
                break; // per-process sections follow the global ones
            }
            if let Some((name, rest)) = line.split_once(": active ") {
                if let Some(n) = rest.split_whitespace().next().and_then(|v| v.parse().ok()) {
                    m.insert(name.trim().to_string(), n);
                }
            }
        }
        Ok(m)
    }
}

// 7.2 upstream Rust: no binder_logs/transaction_log or failed_transaction_log
//   (rust_binderfs.c:init_binder_logs creates only stats, state, transactions, proc/)
//   (docs/oracle.md)
fn files_present(c: &Ctx) -> TResult {
    let l = Logs::open(c)?;
    for (f, head) in [
        ("state", "binder state:"),
        ("stats", "binder stats:"),
        ("transactions", "binder transactions:"),
    ] {
        let s = l.read(f)?;
        ensure!(
            s.starts_with(head),
            "{f} does not start with {head:?}: {:?}",
            s.lines().next()
        );
    }
    l.read("transaction_log")?;
    l.read("failed_transaction_log")?;
    ensure!(
        std::path::Path::new(&format!("{}/proc", l.dir)).is_dir(),
        "binder_logs/proc missing"
    );
    Ok(())
}

fn proc_listed_while_open(c: &Ctx) -> TResult {
    let l = Logs::open(c)?;
    // binder_logs/proc/<pid> appears in the binderfs instance of the opened device.
    let (dev, _node) = l.device(c)?;
    let devname = dev.rsplit('/').next().unwrap().to_string();
    let ready = Pipe::new()?;
    let p = fork_proc(|| {
        let _b = Binder::open_mapped(&dev)?;
        ready.send_u64(harness::getpid() as u64)?;
        harness::sleep_ms(60_000);
        Ok(())
    })?;
    let pid = ready.recv_u64()?;
    let state = l.read("state")?;
    let head = format!("proc {pid}\ncontext {devname}\n");
    ensure!(state.contains(&head), "state has no {head:?}");
    let pf = format!("{}/proc/{pid}", l.dir);
    let s = std::fs::read_to_string(&pf).map_err(|e| format!("{pf}: {e}"))?;
    ensure!(
        s.contains(&format!("proc {pid}")),
        "{pf} does not describe proc {pid}"
    );
    p.kill();
    let gone = wait_until(Duration::from_secs(10), || {
        l.read("state").map(|s| !s.contains(&head)).unwrap_or(false)
    });
    ensure!(gone, "proc {pid} still in state after it exited");
    let gone = wait_until(Duration::from_secs(10), || {
        !std::path::Path::new(&pf).exists()
    });
    ensure!(gone, "{pf} still exists after the process exited");
    Ok(())
}

const COUNTERS: [&str; 8] = [
    "proc",
    "thread",
    "node",
    "ref",
    "death",
    "transaction",
    "transaction_complete",
    "freeze",
];

fn get(m: &BTreeMap<String, i64>, k: &str) -> i64 {
    m.get(k).copied().unwrap_or(0)
}

// 7.2 upstream Rust: binder_logs/stats has no 'proc: active N total M' object counters
//   (stats.rs counts only BC/BR commands); C prints binder_stats obj_created/obj_deleted
//   (docs/oracle.md)
fn stats_return_to_baseline(c: &Ctx) -> TResult {
    let l = Logs::open(c)?;
    // Let earlier tests' deferred releases finish: wait for two equal samples.
    let mut base = l.active()?;
    for _ in 0..25 {
        harness::sleep_ms(200);
        let now = l.active()?;
        if now == base {
            break;
        }
        base = now;
    }
    let mgr = spawn_svcmgr(c)?;
    let svc = spawn_service(c, 0x9100)?;
    let done = Pipe::new()?;
    let go = Pipe::new()?;
    let dev = c.dev.clone();
    let cl = fork_proc(|| {
        let b = Binder::open_mapped(&dev)?;
        b.enter_looper()?;
        let h = lookup(&b)?;
        let mut w = WriteBuf::new();
        w.request_death(h, 1).request_freeze_notification(h, 2);
        b.write(&w)?;
        for _ in 0..5 {
            whoami(&b, h, 0)?;
        }
        // A transaction left unanswered and a buffer left unfreed when we die.
        b.transact(0, CODE_ECHO, TF_ONE_WAY, &Payload::from_bytes(b"bye"))?;
        done.send_u64(1)?;
        go.recv_u64_within(Duration::from_secs(30))?;
        Ok(())
    })?;
    done.recv_u64()?;
    let mid = l.active()?;
    for k in ["proc", "node", "ref", "death", "freeze"] {
        ensure!(
            get(&mid, k) > get(&base, k),
            "{k}: active count did not rise during the workload ({} -> {})",
            get(&base, k),
            get(&mid, k)
        );
    }
    cl.kill();
    svc.kill();
    mgr.kill();
    let mut last = BTreeMap::new();
    let ok = wait_until(Duration::from_secs(10), || match l.active() {
        Ok(now) => {
            let back = COUNTERS.iter().all(|k| get(&now, k) <= get(&base, k));
            last = now;
            back
        }
        Err(_) => false,
    });
    if !ok {
        let diff: Vec<String> = COUNTERS
            .iter()
            .filter(|k| get(&last, k) > get(&base, k))
            .map(|k| format!("{k} {} -> {}", get(&base, k), get(&last, k)))
            .collect();
        fail!(
            "active counts above baseline after the processes exited: {}",
            diff.join(", ")
        );
    }
    Ok(())
}

// 7.2 upstream Rust: no binder_logs/failed_transaction_log in Rust
//   (rust_binderfs.c:init_binder_logs) (docs/oracle.md)
fn failed_transaction_logged(c: &Ctx) -> TResult {
    let l = Logs::open(c)?;
    let srv = spawn_std(c)?;
    let b = client(c)?;
    let mut w = WriteBuf::new();
    w.transaction(99, 1, 0, &Payload::from_bytes(b"12345"));
    expect_txn_error(&b, &w, BR_FAILED_REPLY, "call to handle 99")?;
    let id = ext_err(&b)?.id;
    let log = l.read("failed_transaction_log")?;
    let me = format!("from {}:{} ", harness::getpid(), harness::gettid());
    let line = log
        .lines()
        .find(|s| s.starts_with(&format!("{id}: ")))
        .ok_or_else(|| format!("no failed_transaction_log entry for id {id}"))?;
    ensure!(line.contains("call "), "entry is not a call: {line}");
    ensure!(line.contains(&me), "entry does not say {me:?}: {line}");
    ensure!(
        line.contains("handle 99 size 5:0"),
        "entry lacks 'handle 99 size 5:0': {line}"
    );
    ensure!(
        line.contains(&format!("ret {}/-22", BR_FAILED_REPLY)),
        "entry lacks the error: {line}"
    );
    srv.kill();
    Ok(())
}

// 7.2 upstream Rust: no binder_logs/transaction_log in Rust (rust_binderfs.c:init_binder_logs)
//   (docs/oracle.md)
fn transaction_logged(c: &Ctx) -> TResult {
    let l = Logs::open(c)?;
    let srv = spawn_std(c)?;
    let b = client(c)?;
    b.call(0, CODE_ECHO, &Payload::from_bytes(b"abcde"))?;
    let id = ext_err(&b)?.id;
    let log = l.read("transaction_log")?;
    let line = log
        .lines()
        .find(|s| s.starts_with(&format!("{id}: ")))
        .ok_or_else(|| format!("no transaction_log entry for id {id}"))?;
    let devname = c.dev.rsplit('/').next().unwrap();
    ensure!(
        line.contains(&format!(
            "from {}:{} ",
            harness::getpid(),
            harness::gettid()
        )),
        "sender: {line}"
    );
    ensure!(
        line.contains(&format!("to {}:", srv.pid)),
        "receiver: {line}"
    );
    ensure!(
        line.contains(&format!("context {devname} ")),
        "context: {line}"
    );
    ensure!(
        line.contains("handle 0 size 5:0 ret 0/0"),
        "handle/size/ret: {line}"
    );
    ensure!(!line.ends_with("(incomplete)"), "entry incomplete: {line}");
    srv.kill();
    Ok(())
}

// 7.2 upstream Rust: transaction lines print 'to <pid>' without ':<tid>'
//   (transaction.rs:Transaction::debug_print_inner); C prints 'to pid:tid' (docs/oracle.md)
fn pending_transaction_in_state(c: &Ctx) -> TResult {
    let l = Logs::open(c)?;
    let held = Pipe::new()?;
    let release = Pipe::new()?;
    let srv = spawn_ctxmgr(c, |b, rec| {
        if rec.td.code == 0x77 {
            let _ = held.send_u64(1);
            release.recv_u64()?;
        }
        std_handler(b, rec)
    })?;
    let b = client(c)?;
    std::thread::scope(|s| {
        let h = s.spawn(|| b.call(0, 0x77, &Payload::new()));
        held.recv_u64()?;
        let t = l.read("transactions")?;
        let me = harness::getpid();
        let out = t.lines().any(|x| {
            x.contains("outgoing transaction")
                && x.contains(&format!("from {me}:"))
                && x.contains("code 77")
        });
        let inc = t.lines().any(|x| {
            x.contains("incoming transaction")
                && x.contains(&format!("to {}:", srv.pid))
                && x.contains("code 77")
        });
        release.send_u64(1)?;
        h.join().unwrap()?;
        ensure!(
            out,
            "no outgoing transaction with code 77 from {me} in transactions"
        );
        ensure!(
            inc,
            "no incoming transaction with code 77 to {} in transactions",
            srv.pid
        );
        Ok::<(), TestErr>(())
    })?;
    srv.kill();
    Ok(())
}

fn proc_stats_count_commands(c: &Ctx) -> TResult {
    let l = Logs::open(c)?;
    let srv = spawn_std(c)?;
    let b = client(c)?;
    for _ in 0..3 {
        b.call(0, CODE_ECHO, &Payload::new())?;
    }
    let s = l.read("stats")?;
    let me = harness::getpid();
    let sect = s
        .split("\nproc ")
        .find(|x| x.starts_with(&format!("{me}\n")))
        .ok_or_else(|| format!("no stats section for proc {me}"))?;
    // (The split ate the newline before the next "proc" line.)
    let sect = format!("{sect}\n");
    ensure!(
        sect.contains("  BC_TRANSACTION: 3\n"),
        "proc {me} stats lack 'BC_TRANSACTION: 3':\n{sect}"
    );
    ensure!(
        sect.contains("  BC_FREE_BUFFER: 3\n"),
        "proc {me} stats lack 'BC_FREE_BUFFER: 3'"
    );
    ensure!(
        sect.contains("  BR_REPLY: 3\n"),
        "proc {me} stats lack 'BR_REPLY: 3'"
    );
    ensure!(
        sect.contains("  BR_TRANSACTION_COMPLETE: 3\n"),
        "proc {me} stats lack 'BR_TRANSACTION_COMPLETE: 3'"
    );
    srv.kill();
    Ok(())
}

fn looper_bits(state: &str, pid: i32, tid: i32) -> Option<u32> {
    let sect = state
        .split("\nproc ")
        .find(|x| x.starts_with(&format!("{pid}\n")))?;
    let pre = format!("  thread {tid}: l ");
    let line = sect.lines().find(|x| x.starts_with(&pre))?;
    u32::from_str_radix(line[pre.len()..].split_whitespace().next()?, 16).ok()
}

fn looper_state_bits(c: &Ctx) -> TResult {
    // Looper flags as the state file prints them: REGISTERED 0x01, ENTERED 0x02,
    // EXITED 0x04, INVALID 0x08.
    let l = Logs::open(c)?;
    let b = client(c)?;
    let me = harness::getpid();
    let check = |what: &str, w: &mut WriteBuf, want: u32| -> TResult {
        std::thread::scope(|s| {
            s.spawn(|| -> TResult {
                b.write(w)?;
                let tid = harness::gettid();
                let st = l.read("state")?;
                let bits = looper_bits(&st, me, tid)
                    .ok_or_else(|| format!("{what}: thread {tid} not in state"))?;
                ensure_eq!(bits & 0x0f, want, &format!("{what}: looper bits"));
                Ok(())
            })
            .join()
            .unwrap()
        })
    };
    check("BC_ENTER_LOOPER", WriteBuf::new().enter_looper(), 0x02)?;
    check(
        "BC_ENTER_LOOPER + BC_EXIT_LOOPER",
        WriteBuf::new().enter_looper().exit_looper(),
        0x06,
    )?;
    check(
        "BC_REGISTER_LOOPER unrequested",
        WriteBuf::new().register_looper(),
        0x09,
    )?;
    check(
        "BC_ENTER_LOOPER then BC_REGISTER_LOOPER",
        WriteBuf::new().enter_looper().register_looper(),
        0x0b,
    )?;
    Ok(())
}

/// The `stats` section of process `pid` (with its trailing newline).
pub(crate) fn proc_section(l: &Logs, pid: i32) -> TResult<String> {
    let s = l.read("stats")?;
    let sect = s
        .split("\nproc ")
        .find(|x| x.starts_with(&format!("{pid}\n")))
        .ok_or_else(|| format!("no stats section for proc {pid}"))?;
    Ok(format!("{sect}\n"))
}

// 7.2 upstream Rust: per-proc stats say 'outstanding transactions:' instead of C's 'pending
//   transactions:' (process.rs:Process::debug_print_stats); nothing actually leaks
//   (docs/oracle.md)
fn failed_transactions_leak_nothing(c: &Ctx) -> TResult {
    // After a series of transactions that fail half-way (objects already translated when
    // the failure is found), neither side keeps buffers, nodes, refs or pending work.
    let l = Logs::open(c)?;
    let srv = spawn_ctxmgr_flags(
        c,
        Some(FLAT_BINDER_FLAG_ACCEPTS_FDS),
        |_| Ok(()),
        std_handler,
    )?;
    let b = client(c)?;
    let pp = Pipe::new()?;
    let mut bad = Vec::new();
    let mut p = Payload::new();
    p.binder(0x100, 0x101, 0);
    p.handle(77);
    bad.push(p);
    let mut p = Payload::new();
    p.fd(pp.r, 0);
    p.weak_binder(0x200, 0x201, 0);
    p.object(&flat_binder_object {
        hdr: binder_object_header { type_: 0x1234 },
        ..Default::default()
    });
    bad.push(p);
    let mut p = Payload::new();
    p.binder(0x300, 0x301, 0);
    p.fd(-1, 0);
    bad.push(p);
    for (i, p) in bad.iter().enumerate() {
        let mut w = WriteBuf::new();
        w.transaction(0, CODE_ECHO, 0, p);
        expect_txn_error(&b, &w, BR_FAILED_REPLY, &format!("bad transaction {i}"))?;
        let mut w = WriteBuf::new();
        w.transaction(0, CODE_ECHO, TF_ONE_WAY, p);
        expect_txn_error(&b, &w, BR_FAILED_REPLY, &format!("bad one-way {i}"))?;
    }
    still_works(&b)?;
    b.expect_nothing(100)?;
    let me = harness::getpid();
    let ok = wait_until(Duration::from_secs(10), || {
        let (Ok(mine), Ok(theirs)) = (proc_section(&l, me), proc_section(&l, srv.pid)) else {
            return false;
        };
        mine.contains("  buffers: 0\n")
            && mine.contains("  nodes: 0\n")
            && mine.contains("  pending transactions: 0\n")
            && theirs.contains("  buffers: 0\n")
            && theirs.contains("  refs: 0 s 0 w 0\n")
            && theirs.contains("  pending transactions: 0\n")
    });
    if !ok {
        let mine = proc_section(&l, me)?;
        let theirs = proc_section(&l, srv.pid)?;
        let pick = |s: &str| {
            s.lines()
                .filter(|x| {
                    [
                        "  buffers:",
                        "  nodes:",
                        "  refs:",
                        "  pending transactions:",
                    ]
                    .iter()
                    .any(|k| x.starts_with(k))
                })
                .collect::<Vec<_>>()
                .join("; ")
        };
        fail!(
            "leftovers after failed transactions: client [{}], server [{}]",
            pick(&mine),
            pick(&theirs)
        );
    }
    srv.kill();
    Ok(())
}
