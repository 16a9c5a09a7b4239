//! The handle check holds for the life of the process, and a scope releases its handles
//! however it ends.
//!
//! Its own test binary: the tests count on no other test taking stamps or printing panics
//! meanwhile (the panic hook is silenced for the expected panics).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Once;

use concord::typed::Root;
use concord::{CollectionKind, GcError, Heap, Mutator, ObjectType};

const PAIR: ObjectType = ObjectType::fixed(2, 8);

#[derive(concord::Trace)]
struct Big {
    a: u64,
    b: u64,
    c: u64,
    d: u64,
}

#[derive(concord::Trace)]
struct Small {
    next: Option<Root<Small>>,
    value: u64,
}

fn heap() -> Heap {
    Heap::builder()
        .heap_size(16 << 20)
        .gc_threads(1)
        .configure(|c| c.verify = true)
        .build()
        .unwrap()
}

/// Expected panics print nothing (each test here expects thousands).
fn quiet_panics() {
    static QUIET: Once = Once::new();
    QUIET.call_once(|| {
        let default = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            let message = info
                .payload()
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| info.payload().downcast_ref::<String>().cloned())
                .unwrap_or_default();
            if !message.contains("handle") && !message.contains("request failed") {
                default(info);
            }
        }))
    });
}

/// The panic message of `f`, which must panic.
fn panic_of(what: &str, f: impl FnOnce()) -> String {
    let payload = catch_unwind(AssertUnwindSafe(f)).expect_err(what);
    payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_default()
}

/// A typed root of one mutator used with mutators attached after 2^16 others: every one of
/// them refuses it. (Stamps used to come from 2^16 blocks, one per attach, so the 65,536th
/// attach got the first mutator's stamp back and read another object's payload through it.)
#[test]
fn a_foreign_root_is_refused_after_any_number_of_attaches() {
    quiet_panics();
    let ha = heap();
    let hb = heap();
    let mut m1 = ha.attach();
    let big = m1
        .alloc_typed(Big {
            a: 0x1111,
            b: 0x2222,
            c: 0x3333,
            d: 0x4444,
        })
        .unwrap();
    for i in 0..(1u32 << 16) + 16 {
        let mut m2 = hb.attach();
        // Handles at the root's index and past it, so only the stamp can tell.
        for v in 0..4 {
            m2.alloc_typed(Small {
                next: None,
                value: v,
            })
            .unwrap();
        }
        // Every attach near the old wrap, a sample elsewhere (each check is a caught panic).
        if i % 997 == 0 || i >= (1 << 16) - 16 {
            let message = panic_of("a foreign root must panic", || {
                let _ = m2.get(big).a();
            });
            assert!(
                message.contains("did not create it"),
                "attach {i}: {message}"
            );
        }
    }
    // The owner still reads its object, and collections still verify.
    assert_eq!(m1.get(big).d(), 0x4444);
    m1.collect(CollectionKind::Full);
    assert_eq!(m1.get(big).b(), 0x2222);
}

/// A stale root of a mutator's own is refused after 2^16 attaches elsewhere and 2^16 ended
/// scopes, the mutator's stamps having moved on many times. (The old 32-bit stamps let it
/// through after 65,534 attaches elsewhere and 65,535 ended scopes, the sequence below when
/// this test runs alone: the mutator's next block of stamps was its first again.)
#[test]
fn a_stale_root_is_refused_after_any_number_of_scopes() {
    quiet_panics();
    let ha = heap();
    let hb = heap();
    let mut m = ha.attach();
    let stale = m.scope(|m| {
        m.alloc_typed(Big {
            a: 1,
            b: 2,
            c: 3,
            d: 4,
        })
        .unwrap()
    });
    for _ in 0..(1u32 << 16) - 2 {
        drop(hb.attach());
    }
    for i in 1..(1u32 << 16) + 64 {
        if i % 4999 == 0 || i >= (1 << 16) - 64 {
            m.scope(|m| {
                for v in 0..4 {
                    m.alloc_typed(Small {
                        next: None,
                        value: v,
                    })
                    .unwrap();
                }
                let message = panic_of("a stale root must panic", || {
                    let _ = m.get(stale).a();
                });
                assert!(message.contains("stale handle"), "scope {i}: {message}");
            });
        } else {
            m.scope(|_| ());
        }
    }
}

