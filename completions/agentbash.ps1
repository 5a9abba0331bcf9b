
using namespace System.Management.Automation
using namespace System.Management.Automation.Language

Register-ArgumentCompleter -Native -CommandName 'agentbash' -ScriptBlock {
    param($wordToComplete, $commandAst, $cursorPosition)

    $commandElements = $commandAst.CommandElements
    $command = @(
        'agentbash'
        for ($i = 1; $i -lt $commandElements.Count; $i++) {
            $element = $commandElements[$i]
            if ($element -isnot [StringConstantExpressionAst] -or
                $element.StringConstantType -ne [StringConstantType]::BareWord -or
                $element.Value.StartsWith('-') -or
                $element.Value -eq $wordToComplete) {
                break
        }
        $element.Value
    }) -join ';'

    $completions = @(switch ($command) {
        'agentbash' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('-V', '-V ', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('--version', '--version', [CompletionResultType]::ParameterName, 'Print version')
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Run one command')
            [CompletionResult]::new('explain', 'explain', [CompletionResultType]::ParameterValue, 'Dry run: show every decision the run would make, run nothing')
            [CompletionResult]::new('rpc', 'rpc', [CompletionResultType]::ParameterValue, 'NDJSON requests on stdin, responses on stdout')
            [CompletionResult]::new('mcp', 'mcp', [CompletionResultType]::ParameterValue, 'Model Context Protocol server on stdio')
            [CompletionResult]::new('profile', 'profile', [CompletionResultType]::ParameterValue, 'List, show and check profiles')
            [CompletionResult]::new('rules', 'rules', [CompletionResultType]::ParameterValue, 'List, test and check interceptor rules')
            [CompletionResult]::new('artifact', 'artifact', [CompletionResultType]::ParameterValue, 'Inspect and clean up spilled output (artifact://ID)')
            [CompletionResult]::new('session', 'session', [CompletionResultType]::ParameterValue, 'Inspect and remove persistent sessions')
            [CompletionResult]::new('snapshot', 'snapshot', [CompletionResultType]::ParameterValue, 'Inspect and refresh the snapshot of the user''s shell rc')
            [CompletionResult]::new('trust', 'trust', [CompletionResultType]::ParameterValue, 'Trust a project''s own profiles and rule packs (its .agentbash/), list or revoke trust')
            [CompletionResult]::new('sandbox', 'sandbox', [CompletionResultType]::ParameterValue, 'Report what the kernel sandbox can enforce on this machine')
            [CompletionResult]::new('job', 'job', [CompletionResultType]::ParameterValue, 'Background jobs: dev servers, watchers, long builds and REPLs (job://N)')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Print the roff man page')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentbash;run' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--target', '--target', [CompletionResultType]::ParameterName, 'Run on the target of profile NAME (its [target] transport); --profile still guards here first')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Working directory, relative to the invoking directory (or the session''s cwd)')
            [CompletionResult]::new('--cwd', '--cwd', [CompletionResultType]::ParameterName, 'Working directory, relative to the invoking directory (or the session''s cwd)')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Requested timeout in seconds, clamped to the profile''s allowed range')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Requested timeout in seconds, clamped to the profile''s allowed range')
            [CompletionResult]::new('--head', '--head', [CompletionResultType]::ParameterName, 'Show only the first N lines; the command still runs to completion')
            [CompletionResult]::new('--tail', '--tail', [CompletionResultType]::ParameterName, 'Show only the last N lines; the command still runs to completion')
            [CompletionResult]::new('--mode', '--mode', [CompletionResultType]::ParameterName, 'Execution mode: auto picks a PTY only when the profile allows it and stdin and stdout are terminals')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour: auto honours NO_COLOR, CLICOLOR_FORCE and GitHub Actions, then whether stdout is a terminal')
            [CompletionResult]::new('--tools', '--tools', [CompletionResultType]::ParameterName, 'Comma-separated tools the caller has (for the interceptor); overrides the profile')
            [CompletionResult]::new('--sandbox', '--sandbox', [CompletionResultType]::ParameterName, 'Kernel sandbox for this run instead of the profile''s [sandbox] mode')
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'Extra environment variable for the command (repeatable)')
            [CompletionResult]::new('--env', '--env', [CompletionResultType]::ParameterName, 'Extra environment variable for the command (repeatable)')
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'Persistent session: cwd, exported variables, functions and aliases carry over')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Persistent session: cwd, exported variables, functions and aliases carry over')
            [CompletionResult]::new('--stderr', '--stderr', [CompletionResultType]::ParameterName, 'The command''s stderr: merged into the output (the default), or separate (print mode only)')
            [CompletionResult]::new('--pty', '--pty', [CompletionResultType]::ParameterName, 'Force PTY mode (same as --mode pty)')
            [CompletionResult]::new('--no-pty', '--no-pty', [CompletionResultType]::ParameterName, 'Forbid PTY mode (same as --mode print)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Same as --format json')
            [CompletionResult]::new('--no-intercept', '--no-intercept', [CompletionResultType]::ParameterName, 'Skip the interceptor')
            [CompletionResult]::new('--stdin', '--stdin', [CompletionResultType]::ParameterName, 'Give the command agentbash''s stdin (default: the null device)')
            [CompletionResult]::new('--expand', '--expand', [CompletionResultType]::ParameterName, 'Text format: show the whole retained output instead of the collapsed preview')
            [CompletionResult]::new('--stream', '--stream', [CompletionResultType]::ParameterName, 'Text format: write the output as it is produced, into a pipe as on a terminal (the profile''s render.live = "stream")')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Text format: output only, no header, footer or notices')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Text format: output only, no header, footer or notices')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'agentbash;explain' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--target', '--target', [CompletionResultType]::ParameterName, 'Run on the target of profile NAME (its [target] transport); --profile still guards here first')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Working directory, relative to the invoking directory (or the session''s cwd)')
            [CompletionResult]::new('--cwd', '--cwd', [CompletionResultType]::ParameterName, 'Working directory, relative to the invoking directory (or the session''s cwd)')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Requested timeout in seconds, clamped to the profile''s allowed range')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Requested timeout in seconds, clamped to the profile''s allowed range')
            [CompletionResult]::new('--head', '--head', [CompletionResultType]::ParameterName, 'Show only the first N lines; the command still runs to completion')
            [CompletionResult]::new('--tail', '--tail', [CompletionResultType]::ParameterName, 'Show only the last N lines; the command still runs to completion')
            [CompletionResult]::new('--mode', '--mode', [CompletionResultType]::ParameterName, 'Execution mode: auto picks a PTY only when the profile allows it and stdin and stdout are terminals')
            [CompletionResult]::new('--format', '--format', [CompletionResultType]::ParameterName, 'Output format')
            [CompletionResult]::new('--color', '--color', [CompletionResultType]::ParameterName, 'Colour: auto honours NO_COLOR, CLICOLOR_FORCE and GitHub Actions, then whether stdout is a terminal')
            [CompletionResult]::new('--tools', '--tools', [CompletionResultType]::ParameterName, 'Comma-separated tools the caller has (for the interceptor); overrides the profile')
            [CompletionResult]::new('--sandbox', '--sandbox', [CompletionResultType]::ParameterName, 'Kernel sandbox for this run instead of the profile''s [sandbox] mode')
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'Extra environment variable for the command (repeatable)')
            [CompletionResult]::new('--env', '--env', [CompletionResultType]::ParameterName, 'Extra environment variable for the command (repeatable)')
            [CompletionResult]::new('-s', '-s', [CompletionResultType]::ParameterName, 'Persistent session: cwd, exported variables, functions and aliases carry over')
            [CompletionResult]::new('--session', '--session', [CompletionResultType]::ParameterName, 'Persistent session: cwd, exported variables, functions and aliases carry over')
            [CompletionResult]::new('--stderr', '--stderr', [CompletionResultType]::ParameterName, 'The command''s stderr: merged into the output (the default), or separate (print mode only)')
            [CompletionResult]::new('--pty', '--pty', [CompletionResultType]::ParameterName, 'Force PTY mode (same as --mode pty)')
            [CompletionResult]::new('--no-pty', '--no-pty', [CompletionResultType]::ParameterName, 'Forbid PTY mode (same as --mode print)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Same as --format json')
            [CompletionResult]::new('--no-intercept', '--no-intercept', [CompletionResultType]::ParameterName, 'Skip the interceptor')
            [CompletionResult]::new('--stdin', '--stdin', [CompletionResultType]::ParameterName, 'Give the command agentbash''s stdin (default: the null device)')
            [CompletionResult]::new('--expand', '--expand', [CompletionResultType]::ParameterName, 'Text format: show the whole retained output instead of the collapsed preview')
            [CompletionResult]::new('--stream', '--stream', [CompletionResultType]::ParameterName, 'Text format: write the output as it is produced, into a pipe as on a terminal (the profile''s render.live = "stream")')
            [CompletionResult]::new('-q', '-q', [CompletionResultType]::ParameterName, 'Text format: output only, no header, footer or notices')
            [CompletionResult]::new('--quiet', '--quiet', [CompletionResultType]::ParameterName, 'Text format: output only, no header, footer or notices')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'agentbash;rpc' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--target', '--target', [CompletionResultType]::ParameterName, 'Serve through the target of profile NAME (its [target] transport); --profile still guards here first')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;mcp' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--target', '--target', [CompletionResultType]::ParameterName, 'Serve through the target of profile NAME (its [target] transport); --profile still guards here first')
            [CompletionResult]::new('--toolbox', '--toolbox', [CompletionResultType]::ParameterName, 'Also serve the file tools read, grep, glob, edit and write, under the profile''s sandbox, guard and redaction (default: the profile''s mcp.toolbox)')
            [CompletionResult]::new('--no-toolbox', '--no-toolbox', [CompletionResultType]::ParameterName, 'Serve only bash, read_artifact and the job tools, whatever mcp.toolbox says')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;profile' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List every profile that can be found, where it comes from, and what it shadows')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show the resolved profile after `extends` and lookup')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Validate profiles; exit 1 with file:line:col errors')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentbash;profile;list' {
            [CompletionResult]::new('--names', '--names', [CompletionResultType]::ParameterName, 'One name per line, nothing else (for shell completion)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;profile;show' {
            [CompletionResult]::new('--origin', '--origin', [CompletionResultType]::ParameterName, 'Annotate each value with the file it came from')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;profile;check' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;profile;help' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List every profile that can be found, where it comes from, and what it shadows')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show the resolved profile after `extends` and lookup')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Validate profiles; exit 1 with file:line:col errors')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentbash;profile;help;list' {
            break
        }
        'agentbash;profile;help;show' {
            break
        }
        'agentbash;profile;help;check' {
            break
        }
        'agentbash;profile;help;help' {
            break
        }
        'agentbash;rules' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the rules a profile uses')
            [CompletionResult]::new('test', 'test', [CompletionResultType]::ParameterValue, 'Show which candidate of a command matches which rule')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Compile every pattern and run every example of rule packs (default: the built-in packs)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentbash;rules;list' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;rules;test' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--tools', '--tools', [CompletionResultType]::ParameterName, 'Comma-separated tools the caller has; overrides the profile')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;rules;check' {
            [CompletionResult]::new('--corpus', '--corpus', [CompletionResultType]::ParameterName, 'Also score the packs (together; default: the `default` pack) on a labelled corpus (`<pass|TOOL><TAB><command>` per line): precision and recall per tool, every disagreement; exit 1 below the corpus''s thresholds')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'Print the corpus score as JSON (with --corpus)')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;rules;help' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the rules a profile uses')
            [CompletionResult]::new('test', 'test', [CompletionResultType]::ParameterValue, 'Show which candidate of a command matches which rule')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Compile every pattern and run every example of rule packs (default: the built-in packs)')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentbash;rules;help;list' {
            break
        }
        'agentbash;rules;help;test' {
            break
        }
        'agentbash;rules;help;check' {
            break
        }
        'agentbash;rules;help;help' {
            break
        }
        'agentbash;artifact' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List artifacts: id, size, age, command')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print an artifact''s raw content')
            [CompletionResult]::new('path', 'path', [CompletionResultType]::ParameterValue, 'Print an artifact''s file path')
            [CompletionResult]::new('rm', 'rm', [CompletionResultType]::ParameterValue, 'Remove an artifact')
            [CompletionResult]::new('gc', 'gc', [CompletionResultType]::ParameterValue, 'Enforce max_total_bytes and max_age_days now')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentbash;artifact;list' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;artifact;show' {
            [CompletionResult]::new('--head', '--head', [CompletionResultType]::ParameterName, 'Only the first N lines')
            [CompletionResult]::new('--tail', '--tail', [CompletionResultType]::ParameterName, 'Only the last N lines (applied after --head)')
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--target', '--target', [CompletionResultType]::ParameterName, 'Read the artifact of a run on the target of profile NAME')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;artifact;path' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;artifact;rm' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;artifact;gc' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--dry-run', '--dry-run', [CompletionResultType]::ParameterName, 'Say what would be removed, remove nothing')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;artifact;help' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List artifacts: id, size, age, command')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print an artifact''s raw content')
            [CompletionResult]::new('path', 'path', [CompletionResultType]::ParameterValue, 'Print an artifact''s file path')
            [CompletionResult]::new('rm', 'rm', [CompletionResultType]::ParameterValue, 'Remove an artifact')
            [CompletionResult]::new('gc', 'gc', [CompletionResultType]::ParameterValue, 'Enforce max_total_bytes and max_age_days now')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentbash;artifact;help;list' {
            break
        }
        'agentbash;artifact;help;show' {
            break
        }
        'agentbash;artifact;help;path' {
            break
        }
        'agentbash;artifact;help;rm' {
            break
        }
        'agentbash;artifact;help;gc' {
            break
        }
        'agentbash;artifact;help;help' {
            break
        }
        'agentbash;session' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List sessions')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show a session''s saved state')
            [CompletionResult]::new('rm', 'rm', [CompletionResultType]::ParameterValue, 'Remove a session')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentbash;session;list' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;session;show' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;session;rm' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;session;help' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List sessions')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show a session''s saved state')
            [CompletionResult]::new('rm', 'rm', [CompletionResultType]::ParameterValue, 'Remove a session')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentbash;session;help;list' {
            break
        }
        'agentbash;session;help;show' {
            break
        }
        'agentbash;session;help;rm' {
            break
        }
        'agentbash;session;help;help' {
            break
        }
        'agentbash;snapshot' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print the snapshot''s path and content')
            [CompletionResult]::new('refresh', 'refresh', [CompletionResultType]::ParameterValue, 'Regenerate the snapshot now')
            [CompletionResult]::new('report', 'report', [CompletionResultType]::ParameterValue, 'What was captured, what was dropped, and why')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentbash;snapshot;show' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;snapshot;refresh' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;snapshot;report' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;snapshot;help' {
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print the snapshot''s path and content')
            [CompletionResult]::new('refresh', 'refresh', [CompletionResultType]::ParameterValue, 'Regenerate the snapshot now')
            [CompletionResult]::new('report', 'report', [CompletionResultType]::ParameterValue, 'What was captured, what was dropped, and why')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentbash;snapshot;help;show' {
            break
        }
        'agentbash;snapshot;help;refresh' {
            break
        }
        'agentbash;snapshot;help;report' {
            break
        }
        'agentbash;snapshot;help;help' {
            break
        }
        'agentbash;trust' {
            [CompletionResult]::new('--list', '--list', [CompletionResultType]::ParameterName, 'List trusted projects: when each was trusted and whether its files still match')
            [CompletionResult]::new('--revoke', '--revoke', [CompletionResultType]::ParameterName, 'Forget the trust given to the project')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;sandbox' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Probe Landlock, namespaces, network isolation, seccomp and bubblewrap, and say which engine `auto` picks')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentbash;sandbox;check' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The report as JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;sandbox;help' {
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Probe Landlock, namespaces, network isolation, seccomp and bubblewrap, and say which engine `auto` picks')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentbash;sandbox;help;check' {
            break
        }
        'agentbash;sandbox;help;help' {
            break
        }
        'agentbash;job' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('start', 'start', [CompletionResultType]::ParameterValue, 'Start a command as a job; answer once it is ready, has ended, or has run jobs.start_wait_ms')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'A job''s record: state, pid, exit code, times, log path and cursor')
            [CompletionResult]::new('wait', 'wait', [CompletionResultType]::ParameterValue, 'Wait until a job ends, then exit with its exit code (124 when -t runs out first)')
            [CompletionResult]::new('output', 'output', [CompletionResultType]::ParameterValue, 'Show a job''s output: from a cursor, the last lines, a PTY job''s screen, or as it comes (--follow)')
            [CompletionResult]::new('send', 'send', [CompletionResultType]::ParameterValue, 'Type into a --pty job, or write to a --stdin job; answer with what it printed next')
            [CompletionResult]::new('stop', 'stop', [CompletionResultType]::ParameterValue, 'Stop a job and its whole process tree (TERM, grace, KILL)')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List running jobs (a job whose supervisor is gone is marked lost and its processes killed)')
            [CompletionResult]::new('rm', 'rm', [CompletionResultType]::ParameterValue, 'Remove a job that is over: its record and its log')
            [CompletionResult]::new('gc', 'gc', [CompletionResultType]::ParameterValue, 'End what is left of lost jobs; remove jobs that ended more than jobs.keep_exited seconds ago')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentbash;job;start' {
            [CompletionResult]::new('--name', '--name', [CompletionResultType]::ParameterName, 'A name to refer to the job by (instead of job://N)')
            [CompletionResult]::new('--ready-port', '--ready-port', [CompletionResultType]::ParameterName, 'Ready once this TCP port accepts and the job''s own processes hold the listener')
            [CompletionResult]::new('--ready', '--ready', [CompletionResultType]::ParameterName, 'Ready once a line of output matches this regular expression')
            [CompletionResult]::new('--ready-timeout', '--ready-timeout', [CompletionResultType]::ParameterName, 'Stop waiting for readiness after this many seconds (the job keeps running)')
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Stop it after this many seconds (default: the profile''s jobs.ttl); a job''s timeout')
            [CompletionResult]::new('--ttl', '--ttl', [CompletionResultType]::ParameterName, 'Stop it after this many seconds (default: the profile''s jobs.ttl); a job''s timeout')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Stop it after this many seconds (default: the profile''s jobs.ttl); a job''s timeout')
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file')
            [CompletionResult]::new('-C', '-C ', [CompletionResultType]::ParameterName, 'Working directory, relative to the invoking directory')
            [CompletionResult]::new('--cwd', '--cwd', [CompletionResultType]::ParameterName, 'Working directory, relative to the invoking directory')
            [CompletionResult]::new('--tools', '--tools', [CompletionResultType]::ParameterName, 'Comma-separated tools the caller has (for the interceptor); overrides the profile')
            [CompletionResult]::new('--sandbox', '--sandbox', [CompletionResultType]::ParameterName, 'Kernel sandbox for this job instead of the profile''s [sandbox] mode')
            [CompletionResult]::new('-e', '-e', [CompletionResultType]::ParameterName, 'Extra environment variable for the command (repeatable)')
            [CompletionResult]::new('--env', '--env', [CompletionResultType]::ParameterName, 'Extra environment variable for the command (repeatable)')
            [CompletionResult]::new('--pty', '--pty', [CompletionResultType]::ParameterName, 'Run it on a pseudo-terminal (a REPL, a full-screen program)')
            [CompletionResult]::new('--stdin', '--stdin', [CompletionResultType]::ParameterName, 'Keep a pipe to its stdin open for `job send`')
            [CompletionResult]::new('--no-intercept', '--no-intercept', [CompletionResultType]::ParameterName, 'Skip the interceptor')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The answer as JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help (see more with ''--help'')')
            break
        }
        'agentbash;job;status' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The record as JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;job;wait' {
            [CompletionResult]::new('-t', '-t', [CompletionResultType]::ParameterName, 'Wait at most this many seconds (default: until it ends)')
            [CompletionResult]::new('--timeout', '--timeout', [CompletionResultType]::ParameterName, 'Wait at most this many seconds (default: until it ends)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The answer as JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;job;output' {
            [CompletionResult]::new('--cursor', '--cursor', [CompletionResultType]::ParameterName, 'Read from this byte offset (the `cursor` of the previous read); default: from the start')
            [CompletionResult]::new('--wait', '--wait', [CompletionResultType]::ParameterName, 'Wait up to this many seconds for output when there is none yet')
            [CompletionResult]::new('--tail', '--tail', [CompletionResultType]::ParameterName, 'Only the last N lines')
            [CompletionResult]::new('--max-bytes', '--max-bytes', [CompletionResultType]::ParameterName, 'Return at most this many bytes')
            [CompletionResult]::new('--screen', '--screen', [CompletionResultType]::ParameterName, 'The screen of a --pty job, as text rows')
            [CompletionResult]::new('-f', '-f', [CompletionResultType]::ParameterName, 'Stream the output as the job prints it, until the job ends')
            [CompletionResult]::new('--follow', '--follow', [CompletionResultType]::ParameterName, 'Stream the output as the job prints it, until the job ends')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The answer as JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;job;send' {
            [CompletionResult]::new('--text', '--text', [CompletionResultType]::ParameterName, 'Text to send (before the keys)')
            [CompletionResult]::new('--keys', '--keys', [CompletionResultType]::ParameterName, 'Keys to send after the text: Enter, Tab, Esc, Space, Backspace, Up, Down, Left, Right, C-<letter>')
            [CompletionResult]::new('--wait-ms', '--wait-ms', [CompletionResultType]::ParameterName, 'Collect what the job prints for this many milliseconds after sending')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The answer as JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;job;stop' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The answer as JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;job;list' {
            [CompletionResult]::new('--all', '--all', [CompletionResultType]::ParameterName, 'Finished jobs too')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The list as JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;job;rm' {
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The answer as JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;job;gc' {
            [CompletionResult]::new('-p', '-p', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file (for jobs.keep_exited)')
            [CompletionResult]::new('--profile', '--profile', [CompletionResultType]::ParameterName, 'Profile name or path to a .toml file (for jobs.keep_exited)')
            [CompletionResult]::new('--json', '--json', [CompletionResultType]::ParameterName, 'The answer as JSON')
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;job;help' {
            [CompletionResult]::new('start', 'start', [CompletionResultType]::ParameterValue, 'Start a command as a job; answer once it is ready, has ended, or has run jobs.start_wait_ms')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'A job''s record: state, pid, exit code, times, log path and cursor')
            [CompletionResult]::new('wait', 'wait', [CompletionResultType]::ParameterValue, 'Wait until a job ends, then exit with its exit code (124 when -t runs out first)')
            [CompletionResult]::new('output', 'output', [CompletionResultType]::ParameterValue, 'Show a job''s output: from a cursor, the last lines, a PTY job''s screen, or as it comes (--follow)')
            [CompletionResult]::new('send', 'send', [CompletionResultType]::ParameterValue, 'Type into a --pty job, or write to a --stdin job; answer with what it printed next')
            [CompletionResult]::new('stop', 'stop', [CompletionResultType]::ParameterValue, 'Stop a job and its whole process tree (TERM, grace, KILL)')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List running jobs (a job whose supervisor is gone is marked lost and its processes killed)')
            [CompletionResult]::new('rm', 'rm', [CompletionResultType]::ParameterValue, 'Remove a job that is over: its record and its log')
            [CompletionResult]::new('gc', 'gc', [CompletionResultType]::ParameterValue, 'End what is left of lost jobs; remove jobs that ended more than jobs.keep_exited seconds ago')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentbash;job;help;start' {
            break
        }
        'agentbash;job;help;status' {
            break
        }
        'agentbash;job;help;wait' {
            break
        }
        'agentbash;job;help;output' {
            break
        }
        'agentbash;job;help;send' {
            break
        }
        'agentbash;job;help;stop' {
            break
        }
        'agentbash;job;help;list' {
            break
        }
        'agentbash;job;help;rm' {
            break
        }
        'agentbash;job;help;gc' {
            break
        }
        'agentbash;job;help;help' {
            break
        }
        'agentbash;completions' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;man' {
            [CompletionResult]::new('-h', '-h', [CompletionResultType]::ParameterName, 'Print help')
            [CompletionResult]::new('--help', '--help', [CompletionResultType]::ParameterName, 'Print help')
            break
        }
        'agentbash;help' {
            [CompletionResult]::new('run', 'run', [CompletionResultType]::ParameterValue, 'Run one command')
            [CompletionResult]::new('explain', 'explain', [CompletionResultType]::ParameterValue, 'Dry run: show every decision the run would make, run nothing')
            [CompletionResult]::new('rpc', 'rpc', [CompletionResultType]::ParameterValue, 'NDJSON requests on stdin, responses on stdout')
            [CompletionResult]::new('mcp', 'mcp', [CompletionResultType]::ParameterValue, 'Model Context Protocol server on stdio')
            [CompletionResult]::new('profile', 'profile', [CompletionResultType]::ParameterValue, 'List, show and check profiles')
            [CompletionResult]::new('rules', 'rules', [CompletionResultType]::ParameterValue, 'List, test and check interceptor rules')
            [CompletionResult]::new('artifact', 'artifact', [CompletionResultType]::ParameterValue, 'Inspect and clean up spilled output (artifact://ID)')
            [CompletionResult]::new('session', 'session', [CompletionResultType]::ParameterValue, 'Inspect and remove persistent sessions')
            [CompletionResult]::new('snapshot', 'snapshot', [CompletionResultType]::ParameterValue, 'Inspect and refresh the snapshot of the user''s shell rc')
            [CompletionResult]::new('trust', 'trust', [CompletionResultType]::ParameterValue, 'Trust a project''s own profiles and rule packs (its .agentbash/), list or revoke trust')
            [CompletionResult]::new('sandbox', 'sandbox', [CompletionResultType]::ParameterValue, 'Report what the kernel sandbox can enforce on this machine')
            [CompletionResult]::new('job', 'job', [CompletionResultType]::ParameterValue, 'Background jobs: dev servers, watchers, long builds and REPLs (job://N)')
            [CompletionResult]::new('completions', 'completions', [CompletionResultType]::ParameterValue, 'Print a shell completion script')
            [CompletionResult]::new('man', 'man', [CompletionResultType]::ParameterValue, 'Print the roff man page')
            [CompletionResult]::new('help', 'help', [CompletionResultType]::ParameterValue, 'Print this message or the help of the given subcommand(s)')
            break
        }
        'agentbash;help;run' {
            break
        }
        'agentbash;help;explain' {
            break
        }
        'agentbash;help;rpc' {
            break
        }
        'agentbash;help;mcp' {
            break
        }
        'agentbash;help;profile' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List every profile that can be found, where it comes from, and what it shadows')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show the resolved profile after `extends` and lookup')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Validate profiles; exit 1 with file:line:col errors')
            break
        }
        'agentbash;help;profile;list' {
            break
        }
        'agentbash;help;profile;show' {
            break
        }
        'agentbash;help;profile;check' {
            break
        }
        'agentbash;help;rules' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List the rules a profile uses')
            [CompletionResult]::new('test', 'test', [CompletionResultType]::ParameterValue, 'Show which candidate of a command matches which rule')
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Compile every pattern and run every example of rule packs (default: the built-in packs)')
            break
        }
        'agentbash;help;rules;list' {
            break
        }
        'agentbash;help;rules;test' {
            break
        }
        'agentbash;help;rules;check' {
            break
        }
        'agentbash;help;artifact' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List artifacts: id, size, age, command')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print an artifact''s raw content')
            [CompletionResult]::new('path', 'path', [CompletionResultType]::ParameterValue, 'Print an artifact''s file path')
            [CompletionResult]::new('rm', 'rm', [CompletionResultType]::ParameterValue, 'Remove an artifact')
            [CompletionResult]::new('gc', 'gc', [CompletionResultType]::ParameterValue, 'Enforce max_total_bytes and max_age_days now')
            break
        }
        'agentbash;help;artifact;list' {
            break
        }
        'agentbash;help;artifact;show' {
            break
        }
        'agentbash;help;artifact;path' {
            break
        }
        'agentbash;help;artifact;rm' {
            break
        }
        'agentbash;help;artifact;gc' {
            break
        }
        'agentbash;help;session' {
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List sessions')
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Show a session''s saved state')
            [CompletionResult]::new('rm', 'rm', [CompletionResultType]::ParameterValue, 'Remove a session')
            break
        }
        'agentbash;help;session;list' {
            break
        }
        'agentbash;help;session;show' {
            break
        }
        'agentbash;help;session;rm' {
            break
        }
        'agentbash;help;snapshot' {
            [CompletionResult]::new('show', 'show', [CompletionResultType]::ParameterValue, 'Print the snapshot''s path and content')
            [CompletionResult]::new('refresh', 'refresh', [CompletionResultType]::ParameterValue, 'Regenerate the snapshot now')
            [CompletionResult]::new('report', 'report', [CompletionResultType]::ParameterValue, 'What was captured, what was dropped, and why')
            break
        }
        'agentbash;help;snapshot;show' {
            break
        }
        'agentbash;help;snapshot;refresh' {
            break
        }
        'agentbash;help;snapshot;report' {
            break
        }
        'agentbash;help;trust' {
            break
        }
        'agentbash;help;sandbox' {
            [CompletionResult]::new('check', 'check', [CompletionResultType]::ParameterValue, 'Probe Landlock, namespaces, network isolation, seccomp and bubblewrap, and say which engine `auto` picks')
            break
        }
        'agentbash;help;sandbox;check' {
            break
        }
        'agentbash;help;job' {
            [CompletionResult]::new('start', 'start', [CompletionResultType]::ParameterValue, 'Start a command as a job; answer once it is ready, has ended, or has run jobs.start_wait_ms')
            [CompletionResult]::new('status', 'status', [CompletionResultType]::ParameterValue, 'A job''s record: state, pid, exit code, times, log path and cursor')
            [CompletionResult]::new('wait', 'wait', [CompletionResultType]::ParameterValue, 'Wait until a job ends, then exit with its exit code (124 when -t runs out first)')
            [CompletionResult]::new('output', 'output', [CompletionResultType]::ParameterValue, 'Show a job''s output: from a cursor, the last lines, a PTY job''s screen, or as it comes (--follow)')
            [CompletionResult]::new('send', 'send', [CompletionResultType]::ParameterValue, 'Type into a --pty job, or write to a --stdin job; answer with what it printed next')
            [CompletionResult]::new('stop', 'stop', [CompletionResultType]::ParameterValue, 'Stop a job and its whole process tree (TERM, grace, KILL)')
            [CompletionResult]::new('list', 'list', [CompletionResultType]::ParameterValue, 'List running jobs (a job whose supervisor is gone is marked lost and its processes killed)')
            [CompletionResult]::new('rm', 'rm', [CompletionResultType]::ParameterValue, 'Remove a job that is over: its record and its log')
            [CompletionResult]::new('gc', 'gc', [CompletionResultType]::ParameterValue, 'End what is left of lost jobs; remove jobs that ended more than jobs.keep_exited seconds ago')
            break
        }
        'agentbash;help;job;start' {
            break
        }
        'agentbash;help;job;status' {
            break
        }
        'agentbash;help;job;wait' {
            break
        }
        'agentbash;help;job;output' {
            break
        }
        'agentbash;help;job;send' {
            break
        }
        'agentbash;help;job;stop' {
            break
        }
        'agentbash;help;job;list' {
            break
        }
        'agentbash;help;job;rm' {
            break
        }
        'agentbash;help;job;gc' {
            break
        }
        'agentbash;help;completions' {
            break
        }
        'agentbash;help;man' {
            break
        }
        'agentbash;help;help' {
            break
        }
    })

    $completions.Where{ $_.CompletionText -like "$wordToComplete*" } |
        Sort-Object -Property ListItemText
}
