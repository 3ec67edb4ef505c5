//! `--profile`: the kernel's own profiler around the selected workloads.
//!
//! With `CONFIG_PROFILING` and `profile=N` on the kernel command line, `/proc/profile` counts
//! the timer ticks that hit each `1 << N`-byte bucket of the kernel text. binder-bench resets
//! it before the workloads and prints the non-zero buckets after them, largest first, as
//! `PROFILE <bucket> <ticks>` lines after a `PROFILE step <bytes>` line;
//! `scripts/lib/profile_report.py` names them from `System.map`.

use std::io::Read;

const PROC_PROFILE: &str = "/proc/profile";

/// Zeroes the counters (any write does).
pub fn reset() -> Result<(), String> {
    std::fs::write(PROC_PROFILE, b"0").map_err(|e| {
        format!(
            "{PROC_PROFILE}: {e} (--profile needs a kernel with CONFIG_PROFILING booted with profile=2)"
        )
    })
}

/// Prints the `most` largest buckets.
pub fn dump(most: usize) -> Result<(), String> {
    let mut raw = Vec::new();
    std::fs::File::open(PROC_PROFILE)
        .and_then(|mut f| f.read_to_end(&mut raw))
        .map_err(|e| format!("{PROC_PROFILE}: {e}"))?;
    // The first word is the bucket size in bytes, then one counter per bucket.
    let words: Vec<u32> = raw
        .chunks_exact(4)
        .map(|c| u32::from_ne_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let Some((&step, counts)) = words.split_first() else {
        return Err(format!("{PROC_PROFILE} is empty"));
    };
    let mut hits: Vec<(usize, u32)> = counts
        .iter()
        .copied()
        .enumerate()
        .filter(|&(_, n)| n != 0)
        .collect();
    hits.sort_by(|a, b| b.1.cmp(&a.1));
    let total: u64 = hits.iter().map(|&(_, n)| u64::from(n)).sum();
    println!("PROFILE step {step}");
    println!("PROFILE total {total} buckets {}", hits.len());
    for (bucket, n) in hits.into_iter().take(most) {
        println!("PROFILE {bucket} {n}");
    }
    Ok(())
}
