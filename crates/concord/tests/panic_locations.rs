//! A panic for misuse of the API (a stale, foreign or null handle, an index out of bounds, a
//! reference of another heap, a thread that would wait for itself) is reported at the caller's
//! line, not inside the library: every public accessor that can panic is `#[track_caller]`
//! down to the function that panics.
//!
//! One test, so that the panic hook it installs (process-wide) sees no other test's panics.

use std::cell::{Cell, RefCell};
use std::panic::{catch_unwind, AssertUnwindSafe};

use concord::config::MIB;
use concord::{CollectionKind, GcConfig, Heap, Mutator, ObjectType, Preset};

const PAIR: ObjectType = ObjectType::fixed(2, 8);

thread_local! {
    /// Whether a panic is expected now (inside [`panic_line`]).
    static EXPECTING: Cell<bool> = const { Cell::new(false) };
    /// What went wrong so far.
    static FAILURES: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
    /// Where the last expected panic on this thread was reported, and its message.
    static LAST_PANIC: RefCell<Option<(String, u32, String)>> = const { RefCell::new(None) };
}

fn new_heap() -> Heap {
    let mut c = GcConfig::for_preset(Preset::Optimized);
    c.heap_size = 4 * MIB;
    c.gc_threads = 1;
    Heap::new(c).expect("a 4 MiB heap")
}

/// Runs `f`, which must panic with a message starting with `message`, reported in this file
/// at `line`; else records what was wrong in [`FAILURES`].
fn expect_panic_at(message: &str, line: u32, what: &str, f: impl FnOnce()) {
    LAST_PANIC.with(|p| p.borrow_mut().take());
    EXPECTING.with(|e| e.set(true));
    let result = catch_unwind(AssertUnwindSafe(f));
    EXPECTING.with(|e| e.set(false));
    let failure = match (result, LAST_PANIC.with(|p| p.borrow_mut().take())) {
        (Ok(()), _) => format!("{what}: no panic (expected {message:?})"),
        (Err(_), None) => format!("{what}: the hook did not see the panic"),
        (Err(_), Some((file, at, text))) => {
            if !text.starts_with(message) {
                format!("{what}: panicked with {text:?}, expected {message:?}")
            } else if (file.as_str(), at) != (file!(), line) {
                format!("{what}: reported at {file}:{at}, expected line {line} of this file")
            } else {
                return;
            }
        }
    };
    FAILURES.with(|f| f.borrow_mut().push(failure));
}

/// `$body` must panic with a message starting with `$message`, reported at this line.
macro_rules! panics_here {
    ($message:expr, $body:expr) => {
        expect_panic_at($message, line!(), stringify!($body), || {
            let _ = $body;
        })
    };
}

#[test]
fn misuse_panics_are_reported_at_the_callers_line() {
    let previous = std::sync::Arc::new(std::panic::take_hook());
    let report = previous.clone();
    std::panic::set_hook(Box::new(move |info| {
        if !EXPECTING.with(Cell::get) {
            // A failed assertion of this test: reported as usual.
            return report(info);
        }
        let text = info
            .payload()
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| info.payload().downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        let record = info
            .location()
            .map(|l| (l.file().to_string(), l.line(), text));
        LAST_PANIC.with(|p| *p.borrow_mut() = record);
    }));
    let heap = new_heap();
    let other_heap = new_heap();
    let mut m = heap.attach();
    let mut other = other_heap.attach();
    handle_misuse(&mut m, &mut other);
    view_misuse(&mut m, &mut other);
    thread_misuse(&heap);
    drop((m, other));
    let failures = FAILURES.with(|f| f.take());
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    drop(std::panic::take_hook());
    if let Ok(previous) = std::sync::Arc::try_unwrap(previous) {
        std::panic::set_hook(previous);
    }
}

