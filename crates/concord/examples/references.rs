//! Long-lived roots, weak references and native resources, as an interpreter uses them: a
//! global environment that outlives every scope (`Global`), a cache that must not keep its
//! entries alive (`Weak`), and objects that own a native resource released when they die
//! (`on_collect`). The code of the guide's section "Long-lived roots, weak references and
//! native resources" (`docs/library.md`).
//!
//! `cargo run -p concord --example references`

use std::cell::RefCell;
use std::rc::Rc;

use concord::typed::{Global, Weak};
use concord::{CollectionKind, Heap, Root};

#[derive(concord::Trace)]
struct Env {
    first: Option<Root<Binding>>,
}

#[derive(concord::Trace)]
struct Binding {
    next: Option<Root<Binding>>,
    name: u64,
    value: i64,
}

#[derive(concord::Trace)]
struct File {
    fd: i32,
}

/// A native resource: closing it is recorded instead of calling `close(2)`.
struct Fd(i32, Rc<RefCell<Vec<i32>>>);

impl Drop for Fd {
    fn drop(&mut self) {
        self.1.borrow_mut().push(self.0);
    }
}

fn main() -> Result<(), concord::GcError> {
    let heap = Heap::builder()
        .heap_size(32 << 20)
        .build()
        .expect("a 32 MiB heap");
    let mut m = heap.attach();

    // A global: the interpreter's environment, kept whatever the scopes do.
    let env: Global<Env> = m.scope(|m| {
        let e = m.alloc_typed(Env { first: None })?;
        Ok::<_, concord::GcError>(m.global(e))
    })?;
    for name in 0..100 {
        m.scope(|m| -> Result<(), concord::GcError> {
            let env_root = m.local(&env); // a root of this scope
            let first = m.get(env_root).first().map(|b| m.root_typed(b));
            let b = m.alloc_typed(Binding {
                next: first,
                name,
                value: -(name as i64),
            })?;
            m.get(env_root).set_first(m, Some(m.get(b)));
            Ok(())
        })?;
    }

    // A weak cache entry: it does not keep the binding alive.
    let cached: Weak<Binding> = m.weak_view(m.get_global(&env).first().unwrap());

    // Files own their descriptors: closed when a collection finds the object dead.
    let closed = Rc::new(RefCell::new(Vec::new()));
    let kept = m.alloc_typed(File { fd: 3 })?;
    m.on_collect(kept, Fd(3, closed.clone()));
    m.scope(|m| -> Result<(), concord::GcError> {
        let temp = m.alloc_typed(File { fd: 4 })?;
        m.on_collect(temp, Fd(4, closed.clone()));
        Ok(())
    })?;

    m.collect(CollectionKind::Young); // objects move; globals and weak references follow
    m.collect(CollectionKind::Full);
    let mut n = 0;
    let mut b = m.get_global(&env).first();
    while let Some(v) = b {
        n += 1;
        b = v.next();
    }
    assert_eq!(n, 100);
    assert_eq!(m.upgrade_view(&cached).map(|b| b.name()), Some(99));
    assert_eq!(*closed.borrow(), [4]); // dropped on this thread, after the collection

    // Drop the binding from the environment: the cache entry is cleared by the next
    // collection that judges it (a full one: it is old by now).
    let second = m.get_global(&env).first().unwrap().next();
    m.get_global(&env).set_first(&m, second);
    m.collect(CollectionKind::Full);
    assert!(m.upgrade(&cached).is_none());

    drop(env); // the whole environment is garbage now
    drop(m); // resources still held are dropped with the mutator
    assert_eq!(*closed.borrow(), [4, 3]);
    println!("globals, weak references and resources: ok");
    Ok(())
}
