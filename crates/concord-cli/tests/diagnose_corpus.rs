//! `concord diagnose` on a corpus of real GC logs (`tests/fixtures/diagnose/real/`: JDK 17 and
//! Temurin 25 logs of every collector written here by `bench/diagnose/make_fixtures.sh`, public
//! JDK 5-11 logs from GCViewer and garbagecat; `real/SOURCES.md` says where each comes from).
//! `real/expected.tsv` says, for each log, how many pauses it holds, their total and longest
//! wall time, what GCViewer 1.36 counts, and why the two differ where they do; the numbers were
//! read off the logs and GCViewer, never taken from diagnose inside a test.
//!
//! - every log is read with those numbers (or refused with status 2 where it holds no pause);
//! - GCViewer, where present, counts the same pauses on a representative subset of the logs the
//!   table says it agrees on;
//! - bad input: empty, binary, a directory, real logs cut mid-line and mid-record, real logs
//!   with garbage lines between their lines.
//!
//! Where GCViewer and diagnose differ, the table's note says why (GCViewer reads no pause of
//! most unified decorations, counts a nested full collection twice, …).

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{concord, scratch, text};
use serde_json::Value;

const REAL: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/diagnose/real");

/// What the table expects of diagnose on one log.
#[derive(Clone, Debug, PartialEq)]
enum Expect {
    /// Refused with status 2: the log holds no pause line.
    Exit2,
    /// Read: the number of pauses, the sum and the largest of their `real_ms`.
    Read {
        pauses: u64,
        total_ms: f64,
        max_ms: f64,
    },
}

/// One row of `expected.tsv`.
#[derive(Clone, Debug)]
struct Row {
    file: String,
    expect: Expect,
    gcviewer_pauses: u64,
    gcviewer_total_ms: f64,
    agree: bool,
}

impl Row {
    fn path(&self) -> PathBuf {
        Path::new(REAL).join(&self.file)
    }
}

fn number(field: &str, what: &str, file: &str) -> f64 {
    field
        .parse()
        .unwrap_or_else(|e| panic!("expected.tsv, {file}: {what} '{field}': {e}"))
}

/// The rows of `expected.tsv`.
fn table() -> Vec<Row> {
    let tsv = fs::read_to_string(Path::new(REAL).join("expected.tsv")).expect("expected.tsv");
    let mut lines = tsv.lines();
    assert_eq!(
        lines.next(),
        Some(
            "file\tconcord_pauses\tconcord_real_total_ms\tconcord_real_max_ms\tgcviewer_pauses\t\
             gcviewer_total_ms\tagree\tnote"
        )
    );
    lines
        .filter(|l| !l.is_empty())
        .map(|line| {
            let f: Vec<&str> = line.split('\t').collect();
            assert_eq!(f.len(), 8, "expected.tsv: {line}");
            let file = f[0].to_string();
            let expect = if f[1] == "exit 2" {
                Expect::Exit2
            } else {
                Expect::Read {
                    pauses: number(f[1], "pauses", &file) as u64,
                    total_ms: number(f[2], "total", &file),
                    max_ms: number(f[3], "max", &file),
                }
            };
            assert!(
                f[6] == "yes" || !f[7].trim().is_empty(),
                "expected.tsv, {file}: a log where GCViewer disagrees says why in its note"
            );
            Row {
                expect,
                gcviewer_pauses: number(f[4], "GCViewer pauses", &file) as u64,
                gcviewer_total_ms: number(f[5], "GCViewer total", &file),
                agree: match f[6] {
                    "yes" => true,
                    "no" => false,
                    other => panic!("expected.tsv, {file}: agree '{other}'"),
                },
                file,
            }
        })
        .collect()
}

/// The row of `file`.
fn row(file: &str) -> Row {
    table()
        .into_iter()
        .find(|r| r.file == file)
        .unwrap_or_else(|| panic!("expected.tsv has no row for {file}"))
}

/// The GC logs under `real/`, as `dir/name`.
fn fixture_files() -> Vec<String> {
    let mut files = Vec::new();
    for dir in ["jdk17", "jdk25", "public"] {
        for entry in fs::read_dir(Path::new(REAL).join(dir)).unwrap() {
            let name = entry.unwrap().file_name().to_string_lossy().into_owned();
            if !name.ends_with(".md") && !name.ends_with(".tsv") {
                files.push(format!("{dir}/{name}"));
            }
        }
    }
    files.sort();
    files
}

