// The hot-path bearer check, with real parts: tokens from the real issuer and
// key set, users from a real users file, sessions in a MemoryStore and in a
// RedisStore over a real redis-server. The store is only wrapped, to count
// what the authenticator asks of it and to stage races.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { BearerAuthenticator } from '../../src/auth/bearer-authenticator.js';
import { bearerChallenge, bearerToken } from '../../src/auth/bearer.js';
import type { Principal } from '../../src/core/principal.js';
import { GatehouseError } from '../../src/core/errors.js';
import { LocalIdentityProvider } from '../../src/users/local-provider.js';
import { readUsersFile, writeUsersFile, type UsersFileData } from '../../src/users/users-file.js';
import { revokeApiKey, setDisabled } from '../../src/users/users-changes.js';
import { createStore } from '../../src/store/create-store.js';
import { Listeners } from '../../src/store/listeners.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { SessionRecord, Store } from '../../src/store/store.js';
import { TokenIssuer } from '../../src/tokens/issuer.js';
import { loadKeySet, type KeySet } from '../../src/tokens/keyset.js';
import type { TokenSet } from '../../src/tokens/types.js';
import { TokenVerifier } from '../../src/tokens/verifier.js';
import { jwtPayload, writeTestUsers } from '../helpers/gateway.js';
import { logSink, type LogSink } from '../helpers/log-sink.js';
import { startRedisServer, testRedisUrl, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';
import { WrappedStore } from '../helpers/wrapped-store.js';

const ISSUER = 'https://gw.example.test';
const AUDIENCE = 'gatehouse';
const ACCESS_TTL_S = 300;
const REFRESH_TTL_S = 3600;
const CLOCK_TOLERANCE_S = 30;
const silent = pino({ level: 'silent' });

/** A real store that counts calls, and can hold a read's answer or fail a read to stage races and outages. */
class CountingStore extends WrappedStore {
  readonly calls = { createSession: 0, getSession: 0, revokeSession: 0, ping: 0 };
  /** getSession reads that the real store has answered (held ones included). */
  answered = 0;
  readonly #answers = new Listeners<number>('test answers');
  /** While set, getSession's answer from the real store waits for it. */
  hold: Promise<void> | undefined;
  /** The next getSession fails as a broken connection would. */
  failNext = false;
  readonly #feedResumed = new Listeners<void>('test feed');

  protected override around(member: string, call: () => unknown): unknown {
    if (member in this.calls) this.calls[member as keyof typeof this.calls] += 1;
    return call();
  }

  override async getSession(sid: string): Promise<SessionRecord | null> {
    this.calls.getSession += 1;
    if (this.failNext) {
      this.failNext = false;
      throw new Error('connection reset');
    }
    const session = await this.inner.getSession(sid);
    this.answered += 1;
    this.#answers.emit(this.answered);
    await this.hold;
    return session;
  }

  override onRevocationFeedResumed(listener: () => void): () => void {
    const offInner = this.inner.onRevocationFeedResumed(listener);
    const offOwn = this.#feedResumed.add(listener);
    return () => {
      offInner();
      offOwn();
    };
  }

  /** Resolves once the real store has answered `count` reads in all. */
  whenAnswered(count: number): Promise<void> {
    if (this.answered >= count) return Promise.resolve();
    return new Promise((resolve) => {
      const off = this.#answers.add((answered) => {
        if (answered < count) return;
        off();
        resolve();
      });
    });
  }

  /** Resolves at the next announcement that the revocation feed resumed (after the listeners added before this call). */
  nextFeedResumed(): Promise<void> {
    return new Promise((resolve) => {
      const off = this.onRevocationFeedResumed(() => {
        off();
        resolve();
      });
    });
  }

  /** Announces a resumed feed without taking Redis away (for the race with a first check). */
  announceFeedResumed(): void {
    this.#feedResumed.emit();
  }

  get totalCalls(): number {
    return Object.values(this.calls).reduce((a, b) => a + b, 0);
  }
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** The refusal of an attempt, whether thrown (a hit) or rejected (a first check). */
async function refusal(attempt: () => Principal | Promise<Principal>): Promise<GatehouseError> {
  let outcome: Principal | Promise<Principal>;
  try {
    outcome = attempt();
  } catch (error) {
    expect(error).toBeInstanceOf(GatehouseError);
    return error as GatehouseError;
  }
  try {
    await outcome;
  } catch (error) {
    expect(error).toBeInstanceOf(GatehouseError);
    return error as GatehouseError;
  }
  throw new Error('the token was accepted');
}

