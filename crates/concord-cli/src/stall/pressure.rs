//! Memory pressure, 002 §3's BackgroundApp: a co-running process that takes memory and touches
//! every page of it, so that the workload's heap competes with it for pages (reclaim, THP
//! compaction). `concord pressure SIZE` is that process; `--memory-pressure SIZE` on `run` and
//! the `pressure` load of `pause-bench` start it as a child of `concord` ([`MemoryPressure`]).
//!
//! It never pushes the machine into the OOM killer: it takes at most 80 % of `MemAvailable`
//! and always leaves the floor (`--floor`, default the larger of 1 GiB and a tenth of
//! physical memory) available (a larger SIZE is capped, with a notice); every 100 ms it reads
//! `MemAvailable` again and gives memory back, a 64 MiB chunk at a time, as soon as it drops
//! below the floor (and takes it again, up to SIZE, when there is room). Its memory is
//! released on exit; as a child it ends when its parent closes its stdin, and the kernel kills
//! it if the parent dies (`PR_SET_PDEATHSIG`).

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Command, ExitCode, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use clap::Args;
use concord::os::pipe::{die_with_parent, parent_id};
use concord::os::procfs::{field_value, read_mem_available};
use serde_json::{json, Value};

use crate::console::{errln, outln};
use crate::flags::Size;
use crate::stall::human;
use crate::{interrupt, RunFailed};

/// The memory is taken and given back in chunks of this size.
pub const CHUNK: u64 = 64 << 20;
/// The share of `MemAvailable` the process may take at most, percent.
pub const MAX_SHARE_PERCENT: u64 = 80;
/// How often `MemAvailable` is read again.
const CHECK: Duration = Duration::from_millis(100);
/// Room above the floor before a chunk given back is taken again (so it does not flap).
const REGROW_MARGIN: u64 = 4 * CHUNK;
/// How long a parent waits for its child to have taken its memory.
const READY_WAIT: Duration = Duration::from_secs(300);
/// How long a parent waits for its child to end after closing its stdin.
const END_WAIT: Duration = Duration::from_secs(10);
/// How often a parent waiting for its child to be ready looks for a signal.
const SIGNAL_CHECK: Duration = Duration::from_millis(50);
/// Where `MemAvailable` and `MemTotal` are read.
const MEMINFO: &str = "/proc/meminfo";
/// The line a child prints when it holds its memory: `ready BYTES`.
const READY: &str = "ready";
/// The line a child prints before it ends: `done PEAK GIVEN_BACK HELD_AT_END`.
const DONE: &str = "done";

/// Flags of `concord pressure`.
#[derive(Args, Debug, Clone)]
pub struct PressureArgs {
    /// Memory to take and touch, e.g. 4g (capped at 80% of MemAvailable, keeping the floor
    /// available).
    #[arg(value_name = "SIZE", allow_hyphen_values = true)]
    pub size: Size,
    /// Memory that must stay available: below it, memory is given back (default: the
    /// larger of 1g and a tenth of physical memory).
    #[arg(long, value_name = "SIZE", allow_hyphen_values = true)]
    pub floor: Option<Size>,
    /// Hold the memory this many seconds, then give it back and exit (default: until Ctrl-C).
    #[arg(long, value_name = "SECONDS", value_parser = crate::flags::count_in(1, 86_400))]
    pub seconds: Option<u32>,
    /// Internal: run as the child of a concord run (stop when stdin closes, die with the
    /// parent, report on stdout).
    #[arg(long = "for-parent", hide = true)]
    pub for_parent: bool,
    /// Internal: read MemAvailable and MemTotal from this file instead of /proc/meminfo (the
    /// tests make the machine look short of memory).
    #[arg(long, hide = true, value_name = "PATH", default_value = MEMINFO)]
    pub meminfo: std::path::PathBuf,
}

