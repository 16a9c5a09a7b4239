use concord::Root;

#[derive(concord::Trace)]
struct Bag {
    next: Option<Root<Bag>>,
    items: Vec<u64>,
    boxed: Box<u64>,
    big: u128,
}

fn main() {}
