//! `concord report` end to end: the fixtures (real output of the bench commands) render to one
//! self-contained page with every plot, and the figures of each kind; damaged directories
//! still render, with notes; bad input exits 2 with a message that says what is wrong, and an
//! output that is one of the results is refused; the page renders in headless Chromium.
//!
//! The fixtures are real results directories (`concord compare …`, `sweep`, `ablation`,
//! `os-bench`, `sched-bench`, as their `command` says). `results-ablation` was made after the
//! library began recording the task manager's monitor counters (`monitor` in each record); the
//! older fixtures predate them and show that their absence reads as null.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use common::{assert_exit_2, assert_renders, concord, scratch};
use serde_json::Value;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

/// A scratch directory for the test `name` with a copy of the fixture `fixture` in it, as
/// `results`: (the scratch directory, the copy).
fn copied(name: &str, fixture_name: &str) -> (PathBuf, PathBuf) {
    let dir = scratch(name);
    let results = dir.join("results");
    copy_dir(&fixture(fixture_name), &results);
    (dir, results)
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Render `dir` to `out` and return the page; the command must succeed.
fn render(dir: &Path, out: &Path) -> String {
    render_with_stderr(dir, out).0
}

/// [`render`], and what the command wrote to stderr.
fn render_with_stderr(dir: &Path, out: &Path) -> (String, String) {
    let o = concord(&[
        "report",
        dir.to_str().unwrap(),
        "--output",
        out.to_str().unwrap(),
    ]);
    let stderr = String::from_utf8_lossy(&o.stderr).into_owned();
    assert!(o.status.success(), "status {:?}: {stderr}", o.status);
    let stdout = String::from_utf8_lossy(&o.stdout);
    assert!(stdout.contains("wrote"), "{stdout}");
    let page = fs::read_to_string(out).expect("the page was written");
    (page, stderr)
}

fn count(haystack: &str, needle: &str) -> usize {
    haystack.matches(needle).count()
}

/// One HTML document that needs nothing from outside: no URL at all, no scripts, no
/// stylesheets or fonts to fetch, no image files (every picture is inline SVG).
fn assert_self_contained(html: &str) {
    assert!(html.starts_with("<!DOCTYPE html>"));
    assert!(html.trim_end().ends_with("</html>"));
    for banned in [
        "http://", "https://", "<script", "<link", "@import", "url(", "<img", " src=", "<iframe",
    ] {
        assert!(!html.contains(banned), "the page contains {banned:?}");
    }
    // Every href is an anchor within the page, and every anchor exists.
    for part in html.split("href=\"").skip(1) {
        let target = &part[..part.find('"').unwrap()];
        let id = target
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("href {target:?} leaves the page"));
        assert!(
            html.contains(&format!("id=\"{id}\"")),
            "href {target:?} has no target"
        );
    }
    assert_eq!(count(html, "<svg"), count(html, "</svg>"));
}

/// Plot sections present, each with its pictures.
fn section<'a>(html: &'a str, id: &str) -> &'a str {
    let start = html
        .find(&format!("<h2 id=\"{id}\""))
        .unwrap_or_else(|| panic!("no section {id}"));
    let rest = &html[start + 4..];
    let end = rest.find("<h2 ").unwrap_or(rest.len());
    &rest[..end]
}

#[test]
fn compare_fixture_renders_every_plot() {
    let dir = scratch("compare");
    let out = dir.join("page.html");
    let html = render(&fixture("results-compare"), &out);
    assert_self_contained(&html);
    assert!(html.contains("Concord compare: binary-trees 14"));
    assert!(html.contains("concord compare binary-trees 14 --preset vanilla,optimized"));
    for label in ["vanilla", "optimized"] {
        assert!(html.contains(&format!("Tasks per GC worker: {label}")));
        assert!(html.contains(&format!("GC worker × CPU: {label}")));
    }
    // Two configurations: a task distribution and a heatmap each, then the timeline, the time
    // breakdown and the stealing plot; no scalability plot for a compare.
    assert_eq!(count(section(&html, "task-distribution"), "<svg"), 2);
    assert_eq!(count(section(&html, "cpu-heatmap"), "<svg"), 2);
    assert_eq!(count(section(&html, "pause-timeline"), "<svg"), 1);
    assert_eq!(count(section(&html, "gc-time-breakdown"), "<svg"), 1);
    assert_eq!(count(section(&html, "stealing"), "<svg"), 1);
    assert!(!html.contains("id=\"scalability\""));
    assert_eq!(count(&html, "<svg"), 7);
    // Every plot has a caption that says what to look for.
    assert_eq!(count(&html, "<figcaption>"), 7);
    assert!(
        html.contains("full collection"),
        "the timeline marks full collections"
    );
    // The summary table has ratios to the first configuration; nothing went wrong.
    assert!(html.contains("id=\"summary\""));
    assert!(html.contains("1.00×"));
    assert!(html.contains("checksum ok"));
    assert!(!html.contains("Read with care"));
    // Written atomically: no temporary file left beside the page.
    let names: Vec<String> = fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["page.html"]);
}

