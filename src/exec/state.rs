//! §6.2/§6.3 shell state as one stage of the run: before the command, the rc snapshot
//! and the session are made ready ([`prepare`]); after it, the session is committed or
//! left as it was ([`Prepared::finish`]).
//!
//! The state reaches the shell through `BASH_ENV`, a file bash sources before it parses
//! the `-c` text: aliases are then usable on the command's first line and error
//! messages keep their line numbers (a prelude prepended to the script would shift
//! both). The prelude unsets `BASH_ENV` first, so scripts the command runs do not
//! source it again.
//!
//! This module also holds what the snapshot and the session share: the bash function
//! that dumps a shell's state into a delimited file, its parser, private (0600) file
//! writes, and the flock used to serialize writers.

use super::CancelToken;
use super::session::{ActiveSession, SessionError, SessionStore};
use super::snapshot::{self, Snapshot, SnapshotPlan};
use crate::exec::End;
use crate::exec::env::BuiltEnv;
use crate::stages::CwdError;
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What the state stage will do, decided without side effects (for `explain`).
#[derive(Debug, Clone)]
pub struct StatePlan {
    pub snapshot: SnapshotPlan,
    pub session: Option<SessionPlan>,
}

#[derive(Debug, Clone)]
pub struct SessionPlan {
    pub name: String,
    pub dir: PathBuf,
    /// The session's saved working directory, if it has run before.
    pub cwd: Option<PathBuf>,
    /// The variables the session exported, as saved (secrets among them are masked).
    pub exported: BTreeMap<String, String>,
}

impl StatePlan {
    /// The directory a relative `-C` resolves against.
    pub fn base_dir(&self, invoking_dir: &Path) -> PathBuf {
        self.session
            .as_ref()
            .and_then(|s| s.cwd.clone())
            .unwrap_or_else(|| invoking_dir.to_path_buf())
    }

    /// One line per decision, for `explain`.
    pub fn describe(&self) -> Vec<String> {
        let mut v = vec![format!("snapshot: {}", self.snapshot.describe())];
        if let Some(s) = &self.session {
            v.push(format!(
                "session: {} ({}){}",
                s.name,
                s.dir.display(),
                match &s.cwd {
                    Some(c) => format!(", cwd {}", c.display()),
                    None => ", new".to_string(),
                }
            ));
        }
        v
    }
}

/// Decide the state stage for a run (reads, never writes).
pub fn plan(
    session: Option<&str>,
    shell_cfg: &crate::profile::ShellCfg,
    shell: Option<&Path>,
    env: &BuiltEnv,
) -> StatePlan {
    let home = env
        .vars
        .get("HOME")
        .map(PathBuf::from)
        .or_else(crate::paths::home);
    let snapshot = snapshot::plan(shell_cfg, shell, home.as_deref());
    let session = session.map(|name| {
        let store = SessionStore::new();
        let dir = store.dir(name);
        let saved = store.load(name).ok().flatten().unwrap_or_default();
        SessionPlan {
            name: name.to_string(),
            dir,
            cwd: saved.cwd,
            exported: saved.env_set,
        }
    });
    StatePlan { snapshot, session }
}

/// Why the stage stopped the run before it started.
#[derive(Debug)]
pub enum Stopped {
    /// The run's timeout expired while another run held the session: how long it waited.
    TimedOut(Duration),
    Cancelled(i32),
    /// agentbash's own failure with the message to show (exit 125).
    Failed(String),
}

/// Why the prelude a spawned shell sources could not be installed.
#[derive(Debug)]
pub enum PreludeError {
    /// The session's state file was refused: the run must not go on (exit 125).
    Refused(String),
    /// It could not be written: the run goes on without it, with this warning.
    Unwritten(String),
}

/// The state made ready for one run; holds the session lock until dropped.
pub struct Prepared {
    pub snapshot: Option<Snapshot>,
    pub session: Option<ActiveSession>,
    pub warnings: Vec<String>,
    pub notices: Vec<String>,
    /// Time spent waiting for the session lock (taken off the run's timeout).
    pub waited: Duration,
    /// A per-run prelude file, removed when the run is over.
    prelude: Option<tempfile::TempPath>,
    /// The snapshot names the command's shell sourced (`None`: all).
    loaded: Option<std::collections::BTreeSet<String>>,
    /// A session run of this plain program in the session's own directory: the
    /// shell saves only if the word is a function or alias.
    plain: Option<String>,
}

