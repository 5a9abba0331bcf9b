//! Persistent sessions: what a run on `--session NAME` leaves behind for the next.
//!
//! Carried over: the final working directory, exported variables (as a delta against
//! the environment agentbash built, so `--env` and the profile still apply and an
//! `unset` sticks), the other shell variables (so `deactivate` finds
//! `_OLD_VIRTUAL_PATH`), functions and aliases (only those that differ from the rc
//! snapshot; snapshot names the session removed are recorded as removed). Shell
//! options and traps are not carried: every run starts with a clean `set +e +u`.
//!
//! Each session is a 0700 directory `$AGENTBASH_STATE_DIR/sessions/NAME/` holding
//! `state.sh` (0600): a JSON header line, then bash that restores the state. A run holds
//! an exclusive `flock` on `lock` from before it reads the state until after it commits,
//! so runs on one session are serialized, across processes too. The shell writes its
//! state from an EXIT trap into `pending` (0600, in a directory of the session's own that
//! a sandbox keeps writable, see [`exchange_dir`]); agentbash commits it (atomic rename)
//! only when the run ended on its own — a run that timed out or was cancelled leaves the
//! session exactly as it was — and removes the pending file once it is read.
//!
//! Beside it, `approvals.json` (0600) lists the prefixes a person approved "always"
//! for the session (README, Approval), with the sandbox policy they were given
//! under; they count only while the session's state is of that same policy. It is
//! written by agentbash under the session lock, never by the command's shell.

use super::dump;
use super::snapshot::Snapshot;
use super::store::{FileLock, LockWait};
use crate::display::quote;
use crate::fsguard::write_private;
use crate::ids::nonce;
use crate::process::CancelToken;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::time::Instant;

mod commit;
mod words;

pub use words::{changes_shell, plain_command_word};

const STATE_VERSION: u32 = 1;
const HEADER: &str = "#agentbash-session ";
/// Separates the variables from the functions and aliases in `state.sh`.
const DEFINITIONS: &str = "# agentbash:definitions\n";

/// Exported variables that describe the process, not the session.
const ENV_NOT_CARRIED: &[&str] = &[
    "AGENTBASH_RUN_ID",
    "PWD",
    "OLDPWD",
    "SHLVL",
    "_",
    "BASH_ENV",
];

/// Shell variables bash maintains itself (or that would break the next shell).
fn variable_carried(name: &str) -> bool {
    const SPECIAL: &[&str] = &[
        "COLUMNS",
        "LINES",
        "COMP_WORDBREAKS",
        "DIRSTACK",
        "EPOCHREALTIME",
        "EPOCHSECONDS",
        "EUID",
        "FUNCNAME",
        "GROUPS",
        "HISTCMD",
        "HISTFILE",
        "HISTFILESIZE",
        "HISTSIZE",
        "HOSTNAME",
        "HOSTTYPE",
        "IFS",
        "LINENO",
        "MACHTYPE",
        "MAILCHECK",
        "OPTARG",
        "OPTERR",
        "OPTIND",
        "OSTYPE",
        "PIPESTATUS",
        "PPID",
        "PS1",
        "PS2",
        "PS3",
        "PS4",
        "PWD",
        "OLDPWD",
        "RANDOM",
        "SECONDS",
        "SHELLOPTS",
        "SHLVL",
        "SRANDOM",
        "UID",
        "_",
        "COPROC",
        "MAPFILE",
        "REPLY",
        // bash sets SHELL itself (unexported) when the environment has none;
        // an exported SHELL travels with the environment instead.
        "SHELL",
    ];
    !name.starts_with("BASH")
        && !name.starts_with("READLINE_")
        && !name.starts_with("COMP_")
        && !name.starts_with(dump::OWN_PREFIX)
        && !SPECIAL.contains(&name)
}

