import { setTimeout as sleep } from 'node:timers/promises';
import { describe, expect, it } from 'vitest';
import { MemoryStore } from '../../src/store/memory-store.js';
import { describeStoreContract, sessionRecord } from './store-contract.js';

describeStoreContract('MemoryStore', async () => {
  const store = new MemoryStore();
  return { store, cleanup: () => store.close() };
});

describe('MemoryStore', () => {
  it('is the memory kind', async () => {
    const store = new MemoryStore();
    expect(store.kind).toBe('memory');
    await store.close();
  });

  it('drops expired sessions nobody reads again, so memory stays bounded', async () => {
    const store = new MemoryStore({ sweepIntervalMs: 50 });
    try {
      const now = Date.now();
      for (let i = 0; i < 100; i += 1) await store.createSession(sessionRecord({ expiresAt: now + 100 }));
      const lasting = sessionRecord();
      await store.createSession(lasting);
      expect(store.size).toBe(101);
      await sleep(300);
      expect(store.size).toBe(1);
      expect(await store.getSession(lasting.sid)).toStrictEqual(lasting);
    } finally {
      await store.close();
    }
  });

  it('stops sweeping once closed', async () => {
    const store = new MemoryStore({ sweepIntervalMs: 50 });
    await store.createSession(sessionRecord({ expiresAt: Date.now() + 60 }));
    await store.close();
    await sleep(250);
    expect(store.size).toBe(1);
  });
});