function expectInvalidBearer(error: GatehouseError, reason: string): void {
  expect(error).toMatchObject({
    code: 'invalid_bearer_token',
    status: 401,
    reason,
    headers: { 'www-authenticate': bearerChallenge(reason) },
  });
}

/** A header read: the token it gives, or the error it is refused with. */
function attempt(read: () => string): { token: string } | { refused: string } {
  try {
    return { token: read() };
  } catch (error) {
    return { refused: (error as GatehouseError).code };
  }
}

function isPromise(value: unknown): boolean {
  return value instanceof Promise || typeof (value as { then?: unknown } | null)?.then === 'function';
}

/** Swaps the signature of one compact JWS for another's. */
function withSignatureOf(token: string, donor: string): string {
  const [header, payload] = token.split('.');
  return `${header}.${payload}.${donor.split('.')[2]}`;
}

/** Everything but the store: keys, issuer, verifier and users, fresh per test. */
interface Parts {
  dir: string;
  keys: KeySet;
  issuer: TokenIssuer;
  verifier: TokenVerifier;
  identity: LocalIdentityProvider;
  usersFile: string;
  users: UsersFileData;
  /** The clock of the verifier and the authenticator, epoch ms. */
  clock: { ms: number };
  logs: LogSink;
  /** Every token the test made: none may reach the log. */
  tokens: string[];
}

async function makeParts(): Promise<Parts> {
  const dir = await mkdtemp(join(tmpdir(), 'gatehouse-bearer-'));
  const usersFile = join(dir, 'users.yaml');
  await writeTestUsers(usersFile, [
    { name: 'alice', password: 'alice-password-1', apiKeys: 1 },
    { name: 'bob', password: 'bob-password-1' },
  ]);
  const clock = { ms: Date.now() };
  const keys = await loadKeySet({ file: join(dir, 'keys.json'), algorithm: 'EdDSA', retainS: REFRESH_TTL_S, logger: silent });
  return {
    dir,
    keys,
    issuer: new TokenIssuer({ keys, issuer: ISSUER, audience: AUDIENCE, accessTokenTtlS: ACCESS_TTL_S, refreshTokenTtlS: REFRESH_TTL_S }),
    verifier: new TokenVerifier({ keys, issuer: ISSUER, audience: AUDIENCE, clockToleranceS: CLOCK_TOLERANCE_S, now: () => clock.ms }),
    identity: await LocalIdentityProvider.open({ provider: 'local', usersFile, watch: false }, silent),
    usersFile,
    users: await readUsersFile(usersFile),
    clock,
    logs: logSink('trace'),
    tokens: [],
  };
}

async function disposeParts(parts: Parts): Promise<void> {
  parts.keys.close();
  await parts.identity.close();
  await rm(parts.dir, { recursive: true, force: true });
}

async function changeUsers(parts: Parts, change: (data: UsersFileData) => UsersFileData): Promise<void> {
  parts.users = change(parts.users);
  await writeUsersFile(parts.usersFile, parts.users);
  expect(await parts.identity.reload()).toBe(true);
}

interface Login {
  session: SessionRecord;
  tokens: TokenSet;
}

