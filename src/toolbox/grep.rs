//! `grep`: a regular expression searched through a file or a tree, in-process with
//! ripgrep's own crates (`grep-regex`, `grep-searcher`, and `ignore` for the walk),
//! so no `rg` process starts and nothing depends on one being installed.
//!
//! Files are searched in parallel, binary files (a NUL byte) skipped as ripgrep
//! skips them, and the answer is bounded three ways, each said in the answer when it
//! cut: a number of results (`limit`), a size ([`OUTPUT_MAX_BYTES`]) and a time
//! budget ([`super::walk::TIME_BUDGET`]). Results are sorted by path and line.

use super::args::{GREP_DEFAULT_RESULTS, GREP_MAX_CONTEXT, GREP_MAX_RESULTS, GrepArgs, OutputMode};
use super::policy::FilePolicy;
use super::walk::{self, Shown};
use super::{Answer, ToolError};
use grep_regex::RegexMatcher;
use grep_searcher::{BinaryDetection, Searcher, SearcherBuilder, Sink, SinkContext, SinkMatch};
use serde::Serialize;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Bytes of one matching line shown; the rest is replaced by a marker.
pub const LINE_MAX_BYTES: usize = 500;
/// Bytes of results kept (paths and lines); past it the search stops and says so.
pub const OUTPUT_MAX_BYTES: usize = 256 * 1024;

/// What `grep` found.
#[derive(Debug, Clone, Serialize)]
pub struct GrepOutput {
    pub pattern: String,
    /// The file or directory searched, as given (`.` for the server's directory).
    pub path: String,
    pub output_mode: OutputMode,
    /// `files`: the files with a match, sorted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<Vec<String>>,
    /// `lines`: the matching lines (and context lines), by path and line number.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub matches: Option<Vec<GrepLine>>,
    /// `count`: the number of matching lines in each file with a match.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub counts: Option<Vec<FileCount>>,
    /// Files with a match among those searched.
    pub matched_files: u64,
    /// Regular files searched (binary ones included).
    pub searched_files: u64,
    /// Whether the search stopped before the end; `truncated_by` says why.
    pub truncated: bool,
    /// `limit` (more results than asked for), `size` (the answer reached its size
    /// cap) or `time` (the time budget ran out); `null` when complete.
    pub truncated_by: Option<&'static str>,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct GrepLine {
    pub path: String,
    /// 1-based.
    pub line: u64,
    /// The line, without its line break; cut at [`LINE_MAX_BYTES`] with a marker.
    pub text: String,
    /// A line shown around a match (`context`), not a match itself.
    pub context: bool,
}

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct FileCount {
    pub path: String,
    pub count: u64,
}

pub fn grep(policy: &FilePolicy, args: GrepArgs) -> Result<Answer, ToolError> {
    grep_within(policy, args, walk::TIME_BUDGET)
}

/// One file's findings.
struct FileResult {
    path: String,
    count: u64,
    lines: Vec<GrepLine>,
}

/// What every search thread shares.
struct Shared {
    mode: OutputMode,
    limit: usize,
    deadline: Instant,
    results: AtomicUsize,
    bytes: AtomicUsize,
    searched: AtomicU64,
    stop: AtomicBool,
    truncated_by: Mutex<Option<&'static str>>,
    found: Mutex<Vec<FileResult>>,
}

impl Shared {
    fn cut(&self, why: &'static str) {
        self.stop.store(true, Ordering::Relaxed);
        let mut t = self.truncated_by.lock().unwrap_or_else(|p| p.into_inner());
        t.get_or_insert(why);
    }

    /// Claim room for one more result of `bytes`; `false` (and the search stops) when
    /// there is none.
    fn claim(&self, bytes: usize) -> bool {
        if self.stop.load(Ordering::Relaxed) {
            return false;
        }
        if Instant::now() >= self.deadline {
            self.cut("time");
            return false;
        }
        if self.results.fetch_add(1, Ordering::Relaxed) >= self.limit {
            self.cut("limit");
            return false;
        }
        if self.bytes.fetch_add(bytes, Ordering::Relaxed) + bytes > OUTPUT_MAX_BYTES {
            self.cut("size");
            return false;
        }
        true
    }
}

