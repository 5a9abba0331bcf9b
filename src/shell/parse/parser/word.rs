//! Words, byte by byte: the context that ends a word, quotes (`'…'`, `"…"`, `$'…'`),
//! backslashes, tildes, `$` expansions, command and process substitutions and
//! backticks. `${…}` and arithmetic live in `param.rs`.

use super::*;

impl Parser<'_> {
    pub(super) fn word(&mut self, ctx: Ctx) -> R<Word> {
        let start = self.pos;
        let mut parts: Vec<Part> = Vec::new();
        let mut lit = String::new();
        let quoted_ctx = ctx.quoted();
        let mut tilde_ok = !matches!(ctx, Ctx::Index | Ctx::ParamArith);
        // Inside `[[ ]]`, parentheses are part of a word once it has begun.
        let mut paren_depth = 0usize;
        while let Some(c) = self.peek() {
            let begun = self.pos > start;
            match self.context_step(ctx, c, begun, &mut paren_depth, &mut lit, &mut parts)? {
                Step::End => break,
                Step::Taken => continue,
                Step::Plain => {}
            }
            if c == b'~'
                && tilde_ok
                && let Some(end) = self.tilde_end(ctx)
            {
                flush(&mut lit, &mut parts, false);
                parts.push(Part::Tilde(self.src[self.pos + 1..end].to_string()));
                self.pos = end;
                tilde_ok = false;
                continue;
            }
            tilde_ok = false;
            match c {
                b'\\' => match self.peek_at(1) {
                    None => {
                        lit.push('\\');
                        self.pos += 1;
                    }
                    Some(b'\n') => self.pos += 2,
                    Some(_) => {
                        flush(&mut lit, &mut parts, quoted_ctx);
                        self.pos += 1;
                        let ch = self.char_here();
                        parts.push(Part::Lit {
                            text: ch.to_string(),
                            quoted: true,
                        });
                        self.pos += ch.len_utf8();
                    }
                },
                b'\'' if !quoted_ctx => {
                    flush(&mut lit, &mut parts, quoted_ctx);
                    let open = self.pos;
                    let Some(close) = self.b[open + 1..self.limit]
                        .iter()
                        .position(|&c| c == b'\'')
                    else {
                        return Err(self.unterminated("'", open));
                    };
                    let text = self.src[open + 1..open + 1 + close].to_string();
                    parts.push(Part::Lit { text, quoted: true });
                    self.pos = open + close + 2;
                }
                b'"' => {
                    flush(&mut lit, &mut parts, quoted_ctx);
                    self.double_quoted(&mut parts)?;
                }
                b'$' => {
                    flush(&mut lit, &mut parts, quoted_ctx);
                    self.dollar(&mut parts, quoted_ctx)?;
                }
                b'`' => {
                    flush(&mut lit, &mut parts, quoted_ctx);
                    self.backtick(&mut parts, quoted_ctx)?;
                }
                _ => {
                    let ch = self.char_here();
                    lit.push(ch);
                    self.pos += ch.len_utf8();
                    if ctx == Ctx::Value && ch == ':' {
                        tilde_ok = true;
                    }
                }
            }
        }
        flush(&mut lit, &mut parts, quoted_ctx);
        Ok(Word {
            parts,
            span: start..self.pos,
        })
    }

    /// What `ctx` makes of the byte `c` at the current position: the end of the word,
    /// a piece only this context has (taken here), or a byte read as in any word.
    #[inline(never)]
    fn context_step(
        &mut self,
        ctx: Ctx,
        c: u8,
        begun: bool,
        paren_depth: &mut usize,
        lit: &mut String,
        parts: &mut Vec<Part>,
    ) -> R<Step> {
        match ctx {
            Ctx::ParamArg { .. } => {
                if c == b'}' {
                    return Ok(Step::End);
                }
            }
            Ctx::ParamPattern { .. } => {
                if c == b'}' || c == b'/' {
                    return Ok(Step::End);
                }
            }
            Ctx::ParamArith => {
                if c == b'}' || (c == b':' && *paren_depth == 0) {
                    return Ok(Step::End);
                }
                if c == b'(' {
                    *paren_depth += 1;
                } else if c == b')' {
                    *paren_depth = paren_depth.saturating_sub(1);
                }
            }
            Ctx::Index => {
                if c == b']' && *paren_depth == 0 {
                    return Ok(Step::End);
                }
                if c == b'[' {
                    *paren_depth += 1;
                } else if c == b']' {
                    *paren_depth -= 1;
                }
            }
            Ctx::Cond => {
                if matches!(c, b' ' | b'\t' | b'\n' | b';' | b'&') {
                    return Ok(Step::End);
                }
                if matches!(c, b'(' | b')' | b'|' | b'<' | b'>') {
                    if c == b'(' && begun {
                        *paren_depth += 1;
                    } else if c == b')' && *paren_depth > 0 {
                        *paren_depth -= 1;
                    } else if !begun || c == b')' {
                        return Ok(Step::End);
                    }
                    lit.push(c as char);
                    self.pos += 1;
                    return Ok(Step::Taken);
                }
            }
            Ctx::Arg | Ctx::Value => {
                if c == b'(' && !lit.is_empty() && lit.ends_with(['@', '!', '?', '*', '+']) {
                    // An extended glob: @(…), !(…), +(…), *(…), ?(…).
                    let op = lit.pop().unwrap_or('@');
                    flush(lit, parts, false);
                    let open = self.pos;
                    let end = self.balanced_parens(open)?;
                    let mut text = op.to_string();
                    text.push_str(self.src.get(open..end).unwrap_or(""));
                    parts.push(Part::ExtGlob(text));
                    self.pos = end;
                    return Ok(Step::Taken);
                }
                if (c == b'<' || c == b'>') && !begun && self.peek_at(1) == Some(b'(') {
                    let open = self.pos;
                    self.pos += 2;
                    let script = self.nested(open, if c == b'<' { "<(" } else { ">(" })?;
                    parts.push(Part::ProcSub {
                        script: Box::new(script),
                        output: c == b'>',
                    });
                    return Ok(Step::Taken);
                }
                if is_meta(c) {
                    return Ok(Step::End);
                }
            }
        }
        Ok(Step::Plain)
    }

    /// Where a tilde prefix at the current position ends, if it is one bash expands:
    /// `~`, `~name`, `~+`, `~-`, `~+N`, followed by `/` or the end of the word.
    fn tilde_end(&self, ctx: Ctx) -> Option<usize> {
        let mut i = self.pos + 1;
        while i < self.limit
            && self.b.get(i).is_some_and(|&c| {
                c.is_ascii_alphanumeric() || matches!(c, b'_' | b'-' | b'+' | b'.')
            })
        {
            i += 1;
        }
        let next = if i < self.limit {
            self.b.get(i).copied()
        } else {
            None
        };
        let ends = match next {
            None | Some(b'/') => true,
            Some(b':') => ctx == Ctx::Value,
            Some(b'}') => ctx.in_braces(),
            Some(c) => is_meta(c),
        };
        ends.then_some(i)
    }

    /// `"…"` at the current position.
    pub(super) fn double_quoted(&mut self, parts: &mut Vec<Part>) -> R<()> {
        let open = self.pos;
        self.enter()?;
        self.pos += 1;
        parts.push(Part::Lit {
            text: String::new(),
            quoted: true,
        });
        let mut lit = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.unterminated("\"", open));
            };
            match c {
                b'"' => {
                    self.pos += 1;
                    break;
                }
                b'\\' => match self.peek_at(1) {
                    Some(b'\n') => self.pos += 2,
                    Some(e @ (b'$' | b'`' | b'"' | b'\\')) => {
                        lit.push(e as char);
                        self.pos += 2;
                    }
                    _ => {
                        lit.push('\\');
                        self.pos += 1;
                    }
                },
                b'$' => {
                    flush(&mut lit, parts, true);
                    self.dollar(parts, true)?;
                }
                b'`' => {
                    flush(&mut lit, parts, true);
                    self.backtick(parts, true)?;
                }
                _ => {
                    let ch = self.char_here();
                    lit.push(ch);
                    self.pos += ch.len_utf8();
                }
            }
        }
        flush(&mut lit, parts, true);
        self.leave();
        Ok(())
    }

    /// `$…` at the current position.
    pub(super) fn dollar(&mut self, parts: &mut Vec<Part>, quoted: bool) -> R<()> {
        let at = self.pos;
        match self.peek_at(1) {
            Some(b'\'') if !quoted => {
                self.pos += 2;
                let text = self.ansi_c(at)?;
                parts.push(Part::Lit { text, quoted: true });
            }
            Some(b'"') if !quoted => {
                // `$"…"`: a translatable string, otherwise double quotes.
                self.pos += 1;
                self.double_quoted(parts)?;
            }
            Some(b'(') => {
                if self.peek_at(2) == Some(b'(') && self.arith_ahead(at + 3) {
                    self.pos += 3;
                    self.enter()?;
                    let expr = self.arith_word(at, "$((")?;
                    self.leave();
                    parts.push(Part::Arith {
                        expr: Box::new(expr),
                        quoted,
                    });
                } else {
                    self.pos += 2;
                    let script = self.nested(at, "$(")?;
                    parts.push(Part::CmdSub {
                        script: Box::new(script),
                        quoted,
                        backtick: false,
                    });
                }
            }
            Some(b'{') => {
                self.enter()?;
                let param = self.braced(quoted)?;
                self.leave();
                parts.push(Part::Param {
                    param: Box::new(param),
                    quoted,
                });
            }
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let len = self.b[at + 1..self.limit]
                    .iter()
                    .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_'))
                    .unwrap_or(self.limit - at - 1);
                let name = self.src[at + 1..at + 1 + len].to_string();
                self.pos = at + 1 + len;
                parts.push(simple_param(ParamName::Var(name), quoted));
            }
            Some(c @ b'1'..=b'9') => {
                self.pos += 2;
                parts.push(simple_param(
                    ParamName::Positional(u32::from(c - b'0')),
                    quoted,
                ));
            }
            Some(c @ (b'0' | b'@' | b'*' | b'#' | b'?' | b'-' | b'$' | b'!')) => {
                self.pos += 2;
                parts.push(simple_param(ParamName::Special(c as char), quoted));
            }
            _ => {
                self.pos += 1;
                parts.push(Part::Lit {
                    text: "$".into(),
                    quoted,
                });
            }
        }
        Ok(())
    }

    /// A script nested in place (`$(…)`, `<(…)`), up to its `)`.
    fn nested(&mut self, open: usize, opener: &'static str) -> R<Script> {
        self.enter()?;
        let body = self.list(End::Paren).map_err(|e| match e.kind {
            ErrorKind::UnexpectedEnd(_) => self.unterminated(opener, open),
            _ => e,
        })?;
        if self.peek() != Some(b')') {
            return Err(self.unterminated(opener, open));
        }
        self.pos += 1;
        self.leave();
        Ok(Script {
            src: self.arc.clone(),
            body,
        })
    }

    /// `` `…` `` at the current position: its text unescaped, then parsed on its own.
    #[inline(never)]
    pub(super) fn backtick(&mut self, parts: &mut Vec<Part>, quoted: bool) -> R<()> {
        let open = self.pos;
        self.enter()?;
        let mut text = String::new();
        self.pos += 1;
        loop {
            let Some(c) = self.peek() else {
                return Err(self.unterminated("`", open));
            };
            match c {
                b'`' => {
                    self.pos += 1;
                    break;
                }
                b'\\' => {
                    match self.peek_at(1) {
                        Some(e @ (b'$' | b'`' | b'\\')) => {
                            text.push(e as char);
                            self.pos += 2;
                        }
                        Some(b'"') if quoted => {
                            text.push('"');
                            self.pos += 2;
                        }
                        _ => {
                            text.push('\\');
                            self.pos += 1;
                        }
                    }
                    continue;
                }
                _ => {
                    let ch = self.char_here();
                    text.push(ch);
                    self.pos += ch.len_utf8();
                }
            }
        }
        let arc: Arc<str> = Arc::from(text.as_str());
        let mut inner = Parser::new(&text, arc.clone(), self.depth);
        let (body, error, _) = inner.program();
        // bash parses a backtick substitution only when it runs it: one that does not
        // parse is an error of that run, not of the line. Its text stays in `src`
        // for whoever reads it then (the walk does).
        let mut script = Script {
            src: arc,
            body: if error.is_some() { Vec::new() } else { body },
        };
        if error.is_none() {
            inner.fill(&mut script.body);
        }
        self.leave();
        parts.push(Part::CmdSub {
            script: Box::new(script),
            quoted,
            backtick: true,
        });
        Ok(())
    }

    /// `$'…'` after the opening quote, decoded.
    #[inline(never)]
    fn ansi_c(&mut self, open: usize) -> R<String> {
        let mut out = String::new();
        loop {
            let Some(c) = self.peek() else {
                return Err(self.unterminated("$'", open));
            };
            self.pos += 1;
            match c {
                b'\'' => return Ok(out),
                b'\\' => {
                    let Some(e) = self.peek() else {
                        return Err(self.unterminated("$'", open));
                    };
                    self.pos += 1;
                    match e {
                        b'n' => out.push('\n'),
                        b't' => out.push('\t'),
                        b'r' => out.push('\r'),
                        b'a' => out.push('\x07'),
                        b'b' => out.push('\x08'),
                        b'f' => out.push('\x0c'),
                        b'v' => out.push('\x0b'),
                        b'e' | b'E' => out.push('\x1b'),
                        b'\\' | b'\'' | b'"' | b'?' => out.push(e as char),
                        b'0'..=b'7' => {
                            let mut v = u32::from(e - b'0');
                            for _ in 0..2 {
                                match self.peek() {
                                    Some(d @ b'0'..=b'7') => {
                                        v = v * 8 + u32::from(d - b'0');
                                        self.pos += 1;
                                    }
                                    _ => break,
                                }
                            }
                            out.push(char::from_u32(v & 0xff).unwrap_or('\u{fffd}'));
                        }
                        b'x' | b'u' | b'U' => {
                            let max = match e {
                                b'x' => 2,
                                b'u' => 4,
                                _ => 8,
                            };
                            let mut v = 0u32;
                            let mut n = 0;
                            while n < max {
                                match self.peek().and_then(|d| (d as char).to_digit(16)) {
                                    Some(d) => {
                                        v = v.wrapping_mul(16).wrapping_add(d);
                                        self.pos += 1;
                                        n += 1;
                                    }
                                    None => break,
                                }
                            }
                            if n == 0 {
                                out.push('\\');
                                out.push(e as char);
                            } else {
                                out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                            }
                        }
                        b'c' => match self.peek() {
                            Some(x) => {
                                self.pos += 1;
                                out.push(char::from(x.to_ascii_uppercase() ^ 0x40));
                            }
                            None => return Err(self.unterminated("$'", open)),
                        },
                        _ => {
                            out.push('\\');
                            self.pos -= 1;
                            let ch = self.char_here();
                            out.push(ch);
                            self.pos += ch.len_utf8();
                        }
                    }
                }
                _ => {
                    self.pos -= 1;
                    let ch = self.char_here();
                    out.push(ch);
                    self.pos += ch.len_utf8();
                }
            }
        }
    }
}

/// What a word's context makes of its next byte.
enum Step {
    /// The word ends before it.
    End,
    /// The context took it (and maybe more); read on.
    Taken,
    /// Read it as in any word.
    Plain,
}
