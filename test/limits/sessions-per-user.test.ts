// Attack 5 of the abuse issue: one user with an API key logging in thousands
// of times a second, each login a session kept for a day, grew the store
// without bound. A user holds at most `limits.maxSessionsPerUser` sessions:
// a login past it ends the oldest, announced like any revocation. The
// in-memory store is bounded as a whole too.
import { Redis } from 'ioredis';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createStore } from '../../src/store/create-store.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import type { Store } from '../../src/store/store.js';
import { login, startTestGateway } from '../helpers/gateway.js';
import { logSink } from '../helpers/log-sink.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { send } from '../helpers/http-client.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';
import { requestRecord, sessionRecord } from '../store/store-contract.js';

const CAP = 5;
const LOGINS = 2_000;
const silent = pino({ level: 'silent' });

let redis: { url: string; close(): Promise<void> };
let upstream: Upstream;

beforeAll(async () => {
  redis = await testRedisUrl();
  upstream = await startUpstream();
});

afterAll(async () => {
  await upstream?.close();
  await redis?.close();
});

const limits = { maxSessionsPerUser: CAP, memoryMaxSessions: 1_000_000, memoryMaxRequests: 1_000_000 };

describe.each([
  { kind: 'memory', open: () => createStore({ keyPrefix: 'x:' }, silent, limits) },
  { kind: 'redis', open: () => createStore({ url: redis.url, keyPrefix: uniquePrefix() }, silent, limits) },
])('attack 5: one user logging in thousands of times ($kind store)', ({ open }) => {
  it('keeps the user at the cap, ending the oldest sessions with a revocation each', async () => {
    const store: Store = await open();
    const revoked: string[] = [];
    store.onSessionRevoked((sid) => revoked.push(sid));
    try {
      const sids: string[] = [];
      const start = Date.now();
      for (let i = 0; i < LOGINS; i++) {
        const session = sessionRecord({ sub: 'one-user', createdAt: start + i, expiresAt: start + i + 3_600_000 });
        sids.push(session.sid);
        await store.createSession(session);
      }
      const live = await Promise.all(sids.map((sid) => store.getSession(sid)));
      // The newest CAP sessions are the ones left.
      expect(live.map((session) => session !== null)).toEqual(sids.map((_, i) => i >= LOGINS - CAP));
      expect(new Set(revoked)).toEqual(new Set(sids.slice(0, LOGINS - CAP)));
      // Another user is not touched by the first one's logins.
      const other = sessionRecord({ sub: 'another-user' });
      await store.createSession(other);
      expect(await store.getSession(other.sid)).not.toBeNull();
      if (store.kind === 'redis') {
        const raw = new Redis(redis.url);
        try {
          const keys = await raw.keys('*user-sessions:{one-user}');
          expect(keys).toHaveLength(1);
          expect(await raw.zcard(keys[0]!)).toBe(CAP);
        } finally {
          raw.disconnect();
        }
      } else {
        expect((store as MemoryStore).sessionCount('one-user')).toBe(CAP);
      }
    } finally {
      await store.close();
    }
  });
});

describe('attack 5: one user logging in thousands of times', () => {
  it('ends the oldest session past limits.maxSessionsPerUser: its token stops working, the newest still work', async () => {
    const gw = await startTestGateway({
      config: {
        limits: { maxSessionsPerUser: CAP },
        routes: [{ name: 'private', prefix: '/private', upstreams: [upstream.url] }],
      },
    });
    try {
      const apiKey = gw.apiKeys.alice![0]!;
      const first = await login(gw.url, 'alice', apiKey);
      const authorized = (token: string) => send(`${gw.url}/private/x`, { headers: { authorization: `Bearer ${token}` } });
      // Used once, so that its token sits in the verified-token cache: the revocation must reach it there.
      expect((await authorized(first.access_token)).status).toBe(200);
      const later = [];
      for (let i = 0; i < CAP * 4; i++) later.push(await login(gw.url, 'alice', apiKey));
      expect((await authorized(first.access_token)).status).toBe(401);
      const refreshed = await fetch(`${gw.url}/api/v1/auth/refresh`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ refresh_token: first.refresh_token }),
      });
      expect(refreshed.status).toBe(400);
      for (const tokens of later.slice(-CAP)) expect((await authorized(tokens.access_token)).status).toBe(200);
      expect((await authorized(later[later.length - CAP - 1]!.access_token)).status).toBe(401);
    } finally {
      await gw.close();
    }
  });
});

describe('the in-memory store is bounded', () => {
  it('ends the oldest sessions and drops the oldest request records past its bounds, with a warning', async () => {
    const log = logSink();
    const store = new MemoryStore({ logger: log.logger, maxSessions: 3, maxRequests: 2 });
    try {
      const sessions = Array.from({ length: 5 }, (_, i) => sessionRecord({ sub: `user-${i}` }));
      for (const session of sessions) await store.createSession(session);
      expect(store.size).toBe(3);
      expect(await store.getSession(sessions[0]!.sid)).toBeNull();
      expect(await store.getSession(sessions[4]!.sid)).not.toBeNull();
      const records = Array.from({ length: 3 }, () => requestRecord());
      for (const record of records) await store.createRequest(record, 60_000);
      expect(await store.getRequest(records[0]!.id)).toBeNull();
      expect(await store.getRequest(records[2]!.id)).not.toBeNull();
      expect(store.evicted).toEqual({ sessions: 2, requests: 1 });
      await log.next((line) => line.event === 'store_evicted' && line.kind === 'session');
      await log.next((line) => line.event === 'store_evicted' && line.kind === 'request');
    } finally {
      await store.close();
    }
  });
});
