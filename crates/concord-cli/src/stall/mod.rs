//! The harnesses that reproduce paper 002's two stall scenarios on this machine, as loads that
//! run next to a workload (`concord run`, `concord pause-bench`):
//!
//! - [`slow_log`]: a stalled log device (`--slow-log RATE`): the GC log goes to a FIFO drained
//!   at RATE bytes per second, so `write()` blocks in the kernel;
//! - [`io_load`]: background writeback (`--io-load CAP`): files written and `fsync`ed next to
//!   the GC log, at most CAP bytes at once, like 002's `background.load.sh`;
//! - [`pressure`]: memory pressure (`--memory-pressure SIZE`, `concord pressure SIZE`): a
//!   co-running process that takes and touches memory, never into the OOM killer.
//!
//! [`StallFlags`] are the flags, [`Loads`] the checked choice, [`ActiveLoads`] the running
//! loads and their report (the summary's `loads` object).

pub mod io_load;
pub mod pressure;
pub mod slow_log;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Result};
use clap::Args;
use concord::config::format_size;
use serde_json::{Map, Value};

use crate::flags::Size;
use io_load::IoLoad;
use pressure::MemoryPressure;
use slow_log::SlowLog;

/// The flags of the stall harnesses. On `run` each one starts its load; on `pause-bench` they
/// size the loads that `--loads` picks.
#[derive(Args, Debug, Clone, Default)]
pub struct StallFlags {
    /// Write the GC log through a stalled log device: a one-page FIFO kept busy by a
    /// background writer and drained at RATE bytes per second (16..=1g, e.g. 16k), so a log
    /// write() blocks in the kernel until a page has drained, about 4 KiB / RATE; the log
    /// still reaches --gc-log (pause-bench: the slow-log load's rate, default 16k).
    #[arg(long = "slow-log", value_name = "RATE", value_parser = slow_log::parse_rate)]
    pub slow_log: Option<u64>,
    /// Background writeback during the run: write and fsync files, at most CAP bytes at once,
    /// in --io-load-dir (pause-bench: the io load's cap, default 1g).
    #[arg(long = "io-load", value_name = "CAP", allow_hyphen_values = true)]
    pub io_load: Option<Size>,
    /// Where the I/O load writes its (unnamed) files (default: the GC log's directory, so the
    /// same file system; else the system's temporary directory).
    #[arg(long = "io-load-dir", value_name = "DIR")]
    pub io_load_dir: Option<PathBuf>,
    /// Memory pressure during the run: a child process takes and touches SIZE of memory
    /// (capped at 80% of MemAvailable, keeping --pressure-floor available) (pause-bench: the
    /// pressure load's size, default half of MemAvailable).
    #[arg(
        long = "memory-pressure",
        value_name = "SIZE",
        allow_hyphen_values = true
    )]
    pub memory_pressure: Option<Size>,
    /// Memory the pressure process leaves available, giving memory back below it (default:
    /// the larger of 1g and a tenth of physical memory).
    #[arg(
        long = "pressure-floor",
        value_name = "SIZE",
        allow_hyphen_values = true
    )]
    pub pressure_floor: Option<Size>,
}

impl StallFlags {
    /// Refuses flags that size a load that is not there; `io_needs` and `pressure_needs` say
    /// what turns each load on.
    pub fn check(
        &self,
        io_on: bool,
        pressure_on: bool,
        io_needs: &str,
        pressure_needs: &str,
    ) -> Result<()> {
        if self.io_load_dir.is_some() && !io_on {
            bail!("--io-load-dir needs the I/O load ({io_needs})");
        }
        if self.pressure_floor.is_some() && !pressure_on {
            bail!("--pressure-floor needs memory pressure ({pressure_needs})");
        }
        Ok(())
    }

    /// The loads these flags start on `run` (checked; nothing starts yet). The I/O load
    /// writes beside `gc_log` when there is one.
    pub fn loads(&self, gc_log: Option<&Path>) -> Result<Loads> {
        self.check(
            self.io_load.is_some(),
            self.memory_pressure.is_some(),
            "--io-load CAP",
            "--memory-pressure SIZE",
        )?;
        let io = self
            .io_load
            .as_ref()
            .map(|cap| {
                let dir = self
                    .io_load_dir
                    .clone()
                    .unwrap_or_else(|| default_io_dir(gc_log));
                checked_io(dir, cap.bytes() as u64)
            })
            .transpose()?;
        let pressure = self
            .memory_pressure
            .as_ref()
            .map(|s| checked_pressure(s.bytes() as u64))
            .transpose()?;
        Ok(Loads {
            slow_log: self.slow_log,
            io,
            pressure,
            pressure_floor: self.pressure_floor.as_ref().map(|f| f.bytes() as u64),
        })
    }
}

/// A byte count for people: `21.4G`, `640M`, `12K`, `512B` (one decimal from a gibibyte on).
pub fn human(bytes: u64) -> String {
    const K: f64 = 1024.0;
    let b = bytes as f64;
    if b >= K * K * K {
        format!("{:.1}G", b / (K * K * K))
    } else if b >= K * K {
        format!("{:.0}M", b / (K * K))
    } else if b >= K {
        format!("{:.0}K", b / K)
    } else {
        format!("{bytes}B")
    }
}

/// The I/O load's directory when none is given: `gc_log`'s, else the temporary directory.
pub fn default_io_dir(gc_log: Option<&Path>) -> PathBuf {
    gc_log
        .and_then(Path::parent)
        .filter(|p| !p.as_os_str().is_empty())
        .map_or_else(std::env::temp_dir, Path::to_path_buf)
}

