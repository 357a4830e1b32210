// The config of several identity providers: a whole config loads through the
// real loader (files relative to the config file), every mistake is a problem
// with its field path (exit 78 from check-config), and the single-provider
// configs of before load as they did.
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config-load/load.js';
import { productionFindings } from '../../src/config-load/production-checks.js';
import { runGatehouse } from '../helpers/cli.js';
import { configProblems } from '../helpers/config-problems.js';

let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-providers-config-'));
});

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

const staff = { name: 'staff', type: 'oidc', issuer: 'https://login.example.com/realms/staff', clientId: 'gatehouse', clientSecret: 'staff-secret' };
const customer = { name: 'customer', type: 'oidc', issuer: 'https://idp.customer.example', clientId: 'gh', clientSecret: 'customer-secret' };
const local = { name: 'break-glass', type: 'local', usersFile: './users.yaml' };

function several(providers: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { identity: { provider: 'several', providers, ...extra }, tokens: { keysFile: './keys.json' } };
}

const parse = (raw: unknown, env: NodeJS.ProcessEnv = {}) => parseConfig(raw, { baseDir: dir, env });
// One `openssl rand -base64 32` each, as they came out.
const STRONG = ['moKictOf3AZPNVTZ7398+cEn/T+XuI0JCSz+O5hVXB0=', 'Q2vN9xKp4LrT7wYb1ZcH6fJm3DsUe8GaVi0oWkRy5nE='];

describe('identity.provider: several', () => {
  it('loads a list of named providers, each with its own settings and defaults; files are relative to the config file', () => {
    const config = parse(several([local, staff, { ...customer, claims: { roles: 'groups' }, introspectionIntervalS: 30, timeoutMs: 2000 }]));
    if (config.identity.provider !== 'several') throw new Error('not several');
    const [first, second, third] = config.identity.providers;
    expect(first).toMatchObject({ name: 'break-glass', type: 'local', usersFile: join(dir, 'users.yaml'), usersIn: 'file' });
    expect(second).toMatchObject({
      name: 'staff',
      type: 'oidc',
      clientAuth: 'client_secret_basic',
      claims: { username: 'preferred_username', roles: 'roles' },
    });
    expect(third).toMatchObject({ claims: { roles: 'groups' }, introspectionIntervalS: 30, timeoutMs: 2000 });
  });

  it('needs no local provider, and then no keys file', () => {
    const config = parse({ identity: { provider: 'several', providers: [staff, customer] } });
    expect(config.tokens.keysFile).toBeUndefined();
  });

  it.each([
    ['a name used twice', [staff, { ...customer, name: 'staff' }], {}, 'identity.providers[1].name: the name staff is used twice'],
    ['two local providers', [local, { ...local, name: 'other' }], {}, 'identity.providers[1].type: at most one provider is local'],
    [
      'an issuer used twice',
      [staff, { ...customer, issuer: `${staff.issuer}/` }],
      {},
      `identity.providers[1].issuer: the issuer ${staff.issuer}/ is used twice`,
    ],
    ['a default naming nobody', [staff], { defaultProvider: 'nobody' }, 'identity.defaultProvider: names no provider (staff)'],
    [
      'a provider without its secret',
      [local, { ...staff, clientSecret: undefined }],
      {},
      'identity.providers[1].clientSecret: client_secret_basic needs the client secret (or env GATEHOUSE_PROVIDER_STAFF_CLIENT_SECRET)',
    ],
  ])('refuses %s, with the field path', (_what, providers, extra, problem) => {
    expect(configProblems(() => parse(several(providers, extra)))).toContain(problem);
  });

  it("refuses a provider claiming Gatehouse's own issuer (an issuer mix-up by config)", () => {
    const raw = {
      ...several([local, { ...staff, issuer: 'https://gatehouse.example.com' }]),
      tokens: { keysFile: './k.json', issuer: 'https://gatehouse.example.com' },
    };
    expect(configProblems(() => parse(raw))).toContain("identity.providers[1].issuer: is Gatehouse's own issuer (tokens.issuer)");
  });

  it('refuses a bad provider name, and a route trusting a provider that is not configured', () => {
    const raw = {
      ...several([local, { ...staff, name: 'Staff Realm' }]),
      routes: [{ name: 'r', prefix: '/r', upstreams: ['http://127.0.0.1:1'], providers: ['staf'] }],
    };
    const problems = configProblems(() => parse(raw));
    expect(problems).toContainEqual(expect.stringMatching(/^identity\.providers\[1\]\.name: a provider name is lower-case letters/));
    expect(problems).toContain('routes[0].providers[0]: names no provider (break-glass, Staff Realm)');
  });

  it('a local provider among several needs the keys file, as local mode does', () => {
    expect(configProblems(() => parse({ identity: { provider: 'several', providers: [local, staff] } }))).toContainEqual(
      expect.stringMatching(/^tokens\.keysFile is required/),
    );
  });

  it("refuses a route's providers with one provider: there is nothing to choose", () => {
    const raw = {
      identity: { provider: 'oidc', ...staff, name: undefined, type: undefined },
      routes: [{ name: 'r', prefix: '/r', upstreams: ['http://127.0.0.1:1'], providers: ['staff'] }],
    };
    expect(configProblems(() => parse(JSON.parse(JSON.stringify(raw))))).toContain(
      'routes[0].providers[0]: needs several providers (identity.provider: several)',
    );
  });

  it('check-config exits 78 naming the field', async () => {
    const file = join(dir, 'several.yaml');
    await writeFile(file, stringify(several([local, staff, { ...customer, name: 'staff' }])));
    const result = await runGatehouse(['check-config', '--config', file]);
    expect(result.code).toBe(78);
    expect(result.stderr).toContain('identity.providers[2].name: the name staff is used twice');
  });
});

