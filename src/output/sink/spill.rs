//! The raw stream's keeper: bytes held in memory while few, then written to the
//! run's artifact, claimed only when the output first needs one, and capped.

use super::*;

impl Spill {
    pub(super) fn push(&mut self, raw: &[u8]) {
        if self.lost {
            return;
        }
        if !self.spilled {
            if self.mem.len() + raw.len() <= self.mem_cap {
                self.mem.extend_from_slice(raw);
                return;
            }
            if !self.claim() {
                self.lost = true;
                self.mem = Vec::new();
                return;
            }
            self.spilled = true;
            let mem = std::mem::take(&mut self.mem);
            self.write(&mem);
        }
        self.write(raw);
    }

    pub(super) fn write(&mut self, mut bytes: &[u8]) {
        if self.capped {
            return;
        }
        let room = self.file_cap.saturating_sub(self.written);
        if bytes.len() as u64 > room {
            bytes = &bytes[..room as usize];
            self.capped = true;
        }
        self.written += bytes.len() as u64;
        if let Some(f) = self.file.as_mut()
            && let Err(e) = f.write_all(bytes)
        {
            self.error = Some(format!(
                "writing the artifact failed: {e}; it is incomplete"
            ));
            self.file = None;
            self.lost = true;
        }
    }

    /// An artifact file to write to: the one claimed already, or one claimed from
    /// the store now. False when there is none (no store, or the claim failed, which
    /// the warning says).
    pub(super) fn claim(&mut self) -> bool {
        if self.file.is_some() {
            return true;
        }
        let Some(store) = self.store.take() else {
            return false;
        };
        match store.allocate() {
            Ok(a) => {
                self.artifact = Some(ArtifactRef {
                    id: a.id,
                    url: super::super::artifact::url(a.id),
                    path: a.path,
                });
                self.file = Some(BufWriter::with_capacity(64 * 1024, a.file));
                self.file_cap = a.max_bytes;
                self.dir = Some(a.dir);
                true
            }
            Err(e) => {
                self.error = Some(format!(
                    "artifacts unavailable ({}: {e}); the full output was not saved",
                    store.dir.display()
                ));
                false
            }
        }
    }

    /// Keep the artifact when `needed`, else delete it. Returns it when complete.
    pub(super) fn finish(&mut self, needed: bool) -> Option<ArtifactRef> {
        if needed && !self.spilled && !self.lost {
            if self.claim() {
                let mem = std::mem::take(&mut self.mem);
                self.spilled = true;
                self.write(&mem);
            } else {
                self.lost = true;
            }
        }
        let art = self.artifact.take()?;
        if let Some(mut f) = self.file.take()
            && let Err(e) = f.flush()
        {
            self.error = Some(format!(
                "writing the artifact failed: {e}; it is incomplete"
            ));
            self.lost = true;
        }
        if needed && !self.lost {
            Some(art)
        } else {
            match &self.dir {
                Some(dir) => Allocated::remove_from(dir, art.id),
                None => {
                    let _ = std::fs::remove_file(&art.path);
                }
            }
            None
        }
    }
}