/// [`grep`] with a time budget of its own (tests give it none).
pub fn grep_within(
    policy: &FilePolicy,
    args: GrepArgs,
    budget: Duration,
) -> Result<Answer, ToolError> {
    let bad = |message: String| ToolError::Arguments {
        tool: "grep",
        message,
    };
    if args.pattern.is_empty() {
        return Err(bad("`pattern` is empty: give a regular expression".into()));
    }
    let mode = args.output_mode.unwrap_or_default();
    let limit = args.limit.unwrap_or(GREP_DEFAULT_RESULTS);
    if !(1..=GREP_MAX_RESULTS).contains(&limit) {
        return Err(bad(format!(
            "`limit` must be 1-{GREP_MAX_RESULTS}, not {limit}"
        )));
    }
    let context = args.context.unwrap_or(0);
    if context > GREP_MAX_CONTEXT {
        return Err(bad(format!(
            "`context` must be 0-{GREP_MAX_CONTEXT} lines, not {context}"
        )));
    }
    let matcher = grep_regex::RegexMatcherBuilder::new()
        .case_insensitive(args.case_insensitive.unwrap_or(false))
        .line_terminator(Some(b'\n'))
        .build(&args.pattern)
        .map_err(|e| bad(format!("`pattern` is not a valid regular expression: {e}")))?;
    let given = args.path.clone().unwrap_or_else(|| ".".into());
    let at = policy.locate(&given).map_err(ToolError::Path)?;
    policy.check_read("grep", &at)?;
    if !at.target.exists() {
        return Err(ToolError::Path(format!(
            "{}: no such file or directory",
            at.describe()
        )));
    }
    let mut builder = walk::walker(policy, &at.target);
    if let Some(glob) = args.glob.as_deref().filter(|g| !g.trim().is_empty()) {
        let mut o = ignore::overrides::OverrideBuilder::new(&at.target);
        o.add(glob)
            .map_err(|e| bad(format!("`glob` is not a valid glob: {e}")))?;
        builder.overrides(o.build().map_err(|e| bad(format!("`glob`: {e}")))?);
    }
    let shared = Shared {
        mode,
        limit,
        deadline: walk::deadline(budget),
        results: AtomicUsize::new(0),
        bytes: AtomicUsize::new(0),
        searched: AtomicU64::new(0),
        stop: AtomicBool::new(false),
        truncated_by: Mutex::new(None),
        found: Mutex::new(Vec::new()),
    };
    let shown = Shown::new(policy);
    let show_context = if mode == OutputMode::Lines {
        context
    } else {
        0
    };
    builder.build_parallel().run(|| {
        let mut searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .before_context(show_context)
            .after_context(show_context)
            .build();
        let (shared, matcher, shown) = (&shared, &matcher, &shown);
        Box::new(move |entry| {
            if shared.stop.load(Ordering::Relaxed) {
                return ignore::WalkState::Quit;
            }
            if Instant::now() >= shared.deadline {
                shared.cut("time");
                return ignore::WalkState::Quit;
            }
            let Ok(entry) = entry else {
                return ignore::WalkState::Continue;
            };
            if !entry.file_type().is_some_and(|t| t.is_file()) {
                return ignore::WalkState::Continue;
            }
            search_file(&mut searcher, matcher, shared, shown, entry.path());
            ignore::WalkState::Continue
        })
    });
    let output = collect(args.pattern, given, shared);
    let text = render(&output);
    Answer::new(text, &output)
}

fn search_file(
    searcher: &mut Searcher,
    matcher: &RegexMatcher,
    shared: &Shared,
    shown: &Shown,
    path: &std::path::Path,
) {
    // Opened without following links (the walk's paths have none).
    let Ok((file, _)) = super::files::open_read(path) else {
        return;
    };
    shared.searched.fetch_add(1, Ordering::Relaxed);
    let mut sink = FileSink {
        shared,
        path: shown.path(path),
        count: 0,
        lines: Vec::new(),
        binary: false,
        claimed: 0,
    };
    let _ = searcher.search_file(matcher, &file, &mut sink);
    if sink.binary {
        // Matches before the NUL were counted; the file is skipped as ripgrep does.
        shared.results.fetch_sub(sink.claimed, Ordering::Relaxed);
        return;
    }
    if sink.count > 0 {
        shared
            .found
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(FileResult {
                path: sink.path,
                count: sink.count,
                lines: sink.lines,
            });
    }
}

