// Sessions per provider, on three instances sharing Redis: a back-channel
// logout from one provider ends its session everywhere and nothing of the
// other's, even when it names the other's session id; a provider that is down
// fails only its own logins and checks; Gatehouse's own discovery, JWKS and
// introspection describe only what Gatehouse issues.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BACKCHANNEL_LOGOUT_EVENT } from '../../src/oidc/backchannel-logout.js';
import { jwtPayload } from '../helpers/gateway.js';
import { TEST_CLIENT } from '../helpers/openid-provider.js';
import {
  LOCAL_USER,
  loginAt,
  PARTNER_USER,
  RESOURCE_SERVER,
  STAFF_USER,
  startThreeProviders,
  statusWith,
  tokensAt,
  type ThreeProviders,
} from './three-providers.js';

let setting: ThreeProviders;

beforeAll(async () => {
  setting = await startThreeProviders();
}, 30_000);

afterAll(async () => {
  await setting?.close();
});

async function everywhere(token: string): Promise<number[]> {
  return Promise.all(setting.gateways.map((gateway) => statusWith(gateway, '/everyone/x', token)));
}

/** The partner's session id of an opaque token, as the partner's own introspection tells it. */
async function partnerSid(token: string): Promise<string> {
  const response = await fetch(`${setting.partner.issuer}/token/introspection`, {
    method: 'POST',
    headers: {
      'content-type': 'application/x-www-form-urlencoded',
      authorization: `Basic ${Buffer.from(`${TEST_CLIENT.clientId}:${TEST_CLIENT.clientSecret}`).toString('base64')}`,
    },
    body: new URLSearchParams({ token }),
  });
  const { sid } = (await response.json()) as { sid?: string };
  if (sid === undefined) throw new Error('the partner named no session');
  return sid;
}

async function postLogoutToken(logoutToken: string): Promise<number> {
  const response = await fetch(`${setting.gateways[0].url}/oauth/backchannel-logout`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ logout_token: logoutToken }),
  });
  await response.arrayBuffer();
  return response.status;
}

function logoutClaims(issuer: string, sub: string, sid: string) {
  const now = Math.floor(Date.now() / 1000);
  return { iss: issuer, aud: TEST_CLIENT.clientId, iat: now, exp: now + 120, jti: randomUUID(), sub, sid, events: { [BACKCHANNEL_LOGOUT_EVENT]: {} } };
}

describe('sessions per provider', () => {
  it("a back-channel logout at the staff provider ends its session on every instance, and leaves the partner's alone", async () => {
    const [first, second, third] = setting.gateways;
    const staff = await tokensAt(first, STAFF_USER, 'staff');
    const partner = await tokensAt(second, PARTNER_USER, 'partner');
    expect([...(await everywhere(staff.access_token)), ...(await everywhere(partner.access_token))]).toEqual([200, 200, 200, 200, 200, 200]);
    await setting.staff.logout(STAFF_USER.username, jwtPayload(staff.access_token).sid as string); // rejects unless the gateway answered 200
    expect(await everywhere(staff.access_token)).toEqual([401, 401, 401]);
    expect(await statusWith(third, '/everyone/x', staff.refresh_token)).toBe(401);
    expect(await everywhere(partner.access_token)).toEqual([200, 200, 200]);
    expect(await everywhere(partner.refresh_token)).toEqual([200, 200, 200]);
  });

  it("session mix-up: a logout token of the staff provider naming the partner's session id ends nothing of the partner's", async () => {
    const partner = await tokensAt(setting.gateways[1], PARTNER_USER, 'partner');
    const sid = await partnerSid(partner.access_token);
    expect(await everywhere(partner.access_token)).toEqual([200, 200, 200]);
    expect(await postLogoutToken(await setting.staff.sign(logoutClaims(setting.staff.issuer, PARTNER_USER.username, sid)))).toBe(200);
    expect(await everywhere(partner.access_token)).toEqual([200, 200, 200]);
    // A fresh instance's first check, not a cached answer: the session is alive in the store too.
    expect(await statusWith(setting.gateways[2], '/everyone/x', partner.refresh_token)).toBe(200);
  });

  it("a logout token naming the partner's issuer but signed with the staff key is refused (400) and changes nothing", async () => {
    const partner = await tokensAt(setting.gateways[1], PARTNER_USER, 'partner');
    const sid = await partnerSid(partner.access_token);
    expect(await postLogoutToken(await setting.staff.sign(logoutClaims(setting.partner.issuer, PARTNER_USER.username, sid)))).toBe(400);
    expect(await everywhere(partner.access_token)).toEqual([200, 200, 200]);
  });

  it("a logout through the gateway ends that provider's session only", async () => {
    const [first] = setting.gateways;
    const staff = await tokensAt(first, STAFF_USER, 'staff');
    const partner = await tokensAt(first, PARTNER_USER, 'partner');
    const local = await tokensAt(first, LOCAL_USER);
    const logout = await fetch(`${first.url}/api/v1/auth/logout`, { method: 'POST', headers: { authorization: `Bearer ${partner.access_token}` } });
    expect(logout.status).toBe(204);
    expect(await everywhere(partner.access_token)).toEqual([401, 401, 401]);
    expect(await everywhere(staff.access_token)).toEqual([200, 200, 200]);
    expect(await everywhere(local.access_token)).toEqual([200, 200, 200]);
  });
});

