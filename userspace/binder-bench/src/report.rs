//! Figures and their machine-readable lines.

use std::io::Write;

/// Lower or higher is better.
#[derive(Clone, Copy)]
pub enum Better {
    Lower,
    Higher,
}

/// Print one `BENCH: {...}` line.
pub fn figure(workload: &str, metric: &str, unit: &str, better: Better, value: f64) {
    let b = match better {
        Better::Lower => "lower",
        Better::Higher => "higher",
    };
    let v = if value.is_finite() { value } else { -1.0 };
    println!(
        "BENCH: {{\"workload\":\"{workload}\",\"metric\":\"{metric}\",\"unit\":\"{unit}\",\"better\":\"{b}\",\"value\":{v:.3}}}"
    );
    let _ = std::io::stdout().flush();
}

/// A comment line (ignored by parsers, read by people).
pub fn note(msg: &str) {
    println!("# {msg}");
    let _ = std::io::stdout().flush();
}

/// Latency samples in nanoseconds.
pub struct Samples(pub Vec<u32>);

impl Samples {
    pub fn with_capacity(n: usize) -> Samples {
        Samples(Vec::with_capacity(n))
    }
    pub fn push_ns(&mut self, ns: u128) {
        self.0.push(ns.min(u32::MAX as u128) as u32);
    }
    /// Sort and report p50/p99/p99.9 (and the mean) in microseconds, and the quartiles p25 and
    /// p75: under TCG a round trip falls into one of two groups about 2 us apart (on both
    /// drivers), and where a driver has close to half of its samples in each, the median lands
    /// in one group or the other from one build to the next. The quartiles show both groups
    /// where each holds more than a quarter of the samples; the mean weighs the two.
    pub fn report(mut self, workload: &str, tails: bool) {
        if self.0.is_empty() {
            return;
        }
        self.0.sort_unstable();
        let n = self.0.len();
        let pct = |p: f64| -> f64 {
            let i = ((p / 100.0) * n as f64).ceil() as usize;
            self.0[i.clamp(1, n) - 1] as f64 / 1000.0
        };
        let mean = self.0.iter().map(|&x| x as f64).sum::<f64>() / n as f64 / 1000.0;
        figure(workload, "p50", "us", Better::Lower, pct(50.0));
        figure(workload, "p25", "us", Better::Lower, pct(25.0));
        figure(workload, "p75", "us", Better::Lower, pct(75.0));
        if tails {
            figure(workload, "p99", "us", Better::Lower, pct(99.0));
            figure(workload, "p99.9", "us", Better::Lower, pct(99.9));
        }
        figure(workload, "mean", "us", Better::Lower, mean);
        note(&format!("{workload}: {n} samples"));
    }

    /// [`Samples::report`] with the tails and the worst sample (`max`), for the workloads whose
    /// reader picks a driver by its worst case.
    pub fn report_with_max(self, workload: &str) {
        let max = self.0.iter().copied().max().unwrap_or(0) as f64 / 1000.0;
        self.report(workload, true);
        figure(workload, "max", "us", Better::Lower, max);
    }
}