/// The default floor: the larger of 1 GiB and a tenth of physical memory.
pub fn default_floor(meminfo: &Path) -> u64 {
    let total = std::fs::read_to_string(meminfo)
        .ok()
        .and_then(|t| field_value(&t, "MemTotal"))
        .map_or(0, |kib| kib * 1024);
    (total / 10).max(1 << 30)
}

/// The memory the process may take of `asked` when `available` is available and `floor` must
/// stay so: at most [`MAX_SHARE_PERCENT`] of `available` and never into the floor, in whole
/// chunks.
pub fn allowed(asked: u64, available: u64, floor: u64) -> u64 {
    let share = (u128::from(available) * u128::from(MAX_SHARE_PERCENT) / 100) as u64;
    let above_floor = available.saturating_sub(floor);
    asked.min(share).min(above_floor) / CHUNK * CHUNK
}

/// Runs `concord pressure`.
pub fn run(args: PressureArgs) -> Result<ExitCode> {
    let asked = args.size.bytes() as u64;
    if asked < CHUNK {
        bail!(
            "pressure: '{}' is too small (allowed: at least {})",
            args.size,
            human(CHUNK)
        );
    }
    let floor = args
        .floor
        .as_ref()
        .map_or_else(|| default_floor(&args.meminfo), |f| f.bytes() as u64);
    let mem_available = || mem_available(&args.meminfo);
    let stop = Arc::new(AtomicBool::new(false));
    if args.for_parent {
        let parent = parent_id();
        if !die_with_parent(parent).unwrap_or(false) {
            return Ok(ExitCode::FAILURE);
        }
        // The parent closes stdin to stop us (or dies, and the kernel kills us).
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("concord-pressure-stdin".into())
            .spawn(move || {
                let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
                stop.store(true, Ordering::SeqCst);
            })?;
    }
    // A child ignores the terminal's Ctrl-C (its parent decides when it ends); a second one
    // still quits at once.
    interrupt::install("the memory is given back and pressure stops");
    let for_parent = args.for_parent;
    let available = mem_available()?;
    let target = allowed(asked, available, floor);
    // Whole chunks are taken: only a cap below that is worth a notice.
    if target < asked / CHUNK * CHUNK {
        errln!(
            "concord pressure: asked {}, but MemAvailable is {} and {} must stay available: \
             taking {} (at most {MAX_SHARE_PERCENT}% of MemAvailable, above the floor)",
            human(asked),
            human(available),
            human(floor),
            human(target)
        );
    }
    if target == 0 {
        return Err(RunFailed::wrap(anyhow::anyhow!(
            "pressure: MemAvailable is {}, no more than the floor {}: nothing can be taken safely",
            human(available),
            human(floor)
        )));
    }
    let deadline = args
        .seconds
        .map(|s| Instant::now() + Duration::from_secs(s.into()));
    let stopped = || {
        stop.load(Ordering::SeqCst)
            || (!for_parent && interrupt::interrupted())
            || deadline.is_some_and(|d| Instant::now() >= d)
    };
    let mut held = Held::default();
    // Take the memory a chunk at a time, looking at MemAvailable after each.
    while held.bytes() < target && !stopped() {
        if mem_available()? < floor + CHUNK {
            break;
        }
        if !held.take() {
            errln!("concord pressure: the allocator refused more memory");
            break;
        }
    }
    if args.for_parent {
        outln!("{READY} {}", held.bytes())?;
    } else {
        outln!(
            "concord pressure: holding {} (MemAvailable now {}, floor {}); Ctrl-C gives it back",
            human(held.bytes()),
            human(mem_available()?),
            human(floor)
        )?;
    }
    while !stopped() {
        if for_parent {
            std::thread::sleep(CHECK);
        } else {
            interrupt::sleep(CHECK);
        }
        let available = mem_available()?;
        if available < floor {
            let back = (floor - available).div_ceil(CHUNK) + 1;
            let gave = held.give_back(back as usize);
            errln!(
                "concord pressure: MemAvailable {} is below the floor {}: gave back {}, holding {}",
                human(available),
                human(floor),
                human(gave),
                human(held.bytes())
            );
        } else if held.bytes() < target && available > floor + CHUNK + REGROW_MARGIN {
            // A refusal now is tried again at the next check.
            if held.take() && held.bytes() >= target {
                errln!(
                    "concord pressure: MemAvailable {} has room again: holding {} as before",
                    human(available),
                    human(held.bytes())
                );
            }
        }
    }
    let (peak, given_back, at_end) = (held.peak, held.given_back, held.bytes());
    drop(held);
    if args.for_parent {
        outln!("{DONE} {peak} {given_back} {at_end}")?;
    } else {
        outln!(
            "concord pressure: released {} (peak {}, given back early {})",
            human(peak),
            human(peak),
            human(given_back)
        )?;
    }
    if !args.for_parent && interrupt::interrupted() {
        return Ok(interrupt::exit_code());
    }
    Ok(ExitCode::SUCCESS)
}

