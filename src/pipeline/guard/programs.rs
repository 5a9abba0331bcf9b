//! The destructive programs the guard judges, each read with its real options (GNU
//! long-option prefixes included: `rm --recur` is `rm --recursive`): what it would
//! delete, re-permission, move or overwrite, and how far it reaches.

use super::targets::{self, Reach};
use super::{Judge, Target};
use crate::shell::parse::ast::RedirOp;
use crate::shell::parse::options::{Arg, Scanned, Spec, scan};
use crate::shell::parse::wrappers::{self, Unwrap};
use crate::shell::parse::{Field, SimpleCommand, program_name};

use Arg::{No as N, Optional as O, Required as R};

const RM: Spec = Spec::new(
    "",
    &[
        ("recursive", N),
        ("force", N),
        ("dir", N),
        ("no-preserve-root", N),
        ("preserve-root", O),
        ("one-file-system", N),
        ("interactive", O),
        ("verbose", N),
        ("help", N),
        ("version", N),
    ],
);
const CHMOD: Spec = Spec::new(
    "",
    &[
        ("changes", N),
        ("silent", N),
        ("quiet", N),
        ("verbose", N),
        ("no-preserve-root", N),
        ("preserve-root", N),
        ("reference", R),
        ("recursive", N),
        ("help", N),
        ("version", N),
    ],
);
const CHOWN: Spec = Spec::new(
    "",
    &[
        ("changes", N),
        ("dereference", N),
        ("no-dereference", N),
        ("from", R),
        ("no-preserve-root", N),
        ("preserve-root", N),
        ("quiet", N),
        ("silent", N),
        ("reference", R),
        ("recursive", N),
        ("verbose", N),
        ("help", N),
        ("version", N),
    ],
);
const SETFACL: Spec = Spec::new(
    "mMxX",
    &[
        ("modify", R),
        ("modify-file", R),
        ("remove", R),
        ("remove-file", R),
        ("set", R),
        ("set-file", R),
        ("recursive", N),
        ("remove-all", N),
        ("remove-default", N),
        ("default", N),
        ("no-mask", N),
        ("mask", N),
        ("logical", N),
        ("physical", N),
        ("restore", R),
        ("test", N),
    ],
);
const MV: Spec = Spec::new(
    "tS",
    &[
        ("backup", O),
        ("force", N),
        ("interactive", N),
        ("no-clobber", N),
        ("no-copy", N),
        ("strip-trailing-slashes", N),
        ("suffix", R),
        ("target-directory", R),
        ("no-target-directory", N),
        ("update", O),
        ("verbose", N),
        ("context", O),
        ("exchange", N),
        ("debug", N),
        ("help", N),
        ("version", N),
    ],
);

/// Programs whose mention in text the guard cannot parse makes it refuse.
pub(super) fn is_destructive(name: &str) -> bool {
    name.starts_with("mkfs")
        || matches!(
            name,
            "rm" | "rmdir"
                | "unlink"
                | "find"
                | "chmod"
                | "chown"
                | "chgrp"
                | "setfacl"
                | "chattr"
                | "mv"
                | "rsync"
                | "shred"
                | "truncate"
                | "dd"
                | "wipefs"
                | "mkswap"
                | "mke2fs"
                | "fdisk"
                | "sfdisk"
                | "parted"
                | "blkdiscard"
                | "kill"
                | "pkill"
                | "killall"
                | "shutdown"
                | "reboot"
                | "halt"
                | "poweroff"
                | "init"
                | "telinit"
                | "systemctl"
                | "loginctl"
                | "crontab"
        )
}

fn is_disk_tool(name: &str) -> bool {
    name.starts_with("mkfs")
        || matches!(
            name,
            "mke2fs"
                | "mkswap"
                | "mkntfs"
                | "mkdosfs"
                | "mkexfatfs"
                | "wipefs"
                | "shred"
                | "blkdiscard"
                | "fdisk"
                | "sfdisk"
                | "cfdisk"
                | "gdisk"
                | "sgdisk"
                | "parted"
                | "pvcreate"
                | "cryptsetup"
                | "badblocks"
                | "hdparm"
                | "nvme"
                | "zpool"
        )
}

