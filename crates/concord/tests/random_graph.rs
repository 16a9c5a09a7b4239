//! The random-graph stress test against the public API (see `stress_graph/mod.rs`): several
//! mutators mutate random object graphs on tiny heaps under random configurations, compared
//! with a plain-Rust shadow after every collection, with an out-of-memory probe in each run.
//!
//! - `random_graph_short` (in the suite): a few seeds, a few seconds. With `RANDOM_GRAPH_SEED=S`
//!   it runs seed S only (a failure prints its seed and the command to reproduce it).
//! - `random_graph_long` (`--ignored`): seeds from `RANDOM_GRAPH_SEED` (default 1) for
//!   `RANDOM_GRAPH_SECONDS` (default 300), each ten times longer. The example
//!   `stress_random_graph` runs the same campaign with `--seconds N --seed S`, best built with
//!   `--profile stress` (optimised, with debug assertions and overflow checks).

mod stress_graph;

use std::time::Duration;

use stress_graph::{campaign, run_seed_watched, Scale, LONG, SEED_VAR, SHORT};

/// Seeds of the short run (each with its own configuration and thread count).
const SHORT_SEEDS: u64 = 6;

fn seed_from_env() -> Option<u64> {
    let text = std::env::var(SEED_VAR).ok()?;
    Some(
        text.trim()
            .parse()
            .unwrap_or_else(|_| panic!("{SEED_VAR}={text:?} is not a seed (a whole number)")),
    )
}

fn run_and_print(seed: u64, scale: Scale) {
    let (flags, report) = run_seed_watched(seed, scale, Duration::from_secs(600));
    eprintln!("seed {seed}: {flags}\n  {report}");
}

#[test]
fn random_graph_short() {
    match seed_from_env() {
        Some(seed) => run_and_print(seed, SHORT),
        None => (1..=SHORT_SEEDS).for_each(|seed| run_and_print(seed, SHORT)),
    }
}

#[test]
#[ignore = "minutes long: the stress campaign (RANDOM_GRAPH_SECONDS, default 300)"]
fn random_graph_long() {
    let seconds = std::env::var("RANDOM_GRAPH_SECONDS")
        .map(|s| {
            s.trim()
                .parse()
                .expect("RANDOM_GRAPH_SECONDS: a number of seconds")
        })
        .unwrap_or(300);
    let first = seed_from_env().unwrap_or(1);
    let reports = campaign(first, seconds, LONG, |seed, flags, report| {
        eprintln!("seed {seed}: {flags}\n  {report}")
    });
    let collections: usize = reports.iter().map(|r| r.young + r.full).sum();
    eprintln!(
        "{} seeds, {collections} collections, no mismatch",
        reports.len()
    );
}