#[test]
fn sweep_fixture_renders_scalability_curves() {
    let dir = scratch("sweep");
    let html = render(&fixture("results-sweep"), &dir.join("sweep.html"));
    assert_self_contained(&html);
    assert!(html.contains("Concord sweep of gc-threads: binary-trees 10"));
    // Six configurations (2 presets × 3 values).
    assert_eq!(count(section(&html, "task-distribution"), "<svg"), 6);
    assert_eq!(count(section(&html, "cpu-heatmap"), "<svg"), 6);
    let scal = section(&html, "scalability");
    assert_eq!(count(scal, "<svg"), 1);
    assert!(scal.contains("against gc-threads"));
    assert_eq!(count(&html, "<svg"), 16);
    // Bars and lines use short names: series@value, one line per preset.
    assert!(html.contains("vanilla@4") && html.contains("optimized@1"));
    assert!(html.contains("<b>vanilla</b>: median GC time"));
    assert!(html.contains("no steals"), "one GC thread never steals");
}

#[test]
fn default_output_is_report_html_in_the_results_directory() {
    let (_, results) = copied("default-output", "results-compare");
    let o = concord(&["report", results.to_str().unwrap()]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = results.join("report.html");
    assert!(fs::metadata(&page).unwrap().len() > 10_000);
    // Rendering twice replaces the page.
    let o = concord(&["report", results.to_str().unwrap()]);
    assert!(o.status.success());
    let mut names: Vec<String> = fs::read_dir(&results)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["experiment.json", "report.html", "runs"]);
}

fn read_experiment(dir: &Path) -> Value {
    serde_json::from_str(&fs::read_to_string(dir.join("experiment.json")).unwrap()).unwrap()
}

fn write_experiment(dir: &Path, v: &Value) {
    fs::write(
        dir.join("experiment.json"),
        serde_json::to_string_pretty(v).unwrap(),
    )
    .unwrap();
}

#[test]
fn damaged_results_render_with_notes() {
    let (dir, results) = copied("damaged", "results-compare");
    let mut exp = read_experiment(&results);
    exp["interrupted"] = Value::Bool(true);
    exp["complete"] = Value::Bool(false);
    let runs = exp["runs"].as_array_mut().unwrap();
    // Run 2 failed; run 3's records vanished; run 4's records hold a bad line; a run of a
    // configuration nobody declared, with no collections.
    runs[1]["status"] = "failed".into();
    runs[1]["error"] = "workload binary-trees: out of memory (heap 5M)".into();
    let records3 = runs[2]["records"].as_str().unwrap().to_string();
    fs::remove_file(results.join(&records3)).unwrap();
    let records4 = results.join(runs[3]["records"].as_str().unwrap());
    let mut text = fs::read_to_string(&records4).unwrap();
    text.push_str("{not json\n");
    fs::write(&records4, text).unwrap();
    fs::write(results.join("runs/empty.records.jsonl"), "").unwrap();
    fs::copy(
        results.join(runs[0]["summary"].as_str().unwrap()),
        results.join("runs/empty.summary.json"),
    )
    .unwrap();
    runs.push(serde_json::json!({
        "configuration": "stray", "value": null, "round": 0,
        "summary": "runs/empty.summary.json", "records": "runs/empty.records.jsonl",
        "status": "ok", "error": null
    }));
    write_experiment(&results, &exp);

    let html = render(&results, &dir.join("page.html"));
    assert_self_contained(&html);
    assert!(html.contains("Read with care"));
    assert!(html.contains("<b>interrupted</b>"));
    assert!(
        html.contains("out of memory (heap 5M)"),
        "the failed run's error"
    );
    assert!(html.contains(&records3) && html.contains("cannot be read"));
    assert!(html.contains("1 line(s)") && html.contains("skipped"));
    assert!(html.contains("ran no collection"));
    assert!(
        html.contains("does not list"),
        "the undeclared configuration"
    );
    // The plots still render for what is there.
    assert!(count(&html, "<svg") >= 5);
}

