//! `agentbash profile list | show | check`: what profiles exist, what one resolves
//! to, and whether they are valid.

use crate::cli::ProfileCommand;
use crate::config::profile::{BUILTIN, Lookup, Origin};
use crate::render::out;
use std::collections::BTreeMap;

fn lookup() -> Lookup {
    Lookup::new(std::env::current_dir().unwrap_or_else(|_| "/".into()))
}

/// Every profile name that can be found, with every place it is defined, in lookup
/// order: the first one wins, the others are shadowed.
pub fn all_profiles(l: &Lookup) -> BTreeMap<String, Vec<Origin>> {
    all_names(l)
        .into_iter()
        .map(|n| {
            let c = l.candidates(&n);
            (n, c)
        })
        .filter(|(_, c)| !c.is_empty())
        .collect()
}

/// Every profile name defined anywhere, untrusted projects included.
fn all_names(l: &Lookup) -> Vec<String> {
    let mut names: Vec<String> = BUILTIN.iter().map(|(n, _)| n.to_string()).collect();
    let mut dirs = Vec::new();
    for dir in l.invoking_dir.ancestors() {
        let d = dir.join(".agentbash/profiles");
        if d.is_dir() {
            dirs.push(d);
        }
    }
    if let Some(c) = Lookup::config_dir() {
        dirs.push(c.join("profiles"));
    }
    for d in dirs {
        for e in std::fs::read_dir(&d).into_iter().flatten().flatten() {
            if let Some(n) = e.file_name().to_str().and_then(|n| n.strip_suffix(".toml")) {
                // A name with `/` or ending in .toml would be taken for a path.
                if !n.is_empty() && !Lookup::is_path(n) {
                    names.push(n.to_string());
                }
            }
        }
    }
    names.sort_unstable();
    names.dedup();
    names
}

pub fn command(c: ProfileCommand) -> i32 {
    let l = lookup();
    match c {
        ProfileCommand::List { names } => {
            out(&list(&l, names));
            0
        }
        ProfileCommand::Show { name, origin } => {
            let spec = name
                .or_else(|| {
                    std::env::var("AGENTBASH_PROFILE")
                        .ok()
                        .filter(|s| !s.is_empty())
                })
                .unwrap_or_else(|| "default".into());
            match l.load(&spec) {
                Ok(p) => {
                    super::warn_profile(&p);
                    out(&show(&p, origin));
                    0
                }
                Err(e) => {
                    crate::render::report_error(&e);
                    crate::exit::FAILURE
                }
            }
        }
        ProfileCommand::Check { names } => {
            let (report, ok) = check(&l, &names);
            crate::render::out_escaped(&report);
            i32::from(!ok)
        }
    }
}

/// `profile list`: a table of name, origin and description; shadowed definitions
/// follow the one that wins. With `names_only`, one name per line (for completion).
pub fn list(l: &Lookup, names_only: bool) -> String {
    let all = all_profiles(l);
    if names_only {
        return all
            .keys()
            .map(|n| format!("{}\n", crate::display::escape_controls(n)))
            .collect();
    }
    let mut rows: Vec<[String; 3]> = Vec::new();
    for name in all_names(l) {
        // An untrusted project's definition would come first; it is listed, ignored.
        let untrusted = l.project_file(&name).and_then(|(file, project)| {
            (!l.project_status(&project).is_trusted()).then_some((file, project))
        });
        if let Some((file, project)) = &untrusted {
            rows.push([
                name.clone(),
                display_origin(&Origin::File(file.clone())),
                format!(
                    "UNTRUSTED, ignored (run `agentbash trust {}`)",
                    crate::display::quote(&project.display().to_string())
                ),
            ]);
        }
        let Some(origins) = all.get(&name) else {
            continue;
        };
        let shown = if untrusted.is_some() {
            String::new()
        } else {
            name.clone()
        };
        let desc = match l.load_origin(name.clone(), origins[0].clone()) {
            Ok(p) => p.profile.description,
            Err(_) => format!("INVALID (see `agentbash profile check {name}`)"),
        };
        rows.push([shown, display_origin(&origins[0]), desc]);
        for shadowed in &origins[1..] {
            rows.push([
                String::new(),
                display_origin(shadowed),
                format!("(shadowed by {})", display_origin(&origins[0])),
            ]);
        }
    }
    // Names come from file names and descriptions from files: one line each.
    for cell in rows.iter_mut().flatten() {
        if let std::borrow::Cow::Owned(e) = crate::display::escape_controls(cell) {
            *cell = e;
        }
    }
    let w0 = rows.iter().map(|r| r[0].len()).max().unwrap_or(0).max(4);
    let w1 = rows.iter().map(|r| r[1].len()).max().unwrap_or(0).max(6);
    let mut s = format!("{:<w0$}  {:<w1$}  DESCRIPTION\n", "NAME", "ORIGIN");
    for [name, origin, desc] in rows {
        s.push_str(format!("{name:<w0$}  {origin:<w1$}  {desc}").trim_end());
        s.push('\n');
    }
    s
}

/// An origin for people: `built-in:ci`, or the file with `$HOME` shown as `~`.
fn display_origin(o: &Origin) -> String {
    match (o, crate::paths::home()) {
        (Origin::File(p), Some(home)) if home.parent().is_some() => match p.strip_prefix(&home) {
            Ok(rest) => format!("~/{}", rest.display()),
            Err(_) => p.display().to_string(),
        },
        _ => o.to_string(),
    }
}

