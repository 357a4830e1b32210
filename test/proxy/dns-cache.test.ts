// The upstream DNS cache: one lookup per name and TTL, stale answers served
// while a refresh runs, the last good answer kept when a refresh fails.
import type { LookupAddress } from 'node:dns';
import type { LookupFunction } from 'node:net';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { createCachedLookup } from '../../src/proxy/dns-cache.js';

interface Pending {
  hostname: string;
  resolve(addresses: LookupAddress[]): void;
  reject(error: Error): void;
}

/** A resolver the test answers by hand. */
function heldResolver() {
  const pending: Pending[] = [];
  const resolve = (hostname: string) => new Promise<LookupAddress[]>((res, rej) => pending.push({ hostname, resolve: res, reject: rej }));
  return { pending, resolve };
}

function ask(lookup: LookupFunction, hostname: string, options: { all?: boolean; family?: number } = {}) {
  return new Promise<{ error: unknown; address: unknown; family: unknown }>((done) => {
    (lookup as unknown as (h: string, o: object, cb: (e: unknown, a?: unknown, f?: unknown) => void) => void)(hostname, options, (error, address, family) =>
      done({ error, address, family }),
    );
  });
}

const V4 = { address: '10.0.0.1', family: 4 };
const V6 = { address: 'fd00::1', family: 6 };

beforeEach(() => vi.useFakeTimers());
afterEach(() => vi.useRealTimers());

describe('cached upstream lookups', () => {
  it('looks a name up once for every connection waiting on it, then answers from memory', async () => {
    const resolver = heldResolver();
    const lookup = createCachedLookup({ ttlMs: 30_000, resolve: resolver.resolve, now: () => Date.now() });
    const [one, all] = [ask(lookup, 'orders.internal'), ask(lookup, 'orders.internal', { all: true })];
    expect(resolver.pending).toHaveLength(1);
    resolver.pending[0]!.resolve([V4, V6]);
    expect(await one).toEqual({ error: null, address: '10.0.0.1', family: 4 });
    expect((await all).address).toEqual([V4, V6]);
    expect((await ask(lookup, 'orders.internal', { family: 6 })).address).toBe('fd00::1');
    expect(resolver.pending).toHaveLength(1);
  });

  it('answers a stale name at once and refreshes it in the background, keeping the last good answer on failure', async () => {
    const resolver = heldResolver();
    const lookup = createCachedLookup({ ttlMs: 30_000, resolve: resolver.resolve, now: () => Date.now() });
    const first = ask(lookup, 'orders.internal');
    resolver.pending[0]!.resolve([V4]);
    await first;

    vi.advanceTimersByTime(31_000);
    // Stale: answered from memory while the one refresh is held.
    expect((await ask(lookup, 'orders.internal')).address).toBe('10.0.0.1');
    expect(resolver.pending).toHaveLength(2);
    resolver.pending[1]!.reject(Object.assign(new Error('DNS down'), { code: 'EAI_AGAIN' }));
    await vi.advanceTimersByTimeAsync(0);
    expect((await ask(lookup, 'orders.internal')).address).toBe('10.0.0.1');

    // The next refresh brings the move.
    const moved = resolver.pending.at(-1)!;
    moved.resolve([{ address: '10.0.0.2', family: 4 }]);
    await vi.advanceTimersByTimeAsync(0);
    expect((await ask(lookup, 'orders.internal')).address).toBe('10.0.0.2');
  });

  it('passes a failure of the first lookup on, and finds a name with no address of the wanted family not found', async () => {
    const resolver = heldResolver();
    const lookup = createCachedLookup({ ttlMs: 30_000, resolve: resolver.resolve, now: () => Date.now() });
    const failed = ask(lookup, 'nowhere.internal');
    resolver.pending[0]!.reject(Object.assign(new Error('getaddrinfo ENOTFOUND'), { code: 'ENOTFOUND' }));
    expect((await failed).error).toMatchObject({ code: 'ENOTFOUND' });

    const v4only = ask(lookup, 'v4.internal', { family: 6 });
    resolver.pending[1]!.resolve([V4]);
    expect((await v4only).error).toMatchObject({ code: 'ENOTFOUND' });
  });
});