/// Make the snapshot and the session ready. `limit` bounds the wait for the session
/// lock (the run's timeout).
pub fn prepare(
    plan: &StatePlan,
    shell: &Path,
    env: &BuiltEnv,
    cancel: &CancelToken,
    limit: Duration,
) -> Result<Prepared, Stopped> {
    let mut warnings = Vec::new();
    let mut notices = Vec::new();
    let started = Instant::now();
    let mut session = None;
    if let Some(sp) = &plan.session {
        if !crate::shell::is_bash(shell) {
            return Err(Stopped::Failed(format!(
                "--session needs bash, but the shell is {} (profile key shell.path)",
                shell.display()
            )));
        }
        let store = SessionStore::new();
        match store.activate(&sp.name, cancel, started + limit) {
            Ok(s) => session = Some(s),
            Err(SessionError::LockTimedOut) => return Err(Stopped::TimedOut(started.elapsed())),
            Err(SessionError::LockCancelled(sig)) => return Err(Stopped::Cancelled(sig)),
            Err(e) => return Err(Stopped::Failed(e.to_string())),
        }
    }
    let waited = started.elapsed();
    if waited >= Duration::from_millis(500)
        && let Some(s) = &session
    {
        notices.push(format!(
            "Waited {:.1}s for session {} (another run was using it)",
            waited.as_secs_f64(),
            s.name()
        ));
    }
    let ensured = snapshot::ensure(&plan.snapshot, env, false);
    warnings.extend(ensured.warnings);
    let snapshot = ensured.snapshot;
    Ok(Prepared {
        snapshot,
        session,
        warnings,
        notices,
        waited,
        prelude: None,
        loaded: None,
        plain: None,
    })
}

impl Prepared {
    /// The directory a relative `-C` resolves against: the session's cwd, if any.
    pub fn base_dir(&self, invoking_dir: &Path) -> PathBuf {
        self.session
            .as_ref()
            .and_then(|s| s.cwd().map(Path::to_path_buf))
            .unwrap_or_else(|| invoking_dir.to_path_buf())
    }

    /// The §4.3 error, plus a hint when it is the session's directory that is gone.
    pub fn cwd_error(&self, err: &CwdError, requested: Option<&Path>) -> String {
        let mut msg = err.to_string();
        if let Some(s) = &self.session
            && let Some(c) = s.cwd()
            && !c.is_dir()
            && requested.is_none_or(|r| r.is_relative())
        {
            msg.push_str(&format!(
                "\nhint: the working directory of session {0} ({1}) is gone; run with -C DIR (an absolute path) or `agentbash session rm {0}`",
                s.name(),
                c.display()
            ));
        }
        msg
    }

    /// Apply the session's exported variables to `env` (`--env` pairs, `flags`, still
    /// win); the result is the environment the command starts with.
    pub fn apply_env(&mut self, env: &mut BTreeMap<String, String>, flags: &[(String, String)]) {
        if let Some(s) = &mut self.session {
            s.apply_env(env, flags);
        }
    }

    /// Point `BASH_ENV` at the prelude a spawned bash sources before `command`: the
    /// part of the snapshot the command can reach, or a file that also restores the
    /// session (and the caller's own `BASH_ENV`, if it had one).
    pub fn install_prelude(
        &mut self,
        env: &mut BTreeMap<String, String>,
        command: &str,
        cwd: &Path,
    ) -> Result<(), PreludeError> {
        self.plain = self
            .session
            .as_ref()
            .and_then(|_| self.stateless_word(command, cwd))
            .map(str::to_string);
        let user_bash_env = env.get("BASH_ENV").cloned();
        // Only what the command can reach (see `Snapshot::part_for`).
        let part = self
            .snapshot
            .as_ref()
            .map(|s| s.part_for(command))
            .unwrap_or_default();
        self.loaded = part.names;
        let prelude_path = match (&self.session, user_bash_env) {
            (None, None) => part.path,
            (None, Some(orig)) => {
                let mut text = String::new();
                if let Some(p) = &part.path {
                    text.push_str(&format!(". {}\n", quote(&p.display().to_string())));
                }
                text.push_str(&format!("export BASH_ENV={0}\n. {0}\n", quote(&orig)));
                let f = temp_prelude(&text).map_err(|e| {
                    PreludeError::Unwritten(format!("cannot write the shell prelude: {e}"))
                })?;
                let p = f.to_path_buf();
                self.prelude = Some(f);
                Some(p)
            }
            (Some(s), orig) => Some(
                s.write_prelude(
                    part.path.as_deref(),
                    orig.as_deref(),
                    self.saves_definitions(command),
                    self.plain.as_deref(),
                )
                .map_err(|e| match e {
                    SessionError::Untrusted { .. } => PreludeError::Refused(e.to_string()),
                    other => PreludeError::Unwritten(other.to_string()),
                })?,
            ),
        };
        if let Some(p) = prelude_path {
            env.insert("BASH_ENV".into(), p.display().to_string());
        }
        Ok(())
    }

