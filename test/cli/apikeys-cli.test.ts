import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runApiKeysCommand } from '../../src/cli/apikeys.js';
import { runUsersCommand } from '../../src/cli/users.js';
import { LocalIdentityProvider } from '../../src/users/local-provider.js';
import { readUsersFile } from '../../src/users/users-file.js';
import { runCommand, type CliRun } from '../helpers/cli.js';

const KEY_LINE = /^ghk_[0-9a-f]{16}_[A-Za-z0-9_-]{43}\n$/;

let dir: string;
let usersFile: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-apikeys-cli-'));
  usersFile = join(dir, 'users.yaml');
  for (const name of ['alice', 'bob']) {
    const stdin = new PassThrough();
    stdin.end(`${name}-password-1\n`);
    const sink = new PassThrough().resume();
    expect(await runUsersCommand(['add', name, '--password-stdin'], { usersFile, stdin, stdout: sink, stderr: sink })).toBe(0);
  }
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

type Run = CliRun;

function apikeys(args: string[], runner = runApiKeysCommand): Promise<Run> {
  return runCommand(runner, args, usersFile);
}

async function create(user: string, ...extra: string[]): Promise<{ key: string; keyId: string }> {
  const result = await apikeys(['create', user, ...extra]);
  expect(result.code, result.stderr).toBe(0);
  const key = result.stdout.trimEnd();
  return { key, keyId: key.slice(4, 20) };
}

async function withProvider<T>(use: (provider: LocalIdentityProvider) => Promise<T>): Promise<T> {
  const provider = await LocalIdentityProvider.open({ provider: 'local', usersFile, watch: false }, pino({ level: 'silent' }));
  try {
    return await use(provider);
  } finally {
    await provider.close();
  }
}

describe('apikeys create', () => {
  it('prints the key once, alone on stdout, stores only its digest, and the key logs in', async () => {
    const result = await apikeys(['create', 'alice', '--label', 'CI deploys']);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(KEY_LINE);
    const key = result.stdout.trimEnd();
    const keyId = key.slice(4, 20);
    expect(result.stderr).toContain(`Created API key ${keyId} for alice`);
    expect(result.stderr).toMatch(/will not be shown again/);
    expect(result.stderr).not.toContain(key);

    const stored = (await readUsersFile(usersFile)).users.alice!.apiKeys;
    expect(stored).toEqual([{ id: keyId, hash: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/), label: 'CI deploys', createdAt: expect.any(String) }]);
    const text = await readFile(usersFile, 'utf8');
    expect(text).not.toContain(key.slice(21));

    const alice = (await readUsersFile(usersFile)).users.alice!;
    await withProvider(async (provider) => {
      await expect(provider.authenticate('alice', key)).resolves.toEqual({
        sub: alice.id,
        username: 'alice',
        method: 'api_key',
        apiKeyId: keyId,
        roles: [],
        groups: [],
      });
      await expect(provider.authenticate('bob', key)).resolves.toBeNull();
    });
  });

  it('makes a different key each time', async () => {
    const first = await create('alice');
    const second = await create('alice');
    expect(first.key).not.toBe(second.key);
    expect((await readUsersFile(usersFile)).users.alice!.apiKeys).toHaveLength(2);
  });

  it('notes that a disabled user’s key works only once the user is enabled', async () => {
    await apikeys(['disable', 'bob'], runUsersCommand);
    const result = await apikeys(['create', 'bob']);
    expect(result.code).toBe(0);
    expect(result.stderr).toMatch(/user bob is disabled/);
  });

  it('fails with exit code 1 for an unknown user, writing nothing', async () => {
    const before = await readFile(usersFile, 'utf8');
    expect(await apikeys(['create', 'ghost'])).toEqual({ code: 1, stdout: '', stderr: 'gatehouse: unknown user: ghost\n' });
    expect(await readFile(usersFile, 'utf8')).toBe(before);
  });
});

