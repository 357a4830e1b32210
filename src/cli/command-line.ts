// The `gatehouse` command line: the global options, then one command. A
// command's `--help` is answered before the config is read, so help works
// with a broken config too; every outcome goes through runCli (command.ts),
// which gives the exit codes: 0, 1 runtime, 2 usage, 78 config.
import { parseArgs } from 'node:util';
import { loadCheckedConfig } from '../config-load/check.js';
import { ConfigError, configFilePath, loadConfig, readConfigFile, type LoadConfigOptions } from '../config-load/load.js';
import { localUsersOf } from '../config/providers-schema.js';
import { GATEHOUSE_VERSION } from '../observability/version.js';
import { APIKEYS_COMMANDS } from './apikeys.js';
import { AUDIT_COMMANDS } from './audit.js';
import { CHECK_CONFIG_USAGE, runCheckConfig } from './check-config.js';
import { CLIENTS_COMMANDS } from './clients.js';
import {
  asksForHelp,
  EXIT_OK,
  formatTable,
  groupHelp,
  runCli,
  runGroup,
  subcommandOf,
  UsageError,
  writeLine,
  type CommandGroup,
  type OutputIo,
} from './command.js';
import type { CliIo } from './io.js';
import { KEYS_COMMANDS } from './keys.js';
import { runUsage, USAGE_USAGE } from './usage.js';
import { USERS_COMMANDS } from './users.js';

export interface ProcessIo extends OutputIo {
  stdin: CliIo['stdin'];
  env: NodeJS.ProcessEnv;
}

/** Returned by `start`: the gateway runs on, and its signal handlers decide the exit code. */
export const KEEPS_RUNNING = -1;

const START_USAGE = `usage: gatehouse start [--config FILE]

  Checks the configuration as check-config does (exit 78 on any problem,
  before a file is written or a socket opened), then runs the gateway until
  SIGTERM or SIGINT, draining in-flight requests. SIGHUP reloads the config
  (the sections that reload live; an edit of another is refused, named).`;

interface Command {
  /** Its lines in the overall usage: synopsis and summary. */
  lines: ReadonlyArray<readonly [string, string]>;
  help(args: readonly string[]): string;
  /** `config`: where the config comes from; read only once the command needs it. */
  run(args: string[], io: ProcessIo, config: LoadConfigOptions): Promise<number>;
}

function groupCommand<Io extends OutputIo>(commands: CommandGroup<Io>, groupIo: (io: ProcessIo, config: LoadConfigOptions) => Io): Command {
  return {
    lines: Object.values(commands.subcommands).map((s) => [`${commands.name} ${s.synopsis}`, s.summary] as const),
    help: (args) => groupHelp(commands, args),
    run(args, io, config) {
      subcommandOf(commands, args); // a wrong command line is told before the config is read
      return runGroup(commands, args, groupIo(io, config));
    },
  };
}

const COMMANDS: Record<string, Command> = {
  start: {
    lines: [['start', 'run the gateway']],
    help: () => START_USAGE,
    async run(args, _io, config) {
      parseArgs({ args, options: {}, allowPositionals: false, strict: true });
      const checked = loadCheckedConfig(config);
      // Loaded only here: the other commands do without the gateway's modules (Fastify, undici, …).
      const { runStart } = await import('./start.js');
      await runStart(checked.config, checked.file);
      return KEEPS_RUNNING;
    },
  },
  'check-config': {
    lines: [['check-config', 'check the configuration and the files it names, change nothing (exit 0 or 78)']],
    help: () => CHECK_CONFIG_USAGE,
    run: (args, io, config) => runCheckConfig(args, { ...io, configFile: config.file, env: config.env ?? io.env }),
  },
  users: groupCommand(USERS_COMMANDS, localUsersIo),
  apikeys: groupCommand(APIKEYS_COMMANDS, localUsersIo),
  usage: {
    lines: [['usage CONSUMER [--tier NAME] [--json]', "a consumer's use of each route quota, from Redis"]],
    help: () => USAGE_USAGE,
    run: (args, io, config) => runUsage(args, io, loadConfig(config)),
  },
  // Reads no config: it makes what the operator then writes into one.
  clients: groupCommand(CLIENTS_COMMANDS, (io) => io),
  audit: groupCommand(AUDIT_COMMANDS, (io, config) => {
    const { audit, store } = loadConfig(config);
    return { ...io, audit, store };
  }),
  keys: groupCommand(KEYS_COMMANDS, (io, config) => {
    const file = configFilePath(config);
    if (providerOf(file) === 'oidc') throw oidcRefusal(file, 'signing keys');
    const { tokens, audit, store } = loadConfig(config);
    // The schema requires it in local mode; oidc was refused above.
    return { ...io, keysFile: tokens.keysFile!, algorithm: tokens.algorithm, retainS: tokens.refreshTokenTtlS, audit, store };
  }),
};

