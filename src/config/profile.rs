//! Profiles (docs/CONFIG.md): lookup, `extends` layering and strict validation.
//!
//! Each file is validated on its own first, so every error names the file, line and
//! column the user has to edit (and suggests the key they probably meant); only then
//! are the layers merged (tables key by key, arrays and scalars replaced) into the
//! one [`Profile`] the rest of the program consumes.

use super::rules::{Denies, RuleSet};
use super::schema;

pub use schema::*;

mod wording;

pub use wording::edit_distance;
use wording::{entry_offset, shorten, type_error, with_suggestion};

use std::path::{Path, PathBuf};

/// Built-in profiles, embedded so the binary works from anywhere.
pub const BUILTIN: &[(&str, &str)] = &[
    ("default", include_str!("../../profiles/default.toml")),
    ("ci", include_str!("../../profiles/ci.toml")),
    ("agent", include_str!("../../profiles/agent.toml")),
    ("strict", include_str!("../../profiles/strict.toml")),
];

const MAX_EXTENDS_DEPTH: usize = 16;

/// Where a profile layer came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    Builtin(String),
    File(PathBuf),
}

impl std::fmt::Display for Origin {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Origin::Builtin(n) => write!(f, "built-in:{n}"),
            Origin::File(p) => write!(f, "{}", p.display()),
        }
    }
}

impl Origin {
    /// Directory that relative paths inside this layer are resolved against.
    pub fn base_dir(&self) -> Option<&Path> {
        match self {
            Origin::Builtin(_) => None,
            Origin::File(p) => p.parent(),
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("{origin}:{line}:{col}: {message}")]
    Invalid {
        origin: Origin,
        line: usize,
        col: usize,
        message: String,
    },
    #[error(
        "profile {name:?} not found; looked in: {looked}. Run `agentbash profile list` to see the available profiles"
    )]
    NotFound { name: String, looked: String },
    #[error("cannot read profile {}: {err}", path.display())]
    Unreadable {
        path: PathBuf,
        err: crate::fsguard::ReadError,
    },
    #[error(
        "profile {name:?} exists only as {}, and {} is not trusted ({why}); to use it run `agentbash trust {}` (or set AGENTBASH_TRUST_PROJECT=1), or name a built-in as builtin:NAME",
        file.display(),
        project.display(),
        crate::display::quote(&project.display().to_string())
    )]
    Untrusted {
        name: String,
        file: PathBuf,
        project: PathBuf,
        why: String,
    },
    #[error(
        "{}: it changed after `agentbash trust` (its content is not what was trusted); review it and run `agentbash trust` again",
        path.display()
    )]
    ChangedSinceTrust { path: PathBuf },
    #[error("{origin}: `extends` chain is too deep or circular ({chain})")]
    ExtendsLoop { origin: Origin, chain: String },
}

/// A resolved, validated profile plus where each layer came from (lowest first).
#[derive(Debug, Clone)]
pub struct LoadedProfile {
    pub name: String,
    pub profile: Profile,
    /// Every file of the `extends` chain, lowest first, with its parsed table (see
    /// [`LoadedProfile::layers`]).
    layers: std::sync::OnceLock<Vec<(Origin, toml::Table)>>,
    /// The file that named the profile (the top layer).
    top: Origin,
    /// Compiled rule packs, built on first use: compiling the default pack costs
    /// milliseconds, so a long-lived server compiles it once.
    rules: PackSlot,
    /// The guard's packs (`guard.rules`), compiled on first use.
    guard_rules: PackSlot,
    /// Said while looking the profile up: untrusted project profiles left out.
    pub warnings: Vec<String>,
}

/// Where a profile's compiled packs are kept once loaded.
type PackSlot = std::sync::OnceLock<Result<std::sync::Arc<RuleSet>, PackError>>;

/// Which of a profile's rule packs: the interceptor's (`interceptor.rules`) or the
/// guard's (`guard.rules`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Packs {
    Interceptor,
    Guard,
}

impl Packs {
    /// The profile section that names them.
    pub fn section(self) -> &'static str {
        match self {
            Packs::Interceptor => "interceptor",
            Packs::Guard => "guard",
        }
    }
}

