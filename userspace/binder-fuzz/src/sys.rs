//! Process-shared counters, counted ioctls, binderfs mounting and the driver's
//! bookkeeping (binder_logs state/stats) and /proc/meminfo snapshots.

use binder_uapi::harness::map_shared;
use binder_uapi::*;
use std::collections::BTreeMap;
use std::ffi::CString;
use std::sync::atomic::{AtomicI32, AtomicPtr, AtomicU64, Ordering};

pub const MAX_PEERS: usize = 16;

/// Lives in a MAP_SHARED anonymous page made before any fork, so killed children's
/// counts survive.
#[repr(C)]
pub struct Shared {
    pub ioctls: AtomicU64,
    pub txns: AtomicU64,
    pub pids: [AtomicI32; MAX_PEERS],
}

static SHARED: AtomicPtr<Shared> = AtomicPtr::new(core::ptr::null_mut());

/// Map the shared page (once, in the parent).
pub fn shared_init() -> &'static Shared {
    let p = SHARED.load(Ordering::Relaxed);
    if !p.is_null() {
        // SAFETY: set below from a never-unmapped mapping.
        return unsafe { &*p };
    }
    let Ok(m) = map_shared(4096) else {
        panic!("mmap of the shared counter page failed");
    };
    SHARED.store(m as *mut Shared, Ordering::Relaxed);
    // SAFETY: just mapped, page-sized and never unmapped; zero bytes are valid atomics.
    unsafe { &*(m as *const Shared) }
}

pub fn shared() -> &'static Shared {
    shared_init()
}

pub fn ioctl_count() -> u64 {
    shared().ioctls.load(Ordering::Relaxed)
}

/// A counted ioctl; Err carries the errno.
pub fn ioctl(fd: i32, req: u32, arg: usize) -> Result<i32, i32> {
    shared().ioctls.fetch_add(1, Ordering::Relaxed);
    // SAFETY: the kernel validates the argument; callers pass their own memory or junk.
    let r = unsafe { libc::ioctl(fd, req as _, arg) };
    if r < 0 {
        Err(errno())
    } else {
        Ok(r)
    }
}

pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// BINDER_WRITE_READ of `w` with a read buffer of `rbuf` (either may be empty).
/// Returns (result, write_consumed, read_consumed).
pub fn write_read(fd: i32, w: &[u8], rbuf: &mut [u8]) -> (Result<i32, i32>, u64, u64) {
    let mut bwr = binder_write_read {
        write_size: w.len() as u64,
        write_consumed: 0,
        write_buffer: w.as_ptr() as u64,
        read_size: rbuf.len() as u64,
        read_consumed: 0,
        read_buffer: rbuf.as_mut_ptr() as u64,
    };
    let r = ioctl(fd, BINDER_WRITE_READ, &mut bwr as *mut _ as usize);
    (r, bwr.write_consumed, bwr.read_consumed)
}

pub fn open_dev(path: &str, flags: i32) -> Result<i32, i32> {
    let c = CString::new(path).unwrap();
    // SAFETY: valid C string.
    let fd = unsafe { libc::open(c.as_ptr(), flags) };
    if fd < 0 {
        Err(errno())
    } else {
        Ok(fd)
    }
}

pub fn map_dev(fd: i32, size: usize) -> Result<usize, i32> {
    // SAFETY: mapping of our own fd, used as an address only.
    let p = unsafe {
        libc::mmap(
            core::ptr::null_mut(),
            size,
            libc::PROT_READ,
            libc::MAP_PRIVATE,
            fd,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        Err(errno())
    } else {
        Ok(p as usize)
    }
}

pub fn close(fd: i32) {
    // SAFETY: closing an fd we own (or a stale number: EBADF is harmless).
    unsafe { libc::close(fd) };
}

pub fn now_ms() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000
}

