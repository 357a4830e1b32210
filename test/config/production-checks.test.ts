// Each production check on its own: it finds what it is named for, with the
// setting and a fix, and stays silent on the production-shaped config.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config-load/load.js';
import {
  DEMO_USER,
  demoUserCheck,
  evictingRedisCheck,
  httpIssuerCheck,
  keysFileCheck,
  memoryStoreCheck,
  PRODUCTION_CHECKS,
  productionFindings,
  providerSecretCheck,
  serviceTokenCheck,
  type ProductionContext,
} from '../../src/config-load/production-checks.js';
import { writeTestUsers } from '../helpers/gateway.js';
import { startRedisServer } from '../helpers/redis-server.js';

// One `openssl rand -base64 32`, as it came out.
const SERVICE_TOKEN = 'moKictOf3AZPNVTZ7398+cEn/T+XuI0JCSz+O5hVXB0=';

type UsersYaml = { users: Record<string, { id: string; passwordHash: string; apiKeys: Array<{ hash: string }> }> };
const SHIPPED_USERS = readFileSync('config/users.yaml', 'utf8');

let dir: string;
let configFile: string;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-production-'));
  configFile = join(dir, 'etc', 'gatehouse.yaml');
  await writeTestUsers(join(dir, 'users.yaml'), [{ name: 'alice', password: 'alice-password-1' }]);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A production-shaped config (Redis, https issuer, keys and users outside the config folder, a service token), with changes per section. */
function context(changes: Record<string, Record<string, unknown>> = {}): ProductionContext {
  const base: Record<string, Record<string, unknown>> = {
    server: { host: '0.0.0.0', port: 8080, trustedProxies: ['10.0.0.0/8'] },
    store: { url: 'redis://redis:6379' },
    identity: { provider: 'local', usersFile: '../users.yaml' },
    tokens: { issuer: 'https://gatehouse.example.com', keysFile: '../data/keys.json' },
    requests: { serviceToken: SERVICE_TOKEN },
  };
  const raw = Object.fromEntries(
    Object.entries({ ...base, ...changes }).map(([key, value]) => [key, Array.isArray(value) ? value : { ...base[key], ...value }]),
  );
  // A field set to undefined is left out (JSON drops it).
  return { config: parseConfig(JSON.parse(JSON.stringify(raw)), { baseDir: join(dir, 'etc'), env: {} }), file: configFile };
}

/** A users file in the temp folder; the config names it from etc/. */
function usersFile(name: string, users: UsersYaml): Record<string, Record<string, unknown>> {
  writeFileSync(join(dir, name), stringify(users));
  return { identity: { usersFile: `../${name}` } };
}

describe('the production checks', () => {
  it('find nothing in a production-shaped config', async () => {
    expect(await productionFindings(context())).toEqual([]);
  });

  it('are each named once', () => {
    const names = PRODUCTION_CHECKS.map((check) => check.name);
    expect(new Set(names).size).toBe(names.length);
  });

  it('list every finding as one line: the setting, the problem, the check, the fix', async () => {
    const lines = await productionFindings(context({ store: { url: undefined }, tokens: { keysFile: './keys.json' } }));
    expect(lines).toEqual([
      expect.stringMatching(/^store\.url: not set: .* \[memory-store\]; fix: set store\.url \(or REDIS_URL\)/),
      expect.stringMatching(/^tokens\.keysFile: .* \[keys-file-in-config-folder\]; fix: put it on a data volume/),
    ]);
  });
});

describe('demo-user', () => {
  it('knows the demo user as config/users.yaml holds it', () => {
    const demo = (parse(SHIPPED_USERS) as UsersYaml).users[DEMO_USER.name]!;
    expect({ id: demo.id, passwordHash: demo.passwordHash, apiKeyHash: demo.apiKeys[0]!.hash }).toEqual({
      id: DEMO_USER.id,
      passwordHash: DEMO_USER.passwordHash,
      apiKeyHash: DEMO_USER.apiKeyHash,
    });
  });

  it('finds the demo user, also renamed', async () => {
    const shipped = parse(SHIPPED_USERS) as UsersYaml;
    expect(await demoUserCheck.run(context(usersFile('demo-users.yaml', shipped)))).toEqual([
      { setting: 'identity.usersFile', problem: expect.stringContaining('the demo user "demo"'), fix: expect.stringContaining('gatehouse users remove demo') },
    ]);
    const renamed: UsersYaml = { users: { admin: shipped.users.demo! } };
    expect(await demoUserCheck.run(context(usersFile('renamed.yaml', renamed)))).toEqual([
      expect.objectContaining({ problem: expect.stringContaining('the demo user "admin"') }),
    ]);
  });

  it("finds the demo API key kept under another user's name", async () => {
    const ours = parse(readFileSync(join(dir, 'users.yaml'), 'utf8')) as UsersYaml;
    ours.users.alice!.apiKeys.push((parse(SHIPPED_USERS) as UsersYaml).users.demo!.apiKeys[0]!);
    expect(await demoUserCheck.run(context(usersFile('with-demo-key.yaml', ours)))).toEqual([
      {
        setting: 'identity.usersFile',
        problem: expect.stringContaining('user "alice" holds the demo API key'),
        fix: expect.stringContaining('apikeys revoke'),
      },
    ]);
  });

  it('finds nothing in a users file of real users', async () => {
    expect(await demoUserCheck.run(context())).toEqual([]);
  });
});

