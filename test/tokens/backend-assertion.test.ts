// The identity assertion's signer alone, on a clock of its own: what it
// claims, and when it signs again (the cache that spares the hot path a
// signature per request).
import { generateKeyPairSync } from 'node:crypto';
import { jwtVerify } from 'jose';
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/core/principal.js';
import { ASSERTION_TYPE, IdentityAssertions } from '../../src/tokens/backend-assertion.js';
import type { KeySet, SigningKey } from '../../src/tokens/keyset.js';

function keyPair(kid: string): { signing: SigningKey; publicKey: ReturnType<typeof generateKeyPairSync>['publicKey'] } {
  const { privateKey, publicKey } = generateKeyPairSync('ed25519');
  return { signing: { kid, alg: 'EdDSA', key: privateKey }, publicKey };
}

function principal(overrides: Partial<Principal> = {}): Principal {
  return {
    sub: 'u-1',
    username: 'alice',
    sid: 's-1',
    tokenType: 'Bearer',
    method: 'pwd',
    expiresAtMs: Date.now() + 600_000,
    sessionEndsAtMs: Date.now() + 3_600_000,
    roles: ['clerk'],
    scopes: ['orders:read', 'orders:write'],
    readOnly: false,
    ...overrides,
  };
}

function signer(start = 1_700_000_000_000) {
  let current = keyPair('k1');
  const clock = { now: start };
  const keys = { signingKey: () => current.signing } as unknown as KeySet;
  const assertions = new IdentityAssertions({ keys, issuer: 'https://gw.example.test/', now: () => clock.now });
  return { assertions, clock, rotate: () => (current = keyPair('k2')), publicKey: () => current.publicKey };
}

describe('identity assertions', () => {
  it('claim the caller, its session, roles, scopes and how it logged in, for one audience, at most their lifetime', async () => {
    const { assertions, clock, publicKey } = signer();
    const token = assertions.assertion(principal({ confirmationThumbprint: 'dpop-thumbprint' }), 'orders', 60);
    const { payload, protectedHeader } = await jwtVerify(token, publicKey(), { currentDate: new Date(clock.now), audience: 'orders' });
    expect(protectedHeader).toEqual({ alg: 'EdDSA', kid: 'k1', typ: ASSERTION_TYPE });
    expect(payload).toEqual({
      iss: 'https://gw.example.test',
      aud: 'orders',
      sub: 'u-1',
      preferred_username: 'alice',
      sid: 's-1',
      amr: ['pwd'],
      roles: ['clerk'],
      scope: 'orders:read orders:write',
      cnf: { jkt: 'dpop-thumbprint' },
      iat: clock.now / 1000,
      exp: clock.now / 1000 + 60,
    });
  });

  it('are cached per session and audience: signed once while half their life is left, then again', () => {
    const { assertions, clock } = signer();
    const caller = principal();
    const first = assertions.assertion(caller, 'orders', 60);
    clock.now += 29_000;
    expect(assertions.assertion(caller, 'orders', 60)).toBe(first);
    // The same claims from another token of the session (a refresh) use it too.
    expect(assertions.assertion(principal(), 'orders', 60)).toBe(first);
    expect(assertions.signed).toBe(1);
    clock.now += 1_000;
    expect(assertions.assertion(caller, 'orders', 60)).not.toBe(first);
    expect(assertions.signed).toBe(2);
  });

  it('are signed again for another audience, session, key, or changed claims', () => {
    const { assertions, rotate } = signer();
    const first = assertions.assertion(principal(), 'orders', 60);
    expect(assertions.assertion(principal(), 'billing', 60)).not.toBe(first);
    expect(assertions.assertion(principal({ sid: 's-2' }), 'orders', 60)).not.toBe(first);
    expect(assertions.assertion(principal({ roles: ['clerk', 'manager'] }), 'orders', 60)).not.toBe(first);
    rotate();
    expect(assertions.assertion(principal(), 'orders', 60)).not.toBe(first);
    expect(assertions.signed).toBe(5);
  });

  it('carry no scope or cnf when the token has none', async () => {
    const { assertions, clock, publicKey } = signer();
    const token = assertions.assertion(principal({ scopes: undefined, method: 'api_key' }), 'orders', 10);
    const { payload } = await jwtVerify(token, publicKey(), { currentDate: new Date(clock.now) });
    expect(payload).not.toHaveProperty('scope');
    expect(payload).not.toHaveProperty('cnf');
    expect(payload.amr).toEqual(['api_key']);
    expect(payload.exp! - payload.iat!).toBe(10);
  });
});
