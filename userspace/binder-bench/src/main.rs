//! binder-bench: benchmarks for Linux binder drivers, meant to be run once with the C
//! driver and once with the Rust driver on the same kernel and compared as ratios.
//!
//! Output: one `BENCH: {"workload":…,"metric":…,"unit":…,"better":…,"value":…}` line per
//! figure, `# …` comments, and a ptest line per workload: `PASS: bench::<workload>`, or a
//! `FAIL:` after a `# reason` line. Exit status is nonzero if any workload failed.

mod ep;
mod profile;
mod report;
mod scale;
mod sys;
mod work;

use binder_uapi::harness::{quiet_panics, run_isolated, Outcome, TResult};
use report::note;
use std::io::Write;
use std::time::{Duration, Instant};

/// Sizes of the runs.
pub struct Cfg {
    /// Timed calls for rtt_0b / rtt_4k.
    pub rtt_n: usize,
    /// Timed calls per payload size up to 4 KiB (scaled down by size above).
    pub sweep_n: usize,
    /// At least this many calls per payload size.
    pub sweep_min: usize,
    /// Time cap per payload size.
    pub sweep_cap: Duration,
    /// Timed calls for fd_pass and objects16.
    pub obj_n: usize,
    /// Round trips for the pipe and futex floors.
    pub floor_n: usize,
    /// Untimed calls before each timed run.
    pub warm: usize,
    /// Seconds per throughput point.
    pub tput_secs: f64,
    /// One-way transactions.
    pub oneway_n: usize,
    pub mem_procs: usize,
    pub mem_threads: usize,
    pub mem_reps: usize,
    /// Timed round trips (and one-way transactions) per point of a scaling curve.
    pub scale_n: usize,
    /// The largest point of scale_refs (nodes owned by the server, refs held by a client).
    pub scale_refs_max: usize,
    /// The largest point of scale_buffers (live buffers in the server's area).
    pub scale_buffers_max: usize,
    /// The largest point of scale_threads (looper threads waiting in the server's pool).
    pub scale_threads_max: usize,
    /// The largest point of scale_death (binder processes with a death notification).
    pub scale_death_max: usize,
    /// The largest point of scale_freeze (nodes of the frozen process, one-ways pending).
    pub scale_freeze_max: usize,
    /// The largest point of scale_state (nodes and refs listed in binder_logs/state).
    pub scale_state_max: usize,
    /// The largest point of scale_procs (processes with a ref and a death notification).
    pub scale_procs_max: usize,
    /// Operations of an ops_* workload (the count option of `scripts/insn-profile`).
    pub ops_n: usize,
    /// Binder fds opened by ops_ref and ops_death (at least ops_n).
    pub ops_fds: usize,
    /// Live buffers in the server's area in ops_rtt_buffers.
    pub ops_buffers: usize,
    /// Print the kernel allocations of the ops_* workloads (tracefs kmem events).
    pub alloc_trace: bool,
    /// Per-workload timeout.
    pub timeout: Duration,
    /// Run the latency workloads (both ends) on this one CPU.
    pub pin: Option<usize>,
    /// After a workload hangs (times out), skip the rest instead of waiting on each.
    pub bail_on_hang: bool,
}

impl Cfg {
    fn default_board() -> Cfg {
        Cfg {
            rtt_n: 100_000,
            sweep_n: 20_000,
            sweep_min: 200,
            sweep_cap: Duration::from_secs(10),
            obj_n: 50_000,
            floor_n: 100_000,
            warm: 1000,
            tput_secs: 5.0,
            oneway_n: 100_000,
            mem_procs: 64,
            mem_threads: 64,
            mem_reps: 3,
            scale_n: 2000,
            scale_refs_max: 100_000,
            scale_buffers_max: 10_000,
            scale_threads_max: 256,
            scale_death_max: 10_000,
            scale_freeze_max: 10_000,
            scale_state_max: 10_000,
            scale_procs_max: 1000,
            ops_n: 1000,
            ops_fds: 6000,
            ops_buffers: 10,
            alloc_trace: false,
            timeout: Duration::from_secs(600),
            pin: None,
            bail_on_hang: false,
        }
    }

    /// Scale every count by `f` (keeping small floors).
    fn scale(&mut self, f: f64) {
        let s = |v: usize, min: usize| ((v as f64 * f) as usize).max(min);
        self.rtt_n = s(self.rtt_n, 100);
        self.sweep_n = s(self.sweep_n, 50);
        self.sweep_min = s(self.sweep_min, 10);
        self.sweep_cap = Duration::from_secs_f64((self.sweep_cap.as_secs_f64() * f).max(0.2));
        self.obj_n = s(self.obj_n, 100);
        self.floor_n = s(self.floor_n, 100);
        self.warm = s(self.warm, 10);
        self.tput_secs = (self.tput_secs * f).max(0.2);
        self.oneway_n = s(self.oneway_n, 100);
    }

