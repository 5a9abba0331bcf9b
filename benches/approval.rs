//! Approval matching per command (issue 26): the commands of the labelled corpora
//! (tests/corpus/intercept.tsv and guard.tsv), each walked once as a run walks it for
//! the guard, then judged by the approval policy of the built-in `agent` profile (its
//! ~20 rules, pipeline forms included) and by a generated 200-rule policy. The walk is
//! shared with the guard and the interceptor, so the cost on top of interception is
//! the judgement alone; it is reported beside the walk's own cost. Target: under
//! 10 µs per command (median) for the judgement. Plain `std::time`, no harness:
//! `cargo bench --bench approval`.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::Path;
use std::time::{Duration, Instant};

use agentbash::config::schema::ApprovalCfg;
use agentbash::pipeline::approval::Policy;
use agentbash::shell::parse::{Context, Walk, walk};

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

/// Median, 90th percentile and maximum of per-command times (each the best of
/// `rounds`).
fn percentiles(label: &str, items: usize, rounds: usize, mut f: impl FnMut(usize)) -> Duration {
    let mut best = vec![Duration::MAX; items];
    for _ in 0..rounds {
        for (i, b) in best.iter_mut().enumerate() {
            let start = Instant::now();
            f(i);
            *b = (*b).min(start.elapsed());
        }
    }
    best.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{label:<40} median {:>6.2} µs  p90 {:>6.2} µs  max {:>8.1} µs  ({items} commands)",
        us(best[best.len() / 2]),
        us(best[best.len() * 9 / 10]),
        us(best[best.len() - 1]),
    );
    best[best.len() / 2]
}

/// The `[approval]` table of the built-in `agent` profile.
fn agent_policy() -> ApprovalCfg {
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    match agentbash::config::profile::Lookup::new(cwd).load("builtin:agent") {
        Ok(p) => p.profile.approval,
        Err(e) => panic!("agent profile: {e}"),
    }
}

/// `count` rules: programs with subcommands, `**` forms and pipeline forms.
fn generated_policy(count: usize) -> ApprovalCfg {
    let mut text = String::from("[approval]\n");
    for i in 0..count {
        let (prefix, decision) = match i % 4 {
            0 => (format!("tool{i} push"), "ask"),
            1 => (format!("cmd{i} ** publish"), "ask"),
            2 => (format!("fetch{i} ** | sh"), "deny"),
            _ => (format!("run{i} *"), "allow"),
        };
        text.push_str(&format!(
            "[[approval.rule]]\nprefix = \"{prefix}\"\ndecision = \"{decision}\"\n"
        ));
    }
    #[derive(serde::Deserialize)]
    struct Wrap {
        approval: ApprovalCfg,
    }
    match toml::from_str::<Wrap>(&text) {
        Ok(w) => w.approval,
        Err(e) => panic!("generated policy: {e}"),
    }
}

fn main() {
    let corpus = corpus_commands();
    let env: BTreeMap<String, String> = std::env::vars().collect();
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let ctx = Context {
        env: &env,
        cwd: Some(&cwd),
    };
    let walks: Vec<Walk> = corpus.iter().map(|c| walk(c, &ctx)).collect();
    let commands: usize = walks.iter().map(|w| w.commands.len()).sum();
    println!(
        "{} lines, {commands} simple commands (average {:.1} per line)",
        corpus.len(),
        commands as f64 / corpus.len() as f64
    );
    percentiles(
        "walk (shared with guard and interceptor)",
        corpus.len(),
        5,
        |i| {
            black_box(walk(black_box(&corpus[i]), &ctx));
        },
    );
    let agent = agent_policy();
    let generated = generated_policy(200);
    let start = Instant::now();
    let policy = Policy::new(&agent, &[]);
    println!(
        "{:<40} {:>8.2} µs",
        format!("agent policy built ({} rules)", agent.rule.len()),
        start.elapsed().as_secs_f64() * 1e6
    );
    let median = percentiles("judgement, agent policy", corpus.len(), 5, |i| {
        black_box(policy.judge(black_box(&walks[i])));
    });
    // Per simple command: the whole corpus judged, divided by its commands (the
    // hostile lines of thousands of commands included).
    let start = Instant::now();
    for w in &walks {
        black_box(policy.judge(black_box(w)));
    }
    println!(
        "{:<40} {:>8.3} µs per simple command ({commands} commands in {:.1} ms)",
        "judgement, agent policy, whole corpus",
        start.elapsed().as_secs_f64() * 1e6 / commands as f64,
        start.elapsed().as_secs_f64() * 1e3
    );
    percentiles(
        "policy built + judgement, agent policy",
        corpus.len(),
        5,
        |i| {
            black_box(Policy::new(&agent, &[]).judge(black_box(&walks[i])));
        },
    );
    let big = Policy::new(&generated, &[]);
    percentiles("judgement, 200-rule policy", corpus.len(), 5, |i| {
        black_box(big.judge(black_box(&walks[i])));
    });
    let asked = walks
        .iter()
        .filter(|w| policy.judge(w).decision != agentbash::config::approval::Decision::Allow)
        .count();
    println!(
        "agent policy asks about or refuses {asked} of {} corpus lines",
        corpus.len()
    );
    println!(
        "target: judgement under 10 µs per command (median): {}",
        if median < Duration::from_micros(10) {
            "met"
        } else {
            "NOT met"
        }
    );
}
