//! `concord sim validate --tier` end to end on its quick grids: every cell has its real runs
//! (with their load), its simulated figures and its checks; tier 0 matches every collection
//! one to one; shards cover the grid and merge into it; tier 3 gives every figure its values;
//! a missing shard, a bad tier or a shard without `--out` is refused. No timing threshold is
//! asserted: the verdicts are the output.

mod common;

use common::{assert_exit_2, concord, scratch, stdout_json, text};

#[test]
fn tier_0_matches_every_collection_of_every_run_one_to_one() {
    let dir = scratch("sim-tiers-0");
    let o = concord(&[
        "sim",
        "validate",
        "--tier",
        "0",
        "--quick",
        "--json",
        "--keep",
        dir.join("kept").to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let json = stdout_json(&o);
    assert_eq!(json["tier"], 0);
    let cells = json["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 1, "{json:#}");
    let c = &cells[0];
    assert_eq!(c["gc_threads"], 1);
    assert_eq!(c["pinned"], true);
    assert_eq!(c["real"]["loads"].as_array().unwrap().len(), 2);
    let m = &c["matched"];
    // The workload is seeded and one GC thread copies alike every time: the trace's
    // collections are every run's.
    assert!(m["collections"].as_u64().unwrap() > 0, "{m}");
    assert_eq!(m["matched"], m["collections"], "{m}");
    assert_eq!(m["matched_runs"], 2, "{m}");
    let ratio = m["median_ratio"].as_f64().unwrap();
    assert!(ratio.is_finite() && ratio > 0.0, "{m}");
    let [lo, hi] = [0, 1].map(|i| c["real"]["ci95"][i].as_f64().unwrap());
    let median = c["real"]["median_ms"].as_f64().unwrap();
    assert!(lo <= median && median <= hi, "{c}");
    assert_eq!(
        c["pass"],
        c["checks"]
            .as_array()
            .unwrap()
            .iter()
            .all(|check| check[1] == true)
    );
    let fraction = json["pass_fraction"].as_f64().unwrap();
    assert_eq!(fraction, if c["pass"] == true { 1.0 } else { 0.0 });
}

#[test]
fn shards_cover_the_grid_and_merge_into_it() {
    let dir = scratch("sim-tiers-shards");
    let out = dir.join("out");
    let mut shards = Vec::new();
    for shard in ["1/2", "2/2"] {
        let o = concord(&[
            "sim",
            "validate",
            "--tier",
            "1",
            "--quick",
            "--json",
            "--shard",
            shard,
            "--out",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
        shards.push(stdout_json(&o));
    }
    // The quick grid: vanilla and optimized at 2 GC threads, one cell per shard.
    for (k, s) in shards.iter().enumerate() {
        assert_eq!(s["shard"]["index"], k, "{s:#}");
        assert_eq!(s["cells"].as_array().unwrap().len(), 1);
        assert_eq!(s["grid_cells"], 2);
        let counters = s["cells"][0]["counters"]["compared"].as_array().unwrap();
        assert_eq!(counters.len(), 5, "{s:#}");
    }
    let o = concord(&[
        "sim",
        "validate",
        "--merge",
        out.to_str().unwrap(),
        "--json",
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let merged = stdout_json(&o);
    let presets: Vec<&str> = merged["cells"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["preset"].as_str().unwrap())
        .collect();
    assert_eq!(presets, ["vanilla", "optimized"], "{merged:#}");
    assert!(merged.get("shard").is_none(), "{merged:#}");
    for (k, s) in shards.iter().enumerate() {
        assert_eq!(merged["cells"][k], s["cells"][0]);
    }
    // Without the second shard the merge is refused, naming it.
    std::fs::remove_file(out.join("tier1-shard2of2.json")).unwrap();
    assert_exit_2(
        &["sim", "validate", "--merge", out.to_str().unwrap()],
        "shard 2/2 of tier 1 is missing",
    );
}

#[test]
fn bad_tier_flags_exit_2_naming_what_is_allowed() {
    assert_exit_2(
        &["sim", "validate", "--tier", "5"],
        "'5' is not a tier (allowed: 0, 1, 2, 3 or all)",
    );
    assert_exit_2(
        &["sim", "validate", "--tier", "3", "--recordings", "0"],
        "--recordings",
    );
    assert_exit_2(
        &["sim", "validate", "--tier", "0", "--shard", "3/2"],
        "is not a shard (allowed: K/N with 1 <= K <= N",
    );
    assert_exit_2(
        &["sim", "validate", "--tier", "0", "--shard", "1/2"],
        "--shard needs --out DIR",
    );
}

#[test]
fn tier_3_gives_every_figure_a_value_per_recording_and_seed_and_its_verdict() {
    let dir = scratch("sim-tiers-3");
    let out = dir.join("out");
    let o = concord(&[
        "sim",
        "validate",
        "--tier",
        "3",
        "--quick",
        "--json",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let json = stdout_json(&o);
    assert_eq!(json["tier"], 3);
    assert_eq!(json["recorded"], serde_json::json!([1]));
    let figures = json["figures"].as_array().unwrap();
    let ids: Vec<&str> = figures.iter().map(|f| f["id"].as_str().unwrap()).collect();
    assert_eq!(
        ids,
        [
            "000-fig3c-vanilla",
            "000-fig3c-suo18",
            "000-fig4b-vanilla",
            "000-fig4b-suo18",
            "000-fig15",
            "000-fig16",
            "004-fig7-naps",
            "004-fig7-first-touch"
        ]
    );
    let mut passed = 0;
    for f in figures {
        let results = f["results"].as_array().unwrap();
        assert_eq!(results.len(), 1, "{f:#}");
        let value = results[0]["value"].as_f64().unwrap();
        assert!(value.is_finite() && value > 0.0, "{f:#}");
        assert_eq!(results[0]["recording"], 1);
        assert_eq!(f["range"], serde_json::json!([value, value]), "{f:#}");
        assert!(
            f["target"].is_object() && f["target_text"].is_string(),
            "{f:#}"
        );
        passed += usize::from(f["pass"] == true);
    }
    assert_eq!(json["passed"], passed);
    assert_eq!(json["inputs"][0][0], "004 Fig. 3", "{json:#}");
    let cpus: Vec<u64> = json["speed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["cpus"].as_u64().unwrap())
        .collect();
    assert_eq!(cpus, [20, 40, 48], "{json:#}");
    assert!(out.join("tier3.json").is_file());
}
