//! The flags every command that runs a workload shares, declared once and flattened into each
//! command: the workload ([`WorkloadArgs`]), the run flags that become configuration settings
//! and workload parameters ([`RunFlags`], with the switch overrides [`SwitchFlags`]) and the
//! flags of a side-by-side experiment ([`BenchFlags`]).
//!
//! Values are typed where the CLI can check them itself (sizes, GC thread counts, booleans,
//! counts); policy names stay text that the library's configuration builder checks, so that
//! every message about a bad value has one form: `--flag: 'value' why (allowed: …)`.
//! [`RunFlags::settings`] is the one way flags become configuration keys.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use clap::Args;
use concord::config::{format_size, parse_bool, parse_size, GcThreads, SizeError, MAX_HEAP};
use concord_workloads::WorkloadParams;

use crate::experiment::simulated::SimArmFlags;
use crate::interference::Interference;

/// A byte size as given (`64m`), checked to be one; the configuration builder checks its range
/// and names it as written.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Size {
    bytes: usize,
    text: String,
}

impl Size {
    /// The size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
}

impl FromStr for Size {
    type Err = String;

    fn from_str(text: &str) -> Result<Size, String> {
        let bytes = parse_size(text).map_err(|e| match e {
            // A number too long for 64 bits is a size all the same, only too large.
            SizeError::Overflow => {
                format!("is too large (allowed: at most {})", format_size(MAX_HEAP))
            }
            e => format!("is not a size ({e})"),
        })?;
        Ok(Size {
            bytes,
            text: text.trim().to_ascii_lowercase(),
        })
    }
}

