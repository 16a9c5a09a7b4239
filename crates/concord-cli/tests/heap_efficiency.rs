//! Heap efficiency (issue 13): success must be monotonic in heap size. A heap that lets a
//! workload complete must not be followed by a larger one that runs out of memory, as happened
//! when a full collection moved a space's live data into old only if all of it fitted
//! (binary-trees 18 completed at 31 and 33 MiB and ran out of memory at 32 and 34 MiB). The
//! sweeps run `concord run binary-trees` upwards through heap sizes and fail on any
//! out-of-memory above the first success; binary-trees 18 must also complete at 28 MiB, the
//! heap HotSpot 17's Parallel GC needs. Every run must end, in success or out of memory,
//! within a time limit: the old split did not always give up, it could thrash in one full
//! collection per allocation for minutes.

mod common;

use std::io::Read;
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

use common::{command, stdout_json, text};

/// Smallest heap of the sweep, KiB: binary-trees 16 runs out of memory here.
const SWEEP_FROM_KIB: usize = 5 * 1024;
/// Largest heap of the sweep, KiB: about twice what binary-trees 16 needs.
const SWEEP_TO_KIB: usize = 12 * 1024;
/// Step of the sweep, KiB: binary-trees 16's live set is a quarter of depth 18's, so 256 KiB
/// here is 1 MiB at depth 18, the step at which the old split failed (32 and 34 MiB).
const SWEEP_STEP_KIB: usize = 256;
/// binary-trees 16 must complete from this heap on (KiB): a quarter of the 28 MiB that
/// binary-trees 18 needs on HotSpot (it completes from 6656 KiB when measured).
const DEPTH_16_NEEDS_AT_MOST_KIB: usize = 7 * 1024;

/// How long one binary-trees 16 run may take (it takes under a second when it works or runs
/// out of memory; the old split thrashed for minutes).
const DEPTH_16_TIME_LIMIT: Duration = Duration::from_secs(30);
/// How long one binary-trees 18 run may take (about 3 s in 28 MiB).
const DEPTH_18_TIME_LIMIT: Duration = Duration::from_secs(120);

/// Runs `concord ARGS` to its end; the test fails if that takes longer than `limit` (the child
/// is killed first).
fn concord_within(args: &[&str], limit: Duration) -> Output {
    let mut child = command(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the concord binary runs");
    let drain = |mut pipe: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            pipe.read_to_end(&mut bytes).expect("a pipe from concord");
            bytes
        })
    };
    let stdout = drain(Box::new(child.stdout.take().unwrap()));
    let stderr = drain(Box::new(child.stderr.take().unwrap()));
    let deadline = Instant::now() + limit;
    let status = loop {
        if let Some(status) = child.try_wait().expect("waiting for concord") {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().expect("killing concord");
            child.wait().expect("reaping concord");
            panic!("{args:?} neither completed nor ran out of memory within {limit:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// Runs binary-trees `depth` with a `heap_kib` heap; `Ok(())` if it completed with the right
/// checksum, `Err(stderr)` if it ran out of memory. Anything else (a panic, bad input, a wrong
/// checksum, a run longer than the depth's time limit) fails the test at once.
fn run_binary_trees(depth: &str, heap_kib: usize, preset: &str) -> Result<(), String> {
    let limit = if depth == "18" {
        DEPTH_18_TIME_LIMIT
    } else {
        DEPTH_16_TIME_LIMIT
    };
    let heap = format!("{heap_kib}k");
    let args = [
        "run",
        "binary-trees",
        depth,
        "--heap",
        &heap,
        "--preset",
        preset,
        "--json",
    ];
    let out = concord_within(&args, limit);
    let stderr = text(&out.stderr);
    match out.status.code() {
        Some(0) => {
            let summary = stdout_json(&out);
            assert_eq!(
                summary["checksum_ok"], true,
                "{args:?}: wrong checksum: {summary}"
            );
            Ok(())
        }
        Some(1) if stderr.contains("out of memory") => Err(stderr),
        _ => panic!(
            "{args:?}: neither success nor out of memory ({}): {stderr}",
            out.status
        ),
    }
}

/// Sweeps binary-trees 16 upwards with `preset`: every heap above the first that completes
/// must complete, the first must be at most [`DEPTH_16_NEEDS_AT_MOST_KIB`], and the sweep's
/// smallest heap must run out of memory (so the sweep really starts below the threshold).
fn sweep_is_monotonic(preset: &str) {
    let mut first_success = None;
    let mut failures_above = Vec::new();
    let mut outcomes = Vec::new();
    for heap_kib in (SWEEP_FROM_KIB..=SWEEP_TO_KIB).step_by(SWEEP_STEP_KIB) {
        let result = run_binary_trees("16", heap_kib, preset);
        outcomes.push(format!(
            "{heap_kib}k {}",
            if result.is_ok() { "ok" } else { "oom" }
        ));
        match (&result, first_success) {
            (Ok(()), None) => first_success = Some(heap_kib),
            (Err(stderr), Some(_)) => failures_above.push(format!("{heap_kib}k: {stderr}")),
            _ => {}
        }
    }
    let outcomes = outcomes.join(", ");
    let first = first_success
        .unwrap_or_else(|| panic!("{preset}: binary-trees 16 never completed: {outcomes}"));
    assert!(
        first > SWEEP_FROM_KIB,
        "{preset}: the sweep must start below the smallest heap that works: {outcomes}"
    );
    assert!(
        failures_above.is_empty(),
        "{preset}: out of memory above the first success ({first}k), so success is not \
         monotonic in heap size: {outcomes}\n{}",
        failures_above.join("\n")
    );
    assert!(
        first <= DEPTH_16_NEEDS_AT_MOST_KIB,
        "{preset}: binary-trees 16 first completed at {first}k, more than \
         {DEPTH_16_NEEDS_AT_MOST_KIB}k: {outcomes}"
    );
}

#[test]
fn binary_trees_16_success_is_monotonic_in_heap_size() {
    sweep_is_monotonic("optimized");
}

#[test]
fn binary_trees_16_success_is_monotonic_in_heap_size_vanilla() {
    sweep_is_monotonic("vanilla");
}

/// The goal: binary-trees 18 (a 24 MiB live set) completes in HotSpot's 28 MiB.
#[test]
fn binary_trees_18_completes_in_28_mib() {
    for preset in ["optimized", "vanilla"] {
        if let Err(stderr) = run_binary_trees("18", 28 * 1024, preset) {
            panic!("{preset}: binary-trees 18 ran out of memory in 28 MiB: {stderr}");
        }
    }
}
