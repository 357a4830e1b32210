// A client of DPoP-bound tokens (RFC 9449) for the benchmarks: a key pair, a
// login that binds the tokens to it, and a load generator with a fresh proof
// for every request, signed ahead of time. The server's CPU per request, read
// from its own process, is what the rows compare.
import { createHash, randomUUID } from 'node:crypto';
import { Agent, request } from 'node:http';
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

/**
 * A driver of GETs of `url` with a bound token, each with its own proof, all
 * signed before the run starts (without `key`, the same driver sends `token`
 * as a plain bearer token: the baseline a bound token's price is read from,
 * driven by the same client at the same concurrency) (a proof's `jti` is spent once, so wrk's fixed
 * headers cannot carry them; signed during the run, the bench process's
 * signing bounded the row). Each run signs what the last one's rate says it
 * needs, and a third more; a run that uses them all signs the rest as it goes
 * (counted in `signedDuring`). Latencies from the send, in microseconds.
 */
export function presignedDpopLoad(url: string, options: { key?: ClientKey; token: string }) {
  let rate = 2_000;
  const { key } = options;
  const authorization = `${key === undefined ? 'Bearer' : 'DPoP'} ${options.token}`;
  const target = new URL(url);
  return async (connections: number, durationS: number) => {
    const sign = () => (key === undefined ? Promise.resolve(undefined) : proof(key, 'GET', url, options.token));
    const proofs = key === undefined ? [] : await Promise.all(Array.from({ length: Math.ceil(rate * durationS * 1.3) + 100 }, sign));
    const agent = new Agent({ keepAlive: true, maxSockets: connections });
    const latencies: number[] = [];
    let errors = 0;
    let signedDuring = 0;
    const one = (dpop: string | undefined) =>
      new Promise<void>((resolve) => {
        const sent = performance.now();
        const req = request(
          { host: target.hostname, port: target.port, path: target.pathname, agent, headers: dpop === undefined ? { authorization } : { authorization, dpop } },
          (res) => {
            res.resume();
            res.once('end', () => {
              latencies.push(performance.now() - sent);
              if (res.statusCode !== 200) errors += 1;
              resolve();
            });
          },
        );
        req.once('error', () => {
          errors += 1;
          resolve();
        });
        req.end();
      });
    const started = performance.now();
    const until = started + durationS * 1000;
    const worker = async () => {
      while (performance.now() < until) {
        let dpop = proofs.pop();
        if (dpop === undefined && key !== undefined) {
          signedDuring += 1;
          dpop = await sign();
        }
        await one(dpop);
      }
    };
    await Promise.all(Array.from({ length: connections }, worker));
    const elapsedS = (performance.now() - started) / 1000;
    agent.destroy();
    rate = latencies.length / elapsedS;
    return { requests: latencies.length, rps: rate, p50Ms: percentile(latencies, 0.5), p99Ms: percentile(latencies, 0.99), errors, signedDuring };
  };
}
