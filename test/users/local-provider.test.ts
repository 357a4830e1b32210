import { PassThrough } from 'node:stream';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { runUsersCommand } from '../../src/cli/users.js';
import { generateApiKey, type GeneratedApiKey } from '../../src/users/api-keys.js';
import { LocalIdentityProvider } from '../../src/users/local-provider.js';
import { DEFAULT_SCRYPT_PARAMS, hashPassword } from '../../src/users/passwords.js';
import { UsersFileError, emptyUsersFile, readUsersFile, writeUsersFile, type ApiKeyRecord, type UsersFileData } from '../../src/users/users-file.js';
import { addApiKey, addUser, removeUser, revokeApiKey, setDisabled } from '../../src/users/users-changes.js';
import { writeFileAtomic } from '../../src/files/atomic-write.js';
import { nextEvent } from '../helpers/events.js';
import { logSink, type LogSink } from '../helpers/log-sink.js';
import { TEST_SCRYPT_PARAMS } from '../helpers/gateway.js';

interface ScryptCost {
  N: number | undefined;
  r: number | undefined;
  p: number | undefined;
}

/** The cost of each scrypt computation since a test cleared it: what a refusal spends, without a clock. */
const scryptCalls = vi.hoisted((): ScryptCost[] => []);
vi.mock('node:crypto', async (importOriginal) => {
  const crypto = await importOriginal<typeof import('node:crypto')>();
  const scrypt = (...args: Parameters<typeof crypto.scrypt>) => {
    const options = args.length === 5 ? (args[3] as import('node:crypto').ScryptOptions) : {};
    scryptCalls.push({ N: options.N, r: options.r, p: options.p });
    return (crypto.scrypt as (...a: unknown[]) => void)(...args);
  };
  return { ...crypto, default: { ...crypto, scrypt }, scrypt };
});

/** Cheap scrypt parameters: these tests are about behaviour, not hashing cost. */
const FAST = TEST_SCRYPT_PARAMS;

interface Fixture {
  data: UsersFileData;
  keys: { alice: GeneratedApiKey; aliceRevoked: GeneratedApiKey; bob: GeneratedApiKey; mallory: GeneratedApiKey };
}

const PASSWORDS = { alice: 'alice-password-1', bob: 'bob-password-1', mallory: 'mallory-password-1' };

async function fixture(): Promise<Fixture> {
  const keys = { alice: generateApiKey(), aliceRevoked: generateApiKey(), bob: generateApiKey(), mallory: generateApiKey() };
  let data = emptyUsersFile();
  for (const [name, password] of Object.entries(PASSWORDS)) data = addUser(data, name, await hashPassword(password, FAST));
  data = addApiKey(data, 'alice', { keyId: keys.alice.keyId, hash: keys.alice.hash, label: 'laptop' });
  data = addApiKey(data, 'alice', { keyId: keys.aliceRevoked.keyId, hash: keys.aliceRevoked.hash });
  data = revokeApiKey(data, keys.aliceRevoked.keyId);
  data = addApiKey(data, 'bob', { keyId: keys.bob.keyId, hash: keys.bob.hash });
  data = addApiKey(data, 'mallory', { keyId: keys.mallory.keyId, hash: keys.mallory.hash });
  data = setDisabled(data, 'mallory', true);
  return { data, keys };
}

let dir: string;
let usersFile: string;
let logs: LogSink;
let fx: Fixture;
const providers: LocalIdentityProvider[] = [];

async function open(watch = false): Promise<LocalIdentityProvider> {
  const provider = await LocalIdentityProvider.open({ provider: 'local', usersFile, watch }, logs.logger);
  providers.push(provider);
  return provider;
}

/** Every secret of the fixture: none may ever reach the log. */
function secrets(): string[] {
  const users = Object.values(fx.data.users);
  return [...Object.values(PASSWORDS), ...users.map((u) => u.passwordHash), ...Object.values(fx.keys).flatMap((k) => [k.key, k.hash, k.key.slice(21)])];
}

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-local-provider-'));
  usersFile = join(dir, 'users.yaml');
  logs = logSink('debug');
  fx = await fixture();
  await writeUsersFile(usersFile, fx.data);
});

