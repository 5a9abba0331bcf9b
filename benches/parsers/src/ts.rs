//! tree-sitter-bash's concrete syntax tree turned into agentbash's
//! (`shell::parse::ast`), so the same walk, interceptor and guard can judge what
//! tree-sitter reads. tree-sitter never fails: text it cannot fit into the grammar
//! becomes ERROR nodes, which count as a parse failure here (the tree is still
//! converted, as a caller of tree-sitter would use it).

use std::sync::Arc;

use agentbash::shell::parse::ast as a;
use agentbash::shell::parse::{ErrorKind, ParseError, Parsed};
use tree_sitter::Node;

thread_local! {
    static PARSER: std::cell::RefCell<tree_sitter::Parser> = std::cell::RefCell::new({
        let mut p = tree_sitter::Parser::new();
        if let Err(e) = p.set_language(&tree_sitter_bash::LANGUAGE.into()) {
            panic!("tree-sitter-bash: {e}");
        }
        p
    });
}

struct Conv<'s> {
    src: &'s str,
    arc: Arc<str>,
    /// How deep the conversion is: like any reader of a tree, it needs a bound (64,
    /// agentbash's own) to survive a 10,000-deep one.
    depth: std::cell::Cell<usize>,
}

/// Parses `src` with tree-sitter-bash and converts the tree.
pub fn parse(src: &str) -> Parsed {
    let tree = PARSER.with(|p| p.borrow_mut().parse(src, None));
    let arc: Arc<str> = Arc::from(src);
    let Some(tree) = tree else {
        return failed(arc, src.len());
    };
    let root = tree.root_node();
    let conv = Conv {
        src,
        arc: arc.clone(),
        depth: std::cell::Cell::new(0),
    };
    let body = conv.statements(root);
    let error = root.has_error().then(|| ParseError {
        kind: ErrorKind::Unexpected("ERROR node".into()),
        offset: 0,
        line: 1,
        column: 1,
    });
    // What follows the line of the first error is what bash would not run: the walk
    // reads it as text it could not parse.
    let rest = match first_error(root) {
        Some(at) => src[..at].rfind('\n').map_or(0, |i| i + 1),
        None => src.len(),
    };
    Parsed {
        script: a::Script { src: arc, body },
        error,
        rest,
    }
}

fn first_error(n: Node) -> Option<usize> {
    if n.is_error() || n.is_missing() {
        return Some(n.start_byte());
    }
    if !n.has_error() {
        return None;
    }
    let mut c = n.walk();
    let kids: Vec<Node> = n.children(&mut c).collect();
    kids.into_iter().find_map(first_error)
}

fn failed(arc: Arc<str>, len: usize) -> Parsed {
    Parsed {
        script: a::Script {
            src: arc,
            body: vec![],
        },
        error: Some(ParseError {
            kind: ErrorKind::Unexpected("no tree".into()),
            offset: 0,
            line: 1,
            column: 1,
        }),
        rest: len.min(0),
    }
}

fn named_children<'t>(n: Node<'t>) -> Vec<Node<'t>> {
    let mut c = n.walk();
    n.named_children(&mut c).collect()
}

fn all_children<'t>(n: Node<'t>) -> Vec<Node<'t>> {
    let mut c = n.walk();
    n.children(&mut c).collect()
}