/// What diagnose made of a log: its pauses, or its exit status and standard error.
#[derive(Debug)]
enum Reading {
    Read {
        pauses: u64,
        total_ms: f64,
        max_ms: f64,
    },
    Refused {
        status: Option<i32>,
        stderr: String,
    },
}

/// `concord diagnose --single --json PATH`.
fn diagnose(path: &Path) -> Reading {
    let out = concord(&["diagnose", "--single", "--json", path.to_str().unwrap()]);
    if !out.status.success() {
        return Reading::Refused {
            status: out.status.code(),
            stderr: text(&out.stderr),
        };
    }
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{}: stdout is not JSON ({e})", path.display()));
    let real: Vec<f64> = json["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|r| r["real_ms"].as_f64().unwrap_or(0.0))
        .collect();
    assert_eq!(
        json["pauses"].as_u64(),
        Some(real.len() as u64),
        "{}",
        path.display()
    );
    Reading::Read {
        pauses: real.len() as u64,
        total_ms: real.iter().sum(),
        max_ms: real.iter().copied().fold(0.0, f64::max),
    }
}

/// The table writes milliseconds to 4 decimals.
const MS_TOLERANCE: f64 = 1e-3;

/// Whether diagnose's reading of `path` is what `expect` says; the difference if not.
fn compare(name: &str, expect: &Expect, reading: &Reading) -> Result<(), String> {
    match (expect, reading) {
        (Expect::Exit2, Reading::Refused { status, stderr }) => {
            if *status == Some(2) && stderr.contains("no GC pauses found") {
                Ok(())
            } else {
                Err(format!(
                    "{name}: expected status 2 with 'no GC pauses found', got {status:?}: {stderr}"
                ))
            }
        }
        (
            Expect::Read {
                pauses,
                total_ms,
                max_ms,
            },
            Reading::Read {
                pauses: p,
                total_ms: t,
                max_ms: m,
            },
        ) => {
            if p == pauses
                && (t - total_ms).abs() <= MS_TOLERANCE
                && (m - max_ms).abs() <= MS_TOLERANCE
            {
                Ok(())
            } else {
                Err(format!(
                    "{name}: expected {pauses} pauses, {total_ms} ms, max {max_ms} ms; \
                     diagnose read {p} pauses, {t:.4} ms, max {m:.4} ms"
                ))
            }
        }
        (expect, reading) => Err(format!("{name}: expected {expect:?}, got {reading:?}")),
    }
}

/// Runs `check` on every row, on 4 threads, and fails naming every row that does not pass.
fn check_rows(rows: &[Row], check: impl Fn(&Row) -> Result<(), String> + Sync) {
    let failures: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = rows
            .chunks(rows.len().div_ceil(4).max(1))
            .map(|chunk| s.spawn(|| chunk.iter().filter_map(|r| check(r).err()).collect()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|_| vec!["a check panicked".into()]))
            .collect::<Vec<String>>()
    });
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn the_table_lists_every_real_log_once() {
    let mut listed: Vec<String> = table().into_iter().map(|r| r.file).collect();
    let count = listed.len();
    listed.sort();
    listed.dedup();
    assert_eq!(
        listed.len(),
        count,
        "a file is listed twice in expected.tsv"
    );
    assert_eq!(listed, fixture_files());
    // The corpus stays small: the whole of real/ under 3 MB.
    let bytes: u64 = ["jdk17", "jdk25", "public"]
        .iter()
        .flat_map(|d| fs::read_dir(Path::new(REAL).join(d)).unwrap())
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(bytes < 3 << 20, "the corpus is {bytes} bytes");
}

#[test]
fn every_real_log_is_read_as_the_table_says() {
    let rows: Vec<Row> = table();
    assert!(rows.len() >= 60, "only {} rows", rows.len());
    check_rows(&rows, |r| compare(&r.file, &r.expect, &diagnose(&r.path())));
}

