//! What running Java programs on a real HotSpot JVM needs: finding a JDK ([`find_java`]),
//! GCBench's embedded source and checksum, reading a benchmark's `checksum=` / `wall_ms=`
//! output ([`parse_gcbench_output`]) and HotSpot's unified-logging GC log, one record per pause
//! ([`parse_gc_log`]). `concord vs-hotspot` (`crate::vs_hotspot`) runs GCBench and
//! binary-trees with them; `concord jvm bench` uses them too.
//!
//! Concord's `gcbench` workload and `bench/hotspot/GCBench.java` implement the same
//! algorithm and compute the same checksum. The GC log parser also reads logs produced
//! elsewhere (any decorations, extra tags, noise lines).

use std::env;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};
use serde::Serialize;

/// The Java source of the benchmark, embedded at build time.
pub const GCBENCH_SOURCE: &str = include_str!("../../../bench/hotspot/GCBench.java");

/// Writes the Java `sources` (file name, text) into `workdir` and compiles them with `javac`
/// into `workdir/classes`, which it returns; a javac failure is an error with its output.
pub fn compile_java(javac: &Path, workdir: &Path, sources: &[(&str, &str)]) -> Result<PathBuf> {
    let classes = workdir.join("classes");
    fs::create_dir_all(&classes).with_context(|| format!("cannot create {}", classes.display()))?;
    let mut command = Command::new(javac);
    command.args(["-encoding", "UTF-8", "-d"]).arg(&classes);
    for (name, text) in sources {
        let path = workdir.join(name);
        fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))?;
        command.arg(path);
    }
    let output = command
        .output()
        .with_context(|| format!("cannot start {}", javac.display()))?;
    if !output.status.success() {
        bail!(
            "javac failed ({}):\n{}{}",
            output.status,
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
    }
    Ok(classes)
}

/// Name of the benchmark's main class (no package).
pub const GCBENCH_MAIN_CLASS: &str = "GCBench";

/// Checksum printed by one copy of GCBench for one round (derived in `GCBench.java`).
pub const GCBENCH_CHECKSUM_PER_COPY: u64 = 30_161_104;

/// Last-resort JDK location, tried when neither `JAVA_HOME` nor `PATH` yields a JDK.
const FALLBACK_JDK_BIN: &str = "/usr/lib/jvm/java-17-openjdk-amd64/bin";

/// A usable JDK: the launcher, the compiler and the runtime version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JavaTools {
    /// The `java` launcher.
    pub java: PathBuf,
    /// The `javac` compiler belonging to the same JDK.
    pub javac: PathBuf,
    /// The version reported by `java -version`, e.g. `17.0.15`.
    pub version: String,
}

/// Kind of a stop-the-world pause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum PauseKind {
    /// A young-generation collection (`Pause Young`).
    Young,
    /// A full collection (`Pause Full`).
    Full,
}

/// One GC pause as reported by HotSpot's `gc` log tag.
///
/// Sizes come from the log line, which HotSpot prints truncated to its unit (`16M` means
/// 16 to 17 MiB); they are converted to KiB without adding precision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HotspotPause {
    /// JVM uptime at the end of the pause, in seconds (`NaN` if the line had no
    /// uptime decoration).
    pub uptime_s: f64,
    /// HotSpot's collection number, `GC(<id>)`.
    pub gc_id: u64,
    /// Young or full collection.
    pub kind: PauseKind,
    /// The cause without its parentheses, e.g. `Allocation Failure`, `System.gc()`.
    pub cause: String,
    /// Heap used before the collection, KiB.
    pub before_kb: u64,
    /// Heap used after the collection, KiB.
    pub after_kb: u64,
    /// Committed heap after the collection, KiB.
    pub capacity_kb: u64,
    /// Pause duration in milliseconds.
    pub ms: f64,
}