#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    #[error("invalid session name {0:?}: use 1-64 characters from A-Z a-z 0-9 . _ - (not . or ..)")]
    InvalidName(String),
    #[error("no session named {0:?} (see `agentbash session list`)")]
    NotFound(String),
    #[error("session {0:?} is in use by a running command; try again when it has finished")]
    InUse(String),
    #[error("timed out waiting for the session lock")]
    LockTimedOut,
    #[error("cancelled while waiting for the session lock")]
    LockCancelled(i32),
    #[error("session {name}: cannot {what} {}: {err}", path.display())]
    Io {
        name: String,
        what: &'static str,
        path: PathBuf,
        err: std::io::Error,
    },
    #[error("session {name}: {err}")]
    Dir {
        name: String,
        err: crate::fsguard::DirError,
    },
    #[error(
        "session {name}: will not use {}: {err} (remove the session with `agentbash session rm {name}`)",
        err.path().display()
    )]
    Untrusted {
        name: String,
        err: crate::fsguard::ReadError,
    },
    #[error(
        "session {0} was not saved: the shell ended without running its exit trap (an `exec`, a kill -9, or an EXIT trap set by the command); it keeps its previous state"
    )]
    NotSaved(String),
    #[error(
        "session {name} was made under the sandbox policy `{made}`, and this run's is `{now}`: a session's state (functions, aliases, variables, working directory) is used only under the policy it was made under, so that nothing made inside a sandbox runs outside it. Run it under the same policy (the profile it was made with, without --sandbox), use another session name, or remove it with `agentbash session rm {name}`"
    )]
    OtherPolicy {
        name: String,
        made: SandboxPolicy,
        now: SandboxPolicy,
    },
    #[error(
        "session {name} was saved by an older agentbash, which did not record the sandbox policy it was made under, so it may hold state made inside a sandbox; this run is not confined (sandbox off) and does not use it. Remove it with `agentbash session rm {name}`, use another session name, or run it sandboxed"
    )]
    UnknownPolicy { name: String },
}

/// Check a session name (it becomes a directory name).
pub fn validate_name(name: &str) -> Result<(), SessionError> {
    parse_session_name(name)
        .map(|_| ())
        .map_err(|_| SessionError::InvalidName(name.to_string()))
}

/// A session's saved state (the JSON header of `state.sh`).
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct SessionState {
    pub version: u32,
    /// Random, fixed when the session is created (a removed and re-created session
    /// is a different one).
    #[serde(default)]
    pub id: String,
    /// Incremented by every commit (live shells use it to notice outside changes).
    pub generation: u64,
    pub cwd: Option<PathBuf>,
    /// Exported variables set or changed by the session.
    pub env_set: BTreeMap<String, String>,
    /// Exported variables the session unset.
    pub env_unset: BTreeSet<String>,
    /// Other shell variables, functions and aliases the session holds.
    pub variables: Vec<String>,
    pub functions: Vec<String>,
    pub aliases: Vec<String>,
    /// Snapshot functions and aliases the session removed.
    pub removed_functions: Vec<String>,
    pub removed_aliases: Vec<String>,
    /// Unix seconds.
    pub created: u64,
    pub updated: u64,
    /// The sandbox policy the session was made under (`off`, or the policy's one-line
    /// fingerprint); a run under another policy may not use it. `None`: saved by an
    /// agentbash that did not record it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<SandboxPolicy>,
}

/// A sandbox policy as a session records it: compared by `fingerprint` (a hash of
/// every setting that decides what a command can do), shown by `summary`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SandboxPolicy {
    pub fingerprint: String,
    pub summary: String,
}

impl SandboxPolicy {
    /// No sandbox.
    pub fn off() -> Self {
        SandboxPolicy {
            fingerprint: "off".into(),
            summary: "off".into(),
        }
    }

    pub fn is_off(&self) -> bool {
        self.fingerprint == "off"
    }
}

impl std::fmt::Display for SandboxPolicy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.is_off() {
            return write!(f, "off");
        }
        write!(f, "{} [{}]", self.summary, self.fingerprint)
    }
}

/// What a person approved "always" for a session (`approvals.json`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approvals {
    /// The sandbox policy fingerprint of the runs they were given in.
    pub sandbox: String,
    pub approved: Vec<Approved>,
}

