// `gatehouse apikeys …`: issues, revokes and lists API keys. A key is shown
// exactly once, when created: the users file keeps only a digest of its secret.
// With Redis configured, the keys users made themselves live there: a listing
// that cannot reach it fails rather than leave them out unsaid.
import { parseArgs } from 'node:util';
import { generateApiKey } from '../users/api-keys.js';
import { KeyScopeSchema, type KeyScope } from '../users/key-scope.js';
import { StoreApiKeys } from '../account/store-api-keys.js';
import type { StoreConfig } from '../config/schema.js';
import { isApiKeyActive, type ApiKeyRecord, type UsersFileData } from '../users/users-file.js';
import { addApiKey, getUser, revokeApiKey, findApiKey } from '../users/users-changes.js';
import { revokeKeyAndEndSessions } from '../account/revoke-api-key.js';
import type { Store } from '../store/store.js';
import { EXIT_OK, formatTable, runGroup, singlePositional, UsageError, writeLine, type CommandGroup } from './command.js';
import { assertDeclared, printable, writeJson, type CliIo } from './io.js';
import { withStore } from './store-session.js';
import { withCommandAudit, type CommandAudit } from './audit-session.js';
import { withUsers } from './users-access.js';

export const APIKEYS_COMMANDS: CommandGroup<CliIo> = {
  name: 'apikeys',
  subcommands: {
    create: {
      synopsis: 'create USER [--label TEXT] [--role ROLE]… [--scope SCOPE]… [--read-only] [--expires-in-days N] [--dpop-jkt THUMBPRINT]',
      summary: 'create an API key (printed once, on stdout)',
      details: `  The users file keeps only a digest of the key: copy it when it is shown.
  When the config declares roles or scopes (authorization.roles, .scopes),
  --role and --scope take only those (exit 65 lists them).
  --dpop-jkt pins the key to a DPoP key (its RFC 7638 SHA-256 thumbprint):
  a login with the API key must carry a proof signed by that key.`,
      run: create,
    },
    revoke: {
      synopsis: 'revoke KEYID',
      summary: "revoke an API key (the users file's, or with Redis one a user made) and end the sessions opened with it",
      run: revoke,
    },
    list: {
      synopsis: 'list [USER] [--json]',
      summary: 'list API keys, with Redis those users made too (scope, expiry, last use, where kept; never a secret)',
      details: `  WHERE is "users file" (the operator's keys, and users' own without Redis)
  or "store" (users' own keys in Redis). LAST USED is known only with Redis;
  without it the gateway keeps it in memory. A configured Redis that does not
  answer is an error (exit 1), never a shorter list. --json prints the same as
  one JSON array.`,
      run: list,
    },
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
  'dpop-jkt'?: string | undefined;
}): KeyScope | undefined {
  const days = values['expires-in-days'];
  if (days !== undefined && !/^[1-9]\d{0,4}$/.test(days)) throw new UsageError('--expires-in-days takes a whole number of days (1 to 99999)');
  const scope: KeyScope = {
    ...(values.role !== undefined && { roles: values.role }),
    ...(values.scope !== undefined && { scopes: values.scope }),
    ...(values['read-only'] === true && { readOnly: true }),
    ...(days !== undefined && { expiresAt: new Date(Date.now() + Number(days) * 86_400_000).toISOString() }),
    ...(values['dpop-jkt'] !== undefined && { dpopJkt: values['dpop-jkt'] }),
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
      'dpop-jkt': { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  });
  const username = singlePositional(positionals, 'USER');
  assertDeclared(io, 'roles', values.role ?? []);
  assertDeclared(io, 'scopes', values.scope ?? []);
  const { key, keyId, hash } = generateApiKey();
  const label = values.label;
  const scope = keyScope(values);
  let disabled = false;
  await withUsers(io, (users) =>
    users.change((data) => {
      disabled = getUser(data, username).disabled;
      return addApiKey(data, username, { keyId, hash, ...(label !== undefined ? { label } : {}), ...(scope && { scope }) });
    }),
  );

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
  return withUsers(io, async (users) => {
    const data = await users.read();
    // Not in the users' records: a key a user made on the account page, in the store.
    if (!findApiKey(data, keyId) && io.store?.url) {
      const owner = await withStoreKeys(io.store, (keys, store) =>
        withCommandAudit(io, io.audit, store, (audit) => revokeStoreKey(keys, store, data, keyId, audit)),
      );
      if (owner !== undefined) {
        writeLine(io.stdout, `revoked API key ${keyId} of user ${owner}`);
        return EXIT_OK;
      }
    }
    const next = await users.change((current) => revokeApiKey(current, keyId));
    writeLine(io.stdout, `revoked API key ${keyId} of user ${findApiKey(next, keyId)!.username}`);
    return EXIT_OK;
  });
}

