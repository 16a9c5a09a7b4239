//! `concord thp-tuner`: 002 Fig. 3's system-wide THP tuner as a small daemon. Every period it
//! reads `MemAvailable`, the direct page-scan rate (`pgscan_direct` in `/proc/vmstat`) and
//! khugepaged's CPU use, and sets the THP files (`enabled`, `defrag`, `khugepaged/defrag`) by
//! the algorithm's three components; every decision is printed with its inputs. Without
//! permission to write the files it says so and only prints (`--dry-run`). When it stops
//! (`--once`, SIGINT, SIGTERM, a failed write) it puts back the settings it found.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context as _;
use clap::Args;
use concord::config::format_size_rounded;
use concord::os::thp::{
    thp_files_writable, tuner_decision, write_thp_settings, SystemThp, ThpSettings, TunerInputs,
    TunerLimits, TunerPaths, TunerSample, SYSFS_THP_DIR,
};

use crate::console::{errln, outln};
use crate::flags::{count_in, Size};
use crate::{interrupt, RunFailed};

/// The flags of `concord thp-tuner`.
#[derive(Args, Debug)]
pub struct ThpTunerArgs {
    /// Adjustment period: seconds (2s, 1.5) or milliseconds (500ms), 10ms..=3600s (002: 2s).
    #[arg(long, default_value = "2s", value_name = "PERIOD", value_parser = parse_period)]
    pub period: Duration,
    /// Print the decisions without writing the THP files.
    #[arg(long = "dry-run")]
    pub dry_run: bool,
    /// Make one decision (one period after start), then restore and exit.
    #[arg(long)]
    pub once: bool,
    /// Turn THP off while MemAvailable is below this (002: the application's footprint).
    #[arg(
        long = "min-available",
        value_name = "SIZE",
        default_value = "1g",
        allow_hyphen_values = true
    )]
    pub min_available: Size,
    /// Turn direct compaction (defrag) off above this many directly scanned pages per second.
    #[arg(
        long = "max-direct-scan",
        value_name = "PAGES",
        default_value_t = 1000,
        value_parser = count_in(0, 1_000_000_000),
        allow_negative_numbers = true
    )]
    pub max_direct_scan: u32,
    /// Turn background collapsing (khugepaged/defrag) off above this khugepaged CPU use,
    /// percent of one CPU.
    #[arg(
        long = "max-khugepaged-cpu",
        value_name = "PERCENT",
        default_value_t = 10,
        value_parser = count_in(0, 100),
        allow_negative_numbers = true
    )]
    pub max_khugepaged_cpu: u32,
    /// The THP directory to tune (a copy for testing).
    #[arg(long = "sysfs-dir", value_name = "DIR", default_value = SYSFS_THP_DIR)]
    pub sysfs_dir: PathBuf,
    /// The proc directory to read meminfo, vmstat and khugepaged's stat from.
    #[arg(long = "proc-dir", value_name = "DIR", default_value = "/proc")]
    pub proc_dir: PathBuf,
}

