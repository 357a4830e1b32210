// Refresh tokens as bearer tokens are introspected at the provider at most
// once per interval, across every instance sharing the store, and a token
// revoked at the provider stops working once the interval has passed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import pino from 'pino';
import { OidcIdentitySchema } from '../../src/config/schema.js';
import { fromIntrospection, IntrospectionCache } from '../../src/oidc/introspection-cache.js';
import { OidcProviderClient } from '../../src/oidc/provider-client.js';
import { createStore } from '../../src/store/create-store.js';
import type { Store } from '../../src/store/store.js';
import { startOpenIdProvider, TEST_CLIENT, TEST_RESOURCE, type TestOpenIdProvider } from '../helpers/openid-provider.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';

const INTERVAL_MS = 60_000;

describe('the introspection cache', () => {
  let op: TestOpenIdProvider;
  let client: OidcProviderClient;
  let redis: { url: string; close(): Promise<void> };
  const stores: Store[] = [];
  let calls = 0;
  const claims = { username: 'preferred_username', roles: 'roles', groups: 'groups' };
  const introspect = async (token: string) => {
    calls += 1;
    return fromIntrospection((await client.introspect(token)) as Record<string, unknown> | null, claims);
  };

  beforeAll(async () => {
    op = await startOpenIdProvider({ carol: { password: 'carol-password' } });
    client = await OidcProviderClient.discover(
      OidcIdentitySchema.parse({ provider: 'oidc', issuer: op.issuer, ...TEST_CLIENT, audience: TEST_RESOURCE, scopes: ['openid', 'offline_access', 'api'] }),
    );
    redis = await testRedisUrl();
  });
  afterAll(async () => {
    await Promise.all(stores.map((store) => store.close()));
    await redis.close();
    await op.close();
  });

  it('introspects one token once across two instances sharing Redis', async () => {
    const keyPrefix = uniquePrefix();
    const open = async () => {
      const store = await createStore({ url: redis.url, keyPrefix }, pino({ level: 'silent' }));
      stores.push(store);
      return new IntrospectionCache({ store, intervalMs: INTERVAL_MS, maxEntries: 100, introspect });
    };
    const [first, second] = [await open(), await open()];
    const { refresh_token } = await client.login('carol', 'carol-password');
    calls = 0;
    expect(await first.lookup(refresh_token)).toMatchObject({ active: true, sub: 'carol' });
    expect(await second.lookup(refresh_token)).toMatchObject({ active: true, sub: 'carol' });
    await Promise.all([first.lookup(refresh_token), second.lookup(refresh_token)]);
    expect(calls).toBe(1);
  });

  it('asks again after the interval and sees a revocation made at the provider', async () => {
    let now = Date.now();
    const store = await createStore({ keyPrefix: 'x:' }, pino({ level: 'silent' }));
    stores.push(store);
    const cache = new IntrospectionCache({ store, intervalMs: INTERVAL_MS, maxEntries: 100, introspect, now: () => now });
    const { refresh_token } = await client.login('carol', 'carol-password');
    calls = 0;
    expect((await cache.lookup(refresh_token)).active).toBe(true);
    await client.revoke(refresh_token);
    expect((await cache.lookup(refresh_token)).active).toBe(true);
    expect(calls).toBe(1);
    now += INTERVAL_MS;
    expect((await cache.lookup(refresh_token)).active).toBe(false);
    expect(calls).toBe(2);
  });

  it('shares one introspection between concurrent lookups and keeps at most maxEntries answers in memory', async () => {
    const store = await createStore({ keyPrefix: 'y:' }, pino({ level: 'silent' }));
    stores.push(store);
    const cache = new IntrospectionCache({ store, intervalMs: INTERVAL_MS, maxEntries: 2, introspect });
    calls = 0;
    await Promise.all([cache.lookup('unknown-1'), cache.lookup('unknown-1'), cache.lookup('unknown-1')]);
    expect(calls).toBe(1);
    await cache.lookup('unknown-2');
    await cache.lookup('unknown-3');
    await cache.lookup('unknown-1');
    // unknown-1 was the oldest of three with room for two: it was asked about again.
    expect(calls).toBe(4);
  });
});
