// Bearer credentials. The Authorization header, on the proxy's hot path and on
// the gateway's own endpoints that take a bearer token (logout, status polls):
// whatever its scheme, spacing, token and bytes, a request gets through exactly
// when the header is `Bearer <a valid token>` (RFC 6750 2.1, scheme in any
// case), and is refused with 401 and a `$diagnoses` body otherwise. The token
// parser and verifier, through the bearer check and the refresh endpoint:
// random strings and mutations of a valid token (jwt-mutations.ts) are refused
// with the documented 401 / 400; only the issued token is accepted. Never a
// 500, a crash or a hang, and a refused request never reaches the upstream.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import fc from 'fast-check';
import { importJWK, SignJWT, type JWK } from 'jose';
import { describe, expect, it } from 'vitest';
import { login, type TokenSetBody } from '../helpers/gateway.js';
import { rawExchange } from '../helpers/raw-exchange.js';
import { claimEdits, claimsAccepted, claimsOf, foreignSigner, isIssued, tokensFrom } from './jwt-mutations.js';
import { ask, expectDiagnoses, expectNoServerErrors, expectTokenSet, failOnCrashes, fuzz, fuzzBench, fuzzTimeout, headerText, type Answer } from './support.js';

failOnCrashes();
const bench = fuzzBench();

/** RFC 6750 2.1 `credentials`, after the parser has dropped the value's surrounding whitespace. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

/** The token a header value carries, when it is a bearer credential at all. */
function bearerOf(value: string): string | undefined {
  return BEARER.exec(value.replace(/^[ \t]+|[ \t]+$/g, ''))?.[1];
}

/** Header values: well-formed bearer credentials around valid and invalid tokens, or any text. */
function authorizationValues(valid: readonly string[]): fc.Arbitrary<string> {
  const scheme = fc.constantFrom('Bearer', 'bearer', 'BEARER', 'bEaReR', 'Basic', 'Token', 'Bearer:', 'Bearer,', '');
  const gap = fc.constantFrom(' ', '  ', '\t', '', ' \t ', '=');
  const token = fc.oneof(
    { weight: 4, arbitrary: fc.constantFrom(...valid) },
    { weight: 1, arbitrary: fc.constantFrom(...valid).map((t) => `${t}=`) },
    { weight: 1, arbitrary: fc.constantFrom(...valid).map((t) => `"${t}"`) },
    { weight: 1, arbitrary: fc.constantFrom(...valid).map((t) => `${t},${t}`) },
    { weight: 1, arbitrary: fc.constantFrom('x'.repeat(8192), 'x'.repeat(8193), 'a.b.c', '=', '~~~', '../..') },
    { weight: 2, arbitrary: headerText(40) },
  );
  const tail = fc.constantFrom('', ' ', '  ', '\t', ' x', ',', ', Basic abc');
  return fc.oneof({ weight: 4, arbitrary: fc.tuple(scheme, gap, token, tail).map((parts) => parts.join('')) }, { weight: 1, arbitrary: headerText(80) });
}

/** Valid when the header carries one of `valid` exactly. */
function carriesValidToken(value: string | undefined, valid: readonly string[]): boolean {
  if (value === undefined) return false;
  const token = bearerOf(value);
  return token !== undefined && valid.includes(token);
}

function expectRefusedBearer(answer: Answer): void {
  expect(expectDiagnoses(answer, [401])).toMatch(/^401 \(Unauthorized\) - invalid_token: /);
  expect(answer.headers['www-authenticate']).toMatch(/^Bearer realm="gatehouse"/);
}