/** What a login does: a session in the store, and its tokens. */
async function startSession(parts: Parts, store: Store, username: 'alice' | 'bob', options: { apiKey?: boolean; issuedAt?: number } = {}): Promise<Login> {
  const user = parts.users.users[username]!;
  const apiKeyId = options.apiKey ? user.apiKeys[0]!.id : undefined;
  const now = Date.now();
  const session: SessionRecord = {
    sid: randomUUID(),
    sub: user.id,
    username,
    method: apiKeyId ? 'api_key' : 'pwd',
    ...(apiKeyId ? { apiKeyId } : {}),
    createdAt: now,
    expiresAt: now + REFRESH_TTL_S * 1000,
  };
  await store.createSession(session);
  const tokens = await parts.issuer.issueTokenSet(session, options.issuedAt ?? parts.clock.ms);
  parts.tokens.push(tokens.access_token, tokens.refresh_token);
  return { session, tokens };
}

const expSeconds = (token: string) => jwtPayload(token).exp as number;

interface StoreKind {
  name: string;
  open(): Promise<Store>;
}

let redis: { url: string; close(): Promise<void> };

beforeAll(async () => {
  redis = await testRedisUrl();
});

afterAll(async () => {
  await redis?.close();
});

const STORES: StoreKind[] = [
  { name: 'MemoryStore', open: async () => new MemoryStore() },
  { name: 'RedisStore', open: () => createStore({ url: redis.url, keyPrefix: uniquePrefix() }, silent) },
];

