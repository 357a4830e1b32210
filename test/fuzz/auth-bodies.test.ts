// Login and refresh bodies (spec 4.1, 4.2): whatever the body and its
// Content-Type, the answer is a token set exactly when the body is a valid
// request with valid credentials, 401 (login) or 400 (refresh) with a
// `$diagnoses` body otherwise; never a 500, a crash or a hang.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { contentType, fieldValue, jsonBody, jsonObject, judgeJsonBody, type Verdict } from './bodies.js';
import { ask, expectDiagnoses, expectNoServerErrors, expectTokenSet, failOnCrashes, fuzz, fuzzBench, fuzzTimeout, type Answer } from './support.js';

failOnCrashes();
const bench = fuzzBench();

/** `server.apiBodyLimitBytes`, the default. */
const LIMIT = 16_384;

function post(path: string, body: Buffer, type: string | undefined): Promise<Answer> {
  return ask(`${bench().gw.url}${path}`, { method: 'POST', body, headers: type === undefined ? {} : { 'content-type': type } });
}

/** The answer for a verdict: `accepted` says whether a well-formed body's content is the valid one. */
function expectAnswer(answer: Answer, verdict: Verdict, accepted: (body: Record<string, unknown>) => boolean, refusal: { status: number; detail: string }): void {
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
        expectAnswer(answer, judgeJsonBody(body, type, LIMIT, schema), accepted, { status: 401, detail: '401 (Unauthorized) - invalid_grant: invalid user credentials' });
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
