//! tree-sitter with the bash grammar, linked alone.
fn main() {
    let s = std::env::args().nth(1).unwrap_or_default();
    let mut ts = tree_sitter::Parser::new();
    if ts.set_language(&tree_sitter_bash::LANGUAGE.into()).is_err() {
        return;
    }
    if let Some(t) = ts.parse(&s, None) {
        println!("{}", t.root_node().to_sexp());
    }
}
