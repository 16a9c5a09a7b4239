//! A mutator thread blocked outside `Mutator::blocking` holds every collection up; after
//! `safepoint-timeout` the VM thread names it on stderr, once per stuck safepoint, and says
//! what to do.
//!
//! The test runs itself again as a child process whose stderr it reads as it comes: the
//! child's stuck thread waits on its stdin (blocking I/O outside `blocking`), and the parent
//! lets it go only after it has seen the report, so no timing decides the outcome.

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use concord::config::MIB;
use concord::{CollectionKind, GcConfig, Heap, Preset};

const CHILD_VAR: &str = "CONCORD_TEST_SAFEPOINT_TIMEOUT_CHILD";
const TEST: &str = "a_thread_blocked_outside_blocking_is_named_after_the_timeout";
/// The configured delay: short, since the report is the point.
const DELAY_MS: u64 = 100;

#[test]
fn a_thread_blocked_outside_blocking_is_named_after_the_timeout() {
    if std::env::var_os(CHILD_VAR).is_some() {
        return child();
    }
    let mut child = Command::new(std::env::current_exe().unwrap())
        .args([TEST, "--exact", "--nocapture", "--test-threads=1"])
        .env(CHILD_VAR, "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the test binary runs");
    let mut stdout = child.stdout.take().unwrap();
    let stdout = std::thread::spawn(move || {
        let mut s = String::new();
        let _ = stdout.read_to_string(&mut s);
        s
    });
    let (lines_tx, lines) = mpsc::channel();
    let stderr = BufReader::new(child.stderr.take().unwrap());
    let reader = std::thread::spawn(move || {
        for line in stderr.lines().map_while(Result::ok) {
            let _ = lines_tx.send(line);
        }
    });
    // Wait (a minute at most) for the report's last line.
    let mut seen = Vec::new();
    while !seen
        .last()
        .is_some_and(|l: &String| l.contains("goes on waiting"))
    {
        match lines.recv_timeout(Duration::from_secs(60)) {
            Ok(line) => seen.push(line),
            Err(_) => {
                let _ = child.kill();
                panic!(
                    "no safepoint timeout report; stderr so far:\n{}",
                    seen.join("\n")
                );
            }
        }
    }
    // Twenty times the delay more stuck: still one report for this safepoint.
    std::thread::sleep(Duration::from_millis(20 * DELAY_MS));
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"go\n")
        .expect("the child reads its stdin");
    let status = child.wait().unwrap();
    reader.join().unwrap();
    seen.extend(lines.try_iter());
    let stderr = seen.join("\n");
    let stdout = stdout.join().unwrap();
    assert!(
        status.success(),
        "child failed ({status}):\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("test result: ok. 1 passed"),
        "the child did not run the test:\n{stdout}"
    );
    assert_eq!(
        stderr.matches("concord: safepoint timeout:").count(),
        1,
        "{stderr}"
    );
    for part in [
        "a collection has waited ",
        "for 1 of 2 attached mutators to reach a safepoint (safepoint-timeout = 100 ms); \
         still running:",
        "\n  thread 'stuck-reader' (mutator ",
        "inside Mutator::blocking",
    ] {
        assert!(stderr.contains(part), "{part:?} not in:\n{stderr}");
    }
    // Only the stuck thread is named.
    assert!(!stderr.contains("thread 'collector'"), "{stderr}");
}

/// The child: thread `stuck-reader` attaches and then reads stdin outside `blocking`, while
/// thread `collector` asks for a collection, which waits for it.
fn child() {
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.heap_size = 4 * MIB;
    c.gc_threads = 1;
    c.verify = true;
    c.safepoint_timeout = Some(Duration::from_millis(DELAY_MS));
    let heap = Heap::new(c).unwrap();
    let (attached_tx, attached) = mpsc::channel();
    std::thread::scope(|s| {
        let heap = &heap;
        std::thread::Builder::new()
            .name("stuck-reader".into())
            .spawn_scoped(s, move || {
                let mut m = heap.attach();
                let o = m.alloc(concord::ObjectType::fixed(0, 8)).unwrap();
                m.write_u64(o, 0, 7);
                attached_tx.send(()).unwrap();
                // The mistake: blocking I/O outside `m.blocking(..)`.
                let mut line = String::new();
                std::io::stdin().read_line(&mut line).unwrap();
                m.safepoint_poll();
                assert_eq!(m.read_u64(o, 0), 7);
            })
            .unwrap();
        std::thread::Builder::new()
            .name("collector".into())
            .spawn_scoped(s, move || {
                attached.recv().unwrap();
                let mut m = heap.attach();
                m.collect(CollectionKind::Full);
            })
            .unwrap();
    });
    assert_eq!(heap.collection_count(), 1);
}

/// A mutator leaked on a thread that then ends (`mem::forget`) never reaches a safepoint; the
/// thread's end detaches it, so later collections go on instead of waiting for ever, and what
/// the other mutators hold is intact.
#[test]
fn a_mutator_leaked_by_an_ended_thread_holds_no_collection_up() {
    let heap = std::sync::Arc::new(
        Heap::builder()
            .heap_size(16 * MIB)
            .gc_threads(2)
            .configure(|c| c.verify = true)
            .build()
            .unwrap(),
    );
    let watched = heap.clone();
    let (done_tx, done) = mpsc::channel();
    let checker = std::thread::spawn(move || {
        let heap = watched;
        let mut m = heap.attach();
        let kept = m.alloc(concord::ObjectType::fixed(1, 8)).unwrap();
        m.write_u64(kept, 0, 42);
        for round in 0..3 {
            let leaker = heap.clone();
            std::thread::spawn(move || {
                let mut leaked = leaker.attach();
                let h = leaked.alloc(concord::ObjectType::fixed(1, 8)).unwrap();
                leaked.write_u64(h, 0, round);
                // A global of the leaked mutator: no longer a root once its thread ends.
                let _global = leaked.global_handle(h);
                std::mem::forget(leaked);
            })
            .join()
            .unwrap();
            m.collect(CollectionKind::Young);
            m.collect(CollectionKind::Full);
        }
        let value = m.read_u64(kept, 0);
        drop(m);
        heap.collect(CollectionKind::Full);
        let _ = done_tx.send(value);
    });
    // Before the fix the first collection waited for the leaked mutator for ever.
    let value = done
        .recv_timeout(Duration::from_secs(60))
        .expect("the collections after a leaked mutator's thread ended did not finish");
    assert_eq!(value, 42);
    checker.join().unwrap();
}
