// A compact JWS (RFC 7515) as jose's SignJWT writes it, signed with
// node:crypto's synchronous sign: a few tens of µs on the event loop, where
// WebCrypto's asynchronous sign queues on libuv's thread pool behind whatever
// password hashing holds it. The issuer's tokens and the backends' identity
// assertions are both signed here.
import { sign } from 'node:crypto';
import { keyObjectOf } from './key-material.js';
import type { SigningKey } from './keyset.js';

/** `header` is written as given, `alg` and `kid` first; `payload` as given too (claim order kept). */
export function signCompactJws(signingKey: SigningKey, header: Readonly<Record<string, unknown>>, payload: object): string {
  const { kid, alg, key } = signingKey;
  const signingInput = `${base64Url(JSON.stringify({ alg, kid, ...header }))}.${base64Url(JSON.stringify(payload))}`;
  const signature = sign(alg === 'EdDSA' ? null : 'sha256', Buffer.from(signingInput), {
    key: keyObjectOf(key),
    // JWS (RFC 7518 3.4) wants r ‖ s, not DER; ignored for the other key types.
    dsaEncoding: 'ieee-p1363',
  });
  return `${signingInput}.${signature.toString('base64url')}`;
}

function base64Url(json: string): string {
  return Buffer.from(json, 'utf8').toString('base64url');
}