/// Finds a JDK.
///
/// With `explicit` only that one is tried: a file is the `java` executable itself (its
/// `javac` is found in the home it reports); a directory is a JDK `bin` directory or home. Otherwise, in order: `$JAVA_HOME/bin`, `java`/`javac` on `PATH`,
/// `/usr/lib/jvm/java-17-openjdk-amd64/bin`. A candidate is accepted when `javac` exists
/// next to `java` and `java -version` succeeds.
pub fn find_java(explicit: Option<&Path>) -> Result<JavaTools> {
    if let Some(path) = explicit {
        // A file is the java executable itself (a wrapper script or a link lives outside its
        // JDK): it is asked for its home, never replaced by the `java` beside it.
        if path.is_file() {
            let jdk = crate::bench::jdk::Jdk::find(Some(path))?;
            return Ok(JavaTools {
                java: jdk.exe,
                javac: jdk.javac,
                version: jdk.version,
            });
        }
        let bin = explicit_bin_dir(path)?;
        return probe_bin_dir(&bin)
            .with_context(|| format!("--java {}: not a usable JDK", path.display()));
    }

    let mut tried = Vec::new();
    let mut candidates = Vec::new();
    match env::var_os("JAVA_HOME").filter(|h| !h.is_empty()) {
        Some(home) => candidates.push(("$JAVA_HOME/bin", PathBuf::from(home).join("bin"))),
        None => tried.push("$JAVA_HOME (not set)".to_string()),
    }
    match find_on_path("java") {
        Some(dir) => {
            // `/usr/bin/java` is often a symlink; the JDK's own bin directory holds javac.
            let resolved = fs::canonicalize(dir.join("java"))
                .ok()
                .and_then(|real| real.parent().map(Path::to_path_buf))
                .filter(|real| *real != dir);
            candidates.push(("PATH", dir));
            if let Some(real) = resolved {
                candidates.push(("PATH, symlink resolved", real));
            }
        }
        None => tried.push("PATH (no `java` on it)".to_string()),
    }
    candidates.push(("fallback", PathBuf::from(FALLBACK_JDK_BIN)));

    for (origin, bin) in candidates {
        match probe_bin_dir(&bin) {
            Ok(tools) => return Ok(tools),
            Err(e) => tried.push(format!("{} ({origin}): {e:#}", bin.display())),
        }
    }
    bail!(
        "no JDK found: set JAVA_HOME or pass --java; tried {}",
        tried.join("; ")
    )
}

/// Checksum GCBench prints for `copies` copies over `rounds` rounds.
pub fn expected_checksum(copies: usize, rounds: usize) -> u64 {
    GCBENCH_CHECKSUM_PER_COPY * copies as u64 * rounds as u64
}

/// Parses the pauses out of a HotSpot unified-logging GC log.
///
/// Reads lines such as
/// `[0.123s][info][gc] GC(3) Pause Young (Allocation Failure) 20M->3M(61M) 4.321ms`
/// and `GC(9) Pause Full (Ergonomics) 40M->10M(61M) 25.1ms`, with any leading
/// decorations (`[<time>]`, uptime as `0.123s`, `123ms` or `123ns`, padded level and tag
/// sets), sizes in B/K/M/G/T and causes containing spaces or parentheses. Every other line
/// (`Using Parallel`, `gc,start` lines without sizes, phases, safepoints, remarks, ...) is
/// ignored.
pub fn parse_gc_log(text: &str) -> Vec<HotspotPause> {
    text.lines().filter_map(parse_pause_line).collect()
}

/// Sum of the pause durations, in milliseconds.
pub fn total_pause_ms(pauses: &[HotspotPause]) -> f64 {
    // Folded from +0.0: an empty float `sum` is -0.0, which prints as "-0.0".
    pauses.iter().fold(0.0, |total, p| total + p.ms)
}

/// Longest pause in milliseconds, `0.0` if there is none.
pub fn max_pause_ms(pauses: &[HotspotPause]) -> f64 {
    pauses.iter().map(|p| p.ms).fold(0.0, f64::max)
}

/// Number of pauses of the given kind.
pub fn pause_count(pauses: &[HotspotPause], kind: PauseKind) -> usize {
    pauses.iter().filter(|p| p.kind == kind).count()
}

// ---------------------------------------------------------------------------------------
// JDK discovery

/// The `bin` directory meant by an explicit `--java` path.
fn explicit_bin_dir(path: &Path) -> Result<PathBuf> {
    if path.is_dir() {
        if path.join("bin").join("java").is_file() {
            return Ok(path.join("bin"));
        }
        if path.join("java").is_file() {
            return Ok(path.to_path_buf());
        }
        bail!(
            "--java {}: directory holds neither bin/java nor java",
            path.display()
        );
    }
    bail!("--java {}: no such file or directory", path.display())
}

