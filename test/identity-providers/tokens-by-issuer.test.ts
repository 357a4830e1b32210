// Bearer tokens of several providers, chosen by issuer, on three instances
// sharing Redis: each provider's tokens are accepted where trusted and
// refused elsewhere; a login names its provider (or gets the default); the
// attacks of issue mix-up and key confusion are refused without a call to
// any provider.
import { exportJWK, generateKeyPair, SignJWT } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TEST_RESOURCE } from '../helpers/openid-provider.js';
import { jwtPayload } from '../helpers/gateway.js';
import type { EchoBody } from '../helpers/upstream.js';
import { hitsOf, LOCAL_USER, loginAt, PARTNER_USER, STAFF_USER, startThreeProviders, statusWith, tokensAt, type ThreeProviders } from './three-providers.js';

let setting: ThreeProviders;

beforeAll(async () => {
  setting = await startThreeProviders();
}, 30_000);

afterAll(async () => {
  await setting?.close();
});

/** Claims of an access token as `issuer` would sign it for `sub`. */
function accessClaims(issuer: string, sub: string) {
  const now = Math.floor(Date.now() / 1000);
  return { iss: issuer, sub, aud: TEST_RESOURCE, iat: now, exp: now + 300, preferred_username: sub, roles: ['staff'], scope: 'api' };
}

/** What the upstream received of a request with the token of `user`, logged in at `provider` through the first instance. */
async function echoedFor(user: { username: string; password: string }, provider: string, path: string): Promise<EchoBody> {
  const [first] = setting.gateways;
  const { access_token: token } = await tokensAt(first, user, provider);
  const response = await fetch(`${first.url}${path}`, { headers: { authorization: `Bearer ${token}` } });
  return (await response.json()) as EchoBody;
}

async function everywhere(path: string, token: string): Promise<number[]> {
  return Promise.all(setting.gateways.map((gateway) => statusWith(gateway, path, token)));
}