describe.each(STORES)('BearerAuthenticator over a $name', (kind) => {
  let parts: Parts;
  let store: CountingStore;
  let auth: BearerAuthenticator;

  function authenticator(maxEntries = 100): BearerAuthenticator {
    return new BearerAuthenticator({
      verifier: parts.verifier,
      store,
      identity: parts.identity,
      maxEntries,
      logger: parts.logs.logger,
      now: () => parts.clock.ms,
    });
  }

  beforeEach(async () => {
    parts = await makeParts();
    store = new CountingStore(await kind.open());
    auth = authenticator();
  });

  afterEach(async () => {
    auth.close();
    await store.close();
    // Whatever happened, no token reached the log (refusals are logged, at debug, with their reason).
    const logged = parts.logs.text();
    for (const token of parts.tokens) {
      expect(logged).not.toContain(token);
      expect(logged).not.toContain(token.split('.')[2]);
    }
    await disposeParts(parts);
  });

  describe('accepts', () => {
    it('an access token, as the principal of its session', async () => {
      const { session, tokens } = await startSession(parts, store, 'alice');
      const principal = await auth.authenticate(tokens.access_token);
      expect(principal).toStrictEqual({
        sub: session.sub,
        username: 'alice',
        sid: session.sid,
        tokenType: 'Bearer',
        method: 'pwd',
        apiKeyId: undefined,
        expiresAtMs: expSeconds(tokens.access_token) * 1000,
        sessionStartedAtMs: session.createdAt,
        sessionEndsAtMs: session.expiresAt,
        // A password login: one factor, proved when the session began.
        acr: 'urn:gatehouse:acr:password',
        authTimeS: Math.floor(session.createdAt / 1000),
        roles: [],
        scopes: undefined,
        readOnly: false,
        // A plain bearer token: bound to no key, and the one object shape says so.
        confirmationThumbprint: undefined,
        // One provider: none named.
        provider: undefined,
        // The token's claims as verified, for route quotas keyed on a claim.
        claims: expect.objectContaining({ sub: session.sub, sid: session.sid, typ: 'Bearer' }),
      });
      expect(Object.isFrozen(principal)).toBe(true);
    });

    it('a refresh token (spec 5.9), expiring with the refresh token', async () => {
      const { session, tokens } = await startSession(parts, store, 'alice');
      const principal = await auth.authenticate(tokens.refresh_token);
      expect(principal).toMatchObject({ sid: session.sid, tokenType: 'Refresh', expiresAtMs: expSeconds(tokens.refresh_token) * 1000 });
      expect(principal.expiresAtMs).toBeGreaterThan(expSeconds(tokens.access_token) * 1000);
    });

    it('a token of an API-key login, naming that method', async () => {
      const { session, tokens } = await startSession(parts, store, 'alice', { apiKey: true });
      expect(await auth.authenticate(tokens.access_token)).toMatchObject({ username: 'alice', method: 'api_key', apiKeyId: session.apiKeyId });
    });
  });

  describe('refuses with 401 and the RFC 6750 challenge', () => {
    it.each([
      ['garbage', 'not-a-token'],
      ['an empty string', ''],
      ['an unsecured JWT', 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.'],
    ])('%s, as a malformed token, without asking the store', async (_name, token) => {
      expectInvalidBearer(await refusal(() => auth.authenticate(token)), 'malformed token');
      expect(store.calls.getSession).toBe(0);
      expect(auth.size).toBe(0);
    });

    it('an expired token', async () => {
      const issuedAt = parts.clock.ms - (ACCESS_TTL_S + CLOCK_TOLERANCE_S + 60) * 1000;
      const { tokens } = await startSession(parts, store, 'alice', { issuedAt });
      expectInvalidBearer(await refusal(() => auth.authenticate(tokens.access_token)), 'token expired');
      expect(auth.size).toBe(0);
    });

    it("a token with another token's signature", async () => {
      const alice = await startSession(parts, store, 'alice');
      const bob = await startSession(parts, store, 'bob');
      const forged = withSignatureOf(alice.tokens.access_token, bob.tokens.access_token);
      expectInvalidBearer(await refusal(() => auth.authenticate(forged)), 'invalid signature');
      expect(store.calls.getSession).toBe(0);
    });

    it('a forged payload carrying the signature of a cached token (the cache is keyed by the whole token)', async () => {
      const alice = await startSession(parts, store, 'alice');
      const bob = await startSession(parts, store, 'bob');
      await auth.authenticate(alice.tokens.access_token);
      expect(auth.size).toBe(1);
      // Bob's session id and subject, in a payload that keeps Alice's signature.
      const [header, payload, signature] = alice.tokens.access_token.split('.') as [string, string, string];
      const claims = { ...JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')), sub: bob.session.sub, sid: bob.session.sid };
      const forged = `${header}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.${signature}`;
      expectInvalidBearer(await refusal(() => auth.authenticate(forged)), 'invalid signature');
      expect(auth.size).toBe(1);
    });

    it('a token signed by a key that is not ours', async () => {
      const otherDir = await mkdtemp(join(tmpdir(), 'gatehouse-other-keys-'));
      const otherKeys = await loadKeySet({ file: join(otherDir, 'keys.json'), algorithm: 'EdDSA', retainS: REFRESH_TTL_S, logger: silent });
      try {
        const stranger = new TokenIssuer({
          keys: otherKeys,
          issuer: ISSUER,
          audience: AUDIENCE,
          accessTokenTtlS: ACCESS_TTL_S,
          refreshTokenTtlS: REFRESH_TTL_S,
        });
        const { session } = await startSession(parts, store, 'alice');
        const tokens = await stranger.issueTokenSet(session, parts.clock.ms);
        parts.tokens.push(tokens.access_token);
        expectInvalidBearer(await refusal(() => auth.authenticate(tokens.access_token)), 'unknown signing key');
      } finally {
        otherKeys.close();
        await rm(otherDir, { recursive: true, force: true });
      }
    });

    it('a valid token whose session the store does not know, or knows for another user', async () => {
      const { session } = await startSession(parts, store, 'alice');
      const unknown = await parts.issuer.issueTokenSet({ ...session, sid: randomUUID() }, parts.clock.ms);
      const otherUser = await parts.issuer.issueTokenSet({ ...session, sub: parts.users.users.bob!.id, username: 'bob' }, parts.clock.ms);
      parts.tokens.push(unknown.access_token, otherUser.access_token);
      expectInvalidBearer(await refusal(() => auth.authenticate(unknown.access_token)), 'session ended');
      expectInvalidBearer(await refusal(() => auth.authenticate(otherUser.access_token)), 'session ended');
      expect(auth.size).toBe(0);
    });

    it('and logs the refusal at debug with its reason', async () => {
      await refusal(() => auth.authenticate('not-a-token'));
      const line = parts.logs.entries().find((entry) => entry.event === 'bearer_refused');
      expect(line).toMatchObject({ level: 20, reason: 'malformed token' });
    });
  });

  it('reads an admitted token from a header as it reads a new one (proxy, front door): a `Bearer` or `DPoP` shortcut changes nothing', async () => {
    const { tokens } = await startSession(parts, store, 'alice');
    const token = tokens.access_token;
    await auth.authenticate(token);
    const headers = [
      `Bearer ${token}`,
      `bearer ${token}`,
      `BEARER ${token}`,
      `Bearer  ${token}`,
      `Bearer ${token}  `,
      `Bearer ${token}!`,
      `Bearer ${token} x`,
      `Bearer\t${token}`,
      `Bearerx${token}`,
      `Basic ${token}`,
      `Bearer ${token.slice(0, -1)}`,
      `Bearer ${token}==`,
      `DPoP ${token}`,
      `dpop ${token}`,
      `DPOP ${token}`,
      `DPoP  ${token}`,
      `DPoP ${token} `,
      `DPoP\t${token}`,
      `DPoPx${token}`,
      `DPo ${token}`,
      `DPoP ${token}!`,
      `Dear ${token}`,
    ];
    for (const authorization of headers) {
      const expected = attempt(() => bearerToken({ authorization }));
      expect(
        attempt(() => auth.presented({ authorization })),
        authorization.replace(token, '<token>'),
      ).toStrictEqual(expected);
      // The front door's question (is this request's token one admitted before?) reads the header the same way.
      expect(auth.admitsFromMemory({ authorization }), authorization.replace(token, '<token>')).toBe('token' in expected && expected.token === token);
    }
    // Shaped as the shortcut wants, yet not admitted: the syntax is read, and a bad one refused.
    expect(attempt(() => auth.presented({ authorization: `Bearer ${token.replace('.', '!')}` }))).toStrictEqual({ refused: 'invalid_bearer_token' });
  });

  it('answers a cached token synchronously, without asking the store', async () => {
    const { tokens } = await startSession(parts, store, 'alice');
    const first = auth.authenticate(tokens.access_token);
    expect(isPromise(first)).toBe(true);
    const principal = await first;
    const callsAfterFirst = store.totalCalls;
    expect(store.calls.getSession).toBe(1);

    for (let i = 0; i < 100; i += 1) {
      const again = auth.authenticate(tokens.access_token);
      expect(isPromise(again)).toBe(false);
      expect(again).toBe(principal);
    }
    expect(store.totalCalls).toBe(callsAfterFirst);
  });

  it('holds at most maxEntries tokens, dropping the least recently used', async () => {
    auth.close();
    auth = authenticator(3);
    const logins: Login[] = [];
    for (let i = 0; i < 8; i += 1) {
      const login = await startSession(parts, store, i % 2 === 0 ? 'alice' : 'bob');
      logins.push(login);
      await auth.authenticate(login.tokens.access_token);
      expect(auth.size).toBeLessThanOrEqual(3);
    }
    expect(auth.size).toBe(3);
    // The three most recent are hits; the first was evicted.
    for (const login of logins.slice(-3)) expect(isPromise(auth.authenticate(login.tokens.access_token))).toBe(false);
    const ended: string[] = [];
    auth.onSessionEnded((sid) => ended.push(sid));
    // Revoking an evicted session's token touches none of the cached ones.
    await store.revokeSession(logins[0]!.session.sid);
    expect(ended).toContain(logins[0]!.session.sid);
    expect(auth.size).toBe(3);
    const evicted = auth.authenticate(logins[1]!.tokens.access_token);
    expect(isPromise(evicted)).toBe(true);
    await evicted;
    expect(auth.size).toBe(3);
  });

  it('stops using a cached token at its exp, and refuses it once the clock tolerance is over too', async () => {
    const { tokens } = await startSession(parts, store, 'alice');
    await auth.authenticate(tokens.access_token);
    const expMs = expSeconds(tokens.access_token) * 1000;

    parts.clock.ms = expMs - 1;
    expect(isPromise(auth.authenticate(tokens.access_token))).toBe(false);
    const lookups = store.calls.getSession;

    // At exp the entry goes; the verifier still takes the token within its
    // clock tolerance, but it is not cached again.
    parts.clock.ms = expMs;
    const atExp = auth.authenticate(tokens.access_token);
    expect(isPromise(atExp)).toBe(true);
    await atExp;
    expect(store.calls.getSession).toBe(lookups + 1);
    expect(auth.size).toBe(0);
    const stillNotCached = auth.authenticate(tokens.access_token);
    expect(isPromise(stillNotCached)).toBe(true);
    await stillNotCached;

    parts.clock.ms = expMs + CLOCK_TOLERANCE_S * 1000 + 1_000;
    expectInvalidBearer(await refusal(() => auth.authenticate(tokens.access_token)), 'token expired');
    expect(auth.size).toBe(0);
  });

  it('drops the cached tokens of a revoked session, and only those, and says the session ended', async () => {
    const alice = await startSession(parts, store, 'alice');
    const bob = await startSession(parts, store, 'bob');
    await auth.authenticate(alice.tokens.access_token);
    await auth.authenticate(alice.tokens.refresh_token);
    await auth.authenticate(bob.tokens.access_token);
    expect(auth.size).toBe(3);
    const ended: string[] = [];
    const off = auth.onSessionEnded((sid) => ended.push(sid));

    expect(await store.revokeSession(alice.session.sid)).toBe(true);
    expect(ended).toContain(alice.session.sid);
    expect(auth.size).toBe(1);
    expect(auth.authenticate(bob.tokens.access_token)).toMatchObject({ sid: bob.session.sid });
    for (const token of [alice.tokens.access_token, alice.tokens.refresh_token]) {
      expectInvalidBearer(await refusal(() => auth.authenticate(token)), 'session ended');
    }

    off();
    await store.revokeSession(bob.session.sid);
    expect(new Set(ended)).toStrictEqual(new Set([alice.session.sid]));
    expect(auth.size).toBe(0);
  });

  it('never caches a token whose session is revoked while its first check reads the session', async () => {
    const { session, tokens } = await startSession(parts, store, 'alice');
    const release = deferred();
    store.hold = release.promise;
    const first = auth.authenticate(tokens.access_token);
    // The store has answered that the session is active…
    await store.whenAnswered(1);
    // …and the revocation is heard before that answer is used.
    expect(await store.revokeSession(session.sid)).toBe(true);
    store.hold = undefined;
    release.resolve();

    expectInvalidBearer(await refusal(() => first), 'session ended');
    expect(auth.size).toBe(0);
    expectInvalidBearer(await refusal(() => auth.authenticate(tokens.access_token)), 'session ended');
  });

  it('does not cache a first check that overlapped a resumed revocation feed', async () => {
    const { tokens } = await startSession(parts, store, 'alice');
    const release = deferred();
    store.hold = release.promise;
    const first = auth.authenticate(tokens.access_token);
    await store.whenAnswered(1);
    store.announceFeedResumed();
    store.hold = undefined;
    release.resolve();

    // Nothing says the session ended: the answer stands, but is not remembered.
    expect(await first).toMatchObject({ username: 'alice' });
    expect(auth.size).toBe(0);
    const next = auth.authenticate(tokens.access_token);
    expect(isPromise(next)).toBe(true);
    await next;
    expect(auth.size).toBe(1);
  });

  it('does not cache a first check slower than the window in which revocations are remembered', async () => {
    const { tokens } = await startSession(parts, store, 'alice');
    const release = deferred();
    store.hold = release.promise;
    const first = auth.authenticate(tokens.access_token);
    await store.whenAnswered(1);
    parts.clock.ms += 10_000;
    store.hold = undefined;
    release.resolve();

    expect(await first).toMatchObject({ username: 'alice' });
    expect(auth.size).toBe(0);
  });

  it('refuses a cached token on the next use once its user is disabled', async () => {
    const alice = await startSession(parts, store, 'alice');
    const bob = await startSession(parts, store, 'bob');
    await auth.authenticate(alice.tokens.access_token);
    await auth.authenticate(bob.tokens.access_token);
    await changeUsers(parts, (data) => setDisabled(data, 'alice', true));

    let thrown: unknown;
    try {
      auth.authenticate(alice.tokens.access_token);
    } catch (error) {
      thrown = error;
    }
    // Refused on the hit itself: synchronously, before any store lookup.
    expect(thrown).toBeInstanceOf(GatehouseError);
    expectInvalidBearer(thrown as GatehouseError, 'user or API key no longer active');
    expect(auth.authenticate(bob.tokens.access_token)).toMatchObject({ username: 'bob' });
    expectInvalidBearer(await refusal(() => auth.authenticate(alice.tokens.access_token)), 'user or API key no longer active');
    expect(auth.size).toBe(1);
  });

  it('refuses a cached token of an API-key login once the key is revoked, and only that login', async () => {
    const byKey = await startSession(parts, store, 'alice', { apiKey: true });
    const byPassword = await startSession(parts, store, 'alice');
    await auth.authenticate(byKey.tokens.access_token);
    await auth.authenticate(byPassword.tokens.access_token);
    await changeUsers(parts, (data) => revokeApiKey(data, byKey.session.apiKeyId!));

    expectInvalidBearer(await refusal(() => auth.authenticate(byKey.tokens.access_token)), 'user or API key no longer active');
    expect(auth.authenticate(byPassword.tokens.access_token)).toMatchObject({ method: 'pwd' });
  });

  it('shares one verification and one store lookup among concurrent first uses of a token', async () => {
    const { tokens } = await startSession(parts, store, 'alice');
    const attempts = Array.from({ length: 25 }, () => auth.authenticate(tokens.access_token));
    expect(attempts.every(isPromise)).toBe(true);
    const principals = await Promise.all(attempts);
    expect(store.calls.getSession).toBe(1);
    expect(new Set(principals).size).toBe(1);
    expect(auth.size).toBe(1);
  });

  it('shares a failure among concurrent first uses, answers 503 for a failing store, and asks again afterwards', async () => {
    const { tokens } = await startSession(parts, store, 'alice');
    store.failNext = true;
    const outcomes = await Promise.allSettled(Array.from({ length: 5 }, () => auth.authenticate(tokens.access_token)));
    expect(store.calls.getSession).toBe(1);
    for (const outcome of outcomes) {
      expect(outcome.status).toBe('rejected');
      expect((outcome as PromiseRejectedResult).reason).toMatchObject({ code: 'store_unavailable', status: 503 });
    }
    expect(auth.size).toBe(0);
    expect(await auth.authenticate(tokens.access_token)).toMatchObject({ username: 'alice' });
    expect(store.calls.getSession).toBe(2);
  });

  it('forgets everything and hears no more revocations once closed, yet still checks tokens', async () => {
    const alice = await startSession(parts, store, 'alice');
    await auth.authenticate(alice.tokens.access_token);
    const ended: string[] = [];
    auth.onSessionEnded((sid) => ended.push(sid));
    auth.close();
    expect(auth.size).toBe(0);
    expect(await auth.authenticate(alice.tokens.access_token)).toMatchObject({ username: 'alice' });
    expect(auth.size).toBe(0);
    await store.revokeSession(alice.session.sid);
    expect(ended).toStrictEqual([]);
    expectInvalidBearer(await refusal(() => auth.authenticate(alice.tokens.access_token)), 'session ended');
  });

  it('refuses a cache size that is not a positive integer', () => {
    for (const maxEntries of [0, -1, 1.5, Number.NaN]) {
      expect(() => authenticator(maxEntries)).toThrow(RangeError);
    }
  });
});

describe('BearerAuthenticator under a flood of revocations', () => {
  it('does not cache a first check during which a remembered revocation had to be forgotten', async () => {
    const parts = await makeParts();
    // 10,001 sessions of one user: room for them past the default sessions-per-user cap.
    const store = new CountingStore(new MemoryStore({ maxSessionsPerUser: 20_000 }));
    const auth = new BearerAuthenticator({
      verifier: parts.verifier,
      store,
      identity: parts.identity,
      maxEntries: 10,
      logger: silent,
      now: () => parts.clock.ms,
    });
    try {
      const others = Array.from({ length: 10_001 }, () => randomUUID());
      const now = Date.now();
      for (const sid of others) await store.createSession({ sid, sub: 'u-other', username: 'other', method: 'pwd', createdAt: now, expiresAt: now + 60_000 });
      const { tokens } = await startSession(parts, store, 'alice');
      const release = deferred();
      store.hold = release.promise;
      const first = auth.authenticate(tokens.access_token);
      await store.whenAnswered(1);
      // More revocations than are remembered: the first ones are forgotten
      // while the check is under way, so it cannot know its session was not among them.
      for (const sid of others) expect(await store.revokeSession(sid)).toBe(true);
      store.hold = undefined;
      release.resolve();

      expect(await first).toMatchObject({ username: 'alice' });
      expect(auth.size).toBe(0);
      await auth.authenticate(tokens.access_token);
      expect(auth.size).toBe(1);
    } finally {
      auth.close();
      await store.close();
      await disposeParts(parts);
    }
  });
});

// Stops and restarts Redis, so it always runs its own server.
describe('BearerAuthenticator when the revocation feed resumes', () => {
  let server: RedisServerHandle;
  let parts: Parts;
  let store: CountingStore;
  let auth: BearerAuthenticator;

  beforeAll(async () => {
    server = await startRedisServer();
  });

  afterAll(async () => {
    await server?.close();
  });

  beforeEach(async () => {
    parts = await makeParts();
    store = new CountingStore(await createStore({ url: server.url, keyPrefix: uniquePrefix() }, silent));
    auth = new BearerAuthenticator({
      verifier: parts.verifier,
      store,
      identity: parts.identity,
      maxEntries: 100,
      logger: parts.logs.logger,
      now: () => parts.clock.ms,
    });
  });

  afterEach(async () => {
    auth.close();
    await server.start();
    await store.close();
    await disposeParts(parts);
  });

  it('drops every cached token (revocations may have been missed) and says so at info', async () => {
    const alice = await startSession(parts, store, 'alice');
    const bob = await startSession(parts, store, 'bob');
    await auth.authenticate(alice.tokens.access_token);
    await auth.authenticate(bob.tokens.access_token);
    expect(auth.size).toBe(2);

    // Heard by the authenticator first: it subscribed when it was built.
    const resumed = store.nextFeedResumed();
    await server.stop();
    await server.start();
    await resumed;
    expect(auth.size).toBe(0);
    const cleared = parts.logs.entries().find((entry) => entry.event === 'bearer_cache_cleared');
    expect(cleared).toMatchObject({ level: 30, dropped: 2 });

    // The restarted Redis is empty: put Alice's session back and she is checked afresh, at the store.
    await vi.waitFor(() => store.ping(), { timeout: 10_000, interval: 100 });
    await store.createSession(alice.session);
    const lookups = store.calls.getSession;
    const again = auth.authenticate(alice.tokens.access_token);
    expect(isPromise(again)).toBe(true);
    expect(await again).toMatchObject({ sid: alice.session.sid });
    expect(store.calls.getSession).toBe(lookups + 1);
    expectInvalidBearer(await refusal(() => auth.authenticate(bob.tokens.access_token)), 'session ended');

    const logged = parts.logs.text();
    for (const token of parts.tokens) expect(logged).not.toContain(token);
  });
});
