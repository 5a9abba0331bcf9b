//! Renderers: text for people, JSON/NDJSON for programs. Each receives the
//! run's events as they happen and the final result once.

pub mod json;
pub mod text;

use crate::pipeline::Event;
use crate::result::RunResult;

pub trait Renderer {
    fn event(&mut self, event: Event<'_>);
    fn finish(&mut self, result: &RunResult);
}

/// `--color` resolution: `auto` honours `NO_COLOR`, then `CLICOLOR_FORCE`, then
/// GitHub Actions (its job log renders ANSI colour although stdout is a pipe), then
/// whether stdout is a terminal.
/// When to colour (`--color`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum, Default)]
pub enum Color {
    #[default]
    Auto,
    Always,
    Never,
}

pub fn color_enabled(arg: Color, is_tty: bool) -> bool {
    match arg {
        Color::Always => true,
        Color::Never => false,
        Color::Auto => {
            let set = |k: &str| std::env::var_os(k).is_some_and(|v| !v.is_empty() && v != "0");
            let github = std::env::var("GITHUB_ACTIONS").as_deref() == Ok("true");
            if std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty()) {
                false
            } else {
                set("CLICOLOR_FORCE") || github || is_tty
            }
        }
    }
}

/// Write to stdout, treating a closed pipe as "nobody is listening" rather than an error.
pub fn out(s: &str) {
    use std::io::Write;
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(s.as_bytes());
    let _ = o.flush();
}

/// [`out`] for text that quotes the caller or a file (a command, a path, a rule pack's
/// words): its control characters are shown escaped, its lines kept.
pub fn out_escaped(s: &str) {
    out(&crate::display::escape_controls_multiline(s));
}

/// `agentbash: <message>` on stderr. Messages quote paths, names and commands, so
/// their control characters are shown escaped.
pub fn report_error(message: impl std::fmt::Display) {
    err(&format!(
        "agentbash: {}\n",
        crate::display::escape_controls_multiline(&message.to_string())
    ));
}

pub fn err(s: &str) {
    use std::io::Write;
    let mut o = std::io::stderr().lock();
    let _ = o.write_all(s.as_bytes());
    let _ = o.flush();
}
