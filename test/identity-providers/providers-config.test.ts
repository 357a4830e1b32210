// The config of several identity providers: a whole config loads through the
// real loader (files relative to the config file), every mistake is a problem
// with its field path (exit 78 from check-config), and the single-provider
// configs of before load as they did.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config-load/load.js';
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

const parse = (raw: unknown) => parseConfig(raw, { baseDir: dir, env: {} });

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
      'identity.providers[1].clientSecret: client_secret_basic needs the client secret',
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

describe('the single-provider configs of before', () => {
  it('load unchanged: local and oidc', () => {
    expect(parse({ identity: { provider: 'local', usersFile: './users.yaml' }, tokens: { keysFile: './keys.json' } }).identity.provider).toBe('local');
    const { name: _name, type: _type, ...oidc } = staff;
    expect(parse({ identity: { provider: 'oidc', ...oidc } }).identity).toMatchObject({ provider: 'oidc', issuer: staff.issuer });
  });
});
