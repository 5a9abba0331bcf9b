//! agentbash's parser and walk, linked alone.
fn main() {
    let s = std::env::args().nth(1).unwrap_or_default();
    let env = std::collections::BTreeMap::new();
    let w = agentbash::shell::parse::walk(
        &s,
        &agentbash::shell::parse::Context {
            env: &env,
            cwd: None,
        },
    );
    println!(
        "{} {}",
        w.commands.len(),
        w.commands.first().map(|c| c.rendered()).unwrap_or_default()
    );
}
