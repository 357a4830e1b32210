// `npm run bench -- dpop`: what DPoP (RFC 9449) costs, in one run.
//
// 1. The proof check alone, in-process, per algorithm: CPU µs per proof
//    (decode, jose's signature check with the embedded key, the claims, the
//    thumbprint, the jti remembered in the in-memory store). Proofs cannot be
//    cached: each is new by construction.
// 2. Whole proxied requests through one Gatehouse process to one upstream: a
//    bound token with a fresh proof per request against a plain bearer token,
//    the same client and route, in interleaved rounds; CPU µs per request from
//    the gateway's process. The proofs are signed before a round starts, so the
//    client's signing is not in the way (nor counted: only the gateway's CPU is).
//    The load generators (wrk, autocannon) send fixed headers, and a proof is
//    good once, so this section has its own client: fetch, a few in flight.
//
// Figures, not assertions: docs/performance.md and docs/guides/dpop.md quote them.
import { loadavg } from 'node:os';
import { DpopProofCheck } from '../src/dpop/proof-check.js';
import { MemoryStore } from '../src/store/memory-store.js';
import { clientKey, dpopLogin, proof } from './lib/dpop-load.js';
import { startGatehouse, type GatehouseProcess } from './lib/gatehouse.js';
import { settingsFromEnv } from './lib/measure.js';
import { startServer, type ServerProcess } from './lib/processes.js';
import { printTable, writeResults, type Row } from './lib/report.js';

const say = (line: string) => process.stdout.write(`[dpop] ${line}\n`);
const load = () =>
  `load average ${loadavg()
    .map((n) => n.toFixed(2))
    .join(', ')}`;

/** CPU µs of one proof check per algorithm, in this process (one check at a time: its own cost, no queueing). */
async function measureChecks(count: number): Promise<Record<string, number>> {
  const url = 'http://gw.example/api/orders';
  const request = { method: 'GET', url: '/api/orders', headers: { host: 'gw.example' } as Record<string, string>, socket: null };
  const result: Record<string, number> = {};
  for (const alg of ['ES256', 'EdDSA', 'PS256', 'RS256']) {
    const store = new MemoryStore();
    const check = new DpopProofCheck({ algorithms: [alg], proofWindowS: 300, store, clientAddress: { trustsPeer: () => false } });
    const key = await clientKey(alg);
    const proofs = await Promise.all(Array.from({ length: count }, () => proof(key, 'GET', url)));
    const started = process.cpuUsage();
    for (const one of proofs) {
      request.headers.dpop = one;
      await check.check(request as never);
    }
    const used = process.cpuUsage(started);
    result[alg] = (used.user + used.system) / count;
    await store.close();
  }
  return result;
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

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;

export async function runDpopSection(): Promise<unknown> {
  const started: Array<ServerProcess | GatehouseProcess> = [];
  try {
    const checks = await measureChecks(2_000);
    say(
      `proof check alone, CPU µs per proof: ${Object.entries(checks)
        .map(([alg, us]) => `${alg} ${us.toFixed(0)}`)
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
