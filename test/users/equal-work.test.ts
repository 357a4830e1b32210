// Attack 8: an API key with an existing key id and a wrong secret was refused
// after one digest comparison (~1.5 ms), any other wrong key after a scrypt
// (~80 ms), which told which key ids exist. The work each refusal does is
// counted here, not timed (the timing is in bench/wrong-credentials.ts): the
// password hasher and the digest comparator are wrapped, and every kind of
// wrong credential must call each exactly as often, with the same cost.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import * as apiKeys from '../../src/users/api-keys.js';
import { LocalIdentityProvider } from '../../src/users/local-provider.js';
import * as passwords from '../../src/users/passwords.js';
import * as standIn from '../../src/users/scrypt-stand-in.js';
import { emptyUsersFile, writeUsersFile } from '../../src/users/users-file.js';
import { addApiKey, addUser, revokeApiKey, setDisabled } from '../../src/users/users-changes.js';
import { logSink } from '../helpers/log-sink.js';

vi.mock('../../src/users/passwords.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/users/passwords.js')>();
  return { ...real, verifyPassword: vi.fn(real.verifyPassword) };
});
// An unknown username waits as long as a default-cost scrypt instead of computing one (scrypt-stand-in.ts).
vi.mock('../../src/users/scrypt-stand-in.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/users/scrypt-stand-in.js')>();
  return { ...real, standInWait: vi.fn(real.standInWait) };
});
vi.mock('../../src/users/api-keys.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../../src/users/api-keys.js')>();
  return { ...real, apiKeySecretMatches: vi.fn(real.apiKeySecretMatches) };
});

const verifyPassword = vi.mocked(passwords.verifyPassword);
const apiKeySecretMatches = vi.mocked(apiKeys.apiKeySecretMatches);
const standInWait = vi.mocked(standIn.standInWait);

let dir: string;
let provider: LocalIdentityProvider;
const keys = { alice: apiKeys.generateApiKey(), revoked: apiKeys.generateApiKey(), mallory: apiKeys.generateApiKey() };

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-equal-work-'));
  const usersFile = join(dir, 'users.yaml');
  // The default cost, as in production: the stand-in hash of unknown users has it too.
  let data = emptyUsersFile();
  for (const name of ['alice', 'bob', 'mallory']) data = addUser(data, name, await passwords.hashPassword(`${name}-password-1`));
  data = addApiKey(data, 'alice', { keyId: keys.alice.keyId, hash: keys.alice.hash });
  data = addApiKey(data, 'alice', { keyId: keys.revoked.keyId, hash: keys.revoked.hash });
  data = revokeApiKey(data, keys.revoked.keyId);
  data = addApiKey(data, 'mallory', { keyId: keys.mallory.keyId, hash: keys.mallory.hash });
  data = setDisabled(data, 'mallory', true);
  await writeUsersFile(usersFile, data);
  provider = await LocalIdentityProvider.open({ provider: 'local', usersFile, watch: false }, logSink().logger);
});
afterAll(async () => {
  await provider?.close();
  await rm(dir, { recursive: true, force: true });
});
beforeEach(() => {
  verifyPassword.mockClear();
  apiKeySecretMatches.mockClear();
  standInWait.mockClear();
});

const randomSecret = () => randomBytes(32).toString('base64url');

/**
 * The work one login did: the scrypt verifications, each at its cost, and the
 * stand-ins of an unknown username, which take a default-cost check's time
 * (they are listed as one); how many digest comparisons.
 */
async function workOf(username: string, secret: string): Promise<{ accepted: boolean; scrypt: string[]; digests: number }> {
  const accepted = (await provider.authenticate(username, secret)) !== null;
  return {
    accepted,
    // The parameters of each hash verified against: the cost of that scrypt.
    scrypt: [
      ...verifyPassword.mock.calls.map(([, encoded]) => encoded.slice(0, encoded.indexOf('$', 'scrypt$'.length))),
      ...standInWait.mock.calls.map(() => 'scrypt$ln=15,r=8,p=1'),
    ],
    digests: apiKeySecretMatches.mock.calls.length,
  };
}

const ONE_SCRYPT_AT_DEFAULT_COST = ['scrypt$ln=15,r=8,p=1'];

describe('attack 8: every wrong credential costs the same work', () => {
  it.each([
    ['an existing key id with a wrong secret', 'alice', () => `ghk_${keys.alice.keyId}_${randomSecret()}`],
    ['an unknown key id', 'alice', () => `ghk_${randomBytes(8).toString('hex')}_${randomSecret()}`],
    ['an unknown key id for an unknown user', 'nobody', () => `ghk_${randomBytes(8).toString('hex')}_${randomSecret()}`],
    ['an existing key id with a wrong secret for an unknown user', 'nobody', () => `ghk_${keys.alice.keyId}_${randomSecret()}`],
    ['a valid key given with another username', 'bob', () => keys.alice.key],
    ['a revoked key', 'alice', () => keys.revoked.key],
    ['a valid key of a disabled user', 'mallory', () => keys.mallory.key],
    ['a key-like secret of the wrong shape', 'alice', () => `ghk_${keys.alice.keyId}_short`],
    ['a wrong password', 'alice', () => 'not-the-password'],
    ['an unknown user', 'nobody', () => 'alice-password-1'],
    ['the right password of a disabled user', 'mallory', () => 'mallory-password-1'],
  ])('%s: one digest comparison and one scrypt at the default cost', async (_kind, username, secret) => {
    expect(await workOf(username, secret())).toEqual({ accepted: false, scrypt: ONE_SCRYPT_AT_DEFAULT_COST, digests: 1 });
  });

  it('a valid key skips scrypt (its answer says it was valid anyway); a valid password does the same work as a wrong one', async () => {
    expect(await workOf('alice', keys.alice.key)).toEqual({ accepted: true, scrypt: [], digests: 1 });
    apiKeySecretMatches.mockClear();
    expect(await workOf('alice', 'alice-password-1')).toEqual({ accepted: true, scrypt: ONE_SCRYPT_AT_DEFAULT_COST, digests: 1 });
  });
});