/// The logs GCViewer is run on: 15 of those the table says it agrees on, one per collector,
/// JDK and format (each GCViewer run starts a JVM, about half a second).
const GCVIEWER_SUBSET: [&str; 15] = [
    "jdk17/serial_gc-star_default.log",
    "jdk17/g1_gc-star_utc-level-tags.log",
    "jdk17/parallel-rotated.log.1",
    "jdk25/parallel_gc-star-safepoint_default.log",
    "jdk25/g1-rotated.log.0",
    "jdk25/shenandoah-generational_gc-star-safepoint_default.log.gz",
    "public/gcviewer_jdk6_parnew_cms_concurrent_mode_failure.log",
    "public/gcviewer_jdk6_parallel_adaptivesizepolicy.log",
    "public/gcviewer_jdk6_g1_verbose_nodetails_first60lines.log",
    "public/gcviewer_jdk7_g1_appstopped_tenuring_comma.log",
    "public/gcviewer_jdk7_parnew_cms_promotion_failed_heapatgc.log",
    "public/garbagecat_dataset57_g1_jdk7_ergonomics_datestamps.log",
    "public/gcviewer_jdk8_parallel_tenuring_gccause.log",
    "public/gcviewer_jdk9-13_cms_unified_gc_defaults.log",
    "public/gcviewer_jdk11_shenandoah_degenerated_safepoint_utc.log",
];

/// GCViewer's stop-the-world collections in `log` (its `-t CSV` export: one row with the
/// pause per collection, one `NONE` row after it): their number and total in ms.
#[cfg_attr(no_gcviewer, allow(dead_code))]
fn gcviewer(log: &Path, out: &Path) -> (u64, f64) {
    let java = Path::new(option_env!("GCVIEWER_TEST_JAVA").unwrap_or("java"));
    let Some(jar) = option_env!("GCVIEWER_TEST_JAR") else {
        panic!("the build found no GCViewer jar (cfg no_gcviewer)");
    };
    let run = Command::new(java)
        .args(["-Djava.awt.headless=true", "-jar", jar])
        .arg(log)
        .arg(out)
        .args(["-t", "CSV"])
        .output()
        .expect("java runs");
    assert!(run.status.success(), "GCViewer: {}", text(&run.stderr));
    let csv = fs::read_to_string(out).expect("GCViewer writes its export");
    let pauses: Vec<f64> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|f| f.len() == 5 && f[4] != "NONE")
        .map(|f| f[3].parse::<f64>().expect("a pause in seconds"))
        .collect();
    (pauses.len() as u64, pauses.iter().sum::<f64>() * 1000.0)
}

#[test]
#[cfg_attr(
    no_gcviewer,
    ignore = "needs GCViewer 1.36's jar and java when the tests were built: mvn dependency:get -Dartifact=com.github.chewiebug:gcviewer:1.36 (.ci/run does), or GCVIEWER_JAR_PATH"
)]
fn gcviewer_counts_the_pauses_of_the_table_where_it_agrees() {
    let dir = scratch("diagnose-corpus-gcviewer");
    let rows: Vec<Row> = GCVIEWER_SUBSET.iter().map(|f| row(f)).collect();
    for r in &rows {
        assert!(r.agree, "{}: the table says GCViewer disagrees", r.file);
    }
    check_rows(&rows, |r| {
        let out = dir.join(r.file.replace('/', "_") + ".csv");
        let (pauses, total_ms) = gcviewer(&r.path(), &out);
        let Expect::Read {
            pauses: ours,
            total_ms: our_total,
            ..
        } = r.expect
        else {
            return Err(format!(
                "{}: the subset holds only logs with pauses",
                r.file
            ));
        };
        if (pauses, r.gcviewer_pauses) == (ours, ours)
            && (total_ms - our_total).abs() <= 0.5
            && (total_ms - r.gcviewer_total_ms).abs() <= MS_TOLERANCE
        {
            Ok(())
        } else {
            Err(format!(
                "{}: GCViewer counts {pauses} pauses, {total_ms:.4} ms; the table says \
                 {ours} pauses, {our_total} ms (GCViewer's column: {} pauses, {} ms)",
                r.file, r.gcviewer_pauses, r.gcviewer_total_ms
            ))
        }
    });
}

/// Expects `concord diagnose --single PATH` to exit 2 naming the problem with `expected`.
fn refused(path: &Path, expected: &str) {
    match diagnose(path) {
        Reading::Refused { status, stderr } => {
            assert_eq!(status, Some(2), "{}: {stderr}", path.display());
            assert!(stderr.contains(expected), "{}: {stderr}", path.display());
            assert!(
                stderr.contains(&path.display().to_string()),
                "the message names the file: {stderr}"
            );
        }
        other => panic!("{}: read as {other:?}", path.display()),
    }
}

