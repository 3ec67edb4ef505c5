//! binder-fuzz: a seeded, reproducible multi-process fuzzer for Linux binder drivers,
//! regression tests for the known binder bug patterns, and allocation-failure tests.
//!
//!   binder-fuzz [all|fuzz|regress|fault|load] [--seed N] [--seconds N] [--ioctls N]
//!               [--iterations N] [--procs N] [--threads N] [--round-ms N] [--round R] [--filter S]
//!
//! Prints ptest lines (`PASS: fuzz::<case>`, `FAIL: regress::<case>`, `fault::<case>`, ...) with `# `
//! comment lines, the seed of the run, and on a fuzz failure the seed and round that
//! replay it (`--seed S --round R`). Exit status 1 on any FAIL. Fuzz rounds go on
//! until `--ioctls` ioctls or `--seconds` seconds, whichever comes first (60 s when
//! neither nor `--iterations` is given).

mod fault;
mod fuzz;
mod load;
mod peer;
mod regress;
mod rng;
mod sys;

use std::io::Write;

fn usage() -> ! {
    eprintln!(
        "usage: binder-fuzz [all|fuzz|regress|fault|load] [--seed N] [--seconds N] [--ioctls N] [--iterations N] \
         [--procs N] [--threads N] [--round-ms N] [--round R] [--filter S] [--load-seconds N] \
         [--list]"
    );
    std::process::exit(2);
}

/// Prints ptest lines and counts failures.
pub struct Report {
    pub failed: u32,
    pub passed: u32,
}

impl Report {
    pub fn comment(&mut self, s: &str) {
        let out = std::io::stdout();
        let mut o = out.lock();
        for l in s.lines() {
            let _ = writeln!(o, "# {l}");
        }
        let _ = o.flush();
    }
    pub fn result(&mut self, name: &str, fails: &[String]) {
        let out = std::io::stdout();
        let mut o = out.lock();
        if fails.is_empty() {
            self.passed += 1;
            let _ = writeln!(o, "PASS: {name}");
        } else {
            self.failed += 1;
            for f in fails.iter().take(5) {
                for l in f.lines() {
                    let _ = writeln!(o, "# {l}");
                }
            }
            if fails.len() > 5 {
                let _ = writeln!(o, "# ... and {} more", fails.len() - 5);
            }
            let _ = writeln!(o, "FAIL: {name}");
        }
        let _ = o.flush();
    }
    pub fn skip(&mut self, name: &str, why: &str) {
        self.comment(why);
        println!("SKIP: {name}");
    }
}

fn parse<T: std::str::FromStr>(v: Option<String>) -> T {
    match v.and_then(|s| s.parse().ok()) {
        Some(x) => x,
        None => usage(),
    }
}

