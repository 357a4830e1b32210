// Every malformed body on the auth endpoints gets a 400 diagnostics body naming
// the problem: never a 500, a stack trace or a hang.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestGateway, type TestGateway } from '../helpers/gateway.js';

let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway();
});
afterAll(async () => {
  await gw.close();
});

interface Case {
  name: string;
  body: string | undefined;
  contentType?: string;
  detail: RegExp;
}

const CASES: Case[] = [
  { name: 'a body that is not JSON', body: '{"username": "alice", ', detail: /not valid JSON/ },
  { name: 'an empty JSON body', body: '', detail: /empty/ },
  {
    name: 'a form-encoded body',
    body: 'username=alice&password=x',
    contentType: 'application/x-www-form-urlencoded',
    detail: /Content-Type must be application\/json/,
  },
  { name: 'a text/plain body', body: '{"username":"alice","password":"x"}', contentType: 'text/plain', detail: /Content-Type must be application\/json/ },
  { name: 'no content type', body: '{"username":"alice","password":"x"}', contentType: '', detail: /Content-Type/ },
  { name: 'a JSON array', body: '[1,2]', detail: /body must be object/ },
  { name: 'a JSON string', body: '"alice"', detail: /body must be object/ },
  { name: 'a missing password', body: '{"username":"alice"}', detail: /must have required property 'password'/ },
  { name: 'a missing username', body: '{"password":"x"}', detail: /must have required property 'username'/ },
  { name: 'a numeric password', body: '{"username":"alice","password":12345678}', detail: /password must be string/ },
  { name: 'a null username', body: '{"username":null,"password":"x"}', detail: /username must be string/ },
  { name: 'an object password', body: '{"username":"alice","password":{"$ne":""}}', detail: /password must be string/ },
  { name: 'an empty username', body: '{"username":"","password":"x"}', detail: /username must NOT have fewer than 1 characters/ },
  { name: 'a __proto__ key', body: '{"username":"alice","password":"x","__proto__":{"admin":true}}', detail: /forbidden key/ },
  { name: 'a constructor.prototype key', body: '{"username":"alice","password":"x","constructor":{"prototype":{"admin":true}}}', detail: /forbidden key/ },
  { name: 'an oversized body', body: JSON.stringify({ username: 'alice', password: 'x'.repeat(64 * 1024) }), detail: /too large/ },
  {
    name: 'an oversized password field',
    body: JSON.stringify({ username: 'alice', password: 'x'.repeat(2000) }),
    detail: /password must NOT have more than 1024 characters/,
  },
];

async function send(path: string, testCase: Case): Promise<Response> {
  const headers: Record<string, string> = {};
  if (testCase.contentType !== '') headers['content-type'] = testCase.contentType ?? 'application/json';
  return fetch(`${gw.url}${path}`, { method: 'POST', headers, ...(testCase.body !== undefined ? { body: new TextEncoder().encode(testCase.body) } : {}) });
}

describe.each(['/api/v1/auth/login', '/api/v1/auth/refresh'])('malformed requests to %s', (path) => {
  const cases = path.endsWith('refresh')
    ? CASES.map((c) => ({
        ...c,
        body: c.body?.replace(/"username":[^,}]*,?/, '').replace('"password"', '"refresh_token"'),
        detail: new RegExp(c.detail.source.replace('password', 'refresh_token').replace("'username'", "'refresh_token'")),
      }))
        .filter((c) => !/username|oversized password field/.test(c.name))
        .concat([
          {
            name: 'an oversized refresh_token field',
            body: JSON.stringify({ refresh_token: 'x'.repeat(9000) }),
            detail: /refresh_token must NOT have more than 8192 characters/,
          },
        ])
    : CASES;

  it.each(cases)('answers 400 with a diagnostics body for $name', async (testCase) => {
    const response = await send(path, testCase);
    expect(response.status).toBe(400);
    expect(response.headers.get('content-type')).toMatch(/^application\/json/);
    const body = (await response.json()) as { $diagnoses: Array<Record<string, string>> };
    expect(body.$diagnoses).toHaveLength(1);
    const [diagnosis] = body.$diagnoses;
    expect(diagnosis!.$severity).toBe('error');
    expect(diagnosis!.$detail).toMatch(/^400 \(Bad Request\) - invalid_request: /);
    expect(diagnosis!.$detail).toMatch(testCase.detail);
    expect(JSON.stringify(body)).not.toMatch(/at .*\.(js|ts):\d+/); // no stack trace
  });
});

it('keeps serving after a burst of malformed requests', async () => {
  await Promise.all(CASES.map((c) => send('/api/v1/auth/login', c).then((r) => r.arrayBuffer())));
  const ok = await fetch(`${gw.url}/api/v1/auth/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ username: 'alice', password: 'alice-password-1' }),
  });
  expect(ok.status).toBe(200);
});

it('answers an unknown path with 404 in the diagnostics format', async () => {
  const response = await fetch(`${gw.url}/no/such/path`);
  expect(response.status).toBe(404);
  const body = (await response.json()) as { $diagnoses: Array<Record<string, string>> };
  expect(body.$diagnoses[0]!.$detail).toMatch(/^404 \(Not Found\)/);
});
