// `npm run bench -- dpop`: what DPoP (RFC 9449) costs, in one run.
//
// 1. The proof check alone, in-process, per algorithm: CPU µs per proof
//    (decode, the claims, the key and its thumbprint, the signature, the jti
//    remembered in the in-memory store) against one raw node:crypto verify of
//    the same signatures, interleaved. Proofs cannot be cached: each is new by
//    construction.
// 2. Whole proxied requests through one Gatehouse process to one upstream: a
//    bound token with a fresh proof per request against a plain bearer token,
//    the same client and route, in interleaved rounds; CPU µs per request from
//    the gateway's process. The proofs are signed before a round starts, so the
//    client's signing is not in the way (nor counted: only the gateway's CPU is).
//    The load generators (wrk, autocannon) send fixed headers, and a proof is
//    good once, so this section has its own client: fetch, a few in flight.
//
// Figures, not assertions: docs/performance.md and docs/guides/dpop.md quote them.
import { constants, createPublicKey, verify, type KeyObject } from 'node:crypto';
import { loadavg } from 'node:os';
import { DpopProofCheck } from '../src/dpop/proof-check.js';
import { MemoryStore } from '../src/store/memory-store.js';
import { clientKey, dpopLogin, proof, type ClientKey } from './lib/dpop-load.js';
import { startGatehouse, type GatehouseProcess } from './lib/gatehouse.js';
import { settingsFromEnv } from './lib/measure.js';
import { startServer, type ServerProcess } from './lib/processes.js';
import { printTable, writeResults, type Row } from './lib/report.js';
import { median } from './lib/stats.js';

const say = (line: string) => process.stdout.write(`[dpop] ${line}\n`);
const load = () =>
  `load average ${loadavg()
    .map((n) => n.toFixed(2))
    .join(', ')}`;

/** Arguments of node:crypto's verify for a JWS algorithm: one raw verify is what a proof check is held to. */
function rawVerifier(alg: string, publicKey: KeyObject): (data: Buffer, signature: Buffer) => boolean {
  const digest = alg === 'EdDSA' ? null : `sha${alg.slice(2)}`;
  const key = alg.startsWith('ES')
    ? { key: publicKey, dsaEncoding: 'ieee-p1363' as const }
    : alg.startsWith('PS')
      ? { key: publicKey, padding: constants.RSA_PKCS1_PSS_PADDING, saltLength: constants.RSA_PSS_SALTLEN_DIGEST }
      : publicKey;
  return (data, signature) => verify(digest, data, key, signature);
}

/**
 * CPU µs of one raw node:crypto verify of `key`'s algorithm, over `count` proofs signed beforehand: the unit a
 * DPoP request's price is read in, measured beside each round of it (the machine's speed moves between rounds).
 */
export async function rawVerifyUs(key: ClientKey, count: number): Promise<number> {
  const raw = rawVerifier(key.alg, createPublicKey({ key: key.jwk as never, format: 'jwk' }));
  const proofs = await Promise.all(Array.from({ length: count }, () => proof(key, 'GET', 'http://gw.example/api/orders')));
  const parts = proofs.map((one) => {
    const cut = one.lastIndexOf('.');
    return [Buffer.from(one.slice(0, cut)), Buffer.from(one.slice(cut + 1), 'base64url')] as const;
  });
  const started = process.cpuUsage();
  for (const [data, signature] of parts) if (!raw(data, signature)) throw new Error(`${key.alg}: a raw verify failed`);
  const used = process.cpuUsage(started);
  return (used.user + used.system) / count;
}

export interface ProofCheckCost {
  /** CPU µs of one proof check (parse, claims, key, signature, jti in the memory store), median of the rounds. */
  checkUs: number;
  /** CPU µs of one node:crypto verify of the same signatures with a key imported beforehand, median of the rounds. */
  verifyUs: number;
}

/**
 * The proof check alone against one raw verify of its algorithm, in this process, interleaved round by round
 * (one check at a time: its own cost, no queueing). Every proof is signed before anything is counted.
 */
export async function proofCheckCost(alg: string, count: number, rounds: number): Promise<ProofCheckCost> {
  const url = 'http://gw.example/api/orders';
  const request = { method: 'GET', url: '/api/orders', headers: { host: 'gw.example' } as Record<string, string>, socket: null };
  const store = new MemoryStore();
  const check = new DpopProofCheck({ algorithms: [alg], proofWindowS: 300, store, clientAddress: { trustsPeer: () => false } });
  const key = await clientKey(alg);
  const raw = rawVerifier(alg, createPublicKey({ key: key.jwk as never, format: 'jwk' }));
  const checkUs: number[] = [];
  const verifyUs: number[] = [];
  const cpu = (since: NodeJS.CpuUsage) => {
    const used = process.cpuUsage(since);
    return (used.user + used.system) / count;
  };
  try {
    for (let round = 0; round <= rounds; round++) {
      const proofs = await Promise.all(Array.from({ length: count }, () => proof(key, 'GET', url)));
      const parts = proofs.map((one) => {
        const cut = one.lastIndexOf('.');
        return [Buffer.from(one.slice(0, cut)), Buffer.from(one.slice(cut + 1), 'base64url')] as const;
      });
      let started = process.cpuUsage();
      for (const [data, signature] of parts) if (!raw(data, signature)) throw new Error(`${alg}: a raw verify failed`);
      const verified = cpu(started);
      started = process.cpuUsage();
      for (const one of proofs) {
        request.headers.dpop = one;
        await check.check(request as never);
      }
      const checked = cpu(started);
      // Round 0 warms both up (the first key import, the JIT) and is not counted.
      if (round > 0) {
        verifyUs.push(verified);
        checkUs.push(checked);
      }
    }
  } finally {
    await store.close();
  }
  return { checkUs: median(checkUs), verifyUs: median(verifyUs) };
}