#[test]
fn an_empty_file_a_binary_and_a_directory_are_refused_with_status_2() {
    let dir = scratch("diagnose-corpus-bad");
    let empty = dir.join("empty.log");
    fs::write(&empty, "").unwrap();
    refused(&empty, "no GC pauses found");
    let binary = dir.join("true.bin");
    fs::copy(binary_file(), &binary).unwrap();
    refused(&binary, "no GC pauses found");
    match diagnose(&dir) {
        Reading::Refused { status, stderr } => {
            assert_eq!(status, Some(2), "{stderr}");
            assert!(stderr.contains("is a directory"), "{stderr}");
        }
        other => panic!("a directory read as {other:?}"),
    }
}

/// A real executable: /bin/true, else this test's own binary.
fn binary_file() -> PathBuf {
    let bin = PathBuf::from("/bin/true");
    if bin.is_file() {
        bin
    } else {
        std::env::current_exe().unwrap()
    }
}

#[test]
fn an_empty_file_and_a_binary_are_named_as_such() {
    let dir = scratch("diagnose-corpus-bad-named");
    let empty = dir.join("empty.log");
    fs::write(&empty, "").unwrap();
    refused(&empty, "is empty");
    let binary = dir.join("true.bin");
    fs::copy(binary_file(), &binary).unwrap();
    refused(&binary, "binary");
}

/// The bytes of the fixture `file`.
fn bytes_of(file: &str) -> Vec<u8> {
    let data = fs::read(Path::new(REAL).join(file)).unwrap();
    assert!(!file.ends_with(".gz"), "{file}: a plain log is cut");
    data
}

/// Writes `data` as `name` in `dir` and reads it.
fn read_bytes(dir: &Path, name: &str, data: &[u8]) -> Reading {
    let path = dir.join(name);
    fs::write(&path, data).unwrap();
    diagnose(&path)
}

/// The table's pauses of `file`.
fn table_pauses(file: &str) -> (u64, f64) {
    match row(file).expect {
        Expect::Read {
            pauses, total_ms, ..
        } => (pauses, total_ms),
        Expect::Exit2 => panic!("{file} holds no pause"),
    }
}

/// The pause count of a reading (panics if refused).
fn pauses_of(reading: &Reading) -> u64 {
    match reading {
        Reading::Read { pauses, .. } => *pauses,
        other => panic!("refused: {other:?}"),
    }
}

#[test]
fn a_real_log_cut_in_the_middle_of_a_line_keeps_its_complete_pauses() {
    let dir = scratch("diagnose-corpus-cut-line");
    // HotSpot 17: cut halfway through the last `GC(n) Pause … ms` line.
    let file = "jdk17/serial_gc-star_default.log";
    let data = bytes_of(file);
    let log = String::from_utf8(data.clone()).unwrap();
    let last = log
        .lines()
        .rev()
        .find(|l| l.contains("][gc ") && l.contains(" Pause ") && l.ends_with("ms"))
        .unwrap();
    let at = log.rfind(last).unwrap() + last.len() / 2;
    let (pauses, _) = table_pauses(file);
    assert_eq!(
        pauses_of(&read_bytes(&dir, "u.log", &data[..at])),
        pauses - 1
    );

    // JDK 6 ParNew/CMS: cut halfway through the last collection's line.
    let file = "public/gcviewer_jdk6_parnew_cms_concurrent_mode_failure.log";
    let data = bytes_of(file);
    let log = String::from_utf8(data.clone()).unwrap();
    let at = log.rfind("1.670: [GC 1.670: [ParNew").unwrap() + 60;
    let (pauses, _) = table_pauses(file);
    assert_eq!(
        pauses_of(&read_bytes(&dir, "c.log", &data[..at])),
        pauses - 1
    );
}