describe('the production checks and secrets, per provider', () => {
  const findingsOf = async (raw: unknown, env: NodeJS.ProcessEnv = {}) =>
    productionFindings({ config: parse(raw, env), file: join(dir, 'etc', 'gatehouse.yaml') });

  it("judges each OpenID Provider's client secret as the single provider's, named by its entry, never quoting it", async () => {
    const lines = await findingsOf(several([local, { ...staff, clientSecret: STRONG[0] }, { ...customer, clientSecret: 'changeme' }]));
    const secretLines = lines.filter((line) => line.includes('[weak-client-secret]'));
    expect(secretLines).toEqual([
      'identity.providers[2].clientSecret: is a placeholder ("changeme"), not a secret [weak-client-secret]; ' +
        'fix: have the OpenID Provider issue a new random secret for this client, and set it in GATEHOUSE_PROVIDER_CUSTOMER_CLIENT_SECRET',
    ]);
    const guessable = await findingsOf(several([{ ...staff, clientSecret: '0123456789abcdef' }]));
    expect(guessable).toContainEqual(expect.stringMatching(/^identity\.providers\[0\]\.clientSecret: is too easy to guess .*\[weak-client-secret\]/));
    expect(guessable.join('\n')).not.toContain('0123456789abcdef');
  });

  it("finds a provider's plain-http issuer, by its entry, and not a loopback one", async () => {
    const lines = await findingsOf(
      several([
        { ...staff, issuer: 'http://sso.example.com/realms/staff', clientSecret: STRONG[0] },
        { ...customer, issuer: 'http://127.0.0.1:8080/idp', clientSecret: STRONG[1] },
      ]),
    );
    expect(lines.filter((line) => line.includes('[http-provider-issuer]'))).toEqual([
      'identity.providers[0].issuer: http://sso.example.com/realms/staff is plain http: its keys, discovery and token answers can be changed on the way ' +
        '[http-provider-issuer]; fix: use the https:// issuer the OpenID Provider publishes',
    ]);
    const single = await findingsOf({ identity: { provider: 'oidc', issuer: 'http://sso.example.com', clientId: 'gatehouse', clientSecret: STRONG[0] } });
    expect(single).toContainEqual(expect.stringMatching(/^identity\.issuer: http:\/\/sso\.example\.com is plain http/));
  });

  it("finds the README's demo user in the local provider's users file, by its entry", async () => {
    await writeFile(join(dir, 'demo-users.yaml'), await readFile('config/users.yaml', 'utf8'));
    const lines = await findingsOf(
      several([
        { ...staff, clientSecret: STRONG[0] },
        { ...local, usersFile: './demo-users.yaml' },
      ]),
    );
    expect(lines).toContainEqual(expect.stringMatching(/^identity\.providers\[1\]\.usersFile: holds the demo user "demo" .*\[demo-user\]/));
  });

  it("takes each OpenID Provider's client secret from its own variable, as the single provider's from GATEHOUSE_OIDC_CLIENT_SECRET", () => {
    const env = { GATEHOUSE_PROVIDER_STAFF_CLIENT_SECRET: STRONG[0], GATEHOUSE_PROVIDER_BREAK_GLASS_CLIENT_SECRET: 'not-an-oidc-provider' };
    const config = parse(several([local, { ...staff, clientSecret: undefined }, customer]), env);
    if (config.identity.provider !== 'several') throw new Error('not several');
    expect(config.identity.providers.map((entry) => (entry.type === 'oidc' ? entry.clientSecret : entry.type))).toEqual([
      'local',
      STRONG[0],
      'customer-secret',
    ]);
  });

  it('names the variable an entry without its secret may take it from', () => {
    expect(configProblems(() => parse(several([{ ...customer, clientSecret: undefined }])))).toContain(
      'identity.providers[0].clientSecret: client_secret_basic needs the client secret (or env GATEHOUSE_PROVIDER_CUSTOMER_CLIENT_SECRET)',
    );
  });

  it('check-config --production exits 78 naming the entry whose secret is weak', async () => {
    const file = join(dir, 'several-production.yaml');
    await writeFile(file, stringify(several([{ ...staff, clientSecret: 'changeme' }])));
    const result = await runGatehouse(['check-config', '--production', '--config', file]);
    expect(result.code).toBe(78);
    expect(result.stderr).toContain('identity.providers[0].clientSecret: is a placeholder ("changeme"), not a secret [weak-client-secret]');
  });
});

describe('the single-provider configs of before', () => {
  it('load unchanged: local and oidc', () => {
    expect(parse({ identity: { provider: 'local', usersFile: './users.yaml' }, tokens: { keysFile: './keys.json' } }).identity.provider).toBe('local');
    const { name: _name, type: _type, ...oidc } = staff;
    expect(parse({ identity: { provider: 'oidc', ...oidc } }).identity).toMatchObject({ provider: 'oidc', issuer: staff.issuer });
  });
});