/// Checks that `bin` holds a working `java` and a `javac`.
fn probe_bin_dir(bin: &Path) -> Result<JavaTools> {
    let java = bin.join("java");
    let javac = bin.join("javac");
    if !java.is_file() {
        bail!("no java");
    }
    if !javac.is_file() {
        bail!("java but no javac (a JRE, not a JDK?)");
    }
    let output = Command::new(&java)
        .arg("-version")
        .output()
        .with_context(|| format!("cannot start {}", java.display()))?;
    let text = String::from_utf8_lossy(&output.stderr);
    if !output.status.success() {
        bail!(
            "`java -version` failed ({}): {}",
            output.status,
            text.trim()
        );
    }
    Ok(JavaTools {
        java,
        javac,
        version: parse_java_version(&text).unwrap_or_else(|| "unknown".to_string()),
    })
}

/// The version from `java -version` output: the quoted string of the first line, e.g.
/// `openjdk version "17.0.15" 2025-04-15` gives `17.0.15`.
fn parse_java_version(text: &str) -> Option<String> {
    let line = text.lines().find(|l| l.contains(" version "))?;
    let quoted = line.split('"').nth(1);
    Some(quoted.unwrap_or(line.trim()).to_string())
}

/// The first `PATH` directory holding a file called `name`.
fn find_on_path(name: &str) -> Option<PathBuf> {
    let path = env::var_os("PATH")?;
    env::split_paths(&path).find(|dir| !dir.as_os_str().is_empty() && dir.join(name).is_file())
}

// ---------------------------------------------------------------------------------------
// A benchmark's output

/// `checksum=<u64>` and `wall_ms=<f64>` from the benchmark's standard output.
pub fn parse_gcbench_output(stdout: &str) -> Result<(u64, f64)> {
    let mut checksum = None;
    let mut wall_ms = None;
    for line in stdout.lines().map(str::trim) {
        if let Some(v) = line.strip_prefix("checksum=") {
            checksum = Some(
                v.parse::<u64>()
                    .with_context(|| format!("bad checksum {v:?}"))?,
            );
        } else if let Some(v) = line.strip_prefix("wall_ms=") {
            wall_ms = Some(
                v.parse::<f64>()
                    .with_context(|| format!("bad wall_ms {v:?}"))?,
            );
        }
    }
    match (checksum, wall_ms) {
        (Some(c), Some(w)) => Ok((c, w)),
        (None, _) => bail!("no `checksum=` line"),
        (_, None) => bail!("no `wall_ms=` line"),
    }
}

// ---------------------------------------------------------------------------------------
// GC log parsing

fn parse_pause_line(line: &str) -> Option<HotspotPause> {
    let (decorations, message) = split_decorations(line.trim());
    let uptime_s = uptime_from_decorations(&decorations).unwrap_or(f64::NAN);

    let rest = message.strip_prefix("GC(")?;
    let (id, rest) = rest.split_once(')')?;
    let gc_id = id.parse().ok()?;
    let rest = rest.trim_start().strip_prefix("Pause ")?.trim_start();
    let (kind, rest) = rest.split_once(' ')?;
    let kind = match kind {
        "Young" => PauseKind::Young,
        "Full" => PauseKind::Full,
        _ => return None,
    };

    let (rest, duration) = rest.trim_end().rsplit_once(' ')?;
    let ms = parse_duration_ms(duration)?;
    let rest = rest.trim_end();
    let (cause, sizes) = match rest.rsplit_once(' ') {
        Some((cause, sizes)) => (cause.trim(), sizes),
        None => ("", rest),
    };
    let (before_kb, after_kb, capacity_kb) = parse_sizes(sizes)?;

    Some(HotspotPause {
        uptime_s,
        gc_id,
        kind,
        cause: strip_cause_parens(cause).to_string(),
        before_kb,
        after_kb,
        capacity_kb,
        ms,
    })
}

