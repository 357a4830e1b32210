// `gatehouse apikeys …`: issues, revokes and lists API keys. A key is shown
// exactly once, when created: the users file keeps only a digest of its secret.
import { parseArgs } from 'node:util';
import { generateApiKey } from '../identity/api-keys.js';
import { KeyScopeSchema, type KeyScope } from '../identity/key-scope.js';
import { pino } from 'pino';
import { StoreApiKeys } from '../account/store-api-keys.js';
import type { StoreConfig } from '../config/schema.js';
import { readUsersFile, writeUsersFile, type UsersFileData } from '../identity/users-file.js';
import { addApiKey, getUser, revokeApiKey, findApiKey } from '../identity/users-changes.js';
import { createStore } from '../store/create-store.js';
import type { Store } from '../store/store.js';
import { EXIT_OK, formatTable, runGroup, singlePositional, UsageError, writeLine, type CommandGroup } from './command.js';
import { printable, type CliIo } from './io.js';

export const APIKEYS_COMMANDS: CommandGroup<CliIo> = {
  name: 'apikeys',
  subcommands: {
    create: {
      synopsis: 'create USER [--label TEXT] [--role ROLE]… [--scope SCOPE]… [--read-only] [--expires-in-days N]',
      summary: 'create an API key (printed once, on stdout)',
      details: '  The users file keeps only a digest of the key: copy it when it is shown.',
      run: create,
    },
    revoke: {
      synopsis: 'revoke KEYID',
      summary: "revoke an API key (the users file's, or with Redis one a user made) and end the sessions opened with it",
      run: revoke,
    },
    list: { synopsis: 'list [USER]', summary: 'list API keys, with Redis those users made too (ids and dates, never a secret)', run: list },
  },
};

export async function runApiKeysCommand(args: string[], io: CliIo): Promise<number> {
  return runGroup(APIKEYS_COMMANDS, args, io);
}

/** The key's scope from the options; undefined when none narrows it. */
function keyScope(values: {
  role?: string[] | undefined;
  scope?: string[] | undefined;
  'read-only'?: boolean | undefined;
  'expires-in-days'?: string | undefined;
}): KeyScope | undefined {
  const days = values['expires-in-days'];
  if (days !== undefined && !/^[1-9]\d{0,4}$/.test(days)) throw new UsageError('--expires-in-days takes a whole number of days (1 to 99999)');
  const scope: KeyScope = {
    ...(values.role !== undefined && { roles: values.role }),
    ...(values.scope !== undefined && { scopes: values.scope }),
    ...(values['read-only'] === true && { readOnly: true }),
    ...(days !== undefined && { expiresAt: new Date(Date.now() + Number(days) * 86_400_000).toISOString() }),
  };
  const checked = KeyScopeSchema.safeParse(scope);
  if (!checked.success) throw new UsageError(`invalid key scope: ${checked.error.issues.map((issue) => issue.message).join('; ')}`);
  return Object.keys(scope).length > 0 ? scope : undefined;
}

async function create(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      label: { type: 'string' },
      role: { type: 'string', multiple: true },
      scope: { type: 'string', multiple: true },
      'read-only': { type: 'boolean', default: false },
      'expires-in-days': { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  const username = singlePositional(positionals, 'USER');
  const data = await readUsersFile(io.usersFile);
  const disabled = getUser(data, username).disabled;
  const { key, keyId, hash } = generateApiKey();
  const label = values.label;
  const scope = keyScope(values);
  await writeUsersFile(io.usersFile, addApiKey(data, username, { keyId, hash, ...(label !== undefined ? { label } : {}), ...(scope && { scope }) }));

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
  // Not the file's: a key a user made on the account page, in the store.
  if (!findApiKey(data, keyId) && io.store?.url) {
    const owner = await withStoreKeys(io.store, (keys, store) => revokeStoreKey(keys, store, data, keyId));
    if (owner !== undefined) {
      writeLine(io.stdout, `revoked API key ${keyId} of user ${owner}`);
      return EXIT_OK;
    }
  }
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

  // Key ids and metadata only: never a digest. With Redis, users' own keys too (deleted when revoked).
  const users = Object.entries(data.users).filter(([name]) => only === undefined || name === only);
  const stored = io.store?.url
    ? await withStoreKeys(io.store, (keys) => Promise.all(users.map(([username, user]) => keys.list({ sub: user.id, username }))))
    : [];
  const rows = users.flatMap(([name, user], index) =>
    [...user.apiKeys, ...(stored[index] ?? [])].map((key) => [key.id, name, printable(key.label ?? '-') || '-', key.createdAt, key.revokedAt ?? '-']),
  );
  if (rows.length === 0) {
    writeLine(io.stderr, only === undefined ? 'no API keys' : `no API keys for ${only}`);
    return EXIT_OK;
  }
  writeLine(io.stdout, formatTable([['KEY ID', 'USER', 'LABEL', 'CREATED', 'REVOKED'], ...rows]));
  return EXIT_OK;
}

/** The store's keys (and the store, to end sessions) for one command; closed afterwards. */
async function withStoreKeys<T>(config: StoreConfig, use: (keys: StoreApiKeys, store: Store) => Promise<T>): Promise<T> {
  const store = await createStore(config, pino({ enabled: false }));
  try {
    return await use(new StoreApiKeys(store.apiKeys!), store);
  } finally {
    await store.close();
  }
}

/** Deletes a store-held key and ends the sessions it opened (announced to every gateway); its owner's name, or undefined. */
async function revokeStoreKey(keys: StoreApiKeys, store: Store, data: UsersFileData, keyId: string): Promise<string | undefined> {
  const key = await keys.find(keyId);
  const owner = key && Object.entries(data.users).find(([, user]) => user.id === key.sub);
  if (!key || !owner) return undefined;
  await keys.revoke({ sub: key.sub, username: owner[0] }, keyId);
  for (const session of await store.listSessions(key.sub)) if (session.apiKeyId === keyId) await store.revokeSession(session.sid);
  return owner[0];
}
