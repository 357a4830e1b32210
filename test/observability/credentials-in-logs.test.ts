// Attack 7: credentials in URLs and login fields. Every line the gateway logs
// (at trace, its most talkative level) during a set of requests that carry
// credentials every way a client might — query and `;` parameters of every
// credential-like name, in any case or encoding, passwords, API keys, tokens,
// a password typed into the username field — is collected, and no secret
// sent may appear in any of them.
import { randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { redactUrl } from '../../src/observability/logger.js';
import { login, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';
import { rawRequest } from '../helpers/raw-http.js';
import { startUpstream, type Upstream } from '../helpers/upstream.js';

const SERVICE_TOKEN = `service-${randomBytes(24).toString('hex')}`;

let backend: Upstream;
let gw: TestGateway;

beforeAll(async () => {
  backend = await startUpstream();
  gw = await startTestGateway({
    config: {
      requests: { serviceToken: SERVICE_TOKEN },
      routes: [
        { prefix: '/api', upstreams: [backend.url] },
        { prefix: '/public', upstreams: [backend.url], auth: 'none' },
        { prefix: '/legacy', upstreams: [backend.url], auth: 'none', strictPaths: false },
      ],
    },
  });
});
afterAll(async () => {
  await gw.close();
  await backend.close();
});

/** Every secret this file sends, so that the log can be searched for each. */
const sent: string[] = [];
function secret(label: string): string {
  const value = `${label}-${randomBytes(9).toString('base64url')}`;
  sent.push(value);
  return value;
}

/** Query and path parameter names that carry credentials, as clients spell them. */
const CREDENTIAL_NAMES = [
  'jwt',
  'auth',
  'authorization',
  'bearer',
  'session',
  'sid',
  'sig',
  'pass',
  'pw',
  'pwd',
  'token',
  'access_token',
  'refresh_token',
  'id_token',
  'password',
  'passwd',
  'api_key',
  'apikey',
  'key',
  'secret',
  'code',
  'client_secret',
  'assertion',
  'X-Amz-Signature',
  'X-Amz-Credential',
  'jsessionid',
  'PHPSESSID',
  'userPwd',
  'user_pw',
  'JWT',
  'Session',
  'SID',
  'Pwd',
  'PASSWORD',
  'Api-Key',
  '%6Awt',
  '%70wd',
  'p%77',
  '%2570wd',
  's%69d',
  'to%6Ben',
  '%41uth',
  'pass%77ord',
];

describe('attack 7: credentials in URLs and login fields never reach a log line', () => {
  it('logs no secret sent in any request, at any level', async () => {
    const alice = await login(gw.url, 'alice', 'alice-password-1');
    const apiKey = gw.apiKeys.alice![0]!;
    const viaKey = await login(gw.url, 'alice', apiKey);
    sent.push('alice-password-1', apiKey, alice.access_token, alice.refresh_token, viaKey.access_token, viaKey.refresh_token, SERVICE_TOKEN);
    const bearer = `authorization: Bearer ${alice.access_token}`;

    // Query parameters, on a protected route, a public one and the gateway's own endpoints.
    for (const name of CREDENTIAL_NAMES) {
      await Promise.all([
        ...['/api/orders', '/public/page', '/api/v1/auth/login', '/nowhere'].map((path) =>
          rawRequest(gw.url, [`GET ${path}?page=2&${name}=${secret(`query-${name}`)}&lang=en HTTP/1.1`, bearer]),
        ),
        // `;` as a query separator, and `;` parameters in the path (refused on strict routes, logged all the same).
        rawRequest(gw.url, [`GET /public/page?page=2;${name}=${secret(`query-semicolon-${name}`)} HTTP/1.1`]),
        rawRequest(gw.url, [`GET /public/page;${name}=${secret(`path-${name}`)}/more HTTP/1.1`]),
        rawRequest(gw.url, [`GET /legacy/page;v=1;${name}=${secret(`path-legacy-${name}`)} HTTP/1.1`]),
        rawRequest(gw.url, [`GET /public/page%3B${name}=${secret(`path-encoded-${name}`)} HTTP/1.1`]),
      ]);
    }
    // An encoded `=`, tokens and keys where no parameter name announces them.
    await rawRequest(gw.url, [`GET /public/page?token%3D${secret('encoded-equals')} HTTP/1.1`]);
    await rawRequest(gw.url, [`GET /public/download/${alice.access_token} HTTP/1.1`]);
    await rawRequest(gw.url, [`GET /public/keys/${apiKey}/check HTTP/1.1`]);
    await rawRequest(gw.url, [`GET /api/orders?${alice.refresh_token} HTTP/1.1`, bearer]);
    await rawRequest(gw.url, [`GET http://user:${secret('userinfo')}@gateway.test/public/page?access_token=${viaKey.access_token} HTTP/1.1`]);

    // Logins that fail every way; a password typed into the username field first of all.
    const typedAsUsername = secret('typed-into-username');
    await postJson(`${gw.url}/api/v1/auth/login`, { username: typedAsUsername, password: 'x' });
    await postJson(`${gw.url}/api/v1/auth/login`, { username: 'alice', password: secret('wrong-password') });
    await postJson(`${gw.url}/api/v1/auth/login`, { username: secret('unknown-user'), password: secret('unknown-users-password') });
    await postJson(`${gw.url}/api/v1/auth/login`, { username: 'bob', password: apiKey });
    await postJson(`${gw.url}/api/v1/auth/login`, { username: secret('typed-into-username-with-key'), password: apiKey });
    await postJson(`${gw.url}/api/v1/auth/login`, {
      username: 'alice',
      password: `${apiKey.slice(0, 21)}${secret('wrong-key-secret').slice(0, 43).padEnd(43, 'x')}`,
    });
    await postJson(`${gw.url}/api/v1/auth/login`, { username: 'mallory', password: 'mallory-password-1' });
    sent.push('mallory-password-1');
    await postJson(`${gw.url}/api/v1/auth/login`, `{"username":"alice","password":"${secret('malformed-body')}"`);
    await postJson(`${gw.url}/api/v1/auth/login`, { username: 'alice', password: 42, note: secret('mistyped-body') });
    await postJson(`${gw.url}/api/v1/auth/login`, `{"username":"alice","password":"${secret('duplicate-first')}","password":"${secret('duplicate-second')}"}`);
    await postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: alice.refresh_token });
    await postJson(`${gw.url}/api/v1/auth/refresh`, { refresh_token: secret('bogus-refresh') });
    for (const [username, password] of [
      [typedAsUsername, 'x'],
      ['alice', secret('oauth-wrong-password')],
      ['alice', 'alice-password-1'],
    ]) {
      await fetch(`${gw.url}/oauth/token?client_secret=${secret('oauth-query')}`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'password', username: username!, password: password! }),
      });
    }
    await fetch(`${gw.url}/api/v1/requests/${randomUUID()}/status?access_token=${alice.access_token}`, {
      headers: { authorization: `Bearer ${viaKey.access_token}` },
    });
    await fetch(`${gw.adminUrl}/internal/v1/requests/${randomUUID()}/status?token=${SERVICE_TOKEN}`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${SERVICE_TOKEN}`, 'content-type': 'application/json' },
      body: '{"status":"completed"}',
    });
    await fetch(`${gw.adminUrl}/internal/v1/requests/${randomUUID()}/status`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${secret('wrong-service-token')}` },
    });
    await fetch(`${gw.url}/api/v1/auth/logout`, { method: 'POST', headers: { authorization: `Bearer ${viaKey.access_token}` } });

    const lines = gw.logs.text().split('\n');
    expect(lines.length).toBeGreaterThan(300); // the sink did see the requests
    expect(lines.filter((line) => line.includes('"kind":"proxy"')).length).toBeGreaterThan(200);
    const leaks = sent.flatMap((value) => {
      // The secret whole, and any sizeable piece of a token (a signature or payload segment).
      const pieces = [value, ...value.split('.').filter((piece) => piece.length > 20)];
      return lines.filter((line) => pieces.some((piece) => line.includes(piece))).map((line) => `${value}: ${line}`);
    });
    expect(leaks).toEqual([]);
  }, 60_000); // some 400 requests and a dozen logins
});

