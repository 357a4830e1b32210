// The contract of DpopStore: a DPoP server nonce per epoch, the same on every instance; and the proofs seen
// (replay-memory.ts).
import { expect, it } from 'vitest';
import type { StoreUnderTest } from '../store-contract.js';
import { replayMemoryContract } from './replay-memory.js';

export function dpopContract(subject: StoreUnderTest): void {
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

  replayMemoryContract('DPoP proof ids', (store, id, ttlMs) => store.rememberDpopProof(id, ttlMs), subject);
  replayMemoryContract('one-time codes used', (store, id, ttlMs) => store.rememberOneTimeCode(id, ttlMs), subject);
}
