// The account API (spec 5.2, "Manage my account"): a user sees their account,
// makes and revokes their own API keys and ends their own sessions; never
// anyone else's. Here on the in-memory store, where keys go into the users file.
import { readFile } from 'node:fs/promises';
import { decodeJwt } from 'jose';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseUsersFile } from '../../src/users/users-file.js';
import { expectDiagnoses } from '../helpers/diagnoses.js';
import { postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';

interface TokenSet {
  access_token: string;
  refresh_token: string;
}

let gw: TestGateway;

beforeAll(async () => {
  gw = await startTestGateway({
    users: [
      { name: 'alice', password: 'alice-password-1', roles: ['reader', 'admin'], apiKeys: 1 },
      { name: 'bob', password: 'bob-password-1' },
    ],
    config: { authorization: { roles: ['reader', 'admin'] }, account: { maxKeysPerUser: 4 } },
  });
});
afterAll(async () => gw?.close());
afterEach(() => {
  vi.useRealTimers();
});

async function login(username: string, password: string): Promise<TokenSet> {
  const response = await postJson(`${gw.url}/api/v1/auth/login`, { username, password });
  expect(response.status).toBe(200);
  return (await response.json()) as TokenSet;
}

function call(path: string, token: string, init: { method?: string; body?: unknown } = {}): Promise<Response> {
  return fetch(`${gw.url}${path}`, {
    method: init.method ?? 'GET',
    headers: { authorization: `Bearer ${token}`, ...(init.body !== undefined && { 'content-type': 'application/json' }) },
    ...(init.body !== undefined && { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) }),
  });
}

async function createKey(token: string, body: unknown = { label: 'nightly export' }): Promise<{ id: string; key: string; label: string; expiresAt: string }> {
  const response = await call('/api/v1/account/api-keys', token, { method: 'POST', body });
  expect(response.status, await response.clone().text()).toBe(201);
  return (await response.json()) as { id: string; key: string; label: string; expiresAt: string };
}

describe('the account', () => {
  it('shows the bearer their own account: name, roles, creation, sessions', async () => {
    const { access_token } = await login('alice', 'alice-password-1');
    const response = await call('/api/v1/account', access_token);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const account = (await response.json()) as Record<string, unknown>;
    expect(account).toMatchObject({ username: 'alice', roles: ['reader', 'admin'], createdAt: expect.any(String) });
    expect(account.sessions).toBeGreaterThanOrEqual(1);
  });

  it('asks for a bearer token like every other endpoint', async () => {
    const response = await fetch(`${gw.url}/api/v1/account`);
    expectDiagnoses(response.status, await response.text(), 401, /no bearer token/);
  });
});

