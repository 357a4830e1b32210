// The environment checks: the files a config names are looked at before
// anything is written, and their problems come with the schema's, each with
// its field path. Only the embedded default may start without its users file
// or keys folder.
import { generateKeyPairSync } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { loadCheckedConfig } from '../../src/config-load/check.js';
import { checkEnvironment } from '../../src/config-load/environment.js';
import { DEFAULT_CONFIG_FILE } from '../../src/config-load/load.js';
import { configProblems } from '../helpers/config-problems.js';
import { writeTestUsers } from '../helpers/gateway.js';

let dir: string;

beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'gatehouse-env-check-'));
  await writeTestUsers(join(dir, 'users.yaml'), [{ name: 'alice', password: 'alice-password-1' }]);
});

function configFile(lines: string[]): string {
  const file = join(dir, 'gatehouse.yaml');
  writeFileSync(file, `${lines.join('\n')}\n`);
  return file;
}

const VALID = ['identity: {provider: local, usersFile: ./users.yaml}', 'tokens: {keysFile: ./keys.json}'];

const problemsOf = (options: Parameters<typeof loadCheckedConfig>[0]) => configProblems(() => loadCheckedConfig(options));

describe('a config whose files are in place', () => {
  it('passes, and the check creates nothing', () => {
    const file = configFile(VALID);
    const before = readdirSync(dir).sort();
    const checked = loadCheckedConfig({ file, env: {} });
    expect(checked.file).toBe(file);
    expect(checked.config.tokens.keysFile).toBe(join(dir, 'keys.json'));
    expect(readdirSync(dir).sort()).toEqual(before);
  });

  it('passes with an existing keys file', () => {
    writeFileSync(join(dir, 'keys.json'), '{}');
    expect((loadCheckedConfig({ file: configFile(VALID), env: {} }).config.identity as { usersFile: string }).usersFile).toBe(join(dir, 'users.yaml'));
  });
});

describe('the users file', () => {
  it('need not exist with usersIn: store (it only seeds a store never seeded), and must parse when it does', () => {
    const store = 'store: {url: "redis://127.0.0.1:1"}';
    const seed = ['identity: {provider: local, usersFile: ./seed.yaml, usersIn: store}', 'tokens: {keysFile: ./keys.json}', store];
    expect(loadCheckedConfig({ file: configFile(seed), env: {} }).config.identity).toMatchObject({ usersIn: 'store', usersFile: join(dir, 'seed.yaml') });
    writeFileSync(join(dir, 'seed.yaml'), 'users:\n  alice: 3\n');
    expect(problemsOf({ file: configFile(seed), env: {} })).toEqual([expect.stringMatching(/^identity\.usersFile: .*seed\.yaml: users\.alice/)]);
  });

  it('must exist when a config names it', () => {
    const file = configFile(['identity: {provider: local, usersFile: ./userz.yaml}', 'tokens: {keysFile: ./keys.json}']);
    expect(problemsOf({ file, env: {} })).toEqual([expect.stringMatching(new RegExp(`^identity\\.usersFile: no such file ${join(dir, 'userz.yaml')}`))]);
  });

  it('must exist when the environment names it, also for the embedded default', () => {
    const missing = join(dir, 'nope.yaml');
    expect(problemsOf({ file: configFile(VALID), env: { GATEHOUSE_USERS_FILE: missing } })).toEqual([
      expect.stringMatching(/^identity\.usersFile \(from GATEHOUSE_USERS_FILE\): no such file /),
    ]);
    expect(problemsOf({ file: DEFAULT_CONFIG_FILE, env: { GATEHOUSE_USERS_FILE: missing } })).toEqual([
      expect.stringMatching(/^identity\.usersFile \(from GATEHOUSE_USERS_FILE\): no such file /),
    ]);
  });

  it('must be a file', () => {
    mkdirSync(join(dir, 'folder.yaml'));
    const file = configFile(['identity: {provider: local, usersFile: ./folder.yaml}', 'tokens: {keysFile: ./keys.json}']);
    expect(problemsOf({ file, env: {} })).toEqual([`identity.usersFile: ${join(dir, 'folder.yaml')} is not a file`]);
  });

  it('must parse, every problem of it named', () => {
    writeFileSync(join(dir, 'users.yaml'), 'users:\n  alice: {id: 1}\n  "bad name": {}\n');
    const problems = problemsOf({ file: configFile(VALID), env: {} });
    expect(problems.length).toBeGreaterThan(1);
    for (const problem of problems) expect(problem).toMatch(new RegExp(`^identity\\.usersFile: ${join(dir, 'users.yaml')}: users\\.`));
  });
});

