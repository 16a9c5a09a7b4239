//! The JDK of a command that runs Java workloads (`concord jvm bench --java FILE`): the java
//! executable exactly as given, asked what it is (`-XshowSettings:properties -version`), and
//! the JDK's other tools found in the home it reports (`java.home`), never guessed from the
//! directory the path is in (a wrapper script or a symbolic link lives elsewhere).

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::hotspot;

/// How long the java executable may take to say what it is: a JVM starts in well under a
/// second, a slow or loaded machine may need several.
const PROBE_TIMEOUT: Duration = Duration::from_secs(60);
/// The most of its answer that is read: a JVM's properties are a few KiB.
const PROBE_OUTPUT_LIMIT: u64 = 1 << 20;
/// What `--java` is, for messages.
const EXPECTED: &str = "expected the java executable of a JDK, such as \
                        /usr/lib/jvm/java-17-openjdk-amd64/bin/java";

/// A JDK as its java executable reports it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Jdk {
    /// The java executable exactly as given (or as found when none was given).
    pub java: PathBuf,
    /// The path that runs it: `java` itself, `./java` for a bare file name (which
    /// `Command` would otherwise look up on PATH).
    pub exe: PathBuf,
    /// The JDK home it reports (`java.home`).
    pub home: PathBuf,
    /// Its version (`java.version`, e.g. `17.0.15`).
    pub version: String,
    /// The compiler of that JDK.
    pub javac: PathBuf,
}

impl Jdk {
    /// The JDK of `--java` (`explicit`, checked to be an executable that answers like a
    /// JDK's java), else the one found in `$JAVA_HOME`, on `PATH` or in the usual place
    /// ([`hotspot::find_java`]).
    pub fn find(explicit: Option<&Path>) -> Result<Jdk> {
        match explicit {
            Some(java) => Jdk::probe(java)
                .map_err(|e| anyhow::anyhow!("--java {}: {e:#} ({EXPECTED})", java.display())),
            None => {
                let found = hotspot::find_java(None)?;
                Jdk::probe(&found.java)
                    .with_context(|| format!("the JDK found at {}", found.java.display()))
            }
        }
    }

    /// Checks that `java` is an executable file, runs it with `-XshowSettings:properties
    /// -version` and reads the home and version it reports; the JDK's `javac` is then looked
    /// for in that home.
    pub fn probe(java: &Path) -> Result<Jdk> {
        let meta = std::fs::metadata(java).map_err(|e| match e.kind() {
            std::io::ErrorKind::NotFound => anyhow::anyhow!("no such file"),
            _ => anyhow::anyhow!("cannot read it: {e}"),
        })?;
        if meta.is_dir() {
            let inside = [java.join("bin").join("java"), java.join("java")]
                .into_iter()
                .find(|p| p.is_file());
            match inside {
                Some(p) => bail!(
                    "it is a directory; pass the java executable itself: --java {}",
                    p.display()
                ),
                None => bail!("it is a directory, and it holds neither bin/java nor java"),
            }
        }
        if !meta.is_file() {
            bail!("it is not a regular file");
        }
        if meta.permissions().mode() & 0o111 == 0 {
            bail!("it is not executable");
        }
        let exe = if java.components().count() == 1 && java.is_relative() {
            Path::new(".").join(java)
        } else {
            java.to_path_buf()
        };
        let args = ["-XshowSettings:properties", "-version"];
        let (status, text) = answer(&exe, &args)?;
        let asked = format!("`{} {}`", java.display(), args.join(" "));
        if !status.success() {
            bail!(
                "{asked} failed ({status}){}",
                excerpt(&text).map_or(String::new(), |t| format!(": {t}"))
            );
        }
        let (Some(home), Some(version)) = (
            property(&text, "java.home"),
            property(&text, "java.version"),
        ) else {
            bail!(
                "{asked} did not answer like a JDK's java (no java.home and java.version among \
                 its properties){}",
                excerpt(&text).map_or(String::new(), |t| format!("; it said: {t}"))
            );
        };
        let home = PathBuf::from(home);
        // JDK 9 and later: java.home is the JDK; JDK 8: its jre/ folder.
        let candidates = [home.join("bin/javac"), home.join("../bin/javac")];
        let Some(javac) = candidates.into_iter().find(|p| p.is_file()) else {
            bail!(
                "its java.home {} holds no bin/javac: a JRE, not a JDK (the Java workloads are \
                 compiled with the JDK's javac)",
                home.display()
            );
        };
        Ok(Jdk {
            java: java.to_path_buf(),
            exe,
            home,
            version: version.to_string(),
            javac,
        })
    }
}

/// Runs `exe ARGS` with no input and returns its status and what it wrote to stderr (where
/// java writes its properties and version), at most [`PROBE_OUTPUT_LIMIT`] of it; a program
/// that has not ended after [`PROBE_TIMEOUT`] is killed and refused.
fn answer(exe: &Path, args: &[&str]) -> Result<(ExitStatus, String)> {
    let mut child = Command::new(exe)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| anyhow::anyhow!("cannot run it: {e}"))?;
    let stderr = child.stderr.take().expect("stderr is piped");
    let reader = std::thread::spawn(move || {
        let mut bytes = Vec::new();
        let _ = stderr.take(PROBE_OUTPUT_LIMIT).read_to_end(&mut bytes);
        bytes
    });
    let deadline = Instant::now() + PROBE_TIMEOUT;
    let status = loop {
        if let Some(status) = child.try_wait()? {
            break Some(status);
        }
        if Instant::now() >= deadline {
            break None;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let Some(status) = status else {
        let _ = child.kill();
        let _ = child.wait();
        bail!(
            "`{} {}` had not ended after {} s",
            exe.display(),
            args.join(" "),
            PROBE_TIMEOUT.as_secs()
        );
    };
    let bytes = reader.join().unwrap_or_default();
    Ok((status, String::from_utf8_lossy(&bytes).into_owned()))
}

/// The value of `name` in `-XshowSettings:properties` output (`    java.home = /usr/lib/…`).
fn property<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    text.lines().find_map(|line| {
        let (key, value) = line.split_once(" = ")?;
        (key.trim() == name)
            .then(|| value.trim())
            .filter(|v| !v.is_empty())
    })
}

/// The first lines of a program's answer, for a message (`None` when it said nothing).
fn excerpt(text: &str) -> Option<String> {
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    match lines.len() {
        0 => None,
        1..=3 => Some(lines.join(" / ")),
        n => Some(format!(
            "{} / … ({} more lines)",
            lines[..3].join(" / "),
            n - 3
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn properties_are_read_from_the_settings_output() {
        let text = "Property settings:\n    file.encoding = UTF-8\n    java.home = \
                    /usr/lib/jvm/x\n    java.version = 17.0.15\n    empty = \n\nopenjdk version \
                    \"17.0.15\"\n";
        assert_eq!(property(text, "java.home"), Some("/usr/lib/jvm/x"));
        assert_eq!(property(text, "java.version"), Some("17.0.15"));
        assert_eq!(property(text, "empty"), None);
        assert_eq!(property(text, "java.vm.name"), None);
        assert_eq!(excerpt(""), None);
        assert_eq!(excerpt("a\n\n b \n"), Some("a / b".into()));
        assert_eq!(
            excerpt("1\n2\n3\n4\n5"),
            Some("1 / 2 / 3 / … (2 more lines)".into())
        );
    }
}
