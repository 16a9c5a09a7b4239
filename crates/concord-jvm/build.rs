//! Build script: tells the integration tests which JDKs this machine has, so a test for a JDK
//! that is absent shows as ignored instead of passing silently.

use std::path::Path;

/// The JDK 25 the tests use when present.
const JDK25_JAVA: &str = "/usr/lib/jvm/temurin-25-jdk-amd64/bin/java";

fn main() {
    println!("cargo::rustc-check-cfg=cfg(no_jdk25)");
    println!("cargo::rerun-if-changed={JDK25_JAVA}");
    if !Path::new(JDK25_JAVA).exists() {
        println!("cargo::rustc-cfg=no_jdk25");
    }
}
