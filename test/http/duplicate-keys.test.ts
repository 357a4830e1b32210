// Attack 11a: a JSON body with a key twice. JSON.parse keeps the last one,
// while whatever read the body before the gateway (a WAF, a proxy, a log) may
// have kept the first, so every gateway JSON body with a duplicate key, at any
// depth, is refused with 400 naming the key.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { findDuplicateKey } from '../../src/http/duplicate-keys.js';
import { parseJsonBody } from '../../src/http/json-body.js';
import { isGatehouseError } from '../../src/core/errors.js';
import { login, postJson, startTestGateway, type TestGateway } from '../helpers/gateway.js';

describe('findDuplicateKey', () => {
  it.each([
    ['{"username":"x","password":"a","password":"b"}', 'password'],
    ['{"a":{"b":1,"c":{"d":1,"d":2}}}', 'd'],
    ['[{"ok":1},{"x":1,"y":[{"z":1,"z":1}]}]', 'z'],
    ['{"pass\\u0077ord":"a","password":"b"}', 'password'],
    ['{"\\"":1,"\\u0022":2}', '"'],
    ['{"a\\\\":1,"a\\u005c":2}', 'a\\'],
    [' { "k" : 1 , "k" : 2 } ', 'k'],
    ['{"":1,"":2}', ''],
    ['{"a":"}{,\\"a\\":","a":1}', 'a'],
  ])('%s: %j', (text, key) => {
    JSON.parse(text); // the scan is given JSON that parses
    expect(findDuplicateKey(text)).toBe(key);
  });

  it.each([
    '{"username":"x","password":"a"}',
    '{"a":{"a":{"a":1}},"b":{"a":2}}',
    '[{"a":1},{"a":2}]',
    '{"a":["a","a"],"b":"a"}',
    '{"a":"\\"a\\":1,\\"a\\":2","b":"{\\"b\\":1}"}',
    '{"a\\\\":1,"a":2}',
    '"a string"',
    '[1,2,3]',
    '42',
    '{}',
  ])('%s has none', (text) => {
    JSON.parse(text);
    expect(findDuplicateKey(text)).toBeUndefined();
  });

  it('finds one in a deeply nested body without recursion', () => {
    const depth = 5_000;
    const text = `${'{"n":'.repeat(depth)}{"x":1,"x":2}${'}'.repeat(depth)}`;
    expect(findDuplicateKey(text)).toBe('x');
  });
});

describe('parseJsonBody', () => {
  it('names the duplicate key in the reason, shortened', () => {
    const long = 'k'.repeat(300);
    for (const [text, named] of [
      ['{"a":1,"a":2}', '"a"'],
      [`{"${long}":1,"${long}":2}`, `"${'k'.repeat(64)}"`],
    ] as const) {
      try {
        parseJsonBody(text);
        expect.unreachable();
      } catch (error) {
        expect(isGatehouseError(error) && error.reason).toBe(`the JSON body holds the key ${named} more than once`);
      }
    }
  });
});

const SERVICE_TOKEN = 'e83zBoZro/xP6TfqERm3PicWAPMCnh91HbawzUXr7Tc=';
let gw: TestGateway;
beforeAll(async () => {
  gw = await startTestGateway({ config: { requests: { serviceToken: SERVICE_TOKEN } } });
});
afterAll(() => gw?.close());

type Diagnoses = { $diagnoses: Array<{ $detail: string }> };
const refusedFor = (key: string) => `400 (Bad Request) - invalid_request: the JSON body holds the key "${key}" more than once`;

describe('attack 11a: duplicate JSON keys in a gateway body', () => {
  it.each([
    ['the password, last one right', '{"username":"alice","password":"wrong","password":"alice-password-1"}', 'password'],
    ['the password, first one right', '{"username":"alice","password":"alice-password-1","password":"wrong"}', 'password'],
    ['the username', '{"username":"bob","username":"alice","password":"alice-password-1"}', 'username'],
    ['a key spelt with an escape', '{"username":"alice","password":"wrong","pass\\u0077ord":"alice-password-1"}', 'password'],
  ])('login with %s: 400 naming the key', async (_case, body, key) => {
    const response = await postJson(`${gw.url}/api/v1/auth/login`, body);
    expect(response.status).toBe(400);
    expect(((await response.json()) as Diagnoses).$diagnoses[0]!.$detail).toBe(refusedFor(key));
  });

  it('refresh with the refresh token twice: 400 naming the key', async () => {
    const { refresh_token: token } = await login(gw.url, 'alice', 'alice-password-1');
    const response = await postJson(`${gw.url}/api/v1/auth/refresh`, `{"refresh_token":"x","refresh_token":"${token}"}`);
    expect(response.status).toBe(400);
    expect(((await response.json()) as Diagnoses).$diagnoses[0]!.$detail).toBe(refusedFor('refresh_token'));
  });

  it('the internal status API with the status twice: 400 naming the key', async () => {
    const response = await fetch(`${gw.adminUrl}/internal/v1/requests/${randomUUID()}/status`, {
      method: 'PUT',
      headers: { authorization: `Bearer ${SERVICE_TOKEN}`, 'content-type': 'application/json' },
      body: '{"status":"failed","status":"completed"}',
    });
    expect(response.status).toBe(400);
    expect(((await response.json()) as Diagnoses).$diagnoses[0]!.$detail).toBe(refusedFor('status'));
  });

  it('a body without duplicates still logs in', async () => {
    const response = await postJson(`${gw.url}/api/v1/auth/login`, '{"username":"alice","password":"alice-password-1"}');
    expect(response.status).toBe(200);
  });
});