describe('redactUrl', () => {
  it('masks query and path parameters by name, in any case or encoding, and keeps the rest', () => {
    expect(redactUrl('/x?page=2&JWT=a&p%77d=b&%2570wd=c&userPwd=d&lang=en')).toBe(
      '/x?page=2&JWT=[REDACTED]&p%77d=[REDACTED]&%2570wd=[REDACTED]&userPwd=[REDACTED]&lang=en',
    );
    expect(redactUrl('/a;jsessionid=1;v=2/b%3bsid=3?q=1;token=4')).toBe('/a;jsessionid=[REDACTED];v=2/b%3bsid=[REDACTED]?q=1;token=[REDACTED]');
    expect(redactUrl('/x?token%3Dabc&flag')).toBe('/x?[REDACTED]&flag');
  });

  it('does not mask names that merely contain a short word', () => {
    expect(redactUrl('/x?inside=1&design=2&swipe=3&spin=4')).toBe('/x?inside=1&design=2&swipe=3&spin=4');
  });

  it('masks the user info of an absolute-form target', () => {
    expect(redactUrl('http://user:pw@host/a?b=1')).toBe('http://[REDACTED]@host/a?b=1');
  });

  it('masks a JWT or an API key wherever it stands', () => {
    expect(redactUrl('/files/eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl/raw')).toBe('/files/[REDACTED]/raw');
    expect(redactUrl(`/k/ghk_0123456789abcdef_${'A'.repeat(43)}?x=1`)).toBe('/k/[REDACTED]?x=1');
  });

  it('returns a URL with nothing to mask as the very same string', () => {
    const url = '/api/v1/orders/7?page=2&sort=desc';
    expect(redactUrl(url)).toBe(url);
    expect(redactUrl('/plain/path')).toBe('/plain/path');
    expect(redactUrl('/x?%zz=1&flag')).toBe('/x?%zz=1&flag');
  });
});