/// A rule pack a profile names that cannot be used: no command runs until it is
/// fixed (exit 125).
#[derive(Debug, Clone, thiserror::Error)]
pub enum PackError {
    /// The pack cannot be read or is not a valid pack.
    #[error(
        "rule pack cannot be loaded: {source}. Fix the pack, or remove it from {section}.rules (set in {named_in}); no command runs until then"
    )]
    Unloadable {
        section: &'static str,
        named_in: String,
        source: std::sync::Arc<super::rules::RulesError>,
    },
    /// A project profile names a pack its trust record does not cover.
    #[error(
        "{}: rule pack {spec:?} is outside {1}/.agentbash/profiles and {1}/.agentbash/rules, which `agentbash trust` covers; move it there",
        file.display(),
        project.display()
    )]
    Untrusted {
        file: PathBuf,
        spec: String,
        project: PathBuf,
    },
}

/// One section's rule packs (see [`LoadedProfile::rule_packs`]).
pub struct RulePacks<'a> {
    profile: &'a LoadedProfile,
    which: Packs,
    specs: &'a [String],
    slot: &'a PackSlot,
}

impl RulePacks<'_> {
    /// The packs, compiled (once per profile). An error names the pack, what is
    /// wrong with it and the profile key that names it.
    pub fn compiled(&self) -> Result<std::sync::Arc<RuleSet>, PackError> {
        self.slot
            .get_or_init(|| {
                self.profile.check_pack_paths(self.which, self.specs)?;
                RuleSet::load(self.specs, self.profile.rules_base(self.which))
                    .map(std::sync::Arc::new)
                    .map_err(|e| self.profile.pack_error(self.which, e))
            })
            .clone()
    }

    /// Whether the packs load, without compiling them when they have not been
    /// compiled yet (see [`RuleSet::check_loadable`]): what a run that needs no rules
    /// checks, so that a broken pack is never silently ignored. Says whether they hold
    /// `deny` rules, which apply even then.
    pub fn loadable(&self) -> Result<Denies, PackError> {
        if let Some(loaded) = self.slot.get() {
            return loaded.as_ref().map_err(Clone::clone).map(|set| {
                if set.has_deny_rules() {
                    Denies::Some
                } else {
                    Denies::None
                }
            });
        }
        self.profile.check_pack_paths(self.which, self.specs)?;
        RuleSet::check_loadable(self.specs, self.profile.rules_base(self.which))
            .map_err(|e| self.profile.pack_error(self.which, e))
    }

    /// Whether a rule of the packs could match `text` (see
    /// [`super::rules::might_match`]): when not, they need not be compiled for this
    /// run. A pack the trust record does not cover is not read here: the answer is
    /// yes, and [`RulePacks::compiled`] then says what is wrong.
    pub fn might_match(&self, text: &str) -> bool {
        self.slot.get().is_some()
            || self
                .profile
                .check_pack_paths(self.which, self.specs)
                .is_err()
            || super::rules::might_match(self.specs, self.profile.rules_base(self.which), text)
    }
}

impl LoadedProfile {
    /// The file that named the profile (the top layer).
    pub fn origin(&self) -> &Origin {
        &self.top
    }

    /// The layers of the `extends` chain, lowest first, each with its TOML table.
    /// The built-in default is typed without parsing its text (see
    /// [`builtin_default`]); its table is parsed here, the first time it is asked for.
    pub fn layers(&self) -> &[(Origin, toml::Table)] {
        self.layers.get_or_init(|| {
            let table = read_origin(&self.top)
                .ok()
                .and_then(|t| toml::from_str(&t).ok())
                .unwrap_or_default();
            vec![(self.top.clone(), table)]
        })
    }

