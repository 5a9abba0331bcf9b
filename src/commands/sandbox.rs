//! `agentbash sandbox check`: what the kernel sandbox can enforce here, probed for
//! real, and whether each built-in profile's `[sandbox]` mode would hold, so a user
//! learns before a run whether it will be confined. Exits 1 when one would not.

use crate::cli::SandboxCommand;
use serde::Serialize;

/// One built-in profile's sandbox on this machine.
#[derive(Debug, Serialize)]
pub struct ProfileVerdict {
    pub name: &'static str,
    /// `off`, `read-only` or `workspace-write`.
    pub mode: &'static str,
    /// The engine a run would use (`null` for `off`; `none` when nothing enforces it).
    pub engine: Option<&'static str>,
    /// The mode holds here: it is `off`, or an engine enforces it.
    pub enforced: bool,
    /// Why it is weaker than asked, or why it would not run (`required = true`).
    pub reason: Option<String>,
}

impl ProfileVerdict {
    fn line(&self) -> String {
        let verdict = match (self.enforced, self.engine) {
            (true, None) => "runs here (no confinement asked)".to_string(),
            (true, Some(engine)) => format!("enforced here: {engine}"),
            (false, _) => format!(
                "NOT enforced here: {}",
                self.reason.as_deref().unwrap_or("no engine")
            ),
        };
        format!("  {:<9} {:<16} {verdict}", self.name, self.mode)
    }
}

/// Each built-in profile's mode, judged by the engine a run of it would get here.
fn builtin_profiles() -> Vec<ProfileVerdict> {
    use crate::pipeline::sandbox::{describe, mode_name};
    // A directory of its own, so the verdict is the kernel's, not the current
    // directory's (a workspace of `/` or `$HOME` is refused for other reasons).
    let dir = tempfile::tempdir().ok();
    let cwd = dir
        .as_ref()
        .map_or_else(std::env::temp_dir, |d| d.path().to_path_buf());
    crate::config::profile::BUILTIN
        .iter()
        .map(|(name, _)| {
            let spec = format!("{}{name}", crate::config::profile::BUILTIN_PREFIX);
            let loaded = crate::Lookup::new(&cwd).load(&spec);
            let policy =
                loaded.map(|p| crate::pipeline::sandbox::plan(&p.profile.sandbox, None, &cwd));
            let (mode, described) = match &policy {
                Ok(policy) => (mode_name(policy.mode), describe(policy, &cwd)),
                Err(e) => ("?", Err(e.to_string())),
            };
            let (engine, enforced, reason) = match described {
                Ok(None) => (None, true, None),
                Ok(Some(info)) => {
                    let engine = match info.engine {
                        "namespaces" if info.landlock => "namespaces + landlock",
                        engine => engine,
                    };
                    (Some(engine), info.engine != "none", info.weaker)
                }
                Err(e) => (None, false, Some(e)),
            };
            ProfileVerdict {
                name,
                mode,
                engine,
                enforced,
                reason,
            }
        })
        .collect()
}

pub fn command(c: SandboxCommand) -> i32 {
    match c {
        SandboxCommand::Check { json } => {
            let report = crate::sandbox::check();
            let profiles = builtin_profiles();
            let code = i32::from(profiles.iter().any(|p| !p.enforced));
            if json {
                let mut v = serde_json::to_value(&report).unwrap_or_default();
                if let Some(map) = v.as_object_mut() {
                    map.insert(
                        "profiles".into(),
                        serde_json::to_value(&profiles).unwrap_or_default(),
                    );
                }
                match serde_json::to_string_pretty(&v) {
                    Ok(text) => crate::render::out(&format!("{text}\n")),
                    Err(e) => {
                        crate::render::report_error(format!("cannot encode the report: {e}"));
                        return crate::exit::FAILURE;
                    }
                }
            } else {
                let mut text = report.to_string();
                text.push_str("built-in profiles:\n");
                for p in &profiles {
                    text.push_str(&p.line());
                    text.push('\n');
                }
                crate::render::out_escaped(&text);
            }
            code
        }
    }
}