    fn print(&self) {
        note(&format!(
            "config: pin={:?} rtt_n={} sweep_n={} sweep_min={} sweep_cap={:.1}s obj_n={} floor_n={} warm={} tput_secs={:.1} oneway_n={} mem_procs={} mem_threads={} mem_reps={}",
            self.pin,
            self.rtt_n,
            self.sweep_n,
            self.sweep_min,
            self.sweep_cap.as_secs_f64(),
            self.obj_n,
            self.floor_n,
            self.warm,
            self.tput_secs,
            self.oneway_n,
            self.mem_procs,
            self.mem_threads,
            self.mem_reps
        ));
        note(&format!(
            "scaling: scale_n={} max: refs={} buffers={} threads={} death={} procs={} freeze={} state={}",
            self.scale_n,
            self.scale_refs_max,
            self.scale_buffers_max,
            self.scale_threads_max,
            self.scale_death_max,
            self.scale_procs_max,
            self.scale_freeze_max,
            self.scale_state_max
        ));
    }
}

const WORKLOADS: &[&str] = &[
    "rtt_0b",
    "rtt_4k",
    "rtt_xcpu",
    "payload_sweep",
    "fd_pass",
    "objects16",
    "tput",
    "oneway",
    "pipe_pingpong",
    "futex_pingpong",
    "mem_proc",
    "mem_thread",
];

/// Workloads that run only when named.
const EXTRA_WORKLOADS: &[&str] = &[
    "rtt_load",
    "scale_refs",
    "scale_buffers",
    "scale_threads",
    "scale_death",
    "scale_freeze",
    "scale_state",
    "scale_procs",
    "ops_node_ref",
    "ops_ref",
    "ops_death",
    "ops_rtt_buffers",
];

/// The number of CPUs online.
pub(crate) fn online_cpus() -> usize {
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) };
    usize::try_from(n).unwrap_or(1).max(1)
}

/// Pin the calling process (and so the processes it forks) to one CPU.
pub(crate) fn pin_to(cpu: usize) -> Result<(), String> {
    // SAFETY: a zeroed cpu_set_t is an empty set; CPU_SET stays inside it.
    unsafe {
        let mut set: libc::cpu_set_t = core::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, core::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(format!(
                "sched_setaffinity({cpu}): {}",
                std::io::Error::last_os_error()
            ));
        }
    }
    Ok(())
}

fn run(cfg: &Cfg, w: &str) -> TResult {
    // Throughput wants every CPU; the memory figures do not care.
    if let Some(cpu) = cfg.pin {
        if !matches!(w, "tput" | "mem_proc" | "mem_thread" | "rtt_load") {
            pin_to(cpu)?;
        }
    }
    let res: Result<(), String> = match w {
        "rtt_0b" => work::rtt(cfg, w, 0),
        "rtt_4k" => work::rtt(cfg, w, 4096),
        // The one workload that may be skipped (one CPU online).
        "rtt_xcpu" => return work::rtt_xcpu(cfg),
        "payload_sweep" => work::payload_sweep(cfg),
        "fd_pass" => work::fd_pass(cfg),
        "objects16" => work::objects16(cfg),
        "tput" => {
            for p in [1, 2, 4, 8] {
                work::throughput(cfg, p)?;
            }
            Ok(())
        }
        "oneway" => work::oneway(cfg),
        "pipe_pingpong" => sys::pipe_pingpong(cfg),
        "futex_pingpong" => sys::futex_pingpong(cfg),
        "mem_proc" => sys::memory(cfg, false),
        "mem_thread" => sys::memory(cfg, true),
        // Pins its own processes.
        "rtt_load" => return work::rtt_load(cfg),
        "scale_refs" => scale::refs(cfg),
        "scale_buffers" => scale::buffers(cfg),
        "scale_threads" => scale::threads(cfg),
        "scale_death" => scale::death(cfg),
        "scale_freeze" => scale::freeze(cfg),
        "scale_state" => scale::state(cfg),
        "scale_procs" => scale::procs(cfg),
        "ops_node_ref" => scale::ops_node_ref(cfg),
        "ops_ref" => scale::ops_ref(cfg, false),
        "ops_death" => scale::ops_ref(cfg, true),
        "ops_rtt_buffers" => scale::ops_rtt_buffers(cfg),
        _ => Err(format!("unknown workload {w}")),
    };
    res.map_err(Into::into)
}

fn usage() -> ! {
    eprintln!(
        "usage: binder-bench [--list] [--scale F] [--rtt-n N] [--obj-n N] [--floor-n N] [--sweep-n N]\n\
         \x20                   [--tput-secs S] [--oneway-n N] [--mem-procs N] [--mem-threads N]\n\
         \x20                   [--mem-reps N] [--scale-n N] [--scale-refs-max N] [--scale-buffers-max N]\n\
         \x20                   [--scale-threads-max N] [--scale-death-max N] [--scale-freeze-max N]\n\
         \x20                   [--scale-state-max N] [--scale-procs-max N]\n\
         \x20                   [--ops-n N] [--ops-fds N] [--ops-buffers N] [--alloc-trace] [--timeout SECS] [--pin CPU] [--bail-on-hang] [--profile] [WORKLOAD...]\n\
         workloads: {} (default); {} (only when named)",
        WORKLOADS.join(" "),
        EXTRA_WORKLOADS.join(" ")
    );
    std::process::exit(2);
}

