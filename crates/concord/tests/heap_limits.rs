//! Heaps and the machine's limits.
//!
//! * Under an address-space limit (`ulimit -v`, `RLIMIT_AS`), at every limit, building a heap
//!   either works, and so do its collections, or returns an error naming what could not be had:
//!   never an abort ("memory allocation of N bytes failed"). Each limit is tried in a child
//!   process, since the limit binds the whole process: this test binary, run again with
//!   [`CHILD_ENV`] set, running only [`child_builds_a_heap_under_the_limit`].
//! * A heap larger than the memory the process can have (physical memory, or the cgroup
//!   memory limit) is refused, with a message saying how to allow it.

use std::process::Command;

use concord::config::{format_size, format_size_rounded, GIB, MAX_HEAP, MIB};
use concord::os::memory::memory_limit;
use concord::{CollectionKind, GcConfig, Heap, HeapError, ObjectType, Preset};

/// Set in a child process: `HEAP,GC_THREADS,PRESET,EXTRA,ROOM`: the heap to build, the
/// address space the process may use beyond what it uses right before building it (bytes),
/// and if ROOM is not empty, the address space its collections may use beyond what the process
/// uses once the heap runs (bytes).
const CHILD_ENV: &str = "HEAP_LIMITS_CHILD";
/// The name of the test a child runs.
const CHILD_TEST: &str = "child_builds_a_heap_under_the_limit";
/// What a child prints once it knows how building the heap went.
const OUTCOME: &str = "heap-limits outcome: ";
/// Address space a running heap's collections may use: room for their small fixed-size
/// allocations, but not for anything sized from a 1 GiB heap (the full collector's tables for
/// such a heap take 8 MiB).
const COLLECTION_ROOM: usize = 6 * MIB;

const NODE: ObjectType = ObjectType::fixed(2, 8);

/// The address space this process uses now (`VmSize`), bytes.
fn address_space_in_use() -> usize {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmSize:"))
        .expect("VmSize in /proc/self/status");
    let kib: usize = line
        .trim_start_matches("VmSize:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .unwrap();
    kib * 1024
}

/// Set the soft address-space limit (the hard one stays, so the limit can be lifted again).
fn limit_address_space(bytes: Option<usize>) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit writes the struct we pass and nothing else.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut limit) }, 0);
    limit.rlim_cur = bytes.map_or(limit.rlim_max, |b| (b as libc::rlim_t).min(limit.rlim_max));
    // SAFETY: setrlimit reads the struct we pass; it only changes this process's limit.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) }, 0);
}

fn config(heap: usize, gc_threads: usize, preset: Preset) -> GcConfig {
    let mut c = GcConfig::for_preset(preset);
    c.heap_size = heap;
    c.gc_threads = gc_threads;
    c.verify = true;
    c
}

/// A list of `n` nodes that survives a young and a full collection, checked after both. With
/// `room`, the full collection may use only that much more address space than the process
/// uses after the young collection (by then every thread of the heap has started).
fn collect_a_live_list(heap: &Heap, n: u64, room: Option<usize>) {
    let mut m = heap.attach();
    let head = m.alloc(NODE).unwrap();
    let cur = m.dup(head);
    for i in 1..n {
        m.scope(|m| {
            let node = m.alloc(NODE).unwrap();
            m.write_u64(node, 0, i);
            m.set_ref(cur, 0, Some(node));
            m.set_handle(cur, Some(node));
        });
    }
    m.collect(CollectionKind::Young);
    if let Some(room) = room {
        limit_address_space(Some(address_space_in_use() + room));
    }
    m.collect(CollectionKind::Full);
    let cur = m.dup(head);
    let mut sum = 0;
    while m.load_ref_into(cur, cur, 0) {
        sum += m.read_u64(cur, 0);
    }
    assert_eq!(sum, n * (n - 1) / 2);
    m.verify_heap().unwrap();
}

/// In a child process ([`CHILD_ENV`] set): build the heap it names under its limit, collect,
/// and print the outcome. Run directly: the same on a 64 MiB heap, without a limit.
#[test]
fn child_builds_a_heap_under_the_limit() {
    let spec = std::env::var(CHILD_ENV).unwrap_or_else(|_| format!("{},1,vanilla,,", 64 * MIB));
    let fields: Vec<&str> = spec.split(',').collect();
    let [heap_size, gc_threads, preset, extra, room] = fields[..] else {
        panic!("bad {CHILD_ENV} {spec:?}");
    };
    let config = config(
        heap_size.parse().unwrap(),
        gc_threads.parse().unwrap(),
        preset.parse().unwrap(),
    );
    let extra: Option<usize> = extra.parse().ok();
    if let Some(extra) = extra {
        limit_address_space(Some(address_space_in_use() + extra));
    }
    match Heap::new(config) {
        Ok(heap) => {
            collect_a_live_list(&heap, 10_000, room.parse().ok());
            drop(heap);
            limit_address_space(None);
            println!("{OUTCOME}built");
        }
        Err(e) => {
            // Messages are formatted with the limit lifted: the test harness needs memory too.
            limit_address_space(None);
            assert!(extra.is_some(), "no limit, yet: {e}");
            let named = match &e {
                HeapError::Reserve { size, .. } => *size == heap_size.parse::<usize>().unwrap(),
                HeapError::Allocate { what, size, .. } => !what.is_empty() && *size > 0,
                HeapError::Thread(_) => true,
                _ => false,
            };
            assert!(named, "not an error about memory: {e:?}");
            println!("{OUTCOME}refused: {e}");
        }
    }
}

