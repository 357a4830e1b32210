// Each test is one known way to get a forged, altered or misused JWT accepted,
// and checks that the verifier refuses it for the right reason. Tokens are
// built by hand with WebCrypto (not jose), so nothing here relies on the
// library under test to produce the malformed input.
import { createPublicKey, webcrypto, type JsonWebKey } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TokenIssuer } from '../../src/tokens/issuer.js';
import { loadKeySet, type KeySet } from '../../src/tokens/keyset.js';
import type { TokenType } from '../../src/core/vocabulary.js';
import { TokenError, type TokenClaims } from '../../src/tokens/types.js';
import { MAX_TOKEN_LENGTH, TokenVerifier } from '../../src/tokens/verifier.js';

const ISSUER = 'https://gw.example.com';
const AUDIENCE = 'gatehouse';
const TOLERANCE_S = 5;
const HOUR_S = 3600;

let folder: string;
let keys: KeySet;
let verifier: TokenVerifier;
let ourKid: string;
let ourKey: CryptoKey;
/** A set whose retired EdDSA key still verifies while an ES256 key signs. */
let mixed: { keys: KeySet; verifier: TokenVerifier; eddsa: { kid: string; key: CryptoKey }; es256: { kid: string; key: CryptoKey } };

beforeAll(async () => {
  folder = await mkdtemp(join(tmpdir(), 'gatehouse-attacks-'));
  const logger = pino({ level: 'silent' });
  keys = await loadKeySet({ file: join(folder, 'keys.json'), algorithm: 'EdDSA', retainS: HOUR_S, logger });
  verifier = new TokenVerifier({ keys, issuer: ISSUER, audience: AUDIENCE, clockToleranceS: TOLERANCE_S });
  ({ kid: ourKid } = keys.signingKey());
  ourKey = keys.signingKey().key as CryptoKey;

  const mixedFile = join(folder, 'mixed.json');
  const before = await loadKeySet({ file: mixedFile, algorithm: 'EdDSA', retainS: HOUR_S, logger });
  const eddsa = { kid: before.signingKey().kid, key: before.signingKey().key as CryptoKey };
  before.close();
  const mixedKeys = await loadKeySet({ file: mixedFile, algorithm: 'ES256', retainS: HOUR_S, logger });
  mixed = {
    keys: mixedKeys,
    verifier: new TokenVerifier({ keys: mixedKeys, issuer: ISSUER, audience: AUDIENCE, clockToleranceS: TOLERANCE_S }),
    eddsa,
    es256: { kid: mixedKeys.signingKey().kid, key: mixedKeys.signingKey().key as CryptoKey },
  };
});

