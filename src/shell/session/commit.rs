//! Committing what a run's shell saved into the session: reading the dump it left,
//! keeping only what differs from the snapshot, and writing the next state. Apart
//! from the parent module, which loads, lists and activates sessions.

use super::*;

impl ActiveSession {
    /// Commit what the shell saved. A missing or cut-short dump leaves the state as it was.
    /// `loaded`: the snapshot names the run sourced (`None`: all of them); only those
    /// can have been removed by it.
    pub fn commit(
        &mut self,
        snapshot: Option<&Snapshot>,
        loaded: Option<&BTreeSet<String>>,
    ) -> Result<(), SessionError> {
        let d = self.read_dump()?;
        let mut next = self.state.clone();
        next.version = STATE_VERSION;
        if let Some(c) = d.cwd.as_ref().filter(|c| c.starts_with('/')) {
            next.cwd = Some(PathBuf::from(c));
        }
        self.carry_env(&d, &mut next);
        let snap = snapshot.map(|s| &s.meta);
        let mut body = String::new();
        next.variables.clear();
        for (name, decl) in &d.variables {
            if variable_carried(name) {
                body.push_str(decl);
                body.push('\n');
                next.variables.push(name.clone());
            }
        }
        body.push_str(DEFINITIONS);
        if !d.has_definitions {
            // The command could not have changed them: keep what was saved.
            let old = crate::fsguard::read_text(
                &self.state_file(),
                crate::fsguard::SESSION_STATE_CAP,
                crate::fsguard::Links::Refuse,
            )
            .unwrap_or_default();
            if let Some(i) = old.find(DEFINITIONS) {
                body.push_str(&old[i + DEFINITIONS.len()..]);
            }
            return self.write_state(next, body);
        }
        self.carry_definitions(&d, snap, loaded, &mut next, &mut body);
        self.write_state(next, body)
    }

    /// Read and parse the dump the run's shell left, removing it; a dump that was cut
    /// short (the shell did not finish saving) is not saved.
    fn read_dump(&self) -> Result<dump::Dump, SessionError> {
        // Written by our shell into a private directory; a dump past the cap is not
        // saved (the next run could not load it).
        let raw = crate::fsguard::read_file(
            &self.pending,
            crate::fsguard::SESSION_STATE_CAP,
            crate::fsguard::Links::Refuse,
        );
        let _ = std::fs::remove_file(&self.pending);
        let raw = match raw {
            Ok(r) => r,
            Err(e) if e.is_not_found() => Vec::new(),
            Err(err) => {
                return Err(SessionError::Untrusted {
                    name: self.name.clone(),
                    err,
                });
            }
        };
        // A live shell keeps the delimiter it started with: read it from the dump.
        let d = dump::parse_any(&String::from_utf8_lossy(&raw));
        if !d.complete {
            return Err(SessionError::NotSaved(self.name.clone()));
        }
        Ok(d)
    }

    /// Exported variables: apply what this run changed to the saved delta.
    fn carry_env(&self, d: &dump::Dump, next: &mut SessionState) {
        let keys: BTreeSet<&String> = self.e0.keys().chain(d.exported.keys()).collect();
        for k in keys {
            // A sandboxed run's TMPDIR is its own, made for it and removed after it.
            let run_tmpdir = k == "TMPDIR" && self.policy.as_ref().is_some_and(|p| !p.is_off());
            if ENV_NOT_CARRIED.contains(&k.as_str())
                || k.starts_with(dump::OWN_PREFIX)
                || run_tmpdir
            {
                continue;
            }
            match (self.e0.get(k), d.exported.get(k)) {
                (a, b) if a == b => {}
                (_, Some(v)) => {
                    next.env_set.insert(k.clone(), v.clone());
                    next.env_unset.remove(k);
                }
                (Some(_), None) => {
                    next.env_set.remove(k);
                    next.env_unset.insert(k.clone());
                }
                (None, None) => {}
            }
        }
    }

    /// The functions and aliases the run defined or removed, as the lines that redo
    /// that, relative to the snapshot.
    fn carry_definitions(
        &self,
        d: &dump::Dump,
        snap: Option<&std::sync::Arc<crate::shell::snapshot::Meta>>,
        loaded: Option<&BTreeSet<String>>,
        next: &mut SessionState,
        body: &mut String,
    ) {
        // Functions: defined with alias expansion off, so bodies are taken literally.
        body.push_str("__agentbash_ea=; builtin shopt -q expand_aliases && __agentbash_ea=1; builtin shopt -u expand_aliases\n");
        let was_loaded = |n: &String| loaded.is_none_or(|l| l.contains(n));
        next.removed_functions = snap
            .map(|m| {
                m.functions
                    .keys()
                    .filter(|n| {
                        if was_loaded(n) {
                            !d.functions.contains_key(*n)
                        } else {
                            self.state.removed_functions.contains(n)
                        }
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        for n in &next.removed_functions {
            body.push_str(&format!("builtin unset -f {}\n", quote(n)));
        }
        next.functions.clear();
        for (name, def) in &d.functions {
            if name.starts_with(dump::OWN_PREFIX) {
                continue;
            }
            let same = snap.and_then(|m| m.functions.get(name))
                == Some(&crate::ids::fnv64(def.as_bytes()));
            if !same {
                body.push_str(def);
                body.push('\n');
                next.functions.push(name.clone());
            }
        }
        body.push_str("[ -n \"$__agentbash_ea\" ] && builtin shopt -s expand_aliases; builtin unset __agentbash_ea\n");
        next.removed_aliases = snap
            .map(|m| {
                m.aliases
                    .keys()
                    .filter(|n| {
                        if was_loaded(n) {
                            !d.aliases.contains_key(*n)
                        } else {
                            self.state.removed_aliases.contains(n)
                        }
                    })
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        for n in &next.removed_aliases {
            body.push_str(&format!("builtin unalias {} 2>/dev/null\n", quote(n)));
        }
        next.aliases.clear();
        let mut alias_lines = String::new();
        for (name, line) in &d.aliases {
            let same =
                snap.and_then(|m| m.aliases.get(name)) == Some(&crate::ids::fnv64(line.as_bytes()));
            if !same {
                alias_lines.push_str(line);
                alias_lines.push('\n');
                next.aliases.push(name.clone());
            }
        }
        if !alias_lines.is_empty() {
            body.push_str("builtin shopt -s expand_aliases\n");
            body.push_str(&alias_lines);
        }
    }

    fn write_state(&mut self, mut next: SessionState, body: String) -> Result<(), SessionError> {
        next.generation += 1;
        if let Some(p) = &self.policy {
            next.sandbox = Some(p.clone());
        }
        next.updated = now_secs();
        if next.created == 0 {
            next.created = next.updated;
        }
        let header = serde_json::to_string(&next).unwrap_or_default();
        let text = format!("{HEADER}{header}\n{body}");
        let path = self.state_file();
        write_private(&path, text.as_bytes())
            .map_err(SessionStore::io(&self.name, "write", &path))?;
        self.cwd = next.cwd.clone();
        self.state = next;
        Ok(())
    }
}