/// One prefix approved "always".
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approved {
    /// The prefix of the rule that asked (or the command's own words when the
    /// default asked): the commands it matches run without asking.
    pub prefix: String,
    /// The rule that asked, as named (`null`: approval.default).
    pub rule: Option<String>,
    /// The command that was approved, as shown.
    pub command: String,
    /// Who answered ("the terminal", "the MCP client", "the rpc client").
    pub by: String,
    /// Unix seconds.
    pub at: u64,
}

/// `approvals.json` of the session directory `dir`; empty when there is none or it is
/// not a regular file of ours within the cap (an approval that cannot be read is not
/// given).
fn read_approvals(dir: &Path) -> Approvals {
    crate::fsguard::read_file(
        &dir.join("approvals.json"),
        crate::fsguard::CONFIG_CAP,
        crate::fsguard::Links::Refuse,
    )
    .ok()
    .and_then(|b| serde_json::from_slice(&b).ok())
    .unwrap_or_default()
}

/// The most approvals a session keeps (the oldest go first).
const MAX_APPROVALS: usize = 256;

/// One line of `session list`.
#[derive(Debug, Clone)]
pub struct SessionSummary {
    pub name: String,
    pub state: SessionState,
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

/// The sessions directory.
#[derive(Debug, Clone)]
pub struct SessionStore {
    root: PathBuf,
}

impl Default for SessionStore {
    fn default() -> Self {
        Self::new()
    }
}

impl SessionStore {
    /// `$AGENTBASH_STATE_DIR/sessions`.
    pub fn new() -> Self {
        SessionStore {
            root: crate::paths::state_dir().join("sessions"),
        }
    }

    pub fn with_root(root: PathBuf) -> Self {
        SessionStore { root }
    }

    pub fn dir(&self, name: &str) -> PathBuf {
        self.root.join(name)
    }

    fn io(
        name: &str,
        what: &'static str,
        path: &Path,
    ) -> impl FnOnce(std::io::Error) -> SessionError {
        let (name, path) = (name.to_string(), path.to_path_buf());
        move |err| SessionError::Io {
            name,
            what,
            path,
            err,
        }
    }

    /// The functions and aliases the session saved, as the bash that defines them (the
    /// part of `state.sh` after its variables), read as [`SessionStore::load`] reads
    /// the file; `None` when there are none or the file cannot be read.
    pub fn saved_definitions(&self, name: &str) -> Option<String> {
        validate_name(name).ok()?;
        let path = self.dir(name).join("state.sh");
        let text = crate::fsguard::read_file(
            &path,
            crate::fsguard::SESSION_STATE_CAP,
            crate::fsguard::Links::Refuse,
        )
        .ok()?;
        let text = String::from_utf8_lossy(&text);
        let at = text.find(DEFINITIONS)?;
        let defs = &text[at + DEFINITIONS.len()..];
        (!defs.trim().is_empty()).then(|| defs.to_string())
    }

