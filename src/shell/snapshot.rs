//! The rc snapshot: the user's functions, aliases and shell options, captured once
//! from `shell.rc` in a separate shell and sourced before every command.
//!
//! Agents lose the helpers their user relies on when a tool runs `bash -c` without the
//! rc, and they break when it sources the rc every time (slow, noisy, interactive-only
//! code, `set -e`). So the rc is sourced once, in an interactive bash of its own
//! (`bash --norc --noprofile -i`, so the usual "return unless interactive" guard lets
//! it run) with stdin on the null device, its output discarded and a 2 s limit, after
//! which its whole tree is killed. What it defined is filtered (names that shadow the
//! tools agents depend on, unused `_` helpers, options unsafe for non-interactive
//! commands) and written, 0600, to a 0700 cache directory. The snapshot is reused until
//! the rc's content or mtime, the shell, or HOME change; every decision, including each
//! dropped name and why, is kept in a metadata file for `agentbash snapshot report`.
//!
//! Nothing here ever stops a run: a slow, failing or hostile rc yields a run without
//! (or with a partial) snapshot and a warning that says why.

use super::dump;
use super::store::{FileLock, LockWait};
use crate::config::profile::ShellCfg;
use crate::display::quote;
use crate::fsguard::{create_private, write_private};
use crate::ids::{fnv64, nonce};
use crate::process::spawn::ChildIo;
use crate::process::teardown::Teardown;
use crate::process::{Limits, SpawnSpec};
use crate::shell::env::BuiltEnv;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod build;
mod part;

use build::{build, render, tool_reason};
use part::MARK;
pub use part::{Part, may_change_definitions};

/// Names that shadow the tools agents rely on; a function or alias with
/// one of these names is never carried into commands.
pub const SHADOWED_TOOLS: &[&str] = &[
    "ls", "cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "find", "fd",
    "sed", "awk", "perl", "cp", "mv", "rm", "mkdir", "rmdir", "touch", "chmod", "chown", "ln",
    "pwd", "readlink", "stat", "cut", "sort", "uniq", "xargs", "tee", "tr", "basename", "dirname",
];

/// Bash's reserved words. An alias with one of these names changes how every
/// command parses; none is carried.
pub const KEYWORDS: &[&str] = &[
    "if", "then", "else", "elif", "fi", "case", "esac", "for", "select", "while", "until", "do",
    "done", "in", "function", "time", "coproc", "{", "}", "!", "[[", "]]",
];

/// Why a function or alias with this name is never carried, if it is one of the
/// names agentbash protects (tools agents rely on, builtins its own shell code
/// relies on, keywords). `cd` is not one: rc files commonly wrap it (nvm, rvm), and
/// agentbash's own code calls `builtin cd`.
pub fn protected_name(name: &str) -> Option<String> {
    if SHADOWED_TOOLS.contains(&name) {
        Some(tool_reason(name))
    } else if dump::MACHINERY_BUILTINS.contains(&name) {
        Some(format!(
            "shadows the `{name}` builtin, which agentbash's own shell code and commands rely on"
        ))
    } else if KEYWORDS.contains(&name) {
        Some(format!(
            "named like the shell keyword `{name}`, it would change how commands parse"
        ))
    } else {
        None
    }
}

/// How long the rc may take to source.
pub const GENERATION_LIMIT: Duration = Duration::from_secs(2);

const META_VERSION: u32 = 2;

/// What a run will do about the snapshot (decided without side effects).
#[derive(Debug, Clone)]
pub enum SnapshotPlan {
    /// No snapshot, and rightly so (the reason is for `explain`/`snapshot show`).
    Disabled(String),
    /// The rc file does not exist: no snapshot, no warning.
    NoRc(PathBuf),
    Use(Source),
}

/// Where a snapshot comes from and where it lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Source {
    pub rc: PathBuf,
    pub shell: PathBuf,
    pub home: PathBuf,
    pub dir: PathBuf,
    /// File stem in `dir`: a hash of rc, shell and HOME.
    pub id: String,
}

impl Source {
    pub fn snapshot_path(&self) -> PathBuf {
        self.dir.join(format!("{}.sh", self.id))
    }
    pub fn meta_path(&self) -> PathBuf {
        self.dir.join(format!("{}.json", self.id))
    }
    fn lock_path(&self) -> PathBuf {
        self.dir.join(format!("{}.lock", self.id))
    }
}

