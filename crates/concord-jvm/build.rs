//! Build script: tells the integration tests which JDKs this machine has, and whether the
//! tests may put threads under SCHED_FIFO (see `build-support/test_tools.rs`), so that a test
//! for what is absent shows as ignored with its reason instead of failing or passing silently:
//! JDK 17 (cfg `no_jdk17`), Temurin 25 (cfg `no_jdk25`), SCHED_FIFO (cfg `no_sched_fifo`).

#[path = "../../build-support/test_tools.rs"]
mod test_tools;

use test_tools::{all_exist, jdk_files, TestTools, JDK17_HOME};

/// The JDK 25 the tests use when present (Adoptium's temurin-25-jdk).
const JDK25_HOME: &str = "/usr/lib/jvm/temurin-25-jdk-amd64";

/// CAP_SYS_NICE, which allows SCHED_FIFO whatever RLIMIT_RTPRIO says.
const CAP_SYS_NICE: u32 = 23;

fn main() {
    let mut tools = TestTools::new();
    tools.check(
        "no_jdk17",
        all_exist(&jdk_files(JDK17_HOME, &["java", "javac", "jcmd"], true)),
        &format!(
            "JDK 17 (java, javac, jcmd, include/jvmti.h) in {JDK17_HOME} (apt-get install \
             openjdk-17-jdk-headless)"
        ),
    );
    tools.check(
        "no_jdk25",
        all_exist(&jdk_files(JDK25_HOME, &["java"], true)),
        &format!(
            "Temurin 25 (java, include/jvmti.h) in {JDK25_HOME} (Eclipse Temurin's temurin-25-jdk \
             package; it is not in Debian's archive, and this project's machine image carries it)"
        ),
    );
    tools.check(
        "no_sched_fifo",
        may_use_sched_fifo(),
        "the right to use SCHED_FIFO: root, CAP_SYS_NICE, or an RLIMIT_RTPRIO of at least 1 \
         (`ulimit -r 1`, or rtprio in /etc/security/limits.conf)",
    );
    tools.finish();
}

/// Whether this process (and so the tests it builds, run by the same user) may put threads
/// under SCHED_FIFO: CAP_SYS_NICE in its effective set, or a soft RLIMIT_RTPRIO above 0.
fn may_use_sched_fifo() -> bool {
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