afterEach(async () => {
  await Promise.all(providers.splice(0).map((p) => p.close()));
  const text = logs.text();
  for (const secret of secrets()) expect(text).not.toContain(secret);
  await rm(dir, { recursive: true, force: true });
});

describe('authenticate', () => {
  it('logs a user in with the password', async () => {
    const provider = await open();
    const identity = await provider.authenticate('alice', PASSWORDS.alice);
    expect(identity).toEqual({ sub: fx.data.users.alice!.id, username: 'alice', method: 'pwd', roles: [], groups: [] });
    expect(identity).not.toHaveProperty('apiKeyId');
  });

  it('logs a user in with an API key given as the password', async () => {
    const provider = await open();
    await expect(provider.authenticate('alice', fx.keys.alice.key)).resolves.toEqual({
      sub: fx.data.users.alice!.id,
      username: 'alice',
      method: 'api_key',
      apiKeyId: fx.keys.alice.keyId,
      roles: [],
      groups: [],
    });
    await expect(provider.authenticate('bob', fx.keys.bob.key)).resolves.toMatchObject({ username: 'bob', method: 'api_key' });
  });

  it('refuses a wrong password, an unknown user and empty input', async () => {
    const provider = await open();
    await expect(provider.authenticate('alice', 'alice-password-2')).resolves.toBeNull();
    await expect(provider.authenticate('alice', PASSWORDS.bob)).resolves.toBeNull();
    await expect(provider.authenticate('nobody', PASSWORDS.alice)).resolves.toBeNull();
    await expect(provider.authenticate('ALICE', PASSWORDS.alice)).resolves.toBeNull();
    await expect(provider.authenticate('', '')).resolves.toBeNull();
    await expect(provider.authenticate('constructor', 'x')).resolves.toBeNull();
  });

  it('refuses a disabled user, with the right password or key', async () => {
    const provider = await open();
    await expect(provider.authenticate('mallory', PASSWORDS.mallory)).resolves.toBeNull();
    await expect(provider.authenticate('mallory', fx.keys.mallory.key)).resolves.toBeNull();
  });

  it('refuses a revoked key, a wrong secret for a known key id, and another user’s key', async () => {
    const provider = await open();
    await expect(provider.authenticate('alice', fx.keys.aliceRevoked.key)).resolves.toBeNull();
    const wrongSecret = `ghk_${fx.keys.alice.keyId}_${parseSecretOf(generateApiKey().key)}`;
    await expect(provider.authenticate('alice', wrongSecret)).resolves.toBeNull();
    // Bob's valid key, presented as alice: the key must belong to the named user.
    await expect(provider.authenticate('alice', fx.keys.bob.key)).resolves.toBeNull();
    await expect(provider.authenticate('nobody', fx.keys.bob.key)).resolves.toBeNull();
  });

  it('treats a key-shaped secret with an unknown key id as a password', async () => {
    const keyShaped = generateApiKey().key;
    await writeUsersFile(usersFile, addUser(fx.data, 'odd', await hashPassword(keyShaped, FAST)));
    const provider = await open();
    await expect(provider.authenticate('odd', keyShaped)).resolves.toMatchObject({ username: 'odd', method: 'pwd' });
  });

  it('starts with no users when the file does not exist, and says so', async () => {
    usersFile = join(dir, 'absent.yaml');
    const provider = await open();
    await expect(provider.authenticate('alice', PASSWORDS.alice)).resolves.toBeNull();
    expect(logs.entries().some((e) => e.level === 40 && String(e.msg).includes('no users'))).toBe(true);
  });

  it('refuses to start on an invalid file', async () => {
    await writeFile(usersFile, 'users:\n  alice: {}\n');
    await expect(open()).rejects.toBeInstanceOf(UsersFileError);
  });
});

