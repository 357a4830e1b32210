// From 401 to 200 as an RFC 9470 client does it: the route's challenge names
// the level, the client logs in again with it (its bearer token naming the
// session, the second factor's code beside the password), and the new token,
// of the same session, is let through. Logout still ends the whole session.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { totpCodeAt, TOTP_PERIOD_S } from '../../src/factors/totp-codes.js';
import { jwtPayload, login, postJson, startTestGateway, type TestGateway, type TokenSetBody } from '../helpers/gateway.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

const MFA = 'urn:gatehouse:acr:mfa';

let upstream: Upstream;
let gw: TestGateway;
let secret: string;

beforeAll(async () => {
  upstream = await startUpstream();
  const routes = [{ name: 'payments', prefix: '/payments', upstreams: [upstream.url], authorize: { acr: [MFA], maxAgeS: 600 } }];
  gw = await startTestGateway({
    users: [
      { name: 'alice', password: 'alice-password-1' },
      { name: 'bob', password: 'bob-password-1' },
    ],
    config: { routes },
  });
  const { access_token } = await login(gw.url, 'alice', 'alice-password-1');
  const headers = { authorization: `Bearer ${access_token}` };
  secret = ((await (await postJson(`${gw.url}/api/v1/account/factors/totp`, {}, headers)).json()) as { secret: string }).secret;
  const confirmed = await postJson(`${gw.url}/api/v1/account/factors/totp/confirm`, { code: totpCodeAt(secret, Date.now() - TOTP_PERIOD_S * 1000) }, headers);
  expect(confirmed.status).toBe(200);
});
afterAll(async () => {
  await gw?.close();
  await upstream?.close();
});

const pay = (token: string) => fetch(`${gw.url}/payments/1`, { method: 'POST', headers: { authorization: `Bearer ${token}` }, body: '{}' });

/** RFC 9470 4: the challenge's parameters. */
function challenge(response: Response): Record<string, string> {
  const header = response.headers.get('www-authenticate') ?? '';
  return Object.fromEntries([...header.matchAll(/(\w+)=(?:"([^"]*)"|(\d+))/g)].map((m) => [m[1]!, m[2] ?? m[3]!]));
}

describe('stepping up', () => {
  it('gets from 401 to 200 with the documented steps, in the same session', async () => {
    const first = await login(gw.url, 'alice', 'alice-password-1');
    const refused = await pay(first.access_token);
    expect(refused.status).toBe(401);
    const asked = challenge(refused);
    expect(asked).toEqual({ error: 'insufficient_user_authentication', acr_values: MFA, max_age: '600' });

    const stepped = await postJson(
      `${gw.url}/api/v1/auth/login`,
      { username: 'alice', password: 'alice-password-1', otp: totpCodeAt(secret, Date.now()), acr_values: asked.acr_values, max_age: Number(asked.max_age) },
      { authorization: `Bearer ${first.access_token}` },
    );
    expect(stepped.status).toBe(200);
    const tokens = (await stepped.json()) as TokenSetBody;
    const claims = jwtPayload(tokens.access_token);
    expect(claims).toMatchObject({ sid: jwtPayload(first.access_token).sid, acr: MFA, amr: ['pwd', 'otp'] });
    expect((await pay(tokens.access_token)).status).toBe(200);

    // One session: logging out with the new token ends the old tokens too.
    expect((await fetch(`${gw.url}/api/v1/auth/logout`, { method: 'POST', headers: { authorization: `Bearer ${tokens.access_token}` } })).status).toBe(204);
    const refresh = await postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: first.refresh_token });
    expect(refresh.status).toBe(400);
  });

  it("does not step up another user's session", async () => {
    const bobs = await login(gw.url, 'bob', 'bob-password-1');
    const response = await postJson(
      `${gw.url}/api/v1/auth/login`,
      { username: 'alice', password: 'alice-password-1', otp: totpCodeAt(secret, Date.now() + TOTP_PERIOD_S * 1000) },
      { authorization: `Bearer ${bobs.access_token}` },
    );
    expect(response.status).toBe(401);
  });

  it('takes the factor at the OAuth token endpoint too (a new session there)', async () => {
    const form = new URLSearchParams({ grant_type: 'password', username: 'alice', password: 'alice-password-1', acr_values: MFA });
    const without = await fetch(`${gw.url}/oauth/token`, { method: 'POST', body: form });
    expect(without.status).toBe(401);
    // The next step's code: the steps before were taken by the enrolment and the logins above.
    form.set('otp', totpCodeAt(secret, Date.now() + TOTP_PERIOD_S * 1000));
    const ok = await fetch(`${gw.url}/oauth/token`, { method: 'POST', body: form });
    expect(ok.status).toBe(200);
    expect(jwtPayload(((await ok.json()) as TokenSetBody).access_token).acr).toBe(MFA);
  });
});
