//! What `--gc-affinity dynamic`'s load sampler costs: times the scan of every thread of every
//! process in `/proc` that the `concord-runq` thread does once per period (100 ms by
//! default), and prints the mean and worst scan, the threads seen, and the share of one CPU
//! the sampler takes at that period.
//!
//! `cargo run --release -p concord --example runq_scan_cost [SCANS]` (default 200 scans).

use std::path::Path;
use std::time::{Duration, Instant};

use concord::os::cpu::runnable::scan_threads;
use concord::os::cpu::DEFAULT_SAMPLE_PERIOD;

fn main() {
    let scans: u32 = match std::env::args().nth(1).map(|a| a.parse()) {
        None => 200,
        Some(Ok(n)) if n > 0 => n,
        Some(_) => {
            eprintln!("runq_scan_cost: SCANS must be a whole number above 0");
            std::process::exit(2);
        }
    };
    let mut times = Vec::with_capacity(scans as usize);
    let mut threads = 0;
    for _ in 0..scans {
        let start = Instant::now();
        match scan_threads(Path::new("/proc")) {
            Ok(seen) => threads = seen.len(),
            Err(e) => {
                eprintln!("runq_scan_cost: cannot list /proc: {e}");
                std::process::exit(1);
            }
        }
        times.push(start.elapsed());
    }
    let mean = times.iter().sum::<Duration>() / scans;
    let worst = times.iter().max().copied().unwrap_or_default();
    let share = mean.as_secs_f64() / DEFAULT_SAMPLE_PERIOD.as_secs_f64() * 100.0;
    println!(
        "{scans} scans of {threads} threads: mean {:.0} us, worst {:.0} us; at one scan per {} ms \
         the sampler takes {share:.2} % of one CPU",
        mean.as_secs_f64() * 1e6,
        worst.as_secs_f64() * 1e6,
        DEFAULT_SAMPLE_PERIOD.as_millis()
    );
}