describe('a login picks its provider', () => {
  it('the default provider (local) for a login that names none, as clients of one provider send it', async () => {
    const [first] = setting.gateways;
    const { access_token: token } = await tokensAt(first, LOCAL_USER);
    expect(await everywhere('/everyone/x', token)).toEqual([200, 200, 200]);
  });

  it('each provider by name: its own users, its own tokens, accepted on every instance', async () => {
    const [first, second] = setting.gateways;
    const staff = await tokensAt(first, STAFF_USER, 'staff');
    const partner = await tokensAt(second, PARTNER_USER, 'partner');
    expect(await everywhere('/everyone/x', staff.access_token)).toEqual([200, 200, 200]);
    expect(await everywhere('/everyone/x', partner.access_token)).toEqual([200, 200, 200]);
    // The partner's refresh token is opaque too: known by where it came from, introspected there.
    expect(await everywhere('/everyone/x', partner.refresh_token)).toEqual([200, 200, 200]);
  });

  it("a provider's user is not known at another: 401, as any wrong password", async () => {
    const [first] = setting.gateways;
    expect((await loginAt(first, STAFF_USER, 'partner')).status).toBe(401);
    expect((await loginAt(first, STAFF_USER)).status).toBe(401);
  });

  it('a login naming no configured provider: 400 unknown_identity_provider', async () => {
    const response = await loginAt(setting.gateways[0], STAFF_USER, 'nobody');
    expect(response.status).toBe(400);
    expect(JSON.stringify(await response.json())).toContain('no provider is named');
  });

  it('the token endpoint takes the provider as a parameter', async () => {
    const response = await fetch(`${setting.gateways[2].url}/oauth/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'password', ...STAFF_USER, provider: 'staff' }),
    });
    expect(response.status).toBe(200);
    const { access_token: token } = (await response.json()) as { access_token: string };
    expect(await statusWith(setting.gateways[0], '/everyone/x', token)).toBe(200);
  });

  it('a refresh goes to the provider whose token it is', async () => {
    const [first, second] = setting.gateways;
    const partner = await tokensAt(first, PARTNER_USER, 'partner');
    const before = setting.partner.hits.get('/token') ?? 0;
    const response = await fetch(`${second.url}/api/v1/auth/refresh`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ refresh_token: partner.refresh_token }),
    });
    expect(response.status).toBe(200);
    expect(setting.partner.hits.get('/token')).toBe(before + 1);
  });
});

describe('per-route trust', () => {
  it("a route that lists providers admits only theirs; any other's gets 401 with the realm's challenge", async () => {
    const [first] = setting.gateways;
    const staff = await tokensAt(first, STAFF_USER, 'staff');
    const local = await tokensAt(first, LOCAL_USER);
    expect(await everywhere('/staff-only/x', staff.access_token)).toEqual([200, 200, 200]);
    const refused = await fetch(`${first.url}/staff-only/x`, { headers: { authorization: `Bearer ${local.access_token}` } });
    expect(refused.status).toBe(401);
    expect(refused.headers.get('www-authenticate')).toMatch(/^Bearer realm="gatehouse", error="invalid_token", error_description=".*staff only"$/);
    expect(await everywhere('/partners/x', local.access_token)).toEqual([200, 200, 200]);
    expect(await everywhere('/partners/x', staff.access_token)).toEqual([401, 401, 401]);
  });

  it('the identity headers say which provider the caller came from', async () => {
    const echoed = await echoedFor(PARTNER_USER, 'partner', '/partners/x');
    expect(echoed.headers['x-gatehouse-provider']).toBe('partner');
    expect(echoed.headers['x-gatehouse-username']).toBe(PARTNER_USER.username);
  });
});

describe("each provider's claims, as routes and backends see them", () => {
  it("role rules weigh each provider's mapped roles", async () => {
    const [first] = setting.gateways;
    const staff = await tokensAt(first, STAFF_USER, 'staff');
    const partner = await tokensAt(first, PARTNER_USER, 'partner');
    const local = await tokensAt(first, LOCAL_USER);
    expect(await everywhere('/staff-role/x', staff.access_token)).toEqual([200, 200, 200]);
    expect(await everywhere('/staff-role/x', partner.access_token)).toEqual([403, 403, 403]);
    expect(await everywhere('/staff-role/x', local.access_token)).toEqual([403, 403, 403]);
  });

  it("the signed identity assertion names the caller's provider (idp)", async () => {
    const echoed = await echoedFor(STAFF_USER, 'staff', '/asserted/x');
    const assertion = jwtPayload(echoed.headers['x-gatehouse-assertion'] as string);
    expect(assertion).toMatchObject({ idp: 'staff', sub: STAFF_USER.username, iss: 'https://gatehouse.providers.test' });
  });

  it("one guard in front of every provider's logins: the audit line names the provider", async () => {
    const [first] = setting.gateways;
    const from = first.logs.entries().length;
    expect((await loginAt(first, { ...STAFF_USER, password: 'wrong-password-1' }, 'staff')).status).toBe(401);
    const line = await first.logs.next((entry) => entry.event === 'audit' && entry.outcome === 'failure', from);
    expect(line).toMatchObject({ provider: 'staff', method: 'password' });
  });
});

describe('attacks on the choice of provider', () => {
  it('issuer mix-up: a token signed by the staff provider naming the partner issuer is refused, and the partner is never asked', async () => {
    const [first] = setting.gateways;
    await tokensAt(first, STAFF_USER, 'staff'); // the staff keys are held
    const forged = await setting.staff.sign(accessClaims(setting.partner.issuer, STAFF_USER.username), { typ: 'at+jwt' });
    const before = hitsOf(setting.partner);
    expect(await everywhere('/everyone/x', forged)).toEqual([401, 401, 401]);
    expect(hitsOf(setting.partner)).toBe(before);
  });

  it("issuer mix-up: a provider's token naming Gatehouse's own issuer is refused", async () => {
    const [first] = setting.gateways;
    const forged = await setting.staff.sign(accessClaims(first.config.tokens.issuer, 'alice'), { typ: 'at+jwt' });
    expect(await everywhere('/everyone/x', forged)).toEqual([401, 401, 401]);
  });

  it("key confusion: a token naming the staff issuer with the partner's kid is refused without fetching any key set", async () => {
    const [first] = setting.gateways;
    await tokensAt(first, PARTNER_USER, 'partner'); // the partner's keys are held
    const partnerKid = ((await (await fetch(`${setting.partner.issuer}/jwks`)).json()) as { keys: Array<{ kid: string }> }).keys[0]!.kid;
    const forged = await setting.staff.sign(accessClaims(setting.staff.issuer, STAFF_USER.username), { typ: 'at+jwt', kid: partnerKid });
    const before = [setting.staff.hits.get('/jwks') ?? 0, hitsOf(setting.partner)];
    expect(await everywhere('/everyone/x', forged)).toEqual([401, 401, 401]);
    expect([setting.staff.hits.get('/jwks') ?? 0, hitsOf(setting.partner)]).toEqual(before);
    expect(first.logs.text()).toContain("token signed with another provider's key");
  });

  it("subject mix-up: a provider's token whose sub is a local user's id reaches nothing of that user's account", async () => {
    const [first] = setting.gateways;
    const local = await tokensAt(first, LOCAL_USER);
    const localSub = jwtPayload(local.access_token).sub as string;
    const sessions = (token: string) => fetch(`${first.url}/api/v1/account/sessions`, { headers: { authorization: `Bearer ${token}` } });
    expect((await sessions(local.access_token)).status).toBe(200);
    // A token the staff provider really signed, for a subject of its own that happens to be the local user's id.
    const borrowed = await setting.staff.sign(accessClaims(setting.staff.issuer, localSub), { typ: 'at+jwt' });
    expect(await statusWith(first, '/everyone/x', borrowed)).toBe(200);
    expect((await sessions(borrowed)).status).toBe(401);
    expect(await statusWith(first, '/everyone/x', local.access_token)).toBe(200);
  });

  it('an unknown issuer is refused with invalid_token, without any outbound call', async () => {
    const { privateKey, publicKey } = await generateKeyPair('ES256');
    const kid = 'stranger';
    void (await exportJWK(publicKey));
    const forged = await new SignJWT(accessClaims('https://stranger.example', 'eve')).setProtectedHeader({ alg: 'ES256', kid, typ: 'at+jwt' }).sign(privateKey);
    const before = [hitsOf(setting.staff), hitsOf(setting.partner)];
    const response = await fetch(`${setting.gateways[1].url}/everyone/x`, { headers: { authorization: `Bearer ${forged}` } });
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toContain('error="invalid_token"');
    expect([hitsOf(setting.staff), hitsOf(setting.partner)]).toEqual(before);
  });

  it('an opaque token of no known origin is refused without asking any introspection endpoint', async () => {
    const before = [hitsOf(setting.staff), hitsOf(setting.partner)];
    expect(await everywhere('/everyone/x', 'an-opaque-token-nobody-issued-here-0123456789')).toEqual([401, 401, 401]);
    expect([hitsOf(setting.staff), hitsOf(setting.partner)]).toEqual(before);
  });
});
