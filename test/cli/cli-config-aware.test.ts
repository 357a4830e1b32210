// The users and apikeys commands read the config they serve: they refuse roles
// and scopes it does not declare (exit 65), say first that oidc mode has no
// users of theirs (exit 78), and list keys wherever they live, failing when
// the configured Redis does not answer rather than leaving its keys out.
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { StoreApiKeys } from '../../src/account/store-api-keys.js';
import { runUsersCommand } from '../../src/cli/users.js';
import { generateApiKey } from '../../src/users/api-keys.js';
import { readUsersFile } from '../../src/users/users-file.js';
import { createStore } from '../../src/store/create-store.js';
import { runGatehouse, type CliRun } from '../helpers/cli.js';
import { startRedisServer, type RedisServerHandle } from '../helpers/redis-server.js';

let dir: string;
let configFile: string;

function localConfig(extra = ''): string {
  return `identity:
  provider: local
  usersFile: ./users.yaml
tokens:
  keysFile: ./keys.json
${extra}`;
}

const DECLARED = `authorization:
  roles: [admin, ops]
  scopes: ["orders:read", "orders:write"]
`;

function gatehouse(...argv: string[]): Promise<CliRun> {
  return runGatehouse(['--config', configFile, ...argv], {});
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-cli-config-'));
  configFile = join(dir, 'gatehouse.yaml');
  const stdin = new PassThrough();
  stdin.end('alice-password-1\n');
  const sink = new PassThrough().resume();
  expect(await runUsersCommand(['add', 'alice', '--password-stdin'], { usersFile: join(dir, 'users.yaml'), stdin, stdout: sink, stderr: sink })).toBe(0);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('roles and scopes the config declares', () => {
  it('refuses `users roles NAME add` of an undeclared role with exit 65 and the declared list, writing nothing', async () => {
    await writeFile(configFile, localConfig(DECLARED));
    const before = await readFile(join(dir, 'users.yaml'), 'utf8');
    const typo = await gatehouse('users', 'roles', 'alice', 'add', 'amdin');
    expect(typo).toEqual({ code: 65, stdout: '', stderr: "gatehouse: role amdin not declared in the config's authorization.roles; declared: admin, ops\n" });
    expect(await readFile(join(dir, 'users.yaml'), 'utf8')).toBe(before);

    const declared = await gatehouse('users', 'roles', 'alice', 'add', 'ops');
    expect(declared).toEqual({ code: 0, stdout: 'gave alice the role ops\n', stderr: '' });
    expect((await readUsersFile(join(dir, 'users.yaml'))).users.alice!.roles).toEqual(['ops']);
  });

  it('refuses `apikeys create --scope` and `--role` the config does not declare, with exit 65', async () => {
    await writeFile(configFile, localConfig(DECLARED));
    const scope = await gatehouse('apikeys', 'create', 'alice', '--scope', 'nope:x');
    expect(scope.code).toBe(65);
    expect(scope.stdout).toBe('');
    expect(scope.stderr).toBe("gatehouse: scope nope:x not declared in the config's authorization.scopes; declared: orders:read, orders:write\n");
    const role = await gatehouse('apikeys', 'create', 'alice', '--role', 'root', '--role', 'admin', '--role', 'x');
    expect(role.code).toBe(65);
    expect(role.stderr).toContain('roles root, x not declared');
    expect((await readUsersFile(join(dir, 'users.yaml'))).users.alice!.apiKeys).toEqual([]);

    const good = await gatehouse('apikeys', 'create', 'alice', '--scope', 'orders:read');
    expect(good.code, good.stderr).toBe(0);
  });

  it('takes any name when the config declares none (nothing to check against)', async () => {
    await writeFile(configFile, localConfig());
    expect((await gatehouse('users', 'roles', 'alice', 'add', 'anything')).code).toBe(0);
    expect((await gatehouse('apikeys', 'create', 'alice', '--scope', 'any:scope')).code).toBe(0);
  });
});

describe('oidc mode', () => {
  it('refuses every users and apikeys command with exit 78, saying why, before judging unrelated fields', async () => {
    // No client secret, no keys file: the refusal must still be about the mode, not about them.
    await writeFile(
      configFile,
      `identity:
  provider: oidc
  issuer: https://login.example.com
  clientId: gatehouse
`,
    );
    for (const argv of [
      ['users', 'list'],
      ['users', 'add', 'bob'],
      ['users', 'roles', 'bob', 'add', 'x'],
      ['apikeys', 'list'],
      ['apikeys', 'create', 'bob'],
      ['apikeys', 'revoke', '0123456789abcdef'],
    ]) {
      const result = await gatehouse(...argv);
      expect(result.code, argv.join(' ')).toBe(78);
      expect(result.stdout).toBe('');
      expect(result.stderr.trimEnd().split('\n')).toHaveLength(1);
      expect(result.stderr).toContain('identity.provider: oidc: users and API keys live at the OpenID Provider');
      expect(result.stderr).not.toContain('clientSecret');
    }
    // Nor are there signing keys of its own to list or rotate (none is created in this mode).
    for (const argv of [
      ['keys', 'list'],
      ['keys', 'rotate'],
    ]) {
      const result = await gatehouse(...argv);
      expect(result.code, argv.join(' ')).toBe(78);
      expect(result.stderr).toContain('identity.provider: oidc: the OpenID Provider signs the tokens with its own keys');
    }
    expect(existsSync(join(dir, 'keys.json'))).toBe(false);
  });
});

describe('apikeys list', () => {
  let redis: RedisServerHandle;
  beforeAll(async () => {
    redis = await startRedisServer();
  });
  afterAll(async () => {
    await redis.close();
  });

  it('shows scope, expiry, last use and where each key lives, the store’s keys included, as a table and as JSON', async () => {
    await writeFile(configFile, localConfig(`store:\n  url: ${redis.url}\n  keyPrefix: "cli-list:"\n`));
    const fileKey = await gatehouse('apikeys', 'create', 'alice', '--label', 'deploys', '--scope', 'orders:read', '--read-only', '--expires-in-days', '30');
    expect(fileKey.code, fileKey.stderr).toBe(0);
    const fileKeyId = fileKey.stdout.slice(4, 20);

    // A key alice made on the account page, held in Redis, and a login with it.
    const alice = (await readUsersFile(join(dir, 'users.yaml'))).users.alice!;
    const store = await createStore({ url: redis.url, keyPrefix: 'cli-list:' } as never, pino({ enabled: false }));
    const { keyId: storeKeyId, hash } = generateApiKey();
    const usedAt = Date.parse('2026-01-02T03:04:05.000Z');
    try {
      await new StoreApiKeys(store.apiKeys!).create({ sub: alice.id, username: 'alice' }, { keyId: storeKeyId, hash, label: 'laptop' }, 10);
      await store.apiKeys!.noteUse(storeKeyId, usedAt, 60_000);
    } finally {
      await store.close();
    }

    const table = await gatehouse('apikeys', 'list');
    expect(table.code, table.stderr).toBe(0);
    const lines = table.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^KEY ID\s+USER\s+LABEL\s+SCOPE\s+CREATED\s+EXPIRES\s+LAST USED\s+REVOKED\s+WHERE$/);
    const expiresAt = (await readUsersFile(join(dir, 'users.yaml'))).users.alice!.apiKeys[0]!.scope!.expiresAt!;
    expect(lines[1]).toMatch(new RegExp(`^${fileKeyId}\\s+alice\\s+deploys\\s+scopes=orders:read read-only\\s+\\S+\\s+${expiresAt}\\s+-\\s+-\\s+users file$`));
    expect(lines[2]).toMatch(new RegExp(`^${storeKeyId}\\s+alice\\s+laptop\\s+all\\s+\\S+\\s+never\\s+2026-01-02T03:04:05.000Z\\s+-\\s+store$`));
    expect(lines).toHaveLength(3);

    const json = await gatehouse('apikeys', 'list', '--json');
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual([
      expect.objectContaining({ id: fileKeyId, user: 'alice', where: 'users file', expiresAt, scope: { scopes: ['orders:read'], readOnly: true, expiresAt } }),
      expect.objectContaining({ id: storeKeyId, user: 'alice', where: 'store', expiresAt: null, lastUsedAt: '2026-01-02T03:04:05.000Z', active: true }),
    ]);
    expect(json.stdout).not.toContain(hash);
  });

  it('fails (exit 1, naming the store) when the configured Redis does not answer, rather than list fewer keys', async () => {
    const gone = await startRedisServer();
    await gone.close();
    await writeFile(configFile, localConfig(`store:\n  url: ${gone.url}\n`));
    const result = await gatehouse('apikeys', 'list');
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(new RegExp(`^gatehouse: cannot reach the store at ${gone.url} \\([^\n]+\\): the keys users made there cannot be read\n$`));
  });

  it('users held in the store: the same store session, the same refusal when Redis does not answer', async () => {
    const gone = await startRedisServer();
    await gone.close();
    await writeFile(configFile, localConfig(`store:\n  url: ${gone.url}\n`).replace('usersFile: ./users.yaml', 'usersFile: ./users.yaml\n  usersIn: store'));
    const result = await gatehouse('users', 'list');
    expect(result.code).toBe(1);
    expect(result.stdout).toBe('');
    expect(result.stderr).toMatch(
      new RegExp(`^gatehouse: cannot reach the store at ${gone.url} \\([^\n]+\\): the users live there \\(identity.usersIn: store\\)\n$`),
    );
  });
});

describe('keys list --json', () => {
  it('prints the signing keys as one JSON array, never key material', async () => {
    await writeFile(configFile, localConfig());
    const rotated = await gatehouse('keys', 'rotate');
    expect(rotated.code, rotated.stderr).toBe(0);
    const result = await gatehouse('keys', 'list', '--json');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual([
      { kid: rotated.stdout.trim(), alg: 'EdDSA', status: expect.any(String), createdAt: expect.any(String), retiredAt: null },
    ]);
    expect(result.stdout).not.toMatch(/"d"|"x"/);
  });
});

describe('users list --json', () => {
  it('prints one JSON array for scripts, never a hash', async () => {
    await writeFile(configFile, localConfig());
    await gatehouse('users', 'roles', 'alice', 'add', 'ops');
    const result = await gatehouse('users', 'list', '--json');
    expect(result.code).toBe(0);
    expect(JSON.parse(result.stdout)).toEqual([{ name: 'alice', id: expect.any(String), status: 'enabled', roles: ['ops'], activeKeys: 0 }]);
    expect(result.stdout).not.toContain('scrypt');
  });
});