    /// Whether a session run of `command` must save functions and aliases (it may
    /// have changed them); printing every function is the costly part of a save.
    pub fn saves_definitions(&self, command: &str) -> bool {
        let Some(s) = &self.session else {
            return false;
        };
        let snap = self.snapshot.as_ref().map(|s| &s.meta);
        let known = snap
            .into_iter()
            .flat_map(|m| m.functions.keys().chain(m.aliases.keys()))
            .chain(s.state().functions.iter())
            .chain(s.state().aliases.iter())
            .map(String::as_str);
        snapshot::may_change_definitions(command, known)
    }

    /// For a run in a live shell: the command word when `command` is one plain
    /// external-looking command that cannot change the shell's state (see
    /// [`super::session::plain_command_word`]); unless the word turns out to be a
    /// function or alias, a session shell then skips the save and a session-less one
    /// runs it without a subshell.
    pub fn stateless_word<'a>(&self, command: &'a str, cwd: &Path) -> Option<&'a str> {
        // A session's first run creates it (and its identity), and a run elsewhere
        // moves it: both are committed.
        if self
            .session
            .as_ref()
            .is_some_and(|s| s.state().generation == 0 || s.cwd() != Some(cwd))
        {
            return None;
        }
        super::session::plain_command_word(command)
    }

    /// Bash a live shell runs once at start: the snapshot, then the session.
    /// An error (the session's state file was refused) fails the run.
    pub fn live_setup(&self) -> Result<String, String> {
        let snap = self.snapshot.as_ref().map(|s| s.path.as_path());
        match &self.session {
            Some(s) => s.shell_setup(snap).map_err(|e| e.to_string()),
            None => Ok(snap
                .map(|p| format!(". {}\n", quote(&p.display().to_string())))
                .unwrap_or_default()),
        }
    }

    /// For a session: tags of its saved state now and after a commit.
    pub fn generation(&self) -> Option<(u64, u64)> {
        self.session.as_ref().map(|s| s.generation_tags())
    }

    /// After the run: commit the session (unless the run timed out or was cancelled)
    /// and return the session's working directory.
    /// `unchanged`: the live shell ran a stateless command and saved nothing, so
    /// there is nothing to commit.
    pub fn finish(&mut self, end: &End, unchanged: bool) -> Option<PathBuf> {
        let committed = matches!(end, End::Exited(_) | End::Signaled(_) | End::MissingStatus);
        let snapshot = self.snapshot.as_ref();
        let s = self.session.as_mut()?;
        // A plain program in a spawned shell: saved only if its word was a function
        // or an alias.
        let unchanged = unchanged || (self.plain.is_some() && !s.has_pending());
        if unchanged {
            s.touch();
        } else if committed {
            match s.commit(snapshot, self.loaded.as_ref()) {
                Ok(()) => {}
                Err(e) => self.warnings.push(e.to_string()),
            }
        } else {
            s.discard();
        }
        s.cwd().map(Path::to_path_buf)
    }

    /// The snapshot's identity for the live-shell key (path and content hash).
    pub fn snapshot_id(&self) -> Option<(PathBuf, u64)> {
        self.snapshot
            .as_ref()
            .map(|s| (s.path.clone(), s.content_hash))
    }
}

/// Single-quote `s` for bash.
pub fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

fn temp_prelude(text: &str) -> std::io::Result<tempfile::TempPath> {
    let dir = crate::paths::state_dir().join("tmp");
    crate::paths::private_dir(&dir)?;
    let mut f = tempfile::Builder::new()
        .prefix("prelude-")
        .suffix(".sh")
        .tempfile_in(&dir)?;
    f.write_all(b"unset BASH_ENV\n")?;
    f.write_all(text.as_bytes())?;
    f.flush()?;
    Ok(f.into_temp_path())
}

/// A private (0700, ours, not a symlink) directory on a memory filesystem, for the
/// short-lived files a shell writes line by line: `$XDG_RUNTIME_DIR/agentbash`, else
/// `/dev/shm/agentbash-<uid>`. `None` when neither is usable.
pub fn runtime_dir() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        // SAFETY: getuid has no preconditions.
        let uid = unsafe { libc::getuid() };
        let candidates = [
            std::env::var_os("XDG_RUNTIME_DIR")
                .filter(|d| !d.is_empty())
                .map(|d| PathBuf::from(d).join("agentbash")),
            Some(PathBuf::from(format!("/dev/shm/agentbash-{uid}"))),
        ];
        candidates.into_iter().flatten().find(|d| {
            use std::os::unix::fs::{MetadataExt, PermissionsExt};
            let parent_ok = d.parent().is_some_and(Path::is_dir);
            parent_ok
                && crate::paths::private_dir(d).is_ok()
                && std::fs::symlink_metadata(d).is_ok_and(|m| {
                    m.is_dir() && m.uid() == uid && m.permissions().mode() & 0o077 == 0
                })
        })
    })
    .clone()
}

