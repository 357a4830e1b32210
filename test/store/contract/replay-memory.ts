// One contract for the two replay memories (remember an id for a time, once, on every instance): a provider's
// back-channel logout tokens (ProviderSessionStore) and DPoP proofs (DpopStore, RFC 9449 11.1).
import { describe, expect, it } from 'vitest';
import type { Store } from '../../../src/store/store.js';
import type { StoreUnderTest } from '../store-contract.js';

export function replayMemoryContract(what: string, remember: (store: Store, id: string, ttlMs: number) => Promise<boolean>, subject: StoreUnderTest): void {
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
