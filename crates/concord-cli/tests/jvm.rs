//! `concord jvm run | attach | bench` end to end, against the real JDK 17 (`.ci/run` installs
//! openjdk-17-jdk-headless) and the real companion agent. The agent is built with this crate
//! (concord-cli depends on concord-jvm, so its `libconcord_jvm.so` is in `target/<profile>/deps`
//! whenever this test's binary is built); a test that cannot find it or the JDK fails, saying
//! how to get them, never passes silently.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use common::{assert_exit_2, concord, read_json, scratch, text};

/// JDK 17's java.
const JAVA17: &str = "/usr/lib/jvm/java-17-openjdk-amd64/bin/java";

fn java() -> String {
    assert!(
        Path::new(JAVA17).is_file(),
        "{JAVA17} is missing: these tests need JDK 17 (apt-get install openjdk-17-jdk-headless; \
         .ci/run installs it)"
    );
    JAVA17.to_string()
}

/// The agent library the `concord` binary under test loads.
fn agent() -> PathBuf {
    let dir = Path::new(env!("CARGO_BIN_EXE_concord")).parent().unwrap();
    [
        dir.join("libconcord_jvm.so"),
        dir.join("deps/libconcord_jvm.so"),
    ]
    .into_iter()
    .find(|p| p.is_file())
    .unwrap_or_else(|| {
        panic!(
            "libconcord_jvm.so is neither in {} nor in its deps/: build it with `cargo build -p \
             concord-jvm` (building concord-cli's tests builds it as a dependency)",
            dir.display()
        )
    })
}

/// Writes `source` as `dir/NAME.java` (its public class NAME) and compiles it into `dir`.
fn compile(dir: &Path, name: &str, source: &str) {
    std::fs::write(dir.join(format!("{name}.java")), source).unwrap();
    let javac = Path::new(JAVA17).with_file_name("javac");
    let out = Command::new(javac)
        .arg("-d")
        .arg(dir)
        .arg(dir.join(format!("{name}.java")))
        .output()
        .expect("javac runs");
    assert!(out.status.success(), "javac: {}", text(&out.stderr));
}

/// A program that allocates (so there are young pauses), prints to stdout and stderr, and
/// exits with its first argument.
const CHURN: &str = r#"
public class Churn {
    public static void main(String[] args) {
        java.util.ArrayDeque<byte[]> queue = new java.util.ArrayDeque<>();
        long sum = 0;
        for (int i = 0; i < 200_000; i++) {
            byte[] b = new byte[1024];
            b[i % 1024] = (byte) i;
            queue.add(b);
            if (queue.size() > 2_000) sum += queue.poll()[0];
        }
        System.out.println("sum=" + sum);
        System.out.println("line two");
        System.err.println("to stderr");
        System.exit(Integer.parseInt(args[0]));
    }
}
"#;

#[test]
#[cfg_attr(
    no_jdk17,
    ignore = "needs JDK 17 in /usr/lib/jvm/java-17-openjdk-amd64 (java, javac, jcmd) when the tests were built: apt-get install openjdk-17-jdk-headless (.ci/run does)"
)]
fn a_program_runs_the_same_with_the_agent_and_its_exit_status_passes_through() {
    let dir = scratch("jvm-same-output");
    compile(&dir, "Churn", CHURN);
    let cp = dir.to_str().unwrap();
    let plain = Command::new(java())
        .args(["-XX:+UseParallelGC", "-Xmx32m", "-cp", cp, "Churn", "3"])
        .output()
        .unwrap();
    assert_eq!(plain.status.code(), Some(3));
    let java = java();
    let with = concord(&[
        "jvm",
        "run",
        "--gc-affinity",
        "dynamic",
        "--",
        &java,
        "-XX:+UseParallelGC",
        "-Xmx32m",
        "-cp",
        cp,
        "Churn",
        "3",
    ]);
    assert_eq!(with.status.code(), Some(3), "{}", text(&with.stderr));
    assert_eq!(text(&with.stdout), text(&plain.stdout));
    assert_eq!(text(&with.stderr), text(&plain.stderr));
    assert!(text(&with.stdout).starts_with("sum="));
}

