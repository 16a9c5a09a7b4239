//! Misuse of the API fails loudly and clearly: panics with messages that say what was wrong,
//! configuration errors that name the key, layout errors for unrepresentable shapes.

use std::time::Duration;

mod common;

use common::with_watchdog;
use concord::config::{format_size, ConfigError, MIB};
use concord::object::{LayoutError, MAX_ARRAY_LEN, MAX_FIXED_PAYLOAD, MAX_FIXED_REFS};
use concord::{
    CollectionKind, GcConfig, GcError, GcErrorKind, Heap, HeapError, ObjectKind, ObjectType, Preset,
};

const PAIR: ObjectType = ObjectType::fixed(2, 8);

fn config() -> GcConfig {
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.heap_size = 4 * MIB;
    c.gc_threads = 1;
    c.verify = true;
    c
}

fn heap() -> Heap {
    Heap::new(config()).expect("the base configuration is valid")
}

// ---- panics on misuse ----

#[test]
#[should_panic(expected = "stale handle: used after the scope that created it ended")]
fn stale_handle_after_scope_panics() {
    let heap = heap();
    let mut m = heap.attach();
    let h = m.scope(|m| m.alloc(PAIR).unwrap());
    m.read_u64(h, 0);
}

#[test]
#[should_panic(expected = "stale handle")]
fn stale_handle_after_scope_panics_after_a_collection_too() {
    let heap = heap();
    let mut m = heap.attach();
    let h = m.scope(|m| {
        let h = m.alloc(PAIR).unwrap();
        m.write_u64(h, 0, 1);
        h
    });
    m.collect(CollectionKind::Young);
    m.set_ref(h, 0, None);
}

#[test]
#[should_panic(expected = "null handle dereferenced")]
fn null_handle_payload_panics() {
    let heap = heap();
    let m = heap.attach();
    let n = m.null_handle();
    let _ = m.payload(n);
}

#[test]
#[should_panic(expected = "null handle dereferenced")]
fn null_handle_get_ref_panics() {
    let heap = heap();
    let m = heap.attach();
    let n = m.null_handle();
    m.get_ref(n, 0);
}

#[test]
#[should_panic(expected = "null handle dereferenced")]
fn set_ref_into_null_panics() {
    let heap = heap();
    let mut m = heap.attach();
    let target = m.alloc(PAIR).unwrap();
    let n = m.null_handle();
    m.set_ref(n, 0, Some(target));
}

#[test]
#[should_panic(expected = "null handle dereferenced")]
fn null_slot_loaded_into_a_handle_is_null() {
    let heap = heap();
    let mut m = heap.attach();
    let o = m.alloc(PAIR).unwrap();
    let h = m.dup(o);
    assert!(!m.load_ref_into(h, o, 1));
    assert!(m.is_null(h));
    m.kind(h);
}

#[test]
#[should_panic(expected = "reference slot 2 out of bounds (2 slots)")]
fn get_ref_slot_out_of_bounds_panics() {
    let heap = heap();
    let mut m = heap.attach();
    let o = m.alloc(PAIR).unwrap();
    m.get_ref(o, 2);
}

#[test]
#[should_panic(expected = "reference slot 5 out of bounds (2 slots)")]
fn set_ref_slot_out_of_bounds_panics() {
    let heap = heap();
    let mut m = heap.attach();
    let o = m.alloc(PAIR).unwrap();
    m.set_ref(o, 5, None);
}

#[test]
#[should_panic(expected = "reference slot 3 out of bounds (3 slots)")]
fn ref_array_index_out_of_bounds_panics() {
    let heap = heap();
    let mut m = heap.attach();
    let a = m.alloc_ref_array(3).unwrap();
    let o = m.alloc(PAIR).unwrap();
    m.set_ref(a, 3, Some(o));
}

