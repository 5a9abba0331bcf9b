//! What a profile's `[sandbox]` section asks for, before anything is checked against the
//! machine. [`super::prepare`] turns a [`Policy`] into a [`super::Prepared`].

use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// How much of the file system a sandboxed command may change.
///
/// Whatever the mode, the command may always write to this minimal set, because shells
/// and ordinary tools break without it:
///
/// - the run's private `TMPDIR` (passed to [`super::prepare`]);
/// - `/dev/null`, `/dev/zero`, `/dev/full`, `/dev/random`, `/dev/urandom` (writes are
///   discarded or ignored; reads of `/dev/zero` and the random devices work);
/// - `/dev/tty`, `/dev/pts/*` and `/dev/ptmx`, so a command can talk to its terminal and
///   open a pseudo-terminal of its own;
/// - terminal `ioctl`s on those devices;
/// - with the namespaces engine, `/dev/shm`, which is then private to the run (alone,
///   Landlock leaves the host's `/dev/shm` unwritable: it is shared with every process
///   on the host).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Mode {
    /// No sandbox: the command runs with the caller's rights.
    #[default]
    Off,
    /// Everything readable (except `deny_read`), nothing writable but the minimal set.
    ReadOnly,
    /// Like `read-only`, plus the workspace and the `writable` paths.
    WorkspaceWrite,
}

/// Which kernel mechanism enforces the policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Engine {
    /// Namespaces with Landlock on top when namespaces work, else Landlock alone, else
    /// nothing (and the reason is recorded).
    #[default]
    Auto,
    /// Mount (and, when not root, user) namespaces; Landlock is layered on top whenever
    /// the kernel has it.
    Namespaces,
    /// Landlock alone: no namespaces, works in containers that forbid `unshare`.
    Landlock,
    /// bubblewrap. Not provided by this module: bwrap wraps the argv instead of acting
    /// between fork and exec, so it belongs to the spawner.
    Bwrap,
    /// No enforcement at all, even when a mode other than `off` is set.
    None,
}

/// A profile's `[sandbox]` section.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Policy {
    pub mode: Mode,
    pub engine: Engine,
    /// The directory `workspace-write` opens for writing; when unset, the directory
    /// agentbash was started in (a server's own directory), never a request's cwd.
    pub workspace: Option<PathBuf>,
    /// More paths the command may write, in either mode.
    pub writable: Vec<PathBuf>,
    /// Paths the command may not read (nor list, nor copy).
    pub deny_read: Vec<PathBuf>,
    /// The command's network: the host's (`true`, the default), none (`false`), or
    /// only the listed destinations, through agentbash's proxy.
    pub network: super::Network,
    /// With a list: let the proxy connect to loopback, link-local and private
    /// addresses (a listed name that resolves there, `localhost`, `10.1.2.3`).
    pub network_allow_local: bool,
    /// Fail the run instead of running unconfined when no engine can enforce the mode.
    pub required: bool,
    /// Whether a per-run flag may lower this policy (for the CLI; not used here).
    pub allow_override: bool,
    /// Set by the run, not the profile: the workspace was filled in from where
    /// agentbash started, not named by the profile (so `/` or `$HOME` is refused).
    #[serde(skip)]
    pub workspace_by_default: bool,
    /// Set by the run: agentbash's own directories (state, cache, config, sessions,
    /// jobs, artifacts). Read-only inside the sandbox even where a writable tree
    /// covers them.
    #[serde(skip)]
    pub own_dirs: Vec<PathBuf>,
    /// Set by the run: agentbash-owned paths the command's shell must write (a
    /// session's pending state, the per-workspace package cache). Writable even inside
    /// [`Policy::own_dirs`].
    #[serde(skip)]
    pub own_writable: Vec<PathBuf>,
}

impl Default for Policy {
    fn default() -> Policy {
        Policy::new(Mode::Off)
    }
}

impl Policy {
    /// The policy for `mode` with every other field at its default.
    pub fn new(mode: Mode) -> Policy {
        Policy {
            mode,
            engine: Engine::Auto,
            workspace: None,
            writable: Vec::new(),
            deny_read: Vec::new(),
            network: super::Network::On,
            network_allow_local: false,
            required: false,
            allow_override: false,
            workspace_by_default: false,
            own_dirs: Vec::new(),
            own_writable: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_section_deserializes_with_defaults() {
        let policy: Policy = toml::from_str(
            "mode = \"workspace-write\"\nengine = \"landlock\"\ndeny_read = [\"~/.ssh\"]\n",
        )
        .expect("valid section");
        assert_eq!(policy.mode, Mode::WorkspaceWrite);
        assert_eq!(policy.engine, Engine::Landlock);
        assert!(policy.network.is_on(), "network defaults to allowed");
        assert!(!policy.required);
        let empty: Policy = toml::from_str("").expect("empty section");
        assert_eq!(empty.mode, Mode::Off);
        assert!(empty.network.is_on());
        assert!(!empty.network_allow_local);
        assert!(toml::from_str::<Policy>("mode = \"rw\"").is_err());
    }
}
