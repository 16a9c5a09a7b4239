//! Build script: tells the integration tests which JDKs this machine has, and whether the
//! tests may put threads under SCHED_FIFO (see `build-support/test_tools.rs`), so that a test
//! for what is absent shows as ignored with its reason instead of failing or passing silently:
//! JDK 17 (cfg `no_jdk17`), Temurin 25 (cfg `no_jdk25`), SCHED_FIFO (cfg `no_sched_fifo`).

#[path = "../../build-support/test_tools.rs"]
mod test_tools;

use test_tools::{
    all_exist, jdk_files, may_use_sched_fifo, TestTools, JDK17_HOME, JDK25_HOME, SCHED_FIFO_NEEDS,
};

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
    tools.check("no_sched_fifo", may_use_sched_fifo(), SCHED_FIFO_NEEDS);
    tools.finish();
}