#[test]
#[should_panic(expected = "reference slot 0 out of bounds (0 slots)")]
fn byte_array_has_no_reference_slots() {
    let heap = heap();
    let mut m = heap.attach();
    let b = m.alloc_byte_array(64).unwrap();
    m.load_ref_into(b, b, 0);
}

#[test]
#[should_panic(expected = "payload access 4..12 out of bounds (8 bytes)")]
fn payload_read_out_of_bounds_panics() {
    let heap = heap();
    let mut m = heap.attach();
    let o = m.alloc(PAIR).unwrap();
    m.read_u64(o, 4);
}

#[test]
#[should_panic(expected = "payload access 8..12 out of bounds (10 bytes)")]
fn byte_array_write_out_of_bounds_panics() {
    let heap = heap();
    let mut m = heap.attach();
    let b = m.alloc_byte_array(10).unwrap();
    m.write_u32(b, 6, 1); // 6..10 is fine
    m.write_u32(b, 8, 1);
}

#[test]
#[should_panic(expected = "handle used with a mutator that did not create it")]
fn handle_of_another_mutator_panics() {
    let heap = heap();
    // A handle of a mutator on another thread (one thread has one mutator per heap).
    let h = std::thread::scope(|s| {
        s.spawn(|| heap.attach().alloc(PAIR).unwrap())
            .join()
            .unwrap()
    });
    let mut b = heap.attach();
    // `b` has a handle at the same index, so only the owner check can catch this.
    let _ = b.alloc(PAIR).unwrap();
    b.read_u64(h, 0);
}

/// Regression test: a handle whose scope had ended was caught only while the handle stack was
/// shorter than its index; once the stack grew back past it, the stale handle silently
/// referred to whatever the new handle held.
#[test]
#[should_panic(expected = "stale handle: used after the scope that created it ended")]
fn stale_handle_is_detected_after_the_stack_grows_back() {
    let heap = heap();
    let mut m = heap.attach();
    let stale = m.scope(|m| {
        let h = m.alloc(PAIR).unwrap();
        m.write_u64(h, 0, 1);
        h
    });
    let other = m.alloc(PAIR).unwrap();
    m.write_u64(other, 0, 2);
    // Used to read `other` (2) instead of panicking.
    m.read_u64(stale, 0);
}

/// The same through every way a handle is used, after the stack grew back past the stale
/// handle's index in a later scope, several scopes deep.
#[test]
fn stale_handles_never_reach_another_object() {
    let heap = heap();
    let mut m = heap.attach();
    let outer = m.alloc(PAIR).unwrap();
    m.write_u64(outer, 0, 7);
    let stale = m.scope(|m| m.scope(|m| m.alloc(PAIR).unwrap()));
    m.scope(|m| {
        // Refill the stack past the stale handle's index with other objects.
        for _ in 0..4 {
            let o = m.alloc(PAIR).unwrap();
            m.write_u64(o, 0, 999);
        }
        let stale_panic = |what: &str, use_it: &dyn Fn()| {
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(use_it));
            let message = r.expect_err(what);
            let message = message.downcast_ref::<&str>().copied().unwrap_or_default();
            assert!(message.starts_with("stale handle"), "{what}: {message}");
        };
        stale_panic("read_u64", &|| {
            m.read_u64(stale, 0);
        });
        stale_panic("view", &|| {
            m.view(stale);
        });
        stale_panic("get_ref", &|| {
            m.get_ref(stale, 0);
        });
        stale_panic("dup", &|| {
            m.dup(stale);
        });
        stale_panic("set_handle (destination)", &|| m.set_handle(stale, None));
        stale_panic("same_object", &|| {
            m.same_object(stale, outer);
        });
    });
    // The handles that are still valid still work.
    assert_eq!(m.read_u64(outer, 0), 7);
    m.verify_heap().unwrap();
}

