// A config that explains itself: every required field left out says what it
// is and gives an example (from the field's own metadata in the schema, so a
// new required field without one fails here); the issuer follows the listener
// unless set, with a warning when a set one names another port; oidc mode
// needs no keys file and creates none.
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { parseConfig, validateConfig } from '../../src/config-load/load.js';
import { hashPassword } from '../../src/users/passwords.js';
import { configSections } from '../../scripts/config-reference.js';
import { runGatehouse } from '../helpers/cli.js';
import { startTestGateway } from '../helpers/gateway.js';
import { startOpenIdProvider, TEST_CLIENT, TEST_RESOURCE, type TestOpenIdProvider } from '../helpers/openid-provider.js';
import { freePort } from '../helpers/ports.js';

const validate = (raw: unknown, env: NodeJS.ProcessEnv = {}) => validateConfig(raw, { baseDir: '/srv/gatehouse', env });

/** A config in which every optional parent of a required field is present, so each required field can be left out alone. */
function fullConfig(provider: 'local' | 'oidc' | 'several', secretHash: string): Record<string, unknown> {
  // A fresh object each time: structuredClone keeps shared references shared.
  const origins = () => ({ allowedOrigins: ['https://app.example.com'] });
  const oidc = { issuer: 'https://login.example.com', clientId: 'gatehouse', clientSecret: 'secret' };
  const identities = {
    local: { provider: 'local', usersFile: './users.yaml' },
    oidc: { provider: 'oidc', ...oidc },
    several: { provider: 'several', providers: [{ name: 'staff', type: 'oidc', ...oidc }] },
  };
  return {
    identity: identities[provider],
    tokens: { keysFile: './keys.json', clients: [{ id: 'orders', secretHash }] },
    server: { tls: { certFile: './tls.crt', keyFile: './tls.key', clientCertificates: { caFile: './clients-ca.crt' } } },
    cors: origins(),
    account: { passkeys: { origin: 'https://id.example.com' } },
    routes: [
      {
        prefix: '/orders',
        upstreams: ['http://127.0.0.1:3000'],
        rateLimit: { points: 10, durationS: 60 },
        quotas: [{ name: 'daily', by: 'subject', per: 'day', limit: 100, tiers: { claim: 'roles', limits: { pro: 1000 } } }],
        cors: origins(),
      },
    ],
  };
}

/** The base config of each identity variant of the reference. */
const VARIANTS: Record<string, 'oidc' | 'several' | undefined> = { 'provider: oidc': 'oidc', 'provider: several': 'several' };

/** `routes[].prefix` → ['routes', 0, 'prefix']. */
function pathOf(field: string): Array<string | number> {
  return field.split('.').flatMap((part) => (part.endsWith('[]') ? [part.slice(0, -2), 0] : [part]));
}

function without(config: Record<string, unknown>, path: ReadonlyArray<string | number>): Record<string, unknown> {
  const copy = structuredClone(config);
  let node = copy as Record<string | number, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string | number, unknown>;
  delete node[path.at(-1)!];
  return copy;
}

let secretHash: string;
beforeAll(async () => {
  secretHash = await hashPassword('client-secret-1');
});