#[test]
#[cfg_attr(
    no_jdk17,
    ignore = "needs JDK 17 in /usr/lib/jvm/java-17-openjdk-amd64 (java, javac, jcmd) when the tests were built: apt-get install openjdk-17-jdk-headless (.ci/run does)"
)]
fn a_jvm_killed_by_a_signal_gives_128_plus_the_signal() {
    let dir = scratch("jvm-signal");
    compile(
        &dir,
        "Die",
        r#"
public class Die {
    public static void main(String[] args) throws Exception {
        long pid = ProcessHandle.current().pid();
        new ProcessBuilder("kill", "-KILL", Long.toString(pid)).start().waitFor();
        Thread.sleep(10_000);
    }
}
"#,
    );
    let java = java();
    let o = concord(&[
        "jvm",
        "run",
        "--",
        &java,
        "-cp",
        dir.to_str().unwrap(),
        "Die",
    ]);
    assert_eq!(o.status.code(), Some(128 + 9), "{}", text(&o.stderr));
}

#[test]
#[cfg_attr(
    no_jdk17,
    ignore = "needs JDK 17 in /usr/lib/jvm/java-17-openjdk-amd64 (java, javac, jcmd) when the tests were built: apt-get install openjdk-17-jdk-headless (.ci/run does)"
)]
fn usage_errors_and_conflicting_flags_are_refused() {
    assert_exit_2(
        &["jvm", "run", "java", "-version"],
        "unexpected argument 'java'",
    );
    assert_exit_2(&["jvm", "run", "--"], "no java command after `--`");
    assert_exit_2(&["jvm", "run"], "no java command after `--`");
    assert_exit_2(
        &["jvm", "run", "--gc-affinity", "spread", "--", "java"],
        "--gc-affinity: 'spread' is not a GC affinity",
    );
    assert_exit_2(
        &["jvm", "run", "--fifo-scope", "some", "--", "java"],
        "(allowed: mutators, all)",
    );
    assert_exit_2(
        &["jvm", "run", "--report", "a,b.json", "--", "java"],
        "the path contains ','",
    );
    assert_exit_2(
        &[
            "jvm",
            "run",
            "--mutator-sched",
            "adaptive",
            "--fifo-scope",
            "all",
            "--",
            "java",
        ],
        "--fifo-scope and --mutator-sched: fifo-scope 'all' does not go with mutator-sched 'adaptive",
    );
    let java = java();
    let lib = agent();
    let own = format!("-agentpath:{}", lib.display());
    assert_exit_2(
        &["jvm", "run", "--", &java, &own, "-version"],
        "(the companion agent, or a copy of it)",
    );
    assert_exit_2(
        &[
            "jvm",
            "run",
            "--thp",
            "always",
            "--",
            &java,
            "-XX:-UseTransparentHugePages",
            "-version",
        ],
        "the command line has -XX:-UseTransparentHugePages and --thp decides that flag too",
    );
    assert_exit_2(
        &["jvm", "run", "--thp-margin", "1g", "--", &java, "-version"],
        "--thp-margin is the margin of --thp dynamic",
    );
}

#[test]
#[cfg_attr(
    no_jdk17,
    ignore = "needs JDK 17 in /usr/lib/jvm/java-17-openjdk-amd64 (java, javac, jcmd) when the tests were built: apt-get install openjdk-17-jdk-headless (.ci/run does)"
)]
fn a_bad_agent_option_fails_the_jvm_with_the_agents_message() {
    let lib = agent();
    let o = Command::new(java())
        .arg(format!("-agentpath:{}=gc-affinity=spread", lib.display()))
        .arg("-version")
        .output()
        .unwrap();
    assert!(!o.status.success());
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains("spread") && stderr.contains("allowed"),
        "{stderr}"
    );
}

