//! Interceptor cost per command (issues 3, 16 and 24): 1,000 varied commands checked
//! against no rules (the parser and walk alone), the default pack, and generated 200-
//! and 500-rule packs; then the commands of the labelled corpora (tests/corpus), each
//! through the interceptor and the guard together, as a run plans them (median and 90th
//! percentile per command), and the parser on its own. Targets: under 20 µs per command
//! for interception and guard on the corpus, under 50 µs for 500 rules, and a cold load
//! of the default pack under 5 ms.
//!
//! A literal prefilter (one Aho-Corasick pass per candidate) picks the few rules that
//! can match and only their regexes run, so the generated figures should stay within a
//! small factor of the default pack's. Loading only parses patterns; a rule's regex is
//! compiled the first time a candidate needs it, which the cold rows' "first 100
//! commands" include. Plain `std::time`, no harness: `cargo bench --bench intercept`.

use std::hint::black_box;
use std::time::{Duration, Instant};

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use agentbash::config::rules::RuleSet;
use agentbash::pipeline::guard::{Context, GuardPlan};
use agentbash::pipeline::intercept::intercept;

const COMMANDS: usize = 1_000;
const GENERATED_RULES: usize = 200;
const LARGE_PACK_RULES: usize = 500;

/// A small deterministic generator, so every run times the same commands.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) as usize
    }

    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[self.next() % items.len()]
    }
}

fn commands() -> Vec<String> {
    let files = [
        "README.md",
        "src/main.rs",
        "\"my file.txt\"",
        "$OUT",
        "/tmp/x.log",
        "Cargo.toml",
    ];
    let words = [
        "foo",
        "'a b'",
        "\"x && y\"",
        "--flag",
        "-n 5",
        "TODO",
        "git\\ commit",
    ];
    let simple = [
        "cat {f}",
        "ls -la {w}",
        "git status",
        "git commit -m {w}",
        "cargo build --release",
        "cargo test {w} 2>&1",
        "grep -rn {w} src",
        "rg {w} {f}",
        "find . -name {w}",
        "sed -i 's/{w}/bar/' {f}",
        "echo {w} > {f}",
        "echo {w} > /dev/null 2>&1",
        "printf '%s\\n' {w} >> {f}",
        "npm run dev",
        "python -m http.server 8000",
        "jest --watch",
        "FOO=1 BAR={w} make {w}",
        "docker ps -a",
        "curl -s http://localhost:8080/{w}",
        "head -n 20 {f}",
        // Commands aimed at the generated pack's rules ({n} is a rule number).
        "cmd{n} {w} --flag-{n} {f}",
        "emit{n} {w} > {f}",
        "alpha{n} run{n} {w}",
        "tool{n} {w}",
    ];
    let joins = [" | ", " && ", "; ", " || ", "\n", " |& "];
    let mut rng = Lcg(0x5eed);
    let mut out = Vec::with_capacity(COMMANDS);
    for i in 0..COMMANDS {
        let parts = 1 + rng.next() % 4;
        let mut cmd = String::new();
        for p in 0..parts {
            if p > 0 {
                cmd.push_str(rng.pick(&joins));
            }
            let template = rng.pick(&simple);
            let n = (rng.next() % GENERATED_RULES).to_string();
            let filled = template
                .replace("{f}", rng.pick(&files))
                .replace("{w}", rng.pick(&words))
                .replace("{n}", &n);
            cmd.push_str(&filled);
        }
        // Heredocs, substitutions, subshells in the background, and a few long commands.
        match i % 25 {
            0 => cmd = format!("cat <<EOF > notes.md\n{cmd}\nEOF"),
            1 => cmd = format!("echo $(date) && {cmd}"),
            2 => cmd = format!("({cmd}) &"),
            3 => cmd = format!("{cmd} {}", "--verbose ".repeat(40)),
            _ => {}
        }
        out.push(cmd);
    }
    out
}