describe('a required field left out', () => {
  it('says, for every required field of the schema, what the field is and an example value', () => {
    const sections = configSections();
    const required = sections.flatMap((section) => [
      ...section.rows.filter((row) => row.required).map((row) => ({ field: row.path, provider: 'local' as const })),
      ...section.variants.flatMap((variant) =>
        variant.rows.filter((row) => row.required).map((row) => ({ field: row.path, provider: VARIANTS[variant.name] ?? ('local' as const) })),
      ),
    ]);
    // The reference's required fields, so that a new one is judged here too.
    expect(required.map((r) => r.field)).toEqual(
      expect.arrayContaining(['identity.usersFile', 'identity.clientId', 'routes[].upstreams', 'cors.allowedOrigins']),
    );
    for (const { field, provider } of required) {
      const base = fullConfig(provider, secretHash);
      expect(validate(base).problems, `${provider} base config`).toEqual([]);
      const shown = field.replace(/\[\]/g, '[0]');
      const problems = validate(without(base, pathOf(field))).problems;
      expect(problems, field).toEqual([expect.stringMatching(new RegExp(`^${shown.replace(/[.[\]]/g, '\\$&')} is required: [^,]+.*, e\\.g\\. \\S+`))]);
    }
  });

  it('names the keys file a local config leaves out, in the same go as its other problems', () => {
    const problems = validate({ identity: { provider: 'local', usersFile: './users.yaml' }, server: { port: 'eighty' } }).problems;
    expect(problems).toEqual([
      expect.stringMatching(/^server\.port: /),
      'tokens.keysFile is required: where the signing keys live (created on first start; outside the config folder), e.g. ../data/keys.json',
    ]);
  });

  it('tells a config with no sections at all what its first section is, through check-config (exit 78)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'gatehouse-explained-'));
    try {
      await writeFile(join(dir, 'empty.yaml'), 'routes: []\n');
      const result = await runGatehouse(['check-config', '--config', join(dir, 'empty.yaml')]);
      expect(result.code).toBe(78);
      expect(result.stderr).toBe(
        `gatehouse: ${join(dir, 'empty.yaml')}: identity is required: who the users are, e.g. {provider: local, usersFile: ./users.yaml}\n`,
      );
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the issuer', () => {
  const local = { identity: { provider: 'local', usersFile: './users.yaml' }, tokens: { keysFile: './keys.json' } };

  it('follows the listener when unset: the file’s port, PORT, the host (localhost for a wildcard one)', () => {
    expect(validate(local).config!.tokens.issuer).toBe('http://localhost:8080');
    expect(validate({ ...local, server: { port: 9000 } }).config!.tokens.issuer).toBe('http://localhost:9000');
    expect(validate({ ...local, server: { port: 9000 } }, { PORT: '9100' }).config!.tokens.issuer).toBe('http://localhost:9100');
    expect(validate({ ...local, server: { host: '127.0.0.1', port: 9000 } }).config!.tokens.issuer).toBe('http://127.0.0.1:9000');
    expect(validate({ ...local, server: { host: '::1', port: 9000 } }).config!.tokens.issuer).toBe('http://[::1]:9000');
  });

  it('stays as set, from the file or GATEHOUSE_ISSUER', () => {
    const set = { ...local, tokens: { ...local.tokens, issuer: 'https://gw.example.com' }, server: { port: 9000 } };
    expect(validate(set).config!.tokens.issuer).toBe('https://gw.example.com');
    expect(validate({ ...local, server: { port: 9000 } }, { GATEHOUSE_ISSUER: 'https://id.example.com' }).config!.tokens.issuer).toBe('https://id.example.com');
  });

  it('is not blamed for a bad listener value: the port’s own problem is the one told', () => {
    expect(validate({ ...local, server: { port: 70_000 } }).problems).toEqual([expect.stringMatching(/^server\.port: /)]);
  });

  it('unset, discovery on a running gateway advertises the port it listens on', async () => {
    const { port, gw } = await onFreePort({ tokens: { issuer: undefined } });
    try {
      const discovery = (await (await fetch(`${gw.url}/.well-known/openid-configuration`)).json()) as { issuer: string };
      expect(discovery.issuer).toBe(`http://127.0.0.1:${port}`);
      expect(gw.logs.entries().filter((entry) => String(entry.msg).startsWith('tokens.issuer'))).toEqual([]);
    } finally {
      await gw.close();
    }
  });

  it('set to another port than the bound one, is warned about at start', async () => {
    const { port, gw } = await onFreePort({ tokens: { issuer: 'http://localhost:8080' } });
    try {
      expect(gw.logs.entries().filter((entry) => String(entry.msg).startsWith('tokens.issuer'))).toEqual([
        expect.objectContaining({
          level: 40,
          msg: `tokens.issuer http://localhost:8080 names port 8080, but the gateway listens on port ${port}: discovery and the tokens' iss point elsewhere (unset tokens.issuer to follow the listener)`,
        }),
      ]);
    } finally {
      await gw.close();
    }
  });
});

describe('oidc mode', () => {
  let op: TestOpenIdProvider;
  beforeAll(async () => {
    op = await startOpenIdProvider({ alice: { password: 'alice-password' } });
  });
  afterAll(() => op?.close());

  it('needs no tokens section', () => {
    const config = parseConfig(
      { identity: { provider: 'oidc', issuer: 'https://login.example.com', clientId: 'gatehouse', clientSecret: 'secret' } },
      { baseDir: '/srv', env: {} },
    );
    expect(config.tokens.keysFile).toBeUndefined();
  });

  it('reads no keys file and creates none, even one the config still names, and logs users in', async () => {
    const gw = await startTestGateway({
      config: { identity: { provider: 'oidc', issuer: op.issuer, ...TEST_CLIENT, audience: TEST_RESOURCE, scopes: ['openid', 'offline_access', 'api'] } },
    });
    try {
      await vi.waitFor(async () => expect((await fetch(`${gw.adminUrl}/readyz`)).status).toBe(200), { timeout: 10_000, interval: 50 });
      const login = await fetch(`${gw.url}/api/v1/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ username: 'alice', password: 'alice-password' }),
      });
      expect(login.status).toBe(200);
      expect(existsSync(join(gw.dir, 'keys.json'))).toBe(false);
    } finally {
      await gw.close();
    }
  });
});

/**
 * A gateway on a port chosen before it starts (the default issuer follows the configured port, so port 0 will
 * not do): another process may take a free port between the look and the bind, so a taken one is tried again.
 */
async function onFreePort(config: NonNullable<Parameters<typeof startTestGateway>[0]>['config']) {
  for (let attempt = 1; ; attempt += 1) {
    const port = await freePort();
    try {
      return { port, gw: await startTestGateway({ port, config }) };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EADDRINUSE' || attempt === 5) throw error;
    }
  }
}
