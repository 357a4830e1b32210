// Keys users make through the account API, with Redis: they live in the
// store, so they are valid on every instance at once and survive a restart,
// the users file stays the operator's, and a revocation on one instance stops
// the key and its sessions on the other at once.
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runApiKeysCommand } from '../../src/cli/apikeys.js';
import type { LocalIdentityProvider } from '../../src/users/local-provider.js';
import { readUsersFile, writeUsersFile } from '../../src/users/users-file.js';
import { runCommand } from '../helpers/cli.js';
import { postJson, startTestGateway, writeTestUsers, type TestGateway } from '../helpers/gateway.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';

interface TokenSet {
  access_token: string;
  refresh_token: string;
}

let redis: { url: string; close(): Promise<void> };
let dir: string;
let operatorKeys: Record<string, string[]>;
const keyPrefix = uniquePrefix();
let a: TestGateway;
let b: TestGateway;

/** One more instance of the same deployment: the same users file, keys file and Redis. */
function instance(): Promise<TestGateway> {
  return startTestGateway({
    config: {
      store: { url: redis.url, keyPrefix },
      identity: { usersFile: join(dir, 'users.yaml') },
      tokens: { keysFile: join(dir, 'keys.json') },
      authorization: { roles: ['reader', 'admin'] },
    },
  });
}

beforeAll(async () => {
  redis = await testRedisUrl();
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-account-'));
  operatorKeys = await writeTestUsers(join(dir, 'users.yaml'), [
    { name: 'alice', password: 'alice-password-1', roles: ['reader', 'admin'], apiKeys: 1 },
    { name: 'bob', password: 'bob-password-1' },
  ]);
  a = await instance();
  b = await instance();
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await redis?.close();
  await rm(dir, { recursive: true, force: true });
});

async function login(gw: TestGateway, username: string, password: string): Promise<Response> {
  return postJson(`${gw.url}/api/v1/auth/login`, { username, password });
}

async function tokens(gw: TestGateway, username: string, password: string): Promise<TokenSet> {
  const response = await login(gw, username, password);
  expect(response.status).toBe(200);
  return (await response.json()) as TokenSet;
}