describe('the keys file', () => {
  it('may be missing, but its directory must exist', () => {
    const file = configFile(['identity: {provider: local, usersFile: ./users.yaml}', 'tokens: {keysFile: /nope-gatehouse/keys.json}']);
    expect(problemsOf({ file, env: {} })).toEqual(['tokens.keysFile: directory /nope-gatehouse does not exist']);
  });

  it('must be a file, in a directory', () => {
    mkdirSync(join(dir, 'keys.json'));
    writeFileSync(join(dir, 'plain'), '');
    expect(problemsOf({ file: configFile(VALID), env: {} })).toEqual([`tokens.keysFile: ${join(dir, 'keys.json')} is not a file`]);
    expect(problemsOf({ file: configFile(VALID), env: { GATEHOUSE_KEYS_FILE: join(dir, 'plain', 'keys.json') } })).toEqual([
      `tokens.keysFile (from GATEHOUSE_KEYS_FILE): ${join(dir, 'plain')} is not a directory`,
    ]);
  });

  it('named by the environment, must have its directory even with the embedded default', () => {
    expect(problemsOf({ file: DEFAULT_CONFIG_FILE, env: { GATEHOUSE_KEYS_FILE: join(dir, 'no-such-dir', 'keys.json') } })).toEqual([
      `tokens.keysFile (from GATEHOUSE_KEYS_FILE): directory ${join(dir, 'no-such-dir')} does not exist`,
    ]);
  });
});

describe("a fronted provider's client key (private_key_jwt)", () => {
  const oidc = (keyFile: string) => [
    `identity: {provider: oidc, issuer: "https://sso.example.com/r", clientId: gatehouse, clientAuth: private_key_jwt, privateKeyFile: ${keyFile}}`,
    'tokens: {keysFile: ./keys.json}',
  ];

  it('must be named', () => {
    const file = configFile([
      'identity: {provider: oidc, issuer: "https://sso.example.com/r", clientId: gatehouse, clientAuth: private_key_jwt}',
      'tokens: {keysFile: ./keys.json}',
    ]);
    expect(problemsOf({ file, env: {} })).toEqual([expect.stringMatching(/^identity\.privateKeyFile: private_key_jwt needs/)]);
  });

  it('must exist and be a PKCS#8 PEM private key, and is never quoted back', () => {
    expect(problemsOf({ file: configFile(oidc('./missing.pem')), env: {} })).toEqual([
      expect.stringMatching(/^identity\.privateKeyFile: cannot read .*missing\.pem \(ENOENT\)/),
    ]);
    writeFileSync(join(dir, 'secret.txt'), 'not-a-key-but-a-secret');
    const problems = problemsOf({ file: configFile(oidc('./secret.txt')), env: {} });
    expect(problems).toEqual([expect.stringMatching(/^identity\.privateKeyFile: .*secret\.txt is not a PKCS#8 PEM private key/)]);
    expect(problems.join('\n')).not.toContain('not-a-key-but-a-secret');
  });

  it('passes with a PKCS#8 key, resolved against the config folder', () => {
    writeFileSync(join(dir, 'client.pem'), generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ format: 'pem', type: 'pkcs8' }));
    const { config } = loadCheckedConfig({ file: configFile(oidc('./client.pem')), env: {} });
    expect((config.identity as { privateKeyFile: string }).privateKeyFile).toBe(join(dir, 'client.pem'));
  });
});

describe('the embedded default', () => {
  it('passes as it ships', () => {
    expect(loadCheckedConfig({ env: {} }).file).toBe(DEFAULT_CONFIG_FILE);
  });

  it('may start without its users file, and creates its keys folder where it can', () => {
    const label = (path: string) => path;
    const files = { usersFile: join(dir, 'absent.yaml'), keysFile: join(dir, 'data', 'keys', 'keys.json') };
    expect(checkEnvironment(files, { embeddedDefault: { usersFile: true, keysFile: true }, label })).toEqual([]);
    expect(readdirSync(dir)).toEqual(['users.yaml']);
    // The same files, configured by an operator:
    expect(checkEnvironment(files, { embeddedDefault: { usersFile: false, keysFile: false }, label })).toEqual([
      expect.stringMatching(/^identity\.usersFile: no such file /),
      `tokens.keysFile: directory ${join(dir, 'data', 'keys')} does not exist`,
    ]);
    // Nor can it create its folder under a file.
    const underFile = { keysFile: join(dir, 'users.yaml', 'data', 'keys.json') };
    expect(checkEnvironment(underFile, { embeddedDefault: { usersFile: true, keysFile: true }, label })).toEqual([
      `tokens.keysFile: ${join(dir, 'users.yaml')} is not a directory`,
    ]);
  });
});

describe('every problem at once', () => {
  it('reports the schema, content and environment problems together', () => {
    const file = configFile([
      'server: {port: 70000}',
      'identity: {provider: local, usersFile: /x-gatehouse/users.yaml}',
      'tokens: {keysFile: /nope-gatehouse/keys.json}',
      'routes:',
      '  - {name: orders, prefix: /orders, upstreams: ["http://a:1"]}',
      '  - {name: orders, prefix: /orders2, upstreams: ["http://a:1"]}',
    ]);
    expect(problemsOf({ file, env: {} })).toEqual([
      expect.stringMatching(/^server\.port: /),
      'routes[1].name: duplicate route name "orders" (also routes[0])',
      expect.stringMatching(/^identity\.usersFile: no such file \/x-gatehouse\/users\.yaml/),
      'tokens.keysFile: directory /nope-gatehouse does not exist',
    ]);
  });
});
