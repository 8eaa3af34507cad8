//! Cycle benches.
fn main() {}