#[test]
fn results_where_every_run_failed_render_placeholders() {
    let dir = scratch("all-failed");
    let results = dir.join("results");
    fs::create_dir_all(&results).unwrap();
    write_experiment(
        &results,
        &serde_json::json!({
            "format": "concord-results", "version": 1, "kind": "compare",
            "workload": "gcbench", "size": null, "started": "2026-01-01T00:00:00Z",
            "command": "concord compare gcbench --preset vanilla,optimized", "vary": null,
            "configurations": [
                {"label": "vanilla", "preset": "vanilla", "value": null, "settings": ["preset=vanilla"]},
                {"label": "optimized", "preset": "optimized", "value": null, "settings": ["preset=optimized"]}
            ],
            "runs": [
                {"configuration": "vanilla", "value": null, "round": 0, "summary": null, "records": null,
                 "status": "failed", "error": "heap: cannot reserve 1G"},
                {"configuration": "optimized", "value": null, "round": 0, "summary": null, "records": null,
                 "status": "failed", "error": "heap: cannot reserve 1G"}
            ],
            "interrupted": false, "complete": true
        }),
    );
    let html = render(&results, &dir.join("page.html"));
    assert_self_contained(&html);
    assert!(html.contains("cannot reserve 1G"));
    assert!(html.contains("has no finished run"));
    assert!(html.contains("class=\"empty\""));
}

#[test]
fn sweeps_whose_runs_carry_the_values_draw_one_line_per_configuration() {
    // The other shape a sweep may take: configurations without a value, runs with one.
    let (dir, results) = copied("sweep-run-values", "results-sweep");
    let mut exp = read_experiment(&results);
    let mut configs = Vec::new();
    for c in exp["configurations"].as_array().unwrap() {
        let preset = c["preset"].as_str().unwrap();
        if !configs.iter().any(|x: &Value| x["label"] == preset) {
            configs.push(serde_json::json!({
                "label": preset, "preset": preset, "value": null, "settings": [format!("preset={preset}")]
            }));
        }
    }
    exp["configurations"] = Value::Array(configs);
    for r in exp["runs"].as_array_mut().unwrap() {
        let label = r["configuration"].as_str().unwrap();
        let preset = label.split('@').next().unwrap().to_string();
        r["configuration"] = preset.into();
    }
    write_experiment(&results, &exp);
    let html = render(&results, &dir.join("page.html"));
    assert_self_contained(&html);
    let scal = section(&html, "scalability");
    assert_eq!(count(scal, "<svg"), 1);
    assert!(html.contains("<b>optimized</b>: median GC time"));
}

#[test]
fn workload_measurements_get_columns_in_the_summary() {
    let (dir, results) = copied("measurements", "results-compare");
    let exp = read_experiment(&results);
    for (i, run) in exp["runs"].as_array().unwrap().iter().enumerate() {
        let path = results.join(run["summary"].as_str().unwrap());
        let mut summary: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
        // Workload details are strings in the summary JSON; numbers work too.
        summary["latency_p999_us"] = format!("{}", 900 + i).into();
        summary["latency_p50_us"] = (100 + i).into();
        summary["array size"] = "500000".into();
        fs::write(&path, summary.to_string()).unwrap();
    }
    let html = render(&results, &dir.join("page.html"));
    let table = section(&html, "summary");
    let p50 = table
        .find("<th class=\"n\">latency_p50_us</th>")
        .expect("p50 column");
    let p999 = table
        .find("<th class=\"n\">latency_p999_us</th>")
        .expect("p999 column");
    assert!(p50 < p999, "percentiles in numeric order");
    assert!(
        !table.contains("array size"),
        "constants are not measurements"
    );
    // vanilla ran as runs 0 and 2: median of 900 and 902.
    assert!(table.contains("<td class=\"n\">901.0</td>"), "{table}");
}

/// The page is renamed into place; over a FIFO (as over a device such as /dev/full) that would
/// replace it, so an output that is not a regular file is refused before anything is written.
/// (A FIFO in a scratch directory, so that the old behaviour harms nothing.)
#[test]
fn an_output_that_is_not_a_regular_file_is_refused() {
    use std::os::unix::fs::FileTypeExt;
    let dir = scratch("fifo-output");
    let fifo = dir.join("page.fifo");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("mkfifo runs");
    assert!(made.success());
    let results = fixture("results-compare");
    assert_exit_2(
        &[
            "report",
            results.to_str().unwrap(),
            "-o",
            fifo.to_str().unwrap(),
        ],
        "is not a regular file",
    );
    assert!(fs::metadata(&fifo).unwrap().file_type().is_fifo());
}