/// Splits `[a][b][c] message` into the trimmed decorations and the message.
pub(crate) fn split_decorations(mut line: &str) -> (Vec<&str>, &str) {
    let mut decorations = Vec::new();
    while let Some(rest) = line.strip_prefix('[') {
        let Some((decoration, after)) = rest.split_once(']') else {
            break;
        };
        decorations.push(decoration.trim());
        line = after;
    }
    (decorations, line.trim_start())
}

/// JVM uptime in seconds from the decorations: `uptime` (`0.123s`) is preferred, then
/// `uptimemillis` (`123ms`), then `uptimenanos` (`123ns`). Wall-clock decorations
/// (`timemillis`, `timenanos`) look alike but are far larger and are skipped.
pub(crate) fn uptime_from_decorations(decorations: &[&str]) -> Option<f64> {
    // Anything above ten years of uptime must be time since the epoch.
    const MAX_UPTIME_S: f64 = 10.0 * 365.0 * 24.0 * 3600.0;
    let number = |d: &str, suffix: &str| -> Option<f64> {
        let v = d.strip_suffix(suffix)?;
        if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return None;
        }
        v.parse::<f64>().ok()
    };
    let seconds = |suffix: &str, per_second: f64| {
        decorations
            .iter()
            .filter_map(|d| number(d, suffix))
            .map(|v| v / per_second)
            .find(|s| *s < MAX_UPTIME_S)
    };
    // "ms" and "ns" also end in "s", but their prefix is not a number.
    seconds("s", 1.0)
        .or_else(|| seconds("ms", 1e3))
        .or_else(|| seconds("ns", 1e9))
}

/// `4.321ms` (also `1.2s` and `850us`) in milliseconds.
pub(crate) fn parse_duration_ms(text: &str) -> Option<f64> {
    let (value, ms): (&str, fn(f64) -> f64) = if let Some(v) = text.strip_suffix("ms") {
        (v, |v| v)
    } else if let Some(v) = text.strip_suffix("us") {
        (v, |v| v / 1e3)
    } else if let Some(v) = text.strip_suffix('s') {
        (v, |v| v * 1e3)
    } else {
        return None;
    };
    let v: f64 = value.parse().ok()?;
    (v.is_finite() && v >= 0.0).then(|| ms(v))
}

/// `20M->3M(61M)` as KiB.
fn parse_sizes(text: &str) -> Option<(u64, u64, u64)> {
    let (before, rest) = text.split_once("->")?;
    let (after, capacity) = rest.strip_suffix(')')?.split_once('(')?;
    Some((
        parse_size_kb(before)?,
        parse_size_kb(after)?,
        parse_size_kb(capacity)?,
    ))
}

/// `512K`, `20M`, `1G`, `100B` (HotSpot's units, powers of 1024) as KiB.
pub(crate) fn parse_size_kb(text: &str) -> Option<u64> {
    let unit = text.chars().last()?;
    let kb_per_unit = match unit {
        'B' => 1.0 / 1024.0,
        'K' => 1.0,
        'M' => 1024.0,
        'G' => 1024.0 * 1024.0,
        'T' => 1024.0 * 1024.0 * 1024.0,
        _ => return None,
    };
    let value: f64 = text[..text.len() - 1].parse().ok()?;
    if !value.is_finite() || value < 0.0 {
        return None;
    }
    Some((value * kb_per_unit).round() as u64)
}

/// `(Allocation Failure)` becomes `Allocation Failure`; `(System.gc())` becomes
/// `System.gc()`. Several groups (G1's `(Normal) (G1 Evacuation Pause)`) are kept as
/// they are.
fn strip_cause_parens(cause: &str) -> &str {
    let Some(inner) = cause.strip_prefix('(').and_then(|c| c.strip_suffix(')')) else {
        return cause;
    };
    // Only strip if the first '(' closes at the very end, i.e. it is one group.
    let mut depth = 0usize;
    for (i, c) in cause.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => {
                depth = depth.saturating_sub(1);
                if depth == 0 && i != cause.len() - 1 {
                    return cause;
                }
            }
            _ => {}
        }
    }
    inner
}

#[cfg(test)]
mod tests {
    use super::*;

