//! A small shell tokenizer for the guard: words with their quoting kept apart from
//! their text, so that `"/"`, `\/`, `$'/'` and `${EMPTY}/` can all be seen for the `/`
//! they are, plus the operators, parentheses and redirections between them.
//!
//! It is not a shell. It never fails and never panics: text it cannot resolve
//! (command substitution, arithmetic, most `${…}` operators) becomes a *dynamic* piece,
//! and the scripts inside `$(…)`, backticks and `<(…)` are handed back so the guard can
//! check them as commands of their own.

/// One piece of a word, before expansion.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Literal text; `quoted` pieces are not field-split and their `*?[` are not globs.
    Lit { text: String, quoted: bool },
    /// `$NAME` / `${NAME}` (with `${NAME:-word}`-style defaults).
    Var {
        name: String,
        quoted: bool,
        default: Option<Fallback>,
    },
    /// `~` or `~user` at the start of a word (or of an assignment's value).
    Tilde(String),
    /// Something whose value cannot be known before it runs.
    Dynamic,
}

/// `${NAME-word}` (`colon` false) or `${NAME:-word}` / `${NAME:=word}` (`colon` true:
/// an empty value also takes the default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fallback {
    pub colon: bool,
    pub word: Vec<Piece>,
}

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Word {
    /// The word as written.
    pub raw: String,
    pub pieces: Vec<Piece>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    Semi,
    /// `;;`, `;&`, `;;&` (case arms)
    CaseSep,
    And,
    Or,
    Pipe,
    PipeAll,
    Background,
    Newline,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Tok {
    Word(Word),
    Op(Op),
    /// `(`
    Open,
    /// `)`
    Close,
    /// A redirection: its operator (`>`, `>>`, `>|`, `&>`, `<`, `<<`, `>&`, …) and target.
    Redirect {
        op: String,
        target: Word,
    },
}

/// The tokens of a command text and the scripts nested inside it.
#[derive(Debug, Clone, Default)]
pub struct Script {
    pub toks: Vec<Tok>,
    pub nested: Vec<String>,
}

pub fn parse(src: &str) -> Script {
    let mut p = Parser {
        s: src,
        b: src.as_bytes(),
        i: 0,
        out: Script::default(),
        heredocs: Vec::new(),
    };
    p.run();
    p.out
}

struct Parser<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
    out: Script,
    /// Delimiters of heredocs whose bodies start after the next newline (and whether
    /// leading tabs are stripped, `<<-`).
    heredocs: Vec<(String, bool)>,
}

fn is_meta(c: u8) -> bool {
    matches!(
        c,
        b' ' | b'\t' | b'\n' | b';' | b'&' | b'|' | b'(' | b')' | b'<' | b'>'
    )
}

