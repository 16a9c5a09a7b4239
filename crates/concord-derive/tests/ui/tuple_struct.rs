#[derive(concord::Trace)]
struct Pair(u64, u64);

#[derive(concord::Trace)]
struct Unit;

fn main() {}