/// Stamps come in blocks of 65,536 scopes: handles stay valid, and stale ones are still told
/// from foreign ones, across blocks.
#[test]
#[should_panic(expected = "stale handle: used after the scope that created it ended")]
fn stale_handles_are_caught_across_stamp_blocks() {
    let heap = heap();
    let mut m = heap.attach();
    let kept = m.alloc(PAIR).unwrap();
    m.write_u64(kept, 0, 7);
    let stale = m.scope(|m| m.alloc(PAIR).unwrap());
    for _ in 0..150_000 {
        m.scope(|_| ());
    }
    let o = m.alloc(PAIR).unwrap();
    m.write_u64(o, 0, 999);
    assert_eq!(m.read_u64(kept, 0), 7);
    m.read_u64(stale, 0);
}

/// A handle stays valid in the scope that made it however many inner scopes come and go.
#[test]
fn handles_outlive_inner_scopes() {
    let heap = heap();
    let mut m = heap.attach();
    let kept = m.scope_escape(|m| {
        let a = m.alloc(PAIR).unwrap();
        m.write_u64(a, 0, 1);
        for i in 0..100 {
            m.scope(|m| {
                let t = m.alloc(PAIR).unwrap();
                m.write_u64(t, 0, i);
            });
        }
        let b = m.alloc(PAIR).unwrap();
        m.write_u64(b, 0, 2);
        m.set_ref(a, 0, Some(b));
        assert_eq!(m.read_u64(a, 0), 1);
        Ok(Some(a))
    });
    let kept = kept.unwrap().unwrap();
    m.collect(CollectionKind::Full);
    let b = m.get_ref(kept, 0).unwrap();
    assert_eq!((m.read_u64(kept, 0), m.read_u64(b, 0)), (1, 2));
}

// ---- threads that would wait for themselves ----

#[test]
#[should_panic(
    expected = "Heap::collect called on a thread with a running mutator of this heap, \
                           thread 'attached-collector' (mutator "
)]
fn heap_collect_on_an_attached_thread_panics() {
    // Used to hang: the collection waited for the calling thread's own mutator.
    on_named_thread("attached-collector", || {
        let heap = heap();
        let _m = heap.attach();
        heap.collect(CollectionKind::Full);
    });
}

/// `Heap::collect` is fine inside `blocking`, where the thread's mutator is stopped.
#[test]
fn heap_collect_inside_blocking_collects() {
    with_watchdog(Duration::from_secs(60), || {
        let heap = heap();
        let mut m = heap.attach();
        let o = m.alloc(PAIR).unwrap();
        m.write_u64(o, 0, 7);
        m.blocking(|| heap.collect(CollectionKind::Full));
        assert_eq!(heap.collection_count(), 1);
        assert_eq!(m.read_u64(o, 0), 7);
    });
}

#[test]
#[should_panic(
    expected = "Heap::attach: this thread already has a mutator of this heap, \
                           thread 'twice-attached' (mutator "
)]
fn second_attach_on_one_thread_panics() {
    // Used to hang at the first collection: it waited for the mutator not in use.
    on_named_thread("twice-attached", || {
        let heap = heap();
        let _first = heap.attach();
        let _second = heap.attach();
    });
}

/// One mutator per heap and thread: again after the first is dropped, and one of each heap.
#[test]
fn a_thread_attaches_again_after_detaching_and_to_other_heaps() {
    with_watchdog(Duration::from_secs(60), || {
        let (heap_a, heap_b) = (heap(), heap());
        drop(heap_a.attach());
        let mut a = heap_a.attach();
        let mut b = heap_b.attach();
        a.collect(CollectionKind::Young);
        b.collect(CollectionKind::Young);
    });
}

/// Run `f` on a thread named `name`, within a minute, re-raising its panic.
fn on_named_thread(name: &str, f: impl FnOnce() + Send + 'static) {
    let name = name.to_string();
    with_watchdog(Duration::from_secs(60), move || {
        let t = std::thread::Builder::new().name(name).spawn(f).unwrap();
        if let Err(p) = t.join() {
            std::panic::resume_unwind(p);
        }
    });
}

