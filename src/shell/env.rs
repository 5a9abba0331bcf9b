//! The one place the command's environment is built.
//!
//! Layering, lowest first: inherited env (after `inherit`/`exclude`) < hardening <
//! `env.set` < `--env`. Hardening exists because an agent or CI job has nobody to
//! answer a pager, an editor or a credential prompt: every such wait is a hang.

use crate::config::profile::{EnvCfg, Inherit, InheritKeyword};
use std::collections::BTreeMap;

/// Pager variables all set to `cat`.
const PAGERS: &[&str] = &[
    "PAGER",
    "GIT_PAGER",
    "MANPAGER",
    "SYSTEMD_PAGER",
    "BAT_PAGER",
    "DELTA_PAGER",
    "GH_PAGER",
    "GLAB_PAGER",
    "PSQL_PAGER",
    "MYSQL_PAGER",
    "HOMEBREW_PAGER",
];

const FIXED: &[(&str, &str)] = &[
    ("AWS_PAGER", ""),
    ("LESS", "FRX"),
    ("PYTHONUNBUFFERED", "1"),
    ("GIT_EDITOR", "true"),
    ("VISUAL", "true"),
    ("EDITOR", "true"),
    ("GIT_TERMINAL_PROMPT", "0"),
    ("AGENT", "1"),
    ("npm_config_yes", "true"),
    ("npm_config_update_notifier", "false"),
    ("npm_config_fund", "false"),
    ("npm_config_audit", "false"),
    ("npm_config_progress", "false"),
    ("PNPM_DISABLE_SELF_UPDATE_CHECK", "true"),
    ("PNPM_UPDATE_NOTIFIER", "false"),
    ("YARN_ENABLE_TELEMETRY", "0"),
    ("YARN_ENABLE_PROGRESS_BARS", "0"),
    ("CARGO_TERM_PROGRESS_WHEN", "never"),
    ("DEBIAN_FRONTEND", "noninteractive"),
    ("PIP_NO_INPUT", "1"),
    ("PIP_DISABLE_PIP_VERSION_CHECK", "1"),
    ("TF_INPUT", "0"),
    ("TF_IN_AUTOMATION", "1"),
    ("GH_PROMPT_DISABLED", "1"),
    ("COMPOSER_NO_INTERACTION", "1"),
    ("CLOUDSDK_CORE_DISABLE_PROMPTS", "1"),
];

/// Every variable hardening may set (pagers, editors, prompts, `CI`, `AGENT`, …), for
/// callers that must not inherit them, such as a test suite run by agentbash itself.
pub fn hardened_names() -> impl Iterator<Item = &'static str> {
    PAGERS
        .iter()
        .copied()
        .chain(FIXED.iter().map(|(k, _)| *k))
        .chain(["NO_COLOR", "CI", "SSH_ASKPASS", RUN_MARKER])
}

pub use crate::process::RUN_MARKER;

/// Where a variable's final value came from (for `explain`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvSource {
    Hardening,
    Profile,
    Flag,
    Removed,
}

#[derive(Debug, Clone, Default)]
pub struct BuiltEnv {
    pub vars: BTreeMap<String, String>,
    /// Keys changed relative to the inherited env, and by which layer.
    pub changes: BTreeMap<String, EnvSource>,
}

/// Shell-style glob (`*`, `?`) on variable names.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    fn go(p: &[u8], n: &[u8]) -> bool {
        match (p.first(), n.first()) {
            (None, None) => true,
            (Some(b'*'), _) => go(&p[1..], n) || (!n.is_empty() && go(p, &n[1..])),
            (Some(b'?'), Some(_)) => go(&p[1..], &n[1..]),
            (Some(a), Some(b)) if a == b => go(&p[1..], &n[1..]),
            _ => false,
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

fn false_path() -> String {
    for p in ["/usr/bin/false", "/bin/false"] {
        if std::path::Path::new(p).exists() {
            return p.to_string();
        }
    }
    "false".to_string()
}

/// Build the environment a command runs with.
pub fn build(
    cfg: &EnvCfg,
    inherited: impl IntoIterator<Item = (String, String)>,
    extra: &[(String, String)],
    pty: bool,
) -> BuiltEnv {
    let mut vars: BTreeMap<String, String> = inherited
        .into_iter()
        .filter(|(k, _)| match &cfg.inherit {
            Inherit::Keyword(InheritKeyword::All) => true,
            Inherit::Keyword(InheritKeyword::None) => false,
            Inherit::List(globs) => globs.iter().any(|g| glob_match(g, k)),
        })
        .filter(|(k, _)| !cfg.exclude.iter().any(|g| glob_match(g, k)))
        .collect();
    let mut changes = BTreeMap::new();
    let mut removed_ci = false;
    let mut set = |vars: &mut BTreeMap<String, String>, k: &str, v: &str, src| {
        if vars.get(k).map(String::as_str) != Some(v) {
            changes.insert(k.to_string(), src);
        }
        vars.insert(k.to_string(), v.to_string());
    };
    if cfg.harden {
        for p in PAGERS {
            set(&mut vars, p, "cat", EnvSource::Hardening);
        }
        for (k, v) in FIXED {
            set(&mut vars, k, v, EnvSource::Hardening);
        }
        set(
            &mut vars,
            "SSH_ASKPASS",
            &false_path(),
            EnvSource::Hardening,
        );
        if pty {
            set(&mut vars, "TERM", "xterm-256color", EnvSource::Hardening);
        } else {
            set(&mut vars, "TERM", "dumb", EnvSource::Hardening);
            set(&mut vars, "NO_COLOR", "1", EnvSource::Hardening);
        }
        if std::env::var("AGENTBASH_NO_CI").as_deref() == Ok("1") {
            if vars.remove("CI").is_some() {
                removed_ci = true;
            }
        } else {
            set(&mut vars, "CI", "true", EnvSource::Hardening);
        }
    } else if pty {
        set(&mut vars, "TERM", "xterm-256color", EnvSource::Hardening);
    }
    for (k, v) in &cfg.set {
        set(&mut vars, k, v, EnvSource::Profile);
    }
    for (k, v) in extra {
        set(&mut vars, k, v, EnvSource::Flag);
    }
    if removed_ci {
        changes.insert("CI".into(), EnvSource::Removed);
    }
    BuiltEnv { vars, changes }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn globs() {
        for (p, n, want) in [
            ("*TOKEN*", "GH_TOKEN", true),
            ("*TOKEN*", "TOKENS", true),
            ("LANG*", "LANG", true),
            ("LANG*", "LC_ALL", false),
            ("*_KEY", "AWS_KEY", true),
            ("*_KEY", "KEYS", false),
            ("P?TH", "PATH", true),
        ] {
            assert_eq!(glob_match(p, n), want, "{p} {n}");
        }
    }

    #[test]
    fn layering() {
        let mut cfg = EnvCfg::default();
        cfg.set.insert("PAGER".into(), "less".into());
        let inherited = vec![
            ("PAGER".to_string(), "most".to_string()),
            ("X".into(), "1".into()),
        ];
        let e = build(
            &cfg,
            inherited.clone(),
            &[("PAGER".into(), "more".into())],
            false,
        );
        assert_eq!(e.vars["PAGER"], "more");
        assert_eq!(e.vars["GIT_PAGER"], "cat");
        assert_eq!(e.vars["TERM"], "dumb");
        let e = build(&cfg, inherited, &[], true);
        assert_eq!(e.vars["PAGER"], "less");
        assert_eq!(e.vars["TERM"], "xterm-256color");
        assert!(!e.vars.contains_key("NO_COLOR"));
    }
}