/**
 * What `users` and `apikeys` work on: the users file, the store and the
 * declared roles and scopes. In oidc mode they have nothing to work on, which
 * is said first (exit 78), before the config's other fields are judged: a
 * missing client secret is not why `users list` cannot run.
 */
function localUsersIo(io: ProcessIo, config: LoadConfigOptions): CliIo {
  const file = configFilePath(config);
  if (providerOf(file) === 'oidc') throw oidcRefusal(file);
  const { identity: checked, store, authorization, audit } = loadConfig(config);
  const local = localUsersOf(checked);
  // Users and keys are the local provider's (alone or among several); with only fronted providers they are managed there (exit 78).
  if (local === undefined) throw oidcRefusal(file);
  return { ...io, usersFile: local.usersFile, usersIn: local.usersIn, store, declared: authorization, audit };
}

/** The file's `identity.provider` as written, read before the config is judged as a whole. */
function providerOf(file: string): unknown {
  return (readConfigFile(file) as { identity?: { provider?: unknown } } | null)?.identity?.provider;
}

function oidcRefusal(file: string, what: 'users' | 'signing keys' = 'users'): ConfigError {
  if (what === 'signing keys') {
    return new ConfigError(file, [
      'identity.provider: oidc: the OpenID Provider signs the tokens with its own keys; ' +
        'Gatehouse holds no signing keys in this mode (the keys commands need identity.provider: local)',
    ]);
  }
  return new ConfigError(file, [
    'identity.provider: oidc: users and API keys live at the OpenID Provider and are managed there; ' +
      'the users and apikeys commands work on a local users file (identity.provider: local)',
  ]);
}

function usage(): string {
  const commands = Object.values(COMMANDS).flatMap((command) => command.lines.map(([synopsis, summary]) => [`  ${synopsis}`, summary]));
  return `usage: gatehouse [--config FILE] <command> [arguments]

Commands:
${formatTable(commands)}

Options:
${formatTable([
  ['  -c, --config FILE', 'the config file; else $GATEHOUSE_CONFIG, else the embedded default'],
  ['  -h, --help', "this text; after a command, that command's usage"],
  ['  -v, --version', 'the version (before or after the command)'],
])}

Exit codes: 0 done, 1 failed, 2 wrong command line, 65 a role or scope the config does not declare, 78 invalid configuration.`;
}

/** `--config FILE` (also `-c FILE`, `--config=FILE`) may stand anywhere before a `--`; the rest is the command's. */
function splitConfigOption(argv: readonly string[]): { file: string | undefined; args: string[] } {
  let file: string | undefined;
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--') {
      args.push(...argv.slice(i));
      break;
    }
    if (arg === '--config' || arg === '-c') {
      file = argv[++i];
      if (file === undefined || file === '') throw new UsageError(`${arg} needs a file`);
    } else if (arg.startsWith('--config=')) {
      file = arg.slice('--config='.length);
      if (file === '') throw new UsageError('--config needs a file');
    } else {
      args.push(arg);
    }
  }
  return { file, args };
}

/** `--version` or `-v` among the arguments, before any `--` (after it, words are positional). */
function asksForVersion(args: readonly string[]): boolean {
  const end = args.indexOf('--');
  return (end === -1 ? args : args.slice(0, end)).some((arg) => arg === '--version' || arg === '-v');
}

/** Runs `gatehouse …`; the exit code, or KEEPS_RUNNING. */
export function runCommandLine(argv: readonly string[], io: ProcessIo): Promise<number> {
  return runCli('', io, async () => {
    const { file, args } = splitConfigOption(argv);
    // Anywhere before a `--`, like --help: `gatehouse start --version` is asked as often as `gatehouse --version`.
    if (asksForVersion(args)) {
      writeLine(io.stdout, GATEHOUSE_VERSION);
      return EXIT_OK;
    }
    const [first, ...rest] = args;
    if (first === undefined || first === '--help' || first === '-h' || first === 'help') {
      if (first === undefined) throw new UsageError('missing command');
      writeLine(io.stdout, usage());
      return EXIT_OK;
    }
    if (!Object.hasOwn(COMMANDS, first)) throw new UsageError(`unknown command: ${first}`);
    const command = COMMANDS[first]!;
    if (asksForHelp(rest)) {
      writeLine(io.stdout, command.help(rest));
      return EXIT_OK;
    }
    return runCli(first, io, () => command.run(rest, io, { ...(file !== undefined && { file }), env: io.env }));
  });
}