/// Regression test: mutator ids used to be counted per heap, so the first mutators of two heaps
/// had the same id and accepted each other's handles (reading the wrong object).
#[test]
#[should_panic(expected = "handle used with a mutator that did not create it")]
fn handle_of_a_mutator_of_another_heap_panics() {
    let heap_a = heap();
    let heap_b = heap();
    let mut a = heap_a.attach();
    let mut b = heap_b.attach();
    let h = a.alloc(PAIR).unwrap();
    a.write_u64(h, 0, 1);
    let own = b.alloc(PAIR).unwrap();
    b.write_u64(own, 0, 2);
    // Used to read `own` (2) instead of panicking.
    b.read_u64(h, 0);
}

// ---- configuration errors ----

fn heap_error(change: impl FnOnce(&mut GcConfig)) -> HeapError {
    let mut c = config();
    change(&mut c);
    match Heap::new(c) {
        Ok(_) => panic!("the configuration was accepted"),
        Err(e) => e,
    }
}

/// The config error inside a heap error, with its message.
fn config_error(change: impl FnOnce(&mut GcConfig)) -> (ConfigError, String) {
    match heap_error(change) {
        HeapError::Config(e) => {
            let msg = e.to_string();
            (e, msg)
        }
        other => panic!("expected a configuration error, got {other}"),
    }
}

#[test]
fn heap_below_the_minimum_names_the_key_value_and_range() {
    let (e, msg) = config_error(|c| c.heap_size = MIB);
    assert_eq!(e.key().map(|k| k.key), Some("heap"), "{msg}");
    assert!(msg.starts_with("heap: '1M'"), "{msg}");
    assert!(msg.contains("allowed: 4M..=1024G"), "{msg}");
    assert!(matches!(e, ConfigError::InvalidValue { .. }));
}

#[test]
fn zero_gc_threads_is_rejected() {
    let (e, msg) = config_error(|c| c.gc_threads = 0);
    assert_eq!(e.key().map(|k| k.key), Some("gc-threads"));
    assert_eq!(msg, "gc-threads: '0' is out of range (allowed: 1..=256)");
}

#[test]
fn young_generation_larger_than_the_heap_is_rejected() {
    let (e, msg) = config_error(|c| c.young_size = Some(4 * MIB));
    assert_eq!(e.key().map(|k| k.key), Some("young"), "{msg}");
    assert!(msg.contains("must be smaller than the heap (4M)"), "{msg}");
}

#[test]
fn tlab_larger_than_half_of_eden_is_rejected() {
    let (e, msg) = config_error(|c| c.tlab_size = Some(4 * MIB));
    assert_eq!(e.key().map(|k| k.key), Some("tlab-size"), "{msg}");
    assert!(msg.contains("'4M' is out of range"), "{msg}");
}

#[test]
fn tiny_large_object_threshold_is_rejected() {
    let (e, msg) = config_error(|c| c.large_object_threshold = 100);
    assert_eq!(
        e.key().map(|k| k.key),
        Some("large-object-threshold"),
        "{msg}"
    );
    assert!(msg.contains("too small (allowed: at least 1K)"), "{msg}");
}

#[test]
fn tenuring_thresholds_are_checked() {
    let (e, msg) = config_error(|c| c.max_tenuring_threshold = 16);
    assert_eq!(
        e.key().map(|k| k.key),
        Some("max-tenuring-threshold"),
        "{msg}"
    );
    assert!(msg.contains("0..=15"), "{msg}");
    let (e, msg) = config_error(|c| {
        c.max_tenuring_threshold = 2;
        c.initial_tenuring_threshold = 3;
    });
    assert_eq!(
        e.key().map(|k| k.key),
        Some("initial-tenuring-threshold"),
        "{msg}"
    );
    assert!(
        msg.contains("3 must not exceed max-tenuring-threshold (2)"),
        "{msg}"
    );
}

