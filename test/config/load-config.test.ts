// One schema, validated once: defaults, environment overrides, and one error
// that lists every problem by its field path.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG_FILE, loadConfig, parseConfig } from '../../src/config-load/load.js';
import { configProblems } from '../helpers/config-problems.js';

const MINIMAL = {
  identity: { provider: 'local', usersFile: 'users.yaml' },
  tokens: { keysFile: 'keys.json' },
};

const problemsOf = configProblems;

describe('parseConfig', () => {
  it('fills the documented defaults', () => {
    const config = parseConfig(MINIMAL, { baseDir: '/etc/gatehouse' });
    expect(config.server).toMatchObject({ host: '0.0.0.0', port: 8080 });
    expect(config.admin).toMatchObject({ enabled: true, host: '127.0.0.1', port: 9090 });
    expect(config.tokens).toMatchObject({ accessTokenTtlS: 60, refreshTokenTtlS: 86400, algorithm: 'EdDSA', audience: 'gatehouse' });
    expect(config.store.url).toBeUndefined();
    expect(config.routes).toEqual([]);
  });

  it('resolves relative file paths against the config folder', () => {
    const config = parseConfig(MINIMAL, { baseDir: '/etc/gatehouse' });
    expect((config.identity as { usersFile: string }).usersFile).toBe('/etc/gatehouse/users.yaml');
    expect(config.tokens.keysFile).toBe('/etc/gatehouse/keys.json');
  });

  it('freezes the result', () => {
    const config = parseConfig(MINIMAL, { baseDir: '/' });
    expect(Object.isFrozen(config.tokens)).toBe(true);
    expect(() => {
      (config.server as { port: number }).port = 1;
    }).toThrow();
  });

  it('lets the environment override what differs per deployment', () => {
    const config = parseConfig(MINIMAL, {
      baseDir: '/',
      env: { PORT: '9000', ADMIN_PORT: '9001', REDIS_URL: 'redis://cache:6379', GATEHOUSE_ISSUER: 'https://id.example.com', LOG_LEVEL: 'warn' },
    });
    expect(config.server.port).toBe(9000);
    expect(config.admin.port).toBe(9001);
    expect(config.store.url).toBe('redis://cache:6379');
    expect(config.tokens.issuer).toBe('https://id.example.com');
    expect(config.log.level).toBe('warn');
  });

  it('reports every problem at once, each with its field path', () => {
    const problems = problemsOf(() =>
      parseConfig(
        {
          server: { port: 70000, hostt: 'x' },
          store: { url: 'http://not-redis' },
          identity: { provider: 'ldap' },
          tokens: { keysFile: 'k', accessTokenTtlS: -1, algorithm: 'HS256' },
          routes: [{ prefix: 'no-slash', upstreams: [] }],
        },
        { baseDir: '/' },
      ),
    );
    const paths = problems.map((p) => p.split(':')[0]);
    expect(paths).toEqual(
      expect.arrayContaining([
        'server.port',
        'server',
        'store.url',
        'identity.provider',
        'tokens.accessTokenTtlS',
        'tokens.algorithm',
        'routes[0].prefix',
        'routes[0].upstreams',
      ]),
    );
    expect(problems.find((p) => p.startsWith('server:'))).toMatch(/hostt/);
  });

  it('names the environment variable a bad value came from', () => {
    const problems = problemsOf(() => parseConfig(MINIMAL, { baseDir: '/', env: { PORT: 'eighty' } }));
    expect(problems).toEqual([expect.stringMatching(/^server\.port \(from PORT\): /)]);
  });

  it('takes a fronted OpenID Provider with its defaults, and its client secret from the environment', () => {
    const identity = { provider: 'oidc', issuer: 'https://sso.example.com/realms/platform', clientId: 'gatehouse' };
    const config = parseConfig({ ...MINIMAL, identity }, { baseDir: '/', env: { GATEHOUSE_OIDC_CLIENT_SECRET: 's3cret' } });
    expect(config.identity).toMatchObject({
      provider: 'oidc',
      clientSecret: 's3cret',
      clientAuth: 'client_secret_basic',
      scopes: ['openid'],
      claims: { username: 'preferred_username', roles: 'roles', groups: 'groups', session: 'sid' },
      introspectionIntervalS: 60,
      keySetRefetchCooldownS: 30,
    });
  });

  it('names every field an oidc identity gets wrong: a users file it has no use for, a missing secret, an issuer that is no URL', () => {
    const identity = { provider: 'oidc', issuer: 'sso.example.com', clientId: 'gatehouse', usersFile: 'users.yaml' };
    const problems = problemsOf(() => parseConfig({ ...MINIMAL, identity }, { baseDir: '/', env: {} }));
    expect(problems).toEqual(
      expect.arrayContaining([
        expect.stringMatching(/^identity\.issuer: /),
        expect.stringMatching(/^identity\.clientSecret: /),
        expect.stringMatching(/^identity.*usersFile/),
      ]),
    );
  });

  it('refuses more than one worker without a shared store', () => {
    expect(problemsOf(() => parseConfig({ ...MINIMAL, server: { workers: 2 } }, { baseDir: '/' }))).toEqual([
      expect.stringMatching(/^server\.workers: more than one worker needs store\.url/),
    ]);
    const config = parseConfig({ ...MINIMAL, server: { workers: 'auto' }, store: { url: 'redis://cache:6379' } }, { baseDir: '/', env: { WORKERS: '4' } });
    expect(config.server.workers).toBe(4);
  });

  it('refuses users held in the store without a shared store, and keeps them in the users file by default', () => {
    const identity = { provider: 'local', usersFile: 'users.yaml', usersIn: 'store' };
    expect(problemsOf(() => parseConfig({ ...MINIMAL, identity }, { baseDir: '/' }))).toEqual([
      expect.stringMatching(/^identity\.usersIn: store needs store\.url/),
    ]);
    const config = parseConfig({ ...MINIMAL, identity, store: { url: 'redis://cache:6379' } }, { baseDir: '/', env: {} });
    expect(config.identity).toMatchObject({ usersIn: 'store' });
    expect(parseConfig(MINIMAL, { baseDir: '/', env: {} }).identity).toMatchObject({ usersIn: 'file' });
  });

  it('refuses a top level that is not a mapping', () => {
    expect(problemsOf(() => parseConfig(['a'], { baseDir: '/' }))[0]).toMatch(/^\(top level\): must be a mapping/);
  });
});