describe('keys held in the store', () => {
  /** A store's keys, in a Map the test changes as a revocation would. */
  function storeWith(sub: string): { keys: Map<string, ApiKeyRecord & { sub: string }>; key: string; keyId: string } {
    const { key, keyId, hash } = generateApiKey();
    const keys = new Map([[keyId, { id: keyId, hash, createdAt: new Date().toISOString(), sub }]]);
    return { keys, key, keyId };
  }

  it('logs in with a key the users file does not list, and its session stays active', async () => {
    const { keys, key, keyId } = storeWith(fx.data.users.bob!.id);
    const provider = await LocalIdentityProvider.open({ provider: 'local', usersFile, watch: false }, logs.logger, {
      storeKeys: { find: async (id) => keys.get(id) ?? null },
    });
    providers.push(provider);
    const identity = await provider.authenticate('bob', key);
    expect(identity).toMatchObject({ username: 'bob', method: 'api_key', apiKeyId: keyId });
    expect(provider.isActive(identity!)).toBe(true);
    expect(await provider.stillHolds(identity!)).toBe(true);
    expect(await provider.authenticate('alice', key)).toBeNull();
  });

  it('says a key revoked while its login was under way no longer holds, so the session just made is ended', async () => {
    const { keys, key } = storeWith(fx.data.users.bob!.id);
    const provider = await LocalIdentityProvider.open({ provider: 'local', usersFile, watch: false }, logs.logger, {
      storeKeys: { find: async (id) => keys.get(id) ?? null },
    });
    providers.push(provider);
    const identity = await provider.authenticate('bob', key);
    keys.clear();
    expect(await provider.stillHolds(identity!)).toBe(false);
  });
});

describe('isActive', () => {
  it('follows disable, enable, removal and key revocation', async () => {
    const provider = await open();
    const alice = fx.data.users.alice!.id;
    const bob = fx.data.users.bob!.id;
    const aliceKey = fx.keys.alice.keyId;

    expect(provider.isActive({ sub: alice })).toBe(true);
    expect(provider.isActive({ sub: alice, apiKeyId: aliceKey })).toBe(true);
    expect(provider.isActive({ sub: alice, apiKeyId: fx.keys.aliceRevoked.keyId })).toBe(false);
    expect(provider.isActive({ sub: alice, apiKeyId: fx.keys.bob.keyId })).toBe(false);
    expect(provider.isActive({ sub: alice, apiKeyId: 'ffffffffffffffff' })).toBe(false);
    expect(provider.isActive({ sub: fx.data.users.mallory!.id })).toBe(false);
    expect(provider.isActive({ sub: 'a7c6f4de-0000-4000-8000-000000000000' })).toBe(false);

    await writeUsersFile(usersFile, setDisabled(fx.data, 'alice', true));
    await expect(provider.reload()).resolves.toBe(true);
    expect(provider.isActive({ sub: alice })).toBe(false);
    expect(provider.isActive({ sub: alice, apiKeyId: aliceKey })).toBe(false);
    await expect(provider.authenticate('alice', PASSWORDS.alice)).resolves.toBeNull();

    await writeUsersFile(usersFile, revokeApiKey(fx.data, aliceKey));
    await provider.reload();
    expect(provider.isActive({ sub: alice })).toBe(true);
    expect(provider.isActive({ sub: alice, apiKeyId: aliceKey })).toBe(false);
    await expect(provider.authenticate('alice', fx.keys.alice.key)).resolves.toBeNull();

    await writeUsersFile(usersFile, removeUser(fx.data, 'alice'));
    await provider.reload();
    expect(provider.isActive({ sub: alice })).toBe(false);
    expect(provider.isActive({ sub: bob, apiKeyId: fx.keys.bob.keyId })).toBe(true);
  });
});

/** The provider's first reload after this call that took the file (or, with `applied` false, refused it). */
function reloaded(provider: LocalIdentityProvider, applied = true): Promise<[boolean]> {
  return nextEvent<[boolean]>(provider, 'reload', (taken) => taken === applied);
}

