import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { generateApiKey } from '../../src/users/api-keys.js';
import { hashPassword } from '../../src/users/passwords.js';
import { UsersFileError, emptyUsersFile, readUsersFile, writeUsersFile, type UsersFileData } from '../../src/users/users-file.js';
import { UsersChangeError, addApiKey, addUser, removeUser, revokeApiKey, setDisabled } from '../../src/users/users-changes.js';
import { TEST_SCRYPT_PARAMS } from '../helpers/gateway.js';

/** Cheap scrypt parameters: these tests are about behaviour, not hashing cost. */
const FAST = TEST_SCRYPT_PARAMS;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

let dir: string;
let hash: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-users-file-'));
  hash ??= await hashPassword('password-1', FAST);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

function expectChangeError(change: () => unknown, code: UsersChangeError['code'], message: RegExp): void {
  let thrown: unknown;
  try {
    change();
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(UsersChangeError);
  expect((thrown as UsersChangeError).code).toBe(code);
  expect((thrown as UsersChangeError).message).toMatch(message);
}

async function readError(path: string): Promise<UsersFileError> {
  const error: unknown = await readUsersFile(path).then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(UsersFileError);
  return error as UsersFileError;
}

describe('reading and writing', () => {
  it('reads a missing file as no users', async () => {
    await expect(readUsersFile(join(dir, 'absent.yaml'))).resolves.toEqual({ users: {} });
  });

  it('reads an empty file and an empty users mapping as no users', async () => {
    const path = join(dir, 'users.yaml');
    await writeFile(path, '# nothing yet\n');
    await expect(readUsersFile(path)).resolves.toEqual({ users: {} });
    await writeFile(path, 'users:\n');
    await expect(readUsersFile(path)).resolves.toEqual({ users: {} });
  });

  it('round-trips users and keys, with the header comment, readable by the owner only, creating the folder', async () => {
    const path = join(dir, 'nested', 'deeper', 'users.yaml');
    const key = generateApiKey();
    let data = addUser(emptyUsersFile(), 'alice', hash, new Date('2025-01-02T03:04:05.000Z'));
    data = addApiKey(data, 'alice', { keyId: key.keyId, hash: key.hash, label: 'ci: deploy #1' });
    await writeUsersFile(path, data);

    const text = await readFile(path, 'utf8');
    expect(text.startsWith('# Managed with `gatehouse users …` and `gatehouse apikeys …`.\n')).toBe(true);
    expect(text).toContain('createdAt: 2025-01-02T03:04:05.000Z');
    expect(text).not.toContain(key.key);
    expect((await stat(path)).mode & 0o777).toBe(0o600);
    await expect(readUsersFile(path)).resolves.toEqual(data);
    // No temporary file is left behind.
    expect(await readdir(join(dir, 'nested', 'deeper'))).toEqual(['users.yaml']);
  });

  it('replaces the file by rename (a new inode), tightening its mode to 0600', async () => {
    const path = join(dir, 'users.yaml');
    await writeFile(path, 'users: {}\n', { mode: 0o644 });
    const before = await stat(path);
    await writeUsersFile(path, addUser(emptyUsersFile(), 'alice', hash));
    const after = await stat(path);
    expect(after.ino).not.toBe(before.ino);
    expect(after.mode & 0o777).toBe(0o600);
    expect(Object.keys((await readUsersFile(path)).users)).toEqual(['alice']);
  });

  it('keeps key ids that look like numbers as strings', async () => {
    const path = join(dir, 'users.yaml');
    let data = addUser(emptyUsersFile(), 'alice', hash);
    const { hash: keyHash } = generateApiKey();
    for (const keyId of ['1234567890123456', '1234567890e12345', '0000000000000000']) {
      data = addApiKey(data, 'alice', { keyId, hash: keyHash });
    }
    await writeUsersFile(path, data);
    const read = await readUsersFile(path);
    expect(read.users.alice!.apiKeys.map((k) => k.id)).toEqual(['1234567890123456', '1234567890e12345', '0000000000000000']);
  });

  it('refuses to write contents the server would reject, leaving the old file alone', async () => {
    const path = join(dir, 'users.yaml');
    await writeUsersFile(path, addUser(emptyUsersFile(), 'alice', hash));
    const bad = addUser(emptyUsersFile(), 'bob', 'not-a-hash');
    await expect(writeUsersFile(path, bad)).rejects.toThrow(/users\.bob\.passwordHash/);
    expect(Object.keys((await readUsersFile(path)).users)).toEqual(['alice']);
    expect(await readdir(dir)).toEqual(['users.yaml']);
  });

  it('names the file and each problem by its path', async () => {
    const path = join(dir, 'users.yaml');
    const secretLookingHash = 'scrypt$ln=10,r=8,p=1$SECRETSALTVALUE$SECRETHASHVALUE';
    await writeFile(
      path,
      [
        'users:',
        '  alice:',
        '    id: not-a-uuid',
        `    passwordHash: "${secretLookingHash}"`,
        '    createdAt: yesterday',
        '    colour: blue',
        '    apiKeys:',
        '      - id: ABC',
        '        hash: short',
        '        createdAt: 2025-01-01T00:00:00Z',
        '  "bad name":',
        '    id: 7a0c3a52-5d2b-4c55-9f3e-2d6b1f0c8e11',
        `    passwordHash: "${hash}"`,
        '    createdAt: 2025-01-01T00:00:00Z',
        '  bob:',
        '    id: 7a0c3a52-5d2b-4c55-9f3e-2d6b1f0c8e11',
        `    passwordHash: "${hash}"`,
        '    disabled: "no"',
        '    createdAt: 2025-01-01T00:00:00+02:00',
        '  carol:',
        '    id: 7a0c3a52-5d2b-4c55-9f3e-2d6b1f0c8e11',
        `    passwordHash: "${hash}"`,
        '    createdAt: 2025-01-01T00:00:00Z',
        'extra: true',
        '',
      ].join('\n'),
    );
    const error = await readError(path);
    expect(error.message).toContain(path);
    const problems = error.problems.join('\n');
    for (const expected of [
      /^users\.alice\.id: must be a UUID$/m,
      /^users\.alice\.passwordHash: must be a password hash/m,
      /^users\.alice\.createdAt: must be an ISO 8601 date and time$/m,
      /^users\.alice: .*colour/m,
      /^users\.alice\.apiKeys\.0\.id: must be 16 lowercase hexadecimal characters$/m,
      /^users\.alice\.apiKeys\.0\.hash: must be a base64url SHA-256 digest/m,
      /^users\.bad name: invalid user name/m,
      /^users\.bob\.disabled: /m,
      /^\(top level\): .*extra/m,
    ]) {
      expect(problems).toMatch(expected);
    }
    expect(error.message).not.toContain('SECRETHASHVALUE');
  });

  it('reports user ids and key ids used twice', async () => {
    const path = join(dir, 'users.yaml');
    const key = generateApiKey();
    let data = addUser(addUser(emptyUsersFile(), 'alice', hash), 'bob', hash);
    data = addApiKey(data, 'alice', { keyId: key.keyId, hash: key.hash });
    await writeUsersFile(path, data);
    const text = await readFile(path, 'utf8');
    const aliceId = data.users.alice!.id;
    const bobId = data.users.bob!.id;
    await writeFile(
      path,
      text
        .replace(bobId, aliceId)
        .replace(/apiKeys: \[\]/, `apiKeys:\n      - id: "${key.keyId}"\n        hash: ${key.hash}\n        createdAt: 2025-01-01T00:00:00Z`),
    );
    const error = await readError(path);
    expect(error.problems).toContain('users.bob.id: duplicate user id (also used by alice)');
    expect(error.problems).toContain('users.bob.apiKeys.0.id: duplicate API key id (also used by alice)');
  });

  it('reports YAML syntax errors and duplicate names without quoting the file', async () => {
    const path = join(dir, 'users.yaml');
    await writeFile(path, `users:\n  alice:\n    passwordHash: "${hash}"\n  alice:\n    id: x\n`);
    const duplicate = await readError(path);
    expect(duplicate.problems.join('\n')).toMatch(/YAML: .*unique/i);
    expect(duplicate.message).not.toContain(hash);

    await writeFile(path, `users: [\n  passwordHash: "${hash}"\n`);
    const broken = await readError(path);
    expect(broken.problems[0]).toMatch(/^YAML: /);
    expect(broken.message).toContain(path);
    expect(broken.message).not.toContain(hash);
  });

  it('refuses __proto__ as a user name instead of silently dropping it', async () => {
    const path = join(dir, 'users.yaml');
    await writeFile(
      path,
      `users:\n  __proto__:\n    id: 7a0c3a52-5d2b-4c55-9f3e-2d6b1f0c8e11\n    passwordHash: "${hash}"\n    createdAt: 2025-01-01T00:00:00Z\n`,
    );
    expect((await readError(path)).problems).toContain('users.__proto__: this user name is reserved');
  });

  it('says so when the file cannot be read', async () => {
    const path = join(dir, 'a-folder');
    await mkdir(path);
    const error = await readError(path);
    expect(error.message).toContain(path);
    expect(error.problems[0]).toMatch(/cannot read the file: EISDIR/);
  });
});

describe('changes', () => {
  it('adds a user with a fresh UUID, enabled, without changing its input', () => {
    const empty = emptyUsersFile();
    const now = new Date('2025-06-01T12:00:00.000Z');
    const data = addUser(empty, 'alice@example.com', hash, now);
    expect(empty).toEqual({ users: {} });
    expect(data.users['alice@example.com']).toEqual({
      id: expect.stringMatching(UUID),
      passwordHash: hash,
      disabled: false,
      createdAt: '2025-06-01T12:00:00.000Z',
      apiKeys: [],
    });
    // A removed and re-added user is a new subject: old tokens do not come back to life.
    const again = addUser(removeUser(data, 'alice@example.com'), 'alice@example.com', hash);
    expect(again.users['alice@example.com']!.id).not.toBe(data.users['alice@example.com']!.id);
  });

  it('refuses a taken or invalid user name', () => {
    const data = addUser(emptyUsersFile(), 'alice', hash);
    expectChangeError(() => addUser(data, 'alice', hash), 'duplicate_user', /user already exists: alice/);
    for (const name of ['', 'has space', 'a/b', 'x'.repeat(129), '__proto__', 'émile']) {
      expectChangeError(() => addUser(data, name, hash), 'invalid_username', /invalid user name/);
    }
    expect(Object.keys(addUser(data, 'x'.repeat(128), hash).users)).toHaveLength(2);
  });

  it('treats names of Object.prototype members as ordinary names', () => {
    const empty = emptyUsersFile();
    expectChangeError(() => setDisabled(empty, 'constructor', true), 'unknown_user', /unknown user: constructor/);
    expectChangeError(() => removeUser(empty, 'toString'), 'unknown_user', /unknown user/);
    const data = addUser(empty, 'constructor', hash);
    expect(setDisabled(data, 'constructor', true).users['constructor']!.disabled).toBe(true);
  });

  it('disables, enables and removes users', () => {
    const key = generateApiKey();
    let data: UsersFileData = addUser(addUser(emptyUsersFile(), 'alice', hash), 'bob', hash);
    data = addApiKey(data, 'alice', { keyId: key.keyId, hash: key.hash });
    const disabled = setDisabled(data, 'alice', true);
    expect(disabled.users.alice!.disabled).toBe(true);
    expect(data.users.alice!.disabled).toBe(false);
    expect(setDisabled(disabled, 'alice', false).users.alice!.disabled).toBe(false);
    const removed = removeUser(data, 'alice');
    expect(Object.keys(removed.users)).toEqual(['bob']);
    expectChangeError(() => removeUser(removed, 'alice'), 'unknown_user', /unknown user: alice/);
  });

  it('adds and revokes API keys', () => {
    const key = generateApiKey();
    const created = new Date('2025-01-01T00:00:00.000Z');
    const revoked = new Date('2025-02-01T00:00:00.000Z');
    let data = addUser(emptyUsersFile(), 'alice', hash);
    data = addApiKey(data, 'alice', { keyId: key.keyId, hash: key.hash, label: 'laptop' }, created);
    expect(data.users.alice!.apiKeys).toEqual([{ id: key.keyId, hash: key.hash, label: 'laptop', createdAt: '2025-01-01T00:00:00.000Z' }]);
    const after = revokeApiKey(data, key.keyId, revoked);
    expect(after.users.alice!.apiKeys[0]!.revokedAt).toBe('2025-02-01T00:00:00.000Z');
    expect(data.users.alice!.apiKeys[0]!.revokedAt).toBeUndefined();
    expectChangeError(() => revokeApiKey(after, key.keyId), 'api_key_already_revoked', /already revoked at 2025-02-01/);
  });

  it('refuses keys for unknown users, duplicate key ids, overlong labels and unknown keys', () => {
    const key = generateApiKey();
    let data = addUser(addUser(emptyUsersFile(), 'alice', hash), 'bob', hash);
    expectChangeError(() => addApiKey(data, 'carol', { keyId: key.keyId, hash: key.hash }), 'unknown_user', /unknown user: carol/);
    data = addApiKey(data, 'alice', { keyId: key.keyId, hash: key.hash });
    expectChangeError(() => addApiKey(data, 'bob', { keyId: key.keyId, hash: key.hash }), 'duplicate_api_key', /already in use/);
    const other = generateApiKey();
    expectChangeError(() => addApiKey(data, 'bob', { ...other, label: 'x'.repeat(201) }), 'invalid_label', /longer than 200/);
    expectChangeError(() => revokeApiKey(data, 'ffffffffffffffff'), 'unknown_api_key', /unknown API key: ffffffffffffffff/);
  });
});
