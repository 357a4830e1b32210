// The proof check's own signature path (node:crypto, keys imported once per
// thumbprint): each algorithm admits only its own key type, the thumbprint is
// RFC 7638's, and a proof that fails its signature is refused whatever came
// before it. Real keys and real signatures, in process, with the memory store.
import { createSign, generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, type JWK } from 'jose';
import { describe, expect, it } from 'vitest';
import { DpopProofCheck } from '../../src/dpop/proof-check.js';
import { ProofKeys } from '../../src/dpop/proof-signature.js';
import { MemoryStore } from '../../src/store/memory-store.js';
import { clientKey, handMade, proof } from '../helpers/dpop.js';

const URL_ = 'http://gw.example/api/orders';
const request = (dpop: string) => ({ method: 'GET', url: '/api/orders', headers: { host: 'gw.example', dpop }, socket: null }) as never;
const checker = (algorithms: string[]) =>
  new DpopProofCheck({ algorithms, proofWindowS: 300, store: new MemoryStore(), clientAddress: { trustsPeer: () => false } });
const claims = () => ({ htm: 'GET', htu: URL_, jti: randomUUID(), iat: Math.floor(Date.now() / 1000) });

/** A proof signed by node:crypto with `key` under whatever alg its header names (EC signatures as JWS writes them). */
function signed(header: Record<string, unknown>, digest: string, key: KeyObject): string {
  const body = `${Buffer.from(JSON.stringify(header)).toString('base64url')}.${Buffer.from(JSON.stringify(claims())).toString('base64url')}`;
  const signature = createSign(digest).update(body).sign({ key, dsaEncoding: 'ieee-p1363' });
  return `${body}.${signature.toString('base64url')}`;
}

describe('a proof key is the one its alg names', () => {
  it('attack: an ES256 proof carrying a P-384 key, validly signed with it, is refused before any verify', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-384' });
    const jwk = await exportJWK(publicKey);
    const forged = signed({ alg: 'ES256', typ: 'dpop+jwt', jwk }, 'sha256', privateKey);
    await expect(checker(['ES256']).check(request(forged))).rejects.toThrow('the DPoP proof jwk is not a public key of its alg');
  });

  it('attack: an RS256 proof with a 1024-bit RSA key, validly signed, is refused as too short', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
    const jwk = await exportJWK(publicKey);
    const short = signed({ alg: 'RS256', typ: 'dpop+jwt', jwk }, 'sha256', privateKey);
    await expect(checker(['RS256']).check(request(short))).rejects.toThrow('the DPoP proof key is too short');
  });

  it('attack: an EdDSA proof with an EC key is refused', async () => {
    const ec = await clientKey('ES256');
    await expect(checker(['EdDSA']).check(request(handMade({ alg: 'EdDSA', typ: 'dpop+jwt', jwk: ec.jwk }, claims())))).rejects.toThrow(
      'the DPoP proof jwk is not a public key of its alg',
    );
  });

  it('attack: a header naming critical extensions (b64: false) is refused', async () => {
    const key = await clientKey('ES256');
    const crit = handMade({ alg: 'ES256', typ: 'dpop+jwt', jwk: key.jwk, b64: false, crit: ['b64'] }, claims());
    await expect(checker(['ES256']).check(request(crit))).rejects.toThrow('the DPoP proof names critical header extensions');
  });

  it('attack: a known key with a signature over other claims is refused, after good proofs of that key were accepted', async () => {
    const key = await clientKey('EdDSA');
    const check = checker(['EdDSA']);
    await expect(check.check(request(await proof(key, 'GET', URL_)))).resolves.toBe(key.jkt);
    const good = await proof(key, 'GET', URL_);
    const [header, , signature] = good.split('.');
    const swapped = `${header}.${Buffer.from(JSON.stringify(claims())).toString('base64url')}.${signature}`;
    await expect(check.check(request(swapped))).rejects.toThrow('the DPoP proof does not verify with its own key');
  });
});

describe('thumbprints', () => {
  it.each(['ES256', 'ES384', 'ES512', 'EdDSA', 'PS256', 'RS256'])('%s: the thumbprint is RFC 7638’s, whatever other members the jwk carries', async (alg) => {
    const key = await clientKey(alg);
    const expected = await calculateJwkThumbprint(key.jwk, 'sha256');
    const keys = new ProofKeys();
    expect(keys.keyFor(alg, key.jwk as Record<string, unknown>).jkt).toBe(expected);
    expect(keys.keyFor(alg, { ...(key.jwk as JWK), kid: 'mine', use: 'sig' } as Record<string, unknown>).jkt).toBe(expected);
  });

  it.each(['ES256', 'EdDSA', 'PS256', 'RS256'])('%s: proofs of one key verify, each with its own signature', async (alg) => {
    const key = await clientKey(alg);
    const check = checker([alg]);
    for (let i = 0; i < 3; i++) await expect(check.check(request(await proof(key, 'GET', URL_)))).resolves.toBe(key.jkt);
  });
});
