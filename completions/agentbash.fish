# Print an optspec for argparse to handle cmd's options that are independent of any subcommand.
function __fish_agentbash_global_optspecs
    string join \n h/help V/version
end

function __fish_agentbash_needs_command
    # Figure out if the current invocation already has a command.
    set -l cmd (commandline -opc)
    set -e cmd[1]
    argparse -s (__fish_agentbash_global_optspecs) -- $cmd 2>/dev/null
    or return
    if set -q argv[1]
        # Also print the command, so this can be used to figure out what it is.
        echo $argv[1]
        return 1
    end
    return 0
end

function __fish_agentbash_using_subcommand
    set -l cmd (__fish_agentbash_needs_command)
    test -z "$cmd"
    and return 1
    contains -- $cmd[1] $argv
end

complete -c agentbash -n "__fish_agentbash_needs_command" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_needs_command" -s V -l version -d 'Print version'
complete -c agentbash -n "__fish_agentbash_needs_command" -f -a "run" -d 'Run one command'
complete -c agentbash -n "__fish_agentbash_needs_command" -f -a "explain" -d 'Dry run: show every decision the run would make, run nothing'
complete -c agentbash -n "__fish_agentbash_needs_command" -f -a "rpc" -d 'NDJSON requests on stdin, responses on stdout'
complete -c agentbash -n "__fish_agentbash_needs_command" -f -a "mcp" -d 'Model Context Protocol server on stdio'
complete -c agentbash -n "__fish_agentbash_needs_command" -f -a "profile" -d 'List, show and check profiles'
complete -c agentbash -n "__fish_agentbash_needs_command" -f -a "rules" -d 'List, test and check interceptor rules'
complete -c agentbash -n "__fish_agentbash_needs_command" -f -a "artifact" -d 'Inspect and clean up spilled output (artifact://ID)'
complete -c agentbash -n "__fish_agentbash_needs_command" -f -a "session" -d 'Inspect and remove persistent sessions'
complete -c agentbash -n "__fish_agentbash_needs_command" -f -a "snapshot" -d 'Inspect and refresh the snapshot of the user\'s shell rc'
complete -c agentbash -n "__fish_agentbash_needs_command" -f -a "trust" -d 'Trust a project\'s own profiles and rule packs (its .agentbash/), list or revoke trust'
complete -c agentbash -n "__fish_agentbash_needs_command" -f -a "sandbox" -d 'Report what the kernel sandbox can enforce on this machine'
complete -c agentbash -n "__fish_agentbash_needs_command" -f -a "job" -d 'Background jobs: dev servers, watchers, long builds and REPLs (job://N)'
complete -c agentbash -n "__fish_agentbash_needs_command" -f -a "completions" -d 'Print a shell completion script'
complete -c agentbash -n "__fish_agentbash_needs_command" -f -a "man" -d 'Print the roff man page'
complete -c agentbash -n "__fish_agentbash_needs_command" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -s p -l profile -d 'Profile name or path to a .toml file' -r -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -l target -d 'Run on the target of profile NAME (its [target] transport); --profile still guards here first' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -s C -l cwd -d 'Working directory, relative to the invoking directory (or the session\'s cwd)' -r -f -a "(__fish_complete_directories)"
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -s t -l timeout -d 'Requested timeout in seconds, clamped to the profile\'s allowed range' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -l head -d 'Show only the first N lines; the command still runs to completion' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -l tail -d 'Show only the last N lines; the command still runs to completion' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -l mode -d 'Execution mode: auto picks a PTY only when the profile allows it and stdin and stdout are terminals' -r -f -a "auto\t''
print\t''
pty\t''"
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -l format -d 'Output format' -r -f -a "text\t''
json\t''
ndjson\t''"
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -l color -d 'Colour: auto honours NO_COLOR, CLICOLOR_FORCE and GitHub Actions, then whether stdout is a terminal' -r -f -a "auto\t''
always\t''
never\t''"
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -l tools -d 'Comma-separated tools the caller has (for the interceptor); overrides the profile' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -l sandbox -d 'Kernel sandbox for this run instead of the profile\'s [sandbox] mode' -r -f -a "off\t'No sandbox: the command runs with your rights'
read-only\t'Nothing writable but a private TMPDIR; deny_read and network as in the profile'
workspace-write\t'The working directory\'s tree (or [sandbox] workspace) and `writable` too'"
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -s e -l env -d 'Extra environment variable for the command (repeatable)' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -s s -l session -d 'Persistent session: cwd, exported variables, functions and aliases carry over' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -l stderr -d 'The command\'s stderr: merged into the output (the default), or separate (print mode only)' -r -f -a "merged\t'One pipe: stderr interleaved with stdout as produced'
separate\t'stderr on a pipe of its own: to agentbash\'s stderr as produced (text), the result\'s `stderr` (JSON)'"
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -l pty -d 'Force PTY mode (same as --mode pty)'
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -l no-pty -d 'Forbid PTY mode (same as --mode print)'
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -l json -d 'Same as --format json'
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -l no-intercept -d 'Skip the interceptor'
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -l stdin -d 'Give the command agentbash\'s stdin (default: the null device)'
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -l expand -d 'Text format: show the whole retained output instead of the collapsed preview'
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -l stream -d 'Text format: write the output as it is produced, into a pipe as on a terminal (the profile\'s render.live = "stream")'
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -s q -l quiet -d 'Text format: output only, no header, footer or notices'
complete -c agentbash -n "__fish_agentbash_using_subcommand run" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -s p -l profile -d 'Profile name or path to a .toml file' -r -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -l target -d 'Run on the target of profile NAME (its [target] transport); --profile still guards here first' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -s C -l cwd -d 'Working directory, relative to the invoking directory (or the session\'s cwd)' -r -f -a "(__fish_complete_directories)"
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -s t -l timeout -d 'Requested timeout in seconds, clamped to the profile\'s allowed range' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -l head -d 'Show only the first N lines; the command still runs to completion' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -l tail -d 'Show only the last N lines; the command still runs to completion' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -l mode -d 'Execution mode: auto picks a PTY only when the profile allows it and stdin and stdout are terminals' -r -f -a "auto\t''
print\t''
pty\t''"
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -l format -d 'Output format' -r -f -a "text\t''
json\t''
ndjson\t''"
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -l color -d 'Colour: auto honours NO_COLOR, CLICOLOR_FORCE and GitHub Actions, then whether stdout is a terminal' -r -f -a "auto\t''
always\t''
never\t''"
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -l tools -d 'Comma-separated tools the caller has (for the interceptor); overrides the profile' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -l sandbox -d 'Kernel sandbox for this run instead of the profile\'s [sandbox] mode' -r -f -a "off\t'No sandbox: the command runs with your rights'
read-only\t'Nothing writable but a private TMPDIR; deny_read and network as in the profile'
workspace-write\t'The working directory\'s tree (or [sandbox] workspace) and `writable` too'"
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -s e -l env -d 'Extra environment variable for the command (repeatable)' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -s s -l session -d 'Persistent session: cwd, exported variables, functions and aliases carry over' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -l stderr -d 'The command\'s stderr: merged into the output (the default), or separate (print mode only)' -r -f -a "merged\t'One pipe: stderr interleaved with stdout as produced'
separate\t'stderr on a pipe of its own: to agentbash\'s stderr as produced (text), the result\'s `stderr` (JSON)'"
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -l pty -d 'Force PTY mode (same as --mode pty)'
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -l no-pty -d 'Forbid PTY mode (same as --mode print)'
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -l json -d 'Same as --format json'
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -l no-intercept -d 'Skip the interceptor'
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -l stdin -d 'Give the command agentbash\'s stdin (default: the null device)'
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -l expand -d 'Text format: show the whole retained output instead of the collapsed preview'
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -l stream -d 'Text format: write the output as it is produced, into a pipe as on a terminal (the profile\'s render.live = "stream")'
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -s q -l quiet -d 'Text format: output only, no header, footer or notices'
complete -c agentbash -n "__fish_agentbash_using_subcommand explain" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentbash -n "__fish_agentbash_using_subcommand rpc" -s p -l profile -d 'Profile name or path to a .toml file' -r -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand rpc" -l target -d 'Serve through the target of profile NAME (its [target] transport); --profile still guards here first' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand rpc" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand mcp" -s p -l profile -d 'Profile name or path to a .toml file' -r -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand mcp" -l target -d 'Serve through the target of profile NAME (its [target] transport); --profile still guards here first' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand mcp" -l toolbox -d 'Also serve the file tools read, grep, glob, edit and write, under the profile\'s sandbox, guard and redaction (default: the profile\'s mcp.toolbox)'
complete -c agentbash -n "__fish_agentbash_using_subcommand mcp" -l no-toolbox -d 'Serve only bash, read_artifact and the job tools, whatever mcp.toolbox says'
complete -c agentbash -n "__fish_agentbash_using_subcommand mcp" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand profile; and not __fish_seen_subcommand_from list show check help" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand profile; and not __fish_seen_subcommand_from list show check help" -f -a "list" -d 'List every profile that can be found, where it comes from, and what it shadows'
complete -c agentbash -n "__fish_agentbash_using_subcommand profile; and not __fish_seen_subcommand_from list show check help" -f -a "show" -d 'Show the resolved profile after `extends` and lookup'
complete -c agentbash -n "__fish_agentbash_using_subcommand profile; and not __fish_seen_subcommand_from list show check help" -f -a "check" -d 'Validate profiles; exit 1 with file:line:col errors'
complete -c agentbash -n "__fish_agentbash_using_subcommand profile; and not __fish_seen_subcommand_from list show check help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentbash -n "__fish_agentbash_using_subcommand profile; and __fish_seen_subcommand_from list" -l names -d 'One name per line, nothing else (for shell completion)'
complete -c agentbash -n "__fish_agentbash_using_subcommand profile; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand profile; and __fish_seen_subcommand_from show" -l origin -d 'Annotate each value with the file it came from'
complete -c agentbash -n "__fish_agentbash_using_subcommand profile; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand profile; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand profile; and __fish_seen_subcommand_from help" -f -a "list" -d 'List every profile that can be found, where it comes from, and what it shadows'
complete -c agentbash -n "__fish_agentbash_using_subcommand profile; and __fish_seen_subcommand_from help" -f -a "show" -d 'Show the resolved profile after `extends` and lookup'
complete -c agentbash -n "__fish_agentbash_using_subcommand profile; and __fish_seen_subcommand_from help" -f -a "check" -d 'Validate profiles; exit 1 with file:line:col errors'
complete -c agentbash -n "__fish_agentbash_using_subcommand profile; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and not __fish_seen_subcommand_from list test check help" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and not __fish_seen_subcommand_from list test check help" -f -a "list" -d 'List the rules a profile uses'
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and not __fish_seen_subcommand_from list test check help" -f -a "test" -d 'Show which candidate of a command matches which rule'
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and not __fish_seen_subcommand_from list test check help" -f -a "check" -d 'Compile every pattern and run every example of rule packs (default: the built-in packs)'
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and not __fish_seen_subcommand_from list test check help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and __fish_seen_subcommand_from list" -s p -l profile -d 'Profile name or path to a .toml file' -r -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and __fish_seen_subcommand_from test" -s p -l profile -d 'Profile name or path to a .toml file' -r -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and __fish_seen_subcommand_from test" -l tools -d 'Comma-separated tools the caller has; overrides the profile' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and __fish_seen_subcommand_from test" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and __fish_seen_subcommand_from check" -l corpus -d 'Also score the packs (together; default: the `default` pack) on a labelled corpus (`<pass|TOOL><TAB><command>` per line): precision and recall per tool, every disagreement; exit 1 below the corpus\'s thresholds' -r -F
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and __fish_seen_subcommand_from check" -l json -d 'Print the corpus score as JSON (with --corpus)'
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and __fish_seen_subcommand_from help" -f -a "list" -d 'List the rules a profile uses'
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and __fish_seen_subcommand_from help" -f -a "test" -d 'Show which candidate of a command matches which rule'
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and __fish_seen_subcommand_from help" -f -a "check" -d 'Compile every pattern and run every example of rule packs (default: the built-in packs)'
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and not __fish_seen_subcommand_from list show path rm gc help" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and not __fish_seen_subcommand_from list show path rm gc help" -f -a "list" -d 'List artifacts: id, size, age, command'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and not __fish_seen_subcommand_from list show path rm gc help" -f -a "show" -d 'Print an artifact\'s raw content'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and not __fish_seen_subcommand_from list show path rm gc help" -f -a "path" -d 'Print an artifact\'s file path'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and not __fish_seen_subcommand_from list show path rm gc help" -f -a "rm" -d 'Remove an artifact'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and not __fish_seen_subcommand_from list show path rm gc help" -f -a "gc" -d 'Enforce max_total_bytes and max_age_days now'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and not __fish_seen_subcommand_from list show path rm gc help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from list" -s p -l profile -d 'Profile name or path to a .toml file' -r -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from show" -l head -d 'Only the first N lines' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from show" -l tail -d 'Only the last N lines (applied after --head)' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from show" -s p -l profile -d 'Profile name or path to a .toml file' -r -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from show" -l target -d 'Read the artifact of a run on the target of profile NAME' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from path" -s p -l profile -d 'Profile name or path to a .toml file' -r -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from path" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from rm" -s p -l profile -d 'Profile name or path to a .toml file' -r -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from rm" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from gc" -s p -l profile -d 'Profile name or path to a .toml file' -r -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from gc" -l dry-run -d 'Say what would be removed, remove nothing'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from gc" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from help" -f -a "list" -d 'List artifacts: id, size, age, command'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from help" -f -a "show" -d 'Print an artifact\'s raw content'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from help" -f -a "path" -d 'Print an artifact\'s file path'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from help" -f -a "rm" -d 'Remove an artifact'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from help" -f -a "gc" -d 'Enforce max_total_bytes and max_age_days now'
complete -c agentbash -n "__fish_agentbash_using_subcommand artifact; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentbash -n "__fish_agentbash_using_subcommand session; and not __fish_seen_subcommand_from list show rm help" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand session; and not __fish_seen_subcommand_from list show rm help" -f -a "list" -d 'List sessions'
complete -c agentbash -n "__fish_agentbash_using_subcommand session; and not __fish_seen_subcommand_from list show rm help" -f -a "show" -d 'Show a session\'s saved state'
complete -c agentbash -n "__fish_agentbash_using_subcommand session; and not __fish_seen_subcommand_from list show rm help" -f -a "rm" -d 'Remove a session'
complete -c agentbash -n "__fish_agentbash_using_subcommand session; and not __fish_seen_subcommand_from list show rm help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentbash -n "__fish_agentbash_using_subcommand session; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand session; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand session; and __fish_seen_subcommand_from rm" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "list" -d 'List sessions'
complete -c agentbash -n "__fish_agentbash_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "show" -d 'Show a session\'s saved state'
complete -c agentbash -n "__fish_agentbash_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "rm" -d 'Remove a session'
complete -c agentbash -n "__fish_agentbash_using_subcommand session; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentbash -n "__fish_agentbash_using_subcommand snapshot; and not __fish_seen_subcommand_from show refresh report help" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand snapshot; and not __fish_seen_subcommand_from show refresh report help" -f -a "show" -d 'Print the snapshot\'s path and content'
complete -c agentbash -n "__fish_agentbash_using_subcommand snapshot; and not __fish_seen_subcommand_from show refresh report help" -f -a "refresh" -d 'Regenerate the snapshot now'
complete -c agentbash -n "__fish_agentbash_using_subcommand snapshot; and not __fish_seen_subcommand_from show refresh report help" -f -a "report" -d 'What was captured, what was dropped, and why'
complete -c agentbash -n "__fish_agentbash_using_subcommand snapshot; and not __fish_seen_subcommand_from show refresh report help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentbash -n "__fish_agentbash_using_subcommand snapshot; and __fish_seen_subcommand_from show" -s p -l profile -d 'Profile name or path to a .toml file' -r -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand snapshot; and __fish_seen_subcommand_from show" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand snapshot; and __fish_seen_subcommand_from refresh" -s p -l profile -d 'Profile name or path to a .toml file' -r -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand snapshot; and __fish_seen_subcommand_from refresh" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand snapshot; and __fish_seen_subcommand_from report" -s p -l profile -d 'Profile name or path to a .toml file' -r -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand snapshot; and __fish_seen_subcommand_from report" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand snapshot; and __fish_seen_subcommand_from help" -f -a "show" -d 'Print the snapshot\'s path and content'
complete -c agentbash -n "__fish_agentbash_using_subcommand snapshot; and __fish_seen_subcommand_from help" -f -a "refresh" -d 'Regenerate the snapshot now'
complete -c agentbash -n "__fish_agentbash_using_subcommand snapshot; and __fish_seen_subcommand_from help" -f -a "report" -d 'What was captured, what was dropped, and why'
complete -c agentbash -n "__fish_agentbash_using_subcommand snapshot; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentbash -n "__fish_agentbash_using_subcommand trust" -l list -d 'List trusted projects: when each was trusted and whether its files still match'
complete -c agentbash -n "__fish_agentbash_using_subcommand trust" -l revoke -d 'Forget the trust given to the project'
complete -c agentbash -n "__fish_agentbash_using_subcommand trust" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand sandbox; and not __fish_seen_subcommand_from check help" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand sandbox; and not __fish_seen_subcommand_from check help" -f -a "check" -d 'Probe Landlock, namespaces, network isolation, seccomp and bubblewrap, and say which engine `auto` picks'
complete -c agentbash -n "__fish_agentbash_using_subcommand sandbox; and not __fish_seen_subcommand_from check help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentbash -n "__fish_agentbash_using_subcommand sandbox; and __fish_seen_subcommand_from check" -l json -d 'The report as JSON'
complete -c agentbash -n "__fish_agentbash_using_subcommand sandbox; and __fish_seen_subcommand_from check" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand sandbox; and __fish_seen_subcommand_from help" -f -a "check" -d 'Probe Landlock, namespaces, network isolation, seccomp and bubblewrap, and say which engine `auto` picks'
complete -c agentbash -n "__fish_agentbash_using_subcommand sandbox; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and not __fish_seen_subcommand_from start status wait output send stop list rm gc help" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and not __fish_seen_subcommand_from start status wait output send stop list rm gc help" -f -a "start" -d 'Start a command as a job; answer once it is ready, has ended, or has run jobs.start_wait_ms'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and not __fish_seen_subcommand_from start status wait output send stop list rm gc help" -f -a "status" -d 'A job\'s record: state, pid, exit code, times, log path and cursor'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and not __fish_seen_subcommand_from start status wait output send stop list rm gc help" -f -a "wait" -d 'Wait until a job ends, then exit with its exit code (124 when -t runs out first)'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and not __fish_seen_subcommand_from start status wait output send stop list rm gc help" -f -a "output" -d 'Show a job\'s output: from a cursor, the last lines, a PTY job\'s screen, or as it comes (--follow)'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and not __fish_seen_subcommand_from start status wait output send stop list rm gc help" -f -a "send" -d 'Type into a --pty job, or write to a --stdin job; answer with what it printed next'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and not __fish_seen_subcommand_from start status wait output send stop list rm gc help" -f -a "stop" -d 'Stop a job and its whole process tree (TERM, grace, KILL)'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and not __fish_seen_subcommand_from start status wait output send stop list rm gc help" -f -a "list" -d 'List running jobs (a job whose supervisor is gone is marked lost and its processes killed)'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and not __fish_seen_subcommand_from start status wait output send stop list rm gc help" -f -a "rm" -d 'Remove a job that is over: its record and its log'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and not __fish_seen_subcommand_from start status wait output send stop list rm gc help" -f -a "gc" -d 'End what is left of lost jobs; remove jobs that ended more than jobs.keep_exited seconds ago'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and not __fish_seen_subcommand_from start status wait output send stop list rm gc help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from start" -l name -d 'A name to refer to the job by (instead of job://N)' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from start" -l ready-port -d 'Ready once this TCP port accepts and the job\'s own processes hold the listener' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from start" -l ready -d 'Ready once a line of output matches this regular expression' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from start" -l ready-timeout -d 'Stop waiting for readiness after this many seconds (the job keeps running)' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from start" -s t -l ttl -l timeout -d 'Stop it after this many seconds (default: the profile\'s jobs.ttl); a job\'s timeout' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from start" -s p -l profile -d 'Profile name or path to a .toml file' -r -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from start" -s C -l cwd -d 'Working directory, relative to the invoking directory' -r -f -a "(__fish_complete_directories)"
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from start" -l tools -d 'Comma-separated tools the caller has (for the interceptor); overrides the profile' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from start" -l sandbox -d 'Kernel sandbox for this job instead of the profile\'s [sandbox] mode' -r -f -a "off\t'No sandbox: the command runs with your rights'
read-only\t'Nothing writable but a private TMPDIR; deny_read and network as in the profile'
workspace-write\t'The working directory\'s tree (or [sandbox] workspace) and `writable` too'"
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from start" -s e -l env -d 'Extra environment variable for the command (repeatable)' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from start" -l pty -d 'Run it on a pseudo-terminal (a REPL, a full-screen program)'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from start" -l stdin -d 'Keep a pipe to its stdin open for `job send`'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from start" -l no-intercept -d 'Skip the interceptor'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from start" -l json -d 'The answer as JSON'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from start" -s h -l help -d 'Print help (see more with \'--help\')'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from status" -l json -d 'The record as JSON'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from status" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from wait" -s t -l timeout -d 'Wait at most this many seconds (default: until it ends)' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from wait" -l json -d 'The answer as JSON'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from wait" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from output" -l cursor -d 'Read from this byte offset (the `cursor` of the previous read); default: from the start' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from output" -l wait -d 'Wait up to this many seconds for output when there is none yet' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from output" -l tail -d 'Only the last N lines' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from output" -l max-bytes -d 'Return at most this many bytes' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from output" -l screen -d 'The screen of a --pty job, as text rows'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from output" -s f -l follow -d 'Stream the output as the job prints it, until the job ends'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from output" -l json -d 'The answer as JSON'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from output" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from send" -l text -d 'Text to send (before the keys)' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from send" -l keys -d 'Keys to send after the text: Enter, Tab, Esc, Space, Backspace, Up, Down, Left, Right, C-<letter>' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from send" -l wait-ms -d 'Collect what the job prints for this many milliseconds after sending' -r
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from send" -l json -d 'The answer as JSON'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from send" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from stop" -l json -d 'The answer as JSON'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from stop" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from list" -l all -d 'Finished jobs too'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from list" -l json -d 'The list as JSON'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from list" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from rm" -l json -d 'The answer as JSON'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from rm" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from gc" -s p -l profile -d 'Profile name or path to a .toml file (for jobs.keep_exited)' -r -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from gc" -l json -d 'The answer as JSON'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from gc" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from help" -f -a "start" -d 'Start a command as a job; answer once it is ready, has ended, or has run jobs.start_wait_ms'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from help" -f -a "status" -d 'A job\'s record: state, pid, exit code, times, log path and cursor'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from help" -f -a "wait" -d 'Wait until a job ends, then exit with its exit code (124 when -t runs out first)'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from help" -f -a "output" -d 'Show a job\'s output: from a cursor, the last lines, a PTY job\'s screen, or as it comes (--follow)'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from help" -f -a "send" -d 'Type into a --pty job, or write to a --stdin job; answer with what it printed next'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from help" -f -a "stop" -d 'Stop a job and its whole process tree (TERM, grace, KILL)'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from help" -f -a "list" -d 'List running jobs (a job whose supervisor is gone is marked lost and its processes killed)'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from help" -f -a "rm" -d 'Remove a job that is over: its record and its log'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from help" -f -a "gc" -d 'End what is left of lost jobs; remove jobs that ended more than jobs.keep_exited seconds ago'
complete -c agentbash -n "__fish_agentbash_using_subcommand job; and __fish_seen_subcommand_from help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentbash -n "__fish_agentbash_using_subcommand completions" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand man" -s h -l help -d 'Print help'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and not __fish_seen_subcommand_from run explain rpc mcp profile rules artifact session snapshot trust sandbox job completions man help" -f -a "run" -d 'Run one command'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and not __fish_seen_subcommand_from run explain rpc mcp profile rules artifact session snapshot trust sandbox job completions man help" -f -a "explain" -d 'Dry run: show every decision the run would make, run nothing'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and not __fish_seen_subcommand_from run explain rpc mcp profile rules artifact session snapshot trust sandbox job completions man help" -f -a "rpc" -d 'NDJSON requests on stdin, responses on stdout'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and not __fish_seen_subcommand_from run explain rpc mcp profile rules artifact session snapshot trust sandbox job completions man help" -f -a "mcp" -d 'Model Context Protocol server on stdio'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and not __fish_seen_subcommand_from run explain rpc mcp profile rules artifact session snapshot trust sandbox job completions man help" -f -a "profile" -d 'List, show and check profiles'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and not __fish_seen_subcommand_from run explain rpc mcp profile rules artifact session snapshot trust sandbox job completions man help" -f -a "rules" -d 'List, test and check interceptor rules'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and not __fish_seen_subcommand_from run explain rpc mcp profile rules artifact session snapshot trust sandbox job completions man help" -f -a "artifact" -d 'Inspect and clean up spilled output (artifact://ID)'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and not __fish_seen_subcommand_from run explain rpc mcp profile rules artifact session snapshot trust sandbox job completions man help" -f -a "session" -d 'Inspect and remove persistent sessions'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and not __fish_seen_subcommand_from run explain rpc mcp profile rules artifact session snapshot trust sandbox job completions man help" -f -a "snapshot" -d 'Inspect and refresh the snapshot of the user\'s shell rc'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and not __fish_seen_subcommand_from run explain rpc mcp profile rules artifact session snapshot trust sandbox job completions man help" -f -a "trust" -d 'Trust a project\'s own profiles and rule packs (its .agentbash/), list or revoke trust'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and not __fish_seen_subcommand_from run explain rpc mcp profile rules artifact session snapshot trust sandbox job completions man help" -f -a "sandbox" -d 'Report what the kernel sandbox can enforce on this machine'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and not __fish_seen_subcommand_from run explain rpc mcp profile rules artifact session snapshot trust sandbox job completions man help" -f -a "job" -d 'Background jobs: dev servers, watchers, long builds and REPLs (job://N)'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and not __fish_seen_subcommand_from run explain rpc mcp profile rules artifact session snapshot trust sandbox job completions man help" -f -a "completions" -d 'Print a shell completion script'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and not __fish_seen_subcommand_from run explain rpc mcp profile rules artifact session snapshot trust sandbox job completions man help" -f -a "man" -d 'Print the roff man page'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and not __fish_seen_subcommand_from run explain rpc mcp profile rules artifact session snapshot trust sandbox job completions man help" -f -a "help" -d 'Print this message or the help of the given subcommand(s)'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from profile" -f -a "list" -d 'List every profile that can be found, where it comes from, and what it shadows'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from profile" -f -a "show" -d 'Show the resolved profile after `extends` and lookup'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from profile" -f -a "check" -d 'Validate profiles; exit 1 with file:line:col errors'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from rules" -f -a "list" -d 'List the rules a profile uses'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from rules" -f -a "test" -d 'Show which candidate of a command matches which rule'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from rules" -f -a "check" -d 'Compile every pattern and run every example of rule packs (default: the built-in packs)'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from artifact" -f -a "list" -d 'List artifacts: id, size, age, command'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from artifact" -f -a "show" -d 'Print an artifact\'s raw content'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from artifact" -f -a "path" -d 'Print an artifact\'s file path'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from artifact" -f -a "rm" -d 'Remove an artifact'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from artifact" -f -a "gc" -d 'Enforce max_total_bytes and max_age_days now'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "list" -d 'List sessions'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "show" -d 'Show a session\'s saved state'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from session" -f -a "rm" -d 'Remove a session'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from snapshot" -f -a "show" -d 'Print the snapshot\'s path and content'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from snapshot" -f -a "refresh" -d 'Regenerate the snapshot now'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from snapshot" -f -a "report" -d 'What was captured, what was dropped, and why'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from sandbox" -f -a "check" -d 'Probe Landlock, namespaces, network isolation, seccomp and bubblewrap, and say which engine `auto` picks'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from job" -f -a "start" -d 'Start a command as a job; answer once it is ready, has ended, or has run jobs.start_wait_ms'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from job" -f -a "status" -d 'A job\'s record: state, pid, exit code, times, log path and cursor'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from job" -f -a "wait" -d 'Wait until a job ends, then exit with its exit code (124 when -t runs out first)'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from job" -f -a "output" -d 'Show a job\'s output: from a cursor, the last lines, a PTY job\'s screen, or as it comes (--follow)'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from job" -f -a "send" -d 'Type into a --pty job, or write to a --stdin job; answer with what it printed next'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from job" -f -a "stop" -d 'Stop a job and its whole process tree (TERM, grace, KILL)'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from job" -f -a "list" -d 'List running jobs (a job whose supervisor is gone is marked lost and its processes killed)'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from job" -f -a "rm" -d 'Remove a job that is over: its record and its log'
complete -c agentbash -n "__fish_agentbash_using_subcommand help; and __fish_seen_subcommand_from job" -f -a "gc" -d 'End what is left of lost jobs; remove jobs that ended more than jobs.keep_exited seconds ago'

# Added by agentbash (src/commands/generated.rs): values only known at completion time.
function __fish_agentbash_profiles
    set -l token (commandline -ct)
    if string match -q -- '*/*' $token; or string match -q -- '*.toml' $token
        __fish_complete_path $token
    else
        command agentbash profile list --names 2>/dev/null
    end
end

function __fish_agentbash_rule_packs
    set -l token (commandline -ct)
    if string match -q -- '*/*' $token; or string match -q -- '*.toml' $token
        __fish_complete_path $token
    else
        string split ' ' -- default guard
    end
end

complete -c agentbash -n "__fish_agentbash_using_subcommand profile; and __fish_seen_subcommand_from show" -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand profile; and __fish_seen_subcommand_from check" -f -a "(__fish_agentbash_profiles)"
complete -c agentbash -n "__fish_agentbash_using_subcommand rules; and __fish_seen_subcommand_from check" -f -a "(__fish_agentbash_rule_packs)"
