// Login and refresh bodies (spec 4.1, 4.2) and token endpoint forms (RFC 6749
// 3.2): whatever the body and its Content-Type, the answer is a token set
// exactly when the request is valid with valid credentials; otherwise 401
// (login) or 400 (refresh) with a `$diagnoses` body, or an RFC 6749 5.2 error
// object on /oauth/token. Never a 500, a crash or a hang.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contentType, fieldValue, jsonBody, jsonObject, judgeJsonBody, type Verdict } from './bodies.js';
import { ask, expectDiagnoses, expectNoServerErrors, expectTokenSet, failOnCrashes, fuzz, fuzzBench, fuzzTimeout, mutated, type Answer } from './support.js';

failOnCrashes();
const bench = fuzzBench();

/** `server.apiBodyLimitBytes`, the default. */
const LIMIT = 16_384;

function post(path: string, body: Buffer, type: string | undefined): Promise<Answer> {
  return ask(`${bench().gw.url}${path}`, { method: 'POST', body, headers: type === undefined ? {} : { 'content-type': type } });
}

/** The answer for a verdict: `accepted` says whether a well-formed body's content is the valid one. */
function expectAnswer(
  answer: Answer,
  verdict: Verdict,
  accepted: (body: Record<string, unknown>) => boolean,
  refusal: { status: number; detail: string },
): void {
  if (verdict.kind === 'malformed') {
    expect(expectDiagnoses(answer, [400])).toMatch(/^400 \(Bad Request\) - invalid_request: /);
  } else if (verdict.kind === 'well-formed') {
    if (accepted(verdict.body)) expectTokenSet(answer);
    else expect(expectDiagnoses(answer, [refusal.status])).toBe(refusal.detail);
  } else if (answer.status === 200) {
    // A content type the interface leaves open: a token set still needs the valid content.
    expect(verdict.body !== null && accepted(verdict.body)).toBe(true);
    expectTokenSet(answer);
  } else {
    expectDiagnoses(answer, [400, refusal.status]);
  }
}

describe('login bodies', () => {
  it('get a token set for valid credentials, 401 for wrong ones, 400 for the malformed', { timeout: fuzzTimeout() }, async () => {
    const aliceKey = bench().gw.apiKeys.alice![0]!;
    const valid = new Map([
      ['alice', ['alice-password-1', aliceKey]],
      ['bob', ['bob-password-1']],
    ]);
    const object = jsonObject({
      // Mostly known users: an unknown one costs a full-strength scrypt (by design: no timing tells them apart).
      username: fc.oneof({ weight: 8, arbitrary: fc.constantFrom('alice', 'bob', 'mallory') }, { weight: 1, arbitrary: fieldValue(['nobody', 'Alice']) }),
      password: ['alice-password-1', 'bob-password-1', 'mallory-password-1', aliceKey, `${aliceKey}x`],
    });
    const schema = { username: { min: 1, max: 256 }, password: { min: 1, max: 1024 } };
    const accepted = (body: Record<string, unknown>) => valid.get(body.username as string)?.includes(body.password as string) ?? false;
    await fuzz(
      fc.asyncProperty(jsonBody(object, LIMIT), contentType, async (body, type) => {
        const answer = await post('/api/v1/auth/login', body, type);
        expectAnswer(answer, judgeJsonBody(body, type, LIMIT, schema), accepted, {
          status: 401,
          detail: '401 (Unauthorized) - invalid_grant: invalid user credentials',
        });
      }),
    );
    expectNoServerErrors(bench().gw);
  });
});

describe('refresh bodies', () => {
  it('get a token set for the valid refresh token, 400 for anything else', { timeout: fuzzTimeout() }, async () => {
    const { access_token, refresh_token } = bench().alice;
    const object = jsonObject({ refresh_token: [refresh_token, access_token, `${refresh_token}x`, refresh_token.slice(0, -1), 'a.b.c'] });
    const schema = { refresh_token: { min: 1, max: 8192 } };
    await fuzz(
      fc.asyncProperty(jsonBody(object, LIMIT), contentType, async (body, type) => {
        const answer = await post('/api/v1/auth/refresh', body, type);
        expectAnswer(answer, judgeJsonBody(body, type, LIMIT, schema), (b) => b.refresh_token === refresh_token, {
          status: 400,
          detail: '400 (Bad Request) - invalid_grant: invalid refresh token',
        });
      }),
    );
    expectNoServerErrors(bench().gw);
  });
});

const FORM = 'application/x-www-form-urlencoded';

/** RFC 6749 5.2, and the statuses it allows. */
const OAUTH_ERRORS = ['invalid_request', 'invalid_client', 'invalid_grant', 'unauthorized_client', 'unsupported_grant_type', 'invalid_scope'];

