//! The parser on a table of bash forms, rendered compactly: `[w1 w2]` a simple
//! command, `«x»` quoted text, `;`/`&`/`⏎` list separators, `|`/`|&` pipes.

use super::ast::*;
use super::*;

fn show_word(w: &Word) -> String {
    let mut out = String::new();
    for p in &w.parts {
        match p {
            Part::Lit {
                text,
                quoted: false,
            } => out.push_str(text),
            Part::Lit { text, quoted: true } => {
                out.push('«');
                out.push_str(text);
                out.push('»');
            }
            Part::Tilde(u) => {
                out.push('~');
                out.push_str(u);
            }
            Part::Param { param, quoted } => {
                if *quoted {
                    out.push('"');
                }
                out.push_str("${");
                if param.length {
                    out.push('#');
                }
                if param.indirect {
                    out.push('!');
                }
                match &param.name {
                    ParamName::Var(n) => out.push_str(n),
                    ParamName::Positional(n) => out.push_str(&n.to_string()),
                    ParamName::Special(c) => out.push(*c),
                }
                if let Some(i) = &param.index {
                    out.push_str(&format!("[{}]", show_word(i)));
                }
                match &param.op {
                    ParamOp::None => {}
                    ParamOp::Default { colon, word } => out.push_str(&format!(
                        "{}-{}",
                        if *colon { ":" } else { "" },
                        show_word(word)
                    )),
                    ParamOp::Assign { colon, word } => out.push_str(&format!(
                        "{}={}",
                        if *colon { ":" } else { "" },
                        show_word(word)
                    )),
                    ParamOp::Error { colon, word } => out.push_str(&format!(
                        "{}?{}",
                        if *colon { ":" } else { "" },
                        show_word(word)
                    )),
                    ParamOp::Alternative { colon, word } => out.push_str(&format!(
                        "{}+{}",
                        if *colon { ":" } else { "" },
                        show_word(word)
                    )),
                    ParamOp::RemovePrefix { longest, pattern } => out.push_str(&format!(
                        "{}{}",
                        if *longest { "##" } else { "#" },
                        show_word(pattern)
                    )),
                    ParamOp::RemoveSuffix { longest, pattern } => out.push_str(&format!(
                        "{}{}",
                        if *longest { "%%" } else { "%" },
                        show_word(pattern)
                    )),
                    ParamOp::Replace {
                        all,
                        anchor,
                        pattern,
                        replacement,
                    } => out.push_str(&format!(
                        "/{}{}{}/{}",
                        if *all { "/" } else { "" },
                        match anchor {
                            Anchor::Start => "#",
                            Anchor::End => "%",
                            Anchor::None => "",
                        },
                        show_word(pattern),
                        show_word(replacement)
                    )),
                    ParamOp::Substring { offset, length } => {
                        out.push_str(&format!(":{}", show_word(offset)));
                        if let Some(l) = length {
                            out.push_str(&format!(":{}", show_word(l)));
                        }
                    }
                    ParamOp::Case {
                        upper,
                        all,
                        pattern,
                    } => out.push_str(&format!(
                        "{}{}",
                        match (upper, all) {
                            (true, true) => "^^",
                            (true, false) => "^",
                            (false, true) => ",,",
                            (false, false) => ",",
                        },
                        show_word(pattern)
                    )),
                    ParamOp::Transform(c) => out.push_str(&format!("@{c}")),
                    ParamOp::Unknown => out.push_str("?unknown"),
                }
                out.push('}');
                if *quoted {
                    out.push('"');
                }
            }
            Part::CmdSub { script, .. } => {
                out.push_str(&format!("$({})", show(script)));
            }
            Part::Arith { expr, .. } => out.push_str(&format!("$(({}))", show_word(expr))),
            Part::ProcSub { script, output } => out.push_str(&format!(
                "{}({})",
                if *output { ">" } else { "<" },
                show(script)
            )),
            Part::ExtGlob(t) => out.push_str(t),
        }
    }
    out
}

