// Spec 4.1, 5.1–5.5, 7: login with a password or an API key.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jwtPayload, login, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw.close();
});

const LOGIN_REFUSED = {
  $diagnoses: [
    {
      $severity: 'error',
      $message: 'Please log in to carry out this action.',
      $detail: '401 (Unauthorized) - invalid_grant: invalid user credentials',
    },
  ],
};

describe('POST /api/v1/auth/login', () => {
  it('answers a token set of two JWTs with the spec lifetimes', async () => {
    const response = await postJson(`${gw.url}/api/v1/auth/login`, { username: 'alice', password: 'alice-password-1' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(response.headers.get('cache-control')).toBe('no-store');
    const body = (await response.json()) as Record<string, unknown>;
    expect(Object.keys(body).sort()).toEqual(['access_token', 'expires_in', 'refresh_expires_in', 'refresh_token', 'token_type']);
    expect(body).toMatchObject({ expires_in: 60, refresh_expires_in: 86400, token_type: 'bearer' });
    expect(body.access_token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
    expect(body.refresh_token).toMatch(/^[\w-]+\.[\w-]+\.[\w-]+$/);
  });

  it('issues tokens with the documented claims', async () => {
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    const access = jwtPayload(tokens.access_token);
    const refresh = jwtPayload(tokens.refresh_token);
    for (const claims of [access, refresh]) {
      expect(claims).toMatchObject({ iss: gw.config.tokens.issuer, aud: 'gatehouse', preferred_username: 'alice', amr: ['pwd'] });
      expect(typeof claims.sub).toBe('string');
      expect(typeof claims.jti).toBe('string');
      expect(typeof claims.sid).toBe('string');
    }
    expect(access.typ).toBe('Bearer');
    expect(refresh.typ).toBe('Refresh');
    expect(access.sid).toBe(refresh.sid);
    expect(access.sub).toBe(refresh.sub);
    expect(access.jti).not.toBe(refresh.jti);
    expect((access.exp as number) - (access.iat as number)).toBe(60);
    expect((refresh.exp as number) - (refresh.iat as number)).toBe(86400);
  });

  it('starts a session in the store for the refresh token lifetime', async () => {
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    const { sid, sub } = jwtPayload(tokens.refresh_token) as { sid: string; sub: string };
    const session = await gw.gateway.store.getSession(sid);
    expect(session).toMatchObject({ sid, sub, username: 'alice', method: 'pwd' });
    expect(session!.expiresAt - session!.createdAt).toBe(86_400_000);
  });

  it('starts a new session on each login', async () => {
    const first = jwtPayload((await login(gw.url, 'alice', 'alice-password-1')).access_token);
    const second = jwtPayload((await login(gw.url, 'alice', 'alice-password-1')).access_token);
    expect(first.sid).not.toBe(second.sid);
  });

  it('accepts an API key in the password field (spec 5.1)', async () => {
    const tokens = await login(gw.url, 'alice', gw.apiKeys.alice![0]!);
    expect(jwtPayload(tokens.access_token)).toMatchObject({ preferred_username: 'alice', amr: ['api_key'] });
  });

  it.each([
    ['a wrong password', 'alice', 'not-the-password'],
    ['an unknown user', 'nobody', 'alice-password-1'],
    ['a disabled user', 'mallory', 'mallory-password-1'],
    ["another user's API key", 'bob', 'API_KEY_OF_ALICE'],
    ['a made-up API key', 'alice', 'ghk_0123456789abcdef_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA'],
  ])('refuses %s with 401 and the diagnostics body', async (_case, username, password) => {
    const secret = password === 'API_KEY_OF_ALICE' ? gw.apiKeys.alice![0]! : password;
    const response = await postJson(`${gw.url}/api/v1/auth/login`, { username, password: secret });
    expect(response.status).toBe(401);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    expect(await response.json()).toEqual(LOGIN_REFUSED);
  });

  it('gives every response an X-Request-Id, keeping a sane one from the client', async () => {
    const kept = await postJson(`${gw.url}/api/v1/auth/login`, { username: 'x', password: 'y' }, { 'x-request-id': 'abc-123' });
    expect(kept.headers.get('x-request-id')).toBe('abc-123');
    const replaced = await postJson(`${gw.url}/api/v1/auth/login`, { username: 'x', password: 'y' }, { 'x-request-id': 'bad id\twith spaces' });
    expect(replaced.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
  });
});
