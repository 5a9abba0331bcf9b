//! The parser comparison of docs/parser.md. Each candidate — agentbash's own parser,
//! brush-parser, tree-sitter-bash — is put in front of the same walk, interceptor and
//! guard (`shell::parse::walk_with`), and measured on the labelled corpora:
//!
//! - parse failures on the corpora (bash itself accepts every line), and agreement
//!   with `bash -n` (parse only, nothing run) on random shell-like text;
//! - the interceptor's precision and recall on tests/corpus/intercept.tsv, and the
//!   guard's refusals and false refusals on tests/corpus/guard.tsv;
//! - µs per parse (median and 90th percentile of each command's best of 5);
//! - cold start: the first parse of a fresh process.
//!
//! Binary sizes come from the `size-*` programs (`cargo build --release --bins`).
//! Nothing here runs a command: the corpora are only parsed and judged.

mod brush;
mod ts;

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

use agentbash::config::rules::RuleSet;
use agentbash::pipeline::guard::{Context, GuardPlan};
use agentbash::pipeline::intercept::intercept_walk;
use agentbash::shell::parse::{self, Parsed};

const PARSERS: [(&str, fn(&str) -> Parsed); 3] = [
    ("agentbash", parse::parse_lines),
    ("brush-parser 0.4.0", brush::parse),
    ("tree-sitter-bash 0.25.1", ts::parse),
];

fn corpus(name: &str) -> Vec<(String, String)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../tests/corpus")
        .join(name);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| l.split_once('\t'))
        .map(|(k, c)| (k.to_string(), c.replace('\u{2424}', "\n")))
        .collect()
}

/// Random shell-like text from the pieces agent commands are made of.
fn random_inputs(n: usize) -> Vec<String> {
    let pieces = [
        "ls",
        " ",
        " ",
        "\n",
        "|",
        "&&",
        "||",
        ";",
        "&",
        "(",
        ")",
        "{ ",
        "; }",
        "'a b'",
        "\"x $y\"",
        "$(",
        ")",
        "`",
        "${x",
        ":-/",
        "}",
        "<<EOF\nbody\nEOF\n",
        "<<<",
        "2>&1",
        ">",
        "<",
        "if ",
        "then ",
        "fi",
        "for i in a; do ",
        "done",
        "case x in a) ",
        ";;",
        "esac",
        "f() ",
        "[[ -f a ]]",
        "$((1+2))",
        "\\",
        "#c",
        "=",
        "x=1 ",
        "~/",
        "*",
        "{a,b}",
        "$'\\x41'",
        "rm -rf",
        "echo",
        "coproc ",
        "!",
        "time ",
        "$@",
        "\"",
        "'",
    ];
    let mut seed: u64 = 0x5eed_2024;
    let mut next = || {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (seed >> 33) as usize
    };
    (0..n)
        .map(|_| {
            let len = 1 + next() % 12;
            (0..len).map(|_| pieces[next() % pieces.len()]).collect()
        })
        .collect()
}

/// Whether `bash -n` accepts `src` (it only parses: nothing is run).
fn bash_accepts(src: &str) -> Option<bool> {
    let out = std::process::Command::new("bash")
        .args(["-n", "-c", src])
        .stdin(std::process::Stdio::null())
        .output()
        .ok()?;
    Some(out.status.success() && !String::from_utf8_lossy(&out.stderr).contains("syntax error"))
}

/// Inputs that have broken parsers: a 9-byte heredoc oddity and 10,000-deep nesting.
const HOSTILE: [&str; 6] = [
    "x<<''<<<#",
    "$( × 10,000",
    "{ × 10,000",
    "if × 10,000",
    "\"$( × 10,000",
    "(( × 10,000 (subshells)",
];

fn hostile(k: usize) -> String {
    let n = 10_000;
    match k {
        0 => "x<<''<<<#".to_string(),
        1 => "echo $(".repeat(n) + "ls" + &")".repeat(n),
        2 => "{ ".repeat(n) + "ls; " + &"}; ".repeat(n),
        3 => "if a; then ".repeat(n) + "ls; " + &"fi; ".repeat(n),
        4 => "echo \"$(".repeat(n) + "ls" + &")\"".repeat(n),
        _ => "( ".repeat(n) + "ls" + &" )".repeat(n),
    }
}