/// What happened to one child: `Ok(true)` built, `Ok(false)` refused cleanly, `Err` anything
/// else, described.
fn run_child(heap: usize, gc_threads: usize, preset: &str, extra: usize) -> Result<bool, String> {
    // The load sampler of dynamic GC affinity (preset optimized) may still be starting when the
    // first collection is over, so only heaps without it get the tighter limit.
    let room = if preset == "optimized" {
        String::new()
    } else {
        COLLECTION_ROOM.to_string()
    };
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", CHILD_TEST, "--nocapture", "--test-threads", "1"])
        .env(
            CHILD_ENV,
            format!("{heap},{gc_threads},{preset},{extra},{room}"),
        )
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let outcome = stdout
        .lines()
        .find_map(|l| l.split_once(OUTCOME).map(|(_, o)| o.to_string()));
    match outcome {
        Some(o)
            if out.status.success()
                && !stderr.contains("memory allocation of")
                && !stderr.contains("panicked") =>
        {
            Ok(o == "built")
        }
        _ => Err(format!(
            "{}: {}\n{stdout}\n{stderr}",
            out.status,
            outcome.unwrap_or_default()
        )),
    }
}

/// Try `heap` at 32 limits: 16 from a little below it to above its side tables (about 6 % of
/// the heap), 16 from there to above the room its threads take (stacks and malloc arenas).
fn try_limits(heap: usize, gc_threads: usize, preset: &str) {
    let lo = heap - heap / 16;
    let tables = heap + heap / 8;
    let hi = tables + (gc_threads + 4) * 72 * MIB;
    let limits = (0..16)
        .map(|i| lo + (tables - lo) * i / 16)
        .chain((0..16).map(|i| tables + (hi - tables) * (i + 1) / 16));
    let mut failures = Vec::new();
    let (mut built, mut refused) = (0, 0);
    for extra in limits {
        match run_child(heap, gc_threads, preset, extra) {
            Ok(true) => built += 1,
            Ok(false) => refused += 1,
            Err(e) => failures.push(format!("limit +{extra} bytes: {e}")),
        }
    }
    assert!(
        failures.is_empty(),
        "heap of {heap} bytes, {gc_threads} GC threads, {preset}: {} of 32 limits ended badly:\n{}",
        failures.len(),
        failures.join("\n")
    );
    // The limits must reach both sides, or they tested nothing.
    assert!(refused > 0 && built > 0, "built {built}, refused {refused}");
}

#[test]
fn a_heap_is_built_or_refused_cleanly_at_every_address_space_limit() {
    try_limits(64 * MIB, 1, "optimized");
    try_limits(GIB, 4, "vanilla");
}

// ---- heaps larger than the memory the process can have ----

/// A heap larger than physical memory (or the cgroup memory limit) is refused with a message
/// naming both sizes, where the limit came from and how to override it; allowed, it is built.
#[test]
fn a_heap_beyond_the_memory_of_the_process_is_refused_unless_allowed() {
    let limit = memory_limit()
        .unwrap()
        .expect("/proc/meminfo gives physical memory");
    let Ok(limit_bytes) = usize::try_from(limit.bytes) else {
        unreachable!("Concord runs on 64-bit targets only");
    };
    if limit_bytes >= MAX_HEAP {
        // No heap a configuration accepts is beyond this machine: the largest is built.
        let heap = Heap::new(config(MAX_HEAP, 1, Preset::Vanilla)).unwrap();
        assert_eq!(heap.capacity(), MAX_HEAP);
        return;
    }
    let heap_size = (limit_bytes + 1).next_multiple_of(GIB).min(MAX_HEAP);
    let mut c = config(heap_size, 1, Preset::Vanilla);
    let Err(e) = Heap::new(c.clone()) else {
        panic!("a heap of {heap_size} bytes was built beyond {limit:?}");
    };
    let message = e.to_string();
    let HeapError::BeyondMemory { heap, limit: got } = e else {
        panic!("refused for another reason: {message}");
    };
    assert_eq!((heap, &got), (heap_size, &limit));
    for part in [
        format!("the heap ({})", format_size(heap_size)),
        format!(
            "{} ({}, {})",
            limit.what(),
            format_size_rounded(limit_bytes),
            limit.source()
        ),
        "allow-heap-beyond-memory = true".to_string(),
        "--allow-heap-beyond-memory".to_string(),
        "CONCORD_ALLOW_HEAP_BEYOND_MEMORY=true".to_string(),
    ] {
        assert!(message.contains(&part), "{part:?} not in {message:?}");
    }
    // Allowed: only address space is taken, so the heap is built.
    c.allow_heap_beyond_memory = true;
    let heap = Heap::new(c).unwrap();
    assert_eq!(heap.capacity(), heap_size);
}
