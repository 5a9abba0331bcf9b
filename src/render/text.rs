//! `--format text`.
//!
//! On a terminal: a header, a live region while the command runs (spinner, elapsed
//! time, the last lines), then a collapsed preview, a warning line for cuts, and a
//! footer; a preview that hides lines names the artifact that keeps them. Into a
//! pipe: stdout carries only the command's shaped output, and agentbash's own words go
//! to stderr. With `render.live = "stream"` (`--stream`) the output is written as it
//! is produced, on a terminal too (then there is no live region and no preview).

use super::{Renderer, err, out};
use crate::config::profile::Live;
use crate::display::{escape_controls, escape_controls_multiline};
use crate::output::notice::count;
use crate::pipeline::{Event, Preview};
use crate::result::RunResult;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use owo_colors::OwoColorize;
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// Lines wider than this are clamped on display (the result keeps them whole).
const DISPLAY_CLAMP: usize = 4000;
const LIVE_LINES: usize = 5;

pub struct TextRenderer {
    pub tty: bool,
    pub color: bool,
    pub quiet: bool,
    pub expand: bool,
    pub live: Live,
    pub preview: Preview,
    /// ` -p NAME` for `agentbash artifact show` when the run's profile is not the
    /// default one (its artifacts may live elsewhere).
    pub profile_flag: String,
    pub invoking_dir: String,
    /// GitHub Actions: wrap output in a group, annotate failures.
    pub github: bool,
    started: Option<Instant>,
    bar: Option<ProgressBar>,
    last: VecDeque<String>,
    partial: String,
    streamed: bool,
    /// The streamed text so far ends inside a line.
    stream_open: bool,
    /// Characters streamed on the current line (for the display clamp).
    stream_col: usize,
    /// The command's stderr since its last line break (terminal only).
    err_partial: String,
    /// The command's text on stdout (a pipe) does not end with a newline.
    mid_line: bool,
    /// An interactive PTY viewport was on screen during the run.
    viewport: bool,
    group_open: bool,
}

