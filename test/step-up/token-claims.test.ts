// Step 1 of step-up authentication: what a session's tokens say about its
// login (`amr`, `acr`, `auth_time`), and that a refresh never freshens it.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeJwt } from 'jose';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { SessionRecord } from '../../src/store/store.js';
import { acrMeets, acrOf } from '../../src/tokens/authentication-context.js';
import { TokenIssuer } from '../../src/tokens/issuer.js';
import { loadKeySet, type KeySet } from '../../src/tokens/keyset.js';
import type { TokenClaims } from '../../src/tokens/types.js';
import { TokenVerifier } from '../../src/tokens/verifier.js';

const NAMES = { password: 'urn:example:acr:1fa', mfa: 'urn:example:acr:2fa' };
const RANKS = [NAMES.password, NAMES.mfa];
const ISSUER = 'https://gw.example.com';

let folder: string;
let keys: KeySet;
let issuer: TokenIssuer;

beforeEach(async () => {
  folder = await mkdtemp(join(tmpdir(), 'gatehouse-step-up-claims-'));
  keys = await loadKeySet({ file: join(folder, 'keys.json'), algorithm: 'EdDSA', retainS: 3600, logger: pino({ level: 'silent' }) });
  issuer = new TokenIssuer({ keys, issuer: ISSUER, audience: 'gatehouse', accessTokenTtlS: 60, refreshTokenTtlS: 3600, acr: NAMES });
});

afterEach(async () => {
  keys.close();
  await rm(folder, { recursive: true, force: true });
});

const claimsOf = (token: string) => decodeJwt(token) as unknown as TokenClaims;
const start = Date.parse('2030-05-01T12:00:00Z');
const session: SessionRecord = { sid: 's-1', sub: 'u-1', username: 'alice', method: 'pwd', createdAt: start, expiresAt: start + 3_600_000 };

describe('the claims of a login', () => {
  it('a password login reaches the configured password level, at the session start', async () => {
    const claims = claimsOf((await issuer.issueTokenSet(session, start)).access_token);
    expect(claims).toMatchObject({ amr: ['pwd'], acr: NAMES.password, auth_time: start / 1000 });
  });

  it('a password and a one-time code reach mfa, at the time of the proof', async () => {
    const later = start + 600_000;
    const set = await issuer.issueTokenSet(session, later, undefined, undefined, { amr: ['pwd', 'otp'], authTimeS: later / 1000 });
    expect(claimsOf(set.access_token)).toMatchObject({ sid: 's-1', amr: ['pwd', 'otp'], acr: NAMES.mfa, auth_time: later / 1000 });
    expect(claimsOf(set.refresh_token)).toMatchObject({ amr: ['pwd', 'otp'], acr: NAMES.mfa, auth_time: later / 1000 });
  });

  it('the verifier hands the claims on', async () => {
    const verifier = new TokenVerifier({ keys, issuer: ISSUER, audience: 'gatehouse', clockToleranceS: 0, now: () => start });
    const set = await issuer.issueTokenSet(session, start, undefined, undefined, { amr: ['pwd', 'otp'], authTimeS: start / 1000 });
    await expect(verifier.verify(set.access_token, ['Bearer'])).resolves.toMatchObject({ acr: NAMES.mfa, auth_time: start / 1000 });
  });
});

describe('a refresh', () => {
  it('keeps amr, acr and auth_time: a refresh is not a new authentication', async () => {
    const set = await issuer.issueTokenSet(session, start, undefined, undefined, { amr: ['pwd', 'otp'], authTimeS: start / 1000 });
    const hourLater = start + 3_000_000;
    const renewed = await issuer.refreshTokenSet(claimsOf(set.refresh_token), set.refresh_token, hourLater);
    const access = claimsOf(renewed.access_token);
    expect(access.iat).toBe(hourLater / 1000);
    expect(access).toMatchObject({ amr: ['pwd', 'otp'], acr: NAMES.mfa, auth_time: start / 1000 });
  });
});

describe('levels', () => {
  it('one factor is the password level, whatever it is', () => {
    expect(acrOf(['pwd'], NAMES)).toBe(NAMES.password);
    expect(acrOf(['api_key'], NAMES)).toBe(NAMES.password);
    expect(acrOf(['otp'], NAMES)).toBe(NAMES.password);
  });

  it('something known and something held, or a held key the user unlocked, is mfa', () => {
    expect(acrOf(['pwd', 'otp'], NAMES)).toBe(NAMES.mfa);
    expect(acrOf(['hwk', 'user'], NAMES)).toBe(NAMES.mfa);
  });

  it('a higher level meets a requirement of a lower one, never the other way', () => {
    expect(acrMeets(NAMES.mfa, [NAMES.password], RANKS)).toBe(true);
    expect(acrMeets(NAMES.password, [NAMES.mfa], RANKS)).toBe(false);
    expect(acrMeets(undefined, [NAMES.password], RANKS)).toBe(false);
    expect(acrMeets('urn:other', ['urn:other'], RANKS)).toBe(true);
    expect(acrMeets('urn:other', [NAMES.password], RANKS)).toBe(false);
  });
});
