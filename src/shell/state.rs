//! Shell state as one stage of the run: before the command, the rc snapshot
//! and the session are made ready ([`prepare`]); after it, the session is committed or
//! left as it was ([`Prepared::finish`]).
//!
//! The state reaches the shell through `BASH_ENV`, a file bash sources before it parses
//! the `-c` text: aliases are then usable on the command's first line and error
//! messages keep their line numbers (a prelude prepended to the script would shift
//! both). The prelude unsets `BASH_ENV` first, so scripts the command runs do not
//! source it again.
//!
//! What the snapshot and the session share lives beside it: quoting, private (0600)
//! writes and the flock in `store`, the bash state dump and its parser in `dump`.

use super::session::{ActiveSession, SessionError, SessionStore};
use super::snapshot::{self, Snapshot, SnapshotPlan};
use crate::display::quote;
use crate::paths::CwdError;
use crate::process::CancelToken;
use crate::shell::env::BuiltEnv;
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
    /// The variables the session unset.
    pub unset: Vec<String>,
    /// The functions and aliases the session holds (names): their bodies are not in
    /// the command line.
    pub definitions: Vec<String>,
    /// The aliases among them (a walk does not expand aliases).
    pub aliases: Vec<String>,
    /// The bash that defines them, as saved: a walk of the command after it sees
    /// through a call to a session function to its body.
    pub saved_definitions: Option<String>,
    /// The prefixes approved "always" for the session (see
    /// `SessionStore::honoured_approvals`).
    pub approved: Vec<String>,
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
    shell_cfg: &crate::config::profile::ShellCfg,
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
        let saved = store.load(name).ok().flatten();
        let approved = store.honoured_approvals(name, saved.as_ref());
        let saved = saved.unwrap_or_default();
        SessionPlan {
            name: name.to_string(),
            dir,
            cwd: saved.cwd,
            exported: saved.env_set,
            unset: saved.env_unset.into_iter().collect(),
            saved_definitions: (!saved.functions.is_empty() || !saved.aliases.is_empty())
                .then(|| store.saved_definitions(name))
                .flatten(),
            aliases: saved.aliases.clone(),
            definitions: saved.functions.into_iter().chain(saved.aliases).collect(),
            approved,
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
    sandbox: &crate::sandbox::Policy,
) -> Result<Prepared, Stopped> {
    let mut warnings = Vec::new();
    let mut notices = Vec::new();
    let started = Instant::now();
    let mut session = None;
    if let Some(sp) = &plan.session {
        if !crate::shell::resolve::is_bash(shell) {
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
    let ensured = snapshot::ensure(&plan.snapshot, env, false, sandbox);
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

    /// The cwd error, plus a hint when it is the session's directory that is gone.
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
    pub fn finish(&mut self, committed: bool, unchanged: bool) -> Option<PathBuf> {
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

    /// Refuse a session made under another sandbox policy than `policy` (this run's
    /// fingerprint), before anything of it is sourced; else remember the policy for
    /// the commit.
    pub fn adopt_policy(&mut self, policy: super::session::SandboxPolicy) -> Result<(), String> {
        match &mut self.session {
            Some(s) => s.adopt_policy(policy).map_err(|e| e.to_string()),
            None => Ok(()),
        }
    }

    /// What a sandboxed command must still be able to write: its session's exchange
    /// directory, where the shell leaves its pending state (and nothing of any other
    /// session).
    pub fn session_exchange(&self) -> Option<PathBuf> {
        self.session
            .as_ref()
            .map(|s| s.exchange_dir().to_path_buf())
    }

    /// The snapshot's identity for the live-shell key (path and content hash).
    pub fn snapshot_id(&self) -> Option<(PathBuf, u64)> {
        self.snapshot
            .as_ref()
            .map(|s| (s.path.clone(), s.content_hash))
    }
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
