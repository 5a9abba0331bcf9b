//! Heredocs: a `<<` redirection's body comes after the line that opened it, so the
//! parser queues the delimiter, reads the bodies at the next newline, and fills them
//! into the tree once the list is parsed.

use super::*;

impl Parser<'_> {
    /// Reads the bodies of the heredocs begun on the line that just ended.
    pub(super) fn read_heredocs(&mut self) -> R<()> {
        for p in std::mem::take(&mut self.pending) {
            let start = self.pos;
            let mut body_end = self.limit;
            let mut after = self.limit;
            let mut i = start;
            while i < self.limit {
                let line_end = self.b[i..self.limit]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(self.limit, |n| i + n);
                let line = self.src.get(i..line_end).unwrap_or("");
                let line = if p.strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    line
                };
                if line == p.delimiter {
                    body_end = i;
                    after = (line_end + 1).min(self.limit);
                    break;
                }
                i = line_end + 1;
            }
            let body = if p.quoted {
                let mut text = String::new();
                for line in self
                    .src
                    .get(start..body_end)
                    .unwrap_or("")
                    .split_inclusive('\n')
                {
                    text.push_str(if p.strip_tabs {
                        line.trim_start_matches('\t')
                    } else {
                        line
                    });
                }
                Word {
                    parts: vec![Part::Lit { text, quoted: true }],
                    span: start..body_end,
                }
            } else {
                let saved = self.limit;
                self.pos = start;
                self.limit = body_end;
                let body = self.heredoc_body(p.strip_tabs);
                self.limit = saved;
                body?
            };
            if let Some(slot) = self.bodies.get_mut(p.id) {
                *slot = Some(body);
            }
            self.pos = after;
        }
        Ok(())
    }

    /// Heredocs whose line never ended: their bodies are empty, as in bash.
    pub(super) fn end_heredocs(&mut self) {
        for p in std::mem::take(&mut self.pending) {
            if let Some(slot) = self.bodies.get_mut(p.id) {
                *slot = Some(Word {
                    parts: vec![Part::Lit {
                        text: String::new(),
                        quoted: true,
                    }],
                    span: self.pos..self.pos,
                });
            }
        }
    }

    /// An unquoted heredoc's body (up to `self.limit`): `$…` and backticks expand,
    /// a backslash escapes only `$`, `` ` ``, `\` and newline, quotes are literal.
    fn heredoc_body(&mut self, strip_tabs: bool) -> R<Word> {
        let start = self.pos;
        let mut parts = vec![Part::Lit {
            text: String::new(),
            quoted: true,
        }];
        let mut lit = String::new();
        let mut line_start = true;
        while let Some(c) = self.peek() {
            if line_start && strip_tabs && c == b'\t' {
                self.pos += 1;
                continue;
            }
            line_start = false;
            match c {
                b'\\' => match self.peek_at(1) {
                    Some(b'\n') => self.pos += 2,
                    Some(e @ (b'$' | b'`' | b'\\')) => {
                        lit.push(e as char);
                        self.pos += 2;
                    }
                    _ => {
                        lit.push('\\');
                        self.pos += 1;
                    }
                },
                b'$' => {
                    flush(&mut lit, &mut parts, true);
                    self.dollar(&mut parts, true)?;
                }
                b'`' => {
                    flush(&mut lit, &mut parts, true);
                    self.backtick(&mut parts, true)?;
                }
                _ => {
                    let ch = self.char_here();
                    lit.push(ch);
                    self.pos += ch.len_utf8();
                    line_start = ch == '\n';
                }
            }
        }
        flush(&mut lit, &mut parts, true);
        Ok(Word {
            parts,
            span: start..self.pos,
        })
    }

    /// Moves the heredoc bodies read at newlines into their redirections.
    pub(super) fn fill(&mut self, list: &mut List) {
        if self.bodies.is_empty() {
            return;
        }
        let mut bodies = std::mem::take(&mut self.bodies);
        fill_list(list, &mut bodies);
    }
}

/// A heredoc delimiter as bash compares it: the word with quotes removed and nothing
/// expanded.
pub(super) fn delimiter_text(src: &str, word: &Word) -> String {
    let raw = src.get(word.span.clone()).unwrap_or("");
    let mut out = String::new();
    let mut chars = raw.chars().peekable();
    let mut quote: Option<char> = None;
    while let Some(c) = chars.next() {
        match (quote, c) {
            (None, '\'' | '"') => quote = Some(c),
            (Some(q), _) if c == q => quote = None,
            (None, '\\') | (Some('"'), '\\') => {
                if let Some(n) = chars.next() {
                    out.push(n);
                }
            }
            _ => out.push(c),
        }
    }
    out
}

