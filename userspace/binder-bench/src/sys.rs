//! The floor (pipe and futex ping-pong between two processes) and the kernel memory
//! a binder process and a binder thread cost.

use crate::report::{figure, note, Better, Samples};
use crate::work::new_device;
use crate::Cfg;
use binder_uapi::harness::{fork_proc, map_shared, Pipe};
use binder_uapi::*;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Pipe ping-pong: one byte there and back between two processes.
pub fn pipe_pingpong(cfg: &Cfg) -> Result<(), String> {
    let there = Pipe::new().map_err(|e| format!("pipe: {e}"))?;
    let back = Pipe::new().map_err(|e| format!("pipe: {e}"))?;
    let (tr, bw) = (there.r, back.w);
    let total = cfg.floor_n + cfg.warm;
    let child = fork_proc(move || {
        let mut b = [0u8; 1];
        for _ in 0..total {
            // SAFETY: our pipe fds, a one-byte buffer.
            if unsafe { libc::read(tr, b.as_mut_ptr() as *mut _, 1) } != 1 {
                return Err("echo: read".into());
            }
            if unsafe { libc::write(bw, b.as_ptr() as *const _, 1) } != 1 {
                return Err("echo: write".into());
            }
        }
        Ok(())
    })
    .map_err(|e| format!("fork: {e}"))?;
    let mut s = Samples::with_capacity(cfg.floor_n);
    let mut b = [7u8; 1];
    for i in 0..total {
        let t = Instant::now();
        // SAFETY: our pipe fds, a one-byte buffer.
        unsafe {
            if libc::write(there.w, b.as_ptr() as *const _, 1) != 1
                || libc::read(back.r, b.as_mut_ptr() as *mut _, 1) != 1
            {
                return Err(format!(
                    "pipe ping-pong: {}",
                    std::io::Error::last_os_error()
                ));
            }
        }
        if i >= cfg.warm {
            s.push_ns(t.elapsed().as_nanos());
        }
    }
    child.join().map_err(|e| format!("echo process: {e:?}"))?;
    s.report("pipe_pingpong", false);
    Ok(())
}

fn futex(addr: &AtomicU32, op: i32, val: u32) {
    // SAFETY: a futex word in shared memory that outlives both processes' use of it.
    unsafe {
        libc::syscall(
            libc::SYS_futex,
            addr.as_ptr(),
            op,
            val,
            core::ptr::null::<libc::timespec>(),
            0usize,
            0u32,
        );
    }
}

/// Futex ping-pong between two processes over a shared word: 1 = request, 2 = reply,
/// 3 = quit.
pub fn futex_pingpong(cfg: &Cfg) -> Result<(), String> {
    // An anonymous shared page, unmapped at the end.
    let page = map_shared(4096).map_err(|e| format!("mmap: {e}"))?;
    // SAFETY: the page is zeroed, aligned, and lives until munmap below.
    let word: &'static AtomicU32 = unsafe { &*(page as *const AtomicU32) };
    let child = fork_proc(move || loop {
        let v = word.load(Ordering::Acquire);
        match v {
            1 => {
                word.store(2, Ordering::Release);
                futex(word, libc::FUTEX_WAKE, 1);
            }
            3 => return Ok(()),
            _ => futex(word, libc::FUTEX_WAIT, v),
        }
    })
    .map_err(|e| format!("fork: {e}"))?;
    let total = cfg.floor_n + cfg.warm;
    let mut s = Samples::with_capacity(cfg.floor_n);
    for i in 0..total {
        let t = Instant::now();
        word.store(1, Ordering::Release);
        futex(word, libc::FUTEX_WAKE, 1);
        loop {
            let v = word.load(Ordering::Acquire);
            if v == 2 {
                break;
            }
            futex(word, libc::FUTEX_WAIT, v);
        }
        if i >= cfg.warm {
            s.push_ns(t.elapsed().as_nanos());
        }
    }
    word.store(3, Ordering::Release);
    futex(word, libc::FUTEX_WAKE, 1);
    let r = child.join().map_err(|e| format!("futex peer: {e:?}"));
    // SAFETY: both processes are done with the page.
    unsafe { libc::munmap(page, 4096) };
    r?;
    s.report("futex_pingpong", false);
    Ok(())
}

/// The /proc/meminfo fields we look at, in bytes. `kern` is the kernel's own
/// allocations that a binder process or thread can cause: Slab + KernelStack +
/// PageTables + VmallocUsed (MemTotal - MemFree would add page-cache and per-cpu
/// free-list noise that is larger than the figure).
#[derive(Clone, Copy, Default, Debug)]
pub(crate) struct Mem {
    pub(crate) kern: i64,
    pub(crate) slab: i64,
}

/// Give empty and per-cpu partial slabs back (SLUB's /sys/kernel/slab/*/shrink), so
/// that the page-level Slab figure follows the objects allocated rather than what the
/// allocator happens to cache, and fold the per-cpu vm counters. Best effort (root).
fn quiesce() {
    if let Ok(dir) = std::fs::read_dir("/sys/kernel/slab") {
        for e in dir.flatten() {
            let _ = std::fs::write(e.path().join("shrink"), "1");
        }
    }
    let _ = std::fs::write("/proc/sys/vm/stat_refresh", "1");
}

