//! The source tree as the documentation describes it: the README's Layout section names
//! every directory and top-level file under `src/` (and nothing that is not there), the
//! top-level modules import each other without cycles and in the layer order
//! docs/ARCHITECTURE.md gives, and nothing below the command line reaches up into
//! `cli` or `commands`.
//!
//! Imports are read with a line-based parser, not a Rust parser: `crate::a::b` paths
//! and `super::` chains in code lines, comments and `#[cfg(test)] mod tests { … }`
//! blocks skipped. That is enough for this code base's style (no `use crate::{…}` at
//! the top of a path, no macros that build paths).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

// ---------------------------------------------------------------------------
// The README's Layout section

/// The paths the README's `## Layout` code block names: on each line, the leading
/// words that look like paths (`src/main.rs`, `src/pipeline/`, `profiles/ rules/`);
/// a bare file name after a directory on the same line is in that directory
/// (`src/output/  sink.rs, artifact.rs` names `src/output/sink.rs`).
fn layout_paths() -> Vec<String> {
    let readme = std::fs::read_to_string(repo().join("README.md")).expect("read README.md");
    let section = readme
        .split("\n## Layout\n")
        .nth(1)
        .expect("README.md has a `## Layout` section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let block = section
        .split("```")
        .nth(1)
        .expect("the Layout section has a code block");
    let mut paths = Vec::new();
    for line in block.lines() {
        let mut dir: Option<String> = None;
        for word in line.split_whitespace() {
            let word = word.trim_end_matches(',');
            let path_chars = word
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c));
            let looks_like_path =
                path_chars && (word.ends_with('/') || (word.contains('.') && !word.ends_with('.')));
            if !looks_like_path {
                break;
            }
            let path = match &dir {
                Some(d) if !word.contains('/') => format!("{d}{word}"),
                _ => word.to_string(),
            };
            if path.ends_with('/') {
                dir = Some(path.clone());
            }
            paths.push(path);
        }
    }
    paths
}

/// What is directly under `src/`: directories as `src/NAME/`, files as `src/NAME`.
fn src_entries() -> BTreeSet<String> {
    std::fs::read_dir(repo().join("src"))
        .expect("read src/")
        .map(|e| {
            let e = e.expect("src/ entry");
            let name = e.file_name().to_string_lossy().into_owned();
            if e.path().is_dir() {
                format!("src/{name}/")
            } else {
                format!("src/{name}")
            }
        })
        .collect()
}

#[test]
fn readme_layout_names_every_part_of_src() {
    let named: BTreeSet<String> = layout_paths().into_iter().collect();
    let missing: Vec<_> = src_entries()
        .into_iter()
        .filter(|e| !named.contains(e))
        .collect();
    assert!(
        missing.is_empty(),
        "README.md's Layout section does not name {missing:?}: add a line saying what each is for"
    );
}

#[test]
fn readme_layout_names_only_paths_that_exist() {
    let paths = layout_paths();
    assert!(
        paths.iter().any(|p| p == "src/main.rs"),
        "the Layout parser found no src/main.rs in {paths:?}"
    );
    let gone: Vec<_> = paths
        .iter()
        .filter(|p| !repo().join(p.trim_end_matches('/')).exists())
        .collect();
    assert!(
        gone.is_empty(),
        "README.md's Layout section names paths that do not exist: {gone:?}"
    );
}

// ---------------------------------------------------------------------------
// The module import graph

/// Top-level modules from the bottom layer up. A module may import its own layer
/// (the graph must still have no cycle) and any layer below it, never one above:
/// the order docs/ARCHITECTURE.md explains.
const LAYERS: &[&[&str]] = &[
    &["ids", "display", "exit", "fsguard", "paths", "children"],
    &["sandbox"],
    &["netproxy"],
    &["process"],
    &["config"],
    &["shell"],
    &["request"],
    &["output"],
    &["result"],
    &["executor"],
    &["pipeline"],
    &["jobs"],
    &["toolbox"],
    &["render"],
    &["server"],
    &["remote"],
    &["cli"],
    &["commands"],
];

