//! `concord placement-bench` (004 Fig. 3) end to end at a tiny size on the synthetic topology
//! `0/1`: the JSON's per-placement rows (reads per node, stddev, remote share, hand-computed),
//! the results directory, the text table, and bad input refused with exit 2 before anything
//! is written.

mod common;

use common::{argv, assert_exit_2, concord, json_into, read_json, scratch, text};
use serde_json::{json, Value};

/// 500 page reads over 16-page buffers (64k of 4 KiB pages) on `0/1`, threads 1 and 2.
const TINY: &str = "placement-bench --numa-topology 0/1 --threads 1,2 --buffer 64k \
                    --operations 500 --repeat 2 --no-report";

#[test]
fn a_tiny_run_reports_every_placement_and_thread_count() {
    let (v, out) = json_into("placement-tiny", &[&argv(TINY)[..], &["--json"]].concat());
    assert_eq!(v["kind"], "placement-bench");
    assert_eq!(v["topology_kind"], "synthetic");
    assert_eq!(
        v["page_size"], 4096,
        "the expected figures assume 4 KiB pages"
    );
    assert_eq!(v["buffer_bytes"], 65536);
    assert!(v["memory"]
        .as_str()
        .unwrap()
        .starts_with("synthetic topology"));
    let rows = v["placements"].as_array().unwrap();
    // (placement, threads, working, reads per node, stddev, remote share), by hand: 500 reads
    // of 16 pages; balanced-remote's pages alternate between the nodes (31 passes and 4 pages
    // for one thread, 15 passes and 10 pages for each of two: half on each node either way).
    let expected = [
        ("unbalanced-remote", 1, 1, [500, 0], 1.0, 0.0),
        ("unbalanced-remote", 2, 2, [500, 0], 1.0, 0.5),
        ("balanced-remote", 1, 1, [250, 250], 0.0, 0.5),
        ("balanced-remote", 2, 2, [250, 250], 0.0, 0.5),
        ("balanced-local", 1, 1, [500, 0], 1.0, 0.0),
        ("balanced-local", 2, 2, [250, 250], 0.0, 0.0),
        ("unbalanced-local", 1, 1, [500, 0], 1.0, 0.0),
        ("unbalanced-local", 2, 1, [500, 0], 1.0, 0.0),
    ];
    assert_eq!(rows.len(), expected.len(), "{v}");
    for (row, (placement, threads, working, reads, stddev, remote)) in rows.iter().zip(expected) {
        assert_eq!(row["placement"], placement, "{row}");
        assert_eq!(row["threads"], threads, "{row}");
        assert_eq!(row["working_threads"], working, "{row}");
        assert_eq!(row["reads_per_node"], json!(reads), "{row}");
        assert_eq!(row["node_access_stddev"], stddev, "{row}");
        assert_eq!(row["remote_share"], remote, "{row}");
        assert!(row["time_ms"].as_f64().unwrap() > 0.0, "{row}");
        if threads == 1 {
            assert_eq!(row["speedup"], 1.0, "{row}");
        } else {
            assert!(row["speedup"].as_f64().unwrap() > 0.0, "{row}");
        }
    }
    // The results directory: every run ok, its summary in place, nothing else.
    let e = read_json(&out.join("experiment.json"));
    assert_eq!(
        (e["kind"].as_str(), e["complete"].as_bool()),
        (Some("placement-bench"), Some(true))
    );
    let runs = e["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 16);
    assert!(runs.iter().all(|r| r["status"] == "ok"), "{e}");
    assert_eq!(std::fs::read_dir(out.join("runs")).unwrap().count(), 16);
    // The last run is unbalanced-local with 2 threads: thread 1 idles on node 1.
    let last: Value = read_json(&out.join(runs[15]["summary"].as_str().unwrap()));
    assert_eq!(last["placement"], "unbalanced-local");
    assert_eq!(last["checksum_ok"], true);
    let idle = &last["thread_plan"][1];
    assert_eq!(
        (idle["node"].as_u64(), idle["cpu"].as_u64()),
        (Some(1), Some(1))
    );
    assert_eq!(idle["operations"], 0);
    assert_eq!(idle["page_rule"], Value::Null);
    assert_eq!(last["thread_plan"][0]["pages_per_node"], json!([16, 0]));
    assert_eq!(
        last["thread_plan"][0]["measured_pages_per_node"],
        Value::Null
    );
    // The report draws 004 Fig. 3 and no section about collections (there are none).
    let page = out.join("page.html");
    let o = concord(&[
        "report",
        out.to_str().unwrap(),
        "-o",
        page.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", text(&o.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    for section in ["placement-speedup", "placement-imbalance"] {
        assert!(
            html.contains(&format!("<h2 id=\"{section}\">")),
            "{section}"
        );
    }
    for section in ["task-distribution", "cpu-heatmap", "stealing", "monitor"] {
        assert!(!html.contains(&format!("id=\"{section}\"")), "{section}");
    }
    assert!(html.contains("Speedup over one thread, per placement"));
}

#[test]
fn the_text_says_the_memory_is_on_one_physical_node() {
    let out = scratch("placement-text").join("out");
    let o = concord(
        &[
            &argv(TINY)[..],
            &[
                "--placements",
                "balanced-remote",
                "--out",
                out.to_str().unwrap(),
            ],
        ]
        .concat(),
    );
    let stdout = text(&o.stdout);
    assert!(o.status.success(), "{}", text(&o.stderr));
    assert!(stdout.contains("memory: synthetic topology"), "{stdout}");
    assert!(
        stdout.contains("reads node 0 reads node 1  stddev  remote%"),
        "{stdout}"
    );
    let row = stdout
        .lines()
        .find(|l| l.starts_with("balanced-remote          2"))
        .unwrap_or_else(|| panic!("{stdout}"));
    assert!(row.ends_with("250          250    0.00    50.0%"), "{row}");
}

#[test]
fn bad_input_is_refused_before_anything_is_written() {
    let out = scratch("placement-refused").join("out");
    let out_arg = out.to_str().unwrap();
    // `--numa-topology 0/1 --buffer 64k --operations 10` unless `more` gives its own.
    let with = |more: &'static str| {
        let mut a = argv("placement-bench");
        for (flag, default) in [
            ("--numa-topology", "0/1"),
            ("--buffer", "64k"),
            ("--operations", "10"),
        ] {
            if !more.contains(flag) {
                a.extend([flag, default]);
            }
        }
        a.extend(argv(more));
        a.extend(["--out", out_arg]);
        a
    };
    assert_exit_2(
        &with("--placements local"),
        "--placements: 'local' is unknown (allowed: unbalanced-remote, balanced-remote, \
         balanced-local, unbalanced-local)",
    );
    assert_exit_2(
        &with("--threads 0"),
        "--threads: '0' is out of range (allowed: 1..=",
    );
    assert_exit_2(
        &with("--threads 1,100000"),
        "--threads: '100000' is out of range (allowed: 1..=",
    );
    assert_exit_2(&with("--threads 1,-1"), "--threads: '-1' is out of range");
    assert_exit_2(&with("--threads 2"), "--threads: 1 is missing");
    assert_exit_2(&with("--threads 1,1"), "'1' is given twice");
    assert_exit_2(
        &with("--numa-topology 0"),
        "--numa-topology: '0' has one node",
    );
    assert_exit_2(
        &with("--numa-topology 0/0"),
        "CPU 0 is on node 0 and on node 1",
    );
    assert_exit_2(&with("--buffer 0"), "--buffer: '0' is empty");
    assert_exit_2(&with("--buffer 100000g"), "more than half of MemAvailable");
    assert_exit_2(&with("--operations 0"), "--operations: '0' is out of range");
    assert!(!out.exists(), "nothing was written");
    // An --out directory that holds something is refused too, and left alone.
    std::fs::create_dir_all(&out).unwrap();
    std::fs::write(out.join("keep"), b"x").unwrap();
    assert_exit_2(&with(""), "already exists and is not empty");
    assert_eq!(std::fs::read(out.join("keep")).unwrap(), b"x");
}

/// The machine's NUMA nodes with memory, from sysfs.
fn machine_nodes() -> usize {
    std::fs::read_dir("/sys/devices/system/node")
        .map(|d| {
            d.flatten()
                .filter(|e| {
                    let name = e.file_name().to_string_lossy().into_owned();
                    name.starts_with("node") && name[4..].parse::<u32>().is_ok()
                })
                .count()
        })
        .unwrap_or(0)
}

#[test]
fn auto_places_memory_on_the_machine_nodes_or_refuses_one_node() {
    let args = argv(
        "placement-bench --numa-topology auto --threads 1,2 --buffer 64k --operations 100 \
         --repeat 1 --no-report --json",
    );
    if machine_nodes() < 2 {
        assert_exit_2(&args, "--numa-topology: 'auto' has one node");
        return;
    }
    // Two nodes or more: placed with mbind, checked with move_pages in every run.
    let (v, out) = json_into("placement-auto", &args);
    assert_eq!(v["topology_kind"], "auto");
    let e = read_json(&out.join("experiment.json"));
    for run in e["runs"].as_array().unwrap() {
        assert_eq!(run["status"], "ok", "{run}");
        let s = read_json(&out.join(run["summary"].as_str().unwrap()));
        for t in s["thread_plan"].as_array().unwrap() {
            assert_eq!(t["measured_pages_per_node"], t["pages_per_node"], "{t}");
        }
    }
}
