#[derive(concord::Trace)]
struct Wrapper<T: Copy> {
    value: T,
}

fn main() {}
