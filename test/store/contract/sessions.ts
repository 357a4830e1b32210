// The contract of SessionStore: sessions kept, listed, expired and revoked, and revocations announced to every instance.
import { randomUUID } from 'node:crypto';
import { expect, it, vi } from 'vitest';
import { echoesHeard, sessionRecord, type StoreUnderTest } from '../store-contract.js';

export function sessionsContract(subject: StoreUnderTest): void {
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

  it('keeps every one of many sessions created at once', async () => {
    const { store } = subject;
    const sessions = Array.from({ length: 250 }, (_, i) => sessionRecord({ sub: `u-${i}`, username: `user${i}` }));
    await Promise.all(sessions.map((session) => store.createSession(session)));
    const read = await Promise.all(sessions.map((session) => store.getSession(session.sid)));
    expect(read).toStrictEqual(sessions);
  });
}