impl SnapshotPlan {
    pub fn describe(&self) -> String {
        match self {
            SnapshotPlan::Disabled(why) => format!("off ({why})"),
            SnapshotPlan::NoRc(rc) => format!("none ({} does not exist)", rc.display()),
            SnapshotPlan::Use(src) => {
                let fresh = current_key(src)
                    .ok()
                    .zip(read_meta(src))
                    .is_some_and(|(k, m)| m.key == k);
                if fresh {
                    format!(
                        "{} (cached, from {})",
                        src.snapshot_path().display(),
                        src.rc.display()
                    )
                } else {
                    format!(
                        "{} (to be generated from {})",
                        src.snapshot_path().display(),
                        src.rc.display()
                    )
                }
            }
        }
    }
}

/// Decide whether and from where a run uses a snapshot.
pub fn plan(cfg: &ShellCfg, shell: Option<&Path>, home: Option<&Path>) -> SnapshotPlan {
    if !cfg.snapshot {
        return SnapshotPlan::Disabled("shell.snapshot = false".into());
    }
    let Some(shell) = shell else {
        return SnapshotPlan::Disabled("no shell".into());
    };
    if !crate::shell::resolve::is_bash(shell) {
        return SnapshotPlan::Disabled(format!(
            "{} is not bash; snapshots are bash only",
            shell.display()
        ));
    }
    let Some(home) = home else {
        return SnapshotPlan::Disabled("HOME is not set".into());
    };
    let rc = cfg.rc.trim();
    let rc = if rc == "~" || rc.starts_with("~/") {
        home.join(rc.trim_start_matches('~').trim_start_matches('/'))
    } else {
        home.join(rc) // absolute paths stay as they are
    };
    if !rc.is_file() {
        return SnapshotPlan::NoRc(rc);
    }
    let id = format!(
        "{:016x}",
        fnv64(format!("{}\0{}\0{}", rc.display(), shell.display(), home.display()).as_bytes())
    );
    SnapshotPlan::Use(Source {
        rc,
        shell: shell.to_path_buf(),
        home: home.to_path_buf(),
        dir: crate::paths::cache_dir().join("snapshots"),
        id,
    })
}

/// What makes a snapshot stale when it changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Key {
    pub rc: PathBuf,
    pub rc_len: u64,
    pub rc_mtime_ns: i128,
    pub rc_hash: u64,
    pub shell: PathBuf,
    pub shell_mtime_ns: i128,
    pub home: PathBuf,
}

fn mtime_ns(m: &std::fs::Metadata) -> i128 {
    use std::os::unix::fs::MetadataExt;
    i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec())
}

/// Per-process memo of file contents' hashes and parsed metadata, keyed by path and
/// validated by size and mtime, so long-lived callers (rpc, mcp) do not re-read and
/// re-parse on every command. A one-shot CLI run reads everything once either way.
static MEMO: Mutex<Option<Memo>> = Mutex::new(None);

/// The most entries a memo map keeps (it starts over when full).
const MEMO_CAP: usize = 4096;

#[derive(Default)]
struct Memo {
    rc: HashMap<PathBuf, (u64, i128, u64)>,
    meta: HashMap<PathBuf, (Identity, Arc<Meta>, String)>,
    /// SHA-256 of files about to be sourced, by identity (see [`file_sha`]).
    hashed: HashMap<PathBuf, (Identity, String)>,
    /// The SHA-256 a cut part must have, by the snapshot's hash and the names in it.
    parts: HashMap<(String, Vec<String>), String>,
}

fn with_memo<T>(f: impl FnOnce(&mut Memo) -> T) -> Option<T> {
    let mut g = MEMO.lock().ok()?;
    Some(f(g.get_or_insert_with(Memo::default)))
}

