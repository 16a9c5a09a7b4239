//! A program that must exit at once (a second Ctrl-C) removes every temporary file of its
//! unfinished outputs first, and none is made afterwards. Alone in its test binary: closing
//! the set of temporary files is for the whole process.

use concord::os::fs::{remove_temporary_files, write_atomic, StagedFile};
use concord::{CollectionKind, GcConfig, Heap, Preset};

#[test]
fn removing_the_temporary_files_leaves_the_old_files_and_refuses_new_ones() {
    let dir = std::env::temp_dir().join(format!("concord-outputs-exit-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log = dir.join("gc.log");
    std::fs::write(&log, "old log\n").unwrap();
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.heap_size = 8 << 20;
    c.gc_log = Some(log.clone());
    let heap = Heap::new(c).unwrap();
    heap.collect(CollectionKind::Young);
    let mut staged = StagedFile::create(&dir.join("other")).unwrap();
    staged.append(b"x\n").unwrap();
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        3,
        "two temporary files"
    );

    assert_eq!(remove_temporary_files(), 2);
    let names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["gc.log"]);
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "old log\n");
    // From now on nothing is created or put in place.
    assert!(staged.commit().is_err());
    assert!(write_atomic(&dir.join("new"), b"x").is_err());
    let e = heap.finish().unwrap_err();
    assert!(e.to_string().starts_with("GC log"), "{e}");
    assert_eq!(std::fs::read_to_string(&log).unwrap(), "old log\n");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    std::fs::remove_dir_all(&dir).unwrap();
}
