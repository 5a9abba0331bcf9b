//! The end of a run's output: which view of it is kept (head, tail, head and tail,
//! or the lines after a `--tail`), and the notice that says what was cut and where
//! the rest is. Apart from the parent module, which takes the stream in.

use super::*;

impl OutputSink {
    /// `--head N` (or a stripped `| head`): the first lines, within the byte budget.
    pub(super) fn head_view(&mut self) -> View {
        let text = std::mem::take(&mut self.head);
        let want = self.cfg.head_lines.unwrap_or(0) as u64;
        let by_bytes = self.dropped_after_head && count_lines(&text) < want;
        View {
            first: 1,
            by_bytes,
            by_lines: self.dropped_after_head && !by_bytes,
            direction: "head",
            middle: None,
            text,
        }
    }

    /// `head_bytes` with a lost middle: head, an elision marker, tail. Either end may
    /// be a fragment of a line (a huge line cut by bytes); the marker and the notice
    /// say so rather than claiming whole lines.
    pub(super) fn middle_view(&mut self, total_lines: u64) -> View {
        let head = std::mem::take(&mut self.head);
        let mut tail = std::mem::take(&mut self.tail);
        let tail_partial = !drop_partial_first_line(&mut tail);
        let head_partial = !head.ends_with('\n');
        let head_last = count_lines(&head);
        let tail_first = total_lines.saturating_sub(count_lines(&tail)) + 1;
        let whole_elided = tail_first.saturating_sub(head_last + 1);
        let mut parts = Vec::new();
        if head_partial && tail_partial && head_last == tail_first {
            parts.push(format!("middle of line {head_last}"));
        } else {
            if head_partial {
                parts.push(format!("rest of line {head_last}"));
            }
            if whole_elided > 0 || parts.is_empty() {
                parts.push(super::super::notice::count(whole_elided as u64, "line"));
            }
            if tail_partial {
                parts.push(format!("start of line {tail_first}"));
            }
        }
        // A cut line keeps the marker inline, so the text has no lines the
        // command never printed.
        let same_line = head_partial && tail_partial && head_last == tail_first;
        let mut text = head;
        text.push_str(&format!("[…{} elided…]", parts.join(", ")));
        if !same_line {
            text.push('\n');
        }
        text.push_str(&tail);
        View {
            text,
            first: 1,
            by_bytes: true,
            by_lines: false,
            direction: "middle",
            middle: Some(Middle {
                head_last,
                head_partial,
                tail_first,
                tail_partial,
            }),
        }
    }

    /// The usual case: the last `max_bytes` (after an unbroken head, if any).
    pub(super) fn tail_view(&mut self, total_lines: u64) -> View {
        let head = std::mem::take(&mut self.head);
        let mut tail = std::mem::take(&mut self.tail);
        if self.tail_trimmed {
            drop_partial_first_line(&mut tail);
        }
        // A head kept apart from a trimmed tail is not contiguous with it.
        let mut text = if self.tail_trimmed {
            String::new()
        } else {
            head
        };
        text.push_str(&tail);
        View {
            first: total_lines.saturating_sub(count_lines(&text)) + 1,
            by_bytes: self.tail_trimmed,
            by_lines: false,
            direction: "tail",
            middle: None,
            text,
        }
    }

    /// `--tail N` (or a stripped `| tail`) applied to what retention kept.
    pub(super) fn apply_tail_lines(&self, mut v: View) -> View {
        let Some(t) = self.cfg.tail_lines else {
            return v;
        };
        if v.middle.is_some() {
            // The marker is not a line of output; cut the real lines only.
            return v;
        }
        let n = count_lines(&v.text);
        if n > t as u64 {
            let keep_from = nth_line_start_from_end(&v.text, t);
            v.text.drain(..keep_from);
            v.first += n - t as u64;
            v.by_lines = true;
            v.direction = if v.direction == "head" {
                "middle"
            } else {
                "tail"
            };
        }
        v
    }

    /// A stdout-only lift's view, once stdout ended: (head?, stdout lines, shown).
    pub(super) fn stdout_view(&self) -> Option<(bool, u64, u64)> {
        let v = self.view.as_ref()?;
        let shown = if v.head {
            v.lines().min(v.limit)
        } else {
            v.shown
        };
        Some((v.head, v.lines(), shown))
    }

    /// What went wrong keeping the raw stream, and an artifact cut at its cap.
    fn spill_warnings(&mut self, artifact: Option<&ArtifactRef>) -> Vec<String> {
        let mut warnings = Vec::new();
        if let Some(e) = self.spill.error.take() {
            warnings.push(e);
        }
        if let Some(a) = artifact.filter(|_| self.spill.capped) {
            warnings.push(format!(
                "{} holds only the first {} of the {} the command printed (artifacts.max_total_bytes)",
                a.url,
                format_size(self.spill.written),
                format_size(self.raw_bytes)
            ));
        }
        warnings
    }

