//! Compound commands: `if`, `while`/`until`, `for`/`select` (word lists and the
//! arithmetic `for ((…))`), `case`, `[[ … ]]`, functions and `coproc`; each reads its
//! reserved words and hands its bodies back to the list parser in `mod.rs`.

use super::*;

impl Parser<'_> {
    #[inline(never)]
    pub(super) fn if_clause(&mut self) -> R<Compound> {
        self.pos += 2;
        let mut branches = Vec::new();
        let mut otherwise = None;
        loop {
            let condition = self.body(End::Words(&["then"]))?;
            self.expect_reserved("then")?;
            let body = self.body(End::Words(&["elif", "else", "fi"]))?;
            branches.push((condition, body));
            if self.eat_reserved("elif") {
                continue;
            }
            if self.eat_reserved("else") {
                otherwise = Some(self.body(End::Words(&["fi"]))?);
            }
            self.expect_reserved("fi")?;
            break;
        }
        Ok(Compound::If {
            branches,
            otherwise,
        })
    }

    #[inline(never)]
    pub(super) fn for_clause(&mut self, select: bool) -> R<Compound> {
        self.blanks();
        if !select && self.starts_with("((") {
            let open = self.pos;
            self.pos += 2;
            let expr = self.arith_word(open, "((")?;
            let parts = split_arith_for(&expr);
            self.blanks();
            if self.peek() == Some(b';') {
                self.pos += 1;
            }
            self.linebreak()?;
            let body = self.do_group()?;
            return Ok(Compound::ArithFor { parts, body });
        }
        let var = match self.at_word().then(|| self.word(Ctx::Arg)).transpose()? {
            Some(w) => match w.plain() {
                Some(name) if valid_name(name) => name.to_string(),
                _ => {
                    return Err(self.error(
                        ErrorKind::Unexpected(self.src.get(w.span.clone()).unwrap_or("").into()),
                        w.span.start,
                    ));
                }
            },
            None => return Err(self.unexpected()),
        };
        self.blanks_and_comment();
        let mut words = None;
        if self.peek() == Some(b';') {
            self.pos += 1;
        } else {
            self.linebreak()?;
            if self.eat_reserved("in") {
                let mut list = Vec::new();
                loop {
                    self.blanks_and_comment();
                    if !self.at_word() {
                        break;
                    }
                    list.push(self.word(Ctx::Arg)?);
                }
                match self.peek() {
                    Some(b';') => self.pos += 1,
                    Some(b'\n') => {
                        self.newline()?;
                    }
                    None => return Err(self.error(ErrorKind::UnexpectedEnd("`do`"), self.pos)),
                    Some(_) => return Err(self.unexpected()),
                }
                words = Some(list);
            }
        }
        self.linebreak()?;
        let body = self.do_group()?;
        Ok(Compound::For {
            select,
            var,
            words,
            body,
        })
    }

    /// `do … done`, or bash's older `{ … }`.
    fn do_group(&mut self) -> R<List> {
        self.blanks_and_comment();
        if self.eat_reserved("{") {
            let body = self.body(End::Words(&["}"]))?;
            self.expect_reserved("}")?;
            return Ok(body);
        }
        self.expect_reserved("do")?;
        let body = self.body(End::Words(&["done"]))?;
        self.expect_reserved("done")?;
        Ok(body)
    }

    #[inline(never)]
    pub(super) fn case_clause(&mut self) -> R<Compound> {
        self.blanks();
        if !self.at_word() {
            return Err(self.unexpected());
        }
        let subject = self.word(Ctx::Arg)?;
        self.linebreak()?;
        self.expect_reserved("in")?;
        let mut arms = Vec::new();
        loop {
            self.linebreak()?;
            if self.eat_reserved("esac") {
                break;
            }
            if self.peek() == Some(b'(') {
                self.pos += 1;
            }
            let mut patterns = Vec::new();
            loop {
                self.blanks();
                if !self.at_word() {
                    return Err(self.unexpected());
                }
                patterns.push(self.word(Ctx::Arg)?);
                self.blanks();
                match self.peek() {
                    Some(b'|') => self.pos += 1,
                    Some(b')') => {
                        self.pos += 1;
                        break;
                    }
                    None => return Err(self.error(ErrorKind::UnexpectedEnd("`)`"), self.pos)),
                    Some(_) => return Err(self.unexpected()),
                }
            }
            let body = self.list(End::CaseArm)?;
            arms.push(CaseArm { patterns, body });
            if self.starts_with(";;&") {
                self.pos += 3;
            } else if self.starts_with(";;") || self.starts_with(";&") {
                self.pos += 2;
            } else {
                self.expect_reserved("esac")?;
                break;
            }
        }
        Ok(Compound::Case { subject, arms })
    }

    /// `[[ … ]]`, after the `[[`.
    #[inline(never)]
    pub(super) fn cond(&mut self) -> R<Compound> {
        let open = self.pos - 2;
        let mut words = Vec::new();
        loop {
            loop {
                self.blanks();
                if !self.newline()? {
                    break;
                }
            }
            if self.eat_reserved("]]") {
                return Ok(Compound::Cond(words));
            }
            let start = self.pos;
            let single = |p: &Self, s: &str| Word {
                parts: vec![Part::Lit {
                    text: s.to_string(),
                    quoted: false,
                }],
                span: start..p.pos,
            };
            match self.peek() {
                None => return Err(self.unterminated("[[", open)),
                Some(_) if self.starts_with("&&") || self.starts_with("||") => {
                    self.pos += 2;
                    let op = self.src.get(start..self.pos).unwrap_or("&&").to_string();
                    words.push(single(self, &op));
                }
                Some(c @ (b'(' | b')' | b'<' | b'>' | b'!' | b';' | b'&' | b'|')) => {
                    self.pos += 1;
                    words.push(single(self, &(c as char).to_string()));
                }
                Some(_) => {
                    let word = self.word(Ctx::Cond)?;
                    if word.span.is_empty() {
                        return Err(self.unexpected());
                    }
                    words.push(word);
                }
            }
        }
    }

    /// `function name [()] body`, after the keyword.
    #[inline(never)]
    pub(super) fn function_keyword(&mut self) -> R<Command> {
        let start = self.pos - 8;
        self.blanks();
        if !self.at_word() {
            return Err(self.unexpected());
        }
        let name_word = self.word(Ctx::Arg)?;
        let Some(name) = name_word.plain().map(str::to_string) else {
            return Err(self.error(
                ErrorKind::Unexpected(self.src.get(name_word.span.clone()).unwrap_or("").into()),
                name_word.span.start,
            ));
        };
        self.blanks();
        if self.peek() == Some(b'(') {
            self.pos += 1;
            self.blanks();
            if self.peek() != Some(b')') {
                return Err(self.unexpected());
            }
            self.pos += 1;
        }
        self.function_body(name, start)
    }

    pub(super) fn function_body(&mut self, name: String, start: usize) -> R<Command> {
        self.linebreak()?;
        let starts_compound = matches!(
            self.reserved(),
            Some("{" | "if" | "while" | "until" | "for" | "select" | "case" | "[[")
        ) || self.peek() == Some(b'(');
        if !starts_compound {
            return Err(match self.peek() {
                None => self.error(ErrorKind::UnexpectedEnd("a function body"), self.pos),
                Some(_) => self.unexpected(),
            });
        }
        let body = self.command()?;
        Ok(Command::Function(Box::new(Function {
            name,
            body,
            span: start..self.pos,
        })))
    }

    /// `coproc [NAME] command`, after the keyword.
    #[inline(never)]
    pub(super) fn coproc(&mut self) -> R<Command> {
        self.blanks();
        let compound_next = |p: &Self| {
            matches!(
                p.reserved(),
                Some("{" | "if" | "while" | "until" | "for" | "select" | "case" | "[[")
            ) || p.peek() == Some(b'(')
        };
        let mut name = None;
        if !compound_next(self) && self.at_word() && !self.at_redirect() {
            let save = self.pos;
            let word = self.word(Ctx::Arg)?;
            self.blanks();
            match word.plain() {
                Some(n) if valid_name(n) && compound_next(self) => name = Some(n.to_string()),
                _ => self.pos = save,
            }
        }
        let body = self.command()?;
        Ok(Command::Coproc(Box::new(Coproc { name, body })))
    }
}

/// `for ((a; b; c))`: the expression split at its top-level `;`.
fn split_arith_for(expr: &Word) -> Vec<Word> {
    let mut out = vec![Word {
        parts: vec![],
        span: expr.span.clone(),
    }];
    for part in &expr.parts {
        match part {
            Part::Lit { text, quoted } => {
                let mut pieces = text.split(';');
                if let Some(first) = pieces.next()
                    && let Some(w) = out.last_mut()
                    && !first.is_empty()
                {
                    w.parts.push(Part::Lit {
                        text: first.to_string(),
                        quoted: *quoted,
                    });
                }
                for piece in pieces {
                    out.push(Word {
                        parts: if piece.is_empty() {
                            vec![]
                        } else {
                            vec![Part::Lit {
                                text: piece.to_string(),
                                quoted: *quoted,
                            }]
                        },
                        span: expr.span.clone(),
                    });
                }
            }
            other => {
                if let Some(w) = out.last_mut() {
                    w.parts.push(other.clone());
                }
            }
        }
    }
    out
}
