// Logout ends the session of the bearer token, refresh token included.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jwtPayload, login, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw.close();
});

const logout = (token?: string) => fetch(`${gw.url}/api/v1/auth/logout`, { method: 'POST', headers: token === undefined ? {} : { authorization: token } });

describe('POST /api/v1/auth/logout', () => {
  it.each(['access_token', 'refresh_token'] as const)('ends the session when called with the %s', async (which) => {
    const tokens = await login(gw.url, 'alice', 'alice-password-1');
    const response = await logout(`Bearer ${tokens[which]}`);
    expect(response.status).toBe(204);
    expect(await gw.gateway.store.getSession(jwtPayload(tokens.refresh_token).sid as string)).toBeNull();
    const refreshed = await postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: tokens.refresh_token });
    expect(refreshed.status).toBe(400);
  });

  it("leaves the user's other sessions alone", async () => {
    const first = await login(gw.url, 'alice', 'alice-password-1');
    const second = await login(gw.url, 'alice', 'alice-password-1');
    expect((await logout(`Bearer ${first.access_token}`)).status).toBe(204);
    const refreshed = await postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: second.refresh_token });
    expect(refreshed.status).toBe(200);
  });

  it('answers 401 with a Bearer challenge when no token is given', async () => {
    const response = await logout();
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toBe('Bearer realm="gatehouse"');
    const body = (await response.json()) as { $diagnoses: Array<Record<string, string>> };
    expect(body.$diagnoses[0]!.$detail).toMatch(/^401 \(Unauthorized\) - invalid_token/);
  });

  it.each([
    ['a malformed header', 'Basic YWxpY2U6eA=='],
    ['a garbage token', 'Bearer abc.def.ghi'],
    ['a token of an ended session', 'ENDED'],
  ])('answers 401 invalid_token for %s', async (_case, header) => {
    let value = header;
    if (header === 'ENDED') {
      const tokens = await login(gw.url, 'bob', 'bob-password-1');
      await logout(`Bearer ${tokens.access_token}`);
      value = `Bearer ${tokens.access_token}`;
    }
    const response = await logout(value);
    expect(response.status).toBe(401);
    expect(response.headers.get('www-authenticate')).toMatch(/^Bearer realm="gatehouse", error="invalid_token"/);
  });
});
