//! The sandbox stage: which [`Policy`] a run gets (the profile's `[sandbox]`, narrowed
//! or widened by `--sandbox`), and, once its cwd is known, the confinement the spawner
//! applies, the run's private TMPDIR, and what the result says about both.

use crate::executor::End;
use crate::result::{NetworkShown, SandboxInfo};
/// A destination the run's network proxy refused.
use crate::sandbox::Refusal as NetRefusal;
use crate::sandbox::{self, Confinement, Mode, Network, Policy, Resolved};
use crate::shell::session::SandboxPolicy;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The policy a run asks for: the profile's, with the mode a caller asked for. A
/// workspace the profile leaves unset is the directory agentbash was started in, never
/// the run's own cwd: a request's `cwd`, `--cwd` or a session that ran `cd /` must not
/// make `/` the workspace.
pub fn plan(profile: &Policy, requested: Option<Mode>, invoking_dir: &Path) -> Policy {
    let mut policy = profile.clone();
    if let Some(mode) = requested {
        policy.mode = mode;
    }
    if policy.workspace.is_none() {
        policy.workspace_by_default = true;
        policy.workspace = Some(invoking_dir.to_path_buf());
    }
    policy
}

/// agentbash's own directories: what a command must never rewrite (its profiles and
/// trust records, snapshots, sessions, job records, artifacts), even when a writable
/// tree of the sandbox covers them.
pub fn own_dirs() -> Vec<PathBuf> {
    let mut dirs = vec![crate::paths::state_dir(), crate::paths::cache_dir()];
    dirs.extend(crate::config::profile::Lookup::config_dir());
    dirs.extend(crate::shell::store::runtime_dir());
    dirs
}

/// `off`, `read-only` or `workspace-write`, as a flag or a request field spells it.
pub fn parse_mode(text: &str) -> Result<Mode, String> {
    match text {
        "off" => Ok(Mode::Off),
        "read-only" => Ok(Mode::ReadOnly),
        "workspace-write" => Ok(Mode::WorkspaceWrite),
        other => Err(format!(
            "`sandbox` must be \"off\", \"read-only\" or \"workspace-write\", not {other:?}"
        )),
    }
}

/// A server peer's `sandbox` field: honoured only where the profile says
/// `allow_override = true`, since the peer is usually the model the sandbox confines.
pub fn peer_override(profile: &Policy, requested: Option<&str>) -> Result<Option<Mode>, String> {
    let Some(text) = requested else {
        return Ok(None);
    };
    let mode = parse_mode(text)?;
    if mode != profile.mode && !profile.allow_override {
        return Err(format!(
            "`sandbox` refused: this server's profile fixes the sandbox at {:?} ([sandbox] allow_override = false); the request was not run",
            mode_name(profile.mode)
        ));
    }
    Ok(Some(mode))
}

pub fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Off => "off",
        Mode::ReadOnly => "read-only",
        Mode::WorkspaceWrite => "workspace-write",
    }
}

/// What a run is confined by; `None` inside when the sandbox is off.
#[derive(Debug, Default)]
pub struct RunSandbox {
    confinement: Option<Arc<Confinement>>,
    info: Option<SandboxInfo>,
    /// With the sandbox off, what it would have confined that the profile asked for.
    off_warning: Option<String>,
    /// The workspace (in `workspace-write`) and the profile's `writable` paths.
    writable: Vec<PathBuf>,
    /// The profile's `writable` paths, expanded (for the session's fingerprint).
    profile_writable: Vec<PathBuf>,
    /// agentbash's own paths the command writes (kept apart, see [`OwnWritable`]).
    own: OwnWritable,
    deny_read: Vec<PathBuf>,
    warnings: Vec<String>,
}

/// agentbash's own paths a sandboxed command must be able to write, kept apart from
/// the profile's `writable`: agentbash keeps its own state and cache directories
/// read-only inside the sandbox, and these two are the exceptions. Each is a directory
/// that holds nothing agentbash executes or trusts:
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OwnWritable {
    /// The session's exchange directory, where its shell leaves the pending state that
    /// agentbash reads back (as hostile input) after the run.
    pub session_exchange: Option<PathBuf>,
    /// The per-workspace package-manager cache ([`package_cache`]), used only by
    /// sandboxed runs.
    pub package_cache: Option<PathBuf>,
}

impl OwnWritable {
    /// Every path, in a fixed order.
    pub fn paths(&self) -> Vec<PathBuf> {
        self.session_exchange
            .iter()
            .chain(&self.package_cache)
            .cloned()
            .collect()
    }
}

