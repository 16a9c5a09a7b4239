type Key = u64;

#[derive(concord::Trace)]
struct Entry {
    key: Key,
}

fn main() {}
