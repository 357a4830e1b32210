// No password, API key or token ever appears in a log line, whatever the request.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { login, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { redactUrl } from '../../src/observability/logger.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway(); // logs at trace: the most talkative level
});
afterAll(async () => {
  await gw.close();
});

it('logs no secret through login, refresh, logout, failures and the token endpoint', async () => {
  const secrets: string[] = ['alice-password-1', 'not-the-password', gw.apiKeys.alice![0]!];
  const tokens = await login(gw.url, 'alice', 'alice-password-1');
  const viaKey = await login(gw.url, 'alice', gw.apiKeys.alice![0]!);
  secrets.push(tokens.access_token, tokens.refresh_token, viaKey.access_token, viaKey.refresh_token);

  await postJson(`${gw.url}/api/v1/auth/login`, { username: 'alice', password: 'not-the-password' });
  await postJson(`${gw.url}/api/v1/auth/login`, `{"username":"alice","password":"not-the-password"`); // malformed, still holds it
  await postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: tokens.refresh_token });
  await postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: tokens.access_token });
  await fetch(`${gw.url}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'password', username: 'alice', password: 'not-the-password' }),
  });
  await fetch(`${gw.url}/api/v1/auth/login?password=not-the-password&access_token=${tokens.access_token}`, { method: 'POST' });
  await fetch(`${gw.url}/api/v1/auth/logout`, {
    method: 'POST',
    headers: { authorization: `Bearer ${viaKey.access_token}`, cookie: `s=${tokens.refresh_token}` },
  });
  await fetch(`${gw.url}/api/v1/auth/logout`, { method: 'POST', headers: { authorization: `Bearer ${tokens.refresh_token}` } });

  const text = gw.logs.text();
  expect(text.length).toBeGreaterThan(0);
  expect(text).toMatch(/"kind":"gateway"/); // the sink did see the requests' access lines
  for (const secret of secrets) {
    expect(text).not.toContain(secret);
    // Nor any sizeable piece of a token (a signature or payload segment).
    for (const segment of secret.split('.').filter((s) => s.length > 20)) expect(text).not.toContain(segment);
  }
});

it('masks credential-like query parameters and keeps the rest', () => {
  expect(redactUrl('/x?access_token=abc&page=2&api_key=k&Password=p')).toBe('/x?access_token=[REDACTED]&page=2&api_key=[REDACTED]&Password=[REDACTED]');
  expect(redactUrl('/plain/path')).toBe('/plain/path');
  expect(redactUrl('/x?%zz=1&flag')).toBe('/x?%zz=1&flag');
});