/// Every file of `dir` (relative name → bytes), to see that nothing changed.
fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut files = Vec::new();
    for entry in fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(snapshot(&path));
        } else {
            files.push((path.clone(), fs::read(&path).unwrap()));
        }
    }
    files.sort();
    files
}

/// An output that is one of the results (`experiment.json`, a run's summary or records, any
/// file in `runs/`), by its name, another spelling of it, a symbolic link or a hard link, or a
/// file a run names that is missing, is refused before anything is written: the page would
/// take its place and the directory could not be read again.
#[test]
fn an_output_that_is_one_of_the_reports_inputs_is_refused() {
    let (dir, results) = copied("output-is-input", "results-compare");
    let mut exp = read_experiment(&results);
    // A run whose summary is named but missing: the page must not be written in its place.
    let missing = "runs/005-vanilla.summary.json";
    let mut lost = exp["runs"][0].clone();
    lost["summary"] = missing.into();
    exp["runs"].as_array_mut().unwrap().push(lost);
    write_experiment(&results, &exp);
    let records = exp["runs"][1]["records"].as_str().unwrap().to_string();
    let link = dir.join("link.html");
    std::os::unix::fs::symlink(results.join("experiment.json"), &link).unwrap();
    let hard = dir.join("hard.html");
    fs::hard_link(results.join(&records), &hard).unwrap();
    fs::write(results.join("runs/notes.txt"), "kept beside the runs\n").unwrap();
    let before = snapshot(&results);
    let r = results.to_str().unwrap();
    for output in [
        results.join("experiment.json"),
        results.join("runs/001-vanilla.summary.json"),
        results.join("runs/../runs/./001-vanilla.records.jsonl"),
        results.join(missing),
        results.join("runs/notes.txt"),
        link.clone(),
        hard.clone(),
    ] {
        let o = output.to_str().unwrap();
        assert_exit_2(&["report", r, "-o", o], "is one of the results in");
        assert_eq!(snapshot(&results), before, "-o {o} changed the results");
    }
    assert!(fs::symlink_metadata(&link)
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        fs::read(&hard).unwrap(),
        fs::read(results.join(&records)).unwrap()
    );
    // The directory still renders, to its default page and to a file of its own.
    let o = concord(&["report", r]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    render(&results, &results.join("page.html"));
}

/// A number replaced by something else in a summary is said on the page and on stderr (which
/// file, which field, what it holds, that a number was expected); the page still renders, with
/// the figure shown as missing.
#[test]
fn a_number_replaced_by_a_string_is_a_warning_on_the_page_and_on_stderr() {
    let (dir, results) = copied("number-replaced", "results-compare");
    let exp = read_experiment(&results);
    let rel = exp["runs"][0]["summary"].as_str().unwrap().to_string();
    let path = results.join(&rel);
    let mut summary: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    summary["gc_pause_total_ms"] = "abc".into();
    summary["steal_attempts"] = serde_json::json!([1, 2]);
    fs::write(&path, summary.to_string()).unwrap();
    let (html, stderr) = render_with_stderr(&results, &dir.join("page.html"));
    assert!(html.contains("Read with care"));
    for (field, found) in [
        ("gc_pause_total_ms", "\"abc\""),
        ("steal_attempts", "[1,2]"),
    ] {
        let note = format!(
            "Run vanilla round 1: summary {rel}: field \"{field}\" is {found}, expected a number"
        );
        assert!(
            stderr.contains(&format!("concord report: warning: {note}")),
            "{stderr}"
        );
        let on_page = note.replace('"', "&quot;");
        assert!(html.contains(&on_page), "{on_page} is not on the page");
    }
    // Only those two: the other runs' numbers, and strings where strings belong, are fine.
    assert_eq!(stderr.matches("warning:").count(), 2, "{stderr}");
}

#[test]
fn bad_input_exits_2_with_a_clear_message() {
    let dir = scratch("bad");
    let missing = dir.join("missing");
    assert_exit_2(
        &["report", missing.to_str().unwrap()],
        "missing: no such file or directory (expected a results directory",
    );
    // A file is not a directory; it is there, so "no such …" would mislead.
    let file = dir.join("some-file.txt");
    fs::write(&file, "text\n").unwrap();
    assert_exit_2(
        &["report", file.to_str().unwrap()],
        "some-file.txt is a file, not a directory (expected a results directory",
    );
    let empty = dir.join("empty");
    fs::create_dir_all(&empty).unwrap();
    assert_exit_2(
        &["report", empty.to_str().unwrap()],
        "has no experiment.json",
    );

    let bad = dir.join("bad");
    fs::create_dir_all(&bad).unwrap();
    let path = bad.to_str().unwrap();
    fs::write(bad.join("experiment.json"), "{ not json").unwrap();
    assert_exit_2(&["report", path], "is not valid JSON");
    fs::write(
        bad.join("experiment.json"),
        r#"{"format": "something-else", "version": 1, "runs": []}"#,
    )
    .unwrap();
    assert_exit_2(&["report", path], "expected \"concord-results\"");
    fs::write(bad.join("experiment.json"), r#"{"version": 1, "runs": []}"#).unwrap();
    assert_exit_2(&["report", path], "no \"format\" field");
    fs::write(
        bad.join("experiment.json"),
        r#"{"format": "concord-results", "version": 7, "runs": []}"#,
    )
    .unwrap();
    assert_exit_2(&["report", path], "version 7 of the results format");
    fs::write(
        bad.join("experiment.json"),
        r#"{"format": "concord-results", "version": 1}"#,
    )
    .unwrap();
    assert_exit_2(&["report", path], "no \"runs\" list");
    fs::write(
        bad.join("experiment.json"),
        r#"{"format": "concord-results", "version": 1, "runs": [{"round": 0}]}"#,
    )
    .unwrap();
    assert_exit_2(
        &["report", path],
        "does not have the concord-results layout",
    );
    // Nothing was written for bad input.
    assert!(!bad.join("report.html").exists());

    // An output directory that does not exist.
    let out = dir.join("no/such/dir/page.html");
    assert_exit_2(
        &[
            "report",
            fixture("results-compare").to_str().unwrap(),
            "--output",
            out.to_str().unwrap(),
        ],
        "cannot write",
    );
}

/// Whether an SVG in `html` shows the text `label` (plotters writes it on a line of its own).
fn has_label(html: &str, label: &str) -> bool {
    html.contains(&format!(">\n{label}\n</text>"))
}

/// Renders every kind's page in headless Chromium and checks the screenshot is not blank.
/// Ignored, with the reason, where the build found no Chromium (cfg `no_chromium`, see
/// build.rs); `.ci/run` installs it and requires it, so CI never skips this test.
#[test]
#[cfg_attr(
    no_chromium,
    ignore = "needs headless Chromium (chromium or chromium-browser on PATH) when the tests were built: apt-get install chromium (.ci/run does)"
)]
fn pages_render_in_headless_chromium() {
    let dir = scratch("browser");
    for kind in ["compare", "ablation", "sched-bench"] {
        let page = dir.join(format!("{kind}.html"));
        render(&fixture(&format!("results-{kind}")), &page);
        assert_renders(&page, &dir.join(format!("profile-{kind}")), 4000);
    }
}

