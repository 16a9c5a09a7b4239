#[derive(concord::Trace)]
struct Person {
    age: u32,
    name: String,
}

fn main() {}
