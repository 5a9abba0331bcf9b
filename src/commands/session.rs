//! `agentbash session list | show NAME | rm NAME` (README, Sessions and rc snapshots). `show` prints names
//! only, never values: exported variables often hold secrets.

use crate::cli::SessionCommand;
use crate::display::escape_controls;
use crate::render::{err, out, report_error};
use crate::shell::session::{SessionError, SessionState, SessionStore};

pub fn command(c: SessionCommand) -> i32 {
    let store = SessionStore::new();
    let result = match c {
        SessionCommand::List => list(&store),
        SessionCommand::Show { name } => show(&store, &name),
        SessionCommand::Rm { name } => store.remove(&name).map(|()| {
            out(&format!("removed session {}\n", escape_controls(&name)));
        }),
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            report_error(&e);
            match e {
                SessionError::InvalidName(_) => crate::exit::USAGE,
                SessionError::Io { .. } => crate::exit::FAILURE,
                _ => 1,
            }
        }
    }
}

/// "3m ago" for a Unix time in seconds.
fn ago(secs: u64) -> String {
    if secs == 0 {
        return "never".into();
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(secs);
    let s = now.saturating_sub(secs);
    match s {
        0..=59 => format!("{s}s ago"),
        60..=3599 => format!("{}m ago", s / 60),
        3600..=86399 => format!("{}h ago", s / 3600),
        _ => format!("{}d ago", s / 86400),
    }
}

fn cwd_of(s: &SessionState) -> String {
    let shown = |c: &std::path::Path| escape_controls(&c.display().to_string()).into_owned();
    match &s.cwd {
        Some(c) if c.is_dir() => shown(c),
        Some(c) => format!("{} (gone)", shown(c)),
        None => "-".into(),
    }
}

fn list(store: &SessionStore) -> Result<(), SessionError> {
    let sessions = store.list()?;
    if sessions.is_empty() {
        err("no sessions (start one with `agentbash run --session NAME -- ...`)\n");
        return Ok(());
    }
    let width = sessions
        .iter()
        .map(|s| escape_controls(&s.name).chars().count())
        .max()
        .unwrap_or(4)
        .max(4);
    let mut t = format!("{:<width$}  {:<9}  CWD\n", "NAME", "LAST USED");
    for s in &sessions {
        t.push_str(&format!(
            "{:<width$}  {:<9}  {}\n",
            escape_controls(&s.name),
            ago(s.state.updated),
            cwd_of(&s.state)
        ));
    }
    out(&t);
    Ok(())
}

fn show(store: &SessionStore, name: &str) -> Result<(), SessionError> {
    let s = store.show(name)?;
    let names = |v: &mut dyn Iterator<Item = &String>| {
        let v: Vec<String> = v.map(|n| escape_controls(n).into_owned()).collect();
        if v.is_empty() {
            "-".to_string()
        } else {
            v.join(" ")
        }
    };
    let mut t = String::new();
    t.push_str(&format!("session    {}\n", escape_controls(name)));
    t.push_str(&format!(
        "dir        {}\n",
        escape_controls(&store.dir(name).display().to_string())
    ));
    t.push_str(&format!("cwd        {}\n", cwd_of(&s)));
    t.push_str(&format!(
        "last used  {} (saved {} times)\n",
        ago(s.updated),
        s.generation
    ));
    t.push_str(&format!(
        "sandbox    {}\n",
        s.sandbox.as_ref().map_or_else(
            || "- (not recorded)".into(),
            |p| escape_controls(&p.to_string()).into_owned()
        )
    ));
    t.push_str(&format!("exported   {}\n", names(&mut s.env_set.keys())));
    t.push_str(&format!("unset      {}\n", names(&mut s.env_unset.iter())));
    t.push_str(&format!("variables  {}\n", names(&mut s.variables.iter())));
    t.push_str(&format!("functions  {}\n", names(&mut s.functions.iter())));
    t.push_str(&format!("aliases    {}\n", names(&mut s.aliases.iter())));
    if !s.removed_functions.is_empty() || !s.removed_aliases.is_empty() {
        t.push_str(&format!(
            "removed    functions: {}; aliases: {}\n",
            names(&mut s.removed_functions.iter()),
            names(&mut s.removed_aliases.iter())
        ));
    }
    // What a person approved "always" (README, Approval): the prefixes, not values.
    let approvals = store.approvals(name);
    let in_force = s
        .sandbox
        .as_ref()
        .is_some_and(|p| p.fingerprint == approvals.sandbox);
    if approvals.approved.is_empty() {
        t.push_str("approved   -\n");
    }
    for (i, a) in approvals.approved.iter().enumerate() {
        let by = a
            .rule
            .as_ref()
            .map_or_else(|| "approval.default".to_string(), |r| format!("rule `{r}`"));
        t.push_str(&format!(
            "{}`{}` always ({by}; by {}, {}){}\n",
            if i == 0 { "approved   " } else { "           " },
            escape_controls(&a.prefix),
            escape_controls(&a.by),
            ago(a.at),
            if in_force {
                ""
            } else {
                " — not in force: given under another sandbox policy than the session's"
            }
        ));
    }
    t.push_str("(names only; values are not shown)\n");
    out(&t);
    Ok(())
}