/// The untyped handle is held to the same: a handle of a detached mutator (whose thread made
/// many mutators since) is foreign to every later one.
#[test]
fn an_untyped_handle_of_a_detached_mutator_is_foreign_to_every_later_one() {
    quiet_panics();
    let heap = heap();
    let other = self::heap();
    let h = {
        let mut first = other.attach();
        first.alloc(PAIR).unwrap()
    };
    for i in 0..(1u32 << 16) + 16 {
        let mut m = heap.attach();
        m.alloc(PAIR).unwrap();
        if i % 1999 == 0 || i >= (1 << 16) - 16 {
            let message = panic_of("a foreign handle must panic", || {
                m.read_u64(h, 0);
            });
            assert!(
                message.contains("did not create it"),
                "attach {i}: {message}"
            );
        }
    }
}

/// Used so often in a request loop that catches panics: each scope kind, ended by a panic,
/// leaves the handle stack where it was and its objects unreachable.
#[test]
fn a_scope_ended_by_a_panic_releases_its_handles() {
    quiet_panics();
    let heap = heap();
    let mut m = heap.attach();
    let keep = m
        .alloc_typed(Small {
            next: None,
            value: 7,
        })
        .unwrap();
    // Each case panics after allocating 1000 objects (2000 in nested scopes) in the scope it
    // tests, and says how many handles it keeps outside that scope.
    type Case = fn(&mut Mutator<'_>) -> usize;
    let cases: [(&str, Case); 6] = [
        ("scope", |m| {
            m.scope(|m| {
                alloc_many(m);
                panic!("request failed")
            })
        }),
        ("scope_escape", |m| {
            let _ = m.scope_escape(|m| {
                alloc_many(m);
                panic!("request failed")
            });
            0
        }),
        ("scope_escape_typed", |m| {
            let _ = m.scope_escape_typed(|m| -> Result<Root<Small>, GcError> {
                alloc_many(m);
                panic!("request failed")
            });
            0
        }),
        ("local_scope", |m| {
            m.local_scope(|s| {
                for value in 0..1000 {
                    s.alloc(Small { next: None, value }).unwrap();
                }
                panic!("request failed")
            })
        }),
        ("scope_into", |m| {
            // The destination is outside the scope that panics, and stays.
            let dst = m
                .alloc_typed(Small {
                    next: None,
                    value: 0,
                })
                .unwrap();
            let _ = m.scope_into(dst, |m| -> Result<Root<Small>, GcError> {
                alloc_many(m);
                panic!("request failed")
            });
            1
        }),
        ("nested scopes", |m| {
            m.scope(|m| {
                alloc_many(m);
                m.scope(|m| {
                    alloc_many(m);
                    panic!("request failed")
                })
            })
        }),
    ];
    for (name, case) in cases {
        for round in 0..3 {
            let start = m.handle_count();
            // A case that returned would keep that many handles; a panicking one keeps the
            // ones made before its scope began.
            let kept = if name == "scope_into" { 1 } else { 0 };
            let message = panic_of(name, || {
                case(&mut m);
            });
            assert_eq!(message, "request failed", "{name}");
            assert_eq!(
                m.handle_count(),
                start + kept,
                "{name}, round {round}: the scope's handles are still held"
            );
        }
    }
    m.collect(CollectionKind::Full);
    // Only `keep` (and nothing the panicking scopes made) survives the full collection.
    assert!(
        heap.used() < 4096,
        "{} bytes live after a full collection",
        heap.used()
    );
    assert_eq!(m.get(keep).value(), 7);
}

/// 1000 small objects in the current scope.
fn alloc_many(m: &mut Mutator<'_>) {
    for value in 0..1000 {
        m.alloc_typed(Small { next: None, value }).unwrap();
    }
}
