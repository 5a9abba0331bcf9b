//! `agentbash profile list | show | check`.

use crate::cli::ProfileCommand;
use crate::profile::{BUILTIN, Lookup, Origin};
use crate::render::{err, out};
use std::collections::BTreeMap;

fn lookup() -> Lookup {
    Lookup::new(std::env::current_dir().unwrap_or_else(|_| "/".into()))
}

/// Every profile name that can be found, with every place it is defined (first wins).
pub fn all_profiles(l: &Lookup) -> BTreeMap<String, Vec<Origin>> {
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
                names.push(n.to_string());
            }
        }
    }
    names.sort();
    names.dedup();
    names.into_iter().map(|n| {
        let c = l.candidates(&n);
        (n, c)
    }).filter(|(_, c)| !c.is_empty()).collect()
}

pub fn command(c: ProfileCommand) -> i32 {
    let l = lookup();
    match c {
        ProfileCommand::List => {
            let mut s = String::new();
            for (name, origins) in all_profiles(&l) {
                let desc = match l.load_origin(name.clone(), origins[0].clone()) {
                    Ok(p) => p.profile.description,
                    Err(e) => format!("INVALID: {e}"),
                };
                s.push_str(&format!("{name:<12} {:<40} {desc}\n", origins[0].to_string()));
                for shadowed in &origins[1..] {
                    s.push_str(&format!("{:<12} {:<40} (shadowed)\n", "", shadowed.to_string()));
                }
            }
            out(&s);
            0
        }
        ProfileCommand::Show { name, origin } => {
            let spec = name
                .or_else(|| std::env::var("AGENTBASH_PROFILE").ok())
                .unwrap_or_else(|| "default".into());
            let p = match l.load(&spec) {
                Ok(p) => p,
                Err(e) => {
                    err(&format!("agentbash: {e}\n"));
                    return crate::exit::FAILURE;
                }
            };
            out(&show(&p, origin));
            0
        }
        ProfileCommand::Check { names } => {
            let targets: Vec<String> = if names.is_empty() {
                all_profiles(&l)
                    .into_iter()
                    .flat_map(|(n, o)| o.into_iter().map(move |o| match o {
                        Origin::File(p) => p.display().to_string(),
                        Origin::Builtin(_) => n.clone(),
                    }))
                    .collect()
            } else {
                names
            };
            let mut bad = 0;
            for t in &targets {
                match l.load(t) {
                    Ok(p) => out(&format!("ok      {t} ({})\n", p.origin())),
                    Err(e) => {
                        bad += 1;
                        out(&format!("invalid {e}\n"));
                    }
                }
            }
            i32::from(bad > 0)
        }
    }
}

/// The resolved profile as TOML; with `origin`, each key annotated with its layer.
pub fn show(p: &crate::LoadedProfile, origin: bool) -> String {
    let mut s = format!("# profile {} from {}\n", p.name, p.origin());
    let value = toml::Table::try_from(&p.profile).unwrap_or_default();
    let text = toml::to_string(&value).unwrap_or_default();
    if !origin {
        s.push_str(&text);
        return s;
    }
    let mut section = String::new();
    for line in text.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            section = t.trim_matches(|c| c == '[' || c == ']').to_string();
            s.push_str(line);
            s.push('\n');
            continue;
        }
        let key = t.split('=').next().unwrap_or("").trim();
        if key.is_empty() {
            s.push_str(line);
            s.push('\n');
            continue;
        }
        let o = p
            .origin_of(&section, key)
            .map_or("schema default".to_string(), |o| o.to_string());
        s.push_str(&format!("{line}  # from {o}\n"));
    }
    s
}
