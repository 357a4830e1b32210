// The contract of ProviderSessionStore: provider sessions ended here, on every instance, until their time;
// and the back-channel logout tokens seen (replay-memory.ts).
import { expect, it, vi } from 'vitest';
import type { StoreUnderTest } from '../store-contract.js';
import { replayMemoryContract } from './replay-memory.js';

export function providerSessionsContract(subject: StoreUnderTest): void {
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

  replayMemoryContract('back-channel logout token ids', (store, id, ttlMs) => store.rememberLogoutToken(id, ttlMs), subject);
}