describe('the Authorization header', () => {
  it('on a proxied route: through exactly with a valid bearer token, 401 otherwise', { timeout: fuzzTimeout() }, async () => {
    const { gw, alice, upstream } = bench();
    const valid = [alice.access_token, alice.refresh_token];
    await fuzz(
      fc.asyncProperty(fc.option(authorizationValues(valid), { nil: undefined }), async (value) => {
        const before = upstream.seen.length;
        const answer = await ask(`${gw.url}/svc/items/1`, { headers: value === undefined ? {} : { authorization: value } });
        if (carriesValidToken(value, valid)) {
          expect(answer.status, answer.body.toString('utf8')).toBe(200);
          // The client's credential never travels on (forwardAuthorization is off).
          expect(upstream.seen.at(-1)!.headers.authorization).toBeUndefined();
        } else {
          expectRefusedBearer(answer);
          expect(upstream.seen.length).toBe(before);
        }
      }),
    );
    expectNoServerErrors(gw);
  });

  it('on a status poll: the status with a valid bearer token, 401 otherwise', { timeout: fuzzTimeout() }, async () => {
    const { gw, alice } = bench();
    const job = await ask(`${gw.url}/svc/jobs`, { method: 'POST', headers: { authorization: `Bearer ${alice.access_token}` } });
    const { requestId } = JSON.parse(job.body.toString('utf8')) as { requestId: string };
    const valid = [alice.access_token, alice.refresh_token];
    await fuzz(
      fc.asyncProperty(authorizationValues(valid), async (value) => {
        const answer = await ask(`${gw.url}/api/v1/requests/${requestId}/status`, { headers: { authorization: value } });
        if (carriesValidToken(value, valid)) expect(JSON.parse(answer.body.toString('utf8'))).toEqual({ status: 'pending' });
        else expectRefusedBearer(answer);
      }),
    );
    expectNoServerErrors(gw);
  });

  it('on logout: 204 with a valid bearer token, 401 otherwise', { timeout: fuzzTimeout() }, async () => {
    const { gw } = bench();
    // A session of its own per run: a logout that succeeds ends it.
    const placeholder = ['<access token>', '<refresh token>'];
    await fuzz(
      fc.asyncProperty(authorizationValues(placeholder), async (template) => {
        const session: TokenSetBody = await login(gw.url, 'bob', 'bob-password-1');
        const value = template.replaceAll('<access token>', session.access_token).replaceAll('<refresh token>', session.refresh_token);
        const answer = await ask(`${gw.url}/api/v1/auth/logout`, { method: 'POST', headers: { authorization: value } });
        if (carriesValidToken(value, [session.access_token, session.refresh_token])) expect(answer.status, answer.body.toString('utf8')).toBe(204);
        else expectRefusedBearer(answer);
      }),
    );
    expectNoServerErrors(gw);
  });

  it('as raw bytes: any header line gets a documented refusal and never reaches the upstream', { timeout: fuzzTimeout() }, async () => {
    const { gw, upstream } = bench();
    const { port } = new URL(gw.url);
    // Any byte but CR and LF (which would end the line and start another header).
    const line = fc.uint8Array({ maxLength: 120 }).map((bytes) => Buffer.from(bytes.filter((b) => b !== 0x0d && b !== 0x0a)).toString('latin1'));
    const name = fc.constantFrom('Authorization', 'authorization', 'AUTHORIZATION', 'Authorization ', 'Proxy-Authorization');
    await fuzz(
      fc.asyncProperty(name, line, fc.boolean(), async (header, value, twice) => {
        const before = upstream.seen.length;
        const lines = [
          'GET /svc/items/1 HTTP/1.1',
          `host: 127.0.0.1:${port}`,
          `${header}: ${value}`,
          ...(twice ? [`${header}: Bearer x`] : []),
          'connection: close',
        ];
        const { status, body, headers } = await rawExchange(gw.url, lines);
        expectDiagnoses({ status, body: Buffer.from(body, 'utf8'), headers }, [400, 401]);
        expect(upstream.seen.length).toBe(before);
      }),
    );
    expectNoServerErrors(gw);
  });
});