fn current_key(src: &Source) -> std::io::Result<Key> {
    let rc_meta = std::fs::metadata(&src.rc)?;
    let (len, mtime) = (rc_meta.len(), mtime_ns(&rc_meta));
    let known = with_memo(|m| m.rc.get(&src.rc).copied()).flatten();
    let rc_hash = match known {
        Some((l, t, h)) if l == len && t == mtime => h,
        _ => {
            // The rc may be a dotfile manager's link; its target must still be ours.
            let h = fnv64(&crate::fsguard::read_file(
                &src.rc,
                crate::fsguard::SNAPSHOT_CAP,
                crate::fsguard::Links::Follow,
            )?);
            with_memo(|m| m.rc.insert(src.rc.clone(), (len, mtime, h)));
            h
        }
    };
    let shell_mtime_ns = std::fs::metadata(&src.shell)
        .map(|m| mtime_ns(&m))
        .unwrap_or(0);
    Ok(Key {
        rc: src.rc.clone(),
        rc_len: len,
        rc_mtime_ns: mtime,
        rc_hash,
        shell: src.shell.clone(),
        shell_mtime_ns,
        home: src.home.clone(),
    })
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Outcome {
    /// The rc was sourced to the end.
    Ok,
    /// The rc ended early (exit, `set -e`, non-zero status); what it defined is kept.
    Partial,
    /// Nothing could be captured; runs go without a snapshot.
    Failed,
}

/// A name or option left out of the snapshot, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Dropped {
    pub name: String,
    /// "function", "alias" or "option".
    pub kind: String,
    pub reason: String,
}

/// Everything known about one generated snapshot (stored next to it as JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Meta {
    pub version: u32,
    pub key: Key,
    /// Unix seconds.
    pub generated_at: u64,
    pub duration_ms: u64,
    pub outcome: Outcome,
    /// The snapshot file, absent when generation failed.
    pub snapshot: Option<PathBuf>,
    pub content_hash: u64,
    /// Said once, by the run that generated the snapshot.
    pub warnings: Vec<String>,
    /// Said by every run while this snapshot is current (there is none to source).
    pub persistent_warning: Option<String>,
    /// Captured functions and aliases, with a hash of their definitions (sessions use
    /// it to store only what a command changed).
    pub functions: BTreeMap<String, u64>,
    pub aliases: BTreeMap<String, u64>,
    /// Captured option lines (`shopt -s extglob`, `set -o physical`).
    pub options: Vec<String>,
    pub dropped: Vec<Dropped>,
    /// For each captured function and alias, the captured names it mentions (what
    /// must be defined along with it).
    #[serde(default)]
    pub refs: BTreeMap<String, Vec<String>>,
}

/// A snapshot a run can source.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub path: PathBuf,
    pub content_hash: u64,
    /// The SHA-256 agentbash sealed it with (see [`Seal`]).
    pub sha256: String,
    pub meta: Arc<Meta>,
}

/// The result of making sure the snapshot is current.
#[derive(Debug, Clone, Default)]
pub struct Ensured {
    pub snapshot: Option<Snapshot>,
    pub meta: Option<Arc<Meta>>,
    /// For the run's `warnings`.
    pub warnings: Vec<String>,
    /// This call generated it.
    pub generated: bool,
}

fn read_meta(src: &Source) -> Option<Arc<Meta>> {
    read_meta_sealed(src).map(|(m, _)| m)
}

/// The metadata and the SHA-256 of the bytes it was parsed from.
fn read_meta_sealed(src: &Source) -> Option<(Arc<Meta>, String)> {
    let path = src.meta_path();
    let id = Identity::of(&std::fs::symlink_metadata(&path).ok()?);
    if let Some(Some(hit)) = with_memo(|memo| {
        memo.meta
            .get(&path)
            .filter(|(known, _, _)| *known == id)
            .map(|(_, m, sha)| (m.clone(), sha.clone()))
    }) {
        return Some(hit);
    }
    let text = crate::fsguard::read_file(
        &path,
        crate::fsguard::SNAPSHOT_CAP,
        crate::fsguard::Links::Refuse,
    )
    .ok()?;
    let m: Meta = serde_json::from_slice(&text).ok()?;
    let m = Arc::new(m);
    let sha = crate::ids::sha256_hex(&text);
    with_memo(|memo| memo.meta.insert(path, (id, m.clone(), sha.clone())));
    (m.version == META_VERSION).then_some((m, sha))
}

/// What identifies a file's content without reading it: its inode, size and times.
/// The change time cannot be set back by anyone but the kernel's clock (touch -d sets
/// the modification time only), so a file written since has another identity.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Identity {
    dev: u64,
    ino: u64,
    len: u64,
    mtime_ns: i128,
    ctime_ns: i128,
}