/// The part of the engine below the command line: none of it may use `cli` or
/// `commands` (they are its callers).
const BELOW_THE_CLI: &[&str] = &[
    "pipeline", "shell", "process", "executor", "output", "config", "render", "server", "toolbox",
    "remote",
];

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        let path = e.path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|x| x == "rs") {
            out.push(path);
        }
    }
}

/// The module path of a file under `src/`: `src/a/b.rs` and `src/a/b/mod.rs` are
/// `[a, b]`; `lib.rs` and `main.rs` are the crate root, `[]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|p| p.to_string_lossy().into_owned())
        .collect();
    let last = parts.pop().unwrap_or_default();
    let stem = last.trim_end_matches(".rs");
    if !(stem == "mod" || (parts.is_empty() && (stem == "lib" || stem == "main"))) {
        parts.push(stem.to_string());
    }
    parts
}

/// `line` without a `//` comment (one outside a string literal).
fn code_part(line: &str) -> &str {
    let bytes = line.as_bytes();
    let mut in_string = false;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' if in_string => i += 1,
            b'"' => in_string = !in_string,
            b'/' if !in_string && bytes.get(i + 1) == Some(&b'/') => return &line[..i],
            _ => {}
        }
        i += 1;
    }
    line
}

/// The code lines of a file: comments dropped, `#[cfg(test)] mod tests { … }` skipped.
fn code_lines(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut lines = text.lines().peekable();
    let mut in_block_comment = false;
    while let Some(line) = lines.next() {
        let trimmed = line.trim();
        if in_block_comment {
            in_block_comment = !trimmed.contains("*/");
            continue;
        }
        if trimmed.starts_with("/*") {
            in_block_comment = !trimmed.contains("*/");
            continue;
        }
        if trimmed == "#[cfg(test)]"
            && lines
                .peek()
                .is_some_and(|next| next.trim_start().starts_with("mod tests {"))
        {
            let mut depth = 0i64;
            for inner in lines.by_ref() {
                let code = code_part(inner);
                depth += code.matches('{').count() as i64 - code.matches('}').count() as i64;
                if depth <= 0 && code.contains('}') {
                    break;
                }
            }
            continue;
        }
        out.push(code_part(line));
    }
    out
}

/// The first identifier of `s`.
fn ident(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The top-level modules a code line names, seen from the module at `here`.
fn referenced_modules(line: &str, here: &[String]) -> Vec<String> {
    let mut found = Vec::new();
    for (at, _) in line.match_indices("crate::") {
        // `$crate::` (in macros) and `agentbash_crate::` are not this crate's paths.
        if line[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
            continue;
        }
        let rest = &line[at + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let group = group.split('}').next().unwrap_or("");
            found.extend(group.split(',').map(|g| ident(g.trim()).to_string()));
        } else {
            found.push(ident(rest).to_string());
        }
    }
    for (at, _) in line.match_indices("super::") {
        if at > 0 && line[..at].ends_with("super::") {
            continue; // counted from the first `super::` of the chain
        }
        if line[..at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let mut rest = &line[at..];
        let mut ups = 0;
        while let Some(r) = rest.strip_prefix("super::") {
            ups += 1;
            rest = r;
        }
        if ups < here.len() {
            found.push(here[0].clone());
        } else {
            found.push(ident(rest).to_string());
        }
    }
    found.retain(|m| !m.is_empty() && m != "self" && m != "super");
    found
}

/// Every reference between top-level modules: (from, to) → the first place seen.
fn module_references() -> BTreeMap<(String, String), String> {
    let src = repo().join("src");
    let top: BTreeSet<String> = src_entries()
        .into_iter()
        .map(|e| {
            e.trim_start_matches("src/")
                .trim_end_matches('/')
                .trim_end_matches(".rs")
                .to_string()
        })
        .filter(|m| m != "lib" && m != "main")
        .collect();
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut refs = BTreeMap::new();
    for file in files {
        let rel = file.strip_prefix(&src).expect("under src/");
        // A test module in a file of its own (`#[cfg(test)] mod tests;`).
        if rel.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let here = module_path(rel);
        let Some(from) = here.first() else {
            continue; // the crate root declares the modules; it is not one of them
        };
        let text = std::fs::read_to_string(&file).expect("read source");
        for line in code_lines(&text) {
            for to in referenced_modules(line, &here) {
                if &to != from && top.contains(&to) {
                    refs.entry((from.clone(), to))
                        .or_insert_with(|| format!("src/{}: {}", rel.display(), line.trim()));
                }
            }
        }
    }
    refs
}

#[test]
fn top_level_modules_import_each_other_without_cycles() {
    let refs = module_references();
    let mut graph: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (from, to) in refs.keys() {
        graph.entry(from).or_default().push(to);
    }
    // Depth-first search; a node met again while on the stack closes a cycle.
    fn visit<'a>(
        node: &'a str,
        graph: &BTreeMap<&'a str, Vec<&'a str>>,
        stack: &mut Vec<&'a str>,
        done: &mut BTreeSet<&'a str>,
    ) -> Option<Vec<&'a str>> {
        if let Some(at) = stack.iter().position(|n| *n == node) {
            let mut cycle = stack[at..].to_vec();
            cycle.push(node);
            return Some(cycle);
        }
        if !done.insert(node) {
            return None;
        }
        stack.push(node);
        for next in graph.get(node).into_iter().flatten() {
            if let Some(c) = visit(next, graph, stack, done) {
                return Some(c);
            }
        }
        stack.pop();
        None
    }
    let mut done = BTreeSet::new();
    for node in graph.keys() {
        if let Some(cycle) = visit(node, &graph, &mut Vec::new(), &mut done) {
            let steps: Vec<String> = cycle
                .windows(2)
                .map(|w| {
                    let at = &refs[&(w[0].to_string(), w[1].to_string())];
                    format!("{} -> {}   ({at})", w[0], w[1])
                })
                .collect();
            panic!(
                "the top-level modules import each other in a cycle:\n  {}",
                steps.join("\n  ")
            );
        }
    }
}

