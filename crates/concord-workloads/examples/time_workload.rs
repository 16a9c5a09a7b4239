//! Times one workload run and prints its checksum and collection statistics.
//!
//! ```text
//! cargo run --release -p concord-workloads --example time_workload -- gcbench \
//!     [--heap-mib 64] [--gc-threads 2] [--mutators 1] [--rounds 1] [--size N] [--verify] \
//!     [--gc-log PATH]
//! ```
//!
//! Without `--heap-mib` the workload's default heap is used. Exits with status 1 if the run
//! fails or the checksum is wrong, 2 on bad arguments.

use std::process::ExitCode;
use std::time::Instant;

use concord::{CollectionKind, GcConfig, Heap, Preset};
use concord_workloads::{lookup, workload_names, WorkloadParams, MIB};

fn usage(msg: &str) -> ExitCode {
    eprintln!("time_workload: {msg}");
    eprintln!(
        "usage: time_workload <{}> [--heap-mib M] [--gc-threads N] [--mutators N] [--rounds R] [--size N] [--verify] [--gc-log PATH]",
        workload_names().join("|")
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let Some(name) = args.first() else {
        return usage("no workload given");
    };
    let Some(workload) = lookup(name) else {
        return usage(&format!("unknown workload '{name}'"));
    };
    let mut params = WorkloadParams::default();
    let mut heap_mib = None;
    let mut gc_threads = 2;
    let mut verify = false;
    let mut gc_log = None;
    let mut it = args[1..].iter();
    while let Some(flag) = it.next() {
        if flag == "--verify" {
            verify = true;
            continue;
        }
        if flag == "--gc-log" {
            let Some(path) = it.next() else {
                return usage("--gc-log needs a path");
            };
            gc_log = Some(std::path::PathBuf::from(path));
            continue;
        }
        let Some(value) = it.next() else {
            return usage(&format!("{flag} needs a value"));
        };
        let Ok(v) = value.parse::<usize>() else {
            return usage(&format!("{flag} needs a number, got '{value}'"));
        };
        match flag.as_str() {
            "--heap-mib" => heap_mib = Some(v),
            "--gc-threads" => gc_threads = v,
            "--mutators" => params.mutators = v,
            "--rounds" => params.rounds = v,
            "--size" => params.size = Some(v as u32),
            _ => return usage(&format!("unknown argument '{flag}'")),
        }
    }
    if let Err(e) = workload.validate(&params) {
        return usage(&e.to_string());
    }
    let mut config = GcConfig::for_preset(Preset::Optimized);
    config.heap_size = heap_mib.map_or_else(|| workload.default_heap(&params), |m| m * MIB);
    config.gc_threads = gc_threads;
    config.verify = verify;
    config.gc_log = gc_log;
    let heap = match Heap::new(config) {
        Ok(h) => h,
        Err(e) => return usage(&e.to_string()),
    };
    let start = Instant::now();
    let result = workload.run(&heap, &params);
    let wall_ms = start.elapsed().as_secs_f64() * 1e3;
    let stats = heap.stats();
    println!(
        "workload={name} heap_mib={} gc_threads={gc_threads} mutators={} rounds={}",
        heap.capacity() / MIB,
        params.mutators,
        params.rounds
    );
    println!("wall_ms={wall_ms:.1}");
    println!(
        "young={} full={} pause_total_ms={:.1} pause_max_ms={:.2} allocated_mib={:.0}",
        stats.count(CollectionKind::Young),
        stats.count(CollectionKind::Full),
        stats.pause_total_ms(),
        stats.pause_max_ms(),
        stats.bytes_allocated as f64 / MIB as f64
    );
    if verify {
        println!("verified={:?}", stats.verified());
    }
    match result {
        Ok(r) => {
            for (k, v) in &r.details {
                println!("  {k}: {v}");
            }
            println!("checksum={} expected={:?}", r.checksum, r.expected_checksum);
            if r.checksum_ok() == Some(false) || stats.verified() == Some(false) {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        Err(e) => {
            println!("error: {e}");
            ExitCode::FAILURE
        }
    }
}