describe('memory-store', () => {
  it('finds a config without store.url', async () => {
    expect(await memoryStoreCheck.run(context({ store: { url: undefined } }))).toEqual([expect.objectContaining({ setting: 'store.url' })]);
    expect(await memoryStoreCheck.run(context())).toEqual([]);
  });
});

describe('http-issuer', () => {
  it('finds an http issuer on a listener other hosts reach, not on loopback', async () => {
    expect(await httpIssuerCheck.run(context({ tokens: { issuer: 'http://gatehouse.example.com' } }))).toEqual([
      expect.objectContaining({ setting: 'tokens.issuer', problem: expect.stringContaining('server.host 0.0.0.0') }),
    ]);
    for (const host of ['127.0.0.1', '::1', 'localhost']) {
      expect(await httpIssuerCheck.run(context({ server: { host }, tokens: { issuer: 'http://localhost:8080' } })), host).toEqual([]);
    }
    expect(await httpIssuerCheck.run(context())).toEqual([]);
  });
});

describe('service-token', () => {
  it('finds a missing service token with Redis, and with a route that captures 202s', async () => {
    expect(await serviceTokenCheck.run(context({ requests: { serviceToken: undefined } }))).toEqual([
      expect.objectContaining({ setting: 'requests.serviceToken', fix: expect.stringContaining('openssl rand -base64 32') }),
    ]);
    const capturing = { routes: [{ prefix: '/orders', upstreams: ['http://orders:8080'] }] } as unknown as Record<string, Record<string, unknown>>;
    expect(await serviceTokenCheck.run(context({ store: { url: undefined }, requests: { serviceToken: undefined }, ...capturing }))).toHaveLength(1);
    expect(await serviceTokenCheck.run(context({ store: { url: undefined }, requests: { serviceToken: undefined } }))).toEqual([]);
  });
});

describe('weak-client-secret', () => {
  const oidc = (clientSecret: string) =>
    context({ identity: { provider: 'oidc', usersFile: undefined, issuer: 'https://login.example.com', clientId: 'gatehouse', clientSecret } });

  it("finds a fronted provider's client secret that is a placeholder or guessable, never quoting it", async () => {
    const findings = await providerSecretCheck.run(oidc('changeme'));
    expect(findings).toEqual([{ setting: 'identity.clientSecret', problem: 'is a placeholder ("changeme"), not a secret', fix: expect.any(String) }]);
    expect(await providerSecretCheck.run(oidc('0123456789'))).toEqual([expect.objectContaining({ problem: expect.stringMatching(/^is too easy to guess/) })]);
    expect(await providerSecretCheck.run(oidc(SERVICE_TOKEN))).toEqual([]);
  });
});

describe('keys-file-in-config-folder', () => {
  it('finds the keys file in the config folder or below it', async () => {
    for (const keysFile of ['./keys.json', './secrets/keys.json']) {
      expect(await keysFileCheck.run(context({ tokens: { keysFile } })), keysFile).toEqual([expect.objectContaining({ setting: 'tokens.keysFile' })]);
    }
    expect(await keysFileCheck.run(context({ tokens: { keysFile: '/var/lib/gatehouse/keys.json' } }))).toEqual([]);
    expect(await keysFileCheck.run(context())).toEqual([]);
  });
});

describe('evicting-redis', () => {
  it('finds a Redis master that evicts keys, naming its policy; not one with noeviction, nor one out of reach', { timeout: 30_000 }, async () => {
    const evicting = await startRedisServer({ args: ['--maxmemory-policy', 'allkeys-lru'] });
    const keeping = await startRedisServer({ args: ['--maxmemory-policy', 'noeviction'] });
    try {
      const found = await evictingRedisCheck.run(context({ store: { url: evicting.url } }));
      expect(found).toEqual([
        expect.objectContaining({
          setting: 'store.url',
          problem: expect.stringContaining('maxmemory-policy allkeys-lru'),
          fix: expect.stringContaining('noeviction'),
        }),
      ]);
      expect(await evictingRedisCheck.run(context({ store: { url: keeping.url } }))).toEqual([]);
    } finally {
      await Promise.all([evicting.close(), keeping.close()]);
    }
    expect(await evictingRedisCheck.run(context({ store: { url: evicting.url } }))).toEqual([]);
  });
});
