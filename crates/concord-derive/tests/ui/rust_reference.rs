#[derive(concord::Trace)]
struct Borrowing {
    name: &'static str,
    raw: *const u8,
}

fn main() {}
