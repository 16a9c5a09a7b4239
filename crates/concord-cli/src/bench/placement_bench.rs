//! `concord placement-bench`: 004 §3.2.1's memory-placement microbenchmark (Fig. 3). A fixed
//! number of operations (each reads one page of the thread's own buffer, sequentially,
//! wrapping at its end) shared by 1, 2, … threads pinned round-robin over the NUMA nodes,
//! under the four placements of [`Placement`]; every placement × thread count is an arm of
//! the experiment engine, run alternately `--repeat` rounds, then per arm the median time,
//! the speedup over one thread of the same placement, the reads per node, their imbalance
//! (004 Table 4's standard deviation) and the remote share.
//!
//! On the machine's own nodes (`--numa-topology auto` with two or more nodes) each buffer is
//! placed with `mbind` before its pages are first touched, and every run checks with
//! `move_pages` that each buffer has as many pages on each node as planned (else the run
//! fails). On a synthetic topology (`0/1`) all memory is on the one physical node: the pages'
//! nodes are the plan's, so the per-node figures are exact by construction and only the time
//! is measured. Either way the per-node figures are computed from the plan (on machine nodes a
//! balanced-remote buffer's interleaving may start on another node than planned, which moves
//! at most the reads of the last partial pass over it).

use std::process::ExitCode;
use std::sync::{Arc, Barrier};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use clap::Args;
use concord::config::format_size;
use concord::os::affinity::{current_thread_affinity, set_current_thread_affinity};
use concord::os::cpu::CpuView;
use concord::os::numa::policy::{bind_memory, nodes_of_pages, MemoryPolicy};
use concord::os::numa::{NumaTopology, NumaTopologySpec, TopologyKind};
use concord::os::vm::{page_size, ZeroedMapping};
use concord_workloads::WorkloadParams;
use serde_json::{json, Value};

use super::pause_bench::choose;
use super::placement_plan::{last_level_cache, Placement, PlacementPlan};
use super::{conclude, Text};
use crate::experiment::figures::{ratio, Figures};
use crate::experiment::runner::{RunFiles, RunResult, Runner};
use crate::experiment::{Arm, Column, Executed, Plan};
use crate::flags::{count_in, BenchFlags, Size};

/// The buffer when the last-level cache size cannot be read from sysfs.
const FALLBACK_BUFFER: usize = 64 << 20;
/// Page reads when `--operations` is not given: 4 GiB read at 4 KiB pages.
const DEFAULT_OPERATIONS: u32 = 1 << 20;
/// Where sysfs describes CPU 0's caches.
const CPU0_CACHE: &str = "/sys/devices/system/cpu/cpu0/cache";

/// Flags of `concord placement-bench`.
#[derive(Args, Debug, Clone)]
pub struct PlacementBenchArgs {
    /// Placements, comma-separated: unbalanced-remote (every buffer on node 0),
    /// balanced-remote (each buffer's pages round-robin over the nodes), balanced-local (each
    /// buffer on its thread's node), unbalanced-local (only node 0's threads work).
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "unbalanced-remote,balanced-remote,balanced-local,unbalanced-local",
        value_name = "P,…"
    )]
    pub placements: Vec<String>,
    /// Thread counts, comma-separated, including 1 (the speedup's baseline), each at most the
    /// CPUs this process may run on (default 1,2,… up to them).
    #[arg(
        long,
        value_delimiter = ',',
        value_name = "N,…",
        value_parser = thread_count,
        allow_negative_numbers = true
    )]
    pub threads: Vec<u32>,
    /// The nodes: auto (the machine's; needs two or more) or a synthetic spec such as 0/1
    /// (nodes separated by '/', each a CPU list; the memory stays on the real node).
    #[arg(
        long = "numa-topology",
        value_name = "auto|SPEC",
        default_value = "auto"
    )]
    pub numa_topology: String,
    /// Each working thread's buffer (default twice the last-level cache from sysfs, else 64m).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub buffer: Option<Size>,
    /// Operations shared by the working threads, each a read of one page.
    #[arg(
        long,
        value_name = "N",
        default_value_t = DEFAULT_OPERATIONS,
        value_parser = count_in(1, u32::MAX),
        allow_negative_numbers = true
    )]
    pub operations: u32,
    #[command(flatten)]
    pub bench: BenchFlags,
}

