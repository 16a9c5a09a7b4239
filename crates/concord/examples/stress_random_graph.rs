//! The random-graph stress campaign (see `tests/stress_graph/mod.rs`): seeds S, S+1, … for N
//! seconds, each a random configuration with random mutator graphs compared with a shadow
//! model after every collection, and an out-of-memory probe. Prints one line per seed and the
//! totals; a failing seed panics with the command that reproduces it.
//!
//! ```text
//! cargo run -p concord --profile stress --example stress_random_graph -- --seconds 600 --seed 1
//! ```
//!
//! The `stress` profile is `release` with debug assertions and overflow checks, so misaligned
//! pointers and arithmetic overflow in the collector stop the run.

#[path = "../tests/stress_graph/mod.rs"]
mod stress_graph;

use std::process::ExitCode;
use std::time::Instant;

use stress_graph::{campaign, LONG};

const USAGE: &str = "usage: stress_random_graph [--seconds N] [--seed S]
  --seconds N  run seeds for N seconds, at least one seed (default 60)
  --seed S     the first seed (default 1)";

/// `--seconds` and `--seed` from the command line.
fn parse_args(args: impl Iterator<Item = String>) -> Result<(u64, u64), String> {
    let (mut seconds, mut seed) = (60, 1);
    let mut args = args.peekable();
    while let Some(flag) = args.next() {
        let target = match flag.as_str() {
            "--seconds" => &mut seconds,
            "--seed" => &mut seed,
            "-h" | "--help" => return Err(String::new()),
            other => return Err(format!("unknown argument '{other}'")),
        };
        let value = args
            .next()
            .ok_or_else(|| format!("{flag} needs a value (a whole number)"))?;
        *target = value
            .parse()
            .map_err(|_| format!("{flag}: '{value}' is not a whole number"))?;
    }
    Ok((seconds, seed))
}

fn main() -> ExitCode {
    let (seconds, first) = match parse_args(std::env::args().skip(1)) {
        Ok(parsed) => parsed,
        Err(message) if message.is_empty() => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Err(message) => {
            eprintln!("stress_random_graph: {message}\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    let start = Instant::now();
    println!(
        "random-graph stress: seeds from {first} for {seconds} s (debug assertions {})",
        if cfg!(debug_assertions) { "on" } else { "OFF" }
    );
    let reports = campaign(first, seconds, LONG, |seed, flags, report| {
        println!(
            "seed {seed} [{:.0} s]: {flags}\n  {report}",
            start.elapsed().as_secs_f64()
        );
    });
    let sum = |f: fn(&stress_graph::Report) -> usize| reports.iter().map(f).sum::<usize>();
    println!(
        "seeds {first}..={}: {} young + {} full collections ({} promotion failures), {} graph \
         checks of {} nodes, {} steps, {} out-of-memory probes ({} GC overhead limit errors), \
         no mismatch, {:.0} s",
        first + reports.len() as u64 - 1,
        sum(|r| r.young),
        sum(|r| r.full),
        sum(|r| r.promotion_failures),
        sum(|r| r.graph_checks),
        sum(|r| r.nodes_checked),
        sum(|r| r.steps),
        reports.len(),
        sum(|r| r.overhead_limit_errors),
        start.elapsed().as_secs_f64()
    );
    ExitCode::SUCCESS
}