impl Conv<'_> {
    fn text(&self, n: Node) -> &str {
        self.src.get(n.byte_range()).unwrap_or("")
    }

    fn is_statement(kind: &str) -> bool {
        !matches!(
            kind,
            "comment"
                | "heredoc_body"
                | "heredoc_end"
                | "heredoc_start"
                | "file_redirect"
                | "heredoc_redirect"
                | "herestring_redirect"
        )
    }

    /// The statements among `n`'s children as a list, with their separators.
    fn statements(&self, n: Node) -> a::List {
        let kids = all_children(n);
        let mut list = Vec::new();
        for (i, k) in kids.iter().enumerate() {
            if !k.is_named()
                || !Self::is_statement(k.kind())
                || k.kind() == "ERROR" && k.named_child_count() == 0
            {
                continue;
            }
            let Some(and_or) = self.and_or(*k) else {
                continue;
            };
            let sep = match kids
                .get(i + 1)
                .filter(|x| !x.is_named())
                .map(|x| self.text(*x))
            {
                Some("&") => a::Sep::Amp,
                _ => a::Sep::Semi,
            };
            list.push(a::Item { and_or, sep });
        }
        list
    }

    fn and_or(&self, n: Node) -> Option<a::AndOr> {
        if n.kind() == "list" {
            let kids = all_children(n);
            let mut out: Option<a::AndOr> = None;
            let mut connector = a::Connector::And;
            for k in kids {
                if !k.is_named() {
                    connector = if self.text(k) == "||" {
                        a::Connector::Or
                    } else {
                        a::Connector::And
                    };
                    continue;
                }
                let part = self.and_or(k)?;
                out = Some(match out {
                    None => part,
                    Some(mut prev) => {
                        prev.rest.push((connector, part.first));
                        prev.rest.extend(part.rest);
                        prev
                    }
                });
            }
            return out;
        }
        Some(a::AndOr {
            first: self.pipeline(n)?,
            rest: vec![],
        })
    }

    fn pipeline(&self, n: Node) -> Option<a::Pipeline> {
        match n.kind() {
            "pipeline" => {
                let mut stages = Vec::new();
                for k in all_children(n) {
                    if k.is_named() {
                        if let Some(c) = self.command(k) {
                            stages.push(a::Stage {
                                command: c,
                                pipe_all: false,
                            });
                        }
                    } else if self.text(k) == "|&"
                        && let Some(last) = stages.last_mut()
                    {
                        last.pipe_all = true;
                    }
                }
                Some(a::Pipeline {
                    time: false,
                    bang: false,
                    stages,
                    span: n.byte_range(),
                })
            }
            "negated_command" => {
                let inner = named_children(n).into_iter().next()?;
                let mut p = self.pipeline(inner)?;
                p.bang = true;
                Some(p)
            }
            _ => Some(a::Pipeline {
                time: false,
                bang: false,
                stages: vec![a::Stage {
                    command: self.command(n)?,
                    pipe_all: false,
                }],
                span: n.byte_range(),
            }),
        }
    }

    fn command(&self, n: Node) -> Option<a::Command> {
        if self.depth.get() > 64 {
            return None;
        }
        self.depth.set(self.depth.get() + 1);
        let c = self.command_inner(n);
        self.depth.set(self.depth.get() - 1);
        c
    }

    fn command_inner(&self, n: Node) -> Option<a::Command> {
        Some(match n.kind() {
            "command" => a::Command::Simple(self.simple(n)),
            "variable_assignment" | "variable_assignments" => {
                let mut s = empty_simple(n.byte_range());
                self.assignments(n, &mut s);
                a::Command::Simple(s)
            }
            "declaration_command" | "unset_command" => {
                let mut s = empty_simple(n.byte_range());
                for k in all_children(n) {
                    if !k.is_named() && s.words.is_empty() {
                        s.words.push(lit_word(self.text(k), k.byte_range()));
                    } else if k.kind() == "variable_assignment" {
                        // `NAME=value` as the word bash gives the builtin.
                        let name = k
                            .child_by_field_name("name")
                            .map(|x| self.text(x))
                            .unwrap_or("");
                        let mut parts = vec![a::Part::Lit {
                            text: format!("{name}="),
                            quoted: false,
                        }];
                        if let Some(v) = k.child_by_field_name("value") {
                            parts.extend(self.parts(v, false));
                        }
                        s.words.push(a::Word {
                            parts,
                            span: k.byte_range(),
                        });
                    } else if k.is_named() {
                        s.words.push(self.word(k));
                    }
                }
                a::Command::Simple(s)
            }
            "redirected_statement" => {
                let body = n.child_by_field_name("body");
                let mut redirects = Vec::new();
                for k in named_children(n) {
                    if Some(k) != body
                        && let Some(r) = self.redirect(k)
                    {
                        redirects.push(r);
                    }
                }
                match body.and_then(|b| self.command(b)) {
                    Some(a::Command::Simple(mut s)) => {
                        s.redirects.extend(redirects);
                        s.span = n.byte_range();
                        a::Command::Simple(s)
                    }
                    Some(a::Command::Compound(c, mut r)) => {
                        r.extend(redirects);
                        a::Command::Compound(c, r)
                    }
                    Some(other) => other,
                    None => {
                        let mut s = empty_simple(n.byte_range());
                        s.redirects = redirects;
                        a::Command::Simple(s)
                    }
                }
            }
            "subshell" => {
                a::Command::Compound(Box::new(a::Compound::Subshell(self.statements(n))), vec![])
            }
            "compound_statement" => {
                a::Command::Compound(Box::new(a::Compound::Brace(self.statements(n))), vec![])
            }
            "if_statement" => {
                let mut branches = Vec::new();
                let mut otherwise = None;
                let mut condition: a::List = Vec::new();
                let mut body: a::List = Vec::new();
                let mut in_body = false;
                for k in all_children(n) {
                    let t = self.text(k);
                    if !k.is_named() {
                        if t == "then" {
                            in_body = true;
                        }
                        continue;
                    }
                    match k.kind() {
                        "elif_clause" => {
                            branches
                                .push((std::mem::take(&mut condition), std::mem::take(&mut body)));
                            let (c, b) = self.clause(k);
                            branches.push((c, b));
                        }
                        "else_clause" => otherwise = Some(self.statements(k)),
                        "comment" => {}
                        _ => {
                            if let Some(ao) = self.and_or(k) {
                                let item = a::Item {
                                    and_or: ao,
                                    sep: a::Sep::Semi,
                                };
                                if in_body {
                                    body.push(item)
                                } else {
                                    condition.push(item)
                                }
                            }
                        }
                    }
                }
                if !condition.is_empty() || !body.is_empty() {
                    branches.insert(0, (condition, body));
                }
                branches.retain(|(c, b)| !c.is_empty() || !b.is_empty());
                a::Command::Compound(
                    Box::new(a::Compound::If {
                        branches,
                        otherwise,
                    }),
                    vec![],
                )
            }
            "while_statement" => {
                let condition = n
                    .child_by_field_name("condition")
                    .map(|c| self.statements_of(c))
                    .unwrap_or_default();
                let body = n
                    .child_by_field_name("body")
                    .map(|b| self.statements(b))
                    .unwrap_or_default();
                let until = all_children(n)
                    .first()
                    .is_some_and(|k| self.text(*k) == "until");
                a::Command::Compound(
                    Box::new(a::Compound::While {
                        until,
                        condition,
                        body,
                    }),
                    vec![],
                )
            }
            "for_statement" => {
                let var = n
                    .child_by_field_name("variable")
                    .map(|v| self.text(v).to_string())
                    .unwrap_or_default();
                let mut c = n.walk();
                let values: Vec<a::Word> = n
                    .children_by_field_name("value", &mut c)
                    .map(|v| self.word(v))
                    .collect();
                let has_in = all_children(n)
                    .iter()
                    .any(|k| !k.is_named() && self.text(*k) == "in");
                let body = n
                    .child_by_field_name("body")
                    .map(|b| self.statements(b))
                    .unwrap_or_default();
                let select = all_children(n)
                    .first()
                    .is_some_and(|k| self.text(*k) == "select");
                a::Command::Compound(
                    Box::new(a::Compound::For {
                        select,
                        var,
                        words: has_in.then_some(values),
                        body,
                    }),
                    vec![],
                )
            }
            "c_style_for_statement" => {
                let body = n
                    .child_by_field_name("body")
                    .map(|b| self.statements(b))
                    .unwrap_or_default();
                a::Command::Compound(
                    Box::new(a::Compound::ArithFor {
                        parts: vec![],
                        body,
                    }),
                    vec![],
                )
            }
            "case_statement" => {
                let subject = n
                    .child_by_field_name("value")
                    .map(|v| self.word(v))
                    .unwrap_or_default();
                let arms = named_children(n)
                    .into_iter()
                    .filter(|k| k.kind() == "case_item")
                    .map(|item| {
                        let mut c = item.walk();
                        let patterns: Vec<a::Word> = item
                            .children_by_field_name("value", &mut c)
                            .map(|v| self.word(v))
                            .collect();
                        a::CaseArm {
                            patterns,
                            body: self.statements(item),
                        }
                    })
                    .collect();
                a::Command::Compound(Box::new(a::Compound::Case { subject, arms }), vec![])
            }
            "function_definition" => {
                let name = n
                    .child_by_field_name("name")
                    .map(|v| self.text(v).to_string())
                    .unwrap_or_default();
                let body = n
                    .child_by_field_name("body")
                    .and_then(|b| self.command(b))?;
                a::Command::Function(Box::new(a::Function {
                    name,
                    body,
                    span: n.byte_range(),
                }))
            }
            "test_command" => {
                let text = self.text(n);
                if text.starts_with("[[") {
                    let mut words = Vec::new();
                    self.leaves(n, &mut words);
                    a::Command::Compound(Box::new(a::Compound::Cond(words)), vec![])
                } else {
                    let mut s = empty_simple(n.byte_range());
                    self.leaves(n, &mut s.words);
                    a::Command::Simple(s)
                }
            }
            "negated_command" | "pipeline" | "list" => {
                let ao = self.and_or(n)?;
                a::Command::Compound(
                    Box::new(a::Compound::Brace(vec![a::Item {
                        and_or: ao,
                        sep: a::Sep::End,
                    }])),
                    vec![],
                )
            }
            _ => return None,
        })
    }

    /// The condition and body of an `elif`.
    fn clause(&self, n: Node) -> (a::List, a::List) {
        let mut condition = Vec::new();
        let mut body = Vec::new();
        let mut in_body = false;
        for k in all_children(n) {
            if !k.is_named() {
                if self.text(k) == "then" {
                    in_body = true;
                }
                continue;
            }
            if let Some(ao) = self.and_or(k) {
                let item = a::Item {
                    and_or: ao,
                    sep: a::Sep::Semi,
                };
                if in_body {
                    body.push(item)
                } else {
                    condition.push(item)
                }
            }
        }
        (condition, body)
    }

    /// A node that is one statement or holds several.
    fn statements_of(&self, n: Node) -> a::List {
        if Self::is_statement(n.kind()) && !matches!(n.kind(), "do_group" | "compound_statement") {
            self.and_or(n)
                .map(|ao| {
                    vec![a::Item {
                        and_or: ao,
                        sep: a::Sep::Semi,
                    }]
                })
                .unwrap_or_default()
        } else {
            self.statements(n)
        }
    }

    /// The words of a test command (`[[ … ]]`), leaf by leaf.
    fn leaves(&self, n: Node, out: &mut Vec<a::Word>) {
        for k in named_children(n) {
            match k.kind() {
                "binary_expression"
                | "unary_expression"
                | "parenthesized_expression"
                | "test_operator" => {
                    if k.kind() == "test_operator" {
                        out.push(lit_word(self.text(k), k.byte_range()));
                    } else {
                        self.leaves(k, out);
                    }
                }
                _ => out.push(self.word(k)),
            }
        }
    }

    fn assignments(&self, n: Node, s: &mut a::Simple) {
        if n.kind() == "variable_assignments" {
            for k in named_children(n) {
                self.assignments(k, s);
            }
            return;
        }
        let name_node = n.child_by_field_name("name");
        let (name, index) = match name_node {
            Some(nn) if nn.kind() == "subscript" => (
                nn.child_by_field_name("name")
                    .map(|x| self.text(x).to_string())
                    .unwrap_or_default(),
                nn.child_by_field_name("index").map(|i| self.word(i)),
            ),
            Some(nn) => (self.text(nn).to_string(), None),
            None => (String::new(), None),
        };
        let append = all_children(n)
            .iter()
            .any(|k| !k.is_named() && self.text(*k) == "+=");
        let value = match n.child_by_field_name("value") {
            Some(v) if v.kind() == "array" => a::Value::Array(
                named_children(v)
                    .into_iter()
                    .map(|e| (None, self.word(e)))
                    .collect(),
            ),
            Some(v) => a::Value::Scalar(self.word(v)),
            None => a::Value::Scalar(a::Word::default()),
        };
        s.assignments.push(a::Assignment {
            name,
            index,
            append,
            value,
            span: n.byte_range(),
        });
    }

    fn simple(&self, n: Node) -> a::Simple {
        let mut s = empty_simple(n.byte_range());
        for k in named_children(n) {
            match k.kind() {
                "variable_assignment" | "variable_assignments" => self.assignments(k, &mut s),
                "file_redirect" | "heredoc_redirect" | "herestring_redirect" => {
                    if let Some(r) = self.redirect(k) {
                        s.redirects.push(r);
                    }
                }
                "command_name" => s.words.push(a::Word {
                    parts: self.word_parts(named_children(k)),
                    span: k.byte_range(),
                }),
                "comment" => {}
                _ => s.words.push(self.word(k)),
            }
        }
        // A heredoc's body follows the line; the command ends where its line does.
        if let Some(r) = s
            .redirects
            .iter()
            .find(|r| matches!(r.target, a::Target::Heredoc(_)))
        {
            s.span.end = s.span.end.min(r.span.end.max(s.span.start));
        }
        s
    }

    fn redirect(&self, n: Node) -> Option<a::Redirect> {
        let fd = n
            .child_by_field_name("descriptor")
            .and_then(|d| self.text(d).parse::<u32>().ok())
            .map(a::Fd::Number);
        let op_text = all_children(n)
            .into_iter()
            .find(|k| !k.is_named())
            .map(|k| self.text(k))
            .unwrap_or(">");
        match n.kind() {
            "file_redirect" => {
                let op = match op_text {
                    "<" => a::RedirOp::In,
                    ">>" => a::RedirOp::Append,
                    ">|" => a::RedirOp::Clobber,
                    "<>" => a::RedirOp::ReadWrite,
                    "<&" | "<&-" => a::RedirOp::DupIn,
                    ">&" | ">&-" => a::RedirOp::DupOut,
                    "&>" => a::RedirOp::OutErr,
                    "&>>" => a::RedirOp::AppendOutErr,
                    _ => a::RedirOp::Out,
                };
                let dest = n.child_by_field_name("destination");
                let word = match dest {
                    Some(d) => self.word(d),
                    None if op_text.ends_with('-') => lit_word("-", n.byte_range()),
                    None => a::Word::default(),
                };
                Some(a::Redirect {
                    fd,
                    op,
                    target: a::Target::Word(word),
                    span: n.byte_range(),
                })
            }
            "herestring_redirect" => {
                let w = named_children(n)
                    .into_iter()
                    .find(|k| k.kind() != "file_descriptor")
                    .map(|k| self.word(k))
                    .unwrap_or_default();
                Some(a::Redirect {
                    fd,
                    op: a::RedirOp::HereString,
                    target: a::Target::Word(w),
                    span: n.byte_range(),
                })
            }
            "heredoc_redirect" => {
                let kids = named_children(n);
                let start = kids.iter().find(|k| k.kind() == "heredoc_start")?;
                let delimiter_raw = self.text(*start);
                let quoted = delimiter_raw.contains(['\'', '"', '\\']);
                let delimiter: String = delimiter_raw
                    .chars()
                    .filter(|c| !matches!(c, '\'' | '"' | '\\'))
                    .collect();
                let body = kids.iter().find(|k| k.kind() == "heredoc_body");
                let body_word = match body {
                    Some(b) if quoted => a::Word {
                        parts: vec![a::Part::Lit {
                            text: self.text(*b).to_string(),
                            quoted: true,
                        }],
                        span: b.byte_range(),
                    },
                    Some(b) => {
                        let mut parts = vec![a::Part::Lit {
                            text: String::new(),
                            quoted: true,
                        }];
                        let mut at = b.start_byte();
                        for k in named_children(*b) {
                            if k.start_byte() > at {
                                parts.push(a::Part::Lit {
                                    text: self.src[at..k.start_byte()].to_string(),
                                    quoted: true,
                                });
                            }
                            match k.kind() {
                                "heredoc_content" => parts.push(a::Part::Lit {
                                    text: self.text(k).to_string(),
                                    quoted: true,
                                }),
                                _ => parts.extend(self.parts(k, true)),
                            }
                            at = k.end_byte();
                        }
                        if b.end_byte() > at {
                            parts.push(a::Part::Lit {
                                text: self.src[at..b.end_byte()].to_string(),
                                quoted: true,
                            });
                        }
                        a::Word {
                            parts,
                            span: b.byte_range(),
                        }
                    }
                    None => a::Word::default(),
                };
                Some(a::Redirect {
                    fd,
                    op: a::RedirOp::Heredoc,
                    target: a::Target::Heredoc(a::Heredoc {
                        delimiter,
                        quoted,
                        strip_tabs: op_text == "<<-",
                        body: body_word,
                    }),
                    span: n.start_byte()..start.end_byte(),
                })
            }
            _ => None,
        }
    }

    fn word(&self, n: Node) -> a::Word {
        a::Word {
            parts: self.word_parts(vec![n]),
            span: n.byte_range(),
        }
    }

    /// The parts of a word made of `nodes`; only its very start may be a tilde prefix.
    fn word_parts(&self, nodes: Vec<Node>) -> Vec<a::Part> {
        let mut parts = Vec::new();
        for n in nodes {
            let mut p = self.parts(n, false);
            if !parts.is_empty()
                && let Some(a::Part::Tilde(prefix)) = p.first().cloned()
            {
                p[0] = a::Part::Lit {
                    text: format!("~{prefix}"),
                    quoted: false,
                };
            }
            parts.extend(p);
        }
        parts
    }

    /// The parts of a word-like node.
    fn parts(&self, n: Node, quoted: bool) -> Vec<a::Part> {
        let text = self.text(n);
        if self.depth.get() > 64 {
            return vec![a::Part::Lit {
                text: text.to_string(),
                quoted,
            }];
        }
        self.depth.set(self.depth.get() + 1);
        let p = self.parts_inner(n, text, quoted);
        self.depth.set(self.depth.get() - 1);
        p
    }

    fn parts_inner(&self, n: Node, text: &str, quoted: bool) -> Vec<a::Part> {
        match n.kind() {
            "word" | "number" | "brace_expression" | "regex" | "test_operator"
            | "variable_name" | "file_descriptor" => {
                if quoted {
                    vec![a::Part::Lit {
                        text: text.to_string(),
                        quoted: true,
                    }]
                } else {
                    unquoted(text)
                }
            }
            "extglob_pattern" => vec![a::Part::ExtGlob(text.to_string())],
            "raw_string" => vec![a::Part::Lit {
                text: text
                    .trim_start_matches('\'')
                    .trim_end_matches('\'')
                    .to_string(),
                quoted: true,
            }],
            "ansi_c_string" => vec![a::Part::Lit {
                text: agentbash::shell::parse::expand::decode_escapes(
                    text.strip_prefix("$'")
                        .and_then(|t| t.strip_suffix('\''))
                        .unwrap_or(text),
                ),
                quoted: true,
            }],
            "string" | "translated_string" => {
                let inner = if n.kind() == "translated_string" {
                    named_children(n).into_iter().next().unwrap_or(n)
                } else {
                    n
                };
                let mut parts = vec![a::Part::Lit {
                    text: String::new(),
                    quoted: true,
                }];
                let mut at = inner.start_byte() + 1;
                let end = inner.end_byte().saturating_sub(1).max(at);
                for k in named_children(inner) {
                    if k.start_byte() > at {
                        parts.push(a::Part::Lit {
                            text: dq_unescape(&self.src[at..k.start_byte()]),
                            quoted: true,
                        });
                    }
                    match k.kind() {
                        "string_content" => parts.push(a::Part::Lit {
                            text: dq_unescape(self.text(k)),
                            quoted: true,
                        }),
                        _ => parts.extend(self.parts(k, true)),
                    }
                    at = k.end_byte();
                }
                if end > at {
                    parts.push(a::Part::Lit {
                        text: dq_unescape(&self.src[at..end]),
                        quoted: true,
                    });
                }
                parts
            }
            "concatenation" if quoted => named_children(n)
                .into_iter()
                .flat_map(|k| self.parts(k, true))
                .collect(),
            "concatenation" => self.word_parts(named_children(n)),
            "simple_expansion" => {
                let name = text.trim_start_matches('$');
                vec![a::Part::Param {
                    param: Box::new(simple_param(name)),
                    quoted,
                }]
            }
            "expansion" => vec![a::Part::Param {
                param: Box::new(self.expansion(n)),
                quoted,
            }],
            "command_substitution" => {
                let body = self.statements(n);
                let backtick = text.starts_with('`');
                // A backtick substitution's script is its own text (see the ast).
                let src: Arc<str> = if backtick {
                    Arc::from(text.trim_start_matches('`').trim_end_matches('`'))
                } else {
                    self.arc.clone()
                };
                vec![a::Part::CmdSub {
                    script: Box::new(a::Script { src, body }),
                    quoted,
                    backtick,
                }]
            }
            "process_substitution" => vec![a::Part::ProcSub {
                script: Box::new(a::Script {
                    src: self.arc.clone(),
                    body: self.statements(n),
                }),
                output: text.starts_with('>'),
            }],
            "arithmetic_expansion" => vec![a::Part::Arith {
                expr: Box::new(a::Word {
                    parts: vec![a::Part::Lit {
                        text: text
                            .trim_start_matches("$((")
                            .trim_end_matches("))")
                            .to_string(),
                        quoted: false,
                    }],
                    span: n.byte_range(),
                }),
                quoted,
            }],
            _ => vec![a::Part::Lit {
                text: text.to_string(),
                quoted,
            }],
        }
    }

    /// `${…}`: the name, then the operator and its word, read from the node's parts.
    fn expansion(&self, n: Node) -> a::Param {
        let text = self.text(n);
        let inner = text
            .strip_prefix("${")
            .and_then(|t| t.strip_suffix('}'))
            .unwrap_or("");
        let (length, inner) = match inner.strip_prefix('#') {
            Some(rest) if !rest.is_empty() => (true, rest),
            _ => (false, inner),
        };
        let (indirect, inner) = match inner.strip_prefix('!') {
            Some(rest) if !rest.is_empty() => (true, rest),
            _ => (false, inner),
        };
        let name_len = inner
            .char_indices()
            .find(|(i, c)| {
                !(c.is_ascii_alphanumeric() || *c == '_')
                    || (*i == 0 && "@*#?$!-".contains(*c) && false)
            })
            .map_or(inner.len(), |(i, _)| i);
        let (name_text, rest) = if name_len == 0 && !inner.is_empty() {
            inner.split_at(inner.chars().next().map_or(0, char::len_utf8))
        } else {
            inner.split_at(name_len)
        };
        let mut param = simple_param(name_text);
        param.length = length;
        param.indirect = indirect;
        let (index, rest) = match rest.strip_prefix('[').and_then(|r| r.split_once(']')) {
            Some((i, r)) => (Some(i), r),
            None => (None, rest),
        };
        param.index = index.map(|i| lit_word(i, 0..0));
        // The operator's word, from the node's named children after the name.
        let arg = || -> a::Word {
            let kids: Vec<Node> = named_children(n)
                .into_iter()
                .filter(|k| {
                    !matches!(
                        k.kind(),
                        "variable_name" | "special_variable_name" | "subscript"
                    )
                })
                .collect();
            a::Word {
                parts: kids
                    .into_iter()
                    .flat_map(|k| self.parts(k, false))
                    .collect(),
                span: 0..0,
            }
        };
        let ops: [(&str, fn(bool, a::Word) -> a::ParamOp); 8] = [
            (":-", |c, w| a::ParamOp::Default { colon: c, word: w }),
            (":=", |c, w| a::ParamOp::Assign { colon: c, word: w }),
            (":?", |c, w| a::ParamOp::Error { colon: c, word: w }),
            (":+", |c, w| a::ParamOp::Alternative { colon: c, word: w }),
            ("-", |c, w| a::ParamOp::Default { colon: c, word: w }),
            ("=", |c, w| a::ParamOp::Assign { colon: c, word: w }),
            ("?", |c, w| a::ParamOp::Error { colon: c, word: w }),
            ("+", |c, w| a::ParamOp::Alternative { colon: c, word: w }),
        ];
        param.op = if rest.is_empty() {
            a::ParamOp::None
        } else if let Some((op, f)) = ops.iter().find(|(op, _)| rest.starts_with(op)) {
            f(op.starts_with(':'), arg())
        } else if let Some(p) = rest.strip_prefix("^^").or_else(|| rest.strip_prefix(",,")) {
            a::ParamOp::Case {
                upper: rest.starts_with('^'),
                all: true,
                pattern: lit_word(p, 0..0),
            }
        } else if let Some(p) = rest.strip_prefix('^').or_else(|| rest.strip_prefix(',')) {
            a::ParamOp::Case {
                upper: rest.starts_with('^'),
                all: false,
                pattern: lit_word(p, 0..0),
            }
        } else if let Some(p) = rest.strip_prefix("##") {
            a::ParamOp::RemovePrefix {
                longest: true,
                pattern: lit_or(p, arg()),
            }
        } else if let Some(p) = rest.strip_prefix('#') {
            a::ParamOp::RemovePrefix {
                longest: false,
                pattern: lit_or(p, arg()),
            }
        } else if let Some(p) = rest.strip_prefix("%%") {
            a::ParamOp::RemoveSuffix {
                longest: true,
                pattern: lit_or(p, arg()),
            }
        } else if let Some(p) = rest.strip_prefix('%') {
            a::ParamOp::RemoveSuffix {
                longest: false,
                pattern: lit_or(p, arg()),
            }
        } else if let Some(p) = rest.strip_prefix(':') {
            let (o, l) = match p.split_once(':') {
                Some((o, l)) => (o, Some(l)),
                None => (p, None),
            };
            a::ParamOp::Substring {
                offset: lit_word(o.trim(), 0..0),
                length: l.map(|l| lit_word(l.trim(), 0..0)),
            }
        } else if let Some(p) = rest.strip_prefix('/') {
            let (all, anchor, p) = match p.chars().next() {
                Some('/') => (true, a::Anchor::None, &p[1..]),
                Some('#') => (false, a::Anchor::Start, &p[1..]),
                Some('%') => (false, a::Anchor::End, &p[1..]),
                _ => (false, a::Anchor::None, p),
            };
            let (pat, rep) = p.split_once('/').unwrap_or((p, ""));
            a::ParamOp::Replace {
                all,
                anchor,
                pattern: lit_word(pat, 0..0),
                replacement: lit_word(rep, 0..0),
            }
        } else {
            a::ParamOp::Unknown
        };
        param
    }
}

