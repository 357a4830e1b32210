// What every Store must do, run against each implementation, so the memory
// store used in development cannot drift from the Redis store in production.
//
// Nothing here waits on the clock: time moves by `advanceClock` (Date is
// faked for every test), and "no announcement came" is checked once a later
// one has come back (see echoesHeard).
import { randomUUID } from 'node:crypto';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import type { RequestRecord, RequestStatusChange, SessionRecord, Store, TransitionOutcome } from '../../src/store/store.js';

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
async function echoesHeard(subject: StoreUnderTest, settle: 'revocations' | 'status changes'): Promise<void> {
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
const RETENTION_MS = 60_000;

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

export function describeStoreContract(name: string, makeStore: () => Promise<StoreUnderTest>): void {
  describe(`${name}: Store contract`, () => {
    let subject: StoreUnderTest;

    beforeEach(async () => {
      subject = await makeStore();
      vi.useFakeTimers({ toFake: ['Date'] });
    });

    afterEach(async () => {
      vi.useRealTimers();
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

    it('keeps every session field exact: fractions, odd strings, an empty apiKeyId apart from an absent one', async () => {
      const { store } = subject;
      const now = Date.now();
      const odd = sessionRecord({
        sub: 'ü-"quoted"\\back\u0000nul\nline 𝄞',
        username: 'expiresAt',
        method: 'api_key',
        apiKeyId: '',
        createdAt: 0.1 + 0.2,
        expiresAt: now + 60_000.5,
      });
      const plain = sessionRecord({ createdAt: now - 1e-7 });
      await store.createSession(odd);
      await store.createSession(plain);
      expect(await store.getSession(odd.sid)).toStrictEqual(odd);
      const readPlain = await store.getSession(plain.sid);
      expect(readPlain).toStrictEqual(plain);
      expect(readPlain).not.toHaveProperty('apiKeyId');
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
      const session = sessionRecord({ expiresAt: Date.now() + 60_000 });
      await store.createSession(session);
      await subject.advanceClock(59_000);
      expect(await store.getSession(session.sid)).toStrictEqual(session);
      await subject.advanceClock(1_000);
      expect(await store.getSession(session.sid)).toBeNull();
      expect(await store.revokeSession(session.sid)).toBe(false);
    });

    it('ends nothing when revoking a session its clock has seen expire, and announces nothing', async () => {
      const { store } = subject;
      const listener = vi.fn();
      store.onSessionRevoked(listener);
      const session = sessionRecord({ expiresAt: Date.now() + 60_000 });
      await store.createSession(session);
      // The process's clock only: a Redis whose own clock runs behind still holds the key.
      vi.setSystemTime(session.expiresAt);
      expect(await store.revokeSession(session.sid)).toBe(false);
      await echoesHeard(subject, 'revocations');
      expect(listener).not.toHaveBeenCalled();
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
      await echoesHeard(subject, 'revocations');
      expect(new Set(heard)).toStrictEqual(new Set([session.sid]));
    });

    it('tells no listener when a revocation ended nothing', async () => {
      const { store } = subject;
      const listener = vi.fn();
      store.onSessionRevoked(listener);
      await store.revokeSession(randomUUID());
      await echoesHeard(subject, 'revocations');
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
      await echoesHeard(subject, 'revocations');
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

    it("lists a user's live sessions, oldest first, without ended ones or other users'", async () => {
      const { store } = subject;
      const sub = `u-${randomUUID()}`;
      const first = sessionRecord({ sub });
      await store.createSession(first);
      await subject.advanceClock(10);
      const second = sessionRecord({ sub, method: 'api_key', apiKeyId: '0123456789abcdef' });
      await store.createSession(second);
      const ended = sessionRecord({ sub });
      await store.createSession(ended);
      await store.revokeSession(ended.sid);
      await store.createSession(sessionRecord({ sub: `other-${sub}` }));
      expect(await store.listSessions(sub)).toStrictEqual([first, second]);
      await subject.advanceClock(60_001);
      expect(await store.listSessions(sub)).toStrictEqual([]);
      expect(await store.listSessions('nobody')).toStrictEqual([]);
    });

    describe('provider sessions ended here', () => {
      it('ends a provider session until its time, announced to its own listeners by the time it resolves', async () => {
        const { store } = subject;
        const heard: string[] = [];
        store.onSessionRevoked((sid) => heard.push(sid));
        expect(await store.providerSessionEnded('kc-session-1')).toBe(false);
        await store.endProviderSession('kc-session-1', Date.now() + 60_000);
        expect(heard).toContain('kc-session-1');
        expect(await store.providerSessionEnded('kc-session-1')).toBe(true);
        expect(await store.providerSessionEnded('kc-session-2')).toBe(false);
        await subject.advanceClock(60_001);
        expect(await store.providerSessionEnded('kc-session-1')).toBe(false);
      });

      it('keeps nothing for a time already over', async () => {
        await subject.store.endProviderSession('kc-over', Date.now() - 1);
        expect(await subject.store.providerSessionEnded('kc-over')).toBe(false);
      });

      it('ends it on a peer instance too, and tells the peer', async () => {
        const { store, peer } = subject;
        if (!peer) {
          expect(store.kind).toBe('memory');
          return;
        }
        const heardByPeer: string[] = [];
        peer.onSessionRevoked((sid) => heardByPeer.push(sid));
        await store.endProviderSession('kc-shared', Date.now() + 60_000);
        await vi.waitFor(() => expect(heardByPeer).toContain('kc-shared'), { timeout: 1_000, interval: 10 });
        expect(await peer.providerSessionEnded('kc-shared')).toBe(true);
      });
    });

    // Two replay memories with one contract: a provider's back-channel logout tokens and DPoP proofs (RFC 9449 11.1).
    const replayMemories = [
      { what: 'back-channel logout token ids', remember: (store: Store, id: string, ttlMs: number) => store.rememberLogoutToken(id, ttlMs) },
      { what: 'DPoP proof ids', remember: (store: Store, id: string, ttlMs: number) => store.rememberDpopProof(id, ttlMs) },
    ];
    for (const { what, remember } of replayMemories) {
      describe(what, () => {
        it('remembers an id for its time: true the first time, false for a replay, true again once forgotten', async () => {
          const { store } = subject;
          expect(await remember(store, 'https://op.example|jti-1', 60_000)).toBe(true);
          expect(await remember(store, 'https://op.example|jti-1', 60_000)).toBe(false);
          expect(await remember(store, 'https://op.example|jti-2', 60_000)).toBe(true);
          await subject.advanceClock(60_001);
          expect(await remember(store, 'https://op.example|jti-1', 60_000)).toBe(true);
        });

        it('lets exactly one of concurrent uses of one id win', async () => {
          const answers = await Promise.all(Array.from({ length: 8 }, () => remember(subject.store, 'op|jti-race', 60_000)));
          expect(answers.filter(Boolean)).toHaveLength(1);
        });

        it('is a replay on a peer instance too', async () => {
          const { store, peer } = subject;
          if (!peer) {
            expect(store.kind).toBe('memory');
            return;
          }
          expect(await remember(store, 'op|jti-shared', 60_000)).toBe(true);
          expect(await remember(peer, 'op|jti-shared', 60_000)).toBe(false);
        });
      });
    }

    describe('DPoP server nonces', () => {
      it("keeps the first candidate of an epoch: later calls, a peer's too, get that one", async () => {
        const { store, peer } = subject;
        expect(await store.shareDpopNonce(7, 'first', 60_000)).toBe('first');
        expect(await store.shareDpopNonce(7, 'second', 60_000)).toBe('first');
        expect(await store.shareDpopNonce(8, 'next', 60_000)).toBe('next');
        if (peer) expect(await peer.shareDpopNonce(7, 'peer', 60_000)).toBe('first');
      });

      it('lets one of concurrent candidates win, and every caller gets it', async () => {
        const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => subject.store.shareDpopNonce(9, `candidate-${i}`, 60_000)));
        expect(new Set(answers).size).toBe(1);
      });
    });

    it('answers ping', async () => {
      await expect(subject.store.ping()).resolves.toBeUndefined();
    });

    describe('request records', () => {
      it('returns a created record as it was given, with and without a statusUrl', async () => {
        const { store } = subject;
        const plain = requestRecord();
        const withStatusUrl = requestRecord({ statusUrl: 'https://orders.internal/v1/status/42?full=true' });
        expect(await store.createRequest(plain, RETENTION_MS)).toBe(true);
        expect(await store.createRequest(withStatusUrl, RETENTION_MS)).toBe(true);
        const readPlain = await store.getRequest(plain.id);
        expect(readPlain).toStrictEqual(plain);
        expect(readPlain).not.toHaveProperty('statusUrl');
        expect(await store.getRequest(withStatusUrl.id)).toStrictEqual(withStatusUrl);
      });

      it('keeps its own copy: changing the given object later changes nothing', async () => {
        const { store } = subject;
        const record = requestRecord();
        const original = { ...record };
        await store.createRequest(record, RETENTION_MS);
        record.status = 'failed';
        expect(await store.getRequest(record.id)).toStrictEqual(original);
      });

      it('refuses a second record with the same id and keeps the first', async () => {
        const { store } = subject;
        const first = requestRecord();
        const second = requestRecord({ id: first.id, sub: 'u-0666', route: 'other', statusUrl: 'https://evil.example/' });
        expect(await store.createRequest(first, RETENTION_MS)).toBe(true);
        expect(await store.createRequest(second, RETENTION_MS)).toBe(false);
        expect(await store.getRequest(first.id)).toStrictEqual(first);
      });

      it('answers null for an unknown id', async () => {
        expect(await subject.store.getRequest(randomUUID())).toBeNull();
      });

      it('forgets a record after its retention, and then takes the id again', async () => {
        const { store } = subject;
        const record = requestRecord();
        expect(await store.createRequest(record, 60_000)).toBe(true);
        await subject.advanceClock(59_000);
        expect(await store.getRequest(record.id)).toStrictEqual(record);
        await subject.advanceClock(1_000);
        expect(await store.getRequest(record.id)).toBeNull();
        expect(await store.transitionRequest(record.id, 'completed', RETENTION_MS)).toBe('not_found');
        expect(await store.createRequest(record, RETENTION_MS)).toBe(true);
      });

      it('applies pending → completed once, repeats idempotently, refuses the other terminal state', async () => {
        const { store } = subject;
        const record = requestRecord({ statusUrl: 'https://orders.internal/status/1' });
        await store.createRequest(record, RETENTION_MS);
        const at = record.createdAt + 1_234;
        expect(await store.transitionRequest(record.id, 'completed', RETENTION_MS, at)).toBe('applied');
        const completed = { ...record, status: 'completed', updatedAt: at };
        expect(await store.getRequest(record.id)).toStrictEqual(completed);

        expect(await store.transitionRequest(record.id, 'completed', RETENTION_MS, at + 1)).toBe('already_applied');
        expect(await store.transitionRequest(record.id, 'failed', RETENTION_MS, at + 2)).toBe('conflict');
        // Neither the repeat nor the refusal changed anything, updatedAt included.
        expect(await store.getRequest(record.id)).toStrictEqual(completed);
      });

      it('applies pending → failed likewise', async () => {
        const { store } = subject;
        const record = requestRecord();
        await store.createRequest(record, RETENTION_MS);
        const before = Date.now();
        // Without `now`, the transition is stamped with the current time.
        expect(await store.transitionRequest(record.id, 'failed', RETENTION_MS)).toBe('applied');
        const after = Date.now();
        const failed = await store.getRequest(record.id);
        expect(failed).toStrictEqual({ ...record, status: 'failed', updatedAt: expect.any(Number) });
        expect(failed!.updatedAt).toBeGreaterThanOrEqual(before);
        expect(failed!.updatedAt).toBeLessThanOrEqual(after);
        expect(await store.transitionRequest(record.id, 'failed', RETENTION_MS)).toBe('already_applied');
        expect(await store.transitionRequest(record.id, 'completed', RETENTION_MS)).toBe('conflict');
        expect((await store.getRequest(record.id))?.status).toBe('failed');
      });

      it('answers not_found for a transition of an unknown id, and creates nothing', async () => {
        const { store } = subject;
        const id = randomUUID();
        expect(await store.transitionRequest(id, 'completed', RETENTION_MS)).toBe('not_found');
        expect(await store.getRequest(id)).toBeNull();
      });

      it('keeps every field exact through a transition: large integers, fractions, odd strings, empty and absent statusUrl', async () => {
        const { store } = subject;
        // 16 significant digits: an encoding that rounds (cjson's 14 digits, say) would change them.
        const createdAt = Number.MAX_SAFE_INTEGER - 10;
        const at = Number.MAX_SAFE_INTEGER - 2;
        const odd = requestRecord({
          sub: 'ü-"quoted"\\back\u0001/slash é 𝄞',
          route: '',
          upstream: 'http://[::1]:8080/a/b?c=d&e=f',
          statusUrl: 'https://up.example/status/{id}/ü?x="1"',
          createdAt,
          updatedAt: createdAt,
        });
        const plain = requestRecord({ createdAt: 1_723_456_789_012, updatedAt: 1_723_456_789_012 });
        const fractional = requestRecord({ statusUrl: '', createdAt: 0.1 + 0.2, updatedAt: 1e21 });
        for (const record of [odd, plain, fractional]) {
          await store.createRequest(record, RETENTION_MS);
          expect(await store.transitionRequest(record.id, 'completed', RETENTION_MS, at)).toBe('applied');
          const read = await store.getRequest(record.id);
          expect(read).toStrictEqual({ ...record, status: 'completed', updatedAt: at });
        }
        expect(await store.getRequest(plain.id)).not.toHaveProperty('statusUrl');
        expect((await store.getRequest(fractional.id))?.statusUrl).toBe('');
      });

      it('keeps a record for retentionMs from an applied transition, and only an applied one extends it', async () => {
        const { store } = subject;
        const record = requestRecord();
        await store.createRequest(record, 40_000);
        await subject.advanceClock(20_000);
        expect(await store.transitionRequest(record.id, 'completed', 80_000)).toBe('applied');
        // A repeat or a refusal must not extend it again.
        await subject.advanceClock(30_000);
        expect(await store.transitionRequest(record.id, 'completed', 600_000)).toBe('already_applied');
        expect(await store.transitionRequest(record.id, 'failed', 600_000)).toBe('conflict');
        // Past the created record's 40 s: still there, by the transition's 80 s.
        await subject.advanceClock(20_000);
        expect((await store.getRequest(record.id))?.status).toBe('completed');
        // Past 80 s from the transition: gone.
        await subject.advanceClock(31_000);
        expect(await store.getRequest(record.id)).toBeNull();
      });

      it('has told its own listeners of an applied transition by the time it resolves', async () => {
        const { store } = subject;
        const heard: RequestStatusChange[] = [];
        store.onRequestStatusChanged((change) => heard.push(change));
        const record = requestRecord();
        await store.createRequest(record, RETENTION_MS);
        await store.transitionRequest(record.id, 'failed', RETENTION_MS);
        expect(heard).toContainEqual({ id: record.id, status: 'failed' });
        // A shared store may also deliver its own announcement's echo: the same change again, nothing else.
        await echoesHeard(subject, 'status changes');
        expect(heard.length).toBeGreaterThanOrEqual(1);
        for (const change of heard) expect(change).toStrictEqual({ id: record.id, status: 'failed' });
      });

      it('tells no listener of a transition that was not applied, here or on a peer', async () => {
        const { store, peer } = subject;
        const record = requestRecord();
        await store.createRequest(record, RETENTION_MS);
        await store.transitionRequest(record.id, 'completed', RETENTION_MS);
        // The applied one's echo, if any, comes and goes before anyone listens.
        await echoesHeard(subject, 'status changes');
        const heard: RequestStatusChange[] = [];
        const heardByPeer: RequestStatusChange[] = [];
        store.onRequestStatusChanged((change) => heard.push(change));
        peer?.onRequestStatusChanged((change) => heardByPeer.push(change));

        expect(await store.transitionRequest(record.id, 'completed', RETENTION_MS)).toBe('already_applied');
        expect(await store.transitionRequest(record.id, 'failed', RETENTION_MS)).toBe('conflict');
        expect(await store.transitionRequest(randomUUID(), 'failed', RETENTION_MS)).toBe('not_found');

        // A marker applied after them: announcements on one channel arrive in
        // order, so once a peer has heard the marker it would have heard them.
        const marker = requestRecord();
        await store.createRequest(marker, RETENTION_MS);
        expect(await store.transitionRequest(marker.id, 'completed', RETENTION_MS)).toBe('applied');
        const markerChange = { id: marker.id, status: 'completed' };
        if (peer) {
          await vi.waitFor(() => expect(heardByPeer).toContainEqual(markerChange), { timeout: 1_000, interval: 10 });
          expect(heardByPeer).toStrictEqual([markerChange]);
        }
        await echoesHeard(subject, 'status changes');
        expect(heard.length).toBeGreaterThanOrEqual(1);
        for (const change of heard) expect(change).toStrictEqual(markerChange);
      });

      it('stops calling a status listener once it is unsubscribed, and only that one', async () => {
        const { store } = subject;
        const removed = vi.fn();
        const kept = vi.fn();
        const unsubscribe = store.onRequestStatusChanged(removed);
        store.onRequestStatusChanged(kept);
        unsubscribe();
        const record = requestRecord();
        await store.createRequest(record, RETENTION_MS);
        await store.transitionRequest(record.id, 'completed', RETENTION_MS);
        await echoesHeard(subject, 'status changes');
        expect(removed).not.toHaveBeenCalled();
        expect(kept).toHaveBeenCalledWith({ id: record.id, status: 'completed' });
      });

      it('still applies and tells the other listeners when one status listener throws', async () => {
        const { store } = subject;
        store.onRequestStatusChanged(() => {
          throw new Error('listener bug');
        });
        const kept = vi.fn();
        store.onRequestStatusChanged(kept);
        const record = requestRecord();
        await store.createRequest(record, RETENTION_MS);
        await expect(store.transitionRequest(record.id, 'failed', RETENTION_MS)).resolves.toBe('applied');
        expect(kept).toHaveBeenCalledWith({ id: record.id, status: 'failed' });
      });

      it('shares request records and their transitions with a peer instance (stores shared between instances)', async () => {
        const { store, peer } = subject;
        if (!peer) {
          expect(store.kind).toBe('memory');
          return;
        }
        const record = requestRecord({ statusUrl: 'https://orders.internal/status/7' });
        expect(await store.createRequest(record, RETENTION_MS)).toBe(true);
        expect(await peer.getRequest(record.id)).toStrictEqual(record);
        expect(await peer.createRequest(record, RETENTION_MS)).toBe(false);

        const heardByPeer: RequestStatusChange[] = [];
        peer.onRequestStatusChanged((change) => heardByPeer.push(change));
        expect(await store.transitionRequest(record.id, 'completed', RETENTION_MS)).toBe('applied');
        await vi.waitFor(() => expect(heardByPeer).toContainEqual({ id: record.id, status: 'completed' }), {
          timeout: 1_000,
          interval: 10,
        });
        expect((await peer.getRequest(record.id))?.status).toBe('completed');
        expect(await peer.transitionRequest(record.id, 'failed', RETENTION_MS)).toBe('conflict');
      });

      it('lets exactly one of two concurrent conflicting transitions win, every time', async () => {
        const { store, peer } = subject;
        // On a shared store the two race from two instances, over two connections.
        const other = peer ?? store;
        for (let round = 0; round < 50; round += 1) {
          const record = requestRecord();
          await store.createRequest(record, RETENTION_MS);
          // Alternate which one is sent first.
          const [first, second] = round % 2 === 0 ? [store, other] : [other, store];
          const outcomes: TransitionOutcome[] = await Promise.all([
            first.transitionRequest(record.id, 'completed', RETENTION_MS),
            second.transitionRequest(record.id, 'failed', RETENTION_MS),
          ]);
          expect([...outcomes].sort()).toStrictEqual(['applied', 'conflict']);
          const winner = outcomes[0] === 'applied' ? 'completed' : 'failed';
          expect((await store.getRequest(record.id))?.status).toBe(winner);
          expect((await other.getRequest(record.id))?.status).toBe(winner);
        }
      });
    });

    describe('shared signing keys', () => {
      it('keeps, finds, lists and removes key entries as the text it was given; another instance sees the same', async () => {
        const { store, peer } = subject;
        const keys = store.sharedKeys!;
        const other = (peer ?? store).sharedKeys!;
        const text = '{"v":1,"payload":"ü \\"quoted\\" 𝄞"}';
        await keys.putKey('kid-a', text);
        await keys.putKey('kid-b', 'b');
        expect(await other.findKey('kid-a')).toBe(text);
        expect(await other.findKey('kid-missing')).toBeNull();
        expect(await other.allKeys()).toStrictEqual(
          new Map([
            ['kid-a', text],
            ['kid-b', 'b'],
          ]),
        );
        await keys.putKey('kid-b', 'b2');
        expect(await other.findKey('kid-b')).toBe('b2');
        await other.removeKeys(['kid-a']);
        await other.removeKeys([]);
        expect(await keys.allKeys()).toStrictEqual(new Map([['kid-b', 'b2']]));
      });

      it('keeps, lists and removes instance views', async () => {
        const { store, peer } = subject;
        const keys = store.sharedKeys!;
        const other = (peer ?? store).sharedKeys!;
        await keys.putInstance('i-1', 'one');
        await other.putInstance('i-2', 'two');
        expect(await keys.allInstances()).toStrictEqual(
          new Map([
            ['i-1', 'one'],
            ['i-2', 'two'],
          ]),
        );
        await keys.removeInstances(['i-2']);
        expect(await other.allInstances()).toStrictEqual(new Map([['i-1', 'one']]));
      });

      it('tells this instance and every other one that keys changed', async () => {
        const { store, peer } = subject;
        let heardHere = 0;
        let heardThere = 0;
        store.sharedKeys!.onKeysChanged(() => (heardHere += 1));
        const off = (peer ?? store).sharedKeys!.onKeysChanged(() => (heardThere += 1));
        await store.sharedKeys!.announceKeysChanged();
        await vi.waitFor(() => expect([heardHere, heardThere]).toStrictEqual([1, 1]));
        off();
      });
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