/// `count` rules of four shapes, from a trivial prefix to a quote-aware token scan like
/// the default pack's write rule.
fn generated_pack(count: usize) -> String {
    let word = r#"(?:[^\s'"\\;&|]|'[^']*'|"(?:[^"\\]|\\.)*"|\\.)+"#;
    let mut text = String::new();
    for i in 0..count {
        let pattern = match i % 4 {
            0 => format!(r"^\s*tool{i}(?:\s|$)"),
            1 => format!(r"(?s)^\s*cmd{i}(?:[ \t]+{word})*?[ \t]+--flag-{i}\b"),
            2 => format!(r"^\s*(?:alpha{i}|beta{i})\s+(?:sub{i}|run{i})\b"),
            _ => format!(
                r#"(?s)^\s*emit{i}(?:[ \t](?:[^'"\\`()\n;&|>]|'[^']*'|"(?:[^"\\]|\\.)*"|\\.|[<>]&[ \t]*(?:[0-9]+|-))*)?>>?[ \t]*["']?(?:[^/\s"'<>&|;()]|/(?:[^d]|d[^e]|de[^v]|dev[^/]))"#
            ),
        };
        text.push_str(&format!(
            "[[rule]]\nid = \"gen-{i}\"\npattern = '''{pattern}'''\ntool = \"tool{}\"\nmessage = \"generated rule {i}\"\n\n",
            i % 7
        ));
    }
    text
}

/// Best of several rounds over all commands, in microseconds per command.
fn time_per_command(label: &str, rules: &RuleSet, commands: &[String], tools: &[String]) {
    // One warm-up round fills the regex engines' lazy DFA caches, as a long-lived
    // process (rpc/mcp) would have them.
    for cmd in commands {
        black_box(intercept(black_box(cmd), rules, tools));
    }
    let mut best = Duration::MAX;
    let mut blocked = 0;
    for _ in 0..10 {
        blocked = 0;
        let start = Instant::now();
        for cmd in commands {
            let result = intercept(black_box(cmd), rules, tools);
            blocked += usize::from(result.blocked.is_some());
            black_box(result);
        }
        best = best.min(start.elapsed());
    }
    let per_command = best.as_secs_f64() * 1e6 / commands.len() as f64;
    println!(
        "{label:<28} {:>4} rules  {per_command:>8.2} µs/command  ({blocked} of {} blocked)",
        rules.rules().len(),
        commands.len()
    );
}

/// Loading parses the packs; the first commands pay for compiling the rules they reach
/// and for the regex engines' lazy DFAs. Reported separately.
fn time_cold(label: &str, load: impl Fn() -> RuleSet, commands: &[String], tools: &[String]) {
    let start = Instant::now();
    let rules = load();
    let compiled = start.elapsed();
    let start = Instant::now();
    for cmd in commands.iter().take(100) {
        black_box(intercept(black_box(cmd), &rules, tools));
    }
    println!(
        "{label:<28} load {:>8.2} ms, first 100 commands {:>8.2} µs/command",
        compiled.as_secs_f64() * 1e3,
        start.elapsed().as_secs_f64() * 1e6 / 100.0
    );
}

/// The commands of tests/corpus/intercept.tsv and tests/corpus/guard.tsv.
fn corpus_commands() -> Vec<String> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/corpus");
    let mut out = Vec::new();
    for file in ["intercept.tsv", "guard.tsv"] {
        let text = match std::fs::read_to_string(root.join(file)) {
            Ok(t) => t,
            Err(e) => panic!("{file}: {e}"),
        };
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            if let Some((_, cmd)) = line.split_once('\t') {
                out.push(cmd.replace('\u{2424}', "\n"));
            }
        }
    }
    out
}

/// Median and 90th percentile of per-command times (each the best of `rounds`).
fn percentiles(label: &str, commands: &[String], rounds: usize, mut f: impl FnMut(&str)) {
    let mut best = vec![Duration::MAX; commands.len()];
    for _ in 0..rounds {
        for (i, cmd) in commands.iter().enumerate() {
            let start = Instant::now();
            f(black_box(cmd));
            best[i] = best[i].min(start.elapsed());
        }
    }
    best.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{label:<34} median {:>6.2} µs  p90 {:>6.2} µs  max {:>8.1} µs  ({} commands)",
        us(best[best.len() / 2]),
        us(best[best.len() * 9 / 10]),
        us(best[best.len() - 1]),
        commands.len()
    );
}

