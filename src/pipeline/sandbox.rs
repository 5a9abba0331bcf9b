//! The sandbox stage: which [`Policy`] a run gets (the profile's `[sandbox]`, narrowed
//! or widened by `--sandbox`), and, once its cwd is known, the confinement the spawner
//! applies, the run's private TMPDIR, and what the result says about both.

use crate::executor::End;
use crate::result::SandboxInfo;
use crate::sandbox::{self, Confinement, Mode, Policy, Resolved};
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
        policy.workspace = Some(invoking_dir.to_path_buf());
    }
    policy
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
    writable: Vec<PathBuf>,
    deny_read: Vec<PathBuf>,
    /// The entries of `writable` that are agentbash's own files (a session's pending
    /// state): writable for the command's shell, never named to the caller.
    own: Vec<PathBuf>,
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
        return Ok(RunSandbox::default());
    }
    let shown_writable = policy.writable.len();
    let own = also_writable.clone();
    policy.writable.extend(also_writable);
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
        writable,
        deny_read,
        own,
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
        Resolved::Landlock => ("landlock", true, !policy.network),
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
        network: policy.network || !network_isolated,
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

    /// Point the command's temporary files at its private TMPDIR.
    pub fn apply_env(&self, env: &mut BTreeMap<String, String>) {
        if let Some(tmp) = self.info.as_ref().and_then(|i| i.tmpdir.clone()) {
            env.insert("TMPDIR".into(), tmp);
        }
    }

    /// A warning when the sandbox asked for is not enforced at all.
    pub fn warning(&self) -> Option<String> {
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
                // Read-only: nothing but the TMPDIR is writable, so a refusal on a
                // relative path (EACCES under Landlock) is the sandbox's too.
                None if read_only || info.mode == Mode::ReadOnly => {
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
            .filter(|p| !self.own.contains(p))
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
