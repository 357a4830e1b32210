// A DPoP proof's signature, checked with node:crypto against the public key the
// proof carries: the key imported once per key (by its RFC 7638 thumbprint, in a
// bounded LRU) and verified synchronously.
//
// Invariants: an algorithm admits only its own key type (ES256 a P-256 key,
// ES384 P-384, ES512 P-521, EdDSA Ed25519, RS*/PS* RSA of at least 2048 bits),
// checked before the key is used; a key is cached under the thumbprint of the
// very members it was imported from, so one thumbprint is one key.
// Why: docs/decisions/0023-dpop-proofs-at-the-price-of-one-verify.md
import { constants, createHash, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { LRUCache } from 'lru-cache';

type KeyRule = { kty: 'EC'; curve: string } | { kty: 'OKP'; curve: 'Ed25519' } | { kty: 'RSA' };
interface AlgorithmRule {
  key: KeyRule;
  /** The digest node:crypto's verify takes (null for EdDSA, which hashes itself). */
  digest: string | null;
  /** RSASSA-PSS with a salt as long as the digest (RFC 7518 3.5). */
  pss?: true;
}

const ec = (curve: string, digest: string): AlgorithmRule => ({ key: { kty: 'EC', curve }, digest });
const rsa = (digest: string, pss?: true): AlgorithmRule => ({ key: { kty: 'RSA' }, digest, ...(pss && { pss }) });

const RULES: Readonly<Record<string, AlgorithmRule>> = {
  ES256: ec('P-256', 'sha256'),
  ES384: ec('P-384', 'sha384'),
  ES512: ec('P-521', 'sha512'),
  EdDSA: { key: { kty: 'OKP', curve: 'Ed25519' }, digest: null },
  RS256: rsa('sha256'),
  RS384: rsa('sha384'),
  RS512: rsa('sha512'),
  PS256: rsa('sha256', true),
  PS384: rsa('sha384', true),
  PS512: rsa('sha512', true),
};

/** RFC 7518 3.3 and 3.5: an RSA key shorter than this signs nothing acceptable. */
const MIN_RSA_BITS = 2048;
/** Distinct proof keys remembered; a client keeps one key for many requests, a new key costs one import. */
export const PROOF_KEYS_REMEMBERED = 4096;

/** Why a proof's key or signature is refused: a fixed text, safe for a client. */
export class ProofSignatureError extends Error {}

/** RFC 7638: the members that identify a key of its type, in lexicographic order. */
function requiredMembers(jwk: Record<string, unknown>, rule: KeyRule): Record<string, unknown> {
  const members =
    rule.kty === 'RSA'
      ? { e: jwk.e, kty: jwk.kty, n: jwk.n }
      : rule.kty === 'EC'
        ? { crv: jwk.crv, kty: jwk.kty, x: jwk.x, y: jwk.y }
        : { crv: jwk.crv, kty: jwk.kty, x: jwk.x };
  for (const value of Object.values(members))
    if (typeof value !== 'string' || value === '') throw new ProofSignatureError('the DPoP proof jwk is not a public key of its alg');
  return members;
}

export interface ProofKey {
  /** The key's RFC 7638 SHA-256 thumbprint (what `cnf.jkt` names). */
  jkt: string;
  /** Verifies `signature` over `signingInput` (the proof's first two parts) with this key. */
  verifies(signingInput: Buffer, signature: Buffer): boolean;
}

export class ProofKeys {
  readonly #keys = new LRUCache<string, KeyObject>({ max: PROOF_KEYS_REMEMBERED });

  /** The proof's key for `alg`, imported on its first use; throws ProofSignatureError for a key its alg does not admit. */
  keyFor(alg: string, jwk: Record<string, unknown>): ProofKey {
    const rule = RULES[alg];
    if (rule === undefined) throw new ProofSignatureError('the DPoP proof alg is not one this gateway accepts');
    if (jwk.kty !== rule.key.kty || ('curve' in rule.key && jwk.crv !== rule.key.curve)) {
      throw new ProofSignatureError('the DPoP proof jwk is not a public key of its alg');
    }
    const members = requiredMembers(jwk, rule.key);
    const jkt = createHash('sha256').update(JSON.stringify(members)).digest('base64url');
    let key = this.#keys.get(jkt);
    if (key === undefined) {
      key = importKey(members);
      if (rule.key.kty === 'RSA' && (key.asymmetricKeyDetails?.modulusLength ?? 0) < MIN_RSA_BITS) {
        throw new ProofSignatureError('the DPoP proof key is too short');
      }
      this.#keys.set(jkt, key);
    }
    const verifyKey = rule.pss
      ? { key, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }
      : rule.key.kty === 'EC'
        ? { key, dsaEncoding: 'ieee-p1363' as const }
        : key;
    return { jkt, verifies: (signingInput, signature) => verify(rule.digest, signingInput, verifyKey, signature) };
  }
}

function importKey(members: Record<string, unknown>): KeyObject {
  try {
    return createPublicKey({ key: members as never, format: 'jwk' });
  } catch (error) {
    throw new ProofSignatureError('the DPoP proof jwk is not a public key of its alg', { cause: error });
  }
}
