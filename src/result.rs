//! The §7.2 result: one struct, serialized as-is for `--format json`, the last NDJSON
//! event, the RPC response and the MCP structured content.

use crate::exec::KilledProcess;
use crate::output::artifact::ArtifactRef;
use crate::output::sink::Truncation;
use crate::stages::Mode;
use serde::Serialize;

#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub struct Blocked {
    /// The interceptor rule id, `guard:<check>`, or a `deny` rule's id.
    pub rule: String,
    /// The tool to use instead; `null` when the guard or a `deny` rule refused.
    pub tool: Option<String>,
    pub message: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct RunResult {
    pub command: String,
    pub normalized_command: String,
    pub stripped: Option<String>,
    pub profile: String,
    pub cwd: String,
    pub final_cwd: String,
    pub mode: Mode,
    pub session: Option<String>,
    pub exit_code: Option<i32>,
    pub signal: Option<String>,
    pub timed_out: bool,
    pub cancelled: bool,
    pub blocked: Option<Blocked>,
    pub duration_ms: u64,
    pub timeout_s: u64,
    pub requested_timeout_s: i64,
    pub head: Option<usize>,
    pub tail: Option<usize>,
    pub output: String,
    pub text: String,
    pub truncated: bool,
    pub total_bytes: u64,
    pub total_lines: u64,
    pub output_bytes: u64,
    pub output_lines: u64,
    pub truncation: Option<Truncation>,
    pub artifact: Option<ArtifactRef>,
    /// `--stderr separate`: the command's stderr, kept apart from `output` (which then
    /// holds stdout only). Absent when stderr is merged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub stderr: Option<StderrOutput>,
    pub background_killed: Vec<KilledProcess>,
    pub notices: Vec<String>,
    pub warnings: Vec<String>,
    /// agentbash's own failure (exit 125), when it did not get to run the command.
    pub error: Option<String>,
    /// The command's shaped output alone: no annotation, no `(no output)` (what a
    /// pipe receives).
    #[serde(skip)]
    pub body: String,
    /// The exit code agentbash itself exits with.
    #[serde(skip)]
    pub agentbash_exit: i32,
    /// The line that says why the run ended early (`[Command timed out after 5
    /// seconds]`, `[Command cancelled]`, a session wait), also the first line of
    /// `text` and the first notice (never part of `output`); renderers show it first.
    #[serde(skip)]
    pub annotation: Option<String>,
}

/// The command's stderr under `--stderr separate`: retained like the output (its own
/// `output.max_bytes` budget, head and column cap; line limits are the output's
/// alone, as a real `| head` would see only stdout), with its own artifact when cut.
#[derive(Debug, Clone, Default, Serialize)]
pub struct StderrOutput {
    pub output: String,
    pub truncated: bool,
    pub total_bytes: u64,
    pub total_lines: u64,
    pub output_bytes: u64,
    pub output_lines: u64,
    pub truncation: Option<Truncation>,
    pub artifact: Option<ArtifactRef>,
}

/// `SIGKILL` for 9, etc.
pub fn signal_name(sig: i32) -> String {
    let name = match sig {
        libc::SIGHUP => "SIGHUP",
        libc::SIGINT => "SIGINT",
        libc::SIGQUIT => "SIGQUIT",
        libc::SIGILL => "SIGILL",
        libc::SIGTRAP => "SIGTRAP",
        libc::SIGABRT => "SIGABRT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGKILL => "SIGKILL",
        libc::SIGUSR1 => "SIGUSR1",
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGUSR2 => "SIGUSR2",
        libc::SIGPIPE => "SIGPIPE",
        libc::SIGALRM => "SIGALRM",
        libc::SIGTERM => "SIGTERM",
        libc::SIGXCPU => "SIGXCPU",
        libc::SIGXFSZ => "SIGXFSZ",
        _ => return format!("SIG{sig}"),
    };
    name.to_string()
}
