// DPoP proofs (RFC 9449) made the way a client makes them, with jose: a key
// pair of the client's, and one signed proof per request. Options break one
// rule of a proof at a time, for the tests of each refusal.
import { createHash, randomUUID } from 'node:crypto';
import { calculateJwkThumbprint, exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';

export interface ClientKey {
  alg: string;
  privateKey: CryptoKey;
  /** The public JWK the proofs carry. */
  jwk: JWK;
  /** Its RFC 7638 SHA-256 thumbprint: what bound tokens' `cnf.jkt` names. */
  jkt: string;
}

export async function clientKey(alg = 'ES256'): Promise<ClientKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = await exportJWK(publicKey);
  return { alg, privateKey, jwk, jkt: await calculateJwkThumbprint(jwk, 'sha256') };
}

export interface ProofOptions {
  /** The token the proof goes with (its `ath`); none for a token request. */
  accessToken?: string;
  /** Overrides, one broken rule at a time. */
  ath?: string | null;
  iat?: number;
  jti?: string;
  typ?: string;
  jwk?: JWK;
  extra?: Record<string, unknown>;
}

export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

/** A proof for `method` on `url`, signed by `key`. */
export async function proof(key: ClientKey, method: string, url: string, options: ProofOptions = {}): Promise<string> {
  const ath = options.ath === null ? undefined : (options.ath ?? (options.accessToken === undefined ? undefined : tokenHash(options.accessToken)));
  return new SignJWT({
    htm: method,
    htu: url,
    jti: options.jti ?? randomUUID(),
    iat: options.iat ?? Math.floor(Date.now() / 1000),
    ...(ath !== undefined && { ath }),
    ...options.extra,
  })
    .setProtectedHeader({ alg: key.alg, typ: options.typ ?? 'dpop+jwt', jwk: options.jwk ?? key.jwk })
    .sign(key.privateKey);
}

/** A JWS assembled by hand: a header and payload no signing library would write (`alg: none`, HMAC with an embedded key). */
export function handMade(header: Record<string, unknown>, payload: Record<string, unknown>, signature = 'c2lnbmF0dXJl'): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part(header)}.${part(payload)}.${signature}`;
}
