#[derive(concord::Trace)]
struct Maybe {
    count: Option<u64>,
    pair: (u32, u32),
    array: [u8; 4],
}

fn main() {}
