// Spec 4.2, 5.6–5.8, 7: refresh renews the access token; the refresh token is not rotated.
import { SignJWT, generateKeyPair } from 'jose';
import { readUsersFile } from '../../src/users/users-file.js';
import { setDisabled } from '../../src/users/users-changes.js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { jwtPayload, login, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { changeUsersFile } from '../helpers/users.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw.close();
});

const REFRESH_REFUSED = {
  $diagnoses: [
    {
      $severity: 'error',
      $message: 'The requested action cannot be carried out. Please check your settings and retry.',
      $detail: '400 (Bad Request) - invalid_grant: invalid refresh token',
    },
  ],
};

const refresh = (url: string, refreshToken: unknown) => postJson(`${url}/api/v1/auth/refresh`, { refresh_token: refreshToken });

async function expectRefused(response: Response): Promise<void> {
  expect(response.status).toBe(400);
  expect(await response.json()).toEqual(REFRESH_REFUSED);
}

describe('POST /api/v1/auth/refresh', () => {
  it('answers a new access token and the same refresh token, any number of times', async () => {
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    const seen = new Set([tokens.access_token]);
    for (let i = 0; i < 3; i++) {
      const response = await refresh(gw.url, tokens.refresh_token);
      expect(response.status).toBe(200);
      expect(response.headers.get('cache-control')).toBe('no-store');
      const body = (await response.json()) as Record<string, unknown>;
      expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_in', 'refresh_expires_in', 'refresh_token', 'token_type']);
      expect(body.refresh_token).toBe(tokens.refresh_token);
      expect(body.expires_in).toBe(60);
      expect(body.token_type).toBe('bearer');
      expect(body.refresh_expires_in).toBeGreaterThan(86_390);
      expect(body.refresh_expires_in).toBeLessThanOrEqual(86_400);
      seen.add(body.access_token as string);
      const access = jwtPayload(body.access_token as string);
      expect(access).toMatchObject({ typ: 'Bearer', sid: jwtPayload(tokens.refresh_token).sid, preferred_username: 'alice' });
    }
    expect(seen.size).toBe(4);
  });

  it('refuses an access token in place of a refresh token', async () => {
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    await expectRefused(await refresh(gw.url, tokens.access_token));
  });

  it.each([
    ['a malformed token', 'not-a-jwt'],
    ['a token of three garbage segments', 'aaa.bbb.ccc'],
    ['an unsecured (alg none) token', `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from('{"typ":"Refresh"}').toString('base64url')}.`],
  ])('refuses %s', async (_case, token) => {
    await expectRefused(await refresh(gw.url, token));
  });

  it('refuses a token signed with another key', async () => {
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    const claims = jwtPayload(tokens.refresh_token);
    const header = JSON.parse(Buffer.from(tokens.refresh_token.split('.')[0]!, 'base64url').toString()) as { alg: string; kid: string };
    const { privateKey } = await generateKeyPair(header.alg, { extractable: true });
    const forged = await new SignJWT(claims).setProtectedHeader({ alg: header.alg, kid: header.kid }).sign(privateKey);
    await expectRefused(await refresh(gw.url, forged));
  });

  it('refuses a refresh token whose session was ended by logout', async () => {
    const tokens = await login(gw.url, 'bob', 'bob-password-1');
    const out = await fetch(`${gw.url}/api/v1/auth/logout`, { method: 'POST', headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect(out.status).toBe(204);
    await expectRefused(await refresh(gw.url, tokens.refresh_token));
  });

  it('refuses a refresh token of a user disabled since the login', async () => {
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    expect((await refresh(gw.url, tokens.refresh_token)).status).toBe(200);
    const original = await readUsersFile(gw.usersFile);
    try {
      await changeUsersFile(gw, setDisabled(original, 'alice', true));
      await expectRefused(await refresh(gw.url, tokens.refresh_token));
    } finally {
      await changeUsersFile(gw, original);
    }
    expect((await refresh(gw.url, tokens.refresh_token)).status).toBe(200);
  });
});

describe('refresh token expiry', () => {
  let short: TestGateway;
  beforeAll(async () => {
    short = await startTestGateway({ config: { tokens: { refreshTokenTtlS: 1, accessTokenTtlS: 1, clockToleranceS: 0 } } });
  });
  afterAll(async () => {
    await short.close();
  });

  it('refuses an expired refresh token with 400', async () => {
    const tokens = await login(short.url, 'alice', 'alice-password-1');
    expect(tokens.refresh_expires_in).toBe(1);
    const { iat, exp } = jwtPayload(tokens.refresh_token) as { iat: number; exp: number };
    // The gateway's clock, held at the token's issue and then a moment past its exp (a loaded machine may take
    // longer than the token's one second between two requests); its timers (and the sockets') keep real time.
    vi.useFakeTimers({ toFake: ['Date'], now: iat * 1000 });
    try {
      expect((await refresh(short.url, tokens.refresh_token)).status).toBe(200);
      vi.setSystemTime(exp * 1000 + 1);
      await expectRefused(await refresh(short.url, tokens.refresh_token));
    } finally {
      vi.useRealTimers();
    }
  });
});