/// `profile check`: load each target strictly. With no targets, every definition of
/// every profile, shadowed ones included (each is checked as the file it is).
/// Returns the report and whether everything was valid.
pub fn check(l: &Lookup, names: &[String]) -> (String, bool) {
    // A profile is valid when it loads and so do the rule packs it names (compiled
    // here, so a skipped rule shows up as a warning), the guard's included.
    let usable = |p: &crate::LoadedProfile| -> Result<Vec<String>, String> {
        use crate::config::profile::Packs;
        let mut warnings = vec![];
        for (on, which) in [
            (p.profile.guard.enabled, Packs::Guard),
            (p.profile.interceptor.enabled, Packs::Interceptor),
        ] {
            if on {
                let set = p.rule_packs(which).compiled().map_err(|e| e.to_string())?;
                warnings.extend(set.warnings().iter().cloned());
            }
        }
        let failing = crate::pipeline::approval::failing_examples(&p.profile.approval);
        if !failing.is_empty() {
            return Err(failing.join("\n"));
        }
        Ok(warnings)
    };
    let results: Vec<(String, Result<Vec<String>, String>)> = if names.is_empty() {
        // An untrusted project's definitions are checked too (parsing runs nothing),
        // so they can be reviewed before `agentbash trust`.
        let untrusted: Vec<(String, Origin)> = all_names(l)
            .into_iter()
            .filter_map(|n| {
                let (file, project) = l.project_file(&n)?;
                (!l.project_status(&project).is_trusted()).then_some((n, Origin::File(file)))
            })
            .collect();
        let untrusted = untrusted.into_iter().map(|(name, o)| {
            let label = format!("{o} (untrusted project: not used until trusted)");
            let checked = l
                .load_origin(name, o)
                .map_err(|e| e.to_string())
                .and_then(|p| usable(&p).map_err(|e| format!("{label}: {e}")));
            (label, checked)
        });
        all_profiles(l)
            .into_iter()
            .flat_map(|(name, origins)| {
                origins.into_iter().map(move |o| {
                    let label = o.to_string();
                    let checked = l
                        .load_origin(name.clone(), o)
                        .map_err(|e| e.to_string())
                        .and_then(|p| usable(&p).map_err(|e| format!("{label}: {e}")));
                    (label, checked)
                })
            })
            .chain(untrusted)
            .collect()
    } else {
        names
            .iter()
            .map(|t| match l.load(t) {
                Ok(p) => {
                    let label = format!("{t} ({})", p.origin());
                    let checked = usable(&p).map_err(|e| format!("{label}: {e}"));
                    (label, checked)
                }
                Err(e) => (t.clone(), Err(e.to_string())),
            })
            .collect()
    };
    let mut s = String::new();
    let mut bad = 0;
    for (label, r) in &results {
        match r {
            Ok(warnings) => {
                s.push_str(&format!("ok       {label}\n"));
                for w in warnings {
                    s.push_str(&format!("         warning: {w}\n"));
                }
            }
            Err(e) => {
                bad += 1;
                let msg = e.replace('\n', "\n         ");
                s.push_str(&format!("invalid  {msg}\n"));
            }
        }
    }
    s.push_str(&format!(
        "{} checked, {} invalid\n",
        plural(results.len(), "profile"),
        bad
    ));
    (s, bad == 0)
}

fn plural(n: usize, word: &str) -> String {
    crate::output::notice::count(n as u64, word)
}

/// The resolved profile as TOML; with `origin`, each value annotated with the layer
/// that set it. The output loads back as an equivalent profile.
pub fn show(p: &crate::LoadedProfile, origin: bool) -> String {
    let chain: Vec<String> = p.layers().iter().map(|(o, _)| o.to_string()).collect();
    let mut s = format!("# profile {} from {}\n", p.name, p.origin());
    if chain.len() > 1 {
        s.push_str(&format!("# layers, lowest first: {}\n", chain.join(" < ")));
    }
    let value = toml::Table::try_from(&p.profile).unwrap_or_default();
    let text = toml::to_string(&value).unwrap_or_default();
    if !origin {
        s.push_str(&text);
        return s;
    }
    let mut section: Vec<String> = Vec::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            section = t
                .trim_matches(|c| c == '[' || c == ']')
                .split('.')
                .map(|k| k.trim().trim_matches('"').to_string())
                .collect();
            s.push_str(line);
            s.push('\n');
            continue;
        }
        let key = t.split('=').next().unwrap_or("").trim().trim_matches('"');
        if key.is_empty() || t.starts_with('#') {
            s.push_str(line);
            s.push('\n');
            continue;
        }
        let mut path: Vec<&str> = section.iter().map(String::as_str).collect();
        path.push(key);
        let o = origin_of(p, &path).map_or("schema default".to_string(), |o| o.to_string());
        s.push_str(&format!("{line}  # from {o}\n"));
    }
    s
}

/// The top-most layer that sets the value at `path` (tables walked key by key).
fn origin_of<'a>(p: &'a crate::LoadedProfile, path: &[&str]) -> Option<&'a Origin> {
    p.layers().iter().rev().find_map(|(o, t)| {
        let (last, parents) = path.split_last()?;
        let mut table = t;
        for k in parents {
            table = table.get(*k)?.as_table()?;
        }
        table.contains_key(*last).then_some(o)
    })
}
