//! brush-parser's syntax tree turned into agentbash's (`shell::parse::ast`), so the
//! same walk, interceptor and guard can judge what brush reads. Words come to brush as
//! raw text; `brush_parser::word::parse` splits them into pieces, which map onto
//! agentbash's parts one to one. brush counts positions in characters; they are turned
//! into byte offsets.

use std::sync::Arc;

use agentbash::shell::parse::ast as a;
use agentbash::shell::parse::{ErrorKind, ParseError, Parsed};
use brush_parser::ast as b;
use brush_parser::word::{
    self, Parameter, ParameterExpr, ParameterTestType, SpecialParameter, SubstringMatchKind,
    WordPiece,
};

struct Conv<'s> {
    src: &'s str,
    /// Byte offset of each character index (and one past the end).
    bytes: Vec<usize>,
    arc: Arc<str>,
    opts: brush_parser::ParserOptions,
}

/// Parses `src` with brush-parser and converts the tree.
pub fn parse(src: &str) -> Parsed {
    let opts = brush_parser::ParserOptions::default();
    let mut p = brush_parser::Parser::new(std::io::Cursor::new(src.as_bytes()), &opts);
    let arc: Arc<str> = Arc::from(src);
    let conv = Conv {
        src,
        bytes: src
            .char_indices()
            .map(|(i, _)| i)
            .chain(std::iter::once(src.len()))
            .collect(),
        arc: arc.clone(),
        opts: opts.clone(),
    };
    match p.parse_program() {
        Ok(program) => {
            let mut body = Vec::new();
            for cc in &program.complete_commands {
                body.extend(conv.list(cc));
            }
            Parsed {
                script: a::Script { src: arc, body },
                error: None,
                rest: src.len(),
            }
        }
        Err(e) => Parsed {
            script: a::Script {
                src: arc,
                body: Vec::new(),
            },
            error: Some(ParseError {
                kind: ErrorKind::Unexpected(e.to_string()),
                offset: 0,
                line: 1,
                column: 1,
            }),
            rest: 0,
        },
    }
}