    const FIXTURE_PARALLEL: &str = include_str!("../tests/fixtures/hotspot_gc_parallel.log");
    const FIXTURE_PARALLEL_FULL: &str =
        include_str!("../tests/fixtures/hotspot_gc_parallel_full.log");
    const FIXTURE_STAR_DECORATED: &str =
        include_str!("../tests/fixtures/hotspot_gc_star_decorated.log");

    fn one(line: &str) -> HotspotPause {
        let pauses = parse_gc_log(line);
        assert_eq!(pauses.len(), 1, "expected one pause in {line:?}");
        pauses.into_iter().next().unwrap()
    }

    #[test]
    fn parses_young_pause() {
        let p =
            one("[0.123s][info][gc] GC(3) Pause Young (Allocation Failure) 20M->3M(61M) 4.321ms");
        assert_eq!(
            p,
            HotspotPause {
                uptime_s: 0.123,
                gc_id: 3,
                kind: PauseKind::Young,
                cause: "Allocation Failure".to_string(),
                before_kb: 20 * 1024,
                after_kb: 3 * 1024,
                capacity_kb: 61 * 1024,
                ms: 4.321,
            }
        );
    }

    #[test]
    fn parses_full_pause() {
        let p = one("[1.0s][info][gc] GC(9) Pause Full (Ergonomics) 40M->10M(61M) 25.1ms");
        assert_eq!(p.kind, PauseKind::Full);
        assert_eq!(p.gc_id, 9);
        assert_eq!(p.cause, "Ergonomics");
        assert_eq!(
            (p.before_kb, p.after_kb, p.capacity_kb),
            (40960, 10240, 62464)
        );
        assert_eq!(p.uptime_s, 1.0);
        assert_eq!(p.ms, 25.1);
    }

    #[test]
    fn causes_with_parentheses_and_spaces() {
        let p = one("[2.5s][info][gc] GC(12) Pause Full (System.gc()) 5M->1M(64M) 3.000ms");
        assert_eq!(p.cause, "System.gc()");
        let p = one("[2.5s][info][gc] GC(13) Pause Full (Metadata GC Threshold) 5M->1M(64M) 3.0ms");
        assert_eq!(p.cause, "Metadata GC Threshold");
        let p = one(
            "[0.2s][info][gc] GC(1) Pause Young (Normal) (G1 Evacuation Pause) 24M->4M(256M) 3.2ms",
        );
        assert_eq!(p.cause, "(Normal) (G1 Evacuation Pause)");
        let p = one("[0.2s][info][gc] GC(1) Pause Young (GCLocker Initiated GC) 1M->1M(2M) 0.1ms");
        assert_eq!(p.cause, "GCLocker Initiated GC");
    }

    #[test]
    fn decoration_variants() {
        let p = one("[2026-01-02T03:04:05.678+0000][0.456s][info][gc] GC(4) Pause Young (Allocation Failure) 1G->512M(2G) 10.5ms");
        assert_eq!(p.uptime_s, 0.456);
        assert_eq!(
            (p.before_kb, p.after_kb, p.capacity_kb),
            (1 << 20, 1 << 19, 2 << 20)
        );
        // uptimemillis, padded level and tags.
        let p = one("[2026-01-02T03:04:05.678+0000][1234ms][info ][gc          ] GC(5) Pause Young (Allocation Failure) 8192K->1024K(30720K) 0.5ms");
        assert_eq!(p.uptime_s, 1.234);
        assert_eq!(
            (p.before_kb, p.after_kb, p.capacity_kb),
            (8192, 1024, 30720)
        );
        // timemillis (wall clock) must not be taken for uptime; uptimenanos is.
        let p = one("[1767323045678ms][2000000ns][info][gc] GC(6) Pause Young (Allocation Failure) 2048B->1024B(4096K) 0.5ms");
        assert!((p.uptime_s - 0.002).abs() < 1e-12);
        assert_eq!((p.before_kb, p.after_kb, p.capacity_kb), (2, 1, 4096));
        // pid, tid, hostname and uptime in any order.
        let p = one(
            "[myhost][1234p][5678t][3.25s][info][gc] GC(7) Pause Full (Ergonomics) 1M->1M(2M) 1ms",
        );
        assert_eq!(p.uptime_s, 3.25);
        assert_eq!(p.ms, 1.0);
        // No decorations at all.
        let p = one("GC(8) Pause Young (Allocation Failure) 3M->1M(9M) 0.250ms");
        assert!(p.uptime_s.is_nan());
        assert_eq!(p.gc_id, 8);
        // Windows line endings and trailing blanks.
        let p =
            one("[0.5s][info][gc] GC(9) Pause Young (Allocation Failure) 3M->1M(9M) 0.75ms  \r\n");
        assert_eq!(p.ms, 0.75);
    }