/// The corpus through the interceptor (default pack, every tool) and the guard (the
/// built-in list, the `guard` pack), in the environment of this process.
fn time_corpus(default: &RuleSet, tools: &[String]) {
    let corpus = corpus_commands();
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let protected: Vec<String> = [
        "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64", "/opt", "/proc", "/root",
        "/sbin", "/srv", "/sys", "/usr", "/var", "~", "~/.ssh", "~/.gnupg",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let ctx = Context {
        env: &env,
        cwd: &cwd,
        protected: &protected,
    };
    let pack = match RuleSet::load(&["guard".to_string()], None) {
        Ok(set) => Arc::new(set),
        Err(e) => panic!("guard pack: {e}"),
    };
    // The first command of a process pays for compiling what it reaches.
    let start = Instant::now();
    black_box(intercept(&corpus[0], default, tools));
    black_box(GuardPlan::decide(&corpus[0], &ctx, |_| {
        Some(Ok(pack.clone()))
    }));
    println!(
        "{:<34} {:>8.1} µs (first command of the process)",
        "corpus: interception + guard, cold",
        start.elapsed().as_secs_f64() * 1e6
    );
    percentiles("corpus: interception + guard", &corpus, 5, |cmd| {
        black_box(intercept(cmd, default, tools));
        black_box(GuardPlan::decide(cmd, &ctx, |_| Some(Ok(pack.clone()))));
    });
    percentiles("corpus: interception", &corpus, 5, |cmd| {
        black_box(intercept(cmd, default, tools));
    });
    percentiles("corpus: guard", &corpus, 5, |cmd| {
        black_box(GuardPlan::decide(cmd, &ctx, |_| Some(Ok(pack.clone()))));
    });
    percentiles("corpus: parse only", &corpus, 5, |cmd| {
        black_box(agentbash::shell::parse::parse(cmd).ok());
    });
}

fn main() {
    let commands = commands();
    let mut tools: Vec<String> = ["read", "grep", "glob", "edit", "write", "job"]
        .iter()
        .map(|t| t.to_string())
        .collect();
    tools.extend((0..7).map(|i| format!("tool{i}")));

    let default = match RuleSet::load(&["default".to_string()], None) {
        Ok(set) => set,
        Err(e) => panic!("default pack: {e}"),
    };
    let generated_text = generated_pack(GENERATED_RULES);
    let large_text = generated_pack(LARGE_PACK_RULES);
    let large = match RuleSet::from_toml("large", &large_text) {
        Ok(set) => set,
        Err(e) => panic!("large pack: {e}"),
    };
    let generated = match RuleSet::from_toml("generated", &generated_text) {
        Ok(set) => set,
        Err(e) => panic!("generated pack: {e}"),
    };
    // The realistic worst case: the default pack plus a large user pack, loaded by path.
    let path = std::env::temp_dir().join(format!("agentbash-bench-{}.toml", std::process::id()));
    if let Err(e) = std::fs::write(&path, &generated_text) {
        panic!("cannot write {}: {e}", path.display());
    }
    let both = RuleSet::load(&["default".to_string(), path.display().to_string()], None);
    let _ = std::fs::remove_file(&path);
    let both = match both {
        Ok(set) => set,
        Err(e) => panic!("default + generated: {e}"),
    };
    let avg_len = commands.iter().map(String::len).sum::<usize>() / commands.len();
    println!("{} commands, average {avg_len} bytes", commands.len());

    time_per_command(
        "no rules (parser and walk)",
        &RuleSet::default(),
        &commands,
        &tools,
    );
    time_corpus(&default, &tools);
    time_per_command("default pack", &default, &commands, &tools);
    time_per_command("generated pack", &generated, &commands, &tools);
    time_per_command("default + generated", &both, &commands, &tools);
    time_per_command("500-rule pack", &large, &commands, &tools);

    time_cold(
        "default pack (cold)",
        || RuleSet::load(&["default".to_string()], None).unwrap_or_default(),
        &commands,
        &tools,
    );
    time_cold(
        "generated pack (cold)",
        || RuleSet::from_toml("generated", &generated_text).unwrap_or_default(),
        &commands,
        &tools,
    );
    time_cold(
        "500-rule pack (cold)",
        || RuleSet::from_toml("large", &large_text).unwrap_or_default(),
        &commands,
        &tools,
    );
}
