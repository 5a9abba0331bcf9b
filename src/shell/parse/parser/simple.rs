//! Simple commands and what they carry: assignments (scalars and arrays), the words
//! of `declare`-style builtins, and redirections (whose heredoc bodies `heredoc.rs`
//! reads after the line ends).

use super::heredoc::delimiter_text;
use super::*;

impl Parser<'_> {
    /// A simple command, or a function definition `name () body`.
    #[inline(never)]
    pub(super) fn simple(&mut self) -> R<Command> {
        let start = self.pos;
        let mut simple = Simple {
            assignments: Vec::new(),
            words: Vec::new(),
            redirects: Vec::new(),
            span: start..start,
        };
        let mut end = start;
        loop {
            self.blanks();
            if self.at_redirect() {
                simple.redirects.push(self.redirect()?);
                end = self.pos;
                continue;
            }
            if !self.at_word() || self.peek() == Some(b'#') {
                break;
            }
            if simple.words.is_empty()
                && let Some(a) = self.assignment()?
            {
                simple.assignments.push(a);
                end = self.pos;
                continue;
            }
            let declares = simple.words.first().and_then(Word::plain).is_some_and(|w| {
                matches!(w, "declare" | "typeset" | "local" | "export" | "readonly")
            });
            if declares && let Some(word) = self.declaration_arg()? {
                simple.words.push(word);
                end = self.pos;
                continue;
            }
            let word = self.word(Ctx::Arg)?;
            end = self.pos;
            if simple.words.is_empty()
                && simple.assignments.is_empty()
                && simple.redirects.is_empty()
            {
                let save = self.pos;
                self.blanks();
                if self.peek() == Some(b'(') {
                    let open = self.pos;
                    self.pos += 1;
                    self.blanks();
                    if self.peek() == Some(b')') {
                        self.pos += 1;
                        let Some(name) = word.plain().map(str::to_string) else {
                            return Err(self.error(
                                ErrorKind::Unexpected(
                                    self.src.get(word.span.clone()).unwrap_or("").into(),
                                ),
                                word.span.start,
                            ));
                        };
                        return self.function_body(name, start);
                    }
                    self.pos = open;
                    return Err(self.unexpected());
                }
                self.pos = save;
            }
            simple.words.push(word);
        }
        if simple.words.is_empty() && simple.assignments.is_empty() && simple.redirects.is_empty() {
            return Err(self.unexpected());
        }
        simple.span = start..end;
        Ok(Command::Simple(simple))
    }

    /// `NAME=…`, `NAME+=…`, `NAME[i]=…` at the current position, if that is what is
    /// written there.
    #[inline(never)]
    fn assignment(&mut self) -> R<Option<Assignment>> {
        let start = self.pos;
        let mut i = self.pos;
        let name_len = self.b[i..self.limit]
            .iter()
            .position(|&c| !(c.is_ascii_alphanumeric() || c == b'_'))
            .unwrap_or(self.limit - i);
        if name_len == 0 || self.b[i].is_ascii_digit() {
            return Ok(None);
        }
        i += name_len;
        let mut index_range = None;
        if self.b.get(i) == Some(&b'[') && i < self.limit {
            // The subscript: balanced brackets, no blank or operator outside quotes.
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match self.b.get(j) {
                    Some(b'[') => depth += 1,
                    Some(b']') => {
                        depth -= 1;
                        if depth == 0 {
                            break;
                        }
                    }
                    Some(&c) if is_meta(c) && c != b'<' && c != b'>' => return Ok(None),
                    None => return Ok(None),
                    _ => {}
                }
                j += 1;
                if j >= self.limit {
                    return Ok(None);
                }
            }
            index_range = Some(i + 1..j);
            i = j + 1;
        }
        let append = self.b.get(i) == Some(&b'+');
        if append {
            i += 1;
        }
        if i >= self.limit || self.b.get(i) != Some(&b'=') {
            return Ok(None);
        }
        let name = self.src[start..start + name_len].to_string();
        let index = match index_range {
            Some(r) => {
                self.pos = r.start;
                let w = self.word(Ctx::Index)?;
                Some(w)
            }
            None => None,
        };
        self.pos = i + 1;
        let value = if self.peek() == Some(b'(') {
            Value::Array(self.array_elements()?)
        } else {
            Value::Scalar(self.value_word()?)
        };
        Ok(Some(Assignment {
            name,
            index,
            append,
            value,
            span: start..self.pos,
        }))
    }

    /// The value of a scalar assignment (possibly empty: `X= cmd`).
    fn value_word(&mut self) -> Result<Word, ParseError> {
        if self.at_word() {
            self.word(Ctx::Value)
        } else {
            Ok(Word {
                parts: vec![],
                span: self.pos..self.pos,
            })
        }
    }

    /// `(a b [k]=v …)` after `NAME=`.
    fn array_elements(&mut self) -> R<Vec<(Option<Word>, Word)>> {
        let open = self.pos;
        self.pos += 1;
        let mut elements = Vec::new();
        loop {
            self.linebreak()?;
            match self.peek() {
                Some(b')') => {
                    self.pos += 1;
                    return Ok(elements);
                }
                None => return Err(self.unterminated("(", open)),
                _ if !self.at_word() => return Err(self.unexpected()),
                _ => {}
            }
            if self.peek() == Some(b'[')
                && let Some(close) = self.b[self.pos..self.limit].iter().position(|&c| c == b']')
                && self.b.get(self.pos + close + 1) == Some(&b'=')
            {
                let key_end = self.pos + close;
                self.pos += 1;
                let saved = self.limit;
                self.limit = key_end;
                let key = self.word(Ctx::Index);
                self.limit = saved;
                let key = key?;
                self.pos = key_end + 2;
                let value = self.value_word()?;
                elements.push((Some(key), value));
            } else {
                elements.push((None, self.word(Ctx::Value)?));
            }
        }
    }

    /// An argument of `declare`/`export`/`local`/…: an assignment there is read as one
    /// (`export X=~/bin` expands the tilde, `declare -a A=(1 2)` is an array). The word
    /// returned covers it, as written.
    fn declaration_arg(&mut self) -> R<Option<Word>> {
        let start = self.pos;
        let Some(a) = self.assignment()? else {
            return Ok(None);
        };
        let mut parts = vec![Part::Lit {
            text: format!("{}{}=", a.name, if a.append { "+" } else { "" }),
            quoted: false,
        }];
        match a.value {
            Value::Scalar(w) => parts.extend(w.parts),
            Value::Array(_) => {
                // An array value is kept as its text: `declare -a A=(…)` names an
                // array, and the walker reads the elements of an assignment.
                parts = vec![Part::Lit {
                    text: self.src.get(start..self.pos).unwrap_or("").to_string(),
                    quoted: true,
                }];
            }
        }
        Ok(Some(Word {
            parts,
            span: start..self.pos,
        }))
    }

    #[inline(never)]
    pub(super) fn redirect(&mut self) -> R<Redirect> {
        let start = self.pos;
        let mut fd = None;
        let digits = self.b[self.pos..self.limit]
            .iter()
            .take_while(|c| c.is_ascii_digit())
            .count();
        if digits > 0 {
            let n = self.src[self.pos..self.pos + digits]
                .parse::<u32>()
                .unwrap_or(u32::MAX);
            fd = Some(Fd::Number(n));
            self.pos += digits;
        } else if self.peek() == Some(b'{')
            && let Some(close) = self.b[self.pos..self.limit].iter().position(|&c| c == b'}')
        {
            fd = Some(Fd::Var(
                self.src[self.pos + 1..self.pos + close].to_string(),
            ));
            self.pos += close + 1;
        }
        let ops: [(&str, RedirOp); 12] = [
            ("&>>", RedirOp::AppendOutErr),
            ("<<<", RedirOp::HereString),
            ("<<-", RedirOp::Heredoc),
            ("&>", RedirOp::OutErr),
            ("<<", RedirOp::Heredoc),
            ("<>", RedirOp::ReadWrite),
            ("<&", RedirOp::DupIn),
            (">>", RedirOp::Append),
            (">|", RedirOp::Clobber),
            (">&", RedirOp::DupOut),
            ("<", RedirOp::In),
            (">", RedirOp::Out),
        ];
        let Some(&(text, op)) = ops.iter().find(|(t, _)| self.starts_with(t)) else {
            return Err(self.unexpected());
        };
        self.pos += text.len();
        self.blanks();
        // `> 2>&1`: bash reads `2>` as the next redirection, leaving none for `>`.
        // A `#` there starts a comment, so the target is missing.
        if !self.at_word()
            || self.peek() == Some(b'#')
            || (self.at_redirect() && !matches!(op, RedirOp::DupIn | RedirOp::DupOut))
        {
            return Err(match self.peek() {
                None => self.error(ErrorKind::UnexpectedEnd("a redirection target"), self.pos),
                Some(_) => self.unexpected(),
            });
        }
        let word = self.word(Ctx::Arg)?;
        let target = if op == RedirOp::Heredoc {
            let quoted = word.has_quotes()
                || self
                    .src
                    .get(word.span.clone())
                    .is_some_and(|t| t.contains(['\\', '\'', '"']));
            let delimiter = delimiter_text(self.src, &word);
            let id = self.bodies.len();
            self.bodies.push(None);
            self.pending.push(Pending {
                id,
                delimiter: delimiter.clone(),
                strip_tabs: text == "<<-",
                quoted,
            });
            Target::Heredoc(Heredoc {
                delimiter,
                quoted,
                strip_tabs: text == "<<-",
                body: Word {
                    parts: vec![],
                    span: id..id,
                },
            })
        } else {
            Target::Word(word)
        };
        Ok(Redirect {
            fd,
            op,
            target,
            span: start..self.pos,
        })
    }
}