#[test]
fn every_preset_is_available() {
    for preset in Preset::ALL {
        let mut c = GcConfig::for_preset(preset);
        c.heap_size = config().heap_size;
        c.gc_threads = config().gc_threads;
        c.validate().expect("every preset validates");
    }
}

#[test]
fn valid_edge_configurations_are_accepted() {
    let mut c = config();
    c.heap_size = concord::config::MIN_HEAP;
    c.max_tenuring_threshold = 0;
    c.initial_tenuring_threshold = 0;
    c.large_object_threshold = 1024;
    let heap = Heap::new(c).expect("minimum heap");
    let mut m = heap.attach();
    let o = m.alloc(PAIR).unwrap();
    m.collect(CollectionKind::Young);
    assert_eq!(m.kind(o), ObjectKind::Fixed);
    m.verify_heap().unwrap();
}

// ---- layout errors ----

#[test]
fn too_many_refs_is_a_layout_error() {
    let err = ObjectType::new(MAX_FIXED_REFS + 1, 0).unwrap_err();
    assert_eq!(
        err,
        LayoutError::TooManyRefs {
            requested: MAX_FIXED_REFS + 1,
            max: MAX_FIXED_REFS
        }
    );
    let msg = err.to_string();
    assert!(
        msg.contains("at most 65535 reference slots, 65536 requested"),
        "{msg}"
    );
    assert!(msg.contains("use a reference array"), "{msg}");
    // The limit itself is fine.
    assert_eq!(
        ObjectType::new(MAX_FIXED_REFS, 0).unwrap().refs(),
        MAX_FIXED_REFS
    );
}

#[test]
fn too_much_payload_is_a_layout_error() {
    let err = ObjectType::new(0, MAX_FIXED_PAYLOAD + 1).unwrap_err();
    assert!(
        matches!(err, LayoutError::PayloadTooLarge { .. }),
        "{err:?}"
    );
    assert!(err.to_string().contains("use a byte array"), "{err}");
}

#[test]
fn too_long_arrays_are_layout_errors_from_alloc() {
    let heap = heap();
    let mut m = heap.attach();
    for r in [
        m.alloc_ref_array(MAX_ARRAY_LEN + 1),
        m.alloc_byte_array(usize::MAX),
    ] {
        match r.map_err(GcError::into_kind) {
            Err(GcErrorKind::Layout(LayoutError::ArrayTooLong { requested, max })) => {
                assert!(requested > max);
                assert_eq!(max, MAX_ARRAY_LEN);
            }
            Err(other) => panic!("expected ArrayTooLong, got {other}"),
            Ok(_) => panic!("an impossible array was allocated"),
        }
    }
    // Nothing broke: the heap still allocates and verifies.
    let o = m.alloc(PAIR).unwrap();
    m.write_u64(o, 0, 5);
    m.collect(CollectionKind::Full);
    assert_eq!(m.read_u64(o, 0), 5);
    m.verify_heap().unwrap();
}

#[test]
fn representable_but_huge_shapes_are_out_of_memory() {
    let heap = heap();
    let mut m = heap.attach();
    let huge_fixed = ObjectType::new(10, MAX_FIXED_PAYLOAD).unwrap();
    for r in [
        m.alloc(huge_fixed),
        m.alloc_ref_array(MAX_ARRAY_LEN),
        m.alloc_byte_array(MAX_ARRAY_LEN),
    ] {
        match r.map_err(GcError::into_kind) {
            Err(GcErrorKind::LargerThanHeap { requested, .. }) => {
                assert!(requested > heap.capacity(), "{requested}");
            }
            Err(other) => panic!("expected LargerThanHeap, got {other}"),
            Ok(_) => panic!("a larger-than-heap object was allocated"),
        }
    }
    let o = m.alloc(PAIR).unwrap();
    assert_eq!(m.ref_count(o), 2);
    m.verify_heap().unwrap();
}

// ---- out of memory ----

