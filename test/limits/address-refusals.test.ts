// The one per-address refusal policy, as login and refresh (LoginThrottle) and
// back-channel logout tokens (LogoutTokenThrottle) apply it: the
// failuresPerAddress-th refusal in the window blocks the address, on each
// counter alike, and only that address.
import { afterEach, describe, expect, it } from 'vitest';
import { LoginLimitsSchema } from '../../src/config/schema.js';
import { LimiterFactory } from '../../src/limits/limiters.js';
import { LoginThrottle } from '../../src/limits/login-throttle.js';
import { LogoutTokenThrottle } from '../../src/limits/logout-token-throttle.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Store } from '../../src/store/store.js';

const FAILURES = 3;
const settings = LoginLimitsSchema.parse({ failuresPerAddress: FAILURES, failureWindowS: 60, addressBlockS: 60 });
const stores: MemoryStore[] = [];

function limiters(): LimiterFactory {
  const store = new MemoryStore();
  stores.push(store);
  return new LimiterFactory(store as Store);
}

afterEach(async () => {
  await Promise.all(stores.splice(0).map((store) => store.close()));
});

describe('the per-address refusal policy', () => {
  it('refresh tokens: the failuresPerAddress-th refusal blocks the address, and only it', async () => {
    const throttle = new LoginThrottle(settings, limiters());
    for (let i = 1; i < FAILURES; i++) expect(await throttle.addressRefused('192.0.2.1')).toBeUndefined();
    await expect(throttle.checkAddress('192.0.2.1')).resolves.toBeUndefined();
    expect(await throttle.addressRefused('192.0.2.1')).toMatchObject({ kind: 'address_blocked' });
    await expect(throttle.checkAddress('192.0.2.1')).rejects.toMatchObject({ status: 429 });
    await expect(throttle.checkAddress('192.0.2.2')).resolves.toBeUndefined();
  });

  it('logout tokens: the same count blocks the address, and only it', async () => {
    const throttle = new LogoutTokenThrottle(settings, limiters());
    for (let i = 1; i < FAILURES; i++) await throttle.refused('192.0.2.1');
    expect(await throttle.check('192.0.2.1')).toBeUndefined();
    await throttle.refused('192.0.2.1');
    expect(await throttle.check('192.0.2.1')).toMatchObject({ status: 429, headers: { 'retry-after': expect.stringMatching(/^\d+$/) } });
    expect(await throttle.check('192.0.2.2')).toBeUndefined();
  });
});