fn main() {
    let mut cfg = Cfg::default_board();
    let mut only: Vec<String> = Vec::new();
    let mut args = std::env::args().skip(1);
    let mut scale: Option<f64> = None;
    let mut profiling = false;
    // Explicit counts win over --scale, whatever their order.
    let mut explicit: Vec<(String, String)> = Vec::new();
    while let Some(a) = args.next() {
        match a.as_str() {
            "--list" => {
                for w in WORKLOADS {
                    println!("{w}");
                }
                return;
            }
            "-h" | "--help" => usage(),
            "--bail-on-hang" => cfg.bail_on_hang = true,
            "--profile" => profiling = true,
            "--alloc-trace" => cfg.alloc_trace = true,
            "--scale" => {
                scale = Some(
                    args.next()
                        .and_then(|v| v.parse().ok())
                        .unwrap_or_else(|| usage()),
                )
            }
            s if s.starts_with("--") => {
                let v = args.next().unwrap_or_else(|| usage());
                explicit.push((s.to_string(), v));
            }
            s => only.push(s.to_string()),
        }
    }
    if let Some(f) = scale {
        cfg.scale(f);
    }
    for (k, v) in explicit {
        let n = || v.parse::<usize>().unwrap_or_else(|_| usage());
        match k.as_str() {
            "--rtt-n" => cfg.rtt_n = n(),
            "--obj-n" => cfg.obj_n = n(),
            "--floor-n" => cfg.floor_n = n(),
            "--sweep-n" => cfg.sweep_n = n(),
            "--oneway-n" => cfg.oneway_n = n(),
            "--mem-procs" => cfg.mem_procs = n(),
            "--mem-threads" => cfg.mem_threads = n(),
            "--mem-reps" => cfg.mem_reps = n().max(1),
            "--scale-n" => cfg.scale_n = n().max(1),
            "--scale-refs-max" => cfg.scale_refs_max = n().max(1),
            "--scale-buffers-max" => cfg.scale_buffers_max = n().max(1),
            "--scale-threads-max" => cfg.scale_threads_max = n().max(1),
            "--scale-death-max" => cfg.scale_death_max = n().max(1),
            "--scale-freeze-max" => cfg.scale_freeze_max = n().max(1),
            "--scale-state-max" => cfg.scale_state_max = n().max(1),
            "--scale-procs-max" => cfg.scale_procs_max = n().max(1),
            "--ops-n" => cfg.ops_n = n().max(1),
            "--ops-fds" => cfg.ops_fds = n(),
            "--ops-buffers" => cfg.ops_buffers = n(),
            "--timeout" => cfg.timeout = Duration::from_secs(n() as u64),
            "--pin" => cfg.pin = Some(n()),
            "--tput-secs" => cfg.tput_secs = v.parse().unwrap_or_else(|_| usage()),
            _ => usage(),
        }
    }
    for w in &only {
        if !WORKLOADS.contains(&w.as_str()) && !EXTRA_WORKLOADS.contains(&w.as_str()) {
            eprintln!("unknown workload {w}");
            usage();
        }
    }
    let selected: Vec<&str> = WORKLOADS
        .iter()
        .copied()
        .filter(|w| only.is_empty() || only.iter().any(|o| o == w))
        .chain(
            EXTRA_WORKLOADS
                .iter()
                .copied()
                .filter(|w| only.iter().any(|o| o == w)),
        )
        .collect();

    quiet_panics();
    cfg.print();
    if let Ok(c) = std::fs::read_to_string("/proc/cmdline") {
        note(&format!("cmdline: {}", c.trim()));
    }
    if profiling {
        if let Err(e) = profile::reset() {
            eprintln!("binder-bench: {e}");
            std::process::exit(2);
        }
    }
    let mut failed = 0;
    let mut hung: Option<&str> = None;
    for w in selected {
        if let Some(h) = hung {
            note(&format!(
                "{w}: not run, {h} hung before it (--bail-on-hang)"
            ));
            println!("SKIP: bench::{w}");
            continue;
        }
        let t = Instant::now();
        let out = run_isolated(cfg.timeout, || run(&cfg, w));
        let secs = t.elapsed().as_secs_f64();
        match out {
            Outcome::Pass => {
                note(&format!("{w}: {secs:.1} s"));
                println!("PASS: bench::{w}");
            }
            Outcome::Skip(m) => {
                note(&m);
                println!("SKIP: bench::{w}");
            }
            Outcome::Fail(m) => {
                if cfg.bail_on_hang && m.contains("(hang)") {
                    hung = Some(w);
                }
                note(&format!("{w}: {m} (after {secs:.1} s)"));
                println!("FAIL: bench::{w}");
                failed += 1;
            }
        }
        let _ = std::io::stdout().flush();
    }
    if profiling {
        if let Err(e) = profile::dump(3000) {
            note(&e);
            failed += 1;
        }
    }
    std::process::exit(if failed > 0 { 1 } else { 0 });
}