/// What every arm shares: the topology, the buffer and the page size.
#[derive(Clone, Debug)]
struct Setup {
    topology: NumaTopology,
    spec: NumaTopologySpec,
    page: usize,
    pages: usize,
}

/// The CPUs this process may run on (its affinity mask), at least 1.
fn allowed_cpus() -> usize {
    current_thread_affinity().map_or(1, |cpus| cpus.len().max(1))
}

/// A parser of one `--threads` value: a whole number in 1..= the CPUs this process may run on.
fn thread_count(text: &str) -> Result<u32, String> {
    let cpus = allowed_cpus();
    count_in(1, cpus as u32)(text).map_err(|e| {
        let range = format!("1..={cpus}");
        e.replace(
            &range,
            &format!("{range}, the CPUs this process may run on"),
        )
    })
}

/// The thread counts of `--threads` (default 1..=`cpus`), ascending, checked: none twice, 1
/// among them (each is in range already, [`thread_count`]).
fn thread_counts(given: &[u32], cpus: usize) -> Result<Vec<usize>> {
    if given.is_empty() {
        return Ok((1..=cpus).collect());
    }
    let mut counts: Vec<usize> = Vec::new();
    for &n in given {
        let n = n as usize;
        if counts.contains(&n) {
            bail!("--threads: '{n}' is given twice (allowed: each thread count once)");
        }
        counts.push(n);
    }
    if !counts.contains(&1) {
        bail!("--threads: 1 is missing: the speedups are relative to one thread (add 1)");
    }
    counts.sort_unstable();
    Ok(counts)
}

/// The topology of `--numa-topology` over the CPUs this process may use; two nodes at least.
fn topology_of(text: &str) -> Result<(NumaTopologySpec, NumaTopology)> {
    let spec: NumaTopologySpec = text
        .parse()
        .map_err(|e| anyhow::anyhow!("--numa-topology: '{}': {e}", text.trim()))?;
    let view = CpuView::detect().context("cannot read this process's CPU affinity")?;
    let topology = spec
        .resolve(&view)
        .map_err(|e| anyhow::anyhow!("--numa-topology: '{spec}': {e}"))?;
    if topology.node_count() < 2 {
        bail!(
            "--numa-topology: '{spec}' has one node, and the placements differ only between \
             nodes (allowed: two or more nodes; on a one-node machine a synthetic spec such as \
             0/1 splits the CPUs into nodes)"
        );
    }
    Ok((spec, topology))
}

/// One run of an arm.
struct PlacementRunner {
    plan: PlacementPlan,
    setup: Setup,
}

/// A working thread's buffer, placed and touched, and what the kernel says about its pages.
struct Buffer {
    map: ZeroedMapping,
    /// Pages per node as measured (machine nodes only).
    measured: Option<Vec<usize>>,
}

impl PlacementRunner {
    /// The policy that puts thread `thread`'s buffer on its planned nodes (machine nodes).
    fn policy(&self, thread: usize) -> MemoryPolicy {
        let ids = self.setup.topology.kernel_node_ids();
        match self.plan.placement {
            Placement::BalancedRemote => MemoryPolicy::Interleave(ids),
            Placement::BalancedLocal => {
                MemoryPolicy::Bind(vec![ids[self.plan.threads[thread].node]])
            }
            Placement::UnbalancedRemote | Placement::UnbalancedLocal => {
                MemoryPolicy::Bind(vec![ids[0]])
            }
        }
    }