async function setUp(base: 'access_token' | 'refresh_token') {
  const { gw, alice } = bench();
  const jwks = JSON.parse((await ask(`${gw.url}/.well-known/jwks.json`)).body.toString('utf8')) as { keys: JWK[] };
  const issued = alice[base];
  return { gw, issued, tokens: tokensFrom(issued, await foreignSigner(jwks.keys[0]!)) };
}

const resolve = (token: string | (() => Promise<string>)): Promise<string> => (typeof token === 'string' ? Promise.resolve(token) : token());

describe('bearer tokens on a protected route', () => {
  it('are accepted only as issued; every mutation gets 401 and never reaches the upstream', { timeout: fuzzTimeout() }, async () => {
    const { gw, issued, tokens } = await setUp('access_token');
    const { upstream } = bench();
    await fuzz(
      fc.asyncProperty(tokens, async (made) => {
        const token = await resolve(made);
        const before = upstream.seen.length;
        const answer: Answer = await ask(`${gw.url}/svc/resource`, { headers: { authorization: `Bearer ${token}` } });
        if (isIssued(token, issued)) {
          expect(answer.status, answer.body.toString('utf8')).toBe(200);
          expect(upstream.seen.length).toBe(before + 1);
        } else {
          expect(expectDiagnoses(answer, [401])).toMatch(/^401 \(Unauthorized\) - invalid_token: /);
          expect(answer.headers['www-authenticate']).toMatch(/^Bearer realm="gatehouse"/);
          expect(upstream.seen.length).toBe(before);
        }
      }),
    );
    expectNoServerErrors(gw);
  });
});

describe('refresh tokens on the refresh endpoint', () => {
  it('renew only as issued; every mutation gets 400 invalid_grant', { timeout: fuzzTimeout() }, async () => {
    const { gw, issued, tokens } = await setUp('refresh_token');
    await fuzz(
      fc.asyncProperty(tokens, async (made) => {
        const token = await resolve(made);
        const answer = await ask(`${gw.url}/api/v1/auth/refresh`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ refresh_token: token }),
        });
        if (isIssued(token, issued)) expectTokenSet(answer);
        else if (token === '') expectDiagnoses(answer, [400]);
        else expect(expectDiagnoses(answer, [400])).toBe('400 (Bad Request) - invalid_grant: invalid refresh token');
      }),
    );
    expectNoServerErrors(gw);
  });
});

describe("tokens signed with the issuer's own key", () => {
  // What only the key's holder can make: every claim check of the verifier
  // and the bearer check, beyond the signature, gets fuzzed here.
  it('are accepted on a protected route exactly when their claims are valid', { timeout: fuzzTimeout() }, async () => {
    const { gw, alice, upstream } = bench();
    const { keys } = JSON.parse(await readFile(join(gw.dir, 'keys.json'), 'utf8')) as { keys: Array<{ kid: string; alg: string; jwk: JWK }> };
    const { kid, alg, jwk } = keys[0]!;
    const key = await importJWK(jwk, alg);
    const issued = claimsOf(alice.access_token);
    await fuzz(
      fc.asyncProperty(claimEdits(issued), async (claims) => {
        const token = await new SignJWT(claims).setProtectedHeader({ alg, kid, typ: 'JWT' }).sign(key);
        const before = upstream.seen.length;
        const answer = await ask(`${gw.url}/svc/resource`, { headers: { authorization: `Bearer ${token}` } });
        if (claimsAccepted(claims, issued, Math.floor(Date.now() / 1000), gw.config.tokens.clockToleranceS)) {
          expect(answer.status, `${answer.body.toString('utf8')} for ${JSON.stringify(claims)}`).toBe(200);
        } else {
          expect(expectDiagnoses(answer, [401]), JSON.stringify(claims)).toMatch(/^401 \(Unauthorized\) - invalid_token: /);
          expect(upstream.seen.length).toBe(before);
        }
      }),
    );
    expectNoServerErrors(gw);
  });
});
