// Factors live where the users live: with `identity.usersIn: store`, two
// instances on one real redis-server. A TOTP enrolled on A logs in on B, and a
// code B took is refused on A (the used steps are in the store too).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totpCodeAt } from '../../src/factors/totp-codes.js';
import { jwtPayload, login, postJson, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { testRedisUrl, uniquePrefix } from '../helpers/redis-server.js';
import { nextIdentityChange } from '../helpers/users.js';

const SERVICE_TOKEN = 'aVk6LwqJsypSp6+HMvvJSnkXyQKnbn5Mcm5TMUhXxps=';
const USERS = [{ name: 'alice', password: 'alice-password-1' }];

let redis: { url: string; close(): Promise<void> };
let a: TestGateway;
let b: TestGateway;

beforeAll(async () => {
  redis = await testRedisUrl();
  const keyPrefix = uniquePrefix();
  const config = {
    store: { url: redis.url, keyPrefix },
    identity: { usersIn: 'store', usersRereadS: 3600 },
    requests: { serviceToken: SERVICE_TOKEN },
  };
  a = await startTestGateway({ users: USERS, config });
  b = await startTestGateway({ users: USERS, config });
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await redis?.close();
});

describe('factors in the store', () => {
  it('are enrolled on one instance and used on another; a code taken there is refused here', async () => {
    const { access_token } = await login(a.url, 'alice', 'alice-password-1');
    const headers = { authorization: `Bearer ${access_token}` };
    const { secret } = (await (await postJson(`${a.url}/api/v1/account/factors/totp`, {}, headers)).json()) as { secret: string };
    const heardOnB = nextIdentityChange(b.gateway.identity);
    const confirmed = await postJson(`${a.url}/api/v1/account/factors/totp/confirm`, { code: totpCodeAt(secret, Date.now() - 30_000) }, headers);
    expect(confirmed.status).toBe(200);
    await heardOnB;

    const code = totpCodeAt(secret, Date.now());
    const onB = await postJson(`${b.url}/api/v1/auth/login`, { username: 'alice', password: 'alice-password-1', otp: code });
    expect(onB.status).toBe(200);
    expect(jwtPayload(((await onB.json()) as TokenSetBody).access_token).acr).toBe('urn:gatehouse:acr:mfa');
    const onA = await postJson(`${a.url}/api/v1/auth/login`, { username: 'alice', password: 'alice-password-1', otp: code });
    expect(onA.status).toBe(401);
  });
});
