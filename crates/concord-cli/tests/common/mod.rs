//! What the end-to-end tests share: running the `concord` binary with a clean environment,
//! scratch directories, and reading its JSON and results directories.

#![allow(dead_code)] // Each test file uses its own part.

use std::os::unix::process::CommandExt as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

/// The `concord` binary with `args`, the caller's `CONCORD_*` configuration kept out.
pub fn command(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_concord"));
    c.args(args)
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default());
    c
}

/// Runs `concord ARGS` to the end.
pub fn concord(args: &[&str]) -> Output {
    command(args).output().expect("the concord binary runs")
}

/// A fresh, empty directory for one test.
pub fn scratch(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join(name);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Runs `concord ARGS --out DIR`, DIR the `out` folder of a fresh scratch directory of the
/// test `name`; returns what it printed and DIR.
pub fn run_into(name: &str, args: &[&str]) -> (Output, PathBuf) {
    let out = scratch(name).join("out");
    let mut argv = args.to_vec();
    argv.extend(["--out", out.to_str().expect("a UTF-8 path")]);
    (concord(&argv), out)
}

/// [`run_into`] for a run that must succeed and print JSON: the JSON and the directory.
pub fn json_into(name: &str, args: &[&str]) -> (Value, PathBuf) {
    let (output, out) = run_into(name, args);
    (stdout_json(&output), out)
}

/// The names in `dir`, sorted.
pub fn entries(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

/// Bytes as text.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// The JSON on stdout of a run that must succeed.
pub fn stdout_json(out: &Output) -> Value {
    assert!(
        out.status.success(),
        "status {:?}: {}",
        out.status,
        text(&out.stderr)
    );
    serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", text(&out.stdout)))
}

/// Runs `concord ARGS`, expects success, and parses stdout as JSON.
pub fn json_of(args: &[&str]) -> Value {
    stdout_json(&concord(args))
}

/// The `label` of every configuration in `configurations`.
pub fn labels(configurations: &Value) -> Vec<&str> {
    configurations
        .as_array()
        .expect("a list of configurations")
        .iter()
        .map(|c| c["label"].as_str().expect("a label"))
        .collect()
}

/// A command line's words: `argv("run gcbench --json")`.
pub fn argv(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

/// `concord CMD binary-trees DEPTH --heap 8m MORE…`: the small runs most tests make.
pub fn small<'a>(cmd: &'a str, depth: &'a str, more: &[&'a str]) -> Vec<&'a str> {
    [cmd, "binary-trees", depth, "--heap", "8m"]
        .into_iter()
        .chain(more.iter().copied())
        .collect()
}

/// A JSON file.
pub fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// Expects `concord ARGS` to be refused as bad input (status 2) with `expected` on stderr,
/// before it printed anything.
pub fn assert_exit_2(args: &[&str], expected: &str) {
    let o = concord(args);
    let stderr = text(&o.stderr);
    assert_eq!(o.status.code(), Some(2), "{args:?}: {stderr}");
    assert!(stderr.contains(expected), "{args:?}: {stderr}");
    assert!(o.stdout.is_empty(), "{args:?} ran: {}", text(&o.stdout));
}

/// Checks the results directory `dir` of a complete experiment of `kind` with `runs` runs and
/// returns its experiment.json: the format, every run ok and naming existing files, every
/// summary with a right checksum, one record per collection, nothing else in `runs/`.
pub fn check_results(dir: &Path, kind: &str, runs: usize) -> Value {
    let e = read_json(&dir.join("experiment.json"));
    assert_eq!(e["format"], "concord-results");
    assert_eq!(e["version"], 1);
    assert_eq!(e["kind"], kind);
    assert_eq!(e["interrupted"], false);
    assert_eq!(e["complete"], true);
    assert!(e["started"].as_str().unwrap().ends_with('Z'));
    assert!(e["command"].as_str().unwrap().contains(kind));
    let labels = labels(&e["configurations"]);
    let mut unique = labels.clone();
    unique.sort_unstable();
    unique.dedup();
    assert_eq!(unique.len(), labels.len(), "labels are unique: {labels:?}");
    let listed = e["runs"].as_array().unwrap();
    assert_eq!(listed.len(), runs);
    for run in listed {
        assert_eq!(run["status"], "ok", "{run}");
        assert!(labels.contains(&run["configuration"].as_str().unwrap()));
        let s = read_json(&dir.join(run["summary"].as_str().unwrap()));
        assert_eq!(s["checksum_ok"], true);
        let records = std::fs::read_to_string(dir.join(run["records"].as_str().unwrap())).unwrap();
        assert_eq!(
            records.lines().count() as u64,
            s["gc_count"].as_u64().unwrap(),
            "one record per collection"
        );
        for line in records.lines() {
            let r: Value = serde_json::from_str(line).expect("each line is JSON");
            assert!(r.is_object() && r["pause_ms"].is_number(), "{line}");
        }
    }
    let files = std::fs::read_dir(dir.join("runs")).unwrap().count();
    assert_eq!(files, 2 * runs, "no temporary files");
    e
}

/// `command` whose process may write files of at most `bytes` (RLIMIT_FSIZE, as on a disk
/// that fills up); a write past it fails with EFBIG instead of killing the process.
pub fn with_file_size_limit(mut command: Command, bytes: u64) -> Command {
    // SAFETY: between fork and exec only async-signal-safe calls are made (setrlimit,
    // signal), on values owned by the closure.
    unsafe {
        command.pre_exec(move || {
            let limit = libc::rlimit {
                rlim_cur: bytes,
                rlim_max: bytes,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &limit) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
            Ok(())
        });
    }
    command
}

/// Headless Chromium, found on `PATH` under the names `.ci/run` looks for (it installs
/// Debian's `chromium` when neither is there). Panics if it is gone: callers are the tests
/// built with it present (cfg `no_chromium` unset, see build.rs).
pub fn chromium() -> PathBuf {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .flat_map(|dir| ["chromium", "chromium-browser"].map(|name| dir.join(name)))
        .find(|p| p.is_file())
        .expect(
            "Chromium was on PATH when the tests were built but is not now: reinstall it \
             (apt-get install chromium), or run `cargo clean -p concord-cli` to let the tests \
             that need it be ignored",
        )
}

/// Renders the HTML page `page` in headless Chromium into a screenshot beside it (a browser
/// profile in `profile`), `height` pixels tall, and checks it is a PNG that is not blank.
pub fn assert_renders(page: &Path, profile: &Path, height: u32) {
    let shot = page.with_extension("png");
    let o = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            &format!("--user-data-dir={}", profile.display()),
            &format!("--window-size=1280,{height}"),
            &format!("--screenshot={}", shot.display()),
            &format!("file://{}", page.display()),
        ])
        .output()
        .expect("chromium runs");
    assert!(o.status.success(), "{}", text(&o.stderr));
    let png = std::fs::read(&shot).expect("a screenshot");
    assert!(png.starts_with(b"\x89PNG"), "{}: not a PNG", page.display());
    assert!(
        png.len() > 30_000,
        "{}: a blank screenshot ({} bytes)",
        page.display(),
        png.len()
    );
}
