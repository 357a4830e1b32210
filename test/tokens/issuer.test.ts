import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SessionRecord } from '../../src/store/store.js';
import { TokenIssuer } from '../../src/tokens/issuer.js';
import { rotateKeys } from '../../src/tokens/key-rotation.js';
import { loadKeySet, type KeySet } from '../../src/tokens/keyset.js';
import { TokenError, type TokenClaims } from '../../src/tokens/types.js';
import { TokenVerifier } from '../../src/tokens/verifier.js';

const ISSUER = 'https://gw.example.com';
const AUDIENCE = 'gatehouse';
const ACCESS_TTL_S = 60;
const REFRESH_TTL_S = 3600;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;
const CLAIM_NAMES = ['acr', 'amr', 'aud', 'auth_time', 'exp', 'iat', 'iss', 'jti', 'preferred_username', 'sid', 'sub', 'typ'];

let folder: string;
let keys: KeySet;
let issuer: TokenIssuer;

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'gatehouse-issuer-'));
  keys = await loadKeySet({ file: join(folder, 'keys.json'), algorithm: 'EdDSA', retainS: REFRESH_TTL_S, logger: pino({ level: 'silent' }) });
  // The trailing slash is how an operator may well write the URL; tokens carry it without.
  issuer = new TokenIssuer({ keys, issuer: `${ISSUER}/`, audience: AUDIENCE, accessTokenTtlS: ACCESS_TTL_S, refreshTokenTtlS: REFRESH_TTL_S });
});

afterEach(async () => {
  keys.close();
  await rm(folder, { recursive: true, force: true });
});

/** A session as login creates it: it lasts the refresh-token lifetime. */
function session(now: number, overrides: Partial<SessionRecord> = {}): SessionRecord {
  return {
    sid: 'b1d1c9a4-6c38-4a53-9d0b-0c4c6e0c7f11',
    sub: 'u-42',
    username: 'alice',
    method: 'pwd',
    createdAt: now,
    expiresAt: now + REFRESH_TTL_S * 1000,
    ...overrides,
  };
}

const claimsOf = (token: string) => decodeJwt(token) as unknown as TokenClaims;

describe('issueTokenSet (login)', () => {
  const now = Date.parse('2030-05-01T12:00:00.400Z');
  const nowS = Math.floor(now / 1000);

  it('puts exactly the TokenClaims into both tokens', async () => {
    const set = await issuer.issueTokenSet(session(now), now);
    const access = claimsOf(set.access_token);
    const refresh = claimsOf(set.refresh_token);

    expect(Object.keys(access).sort()).toEqual(CLAIM_NAMES);
    expect(Object.keys(refresh).sort()).toEqual(CLAIM_NAMES);
    expect(access).toEqual({
      iss: ISSUER,
      sub: 'u-42',
      aud: AUDIENCE,
      iat: nowS,
      exp: nowS + ACCESS_TTL_S,
      jti: expect.stringMatching(UUID),
      typ: 'Bearer',
      sid: 'b1d1c9a4-6c38-4a53-9d0b-0c4c6e0c7f11',
      preferred_username: 'alice',
      amr: ['pwd'],
      acr: 'urn:gatehouse:acr:password',
      auth_time: nowS,
    });
    expect(refresh).toEqual({ ...access, typ: 'Refresh', exp: nowS + REFRESH_TTL_S, jti: expect.stringMatching(UUID) });
    expect(refresh.jti).not.toBe(access.jti);
  });

  it('names the API-key method in amr', async () => {
    const set = await issuer.issueTokenSet(session(now, { method: 'api_key', apiKeyId: 'k-1' }), now);
    expect(claimsOf(set.access_token).amr).toEqual(['api_key']);
    expect(claimsOf(set.refresh_token).amr).toEqual(['api_key']);
    expect(claimsOf(set.access_token)).not.toHaveProperty('apiKeyId');
  });

  it('signs with the current key and a { alg, kid, typ } header', async () => {
    const set = await issuer.issueTokenSet(session(now), now);
    const expected = { alg: 'EdDSA', kid: keys.signingKey().kid, typ: 'JWT' };
    expect(decodeProtectedHeader(set.access_token)).toEqual(expected);
    expect(decodeProtectedHeader(set.refresh_token)).toEqual(expected);
  });

  it('reports the lifetimes of both tokens', async () => {
    const set = await issuer.issueTokenSet(session(now), now);
    expect(set).toEqual({
      access_token: expect.any(String),
      expires_in: ACCESS_TTL_S,
      refresh_expires_in: REFRESH_TTL_S,
      refresh_token: expect.any(String),
      token_type: 'bearer',
    });
  });

  it('gives every token its own jti', async () => {
    const jtis = new Set<string>();
    for (let i = 0; i < 5; i++) {
      const set = await issuer.issueTokenSet(session(now), now);
      jtis.add(claimsOf(set.access_token).jti).add(claimsOf(set.refresh_token).jti);
    }
    expect(jtis.size).toBe(10);
  });

  it('never lets the access token outlive the session', async () => {
    const set = await issuer.issueTokenSet(session(now, { expiresAt: now + 30_000 }), now);
    const sessionEndS = Math.floor((now + 30_000) / 1000);
    expect(claimsOf(set.access_token).exp).toBe(sessionEndS);
    expect(claimsOf(set.refresh_token).exp).toBe(sessionEndS);
    expect(set.expires_in).toBe(sessionEndS - nowS);
    expect(set.refresh_expires_in).toBe(sessionEndS - nowS);
  });

  it('caps the refresh token at the refresh lifetime even for a longer session', async () => {
    const set = await issuer.issueTokenSet(session(now, { expiresAt: now + 10 * REFRESH_TTL_S * 1000 }), now);
    expect(claimsOf(set.refresh_token).exp).toBe(nowS + REFRESH_TTL_S);
    expect(set.refresh_expires_in).toBe(REFRESH_TTL_S);
  });

  it('refuses a session that has already ended', async () => {
    await expect(issuer.issueTokenSet(session(now, { expiresAt: now - 1 }), now)).rejects.toMatchObject({
      name: 'TokenError',
      reason: 'session expired',
    });
  });
});