    /// The rule packs of `which` section, the one way in to them: compiled
    /// ([`RulePacks::compiled`]), only checked ([`RulePacks::loadable`]) or asked
    /// whether any rule could match ([`RulePacks::might_match`]). Each is loaded on
    /// first use, relative to the file that named it, and kept for the profile's life
    /// (compiling the default pack costs milliseconds; a server does it once).
    pub fn rule_packs(&self, which: Packs) -> RulePacks<'_> {
        let (specs, slot) = match which {
            Packs::Interceptor => (&self.profile.interceptor.rules, &self.rules),
            Packs::Guard => (&self.profile.guard.rules, &self.guard_rules),
        };
        RulePacks {
            profile: self,
            which,
            specs,
            slot,
        }
    }

    /// Pack paths are relative to the file that named them.
    fn rules_base(&self, which: Packs) -> Option<&Path> {
        self.rules_origin(which).and_then(Origin::base_dir)
    }

    /// The layer that set `which`'s packs, when it matters: a built-in profile whose
    /// layers are not parsed yet names no file (no base, no trust to check), and its
    /// text is not parsed on every run to learn that.
    fn rules_origin(&self, which: Packs) -> Option<&Origin> {
        if self.layers.get().is_none() && matches!(self.top, Origin::Builtin(_)) {
            return None;
        }
        self.origin_of(which.section(), "rules")
    }

    fn pack_error(&self, which: Packs, source: super::rules::RulesError) -> PackError {
        let named_in = self
            .origin_of(which.section(), "rules")
            .map_or_else(|| self.top.to_string(), ToString::to_string);
        PackError::Unloadable {
            section: which.section(),
            named_in,
            source: std::sync::Arc::new(source),
        }
    }

    /// A project profile's packs must be covered by its trust record.
    fn check_pack_paths(&self, which: Packs, specs: &[String]) -> Result<(), PackError> {
        let origin = self.rules_origin(which);
        let base = self.rules_base(which);
        if let Some(Origin::File(f)) = origin
            && let Some(project) = crate::config::trust::project_of(f)
            && let Some(base) = base
        {
            for spec in specs {
                let path = crate::paths::absolute(base, Path::new(spec));
                if Lookup::is_path(spec) && !crate::config::trust::covers(&project, &path) {
                    return Err(PackError::Untrusted {
                        file: f.clone(),
                        spec: spec.clone(),
                        project,
                    });
                }
            }
        }
        Ok(())
    }

    /// The layer that last set `section.key` (for `profile show --origin`).
    pub fn origin_of(&self, section: &str, key: &str) -> Option<&Origin> {
        self.layers().iter().rev().find_map(|(o, t)| {
            let hit = if section.is_empty() {
                t.contains_key(key)
            } else {
                t.get(section)
                    .and_then(|s| s.as_table())
                    .is_some_and(|s| s.contains_key(key))
            };
            hit.then_some(o)
        })
    }
}

/// Names a built-in profile, skipping every other location: `builtin:agent`.
pub const BUILTIN_PREFIX: &str = "builtin:";

/// Directories searched for named profiles, highest priority first.
pub struct Lookup {
    pub invoking_dir: PathBuf,
    trust: crate::config::trust::TrustStore,
    /// Trust status per project directory, decided once per lookup.
    statuses: std::sync::Mutex<std::collections::HashMap<PathBuf, crate::config::trust::Status>>,
    /// Untrusted project profiles left out so far (drained into the loaded profile).
    warnings: std::sync::Mutex<Vec<String>>,
}

impl Lookup {
    pub fn new(invoking_dir: impl Into<PathBuf>) -> Self {
        Self::with_trust(invoking_dir, crate::config::trust::TrustStore::new())
    }

    /// A lookup that believes the trust records of `trust`.
    pub fn with_trust(
        invoking_dir: impl Into<PathBuf>,
        trust: crate::config::trust::TrustStore,
    ) -> Self {
        Lookup {
            invoking_dir: invoking_dir.into(),
            trust,
            statuses: Default::default(),
            warnings: Default::default(),
        }
    }

    /// The nearest `.agentbash/profiles/NAME.toml` at or above the invoking directory,
    /// with its project directory, trusted or not.
    pub fn project_file(&self, name: &str) -> Option<(PathBuf, PathBuf)> {
        let file = format!("{name}.toml");
        self.invoking_dir.ancestors().find_map(|dir| {
            let p = dir.join(".agentbash/profiles").join(&file);
            p.is_file().then(|| (p, dir.to_path_buf()))
        })
    }