    /// Thread `thread`'s buffer, mapped, placed (machine nodes), every page written once by the
    /// calling thread (page `j` begins with `j + 1`), and its pages' nodes read back.
    fn buffer(&self, thread: usize) -> Result<Buffer> {
        let (page, pages) = (self.setup.page, self.setup.pages);
        let map = ZeroedMapping::new(pages * page).context("cannot map the buffer")?;
        let real = self.setup.topology.kind == TopologyKind::Auto;
        if real {
            bind_memory(map.base(), pages * page, &self.policy(thread))?;
        }
        for j in 0..pages {
            // SAFETY: page `j` is inside the fresh read-write mapping this thread owns.
            unsafe { ((map.base() + j * page) as *mut u64).write_volatile(j as u64 + 1) };
        }
        let measured = if real {
            let addrs: Vec<usize> = (0..pages).map(|j| map.base() + j * page).collect();
            let mut per_node = vec![0usize; self.plan.nodes];
            for (j, status) in nodes_of_pages(&addrs)?.into_iter().enumerate() {
                let node = status
                    .ok()
                    .and_then(|id| self.setup.topology.nodes.iter().position(|n| n.id == id));
                let Some(n) = node else {
                    bail!(
                        "page {j} of thread {thread}'s buffer is on no node of the topology \
                         ({status:?})"
                    );
                };
                per_node[n] += 1;
            }
            Some(per_node)
        } else {
            None
        };
        Ok(Buffer { map, measured })
    }

    /// Planned pages per node of thread `thread`'s buffer.
    fn planned_pages(&self, thread: usize) -> Vec<usize> {
        let mut per_node = vec![0usize; self.plan.nodes];
        for n in self.plan.page_nodes(thread) {
            per_node[n] += 1;
        }
        per_node
    }
}

/// Whether a buffer with `measured` pages per node is placed as `planned` under `placement`:
/// exactly, but for balanced-remote, whose interleaving may start on any node (the kernel
/// counts from the mapping's offset), so that only the counts must match, in any order.
fn placed_as_planned(placement: Placement, measured: &[usize], planned: &[usize]) -> bool {
    if placement != Placement::BalancedRemote {
        return measured == planned;
    }
    let sorted = |v: &[usize]| {
        let mut v = v.to_vec();
        v.sort_unstable();
        v
    };
    sorted(measured) == sorted(planned)
}

/// Reads `operations` pages of the buffer at `base` (`pages` pages of `page` bytes), in order
/// from page 0, wrapping around; the sum of every word read.
fn read_pages(base: usize, page: usize, pages: usize, operations: u64) -> u64 {
    let words = page / 8;
    let mut sum = 0u64;
    let mut j = 0;
    for _ in 0..operations {
        // SAFETY: page `j < pages` lies inside the caller's live mapping, which nothing writes
        // while it is read.
        let words = unsafe { std::slice::from_raw_parts((base + j * page) as *const u64, words) };
        sum = words.iter().fold(sum, |s, &w| s.wrapping_add(w));
        j += 1;
        if j == pages {
            j = 0;
        }
    }
    sum
}

/// What [`read_pages`] returns for a buffer whose page `j` holds `j + 1` (then zeros).
fn expected_sum(pages: u64, operations: u64) -> u64 {
    let (passes, rest) = (operations / pages, operations % pages);
    passes * (pages * (pages + 1) / 2) + rest * (rest + 1) / 2
}

