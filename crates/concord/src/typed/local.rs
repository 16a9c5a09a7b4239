//! Roots the borrow checker confines to their scope: [`Mutator::local_scope`] hands its closure
//! a [`Scope<'s>`], and the [`Local<'s, T>`]s it makes carry the scope's lifetime, as V8's
//! `Local` belongs to its `HandleScope`. Returning one from the closure, or keeping it in a
//! variable that outlives the closure, does not compile, where a [`Root<T>`] made in a
//! [`Mutator::scope`] is only found stale when it is used (a checked panic).
//!
//! ```
//! use concord::typed::{Local, Scope};
//! use concord::{GcError, Heap, Root};
//!
//! #[derive(concord::Trace)]
//! struct Node {
//!     left: Option<Root<Node>>,
//!     right: Option<Root<Node>>,
//! }
//!
//! /// A complete tree, built bottom-up; its root is a local of the caller's scope.
//! fn tree<'s>(s: &mut Scope<'s, '_>, depth: u32) -> Result<Local<'s, Node>, GcError> {
//!     if depth == 0 {
//!         return s.alloc(Node { left: None, right: None });
//!     }
//!     s.escape(|s| {
//!         let (l, r) = (tree(s, depth - 1)?, tree(s, depth - 1)?);
//!         s.alloc(Node { left: Some(l.into()), right: Some(r.into()) })
//!     })
//! }
//!
//! fn count(n: NodeView<'_>) -> u64 {
//!     1 + n.left().map_or(0, count) + n.right().map_or(0, count)
//! }
//!
//! let heap = Heap::builder().heap_size(16 << 20).build().unwrap();
//! let mut m = heap.attach();
//! let nodes = m.local_scope(|s| -> Result<u64, GcError> {
//!     let t = tree(s, 10)?;
//!     Ok(count(s.get(t)))
//! });
//! assert_eq!(nodes.unwrap(), 2047);
//! assert_eq!(m.handle_count(), 0); // the scope released every handle it made
//! ```
//!
//! A local cannot leave its scope:
//!
//! ```compile_fail
//! # use concord::{Heap, Root};
//! # #[derive(concord::Trace)]
//! # struct Leaf { value: u64 }
//! # let heap = Heap::builder().heap_size(16 << 20).build().unwrap();
//! # let mut m = heap.attach();
//! let leaf = m.local_scope(|s| s.alloc(Leaf { value: 1 }).unwrap()); // error: escapes
//! ```
//!
//! ```compile_fail
//! # use concord::typed::Local;
//! # use concord::{Heap, Root};
//! # #[derive(concord::Trace)]
//! # struct Leaf { value: u64 }
//! # let heap = Heap::builder().heap_size(16 << 20).build().unwrap();
//! # let mut m = heap.attach();
//! let mut kept: Option<Local<'_, Leaf>> = None;
//! m.local_scope(|s| kept = Some(s.alloc(Leaf { value: 1 }).unwrap())); // error: escapes
//! ```
//!
//! **What stays checked at run time.** A local is a root underneath: `Local::root` (or
//! `.into()`) turns it into a [`Root<T>`], which is what a reference field holds and what the
//! rest of the API takes, and a root is not tied to the scope; using it after the scope ends
//! panics as a stale root does. Locals of an enclosing scope are usable in an inner one (the
//! lifetime is covariant, as a V8 `Local` outlives inner `HandleScope`s), so a local of
//! another mutator's scope is caught by the same run-time check as a root of another mutator,
//! not by the compiler.

use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};

use super::{Root, Trace, TypedView};
use crate::runtime::{GcError, Mutator};

/// A typed root confined by the borrow checker to the scope `'s` that made it (see the
/// [module documentation](self)). `Copy`; never null. Read it with [`Scope::get`]; store it in
/// a reference field with `.into()` or [`Local::root`].
pub struct Local<'s, T> {
    root: Root<T>,
    _scope: PhantomData<&'s ()>,
}

impl<T> Clone for Local<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Local<'_, T> {}

impl<T> fmt::Debug for Local<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Local<{}>({:?})", std::any::type_name::<T>(), self.root)
    }
}

impl<T> Local<'_, T> {
    /// The root underneath: what a reference field holds and what the rest of the API takes.
    /// It is not confined to the scope: using it after the scope ended panics as a stale root.
    #[inline(always)]
    pub fn root(self) -> Root<T> {
        self.root
    }
}

impl<T> From<Local<'_, T>> for Root<T> {
    #[inline(always)]
    fn from(l: Local<'_, T>) -> Root<T> {
        l.root
    }
}

/// A [`Local`] or a [`Root`]: what [`Scope::get`] takes. Sealed.
pub trait IntoRoot: super::sealed::Sealed {
    /// The struct of the object.
    type Target: Trace;
    /// The root underneath.
    fn into_root(self) -> Root<Self::Target>;
}

impl<T: Trace> IntoRoot for Root<T> {
    type Target = T;

    #[inline(always)]
    fn into_root(self) -> Root<T> {
        self
    }
}

impl<T: Trace> super::sealed::Sealed for Local<'_, T> {}

impl<T: Trace> IntoRoot for Local<'_, T> {
    type Target = T;

    #[inline(always)]
    fn into_root(self) -> Root<T> {
        self.root
    }
}

/// The scope of [`Mutator::local_scope`]: the mutator (every [`Mutator`] method is reachable
/// through it), and the maker of [`Local`]s that cannot outlive it.
pub struct Scope<'s, 'h> {
    m: &'s mut Mutator<'h>,
}