#[test]
#[cfg_attr(
    no_jdk17,
    ignore = "needs JDK 17 in /usr/lib/jvm/java-17-openjdk-amd64 (java, javac, jcmd) when the tests were built: apt-get install openjdk-17-jdk-headless (.ci/run does)"
)]
fn the_report_counts_every_pause_of_the_gc_log() {
    let dir = scratch("jvm-report");
    compile(&dir, "Churn", CHURN);
    let report = dir.join("report.json");
    let records = dir.join("records.jsonl");
    let log = dir.join("gc.log");
    let java = java();
    let o = concord(&[
        "jvm",
        "run",
        "--gc-affinity",
        "static",
        "--report",
        report.to_str().unwrap(),
        "--records",
        records.to_str().unwrap(),
        "--",
        &java,
        "-XX:+UseParallelGC",
        "-Xmx32m",
        &format!("-Xlog:gc:file={}", log.display()),
        "-cp",
        dir.to_str().unwrap(),
        "Churn",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let r = read_json(&report);
    let pauses = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.contains(" Pause "))
        .count();
    assert!(pauses > 0, "the program collects");
    assert_eq!(r["gc_events"].as_u64(), Some(pauses as u64), "{r}");
    assert_eq!(r["gc_affinity"], "static");
    assert!(r["jdk"].as_str().unwrap().starts_with("17"), "{r}");
    let lines = std::fs::read_to_string(&records).unwrap().lines().count();
    assert_eq!(lines, pauses, "one record per GC");
}

#[test]
#[cfg_attr(
    no_jdk17,
    ignore = "needs JDK 17 in /usr/lib/jvm/java-17-openjdk-amd64 (java, javac, jcmd) when the tests were built: apt-get install openjdk-17-jdk-headless (.ci/run does)"
)]
fn a_report_that_could_not_be_written_fails_the_run() {
    let java = java();
    let o = concord(&[
        "jvm",
        "run",
        "--report",
        "/nonexistent-dir/report.json",
        "--",
        &java,
        "-version",
    ]);
    // The agent refuses a report it cannot create at start-up (the JVM fails); one it could
    // not write at the end fails the run in concord. Either way: non-zero, and said.
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("cannot create the report file '/nonexistent-dir/report.json'")
            || stderr.contains("did not write its report /nonexistent-dir/report.json"),
        "{stderr}"
    );
}