impl Runner for PlacementRunner {
    fn run(&self, _files: &RunFiles) -> Result<RunResult> {
        let threads = &self.plan.threads;
        let start = Barrier::new(threads.len() + 1);
        let (page, pages) = (self.setup.page, self.setup.pages);
        let (elapsed, outcomes) = std::thread::scope(|scope| {
            let handles: Vec<_> = threads
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    let start = &start;
                    scope.spawn(move || -> Result<(u64, Option<Vec<usize>>)> {
                        let prepared = set_current_thread_affinity(&[t.cpu])
                            .with_context(|| format!("cannot pin thread {i} to CPU {}", t.cpu))
                            .and_then(|()| t.works().then(|| self.buffer(i)).transpose());
                        // Every thread reaches the barrier, prepared or not.
                        start.wait();
                        let Some(buffer) = prepared? else {
                            return Ok((0, None));
                        };
                        let sum = read_pages(buffer.map.base(), page, pages, t.operations);
                        Ok((sum, buffer.measured))
                    })
                })
                .collect();
            start.wait();
            let began = Instant::now();
            let outcomes: Vec<_> = handles
                .into_iter()
                .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                .collect();
            (began.elapsed(), outcomes)
        });
        let time_ms = elapsed.as_secs_f64() * 1e3;
        let mut problems = Vec::new();
        let mut thread_json = Vec::new();
        let mut checksum_ok = true;
        for (i, (t, outcome)) in threads.iter().zip(outcomes).enumerate() {
            let (sum, measured) = outcome?;
            let planned = self.planned_pages(i);
            if t.works() && sum != expected_sum(pages as u64, t.operations) {
                checksum_ok = false;
                problems.push(format!("thread {i} read the wrong sum {sum}"));
            }
            let placement = self.plan.placement;
            if let Some(m) = measured
                .as_ref()
                .filter(|m| !placed_as_planned(placement, m, &planned))
            {
                problems.push(format!(
                    "thread {i}'s buffer has pages per node {m:?}, planned {planned:?}"
                ));
            }
            thread_json.push(json!({
                "thread": i,
                "node": t.node,
                "cpu": t.cpu,
                "operations": t.operations,
                "page_rule": t.works().then(|| placement.page_rule(t.node, self.plan.nodes)),
                "pages_per_node": t.works().then_some(planned),
                "measured_pages_per_node": measured,
            }));
        }
        let accesses = self.plan.accesses();
        let working = threads.iter().filter(|t| t.works()).count();
        let summary = json!({
            "placement": self.plan.placement.name(),
            "threads": threads.len(),
            "working_threads": working,
            // The engine's name for the time measured.
            "wall_ms": time_ms,
            "buffer_bytes": pages * page,
            "page_size": page,
            "numa_topology": self.setup.spec,
            "topology_kind": self.setup.topology.kind,
            "reads_per_node": accesses.per_node,
            "node_access_stddev": accesses.imbalance(),
            "remote_share": accesses.remote_share(),
            "checksum_ok": checksum_ok,
            "thread_plan": thread_json,
        });
        Ok(RunResult {
            summary,
            figures: Figures {
                wall_ms: time_ms,
                ..Figures::default()
            },
            details: Vec::new(),
            line: format!(
                "{time_ms:.1} ms, {working} of {} threads working",
                threads.len()
            ),
            problem: (!problems.is_empty()).then(|| problems.join("; ")),
        })
    }
}

/// The arm of `plan` in `group`.
fn arm(plan: PlacementPlan, group: usize, setup: &Setup) -> Arm {
    let (placement, threads) = (plan.placement, plan.threads.len());
    let pinned: Vec<String> = plan
        .threads
        .iter()
        .map(|t| format!("CPU {}{}", t.cpu, if t.works() { "" } else { " (idle)" }))
        .collect();
    Arm {
        label: format!("{}/{threads}", placement.name()),
        id: format!("{}@threads={threads}", placement.name()),
        what: format!("{threads} thread(s) on {}", pinned.join(", ")),
        group,
        preset: "none".into(),
        value: Some(threads.to_string()),
        settings: vec![
            format!("placement={}", placement.name()),
            format!("threads={threads}"),
        ],
        workload: "sequential-read".into(),
        params: WorkloadParams {
            mutators: threads,
            rounds: 1,
            size: None,
        },
        interference: None,
        sim: None,
        runner: Arc::new(PlacementRunner {
            plan,
            setup: setup.clone(),
        }),
    }
}

