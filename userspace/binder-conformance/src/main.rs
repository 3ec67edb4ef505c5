//! binder-conformance: the userspace conformance suite for Linux binder drivers.
//!
//! Prints one `PASS: area::case`, `FAIL: area::case` or `SKIP: area::case` line per test;
//! a FAIL or SKIP is preceded by a `# reason` line. Exit status is nonzero on any FAIL.

mod common;
mod tests;

use binder_uapi::harness::{quiet_panics, run_isolated, Outcome};
use binder_uapi::TResult;
use std::io::Write;
use std::time::Duration;

/// What a test gets: a fresh binderfs device of its own.
pub struct Ctx {
    /// Path of the test's binder device.
    pub dev: String,
    /// binderfs mount point holding `dev` and `binder-control`.
    pub mnt: String,
    /// Per-test timeout (tests with internal waits size them below this).
    pub timeout: Duration,
}

/// One test case.
pub struct Test {
    pub name: &'static str,
    pub f: fn(&Ctx) -> TResult,
}

fn usage() -> ! {
    eprintln!("usage: binder-conformance [--list] [--timeout SECS] [--shuffle SEED] [FILTER]");
    std::process::exit(2);
}

/// One splitmix64 step: a seeded, architecture-independent stream (the same
/// order on the 64-bit and the 32-bit build), no external crates.
fn splitmix(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Fisher-Yates with splitmix64: the order that `--shuffle seed` runs `v` in.
fn shuffle<T>(v: &mut [T], seed: u64) {
    let mut s = seed;
    for i in (1..v.len()).rev() {
        let j = (splitmix(&mut s) % (i as u64 + 1)) as usize;
        v.swap(i, j);
    }
}

fn main() {
    let mut list = false;
    // The per-test timeout: --timeout, else BINDER_CONFORMANCE_TIMEOUT (the harness sets
    // it when kmemleak slows the kernel down), else 20 s.
    let mut timeout = std::env::var("BINDER_CONFORMANCE_TIMEOUT")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20u64);
    let mut filter: Option<String> = None;
    let mut seed: Option<u64> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--list" => list = true,
            "--timeout" => {
                timeout = match args.next().and_then(|v| v.parse().ok()) {
                    Some(t) => t,
                    None => usage(),
                }
            }
            "--shuffle" => {
                seed = match args.next().and_then(|v| v.parse().ok()) {
                    Some(s) => Some(s),
                    None => usage(),
                }
            }
            "-h" | "--help" => usage(),
            s if s.starts_with('-') => usage(),
            s => filter = Some(s.to_string()),
        }
    }
    // Without a FILTER argument, BINDER_CONFORMANCE_FILTER selects (the harness passes it
    // with `scripts/qemu-run --env`). Either is one substring or several separated by
    // commas: a test runs if its name contains any of them.
    if filter.is_none() {
        filter = std::env::var("BINDER_CONFORMANCE_FILTER")
            .ok()
            .filter(|f| !f.is_empty());
    }
    let parts: Vec<&str> = filter
        .as_deref()
        .map(|f| f.split(',').filter(|s| !s.is_empty()).collect())
        .unwrap_or_default();
    let all = tests::all();
    let mut selected: Vec<&Test> = all
        .iter()
        .filter(|t| parts.is_empty() || parts.iter().any(|s| t.name.contains(s)))
        .collect();
    // A shuffled order (scripts/soak) finds tests that pass only after, or
    // fail only after, another test: the seed is printed, and the same seed
    // and filter give the same order again.
    if let Some(seed) = seed {
        shuffle(&mut selected, seed);
    }
    if list {
        for t in &selected {
            println!("{}", t.name);
        }
        return;
    }
    quiet_panics();
    let mnt = binder_uapi::binderfs::mount_point();
    let pid = std::process::id();
    let (mut pass, mut fail, mut skipped) = (0, 0, 0);
    // A wedged driver makes every test hang: after 3 timeouts in a row, give further
    // tests 5 s each (until one finishes in time) so the whole run stays within the
    // ptest runner's budget and still reports every test.
    let mut consecutive_timeouts = 0;
    if let Some(seed) = seed {
        println!(
            "# order: shuffled with seed {seed} (binder-conformance --shuffle {seed}{}{})",
            if filter.is_some() { " " } else { "" },
            filter.as_deref().unwrap_or("")
        );
    }
    let out = std::io::stdout();
    for (i, t) in selected.iter().enumerate() {
        let name = format!("bct{pid}-{i}");
        let outcome = match binder_uapi::binderfs::Device::create(&mnt, &name) {
            Err(e) => Outcome::Fail(format!(
                "cannot create binderfs device {mnt}/{name} via binder-control: {e}"
            )),
            Ok(devnode) => {
                let secs = if consecutive_timeouts >= 3 {
                    timeout.min(5)
                } else {
                    timeout
                };
                let ctx = Ctx {
                    dev: devnode.path(),
                    mnt: mnt.clone(),
                    timeout: Duration::from_secs(secs),
                };
                let o = run_isolated(Duration::from_secs(secs), || (t.f)(&ctx));
                drop(devnode);
                match &o {
                    Outcome::Fail(m) if m.starts_with("timed out") => consecutive_timeouts += 1,
                    _ => consecutive_timeouts = 0,
                }
                if consecutive_timeouts == 3 && secs > 5 {
                    println!("# 3 tests in a row timed out: 5 s per test from now on");
                }
                o
            }
        };
        let mut o = out.lock();
        match outcome {
            Outcome::Pass => {
                pass += 1;
                let _ = writeln!(o, "PASS: {}", t.name);
            }
            Outcome::Fail(m) => {
                fail += 1;
                for l in m.lines() {
                    let _ = writeln!(o, "# {l}");
                }
                let _ = writeln!(o, "FAIL: {}", t.name);
            }
            Outcome::Skip(m) => {
                skipped += 1;
                for l in m.lines() {
                    let _ = writeln!(o, "# {l}");
                }
                let _ = writeln!(o, "SKIP: {}", t.name);
            }
        }
        let _ = o.flush();
    }
    println!("# {pass} passed, {fail} failed, {skipped} skipped");
    if fail > 0 {
        std::process::exit(1);
    }
}