    /// Whether the profiles of `project` may be used (see [`crate::config::trust`]).
    pub fn project_status(&self, project: &Path) -> crate::config::trust::Status {
        let known = self
            .statuses
            .lock()
            .ok()
            .and_then(|m| m.get(project).cloned());
        if let Some(s) = known {
            return s;
        }
        let s = self.trust.status(project);
        if let Ok(mut m) = self.statuses.lock() {
            m.insert(project.to_path_buf(), s.clone());
        }
        s
    }

    /// A layer's text; a trusted project's file must hash to what its record says.
    fn read_layer(&self, origin: &Origin) -> Result<String, ProfileError> {
        let text = read_origin(origin)?;
        if let Origin::File(p) = origin
            && let Some(project) = crate::config::trust::project_of(p)
            && let crate::config::trust::Status::Trusted(files) = self.project_status(&project)
        {
            let rel = p
                .strip_prefix(project.join(".agentbash"))
                .unwrap_or(p)
                .display()
                .to_string();
            if files.get(&rel) != Some(&crate::config::trust::sha256_hex(text.as_bytes())) {
                return Err(ProfileError::ChangedSinceTrust { path: p.clone() });
            }
        }
        Ok(text)
    }

    fn warn(&self, w: String) {
        if let Ok(mut v) = self.warnings.lock()
            && !v.contains(&w)
        {
            v.push(w);
        }
    }

    fn take_warnings(&self) -> Vec<String> {
        self.warnings
            .lock()
            .map(|mut v| std::mem::take(&mut *v))
            .unwrap_or_default()
    }

