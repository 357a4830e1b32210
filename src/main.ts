#!/usr/bin/env node
// The `gatehouse` command: `start` runs the gateway; `users`, `apikeys` and
// `keys` manage the users file and the signing keys named by the config.
import { readFileSync } from 'node:fs';
import { ConfigError, configFilePath, loadConfig } from './config/load.js';
import type { Config } from './config/schema.js';
import { runApiKeysCommand } from './cli/apikeys.js';
import { runKeysCommand } from './cli/keys.js';
import { runStart } from './cli/start.js';
import { runUsersCommand } from './cli/users.js';

const USAGE = `Usage: gatehouse [--config FILE] <command>

Commands:
  start                                  run the gateway
  users add NAME [--password-stdin]      add a user (password prompted, or read from stdin)
  users disable|enable|remove NAME       change a user
  users list                             list users
  apikeys create USER [--label TEXT]     create an API key (printed once)
  apikeys revoke KEYID                   revoke an API key
  apikeys list [USER]                    list API keys
  keys rotate                            start signing with a new key (old keys keep verifying)
  keys list                              list signing keys

The config file is --config FILE, else $GATEHOUSE_CONFIG, else the embedded default.
`;

function version(): string {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string };
  return pkg.version;
}

/** `--config FILE` may stand anywhere; everything else belongs to the command. */
function splitConfigOption(argv: string[]): { file: string | undefined; args: string[] } {
  let file: string | undefined;
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    if (arg === '--config' || arg === '-c') file = argv[++i];
    else if (arg.startsWith('--config=')) file = arg.slice('--config='.length);
    else args.push(arg);
  }
  return { file, args };
}

export async function main(argv: string[]): Promise<number> {
  const { file, args } = splitConfigOption(argv);
  const [command, ...commandArgs] = args;
  if (command === '--version' || command === '-v') {
    process.stdout.write(`${version()}\n`);
    return 0;
  }
  if (command === undefined || command === '--help' || command === '-h' || command === 'help') {
    process.stdout.write(USAGE);
    return command === undefined ? 2 : 0;
  }

  let config: Config;
  try {
    config = loadConfig(file === undefined ? {} : { file });
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`gatehouse: ${error.message}\n`);
      return 78; // EX_CONFIG
    }
    throw error;
  }

  const io = { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr };
  switch (command) {
    case 'start':
      await runStart(config, configFilePath(file === undefined ? {} : { file }));
      return -1; // keeps running; the signal handlers decide the exit code
    case 'users':
      return runUsersCommand(commandArgs, { ...io, usersFile: config.identity.usersFile });
    case 'apikeys':
      return runApiKeysCommand(commandArgs, { ...io, usersFile: config.identity.usersFile });
    case 'keys':
      return runKeysCommand(commandArgs, {
        ...io,
        keysFile: config.tokens.keysFile,
        algorithm: config.tokens.algorithm,
        retainS: config.tokens.refreshTokenTtlS,
      });
    default:
      process.stderr.write(`gatehouse: unknown command '${command}'\n\n${USAGE}`);
      return 2;
  }
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code >= 0) process.exitCode = code;
  },
  (error: unknown) => {
    // A failed start may leave watchers or sockets open: exit explicitly, without a stack trace.
    process.stderr.write(`gatehouse: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);