/// Each hostile input through each parser, in a child process limited to 2 GiB and
/// 20 s: the time, or how the process died.
fn robustness() {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
    println!(
        "| input | {} |",
        PARSERS.iter().map(|p| p.0).collect::<Vec<_>>().join(" | ")
    );
    println!("|---|---|---|---|");
    for (k, label) in HOSTILE.iter().enumerate() {
        let mut cells = Vec::new();
        for i in 0..PARSERS.len() {
            let script = format!(
                "ulimit -v 2097152; exec timeout 20 {} --hostile {i} {k}",
                exe.display()
            );
            let out = std::process::Command::new("sh")
                .args(["-c", &script])
                .output();
            cells.push(match out {
                Ok(o) if o.status.success() => {
                    String::from_utf8_lossy(&o.stdout).trim().to_string()
                }
                Ok(o) => {
                    let err = String::from_utf8_lossy(&o.stderr);
                    if err.contains("overflowed its stack") {
                        "**aborts: stack overflow**".to_string()
                    } else if err.contains("memory allocation") {
                        "**aborts: out of memory**".to_string()
                    } else if o.status.code() == Some(124) {
                        "**hangs (killed after 20 s)**".to_string()
                    } else {
                        format!("**dies ({})**", o.status)
                    }
                }
                Err(e) => format!("cannot run: {e}"),
            });
        }
        println!("| `{label}` | {} |", cells.join(" | "));
    }
}