fn show_redirect(r: &Redirect) -> String {
    let fd = match &r.fd {
        Some(Fd::Number(n)) => n.to_string(),
        Some(Fd::Var(v)) => format!("{{{v}}}"),
        None => String::new(),
    };
    let target = match &r.target {
        Target::Word(w) => show_word(w),
        Target::Heredoc(h) => format!(
            "{}{}:{}",
            h.delimiter,
            if h.quoted { "(q)" } else { "" },
            show_word(&h.body)
        ),
    };
    format!("{fd}{}{target}", r.op.as_str())
}

fn show_command(c: &Command) -> String {
    match c {
        Command::Simple(s) => {
            let mut parts: Vec<String> = s
                .assignments
                .iter()
                .map(|a| {
                    let v = match &a.value {
                        Value::Scalar(w) => show_word(w),
                        Value::Array(e) => format!(
                            "({})",
                            e.iter()
                                .map(|(k, v)| match k {
                                    Some(k) => format!("[{}]={}", show_word(k), show_word(v)),
                                    None => show_word(v),
                                })
                                .collect::<Vec<_>>()
                                .join(" ")
                        ),
                    };
                    let idx = a
                        .index
                        .as_ref()
                        .map(|i| format!("[{}]", show_word(i)))
                        .unwrap_or_default();
                    format!("{}{idx}{}={v}", a.name, if a.append { "+" } else { "" })
                })
                .collect();
            parts.extend(s.words.iter().map(show_word));
            parts.extend(s.redirects.iter().map(show_redirect));
            format!("[{}]", parts.join(" "))
        }
        Command::Compound(c, r) => {
            let mut out = match c.as_ref() {
                Compound::Brace(l) => format!("{{{}}}", show_list(l)),
                Compound::Subshell(l) => format!("({})", show_list(l)),
                Compound::If {
                    branches,
                    otherwise,
                } => {
                    let mut s = String::from("if");
                    for (c, b) in branches {
                        s.push_str(&format!("<{}?{}>", show_list(c), show_list(b)));
                    }
                    if let Some(o) = otherwise {
                        s.push_str(&format!("else<{}>", show_list(o)));
                    }
                    s
                }
                Compound::While {
                    until,
                    condition,
                    body,
                } => format!(
                    "{}<{}>{{{}}}",
                    if *until { "until" } else { "while" },
                    show_list(condition),
                    show_list(body)
                ),
                Compound::For {
                    select,
                    var,
                    words,
                    body,
                } => format!(
                    "{} {var}{}{{{}}}",
                    if *select { "select" } else { "for" },
                    words
                        .as_ref()
                        .map(|w| format!(
                            " in({})",
                            w.iter().map(show_word).collect::<Vec<_>>().join(" ")
                        ))
                        .unwrap_or_default(),
                    show_list(body)
                ),
                Compound::ArithFor { parts, body } => format!(
                    "for(({})){{{}}}",
                    parts.iter().map(show_word).collect::<Vec<_>>().join(";"),
                    show_list(body)
                ),
                Compound::Case { subject, arms } => format!(
                    "case {}{{{}}}",
                    show_word(subject),
                    arms.iter()
                        .map(|a| format!(
                            "{}:{}",
                            a.patterns
                                .iter()
                                .map(show_word)
                                .collect::<Vec<_>>()
                                .join("|"),
                            show_list(&a.body)
                        ))
                        .collect::<Vec<_>>()
                        .join(" ")
                ),
                Compound::Arith(w) => format!("(({}))", show_word(w)),
                Compound::Cond(words) => format!(
                    "[[{}]]",
                    words.iter().map(show_word).collect::<Vec<_>>().join(" ")
                ),
            };
            for redirect in r {
                out.push(' ');
                out.push_str(&show_redirect(redirect));
            }
            out
        }
        Command::Function(f) => format!("fn {}{}", f.name, show_command(&f.body)),
        Command::Coproc(c) => format!(
            "coproc{} {}",
            c.name.as_ref().map(|n| format!(":{n}")).unwrap_or_default(),
            show_command(&c.body)
        ),
    }
}

