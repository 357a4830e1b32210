// Users held in the store (users/store-users.ts) on a real redis-server:
// changes are compare-and-set (two operators changing one user lose neither
// change), every change is announced to every reader, a store never seeded is
// seeded once from the users file (if any), one that lost its users is marked
// so and never seeded again, and a record that does not read leaves
// only its own user out, logged by name and never by its contents.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { StoreUsers } from '../../src/users/store-users.js';
import { addUser, changeRole } from '../../src/users/users-changes.js';
import { readUsersFile } from '../../src/users/users-file.js';
import { Keyspace } from '../../src/store/keyspace.js';
import { createStore } from '../../src/store/create-store.js';
import type { Store } from '../../src/store/store.js';
import type { UserRecords } from '../../src/store/user-records.js';
import { TEST_SCRYPT_PARAMS, writeTestUsers } from '../helpers/gateway.js';
import { logSink } from '../helpers/log-sink.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { hashPassword } from '../../src/users/passwords.js';

const silent = pino({ level: 'silent' });

let redis: { url: string; close(): Promise<void> };
let raw: Redis;
let dir: string;
let prefix: string;
let stores: Store[] = [];
let hash: string;

beforeAll(async () => {
  redis = await testRedisUrl();
  raw = new Redis(redis.url);
  hash = await hashPassword('a-long-password-1', TEST_SCRYPT_PARAMS);
});

afterAll(async () => {
  raw?.disconnect();
  await redis?.close();
});

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-store-users-'));
  prefix = uniquePrefix();
});

afterEach(async () => {
  await Promise.all(stores.map((store) => store.close()));
  stores = [];
  await rm(dir, { recursive: true, force: true });
});

async function openStore(): Promise<Store> {
  const store = await createStore({ url: redis.url, keyPrefix: prefix }, silent);
  stores.push(store);
  return store;
}

function optionsOf(store: Store, logger = silent, seedFile?: string) {
  return { records: store.users!, onFeedResumed: (listener: () => void) => store.onRevocationFeedResumed(listener), logger, ...(seedFile && { seedFile }) };
}

/** A command's reader; with `seedFile`, a gateway's. */
function usersOf(store: Store, logger = silent, seedFile?: string): StoreUsers {
  return new StoreUsers(optionsOf(store, logger, seedFile));
}