/// FNV-1a, 64 bit: a stable hash for cache keys and change detection (not security).
pub fn fnv64(bytes: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf29ce484222325;
    for &b in bytes {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x100000001b3);
    }
    h
}

/// A hard-to-guess token (delimiters, sentinels); not for security.
pub fn nonce() -> String {
    use std::sync::atomic::{AtomicU64, Ordering};
    static N: AtomicU64 = AtomicU64::new(0);
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or(0);
    let n = N.fetch_add(1, Ordering::Relaxed);
    let local = 0u8;
    let seed = format!("{t}-{n}-{}-{:p}", std::process::id(), &local);
    format!(
        "{:016x}{:016x}",
        fnv64(seed.as_bytes()),
        fnv64(format!("{seed}!").as_bytes())
    )
}

/// Write `bytes` to `path` atomically (temp file + rename), mode 0600.
pub fn write_private(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let dir = path.parent().unwrap_or(Path::new("."));
    let tmp = dir.join(format!(
        ".{}.tmp-{}-{}",
        path.file_name().and_then(|n| n.to_str()).unwrap_or("file"),
        std::process::id(),
        nonce()
    ));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&tmp)?;
        f.write_all(bytes)?;
        f.flush()?;
        std::fs::rename(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Create (or truncate) `path` empty with mode 0600.
pub fn create_private(path: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let f = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(path)?;
    f.set_permissions(std::fs::Permissions::from_mode(0o600))
}

/// An exclusive `flock` on a file, released when dropped (or when the process dies).
#[derive(Debug)]
pub struct FileLock {
    _file: std::fs::File,
}

#[derive(Debug)]
pub enum LockWait {
    TimedOut,
    Cancelled(i32),
    Io(std::io::Error),
}

impl FileLock {
    /// Take the lock, waiting until `deadline` (checking `cancel` meanwhile).
    pub fn acquire(
        path: &Path,
        cancel: Option<&CancelToken>,
        deadline: Instant,
    ) -> Result<FileLock, LockWait> {
        use std::os::fd::AsRawFd;
        use std::os::unix::fs::OpenOptionsExt;
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(path)
            .map_err(LockWait::Io)?;
        let mut pause = Duration::from_millis(1);
        loop {
            // SAFETY: flock on a descriptor we own.
            if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } == 0 {
                return Ok(FileLock { _file: file });
            }
            let e = std::io::Error::last_os_error();
            if e.raw_os_error() != Some(libc::EWOULDBLOCK)
                && e.kind() != std::io::ErrorKind::Interrupted
            {
                return Err(LockWait::Io(e));
            }
            if let Some(sig) = cancel.and_then(CancelToken::reason) {
                return Err(LockWait::Cancelled(sig));
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(LockWait::TimedOut);
            }
            std::thread::sleep(pause.min(deadline - now));
            pause = (pause * 2).min(Duration::from_millis(20));
        }
    }

    /// Whether the locked file is still the one at `path` (not removed and recreated).
    pub fn is_at(&self, path: &Path) -> bool {
        use std::os::unix::fs::MetadataExt;
        match (self._file.metadata(), std::fs::metadata(path)) {
            (Ok(a), Ok(b)) => a.ino() == b.ino() && a.dev() == b.dev(),
            _ => false,
        }
    }

    /// Take the lock only if nobody holds it.
    pub fn try_acquire(path: &Path) -> std::io::Result<Option<FileLock>> {
        match Self::acquire(path, None, Instant::now()) {
            Ok(l) => Ok(Some(l)),
            Err(LockWait::Io(e)) => Err(e),
            Err(_) => Ok(None),
        }
    }
}

/// The bash side of state capture: a function that writes the shell's state into a
/// file as sections separated by `\n<delim> <section>\n` lines, and its parser.
pub mod dump {
    use std::collections::BTreeMap;

    /// What to capture.
    #[derive(Debug, Clone, Copy)]
    pub struct Sections {
        pub cwd: bool,
        /// Exported variables (raw values) and the other shell variables (`declare -p`).
        pub variables: bool,
        pub options: bool,
        /// Functions and aliases only when the function's third argument is `1`
        /// (otherwise always).
        pub definitions_on_request: bool,
    }

    /// Names the dump function uses for itself; never saved.
    pub const OWN_PREFIX: &str = "__agentbash_";

    /// Builtins the generated bash relies on, or that a command expects to behave as
    /// documented. A function takes precedence over a builtin of the same name, and
    /// neither `builtin` nor a backslash gets past a function named `builtin`, so a
    /// user's `builtin() { … }` would break every save. Such functions are removed
    /// (see [`unshadow`]) before anything of ours runs, and never carried.
    pub const MACHINERY_BUILTINS: &[&str] = &[
        "builtin", "command", "declare", "typeset", "local", "export", "unset", "set", "shopt",
        "trap", "eval", "exec", "source", ".", "return", "exit", "printf", "echo", "read", "type",
        "hash", "alias", "unalias", "enable", "test", "[",
    ];