fn show_pipeline(p: &Pipeline) -> String {
    let mut out = String::new();
    if p.time {
        out.push_str("time ");
    }
    if p.bang {
        out.push_str("! ");
    }
    for (i, stage) in p.stages.iter().enumerate() {
        out.push_str(&show_command(&stage.command));
        if i + 1 < p.stages.len() {
            out.push_str(if stage.pipe_all { " |& " } else { " | " });
        }
    }
    out
}

fn show_list(list: &List) -> String {
    let mut out = String::new();
    for item in list {
        out.push_str(&show_pipeline(&item.and_or.first));
        for (c, p) in &item.and_or.rest {
            out.push_str(match c {
                Connector::And => " && ",
                Connector::Or => " || ",
            });
            out.push_str(&show_pipeline(p));
        }
        out.push_str(match item.sep {
            Sep::Semi => "; ",
            Sep::Amp => " & ",
            Sep::Newline => " ⏎ ",
            Sep::End => "",
        });
    }
    out.trim_end().to_string()
}

pub(super) fn show(script: &Script) -> String {
    show_list(&script.body)
}

fn parsed(src: &str) -> String {
    match parse(src) {
        Ok(s) => show(&s),
        Err(e) => format!("ERROR {e}"),
    }
}

#[test]
fn parses_bash_forms() {
    let cases: &[(&str, &str)] = &[
        ("ls -la", "[ls -la]"),
        ("", ""),
        ("  # only a comment", ""),
        ("a; b & c", "[a]; [b] & [c]"),
        ("a && b || c", "[a] && [b] || [c]"),
        ("a | b |& c", "[a] | [b] |& [c]"),
        ("printf 'x\\n' |\ngrep x", "[printf «x\\n»] | [grep x]"),
        ("a &&\n  b", "[a] && [b]"),
        ("a ||\n\n b", "[a] || [b]"),
        ("a\nb\n", "[a] ⏎ [b] ⏎"),
        ("echo a#b # c", "[echo a#b]"),
        (
            "echo 'a b' \"c $d\" e\\ f",
            "[echo «a b» «»«c »\"${d}\" e« »f]",
        ),
        ("X=1 Y='a b' cmd arg", "[X=1 Y=«a b» cmd arg]"),
        ("X=", "[X=]"),
        ("A=(1 'two' [5]=x) B+=(y)", "[A=(1 «two» [5]=x) B+=(y)]"),
        ("A[$i]=v", "[A[${i}]=v]"),
        ("echo X=1", "[echo X=1]"),
        ("cmd 2>&1 >/dev/null <in", "[cmd 2>&1 >/dev/null <in]"),
        ("cmd &> log; cmd &>> log", "[cmd &>log]; [cmd &>>log]"),
        ("cmd >| f {fd}>g 3<>h", "[cmd >|f {fd}>g 3<>h]"),
        ("2>/dev/null cat f", "[cat f 2>/dev/null]"),
        ("grep x <<< \"$v\"", "[grep x <<<«»\"${v}\"]"),
        (
            "cat <<EOF\nhi $x\nEOF\necho done",
            "[cat <<EOF:«»«hi »\"${x}\"«\n»] ⏎ [echo done]",
        ),
        ("cat <<'EOF' > f\n$x\nEOF", "[cat <<EOF(q):«$x\n» >f] ⏎"),
        ("cat <<-E\n\t\tx\n\tE\n", "[cat <<E:«»«x\n»] ⏎"),
        ("cat <<A <<B\na\nA\nb\nB", "[cat <<A:«»«a\n» <<B:«»«b\n»] ⏎"),
        (
            "cat <<EOF | grep x\nbody\nEOF",
            "[cat <<EOF:«»«body\n»] | [grep x] ⏎",
        ),
        ("cat <<EOF\nno end", "[cat <<EOF:«»«no end»] ⏎"),
        (
            "echo $(cat <<EOF\n)\nEOF\n)",
            "[echo $([cat <<EOF:«»«)\n»] ⏎)]",
        ),
        ("{ a; b; } > f", "{[a]; [b];} >f"),
        ("(cd x && ls) 2>&1 | c", "([cd x] && [ls]) 2>&1 | [c]"),
        (
            "if a; then b; elif c; then d; else e; fi",
            "if<[a];?[b];><[c];?[d];>else<[e];>",
        ),
        ("if a\nthen\n b\nfi", "if<[a] ⏎?[b] ⏎>"),
        (
            "while read -r l; do echo \"$l\"; done < f",
            "while<[read -r l];>{[echo «»\"${l}\"];} <f",
        ),
        ("until a; do b; done", "until<[a];>{[b];}"),
        (
            "for d in a b; do rm -rf \"$d\"; done",
            "for d in(a b){[rm -rf «»\"${d}\"];}",
        ),
        ("for x; do :; done", "for x{[:];}"),
        ("for x\ndo :\ndone", "for x{[:] ⏎}"),
        (
            "for ((i=0; i<3; i++)); do :; done",
            "for((i=0; i<3; i++)){[:];}",
        ),
        ("select x in a b; do :; done", "select x in(a b){[:];}"),
        (
            "case $x in a|b) c;; (*) d;& *.txt) e;;& esac",
            "case ${x}{a|b:[c] *:[d] *.txt:[e]}",
        ),
        ("case x in\n a) b\n ;;\nesac", "case x{a:[b] ⏎}"),
        ("case x in a) b; esac", "case x{a:[b];}"),
        ("f() { rm -rf x; }; f", "fn f{[rm -rf x];}; [f]"),
        ("function f { a; }", "fn f{[a];}"),
        ("function f() ( a )", "fn f([a])"),
        (":(){ :|:& };:", "fn :{[:] | [:] &}; [:]"),
        ("coproc rm -rf D", "coproc [rm -rf D]"),
        ("coproc NAME { cmd; }", "coproc:NAME {[cmd];}"),
        ("time -p ls", "time [ls]"),
        ("! grep x f", "! [grep x f]"),
        ("((i++))", "((i++))"),
        ("[[ -f a && $x =~ ^(a|b)$ ]]", "[[-f a && ${x} =~ ^(a|b)$]]"),
        ("echo $((1 + (2) * $x))", "[echo $((1 + (2) * ${x}))]"),
        ("echo $( (a) )", "[echo $(([a]))]"),
        ("echo `echo \\`date\\``", "[echo $([echo $([date])])]"),
        ("echo \"$(echo \")\")\"", "[echo «»$([echo «»«)»])]"),
        (
            "echo $(case x in a) echo;; esac)",
            "[echo $(case x{a:[echo]})]",
        ),
        ("diff <(ls a) >(wc -l)", "[diff <([ls a]) >([wc -l])]"),
        (
            "echo ~ ~/x ~root/y ~+ ~-/z a~b",
            "[echo ~ ~/x ~root/y ~+ ~-/z a~b]",
        ),
        ("X=~/a:~/b", "[X=~/a:~/b]"),
        (
            "echo ${x:-a b} ${x:=y} ${x:?e} ${x:+/}",
            "[echo ${x:-a b} ${x:=y} ${x:?e} ${x:+/}]",
        ),
        (
            "echo ${X%y} ${X##*/} ${X:0:1} ${X: -2}",
            "[echo ${X%y} ${X##*/} ${X:0:1} ${X: -2}]",
        ),
        (
            "echo ${X/a/b} ${X//a} ${X/#a/b} ${#X} ${!X} ${X^^} ${X@Q}",
            "[echo ${X/a/b} ${X//a/} ${X/#a/b} ${#X} ${!X} ${X^^} ${X@Q}]",
        ),
        (
            "echo ${a[@]} \"${a[*]}\" ${#a[@]} $1 ${10} $@ $# $0",
            "[echo ${a[@]} «»\"${a[*]}\" ${#a[@]} ${1} ${10} ${@} ${#} ${0}]",
        ),
        (
            "echo $'a\\x41\\n\\'b' $\"loc\"",
            "[echo «a\u{41}\n'b» «»«loc»]",
        ),
        ("rm${IFS}-rf${IFS}/", "[rm${IFS}-rf${IFS}/]"),
        ("echo {a,b}.txt @(x|y) *.rs", "[echo {a,b}.txt @(x|y) *.rs]"),
        ("export X=~/bin A=(1 2)", "[export X=~/bin «A=(1 2)»]"),
        ("echo a\\\nb", "[echo ab]"),
        ("echo \\", "[echo \\]"),
        ("trap 'rm -rf x' EXIT", "[trap «rm -rf x» EXIT]"),
        ("x=1;", "[x=1];"),
        ("a & b &", "[a] & [b] &"),
        ("echo é; ls ü", "[echo é]; [ls ü]"),
        ("cmd 2> f", "[cmd 2>f]"),
        ("echo 2>&1>f", "[echo 2>&1 >f]"),
        ("exec {fd}>file", "[exec {fd}>file]"),
        ("echo }", "[echo }]"),
        ("{ echo }; }", "{[echo }];}"),
        ("echo if then fi", "[echo if then fi]"),
        ("a=$(</etc/passwd)", "[a=$([</etc/passwd])]"),
        (
            "cat > file.py <<EOF\nprint(1)\nEOF && chmod +x file.py",
            "[cat >file.py <<EOF:«»«print(1)\nEOF && chmod +x file.py»] ⏎",
        ),
    ];
    let mut failures = Vec::new();
    for (src, want) in cases {
        let got = parsed(src);
        if got != *want {
            failures.push(format!("{src:?}\n   want {want}\n    got {got}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn rejects_what_bash_rejects() {
    for src in [
        ";",
        "&& a",
        "echo (",
        "echo )",
        "if; then fi",
        "if a; then b",
        "fi",
        "echo 'open",
        "echo \"open",
        "echo $(open",
        "echo ${open",
        "echo `open",
        "echo $((1 + 2)",
        "{ a; ",
        "( a",
        "a |",
        "a &&",
        "case x in a) b",
        "for x in a b; do c",
        "f() echo hi",
        ">",
        "cat <",
        "[[ a",
        "done",
        "a;;b",
        "a; ;",
        "x=(1 2",
    ] {
        assert!(
            parse(src).is_err(),
            "{src:?} should not parse: {:?}",
            parse(src).map(|s| show(&s))
        );
    }
}

#[test]
fn errors_say_what_and_where() {
    let e = parse("echo ok\necho 'oops").unwrap_err();
    assert_eq!(
        e.to_string(),
        "`'` opened at line 2, column 6 is never closed"
    );
    let e = parse("if true; then ls; done").unwrap_err();
    assert_eq!(
        e.to_string(),
        "syntax error near `done` at line 1, column 19"
    );
    let e = parse("if true; then ls").unwrap_err();
    assert!(e.to_string().contains("`fi`"), "{e}");
}

#[test]
fn lines_before_an_error_are_kept() {
    let p = parse_lines("rm -rf x; ls\necho 'oops; rm y\n");
    assert_eq!(show(&p.script), "[rm -rf x]; [ls] ⏎");
    assert_eq!(p.rest, 13);
    assert!(p.error.is_some());
    // The failing line is dropped whole: bash reads a line before running any of it.
    let p = parse_lines("a; b; c(");
    assert_eq!(show(&p.script), "");
    assert_eq!(p.rest, 0);
}

#[test]
fn spans_point_at_the_source() {
    let src = "FOO=1 cat  x >out | grep  y";
    let s = parse(src).unwrap();
    let stages = &s.body[0].and_or.first.stages;
    let Command::Simple(cat) = &stages[0].command else {
        panic!()
    };
    assert_eq!(&src[cat.span.clone()], "FOO=1 cat  x >out");
    assert_eq!(&src[cat.words[1].span.clone()], "x");
    assert_eq!(&src[cat.redirects[0].span.clone()], ">out");
    let Command::Simple(grep) = &stages[1].command else {
        panic!()
    };
    assert_eq!(&src[grep.span.clone()], "grep  y");
}

#[test]
fn deep_nesting_is_refused_not_overflowed() {
    for (open, close) in [
        ("( ", " )"),
        ("$(", ")"),
        ("{ ", "; }"),
        ("\"$(", ")\""),
        ("${x:-", "}"),
        ("if a; then ", "; fi"),
    ] {
        let src = format!("{}ls{}", open.repeat(5000), close.repeat(5000));
        // On the stack of an rpc worker thread (Rust's default, 2 MiB).
        let result = std::thread::Builder::new()
            .stack_size(2 * 1024 * 1024)
            .spawn(move || parse(&src).map(|_| ()))
            .unwrap()
            .join()
            .unwrap();
        assert!(
            matches!(
                result,
                Err(ParseError {
                    kind: ErrorKind::TooDeep,
                    ..
                })
            ),
            "{open}: {result:?}"
        );
    }
    let ok = format!("{}ls{}", "(".repeat(50), ")".repeat(50));
    assert!(parse(&ok).is_ok());
}

#[test]
fn never_panics_on_odd_input() {
    for s in [
        "\\",
        "'",
        "\"",
        "$",
        "${",
        "${x",
        "$(",
        "`",
        "~",
        "a\\",
        "$'\\x",
        "$'\\",
        "<",
        ">",
        "&>",
        "((",
        "))",
        "${x:-",
        "é\\é",
        "$'\\é'",
        "\"\\é\"",
        "`\\é`",
        "x<<''<<<#",
        "<<",
        "<<-",
        "${#}",
        "${!}",
        "${:}",
        "${x[}",
        "a[",
        "a[1",
        "a[1]",
        "a=(",
        "[[",
        "]]",
        "$((",
        "$(( (",
        "case",
        "case x",
        "case x in",
        "for",
        "for ((",
        "function",
        "function f",
        "coproc",
        "{",
        "}",
        "!",
        "time",
        "é",
        "\u{0}",
        "$'\\c",
        "$'\\u",
        "{fd}>",
        "{",
        "2>",
        "x=(a [",
        "${x/",
        "${x:",
        "${x@",
        "@(",
        "cat <<E\n",
    ] {
        let _ = parse(s);
        let _ = parse_lines(s);
    }
}

fn env() -> std::collections::BTreeMap<String, String> {
    [
        ("HOME", "/home/agent"),
        ("PROJ", "/work/proj"),
        ("PATH", "/usr/bin:/bin"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect()
}

/// The rendered commands of a walk, `@cwd` when not the start directory.
fn walked(src: &str) -> Vec<String> {
    let env = env();
    let w = walk(
        src,
        &Context {
            env: &env,
            cwd: Some(std::path::Path::new("/work/proj")),
        },
    );
    let mut out: Vec<String> = w
        .commands
        .iter()
        .map(|c| {
            let mut s = c.rendered();
            match c.cwd.as_deref() {
                Some(p) if p == std::path::Path::new("/work/proj") => {}
                Some(p) => s.push_str(&format!(" @{}", p.display())),
                None => s.push_str(" @?"),
            }
            s
        })
        .collect();
    out.extend(w.fork_bombs.iter().map(|b| format!("BOMB {b}")));
    out.extend(w.unparsed.iter().map(|u| format!("UNPARSED {:?}", u.text)));
    out
}

/// The walk on the forms bash resolves without running anything: each command as its
/// canonical line, `@dir` when it runs elsewhere than the start directory, then the
/// fork bombs and what did not parse.
#[test]
fn walks_like_bash() {
    let cases: &[(&str, &[&str])] = &[
        ("rm -rf /{etc,usr}", &["rm -rf /etc /usr"]),
        ("rm${IFS}-rf${IFS}/", &["rm -rf /"]),
        ("rm${IFS}-rf${IFS}~", &["rm -rf '~'"]),
        ("rm -rf {~,x}", &["rm -rf /home/agent x"]),
        ("P=/X; rm -rf ${P%X}", &["rm -rf /"]),
        (
            "rm -rf ${HOME:0:1} ${PATH:+/} ${EMPTY:-/}",
            &["rm -rf / / /"],
        ),
        (
            "rm -rf \"${EMPTY:=/x}\"; echo $EMPTY",
            &["rm -rf /x", "echo /x"],
        ),
        ("rm -rf $'\\x2f' $\"/etc\"", &["rm -rf / /etc"]),
        (
            "arr=(/ /usr); rm -rf \"${arr[@]}\" ${#arr[@]}",
            &["rm -rf / /usr 2"],
        ),
        (
            "set -- a /; shift; rm -rf \"$1\"",
            &["set -- a /", "shift", "rm -rf /"],
        ),
        (
            "for d in a /; do rm -rf \"$d\"; done",
            &["rm -rf a", "rm -rf /"],
        ),
        (
            "f() { rm -rf \"$1\"; }; f /etc",
            &["rm -rf …", "rm -rf /etc", "f /etc"],
        ),
        (
            "trap 'rm -rf /' EXIT; echo hi",
            &["trap 'rm -rf /' EXIT", "echo hi", "rm -rf /"],
        ),
        ("coproc rm -rf /", &["rm -rf /"]),
        ("exec -c rm -rf /", &["rm -rf /"]),
        ("bash <<< 'rm -rf /'", &["rm -rf /"]),
        ("echo 'rm -rf /' | bash", &["echo 'rm -rf /'", "rm -rf /"]),
        ("echo / | xargs rm -rf", &["echo /", "rm -rf /"]),
        (
            "printf '%s\\n' a b | xargs -I{} rm -rf /tmp/{}",
            &["printf '%s\\n' a b", "rm -rf /tmp/a", "rm -rf /tmp/b"],
        ),
        (
            "cd /tmp && rm -rf ~+/../etc ~-",
            &["cd /tmp", "rm -rf /tmp/../etc /work/proj @/tmp"],
        ),
        ("env --chdir=/ rm -rf etc", &["rm -rf etc @/"]),
        ("sudo -iu root rm -rf x", &["rm -rf x @/root"]),
        ("sudo bash -c 'rm -rf $HOME/x'", &["rm -rf /root/x"]),
        ("X=/ bash -c 'rm -rf $X'", &["rm -rf /"]),
        ("D=/; bash -c 'rm -rf $D'", &["rm -rf"]),
        (
            "export D=/; bash -c 'rm -rf $D'",
            &["export D=/", "rm -rf /"],
        ),
        ("bash -c 'rm -rf \"$1\"' _ /etc", &["rm -rf /etc"]),
        ("bash -n -c 'rm -rf /'", &["bash -n -c 'rm -rf /'"]),
        ("chroot /mnt rm -rf /etc", &["rm -rf /etc @/"]),
        ("watch -n1 'ls; df'", &["ls", "df"]),
        ("flock /tmp/l -c 'make'", &["make"]),
        (
            "find / -exec sh -c 'rm -rf \"$1\"' _ {} \\;",
            &["rm -rf …", "find / -exec sh -c 'rm -rf \"$1\"' _ '{}' ';'"],
        ),
        ("x=reboot; $x", &["reboot"]),
        ("r\\eboot; \"shut\"down now", &["reboot", "shutdown now"]),
        ("busybox reboot", &["reboot"]),
        (
            "echo b > /proc/sysrq-trigger",
            &["echo b > /proc/sysrq-trigger"],
        ),
        ("{ echo a; } > out.txt", &["echo a > out.txt"]),
        ("echo $(rm -rf /)", &["rm -rf /", "echo …"]),
        (":(){ :|:& };:", &[":", ":", ":", ":", ":", "BOMB :"]),
        ("f(){ \"f\"|f& }; f", &["f", "f", "f", "f", "f", "BOMB f"]),
        ("fib(){ fib $1; }", &["fib …"]),
        ("rm -rf / 'oops", &["UNPARSED \"rm -rf / 'oops\""]),
        ("ls\nrm -rf / 'oops", &["ls", "UNPARSED \"rm -rf / 'oops\""]),
    ];
    let mut failures = Vec::new();
    for (src, want) in cases {
        let got = walked(src);
        if got != *want {
            failures.push(format!("{src:?}\n   want {want:?}\n    got {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