describe('users held in the store', () => {
  it('seeds a store never seeded from the users file once, marks it, and never seeds over users it holds', async () => {
    const file = join(dir, 'users.yaml');
    await writeTestUsers(file, [
      { name: 'alice', password: 'a-long-password-1' },
      { name: 'bob', password: 'a-long-password-1' },
    ]);
    const users = usersOf(await openStore(), silent, file);
    expect(Object.keys((await users.read()).data.users).sort()).toStrictEqual(['alice', 'bob']);
    expect(users.seedReport).toStrictEqual({ outcome: 'seeded', users: 2 });
    expect(await raw.get(new Keyspace(prefix).usersMarker)).toBe('seeded');
    await users.change((data) => addUser(data, 'carol', hash));
    // A second start finds the store marked: the file is not read into it again.
    const again = usersOf(await openStore(), silent, file);
    expect(Object.keys((await again.read()).data.users).sort()).toStrictEqual(['alice', 'bob', 'carol']);
    expect(again.seedReport).toBeUndefined();
  });

  it('seeds nobody when the users file does not exist (none is needed), and a command never seeds', async () => {
    const command = usersOf(await openStore());
    expect((await command.read()).data.users).toStrictEqual({});
    expect(await raw.get(new Keyspace(prefix).usersMarker)).toBeNull();
    const gateway = usersOf(await openStore(), silent, join(dir, 'no-such-users.yaml'));
    expect((await gateway.read()).data.users).toStrictEqual({});
    expect(gateway.seedReport).toStrictEqual({ outcome: 'seeded', users: 0 });
    expect(await raw.get(new Keyspace(prefix).usersMarker)).toBe('seeded');
  });

  it('adopts the users an earlier version wrote without a marker, reading no file', async () => {
    const file = join(dir, 'users.yaml');
    await writeTestUsers(file, [{ name: 'stale', password: 'a-long-password-1' }]);
    await usersOf(await openStore()).change((data) => addUser(data, 'alice', hash));
    const users = usersOf(await openStore(), silent, file);
    expect(Object.keys((await users.read()).data.users)).toStrictEqual(['alice']);
    expect(users.seedReport?.outcome).toBe('adopted');
    expect(await raw.get(new Keyspace(prefix).usersMarker)).toBe('seeded');
  });

  it('marks a store it knew seeded and finds emptied as lost, raises the alarm once, and never seeds it again', async () => {
    const file = join(dir, 'users.yaml');
    await writeTestUsers(file, [{ name: 'alice', password: 'a-long-password-1' }]);
    const logs = logSink('info');
    const losses: unknown[] = [];
    const users = new StoreUsers({ ...optionsOf(await openStore(), logs.logger, file), onLossChange: (loss) => losses.push(loss) });
    await users.read();
    const keys = new Keyspace(prefix);
    await raw.del(keys.users, keys.usersMarker);
    expect((await users.read()).data.users).toStrictEqual({});
    expect(users.loss).toStrictEqual({ missing: [keys.users, keys.usersMarker] });
    expect(await raw.get(keys.usersMarker)).toBe('lost');
    await users.read();
    const alarms = logs.entries().filter((entry) => entry.level === 50);
    expect(alarms).toHaveLength(1);
    expect(alarms[0]).toMatchObject({ missing: [keys.users, keys.usersMarker] });
    expect(String(alarms[0]!.msg)).toMatch(/gatehouse users import/);
    // A new start with the same file: not seeded, still lost.
    const restarted = usersOf(await openStore(), silent, file);
    expect((await restarted.read()).data.users).toStrictEqual({});
    expect(restarted.seedReport).toBeUndefined();
    expect(restarted.loss).toStrictEqual({ missing: [keys.users, keys.usersMarker] });
    // An import puts users back and ends the alarm.
    await restarted.replaceAll({ users: { bob: (await readUsersFile(file)).users.alice! } });
    await users.read();
    expect(users.loss).toBeUndefined();
    expect(losses).toStrictEqual([{ missing: [keys.users, keys.usersMarker] }, undefined]);
    expect(logs.entries().some((entry) => entry.level === 30 && /back/.test(String(entry.msg)))).toBe(true);
  });

  it('loses neither of two changes to one user made from the same reading (compare-and-set, then read again)', async () => {
    const store = await openStore();
    const users = usersOf(store);
    await users.change((data) => changeRole(addUser(data, 'alice', hash), 'alice', 'reader', true));
    // Another host changes alice between this change's read and its write.
    let attempts = 0;
    const racing: UserRecords = {
      keys: store.users!.keys,
      all: () => store.users!.all(),
      state: () => store.users!.state(),
      seed: (records) => store.users!.seed(records),
      markLost: () => store.users!.markLost(),
      markSeeded: () => store.users!.markSeeded(),
      onUsersChanged: (listener) => store.users!.onUsersChanged(listener),
      change: async (changes) => {
        attempts += 1;
        if (attempts === 1) await usersOf(store).change((data) => changeRole(data, 'alice', 'writer', true));
        return store.users!.change(changes);
      },
    };
    const raced = new StoreUsers({ records: racing, onFeedResumed: () => () => {}, logger: silent });
    await raced.change((data) => changeRole(data, 'alice', 'auditor', true));
    expect(attempts).toBe(2);
    expect((await users.read()).data.users.alice!.roles).toStrictEqual(['auditor', 'reader', 'writer']);
  });

  it('tells every reader of a change, and the readers agree on its digest', async () => {
    const [one, two] = [usersOf(await openStore()), usersOf(await openStore())];
    const heard = new Promise<void>((resolve) => {
      const stop = two.watch(async () => {
        await stop();
        resolve();
      });
    });
    await one.change((data) => addUser(data, 'alice', hash));
    await heard;
    const [readOne, readTwo] = await Promise.all([one.read(), two.read()]);
    expect(readTwo.data.users.alice?.id).toBe(readOne.data.users.alice!.id);
    expect(readOne.digest).toBe(readTwo.digest);
  });

  it('leaves out only a user whose record does not read, naming the user and never the record', async () => {
    const users = usersOf(await openStore(), logSink('info').logger);
    const logs = logSink('info');
    const watched = new StoreUsers({ records: (await openStore()).users!, onFeedResumed: () => () => {}, logger: logs.logger });
    await users.change((data) => addUser(addUser(data, 'alice', hash), 'bob', hash));
    // A hand edit in Redis: bob's hash cut short, something secret-looking beside it.
    const bob = JSON.parse((await raw.hget(new Keyspace(prefix).users, 'bob'))!) as Record<string, unknown>;
    await raw.hset(new Keyspace(prefix).users, 'bob', JSON.stringify({ ...bob, passwordHash: 'scrypt$cut-short-secret-value' }));
    const { data } = await watched.read();
    expect(Object.keys(data.users)).toStrictEqual(['alice']);
    const warning = logs.entries().find((entry) => entry.username === 'bob');
    expect(warning).toMatchObject({ level: 40, problems: [expect.stringMatching(/^users\.bob\.passwordHash: /)] });
    expect(JSON.stringify(logs.entries())).not.toContain('cut-short-secret-value');
  });
});