    /// `$AGENTBASH_CONFIG_DIR`, else `$XDG_CONFIG_HOME/agentbash`, else `~/.config/agentbash`.
    pub fn config_dir() -> Option<PathBuf> {
        if let Some(d) = std::env::var_os("AGENTBASH_CONFIG_DIR").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(d));
        }
        if let Some(d) = std::env::var_os("XDG_CONFIG_HOME").filter(|d| !d.is_empty()) {
            return Some(PathBuf::from(d).join("agentbash"));
        }
        crate::paths::home().map(|h| h.join(".config/agentbash"))
    }

    /// Every place `name` could come from, in lookup order. A project profile is
    /// among them only when its project is trusted; otherwise it is left out with a
    /// warning (see [`LoadedProfile::warnings`]). `builtin:NAME` is the built-in only.
    pub fn candidates(&self, name: &str) -> Vec<Origin> {
        let mut out = Vec::new();
        if let Some(b) = name.strip_prefix(BUILTIN_PREFIX) {
            if BUILTIN.iter().any(|(n, _)| *n == b) {
                out.push(Origin::Builtin(b.to_string()));
            }
            return out;
        }
        let file = format!("{name}.toml");
        if let Some((p, project)) = self.project_file(name) {
            match self.project_status(&project) {
                crate::config::trust::Status::Untrusted(why) => {
                    self.warn(crate::config::trust::skipped_warning(&p, &project, &why));
                }
                _ => out.push(Origin::File(p)),
            }
        }
        if let Some(cd) = Self::config_dir() {
            let p = cd.join("profiles").join(&file);
            if p.is_file() {
                out.push(Origin::File(p));
            }
        }
        if BUILTIN.iter().any(|(n, _)| *n == name) {
            out.push(Origin::Builtin(name.to_string()));
        }
        out
    }

    fn looked_in(&self, name: &str) -> String {
        let mut v = vec![format!(
            "{}/.agentbash/profiles/{name}.toml (and its ancestors)",
            self.invoking_dir.display()
        )];
        if let Some(cd) = Self::config_dir() {
            v.push(format!("{}/profiles/{name}.toml", cd.display()));
        }
        v.push("the built-in profiles (default, ci, agent)".into());
        v.join(", ")
    }

    /// True when `spec` names a file rather than a profile.
    pub fn is_path(spec: &str) -> bool {
        !spec.starts_with(BUILTIN_PREFIX) && (spec.contains('/') || spec.ends_with(".toml"))
    }

    /// `spec` not found: untrusted when only an untrusted project defines it.
    fn not_found(&self, spec: &str) -> ProfileError {
        let name = spec.to_string();
        if !spec.starts_with(BUILTIN_PREFIX)
            && let Some((file, project)) = self.project_file(spec)
            && let crate::config::trust::Status::Untrusted(why) = self.project_status(&project)
        {
            return ProfileError::Untrusted {
                name,
                file,
                project,
                why,
            };
        }
        ProfileError::NotFound {
            looked: self.looked_in(spec),
            name,
        }
    }

    /// Resolve `spec` (name or path) and load it with its `extends` chain.
    pub fn load(&self, spec: &str) -> Result<LoadedProfile, ProfileError> {
        let origin = if Self::is_path(spec) {
            Origin::File(crate::paths::absolute(&self.invoking_dir, Path::new(spec)))
        } else {
            self.candidates(spec)
                .into_iter()
                .next()
                .ok_or_else(|| self.not_found(spec))?
        };
        let name = if Self::is_path(spec) {
            Path::new(spec)
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| spec.to_string())
        } else {
            spec.strip_prefix(BUILTIN_PREFIX)
                .unwrap_or(spec)
                .to_string()
        };
        self.load_origin(name, origin)
    }

    pub fn load_origin(&self, name: String, origin: Origin) -> Result<LoadedProfile, ProfileError> {
        if matches!(&origin, Origin::Builtin(n) if n == "default") {
            // Every run without a profile of its own lands here: skip the TOML parse.
            return Ok(LoadedProfile {
                name,
                profile: builtin_default(),
                layers: std::sync::OnceLock::new(),
                top: origin,
                rules: std::sync::OnceLock::new(),
                guard_rules: std::sync::OnceLock::new(),
                warnings: self.take_warnings(),
            });
        }
        let mut layers: Vec<(Origin, toml::Table)> = Vec::new();
        let mut current = origin;
        let mut current_name = name.clone();
        // A profile without `extends` is its own merge: keep its typed form.
        let mut only: Option<Profile> = None;
        loop {
            let text = self.read_layer(&current)?;
            let (table, prof) = parse_layer(&current, &text)?;
            let extends = prof.extends.clone();
            if layers.is_empty() && extends.is_none() {
                only = Some(prof);
            }
            layers.push((current.clone(), table));
            let Some(parent) = extends else { break };
            if layers.len() > MAX_EXTENDS_DEPTH {
                return Err(ProfileError::ExtendsLoop {
                    origin: current,
                    chain: layers
                        .iter()
                        .map(|(o, _)| o.to_string())
                        .collect::<Vec<_>>()
                        .join(" -> "),
                });
            }
            let next = self.resolve_parent(&current, &current_name, &parent)?;
            if layers.iter().any(|(o, _)| *o == next) {
                layers.push((next, toml::Table::new()));
                return Err(ProfileError::ExtendsLoop {
                    origin: current,
                    chain: layers
                        .iter()
                        .map(|(o, _)| o.to_string())
                        .collect::<Vec<_>>()
                        .join(" -> "),
                });
            }
            current_name = parent;
            current = next;
        }
        layers.reverse();
        let typed = match only {
            Some(p) => Ok(p),
            None => {
                let mut merged = toml::Table::new();
                for (_, t) in &layers {
                    merge(&mut merged, t);
                }
                merged.remove("extends");
                merged.try_into()
            }
        };
        let profile: Profile = typed.map_err(|e: toml::de::Error| ProfileError::Invalid {
            origin: layers
                .last()
                .map(|l| l.0.clone())
                .unwrap_or(Origin::Builtin(name.clone())),
            line: 1,
            col: 1,
            message: format!("after merging `extends`: {}", e.message()),
        })?;
        self.check_merged(&profile, &layers)?;
        let top = layers[layers.len() - 1].0.clone();
        Ok(LoadedProfile {
            name,
            profile,
            layers: layers.into(),
            top,
            rules: std::sync::OnceLock::new(),
            guard_rules: std::sync::OnceLock::new(),
            warnings: self.take_warnings(),
        })
    }

    /// The layer an `extends = "parent"` in `current` names: a file (which a project
    /// profile's trust record must cover) or a profile looked up by name.
    fn resolve_parent(
        &self,
        current: &Origin,
        current_name: &str,
        parent: &str,
    ) -> Result<Origin, ProfileError> {
        let next = if Self::is_path(parent) {
            let base = current.base_dir().unwrap_or(&self.invoking_dir);
            let path = crate::paths::absolute(base, Path::new(parent));
            // What a project profile loads must be covered by its trust record.
            if let Origin::File(f) = current
                && let Some(project) = crate::config::trust::project_of(f)
                && !crate::config::trust::covers(&project, &path)
            {
                let text = read_origin(current)?;
                let (line, col) = locate(&text, "", "extends");
                return Err(ProfileError::Invalid {
                    origin: current.clone(),
                    line,
                    col,
                    message: format!(
                        "extends = {parent:?}: a project profile may only extend files under {0}/.agentbash/profiles or {0}/.agentbash/rules, which `agentbash trust` covers",
                        project.display()
                    ),
                });
            }
            Origin::File(path)
        } else {
            // A built-in extends built-ins only: `-p builtin:agent` must not pick
            // up a project's or the user's `default.toml` underneath.
            let lookup_name = match &current {
                Origin::Builtin(_) if !parent.starts_with(BUILTIN_PREFIX) => {
                    format!("{BUILTIN_PREFIX}{parent}")
                }
                _ => parent.to_string(),
            };
            // A project `default.toml` may extend the built-in `default`: skip
            // candidates up to and including the layer we are in.
            let cands = self.candidates(&lookup_name);
            let skip = if parent == current_name {
                cands.iter().position(|c| c == current).map_or(0, |i| i + 1)
            } else {
                0
            };
            match cands.into_iter().nth(skip) {
                Some(o) => o,
                None => {
                    let why = match self.not_found(parent) {
                        e @ ProfileError::Untrusted { .. } => e.to_string(),
                        _ => format!("no such profile ({})", self.looked_in(parent)),
                    };
                    return Err(ProfileError::Invalid {
                        line: locate(&read_origin(current)?, "", "extends").0,
                        col: locate(&read_origin(current)?, "", "extends").1,
                        origin: current.clone(),
                        message: format!("extends = {parent:?}: {why}"),
                    });
                }
            }
        };
        Ok(next)
    }

    /// The checks of the merged profile, each error blamed on the layer that set the
    /// key: range checks, then the approval rules.
    fn check_merged(
        &self,
        profile: &Profile,
        layers: &[(Origin, toml::Table)],
    ) -> Result<(), ProfileError> {
        if let Some((sec, key, msg)) = semantic_errors(profile).into_iter().next() {
            // Blame the top-most layer that set the key.
            let origin = layers
                .iter()
                .rev()
                .find(|(_, t)| {
                    t.get(sec)
                        .and_then(|s| s.as_table())
                        .is_some_and(|s| s.contains_key(key))
                })
                .map(|l| l.0.clone())
                .unwrap_or_else(|| layers[layers.len() - 1].0.clone());
            let text = read_origin(&origin)?;
            let (line, col) = locate(&text, sec, key);
            return Err(ProfileError::Invalid {
                origin,
                line,
                col,
                message: format!("{sec}.{key}: {msg}"),
            });
        }
        if let Some((index, key, msg)) = approval_rule_errors(profile).into_iter().next() {
            // Arrays replace: the top-most layer that set `approval.rule` holds them all.
            let origin = layers
                .iter()
                .rev()
                .find(|(_, t)| {
                    t.get("approval")
                        .and_then(|s| s.as_table())
                        .is_some_and(|s| s.contains_key("rule"))
                })
                .map(|l| l.0.clone())
                .unwrap_or_else(|| layers[layers.len() - 1].0.clone());
            let text = read_origin(&origin)?;
            let (line, col) = locate_in_array(&text, "approval.rule", index, key);
            return Err(ProfileError::Invalid {
                origin,
                line,
                col,
                message: format!("approval.rule[{index}].{key}: {msg}"),
            });
        }
        Ok(())
    }
}