fn main() {
    let mut what = "all".to_string();
    let mut seed: Option<u64> = None;
    let mut seconds: Option<u64> = None;
    let mut ioctls: Option<u64> = None;
    let mut rounds: Option<u64> = None;
    let mut procs = 4usize;
    let mut threads = 3usize;
    let mut round_ms = 3000u64;
    let mut only_round: Option<u64> = None;
    let mut filter: Option<String> = None;
    let mut list = false;
    let mut load_seconds = 15u64;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "all" | "fuzz" | "regress" | "fault" | "load" => what = a.clone(),
            "--load-seconds" => load_seconds = parse(args.next()),
            "--seed" => seed = Some(parse(args.next())),
            "--seconds" => seconds = Some(parse(args.next())),
            "--ioctls" => ioctls = Some(parse(args.next())),
            "--iterations" => rounds = Some(parse(args.next())),
            "--procs" => procs = parse(args.next()),
            "--threads" => threads = parse(args.next()),
            "--round-ms" => round_ms = parse(args.next()),
            "--round" => only_round = Some(parse(args.next())),
            "--filter" => filter = Some(parse(args.next())),
            "--list" => list = true,
            _ => usage(),
        }
    }
    if list {
        for (n, _) in regress::all() {
            println!("regress::{n}");
        }
        for (n, _) in fault::all() {
            println!("fault::{n}");
        }
        return;
    }
    let seed = seed.unwrap_or_else(|| {
        let mut ts = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: valid timespec.
        unsafe { libc::clock_gettime(libc::CLOCK_REALTIME, &mut ts) };
        rng::splitmix(ts.tv_sec as u64 ^ ((ts.tv_nsec as u64) << 20) ^ std::process::id() as u64)
            & 0xffff_ffff
    });
    if seconds.is_none() && ioctls.is_none() && rounds.is_none() && only_round.is_none() {
        seconds = Some(60);
    }
    sys::shared_init();

    let mut rep = Report {
        failed: 0,
        passed: 0,
    };
    let fs = sys::Fs::setup();
    rep.comment(&format!(
        "binder-fuzz seed={seed} mode={what} binderfs={} logs={}",
        fs.mnt,
        fs.logs.as_deref().unwrap_or("none")
    ));
    if what == "all" || what == "regress" {
        regress::run(&fs, filter.as_deref(), &mut rep);
    }
    if what == "all" || what == "fault" {
        regress::run_group("fault", "ft", fault::all(), &fs, filter.as_deref(), &mut rep);
    }
    if what == "all" || what == "load" {
        load::run(&fs, load_seconds, &mut rep);
    }
    if what == "all" || what == "fuzz" {
        let cfg = fuzz::Config {
            seed,
            rounds,
            seconds,
            ioctls,
            procs: procs.clamp(2, sys::MAX_PEERS),
            threads: threads.max(1),
            round_ms: round_ms.max(200),
            only_round,
        };
        rep.comment(&format!(
            "fuzz: seed={seed} {} procs<={} threads<={} round<={} ms",
            match (only_round, rounds, seconds) {
                (Some(r), _, _) => format!("replaying round {r}"),
                (None, Some(n), _) => format!("{n} rounds"),
                (None, None, _) => match (ioctls, seconds) {
                    (Some(n), Some(s)) => format!("until {n} ioctls (at most {s} s)"),
                    (Some(n), None) => format!("until {n} ioctls"),
                    (None, Some(s)) => format!("{s} s"),
                    (None, None) => String::new(),
                },
            },
            cfg.procs,
            cfg.threads,
            cfg.round_ms
        ));
        let mut v = fuzz::Verdicts::default();
        let start_ioctls = sys::ioctl_count();
        {
            let mut log = |s: &str| {
                println!("# {s}");
                let _ = std::io::stdout().flush();
            };
            fuzz::run(&cfg, &fs, &mut v, &mut log);
        }
        rep.result("fuzz::no_process_stuck", &v.stuck);
        rep.result("fuzz::peers_exit_clean", &v.peers);
        rep.result("fuzz::ping_after_round", &v.ping);
        match &v.counts_skipped {
            Some(why) => rep.skip("fuzz::counts_back_to_baseline", why),
            None => rep.result("fuzz::counts_back_to_baseline", &v.counts),
        }
        rep.result("fuzz::no_dead_node_leak", &v.leaks);
        rep.comment(&v.mem_note);
        rep.result("fuzz::memory_back_to_baseline", &v.memory);
        if let Some(r) = v.first_failed_round {
            rep.comment(&format!(
                "replay the first failing round: binder-fuzz fuzz --seed {seed} --round {r} \
                 --procs {} --threads {} --round-ms {}",
                cfg.procs, cfg.threads, cfg.round_ms
            ));
        }
        let n = sys::ioctl_count() - start_ioctls;
        rep.comment(&format!(
            "fuzz rounds={} transactions={}",
            v.rounds,
            sys::shared()
                .txns
                .load(std::sync::atomic::Ordering::Relaxed)
        ));
        println!("# ioctls={n} seed={seed}");
    }
    println!(
        "# binder-fuzz: {} passed, {} failed (seed={seed}, ioctls total={})",
        rep.passed,
        rep.failed,
        sys::ioctl_count()
    );
    let _ = std::io::stdout().flush();
    drop(fs);
    if rep.failed > 0 {
        std::process::exit(1);
    }
}
