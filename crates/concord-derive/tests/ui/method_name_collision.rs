use concord::Root;

// A getter and a setter of the same name: `set_x` is field `set_x`'s getter and field `x`'s
// setter (in either declaration order, and for raw identifiers and reference fields too).
#[derive(concord::Trace)]
struct Point {
    x: u64,
    set_x: u64,
    set_type: u8,
    r#type: u8,
    next: Option<Root<Point>>,
    set_next: bool,
}

fn main() {}