fn opts(argv: &[Field], spec: &Spec) -> Scanned {
    let args = &argv[1..];
    let words: Vec<&str> = args.iter().map(|f| f.text.as_str()).collect();
    scan(&words, spec, |i| !args[i].known())
}

fn operands<'a>(argv: &'a [Field], s: &Scanned) -> Vec<&'a Field> {
    s.operands.iter().filter_map(|&i| argv.get(i + 1)).collect()
}

/// The path a field names, in `cmd`'s directory and root, if known.
fn path_of(f: &Field, cmd: &SimpleCommand) -> Option<String> {
    match targets::resolve(f, cmd) {
        targets::Resolved::Path(p) => Some(p.display().to_string()),
        _ => None,
    }
}

/// `/proc/sysrq-trigger`, however it is spelled (`/proc/./sysrq-trigger`, a symlink
/// under `/proc`).
fn is_sysrq(path: &str) -> bool {
    path == "/proc/sysrq-trigger"
        || ((path.starts_with("/proc/") || path.ends_with("sysrq-trigger"))
            && std::fs::canonicalize(path)
                .is_ok_and(|p| p == std::path::Path::new("/proc/sysrq-trigger")))
}

/// Redirections that write a disk or the sysrq trigger.
pub(super) fn redirections(j: &mut Judge, cmd: &SimpleCommand) {
    for r in &cmd.redirects {
        let writes = r.op.writes()
            || (r.op == RedirOp::DupOut
                && r.target
                    .as_ref()
                    .is_some_and(|t| !t.text.bytes().all(|b| b.is_ascii_digit() || b == b'-')));
        let Some(target) = r.target.as_ref().filter(|_| writes) else {
            continue;
        };
        let Some(path) = path_of(target, cmd) else {
            continue;
        };
        let command = super::shown_argv(&cmd.argv);
        if targets::is_block_device(&path) {
            j.refuse(
                "device",
                command,
                format!(
                    "`{} {}` would overwrite the disk {path}",
                    r.op.as_str(),
                    target.text
                ),
                path,
            );
        } else if is_sysrq(&path) {
            j.refuse(
                "sysrq",
                command,
                "writing to /proc/sysrq-trigger can crash, reboot or freeze the machine".into(),
                path,
            );
        }
    }
}

/// Judges one program.
pub(super) fn program(j: &mut Judge, name: &str, cmd: &SimpleCommand) {
    let argv = cmd.argv.as_slice();
    match name {
        "rm" | "unlink" | "rmdir" => rm(j, cmd),
        "find" => find(j, cmd),
        "chmod" | "chown" | "chgrp" | "setfacl" | "chattr" => permissions(j, name, cmd, argv),
        "mv" => mv(j, cmd),
        "rsync" => rsync(j, cmd),
        "dd" => {
            for f in &argv[1..] {
                if let Some(dev) = f.text.strip_prefix("of=") {
                    let field = Field::literal(dev);
                    let path = path_of(&field, cmd).unwrap_or_else(|| dev.to_string());
                    if targets::is_block_device(&path) {
                        j.refuse(
                            "device",
                            super::shown_argv(argv),
                            format!("`dd` would overwrite the disk {path}"),
                            path,
                        );
                    } else if is_sysrq(&path) {
                        j.refuse("sysrq", super::shown_argv(argv), "writing to /proc/sysrq-trigger can crash, reboot or freeze the machine".into(), path);
                    }
                }
            }
        }
        n if is_disk_tool(n) => {
            for f in &argv[1..] {
                let dev = f.text.split_once('=').map_or(f.text.as_str(), |(_, v)| v);
                let path = path_of(&Field::literal(dev), cmd).unwrap_or_else(|| dev.to_string());
                if f.known() && targets::is_block_device(&path) {
                    j.refuse(
                        "device",
                        super::shown_argv(argv),
                        format!("`{n}` would destroy the data on the disk {path}"),
                        path,
                    );
                }
            }
        }
        "cp" | "tee" | "truncate" | "install" | "pv" => {
            let dest: Vec<&Field> = match name {
                "cp" | "install" => argv
                    .last()
                    .into_iter()
                    .skip(usize::from(argv.len() < 3))
                    .collect(),
                "tee" | "truncate" => argv
                    .iter()
                    .skip(1)
                    .filter(|f| !f.text.starts_with('-'))
                    .collect(),
                _ => vec![],
            };
            for f in dest {
                let Some(path) = path_of(f, cmd) else {
                    continue;
                };
                if targets::is_block_device(&path) {
                    j.refuse(
                        "device",
                        super::shown_argv(argv),
                        format!("`{name}` would overwrite the disk {path}"),
                        path,
                    );
                } else if is_sysrq(&path) {
                    j.refuse(
                        "sysrq",
                        super::shown_argv(argv),
                        "writing to /proc/sysrq-trigger can crash, reboot or freeze the machine"
                            .into(),
                        path,
                    );
                }
            }
        }
        "kill" => kill(j, argv),
        _ => {}
    }
}

