// A key keeps its owner when the gateway moves from the in-memory store to
// Redis: a key a user made through the account API lives in the users file
// (`createdBy: user`), and stays theirs to revoke once the keys users make go
// to Redis; the operator's keys (made with the CLI, or in a file older than
// the field) stay the operator's on both stores.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readUsersFile } from '../../src/users/users-file.js';
import { postJson, startTestGateway, writeTestUsers, type TestGateway } from '../helpers/gateway.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';

let redis: { url: string; close(): Promise<void> };
let dir: string;
let operatorKeys: Record<string, string[]>;
let gateway: TestGateway | undefined;

function start(store: Record<string, unknown>): Promise<TestGateway> {
  return startTestGateway({ config: { store, identity: { usersFile: join(dir, 'users.yaml') }, tokens: { keysFile: join(dir, 'keys.json') } } });
}

async function accessToken(gw: TestGateway, username: string, password: string): Promise<string> {
  const response = await postJson(`${gw.url}/api/v1/auth/login`, { username, password });
  expect(response.status).toBe(200);
  return ((await response.json()) as { access_token: string }).access_token;
}

function call(gw: TestGateway, path: string, token: string, init: { method?: string; body?: unknown } = {}): Promise<Response> {
  return fetch(`${gw.url}${path}`, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${token}`, ...(init.body !== undefined && { 'content-type': 'application/json' }) },
    ...(init.body !== undefined && { body: JSON.stringify(init.body) }),
  });
}

async function listing(gw: TestGateway, token: string): Promise<Array<{ id: string; managedBy: string }>> {
  const response = await call(gw, '/api/v1/account/api-keys', token);
  expect(response.status).toBe(200);
  return ((await response.json()) as { apiKeys: Array<{ id: string; managedBy: string }> }).apiKeys;
}

beforeAll(async () => {
  redis = await testRedisUrl();
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-key-owner-'));
  operatorKeys = await writeTestUsers(join(dir, 'users.yaml'), [
    { name: 'carol', password: 'carol-password-1', apiKeys: 1 },
    { name: 'dave', password: 'dave-password-1' },
  ]);
});
afterAll(async () => {
  await gateway?.close();
  await redis?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('a key made by its user on the in-memory store, after a move to Redis', () => {
  it("stays the user's: listed as theirs and revoked by them (204), not the operator's (403)", async () => {
    gateway = await start({});
    const onMemory = await accessToken(gateway, 'carol', 'carol-password-1');
    const response = await call(gateway, '/api/v1/account/api-keys', onMemory, { method: 'POST', body: { label: 'laptop' } });
    expect(response.status).toBe(201);
    const created = (await response.json()) as { id: string; key: string };
    const operatorKey = (await listing(gateway, onMemory)).find((key) => key.managedBy === 'operator')!;
    expect(operatorKey).toBeDefined();
    // The file says who made which key: that is what survives the move.
    const carol = (await readUsersFile(join(dir, 'users.yaml'))).users.carol!;
    expect(carol.apiKeys.find((key) => key.id === created.id)?.createdBy).toBe('user');
    expect(carol.apiKeys.find((key) => key.id === operatorKey.id)?.createdBy).toBeUndefined();
    await gateway.close();

    gateway = await start({ url: redis.url, keyPrefix: uniquePrefix() });
    const onRedis = await accessToken(gateway, 'carol', 'carol-password-1');
    expect(await listing(gateway, onRedis)).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: created.id, managedBy: 'user' }),
        expect.objectContaining({ id: operatorKey.id, managedBy: 'operator' }),
      ]),
    );
    const opened = await accessToken(gateway, 'carol', created.key);
    expect((await call(gateway, '/api/v1/account', opened)).status).toBe(200);

    // Another user cannot reach it: "not found", as for any key not theirs.
    const dave = await accessToken(gateway, 'dave', 'dave-password-1');
    expect((await call(gateway, `/api/v1/account/api-keys/${created.id}`, dave, { method: 'DELETE' })).status).toBe(404);

    expect((await call(gateway, `/api/v1/account/api-keys/${created.id}`, onRedis, { method: 'DELETE' })).status).toBe(204);
    expect((await postJson(`${gateway.url}/api/v1/auth/login`, { username: 'carol', password: created.key })).status).toBe(401);
    expect((await call(gateway, '/api/v1/account', opened)).status).toBe(401);
    expect((await listing(gateway, onRedis)).map((key) => key.id)).toEqual([operatorKey.id]);
    expect((await readUsersFile(join(dir, 'users.yaml'))).users.carol!.apiKeys.find((key) => key.id === created.id)?.revokedAt).toEqual(expect.any(String));
  });

  it("leaves the operator's key to the operator on either store", async () => {
    for (const store of [{}, { url: redis.url, keyPrefix: uniquePrefix() }]) {
      await gateway?.close();
      gateway = await start(store);
      const token = await accessToken(gateway, 'carol', 'carol-password-1');
      const [operatorKey] = await listing(gateway, token);
      expect(operatorKey?.managedBy).toBe('operator');
      const response = await call(gateway, `/api/v1/account/api-keys/${operatorKey!.id}`, token, { method: 'DELETE' });
      expect(response.status).toBe(403);
      expect(JSON.stringify(await response.json())).toContain('managed by an operator');
      expect((await postJson(`${gateway.url}/api/v1/auth/login`, { username: 'carol', password: operatorKeys.carol![0]! })).status).toBe(200);
    }
  });
});