impl TextRenderer {
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        tty: bool,
        color: bool,
        quiet: bool,
        expand: bool,
        live: Live,
        preview: Preview,
        profile_flag: String,
        invoking_dir: String,
        github: bool,
    ) -> Self {
        TextRenderer {
            tty,
            color,
            quiet,
            expand,
            live,
            preview,
            profile_flag,
            invoking_dir,
            github,
            started: None,
            bar: None,
            last: VecDeque::new(),
            partial: String::new(),
            streamed: false,
            stream_open: false,
            stream_col: 0,
            err_partial: String::new(),
            mid_line: false,
            viewport: false,
            group_open: false,
        }
    }

    fn paint(&self, s: &str, style: owo_colors::Style) -> String {
        if self.color {
            s.style(style).to_string()
        } else {
            s.to_string()
        }
    }

    fn live_message(&self) -> String {
        self.last
            .iter()
            .map(|l| format!("  {}", clamp_display(l, 200)))
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn remember(&mut self, data: &str) {
        self.partial.push_str(data);
        while let Some(p) = self.partial.find('\n') {
            let line: String = self.partial.drain(..=p).collect();
            self.last.push_back(line.trim_end_matches('\n').to_string());
            if self.last.len() > LIVE_LINES {
                self.last.pop_front();
            }
        }
        if self.partial.len() > 4096 {
            let keep = self.partial.len() - 1024;
            let mut cut = keep;
            while !self.partial.is_char_boundary(cut) {
                cut += 1;
            }
            self.partial.drain(..cut);
        }
    }

    /// Streamed text for a terminal: sanitized already; a line past
    /// [`DISPLAY_CLAMP`] characters ends in `…` (how much was left out is not known
    /// yet while it streams).
    fn clamp_streamed(&mut self, data: &str) -> String {
        let mut shown = String::with_capacity(data.len());
        for c in data.chars() {
            if c == '\n' {
                self.stream_col = 0;
                shown.push(c);
                continue;
            }
            if self.stream_col < DISPLAY_CLAMP {
                shown.push(c);
            } else if self.stream_col == DISPLAY_CLAMP {
                shown.push('…');
            }
            self.stream_col = self.stream_col.saturating_add(1);
        }
        shown
    }

    /// The command's own stderr (`--stderr separate`), to ours as it is produced. On
    /// a terminal whole lines only, above the live region.
    fn stderr(&mut self, data: &str) {
        if !self.tty {
            err(data);
            return;
        }
        self.err_partial.push_str(data);
        let Some(end) = self.err_partial.rfind('\n') else {
            return;
        };
        let lines: String = self.err_partial.drain(..=end).collect();
        match &self.bar {
            Some(bar) => bar.suspend(|| err(&lines)),
            None => err(&lines),
        }
    }

    fn finish_tty(&mut self, r: &RunResult) {
        if let Some(bar) = self.bar.take() {
            bar.finish_and_clear();
        }
        if !self.err_partial.is_empty() {
            err(&format!("{}\n", std::mem::take(&mut self.err_partial)));
        }
        if let Some(refusal) = self.tty_refusal(r) {
            out(&refusal);
            return;
        }
        let mut s = String::new();
        // Why the run ended early comes first, never hidden by the preview (the
        // viewport leaves the final screen in view, but cannot show this either).
        if let Some(a) = &r.annotation {
            s.push_str(&self.paint(a, red_bold()));
            s.push('\n');
        }
        if self.streamed && self.stream_open {
            // The stream ended inside a line.
            s.push('\n');
        }
        self.push_tty_lines(&mut s, r);
        if !self.quiet {
            self.push_tty_status(&mut s, r);
        }
        out(&s);
    }

    /// A blocked or failed run on a terminal: the headline and the message that
    /// stand in place of output (nothing ran, or it could not be run).
    fn tty_refusal(&self, r: &RunResult) -> Option<String> {
        let mut s = String::new();
        if let Some(b) = &r.blocked {
            let headline = match &b.tool {
                Some(tool) => format!("✖ blocked by rule `{}` (use the `{tool}` tool)", b.rule),
                None => format!("✖ refused by the guard (`{}`)", b.rule),
            };
            s.push_str(&self.paint(
                &escape_controls(&headline),
                owo_colors::Style::new().red().bold(),
            ));
            s.push('\n');
            s.push_str(&escape_controls_multiline(&r.text));
            s.push('\n');
            return Some(s);
        }
        let e = r.error.as_ref()?;
        s.push_str(&self.paint(
            &format!("agentbash: {}", escape_controls_multiline(e)),
            owo_colors::Style::new().red().bold(),
        ));
        s.push('\n');
        Some(s)
    }

    /// The output's last lines on a terminal (the preview), after a line saying how
    /// many earlier ones the artifact holds; none when they were streamed or the
    /// viewport shows them.
    fn push_tty_lines(&self, s: &mut String, r: &RunResult) {
        // The output's lines: its final newline ends the last one.
        let lines: Vec<&str> = match (r.body.is_empty(), &r.annotation) {
            (false, _) => r
                .body
                .strip_suffix('\n')
                .unwrap_or(&r.body)
                .split('\n')
                .collect(),
            // `(no output)`; after an annotation, nothing.
            (true, None) => vec!["(no output)"],
            (true, Some(_)) => vec![],
        };
        let n = lines.len();
        let show = if (self.viewport && !self.expand) || self.streamed {
            0
        } else if self.expand || self.quiet || r.artifact.is_none() {
            // Nothing would hold a hidden line: show them all.
            n
        } else {
            self.preview.lines(r.agentbash_exit != 0).min(n)
        };
        if show < n && !self.viewport && !self.streamed {
            let hidden = n - show;
            let id = r.artifact.as_ref().map_or(0, |a| a.id);
            s.push_str(&self.paint(
                &format!(
                    "… {} hidden · agentbash artifact show{} {id}",
                    count(hidden as u64, "earlier line"),
                    self.profile_flag
                ),
                owo_colors::Style::new().dimmed(),
            ));
            s.push('\n');
        }
        for l in &lines[n - show..] {
            s.push_str(&clamp_display(l, DISPLAY_CLAMP));
            s.push('\n');
        }
    }

    /// What agentbash says after the output on a terminal: its notices, warnings,
    /// and the status line (exit, duration, timeout).
    fn push_tty_status(&self, s: &mut String, r: &RunResult) {
        let dim = owo_colors::Style::new().dimmed();
        let yellow = owo_colors::Style::new().yellow();
        for note in own_notices(r) {
            let note = escape_controls(note);
            if note.starts_with("[Showing") {
                s.push_str(&self.paint(&format!("⚠ output cut: {note}"), yellow));
            } else {
                s.push_str(&self.paint(&note, dim));
            }
            s.push('\n');
        }
        for w in &r.warnings {
            let w = escape_controls(w);
            s.push_str(&self.paint(&format!("warning: {w}"), yellow));
            s.push('\n');
        }
        let code = r.exit_code.map_or("-".to_string(), |c| c.to_string());
        let status = if r.timed_out {
            format!("timed out (exit {code})")
        } else if r.cancelled {
            format!("cancelled (exit {code})")
        } else {
            format!("exit {code}")
        };
        let status_style = if r.exit_code == Some(0) {
            owo_colors::Style::new().green().bold()
        } else {
            owo_colors::Style::new().red().bold()
        };
        s.push_str(&format!(
            "{} {}\n",
            self.paint(&status, status_style),
            self.paint(
                &format!(
                    "· {} · timeout {}s",
                    format_duration(r.duration_ms),
                    r.timeout_s
                ),
                dim
            )
        ));
    }

    fn finish_pipe(&mut self, r: &RunResult) {
        if r.blocked.is_some() || r.error.is_some() {
            if self.github {
                self.close_group();
                out(&github_error(r));
            }
            match &r.error {
                // The block message is the answer the caller gets instead of output.
                None => out(&format!("{}\n", escape_controls_multiline(&r.text))),
                Some(e) => err(&format!(
                    "{}\n",
                    self.paint(
                        &format!("agentbash: {}", escape_controls_multiline(e)),
                        red_bold()
                    )
                )),
            }
            return;
        }
        if self.github && !self.group_open {
            out(&github_group(&r.normalized_command));
            self.group_open = true;
        }
        if !self.streamed {
            // Only the command's own text, byte for byte: annotations and notices are
            // ours, and nothing is added (`echo -n hi` gives `hi`, `true` nothing).
            self.write_output(&r.body);
        }
        if self.github {
            self.close_group();
            if r.agentbash_exit != 0 {
                out(&github_error(r));
            }
        }
        if self.quiet {
            return;
        }
        let mut s = String::new();
        let line = |s: &mut String, text: &str, style| {
            s.push_str(&self.paint(text, style));
            s.push('\n');
        };
        if let Some(a) = &r.annotation {
            line(&mut s, a, red_bold());
        }
        for note in own_notices(r) {
            let style = if note.starts_with("[Showing") {
                owo_colors::Style::new().yellow()
            } else {
                owo_colors::Style::new().dimmed()
            };
            line(&mut s, &escape_controls(note), style);
        }
        for w in &r.warnings {
            line(
                &mut s,
                &format!("warning: {}", escape_controls(w)),
                owo_colors::Style::new().yellow(),
            );
        }
        err(&s);
    }

    /// The command's text to stdout (a pipe).
    fn write_output(&mut self, text: &str) {
        if !text.is_empty() {
            out(text);
            self.mid_line = !text.ends_with('\n');
        }
    }

    fn close_group(&mut self) {
        if self.group_open {
            if self.mid_line {
                // A workflow command must start a line.
                out("\n");
                self.mid_line = false;
            }
            out("::endgroup::\n");
            self.group_open = false;
        }
    }
}

