// What every Store must do, run against each implementation, so the memory
// store used in development cannot drift from the Redis store in production.
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { SessionRecord, Store } from '../../src/store/store.js';

export interface StoreUnderTest {
  store: Store;
  /** A second instance on the same backend, as another gateway would have (shared stores only). */
  peer?: Store;
  cleanup(): Promise<void>;
}

/** Long enough for an echo of our own announcement to arrive, if one were coming. */
const SETTLE_MS = 300;

export function sessionRecord(overrides: Partial<SessionRecord> = {}): SessionRecord {
  const now = Date.now();
  return {
    sid: randomUUID(),
    sub: 'u-0001',
    username: 'alice',
    method: 'pwd',
    createdAt: now,
    expiresAt: now + 60_000,
    ...overrides,
  };
}

export function describeStoreContract(name: string, makeStore: () => Promise<StoreUnderTest>): void {
  describe(`${name}: Store contract`, () => {
    let subject: StoreUnderTest;

    beforeEach(async () => {
      subject = await makeStore();
    });

    afterEach(async () => {
      await subject?.cleanup();
    });

    it('returns a created session as it was given', async () => {
      const { store } = subject;
      const password = sessionRecord();
      const apiKey = sessionRecord({ method: 'api_key', apiKeyId: 'k-42', username: 'ci-bot', sub: 'u-0002' });
      await store.createSession(password);
      await store.createSession(apiKey);
      expect(await store.getSession(password.sid)).toStrictEqual(password);
      expect(await store.getSession(apiKey.sid)).toStrictEqual(apiKey);
    });

    it('keeps its own copy: changing the given object later changes nothing', async () => {
      const { store } = subject;
      const session = sessionRecord();
      const original = { ...session };
      await store.createSession(session);
      session.username = 'mallory';
      expect(await store.getSession(session.sid)).toStrictEqual(original);
    });

    it('answers null for an unknown sid', async () => {
      expect(await subject.store.getSession(randomUUID())).toBeNull();
    });

    it('forgets a session at its expiresAt', async () => {
      const { store } = subject;
      const session = sessionRecord({ expiresAt: Date.now() + 300 });
      await store.createSession(session);
      expect(await store.getSession(session.sid)).toStrictEqual(session);
      await sleep(session.expiresAt - Date.now() + 50);
      expect(await store.getSession(session.sid)).toBeNull();
      expect(await store.revokeSession(session.sid)).toBe(false);
    });

    it('never shows a session that was already expired when created', async () => {
      const { store } = subject;
      const session = sessionRecord({ expiresAt: Date.now() - 1 });
      await store.createSession(session);
      expect(await store.getSession(session.sid)).toBeNull();
      expect(await store.revokeSession(session.sid)).toBe(false);
    });

    it('revokes once: true for the active session, false afterwards and for an unknown sid', async () => {
      const { store } = subject;
      const session = sessionRecord();
      await store.createSession(session);
      expect(await store.revokeSession(session.sid)).toBe(true);
      expect(await store.revokeSession(session.sid)).toBe(false);
      expect(await store.revokeSession(randomUUID())).toBe(false);
    });

    it('answers null for a revoked session', async () => {
      const { store } = subject;
      const session = sessionRecord();
      await store.createSession(session);
      await store.revokeSession(session.sid);
      expect(await store.getSession(session.sid)).toBeNull();
    });

    it('has told its own listeners by the time revokeSession resolves', async () => {
      const { store } = subject;
      const heard: string[] = [];
      store.onSessionRevoked((sid) => heard.push(sid));
      const session = sessionRecord();
      await store.createSession(session);
      await store.revokeSession(session.sid);
      expect(heard).toContain(session.sid);
      // A shared store may also deliver its own announcement's echo: the same sid again, nothing else.
      await sleep(SETTLE_MS);
      expect(new Set(heard)).toStrictEqual(new Set([session.sid]));
    });

    it('tells no listener when a revocation ended nothing', async () => {
      const { store } = subject;
      const listener = vi.fn();
      store.onSessionRevoked(listener);
      await store.revokeSession(randomUUID());
      await sleep(SETTLE_MS);
      expect(listener).not.toHaveBeenCalled();
    });

    it('stops calling a listener once it is unsubscribed, and only that one', async () => {
      const { store } = subject;
      const removed = vi.fn();
      const kept = vi.fn();
      const unsubscribe = store.onSessionRevoked(removed);
      store.onSessionRevoked(kept);
      unsubscribe();
      const session = sessionRecord();
      await store.createSession(session);
      await store.revokeSession(session.sid);
      await sleep(SETTLE_MS);
      expect(removed).not.toHaveBeenCalled();
      expect(kept).toHaveBeenCalledWith(session.sid);
    });

    it('still revokes and tells the other listeners when one listener throws', async () => {
      const { store } = subject;
      store.onSessionRevoked(() => {
        throw new Error('listener bug');
      });
      const kept = vi.fn();
      store.onSessionRevoked(kept);
      const session = sessionRecord();
      await store.createSession(session);
      await expect(store.revokeSession(session.sid)).resolves.toBe(true);
      expect(kept).toHaveBeenCalledWith(session.sid);
    });

    it('shares sessions and revocations with a peer instance (stores shared between instances)', async () => {
      const { store, peer } = subject;
      if (!peer) {
        // Only the in-process store has no peer: it is by design not shared.
        expect(store.kind).toBe('memory');
        return;
      }
      const session = sessionRecord();
      await store.createSession(session);
      expect(await peer.getSession(session.sid)).toStrictEqual(session);

      const heardByPeer: string[] = [];
      peer.onSessionRevoked((sid) => heardByPeer.push(sid));
      await store.revokeSession(session.sid);
      await vi.waitFor(() => expect(heardByPeer).toContain(session.sid), { timeout: 1_000, interval: 10 });
      expect(await peer.getSession(session.sid)).toBeNull();
      expect(await peer.revokeSession(session.sid)).toBe(false);
    });

    it('answers ping', async () => {
      await expect(subject.store.ping()).resolves.toBeUndefined();
    });

    it('keeps every one of many sessions created at once', async () => {
      const { store } = subject;
      const sessions = Array.from({ length: 250 }, (_, i) => sessionRecord({ sub: `u-${i}`, username: `user${i}` }));
      await Promise.all(sessions.map((session) => store.createSession(session)));
      const read = await Promise.all(sessions.map((session) => store.getSession(session.sid)));
      expect(read).toStrictEqual(sessions);
    });
  });
}