fn mem_available(meminfo: &Path) -> Result<u64> {
    read_mem_available(meminfo).map_err(|e| RunFailed::wrap(anyhow::anyhow!("{e}")))
}

/// The memory taken, in chunks of [`CHUNK`] bytes, every page touched.
#[derive(Default)]
struct Held {
    chunks: Vec<Vec<u8>>,
    peak: u64,
    given_back: u64,
}

impl Held {
    fn bytes(&self) -> u64 {
        self.chunks.len() as u64 * CHUNK
    }

    /// Takes one chunk and writes to every page of it, so the kernel must provide them.
    /// Returns false when the allocator refuses the chunk (strict overcommit), which ends the
    /// growing rather than the process.
    fn take(&mut self) -> bool {
        let mut chunk: Vec<u8> = Vec::new();
        if chunk.try_reserve_exact(CHUNK as usize).is_err() {
            return false;
        }
        chunk.resize(CHUNK as usize, 0);
        for (i, page) in chunk.chunks_mut(4096).enumerate() {
            page[0] = (i as u8) | 1;
        }
        self.chunks.push(std::hint::black_box(chunk));
        self.peak = self.peak.max(self.bytes());
        true
    }

    /// Gives back up to `n` chunks; returns the bytes given back.
    fn give_back(&mut self, n: usize) -> u64 {
        let n = n.min(self.chunks.len());
        self.chunks.truncate(self.chunks.len() - n);
        self.given_back += n as u64 * CHUNK;
        n as u64 * CHUNK
    }
}

/// What a pressure child did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PressureReport {
    /// Bytes asked for.
    pub asked: u64,
    /// Bytes it held when the run started.
    pub held_at_start: u64,
    /// The most it held.
    pub peak: u64,
    /// Bytes it gave back early because MemAvailable fell below the floor.
    pub given_back: u64,
    /// Bytes it held when it was stopped.
    pub held_at_end: u64,
    /// Its process id.
    pub pid: u32,
}

impl PressureReport {
    /// The report as JSON for the summary.
    pub fn json(&self) -> Value {
        json!({
            "asked_bytes": self.asked,
            "held_at_start_bytes": self.held_at_start,
            "peak_bytes": self.peak,
            "given_back_bytes": self.given_back,
            "held_at_end_bytes": self.held_at_end,
            "pid": self.pid,
        })
    }
}

/// A running pressure child.
pub struct MemoryPressure {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    report: PressureReport,
}

