//! Helpers for the tests that run real JVMs with the agent: where the agent library and the
//! JDKs are, the Java programs of `tests/java/` compiled once, a JVM kept alive on stdin, and
//! the counting of GC operations in the JVM's own log.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// A JDK the tests run.
#[derive(Clone, Copy, Debug)]
pub struct Jdk {
    /// Its major version.
    pub major: u32,
    /// Its home.
    pub home: &'static str,
}

/// The JDK 17 that CI installs.
pub const JDK17: Jdk = Jdk {
    major: 17,
    home: "/usr/lib/jvm/java-17-openjdk-amd64",
};

/// Temurin 25, when present (the tests for it are ignored otherwise; see build.rs).
pub const JDK25: Jdk = Jdk {
    major: 25,
    home: "/usr/lib/jvm/temurin-25-jdk-amd64",
};

impl Jdk {
    /// Its `bin/` tool `name`.
    pub fn tool(&self, name: &str) -> PathBuf {
        Path::new(self.home).join("bin").join(name)
    }
}

/// The agent library cargo built with this test: the lib target is a cdylib and an rlib, so
/// building the rlib this test links also writes `target/<profile>/deps/libconcord_jvm.so`
/// (the copy in `target/<profile>/` is only refreshed by `cargo build`). The newer of the two.
pub fn agent_lib() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary's path");
    let deps = exe.parent().expect("target/<profile>/deps");
    let profile_dir = deps.parent().expect("target/<profile>");
    let candidates = [
        deps.join("libconcord_jvm.so"),
        profile_dir.join("libconcord_jvm.so"),
    ];
    candidates
        .iter()
        .filter_map(|p| Some((std::fs::metadata(p).ok()?.modified().ok()?, p)))
        .max()
        .map(|(_, p)| p.clone())
        .unwrap_or_else(|| panic!("no libconcord_jvm.so in {}", deps.display()))
}

/// A fresh scratch directory for test `name`.
pub fn scratch(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("concord-jvm-tests")
        .join(format!("{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The classes of `tests/java/*.java`, compiled once with JDK 17's javac (class files of 17
/// run on 25 too).
pub fn classes() -> &'static Path {
    static CLASSES: OnceLock<PathBuf> = OnceLock::new();
    CLASSES.get_or_init(|| {
        let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/java");
        let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join("concord-jvm-classes")
            .join(std::process::id().to_string());
        std::fs::create_dir_all(&out).unwrap();
        let sources: Vec<PathBuf> = std::fs::read_dir(&src)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.extension().is_some_and(|x| x == "java"))
            .collect();
        let status = Command::new(JDK17.tool("javac"))
            .arg("-d")
            .arg(&out)
            .args(&sources)
            .status()
            .expect("javac runs");
        assert!(status.success(), "javac failed on {}", src.display());
        out
    })
}

/// `java` of `jdk` with the agent (when `agent_options` is `Some`), `flags`, then the class
/// `main` of tests/java with `args`.
pub fn java(
    jdk: Jdk,
    agent_options: Option<&str>,
    flags: &[&str],
    main: &str,
    args: &[&str],
) -> Command {
    let mut cmd = Command::new(jdk.tool("java"));
    if let Some(options) = agent_options {
        cmd.arg(format!("-agentpath:{}={options}", agent_lib().display()));
    }
    cmd.args(flags)
        .arg("-cp")
        .arg(classes())
        .arg(main)
        .args(args);
    cmd
}

/// Run to the end, capturing the output.
pub fn run(mut cmd: Command) -> Output {
    cmd.stdin(Stdio::null()).output().expect("java starts")
}

/// GC VM operations in a `-Xlog:gc,safepoint` log: safepoints preceded by at least one
/// `Pause` line (with `System.gc()` and ScavengeBeforeFullGC one operation holds a young and a
/// full pause, and the agent sees one event pair).
pub fn gc_operations(log: &str) -> usize {
    let mut operations = 0;
    let mut paused = false;
    for line in log.lines() {
        if line.contains("][gc") && line.contains(" Pause ") {
            paused = true;
        } else if line.contains("][safepoint") && line.contains("Safepoint \"") && paused {
            operations += 1;
            paused = false;
        }
    }
    operations
}

/// `Pause` lines in a `-Xlog:gc` log.
pub fn pause_lines(log: &str) -> usize {
    log.lines()
        .filter(|l| l.contains("][gc") && l.contains(" Pause "))
        .count()
}

/// The agent's report.
pub fn read_report(path: &Path) -> serde_json::Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("report {} unreadable: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("report is not JSON ({e}): {text}"))
}

/// The record lines.
pub fn read_records(path: &Path) -> Vec<serde_json::Value> {
    std::fs::read_to_string(path)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("bad record ({e}): {l}")))
        .collect()
}

/// A JVM running `GcThenWait`, driven through its stdin.
pub struct LiveJvm {
    pub child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl LiveJvm {
    /// Start `cmd` (a `GcThenWait` run) and wait for its "ready".
    pub fn start(mut cmd: Command) -> Self {
        let mut child = cmd
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("java starts");
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut jvm = Self {
            child,
            stdin,
            stdout,
        };
        jvm.expect_line("ready");
        jvm
    }

    /// The JVM's pid.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    fn expect_line(&mut self, want: &str) {
        let mut line = String::new();
        loop {
            line.clear();
            let n = self.stdout.read_line(&mut line).unwrap();
            assert!(n > 0, "the JVM ended before printing '{want}'");
            if line.trim() == want {
                return;
            }
        }
    }

    /// One more collection.
    pub fn gc(&mut self) {
        let stdin = self.stdin.as_mut().unwrap();
        writeln!(stdin, "gc").unwrap();
        stdin.flush().unwrap();
        self.expect_line("gc-done");
    }

    /// Close stdin and wait for the exit.
    pub fn finish(mut self) -> std::process::ExitStatus {
        drop(self.stdin.take());
        self.child.wait().unwrap()
    }

    /// Threads of the JVM: (tid, name).
    pub fn threads(&self) -> Vec<(i32, String)> {
        let mut out = Vec::new();
        for tid in concord::os::procfs::thread_ids_of(self.pid() as i32).unwrap() {
            let comm = format!("/proc/{}/task/{tid}/comm", self.pid());
            if let Ok(name) = std::fs::read_to_string(comm) {
                out.push((tid, name.trim_end().to_string()));
            }
        }
        out.sort();
        out
    }

    /// `Cpus_allowed_list` of thread `tid`.
    pub fn cpus_allowed(&self, tid: i32) -> String {
        let status =
            std::fs::read_to_string(format!("/proc/{}/task/{tid}/status", self.pid())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
            .unwrap()
            .trim()
            .to_string()
    }
}

impl Drop for LiveJvm {
    fn drop(&mut self) {
        // A failed test must not leave a JVM behind.
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

/// Poll `check` until it returns `Some`, for up to `limit`.
pub fn eventually<T>(limit: Duration, mut check: impl FnMut() -> Option<T>) -> Option<T> {
    let start = Instant::now();
    loop {
        if let Some(v) = check() {
            return Some(v);
        }
        if start.elapsed() > limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The GC workers of a live JVM: (tid, worker number).
pub fn gc_workers(jvm: &LiveJvm) -> Vec<(i32, usize)> {
    let mut w: Vec<(i32, usize)> = jvm
        .threads()
        .into_iter()
        .filter_map(|(tid, name)| concord_jvm::threads::gc_worker_index(&name).map(|i| (tid, i)))
        .collect();
    w.sort_by_key(|&(_, i)| i);
    w
}
