// A client of DPoP-bound tokens (RFC 9449) for the benchmarks: a key pair, a
// login that binds the tokens to it, and a load generator that signs a fresh
// proof for every request (a proof's `jti` is spent once: wrk's fixed headers
// cannot carry them). It runs in the bench process, so it bounds the rows it
// drives; the server's CPU per request, read from its own process, is what
// the rows compare.
import { createHash, randomUUID } from 'node:crypto';
import { exportJWK, generateKeyPair, SignJWT, type CryptoKey, type JWK } from 'jose';
import { BENCH_PASSWORD, BENCH_USER } from './gatehouse.js';
import { percentile } from './stats.js';

export interface ClientKey {
  alg: string;
  privateKey: CryptoKey;
  jwk: JWK;
}

export async function clientKey(alg: string): Promise<ClientKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg);
  return { alg, privateKey, jwk: await exportJWK(publicKey) };
}

/** A proof for one request: `token` (the access token it goes with) gives its `ath`. */
export function proof(key: ClientKey, method: string, htu: string, token?: string): Promise<string> {
  return new SignJWT({
    htm: method,
    htu,
    jti: randomUUID(),
    iat: Math.floor(Date.now() / 1000),
    ...(token !== undefined && { ath: createHash('sha256').update(token).digest('base64url') }),
  })
    .setProtectedHeader({ alg: key.alg, typ: 'dpop+jwt', jwk: key.jwk })
    .sign(key.privateKey);
}

/** The bench user's access token, bound to `key` when one is given. */
export async function dpopLogin(gatewayUrl: string, key?: ClientKey): Promise<string> {
  const url = `${gatewayUrl}/api/v1/auth/login`;
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...(key !== undefined && { dpop: await proof(key, 'POST', url) }) },
    body: JSON.stringify({ username: BENCH_USER, password: BENCH_PASSWORD }),
  });
  if (response.status !== 200) throw new Error(`login: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { access_token: string }).access_token;
}

/** GETs of `url` with a bound token and a new proof each, `connections` at a time for `durationS`. */
export async function dpopLoad(
  url: string,
  options: { key: ClientKey; token: string; connections: number; durationS: number },
): Promise<{ requests: number; rps: number; p50Ms: number; p99Ms: number; errors: number }> {
  const latencies: number[] = [];
  let errors = 0;
  const started = performance.now();
  const until = started + options.durationS * 1000;
  const authorization = `DPoP ${options.token}`;
  const worker = async () => {
    while (performance.now() < until) {
      const dpop = await proof(options.key, 'GET', url, options.token);
      const sent = performance.now();
      try {
        const response = await fetch(url, { headers: { authorization, dpop } });
        await response.arrayBuffer();
        if (response.status !== 200) errors += 1;
        latencies.push(performance.now() - sent);
      } catch {
        errors += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: options.connections }, worker));
  const elapsedS = (performance.now() - started) / 1000;
  return { requests: latencies.length, rps: latencies.length / elapsedS, p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99), errors };
}
