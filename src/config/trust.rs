//! Project trust: a repository's own profiles run only after the user said so.
//!
//! A project's `.agentbash/profiles/NAME.toml` can turn interception and redaction off
//! or set a `shell.prefix` that runs code, so a freshly cloned repository must not get
//! to decide how agentbash runs commands in it. `agentbash trust [DIR]` records a
//! SHA-256 of every file a project profile can load — every file under
//! `.agentbash/profiles` and `.agentbash/rules` (artifacts and anything else under
//! `.agentbash/` are not read as configuration, so they are not covered) — and the
//! project's profiles are used only while that set of files is unchanged: an edit, a
//! new file or a removed one makes the project untrusted until it is trusted again.
//! Project profiles may only `extends` paths, and name rule packs, inside those two
//! directories (see [`covers`]), so nothing they load escapes the record.
//!
//! Records live in `$AGENTBASH_STATE_DIR/trust/`, one 0600 TOML file per project named
//! after a hash of its canonical path, in a 0700 directory. `AGENTBASH_TRUST_PROJECT=1`
//! in agentbash's environment trusts every project without a record (for CI, where
//! the checkout is the code under test anyway).
//!
//! The text a project profile is parsed from is hashed again and must be the text that
//! was trusted, so a change between the lookup and the read is caught too. What
//! remains: rule packs are read by the rule loader after the lookup checked their hash,
//! so a concurrent writer of the project directory could still swap one in between (a
//! rule pack only routes commands; it cannot run code).

use crate::fsguard::{self, Links};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

/// `1` trusts every project's profiles without a record.
pub const TRUST_ENV: &str = "AGENTBASH_TRUST_PROJECT";
/// The directories under `.agentbash/` a trust record covers.
pub const COVERED: &[&str] = &["profiles", "rules"];
/// More files than this under the covered directories is refused (a hostile tree).
const MAX_FILES: usize = 10_000;
const MAX_DEPTH: usize = 16;
/// Nor more bytes than this in all (each file is also capped at
/// [`fsguard::CONFIG_CAP`]): a trusted project is hashed on every lookup.
const MAX_TOTAL_BYTES: u64 = 16 << 20;

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("{} has no .agentbash/ directory: there is nothing to trust", .0.display())]
    NoProject(PathBuf),
    #[error("cannot resolve {}: {err}", path.display())]
    Resolve { path: PathBuf, err: std::io::Error },
    #[error("cannot hash {}: {err}", err.path().display())]
    Unreadable { err: fsguard::ReadError },
    #[error("cannot list {}: {err}", path.display())]
    List { path: PathBuf, err: std::io::Error },
    #[error("more than {MAX_FILES} files or {MAX_TOTAL_BYTES} bytes, or directories nested deeper than {MAX_DEPTH}, under {}", .0.display())]
    TooMany(PathBuf),
    #[error("trust records: {0}")]
    Dir(#[from] fsguard::DirError),
    #[error("cannot write the trust record {}: {err}", path.display())]
    Write { path: PathBuf, err: std::io::Error },
    #[error("{} is not trusted", .0.display())]
    NotTrusted(PathBuf),
}

/// One project's record, as stored.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Record {
    /// The canonical project directory (the one holding `.agentbash/`).
    pub project: PathBuf,
    /// Unix seconds.
    pub trusted_at: u64,
    /// Path relative to `.agentbash/` → lowercase hex SHA-256 of its content.
    pub files: BTreeMap<String, String>,
}

/// Whether a project's profiles may be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// By `AGENTBASH_TRUST_PROJECT=1`.
    TrustedByEnv,
    /// By a record that still matches; its hashes (path under `.agentbash/` → hex),
    /// so what is parsed can be checked to be what was trusted.
    Trusted(BTreeMap<String, String>),
    Untrusted(String),
}

impl Status {
    pub fn is_trusted(&self) -> bool {
        !matches!(self, Status::Untrusted(_))
    }
}

/// The project a file belongs to when it is under one of its covered directories:
/// `<project>/.agentbash/profiles/…` → `<project>`.
pub fn project_of(path: &Path) -> Option<PathBuf> {
    let comps: Vec<Component> = path.components().collect();
    (0..comps.len().saturating_sub(2)).rev().find_map(|i| {
        let covered = comps[i].as_os_str() == ".agentbash"
            && COVERED.iter().any(|c| comps[i + 1].as_os_str() == *c);
        covered.then(|| comps[..i].iter().collect())
    })
}

/// Whether `path` (absolute, folded) is inside `project`'s covered directories.
pub fn covers(project: &Path, path: &Path) -> bool {
    COVERED
        .iter()
        .any(|c| path.starts_with(project.join(".agentbash").join(c)))
}