    /// Bash that removes functions named like [`MACHINERY_BUILTINS`]. In POSIX mode
    /// (entered by assigning `POSIXLY_CORRECT`, which no function can intercept)
    /// `unset` is a special builtin, found before any function. Leaving POSIX mode
    /// keeps the `inherit_errexit` it turned on: that is put back too.
    ///
    /// With `record`, the names that were functions are first appended, one per line,
    /// to that variable (`export -f` fails for a name that is not a function, and is
    /// a special builtin too).
    pub fn unshadow(record: Option<&str>) -> String {
        // Words without quotes, so that the text also fits in a single-quoted trap.
        let names: Vec<&str> = MACHINERY_BUILTINS
            .iter()
            .map(|n| if *n == "[" { "\\[" } else { n })
            .collect();
        let names = names.join(" ");
        let find = record.map_or_else(String::new, |var| {
            format!(
                "for __agentbash_n in {names}; do export -f -- \"$__agentbash_n\" 2>/dev/null && {var}=\"${var}$__agentbash_n\n\"; done; "
            )
        });
        format!(
            "__agentbash_px=\"${{POSIXLY_CORRECT+x}}:$BASHOPTS:\"; POSIXLY_CORRECT=y; {find}unset -f -- {names} 2>/dev/null; \
             case $__agentbash_px in x*) ;; *) unset POSIXLY_CORRECT; case $__agentbash_px in *:inherit_errexit:*) ;; *) builtin shopt -u inherit_errexit;; esac;; esac\n"
        )
    }

    /// The bash function `name FILE STATUS [DEFINITIONS]` that writes the dump.
    pub fn function(name: &str, delim: &str, what: Sections) -> String {
        let mut body = String::new();
        body.push_str(&format!(
            "{name}() {{\n  {}  local __agentbash_f=\"$1\" __agentbash_s=\"$2\" __agentbash_n __agentbash_a __agentbash_o\n",
            unshadow(None)
        ));
        if what.options {
            // Before anything changes them.
            // A command substitution clears -e (outside POSIX mode): take it from $-.
            body.push_str("  __agentbash_o=\"$(builtin shopt -p; builtin set +o)\"\n  case $- in *e*) __agentbash_o=\"$__agentbash_o\nset -o errexit\";; esac\n");
        }
        body.push_str("  builtin set +euvx\n  {\n");
        let d = delim;
        body.push_str(&format!(
            "    builtin printf '\\n{d} status %s\\n' \"$__agentbash_s\"\n"
        ));
        if what.cwd {
            body.push_str(&format!("    builtin printf '\\n{d} cwd\\n%s' \"$PWD\"\n"));
        }
        if what.variables {
            // One `declare -p` is far cheaper than visiting variables one by one.
            body.push_str(&format!(
                "    builtin printf '\\n{d} variables\\n'; builtin declare -p\n"
            ));
        }
        // Printing every function is the costly part of a dump; a caller that knows
        // none can have changed asks for it to be left out.
        let (open, close) = if what.definitions_on_request {
            ("    if [ \"$3\" = 1 ]; then\n", "    fi\n")
        } else {
            ("", "")
        };
        body.push_str(open);
        body.push_str(&format!(
            "    builtin printf '\\n{d} functions\\n'; builtin declare -f\n"
        ));
        body.push_str(&format!(
            "    builtin printf '\\n{d} function-names\\n'; builtin declare -F\n"
        ));
        body.push_str(&format!(
            "    builtin printf '\\n{d} aliases\\n'; builtin alias -p\n"
        ));
        body.push_str(close);
        if what.options {
            body.push_str(&format!(
                "    builtin printf '\\n{d} options\\n%s\\n' \"$__agentbash_o\"\n"
            ));
        }
        body.push_str(&format!("    builtin printf '\\n{d} end\\n'\n"));
        body.push_str("  } >| \"$__agentbash_f\" 2>/dev/null\n}\n");
        body
    }

    /// A parsed dump.
    #[derive(Debug, Default, Clone)]
    pub struct Dump {
        /// The status argument given to the dump function.
        pub status: String,
        pub cwd: Option<String>,
        /// Exported variables with their exact values.
        pub exported: BTreeMap<String, String>,
        /// Other shell variables: name → `declare -p` text.
        pub variables: BTreeMap<String, String>,
        /// name → definition as `declare -f` prints it (export lines removed).
        pub functions: BTreeMap<String, String>,
        /// name → `alias name='value'` line.
        pub aliases: BTreeMap<String, String>,
        /// `shopt -p` / `set +o` lines.
        pub options: Vec<String>,
        /// The file ended with its `end` section (it was not cut short).
        pub complete: bool,
        /// Functions and aliases were dumped.
        pub has_definitions: bool,
        /// Sections present in the file (extra ones are ignored).
        pub extra: BTreeMap<String, String>,
    }