afterAll(async () => {
  keys?.close();
  mixed?.keys.close();
  await rm(folder, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------
// Hand-made tokens.

const b64url = (value: string | Uint8Array) => Buffer.from(value).toString('base64url');
const json = (value: unknown) => b64url(JSON.stringify(value));

/** Signs the exact bytes given with WebCrypto, as an attacker with that key would. */
async function forge(header: Record<string, unknown>, payload: Record<string, unknown> | string, key: CryptoKey): Promise<string> {
  const input = `${json(header)}.${typeof payload === 'string' ? b64url(payload) : json(payload)}`;
  const algorithm = key.algorithm as { name: string };
  const params = algorithm.name === 'ECDSA' ? { name: 'ECDSA', hash: 'SHA-256' } : algorithm.name === 'HMAC' ? 'HMAC' : algorithm.name;
  const signature = await webcrypto.subtle.sign(params, key as webcrypto.CryptoKey, new TextEncoder().encode(input));
  return `${input}.${b64url(new Uint8Array(signature))}`;
}

function claims(overrides: Partial<Record<keyof TokenClaims | 'nbf', unknown>> = {}, nowS = Math.floor(Date.now() / 1000)) {
  const base: Record<string, unknown> = {
    iss: ISSUER,
    sub: 'u-42',
    aud: AUDIENCE,
    iat: nowS,
    exp: nowS + 60,
    jti: '0b8f7c1e-1d7a-4e59-8f0e-1f1c7c7d6a11',
    typ: 'Bearer',
    sid: '5f0e0c3a-9a0b-4c1e-b6f4-2b8f1d1e0a22',
    preferred_username: 'alice',
    amr: ['pwd'],
  };
  for (const [name, value] of Object.entries(overrides)) {
    if (value === undefined) delete base[name];
    else base[name] = value;
  }
  return base;
}

const ourHeader = () => ({ alg: 'EdDSA', kid: ourKid, typ: 'JWT' });

async function validToken(type: TokenType = 'Bearer'): Promise<string> {
  const issuer = new TokenIssuer({ keys, issuer: ISSUER, audience: AUDIENCE, accessTokenTtlS: 60, refreshTokenTtlS: HOUR_S });
  const now = Date.now();
  const set = await issuer.issueTokenSet({ sid: 's-1', sub: 'u-42', username: 'alice', method: 'pwd', createdAt: now, expiresAt: now + HOUR_S * 1000 });
  return type === 'Bearer' ? set.access_token : set.refresh_token;
}

/** The reason the token is refused for; fails the test if it is accepted. */
async function refusal(token: unknown, accept: readonly TokenType[] = ['Bearer'], by: TokenVerifier = verifier): Promise<TokenError> {
  try {
    await by.verify(token as string, accept);
  } catch (error) {
    expect(error).toBeInstanceOf(TokenError);
    return error as TokenError;
  }
  throw new Error('the token was accepted');
}

const reason = async (token: unknown, accept?: readonly TokenType[], by?: TokenVerifier) => (await refusal(token, accept, by)).reason;

async function attackerKey(alg: 'EdDSA' | 'ES256' = 'EdDSA') {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = await exportJWK(publicKey);
  return { privateKey, jwk: { ...jwk, alg, use: 'sig' }, kid: await calculateJwkThumbprint(jwk) };
}

// ---------------------------------------------------------------------------

describe('the baseline the attacks start from', () => {
  it('accepts a token of the issuer and a hand-made one signed with our key', async () => {
    await expect(verifier.verify(await validToken(), ['Bearer'])).resolves.toMatchObject({ sub: 'u-42' });
    await expect(verifier.verify(await forge(ourHeader(), claims(), ourKey), ['Bearer'])).resolves.toMatchObject({ sub: 'u-42' });
  });
});

describe('JWT attacks', () => {
  it('alg "none" (unsecured JWT)', async () => {
    // RFC 7519 6.1: an unsecured JWT has an empty signature.
    for (const alg of ['none', 'None', 'NONE', 'nOnE']) {
      expect(await reason(`${json({ alg, typ: 'JWT' })}.${json(claims())}.`)).toBe('malformed token');
      // With something in the signature segment it reaches the algorithm allow-list.
      expect(await reason(`${json({ alg, kid: ourKid })}.${json(claims())}.AAAA`)).toBe('algorithm not allowed');
    }
  });

  it('HS256 signed with the public key as HMAC secret (key confusion)', async () => {
    const [jwk] = keys.publicJwks().keys;
    const publicKey = createPublicKey({ key: jwk as JsonWebKey, format: 'jwk' });
    const secrets = [
      publicKey.export({ type: 'spki', format: 'pem' }),
      publicKey.export({ type: 'spki', format: 'der' }),
      JSON.stringify(jwk),
      Buffer.from(jwk!.x!, 'base64url'),
    ];
    for (const secret of secrets) {
      const hmac = await webcrypto.subtle.importKey('raw', Buffer.from(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
      const token = await forge({ alg: 'HS256', kid: ourKid, typ: 'JWT' }, claims(), hmac as CryptoKey);
      expect(await reason(token)).toBe('algorithm not allowed');
    }
  });

  it('alg switched to another asymmetric algorithm', async () => {
    const [header, payload, signature] = (await validToken()).split('.');
    expect(JSON.parse(Buffer.from(header!, 'base64url').toString())).toMatchObject({ alg: 'EdDSA' });
    for (const alg of ['ES256', 'RS256', 'PS256', 'ES512', 'Ed25519', 'Ed448']) {
      expect(await reason(`${json({ alg, kid: ourKid, typ: 'JWT' })}.${payload}.${signature}`)).toBe('algorithm not allowed');
    }
    // Also with a real ES256 signature by an attacker's key under our kid.
    const attacker = await attackerKey('ES256');
    expect(await reason(await forge({ alg: 'ES256', kid: ourKid }, claims(), attacker.privateKey))).toBe('algorithm not allowed');
  });

  it('the algorithm allow-list refuses a foreign alg before any key is looked up', async () => {
    // A key set that forgot to bind kid to alg: the verifier's own allow-list must still hold.
    let lookups = 0;
    const lax: KeySet = {
      algorithm: 'EdDSA',
      signingKey: () => keys.signingKey(),
      getVerificationKey: async (header) => {
        lookups++;
        return keys.getVerificationKey({ ...header, alg: 'EdDSA' });
      },
      publicJwks: () => keys.publicJwks(),
      algorithms: () => keys.algorithms(),
      close: () => {},
    };
    const laxVerifier = new TokenVerifier({ keys: lax, issuer: ISSUER, audience: AUDIENCE, clockToleranceS: TOLERANCE_S });
    const [jwk] = keys.publicJwks().keys;
    const hmac = await webcrypto.subtle.importKey('raw', Buffer.from(JSON.stringify(jwk)), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
    const [, payload, signature] = (await validToken()).split('.');
    const tokens = [
      `${json({ alg: 'none', kid: ourKid })}.${payload}.AAAA`,
      await forge({ alg: 'HS256', kid: ourKid }, claims(), hmac as CryptoKey),
      `${json({ alg: 'ES256', kid: ourKid })}.${payload}.${signature}`,
    ];
    for (const token of tokens) expect(await reason(token, ['Bearer'], laxVerifier)).toBe('algorithm not allowed');
    expect(lookups).toBe(0);
    await expect(laxVerifier.verify(await validToken(), ['Bearer'])).resolves.toBeDefined();
    expect(lookups).toBe(1);
  });

  it('unknown kid', async () => {
    const token = await forge({ alg: 'EdDSA', kid: 'k-that-never-was' }, claims(), ourKey);
    expect(await reason(token)).toBe('unknown signing key');
  });

  it('missing kid', async () => {
    // Signed with our real key: a key set that fell back to "try every key" would accept it.
    expect(await reason(await forge({ alg: 'EdDSA', typ: 'JWT' }, claims(), ourKey))).toBe('unknown signing key');
    expect(await reason(await forge({ alg: 'EdDSA', kid: 42 }, claims(), ourKey))).toBe('unknown signing key');
  });

  it('kid pointing to a key of another algorithm', async () => {
    const { verifier: both, eddsa, es256 } = mixed;
    // Both algorithms are in this set's allow-list, so only the kid ↔ alg binding stands in the way.
    expect(mixed.keys.algorithms()).toEqual(['ES256', 'EdDSA']);
    await expect(both.verify(await forge({ alg: 'ES256', kid: es256.kid }, claims(), es256.key), ['Bearer'])).resolves.toBeDefined();
    await expect(both.verify(await forge({ alg: 'EdDSA', kid: eddsa.kid }, claims(), eddsa.key), ['Bearer'])).resolves.toBeDefined();

    expect(await reason(await forge({ alg: 'ES256', kid: eddsa.kid }, claims(), es256.key), ['Bearer'], both)).toBe('algorithm not allowed');
    expect(await reason(await forge({ alg: 'EdDSA', kid: es256.kid }, claims(), eddsa.key), ['Bearer'], both)).toBe('algorithm not allowed');
  });

  it('embedded jwk header with the attacker’s key', async () => {
    const attacker = await attackerKey();
    expect(await reason(await forge({ alg: 'EdDSA', jwk: attacker.jwk }, claims(), attacker.privateKey))).toBe('unknown signing key');
    expect(await reason(await forge({ alg: 'EdDSA', kid: attacker.kid, jwk: attacker.jwk }, claims(), attacker.privateKey))).toBe('unknown signing key');
    expect(await reason(await forge({ alg: 'EdDSA', kid: ourKid, jwk: attacker.jwk }, claims(), attacker.privateKey))).toBe('invalid signature');
  });

  it('jku / x5u header pointing elsewhere', async () => {
    const attacker = await attackerKey();
    let requests = 0;
    const server: Server = createServer((_request, response) => {
      requests++;
      response.setHeader('content-type', 'application/json');
      response.end(JSON.stringify({ keys: [attacker.jwk] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/jwks.json`;
      for (const extra of [{ jku: url }, { x5u: url }, { jku: url, kid: ourKid }]) {
        const token = await forge({ alg: 'EdDSA', kid: attacker.kid, ...extra }, claims(), attacker.privateKey);
        expect(await reason(token)).toBe('kid' in extra ? 'invalid signature' : 'unknown signing key');
      }
      expect(requests).toBe(0);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('tampered payload with the original signature', async () => {
    const [header, payload, signature] = (await validToken()).split('.');
    const original = JSON.parse(Buffer.from(payload!, 'base64url').toString()) as Record<string, unknown>;
    for (const change of [{ sub: 'admin' }, { preferred_username: 'root' }, { exp: (original.exp as number) + HOUR_S }, { amr: ['api_key'] }]) {
      expect(await reason(`${header}.${json({ ...original, ...change })}.${signature}`)).toBe('invalid signature');
    }
  });

  it('signature stripped', async () => {
    const [header, payload] = (await validToken()).split('.');
    expect(await reason(`${header}.${payload}.`)).toBe('malformed token');
    expect(await reason(`${header}.${payload}`)).toBe('malformed token');
  });

  it('token signed by a foreign key reusing our kid', async () => {
    const attacker = await attackerKey();
    expect(await reason(await forge(ourHeader(), claims(), attacker.privateKey))).toBe('invalid signature');
  });

  it('expired', async () => {
    const nowS = Math.floor(Date.now() / 1000);
    const token = await forge(ourHeader(), claims({ iat: nowS - HOUR_S, exp: nowS - 60 }), ourKey);
    expect(await reason(token)).toBe('token expired');
  });

  it('refusals past our signature say so (not a guess), a forged one does not', async () => {
    const nowS = Math.floor(Date.now() / 1000);
    const expired = await refusal(await forge(ourHeader(), claims({ iat: nowS - HOUR_S, exp: nowS - 60 }), ourKey));
    expect({ reason: expired.reason, wellSigned: expired.wellSigned }).toStrictEqual({ reason: 'token expired', wellSigned: true });
    const forged = await refusal(await forge(ourHeader(), claims(), (await attackerKey()).privateKey));
    expect({ reason: forged.reason, wellSigned: forged.wellSigned }).toStrictEqual({ reason: 'invalid signature', wellSigned: false });
    expect((await refusal('not-a-token')).wellSigned).toBe(false);
  });

  it('nbf in the future', async () => {
    const nowS = Math.floor(Date.now() / 1000);
    expect(await reason(await forge(ourHeader(), claims({ nbf: nowS + 600 }), ourKey))).toBe('token not yet valid');
  });

  describe('clock tolerance', () => {
    const expS = Math.floor(Date.parse('2030-01-01T00:00:00Z') / 1000);
    const at = (ms: number) => new TokenVerifier({ keys, issuer: ISSUER, audience: AUDIENCE, clockToleranceS: TOLERANCE_S, now: () => ms });
    const token = () => forge(ourHeader(), claims({ iat: expS - 60, exp: expS }), ourKey);

    it('expired within the clock tolerance is accepted', async () => {
      await expect(at((expS + TOLERANCE_S) * 1000 - 1).verify(await token(), ['Bearer'])).resolves.toMatchObject({ exp: expS });
    });

    it('expired beyond the clock tolerance', async () => {
      expect(await reason(await token(), ['Bearer'], at((expS + TOLERANCE_S) * 1000))).toBe('token expired');
    });

    it('nbf within and beyond the clock tolerance', async () => {
      const nbfToken = await forge(ourHeader(), claims({ iat: expS - 60, exp: expS, nbf: expS - 30 }), ourKey);
      await expect(at((expS - 30 - TOLERANCE_S) * 1000).verify(nbfToken, ['Bearer'])).resolves.toBeDefined();
      expect(await reason(nbfToken, ['Bearer'], at((expS - 30 - TOLERANCE_S) * 1000 - 1))).toBe('token not yet valid');
    });
  });

  it('wrong iss', async () => {
    for (const iss of ['https://evil.example', `${ISSUER}/`, 'http://gw.example.com']) {
      expect(await reason(await forge(ourHeader(), claims({ iss }), ourKey))).toBe('wrong issuer');
    }
  });

  it('wrong aud', async () => {
    for (const aud of ['someone-else', 'Gatehouse', ['someone-else']]) {
      expect(await reason(await forge(ourHeader(), claims({ aud }), ourKey))).toBe('wrong audience');
    }
  });

  it('access token where only a refresh token is accepted', async () => {
    expect(await reason(await validToken('Bearer'), ['Refresh'])).toBe('wrong token type');
  });

  it('refresh token where only an access token is accepted', async () => {
    expect(await reason(await validToken('Refresh'), ['Bearer'])).toBe('wrong token type');
    expect(await reason(await forge(ourHeader(), claims({ typ: 'ID' }), ourKey), ['Bearer', 'Refresh'])).toBe('wrong token type');
  });

  it('unknown crit header', async () => {
    const token = await forge({ ...ourHeader(), crit: ['x-gatehouse-bind'], 'x-gatehouse-bind': 'v' }, claims(), ourKey);
    expect(await reason(token)).toBe('malformed token');
    // No extension is understood, so none may be critical, not even the JWS one (`b64`).
    expect(await reason(await forge({ ...ourHeader(), crit: ['b64'], b64: true }, claims(), ourKey))).toBe('malformed token');
  });

  it('oversized token', async () => {
    // Validly signed: only the size check stands in the way.
    const sized = async (padding: number) => forge(ourHeader(), claims({ pad: 'x'.repeat(padding) } as never), ourKey);
    let padding = MAX_TOKEN_LENGTH;
    let token = await sized(padding);
    while (token.length > MAX_TOKEN_LENGTH) token = await sized(--padding);
    await expect(verifier.verify(token, ['Bearer'])).resolves.toBeDefined();

    const oversized = await sized(padding + 3);
    expect(oversized.length).toBeGreaterThan(MAX_TOKEN_LENGTH);
    const refused = await refusal(oversized);
    expect(refused.reason).toBe('malformed token');
    expect(refused.cause).toBeUndefined(); // refused before any parsing or cryptography
  });

  it('non-JSON payload', async () => {
    for (const payload of ['not json', '[1,2,3]', '"a string"', 'null', '{"sub":"u-42",}']) {
      expect(await reason(await forge(ourHeader(), payload, ourKey))).toBe('malformed token');
    }
    // And a header that is not JSON either.
    const [, payload, signature] = (await validToken()).split('.');
    expect(await reason(`${b64url('{alg:EdDSA}')}.${payload}.${signature}`)).toBe('malformed token');
  });

  it('missing sid', async () => {
    expect(await reason(await forge(ourHeader(), claims({ sid: undefined }), ourKey))).toBe('malformed token');
  });

  it('missing or mistyped claims', async () => {
    const broken: Array<Partial<Record<keyof TokenClaims, unknown>>> = [
      { sub: undefined },
      { jti: undefined },
      { preferred_username: undefined },
      { amr: undefined },
      { iat: undefined },
      { exp: undefined },
      { typ: undefined },
      { sid: 42 },
      { sub: '' },
      { preferred_username: ['alice'] },
      { amr: 'pwd' },
      { amr: [] },
      { amr: ['pwd', 'sms'] },
      { acr: '' },
      { acr: ['urn:gatehouse:acr:mfa'] },
      { auth_time: '1700000000' },
      { auth_time: -1 },
      { iat: '1700000000' },
      { exp: String(Math.floor(Date.now() / 1000) + 60) },
      { aud: [AUDIENCE, 'someone-else'] },
      { typ: 1 },
    ];
    for (const change of broken) {
      expect({ change, reason: await reason(await forge(ourHeader(), claims(change), ourKey), ['Bearer', 'Refresh']) }).toEqual({
        change,
        reason: 'malformed token',
      });
    }
  });

  it('not a compact JWS at all', async () => {
    for (const token of [undefined, null, 42, {}, '', 'garbage', 'a.b', 'a.b.c.d', 'a.b.c d', 'Bearer a.b.c', 'a+b.c/d.e=']) {
      expect(await reason(token)).toBe('malformed token');
    }
  });
});