/** Sends `headers(i)` for i < count, `inFlight` at a time; the gateway's CPU µs per request and the requests per second. */
async function drive(gatehouse: GatehouseProcess, url: string, headers: string[][], inFlight: number): Promise<Row & { cpuUsPerRequest: number }> {
  let next = 0;
  let errors = 0;
  const cpuBefore = gatehouse.cpuMicros();
  const started = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < headers.length) {
        const [authorization, dpop] = headers[next++]!;
        const response = await fetch(url, { headers: { authorization: authorization!, ...(dpop !== undefined && { dpop }) } });
        await response.arrayBuffer();
        if (response.status !== 200) errors += 1;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return { name: '', rps: headers.length / seconds, cpuUsPerRequest: (gatehouse.cpuMicros() - cpuBefore) / headers.length, errors };
}

export async function runDpopSection(): Promise<unknown> {
  const started: Array<ServerProcess | GatehouseProcess> = [];
  try {
    const checks: Record<string, ProofCheckCost> = {};
    for (const alg of ['ES256', 'EdDSA', 'PS256', 'RS256']) checks[alg] = await proofCheckCost(alg, 1_000, 3);
    say(
      `proof check alone against one raw verify, CPU µs: ${Object.entries(checks)
        .map(([alg, { checkUs, verifyUs }]) => `${alg} ${checkUs.toFixed(0)} / ${verifyUs.toFixed(0)} (${(checkUs / verifyUs).toFixed(2)}×)`)
        .join(', ')}; ${load()}`,
    );

    const upstream = await startServer('upstream', ['bench/servers/upstream.mjs']);
    started.push(upstream);
    const routes = [{ name: 'api', prefix: '/api', upstreams: [upstream.url], rewritePrefix: '/' }];
    // A token lives long enough for the whole run; proofs are checked within a 5-minute window.
    const gatehouse = await startGatehouse({
      routes,
      extra: { log: { access: false }, account: { enabled: false }, tokens: { accessTokenTtlS: 3600, dpop: { proofWindowS: 300 } } },
    });
    started.push(gatehouse);
    const key = await clientKey('ES256');
    const [plainToken, boundToken] = [await dpopLogin(gatehouse.url), await dpopLogin(gatehouse.url, key)];
    const url = `${gatehouse.url}/api/items/1`;
    const { rounds, durationS } = settingsFromEnv();
    const perRound = Math.max(1_000, durationS * 700);
    const inFlight = 8;
    const plain: Array<Row & { cpuUsPerRequest: number }> = [];
    const bound: Array<Row & { cpuUsPerRequest: number }> = [];
    // Warm both paths (first checks, JIT) before anything is counted.
    await drive(
      gatehouse,
      url,
      Array.from({ length: 200 }, () => [`Bearer ${plainToken}`]),
      inFlight,
    );
    await drive(
      gatehouse,
      url,
      await Promise.all(Array.from({ length: 200 }, async () => [`DPoP ${boundToken}`, await proof(key, 'GET', url, boundToken)])),
      inFlight,
    );
    for (let round = 0; round < rounds; round++) {
      plain.push(
        await drive(
          gatehouse,
          url,
          Array.from({ length: perRound }, () => [`Bearer ${plainToken}`]),
          inFlight,
        ),
      );
      const proofs = await Promise.all(Array.from({ length: perRound }, async () => [`DPoP ${boundToken}`, await proof(key, 'GET', url, boundToken)]));
      bound.push(await drive(gatehouse, url, proofs, inFlight));
    }
    const row = (name: string, runs: Array<Row & { cpuUsPerRequest: number }>): Row => ({
      name,
      rps: median(runs.map((r) => r.rps!)),
      cpuUsPerRequest: median(runs.map((r) => r.cpuUsPerRequest)),
      errors: runs.reduce((sum, r) => sum + (r.errors ?? 0), 0),
    });
    const rows = [row('plain bearer token', plain), row('DPoP-bound token + proof (ES256)', bound)];
    printTable(
      `Proxied requests, one Gatehouse process (memory store), a bound token with a fresh proof each against a plain bearer token: medians of ${rounds} ` +
        `interleaved rounds of ${perRound} requests, ${inFlight} in flight, fetch, access log off; ${load()}`,
      rows,
      'plain bearer token',
    );
    say(`bound − plain: ${(rows[1]!.cpuUsPerRequest! - rows[0]!.cpuUsPerRequest!).toFixed(0)} µs CPU per request (medians)`);
    const file = writeResults('dpop', { checks, rows, rounds, perRound, inFlight, loadAverage: loadavg() });
    say(`results in ${file}`);
    return { checks, rows };
  } finally {
    await Promise.all(started.map((server) => server.stop()));
  }
}