struct FileSink<'a> {
    shared: &'a Shared,
    path: String,
    count: u64,
    lines: Vec<GrepLine>,
    binary: bool,
    claimed: usize,
}

impl FileSink<'_> {
    fn push(&mut self, line: u64, bytes: &[u8], context: bool) {
        self.lines.push(GrepLine {
            path: self.path.clone(),
            line,
            text: shown_line(bytes),
            context,
        });
    }
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        match self.shared.mode {
            OutputMode::Files | OutputMode::Count if self.count > 0 => {
                self.count += 1;
                // A file is one result: its first match claimed it.
                Ok(self.shared.mode == OutputMode::Count
                    && !self.shared.stop.load(Ordering::Relaxed))
            }
            OutputMode::Files | OutputMode::Count => {
                if !self.shared.claim(self.path.len() + 16) {
                    return Ok(false);
                }
                self.claimed += 1;
                self.count += 1;
                Ok(self.shared.mode == OutputMode::Count)
            }
            OutputMode::Lines => {
                let bytes = m.bytes().len().min(LINE_MAX_BYTES) + self.path.len() + 16;
                if !self.shared.claim(bytes) {
                    return Ok(false);
                }
                self.claimed += 1;
                self.count += 1;
                self.push(m.line_number().unwrap_or(0), m.bytes(), false);
                Ok(true)
            }
        }
    }

    fn context(&mut self, _: &Searcher, c: &SinkContext<'_>) -> Result<bool, std::io::Error> {
        if self.shared.stop.load(Ordering::Relaxed) {
            return Ok(false);
        }
        let bytes = c.bytes().len().min(LINE_MAX_BYTES) + self.path.len() + 16;
        self.shared.bytes.fetch_add(bytes, Ordering::Relaxed);
        self.push(c.line_number().unwrap_or(0), c.bytes(), true);
        Ok(true)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, std::io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// A line as shown: without its line break, invalid UTF-8 replaced, cut at
/// [`LINE_MAX_BYTES`] on a character boundary with a marker.
fn shown_line(bytes: &[u8]) -> String {
    let bytes = bytes.strip_suffix(b"\n").unwrap_or(bytes);
    let bytes = bytes.strip_suffix(b"\r").unwrap_or(bytes);
    if bytes.len() <= LINE_MAX_BYTES {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    let mut cut = LINE_MAX_BYTES;
    while cut > LINE_MAX_BYTES - 3 && (bytes[cut] & 0xC0) == 0x80 {
        cut -= 1;
    }
    format!(
        "{}… [line cut: {} more]",
        String::from_utf8_lossy(&bytes[..cut]),
        crate::output::notice::format_size((bytes.len() - cut) as u64)
    )
}

fn collect(pattern: String, path: String, shared: Shared) -> GrepOutput {
    let mut found = shared.found.into_inner().unwrap_or_else(|p| p.into_inner());
    found.sort_unstable_by(|a, b| a.path.cmp(&b.path));
    let truncated_by = shared
        .truncated_by
        .into_inner()
        .unwrap_or_else(|p| p.into_inner());
    let mode = shared.mode;
    let mut output = GrepOutput {
        pattern,
        path,
        output_mode: mode,
        files: None,
        matches: None,
        counts: None,
        matched_files: found.len() as u64,
        searched_files: shared.searched.into_inner(),
        truncated: truncated_by.is_some(),
        truncated_by,
    };
    match mode {
        OutputMode::Files => output.files = Some(found.into_iter().map(|f| f.path).collect()),
        OutputMode::Count => {
            output.counts = Some(
                found
                    .into_iter()
                    .map(|f| FileCount {
                        path: f.path,
                        count: f.count,
                    })
                    .collect(),
            )
        }
        OutputMode::Lines => {
            output.matches = Some(found.into_iter().flat_map(|f| f.lines).collect());
        }
    }
    output
}

/// What the model reads: ripgrep's own output format (`path:line:text`, context
/// lines as `path-line-text`, `--` between groups), then what was cut.
fn render(o: &GrepOutput) -> String {
    let mut text = String::new();
    if let Some(files) = &o.files {
        for f in files {
            text.push_str(f);
            text.push('\n');
        }
    }
    if let Some(counts) = &o.counts {
        for c in counts {
            text.push_str(&format!("{}:{}\n", c.path, c.count));
        }
    }
    if let Some(lines) = &o.matches {
        let grouped = lines.iter().any(|l| l.context);
        let mut previous: Option<(&str, u64)> = None;
        for l in lines {
            if let Some((path, line)) = previous
                && grouped
                && (path != l.path || line + 1 != l.line)
            {
                text.push_str("--\n");
            }
            let sep = if l.context { '-' } else { ':' };
            text.push_str(&format!("{}{sep}{}{sep}{}\n", l.path, l.line, l.text));
            previous = Some((&l.path, l.line));
        }
    }
    if o.matched_files == 0 && !o.truncated {
        return format!(
            "No matches for /{}/ in {} ({} searched).",
            o.pattern,
            o.path,
            crate::output::notice::count(o.searched_files, "file")
        );
    }
    if let Some(why) = o.truncated_by {
        let found = match o.output_mode {
            OutputMode::Lines => crate::output::notice::count(
                o.matches
                    .as_ref()
                    .map_or(0, |m| m.iter().filter(|l| !l.context).count()) as u64,
                "matching line",
            ),
            _ => crate::output::notice::count(o.matched_files, "file"),
        };
        let reason = match why {
            "limit" => "more results than `limit`".to_string(),
            "size" => format!(
                "the answer reached {}",
                crate::output::notice::format_size(OUTPUT_MAX_BYTES as u64)
            ),
            _ => format!(
                "the search ran out of its {} s time budget",
                walk::TIME_BUDGET.as_secs()
            ),
        };
        text.push_str(&format!(
            "[Search stopped early ({reason}): showing {found} from {} searched. Narrow `path`, `glob` or the pattern{}]",
            crate::output::notice::count(o.searched_files, "file"),
            if why == "limit" {
                format!(", or raise `limit` (at most {GREP_MAX_RESULTS})")
            } else {
                String::new()
            }
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::profile::Profile;

    fn args(pattern: &str, mode: OutputMode) -> GrepArgs {
        GrepArgs {
            pattern: pattern.into(),
            path: None,
            glob: None,
            case_insensitive: None,
            context: None,
            output_mode: Some(mode),
            limit: None,
        }
    }

    #[test]
    fn the_time_budget_ends_a_search_and_says_so() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::write(dir.path().join("a.txt"), "needle\n").expect("write");
        let policy = FilePolicy::new(&Profile::default(), dir.path());
        let answer = grep_within(&policy, args("needle", OutputMode::Files), Duration::ZERO)
            .expect("answers");
        assert_eq!(answer.data["truncated_by"], "time", "{}", answer.data);
        assert!(
            answer.text.contains("ran out of its 10 s time budget"),
            "{}",
            answer.text
        );
        let answer = grep_within(
            &policy,
            args("needle", OutputMode::Files),
            walk::TIME_BUDGET,
        )
        .expect("answers");
        assert_eq!(
            answer.data["files"],
            serde_json::json!(["a.txt"]),
            "{}",
            answer.data
        );
        assert_eq!(answer.data["truncated"], false);
    }

    #[test]
    fn long_lines_are_cut_with_a_marker() {
        let line = format!("{}\r\n", "x".repeat(LINE_MAX_BYTES + 10));
        let shown = shown_line(line.as_bytes());
        assert!(shown.ends_with("… [line cut: 10B more]"), "{shown:.30}");
        assert_eq!(shown_line(b"short\r\n"), "short");
    }
}
