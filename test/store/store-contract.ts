// What a store under the contract test is (store-contract.test.ts runs each
// concern's contract, in contract/, on the memory store and on Redis), and the
// records the contract and other store tests make.
//
// Nothing here waits on the clock: time moves by `advanceClock` (Date is
// faked for every test), and "no announcement came" is checked once a later
// one has come back (see echoesHeard).
import { randomUUID } from 'node:crypto';
import { expect, vi } from 'vitest';
import type { RequestRecord, SessionRecord, Store } from '../../src/store/store.js';

export interface StoreUnderTest {
  store: Store;
  /** A second instance on the same backend, as another gateway would have (shared stores only). */
  peer?: Store;
  /** Whether the store hears its own announcements back (a shared store does, a moment after it made them). */
  echoesOwnAnnouncements: boolean;
  /** Moves the store's time forward by `ms` (see test/helpers/store-clock.ts). */
  advanceClock(ms: number): Promise<void>;
  cleanup(): Promise<void>;
}

/**
 * Resolves once every announcement the store made so far has come back to
 * it. A store hears both channels on one connection, in the order they were
 * published, so once the echo of a marker made now is heard, every earlier
 * echo has been. The marker goes on the other channel than the listeners
 * under test: a status change to settle revocations, a revocation to settle
 * status changes.
 */
export async function echoesHeard(subject: StoreUnderTest, settle: 'revocations' | 'status changes'): Promise<void> {
  if (!subject.echoesOwnAnnouncements) return;
  const { store } = subject;
  let heard = 0;
  if (settle === 'revocations') {
    const marker = requestRecord();
    const off = store.onRequestStatusChanged(({ id }) => void (id === marker.id && (heard += 1)));
    await store.createRequest(marker, RETENTION_MS);
    await store.transitionRequest(marker.id, 'completed', RETENTION_MS);
    await vi.waitFor(() => expect(heard).toBe(2));
    off();
  } else {
    const marker = sessionRecord();
    const off = store.onSessionRevoked((sid) => void (sid === marker.sid && (heard += 1)));
    await store.createSession(marker);
    await store.revokeSession(marker.sid);
    await vi.waitFor(() => expect(heard).toBe(2));
    off();
  }
}

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

/** Long enough that nothing expires during a test that does not wait for it. */
export const RETENTION_MS = 60_000;

export function requestRecord(overrides: Partial<RequestRecord> = {}): RequestRecord {
  const now = Date.now();
  return {
    id: randomUUID(),
    status: 'pending',
    sub: 'u-0001',
    route: 'orders',
    upstream: 'http://127.0.0.1:9001',
    createdAt: now,
    updatedAt: now,
    ...overrides,
  };
}
