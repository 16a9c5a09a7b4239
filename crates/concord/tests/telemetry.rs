//! Telemetry end to end: the per-collection records a heap writes (`gc_records`) match its
//! in-memory statistics, carry the task and CPU matrices, and a bad path is a clear error.

use concord::{CollectionKind, GcConfig, Heap, HeapError, ObjectType, Preset};

const NODE: ObjectType = ObjectType::fixed(2, 8);

fn config(preset: Preset) -> GcConfig {
    let mut c = GcConfig::for_preset(preset);
    c.heap_size = 16 << 20;
    c.gc_threads = 3;
    c
}

/// Build some garbage and some survivors, with one young and one full collection on request.
fn churn(heap: &Heap) {
    let mut m = heap.attach();
    let keep = m.alloc_ref_array(64).unwrap();
    for i in 0..200_000usize {
        m.scope(|m| {
            let n = m.alloc(NODE).unwrap();
            if i % 97 == 0 {
                m.set_ref(keep, i % 64, Some(n));
            }
        });
    }
    m.collect(CollectionKind::Young);
    m.collect(CollectionKind::Full);
}

#[test]
fn records_file_has_one_line_per_collection_with_matrices() {
    for preset in Preset::ALL {
        let dir =
            std::env::temp_dir().join(format!("concord-telemetry-{}-{preset}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("records.jsonl");
        let mut c = config(preset);
        c.gc_records = Some(path.clone());
        let heap = Heap::new(c).unwrap();
        churn(&heap);
        let stats = heap.stats();
        drop(heap);
        let text = std::fs::read_to_string(&path).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).expect("every line is a JSON object"))
            .collect();
        assert_eq!(lines.len(), stats.records.len(), "{preset}");
        assert!(stats.count(CollectionKind::Young) >= 2, "{preset}");
        for (line, rec) in lines.iter().zip(&stats.records) {
            assert_eq!(line["id"], rec.id, "{preset}");
            let workers = line["workers"].as_array().unwrap();
            assert_eq!(workers.len(), rec.gc_threads, "{preset}");
            // Every worker enters the stealing stage once per parallel phase.
            let steal = line["task_distribution"]["Steal"].as_array().unwrap();
            assert!(
                steal.iter().all(|n| n.as_u64() == Some(1)),
                "{preset}: {steal:?}"
            );
            // The matrix rows add up to the per-worker root task counts.
            let from_matrix: u64 = line["task_distribution"]
                .as_object()
                .unwrap()
                .iter()
                .filter(|(k, _)| k.as_str() != "Steal")
                .flat_map(|(_, v)| v.as_array().unwrap().iter())
                .map(|n| n.as_u64().unwrap())
                .sum();
            let from_workers: u64 = rec.workers.iter().map(|w| w.root_task_count()).sum();
            assert_eq!(from_matrix, from_workers, "{preset}");
            let occ = &line["cpu_occupancy"];
            assert_eq!(occ["samples"].as_array().unwrap().len(), rec.gc_threads);
            assert!(!occ["cpus"].as_array().unwrap().is_empty(), "{preset}");
            // The task manager's monitor (000 Fig. 5): only the presets with the monitor queue
            // and monitor parking use it (vanilla, and suo18, which keeps it); its counters
            // describe this collection alone.
            let monitor = &line["monitor"];
            if matches!(preset, Preset::Vanilla | Preset::Suo18) {
                let acquisitions = monitor["acquisitions"].as_u64().unwrap();
                // At least: the publish, one wake-up and one check-in per worker, and one
                // dequeue and one completion per root task.
                let roots = from_workers;
                assert!(
                    acquisitions >= 1 + 2 * rec.gc_threads as u64 + 2 * roots,
                    "{monitor}"
                );
                for key in ["contended", "barges", "heir_wakeups", "futile_wakeups"] {
                    assert!(monitor[key].is_u64(), "{key}: {monitor}");
                }
            } else {
                assert!(monitor.is_null(), "{preset}: {monitor}");
            }
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

#[test]
fn unwritable_records_path_is_a_clear_error() {
    let mut c = config(Preset::Optimized);
    c.gc_records = Some("/nonexistent-dir/records.jsonl".into());
    match Heap::new(c) {
        Err(e @ HeapError::GcRecords { .. }) => {
            assert!(
                e.to_string().contains("/nonexistent-dir/records.jsonl"),
                "{e}"
            );
        }
        Err(e) => panic!("wrong error: {e}"),
        Ok(_) => panic!("heap created with an unwritable records path"),
    }
}
