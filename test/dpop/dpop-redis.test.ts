// DPoP replay across instances: two gateways behind one (pretend) load
// balancer, sharing one real redis-server, the users file and the keys file as
// a deployment does. A proof one instance accepted is refused by the other;
// with Redis gone, a bound token is refused with 503, never let through.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { expectDiagnoses } from '../helpers/diagnoses.js';
import { clientKey, proof, type ClientKey } from '../helpers/dpop.js';
import { jwtPayload, postJson, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { startRedisServer, uniquePrefix, type RedisServerHandle } from '../helpers/redis-server.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

/** The URL clients see: the load balancer's, which both instances trust (`server.trustedProxies`). */
const PUBLIC = 'https://api.example.com';
const BALANCER = { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'api.example.com' };

let redis: RedisServerHandle;
let upstream: Upstream;
let a: TestGateway;
let b: TestGateway;
let key: ClientKey;
let tokens: TokenSetBody;

function call(gateway: TestGateway, path: string, dpop: string, token = tokens.access_token): Promise<Response> {
  return fetch(`${gateway.url}${path}`, { headers: { ...BALANCER, authorization: `DPoP ${token}`, dpop } });
}

beforeAll(async () => {
  [redis, upstream] = await Promise.all([startRedisServer(), startUpstream()]);
  const shared = {
    server: { trustedProxies: ['127.0.0.1'] },
    store: { url: redis.url, keyPrefix: uniquePrefix() },
    routes: [{ name: 'api', prefix: '/api', upstreams: [upstream.url] }],
  };
  a = await startTestGateway({ config: shared });
  b = await startTestGateway({
    config: { ...shared, identity: { usersFile: a.usersFile }, tokens: { keysFile: a.config.tokens.keysFile } },
  });
  key = await clientKey('ES256');
  const response = await postJson(
    `${a.url}/api/v1/auth/login`,
    { username: 'alice', password: 'alice-password-1' },
    { ...BALANCER, dpop: await proof(key, 'POST', `${PUBLIC}/api/v1/auth/login`) },
  );
  expect(response.status).toBe(200);
  tokens = (await response.json()) as TokenSetBody;
  expect(jwtPayload(tokens.access_token).cnf).toEqual({ jkt: key.jkt });
});

afterAll(async () => {
  await a?.close();
  await b?.close();
  await upstream?.close();
  await redis?.close();
});

describe('DPoP proofs on two instances sharing Redis', () => {
  it('htu is the URL the client used: the trusted balancer names its scheme and host', async () => {
    expect((await call(b, '/api/orders', await proof(key, 'GET', `${PUBLIC}/api/orders`, { accessToken: tokens.access_token }))).status).toBe(200);
    // The instance's own address is not what the client asked for.
    const own = await call(b, '/api/orders', await proof(key, 'GET', `${b.url}/api/orders`, { accessToken: tokens.access_token }));
    expectDiagnoses(own.status, await own.text(), 401, /htu is not the request URL$/);
  });

  it('attack: a proof accepted by one instance is refused when replayed on the other', async () => {
    const once = await proof(key, 'GET', `${PUBLIC}/api/orders`, { accessToken: tokens.access_token });
    expect((await call(a, '/api/orders', once)).status).toBe(200);
    const replayed = await call(b, '/api/orders', once);
    expectDiagnoses(replayed.status, await replayed.text(), 401, /the DPoP proof was used before$/);
  });

  it('a refresh on the other instance with the same key binds the new access token to it', async () => {
    const response = await postJson(
      `${b.url}/api/v1/auth/refresh`,
      { refresh_token: tokens.refresh_token },
      { ...BALANCER, dpop: await proof(key, 'POST', `${PUBLIC}/api/v1/auth/refresh`) },
    );
    expect(response.status).toBe(200);
    expect(jwtPayload(((await response.json()) as TokenSetBody).access_token).cnf).toEqual({ jkt: key.jkt });
  });

  it('attack: a stream of bad proofs with a stolen token marks its address a suspect, as bad tokens do', async () => {
    const address = '203.0.113.9';
    expect(a.gateway.abuse.isSuspect(address)).toBe(false);
    for (let i = 0; i < a.config.limits.abuse.suspectAfterStrikes; i++) {
      const wrongUrl = await proof(key, 'GET', `${PUBLIC}/elsewhere`, { accessToken: tokens.access_token });
      const response = await fetch(`${a.url}/api/orders`, {
        headers: { ...BALANCER, 'x-forwarded-for': address, authorization: `DPoP ${tokens.access_token}`, dpop: wrongUrl },
      });
      expect(response.status).toBe(401);
    }
    expect(a.gateway.abuse.isSuspect(address)).toBe(true);
  });

  // Last: it takes Redis away.
  it('with the store down, a bound token is refused with 503 (fail closed), not let through', async () => {
    // Admitted once, so its token is in the instance's cache: only the replay memory needs the store.
    expect((await call(a, '/api/orders', await proof(key, 'GET', `${PUBLIC}/api/orders`, { accessToken: tokens.access_token }))).status).toBe(200);
    await redis.stop();
    const response = await call(a, '/api/orders', await proof(key, 'GET', `${PUBLIC}/api/orders`, { accessToken: tokens.access_token }));
    expectDiagnoses(response.status, await response.text(), 503, /temporarily_unavailable/);
  });
});