impl Identity {
    fn of(m: &std::fs::Metadata) -> Identity {
        use std::os::unix::fs::MetadataExt;
        Identity {
            dev: m.dev(),
            ino: m.ino(),
            len: m.len(),
            mtime_ns: mtime_ns(m),
            ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
        }
    }
}

/// The SHA-256 of a file agentbash may source (a regular file of ours, not a link,
/// within the cap), read again only when its [`Identity`] changed since it was last
/// hashed in this process.
fn file_sha(path: &Path) -> Option<String> {
    let id = Identity::of(&std::fs::symlink_metadata(path).ok()?);
    if let Some(Some(sha)) = with_memo(|m| {
        m.hashed
            .get(path)
            .filter(|(known, _)| *known == id)
            .map(|(_, sha)| sha.clone())
    }) {
        return Some(sha);
    }
    let bytes = crate::fsguard::read_file(
        path,
        crate::fsguard::SNAPSHOT_CAP,
        crate::fsguard::Links::Refuse,
    )
    .ok()?;
    let sha = crate::ids::sha256_hex(&bytes);
    with_memo(|m| {
        // A server that runs many different commands cuts many parts: bounded.
        if m.hashed.len() >= MEMO_CAP {
            m.hashed.clear();
        }
        m.hashed.insert(path.to_path_buf(), (id, sha.clone()))
    });
    Some(sha)
}

/// What agentbash wrote into the cache for one snapshot: the SHA-256 of the snapshot
/// and of its metadata. Kept in the state directory, apart from the cache, so that a
/// command allowed to write `~/.cache` cannot make what it plants there pass for
/// agentbash's: a snapshot is sourced only when both files still hash to their seal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Seal {
    snapshot: Option<String>,
    meta: String,
}

fn seal_dir() -> PathBuf {
    crate::paths::state_dir().join("snapshot-seals")
}

fn seal_path(src: &Source) -> PathBuf {
    seal_dir().join(format!("{}.json", src.id))
}

fn read_seal(src: &Source) -> Option<Seal> {
    let text = crate::fsguard::read_file(&seal_path(src), 64 * 1024, crate::fsguard::Links::Refuse)
        .ok()?;
    serde_json::from_slice(&text).ok()
}