fn rm(j: &mut Judge, cmd: &SimpleCommand) {
    let argv = cmd.argv.as_slice();
    let s = opts(argv, &RM);
    // An unknown word could be `-r`.
    let unknown = argv[1..].iter().any(|f| !f.known());
    let recursive = s.has('r', "--recursive") || s.has('R', "") || unknown;
    let recursive = recursive && program_name(&argv[0].text) == "rm";
    let reach = if recursive {
        Reach::Tree
    } else {
        Reach::Entries
    };
    let targets: Vec<Target> = operands(argv, &s)
        .into_iter()
        .map(|f| j.judge(f, cmd, reach).0)
        .collect();
    let verb = if recursive {
        "recursively delete"
    } else {
        "delete"
    };
    j.record("delete", argv, targets, verb);
}

/// A `find -exec` command's program, wrappers removed, and its arguments.
fn exec_program(exec: &[Field]) -> Option<(String, Vec<Field>)> {
    let mut i = 0;
    loop {
        let f = exec.get(i)?;
        if !f.known() {
            return None;
        }
        let name = program_name(&f.text).to_string();
        match wrappers::unwrap(&name, &exec[i..]) {
            Unwrap::Command { skip, .. } => i += skip,
            Unwrap::Script { text, .. } => {
                return Some((
                    "sh".into(),
                    vec![
                        Field::literal("sh"),
                        Field::literal("-c"),
                        Field::literal(text),
                    ],
                ));
            }
            Unwrap::Nothing => return None,
            Unwrap::No => return Some((name, exec[i..].to_vec())),
        }
    }
}

/// What a `find -exec` program does to each file found: `delete`, `permissions`
/// (with the chmod mode), `move`, or nothing the guard judges.
enum ExecAction {
    Delete,
    Permissions(Vec<Field>),
    Move,
}

fn exec_action(exec: &[Field]) -> Option<ExecAction> {
    let (name, argv) = exec_program(exec)?;
    match name.as_str() {
        "rm" | "shred" | "unlink" | "rmdir" => Some(ExecAction::Delete),
        "chmod" | "chown" | "chgrp" | "setfacl" | "chattr" => Some(ExecAction::Permissions(argv)),
        "mv" => Some(ExecAction::Move),
        "sh" | "bash" | "dash" | "zsh" | "ksh" => {
            let c = argv.iter().position(|f| {
                f.text.starts_with('-') && !f.text.starts_with("--") && f.text.contains('c')
            })?;
            let script = argv.get(c + 1)?;
            let env = std::collections::BTreeMap::new();
            let walk = crate::shell::parse::walk(
                &script.text,
                &crate::shell::parse::Context {
                    env: &env,
                    cwd: None,
                },
            );
            walk.commands.iter().find_map(|c| match c.name()? {
                "rm" | "shred" | "unlink" | "rmdir" => Some(ExecAction::Delete),
                "chmod" | "chown" | "chgrp" => Some(ExecAction::Permissions(c.argv.clone())),
                "mv" => Some(ExecAction::Move),
                _ => None,
            })
        }
        _ => None,
    }
}

