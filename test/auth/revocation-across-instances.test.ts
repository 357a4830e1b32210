// Two gateway instances share one Redis: a session revoked on one must stop
// working on the other, whose cache would otherwise keep accepting its tokens.
// Each instance has its own RedisStore (its own connections and subscriber)
// and its own BearerAuthenticator, as two processes would.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { BearerAuthenticator } from '../../src/auth/bearer-authenticator.js';
import type { Principal } from '../../src/core/principal.js';
import { GatehouseError } from '../../src/core/errors.js';
import { LocalIdentityProvider } from '../../src/users/local-provider.js';
import { readUsersFile, type UsersFileData } from '../../src/users/users-file.js';
import { createStore } from '../../src/store/create-store.js';
import type { SessionRecord, Store } from '../../src/store/store.js';
import { TokenIssuer } from '../../src/tokens/issuer.js';
import { loadKeySet, type KeySet } from '../../src/tokens/keyset.js';
import type { TokenSet } from '../../src/tokens/types.js';
import { TokenVerifier } from '../../src/tokens/verifier.js';
import { writeTestUsers } from '../helpers/gateway.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';

const ISSUER = 'https://gw.example.test';
const AUDIENCE = 'gatehouse';
const REFRESH_TTL_S = 3600;
const silent = pino({ level: 'silent' });

interface Instance {
  store: Store;
  auth: BearerAuthenticator;
  ended: string[];
}

let redis: { url: string; close(): Promise<void> };
let dir: string;
let keys: KeySet;
let issuer: TokenIssuer;
let verifier: TokenVerifier;
let identity: LocalIdentityProvider;
let users: UsersFileData;

beforeAll(async () => {
  redis = await testRedisUrl();
  dir = await mkdtemp(join(tmpdir(), 'gatehouse-revocation-'));
  const usersFile = join(dir, 'users.yaml');
  await writeTestUsers(usersFile, [
    { name: 'alice', password: 'alice-password-1' },
    { name: 'bob', password: 'bob-password-1' },
  ]);
  users = await readUsersFile(usersFile);
  // The instances share the keys file and the users file, as a deployment does.
  keys = await loadKeySet({ file: join(dir, 'keys.json'), algorithm: 'EdDSA', retainS: REFRESH_TTL_S, logger: silent });
  issuer = new TokenIssuer({ keys, issuer: ISSUER, audience: AUDIENCE, accessTokenTtlS: 300, refreshTokenTtlS: REFRESH_TTL_S });
  verifier = new TokenVerifier({ keys, issuer: ISSUER, audience: AUDIENCE, clockToleranceS: 30 });
  identity = await LocalIdentityProvider.open({ provider: 'local', usersFile, watch: false }, silent);
});

afterAll(async () => {
  keys?.close();
  await identity?.close();
  await redis?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

describe('session revocation across gateway instances sharing one Redis', () => {
  let a: Instance;
  let b: Instance;

  async function startInstance(keyPrefix: string): Promise<Instance> {
    const store = await createStore({ url: redis.url, keyPrefix }, silent);
    const auth = new BearerAuthenticator({ verifier, store, identity, maxEntries: 1_000, logger: silent });
    const ended: string[] = [];
    auth.onSessionEnded((sid) => ended.push(sid));
    return { store, auth, ended };
  }

  beforeEach(async () => {
    const keyPrefix = uniquePrefix();
    [a, b] = await Promise.all([startInstance(keyPrefix), startInstance(keyPrefix)]);
  });

  afterEach(async () => {
    for (const instance of [a, b]) {
      instance?.auth.close();
      await instance?.store.close();
    }
  });

  async function login(on: Instance, username: 'alice' | 'bob'): Promise<{ session: SessionRecord; tokens: TokenSet }> {
    const now = Date.now();
    const session: SessionRecord = {
      sid: randomUUID(),
      sub: users.users[username]!.id,
      username,
      method: 'pwd',
      createdAt: now,
      expiresAt: now + REFRESH_TTL_S * 1000,
    };
    await on.store.createSession(session);
    return { session, tokens: await issuer.issueTokenSet(session, now) };
  }

  /** Resolves when the instance hears that the session ended (from its own store's feed). */
  function hears(instance: Instance, sid: string): Promise<void> {
    return new Promise((resolve) => {
      const off = instance.auth.onSessionEnded((ended) => {
        if (ended !== sid) return;
        off();
        resolve();
      });
    });
  }

  /** Checks the token on the instance until it is cached there: the next check answers synchronously. */
  async function cacheOn(instance: Instance, token: string): Promise<Principal> {
    const principal = await instance.auth.authenticate(token);
    const hit = instance.auth.authenticate(token);
    expect(hit).not.toBeInstanceOf(Promise);
    expect(hit).toBe(principal);
    return principal;
  }

  it('a session revoked on A is refused on B as soon as B hears of it, while another session still passes on B', async () => {
    const alice = await login(a, 'alice');
    const bob = await login(a, 'bob');
    for (const instance of [a, b]) {
      await cacheOn(instance, alice.tokens.access_token);
      await cacheOn(instance, alice.tokens.refresh_token);
      await cacheOn(instance, bob.tokens.access_token);
      expect(instance.auth.size).toBe(3);
    }

    const heardOnB = hears(b, alice.session.sid);
    expect(await a.store.revokeSession(alice.session.sid)).toBe(true);
    await heardOnB;

    let outcome: unknown;
    try {
      outcome = await b.auth.authenticate(alice.tokens.access_token);
    } catch (error) {
      outcome = error;
    }
    expect(outcome).toBeInstanceOf(GatehouseError);
    expect(outcome).toMatchObject({ code: 'invalid_bearer_token', status: 401, reason: 'session ended' });
    expect(b.ended).toContain(alice.session.sid);

    // Both of Alice's tokens left B's cache by the announcement; Bob's stayed, and answers from it.
    expect(b.auth.size).toBe(1);
    const bobOnB = b.auth.authenticate(bob.tokens.access_token);
    expect(bobOnB).not.toBeInstanceOf(Promise);
    expect(bobOnB).toMatchObject({ sid: bob.session.sid, username: 'bob' });
    await expect(Promise.resolve().then(() => b.auth.authenticate(alice.tokens.refresh_token))).rejects.toMatchObject({
      reason: 'session ended',
    });

    // A, where the revocation was made, knew at once.
    expect(a.ended).toContain(alice.session.sid);
    expect(a.auth.size).toBe(1);
  });

  it('a session revoked on B is refused on A too (the feed runs both ways)', async () => {
    const alice = await login(b, 'alice');
    await cacheOn(a, alice.tokens.access_token);
    await cacheOn(b, alice.tokens.access_token);

    const heardOnA = hears(a, alice.session.sid);
    expect(await b.store.revokeSession(alice.session.sid)).toBe(true);
    await heardOnA;
    expect(a.auth.size).toBe(0);
    expect(a.ended).toStrictEqual(expect.arrayContaining([alice.session.sid]));
    await expect(Promise.resolve().then(() => a.auth.authenticate(alice.tokens.access_token))).rejects.toMatchObject({
      reason: 'session ended',
    });
  });
});
