// Who may do what: per-route and per-method role rules, scopes, read-only and
// expiring API keys, and roles taken away taking effect at once. A refusal is
// 403 with `$diagnoses` (insufficient_scope) and the RFC 6750 challenge.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runApiKeysCommand } from '../../src/cli/apikeys.js';
import { runUsersCommand } from '../../src/cli/users.js';
import { validateConfig } from '../../src/config-load/load.js';
import { readUsersFile, writeUsersFile } from '../../src/users/users-file.js';
import { generateApiKey } from '../../src/users/api-keys.js';
import { runCommand } from '../helpers/cli.js';
import { jwtPayload, login, postJson, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

let upstream: Upstream;
let gw: TestGateway;

const ROUTES = [
  {
    name: 'orders',
    prefix: '/orders',
    upstreams: [] as string[],
    authorize: { anyRole: ['reader'], methods: { POST: { anyRole: ['writer'] }, DELETE: { allRoles: ['writer', 'admin'] } } },
  },
  { name: 'reports', prefix: '/reports', upstreams: [] as string[], authorize: { scopes: ['reports:read'] } },
  { name: 'open', prefix: '/open', upstreams: [] as string[] },
];

beforeAll(async () => {
  upstream = await startUpstream();
  for (const route of ROUTES) route.upstreams = [upstream.url];
  gw = await startTestGateway({
    users: [
      { name: 'alice', password: 'alice-password-1', roles: ['reader'] },
      { name: 'bob', password: 'bob-password-1', roles: ['reader', 'writer'] },
    ],
    config: { authorization: { roles: ['reader', 'writer', 'admin'], scopes: ['reports:read', 'reports:write'] }, routes: ROUTES },
  });
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

async function call(method: string, path: string, token: string): Promise<Response> {
  const response = await fetch(`${gw.url}${path}`, { method, headers: { authorization: `Bearer ${token}` }, ...(method === 'POST' && { body: '{}' }) });
  return response;
}

async function expectForbidden(response: Response): Promise<void> {
  expect(response.status).toBe(403);
  expect(response.headers.get('www-authenticate')).toMatch(/^Bearer realm="gatehouse", error="insufficient_scope"/);
  const body = (await response.json()) as { $diagnoses: Array<{ $detail: string }> };
  expect(body.$diagnoses[0]!.$detail).toMatch(/^403 \(Forbidden\) - insufficient_scope: /);
}

/** Changes the users file and waits until the gateway has read it. */
async function changeUsers(args: string[], command = runUsersCommand): Promise<string> {
  const reloaded = new Promise<void>((resolve) => {
    const stop = gw.gateway.identity.onChange(() => {
      stop();
      resolve();
    });
  });
  const result = await runCommand(command, args, gw.usersFile);
  expect(result.code, result.stderr).toBe(0);
  await reloaded;
  return result.stdout.trim();
}

describe('role rules per route and method', () => {
  it('lets a reader read and refuses her a write; a writer writes; DELETE needs writer and admin', async () => {
    const alice = await login(gw.url, 'alice', 'alice-password-1');
    const bob = await login(gw.url, 'bob', 'bob-password-1');
    expect(jwtPayload(alice.access_token).roles).toEqual(['reader']);
    expect((await call('GET', '/orders/1', alice.access_token)).status).toBe(200);
    expect((await call('HEAD', '/orders/1', alice.access_token)).status).toBe(200);
    await expectForbidden(await call('POST', '/orders', alice.access_token));
    expect((await call('POST', '/orders', bob.access_token)).status).toBe(200);
    await expectForbidden(await call('DELETE', '/orders/1', bob.access_token));
    // A route without rules takes any logged-in user.
    expect((await call('PUT', '/open/x', alice.access_token)).status).toBe(200);
    // Nothing refused reached the upstream.
    expect(upstream.seen.filter((r) => r.method === 'DELETE')).toEqual([]);
  });

  it('stops a role taken away at once, with the same token; a role given reaches the next refresh', async () => {
    const bob = await login(gw.url, 'bob', 'bob-password-1');
    expect((await call('POST', '/orders', bob.access_token)).status).toBe(200);
    expect(await changeUsers(['roles', 'bob', 'remove', 'writer'])).toBe('took the role writer from bob');
    await expectForbidden(await call('POST', '/orders', bob.access_token));

    await changeUsers(['roles', 'bob', 'add', 'writer']);
    await changeUsers(['roles', 'bob', 'add', 'admin']);
    // The token was signed before admin was given: not yet.
    await expectForbidden(await call('DELETE', '/orders/1', bob.access_token));
    const refreshed = (await (await postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: bob.refresh_token })).json()) as TokenSetBody;
    expect(jwtPayload(refreshed.access_token).roles).toEqual(['admin', 'reader', 'writer']);
    expect((await call('DELETE', '/orders/1', refreshed.access_token)).status).toBe(200);
  });
});

describe('scoped API keys', () => {
  it('a read-only key with one role yields tokens limited the same way', async () => {
    const key = await changeUsers(['create', 'bob', '--label', 'dashboard', '--role', 'reader', '--read-only'], runApiKeysCommand);
    const tokens = await login(gw.url, 'bob', key);
    expect(jwtPayload(tokens.access_token)).toMatchObject({ roles: ['reader'], ro: true });
    expect((await call('GET', '/orders/1', tokens.access_token)).status).toBe(200);
    // Refused by the key's narrowing on every route, rules or none.
    await expectForbidden(await call('POST', '/orders', tokens.access_token));
    await expectForbidden(await call('PUT', '/open/x', tokens.access_token));
  });

  it('a key with scopes passes only rules asking for those scopes; a password login holds every scope', async () => {
    const writeOnly = await changeUsers(['create', 'bob', '--scope', 'reports:write'], runApiKeysCommand);
    const reading = await changeUsers(['create', 'bob', '--scope', 'reports:read'], runApiKeysCommand);
    const writeTokens = await login(gw.url, 'bob', writeOnly);
    expect(jwtPayload(writeTokens.access_token).scope).toBe('reports:write');
    const refused = await call('GET', '/reports/daily', writeTokens.access_token);
    expect(refused.headers.get('www-authenticate')).toContain('scope="reports:read"');
    await expectForbidden(refused);
    expect((await call('GET', '/reports/daily', (await login(gw.url, 'bob', reading)).access_token)).status).toBe(200);
    expect((await call('GET', '/reports/daily', (await login(gw.url, 'alice', 'alice-password-1')).access_token)).status).toBe(200);
  });

  it('refuses a key past its expiry at login, and a key for roles its user lacks at creation', async () => {
    const data = await readUsersFile(gw.usersFile);
    const { key, keyId, hash } = generateApiKey();
    data.users.alice!.apiKeys.push({ id: keyId, hash, createdAt: new Date().toISOString(), scope: { expiresAt: new Date(Date.now() - 1000).toISOString() } });
    const reloaded = new Promise<void>((resolve) => {
      const stop = gw.gateway.identity.onChange(() => {
        stop();
        resolve();
      });
    });
    await writeUsersFile(gw.usersFile, data);
    await reloaded;
    expect((await postJson(`${gw.url}/api/v1/auth/login`, { username: 'alice', password: key })).status).toBe(401);

    const refused = await runCommand(runApiKeysCommand, ['create', 'alice', '--role', 'admin'], gw.usersFile);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('alice lacks admin');
  });
});

describe('rules checked at load', () => {
  it('refuses a rule naming an undeclared role or scope, and a rule on a public route', () => {
    const { problems } = validateConfig(
      {
        identity: { provider: 'local', usersFile: 'users.yaml' },
        tokens: { keysFile: 'keys.json' },
        authorization: { roles: ['reader'] },
        routes: [
          { prefix: '/a', upstreams: ['http://127.0.0.1:1'], authorize: { anyRole: ['reader', 'raeder'], methods: { POST: { scopes: ['a:write'] } } } },
          { prefix: '/b', upstreams: ['http://127.0.0.1:1'], auth: 'none', authorize: { anyRole: ['reader'] } },
        ],
      },
      { baseDir: '/tmp', env: {} },
    );
    expect(problems).toEqual([
      'routes[0].authorize.anyRole[1]: unknown role "raeder": declare it in authorization.roles',
      'routes[0].authorize.methods.POST.scopes[0]: unknown scope "a:write": declare it in authorization.scopes',
      'routes[1].authorize: a public route (auth: none) cannot have rules: nobody is known there',
    ]);
  });
});