async function list(args: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: { json: { type: 'boolean', default: false } }, allowPositionals: true, strict: true });
  if (positionals.length > 1) throw new UsageError(`unexpected argument: ${positionals[1]}`);
  const only = positionals[0];
  const data = await withUsers(io, (users) => users.read());
  if (only !== undefined) getUser(data, only);

  // Key ids and metadata only: never a digest. With Redis, users' own keys too (deleted when revoked).
  const users = Object.entries(data.users).filter(([name]) => only === undefined || name === only);
  const held: Array<{ user: string; key: ApiKeyRecord; where: 'users file' | 'store' }> = users.flatMap(([user, record]) =>
    // With usersIn: store the users' records (operator keys among them) are in the store too.
    record.apiKeys.map((key) => ({ user, key, where: io.usersIn === 'store' ? ('store' as const) : ('users file' as const) })),
  );
  let lastUses = new Map<string, number>();
  if (io.store?.url) {
    await withStoreKeys(io.store, async (keys) => {
      const stored = await Promise.all(users.map(([username, user]) => keys.list({ sub: user.id, username })));
      users.forEach(([user], index) => held.push(...stored[index]!.map(({ sub: _, ...key }) => ({ user, key, where: 'store' as const }))));
      lastUses = await keys.lastUsed(held.map(({ key }) => key.id));
    });
  }
  const listed = held.map(({ user, key, where }) => ({
    id: key.id,
    user,
    label: key.label ?? null,
    scope: key.scope ?? null,
    createdAt: key.createdAt,
    expiresAt: key.scope?.expiresAt ?? null,
    lastUsedAt: lastUses.has(key.id) ? new Date(lastUses.get(key.id)!).toISOString() : null,
    revokedAt: key.revokedAt ?? null,
    active: isApiKeyActive(key),
    where,
  }));
  if (values.json) {
    writeJson(io, listed);
    return EXIT_OK;
  }
  if (listed.length === 0) {
    writeLine(io.stderr, only === undefined ? 'no API keys' : `no API keys for ${only}`);
    return EXIT_OK;
  }
  const rows = listed.map((key) => [
    key.id,
    key.user,
    printable(key.label ?? '-') || '-',
    describeScope(key.scope),
    key.createdAt,
    key.expiresAt ?? 'never',
    key.lastUsedAt ?? '-',
    key.revokedAt ?? '-',
    key.where,
  ]);
  writeLine(io.stdout, formatTable([['KEY ID', 'USER', 'LABEL', 'SCOPE', 'CREATED', 'EXPIRES', 'LAST USED', 'REVOKED', 'WHERE'], ...rows]));
  return EXIT_OK;
}

/** `roles=a,b scopes=x read-only`, or `all` for a key with its owner's whole power. */
function describeScope(scope: ApiKeyRecord['scope'] | null): string {
  const parts = [
    ...(scope?.roles ? [`roles=${scope.roles.join(',') || '(none)'}`] : []),
    ...(scope?.scopes ? [`scopes=${scope.scopes.join(',') || '(none)'}`] : []),
    ...(scope?.readOnly ? ['read-only'] : []),
    ...(scope?.dpopJkt ? [`dpop-jkt=${scope.dpopJkt}`] : []),
  ];
  return parts.length > 0 ? parts.join(' ') : 'all';
}

/** The store's keys (and the store, to end sessions) for one command; a command must not act on half the keys. */
async function withStoreKeys<T>(config: StoreConfig, use: (keys: StoreApiKeys, store: Store) => Promise<T>): Promise<T> {
  return withStore(config, 'the keys users made there cannot be read', (store) => use(new StoreApiKeys(store.apiKeys!), store));
}

/** Deletes a store-held key and ends the sessions it opened (announced to every gateway); its owner's name, or undefined. */
async function revokeStoreKey(keys: StoreApiKeys, store: Store, data: UsersFileData, keyId: string, audit: CommandAudit): Promise<string | undefined> {
  const key = await keys.find(keyId);
  const owner = key && Object.entries(data.users).find(([, user]) => user.id === key.sub);
  if (!key || !owner) return undefined;
  return (await revokeKeyAndEndSessions(keys, store, { sub: key.sub, username: owner[0] }, keyId, audit)) ? owner[0] : undefined;
}