describe('API keys', () => {
  it('creates a key shown once, lists it without secret or digest, and the key logs in', async () => {
    const { access_token } = await login('alice', 'alice-password-1');
    const created = await createKey(access_token, { label: 'nightly export', expiresInDays: 30 });
    expect(created.key).toMatch(/^ghk_[0-9a-f]{16}_/);
    expect(Date.parse(created.expiresAt) - Date.now()).toBeGreaterThan(29 * 86_400_000);

    await login('alice', created.key);
    const listing = await (await call('/api/v1/account/api-keys', access_token)).text();
    expect(listing).not.toContain(created.key.slice(-43));
    expect(listing).not.toMatch(/"hash"/);
    const { apiKeys } = JSON.parse(listing) as { apiKeys: Array<Record<string, unknown>> };
    expect(apiKeys.find((key) => key.id === created.id)).toMatchObject({ label: 'nightly export', managedBy: 'user', lastUsedAt: expect.any(String) });
    // The in-memory store keeps them in the users file, as the CLI's.
    const file = parseUsersFile(await readFile(gw.usersFile, 'utf8'), gw.usersFile);
    expect(file.users.alice!.apiKeys.find((key) => key.id === created.id)).toMatchObject({ label: 'nightly export' });
  });

  it('refuses to make a key from a session opened with an API key (a leaked key must not breed)', async () => {
    const { access_token } = await login('alice', gw.apiKeys.alice![0]!);
    const response = await call('/api/v1/account/api-keys', access_token, { method: 'POST', body: { label: 'from a key' } });
    expectDiagnoses(response.status, await response.text(), 403, /cannot create keys: log in with your password/);
  });

  it('refuses to make a key from a password login older than five minutes, and says to log in again', async () => {
    const { refresh_token } = await login('bob', 'bob-password-1');
    vi.useFakeTimers({ toFake: ['Date'] });
    vi.setSystemTime(Date.now() + 301_000);
    // The refresh token is a bearer too (spec 5.9), and still valid: only the login is too old.
    const response = await call('/api/v1/account/api-keys', refresh_token, { method: 'POST', body: { label: 'late' } });
    const body = await response.text();
    expectDiagnoses(response.status, body, 403, /log in again/);
    expect(JSON.parse(body).$diagnoses[0].$message).toBe('Please log in again with your password to do this.');
  });

  it('checks every field: label, expiry bounds, roles the user has, no unknown fields', async () => {
    const { access_token } = await login('alice', 'alice-password-1');
    const refused: Array<[unknown, RegExp]> = [
      [{}, /label/],
      [{ label: '' }, /label/],
      [{ label: 'x'.repeat(65) }, /label/],
      [{ label: 'bell\u0007' }, /label/],
      [{ label: 'k', expiresInDays: 0 }, /expiresInDays/],
      [{ label: 'k', expiresInDays: 366 }, /expiresInDays/],
      [{ label: 'k', expiresInDays: 1.5 }, /expiresInDays/],
      [{ label: 'k', readOnly: true }, /additional properties|readOnly/],
      [{ label: 'k', scope: { roles: ['root'] } }, /you lack root/],
      [{ label: 'k', scope: { roles: ['has space'] } }, /roles/],
      ['{"label": "k", "label": "k"}', /more than once/],
      ['not json', /not valid JSON/],
    ];
    for (const [body, detail] of refused) {
      const response = await call('/api/v1/account/api-keys', access_token, { method: 'POST', body });
      expectDiagnoses(response.status, await response.text(), 400, detail);
    }
  });

  it('holds a user to the most keys they may have (their operator-listed ones count)', async () => {
    const { access_token } = await login('alice', 'alice-password-1');
    const { apiKeys } = (await (await call('/api/v1/account/api-keys', access_token)).json()) as { apiKeys: unknown[] };
    for (let held = apiKeys.length; held < 4; held++) await createKey(access_token, { label: `key ${held}` });
    const response = await call('/api/v1/account/api-keys', access_token, { method: 'POST', body: { label: 'one too many' } });
    expectDiagnoses(response.status, await response.text(), 409, /at most 4 API keys/);
  });

  it("narrows a scoped key's tokens to its roles, read-only, and a refresh keeps them so", async () => {
    const { access_token: bobs } = await login('bob', 'bob-password-1');
    const created = await createKey(bobs, { label: 'reader', scope: { roles: [], readOnly: true } });
    const tokens = await login('bob', created.key);
    expect(decodeJwt(tokens.access_token)).toMatchObject({ roles: [], ro: true });
    const refreshed = (await (await postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: tokens.refresh_token })).json()) as TokenSet;
    expect(decodeJwt(refreshed.access_token)).toMatchObject({ roles: [], ro: true });
    // No token of the key outlives it.
    expect(decodeJwt(tokens.refresh_token).exp! * 1000).toBeLessThanOrEqual(Date.parse(created.expiresAt));
  });

  it('revokes a key: logins with it stop, and so do the sessions it opened, at once', async () => {
    const { access_token } = await login('bob', 'bob-password-1');
    const created = await createKey(access_token, { label: 'to revoke' });
    const opened = await login('bob', created.key);
    expect((await call('/api/v1/account', opened.access_token)).status).toBe(200);

    expect((await call(`/api/v1/account/api-keys/${created.id}`, access_token, { method: 'DELETE' })).status).toBe(204);
    const again = await postJson(`${gw.url}/api/v1/auth/login`, { username: 'bob', password: created.key });
    expectDiagnoses(again.status, await again.text(), 401, /invalid user credentials/);
    expect((await call('/api/v1/account', opened.access_token)).status).toBe(401);
    expect((await call(`/api/v1/account/api-keys/${created.id}`, access_token, { method: 'DELETE' })).status).toBe(404);
  });

  it("never shows or touches another user's key: 404, as for a key that does not exist", async () => {
    const { access_token: alices } = await login('alice', 'alice-password-1');
    const { access_token: bobs } = await login('bob', 'bob-password-1');
    const { apiKeys } = (await (await call('/api/v1/account/api-keys', alices)).json()) as { apiKeys: Array<{ id: string }> };
    for (const id of [apiKeys[0]!.id, '0000000000000000', 'not-a-key-id', '..%2F..%2Fetc']) {
      const response = await call(`/api/v1/account/api-keys/${id}`, bobs, { method: 'DELETE' });
      expectDiagnoses(response.status, await response.text(), 404, /unknown API key/);
    }
    const bobsKeys = (await (await call('/api/v1/account/api-keys', bobs)).json()) as { apiKeys: Array<{ id: string }> };
    expect(bobsKeys.apiKeys.map((key) => key.id)).not.toContain(apiKeys[0]!.id);
    await login('alice', gw.apiKeys.alice![0]!);
  });
});