/// One row of the result per arm: placement, threads, median time, speedup over the group's
/// one thread, and the plan's accesses.
fn rows(plan: &Plan, executed: &Executed, plans: &[PlacementPlan]) -> Vec<Value> {
    let medians = &executed.outcome.medians;
    plan.arms
        .iter()
        .enumerate()
        .map(|(i, arm)| {
            let has = |a: usize| !executed.outcome.runs[a].is_empty();
            let base = plan.baseline(arm.group);
            let time = has(i).then_some(medians[i].wall_ms);
            let speedup =
                (has(i) && has(base)).then(|| ratio(medians[base].wall_ms, medians[i].wall_ms));
            let accesses = plans[i].accesses();
            json!({
                "placement": plans[i].placement.name(),
                "threads": plans[i].threads.len(),
                "working_threads": plans[i].threads.iter().filter(|t| t.works()).count(),
                "time_ms": time,
                "speedup": speedup,
                "reads_per_node": accesses.per_node,
                "node_access_stddev": accesses.imbalance(),
                "remote_share": accesses.remote_share(),
            })
        })
        .collect()
}

/// The table of [`rows`].
fn table(rows: &[Value], nodes: usize) -> String {
    let mut s = format!(
        "{:<18} {:>7} {:>7} {:>9} {:>8}",
        "placement", "threads", "working", "time ms", "speedup"
    );
    for n in 0..nodes {
        s += &format!(" {:>12}", format!("reads node {n}"));
    }
    s += &format!(" {:>7} {:>8}\n", "stddev", "remote%");
    let number = |v: &Value, digits: usize| {
        v.as_f64()
            .map_or("-".to_string(), |x| format!("{x:.digits$}"))
    };
    let count = |v: &Value| v.as_u64().unwrap_or(0);
    for r in rows {
        s += &format!(
            "{:<18} {:>7} {:>7} {:>9} {:>8}",
            r["placement"].as_str().unwrap_or_default(),
            count(&r["threads"]),
            count(&r["working_threads"]),
            number(&r["time_ms"], 1),
            number(&r["speedup"], 2),
        );
        for reads in r["reads_per_node"].as_array().into_iter().flatten() {
            s += &format!(" {:>12}", count(reads));
        }
        let remote = r["remote_share"].as_f64().unwrap_or(0.0) * 100.0;
        s += &format!(
            " {:>7.2} {remote:>7.1}%\n",
            r["node_access_stddev"].as_f64().unwrap_or(0.0)
        );
    }
    s
}