/// Prepare the plan's policy for a run in `cwd`: create the private TMPDIR and build
/// everything the child needs. `Err` (exit 125) when `required = true` and nothing can
/// enforce it, or a configured path is unusable.
///
/// `session_exchange` is the run's session's exchange directory, the one file of
/// agentbash's the command's shell writes (nothing of any other run is writable);
/// `package_cache`: give a `workspace-write` run agentbash's package cache for its
/// workspace (`env.sandbox_caches`).
pub fn prepare(
    plan: &super::Plan,
    cwd: &Path,
    session_exchange: Option<PathBuf>,
    package_cache: bool,
) -> Result<RunSandbox, String> {
    let mut policy = plan.sandbox.clone();
    if policy.mode == Mode::Off {
        // A network list is a restriction the user asked for: never dropped silently.
        let off_warning = policy.network.allowlist().map(|_| {
            "sandbox: [sandbox] network lists destinations, but the sandbox is off (mode = \"off\"), so the command has the host's network; set [sandbox] mode = \"read-only\" or \"workspace-write\" to enforce the list".to_string()
        });
        return Ok(RunSandbox {
            off_warning,
            ..RunSandbox::default()
        });
    }
    let mut warnings = Vec::new();
    let mut own = OwnWritable {
        session_exchange,
        package_cache: None,
    };
    if package_cache && policy.mode == Mode::WorkspaceWrite {
        match self::package_cache(&workspace(&policy, cwd), &plan.env.vars) {
            Ok(dir) => own.package_cache = Some(dir),
            Err(w) => warnings.push(w),
        }
    }
    let shown_writable = policy.writable.len();
    // agentbash's own paths the command's shell writes: writable even inside its own
    // directories, which stay read-only whatever `writable` covers (and left out of
    // what the result shows).
    policy.own_writable.extend(own.paths());
    policy.writable.extend(own.paths());
    policy.own_dirs = own_dirs();
    policy
        .own_dirs
        .extend(plan.artifact_dir.iter().map(|d| d.path.clone()));
    let policy = &policy;
    let tmpdir = private_tmpdir()?;
    let (prepared, weaker) = prepare_policy(policy, cwd, tmpdir.path())?;
    let mut info = info(policy, cwd, &prepared, Some(tmpdir.path()));
    info.weaker = weaker.or(info.weaker);
    info.writable.truncate(shown_writable);
    info.package_cache = own.package_cache.as_ref().map(|p| p.display().to_string());
    let mut writable = vec![tmpdir.path().to_path_buf()];
    if policy.mode == Mode::WorkspaceWrite {
        writable.push(workspace(policy, cwd));
    }
    let profile_writable: Vec<PathBuf> = policy.writable[..shown_writable]
        .iter()
        .map(|p| expand(p))
        .collect();
    writable.extend(profile_writable.iter().cloned());
    let deny_read = policy.deny_read.iter().map(|p| expand(p)).collect();
    Ok(RunSandbox {
        confinement: Some(Arc::new(Confinement {
            prepared,
            tmpdir: Some(tmpdir),
        })),
        info: Some(info),
        off_warning: None,
        writable,
        profile_writable,
        own,
        deny_read,
        warnings,
    })
}

/// The package managers whose caches a sandboxed run keeps in agentbash's cache, with
/// the directory each gets there. Cargo's `CARGO_HOME` also holds the user's
/// configuration, which [`cargo_home`] links in.
const PACKAGE_CACHES: &[(&str, &str)] = &[
    ("PIP_CACHE_DIR", "pip"),
    ("UV_CACHE_DIR", "uv"),
    ("npm_config_cache", "npm"),
    ("GOCACHE", "go-build"),
    ("GOMODCACHE", "go-mod"),
    ("CARGO_HOME", "cargo"),
];

/// agentbash's package cache for `workspace` (`<cache dir>/sandbox-cache/<hash of the
/// workspace path>`, 0700, made when missing): the one place a sandboxed run's pip,
/// uv, npm, go and cargo keep what they download, so that a sandbox does not make
/// them download everything again on every run. It is never the user's own cache: a
/// command confined by the sandbox could poison it, and the user's next unsandboxed
/// build would run what it planted. `env` is the run's environment (for the user's
/// `CARGO_HOME`). `Err` is a warning: the run goes on without it.
fn package_cache(workspace: &Path, env: &BTreeMap<String, String>) -> Result<PathBuf, String> {
    // The workspace as the sandbox binds it (the invoking directory is already the
    // kernel's own spelling of it): resolving it again would cost a readlink per
    // component on every run.
    let dir = crate::paths::cache_dir()
        .join("sandbox-cache")
        .join(format!(
            "{:016x}",
            crate::ids::fnv64(workspace.as_os_str().as_encoded_bytes())
        ));
    crate::paths::private_dir(&dir).map_err(|e| {
        format!("sandbox: no package cache for this workspace ({e}); package managers run with their own caches read-only")
    })?;
    // Made once; afterwards the command may write here: a name it replaced is left to
    // it, never followed.
    if std::fs::symlink_metadata(dir.join("cargo")).is_err() {
        for (_, sub) in PACKAGE_CACHES {
            use std::os::unix::fs::DirBuilderExt;
            let _ = std::fs::DirBuilder::new().mode(0o700).create(dir.join(sub));
        }
    }
    cargo_home(&dir.join("cargo"), env);
    Ok(dir)
}