impl Renderer for TextRenderer {
    fn event(&mut self, event: Event<'_>) {
        match event {
            Event::Start(plan) => self.start(&super::Start::of(plan)),
            Event::Output(data) => {
                if self.live == Live::Stream && !self.viewport {
                    if self.tty {
                        let shown = self.clamp_streamed(data);
                        out(&shown);
                    } else {
                        self.write_output(data);
                    }
                    self.streamed = true;
                    self.stream_open = !data.ends_with('\n');
                    return;
                }
                if !self.tty {
                    return;
                }
                self.remember(data);
                if let Some(bar) = &self.bar {
                    bar.set_message(self.live_message());
                }
            }
            Event::Stderr(data) => self.stderr(data),
            Event::Notice(_) => {}
        }
    }

    fn start(&mut self, start: &super::Start) {
        self.started = Some(Instant::now());
        self.viewport = self.tty
            && start.mode == crate::request::Mode::Pty
            && std::io::IsTerminal::is_terminal(&std::io::stdin());
        if !self.tty {
            // Streamed output goes inside the group as it arrives. A blocked or
            // failed plan never streams, so it gets no group.
            if self.github && self.live == Live::Stream && start.runs() {
                out(&github_group(&start.normalized_command));
                self.group_open = true;
            }
            return;
        }
        if !self.quiet {
            let mut h = format!("$ {}", escape_controls(&start.normalized_command));
            if let (Some(c), Some(shown)) = (start.cwd_path(), &start.cwd)
                && c != self.invoking_dir
            {
                h.push_str(&format!("  (in {})", escape_controls(shown)));
            }
            out(&format!(
                "{}\n",
                self.paint(&h, owo_colors::Style::new().bold())
            ));
        }
        // Streaming on a terminal prints the output itself, as `cat` would.
        if self.live == Live::Tail && start.mode == crate::request::Mode::Print {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stdout());
            let style = ProgressStyle::with_template("{spinner} {elapsed} running…\n{msg}")
                .unwrap_or_else(|_| ProgressStyle::default_spinner());
            bar.set_style(style);
            bar.enable_steady_tick(Duration::from_millis(100));
            self.bar = Some(bar);
        }
    }

    fn finish(&mut self, r: &RunResult) {
        if self.tty {
            self.finish_tty(r);
        } else {
            self.finish_pipe(r);
        }
    }
}