/// Every allocation returns a `Result<Handle, GcError>`: two words, so that it comes back in
/// registers; and an absent handle costs nothing.
#[test]
fn allocation_results_stay_small() {
    assert_eq!(std::mem::size_of::<Result<concord::Handle, GcError>>(), 16);
    assert_eq!(std::mem::size_of::<GcError>(), 8);
    assert_eq!(std::mem::size_of::<concord::Handle>(), 8);
    assert_eq!(std::mem::size_of::<Option<concord::Handle>>(), 8);
}

/// A request no collection could ever make room for is refused as such at once, naming the
/// sizes, instead of collecting for nothing and blaming the collections.
#[test]
fn a_request_larger_than_the_heap_says_so_without_collecting() {
    let heap = heap();
    let capacity = heap.capacity();
    let mut m = heap.attach();
    let err = m.alloc_byte_array(2 * capacity).unwrap_err();
    let GcErrorKind::LargerThanHeap {
        requested,
        old_capacity,
        eden_capacity,
    } = *err.kind()
    else {
        panic!("expected LargerThanHeap, got {err:?}");
    };
    assert!(requested > 2 * capacity);
    assert!(old_capacity < capacity && eden_capacity < capacity);
    let message = err.to_string();
    for part in [
        format!(
            "the request of {} ({requested} bytes)",
            format_size(requested)
        ),
        "is larger than this heap can ever hold".to_string(),
        format!("old generation ({})", format_size(old_capacity)),
        format!("eden ({})", format_size(eden_capacity)),
    ] {
        assert!(message.contains(&part), "{part:?} not in: {message}");
    }
    assert_eq!(heap.collection_count(), 0, "collected for nothing");
    // The largest object the heap can hold is still served.
    let largest = old_capacity.max(eden_capacity) - 64;
    m.scope(|m| assert!(m.alloc_byte_array(largest).is_ok()));
    m.verify_heap().unwrap();
}

/// Objects allocated in a loop without a `scope` stay alive through their handles until the
/// collector gives up; the error says how many handles the mutator holds and what that means,
/// in its message and in what `unwrap` prints. An impossible request made then is still
/// refused as larger than the heap, not as the overhead limit.
#[test]
fn out_of_memory_names_the_live_handles_of_a_loop_without_scope() {
    with_watchdog(Duration::from_secs(300), || {
        let mut c = config();
        c.verify = false;
        let heap = Heap::new(c).unwrap();
        let mut m = heap.attach();
        let err = loop {
            match m.alloc(PAIR) {
                Ok(_) => continue,
                Err(e) => break e,
            }
        };
        let live = m.handle_count();
        assert!(live > 10_000, "{live} handles");
        assert!(
            matches!(err.kind(), GcErrorKind::GcOverheadLimit { live_handles, .. } if *live_handles as usize == live),
            "{err:?}"
        );
        let note = format!("{live} handles live on this mutator: a loop without `scope`?");
        assert!(err.to_string().contains(&note), "{err}");
        assert!(format!("{err:?}").contains(&note), "{err:?}");
        match m
            .alloc_byte_array(2 * heap.capacity())
            .map_err(GcError::into_kind)
        {
            Err(GcErrorKind::LargerThanHeap { .. }) => {}
            other => panic!("expected LargerThanHeap, got {other:?}"),
        }
    });
}

/// With few handles the error still counts them, without the advice.
#[test]
fn out_of_memory_counts_a_few_live_handles_without_advice() {
    let heap = heap();
    let mut m = heap.attach();
    // Half the heap each: the second cannot be allocated while the first is live.
    let half = heap.capacity() / 2;
    let first = m.alloc_byte_array(half / 2).unwrap();
    let err = loop {
        match m.alloc_byte_array(half / 2) {
            Ok(_) => continue,
            Err(e) => break e,
        }
    };
    let live = m.handle_count();
    assert!(live < 10, "{live}");
    let message = err.to_string();
    assert!(
        message.ends_with(&format!("; {live} handles live on this mutator")),
        "{message}"
    );
    assert_eq!(m.array_len(first), half / 2);
}