fn find(j: &mut Judge, cmd: &SimpleCommand) {
    let argv = cmd.argv.as_slice();
    let args = &argv[1..];
    // Leading options -H -L -P -D x -Ox, then start paths up to the expression.
    let mut i = 0;
    while let Some(f) = args.get(i) {
        match f.text.as_str() {
            "-H" | "-L" | "-P" => i += 1,
            "-D" => i += 2,
            t if t.starts_with("-O") => i += 1,
            _ => break,
        }
    }
    let mut starts: Vec<Field> = Vec::new();
    while let Some(f) = args.get(i) {
        if f.known() && (f.text.starts_with('-') || f.text == "(" || f.text == "!") {
            break;
        }
        starts.push(f.clone());
        i += 1;
    }
    let expr = &args[i.min(args.len())..];
    let mut action: Option<ExecAction> = None;
    let mut narrowed = false;
    let mut j2 = 0;
    while let Some(f) = expr.get(j2) {
        let t = f.text.as_str();
        let negated = j2 > 0 && matches!(expr[j2 - 1].text.as_str(), "!" | "-not");
        match t {
            "-delete" => action = action.or(Some(ExecAction::Delete)),
            "-exec" | "-execdir" | "-ok" | "-okdir" => {
                let cmd_words: Vec<Field> = expr[j2 + 1..]
                    .iter()
                    .take_while(|f| f.text != ";" && f.text != "+")
                    .cloned()
                    .collect();
                if let Some(a) = exec_action(&cmd_words) {
                    action = action.or(Some(a));
                }
                j2 += cmd_words.len();
            }
            "-name" | "-iname" | "-path" | "-ipath" | "-wholename" | "-iwholename" | "-regex"
            | "-iregex" | "-lname" | "-ilname" => {
                // A pattern that matches everything narrows nothing.
                let pattern = expr.get(j2 + 1).map(|f| f.text.as_str()).unwrap_or("*");
                let all = matches!(pattern, "*" | "**" | ".*" | "*/*" | ".*.*")
                    && !t.ends_with("regex")
                    || (t.ends_with("regex") && matches!(pattern, ".*" | ".+" | ".*.*"));
                if !all && !negated {
                    narrowed = true;
                }
                j2 += 1;
            }
            "-samefile" | "-inum" | "-newer" | "-mtime" | "-mmin" | "-ctime" | "-cmin"
            | "-atime" | "-amin" | "-size" | "-user" | "-uid" | "-group" | "-gid" | "-perm"
            | "-links" | "-used" | "-newermt" | "-newerct" | "-newerat" => {
                if !negated {
                    narrowed = true;
                }
                j2 += 1;
            }
            "-empty" | "-nouser" | "-nogroup" if !negated => narrowed = true,
            _ => {}
        }
        j2 += 1;
    }
    let Some(action) = action else { return };
    if narrowed {
        return;
    }
    if starts.is_empty() {
        starts.push(Field::literal("."));
    }
    match action {
        ExecAction::Delete => {
            let targets: Vec<Target> = starts
                .iter()
                .map(|f| j.judge(f, cmd, Reach::Tree).0)
                .collect();
            j.record("delete", argv, targets, "delete everything under");
        }
        ExecAction::Move => {
            let targets: Vec<Target> = starts
                .iter()
                .map(|f| j.judge(f, cmd, Reach::Tree).0)
                .collect();
            j.record("move", argv, targets, "move everything under");
        }
        ExecAction::Permissions(exec) => {
            let name = program_name(exec.first().map_or("chmod", |f| f.text.as_str())).to_string();
            let s = opts(&exec, permission_spec(&name));
            let mode = mode_operand(&name, &exec, &s);
            let targets: Vec<Target> = starts
                .iter()
                .map(|f| judge_permission(j, f, cmd, Reach::Tree, &name, mode.as_deref()))
                .collect();
            j.record(
                "permissions",
                argv,
                targets,
                "change the permissions or owner of everything under",
            );
        }
    }
}

