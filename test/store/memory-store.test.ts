import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { MemoryStore } from '../../src/store/memory-store.js';
import { sessionRecord } from './store-contract.js';

// The contract every store keeps: store-contract.test.ts.
describe('MemoryStore', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['Date', 'setInterval', 'clearInterval'] });
  });

  afterEach(() => {
    vi.useRealTimers();
  });

  it('is the memory kind', async () => {
    const store = new MemoryStore();
    expect(store.kind).toBe('memory');
    await store.close();
  });

  it('drops expired sessions nobody reads again, so memory stays bounded', async () => {
    // 101 sessions of one user: room for them past the default sessions-per-user cap.
    const store = new MemoryStore({ sweepIntervalMs: 50, maxSessionsPerUser: 1_000 });
    try {
      for (let i = 0; i < 100; i += 1) await store.createSession(sessionRecord({ expiresAt: Date.now() + 100 }));
      const lasting = sessionRecord();
      await store.createSession(lasting);
      expect(store.size).toBe(101);
      // The sweep at 50 ms finds them alive; the one at 100 ms, expired.
      vi.advanceTimersByTime(99);
      expect(store.size).toBe(101);
      vi.advanceTimersByTime(1);
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
    vi.advanceTimersByTime(250);
    expect(store.size).toBe(1);
  });
});
