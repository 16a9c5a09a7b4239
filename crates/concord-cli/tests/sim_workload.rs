//! `concord sim WORKLOAD` end to end: every bad flag, an unreadable, cut, damaged or empty
//! trace, a bad costs file and an output that would replace the trace exit 2 before anything
//! runs, naming what was wrong and what is allowed; a good command line passes the check;
//! `concord sim calibrate` keeps its own flags; a recorded trace replays on a simulated
//! machine into `run`'s records and summary plus `sim`, the same seed giving the same records
//! byte for byte, and busy loops on the workers' CPU make them wait.

mod common;

use common::{assert_exit_2, command, concord, scratch, text};

/// A real trace of a small run (young and full collections), written by `concord run`.
fn recorded_trace(dir: &std::path::Path) -> std::path::PathBuf {
    let trace = dir.join("run.trace");
    let o = concord(&[
        "run",
        "binary-trees",
        "12",
        "--heap",
        "4m",
        "--gc-trace",
        trace.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    trace
}

#[test]
fn bad_machine_scheduler_load_and_seed_flags_exit_2_naming_what_is_allowed() {
    for (args, expected) in [
        (
            &["sim", "gcbench"][..],
            "no machine given; use --cpus N (with --smt on|off, --nodes K) or --machine NAME \
             (allowed: xeon-2x10, magny-cours-48)",
        ),
        (&["sim", "--cpus", "0"], "--cpus"),
        (&["sim", "--cpus", "many"], "--cpus `many`"),
        (&["sim", "--cpus", "300"], "allowed: 1 to 256"),
        (&["sim", "--cpus", "10", "--nodes", "4"], "multiple of 4"),
        (
            &["sim", "--machine", "cray-1"],
            "unknown machine `cray-1`; allowed: xeon-2x10, magny-cours-48",
        ),
        (
            &["sim", "--machine", "magny-cours-48", "--smt", "on"],
            "has no SMT",
        ),
        (&["sim", "--cpus", "4", "--smt", "yes"], "allowed: on, off"),
        (
            &["sim", "--cpus", "4", "--sched", "bfs"],
            "--sched: 'bfs' is not a scheduler model (allowed: cfs, eevdf)",
        ),
        (
            &["sim", "--cpus", "4", "--wake-placement", "spread"],
            "--wake-placement: 'spread' is not a wake-up placement (allowed: default, pack)",
        ),
        (
            &["sim", "--cpus", "4", "--load", "spin:2"],
            "--load: 'spin:2' is not an interference load (allowed: busy:K",
        ),
        (&["sim", "--cpus", "4", "--load", "busy:0"], "K in 1..=1024"),
        (
            &["sim", "--cpus", "4", "--load", "busy:1@4"],
            "--load: CPU 4 is not a CPU of the simulated machine (allowed: 0..=3)",
        ),
        (
            &["sim", "--cpus", "4", "--seed", "-1"],
            "--seed: '-1': invalid digit",
        ),
        (
            &["sim", "--cpus", "4", "--interfere", "busy:1"],
            "--interfere cannot be used with concord sim",
        ),
        (
            &["sim", "--cpus", "4", "--preset", "fastest"],
            "--preset: 'fastest'",
        ),
        (
            &["sim", "nosuchload", "--cpus", "4"],
            "unknown workload 'nosuchload' (allowed: gcbench, binary-trees, search, transform, \
             render, database, kmeans, kv-service, queue-churn); or a subcommand of concord sim \
             (allowed: calibrate, validate)",
        ),
    ] {
        assert_exit_2(args, expected);
    }
}

#[test]
fn an_unreadable_cut_damaged_or_empty_trace_exits_2() {
    let dir = scratch("sim-workload-traces");
    let trace = recorded_trace(&dir);
    let bytes = std::fs::read(&trace).unwrap();
    let cut = dir.join("cut.trace");
    std::fs::write(&cut, &bytes[..bytes.len() / 2]).unwrap();
    let damaged = dir.join("damaged.trace");
    let mut d = bytes.clone();
    d[0] = b'X';
    std::fs::write(&damaged, &d).unwrap();
    let empty = dir.join("empty.trace");
    std::fs::write(&empty, b"CGCTRACE\x01\x00").unwrap();
    let missing = dir.join("missing.trace");
    let path = |p: &std::path::Path| p.to_str().unwrap().to_string();
    for (file, expected) in [
        (
            path(&missing),
            "cannot open it: No such file or directory".to_string(),
        ),
        (
            path(&cut),
            "the GC trace is truncated after GC(".to_string(),
        ),
        (
            path(&damaged),
            "not a GC trace (no CGCTRACE header)".to_string(),
        ),
        (path(&empty), "it holds no collection".to_string()),
        (
            path(&dir),
            "reading the GC trace failed: Is a directory".to_string(),
        ),
    ] {
        assert_exit_2(
            &["sim", "binary-trees", "12", "--cpus", "4", "--trace", &file],
            &format!("--trace {file}: {expected}"),
        );
    }
    // The records may not replace the trace they come from.
    assert_exit_2(
        &[
            "sim",
            "--cpus",
            "4",
            "--trace",
            &path(&trace),
            "--gc-records",
            &path(&trace),
        ],
        "names the same file as --trace",
    );
    assert_eq!(
        std::fs::read(&trace).unwrap(),
        bytes,
        "the trace is untouched"
    );
    let costs = dir.join("costs.json");
    std::fs::write(&costs, "not json").unwrap();
    assert_exit_2(
        &[
            "sim",
            "--cpus",
            "4",
            "--trace",
            &path(&trace),
            "--costs",
            &path(&costs),
        ],
        "--costs: ",
    );
}

#[test]
fn a_good_command_line_passes_the_check_and_calibrate_keeps_its_flags() {
    let dir = scratch("sim-workload-check");
    let trace = recorded_trace(&dir);
    let records = dir.join("records.jsonl");
    let o = command(&[
        "sim",
        "binary-trees",
        "12",
        "--machine",
        "xeon-2x10",
        "--preset",
        "vanilla",
        "--gc-threads",
        "15",
        "--mutators",
        "16",
        "--sched",
        "eevdf",
        "--seed",
        "3",
        "--trace",
        trace.to_str().unwrap(),
        "--gc-records",
        records.to_str().unwrap(),
        "--json",
    ])
    .env("CONCORD_CHECK_ARGS", "1")
    .output()
    .unwrap();
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("arguments checked (configuration, machine, costs and trace checked)"),
        "{stderr}"
    );
    assert!(!records.exists(), "nothing is written by a check");
    // The workload's flags are not calibrate's.
    let o = concord(&["sim", "calibrate", "--cpus", "4"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(text(&o.stderr).contains("unexpected argument '--cpus'"));
}

/// Simulates `trace` on 4 CPUs with 4 GC threads and `extra` flags; returns the summary JSON
/// and the records file's text.
fn simulate(
    dir: &std::path::Path,
    trace: &std::path::Path,
    name: &str,
    extra: &[&str],
) -> (serde_json::Value, String) {
    let records = dir.join(format!("{name}.jsonl"));
    let mut args = vec![
        "sim",
        "binary-trees",
        "12",
        "--cpus",
        "4",
        "--gc-threads",
        "4",
        "--mutators",
        "2",
        "--preset",
        "vanilla",
        "--trace",
        trace.to_str().unwrap(),
        "--gc-records",
        records.to_str().unwrap(),
        "--json",
    ];
    args.extend_from_slice(extra);
    let o = concord(&args);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let json: serde_json::Value = serde_json::from_slice(&o.stdout).expect("summary JSON");
    (json, std::fs::read_to_string(records).unwrap())
}

#[test]
fn a_trace_replays_deterministically_into_runs_records_and_summary_plus_sim() {
    let dir = scratch("sim-workload-replay");
    let trace = recorded_trace(&dir);
    let (a, records_a) = simulate(&dir, &trace, "a", &["--seed", "5"]);
    let (_, records_b) = simulate(&dir, &trace, "b", &["--seed", "5"]);
    assert_eq!(
        records_a, records_b,
        "same seed, same records byte for byte"
    );
    let collections = a["gc_count"].as_u64().unwrap();
    assert!(collections > 0);
    assert_eq!(records_a.lines().count() as u64, collections);
    let sim = &a["sim"];
    assert_eq!(sim["cpus"], 4);
    assert_eq!(sim["sched"], "cfs");
    assert_eq!(sim["seed"], 5);
    let distinct = sim["distinct_cpus_p50"].as_f64().unwrap();
    assert!((1.0..=4.0).contains(&distinct), "{sim}");
    assert!(a["gc_pause_total_ms"].as_f64().unwrap() > 0.0);
    // Every record's workers ran on simulated CPUs 0..4.
    for line in records_a.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["gc_threads"], 4, "{line}");
        assert!(r["pause_ms"].as_f64().unwrap() > 0.0, "{line}");
    }
}

/// `--wake-placement` reaches the model: `default` is what no flag gives (the same records,
/// byte for byte), `pack` is named in the summary's `sim` object and on standard error, and
/// `concord sim --help` documents the flag and its values.
#[test]
fn the_wake_placement_is_the_models_own_unless_pack_is_asked_for() {
    let dir = scratch("sim-workload-wake-placement");
    let trace = recorded_trace(&dir);
    let (none, records_none) = simulate(&dir, &trace, "none", &[]);
    let (default, records_default) =
        simulate(&dir, &trace, "default", &["--wake-placement", "default"]);
    let (pack, _) = simulate(&dir, &trace, "pack", &["--wake-placement", "pack"]);
    assert_eq!(records_none, records_default);
    assert_eq!(none["sim"]["wake_placement"], "default");
    assert_eq!(default["sim"]["wake_placement"], "default");
    assert_eq!(pack["sim"]["wake_placement"], "pack");
    assert_eq!(pack["gc_count"], none["gc_count"]);
    let o = concord(&[
        "sim",
        "binary-trees",
        "12",
        "--cpus",
        "2",
        "--gc-threads",
        "2",
        "--trace",
        trace.to_str().unwrap(),
        "--wake-placement",
        "pack",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stderr).contains("cfs scheduler with pack wake-up placement, seed 0"),
        "{}",
        text(&o.stderr)
    );
    assert!(
        text(&o.stdout).contains("cfs scheduler with pack wake-up placement, seed 0"),
        "{}",
        text(&o.stdout)
    );
    let help = concord(&["sim", "--help"]);
    assert_eq!(help.status.code(), Some(0));
    let help = text(&help.stdout);
    assert!(
        help.contains("--wake-placement <default|pack>") && help.contains("sched_vcpu_pack"),
        "{help}"
    );
}

#[test]
fn busy_loops_on_the_simulated_cpus_make_the_gc_workers_wait() {
    let dir = scratch("sim-workload-busy");
    let trace = recorded_trace(&dir);
    let (quiet, _) = simulate(&dir, &trace, "quiet", &[]);
    let (busy, _) = simulate(&dir, &trace, "busy", &["--load", "busy:4"]);
    let wait = |j: &serde_json::Value| j["sim"]["runqueue_wait_ms"].as_f64().unwrap();
    let gc = |j: &serde_json::Value| j["gc_pause_total_ms"].as_f64().unwrap();
    // Four busy loops, one per CPU, share every CPU with the workers.
    assert!(
        wait(&busy) > wait(&quiet),
        "{} vs {}",
        wait(&busy),
        wait(&quiet)
    );
    assert!(gc(&busy) > gc(&quiet), "{} vs {}", gc(&busy), gc(&quiet));
}

#[test]
fn pin_start_reaches_the_simulated_workers() {
    let dir = scratch("sim-workload-pin-start");
    let trace = recorded_trace(&dir);
    // vanilla's workers are born on CPU 0 (pin-start); turned off, they start where the
    // scheduler model forks them, and the schedule that follows differs.
    let (_, born_together) = simulate(&dir, &trace, "pinned", &["--seed", "3"]);
    let (_, forked) = simulate(
        &dir,
        &trace,
        "forked",
        &["--seed", "3", "--pin-start=false"],
    );
    assert_ne!(born_together, forked);
}

#[test]
fn dynamic_gc_threads_choose_the_workers_of_each_simulated_collection_as_the_runtime_does() {
    let dir = scratch("sim-workload-dynamic");
    let trace = recorded_trace(&dir);
    let records = dir.join("dynamic.jsonl");
    let o = concord(&[
        "sim",
        "binary-trees",
        "12",
        "--cpus",
        "8",
        "--gc-threads",
        "dynamic",
        "--mutators",
        "1",
        "--heap",
        "4m",
        "--trace",
        trace.to_str().unwrap(),
        "--gc-records",
        records.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    // HotSpot's rule: 2 per mutator, 1 per 64 MiB of heap, at least 2; the pool has 8.
    let records = std::fs::read_to_string(records).unwrap();
    assert!(records.lines().count() > 0);
    for line in records.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(r["gc_threads"], 2, "{line}");
        let busy = r["workers"].as_array().unwrap().len();
        assert_eq!(busy, 2, "{line}");
    }
}

/// `trace` as version 1 wrote it (before traces recorded their run): its collections in that
/// version's format (without the objects' shapes either), after the magic and version 1.
fn as_version_1(trace: &std::path::Path, dir: &std::path::Path) -> std::path::PathBuf {
    use concord::telemetry::gc_trace::{trace_bytes_as, GcTraceReader, TraceRun};
    let reader = GcTraceReader::new(std::fs::File::open(trace).unwrap()).unwrap();
    assert_eq!(reader.version(), concord::telemetry::gc_trace::VERSION);
    let collections: Vec<_> = reader.map(Result::unwrap).collect();
    let old = trace_bytes_as(1, &TraceRun::default(), &collections);
    assert_eq!(&old[..9], b"CGCTRACE\x01");
    let path = dir.join("version-1.trace");
    std::fs::write(&path, old).unwrap();
    path
}

/// The summary JSON of `concord sim ARGS --cpus 4 --json` (which must succeed).
fn summary_of(args: &[&str]) -> serde_json::Value {
    let mut argv = vec!["sim"];
    argv.extend_from_slice(args);
    argv.extend(["--cpus", "4", "--gc-threads", "2", "--json"]);
    let o = concord(&argv);
    assert_eq!(o.status.code(), Some(0), "{argv:?}: {}", text(&o.stderr));
    serde_json::from_slice(&o.stdout).expect("summary JSON")
}

#[test]
fn a_trace_names_its_workload_and_heap_and_a_mismatching_argument_exits_2() {
    let dir = scratch("sim-workload-recorded-run");
    // binary-trees 12 on a 4m heap.
    let trace = recorded_trace(&dir);
    let path = trace.to_str().unwrap();
    // Another workload's name is refused, naming both.
    assert_exit_2(
        &["sim", "kmeans", "--cpus", "4", "--trace", path],
        &format!(
            "workload kmeans: the trace {path} was recorded from binary-trees, not kmeans \
             (allowed: binary-trees, or no workload argument to take the trace's)"
        ),
    );
    // So is another heap.
    assert_exit_2(
        &["sim", "--cpus", "4", "--heap", "8m", "--trace", path],
        &format!("heap 8M: the trace {path} was recorded with a heap of 4M (allowed: 4M"),
    );
    // Without an argument the run is the trace's: workload and heap.
    for args in [&["--trace", path][..], &["binary-trees", "--trace", path]] {
        let s = summary_of(args);
        assert_eq!(
            (s["workload"].as_str(), s["heap_size"].as_u64()),
            (Some("binary-trees"), Some(4 << 20)),
            "{args:?}"
        );
    }
    // A trace of before the run was recorded is read as before: labelled by the argument, or
    // as an unknown workload without one.
    let old = as_version_1(&trace, &dir);
    let old = old.to_str().unwrap();
    let s = summary_of(&["kmeans", "--heap", "4m", "--trace", old]);
    assert_eq!(s["workload"], "kmeans");
    let s = summary_of(&["--heap", "4m", "--trace", old]);
    assert_eq!(s["workload"], "unknown workload");
    let o = concord(&["sim", "--cpus", "4", "--heap", "4m", "--trace", old]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    assert!(
        text(&o.stdout).starts_with("concord sim unknown workload (preset optimized, heap 4M"),
        "{}",
        text(&o.stdout)
    );
}

/// Runs `concord ARGS` and expects exit 2 with `expected` on stderr, within a guard of 60 s
/// (what these inputs were refused for: they ran at 100 % CPU for ever).
fn assert_exit_2_in_time(args: &[&str], expected: &str) {
    assert_exit_2_in_time_saying(args, &[expected]);
}

/// [`assert_exit_2_in_time`], its message holding each of `expected`.
fn assert_exit_2_in_time_saying(args: &[&str], expected: &[&str]) {
    let mut child = command(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let begin = std::time::Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if begin.elapsed() > std::time::Duration::from_secs(60) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{args:?} still ran after 60 s");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    assert_eq!(status.code(), Some(2), "{args:?}: {stderr}");
    for expected in expected {
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

/// A trace of one young collection whose one root task is `root` (reaching object 0) and
/// whose objects have `sizes`, recorded as binary-trees on a heap of `heap` bytes.
fn hand_made_trace(
    path: &std::path::Path,
    root: concord::telemetry::gc_trace::TraceRootKind,
    sizes: &[u64],
    heap: u64,
) {
    use concord::telemetry::gc_trace::{
        recording, Fate, GcTraceFile, PlabSizes, TraceAffinity, TraceCollection, TraceObject,
        TraceRoot, TraceShape,
    };
    let mut file = recording("binary-trees", || {
        GcTraceFile::create(path, heap, PlabSizes::default())
    })
    .unwrap();
    file.write(&TraceCollection {
        id: 1,
        workers: 2,
        roots: vec![TraceRoot {
            kind: root,
            affinity: TraceAffinity::Any,
            ran_on: 0,
            reaches: vec![0],
        }],
        objects: sizes
            .iter()
            .map(|&size| TraceObject {
                size,
                fate: Fate::Survivor,
                worker: 0,
                shape: TraceShape::fixed(0),
                refs: 0..0,
                ref_slots: 0..0,
            })
            .collect(),
        ..Default::default()
    });
    file.finish().unwrap();
}

#[test]
fn a_trace_that_says_more_than_its_heap_holds_exits_2_naming_the_field() {
    use concord::telemetry::gc_trace::TraceRootKind::{CardStripe, HandleStack};
    let dir = scratch("sim-workload-implausible");
    let trace = dir.join("t.trace");
    let path = trace.to_str().unwrap();
    let heap = 4 << 20;
    for (root, sizes, expected) in [
        (
            HandleStack { slots: 1 << 63 },
            &[64][..],
            "root task 0's extent (handle-stack slots) is 9223372036854775808 (allowed: \
             at most 524288, the words of a 4M heap, the one it was recorded with)",
        ),
        (
            HandleStack {
                slots: 10_000_000_000_000,
            },
            &[64],
            "root task 0's extent (handle-stack slots) is 10000000000000 (allowed: at most \
             524288",
        ),
        (
            CardStripe {
                bytes: 1 << 40,
                scanned_objects: 1,
            },
            &[64],
            "root task 0's extent (card-stripe bytes) is 1099511627776 (allowed: at most \
             4194304, the bytes of a 4M heap",
        ),
        (
            CardStripe {
                bytes: 4096,
                scanned_objects: 1 << 40,
            },
            &[64],
            "root task 0's scanned-object count is 1099511627776 (allowed: at most 524288",
        ),
        (
            HandleStack { slots: 1 },
            &[3 << 20, 3 << 20],
            "its objects' total size in bytes is 6291456 (allowed: at most 4194304, the bytes of a 4M \
             heap",
        ),
    ] {
        hand_made_trace(&trace, root, sizes, heap);
        assert_exit_2_in_time(
            &["sim", "--cpus", "4", "--trace", path],
            &format!("--trace {path}: GC(1): {expected}"),
        );
    }
    // A version 1 trace does not know its heap: the bound is the heap simulated.
    hand_made_trace(
        &trace,
        HandleStack {
            slots: 10_000_000_000_000,
        },
        &[64],
        heap,
    );
    let old = as_version_1(&trace, &dir);
    assert_exit_2_in_time(
        &[
            "sim",
            "--cpus",
            "4",
            "--heap",
            "4m",
            "--trace",
            old.to_str().unwrap(),
        ],
        "the words of a 4M heap, the one simulated: the trace does not record its own, give it \
         with --heap)",
    );
    // Within the bounds the same trace is simulated.
    hand_made_trace(&trace, HandleStack { slots: 524_288 }, &[64], heap);
    let s = summary_of(&["--trace", path]);
    assert_eq!(s["gc_count"], 1);
}

#[test]
fn a_costs_file_with_costs_no_machine_has_exits_2_naming_the_cost_and_its_range() {
    let dir = scratch("sim-workload-implausible-costs");
    let measured = dir.join("costs.json");
    let o = concord(&[
        "sim",
        "calibrate",
        "--quick",
        "--out",
        measured.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let trace = recorded_trace(&dir);
    for (cost, value, range) in [
        ("sleep_syscall", 1e18, "at most 100000000 ns, 100 ms)"),
        ("context_switch", 1e15, "at most 1000000 ns, 1 ms)"),
        ("copy_per_byte", 1e12, "at most 100 ns, 100 ns)"),
    ] {
        let mut json: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&measured).unwrap()).unwrap();
        json["costs"][cost] = serde_json::json!(value);
        let costs = dir.join(format!("{cost}.json"));
        std::fs::write(&costs, json.to_string()).unwrap();
        let what = format!(
            "--costs: {} is not a valid calibration: cost {cost} is ",
            costs.display()
        );
        assert_exit_2_in_time_saying(
            &[
                "sim",
                "--cpus",
                "4",
                "--trace",
                trace.to_str().unwrap(),
                "--costs",
                costs.to_str().unwrap(),
            ],
            &[&what, range],
        );
    }
}

/// GC threads beyond 4 per CPU: the warning speaks of the simulated machine's CPUs, never of
/// this machine's usable CPUs (what the recording run's heap warned about: "256 GC threads for
/// 2 usable CPUs" while simulating 256 CPUs' worth of threads).
#[test]
fn the_oversubscription_warning_speaks_of_the_simulated_cpus() {
    for (cpus, warned) in [("3", true), ("4", false)] {
        let o = concord(&[
            "sim",
            "binary-trees",
            "12",
            "--heap",
            "4m",
            "--gc-threads",
            "16",
            "--cpus",
            cpus,
        ]);
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(0), "{stderr}");
        assert!(!stderr.contains("usable CPU"), "{cpus} CPUs: {stderr}");
        let warning = "concord sim: 16 GC threads for the 3 CPUs of the simulated machine: \
                       more than 4 per CPU only adds waiting, and its pauses will be longer \
                       than with fewer threads (use at most 12 GC threads, or dynamic GC \
                       threads)";
        assert_eq!(stderr.contains(warning), warned, "{cpus} CPUs: {stderr}");
        assert_eq!(
            stderr.contains("GC threads for"),
            warned,
            "{cpus} CPUs: {stderr}"
        );
    }
}