#[test]
fn ablation_fixture_draws_each_fix_stealing_and_the_monitor() {
    let dir = scratch("kind-ablation");
    let html = render(&fixture("results-ablation"), &dir.join("page.html"));
    assert_self_contained(&html);
    assert!(html.contains("Concord ablation: binary-trees 10"));
    assert!(html.contains("<span class=\"chip\">gc_threads=2</span>"));
    let fix = section(&html, "each-fix");
    assert_eq!(count(fix, "<svg"), 1);
    assert!(fix.contains("GC time relative to vanilla") && fix.contains("min–max over runs"));
    assert_eq!(count(section(&html, "steals-per-collection"), "<svg"), 1);
    let monitor = section(&html, "monitor");
    assert_eq!(count(monitor, "<svg"), 1);
    // Only the configurations that used the monitor, as task queue or for parking (the
    // others' records say null).
    for name in [
        "vanilla",
        "+task-affinity",
        "+lockfree-queue",
        "+futex-parking",
    ] {
        assert!(has_label(monitor, name), "{name}");
    }
    assert!(!has_label(monitor, "modern") && !has_label(monitor, "optimized"));
    // Nine task distributions and heatmaps, timeline, breakdown, stealing, and the three above.
    assert_eq!(count(&html, "<svg"), 9 + 9 + 3 + 3);
    assert_eq!(count(&html, "<svg"), count(&html, "<figcaption>"));
}