describe('loadConfig', () => {
  const dir = mkdtempSync(join(tmpdir(), 'gatehouse-config-'));

  it('loads the embedded default', () => {
    const config = loadConfig({ env: {} });
    expect(config.identity.provider).toBe('local');
    expect(config.store.url).toBeUndefined();
    expect(DEFAULT_CONFIG_FILE).toMatch(/config\/gatehouse\.yaml$/);
  });

  it('takes the file from GATEHOUSE_CONFIG', () => {
    const file = join(dir, 'env.yaml');
    writeFileSync(file, 'identity: {provider: local, usersFile: u.yaml}\ntokens: {keysFile: k.json}\nserver: {port: 1234}\n');
    expect(loadConfig({ env: { GATEHOUSE_CONFIG: file } }).server.port).toBe(1234);
  });

  it('reports YAML syntax errors and duplicate keys', () => {
    const file = join(dir, 'broken.yaml');
    writeFileSync(file, 'server:\n  port: 1\n  port: 2\n');
    expect(problemsOf(() => loadConfig({ file, env: {} }))[0]).toMatch(/^YAML: /);
  });

  it('reports a missing file', () => {
    expect(problemsOf(() => loadConfig({ file: join(dir, 'nope.yaml'), env: {} }))[0]).toMatch(/cannot read the file: ENOENT/);
  });
});
