// `gatehouse apikeys …`: issues, revokes and lists API keys. A key is shown
// exactly once, when created: the users file keeps only a digest of its secret.
import { parseArgs } from 'node:util';
import { generateApiKey } from '../identity/api-keys.js';
import { addApiKey, getUser, readUsersFile, revokeApiKey, writeUsersFile, findApiKey } from '../identity/users-file.js';
import { EXIT_OK, formatTable, runGroup, singlePositional, UsageError, writeLine, type CommandGroup } from './command.js';
import { printable, type CliIo } from './io.js';

export const APIKEYS_COMMANDS: CommandGroup<CliIo> = {
  name: 'apikeys',
  subcommands: {
    create: {
      synopsis: 'create USER [--label TEXT]',
      summary: 'create an API key (printed once, on stdout)',
      details: '  The users file keeps only a digest of the key: copy it when it is shown.',
      run: create,
    },
    revoke: { synopsis: 'revoke KEYID', summary: 'revoke an API key and end the sessions opened with it', run: revoke },
    list: { synopsis: 'list [USER]', summary: 'list API keys (ids and dates, never a secret)', run: list },
  },
};

export async function runApiKeysCommand(args: string[], io: CliIo): Promise<number> {
  return runGroup(APIKEYS_COMMANDS, args, io);
}

async function create(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { label: { type: 'string' } },
    allowPositionals: true,
    strict: true,
  });
  const username = singlePositional(positionals, 'USER');
  const data = await readUsersFile(io.usersFile);
  const disabled = getUser(data, username).disabled;
  const { key, keyId, hash } = generateApiKey();
  const label = values.label;
  await writeUsersFile(io.usersFile, addApiKey(data, username, { keyId, hash, ...(label !== undefined ? { label } : {}) }));

  // Printed only once the file holds the key: a key shown but not saved would be a dud.
  // stdout carries the key alone, so `KEY=$(gatehouse apikeys create …)` works.
  writeLine(io.stdout, key);
  writeLine(io.stderr, `Created API key ${keyId} for ${username}. Copy it now: it is not stored and will not be shown again.`);
  if (disabled) writeLine(io.stderr, `Note: user ${username} is disabled; the key works only once the user is enabled.`);
  return EXIT_OK;
}

async function revoke(args: string[], io: CliIo): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true });
  const keyId = singlePositional(positionals, 'KEYID');
  const data = await readUsersFile(io.usersFile);
  const next = revokeApiKey(data, keyId);
  await writeUsersFile(io.usersFile, next);
  writeLine(io.stdout, `revoked API key ${keyId} of user ${findApiKey(next, keyId)!.username}`);
  return EXIT_OK;
}

async function list(args: string[], io: CliIo): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true });
  if (positionals.length > 1) throw new UsageError(`unexpected argument: ${positionals[1]}`);
  const only = positionals[0];
  const data = await readUsersFile(io.usersFile);
  if (only !== undefined) getUser(data, only);

  // Key ids and metadata only: never a digest.
  const rows = Object.entries(data.users)
    .filter(([name]) => only === undefined || name === only)
    .flatMap(([name, user]) =>
      user.apiKeys.map((key) => [key.id, name, printable(key.label ?? '-') || '-', key.createdAt, key.revokedAt ?? '-']),
    );
  if (rows.length === 0) {
    writeLine(io.stderr, only === undefined ? 'no API keys' : `no API keys for ${only}`);
    return EXIT_OK;
  }
  writeLine(io.stdout, formatTable([['KEY ID', 'USER', 'LABEL', 'CREATED', 'REVOKED'], ...rows]));
  return EXIT_OK;
}