/// Where devices are created and where the driver's logs are read.
pub struct Fs {
    /// binderfs mount holding binder-control.
    pub mnt: String,
    /// Directory with `state` and `stats`, if any.
    pub logs: Option<String>,
    /// Private mount, held to be undone when the `Fs` is dropped.
    _private: Option<binderfs::Mount>,
}

impl Fs {
    pub fn setup() -> Fs {
        let mnt = binderfs::mount_point();
        let logs = format!("{mnt}/binder_logs");
        if std::path::Path::new(&format!("{logs}/state")).exists() {
            return Fs {
                mnt,
                logs: Some(logs),
                _private: None,
            };
        }
        // A private instance with stats=global gives binder_logs.
        let dir = format!("/tmp/binder-fuzz-fs.{}", std::process::id());
        let _ = std::fs::create_dir_all(&dir);
        if let Ok(m) = binderfs::Mount::new(&dir, "stats=global") {
            if std::path::Path::new(&format!("{dir}/binder_logs/state")).exists() {
                return Fs {
                    mnt: dir.clone(),
                    logs: Some(format!("{dir}/binder_logs")),
                    _private: Some(m),
                };
            }
            // Dropping `m` unmounts the instance and removes the directory.
        }
        let dbg = "/sys/kernel/debug/binder";
        let logs = if std::path::Path::new(&format!("{dbg}/state")).exists() {
            Some(dbg.to_string())
        } else {
            None
        };
        Fs {
            mnt,
            logs,
            _private: None,
        }
    }

    pub fn snapshot(&self) -> Option<Snapshot> {
        snapshot_at(self.logs.as_ref()?)
    }
}

/// The object counts of the binder logs directory `dir`.
pub fn snapshot_at(dir: &str) -> Option<Snapshot> {
    let stats = std::fs::read_to_string(format!("{dir}/stats")).ok()?;
    let state = std::fs::read_to_string(format!("{dir}/state")).ok()?;
    let mut s = Snapshot::parse(&stats, &state);
    // A dead node whose local strong count went negative is never freed (6.12's C
    // driver can leave one, see docs/robustness.md). Such nodes are set aside from the
    // counts and reported on their own (fuzz::no_dead_node_leak), whatever the driver.
    let bad = crate::regress::negative_dead_nodes(&state);
    let n = bad.len() as i64;
    if n > 0 {
        if let Some(v) = s.active.get_mut("stats.node") {
            *v -= n;
        }
        if let Some(v) = s.lines.get_mut("state.node") {
            *v -= n;
        }
        // The "dead nodes:" header line goes too if nothing else is listed.
        if dead_node_lines(&state) == n {
            if let Some(v) = s.lines.get_mut("state.dead") {
                *v -= 1;
            }
        }
        s.dead_node_leaks = bad;
    }
    Some(s)
}

/// Object counts the driver reports.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Snapshot {
    /// `stats`, global section: `<obj>: active N` per object kind.
    pub active: BTreeMap<String, i64>,
    /// `state`: how many lines of each kind (proc, thread, node, ref, buffer, ...).
    pub lines: BTreeMap<String, i64>,
    /// Dead nodes left with a negative count, set aside from the counts (their state
    /// lines).
    pub dead_node_leaks: Vec<String>,
}

fn dead_node_lines(state: &str) -> i64 {
    let mut in_dead = false;
    let mut n = 0;
    for l in state.lines() {
        if l.starts_with("dead nodes:") {
            in_dead = true;
            continue;
        }
        if !l.starts_with("  ") {
            in_dead = false;
        }
        if in_dead && l.trim_start().starts_with("node ") {
            n += 1;
        }
    }
    n
}

impl Snapshot {
    pub fn parse(stats: &str, state: &str) -> Snapshot {
        let mut active = BTreeMap::new();
        for line in stats.lines().skip(1) {
            if line.starts_with("proc ") {
                break;
            }
            if let Some((name, rest)) = line.split_once(": active ") {
                if let Some(n) = rest.split_whitespace().next().and_then(|v| v.parse().ok()) {
                    active.insert(format!("stats.{}", name.trim()), n);
                }
            }
        }
        let mut lines = BTreeMap::new();
        for line in state.lines().skip(1) {
            let t = line.trim_start();
            let word: String = t.split([' ', ':']).next().unwrap_or("").to_string();
            if word.is_empty() {
                continue;
            }
            *lines.entry(format!("state.{word}")).or_insert(0) += 1;
        }
        Snapshot {
            active,
            lines,
            dead_node_leaks: Vec::new(),
        }
    }

