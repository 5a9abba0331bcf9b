//! `agentbash artifact list | show | path | rm | gc`: the spilled output of runs
//! (README, Artifacts). Ids are validated before any path is built from them, so `../x` or
//! `-1` can never name a file outside the artifact directory.

use crate::cli::ArtifactCommand;
use crate::display::escape_controls;
use crate::output::artifact::{self, ArtifactStore};
use crate::output::notice::format_size;
use crate::render::{err, out, report_error};
use std::io::{BufRead, Write};

fn store(profile: Option<&str>) -> Result<ArtifactStore, i32> {
    let p = super::load_profile(profile)?;
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    Ok(ArtifactStore::for_profile(&p.profile.artifacts, &cwd))
}

fn id_of(s: &str) -> Result<u64, i32> {
    artifact::parse_id(s).map_err(|e| {
        report_error(&e);
        crate::exit::USAGE
    })
}

fn existing(st: &ArtifactStore, id: u64) -> Result<std::path::PathBuf, i32> {
    let p = st.path(id);
    if p.is_file() {
        Ok(p)
    } else {
        report_error(format!(
            "no artifact {} in {}; `agentbash artifact list` shows what exists",
            artifact::url(id),
            st.dir.display()
        ));
        Err(1)
    }
}

fn age(t: std::time::SystemTime) -> String {
    let s = std::time::SystemTime::now()
        .duration_since(t)
        .unwrap_or_default()
        .as_secs();
    match s {
        0..=59 => format!("{s}s"),
        60..=3599 => format!("{}m", s / 60),
        3600..=86399 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86400),
    }
}

pub fn command(c: ArtifactCommand) -> i32 {
    match run(c) {
        Ok(code) | Err(code) => code,
    }
}

fn run(c: ArtifactCommand) -> Result<i32, i32> {
    match c {
        ArtifactCommand::List { profile } => list(profile.as_deref()),
        ArtifactCommand::Show {
            id,
            head,
            tail,
            profile,
            target,
        } => show(&id, head, tail, profile.as_deref(), target),
        ArtifactCommand::Path { id, profile } => {
            let id = id_of(&id)?;
            let st = store(profile.as_deref())?;
            let p = existing(&st, id)?;
            // The path itself, for scripts: `cat "$(agentbash artifact path 3)"`.
            out(&format!("{}\n", p.display()));
            Ok(0)
        }
        ArtifactCommand::Rm { id, profile } => {
            let id = id_of(&id)?;
            let st = store(profile.as_deref())?;
            existing(&st, id)?;
            st.remove(id).map_err(|e| {
                report_error(format!("cannot remove {}: {e}", artifact::url(id)));
                crate::exit::FAILURE
            })?;
            out(&format!("removed {}\n", artifact::url(id)));
            Ok(0)
        }
        ArtifactCommand::Gc { dry_run, profile } => {
            let st = store(profile.as_deref())?;
            let entries = st.list().unwrap_or_default();
            let plan = st.gc_plan(&entries, 0);
            let freed: u64 = plan.iter().map(|e| e.size).sum();
            for e in &plan {
                if !dry_run {
                    let _ = st.remove(e.id);
                }
                out(&format!(
                    "{} {} ({}, {} old)\n",
                    if dry_run { "would remove" } else { "removed" },
                    artifact::url(e.id),
                    format_size(e.size),
                    age(e.modified)
                ));
            }
            out(&format!(
                "{} {} artifact(s), {}; {} kept\n",
                if dry_run { "would free" } else { "freed" },
                plan.len(),
                format_size(freed),
                entries.len() - plan.len()
            ));
            Ok(0)
        }
    }
}

/// `artifact list`: newest first, with the command that wrote each.
fn list(profile: Option<&str>) -> Result<i32, i32> {
    let st = store(profile)?;
    let entries = st.list().map_err(|e| {
        report_error(format!("cannot list {}: {e}", st.dir.display()));
        crate::exit::FAILURE
    })?;
    if entries.is_empty() {
        err(&format!(
            "no artifacts in {}\n",
            escape_controls(&st.dir.display().to_string())
        ));
        return Ok(0);
    }
    let mut s = format!("{:<14} {:>9} {:>5}  COMMAND\n", "ID", "SIZE", "AGE");
    for e in entries.iter().rev() {
        let cmd = match st.read_meta(e.id) {
            Ok(m) => m.command,
            Err(x) if x.is_not_found() => String::new(),
            Err(x) => {
                err(&format!(
                    "agentbash: ignoring {}: {x}\n",
                    x.path().display()
                ));
                String::new()
            }
        };
        s.push_str(&format!(
            "{:<14} {:>9} {:>5}  {}\n",
            artifact::url(e.id),
            format_size(e.size),
            age(e.modified),
            crate::render::text::clamp_display(&escape_controls(&cmd), 80)
        ));
    }
    out(&s);
    Ok(0)
}

/// `artifact show`: the whole artifact, or its first/last lines, as bytes.
fn show(
    id: &str,
    head: Option<usize>,
    tail: Option<usize>,
    profile: Option<&str>,
    target: Option<String>,
) -> Result<i32, i32> {
    let id = id_of(id)?;
    if let Some(name) = target {
        let target = super::load_target(&name)?;
        return Ok(crate::remote::artifact::show(&target, id, head, tail));
    }
    let st = store(profile)?;
    let path = existing(&st, id)?;
    let f = crate::fsguard::open(&path, u64::MAX, crate::fsguard::Links::Refuse).map_err(|e| {
        report_error(format!("cannot read {}: {e}", path.display()));
        crate::exit::FAILURE
    })?;
    let stdout = std::io::stdout();
    let mut o = stdout.lock();
    if head.is_none() && tail.is_none() {
        let mut f = f;
        let _ = std::io::copy(&mut f, &mut o);
        return Ok(0);
    }
    let reader = std::io::BufReader::new(f);
    let mut ring = std::collections::VecDeque::new();
    for (i, line) in reader.split(b'\n').enumerate() {
        let Ok(line) = line else { break };
        if let Some(h) = head
            && i >= h
        {
            break;
        }
        ring.push_back(line);
        if let Some(t) = tail
            && head.is_none()
            && ring.len() > t
        {
            ring.pop_front();
        }
    }
    if let (Some(_), Some(t)) = (head, tail) {
        while ring.len() > t {
            ring.pop_front();
        }
    }
    for l in ring {
        let _ = o.write_all(&l);
        let _ = o.write_all(b"\n");
    }
    Ok(0)
}