/// A literal word when the operator's text is plain, else the node's parts.
fn lit_or(text: &str, parts: a::Word) -> a::Word {
    if text
        .chars()
        .all(|c| !matches!(c, '$' | '`' | '"' | '\'' | '\\'))
    {
        lit_word(text, 0..0)
    } else {
        parts
    }
}

fn simple_param(name: &str) -> a::Param {
    let pname = match name {
        "@" | "*" | "#" | "?" | "-" | "$" | "!" | "0" => {
            a::ParamName::Special(name.chars().next().unwrap_or('?'))
        }
        n if !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()) => {
            a::ParamName::Positional(n.parse().unwrap_or(0))
        }
        n => a::ParamName::Var(n.to_string()),
    };
    a::Param {
        name: pname,
        index: None,
        length: false,
        indirect: false,
        op: a::ParamOp::None,
    }
}

/// An unquoted word's text: backslashes quote the next character, `~` at the start is
/// a tilde prefix.
fn unquoted(text: &str) -> Vec<a::Part> {
    let mut parts = Vec::new();
    let mut lit = String::new();
    let mut chars = text.char_indices().peekable();
    if text.starts_with('~') {
        let end = text.find('/').unwrap_or(text.len());
        let prefix = &text[1..end];
        if prefix
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-+.".contains(c))
        {
            parts.push(a::Part::Tilde(prefix.to_string()));
            while chars.peek().is_some_and(|(i, _)| *i < end) {
                chars.next();
            }
        }
    }
    while let Some((_, c)) = chars.next() {
        if c == '\\' {
            if let Some((_, n)) = chars.next() {
                if !lit.is_empty() {
                    parts.push(a::Part::Lit {
                        text: std::mem::take(&mut lit),
                        quoted: false,
                    });
                }
                if n != '\n' {
                    parts.push(a::Part::Lit {
                        text: n.to_string(),
                        quoted: true,
                    });
                }
            }
            continue;
        }
        lit.push(c);
    }
    if !lit.is_empty() {
        parts.push(a::Part::Lit {
            text: lit,
            quoted: false,
        });
    }
    parts
}

/// The escapes of double quotes: `\$`, `` \` ``, `\"`, `\\`, `\` + newline.
fn dq_unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(&n) = chars.peek()
            && matches!(n, '$' | '`' | '"' | '\\' | '\n')
        {
            chars.next();
            if n != '\n' {
                out.push(n);
            }
            continue;
        }
        out.push(c);
    }
    out
}

fn lit_word(s: &str, span: std::ops::Range<usize>) -> a::Word {
    a::Word {
        parts: vec![a::Part::Lit {
            text: s.to_string(),
            quoted: false,
        }],
        span,
    }
}

fn empty_simple(span: std::ops::Range<usize>) -> a::Simple {
    a::Simple {
        assignments: vec![],
        words: vec![],
        redirects: vec![],
        span,
    }
}