/// A period as given: `2s`, `1.5`, `500ms`, in 10ms..=3600s.
pub fn parse_period(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    let (number, scale) = match t.strip_suffix("ms") {
        Some(n) => (n, 1e-3),
        None => (t.strip_suffix('s').unwrap_or(t), 1.0),
    };
    let bad = || "is not a period (allowed: 10ms..=3600s, e.g. 2s or 500ms)".to_string();
    let seconds = number.trim().parse::<f64>().map_err(|_| bad())? * scale;
    if !(0.01..=3600.0).contains(&seconds) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// One decision in words: the inputs against their limits, then the settings.
fn describe(inputs: &TunerInputs, limits: &TunerLimits, decision: &ThpSettings) -> String {
    let khugepaged = inputs
        .khugepaged_cpu_percent
        .map_or("not found".to_string(), |c| format!("{c:.1}%"));
    let settings: Vec<String> = decision
        .files()
        .iter()
        .map(|(file, value)| format!("{file}={value}"))
        .collect();
    format!(
        "MemAvailable {} (min {}), direct scan {:.0} pages/s (max {:.0}), khugepaged {khugepaged} \
         (max {:.0}%) -> {}",
        format_size_rounded(inputs.mem_available as usize),
        format_size_rounded(limits.min_available as usize),
        inputs.direct_scan_per_s,
        limits.max_direct_scan_per_s,
        limits.max_khugepaged_cpu_percent,
        settings.join(" ")
    )
}

/// The settings in words: `enabled=madvise defrag=madvise khugepaged/defrag=1`.
fn settings_text(settings: &ThpSettings) -> String {
    let files: Vec<String> = settings
        .files()
        .iter()
        .map(|(f, v)| format!("{f}={v}"))
        .collect();
    files.join(" ")
}

/// Runs the tuner.
pub fn run(args: ThpTunerArgs) -> anyhow::Result<ExitCode> {
    let paths = TunerPaths {
        thp_dir: args.sysfs_dir.clone(),
        proc_dir: args.proc_dir.clone(),
    };
    let found = SystemThp::read_from(&paths.thp_dir);
    if found.enabled.is_none() {
        anyhow::bail!(
            "no THP settings in {} (is transparent huge page support in this kernel?)",
            paths.thp_dir.display()
        );
    }
    let limits = TunerLimits {
        min_available: args.min_available.bytes() as u64,
        max_direct_scan_per_s: f64::from(args.max_direct_scan),
        max_khugepaged_cpu_percent: f64::from(args.max_khugepaged_cpu),
    };
    let mut first = TunerSample::read(&paths).context("reading the tuner's inputs")?;
    let write = !args.dry_run && thp_files_writable(&paths.thp_dir);
    if !args.dry_run && !write {
        errln!(
            "concord thp-tuner: cannot write the THP files in {} (run as root): acting as \
             --dry-run",
            paths.thp_dir.display()
        );
    }
    let found_settings = ThpSettings::from(&found);
    outln!(
        "concord thp-tuner: found {}; period {:?}{}",
        settings_text(&found_settings),
        args.period,
        if write { "" } else { "; dry run" }
    )?;
    interrupt::install("the tuner restores the THP settings it found and stops");
    let mut changed = false;
    let outcome = tune(
        &args,
        &paths,
        &limits,
        &found,
        write,
        &mut first,
        &mut changed,
    );
    if changed {
        write_thp_settings(&paths.thp_dir, &found_settings)
            .map_err(RunFailed::wrap)
            .context("restoring the THP settings found at start")?;
        errln!(
            "concord thp-tuner: restored {}",
            settings_text(&found_settings)
        );
    }
    outcome?;
    Ok(if interrupt::interrupted() {
        interrupt::exit_code()
    } else {
        ExitCode::SUCCESS
    })
}

/// The loop: one decision per period until `--once`'s one is made or a signal comes.
fn tune(
    args: &ThpTunerArgs,
    paths: &TunerPaths,
    limits: &TunerLimits,
    found: &SystemThp,
    write: bool,
    previous: &mut TunerSample,
    changed: &mut bool,
) -> anyhow::Result<()> {
    while !interrupt::sleep(args.period) {
        let sample = match TunerSample::read(paths) {
            Ok(s) => s,
            Err(e) => {
                errln!("concord thp-tuner: {e}; no decision this period");
                continue;
            }
        };
        let inputs = sample.inputs_since(previous);
        *previous = sample;
        let decision = tuner_decision(&inputs, limits, found);
        let current = ThpSettings::from(&SystemThp::read_from(&paths.thp_dir));
        let differs = decision
            .files()
            .iter()
            .any(|(file, value)| current.files().iter().all(|(f, v)| f != file || v != value));
        let action = match (differs, write) {
            (false, _) => "unchanged",
            (true, false) => "dry run: not written",
            (true, true) => {
                *changed = true;
                write_thp_settings(&paths.thp_dir, &decision).map_err(RunFailed::wrap)?;
                "written"
            }
        };
        outln!("{} ({action})", describe(&inputs, limits, &decision))?;
        if args.once {
            break;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn periods() {
        assert_eq!(parse_period("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_period("1.5"), Ok(Duration::from_millis(1500)));
        assert_eq!(parse_period("500ms"), Ok(Duration::from_millis(500)));
        for bad in ["0", "5ms", "2h", "", "-1s", "4000s", "NaN"] {
            assert!(parse_period(bad).is_err(), "{bad}");
        }
    }
}
