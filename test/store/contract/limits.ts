// The contract of LimitsStore, through rateLimitersOf: a limiter counts to its
// points and then refuses until its window ends; on a shared store every
// instance counts together, on the memory store each process counts alone.
import { randomUUID } from 'node:crypto';
import { RateLimiterRes } from 'rate-limiter-flexible';
import { expect, it } from 'vitest';
import { rateLimitersOf } from '../../../src/store/rate-limiters.js';
import type { StoreUnderTest } from '../store-contract.js';

const WINDOW = { points: 2, duration: 60, blockDuration: 0 };

export function limitsContract(subject: StoreUnderTest): void {
  it('counts a key to its points, then refuses it, and counts other keys apart', async () => {
    const limiter = rateLimitersOf(subject.store).create({ name: `contract-${randomUUID()}`, ...WINDOW });
    await limiter.consume('198.51.100.7');
    await limiter.consume('198.51.100.7');
    await expect(limiter.consume('198.51.100.7')).rejects.toBeInstanceOf(RateLimiterRes);
    await expect(limiter.consume('198.51.100.8')).resolves.toMatchObject({ consumedPoints: 1 });
  });

  it('counts together with a peer instance when shared, and says so', async () => {
    const { store, peer } = subject;
    const backend = rateLimitersOf(store);
    expect(backend.shared).toBe(peer !== undefined);
    if (!peer) return;
    const name = `contract-${randomUUID()}`;
    await backend.create({ name, ...WINDOW }).consume('198.51.100.9', 2);
    await expect(
      rateLimitersOf(peer)
        .create({ name, ...WINDOW })
        .consume('198.51.100.9'),
    ).rejects.toBeInstanceOf(RateLimiterRes);
  });
}