fn fill_list(list: &mut List, bodies: &mut [Option<Word>]) {
    for item in list {
        fill_pipeline(&mut item.and_or.first, bodies);
        for (_, p) in &mut item.and_or.rest {
            fill_pipeline(p, bodies);
        }
    }
}

fn fill_pipeline(p: &mut Pipeline, bodies: &mut [Option<Word>]) {
    for stage in &mut p.stages {
        fill_command(&mut stage.command, bodies);
    }
}

fn fill_command(c: &mut Command, bodies: &mut [Option<Word>]) {
    match c {
        Command::Simple(s) => {
            for a in &mut s.assignments {
                fill_assignment(a, bodies);
            }
            for w in &mut s.words {
                fill_word(w, bodies);
            }
            fill_redirects(&mut s.redirects, bodies);
        }
        Command::Compound(compound, redirects) => {
            match compound.as_mut() {
                Compound::Brace(l) | Compound::Subshell(l) => fill_list(l, bodies),
                Compound::If {
                    branches,
                    otherwise,
                } => {
                    for (a, b) in branches {
                        fill_list(a, bodies);
                        fill_list(b, bodies);
                    }
                    if let Some(l) = otherwise {
                        fill_list(l, bodies);
                    }
                }
                Compound::While {
                    condition, body, ..
                } => {
                    fill_list(condition, bodies);
                    fill_list(body, bodies);
                }
                Compound::For { words, body, .. } => {
                    for w in words.iter_mut().flatten() {
                        fill_word(w, bodies);
                    }
                    fill_list(body, bodies);
                }
                Compound::ArithFor { parts, body } => {
                    for w in parts {
                        fill_word(w, bodies);
                    }
                    fill_list(body, bodies);
                }
                Compound::Case { subject, arms } => {
                    fill_word(subject, bodies);
                    for arm in arms {
                        for w in &mut arm.patterns {
                            fill_word(w, bodies);
                        }
                        fill_list(&mut arm.body, bodies);
                    }
                }
                Compound::Arith(w) => fill_word(w, bodies),
                Compound::Cond(words) => {
                    for w in words {
                        fill_word(w, bodies);
                    }
                }
            }
            fill_redirects(redirects, bodies);
        }
        Command::Function(f) => fill_command(&mut f.body, bodies),
        Command::Coproc(c) => fill_command(&mut c.body, bodies),
    }
}

fn fill_assignment(a: &mut Assignment, bodies: &mut [Option<Word>]) {
    if let Some(i) = &mut a.index {
        fill_word(i, bodies);
    }
    match &mut a.value {
        Value::Scalar(w) => fill_word(w, bodies),
        Value::Array(elements) => {
            for (k, v) in elements {
                if let Some(k) = k {
                    fill_word(k, bodies);
                }
                fill_word(v, bodies);
            }
        }
    }
}

fn fill_redirects(redirects: &mut [Redirect], bodies: &mut [Option<Word>]) {
    for r in redirects {
        match &mut r.target {
            Target::Word(w) => fill_word(w, bodies),
            Target::Heredoc(h) => {
                let id = h.body.span.start;
                if h.body.parts.is_empty()
                    && h.body.span.end == id
                    && let Some(body) = bodies.get_mut(id).and_then(Option::take)
                {
                    h.body = body;
                    fill_word(&mut h.body, bodies);
                }
            }
        }
    }
}

fn fill_word(w: &mut Word, bodies: &mut [Option<Word>]) {
    for part in &mut w.parts {
        match part {
            Part::Param { param, .. } => {
                if let Some(i) = &mut param.index {
                    fill_word(i, bodies);
                }
                match &mut param.op {
                    ParamOp::Default { word, .. }
                    | ParamOp::Assign { word, .. }
                    | ParamOp::Error { word, .. }
                    | ParamOp::Alternative { word, .. } => fill_word(word, bodies),
                    ParamOp::RemovePrefix { pattern, .. }
                    | ParamOp::RemoveSuffix { pattern, .. }
                    | ParamOp::Case { pattern, .. } => fill_word(pattern, bodies),
                    ParamOp::Replace {
                        pattern,
                        replacement,
                        ..
                    } => {
                        fill_word(pattern, bodies);
                        fill_word(replacement, bodies);
                    }
                    ParamOp::Substring { offset, length } => {
                        fill_word(offset, bodies);
                        if let Some(l) = length {
                            fill_word(l, bodies);
                        }
                    }
                    ParamOp::None | ParamOp::Transform(_) | ParamOp::Unknown => {}
                }
            }
            Part::CmdSub {
                script,
                backtick: false,
                ..
            }
            | Part::ProcSub { script, .. } => fill_list(&mut script.body, bodies),
            Part::Arith { expr, .. } => fill_word(expr, bodies),
            _ => {}
        }
    }
}