fn permission_spec(name: &str) -> &'static Spec {
    match name {
        "chmod" | "chattr" => &CHMOD,
        "setfacl" => &SETFACL,
        _ => &CHOWN,
    }
}

/// `chmod`'s mode (or `chattr`'s flags), `chown`'s owner: the first operand, unless
/// `--reference` names a model file. A mode written like an option (`chmod -w f`)
/// counts too.
fn mode_operand(name: &str, argv: &[Field], s: &Scanned) -> Option<String> {
    if !matches!(name, "chmod" | "chown" | "chgrp" | "chattr")
        || s.opts.iter().any(|o| o.name == "--reference")
    {
        return None;
    }
    if name == "chmod"
        && let Some(m) = argv[1..].iter().find(|f| {
            f.text.starts_with('-')
                && f.text.len() > 1
                && f.text[1..].chars().all(|c| "rwxXst".contains(c))
        })
    {
        return Some(m.text.clone());
    }
    operands(argv, s).first().map(|f| f.text.clone())
}

/// Whether a chmod mode only removes permissions the way ssh guides ask (`go-w`,
/// `o-rwx`, `600`, `700`): an octal mode that keeps the owner's read and gives group
/// and others nothing, or symbolic clauses that only take away.
fn removes_only(mode: &str) -> bool {
    if !mode.is_empty() && mode.bytes().all(|b| b.is_ascii_digit()) {
        let Ok(m) = u32::from_str_radix(mode, 8) else {
            return false;
        };
        return m >> 9 == 0 && m & 0o77 == 0 && (m >> 6) & 4 != 0;
    }
    mode.split(',').all(|clause| {
        let who_end = clause
            .find(|c: char| !"ugoa".contains(c))
            .unwrap_or(clause.len());
        let who = &clause[..who_end];
        let mut rest = &clause[who_end..];
        if rest.is_empty() {
            return false;
        }
        while let Some(op) = rest.chars().next() {
            rest = &rest[1..];
            let perms_end = rest.find(['-', '+', '=']).unwrap_or(rest.len());
            let perms = &rest[..perms_end];
            rest = &rest[perms_end..];
            let ok = match op {
                '-' => perms.chars().all(|c| "rwxXst".contains(c)),
                // `go=`: group and others get nothing.
                '=' => perms.is_empty() && !who.is_empty() && !who.contains(['u', 'a']),
                _ => false,
            };
            if !ok {
                return false;
            }
        }
        true
    })
}

/// Judges one target of a permission change; a chmod that only removes permissions
/// may touch a credential store (`~/.ssh`, `~/.gnupg`), never anything else protected.
fn judge_permission(
    j: &Judge,
    f: &Field,
    cmd: &SimpleCommand,
    reach: Reach,
    name: &str,
    mode: Option<&str>,
) -> Target {
    let (mut target, hit) = j.judge(f, cmd, reach);
    if name == "chmod"
        && mode.is_some_and(removes_only)
        && hit.as_ref().is_some_and(|h| h.protected.credentials)
    {
        let others: Vec<targets::Protected> = j
            .protected()
            .iter()
            .filter(|p| !p.credentials)
            .cloned()
            .collect();
        let resolved = targets::resolve(f, cmd);
        target.protected = targets::hit(&resolved, reach, &others).map(|h| h.description);
    }
    target
}

