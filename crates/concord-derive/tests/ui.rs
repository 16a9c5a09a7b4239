//! Compile-fail tests of the derive's errors: each `ui/*.rs` must fail with the message in the
//! `.stderr` beside it, which names the field or the construct the derive refuses.
//! (`TRYBUILD=overwrite cargo test -p concord-derive --test ui` rewrites the `.stderr` files.)

#[test]
fn refused_layouts() {
    let t = trybuild::TestCases::new();
    t.compile_fail("tests/ui/*.rs");
}