    #[test]
    fn ignores_other_lines() {
        let text = "\
[0.004s][info][gc] Using Parallel
[0.092s][info][gc,start    ] GC(0) Pause Young (Allocation Failure)
[0.092s][info][gc,start    ] GC(1) Pause Full (Ergonomics)
[0.137s][info][gc,phases   ] GC(2) Marking Phase 8.851ms
[0.103s][info][gc,heap     ] GC(0) PSYoungGen: 8704K(9728K)->1024K(9728K) Eden: 8704K(8704K)->0K(8704K)
[0.103s][info][gc,cpu      ] GC(0) User=0.02s Sys=0.00s Real=0.01s
[0.103s][info][safepoint   ] Safepoint \"ParallelGCFailedAllocation\", Time since last: 72261035 ns, Total: 10431166 ns
[0.2s][info][gc] GC(3) Pause Remark 25M->25M(256M) 1.234ms
[0.2s][info][gc] GC(4) Pause Cleanup 25M->25M(256M) 0.1ms
[0.2s][info][gc] GC(5) Pause Init Mark 0.1ms
[0.2s][info][gc] GC(6) Garbage Collection (Warmup) 20M(10%)->8M(4%)
[0.2s][info][gc] GC(7) Pause Young (Allocation Failure) 20M->3M(61M)
[0.2s][info][gc] GC(8) Pause Young (Allocation Failure) 20X->3M(61M) 1.0ms
[0.2s][info][gc] GC(x) Pause Young (Allocation Failure) 20M->3M(61M) 1.0ms
[0.2s
random text

";
        assert!(parse_gc_log(text).is_empty());
    }

    #[test]
    fn real_log_young_only() {
        let pauses = parse_gc_log(FIXTURE_PARALLEL);
        assert_eq!(pause_count(&pauses, PauseKind::Young), 44);
        assert_eq!(pause_count(&pauses, PauseKind::Full), 0);
        assert_eq!(pauses.len(), 44);
        for (i, p) in pauses.iter().enumerate() {
            assert_eq!(p.gc_id, i as u64);
            assert_eq!(p.cause, "Allocation Failure");
            // Adaptive sizing moves the committed heap between 52M and 61M.
            assert!((52 * 1024..=61 * 1024).contains(&p.capacity_kb));
            assert!(p.ms > 0.0 && p.uptime_s > 0.0);
        }
        assert!(pauses.windows(2).all(|w| w[0].uptime_s <= w[1].uptime_s));
        let first = &pauses[0];
        assert_eq!((first.before_kb, first.after_kb), (16 * 1024, 15 * 1024));
        let sum: f64 = pauses.iter().map(|p| p.ms).sum();
        assert_eq!(total_pause_ms(&pauses), sum);
        assert!(max_pause_ms(&pauses) >= first.ms);
    }

    #[test]
    fn real_log_with_full_gc() {
        let pauses = parse_gc_log(FIXTURE_PARALLEL_FULL);
        assert_eq!(pause_count(&pauses, PauseKind::Young), 80);
        assert_eq!(pause_count(&pauses, PauseKind::Full), 1);
        let full = pauses.iter().find(|p| p.kind == PauseKind::Full).unwrap();
        assert_eq!(full.gc_id, 3);
        assert_eq!(full.cause, "Ergonomics");
        assert_eq!(
            (full.before_kb, full.after_kb, full.capacity_kb),
            (49 * 1024, 11 * 1024, 61 * 1024)
        );
        assert_eq!(full.ms, 24.347);
        assert_eq!(full.uptime_s, 0.216);
    }

    #[test]
    fn real_log_all_gc_tags_decorated() {
        // -Xlog:gc*,safepoint with utctime,uptimemillis,level,tags (first 110 lines).
        let pauses = parse_gc_log(FIXTURE_STAR_DECORATED);
        assert_eq!(pause_count(&pauses, PauseKind::Young), 11);
        assert_eq!(pause_count(&pauses, PauseKind::Full), 1);
        let ids: Vec<u64> = pauses.iter().map(|p| p.gc_id).collect();
        assert_eq!(ids, (0..12).collect::<Vec<_>>());
        assert_eq!(pauses[0].uptime_s, 0.103);
        assert_eq!(pauses[0].ms, 10.303);
        assert_eq!(pauses[2].kind, PauseKind::Full);
        assert_eq!(pauses[2].ms, 16.395);
    }

    #[test]
    fn helpers_on_empty_and_small_lists() {
        assert_eq!(total_pause_ms(&[]), 0.0);
        // Not -0.0 (equal to 0.0, but printed "-0.0").
        assert!(total_pause_ms(&[]).is_sign_positive());
        assert_eq!(format!("{:.1}", total_pause_ms(&[])), "0.0");
        assert_eq!(max_pause_ms(&[]), 0.0);
        let pauses = parse_gc_log(
            "GC(0) Pause Young (A) 1M->1M(2M) 1.5ms\nGC(1) Pause Full (B) 1M->1M(2M) 2.5ms\n",
        );
        assert_eq!(total_pause_ms(&pauses), 4.0);
        assert_eq!(max_pause_ms(&pauses), 2.5);
    }

    #[test]
    fn gcbench_output_parsing() {
        assert_eq!(
            parse_gcbench_output("checksum=30161104\nwall_ms=234.773\n").unwrap(),
            (30161104, 234.773)
        );
        assert!(parse_gcbench_output("checksum=1\n").is_err());
        assert!(parse_gcbench_output("wall_ms=1.0\n").is_err());
        assert!(parse_gcbench_output("checksum=x\nwall_ms=1.0\n").is_err());
    }

    #[test]
    fn java_version_parsing() {
        let text = "openjdk version \"17.0.15\" 2025-04-15\nOpenJDK Runtime Environment";
        assert_eq!(parse_java_version(text).as_deref(), Some("17.0.15"));
        assert_eq!(parse_java_version("nonsense"), None);
    }

    #[test]
    fn embedded_source_matches_constants() {
        assert!(GCBENCH_SOURCE.contains("public class GCBench"));
        assert!(GCBENCH_SOURCE.contains(&format!("{GCBENCH_CHECKSUM_PER_COPY}L")));
        assert_eq!(expected_checksum(2, 3), 6 * 30_161_104);
    }

    #[test]
    fn explicit_java_that_does_not_exist() {
        let err = find_java(Some(Path::new("/nonexistent/jdk"))).unwrap_err();
        assert!(format!("{err:#}").contains("/nonexistent/jdk"));
    }

    /// `--java FILE` is that executable (here a wrapper script beside a decoy `java` that
    /// fails), with `javac` from the home it reports, never the `java` in FILE's directory.
    #[test]
    #[cfg_attr(
        no_jdk17,
        ignore = "needs JDK 17 in /usr/lib/jvm/java-17-openjdk-amd64 when the tests were built: apt-get install openjdk-17-jdk-headless (.ci/run does)"
    )]
    fn explicit_java_file_is_the_executable_given() {
        use std::os::unix::fs::PermissionsExt;
        let dir = env::temp_dir().join(format!("concord-java-wrapper-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        let script = |name: &str, body: &str| {
            let path = dir.join(name);
            fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
            fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
            path
        };
        script("java", "exit 3");
        script("javac", "exit 3");
        let wrapper = script(
            "java17",
            "exec /usr/lib/jvm/java-17-openjdk-amd64/bin/java \"$@\"",
        );
        let tools = find_java(Some(&wrapper));
        let _ = fs::remove_dir_all(&dir);
        let tools = tools.unwrap();
        assert_eq!(tools.java, wrapper);
        assert!(tools.version.starts_with("17"), "{tools:?}");
        assert!(
            tools
                .javac
                .starts_with("/usr/lib/jvm/java-17-openjdk-amd64"),
            "{tools:?}"
        );
    }
}