#[test]
fn a_real_log_cut_inside_a_multi_line_record_keeps_its_complete_pauses() {
    let dir = scratch("diagnose-corpus-cut-record");
    // JDK 7 G1 with ergonomics: cut inside the last record's CSet lines, before its
    // `, 0.2792870 secs]`.
    let file = "public/garbagecat_dataset57_g1_jdk7_ergonomics_datestamps.log";
    let data = bytes_of(file);
    let log = String::from_utf8(data.clone()).unwrap();
    let at = log
        .rfind("[G1Ergonomics (CSet Construction) add young regions")
        .unwrap()
        + 20;
    let (pauses, _) = table_pauses(file);
    assert_eq!(
        pauses_of(&read_bytes(&dir, "g1.log", &data[..at])),
        pauses - 1
    );

    // JDK 6 CMS: cut between the first line of the second concurrent mode failure (0.969) and
    // its ` (concurrent mode failure): …` line. Complete before it, read off the log: 5 ParNew,
    // the initial mark at 0.708, the failure at 0.769, the ParNew at 0.877 and the initial
    // mark at 0.903.
    let file = "public/gcviewer_jdk6_parnew_cms_concurrent_mode_failure.log";
    let data = bytes_of(file);
    let log = String::from_utf8(data.clone()).unwrap();
    let at = log
        .find(" (concurrent mode failure): 65665K->31297K")
        .unwrap();
    assert_eq!(pauses_of(&read_bytes(&dir, "cms.log", &data[..at])), 9);
}

/// A small deterministic generator (64-bit LCG, Knuth's constants).
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

/// `data` with a line of 1-80 random bytes (any but `\n`: NUL, `\r`, brackets, invalid UTF-8)
/// after about a third of its lines, from the fixed `seed`.
fn with_garbage(data: &[u8], seed: u64) -> Vec<u8> {
    let mut rng = Lcg(seed);
    let mut out = Vec::with_capacity(data.len() * 2);
    for line in data.split_inclusive(|&b| b == b'\n') {
        out.extend_from_slice(line);
        if rng.next().is_multiple_of(3) {
            if !line.ends_with(b"\n") {
                out.push(b'\n');
            }
            let len = 1 + rng.next() % 80;
            out.extend((0..len).map(|_| match (rng.next() % 256) as u8 {
                b'\n' => b' ',
                b => b,
            }));
            out.push(b'\n');
        }
    }
    out
}

/// Reads `file` with garbage lines inserted (seeds 1-3) and expects the table's pauses.
fn garbage_changes_nothing(dir: &Path, file: &str) -> Result<(), String> {
    let (pauses, total_ms) = table_pauses(file);
    let data = bytes_of(file);
    for seed in 1..=3 {
        let name = format!("{}-{seed}.log", file.replace('/', "_"));
        let reading = read_bytes(dir, &name, &with_garbage(&data, seed));
        let expect = match row(file).expect {
            Expect::Read { max_ms, .. } => Expect::Read {
                pauses,
                total_ms,
                max_ms,
            },
            Expect::Exit2 => unreachable!(),
        };
        compare(
            &format!("{file} with garbage (seed {seed})"),
            &expect,
            &reading,
        )?;
    }
    Ok(())
}

#[test]
fn garbage_lines_between_the_lines_of_real_unified_logs_change_nothing() {
    let dir = scratch("diagnose-corpus-garbage");
    let files = [
        "jdk17/g1_gc-star_utc-level-tags.log",
        "jdk25/parallel_gc-star-safepoint_default.log",
        "public/gcviewer_jdk9-13_cms_unified_gc_defaults.log",
        "public/gcviewer_jdk11_shenandoah_degenerated_safepoint_utc.log",
    ];
    let failures: Vec<String> = files
        .iter()
        .filter_map(|f| garbage_changes_nothing(&dir, f).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A line of another program's output or of garbage inside a JDK 6-8 record (a -verbose:gc
/// log on a stdout the application shares) is skipped without touching the open collection.
#[test]
fn garbage_lines_between_the_lines_of_real_jdk6_8_logs_change_nothing() {
    let dir = scratch("diagnose-corpus-garbage-jdk8");
    let files = [
        "public/garbagecat_dataset57_g1_jdk7_ergonomics_datestamps.log",
        "public/gcviewer_jdk8_g1_concurrent_cycle_ergonomics.log",
        "public/gcviewer_jdk6_g1_verbose_nodetails_first60lines.log",
        "public/gcviewer_jdk6_parnew_cms_concurrent_mode_failure.log",
        "public/gcviewer_jdk7_parnew_cms_promotion_failed_heapatgc.log",
        "public/gcviewer_jdk8_parnew_cms_scavenge_before_remark_windows_first24lines.log",
        "public/gcviewer_jdk8_parallel_tenuring_gccause.log",
    ];
    let failures: Vec<String> = files
        .iter()
        .filter_map(|f| garbage_changes_nothing(&dir, f).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
