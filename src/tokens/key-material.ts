// Key material: making a new key pair and turning stored JWKs into usable
// keys, checking on the way that each key is what its entry says it is.
import { KeyObject } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, importJWK, type CryptoKey, type JWK } from 'jose';
import type { SigningAlgorithm } from '../config/schema.js';
import { keyTimes, type KeyTimes } from './key-policy.js';
import { KeysFileError, PUBLIC_MEMBERS, type StoredKey } from './keys-file.js';

/** RFC 7518 3.3 asks for at least 2048 bits; more only slows every signature down. */
const RSA_MODULUS_LENGTH = 2048;

/** A stored key, imported. */
export interface LoadedKey extends KeyTimes {
  readonly kid: string;
  readonly alg: SigningAlgorithm;
  readonly privateKey: CryptoKey;
  readonly publicKey: CryptoKey;
  /** Public members only, with `kid`, `alg` and `use: 'sig'`: the key's JWKS entry. */
  readonly publicJwk: JWK;
  readonly stored: StoredKey;
}

export async function generateStoredKey(alg: SigningAlgorithm, now: number): Promise<StoredKey> {
  const { privateKey } = await generateKeyPair(alg, {
    extractable: true,
    ...(alg === 'RS256' && { modulusLength: RSA_MODULUS_LENGTH }),
  });
  const jwk = await exportJWK(privateKey);
  return { kid: await calculateJwkThumbprint(publicMembers(jwk)), alg, createdAt: new Date(now).toISOString(), jwk };
}

/**
 * Imports each key; a key that does not import or whose kid is not its
 * thumbprint fails the whole file. Keys in `known` (same kid, same alg, same
 * private key) are reused rather than imported again.
 */
export async function importKeys(file: string, stored: readonly StoredKey[], known: readonly LoadedKey[] = []): Promise<LoadedKey[]> {
  const seen = new Set<string>();
  return Promise.all(
    stored.map(async (s, index) => {
      const where = `key ${index} (${s.kid})`;
      if (seen.has(s.kid)) throw new KeysFileError(file, `${where}: duplicate kid`);
      seen.add(s.kid);
      if (typeof s.jwk.d !== 'string') throw new KeysFileError(file, `${where}: not a private key`);
      const same = known.find((k) => k.kid === s.kid && k.alg === s.alg && k.stored.jwk.d === s.jwk.d);
      if (same !== undefined) {
        const { retiredAt: _previous, ...reused } = same;
        return { ...reused, ...keyTimes(s), index, stored: s };
      }
      const publicJwk = publicMembers(s.jwk);
      let thumbprint: string;
      try {
        thumbprint = await calculateJwkThumbprint(publicJwk);
      } catch (cause) {
        throw new KeysFileError(file, `${where}: incomplete public key`, { cause });
      }
      if (thumbprint !== s.kid) throw new KeysFileError(file, `${where}: the kid is not the thumbprint of the key`);
      let privateKey: CryptoKey;
      let publicKey: CryptoKey;
      try {
        // Neither the JWK's own "alg", "use" nor "key_ops" decide anything: the entry's alg does.
        privateKey = (await importJWK(stripParameters(s.jwk), s.alg, { extractable: false })) as CryptoKey;
        publicKey = (await importJWK(publicJwk, s.alg)) as CryptoKey;
      } catch (cause) {
        throw new KeysFileError(file, `${where}: not a usable ${s.alg} key`, { cause });
      }
      return {
        ...keyTimes(s),
        index,
        privateKey,
        publicKey,
        publicJwk: Object.freeze({ ...publicJwk, kid: s.kid, alg: s.alg, use: 'sig' }),
        stored: s,
      };
    }),
  );
}

/** Only the members RFC 7638 hashes: the public key, nothing private, nothing extra. */
export function publicMembers(jwk: JWK): JWK {
  const members = typeof jwk.kty === 'string' && Object.hasOwn(PUBLIC_MEMBERS, jwk.kty) ? PUBLIC_MEMBERS[jwk.kty] : undefined;
  if (members === undefined) throw new TypeError('unsupported key type');
  const result: Record<string, unknown> = {};
  for (const member of members) result[member] = (jwk as Record<string, unknown>)[member];
  return result as JWK;
}

function stripParameters(jwk: JWK): JWK {
  const { alg: _alg, use: _use, key_ops: _keyOps, kid: _kid, ext: _ext, ...rest } = jwk;
  return rest;
}

const keyObjects = new WeakMap<object, KeyObject>();

/**
 * The node:crypto view of an imported key, made once per key. Signing and
 * verification use node:crypto's synchronous calls on it: a few tens of µs on
 * the event loop, where WebCrypto's asynchronous ones queue on libuv's thread
 * pool behind whatever password hashing or DNS holds it.
 */
export function keyObjectOf(key: object): KeyObject {
  if (key instanceof KeyObject) return key;
  let object = keyObjects.get(key);
  if (!object) {
    object = KeyObject.from(key as unknown as Parameters<typeof KeyObject.from>[0]);
    keyObjects.set(key, object);
  }
  return object;
}
