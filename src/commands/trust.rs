//! `agentbash trust [DIR] | --list | --revoke [DIR]`: let a project's own profiles
//! run (see [`crate::config::trust`]). Exit 0 on success; 1 when there is nothing to act on
//! (no `.agentbash/` in DIR, a project that is not trusted); 125 when agentbash cannot
//! hash the files or write its record.

use crate::cli::TrustArgs;
use crate::config::trust::{TrustError, TrustStore, changes, find_project, fingerprint};
use crate::render::{err, out};

pub fn command(a: TrustArgs) -> i32 {
    let store = TrustStore::new();
    let cwd = std::env::current_dir().unwrap_or_else(|_| "/".into());
    let result = if a.list {
        list(&store)
    } else if a.revoke {
        revoke(&store, a.dir.as_deref(), &cwd)
    } else {
        trust(&store, a.dir.as_deref(), &cwd)
    };
    match result {
        Ok(()) => 0,
        Err(e) => {
            crate::render::report_error(&e);
            match e {
                TrustError::NoProject(_) | TrustError::NotTrusted(_) => 1,
                _ => crate::exit::FAILURE,
            }
        }
    }
}

fn trust(
    store: &TrustStore,
    dir: Option<&std::path::Path>,
    cwd: &std::path::Path,
) -> Result<(), TrustError> {
    let project = find_project(dir, cwd)?;
    let record = store.trust(&project)?;
    let mut s = format!(
        "trusted {}: {} file(s) under .agentbash/profiles and .agentbash/rules hashed (SHA-256)\n",
        project.display(),
        record.files.len()
    );
    for (file, hash) in &record.files {
        s.push_str(&format!("  {}  .agentbash/{file}\n", &hash[..16]));
    }
    s.push_str(
        "any change to these files (edit, new or removed file) makes the project untrusted again\n",
    );
    out(&s);
    Ok(())
}

fn revoke(
    store: &TrustStore,
    dir: Option<&std::path::Path>,
    cwd: &std::path::Path,
) -> Result<(), TrustError> {
    // A project whose `.agentbash/` is gone can still be revoked by its path.
    let project = match find_project(dir, cwd) {
        Ok(p) => p,
        Err(e) => {
            let d = crate::paths::absolute(cwd, dir.unwrap_or(cwd));
            match d.canonicalize() {
                Ok(c) if store.record(&c).is_some() => c,
                _ => return Err(e),
            }
        }
    };
    store.revoke(&project)?;
    out(&format!("revoked trust in {}\n", project.display()));
    Ok(())
}

fn list(store: &TrustStore) -> Result<(), TrustError> {
    let records = store.list()?;
    if records.is_empty() {
        err("no trusted projects (trust one with `agentbash trust DIR`)\n");
        return Ok(());
    }
    let w = records
        .iter()
        .map(|r| r.project.display().to_string().len())
        .max()
        .unwrap_or(0)
        .max(7);
    let mut s = format!("{:<w$}  {:<20}  STATUS\n", "PROJECT", "TRUSTED");
    for r in records {
        let status = match fingerprint(&r.project) {
            Ok(now) => match changes(&r.files, &now) {
                None => "matches".to_string(),
                Some(c) => format!("CHANGED (untrusted until trusted again): {c}"),
            },
            Err(e) => format!("UNREADABLE (untrusted): {e}"),
        };
        s.push_str(&format!(
            "{:<w$}  {:<20}  {status}\n",
            r.project.display().to_string(),
            unix_date(r.trusted_at)
        ));
    }
    out(&s);
    Ok(())
}

/// `2026-12-01 08:30 UTC` for Unix seconds (civil-from-days, no time zone database).
fn unix_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + i64::from(m <= 2);
    format!(
        "{y:04}-{m:02}-{d:02} {:02}:{:02} UTC",
        rem / 3600,
        rem % 3600 / 60
    )
}

#[cfg(test)]
mod tests {
    #[test]
    fn dates() {
        assert_eq!(super::unix_date(0), "1970-01-01 00:00 UTC");
        assert_eq!(super::unix_date(1_795_941_000), "2026-11-29 08:30 UTC");
    }
}
