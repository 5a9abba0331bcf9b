//! `agentbash explain`: every decision of a run, nothing run.

use crate::cli::FormatArg;
use crate::config::profile::LoadedProfile;
use crate::display::escape_controls;
use crate::pipeline::{RunRequest, plan};
use crate::render::out;
use serde_json::json;

/// Build the explanation as JSON (the text form is rendered from it).
pub fn explanation(req: &RunRequest, profile: &LoadedProfile) -> serde_json::Value {
    let plan = plan(req, profile);
    let mut v = explanation_of(&plan, profile);
    // Everything shown, the argv and the interception trace included.
    plan.secrets.mask_json(&mut v);
    v
}

fn explanation_of(plan: &crate::pipeline::Plan, profile: &LoadedProfile) -> serde_json::Value {
    let interception = plan.interception.as_ref().map(|i| {
        json!({
            "candidates": i.candidates,
            "opaque": i.opaque,
            "blocked": i.blocked,
            "warnings": i.warnings,
        })
    });
    let env_changes: serde_json::Map<String, serde_json::Value> = plan
        .env
        .changes
        .iter()
        .map(|(k, src)| (k.clone(), json!(src)))
        .collect();
    json!({
        "command": plan.shown_command,
        "profile": {
            "name": profile.name,
            "origin": profile.origin().to_string(),
            "warnings": profile.warnings,
        },
        "normalize": {
            "command": plan.shown_normalized,
            "stripped": plan.normalized.stripped,
            "head": plan.normalized.head,
            "tail": plan.normalized.tail,
            "stop_after": plan.normalized.stop_after,
            "lift": plan.normalized.lift,
        },
        "guard": plan.guard,
        "intercept": {
            "enabled": plan.interception.is_some(),
            "tools": plan.tools,
            "result": interception,
            "warnings": plan.rule_warnings,
            "error": plan.rules_error,
        },
        "cwd": match &plan.cwd { Ok(c) => json!({"ok": c.display().to_string()}), Err(e) => json!({"error": e.to_string()}) },
        "timeout": {
            "requested_s": plan.timeout.requested,
            "effective_s": plan.timeout.effective,
            "notice": plan.timeout.notice,
        },
        "mode": { "mode": plan.mode.mode, "reasons": plan.mode.reasons, "notice": plan.mode.notice },
        "env_changes": env_changes,
        "redact": plan.secrets.names(),
        "shell": match &plan.shell { Ok(s) => json!({"ok": s.display().to_string()}), Err(e) => json!({"error": e.to_string()}) },
        "snapshot": plan.state.snapshot.describe(),
        "session": plan.state.session.as_ref().map(|s| json!({
            "name": s.name,
            "dir": s.dir.display().to_string(),
            "cwd": s.cwd.as_ref().map(|c| c.display().to_string()),
        })),
        "sandbox": sandbox_of(plan),
        "argv": plan.argv(profile),
        "artifact_dir": plan.artifact_dir.as_ref().map(|d| d.display().to_string()),
        "usage_error": plan.usage_error,
    })
}

/// The policy as asked and the engine this machine would enforce it with.
fn sandbox_of(plan: &crate::pipeline::Plan) -> serde_json::Value {
    use crate::pipeline::sandbox::{describe, mode_name};
    let policy = &plan.sandbox;
    let shown = |paths: &[std::path::PathBuf]| -> Vec<String> {
        paths.iter().map(|p| p.display().to_string()).collect()
    };
    let described = plan.cwd.as_ref().ok().map(|cwd| describe(policy, cwd));
    let (info, error) = match described {
        Some(Ok(info)) => (info, None),
        Some(Err(e)) => (None, Some(e)),
        None => (None, None),
    };
    let workspace = match (&info, policy.mode) {
        (Some(i), _) => i.workspace.clone(),
        (None, crate::sandbox::Mode::WorkspaceWrite) => policy
            .workspace
            .as_ref()
            .map(|w| w.display().to_string())
            .or_else(|| plan.shown_cwd.clone()),
        _ => None,
    };
    json!({
        "mode": mode_name(policy.mode),
        "engine_asked": policy.engine,
        "engine": info.as_ref().map(|i| i.engine),
        "landlock": info.as_ref().map(|i| i.landlock),
        "workspace": workspace,
        "writable": shown(&policy.writable),
        "deny_read": shown(&policy.deny_read),
        "network": policy.network,
        "required": policy.required,
        "allow_override": policy.allow_override,
        "weaker": info.as_ref().and_then(|i| i.weaker.clone()),
        "notes": info.as_ref().map(|i| i.notes.clone()).unwrap_or_default(),
        "error": error,
    })
}

