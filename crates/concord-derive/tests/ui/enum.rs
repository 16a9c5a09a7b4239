#[derive(concord::Trace)]
enum Shape {
    Circle { r: f64 },
    Square { side: f64 },
}

fn main() {}