describe('apikeys revoke', () => {
  it('revokes the key: it no longer logs in, and revoking again fails', async () => {
    const { key, keyId } = await create('alice');
    const other = await create('alice');
    expect(await apikeys(['revoke', keyId])).toEqual({ code: 0, stdout: `revoked API key ${keyId} of user alice\n`, stderr: '' });
    const alice = (await readUsersFile(usersFile)).users.alice!;
    expect(alice.apiKeys.find((k) => k.id === keyId)!.revokedAt).toEqual(expect.any(String));
    await withProvider(async (provider) => {
      await expect(provider.authenticate('alice', key)).resolves.toBeNull();
      expect(provider.isActive({ sub: alice.id, apiKeyId: keyId })).toBe(false);
      await expect(provider.authenticate('alice', other.key)).resolves.toMatchObject({ apiKeyId: other.keyId });
    });

    const again = await apikeys(['revoke', keyId]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(new RegExp(`API key ${keyId} was already revoked`));
  });

  it('fails with exit code 1 for an unknown key', async () => {
    expect(await apikeys(['revoke', '0123456789abcdef'])).toEqual({ code: 1, stdout: '', stderr: 'gatehouse: unknown API key: 0123456789abcdef\n' });
  });
});

describe('apikeys create --dpop-jkt', () => {
  const THUMBPRINT = 'NzbLsXh8uDCcd-6MNwXF4W_7noWXFZAfHkxZsRGC9Xs';

  it('pins the key to a DPoP key: the users file keeps the thumbprint and the listing shows it', async () => {
    const { keyId } = await create('alice', '--dpop-jkt', THUMBPRINT);
    const data = await readUsersFile(usersFile);
    expect(data.users.alice!.apiKeys.find((key) => key.id === keyId)!.scope).toEqual({ dpopJkt: THUMBPRINT });
    const listed = await apikeys(['list']);
    expect(listed.stdout).toMatch(new RegExp(`${keyId}\\s+alice\\s+-\\s+dpop-jkt=${THUMBPRINT}\\s`));
  });

  it('refuses a pin that is not a thumbprint, naming what it must be, and writes nothing', async () => {
    const before = await readFile(usersFile, 'utf8');
    const result = await apikeys(['create', 'alice', '--dpop-jkt', 'not-a-thumbprint']);
    expect(result.code).not.toBe(0);
    expect(result.stderr).toMatch(/JWK SHA-256 thumbprint/);
    expect(await readFile(usersFile, 'utf8')).toBe(before);
  });
});

describe('apikeys list', () => {
  it('lists key id, user, label, scope, created, expiry, last use, revoked and where it lives, never a digest or secret', async () => {
    const a1 = await create('alice', '--label', 'laptop');
    const a2 = await create('alice');
    const b1 = await create('bob', '--label', 'evil\u001b[31mlabel\nnext');
    await apikeys(['revoke', a2.keyId]);
    const data = await readUsersFile(usersFile);
    const created = (id: string) =>
      Object.values(data.users)
        .flatMap((u) => u.apiKeys)
        .find((k) => k.id === id)!;

    const result = await apikeys(['list']);
    expect(result.code).toBe(0);
    const lines = result.stdout.trimEnd().split('\n');
    expect(lines[0]).toMatch(/^KEY ID\s+USER\s+LABEL\s+SCOPE\s+CREATED\s+EXPIRES\s+LAST USED\s+REVOKED\s+WHERE$/);
    // Without Redis the last use is the running gateway's (in memory): unknown here.
    expect(lines[1]).toMatch(new RegExp(`^${a1.keyId}\\s+alice\\s+laptop\\s+all\\s+${created(a1.keyId).createdAt}\\s+never\\s+-\\s+-\\s+users file$`));
    expect(lines[2]).toMatch(
      new RegExp(`^${a2.keyId}\\s+alice\\s+-\\s+all\\s+${created(a2.keyId).createdAt}\\s+never\\s+-\\s+${created(a2.keyId).revokedAt}\\s+users file$`),
    );
    // Control characters of a label cannot break the table or drive the terminal.
    expect(lines[3]).toMatch(new RegExp(`^${b1.keyId}\\s+bob\\s+evil \\[31mlabel next\\s+`));
    expect(lines).toHaveLength(4);

    const everything = result.stdout + result.stderr;
    for (const { key } of [a1, a2, b1]) expect(everything).not.toContain(key.slice(21));
    for (const user of Object.values(data.users)) {
      for (const key of user.apiKeys) expect(everything).not.toContain(key.hash);
    }
  });

  it('lists one user’s keys, and fails for an unknown user', async () => {
    const a1 = await create('alice');
    const b1 = await create('bob');
    const bobs = await apikeys(['list', 'bob']);
    expect(bobs.code).toBe(0);
    expect(bobs.stdout).toContain(b1.keyId);
    expect(bobs.stdout).not.toContain(a1.keyId);
    expect(await apikeys(['list', 'ghost'])).toEqual({ code: 1, stdout: '', stderr: 'gatehouse: unknown user: ghost\n' });
  });

  it('says when there are no keys', async () => {
    expect(await apikeys(['list'])).toEqual({ code: 0, stdout: '', stderr: 'no API keys\n' });
    expect(await apikeys(['list', 'alice'])).toEqual({ code: 0, stdout: '', stderr: 'no API keys for alice\n' });
  });
});

describe('usage', () => {
  it('answers bad usage with one line on stderr, pointing to the usage, and exit code 2', async () => {
    const before = await readFile(usersFile, 'utf8');
    const cases = [
      [],
      ['rotate'],
      ['create'],
      ['create', 'alice', 'bob'],
      ['create', 'alice', '--label'],
      ['create', 'alice', '--lable', 'x'],
      ['revoke'],
      ['revoke', 'a', 'b'],
      ['list', 'alice', 'bob'],
    ];
    for (const args of cases) {
      const result = await apikeys(args);
      expect(result.code, args.join(' ')).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr).toMatch(/^gatehouse: [^\n]+ \(see gatehouse apikeys( [a-z]+)? --help\)\n$/);
    }
    expect(await readFile(usersFile, 'utf8')).toBe(before);
  });
});