    /// The saved state, or `None` for a session that never saved anything.
    pub fn load(&self, name: &str) -> Result<Option<SessionState>, SessionError> {
        validate_name(name)?;
        let path = self.dir(name).join("state.sh");
        // The file bash will source: only a regular file of ours, read to a cap.
        let text = match crate::fsguard::read_file(
            &path,
            crate::fsguard::SESSION_STATE_CAP,
            crate::fsguard::Links::Refuse,
        ) {
            Ok(t) => t,
            Err(e) if e.is_not_found() => return Ok(None),
            Err(err) => {
                return Err(SessionError::Untrusted {
                    name: name.to_string(),
                    err,
                });
            }
        };
        // A run that changed nothing only touches the file (`ActiveSession::touch`).
        let touched = std::fs::symlink_metadata(&path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        let mut line = String::new();
        std::io::BufReader::new(&text[..])
            .read_line(&mut line)
            .map_err(Self::io(name, "read", &path))?;
        let state = line
            .strip_prefix(HEADER)
            .and_then(|j| serde_json::from_str::<SessionState>(j.trim_end()).ok())
            .map(|mut s| {
                s.updated = s.updated.max(touched);
                s
            });
        // A damaged header reads as a fresh session rather than failing every run.
        Ok(state.filter(|s| s.version == STATE_VERSION))
    }

    /// Lock the session for one run and load its state.
    pub fn activate(
        &self,
        name: &str,
        cancel: &CancelToken,
        deadline: Instant,
    ) -> Result<ActiveSession, SessionError> {
        validate_name(name)?;
        let dir = self.dir(name);
        let lock_path = dir.join("lock");
        let lock = loop {
            let dir_error = |err| SessionError::Dir {
                name: name.to_string(),
                err,
            };
            crate::paths::private_dir(&self.root).map_err(dir_error)?;
            crate::fsguard::private_dir(&dir).map_err(dir_error)?;
            let lock = match FileLock::acquire(&lock_path, Some(cancel), deadline) {
                Ok(l) => l,
                Err(LockWait::TimedOut) => return Err(SessionError::LockTimedOut),
                Err(LockWait::Cancelled(s)) => return Err(SessionError::LockCancelled(s)),
                Err(LockWait::Io(e)) => return Err(Self::io(name, "lock", &lock_path)(e)),
            };
            // `session rm` may have removed the directory while we waited.
            if lock.is_at(&lock_path) {
                break lock;
            }
        };
        let state = self.load(name)?;
        let exchange = exchange_dir(&dir);
        crate::paths::private_dir(&exchange).map_err(|err| SessionError::Dir {
            name: name.to_string(),
            err,
        })?;
        let pending = exchange.join("pending");
        fresh_pending(&pending).map_err(Self::io(name, "write", &pending))?;
        Ok(ActiveSession {
            name: name.to_string(),
            dir,
            _lock: lock,
            saved: state.is_some(),
            cwd: state.as_ref().and_then(|s| s.cwd.clone()),
            state: state.unwrap_or_else(|| SessionState {
                version: STATE_VERSION,
                id: nonce(),
                created: now_secs(),
                ..Default::default()
            }),
            e0: BTreeMap::new(),
            delim: format!("__AGENTBASH_{}", nonce()),
            exchange,
            pending,
            policy: None,
        })
    }

    /// The session's "always" approvals (empty when it has none, or the file is not
    /// ours or not readable: an approval that cannot be read is not given).
    pub fn approvals(&self, name: &str) -> Approvals {
        if validate_name(name).is_err() {
            return Approvals::default();
        }
        read_approvals(&self.dir(name))
    }

    /// The prefixes approved "always" that apply to a run of the session as saved:
    /// given under the sandbox policy the session's state was made under.
    pub fn honoured_approvals(&self, name: &str, state: Option<&SessionState>) -> Vec<String> {
        let approvals = self.approvals(name);
        match state.and_then(|s| s.sandbox.as_ref()) {
            Some(policy) if policy.fingerprint == approvals.sandbox => {
                approvals.approved.into_iter().map(|a| a.prefix).collect()
            }
            _ => Vec::new(),
        }
    }

    /// Every session, sorted by name.
    pub fn list(&self) -> Result<Vec<SessionSummary>, SessionError> {
        let rd = match std::fs::read_dir(&self.root) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(vec![]),
            Err(e) => return Err(Self::io("*", "read", &self.root)(e)),
        };
        let mut out = Vec::new();
        for e in rd.flatten() {
            let Some(name) = e.file_name().to_str().map(str::to_string) else {
                continue;
            };
            if validate_name(&name).is_err() || !e.path().is_dir() {
                continue;
            }
            let state = self.load(&name)?.unwrap_or_default();
            out.push(SessionSummary { name, state });
        }
        out.sort_unstable_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// A session's state; `NotFound` when there is no such session.
    pub fn show(&self, name: &str) -> Result<SessionState, SessionError> {
        validate_name(name)?;
        if !self.dir(name).is_dir() {
            return Err(SessionError::NotFound(name.to_string()));
        }
        Ok(self.load(name)?.unwrap_or_default())
    }

    /// Remove a session (refused while a run holds it).
    pub fn remove(&self, name: &str) -> Result<(), SessionError> {
        validate_name(name)?;
        let dir = self.dir(name);
        if !dir.is_dir() {
            return Err(SessionError::NotFound(name.to_string()));
        }
        let lock_path = dir.join("lock");
        let _lock = match FileLock::try_acquire(&lock_path) {
            Ok(Some(l)) => l,
            Ok(None) => return Err(SessionError::InUse(name.to_string())),
            Err(e) => return Err(Self::io(name, "lock", &lock_path)(e)),
        };
        let exchange = exchange_dir(&dir);
        if !exchange.starts_with(&dir) {
            let _ = std::fs::remove_dir_all(&exchange);
        }
        std::fs::remove_dir_all(&dir).map_err(Self::io(name, "remove", &dir))
    }
}

/// The directory a session's shell writes its pending state into: its own, so that a
/// sandbox can bind it writable as a whole. A single bound file would not do: the
/// pending file is removed after each commit and made afresh before the next run, and
/// a live shell's mount namespace would keep the first (deleted) one. On a memory
/// filesystem when there is a private one (the shell writes line by line, and a
/// disk-backed file costs a slow syscall per line), else `exchange/` in the session's
/// directory.
fn exchange_dir(session_dir: &Path) -> PathBuf {
    match super::store::runtime_dir() {
        Some(rt) => rt.join(format!(
            "session-{:016x}",
            crate::ids::fnv64(session_dir.as_os_str().as_encoded_bytes())
        )),
        None => session_dir.join("exchange"),
    }
}

/// An empty pending file (0600) at `path`, made anew: whatever a sandboxed command left
/// at that name in its writable exchange directory (a link, a FIFO, a file of other
/// permissions) is removed first, never followed.
fn fresh_pending(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    match std::fs::remove_file(path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        // A directory planted at the name: the run cannot save its state.
        Err(e) => return Err(e),
    }
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW)
        .mode(0o600)
        .open(path)
        .map(drop)
}

/// A session locked for one run.
#[derive(Debug)]
pub struct ActiveSession {
    name: String,
    dir: PathBuf,
    _lock: FileLock,
    /// `state.sh` was read with a valid header (a damaged one is never sourced).
    saved: bool,
    state: SessionState,
    /// The working directory: saved before the run, updated by a commit.
    cwd: Option<PathBuf>,
    /// The exported environment the command started with (the delta base).
    e0: BTreeMap<String, String>,
    delim: String,
    /// The session's exchange directory (see [`exchange_dir`]) and the pending
    /// state file in it.
    exchange: PathBuf,
    pending: PathBuf,
    /// The sandbox policy of this run, recorded by the next commit.
    policy: Option<SandboxPolicy>,
}

impl Drop for ActiveSession {
    /// A run that stopped before its commit (a refused sandbox, a missing cwd) leaves
    /// no pending file behind.
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.pending);
    }
}