function expectOAuthError(answer: Answer): { error: string; error_description: string } {
  expect([400, 401], answer.body.toString('utf8').slice(0, 300)).toContain(answer.status);
  expect(answer.headers['content-type']).toMatch(/^application\/json/);
  expect(answer.headers['cache-control']).toBe('no-store');
  const body = JSON.parse(answer.body.toString('utf8')) as { error: string; error_description: string };
  expect(body).toEqual({ error: expect.any(String), error_description: expect.any(String) });
  expect(OAUTH_ERRORS).toContain(body.error);
  // RFC 6749 5.2: error_description is printable ASCII without `"` and `\`.
  expect(body.error_description).toMatch(/^[\x20\x21\x23-\x5b\x5d-\x7e]*$/);
  return body;
}

/** What the endpoint must do with a form, as RFC 6749 and the README say. */
function grantOf(params: URLSearchParams, valid: { passwords: Map<string, string[]>; refreshToken: string }): 'token' | 'refused' {
  const names = [...params.keys()];
  if (new Set(names).size !== names.length) return 'refused';
  const get = (name: string) => params.get(name) ?? '';
  switch (get('grant_type')) {
    case 'password':
      return valid.passwords.get(get('username'))?.includes(get('password')) ? 'token' : 'refused';
    case 'refresh_token':
      return get('refresh_token') === valid.refreshToken ? 'token' : 'refused';
    default:
      return 'refused';
  }
}

describe('token endpoint forms', () => {
  it('get a token set for a valid grant and an RFC 6749 error for anything else', { timeout: fuzzTimeout() }, async () => {
    const { gw, alice } = bench();
    const aliceKey = gw.apiKeys.alice![0]!;
    const valid = {
      passwords: new Map([
        ['alice', ['alice-password-1', aliceKey]],
        ['bob', ['bob-password-1']],
      ]),
      refreshToken: alice.refresh_token,
    };
    const values: Record<string, fc.Arbitrary<string>> = {
      grant_type: fc.constantFrom('password', 'refresh_token', 'client_credentials', 'authorization_code', 'PASSWORD', '', 'password '),
      username: fc.constantFrom('alice', 'bob', 'mallory', 'alice\u0000', ''),
      password: fc.constantFrom('alice-password-1', 'bob-password-1', 'mallory-password-1', aliceKey, '', 'x'.repeat(2000)),
      refresh_token: fc.oneof(fc.constantFrom(alice.refresh_token, alice.access_token, ''), mutated(alice.refresh_token)),
      scope: fc.constantFrom('openid', ''),
      client_id: fc.constantFrom('gatehouse', ''),
    };
    const anyValue = fc.string({ unit: 'binary', maxLength: 30 });
    const parameter = fc.oneof(
      {
        weight: 6,
        arbitrary: fc
          .constantFrom(...Object.keys(values))
          .chain((name) => fc.tuple(fc.constant(name), fc.oneof({ weight: 4, arbitrary: values[name]! }, { weight: 1, arbitrary: anyValue }))),
      },
      { weight: 1, arbitrary: fc.tuple(fc.oneof(fc.constantFrom('__proto__', 'constructor', 'toString', 'grant_type[]'), anyValue), anyValue) },
    );
    const form = fc.array(parameter, { maxLength: 6 }).map((pairs) => new URLSearchParams(pairs).toString());
    const body = fc.oneof(
      { weight: 8, arbitrary: form },
      { weight: 2, arbitrary: form.chain((text) => mutated(text, fc.constantFrom('&', '=', '%', '%zz', '+', '%00', '%C3', '\u00e9'))) },
      { weight: 1, arbitrary: form.map((text) => `${text}&pad=${'x'.repeat(LIMIT)}`) },
      { weight: 1, arbitrary: fc.json() },
    );
    const type = fc.oneof(
      { weight: 8, arbitrary: fc.constant(FORM) },
      {
        weight: 2,
        arbitrary: fc.constantFrom(
          undefined,
          'application/json',
          'text/plain',
          `${FORM}; charset=utf-8`,
          'APPLICATION/X-WWW-FORM-URLENCODED',
          'multipart/form-data; boundary=x',
        ),
      },
    );

    await fuzz(
      fc.asyncProperty(body, type, async (text, contentType) => {
        const bytes = Buffer.from(text, 'utf8');
        const answer = await ask(`${gw.url}/oauth/token`, {
          method: 'POST',
          body: bytes,
          headers: contentType === undefined ? {} : { 'content-type': contentType },
        });
        // A form, within the limit: decided by its parameters. Anything else is refused, or (for a
        // spelling of the form type the RFC leaves open) decided as a form.
        const decided = bytes.length <= LIMIT ? grantOf(new URLSearchParams(bytes.toString('utf8')), valid) : 'refused';
        if (contentType === FORM) {
          if (decided === 'token') expectTokenSet(answer);
          else expectOAuthError(answer);
        } else if (answer.status === 200) {
          expect([`${FORM}; charset=utf-8`, 'APPLICATION/X-WWW-FORM-URLENCODED']).toContain(contentType);
          expect(decided).toBe('token');
          expectTokenSet(answer);
        } else {
          expectOAuthError(answer);
        }
      }),
    );
    expectNoServerErrors(gw);
  });
});