describe('a provider that is down', () => {
  it('fails only its own logins (502) and the first checks of its own tokens; the others go on', async () => {
    const [first, second] = setting.gateways;
    const unchecked = await tokensAt(first, PARTNER_USER, 'partner');
    const staffBefore = await tokensAt(first, STAFF_USER, 'staff');
    setting.partner.intercept = (req) => {
      req.socket.destroy();
      return true;
    };
    try {
      expect((await loginAt(second, PARTNER_USER, 'partner')).status).toBe(502);
      // Never checked on the third instance: its first check needs the partner's introspection.
      expect(await statusWith(setting.gateways[2], '/everyone/x', unchecked.refresh_token)).toBe(502);
      expect((await loginAt(second, STAFF_USER, 'staff')).status).toBe(200);
      expect((await loginAt(second, LOCAL_USER)).status).toBe(200);
      expect(await everywhere(staffBefore.access_token)).toEqual([200, 200, 200]);
    } finally {
      setting.partner.intercept = undefined;
    }
    expect((await loginAt(second, PARTNER_USER, 'partner')).status).toBe(200);
  });
});

describe("Gatehouse's own endpoints describe only what Gatehouse issues", () => {
  it("discovery names Gatehouse's issuer, and its JWKS holds none of the providers' keys", async () => {
    const [first] = setting.gateways;
    const discovery = (await (await fetch(`${first.url}/.well-known/openid-configuration`)).json()) as { issuer: string };
    expect(discovery.issuer).toBe('https://gatehouse.providers.test');
    const kids = async (url: string) => ((await (await fetch(url)).json()) as { keys: Array<{ kid: string }> }).keys.map((key) => key.kid);
    const own = await kids(`${first.url}/.well-known/jwks.json`);
    expect(own.length).toBeGreaterThan(0);
    const theirs = [...(await kids(`${setting.staff.issuer}/jwks`)), ...(await kids(`${setting.partner.issuer}/jwks`))];
    expect(own.filter((kid) => theirs.includes(kid))).toEqual([]);
  });

  it("introspection answers for Gatehouse's own tokens only", async () => {
    const [first] = setting.gateways;
    const introspect = async (token: string) => {
      const response = await fetch(`${first.url}/oauth/introspect`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token, client_id: RESOURCE_SERVER.id, client_secret: RESOURCE_SERVER.secret }),
      });
      return (await response.json()) as { active: boolean; iss?: string };
    };
    const local = await tokensAt(first, LOCAL_USER);
    const staff = await tokensAt(first, STAFF_USER, 'staff');
    expect(await introspect(local.access_token)).toMatchObject({ active: true, iss: 'https://gatehouse.providers.test' });
    expect(await introspect(staff.access_token)).toEqual({ active: false });
  });
});
