//! Build script: tells the tests which of the programs they run this machine has (see
//! `build-support/test_tools.rs`), so that a test whose program is absent shows as ignored with
//! its reason: headless Chromium for the report pages (cfg `no_chromium`), JDK 17 for
//! `concord jvm` (cfg `no_jdk17`), Temurin 25 for its collectors' logs (cfg `no_jdk25`), any
//! JDK for the HotSpot comparisons (cfg `no_java`), GCViewer 1.36's jar with a `java` to run it
//! for the `concord diagnose` corpus comparison (cfg `no_gcviewer`; its path and the `java` go
//! to the tests as `GCVIEWER_TEST_JAR` and `GCVIEWER_TEST_JAVA`), and root
//! with `setpriv` and `python3` for attaching as another user (cfg `no_root_setpriv`), and the
//! right to use SCHED_FIFO for `--fifo-scope all` (cfg `no_sched_fifo`), and root with tracefs,
//! `cc` and `python3` for the wake-up placement script (cfg `no_tracefs`).

#[path = "../../build-support/test_tools.rs"]
mod test_tools;

use std::path::PathBuf;

use test_tools::{
    all_exist, gcviewer_jar, jdk_files, may_use_sched_fifo, on_path, TestTools, GCVIEWER_JAR_VAR,
    JDK17_HOME, JDK25_HOME, SCHED_FIFO_NEEDS,
};

fn main() {
    let mut tools = TestTools::new();
    tools.check(
        "no_chromium",
        on_path(&["chromium", "chromium-browser"]).is_some(),
        "headless Chromium: `chromium` or `chromium-browser` on PATH (apt-get install chromium)",
    );
    let jdk17 = all_exist(&jdk_files(JDK17_HOME, &["java", "javac", "jcmd"], false));
    tools.check(
        "no_jdk17",
        jdk17,
        &format!(
            "JDK 17's java, javac and jcmd in {JDK17_HOME}/bin (apt-get install \
             openjdk-17-jdk-headless)"
        ),
    );
    tools.check(
        "no_jdk25",
        all_exist(&jdk_files(JDK25_HOME, &["java"], false)),
        &format!(
            "Temurin 25's java in {JDK25_HOME}/bin (Eclipse Temurin's temurin-25-jdk package;              this project's machine image carries it)"
        ),
    );
    tools.check(
        "no_java",
        jdk17 || java_with_javac_on_path(),
        "a JDK: `java` with `javac` beside it on PATH (apt-get install openjdk-17-jdk-headless)",
    );
    let gcviewer = gcviewer_jar();
    let java = if jdk17 {
        Some(PathBuf::from(JDK17_HOME).join("bin/java"))
    } else {
        on_path(&["java"])
    };
    let gcviewer_present = all_exist(std::slice::from_ref(&gcviewer)) && java.is_some();
    tools.check(
        "no_gcviewer",
        gcviewer_present,
        &format!(
            "GCViewer 1.36's jar at {} and a java to run it (mvn dependency:get \
             -Dartifact=com.github.chewiebug:gcviewer:1.36, or {GCVIEWER_JAR_VAR}=path/to/jar)",
            gcviewer.display()
        ),
    );
    if let (true, Some(java)) = (gcviewer_present, java) {
        println!("cargo::rustc-env=GCVIEWER_TEST_JAR={}", gcviewer.display());
        println!("cargo::rustc-env=GCVIEWER_TEST_JAVA={}", java.display());
    }
    tools.check("no_sched_fifo", may_use_sched_fifo(), SCHED_FIFO_NEEDS);
    tools.check(
        "no_root_setpriv",
        is_root() && on_path(&["setpriv"]).is_some() && on_path(&["python3"]).is_some(),
        "root with `setpriv` (util-linux) and `python3` on PATH, to run `concord jvm attach` as \
         another user (run the tests as root; apt-get install util-linux python3)",
    );
    tools.check(
        "no_tracefs",
        is_root()
            && std::path::Path::new("/sys/kernel/tracing").is_dir()
            && on_path(&["cc"]).is_some()
            && on_path(&["python3"]).is_some(),
        "root (to mount and use tracefs at /sys/kernel/tracing), `cc` and `python3`, for \
         bench/sched/wake_placement.sh",
    );
    tools.finish();
}

/// Whether the build (and so the tests, run by the same user) runs as root: the effective uid
/// in /proc/self/status is 0.
fn is_root() -> bool {
    std::fs::read_to_string("/proc/self/status").is_ok_and(|s| {
        s.lines()
            .find_map(|l| l.strip_prefix("Uid:"))
            .and_then(|v| v.split_whitespace().nth(1).map(str::to_string))
            .is_some_and(|euid| euid == "0")
    })
}

/// Whether `java` is on PATH with `javac` in its directory or, the link resolved, in the
/// JDK's own `bin` (where HotSpot's tools look).
fn java_with_javac_on_path() -> bool {
    let Some(java) = on_path(&["java"]) else {
        return false;
    };
    let real = std::fs::canonicalize(&java).unwrap_or_else(|_| java.clone());
    [java, real]
        .iter()
        .any(|j: &PathBuf| j.with_file_name("javac").is_file())
}