/// The built-in `default` profile: the schema's defaults with the
/// file's description. A test keeps `profiles/default.toml` equal to it.
fn builtin_default() -> Profile {
    Profile {
        description: DEFAULT_DESCRIPTION.to_string(),
        ..Profile::default()
    }
}

const DEFAULT_DESCRIPTION: &str =
    "Built-in defaults: print mode, 50 KiB tail retention, artifacts in the state dir";

fn read_origin(o: &Origin) -> Result<String, ProfileError> {
    match o {
        Origin::Builtin(n) => Ok(BUILTIN
            .iter()
            .find(|(b, _)| b == n)
            .map(|(_, t)| t.to_string())
            .unwrap_or_default()),
        Origin::File(p) => {
            crate::fsguard::read_text(p, crate::fsguard::CONFIG_CAP, crate::fsguard::Links::Follow)
                .map_err(|err| ProfileError::Unreadable {
                    path: p.clone(),
                    err,
                })
        }
    }
}

/// Parse one layer strictly: syntax, unknown keys and types, each with a position.
pub fn parse_layer(origin: &Origin, text: &str) -> Result<(toml::Table, Profile), ProfileError> {
    let invalid = |e: toml::de::Error| {
        let start = e.span().map(|s| entry_offset(text, s.start, e.message()));
        let (line, col) = start.map(|s| line_col(text, s)).unwrap_or((1, 1));
        ProfileError::Invalid {
            origin: origin.clone(),
            line,
            col,
            message: shorten(&with_suggestion(e.message())),
        }
    };
    let table: toml::Table = toml::from_str(text).map_err(invalid)?;
    // Typing the parsed table is cheap; only when it fails is the text parsed again,
    // for an error that points at the offending key.
    let typing = |e: toml::de::Error| {
        let reworded = type_error(&e, &table, text);
        let mut err = invalid(e);
        if let (Some(m), ProfileError::Invalid { message, .. }) = (reworded, &mut err) {
            *message = shorten(&m);
        }
        err
    };
    match toml::Value::Table(table.clone()).try_into::<Profile>() {
        Ok(prof) => Ok((table, prof)),
        Err(e) => match toml::from_str::<Profile>(text) {
            Err(spanned) => Err(typing(spanned)),
            Ok(_) => Err(typing(e)),
        },
    }
}