/// `trust DIR`: DIR itself must hold `.agentbash/`; without DIR, the nearest ancestor
/// of `cwd` that does.
pub fn find_project(dir: Option<&Path>, cwd: &Path) -> Result<PathBuf, TrustError> {
    let has = |d: &Path| d.join(".agentbash").is_dir();
    let found = match dir {
        Some(d) => {
            let d = crate::paths::absolute(cwd, d);
            has(&d)
                .then_some(d.clone())
                .ok_or(TrustError::NoProject(d))?
        }
        None => cwd
            .ancestors()
            .find(|d| has(d))
            .map(Path::to_path_buf)
            .ok_or_else(|| TrustError::NoProject(cwd.to_path_buf()))?,
    };
    found.canonicalize().map_err(|err| TrustError::Resolve {
        path: found.clone(),
        err,
    })
}

use crate::ids::hex;
pub use crate::ids::sha256_hex;

/// Hash every file under the project's covered directories (links are followed to
/// files, which must pass the [`fsguard`] checks; anything else is an error).
pub fn fingerprint(project: &Path) -> Result<BTreeMap<String, String>, TrustError> {
    let base = project.join(".agentbash");
    let mut out = BTreeMap::new();
    let mut total = 0;
    for c in COVERED {
        walk(&base, &base.join(c), 0, &mut out, &mut total)?;
    }
    Ok(out)
}

fn walk(
    base: &Path,
    dir: &Path,
    depth: usize,
    out: &mut BTreeMap<String, String>,
    total: &mut u64,
) -> Result<(), TrustError> {
    let rd = match std::fs::read_dir(dir) {
        Ok(rd) => rd,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && depth == 0 => return Ok(()),
        Err(err) => {
            return Err(TrustError::List {
                path: dir.to_path_buf(),
                err,
            });
        }
    };
    if depth > MAX_DEPTH {
        return Err(TrustError::TooMany(dir.to_path_buf()));
    }
    let mut entries: Vec<_> = rd.flatten().map(|e| e.path()).collect();
    entries.sort_unstable();
    for path in entries {
        let is_real_dir = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir());
        if is_real_dir {
            walk(base, &path, depth + 1, out, total)?;
            continue;
        }
        if out.len() >= MAX_FILES {
            return Err(TrustError::TooMany(base.to_path_buf()));
        }
        let bytes = fsguard::read_file(&path, fsguard::CONFIG_CAP, Links::Follow)
            .map_err(|err| TrustError::Unreadable { err })?;
        *total += bytes.len() as u64;
        if *total > MAX_TOTAL_BYTES {
            return Err(TrustError::TooMany(base.to_path_buf()));
        }
        let rel = path
            .strip_prefix(base)
            .unwrap_or(&path)
            .display()
            .to_string();
        out.insert(rel, hex(&Sha256::digest(&bytes)));
    }
    Ok(())
}

/// Where trust records are kept.
#[derive(Debug, Clone)]
pub struct TrustStore {
    dir: PathBuf,
    /// `AGENTBASH_TRUST_PROJECT=1` in agentbash's environment, read once.
    trust_all: bool,
}

