//! `glob`: the files under a directory whose path matches a glob, newest first.
//!
//! The pattern is matched against each file's path relative to `path` with shell
//! semantics (`*` stays within one directory, `**` crosses any number), on the same
//! ignore-aware walk as `grep`. A literal leading part of the pattern (`src/` in
//! `src/**/*.rs`) narrows the walk to that directory. Only the `limit` newest
//! matches are kept while walking (a bounded heap), so a tree of any size costs
//! memory for the answer only; the walk has the same time budget as `grep`.

use super::args::{GLOB_DEFAULT_RESULTS, GLOB_MAX_RESULTS, GlobArgs};
use super::policy::{FilePolicy, Located};
use super::walk::{self, Shown};
use super::{Answer, ToolError};
use serde::Serialize;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, SystemTime};

/// What `glob` found.
#[derive(Debug, Clone, Serialize)]
pub struct GlobOutput {
    pub pattern: String,
    /// The directory searched, as given (`.` for the server's directory).
    pub path: String,
    /// The matching files, newest first (by modification time; ties by path),
    /// relative to the server's directory when under it.
    pub files: Vec<String>,
    /// How many files matched in all (more than `files` holds when truncated).
    pub matched: u64,
    pub truncated: bool,
    /// `limit` (more matches than asked for: the newest are kept) or `time`.
    pub truncated_by: Option<&'static str>,
}

/// The newest matches so far: a min-heap by modification time (the oldest on top,
/// to be dropped), ties broken by path.
type Newest = BinaryHeap<Reverse<(SystemTime, Reverse<PathBuf>)>>;

pub fn glob(policy: &FilePolicy, args: GlobArgs) -> Result<Answer, ToolError> {
    glob_within(policy, args, walk::TIME_BUDGET)
}

pub fn glob_within(
    policy: &FilePolicy,
    args: GlobArgs,
    budget: Duration,
) -> Result<Answer, ToolError> {
    let query = GlobQuery::new(&args)?;
    let root_given = policy.locate(&query.given).map_err(ToolError::Path)?;
    policy.check_read("glob", &root_given)?;
    let at = policy.locate(&query.start).map_err(ToolError::Path)?;
    policy.check_read("glob", &at)?;
    require_dir(&root_given)?;
    let walked = walk_newest(policy, &at.target, &query, budget);
    let shown = Shown::new(policy);
    let truncated_by = if walked.timed_out {
        Some("time")
    } else if walked.matched > walked.found.len() as u64 {
        Some("limit")
    } else {
        None
    };
    let output = GlobOutput {
        pattern: args.pattern.clone(),
        path: query.given,
        files: walked.found.iter().map(|(_, p)| shown.path(p)).collect(),
        matched: walked.matched,
        truncated: truncated_by.is_some(),
        truncated_by,
    };
    let text = render(&output, query.limit);
    Answer::new(text, &output)
}

/// A `glob` call's arguments checked: the directory given, the one the walk starts
/// in (narrowed by the pattern's literal part), and what is matched below it.
struct GlobQuery {
    limit: usize,
    given: String,
    start: String,
    matcher: globset::GlobMatcher,
}

impl GlobQuery {
    fn new(args: &GlobArgs) -> Result<GlobQuery, ToolError> {
        let bad = |message: String| ToolError::Arguments {
            tool: "glob",
            message,
        };
        let pattern = args.pattern.trim();
        if pattern.is_empty() {
            return Err(bad("`pattern` is empty: give a glob such as **/*.rs".into()));
        }
        let limit = args.limit.unwrap_or(GLOB_DEFAULT_RESULTS);
        if !(1..=GLOB_MAX_RESULTS).contains(&limit) {
            return Err(bad(format!(
                "`limit` must be 1-{GLOB_MAX_RESULTS}, not {limit}"
            )));
        }
        let given = args.path.clone().unwrap_or_else(|| ".".into());
        // `/abs/dir/**/x` without a path: the literal part is the directory.
        let (prefix, rest) = split_literal(pattern);
        let (start, rest) = if pattern.starts_with('/') {
            if args.path.is_some() {
                return Err(bad(format!(
                    "`pattern` {pattern:?} is absolute: make it relative to `path`, or leave `path` out"
                )));
            }
            (prefix, rest)
        } else if prefix.is_empty() {
            (given.clone(), rest)
        } else {
            (format!("{}/{prefix}", given.trim_end_matches('/')), rest)
        };
        let matcher = globset::GlobBuilder::new(&rest)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
            .map_err(|e| bad(format!("`pattern` is not a valid glob: {e}")))?
            .compile_matcher();
        Ok(GlobQuery {
            limit,
            given,
            start,
            matcher,
        })
    }
}

/// The directory given must exist and be one (the walk's start, narrowed by the
/// pattern, may be missing: then nothing matches).
fn require_dir(root_given: &Located) -> Result<(), ToolError> {
    match std::fs::metadata(&root_given.target) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(ToolError::Path(format!(
            "{} is a file, not a directory: `glob` lists the files under a directory",
            root_given.describe()
        ))),
        Err(_) => Err(ToolError::Path(format!(
            "{}: no such directory",
            root_given.describe()
        ))),
    }
}

