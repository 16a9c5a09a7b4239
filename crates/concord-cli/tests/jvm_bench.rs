//! `concord jvm bench` end to end on the real JDK 17 (`.ci/run` installs it) and the real
//! companion agent: `--java` is the java executable itself, an `--out` the JVM's options
//! cannot carry is refused before anything is created, and a full disk fails the experiment
//! (status 1, saying what was lost) without leaving cut-off or empty files in the results
//! directory, for `jvm bench` and for `compare` on the same engine.
//!
//! The full disk is a 64 KiB tmpfs mounted in a private mount namespace (`unshare`): as root,
//! or as any user where unprivileged user namespaces are allowed; the mount goes away with the
//! namespace. A machine with neither fails those tests, saying so.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{assert_exit_2, concord, read_json, scratch, text};

/// JDK 17's home.
const JDK17: &str = "/usr/lib/jvm/java-17-openjdk-amd64";

/// JDK 17's java.
fn java17() -> String {
    let java = format!("{JDK17}/bin/java");
    assert!(
        Path::new(&java).is_file(),
        "{java} is missing: these tests need JDK 17 (apt-get install openjdk-17-jdk-headless; \
         .ci/run installs it)"
    );
    java
}

/// `jvm bench` with one short run of HotSpot alone (no agent), then `more`.
fn one_run<'a>(more: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "jvm",
        "bench",
        "--iterations",
        "50",
        "--repeat",
        "1",
        "--gc-affinity",
        "off",
        "--loads",
        "none",
        "--no-report",
    ];
    args.extend(more);
    args
}

/// Writes an executable shell script.
fn script(path: &Path, body: &str) {
    std::fs::write(path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o755)).unwrap();
}

#[test]
fn java_is_the_executable_given_and_must_answer_like_a_jdk() {
    let java = java17();
    let dir = scratch("jvm-bench-java");
    // A wrapper script named java25 beside a `java` and a `javac` that are not a JDK: the
    // wrapper runs, and javac comes from the home the JVM reports, not from this directory.
    let wrapper = dir.join("java25");
    script(&wrapper, &format!("exec {java} \"$@\""));
    script(&dir.join("java"), "exit 3");
    script(&dir.join("javac"), "exit 3");
    let out = dir.join("out");
    let (wrapper, out) = (wrapper.to_str().unwrap(), out.to_str().unwrap());
    let o = concord(&one_run(&["--java", wrapper, "--out", out]));
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let e = read_json(&Path::new(out).join("experiment.json"));
    let p = &e["parameters"];
    assert_eq!(p["java"], wrapper, "{p}");
    assert!(p["jdk"].as_str().unwrap().starts_with("17."), "{p}");
    assert_eq!(p["java_home"], JDK17, "{p}");
    assert_eq!(p["javac"], format!("{JDK17}/bin/javac"), "{p}");
    let run = &e["runs"][0];
    assert_eq!(run["status"], "ok", "{run}");
    let summary = read_json(&Path::new(out).join(run["summary"].as_str().unwrap()));
    assert_eq!(summary["java"], wrapper);

    // Not a JDK's java: refused up front, naming the path and what was expected.
    let never = dir.join("never");
    let never = never.to_str().unwrap();
    let expected = "(expected the java executable of a JDK";
    for (java, says) in [
        (
            "/bin/false",
            "`/bin/false -XshowSettings:properties -version` failed",
        ),
        ("/bin/true", "did not answer like a JDK's java"),
        (
            &dir.join("java").display().to_string(),
            "failed (exit status: 3)",
        ),
        ("/nonexistent/java", "no such file"),
    ] {
        let o = concord(&one_run(&["--java", java, "--out", never]));
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{java}: {stderr}");
        assert!(stderr.contains(&format!("--java {java}: ")), "{stderr}");
        assert!(
            stderr.contains(says) && stderr.contains(expected),
            "{stderr}"
        );
        assert!(!Path::new(never).exists());
    }
    // A JDK directory: told what to pass instead.
    assert_exit_2(
        &one_run(&["--java", JDK17, "--out", never]),
        &format!("it is a directory; pass the java executable itself: --java {JDK17}/bin/java"),
    );
}

#[test]
fn an_out_path_the_jvms_options_cannot_carry_is_refused_before_anything_is_created() {
    let dir = scratch("jvm-bench-out");
    for (name, c, why) in [
        ("jb,comma", ',', "the agent's options"),
        ("jb\"quote", '"', "-Xlog:gc:file=\"PATH\""),
        ("jb%p", '%', "replaces %p and %t"),
    ] {
        let out = dir.join(name);
        let o = concord(&one_run(&["--out", out.to_str().unwrap()]));
        let stderr = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{stderr}");
        assert!(
            stderr.contains(&format!("--out '{}' holds '{c}'", out.display())),
            "{stderr}"
        );
        assert!(stderr.contains(why), "{stderr}");
        assert!(!out.exists(), "{} was created", out.display());
    }
}