#[test]
fn os_bench_fixture_draws_interference_per_affinity_mode() {
    let dir = scratch("kind-os-bench");
    let html = render(&fixture("results-os-bench"), &dir.join("page.html"));
    assert_self_contained(&html);
    let gc = section(&html, "interference");
    assert_eq!(count(gc, "<svg"), 1);
    assert!(gc.contains("no interference") && gc.contains("with busy:1"));
    assert!(has_label(gc, "vanilla"));
    assert_eq!(count(section(&html, "cpus-used"), "<svg"), 1);
    // No record has monitor counters: a note instead of the figure.
    let monitor = section(&html, "monitor");
    assert_eq!(count(monitor, "<svg"), 0);
    assert!(monitor.contains("Skipped: no collection record has monitor counters"));
    // Ratios are to vanilla under the same interference.
    assert!(html.contains("the first configuration of the same group"));
    assert_eq!(count(section(&html, "summary"), "class=\"r base\""), 4);
}

/// `tests/fixtures/results-pause-bench`: queue-churn 1 s without a load and with the GC log
/// on a stalled device (4 KiB/s), sync and async; the sync run's one pause took 1858 ms, of
/// which 1712 ms was its log write.
#[test]
fn pause_bench_fixture_draws_a_pause_series_per_load_and_the_threshold_counts() {
    let dir = scratch("kind-pause-bench");
    let html = render(&fixture("results-pause-bench"), &dir.join("page.html"));
    assert_self_contained(&html);
    let series = section(&html, "pause-series");
    assert_eq!(count(series, "<svg"), 2, "one time series per load");
    assert!(series.contains("<h3>no load</h3>"));
    assert!(series.contains("<h3>slow-log: the GC log on a one-page device drained at 4K/s</h3>"));
    for mode in ["sync/never", "async/never"] {
        assert!(has_label(series, mode), "{mode}");
    }
    let over = section(&html, "pauses-over");
    assert_eq!(count(over, "<svg"), 1);
    for label in [
        "none:sync/never",
        "slow-log:sync/never",
        "&gt; 250 ms",
        "&gt; 2000 ms",
    ] {
        assert!(over.contains(label), "{label}");
    }
    // The table keeps the groups: a baseline per load (its two ratio cells), as os-bench's.
    assert_eq!(count(section(&html, "summary"), "class=\"r base\""), 4);
}

#[test]
fn sched_bench_fixture_draws_lifespans_and_times_per_policy() {
    let dir = scratch("kind-sched-bench");
    let html = render(&fixture("results-sched-bench"), &dir.join("page.html"));
    assert_self_contained(&html);
    let lifespans = section(&html, "lifespans");
    assert_eq!(count(lifespans, "<svg"), 2, "one histogram per workload");
    for policy in ["cfs", "fifo", "adaptive"] {
        assert!(has_label(lifespans, policy), "{policy}");
    }
    assert!(lifespans.contains("Lifespans: binary-trees 10, 4 mutators (scalable)"));
    let times = section(&html, "policy-times");
    assert_eq!(count(times, "<svg"), 2);
    assert!(
        times.contains("GC time relative to cfs") && times.contains("wall time relative to cfs")
    );
    assert!(has_label(times, "gcbench"));
}

#[test]
fn records_without_monitor_counters_are_read_as_null() {
    // Older results: no "monitor" field at all (the compare fixture predates it).
    let dir = scratch("monitor-missing");
    let html = render(&fixture("results-compare"), &dir.join("page.html"));
    assert!(section(&html, "monitor").contains("Skipped"));
    // Some records with counters, others without the field: only the former count.
    let results = dir.join("results");
    copy_dir(&fixture("results-compare"), &results);
    let exp = read_experiment(&results);
    let first = results.join(exp["runs"][0]["records"].as_str().unwrap());
    let text = fs::read_to_string(&first).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut record: Value = serde_json::from_str(&lines[0]).unwrap();
    record["monitor"] = serde_json::json!({"acquisitions": 9, "contended": 4, "barges": 2,
        "heir_wakeups": 2, "futile_wakeups": 3});
    lines[0] = record.to_string();
    fs::write(&first, lines.join("\n") + "\n").unwrap();
    let html = render(&results, &dir.join("page2.html"));
    let monitor = section(&html, "monitor");
    assert_eq!(count(monitor, "<svg"), 1);
    assert!(has_label(monitor, "vanilla") && !has_label(monitor, "optimized"));
}