    /// Parse a dump written with `delim`. Unknown sections are kept in `extra`.
    pub fn parse(text: &str, delim: &str) -> Dump {
        let sep = format!("\n{delim} ");
        let mut d = Dump::default();
        let mut function_text = None;
        let mut function_names = None;
        for piece in text.split(&sep).skip(1) {
            let (header, body) = piece.split_once('\n').unwrap_or((piece, ""));
            let mut words = header.splitn(2, ' ');
            let kind = words.next().unwrap_or("");
            let arg = words.next().unwrap_or("");
            match kind {
                "status" => d.status = arg.to_string(),
                "cwd" => d.cwd = Some(body.to_string()),
                "variables" => {
                    for v in parse_declare(body) {
                        if v.flags.contains('x') {
                            if let (Some(value), false) = (v.value, v.flags.contains(['a', 'A'])) {
                                d.exported.insert(v.name, value);
                            }
                        } else if !v.flags.contains('r') {
                            d.variables.insert(v.name, v.line);
                        }
                    }
                }
                "functions" => {
                    d.has_definitions = true;
                    function_text = Some(body.to_string());
                }
                "function-names" => function_names = Some(body.to_string()),
                "aliases" => d.aliases = parse_aliases(body),
                "options" => {
                    d.options = body
                        .lines()
                        .map(str::to_string)
                        .filter(|l| !l.is_empty())
                        .collect();
                }
                "end" => d.complete = true,
                other => {
                    d.extra.insert(
                        format!("{other} {arg}").trim().to_string(),
                        body.to_string(),
                    );
                }
            }
        }
        if let (Some(t), Some(n)) = (function_text, function_names) {
            d.functions = split_functions(&t, &n);
        }
        d
    }

    /// One entry of `declare -p` output.
    #[derive(Debug, Clone, PartialEq, Eq)]
    pub struct Declared {
        pub name: String,
        /// Attribute letters (`-` for none): `x` exported, `r` readonly, `a`/`A` arrays.
        pub flags: String,
        /// The whole entry, which re-creates the variable when sourced.
        pub line: String,
        /// A scalar's value, unquoted (`None` for arrays and unset variables).
        pub value: Option<String>,
    }

