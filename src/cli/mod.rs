//! What the user typed: the clap definition, and nothing else.
//!
//! This is the single source of truth for `--help`, the man page and the shell
//! completions (all generated from it). Turning these raw values into a validated
//! plan happens in `request::RunRequest` and the profile loader, not here.

use clap::{ArgMatches, Args, FromArgMatches, Parser, Subcommand, ValueEnum, ValueHint};
use std::path::PathBuf;

pub mod generated;
mod quick;

pub use crate::config::schema::valid_env_name;
pub use crate::shell::session::parse_session_name;

/// Environment variables agentbash itself reads: `--help`, the man page and the
/// README list them from here.
pub const ENVIRONMENT: &[(&str, &str)] = &[
    (
        "AGENTBASH_PROFILE",
        "profile used when --profile is not given",
    ),
    (
        "AGENTBASH_CONFIG_DIR",
        "user profiles in its profiles/ (default $XDG_CONFIG_HOME/agentbash)",
    ),
    (
        "AGENTBASH_STATE_DIR",
        "artifacts and sessions (default $XDG_STATE_HOME/agentbash)",
    ),
    (
        "AGENTBASH_TRUST_PROJECT",
        "1: use project profiles (.agentbash/profiles) without `agentbash trust` (CI)",
    ),
    ("AGENTBASH_NO_PTY", "1: never use a pseudo-terminal"),
    ("AGENTBASH_NO_CI", "1: do not set CI=true for the command"),
    ("NO_COLOR", "non-empty: no colour under --color auto"),
    (
        "CLICOLOR_FORCE",
        "non-empty, not 0: colour under --color auto, even into a pipe",
    ),
    (
        "GITHUB_ACTIONS",
        "true: ::group:: output, ::error:: annotations, colour",
    ),
    ("SHELL", "shell.path = \"auto\" uses it when it is bash"),
    (
        "XDG_CONFIG_HOME",
        "default base of AGENTBASH_CONFIG_DIR (~/.config)",
    ),
    (
        "XDG_STATE_HOME",
        "default base of AGENTBASH_STATE_DIR (~/.local/state)",
    ),
    ("XDG_CACHE_HOME", "shell rc snapshots (~/.cache)"),
];

/// The text after `--help`: exit codes and environment, from their one definition.
fn after_help() -> String {
    let width = |rows: &[(&str, &str)]| rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    let table = |rows: &[(&str, &str)]| {
        let w = width(rows);
        rows.iter()
            .map(|(k, v)| format!("  {k:<w$}  {v}"))
            .collect::<Vec<_>>()
            .join("\n")
    };
    format!(
        "Exit codes:\n{}\n\nEnvironment:\n{}",
        table(crate::exit::TABLE),
        table(ENVIRONMENT)
    )
}

/// Run shell commands the way coding agents and CI jobs need them run.
#[derive(Debug, Parser)]
#[command(name = "agentbash", version, about)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

impl Cli {
    /// The full definition, including the exit-code and environment tables shown
    /// after the top-level `--help`.
    pub fn definition() -> clap::Command {
        EAGER.store(true, std::sync::atomic::Ordering::Relaxed);
        <Cli as clap::CommandFactory>::command().after_help(after_help())
    }

    /// Parse the process arguments (exiting with clap's message on error). The
    /// common `run` and `explain` lines are read without clap's model (`quick`); the
    /// tables after `--help` are only assembled when help may be shown.
    pub fn parse_args() -> Cli {
        let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
        if let Some(cli) = quick::common(&args, std::env::var_os("AGENTBASH_PROFILE")) {
            return cli;
        }
        let may_show_help = args.len() < 2
            || args[1..]
                .iter()
                .take_while(|a| *a != "--")
                .any(|a| a == "-h" || a == "--help" || a == "help");
        let cmd = if may_show_help {
            Cli::definition()
        } else {
            <Cli as clap::CommandFactory>::command()
        };
        let mut matches = cmd
            .try_get_matches_from(args)
            .unwrap_or_else(|e| exit_with(e));
        Cli::from_arg_matches_mut(&mut matches).unwrap_or_else(|e| exit_with(e))
    }
}