impl ActiveSession {
    pub fn name(&self) -> &str {
        &self.name
    }

    pub fn cwd(&self) -> Option<&Path> {
        self.cwd.as_deref()
    }

    pub fn state(&self) -> &SessionState {
        &self.state
    }

    /// Identifies the saved state now and after the next commit, for live shells
    /// to tell whether what they hold in memory is still the session's state.
    pub fn generation_tags(&self) -> (u64, u64) {
        let tag = |g: u64| crate::ids::fnv64(format!("{}:{g}", self.state.id).as_bytes());
        (tag(self.state.generation), tag(self.state.generation + 1))
    }

    fn state_file(&self) -> PathBuf {
        self.dir.join("state.sh")
    }

    /// Apply the session's exported variables to `env` (`--env` pairs still win) and
    /// remember the result as the run's starting environment.
    pub fn apply_env(&mut self, env: &mut BTreeMap<String, String>, flags: &[(String, String)]) {
        let flagged = |k: &str| flags.iter().any(|(f, _)| f == k);
        for k in &self.state.env_unset {
            if !flagged(k) {
                env.remove(k);
            }
        }
        for (k, v) in &self.state.env_set {
            if !flagged(k) {
                env.insert(k.clone(), v.clone());
            }
        }
        self.e0 = env.clone();
    }