    /// Differences from `base` as "key base->now" strings.
    /// How far the counts are from `base`: the sum of the differences, each way.
    pub fn distance(&self, base: &Snapshot) -> u64 {
        let mut d = 0;
        for (a, b) in [(&self.active, &base.active), (&self.lines, &base.lines)] {
            for k in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
                let now = a.get(k).copied().unwrap_or(0);
                let then = b.get(k).copied().unwrap_or(0);
                d += now.abs_diff(then);
            }
        }
        d
    }

    pub fn diff(&self, base: &Snapshot) -> Vec<String> {
        let mut out = Vec::new();
        for (a, b) in [(&self.active, &base.active), (&self.lines, &base.lines)] {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for k in keys {
                let now = a.get(k).copied().unwrap_or(0);
                let then = b.get(k).copied().unwrap_or(0);
                if now != then {
                    out.push(format!("{k} {then}->{now}"));
                }
            }
        }
        out
    }
}

/// (MemFree, Slab) in kB.
pub fn meminfo() -> (i64, i64) {
    let s = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
    let mut free = 0;
    let mut slab = 0;
    for l in s.lines() {
        let mut it = l.split_whitespace();
        let k = it.next().unwrap_or("");
        let v: i64 = it.next().and_then(|v| v.parse().ok()).unwrap_or(0);
        match k {
            "MemFree:" => free = v,
            "Slab:" => slab = v,
            _ => {}
        }
    }
    (free, slab)
}

/// Best effort: drop page cache and reclaimable slab before a memory reading.
pub fn drop_caches() {
    let _ = std::fs::write("/proc/sys/vm/drop_caches", "3");
}

/// Asks the kernel to print the stack of every task in uninterruptible sleep to
/// the console (`echo w > /proc/sysrq-trigger`), so that objects a blocked kernel
/// worker holds can be told from leaked ones. Returns whether the request was
/// taken (no `CONFIG_MAGIC_SYSRQ`: false).
pub fn show_blocked_tasks() -> bool {
    std::fs::write("/proc/sysrq-trigger", "w").is_ok()
}

/// Shrink every slab cache (`/sys/kernel/slab/*/shrink`): this also hands the objects
/// that generic KASAN holds in its quarantine back to their caches, so that Slab
/// measures what is allocated, not what was freed lately. Without the directory (no
/// sysfs slab interface), nothing.
pub fn shrink_slabs() {
    if let Ok(rd) = std::fs::read_dir("/sys/kernel/slab") {
        for e in rd.flatten() {
            let _ = std::fs::write(e.path().join("shrink"), "1");
        }
    }
}

/// What a stuck process is doing in the kernel (wchan, stack) for a report.
pub fn describe_task(pid: i32) -> String {
    let mut out = String::new();
    if let Ok(rd) = std::fs::read_dir(format!("/proc/{pid}/task")) {
        for e in rd.flatten() {
            let tid = e.file_name().to_string_lossy().to_string();
            let st =
                std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stat")).unwrap_or_default();
            let state = st
                .rsplit(')')
                .next()
                .and_then(|r| r.split_whitespace().next())
                .unwrap_or("?")
                .to_string();
            let wchan = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/wchan"))
                .unwrap_or_default();
            out.push_str(&format!("task {tid} state {state} wchan {wchan}\n"));
            if let Ok(stack) = std::fs::read_to_string(format!("/proc/{pid}/task/{tid}/stack")) {
                for l in stack.lines().take(12) {
                    out.push_str(&format!("    {l}\n"));
                }
            }
        }
    }
    out
}
