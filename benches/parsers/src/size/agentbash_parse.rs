//! agentbash's parser alone (no walk), as brush-parser and tree-sitter are measured.
fn main() {
    let s = std::env::args().nth(1).unwrap_or_default();
    match agentbash::shell::parse::parse(&s) {
        Ok(script) => println!("{}", script.body.len()),
        Err(e) => println!("{e}"),
    }
}
