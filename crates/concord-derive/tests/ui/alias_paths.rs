// A path to a primitive is accepted only through `core::primitive` or `std::primitive`: any
// other path may be an alias (or a type of the user's), which the derive cannot see through.
mod prims {
    #[allow(non_camel_case_types)]
    pub type u64 = u32;
    pub type Key = core::primitive::u64;
}

#[derive(concord::Trace)]
struct Entry {
    key: prims::Key,
    small: prims::u64,
    local: self::prims::u64,
    wide: core::primitive::u128,
}

fn main() {}
