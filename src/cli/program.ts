/**
 * The `padlock` command line, declared with commander: its subcommands, their options and help,
 * and commander's own errors turned into the CLI's one-line usage errors (exit code 2).
 */
import { Command, CommanderError } from 'commander';
import type { CommandContext } from './command.js';
import { declareDashboard } from './dashboard.js';
import { declareDemo } from './demo.js';
import { CliError, ExitCode, usageError } from './errors.js';
import { declareInspect } from './inspect.js';
import { declareList } from './list.js';
import { declareReap } from './reap.js';
import { declareRelease } from './release.js';
import { declareWatch } from './watch.js';

const AFTER_HELP = `
Connecting (list, inspect, release, watch, reap, dashboard): --url, else $REDIS_URL:
  redis://[[user]:password@]host[:port][/db]   one server (rediss:// for TLS); a Cluster
                                               node is found out and its Cluster used
  redis+sentinel://[[user]:password@]host[:port][,host[:port]…]/masterName[/db]
                                               the primary a set of sentinels names
                                               (?sentinelPassword=… for the sentinels' own)
  --cluster                                    insist that the URL is a Cluster node
Or, for list, inspect, release and watch on another store:
  --zookeeper host:port[,host:port…]           a ZooKeeper ensemble (node-zookeeper-client)
  --etcd host:port[,host:port…]                an etcd cluster (etcd3)
  --postgres postgres://user@host[:port]/db    a PostgreSQL server (pg); --postgres-schema
                                               names the schema of padlock's tables

Exit status: 0 done, 1 failed (Redis unreachable or lost, a Redis error), 2 bad command
line, 130 interrupted (Ctrl-C; 'watch' exits 0 on it), 143 terminated (SIGTERM).

Start with: npx padlock demo`;

/**
 * Runs the command line `argv` (without `node` and the script).
 * @param version what `padlock --version` prints
 * @returns the exit code
 * @throws CliError for every failure the user should see as one line
 */
export async function runCli(argv: readonly string[], context: CommandContext, version: string): Promise<number> {
  let code: number = ExitCode.ok;
  const exit = (value: number): void => void (code = value);
  const program = new Command('padlock')
    .usage('<command> [options]')
    .description('Distributed locks for Node.js on Redis: see and fix them from a shell.')
    .version(version, '-v, --version', "print padlock's version")
    .helpOption('-h, --help', 'show this help (padlock <command> --help for a command)')
    .configureHelp({ subcommandTerm: (command) => command.name(), sortSubcommands: false })
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      writeOut: (text) => void context.stdout.write(text),
      writeErr: (text) => void context.stderr.write(text),
      // Errors are thrown (exitOverride) and reported by main as one line.
      outputError: () => undefined,
    })
    .addHelpText('after', AFTER_HELP);
  declareDemo(program, context, exit);
  declareList(program, context, exit);
  declareInspect(program, context, exit);
  declareRelease(program, context, exit);
  declareWatch(program, context, exit);
  declareReap(program, context, exit);
  declareDashboard(program, context, exit);

  const subcommand = argv.find((arg) => program.commands.some((c) => c.name() === arg));
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return code;
  } catch (error) {
    if (error instanceof CommanderError) return commanderOutcome(error, subcommand);
    if (error instanceof CliError && error.exitCode === ExitCode.usage && error.hint === undefined && subcommand !== undefined) {
      error.hint = `padlock ${subcommand} --help`;
    }
    throw error;
  }
}

/** The exit code for commander's help and version, or the usage error for its parse errors. */
function commanderOutcome(error: CommanderError, subcommand: string | undefined): number {
  // Help or version was printed: --help and `help` exit 0; a bare `padlock` printed help to stderr.
  if (error.code === 'commander.helpDisplayed' || error.code === 'commander.version' || error.code === 'commander.help') {
    return error.exitCode === 0 ? ExitCode.ok : ExitCode.usage;
  }
  const usage = usageError(error.message.replace(/^error: /, '').split('\n', 1)[0] ?? error.message);
  usage.hint = subcommand === undefined ? 'padlock --help' : `padlock ${subcommand} --help`;
  throw usage;
}