#[test]
#[cfg_attr(
    no_jdk17,
    ignore = "needs JDK 17 in /usr/lib/jvm/java-17-openjdk-amd64 (java, javac, jcmd) when the tests were built: apt-get install openjdk-17-jdk-headless (.ci/run does)"
)]
fn thp_and_async_log_decisions_are_said() {
    let java = java();
    let o = concord(&[
        "jvm",
        "run",
        "--thp",
        "dynamic",
        "--thp-margin",
        "512m",
        "--async-log",
        "--",
        &java,
        "-Xmx64m",
        "-version",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let stderr = text(&o.stderr);
    assert!(
        stderr.contains("concord jvm: --thp dynamic: MemAvailable")
            && stderr.contains("max heap 64M (-Xmx64m) + margin 512M = 576M"),
        "{stderr}"
    );
    assert!(
        stderr.contains("adding -XX:+UseTransparentHugePages") || stderr.contains("not adding")
    );
    assert!(
        stderr.contains("--async-log: adding -Xlog:async"),
        "{stderr}"
    );
    assert!(
        stderr.contains("openjdk version \"17"),
        "the JVM ran: {stderr}"
    );
    let never = concord(&["jvm", "run", "--thp", "never", "--", &java, "-version"]);
    assert!(text(&never.stderr).contains("--thp never: adding -XX:-UseTransparentHugePages"));
}

#[test]
#[cfg_attr(
    no_jdk17,
    ignore = "needs JDK 17 in /usr/lib/jvm/java-17-openjdk-amd64 (java, javac, jcmd) when the tests were built: apt-get install openjdk-17-jdk-headless (.ci/run does)"
)]
fn attach_loads_the_agent_into_a_running_jvm() {
    let dir = scratch("jvm-attach");
    compile(
        &dir,
        "Wait",
        r#"
public class Wait {
    public static void main(String[] args) throws Exception {
        System.out.println("ready");
        System.out.flush();
        java.util.List<byte[]> keep = new java.util.ArrayList<>();
        while (System.in.read() != -1) {
            keep.add(new byte[1 << 20]);
            if (keep.size() > 8) keep.clear();
            System.gc();
        }
    }
}
"#,
    );
    let report = dir.join("attached.json");
    let mut jvm = Command::new(java())
        .args([
            "-XX:+UseParallelGC",
            "-Xmx64m",
            "-cp",
            dir.to_str().unwrap(),
            "Wait",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(jvm.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert_eq!(line.trim(), "ready");
    let pid = jvm.id().to_string();
    let o = concord(&[
        "jvm",
        "attach",
        &pid,
        "--gc-affinity",
        "dynamic",
        "--report",
        report.to_str().unwrap(),
    ]);
    let mut stdin = jvm.stdin.take().unwrap();
    if o.status.code() != Some(0) {
        let _ = jvm.kill();
        panic!("attach failed: {}{}", text(&o.stdout), text(&o.stderr));
    }
    assert!(
        text(&o.stdout).contains(&format!("{pid}:")),
        "{}",
        text(&o.stdout)
    );
    // Three collections after the agent is in, then the JVM ends and writes the report.
    stdin.write_all(b"abc").unwrap();
    drop(stdin);
    let status = jvm.wait().unwrap();
    assert!(status.success());
    let r = read_json(&report);
    assert_eq!(r["attached"], true, "{r}");
    assert_eq!(r["gc_affinity"], "dynamic");
    assert!(r["gc_events"].as_u64().unwrap() >= 3, "{r}");
}

#[test]
fn attach_to_a_dead_pid_or_a_process_that_is_not_a_jvm_is_refused() {
    let mut done = Command::new("true").spawn().unwrap();
    done.wait().unwrap();
    let dead = done.id().to_string();
    assert_exit_2(
        &["jvm", "attach", &dead],
        &format!("no process {dead} (nothing at /proc/{dead})"),
    );
    let me = std::process::id().to_string();
    assert_exit_2(&["jvm", "attach", &me], "is not a HotSpot JVM");
    assert_exit_2(&["jvm", "attach", "abc"], "invalid digit");
}

#[test]
#[cfg_attr(
    no_jdk17,
    ignore = "needs JDK 17 in /usr/lib/jvm/java-17-openjdk-amd64 (java, javac, jcmd) when the tests were built: apt-get install openjdk-17-jdk-headless (.ci/run does)"
)]
fn a_small_bench_writes_its_results_directory() {
    let out = scratch("jvm-bench").join("out");
    let o = concord(&[
        "jvm",
        "bench",
        "--java",
        &java(),
        "--repeat",
        "1",
        "--iterations",
        "50",
        "--gc-affinity",
        "off,dynamic",
        "--loads",
        "busy:1,jvms:2",
        "--no-report",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let stdout = text(&o.stdout);
    assert!(stdout.contains("concord jvm bench: HotSpot 17"), "{stdout}");
    assert!(stdout.contains("cb p50 us"), "{stdout}");
    let e = read_json(&out.join("experiment.json"));
    assert_eq!(e["kind"], "jvm-bench");
    assert_eq!(e["complete"], true);
    let runs = e["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 4);
    for run in runs {
        assert_eq!(run["status"], "ok", "{run}");
        let s = read_json(&out.join(run["summary"].as_str().unwrap()));
        assert_eq!(s["checksum_ok"], true);
        assert!(s["gc_count"].as_u64().unwrap() > 0, "{s}");
        let with_agent = run["configuration"].as_str().unwrap().ends_with("dynamic");
        if with_agent {
            assert_eq!(s["agent"]["gc_affinity"], "dynamic", "{s}");
            assert_eq!(s["agent_events_match_log"], true, "{s}");
        } else {
            assert!(s["agent"].is_null(), "{s}");
        }
    }
    assert_eq!(e["parameters"]["loads"][1], "jvms:2");
    let report = concord(&["report", out.to_str().unwrap()]);
    assert_eq!(report.status.code(), Some(0), "{}", text(&report.stderr));
}

#[test]
#[cfg_attr(
    no_jdk17,
    ignore = "needs JDK 17 in /usr/lib/jvm/java-17-openjdk-amd64 (java, javac, jcmd) when the tests were built: apt-get install openjdk-17-jdk-headless (.ci/run does)"
)]
fn a_sigterm_to_concord_reaches_the_jvm() {
    let dir = scratch("jvm-sigterm");
    compile(
        &dir,
        "Sleep",
        r#"
public class Sleep {
    public static void main(String[] args) throws Exception {
        System.out.println("ready");
        System.out.flush();
        Thread.sleep(60_000);
        System.out.println("not stopped");
    }
}
"#,
    );
    let java = java();
    let mut run = common::command(&[
        "jvm",
        "run",
        "--",
        &java,
        "-cp",
        dir.to_str().unwrap(),
        "Sleep",
    ])
    .stdout(Stdio::piped())
    .spawn()
    .unwrap();
    let mut out = BufReader::new(run.stdout.take().unwrap());
    let mut line = String::new();
    out.read_line(&mut line).unwrap();
    assert_eq!(line.trim(), "ready");
    let pid = libc::pid_t::try_from(run.id()).unwrap();
    // SAFETY: kill(2) on the child this test started, which has not been waited for yet.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0, "kill");
    let status = run.wait().unwrap();
    // The JVM ends by SIGTERM (its shutdown exits with 143), and concord reports that.
    assert_eq!(status.code(), Some(143), "{status:?}");
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut out, &mut rest).unwrap();
    assert!(!rest.contains("not stopped"), "{rest}");
}

/// A program that prints its process id, then sleeps for its first argument, in ms.
const SLEEP: &str = r#"
public class Sleep {
    public static void main(String[] args) throws Exception {
        System.out.println(ProcessHandle.current().pid());
        System.out.flush();
        Thread.sleep(Long.parseLong(args[0]));
    }
}
"#;

/// Starts `concord jvm run OPTIONS -- java -cp DIR Sleep 60000` and returns it with the JVM's
/// process id.
fn start_sleeping_jvm(dir: &Path, options: &[&str]) -> (std::process::Child, i32) {
    compile(dir, "Sleep", SLEEP);
    let java = java();
    let mut args = vec!["jvm", "run"];
    args.extend_from_slice(options);
    args.extend(["--", &java, "-cp", dir.to_str().unwrap(), "Sleep", "60000"]);
    let mut run = common::command(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(run.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let pid: i32 = line
        .trim()
        .parse()
        .unwrap_or_else(|_| panic!("a pid: {line:?}"));
    (run, pid)
}

/// Starts `java FLAGS -cp DIR Sleep 60000` directly (no concord), once it has printed its pid.
fn sleeping_java(dir: &Path, flags: &[&str]) -> std::process::Child {
    compile(dir, "Sleep", SLEEP);
    let mut jvm = Command::new(java())
        .args(flags)
        .args(["-cp", dir.to_str().unwrap(), "Sleep", "60000"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(jvm.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    jvm
}

/// `concord jvm run OPTIONS -- java -XX:+UseParallelGC -Xmx32m -Xmn4m -cp DIR Churn 0`.
fn churn_run(dir: &Path, options: &[&str]) -> Command {
    compile(dir, "Churn", CHURN);
    let java = java();
    let mut args = vec!["jvm", "run"];
    args.extend_from_slice(options);
    args.extend([
        "--",
        &java,
        "-XX:+UseParallelGC",
        "-Xmx32m",
        "-Xmn4m",
        "-cp",
        dir.to_str().unwrap(),
        "Churn",
        "0",
    ]);
    common::command(&args)
}

/// Whether process `pid` has ended (gone, or a zombie nobody reaped yet).
fn ended(pid: i32) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit_once(')')
            .is_some_and(|(_, rest)| rest.trim_start().starts_with('Z')),
    }
}

/// Sends `signal` to `pid`.
fn signal(pid: i32, signal: i32) {
    // SAFETY: kill(2) on a process this test started (directly or through concord).
    assert_eq!(unsafe { libc::kill(pid, signal) }, 0, "kill");
}

#[test]
fn records_that_cannot_be_written_fail_the_run_naming_what_was_lost() {
    let dir = scratch("jvm-records-full");
    let o = churn_run(&dir, &["--records", "/dev/full"])
        .output()
        .unwrap();
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("concord: cannot write records to '/dev/full': No space left on device")
            && stderr.contains("collections) are lost"),
        "{stderr}"
    );
    assert_eq!(
        text(&o.stdout),
        "sum=0\nline two\n",
        "the program ran to its end"
    );
}

#[test]
fn records_cut_by_a_file_size_limit_keep_whole_lines_and_fail_the_run() {
    let dir = scratch("jvm-records-fsize");
    let records = dir.join("records.jsonl");
    let report = dir.join("report.json");
    let mut cmd = churn_run(
        &dir,
        &[
            "--records",
            records.to_str().unwrap(),
            "--report",
            report.to_str().unwrap(),
        ],
    );
    // SAFETY: setrlimit in the forked child before exec, async-signal-safe, no allocation.
    // The JVM inherits the limit; HotSpot ignores SIGXFSZ, so its writes fail with EFBIG.
    unsafe {
        use std::os::unix::process::CommandExt;
        cmd.pre_exec(|| {
            let limit = libc::rlimit {
                rlim_cur: 8000,
                rlim_max: 8000,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    let kept = std::fs::read_to_string(&records).unwrap();
    assert!(kept.ends_with('\n'), "whole lines only");
    let lines = kept.lines().count();
    let events = read_json(&report)["gc_events"].as_u64().unwrap() as usize;
    assert!(lines < events, "{lines} of {events}");
    let lost = format!(
        "concord: cannot write records to '{}': File too large (os error 27); the records of \
         GC({lines})..GC({}) \
         ({} collections) are lost",
        records.display(),
        events - 1,
        events - lines
    );
    assert!(stderr.contains(&lost), "{stderr}");
}

#[test]
fn one_file_for_two_outputs_is_refused() {
    let dir = scratch("jvm-same-file");
    let x = dir.join("x.json");
    let link = dir.join("link.json");
    let _ = std::fs::remove_file(&link);
    std::os::unix::fs::symlink(&x, &link).unwrap();
    let (x, link) = (x.to_str().unwrap(), link.to_str().unwrap());
    let java = java();
    assert_exit_2(
        &[
            "jvm",
            "run",
            "--report",
            x,
            "--records",
            x,
            "--",
            &java,
            "-version",
        ],
        &format!("--report {x} names the same file as --records {x}"),
    );
    assert_exit_2(
        &[
            "jvm",
            "run",
            "--report",
            x,
            "--records",
            link,
            "--",
            &java,
            "-version",
        ],
        &format!("--report {x} names the same file as --records {link}"),
    );
    let me = std::process::id().to_string();
    assert_exit_2(
        &["jvm", "attach", &me, "--report", link, "--records", x],
        "names the same file as --records",
    );
    assert!(!Path::new(x).exists(), "nothing was written");
}

#[test]
fn an_existing_report_survives_a_jvm_killed_before_the_end() {
    let dir = scratch("jvm-kill-report");
    let report = dir.join("report.json");
    std::fs::write(&report, "{\"earlier\": true}\n").unwrap();
    let (run, jvm) = start_sleeping_jvm(&dir, &["--report", report.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(&report).unwrap(),
        "{\"earlier\": true}\n",
        "untouched while the JVM runs"
    );
    signal(jvm, libc::SIGKILL);
    let o = run.wait_with_output().unwrap();
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(128 + 9), "{stderr}");
    assert_eq!(
        std::fs::read_to_string(&report).unwrap(),
        "{\"earlier\": true}\n"
    );
    assert!(
        stderr.contains("the JVM was killed by signal 9 before the agent finished")
            && stderr.contains(&format!(
                "--report {} was not written; the file there keeps its earlier content",
                report.display()
            )),
        "{stderr}"
    );
    let left: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.ends_with(".tmp"))
        .collect();
    assert!(left.is_empty(), "staged files left: {left:?}");
}

#[test]
fn killing_concord_ends_its_jvm() {
    let dir = scratch("jvm-kill-concord");
    let (mut run, jvm) = start_sleeping_jvm(&dir, &[]);
    signal(run.id() as i32, libc::SIGKILL);
    run.wait().unwrap();
    let start = std::time::Instant::now();
    while !ended(jvm) && start.elapsed() < std::time::Duration::from_secs(30) {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let gone = ended(jvm);
    if !gone {
        signal(jvm, libc::SIGKILL);
    }
    assert!(gone, "JVM {jvm} outlived the concord that ran it");
}

#[test]
fn a_second_copy_of_the_agent_is_refused_wherever_it_is_given() {
    let dir = scratch("jvm-agent-copy");
    let copy = dir.join("copy.so");
    std::fs::copy(agent(), &copy).unwrap();
    let option = format!("-agentpath:{}=report=/tmp/x.json", copy.display());
    let argfile = dir.join("options");
    std::fs::write(&argfile, format!("# JVM options\n{option}\n")).unwrap();
    let at = format!("@{}", argfile.display());
    let java = java();
    let refused = |o: std::process::Output, source: &str| {
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{source}: {stderr}");
        assert!(
            stderr.contains(&format!(
                "concord: {source} has {option} (the companion agent, or a copy of it)"
            )),
            "{source}: {stderr}"
        );
    };
    refused(
        concord(&["jvm", "run", "--", &java, &option, "-version"]),
        "the command line",
    );
    refused(concord(&["jvm", "run", "--", &java, &at, "-version"]), &at);
    for variable in ["JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "_JAVA_OPTIONS"] {
        let o = common::command(&["jvm", "run", "--", &java, "-version"])
            .env(variable, &option)
            .output()
            .unwrap();
        refused(o, variable);
    }
    // Where concord cannot see it (a wrapper script sets the variable), the agent concord adds
    // finds the other copy, stays passive, and the run fails saying so.
    let wrapper = dir.join("java-wrapper");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nJAVA_TOOL_OPTIONS='-agentpath:{}' exec {java} \"$@\"\n",
            copy.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(
        &wrapper,
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let o = concord(&["jvm", "run", "--", wrapper.to_str().unwrap(), "-version"]);
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("concord: the agent concord jvm run added stayed passive: another copy"),
        "{stderr}"
    );
}

#[test]
fn attach_checks_what_it_needs_before_jcmd() {
    let dir = scratch("jvm-attach-checks");
    let mut jvm = sleeping_java(&dir, &["-XX:+DisableAttachMechanism"]);
    let pid = jvm.id().to_string();
    let o = concord(&["jvm", "attach", &pid]);
    let _ = jvm.kill();
    let _ = jvm.wait();
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "JVM {pid} was started with -XX:+DisableAttachMechanism (the command line)"
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("\tat "), "no Java stack trace: {stderr}");
}

/// As root: `jvm attach` run as another user (nobody) is refused up front, against a JVM of
/// root's (a user mismatch) and against a process of its own whose /proc/PID/maps it may not
/// read (a non-dumpable one); never a jcmd time-out or a Java stack trace.
#[test]
#[cfg_attr(
    any(no_root_setpriv, no_jdk17),
    ignore = "needs root, setpriv, python3 (to run concord as another user) and JDK 17 when the \
              tests were built"
)]
fn attach_as_another_user_or_without_proc_access_is_refused_up_front() {
    // SAFETY: geteuid has no arguments and cannot fail.
    assert_eq!(unsafe { libc::geteuid() }, 0, "run as root");
    let dir = scratch("jvm-attach-user");
    let mut jvm = sleeping_java(&dir, &[]);
    let as_nobody = |pid: &str| {
        Command::new("/usr/bin/setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_concord"))
            .args(["jvm", "attach", pid])
            .current_dir("/")
            .output()
            .unwrap()
    };
    let pid = jvm.id().to_string();
    let o = as_nobody(&pid);
    let _ = jvm.kill();
    let _ = jvm.wait();
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "process {pid} runs as uid 0 and concord as uid 65534"
        )),
        "{stderr}"
    );
    // A process of nobody's own that made itself non-dumpable: its maps are root's.
    let mut hidden = Command::new("/usr/bin/setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .args(["/bin/sh", "-c", "exec /usr/bin/python3 -c 'import ctypes,time; ctypes.CDLL(None).prctl(4,0,0,0,0); print(1, flush=True); time.sleep(60)'"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(hidden.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let start = std::time::Instant::now();
    let o = as_nobody(&hidden.id().to_string());
    let took = start.elapsed();
    let _ = hidden.kill();
    let _ = hidden.wait();
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(&format!("cannot read /proc/{}/maps", hidden.id())),
        "{stderr}"
    );
    assert!(
        took < std::time::Duration::from_secs(5),
        "no jcmd time-out: {took:?}"
    );
}