describe('sessions', () => {
  it("lists the user's sessions with the current one marked, and ends one of them", async () => {
    const first = await login('bob', 'bob-password-1');
    const second = await login('bob', 'bob-password-1');
    const { sessions } = (await (await call('/api/v1/account/sessions', second.access_token)).json()) as {
      sessions: Array<{ id: string; current: boolean; method: string }>;
    };
    const current = sessions.filter((session) => session.current);
    expect(current).toHaveLength(1);
    const firstSid = decodeJwt(first.access_token).sid as string;
    expect(sessions.map((session) => session.id)).toContain(firstSid);

    expect((await call(`/api/v1/account/sessions/${firstSid}`, second.access_token, { method: 'DELETE' })).status).toBe(204);
    expect((await call('/api/v1/account', first.access_token)).status).toBe(401);
    expect((await call('/api/v1/account', second.access_token)).status).toBe(200);
  });

  it("never ends another user's session: 404", async () => {
    const alice = await login('alice', 'alice-password-1');
    const bob = await login('bob', 'bob-password-1');
    const response = await call(`/api/v1/account/sessions/${decodeJwt(alice.access_token).sid as string}`, bob.access_token, { method: 'DELETE' });
    expectDiagnoses(response.status, await response.text(), 404, /unknown session/);
    expect((await call('/api/v1/account', alice.access_token)).status).toBe(200);
  });

  it("signs out everywhere: every session of the user ends, this one included, and no one else's", async () => {
    const alice = await login('alice', 'alice-password-1');
    const bob = [await login('bob', 'bob-password-1'), await login('bob', 'bob-password-1')];
    expect((await call('/api/v1/account/sessions', bob[0]!.access_token, { method: 'DELETE' })).status).toBe(204);
    for (const tokens of bob) expect((await call('/api/v1/account', tokens.refresh_token)).status).toBe(401);
    expect((await call('/api/v1/account', alice.access_token)).status).toBe(200);
  });
});

describe('turned off', () => {
  it('answers neither the API nor the page when account.enabled is false', async () => {
    const off = await startTestGateway({ config: { account: { enabled: false } } });
    try {
      const { access_token } = (await (await postJson(`${off.url}/api/v1/auth/login`, { username: 'alice', password: 'alice-password-1' })).json()) as TokenSet;
      expect((await fetch(`${off.url}/api/v1/account`, { headers: { authorization: `Bearer ${access_token}` } })).status).toBe(404);
      expect((await fetch(`${off.url}/account`)).status).toBe(404);
    } finally {
      await off.close();
    }
  });
});