pub fn explain(req: &RunRequest, profile: &LoadedProfile, format: FormatArg) -> i32 {
    let plan = plan(req, profile);
    let mut v = explanation_of(&plan, profile);
    plan.secrets.mask_json(&mut v);
    // A rule pack that cannot be loaded would stop the run: so it fails here too.
    let code = match v.pointer("/intercept/error") {
        Some(e) if !e.is_null() => crate::exit::FAILURE,
        _ if plan.guard.error.is_some() => crate::exit::FAILURE,
        _ if v.pointer("/sandbox/error").is_some_and(|e| !e.is_null()) => crate::exit::FAILURE,
        _ => 0,
    };
    if format != FormatArg::Text {
        out(&format!("{v}\n"));
        return code;
    }
    let s = |p: &str| v.pointer(p).cloned().unwrap_or(serde_json::Value::Null);
    // Each value is shown on one line, its controls escaped.
    let show = |x: serde_json::Value| match x {
        serde_json::Value::String(s) => escape_controls(&s).into_owned(),
        serde_json::Value::Null => "-".into(),
        other => other.to_string(),
    };
    let mut t = String::new();
    t.push_str(&format!("command     {}\n", show(s("/command"))));
    t.push_str(&format!(
        "profile     {} ({})\n",
        show(s("/profile/name")),
        show(s("/profile/origin"))
    ));
    for w in &profile.warnings {
        t.push_str(&format!("  warning   {w}\n"));
    }
    t.push_str(&format!(
        "normalize   {}  (stripped: {}, head: {}, tail: {})\n",
        show(s("/normalize/command")),
        show(s("/normalize/stripped")),
        show(s("/normalize/head")),
        show(s("/normalize/tail"))
    ));
    if let Some(lift) = &plan.normalized.lift {
        t.push_str(&format!("lift        {lift}\n"));
    }
    for (n, line) in plan.guard.describe().iter().enumerate() {
        let label = if n == 0 { "guard:   " } else { "" };
        let line = escape_controls(&plan.secrets.mask(line)).into_owned();
        t.push_str(&format!("{label}{line}\n"));
    }
    if v.pointer("/intercept/enabled") == Some(&json!(true)) {
        t.push_str(&format!(
            "intercept   tools: {}\n",
            show(s("/intercept/tools"))
        ));
        if let Some(cands) = v
            .pointer("/intercept/result/candidates")
            .and_then(|c| c.as_array())
        {
            for c in cands {
                let verdict = show(c["verdict"].clone());
                let why = match (&c["matched"], &c["skipped"]) {
                    (serde_json::Value::String(r), _) => format!(" (rule {r})"),
                    (_, serde_json::Value::String(s)) => format!(" ({})", s.replace('_', " ")),
                    _ => String::new(),
                };
                t.push_str(&format!(
                    "  [{}] {} → {verdict}{why}\n",
                    show(c["kind"].clone()),
                    show(c["text"].clone())
                ));
                for m in c["matches"].as_array().into_iter().flatten() {
                    if m["applies"] == json!(false) {
                        t.push_str(&format!(
                            "      rule {} matches but tool `{}` is not among the caller's tools\n",
                            show(m["rule"].clone()),
                            show(m["tool"].clone())
                        ));
                    }
                }
            }
            if let Some(o) = v
                .pointer("/intercept/result/opaque")
                .and_then(|o| o.as_str())
            {
                t.push_str(&format!(
                    "  (checked as a whole only: {})\n",
                    escape_controls(&o.replace('_', " "))
                ));
            }
        }
        match v.pointer("/intercept/result/blocked") {
            Some(b) if !b.is_null() => t.push_str(&format!(
                "  verdict   BLOCK by rule {} (tool {})\n",
                show(b["rule"].clone()),
                show(b["tool"].clone())
            )),
            _ => t.push_str("  verdict   run\n"),
        }
    } else {
        t.push_str("intercept   disabled\n");
    }
    for w in v
        .pointer("/intercept/warnings")
        .and_then(|w| w.as_array())
        .into_iter()
        .flatten()
    {
        t.push_str(&format!("  warning   {}\n", show(w.clone())));
    }
    t.push_str(&format!(
        "cwd         {}\n",
        show(
            v.pointer("/cwd/ok")
                .or(v.pointer("/cwd/error"))
                .cloned()
                .unwrap_or_default()
        )
    ));
    t.push_str(&format!(
        "timeout     {}s (requested {}s){}\n",
        show(s("/timeout/effective_s")),
        show(s("/timeout/requested_s")),
        v.pointer("/timeout/notice")
            .and_then(|n| n.as_str())
            .map(|n| format!(" — {n}"))
            .unwrap_or_default()
    ));
    t.push_str(&format!("mode        {}\n", show(s("/mode/mode"))));
    for r in v
        .pointer("/mode/reasons")
        .and_then(|r| r.as_array())
        .into_iter()
        .flatten()
    {
        t.push_str(&format!("  because   {}\n", show(r.clone())));
    }
    t.push_str("env         (keys only; values are not shown)\n");
    if let Some(m) = v.pointer("/env_changes").and_then(|m| m.as_object()) {
        for (k, src) in m {
            let k = escape_controls(k);
            t.push_str(&format!("  {k:<32} {}\n", show(src.clone())));
        }
    }
    let redact = v
        .pointer("/redact")
        .and_then(|r| r.as_array())
        .map(|r| {
            r.iter()
                .map(|n| show(n.clone()))
                .collect::<Vec<_>>()
                .join(" ")
        })
        .unwrap_or_default();
    if !redact.is_empty() {
        t.push_str(&format!("redact      {redact} (values masked)\n"));
    }
    t.push_str(&format!(
        "shell       {}\n",
        show(
            v.pointer("/shell/ok")
                .or(v.pointer("/shell/error"))
                .cloned()
                .unwrap_or_default()
        )
    ));
    t.push_str(&format!("snapshot    {}\n", show(s("/snapshot"))));
    match v.pointer("/session") {
        Some(sess) if !sess.is_null() => t.push_str(&format!(
            "session     {} ({}), {}\n",
            show(sess["name"].clone()),
            show(sess["dir"].clone()),
            match sess["cwd"].as_str() {
                Some(c) => format!("saved cwd {}", escape_controls(c)),
                None => "new: created by this run".into(),
            }
        )),
        _ => t.push_str("session     none\n"),
    }
    let list = |p: &str| {
        let items: Vec<String> = v
            .pointer(p)
            .and_then(|a| a.as_array())
            .into_iter()
            .flatten()
            .map(|x| show(x.clone()))
            .collect();
        if items.is_empty() {
            "-".to_string()
        } else {
            items.join(" ")
        }
    };
    if v.pointer("/sandbox/mode") == Some(&json!("off")) {
        t.push_str("sandbox     off\n");
    } else {
        let engine = match (s("/sandbox/engine"), s("/sandbox/landlock")) {
            (serde_json::Value::String(e), serde_json::Value::Bool(true)) if e == "namespaces" => {
                "namespaces + landlock".to_string()
            }
            (e, _) => show(e),
        };
        t.push_str(&format!(
            "sandbox     {}, engine {engine} (asked: {}), network {}{}\n",
            show(s("/sandbox/mode")),
            show(s("/sandbox/engine_asked")),
            if s("/sandbox/network") == json!(true) {
                "on"
            } else {
                "off"
            },
            if s("/sandbox/required") == json!(true) {
                ", required"
            } else {
                ""
            },
        ));
        t.push_str(&format!("  workspace {}\n", show(s("/sandbox/workspace"))));
        t.push_str(&format!(
            "  writable  {} (and a private TMPDIR)\n",
            list("/sandbox/writable")
        ));
        t.push_str(&format!("  deny_read {}\n", list("/sandbox/deny_read")));
        for key in ["/sandbox/weaker", "/sandbox/error"] {
            if let Some(w) = v.pointer(key).and_then(|w| w.as_str()) {
                t.push_str(&format!("  warning   {}\n", escape_controls(w)));
            }
        }
        for n in v
            .pointer("/sandbox/notes")
            .and_then(|n| n.as_array())
            .into_iter()
            .flatten()
        {
            t.push_str(&format!("  note      {}\n", show(n.clone())));
        }
    }
    t.push_str(&format!("argv        {}\n", s("/argv")));
    t.push_str(&format!("artifacts   {}\n", show(s("/artifact_dir"))));
    if let Some(u) = v.pointer("/usage_error").and_then(|u| u.as_str()) {
        t.push_str(&format!("error       {}\n", escape_controls(u)));
    }
    let rules_error = v.pointer("/intercept/error").and_then(|e| e.as_str());
    if let Some(e) = rules_error {
        t.push_str(&format!("error       {e}\n"));
    }
    out(&t);
    code
}