/// The `unshare` arguments that give a private mount namespace where a tmpfs may be mounted:
/// as root, or in a user namespace of its own.
fn private_mounts() -> &'static [&'static str] {
    let works = |args: &[&str]| {
        Command::new("unshare")
            .args(args)
            .args(["sh", "-c", "mount -t tmpfs -o size=4k tmpfs /mnt"])
            .output()
            .is_ok_and(|o| o.status.success())
    };
    const ROOT: &[&str] = &["--mount", "--propagation", "private"];
    const USER: &[&str] = &["--user", "--map-root-user", "--mount"];
    [ROOT, USER]
        .into_iter()
        .find(|a| works(a))
        .unwrap_or_else(|| {
            panic!(
                "cannot mount a small tmpfs in a private mount namespace (`unshare --mount`): run \
             these tests as root or where unprivileged user namespaces are allowed"
            )
        })
}

/// Runs `concord ARGS` (`MNT` in them standing for the mount point) with a 64 KiB tmpfs
/// mounted privately, `pad` bytes of it already taken; returns its output and a copy of what
/// the tmpfs held afterwards (the pad left out).
fn on_full_disk(test: &str, pad: usize, args: &[&str]) -> (Output, PathBuf) {
    let dir = scratch(test);
    let (mnt, copy) = (dir.join("mnt"), dir.join("copy"));
    std::fs::create_dir_all(&mnt).unwrap();
    std::fs::create_dir_all(&copy).unwrap();
    let mnt_text = mnt.to_str().unwrap();
    let args: Vec<String> = args.iter().map(|a| a.replace("MNT", mnt_text)).collect();
    const SCRIPT: &str = r#"
        mnt=$1; pad=$2; copy=$3; shift 3
        mount -t tmpfs -o size=64k tmpfs "$mnt" || exit 97
        head -c "$pad" /dev/zero > "$mnt/pad" || exit 97
        "$@"
        status=$?
        rm -f "$mnt/pad"
        cp -a "$mnt/." "$copy/" || exit 98
        exit $status
    "#;
    let output = Command::new("unshare")
        .args(private_mounts())
        .args(["sh", "-c", SCRIPT, "sh", mnt_text, &pad.to_string()])
        .arg(&copy)
        .arg(env!("CARGO_BIN_EXE_concord"))
        .args(&args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .output()
        .expect("unshare runs");
    assert!(
        !matches!(output.status.code(), Some(97 | 98)),
        "the tmpfs could not be set up or copied: {}",
        text(&output.stderr)
    );
    (output, copy)
}

/// Checks that every file of a results directory is complete and recorded: `experiment.json`
/// names only files that exist, every file in `runs/` is of a run it lists (`NNN-…`), no
/// hidden (staging) file is left, every file ends in a whole line, every summary is JSON, and
/// no file is empty but the records of a run it marks failed.
fn assert_whole(results: &Path) {
    let e = read_json(&results.join("experiment.json"));
    let listed = e["runs"].as_array().unwrap().len();
    let mut of_failed_runs = Vec::new();
    for run in e["runs"].as_array().unwrap() {
        for key in ["summary", "records"] {
            if let Some(rel) = run[key].as_str() {
                assert!(results.join(rel).is_file(), "{rel}: {run}");
                if run["status"] == "failed" {
                    of_failed_runs.push(results.join(rel));
                }
            }
        }
    }
    for entry in std::fs::read_dir(results.join("runs")).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        assert!(!name.starts_with('.'), "{name} was left behind");
        let n: usize = name.split('-').next().unwrap().parse().unwrap();
        assert!(
            (1..=listed).contains(&n),
            "{name} is of a run experiment.json does not list"
        );
        let bytes = std::fs::read(&path).unwrap();
        if bytes.is_empty() {
            assert!(of_failed_runs.contains(&path), "{name} is empty");
            continue;
        }
        assert_eq!(bytes.last(), Some(&b'\n'), "{name} ends in a cut-off line");
        if name.ends_with(".summary.json") {
            read_json(&path);
        }
    }
}

#[test]
fn a_full_disk_fails_the_bench_and_leaves_no_cut_off_files() {
    let java = java17();
    // 14 of the 16 pages taken: experiment.json fits, the run's GC log (over a page) does not.
    let (o, copy) = on_full_disk(
        "jvm-bench-full-disk",
        14 * 4096,
        &[
            "jvm",
            "bench",
            "--java",
            &java,
            "--iterations",
            "600",
            "--threads",
            "1",
            "--heap",
            "24m",
            "--repeat",
            "1",
            "--gc-affinity",
            "dynamic",
            "--loads",
            "none",
            "--no-report",
            "--out",
            "MNT/jb",
        ],
    );
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(stderr.contains("lost the GC log"), "{stderr}");
    assert!(
        stderr.contains("the experiment stopped after run 1 of 1"),
        "{stderr}"
    );
    assert_whole(&copy.join("jb"));
}

#[test]
fn a_full_disk_fails_compare_with_status_1_saying_what_was_lost() {
    // Four runs' files fill 64 KiB; the fifth run's summary does not fit.
    let (o, copy) = on_full_disk(
        "compare-full-disk",
        0,
        &[
            "compare",
            "binary-trees",
            "14",
            "--repeat",
            "6",
            "--no-report",
            "--out",
            "MNT/c",
        ],
    );
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("No space left on device"), "{stderr}");
    assert!(
        stderr.contains("is lost (its files are removed"),
        "{stderr}"
    );
    assert!(
        stderr.contains("the experiment stopped after run"),
        "{stderr}"
    );
    // The table of the runs measured before is still printed.
    assert!(
        text(&o.stdout).contains("stopped after"),
        "{}",
        text(&o.stdout)
    );
    assert_whole(&copy.join("c"));
}