describe('live reload', () => {
  it('lets a user added through the CLI log in while the provider runs', async () => {
    const provider = await open(true);
    const stdin = new PassThrough();
    stdin.end('carol-password-1\n');
    const sink = new PassThrough();
    const taken = reloaded(provider);
    const code = await runUsersCommand(['add', 'carol', '--password-stdin'], { usersFile, stdin, stdout: sink, stderr: sink });
    expect(code).toBe(0);
    await taken;
    const carol = (await readUsersFile(usersFile)).users.carol!;
    expect(await provider.authenticate('carol', 'carol-password-1')).toEqual({ sub: carol.id, username: 'carol', method: 'pwd', roles: [], groups: [] });
    expect(provider.isActive({ sub: carol.id })).toBe(true);
  });

  it('keeps the previous users when the changed file does not parse, and logs an error', async () => {
    const provider = await open(true);
    const refused = reloaded(provider, false);
    // In one step: a plain write may be seen truncated first, and an empty file is a valid one.
    await writeFileAtomic(usersFile, 'users: [\n');
    await refused;
    const error = logs.entries().find((e) => e.level === 50);
    expect(error?.msg).toMatch(/not reloaded/);
    expect(JSON.stringify(error)).toContain(usersFile);
    await expect(provider.authenticate('alice', PASSWORDS.alice)).resolves.toMatchObject({ username: 'alice' });
    expect(provider.isActive({ sub: fx.data.users.alice!.id })).toBe(true);

    // Fixed again: the change is taken.
    const taken = reloaded(provider);
    await writeUsersFile(usersFile, setDisabled(fx.data, 'alice', true));
    await taken;
    expect(provider.isActive({ sub: fx.data.users.alice!.id })).toBe(false);
  });

  it('notices a users file created after start', async () => {
    usersFile = join(dir, 'later.yaml');
    const provider = await open(true);
    expect(await provider.authenticate('bob', PASSWORDS.bob)).toBeNull();
    const taken = reloaded(provider);
    await writeUsersFile(usersFile, fx.data);
    await taken;
    expect(await provider.authenticate('bob', PASSWORDS.bob)).not.toBeNull();
  });

  it('does not watch without `watch`, nor after close', async () => {
    const unwatched = await open(false);
    const watched = await open(true);
    let reloads = 0;
    for (const provider of [unwatched, watched]) provider.on('reload', () => reloads++);
    await watched.close();
    // Watches of one file share one poller: a change reaches every watch in the same turn.
    const witness = await open(true);

    // Two changes, each seen by the witness: a reload another watch had started on the first has ended by the second.
    for (const data of [removeUser(fx.data, 'bob'), removeUser(fx.data, 'alice')]) {
      const taken = reloaded(witness);
      await writeUsersFile(usersFile, data);
      await taken;
    }
    expect(witness.isActive({ sub: fx.data.users.alice!.id })).toBe(false);
    expect(reloads).toBe(0);
    for (const provider of [unwatched, watched]) {
      expect(provider.isActive({ sub: fx.data.users.bob!.id })).toBe(true);
    }
  });
});

describe('the cost of a refusal', () => {
  // An unknown user's refusal waits as long as such a scrypt instead (scrypt-stand-in.ts; equal-work.test.ts counts it).
  it('spends one scrypt of the users’ cost on a wrong password and on a disabled user, none on an unknown user', async () => {
    await writeUsersFile(usersFile, addUser(fx.data, 'costly', await hashPassword('costly-password-1', DEFAULT_SCRYPT_PARAMS)));
    const provider = await open();
    const costOf = async (username: string): Promise<ScryptCost[]> => {
      scryptCalls.length = 0;
      expect(await provider.authenticate(username, 'wrong-password-1')).toBeNull();
      return [...scryptCalls];
    };
    const wrongPassword = await costOf('costly');
    expect(wrongPassword).toEqual([{ N: 2 ** DEFAULT_SCRYPT_PARAMS.logN, r: DEFAULT_SCRYPT_PARAMS.r, p: DEFAULT_SCRYPT_PARAMS.p }]);
    expect(await costOf('nobody')).toEqual([]);
    // A disabled user too: refusing without hashing would tell that the name exists.
    expect(await costOf('mallory')).toHaveLength(1);
  });
});

function parseSecretOf(key: string): string {
  return key.slice('ghk_0123456789abcdef_'.length);
}
