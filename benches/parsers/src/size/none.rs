//! The baseline: a program that reads its argument and prints its length.
fn main() {
    let s = std::env::args().nth(1).unwrap_or_default();
    println!("{}", s.len());
}
