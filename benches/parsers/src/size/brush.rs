//! brush-parser, its words parsed too, linked alone.
fn main() {
    let s = std::env::args().nth(1).unwrap_or_default();
    let opts = brush_parser::ParserOptions::default();
    let mut p = brush_parser::Parser::new(std::io::Cursor::new(s.as_bytes()), &opts);
    let r = p.parse_program();
    if let Ok(prog) = &r {
        let text = format!("{prog:?}");
        if let Some(w) = text.split_whitespace().next() {
            let _ = brush_parser::word::parse(w, &opts).map(|v| println!("{}", v.len()));
        }
    }
    println!("{}", r.is_ok());
}