#[test]
fn top_level_modules_import_only_their_own_layer_or_below() {
    let layer = |m: &str| LAYERS.iter().position(|l| l.contains(&m));
    let mut wrong = Vec::new();
    for ((from, to), at) in module_references() {
        match (layer(&from), layer(&to)) {
            (Some(f), Some(t)) if t > f => wrong.push(format!("{from} -> {to}   ({at})")),
            (Some(_), Some(_)) => {}
            _ => wrong.push(format!(
                "{from} -> {to}: a module missing from LAYERS in tests/it/layout.rs; give it \
                 its place there and in docs/ARCHITECTURE.md ({at})"
            )),
        }
    }
    assert!(
        wrong.is_empty(),
        "imports against the layer order of docs/ARCHITECTURE.md:\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn nothing_below_the_command_line_imports_cli_or_commands() {
    let wrong: Vec<String> = module_references()
        .into_iter()
        .filter(|((from, to), _)| {
            BELOW_THE_CLI.contains(&from.as_str()) && (to == "cli" || to == "commands")
        })
        .map(|((from, to), at)| format!("{from} -> {to}   ({at})"))
        .collect();
    assert!(
        wrong.is_empty(),
        "the engine reaches up into the command line:\n  {}",
        wrong.join("\n  ")
    );
}

#[test]
fn the_import_parser_reads_crate_and_super_paths() {
    let here = |p: &str| module_path(Path::new(p));
    assert_eq!(
        here("pipeline/intercept/check.rs"),
        ["pipeline", "intercept", "check"]
    );
    assert_eq!(here("pipeline/mod.rs"), ["pipeline"]);
    assert!(here("lib.rs").is_empty());
    let refs = |line: &str, file: &str| referenced_modules(line, &here(file));
    assert_eq!(
        refs("use crate::shell::env::BuiltEnv;", "output/redact.rs"),
        ["shell"]
    );
    assert_eq!(
        refs("let x = crate::exit::FAILURE + crate::ids::n();", "a.rs"),
        ["exit", "ids"]
    );
    assert_eq!(
        refs("use crate::{paths, fsguard::read_file};", "a.rs"),
        ["paths", "fsguard"]
    );
    assert_eq!(refs("use super::session::X;", "shell/state.rs"), ["shell"]);
    assert_eq!(
        refs("use super::super::guard;", "pipeline/intercept/check.rs"),
        ["pipeline"]
    );
    assert_eq!(refs("use super::cli::Cli;", "commands/mod.rs"), ["cli"]);
    assert_eq!(refs("$crate::x::y", "a.rs"), Vec::<String>::new());
    let code = code_lines(
        "use crate::a;\n// crate::b\nlet s = \"//\"; // crate::c\n#[cfg(test)]\nmod tests {\n    use crate::d;\n    fn f() { }\n}\nuse crate::e;\n",
    );
    let named: Vec<String> = code
        .iter()
        .flat_map(|l| referenced_modules(l, &here("x.rs")))
        .collect();
    assert_eq!(named, ["a", "e"]);
}

/// The rows of docs/ARCHITECTURE.md's layer table: the modules of each layer, the
/// top-level modules its "imports" cell names (in backticks), and whether the cell
/// says `utilities` (any of the bottom layer's modules, none named).
fn layer_table() -> Vec<(Vec<String>, BTreeSet<String>, bool)> {
    let doc = std::fs::read_to_string(repo().join("docs/ARCHITECTURE.md")).expect("read");
    let start = doc
        .find("## Layers: who may import whom")
        .expect("docs/ARCHITECTURE.md has a Layers section");
    let ticked = |cell: &str| -> Vec<String> {
        cell.split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect()
    };
    doc[start..]
        .lines()
        .skip_while(|l| !l.starts_with('|'))
        .take_while(|l| l.starts_with('|'))
        .skip(2) // the header and its rule
        .map(|row| {
            let cells: Vec<&str> = row.split('|').collect();
            assert!(cells.len() >= 4, "a layer row without three cells: {row}");
            let modules = ticked(cells[2]);
            let top: BTreeSet<&str> = LAYERS.iter().flat_map(|l| l.iter().copied()).collect();
            let imports = ticked(cells[3])
                .into_iter()
                .filter(|m| top.contains(m.as_str()) && !modules.contains(m))
                .collect();
            (modules, imports, cells[3].contains("utilities"))
        })
        .collect()
}

/// The table says, row by row, which other layers' modules a layer imports: exactly
/// those it does, the utilities aside (a claim that drifted — an import the table
/// does not name, or one it names that is gone — fails here).
#[test]
fn the_layer_table_names_exactly_what_each_layer_imports() {
    let refs = module_references();
    let table = layer_table();
    let listed: BTreeSet<&str> = table
        .iter()
        .flat_map(|(m, _, _)| m.iter().map(String::as_str))
        .collect();
    let layered: BTreeSet<&str> = LAYERS.iter().flat_map(|l| l.iter().copied()).collect();
    assert_eq!(
        listed, layered,
        "docs/ARCHITECTURE.md's layer table and LAYERS in tests/it/layout.rs list other modules"
    );
    let mut wrong = Vec::new();
    let utilities = LAYERS[0];
    for (modules, claimed, any_utility) in &table {
        let real: BTreeSet<String> = refs
            .keys()
            .filter(|(from, to)| modules.contains(from) && !modules.contains(to))
            .filter(|(_, to)| !(*any_utility && utilities.contains(&to.as_str())))
            .map(|(_, to)| to.clone())
            .collect();
        for m in real.difference(claimed) {
            let at = refs
                .iter()
                .find(|((f, t), _)| modules.contains(f) && t == m)
                .map(|(_, at)| at.as_str())
                .unwrap_or_default();
            wrong.push(format!(
                "{modules:?} imports `{m}`, which its row does not name ({at})"
            ));
        }
        for m in claimed.difference(&real) {
            wrong.push(format!(
                "{modules:?}: its row names `{m}`, which it does not import"
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/ARCHITECTURE.md's layer table:\n  {}",
        wrong.join("\n  ")
    );
}

/// The functions under src/pipeline/ that `carry_out` calls, in the order of their
/// first call, with those `prepare` (the stages runs and jobs share) calls after it.
fn carry_out_calls() -> Vec<String> {
    let mut calls = calls_of("carry_out");
    if calls.iter().any(|c| c == "prepare") {
        for c in calls_of("prepare") {
            if !calls.contains(&c) {
                calls.push(c);
            }
        }
    }
    calls
}

/// The functions under src/pipeline/ that function `f` calls, in the order of their
/// first call.
fn calls_of(f: &str) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(&repo().join("src/pipeline"), &mut files);
    let texts: Vec<String> = files
        .iter()
        .map(|f| std::fs::read_to_string(f).expect("read source"))
        .collect();
    let defined: BTreeSet<String> = texts
        .iter()
        .flat_map(|t| {
            t.match_indices("fn ")
                .map(|(i, _)| ident(&t[i + 3..]).to_string())
        })
        .collect();
    let head = format!("fn {f}(");
    let generic = format!("fn {f}<");
    let text = texts
        .iter()
        .find(|t| t.contains(&head) || t.contains(&generic))
        .unwrap_or_else(|| panic!("src/pipeline/ defines {f}"));
    let start = text
        .find(&head)
        .or_else(|| text.find(&generic))
        .unwrap_or_else(|| panic!("{f}"));
    // The body ends at the first line that closes an item.
    let body = &text[start..];
    let body = &body[..body.find("\n}\n").expect("the function ends")];
    let body = &body[body.find(") -> ").expect("the function's signature")..];
    let mut calls: Vec<String> = Vec::new();
    for (i, _) in body.match_indices('(') {
        let before = &body[..i];
        let name_start = before
            .rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .map_or(0, |p| p + 1);
        let name = &before[name_start..];
        // A method or a path (`x.f(`, `T::f(`) is not one of the stages.
        let qualified = before[..name_start].ends_with('.') || before[..name_start].ends_with("::");
        if !name.is_empty()
            && !qualified
            && defined.contains(name)
            && !calls.iter().any(|c| c == name)
        {
            calls.push(name.to_string());
        }
    }
    calls
}

/// docs/ARCHITECTURE.md names every stage `carry_out` calls, and no other.
#[test]
fn the_architecture_names_every_stage_carry_out_calls() {
    let doc = std::fs::read_to_string(repo().join("docs/ARCHITECTURE.md")).expect("read");
    let start = doc
        .find("`carry_out` is")
        .expect("docs/ARCHITECTURE.md describes carry_out");
    let end = start
        + doc[start..]
            .find("(`stopped`)")
            .expect("the paragraph ends with `stopped`");
    let named: BTreeSet<String> = doc[start..end + "(`stopped`)".len()]
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| w.chars().all(|c| c.is_ascii_lowercase() || c == '_'))
        .filter(|w| *w != "carry_out")
        .map(str::to_string)
        .collect();
    let called: BTreeSet<String> = carry_out_calls().into_iter().collect();
    assert!(
        called.len() >= 5,
        "the call reader found too few stages: {called:?}"
    );
    assert_eq!(
        named, called,
        "docs/ARCHITECTURE.md's carry_out paragraph (left) and the stages carry_out calls (right)"
    );
}

/// Every fork is in src/process/ but the sandbox's probe, as docs/ARCHITECTURE.md
/// says (test code aside).
#[test]
fn processes_are_forked_in_process_and_by_the_sandbox_probe_only() {
    const FORKS: &[&str] = &[
        "libc::fork(",
        "libc::vfork(",
        "unistd::fork(",
        "libc::clone(",
        "SYS_clone3,",
        "SYS_clone,",
    ];
    let doc = std::fs::read_to_string(repo().join("docs/ARCHITECTURE.md")).expect("read");
    assert!(
        doc.contains(
            "Every fork of agentbash is here but one: the sandbox's probe\n(`sandbox/check.rs`)"
        ),
        "docs/ARCHITECTURE.md no longer says where agentbash forks: update this test with it"
    );
    let src = repo().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let mut wrong = Vec::new();
    for file in files {
        let rel = file.strip_prefix(&src).expect("under src/").to_path_buf();
        if rel.starts_with("process") || rel == Path::new("sandbox/check.rs") {
            continue;
        }
        if rel.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&file).expect("read source");
        for line in code_lines(&text) {
            if FORKS.iter().any(|f| line.contains(f)) {
                wrong.push(format!("src/{}: {}", rel.display(), line.trim()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "forks outside src/process/:\n  {}",
        wrong.join("\n  ")
    );
}