impl fmt::Display for Size {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

/// The most rounds `--repeat` may ask of a bench command (and of `concord paper`, which
/// passes it on).
pub const MAX_REPEAT: u32 = 1000;

/// A parser of whole numbers in `min..=max` whose messages follow the quoted value.
pub fn count_in(min: u32, max: u32) -> impl Fn(&str) -> Result<u32, String> + Clone {
    move |text| match text.trim().parse::<i64>() {
        Ok(n) if (i64::from(min)..=i64::from(max)).contains(&n) => Ok(n as u32),
        Ok(_) => Err(format!("is out of range (allowed: {min}..={max})")),
        Err(_) => Err(format!("is not a whole number (allowed: {min}..={max})")),
    }
}

/// A parser of the workload's size: a whole number; the workload checks its own range.
pub fn workload_size(text: &str) -> Result<u32, String> {
    text.trim().parse::<u32>().map_err(|_| {
        "is not a workload size (allowed: a whole number in the workload's range, e.g. \
         binary-trees 18)"
            .to_string()
    })
}

/// The message of a flag value that its parser rejected, in the form of the configuration
/// builder's: `--flag: 'value' why (allowed: …)`; `None` for any other command-line error
/// (clap's own message says those best).
pub fn value_error(e: &clap::Error) -> Option<String> {
    use clap::error::{ContextKind, ContextValue, ErrorKind};
    if e.kind() != ErrorKind::ValueValidation {
        return None;
    }
    let text = |kind| match e.get(kind) {
        Some(ContextValue::String(s)) => Some(s.clone()),
        _ => None,
    };
    let arg = text(ContextKind::InvalidArg)?;
    let value = text(ContextKind::InvalidValue)?;
    // `--heap <SIZE>`, `--pin-start[=<BOOL>]`: the flag alone; `[SIZE]` (a positional): its name.
    let flag = arg
        .trim_start_matches(['[', '<'])
        .split([' ', '[', '=', ']', '>'])
        .next()
        .unwrap_or(&arg);
    let reason = std::error::Error::source(e)?.to_string();
    Some(if reason.starts_with("is ") {
        format!("{flag}: '{value}' {reason}")
    } else {
        format!("{flag}: '{value}': {reason}")
    })
}

/// The workload to run and its size.
#[derive(Args, Debug, Clone)]
pub struct WorkloadArgs {
    /// Workload to run: gcbench, binary-trees, search, transform, render, database, kmeans,
    /// kv-service, queue-churn.
    #[arg(default_value = "gcbench")]
    pub workload: String,
    /// Workload size where it has one (binary-trees: tree depth, default 18).
    #[arg(value_parser = workload_size, allow_negative_numbers = true)]
    pub size: Option<u32>,
}

/// The flags of a run that become configuration settings and workload parameters. Unset
/// flags leave the preset's value, or the command's own default where it has one (each
/// command's `--help` says which).
#[derive(Args, Debug, Clone, Default)]
pub struct RunFlags {
    /// Maximum heap size, e.g. 64m, 1g (default: the workload's own default heap).
    // Hyphen values reach the parser, so that `--heap -1` is a size error, not clap's tip.
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub heap: Option<Size>,
    /// Build a heap larger than physical memory or the cgroup memory limit, which is
    /// otherwise refused.
    #[arg(long = "allow-heap-beyond-memory")]
    pub allow_heap_beyond_memory: bool,
    /// Young generation size (default: heap / 3).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub young: Option<Size>,
    /// GC worker threads, N or dynamic (default: the preset's, HotSpot's rule ncpus <= 8 ?
    /// ncpus : 3 + 5*ncpus/8, dynamic for modern; ablation and os-bench: twice the usable CPUs).
    #[arg(
        long = "gc-threads",
        value_name = "N|dynamic",
        allow_negative_numbers = true
    )]
    pub gc_threads: Option<GcThreads>,
    // The switch overrides, boxed so that the flag structs stay small.
    #[command(flatten)]
    pub switches: Box<SwitchFlags>,
    /// Mutator threads (default 1; ablation and os-bench 2; sched-bench: of the scalable
    /// workload, 4).
    #[arg(long, value_name = "N", value_parser = count_in(1, 256), allow_negative_numbers = true)]
    pub mutators: Option<u32>,
    /// Repeat the workload this many times in one heap, in every run.
    #[arg(
        long,
        default_value_t = 1,
        value_name = "N",
        value_parser = count_in(1, 100_000),
        allow_negative_numbers = true
    )]
    pub rounds: u32,
    /// Verify the whole heap after every collection.
    #[arg(long)]
    pub verify: bool,
    /// Profile object lifespans and report their histogram.
    #[arg(long)]
    pub lifespans: bool,
    /// With --lifespans: mean bytes allocated between two sampled objects (0..=1g; 0 samples
    /// every object) (default 64k).
    #[arg(long = "lifespan-sample-bytes", value_name = "SIZE")]
    pub lifespan_sample_bytes: Option<String>,
    /// Transparent huge pages for the heap: system (no madvise call), never, madvise, always
    /// or dynamic (huge pages while MemAvailable >= the heap's remaining footprint +
    /// --thp-margin, re-checked every 2 s) (default: the preset's; dynamic for optimized;
    /// pause-bench: a comma-separated list of the arms' modes, default never,always,dynamic).
    #[arg(long, value_name = "MODE")]
    pub thp: Option<String>,
    /// Available memory dynamic THP wants beyond the heap's footprint (default 1g).
    #[arg(long = "thp-margin", value_name = "SIZE", allow_hyphen_values = true)]
    pub thp_margin: Option<Size>,
    /// Commit the whole heap at start and fault in every page of it and of its side tables on
    /// the GC workers (HotSpot's AlwaysPreTouch), so first-touch page faults leave the pauses
    /// (default off in every preset; the time it took is the summary's pretouch_ms).
    #[arg(long)]
    pub pretouch: bool,
    /// Load during every run: busy:K starts K busy-loop threads in this process (K in
    /// 1..=1024); busy:K@CPU pins them to that CPU.
    #[arg(long, value_name = "busy:K[@CPU]")]
    pub interfere: Option<Interference>,
    /// How the GC log is written: sync (inside the pause, counted in it) or async (by a
    /// writer thread through a bounded buffer; dropped lines are counted) (default: vanilla
    /// sync, modern and optimized async).
    #[arg(long = "gc-log-mode", value_name = "sync|async")]
    pub gc_log_mode: Option<String>,
    /// Bytes of lines an async GC log buffers before it drops them (1k..=64m, default 64k).
    #[arg(
        long = "gc-log-buffer",
        value_name = "SIZE",
        allow_hyphen_values = true
    )]
    pub gc_log_buffer: Option<Size>,
    /// Milliseconds an async GC log's writer gets at exit to write what is buffered
    /// (0..=60000, default 1000).
    #[arg(
        long = "gc-log-flush-timeout",
        value_name = "MS",
        allow_negative_numbers = true
    )]
    pub gc_log_flush_timeout: Option<String>,
    /// Write the GC log gzip-compressed (zcat reads it; so does concord diagnose); each
    /// collection's lines are flushed, so the log is readable up to the last collection.
    #[arg(long = "gc-log-compress")]
    pub gc_log_compress: bool,
}

