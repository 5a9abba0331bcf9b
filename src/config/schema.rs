//! The profile schema (docs/CONFIG.md): every key, its type and its default.
//!
//! Defaults here are the `default` profile's; `profiles/default.toml` spells the
//! same values out for people to read, and a test keeps the two in step.

use serde::{Deserialize, Deserializer, Serialize};
use std::collections::BTreeMap;

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct Profile {
    pub description: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub extends: Option<String>,
    pub shell: ShellCfg,
    pub env: EnvCfg,
    pub timeout: TimeoutCfg,
    pub output: OutputCfg,
    pub artifacts: ArtifactsCfg,
    pub interceptor: InterceptorCfg,
    pub guard: GuardCfg,
    pub pty: PtyCfg,
    pub process: ProcessCfg,
    pub limits: LimitsCfg,
    pub render: RenderCfg,
    pub server: ServerCfg,
    pub mcp: McpCfg,
    pub sandbox: crate::sandbox::Policy,
    pub jobs: JobsCfg,
    pub target: TargetCfg,
    pub approval: ApprovalCfg,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ShellCfg {
    pub path: String,
    pub args: Vec<String>,
    pub prefix: String,
    pub snapshot: bool,
    pub rc: String,
}

impl Default for ShellCfg {
    fn default() -> Self {
        ShellCfg {
            path: "auto".into(),
            args: vec!["-c".into()],
            prefix: String::new(),
            snapshot: true,
            rc: "~/.bashrc".into(),
        }
    }
}

/// `inherit = "all" | "none" | ["GLOB", ...]`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Inherit {
    Keyword(InheritKeyword),
    List(Vec<String>),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum InheritKeyword {
    All,
    None,
}

impl<'de> Deserialize<'de> for Inherit {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            S(String),
            L(Vec<String>),
        }
        match Raw::deserialize(d).map_err(|_| {
            serde::de::Error::custom(
                "expected \"all\", \"none\" or an array of variable-name globs",
            )
        })? {
            Raw::S(s) if s == "all" => Ok(Inherit::Keyword(InheritKeyword::All)),
            Raw::S(s) if s == "none" => Ok(Inherit::Keyword(InheritKeyword::None)),
            Raw::S(s) => Err(serde::de::Error::custom(format!(
                "unknown value \"{s}\": expected \"all\", \"none\" or an array of globs like [\"PATH\", \"LANG*\"]"
            ))),
            Raw::L(l) => Ok(Inherit::List(l)),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct EnvCfg {
    pub inherit: Inherit,
    pub exclude: Vec<String>,
    pub harden: bool,
    pub set: BTreeMap<String, String>,
    /// In a `workspace-write` sandbox, point package managers' cache variables at
    /// agentbash's per-workspace package cache.
    pub sandbox_caches: bool,
}

impl Default for EnvCfg {
    fn default() -> Self {
        EnvCfg {
            inherit: Inherit::Keyword(InheritKeyword::All),
            exclude: vec![],
            harden: true,
            set: BTreeMap::new(),
            sandbox_caches: true,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TimeoutCfg {
    pub default: u64,
    pub max: u64,
    pub kill_grace_ms: u64,
}

impl Default for TimeoutCfg {
    fn default() -> Self {
        TimeoutCfg {
            default: 300,
            max: 3600,
            kill_grace_ms: 1000,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct OutputCfg {
    pub max_bytes: usize,
    pub head_bytes: usize,
    pub max_columns: usize,
    pub strip_head_tail: bool,
    pub redact: Vec<String>,
}

impl Default for OutputCfg {
    fn default() -> Self {
        OutputCfg {
            max_bytes: 51200,
            head_bytes: 0,
            max_columns: 0,
            strip_head_tail: true,
            redact: vec![],
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ArtifactsCfg {
    pub enabled: bool,
    pub dir: String,
    pub max_total_bytes: u64,
    pub max_age_days: u64,
}

impl Default for ArtifactsCfg {
    fn default() -> Self {
        ArtifactsCfg {
            enabled: true,
            dir: String::new(),
            max_total_bytes: 1 << 30,
            max_age_days: 7,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct InterceptorCfg {
    pub enabled: bool,
    pub rules: Vec<String>,
    pub tools: Vec<String>,
}

impl Default for InterceptorCfg {
    fn default() -> Self {
        InterceptorCfg {
            enabled: true,
            rules: vec!["default".into()],
            tools: vec![],
        }
    }
}

/// The guard: refuses destructive commands on protected paths, disks and every
/// process, and the `deny` rules of its packs, whatever tools the caller declared.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct GuardCfg {
    pub enabled: bool,
    /// Paths no command may delete, move away or re-permission as a whole: absolute,
    /// or `~`-relative (the run's HOME).
    pub protected: Vec<String>,
    /// Rule packs checked on every run, whatever tools the caller declared.
    pub rules: Vec<String>,
}

/// The system directories a recursive delete, move or permission change must never
/// reach as a whole, plus the home directory and its keys.
pub const DEFAULT_PROTECTED: &[&str] = &[
    "/", "~", "~/.ssh", "~/.gnupg", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32",
    "/lib64", "/opt", "/proc", "/root", "/sbin", "/srv", "/sys", "/usr", "/var",
];

impl Default for GuardCfg {
    fn default() -> Self {
        GuardCfg {
            enabled: true,
            protected: DEFAULT_PROTECTED.iter().map(|s| s.to_string()).collect(),
            rules: vec!["guard".into()],
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum PtyMode {
    #[default]
    Off,
    On,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct PtyCfg {
    pub mode: PtyMode,
    pub cols: u16,
    pub rows: u16,
    pub kill_key: String,
}

impl Default for PtyCfg {
    fn default() -> Self {
        PtyCfg {
            mode: PtyMode::Off,
            cols: 120,
            rows: 40,
            kill_key: "esc".into(),
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Background {
    #[default]
    Kill,
    Keep,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct ProcessCfg {
    pub background: Background,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct LimitsCfg {
    pub address_space_mb: u64,
    pub file_size_mb: u64,
    pub processes: u64,
    pub cpu_seconds: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Live {
    #[default]
    Tail,
    Stream,
    Off,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum CiAnnotations {
    #[default]
    Auto,
    Always,
    Never,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    #[default]
    Text,
    Json,
    Ndjson,
}

#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct RenderCfg {
    pub format: Format,
    pub preview_lines: usize,
    pub preview_lines_on_failure: usize,
    pub live: Live,
    pub ci_annotations: CiAnnotations,
}

impl Default for RenderCfg {
    fn default() -> Self {
        RenderCfg {
            format: Format::Text,
            preview_lines: 10,
            preview_lines_on_failure: 40,
            live: Live::Tail,
            ci_annotations: CiAnnotations::Auto,
        }
    }
}

/// Highest `server.max_concurrent`: each running request holds a thread and a
/// shell, so more than this would be a fork bomb, not a server.
pub const MAX_CONCURRENT_LIMIT: usize = 1024;

/// `agentbash rpc` and `agentbash mcp`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ServerCfg {
    /// Runs executing at once; further requests wait in a queue (as parsed
    /// requests: no thread, no process) until one finishes.
    pub max_concurrent: usize,
}

impl Default for ServerCfg {
    fn default() -> Self {
        ServerCfg { max_concurrent: 16 }
    }
}

/// `agentbash mcp`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq, Default)]
#[serde(deny_unknown_fields, default)]
pub struct McpCfg {
    /// Serve the file tools (read, grep, glob, edit, write) next to `bash`, under this
    /// profile's sandbox, guard and redaction; the interceptor then routes to them.
    pub toolbox: bool,
}

/// Background jobs (`agentbash job`, rpc `job_start`, mcp `bash` with `background`)
/// and the foreground policies that lean on them.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct JobsCfg {
    /// Bytes of a job's output kept on disk: the first third and the last bytes; the
    /// middle is dropped.
    pub log_max_bytes: u64,
    /// Jobs running at once; the next start is refused.
    pub max_running: usize,
    /// Seconds a job may run before it is stopped (0: until stopped).
    pub ttl: u64,
    /// A foreground run called without a timeout that neither prints nor uses CPU for
    /// this many seconds is stopped (0: off).
    pub idle_timeout: u64,
    /// rpc/mcp: a foreground run still going after this many seconds goes on as a
    /// job, answered with its id and the output so far (0: off).
    pub background_after: u64,
    /// Milliseconds `job start` waits for a job without a readiness check, so one
    /// that fails at once is answered as failed.
    pub start_wait_ms: u64,
    /// Seconds the record and log of a job that ended are kept (`job gc` and the
    /// next `job start` remove older ones).
    pub keep_exited: u64,
}

impl Default for JobsCfg {
    fn default() -> Self {
        JobsCfg {
            log_max_bytes: 8 << 20,
            max_running: 16,
            ttl: 0,
            idle_timeout: 0,
            background_after: 0,
            start_wait_ms: 300,
            keep_exited: 3600,
        }
    }
}

/// `[target]`: where `--target NAME` sends commands (docs/REMOTE.md).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct TargetCfg {
    /// The argv of a program whose stdin and stdout speak `agentbash rpc` (ssh,
    /// `docker exec -i`, `kubectl exec -i`, …); empty: this profile names no target.
    pub transport: Vec<String>,
    /// Seconds the transport has to start and answer the handshake.
    pub connect_timeout: u64,
}

impl Default for TargetCfg {
    fn default() -> Self {
        TargetCfg {
            transport: Vec::new(),
            connect_timeout: 30,
        }
    }
}

/// `[approval]`: which commands run, which a person is asked about first, and which
/// are refused, matched on every simple command of the line (docs/CONFIG.md).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
#[serde(deny_unknown_fields, default)]
pub struct ApprovalCfg {
    /// The decision for a command no rule matches.
    pub default: super::approval::Decision,
    /// What `ask` becomes when no one can be asked (no terminal, a client that
    /// cannot ask).
    pub unattended: super::approval::Unattended,
    /// Seconds a question waits for its answer; then the command is refused.
    pub timeout: u64,
    pub rule: Vec<super::approval::ApprovalRule>,
}

impl Default for ApprovalCfg {
    fn default() -> Self {
        ApprovalCfg {
            default: super::approval::Decision::Allow,
            unattended: super::approval::Unattended::Deny,
            timeout: 300,
            rule: Vec::new(),
        }
    }
}

impl ApprovalCfg {
    /// Nothing to decide: every command is allowed without looking at it.
    pub fn is_inert(&self) -> bool {
        self.default == super::approval::Decision::Allow && self.rule.is_empty()
    }
}

/// Highest `approval.timeout`: a question is answered within an hour or refused.
pub const MAX_APPROVAL_TIMEOUT: u64 = 3600;

/// Highest `target.connect_timeout`.
pub const MAX_CONNECT_TIMEOUT: u64 = 600;
/// Highest `jobs.start_wait_ms`: `job start` answers within a minute.
pub const MAX_START_WAIT_MS: u64 = 60_000;

/// Highest `jobs.max_running`.
pub const MAX_RUNNING_LIMIT: usize = 256;

/// What the value of each key (dotted, e.g. `timeout.default`) must be, in words,
/// for the errors that say a value has the wrong type.
pub fn expected_type(key: &str) -> Option<&'static str> {
    const BOOL: &str = "true or false";
    const STRING: &str = "a string";
    const STRINGS: &str = "an array of strings";
    Some(match key {
        "description" => STRING,
        "extends" => "a string (the name or path of the profile to layer on)",
        "shell" | "env" | "timeout" | "output" | "artifacts" | "interceptor" | "guard" | "pty"
        | "process" | "limits" | "render" | "server" | "mcp" | "sandbox" | "jobs" | "target"
        | "approval" => "a table of settings",
        "shell.path" => "a string (\"auto\" or the shell's path)",
        "shell.args" => STRINGS,
        "shell.prefix" => STRING,
        "shell.snapshot"
        | "env.harden"
        | "env.sandbox_caches"
        | "output.strip_head_tail"
        | "artifacts.enabled"
        | "interceptor.enabled"
        | "guard.enabled" => BOOL,
        "shell.rc" => "a string (the rc file's path)",
        "env.inherit" => "\"all\", \"none\" or an array of variable-name globs",
        "env.exclude" | "output.redact" => "an array of strings (variable-name globs)",
        "env.set" => "a table of NAME = \"value\" strings",
        k if k.starts_with("env.set.") => "a string (the variable's value)",
        "timeout.default" | "timeout.max" => "a whole number of seconds",
        "timeout.kill_grace_ms" => "a whole number of milliseconds",
        "output.max_bytes" | "output.head_bytes" | "artifacts.max_total_bytes" => {
            "a whole number of bytes"
        }
        "output.max_columns" => "a whole number of columns (0: no cap)",
        "artifacts.dir" => "a string (a directory path, \"\" for the default)",
        "artifacts.max_age_days" => "a whole number of days",
        "interceptor.rules" | "guard.rules" => "an array of strings (rule pack names or paths)",
        "interceptor.tools" => "an array of strings (tool names)",
        "guard.protected" => "an array of strings (paths)",
        "pty.mode" => "\"off\" or \"on\"",
        "pty.cols" => "a whole number of columns (at most 65535)",
        "pty.rows" => "a whole number of rows (at most 65535)",
        "pty.kill_key" => "a string (esc, ctrl-c, ctrl-\\, ctrl-] or ctrl-<letter>)",
        "process.background" => "\"kill\" or \"keep\"",
        "limits.address_space_mb" | "limits.file_size_mb" => "a whole number of MiB (0: unlimited)",
        "limits.processes" => "a whole number of processes (0: unlimited)",
        "limits.cpu_seconds" => "a whole number of seconds (0: unlimited)",
        "render.format" => "\"text\", \"json\" or \"ndjson\"",
        "render.preview_lines" | "render.preview_lines_on_failure" => "a whole number of lines",
        "render.live" => "\"tail\", \"stream\" or \"off\"",
        "render.ci_annotations" => "\"auto\", \"always\" or \"never\"",
        "server.max_concurrent" => "a whole number of runs",
        "mcp.toolbox" => BOOL,
        "jobs.log_max_bytes" => "a whole number of bytes (at least 8192)",
        "jobs.max_running" => "a whole number of jobs (1-256)",
        "jobs.ttl" => "a whole number of seconds (0: until stopped)",
        "jobs.idle_timeout" | "jobs.background_after" => "a whole number of seconds (0: off)",
        "jobs.start_wait_ms" => "a whole number of milliseconds (0-60000)",
        "jobs.keep_exited" => "a whole number of seconds",
        "sandbox.mode" => "\"off\", \"read-only\" or \"workspace-write\"",
        "sandbox.engine" => "\"auto\", \"namespaces\", \"landlock\", \"bwrap\" or \"none\"",
        "sandbox.workspace" => "a string (a directory path; the start dir when unset)",
        "sandbox.writable" | "sandbox.deny_read" => "an array of strings (paths, ~/ allowed)",
        "sandbox.network" => {
            "true, false or an array of destinations (\"host\", \"*.suffix\", \"host:port\", \"!host\")"
        }
        "sandbox.network_allow_local" | "sandbox.required" | "sandbox.allow_override" => BOOL,
        "target.transport" => "an array of strings (the transport's argv, program first)",
        "target.connect_timeout" => "a whole number of seconds (1-600)",
        "approval.default" => "\"allow\", \"ask\" or \"deny\"",
        "approval.unattended" => {
            "\"allow\" or \"deny\" (what `ask` becomes when no one can be asked)"
        }
        "approval.timeout" => "a whole number of seconds (1-3600)",
        "approval.rule" => "an array of tables ([[approval.rule]] with prefix and decision)",
        "approval.rule.prefix" => "a string (words, `*`, `**`, `|` between stages)",
        "approval.rule.decision" => "\"allow\", \"ask\" or \"deny\"",
        "approval.rule.id" => "a string (the rule's name)",
        "approval.rule.match" | "approval.rule.not_match" => {
            "an array of strings (example commands)"
        }
        _ => return None,
    })
}

/// Range checks serde cannot express: (section, key, message) for each bad value.
pub fn semantic_errors(p: &Profile) -> Vec<(&'static str, &'static str, String)> {
    let mut errs = Vec::new();
    let mut bad = |sec: &'static str, key: &'static str, msg: String| errs.push((sec, key, msg));
    run_errors(p, &mut bad);
    service_errors(p, &mut bad);
    errs
}

/// The checks of how one command runs: shell, timeout, output, pty, render, guard.
fn run_errors(p: &Profile, bad: &mut impl FnMut(&'static str, &'static str, String)) {
    if p.shell.path.trim().is_empty() {
        bad(
            "shell",
            "path",
            "must not be empty (use \"auto\" to pick bash)".into(),
        );
    }
    if !(1..=3600).contains(&p.timeout.max) {
        bad(
            "timeout",
            "max",
            format!("{} is out of range: must be 1-3600 seconds", p.timeout.max),
        );
    }
    if p.timeout.default == 0 {
        bad("timeout", "default", "must be at least 1 second".into());
    }
    if p.timeout.kill_grace_ms > 60_000 {
        bad(
            "timeout",
            "kill_grace_ms",
            format!(
                "{} is out of range: must be 0-60000",
                p.timeout.kill_grace_ms
            ),
        );
    }
    if p.output.max_bytes < 256 || p.output.max_bytes > 1 << 30 {
        bad(
            "output",
            "max_bytes",
            format!(
                "{} is out of range: must be 256 to 1073741824 bytes",
                p.output.max_bytes
            ),
        );
    }
    if p.output.head_bytes > 0 && p.output.head_bytes >= p.output.max_bytes {
        bad(
            "output",
            "head_bytes",
            format!(
                "{} must be smaller than output.max_bytes ({})",
                p.output.head_bytes, p.output.max_bytes
            ),
        );
    }
    if p.output.max_columns > 0 && p.output.max_columns < 8 {
        bad(
            "output",
            "max_columns",
            "must be 0 (no cap) or at least 8".into(),
        );
    }
    if p.pty.cols < 10 || p.pty.rows < 2 {
        bad(
            "pty",
            "cols",
            format!(
                "{}x{} is too small: at least 10 columns and 2 rows",
                p.pty.cols, p.pty.rows
            ),
        );
    }
    if p.pty
        .kill_key
        .parse::<crate::config::kill_key::KillKey>()
        .is_err()
    {
        bad(
            "pty",
            "kill_key",
            format!(
                "unknown key {:?}: use esc, ctrl-c, ctrl-\\, ctrl-] or ctrl-<letter>",
                p.pty.kill_key
            ),
        );
    }
    if p.render.preview_lines == 0 {
        bad("render", "preview_lines", "must be at least 1".into());
    }
    if p.render.preview_lines_on_failure == 0 {
        bad(
            "render",
            "preview_lines_on_failure",
            "must be at least 1".into(),
        );
    }
    for entry in &p.guard.protected {
        if !(entry.starts_with('/') || entry == "~" || entry.starts_with("~/")) {
            bad(
                "guard",
                "protected",
                format!("{entry:?} must be an absolute path or start with ~/"),
            );
        }
    }
}

/// The checks of the services around runs: jobs, server, target, approval, the
/// sandbox's network allowlist and the environment.
fn service_errors(p: &Profile, bad: &mut impl FnMut(&'static str, &'static str, String)) {
    if p.jobs.log_max_bytes < 8192 {
        bad(
            "jobs",
            "log_max_bytes",
            format!("{} is too small: at least 8192 bytes", p.jobs.log_max_bytes),
        );
    }
    if !(1..=MAX_RUNNING_LIMIT).contains(&p.jobs.max_running) {
        bad(
            "jobs",
            "max_running",
            format!(
                "{} is out of range: must be 1-{MAX_RUNNING_LIMIT} jobs",
                p.jobs.max_running
            ),
        );
    }
    if p.jobs.start_wait_ms > MAX_START_WAIT_MS {
        bad(
            "jobs",
            "start_wait_ms",
            format!(
                "{} is out of range: must be 0-{MAX_START_WAIT_MS} milliseconds",
                p.jobs.start_wait_ms
            ),
        );
    }
    if !(1..=MAX_CONCURRENT_LIMIT).contains(&p.server.max_concurrent) {
        bad(
            "server",
            "max_concurrent",
            format!(
                "{} is out of range: must be 1-{MAX_CONCURRENT_LIMIT}",
                p.server.max_concurrent
            ),
        );
    }
    if let Some(program) = p.target.transport.first()
        && program.trim().is_empty()
    {
        bad(
            "target",
            "transport",
            "the first element is the program to start and must not be empty (e.g. \"ssh\")".into(),
        );
    }
    if p.target.transport.iter().any(|w| w.contains('\0')) {
        bad(
            "target",
            "transport",
            "an element contains a NUL byte, which no program can receive".into(),
        );
    }
    if !(1..=MAX_CONNECT_TIMEOUT).contains(&p.target.connect_timeout) {
        bad(
            "target",
            "connect_timeout",
            format!(
                "{} is out of range: must be 1-{MAX_CONNECT_TIMEOUT} seconds",
                p.target.connect_timeout
            ),
        );
    }
    if !(1..=MAX_APPROVAL_TIMEOUT).contains(&p.approval.timeout) {
        bad(
            "approval",
            "timeout",
            format!(
                "{} is out of range: must be 1-{MAX_APPROVAL_TIMEOUT} seconds",
                p.approval.timeout
            ),
        );
    }
    if let Some(list) = p.sandbox.network.allowlist()
        && !p.sandbox.network_allow_local
    {
        let local = list.local_entries();
        if !local.is_empty() {
            bad(
                "sandbox",
                "network",
                format!(
                    "{} names a local address, which the proxy refuses unless sandbox.network_allow_local = true: set it, or remove the entry",
                    local
                        .iter()
                        .map(|e| format!("{e:?}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            );
        }
    }
    for k in p.env.set.keys() {
        if !valid_env_name(k) {
            bad("env", "set", format!("{k:?} is not a valid variable name"));
        }
    }
}

/// What is wrong with the `[[approval.rule]]` tables serde cannot see: (index of the
/// rule, key, message) for each.
pub fn approval_rule_errors(p: &Profile) -> Vec<(usize, &'static str, String)> {
    let mut errs = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    for (i, r) in p.approval.rule.iter().enumerate() {
        if let Some(id) = &r.id {
            let ok = !id.is_empty()
                && id.len() <= 64
                && id
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._:-".contains(&b));
            if !ok {
                errs.push((
                    i,
                    "id",
                    format!(
                        "{id:?} is not a rule id: use 1-64 characters from A-Z a-z 0-9 . _ : -"
                    ),
                ));
            } else if !seen.insert(id.as_str()) {
                errs.push((
                    i,
                    "id",
                    format!("{id:?} names two rules: each rule's id must be its own"),
                ));
            }
        }
    }
    errs
}

/// A variable name: `^[A-Za-z_][A-Za-z0-9_]*$`.
pub fn valid_env_name(k: &str) -> bool {
    let mut b = k.bytes();
    matches!(b.next(), Some(c) if c == b'_' || c.is_ascii_alphabetic())
        && b.all(|c| c == b'_' || c.is_ascii_alphanumeric())
}
