//! `agentbash rules list | test | check`.

use crate::cli::RulesCommand;
use crate::config::rules;
use crate::pipeline::intercept;
use crate::render::{out, out_escaped, report_error};

pub fn command(c: RulesCommand) -> i32 {
    match c {
        RulesCommand::List { profile } => {
            let p = match super::load_profile(profile.as_deref()) {
                Ok(p) => p,
                Err(code) => return code,
            };
            match p
                .rule_packs(crate::config::profile::Packs::Interceptor)
                .compiled()
            {
                Ok(set) => {
                    out_escaped(&rules::format_list(&set));
                    0
                }
                Err(e) => {
                    report_error(&e);
                    crate::exit::FAILURE
                }
            }
        }
        RulesCommand::Test {
            profile,
            tools,
            command,
        } => {
            let p = match super::load_profile(profile.as_deref()) {
                Ok(p) => p,
                Err(code) => return code,
            };
            let set = match p
                .rule_packs(crate::config::profile::Packs::Interceptor)
                .compiled()
            {
                Ok(s) => s,
                Err(e) => {
                    report_error(&e);
                    return crate::exit::FAILURE;
                }
            };
            let tools = tools.unwrap_or_else(|| p.profile.interceptor.tools.clone());
            let cmd = crate::request::command_from_words(&command);
            // The guard as a run here would see it (this directory, agentbash's env).
            let req = crate::pipeline::RunRequest::new(cmd.clone());
            let plan = crate::pipeline::plan(&req, &p);
            let (guard, approval) = (plan.guard, plan.approval);
            let i = intercept::intercept(&cmd, &set, &tools);
            let mut report = intercept::format_test(&cmd, &i, &tools);
            for (n, line) in guard.describe().iter().enumerate() {
                let label = if n == 0 { "guard:   " } else { "" };
                let line = crate::display::escape_controls(line);
                report.push_str(&format!("{label}{line}\n"));
            }
            for (n, line) in approval.describe().iter().enumerate() {
                let label = if n == 0 { "approval: " } else { "" };
                let line = crate::display::escape_controls(line);
                report.push_str(&format!("{label}{line}\n"));
            }
            // The command, its candidates and the tools are the caller's words.
            out_escaped(&report);
            let denied = approval.decision == crate::config::approval::Decision::Deny;
            if guard.refused.is_some() || guard.error.is_some() || i.blocked.is_some() || denied {
                crate::exit::BLOCKED
            } else {
                0
            }
        }
        RulesCommand::Check {
            files,
            corpus: Some(corpus),
            json,
        } => check_corpus(&files, &corpus, json),
        RulesCommand::Check { files, .. } => {
            let targets: Vec<String> = if files.is_empty() {
                rules::BUILTIN_PACKS.iter().map(|s| s.to_string()).collect()
            } else {
                files
            };
            let mut ok = true;
            for t in &targets {
                let report = intercept::check::check_pack(t);
                out_escaped(&format!("{report}\n"));
                ok &= report.ok();
            }
            i32::from(!ok)
        }
    }
}

/// `rules check --corpus FILE`: the packs' examples, then their score on the corpus.
fn check_corpus(files: &[String], corpus: &std::path::Path, json: bool) -> i32 {
    let specs: Vec<String> = if files.is_empty() {
        vec!["default".to_string()]
    } else {
        files.to_vec()
    };
    let mut ok = true;
    for t in &specs {
        let report = intercept::check::check_pack(t);
        if !json {
            out_escaped(&format!("{report}\n"));
        }
        ok &= report.ok();
    }
    let text = match crate::fsguard::read_text(
        corpus,
        crate::fsguard::CONFIG_CAP * 16,
        crate::fsguard::Links::Follow,
    ) {
        Ok(text) => text,
        Err(e) => {
            report_error(format!("cannot read corpus {}: {e}", corpus.display()));
            return crate::exit::FAILURE;
        }
    };
    let name = corpus.display().to_string();
    let parsed = match intercept::check::parse_corpus(&name, &text) {
        Ok(parsed) => parsed,
        Err(e) => {
            report_error(&e);
            return crate::exit::FAILURE;
        }
    };
    let set = match rules::RuleSet::load(&specs, None) {
        Ok(set) => set,
        Err(e) => {
            report_error(&e);
            return crate::exit::FAILURE;
        }
    };
    let report = intercept::check::score_corpus(&name, &parsed, &set);
    if json {
        match serde_json::to_string_pretty(&report) {
            Ok(text) => out(&format!("{text}\n")),
            Err(e) => {
                report_error(&e);
                return crate::exit::FAILURE;
            }
        }
    } else {
        out_escaped(&format!("{report}\n"));
    }
    ok &= report.ok();
    i32::from(!ok)
}