    /// This run's sandbox policy (see [`SessionState::sandbox`]): refused when the
    /// session was made under another, else recorded by the next commit. A session
    /// saved before policies were recorded is used only by a sandboxed run (which
    /// then records its policy): it may hold state made inside a sandbox.
    pub fn adopt_policy(&mut self, policy: SandboxPolicy) -> Result<(), SessionError> {
        match &self.state.sandbox {
            Some(made) if self.saved && made.fingerprint != policy.fingerprint => {
                Err(SessionError::OtherPolicy {
                    name: self.name.clone(),
                    made: made.clone(),
                    now: policy,
                })
            }
            None if self.saved && policy.is_off() => Err(SessionError::UnknownPolicy {
                name: self.name.clone(),
            }),
            _ => {
                self.policy = Some(policy);
                Ok(())
            }
        }
    }

    /// Record prefixes approved "always" (under the session lock, after the run's
    /// sandbox policy was adopted): they apply to the session's later runs under
    /// `policy`. Approvals given under another policy are dropped.
    pub fn remember_approvals(
        &self,
        new: Vec<Approved>,
        policy: &SandboxPolicy,
    ) -> Result<(), SessionError> {
        let mut approvals = read_approvals(&self.dir);
        if approvals.sandbox != policy.fingerprint {
            approvals = Approvals {
                sandbox: policy.fingerprint.clone(),
                approved: Vec::new(),
            };
        }
        for a in new {
            approvals.approved.retain(|old| old.prefix != a.prefix);
            approvals.approved.push(a);
        }
        let excess = approvals.approved.len().saturating_sub(MAX_APPROVALS);
        approvals.approved.drain(..excess);
        let path = self.dir.join("approvals.json");
        let text = serde_json::to_vec_pretty(&approvals).unwrap_or_default();
        write_private(&path, &text).map_err(SessionStore::io(&self.name, "write", &path))
    }

    /// The sandbox policy this run adopted (see [`ActiveSession::adopt_policy`]).
    pub fn policy(&self) -> Option<&SandboxPolicy> {
        self.policy.as_ref()
    }

    /// The directory the session's shell writes its state into: a sandbox must keep
    /// it writable (it holds nothing else agentbash reads).
    pub fn exchange_dir(&self) -> &Path {
        &self.exchange
    }

    /// Bash that restores the session (after the snapshot) and defines
    /// `__agentbash_session_save STATUS`, which writes the pending state.
    ///
    /// `state.sh` is checked here, right before bash is told to source it: a regular
    /// file (not a link), ours, within the cap. Its directory was checked when the
    /// session was locked (ours, not a link, not writable by group or others), so only
    /// our own user or root could swap the file between this check and bash's open.
    pub fn shell_setup(&self, snapshot: Option<&Path>) -> Result<String, SessionError> {
        let mut t = String::new();
        if let Some(s) = snapshot {
            t.push_str(&format!(". {}\n", quote(&s.display().to_string())));
        }
        let state = self.state_file();
        match crate::fsguard::check_file(
            &state,
            crate::fsguard::SESSION_STATE_CAP,
            crate::fsguard::Links::Refuse,
        ) {
            // A file whose header could not be read is not the session's state.
            Ok(()) if !self.saved => {}
            Ok(()) => t.push_str(&format!(". {}\n", quote(&state.display().to_string()))),
            Err(e) if e.is_not_found() => {}
            Err(err) => {
                return Err(SessionError::Untrusted {
                    name: self.name.clone(),
                    err,
                });
            }
        }
        t.push_str(&dump::function(
            "__agentbash_dump",
            &self.delim,
            dump::Sections {
                cwd: true,
                variables: true,
                options: false,
                definitions_on_request: true,
            },
        ));
        t.push_str(&format!(
            "__agentbash_session_save() {{ __agentbash_dump {} \"$1\" \"$2\"; }}\n",
            quote(&self.pending.display().to_string())
        ));
        Ok(t)
    }