impl Conv<'_> {
    fn byte(&self, char_index: usize) -> usize {
        self.bytes
            .get(char_index)
            .copied()
            .unwrap_or(self.src.len())
    }

    fn span(&self, loc: Option<&brush_parser::SourceSpan>) -> std::ops::Range<usize> {
        match loc {
            Some(l) => self.byte(l.start.index)..self.byte(l.end.index),
            None => 0..0,
        }
    }

    fn list(&self, l: &b::CompoundList) -> a::List {
        l.0.iter()
            .map(|item| a::Item {
                and_or: self.and_or(&item.0),
                sep: match item.1 {
                    b::SeparatorOperator::Async => a::Sep::Amp,
                    b::SeparatorOperator::Sequence => a::Sep::Semi,
                },
            })
            .collect()
    }

    fn and_or(&self, ao: &b::AndOrList) -> a::AndOr {
        a::AndOr {
            first: self.pipeline(&ao.first),
            rest: ao
                .additional
                .iter()
                .map(|x| match x {
                    b::AndOr::And(p) => (a::Connector::And, self.pipeline(p)),
                    b::AndOr::Or(p) => (a::Connector::Or, self.pipeline(p)),
                })
                .collect(),
        }
    }

    fn pipeline(&self, p: &b::Pipeline) -> a::Pipeline {
        a::Pipeline {
            time: p.timed.is_some(),
            bang: p.bang,
            stages: p
                .seq
                .iter()
                .map(|c| a::Stage {
                    command: self.command(c),
                    pipe_all: false,
                })
                .collect(),
            span: 0..0,
        }
    }

    fn command(&self, c: &b::Command) -> a::Command {
        match c {
            b::Command::Simple(s) => a::Command::Simple(self.simple(s)),
            b::Command::Compound(c, r) => {
                a::Command::Compound(Box::new(self.compound(c)), self.redirect_list(r.as_ref()))
            }
            b::Command::Function(f) => {
                let body = a::Command::Compound(
                    Box::new(self.compound(&f.body.0)),
                    self.redirect_list(f.body.1.as_ref()),
                );
                a::Command::Function(Box::new(a::Function {
                    name: f.fname.value.clone(),
                    body,
                    span: 0..0,
                }))
            }
            b::Command::ExtendedTest(t, r) => {
                let mut words = Vec::new();
                self.test_words(&t.expr, &mut words);
                a::Command::Compound(
                    Box::new(a::Compound::Cond(words)),
                    self.redirect_list(r.as_ref()),
                )
            }
        }
    }

    fn test_words(&self, e: &b::ExtendedTestExpr, out: &mut Vec<a::Word>) {
        match e {
            b::ExtendedTestExpr::And(x, y) | b::ExtendedTestExpr::Or(x, y) => {
                self.test_words(x, out);
                self.test_words(y, out);
            }
            b::ExtendedTestExpr::Not(x) | b::ExtendedTestExpr::Parenthesized(x) => {
                self.test_words(x, out)
            }
            b::ExtendedTestExpr::UnaryTest(_, w) => out.push(self.word(w)),
            b::ExtendedTestExpr::BinaryTest(_, x, y) => {
                out.push(self.word(x));
                out.push(self.word(y));
            }
        }
    }

    fn compound(&self, c: &b::CompoundCommand) -> a::Compound {
        match c {
            b::CompoundCommand::BraceGroup(g) => a::Compound::Brace(self.list(&g.list)),
            b::CompoundCommand::Subshell(s) => a::Compound::Subshell(self.list(&s.list)),
            b::CompoundCommand::IfClause(i) => {
                let mut branches = vec![(self.list(&i.condition), self.list(&i.then))];
                let mut otherwise = None;
                for e in i.elses.iter().flatten() {
                    match &e.condition {
                        Some(c) => branches.push((self.list(c), self.list(&e.body))),
                        None => otherwise = Some(self.list(&e.body)),
                    }
                }
                a::Compound::If {
                    branches,
                    otherwise,
                }
            }
            b::CompoundCommand::WhileClause(w) | b::CompoundCommand::UntilClause(w) => {
                a::Compound::While {
                    until: matches!(c, b::CompoundCommand::UntilClause(_)),
                    condition: self.list(&w.0),
                    body: self.list(&w.1.list),
                }
            }
            b::CompoundCommand::ForClause(f) => a::Compound::For {
                select: false,
                var: f.variable_name.clone(),
                words: f
                    .values
                    .as_ref()
                    .map(|v| v.iter().map(|w| self.word(w)).collect()),
                body: self.list(&f.body.list),
            },
            b::CompoundCommand::ArithmeticForClause(f) => a::Compound::ArithFor {
                parts: [&f.initializer, &f.condition, &f.updater]
                    .iter()
                    .map(|e| self.arith(e.as_ref().map_or("", |e| e.value.as_str())))
                    .collect(),
                body: self.list(&f.body.list),
            },
            b::CompoundCommand::CaseClause(c) => a::Compound::Case {
                subject: self.word(&c.value),
                arms: c
                    .cases
                    .iter()
                    .map(|arm| a::CaseArm {
                        patterns: arm.patterns.iter().map(|w| self.word(w)).collect(),
                        body: arm.cmd.as_ref().map(|l| self.list(l)).unwrap_or_default(),
                    })
                    .collect(),
            },
            b::CompoundCommand::Arithmetic(e) => a::Compound::Arith(self.arith(&e.expr.value)),
            b::CompoundCommand::Coprocess(c) => a::Compound::Brace(vec![a::Item {
                and_or: a::AndOr {
                    first: a::Pipeline {
                        time: false,
                        bang: false,
                        stages: vec![a::Stage {
                            command: a::Command::Coproc(Box::new(a::Coproc {
                                name: c.name.as_ref().map(|w| w.value.clone()),
                                body: self.command(&c.body),
                            })),
                            pipe_all: false,
                        }],
                        span: 0..0,
                    },
                    rest: vec![],
                },
                sep: a::Sep::End,
            }]),
        }
    }

    fn arith(&self, text: &str) -> a::Word {
        a::Word {
            parts: self.pieces(text, false),
            span: 0..0,
        }
    }

    fn redirect_list(&self, r: Option<&b::RedirectList>) -> Vec<a::Redirect> {
        r.map(|r| r.0.iter().filter_map(|x| self.redirect(x)).collect())
            .unwrap_or_default()
    }

    fn redirect(&self, r: &b::IoRedirect) -> Option<a::Redirect> {
        let fd = |f: &Option<b::IoFd>| f.map(|n| a::Fd::Number(n as u32));
        Some(match r {
            b::IoRedirect::File(f, kind, target) => {
                let op = match kind {
                    b::IoFileRedirectKind::Read => a::RedirOp::In,
                    b::IoFileRedirectKind::Write => a::RedirOp::Out,
                    b::IoFileRedirectKind::Append => a::RedirOp::Append,
                    b::IoFileRedirectKind::ReadAndWrite => a::RedirOp::ReadWrite,
                    b::IoFileRedirectKind::Clobber => a::RedirOp::Clobber,
                    b::IoFileRedirectKind::DuplicateInput => a::RedirOp::DupIn,
                    b::IoFileRedirectKind::DuplicateOutput => a::RedirOp::DupOut,
                };
                let word = match target {
                    b::IoFileRedirectTarget::Filename(w)
                    | b::IoFileRedirectTarget::Duplicate(w) => self.word(w),
                    b::IoFileRedirectTarget::Fd(n) => literal(&n.to_string()),
                    b::IoFileRedirectTarget::ProcessSubstitution(kind, sub) => a::Word {
                        parts: vec![a::Part::ProcSub {
                            script: Box::new(a::Script {
                                src: self.arc.clone(),
                                body: self.list(&sub.list),
                            }),
                            output: matches!(kind, b::ProcessSubstitutionKind::Write),
                        }],
                        span: 0..0,
                    },
                };
                a::Redirect {
                    fd: fd(f),
                    op,
                    target: a::Target::Word(word),
                    span: 0..0,
                }
            }
            b::IoRedirect::HereDocument(f, h) => a::Redirect {
                fd: fd(f),
                op: a::RedirOp::Heredoc,
                target: a::Target::Heredoc(a::Heredoc {
                    delimiter: h.here_end.value.clone(),
                    quoted: !h.requires_expansion,
                    strip_tabs: h.remove_tabs,
                    body: if h.requires_expansion {
                        a::Word {
                            parts: self.heredoc_pieces(&h.doc.value),
                            span: 0..0,
                        }
                    } else {
                        a::Word {
                            parts: vec![a::Part::Lit {
                                text: h.doc.value.clone(),
                                quoted: true,
                            }],
                            span: 0..0,
                        }
                    },
                }),
                span: 0..0,
            },
            b::IoRedirect::HereString(f, w) => a::Redirect {
                fd: fd(f),
                op: a::RedirOp::HereString,
                target: a::Target::Word(self.word(w)),
                span: 0..0,
            },
            b::IoRedirect::OutputAndError(w, append) => a::Redirect {
                fd: None,
                op: if *append {
                    a::RedirOp::AppendOutErr
                } else {
                    a::RedirOp::OutErr
                },
                target: a::Target::Word(self.word(w)),
                span: 0..0,
            },
        })
    }

    fn simple(&self, s: &b::SimpleCommand) -> a::Simple {
        let mut out = a::Simple {
            assignments: Vec::new(),
            words: Vec::new(),
            redirects: Vec::new(),
            span: 0..0,
        };
        let mut spans: Vec<std::ops::Range<usize>> = Vec::new();
        let mut item = |x: &b::CommandPrefixOrSuffixItem, prefix: bool, out: &mut a::Simple| match x
        {
            b::CommandPrefixOrSuffixItem::IoRedirect(r) => out.redirects.extend(self.redirect(r)),
            b::CommandPrefixOrSuffixItem::Word(w) => {
                spans.push(self.span(w.loc.as_ref()));
                out.words.push(self.word(w));
            }
            b::CommandPrefixOrSuffixItem::AssignmentWord(asg, w) => {
                spans.push(self.span(Some(&asg.loc)));
                let converted = self.assignment(asg);
                if prefix {
                    out.assignments.push(converted);
                } else {
                    out.words.push(self.word(w));
                }
            }
            b::CommandPrefixOrSuffixItem::ProcessSubstitution(kind, sub) => {
                out.words.push(a::Word {
                    parts: vec![a::Part::ProcSub {
                        script: Box::new(a::Script {
                            src: self.arc.clone(),
                            body: self.list(&sub.list),
                        }),
                        output: matches!(kind, b::ProcessSubstitutionKind::Write),
                    }],
                    span: 0..0,
                })
            }
        };
        for x in s.prefix.iter().flat_map(|p| p.0.iter()) {
            item(x, true, &mut out);
        }
        if let Some(w) = &s.word_or_name {
            let word = self.word(w);
            item(
                &b::CommandPrefixOrSuffixItem::Word(w.clone()),
                false,
                &mut out,
            );
            let _ = word;
        }
        for x in s.suffix.iter().flat_map(|p| p.0.iter()) {
            item(x, false, &mut out);
        }
        drop(item);
        let start = spans.iter().map(|r| r.start).min().unwrap_or(0);
        let end = spans.iter().map(|r| r.end).max().unwrap_or(0);
        out.span = start..end.max(start);
        out
    }

    fn assignment(&self, asg: &b::Assignment) -> a::Assignment {
        let (name, index) = match &asg.name {
            b::AssignmentName::VariableName(n) => (n.clone(), None),
            b::AssignmentName::ArrayElementName(n, i) => (n.clone(), Some(literal(i))),
        };
        let value = match &asg.value {
            b::AssignmentValue::Scalar(w) => a::Value::Scalar(self.word(w)),
            b::AssignmentValue::Array(items) => a::Value::Array(
                items
                    .iter()
                    .map(|(k, v)| (k.as_ref().map(|k| self.word(k)), self.word(v)))
                    .collect(),
            ),
        };
        a::Assignment {
            name,
            index,
            append: asg.append,
            value,
            span: self.span(Some(&asg.loc)),
        }
    }

    fn word(&self, w: &b::Word) -> a::Word {
        a::Word {
            parts: self.pieces(&w.value, false),
            span: self.span(w.loc.as_ref()),
        }
    }

    fn pieces(&self, text: &str, quoted: bool) -> Vec<a::Part> {
        match word::parse(text, &self.opts) {
            Ok(pieces) => {
                let mut out = Vec::new();
                for p in pieces {
                    self.piece(&p.piece, quoted, &mut out);
                }
                out
            }
            Err(_) => vec![a::Part::Lit {
                text: text.to_string(),
                quoted,
            }],
        }
    }

    fn heredoc_pieces(&self, text: &str) -> Vec<a::Part> {
        match word::parse_heredoc(text, &self.opts) {
            Ok(pieces) => {
                let mut out = vec![a::Part::Lit {
                    text: String::new(),
                    quoted: true,
                }];
                for p in pieces {
                    self.piece(&p.piece, true, &mut out);
                }
                out
            }
            Err(_) => vec![a::Part::Lit {
                text: text.to_string(),
                quoted: true,
            }],
        }
    }

    fn piece(&self, p: &WordPiece, quoted: bool, out: &mut Vec<a::Part>) {
        match p {
            WordPiece::Text(t) => out.push(a::Part::Lit {
                text: t.clone(),
                quoted,
            }),
            WordPiece::SingleQuotedText(t) => out.push(a::Part::Lit {
                text: t.clone(),
                quoted: true,
            }),
            WordPiece::AnsiCQuotedText(t) => out.push(a::Part::Lit {
                text: agentbash::shell::parse::expand::decode_escapes(t),
                quoted: true,
            }),
            WordPiece::DoubleQuotedSequence(ps) | WordPiece::GettextDoubleQuotedSequence(ps) => {
                out.push(a::Part::Lit {
                    text: String::new(),
                    quoted: true,
                });
                for x in ps {
                    self.piece(&x.piece, true, out);
                }
            }
            WordPiece::TildeExpansion(t) => out.push(a::Part::Tilde(match t {
                word::TildeExpr::Home => String::new(),
                word::TildeExpr::UserHome(u) => u.clone(),
                word::TildeExpr::WorkingDir => "+".into(),
                word::TildeExpr::OldWorkingDir => "-".into(),
                word::TildeExpr::NthDirFromTopOfDirStack { n, .. } => format!("+{n}"),
                word::TildeExpr::NthDirFromBottomOfDirStack { n } => format!("-{n}"),
            })),
            WordPiece::ParameterExpansion(e) => out.push(a::Part::Param {
                param: Box::new(self.param(e)),
                quoted,
            }),
            WordPiece::CommandSubstitution(s) | WordPiece::BackquotedCommandSubstitution(s) => {
                let inner = parse(s);
                out.push(a::Part::CmdSub {
                    script: Box::new(inner.script),
                    quoted,
                    backtick: matches!(p, WordPiece::BackquotedCommandSubstitution(_)),
                });
            }
            WordPiece::EscapeSequence(s) => out.push(a::Part::Lit {
                text: s.strip_prefix('\\').unwrap_or(s).to_string(),
                quoted: true,
            }),
            WordPiece::ArithmeticExpression(e) => out.push(a::Part::Arith {
                expr: Box::new(self.arith(&e.value)),
                quoted,
            }),
        }
    }

    fn param(&self, e: &ParameterExpr) -> a::Param {
        let arg = |s: &Option<String>| a::Word {
            parts: s
                .as_deref()
                .map(|s| self.pieces(s, false))
                .unwrap_or_default(),
            span: 0..0,
        };
        let colon = |t: &ParameterTestType| matches!(t, ParameterTestType::UnsetOrNull);
        let (parameter, indirect, op, length) = match e {
            ParameterExpr::Parameter {
                parameter,
                indirect,
            } => (parameter, *indirect, a::ParamOp::None, false),
            ParameterExpr::UseDefaultValues {
                parameter,
                indirect,
                test_type,
                default_value,
            } => (
                parameter,
                *indirect,
                a::ParamOp::Default {
                    colon: colon(test_type),
                    word: arg(default_value),
                },
                false,
            ),
            ParameterExpr::AssignDefaultValues {
                parameter,
                indirect,
                test_type,
                default_value,
            } => (
                parameter,
                *indirect,
                a::ParamOp::Assign {
                    colon: colon(test_type),
                    word: arg(default_value),
                },
                false,
            ),
            ParameterExpr::IndicateErrorIfNullOrUnset {
                parameter,
                indirect,
                test_type,
                error_message,
            } => (
                parameter,
                *indirect,
                a::ParamOp::Error {
                    colon: colon(test_type),
                    word: arg(error_message),
                },
                false,
            ),
            ParameterExpr::UseAlternativeValue {
                parameter,
                indirect,
                test_type,
                alternative_value,
            } => (
                parameter,
                *indirect,
                a::ParamOp::Alternative {
                    colon: colon(test_type),
                    word: arg(alternative_value),
                },
                false,
            ),
            ParameterExpr::ParameterLength {
                parameter,
                indirect,
            } => (parameter, *indirect, a::ParamOp::None, true),
            ParameterExpr::RemoveSmallestSuffixPattern {
                parameter,
                indirect,
                pattern,
            } => (
                parameter,
                *indirect,
                a::ParamOp::RemoveSuffix {
                    longest: false,
                    pattern: arg(pattern),
                },
                false,
            ),
            ParameterExpr::RemoveLargestSuffixPattern {
                parameter,
                indirect,
                pattern,
            } => (
                parameter,
                *indirect,
                a::ParamOp::RemoveSuffix {
                    longest: true,
                    pattern: arg(pattern),
                },
                false,
            ),
            ParameterExpr::RemoveSmallestPrefixPattern {
                parameter,
                indirect,
                pattern,
            } => (
                parameter,
                *indirect,
                a::ParamOp::RemovePrefix {
                    longest: false,
                    pattern: arg(pattern),
                },
                false,
            ),
            ParameterExpr::RemoveLargestPrefixPattern {
                parameter,
                indirect,
                pattern,
            } => (
                parameter,
                *indirect,
                a::ParamOp::RemovePrefix {
                    longest: true,
                    pattern: arg(pattern),
                },
                false,
            ),
            ParameterExpr::Substring {
                parameter,
                indirect,
                offset,
                length,
            } => (
                parameter,
                *indirect,
                a::ParamOp::Substring {
                    offset: self.arith(&offset.value),
                    length: length.as_ref().map(|l| self.arith(&l.value)),
                },
                false,
            ),
            ParameterExpr::ReplaceSubstring {
                parameter,
                indirect,
                pattern,
                replacement,
                match_kind,
            } => (
                parameter,
                *indirect,
                a::ParamOp::Replace {
                    all: matches!(match_kind, SubstringMatchKind::Anywhere),
                    anchor: match match_kind {
                        SubstringMatchKind::Prefix => a::Anchor::Start,
                        SubstringMatchKind::Suffix => a::Anchor::End,
                        _ => a::Anchor::None,
                    },
                    pattern: a::Word {
                        parts: self.pieces(pattern, false),
                        span: 0..0,
                    },
                    replacement: arg(replacement),
                },
                false,
            ),
            ParameterExpr::UppercaseFirstChar {
                parameter,
                indirect,
                pattern,
            }
            | ParameterExpr::UppercasePattern {
                parameter,
                indirect,
                pattern,
            }
            | ParameterExpr::LowercaseFirstChar {
                parameter,
                indirect,
                pattern,
            }
            | ParameterExpr::LowercasePattern {
                parameter,
                indirect,
                pattern,
            } => (
                parameter,
                *indirect,
                a::ParamOp::Case {
                    upper: matches!(
                        e,
                        ParameterExpr::UppercaseFirstChar { .. }
                            | ParameterExpr::UppercasePattern { .. }
                    ),
                    all: matches!(
                        e,
                        ParameterExpr::UppercasePattern { .. }
                            | ParameterExpr::LowercasePattern { .. }
                    ),
                    pattern: arg(pattern),
                },
                false,
            ),
            ParameterExpr::Transform {
                parameter,
                indirect,
                op,
            } => (
                parameter,
                *indirect,
                match op {
                    word::ParameterTransformOp::Quoted => a::ParamOp::Transform('Q'),
                    word::ParameterTransformOp::ExpandEscapeSequences => a::ParamOp::Transform('E'),
                    word::ParameterTransformOp::ToUpperCase => a::ParamOp::Transform('U'),
                    word::ParameterTransformOp::ToLowerCase => a::ParamOp::Transform('L'),
                    word::ParameterTransformOp::CapitalizeInitial => a::ParamOp::Transform('u'),
                    _ => a::ParamOp::Unknown,
                },
                false,
            ),
            ParameterExpr::VariableNames { .. } | ParameterExpr::MemberKeys { .. } => {
                return a::Param {
                    name: a::ParamName::Var(String::new()),
                    index: None,
                    length: false,
                    indirect: false,
                    op: a::ParamOp::Unknown,
                };
            }
        };
        let (name, index) = match parameter {
            Parameter::Positional(n) => (
                if *n == 0 {
                    a::ParamName::Special('0')
                } else {
                    a::ParamName::Positional(*n)
                },
                None,
            ),
            Parameter::Special(s) => (
                a::ParamName::Special(match s {
                    SpecialParameter::AllPositionalParameters { concatenate: true } => '*',
                    SpecialParameter::AllPositionalParameters { concatenate: false } => '@',
                    SpecialParameter::PositionalParameterCount => '#',
                    SpecialParameter::LastExitStatus => '?',
                    SpecialParameter::CurrentOptionFlags => '-',
                    SpecialParameter::ProcessId => '$',
                    SpecialParameter::LastBackgroundProcessId => '!',
                    SpecialParameter::ShellName => '0',
                }),
                None,
            ),
            Parameter::Named(n) => (a::ParamName::Var(n.clone()), None),
            Parameter::NamedWithIndex { name, index } => (
                a::ParamName::Var(name.clone()),
                Some(a::Word {
                    parts: self.pieces(index, false),
                    span: 0..0,
                }),
            ),
            Parameter::NamedWithAllIndices { name, concatenate } => (
                a::ParamName::Var(name.clone()),
                Some(literal(if *concatenate { "*" } else { "@" })),
            ),
        };
        a::Param {
            name,
            index,
            length,
            indirect,
            op,
        }
    }
}

fn literal(s: &str) -> a::Word {
    a::Word {
        parts: vec![a::Part::Lit {
            text: s.to_string(),
            quoted: false,
        }],
        span: 0..0,
    }
}
