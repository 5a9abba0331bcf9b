//! `agentbash snapshot show | refresh | report` (README, Sessions and rc snapshots): the rc snapshot a profile's
//! runs source, and every decision taken while making it.

use crate::cli::SnapshotCommand;
use crate::render::{err, out};
use crate::shell::snapshot::{self, Ensured, Outcome, SnapshotPlan};

pub fn command(c: SnapshotCommand) -> i32 {
    let (profile, action) = match c {
        SnapshotCommand::Show { profile } => (profile, Action::Show),
        SnapshotCommand::Refresh { profile } => (profile, Action::Refresh),
        SnapshotCommand::Report { profile } => (profile, Action::Report),
    };
    let p = match super::load_profile(profile.as_deref()) {
        Ok(p) => p,
        Err(code) => return code,
    };
    let env = crate::shell::env::build(&p.profile.env, std::env::vars(), &[], false);
    let shell =
        crate::shell::resolve::resolve(&p.profile.shell, env.vars.get("PATH").map(String::as_str))
            .ok();
    let home = env
        .vars
        .get("HOME")
        .map(std::path::PathBuf::from)
        .or_else(crate::paths::home);
    let plan = snapshot::plan(&p.profile.shell, shell.as_deref(), home.as_deref());
    if let SnapshotPlan::Disabled(_) | SnapshotPlan::NoRc(_) = plan {
        err(&format!("no snapshot: {}\n", plan.describe()));
        return 1;
    }
    let ensured = snapshot::ensure(&plan, &env, action == Action::Refresh, &p.profile.sandbox);
    for w in &ensured.warnings {
        err(&format!("warning: {w}\n"));
    }
    match action {
        Action::Show => show(&ensured),
        Action::Refresh => {
            let code = show_summary(&ensured);
            if code == 0 {
                out("(run `agentbash snapshot report` for what was left out and why)\n");
            }
            code
        }
        Action::Report => report(&plan, &ensured),
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Action {
    Show,
    Refresh,
    Report,
}

fn show(e: &Ensured) -> i32 {
    let Some(s) = &e.snapshot else {
        err("no snapshot could be made (see the warning above)\n");
        return 1;
    };
    match crate::fsguard::read_text(
        &s.path,
        crate::fsguard::SNAPSHOT_CAP,
        crate::fsguard::Links::Refuse,
    ) {
        Ok(text) => {
            out(&format!("# {}\n{text}", s.path.display()));
            0
        }
        Err(x) => {
            crate::render::report_error(format!("cannot read {}: {x}", s.path.display()));
            crate::exit::FAILURE
        }
    }
}

fn show_summary(e: &Ensured) -> i32 {
    let Some(m) = &e.meta else {
        err("no snapshot could be made (see the warning above)\n");
        return 1;
    };
    let n = |len: usize, unit| crate::output::notice::count(len as u64, unit);
    out(&format!(
        "{}: {}, {}, {} captured; {} dropped ({} ms)\n",
        m.snapshot
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "no snapshot".into()),
        n(m.functions.len(), "function"),
        n(m.aliases.len(), "alias"),
        n(m.options.len(), "option"),
        n(m.dropped.len(), "name"),
        m.duration_ms
    ));
    if e.snapshot.is_some() { 0 } else { 1 }
}

fn report(plan: &SnapshotPlan, e: &Ensured) -> i32 {
    let Some(m) = &e.meta else {
        err("no snapshot could be made (see the warning above)\n");
        return 1;
    };
    let list = |v: Vec<&str>| {
        if v.is_empty() {
            "-".to_string()
        } else {
            v.join(" ")
        }
    };
    let mut t = String::new();
    if let SnapshotPlan::Use(src) = plan {
        t.push_str(&format!("rc         {}\n", src.rc.display()));
        t.push_str(&format!("shell      {}\n", src.shell.display()));
        t.push_str(&format!("home       {}\n", src.home.display()));
    }
    t.push_str(&format!(
        "snapshot   {}\n",
        m.snapshot
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "none".into())
    ));
    let outcome = match m.outcome {
        Outcome::Ok => "ok",
        Outcome::Partial => "partial",
        Outcome::Failed => "failed",
    };
    t.push_str(&format!(
        "outcome    {outcome} (took {} ms)\n",
        m.duration_ms
    ));
    for w in m.warnings.iter().chain(m.persistent_warning.iter()) {
        t.push_str(&format!("warning    {w}\n"));
    }
    t.push_str(&format!(
        "functions  {}\n",
        list(m.functions.keys().map(String::as_str).collect())
    ));
    t.push_str(&format!(
        "aliases    {}\n",
        list(m.aliases.keys().map(String::as_str).collect())
    ));
    t.push_str(&format!(
        "options    {}\n",
        list(m.options.iter().map(String::as_str).collect())
    ));
    if m.dropped.is_empty() {
        t.push_str("dropped    -\n");
    } else {
        t.push_str("dropped\n");
        for d in &m.dropped {
            t.push_str(&format!("  {:<8} {:<24} {}\n", d.kind, d.name, d.reason));
        }
    }
    out(&t);
    0
}