/// Deep merge: tables key by key, everything else replaced.
pub fn merge(base: &mut toml::Table, over: &toml::Table) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(toml::Value::Table(b)), toml::Value::Table(o)) => merge(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

/// 1-based line and column of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text.as_bytes()[..offset];
    let line = before.iter().filter(|&&b| b == b'\n').count() + 1;
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    let col = String::from_utf8_lossy(&before[line_start..])
        .chars()
        .count()
        + 1;
    (line, col)
}

/// Best-effort position of `key` inside `[section]` (or at top level when empty).
pub fn locate(text: &str, section: &str, key: &str) -> (usize, usize) {
    let mut in_section = section.is_empty();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with('[') {
            let name = t
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim();
            in_section = name == section;
            continue;
        }
        if in_section {
            let k = t.split('=').next().unwrap_or("").trim();
            if k == key || k == format!("\"{key}\"") {
                return (i + 1, line.len() - t.len() + 1);
            }
        }
        // `section.key = ...` dotted form at top level
        if !section.is_empty()
            && t.split('=').next().unwrap_or("").trim() == format!("{section}.{key}")
        {
            return (i + 1, line.len() - t.len() + 1);
        }
    }
    (1, 1)
}

/// Best-effort position of `key` in the `index`-th (0-based) `[[array]]` table, or of
/// that table's header when the key is not found in it.
pub fn locate_in_array(text: &str, array: &str, index: usize, key: &str) -> (usize, usize) {
    let mut seen = 0;
    let mut header: Option<(usize, usize)> = None;
    for (i, line) in text.lines().enumerate() {
        let t = line.trim_start();
        if t.starts_with('[') {
            if header.is_some() {
                break;
            }
            let name = t
                .trim_start_matches('[')
                .split(']')
                .next()
                .unwrap_or("")
                .trim();
            if t.starts_with("[[") && name == array {
                if seen == index {
                    header = Some((i + 1, line.len() - t.len() + 1));
                }
                seen += 1;
            }
            continue;
        }
        if header.is_some() && t.split('=').next().unwrap_or("").trim() == key {
            return (i + 1, line.len() - t.len() + 1);
        }
    }
    header.unwrap_or_else(|| locate(text, "approval", "rule"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every key of the schema (and every section) says in words what it holds.
    #[test]
    fn every_key_has_an_expected_type_in_words() {
        let text = BUILTIN
            .iter()
            .find(|(n, _)| *n == "default")
            .expect("default")
            .1;
        let table: toml::Table = toml::from_str(text).expect("default.toml");
        let mut keys = vec!["extends".to_string()];
        for (k, v) in &table {
            keys.push(k.clone());
            if let toml::Value::Table(t) = v {
                keys.extend(t.keys().map(|sub| format!("{k}.{sub}")));
            }
        }
        for k in keys {
            assert!(schema::expected_type(&k).is_some(), "no words for {k}");
        }
    }

    /// The key comes from toml's own record of it; a toml upgrade that changes how it
    /// is shown must not silently lose it.
    #[test]
    fn type_errors_name_the_key_and_the_type() {
        let origin = Origin::File("wt.toml".into());
        let msg = |text: &str| match parse_layer(&origin, text) {
            Err(e) => e.to_string(),
            Ok(_) => panic!("{text:?} parsed"),
        };
        assert_eq!(
            msg("[timeout]\ndefault = \"five\"\n"),
            "wt.toml:2:11: timeout.default: expected a whole number of seconds, found the string \"five\""
        );
        assert_eq!(
            msg("[pty]\nmode = 1\n"),
            "wt.toml:2:8: pty.mode: expected \"off\" or \"on\", found the integer 1"
        );
        assert_eq!(
            msg("[env]\nset = { A = true }\n"),
            "wt.toml:2:13: env.set.A: expected a string (the variable's value), found the boolean true"
        );
    }

    /// The built-in default is typed without parsing: it must be what its file says.
    #[test]
    fn builtin_default_is_its_file() {
        let text = BUILTIN
            .iter()
            .find(|(n, _)| *n == "default")
            .expect("default")
            .1;
        let parsed: Profile = toml::from_str(text).expect("default.toml");
        assert_eq!(parsed, builtin_default());
        let p = Lookup::new("/")
            .load_origin("default".into(), Origin::Builtin("default".into()))
            .expect("default");
        assert_eq!(p.profile, parsed);
        let table: toml::Table = toml::from_str(text).expect("table");
        assert_eq!(
            p.layers(),
            &[(Origin::Builtin("default".into()), table)][..]
        );
    }

    #[test]
    fn builtin_default_equals_schema_defaults() {
        let l = Lookup::new("/");
        let p = l
            .load_origin("default".into(), Origin::Builtin("default".into()))
            .unwrap();
        let expect = Profile {
            description: p.profile.description.clone(),
            ..Profile::default()
        };
        assert_eq!(p.profile, expect);
    }

    /// What is parsed is what was trusted: a file changed after the lookup hashed it
    /// (the status is decided once per lookup) is refused, not loaded.
    #[test]
    fn a_trusted_profile_changed_after_the_lookup_is_refused() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let project = tmp.path().canonicalize().expect("canonical").join("p");
        let file = project.join(".agentbash/profiles/x.toml");
        std::fs::create_dir_all(file.parent().expect("parent")).expect("mkdir");
        std::fs::write(&file, "description = \"trusted\"\n").expect("write");
        let store = || crate::config::trust::TrustStore::with_dir(tmp.path().join("trust"));
        store().trust(&project).expect("trust");
        let l = Lookup::with_trust(&project, store());
        assert_eq!(l.load("x").expect("trusted").profile.description, "trusted");
        let l = Lookup::with_trust(&project, store());
        assert!(l.project_status(&project).is_trusted());
        std::fs::write(&file, "description = \"swapped\"\n").expect("write");
        let e = l.load("x").unwrap_err();
        assert!(matches!(e, ProfileError::ChangedSinceTrust { .. }), "{e}");
        // A fresh lookup sees the change and falls back (no such built-in: an error
        // saying the project is untrusted).
        let e = Lookup::with_trust(&project, store()).load("x").unwrap_err();
        assert!(matches!(e, ProfileError::Untrusted { .. }), "{e}");
    }

    #[test]
    fn unknown_key_suggests() {
        let e =
            parse_layer(&Origin::File("x.toml".into()), "[timeout]\ndefualt = 3\n").unwrap_err();
        let s = e.to_string();
        assert!(s.starts_with("x.toml:2:1: unknown field `defualt`"), "{s}");
        assert!(s.contains("did you mean `default`?"), "{s}");
    }
}
