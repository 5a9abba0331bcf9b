#compdef agentbash

autoload -U is-at-least

_agentbash() {
    typeset -A opt_args
    typeset -a _arguments_options
    local ret=1

    if is-at-least 5.2; then
        _arguments_options=(-s -S -C)
    else
        _arguments_options=(-s -C)
    fi

    local context curcontext="$curcontext" state line
    _arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
'-V[Print version]' \
'--version[Print version]' \
":: :_agentbash_commands" \
"*::: :->agentbash" \
&& ret=0
    case $state in
    (agentbash)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-command-$line[1]:"
        case $line[1] in
            (run)
_arguments "${_arguments_options[@]}" : \
'-p+[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--profile=[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--target=[Run on the target of profile NAME (its \[target\] transport); --profile still guards here first]:NAME:_default' \
'-C+[Working directory, relative to the invoking directory (or the session'\''s cwd)]:DIR:_files -/' \
'--cwd=[Working directory, relative to the invoking directory (or the session'\''s cwd)]:DIR:_files -/' \
'-t+[Requested timeout in seconds, clamped to the profile'\''s allowed range]:SECS:_default' \
'--timeout=[Requested timeout in seconds, clamped to the profile'\''s allowed range]:SECS:_default' \
'--head=[Show only the first N lines; the command still runs to completion]:N:_default' \
'--tail=[Show only the last N lines; the command still runs to completion]:N:_default' \
'(--pty --no-pty)--mode=[Execution mode\: auto picks a PTY only when the profile allows it and stdin and stdout are terminals]:MODE:(auto print pty)' \
'(--json)--format=[Output format]:FORMAT:(text json ndjson)' \
'--color=[Colour\: auto honours NO_COLOR, CLICOLOR_FORCE and GitHub Actions, then whether stdout is a terminal]:WHEN:(auto always never)' \
'*--tools=[Comma-separated tools the caller has (for the interceptor); overrides the profile]:LIST:_default' \
'--sandbox=[Kernel sandbox for this run instead of the profile'\''s \[sandbox\] mode]:MODE:((off\:"No sandbox\: the command runs with your rights"
read-only\:"Nothing writable but a private TMPDIR; deny_read and network as in the profile"
workspace-write\:"The working directory'\''s tree (or \[sandbox\] workspace) and \`writable\` too"))' \
'*-e+[Extra environment variable for the command (repeatable)]:KEY=VALUE:_default' \
'*--env=[Extra environment variable for the command (repeatable)]:KEY=VALUE:_default' \
'-s+[Persistent session\: cwd, exported variables, functions and aliases carry over]:NAME:_default' \
'--session=[Persistent session\: cwd, exported variables, functions and aliases carry over]:NAME:_default' \
'--stderr=[The command'\''s stderr\: merged into the output (the default), or separate (print mode only)]:HOW:((merged\:"One pipe\: stderr interleaved with stdout as produced"
separate\:"stderr on a pipe of its own\: to agentbash'\''s stderr as produced (text), the result'\''s \`stderr\` (JSON)"))' \
'(--no-pty)--pty[Force PTY mode (same as --mode pty)]' \
'--no-pty[Forbid PTY mode (same as --mode print)]' \
'--json[Same as --format json]' \
'--no-intercept[Skip the interceptor]' \
'--stdin[Give the command agentbash'\''s stdin (default\: the null device)]' \
'--expand[Text format\: show the whole retained output instead of the collapsed preview]' \
'--stream[Text format\: write the output as it is produced, into a pipe as on a terminal (the profile'\''s render.live = "stream")]' \
'-q[Text format\: output only, no header, footer or notices]' \
'--quiet[Text format\: output only, no header, footer or notices]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'*::command -- The command. One word is a shell command text, run as written (`-- '\''ls | wc -l'\''`); several words are an argv, each word shell-quoted before they are joined, so it runs exactly as typed (`-- printf '\''%s\n'\'' '\''a b'\''` prints `a b`), as `timeout`, `env` and `sudo` treat theirs:_cmdambivalent' \
&& ret=0
;;
(explain)
_arguments "${_arguments_options[@]}" : \
'-p+[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--profile=[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--target=[Run on the target of profile NAME (its \[target\] transport); --profile still guards here first]:NAME:_default' \
'-C+[Working directory, relative to the invoking directory (or the session'\''s cwd)]:DIR:_files -/' \
'--cwd=[Working directory, relative to the invoking directory (or the session'\''s cwd)]:DIR:_files -/' \
'-t+[Requested timeout in seconds, clamped to the profile'\''s allowed range]:SECS:_default' \
'--timeout=[Requested timeout in seconds, clamped to the profile'\''s allowed range]:SECS:_default' \
'--head=[Show only the first N lines; the command still runs to completion]:N:_default' \
'--tail=[Show only the last N lines; the command still runs to completion]:N:_default' \
'(--pty --no-pty)--mode=[Execution mode\: auto picks a PTY only when the profile allows it and stdin and stdout are terminals]:MODE:(auto print pty)' \
'(--json)--format=[Output format]:FORMAT:(text json ndjson)' \
'--color=[Colour\: auto honours NO_COLOR, CLICOLOR_FORCE and GitHub Actions, then whether stdout is a terminal]:WHEN:(auto always never)' \
'*--tools=[Comma-separated tools the caller has (for the interceptor); overrides the profile]:LIST:_default' \
'--sandbox=[Kernel sandbox for this run instead of the profile'\''s \[sandbox\] mode]:MODE:((off\:"No sandbox\: the command runs with your rights"
read-only\:"Nothing writable but a private TMPDIR; deny_read and network as in the profile"
workspace-write\:"The working directory'\''s tree (or \[sandbox\] workspace) and \`writable\` too"))' \
'*-e+[Extra environment variable for the command (repeatable)]:KEY=VALUE:_default' \
'*--env=[Extra environment variable for the command (repeatable)]:KEY=VALUE:_default' \
'-s+[Persistent session\: cwd, exported variables, functions and aliases carry over]:NAME:_default' \
'--session=[Persistent session\: cwd, exported variables, functions and aliases carry over]:NAME:_default' \
'--stderr=[The command'\''s stderr\: merged into the output (the default), or separate (print mode only)]:HOW:((merged\:"One pipe\: stderr interleaved with stdout as produced"
separate\:"stderr on a pipe of its own\: to agentbash'\''s stderr as produced (text), the result'\''s \`stderr\` (JSON)"))' \
'(--no-pty)--pty[Force PTY mode (same as --mode pty)]' \
'--no-pty[Forbid PTY mode (same as --mode print)]' \
'--json[Same as --format json]' \
'--no-intercept[Skip the interceptor]' \
'--stdin[Give the command agentbash'\''s stdin (default\: the null device)]' \
'--expand[Text format\: show the whole retained output instead of the collapsed preview]' \
'--stream[Text format\: write the output as it is produced, into a pipe as on a terminal (the profile'\''s render.live = "stream")]' \
'-q[Text format\: output only, no header, footer or notices]' \
'--quiet[Text format\: output only, no header, footer or notices]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'*::command -- The command. One word is a shell command text, run as written (`-- '\''ls | wc -l'\''`); several words are an argv, each word shell-quoted before they are joined, so it runs exactly as typed (`-- printf '\''%s\n'\'' '\''a b'\''` prints `a b`), as `timeout`, `env` and `sudo` treat theirs:_cmdambivalent' \
&& ret=0
;;
(rpc)
_arguments "${_arguments_options[@]}" : \
'-p+[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--profile=[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--target=[Serve through the target of profile NAME (its \[target\] transport); --profile still guards here first]:NAME:_default' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(mcp)
_arguments "${_arguments_options[@]}" : \
'-p+[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--profile=[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--target=[Serve through the target of profile NAME (its \[target\] transport); --profile still guards here first]:NAME:_default' \
'--toolbox[Also serve the file tools read, grep, glob, edit and write, under the profile'\''s sandbox, guard and redaction (default\: the profile'\''s mcp.toolbox)]' \
'--no-toolbox[Serve only bash, read_artifact and the job tools, whatever mcp.toolbox says]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(profile)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
":: :_agentbash__subcmd__profile_commands" \
"*::: :->profile" \
&& ret=0

    case $state in
    (profile)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-profile-command-$line[1]:"
        case $line[1] in
            (list)
_arguments "${_arguments_options[@]}" : \
'--names[One name per line, nothing else (for shell completion)]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(show)
_arguments "${_arguments_options[@]}" : \
'--origin[Annotate each value with the file it came from]' \
'-h[Print help]' \
'--help[Print help]' \
'::profile -- Profile name or path (default\: AGENTBASH_PROFILE or `default`):_agentbash_profiles' \
&& ret=0
;;
(check)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
'*::profiles -- Profile names or paths (default\: every profile found, shadowed ones included):_agentbash_profiles' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agentbash__subcmd__profile__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-profile-help-command-$line[1]:"
        case $line[1] in
            (list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(show)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(check)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(rules)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
":: :_agentbash__subcmd__rules_commands" \
"*::: :->rules" \
&& ret=0

    case $state in
    (rules)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-rules-command-$line[1]:"
        case $line[1] in
            (list)
_arguments "${_arguments_options[@]}" : \
'-p+[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--profile=[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(test)
_arguments "${_arguments_options[@]}" : \
'-p+[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--profile=[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'*--tools=[Comma-separated tools the caller has; overrides the profile]:LIST:_default' \
'-h[Print help]' \
'--help[Print help]' \
'*::command -- The command to test. One word is a shell command text, run as written (`-- '\''ls | wc -l'\''`); several words are an argv, each word shell-quoted before they are joined, so it runs exactly as typed (`-- printf '\''%s\n'\'' '\''a b'\''` prints `a b`), as `timeout`, `env` and `sudo` treat theirs:_cmdambivalent' \
&& ret=0
;;
(check)
_arguments "${_arguments_options[@]}" : \
'--corpus=[Also score the packs (together; default\: the \`default\` pack) on a labelled corpus (\`<pass|TOOL><TAB><command>\` per line)\: precision and recall per tool, every disagreement; exit 1 below the corpus'\''s thresholds]:FILE:_files' \
'--json[Print the corpus score as JSON (with --corpus)]' \
'-h[Print help]' \
'--help[Print help]' \
'*::packs -- Built-in pack names or paths to rule pack files:_agentbash_rule_packs' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agentbash__subcmd__rules__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-rules-help-command-$line[1]:"
        case $line[1] in
            (list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(test)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(check)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(artifact)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
":: :_agentbash__subcmd__artifact_commands" \
"*::: :->artifact" \
&& ret=0

    case $state in
    (artifact)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-artifact-command-$line[1]:"
        case $line[1] in
            (list)
_arguments "${_arguments_options[@]}" : \
'-p+[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--profile=[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(show)
_arguments "${_arguments_options[@]}" : \
'--head=[Only the first N lines]:N:_default' \
'--tail=[Only the last N lines (applied after --head)]:N:_default' \
'-p+[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--profile=[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--target=[Read the artifact of a run on the target of profile NAME]:NAME:_default' \
'-h[Print help]' \
'--help[Print help]' \
':id -- Artifact id or artifact\://ID:_default' \
&& ret=0
;;
(path)
_arguments "${_arguments_options[@]}" : \
'-p+[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--profile=[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'-h[Print help]' \
'--help[Print help]' \
':id -- Artifact id or artifact\://ID:_default' \
&& ret=0
;;
(rm)
_arguments "${_arguments_options[@]}" : \
'-p+[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--profile=[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'-h[Print help]' \
'--help[Print help]' \
':id -- Artifact id or artifact\://ID:_default' \
&& ret=0
;;
(gc)
_arguments "${_arguments_options[@]}" : \
'-p+[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--profile=[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--dry-run[Say what would be removed, remove nothing]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agentbash__subcmd__artifact__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-artifact-help-command-$line[1]:"
        case $line[1] in
            (list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(show)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(path)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(rm)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(gc)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(session)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
":: :_agentbash__subcmd__session_commands" \
"*::: :->session" \
&& ret=0

    case $state in
    (session)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-session-command-$line[1]:"
        case $line[1] in
            (list)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(show)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
':name -- Session name:_default' \
&& ret=0
;;
(rm)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
':name -- Session name:_default' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agentbash__subcmd__session__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-session-help-command-$line[1]:"
        case $line[1] in
            (list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(show)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(rm)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(snapshot)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
":: :_agentbash__subcmd__snapshot_commands" \
"*::: :->snapshot" \
&& ret=0

    case $state in
    (snapshot)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-snapshot-command-$line[1]:"
        case $line[1] in
            (show)
_arguments "${_arguments_options[@]}" : \
'-p+[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--profile=[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(refresh)
_arguments "${_arguments_options[@]}" : \
'-p+[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--profile=[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(report)
_arguments "${_arguments_options[@]}" : \
'-p+[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--profile=[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agentbash__subcmd__snapshot__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-snapshot-help-command-$line[1]:"
        case $line[1] in
            (show)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(refresh)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(report)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(trust)
_arguments "${_arguments_options[@]}" : \
'(--revoke)--list[List trusted projects\: when each was trusted and whether its files still match]' \
'--revoke[Forget the trust given to the project]' \
'-h[Print help]' \
'--help[Print help]' \
'::dir -- Project directory holding .agentbash/ (default\: the current directory or its nearest ancestor with one):_files -/' \
&& ret=0
;;
(sandbox)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
":: :_agentbash__subcmd__sandbox_commands" \
"*::: :->sandbox" \
&& ret=0

    case $state in
    (sandbox)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-sandbox-command-$line[1]:"
        case $line[1] in
            (check)
_arguments "${_arguments_options[@]}" : \
'--json[The report as JSON]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agentbash__subcmd__sandbox__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-sandbox-help-command-$line[1]:"
        case $line[1] in
            (check)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(job)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
":: :_agentbash__subcmd__job_commands" \
"*::: :->job" \
&& ret=0

    case $state in
    (job)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-job-command-$line[1]:"
        case $line[1] in
            (start)
_arguments "${_arguments_options[@]}" : \
'--name=[A name to refer to the job by (instead of job\://N)]:NAME:_default' \
'(--ready)--ready-port=[Ready once this TCP port accepts and the job'\''s own processes hold the listener]:PORT:_default' \
'--ready=[Ready once a line of output matches this regular expression]:REGEX:_default' \
'--ready-timeout=[Stop waiting for readiness after this many seconds (the job keeps running)]:SECS:_default' \
'-t+[Stop it after this many seconds (default\: the profile'\''s jobs.ttl); a job'\''s timeout]:SECS:_default' \
'--ttl=[Stop it after this many seconds (default\: the profile'\''s jobs.ttl); a job'\''s timeout]:SECS:_default' \
'--timeout=[Stop it after this many seconds (default\: the profile'\''s jobs.ttl); a job'\''s timeout]:SECS:_default' \
'-p+[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'--profile=[Profile name or path to a .toml file]:NAME|PATH:_agentbash_profiles' \
'-C+[Working directory, relative to the invoking directory]:DIR:_files -/' \
'--cwd=[Working directory, relative to the invoking directory]:DIR:_files -/' \
'*--tools=[Comma-separated tools the caller has (for the interceptor); overrides the profile]:LIST:_default' \
'--sandbox=[Kernel sandbox for this job instead of the profile'\''s \[sandbox\] mode]:MODE:((off\:"No sandbox\: the command runs with your rights"
read-only\:"Nothing writable but a private TMPDIR; deny_read and network as in the profile"
workspace-write\:"The working directory'\''s tree (or \[sandbox\] workspace) and \`writable\` too"))' \
'*-e+[Extra environment variable for the command (repeatable)]:KEY=VALUE:_default' \
'*--env=[Extra environment variable for the command (repeatable)]:KEY=VALUE:_default' \
'--pty[Run it on a pseudo-terminal (a REPL, a full-screen program)]' \
'(--pty)--stdin[Keep a pipe to its stdin open for \`job send\`]' \
'--no-intercept[Skip the interceptor]' \
'--json[The answer as JSON]' \
'-h[Print help (see more with '\''--help'\'')]' \
'--help[Print help (see more with '\''--help'\'')]' \
'*::command -- The command (after --). One word is a shell command text, run as written (`-- '\''ls | wc -l'\''`); several words are an argv, each word shell-quoted before they are joined, so it runs exactly as typed (`-- printf '\''%s\n'\'' '\''a b'\''` prints `a b`), as `timeout`, `env` and `sudo` treat theirs:_cmdambivalent' \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
'--json[The record as JSON]' \
'-h[Print help]' \
'--help[Print help]' \
':name -- The job\: job\://N, N or its name:_default' \
&& ret=0
;;
(wait)
_arguments "${_arguments_options[@]}" : \
'-t+[Wait at most this many seconds (default\: until it ends)]:SECS:_default' \
'--timeout=[Wait at most this many seconds (default\: until it ends)]:SECS:_default' \
'--json[The answer as JSON]' \
'-h[Print help]' \
'--help[Print help]' \
':name -- The job\: job\://N, N or its name:_default' \
&& ret=0
;;
(output)
_arguments "${_arguments_options[@]}" : \
'(--tail --screen)--cursor=[Read from this byte offset (the \`cursor\` of the previous read); default\: from the start]:C:_default' \
'--wait=[Wait up to this many seconds for output when there is none yet]:SECS:_default' \
'(--screen)--tail=[Only the last N lines]:N:_default' \
'--max-bytes=[Return at most this many bytes]:BYTES:_default' \
'--screen[The screen of a --pty job, as text rows]' \
'(--tail --screen --json)-f[Stream the output as the job prints it, until the job ends]' \
'(--tail --screen --json)--follow[Stream the output as the job prints it, until the job ends]' \
'--json[The answer as JSON]' \
'-h[Print help]' \
'--help[Print help]' \
':name -- The job\: job\://N, N or its name:_default' \
&& ret=0
;;
(send)
_arguments "${_arguments_options[@]}" : \
'--text=[Text to send (before the keys)]:TEXT:_default' \
'*--keys=[Keys to send after the text\: Enter, Tab, Esc, Space, Backspace, Up, Down, Left, Right, C-<letter>]:KEY:_default' \
'--wait-ms=[Collect what the job prints for this many milliseconds after sending]:N:_default' \
'--json[The answer as JSON]' \
'-h[Print help]' \
'--help[Print help]' \
':name -- The job\: job\://N, N or its name:_default' \
&& ret=0
;;
(stop)
_arguments "${_arguments_options[@]}" : \
'--json[The answer as JSON]' \
'-h[Print help]' \
'--help[Print help]' \
':name -- The job\: job\://N, N or its name:_default' \
&& ret=0
;;
(list)
_arguments "${_arguments_options[@]}" : \
'--all[Finished jobs too]' \
'--json[The list as JSON]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(rm)
_arguments "${_arguments_options[@]}" : \
'--json[The answer as JSON]' \
'-h[Print help]' \
'--help[Print help]' \
':name -- The job\: job\://N, N or its name:_default' \
&& ret=0
;;
(gc)
_arguments "${_arguments_options[@]}" : \
'-p+[Profile name or path to a .toml file (for jobs.keep_exited)]:NAME|PATH:_agentbash_profiles' \
'--profile=[Profile name or path to a .toml file (for jobs.keep_exited)]:NAME|PATH:_agentbash_profiles' \
'--json[The answer as JSON]' \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agentbash__subcmd__job__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-job-help-command-$line[1]:"
        case $line[1] in
            (start)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(wait)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(output)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(send)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(stop)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(rm)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(gc)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
;;
(completions)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
':shell -- The shell to generate completions for:(bash zsh fish elvish powershell)' \
&& ret=0
;;
(man)
_arguments "${_arguments_options[@]}" : \
'-h[Print help]' \
'--help[Print help]' \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
":: :_agentbash__subcmd__help_commands" \
"*::: :->help" \
&& ret=0

    case $state in
    (help)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-help-command-$line[1]:"
        case $line[1] in
            (run)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(explain)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(rpc)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(mcp)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(profile)
_arguments "${_arguments_options[@]}" : \
":: :_agentbash__subcmd__help__subcmd__profile_commands" \
"*::: :->profile" \
&& ret=0

    case $state in
    (profile)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-help-profile-command-$line[1]:"
        case $line[1] in
            (list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(show)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(check)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(rules)
_arguments "${_arguments_options[@]}" : \
":: :_agentbash__subcmd__help__subcmd__rules_commands" \
"*::: :->rules" \
&& ret=0

    case $state in
    (rules)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-help-rules-command-$line[1]:"
        case $line[1] in
            (list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(test)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(check)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(artifact)
_arguments "${_arguments_options[@]}" : \
":: :_agentbash__subcmd__help__subcmd__artifact_commands" \
"*::: :->artifact" \
&& ret=0

    case $state in
    (artifact)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-help-artifact-command-$line[1]:"
        case $line[1] in
            (list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(show)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(path)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(rm)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(gc)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(session)
_arguments "${_arguments_options[@]}" : \
":: :_agentbash__subcmd__help__subcmd__session_commands" \
"*::: :->session" \
&& ret=0

    case $state in
    (session)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-help-session-command-$line[1]:"
        case $line[1] in
            (list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(show)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(rm)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(snapshot)
_arguments "${_arguments_options[@]}" : \
":: :_agentbash__subcmd__help__subcmd__snapshot_commands" \
"*::: :->snapshot" \
&& ret=0

    case $state in
    (snapshot)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-help-snapshot-command-$line[1]:"
        case $line[1] in
            (show)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(refresh)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(report)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(trust)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(sandbox)
_arguments "${_arguments_options[@]}" : \
":: :_agentbash__subcmd__help__subcmd__sandbox_commands" \
"*::: :->sandbox" \
&& ret=0

    case $state in
    (sandbox)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-help-sandbox-command-$line[1]:"
        case $line[1] in
            (check)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(job)
_arguments "${_arguments_options[@]}" : \
":: :_agentbash__subcmd__help__subcmd__job_commands" \
"*::: :->job" \
&& ret=0

    case $state in
    (job)
        words=($line[1] "${words[@]}")
        (( CURRENT += 1 ))
        curcontext="${curcontext%:*:*}:agentbash-help-job-command-$line[1]:"
        case $line[1] in
            (start)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(status)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(wait)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(output)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(send)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(stop)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(list)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(rm)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(gc)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
(completions)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(man)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
(help)
_arguments "${_arguments_options[@]}" : \
&& ret=0
;;
        esac
    ;;
esac
;;
        esac
    ;;
esac
}

(( $+functions[_agentbash_commands] )) ||
_agentbash_commands() {
    local commands; commands=(
'run:Run one command' \
'explain:Dry run\: show every decision the run would make, run nothing' \
'rpc:NDJSON requests on stdin, responses on stdout' \
'mcp:Model Context Protocol server on stdio' \
'profile:List, show and check profiles' \
'rules:List, test and check interceptor rules' \
'artifact:Inspect and clean up spilled output (artifact\://ID)' \
'session:Inspect and remove persistent sessions' \
'snapshot:Inspect and refresh the snapshot of the user'\''s shell rc' \
'trust:Trust a project'\''s own profiles and rule packs (its .agentbash/), list or revoke trust' \
'sandbox:Report what the kernel sandbox can enforce on this machine' \
'job:Background jobs\: dev servers, watchers, long builds and REPLs (job\://N)' \
'completions:Print a shell completion script' \
'man:Print the roff man page' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agentbash commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__artifact_commands] )) ||
_agentbash__subcmd__artifact_commands() {
    local commands; commands=(
'list:List artifacts\: id, size, age, command' \
'show:Print an artifact'\''s raw content' \
'path:Print an artifact'\''s file path' \
'rm:Remove an artifact' \
'gc:Enforce max_total_bytes and max_age_days now' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agentbash artifact commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__artifact__subcmd__gc_commands] )) ||
_agentbash__subcmd__artifact__subcmd__gc_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash artifact gc commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__artifact__subcmd__help_commands] )) ||
_agentbash__subcmd__artifact__subcmd__help_commands() {
    local commands; commands=(
'list:List artifacts\: id, size, age, command' \
'show:Print an artifact'\''s raw content' \
'path:Print an artifact'\''s file path' \
'rm:Remove an artifact' \
'gc:Enforce max_total_bytes and max_age_days now' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agentbash artifact help commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__artifact__subcmd__help__subcmd__gc_commands] )) ||
_agentbash__subcmd__artifact__subcmd__help__subcmd__gc_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash artifact help gc commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__artifact__subcmd__help__subcmd__help_commands] )) ||
_agentbash__subcmd__artifact__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash artifact help help commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__artifact__subcmd__help__subcmd__list_commands] )) ||
_agentbash__subcmd__artifact__subcmd__help__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash artifact help list commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__artifact__subcmd__help__subcmd__path_commands] )) ||
_agentbash__subcmd__artifact__subcmd__help__subcmd__path_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash artifact help path commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__artifact__subcmd__help__subcmd__rm_commands] )) ||
_agentbash__subcmd__artifact__subcmd__help__subcmd__rm_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash artifact help rm commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__artifact__subcmd__help__subcmd__show_commands] )) ||
_agentbash__subcmd__artifact__subcmd__help__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash artifact help show commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__artifact__subcmd__list_commands] )) ||
_agentbash__subcmd__artifact__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash artifact list commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__artifact__subcmd__path_commands] )) ||
_agentbash__subcmd__artifact__subcmd__path_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash artifact path commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__artifact__subcmd__rm_commands] )) ||
_agentbash__subcmd__artifact__subcmd__rm_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash artifact rm commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__artifact__subcmd__show_commands] )) ||
_agentbash__subcmd__artifact__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash artifact show commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__completions_commands] )) ||
_agentbash__subcmd__completions_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash completions commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__explain_commands] )) ||
_agentbash__subcmd__explain_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash explain commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help_commands] )) ||
_agentbash__subcmd__help_commands() {
    local commands; commands=(
'run:Run one command' \
'explain:Dry run\: show every decision the run would make, run nothing' \
'rpc:NDJSON requests on stdin, responses on stdout' \
'mcp:Model Context Protocol server on stdio' \
'profile:List, show and check profiles' \
'rules:List, test and check interceptor rules' \
'artifact:Inspect and clean up spilled output (artifact\://ID)' \
'session:Inspect and remove persistent sessions' \
'snapshot:Inspect and refresh the snapshot of the user'\''s shell rc' \
'trust:Trust a project'\''s own profiles and rule packs (its .agentbash/), list or revoke trust' \
'sandbox:Report what the kernel sandbox can enforce on this machine' \
'job:Background jobs\: dev servers, watchers, long builds and REPLs (job\://N)' \
'completions:Print a shell completion script' \
'man:Print the roff man page' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agentbash help commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__artifact_commands] )) ||
_agentbash__subcmd__help__subcmd__artifact_commands() {
    local commands; commands=(
'list:List artifacts\: id, size, age, command' \
'show:Print an artifact'\''s raw content' \
'path:Print an artifact'\''s file path' \
'rm:Remove an artifact' \
'gc:Enforce max_total_bytes and max_age_days now' \
    )
    _describe -t commands 'agentbash help artifact commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__artifact__subcmd__gc_commands] )) ||
_agentbash__subcmd__help__subcmd__artifact__subcmd__gc_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help artifact gc commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__artifact__subcmd__list_commands] )) ||
_agentbash__subcmd__help__subcmd__artifact__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help artifact list commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__artifact__subcmd__path_commands] )) ||
_agentbash__subcmd__help__subcmd__artifact__subcmd__path_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help artifact path commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__artifact__subcmd__rm_commands] )) ||
_agentbash__subcmd__help__subcmd__artifact__subcmd__rm_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help artifact rm commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__artifact__subcmd__show_commands] )) ||
_agentbash__subcmd__help__subcmd__artifact__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help artifact show commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__completions_commands] )) ||
_agentbash__subcmd__help__subcmd__completions_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help completions commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__explain_commands] )) ||
_agentbash__subcmd__help__subcmd__explain_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help explain commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__help_commands] )) ||
_agentbash__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help help commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__job_commands] )) ||
_agentbash__subcmd__help__subcmd__job_commands() {
    local commands; commands=(
'start:Start a command as a job; answer once it is ready, has ended, or has run jobs.start_wait_ms' \
'status:A job'\''s record\: state, pid, exit code, times, log path and cursor' \
'wait:Wait until a job ends, then exit with its exit code (124 when -t runs out first)' \
'output:Show a job'\''s output\: from a cursor, the last lines, a PTY job'\''s screen, or as it comes (--follow)' \
'send:Type into a --pty job, or write to a --stdin job; answer with what it printed next' \
'stop:Stop a job and its whole process tree (TERM, grace, KILL)' \
'list:List running jobs (a job whose supervisor is gone is marked lost and its processes killed)' \
'rm:Remove a job that is over\: its record and its log' \
'gc:End what is left of lost jobs; remove jobs that ended more than jobs.keep_exited seconds ago' \
    )
    _describe -t commands 'agentbash help job commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__job__subcmd__gc_commands] )) ||
_agentbash__subcmd__help__subcmd__job__subcmd__gc_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help job gc commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__job__subcmd__list_commands] )) ||
_agentbash__subcmd__help__subcmd__job__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help job list commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__job__subcmd__output_commands] )) ||
_agentbash__subcmd__help__subcmd__job__subcmd__output_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help job output commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__job__subcmd__rm_commands] )) ||
_agentbash__subcmd__help__subcmd__job__subcmd__rm_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help job rm commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__job__subcmd__send_commands] )) ||
_agentbash__subcmd__help__subcmd__job__subcmd__send_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help job send commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__job__subcmd__start_commands] )) ||
_agentbash__subcmd__help__subcmd__job__subcmd__start_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help job start commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__job__subcmd__status_commands] )) ||
_agentbash__subcmd__help__subcmd__job__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help job status commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__job__subcmd__stop_commands] )) ||
_agentbash__subcmd__help__subcmd__job__subcmd__stop_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help job stop commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__job__subcmd__wait_commands] )) ||
_agentbash__subcmd__help__subcmd__job__subcmd__wait_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help job wait commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__man_commands] )) ||
_agentbash__subcmd__help__subcmd__man_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help man commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__mcp_commands] )) ||
_agentbash__subcmd__help__subcmd__mcp_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help mcp commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__profile_commands] )) ||
_agentbash__subcmd__help__subcmd__profile_commands() {
    local commands; commands=(
'list:List every profile that can be found, where it comes from, and what it shadows' \
'show:Show the resolved profile after \`extends\` and lookup' \
'check:Validate profiles; exit 1 with file\:line\:col errors' \
    )
    _describe -t commands 'agentbash help profile commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__profile__subcmd__check_commands] )) ||
_agentbash__subcmd__help__subcmd__profile__subcmd__check_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help profile check commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__profile__subcmd__list_commands] )) ||
_agentbash__subcmd__help__subcmd__profile__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help profile list commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__profile__subcmd__show_commands] )) ||
_agentbash__subcmd__help__subcmd__profile__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help profile show commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__rpc_commands] )) ||
_agentbash__subcmd__help__subcmd__rpc_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help rpc commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__rules_commands] )) ||
_agentbash__subcmd__help__subcmd__rules_commands() {
    local commands; commands=(
'list:List the rules a profile uses' \
'test:Show which candidate of a command matches which rule' \
'check:Compile every pattern and run every example of rule packs (default\: the built-in packs)' \
    )
    _describe -t commands 'agentbash help rules commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__rules__subcmd__check_commands] )) ||
_agentbash__subcmd__help__subcmd__rules__subcmd__check_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help rules check commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__rules__subcmd__list_commands] )) ||
_agentbash__subcmd__help__subcmd__rules__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help rules list commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__rules__subcmd__test_commands] )) ||
_agentbash__subcmd__help__subcmd__rules__subcmd__test_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help rules test commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__run_commands] )) ||
_agentbash__subcmd__help__subcmd__run_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help run commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__sandbox_commands] )) ||
_agentbash__subcmd__help__subcmd__sandbox_commands() {
    local commands; commands=(
'check:Probe Landlock, namespaces, network isolation, seccomp and bubblewrap, and say which engine \`auto\` picks' \
    )
    _describe -t commands 'agentbash help sandbox commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__sandbox__subcmd__check_commands] )) ||
_agentbash__subcmd__help__subcmd__sandbox__subcmd__check_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help sandbox check commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__session_commands] )) ||
_agentbash__subcmd__help__subcmd__session_commands() {
    local commands; commands=(
'list:List sessions' \
'show:Show a session'\''s saved state' \
'rm:Remove a session' \
    )
    _describe -t commands 'agentbash help session commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__session__subcmd__list_commands] )) ||
_agentbash__subcmd__help__subcmd__session__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help session list commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__session__subcmd__rm_commands] )) ||
_agentbash__subcmd__help__subcmd__session__subcmd__rm_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help session rm commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__session__subcmd__show_commands] )) ||
_agentbash__subcmd__help__subcmd__session__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help session show commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__snapshot_commands] )) ||
_agentbash__subcmd__help__subcmd__snapshot_commands() {
    local commands; commands=(
'show:Print the snapshot'\''s path and content' \
'refresh:Regenerate the snapshot now' \
'report:What was captured, what was dropped, and why' \
    )
    _describe -t commands 'agentbash help snapshot commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__snapshot__subcmd__refresh_commands] )) ||
_agentbash__subcmd__help__subcmd__snapshot__subcmd__refresh_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help snapshot refresh commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__snapshot__subcmd__report_commands] )) ||
_agentbash__subcmd__help__subcmd__snapshot__subcmd__report_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help snapshot report commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__snapshot__subcmd__show_commands] )) ||
_agentbash__subcmd__help__subcmd__snapshot__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help snapshot show commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__help__subcmd__trust_commands] )) ||
_agentbash__subcmd__help__subcmd__trust_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash help trust commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job_commands] )) ||
_agentbash__subcmd__job_commands() {
    local commands; commands=(
'start:Start a command as a job; answer once it is ready, has ended, or has run jobs.start_wait_ms' \
'status:A job'\''s record\: state, pid, exit code, times, log path and cursor' \
'wait:Wait until a job ends, then exit with its exit code (124 when -t runs out first)' \
'output:Show a job'\''s output\: from a cursor, the last lines, a PTY job'\''s screen, or as it comes (--follow)' \
'send:Type into a --pty job, or write to a --stdin job; answer with what it printed next' \
'stop:Stop a job and its whole process tree (TERM, grace, KILL)' \
'list:List running jobs (a job whose supervisor is gone is marked lost and its processes killed)' \
'rm:Remove a job that is over\: its record and its log' \
'gc:End what is left of lost jobs; remove jobs that ended more than jobs.keep_exited seconds ago' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agentbash job commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__gc_commands] )) ||
_agentbash__subcmd__job__subcmd__gc_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job gc commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__help_commands] )) ||
_agentbash__subcmd__job__subcmd__help_commands() {
    local commands; commands=(
'start:Start a command as a job; answer once it is ready, has ended, or has run jobs.start_wait_ms' \
'status:A job'\''s record\: state, pid, exit code, times, log path and cursor' \
'wait:Wait until a job ends, then exit with its exit code (124 when -t runs out first)' \
'output:Show a job'\''s output\: from a cursor, the last lines, a PTY job'\''s screen, or as it comes (--follow)' \
'send:Type into a --pty job, or write to a --stdin job; answer with what it printed next' \
'stop:Stop a job and its whole process tree (TERM, grace, KILL)' \
'list:List running jobs (a job whose supervisor is gone is marked lost and its processes killed)' \
'rm:Remove a job that is over\: its record and its log' \
'gc:End what is left of lost jobs; remove jobs that ended more than jobs.keep_exited seconds ago' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agentbash job help commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__help__subcmd__gc_commands] )) ||
_agentbash__subcmd__job__subcmd__help__subcmd__gc_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job help gc commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__help__subcmd__help_commands] )) ||
_agentbash__subcmd__job__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job help help commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__help__subcmd__list_commands] )) ||
_agentbash__subcmd__job__subcmd__help__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job help list commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__help__subcmd__output_commands] )) ||
_agentbash__subcmd__job__subcmd__help__subcmd__output_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job help output commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__help__subcmd__rm_commands] )) ||
_agentbash__subcmd__job__subcmd__help__subcmd__rm_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job help rm commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__help__subcmd__send_commands] )) ||
_agentbash__subcmd__job__subcmd__help__subcmd__send_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job help send commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__help__subcmd__start_commands] )) ||
_agentbash__subcmd__job__subcmd__help__subcmd__start_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job help start commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__help__subcmd__status_commands] )) ||
_agentbash__subcmd__job__subcmd__help__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job help status commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__help__subcmd__stop_commands] )) ||
_agentbash__subcmd__job__subcmd__help__subcmd__stop_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job help stop commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__help__subcmd__wait_commands] )) ||
_agentbash__subcmd__job__subcmd__help__subcmd__wait_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job help wait commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__list_commands] )) ||
_agentbash__subcmd__job__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job list commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__output_commands] )) ||
_agentbash__subcmd__job__subcmd__output_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job output commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__rm_commands] )) ||
_agentbash__subcmd__job__subcmd__rm_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job rm commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__send_commands] )) ||
_agentbash__subcmd__job__subcmd__send_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job send commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__start_commands] )) ||
_agentbash__subcmd__job__subcmd__start_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job start commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__status_commands] )) ||
_agentbash__subcmd__job__subcmd__status_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job status commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__stop_commands] )) ||
_agentbash__subcmd__job__subcmd__stop_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job stop commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__job__subcmd__wait_commands] )) ||
_agentbash__subcmd__job__subcmd__wait_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash job wait commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__man_commands] )) ||
_agentbash__subcmd__man_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash man commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__mcp_commands] )) ||
_agentbash__subcmd__mcp_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash mcp commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__profile_commands] )) ||
_agentbash__subcmd__profile_commands() {
    local commands; commands=(
'list:List every profile that can be found, where it comes from, and what it shadows' \
'show:Show the resolved profile after \`extends\` and lookup' \
'check:Validate profiles; exit 1 with file\:line\:col errors' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agentbash profile commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__profile__subcmd__check_commands] )) ||
_agentbash__subcmd__profile__subcmd__check_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash profile check commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__profile__subcmd__help_commands] )) ||
_agentbash__subcmd__profile__subcmd__help_commands() {
    local commands; commands=(
'list:List every profile that can be found, where it comes from, and what it shadows' \
'show:Show the resolved profile after \`extends\` and lookup' \
'check:Validate profiles; exit 1 with file\:line\:col errors' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agentbash profile help commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__profile__subcmd__help__subcmd__check_commands] )) ||
_agentbash__subcmd__profile__subcmd__help__subcmd__check_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash profile help check commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__profile__subcmd__help__subcmd__help_commands] )) ||
_agentbash__subcmd__profile__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash profile help help commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__profile__subcmd__help__subcmd__list_commands] )) ||
_agentbash__subcmd__profile__subcmd__help__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash profile help list commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__profile__subcmd__help__subcmd__show_commands] )) ||
_agentbash__subcmd__profile__subcmd__help__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash profile help show commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__profile__subcmd__list_commands] )) ||
_agentbash__subcmd__profile__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash profile list commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__profile__subcmd__show_commands] )) ||
_agentbash__subcmd__profile__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash profile show commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__rpc_commands] )) ||
_agentbash__subcmd__rpc_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash rpc commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__rules_commands] )) ||
_agentbash__subcmd__rules_commands() {
    local commands; commands=(
'list:List the rules a profile uses' \
'test:Show which candidate of a command matches which rule' \
'check:Compile every pattern and run every example of rule packs (default\: the built-in packs)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agentbash rules commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__rules__subcmd__check_commands] )) ||
_agentbash__subcmd__rules__subcmd__check_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash rules check commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__rules__subcmd__help_commands] )) ||
_agentbash__subcmd__rules__subcmd__help_commands() {
    local commands; commands=(
'list:List the rules a profile uses' \
'test:Show which candidate of a command matches which rule' \
'check:Compile every pattern and run every example of rule packs (default\: the built-in packs)' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agentbash rules help commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__rules__subcmd__help__subcmd__check_commands] )) ||
_agentbash__subcmd__rules__subcmd__help__subcmd__check_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash rules help check commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__rules__subcmd__help__subcmd__help_commands] )) ||
_agentbash__subcmd__rules__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash rules help help commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__rules__subcmd__help__subcmd__list_commands] )) ||
_agentbash__subcmd__rules__subcmd__help__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash rules help list commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__rules__subcmd__help__subcmd__test_commands] )) ||
_agentbash__subcmd__rules__subcmd__help__subcmd__test_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash rules help test commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__rules__subcmd__list_commands] )) ||
_agentbash__subcmd__rules__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash rules list commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__rules__subcmd__test_commands] )) ||
_agentbash__subcmd__rules__subcmd__test_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash rules test commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__run_commands] )) ||
_agentbash__subcmd__run_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash run commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__sandbox_commands] )) ||
_agentbash__subcmd__sandbox_commands() {
    local commands; commands=(
'check:Probe Landlock, namespaces, network isolation, seccomp and bubblewrap, and say which engine \`auto\` picks' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agentbash sandbox commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__sandbox__subcmd__check_commands] )) ||
_agentbash__subcmd__sandbox__subcmd__check_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash sandbox check commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__sandbox__subcmd__help_commands] )) ||
_agentbash__subcmd__sandbox__subcmd__help_commands() {
    local commands; commands=(
'check:Probe Landlock, namespaces, network isolation, seccomp and bubblewrap, and say which engine \`auto\` picks' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agentbash sandbox help commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__sandbox__subcmd__help__subcmd__check_commands] )) ||
_agentbash__subcmd__sandbox__subcmd__help__subcmd__check_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash sandbox help check commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__sandbox__subcmd__help__subcmd__help_commands] )) ||
_agentbash__subcmd__sandbox__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash sandbox help help commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__session_commands] )) ||
_agentbash__subcmd__session_commands() {
    local commands; commands=(
'list:List sessions' \
'show:Show a session'\''s saved state' \
'rm:Remove a session' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agentbash session commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__session__subcmd__help_commands] )) ||
_agentbash__subcmd__session__subcmd__help_commands() {
    local commands; commands=(
'list:List sessions' \
'show:Show a session'\''s saved state' \
'rm:Remove a session' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agentbash session help commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__session__subcmd__help__subcmd__help_commands] )) ||
_agentbash__subcmd__session__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash session help help commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__session__subcmd__help__subcmd__list_commands] )) ||
_agentbash__subcmd__session__subcmd__help__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash session help list commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__session__subcmd__help__subcmd__rm_commands] )) ||
_agentbash__subcmd__session__subcmd__help__subcmd__rm_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash session help rm commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__session__subcmd__help__subcmd__show_commands] )) ||
_agentbash__subcmd__session__subcmd__help__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash session help show commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__session__subcmd__list_commands] )) ||
_agentbash__subcmd__session__subcmd__list_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash session list commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__session__subcmd__rm_commands] )) ||
_agentbash__subcmd__session__subcmd__rm_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash session rm commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__session__subcmd__show_commands] )) ||
_agentbash__subcmd__session__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash session show commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__snapshot_commands] )) ||
_agentbash__subcmd__snapshot_commands() {
    local commands; commands=(
'show:Print the snapshot'\''s path and content' \
'refresh:Regenerate the snapshot now' \
'report:What was captured, what was dropped, and why' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agentbash snapshot commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__snapshot__subcmd__help_commands] )) ||
_agentbash__subcmd__snapshot__subcmd__help_commands() {
    local commands; commands=(
'show:Print the snapshot'\''s path and content' \
'refresh:Regenerate the snapshot now' \
'report:What was captured, what was dropped, and why' \
'help:Print this message or the help of the given subcommand(s)' \
    )
    _describe -t commands 'agentbash snapshot help commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__snapshot__subcmd__help__subcmd__help_commands] )) ||
_agentbash__subcmd__snapshot__subcmd__help__subcmd__help_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash snapshot help help commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__snapshot__subcmd__help__subcmd__refresh_commands] )) ||
_agentbash__subcmd__snapshot__subcmd__help__subcmd__refresh_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash snapshot help refresh commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__snapshot__subcmd__help__subcmd__report_commands] )) ||
_agentbash__subcmd__snapshot__subcmd__help__subcmd__report_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash snapshot help report commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__snapshot__subcmd__help__subcmd__show_commands] )) ||
_agentbash__subcmd__snapshot__subcmd__help__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash snapshot help show commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__snapshot__subcmd__refresh_commands] )) ||
_agentbash__subcmd__snapshot__subcmd__refresh_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash snapshot refresh commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__snapshot__subcmd__report_commands] )) ||
_agentbash__subcmd__snapshot__subcmd__report_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash snapshot report commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__snapshot__subcmd__show_commands] )) ||
_agentbash__subcmd__snapshot__subcmd__show_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash snapshot show commands' commands "$@"
}
(( $+functions[_agentbash__subcmd__trust_commands] )) ||
_agentbash__subcmd__trust_commands() {
    local commands; commands=()
    _describe -t commands 'agentbash trust commands' commands "$@"
}

# Added by agentbash (src/commands/generated.rs): values only known at completion time.
(( $+functions[_agentbash_profiles] )) ||
_agentbash_profiles() {
    if [[ $PREFIX == */* || $PREFIX == *.toml ]]; then
        _files -g '*.toml'
    else
        local -a profiles
        profiles=(${(f)"$(command agentbash profile list --names 2>/dev/null)"})
        _wanted profiles expl 'profile' compadd -a profiles
    fi
}
(( $+functions[_agentbash_rule_packs] )) ||
_agentbash_rule_packs() {
    if [[ $PREFIX == */* || $PREFIX == *.toml ]]; then
        _files -g '*.toml'
    else
        local -a packs
        packs=(default guard)
        _wanted packs expl 'rule pack' compadd -a packs
    fi
}

if [ "$funcstack[1]" = "_agentbash" ]; then
    _agentbash "$@"
else
    compdef _agentbash agentbash
fi