    /// Parse `declare -p` output. Values are quoted (`"..."`, `$'...'`, `'...'`,
    /// arrays in parentheses), so an entry ends at the first newline outside quotes
    /// whatever the value holds.
    pub fn parse_declare(text: &str) -> Vec<Declared> {
        let b = text.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if !text[i..].starts_with("declare -") {
                i += text[i..].find('\n').map_or(b.len() - i, |n| n + 1);
                continue;
            }
            let start = i;
            i += "declare ".len();
            let flags_end = text[i..].find(' ').map_or(b.len(), |n| i + n);
            let flags = text[i..flags_end].trim_start_matches('-').to_string();
            i = (flags_end + 1).min(b.len());
            let name_end = text[i..].find(['=', '\n']).map_or(b.len(), |n| i + n);
            let name = text[i..name_end].to_string();
            i = name_end;
            let mut value = None;
            if i < b.len() && b[i] == b'=' {
                let (v, end) = parse_value(b, i + 1);
                value = v.map(|v| String::from_utf8_lossy(&v).into_owned());
                i = end;
            }
            out.push(Declared {
                name,
                flags: if flags.is_empty() { "-".into() } else { flags },
                line: text[start..i].to_string(),
                value,
            });
            i += 1;
        }
        out
    }

    /// A value starting at `i`: (the unquoted scalar, or `None` for an array; index of
    /// the newline ending the entry).
    fn parse_value(b: &[u8], mut i: usize) -> (Option<Vec<u8>>, usize) {
        let mut v = Vec::new();
        let mut scalar = true;
        let mut depth = 0usize;
        while i < b.len() && (b[i] != b'\n' || depth > 0) {
            match b[i] {
                b'"' => {
                    i += 1;
                    while i < b.len() && b[i] != b'"' {
                        if b[i] == b'\\'
                            && i + 1 < b.len()
                            && matches!(b[i + 1], b'"' | b'\\' | b'$' | b'`' | b'\n')
                        {
                            if b[i + 1] != b'\n' {
                                v.push(b[i + 1]);
                            }
                            i += 2;
                        } else {
                            v.push(b[i]);
                            i += 1;
                        }
                    }
                    i += 1;
                }
                b'$' if b.get(i + 1) == Some(&b'\'') => i = ansi_c(b, i + 2, &mut v),
                b'\'' => {
                    i += 1;
                    while i < b.len() && b[i] != b'\'' {
                        v.push(b[i]);
                        i += 1;
                    }
                    i += 1;
                }
                b'(' => {
                    scalar = false;
                    depth += 1;
                    i += 1;
                }
                b')' => {
                    depth = depth.saturating_sub(1);
                    i += 1;
                }
                c => {
                    v.push(c);
                    i += 1;
                }
            }
        }
        (scalar.then_some(v), i.min(b.len()))
    }

    /// Decode `$'...'` from just after the opening quote; returns the index after the
    /// closing one.
    fn ansi_c(b: &[u8], mut i: usize, v: &mut Vec<u8>) -> usize {
        let digits = |b: &[u8], i: usize, max: usize, radix: u32| {
            let mut n = 0u32;
            let mut k = 0;
            while k < max && i + k < b.len() && (b[i + k] as char).is_digit(radix) {
                n = n * radix + (b[i + k] as char).to_digit(radix).unwrap_or(0);
                k += 1;
            }
            (n, k)
        };
        while i < b.len() && b[i] != b'\'' {
            if b[i] != b'\\' || i + 1 >= b.len() {
                v.push(b[i]);
                i += 1;
                continue;
            }
            let c = b[i + 1];
            i += 2;
            match c {
                b'a' => v.push(7),
                b'b' => v.push(8),
                b'e' | b'E' => v.push(27),
                b'f' => v.push(12),
                b'n' => v.push(b'\n'),
                b'r' => v.push(b'\r'),
                b't' => v.push(b'\t'),
                b'v' => v.push(11),
                b'0'..=b'7' => {
                    let (n, k) = digits(b, i - 1, 3, 8);
                    v.push(n as u8);
                    i += k - 1;
                }
                b'x' | b'u' | b'U' => {
                    let max = match c {
                        b'x' => 2,
                        b'u' => 4,
                        _ => 8,
                    };
                    let (n, k) = digits(b, i, max, 16);
                    if k == 0 {
                        v.extend_from_slice(&[b'\\', c]);
                    } else if c == b'x' {
                        v.push(n as u8);
                    } else {
                        let mut buf = [0u8; 4];
                        v.extend_from_slice(
                            char::from_u32(n)
                                .unwrap_or('\u{fffd}')
                                .encode_utf8(&mut buf)
                                .as_bytes(),
                        );
                    }
                    i += k;
                }
                b'c' if i < b.len() => {
                    v.push(b[i] & 0x1f);
                    i += 1;
                }
                other => v.push(other),
            }
        }
        i + 1
    }

    /// Parse a dump whatever its delimiter (the first line names it).
    pub fn parse_any(text: &str) -> Dump {
        let first = text
            .trim_start_matches('\n')
            .split(' ')
            .next()
            .unwrap_or("");
        if first.starts_with("__AGENTBASH_") {
            parse(text, first)
        } else {
            Dump::default()
        }
    }

    /// Split `declare -f` output into functions, using the `declare -F` name list
    /// (both sorted the same way) to find where each definition starts.
    pub fn split_functions(text: &str, names: &str) -> BTreeMap<String, String> {
        let names: Vec<(String, bool)> = names
            .lines()
            .filter_map(|l| {
                let rest = l.strip_prefix("declare -f")?;
                let (flags, name) = rest.split_once(' ')?;
                Some((name.to_string(), flags.contains('x')))
            })
            .collect();
        let mut out = BTreeMap::new();
        let mut starts = Vec::new();
        let mut from = 0;
        for (name, _) in &names {
            let header = format!("{name} () \n{{ \n");
            let found = if text[from..].starts_with(&header) {
                Some(from)
            } else {
                text[from..]
                    .find(&format!("\n{header}"))
                    .map(|i| from + i + 1)
            };
            match found {
                Some(i) => {
                    starts.push((name.clone(), i));
                    from = i + header.len();
                }
                None => starts.push((name.clone(), usize::MAX)),
            }
        }
        let found: Vec<(String, usize)> = starts
            .into_iter()
            .filter(|(_, i)| *i != usize::MAX)
            .collect();
        for (k, (name, start)) in found.iter().enumerate() {
            let end = found.get(k + 1).map(|(_, i)| *i).unwrap_or(text.len());
            let mut def = text[*start..end].trim_end_matches('\n').to_string();
            let export_line = format!("\ndeclare -fx {name}");
            if def.ends_with(&export_line) {
                def.truncate(def.len() - export_line.len());
            }
            out.insert(name.clone(), def);
        }
        out
    }

    /// Parse `alias -p` output: `alias NAME='value'` entries, values possibly spanning
    /// lines, quotes escaped as `'\''`.
    pub fn parse_aliases(text: &str) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let b = text.as_bytes();
        let mut i = 0;
        while i < b.len() {
            if !text[i..].starts_with("alias ") {
                // Skip to the next line.
                match text[i..].find('\n') {
                    Some(j) => i += j + 1,
                    None => break,
                }
                continue;
            }
            let start = i;
            let Some(eq) = text[i..].find('=') else { break };
            let name = text[i + 6..i + eq].trim_start_matches("-- ").to_string();
            let mut j = i + eq + 1;
            // A sequence of '...' and \' pieces, ending at a newline outside quotes.
            loop {
                if j >= b.len() || b[j] == b'\n' {
                    break;
                }
                if b[j] == b'\'' {
                    match text[j + 1..].find('\'') {
                        Some(k) => j += k + 2,
                        None => {
                            j = b.len();
                            break;
                        }
                    }
                } else if b[j] == b'\\' {
                    j += 2;
                } else {
                    j += 1;
                }
            }
            let end = j.min(b.len());
            out.insert(name, text[start..end].to_string());
            i = end + 1;
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::dump::*;

    #[test]
    fn splits_functions_even_with_lookalike_lines() {
        let text = "f () \n{ \n    cat <<EOF\n}\ng () \nEOF\n\n}\ng () \n{ \n    :\n}\ndeclare -fx g\nh-x () \n{ \n    :\n}\n";
        let names = "declare -f f\ndeclare -fx g\ndeclare -f h-x\n";
        let m = split_functions(text, names);
        assert_eq!(m.len(), 3);
        assert!(m["f"].contains("g () \nEOF"));
        assert_eq!(m["g"], "g () \n{ \n    :\n}");
        assert_eq!(m["h-x"], "h-x () \n{ \n    :\n}");
    }

    #[test]
    fn parses_aliases() {
        let m = parse_aliases("alias a1='echo '\\''x'\\''\ny'\nalias ll='ls -l'\n");
        assert_eq!(m["a1"], "alias a1='echo '\\''x'\\''\ny'");
        assert_eq!(m["ll"], "alias ll='ls -l'");
    }

    #[test]
    fn parses_sections() {
        let d = "D";
        let text = "\nD status 3\n\nD cwd\n/tmp/x y\nD variables\ndeclare -x PATH=\"/bin\"\ndeclare -x MULTI=$'a\\nb'\ndeclare -a arr=([0]=\"1\")\ndeclare -r RO=\"1\"\n\nD functions\n\nD function-names\n\nD aliases\n\nD end\n";
        let p = parse(text, d);
        assert_eq!(p.status, "3");
        assert_eq!(p.cwd.as_deref(), Some("/tmp/x y"));
        assert_eq!(p.exported["PATH"], "/bin");
        assert_eq!(p.exported["MULTI"], "a\nb");
        assert_eq!(p.variables["arr"], "declare -a arr=([0]=\"1\")");
        assert!(!p.variables.contains_key("RO"));
        assert!(p.complete);
    }

    #[test]
    fn declare_values_round_trip_through_real_bash() {
        // Every awkward value bash can hold, printed by bash and read back.
        let values = [
            "plain",
            "",
            "two words",
            "q\"uote",
            "back\\slash",
            "dol$lar",
            "back`tick",
            "new\nline",
            "tab\there",
            "\u{1}ctrl\u{7f}",
            "héllo wörld",
            "'single'",
            "$'not-ansi'",
            "a=b",
            "trailing\\",
        ];
        let mut script = String::new();
        for (k, v) in values.iter().enumerate() {
            script.push_str(&format!("export V{k}={}\n", super::quote(v)));
        }
        script.push_str(
            "declare -a arr=(\"x y\" $'z\\n'); declare -A as=([k]=v); declare -i n=5; declare -p\n",
        );
        let out = std::process::Command::new("bash")
            .arg("-c")
            .arg(&script)
            .output()
            .expect("bash");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let decl = parse_declare(&text);
        for (k, v) in values.iter().enumerate() {
            let e = decl
                .iter()
                .find(|d| d.name == format!("V{k}"))
                .expect("declared");
            assert_eq!(e.value.as_deref(), Some(*v), "V{k} from {:?}", e.line);
            assert!(e.flags.contains('x'));
        }
        let arr = decl.iter().find(|d| d.name == "arr").expect("arr");
        assert_eq!(arr.value, None);
        assert!(arr.line.starts_with("declare -a arr=("));
        assert!(decl.iter().any(|d| d.name == "as" && d.flags == "A"));
        assert!(
            decl.iter()
                .any(|d| d.name == "n" && d.value.as_deref() == Some("5"))
        );
    }
}