describe('refreshTokenSet', () => {
  const now = Date.parse('2030-05-01T12:00:00Z');
  const nowS = now / 1000;

  async function login() {
    const set = await issuer.issueTokenSet(session(now), now);
    return { set, refresh: claimsOf(set.refresh_token) };
  }

  it('returns the same refresh token and a fresh access token of the same session', async () => {
    const { set, refresh } = await login();
    const later = now + 100_000;
    const renewed = await issuer.refreshTokenSet(refresh, set.refresh_token, later);

    expect(renewed.refresh_token).toBe(set.refresh_token);
    expect(renewed.access_token).not.toBe(set.access_token);
    expect(renewed.token_type).toBe('bearer');
    expect(renewed.expires_in).toBe(ACCESS_TTL_S);
    expect(renewed.refresh_expires_in).toBe(REFRESH_TTL_S - 100);

    const access = claimsOf(renewed.access_token);
    const before = claimsOf(set.access_token);
    expect(Object.keys(access).sort()).toEqual(CLAIM_NAMES);
    expect(access).toEqual({
      ...before,
      iat: nowS + 100,
      exp: nowS + 100 + ACCESS_TTL_S,
      jti: expect.stringMatching(UUID),
    });
    expect(access.jti).not.toBe(before.jti);
    expect(decodeProtectedHeader(renewed.access_token)).toEqual({ alg: 'EdDSA', kid: keys.signingKey().kid, typ: 'JWT' });
  });

  it('never lets the new access token outlive the refresh token', async () => {
    const { set, refresh } = await login();
    const renewed = await issuer.refreshTokenSet(refresh, set.refresh_token, now + (REFRESH_TTL_S - 20) * 1000);
    expect(claimsOf(renewed.access_token).exp).toBe(refresh.exp);
    expect(renewed.expires_in).toBe(20);
    expect(renewed.refresh_expires_in).toBe(20);
  });

  it('refuses a refresh token with no second left', async () => {
    const { set, refresh } = await login();
    // The verifier's clock tolerance lets such a token through; the issuer must not extend it.
    await expect(issuer.refreshTokenSet(refresh, set.refresh_token, refresh.exp * 1000)).rejects.toMatchObject({
      reason: 'token expired',
    });
  });

  it('refuses the claims of an access token', async () => {
    const { set } = await login();
    const access = claimsOf(set.access_token);
    await expect(issuer.refreshTokenSet(access, set.access_token, now)).rejects.toBeInstanceOf(TokenError);
    await expect(issuer.refreshTokenSet(access, set.access_token, now)).rejects.toMatchObject({ reason: 'wrong token type' });
  });
});

describe('with the verifier', () => {
  it('issues tokens the verifier accepts, each only as its own type', async () => {
    const verifier = new TokenVerifier({ keys, issuer: ISSUER, audience: AUDIENCE, clockToleranceS: 5 });
    const set = await issuer.issueTokenSet(session(Date.now()));
    const access = await verifier.verify(set.access_token, ['Bearer']);
    const refresh = await verifier.verify(set.refresh_token, ['Refresh']);
    expect(access).toEqual(claimsOf(set.access_token));
    expect(refresh).toEqual(claimsOf(set.refresh_token));

    const renewed = await issuer.refreshTokenSet(refresh, set.refresh_token);
    await expect(verifier.verify(renewed.access_token, ['Bearer'])).resolves.toMatchObject({ sid: refresh.sid, typ: 'Bearer' });
    await expect(verifier.verify(set.access_token, ['Refresh'])).rejects.toMatchObject({ reason: 'wrong token type' });
  });

  it('signs with a key rotated on disk as soon as the watch picks it up', async () => {
    const file = join(folder, 'watched.json');
    const logger = pino({ level: 'silent' });
    const watched = await loadKeySet({ file, algorithm: 'EdDSA', retainS: REFRESH_TTL_S, logger, watch: true });
    try {
      const rotatingIssuer = new TokenIssuer({ keys: watched, issuer: ISSUER, audience: AUDIENCE, accessTokenTtlS: 60, refreshTokenTtlS: 3600 });
      const reloaded = once(watched, 'reload');
      const { kid } = await rotateKeys({ file, algorithm: 'ES256', retainS: REFRESH_TTL_S });
      expect(await reloaded).toEqual([true]);
      const set = await rotatingIssuer.issueTokenSet(session(Date.now()));
      expect(decodeProtectedHeader(set.access_token)).toEqual({ alg: 'ES256', kid, typ: 'JWT' });
    } finally {
      watched.close();
    }
  });
});