impl Default for TrustStore {
    fn default() -> Self {
        Self::new()
    }
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl TrustStore {
    /// `$AGENTBASH_STATE_DIR/trust`.
    pub fn new() -> Self {
        TrustStore {
            dir: crate::paths::state_dir().join("trust"),
            trust_all: std::env::var(TRUST_ENV).as_deref() == Ok("1"),
        }
    }

    /// Records kept in `dir` (tests, embedders with a state dir of their own); the
    /// environment's `AGENTBASH_TRUST_PROJECT` is not consulted.
    pub fn with_dir(dir: PathBuf) -> Self {
        TrustStore {
            dir,
            trust_all: false,
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn record_path(&self, project: &Path) -> PathBuf {
        let h = Sha256::digest(project.as_os_str().as_encoded_bytes());
        self.dir.join(format!("{}.toml", hex(&h[..16])))
    }

    fn read(&self, path: &Path) -> Option<Record> {
        let text = fsguard::read_text(path, fsguard::TRUST_RECORD_CAP, Links::Refuse).ok()?;
        toml::from_str(&text).ok()
    }

    /// Records are used only from directories that pass the [`fsguard`] checks, up to
    /// the state dir: whoever could write them could trust anything.
    fn check_dirs(&self) -> Result<bool, fsguard::DirError> {
        if std::fs::symlink_metadata(&self.dir).is_err() {
            return Ok(false);
        }
        let state = crate::paths::state_dir();
        if self.dir.starts_with(&state) {
            fsguard::check_dir(&state)?;
        }
        fsguard::check_dir(&self.dir)?;
        Ok(true)
    }

    /// The record of `project` (canonical), if there is one.
    pub fn record(&self, project: &Path) -> Option<Record> {
        self.checked_record(project).ok().flatten()
    }

    fn checked_record(&self, project: &Path) -> Result<Option<Record>, fsguard::DirError> {
        if !self.check_dirs()? {
            return Ok(None);
        }
        Ok(self
            .read(&self.record_path(project))
            .filter(|r| r.project == project))
    }

    /// Record `project` (canonical) as trusted with its current files.
    pub fn trust(&self, project: &Path) -> Result<Record, TrustError> {
        let files = fingerprint(project)?;
        let record = Record {
            project: project.to_path_buf(),
            trusted_at: now_secs(),
            files,
        };
        crate::paths::private_dir(&self.dir)?;
        let path = self.record_path(project);
        let text = toml::to_string(&record).map_err(|e| TrustError::Write {
            path: path.clone(),
            err: std::io::Error::other(e),
        })?;
        crate::fsguard::write_private(&path, text.as_bytes())
            .map_err(|err| TrustError::Write { path, err })?;
        Ok(record)
    }

    /// Forget `project` (canonical).
    pub fn revoke(&self, project: &Path) -> Result<(), TrustError> {
        if self.record(project).is_none() {
            return Err(TrustError::NotTrusted(project.to_path_buf()));
        }
        let path = self.record_path(project);
        std::fs::remove_file(&path).map_err(|err| TrustError::Write { path, err })
    }

    /// Every record, sorted by project.
    pub fn list(&self) -> Result<Vec<Record>, TrustError> {
        if !self.check_dirs()? {
            return Ok(vec![]);
        }
        let mut out: Vec<Record> = std::fs::read_dir(&self.dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_name().to_str().is_some_and(|n| n.ends_with(".toml")))
            .filter_map(|e| self.read(&e.path()))
            .collect();
        out.sort_unstable_by(|a, b| a.project.cmp(&b.project));
        Ok(out)
    }

    /// Whether `project`'s profiles may be used now.
    pub fn status(&self, project: &Path) -> Status {
        if self.trust_all {
            return Status::TrustedByEnv;
        }
        let canonical = match project.canonicalize() {
            Ok(c) => c,
            Err(e) => return Status::Untrusted(format!("cannot resolve it: {e}")),
        };
        let record = match self.checked_record(&canonical) {
            Ok(Some(r)) => r,
            Ok(None) => return Status::Untrusted("it was never trusted".into()),
            Err(e) => return Status::Untrusted(format!("trust records are not usable: {e}")),
        };
        match fingerprint(&canonical) {
            Ok(now) => match changes(&record.files, &now) {
                None => Status::Trusted(now),
                Some(c) => {
                    Status::Untrusted(format!("its files changed since it was trusted: {c}"))
                }
            },
            Err(e) => Status::Untrusted(e.to_string()),
        }
    }
}

/// What differs between two fingerprints, for people ("modified profiles/x.toml, …").
pub fn changes(then: &BTreeMap<String, String>, now: &BTreeMap<String, String>) -> Option<String> {
    let mut v = Vec::new();
    for (k, h) in now {
        match then.get(k) {
            None => v.push(format!("new {k}")),
            Some(old) if old != h => v.push(format!("modified {k}")),
            Some(_) => {}
        }
    }
    v.extend(
        then.keys()
            .filter(|k| !now.contains_key(*k))
            .map(|k| format!("removed {k}")),
    );
    (!v.is_empty()).then(|| v.join(", "))
}

/// The warning for a project profile left out, with what to do.
pub fn skipped_warning(file: &Path, project: &Path, why: &str) -> String {
    format!(
        "ignoring project profile {}: {} is not trusted ({why}); to use its profiles run `agentbash trust {}` (or set {TRUST_ENV}=1)",
        file.display(),
        project.display(),
        crate::display::quote(&project.display().to_string())
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn project_of_and_covers() {
        let p = Path::new("/r/.agentbash/profiles/x.toml");
        assert_eq!(project_of(p), Some(PathBuf::from("/r")));
        assert_eq!(
            project_of(Path::new("/r/a/.agentbash/rules/sub/p.toml")),
            Some(PathBuf::from("/r/a"))
        );
        assert_eq!(
            project_of(Path::new("/r/.agentbash/artifacts/1.json")),
            None
        );
        assert_eq!(
            project_of(Path::new("/home/u/.config/agentbash/profiles/x.toml")),
            None
        );
        assert!(covers(
            Path::new("/r"),
            Path::new("/r/.agentbash/rules/p.toml")
        ));
        assert!(!covers(Path::new("/r"), Path::new("/r/tools/p.toml")));
    }

    #[test]
    fn changes_name_each_file() {
        let a: BTreeMap<String, String> =
            [("a".into(), "1".into()), ("b".into(), "2".into())].into();
        let b: BTreeMap<String, String> =
            [("a".into(), "9".into()), ("c".into(), "3".into())].into();
        assert_eq!(changes(&a, &a), None);
        assert_eq!(
            changes(&a, &b).as_deref(),
            Some("modified a, new c, removed b")
        );
    }
}