fn write_seal(src: &Source, seal: &Seal) -> Result<(), String> {
    let path = seal_path(src);
    crate::paths::private_dir(&seal_dir()).map_err(|e| format!("cannot seal the snapshot: {e}"))?;
    let json = serde_json::to_vec(seal).map_err(|e| e.to_string())?;
    write_private(&path, &json).map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// The seal of `m` (parsed from bytes hashing to `meta_sha`), when `m` and the snapshot
/// it names are what agentbash wrote for `src`: the snapshot at its own path, sourceable,
/// and both files matching their seal. Anything else is generated again.
fn sealed(src: &Source, m: &Meta, meta_sha: &str) -> Option<Seal> {
    let seal = read_seal(src)?;
    if seal.meta != meta_sha {
        return None;
    }
    let intact = match (&m.snapshot, &seal.snapshot) {
        // `file_sha` reads it as `sourceable` checks it (a regular file of ours, not a
        // link, within the cap), or knows it unchanged since it did in this process.
        (Some(p), Some(sha)) => *p == src.snapshot_path() && file_sha(p).as_ref() == Some(sha),
        (None, None) => m.outcome == Outcome::Failed,
        _ => false,
    };
    intact.then_some(seal)
}

/// A snapshot file bash may source: a regular file of ours (not a link) within the cap.
/// One that is not is generated again (written over by an atomic rename).
fn sourceable(p: &Path) -> bool {
    crate::fsguard::check_file(
        p,
        crate::fsguard::SNAPSHOT_CAP,
        crate::fsguard::Links::Refuse,
    )
    .is_ok()
}

/// `seal` is the snapshot's sealed SHA-256, given only for a snapshot checked
/// [`sourceable`]: without it, the run sources none.
fn from_meta(meta: Arc<Meta>, generated: bool, seal: Option<String>) -> Ensured {
    let mut warnings = Vec::new();
    if generated {
        warnings.extend(meta.warnings.iter().cloned());
    }
    warnings.extend(meta.persistent_warning.iter().cloned());
    let snapshot = meta.snapshot.as_ref().zip(seal).map(|(p, sha)| Snapshot {
        path: p.clone(),
        content_hash: meta.content_hash,
        sha256: sha,
        meta: meta.clone(),
    });
    Ensured {
        snapshot,
        meta: Some(meta),
        warnings,
        generated,
    }
}

/// Return the current snapshot, generating it when it is missing or stale (or when
/// `force`). Never fails a run: problems come back as warnings.
///
/// `sandbox` is the run's `[sandbox]` policy: when it confines the run, the rc is
/// sourced read-only under it too (writing only the generator's dump file), so an rc is
/// no way around the sandbox.
pub fn ensure(
    plan: &SnapshotPlan,
    env: &BuiltEnv,
    force: bool,
    sandbox: &crate::sandbox::Policy,
) -> Ensured {
    let SnapshotPlan::Use(src) = plan else {
        return Ensured::default();
    };
    let key = match current_key(src) {
        Ok(k) => k,
        // The rc vanished between planning and now: the same as no rc.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ensured::default(),
        // Not a regular file of ours, or too large: never sourced.
        Err(e) => {
            return Ensured {
                warnings: vec![format!(
                    "shell snapshot unavailable (will not use {}: {e}); the command ran without its functions and aliases",
                    src.rc.display()
                )],
                ..Default::default()
            };
        }
    };
    let unavailable = |e: String| Ensured {
        warnings: vec![format!(
            "shell snapshot unavailable ({e}); the command ran without the functions and aliases of {}",
            src.rc.display()
        )],
        ..Default::default()
    };
    // Checked on every run, a cached snapshot included: bash sources what is in it.
    if let Err(e) = crate::paths::private_dir(&src.dir) {
        return unavailable(e.to_string());
    }
    // A snapshot is sourced only as agentbash wrote it (see [`Seal`]); one changed
    // since (by whoever could write the cache) is generated again.
    if !force && let Some(found) = current(src, &key) {
        return found;
    }
    // One generator at a time; the others wait and reuse its work.
    let _lock = match FileLock::acquire(
        &src.lock_path(),
        None,
        Instant::now() + GENERATION_LIMIT * 3,
    ) {
        Ok(l) => l,
        Err(LockWait::Io(e)) => {
            return unavailable(format!("cannot lock {}: {e}", src.lock_path().display()));
        }
        Err(_) => return unavailable("another agentbash is still generating it".into()),
    };
    if !force && let Some(found) = current(src, &key) {
        return found;
    }
    match generate(src, key, env, sandbox) {
        Ok((meta, sha)) => {
            let sha = sha.filter(|_| meta.snapshot.as_deref().is_some_and(sourceable));
            from_meta(Arc::new(meta), true, sha)
        }
        Err(e) => unavailable(e),
    }
}

/// The cached snapshot, when it is current for `key` and still sealed.
fn current(src: &Source, key: &Key) -> Option<Ensured> {
    let (m, meta_sha) = read_meta_sealed(src)?;
    if m.key != *key {
        return None;
    }
    // Sealed means checked sourceable too: each file is read once a run.
    let seal = sealed(src, &m, &meta_sha)?;
    Some(from_meta(m, false, seal.snapshot))
}

/// Source the rc in a separate shell and write the snapshot and its metadata.
fn generate(
    src: &Source,
    key: Key,
    env: &BuiltEnv,
    sandbox: &crate::sandbox::Policy,
) -> Result<(Meta, Option<String>), String> {
    let started = Instant::now();
    let delim = format!("__AGENTBASH_{}", nonce());
    let dump_path = src.dir.join(format!("{}.dump-{}", src.id, nonce()));
    create_private(&dump_path).map_err(|e| format!("cannot write {}: {e}", dump_path.display()))?;
    let script = generator_script(&src.rc, &dump_path, &delim);
    let marker = format!("snapshot-{}", nonce());
    let mut vars = env.vars.clone();
    vars.insert(super::env::RUN_MARKER.into(), marker.clone());
    vars.insert("HISTFILE".into(), "/dev/null".into());
    vars.insert("HOME".into(), src.home.display().to_string());
    let cwd = if src.home.is_dir() {
        src.home.clone()
    } else {
        PathBuf::from("/")
    };
    let confinement = match read_only(sandbox, &dump_path, &cwd) {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_file(&dump_path);
            return Err(e);
        }
    };
    if let Some(tmp) = confinement.as_ref().and_then(|c| c.tmpdir.as_ref()) {
        vars.insert("TMPDIR".into(), tmp.path().display().to_string());
    }
    let spec = SpawnSpec {
        program: src.shell.clone(),
        args: vec![
            "--norc".into(),
            "--noprofile".into(),
            "-i".into(),
            "-c".into(),
            script,
        ],
        env: vars.into_iter().collect(),
        cwd,
        limits: Limits::default(),
        sandbox: confinement,
        detached: false,
        keep_background: false,
    };
    let spawned = crate::process::spawn::spawn(&spec, ChildIo::Null, ChildIo::Null, ChildIo::Null);
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            let _ = std::fs::remove_file(&dump_path);
            return Err(format!("cannot start {}: {e}", src.shell.display()));
        }
    };
    let deadline = started + GENERATION_LIMIT;
    let mut timed_out = false;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() >= deadline => {
                timed_out = true;
                // An interactive bash ignores TERM; the grace is short on purpose.
                Teardown::new(child.id() as i32, &marker)
                    .terminate(Duration::from_millis(100), true);
                let _ = child.wait();
                break;
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(5)),
            Err(_) => break,
        }
    }
    let text = crate::fsguard::read_file(
        &dump_path,
        crate::fsguard::SNAPSHOT_CAP,
        crate::fsguard::Links::Refuse,
    )
    .unwrap_or_default();
    let _ = std::fs::remove_file(&dump_path);
    let parsed = dump::parse(&String::from_utf8_lossy(&text), &delim);
    let mut meta = build(src, key, &parsed, timed_out);
    meta.duration_ms = started.elapsed().as_millis() as u64;
    let snapshot_text = meta.snapshot.take().map(|_| render(src, &parsed, &meta));
    // Parts cut from the previous snapshot are stale now.
    if let Ok(rd) = std::fs::read_dir(&src.dir) {
        let prefix = format!("{}.", src.id);
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if name.starts_with(&prefix) && name.ends_with(".sh") && name.len() == prefix.len() + 19
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    // The old seal goes first: until the new one is written, nothing here is sourced.
    let _ = std::fs::remove_file(seal_path(src));
    let mut snapshot_sha = None;
    if let Some(text) = snapshot_text {
        let path = src.snapshot_path();
        write_private(&path, text.as_bytes())
            .map_err(|e| format!("cannot write {}: {e}", path.display()))?;
        meta.content_hash = fnv64(text.as_bytes());
        meta.snapshot = Some(path);
        snapshot_sha = Some(crate::ids::sha256_hex(text.as_bytes()));
    } else {
        let _ = std::fs::remove_file(src.snapshot_path());
    }
    let json = serde_json::to_vec_pretty(&meta).map_err(|e| e.to_string())?;
    write_private(&src.meta_path(), &json)
        .map_err(|e| format!("cannot write {}: {e}", src.meta_path().display()))?;
    let seal = Seal {
        snapshot: snapshot_sha.clone(),
        meta: crate::ids::sha256_hex(&json),
    };
    write_seal(src, &seal)?;
    Ok((meta, snapshot_sha))
}

