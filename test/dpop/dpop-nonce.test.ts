// DPoP server nonces (RFC 9449 8, 9): with `tokens.dpop.requireNonce`, every
// proof must carry the nonce the gateway hands out. A client nobody here wrote
// (openid-client) learns it from the first refusal and retries; two instances
// on one real redis-server hand out the same nonce; a rotation keeps the
// previous nonce good for one more period, and no longer.
import { calculateJwkThumbprint, exportJWK } from 'jose';
import * as oidc from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DpopNonces } from '../../src/dpop/nonces.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { expectDiagnoses } from '../helpers/diagnoses.js';
import { clientKey, proof, type ClientKey } from '../helpers/dpop.js';
import { jwtPayload, postJson, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { freePort } from '../helpers/ports.js';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

let redis: RedisServerHandle;
let upstream: Upstream;
let a: TestGateway;
let b: TestGateway;

beforeAll(async () => {
  [redis, upstream] = await Promise.all([startRedisServer(), startUpstream()]);
  const port = await freePort();
  const shared = {
    tokens: { dpop: { requireNonce: true, nonceRotateS: 3600 } },
    store: { url: redis.url, keyPrefix: uniquePrefix() },
    routes: [{ name: 'api', prefix: '/api', upstreams: [upstream.url] }],
  };
  a = await startTestGateway({ port, config: shared });
  b = await startTestGateway({
    config: {
      ...shared,
      identity: { usersFile: a.usersFile },
      tokens: { ...shared.tokens, keysFile: a.config.tokens.keysFile, issuer: a.config.tokens.issuer },
    },
  });
});

afterAll(async () => {
  await a?.close();
  await b?.close();
  await upstream?.close();
  await redis?.close();
});

describe('tokens.dpop.requireNonce', () => {
  it('openid-client logs in, calls a route and refreshes, picking the nonce up from use_dpop_nonce', async () => {
    const config = await oidc.discovery(new URL(a.url), 'a-cli', undefined, oidc.None(), { execute: [oidc.allowInsecureRequests] });
    const keyPair = await oidc.randomDPoPKeyPair('ES256');
    const dpop = oidc.getDPoPHandle(config, keyPair);
    const tokens = await oidc.genericGrantRequest(config, 'password', { username: 'alice', password: 'alice-password-1' }, { DPoP: dpop });
    expect(jwtPayload(tokens.access_token).cnf).toEqual({ jkt: await calculateJwkThumbprint(await exportJWK(keyPair.publicKey), 'sha256') });
    const response = await oidc.fetchProtectedResource(config, tokens.access_token, new URL(`${a.url}/api/orders`), 'GET', undefined, undefined, {
      DPoP: dpop,
    });
    expect(response.status).toBe(200);
    const refreshed = await oidc.refreshTokenGrant(config, tokens.refresh_token!, undefined, { DPoP: dpop });
    expect(refreshed.token_type).toBe('dpop');
  });

  describe('by hand', () => {
    let key: ClientKey;
    let tokens: TokenSetBody;
    let nonce: string;

    beforeAll(async () => {
      key = await clientKey('ES256');
      const url = `${a.url}/api/v1/auth/login`;
      const body = { username: 'alice', password: 'alice-password-1' };
      const first = await postJson(url, body, { dpop: await proof(key, 'POST', url) });
      expectDiagnoses(first.status, await first.text(), 400, /^400 \(Bad Request\) - use_dpop_nonce: the DPoP proof needs the server nonce$/);
      nonce = first.headers.get('dpop-nonce')!;
      expect(nonce).toMatch(/^[\w-]{24}$/);
      const second = await postJson(url, body, { dpop: await proof(key, 'POST', url, { extra: { nonce } }) });
      expect(second.status).toBe(200);
      tokens = (await second.json()) as TokenSetBody;
    });

    it('attack: a bound token whose proof has no nonce (signed ahead of time) is 401 use_dpop_nonce, with the nonce to use', async () => {
      const url = `${a.url}/api/orders`;
      const response = await fetch(url, {
        headers: { authorization: `DPoP ${tokens.access_token}`, dpop: await proof(key, 'GET', url, { accessToken: tokens.access_token }) },
      });
      expectDiagnoses(response.status, await response.text(), 401, /use_dpop_nonce: the DPoP proof needs the server nonce$/);
      expect(response.headers.get('www-authenticate')).toMatch(/^DPoP error="use_dpop_nonce"/);
      // The nonce to use now: a proof with it passes (it is this test's nonce, or the next one should a rotation have come between).
      const current = response.headers.get('dpop-nonce')!;
      const retried = await fetch(url, {
        headers: {
          authorization: `DPoP ${tokens.access_token}`,
          dpop: await proof(key, 'GET', url, { accessToken: tokens.access_token, extra: { nonce: current } }),
        },
      });
      expect(retried.status).toBe(200);
    });

    it('attack: a made-up nonce is refused as a missing one', async () => {
      const url = `${a.url}/api/orders`;
      const forged = await proof(key, 'GET', url, { accessToken: tokens.access_token, extra: { nonce: 'made-up-nonce-000000000' } });
      expect((await fetch(url, { headers: { authorization: `DPoP ${tokens.access_token}`, dpop: forged } })).status).toBe(401);
    });

    it('the other instance accepts the nonce one instance handed out: it lives in the store', async () => {
      const url = `${b.url}/api/orders`;
      const response = await fetch(url, {
        headers: { authorization: `DPoP ${tokens.access_token}`, dpop: await proof(key, 'GET', url, { accessToken: tokens.access_token, extra: { nonce } }) },
      });
      expect(response.status).toBe(200);
    });
  });
});

describe('nonce rotation', () => {
  it('a rotation keeps the previous nonce good for one more period, and no longer', async () => {
    let now = 1_000_000_000_000;
    const store = new MemoryStore();
    const nonces = new DpopNonces({ store, rotateS: 60, now: () => now });
    const first = await nonces.current();
    expect(await nonces.accepts(first)).toBe(true);
    now += 60_000;
    const second = await nonces.current();
    expect(second).not.toBe(first);
    expect(await nonces.accepts(first)).toBe(true);
    expect(await nonces.accepts(second)).toBe(true);
    now += 60_000;
    expect(await nonces.accepts(first)).toBe(false);
    expect(await nonces.accepts(second)).toBe(true);
    expect(await nonces.accepts(undefined)).toBe(false);
    await store.close();
  });
});