/// What the walk found: the kept matches newest first, how many matched in all,
/// and whether the time budget ran out.
struct Walked {
    found: Vec<(SystemTime, PathBuf)>,
    matched: u64,
    timed_out: bool,
}

/// Walk `start` in parallel, keeping only the `limit` newest matches (a bounded
/// heap), until done or the budget ends.
fn walk_newest(policy: &FilePolicy, start: &Path, query: &GlobQuery, budget: Duration) -> Walked {
    let limit = query.limit;
    let deadline = walk::deadline(budget);
    let newest: Mutex<Newest> = Mutex::new(BinaryHeap::with_capacity(limit + 1));
    let matched = AtomicU64::new(0);
    let timed_out = AtomicBool::new(false);
    if start.is_dir() {
        let root = start.to_path_buf();
        walk::walker(policy, &root).build_parallel().run(|| {
            let (root, matcher, newest, matched, timed_out) =
                (&root, &query.matcher, &newest, &matched, &timed_out);
            Box::new(move |entry| {
                if Instant::now() >= deadline {
                    timed_out.store(true, Ordering::Relaxed);
                    return ignore::WalkState::Quit;
                }
                let Ok(entry) = entry else {
                    return ignore::WalkState::Continue;
                };
                if !entry.file_type().is_some_and(|t| t.is_file()) {
                    return ignore::WalkState::Continue;
                }
                let Ok(rel) = entry.path().strip_prefix(root) else {
                    return ignore::WalkState::Continue;
                };
                if !matcher.is_match(rel) {
                    return ignore::WalkState::Continue;
                }
                matched.fetch_add(1, Ordering::Relaxed);
                let modified = entry
                    .metadata()
                    .ok()
                    .and_then(|m| m.modified().ok())
                    .unwrap_or(SystemTime::UNIX_EPOCH);
                let mut heap = newest.lock().unwrap_or_else(|p| p.into_inner());
                heap.push(Reverse((modified, Reverse(entry.into_path()))));
                if heap.len() > limit {
                    heap.pop();
                }
                ignore::WalkState::Continue
            })
        });
    }
    let mut found: Vec<(SystemTime, PathBuf)> = newest
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .into_iter()
        .map(|Reverse((t, Reverse(p)))| (t, p))
        .collect();
    found.sort_unstable_by(|a, b| b.0.cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    Walked {
        found,
        matched: matched.into_inner(),
        timed_out: timed_out.into_inner(),
    }
}

/// The directories at the start of `pattern` that hold no glob character, and the
/// rest (`src/**/*.rs` → `src`, `**/*.rs`); a pattern with none at all is split at
/// its last `/` (`src/main.rs` → `src`, `main.rs`).
fn split_literal(pattern: &str) -> (String, String) {
    let is_glob = |part: &str| part.contains(['*', '?', '[', '{', '\\']);
    let parts: Vec<&str> = pattern.split('/').collect();
    let literal = parts
        .iter()
        .position(|p| is_glob(p))
        .unwrap_or(parts.len().saturating_sub(1));
    let prefix = parts[..literal].join("/");
    let prefix = if pattern.starts_with('/') && prefix.is_empty() {
        "/".to_string()
    } else {
        prefix
    };
    (prefix, parts[literal..].join("/"))
}

fn render(o: &GlobOutput, limit: usize) -> String {
    if o.files.is_empty() && !o.truncated {
        return format!("No files match {} under {}.", o.pattern, o.path);
    }
    let mut text = o.files.join("\n");
    text.push('\n');
    match o.truncated_by {
        Some("limit") => text.push_str(&format!(
            "[Showing the {limit} newest of {} matching files. Narrow the pattern or `path`, or raise `limit` (at most {GLOB_MAX_RESULTS})]",
            o.matched
        )),
        Some(_) => text.push_str(&format!(
            "[The walk ran out of its {} s time budget: showing the newest of the {} matching files found so far. Narrow the pattern or `path`]",
            walk::TIME_BUDGET.as_secs(),
            o.matched
        )),
        None => {}
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literal_leading_directories_narrow_the_walk() {
        let split = |p: &str| split_literal(p);
        assert_eq!(split("src/**/*.rs"), ("src".into(), "**/*.rs".into()));
        assert_eq!(split("**/*.rs"), ("".into(), "**/*.rs".into()));
        assert_eq!(split("*.toml"), ("".into(), "*.toml".into()));
        assert_eq!(split("src/main.rs"), ("src".into(), "main.rs".into()));
        assert_eq!(split("a/b/*.{c,h}"), ("a/b".into(), "*.{c,h}".into()));
        assert_eq!(split("/abs/dir/**/x"), ("/abs/dir".into(), "**/x".into()));
        assert_eq!(split("/x*"), ("/".into(), "x*".into()));
    }
}