pub(crate) fn meminfo() -> Result<Mem, String> {
    quiesce();
    let s = std::fs::read_to_string("/proc/meminfo").map_err(|e| format!("/proc/meminfo: {e}"))?;
    let mut kern = 0i64;
    let mut slab = 0i64;
    for l in s.lines() {
        let mut it = l.split_whitespace();
        let (k, v) = match (it.next(), it.next().and_then(|v| v.parse::<i64>().ok())) {
            (Some(k), Some(v)) => (k, v * 1024),
            _ => continue,
        };
        match k {
            "Slab:" => {
                slab = v;
                kern += v;
            }
            "KernelStack:" | "PageTables:" | "VmallocUsed:" => kern += v,
            _ => {}
        }
    }
    Ok(Mem { kern, slab })
}

pub(crate) fn settle() {
    std::thread::sleep(Duration::from_millis(250));
}

/// Block this thread in a binder read forever (an idle looper).
fn idle_looper(b: &Binder) -> ! {
    let mut buf = [0u8; 256];
    loop {
        let mut bwr = binder_write_read {
            read_size: buf.len() as u64,
            read_buffer: buf.as_mut_ptr() as u64,
            ..Default::default()
        };
        let _ = b.write_read_raw(&mut bwr);
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn enter_looper(b: &Binder) {
    let mut w = WriteBuf::new();
    w.enter_looper();
    let _ = b.write(&w);
}

fn sleep_forever() -> ! {
    loop {
        // SAFETY: pause() only returns on a signal.
        unsafe { libc::pause() };
    }
}

/// Start `procs` processes, each with `threads` extra threads; with `binder`, every
/// process opens and maps `dev` and every thread (main included) becomes an idle binder
/// looper. Without it they only sleep, with the same fds and mappings otherwise.
/// `proc_binder`: open and map the device in each process even when `binder` is false
/// (for the per-thread figure, whose baseline has the process but not the threads).
fn spawn_group(
    dev: &str,
    procs: usize,
    threads: usize,
    binder: bool,
    proc_binder: bool,
) -> Result<Vec<i32>, String> {
    let ready = Pipe::new().map_err(|e| format!("pipe: {e}"))?;
    let mut pids = Vec::new();
    for _ in 0..procs {
        // SAFETY: the child only runs the code below and never returns.
        let pid = unsafe { libc::fork() };
        if pid < 0 {
            return Err(format!("fork: {}", std::io::Error::last_os_error()));
        }
        if pid == 0 {
            let b = if binder || proc_binder {
                match Binder::open(dev).and_then(|mut b| b.mmap(1024 * 1024 - 8192).map(|_| b)) {
                    Ok(b) => Some(b),
                    Err(_) => unsafe { libc::_exit(1) },
                }
            } else {
                None
            };
            let b: &'static Option<Binder> = Box::leak(Box::new(b));
            let (tx, rx) = std::sync::mpsc::channel::<()>();
            for _ in 0..threads {
                let tx = tx.clone();
                std::thread::spawn(move || {
                    if binder {
                        let bb = b.as_ref().unwrap();
                        enter_looper(bb);
                        let _ = tx.send(());
                        idle_looper(bb);
                    }
                    let _ = tx.send(());
                    sleep_forever();
                });
            }
            for _ in 0..threads {
                let _ = rx.recv();
            }
            if binder {
                enter_looper(b.as_ref().unwrap());
            }
            let _ = ready.send(b"r");
            if binder {
                idle_looper(b.as_ref().unwrap());
            }
            sleep_forever();
        }
        pids.push(pid);
    }
    for _ in 0..procs {
        ready
            .recv_exact(1, Duration::from_secs(60))
            .map_err(|e| format!("idle processes did not come up: {e}"))?;
    }
    Ok(pids)
}

fn kill_group(pids: Vec<i32>) {
    for &p in &pids {
        // SAFETY: our children.
        unsafe { libc::kill(p, libc::SIGKILL) };
    }
    for p in pids {
        let mut st = 0;
        // SAFETY: reap our child.
        unsafe { libc::waitpid(p, &mut st, 0) };
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[v.len() / 2]
}

/// Memory of one group minus the memory of the same group without binder, per unit.
fn measure(
    dev: &str,
    procs: usize,
    threads: usize,
    per_thread: bool,
    units: usize,
    reps: usize,
) -> Result<(f64, f64), String> {
    let mut used = Vec::new();
    let mut slab = Vec::new();
    for _ in 0..reps {
        let mut d = [Mem::default(); 2];
        for (i, binder) in [false, true].into_iter().enumerate() {
            settle();
            let m0 = meminfo()?;
            let pids = spawn_group(dev, procs, threads, binder, per_thread)?;
            settle();
            let m1 = meminfo()?;
            kill_group(pids);
            d[i] = Mem {
                kern: m1.kern - m0.kern,
                slab: m1.slab - m0.slab,
            };
        }
        used.push((d[1].kern - d[0].kern) as f64 / units as f64);
        slab.push((d[1].slab - d[0].slab) as f64 / units as f64);
    }
    Ok((median(used), median(slab)))
}

/// Kernel memory per idle binder process (open, 1 MiB - 8 KiB mapped, one looper
/// blocked in a read) and per idle binder looper thread.
pub fn memory(cfg: &Cfg, per_thread: bool) -> Result<(), String> {
    let dev = new_device()?;
    let path = dev.path();
    let (name, procs, threads, units) = if per_thread {
        ("mem_thread", 1, cfg.mem_threads, cfg.mem_threads)
    } else {
        ("mem_proc", cfg.mem_procs, 0, cfg.mem_procs)
    };
    let (used, slab) = measure(&path, procs, threads, per_thread, units, cfg.mem_reps)?;
    figure(name, "kernel", "KiB", Better::Lower, used / 1024.0);
    figure(name, "slab", "KiB", Better::Lower, slab / 1024.0);
    note(&format!(
        "{name}: {units} units, median of {} repetitions",
        cfg.mem_reps
    ));
    Ok(())
}