/// The switch flags; each overrides the preset's value.
#[derive(Args, Debug, Clone, Default)]
pub struct SwitchFlags {
    /// Root-task queue: monitor, claim or lockfree (default: the preset's).
    #[arg(long = "task-queue", value_name = "KIND")]
    pub task_queue: Option<String>,
    /// Root tasks prefer the worker they are tagged with: on or off (default: the preset's).
    #[arg(long = "task-affinity", value_name = "on|off", value_parser = parse_bool)]
    pub task_affinity: Option<bool>,
    /// Steal victim selection: best-of-2, last-victim or adaptive (default: the preset's).
    #[arg(long, value_name = "POLICY")]
    pub steal: Option<String>,
    /// Termination protocol, i.e. when a worker offers: fixed (after 2·N failed steals), owst
    /// or live (after 2·N_live) (default: the preset's).
    #[arg(long, value_name = "KIND")]
    pub termination: Option<String>,
    /// How a worker waits inside the termination protocol: auto (the protocol's own), hotspot8
    /// or concord (default: the preset's).
    #[arg(long = "termination-backoff", value_name = "auto|hotspot8|concord")]
    pub termination_backoff: Option<String>,
    /// Idle GC worker parking: monitor or futex (default: the preset's).
    #[arg(long, value_name = "KIND")]
    pub parking: Option<String>,
    /// Create all GC threads on the creating thread's CPU and leave them to the OS (bare flag:
    /// true; --pin-start=false to turn off; default: true for vanilla, else false; ablation and
    /// os-bench: true).
    #[arg(
        long = "pin-start",
        value_name = "BOOL",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "true",
        value_parser = parse_bool
    )]
    pub pin_start: Option<bool>,
    /// GC thread affinity: none, static or dynamic (default: the preset's; dynamic for
    /// optimized).
    #[arg(long = "gc-affinity", value_name = "none|static|dynamic")]
    pub gc_affinity: Option<String>,
    /// Mutator scheduling: cfs, fifo, profile:PATH or adaptive[:SECONDS] (default cfs).
    #[arg(long = "mutator-sched", value_name = "POLICY")]
    pub mutator_sched: Option<String>,
    /// profile and adaptive may choose FIFO only with more usable CPUs than this (default 8).
    #[arg(
        long = "fifo-cpu-threshold",
        value_name = "N",
        allow_negative_numbers = true
    )]
    pub fifo_cpu_threshold: Option<String>,
    /// Pin the VM thread (which stops the world and runs each collection's serial parts) to
    /// this CPU, or none (default none).
    #[arg(long = "vm-thread-cpu", value_name = "CPU|none")]
    pub vm_thread_cpu: Option<String>,
    /// The threads FIFO applies to: mutators, or all (also the VM thread and the GC workers;
    /// refused when they outnumber the usable CPUs and the kernel's real-time throttle is off)
    /// (default mutators).
    #[arg(long = "fifo-scope", value_name = "mutators|all")]
    pub fifo_scope: Option<String>,
    /// NUMA layout of the heap (004 §3.2): off, interleaved (pages round-robin over the
    /// nodes, GC worker i pinned to node i % nodes), fragmented (eden and survivors one
    /// fragment per node, TLABs and PLABs from the allocating thread's node, old interleaved)
    /// or segregated (fragmented, with node-local stealing and scan messages between nodes in
    /// young collections; needs a GC thread per node) (default off).
    #[arg(long, value_name = "off|interleaved|fragmented|segregated")]
    pub numa: Option<String>,
    /// The nodes of --numa: auto (the machine's) or a synthetic spec such as 0/1 or 0-7/8-15
    /// (nodes separated by '/', each a CPU list; memory stays on the real node) (default auto).
    #[arg(long = "numa-topology", value_name = "auto|SPEC")]
    pub numa_topology: Option<String>,
}