    pub(super) fn conclude(
        mut self,
        v: View,
        total_lines: u64,
        preview: Option<usize>,
    ) -> Retained {
        // Stdout lines a stdout-only lift kept out of the text (the artifact has them).
        let stdout_view = self.stdout_view();
        // A head that stopped the command says so, even when it stopped it before
        // the command printed a line past it.
        let view_hid =
            stdout_view.is_some_and(|(_, all, shown)| all > shown || self.stopped_reading);
        let cut = v.by_bytes || v.by_lines || self.capped_any || view_hid;
        // Counted as a terminal shows the text: without its trailing line breaks.
        let hidden = preview.is_some_and(|n| count_lines(v.text.trim_end_matches('\n')) > n as u64);
        let artifact = self.spill.finish(cut || hidden);
        let warnings = self.spill_warnings(artifact.as_ref());
        let output_lines = count_lines(&v.text);
        let last = (v.first + output_lines).saturating_sub(1);
        let (mut notice, mut truncation) = (None, None);
        let full = full_ref(artifact.as_ref().map(|a| a.url.as_str()));
        let limit = if v.by_bytes {
            format!(" ({} limit)", format_size(self.cfg.max_bytes as u64))
        } else {
            String::new()
        };
        let cols = if self.capped_any {
            format!("; lines over {} columns cut", self.cfg.max_columns)
        } else {
            String::new()
        };
        let stopped_after = |what: &str| match self.cfg.stop_after_lines {
            Some(n) if self.stopped_reading => {
                format!("; agentbash stopped the command after {what} {n}, as `| head` would")
            }
            _ => String::new(),
        };
        if cut {
            let lines = shown_lines(&v, last, total_lines);
            let stopped = stopped_after("line");
            notice = Some(format!(
                "[Showing {lines} of {total_lines}{limit}{cols}{stopped}{full}]"
            ));
            truncation = Some(Truncation {
                direction: v.direction,
                truncated_by: if v.by_lines && !v.by_bytes {
                    "lines"
                } else {
                    "bytes"
                },
                shown_range: if v.middle.is_some() {
                    [1, total_lines]
                } else {
                    [v.first, last.max(v.first.min(total_lines))]
                },
            });
        }
        // A stdout-only lift: the notice says what the view kept of stdout, and the
        // counts are the command's (or, when its head stopped it, the pipeline's).
        let mut total_lines = total_lines;
        if let Some((head, all, shown)) = stdout_view {
            let text_total = total_lines;
            if !self.stopped_reading {
                total_lines += all - shown;
            }
            if cut {
                let kept = match (head, self.stopped_reading) {
                    (true, true) => format!("the first {}", count(shown, "stdout line")),
                    (true, false) => format!("the first {shown} of {}", count(all, "stdout line")),
                    (false, _) => format!("the last {shown} of {}", count(all, "stdout line")),
                };
                let of_that = if v.by_bytes || self.capped_any {
                    format!(
                        "; of that, lines {}-{last} of {text_total}{limit}{cols}",
                        v.first
                    )
                } else {
                    String::new()
                };
                let stopped = stopped_after("stdout line");
                let stderr = if self.stderr_bytes > 0 {
                    " and all of stderr"
                } else {
                    ""
                };
                notice = Some(format!("[Showing {kept}{stderr}{of_that}{stopped}{full}]"));
                if !v.by_bytes {
                    truncation = Some(Truncation {
                        direction: if head { "head" } else { "tail" },
                        truncated_by: "lines",
                        shown_range: if head {
                            [1, shown]
                        } else {
                            [all - shown + 1, all]
                        },
                    });
                }
            }
        }
        Retained {
            output_bytes: v.text.len() as u64,
            output_lines,
            text: v.text,
            truncated: cut,
            truncation,
            notice,
            total_bytes: match self.head_full_at {
                Some((at, _)) if self.stopped_reading => at + self.stderr_bytes,
                _ => self.raw_bytes,
            },
            total_lines,
            artifact,
            warnings,
        }
    }
}

/// Which lines a cut view shows, for its notice: a range, or a head and a tail
/// with the line each part cut.
fn shown_lines(v: &View, last: u64, total_lines: u64) -> String {
    match &v.middle {
        Some(m) if m.head_partial && m.tail_partial && m.head_last == m.tail_first => {
            format!("the start and end of line {}", m.head_last)
        }
        Some(m) => {
            let cut = |partial: bool, line: u64| {
                if partial {
                    format!(" (line {line} cut)")
                } else {
                    String::new()
                }
            };
            format!(
                "lines 1-{}{} and {}-{total_lines}{}",
                m.head_last,
                cut(m.head_partial, m.head_last),
                m.tail_first,
                cut(m.tail_partial, m.tail_first)
            )
        }
        None => format!("lines {}-{last}", v.first),
    }
}