/// Help and version as clap prints them; a usage error quotes what was typed, so it
/// is printed with its control characters escaped (clap would pass them through to a
/// terminal).
fn exit_with(e: clap::Error) -> ! {
    if !e.use_stderr() {
        e.exit()
    }
    let text = e.render().to_string();
    crate::render::err(&crate::display::escape_controls_multiline(&text));
    std::process::exit(e.exit_code())
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run one command.
    Run(Deferred<RunArgs>),
    /// Dry run: show every decision the run would make, run nothing.
    Explain(Deferred<RunArgs>),
    /// NDJSON requests on stdin, responses on stdout.
    Rpc(Deferred<ServerArgs>),
    /// Model Context Protocol server on stdio.
    Mcp(Deferred<McpArgs>),
    /// List, show and check profiles.
    #[command(subcommand)]
    Profile(Deferred<ProfileCommand>),
    /// List, test and check interceptor rules.
    #[command(subcommand)]
    Rules(Deferred<RulesCommand>),
    /// Inspect and clean up spilled output (artifact://ID).
    #[command(subcommand)]
    Artifact(Deferred<ArtifactCommand>),
    /// Inspect and remove persistent sessions.
    #[command(subcommand)]
    Session(Deferred<SessionCommand>),
    /// Inspect and refresh the snapshot of the user's shell rc.
    #[command(subcommand)]
    Snapshot(Deferred<SnapshotCommand>),
    /// Trust a project's own profiles and rule packs (its .agentbash/), list or revoke trust.
    Trust(Deferred<TrustArgs>),
    /// Report what the kernel sandbox can enforce on this machine.
    #[command(subcommand)]
    Sandbox(Deferred<SandboxCommand>),
    /// Background jobs: dev servers, watchers, long builds and REPLs (job://N).
    #[command(subcommand)]
    Job(Deferred<JobCommand>),
    /// Print a shell completion script.
    Completions {
        /// The shell to generate completions for.
        shell: CompletionShell,
    },
    /// Print the roff man page.
    Man,
}

/// A subcommand's arguments, built only when clap enters that subcommand (or builds
/// the whole tree for help, completions and the man page). Building every
/// subcommand's arguments up front is most of clap's share of start-up, and every
/// `agentbash run` pays start-up.
///
/// The generators (help, completions, man page) want the whole tree at once — clap
/// derives `help`'s own nested subcommands from what exists when the top level is
/// built — so [`Cli::definition`] turns deferral off.
#[derive(Debug, Clone)]
pub struct Deferred<T>(pub T);

static EAGER: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn defer(cmd: clap::Command, build: fn(clap::Command) -> clap::Command) -> clap::Command {
    if EAGER.load(std::sync::atomic::Ordering::Relaxed) {
        build(cmd)
    } else {
        cmd.defer(build)
    }
}

impl<T> std::ops::Deref for Deferred<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

impl<T: FromArgMatches> FromArgMatches for Deferred<T> {
    fn from_arg_matches(m: &ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches(m).map(Deferred)
    }
    fn from_arg_matches_mut(m: &mut ArgMatches) -> Result<Self, clap::Error> {
        T::from_arg_matches_mut(m).map(Deferred)
    }
    fn update_from_arg_matches(&mut self, m: &ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches(m)
    }
    fn update_from_arg_matches_mut(&mut self, m: &mut ArgMatches) -> Result<(), clap::Error> {
        self.0.update_from_arg_matches_mut(m)
    }
}

impl<T: Args> Args for Deferred<T> {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        defer(cmd, T::augment_args)
    }
    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        defer(cmd, T::augment_args_for_update)
    }
    fn group_id() -> Option<clap::Id> {
        T::group_id()
    }
}