/// Cargo keeps its configuration (`config.toml`, or `config`) in `CARGO_HOME` next to
/// its registry cache: the sandbox's `CARGO_HOME` links to the user's configuration
/// files (mirrors, `net.git-fetch-with-cli`, target settings), so that builds behave as
/// they do outside, and caches crates of its own. Credentials (`credentials.toml`) are
/// not linked: a sandboxed command does not publish.
fn cargo_home(dir: &Path, env: &BTreeMap<String, String>) {
    let user = env
        .get("CARGO_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| env.get("HOME").map(|h| Path::new(h).join(".cargo")));
    let Some(user) = user else {
        return;
    };
    for name in ["config.toml", "config"] {
        let (target, link) = (user.join(name), dir.join(name));
        if target.is_file() && std::fs::symlink_metadata(&link).is_err() {
            let _ = std::os::unix::fs::symlink(&target, &link);
        }
    }
}

/// What `explain` shows: the engine this machine would use, with nothing created.
pub fn describe(policy: &Policy, cwd: &Path) -> Result<Option<SandboxInfo>, String> {
    if policy.mode == Mode::Off {
        return Ok(None);
    }
    let (prepared, weaker) = prepare_policy(policy, cwd, cwd)?;
    let mut info = info(policy, cwd, &prepared, None);
    info.weaker = weaker.or(info.weaker);
    Ok(Some(info))
}

/// The sandbox a job's supervisor prepared for `plan` in `cwd`, seen from outside
/// it (rpc/mcp `jobs.background_after` answers for the job as for a run): the same
/// policy, paths and notices, with `tmpdir` the job's private TMPDIR; nothing is
/// created and there is nothing to apply.
pub fn described(
    plan: &super::Plan,
    cwd: &Path,
    tmpdir: Option<&Path>,
) -> Result<RunSandbox, String> {
    let policy = &plan.sandbox;
    let Some(mut info) = describe(policy, cwd)? else {
        return Ok(RunSandbox::default());
    };
    info.tmpdir = tmpdir.map(|t| t.display().to_string());
    // The first entry is the private TMPDIR (see `writable_list`); one that cannot
    // match stands in when the job's is not known.
    let mut writable = vec![tmpdir.map_or_else(
        || PathBuf::from("/nonexistent/agentbash-job-tmpdir"),
        Path::to_path_buf,
    )];
    if policy.mode == Mode::WorkspaceWrite {
        writable.push(workspace(policy, cwd));
    }
    let profile_writable: Vec<PathBuf> = policy.writable.iter().map(|p| expand(p)).collect();
    writable.extend(profile_writable.iter().cloned());
    Ok(RunSandbox {
        confinement: None,
        info: Some(info),
        writable,
        profile_writable,
        deny_read: policy.deny_read.iter().map(|p| expand(p)).collect(),
        ..RunSandbox::default()
    })
}

/// [`sandbox::prepare`], with `engine = "bwrap"` (not run in-process yet) treated like
/// any engine this machine lacks: refused when `required`, else nothing enforced.
fn prepare_policy(
    policy: &Policy,
    cwd: &Path,
    tmpdir: &Path,
) -> Result<(sandbox::Prepared, Option<String>), String> {
    if policy.engine != sandbox::Engine::Bwrap {
        let prepared = sandbox::prepare(policy, cwd, tmpdir).map_err(|e| e.to_string())?;
        return Ok((prepared, None));
    }
    let reason =
        "engine \"bwrap\" is not supported yet (use \"auto\", \"namespaces\" or \"landlock\")";
    if policy.required {
        return Err(sandbox::SandboxError::Unavailable {
            reason: reason.into(),
        }
        .to_string());
    }
    let none = Policy {
        engine: sandbox::Engine::None,
        ..policy.clone()
    };
    let prepared = sandbox::prepare(&none, cwd, tmpdir).map_err(|e| e.to_string())?;
    Ok((prepared, Some(reason.into())))
}

fn workspace(policy: &Policy, cwd: &Path) -> PathBuf {
    policy
        .workspace
        .as_deref()
        .map_or_else(|| cwd.to_path_buf(), expand)
}

fn expand(path: &Path) -> PathBuf {
    crate::paths::expand_tilde(&path.to_string_lossy())
}

fn info(
    policy: &Policy,
    cwd: &Path,
    prepared: &sandbox::Prepared,
    tmpdir: Option<&Path>,
) -> SandboxInfo {
    let (engine, landlock, network_isolated) = match prepared.resolved() {
        Resolved::None => ("none", false, false),
        Resolved::Landlock => ("landlock", true, !policy.network.is_on()),
        Resolved::Namespaces {
            landlock,
            network_namespace,
        } => ("namespaces", landlock, network_namespace || landlock),
    };
    let shown = |p: &Path| p.display().to_string();
    SandboxInfo {
        mode: policy.mode,
        engine,
        landlock,
        network: match (&policy.network, prepared.proxy()) {
            (Network::Allow(list), Some(_)) => {
                NetworkShown::List(list.entries().into_iter().map(str::to_owned).collect())
            }
            (network, _) => NetworkShown::Open(network.is_on() || !network_isolated),
        },
        network_allow_local: policy.network_allow_local && prepared.proxy().is_some(),
        network_denied: Vec::new(),
        workspace: (policy.mode == Mode::WorkspaceWrite).then(|| shown(&workspace(policy, cwd))),
        writable: policy.writable.iter().map(|p| shown(p)).collect(),
        deny_read: policy.deny_read.iter().map(|p| shown(p)).collect(),
        tmpdir: tmpdir.map(shown),
        package_cache: None,
        weaker: prepared.reason().map(str::to_owned),
        // Most credential stores of a deny_read list do not exist on a given machine.
        notes: prepared
            .notes()
            .iter()
            .filter(|n| !n.ends_with("nothing to hide"))
            .cloned()
            .collect(),
    }
}

/// `0700` under the state dir's `tmp/` (0700 too, so it is on the user's own file
/// system), else `/tmp`. Created with its mode in the one `mkdir`, and `tmp/` only made
/// (and checked) when that fails: this is on every sandboxed run's start-up path.
fn private_tmpdir() -> Result<tempfile::TempDir, String> {
    use std::os::unix::fs::PermissionsExt;
    let private = || std::fs::Permissions::from_mode(0o700);
    let base = crate::paths::state_dir().join("tmp");
    let in_base = || {
        tempfile::Builder::new()
            .prefix("run-")
            .permissions(private())
            .tempdir_in(&base)
    };
    let made = in_base()
        .or_else(|_| {
            crate::paths::private_dir(&base)
                .map_err(std::io::Error::from)
                .and_then(|()| in_base())
        })
        .or_else(|_| {
            tempfile::Builder::new()
                .prefix("agentbash-run-")
                .permissions(private())
                .tempdir()
        });
    made.map_err(|e| format!("sandbox: cannot create the run's private TMPDIR: {e}"))
}

impl RunSandbox {
    /// For [`crate::process::SpawnSpec::sandbox`].
    pub fn confinement(&self) -> Option<Arc<Confinement>> {
        self.confinement.clone()
    }

    /// For the result's `sandbox` object.
    pub fn info(&self) -> Option<SandboxInfo> {
        self.info.clone()
    }

    /// Tells a sandboxed shell from an unsandboxed one in the live-shell pool.
    pub fn key(&self) -> Option<String> {
        self.info
            .as_ref()
            .map(|i| {
                format!(
                    "{:?} {:?} {:?} {:?}",
                    i, self.writable, self.own, self.deny_read
                )
            })
            .map(
                |k| match self.info.as_ref().and_then(|i| i.tmpdir.as_deref()) {
                    // The TMPDIR differs per run; the shell keeps the first one.
                    Some(tmp) => k.replace(tmp, ""),
                    None => k,
                },
            )
    }

    /// Git files the command created that would change what git runs outside the
    /// sandbox, moved aside, each with a notice (see [`sandbox::Prepared::audit`]).
    pub fn audit(&self) -> Vec<String> {
        self.confinement
            .as_ref()
            .map(|c| c.prepared.audit())
            .unwrap_or_default()
    }

    /// Point the command's temporary files at its private TMPDIR.
    ///
    /// With a network allowlist, every proxy variable points at agentbash's proxy too:
    /// HTTP(S) through `CONNECT`/absolute-form requests, everything else through SOCKS5
    /// with names (`socks5h`), and no destination exempt (loopback too goes through it).
    pub fn apply_tmpdir(&self, env: &mut BTreeMap<String, String>) {
        if let Some(tmp) = self.info.as_ref().and_then(|i| i.tmpdir.clone()) {
            env.insert("TMPDIR".into(), tmp);
        }
        if let Some(plan) = self.confinement.as_ref().and_then(|c| c.prepared.proxy()) {
            let http = format!("http://127.0.0.1:{}", plan.port);
            let socks = format!("socks5h://127.0.0.1:{}", plan.port);
            for (name, value) in [
                ("HTTP_PROXY", &http),
                ("HTTPS_PROXY", &http),
                ("ALL_PROXY", &socks),
                ("NO_PROXY", &String::new()),
            ] {
                env.insert(name.to_ascii_lowercase(), value.clone());
                env.insert(name.into(), value.clone());
            }
        }
    }

    /// The network log of this run's own proxy plan (a job's supervisor reads it as
    /// the job runs).
    pub fn network_log(&self) -> Option<Arc<sandbox::NetworkLog>> {
        self.confinement
            .as_ref()
            .and_then(|c| c.prepared.proxy())
            .map(|plan| plan.log.clone())
    }

    /// What this run's proxy refused (empty without an allowlist).
    pub fn network_denied(&self) -> Vec<NetRefusal> {
        self.network_log()
            .map(|log| log.snapshot())
            .unwrap_or_default()
    }

    /// One notice per refused destination (the first few; then how many more), each
    /// naming the key to change.
    pub fn network_notices(&self, denied: &[NetRefusal]) -> Vec<String> {
        const SHOWN: usize = 5;
        let Some(plan) = self.confinement.as_ref().and_then(|c| c.prepared.proxy()) else {
            return Vec::new();
        };
        // The log's overflow entry (port 0) names no destination.
        let shown: Vec<&NetRefusal> = denied.iter().filter(|r| r.port != 0).take(SHOWN).collect();
        let mut notices: Vec<String> = shown.iter().map(|r| r.notice(&plan.allowlist)).collect();
        let total: u64 = denied.iter().map(|r| r.count).sum();
        let more = total - shown.iter().map(|r| r.count).sum::<u64>();
        if more > 0 {
            notices.push(format!(
                "[sandbox: {more} more network connections were refused; sandbox.network_denied lists them]"
            ));
        }
        notices
    }

    /// Point the command's package managers' caches at the workspace's package cache,
    /// except the variables `explicit` names (set by the profile or a flag: those win).
    pub fn apply_cache_env(
        &self,
        env: &mut BTreeMap<String, String>,
        explicit: &dyn Fn(&str) -> bool,
    ) {
        if let Some(dir) = &self.own.package_cache {
            for (var, sub) in PACKAGE_CACHES {
                if !explicit(var) {
                    env.insert((*var).into(), dir.join(sub).display().to_string());
                }
            }
        }
    }

    /// Warnings for the result: the sandbox asked for is not enforced at all, or the
    /// package cache could not be made.
    pub fn warnings(&self) -> Vec<String> {
        let mut v = self.warnings.clone();
        v.extend(self.off_warning.clone());
        if let Some(info) = self.info.as_ref().filter(|i| i.engine == "none") {
            v.push(format!(
                "sandbox: [sandbox] mode = {:?} is NOT enforced: {}; the command ran unconfined",
                mode_name(info.mode),
                info.weaker.as_deref().unwrap_or("no engine")
            ));
        }
        v
    }

    /// The policy a session remembers and compares (see `shell::session`): a hash
    /// of everything that decides what the command can do — mode, engine, workspace,
    /// writable, deny_read, network — stable from run to run (paths expanded, lists
    /// sorted), with a one-line summary. `off` when nothing confines the run.
    pub fn fingerprint(&self) -> SandboxPolicy {
        let Some(info) = &self.info else {
            return SandboxPolicy::off();
        };
        let sorted = |paths: &[PathBuf]| {
            let mut v: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
            v.sort_unstable();
            v.dedup();
            v
        };
        let (writable, deny_read) = (sorted(&self.profile_writable), sorted(&self.deny_read));
        let network = match &info.network {
            NetworkShown::Open(true) => "on".to_string(),
            NetworkShown::Open(false) => "off".to_string(),
            NetworkShown::List(list) => format!("only {}", list.join(" ")),
        };
        let full = serde_json::json!({
            "mode": mode_name(info.mode),
            "engine": info.engine,
            "workspace": info.workspace,
            "writable": writable,
            "deny_read": deny_read,
            "network": network,
        });
        let workspace = info
            .workspace
            .as_deref()
            .map(|w| format!(", workspace {w}"))
            .unwrap_or_default();
        SandboxPolicy {
            fingerprint: format!("{:016x}", crate::ids::fnv64(full.to_string().as_bytes())),
            summary: format!(
                "{} (engine {}{workspace}, network {network}, {} writable and {} deny_read paths)",
                mode_name(info.mode),
                info.engine,
                writable.len(),
                deny_read.len()
            ),
        }
    }

    /// When a failed command's output shows the sandbox refused a write (or hid a
    /// path), a line saying so: the OS error alone reads like a broken machine. `cwd`
    /// is the run's directory (error lines often name paths relative to it).
    pub fn denial_notice(&self, end: &End, output: &str, cwd: &Path) -> Option<String> {
        let info = self.info.as_ref().filter(|i| i.engine != "none")?;
        if matches!(end, End::Exited(0)) {
            return None;
        }
        for line in output.lines() {
            let Some((error, at)) = Refusal::in_line(line) else {
                continue;
            };
            let paths: Vec<PathBuf> = paths_in(line, at)
                .into_iter()
                .map(|p| crate::paths::absolute(cwd, &p))
                .collect();
            // A protected piece of a writable tree is refused on purpose: say so, and
            // not "add it to writable", which would not help.
            let protected = paths.iter().find_map(|p| {
                self.writable
                    .iter()
                    .find(|w| within(p, w))
                    .and_then(|w| protected_piece(p, w))
                    .map(|piece| (p, piece))
            });
            if let Some((path, piece)) = protected {
                return Some(format!(
                    "[sandbox: {} is read-only in the sandbox on purpose ({} {} was refused): {}. No [sandbox] key makes it writable; a change that is intended must be made outside the sandbox (by the user, or with --sandbox off)]",
                    piece.name,
                    error.verb(),
                    path.display(),
                    piece.why
                ));
            }
            let path = paths.first();
            if let Some(path) = path
                && let Some(hidden) = self.deny_read.iter().find(|d| path.starts_with(d))
            {
                return Some(format!(
                    "[sandbox: {} is hidden by [sandbox] deny_read ({}); the command may not read it]",
                    path.display(),
                    hidden.display()
                ));
            }
            if error == Refusal::Busy {
                continue;
            }
            let outside = path.map(|p| !self.writable.iter().any(|w| within(p, w)));
            match outside {
                Some(true) => {
                    return Some(format!(
                        "[sandbox: writing {} was refused: the {} sandbox lets the command write only {}. To allow it, add the path to [sandbox] writable in the profile]",
                        path.map(|p| p.display().to_string()).unwrap_or_default(),
                        mode_name(info.mode),
                        self.writable_list()
                    ));
                }
                // Read-only: nothing but the TMPDIR is writable, so a refusal on a
                // relative path (EACCES under Landlock) is the sandbox's too.
                None if error == Refusal::ReadOnly || info.mode == Mode::ReadOnly => {
                    return Some(format!(
                        "[sandbox: a write was refused: the {} sandbox lets the command write only {}. To allow more, add paths to [sandbox] writable in the profile]",
                        mode_name(info.mode),
                        self.writable_list()
                    ));
                }
                _ => {}
            }
        }
        None
    }

    /// When the command touched a path `[sandbox] deny_read` hides — an error line of
    /// its output names one, or the command itself does — a line saying so: hidden
    /// under an empty mount the path reads as missing ("No such file or directory") or
    /// empty, which alone looks like a wrong path.
    pub fn deny_read_notice(&self, command: &str, output: &str) -> Option<String> {
        let info = self.info.as_ref().filter(|i| i.engine != "none")?;
        const ERRORS: [&str; 8] = [
            "No such file or directory",
            "Permission denied",
            "Operation not permitted",
            "Not a directory",
            "Read-only file system",
            "does not exist",
            "not found",
            "cannot",
        ];
        let failed_on = output
            .lines()
            .filter(|l| ERRORS.iter().any(|e| l.contains(e)))
            .find_map(|l| self.hidden_in(l, &info.deny_read));
        let (index, path) = failed_on.or_else(|| self.hidden_in(command, &info.deny_read))?;
        let configured = info
            .deny_read
            .get(index)
            .map_or(path.as_str(), String::as_str);
        Some(format!(
            "[sandbox: {path} is hidden by [sandbox] deny_read ({configured}): the command can neither read nor list it, so it looks missing or empty. If the command needs it, remove it from [sandbox] deny_read in the profile]"
        ))
    }

    /// The first hidden path `text` names, as a whole path (not a longer name that
    /// starts the same): its index in `deny_read` and the path as written, under any of
    /// the forms a shell or a tool writes it (`/home/u/.ssh`, `~/.ssh`, `$HOME/.ssh`).
    fn hidden_in(&self, text: &str, configured: &[String]) -> Option<(usize, String)> {
        let path_char = |c: char| c.is_alphanumeric() || "/._-~$".contains(c);
        for (i, hidden) in self.deny_read.iter().enumerate() {
            let mut forms = vec![hidden.display().to_string()];
            if let Some(rest) = configured.get(i).and_then(|c| c.strip_prefix('~')) {
                forms.extend([
                    format!("~{rest}"),
                    format!("$HOME{rest}"),
                    format!("${{HOME}}{rest}"),
                ]);
            }
            for form in forms.iter().filter(|f| f.len() > 1) {
                for (start, _) in text.match_indices(form.as_str()) {
                    let end = start + form.len();
                    let before = text[..start].chars().next_back();
                    let after = text[end..].chars().next();
                    if before.is_some_and(path_char)
                        || after.is_some_and(|c| c != '/' && path_char(c))
                    {
                        continue;
                    }
                    let word = text[end..]
                        .find(|c: char| c.is_whitespace() || "'\"`:;|&()<>,".contains(c))
                        .map_or(text.len(), |n| end + n);
                    return Some((i, text[start..word].to_string()));
                }
            }
        }
        None
    }

    fn writable_list(&self) -> String {
        let mut names: Vec<String> = self
            .writable
            .iter()
            .skip(1)
            .filter(|p| !self.own.paths().contains(p))
            .map(|p| p.display().to_string())
            .collect();
        names.push("its private TMPDIR".into());
        names.join(", ")
    }
}

/// Whether `path` is `dir` or below it, comparing canonical forms where they exist.
fn within(path: &Path, dir: &Path) -> bool {
    path.starts_with(dir) || canonical(path).starts_with(canonical(dir))
}

/// `p` with its links resolved, as far as it exists (a file about to be created is
/// its directory's canonical form and its name).
fn canonical(p: &Path) -> PathBuf {
    std::fs::canonicalize(p)
        .or_else(|_| {
            let parent = p.parent().unwrap_or(p);
            std::fs::canonicalize(parent).map(|c| c.join(p.file_name().unwrap_or_default()))
        })
        .unwrap_or_else(|_| p.to_path_buf())
}

/// How the OS said no, as error lines spell it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    /// EROFS: everything outside the writable set, and the protected pieces.
    ReadOnly,
    /// EACCES or EPERM (Landlock, a hidden path, metadata changes).
    Denied,
    /// EBUSY: renaming or removing a mount point (`.git`).
    Busy,
}