    /// Write the `BASH_ENV` prelude for a spawned shell and return its path.
    /// `definitions`: save functions and aliases too (the command may change them).
    /// `plain`: the command is this plain program (`plain_command_word`), run in the
    /// session's own directory: the state is saved only if the word turns out to be a
    /// function or an alias (see [`ActiveSession::has_pending`]).
    pub fn write_prelude(
        &self,
        snapshot: Option<&Path>,
        user_bash_env: Option<&str>,
        definitions: bool,
        plain: Option<&str>,
    ) -> Result<PathBuf, SessionError> {
        let mut t = String::from("unset BASH_ENV\n");
        t.push_str(&self.shell_setup(snapshot)?);
        // A group's redirection also hides the trace when the command turned on -x.
        match plain {
            // Decided before the command runs: a function may unset itself
            // (a venv's `deactivate` does).
            Some(word) => t.push_str(&format!(
                "if {{ builtin declare -F -- {w} || builtin alias -- {w}; }} >/dev/null 2>&1; then\n\
                 \x20 builtin trap '{{ __agentbash_session_save \"$?\" 1; }} 2>/dev/null' EXIT\n\
                 fi\n",
                w = quote(word)
            )),
            None => t.push_str(&format!(
                "builtin trap '{{ __agentbash_session_save \"$?\" {}; }} 2>/dev/null' EXIT\n",
                u8::from(definitions)
            )),
        }
        if let Some(orig) = user_bash_env {
            t.push_str(&format!("export BASH_ENV={0}\n. {0}\n", quote(orig)));
        }
        let path = self.dir.join("prelude.sh");
        write_private(&path, t.as_bytes()).map_err(SessionStore::io(&self.name, "write", &path))?;
        Ok(path)
    }

    /// The shell saved its state for this run (a dump is waiting to be committed;
    /// the file itself is created, empty and private, before the run).
    pub fn has_pending(&self) -> bool {
        std::fs::metadata(&self.pending).is_ok_and(|m| m.len() > 0)
    }

    /// A run that changed nothing: note the use (the file's time) without a commit.
    pub fn touch(&self) {
        if let Ok(f) = std::fs::File::options().write(true).open(self.state_file()) {
            let _ = f.set_modified(std::time::SystemTime::now());
        }
    }

    /// Forget what the run saved (it timed out or was cancelled).
    pub fn discard(&mut self) {
        let _ = std::fs::remove_file(&self.pending);
    }
}

/// Session names become file names: `^[A-Za-z0-9._-]{1,64}$`, and not `.` or `..`.
pub fn parse_session_name(s: &str) -> Result<String, String> {
    let ok = (1..=64).contains(&s.len())
        && s.bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'.' | b'_' | b'-'))
        && s != "."
        && s != "..";
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!(
            "invalid session name {s:?}: use 1-64 characters from A-Z a-z 0-9 . _ - (not . or ..)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for bad in ["", "../x", ".", "..", "a/b", &"x".repeat(65)] {
            assert!(validate_name(bad).is_err(), "{bad:?}");
        }
        for good in ["a", "work-1", "x.y_z", &"x".repeat(64)] {
            assert!(validate_name(good).is_ok(), "{good:?}");
        }
    }

    #[test]
    fn plain_command_words() {
        for (cmd, want) in [
            ("true", Some("true")),
            ("cargo test --features=x -p a", Some("cargo")),
            ("./build.sh", Some("./build.sh")),
            ("/usr/bin/env", Some("/usr/bin/env")),
            ("  ls -la  ", Some("ls")),
            ("cd /tmp", None),
            ("export X=1", None),
            ("X=1 make", None),
            ("source x", None),
            (". x", None),
            ("echo $X", None),
            ("ls > out", None),
            ("ls; cd /", None),
            ("ls && cd /", None),
            ("a | b", None),
            ("echo `cd /`", None),
            ("f() { :; }", None),
            ("%1", None),
            ("ls\ncd /", None),
            ("ls\tx", None),
            ("echo 'a b'", None),
            ("ls *", None),
            ("exec ls", None),
            ("", None),
        ] {
            assert_eq!(plain_command_word(cmd), want, "{cmd:?}");
        }
    }

    #[test]
    fn special_variables_are_not_carried() {
        assert!(!variable_carried("BASH_REMATCH"));
        assert!(!variable_carried("PIPESTATUS"));
        assert!(!variable_carried("__agentbash_x"));
        assert!(variable_carried("_OLD_VIRTUAL_PATH"));
        assert!(variable_carried("myvar"));
    }
}
