//! What the build scripts of the crates whose tests run external programs share: finding
//! those programs when the tests are built, so that a test whose program is absent is compiled
//! with `#[ignore = "reason"]` (through a `cfg`) and shows as ignored, with its reason, instead
//! of failing (or passing without testing).
//!
//! `.ci/run` sets `CONCORD_REQUIRE_TEST_TOOLS=1`: then a missing program fails the build,
//! naming it and how to install it, so that CI never skips one of those tests.
//!
//! Cargo runs a build script again when what it watches changes: here the variables read
//! (`PATH`, `CONCORD_REQUIRE_TEST_TOOLS`), every program found, the directories of `PATH` (a
//! program installed there adds an entry) and `/usr/lib/jvm` (where JDKs are installed). A
//! program installed anywhere else is noticed after `cargo clean -p <crate>`. Nothing that does
//! not exist is watched: cargo would then run the script, and rebuild the crate, every time.

#![allow(dead_code)] // Each build script uses its own part.

use std::path::{Path, PathBuf};

/// The variable that turns a missing program into a build error.
const REQUIRE: &str = "CONCORD_REQUIRE_TEST_TOOLS";

/// Where JDKs are installed (Debian's packages and Adoptium's).
pub const JVM_DIR: &str = "/usr/lib/jvm";

/// The JDK 17 the tests run (Debian's openjdk-17-jdk-headless, which `.ci/run` installs).
pub const JDK17_HOME: &str = "/usr/lib/jvm/java-17-openjdk-amd64";

/// The JDK 25 the tests use when present (Adoptium's temurin-25-jdk; the machine image carries
/// it).
pub const JDK25_HOME: &str = "/usr/lib/jvm/temurin-25-jdk-amd64";

/// GCViewer 1.36's jar, under `$HOME`: where `mvn dependency:get
/// -Dartifact=com.github.chewiebug:gcviewer:1.36` puts it (`.ci/run` does). The `concord
/// diagnose` corpus tests compare their pause counts with it; `GCVIEWER_JAR_PATH` names
/// another copy.
pub const GCVIEWER_JAR: &str =
    ".m2/repository/com/github/chewiebug/gcviewer/1.36/gcviewer-1.36.jar";

/// The variable that names GCViewer's jar instead of [`GCVIEWER_JAR`].
pub const GCVIEWER_JAR_VAR: &str = "GCVIEWER_JAR_PATH";

/// GCViewer's jar: `GCVIEWER_JAR_PATH`, else [`GCVIEWER_JAR`] under `$HOME` (both watched).
pub fn gcviewer_jar() -> PathBuf {
    println!("cargo::rerun-if-env-changed={GCVIEWER_JAR_VAR}");
    println!("cargo::rerun-if-env-changed=HOME");
    match std::env::var_os(GCVIEWER_JAR_VAR).filter(|v| !v.is_empty()) {
        Some(jar) => PathBuf::from(jar),
        None => Path::new(&std::env::var_os("HOME").unwrap_or_default()).join(GCVIEWER_JAR),
    }
}

/// The programs checked so far, and which are missing.
pub struct TestTools {
    /// Whether a missing program fails the build.
    required: bool,
    /// What is missing and how to get it.
    missing: Vec<String>,
}

impl TestTools {
    /// Starts the checks of one build script.
    pub fn new() -> TestTools {
        println!("cargo::rerun-if-env-changed={REQUIRE}");
        println!("cargo::rerun-if-env-changed=PATH");
        println!("cargo::rerun-if-changed=build.rs");
        // A package that installs a JDK also puts `java` in /usr/bin.
        path_dirs().iter().for_each(|d| watch(d));
        watch(Path::new(JVM_DIR));
        TestTools {
            required: std::env::var_os(REQUIRE).is_some_and(|v| !v.is_empty() && v != "0"),
            missing: Vec::new(),
        }
    }

    /// Declares `cfg(NAME)`, set when the program is absent (`present` false): the tests that
    /// need it carry `#[cfg_attr(NAME, ignore = "...")]`. `needs` says what is missing and how
    /// to install it.
    pub fn check(&mut self, cfg: &str, present: bool, needs: &str) {
        println!("cargo::rustc-check-cfg=cfg({cfg})");
        if !present {
            println!("cargo::rustc-cfg={cfg}");
            self.missing.push(format!("{needs} (cfg {cfg})"));
        }
    }

    /// Ends the checks: with `CONCORD_REQUIRE_TEST_TOOLS` set, fails the build if anything is
    /// missing.
    pub fn finish(self) {
        if self.required && !self.missing.is_empty() {
            eprintln!(
                "error: {REQUIRE} is set, and tests of {} need what this machine lacks:",
                std::env::var("CARGO_PKG_NAME").unwrap_or_default()
            );
            for m in &self.missing {
                eprintln!("  - {m}");
            }
            eprintln!(
                "Install it (.ci/run does), or unset {REQUIRE} to let those tests be ignored."
            );
            std::process::exit(1);
        }
    }
}

/// Asks cargo to run the build script again when `path` changes, if it exists.
pub fn watch(path: &Path) {
    if path.exists() {
        println!("cargo::rerun-if-changed={}", path.display());
    }
}

/// Whether every file of `paths` exists (each watched).
pub fn all_exist(paths: &[PathBuf]) -> bool {
    paths.iter().for_each(|p| watch(p));
    paths.iter().all(|p| p.is_file())
}

/// The absolute directories of `PATH`.
fn path_dirs() -> Vec<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|d| d.is_absolute())
        .collect()
}

/// The first of `names` in a directory of `PATH`.
pub fn on_path(names: &[&str]) -> Option<PathBuf> {
    let found = path_dirs()
        .into_iter()
        .flat_map(|d| names.iter().map(move |n| d.join(n)).collect::<Vec<_>>())
        .find(|p| p.is_file());
    found.inspect(|p| watch(p))
}

/// `home/bin/NAME` for every name of `tools`, and `home/include/jvmti.h` with `header`.
pub fn jdk_files(home: &str, tools: &[&str], header: bool) -> Vec<PathBuf> {
    let home = Path::new(home);
    let mut files: Vec<PathBuf> = tools.iter().map(|t| home.join("bin").join(t)).collect();
    if header {
        files.push(home.join("include/jvmti.h"));
    }
    files
}

/// CAP_SYS_NICE, which allows SCHED_FIFO whatever RLIMIT_RTPRIO says.
const CAP_SYS_NICE: u32 = 23;

/// What the tests gated on cfg `no_sched_fifo` need, for the ignore reason.
pub const SCHED_FIFO_NEEDS: &str = "the right to use SCHED_FIFO: root, CAP_SYS_NICE, or an \
     RLIMIT_RTPRIO of at least 1 (`ulimit -r 1`, or rtprio in /etc/security/limits.conf)";

/// Whether this process (and so the tests it builds, run by the same user) may put threads
/// under SCHED_FIFO: CAP_SYS_NICE in its effective set, or a soft RLIMIT_RTPRIO above 0.
pub fn may_use_sched_fifo() -> bool {
    let cap = std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("CapEff:"))
            .and_then(|v| u64::from_str_radix(v.trim(), 16).ok())
            .is_some_and(|eff| eff & (1 << CAP_SYS_NICE) != 0)
    });
    // "Max realtime priority     0     0": the soft limit is the first number.
    let rtprio = std::fs::read_to_string("/proc/self/limits").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Max realtime priority"))
            .and_then(|v| v.split_whitespace().next().map(str::to_string))
            .is_some_and(|soft| soft == "unlimited" || soft.parse::<u64>().is_ok_and(|n| n > 0))
    });
    cap || rtprio
}