impl Refusal {
    /// The error a line reports, with where its text starts.
    fn in_line(line: &str) -> Option<(Refusal, usize)> {
        const TEXTS: &[(&str, Refusal)] = &[
            ("Read-only file system", Refusal::ReadOnly),
            ("read-only file system", Refusal::ReadOnly),
            ("Permission denied", Refusal::Denied),
            ("Operation not permitted", Refusal::Denied),
            ("Device or resource busy", Refusal::Busy),
        ];
        TEXTS
            .iter()
            .filter_map(|(text, r)| line.find(text).map(|at| (*r, at)))
            .min_by_key(|(_, at)| *at)
    }

    fn verb(self) -> &'static str {
        match self {
            Refusal::Busy => "moving or removing",
            _ => "writing",
        }
    }
}

/// A piece of a writable tree the sandbox keeps read-only on purpose.
struct Piece {
    name: String,
    why: &'static str,
}

/// Whether `path`, inside the writable tree `tree`, is (in) one of the pieces the
/// sandbox keeps read-only: git's hooks, configuration and what it reads them from
/// (`.git/hooks`, `.git/config`, `.git/info`, `.git/commondir`), `.git` itself (a mount
/// point, so it cannot be swapped), and the project's `.agentbash/`.
fn protected_piece(path: &Path, tree: &Path) -> Option<Piece> {
    let rel = match path.strip_prefix(tree) {
        Ok(r) => r.to_path_buf(),
        Err(_) => {
            let (p, t) = (canonical(path), canonical(tree));
            p.strip_prefix(&t).ok()?.to_path_buf()
        }
    };
    let parts: Vec<&str> = rel.iter().filter_map(|c| c.to_str()).collect();
    if parts.contains(&".agentbash") {
        return Some(Piece {
            name: ".agentbash/".into(),
            why: "it holds the profiles and rules agentbash runs under, which a command must not rewrite",
        });
    }
    let git = parts.iter().position(|c| *c == ".git")?;
    match parts.get(git + 1).copied() {
        None => Some(Piece {
            name: ".git".into(),
            why: ".git is a mount point in the sandbox so that it cannot be moved or replaced: a swapped .git would bring hooks and configuration that git runs outside the sandbox",
        }),
        Some(sub @ ("hooks" | "config" | "info" | "commondir")) => Some(Piece {
            name: format!(".git/{sub}"),
            why: "git reads hooks and configuration from there also outside the sandbox, where a planted hook or setting (core.fsmonitor, core.hooksPath) would run",
        }),
        Some(_) => None,
    }
}