impl MemoryPressure {
    /// Starts `concord pressure SIZE --for-parent` (this program) and waits until it holds its
    /// memory, so that what follows runs under the pressure.
    pub fn start(asked: u64, floor: Option<u64>) -> Result<MemoryPressure> {
        // The running program itself, even if its file was replaced meanwhile (a rebuild
        // during a long bench): /proc/self/exe names the inode this process runs.
        let mut command = Command::new("/proc/self/exe");
        command
            .arg("pressure")
            .arg(asked.to_string())
            .arg("--for-parent");
        if let Some(floor) = floor {
            command.arg("--floor").arg(floor.to_string());
        }
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("cannot start the memory pressure process")?;
        let stdout = child.stdout.take().expect("piped");
        let (tx, lines) = mpsc::channel();
        std::thread::Builder::new()
            .name("concord-pressure-out".into())
            .spawn(move || {
                for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                    if tx.send(line).is_err() {
                        break;
                    }
                }
            })?;
        let mut pressure = MemoryPressure {
            report: PressureReport {
                asked,
                pid: child.id(),
                ..PressureReport::default()
            },
            stdin: child.stdin.take(),
            child,
            lines,
        };
        // Waited for in short slices: a signal meanwhile stops the child at once, and the run
        // (which then ends at once too) reports it as held.
        let deadline = Instant::now() + READY_WAIT;
        let ready = loop {
            match pressure.lines.recv_timeout(SIGNAL_CHECK) {
                Err(mpsc::RecvTimeoutError::Timeout)
                    if !interrupt::interrupted() && Instant::now() < deadline => {}
                Err(mpsc::RecvTimeoutError::Timeout) if interrupt::interrupted() => {
                    pressure.end();
                    return Ok(pressure);
                }
                other => break other,
            }
        };
        match ready.as_deref().ok().and_then(|l| l.strip_prefix(READY)) {
            Some(bytes) => {
                pressure.report.held_at_start = bytes.trim().parse().unwrap_or(0);
                Ok(pressure)
            }
            None => {
                let status = pressure.end();
                Err(RunFailed::wrap(anyhow::anyhow!(
                    "the memory pressure process did not start ({status})"
                )))
            }
        }
    }

    /// Stops the child (its memory is freed when it exits) and says what it did.
    pub fn stop(mut self) -> PressureReport {
        self.end();
        self.report.clone()
    }

    /// Closes the child's stdin, reads its last line, waits for it (killing it after
    /// [`END_WAIT`]); returns its exit status in words.
    fn end(&mut self) -> String {
        if let Some(mut stdin) = self.stdin.take() {
            let _ = stdin.flush();
        }
        // After a signal the child is not asked: giving back many gigabytes chunk by chunk
        // (or taking them first) would hold the stop for seconds.
        let wait = if interrupt::interrupted() {
            Duration::ZERO
        } else {
            END_WAIT
        };
        let deadline = Instant::now() + wait;
        while let Ok(line) = self
            .lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
        {
            if let Some(rest) = line.strip_prefix(DONE) {
                let mut words = rest.split_whitespace().map(|w| w.parse().unwrap_or(0));
                self.report.peak = words.next().unwrap_or(0);
                self.report.given_back = words.next().unwrap_or(0);
                self.report.held_at_end = words.next().unwrap_or(0);
            }
        }
        if !matches!(self.child.try_wait(), Ok(Some(_))) {
            let _ = self.child.kill();
        }
        match self.child.wait() {
            Ok(status) => status.to_string(),
            Err(e) => e.to_string(),
        }
    }
}

impl Drop for MemoryPressure {
    fn drop(&mut self) {
        if self.stdin.is_some() {
            self.end();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cap_keeps_a_share_and_the_floor() {
        const G: u64 = 1 << 30;
        // Plenty available: what was asked, in whole chunks.
        assert_eq!(allowed(4 * G, 20 * G, 2 * G), 4 * G);
        assert_eq!(allowed(4 * G + 1, 20 * G, 2 * G), 4 * G);
        // 80% of what is available at most.
        assert_eq!(allowed(100 * G, 20 * G, G), 16 * G);
        // Never into the floor.
        assert_eq!(allowed(100 * G, 10 * G, 4 * G), 6 * G);
        assert_eq!(allowed(G, 2 * G, 2 * G), 0);
        assert!(default_floor(Path::new(MEMINFO)) >= G);
    }
}