impl Parser<'_> {
    fn at(&self, i: usize) -> Option<u8> {
        self.b.get(i).copied()
    }

    fn slice(&self, a: usize, b: usize) -> String {
        self.s
            .get(a.min(self.b.len())..b.min(self.b.len()))
            .unwrap_or_default()
            .to_string()
    }

    fn op(&mut self, op: Op, len: usize) {
        self.out.toks.push(Tok::Op(op));
        self.i += len;
    }

    fn run(&mut self) {
        while let Some(c) = self.at(self.i) {
            match c {
                b' ' | b'\t' | b'\r' => self.i += 1,
                b'\\' if self.at(self.i + 1) == Some(b'\n') => self.i += 2,
                b'#' => {
                    while self.at(self.i).is_some_and(|c| c != b'\n') {
                        self.i += 1;
                    }
                }
                b'\n' => {
                    self.op(Op::Newline, 1);
                    self.skip_heredoc_bodies();
                }
                b';' => match (self.at(self.i + 1), self.at(self.i + 2)) {
                    (Some(b';'), Some(b'&')) => self.op(Op::CaseSep, 3),
                    (Some(b';' | b'&'), _) => self.op(Op::CaseSep, 2),
                    _ => self.op(Op::Semi, 1),
                },
                b'&' => match self.at(self.i + 1) {
                    Some(b'&') => self.op(Op::And, 2),
                    Some(b'>') => self.redirect(self.i),
                    _ => self.op(Op::Background, 1),
                },
                b'|' => match self.at(self.i + 1) {
                    Some(b'|') => self.op(Op::Or, 2),
                    Some(b'&') => self.op(Op::PipeAll, 2),
                    _ => self.op(Op::Pipe, 1),
                },
                b'(' => {
                    self.out.toks.push(Tok::Open);
                    self.i += 1;
                }
                b')' => {
                    self.out.toks.push(Tok::Close);
                    self.i += 1;
                }
                b'<' | b'>' if self.at(self.i + 1) == Some(b'(') => {
                    // Process substitution: a word of its own whose script runs.
                    let end = self.nested_parens(self.i + 2);
                    let raw = self.slice(self.i, end);
                    self.out.toks.push(Tok::Word(Word {
                        raw,
                        pieces: vec![Piece::Dynamic],
                    }));
                    self.i = end;
                }
                b'<' | b'>' => self.redirect(self.i),
                _ => {
                    let start = self.i;
                    let word = self.word(false);
                    // `2>file`: digits glued to a redirection are its file descriptor.
                    let fd_prefix = self.at(self.i).is_some_and(|c| c == b'<' || c == b'>')
                        && word.raw.bytes().all(|c| c.is_ascii_digit())
                        && !word.raw.is_empty();
                    if fd_prefix {
                        continue;
                    }
                    if self.i == start {
                        // Never loop on a byte the word reader refused.
                        self.i += 1;
                        continue;
                    }
                    self.out.toks.push(Tok::Word(word));
                }
            }
        }
    }

    fn redirect(&mut self, at: usize) {
        let three = self.slice(at, at + 3);
        let two = self.slice(at, at + 2);
        let op = if ["<<<", "<<-", "&>>"].contains(&three.as_str()) {
            three
        } else if ["<<", "<>", "<&", ">>", ">|", ">&", "&>"].contains(&two.as_str()) {
            two
        } else {
            self.slice(at, at + 1)
        };
        self.i = at + op.len();
        while matches!(self.at(self.i), Some(b' ' | b'\t')) {
            self.i += 1;
        }
        let target = if self.at(self.i).is_some_and(|c| !is_meta(c)) {
            self.word(false)
        } else {
            Word::default()
        };
        if op == "<<" || op == "<<-" {
            let delim: String = target
                .pieces
                .iter()
                .map(|p| match p {
                    Piece::Lit { text, .. } => text.as_str(),
                    _ => "",
                })
                .collect();
            self.heredocs.push((delim, op == "<<-"));
        }
        self.out.toks.push(Tok::Redirect { op, target });
    }

    /// Heredoc bodies are data, not commands: skip their lines.
    fn skip_heredoc_bodies(&mut self) {
        for (delim, strip_tabs) in std::mem::take(&mut self.heredocs) {
            loop {
                if self.i >= self.b.len() {
                    return;
                }
                let end = self.b[self.i..]
                    .iter()
                    .position(|&c| c == b'\n')
                    .map_or(self.b.len(), |p| self.i + p);
                let line = self.slice(self.i, end);
                self.i = (end + 1).min(self.b.len());
                let line = if strip_tabs {
                    line.trim_start_matches('\t')
                } else {
                    &line
                };
                if line == delim {
                    break;
                }
            }
        }
    }

    /// Reads a word starting at `self.i` up to the next unquoted blank or operator.
    /// `in_braces`: inside `${NAME:-…}`, where `}` ends the word and blanks do not.
    fn word(&mut self, in_braces: bool) -> Word {
        let start = self.i;
        let mut pieces: Vec<Piece> = Vec::new();
        let mut lit = String::new();
        let flush = |lit: &mut String, pieces: &mut Vec<Piece>| {
            if !lit.is_empty() {
                pieces.push(Piece::Lit {
                    text: std::mem::take(lit),
                    quoted: false,
                });
            }
        };
        // `~` expands at the start of a word and after the `=` of an assignment.
        let mut tilde_ok = !in_braces;
        let mut assignment_seen = false;
        while let Some(c) = self.at(self.i) {
            if in_braces {
                if c == b'}' {
                    break;
                }
            } else if is_meta(c) {
                break;
            }
            if tilde_ok && c == b'~' {
                let end = self.b[self.i..]
                    .iter()
                    .position(|&c| c == b'/' || c == b':' || is_meta(c) || c == b'}')
                    .map_or(self.b.len(), |p| self.i + p);
                let user = self.slice(self.i + 1, end);
                if user
                    .bytes()
                    .all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-')
                {
                    flush(&mut lit, &mut pieces);
                    pieces.push(Piece::Tilde(user));
                    self.i = end;
                    tilde_ok = false;
                    continue;
                }
            }
            tilde_ok = false;
            match c {
                b'\\' => match self.at(self.i + 1) {
                    Some(b'\n') => self.i += 2,
                    Some(_) => {
                        flush(&mut lit, &mut pieces);
                        let ch = self.char_at(self.i + 1);
                        pieces.push(Piece::Lit {
                            text: ch.to_string(),
                            quoted: true,
                        });
                        self.i += 1 + ch.len_utf8();
                    }
                    None => self.i += 1,
                },
                b'\'' => {
                    flush(&mut lit, &mut pieces);
                    let end = self.b[self.i + 1..]
                        .iter()
                        .position(|&c| c == b'\'')
                        .map_or(self.b.len(), |p| self.i + 1 + p);
                    pieces.push(Piece::Lit {
                        text: self.slice(self.i + 1, end),
                        quoted: true,
                    });
                    self.i = (end + 1).min(self.b.len());
                }
                b'"' => {
                    flush(&mut lit, &mut pieces);
                    self.i += 1;
                    self.double_quoted(&mut pieces);
                }
                b'`' => {
                    flush(&mut lit, &mut pieces);
                    self.backticks();
                    pieces.push(Piece::Dynamic);
                }
                b'$' => {
                    flush(&mut lit, &mut pieces);
                    if self.at(self.i + 1) == Some(b'\'') {
                        self.i += 2;
                        let text = self.ansi_c();
                        pieces.push(Piece::Lit { text, quoted: true });
                    } else {
                        pieces.push(self.dollar(false));
                    }
                }
                _ => {
                    let ch = self.char_at(self.i);
                    lit.push(ch);
                    self.i += ch.len_utf8();
                    if ch == '=' && !assignment_seen {
                        assignment_seen = true;
                        tilde_ok = true;
                    } else if ch == ':' && assignment_seen {
                        tilde_ok = true;
                    }
                }
            }
        }
        flush(&mut lit, &mut pieces);
        Word {
            raw: self.slice(start, self.i),
            pieces,
        }
    }

    fn char_at(&self, i: usize) -> char {
        self.s
            .get(i..)
            .and_then(|s| s.chars().next())
            .unwrap_or('\u{fffd}')
    }

    /// The body of `"…"`, starting after the opening quote.
    fn double_quoted(&mut self, pieces: &mut Vec<Piece>) {
        let mut lit = String::new();
        let flush = |lit: &mut String, pieces: &mut Vec<Piece>| {
            if !lit.is_empty() {
                pieces.push(Piece::Lit {
                    text: std::mem::take(lit),
                    quoted: true,
                });
            }
        };
        // An empty "" still makes a (quoted, empty) word.
        pieces.push(Piece::Lit {
            text: String::new(),
            quoted: true,
        });
        while let Some(c) = self.at(self.i) {
            match c {
                b'"' => {
                    self.i += 1;
                    break;
                }
                b'\\' => match self.at(self.i + 1) {
                    Some(e @ (b'$' | b'`' | b'"' | b'\\')) => {
                        lit.push(e as char);
                        self.i += 2;
                    }
                    Some(b'\n') => self.i += 2,
                    _ => {
                        lit.push('\\');
                        self.i += 1;
                    }
                },
                b'`' => {
                    flush(&mut lit, pieces);
                    self.backticks();
                    pieces.push(Piece::Dynamic);
                }
                b'$' => {
                    flush(&mut lit, pieces);
                    pieces.push(self.dollar(true));
                }
                _ => {
                    let ch = self.char_at(self.i);
                    lit.push(ch);
                    self.i += ch.len_utf8();
                }
            }
        }
        flush(&mut lit, pieces);
    }

    /// `$…` at `self.i`.
    fn dollar(&mut self, quoted: bool) -> Piece {
        let i = self.i;
        match self.at(i + 1) {
            Some(b'(') if self.at(i + 2) == Some(b'(') => {
                // Arithmetic: its value is a number, never a path we can judge.
                self.i = self.nested_parens(i + 2);
                if self.at(self.i) == Some(b')') {
                    self.i += 1;
                }
                Piece::Dynamic
            }
            Some(b'(') => {
                self.i = self.nested_parens(i + 2);
                Piece::Dynamic
            }
            Some(b'{') => self.braced(quoted),
            Some(c) if c.is_ascii_alphabetic() || c == b'_' => {
                let mut j = i + 1;
                while self
                    .at(j)
                    .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
                {
                    j += 1;
                }
                let name = self.slice(i + 1, j);
                self.i = j;
                Piece::Var {
                    name,
                    quoted,
                    default: None,
                }
            }
            Some(c) if c.is_ascii_digit() && c != b'0' || c == b'@' || c == b'*' => {
                // Positional parameters: `bash -c` gives none.
                self.i = i + 2;
                Piece::Var {
                    name: (c as char).to_string(),
                    quoted,
                    default: None,
                }
            }
            Some(b'$' | b'?' | b'!' | b'#' | b'-' | b'0') => {
                self.i = i + 2;
                Piece::Dynamic
            }
            _ => {
                self.i = i + 1;
                Piece::Lit {
                    text: "$".into(),
                    quoted,
                }
            }
        }
    }

    /// `${…}` at `self.i` (pointing at `$`).
    fn braced(&mut self, quoted: bool) -> Piece {
        let body = self.i + 2;
        let mut j = body;
        while self
            .at(j)
            .is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_')
        {
            j += 1;
        }
        let name = self.slice(body, j);
        let simple_name = !name.is_empty() && !name.as_bytes()[0].is_ascii_digit();
        let positional = !name.is_empty() && name.bytes().all(|c| c.is_ascii_digit());
        let op_colon = self.at(j) == Some(b':');
        let op_at = if op_colon { j + 1 } else { j };
        match self.at(op_at) {
            Some(b'}') if (simple_name || positional) && !op_colon => {
                self.i = op_at + 1;
                Piece::Var {
                    name,
                    quoted,
                    default: None,
                }
            }
            Some(b'-' | b'=') if simple_name || positional => {
                self.i = op_at + 1;
                let word = self.word(true);
                if self.at(self.i) == Some(b'}') {
                    self.i += 1;
                }
                Piece::Var {
                    name,
                    quoted,
                    default: Some(Fallback {
                        colon: op_colon,
                        word: word.pieces,
                    }),
                }
            }
            _ => {
                self.i = self.closing_brace(body);
                Piece::Dynamic
            }
        }
    }

    /// The index after the `}` closing a `${` whose body starts at `j`.
    fn closing_brace(&mut self, mut j: usize) -> usize {
        let mut depth = 1usize;
        while let Some(c) = self.at(j) {
            match c {
                b'\\' => j += 1,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return j + 1;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        self.b.len()
    }

    /// Skips a parenthesised script whose body starts at `j` (after `(`), records the
    /// body as nested, and returns the index after the closing `)`.
    fn nested_parens(&mut self, mut j: usize) -> usize {
        let start = j;
        let mut depth = 1usize;
        while let Some(c) = self.at(j) {
            match c {
                b'\\' => j += 1,
                b'\'' => {
                    j = self.b[j + 1..]
                        .iter()
                        .position(|&c| c == b'\'')
                        .map_or(self.b.len(), |p| j + 1 + p);
                }
                b'"' => {
                    j += 1;
                    while let Some(c) = self.at(j) {
                        match c {
                            b'\\' => j += 1,
                            b'"' => break,
                            _ => {}
                        }
                        j += 1;
                    }
                }
                b'(' => depth += 1,
                b')' => {
                    depth -= 1;
                    if depth == 0 {
                        self.out.nested.push(self.slice(start, j));
                        return j + 1;
                    }
                }
                _ => {}
            }
            j += 1;
        }
        self.out.nested.push(self.slice(start, self.b.len()));
        self.b.len()
    }

    /// Skips `` `…` `` at `self.i`, recording its body as nested.
    fn backticks(&mut self) {
        let start = self.i + 1;
        let mut j = start;
        let mut body = String::new();
        while let Some(c) = self.at(j) {
            match c {
                b'\\' => {
                    if let Some(n) = self.at(j + 1) {
                        if !matches!(n, b'`' | b'\\' | b'$') {
                            body.push('\\');
                        }
                        body.push(self.char_at(j + 1));
                        j += self.char_at(j + 1).len_utf8();
                    }
                    j += 1;
                }
                b'`' => break,
                _ => {
                    let ch = self.char_at(j);
                    body.push(ch);
                    j += ch.len_utf8();
                    continue;
                }
            }
        }
        self.out.nested.push(body);
        self.i = (j + 1).min(self.b.len());
    }

    /// The body of `$'…'` (starting after the quote), with its escapes decoded.
    fn ansi_c(&mut self) -> String {
        let mut out = String::new();
        while let Some(c) = self.at(self.i) {
            match c {
                b'\'' => {
                    self.i += 1;
                    break;
                }
                b'\\' => {
                    let e = self.at(self.i + 1);
                    self.i += 2;
                    match e {
                        Some(b'n') => out.push('\n'),
                        Some(b't') => out.push('\t'),
                        Some(b'r') => out.push('\r'),
                        Some(b'e' | b'E') => out.push('\x1b'),
                        Some(b'a') => out.push('\x07'),
                        Some(b'0'..=b'7') => {
                            let mut v = u32::from(e.unwrap_or(b'0') - b'0');
                            for _ in 0..2 {
                                match self.at(self.i) {
                                    Some(d @ b'0'..=b'7') => {
                                        v = v * 8 + u32::from(d - b'0');
                                        self.i += 1;
                                    }
                                    _ => break,
                                }
                            }
                            out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                        }
                        Some(b'x') => {
                            let mut v = 0u32;
                            for _ in 0..2 {
                                match self.at(self.i).and_then(|d| (d as char).to_digit(16)) {
                                    Some(d) => {
                                        v = v * 16 + d;
                                        self.i += 1;
                                    }
                                    None => break,
                                }
                            }
                            out.push(char::from_u32(v).unwrap_or('\u{fffd}'));
                        }
                        Some(other) => {
                            if !matches!(other, b'\\' | b'\'' | b'"' | b'?') {
                                out.push('\\');
                            }
                            self.i -= 1;
                            let ch = self.char_at(self.i);
                            out.push(ch);
                            self.i += ch.len_utf8();
                        }
                        None => {}
                    }
                }
                _ => {
                    let ch = self.char_at(self.i);
                    out.push(ch);
                    self.i += ch.len_utf8();
                }
            }
        }
        self.i = self.i.min(self.b.len());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        parse(s)
            .toks
            .iter()
            .filter_map(|t| match t {
                Tok::Word(w) => Some(w.raw.clone()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn splits_words_operators_and_redirections() {
        assert_eq!(words("rm -rf /"), ["rm", "-rf", "/"]);
        assert_eq!(words("a&&b||c;d|e"), ["a", "b", "c", "d", "e"]);
        let s = parse("echo x 2>/dev/null >f");
        assert!(
            matches!(&s.toks[2], Tok::Redirect { op, target } if op == ">" && target.raw == "/dev/null")
        );
        assert!(
            matches!(&s.toks[3], Tok::Redirect { op, target } if op == ">" && target.raw == "f")
        );
    }

    #[test]
    fn nested_scripts_are_collected() {
        let s = parse("echo $(rm -rf /) `ls` <(cat x) \"$(pwd)\"");
        assert_eq!(s.nested, ["rm -rf /", "ls", "cat x", "pwd"]);
    }

    #[test]
    fn heredoc_bodies_are_skipped() {
        let s = parse("cat <<EOF\nrm -rf /\nEOF\necho done");
        assert_eq!(words("cat <<EOF\nrm -rf /\nEOF\necho done").len(), 3);
        assert!(s.nested.is_empty());
    }

    #[test]
    fn never_panics_on_odd_input() {
        for s in [
            "\\", "'", "\"", "$", "${", "${x", "$(", "`", "~", "a\\", "$'\\x", "$'\\", "<", ">",
            "&>", "((", "))", "${x:-", "é\\é", "$'\\é'", "\"\\é\"", "`\\é`",
        ] {
            let _ = parse(s);
        }
    }
}