impl RunFlags {
    /// The configuration keys the flags set, in a fixed order, each as the configuration
    /// builder reads it from the command line. Unset flags set nothing.
    pub fn settings(&self) -> Vec<(&'static str, String)> {
        let s = &self.switches;
        let on_off = |b: bool| if b { "on" } else { "off" }.to_string();
        let given: [(&'static str, Option<String>); 23] = [
            ("heap", self.heap.as_ref().map(Size::to_string)),
            ("young", self.young.as_ref().map(Size::to_string)),
            ("gc-threads", self.gc_threads.map(|t| t.to_string())),
            ("task-queue", s.task_queue.clone()),
            ("task-affinity", s.task_affinity.map(on_off)),
            ("steal", s.steal.clone()),
            ("termination", s.termination.clone()),
            ("termination-backoff", s.termination_backoff.clone()),
            ("parking", s.parking.clone()),
            ("pin-start", s.pin_start.map(|b| b.to_string())),
            ("gc-affinity", s.gc_affinity.clone()),
            ("mutator-sched", s.mutator_sched.clone()),
            ("fifo-cpu-threshold", s.fifo_cpu_threshold.clone()),
            ("fifo-scope", s.fifo_scope.clone()),
            ("vm-thread-cpu", s.vm_thread_cpu.clone()),
            ("numa", s.numa.clone()),
            ("numa-topology", s.numa_topology.clone()),
            ("gc-log-mode", self.gc_log_mode.clone()),
            (
                "gc-log-buffer",
                self.gc_log_buffer.as_ref().map(Size::to_string),
            ),
            ("gc-log-flush-timeout", self.gc_log_flush_timeout.clone()),
            ("thp", self.thp.clone()),
            ("thp-margin", self.thp_margin.as_ref().map(Size::to_string)),
            ("lifespan-sample-bytes", self.lifespan_sample_bytes.clone()),
        ];
        let mut settings: Vec<(&'static str, String)> = given
            .into_iter()
            .filter_map(|(k, v)| v.map(|v| (k, v)))
            .collect();
        if self.allow_heap_beyond_memory {
            settings.push(("allow-heap-beyond-memory", "true".to_string()));
        }
        if self.verify {
            settings.push(("verify", "true".to_string()));
        }
        if self.lifespans {
            settings.push(("lifespans", "true".to_string()));
        }
        if self.pretouch {
            settings.push(("pretouch", "true".to_string()));
        }
        if self.gc_log_compress {
            settings.push(("gc-log-compress", "true".to_string()));
        }
        settings
    }

    /// `defaults` (a command's own defaults) without the keys the flags set, then the flags'
    /// settings: the list to apply on top of a configuration's own keys.
    pub fn settings_over(
        &self,
        defaults: &[(&'static str, String)],
    ) -> Vec<(&'static str, String)> {
        let given = self.settings();
        let mut settings: Vec<(&'static str, String)> = defaults
            .iter()
            .filter(|(k, _)| !given.iter().any(|(g, _)| g == k))
            .cloned()
            .collect();
        settings.extend(given);
        settings
    }

    /// The workload parameters: `--mutators` (else `default_mutators`), `--rounds`, `size`.
    pub fn params(&self, size: Option<u32>, default_mutators: u32) -> WorkloadParams {
        WorkloadParams {
            mutators: self.mutators.unwrap_or(default_mutators) as usize,
            rounds: self.rounds as usize,
            size,
        }
    }

    /// Refuses the flags among `flags` (names without `--`) that are set, for a command that
    /// sets those keys itself (`why`).
    pub fn refuse(&self, command: &str, flags: &[&str], why: &str) -> anyhow::Result<()> {
        let set = self.settings();
        for flag in flags {
            let given = set.iter().any(|(k, _)| k == flag)
                || (*flag == "interfere" && self.interfere.is_some());
            if given {
                anyhow::bail!("--{flag} cannot be used with {command}: {why}");
            }
        }
        Ok(())
    }
}

/// What a bench command over one workload takes: the workload, the run flags, the
/// experiment's flags and the simulated machine, if the arms are simulated.
#[derive(Args, Debug, Clone)]
pub struct WorkloadBench {
    #[command(flatten)]
    pub workload: WorkloadArgs,
    #[command(flatten)]
    pub run: RunFlags,
    #[command(flatten)]
    pub bench: BenchFlags,
    #[command(flatten)]
    pub sim: SimArmFlags,
}

/// The flags of a side-by-side experiment: rounds, where the results go, and what is printed.
#[derive(Args, Debug, Clone)]
pub struct BenchFlags {
    /// Rounds: each runs every configuration once, in order.
    #[arg(
        long,
        default_value_t = 3,
        value_name = "N",
        value_parser = count_in(1, MAX_REPEAT),
        allow_negative_numbers = true
    )]
    pub repeat: u32,
    /// Write every run's summary and per-collection records here, with experiment.json (a new
    /// or empty directory; default results/<UTC timestamp>/ in the current directory).
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Print every configuration, its runs, medians and ratios as JSON instead of the table.
    #[arg(long)]
    pub json: bool,
    /// Do not write DIR/report.html at the end (`concord report DIR` writes it later).
    #[arg(long = "no-report")]
    pub no_report: bool,
}

#[cfg(test)]
pub mod tests_support {
    use clap::{Args, Parser};

    /// `ARGV` parsed as the flags `A` of a command called `cmd`.
    pub fn parse<A: Args>(argv: &[&str]) -> A {
        #[derive(Parser, Debug)]
        struct Cli<A: Args> {
            #[command(flatten)]
            args: A,
        }
        let argv = ["cmd"].iter().chain(argv);
        Cli::<A>::try_parse_from(argv)
            .unwrap_or_else(|e| panic!("{e}"))
            .args
    }
}

#[cfg(test)]
mod tests {
    use super::tests_support::parse;
    use super::*;

    #[derive(Args, Debug)]
    struct Both {
        #[command(flatten)]
        workload: WorkloadArgs,
        #[command(flatten)]
        run: RunFlags,
    }

    #[test]
    fn typed_values_and_their_settings() {
        let b: Both = parse(&[
            "binary-trees",
            "12",
            "--heap",
            "64M",
            "--gc-threads",
            "dynamic",
            "--task-affinity",
            "yes",
            "--pin-start",
            "--verify",
            "--allow-heap-beyond-memory",
        ]);
        assert_eq!(b.workload.workload, "binary-trees");
        assert_eq!(b.workload.size, Some(12));
        assert_eq!(b.run.heap.as_ref().map(Size::bytes), Some(64 << 20));
        assert_eq!(
            b.run.settings(),
            [
                ("heap", "64m".to_string()),
                ("gc-threads", "dynamic".to_string()),
                ("task-affinity", "on".to_string()),
                ("pin-start", "true".to_string()),
                ("allow-heap-beyond-memory", "true".to_string()),
                ("verify", "true".to_string()),
            ]
        );
        let defaults = [("heap", "8m".to_string()), ("pin-start", "false".into())];
        let over = b.run.settings_over(&defaults[..1]);
        assert_eq!(over[0], ("heap", "64m".to_string()));
        let b: Both = parse(&["--pin-start=off", "--mutators", "3"]);
        assert_eq!(b.workload.workload, "gcbench");
        assert_eq!(b.run.settings_over(&defaults)[0], ("heap", "8m".into()));
        assert_eq!(b.run.params(None, 1).mutators, 3);
        let err = b
            .run
            .refuse("x", &["steal", "pin-start"], "it sets it")
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "--pin-start cannot be used with x: it sets it"
        );
    }

    #[test]
    fn bad_values_say_what_is_allowed() {
        assert!("12q"
            .parse::<Size>()
            .unwrap_err()
            .starts_with("is not a size"));
        assert!(parse_bool("perhaps")
            .unwrap_err()
            .contains("allowed: true, false"));
        let count = count_in(1, 64);
        assert_eq!(count("0").unwrap_err(), "is out of range (allowed: 1..=64)");
        assert_eq!(
            count("x").unwrap_err(),
            "is not a whole number (allowed: 1..=64)"
        );
        assert_eq!(count(" 64"), Ok(64));
    }
}