/// The notices other than the annotation, which the renderers show first.
fn own_notices(r: &RunResult) -> impl Iterator<Item = &String> {
    r.notices
        .iter()
        .filter(move |n| Some(*n) != r.annotation.as_ref())
}

/// Clamp a display line to `max` characters: `… [<n> chars omitted]`.
pub fn clamp_display(line: &str, max: usize) -> String {
    let count = line.chars().count();
    if count <= max {
        return line.to_string();
    }
    let kept: String = line.chars().take(max).collect();
    format!(
        "{kept}… [{} omitted]",
        crate::output::notice::count((count - max) as u64, "char")
    )
}

pub fn format_duration(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        format!("{}m{:02}s", ms / 60_000, (ms / 1000) % 60)
    }
}

fn red_bold() -> owo_colors::Style {
    owo_colors::Style::new().red().bold()
}

/// GitHub Actions workflow-command data: `%`, CR and LF are escaped.
fn github_escape(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// `::group::$ <command>`: the job log folds the command's output under its name
/// (on one line: the command's controls and line breaks shown escaped).
fn github_group(command: &str) -> String {
    format!("::group::$ {}\n", github_escape(&escape_controls(command)))
}

/// The `::error` annotation for a run that did not succeed: what happened, the exit
/// code agentbash returns, and where the full output is (for the job's artifact
/// upload).
fn github_error(r: &RunResult) -> String {
    let cmd = escape_controls(&r.normalized_command);
    let code = r.agentbash_exit;
    let mut msg = if let Some(b) = &r.blocked {
        format!(
            "Command `{cmd}` was {} by rule `{}` (exit {code}): {}",
            if b.tool.is_some() {
                "blocked"
            } else {
                "refused"
            },
            b.rule,
            b.message
        )
    } else if let Some(e) = &r.error {
        format!("Command `{cmd}` did not run (exit {code}): {e}")
    } else if r.timed_out {
        format!(
            "Command `{cmd}` timed out after {}s (exit {code})",
            r.timeout_s
        )
    } else if r.cancelled {
        format!("Command `{cmd}` was cancelled (exit {code})")
    } else if let Some(sig) = &r.signal {
        format!("Command `{cmd}` was killed by {sig} (exit {code})")
    } else {
        format!("Command `{cmd}` exited with code {code}")
    };
    if let Some(a) = &r.artifact {
        msg.push_str(&format!("; full output: {}", a.path.display()));
    }
    format!(
        "::error title=agentbash::{}\n",
        github_escape(&escape_controls_multiline(&msg))
    )
}