/// Run `concord placement-bench`.
pub fn run(args: PlacementBenchArgs) -> Result<ExitCode> {
    let placements: Vec<Placement> = choose("placements", &args.placements, &Placement::names())?
        .into_iter()
        .filter_map(Placement::of_name)
        .collect();
    let (spec, topology) = topology_of(&args.numa_topology)?;
    let counts = thread_counts(&args.threads, allowed_cpus())?;
    let page = page_size();
    let llc = last_level_cache(std::path::Path::new(CPU0_CACHE));
    let buffer = match &args.buffer {
        Some(b) if b.bytes() == 0 => bail!("--buffer: '{b}' is empty (allowed: a page or more)"),
        Some(b) => b.bytes(),
        None => llc.map_or(FALLBACK_BUFFER, |c| 2 * c),
    };
    // At least a page; never more than fits in the address space (a size that large is refused
    // below, against MemAvailable).
    let pages = buffer.div_ceil(page).min(usize::MAX / page);
    let most = (pages * page).saturating_mul(counts.last().copied().unwrap_or(1));
    let available = concord::os::procfs::read_mem_available(std::path::Path::new("/proc/meminfo"))
        .context("cannot read MemAvailable to check the buffers fit")?;
    if most as u64 > available / 2 {
        bail!(
            "--buffer: {} per thread is {} with {} threads, more than half of MemAvailable ({}) \
             (allowed: a smaller --buffer or fewer --threads)",
            format_size(pages * page),
            format_size(most),
            counts.last().copied().unwrap_or(1),
            format_size(available as usize)
        );
    }
    let operations = u64::from(args.operations);
    let setup = Setup {
        topology: topology.clone(),
        spec: spec.clone(),
        page,
        pages,
    };
    let mut arms = Vec::new();
    let mut plans = Vec::new();
    for (group, &p) in placements.iter().enumerate() {
        for &n in &counts {
            let plan = PlacementPlan::new(p, &topology, n, pages, operations);
            arms.push(arm(plan.clone(), group, &setup));
            plans.push(plan);
        }
    }
    let mut plan = Plan::new(
        "placement-bench",
        "sequential-read".into(),
        arms,
        args.bench.repeat,
    );
    plan.groups = placements
        .iter()
        .map(|p| format!("{}: {}", p.name(), p.what()))
        .collect();
    let synthetic = topology.kind == TopologyKind::Synthetic;
    let memory = if synthetic {
        "synthetic topology: every buffer is on this machine's physical node(s); the nodes of \
         the pages are the plan's, so reads per node, stddev and remote share are exact by \
         construction and only the time (speedup) is measured"
    } else {
        "machine nodes: buffers placed with mbind before first touch; each run checks with \
         move_pages that every buffer has its planned pages per node"
    };
    let nodes: Vec<Value> = topology
        .nodes
        .iter()
        .map(|n| json!({"id": n.id, "cpus": n.cpus}))
        .collect();
    for (k, v) in [
        (
            "placements",
            json!(placements.iter().map(|p| p.name()).collect::<Vec<_>>()),
        ),
        ("threads", json!(counts)),
        ("operations", json!(operations)),
        ("buffer_bytes", json!(pages * page)),
        ("page_size", json!(page)),
        ("llc_bytes", json!(llc)),
        ("numa_topology", json!(spec)),
        ("topology_kind", json!(topology.kind)),
        ("nodes", json!(nodes)),
        ("memory", json!(memory)),
    ] {
        plan.parameters.insert(k.to_string(), v);
    }
    let fits = llc
        .filter(|&c| pages * page <= c)
        .map_or(String::new(), |c| {
            format!(
                " (it fits in the {} last-level cache: the times measure the cache, not memory)",
                format_size(c)
            )
        });
    let header = format!(
        "concord placement-bench (004 Fig. 3): {operations} page reads shared by the working \
         threads, a {} buffer per working thread{fits}, topology {spec} ({} nodes), medians of \
         {} alternating runs each\nmemory: {memory}.",
        format_size(pages * page),
        topology.node_count(),
        plan.repeat
    );
    let note = "speedup: the median time of one thread of the same placement over this one's; \
                reads: page reads per node (from the plan); stddev: 004 Table 4's imbalance of \
                the reads over the nodes (0 balanced); remote%: reads of a page on another node \
                than the reader's.";
    let node_count = topology.node_count();
    conclude(
        &plan,
        &args.bench,
        |executed, v| v["placements"] = json!(rows(&plan, executed, &plans)),
        |executed| {
            Text::new(header, vec![Column::Runs], note)
                .with_more(table(&rows(&plan, executed, &plans), node_count))
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_counts_are_checked_against_the_cpus() {
        let cpus = allowed_cpus();
        let allowed = format!("(allowed: 1..={cpus}, the CPUs this process may run on)");
        assert_eq!(thread_count("0"), Err(format!("is out of range {allowed}")));
        let beyond = (cpus + 1).to_string();
        assert_eq!(
            thread_count(&beyond),
            Err(format!("is out of range {allowed}"))
        );
        assert_eq!(
            thread_count("x"),
            Err(format!("is not a whole number {allowed}"))
        );
        assert_eq!(thread_count(" 1"), Ok(1));
        assert_eq!(thread_counts(&[], 3).unwrap(), [1, 2, 3]);
        assert_eq!(thread_counts(&[2, 1], 2).unwrap(), [1, 2]);
        let err = |given: &[u32]| thread_counts(given, 2).unwrap_err().to_string();
        assert!(err(&[1, 1]).starts_with("--threads: '1' is given twice"));
        assert!(err(&[2]).starts_with("--threads: 1 is missing"));
    }

    #[test]
    fn interleaving_may_start_on_any_node() {
        use Placement::*;
        assert!(placed_as_planned(BalancedRemote, &[1, 2], &[2, 1]));
        assert!(!placed_as_planned(BalancedRemote, &[3, 0], &[2, 1]));
        assert!(placed_as_planned(BalancedLocal, &[0, 3], &[0, 3]));
        assert!(!placed_as_planned(BalancedLocal, &[3, 0], &[0, 3]));
        assert!(!placed_as_planned(UnbalancedRemote, &[2, 1], &[3, 0]));
    }

    #[test]
    fn reads_sum_what_the_pages_hold() {
        let page = page_size();
        let map = ZeroedMapping::new(3 * page).unwrap();
        for j in 0..3 {
            // SAFETY: inside the fresh mapping this test owns.
            unsafe { ((map.base() + j * page) as *mut u64).write_volatile(j as u64 + 1) };
        }
        // Pages 0 1 2 0 1: 1 + 2 + 3 + 1 + 2.
        assert_eq!(read_pages(map.base(), page, 3, 5), 9);
        assert_eq!(expected_sum(3, 5), 9);
        assert_eq!(expected_sum(3, 6), 12);
        assert_eq!(expected_sum(4, 2), 3);
    }

    /// A runner of `placement` with `threads` threads on "machine" nodes that are both the
    /// kernel's node 0 (this machine's only one): mbind and move_pages run for real, and every
    /// page lands on node index 0.
    fn on_node_zero_twice(placement: Placement, threads: usize) -> PlacementRunner {
        let cpus = current_thread_affinity().unwrap();
        let node = |cpu| concord::os::numa::NumaNode {
            id: 0,
            cpus: vec![cpu],
        };
        let topology = NumaTopology {
            kind: TopologyKind::Auto,
            nodes: vec![node(cpus[0]), node(*cpus.last().unwrap())],
        };
        let plan = PlacementPlan::new(placement, &topology, threads, 8, 20);
        PlacementRunner {
            plan,
            setup: Setup {
                topology,
                spec: NumaTopologySpec::Auto,
                page: page_size(),
                pages: 8,
            },
        }
    }

    #[test]
    fn on_machine_nodes_a_run_checks_where_the_pages_landed() {
        let files = RunFiles {
            records: std::env::temp_dir().join("unused.records.jsonl"),
            round: 0,
        };
        // Everything planned on node 0, and there it is.
        let ok = on_node_zero_twice(Placement::UnbalancedRemote, 2)
            .run(&files)
            .unwrap();
        assert_eq!(ok.problem, None);
        assert_eq!(ok.summary["checksum_ok"], true);
        let plan = &ok.summary["thread_plan"][1];
        assert_eq!(plan["measured_pages_per_node"], json!([8, 0]));
        assert_eq!(plan["pages_per_node"], json!([8, 0]));
        // Thread 1's buffer is planned on node 1 but lands on node 0: the run fails.
        let off = on_node_zero_twice(Placement::BalancedLocal, 2)
            .run(&files)
            .unwrap();
        assert_eq!(
            off.problem.as_deref(),
            Some("thread 1's buffer has pages per node [8, 0], planned [0, 8]")
        );
    }

    #[test]
    fn one_node_is_refused_and_bad_specs_name_the_flag() {
        let cpu = current_thread_affinity().unwrap()[0];
        let err = topology_of(&cpu.to_string()).unwrap_err().to_string();
        assert!(err.contains("has one node"), "{err}");
        let err = topology_of("0//1").unwrap_err().to_string();
        assert!(
            err.starts_with("--numa-topology: '0//1': node 1 is empty"),
            "{err}"
        );
    }
}
