//! Parameter expansions `${…}` with their operators, and arithmetic `$((…))`: the
//! parts of a word with their own small grammars inside balanced delimiters.

use super::*;

impl Parser<'_> {
    /// `${…}` at the current position (on the `$`).
    #[inline(never)]
    pub(super) fn braced(&mut self, quoted: bool) -> R<Param> {
        let open = self.pos;
        self.pos += 2;
        let mut param = Param {
            name: ParamName::Var(String::new()),
            index: None,
            length: false,
            indirect: false,
            op: ParamOp::None,
        };
        if !self.param_name(open, &mut param)? {
            param.op = ParamOp::Unknown;
            return Ok(param);
        }
        if self.peek() == Some(b'[') && matches!(param.name, ParamName::Var(_)) {
            self.pos += 1;
            let index = self.word(Ctx::Index)?;
            if self.peek() != Some(b']') {
                return Err(self.unterminated("${", open));
            }
            self.pos += 1;
            param.index = Some(index);
        }
        let Some(op) = self.param_op(open, quoted)? else {
            param.op = ParamOp::Unknown;
            return Ok(param);
        };
        param.op = op;
        if self.peek() != Some(b'}') {
            return Err(self.unterminated("${", open));
        }
        self.pos += 1;
        Ok(param)
    }

    /// The `#` or `!` prefix and the name of the `${…}` opened at `open`; false (and
    /// skipped to its `}`) when bash would not know the name.
    #[inline(never)]
    fn param_name(&mut self, open: usize, param: &mut Param) -> R<bool> {
        let name_start = |c: Option<u8>| {
            c.is_some_and(|c| {
                c.is_ascii_alphanumeric()
                    || matches!(c, b'_' | b'@' | b'*' | b'#' | b'?' | b'$' | b'!' | b'-')
            })
        };
        if self.peek() == Some(b'#') && name_start(self.peek_at(1)) && self.peek_at(1) != Some(b'}')
        {
            param.length = true;
            self.pos += 1;
        } else if self.peek() == Some(b'!') && name_start(self.peek_at(1)) {
            param.indirect = true;
            self.pos += 1;
        }
        match self.peek() {
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let len = self.b[self.pos..self.limit]
                    .iter()
                    .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_'))
                    .unwrap_or(self.limit - self.pos);
                param.name = ParamName::Var(self.src[self.pos..self.pos + len].to_string());
                self.pos += len;
            }
            Some(c) if c.is_ascii_digit() => {
                let len = self.b[self.pos..self.limit]
                    .iter()
                    .position(|c| !c.is_ascii_digit())
                    .unwrap_or(self.limit - self.pos);
                let n = self.src[self.pos..self.pos + len]
                    .parse::<u32>()
                    .unwrap_or(u32::MAX);
                param.name = if n == 0 {
                    ParamName::Special('0')
                } else {
                    ParamName::Positional(n)
                };
                self.pos += len;
            }
            Some(c @ (b'@' | b'*' | b'#' | b'?' | b'-' | b'$' | b'!')) => {
                param.name = ParamName::Special(c as char);
                self.pos += 1;
            }
            _ => {
                self.skip_braced(open)?;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// The operator after the name of the `${…}` opened at `open` and its words; `None`
    /// (and skipped to its `}`) for one this parser does not know.
    #[inline(never)]
    fn param_op(&mut self, open: usize, quoted: bool) -> R<Option<ParamOp>> {
        let arg = |p: &mut Self| p.word(Ctx::ParamArg { quoted });
        let Some(c) = self.peek() else {
            return Err(self.unterminated("${", open));
        };
        let colon = c == b':';
        let op_char = if colon { self.peek_at(1) } else { Some(c) };
        let op = match (colon, op_char) {
            (false, Some(b'}')) => ParamOp::None,
            (_, Some(o @ (b'-' | b'=' | b'?' | b'+'))) => {
                self.pos += 1 + usize::from(colon);
                let word = arg(self)?;
                match o {
                    b'-' => ParamOp::Default { colon, word },
                    b'=' => ParamOp::Assign { colon, word },
                    b'?' => ParamOp::Error { colon, word },
                    _ => ParamOp::Alternative { colon, word },
                }
            }
            (true, _) => {
                self.pos += 1;
                let offset = self.word(Ctx::ParamArith)?;
                let length = if self.peek() == Some(b':') {
                    self.pos += 1;
                    Some(self.word(Ctx::ParamArith)?)
                } else {
                    None
                };
                ParamOp::Substring { offset, length }
            }
            (false, Some(o @ (b'#' | b'%'))) => {
                self.pos += 1;
                let longest = self.peek() == Some(o);
                if longest {
                    self.pos += 1;
                }
                let pattern = arg(self)?;
                if o == b'#' {
                    ParamOp::RemovePrefix { longest, pattern }
                } else {
                    ParamOp::RemoveSuffix { longest, pattern }
                }
            }
            (false, Some(b'/')) => {
                self.pos += 1;
                let (all, anchor) = match self.peek() {
                    Some(b'/') => (true, Anchor::None),
                    Some(b'#') => (false, Anchor::Start),
                    Some(b'%') => (false, Anchor::End),
                    _ => (false, Anchor::None),
                };
                if all || anchor != Anchor::None {
                    self.pos += 1;
                }
                let pattern = self.word(Ctx::ParamPattern { quoted })?;
                let replacement = if self.peek() == Some(b'/') {
                    self.pos += 1;
                    arg(self)?
                } else {
                    Word {
                        parts: vec![],
                        span: self.pos..self.pos,
                    }
                };
                ParamOp::Replace {
                    all,
                    anchor,
                    pattern,
                    replacement,
                }
            }
            (false, Some(o @ (b'^' | b','))) => {
                self.pos += 1;
                let all = self.peek() == Some(o);
                if all {
                    self.pos += 1;
                }
                let pattern = arg(self)?;
                ParamOp::Case {
                    upper: o == b'^',
                    all,
                    pattern,
                }
            }
            (false, Some(b'@')) => {
                self.pos += 1;
                match self.peek() {
                    Some(t) if t.is_ascii_alphabetic() => {
                        self.pos += 1;
                        ParamOp::Transform(t as char)
                    }
                    _ => {
                        self.skip_braced(open)?;
                        return Ok(None);
                    }
                }
            }
            _ => {
                self.skip_braced(open)?;
                return Ok(None);
            }
        };
        Ok(Some(op))
    }

    /// Skips to the `}` that closes the `${` at `open`, past nested braces and quotes.
    fn skip_braced(&mut self, open: usize) -> R<()> {
        // Only a nested `${` nests (bash closes `${x{a}` at its first `}`); quotes and
        // substitutions inside must close, as bash requires.
        let mut depth = 1usize;
        let mut scratch = Vec::new();
        while let Some(c) = self.peek() {
            match c {
                b'\\' => self.pos += 2,
                b'\'' => {
                    let at = self.pos;
                    match self.b[self.pos + 1..self.limit]
                        .iter()
                        .position(|&c| c == b'\'')
                    {
                        Some(n) => self.pos += n + 2,
                        None => return Err(self.unterminated("'", at)),
                    }
                }
                b'"' => self.double_quoted(&mut scratch)?,
                b'`' => self.backtick(&mut scratch, false)?,
                b'$' if self.peek_at(1) == Some(b'(') => self.dollar(&mut scratch, false)?,
                b'$' if self.peek_at(1) == Some(b'{') => {
                    depth += 1;
                    self.pos += 2;
                }
                b'}' => {
                    depth -= 1;
                    self.pos += 1;
                    if depth == 0 {
                        return Ok(());
                    }
                }
                _ => self.pos += 1,
            }
            scratch.clear();
        }
        Err(self.unterminated("${", open))
    }

    /// Whether the `((` or `$((` whose body starts at `from` is arithmetic: its first
    /// unmatched `)` is followed by another `)` (else it is `$( (…) )`, nested
    /// subshells).
    pub(super) fn arith_ahead(&self, from: usize) -> bool {
        let mut depth = 0usize;
        let mut i = from;
        while i < self.limit {
            match self.b.get(i) {
                Some(b'\\') => i += 1,
                Some(b'\'') => {
                    if let Some(n) = self.b[i + 1..self.limit].iter().position(|&c| c == b'\'') {
                        i += n + 1;
                    }
                }
                Some(b'(') => depth += 1,
                Some(b')') => {
                    if depth == 0 {
                        return self.b.get(i + 1) == Some(&b')');
                    }
                    depth -= 1;
                }
                _ => {}
            }
            i += 1;
        }
        true
    }

    /// An arithmetic expression up to its closing `))` (consumed): the text with its
    /// expansions, as a word.
    pub(super) fn arith_word(&mut self, open: usize, opener: &'static str) -> R<Word> {
        let start = self.pos;
        let mut parts = Vec::new();
        let mut lit = String::new();
        let mut depth = 0usize;
        loop {
            let Some(c) = self.peek() else {
                return Err(self.unterminated(opener, open));
            };
            match c {
                b')' if depth == 0 => {
                    if self.peek_at(1) != Some(b')') {
                        return Err(self.unterminated(opener, open));
                    }
                    flush(&mut lit, &mut parts, false);
                    let word = Word {
                        parts,
                        span: start..self.pos,
                    };
                    self.pos += 2;
                    return Ok(word);
                }
                b'(' | b')' => {
                    if c == b'(' {
                        depth += 1;
                    } else {
                        depth -= 1;
                    }
                    lit.push(c as char);
                    self.pos += 1;
                }
                b'$' => {
                    flush(&mut lit, &mut parts, false);
                    self.dollar(&mut parts, false)?;
                }
                b'`' => {
                    flush(&mut lit, &mut parts, false);
                    self.backtick(&mut parts, false)?;
                }
                b'"' => {
                    flush(&mut lit, &mut parts, false);
                    self.double_quoted(&mut parts)?;
                }
                b'\\' if self.peek_at(1) == Some(b'\n') => self.pos += 2,
                _ => {
                    let ch = self.char_here();
                    lit.push(ch);
                    self.pos += ch.len_utf8();
                }
            }
        }
    }

    /// The end of the balanced parentheses opening at `open` (quotes respected).
    pub(super) fn balanced_parens(&self, open: usize) -> R<usize> {
        let mut depth = 0usize;
        let mut i = open;
        while i < self.limit {
            match self.b.get(i) {
                Some(b'\\') => i += 1,
                Some(b'\'') => match self.b[i + 1..self.limit].iter().position(|&c| c == b'\'') {
                    Some(n) => i += n + 1,
                    None => return Err(self.unterminated("'", i)),
                },
                Some(b'(') => depth += 1,
                Some(b')') => {
                    depth -= 1;
                    if depth == 0 {
                        return Ok(i + 1);
                    }
                }
                Some(b'\n') | None => break,
                _ => {}
            }
            i += 1;
        }
        Err(self.unterminated("(", open))
    }
}