impl<'h> Deref for Scope<'_, 'h> {
    type Target = Mutator<'h>;

    #[inline(always)]
    fn deref(&self) -> &Mutator<'h> {
        self.m
    }
}

impl<'h> DerefMut for Scope<'_, 'h> {
    #[inline(always)]
    fn deref_mut(&mut self) -> &mut Mutator<'h> {
        self.m
    }
}

impl<'s, 'h> Scope<'s, 'h> {
    /// A new object with every field set from `value` ([`Mutator::alloc_typed`]), rooted in
    /// this scope.
    #[inline(always)]
    #[track_caller]
    pub fn alloc<T: Trace>(&mut self, value: T) -> Result<Local<'s, T>, GcError> {
        let root = self.m.alloc_typed(value)?;
        Ok(Local {
            root,
            _scope: PhantomData,
        })
    }

    /// `view`'s object, rooted in this scope ([`Mutator::root_typed`]).
    #[inline]
    #[track_caller]
    pub fn local<'m, V: TypedView<'m>>(&self, view: V) -> Local<'s, V::Target> {
        Local {
            root: self.m.root_typed(view),
            _scope: PhantomData,
        }
    }

    /// The typed view of a local's object (of this scope or an enclosing one) or of a
    /// root's, valid until the mutator is next borrowed `&mut` ([`Mutator::get`]).
    #[inline(always)]
    #[track_caller]
    pub fn get<R: IntoRoot>(&self, local: R) -> <R::Target as Trace>::View<'_> {
        self.m.get(local.into_root())
    }

    /// A nested scope: `f`'s locals are released when it returns, and cannot leave it.
    #[inline]
    pub fn scope<R>(&mut self, f: impl for<'i> FnOnce(&mut Scope<'i, 'h>) -> R) -> R {
        self.m.local_scope(f)
    }

    /// A nested scope whose result survives it: `f` runs in a scope of its own, and the local
    /// it returns becomes a local of this scope (in the first slot the inner scope released);
    /// every other handle `f` made is released. On an error, all of them are.
    #[inline]
    #[track_caller]
    pub fn escape<T: Trace, E>(
        &mut self,
        f: impl for<'i> FnOnce(&mut Scope<'i, 'h>) -> Result<Local<'i, T>, E>,
    ) -> Result<Local<'s, T>, E> {
        let root = self
            .m
            .scope_escape_typed(|m| f(&mut Scope { m }).map(Local::root))?;
        Ok(Local {
            root,
            _scope: PhantomData,
        })
    }
}

impl<'h> Mutator<'h> {
    /// Run `f` in a scope whose [`Local`]s the borrow checker keeps inside it (see
    /// [`crate::typed::local`]); every handle made in it is released when `f` returns or
    /// panics. Polls for a safepoint, as [`Mutator::scope`] does.
    #[inline]
    pub fn local_scope<R>(&mut self, f: impl for<'s> FnOnce(&mut Scope<'s, 'h>) -> R) -> R {
        let scope = self.open_scope();
        let r = f(&mut Scope { m: scope.m });
        scope.end();
        r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CollectionKind, Heap};

    #[derive(crate::Trace)]
    struct Cell {
        next: Option<Root<Cell>>,
        value: u64,
    }

    fn heap() -> Heap {
        Heap::builder().heap_size(8 << 20).build().unwrap()
    }

    #[test]
    fn locals_survive_collections_and_their_scope_releases_them() {
        let heap = heap();
        let mut m = heap.attach();
        let sum = m.local_scope(|s| {
            let mut head = s
                .alloc(Cell {
                    next: None,
                    value: 0,
                })
                .unwrap();
            for i in 1..1000 {
                head = s
                    .escape(|s| {
                        s.alloc(Cell {
                            next: Some(head.into()),
                            value: i,
                        })
                    })
                    .unwrap();
            }
            s.collect(CollectionKind::Full);
            let mut sum = 0;
            let mut cur = Some(s.get(head));
            while let Some(c) = cur {
                sum += c.value();
                cur = c.next();
            }
            sum
        });
        assert_eq!(sum, 999 * 1000 / 2);
        assert_eq!(m.handle_count(), 0);
    }

    #[test]
    fn an_escape_keeps_one_handle_and_an_error_releases_all() {
        let heap = heap();
        let mut m = heap.attach();
        m.local_scope(|s| {
            let before = s.handle_count();
            let kept = s
                .escape(|s| {
                    s.alloc(Cell {
                        next: None,
                        value: 1,
                    })?;
                    s.alloc(Cell {
                        next: None,
                        value: 2,
                    })
                })
                .unwrap();
            assert_eq!(s.handle_count(), before + 1);
            assert_eq!(s.get(kept).value(), 2);
            let failed: Result<Local<'_, Cell>, &str> = s.escape(|s| {
                s.alloc(Cell {
                    next: None,
                    value: 3,
                })
                .unwrap();
                Err("no")
            });
            assert_eq!(failed.unwrap_err(), "no");
            assert_eq!(s.handle_count(), before + 1);
            // An outer local in an inner scope, and a view rooted as a local.
            s.scope(|inner| {
                let v = inner.get(kept);
                let again = inner.local(v);
                assert_eq!(inner.get(again).value(), 2);
            });
        });
    }

    #[test]
    #[should_panic(expected = "stale handle")]
    fn a_root_taken_from_a_local_is_checked_after_the_scope() {
        let heap = heap();
        let mut m = heap.attach();
        let root = m.local_scope(|s| {
            s.alloc(Cell {
                next: None,
                value: 1,
            })
            .unwrap()
            .root()
        });
        m.get(root);
    }
}