/// An I/O load in `dir` with `cap`, both checked.
pub fn checked_io(dir: PathBuf, cap: u64) -> Result<(PathBuf, u64)> {
    if cap < io_load::MIN_CAP {
        bail!(
            "--io-load: '{}' is too small (allowed: at least {})",
            format_size(cap as usize),
            format_size(io_load::MIN_CAP as usize)
        );
    }
    io_load::check_dir(&dir)?;
    Ok((dir, cap))
}

/// A memory pressure of `bytes`, checked.
pub fn checked_pressure(bytes: u64) -> Result<u64> {
    if bytes < pressure::CHUNK {
        bail!(
            "--memory-pressure: '{}' is too small (allowed: at least {})",
            format_size(bytes as usize),
            format_size(pressure::CHUNK as usize)
        );
    }
    Ok(bytes)
}

/// The loads of a run, checked.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Loads {
    /// The slow log device's drain rate, bytes per second.
    pub slow_log: Option<u64>,
    /// The I/O load's directory and cap.
    pub io: Option<(PathBuf, u64)>,
    /// The memory pressure's size.
    pub pressure: Option<u64>,
    /// The memory pressure's floor, if given.
    pub pressure_floor: Option<u64>,
}

impl Loads {
    /// Whether there is no load.
    pub fn is_empty(&self) -> bool {
        self.slow_log.is_none() && self.io.is_none() && self.pressure.is_none()
    }

    /// The loads in words: `slow log 1K/s, I/O load 1G in /tmp, memory pressure 8G`.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        if let Some(rate) = self.slow_log {
            parts.push(format!("slow log {}/s", format_size(rate as usize)));
        }
        if let Some((dir, cap)) = &self.io {
            parts.push(format!(
                "I/O load {} in {}",
                format_size(*cap as usize),
                dir.display()
            ));
        }
        if let Some(bytes) = self.pressure {
            parts.push(format!("memory pressure {}", format_size(bytes as usize)));
        }
        if parts.is_empty() {
            "no load".to_string()
        } else {
            parts.join(", ")
        }
    }

    /// Starts the loads: the memory pressure first (it waits until its memory is taken), then
    /// the I/O load, then the slow log device, whose copy of the log goes to `gc_log`.
    pub fn start(&self, gc_log: Option<&Path>) -> Result<ActiveLoads> {
        let mut active = ActiveLoads::default();
        if let Some(bytes) = self.pressure {
            active.pressure = Some(MemoryPressure::start(bytes, self.pressure_floor)?);
        }
        if let Some((dir, cap)) = &self.io {
            active.io = Some(IoLoad::start(dir, *cap)?);
        }
        if let Some(rate) = self.slow_log {
            active.slow_log = Some(SlowLog::start(rate, gc_log)?);
        }
        Ok(active)
    }
}

/// The running loads of a run.
#[derive(Default)]
pub struct ActiveLoads {
    slow_log: Option<SlowLog>,
    io: Option<IoLoad>,
    pressure: Option<MemoryPressure>,
}

impl ActiveLoads {
    /// Where the heap must write its GC log: the slow log device's FIFO, if there is one.
    pub fn gc_log(&self) -> Option<PathBuf> {
        self.slow_log.as_ref().map(|s| s.path().to_path_buf())
    }

    /// The workload has finished: the slow log device drains at full speed, so the heap's
    /// final flush is not stalled.
    pub fn release(&self) {
        if let Some(s) = &self.slow_log {
            s.release();
        }
    }

    /// Stops every load (after the heap has finished): the summary's `loads` object, and what
    /// went wrong (a copy of the log that could not be written, an I/O load that stopped).
    pub fn finish(self) -> (Value, Vec<String>) {
        let mut report = Map::new();
        let mut problems = Vec::new();
        if let Some(s) = self.slow_log {
            match s.finish() {
                Ok(r) => {
                    report.insert("slow_log".into(), r.json());
                }
                Err(e) => problems.push(format!("{e:#}")),
            }
        }
        if let Some(io) = self.io {
            let r = io.stop();
            if let Some(e) = &r.error {
                problems.push(format!("the I/O load stopped early: {e}"));
            }
            report.insert("io_load".into(), r.json());
        }
        if let Some(p) = self.pressure {
            report.insert("memory_pressure".into(), p.stop().json());
        }
        (Value::Object(report), problems)
    }
}

/// The loads' report in words, one line each, for the readable summary.
pub fn readable(report: &Value) -> String {
    let mut s = String::new();
    let size = |v: &Value| human(v.as_u64().unwrap_or(0));
    if let Some(r) = report.get("slow_log") {
        let _ = writeln!(
            s,
            "slow log: drained at {}/s through a {} pipe that started full; {} of log",
            size(&r["rate_bytes_per_s"]),
            size(&r["pipe_bytes"]),
            size(&r["log_bytes"])
        );
    }
    if let Some(r) = report.get("io_load") {
        let _ = writeln!(
            s,
            "I/O load: {} written in {} (at most {} at once), {} fsyncs, longest {:.1} ms",
            size(&r["written_bytes"]),
            r["dir"].as_str().unwrap_or("?"),
            size(&r["peak_held_bytes"]),
            r["fsyncs"],
            r["fsync_max_ms"].as_f64().unwrap_or(0.0)
        );
    }
    if let Some(r) = report.get("memory_pressure") {
        let _ = writeln!(
            s,
            "memory pressure: held {} at the start (asked {}), peak {}, gave back {} early",
            size(&r["held_at_start_bytes"]),
            size(&r["asked_bytes"]),
            size(&r["peak_bytes"]),
            size(&r["given_back_bytes"])
        );
    }
    s
}