function call(gw: TestGateway, path: string, token: string, init: { method?: string; body?: unknown } = {}): Promise<Response> {
  return fetch(`${gw.url}${path}`, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${token}`, ...(init.body !== undefined && { 'content-type': 'application/json' }) },
    ...(init.body !== undefined && { body: JSON.stringify(init.body) }),
  });
}

async function createKey(gw: TestGateway, token: string, body: unknown): Promise<{ id: string; key: string }> {
  const response = await call(gw, '/api/v1/account/api-keys', token, { method: 'POST', body });
  expect(response.status, await response.clone().text()).toBe(201);
  return (await response.json()) as { id: string; key: string };
}

describe('keys made through the account API, on Redis', () => {
  it('work on every instance at once, leave the users file alone, and survive a restart', async () => {
    const before = await readFile(join(dir, 'users.yaml'), 'utf8');
    const { access_token } = await tokens(a, 'bob', 'bob-password-1');
    const created = await createKey(a, access_token, { label: 'ci' });
    expect((await login(b, 'bob', created.key)).status).toBe(200);
    expect(await readFile(join(dir, 'users.yaml'), 'utf8')).toBe(before);

    await a.close();
    a = await instance();
    expect((await login(a, 'bob', created.key)).status).toBe(200);
    const { apiKeys } = (await (await call(a, '/api/v1/account/api-keys', access_token)).json()) as {
      apiKeys: Array<{ id: string; lastUsedAt: string | null }>;
    };
    expect(apiKeys.find((key) => key.id === created.id)?.lastUsedAt).toEqual(expect.any(String));
  });

  it('revoked on one instance: the key and the sessions it opened stop on the other at once', async () => {
    const { access_token } = await tokens(a, 'bob', 'bob-password-1');
    const created = await createKey(a, access_token, { label: 'to revoke' });
    const opened = await tokens(b, 'bob', created.key);
    expect((await call(b, '/api/v1/account', opened.access_token)).status).toBe(200);

    expect((await call(a, `/api/v1/account/api-keys/${created.id}`, access_token, { method: 'DELETE' })).status).toBe(204);
    expect((await login(b, 'bob', created.key)).status).toBe(401);
    expect((await call(b, '/api/v1/account', opened.access_token)).status).toBe(401);
  });

  it('keep a scoped key narrow through a refresh (its scope is not in the users file)', async () => {
    const { access_token } = await tokens(a, 'alice', 'alice-password-1');
    const created = await createKey(a, access_token, { label: 'reader', scope: { roles: ['reader'], scopes: ['orders:read'], readOnly: true } });
    const opened = await tokens(b, 'alice', created.key);
    expect(decodeJwt(opened.access_token)).toMatchObject({ roles: ['reader'], scope: 'orders:read', ro: true });
    const refreshed = (await (await postJson(`${a.url}/api/v1/auth/refresh`, { refresh_token: opened.refresh_token })).json()) as TokenSet;
    expect(decodeJwt(refreshed.access_token)).toMatchObject({ roles: ['reader'], scope: 'orders:read', ro: true });
  });

  it("list the operator's keys beside the user's own, and leave the operator's to the operator", async () => {
    const { access_token } = await tokens(a, 'alice', 'alice-password-1');
    const { apiKeys } = (await (await call(a, '/api/v1/account/api-keys', access_token)).json()) as { apiKeys: Array<{ id: string; managedBy: string }> };
    const operators = apiKeys.filter((key) => key.managedBy === 'operator');
    expect(operators).toHaveLength(1);
    const response = await call(a, `/api/v1/account/api-keys/${operators[0]!.id}`, access_token, { method: 'DELETE' });
    expect(response.status).toBe(403);
    expect((await login(b, 'alice', operatorKeys.alice![0]!)).status).toBe(200);
  });

  it("are listed and revoked by the CLI, like the users file's", async () => {
    const { access_token } = await tokens(a, 'bob', 'bob-password-1');
    const created = await createKey(a, access_token, { label: 'cli sees me' });
    const store = { url: redis.url, keyPrefix };
    const listed = await runCommand((args, io) => runApiKeysCommand(args, { ...io, store }), ['list', 'bob'], join(dir, 'users.yaml'));
    expect(listed.code).toBe(0);
    expect(listed.stdout).toMatch(new RegExp(`${created.id}\\s+bob\\s+cli sees me`));
    const opened = await tokens(b, 'bob', created.key);

    const revoked = await runCommand((args, io) => runApiKeysCommand(args, { ...io, store }), ['revoke', created.id], join(dir, 'users.yaml'));
    expect(revoked).toMatchObject({ code: 0, stdout: `revoked API key ${created.id} of user bob\n` });
    expect((await login(a, 'bob', created.key)).status).toBe(401);
    expect((await call(b, '/api/v1/account', opened.access_token)).status).toBe(401);
  });
});

describe("the operator's keys beside Redis", () => {
  it('stop, with their sessions, when a line is removed from the users file by hand', async () => {
    const file = join(dir, 'users.yaml');
    const alice = operatorKeys.alice![0]!;
    const opened = await tokens(a, 'alice', alice);
    expect((await call(b, '/api/v1/account', opened.access_token)).status).toBe(200);
    const data = await readUsersFile(file);
    await writeUsersFile(file, { users: { ...data.users, alice: { ...data.users.alice!, apiKeys: [] } } });
    await Promise.all([a.gateway.identity, b.gateway.identity].map((identity) => (identity as LocalIdentityProvider).reload()));
    expect((await login(a, 'alice', alice)).status).toBe(401);
    expect((await call(b, '/api/v1/account', opened.access_token)).status).toBe(401);
    expect((await call(a, '/api/v1/account', opened.refresh_token)).status).toBe(401);
  });
});
