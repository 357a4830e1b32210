// What every store must do, concern by concern (contract/), run on the memory
// store and on a real Redis, so the store used in development cannot drift
// from the one in production. Time moves by the subject's advanceClock (Date
// is faked for every test); a Redis subject has a peer on the same keys, as
// another gateway would.
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { createStore } from '../../src/store/create-store.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { advanceStoreClock } from '../helpers/store-clock.js';
import { dpopContract } from './contract/dpop.js';
import { limitsContract } from './contract/limits.js';
import { providerSessionsContract } from './contract/provider-sessions.js';
import { requestRecordsContract } from './contract/request-records.js';
import { sessionsContract } from './contract/sessions.js';
import { sharedKeysContract } from './contract/shared-keys.js';
import type { StoreUnderTest } from './store-contract.js';

const silent = pino({ level: 'silent' });

let redis: { url: string; close(): Promise<void> };

beforeAll(async () => {
  redis = await testRedisUrl();
});

afterAll(async () => {
  await redis?.close();
});

const SUBJECTS: Array<{ name: string; open(): Promise<StoreUnderTest> }> = [
  {
    name: 'memory',
    open: async () => {
      const store = new MemoryStore();
      return { store, echoesOwnAnnouncements: false, advanceClock: (ms) => advanceStoreClock(ms), cleanup: () => store.close() };
    },
  },
  {
    name: 'Redis',
    open: async () => {
      const config = { url: redis.url, keyPrefix: uniquePrefix() };
      const store = await createStore(config, silent);
      const peer = await createStore(config, silent);
      const raw = new Redis(redis.url);
      return {
        store,
        peer,
        echoesOwnAnnouncements: true,
        advanceClock: (ms) => advanceStoreClock(ms, { client: raw, keyPrefix: config.keyPrefix }),
        cleanup: async () => {
          await Promise.all([store.close(), peer.close(), raw.quit()]);
        },
      };
    },
  },
];

describe.each(SUBJECTS)('the $name store', ({ open }) => {
  // One object for the whole run, refilled before each test: the contracts read it when their tests run.
  const subject = {} as StoreUnderTest;

  beforeEach(async () => {
    Object.assign(subject, await open());
    vi.useFakeTimers({ toFake: ['Date'] });
  });

  afterEach(async () => {
    vi.useRealTimers();
    await subject.cleanup();
  });

  describe('lifecycle', () => {
    it('answers ping', async () => {
      await expect(subject.store.ping()).resolves.toBeUndefined();
    });
  });

  describe('sessions', () => sessionsContract(subject));
  describe('provider sessions', () => providerSessionsContract(subject));
  describe('DPoP', () => dpopContract(subject));
  describe('asynchronous request records', () => requestRecordsContract(subject));
  describe('shared keys', () => sharedKeysContract(subject));
  describe('rate limiter counters', () => limitsContract(subject));
});