/// The confinement the generator runs in when the run's policy sandboxes it:
/// read-only, with the run's `deny_read` and network, writable only its `dump` file and
/// a private TMPDIR of its own (removed when the generator is done).
fn read_only(
    policy: &crate::sandbox::Policy,
    dump: &Path,
    cwd: &Path,
) -> Result<Option<Arc<crate::sandbox::Confinement>>, String> {
    use crate::sandbox::Mode;
    use std::os::unix::fs::PermissionsExt;
    if policy.mode == Mode::Off {
        return Ok(None);
    }
    let tmpdir = tempfile::Builder::new()
        .prefix("agentbash-snapshot-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .map_err(|e| format!("cannot create the generator's TMPDIR: {e}"))?;
    let policy = crate::sandbox::Policy {
        mode: Mode::ReadOnly,
        workspace: None,
        writable: vec![dump.to_path_buf()],
        ..policy.clone()
    };
    let prepared =
        crate::sandbox::prepare(&policy, cwd, tmpdir.path()).map_err(|e| e.to_string())?;
    Ok(Some(Arc::new(crate::sandbox::Confinement {
        prepared,
        tmpdir: Some(tmpdir),
    })))
}

/// The script the generator shell runs: options before, the rc, then the dump (also
/// from an EXIT trap, so an rc that exits or trips `set -e` still leaves what it
/// defined). History is never written.
fn generator_script(rc: &Path, dump_path: &Path, delim: &str) -> String {
    let what = dump::Sections {
        cwd: false,
        variables: false,
        options: true,
        definitions_on_request: false,
    };
    // Everything after the rc is in functions parsed before it, so the rc's aliases
    // cannot change it; its functions named like the builtins we use are recorded
    // (for `snapshot report`) and removed before the dump.
    format!(
        "__agentbash_before=\"$(builtin shopt -p; builtin set +o)\"\n\
         __agentbash_file={file}\n\
         {func}\
         __agentbash_finish() {{\n  \
           __agentbash_m=\n  \
           {unshadow}  \
           __agentbash_dump \"$__agentbash_file\" \"$1\"\n  \
           builtin trap - EXIT\n  \
           builtin printf '\\n{delim} options-before\\n%s\\n' \"$__agentbash_before\" >> \"$__agentbash_file\"\n  \
           builtin printf '\\n{delim} shadowing-functions\\n%s' \"$__agentbash_m\" >> \"$__agentbash_file\"\n  \
           builtin unset HISTFILE\n  \
           builtin exit 0\n\
         }}\n\
         builtin trap '__agentbash_finish \"exit $?\"' EXIT\n\
         . {rc} </dev/null >/dev/null 2>&1\n\
         __agentbash_finish \"done $?\"\n",
        file = quote(&dump_path.display().to_string()),
        func = dump::function("__agentbash_dump", delim, what),
        rc = quote(&rc.display().to_string()),
        unshadow = dump::unshadow(Some("__agentbash_m")),
    )
}

#[cfg(test)]
mod tests {
    use super::build::option_verdict;
    use super::*;

    #[test]
    fn option_policy() {
        assert!(option_verdict("set", "errexit").is_err());
        assert!(option_verdict("set", "nounset").is_err());
        assert!(option_verdict("set", "pipefail").is_err());
        assert!(option_verdict("shopt", "extglob").is_ok());
        assert!(option_verdict("shopt", "nullglob").is_err());
        assert!(option_verdict("shopt", "compat42").is_ok());
    }

    #[test]
    fn helper_closure_and_shadowing() {
        let mut d = dump::Dump {
            complete: true,
            status: "done 0".into(),
            ..Default::default()
        };
        for (n, body) in [
            ("greet", "greet () \n{ \n    _zz \"$@\"\n}"),
            ("_zz", "_zz () \n{ \n    _deeper\n}"),
            ("_deeper", "_deeper () \n{ \n    echo deep\n}"),
            ("_unused", "_unused () \n{ \n    :\n}"),
            ("grep", "grep () \n{ \n    command grep --color \"$@\"\n}"),
            ("__agentbash_dump", "__agentbash_dump () \n{ \n    :\n}"),
        ] {
            d.functions.insert(n.into(), body.into());
        }
        d.aliases.insert("ll".into(), "alias ll='ls -l'".into());
        d.aliases
            .insert("ls".into(), "alias ls='ls --color'".into());
        let src = Source {
            rc: "/h/.bashrc".into(),
            shell: "/bin/bash".into(),
            home: "/h".into(),
            dir: "/tmp".into(),
            id: "x".into(),
        };
        let key = Key {
            rc: "/h/.bashrc".into(),
            rc_len: 0,
            rc_mtime_ns: 0,
            rc_hash: 0,
            shell: "/bin/bash".into(),
            shell_mtime_ns: 0,
            home: "/h".into(),
        };
        let m = build(&src, key, &d, false);
        let kept: Vec<&str> = m.functions.keys().map(String::as_str).collect();
        assert_eq!(kept, ["_deeper", "_zz", "greet"]);
        let dropped: Vec<(&str, &str)> = m
            .dropped
            .iter()
            .map(|x| (x.name.as_str(), x.kind.as_str()))
            .collect();
        assert!(dropped.contains(&("grep", "function")));
        assert!(dropped.contains(&("_unused", "function")));
        assert!(dropped.contains(&("ls", "alias")));
        assert!(m.aliases.contains_key("ll"));
        assert_eq!(m.outcome, Outcome::Ok);
    }
}