fn median_p90(mut v: Vec<Duration>) -> (f64, f64) {
    v.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    (us(v[v.len() / 2]), us(v[v.len() * 9 / 10]))
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    // `--cold N`: time the first parse of this process with parser N.
    if args.get(1).map(String::as_str) == Some("--cold") {
        let i: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
        let start = Instant::now();
        let parsed = (PARSERS[i].1)("git status && cargo test 2>&1 | tail -n 20");
        let took = start.elapsed();
        std::hint::black_box(parsed);
        println!("{}", took.as_nanos());
        return;
    }
    // `--hostile N I`: parse hostile input I with parser N (run in a child process with
    // a memory limit by `--robustness`, since a parser may abort the process).
    if args.get(1).map(String::as_str) == Some("--hostile") {
        let i: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
        let k: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(0);
        let input = hostile(k);
        let start = Instant::now();
        let parsed = (PARSERS[i].1)(&input);
        println!(
            "{:.1} ms, error: {}",
            start.elapsed().as_secs_f64() * 1e3,
            parsed.error.is_some()
        );
        return;
    }
    if args.get(1).map(String::as_str) == Some("--robustness") {
        robustness();
        return;
    }
    // `--one N CMD`: the walk of one command with parser N, for debugging an adapter.
    if args.get(1).map(String::as_str) == Some("--one") {
        let i: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(0);
        let cmd = args.get(3).cloned().unwrap_or_default();
        let env = BTreeMap::new();
        let w = parse::walk_with(
            &cmd,
            &parse::Context {
                env: &env,
                cwd: Some(Path::new("/work/proj")),
            },
            PARSERS[i].1,
        );
        for c in &w.commands {
            println!("{}", c.rendered());
        }
        println!(
            "unparsed: {:?} truncated: {}",
            w.unparsed.iter().map(|u| &u.text).collect::<Vec<_>>(),
            w.truncated
        );
        return;
    }
    let intercept_rows = corpus("intercept.tsv");
    let guard_rows = corpus("guard.tsv");
    let all: Vec<&str> = intercept_rows
        .iter()
        .chain(&guard_rows)
        .map(|(_, c)| c.as_str())
        .collect();
    // `--detail N`: every disagreement of parser N, for reading.
    let detail: Option<usize> = (args.get(1).map(String::as_str) == Some("--detail"))
        .then(|| args.get(2).and_then(|s| s.parse().ok()))
        .flatten();
    let bash_rejects: Vec<&&str> = all
        .iter()
        .filter(|c| bash_accepts(c) == Some(false))
        .collect();
    let randoms = random_inputs(1500);
    let bash: Vec<Option<bool>> = randoms.iter().map(|r| bash_accepts(r)).collect();

    let default = RuleSet::load(&["default".to_string()], None).unwrap_or_else(|e| panic!("{e}"));
    let pack =
        Arc::new(RuleSet::load(&["guard".to_string()], None).unwrap_or_else(|e| panic!("{e}")));
    let tools: Vec<String> = ["read", "grep", "glob", "edit", "write", "job"]
        .iter()
        .map(|t| t.to_string())
        .collect();
    let no_env = BTreeMap::new();
    let table_env: BTreeMap<String, String> = [
        ("HOME", "/home/agent"),
        ("PROJ", "/work/proj"),
        ("TMPDIR", "/tmp/abc"),
        ("PATH", "/usr/bin:/bin"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let protected: Vec<String> = [
        "/", "~", "~/.ssh", "~/.gnupg", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib64",
        "/opt", "/proc", "/root", "/sbin", "/srv", "/sys", "/usr", "/var",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let cwd = Path::new("/work/proj");
    let guard_ctx = Context {
        env: &table_env,
        cwd,
        protected: &protected,
    };

    println!(
        "inputs: {} corpus commands ({} of which `bash -n` rejects), {} random shell-like texts",
        all.len(),
        bash_rejects.len(),
        randoms.len()
    );
    println!();
    println!(
        "| | failures on the corpora | agrees with `bash -n` on random text | interceptor precision / recall | guard: refused / look-alikes refused | µs per parse, median / p90 | cold first parse |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (i, (name, parse_fn)) in PARSERS.iter().enumerate() {
        if detail.is_some_and(|d| d != i) {
            continue;
        }
        let show = detail == Some(i);
        let failures = all
            .iter()
            .filter(|c| {
                let failed = parse_fn(c).error.is_some();
                if show && failed != bash_rejects.contains(c) {
                    println!(
                        "PARSE {} where bash {}: {c:?}",
                        if failed { "fails" } else { "succeeds" },
                        if failed { "accepts" } else { "rejects" }
                    );
                }
                failed
            })
            .count();
        let agree = randoms
            .iter()
            .zip(&bash)
            .filter(|(r, b)| {
                let same = b.is_some_and(|b| b == parse_fn(r).error.is_none());
                if show && !same {
                    println!(
                        "RANDOM bash {}: {r:?}",
                        if b.unwrap_or(false) {
                            "accepts"
                        } else {
                            "rejects"
                        }
                    );
                }
                same
            })
            .count();
        let judged = bash.iter().filter(|b| b.is_some()).count();

        // The interceptor on the labelled corpus.
        let (mut blocks, mut correct, mut routed) = (0usize, 0usize, 0usize);
        for (expected, cmd) in &intercept_rows {
            let walk = parse::walk_with(
                cmd,
                &parse::Context {
                    env: &no_env,
                    cwd: None,
                },
                *parse_fn,
            );
            let got = intercept_walk(&walk, &default, &tools)
                .blocked
                .map(|h| h.tool);
            if expected != "pass" {
                routed += 1;
            }
            if show && got.as_deref().unwrap_or("pass") != expected {
                println!(
                    "INTERCEPT expected {expected}, got {}: {cmd:?}",
                    got.as_deref().unwrap_or("pass")
                );
            }
            if let Some(tool) = got {
                blocks += 1;
                if &tool == expected {
                    correct += 1;
                }
            }
        }
        // The guard on its table.
        let (mut refused, mut false_refusals, mut to_refuse, mut look_alikes) =
            (0usize, 0usize, 0usize, 0usize);
        for (expected, cmd) in &guard_rows {
            let walk = parse::walk_with(
                cmd,
                &parse::Context {
                    env: &table_env,
                    cwd: Some(cwd),
                },
                *parse_fn,
            );
            let plan = GuardPlan::decide_walk(&walk, &guard_ctx, |_| Some(Ok(pack.clone())));
            if show && plan.refused.is_some() != (expected == "refuse") {
                println!(
                    "GUARD expected {expected}, got {}: {cmd:?}",
                    if plan.refused.is_some() {
                        "refuse"
                    } else {
                        "allow"
                    }
                );
            }
            if expected == "refuse" {
                to_refuse += 1;
                refused += usize::from(plan.refused.is_some());
            } else {
                look_alikes += 1;
                false_refusals += usize::from(plan.refused.is_some());
            }
        }

        // Speed: each command's best of 5.
        let mut best = vec![Duration::MAX; all.len()];
        for _ in 0..5 {
            for (k, c) in all.iter().enumerate() {
                let start = Instant::now();
                std::hint::black_box(parse_fn(std::hint::black_box(c)));
                best[k] = best[k].min(start.elapsed());
            }
        }
        let (median, p90) = median_p90(best);

        // Cold: the first parse of a fresh process, median of 5.
        let exe = std::env::current_exe().unwrap_or_else(|e| panic!("{e}"));
        let mut colds: Vec<u128> = (0..5)
            .filter_map(|_| {
                let out = std::process::Command::new(&exe)
                    .args(["--cold", &i.to_string()])
                    .output()
                    .ok()?;
                String::from_utf8_lossy(&out.stdout).trim().parse().ok()
            })
            .collect();
        colds.sort();
        let cold = colds.get(colds.len() / 2).copied().unwrap_or(0) as f64 / 1000.0;

        println!(
            "| {name} | {failures} of {} | {agree} of {judged} ({:.1}%) | {:.1}% / {:.1}% | {refused} of {to_refuse} / {false_refusals} of {look_alikes} | {median:.2} / {p90:.2} | {cold:.0} µs |",
            all.len(),
            100.0 * agree as f64 / judged.max(1) as f64,
            100.0 * correct as f64 / blocks.max(1) as f64,
            100.0 * correct as f64 / routed.max(1) as f64,
        );
    }
}
