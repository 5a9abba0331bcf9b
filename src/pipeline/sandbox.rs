//! The sandbox stage: which [`Policy`] a run gets (the profile's `[sandbox]`, narrowed
//! or widened by `--sandbox`), and, once its cwd is known, the confinement the spawner
//! applies, the run's private TMPDIR, and what the result says about both.

use crate::executor::End;
use crate::result::{NetworkShown, SandboxInfo};
use crate::sandbox::{self, Confinement, Mode, Network, Policy, Refusal, Resolved};
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
fn own_dirs() -> Vec<PathBuf> {
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
    writable: Vec<PathBuf>,
    deny_read: Vec<PathBuf>,
}

/// Prepare the plan's policy for a run in `cwd`: create the private TMPDIR and build
/// everything the child needs. `Err` (exit 125) when `required = true` and nothing can
/// enforce it, or a configured path is unusable.
///
/// `also_writable` are agentbash's own files the command's shell writes (a session's
/// pending state), each a single file; nothing of any other run is writable.
pub fn prepare(
    plan: &super::Plan,
    cwd: &Path,
    also_writable: Vec<PathBuf>,
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
    let shown_writable = policy.writable.len();
    policy.own_writable.extend(also_writable.iter().cloned());
    policy.writable.extend(also_writable);
    policy.own_dirs = own_dirs();
    policy.own_dirs.extend(plan.artifact_dir.iter().cloned());
    let policy = &policy;
    let tmpdir = private_tmpdir()?;
    let (prepared, weaker) = prepare_policy(policy, cwd, tmpdir.path())?;
    let mut info = info(policy, cwd, &prepared, Some(tmpdir.path()));
    info.weaker = weaker.or(info.weaker);
    info.writable.truncate(shown_writable);
    let mut writable = vec![tmpdir.path().to_path_buf()];
    if policy.mode == Mode::WorkspaceWrite {
        writable.push(workspace(policy, cwd));
    }
    writable.extend(policy.writable.iter().map(|p| expand(p)));
    let deny_read = policy.deny_read.iter().map(|p| expand(p)).collect();
    Ok(RunSandbox {
        confinement: Some(Arc::new(Confinement {
            prepared,
            tmpdir: Some(tmpdir),
        })),
        info: Some(info),
        off_warning: None,
        writable,
        deny_read,
    })
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

/// `0700` under the state dir (so it is on the user's own file system), else `/tmp`.
/// Created with its mode in the one `mkdir`, and the state dir only made when missing:
/// this is on every sandboxed run's start-up path.
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
        .or_else(|_| std::fs::create_dir_all(&base).and_then(|()| in_base()))
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
            .map(|i| format!("{:?} {:?} {:?}", i, self.writable, self.deny_read))
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

    /// Point the command's temporary files at its private TMPDIR, and, with a network
    /// allowlist, every proxy variable at agentbash's proxy: HTTP(S) through
    /// `CONNECT`/absolute-form requests, everything else through SOCKS5 with names
    /// (`socks5h`), and no destination exempt (loopback too goes through it).
    pub fn apply_env(&self, env: &mut BTreeMap<String, String>) {
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
    pub fn network_denied(&self) -> Vec<Refusal> {
        self.network_log()
            .map(|log| log.snapshot())
            .unwrap_or_default()
    }

    /// One notice per refused destination (the first few; then how many more), each
    /// naming the key to change.
    pub fn network_notices(&self, denied: &[Refusal]) -> Vec<String> {
        const SHOWN: usize = 5;
        let Some(plan) = self.confinement.as_ref().and_then(|c| c.prepared.proxy()) else {
            return Vec::new();
        };
        // The log's overflow entry (port 0) names no destination.
        let shown: Vec<&Refusal> = denied.iter().filter(|r| r.port != 0).take(SHOWN).collect();
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

    /// A warning when the sandbox asked for is not enforced at all.
    pub fn warning(&self) -> Option<String> {
        if let Some(w) = &self.off_warning {
            return Some(w.clone());
        }
        let info = self.info.as_ref()?;
        (info.engine == "none").then(|| {
            format!(
                "sandbox: [sandbox] mode = {:?} is NOT enforced: {}; the command ran unconfined",
                mode_name(info.mode),
                info.weaker.as_deref().unwrap_or("no engine")
            )
        })
    }

    /// When a failed command's output shows the sandbox refused a write (or hid a
    /// path), a line saying so: the OS error alone reads like a broken machine.
    pub fn denial_notice(&self, end: &End, output: &str) -> Option<String> {
        let info = self.info.as_ref().filter(|i| i.engine != "none")?;
        if matches!(end, End::Exited(0)) {
            return None;
        }
        for line in output.lines() {
            let read_only = line.contains("Read-only file system");
            let denied =
                line.contains("Permission denied") || line.contains("Operation not permitted");
            if !(read_only || denied) {
                continue;
            }
            let path = path_in(line);
            if let Some(path) = &path
                && let Some(hidden) = self.deny_read.iter().find(|d| path.starts_with(d))
            {
                return Some(format!(
                    "[sandbox: {} is hidden by [sandbox] deny_read ({}); the command may not read it]",
                    path.display(),
                    hidden.display()
                ));
            }
            let outside = path
                .as_ref()
                .map(|p| !self.writable.iter().any(|w| within(p, w)));
            match outside {
                Some(true) => {
                    return Some(format!(
                        "[sandbox: writing {} was refused: the {} sandbox lets the command write only {}. To allow it, add the path to [sandbox] writable in the profile]",
                        path.as_ref()
                            .map(|p| p.display().to_string())
                            .unwrap_or_default(),
                        mode_name(info.mode),
                        self.writable_list()
                    ));
                }
                None if read_only => {
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

    fn writable_list(&self) -> String {
        let mut names: Vec<String> = self
            .writable
            .iter()
            .skip(1)
            .map(|p| p.display().to_string())
            .collect();
        names.push("its private TMPDIR".into());
        names.join(", ")
    }
}

/// Whether `path` is `dir` or below it, comparing canonical forms where they exist.
fn within(path: &Path, dir: &Path) -> bool {
    let canonical = |p: &Path| {
        std::fs::canonicalize(p)
            .or_else(|_| {
                let parent = p.parent().unwrap_or(p);
                std::fs::canonicalize(parent).map(|c| c.join(p.file_name().unwrap_or_default()))
            })
            .unwrap_or_else(|_| p.to_path_buf())
    };
    path.starts_with(dir) || canonical(path).starts_with(canonical(dir))
}

/// The first absolute path in an error line: quoted ('…', "…", `…'), or a bare word
/// ending at `:`, as coreutils, shells and Python print them.
fn path_in(line: &str) -> Option<PathBuf> {
    let start = line.find('/')?;
    let before = line[..start].chars().last();
    let rest = &line[start..];
    let end = match before {
        Some(q @ ('\'' | '"' | '`' | '‘')) => {
            let close = if q == '`' || q == '‘' {
                ['\'', '’']
            } else {
                [q, q]
            };
            rest.find(|c| close.contains(&c)).unwrap_or(rest.len())
        }
        _ => rest
            .find(|c: char| c == ':' || c.is_whitespace())
            .unwrap_or(rest.len()),
    };
    Some(PathBuf::from(&rest[..end]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_path_in_the_usual_error_lines() {
        for (line, path) in [
            ("touch: cannot touch '/x/b': Read-only file system", "/x/b"),
            ("bash: line 1: /x/b: Read-only file system", "/x/b"),
            (
                "OSError: [Errno 30] Read-only file system: '/x/y z'",
                "/x/y z",
            ),
            ("rm: cannot remove \"/a/b\": Permission denied", "/a/b"),
            (
                "cp: cannot create regular file `/a/c': Permission denied",
                "/a/c",
            ),
        ] {
            assert_eq!(path_in(line), Some(PathBuf::from(path)), "{line}");
        }
        assert_eq!(path_in("Read-only file system"), None);
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