/// The paths an error line names, most likely first: quoted ones ('…', "…", `…',
/// ‘…’, “…”), else the word just before the error text (`bash: line 1: x: Read-only
/// file system`, `sh: 1: cannot create x: …`, `error: could not lock config file
/// .git/config: …`). `error_at` is where the line's error text starts.
fn paths_in(line: &str, error_at: usize) -> Vec<PathBuf> {
    let mut quoted = Vec::new();
    let mut rest = line;
    while let Some(open) = rest.find(['\'', '"', '`', '‘', '“']) {
        let q = rest[open..].chars().next().unwrap_or('\'');
        let after = &rest[open + q.len_utf8()..];
        let close: &[char] = match q {
            '`' | '‘' => &['\'', '’'],
            '“' => &['”'],
            other => &[other][..],
        };
        let Some(end) = after.find(close) else {
            break;
        };
        let inside = &after[..end];
        if !inside.is_empty() && !inside.contains(['\n', '\0']) {
            quoted.push(PathBuf::from(inside));
        }
        let close_len = after[end..].chars().next().map_or(1, char::len_utf8);
        rest = &after[end + close_len..];
    }
    if !quoted.is_empty() {
        return quoted;
    }
    // Unquoted: the `: `-separated field right before the error text; its last word.
    let before = line[..error_at].trim_end().trim_end_matches(':');
    let field = before.rsplit(": ").next().unwrap_or(before);
    field
        .split_whitespace()
        .last()
        .filter(|w| w.contains('/') || w.starts_with('.') || !w.contains(['[', ']']))
        .map(|w| vec![PathBuf::from(w)])
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_path_in_the_usual_error_lines() {
        for (line, path) in [
            ("touch: cannot touch '/x/b': Read-only file system", "/x/b"),
            ("bash: line 1: /x/b: Read-only file system", "/x/b"),
            ("/bin/bash: line 1: /x/b: Read-only file system", "/x/b"),
            ("sh: 1: cannot create /x/b: Read-only file system", "/x/b"),
            (
                "OSError: [Errno 30] Read-only file system: '/x/y z'",
                "/x/y z",
            ),
            ("rm: cannot remove \"/a/b\": Permission denied", "/a/b"),
            (
                "cp: cannot create regular file `/a/c': Permission denied",
                "/a/c",
            ),
            (
                "cp: cannot create regular file '.git/hooks/pre-commit.sample': Read-only file system",
                ".git/hooks/pre-commit.sample",
            ),
            (
                "mkdir: cannot create directory ‘/x/d’: Read-only file system",
                "/x/d",
            ),
            (
                "error: could not lock config file .git/config: Read-only file system",
                ".git/config",
            ),
            (
                "mv: cannot move '.git' to '.g': Device or resource busy",
                ".git",
            ),
            (
                "Error: EROFS: read-only file system, open '/x/pkg.json'",
                "/x/pkg.json",
            ),
        ] {
            let (_, at) = Refusal::in_line(line).expect(line);
            assert_eq!(
                paths_in(line, at).first(),
                Some(&PathBuf::from(path)),
                "{line}"
            );
        }
        let bare = "Read-only file system";
        assert_eq!(paths_in(bare, 0), Vec::<PathBuf>::new());
    }

    #[test]
    fn protected_pieces_are_named() {
        let w = Path::new("/w");
        let name = |p: &str| protected_piece(Path::new(p), w).map(|x| x.name);
        assert_eq!(name("/w/.git/config").as_deref(), Some(".git/config"));
        assert_eq!(name("/w/.git/config.lock").as_deref(), None);
        assert_eq!(
            name("/w/.git/hooks/pre-commit").as_deref(),
            Some(".git/hooks")
        );
        assert_eq!(
            name("/w/sub/.git/info/exclude").as_deref(),
            Some(".git/info")
        );
        assert_eq!(name("/w/.git").as_deref(), Some(".git"));
        assert_eq!(
            name("/w/.agentbash/profiles/x.toml").as_deref(),
            Some(".agentbash/")
        );
        assert_eq!(name("/w/.git/objects/ab").as_deref(), None);
        assert_eq!(name("/w/src/main.rs").as_deref(), None);
    }

    #[test]
    fn a_peer_cannot_change_a_fixed_sandbox() {
        let fixed = Policy::new(Mode::WorkspaceWrite);
        assert!(peer_override(&fixed, Some("off")).is_err());
        assert_eq!(
            peer_override(&fixed, Some("workspace-write")),
            Ok(Some(Mode::WorkspaceWrite))
        );
        assert_eq!(peer_override(&fixed, None), Ok(None));
        let open = Policy {
            allow_override: true,
            ..fixed
        };
        assert_eq!(peer_override(&open, Some("off")), Ok(Some(Mode::Off)));
        assert!(peer_override(&open, Some("rw")).is_err());
    }
}