fn permissions(j: &mut Judge, name: &str, cmd: &SimpleCommand, argv: &[Field]) {
    let s = opts(argv, permission_spec(name));
    let mode = mode_operand(name, argv, &s);
    let recursive = s.has('R', "--recursive");
    let mut files = operands(argv, &s);
    // chmod MODE / chown OWNER come first unless --reference names the model file.
    if mode.is_some()
        && !(name == "chmod" && mode.as_deref().is_some_and(|m| m.starts_with('-')))
        && !files.is_empty()
    {
        files.remove(0);
    }
    let reach = if recursive { Reach::Tree } else { Reach::Node };
    let targets: Vec<Target> = files
        .into_iter()
        .map(|f| judge_permission(j, f, cmd, reach, name, mode.as_deref()))
        .collect();
    let verb = if recursive {
        "recursively change the permissions or owner of"
    } else {
        "change the permissions or owner of"
    };
    j.record("permissions", argv, targets, verb);
}

fn mv(j: &mut Judge, cmd: &SimpleCommand) {
    let argv = cmd.argv.as_slice();
    let s = opts(argv, &MV);
    let explicit_target = s.value('t', "--target-directory").is_some();
    let ops = operands(argv, &s);
    let sources: &[&Field] = if explicit_target || ops.len() < 2 {
        &ops
    } else {
        &ops[..ops.len() - 1]
    };
    let targets: Vec<Target> = sources
        .iter()
        .map(|f| j.judge(f, cmd, Reach::Tree).0)
        .collect();
    j.record("move", argv, targets, "move away");
}

fn rsync(j: &mut Judge, cmd: &SimpleCommand) {
    let argv = cmd.argv.as_slice();
    let deletes = argv[1..].iter().any(|f| {
        let t = f.text.split('=').next().unwrap_or("");
        (t.len() >= 5 && t.starts_with("--del") && "--delete-excluded".starts_with(t))
            || t.starts_with("--delete")
            || (t.len() >= 5 && "--remove-source-files".starts_with(t))
    });
    if !deletes {
        return;
    }
    let operands: Vec<&Field> = argv[1..]
        .iter()
        .filter(|f| !f.text.starts_with('-'))
        .collect();
    // With --delete, the destination loses whatever the source lacks.
    let Some(dest) = operands.last().filter(|_| operands.len() >= 2) else {
        return;
    };
    if dest.text.contains(':') {
        return; // a remote host
    }
    let target = j.judge(dest, cmd, Reach::Node).0;
    j.record("delete", argv, vec![target], "delete files in");
}

fn kill(j: &mut Judge, argv: &[Field]) {
    let mut i = 1;
    // A signal spec first (-9, -KILL, -s KILL, -n 9), then pids.
    if let Some(f) = argv.get(1) {
        match f.text.as_str() {
            "-s" | "-n" | "--signal" => i = 3,
            "--" => i = 2,
            t if t.starts_with('-') && t.len() > 1 => i = 2,
            _ => {}
        }
    }
    if argv.get(i).is_some_and(|f| f.text == "--") {
        i += 1;
    }
    // `kill -1` alone is signal 1 with no pid; `-1` as a pid is every process.
    let only_signal = argv.len() == 2 && argv[1].text == "-1";
    if !only_signal && argv.iter().skip(i).any(|f| f.text == "-1") {
        j.refuse(
            "kill-all",
            super::shown_argv(argv),
            "`kill` with pid -1 would signal every process the user can reach".into(),
            "-1".into(),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::removes_only;

    #[test]
    fn modes_that_only_remove_permissions() {
        for m in [
            "go-w",
            "o-rwx",
            "g-rwx,o-rwx",
            "600",
            "700",
            "0600",
            "400",
            "go=",
            "-w",
            "a-x",
        ] {
            assert!(removes_only(m), "{m}");
        }
        for m in [
            "000", "644", "755", "777", "u+x", "go+r", "a=rwx", "=", "u=", "1700", "g+s", "",
        ] {
            assert!(!removes_only(m), "{m}");
        }
    }
}
