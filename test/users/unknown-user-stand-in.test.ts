// Issue 22, item 1: random usernames bought the whole hashing capacity,
// because every unknown username cost a full scrypt (to take as long as a
// wrong password). Now it costs a wait as long as a real check, in the same
// hashing-queue turn, and only one in sixteen is a real scrypt (which keeps
// the wait's durations current). The equal work itself is in equal-work.test.ts.
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LocalIdentityProvider } from '../../src/users/local-provider.js';
import { hashPassword, verifyPassword } from '../../src/users/passwords.js';
import { addUser } from '../../src/users/users-changes.js';
import { emptyUsersFile, writeUsersFile } from '../../src/users/users-file.js';
import { logSink } from '../helpers/log-sink.js';

let dir: string;
let provider: LocalIdentityProvider;
let scrypts = 0;
const turns: string[] = [];

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-stand-in-'));
  const usersFile = join(dir, 'users.yaml');
  await writeUsersFile(usersFile, addUser(emptyUsersFile(), 'alice', await hashPassword('alice-password-1')));
  provider = await LocalIdentityProvider.open({ provider: 'local', usersFile, watch: false }, logSink().logger, {
    verifyPassword: (password, encoded) => {
      scrypts += 1;
      return verifyPassword(password, encoded);
    },
    // A queue that runs at once and notes whose turn each check took.
    hashing: {
      run: (address, work) => {
        turns.push(address);
        return work();
      },
    },
  });
});
afterAll(async () => {
  await provider?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('issue 22: unknown usernames cost no scrypt', () => {
  it('32 logins with random usernames compute 2 scrypts (one in sixteen), each refused in its own queue turn', async () => {
    scrypts = 0;
    turns.length = 0;
    const logins = Array.from({ length: 32 }, () =>
      provider.authenticate(`nobody-${randomBytes(6).toString('hex')}`, 'x'.repeat(1024), { clientAddress: '203.0.113.5' }),
    );
    expect(await Promise.all(logins)).toEqual(Array(32).fill(null));
    expect(scrypts).toBe(2);
    expect(turns).toEqual(Array(32).fill('203.0.113.5'));
  });

  it('a known user still costs one real scrypt per login, in its queue turn', async () => {
    scrypts = 0;
    turns.length = 0;
    expect(await provider.authenticate('alice', 'wrong', { clientAddress: '198.51.100.7' })).toBeNull();
    expect(await provider.authenticate('alice', 'alice-password-1', { clientAddress: '198.51.100.7' })).not.toBeNull();
    expect(scrypts).toBe(2);
    expect(turns).toEqual(['198.51.100.7', '198.51.100.7']);
  });
});
