//! `concord run --numa … --numa-topology …`: the layout and topology reach the heap, the
//! summary JSON reports them with the local/remote figures and `remote_copy_fraction`, a TOML
//! file and the environment set them too, and bad values are bad input (exit 2).

mod common;

use common::{argv, assert_exit_2, command, json_of, scratch, stdout_json};

#[test]
fn interleaved_on_a_synthetic_two_node_topology_reports_its_figures() {
    let v = json_of(&argv(
        "run binary-trees 12 --heap 16m --gc-threads 2 --numa interleaved --numa-topology 0/1 \
         --verify --json",
    ));
    assert_eq!(v["checksum_ok"], true, "{v}");
    assert_eq!(v["verified"], true, "{v}");
    let numa = &v["numa"];
    assert_eq!(numa["layout"], "interleaved", "{v}");
    assert_eq!(numa["topology"], "0/1");
    assert_eq!(numa["kind"], "synthetic");
    assert_eq!(numa["nodes"], serde_json::json!([[0], [1]]));
    assert_eq!(numa["memory_bound"], false);
    assert_eq!(numa["workers"][0]["cpus"], serde_json::json!([0]));
    assert_eq!(numa["workers"][1]["cpus"], serde_json::json!([1]));
    let fraction = v["remote_copy_fraction"].as_f64().unwrap();
    assert!(fraction > 0.05 && fraction < 0.95, "{fraction}");
    let (local, remote) = (
        v["bytes_copied_local"].as_u64().unwrap(),
        v["bytes_copied_remote"].as_u64().unwrap(),
    );
    assert_eq!(local + remote, v["bytes_copied"].as_u64().unwrap(), "{v}");
    let per_node = numa["bytes_allocated_per_node"].as_array().unwrap();
    assert!(per_node.iter().all(|b| b.as_u64().unwrap() > 0), "{v}");
    assert_eq!(numa["accounting"], true);
    // The readable summary has its NUMA line.
    let out = common::concord(&argv(
        "run binary-trees 10 --heap 16m --gc-threads 2 --numa interleaved --numa-topology 0/1",
    ));
    let text = common::text(&out.stdout);
    assert!(
        text.contains(
            "NUMA      layout interleaved, synthetic topology 0/1 (2 node(s)): remote copies"
        ),
        "{text}"
    );
}

#[test]
fn the_defaults_are_off_and_auto_with_nothing_remote() {
    for preset in ["vanilla", "modern", "optimized"] {
        let v = json_of(&argv(&format!(
            "run binary-trees 10 --heap 16m --preset {preset} --json"
        )));
        assert_eq!(v["numa"]["layout"], "off", "{preset}");
        assert_eq!(v["numa"]["topology"], "auto", "{preset}");
        assert_eq!(v["numa"]["kind"], "auto", "{preset}");
        assert_eq!(v["remote_copy_fraction"], 0.0, "{preset}");
        assert_eq!(v["numa"]["accounting"], false, "{preset}");
    }
    // Nothing counted, nothing said.
    let out = common::concord(&argv("run binary-trees 10 --heap 16m"));
    assert!(!common::text(&out.stdout).contains("NUMA"));
    // Interleaved on this machine's real node: mbind placed the heap, nothing is remote.
    let v = json_of(&argv(
        "run binary-trees 10 --heap 16m --numa interleaved --json",
    ));
    assert_eq!(v["numa"]["memory_bound"], true, "{v}");
    assert_eq!(v["remote_copy_fraction"], 0.0, "{v}");
}

#[test]
fn toml_and_environment_set_the_layout_too() {
    let dir = scratch("numa-toml");
    let file = dir.join("c.toml");
    std::fs::write(&file, "numa = \"interleaved\"\nnuma_topology = \"0/1\"\n").unwrap();
    let out = command(&[
        "run",
        "binary-trees",
        "10",
        "--heap",
        "16m",
        "--config",
        file.to_str().unwrap(),
        "--json",
    ])
    .output()
    .unwrap();
    let v = stdout_json(&out);
    assert_eq!(v["numa"]["layout"], "interleaved", "{v}");
    assert_eq!(v["numa"]["topology"], "0/1", "{v}");
    let out = command(&argv("run binary-trees 10 --heap 16m --json"))
        .env("CONCORD_NUMA", "interleaved")
        .env("CONCORD_NUMA_TOPOLOGY", "1/0")
        .output()
        .unwrap();
    let v = stdout_json(&out);
    assert_eq!(v["numa"]["topology"], "1/0", "{v}");
    assert_eq!(
        v["numa"]["workers"][0]["cpus"],
        serde_json::json!([1]),
        "{v}"
    );
}

#[test]
fn bad_layouts_and_topologies_are_bad_input() {
    assert_exit_2(
        &argv("run binary-trees 10 --numa striped"),
        "--numa: 'striped' is not a NUMA layout (allowed: off, interleaved, fragmented, segregated)",
    );
    assert_exit_2(
        &argv("run binary-trees 10 --numa-topology 0/0"),
        "--numa-topology: '0/0' CPU 0 is on node 0 and on node 1 (allowed: each CPU on one node)",
    );
    assert_exit_2(
        &argv("run binary-trees 10 --numa-topology 0//1"),
        "--numa-topology: '0//1' node 1 is empty",
    );
    assert_exit_2(
        &argv("run binary-trees 10 --numa-topology 0/x"),
        "--numa-topology: '0/x' node 1 ('x') is not a CPU list",
    );
    assert_exit_2(
        &argv("run binary-trees 10 --numa-topology 0/4095"),
        "--numa-topology: '0/4095' does not fit this process: CPU 4095 of node 1 is not usable",
    );
    let out = command(&argv("run binary-trees 10"))
        .env("CONCORD_NUMA", "striped")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("CONCORD_NUMA: 'striped' is not a NUMA layout"),
        "{err}"
    );
    // Segregated needs a GC thread per node (004 §4.2.2).
    assert_exit_2(
        &argv("run binary-trees 10 --numa segregated --numa-topology 0/1 --gc-threads 1"),
        "--numa: segregated needs at least one GC thread per NUMA node, but gc-threads is 1 \
         and numa-topology 0/1 has 2 nodes (allowed: gc-threads of at least 2, or numa off or \
         interleaved)",
    );
}