fn handle_misuse(m: &mut Mutator<'_>, other: &mut Mutator<'_>) {
    const STALE: &str = "stale handle";
    const FOREIGN: &str = "handle used with a mutator that did not create it";
    const NULL: &str = "null handle dereferenced";
    const PAYLOAD: &str = "payload access";
    const SLOT: &str = "reference slot";
    let obj = m.alloc(PAIR).unwrap();
    let bytes = m.alloc_byte_array(4).unwrap();
    let null = m.null_handle();
    let stale = m.scope(|m| m.alloc(PAIR).unwrap());
    let foreign = other.alloc(PAIR).unwrap();

    panics_here!(STALE, m.read_u64(stale, 0));
    panics_here!(STALE, m.read_u32(stale, 0));
    panics_here!(STALE, m.read_f64(stale, 0));
    panics_here!(STALE, m.write_u64(stale, 0, 1));
    panics_here!(STALE, m.write_u32(stale, 0, 1));
    panics_here!(STALE, m.write_f64(stale, 0, 1.0));
    panics_here!(STALE, m.payload(stale));
    panics_here!(STALE, m.payload_mut(stale));
    panics_here!(STALE, m.get_ref(stale, 0));
    panics_here!(STALE, m.load_ref_into(obj, stale, 0));
    panics_here!(STALE, m.load_ref_into(stale, obj, 0));
    panics_here!(STALE, m.set_ref(stale, 0, None));
    panics_here!(STALE, m.set_ref(obj, 0, Some(stale)));
    panics_here!(STALE, m.ref_count(stale));
    panics_here!(STALE, m.kind(stale));
    panics_here!(STALE, m.array_len(stale));
    panics_here!(STALE, m.tag(stale));
    panics_here!(STALE, m.is_null(stale));
    panics_here!(STALE, m.same_object(obj, stale));
    panics_here!(STALE, m.dup(stale));
    panics_here!(STALE, m.set_handle(stale, None));
    panics_here!(STALE, m.set_handle(obj, Some(stale)));
    panics_here!(STALE, m.view(stale));
    panics_here!(STALE, m.alloc_with(PAIR, &[Some(stale)]));
    panics_here!(STALE, m.scope_escape(|_| Ok(Some(stale))));

    panics_here!(FOREIGN, m.read_u64(foreign, 0));
    panics_here!(FOREIGN, m.write_u64(foreign, 0, 1));
    panics_here!(FOREIGN, m.set_ref(obj, 0, Some(foreign)));
    panics_here!(FOREIGN, m.view(foreign));

    panics_here!(NULL, m.read_u64(null, 0));
    panics_here!(NULL, m.payload(null));
    panics_here!(NULL, m.kind(null));

    panics_here!(PAYLOAD, m.read_u64(bytes, 0));
    panics_here!(PAYLOAD, m.write_u64(obj, 4, 1));
    panics_here!(PAYLOAD, m.read_f64(obj, 8));
    panics_here!(PAYLOAD, m.write_u32(bytes, 1, 1));

    panics_here!(SLOT, m.get_ref(obj, 2));
    panics_here!(SLOT, m.set_ref(obj, 2, None));
    panics_here!(SLOT, m.load_ref_into(obj, bytes, 0));
    panics_here!(SLOT, m.alloc_with(PAIR, &[None, None, None]));
}

fn view_misuse(m: &mut Mutator<'_>, other: &mut Mutator<'_>) {
    const FOREIGN_REF: &str = "reference 0x";
    let obj = m.alloc(PAIR).unwrap();
    let theirs = other.alloc(PAIR).unwrap();
    let g = m.view(obj).unwrap();
    let foreign = other.view(theirs).unwrap();
    panics_here!("reference slot", g.get(2));
    panics_here!("payload access", g.read_u64(1));
    panics_here!("payload access", g.read_u32(8));
    panics_here!("payload access", g.read_f64(4));
    panics_here!("reference slot", m.store(g, 2, None));
    panics_here!(FOREIGN_REF, m.store(g, 0, Some(foreign)));
    panics_here!(FOREIGN_REF, m.store(foreign, 0, None));
    panics_here!(FOREIGN_REF, m.root(foreign));
    panics_here!(FOREIGN_REF, m.set_root(obj, Some(foreign)));
}

fn thread_misuse(heap: &Heap) {
    panics_here!("Heap::collect called", heap.collect(CollectionKind::Young));
    panics_here!("Heap::attach: this thread already has", heap.attach());
}