impl<T: Subcommand> Subcommand for Deferred<T> {
    fn augment_subcommands(cmd: clap::Command) -> clap::Command {
        defer(cmd, T::augment_subcommands)
    }
    fn augment_subcommands_for_update(cmd: clap::Command) -> clap::Command {
        defer(cmd, T::augment_subcommands_for_update)
    }
    fn has_subcommand(name: &str) -> bool {
        T::has_subcommand(name)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompletionShell {
    Bash,
    Zsh,
    Fish,
    Elvish,
    Powershell,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum ModeArg {
    #[default]
    Auto,
    Print,
    Pty,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SandboxArg {
    /// No sandbox: the command runs with your rights.
    Off,
    /// Nothing writable but a private TMPDIR; deny_read and network as in the profile.
    ReadOnly,
    /// The working directory's tree (or [sandbox] workspace) and `writable` too.
    WorkspaceWrite,
}

impl SandboxArg {
    pub fn mode(self) -> crate::sandbox::Mode {
        match self {
            SandboxArg::Off => crate::sandbox::Mode::Off,
            SandboxArg::ReadOnly => crate::sandbox::Mode::ReadOnly,
            SandboxArg::WorkspaceWrite => crate::sandbox::Mode::WorkspaceWrite,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum SandboxCommand {
    /// Probe Landlock, namespaces, network isolation, seccomp and bubblewrap, and say which engine `auto` picks.
    Check {
        /// The report as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum JobCommand {
    /// Start a command as a job; answer once it is ready, has ended, or has run jobs.start_wait_ms.
    Start(JobStartArgs),
    /// A job's record: state, pid, exit code, times, log path and cursor.
    Status {
        /// The job: job://N, N or its name.
        name: String,
        /// The record as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Wait until a job ends, then exit with its exit code (124 when -t runs out first).
    Wait {
        /// The job: job://N, N or its name.
        name: String,
        /// Wait at most this many seconds (default: until it ends).
        #[arg(short = 't', long, value_name = "SECS")]
        timeout: Option<f64>,
        /// The answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Show a job's output: from a cursor, the last lines, a PTY job's screen, or as it comes (--follow).
    Output {
        /// The job: job://N, N or its name.
        name: String,
        /// Read from this byte offset (the `cursor` of the previous read); default: from the start.
        #[arg(long, value_name = "C", conflicts_with_all = ["tail", "screen"])]
        cursor: Option<u64>,
        /// Wait up to this many seconds for output when there is none yet.
        #[arg(long, value_name = "SECS", default_value_t = 0.0)]
        wait: f64,
        /// Only the last N lines.
        #[arg(long, value_name = "N", conflicts_with = "screen")]
        tail: Option<usize>,
        /// The screen of a --pty job, as text rows.
        #[arg(long)]
        screen: bool,
        /// Stream the output as the job prints it, until the job ends.
        #[arg(short, long, conflicts_with_all = ["tail", "screen", "json"])]
        follow: bool,
        /// Return at most this many bytes.
        #[arg(long, value_name = "BYTES", default_value_t = 65536)]
        max_bytes: usize,
        /// The answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Type into a --pty job, or write to a --stdin job; answer with what it printed next.
    Send {
        /// The job: job://N, N or its name.
        name: String,
        /// Text to send (before the keys).
        #[arg(long, value_name = "TEXT")]
        text: Option<String>,
        /// Keys to send after the text: Enter, Tab, Esc, Space, Backspace, Up, Down, Left, Right, C-<letter>.
        #[arg(long, value_name = "KEY", num_args = 1..)]
        keys: Vec<String>,
        /// Collect what the job prints for this many milliseconds after sending.
        #[arg(long, value_name = "N", default_value_t = 500)]
        wait_ms: u64,
        /// The answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Stop a job and its whole process tree (TERM, grace, KILL).
    Stop {
        /// The job: job://N, N or its name.
        name: String,
        /// The answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// List running jobs (a job whose supervisor is gone is marked lost and its processes killed).
    List {
        /// Finished jobs too.
        #[arg(long)]
        all: bool,
        /// The list as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Remove a job that is over: its record and its log.
    Rm {
        /// The job: job://N, N or its name.
        name: String,
        /// The answer as JSON.
        #[arg(long)]
        json: bool,
    },
    /// End what is left of lost jobs; remove jobs that ended more than jobs.keep_exited seconds ago.
    Gc {
        /// Profile name or path to a .toml file (for jobs.keep_exited).
        #[arg(short, long, env = "AGENTBASH_PROFILE", value_name = "NAME|PATH")]
        profile: Option<String>,
        /// The answer as JSON.
        #[arg(long)]
        json: bool,
    },
}

#[derive(Debug, Clone, Args)]
pub struct JobStartArgs {
    /// A name to refer to the job by (instead of job://N).
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Ready once this TCP port accepts and the job's own processes hold the listener.
    #[arg(long, value_name = "PORT", conflicts_with = "ready")]
    pub ready_port: Option<u16>,
    /// Ready once a line of output matches this regular expression.
    #[arg(long, value_name = "REGEX")]
    pub ready: Option<String>,
    /// Stop waiting for readiness after this many seconds (the job keeps running).
    #[arg(long, value_name = "SECS", default_value_t = 30.0)]
    pub ready_timeout: f64,
    /// Run it on a pseudo-terminal (a REPL, a full-screen program).
    #[arg(long)]
    pub pty: bool,
    /// Keep a pipe to its stdin open for `job send`.
    #[arg(long, conflicts_with = "pty")]
    pub stdin: bool,
    /// Stop it after this many seconds (default: the profile's jobs.ttl); a job's timeout.
    #[arg(short = 't', long, visible_alias = "timeout", value_name = "SECS")]
    pub ttl: Option<u64>,
    /// Profile name or path to a .toml file.
    #[arg(short, long, env = "AGENTBASH_PROFILE", value_name = "NAME|PATH")]
    pub profile: Option<String>,
    /// Working directory, relative to the invoking directory.
    #[arg(short = 'C', long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub cwd: Option<PathBuf>,
    /// Comma-separated tools the caller has (for the interceptor); overrides the profile.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Skip the interceptor.
    #[arg(long)]
    pub no_intercept: bool,
    /// Kernel sandbox for this job instead of the profile's [sandbox] mode.
    #[arg(long, value_enum, value_name = "MODE")]
    pub sandbox: Option<SandboxArg>,
    /// Extra environment variable for the command (repeatable).
    #[arg(short, long = "env", value_name = "KEY=VALUE", value_parser = parse_env_pair)]
    pub env: Vec<(String, String)>,
    /// The answer as JSON.
    #[arg(long)]
    pub json: bool,
    /// The command (after --). One word is a shell command text, run as written (`-- 'ls | wc -l'`); several words are an argv, each word shell-quoted before they are joined, so it runs exactly as typed (`-- printf '%s\n' 'a b'` prints `a b`), as `timeout`, `env` and `sudo` treat theirs.
    #[arg(
        required = true,
        trailing_var_arg = true,
        value_name = "COMMAND",
        value_hint = ValueHint::CommandWithArguments
    )]
    pub command: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum FormatArg {
    Text,
    Json,
    Ndjson,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum, Default)]
pub enum StderrArg {
    /// One pipe: stderr interleaved with stdout as produced.
    #[default]
    Merged,
    /// stderr on a pipe of its own: to agentbash's stderr as produced (text), the result's `stderr` (JSON).
    Separate,
}

pub use crate::render::Color as ColorArg;

// Options shared by `run` and `explain`. (A plain comment: a doc comment here would
// become the subcommands' `about`, replacing the variants' own.)
#[derive(Debug, Clone, Args)]
pub struct RunArgs {
    /// Profile name or path to a .toml file.
    #[arg(short, long, env = "AGENTBASH_PROFILE", value_name = "NAME|PATH")]
    pub profile: Option<String>,
    /// Run on the target of profile NAME (its [target] transport); --profile still guards here first.
    #[arg(long, value_name = "NAME")]
    pub target: Option<String>,
    /// Working directory, relative to the invoking directory (or the session's cwd).
    #[arg(short = 'C', long, value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub cwd: Option<PathBuf>,
    /// Requested timeout in seconds, clamped to the profile's allowed range.
    #[arg(short, long, value_name = "SECS", allow_negative_numbers = true, value_parser = parse_timeout)]
    pub timeout: Option<i64>,
    /// Show only the first N lines; the command still runs to completion.
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = parse_line_count)]
    pub head: Option<usize>,
    /// Show only the last N lines; the command still runs to completion.
    #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = parse_line_count)]
    pub tail: Option<usize>,
    /// Execution mode: auto picks a PTY only when the profile allows it and stdin and stdout are terminals.
    #[arg(long, value_enum, value_name = "MODE", conflicts_with_all = ["pty", "no_pty"])]
    pub mode: Option<ModeArg>,
    /// Force PTY mode (same as --mode pty).
    #[arg(long, conflicts_with = "no_pty")]
    pub pty: bool,
    /// Forbid PTY mode (same as --mode print).
    #[arg(long)]
    pub no_pty: bool,
    /// Output format.
    #[arg(long, value_enum, value_name = "FORMAT", conflicts_with = "json")]
    pub format: Option<FormatArg>,
    /// Same as --format json.
    #[arg(long)]
    pub json: bool,
    /// Colour: auto honours NO_COLOR, CLICOLOR_FORCE and GitHub Actions, then whether stdout is a terminal.
    #[arg(long, value_enum, value_name = "WHEN", default_value_t = ColorArg::Auto)]
    pub color: ColorArg,
    /// Comma-separated tools the caller has (for the interceptor); overrides the profile.
    #[arg(long, value_name = "LIST", value_delimiter = ',')]
    pub tools: Option<Vec<String>>,
    /// Skip the interceptor.
    #[arg(long)]
    pub no_intercept: bool,
    /// Kernel sandbox for this run instead of the profile's [sandbox] mode.
    #[arg(long, value_enum, value_name = "MODE")]
    pub sandbox: Option<SandboxArg>,
    /// Extra environment variable for the command (repeatable).
    #[arg(short, long = "env", value_name = "KEY=VALUE", value_parser = parse_env_pair)]
    pub env: Vec<(String, String)>,
    /// Persistent session: cwd, exported variables, functions and aliases carry over.
    #[arg(short, long, value_name = "NAME", value_parser = parse_session_name)]
    pub session: Option<String>,
    /// Give the command agentbash's stdin (default: the null device).
    #[arg(long)]
    pub stdin: bool,
    /// Text format: show the whole retained output instead of the collapsed preview.
    #[arg(long)]
    pub expand: bool,
    /// Text format: write the output as it is produced, into a pipe as on a terminal (the profile's render.live = "stream").
    #[arg(long)]
    pub stream: bool,
    /// The command's stderr: merged into the output (the default), or separate (print mode only).
    // No clap default: building one costs every run's start-up.
    #[arg(long, value_enum, value_name = "HOW")]
    pub stderr: Option<StderrArg>,
    /// Text format: output only, no header, footer or notices.
    #[arg(short, long)]
    pub quiet: bool,
    /// The command. One word is a shell command text, run as written (`-- 'ls | wc -l'`); several words are an argv, each word shell-quoted before they are joined, so it runs exactly as typed (`-- printf '%s\n' 'a b'` prints `a b`), as `timeout`, `env` and `sudo` treat theirs.
    #[arg(
        required = true,
        trailing_var_arg = true,
        value_name = "COMMAND",
        value_hint = ValueHint::CommandWithArguments
    )]
    pub command: Vec<String>,
}

impl RunArgs {
    pub fn mode(&self) -> ModeArg {
        if self.pty {
            ModeArg::Pty
        } else if self.no_pty {
            ModeArg::Print
        } else {
            self.mode.unwrap_or_default()
        }
    }
}

#[derive(Debug, Clone, Args)]
pub struct ServerArgs {
    /// Profile name or path to a .toml file.
    #[arg(short, long, env = "AGENTBASH_PROFILE", value_name = "NAME|PATH")]
    pub profile: Option<String>,
    /// Serve through the target of profile NAME (its [target] transport); --profile still guards here first.
    #[arg(long, value_name = "NAME")]
    pub target: Option<String>,
}

#[derive(Debug, Clone, Args)]
pub struct McpArgs {
    #[command(flatten)]
    pub server: ServerArgs,
    /// Also serve the file tools read, grep, glob, edit and write, under the profile's
    /// sandbox, guard and redaction (default: the profile's mcp.toolbox).
    #[arg(long, overrides_with = "no_toolbox")]
    pub toolbox: bool,
    /// Serve only bash, read_artifact and the job tools, whatever mcp.toolbox says.
    #[arg(long, overrides_with = "toolbox")]
    pub no_toolbox: bool,
}

impl McpArgs {
    /// `--toolbox` / `--no-toolbox`, the last one given; `None`: the profile decides.
    pub fn toolbox(&self) -> Option<bool> {
        if self.toolbox {
            Some(true)
        } else if self.no_toolbox {
            Some(false)
        } else {
            None
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum ProfileCommand {
    /// List every profile that can be found, where it comes from, and what it shadows.
    List {
        /// One name per line, nothing else (for shell completion).
        #[arg(long, hide = true)]
        names: bool,
    },
    /// Show the resolved profile after `extends` and lookup.
    Show {
        /// Profile name or path (default: AGENTBASH_PROFILE or `default`).
        // The id names the value for the completion scripts (commands::generated).
        #[arg(id = "profile", value_name = "NAME|PATH")]
        name: Option<String>,
        /// Annotate each value with the file it came from.
        #[arg(long)]
        origin: bool,
    },
    /// Validate profiles; exit 1 with file:line:col errors.
    Check {
        /// Profile names or paths (default: every profile found, shadowed ones included).
        #[arg(id = "profiles", value_name = "NAME|FILE")]
        names: Vec<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum RulesCommand {
    /// List the rules a profile uses.
    List {
        /// Profile name or path to a .toml file.
        #[arg(short, long, env = "AGENTBASH_PROFILE", value_name = "NAME|PATH")]
        profile: Option<String>,
    },
    /// Show which candidate of a command matches which rule.
    Test {
        /// Profile name or path to a .toml file.
        #[arg(short, long, env = "AGENTBASH_PROFILE", value_name = "NAME|PATH")]
        profile: Option<String>,
        /// Comma-separated tools the caller has; overrides the profile.
        #[arg(long, value_name = "LIST", value_delimiter = ',')]
        tools: Option<Vec<String>>,
        /// The command to test. One word is a shell command text, run as written (`-- 'ls | wc -l'`); several words are an argv, each word shell-quoted before they are joined, so it runs exactly as typed (`-- printf '%s\n' 'a b'` prints `a b`), as `timeout`, `env` and `sudo` treat theirs.
        #[arg(
            required = true,
            trailing_var_arg = true,
            value_name = "COMMAND",
            value_hint = ValueHint::CommandWithArguments
        )]
        command: Vec<String>,
    },
    /// Compile every pattern and run every example of rule packs (default: the built-in packs).
    Check {
        /// Built-in pack names or paths to rule pack files.
        #[arg(id = "packs", value_name = "PACK|FILE")]
        files: Vec<String>,
        /// Also score the packs (together; default: the `default` pack) on a labelled
        /// corpus (`<pass|TOOL><TAB><command>` per line): precision and recall per tool,
        /// every disagreement; exit 1 below the corpus's thresholds.
        #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
        corpus: Option<std::path::PathBuf>,
        /// Print the corpus score as JSON (with --corpus).
        #[arg(long, requires = "corpus")]
        json: bool,
    },
}

#[derive(Debug, Subcommand)]
pub enum ArtifactCommand {
    /// List artifacts: id, size, age, command.
    List {
        /// Profile name or path to a .toml file.
        #[arg(short, long, env = "AGENTBASH_PROFILE", value_name = "NAME|PATH")]
        profile: Option<String>,
    },
    /// Print an artifact's raw content.
    Show {
        /// Artifact id or artifact://ID.
        #[arg(value_name = "ID|URL", allow_negative_numbers = true)]
        id: String,
        /// Only the first N lines.
        #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = parse_line_count)]
        head: Option<usize>,
        /// Only the last N lines (applied after --head).
        #[arg(long, value_name = "N", allow_hyphen_values = true, value_parser = parse_line_count)]
        tail: Option<usize>,
        /// Profile name or path to a .toml file.
        #[arg(short, long, env = "AGENTBASH_PROFILE", value_name = "NAME|PATH")]
        profile: Option<String>,
        /// Read the artifact of a run on the target of profile NAME.
        #[arg(long, value_name = "NAME")]
        target: Option<String>,
    },
    /// Print an artifact's file path.
    Path {
        /// Artifact id or artifact://ID.
        #[arg(value_name = "ID|URL", allow_negative_numbers = true)]
        id: String,
        /// Profile name or path to a .toml file.
        #[arg(short, long, env = "AGENTBASH_PROFILE", value_name = "NAME|PATH")]
        profile: Option<String>,
    },
    /// Remove an artifact.
    Rm {
        /// Artifact id or artifact://ID.
        #[arg(value_name = "ID|URL", allow_negative_numbers = true)]
        id: String,
        /// Profile name or path to a .toml file.
        #[arg(short, long, env = "AGENTBASH_PROFILE", value_name = "NAME|PATH")]
        profile: Option<String>,
    },
    /// Enforce max_total_bytes and max_age_days now.
    Gc {
        /// Say what would be removed, remove nothing.
        #[arg(long)]
        dry_run: bool,
        /// Profile name or path to a .toml file.
        #[arg(short, long, env = "AGENTBASH_PROFILE", value_name = "NAME|PATH")]
        profile: Option<String>,
    },
}

#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// List sessions.
    List,
    /// Show a session's saved state.
    Show {
        /// Session name.
        #[arg(value_parser = parse_session_name)]
        name: String,
    },
    /// Remove a session.
    Rm {
        /// Session name.
        #[arg(value_parser = parse_session_name)]
        name: String,
    },
}

// `agentbash trust`: a project's profiles are used only after this (see src/trust.rs).
#[derive(Debug, Clone, Args)]
pub struct TrustArgs {
    /// Project directory holding .agentbash/ (default: the current directory or its nearest ancestor with one).
    #[arg(value_name = "DIR", value_hint = ValueHint::DirPath)]
    pub dir: Option<PathBuf>,
    /// List trusted projects: when each was trusted and whether its files still match.
    #[arg(long, conflicts_with_all = ["dir", "revoke"])]
    pub list: bool,
    /// Forget the trust given to the project.
    #[arg(long)]
    pub revoke: bool,
}

#[derive(Debug, Subcommand)]
pub enum SnapshotCommand {
    /// Print the snapshot's path and content.
    Show {
        /// Profile name or path to a .toml file.
        #[arg(short, long, env = "AGENTBASH_PROFILE", value_name = "NAME|PATH")]
        profile: Option<String>,
    },
    /// Regenerate the snapshot now.
    Refresh {
        /// Profile name or path to a .toml file.
        #[arg(short, long, env = "AGENTBASH_PROFILE", value_name = "NAME|PATH")]
        profile: Option<String>,
    },
    /// What was captured, what was dropped, and why.
    Report {
        /// Profile name or path to a .toml file.
        #[arg(short, long, env = "AGENTBASH_PROFILE", value_name = "NAME|PATH")]
        profile: Option<String>,
    },
}

fn parse_timeout(s: &str) -> Result<i64, String> {
    let t = s.trim();
    let digits = t.strip_prefix('-').unwrap_or(t);
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(format!(
            "'{s}' is not a whole number of seconds (e.g. --timeout 60)"
        ));
    }
    // Large values are clamped later with a notice; past 64 bits there is no
    // honest number to repeat back, so they are a usage error.
    t.parse::<i64>().map_err(|_| {
        format!("'{s}' is too large: give the timeout in seconds (at most 3600 is used)")
    })
}

fn parse_line_count(s: &str) -> Result<usize, String> {
    match s.trim().parse::<usize>() {
        Ok(0) => Err("must be at least 1 (omit the flag to show all lines)".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!("'{s}' is not a positive whole number of lines")),
    }
}

/// `KEY=VALUE` with KEY matching `^[A-Za-z_][A-Za-z0-9_]*$`.
pub fn parse_env_pair(s: &str) -> Result<(String, String), String> {
    let Some((k, v)) = s.split_once('=') else {
        return Err(format!("'{s}' is not KEY=VALUE (e.g. -e RUST_LOG=debug)"));
    };
    if !valid_env_name(k) {
        return Err(format!(
            "'{k}' is not a valid variable name: use letters, digits and _, not starting with a digit"
        ));
    }
    Ok((k.to_string(), v.to_string()))
}