#[test]
fn the_report_draws_local_and_remote_accesses_per_layout() {
    let dir = scratch("numa-report");
    let results = dir.join("results");
    let out = common::concord(&[
        "compare",
        "binary-trees",
        "12",
        "--heap",
        "8m",
        "--gc-threads",
        "2",
        "--preset",
        "optimized",
        "--numa-arms",
        "off,interleaved,segregated",
        "--numa-topology",
        "0/1",
        "--repeat",
        "1",
        "--out",
        results.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = dir.join("report.html");
    let o = common::concord(&[
        "report",
        results.to_str().unwrap(),
        "--output",
        page.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    for needle in [
        "NUMA: local and remote accesses per layout",
        "Bytes copied by the collections, to the copying worker",
        "scan messages between nodes",
        "Bytes allocated per node",
        "Imbalance of the GC scans across nodes (004 Table 4)",
        "GC throughput (004 Fig. 4/7)",
    ] {
        assert!(html.contains(needle), "{needle} missing");
    }
    // Every run had the figures, so both are drawn rather than explained away.
    for note in ["No run reported scans per node", "No run reported GC time"] {
        assert!(!html.contains(note), "{note}");
    }
    assert!(
        !html.contains("004 Fig. 6/7"),
        "Table 4 is labelled as such"
    );
    // A run without NUMA figures gets no NUMA section.
    let plain = dir.join("plain");
    let out = common::concord(&[
        "compare",
        "binary-trees",
        "8",
        "--heap",
        "8m",
        "--repeat",
        "1",
        "--out",
        plain.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let page = dir.join("plain.html");
    let o = common::concord(&[
        "report",
        plain.to_str().unwrap(),
        "--output",
        page.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let html = std::fs::read_to_string(&page).unwrap();
    assert!(!html.contains("NUMA: local and remote accesses"), "{html}");
}

/// 004's headline metrics on the whole path: the summary's `gc_throughput_mb_s` is the bytes
/// allocated (MiB) per second of GC pause, each collection record carries its own, and
/// `node_access_stddev` is the imbalance of `scans_per_node` (0 balanced, 1 all on one of two
/// nodes); both NUMA keys are null without a NUMA layout or topology.
#[test]
fn gc_throughput_and_node_access_imbalance_are_reported() {
    let dir = scratch("numa-004-metrics");
    let records = dir.join("records.jsonl");
    let mut args = argv(
        "run binary-trees 12 --heap 16m --gc-threads 2 --numa interleaved --numa-topology 0/1 \
         --json --gc-records",
    );
    args.push(records.to_str().unwrap());
    let v = stdout_json(&common::concord(&args));
    let mib = (1u64 << 20) as f64;
    let allocated = v["bytes_allocated"].as_f64().unwrap();
    let pause_s = v["gc_pause_total_ms"].as_f64().unwrap() / 1e3;
    let throughput = v["gc_throughput_mb_s"].as_f64().unwrap();
    assert!(
        (throughput - allocated / mib / pause_s).abs() < 1e-6 * throughput,
        "{v}"
    );
    let scans: Vec<f64> = v["scans_per_node"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_f64().unwrap())
        .collect();
    assert_eq!(scans.len(), 2, "{v}");
    let total = scans[0] + scans[1];
    let expected = (scans[0] - scans[1]).abs() / total; // two nodes: |a−b|/(a+b)
    let stddev = v["node_access_stddev"].as_f64().unwrap();
    assert!((stddev - expected).abs() < 1e-9, "{stddev} vs {expected}");
    // Interleaved spaces balance the accesses (004 §3.2.2).
    assert!(stddev < 0.2, "{v}");

    let text = std::fs::read_to_string(&records).unwrap();
    let mut recorded = 0.0;
    for line in text.lines() {
        let r: serde_json::Value = serde_json::from_str(line).unwrap();
        let bytes = r["bytes_allocated"].as_f64().unwrap();
        recorded += bytes;
        let per_collection = r["gc_throughput_mb_s"].as_f64().unwrap();
        let expected = bytes / mib / (r["pause_ms"].as_f64().unwrap() / 1e3);
        assert!((per_collection - expected).abs() <= 1e-6 * expected, "{r}");
        assert_eq!(r["scans_per_node"].as_array().unwrap().len(), 2, "{r}");
    }
    // What was allocated after the last collection is in no record.
    assert!(
        recorded > 0.0 && recorded <= allocated,
        "{recorded} of {allocated}"
    );

    // First touch on a two-node topology: every scan is on node 0.
    let off = json_of(&argv(
        "run binary-trees 12 --heap 16m --gc-threads 2 --numa-topology 0/1 --json",
    ));
    assert_eq!(off["node_access_stddev"], 1.0, "{off}");
    // No layout and one node: nothing counted per node.
    let none = json_of(&argv("run binary-trees 12 --heap 16m --json"));
    assert_eq!(
        none["node_access_stddev"],
        serde_json::Value::Null,
        "{none}"
    );
    assert_eq!(none["scans_per_node"], serde_json::Value::Null, "{none}");
    assert!(none["gc_throughput_mb_s"].as_f64().unwrap() > 0.0, "{none}");
}
